//! Load tables: rk11perf's shape for the closed loop (rows: size; columns:
//! req/s and KB/s per load; a read and a write section), and latency per
//! offered rate for the open loop.

use super::csv::field;
use super::table::{conditions, markdown};
use crate::result::load::{ClosedPoint, LoadPoint, LoadRun, OpenPoint, dir_name};
use crate::units::format_size;
use crate::units::format_us;
use crate::units::si;
use std::fmt::Write;

fn distinct<T: PartialEq + Clone>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = Vec::new();
    for x in it {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

/// The latency budget of one direction's cells, when the device reports
/// its own time: rows size, a column per load (nothing otherwise).
fn budget_table(
    pts: &[&&ClosedPoint],
    loads: &[String],
    dir: crate::options::DataDirection,
    sizes: &[u64],
) -> String {
    let cell = |s: u64, l: &String| {
        pts.iter()
            .find(|p| p.direction == dir && p.size_bytes == s && &p.load == l)
            .and_then(|p| p.device_time.as_ref())
    };
    if !sizes
        .iter()
        .any(|&s| loads.iter().any(|l| cell(s, l).is_some()))
    {
        return String::new();
    }
    let mut header = vec!["size".to_string()];
    header.extend(loads.iter().map(|l| format!("{l} budget")));
    let rows: Vec<Vec<String>> = sizes
        .iter()
        .map(|&s| {
            let mut r = vec![format_size(s)];
            r.extend(
                loads
                    .iter()
                    .map(|l| cell(s, l).map_or_else(|| "—".into(), super::table::budget_cell)),
            );
            r
        })
        .collect();
    let mut o = format!("**{}**:\n\n", super::table::BUDGET);
    o.push_str(&markdown(&header, &rows));
    o.push('\n');
    o
}

/// Whether `spec`'s cells get a `% of limit` column: in runs that
/// recorded its path's ceiling.
fn limited(run: &LoadRun, spec: &str) -> bool {
    crate::result::limit::of(&run.limits, spec)
        .and_then(|l| l.limit.as_ref())
        .is_some()
}

/// A cell's payload rate as a share of its path's ceiling.
fn share(run: &LoadRun, p: &ClosedPoint) -> String {
    let mbps = p.req_per_s * p.size_bytes as f64 / 1e6;
    crate::result::limit::share_cell(&run.limits, &p.spec, mbps, 1.0)
}

pub fn render(run: &LoadRun) -> String {
    let mut o = String::new();
    let closed: Vec<&ClosedPoint> = run
        .points
        .iter()
        .filter_map(|p| match p {
            LoadPoint::Closed(c) => Some(c),
            _ => None,
        })
        .collect();
    let open: Vec<&OpenPoint> = run
        .points
        .iter()
        .filter_map(|p| match p {
            LoadPoint::Open(c) => Some(c),
            _ => None,
        })
        .collect();
    for spec in distinct(closed.iter().map(|p| p.spec.clone())) {
        let pts: Vec<&&ClosedPoint> = closed.iter().filter(|p| p.spec == spec).collect();
        let loads = distinct(pts.iter().map(|p| p.load.clone()));
        let first = pts[0];
        let _ = writeln!(
            o,
            "## {spec} {}/{}: requests under load, {} in flight\n",
            first.buffers.name(),
            first.completion.name(),
            first.inflight
        );
        o.push_str("Each load's own rate while it ran:");
        for l in &loads {
            let p = pts.iter().find(|p| &p.load == l).expect("listed");
            match p.load_ops_per_s {
                Some(r) => {
                    let _ = write!(o, " {l} {} {}/s;", si(r), p.load_unit);
                }
                None => {
                    let _ = write!(o, " {l} (nothing counted);");
                }
            }
        }
        let _ = writeln!(
            o,
            " on cpus {}. KB = 1024 bytes.\n",
            crate::measure::placement::compact(&run.extra.load_cpus)
        );
        for dir in distinct(pts.iter().map(|p| p.direction)) {
            let _ = writeln!(o, "### {}\n", dir_name(dir));
            let limited = limited(run, &spec);
            let mut header = vec!["size".to_string()];
            for l in &loads {
                header.push(format!("{l} req/s"));
                header.push(format!("{l} KB/s"));
                if limited {
                    header.push(format!("{l} % of limit"));
                }
            }
            let sizes = distinct(pts.iter().map(|p| p.size_bytes));
            let rows: Vec<Vec<String>> = sizes
                .iter()
                .map(|&s| {
                    let mut r = vec![format_size(s)];
                    for l in &loads {
                        match pts
                            .iter()
                            .find(|p| p.direction == dir && p.size_bytes == s && &p.load == l)
                        {
                            Some(p) => {
                                r.push(format!("{:.0}", p.req_per_s));
                                r.push(format!("{:.0}", p.kb_per_s));
                                if limited {
                                    r.push(share(run, p));
                                }
                            }
                            None => {
                                r.extend(["—".into(), "—".into()]);
                                if limited {
                                    r.push("—".into());
                                }
                            }
                        }
                    }
                    r
                })
                .collect();
            o.push_str(&markdown(&header, &rows));
            o.push('\n');
            o.push_str(&budget_table(&pts, &loads, dir, &sizes));
        }
    }
    for key in distinct(
        open.iter()
            .map(|p| (p.spec.clone(), p.direction, p.size_bytes)),
    ) {
        let pts: Vec<&&OpenPoint> = open
            .iter()
            .filter(|p| (p.spec.clone(), p.direction, p.size_bytes) == key)
            .collect();
        let _ = writeln!(
            o,
            "## {} {} {}: open loop, latency from each request's due time (µs)\n",
            key.0,
            dir_name(key.1),
            format_size(key.2)
        );
        let header: Vec<String> = [
            "offered/s",
            "achieved/s",
            "due",
            "missed",
            "late",
            "p50",
            "p99",
            "p99.9",
            "max",
        ]
        .map(String::from)
        .to_vec();
        let rows: Vec<Vec<String>> = pts
            .iter()
            .map(|p| {
                vec![
                    si(p.offered_per_s),
                    si(p.achieved_per_s),
                    p.due.to_string(),
                    p.missed.to_string(),
                    p.late.to_string(),
                    format_us(p.latency.p50_ns as f64),
                    format_us(p.latency.p99_ns as f64),
                    format_us(p.latency.p999_ns as f64),
                    format_us(p.latency.max_ns as f64),
                ]
            })
            .collect();
        o.push_str(&markdown(&header, &rows));
        o.push('\n');
    }
    let skipped: Vec<String> = run.extra.skipped.iter().map(|s| s.label()).collect();
    o.push_str(&super::table::skipped(&skipped));
    o.push_str(&conditions(run));
    o
}

pub const CSV_HEADER: &str = "kind,transport,spec,direction,size_bytes,load,req_per_s,kb_per_s,load_ops_per_s,offered_per_s,achieved_per_s,due,missed,late,p50_ns,p99_ns,max_ns,complete";

pub fn csv(run: &LoadRun) -> String {
    let budget = run
        .points
        .iter()
        .any(|p| matches!(p, LoadPoint::Closed(c) if c.device_time.is_some()));
    let mut o = String::from(CSV_HEADER);
    if budget {
        o.push_str(super::csv::DEVICE_COLUMNS);
    }
    o.push('\n');
    for p in &run.points {
        let _ = match p {
            LoadPoint::Closed(p) => write!(
                o,
                "closed,{},{},{},{},{},{:.3},{:.3},{},,,,,,{},{},{},{}",
                field(&p.transport),
                field(&p.spec),
                dir_name(p.direction),
                p.size_bytes,
                field(&p.load),
                p.req_per_s,
                p.kb_per_s,
                p.load_ops_per_s
                    .map_or(String::new(), |v| format!("{v:.0}")),
                p.latency.p50_ns,
                p.latency.p99_ns,
                p.latency.max_ns,
                run.complete
            ),
            LoadPoint::Open(p) => write!(
                o,
                "open,{},{},{},{},{},,,,{:.3},{:.3},{},{},{},{},{},{},{}",
                field(&p.transport),
                field(&p.spec),
                dir_name(p.direction),
                p.size_bytes,
                field(&p.load),
                p.offered_per_s,
                p.achieved_per_s,
                p.due,
                p.missed,
                p.late,
                p.latency.p50_ns,
                p.latency.p99_ns,
                p.latency.max_ns,
                run.complete
            ),
        };
        if budget {
            let d = match p {
                LoadPoint::Closed(c) => c.device_time.as_ref(),
                LoadPoint::Open(_) => None,
            };
            o.push_str(&super::csv::device_cells(d));
        }
        o.push('\n');
    }
    o
}
