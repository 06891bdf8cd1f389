//! `curve --pairs` tables: osu_mbw_mr's columns (size, aggregate MB/s,
//! messages/s) with the slowest pair beside them, then each pair's MB/s.

use super::table::{conditions, markdown};
use crate::result::mesh::PairsRun;
use crate::units::format_size;
use crate::units::si;
use std::fmt::Write;

pub fn render(run: &PairsRun) -> String {
    let mut o = String::new();
    let k = run.extra.pairs;
    let _ = writeln!(
        o,
        "## {k} pair(s) streaming at once: ranks 0–{} send to ranks {k}–{} ({} ranks in the job)\n",
        k - 1,
        2 * k - 1,
        run.extra.ranks_total
    );
    let header: Vec<String> = [
        "size",
        "aggregate MB/s",
        "messages/s",
        "slowest pair MB/s",
        "windows",
    ]
    .into_iter()
    .map(String::from)
    .chain(run.points.first().into_iter().flat_map(|p| {
        p.pairs
            .iter()
            .map(|q| format!("{} → {} MB/s", q.from, q.to))
    }))
    .collect();
    let rows: Vec<Vec<String>> = run
        .points
        .iter()
        .map(|p| {
            let mut r = vec![
                format_size(p.size_bytes),
                si(p.aggregate_mbps),
                si(p.messages_per_s),
                si(p.slowest_pair_mbps),
                p.windows.to_string(),
            ];
            r.extend(p.pairs.iter().map(|q| si(q.bandwidth_mbps)));
            r
        })
        .collect();
    o += &markdown(&header, &rows);
    let _ = writeln!(
        o,
        "\nAggregate: every pair's bytes over the longest pair's timed time (osu_mbw_mr); each pair ran the same number of windows of {} messages.\n",
        run.points.first().map_or(0, |p| p.window)
    );
    o += &conditions(run);
    o
}

/// One row per size and pair.
pub fn csv(run: &PairsRun) -> String {
    let mut o = String::from(
        "size_bytes,window,windows,aggregate_MBps,messages_per_s,from,to,pair_MBps,pair_messages_per_s,pair_timed_s\n",
    );
    for p in &run.points {
        for q in &p.pairs {
            let _ = writeln!(
                o,
                "{},{},{},{:.3},{:.1},{},{},{:.3},{:.1},{:.6}",
                p.size_bytes,
                p.window,
                p.windows,
                p.aggregate_mbps,
                p.messages_per_s,
                q.from,
                q.to,
                q.bandwidth_mbps,
                q.messages_per_s,
                q.timed_s
            );
        }
    }
    o
}
