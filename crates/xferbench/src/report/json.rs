//! JSON: the canonical, lossless form of a run.

use crate::error::{Error, Result};

pub fn render<T: serde::Serialize>(run: &T) -> Result<String> {
    let mut s =
        serde_json::to_string_pretty(run).map_err(|e| Error::run_from("encoding JSON", e))?;
    s.push('\n');
    Ok(s)
}
