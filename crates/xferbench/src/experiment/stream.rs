//! `stream`: fio-style throughput jobs — N workers, each on its own target and
//! region, through an I/O engine, with verify, completion modes, groups and
//! block-size sweeps. The worker loop knows engines only through
//! [`engine::Engine`]; jobs come from [`jobfile`] whether they were written
//! in a job file or typed as flags.

use super::Progress as Bar;
use crate::error::{Error, Result};
use crate::measure::env::Env;
use crate::measure::placement::Placement;
use crate::measure::stats::Recorder;
use crate::options::StreamConfig;
use crate::payload::splitmix;
use crate::result::stream::*;
use crate::stream::blocksizes::Extents;
use crate::stream::engine::{self, Accounting, Dir, Done, Engine, IoMemory, Op, Target};
use crate::stream::files::{self, FileSet, Region};
use crate::stream::intervals::{Cut, Intervals, Timeline};
use crate::stream::job::{ExitWhat, IoEngine, Job, Rw};
use crate::stream::jobfile;
use crate::stream::offsets::Offsets;
use crate::stream::verify;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A job ready to run: options final, target resolved.
#[derive(Clone, Debug)]
struct Prepared {
    job: Job,
    /// The filename to open (after `--map`); the first of several.
    path: String,
    mapped_from: Option<String>,
    /// Every file of a job with several (`nrfiles`, `filename=a:b`): the
    /// name to open and what `--map` rewrote, if it did; empty for one.
    more: Vec<(String, Option<String>)>,
    transport: Option<crate::transport::Spec>,
    /// Where a net job's socket goes (`ioengine=net`).
    net: Option<crate::stream::net::Endpoint>,
    /// Indices (into this sweep point's jobs) that must finish first.
    after: Vec<usize>,
    /// An I/O job that cpuio jobs run beside (it does not wait for one).
    beside_cpuio: bool,
}

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
    Ok((run, err))
}

/// One run of every job.
fn once(
    args: &StreamConfig,
    stop: &Arc<AtomicBool>,
    bar: &dyn Bar,
) -> Result<(StreamRun, Option<Error>)> {
    let _keep = crate::measure::placement::KeepAffinity::new();
    let points = plan(args)?;
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
            ..StreamExtra::default()
        },
        warnings,
        devices: Vec::new(),
    };
    let t0 = Instant::now();
    let exe = std::env::current_exe().map_err(|e| Error::io("finding this executable", e))?;
    let ctx = Arc::new(Ctx {
        timeout: args.timeout,
        exe,
        t0,
        allow_large_layout: args.allow_large_layout,
        ending: Ending::new(),
        io_left: Arc::default(),
    });
    let sweeping = points.sets.len() > 1;
    let mut first_err: Option<Error> = None;
    for (bs, jobs) in &points.sets {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let label = match bs {
            Some(b) if sweeping => format!("bs={}", crate::units::format_size(*b)),
            _ => String::new(),
        };
        let (mut results, outs, err) = run_set(jobs, &ctx, stop, bar, &label);
        for r in &mut results {
            r.sweep_bs = bs.filter(|_| sweeping);
        }
        run.extra
            .groups
            .extend(groups(&results, &outs, bs.filter(|_| sweeping)));
        if let Some(b) = bs.filter(|_| sweeping) {
            run.extra.sweep.push(sweep_row(b, &results, &outs));
        }
        run.points.extend(results);
        if let Some(e) = err {
            let fatal = matches!(e, Error::Interrupted | Error::Usage(_));
            first_err.get_or_insert(e);
            if fatal {
                break;
            }
        }
    }
    bar.finish();
    Ok(super::finish(run, first_err.map_or(Ok(()), Err)))
}

/// The job sets to run: one per swept block size (or one).
struct Plan {
    sets: Vec<(Option<u64>, Vec<Prepared>)>,
    warnings: Vec<String>,
}

/// Reads the job file or the flags into jobs, applies `--map`, checks every
/// job before anything runs.
fn plan(args: &StreamConfig) -> Result<Plan> {
    let mut overrides = args.overrides();
    let sizes = args.bs_list()?;
    let env = |k: &str| std::env::var(k).ok();
    let mut sets = Vec::new();
    let mut warnings = Vec::new();
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
        let file = match &args.job {
            Some(p) => jobfile::load(p, &overrides)?,
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
                jobfile::parse(&format!("[{name}]\n"), "command line", &env, &overrides)?
            }
        };
        if sets.is_empty() {
            if args.strict && !file.warnings.is_empty() {
                return Err(Error::usage(format!(
                    "{} (--strict makes unsupported options errors; drop --strict to run with a warning)",
                    file.warnings[0]
                )));
            }
            warnings.extend(file.warnings.iter().cloned());
        }
        let prepared = prepare(file.jobs, &args.map)?;
        // Jobs of one reporting group run side by side; every job of the
        // set has its thread from the start.
        let mut groups: Vec<Vec<&Job>> = Vec::new();
        for p in &prepared {
            match groups.iter_mut().find(|g| g[0].group == p.job.group) {
                Some(g) => g.push(&p.job),
                None => groups.push(vec![&p.job]),
            }
        }
        crate::stream::resources::check(prepared.len(), groups.into_iter())?;
        sets.push((bs, prepared));
    }
    if let Some((_, first)) = sets.first() {
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
    Ok(Plan { sets, warnings })
}

/// Resolves filenames, dependencies and option combinations.
fn prepare(jobs: Vec<Job>, map: &[(String, String)]) -> Result<Vec<Prepared>> {
    let mut out: Vec<Prepared> = Vec::with_capacity(jobs.len());
    for (i, mut job) in jobs.into_iter().enumerate() {
        let name = job.name.clone();
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
        let net = if matches!(job.ioengine, IoEngine::Net | IoEngine::NetSplice) {
            let ep = crate::stream::net::Endpoint::of(&job, &path)
                .map_err(|m| Error::usage(format!("job {name}: {m}")))?;
            if job.size.unwrap_or(0) < job.bs && !job.time_based {
                return Err(Error::usage(format!(
                    "job {name}: a net job needs size= (bytes to move, at least one block) or time_based with runtime="
                )));
            }
            // Shown as the job's file: fio's host/port/protocol.
            path = ep.to_string();
            Some(ep)
        } else if let Some(k) = job.net.first_given() {
            return Err(Error::usage(format!(
                "job {name}: {k}= is an option of ioengine=net; set ioengine=net or drop it"
            )));
        } else {
            None
        };
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
        if job.ioengine.file_op() {
            // One nominal block per file; no data moves.
            job.size = Some(u64::from(job.nrfiles) * job.bs);
        }
        if job.time_based && job.runtime.is_none() && job.ioengine != IoEngine::Cpuio {
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
        let mut after = Vec::new();
        if job.stonewall && i > 0 {
            after.extend(0..i);
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
                    "job {name}: wait_for={w} names no earlier job"
                )));
            }
            after.extend(named);
        }
        after.sort_unstable();
        after.dedup();
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

/// Jobs ended early by an `exitall` job (fio's `exit_what=`).
struct Ending(AtomicU64);

impl Ending {
    const NONE: u64 = u64::MAX;
    const ALL: u64 = u64::MAX - 1;

    fn new() -> Ending {
        Ending(AtomicU64::new(Self::NONE))
    }

    /// `job` has ended: stop the others its `exit_what` names.
    fn end(&self, job: &Job, failed: bool) {
        let v = if failed && job.exitall_on_error {
            Self::ALL
        } else if !job.exitall {
            return;
        } else if job.exit_what == ExitWhat::Stonewall {
            u64::from(job.group)
        } else {
            Self::ALL
        };
        let _ = self
            .0
            .compare_exchange(Self::NONE, v, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Whether `job` is to stop now.
    fn stops(&self, job: &Job) -> bool {
        match self.0.load(Ordering::Relaxed) {
            Self::NONE => false,
            Self::ALL => true,
            g => g == u64::from(job.group),
        }
    }
}

/// Checks a job's verify options together; `verify_only` turns a writer
/// into the reader that checks what it would have written.
fn check_verify(job: &mut Job) -> Result<()> {
    let name = job.name.clone();
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
    if matches!(job.rw, Rw::ReadWrite | Rw::RandRw) {
        return Err(Error::usage(format!(
            "job {name}: verify needs a job that only writes or only reads (rw=write, randwrite, read or randread), not rw={}",
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

/// What every worker shares.
struct Ctx {
    timeout: Duration,
    exe: PathBuf,
    t0: Instant,
    /// `--allow-large-layout`.
    allow_large_layout: bool,
    /// Set when an `exitall` job ends.
    ending: Ending,
    /// I/O jobs of the running set that cpuio jobs run beside, not yet done.
    io_left: Arc<AtomicUsize>,
}

/// A job's progress, read by the coordinator (its own cache line: the
/// worker writes it on every completion).
#[repr(align(128))]
#[derive(Default)]
struct JobProgress {
    bytes: AtomicU64,
    /// ns since t0 of the last completion, to tell a hung job from a slow one.
    last_ns: AtomicU64,
    /// ns since t0 at which the job's current (or last) deliberate wait ends
    /// — the rate limiter holding the next I/O until it is due. Written once
    /// per wait, never per I/O; a job waiting by design is not stuck.
    wait_until_ns: AtomicU64,
}

impl JobProgress {
    /// The time (ns since t0) from which a job with nothing completed is
    /// stalled: its last completion, or the end of its last deliberate wait,
    /// whichever is later (0: the job has not started its I/O loop).
    fn quiet_since(&self) -> u64 {
        let last = self.last_ns.load(Ordering::Relaxed);
        if last == 0 {
            return 0;
        }
        last.max(self.wait_until_ns.load(Ordering::Relaxed))
    }

    /// Waits until `until` (or a stop), saying so first, so that the
    /// watchdog measures a stall from the end of the wait, not from the last
    /// completion. Sleeps in short slices: a wait may be long (`rate=300`
    /// with 4 KiB blocks is one I/O every 13 s) and Ctrl-C must not wait.
    fn wait(&self, t0: Instant, now: Instant, until: Instant, stop: &AtomicBool) {
        if until <= now {
            return;
        }
        self.wait_until_ns.store(
            until.duration_since(t0).as_nanos() as u64,
            Ordering::Relaxed,
        );
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || stop.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(left.min(Duration::from_millis(100)));
        }
    }
}

/// Whether a job quiet since `since` (ns since t0; 0: not started) is
/// stalled at `now` under `limit`: nothing completed for longer than the
/// limit, counted from its last completion or the end of its last
/// deliberate wait (a wait still running is never a stall).
fn stalled(since: u64, now: u64, limit: Duration) -> bool {
    since > 0 && now.saturating_sub(since) > limit.as_nanos() as u64
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Waiting,
    Running,
    Done,
}

/// A worker's output: its result, and its latency recorders and intervals
/// (for groups).
struct Outcome {
    result: JobResult,
    rest: Recorded,
}

/// What a job recorded, beside its result.
struct Recorded {
    /// Every I/O's latency: reads, writes, trims.
    recs: [Recorder; engine::DIRS],
    /// The timed span cut into intervals.
    timeline: Timeline,
}

/// Runs one set of jobs concurrently, honouring stonewall and wait_for;
/// returns results in job order. Workers are detached threads: one stuck
/// for good (a device call that never returns, an I/O the kernel never
/// completes) is abandoned, its job reported with what it moved and why,
/// and the others stopped and reported as they are.
fn run_set(
    jobs: &[Prepared],
    ctx: &Arc<Ctx>,
    stop: &Arc<AtomicBool>,
    bar: &dyn Bar,
    label: &str,
) -> (Vec<JobResult>, Vec<Recorded>, Option<Error>) {
    let states = Arc::new((Mutex::new(vec![State::Waiting; jobs.len()]), Condvar::new()));
    let progress: Vec<Arc<JobProgress>> = jobs.iter().map(|_| Arc::default()).collect();
    let total: u64 = jobs
        .iter()
        .map(|p| {
            if p.job.time_based {
                0
            } else if p.job.rw.trim_then_write() {
                // Every block trimmed and written: two I/Os of it.
                p.job.size.unwrap_or(0).saturating_mul(2)
            } else {
                p.job.size.unwrap_or(0)
            }
        })
        .sum();
    bar.start_bytes(total, label);
    ctx.io_left.store(
        jobs.iter().filter(|p| p.beside_cpuio).count(),
        Ordering::Relaxed,
    );
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<Outcome>)>();
    for (i, p) in jobs.iter().enumerate() {
        let states = Arc::clone(&states);
        let prog = Arc::clone(&progress[i]);
        let stop = Arc::clone(stop);
        let ctx = Arc::clone(ctx);
        let p = p.clone();
        let job_tx = tx.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("xb-job-{i}"))
            .spawn(move || {
                let (lock, cv) = &*states;
                {
                    let mut st = lock.lock().unwrap_or_else(|e| e.into_inner());
                    while !p.after.iter().all(|&j| st[j] == State::Done)
                        && !stop.load(Ordering::Relaxed)
                    {
                        st = cv
                            .wait_timeout(st, Duration::from_millis(50))
                            .unwrap_or_else(|e| e.into_inner())
                            .0;
                    }
                    st[i] = State::Running;
                }
                let out = if stop.load(Ordering::Relaxed) {
                    Err(Error::Interrupted)
                } else {
                    run_job(&p, &ctx, &prog, &stop)
                };
                // A job that cannot start as written (a usage error:
                // no such directory, a bad option combination) ends the
                // run: the others, some perhaps waiting out a
                // startdelay, would only report the same mistake later.
                if matches!(out, Err(Error::Usage(_))) {
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
            let _ = tx.send((
                i,
                Err(Error::run(format!("cannot start a job's thread: {e}"))),
            ));
        }
    }
    drop(tx);
    let mut outcomes: Vec<Option<Result<Outcome>>> = (0..jobs.len()).map(|_| None).collect();
    let mut left = jobs.len();
    // Jobs given up on, and why; once one is, the rest get a moment to stop.
    let mut stuck: Vec<(usize, String)> = Vec::new();
    let mut giving_up: Option<Instant> = None;
    // Watch for hangs and draw progress; a worker stuck past the timeout
    // (in the kernel, or in a device call the guard found hung) is
    // abandoned with a record of what it moved.
    while left > 0 {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok((i, out)) => {
                outcomes[i] = Some(out);
                left -= 1;
                continue;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        let done_bytes: u64 = progress
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
        let now = ctx.t0.elapsed().as_nanos() as u64;
        let st = states.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let hung = crate::transport::guard::hung().map(|(m, _)| m);
        for (i, p) in progress.iter().enumerate() {
            if st[i] != State::Running || outcomes[i].is_some() {
                continue;
            }
            if stalled(p.quiet_since(), now, ctx.timeout * 2) {
                stuck.push((
                    i,
                    format!(
                        "job {} made no progress for {} (stuck in the kernel on {}); abandoned",
                        jobs[i].job.name,
                        humantime::format_duration(ctx.timeout * 2),
                        jobs[i].path
                    ),
                ));
            }
        }
        if let Some(m) = &hung {
            // The hung call is one of the running device jobs'; which one
            // is known only by its not finishing once the others stop.
            for (i, _) in progress.iter().enumerate() {
                if st[i] == State::Running && jobs[i].transport.is_some() {
                    stuck.push((i, format!("job {}: {m}", jobs[i].job.name)));
                }
            }
        }
        if !stuck.is_empty() {
            stop.store(true, Ordering::Relaxed);
            giving_up = Some(Instant::now());
        }
    }
    // Whatever is still out is stuck: reported with what it moved.
    let mut err: Option<Error> = None;
    for (i, o) in outcomes.iter_mut().enumerate() {
        if o.is_some() {
            continue;
        }
        let why = stuck
            .iter()
            .find(|(j, _)| *j == i)
            .map(|(_, m)| m.clone())
            .unwrap_or_else(|| format!("job {} did not stop; abandoned", jobs[i].job.name));
        err.get_or_insert_with(|| Error::run(why.clone()));
        *o = Some(Ok(abandoned(&jobs[i], ctx, &progress[i], why)));
    }
    let mut results = Vec::new();
    let mut recs = Vec::new();
    for o in outcomes {
        match o.unwrap_or(Err(Error::Interrupted)) {
            Ok(o) => {
                if let (Some(t), None) = (&o.result.error_text, &err) {
                    err = Some(Error::run(t.clone()));
                }
                if o.result.partial && err.is_none() {
                    err = Some(Error::Interrupted);
                }
                results.push(o.result);
                recs.push(o.rest);
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

/// An engine call's failure as the job's: a run error ends the job with
/// its figures so far (true, the failure noted); a usage error or an
/// interruption goes on as it is (the job cannot run as written).
fn engine_failed(r: Result<()>, job: &Job, failure: &mut Option<String>) -> Result<bool> {
    match r {
        Ok(()) => Ok(false),
        Err(e @ Error::Run(_)) => {
            failure.get_or_insert_with(|| format!("job {}: {e}", job.name));
            Ok(true)
        }
        Err(e) => Err(e),
    }
}

/// Says how many I/Os a failed engine still held.
fn note_lost(failure: &mut Option<String>, inflight: usize) {
    if let Some(f) = failure.as_mut()
        && inflight > 0
    {
        f.push_str(&format!(" ({inflight} I/O(s) in flight were lost)"));
    }
}

/// The record of a job whose worker was abandoned: its options, the bytes
/// it had moved (its latencies are with the stuck worker), and why.
fn abandoned(p: &Prepared, ctx: &Ctx, prog: &JobProgress, why: String) -> Outcome {
    let job = &p.job;
    let moved = prog.bytes.load(Ordering::Relaxed);
    let end_ns = ctx.t0.elapsed().as_nanos() as u64;
    let timeline = Intervals::new(Cut::new(false, None, 1)).finish(0);
    let recs = [Recorder::new(), Recorder::new(), Recorder::new()];
    let empty = |r: &Recorder| DirStats::of(r, 0, 0);
    let mut dirs = [empty(&recs[0]), empty(&recs[1]), empty(&recs[2])];
    // Bytes by direction are with the worker; a one-way job's are all its.
    let only = match (job.rw.reads(), job.rw.writes()) {
        (true, false) => Some(Dir::Read),
        (false, true) => Some(Dir::Write),
        _ => None,
    };
    if let Some(d) = only {
        dirs[d as usize].io_bytes = moved;
    }
    let [read, write, trim] = dirs;
    let result = JobResult {
        jobname: job.name.clone(),
        groupid: job.group,
        error: 1,
        error_text: Some(why),
        read,
        write,
        trim,
        sweep_bs: None,
        clone: job.clone,
        filename: p.path.clone(),
        mapped_from: p.mapped_from.clone(),
        target: None,
        prepared: None,
        files: Vec::new(),
        file_service_type: None,
        rw: job.rw,
        bs: job.bs,
        bs_mix: job.bs_mix.as_ref().map(|m| m.text()),
        offset: job.offset,
        size: job.size.unwrap_or(0),
        ioengine: job.ioengine,
        iodepth: job.iodepth.max(1),
        rate: job.rate,
        direct: job.direct,
        iomem: job.iomem,
        completion: job.completion(),
        completion_detail: String::new(),
        device: p.transport.as_ref().and_then(|s| {
            let mut d = crate::transport::resolve(s).ok()?.device()?;
            d["counters"] = serde_json::Value::Null;
            d["state"] = "abandoned: a call into it did not return".into();
            Some(d)
        }),
        start_ns: 0,
        end_ns,
        ramp_ios: 0,
        verify: None,
        partial: true,
        group_reporting: job.group_reporting,
        warnings: vec![format!(
            "the job was abandoned after moving {moved} bytes; its latencies stayed with its stuck worker"
        )],
        line: job.line,
    };
    Outcome {
        result,
        rest: Recorded { recs, timeline },
    }
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
    } else if job.rw.trim_then_write() {
        Some(format!(
            "rw={} writes where each trim went, one block size; give one bs=",
            job.rw.name()
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

/// An I/O in flight.
#[derive(Clone, Copy)]
struct Flight {
    dir: Dir,
    file: usize,
    offset: u64,
    len: u64,
    block: u64,
    t0: Instant,
}

/// One worker: opens its target, runs the job, then the verify read-back.
fn run_job(p: &Prepared, ctx: &Ctx, prog: &JobProgress, stop: &AtomicBool) -> Result<Outcome> {
    let job = &p.job;
    if let Some(cpus) = &job.cpus_allowed {
        // cpus_allowed_policy=split: each clone on one CPU of the set.
        let mine = match cpus.len() {
            n if job.cpus_split && n > 0 => vec![cpus[job.clone as usize % n]],
            _ => cpus.clone(),
        };
        pin_to(&mine).map_err(|e| Error::usage(format!("job {}: cpus_allowed: {e}", job.name)))?;
    }
    set_priority(job)?;
    // fio's startdelay counts from the start of the run, not of the job.
    if let Some((lo, hi)) = job.startdelay {
        let mut s = job.randseed ^ u64::from(job.clone);
        let span = hi.saturating_sub(lo).as_nanos() as u64;
        let pick = lo + Duration::from_nanos(if span > 0 { splitmix(&mut s) % span } else { 0 });
        let now = Instant::now();
        prog.wait(ctx.t0, now, ctx.t0 + pick, stop);
        if stop.load(Ordering::Relaxed) {
            return Err(Error::Interrupted);
        }
    }
    let sync_engine = engine::one_at_a_time(job.ioengine);
    let depth = if sync_engine {
        1
    } else {
        job.iodepth.max(1) as usize
    };
    // Each buffer holds the longest I/O (`bs`, or the largest of a mix).
    let bs = job.max_bs() as usize;
    // The buffers before the engine, so the engine is dropped first: an
    // asynchronous one waits there for I/O still in flight into them.
    let mut mem = IoMemory::new(job.iomem, depth, bs)?;
    let (targets, mut eng) = open_engine(p, ctx, depth)?;
    eng.register_memory(&mut mem)?;
    // What a completion counts for: bytes, an operation, or nothing (cpuio).
    let acct = eng.accounting();
    let counts_bytes = acct == Accounting::Bytes;
    if job.rw.writes() && job.verify.is_none() {
        // fio's default: buffers filled with random bytes once.
        for s in 0..depth {
            fill_write(mem.slot(s, bs), job, s as u64);
        }
    }
    // randrepeat=0: a different random order every run.
    let seed = if job.randrepeat {
        job.randseed
    } else {
        job.randseed ^ ctx.t0.elapsed().as_nanos() as u64 ^ u64::from(std::process::id())
    };
    // Each file's region and offset order, and which file each I/O goes to.
    let cap = pass_cap(job, targets.len());
    let regions = regions(p, &targets);
    for r in &regions {
        Offsets::check(job, r.size).map_err(|m| Error::usage(format!("job {}: {m}", job.name)))?;
    }
    let mut files = FileSet::new(job, regions, seed ^ u64::from(job.clone), cap);
    let (region_off, region_size) = (files.start(0), files.total_size());
    let nblocks = files.pass_ios();
    let spec = verify::Spec::of(job);
    // Mixed block sizes: each I/O draws its length and Extents places it.
    let mut extents = job.bs_mix.clone().map(|mix| {
        // One file (check_mixed_sizes): its order and region.
        let plain = files.order(0).permutes();
        // A verified job's I/Os must not overlap: a later one would
        // overwrite data an earlier one's header vouches for.
        let tile = spec.is_some();
        Extents::new(
            mix,
            files.regions()[0].size,
            job.rw.random(),
            plain,
            tile,
            job.blockalign.unwrap_or(0),
            seed ^ u64::from(job.clone),
        )
    });
    let check_reads = spec.is_some() && job.do_verify && job.rw.reads();
    // verify_backlog: a writer stops every N written blocks to check them.
    let backlog = if job.rw.writes() && job.do_verify && spec.is_some() {
        job.verify_backlog
    } else {
        0
    };
    // (file, offset from its region's start, length) of writes to check.
    let mut unchecked: Vec<(usize, u64, u64)> = Vec::new();
    // Mixed sizes: what this pass wrote, for the read-back (a fixed size's
    // blocks are a function of their index instead).
    let mut written: Vec<(usize, u64, u64)> = Vec::new();
    let log_writes =
        extents.is_some() && job.rw.writes() && job.do_verify && spec.is_some() && backlog == 0;
    let mut want_check = false;
    let mut verify_state = spec.as_ref().map(|s| VerifyReport {
        kind: s.kind.name(),
        backlog: Some(backlog).filter(|&n| n > 0),
        pattern: s.pattern.as_ref().map(|p| p.text().to_string()),
        blocks: 0,
        bad: 0,
        first_bad: None,
        readback_s: None,
        dumped: Vec::new(),
    });
    // trimwrite: each block trimmed, then written — two I/Os, one offset.
    let per_block = if job.rw.trim_then_write() { 2 } else { 1 };
    let total_ios = if job.time_based {
        u64::MAX
    } else {
        nblocks.saturating_mul(u64::from(job.loops) * per_block)
    };
    // Mixed sizes: a sized job ends when it has moved its bytes (fio's
    // io_size), not after a count of I/Os.
    let (total_ios, total_bytes, expected_ios) = match &job.bs_mix {
        Some(mix) if !job.time_based => {
            let bytes = region_size.saturating_mul(u64::from(job.loops));
            (
                u64::MAX,
                bytes,
                (bytes as f64 / mix.mean(job.read_share())).ceil() as u64,
            )
        }
        Some(_) => (u64::MAX, u64::MAX, u64::MAX),
        None => (total_ios, u64::MAX, total_ios),
    };
    let total_ios = job.number_ios.map_or(total_ios, |n| n.min(total_ios));
    let expected_ios = job.number_ios.map_or(expected_ios, |n| n.min(expected_ios));
    let mut intervals = Intervals::new(Cut::new(job.time_based, job.runtime, expected_ios));
    let mut bytes = [0u64; engine::DIRS];
    let mut free: Vec<usize> = (0..depth).rev().collect();
    let mut flights: Vec<Option<Flight>> = vec![None; depth];
    let mut done: Vec<Done> = Vec::with_capacity(depth);
    let mut rng = job.randseed ^ 0xa5a5 ^ u64::from(job.clone);
    let mut issued = 0u64;
    let mut issued_bytes = 0u64;
    // trimwrite: the (file, offset) of the pair's trim, for its write.
    let mut pair = (0usize, 0u64);
    let mut seen_pass = 0u64;
    let mut last_pass = 0u64;
    let mut writes_issued = 0u64;
    let mut inflight = 0usize;
    let mut since_fsync = 0u32;
    let mut want_sync = false;
    let mut stopping = false;
    let mut partial = false;
    // fill_device: the writes reached a full device or file system.
    let mut filled = false;
    let mut failure: Option<String> = None;
    // The engine failed (a device's error, a hang it timed out): the job
    // ends there, with its figures so far; nothing more is asked of it.
    let mut broken = false;
    let start = Instant::now();
    let mut ramping = job.ramp_time.is_some_and(|r| !r.is_zero());
    let ramp_end = start + job.ramp_time.unwrap_or_default();
    let mut measure_start = start;
    // measure_start as ns since t0: the watchdog's clock is then the span's
    // plus a constant, not a second conversion per completion.
    let mut measure_from_t0 = measure_start.duration_since(ctx.t0).as_nanos() as u64;
    // Bytes done so far, ramp included (what the progress bar shows); this
    // worker is the only writer, so a store replaces an atomic add.
    let mut progress_bytes = 0u64;
    let mut ramp_ios = 0u64;
    let mut deadline = job.runtime.map(|r| ramp_end + r);
    let mut window = (start, 0u64);
    let mut next_due = Instant::now();
    let mut think_done = 0u64;
    prog.last_ns
        .store(ctx.t0.elapsed().as_nanos() as u64 | 1, Ordering::Relaxed);
    loop {
        // iodepth_low: once the queue is full, refill only when it has
        // drained to the low-water mark.
        let refilling = job.iodepth_low.is_none_or(|low| inflight <= low as usize);
        while refilling
            && inflight < depth
            && issued < total_ios
            && issued_bytes < total_bytes
            && !stopping
            && !want_sync
            && !want_check
        {
            if let Some(pause) = job.thinktime
                && issued > 0
                && issued.is_multiple_of(u64::from(job.thinktime_blocks))
                && think_done < issued
            {
                think_done = issued;
                think(job, pause, prog, ctx, stop);
            }
            let dir = match job.rw {
                // The pair's first I/O trims, the second writes.
                rw if rw.trim_then_write() && issued.is_multiple_of(2) => Dir::Trim,
                rw if rw.trim_then_write() => Dir::Write,
                Rw::Trim | Rw::RandTrim => Dir::Trim,
                Rw::ReadWrite | Rw::RandRw => {
                    if splitmix(&mut rng) % 100 < u64::from(job.rwmixread) {
                        Dir::Read
                    } else {
                        Dir::Write
                    }
                }
                rw if rw.reads() => Dir::Read,
                _ => Dir::Write,
            };
            let (file, rel, len) = match extents.as_mut() {
                // verify_only reads what the writes would have been.
                Some(e) => {
                    let side = if job.verify_only { 1 } else { dir as usize };
                    let (rel, len) =
                        e.next(files.order(0), issued, side, total_bytes - issued_bytes);
                    (0, rel, len)
                }
                // trimwrite: the write goes where its trim went.
                None if per_block == 2 && issued % 2 == 1 => (pair.0, pair.1, job.bs),
                None => {
                    let (file, rel) = files.next();
                    pair = (file, rel);
                    (file, rel, job.bs)
                }
            };
            // A new pass: fio reopens its files and invalidates them again.
            let pass = extents.as_ref().map_or(files.passes, |e| e.pass);
            if pass != seen_pass {
                seen_pass = pass;
                for t in &targets {
                    t.invalidate_again(job);
                }
            }
            let blk = rel / job.bs;
            issued += 1;
            issued_bytes += len;
            let Some(slot) = free.pop() else { break };
            let offset = files.start(file) + rel;
            if dir == Dir::Write {
                writes_issued += 1;
                if log_writes && let Some(e) = &extents {
                    // A new pass writes over the last: only it is checked.
                    if e.pass != last_pass {
                        last_pass = e.pass;
                        written.clear();
                    }
                    written.push((file, rel, len));
                }
                if let Some(spec) = &spec {
                    let buf = &mut mem.slot(slot, bs)[..len as usize];
                    verify::fill(buf, spec, offset, blk, job.randseed);
                } else if job.refill_buffers {
                    fill_write(mem.slot(slot, bs), job, issued);
                }
            }
            let buf = mem.slot_ptr(slot);
            flights[slot] = Some(Flight {
                dir,
                file,
                offset,
                len,
                block: blk,
                t0: Instant::now(),
            });
            let queued = eng.queue(Op {
                dir,
                file,
                offset,
                len: len as usize,
                slot,
                buf,
            });
            if engine_failed(queued, job, &mut failure)? {
                broken = true;
                break;
            }
            inflight += 1;
        }
        if inflight == 0 {
            if want_sync {
                match (targets.is_empty(), job.fsync) {
                    (false, 0) => {
                        for t in &targets {
                            engine::flush_to_disk(t.fd(), true)?;
                        }
                    }
                    _ => eng.sync()?,
                }
                want_sync = false;
                continue;
            }
            if want_check {
                want_check = false;
                if let (Some(spec), Some(vs)) = (&spec, verify_state.as_mut())
                    && !stopping
                {
                    let batch = job.verify_backlog_batch.unwrap_or(unchecked.len() as u64);
                    let rb = ReadBack {
                        spec,
                        files: &files,
                        count: batch,
                        extent: &|i| unchecked[(i % unchecked.len() as u64) as usize],
                    };
                    failure = read_back(p, ctx, prog, stop, &mut *eng, &mut mem, vs, &rb)?;
                    unchecked.clear();
                    if failure.is_some() || (vs.bad > 0 && job.verify_fatal) {
                        stopping = true;
                    }
                }
                continue;
            }
            break;
        }
        if broken {
            break;
        }
        let reaped = eng.reap(
            (job.batch_complete_min as usize).clamp(1, inflight),
            ctx.timeout,
            &mut done,
        );
        if engine_failed(reaped, job, &mut failure)? {
            broken = true;
            break;
        }
        let now = Instant::now();
        let at_ns = now.duration_since(measure_start).as_nanos() as u64;
        for d in done.drain(..) {
            inflight -= 1;
            free.push(d.slot);
            let Some(f) = flights[d.slot].take() else {
                continue;
            };
            let what = f.dir.name();
            let want = f.len as usize;
            match d.res {
                // fill_device: a full device or file system is the end.
                Err(e) if job.fill_device && e == libc::ENOSPC && f.dir == Dir::Write => {
                    filled = true;
                    stopping = true;
                    continue;
                }
                Ok(n) if job.fill_device && n < want && f.dir == Dir::Write => {
                    filled = true;
                    stopping = true;
                    continue;
                }
                Err(e) => {
                    failure.get_or_insert_with(|| {
                        format!(
                            "job {}: {what} of {want} bytes at offset {} of {} failed: {}",
                            job.name,
                            f.offset,
                            files.name(f.file),
                            engine::errno_text(e)
                        )
                    });
                    stopping = true;
                    continue;
                }
                // The peer ended the stream (net): not a failure, the end.
                Ok(n) if n < want && eng.ended() => {
                    stopping = true;
                    continue;
                }
                Ok(n) if n < want => {
                    failure.get_or_insert_with(|| {
                        format!(
                            "job {}: short {what} at offset {} of {}: {n} of {want} bytes (end of the device or file? check size=/offset=)",
                            job.name,
                            f.offset,
                            files.name(f.file)
                        )
                    });
                    stopping = true;
                    continue;
                }
                Ok(_) => {}
            }
            let di = f.dir as usize;
            let io_bytes = if counts_bytes { f.len } else { 0 };
            if ramping {
                ramp_ios += 1;
            } else if acct != Accounting::Nothing {
                let lat_ns = now.duration_since(f.t0).as_nanos() as u64;
                intervals.record(di, at_ns, lat_ns, io_bytes);
                bytes[di] += io_bytes;
                if let Some(max) = job.max_latency
                    && lat_ns > max.as_nanos() as u64
                {
                    failure.get_or_insert_with(|| {
                        format!(
                            "job {}: a {what} at offset {} took {} µs, beyond max_latency={}",
                            job.name,
                            f.offset,
                            crate::units::format_us(lat_ns as f64),
                            humantime::format_duration(max)
                        )
                    });
                    stopping = true;
                }
            }
            progress_bytes += f.len;
            if f.dir == Dir::Read
                && check_reads
                && let (Some(spec), Some(vs)) = (&spec, verify_state.as_mut())
            {
                vs.blocks += 1;
                let data = mem.slot(d.slot, want);
                if let Err(bad) = verify::check(data, spec, f.offset, f.block, job.randseed) {
                    note_bad(vs, &bad, job, files.name(f.file), data);
                    if job.verify_fatal {
                        stopping = true;
                    }
                }
            }
            if f.dir == Dir::Write && backlog > 0 {
                unchecked.push((f.file, f.offset - files.start(f.file), f.len));
                want_check |= unchecked.len() as u64 >= backlog;
            }
            let every = if job.fsync > 0 {
                job.fsync
            } else {
                job.fdatasync
            };
            if f.dir == Dir::Write && every > 0 {
                since_fsync += 1;
                if since_fsync >= every {
                    since_fsync = 0;
                    want_sync = true;
                }
            }
        }
        // The clock was just read: no second read on the hot path.
        prog.bytes.store(progress_bytes, Ordering::Relaxed);
        prog.last_ns
            .store(measure_from_t0 + at_ns, Ordering::Relaxed);
        if ramping && now >= ramp_end {
            ramping = false;
            measure_start = now;
            measure_from_t0 = now.duration_since(ctx.t0).as_nanos() as u64;
            // Nothing was recorded while ramping: the intervals are empty;
            // a sized job has what the ramp did not do left.
            intervals.recut(Cut::new(
                job.time_based,
                job.runtime,
                total_ios.saturating_sub(ramp_ios),
            ));
            bytes = [0; engine::DIRS];
            window = (now, 0);
            if job.runtime.is_some() {
                deadline = job.runtime.map(|r| now + r);
            }
        }
        if deadline.is_some_and(|d| now >= d) || eng.finished() {
            stopping = true;
        }
        if stop.load(Ordering::Relaxed) && !stopping {
            stopping = true;
            partial = true;
        }
        if ctx.ending.stops(job) {
            stopping = true;
        }
        if ramping {
            continue;
        }
        let moved: u64 = bytes.iter().sum();
        // The rate limiter holds the next I/O until it is due (none after
        // the last one); the watchdog is told, as the gap may be longer than
        // its limit.
        if let Some(rate) = job.rate.filter(|r| *r > 0)
            && issued < total_ios
            && !stopping
        {
            let due = if job.poisson {
                // Exponential gaps with the rate's mean: a Poisson process.
                let u = (splitmix(&mut rng) >> 11) as f64 / (1u64 << 53) as f64;
                next_due += Duration::from_secs_f64(-(1.0 - u).ln() * job.bs as f64 / rate as f64);
                next_due.max(measure_start)
            } else {
                measure_start + Duration::from_secs_f64(moved as f64 / rate as f64)
            };
            // Not past the job's runtime: a time-based job ends on time.
            let until = deadline.map_or(due, |d| due.min(d));
            prog.wait(ctx.t0, now, until, stop);
        }
        if let Some(min) = job.ratemin.filter(|r| *r > 0) {
            let span = now.duration_since(window.0);
            if span >= job.rate_cycle {
                let bw = (moved - window.1) as f64 / span.as_secs_f64();
                if bw < min as f64 {
                    failure.get_or_insert_with(|| {
                        format!(
                            "job {}: bandwidth fell to {:.0} B/s over {:.1} s, below ratemin={min} B/s",
                            job.name,
                            bw,
                            span.as_secs_f64()
                        )
                    });
                    stopping = true;
                }
                window = (now, moved);
            }
        }
    }
    if job.end_fsync && job.rw.writes() && failure.is_none() {
        eng.sync()?;
    }
    if broken {
        // I/Os still queued in a failed engine are lost, not measured.
        note_lost(&mut failure, inflight);
    }
    let end = Instant::now();
    let runtime_ns = end.duration_since(measure_start).as_nanos() as u64;
    // The writer's read-back pass: every block it wrote (with
    // verify_backlog: those written since the last check), checked.
    if job.rw.writes()
        && job.do_verify
        && failure.is_none()
        && !partial
        && !(job.verify_fatal && verify_state.as_ref().is_some_and(|vs| vs.bad > 0))
        && let (Some(spec), Some(vs)) = (&spec, verify_state.as_mut())
    {
        let rb = if backlog > 0 {
            ReadBack {
                spec,
                files: &files,
                count: unchecked.len() as u64,
                extent: &|i| unchecked[i as usize],
            }
        } else if log_writes {
            ReadBack {
                spec,
                files: &files,
                count: written.len() as u64,
                extent: &|i| written[i as usize],
            }
        } else {
            ReadBack {
                spec,
                files: &files,
                count: writes_issued.min(files.written_count()),
                extent: &|i| {
                    let (f, rel) = files.written(i);
                    (f, rel, job.bs)
                },
            }
        };
        failure = read_back(p, ctx, prog, stop, &mut *eng, &mut mem, vs, &rb)?;
    }
    if let Some(why) = verify_state
        .as_ref()
        .and_then(|vs| verify_failure(vs, job, &p.shown()))
    {
        failure.get_or_insert(why);
    }
    ctx.ending.end(job, failure.is_some());
    for t in targets
        .iter()
        .filter(|t| job.unlink && t.kind == engine::TargetKind::File)
    {
        if let Err(e) = std::fs::remove_file(&t.path) {
            eprintln!(
                "xferbench: warning: job {}: unlink: cannot remove {}: {e}",
                job.name,
                t.path.display()
            );
        }
    }
    let timeline = intervals.finish(runtime_ns);
    let recs = [timeline.total(0), timeline.total(1), timeline.total(2)];
    let n: u64 = recs.iter().map(Recorder::count).sum();
    let mut warnings = job_warnings(job, sync_engine, n, runtime_ns, partial, failure.is_some());
    if filled {
        warnings.push(format!(
            "fill_device: the writes stopped at a full device or file system (ENOSPC) after {} bytes",
            bytes[Dir::Write as usize]
        ));
    }
    warnings.extend(eng.warnings());
    let result = JobResult {
        jobname: job.name.clone(),
        groupid: job.group,
        error: i32::from(failure.is_some()),
        error_text: failure,
        read: DirStats::of(&recs[0], bytes[0], runtime_ns).with(timeline.spread(0, &recs[0])),
        write: DirStats::of(&recs[1], bytes[1], runtime_ns).with(timeline.spread(1, &recs[1])),
        trim: DirStats::of(&recs[2], bytes[2], runtime_ns).with(timeline.spread(2, &recs[2])),
        sweep_bs: None,
        clone: job.clone,
        filename: p.path.clone(),
        mapped_from: p.mapped_from.clone(),
        target: targets.first().map(|t| t.kind),
        prepared: prepared_of(&targets),
        files: file_results(p, &targets, &files),
        file_service_type: file_service_of(job, &files),
        rw: job.rw,
        bs: job.bs,
        bs_mix: job.bs_mix.as_ref().map(|m| m.text()),
        offset: region_off,
        size: region_size,
        ioengine: job.ioengine,
        iodepth: depth as u32,
        rate: job.rate,
        direct: job.direct,
        iomem: mem.kind(),
        completion: eng.completion().unwrap_or(job.completion()),
        completion_detail: eng.completion_detail(),
        device: eng.device(),
        start_ns: measure_start.duration_since(ctx.t0).as_nanos() as u64,
        end_ns: end.duration_since(ctx.t0).as_nanos() as u64,
        ramp_ios,
        verify: verify_state,
        partial,
        group_reporting: job.group_reporting,
        warnings,
        line: job.line,
    };
    Ok(Outcome {
        result,
        rest: Recorded { recs, timeline },
    })
}

/// The job's target and engine: a file or device opened for its engine, or a
/// transport link for `filename=xfer:…`.
fn open_engine(p: &Prepared, ctx: &Ctx, depth: usize) -> Result<(Vec<Target>, Box<dyn Engine>)> {
    let job = &p.job;
    if job.ioengine.file_op() {
        let e = engine::FileOps::open(job, &p.paths())?;
        return Ok((Vec::new(), Box::new(e)));
    }
    if job.ioengine == IoEngine::Cpuio {
        let e = engine::CpuIo::new(job, Arc::clone(&ctx.io_left));
        return Ok((Vec::new(), Box::new(e)));
    }
    if job.ioengine == IoEngine::Null {
        if job.verify.is_some() {
            return Err(Error::usage(format!(
                "job {}: verify= checks data and the null engine moves none; drop verify= or pick a real engine",
                job.name
            )));
        }
        if job.size.unwrap_or(0) < job.bs && !job.time_based {
            return Err(Error::usage(format!(
                "job {}: the null engine needs size= (at least one block) or time_based with runtime=",
                job.name
            )));
        }
        return Ok((Vec::new(), Box::new(engine::Null::new(depth))));
    }
    if let Some(ep) = &p.net {
        let e = engine::Net::open(job, ep.clone(), ctx.timeout)?;
        return Ok((Vec::new(), Box::new(e)));
    }
    Ok(match &p.transport {
        Some(spec) => {
            let size = job.size.unwrap_or(0);
            if size < job.bs && !job.time_based {
                return Err(Error::usage(format!(
                    "job {}: a transport stream needs size= (bytes to send, at least one block) or time_based with runtime=",
                    job.name
                )));
            }
            let blocks = (!job.time_based).then_some(size / job.bs);
            let e = engine::LinkEngine::open(
                job,
                spec.clone(),
                depth,
                blocks,
                ctx.timeout,
                ctx.exe.clone(),
            )?;
            (Vec::new(), Box::new(e))
        }
        None => {
            let paths = p.paths();
            let paths: Vec<&Path> = paths.iter().map(Path::new).collect();
            let t = Target::open_all(job, &paths, ctx.allow_large_layout)?;
            let e = engine::open(job, &t, depth)?;
            (t, e)
        }
    })
}

impl Prepared {
    /// The job's file for messages: its path, or how many and the first.
    fn shown(&self) -> String {
        match self.more.len() {
            0 | 1 => self.path.clone(),
            n => format!("its {n} files (like {})", self.path),
        }
    }

    /// The names to open: the one path, or every file of the job.
    fn paths(&self) -> Vec<String> {
        if self.more.is_empty() {
            vec![self.path.clone()]
        } else {
            self.more.iter().map(|m| m.0.clone()).collect()
        }
    }
}

/// The job's files as regions for its [`FileSet`]: each target's, or for
/// an engine that opens none, the job's size (`null` with `nrfiles`
/// splits it among its files, as fio's null engine does).
fn regions(p: &Prepared, targets: &[Target]) -> Vec<Region> {
    let job = &p.job;
    if !targets.is_empty() {
        return targets
            .iter()
            .map(|t| Region {
                name: t.path.display().to_string(),
                offset: t.offset,
                size: t.size,
            })
            .collect();
    }
    let size = (job.size.unwrap_or(0) / job.bs).max(1) * job.bs;
    let names = p.paths();
    if job.ioengine != IoEngine::Null || names.len() < 2 {
        return vec![Region {
            name: p.path.clone(),
            offset: 0,
            size,
        }];
    }
    files::split_size(size, names.len() as u64, job.bs)
        .into_iter()
        .zip(names)
        .map(|(s, name)| Region {
            name,
            offset: 0,
            size: (s / job.bs).max(1) * job.bs,
        })
        .collect()
}

/// What was done to the job's files before it ran: the one file's, or
/// the files' in one line when it was the same for each.
fn prepared_of(targets: &[Target]) -> Option<String> {
    match targets {
        [] => None,
        [t] => t.prepared.clone(),
        [first, rest @ ..] if rest.iter().all(|t| t.prepared == first.prepared) => first
            .prepared
            .as_ref()
            .map(|p| format!("each of the {} files: {p}", targets.len())),
        _ => Some("per file, in files[]".into()),
    }
}

/// Each file of a job with several: name, region, preparation and the
/// I/Os issued to it.
fn file_results(p: &Prepared, targets: &[Target], files: &FileSet) -> Vec<FileResult> {
    if files.len() < 2 {
        return Vec::new();
    }
    files
        .regions()
        .iter()
        .enumerate()
        .map(|(i, r)| FileResult {
            filename: r.name.clone(),
            mapped_from: p.more.get(i).and_then(|m| m.1.clone()),
            offset: r.offset,
            size: r.size,
            prepared: targets.get(i).and_then(|t| t.prepared.clone()),
            ios: files.issued()[i],
        })
        .collect()
}

/// How a job with several files chose them, for its result.
fn file_service_of(job: &Job, files: &FileSet) -> Option<String> {
    (files.len() > 1).then(|| match job.openfiles {
        Some(m) if (m as usize) < files.len() => {
            format!("{}, openfiles={m}", job.file_service.text())
        }
        _ => job.file_service.text(),
    })
}

/// A `size=` cap on a pass over files each sized by `filesize=` (fio:
/// the files' sizes are the regions, `size=` the I/O), in I/Os.
fn pass_cap(job: &Job, files: usize) -> Option<u64> {
    let sized_by_filesize = (files > 1 || job.filesize_max.is_some()) && job.filesize.is_some();
    job.size
        .filter(|_| sized_by_filesize && job.size_pct.is_none())
        .map(|s| (s / job.bs).max(1))
}

/// What the read-back pass needs to know of the job's write phase.
struct ReadBack<'a> {
    spec: &'a verify::Spec,
    files: &'a FileSet,
    /// Blocks to read back and check.
    count: u64,
    /// Where the i-th of them lies: its file, its offset from that file's
    /// region's start, and its length (the write order, verify_backlog's
    /// list, or the writes of mixed sizes).
    extent: &'a dyn Fn(u64) -> (usize, u64, u64),
}

/// The writer's read-back pass (fio's `do_verify` after a write phase): every
/// block written is read once and checked. Returns why it failed, if it did.
#[allow(clippy::too_many_arguments)]
fn read_back(
    p: &Prepared,
    ctx: &Ctx,
    prog: &JobProgress,
    stop: &AtomicBool,
    eng: &mut dyn Engine,
    mem: &mut IoMemory,
    vs: &mut VerifyReport,
    rb: &ReadBack,
) -> Result<Option<String>> {
    let job = &p.job;
    let count = rb.count;
    let mut done: Vec<Done> = Vec::with_capacity(1);
    let mut failure = None;
    let t = Instant::now();
    let mut i = 0u64;
    while i < count && !stop.load(Ordering::Relaxed) {
        let (file, rel, len) = (rb.extent)(i);
        let (blk, offset, bs) = (rel / job.bs, rb.files.start(file) + rel, len as usize);
        let path = rb.files.name(file);
        let buf = mem.slot_ptr(0);
        eng.queue(Op {
            dir: Dir::Read,
            file,
            offset,
            len: bs,
            slot: 0,
            buf,
        })?;
        done.clear();
        while done.is_empty() {
            eng.reap(1, ctx.timeout, &mut done)?;
        }
        match done[0].res {
            Ok(n) if n == bs => {}
            Ok(n) => {
                failure = Some(format!(
                    "job {}: short read-back at offset {offset} of {path}: {n} of {bs} bytes",
                    job.name
                ));
                break;
            }
            Err(e) => {
                failure = Some(format!(
                    "job {}: read-back at offset {offset} of {path} failed: {} (a write-only device? verify by reading through its read channel in a later job, as do_verify=0 writers do)",
                    job.name,
                    engine::errno_text(e)
                ));
                break;
            }
        }
        vs.blocks += 1;
        let data = mem.slot(0, bs);
        if let Err(bad) = verify::check(data, rb.spec, offset, blk, job.randseed) {
            note_bad(vs, &bad, job, path, data);
            if job.verify_fatal {
                break;
            }
        }
        i += 1;
        prog.last_ns
            .store(ctx.t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }
    vs.readback_s = Some(vs.readback_s.unwrap_or(0.0) + t.elapsed().as_secs_f64());
    Ok(failure)
}

/// Fills a write buffer as fio's buffer options say: zeros, a repeated
/// pattern, or (fio's default) random bytes, varied by `n` so refilled
/// buffers differ.
fn fill_write(buf: &mut [u8], job: &Job, n: u64) {
    if job.zero_buffers {
        buf.fill(0);
    } else if let Some(p) = &job.buffer_pattern {
        for (b, v) in buf.iter_mut().zip(p.iter().cycle()) {
            *b = *v;
        }
    } else {
        crate::payload::fill(buf, job.randseed, n, crate::payload::Direction::Request);
    }
    if job.compress_pct > 0 {
        // The tail of each chunk zeroed: that share compresses away.
        let chunk = job.compress_chunk as usize;
        for c in buf.chunks_mut(chunk) {
            let zeros = c.len() * job.compress_pct as usize / 100;
            let keep = c.len() - zeros;
            c[keep..].fill(0);
        }
    }
}

/// fio's `thinktime`: the job pauses before its next I/O, spinning for
/// `thinktime_spin` of it and sleeping the rest (a deliberate wait the stall
/// watchdog is told of).
fn think(job: &Job, think: Duration, prog: &JobProgress, ctx: &Ctx, stop: &AtomicBool) {
    let start = Instant::now();
    let spin = job.thinktime_spin.unwrap_or_default().min(think);
    while start.elapsed() < spin {
        std::hint::spin_loop();
    }
    prog.wait(ctx.t0, Instant::now(), start + think, stop);
}

/// fio's `nice=`, `prioclass=`, `prio=` for this worker thread.
fn set_priority(job: &Job) -> Result<()> {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::id_t;
    if let Some(n) = job.nice {
        // SAFETY: setpriority on our own thread (Linux: per thread).
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, n) } != 0 {
            return Err(Error::usage(format!(
                "job {}: nice={n}: {} (a negative niceness needs root or CAP_SYS_NICE)",
                job.name,
                std::io::Error::last_os_error()
            )));
        }
    }
    if job.ioprio.0.is_some() || job.ioprio.1.is_some() {
        // fio's default class is best-effort (2), level 4.
        let (class, level) = (job.ioprio.0.unwrap_or(2), job.ioprio.1.unwrap_or(4));
        const IOPRIO_WHO_PROCESS: libc::c_long = 1;
        let value = libc::c_long::from(class << 13 | level);
        // SAFETY: ioprio_set on our own thread with a plain integer value.
        let r = unsafe {
            libc::syscall(
                libc::SYS_ioprio_set,
                IOPRIO_WHO_PROCESS,
                tid as libc::c_long,
                value,
            )
        };
        if r != 0 {
            return Err(Error::usage(format!(
                "job {}: prioclass={class} prio={level}: {} (the real-time class needs root)",
                job.name,
                std::io::Error::last_os_error()
            )));
        }
    }
    Ok(())
}

/// Why the job fails when blocks did not verify, naming the first bad one.
fn verify_failure(vs: &VerifyReport, job: &Job, path: &str) -> Option<String> {
    (vs.bad > 0).then(|| {
        format!(
            "job {}: verify failed on {}: {} bad block{} of {} checked; first: {}{}",
            job.name,
            path,
            vs.bad,
            if vs.bad == 1 { "" } else { "s" },
            vs.blocks,
            vs.first_bad.as_deref().unwrap_or("?"),
            if vs.dumped.is_empty() {
                String::new()
            } else {
                format!(" (dumped to {})", vs.dumped.join(" and "))
            }
        )
    })
}

/// The caveats of a finished job: options that did nothing, and runs too
/// short for their figures to be trusted (not said of a failed job: its
/// error says more; an interrupted one is not told to raise size=).
fn job_warnings(
    job: &Job,
    sync_engine: bool,
    ios: u64,
    runtime_ns: u64,
    partial: bool,
    failed: bool,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if job.ioengine == IoEngine::Null && ios > 0 && runtime_ns > 0 {
        warnings.push(format!(
            "ioengine=null moves no data: its {:.0} ns per I/O is xferbench's own cost (worker loop, clock, recorder), the floor under every engine",
            runtime_ns as f64 / ios as f64
        ));
    }
    if sync_engine && job.iodepth > 1 {
        let fix = match job.ioengine {
            // fio's net engines are synchronous too: a socket is one stream.
            IoEngine::Net | IoEngine::NetSplice => {
                "as in fio, a socket carries one block at a time"
            }
            _ => "use ioengine=io_uring for a queue",
        };
        warnings.push(format!(
            "iodepth={} has no effect with ioengine={} (one I/O at a time); {fix}",
            job.iodepth,
            job.ioengine.name()
        ));
    }
    if let Some(m) = job.openfiles.filter(|&m| m < job.nrfiles) {
        warnings.push(format!(
            "openfiles={m}: at most {m} of the {} files are served at once, in fio's order, but every file is opened before timing starts rather than opened and closed as the job goes",
            job.nrfiles
        ));
    }
    if job.verify_only {
        warnings.push(
            "verify_only: the writes were skipped; the figures are the reads that checked what an earlier run wrote".into(),
        );
    }
    if job.verify_backlog > 0 && job.rw.writes() && job.do_verify {
        warnings.push(format!(
            "verify_backlog={}: the write figures include the pauses to read back and check (verify.readback_s says how long)",
            job.verify_backlog
        ));
    }
    if failed || job.ioengine == IoEngine::Cpuio {
        return warnings;
    }
    if ios < 100 && !partial {
        warnings.push(format!(
            "only {ios} I/Os: too few for stable bandwidth or tail latency; raise size= or use time_based with runtime="
        ));
    } else if runtime_ns < 100_000_000 {
        warnings.push(format!(
            "ran for {:.1} ms: startup and timer noise matter at this length; raise size= or use time_based",
            runtime_ns as f64 / 1e6
        ));
    }
    warnings
}

/// Records a bad block of file `path`: the first is described (naming
/// its file when the job has several) and dumped if asked.
fn note_bad(vs: &mut VerifyReport, bad: &verify::BadBlock, job: &Job, path: &str, data: &[u8]) {
    vs.bad += 1;
    if vs.first_bad.is_some() {
        return;
    }
    vs.first_bad = Some(if job.filenames.is_empty() {
        bad.to_string()
    } else {
        format!("{bad} in {path}")
    });
    if job.verify_dump {
        let base = Path::new(path)
            .file_name()
            .map_or_else(|| "target".into(), |s| s.to_string_lossy().into_owned());
        for (suffix, bytes) in [("received", data), ("expected", &bad.expected_block[..])] {
            let name = format!("{base}.{}.{suffix}", bad.offset);
            match std::fs::write(&name, bytes) {
                Ok(()) => vs.dumped.push(name),
                Err(e) => eprintln!("xferbench: warning: verify_dump: cannot write {name}: {e}"),
            }
        }
    }
}

/// Restricts this thread to `cpus`.
fn pin_to(cpus: &[usize]) -> std::result::Result<(), String> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET bounds-checks.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c >= libc::CPU_SETSIZE as usize {
            return Err(format!("cpu {c} is out of range"));
        }
        // SAFETY: c < CPU_SETSIZE.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: set is a valid cpu_set_t for this thread.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        return Err(format!(
            "{} (allowed here: {})",
            std::io::Error::last_os_error(),
            crate::measure::placement::compact(&crate::measure::placement::allowed_cpus())
        ));
    }
    Ok(())
}

/// Groups' aggregates, in group order.
fn groups(results: &[JobResult], recs: &[Recorded], sweep_bs: Option<u64>) -> Vec<GroupResult> {
    let mut ids: Vec<u32> = results.iter().map(|r| r.groupid).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter()
        .map(|g| {
            let members: Vec<usize> = (0..results.len())
                .filter(|&i| results[i].groupid == g)
                .collect();
            let first = &results[members[0]];
            let timeline = Timeline::merge(
                &members
                    .iter()
                    .map(|&i| &recs[i].timeline)
                    .collect::<Vec<_>>(),
            );
            let dir = |d: usize| {
                let mut merged = Recorder::new();
                let mut bytes = 0;
                let mut bws = Vec::new();
                let mut runs = Vec::new();
                for &i in &members {
                    let s = match d {
                        0 => &results[i].read,
                        1 => &results[i].write,
                        _ => &results[i].trim,
                    };
                    if s.total_ios == 0 {
                        continue;
                    }
                    merged.merge(&recs[i].recs[d]);
                    bytes += s.io_bytes;
                    bws.push(s.bw_bytes);
                    runs.push(s.runtime_ns);
                }
                let longest = runs.iter().copied().max().unwrap_or(0);
                GroupDir {
                    agg: DirStats::of(&merged, bytes, longest).with(timeline.spread(d, &merged)),
                    min_bw_bytes: bws.iter().copied().min().unwrap_or(0),
                    max_bw_bytes: bws.iter().copied().max().unwrap_or(0),
                    min_runtime: runs.iter().copied().min().unwrap_or(0).div_ceil(1_000_000),
                    max_runtime: longest.div_ceil(1_000_000),
                }
            };
            GroupResult {
                groupid: g,
                sweep_bs,
                jobname: first.jobname.clone(),
                jobs: members.len() as u32,
                group_reporting: members.iter().any(|&i| results[i].group_reporting),
                error: members.iter().map(|&i| results[i].error).max().unwrap_or(0),
                read: dir(0),
                write: dir(1),
                trim: dir(2),
            }
        })
        .collect()
}

/// One sweep row: all jobs of a block size.
fn sweep_row(bs: u64, results: &[JobResult], recs: &[Recorded]) -> SweepRow {
    let mut merged = Recorder::new();
    for r in recs {
        for d in &r.recs {
            merged.merge(d);
        }
    }
    let io_bytes: u64 = results
        .iter()
        .map(|r| r.read.io_bytes + r.write.io_bytes + r.trim.io_bytes)
        .sum();
    let ios: u64 = results.iter().map(|r| r.total_ios()).sum();
    let start = results.iter().map(|r| r.start_ns).min().unwrap_or(0);
    let end = results.iter().map(|r| r.end_ns).max().unwrap_or(0);
    let wall_ns = end.saturating_sub(start);
    let secs = wall_ns as f64 / 1e9;
    SweepRow {
        bs,
        jobs: results.len() as u32,
        io_bytes,
        ios,
        wall_ns,
        bw_bytes: if secs > 0.0 {
            io_bytes as f64 / secs
        } else {
            0.0
        },
        iops: if secs > 0.0 { ios as f64 / secs } else { 0.0 },
        clat_p50_ns: merged.quantile(0.5),
        clat_p99_ns: merged.quantile(0.99),
        errors: results.iter().filter(|r| r.error != 0).count() as u32,
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

    #[test]
    fn stall_is_counted_from_the_end_of_a_deliberate_wait() {
        let s = 1_000_000_000u64;
        let limit = Duration::from_secs(20);
        let p = JobProgress::default();
        // Not started: never stalled.
        assert!(!stalled(p.quiet_since(), 100 * s, limit));
        p.last_ns.store(s, Ordering::Relaxed);
        assert!(!stalled(p.quiet_since(), 20 * s, limit));
        assert!(stalled(p.quiet_since(), 22 * s, limit));
        // Rate-limited: the next I/O is due at 31 s; waiting is not a stall,
        // and the limit runs from the end of the wait.
        p.wait_until_ns.store(31 * s, Ordering::Relaxed);
        assert!(!stalled(p.quiet_since(), 25 * s, limit));
        assert!(!stalled(p.quiet_since(), 50 * s, limit));
        assert!(stalled(p.quiet_since(), 52 * s, limit));
        // A later completion moves it on again.
        p.last_ns.store(60 * s, Ordering::Relaxed);
        assert!(!stalled(p.quiet_since(), 79 * s, limit));
        assert!(stalled(p.quiet_since(), 81 * s, limit));
    }
}
