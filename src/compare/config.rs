//! What must be the same for two runs to be compared as like with like:
//! the options that change figures, and the machine they ran on. Options
//! that only shape the output, and those that pick points (sizes,
//! transports, modes: points are matched one by one) do not count.

use crate::report::saved::SavedRun;
use serde::Serialize;
use serde_json::Value;

/// Options that do not change a point's figures: output, display, and
/// what selects the points (matched by identity instead).
const NOT_FIGURES: &[&str] = &[
    "baseline",
    "save_baseline",
    "compare",
    "format",
    "output",
    "repeat",
    "stats",
    "unit",
    "timeout_s",
    "transports",
    "buffers",
    "completion",
    "in",
    "out",
    "sizes",
    "job",
    "filename",
    "quiet",
];

/// The environment fields that change figures.
const ENV: &[&str] = &[
    "hostname",
    "kernel",
    "arch",
    "cpu_model",
    "cpus_online",
    "governor",
];

/// Job fields of a stream run that change its figures.
const JOB: &[&str] = &[
    "rw",
    "bs",
    "size",
    "ioengine",
    "iodepth",
    "direct",
    "iomem",
    "completion",
    "rate",
];

/// One way the two runs differ.
#[derive(Clone, Debug, Serialize)]
pub struct Difference {
    /// `option`, `environment`, `job` or `version`.
    pub kind: &'static str,
    /// The option or field.
    pub what: String,
    /// Its value in the base run.
    pub base: String,
    /// Its value in the new run.
    pub new: String,
}

fn show(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "(none)".into(),
        Some(Value::String(s)) => s.clone(),
        Some(x) => x.to_string(),
    }
}

/// The options of a run that change figures, as (name, value), sorted.
fn figure_options(run: &SavedRun) -> Vec<(String, Value)> {
    let mut v: Vec<(String, Value)> = run
        .value
        .get("options")
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter(|(k, _)| !NOT_FIGURES.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn env_field<'a>(run: &'a SavedRun, k: &str) -> Option<&'a Value> {
    run.value.get("env").and_then(|e| e.get(k))
}

/// A short hash of what must match (figure-changing options and the
/// environment), to tell at a glance whether two runs are comparable.
pub fn hash(run: &SavedRun) -> String {
    let mut text = String::new();
    for (k, v) in figure_options(run) {
        text += &format!("{k}={v};");
    }
    for k in ENV {
        text += &format!("{k}={};", show(env_field(run, k)));
    }
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(text.as_bytes()))
}

/// Every way `base` and `new` differ in what changes figures.
pub fn differences(base: &SavedRun, new: &SavedRun) -> Vec<Difference> {
    let mut out = Vec::new();
    let (bo, no) = (figure_options(base), figure_options(new));
    let mut keys: Vec<&String> = bo.iter().chain(no.iter()).map(|(k, _)| k).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let get = |o: &[(String, Value)]| o.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone());
        let (b, n) = (get(&bo), get(&no));
        if b != n {
            out.push(Difference {
                kind: "option",
                what: k.clone(),
                base: show(b.as_ref()),
                new: show(n.as_ref()),
            });
        }
    }
    for k in ENV {
        let (b, n) = (env_field(base, k), env_field(new, k));
        if b != n {
            out.push(Difference {
                kind: "environment",
                what: (*k).into(),
                base: show(b),
                new: show(n),
            });
        }
    }
    if base.experiment == "stream" {
        jobs(base, new, &mut out);
    }
    let (bv, nv) = (env_field(base, "version"), env_field(new, "version"));
    if bv != nv {
        out.push(Difference {
            kind: "version",
            what: "xferbench".into(),
            base: show(bv),
            new: show(nv),
        });
    }
    out
}

/// Stream jobs of the same name that were set up differently.
fn jobs(base: &SavedRun, new: &SavedRun, out: &mut Vec<Difference>) {
    use super::extract::job_name;
    for b in base.entries() {
        let Ok(name) = job_name(b) else { continue };
        let Some(n) = new
            .entries()
            .iter()
            .find(|n| job_name(n).ok().as_ref() == Some(&name))
        else {
            continue;
        };
        for k in JOB {
            if b.get(k) != n.get(k) {
                let what = format!("job {name}: {k}");
                if !out.iter().any(|d| d.what == what) {
                    out.push(Difference {
                        kind: "job",
                        what,
                        base: show(b.get(k)),
                        new: show(n.get(k)),
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(options: Value, host: &str) -> SavedRun {
        SavedRun::from_value(
            "r",
            json!({"experiment": "roundtrip", "options": options,
                   "env": {"hostname": host, "kernel": "k", "version": "0.1.0"}, "points": []}),
        )
        .unwrap()
    }

    #[test]
    fn output_and_point_selection_do_not_count_but_figures_do() {
        let a = run(
            json!({"format": "json", "in": [64], "samples": 1000, "responder_delay_s": 0.0}),
            "h",
        );
        let b = run(
            json!({"format": "table", "in": [64, 128], "samples": 1000, "responder_delay_s": 0.0}),
            "h",
        );
        assert!(differences(&a, &b).is_empty());
        assert_eq!(hash(&a), hash(&b));
        let c = run(json!({"samples": 1000, "responder_delay_s": 2e-6}), "other");
        let d = differences(&a, &c);
        let whats: Vec<&str> = d.iter().map(|d| d.what.as_str()).collect();
        assert_eq!(whats, ["responder_delay_s", "hostname"]);
        assert_ne!(hash(&a), hash(&c));
    }
}
