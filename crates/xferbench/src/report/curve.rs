//! A curve run for people (BIP's "Results table": size, one-way time,
//! bandwidth, plus the spread and tail), and as CSV.

use super::csv::field;
use super::table::{conditions, markdown};
use crate::measure::fit;
use crate::result::curve::{CurvePoint, CurveRun, curve_label};
use crate::units::Chunk;
use crate::units::format_size;
use crate::units::format_us;
use std::fmt::Write;

fn mbps(v: f64) -> String {
    match v {
        v if v < 10.0 => format!("{v:.3}"),
        v if v < 1000.0 => format!("{v:.2}"),
        v => format!("{v:.0}"),
    }
}

/// The curves in the order they were measured, by (spec, buffers, completion, chunk).
fn curves(run: &CurveRun) -> Vec<Vec<&CurvePoint>> {
    let mut out: Vec<Vec<&CurvePoint>> = Vec::new();
    for p in &run.points {
        match out.iter_mut().find(|c| {
            let q = c[0];
            q.spec == p.spec
                && q.buffers == p.buffers
                && q.completion == p.completion
                && q.chunk == p.chunk
                && q.direction == p.direction
        }) {
            Some(c) => c.push(p),
            None => out.push(vec![p]),
        }
    }
    out
}

pub fn render(run: &CurveRun) -> String {
    let mut out = String::new();
    for pts in curves(run) {
        let p0 = pts[0];
        let what = match p0.mode {
            crate::transport::Pattern::Pingpong => "one-way = half the round trip".to_string(),
            crate::transport::Pattern::Stream if p0.transport == "cuda" => format!(
                "one-way = GPU-event time of K copies queued behind a latch, over K (K = {}..{} by size); median of {} trials{}",
                pts.iter().map(|p| p.window).min().unwrap_or(0),
                pts.iter().map(|p| p.window).max().unwrap_or(0),
                p0.exchange.count,
                if p0.spec.contains("dir=bidir") {
                    "; MB/s counts both directions"
                } else {
                    ""
                }
            ),
            crate::transport::Pattern::Stream
                if p0.direction == Some(crate::options::DataDirection::Read) =>
            {
                format!(
                    "the responder sends: one-way = time for a window of {} tiny requests each answered by a message, over {}",
                    p0.window, p0.window
                )
            }
            crate::transport::Pattern::Stream => format!(
                "one-way = time for a window of {} messages and its acknowledgement, over {}",
                p0.window, p0.window
            ),
            crate::transport::Pattern::Bidir => format!(
                "{} messages each way at once; one-way = exchange time over {}; MB/s counts both directions",
                p0.window, p0.window
            ),
        };
        let _ = writeln!(
            out,
            "## {} — {} buffers, {} completion, {} payload\n\nMessage size in bytes; times in µs ({what}); bandwidth in MB/s (decimal, 10^6 bytes/s) from the median.\n",
            curve_label(&p0.spec, p0.mode, p0.chunk, p0.direction),
            p0.buffers.name(),
            p0.completion.name(),
            serde_json::to_value(p0.payload)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
        );
        let packets = p0.chunk != Chunk::Whole;
        let budget = pts.iter().any(|p| p.device_time.is_some());
        let mut header: Vec<String> = ["size", "one-way µs", "min", "max", "p99", "MB/s"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        // A share of the path's ceiling (per direction: a bidir figure
        // counts both); only in runs that recorded one.
        let limited = crate::result::limit::of(&run.limits, &p0.spec)
            .and_then(|l| l.limit.as_ref())
            .is_some();
        let both = p0.mode == crate::transport::Pattern::Bidir || p0.spec.contains("dir=bidir");
        if limited {
            header.push("% of limit".into());
        }
        if packets {
            header.push("packet".into());
        }
        if budget {
            header.push("round-trip budget µs".into());
        }
        let rows: Vec<Vec<String>> = pts
            .iter()
            .map(|p| {
                let mut r = vec![
                    p.size_bytes.to_string(),
                    format_us(p.oneway.p50_ns as f64),
                    format_us(p.oneway.min_ns as f64),
                    format_us(p.oneway.max_ns as f64),
                    format_us(p.oneway.p99_ns as f64),
                    mbps(p.bandwidth_mbps),
                ];
                if limited {
                    r.push(crate::result::limit::share_cell(
                        &run.limits,
                        &p.spec,
                        p.bandwidth_mbps,
                        if both { 2.0 } else { 1.0 },
                    ));
                }
                if packets {
                    r.push(format_size(p.packet_bytes));
                }
                if budget {
                    r.push(
                        p.device_time
                            .as_ref()
                            .map_or_else(|| "—".into(), super::table::budget_cell),
                    );
                }
                r
            })
            .collect();
        out.push_str(&markdown(&header, &rows));
        if budget {
            let _ = writeln!(out, "\nRound-trip budget: the {}.", super::table::BUDGET);
        }
        if let Some(f) = run.extra.fits.iter().find(|f| {
            f.spec == p0.spec
                && f.buffers == p0.buffers
                && f.completion == p0.completion
                && f.chunk == p0.chunk
                && f.direction == p0.direction
        }) {
            match &f.fit {
                Some(fit) => {
                    let _ = writeln!(out, "\nFit (Hockney): {}", fit::describe(fit));
                }
                None => out.push_str(
                    "\nFit (Hockney): not enough distinct sizes with a visible bandwidth limit.\n",
                ),
            }
            if let Some(two) = &f.two_segment {
                let _ = writeln!(
                    out,
                    "Two segments, split at {}:\n- below: {}\n- above: {}",
                    format_size(two.breakpoint_bytes),
                    fit::describe(&two.below),
                    fit::describe(&two.above)
                );
            }
        }
        out.push('\n');
    }
    out.push_str(&strategy_table(run));
    out.push_str(&direction_table(run));
    for r in &run.extra.chunk_rules {
        let _ = writeln!(
            out,
            "Adaptive packets for {} ({} buffers): {}",
            r.spec,
            r.buffers.name(),
            r.rule
        );
    }
    let skipped: Vec<String> = run.extra.skipped.iter().map(|s| s.label()).collect();
    if !skipped.is_empty() {
        out.push('\n');
    }
    out.push_str(&super::table::skipped(&skipped));
    out.push_str(&conditions(run));
    out
}

/// Both directions of one stream side by side, as the fio-on-XDMA table
/// puts a card's H2C and C2H bandwidth per block size: one block per
/// configuration measured both ways.
fn direction_table(run: &CurveRun) -> String {
    use crate::options::DataDirection;
    let all = curves(run);
    let mut out = String::new();
    for w in all
        .iter()
        .filter(|c| c[0].direction == Some(DataDirection::Write))
    {
        let p0 = w[0];
        let Some(r) = all.iter().find(|d| {
            let q = d[0];
            q.direction == Some(DataDirection::Read)
                && q.spec == p0.spec
                && q.buffers == p0.buffers
                && q.completion == p0.completion
                && q.chunk == p0.chunk
        }) else {
            continue;
        };
        let _ = writeln!(
            out,
            "## {} stream — both directions, {} buffers, {} completion\n\nBandwidth in MB/s (decimal) per message size: write = initiator to responder (host to device, H2C), read = responder to initiator (device to host, C2H).\n",
            p0.spec,
            p0.buffers.name(),
            p0.completion.name()
        );
        let mut sizes: Vec<u64> = w.iter().chain(r.iter()).map(|p| p.size_bytes).collect();
        sizes.sort_unstable();
        sizes.dedup();
        let header: Vec<String> = ["size", "write MB/s", "read MB/s"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let cell = |d: &Vec<&CurvePoint>, s: u64| {
            d.iter()
                .find(|p| p.size_bytes == s)
                .map_or("—".into(), |p| mbps(p.bandwidth_mbps))
        };
        let rows: Vec<Vec<String>> = sizes
            .iter()
            .map(|&s| vec![s.to_string(), cell(w, s), cell(r, s)])
            .collect();
        out.push_str(&markdown(&header, &rows));
        out.push('\n');
    }
    out
}

/// BIP's strategy comparison: bandwidth per size (rows) per packetization
/// strategy (columns), one block per transport configuration.
fn strategy_table(run: &CurveRun) -> String {
    let all = curves(run);
    let mut out = String::new();
    let mut done: Vec<(String, String, String, String)> = Vec::new();
    for c in &all {
        let p0 = c[0];
        let key = (
            p0.spec.clone(),
            p0.buffers.name().to_string(),
            p0.completion.name().to_string(),
            format!("{:?}", p0.direction),
        );
        if done.contains(&key) {
            continue;
        }
        let same: Vec<&Vec<&CurvePoint>> = all
            .iter()
            .filter(|d| {
                d[0].spec == p0.spec
                    && d[0].buffers == p0.buffers
                    && d[0].completion == p0.completion
                    && d[0].direction == p0.direction
            })
            .collect();
        done.push(key);
        if same.len() < 2 {
            continue;
        }
        let _ = writeln!(
            out,
            "## {} {} — packetization strategies\n\nBandwidth in MB/s (decimal) per message size and strategy.\n",
            p0.spec,
            p0.mode.name()
        );
        let mut sizes: Vec<u64> = same
            .iter()
            .flat_map(|d| d.iter().map(|p| p.size_bytes))
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        let mut header = vec!["size".to_string()];
        header.extend(same.iter().map(|d| d[0].chunk.name()));
        let rows: Vec<Vec<String>> = sizes
            .iter()
            .map(|&s| {
                let mut r = vec![s.to_string()];
                r.extend(same.iter().map(|d| {
                    d.iter()
                        .find(|p| p.size_bytes == s)
                        .map_or("—".into(), |p| mbps(p.bandwidth_mbps))
                }));
                r
            })
            .collect();
        out.push_str(&markdown(&header, &rows));
        out.push('\n');
    }
    out
}

pub const CSV_HEADER: &str = "transport,spec,buffers,completion,mode,window,chunk,packet_bytes,payload,size_bytes,count,oneway_median_ns,oneway_min_ns,oneway_max_ns,oneway_mean_ns,oneway_p99_ns,bandwidth_MBps,complete,partial";

pub fn csv(run: &CurveRun) -> String {
    // Columns only runs that have them get: the direction of streams the
    // responder sent, the latency budget of devices that time themselves.
    let reads = run
        .points
        .iter()
        .any(|p| p.direction == Some(crate::options::DataDirection::Read));
    let budget = run.points.iter().any(|p| p.device_time.is_some());
    let mut out = String::from(CSV_HEADER);
    if reads {
        out.push_str(",direction");
    }
    if budget {
        out.push_str(super::csv::DEVICE_COLUMNS);
    }
    let limited = crate::result::limit::any_bandwidth(&run.limits);
    if limited {
        out.push_str(super::csv::LIMIT_COLUMNS);
    }
    out.push('\n');
    for p in &run.points {
        let o = &p.oneway;
        let _ = write!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.1},{},{:.3},{},{}",
            field(&p.transport),
            field(&p.spec),
            p.buffers.name(),
            p.completion.name(),
            p.mode.name(),
            p.window,
            field(&p.chunk.name()),
            p.packet_bytes,
            serde_json::to_value(p.payload)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            p.size_bytes,
            o.count,
            o.p50_ns,
            o.min_ns,
            o.max_ns,
            o.mean_ns,
            o.p99_ns,
            p.bandwidth_mbps,
            run.complete,
            p.partial
        );
        if reads {
            let _ = write!(
                out,
                ",{}",
                p.direction.map_or("", crate::result::load::dir_name)
            );
        }
        if budget {
            out.push_str(&super::csv::device_cells(p.device_time.as_ref()));
        }
        if limited {
            let both = p.mode == crate::transport::Pattern::Bidir || p.spec.contains("dir=bidir");
            out.push_str(&super::csv::limit_cells(
                &run.limits,
                &p.spec,
                p.bandwidth_mbps,
                if both { 2.0 } else { 1.0 },
            ));
        }
        out.push('\n');
    }
    out
}
