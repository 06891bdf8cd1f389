//! fio's normal output: a block per job (or per merged group with
//! `group_reporting`) and the "Run status group" lines, with fio's number
//! formatting.

use super::Report;
use super::num::{fio_num, usec};
use crate::result::{DirStats, GroupDir, GroupResult, IoEngine, JobResult};
use crate::units::format_size;
use std::fmt::Write;

fn bw_pair(bytes_per_s: u64) -> (String, String) {
    let v = bytes_per_s as f64;
    (fio_num(v, true, "B/s"), fio_num(v, false, "B/s"))
}

fn dir_lines(out: &mut String, what: &str, d: &DirStats) {
    if d.total_ios == 0 {
        return;
    }
    if d.io_bytes == 0 {
        // The file engines: operations, no data.
        let _ = writeln!(
            out,
            "  {what}: IOPS={}, no data moved ({} ops/{}msec)",
            fio_num(d.iops, false, ""),
            d.total_ios,
            d.runtime
        );
    } else {
        let (bi, bd) = bw_pair(d.bw_bytes);
        let _ = writeln!(
            out,
            "  {what}: IOPS={}, BW={bi} ({bd})({}/{}msec)",
            fio_num(d.iops, false, ""),
            fio_num(d.io_bytes as f64, true, "B"),
            d.runtime
        );
    }
    let c = &d.clat_ns;
    let _ = writeln!(
        out,
        "    clat (usec): min={}, max={}, avg={}, stdev={}",
        usec(c.min as f64),
        usec(c.max as f64),
        usec(c.mean),
        usec(c.stddev)
    );
    let _ = writeln!(
        out,
        "     percentiles (usec): p50={}, p90={}, p99={}, p99.9={}, p99.99={}",
        usec(c.at(50.0) as f64),
        usec(c.at(90.0) as f64),
        usec(c.at(99.0) as f64),
        usec(c.at(99.9) as f64),
        usec(c.at(99.99) as f64)
    );
    prio_lines(out, d);
}

/// fio's per-priority lines (`cmdprio_*`): each priority's latency and its
/// share of the direction's I/Os, when two or more priorities have I/Os.
fn prio_lines(out: &mut String, d: &DirStats) {
    for p in &d.prios {
        let c = &p.clat_ns;
        let _ = writeln!(
            out,
            "    clat prio {}/{} ({:.2}% of IOs) (usec): min={}, max={}, avg={}, stdev={}, p50={}, p99={}",
            p.prioclass,
            p.prio,
            100.0 * c.n as f64 / d.total_ios.max(1) as f64,
            usec(c.min as f64),
            usec(c.max as f64),
            usec(c.mean),
            usec(c.stddev),
            usec(c.at(50.0) as f64),
            usec(c.at(99.0) as f64)
        );
    }
}

/// fio's first line of a job (or merged group): name, group, error, and the
/// options of `r` (the group's first job).
fn head_line(out: &mut String, name: &str, groupid: u32, jobs: u32, error: i32, r: &JobResult) {
    let _ = writeln!(
        out,
        "{name}: (groupid={groupid}, jobs={jobs}): err={error:2}: rw={}, bs={}, ioengine={}, iodepth={}, direct={}, iomem={}",
        r.rw.name(),
        r.bs_mix
            .clone()
            .unwrap_or_else(|| fio_num(r.bs as f64, true, "B")),
        r.ioengine.name(),
        r.iodepth,
        u8::from(r.direct),
        serde_json::to_value(r.iomem)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default()
    );
}

fn job_block(out: &mut String, r: &JobResult) {
    head_line(out, &r.jobname, r.groupid, 1, r.error, r);
    if matches!(r.ioengine, IoEngine::Cpuio | IoEngine::Exec) {
        // A load: no file, no region; its completion line says what it did.
    } else if r.ioengine.file_op() {
        let _ = writeln!(
            out,
            "  files: {} (the first; one operation per file per pass)",
            r.filename
        );
    } else {
        file_line(out, r);
    }
    let _ = writeln!(
        out,
        "  completion: {} ({})",
        r.completion.name(),
        r.completion_detail
    );
    dir_and_verify_lines(out, r);
    tuned_lines(out, r);
}

/// fio 3.33's lines for what `latency_target` and `ss=` found.
fn tuned_lines(out: &mut String, r: &JobResult) {
    if let Some(l) = &r.latency_target {
        let _ = writeln!(
            out,
            "     latency   : target={}, window={}, percentile={:.2}%, depth={}",
            l.latency_target, l.latency_window, l.latency_percentile, l.latency_depth
        );
    }
    if let Some(s) = &r.steadystate {
        let (bi, bd) = bw_pair(s.data.bw_mean);
        let pct = s.criterion.ends_with('%');
        let slope = s.ss.split(':').next().unwrap_or_default();
        let _ = writeln!(
            out,
            "  steadystate  : attained={}, bw={bi} ({bd}), iops={}, {}{}={:.3}{}",
            if s.attained > 0 { "yes" } else { "no" },
            fio_num(s.data.iops_mean as f64, false, ""),
            if slope.starts_with("bw") {
                "bw"
            } else {
                "iops"
            },
            if slope.ends_with("_slope") {
                " slope"
            } else {
                " mean dev"
            },
            s.criterion
                .trim_end_matches('%')
                .parse::<f64>()
                .unwrap_or(0.0),
            if pct { "%" } else { "" }
        );
    }
}

/// The target, its region and what was done to it first.
fn file_line(out: &mut String, r: &JobResult) {
    if !r.files.is_empty() {
        // A job with several files: their total, then each.
        let _ = writeln!(
            out,
            "  files: {} ({}), {} in all",
            r.files.len(),
            r.file_service_type.as_deref().unwrap_or("roundrobin"),
            fio_num(r.size as f64, true, "B")
        );
        const SHOWN: usize = 8;
        for f in r.files.iter().take(SHOWN) {
            let _ = writeln!(
                out,
                "    {}: region {}..{}, {} I/Os{}",
                f.filename,
                format_size(f.offset),
                format_size(f.offset + f.size),
                f.ios,
                f.prepared
                    .as_ref()
                    .map_or(String::new(), |p| format!("; {p}"))
            );
        }
        if r.files.len() > SHOWN {
            let _ = writeln!(out, "    … {} more in the JSON", r.files.len() - SHOWN);
        }
        return;
    }
    let _ = writeln!(
        out,
        "  file: {}{}{}, region {}..{} ({}){}",
        r.filename,
        r.mapped_from
            .as_ref()
            .map_or(String::new(), |m| format!(" (--map from {m})")),
        r.target.map_or(String::new(), |t| format!(
            " [{}]",
            serde_json::to_value(t)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()
        )),
        format_size(r.offset),
        format_size(r.offset + r.size),
        fio_num(r.size as f64, true, "B"),
        r.prepared
            .as_ref()
            .map_or(String::new(), |p| format!("; {p}"))
    );
}

fn dir_and_verify_lines(out: &mut String, r: &JobResult) {
    dir_lines(out, "read", &r.read);
    dir_lines(out, "write", &r.write);
    dir_lines(out, "trim", &r.trim);
    if let Some(v) = &r.verify {
        let _ = writeln!(
            out,
            "  verify: {}, {} blocks checked, {} bad{}",
            v.kind,
            v.blocks,
            v.bad,
            match (v.readback_s, v.backlog) {
                (None, _) => String::new(),
                (Some(s), None) =>
                    format!(", read-back pass {s:.2} s (not in the bandwidth above)"),
                (Some(s), Some(n)) =>
                    format!(", read-back {s:.2} s (every {n} blocks: inside the bandwidth above)"),
            }
        );
    }
    if let Some(e) = &r.error_text {
        let _ = writeln!(out, "  error: {e}");
    }
    if r.partial {
        let _ = writeln!(
            out,
            "  (interrupted: figures cover the I/Os done before the stop)"
        );
    }
}

fn group_block(out: &mut String, g: &GroupResult, results: &[&JobResult]) {
    let merged = g.group_reporting && g.jobs > 1;
    if merged {
        head_line(out, &g.jobname, g.groupid, g.jobs, g.error, results[0]);
        dir_lines(out, "read", &g.read.agg);
        dir_lines(out, "write", &g.write.agg);
        dir_lines(out, "trim", &g.trim.agg);
        for r in results.iter().filter(|r| r.error_text.is_some()) {
            let _ = writeln!(out, "  error: {}", r.error_text.as_deref().unwrap_or(""));
        }
    } else {
        for r in results {
            job_block(out, r);
        }
    }
}

fn status_line(out: &mut String, what: &str, d: &GroupDir) {
    if d.agg.total_ios == 0 {
        return;
    }
    if d.agg.io_bytes == 0 {
        let _ = writeln!(
            out,
            "  {what}: iops={}, no data moved, ops={}, run={}-{}msec",
            fio_num(d.agg.iops, false, ""),
            d.agg.total_ios,
            d.min_runtime,
            d.max_runtime
        );
        return;
    }
    let (ai, ad) = bw_pair(d.agg.bw_bytes);
    let (mini, mind) = bw_pair(d.min_bw_bytes);
    let (maxi, maxd) = bw_pair(d.max_bw_bytes);
    let _ = writeln!(
        out,
        "  {what}: bw={ai} ({ad}), {mini}-{maxi} ({mind}-{maxd}), io={} ({}), run={}-{}msec",
        fio_num(d.agg.io_bytes as f64, true, "B"),
        fio_num(d.agg.io_bytes as f64, false, "B"),
        d.min_runtime,
        d.max_runtime
    );
}

/// The job blocks and "Run status group" lines of `r`.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    for g in r.groups {
        let members = r.members(g);
        if members.is_empty() {
            continue;
        }
        group_block(&mut out, g, &members);
        out.push('\n');
    }
    for g in r.groups {
        let _ = writeln!(
            out,
            "Run status group {}{} (all jobs):",
            g.groupid,
            g.sweep_bs
                .map_or(String::new(), |b| format!(" at bs={}", format_size(b)))
        );
        status_line(&mut out, "READ", &g.read);
        status_line(&mut out, "WRITE", &g.write);
        status_line(&mut out, "TRIM", &g.trim);
    }
    out
}
