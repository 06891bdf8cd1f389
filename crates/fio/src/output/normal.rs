//! fio 3.33's normal output, line for line where xferbench measures what
//! fio prints (scripts grep these lines: `clat percentiles (usec):`,
//! `   READ: bw=`, `IO depths    :` …): the jobs' first lines, `Starting
//! N processes`, a block per job (or per merged group with
//! `group_reporting`), the "Run status group" lines and `Disk stats`.
//! What xferbench says beyond fio (the file and its region, how
//! completions were waited for, verification, errors, an interrupted run)
//! follows in a section of its own, so that no line of fio's shape changes
//! meaning.

use super::Report;
use super::num::{ctime, fio_num, num2str};
use crate::result::{
    Clat, DirStats, FioJob, GroupDir, GroupResult, IoEngine, JobResult, Moments, PERCENTILES, Pairs,
};
use crate::units::{format_size, parse_fio_size};
use std::fmt::Write;
use std::time::{Duration, SystemTime};

/// fio's normal text of `r`, then xferbench's section.
pub fn render(r: &Report) -> String {
    let mut out = fio_text(r);
    out.push('\n');
    out.push_str(&notes(r));
    out
}

/// fio's own lines, in fio's order: the jobs' first lines, the version
/// and `Starting` lines, the job blocks, the group lines, the disks.
pub fn fio_text(r: &Report) -> String {
    let mut out = String::new();
    start_lines(&mut out, r);
    let date = report_date(r);
    let pid = r.pid.unwrap_or(0);
    for g in r.groups {
        let members = r.members(g);
        if members.is_empty() {
            continue;
        }
        if g.group_reporting && g.jobs > 1 {
            merged_block(&mut out, g, &members, pid, &date);
        } else {
            for j in &members {
                job_block(&mut out, &Block::of(j, r.global_options, pid, &date));
            }
        }
    }
    // A job outside every group (a file written before groups were
    // recorded) is shown alone.
    let grouped = |j: &JobResult| {
        r.groups
            .iter()
            .any(|g| g.groupid == j.groupid && g.sweep_bs == j.sweep_bs)
    };
    for j in r.jobs.iter().filter(|j| !grouped(j)) {
        job_block(&mut out, &Block::of(j, r.global_options, pid, &date));
    }
    for g in r.groups {
        group_lines(&mut out, g);
    }
    disk_lines(&mut out, r);
    out
}

/// The value of option `key` as the job gave it, in its own section or
/// in `[global]`.
fn option<'a>(j: &'a JobResult, global: &'a Pairs<String>, key: &str) -> Option<&'a str> {
    let find = |p: &'a Pairs<String>| p.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    find(&j.fio.job_options).or_else(|| find(global))
}

/// The engines fio marks as doing no I/O (`FIO_NOIO`): fio prints no
/// first line for their jobs.
fn no_io(e: IoEngine) -> bool {
    matches!(e, IoEngine::Cpuio | IoEngine::Exec)
}

/// What fio prints as it starts: each job's first line (`...` for its
/// second clone, nothing for the others), its version, `Starting`.
fn start_lines(out: &mut String, r: &Report) {
    for j in r.jobs.iter().filter(|j| !no_io(j.ioengine)) {
        match j.clone {
            0 => first_line(out, j, r.global_options),
            1 => out.push_str("...\n"),
            _ => {}
        }
    }
    let _ = writeln!(out, "{}", crate::cmdline::version());
    // fio's rule for the job file: processes unless `thread` was set (the
    // jobs here are threads either way, as docs/stream.md says).
    let threads = r
        .jobs
        .iter()
        .filter(|j| option(j, r.global_options, "thread").is_some())
        .count();
    let processes = r.jobs.len() - threads;
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n > 1 { many } else { one });
    let mut line = String::from("Starting ");
    if threads > 0 {
        line.push_str(&plural(threads, "thread", "threads"));
    }
    if processes > 0 {
        if threads > 0 {
            line.push_str(" and ");
        }
        line.push_str(&plural(processes, "process", "processes"));
    }
    let _ = writeln!(out, "{line}\n");
}

/// `name: (g=0): rw=…, bs=(R) …, (W) …, (T) …, ioengine=…, iodepth=…`.
fn first_line(out: &mut String, j: &JobResult, global: &Pairs<String>) {
    let bs = bs_ranges(j)
        .iter()
        .zip(["R", "W", "T"])
        .map(|(&(lo, hi), d)| {
            format!(
                "({d}) {}-{}",
                num2str(lo, 4, 1, true, "B"),
                num2str(hi, 4, 1, true, "B")
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    // fio prints the depth asked for; a synchronous engine runs at 1.
    let depth = option(j, global, "iodepth")
        .and_then(|v| v.trim().parse::<u32>().ok())
        .unwrap_or(j.iodepth);
    let _ = writeln!(
        out,
        "{}: (g={}): rw={}, bs={bs}, ioengine={}, iodepth={depth}",
        j.jobname,
        j.groupid,
        j.rw.name(),
        j.ioengine.name()
    );
}

/// Each direction's smallest and largest block (reads, writes, trims),
/// read back from the job's mixed sizes as its record writes them
/// (`4k-64k`, `4k/50:8k/50`, `R,W`); trims take the writes' sizes, as
/// fio's do when `bs=` gives two.
fn bs_ranges(j: &JobResult) -> [(u64, u64); 3] {
    let one = (j.bs, j.bs);
    let Some(mix) = &j.bs_mix else {
        return [one; 3];
    };
    let range = |text: &str| -> (u64, u64) {
        let sizes: Option<Vec<u64>> = if text.contains('/') {
            text.split(':')
                .map(|e| parse_fio_size(e.split('/').next().unwrap_or(e)).ok())
                .collect()
        } else {
            text.split('-').map(|e| parse_fio_size(e).ok()).collect()
        };
        match sizes {
            Some(v) if !v.is_empty() => (
                v.iter().copied().min().unwrap_or(j.bs),
                v.iter().copied().max().unwrap_or(j.bs),
            ),
            _ => one,
        }
    };
    let (r, w) = mix.split_once(',').unwrap_or((mix, mix));
    let (r, w) = (range(r), range(w));
    [r, w, w]
}

/// When the blocks are dated: when the run's last job ended (fio dates
/// them as it prints them, at the end of the run), else now.
fn report_date(r: &Report) -> String {
    let end = r.jobs.iter().map(|j| j.end_ns).max().unwrap_or(0);
    let at = r
        .started
        .map_or_else(SystemTime::now, |s| s + Duration::from_nanos(end));
    let secs = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    ctime(secs as i64)
}

/// One block of fio's text: a job, or a group reported as one.
struct Block<'a> {
    name: &'a str,
    groupid: u32,
    jobs: u32,
    error: i32,
    error_text: Option<&'a str>,
    pid: u32,
    date: &'a str,
    description: Option<&'a str>,
    dirs: [&'a DirStats; 3],
    fio: std::borrow::Cow<'a, FioJob>,
    /// The first job's: latency target and steady state.
    first: &'a JobResult,
}

impl<'a> Block<'a> {
    fn of(j: &'a JobResult, global: &'a Pairs<String>, pid: u32, date: &'a str) -> Block<'a> {
        Block {
            name: &j.jobname,
            groupid: j.groupid,
            jobs: 1,
            error: j.error,
            error_text: j.error_text.as_deref(),
            pid,
            date,
            description: option(j, global, "description"),
            dirs: [&j.read, &j.write, &j.trim],
            fio: std::borrow::Cow::Borrowed(&j.fio),
            first: j,
        }
    }
}

fn merged_block(out: &mut String, g: &GroupResult, members: &[&JobResult], pid: u32, date: &str) {
    let parts: Vec<(&FioJob, u64)> = members.iter().map(|j| (&j.fio, j.total_ios())).collect();
    // fio's CPU shares of a merged block: every member's CPU time over
    // every member's run time, as FioJob::merged gives them.
    let fio = FioJob::merged(&parts);
    let first = members[0];
    let b = Block {
        name: &g.jobname,
        groupid: g.groupid,
        jobs: g.jobs,
        error: g.error,
        error_text: members.iter().find_map(|j| j.error_text.as_deref()),
        pid,
        date,
        description: None,
        dirs: [&g.read.agg, &g.write.agg, &g.trim.agg],
        fio: std::borrow::Cow::Owned(fio),
        first,
    };
    job_block(out, &b);
}

/// fio's block of one job or merged group; none for one that did nothing.
fn job_block(out: &mut String, b: &Block) {
    let did = |d: &DirStats| d.io_bytes > 0 || d.total_ios > 0;
    if !b.dirs.iter().any(|d| did(d)) {
        return;
    }
    let err = match (b.error, b.error_text) {
        (0, _) => format!("{:2}", 0),
        (e, Some(t)) => format!("{e:2} ({t})"),
        (e, None) => format!("{e:2}"),
    };
    let _ = writeln!(
        out,
        "{}: (groupid={}, jobs={}): err={err}: pid={}: {}",
        b.name, b.groupid, b.jobs, b.pid, b.date
    );
    if let Some(d) = b.description {
        let _ = writeln!(out, "  Description  : [{d}]");
    }
    for (d, what) in b.dirs.iter().zip(["read", "write", "trim"]) {
        if did(d) && d.runtime > 0 {
            dir_status(out, what, d);
        }
    }
    lat_buckets(out, &b.fio);
    sync_lines(out, &b.fio);
    usage_lines(out, b);
}

/// A latency's figures as fio's `display_lat` takes them.
struct Lat {
    min: u64,
    max: u64,
    mean: f64,
    dev: f64,
    n: u64,
}

impl From<&Clat> for Lat {
    fn from(c: &Clat) -> Lat {
        Lat {
            min: c.min,
            max: c.max,
            mean: c.mean,
            dev: c.stddev,
            n: c.n,
        }
    }
}

impl From<&Moments> for Lat {
    fn from(m: &Moments) -> Lat {
        Lat {
            min: m.min,
            max: m.max,
            mean: m.mean,
            dev: m.stddev,
            n: m.n,
        }
    }
}

/// `    clat (usec): min=…, max=…, avg=…, stdev=…`: fio's unit rule picks
/// msec, usec or nsec by the figures themselves (all three past their
/// bounds, the spread too), so a tight 12 µs latency stays in nsec.
fn display_lat(out: &mut String, name: &str, l: &Lat) {
    if l.n == 0 {
        return;
    }
    let (min, max, mean, dev) = (l.min, l.max, l.mean, l.dev);
    let (unit, div) = if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        ("msec", 1_000_000)
    } else if min > 2_000 && max > 99_999 && dev > 1_000.0 {
        ("usec", 1_000)
    } else {
        ("nsec", 1)
    };
    let _ = writeln!(
        out,
        "    {name} ({unit}): min={}, max={}, avg={:5.2}, stdev={:5.2}",
        num2str(min / div, 6, 1, false, ""),
        num2str(max / div, 6, 1, false, ""),
        mean / div as f64,
        dev / div as f64
    );
}

/// fio's percentile rows: `    clat percentiles (usec):` then rows of
/// ` 1.00th=[  72],` under `     |`, as many to a row as fit 80 columns.
/// The unit is chosen by the smallest and largest value shown (ns below
/// 2 µs or with nothing past 100 µs); values are rounded up into it.
fn percentile_rows(out: &mut String, pre: &str, vals: &[(f64, u64)]) {
    let (Some(minv), Some(maxv)) = (
        vals.iter().map(|v| v.1).min(),
        vals.iter().map(|v| v.1).max(),
    ) else {
        return;
    };
    let (unit, divisor, steps) = if minv > 2_000_000 && maxv > 99_999_999 {
        ("msec", 1_000_000, 2)
    } else if minv > 2_000 && maxv > 99_999 {
        ("usec", 1_000, 1)
    } else {
        ("nsec", 1, 0)
    };
    let _ = write!(out, "    {pre} percentiles ({unit}):\n     |");
    let widest = maxv / divisor;
    let width = if widest == 0 {
        5
    } else {
        widest.to_string().len().max(5)
    };
    // fio's two decimals: each entry is 2 + 10 + width characters.
    let per_line = 73 / (12 + width);
    for (i, &(p, v)) in vals.iter().enumerate() {
        if i != 0 && i % per_line == 0 {
            out.push_str("     |");
        }
        let last = i == vals.len() - 1;
        let v = (0..steps).fold(v, |v, _| v.div_ceil(1000));
        let _ = write!(
            out,
            " {p:5.2}th=[{v:>width$}]{}",
            if last { '\n' } else { ',' }
        );
        if !last && i % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

/// The percentile rows of `m`, a latency kept as moments, when it has
/// percentiles (a sync's; slat's and lat's when asked for).
fn moment_percentiles(out: &mut String, pre: &str, m: &Moments) {
    if let (true, Some(p)) = (m.n > 0, &m.percentile) {
        let vals: Vec<(f64, u64)> = PERCENTILES
            .iter()
            .filter_map(|&q| p.get(&format!("{q:.6}")).map(|&v| (q, v)))
            .collect();
        percentile_rows(out, pre, &vals);
    }
}

/// fio's percentile list's values of `c` (none without them).
fn clat_percentiles(c: &Clat) -> Vec<(f64, u64)> {
    PERCENTILES
        .iter()
        .filter_map(|&p| c.percentile.get(&format!("{p:.6}")).map(|&v| (p, v)))
        .collect()
}

/// One direction: `  read: IOPS=…, BW=…`, its latencies, percentiles
/// (per priority where two or more had I/Os), bandwidth and IOPS samples.
fn dir_status(out: &mut String, what: &str, d: &DirStats) {
    let bw = d.bw_bytes;
    let _ = writeln!(
        out,
        "  {what}: IOPS={}, BW={} ({})({}/{}msec){}",
        num2str(d.iops as u64, 4, 1, false, ""),
        num2str(bw, 4, 1, true, "B/s"),
        num2str(bw, 4, 1, false, "B/s"),
        num2str(d.io_bytes, 4, 1, true, "B"),
        d.runtime,
        // fio's zoned-device count: zonemode=zbd is refused here.
        if what == "write" {
            "; 0 zone resets"
        } else {
            ""
        }
    );
    display_lat(out, "slat", &Lat::from(&d.fio.slat_ns));
    display_lat(out, "clat", &Lat::from(&d.clat_ns));
    display_lat(out, " lat", &Lat::from(&d.fio.lat_ns));
    for p in &d.prios {
        display_lat(
            out,
            &format!("clat prio {}/{}", p.prioclass, p.prio),
            &Lat::from(&p.clat_ns),
        );
    }
    // slat and lat percentiles where the job asked for them
    // (`slat_percentiles`, `lat_percentiles`), around clat's, as fio.
    moment_percentiles(out, "slat", &d.fio.slat_ns);
    if d.clat_ns.n > 0 {
        percentile_rows(out, "clat", &clat_percentiles(&d.clat_ns));
    }
    moment_percentiles(out, "lat", &d.fio.lat_ns);
    for p in d.prios.iter().filter(|p| p.clat_ns.n > 0) {
        let share = 100.0 * p.clat_ns.n as f64 / d.clat_ns.n.max(1) as f64;
        percentile_rows(
            out,
            &format!("clat prio {}/{} ({share:.2}% of IOs)", p.prioclass, p.prio),
            &clat_percentiles(&p.clat_ns),
        );
    }
    sample_lines(out, d);
}

/// `   bw (  KiB/s): …` and `   iops        : …`, from the bandwidth and
/// IOPS samples (none in a job shorter than a sampling window).
fn sample_lines(out: &mut String, d: &DirStats) {
    let f = &d.fio;
    if f.bw_samples > 0 {
        let (mut min, mut max, mut mean, mut dev) = (f.bw_min, f.bw_max, f.bw_mean, f.bw_dev);
        let mut unit = "KiB";
        if mean > 1024.0 * 1024.0 {
            min = (min as f64 / 1024.0) as u64;
            max = (max as f64 / 1024.0) as u64;
            mean /= 1024.0;
            dev /= 1024.0;
            unit = "MiB";
        }
        let _ = writeln!(
            out,
            "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per={:3.2}%, avg={mean:5.2}, stdev={dev:5.2}, samples={}",
            f.bw_agg, f.bw_samples
        );
    }
    if f.iops_samples > 0 {
        let _ = writeln!(
            out,
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}",
            f.iops_min, f.iops_max, f.iops_mean, f.iops_stddev, f.iops_samples
        );
    }
}

/// Ranges of fio's latency maps, in each map's unit.
const NS_RANGES: [&str; 10] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
];
const MS_RANGES: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];

/// `  lat (usec)   : 2=…%, 4=…%`: the share of I/Os in each latency range,
/// five to a line, ranges with none left out (a share too small to show
/// is shown as 0.01%, as fio does).
fn lat_buckets(out: &mut String, f: &FioJob) {
    for (map, unit, ranges) in [
        (&f.latency_ns, "nsec", &NS_RANGES[..]),
        (&f.latency_us, "usec", &NS_RANGES[..]),
        (&f.latency_ms, "msec", &MS_RANGES[..]),
    ] {
        let mut shown = 0;
        for k in ranges {
            let v = map.get(k).unwrap_or(0.0);
            if v <= 0.0 {
                continue;
            }
            if shown % 5 == 0 {
                if shown > 0 {
                    out.push('\n');
                }
                let _ = write!(out, "  lat ({unit})   : ");
            } else {
                out.push_str(", ");
            }
            let _ = write!(out, "{k}={:3.2}%", v.max(0.01));
            shown += 1;
        }
        if shown > 0 {
            out.push('\n');
        }
    }
}

/// The `fsync=`/`fdatasync=` syncs' latency and, where the result has
/// them (every run since they were kept; a merged group pools moments
/// only), their percentiles.
fn sync_lines(out: &mut String, f: &FioJob) {
    if f.sync.lat_ns.n == 0 {
        return;
    }
    out.push_str("  fsync/fdatasync/sync_file_range:\n");
    display_lat(out, "sync", &Lat::from(&f.sync.lat_ns));
    moment_percentiles(out, "sync", &f.sync.lat_ns);
}

/// CPU, the depth maps, the I/O counts, the latency target and steady
/// state.
fn usage_lines(out: &mut String, b: &Block) {
    let f = &b.fio;
    let _ = writeln!(
        out,
        "  cpu          : usr={:3.2}%, sys={:3.2}%, ctx={}, majf={}, minf={}",
        f.usr_cpu, f.sys_cpu, f.ctx, f.majf, f.minf
    );
    let dist = |p: &Pairs<f64>, keys: [&str; 7]| {
        keys.iter()
            .map(|k| format!("{k}={:3.1}%", p.get(k).unwrap_or(0.0)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    const DEPTHS: [&str; 7] = ["1", "2", "4", "8", "16", "32", ">=64"];
    const BATCHES: [&str; 7] = ["0", "4", "8", "16", "32", "64", ">=64"];
    let _ = writeln!(out, "  IO depths    : {}", dist(&f.iodepth_level, DEPTHS));
    let _ = writeln!(out, "     submit    : {}", dist(&f.iodepth_submit, BATCHES));
    let _ = writeln!(
        out,
        "     complete  : {}",
        dist(&f.iodepth_complete, BATCHES)
    );
    let [r, w, t] = b.dirs;
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},{} short={},{},{},0 dropped={},{},{},0",
        r.total_ios,
        w.total_ios,
        t.total_ios,
        f.sync.total_ios,
        r.fio.short_ios,
        w.fio.short_ios,
        t.fio.short_ios,
        r.fio.drop_ios,
        w.fio.drop_ios,
        t.fio.drop_ios
    );
    let (depth, target, window, pct) = match &b.first.latency_target {
        Some(l) => (
            l.latency_depth,
            l.latency_target,
            l.latency_window,
            l.latency_percentile,
        ),
        None => (
            f.latency_depth,
            f.latency_target,
            f.latency_window,
            f.latency_percentile,
        ),
    };
    if depth > 0 {
        let _ = writeln!(
            out,
            "     latency   : target={target}, window={window}, percentile={pct:.2}%, depth={depth}"
        );
    }
    steady_line(out, b.first);
}

/// fio 3.33's line for what `ss=` found.
fn steady_line(out: &mut String, r: &JobResult) {
    let Some(s) = &r.steadystate else {
        return;
    };
    let bw = s.data.bw_mean as f64;
    let slope = s.ss.split(':').next().unwrap_or_default();
    let _ = writeln!(
        out,
        "  steadystate  : attained={}, bw={} ({}), iops={}, {}{}={:.3}{}",
        if s.attained > 0 { "yes" } else { "no" },
        fio_num(bw, true, "B/s"),
        fio_num(bw, false, "B/s"),
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
        if s.criterion.ends_with('%') { "%" } else { "" }
    );
}

/// `\nRun status group N (all jobs):` and a line per direction.
fn group_lines(out: &mut String, g: &GroupResult) {
    let _ = writeln!(
        out,
        "\nRun status group {}{} (all jobs):",
        g.groupid,
        g.sweep_bs
            .map_or(String::new(), |b| format!(" at bs={}", format_size(b)))
    );
    let merged = g.group_reporting && g.jobs > 1;
    status_line(out, "   READ", &g.read, merged);
    status_line(out, "  WRITE", &g.write, merged);
    status_line(out, "   TRIM", &g.trim, merged);
}

/// One direction of a group. fio's slowest and fastest are those of the
/// blocks it printed: with `group_reporting` the one merged block, whose
/// bandwidth is the group's and whose runtime is the longest.
fn status_line(out: &mut String, what: &str, d: &GroupDir, merged: bool) {
    if d.agg.total_ios == 0 && d.agg.io_bytes == 0 {
        return;
    }
    let (min, max, run_min) = if merged {
        (d.agg.bw_bytes, d.agg.bw_bytes, d.max_runtime)
    } else {
        (d.min_bw_bytes, d.max_bw_bytes, d.min_runtime)
    };
    let pair = |v: u64| {
        (
            num2str(v, 4, 1, true, "B/s"),
            num2str(v, 4, 1, false, "B/s"),
        )
    };
    let (agg, agg_d) = pair(d.agg.bw_bytes);
    let (lo, lo_d) = pair(min);
    let (hi, hi_d) = pair(max);
    let _ = writeln!(
        out,
        "{what}: bw={agg} ({agg_d}), {lo}-{hi} ({lo_d}-{hi_d}), io={} ({}), run={run_min}-{}msec",
        num2str(d.agg.io_bytes, 4, 1, true, "B"),
        num2str(d.agg.io_bytes, 4, 1, false, "B"),
        d.max_runtime
    );
}

/// `Disk stats (read/write):` and a line per device under the jobs' files.
fn disk_lines(out: &mut String, r: &Report) {
    if r.disk_util.is_empty() {
        return;
    }
    out.push_str("\nDisk stats (read/write):\n");
    for d in r.disk_util {
        let _ = writeln!(
            out,
            "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:3.2}%",
            d.name,
            d.read_ios,
            d.write_ios,
            d.read_merges,
            d.write_merges,
            d.read_ticks,
            d.write_ticks,
            d.in_queue,
            d.util
        );
    }
}

/// xferbench's section: per job, what fio's text has no line for.
pub fn notes(r: &Report) -> String {
    let mut out = String::from("xferbench, per job (beyond fio's lines above):\n");
    for j in r.jobs {
        job_notes(&mut out, j);
    }
    out
}

fn job_notes(out: &mut String, r: &JobResult) {
    let _ = writeln!(
        out,
        "  {} (group {}, clone {}{}): direct={}, iomem={}",
        r.jobname,
        r.groupid,
        r.clone,
        r.sweep_bs
            .map_or(String::new(), |b| format!(", bs {}", format_size(b))),
        u8::from(r.direct),
        serde_json::to_value(r.iomem)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default()
    );
    if no_io(r.ioengine) {
        // A load: no file, no region; its completion line says what it did.
    } else if r.ioengine.file_op() {
        let _ = writeln!(
            out,
            "    files: {} (the first; one operation per file per pass)",
            r.filename
        );
    } else {
        file_lines(out, r);
    }
    let _ = writeln!(
        out,
        "    completion: {} ({})",
        r.completion.name(),
        r.completion_detail
    );
    verify_lines(out, r);
}

/// The target, its region and what was done to it first.
fn file_lines(out: &mut String, r: &JobResult) {
    if !r.files.is_empty() {
        // A job with several files: their total, then each.
        let _ = writeln!(
            out,
            "    files: {} ({}), {} in all",
            r.files.len(),
            r.file_service_type.as_deref().unwrap_or("roundrobin"),
            fio_num(r.size as f64, true, "B")
        );
        const SHOWN: usize = 8;
        for f in r.files.iter().take(SHOWN) {
            let _ = writeln!(
                out,
                "      {}: region {}..{}, {} I/Os{}",
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
            let _ = writeln!(out, "      … {} more in the JSON", r.files.len() - SHOWN);
        }
        return;
    }
    let _ = writeln!(
        out,
        "    file: {}{}{}, region {}..{} ({}){}",
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

/// What verification found, why the job failed, whether it was cut short.
fn verify_lines(out: &mut String, r: &JobResult) {
    if let Some(v) = &r.verify {
        let _ = writeln!(
            out,
            "    verify: {}, {} blocks checked, {} bad{}",
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
        let _ = writeln!(out, "    error: {e}");
    }
    if r.partial {
        let _ = writeln!(
            out,
            "    (interrupted: figures cover the I/Os done before the stop)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::stats::Recorder;
    use crate::result::GroupDir;

    /// A job that did nothing yet, read from the least JSON a job has.
    fn job(name: &str, groupid: u32, clone: u32) -> JobResult {
        let d = serde_json::to_value(DirStats::default()).unwrap();
        serde_json::from_value(serde_json::json!({
            "jobname": name, "groupid": groupid, "error": 0, "read": d, "write": d,
            "clone": clone, "filename": "f", "rw": "write", "bs": 4096,
            "ioengine": "psync", "iodepth": 1, "completion": "interrupt", "warnings": [],
        }))
        .unwrap()
    }

    /// A direction with `ios` I/Os of 4 KiB over `ms`, latencies `lat` ns
    /// (cycled).
    fn dir(ios: u64, ms: u64, lat: &[u64]) -> DirStats {
        let mut rec = Recorder::new();
        for i in 0..ios as usize {
            rec.record(lat[i % lat.len()]);
        }
        let mut d = DirStats::of(&rec, ios * 4096, ms * 1_000_000);
        d.fio.lat_ns = Moments::of(&rec);
        d
    }

    fn report<'a>(
        jobs: &'a [JobResult],
        groups: &'a [GroupResult],
        global: &'a Pairs<String>,
    ) -> Report<'a> {
        Report {
            jobs,
            groups,
            disk_util: &[],
            plus: false,
            global_options: global,
            started: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)),
            pid: Some(4242),
        }
    }

    /// The reporting group of `jobs` (writers all), as `groups` pools one.
    fn group(jobs: &[JobResult]) -> GroupResult {
        let w: Vec<&DirStats> = jobs.iter().map(|j| &j.write).collect();
        let longest = w.iter().map(|d| d.runtime_ns).max().unwrap_or(0);
        let bws = w.iter().map(|d| d.bw_bytes);
        GroupResult {
            groupid: jobs[0].groupid,
            sweep_bs: None,
            jobname: jobs[0].jobname.clone(),
            jobs: jobs.len() as u32,
            group_reporting: jobs[0].group_reporting,
            error: 0,
            read: GroupDir::default(),
            write: GroupDir {
                min_bw_bytes: bws.clone().min().unwrap_or(0),
                max_bw_bytes: bws.max().unwrap_or(0),
                min_runtime: w.iter().map(|d| d.runtime).min().unwrap_or(0),
                max_runtime: w.iter().map(|d| d.runtime).max().unwrap_or(0),
                agg: DirStats::pooled(&w, longest),
            },
            trim: GroupDir::default(),
        }
    }

    fn lat(min: u64, max: u64, mean: f64, dev: f64) -> String {
        let mut out = String::new();
        display_lat(
            &mut out,
            "clat",
            &Lat {
                min,
                max,
                mean,
                dev,
                n: 10,
            },
        );
        out
    }

    #[test]
    fn latencies_take_fios_unit_by_their_size() {
        assert_eq!(
            lat(950, 990, 960.0, 12.5),
            "    clat (nsec): min=950, max=990, avg=960.00, stdev=12.50\n"
        );
        // µs once min, max and the spread are all past fio's bounds.
        assert_eq!(
            lat(12_000, 150_000, 25_500.0, 5_250.0),
            "    clat (usec): min=12, max=150, avg=25.50, stdev= 5.25\n"
        );
        // A tight 12 µs stays in ns, as fio's does; six digits, then k.
        assert_eq!(
            lat(12_000, 1_130_512, 12_500.0, 800.0),
            "    clat (nsec): min=12000, max=1130.5k, avg=12500.00, stdev=800.00\n"
        );
        assert_eq!(
            lat(25_000_000, 120_000_000, 30_000_000.0, 2_000_000.0),
            "    clat (msec): min=25, max=120, avg=30.00, stdev= 2.00\n"
        );
        assert_eq!(
            lat(0, 0, 0.0, 0.0),
            "    clat (nsec): min=0, max=0, avg= 0.00, stdev= 0.00\n"
        );
        let mut out = String::new();
        display_lat(
            &mut out,
            "slat",
            &Lat {
                min: 0,
                max: 0,
                mean: 0.0,
                dev: 0.0,
                n: 0,
            },
        );
        assert_eq!(out, "", "no slat line without samples");
    }

    fn rows(usec_or_ns: &[u64]) -> String {
        let vals: Vec<(f64, u64)> = PERCENTILES
            .iter()
            .copied()
            .zip(usec_or_ns.iter().copied())
            .collect();
        let mut out = String::new();
        percentile_rows(&mut out, "clat", &vals);
        out
    }

    /// The rows fio 3.33 printed for a randrw job's reads (usec, four to
    /// a row) and a read job's (nsec up to 7 digits, three to a row).
    #[test]
    fn percentile_rows_are_laid_out_as_fios() {
        let us = [
            72, 76, 79, 83, 87, 93, 103, 113, 131, 478, 3326, 3982, 5014, 5211, 8029, 8029, 8029,
        ];
        // ns just under each µs: fio rounds up into the unit.
        let ns: Vec<u64> = us.iter().map(|u| u * 1000 - 500).collect();
        assert_eq!(
            rows(&ns),
            "    clat percentiles (usec):\n\
             \x20    |  1.00th=[   72],  5.00th=[   76], 10.00th=[   79], 20.00th=[   83],\n\
             \x20    | 30.00th=[   87], 40.00th=[   93], 50.00th=[  103], 60.00th=[  113],\n\
             \x20    | 70.00th=[  131], 80.00th=[  478], 90.00th=[ 3326], 95.00th=[ 3982],\n\
             \x20    | 99.00th=[ 5014], 99.50th=[ 5211], 99.90th=[ 8029], 99.95th=[ 8029],\n\
             \x20    | 99.99th=[ 8029]\n"
        );
        let ns = [
            828, 844, 844, 852, 860, 884, 916, 980, 1048, 1224, 1448, 1800, 423936, 634880,
            1138688, 1138688, 1138688,
        ];
        assert_eq!(
            rows(&ns),
            "    clat percentiles (nsec):\n\
             \x20    |  1.00th=[    828],  5.00th=[    844], 10.00th=[    844],\n\
             \x20    | 20.00th=[    852], 30.00th=[    860], 40.00th=[    884],\n\
             \x20    | 50.00th=[    916], 60.00th=[    980], 70.00th=[   1048],\n\
             \x20    | 80.00th=[   1224], 90.00th=[   1448], 95.00th=[   1800],\n\
             \x20    | 99.00th=[ 423936], 99.50th=[ 634880], 99.90th=[1138688],\n\
             \x20    | 99.95th=[1138688], 99.99th=[1138688]\n"
        );
        // msec: both bounds past fio's, values rounded up twice.
        let ms: Vec<u64> = (1..=17).map(|i| i * 10_000_000 + 1).collect();
        let text = rows(&ms);
        assert!(text.starts_with("    clat percentiles (msec):\n     |  1.00th=[   11],"));
        assert_eq!(rows(&[]), "");
    }

    /// The ranges fio 3.33 printed for a randrw job: five to a line, the
    /// empty ones left out, a tiny share shown as 0.01%.
    #[test]
    fn latency_buckets_skip_empty_ranges() {
        let mut f = FioJob::default();
        let pairs = |v: &[(&str, f64)]| Pairs(v.iter().map(|(k, x)| (k.to_string(), *x)).collect());
        f.latency_ns = pairs(&[("2", 0.0), ("1000", 0.0)]);
        f.latency_us = pairs(&[
            ("2", 0.0),
            ("4", 16.70),
            ("10", 22.85),
            ("20", 11.33),
            ("50", 0.68),
            ("100", 22.66),
            ("250", 15.23),
            ("500", 0.98),
            ("750", 0.49),
            ("1000", 0.20),
        ]);
        f.latency_ms = pairs(&[("2", 1.76), ("4", 5.37), ("10", 1.76), (">=2000", 0.004)]);
        let mut out = String::new();
        lat_buckets(&mut out, &f);
        assert_eq!(
            out,
            "  lat (usec)   : 4=16.70%, 10=22.85%, 20=11.33%, 50=0.68%, 100=22.66%\n\
             \x20 lat (usec)   : 250=15.23%, 500=0.98%, 750=0.49%, 1000=0.20%\n\
             \x20 lat (msec)   : 2=1.76%, 4=5.37%, 10=1.76%, >=2000=0.01%\n"
        );
        let mut none = String::new();
        lat_buckets(&mut none, &FioJob::default());
        assert_eq!(none, "", "a file without the maps has no bucket line");
    }

    /// A job's block: fio's lines in fio's order, xferbench's after them.
    #[test]
    fn a_job_block_has_fios_lines_in_order() {
        let mut j = job("w", 0, 0);
        j.write = dir(1000, 500, &[3_000, 150_000, 40_000]);
        j.fio.latency_depth = 1;
        j.fio.latency_percentile = 100.0;
        let global = Pairs(vec![("description".into(), "a test".into())]);
        let jobs = [j];
        let g = [group(&jobs)];
        let text = render(&report(&jobs, &g, &global));
        let want = [
            "w: (g=0): rw=write, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=psync, iodepth=1\n",
            "Starting 1 process\n\n",
            "w: (groupid=0, jobs=1): err= 0: pid=4242: ",
            "  Description  : [a test]\n",
            "  write: IOPS=2000, BW=8000KiB/s (8192kB/s)(4000KiB/500msec); 0 zone resets\n",
            "    clat (usec): min=3, max=150,",
            "     lat (usec): min=3, max=150,",
            "    clat percentiles (usec):\n     |  1.00th=[    ",
            "  cpu          : usr=0.00%, sys=0.00%, ctx=0, majf=0, minf=0\n",
            "  IO depths    : 1=0.0%,",
            "     submit    : 0=0.0%, 4=0.0%,",
            "     complete  : 0=0.0%,",
            "     issued rwts: total=0,1000,0,0 short=0,0,0,0 dropped=0,0,0,0\n",
            "     latency   : target=0, window=0, percentile=100.00%, depth=1\n",
            "\nRun status group 0 (all jobs):\n",
            "  WRITE: bw=",
            "\nxferbench, per job (beyond fio's lines above):\n  w (group 0, clone 0)",
            "    completion: interrupt",
        ];
        let mut at = 0;
        for w in want {
            let i = text[at..]
                .find(w)
                .unwrap_or_else(|| panic!("{w:?} after byte {at} of\n{text}"));
            at += i + w.len();
        }
        assert!(
            !text.contains(" slat ("),
            "no slat without samples:\n{text}"
        );
        assert!(!text.contains("   bw ("), "no samples, no bw line:\n{text}");
    }

    /// `group_reporting`: one block for the group's jobs, its slowest and
    /// fastest the merged block's own.
    #[test]
    fn a_reporting_group_is_one_block() {
        let mut jobs = [job("b", 1, 0), job("b", 1, 1)];
        for (i, j) in jobs.iter_mut().enumerate() {
            j.write = dir(256, 10 + i as u64 * 10, &[2_500, 3_000]);
            j.group_reporting = true;
            j.fio.job_runtime = 10 + i as u64 * 10;
            j.fio.sys_cpu = 50.0;
        }
        let groups = [group(&jobs)];
        let global = Pairs::default();
        let text = fio_text(&report(&jobs, &groups, &global));
        assert_eq!(text.matches("(groupid=").count(), 1, "{text}");
        assert!(
            text.contains("b: (groupid=1, jobs=2): err= 0: pid=4242: "),
            "{text}"
        );
        assert!(
            text.contains("b: (g=1): rw=write,") && text.contains("\n...\n"),
            "{text}"
        );
        assert!(text.contains("Starting 2 processes\n"), "{text}");
        assert_eq!(text.matches("  write: IOPS=").count(), 1, "{text}");
        // 512 I/Os of 4 KiB over the longest run, 20 ms.
        assert!(text.contains("(2048KiB/20msec)"), "{text}");
        assert!(text.contains("issued rwts: total=0,512,0,0"), "{text}");
        // Each member's CPU share over their run times together.
        assert!(text.contains("sys=50.00%"), "{text}");
        assert!(
            text.contains("  WRITE: bw=100MiB/s (105MB/s), 100MiB/s-100MiB/s (105MB/s-105MB/s), io=2048KiB (2097kB), run=20-20msec\n"),
            "{text}"
        );
        assert!(!text.contains("Disk stats"), "{text}");
    }

    /// A file written before fio's other keys (and groups) were recorded:
    /// every job shown, the figures it lacks as fio shows none (zeros, no
    /// percentile rows, no samples, no latency-target line).
    #[test]
    fn an_older_saved_run_still_renders() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/stream.json"
        );
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let jobs: Vec<JobResult> = serde_json::from_value(doc["jobs"].clone()).unwrap();
        let groups: Vec<GroupResult> = serde_json::from_value(doc["groups"].clone()).unwrap();
        let global = Pairs::default();
        let text = render(&report(&jobs, &groups, &global));
        assert_eq!(text.matches("(groupid=").count(), jobs.len(), "{text}");
        assert!(
            text.contains("  write: IOPS=122k, BW=477MiB/s (500MB/s)(477MiB/1000msec)"),
            "{text}"
        );
        assert!(
            text.contains("    clat (nsec): min=1, max=2, avg= 1.50, stdev= 0.10\n"),
            "{text}"
        );
        assert!(
            !text.contains("percentiles") && !text.contains("   bw ("),
            "{text}"
        );
        assert!(
            text.contains("  cpu          : usr=0.00%, sys=0.00%, ctx=0, majf=0, minf=0\n"),
            "{text}"
        );
        assert!(text.contains("  IO depths    : 1=0.0%, 2=0.0%,"), "{text}");
        assert!(!text.contains("latency   :"), "{text}");
        assert!(text.contains("    completion: interrupt ()"), "{text}");
    }

    #[test]
    fn disks_are_listed_as_fio_lists_them() {
        let jobs = [job("d", 0, 0)];
        let disks = [crate::result::DiskUtil {
            name: "sda".into(),
            read_ios: 496,
            write_ios: 1280,
            read_ticks: 40,
            write_ticks: 114,
            in_queue: 172,
            util: 2.6125,
            ..Default::default()
        }];
        let global = Pairs::default();
        let r = Report {
            disk_util: &disks,
            ..report(&jobs, &[], &global)
        };
        assert!(
            fio_text(&r).ends_with(
                "\nDisk stats (read/write):\n  sda: ios=496/1280, merge=0/0, ticks=40/114, in_queue=172, util=2.61%\n"
            ),
            "{}",
            fio_text(&r)
        );
    }

    /// A failed job: fio's `err=` with the reason; one that did nothing
    /// has no block (as in fio) and its reason is in xferbench's notes.
    #[test]
    fn failed_jobs_say_why() {
        let mut a = job("a", 0, 0);
        a.write = dir(10, 5, &[5_000]);
        (a.error, a.error_text) = (1, Some("pwrite: Input/output error".into()));
        let mut b = job("b", 0, 0);
        (b.error, b.error_text, b.partial) = (1, Some("abandoned".into()), true);
        let jobs = [a, b];
        let global = Pairs::default();
        let text = render(&report(&jobs, &[], &global));
        assert!(
            text.contains(
                "a: (groupid=0, jobs=1): err= 1 (pwrite: Input/output error): pid=4242: "
            ),
            "{text}"
        );
        assert!(!text.contains("b: (groupid="), "{text}");
        let notes = &text[text.find("xferbench, per job").unwrap()..];
        assert!(
            notes.contains("    error: abandoned\n    (interrupted:"),
            "{notes}"
        );
    }

    /// A job set with `thread`: fio starts threads.
    #[test]
    fn thread_jobs_start_as_threads() {
        let jobs = [job("t", 0, 0)];
        let global = Pairs(vec![("thread".into(), String::new())]);
        let text = fio_text(&report(&jobs, &[], &global));
        assert!(text.contains("\nStarting 1 thread\n"), "{text}");
    }

    #[test]
    fn mixed_block_sizes_show_each_directions_range() {
        let mut j = job("m", 0, 0);
        j.bs_mix = Some("4k/50:16k/50".into());
        assert_eq!(bs_ranges(&j), [(4096, 16384); 3]);
        j.bs_mix = Some("4k,8k".into());
        assert_eq!(bs_ranges(&j), [(4096, 4096), (8192, 8192), (8192, 8192)]);
        j.bs_mix = Some("4k-64k".into());
        assert_eq!(bs_ranges(&j)[0], (4096, 65536));
    }
}
