//! Flowgraph tables: per core count, a row per scheduler with samples/s
//! and the share of the static bound for each M, then the bounds; the
//! kernel scan; the conditions.

use super::csv::field;
use super::table::{conditions, markdown};
use crate::flowgraph::edge::series;
use crate::result::flowgraph::FlowRun;
use crate::units::format_size;
use crate::units::si;
use std::fmt::Write;

pub fn render(run: &FlowRun) -> String {
    let mut o = String::new();
    let x = &run.extra;
    let _ = writeln!(
        o,
        "## Flowgraph: source → M saxpy → sink\n\nSamples/s per scheduler (the median over 10 ms windows{}), and in brackets the share of the static bound (1/⌈M/N⌉ × the kernel-only rate). Kernel: {} alone on one core reached {} samples/s at {} buffers (the median of {} measurements through the run, {} to {}); the bounds use that rate. `ring` is the runtime-free reference: N pinned threads passing N+1 buffers around, as in the qsdr benchmark report (a runtime that buffers deeper can pass it). A bare scheduler name runs over circular buffers, one per edge: one buffer deep between blocks on one thread, {} deep ({}) between threads{}; `+handoff` over whole buffers handed from block to block, each block writing into the buffer it read last, as the ring does; where the blocks span cores the circuit holds that many buffers more per edge between cores, and the source takes the oldest returned, which has had the longest to leave the other core's cache (`buffers` in JSON).\n",
        match run.points.iter().map(|p| p.rounds).max() {
            Some(r) if r > 1 => format!(
                ", pooled from {r} rounds in which the schedulers of each N and M took turns"
            ),
            _ => String::new(),
        },
        x.kernel,
        si(x.kernel_only_sps),
        format_size(x.kernel_only_buffer_bytes),
        x.kernel_only_measurements,
        si(x.kernel_only_min_sps),
        si(x.kernel_only_max_sps),
        x.edge_buffers,
        format_size(x.edge_buffers as u64 * run_buffer(run)),
        match x.l2_cache_bytes {
            Some(l2) if run.edge_buffers_auto() => format!(
                ", twice this CPU's {} L2 cache, so a consumer's copy of a line has left its core before the producer writes there again (on one core, where nothing crosses, only as deep as keeps all of them within half the L2: `buffers` in JSON)",
                format_size(l2 as u64)
            ),
            _ => String::new(),
        }
    );
    if x.kernel_at_buffer_sps > 0.0 && x.kernel_only_buffer_bytes != run_buffer(run) {
        let _ = writeln!(
            o,
            "At the flowgraph's own {} buffers the kernel alone reached {} samples/s (the median of {} measurements): a runtime's cost is its gap to that (`efficiency_same_size` in JSON and CSV); the rest of the gap to the bound is what that buffer size costs the kernel itself.\n",
            format_size(run_buffer(run)),
            si(x.kernel_at_buffer_sps),
            x.kernel_at_buffer_measurements
        );
    }
    if x.kernel_only_max_sps > 1.2 * x.kernel_only_min_sps {
        let _ = writeln!(
            o,
            "The kernel's own rate drifted by {:.0} % during the run: efficiencies move by as much. Each point's `efficiency_paired` (JSON, CSV) sets it against the kernel measured just before and after it.\n",
            (x.kernel_only_max_sps / x.kernel_only_min_sps - 1.0) * 100.0
        );
    }
    let mut cores: Vec<usize> = run.points.iter().map(|p| p.cores).collect();
    cores.dedup();
    cores.sort_unstable();
    cores.dedup();
    for n in cores {
        let pts: Vec<_> = run.points.iter().filter(|p| p.cores == n).collect();
        let mut scheds: Vec<String> = Vec::new();
        let mut ms: Vec<usize> = Vec::new();
        for p in &pts {
            let s = series(p.scheduler, p.edges);
            if !scheds.contains(&s) {
                scheds.push(s);
            }
            if !ms.contains(&p.blocks) {
                ms.push(p.blocks);
            }
        }
        let cpus = pts.first().map_or(String::new(), |p| {
            crate::measure::placement::compact(&p.cpus)
        });
        let _ = writeln!(o, "### N = {n} (cpus {cpus})\n");
        // A row per scheduler, a column per M: a dozen schedulers side by
        // side would not fit a terminal; three to five M values do.
        let mut header = vec!["scheduler".to_string()];
        header.extend(ms.iter().map(|m| format!("M={m}")));
        let mut rows: Vec<Vec<String>> = scheds
            .iter()
            .map(|s| {
                let mut r = vec![s.clone()];
                r.extend(ms.iter().map(|&m| {
                    pts.iter()
                        .find(|p| p.blocks == m && series(p.scheduler, p.edges) == *s)
                        .map_or("—".into(), |p| {
                            format!("{} ({:.0}%)", si(p.samples_per_s), p.efficiency * 100.0)
                        })
                }));
                r
            })
            .collect();
        type Bound = fn(&crate::result::flowgraph::FlowPoint) -> f64;
        let bounds: [(&str, Bound); 2] = [
            ("ideal static", |p| p.ideal_static_sps),
            ("ideal dynamic", |p| p.ideal_dynamic_sps),
        ];
        for (name, f) in bounds {
            let mut r = vec![name.to_string()];
            r.extend(ms.iter().map(|&m| {
                pts.iter()
                    .find(|p| p.blocks == m)
                    .map_or("—".into(), |p| si(f(p)))
            }));
            rows.push(r);
        }
        o.push_str(&markdown(&header, &rows));
        o.push('\n');
    }
    if !x.kernel_scan.is_empty() {
        let _ = writeln!(o, "### Kernel alone, one core (scan-buffer-size)\n");
        let header = vec!["buffer".to_string(), "samples/s".to_string()];
        let rows: Vec<Vec<String>> = x
            .kernel_scan
            .iter()
            .map(|s| vec![format_size(s.buffer_bytes), si(s.samples_per_s)])
            .collect();
        o.push_str(&markdown(&header, &rows));
        o.push('\n');
    }
    o.push_str(&conditions(run));
    o
}

/// The flowgraph's buffer size, from its points.
fn run_buffer(run: &FlowRun) -> u64 {
    run.points.first().map_or(0, |p| p.buffer_bytes)
}

pub const CSV_HEADER: &str = "scheduler,cores,blocks,samples_per_s,ideal_dynamic_sps,ideal_static_sps,efficiency,efficiency_dynamic,buffer_bytes,buffers,cpus,items,measured_s,complete,mean_sps,p10_sps,p90_sps,kernel_paired_sps,efficiency_paired,edges,rounds,efficiency_same_size";

pub fn csv(run: &FlowRun) -> String {
    let mut o = String::from(CSV_HEADER);
    o.push('\n');
    for p in &run.points {
        let cpus: Vec<String> = p.cpus.iter().map(|c| c.to_string()).collect();
        let _ = writeln!(
            o,
            "{},{},{},{:.0},{:.0},{:.0},{:.4},{:.4},{},{},{},{},{:.6},{},{:.0},{:.0},{:.0},{:.0},{:.4},{},{},{:.4}",
            p.scheduler,
            p.cores,
            p.blocks,
            p.samples_per_s,
            p.ideal_dynamic_sps,
            p.ideal_static_sps,
            p.efficiency,
            p.efficiency_dynamic,
            p.buffer_bytes,
            p.buffers,
            field(&cpus.join(" ")),
            p.items,
            p.measured_s,
            run.complete,
            p.mean_sps,
            p.p10_sps,
            p.p90_sps,
            p.kernel_paired_sps,
            p.efficiency_paired,
            p.edges,
            p.rounds,
            p.efficiency_same_size
        );
    }
    o
}
