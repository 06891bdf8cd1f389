//! `stream` results as fio users read them: per-job blocks and "Run status
//! group" lines with fio's number formatting, a block-size sweep table (the
//! aws-fpga "4-X" shape), CSV, and JSON in fio's `jobs[]` shape.

use super::table::markdown;
use crate::error::Result;
use crate::result::fio_json::FioJob;
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
    // fio's histogram only in json+, as fio writes it.
    if run.options["output_format"] != "json+" {
        drop_bins(&mut v);
    }
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
                let parts: Vec<(&FioJob, u64)> =
                    members.iter().map(|r| (&r.fio, r.total_ios())).collect();
                let mut merged = serde_json::json!({
                    "jobname": g.jobname,
                    "groupid": g.groupid,
                    "error": g.error,
                    "jobs": g.jobs,
                    "sweep_bs": g.sweep_bs,
                    "read": g.read.agg,
                    "write": g.write.agg,
                    "trim": g.trim.agg,
                });
                if let (Some(m), Ok(serde_json::Value::Object(f))) = (
                    merged.as_object_mut(),
                    serde_json::to_value(FioJob::merged(&parts)),
                ) {
                    m.extend(f);
                }
                if run.options["output_format"] != "json+" {
                    drop_bins(&mut merged);
                }
                jobs.push(merged);
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
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    out.insert("timestamp".into(), now.as_secs().into());
    out.insert("timestamp_ms".into(), (now.as_millis() as u64).into());
    out.insert("time".into(), ctime(now.as_secs() as i64).into());
    out.insert("jobs".into(), jobs.into());
    for (k, val) in std::mem::take(obj) {
        out.insert(k, val);
    }
    super::json::render(&serde_json::Value::Object(out))
}

/// Removes every `bins` of the directions' `clat_ns` under `v`.
fn drop_bins(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            if let Some(serde_json::Value::Object(c)) = m.get_mut("clat_ns") {
                c.remove("bins");
            }
            m.values_mut().for_each(drop_bins);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(drop_bins),
        _ => {}
    }
}

/// A Unix time as fio's `time` writes it (ctime's local time, without its
/// newline), e.g. `Thu Nov 26 21:22:56 2026`.
fn ctime(secs: i64) -> String {
    let mut buf = [0 as libc::c_char; 32];
    let t: libc::time_t = secs as libc::time_t;
    // SAFETY: ctime_r writes at most 26 bytes into the 32 given.
    let p = unsafe { libc::ctime_r(&t, buf.as_mut_ptr()) };
    if p.is_null() {
        return String::new();
    }
    // SAFETY: ctime_r wrote a NUL-terminated string into buf.
    unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .trim_end()
        .to_string()
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
    /// fio's terse lines where the JSON would be, when the run was asked
    /// for them (`--output-format=terse`).
    fn render(&self, format: crate::format::Format) -> crate::error::Result<String> {
        match format {
            crate::format::Format::Table => Ok(render(self)),
            crate::format::Format::Csv => Ok(csv(self)),
            crate::format::Format::Json if self.options["output_format"] == "terse" => terse(self),
            crate::format::Format::Json => json(self),
        }
    }
}

/// fio's terse output, version 3: one line per entry of the JSON's `jobs`
/// (merged groups as one), its numbers projected from that JSON: the
/// general fields; reads then writes (KiB, KiB/s, IOPS, ms; slat, clat and
/// lat in µs; 20 percentile slots; the bandwidth samples); CPU; the depth
/// and latency maps (ns folded into the first µs range, as fio does); then
/// each disk's counters.
pub fn terse(run: &StreamRun) -> Result<String> {
    let doc: serde_json::Value = serde_json::from_str(&json(run)?)
        .map_err(|e| crate::error::Error::run(format!("cannot read the results back: {e}")))?;
    let version = doc["fio version"].as_str().unwrap_or("xferbench");
    let mut disks = String::new();
    for d in doc["disk_util"].as_array().into_iter().flatten() {
        let n = |k: &str| d[k].as_u64().unwrap_or(0);
        let _ = write!(
            disks,
            ";{};{};{};{};{};{};{};{};{:.2}%",
            d["name"].as_str().unwrap_or(""),
            n("read_ios"),
            n("write_ios"),
            n("read_merges"),
            n("write_merges"),
            n("read_ticks"),
            n("write_ticks"),
            n("in_queue"),
            d["util"].as_f64().unwrap_or(0.0)
        );
    }
    let mut out = String::new();
    for j in doc["jobs"].as_array().into_iter().flatten() {
        let _ = write!(
            out,
            "3;{version};{};{};{}",
            j["jobname"].as_str().unwrap_or(""),
            j["groupid"].as_u64().unwrap_or(0),
            j["error"].as_i64().unwrap_or(0)
        );
        for dir in ["read", "write"] {
            terse_dir(&mut out, &j[dir]);
        }
        let f = |k: &str| j[k].as_f64().unwrap_or(0.0);
        let n = |k: &str| j[k].as_u64().unwrap_or(0);
        let _ = write!(
            out,
            ";{:.6}%;{:.6}%;{};{};{}",
            f("usr_cpu"),
            f("sys_cpu"),
            n("ctx"),
            n("majf"),
            n("minf")
        );
        let map = |k: &str| -> Vec<f64> {
            j[k].as_object()
                .map(|m| m.values().map(|v| v.as_f64().unwrap_or(0.0)).collect())
                .unwrap_or_default()
        };
        for k in ["1", "2", "4", "8", "16", "32", ">=64"] {
            let _ = write!(
                out,
                ";{:.1}%",
                j["iodepth_level"][k].as_f64().unwrap_or(0.0)
            );
        }
        let below_us: f64 = map("latency_ns").iter().sum();
        for (i, k) in [
            "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
        ]
        .iter()
        .enumerate()
        {
            let v = j["latency_us"][k].as_f64().unwrap_or(0.0);
            let _ = write!(out, ";{:.2}%", if i == 0 { v + below_us } else { v });
        }
        for k in [
            "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
        ] {
            let _ = write!(out, ";{:.2}%", j["latency_ms"][k].as_f64().unwrap_or(0.0));
        }
        out.push_str(&disks);
        out.push('\n');
    }
    Ok(out)
}

/// One direction's terse fields, from its JSON object.
fn terse_dir(out: &mut String, d: &serde_json::Value) {
    let n = |k: &str| d[k].as_u64().unwrap_or(0);
    let runtime = n("runtime");
    let bw = (1000 * n("io_bytes")).checked_div(runtime).unwrap_or(0) / 1024;
    let iops = (1000 * n("total_ios")).checked_div(runtime).unwrap_or(0);
    let _ = write!(out, ";{};{bw};{iops};{runtime}", n("io_kbytes"));
    let us = |o: &serde_json::Value| {
        format!(
            ";{};{};{:.6};{:.6}",
            o["min"].as_u64().unwrap_or(0) / 1000,
            o["max"].as_u64().unwrap_or(0) / 1000,
            o["mean"].as_f64().unwrap_or(0.0) / 1000.0,
            o["stddev"].as_f64().unwrap_or(0.0) / 1000.0
        )
    };
    out.push_str(&us(&d["slat_ns"]));
    out.push_str(&us(&d["clat_ns"]));
    for p in crate::result::fio_json::PERCENTILES {
        let v = d["clat_ns"]["percentile"][format!("{p:.6}")]
            .as_u64()
            .unwrap_or(0);
        let _ = write!(out, ";{p:.6}%={}", v / 1000);
    }
    // fio's list has room for 20.
    out.push_str(&";0%=0".repeat(20 - crate::result::fio_json::PERCENTILES.len()));
    out.push_str(&us(&d["lat_ns"]));
    let f = |k: &str| d[k].as_f64().unwrap_or(0.0);
    let _ = write!(
        out,
        ";{};{};{:.6}%;{:.6};{:.6}",
        n("bw_min"),
        n("bw_max"),
        f("bw_agg"),
        f("bw_mean"),
        f("bw_dev")
    );
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
