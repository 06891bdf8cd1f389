//! I/O engines for `stream`: each fills in [`Engine`], as each of fio's
//! engines fills in `ioengine_ops` — queue an I/O, reap completions. The
//! job's thread (`worker/`) knows nothing of syscalls or rings.

mod cpuio;
mod exec;
mod falloc;
mod fileops;
mod libaio;
mod link;
mod memory;
mod mmap;
mod net;
mod null;
mod pool;
mod posixaio;
mod sync;
mod target;
mod trim;
mod uring;

pub use crate::job::engine_opts::{CpuMode, StatType};
pub use cpuio::CpuIo;
pub use exec::Exec;
pub use fileops::FileOps;
pub use link::{
    LinkEngine, check as check_link, device_record as link_device, spec_of as transport_spec,
};
pub use memory::IoMemory;
pub use net::Net;
pub use null::Null;
pub use pool::pooled;
pub use target::{LAYOUT, LayoutProgress, Target, TargetKind};
pub use trim::Trimmer;

use crate::error::{Error, Result};
use crate::job::{IoEngine, Job};
use std::time::{Duration, Instant};

/// Which way an I/O moves data; a trim moves none (it gives the blocks
/// back: a hole punched in a file, a discard on a block device). The
/// value is the direction's slot in the worker's figures (0, 1, 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    Read,
    Write,
    Trim,
}

impl Dir {
    /// fio's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Dir::Read => "read",
            Dir::Write => "write",
            Dir::Trim => "trim",
        }
    }
}

/// Directions a job's figures are kept for (read, write, trim).
pub const DIRS: usize = 3;

/// One I/O: `len` bytes between buffer slot `slot` and the job's file
/// `file` (its index among the job's targets; 0 for a job with one) at
/// `offset`.
#[derive(Clone, Copy, Debug)]
pub struct Op {
    pub dir: Dir,
    pub file: usize,
    pub offset: u64,
    pub len: usize,
    pub slot: usize,
    /// Start of the slot's buffer (owned by the worker's [`IoMemory`], which
    /// outlives the engine's use of it).
    pub buf: *mut u8,
    /// A priority of its own (`cmdprio_*`: the kernel's ioprio value),
    /// which libaio and io_uring pass with the I/O; None: the job's.
    pub ioprio: Option<u16>,
}

/// A finished I/O: bytes moved, or the errno it failed with.
#[derive(Clone, Copy, Debug)]
pub struct Done {
    pub slot: usize,
    pub res: std::result::Result<usize, i32>,
}

/// The table every engine fills in, as fio's `ioengine_ops`. Four methods
/// each engine writes: `queue`, `reap`, `sync` and `completion_detail`.
/// The rest have defaults that suit a synchronous engine, and an engine
/// overrides only what it does differently: submitting in batches
/// (`commit`, `submission`); what it tells the record (`completion`,
/// `device`, `warnings`, `accounting`); how the job ends (`ended`,
/// `finished`, `close`, `close_untimed`); registered buffers
/// (`register_memory`); and an offloaded job's collection (`poll`, `wait`,
/// `stamps_completions`, `completed_at`).
pub trait Engine {
    /// Starts `op` (an engine without a queue performs it at once; one with
    /// a submission step, [`Submit::Commit`], only stages it).
    fn queue(&mut self, op: Op) -> Result<()>;
    /// Submits what `queue` staged, in as few calls as the kernel takes
    /// (fio's `commit`: one `io_submit` or `io_uring_enter` per batch of
    /// `iodepth_batch_submit` I/Os); the worker ends the batch's `slat` when
    /// it returns. An I/O the kernel refuses is reported by the next reap.
    fn commit(&mut self) -> Result<()> {
        Ok(())
    }
    /// Where the engine hands an I/O over, which is where fio's `slat` ends.
    fn submission(&self) -> Submit {
        Submit::Queue
    }
    /// Waits until at least `min` I/Os have finished, or `timeout` passes
    /// with none finishing (an error naming the hang), and appends them: at
    /// most `max` where the engine collects a chosen number (fio's
    /// `iodepth_batch_complete_max`; the engines that perform the I/O in
    /// `queue` hand back what they did).
    fn reap(
        &mut self,
        min: usize,
        max: usize,
        timeout: Duration,
        out: &mut Vec<Done>,
    ) -> Result<()>;
    /// Makes written data durable (fsync / msync).
    fn sync(&mut self) -> Result<()>;
    /// How completions are awaited, for the report.
    fn completion_detail(&self) -> String;
    /// The completion mode the engine really uses, where it decides it
    /// (a transport link opened in poll mode); `None`: the job's.
    fn completion(&self) -> Option<crate::job::Completion> {
        None
    }
    /// What the device behind the engine says of itself, if anything (a
    /// plugin's name and counters), for the job's record.
    fn device(&mut self) -> Option<serde_json::Value> {
        None
    }
    /// The peer ended the stream (a net receiver saw its sender close, a
    /// sender its receiver go): the I/O that found it moved less than asked
    /// and the job ends there, not failed.
    fn ended(&self) -> bool {
        false
    }
    /// Caveats the engine learned while running (datagrams lost, a stream
    /// cut short), for the job's warnings.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
    /// Called once the worker's buffers exist, before any I/O: an engine
    /// that registers them with the kernel (io_uring `fixedbufs`) does so.
    fn register_memory(&mut self, _mem: &mut IoMemory) -> Result<()> {
        Ok(())
    }
    /// What a completed I/O counts for in the job's figures.
    fn accounting(&self) -> Accounting {
        Accounting::Bytes
    }
    /// The engine has nothing more to do (cpuio once the I/O jobs beside it
    /// are done): the worker stops queueing, as at the end of `runtime`.
    fn finished(&self) -> bool {
        false
    }
    /// The job is over: an engine with something of its own running (the
    /// exec engine's program) stops it here; its error is the job's.
    fn close(&mut self) -> Result<()> {
        Ok(())
    }
    /// Whether `close` is teardown outside the job's timed span (a
    /// transport link's close: its responder's or device's shutdown), so
    /// the job's runtime ends before it rather than after.
    fn close_untimed(&self) -> bool {
        false
    }
    /// Starts what `queue` left waiting and collects what has finished,
    /// without waiting (the offloaded submission's poll between scheduled
    /// I/Os). Engines that submit in `queue` and collect in `reap` with
    /// no wait for `min` = 0 need nothing more.
    fn poll(&mut self, out: &mut Vec<Done>) -> Result<()> {
        self.reap(0, usize::MAX, Duration::ZERO, out)
    }
    /// Collects what has completed, waiting for a first completion until
    /// `until` at most; none by then is no error (the offloaded job's wait
    /// for its next due time, so that each completion is seen as it comes
    /// rather than at the next due time). Engines that can block for a
    /// completion do; the others are polled with short naps between.
    fn wait(&mut self, until: Instant, out: &mut Vec<Done>) -> Result<()> {
        nap_between_polls(self, until, out)
    }
    /// Whether the engine times each completion itself (a submitting
    /// thread of an offloaded job, at the call's return), so that the
    /// worker asks [`Engine::completed_at`] instead of reading its clock
    /// when it collects them.
    fn stamps_completions(&self) -> bool {
        false
    }
    /// When the last I/O of `slot` completed, where the engine stamps them.
    fn completed_at(&self, _slot: usize) -> Option<Instant> {
        None
    }
}

/// [`Engine::wait`] for an engine that cannot block for a completion: a
/// poll, then a nap of up to 200 µs if it found nothing.
pub(crate) fn nap_between_polls<E: Engine + ?Sized>(
    eng: &mut E,
    until: Instant,
    out: &mut Vec<Done>,
) -> Result<()> {
    let had = out.len();
    eng.poll(out)?;
    if out.len() == had {
        let left = until.saturating_duration_since(Instant::now());
        std::thread::sleep(left.min(Duration::from_micros(200)));
    }
    Ok(())
}

/// The error of a wait that saw no I/O complete in `timeout`.
pub(crate) fn hang(timeout: Duration) -> Error {
    Error::run(format!(
        "no I/O completed within {} (target hung or far too slow); raise --timeout if this device is that slow",
        humantime::format_duration(timeout)
    ))
}

/// Where an engine hands an I/O to the kernel or device: where fio's
/// submission latency (`slat`, from the I/O's preparation) ends and its
/// completion latency (`clat`) begins, and what its submit map counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submit {
    /// In `queue` (posixaio's `aio_read`, a transport's send): as fio's
    /// engines without a commit step, each I/O is one submission and one
    /// completion of its own in the maps.
    Queue,
    /// In `commit` (libaio's `io_submit`, io_uring's `io_uring_enter`, the
    /// null engine): every I/O of the batch ends its `slat` when the call
    /// returns, and the call is one submission of that many.
    Commit,
    /// In `commit`, which does the I/O itself (vsync's `readv` of the
    /// coalesced batch): fio times no `slat` for it (a synchronous engine
    /// to fio), and `clat` runs from `queue`'s return, over the call; the
    /// call is one submission of the batch, as in fio's submit map.
    CommitUntimed,
}

/// How the worker counts an engine's completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accounting {
    /// `bs` bytes moved per I/O: bandwidth and IOPS.
    Bytes,
    /// An operation that moves no data (a file created, stat-ed, deleted):
    /// IOPS and latency, no bytes — fio's figures for its file engines.
    Ops,
    /// Nothing: a load beside the I/O jobs (cpuio), whose own account is
    /// its completion detail; it adds nothing to a group's figures.
    Nothing,
}

/// Whether the engine does one I/O at a time whatever `iodepth` says (the
/// synchronous syscalls; vsync coalesces up to `iodepth` adjacent I/Os into
/// one call, so it takes a depth).
pub fn one_at_a_time(e: IoEngine) -> bool {
    !matches!(
        e,
        IoEngine::Vsync
            | IoEngine::IoUring
            | IoEngine::Libaio
            | IoEngine::Posixaio
            | IoEngine::Null
            | IoEngine::Transport
    )
}

/// Opens the engine `job` names on `targets` (the job's files, in order;
/// an [`Op`]'s `file` indexes them), for `depth` I/Os in flight.
pub fn open(job: &Job, targets: &[Target], depth: usize) -> Result<Box<dyn Engine>> {
    if pooled(job) {
        // Each submitting thread's engine carries the fault, if any.
        return Ok(Box::new(pool::Pool::start(targets, job, depth)?));
    }
    let eng: Box<dyn Engine> = match job.ioengine {
        IoEngine::Sync
        | IoEngine::Psync
        | IoEngine::Vsync
        | IoEngine::Pvsync
        | IoEngine::Pvsync2 => Box::new(sync::SyncIo::new(targets, job, depth)),
        IoEngine::IoUring => Box::new(uring::Uring::new(targets, job, depth)?),
        IoEngine::Libaio => Box::new(libaio::Libaio::new(targets, job, depth)?),
        IoEngine::Posixaio => Box::new(posixaio::PosixAio::new(targets, job, depth)),
        IoEngine::Mmap => Box::new(mmap::Mmap::new(targets, job)?),
        IoEngine::Falloc => Box::new(falloc::Falloc::new(targets, job, false)),
        IoEngine::Ftruncate => Box::new(falloc::Falloc::new(targets, job, true)),
        e => {
            return Err(Error::usage(format!(
                "ioengine={} opens no file of its own here",
                e.name()
            )));
        }
    };
    Ok(faulted(eng))
}

/// The engine with the fault `XFERBENCH_ENGINE_FAULT` asks for, if any
/// (for tests): `hang-after:N`, the I/O after the N-th never completes, as
/// a read of a device that never answers would block in the kernel (the
/// stall watchdog's tests); `delay-us:N`, every I/O takes N µs more, a
/// slow device (the offloaded submission's tests).
pub fn faulted(eng: Box<dyn Engine>) -> Box<dyn Engine> {
    let Some((kind, n)) = std::env::var("XFERBENCH_ENGINE_FAULT").ok().and_then(|v| {
        let (k, n) = v.split_once(':')?;
        Some((k.to_string(), n.parse::<u64>().ok()?))
    }) else {
        return eng;
    };
    let (after, delay) = match kind.as_str() {
        "hang-after" => (n, Duration::ZERO),
        "delay-us" => (u64::MAX, Duration::from_micros(n)),
        _ => return eng,
    };
    Box::new(Hang {
        inner: eng,
        after,
        delay,
        queued: 0,
    })
}

/// An engine whose I/Os after the first `after` block forever in `queue`
/// (a synchronous engine stuck in a syscall), and each of which first
/// takes `delay`; the rest goes to `inner`.
struct Hang {
    inner: Box<dyn Engine>,
    after: u64,
    delay: Duration,
    queued: u64,
}

impl Engine for Hang {
    fn queue(&mut self, op: Op) -> Result<()> {
        if self.queued >= self.after {
            loop {
                std::thread::park();
            }
        }
        self.queued += 1;
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        self.inner.queue(op)
    }
    fn commit(&mut self) -> Result<()> {
        self.inner.commit()
    }
    fn submission(&self) -> Submit {
        self.inner.submission()
    }
    fn reap(
        &mut self,
        min: usize,
        max: usize,
        timeout: Duration,
        out: &mut Vec<Done>,
    ) -> Result<()> {
        self.inner.reap(min, max, timeout, out)
    }
    fn sync(&mut self) -> Result<()> {
        self.inner.sync()
    }
    fn completion_detail(&self) -> String {
        self.inner.completion_detail()
    }
    fn device(&mut self) -> Option<serde_json::Value> {
        self.inner.device()
    }
    fn ended(&self) -> bool {
        self.inner.ended()
    }
    fn warnings(&self) -> Vec<String> {
        self.inner.warnings()
    }
    fn register_memory(&mut self, mem: &mut IoMemory) -> Result<()> {
        self.inner.register_memory(mem)
    }
    fn accounting(&self) -> Accounting {
        self.inner.accounting()
    }
    fn finished(&self) -> bool {
        self.inner.finished()
    }
    fn close(&mut self) -> Result<()> {
        self.inner.close()
    }
    fn close_untimed(&self) -> bool {
        self.inner.close_untimed()
    }
    fn wait(&mut self, until: Instant, out: &mut Vec<Done>) -> Result<()> {
        self.inner.wait(until, out)
    }
    fn stamps_completions(&self) -> bool {
        self.inner.stamps_completions()
    }
    fn completed_at(&self, slot: usize) -> Option<Instant> {
        self.inner.completed_at(slot)
    }
    fn poll(&mut self, out: &mut Vec<Done>) -> Result<()> {
        self.inner.poll(out)
    }
}

/// Checks, once all of a job's options are in, that its engine options
/// belong to its engine and go together; one line naming the job and fix.
pub fn check(job: &Job) -> Result<()> {
    let name = &job.name;
    let e = job.ioengine;
    let o = &job.engine_opts;
    for given in &o.given {
        let owners = crate::job::engine_opts::owners(given);
        if !owners.contains(&e.name()) {
            return Err(Error::usage(format!(
                "job {name}: {given} is an option of ioengine={}, not of ioengine={}; drop it or change the engine",
                owners.join(" or ioengine="),
                e.name()
            )));
        }
    }
    job.cmdprio
        .check()
        .map_err(|why| Error::usage(format!("job {name}: {why}")))?;
    if job.hipri && !matches!(e, IoEngine::IoUring | IoEngine::Pvsync2) {
        return Err(Error::usage(format!(
            "job {name}: hipri is an option of io_uring (IOPOLL) and pvsync2 (RWF_HIPRI); set one of those engines or use completion=poll"
        )));
    }
    if job.sqthread_poll && e != IoEngine::IoUring {
        return Err(Error::usage(format!(
            "job {name}: sqthread_poll is an io_uring option; set ioengine=io_uring"
        )));
    }
    if o.sqthread_poll_cpu.is_some() && !job.sqthread_poll {
        return Err(Error::usage(format!(
            "job {name}: sqthread_poll_cpu places the SQPOLL thread, which only sqthread_poll starts; add sqthread_poll"
        )));
    }
    if o.given.contains(&"hipri_percentage") && !job.hipri {
        return Err(Error::usage(format!(
            "job {name}: hipri_percentage is the share of I/Os given RWF_HIPRI, which only hipri sets; add hipri"
        )));
    }
    if job.rw.trims() {
        let what = match e {
            IoEngine::Net | IoEngine::NetSplice => Some("a socket"),
            IoEngine::Transport => Some("a transport stream"),
            IoEngine::Filecreate | IoEngine::Filestat | IoEngine::Filedelete => {
                Some("a file operation")
            }
            IoEngine::Cpuio => Some("a CPU load"),
            IoEngine::Exec => Some("a program"),
            _ => None,
        };
        if let Some(what) = what {
            return Err(Error::usage(format!(
                "job {name}: rw={} needs a file or block device to trim, and ioengine={} is {what}; trim with sync, psync, vsync, pvsync, pvsync2, libaio, posixaio, io_uring, mmap or null",
                job.rw.name(),
                e.name()
            )));
        }
    }
    if matches!(e, IoEngine::Falloc | IoEngine::Ftruncate) {
        if let Some(v) = job.verify {
            return Err(Error::usage(format!(
                "job {name}: verify={} checks data and ioengine={} moves none; drop verify=",
                v.name(),
                e.name()
            )));
        }
        if e == IoEngine::Ftruncate && (job.rw.reads() || job.rw.trims()) {
            return Err(Error::usage(format!(
                "job {name}: ioengine=ftruncate only truncates, on writes; use rw=write or randwrite (rw={} is refused, as fio fails each such I/O)",
                job.rw.name()
            )));
        }
    }
    let moves_no_data = e.file_op() || matches!(e, IoEngine::Cpuio | IoEngine::Exec);
    if moves_no_data && let Some(v) = job.verify {
        return Err(Error::usage(format!(
            "job {name}: verify={} checks data and ioengine={} moves none; drop verify=",
            v.name(),
            e.name()
        )));
    }
    if moves_no_data && (job.rate.is_some() || job.ratemin.is_some()) {
        return Err(Error::usage(format!(
            "job {name}: rate=/ratemin= are bandwidths, and ioengine={} moves no data; drop them",
            e.name()
        )));
    }
    if e == IoEngine::Cpuio && o.cpuload.is_none() {
        return Err(Error::usage(format!(
            "job {name}: ioengine=cpuio needs cpuload= (the percent of one CPU to burn, 1 to 100)"
        )));
    }
    if e == IoEngine::Exec {
        if o.program.is_none() {
            return Err(Error::usage(format!(
                "job {name}: ioengine=exec needs program= (the program to run beside the other jobs)"
            )));
        }
        exec::check(job)?;
    }
    if e == IoEngine::Filedelete && job.time_based {
        return Err(Error::usage(format!(
            "job {name}: ioengine=filedelete deletes each file once, so time_based would run out of files; drop time_based (or raise nrfiles=)"
        )));
    }
    Ok(())
}

/// fsync (or, `data_only`, fdatasync) on a target's descriptor, with no
/// I/O in flight: every file engine's `sync`, and fio's `fdatasync=N`.
pub fn flush_to_disk(fd: i32, data_only: bool) -> Result<()> {
    // SAFETY: plain fsync/fdatasync on an open descriptor.
    let r = unsafe {
        if data_only {
            libc::fdatasync(fd)
        } else {
            libc::fsync(fd)
        }
    };
    if r < 0 {
        return Err(crate::error::Error::os(if data_only {
            "fdatasync"
        } else {
            "fsync"
        }));
    }
    Ok(())
}

/// errno as text, for messages.
pub fn errno_text(e: i32) -> String {
    std::io::Error::from_raw_os_error(e).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(lines: &[(&str, Option<&str>)]) -> std::result::Result<(), String> {
        let mut j = Job {
            name: "j".into(),
            ..Job::default()
        };
        for (k, v) in lines {
            j.set(k, *v).map_err(|e| e.to_string())?;
        }
        check(&j).map_err(|e| e.to_string())
    }

    #[test]
    fn engine_options_must_suit_the_engine_in_one_line() {
        assert!(
            checked(&[
                ("ioengine", Some("io_uring")),
                ("fixedbufs", None),
                ("registerfiles", None)
            ])
            .is_ok()
        );
        // Order does not matter: the option may come before ioengine=.
        assert!(checked(&[("nowait", None), ("ioengine", Some("libaio"))]).is_ok());
        let e = checked(&[("fixedbufs", None), ("ioengine", Some("psync"))]).unwrap_err();
        assert_eq!(
            e,
            "job j: fixedbufs is an option of ioengine=io_uring, not of ioengine=psync; drop it or change the engine"
        );
        let e = checked(&[("ioengine", Some("sync")), ("nowait", None)]).unwrap_err();
        assert!(
            e.contains("ioengine=pvsync2 or ioengine=libaio or ioengine=io_uring"),
            "{e}"
        );
        assert!(checked(&[("ioengine", Some("pvsync2")), ("hipri", None)]).is_ok());
        assert!(
            checked(&[("ioengine", Some("libaio")), ("hipri", None)])
                .unwrap_err()
                .contains("pvsync2 (RWF_HIPRI)")
        );
        assert!(
            checked(&[
                ("ioengine", Some("io_uring")),
                ("sqthread_poll_cpu", Some("1"))
            ])
            .unwrap_err()
            .contains("add sqthread_poll")
        );
        assert!(
            checked(&[
                ("ioengine", Some("pvsync2")),
                ("hipri_percentage", Some("5"))
            ])
            .unwrap_err()
            .contains("add hipri")
        );
        assert!(
            checked(&[("ioengine", Some("cpuio"))])
                .unwrap_err()
                .contains("needs cpuload=")
        );
        assert!(
            checked(&[("ioengine", Some("filecreate")), ("verify", Some("crc32c"))])
                .unwrap_err()
                .contains("moves none")
        );
        assert!(
            checked(&[("ioengine", Some("filestat")), ("rate", Some("1m"))])
                .unwrap_err()
                .contains("moves no data")
        );
        assert!(
            checked(&[("ioengine", Some("filedelete")), ("time_based", None)])
                .unwrap_err()
                .contains("run out of files")
        );
        assert!(one_at_a_time(IoEngine::Pvsync2) && !one_at_a_time(IoEngine::Vsync));
        // fio's rw=filecreate goes with its engine only.
        assert!(checked(&[("rw", Some("filestat")), ("ioengine", Some("filestat"))]).is_ok());
        assert_eq!(
            checked(&[("rw", Some("filecreate")), ("ioengine", Some("psync"))]).unwrap_err(),
            "job j: rw=filecreate is an option of ioengine=filecreate, not of ioengine=psync; drop it or change the engine"
        );
    }
}
