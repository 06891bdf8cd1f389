//! One line per run for summaries: the figure a reader looks for first.

use super::figures::config_name;
use crate::result::saved::SavedRun;
use crate::result::saved::num;
use crate::units::format_size;
use crate::units::si;
use serde_json::Value;

/// The best figure of a run, in words.
pub fn of(r: &SavedRun) -> String {
    let pts = r.entries();
    match r.experiment.as_str() {
        "roundtrip" => {
            let best = pts
                .iter()
                .filter_map(|p| Some((p, p.get("summary").and_then(|s| num(s, "mean_ns"))?)))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            match best {
                Some((p, ns)) => format!(
                    "fastest mean round trip {} µs ({}, in {} out {} B)",
                    si(ns / 1000.0),
                    config_name(p),
                    num(p, "in_bytes").unwrap_or(0.0),
                    num(p, "out_bytes").unwrap_or(0.0)
                ),
                None => "no points".into(),
            }
        }
        "curve" => {
            let fits = r.value.get("fits").and_then(Value::as_array);
            let parts: Vec<String> = fits
                .into_iter()
                .flatten()
                .filter_map(|f| {
                    let fit = f.get("fit")?;
                    Some(format!(
                        "{}: t0 {} µs, r∞ {} MB/s",
                        f.get("spec")?.as_str()?,
                        si(num(fit, "t0_ns")? / 1000.0),
                        si(num(fit, "r_inf_MBps")?)
                    ))
                })
                .collect();
            if parts.is_empty() {
                format!("{} points, no model fitted", pts.len())
            } else {
                parts.join("; ")
            }
        }
        "stream" => {
            let best = pts
                .iter()
                .map(|j| {
                    let bw: f64 = ["read", "write", "trim"]
                        .iter()
                        .filter_map(|d| j.get(*d).and_then(|s| num(s, "bw_bytes")))
                        .sum();
                    (j, bw)
                })
                .max_by(|a, b| a.1.total_cmp(&b.1));
            match best {
                Some((j, bw)) => format!(
                    "best job {} MB/s ({} {} bs {})",
                    si(bw / 1e6),
                    j.get("jobname").and_then(Value::as_str).unwrap_or("?"),
                    j.get("rw").and_then(Value::as_str).unwrap_or("?"),
                    format_size(num(j, "bs").unwrap_or(0.0) as u64)
                ),
                None => "no jobs".into(),
            }
        }
        "load" => {
            let best = pts
                .iter()
                .filter_map(|p| Some((p, num(p, "req_per_s")?)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            match best {
                Some((p, v)) => format!(
                    "peak {} req/s ({} {})",
                    si(v),
                    p.get("load").and_then(Value::as_str).unwrap_or("?"),
                    p.get("direction").and_then(Value::as_str).unwrap_or("?")
                ),
                None => format!("{} points", pts.len()),
            }
        }
        "flowgraph" => {
            let best = pts
                .iter()
                .filter_map(|p| Some((p, num(p, "samples_per_s")?)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            match best {
                Some((p, v)) => format!(
                    "peak {} samples/s ({} on {} cores, {} blocks)",
                    si(v),
                    crate::flowgraph::edge::series_of(p),
                    num(p, "cores").unwrap_or(0.0),
                    num(p, "blocks").unwrap_or(0.0)
                ),
                None => format!("{} points", pts.len()),
            }
        }
        "mesh" => super::mesh::headline(&r.value),
        _ => format!("{} points", pts.len()),
    }
}

/// Where the two ends ran, in words.
pub fn placement(p: &Value) -> String {
    let cpu = |k: &str| p.get(k).and_then(Value::as_u64);
    let mut s = match (cpu("initiator_cpu"), cpu("responder_cpu")) {
        (Some(a), Some(b)) => format!("initiator on cpu {a}, responder on cpu {b}"),
        (Some(a), None) => format!("initiator on cpu {a}"),
        _ => "not pinned".into(),
    };
    if p.get("same_core").and_then(Value::as_bool) == Some(true) {
        s.push_str(" (same core: they share it)");
    }
    if p.get("smt_siblings").and_then(Value::as_bool) == Some(true) {
        s.push_str(" (SMT siblings)");
    }
    s
}
