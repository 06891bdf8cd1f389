//! `io_uring`: up to `iodepth` reads/writes in flight on one ring. Interrupt
//! completion sleeps in `io_uring_enter`; polled completion either lets the
//! kernel poll the device (`hipri` → IORING_SETUP_IOPOLL, needs O_DIRECT on a
//! device with poll queues) or spins on the completion ring in user space;
//! `sqthread_poll` adds a kernel thread that picks up submissions (SQPOLL),
//! on `sqthread_poll_cpu` if given.
//!
//! Interrupt completion sets the ring up as fio's io_uring engine does
//! (COOP_TASKRUN, SINGLE_ISSUER, DEFER_TASKRUN): a completion that a kernel
//! worker finishes (every buffered write to tmpfs, say) is handed to this
//! thread when it next waits, not by interrupting it, and the wait that
//! follows each submission finds it there. Polled modes keep a plain ring: a
//! user-space spin never enters the kernel to run deferred work.
//!
//! fio's options change the requests as they do in fio: `fixedbufs`
//! registers the worker's buffers (READ_FIXED/WRITE_FIXED), `registerfiles`
//! the target's descriptor (a fixed file), `nonvectored=0` makes every
//! request READV/WRITEV with one iovec (READ/WRITE otherwise, fio's default
//! where the kernel has them), `force_async=N` sets IOSQE_ASYNC on every
//! N-th request, `nowait` sets RWF_NOWAIT.

use super::{Dir, Done, Engine, IoMemory, Op, Submit, Target, Trimmer, hang};
use crate::error::{Error, Result};
use crate::job::{Completion, Job};
use io_uring::{IoUring, opcode, squeue, types};
use std::time::{Duration, Instant};

/// How a request names its buffer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Buf {
    /// READ/WRITE with the address.
    Plain,
    /// READV/WRITEV with one iovec (`nonvectored=0`).
    Vectored,
    /// READ_FIXED/WRITE_FIXED with the registered buffer's index.
    Fixed,
}

/// io_uring_enter's flag that asks for completions (and so runs deferred
/// task work); not in libc.
const IORING_ENTER_GETEVENTS: u32 = 1;

/// The user data of the hang watch's ticks (no slot has it).
const TICK: u64 = u64::MAX;

/// Ticks of the hang watch per `timeout`: a reap that sees one more than
/// this without its completions has waited between 1 and 1.25 timeouts.
const TICKS_PER_TIMEOUT: u32 = 4;

pub struct Uring {
    /// The job's name, for messages.
    job: String,
    ring: IoUring,
    /// The job's files' descriptors, by [`Op::file`].
    fds: Vec<i32>,
    iopoll: bool,
    sqpoll: bool,
    sqpoll_cpu: Option<u32>,
    spin: bool,
    /// `iodepth_batch_complete_min=0`: a reap enters the kernel to look for
    /// completions without waiting, again until it has its one (fio's).
    look_only: bool,
    /// Completions run when this thread waits (DEFER_TASKRUN).
    deferred: bool,
    /// Completions copied off the ring (user data, result, flags), kept
    /// between calls so that draining allocates nothing.
    cqes: Vec<(u64, i32, u32)>,
    /// The hang watch: one multishot timeout on the ring ticking every
    /// `timeout / TICKS_PER_TIMEOUT` (the timeout it was armed for), so a
    /// reap waits as fio's does, with no timer of its own: a timer armed
    /// and cancelled in every wait cost ~5% of a wake-up-bound job's CPU
    /// time (io_uring 4k on tmpfs, pinned).
    watch: Option<Duration>,
    /// The tick's period, where the kernel reads it when the timeout is
    /// submitted.
    tick_ts: Box<types::Timespec>,
    /// Ticks seen so far.
    ticks: u64,
    /// The kernel refused the watch.
    watch_refused: bool,
    buf: Buf,
    /// `fixedbufs` asked (the buffers are registered once they exist).
    fixedbufs: bool,
    /// The files' descriptors are registered: requests name fixed file
    /// [`Op::file`].
    fixed_file: bool,
    force_async: u32,
    rw_flags: i32,
    /// The job's own priority (`prioclass`/`prio`), which fio puts on
    /// every request: an SQPOLL thread does not inherit ioprio_set's.
    ioprio: u16,
    /// One iovec per slot for READV/WRITEV, where the kernel reads it.
    iovs: Vec<libc::iovec>,
    /// The op each slot carries and how many of its bytes have moved, so a
    /// short transfer is continued rather than lost.
    pending: Vec<Option<(Op, usize)>>,
    unsubmitted: usize,
    pushed: u64,
    forced: u64,
    eagain: u64,
    /// Trims, made inside `queue` as fio's io_uring engine makes them
    /// (no ring request), and their completions until reaped.
    trim: Option<Trimmer>,
    trimmed: Vec<Done>,
}

// SAFETY: the iovecs point into the worker's own buffers; one thread uses it.
unsafe impl Send for Uring {}

impl Uring {
    pub fn new(targets: &[Target], job: &Job, depth: usize) -> Result<Uring> {
        let o = &job.engine_opts;
        let entries = depth.next_power_of_two().max(1) as u32;
        let build = |deferred: bool| {
            let mut b = IoUring::builder();
            if job.hipri {
                b.setup_iopoll();
            }
            if job.sqthread_poll {
                b.setup_sqpoll(1000);
                if let Some(cpu) = o.sqthread_poll_cpu {
                    b.setup_sqpoll_cpu(cpu);
                }
            }
            if deferred {
                // The worker thread that builds the ring is the only one
                // that submits to it or waits on it.
                b.setup_coop_taskrun()
                    .setup_single_issuer()
                    .setup_defer_taskrun();
            }
            b.build(entries)
        };
        let interrupt =
            job.completion() == Completion::Interrupt && !job.sqthread_poll && !job.hipri;
        // Kernels before 6.1 refuse the flags (EINVAL): a plain ring then, as fio falls back.
        let (ring, deferred) = match build(interrupt) {
            Ok(r) => (Ok(r), interrupt),
            Err(e) if interrupt && e.raw_os_error() == Some(libc::EINVAL) => (build(false), false),
            Err(e) => (Err(e), false),
        };
        let ring = ring.map_err(|e| {
            let what = match (job.sqthread_poll, o.sqthread_poll_cpu) {
                (true, Some(c)) => format!(" and SQPOLL on CPU {c}"),
                (true, None) => " and SQPOLL".into(),
                _ => String::new(),
            };
            let hint = match e.raw_os_error() {
                Some(libc::EPERM) if job.sqthread_poll => {
                    "SQPOLL needs root (CAP_SYS_NICE) before Linux 5.11; drop sqthread_poll or run as root"
                }
                Some(libc::EINVAL) if o.sqthread_poll_cpu.is_some() => {
                    "that CPU is not online or not allowed here; pick another sqthread_poll_cpu"
                }
                _ => {
                    "check that io_uring is enabled (sysctl kernel.io_uring_disabled=0) or use ioengine=psync"
                }
            };
            Error::run(format!(
                "job {}: cannot set up io_uring with {entries} entries{what}: {e}; {hint}",
                job.name
            ))
            .with_source(e)
        })?;
        let fds: Vec<i32> = targets.iter().map(Target::fd).collect();
        if o.registerfiles {
            ring.submitter().register_files(&fds).map_err(|e| {
                Error::run(format!(
                    "job {}: registerfiles: cannot register {} with io_uring: {e}; drop registerfiles",
                    job.name,
                    match targets {
                        [t] => t.path.display().to_string(),
                        _ => format!("its {} files", targets.len()),
                    }
                ))
                .with_source(e)
            })?;
        }
        Ok(Uring {
            job: job.name.clone(),
            ring,
            fds,
            iopoll: job.hipri,
            sqpoll: job.sqthread_poll,
            sqpoll_cpu: o.sqthread_poll_cpu,
            spin: job.completion() == Completion::Poll && !job.hipri,
            look_only: job.batch_complete_min == 0,
            deferred,
            cqes: Vec::with_capacity(entries as usize * 2),
            watch: None,
            tick_ts: Box::new(types::Timespec::new()),
            ticks: 0,
            watch_refused: false,
            buf: if o.nonvectored == 0 {
                Buf::Vectored
            } else {
                Buf::Plain
            },
            fixedbufs: o.fixedbufs,
            fixed_file: o.registerfiles,
            force_async: o.force_async,
            ioprio: crate::job::cmdprio::job_ioprio(job),
            rw_flags: if o.nowait { libc::RWF_NOWAIT } else { 0 },
            iovs: vec![
                libc::iovec {
                    iov_base: std::ptr::null_mut(),
                    iov_len: 0
                };
                depth
            ],
            pending: vec![None; depth],
            unsubmitted: 0,
            pushed: 0,
            forced: 0,
            eagain: 0,
            trim: Trimmer::of(targets, job),
            trimmed: Vec::with_capacity(depth),
        })
    }

    fn push(&mut self, op: Op, moved: usize) -> Result<()> {
        // SAFETY: the buffer stays valid until the completion is reaped.
        let p = unsafe { op.buf.add(moved) };
        let len = (op.len - moved) as u32;
        let off = op.offset + moved as u64;
        let flags = self.rw_flags;
        // fio sets every request's priority: the job's, or its own.
        let prio = op.ioprio.unwrap_or(self.ioprio);
        let slot = op.slot;
        self.iovs[slot] = libc::iovec {
            iov_base: p.cast(),
            iov_len: len as usize,
        };
        let iov: *const libc::iovec = &self.iovs[slot];
        // One request, naming the file either way (the types differ).
        macro_rules! sqe {
            ($fd:expr) => {
                match (op.dir, self.buf) {
                    (Dir::Read, Buf::Plain) => opcode::Read::new($fd, p, len)
                        .offset(off)
                        .rw_flags(flags)
                        .ioprio(prio)
                        .build(),
                    (Dir::Write, Buf::Plain) => opcode::Write::new($fd, p, len)
                        .offset(off)
                        .rw_flags(flags)
                        .ioprio(prio)
                        .build(),
                    (Dir::Read, Buf::Vectored) => opcode::Readv::new($fd, iov, 1)
                        .offset(off)
                        .rw_flags(flags)
                        .ioprio(prio)
                        .build(),
                    (Dir::Write, Buf::Vectored) => opcode::Writev::new($fd, iov, 1)
                        .offset(off)
                        .rw_flags(flags)
                        .ioprio(prio)
                        .build(),
                    (Dir::Read, Buf::Fixed) => opcode::ReadFixed::new($fd, p, len, slot as u16)
                        .offset(off)
                        .rw_flags(flags)
                        .ioprio(prio)
                        .build(),
                    (Dir::Write, Buf::Fixed) => opcode::WriteFixed::new($fd, p, len, slot as u16)
                        .offset(off)
                        .rw_flags(flags)
                        .ioprio(prio)
                        .build(),
                    (Dir::Trim, _) => unreachable!("a trim is made inside queue, not on the ring"),
                }
            };
        }
        let mut e = if self.fixed_file {
            sqe!(types::Fixed(op.file as u32))
        } else {
            sqe!(types::Fd(self.fds[op.file]))
        }
        .user_data(slot as u64);
        self.pushed += 1;
        if self.force_async > 0 && self.pushed.is_multiple_of(u64::from(self.force_async)) {
            e = e.flags(squeue::Flags::ASYNC);
            self.forced += 1;
        }
        // SAFETY: as above.
        while unsafe { self.ring.submission().push(&e) }.is_err() {
            self.ring
                .submit()
                .map_err(|e| Error::run_from("io_uring submit", e))?;
            self.unsubmitted = 0;
        }
        self.pending[op.slot] = Some((op, moved));
        self.unsubmitted += 1;
        Ok(())
    }

    /// Moves up to `max` finished entries from the completion ring to
    /// `out` (the rest stay there for the next reap); returns how many
    /// I/Os finished.
    fn drain(&mut self, out: &mut Vec<Done>, max: usize) -> Result<usize> {
        // Copied off first: continuing a short transfer pushes to the ring.
        let mut cqes = std::mem::take(&mut self.cqes);
        cqes.clear();
        cqes.extend(
            self.ring
                .completion()
                .take(max)
                .map(|c| (c.user_data(), c.result(), c.flags())),
        );
        let n = self.handle(&cqes, out);
        self.cqes = cqes;
        n
    }

    /// Turns copied completions into `out` entries, continuing short
    /// transfers; returns how many it added.
    fn handle(&mut self, cqes: &[(u64, i32, u32)], out: &mut Vec<Done>) -> Result<usize> {
        let mut n = 0;
        for &(data, res, flags) in cqes {
            if data == TICK {
                if res == -libc::ETIME {
                    self.ticks += 1;
                } else if res != -libc::ECANCELED {
                    // Refused (multishot timeouts came in Linux 6.4): the
                    // reaps time their own waits.
                    self.watch_refused = true;
                }
                if !io_uring::cqueue::more(flags) {
                    // Ended (refused, or a full completion ring): the next
                    // reap arms another if it may.
                    self.watch = None;
                }
                continue;
            }
            let slot = data as usize;
            let Some((op, moved)) = self.pending.get_mut(slot).and_then(Option::take) else {
                continue;
            };
            if res < 0 {
                if -res == libc::EOPNOTSUPP && self.iopoll {
                    return Err(Error::usage(
                        "hipri (IOPOLL) is not supported by this target: polled I/O needs direct=1 on a block device with poll queues; drop hipri or use completion=poll (user-space spin)",
                    ));
                }
                if -res == libc::EAGAIN && self.rw_flags & libc::RWF_NOWAIT != 0 {
                    self.eagain += 1;
                    self.push(op, moved)?;
                    continue;
                }
                if (-res == libc::EOPNOTSUPP || -res == libc::EINVAL) && self.rw_flags != 0 {
                    return Err(Error::usage(format!(
                        "job {}: ioengine=io_uring: nowait (RWF_NOWAIT) was refused ({}); drop nowait",
                        self.job,
                        super::errno_text(-res)
                    )));
                }
                if -res == libc::EBADF && self.sqpoll && !self.fixed_file {
                    return Err(Error::usage(format!(
                        "job {}: sqthread_poll on this kernel needs the file registered (before Linux 5.11): add registerfiles",
                        self.job
                    )));
                }
                out.push(Done {
                    slot,
                    res: Err(-res),
                });
                n += 1;
                continue;
            }
            let moved = moved + res as usize;
            if res > 0 && moved < op.len {
                self.push(op, moved)?;
                continue;
            }
            out.push(Done {
                slot,
                res: Ok(moved),
            });
            n += 1;
        }
        Ok(n)
    }
}

impl Uring {
    /// One `io_uring_enter` that submits what is queued and runs completed
    /// work without waiting (GETEVENTS with a minimum of 0), as fio's
    /// io_uring engine commits and looks.
    fn enter_nowait(&mut self) -> Result<()> {
        // SAFETY: no argument pointer is passed.
        let entered = unsafe {
            self.ring.submitter().enter::<libc::sigset_t>(
                self.unsubmitted as u32,
                0,
                IORING_ENTER_GETEVENTS,
                None,
            )
        };
        match entered {
            Ok(n) => self.unsubmitted = self.unsubmitted.saturating_sub(n),
            // Left queued: the next enter submits it.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
                ) => {}
            Err(e) => return Err(Error::run_from("io_uring submit", e)),
        }
        Ok(())
    }

    /// Whether the hang watch ticks for `timeout`, arming it if it does
    /// not yet: not where a reap only looks (no wait to end), not on an
    /// IOPOLL ring (which takes only polled requests), not for a timeout
    /// other than the one it was armed for (that reap times its own waits).
    fn armed(&mut self, timeout: Duration) -> Result<bool> {
        if self.look_only || self.iopoll || self.watch_refused || timeout.is_zero() {
            return Ok(false);
        }
        if let Some(t) = self.watch {
            return Ok(t == timeout);
        }
        let tick = timeout / TICKS_PER_TIMEOUT;
        *self.tick_ts = types::Timespec::from(tick);
        let e = opcode::Timeout::new(&*self.tick_ts)
            .flags(types::TimeoutFlags::MULTISHOT)
            .build()
            .user_data(TICK);
        // SAFETY: the timespec is boxed in self, alive as long as the ring.
        while unsafe { self.ring.submission().push(&e) }.is_err() {
            self.ring
                .submit()
                .map_err(|e| Error::run_from("io_uring submit", e))?;
            self.unsubmitted = 0;
        }
        self.unsubmitted += 1;
        self.watch = Some(timeout);
        Ok(true)
    }
}

impl Engine for Uring {
    fn commit(&mut self) -> Result<()> {
        if self.unsubmitted == 0 {
            return Ok(());
        }
        if self.sqpoll {
            // The kernel's thread submits; it is woken only if it sleeps.
            self.ring
                .submit()
                .map_err(|e| Error::run_from("io_uring submit", e))?;
            self.unsubmitted = 0;
            return Ok(());
        }
        self.enter_nowait()
    }

    fn submission(&self) -> Submit {
        Submit::Commit
    }

    fn queue(&mut self, op: Op) -> Result<()> {
        if op.dir == Dir::Trim {
            // What was queued before it goes to the kernel first (fio
            // answers a trim with "busy" until it has).
            if self.unsubmitted > 0 {
                self.ring
                    .submit()
                    .map_err(|e| Error::run_from("io_uring submit", e))?;
                self.unsubmitted = 0;
            }
            let done = super::trim::complete(&mut self.trim, &op)?;
            self.trimmed.push(done);
            return Ok(());
        }
        self.push(op, 0)
    }

    fn poll(&mut self, out: &mut Vec<Done>) -> Result<()> {
        if self.deferred {
            // A deferred completion is posted only by an enter that asks
            // for events: without one, an offloaded job polling between due
            // times saw its completions late (at its next real wait).
            self.enter_nowait()?;
        } else if self.unsubmitted > 0 {
            self.ring
                .submit()
                .map_err(|e| Error::run_from("io_uring submit", e))?;
            self.unsubmitted = 0;
        }
        out.append(&mut self.trimmed);
        self.drain(out, usize::MAX).map(|_| ())
    }

    fn wait(&mut self, until: Instant, out: &mut Vec<Done>) -> Result<()> {
        if self.spin {
            return super::nap_between_polls(self, until, out);
        }
        let had = out.len();
        out.append(&mut self.trimmed);
        self.drain(out, usize::MAX)?;
        let left = until.saturating_duration_since(Instant::now());
        if out.len() > had || left.is_zero() {
            return self.poll(out);
        }
        // Submits what is queued and sleeps in the kernel until the first
        // completion or `until`.
        let ts = types::Timespec::from(left);
        let args = types::SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(1, &args) {
            Ok(_) => self.unsubmitted = 0,
            Err(e) if e.raw_os_error() == Some(libc::ETIME) => self.unsubmitted = 0,
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) => return Err(Error::run_from("io_uring wait", e)),
        }
        self.drain(out, usize::MAX).map(|_| ())
    }

    fn reap(
        &mut self,
        min: usize,
        max: usize,
        timeout: Duration,
        out: &mut Vec<Done>,
    ) -> Result<()> {
        let max = max.max(min).max(1);
        let mut got = self.trimmed.len();
        out.append(&mut self.trimmed);
        got += self.drain(out, max.saturating_sub(got))?;
        if self.spin {
            let deadline = Instant::now() + timeout;
            if self.unsubmitted > 0 || self.sqpoll {
                self.ring
                    .submit()
                    .map_err(|e| Error::run_from("io_uring submit", e))?;
                self.unsubmitted = 0;
            }
            let mut spins = 0u32;
            while got < min {
                got += self.drain(out, max.saturating_sub(got))?;
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(4096) && Instant::now() > deadline {
                    return Err(hang(timeout));
                }
                std::hint::spin_loop();
            }
            return Ok(());
        }
        if self.armed(timeout)? {
            // Sleep as fio's reap does (no timer of the wait's own); the
            // watch's ticks end a wait that lasts past the timeout.
            let start = self.ticks;
            while got < min && self.watch.is_some() {
                if self.ticks - start > u64::from(TICKS_PER_TIMEOUT) {
                    return Err(hang(timeout));
                }
                match self.ring.submitter().submit_and_wait(min - got) {
                    Ok(_) => self.unsubmitted = 0,
                    Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::ETIME)) => {}
                    Err(e) => return Err(Error::run_from("io_uring wait", e)),
                }
                got += self.drain(out, max.saturating_sub(got))?;
            }
            if got >= min {
                return Ok(());
            }
        }
        // Each wait with a timer of its own: one clock read per reap.
        let deadline = Instant::now() + timeout;
        let mut left = timeout;
        while got < min {
            if left.is_zero() {
                return Err(hang(timeout));
            }
            if self.look_only && !self.sqpoll {
                // fio's minimum of 0: look, and look again.
                self.enter_nowait()?;
            } else {
                let ts = types::Timespec::from(left);
                let args = types::SubmitArgs::new().timespec(&ts);
                match self.ring.submitter().submit_with_args(min - got, &args) {
                    Ok(_) => self.unsubmitted = 0,
                    Err(e) if e.raw_os_error() == Some(libc::ETIME) => self.unsubmitted = 0,
                    Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                    Err(e) => return Err(Error::run_from("io_uring wait", e)),
                }
            }
            got += self.drain(out, max.saturating_sub(got))?;
            if got < min {
                left = deadline.saturating_duration_since(Instant::now());
            }
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.fds
            .iter()
            .try_for_each(|&fd| super::flush_to_disk(fd, false))
    }

    fn completion_detail(&self) -> String {
        let mut s = String::from("io_uring");
        if self.iopoll {
            s.push_str(", IOPOLL (kernel polls the device)");
        } else if self.spin {
            s.push_str(", user-space spin on the completion ring");
        } else {
            s.push_str(", sleep in io_uring_enter until woken");
            if self.deferred {
                s.push_str(" (deferred task work, as fio)");
            }
        }
        if self.sqpoll {
            s.push_str(", SQPOLL submission thread");
            if let Some(c) = self.sqpoll_cpu {
                s.push_str(&format!(" on CPU {c}"));
            }
        }
        s.push_str(match self.buf {
            Buf::Plain => ", READ/WRITE",
            Buf::Vectored => ", READV/WRITEV with one iovec (nonvectored=0)",
            Buf::Fixed => ", READ_FIXED/WRITE_FIXED on registered buffers (fixedbufs)",
        });
        if self.fixed_file {
            s.push_str(if self.fds.len() == 1 {
                ", registered file (registerfiles)"
            } else {
                ", registered files (registerfiles)"
            });
        }
        if let Some(t) = &self.trim {
            s.push_str(&format!(
                ", trims by {} inside queue, done at once (as fio's io_uring engine)",
                t.words()
            ));
        }
        if self.force_async > 0 {
            s.push_str(&format!(
                ", IOSQE_ASYNC on every {} request{} ({} of {}, force_async)",
                self.force_async,
                if self.force_async == 1 { "" } else { "s" },
                self.forced,
                self.pushed
            ));
        }
        if self.rw_flags & libc::RWF_NOWAIT != 0 {
            s.push_str(&format!(
                ", RWF_NOWAIT ({} EAGAIN resubmitted)",
                self.eagain
            ));
        }
        s
    }

    fn register_memory(&mut self, mem: &mut IoMemory) -> Result<()> {
        if !self.fixedbufs {
            return Ok(());
        }
        let len = mem.slot_len();
        let iovs: Vec<libc::iovec> = (0..mem.slots())
            .map(|i| libc::iovec {
                iov_base: mem.slot_ptr(i).cast(),
                iov_len: len,
            })
            .collect();
        // SAFETY: the buffers live as long as the worker's memory, which
        // outlives every request; the ring unregisters them when dropped.
        unsafe { self.ring.submitter().register_buffers(&iovs) }.map_err(|e| {
            let total = len * iovs.len();
            let limit = {
                // SAFETY: rlimit is two integers: all zeroes is valid.
                let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
                // SAFETY: `r` is a live, writable rlimit; getrlimit writes only into it.
                if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } == 0
                    && r.rlim_cur != libc::RLIM_INFINITY
                {
                    crate::units::format_size(r.rlim_cur as u64)
                } else {
                    "unlimited".into()
                }
            };
            Error::run(format!(
                "job {}: fixedbufs: cannot register {} buffers of {} ({}) with io_uring: {e}; registered buffers are locked in memory, against the memlock limit ({limit} here): raise it (ulimit -l), lower bs or iodepth, or drop fixedbufs",
                self.job,
                iovs.len(),
                crate::units::format_size(len as u64),
                crate::units::format_size(total as u64),
            ))
            .with_source(e)
        })?;
        self.buf = Buf::Fixed;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::IoMem;

    fn job(opts: &[(&str, Option<&str>)]) -> Job {
        let mut j = Job::default();
        for (k, v) in [
            ("ioengine", Some("io_uring")),
            ("rw", Some("rw")),
            ("size", Some("64k")),
            ("bs", Some("8k")),
            ("iodepth", Some("8")),
        ]
        .iter()
        .chain(opts)
        {
            j.set(k, *v).unwrap();
        }
        j
    }

    /// Queues one `len`-byte I/O `dir` from each of the first `n` slots,
    /// slot s at offset s × len.
    fn queue_slots(e: &mut Uring, mem: &mut IoMemory, dir: Dir, n: usize, len: usize) {
        for s in 0..n {
            let buf = mem.slot_ptr(s);
            e.queue(Op {
                dir,
                file: 0,
                offset: (s * len) as u64,
                len,
                slot: s,
                buf,
                ioprio: None,
            })
            .unwrap();
        }
    }

    /// Writes then reads 8 blocks in flight; the detail names the mode.
    fn round_trip(j: &Job, f: &std::path::Path) -> Option<String> {
        let t = Target::open(j, f, false).unwrap();
        let mut e = match Uring::new(std::slice::from_ref(&t), j, 8) {
            Ok(e) => e,
            Err(err) => {
                eprintln!("skipped: {err}");
                return None;
            }
        };
        let mut mem = IoMemory::new(IoMem::Malloc, 8, 8192).unwrap();
        e.register_memory(&mut mem).unwrap();
        for dir in [Dir::Write, Dir::Read] {
            for s in 0..8 {
                mem.slot(s, 8192)
                    .fill(if dir == Dir::Write { 0x41 + s as u8 } else { 0 });
            }
            queue_slots(&mut e, &mut mem, dir, 8, 8192);
            let mut out = Vec::new();
            while out.len() < 8 {
                e.reap(1, 1, Duration::from_secs(5), &mut out).unwrap();
            }
            assert!(out.iter().all(|d| d.res == Ok(8192)));
        }
        for s in 0..8 {
            assert!(mem.slot(s, 8192).iter().all(|&b| b == 0x41 + s as u8));
        }
        Some(e.completion_detail())
    }

    #[test]
    fn fixedbufs_registerfiles_and_the_rest_move_the_right_bytes() {
        let dir = tempfile::tempdir().unwrap();
        type Case<'a> = (&'a [(&'a str, Option<&'a str>)], &'a [&'a str]);
        let cases: [Case; 4] = [
            (
                &[("fixedbufs", None), ("registerfiles", None)],
                &["READ_FIXED/WRITE_FIXED", "registered file"],
            ),
            (
                &[("nonvectored", Some("0")), ("force_async", Some("2"))],
                &["READV/WRITEV", "IOSQE_ASYNC on every 2 requests (8 of 16"],
            ),
            (
                &[("fixedbufs", None), ("completion", Some("poll"))],
                &["READ_FIXED", "user-space spin"],
            ),
            (
                &[("registerfiles", None), ("sqthread_poll", None)],
                &["SQPOLL", "registered file"],
            ),
        ];
        for (i, (opts, want)) in cases.iter().enumerate() {
            let j = job(opts);
            let Some(d) = round_trip(&j, &dir.path().join(i.to_string())) else {
                return;
            };
            for w in *want {
                assert!(d.contains(w), "{w} in {d}");
            }
        }
    }

    /// An offloaded job collects its completions with `poll` and `wait`
    /// alone (never `reap`): a completion the kernel defers to this thread
    /// (a write to tmpfs goes through a kernel worker; so does a direct
    /// read on a disk) must still be found. Before, `poll` never entered
    /// the kernel for events and such a completion stayed unseen until the
    /// job's next real wait.
    #[test]
    fn poll_and_wait_alone_find_deferred_completions() {
        let dir = tempfile::tempdir().unwrap();
        let j = job(&[("completion", Some("interrupt"))]);
        let t = Target::open(&j, &dir.path().join("f"), false).unwrap();
        let mut e = match Uring::new(std::slice::from_ref(&t), &j, 8) {
            Ok(e) => e,
            Err(err) => {
                eprintln!("skipped: {err}");
                return;
            }
        };
        let mut mem = IoMemory::new(IoMem::Malloc, 8, 8192).unwrap();
        for waiting in [false, true] {
            queue_slots(&mut e, &mut mem, Dir::Write, 8, 8192);
            let mut out = Vec::new();
            let give_up = Instant::now() + Duration::from_secs(5);
            while out.len() < 8 && Instant::now() < give_up {
                if waiting {
                    e.wait(Instant::now() + Duration::from_millis(50), &mut out)
                        .unwrap();
                } else {
                    e.poll(&mut out).unwrap();
                    std::thread::sleep(Duration::from_micros(100));
                }
            }
            assert_eq!(out.len(), 8, "waiting: {waiting}");
            assert!(out.iter().all(|d| d.res == Ok(8192)));
        }
    }

    /// A read of an empty pipe never completes: the wait on the ring is
    /// still ended by its timeout, as a hang, never left waiting.
    /// A pipe's read end as a job's target, and its write end.
    fn pipe_target() -> (Target, std::fs::File) {
        let mut fds = [0i32; 2];
        // SAFETY: fds has room for the two descriptors.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors were just made and are owned here.
        let (r, w): (std::fs::File, std::fs::File) = unsafe {
            use std::os::fd::FromRawFd;
            (
                std::fs::File::from_raw_fd(fds[0]),
                std::fs::File::from_raw_fd(fds[1]),
            )
        };
        let t = Target {
            file: r,
            path: "pipe".into(),
            kind: crate::engine::TargetKind::Char,
            offset: 0,
            size: 1 << 20,
            prepared: None,
        };
        (t, w)
    }

    /// The hang watch ticks through a long wait without ending it: a read
    /// that completes after a tick or more is a completion, not a hang,
    /// and the watch is still there for the next reap.
    #[test]
    fn a_slow_read_outlives_the_watch_ticks() {
        let (t, mut w) = pipe_target();
        let j = job(&[("rw", Some("read")), ("iodepth", Some("1"))]);
        let mut e = match Uring::new(std::slice::from_ref(&t), &j, 1) {
            Ok(e) => e,
            Err(err) => return eprintln!("skipped: {err}"),
        };
        let mut mem = IoMemory::new(IoMem::Malloc, 1, 4096).unwrap();
        // Ticks every 1.5 s; the write comes after 3.5 s (two ticks or
        // more), well inside the 6 s timeout even on a loaded machine.
        let timeout = Duration::from_secs(6);
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            for _ in 0..2 {
                std::thread::sleep(Duration::from_millis(3500));
                w.write_all(&[7u8; 4096]).unwrap();
            }
            w
        });
        for round in 0..2 {
            queue_slots(&mut e, &mut mem, Dir::Read, 1, 4096);
            let mut out = Vec::new();
            let before = e.ticks;
            e.reap(1, 1, timeout, &mut out)
                .unwrap_or_else(|err| panic!("round {round}: {err}"));
            assert_eq!(out.len(), 1, "round {round}");
            assert!(matches!(out[0].res, Ok(n) if n > 0), "round {round}");
            if e.watch_refused {
                return eprintln!("skipped: this kernel refuses multishot timeouts");
            }
            assert!(e.ticks > before, "round {round}: no tick in a 3.5 s wait");
            assert_eq!(e.watch, Some(timeout), "round {round}");
        }
        drop(writer.join().unwrap());
    }

    #[test]
    fn a_read_that_never_completes_is_a_hang_after_the_timeout() {
        let (tx, rx) = std::sync::mpsc::channel();
        let worker = std::thread::spawn(move || {
            let (t, w) = pipe_target();
            let j = job(&[("rw", Some("read")), ("iodepth", Some("1"))]);
            let mut e = match Uring::new(std::slice::from_ref(&t), &j, 1) {
                Ok(e) => e,
                Err(err) => {
                    eprintln!("skipped: {err}");
                    let _ = tx.send(None);
                    return;
                }
            };
            let mut mem = IoMemory::new(IoMem::Malloc, 1, 4096).unwrap();
            queue_slots(&mut e, &mut mem, Dir::Read, 1, 4096);
            let started = Instant::now();
            let mut out = Vec::new();
            let r = e.reap(1, 1, Duration::from_millis(400), &mut out);
            let took = started.elapsed();
            let _ = tx.send(Some((r.err().map(|e| e.to_string()), took)));
            // The writer wakes the read, so the ring's drop has nothing
            // left in flight.
            drop(w);
            drop(e);
        });
        let got = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the wait on a read that never completes did not end");
        worker.join().unwrap();
        let Some((err, took)) = got else { return };
        let err = err.expect("no error for a read that never completed");
        assert!(err.contains("no I/O completed within 400ms"), "{err}");
        assert!(took >= Duration::from_millis(390), "{took:?}");
    }
}
