//! A results file read back: the JSON any experiment writes with
//! `--format json`, kept as JSON so `report` renders every experiment's runs,
//! old and new, without a typed struct per version.

use crate::error::{Error, Result};
use crate::measure::env::Env;
use serde_json::Value;
use std::path::Path;

/// A results file read back (any experiment, any version): what `report`
/// renders and `compare` compares.
#[derive(Clone, Debug)]
pub struct SavedRun {
    /// Names the run in legends and headings: the file stem, or the
    /// experiment for a run made in this process.
    pub label: String,
    /// The experiment that wrote it (`roundtrip`, `curve`…).
    pub experiment: String,
    /// The whole result, as JSON.
    pub value: Value,
    /// The machine it ran on, when the file says.
    pub env: Option<Env>,
    /// False when the run stopped early.
    pub complete: bool,
    /// Why it stopped early.
    pub stopped_by: Option<String>,
    /// Caveats on the whole run.
    pub warnings: Vec<String>,
}

impl SavedRun {
    /// Reads a results file written with `--format json`.
    pub fn load(path: &Path) -> Result<SavedRun> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::usage(format!(
                "cannot read {}: {e}; give results files written with --format json or -o FILE.json",
                path.display()
            ))
        })?;
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            Error::usage(format!(
                "{} is not JSON ({e}); give results files written with --format json or -o FILE.json",
                path.display()
            ))
        })?;
        let label = path
            .file_stem()
            .map_or("run".into(), |s| s.to_string_lossy().into_owned());
        SavedRun::from_value(label, value).map_err(|e| {
            Error::usage(format!(
                "{}: {e}; give results files written with --format json",
                path.display()
            ))
        })
    }

    /// A result already parsed, named `label`.
    pub fn from_value(label: impl Into<String>, value: Value) -> Result<SavedRun> {
        let experiment = value
            .get("experiment")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::usage("not an xferbench result (no \"experiment\" field)"))?
            .to_string();
        // The measured entries must be a list of objects: a result whose
        // points are something else is refused, as compare refuses it.
        let key = if experiment == "stream" {
            "jobs"
        } else {
            "points"
        };
        match value.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) => {
                if let Some(i) = a.iter().position(|e| !e.is_object()) {
                    return Err(Error::usage(format!(
                        "not an unedited xferbench result (\"{key}\"[{i}] is not an object)"
                    )));
                }
            }
            Some(_) => {
                return Err(Error::usage(format!(
                    "not an unedited xferbench result (\"{key}\" is not a list)"
                )));
            }
        }
        let env = value
            .get("env")
            .and_then(|e| serde_json::from_value(e.clone()).ok());
        let warnings = strings(value.get("warnings"));
        Ok(SavedRun {
            label: label.into(),
            experiment,
            complete: value
                .get("complete")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            stopped_by: value
                .get("stopped_by")
                .and_then(Value::as_str)
                .map(str::to_string),
            env,
            warnings,
            value,
        })
    }

    /// The measured entries: `points`, or a stream run's `jobs`.
    pub fn entries(&self) -> &[Value] {
        let key = if self.experiment == "stream" {
            "jobs"
        } else {
            "points"
        };
        array(&self.value, key)
    }

    /// Caveats on single points, each with how many points it applies to.
    pub fn point_warnings(&self) -> Vec<(String, usize)> {
        let mut out: Vec<(String, usize)> = Vec::new();
        for p in self.entries() {
            for w in strings(p.get("warnings")) {
                match out.iter_mut().find(|(x, _)| *x == w) {
                    Some((_, n)) => *n += 1,
                    None => out.push((w, 1)),
                }
            }
        }
        out
    }

    /// The command line that produced the run, quoted for a POSIX shell.
    pub fn command(&self) -> Option<String> {
        let argv = self.env.as_ref()?.command.as_slice();
        if argv.is_empty() {
            return None;
        }
        let mut words: Vec<String> = argv.iter().map(|a| shell_quote(a)).collect();
        // The path the binary was run by says nothing about the run.
        if let Some(first) = words.first_mut()
            && first.ends_with("xferbench")
        {
            *first = "xferbench".into();
        }
        Some(words.join(" "))
    }
}

/// A number field of a saved point, if it is there and is a number.
pub fn num(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}

/// The elements of an array field (none when absent or not an array).
pub fn array<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The strings of an array field (empty when absent).
pub fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refuses_json_that_is_not_a_result() {
        let e = SavedRun::from_value("x", json!({"a": 1})).unwrap_err();
        assert!(e.to_string().contains("experiment"));
    }

    #[test]
    fn counts_point_warnings_and_quotes_the_command() {
        let v = json!({
            "experiment": "roundtrip",
            "complete": false,
            "stopped_by": "interrupted",
            "env": {"tool":"xferbench","version":"0","timestamp":"t","hostname":"h","kernel":"k",
                "arch":"a","cpu_model":"c","cpus_online":2,"cpus_allowed":2,
                "virtualization":{"virtual_machine":true,"hypervisor":null,"container":null},
                "clock":{"source":"s","kernel_clocksource":null,"overhead_ns":20.0,"min_step_ns":10,"resolution_ns":1},
                "governor":null,"command":["/x/xferbench","roundtrip","--in","64 k's"]},
            "points": [{"warnings": ["a", "b"]}, {"warnings": ["a"]}],
            "warnings": ["vm"],
        });
        let r = SavedRun::from_value("x", v).unwrap();
        assert!(!r.complete);
        assert_eq!(r.warnings, ["vm"]);
        assert_eq!(
            r.point_warnings(),
            [("a".to_string(), 2), ("b".to_string(), 1)]
        );
        assert_eq!(
            r.command().unwrap(),
            r"xferbench roundtrip --in '64 k'\''s'"
        );
    }
}
