//! The default suite's one screen: a row per transport (64-byte round trip,
//! the fitted model, the peak bandwidth), the stream jobs, the flowgraph on
//! the diagonal M = N, the caveats and where the report is.

use super::table::markdown;
use crate::measure::fit::Fit;
use crate::measure::stats::Summary;
use crate::result::flowgraph::{FlowExtra, FlowPoint};
use crate::result::saved::{AnyRun, Saved, SavedRun, SavedStream};
use crate::units::si;
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
    if let Some(AnyRun::Stream(r)) = run("stream").map(|r| &r.run) {
        s.push_str(&stream(r));
    }
    if let Some(AnyRun::Flowgraph(r)) = run("flowgraph").map(|r| &r.run) {
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
    let roundtrip = runs.iter().find_map(|r| match &r.run {
        AnyRun::Roundtrip(x) => Some(x),
        _ => None,
    });
    let curve = runs.iter().find_map(|r| match &r.run {
        AnyRun::Curve(x) => Some(x),
        _ => None,
    });
    let mut specs: Vec<String> = Vec::new();
    for r in runs {
        let names: Vec<&String> = match &r.run {
            AnyRun::Roundtrip(x) => x.points.iter().map(|p| &p.spec).collect(),
            AnyRun::Curve(x) => x.points.iter().map(|p| &p.spec).collect(),
            _ => Vec::new(),
        };
        for t in names {
            if !specs.contains(t) {
                specs.push(t.clone());
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
            let small = roundtrip.and_then(|r| {
                r.points
                    .iter()
                    .find(|p| p.spec == *t && p.in_bytes == 64 && p.out_bytes == 64)
            });
            let stat =
                |f: fn(&Summary) -> f64| small.map_or("—".into(), |p| si(f(&p.summary) / 1000.0));
            let fit = curve.and_then(|r| {
                r.extra
                    .fits
                    .iter()
                    .find(|f| f.spec == *t)
                    .and_then(|f| f.fit.as_ref())
            });
            let fitv =
                |f: fn(&Fit) -> f64, scale: f64| fit.map_or("—".into(), |x| si(f(x) / scale));
            let peak = curve.and_then(|r| {
                r.points
                    .iter()
                    .filter(|p| p.spec == *t)
                    .map(|p| (p.bandwidth_mbps, p.size_bytes))
                    .max_by(|a, b| a.0.total_cmp(&b.0))
            });
            vec![
                t.clone(),
                stat(|s| s.mean_ns),
                stat(|s| s.p99_ns as f64),
                fitv(|f| f.t0_ns, 1000.0),
                fitv(|f| f.r_inf_MBps, 1.0),
                peak.map_or("—".into(), |(bw, n)| {
                    format!("{} ({})", si(bw), crate::units::format_size(n))
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
fn stream(r: &SavedStream) -> String {
    let mut names: Vec<String> = Vec::new();
    let mut sizes: Vec<u64> = Vec::new();
    for j in &r.jobs {
        let n = j.jobname().to_string();
        if !names.contains(&n) {
            names.push(n);
        }
        if let Some(b) = j.block_size()
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
                    .jobs
                    .iter()
                    .filter(|j| j.jobname() == n && j.block_size() == Some(b))
                    .flat_map(|j| j.dirs().map(|(_, d)| d.bw_bytes as f64))
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
fn flowgraph(r: &Saved<FlowPoint, FlowExtra>) -> String {
    let series = |p: &FlowPoint| crate::flowgraph::edge::series(p.scheduler, p.edges);
    let mut scheds: Vec<String> = Vec::new();
    let mut grid: Vec<(usize, usize)> = Vec::new();
    for p in &r.points {
        let sc = series(p);
        if !scheds.contains(&sc) {
            scheds.push(sc);
        }
        let nm = (p.cores, p.blocks);
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
                r.points
                    .iter()
                    .find(|p| series(p) == *sc && p.cores == n && p.blocks == m)
                    .map_or("—".into(), |p| si(p.samples_per_s))
            }));
            row
        })
        .collect();
    let mut s = markdown(&header, &rows);
    let x = &r.extra;
    let _ = writeln!(
        s,
        "Saxpy kernel alone (medians through the run): {} samples/s at the scan's best buffer size, {} (the ideal bound for one kernel); {} at the flowgraph's own {}.\n",
        si(x.kernel_only_sps),
        crate::units::format_size(x.kernel_only_buffer_bytes),
        si(x.kernel_at_buffer_sps),
        crate::units::format_size(r.points.first().map_or(0, |p| p.buffer_bytes))
    );
    s
}
