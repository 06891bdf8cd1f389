//! The default suite's one screen: a row per transport (64-byte round trip,
//! the fitted model, the peak bandwidth), the stream jobs, the flowgraph on
//! the diagonal M = N, the caveats and where the report is.

use super::table::markdown;
use crate::result::saved::{SavedRun, num};
use crate::units::si;
use serde_json::Value;
use std::fmt::Write;
use std::path::Path;

/// The summary of the suite's saved runs.
pub fn render(runs: &[SavedRun], elapsed_s: f64, skipped: &[String], report: &Path) -> String {
    let mut s = String::new();
    let run = |e: &str| runs.iter().find(|r| r.experiment == e);
    let host = runs.iter().find_map(|r| r.env.as_ref());
    let _ = writeln!(
        s,
        "xferbench default suite: {} runs in {:.0} s{}\n",
        runs.len(),
        elapsed_s,
        host.map_or(String::new(), |e| format!(
            " on {} ({}, {} CPUs{})",
            e.hostname,
            e.cpu_model,
            e.cpus_online,
            if e.virtualization.virtual_machine {
                ", virtual machine"
            } else {
                ""
            }
        ))
    );
    s.push_str(&transports(runs));
    if let Some(r) = run("stream") {
        s.push_str(&stream(r));
    }
    if let Some(r) = run("flowgraph") {
        s.push_str(&flowgraph(r));
    }
    let caveats: usize = runs
        .iter()
        .map(|r| r.warnings.len() + r.point_warnings().len())
        .sum();
    if caveats > 0 {
        let _ = writeln!(
            s,
            "{caveats} caveats on these figures: see the report's warnings."
        );
    }
    for k in skipped {
        let _ = writeln!(s, "Skipped {k}");
    }
    let _ = writeln!(s, "Report: {}", report.display());
    s
}

/// A row per transport the round trips and curves measured.
fn transports(runs: &[SavedRun]) -> String {
    let run = |e: &str| runs.iter().find(|r| r.experiment == e);
    let mut specs: Vec<String> = Vec::new();
    for r in runs {
        if r.experiment == "roundtrip" || r.experiment == "curve" {
            for p in r.entries() {
                if let Some(t) = p.get("spec").and_then(Value::as_str)
                    && !specs.iter().any(|x| x == t)
                {
                    specs.push(t.to_string());
                }
            }
        }
    }
    let header: Vec<String> = [
        "transport",
        "round trip 64 B mean (µs)",
        "p99 (µs)",
        "one-way t0 (µs)",
        "r∞ (MB/s)",
        "peak MB/s (at size)",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<Vec<String>> = specs
        .iter()
        .map(|t| {
            let small = run("roundtrip").and_then(|r| {
                r.entries().iter().find(|p| {
                    p["spec"] == *t.as_str()
                        && num(p, "in_bytes") == Some(64.0)
                        && num(p, "out_bytes") == Some(64.0)
                })
            });
            let stat = |k: &str| {
                small
                    .and_then(|p| num(&p["summary"], k))
                    .map_or("—".into(), |ns| si(ns / 1000.0))
            };
            let fit = run("curve").and_then(|r| {
                r.value["fits"]
                    .as_array()?
                    .iter()
                    .find(|f| f["spec"] == *t.as_str())
                    .map(|f| f["fit"].clone())
            });
            let fitv = |k: &str, scale: f64| {
                fit.as_ref()
                    .and_then(|f| num(f, k))
                    .map_or("—".into(), |v| si(v / scale))
            };
            let peak = run("curve").and_then(|r| {
                r.entries()
                    .iter()
                    .filter(|p| p["spec"] == *t.as_str())
                    .filter_map(|p| Some((num(p, "bandwidth_MBps")?, num(p, "size_bytes")?)))
                    .max_by(|a, b| a.0.total_cmp(&b.0))
            });
            vec![
                t.clone(),
                stat("mean_ns"),
                stat("p99_ns"),
                fitv("t0_ns", 1000.0),
                fitv("r_inf_MBps", 1.0),
                peak.map_or("—".into(), |(bw, n)| {
                    format!("{} ({})", si(bw), crate::units::format_size(n as u64))
                }),
            ]
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut s = markdown(&header, &rows);
    s.push('\n');
    s
}

/// MB/s per stream job and block size.
fn stream(r: &SavedRun) -> String {
    let mut names: Vec<String> = Vec::new();
    let mut sizes: Vec<u64> = Vec::new();
    for j in r.entries() {
        let n = j["jobname"].as_str().unwrap_or("?").to_string();
        if !names.contains(&n) {
            names.push(n);
        }
        if let Some(b) = j["sweep_bs"].as_u64().or_else(|| j["bs"].as_u64())
            && !sizes.contains(&b)
        {
            sizes.push(b);
        }
    }
    let mut header = vec!["stream job (MB/s)".to_string()];
    header.extend(
        sizes
            .iter()
            .map(|&b| format!("bs {}", crate::units::format_size(b))),
    );
    let rows: Vec<Vec<String>> = names
        .iter()
        .map(|n| {
            let mut row = vec![n.clone()];
            row.extend(sizes.iter().map(|&b| {
                let bw: f64 = r
                    .entries()
                    .iter()
                    .filter(|j| {
                        j["jobname"] == *n.as_str()
                            && j["sweep_bs"].as_u64().or_else(|| j["bs"].as_u64()) == Some(b)
                    })
                    .flat_map(|j| {
                        ["read", "write", "trim"].map(|d| num(&j[d], "bw_bytes").unwrap_or(0.0))
                    })
                    .sum();
                si(bw / 1e6)
            }));
            row
        })
        .collect();
    let mut s = markdown(&header, &rows);
    s.push('\n');
    s
}

/// samples/s per scheduler on the diagonal M = N.
fn flowgraph(r: &SavedRun) -> String {
    let k = num(&r.value, "kernel_only_sps").unwrap_or(0.0);
    let mut scheds: Vec<String> = Vec::new();
    let mut grid: Vec<(u64, u64)> = Vec::new();
    for p in r.entries() {
        let sc = crate::flowgraph::edge::series_of(p);
        if !scheds.contains(&sc) {
            scheds.push(sc);
        }
        let nm = (
            p["cores"].as_u64().unwrap_or(0),
            p["blocks"].as_u64().unwrap_or(0),
        );
        // The diagonal M = N: one kernel per core, the fairest case.
        if nm.0 == nm.1 && !grid.contains(&nm) {
            grid.push(nm);
        }
    }
    // A row per scheduler and a column per (N, M): a dozen series
    // side by side would not fit a terminal.
    let mut header = vec!["flowgraph (samples/s)".to_string()];
    header.extend(grid.iter().map(|(n, m)| format!("N={n} M={m}")));
    let rows: Vec<Vec<String>> = scheds
        .iter()
        .map(|sc| {
            let mut row = vec![sc.clone()];
            row.extend(grid.iter().map(|&(n, m)| {
                r.entries()
                    .iter()
                    .find(|p| {
                        crate::flowgraph::edge::series_of(p) == *sc
                            && p["cores"] == n
                            && p["blocks"] == m
                    })
                    .and_then(|p| num(p, "samples_per_s"))
                    .map_or("—".into(), si)
            }));
            row
        })
        .collect();
    let mut s = markdown(&header, &rows);
    let at_buffer = num(&r.value, "kernel_at_buffer_sps").unwrap_or(0.0);
    let size = |v: Option<f64>| crate::units::format_size(v.unwrap_or(0.0) as u64);
    let _ = writeln!(
        s,
        "Saxpy kernel alone (medians through the run): {} samples/s at the scan's best buffer size, {} (the ideal bound for one kernel); {} at the flowgraph's own {}.\n",
        si(k),
        size(num(&r.value, "kernel_only_buffer_bytes")),
        si(at_buffer),
        size(r.entries().first().and_then(|p| num(p, "buffer_bytes")))
    );
    s
}
