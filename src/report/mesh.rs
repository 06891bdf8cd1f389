//! STUB (not committed)
use serde_json::Value;
pub fn table(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap()
}
pub fn csv(v: &Value) -> String {
    serde_json::to_string(v).unwrap()
}
