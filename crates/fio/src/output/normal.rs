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
    let _ = writeln!(out, "xferbench-{}", env!("CARGO_PKG_VERSION"));
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
        fio: std::borrow::Cow::Owned(FioJob::merged(&parts)),
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
    if d.clat_ns.n > 0 {
        percentile_rows(out, "clat", &clat_percentiles(&d.clat_ns));
    }
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

/// The `fsync=`/`fdatasync=` syncs' latency. fio adds their percentiles;
/// xferbench keeps no histogram of syncs, so there are none.
fn sync_lines(out: &mut String, f: &FioJob) {
    if f.sync.lat_ns.n == 0 {
        return;
    }
    out.push_str("  fsync/fdatasync/sync_file_range:\n");
    display_lat(out, "sync", &Lat::from(&f.sync.lat_ns));
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
