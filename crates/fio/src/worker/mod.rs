//! One job's thread, as fio's `thread_main`: a `Worker` holds the job's
//! state in fields, and its methods are fio's pieces kept apart — setting
//! up (`setup.rs`), issuing (`issue.rs`, fio's io_u filling), reaping and
//! pacing (`complete.rs`, fio's `do_io` loop body), checking what was
//! written (`verify.rs`, fio's `do_verify`) and the account of the run
//! (`finish.rs`). What it returns is this crate's own [`JobRun`]: the
//! caller (the library's `stream` experiment) turns it into a result.

mod complete;
mod finish;
mod issue;
mod setup;
pub mod tuning;
mod verify;

use crate::blocksizes::Extents;
use crate::engine::{self, Accounting, Dir, Done, Engine, IoMemory, Target, TargetKind};
use crate::error::Result;
use crate::files::FileSet;
use crate::intervals::{Intervals, Timeline};
use crate::job::{Completion, ExitWhat, IoMem, Job};
use crate::measure::stats::Recorder;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A job ready to run: options final, target resolved.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub job: Job,
    /// The filename to open (after `--map`); the first of several.
    pub path: String,
    pub mapped_from: Option<String>,
    /// Every file of a job with several (`nrfiles`, `filename=a:b`): the
    /// name to open and what `--map` rewrote, if it did; empty for one.
    pub more: Vec<(String, Option<String>)>,
    pub transport: Option<crate::transport::Spec>,
    /// Where a net job's socket goes (`ioengine=net`).
    pub net: Option<crate::net::Endpoint>,
    /// Indices (into this sweep point's jobs) that must finish first.
    pub after: Vec<usize>,
    /// An I/O job that cpuio jobs run beside (it does not wait for one).
    pub beside_cpuio: bool,
}

impl Prepared {
    /// The job's file for messages: its path, or how many and the first.
    pub fn shown(&self) -> String {
        match self.more.len() {
            0 | 1 => self.path.clone(),
            n => format!("its {n} files (like {})", self.path),
        }
    }

    /// The names to open: the one path, or every file of the job.
    pub fn paths(&self) -> Vec<String> {
        if self.more.is_empty() {
            vec![self.path.clone()]
        } else {
            self.more.iter().map(|m| m.0.clone()).collect()
        }
    }
}

/// What every worker of a run shares.
pub struct Shared {
    pub timeout: Duration,
    /// This executable: a transport's peer is a child running it.
    pub exe: std::path::PathBuf,
    pub t0: Instant,
    /// `--allow-large-layout`.
    pub allow_large_layout: bool,
    /// Set when an `exitall` job ends.
    pub ending: Ending,
    /// I/O jobs of the running set that cpuio jobs run beside, not yet done.
    pub io_left: Arc<AtomicUsize>,
}

/// Jobs ended early by an `exitall` job (fio's `exit_what=`).
pub struct Ending(AtomicU64);

impl Ending {
    const NONE: u64 = u64::MAX;
    const ALL: u64 = u64::MAX - 1;

    /// Not `Default`: a zero would read as "group 0 is ending".
    #[allow(clippy::new_without_default)]
    pub fn new() -> Ending {
        Ending(AtomicU64::new(Self::NONE))
    }

    /// `job` has ended: stop the others its `exit_what` names.
    pub fn end(&self, job: &Job, failed: bool) {
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
    pub fn stops(&self, job: &Job) -> bool {
        match self.0.load(Ordering::Relaxed) {
            Self::NONE => false,
            Self::ALL => true,
            g => g == u64::from(job.group),
        }
    }
}

/// A job's progress, read by the coordinator (its own cache line: the
/// worker writes it on every completion).
#[repr(align(128))]
#[derive(Default)]
pub struct Progress {
    pub bytes: AtomicU64,
    /// ns since t0 of the last completion, to tell a hung job from a slow one.
    pub last_ns: AtomicU64,
    /// ns since t0 at which the job's current (or last) deliberate wait ends
    /// — the rate limiter holding the next I/O until it is due. Written once
    /// per wait, never per I/O; a job waiting by design is not stuck.
    pub wait_until_ns: AtomicU64,
}

impl Progress {
    /// The time (ns since t0) from which a job with nothing completed is
    /// stalled: its last completion, or the end of its last deliberate wait,
    /// whichever is later (0: the job has not started its I/O loop).
    pub fn quiet_since(&self) -> u64 {
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
    pub fn wait(&self, t0: Instant, now: Instant, until: Instant, stop: &AtomicBool) {
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
pub fn stalled(since: u64, now: u64, limit: Duration) -> bool {
    since > 0 && now.saturating_sub(since) > limit.as_nanos() as u64
}

/// What a job recorded beside its figures: what reporting groups and
/// sweeps pool across jobs.
pub struct Recorded {
    /// Every I/O's latency: reads, writes, trims.
    pub recs: [Recorder; engine::DIRS],
    /// The timed span cut into intervals.
    pub timeline: Timeline,
}

/// What verification found, kept here rather than as the library's report
/// so this crate stays below the library.
#[derive(Clone, Debug, Default)]
pub struct VerifyTally {
    /// The `verify=` kind's name.
    pub kind: &'static str,
    pub blocks: u64,
    pub bad: u64,
    pub first_bad: Option<String>,
    pub readback_s: Option<f64>,
    pub backlog: Option<u64>,
    pub pattern: Option<String>,
    pub dumped: Vec<String>,
}

/// One file of a job with several.
#[derive(Clone, Debug)]
pub struct FileInfo {
    pub filename: String,
    pub mapped_from: Option<String>,
    pub offset: u64,
    pub size: u64,
    pub prepared: Option<String>,
    /// I/Os issued to it, ramp included.
    pub ios: u64,
}

/// A finished job, as the worker measured it. The job's own options are in
/// its [`Prepared`]; this is what running it found.
pub struct JobRun {
    /// Why the job failed, if it did.
    pub failure: Option<String>,
    /// Bytes moved each way in the timed span (reads, writes, trims).
    pub bytes: [u64; engine::DIRS],
    /// What steady-state detection and the latency target found.
    pub tuned: tuning::Tuned,
    /// The timed span, ns.
    pub runtime_ns: u64,
    pub target: Option<TargetKind>,
    pub prepared: Option<String>,
    pub files: Vec<FileInfo>,
    pub file_service_type: Option<String>,
    /// The job's region: its start and length in the (first) target.
    pub offset: u64,
    pub size: u64,
    /// I/Os in flight at most (1 for a synchronous engine).
    pub iodepth: u32,
    pub iomem: IoMem,
    pub completion: Completion,
    pub completion_detail: String,
    pub device: Option<serde_json::Value>,
    /// Start and end of the timed span, ns since the run's t0.
    pub start_ns: u64,
    pub end_ns: u64,
    pub ramp_ios: u64,
    pub verify: Option<VerifyTally>,
    /// Stopped (Ctrl-C) before the job finished.
    pub partial: bool,
    pub warnings: Vec<String>,
    pub recorded: Recorded,
}

/// Runs one job on this thread: opens its target, runs it, then the
/// verify read-back.
pub fn run(p: &Prepared, shared: &Shared, prog: &Progress, stop: &AtomicBool) -> Result<JobRun> {
    Worker::open(p, shared, prog, stop)?.drive()
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

/// How much the job does: its limits in I/Os and bytes.
struct Totals {
    /// I/Os to issue (u64::MAX: bounded otherwise).
    ios: u64,
    /// Bytes to issue (mixed sizes end on bytes, as fio's io_size).
    bytes: u64,
    /// trimwrite: each block trimmed, then written — two I/Os, one offset.
    per_block: u64,
}

/// What the issuing side has done so far.
struct Issued {
    count: u64,
    bytes: u64,
    writes: u64,
    /// trimwrite: the (file, offset) of the pair's trim, for its write.
    pair: (usize, u64),
    /// The last pass seen: a new one invalidates the files again.
    seen_pass: u64,
    /// The I/O count at the last thinktime pause.
    think_done: u64,
    /// The random stream for rwmix and Poisson gaps.
    rng: u64,
}

/// The I/O slots: which are free, what is in each, and completions reaped.
struct Queue {
    depth: usize,
    /// Each buffer holds the longest I/O (`bs`, or the largest of a mix).
    bs: usize,
    free: Vec<usize>,
    flights: Vec<Option<Flight>>,
    done: Vec<Done>,
    inflight: usize,
}

/// The verify state of a job with `verify=`.
struct Checking {
    spec: crate::verify::Spec,
    tally: VerifyTally,
    /// A reader checks every block it reads.
    reads: bool,
    /// verify_backlog: a writer stops every this many written blocks to
    /// check them (0: only after the write phase).
    backlog: u64,
    /// (file, offset from its region's start, length) of writes to check.
    unchecked: Vec<(usize, u64, u64)>,
    /// Mixed sizes: what this pass wrote, for the read-back (a fixed size's
    /// blocks are a function of their index instead).
    written: Vec<(usize, u64, u64)>,
    log_writes: bool,
    last_pass: u64,
    want_check: bool,
}

/// How the job is ending.
#[derive(Default)]
struct End {
    stopping: bool,
    /// Stopped by the run's stop (Ctrl-C), not by the job itself.
    partial: bool,
    /// fill_device: the writes reached a full device or file system.
    filled: bool,
    failure: Option<String>,
    /// The engine failed (a device's error, a hang it timed out): the job
    /// ends there, with its figures so far; nothing more is asked of it.
    broken: bool,
}

/// The job's clocks: ramp, the timed span, its deadline and pacing.
struct Clock {
    ramping: bool,
    ramp_end: Instant,
    measure_start: Instant,
    /// measure_start as ns since t0: the watchdog's clock is then the span's
    /// plus a constant, not a second conversion per completion.
    measure_from_t0: u64,
    /// Bytes done so far, ramp included (what the progress bar shows); this
    /// worker is the only writer, so a store replaces an atomic add.
    progress_bytes: u64,
    /// I/Os done so far, ramp included (steady state and the latency
    /// target count them).
    progress_ios: u64,
    ramp_ios: u64,
    deadline: Option<Instant>,
    /// ratemin's window: its start and the bytes moved by then.
    window: (Instant, u64),
    /// rate with Poisson gaps: when the next I/O is due.
    next_due: Instant,
}

/// One job's worker: its engine, buffers, files and every counter of its
/// loop.
struct Worker<'a> {
    p: &'a Prepared,
    job: &'a Job,
    shared: &'a Shared,
    prog: &'a Progress,
    stop: &'a AtomicBool,
    /// The engine before the targets and buffers, as fields drop in order:
    /// an asynchronous engine waits in its drop for I/O still in flight
    /// into them.
    eng: Box<dyn Engine>,
    targets: Vec<Target>,
    mem: IoMemory,
    sync_engine: bool,
    /// What a completion counts for: bytes, an operation, or nothing (cpuio).
    acct: Accounting,
    files: FileSet,
    /// The region of the first file and the total: the result's offset, size.
    region: (u64, u64),
    /// Mixed block sizes: each I/O draws its length and Extents places it.
    extents: Option<Extents>,
    verify: Option<Checking>,
    totals: Totals,
    issued: Issued,
    queue: Queue,
    since_fsync: u32,
    want_sync: bool,
    end: End,
    clock: Clock,
    intervals: Intervals,
    bytes: [u64; engine::DIRS],
    tune: Tune,
}

/// The run-time tuning a job asked for (see [`tuning`]).
struct Tune {
    /// `io_submit_mode=offload` with a rate: when each I/O is due.
    sched: Option<tuning::Schedule>,
    /// `latency_target`: the queue-depth search.
    lat: Option<tuning::LatTarget>,
    /// `ss=`: steady-state detection.
    steady: Option<tuning::SteadyState>,
    /// The depth just changed: no new I/O until what is in flight is done.
    quiesce: bool,
}

impl Worker<'_> {
    /// fio's `do_io`: issue up to the queue depth, reap, account, pace —
    /// with a pause to sync or check a backlog when the queue is empty.
    fn drive(mut self) -> Result<JobRun> {
        self.prog.last_ns.store(
            self.shared.t0.elapsed().as_nanos() as u64 | 1,
            Ordering::Relaxed,
        );
        loop {
            self.issue()?;
            if self.queue.inflight == 0 {
                if self.want_sync {
                    self.sync()?;
                    continue;
                }
                if self.verify.as_ref().is_some_and(|v| v.want_check) {
                    self.check_backlog()?;
                    continue;
                }
                break;
            }
            if self.end.broken {
                break;
            }
            let Some(now) = self.reap()? else { break };
            if !self.after_reap(now) {
                continue;
            }
            self.pace(now);
        }
        self.finish()
    }
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

/// An engine call's failure as the job's: a run error ends the job with
/// its figures so far (true, the failure noted); a usage error or an
/// interruption goes on as it is (the job cannot run as written).
fn engine_failed(r: Result<()>, job: &Job, failure: &mut Option<String>) -> Result<bool> {
    match r {
        Ok(()) => Ok(false),
        Err(e @ crate::error::Error::Run(_)) => {
            failure.get_or_insert_with(|| format!("job {}: {e}", job.name));
            Ok(true)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job from job-file text, readied as a caller of the crate would.
    fn prepared(text: &str) -> Prepared {
        let file = crate::jobfile::parse(text, "test", &|_| None, &[]).unwrap();
        let mut job = file.jobs.into_iter().next().unwrap();
        job.resolve_block_sizes().unwrap();
        engine::check(&job).unwrap();
        Prepared {
            path: job.filename.clone().unwrap(),
            job,
            mapped_from: None,
            more: Vec::new(),
            transport: None,
            net: None,
            after: Vec::new(),
            beside_cpuio: false,
        }
    }

    fn shared() -> Shared {
        Shared {
            timeout: Duration::from_secs(10),
            exe: std::env::current_exe().unwrap(),
            t0: Instant::now(),
            allow_large_layout: false,
            ending: Ending::new(),
            io_left: Arc::default(),
        }
    }

    #[test]
    fn a_job_runs_without_the_library_and_counts_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("w");
        let p = prepared(&format!(
            "[w]\nfilename={}\nrw=write\nbs=4k\nsize=256k\nverify=crc32c\nverify_backlog=16\nfsync=8\n",
            f.display()
        ));
        let (shared, prog) = (shared(), Progress::default());
        let run = run(&p, &shared, &prog, &AtomicBool::new(false)).unwrap();
        assert_eq!(run.failure, None);
        assert_eq!(run.bytes, [0, 256 << 10, 0]);
        assert_eq!(run.recorded.recs[1].count(), 64);
        let v = run.verify.unwrap();
        // Every block written was read back and checked, 16 at a time.
        assert_eq!(
            (v.kind, v.blocks, v.bad, v.backlog),
            ("crc32c", 64, 0, Some(16))
        );
        assert_eq!(prog.bytes.load(Ordering::Relaxed), 256 << 10);
        assert!(!run.partial);
        // A reader then checks what the writer left.
        let r = prepared(&format!(
            "[r]\nfilename={}\nrw=randread\nbs=4k\nsize=256k\nverify=crc32c\n",
            f.display()
        ));
        let run = super::run(&r, &shared, &Progress::default(), &AtomicBool::new(false)).unwrap();
        assert_eq!(run.failure, None);
        assert_eq!(run.bytes, [256 << 10, 0, 0]);
        assert_eq!(run.verify.map(|v| (v.blocks, v.bad)), Some((64, 0)));
    }

    #[test]
    fn a_stopped_run_is_partial_and_ramp_ios_are_not_recorded() {
        let p = prepared("[n]\nfilename=x\nioengine=null\nrw=read\nbs=4k\nsize=1m\nramp_time=1h\n");
        let run = run(&p, &shared(), &Progress::default(), &AtomicBool::new(false)).unwrap();
        // The ramp outlasts the job: everything it did was ramp.
        assert_eq!(run.ramp_ios, 256);
        assert_eq!(run.bytes, [0, 0, 0]);
        let stop = AtomicBool::new(true);
        let p = prepared("[n]\nfilename=x\nioengine=null\nrw=read\nbs=4k\nsize=1m\n");
        let run = super::run(&p, &shared(), &Progress::default(), &stop).unwrap();
        assert!(run.partial);
    }

    #[test]
    fn stall_is_counted_from_the_end_of_a_deliberate_wait() {
        let s = 1_000_000_000u64;
        let limit = Duration::from_secs(20);
        let p = Progress::default();
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
