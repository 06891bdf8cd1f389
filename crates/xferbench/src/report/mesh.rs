//! Mesh runs (`xferbench mesh`): every ordered pair of MPI ranks. The table
//! puts what needs a look first (the suspects, the health gate's verdict),
//! then the three rank × rank matrices (the heat maps' own numbers, ranks
//! grouped by host), the baselines the suspects were judged against and the
//! merged latency per scope. A run read back may be older than this code;
//! what such a file may lack is what loading defaults (`complete`, `points`,
//! `warnings`, a pair's `error`), and each default reads as the field's
//! absence did when this report walked the raw JSON.

use super::csv::field;
use super::figure::{Axis, Figure, Heatmap, Kind, Labels, Plot, Scale};
use super::table::{Align, bullets, markdown, markdown_with};
use crate::result::mesh::{
    BandwidthPoint, LatencyPoint, Matrix, MeshExtra, MeshPair, MeshRun, Scope, Suspect,
};
use crate::result::saved::Saved;
use crate::units::si;
use crate::units::{format_size, format_us};
use std::cmp::Ordering;
use std::fmt::Write;

/// A mesh run as the report reads it. The run just measured (`MeshRun`) and
/// one read back (`AnyRun::Mesh`, whose bookkeeping may be absent) are two
/// types holding the same mesh; borrowing the parts the report reads lets
/// one renderer serve both without copying the pairs.
#[derive(Clone, Copy, Debug)]
pub struct Mesh<'a> {
    /// The ordered pairs, in run order.
    pub points: &'a [MeshPair],
    /// Ranks, schedule, matrices, suspects, health.
    pub extra: &'a MeshExtra,
    /// False when the run stopped early.
    pub complete: bool,
    /// Why it stopped early.
    pub stopped_by: Option<&'a str>,
    /// Caveats on the whole run.
    pub warnings: &'a [String],
    /// The ceilings of its paths (the pairs within rank 0's host).
    pub limits: &'a [crate::result::limit::PathLimit],
}

impl<'a> From<&'a MeshRun> for Mesh<'a> {
    fn from(r: &'a MeshRun) -> Self {
        Mesh {
            points: &r.points,
            extra: &r.extra,
            complete: r.complete,
            stopped_by: r.stopped_by.as_deref(),
            warnings: &r.warnings,
            limits: &r.limits,
        }
    }
}

impl<'a> From<&'a Saved<MeshPair, MeshExtra>> for Mesh<'a> {
    fn from(r: &'a Saved<MeshPair, MeshExtra>) -> Self {
        Mesh {
            points: &r.points,
            extra: &r.extra,
            complete: r.complete,
            stopped_by: r.stopped_by.as_deref(),
            warnings: &r.warnings,
            limits: &r.limits,
        }
    }
}

/// The ranks in the order the matrices show them: by host (`node2` before
/// `node10`), then by rank.
#[derive(Clone, Debug, PartialEq)]
pub struct Order {
    /// Rank numbers, in display order.
    pub ranks: Vec<usize>,
    /// "host:rank" for each, in display order.
    pub names: Vec<String>,
    /// Where each host after the first starts, as indices into `ranks`.
    pub breaks: Vec<usize>,
}

/// Ranks in the job: the most that `ranks_total`, the rank records and the
/// matrices account for.
fn rank_count(m: &Mesh) -> usize {
    let x = m.extra;
    let recorded = x.ranks.iter().map(|r| r.rank + 1).max().unwrap_or(0);
    let matrix = x.matrices.latency_p50_us.len();
    x.ranks_total.max(recorded).max(matrix)
}

/// Each rank's host, indexed by rank ("?" where the run does not say).
pub fn hosts(m: &Mesh) -> Vec<String> {
    let mut h = vec!["?".to_string(); rank_count(m)];
    for r in &m.extra.ranks {
        h[r.rank] = r.host.clone();
    }
    h
}

/// Compares names as people sort them: digit runs by value.
fn natural(a: &str, b: &str) -> Ordering {
    let key = |s: &str| -> Vec<(String, u64)> {
        let mut out: Vec<(String, u64)> = Vec::new();
        let mut rest = s;
        while !rest.is_empty() {
            let text_end = rest
                .find(|c: char| c.is_ascii_digit())
                .unwrap_or(rest.len());
            let (text, tail) = rest.split_at(text_end);
            let digits_end = tail
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(tail.len());
            let (digits, tail) = tail.split_at(digits_end);
            out.push((text.to_string(), digits.parse().unwrap_or(0)));
            rest = tail;
        }
        out
    };
    key(a).cmp(&key(b)).then_with(|| a.cmp(b))
}

pub fn order(m: &Mesh) -> Order {
    let hosts = hosts(m);
    let mut ranks: Vec<usize> = (0..hosts.len()).collect();
    ranks.sort_by(|&a, &b| natural(&hosts[a], &hosts[b]).then(a.cmp(&b)));
    Order {
        names: ranks.iter().map(|&r| format!("{}:{r}", hosts[r])).collect(),
        breaks: (1..ranks.len())
            .filter(|&i| hosts[ranks[i]] != hosts[ranks[i - 1]])
            .collect(),
        ranks,
    }
}

/// One of the run's matrices (`[from][to]`, by rank) in display order; the
/// diagonal and what the run does not hold are `None`.
pub fn matrix(m: &Matrix, order: &Order) -> Matrix {
    let cell = |f: usize, t: usize| m.get(f)?.get(t).copied().flatten().filter(|_| f != t);
    order
        .ranks
        .iter()
        .map(|&f| order.ranks.iter().map(|&t| cell(f, t)).collect())
        .collect()
}

/// One suspect: the rule's line and what its re-test said.
fn suspect(s: &Suspect) -> String {
    let unit = match s.metric {
        "latency" => "µs",
        _ => "MB/s",
    };
    let retest: Vec<String> = s.retest.iter().copied().map(si).collect();
    let again = if retest.is_empty() {
        String::new()
    } else {
        format!(" ({} {unit})", retest.join(", "))
    };
    let verdict = match s.confirmed {
        Some(true) => format!("confirmed by re-test{again}"),
        Some(false) => format!("not confirmed by re-test (transient){again}"),
        None => "not re-tested".into(),
    };
    format!("{} — {verdict}", s.line)
}

/// The suspects, worst first, or a line saying there are none.
pub fn suspects(m: &Mesh) -> Vec<String> {
    match m.extra.suspects.as_slice() {
        [] => vec!["No suspects: no rank, host or link stands out from the other pairs.".into()],
        s => s.iter().map(suspect).collect(),
    }
}

/// The health gate as set: its limits in words, whether every pair passed,
/// and the pairs that did not; `None` when no gate was set.
struct Gate {
    limits: String,
    passed: bool,
    failing: Vec<String>,
}

fn gate(m: &Mesh) -> Option<Gate> {
    let h = &m.extra.health;
    let limits: Vec<String> = [
        h.min_bandwidth_mbps
            .map(|b| format!("bandwidth ≥ {} MB/s", si(b))),
        h.max_latency_us
            .map(|l| format!("p50 latency ≤ {} µs", si(l))),
    ]
    .into_iter()
    .flatten()
    .collect();
    if limits.is_empty() {
        return None;
    }
    Some(Gate {
        limits: limits.join(", "),
        passed: h.passed,
        failing: h.failing.clone(),
    })
}

/// "6 pairs", "1 pair".
fn pairs(n: usize) -> String {
    format!("{n} pair{}", if n == 1 { "" } else { "s" })
}

/// The health gate's verdict, then every failing pair; nothing when no gate
/// was set.
pub fn health(m: &Mesh) -> Vec<String> {
    let Some(g) = gate(m) else {
        return Vec::new();
    };
    let ranks: Vec<String> = m
        .extra
        .health
        .failing_ranks
        .iter()
        .map(usize::to_string)
        .collect();
    let verdict = if g.passed {
        format!("Health gate ({}): passed.", g.limits)
    } else {
        format!(
            "Health gate ({}): FAILED, {} outside it{}.",
            g.limits,
            pairs(g.failing.len()),
            if ranks.is_empty() {
                String::new()
            } else {
                format!(
                    "; every pair of rank {} failed (the node, not its links)",
                    ranks.join(", ")
                )
            }
        )
    };
    std::iter::once(verdict).chain(g.failing).collect()
}

/// What to read before the matrices: the suspects and the health verdict
/// with its first few failing pairs (the heat maps show the rest).
pub fn findings(m: &Mesh) -> Vec<String> {
    // Transient suspects (the re-test disagreed) in one line: a noisy
    // machine has many, and they would bury the confirmed ones.
    let all = &m.extra.suspects;
    let transient = all.iter().filter(|s| s.confirmed == Some(false)).count();
    let mut out: Vec<String> = match all {
        a if transient > 0 => {
            let mut kept: Vec<String> = a
                .iter()
                .filter(|s| s.confirmed != Some(false))
                .map(suspect)
                .collect();
            kept.push(format!(
                "{transient} more suspect(s) not confirmed by re-test (transient): listed in the run's JSON and in the mesh command's table output"
            ));
            kept
        }
        _ => suspects(m),
    };
    let h = health(m);
    if let Some((verdict, failing)) = h.split_first() {
        out.push(verdict.clone());
        const SHOWN: usize = 4;
        out.extend(
            failing
                .iter()
                .take(SHOWN)
                .map(|f| format!("outside the gate: {f}")),
        );
        if failing.len() > SHOWN {
            out.push(format!(
                "outside the gate: … and {} more pairs, listed in the run's JSON",
                failing.len() - SHOWN
            ));
        }
    }
    out
}

/// The run in one line: ranks, hosts, schedule, sizes, complete or not.
fn heading(m: &Mesh) -> String {
    let n = rank_count(m);
    let mut hosts = hosts(m);
    hosts.sort();
    hosts.dedup();
    let s = &m.extra.schedule;
    let x = &m.extra.matrices;
    let status = if !m.complete {
        format!("INCOMPLETE ({})", m.stopped_by.unwrap_or("stopped early"))
    } else {
        "complete".into()
    };
    format!(
        "Mesh: {n} ranks on {} host{}, {} schedule ({}, {} rounds of {} pairs); latency at {} bytes, bandwidth at {} bytes; {status}",
        hosts.len(),
        if hosts.len() == 1 { "" } else { "s" },
        s.kind,
        s.mode,
        s.rounds,
        s.pairs_per_round,
        format_size(x.latency_size_bytes),
        format_size(x.bandwidth_size_bytes),
    )
}

/// "intra-host" for `Intra`, "inter-host" for `Inter`.
fn scope(s: Scope) -> &'static str {
    match s {
        Scope::Intra => "intra-host",
        Scope::Inter => "inter-host",
    }
}

/// The outlier rule's baselines, one line per metric and scope.
fn baselines(m: &Mesh) -> Vec<String> {
    m.extra
        .baselines
        .iter()
        .map(|b| {
            let s = &b.stats;
            let (name, unit) = match b.metric {
                "latency" => ("latency p50", "µs"),
                "bandwidth" => ("bandwidth", "MB/s"),
                _ => ("—", ""),
            };
            format!(
                "{name}, {}: {} cells, median {} {unit}, MAD {} {unit}",
                scope(s.scope),
                s.cells,
                si(s.median),
                si(s.mad)
            )
        })
        .collect()
}

/// Latency over all pairs of a scope together (merged histograms).
fn merged(m: &Mesh) -> Option<String> {
    let m = &m.extra.merged;
    if m.is_empty() {
        return None;
    }
    let header: Vec<String> = ["scope", "pairs", "samples", "p50", "p99", "p99.9", "max"]
        .map(String::from)
        .to_vec();
    let rows: Vec<Vec<String>> = m
        .iter()
        .map(|s| {
            let o = &s.oneway;
            vec![
                scope(s.scope).to_string(),
                s.pairs.to_string(),
                o.count.to_string(),
                format_us(o.p50_ns as f64),
                format_us(o.p99_ns as f64),
                format_us(o.p999_ns as f64),
                format_us(o.max_ns as f64),
            ]
        })
        .collect();
    Some(markdown(&header, &rows))
}

fn median(sorted: &[f64]) -> f64 {
    let mid = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    }
}

/// Samples per measured pair of one kind (`count` gives a pair's):
/// "min 9.8k, median 10.0k".
fn samples(m: &Mesh, count: impl Fn(&MeshPair) -> u64) -> Option<String> {
    let mut counts: Vec<f64> = m
        .points
        .iter()
        .filter(|p| !p.missing)
        .map(|p| count(p) as f64)
        .collect();
    if counts.is_empty() {
        return None;
    }
    counts.sort_by(f64::total_cmp);
    Some(format!(
        "min {:.0}, median {:.0}",
        counts[0],
        median(&counts)
    ))
}

/// The ordered pairs not measured: `missing`, else the points marked so.
fn missing(m: &Mesh) -> Vec<(usize, usize)> {
    if !m.extra.missing.is_empty() {
        return m.extra.missing.iter().map(|&[a, b]| (a, b)).collect();
    }
    m.points
        .iter()
        .filter(|p| p.missing)
        .map(|p| (p.from, p.to))
        .collect()
}

/// Samples, missing pairs, and the run's caveats.
fn footer(m: &Mesh) -> String {
    let mut o = String::new();
    let lat = samples(m, |p| p.latency.iter().map(|l| l.oneway.count).sum());
    let bw = samples(m, |p| p.bandwidth.iter().map(|b| b.window_time.count).sum());
    if lat.is_some() || bw.is_some() {
        let _ = writeln!(
            o,
            "Samples per measured pair: latency {} round trips; bandwidth {} windows.",
            lat.as_deref().unwrap_or("—"),
            bw.as_deref().unwrap_or("—")
        );
    }
    let n = rank_count(m);
    let gone = missing(m);
    if gone.is_empty() {
        o.push_str("No pair missing.\n");
    } else {
        let list: Vec<String> = gone.iter().map(|(a, b)| format!("{a}→{b}")).collect();
        let _ = writeln!(
            o,
            "Missing pairs ({} of {}): {}.",
            gone.len(),
            n * n.saturating_sub(1),
            list.join(", ")
        );
    }
    o.push_str(&crate::result::limit::lines(m.limits));
    if !m.warnings.is_empty() {
        o.push_str("\nWarnings:\n");
        o.push_str(&bullets(m.warnings));
    }
    o
}

/// The Markdown report of a mesh run (the run just measured, or its
/// `--format json` read back).
pub fn table(m: &Mesh) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "## {}\n", heading(m));
    for (title, lines) in [("Suspects", suspects(m)), ("Health gate", health(m))] {
        if !lines.is_empty() {
            let _ = writeln!(o, "### {title}\n\n{}", bullets(&lines));
        }
    }
    let first_left = |i: usize| if i == 0 { Align::Left } else { Align::Right };
    for f in mesh_run("mesh", "", m) {
        let (h, rows) = f.table();
        let _ = writeln!(
            o,
            "### {}\n\nRows: from (sending rank), columns: to; host:rank, grouped by host.\n\n{}",
            f.title,
            markdown_with(&h, &rows, first_left)
        );
    }
    let b = baselines(m);
    if !b.is_empty() {
        let _ = writeln!(
            o,
            "Baselines of the outlier rule (median and MAD of each scope's cells):\n\n{}",
            bullets(&b)
        );
    }
    if let Some(t) = merged(m) {
        let _ = writeln!(
            o,
            "One-way latency (µs) over every sample of a scope's pairs (histograms merged):\n\n{t}"
        );
    }
    o.push_str(&footer(m));
    o
}

/// One line for the report's summary table.
pub fn headline(m: &Mesh) -> String {
    let mut parts = vec![format!("{} ranks", rank_count(m))];
    for s in &m.extra.merged {
        parts.push(format!(
            "{} p50 {} µs",
            scope(s.scope),
            format_us(s.oneway.p50_ns as f64)
        ));
    }
    let n = m.extra.suspects.len();
    parts.push(format!("{n} suspect{}", if n == 1 { "" } else { "s" }));
    match gate(m) {
        Some(g) if g.passed => parts.push("health gate passed".into()),
        Some(g) => parts.push(format!("health gate FAILED ({})", pairs(g.failing.len()))),
        None => {}
    }
    parts.join(", ")
}

pub const CSV_HEADER: &str = "from,to,from_host,to_host,intra_host,latency_size_bytes,latency_p50_us,latency_p99_us,latency_samples,bandwidth_size_bytes,bandwidth_MBps,median_MBps,bandwidth_windows,missing";

/// The latency columns of a row: size, p50, p99 (µs), samples.
fn latency_cells(l: Option<&LatencyPoint>) -> [String; 4] {
    let Some(l) = l else {
        return Default::default();
    };
    let us = |ns: u64| format!("{:.3}", ns as f64 / 1000.0);
    [
        l.size_bytes.to_string(),
        us(l.oneway.p50_ns),
        us(l.oneway.p99_ns),
        l.oneway.count.to_string(),
    ]
}

/// The bandwidth columns of a row: size, MB/s, median window's MB/s, windows.
fn bandwidth_cells(b: Option<&BandwidthPoint>) -> [String; 4] {
    let Some(b) = b else {
        return Default::default();
    };
    [
        b.size_bytes.to_string(),
        format!("{:.1}", b.bandwidth_mbps),
        format!("{:.1}", b.median_mbps),
        b.window_time.count.to_string(),
    ]
}

/// One row per ordered pair, in run order. A pair measured at several sizes
/// gets one row per size rank: row k holds its k-th latency size and its
/// k-th bandwidth size (each list smallest first), the shorter list's
/// columns empty; the pair's columns repeat on every row. A missing pair
/// gets one row with `missing` true and the measured columns empty.
/// Latency is one-way in µs; bandwidth in decimal MB/s.
pub fn csv(m: &Mesh) -> String {
    let hosts = hosts(m);
    let host = |r: usize| hosts.get(r).map_or(String::new(), |h| field(h));
    let mut o = format!("{CSV_HEADER}\n");
    for p in m.points {
        let (lat, bw) = (&p.latency, &p.bandwidth);
        for k in 0..lat.len().max(bw.len()).max(1) {
            let cells = [
                p.from.to_string(),
                p.to.to_string(),
                host(p.from),
                host(p.to),
                p.intra_host.to_string(),
            ]
            .into_iter()
            .chain(latency_cells(lat.get(k)))
            .chain(bandwidth_cells(bw.get(k)))
            .chain([p.missing.to_string()]);
            let _ = writeln!(o, "{}", cells.collect::<Vec<_>>().join(","));
        }
    }
    o
}

/// One mesh run's median and p99 one-way latency and bandwidth matrices,
/// ranks grouped by host; the first leads with the suspects and the health
/// verdict. Dark is worse on all three: slow or narrow. An empty `label`
/// leaves the run's name out of titles and captions.
pub fn mesh_run(id: &str, label: &str, m: &Mesh) -> Vec<Figure> {
    let order = order(m);
    let x = &m.extra.matrices;
    let (lat, bw) = (
        format_size(x.latency_size_bytes),
        format_size(x.bandwidth_size_bytes),
    );
    let run = if label.is_empty() {
        String::new()
    } else {
        format!(" ({label})")
    };
    let rank_axis = |l: &str| Axis::new(l, false, Scale::Count);
    let numbers: Vec<f64> = order.ranks.iter().map(|&r| r as f64).collect();
    let specs = [
        (
            Kind::MeshLatency,
            "latency-p50",
            &x.latency_p50_us,
            "median one-way latency (µs)",
            format!("Median one-way latency between ranks, {lat} bytes{run}"),
        ),
        (
            Kind::MeshLatency,
            "latency-p99",
            &x.latency_p99_us,
            "p99 one-way latency (µs)",
            format!("p99 one-way latency between ranks, {lat} bytes{run}"),
        ),
        (
            Kind::MeshBandwidth,
            "bandwidth",
            &x.bandwidth_mbps,
            "median-window bandwidth (MB/s)",
            format!("Bandwidth between ranks, {bw} bytes{run}"),
        ),
    ];
    let mut figs: Vec<Figure> = specs
        .into_iter()
        .map(|(kind, stem, cells, value, title)| {
            let higher = kind == Kind::MeshBandwidth;
            let h = Heatmap {
                x: rank_axis("to (receiving rank)"),
                y: rank_axis("from (sending rank)"),
                xs: numbers.clone(),
                ys: numbers.clone(),
                labels: Some(Labels {
                    names: order.names.clone(),
                    breaks: order.breaks.clone(),
                }),
                cells: matrix(cells, &order),
                value: value.into(),
                second: None,
                ratio: false,
                higher_is_better: higher,
            };
            Figure {
                kind,
                id: format!("{id}-{stem}"),
                title,
                caption: mesh_caption(&h),
                lead: Vec::new(),
                plot: Plot::Heatmap(h),
            }
        })
        .collect();
    figs[0].lead = findings(m);
    figs
}

fn mesh_caption(h: &Heatmap) -> String {
    let n = h.cells.len();
    let (worse, unit) = if h.higher_is_better {
        ("lower bandwidth", " MB/s are decimal (10^6 bytes/s).")
    } else {
        ("slower", "")
    };
    let mut what = h.value.clone();
    if let Some(first) = what.get(..1) {
        what.replace_range(..1, &first.to_uppercase());
    }
    format!(
        "{what} from each sending rank (row) to each receiving rank (column), ranks labelled host:rank and grouped by host (lines between hosts). Darker is worse ({worse}), on a log scale over at least a factor of 4 from the best pair. Grey diagonal: a rank with itself; white, hatched: a pair not measured ({} of {} missing).{unit}",
        h.missing_count(),
        n * n.saturating_sub(1)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::mesh::Health;
    use serde_json::{Value, json};

    fn summary(p50: u64, count: u64) -> Value {
        json!({"count": count, "mean_ns": p50 as f64, "stddev_ns": 10.0, "min_ns": p50 - 50,
               "p50_ns": p50, "p90_ns": p50 + 100, "p99_ns": p50 * 2, "p999_ns": p50 * 3,
               "p9999_ns": p50 * 4, "max_ns": p50 * 5})
    }

    /// A suspect's finding: the report shows only its line, so any will do.
    fn finding() -> Value {
        json!({"subject": {"kind": "rank", "rank": 1, "host": "b10"}, "scope": "inter",
               "side": "both", "value": 1.0, "baseline": 2.0, "ratio": 0.5, "factor": 1.5,
               "z": null, "cells": []})
    }

    /// Three ranks, rank 1 alone on "b10" and rank 2 on "b9" (sorted
    /// before it), 2 → 0 never measured.
    fn run() -> Saved<MeshPair, MeshExtra> {
        let pair = |f: u64, t: u64, missing: bool| {
            if missing {
                return json!({"from": f, "to": t, "intra_host": false, "round": 0,
                              "latency": [], "bandwidth": [], "missing": true});
            }
            json!({"from": f, "to": t, "intra_host": false, "round": 0, "missing": false,
                   "latency": [{"size_bytes": 8, "warmup": 10, "timed_s": 0.1, "oneway": summary(1500 + f * 100, 1000 + t)}],
                   "bandwidth": [{"size_bytes": 65536, "window": 8, "warmup": 2, "timed_s": 0.1,
                                  "bytes": 1, "bandwidth_MBps": 900.5, "median_MBps": 950.25,
                                  "window_time": summary(500_000, 40)},
                                 {"size_bytes": 1048576, "window": 8, "warmup": 2, "timed_s": 0.1,
                                  "bytes": 1, "bandwidth_MBps": 1000.0, "median_MBps": 1100.0,
                                  "window_time": summary(7_000_000, 30)}]})
        };
        let rank =
            |r: usize, host: &str| json!({"rank": r, "host": host, "allowed_cpus": [], "pid": 1});
        serde_json::from_value(json!({
            "experiment": "mesh", "complete": false, "stopped_by": "interrupted",
            "ranks_total": 3,
            "ranks": [rank(0, "a"), rank(1, "b10"), rank(2, "b9")],
            "schedule": {"kind": "tournament", "mode": "sequential", "rounds": 3, "pairs_per_round": 1},
            "points": [pair(0, 1, false), pair(1, 0, false), pair(2, 0, true)],
            "matrices": {"latency_size_bytes": 8, "bandwidth_size_bytes": 1048576,
                         "latency_p50_us": [[null, 1.5, 1.5], [1.6, null, null], [null, null, null]],
                         "latency_p99_us": [[null, 3.0, 3.0], [3.2, null, null], [null, null, null]],
                         "bandwidth_MBps": [[null, 1100.0, 1100.0], [1100.0, null, null], [null, null, null]]},
            "merged": [], "baselines": [],
            "suspects": [
                {"metric": "latency", "line": "link 0 ↔ 2: latency 3.1× the median", "finding": finding(), "retest": [4.5], "confirmed": true},
                {"metric": "bandwidth", "line": "rank 1 (b10) ↔ all: bandwidth 0.41×", "finding": finding(), "retest": [], "confirmed": null},
                {"metric": "bandwidth", "line": "host b9: bandwidth 0.5×", "finding": finding(), "retest": [900.0], "confirmed": false}
            ],
            "health": {"min_bandwidth_MBps": 1000.0, "max_latency_us": null,
                       "failing": ["rank 2 → rank 0: missing"], "failing_ranks": [2], "passed": false},
            "missing": [[2, 0]],
            "warnings": ["fixture caveat"]
        }))
        .expect("the fixture is a mesh run")
    }

    /// `run()` with nothing measured and nothing known of its ranks: what
    /// an empty or stopped-at-once run holds.
    fn bare() -> Saved<MeshPair, MeshExtra> {
        let mut r = run();
        r.points.clear();
        r.warnings.clear();
        r.complete = true;
        let x = &mut r.extra;
        x.ranks_total = 0;
        x.ranks.clear();
        x.matrices.latency_p50_us.clear();
        x.matrices.latency_p99_us.clear();
        x.matrices.bandwidth_mbps.clear();
        x.suspects.clear();
        x.health = Health::default();
        x.missing.clear();
        r
    }

    #[test]
    fn ranks_are_grouped_by_host_in_natural_order() {
        let r = run();
        let o = order(&(&r).into());
        assert_eq!(o.ranks, [0, 2, 1]);
        assert_eq!(o.names, ["a:0", "b9:2", "b10:1"]);
        assert_eq!(o.breaks, [1, 2]);
        let m = matrix(&r.extra.matrices.latency_p50_us, &o);
        assert_eq!(m[0], [None, Some(1.5), Some(1.5)]);
        assert_eq!(m[2], [Some(1.6), None, None]);
        // Nothing about ranks at all: one unknown host.
        let mut b = bare();
        b.extra.matrices.latency_p50_us = vec![vec![None, Some(1.0)], vec![Some(2.0), None]];
        let bare = order(&(&b).into());
        assert_eq!(bare.names, ["?:0", "?:1"]);
        assert!(bare.breaks.is_empty());
    }

    #[test]
    fn the_table_leads_with_suspects_and_the_gate() {
        let r = run();
        let t = table(&(&r).into());
        let at = |s: &str| t.find(s).unwrap_or_else(|| panic!("no '{s}' in\n{t}"));
        assert!(t.starts_with("## Mesh: 3 ranks on 3 hosts, tournament schedule"));
        assert!(t.contains("latency at 8 bytes, bandwidth at 1M bytes; INCOMPLETE (interrupted)"));
        at("- link 0 ↔ 2: latency 3.1× the median — confirmed by re-test (4.50 µs)");
        at("- rank 1 (b10) ↔ all: bandwidth 0.41× — not re-tested");
        at("- host b9: bandwidth 0.5× — not confirmed by re-test (transient) (900 MB/s)");
        at(
            "Health gate (bandwidth ≥ 1000 MB/s): FAILED, 1 pair outside it; every pair of rank 2 failed",
        );
        assert!(at("Suspects") < at("Health gate") && at("Health gate") < at("from\\to"));
        // Grouped matrix: a │ column and a ─ row between hosts.
        let row = t
            .lines()
            .find(|l| l.starts_with("| b10:1"))
            .expect("b10:1 row");
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(cells[1..7], ["b10:1", "1.60", "│", "missing", "│", "·"]);
        assert!(t.contains("| ─"), "{t}");
        at("Missing pairs (1 of 6): 2→0.");
        at("latency min 1000, median 1000 round trips; bandwidth min 70, median 70 windows");
        at("- fixture caveat");
        assert_eq!(
            headline(&(&r).into()),
            "3 ranks, 3 suspects, health gate FAILED (1 pair)"
        );
    }

    #[test]
    fn empty_fields_read_as_dashes_not_panics() {
        let b = bare();
        let t = table(&(&b).into());
        assert!(
            t.contains("Mesh: 0 ranks on 0 hosts, tournament schedule"),
            "{t}"
        );
        assert!(t.contains("No pair missing."), "{t}");
        assert_eq!(csv(&(&b).into()), format!("{CSV_HEADER}\n"));
        let mut h = bare();
        h.extra.health.passed = true;
        assert!(health(&(&h).into()).is_empty());
        h.extra.health.max_latency_us = Some(5.0);
        assert_eq!(
            health(&(&h).into()),
            ["Health gate (p50 latency ≤ 5.00 µs): passed."]
        );
    }

    #[test]
    fn csv_has_a_row_per_pair_and_size() {
        let c = csv(&(&run()).into());
        let lines: Vec<&str> = c.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(lines.len(), 1 + 2 + 2 + 1);
        assert_eq!(
            lines[1],
            "0,1,a,b10,false,8,1.500,3.000,1001,65536,900.5,950.2,40,false"
        );
        assert_eq!(
            lines[2],
            "0,1,a,b10,false,,,,,1048576,1000.0,1100.0,30,false"
        );
        assert_eq!(lines[5], "2,0,b9,a,false,,,,,,,,,true");
        let cols = CSV_HEADER.split(',').count();
        assert!(lines.iter().all(|l| l.split(',').count() == cols));
    }
}
