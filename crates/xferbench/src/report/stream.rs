//! `stream` results as fio users read them: per-job blocks and "Run status
//! group" lines with fio's number formatting, a block-size sweep table (the
//! aws-fpga "4-X" shape), CSV, and JSON in fio's `jobs[]` shape.

use super::table::markdown;
use crate::error::Result;
use crate::result::stream::{DirStats, GroupDir, GroupResult, IoEngine, JobResult, StreamRun};
use crate::units::format_size;
use std::fmt::Write;

/// fio's num2str with 4 digits: the smallest unit that keeps the integer part
/// within 4 digits, decimals to fill 4 characters (`2727MiB`, `10.7GiB`).
pub fn fio_num(v: f64, binary: bool, unit: &str) -> String {
    let (base, names): (f64, [&str; 6]) = if binary {
        (1024.0, ["", "Ki", "Mi", "Gi", "Ti", "Pi"])
    } else {
        (1000.0, ["", "k", "M", "G", "T", "P"])
    };
    let mut x = v.max(0.0);
    let mut i = 0;
    while x.round() > 9999.0 && i < names.len() - 1 {
        x /= base;
        i += 1;
    }
    let int_len = format!("{}", x.trunc() as u64).len();
    let decimals = if i == 0 {
        0
    } else {
        3usize.saturating_sub(int_len)
    };
    format!("{x:.decimals$}{}{unit}", names[i])
}

fn bw_pair(bytes_per_s: u64) -> (String, String) {
    let v = bytes_per_s as f64;
    (fio_num(v, true, "B/s"), fio_num(v, false, "B/s"))
}

fn usec(ns: f64) -> String {
    format!("{:.2}", ns / 1e3)
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

/// The jobs of group `g` (of its sweep point).
fn members<'a>(run: &'a StreamRun, g: &GroupResult) -> Vec<&'a JobResult> {
    run.points
        .iter()
        .filter(|r| r.groupid == g.groupid && r.sweep_bs == g.sweep_bs)
        .collect()
}

/// The people's report.
pub fn render(run: &StreamRun) -> String {
    let mut out = String::new();
    for g in &run.extra.groups {
        let members = members(run, g);
        if members.is_empty() {
            continue;
        }
        group_block(&mut out, g, &members);
        out.push('\n');
    }
    for g in &run.extra.groups {
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
    if run.extra.groups.len() > 1 && run.extra.sweep.is_empty() {
        out.push('\n');
        out.push_str(&groups_table(run));
    }
    if !run.extra.sweep.is_empty() {
        out.push('\n');
        out.push_str(&sweep_table(run));
    }
    out.push('\n');
    out.push_str(&super::table::conditions(run));
    out
}

fn columns(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// One row per group: what the aws-fpga "4-X" files put in stonewalled groups.
fn groups_table(run: &StreamRun) -> String {
    let header = columns(&[
        "group",
        "jobs",
        "first job",
        "rw",
        "bs",
        "MB/s",
        "MiB/s",
        "IOPS",
        "clat p50 µs",
        "clat p99 µs",
    ]);
    let rows = run
        .extra
        .groups
        .iter()
        .map(|g| {
            let first = run.points.iter().find(|r| r.groupid == g.groupid);
            let d = if g.write.agg.total_ios > 0 && g.read.agg.total_ios == 0 {
                &g.write.agg
            } else if g.read.agg.total_ios > 0 && g.write.agg.total_ios == 0 {
                &g.read.agg
            } else if g.trim.agg.total_ios > 0 && g.write.agg.total_ios == 0 {
                &g.trim.agg
            } else {
                &g.write.agg
            };
            let bw = (g.read.agg.bw_bytes + g.write.agg.bw_bytes + g.trim.agg.bw_bytes) as f64;
            vec![
                g.groupid.to_string(),
                g.jobs.to_string(),
                g.jobname.clone(),
                first.map_or("?".into(), |r| r.rw.name().to_string()),
                first.map_or("?".into(), |r| {
                    r.bs_mix.clone().unwrap_or_else(|| format_size(r.bs))
                }),
                format!("{:.0}", bw / 1e6),
                format!("{:.0}", bw / 1048576.0),
                format!(
                    "{:.0}",
                    g.read.agg.iops + g.write.agg.iops + g.trim.agg.iops
                ),
                usec(d.clat_ns.at(50.0) as f64),
                usec(d.clat_ns.at(99.0) as f64),
            ]
        })
        .collect::<Vec<_>>();
    markdown(&header, &rows)
}

/// The block-size sweep: per size, all jobs together.
fn sweep_table(run: &StreamRun) -> String {
    let header = columns(&[
        "bs",
        "jobs",
        "MB/s",
        "MiB/s",
        "IOPS",
        "clat p50 µs",
        "clat p99 µs",
        "io",
        "wall ms",
        "errors",
    ]);
    let rows = run
        .extra
        .sweep
        .iter()
        .map(|r| {
            vec![
                format_size(r.bs),
                r.jobs.to_string(),
                format!("{:.0}", r.bw_bytes / 1e6),
                format!("{:.0}", r.bw_bytes / 1048576.0),
                format!("{:.0}", r.iops),
                usec(r.clat_p50_ns as f64),
                usec(r.clat_p99_ns as f64),
                fio_num(r.io_bytes as f64, true, "B"),
                format!("{:.1}", r.wall_ns as f64 / 1e6),
                r.errors.to_string(),
            ]
        })
        .collect::<Vec<_>>();
    format!(
        "Block-size sweep (all jobs together; MB/s = 10^6 B/s over the span from the first job's start to the last one's end)\n\n{}",
        markdown(&header, &rows)
    )
}

/// JSON in fio's shape: `jobs[]` with `jobname`, `groupid`, `error`,
/// `read`/`write`/`trim` {io_bytes, bw_bytes, bw (KiB/s), iops, runtime (ms),
/// clat_ns{…, percentile}}; groups with `group_reporting` appear merged as
/// fio merges them, their members under `per_job`. Everything else of the
/// run (environment, options, groups, sweep) rides alongside.
pub fn json(run: &StreamRun) -> Result<String> {
    let mut v = serde_json::to_value(run)
        .map_err(|e| crate::error::Error::run(format!("cannot encode results: {e}")))?;
    let obj = v.as_object_mut().expect("a run is an object");
    let points = obj.remove("points").unwrap_or_default();
    let merged_any = run
        .extra
        .groups
        .iter()
        .any(|g| g.group_reporting && g.jobs > 1);
    let jobs: Vec<serde_json::Value> = if merged_any {
        let mut jobs = Vec::new();
        for g in &run.extra.groups {
            let members = members(run, g);
            if g.group_reporting && g.jobs > 1 {
                jobs.push(serde_json::json!({
                    "jobname": g.jobname,
                    "groupid": g.groupid,
                    "error": g.error,
                    "jobs": g.jobs,
                    "sweep_bs": g.sweep_bs,
                    "read": g.read.agg,
                    "write": g.write.agg,
                    "trim": g.trim.agg,
                }));
            } else {
                jobs.extend(members.iter().filter_map(|r| serde_json::to_value(r).ok()));
            }
        }
        obj.insert("per_job".into(), points);
        jobs
    } else {
        points.as_array().cloned().unwrap_or_default()
    };
    let mut out = serde_json::Map::new();
    out.insert(
        "fio version".into(),
        format!("xferbench-{}", env!("CARGO_PKG_VERSION")).into(),
    );
    out.insert(
        "timestamp".into(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
            .into(),
    );
    out.insert("jobs".into(), jobs.into());
    for (k, val) in std::mem::take(obj) {
        out.insert(k, val);
    }
    super::json::render(&serde_json::Value::Object(out))
}

/// One CSV row per job.
pub fn csv(run: &StreamRun) -> String {
    let mut out = String::from(
        "sweep_bs,groupid,jobname,clone,filename,rw,bs,iodepth,ioengine,completion,dir,io_bytes,bw_bytes,iops,runtime_ns,clat_mean_ns,clat_p50_ns,clat_p99_ns,clat_p999_ns,error\n",
    );
    for r in &run.points {
        for (dir, d) in [("read", &r.read), ("write", &r.write), ("trim", &r.trim)] {
            if d.total_ios == 0 {
                continue;
            }
            let c = &d.clat_ns;
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{dir},{},{},{:.1},{},{:.1},{},{},{},{}",
                r.sweep_bs.map_or(String::new(), |b| b.to_string()),
                r.groupid,
                super::csv::field(&r.jobname),
                r.clone,
                super::csv::field(&r.filename),
                r.rw.name(),
                r.bs,
                r.iodepth,
                r.ioengine.name(),
                r.completion.name(),
                d.io_bytes,
                d.bw_bytes,
                d.iops,
                d.runtime_ns,
                c.mean,
                c.at(50.0),
                c.at(99.0),
                c.at(99.9),
                super::csv::field(r.error_text.as_deref().unwrap_or(""))
            );
        }
    }
    out
}

impl crate::report::Render for StreamRun {
    fn table(&self) -> String {
        render(self)
    }
    fn json(&self) -> crate::error::Result<String> {
        json(self)
    }
    fn csv(&self) -> String {
        csv(self)
    }
    fn points(&self) -> usize {
        self.points.len()
    }
}

#[cfg(test)]
mod tests {
    use super::fio_num;

    #[test]
    fn fio_number_format() {
        let gib = 1024.0 * 1024.0 * 1024.0;
        assert_eq!(fio_num(2727.0 * 1048576.0, true, "B/s"), "2727MiB/s");
        assert_eq!(fio_num(10.7 * gib, true, "B/s"), "10.7GiB/s");
        assert_eq!(fio_num(64.0 * gib, true, "B"), "64.0GiB");
        assert_eq!(fio_num(68.7e9, false, "B"), "68.7GB");
        assert_eq!(fio_num(4096.0 * 1048576.0, true, "B"), "4096MiB");
        assert_eq!(fio_num(512.0, true, "B"), "512B");
    }
}
