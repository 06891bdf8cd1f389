//! One job's thread, as fio's `thread_main`: a `Worker` holds the job's
//! state in fields, and its methods are fio's pieces kept apart — setting
//! up (`setup.rs`), issuing (`issue.rs`, fio's io_u filling), reaping and
//! pacing (`complete.rs`, fio's `do_io` loop body), checking what was
//! written (`verify.rs`, fio's `do_verify`) and the account of the run
//! (`finish.rs`). What it returns is this crate's own [`JobRun`]: the
//! caller (the library's `stream` experiment) turns it into a result.

mod complete;
mod finish;
mod flow;
mod issue;
mod prio;
mod setup;
pub mod tuning;
mod verify;

pub use flow::Flows;
pub use prio::PrioRecs;

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
    /// The run's flows (`flow_id=`/`flow=`), shared by its workers.
    pub flows: Flows,
}

/// Jobs ended early by an `exitall` job (fio's `exit_what=`), with fio's
/// rules: `exitall` in any job makes every job's end stop others (fio's
/// flag is the process's); what it stops is the ending job's `exit_what`:
/// its reporting group (`group`, started or not), the jobs running at that
/// moment in any group (`stonewall`; the jobs after the next stonewall still
/// run), or everything (`all`). `exitall_on_error` does the same for a job
/// that failed.
pub struct Ending {
    /// Set once anything was ended: the one load on the per-I/O path.
    any: AtomicBool,
    /// `exit_what=all`: every job, running or not yet started.
    all: AtomicBool,
    /// `exit_what=group`: the reporting groups whose jobs stop.
    groups: std::sync::Mutex<Vec<u32>>,
    /// `exit_what=stonewall` endings so far: a job that began its I/O
    /// before the latest one stops.
    walls: AtomicU64,
    /// Some job of the running set has `exitall`.
    exitall: AtomicBool,
}

impl Ending {
    /// Not `Default`, to be read with [`reset`](Ending::reset).
    #[allow(clippy::new_without_default)]
    pub fn new() -> Ending {
        Ending {
            any: AtomicBool::new(false),
            all: AtomicBool::new(false),
            groups: std::sync::Mutex::new(Vec::new()),
            walls: AtomicU64::new(0),
            exitall: AtomicBool::new(false),
        }
    }

    /// A new set of jobs runs (a sweep's next point): nothing ended yet.
    pub fn reset<'j>(&self, jobs: impl IntoIterator<Item = &'j Job>) {
        self.any.store(false, Ordering::Relaxed);
        self.all.store(false, Ordering::Relaxed);
        self.groups
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.walls.store(0, Ordering::Relaxed);
        let exitall = jobs.into_iter().any(|j| j.exitall);
        self.exitall.store(exitall, Ordering::Relaxed);
    }

    /// A job begins its I/O: what it passes to [`stops`](Ending::stops).
    pub fn begin(&self) -> u64 {
        self.walls.load(Ordering::Acquire)
    }

    /// `job` has ended: stop the others its `exit_what` names.
    pub fn end(&self, job: &Job, failed: bool) {
        let exitall = job.exitall || self.exitall.load(Ordering::Relaxed);
        if !(exitall || failed && job.exitall_on_error) {
            return;
        }
        match job.exit_what {
            ExitWhat::All => self.all.store(true, Ordering::Relaxed),
            ExitWhat::Group => self
                .groups
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(job.group),
            ExitWhat::Stonewall => {
                self.walls.fetch_add(1, Ordering::AcqRel);
            }
        }
        self.any.store(true, Ordering::Release);
    }

    /// Whether `job`, which began its I/O at `began` (from
    /// [`begin`](Ending::begin); `u64::MAX` for one not started yet), is
    /// to stop now.
    pub fn stops(&self, job: &Job, began: u64) -> bool {
        if !self.any.load(Ordering::Acquire) {
            return false;
        }
        self.all.load(Ordering::Relaxed)
            || (began != u64::MAX && self.walls.load(Ordering::Acquire) > began)
            || self
                .groups
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&job.group)
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
    /// A status report (fio's `--status-interval`) asks for the job's
    /// figures so far: the worker, seeing it at its next reap, leaves a
    /// [`Snapshot`] in `snapshot` (a load per reap; the copy is made only
    /// when asked).
    pub want_snapshot: std::sync::atomic::AtomicBool,
    pub snapshot: std::sync::Mutex<Option<Snapshot>>,
}

/// A running job's figures so far, for a status report: what it recorded
/// and moved in its timed span up to `runtime_ns`.
pub struct Snapshot {
    pub bytes: [u64; engine::DIRS],
    pub runtime_ns: u64,
    /// Start of the timed span and the snapshot's time, ns since t0.
    pub start_ns: u64,
    pub end_ns: u64,
    pub recorded: Recorded,
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
        self.wait_while(t0, now, until, || stop.load(Ordering::Relaxed));
    }

    /// [`wait`](Progress::wait), ended early as soon as `ended` says so (a
    /// stop, or an `exitall` job ending this one).
    pub fn wait_while(&self, t0: Instant, now: Instant, until: Instant, ended: impl Fn() -> bool) {
        if until <= now {
            return;
        }
        self.wait_until_ns.store(
            until.duration_since(t0).as_nanos() as u64,
            Ordering::Relaxed,
        );
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || ended() {
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
    /// Latency per I/O priority (`cmdprio_*`), per direction.
    pub prios: PrioRecs,
    /// The job's own I/O priority (`prioclass`/`prio`, 0 for neither): a
    /// reporting group whose members differ in priority splits by it, and
    /// a member without `cmdprio_*` counts all its I/Os under it (fio).
    pub ioprio: u16,
    /// What fio's JSON reports beside: slat, lat, rate samples, depths,
    /// syncs, CPU usage.
    pub fio: crate::fiostats::FioStats,
}

/// What a verify pass found: the worker fills it in, the job's result
/// carries it as it is.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct VerifyReport {
    /// The `verify=` kind (`md5`, `xxhash`, `meta`, `pattern`…).
    #[serde(deserialize_with = "crate::words::de_interned")]
    pub kind: crate::words::Interned,
    /// Blocks checked; `bad` of them failed.
    pub blocks: u64,
    /// Blocks whose contents did not match what was written.
    pub bad: u64,
    /// The first bad block, described.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_bad: Option<String>,
    /// Seconds a writer spent reading back and checking: after its write
    /// phase (not in its bandwidth), or with `backlog` also during it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readback_s: Option<f64>,
    /// `verify_backlog=`: the writer checked every this many blocks, so
    /// part of `readback_s` lies inside its write figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog: Option<u64>,
    /// `verify_pattern=`, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Files `verify_dump` wrote.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dumped: Vec<String>,
}

/// One file of a job with several.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FileResult {
    /// The path opened (after `--map`).
    pub filename: String,
    /// The name the job gave, when `--map` replaced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapped_from: Option<String>,
    /// Where the file's region starts, bytes.
    pub offset: u64,
    /// The region's length, bytes.
    pub size: u64,
    /// What was done to the file before the job ran, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepared: Option<String>,
    /// I/Os issued to this file (ramp included), as `file_service_type` chose.
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
    pub files: Vec<FileResult>,
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
    pub verify: Option<VerifyReport>,
    /// Stopped (Ctrl-C) before the job finished.
    pub partial: bool,
    pub warnings: Vec<String>,
    pub recorded: Recorded,
}

/// Gives this thread a file descriptor table of its own, as fio's job
/// processes have: call it first on a thread made for one job, which opens,
/// uses and closes all its descriptors itself and hands none to another
/// thread. While the table is shared (every thread of a process shares it),
/// each `pread`/`pwrite` takes and drops a reference on its file (an atomic
/// pair in `fdget`/`fput`, ~5% of a 4 KiB read from tmpfs, measured against
/// fio); a private table lets the kernel skip that. Descriptors open at the
/// call stay usable here (copies); those opened later on either side are not
/// seen by the other. Only for the engines whose descriptors no thread
/// outside the job uses: not `posixaio` (glibc runs POSIX AIO on helper
/// threads shared by the whole process, started with the process's table),
/// nor `transport` (a device plugin may keep process-wide threads of its
/// own), nor `exec`/`cpuio`, which do no I/O. Best effort: where it is
/// refused (a seccomp filter), the shared table is kept.
pub fn private_fd_table(job: &Job) {
    use crate::job::IoEngine as E;
    if !matches!(
        job.ioengine,
        E::Sync
            | E::Psync
            | E::Vsync
            | E::Pvsync
            | E::Pvsync2
            | E::IoUring
            | E::Libaio
            | E::Mmap
            | E::Falloc
            | E::Ftruncate
            | E::Null
            | E::Filecreate
            | E::Filestat
            | E::Filedelete
            | E::Net
            | E::NetSplice
    ) {
        return;
    }
    // SAFETY: unshare(CLONE_FILES) only copies this thread's descriptor
    // table; it touches no memory of ours.
    let _ = unsafe { libc::unshare(libc::CLONE_FILES) };
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
    /// When its preparation ended (fio's `start_time`: offset and length
    /// drawn, buffer refilled), or when it was due on an offloaded job's
    /// schedule: the start of its latency and submission latency.
    t0: Instant,
    /// The I/O's priority (kernel ioprio value: class << 13 | level), for
    /// its latency record and logs.
    prio: u16,
    /// When the call that submitted it returned (fio's `issue_time`; `t0`
    /// for an engine that does the I/O as it is queued, and on an
    /// offloaded job's schedule): the start of its completion latency.
    sub: Instant,
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
    /// trimwrite: the (file, offset, length) of the pair's trim, for its
    /// write.
    pair: (usize, u64, u64),
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
    /// How the queue is fed and drained (fio's `iodepth_batch_*`,
    /// `iodepth_low`).
    batches: crate::job::Batches,
    /// Where the engine submits: where each I/O's `slat` ends.
    submit: engine::Submit,
    /// I/Os queued since the last commit (fio's `io_u_queued`).
    uncommitted: usize,
    /// Their slots, for an engine that submits at the commit: each gets
    /// the commit's return as its submission time.
    fresh: Vec<usize>,
    /// `serialize_overlap`: the next I/O, drawn but overlapping one in
    /// flight (its due time if scheduled, direction, file, offset in the
    /// file's region and length), issued once that one is done.
    held: Option<(Option<Instant>, Dir, usize, u64, u64)>,
}

/// The verify state of a job with `verify=`.
struct Checking {
    spec: crate::verify::Spec,
    tally: VerifyReport,
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
    /// A job that both reads and writes (one block size): the (file,
    /// offset) of each write, read back once each after the job's I/O as
    /// fio does (its reads along the way are not checked: they may find
    /// blocks not yet written). Room for twice the blocks there are (up to
    /// 2^21 entries) is reserved before the clock starts, and a full list is
    /// deduplicated in place: no allocation per write below that size.
    rw_blocks: Option<Vec<(usize, u64)>>,
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
    /// rate: when the rate's count began, and the bytes issued by then.
    rate_from: (Instant, u64),
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
    /// When the job began its I/O, for [`Ending::stops`].
    began: u64,
    /// The engine before the targets and buffers, as fields drop in order:
    /// an asynchronous engine waits in its drop for I/O still in flight
    /// into them.
    eng: Box<dyn Engine>,
    targets: Vec<Target>,
    mem: IoMemory,
    sync_engine: bool,
    /// The engine times its completions itself ([`Engine::completed_at`]).
    stamped: bool,
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
    fio: crate::fiostats::FioStats,
    bytes: [u64; engine::DIRS],
    /// fio's log files, when the job writes any.
    logs: Option<Box<crate::logs::JobLogs>>,
    /// What write buffers hold.
    content: crate::content::Content,
    /// This job's part in a flow (`flow=`), while its I/O runs.
    flow: Option<flow::Member>,
    prios: prio::Prios,
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
        self.fio.begin();
        self.prog.last_ns.store(
            self.shared.t0.elapsed().as_nanos() as u64 | 1,
            Ordering::Relaxed,
        );
        // Ended before it began (fio sets `terminate` on jobs not yet
        // started too): no I/O at all.
        if self.shared.ending.stops(self.job, self.began) {
            self.end.stopping = true;
        }
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
            self.ratemin(now);
        }
        // The flow is left with the I/O loop: the others no longer wait
        // for this job.
        self.flow = None;
        self.finish()
    }
}

/// An engine call's failure as the job's: a run error ends the job with
/// its figures so far (true, the failure noted); a usage error or an
/// interruption goes on as it is (the job cannot run as written).
fn engine_failed(r: Result<()>, job: &Job, failure: &mut Option<String>) -> Result<bool> {
    match r {
        Ok(()) => Ok(false),
        Err(e @ crate::error::Error::Run { .. }) => {
            failure.get_or_insert_with(|| format!("job {}: {e}", job.name));
            Ok(true)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod queue_tests;

#[cfg(test)]
mod tests {
    use super::*;

    /// A job from job-file text, readied as a caller of the crate would.
    pub(super) fn prepared(text: &str) -> Prepared {
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

    pub(super) fn shared() -> Shared {
        Shared {
            timeout: Duration::from_secs(10),
            exe: std::env::current_exe().unwrap(),
            t0: Instant::now(),
            allow_large_layout: false,
            ending: Ending::new(),
            io_left: Arc::default(),
            flows: Flows::default(),
        }
    }

    /// A descriptor opened on a job's thread after `private_fd_table` is
    /// not one of the process's (the table was unshared), except for the
    /// engines that must share it.
    #[test]
    fn a_file_jobs_thread_opens_descriptors_the_process_does_not_see() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        let seen_outside = |engine: &str| {
            let p = prepared(&format!(
                "[j]\nfilename={}\nioengine={engine}\nrw=read\nsize=4k\n",
                f.display()
            ));
            let path = f.clone();
            let fd = std::thread::spawn(move || {
                private_fd_table(&p.job);
                // Leaked on purpose: only its number is looked at outside.
                std::os::fd::IntoRawFd::into_raw_fd(std::fs::File::open(&path).unwrap())
            })
            .join()
            .unwrap();
            // The number may be open here as another test's descriptor
            // (tests share the process): ours only if it is the same file.
            let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&f).unwrap());
            // SAFETY: stat is plain C data (integers, timespecs): all zeroes is valid.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: fstat writes only into `st`, live and writable; a number
            // that is no longer open only makes it fail.
            let ours = unsafe { libc::fstat(fd, &mut st) } == 0 && st.st_ino == ino;
            if ours {
                // SAFETY: the number is this test's file, in the shared table.
                unsafe { libc::close(fd) };
            }
            ours
        };
        for engine in ["psync", "io_uring", "libaio", "sync"] {
            assert!(
                !seen_outside(engine),
                "{engine}: the table was not made private"
            );
        }
        assert!(
            seen_outside("posixaio"),
            "posixaio must keep the process's table"
        );
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
