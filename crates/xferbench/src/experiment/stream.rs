//! `stream`: fio-style throughput jobs — N workers, each on its own target and
//! region, through an I/O engine, with verify, completion modes, groups and
//! block-size sweeps. This file plans the jobs and runs each set of them
//! side by side, watching for stalls; a job's own loop is the fio crate's
//! [`worker`], which knows engines only through [`engine::Engine`]; jobs come
//! from [`jobfile`] whether they were written in a job file or typed as
//! flags.

use super::Progress as Bar;
use crate::error::{Error, Result};
use crate::fio::engine;
use crate::fio::job::{IoEngine, Job, Rw};
use crate::fio::jobfile;
use crate::fio::verify;
use crate::fio::worker::{self, Ending, Prepared, Recorded, Shared, stalled};
use crate::measure::env::Env;
use crate::measure::placement::Placement;
use crate::measure::stats::Recorder;
use crate::options::StreamConfig;
use crate::result::stream::*;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Runs the jobs (`--repeat K`: K times, every job of a run in turn, then
/// merged job by job); returns the run (partial if stopped) and the error
/// that stopped or failed it.
pub fn run(
    args: &StreamConfig,
    stop: &Arc<AtomicBool>,
    bar: &dyn Bar,
) -> Result<(StreamRun, Option<Error>)> {
    let mut extras = Vec::new();
    let (mut run, err) = super::repeat::repeated(args.out.repeat, bar, |_, bar| {
        let (run, err) = once(args, stop, bar)?;
        extras.push(run.extra.clone());
        Ok((run, err))
    })?;
    if extras.len() > 1 {
        run.extra = StreamExtra::merge_repeats(extras, &run.points);
    }
    super::limits::attach_stream(&mut run);
    Ok((run, err))
}

/// One run of every job.
fn once(
    args: &StreamConfig,
    stop: &Arc<AtomicBool>,
    bar: &dyn Bar,
) -> Result<(StreamRun, Option<Error>)> {
    let _keep = crate::measure::placement::KeepAffinity::new();
    let points = plan(args, true)?;
    let env = Env::capture();
    let mut warnings = env.warnings();
    warnings.extend(points.warnings.iter().cloned());
    let mut run = StreamRun {
        experiment: "stream",
        complete: false,
        stopped_by: None,
        env,
        options: serde_json::to_value(args).unwrap_or_default(),
        placement: Placement::unpinned(),
        points: Vec::new(),
        extra: StreamExtra {
            job_file: args.job.as_ref().map(|p| p.display().to_string()),
            global_options: Pairs(points.global_options.clone()),
            notes: points.notes.clone(),
            ..StreamExtra::default()
        },
        warnings,
        devices: Vec::new(),
        limits: Vec::new(),
    };
    let t0 = Instant::now();
    let exe = std::env::current_exe().map_err(|e| Error::io("finding this executable", e))?;
    let ctx = Arc::new(Shared {
        timeout: args.timeout,
        exe,
        t0,
        allow_large_layout: args.allow_large_layout,
        ending: Ending::new(),
        io_left: Arc::default(),
        flows: worker::Flows::default(),
    });
    let sweeping = points.sets.len() > 1;
    let disks = DiskWatch::start(&points.sets);
    let mut first_err: Option<Error> = None;
    // What a stop the run cannot answer in time (a job that lays out a
    // large file, an exec program given its grace time) writes, and what a
    // supervisor writes if the process dies before a set ends: the run's
    // conditions, then each set's jobs as they end.
    bar.checkpoint(&run);
    for (bs, jobs) in &points.sets {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let label = match bs {
            Some(b) if sweeping => format!("bs={}", crate::units::format_size(*b)),
            _ => String::new(),
        };
        let sweep = bs.filter(|_| sweeping);
        // A swept size a job's transport cannot carry is skipped, as the
        // other experiments skip a size over a device's limit.
        if let Some(b) = sweep
            && let Some(why) = impossible(jobs, &ctx)
        {
            run.extra.skipped.push(SkippedSize { bs: b, reason: why });
            continue;
        }
        // The run so far, this set's jobs as they stand: fio's
        // --status-interval, and the checkpoint taken when the run is
        // asked to stop.
        let so_far = |mut results: Vec<JobResult>, outs: Vec<Option<Recorded>>, pooled: Pooled| {
            let mut snap = run.clone();
            let (groups, _) = settle(&mut results, outs, sweep, pooled);
            snap.extra.groups.extend(groups);
            snap.points.extend(results);
            snap
        };
        let snaps = Snaps {
            every: args.status_interval,
            so_far: &so_far,
        };
        let (mut results, outs, pooled, err) = run_set(jobs, &ctx, stop, bar, &label, snaps, sweep);
        let (set_groups, lat) = settle(&mut results, outs, sweep, pooled);
        run.extra.groups.extend(set_groups);
        if let Some(b) = bs.filter(|_| sweeping) {
            run.extra.sweep.push(sweep_row(b, &results, &lat));
        }
        run.points.extend(results);
        bar.checkpoint(&run);
        if let Some(e) = err {
            let fatal = matches!(e, Error::Interrupted | Error::Usage { .. });
            first_err.get_or_insert(e);
            if fatal {
                break;
            }
        }
    }
    bar.finish();
    crate::fio::result::finish_run(&mut run.points, t0.elapsed().as_nanos() as u64);
    run.extra.disk_util = disks.finish();
    if first_err.is_none() {
        let skipped: Vec<String> = run.extra.skipped.iter().map(SkippedSize::label).collect();
        if let Err(e) = super::nothing_measured(run.points.len(), &skipped, "block size(s)") {
            first_err = Some(e);
        }
    }
    Ok(super::finish(run, first_err.map_or(Ok(()), Err)))
}

/// Why a set of jobs cannot run at its block size, if one of them goes
/// through a transport that cannot carry it (checked without opening it).
fn impossible(jobs: &[Prepared], ctx: &Shared) -> Option<String> {
    jobs.iter().find_map(|p| {
        let spec = p.transport.as_ref()?;
        match engine::check_link(&p.job, spec, ctx.timeout, ctx.exe.clone()) {
            Err(Error::Usage { message, .. }) => Some(format!("job {}: {message}", p.job.name)),
            _ => None,
        }
    })
}

/// The run so far from a set's results so far (with what groups pool, and
/// the groups pooled already).
type SoFar<'a> = dyn Fn(Vec<JobResult>, Vec<Option<Recorded>>, Pooled) -> StreamRun + 'a;

/// When a set's watch takes the run so far: every `every` (fio's
/// `--status-interval`, handed to the progress sink's `status`), and once
/// when the run is asked to stop (its `checkpoint`).
#[derive(Clone, Copy)]
struct Snaps<'a> {
    every: Option<Duration>,
    so_far: &'a SoFar<'a>,
}

/// The reporting groups of a set whose jobs have all ended, pooled as
/// soon as the last one did: their jobs' latency recorders (megabytes a
/// job, most of them per interval) are then dropped, so a run of many
/// stonewalled jobs holds one stretch's recorders, not every job's.
#[derive(Clone, Default)]
struct Pooled {
    groups: Vec<GroupResult>,
    /// The pooled jobs' completion latencies merged (a sweep row's).
    lat: Recorder,
}

/// A set's results as the run keeps them: the swept block size on each,
/// and each job's share of its group's bandwidth; returns the set's
/// groups (those `pooled` already, and the rest, from the jobs whose
/// recorders are still here) and every job's completion latencies merged.
fn settle(
    results: &mut [JobResult],
    outs: Vec<Option<Recorded>>,
    sweep: Option<u64>,
    pooled: Pooled,
) -> (Vec<GroupResult>, Recorder) {
    let mut lat = pooled.lat;
    let (mut rest, mut recs, mut at) = (Vec::new(), Vec::new(), Vec::new());
    for (i, (r, o)) in results.iter_mut().zip(outs).enumerate() {
        if let Some(o) = o {
            r.sweep_bs = sweep;
            rest.push(r.clone());
            recs.push(o);
            at.push(i);
        }
    }
    let mut set_groups = groups(&rest, &recs, sweep);
    set_bw_agg(&mut rest, &set_groups);
    for (i, r) in at.into_iter().zip(rest) {
        results[i] = r;
    }
    for o in &recs {
        for d in &o.recs {
            lat.merge(d);
        }
    }
    set_groups.extend(pooled.groups);
    set_groups.sort_by_key(|g| g.groupid);
    (set_groups, lat)
}

/// fio's `disk_util`: the counters of the block devices under the jobs'
/// files, read when the run starts and when it ends.
struct DiskWatch {
    before: Vec<crate::fio::diskstats::DiskCounters>,
    t0: Instant,
}

impl DiskWatch {
    fn start(sets: &[(Option<u64>, Vec<Prepared>)]) -> DiskWatch {
        let mut names: Vec<String> = Vec::new();
        for p in sets.iter().flat_map(|s| &s.1) {
            for path in p.paths() {
                if let Some(d) = crate::fio::diskstats::disk_of(Path::new(&path))
                    && !names.contains(&d)
                {
                    names.push(d);
                }
            }
        }
        DiskWatch {
            before: crate::fio::diskstats::read(&names),
            t0: Instant::now(),
        }
    }

    fn finish(self) -> Vec<crate::result::stream::DiskUtil> {
        let names: Vec<String> = self.before.iter().map(|b| b.name.clone()).collect();
        let ms = self.t0.elapsed().as_millis().max(1) as f64;
        crate::fio::diskstats::read(&names)
            .iter()
            .filter_map(|after| {
                let before = self.before.iter().find(|b| b.name == after.name)?;
                let d = after.since(before);
                Some(crate::result::stream::DiskUtil {
                    name: d.name,
                    read_ios: d.read_ios,
                    write_ios: d.write_ios,
                    read_merges: d.read_merges,
                    write_merges: d.write_merges,
                    read_ticks: d.read_ticks,
                    write_ticks: d.write_ticks,
                    in_queue: d.in_queue,
                    util: (d.io_ticks as f64 * 100.0 / ms).min(100.0),
                })
            })
            .collect()
    }
}

/// The job sets to run: one per swept block size (or one).
struct Plan {
    sets: Vec<(Option<u64>, Vec<Prepared>)>,
    warnings: Vec<String>,
    /// The warnings that are notes (options that change no figure).
    notes: Vec<String>,
    /// The `[global]` options as written (fio's `global options`).
    global_options: Vec<(String, String)>,
}

/// Reads and checks every job as a run would, running none (fio's
/// `--parse-only`): the warnings a run would start with, or the error that
/// would stop it. Writes nothing (no log file is made).
pub fn check(args: &StreamConfig) -> Result<Vec<String>> {
    plan(args, false).map(|p| p.warnings)
}

/// Reads the job file or the flags into jobs, applies `--map`, checks every
/// job before anything runs; with `logs`, empties the log files the jobs
/// write.
fn plan(args: &StreamConfig, logs: bool) -> Result<Plan> {
    let mut overrides = args.overrides();
    let sizes = args.bs_list()?;
    let mut sets = Vec::new();
    let mut warnings = Vec::new();
    let mut notes = Vec::new();
    let mut global_options = Vec::new();
    let bs_points: Vec<Option<u64>> = if sizes.is_empty() {
        vec![None]
    } else {
        sizes.iter().map(|b| Some(*b)).collect()
    };
    for bs in bs_points {
        if let Some(b) = bs {
            overrides.retain(|(k, _)| k != "bs");
            overrides.push(("bs".into(), Some(b.to_string())));
        }
        let file = jobs_of(args, &overrides)?;
        if sets.is_empty() {
            if args.strict && !file.warnings.is_empty() {
                let (flag, what) = match args.fio_jobs {
                    Some(_) => ("--warnings-fatal", "warnings"),
                    None => ("--strict", "unsupported options"),
                };
                return Err(Error::usage(format!(
                    "{} ({flag} makes {what} errors; drop {flag} to run with a warning)",
                    file.warnings[0]
                )));
            }
            warnings.extend(file.warnings.iter().cloned());
            notes.extend(file.notes.iter().cloned());
            global_options = file.global_options.clone();
        }
        let prepared = prepare(file.jobs, &args.map)?;
        if sets.is_empty() {
            refuse_inputs_as_output(args, &file.read, &prepared)?;
        }
        crate::fio::resources::check(waves(&prepared).into_iter())?;
        sets.push((bs, prepared));
    }
    if let Some((_, first)) = sets.first() {
        // The log files, emptied: a path that cannot be written stops the
        // run before it starts.
        for p in first.iter().filter(|_| logs) {
            crate::fio::logs::create(&p.job.logs, &p.job.name)?;
        }
        for (old, _) in &args.map {
            let used = |f: &str| f == old || under(f, old).is_some();
            if !first.iter().any(|p| {
                p.mapped_from.as_deref().is_some_and(used)
                    || p.more.iter().any(|m| m.1.as_deref().is_some_and(used))
            }) {
                warnings.push(format!("--map {old}=…: no job uses {old}"));
            }
        }
    }
    Ok(Plan {
        sets,
        warnings,
        notes,
        global_options,
    })
}

/// The jobs that run side by side, one list per stretch between two
/// stonewalls (a job's thread starts once the jobs it runs after are
/// done, so only one stretch's jobs hold threads and memory at a time).
fn waves(jobs: &[Prepared]) -> Vec<Vec<&Job>> {
    let mut out: Vec<Vec<&Job>> = Vec::new();
    for (i, p) in jobs.iter().enumerate() {
        match out.last_mut() {
            Some(w) if !(p.job.stonewall && i > 0) => w.push(&p.job),
            _ => out.push(vec![&p.job]),
        }
    }
    out
}

/// An `-o` that names a job file (or a file it includes) or a job's own
/// file is refused before anything runs: writing the results there would
/// destroy the jobs, or the data they measured.
fn refuse_inputs_as_output(
    args: &StreamConfig,
    read: &[std::path::PathBuf],
    jobs: &[Prepared],
) -> Result<()> {
    let Some(out) = args.out.output.as_deref() else {
        return Ok(());
    };
    let mut inputs: Vec<(std::path::PathBuf, String)> = read
        .iter()
        .map(|p| (p.clone(), format!("the job file {}", p.display())))
        .collect();
    for p in jobs {
        for f in p.paths() {
            inputs.push((f.clone().into(), format!("job {}'s file {f}", p.job.name)));
        }
    }
    crate::output::refuse_inputs(out, "-o", &inputs)
}

/// The jobs of a run: fio's command line, the job files, or the flags.
fn jobs_of(
    args: &StreamConfig,
    overrides: &[(String, Option<String>)],
) -> Result<jobfile::JobFile> {
    let env = |k: &str| std::env::var(k).ok();
    if let Some(jobs) = &args.fio_jobs {
        return jobs.load(overrides);
    }
    Ok(match &args.job {
        Some(p) => {
            let paths: Vec<&Path> = std::iter::once(p.as_path())
                .chain(args.more_jobs.iter().map(|m| m.as_path()))
                .collect();
            jobfile::load_all(&paths, &args.sections, overrides)?
        }
        None if !args.sections.is_empty() => {
            return Err(Error::usage(
                "--section picks sections of a job file; give the file (xferbench stream FILE.fio --section NAME)",
            ));
        }
        None => {
            // A net listener names no file: its port is enough.
            let named = |k: &str, v: &Option<String>| {
                k == "filename"
                    || k == "hostname"
                    || (k == "ioengine" && matches!(v.as_deref(), Some("net" | "netsplice")))
            };
            if args.flag("filename").is_none() && !overrides.iter().any(|(k, v)| named(k, v)) {
                return Err(Error::usage(
                    "stream needs a job file (--job FILE.fio) or a target (--filename PATH, or --filename xfer:tcp for a transport)",
                ));
            }
            let name = args.name.clone().unwrap_or_else(|| "stream".into());
            if name.contains(['[', ']']) || name.trim().is_empty() {
                return Err(Error::usage(format!(
                    "--name '{name}': a job name cannot be empty or hold brackets"
                )));
            }
            let mut file = jobfile::parse(&format!("[{name}]\n"), "command line", &env, overrides)?;
            // fio lists a command-line job's name among its options.
            for j in &mut file.jobs {
                j.given.insert(0, ("name".into(), name.clone()));
            }
            file
        }
    })
}

/// Resolves filenames, dependencies and option combinations.
fn prepare(jobs: Vec<Job>, map: &[(String, String)]) -> Result<Vec<Prepared>> {
    let mut out: Vec<Prepared> = Vec::with_capacity(jobs.len());
    for (i, mut job) in jobs.into_iter().enumerate() {
        let name = job.name.clone();
        // fio numbers its jobs from 1, in order, in its log files' names.
        job.logs.number = i as u32 + 1;
        let Some(file) = job.filename.clone() else {
            return Err(Error::usage(format!(
                "job {name}: no filename; set filename= in the job or --filename"
            )));
        };
        let (mut path, mapped_from) = match mapped(&file, map) {
            Some(new) => (new, Some(file.clone())),
            None => (file.clone(), None),
        };
        let more: Vec<(String, Option<String>)> = job
            .filenames
            .iter()
            .map(|f| match mapped(f, map) {
                Some(new) => (new, Some(f.clone())),
                None => (f.clone(), None),
            })
            .collect();
        let net = endpoint(&job, &mut path)?;
        let transport = match engine::transport_spec(&path) {
            Some(spec) => {
                job.ioengine = IoEngine::Transport;
                Some(spec?)
            }
            None if job.ioengine == IoEngine::Transport => {
                return Err(Error::usage(format!(
                    "job {name}: the transport engine needs filename=xfer:NAME (e.g. xfer:tcp)"
                )));
            }
            None => None,
        };
        job.resolve_block_sizes()
            .map_err(|m| Error::usage(format!("job {name}: {m}")))?;
        if job.bs_mix.is_some() {
            check_mixed_sizes(&job)?;
        } else if let Some(ba) = job.blockalign.filter(|&ba| ba != job.bs) {
            return Err(Error::usage(format!(
                "job {name}: blockalign={} differs from bs={}: with one block size, random I/Os start at multiples of bs; drop blockalign= (other alignments are taken with mixed sizes, bssplit=/bsrange=)",
                crate::units::format_size(ba),
                crate::units::format_size(job.bs)
            )));
        }
        // rate_iops / rate_iops_min are rates in blocks (with mixed sizes,
        // blocks of the mean length the mix draws).
        let per_io = job
            .bs_mix
            .as_ref()
            .map_or(job.bs as f64, |m| m.mean(job.read_share()));
        if let Some(iops) = job.rate_iops {
            job.rate = Some((iops as f64 * per_io) as u64);
        }
        if let Some(iops) = job.rate_iops_min {
            job.ratemin = Some((iops as f64 * per_io) as u64);
        }
        engine::check(&job)?;
        if job.ioengine == IoEngine::Cpuio {
            // A load until runtime= or the I/O jobs beside it end.
            job.time_based = true;
        }
        if job.ioengine == IoEngine::Exec {
            // A program until runtime= or until it exits by itself.
            job.time_based = true;
        }
        if job.ioengine.file_op() {
            // One nominal block per file; no data moves.
            job.size = Some(u64::from(job.nrfiles) * job.bs);
        }
        if job.time_based
            && job.runtime.is_none()
            && !matches!(job.ioengine, IoEngine::Cpuio | IoEngine::Exec)
        {
            return Err(Error::usage(format!(
                "job {name}: time_based needs runtime= (how long to run)"
            )));
        }
        check_verify(&mut job)?;
        if job.max_bs() > (1 << 30) {
            return Err(Error::usage(format!(
                "job {name}: bs={} is larger than the 1 GiB limit",
                job.max_bs()
            )));
        }
        let after = dependencies(i, &job, &out)?;
        // Waits for a cpuio job, itself or through the jobs it waits for.
        let behind_cpuio = after
            .iter()
            .any(|&j| out[j].job.ioengine == IoEngine::Cpuio || !out[j].beside_cpuio);
        let beside_cpuio = job.ioengine != IoEngine::Cpuio && !behind_cpuio;
        out.push(Prepared {
            job,
            path,
            mapped_from,
            more,
            transport,
            net,
            after,
            beside_cpuio,
        });
    }
    if let Some(p) = out
        .iter()
        .find(|p| p.job.ioengine == IoEngine::Cpuio && p.job.runtime.is_none())
        && !out.iter().any(|q| q.beside_cpuio)
    {
        return Err(Error::usage(format!(
            "job {}: ioengine=cpuio runs beside I/O jobs until they end, and no I/O job runs beside it (each waits for a cpuio job); give it runtime=",
            p.job.name
        )));
    }
    Ok(out)
}

/// A net job's endpoint (`ioengine=net`), which is then shown as its file
/// (fio's host/port/protocol); net options on any other job are refused.
fn endpoint(job: &Job, path: &mut String) -> Result<Option<crate::fio::net::Endpoint>> {
    let name = &job.name;
    if matches!(job.ioengine, IoEngine::Net | IoEngine::NetSplice) {
        let ep = crate::fio::net::Endpoint::of(job, path)
            .map_err(|m| Error::usage(format!("job {name}: {m}")))?;
        if job.size.unwrap_or(0) < job.bs && !job.time_based {
            return Err(Error::usage(format!(
                "job {name}: a net job needs size= (bytes to move, at least one block) or time_based with runtime="
            )));
        }
        *path = ep.to_string();
        Ok(Some(ep))
    } else if let Some(k) = job.net.first_given() {
        Err(Error::usage(format!(
            "job {name}: {k}= is an option of ioengine=net; set ioengine=net or drop it"
        )))
    } else {
        Ok(None)
    }
}

/// The earlier jobs job `i` runs after: every job before the last
/// `stonewall` at or above it (a stonewall holds the jobs that follow it as
/// well as its own, as fio starts the jobs of a file in order), and those
/// its `wait_for=` names.
fn dependencies(i: usize, job: &Job, out: &[Prepared]) -> Result<Vec<usize>> {
    let mut after = Vec::new();
    let wall = if job.stonewall {
        Some(i)
    } else {
        out[..i.min(out.len())]
            .iter()
            .rposition(|p| p.job.stonewall)
    };
    if let Some(k) = wall.filter(|&k| k > 0) {
        after.extend(0..k);
    }
    if let Some(w) = &job.wait_for {
        let named: Vec<usize> = out
            .iter()
            .enumerate()
            .filter(|(_, p)| &p.job.name == w)
            .map(|(j, _)| j)
            .collect();
        if named.is_empty() {
            return Err(Error::usage(format!(
                "job {}: wait_for={w} names no earlier job",
                job.name
            )));
        }
        after.extend(named);
    }
    after.sort_unstable();
    after.dedup();
    Ok(after)
}

/// Where `--map` sends `file`: the last rule naming it exactly, else the
/// last rule naming a directory above it (`--map /mnt/nvme=/tmp/x` sends
/// `/mnt/nvme/job.0.0` to `/tmp/x/job.0.0`), so a job file's `directory=`
/// can be mapped as its devices are.
fn mapped(file: &str, map: &[(String, String)]) -> Option<String> {
    map.iter()
        .rev()
        .find(|(old, _)| old == file)
        .map(|(_, new)| new.clone())
        .or_else(|| {
            map.iter()
                .rev()
                .find_map(|(old, new)| under(file, old).map(|rest| join(new, rest)))
        })
}

/// The rest of `file` below directory `dir`, if it lies below it.
fn under<'a>(file: &'a str, dir: &str) -> Option<&'a str> {
    file.strip_prefix(dir.trim_end_matches('/'))?
        .strip_prefix('/')
        .filter(|r| !r.is_empty())
}

fn join(dir: &str, rest: &str) -> String {
    Path::new(dir).join(rest).to_string_lossy().into_owned()
}

/// Checks a job's verify options together; `verify_only` turns a writer
/// into the reader that checks what it would have written.
fn check_verify(job: &mut Job) -> Result<()> {
    let name = job.name.clone();
    job.fit_verify_interval();
    let Some(spec) = verify::Spec::of(job) else {
        let set = [
            ("verify_only", job.verify_only),
            ("verify_interval=", job.verify_interval.is_some()),
            ("verify_offset=", job.verify_offset > 0),
            ("verify_backlog=", job.verify_backlog > 0),
            ("verify_pattern=", job.verify_pattern.is_some()),
        ];
        return match set.iter().find(|(_, on)| *on) {
            Some((opt, _)) => Err(Error::usage(format!(
                "job {name}: {opt} needs verify= (what to write and check); add verify= or drop {opt}"
            ))),
            None => Ok(()),
        };
    };
    if job.rw.trims() {
        return Err(Error::usage(format!(
            "job {name}: verify checks blocks a job writes or reads, and rw={} trims them (fio's trim verification, trim_verify_zero/trim_backlog, is not supported); drop verify= or use rw=write or randwrite",
            job.rw.name()
        )));
    }
    spec.fits(job.bs)
        .map_err(|why| Error::usage(format!("job {name}: {why}")))?;
    if job.verify_only {
        if job.time_based {
            return Err(Error::usage(format!(
                "job {name}: verify_only checks the blocks one pass of the job writes, and time_based has no such pass; drop time_based"
            )));
        }
        if !job.do_verify {
            return Err(Error::usage(format!(
                "job {name}: verify_only with do_verify=0 would neither write nor check; drop one"
            )));
        }
        // The blocks the writes would have gone to, in the same order.
        job.rw = match job.rw {
            Rw::Write => Rw::Read,
            Rw::RandWrite => Rw::RandRead,
            rw => rw,
        };
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Waiting,
    Running,
    Done,
}

/// A worker's output: its result, and its latency recorders and intervals
/// (for groups), as [`JobResult::of`] gives them.
type Outcome = (JobResult, Recorded);

/// One set of jobs running: what the coordinator watches and its workers
/// share, so that spawning, watching and collecting are steps of their own.
struct Set<'a> {
    jobs: &'a [Prepared],
    ctx: &'a Arc<Shared>,
    stop: &'a Arc<AtomicBool>,
    /// Each job's state, and the signal a job waiting for others waits on.
    states: Arc<(Mutex<Vec<State>>, Condvar)>,
    progress: Vec<Arc<worker::Progress>>,
    /// The block size this set sweeps, if it does (its groups carry it).
    sweep: Option<u64>,
}

/// A job's end, sent by its worker thread: its index and outcome.
type Report = (usize, Result<Outcome>);

/// A finished job's result, and what its group pools until the group is
/// pooled (then None).
type Kept = (JobResult, Option<Recorded>);

/// Each job's outcome, by index, once its worker has reported.
type Outcomes = Vec<Option<Result<Kept>>>;

/// Jobs given up on, and why.
type Stuck = Vec<(usize, String)>;

/// Runs one set of jobs concurrently, honouring stonewall and wait_for;
/// returns results in job order. Workers are detached threads: one stuck
/// for good (a device call that never returns, an I/O the kernel never
/// completes) is abandoned, its job reported with what it moved and why,
/// and the others stopped and reported as they are.
fn run_set(
    jobs: &[Prepared],
    ctx: &Arc<Shared>,
    stop: &Arc<AtomicBool>,
    bar: &dyn Bar,
    label: &str,
    snaps: Snaps,
    sweep: Option<u64>,
) -> (Vec<JobResult>, Vec<Option<Recorded>>, Pooled, Option<Error>) {
    let set = Set {
        jobs,
        ctx,
        stop,
        states: Arc::new((Mutex::new(vec![State::Waiting; jobs.len()]), Condvar::new())),
        progress: jobs.iter().map(|_| Arc::default()).collect(),
        sweep,
    };
    bar.start_bytes(bar_total(jobs), label);
    ctx.ending.reset(jobs.iter().map(|p| &p.job));
    ctx.io_left.store(
        jobs.iter().filter(|p| p.beside_cpuio).count(),
        Ordering::Relaxed,
    );
    let (tx, rx) = std::sync::mpsc::channel::<Report>();
    let (outcomes, pooled, stuck) = set.watch(&tx, &rx, bar, snaps);
    let (results, recs, err) = set.collect(outcomes, &stuck);
    (results, recs, pooled, err)
}

/// The bytes the progress bar counts to: every sized job's (a trimwrite
/// job's blocks twice: each trimmed and written); time-based jobs add none.
fn bar_total(jobs: &[Prepared]) -> u64 {
    jobs.iter()
        .map(|p| {
            if p.job.time_based {
                0
            } else if p.job.rw.trim_then_write() {
                p.job.size.unwrap_or(0).saturating_mul(2)
            } else {
                p.job.size.unwrap_or(0)
            }
        })
        .sum()
}

impl Set<'_> {
    /// Starts job `i`'s thread: it waits for the jobs it runs after, runs
    /// the job and reports on `tx`.
    fn spawn(&self, i: usize, tx: &Sender<Report>) {
        let states = Arc::clone(&self.states);
        let prog = Arc::clone(&self.progress[i]);
        let stop = Arc::clone(self.stop);
        let ctx = Arc::clone(self.ctx);
        let p = self.jobs[i].clone();
        let job_tx = tx.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("xb-job-{i}"))
            .spawn(move || {
                // The job opens, uses and closes its own descriptors.
                worker::private_fd_table(&p.job);
                let (lock, cv) = &*states;
                wait_turn(lock, cv, &p.after, i, &stop);
                let out = if stop.load(Ordering::Relaxed) {
                    Err(Error::Interrupted)
                } else {
                    worker::run(&p, &ctx, &prog, &stop).map(|run| JobResult::of(&p, run))
                };
                // A job that cannot start as written (a usage error:
                // no such directory, a bad option combination) ends the
                // run: the others, some perhaps waiting out a
                // startdelay, would only report the same mistake later.
                if matches!(out, Err(Error::Usage { .. })) {
                    stop.store(true, Ordering::Relaxed);
                }
                lock.lock().unwrap_or_else(|e| e.into_inner())[i] = State::Done;
                if p.beside_cpuio {
                    ctx.io_left.fetch_sub(1, Ordering::Relaxed);
                }
                cv.notify_all();
                let _ = job_tx.send((i, out));
            });
        if let Err(e) = spawned {
            // The run cannot go on as planned: the jobs after this one
            // end unstarted, and the error says why.
            self.stop.store(true, Ordering::Relaxed);
            self.never_started(i);
            let _ = tx.send((i, Err(Error::run_from("cannot start a job's thread", e))));
        }
    }

    /// Job `i` ends without its thread having started: done, for the jobs
    /// that wait for it, and not counted among the I/O jobs a cpuio job
    /// runs beside.
    fn never_started(&self, i: usize) {
        let (lock, cv) = &*self.states;
        lock.lock().unwrap_or_else(|e| e.into_inner())[i] = State::Done;
        if self.jobs[i].beside_cpuio {
            self.ctx.io_left.fetch_sub(1, Ordering::Relaxed);
        }
        cv.notify_all();
    }

    /// Starts each waiting job whose earlier jobs (those it runs after)
    /// are done, so that a thread exists only for the jobs of the stretch
    /// running; once the run is stopping, the waiting jobs end unstarted
    /// (interrupted). Returns how many ended so.
    fn start_ready(
        &self,
        waiting: &mut Vec<usize>,
        outcomes: &mut Outcomes,
        tx: &Sender<Report>,
    ) -> usize {
        if waiting.is_empty() {
            return 0;
        }
        let stopping = self.stop.load(Ordering::Relaxed);
        let ready: Vec<usize> = {
            let st = self.states.0.lock().unwrap_or_else(|e| e.into_inner());
            waiting
                .iter()
                .copied()
                .filter(|&i| stopping || self.jobs[i].after.iter().all(|&j| st[j] == State::Done))
                .collect()
        };
        waiting.retain(|i| !ready.contains(i));
        let mut ended = 0;
        for i in ready {
            if stopping {
                self.never_started(i);
                outcomes[i] = Some(Err(Error::Interrupted));
                ended += 1;
            } else {
                self.spawn(i, tx);
            }
        }
        ended
    }

    /// Pools job `i`'s reporting group when its last job has just ended
    /// (every job of it finished with its figures): the group's figures
    /// are made, its jobs' results settled, and their recorders dropped.
    fn pool(&self, i: usize, outcomes: &mut Outcomes, pooled: &mut Pooled) {
        let g = self.jobs[i].job.group;
        let members: Vec<usize> = (0..self.jobs.len())
            .filter(|&j| self.jobs[j].job.group == g)
            .collect();
        if !members
            .iter()
            .all(|&j| matches!(&outcomes[j], Some(Ok((_, Some(_))))))
        {
            return;
        }
        let (mut results, mut outs) = (Vec::new(), Vec::new());
        for &j in &members {
            if let Some(Ok((r, o))) = &mut outcomes[j] {
                results.push(r.clone());
                outs.push(o.take());
            }
        }
        let (groups, lat) = settle(&mut results, outs, self.sweep, Pooled::default());
        for (&j, r) in members.iter().zip(results) {
            if let Some(Ok((kept, _))) = &mut outcomes[j] {
                *kept = r;
            }
        }
        pooled.lat.merge(&lat);
        pooled.groups.extend(groups);
    }

    /// Collects the workers' reports while drawing progress and watching
    /// for hangs: a worker stuck past the timeout (in the kernel, or in a
    /// device call the guard found hung) is given up on, and the rest get
    /// a moment to stop. Returns the outcomes by job and the jobs given up
    /// on, with why.
    fn watch(
        &self,
        tx: &Sender<Report>,
        rx: &Receiver<Report>,
        bar: &dyn Bar,
        snaps: Snaps,
    ) -> (Outcomes, Pooled, Stuck) {
        let mut outcomes: Outcomes = (0..self.jobs.len()).map(|_| None).collect();
        let mut pooled = Pooled::default();
        let mut waiting: Vec<usize> = (0..self.jobs.len()).collect();
        let mut left = self.jobs.len();
        let mut stuck = Stuck::new();
        let mut giving_up: Option<Instant> = None;
        let mut clock = StatusClock::new(self.jobs.len(), snaps.every);
        let mut kept = false;
        while left > 0 {
            left -= self.start_ready(&mut waiting, &mut outcomes, tx);
            if left == 0 {
                break;
            }
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok((i, out)) => {
                    outcomes[i] = Some(out.map(|(r, rec)| (r, Some(rec))));
                    left -= 1;
                    self.pool(i, &mut outcomes, &mut pooled);
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {}
            }
            if clock.tick(&self.states.0) {
                let (results, recs) = self.so_far(&outcomes, &clock.started);
                bar.status(&(snaps.so_far)(results, recs, pooled.clone()));
            }
            if !kept && self.stop.load(Ordering::Relaxed) {
                kept = true;
                let (results, recs) = self.so_far(&outcomes, &clock.started);
                let mut snap = (snaps.so_far)(results, recs, pooled.clone());
                crate::fio::result::finish_run(
                    &mut snap.points,
                    self.ctx.t0.elapsed().as_nanos() as u64,
                );
                bar.checkpoint(&snap);
            }
            let done_bytes: u64 = self
                .progress
                .iter()
                .map(|p| p.bytes.load(Ordering::Relaxed))
                .sum();
            bar.at(done_bytes);
            if let Some(t) = giving_up {
                if t.elapsed() >= Duration::from_millis(250) {
                    break;
                }
                continue;
            }
            self.find_stuck(&outcomes, &mut stuck);
            if !stuck.is_empty() {
                self.stop.store(true, Ordering::Relaxed);
                giving_up = Some(Instant::now());
            }
        }
        (outcomes, pooled, stuck)
    }

    /// This set's jobs as they stand: those done with all their figures,
    /// those running with what they have moved so far (their latencies
    /// come with their end), none of those not started.
    fn so_far(
        &self,
        outcomes: &[Option<Result<Kept>>],
        started: &[Option<Instant>],
    ) -> (Vec<JobResult>, Vec<Option<Recorded>>) {
        let mut results = Vec::new();
        let mut recs = Vec::new();
        let running = |i: usize| outcomes[i].is_none() && started[i].is_some();
        self.ask_snapshots(&running);
        for (i, o) in outcomes.iter().enumerate() {
            let (result, rest) = match (o, started[i]) {
                (Some(Ok((result, rest))), _) => (result.clone(), rest.as_ref().map(copy_recorded)),
                (None, Some(t)) => {
                    let prog = &self.progress[i];
                    prog.want_snapshot.store(false, Ordering::Relaxed);
                    let snap = prog
                        .snapshot
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .take();
                    let (r, rec) = JobResult::running(
                        &self.jobs[i],
                        snap,
                        prog.bytes.load(Ordering::Relaxed),
                        self.ctx.t0.elapsed().as_nanos() as u64,
                        t.elapsed().as_nanos() as u64,
                    );
                    (r, Some(rec))
                }
                _ => continue,
            };
            results.push(result);
            recs.push(rest);
        }
        (results, recs)
    }

    /// Asks each running job (`running(i)`) for its figures so far and
    /// waits a little for them: a job reaps often, but one inside a long
    /// I/O (or a slow device's) is reported with its bytes alone.
    fn ask_snapshots(&self, running: &dyn Fn(usize) -> bool) {
        let asked: Vec<usize> = (0..self.jobs.len()).filter(|&i| running(i)).collect();
        for &i in &asked {
            self.progress[i]
                .want_snapshot
                .store(true, Ordering::Relaxed);
        }
        let deadline = Instant::now() + Duration::from_millis(100);
        while Instant::now() < deadline
            && asked.iter().any(|&i| {
                self.progress[i]
                    .snapshot
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .is_none()
            })
        {
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Adds to `stuck` the running jobs that made no progress for twice
    /// the timeout, and, when the transport guard found a device call
    /// hung, every running device job.
    fn find_stuck(&self, outcomes: &[Option<Result<Kept>>], stuck: &mut Stuck) {
        let jobs = self.jobs;
        let now = self.ctx.t0.elapsed().as_nanos() as u64;
        let st = self
            .states
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let hung = crate::transport::guard::hung().map(|(m, _)| m);
        let limit = self.ctx.timeout * 2;
        for (i, p) in self.progress.iter().enumerate() {
            if st[i] != State::Running || outcomes[i].is_some() {
                continue;
            }
            if stalled(p.quiet_since(), now, limit) {
                stuck.push((
                    i,
                    format!(
                        "job {} made no progress for {} (stuck in the kernel on {}); abandoned",
                        jobs[i].job.name,
                        humantime::format_duration(limit),
                        jobs[i].path
                    ),
                ));
            }
        }
        if let Some(m) = &hung {
            // The hung call is one of the running device jobs'; which one
            // is known only by its not finishing once the others stop.
            for i in 0..self.progress.len() {
                if st[i] == State::Running && jobs[i].transport.is_some() {
                    stuck.push((i, format!("job {}: {m}", jobs[i].job.name)));
                }
            }
        }
    }

    /// The set's results in job order and the error that ended or failed
    /// it. Whatever is still out is stuck: reported with what it moved.
    fn collect(
        &self,
        mut outcomes: Outcomes,
        stuck: &[(usize, String)],
    ) -> (Vec<JobResult>, Vec<Option<Recorded>>, Option<Error>) {
        let mut err: Option<Error> = None;
        for (i, o) in outcomes.iter_mut().enumerate() {
            if o.is_some() {
                continue;
            }
            let why = stuck
                .iter()
                .find(|(j, _)| *j == i)
                .map(|(_, m)| m.clone())
                .unwrap_or_else(|| {
                    format!("job {} did not stop; abandoned", self.jobs[i].job.name)
                });
            err.get_or_insert_with(|| Error::run(why.clone()));
            let (r, rec) = JobResult::abandoned(
                &self.jobs[i],
                self.progress[i].bytes.load(Ordering::Relaxed),
                self.ctx.t0.elapsed().as_nanos() as u64,
                why,
            );
            *o = Some(Ok((r, Some(rec))));
        }
        let mut results = Vec::new();
        let mut recs = Vec::new();
        for o in outcomes {
            match o.unwrap_or(Err(Error::Interrupted)) {
                Ok((result, rest)) => {
                    if let (Some(t), None) = (&result.error_text, &err) {
                        err = Some(Error::run(t.clone()));
                    }
                    if result.partial && err.is_none() {
                        err = Some(Error::Interrupted);
                    }
                    results.push(result);
                    recs.push(rest);
                }
                Err(e) => {
                    // Jobs that never started (interrupted, bad target) are
                    // reported by the error alone.
                    if err.is_none() || matches!(err, Some(Error::Interrupted)) {
                        err = Some(e);
                    }
                }
            }
        }
        (results, recs, err)
    }
}

/// When the next status is due (if statuses are asked for), and when each
/// job was first seen running (20 ms ticks: its figures so far are rates
/// over that time).
struct StatusClock {
    every: Option<Duration>,
    next: Instant,
    started: Vec<Option<Instant>>,
}

impl StatusClock {
    fn new(jobs: usize, every: Option<Duration>) -> StatusClock {
        StatusClock {
            every,
            next: Instant::now() + every.unwrap_or_default(),
            started: vec![None; jobs],
        }
    }

    /// Notes the jobs started since the last tick; whether a status is due.
    fn tick(&mut self, states: &Mutex<Vec<State>>) -> bool {
        let now = Instant::now();
        let st = states.lock().unwrap_or_else(|e| e.into_inner());
        for (s, t) in st.iter().zip(&mut self.started) {
            if *s != State::Waiting && t.is_none() {
                *t = Some(now);
            }
        }
        let Some(every) = self.every else {
            return false;
        };
        if now < self.next {
            return false;
        }
        self.next = now + every;
        true
    }
}

/// A copy of what a job recorded (for a status while the run goes on).
fn copy_recorded(r: &Recorded) -> Recorded {
    Recorded {
        recs: r.recs.clone(),
        timeline: r.timeline.clone(),
        prios: r.prios.clone(),
        ioprio: r.ioprio,
        fio: r.fio.clone(),
    }
}

/// Holds job `i` until every job it runs after is done (or the run stops),
/// then marks it running.
fn wait_turn(lock: &Mutex<Vec<State>>, cv: &Condvar, after: &[usize], i: usize, stop: &AtomicBool) {
    let mut st = lock.lock().unwrap_or_else(|e| e.into_inner());
    while !after.iter().all(|&j| st[j] == State::Done) && !stop.load(Ordering::Relaxed) {
        st = cv
            .wait_timeout(st, Duration::from_millis(50))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    st[i] = State::Running;
}

/// What mixed block sizes (`bssplit`, `bsrange`, `bs=R,W`) do not combine
/// with: each refused in one line rather than run with fixed sizes.
fn check_mixed_sizes(job: &Job) -> Result<()> {
    let mix = job.bs_mix.as_ref().map(|m| m.text()).unwrap_or_default();
    let clash = if matches!(
        job.ioengine,
        IoEngine::Net | IoEngine::NetSplice | IoEngine::Transport
    ) {
        Some(format!(
            "ioengine={} sends one message size; give one bs=",
            job.ioengine.name()
        ))
    } else if job.nrfiles > 1 {
        Some(format!(
            "{} files per job take one block size; give one bs= or run one job per file",
            job.nrfiles
        ))
    } else if job.seq_add != 0 {
        Some(
            "rw=…:N (holes or backwards runs) takes one block size; give one bs= or drop :N".into(),
        )
    } else if job.zones().is_some() {
        Some("zonemode=strided takes one block size; give one bs=".into())
    } else {
        None
    };
    match clash {
        Some(why) => Err(Error::usage(format!(
            "job {}: mixed block sizes ({mix}): {why}",
            job.name
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_rules_exact_first_then_directories() {
        let m = |a: &str, b: &str| (a.to_string(), b.to_string());
        let map = [
            m("/mnt/nvme", "/tmp/x"),
            m("/dev/sdb", "/tmp/sdb"),
            m("/mnt/nvme/special", "/tmp/s"),
        ];
        assert_eq!(mapped("/dev/sdb", &map).as_deref(), Some("/tmp/sdb"));
        assert_eq!(mapped("/dev/sdb1", &map), None);
        assert_eq!(
            mapped("/mnt/nvme/job.0.0", &map).as_deref(),
            Some("/tmp/x/job.0.0")
        );
        assert_eq!(mapped("/mnt/nvme/special", &map).as_deref(), Some("/tmp/s"));
        assert_eq!(mapped("/mnt/nvme2/f", &map), None);
        let slash = [m("/data/", "/tmp/d")];
        assert_eq!(mapped("/data/a/b", &slash).as_deref(), Some("/tmp/d/a/b"));
    }
}
