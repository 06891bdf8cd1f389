//! `libaio`: Linux kernel AIO through its own syscalls, as fio's libaio
//! engine drives them through libaio — `io_setup` a context for `iodepth`
//! requests, `io_submit` the queued iocbs (IOCB_CMD_PREAD/PWRITE) in one
//! call, `io_getevents` for completions (with a timeout), `io_destroy` at
//! the end. Polled completion spins on `io_getevents` with a minimum of 0,
//! or with `userspace_reap` reads the completion ring the kernel maps into
//! the process. A short transfer is resubmitted for the rest. Linux only
//! queues direct I/O: with `direct=0`, `io_submit` does the I/O before it
//! returns (as fio's documentation warns).

use super::{Dir, Done, Engine, Op, Submit, Target, Trimmer};
use crate::error::{Error, Result};
use crate::job::{Completion, Job};
use std::sync::atomic::{Ordering, fence};
use std::time::{Duration, Instant};

/// The kernel's `struct iocb` (include/uapi/linux/aio_abi.h).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Iocb {
    data: u64,
    #[cfg(target_endian = "little")]
    key: u32,
    rw_flags: i32,
    #[cfg(target_endian = "big")]
    key: u32,
    opcode: u16,
    reqprio: i16,
    fildes: u32,
    buf: u64,
    nbytes: u64,
    offset: i64,
    reserved2: u64,
    flags: u32,
    resfd: u32,
}

/// `iocb.aio_flags`: `aio_reqprio` holds an ioprio value (Linux 5.0+).
const IOCB_FLAG_IOPRIO: u32 = 1 << 1;

/// The kernel's `struct io_event`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

/// The head of the completion ring `io_setup` maps at the context's address
/// (`struct aio_ring`, fs/aio.c); the events follow it.
#[repr(C)]
struct AioRing {
    id: u32,
    nr: u32,
    head: u32,
    tail: u32,
    magic: u32,
    compat_features: u32,
    incompat_features: u32,
    header_length: u32,
}

const AIO_RING_MAGIC: u32 = 0xa10a_10a1;
const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;

pub struct Libaio {
    /// The job's name, for messages.
    job: String,
    ctx: libc::c_ulong,
    /// The job's files' descriptors, by [`Op::file`].
    fds: Vec<i32>,
    direct: bool,
    depth: usize,
    spin: bool,
    /// Reap from the mapped ring (userspace_reap, when polling and the
    /// ring is the kind fio reads).
    ring: bool,
    userspace_reap: bool,
    rw_flags: i32,
    iocbs: Vec<Iocb>,
    /// The op each slot carries and how many of its bytes have moved.
    pending: Vec<Option<(Op, usize)>>,
    /// Slots whose iocb is filled in but not yet submitted.
    unsubmitted: Vec<usize>,
    /// The iocbs of one io_submit call (kept to reuse its allocation).
    ptrs: Vec<*mut Iocb>,
    events: Vec<IoEvent>,
    submits: u64,
    ios: u64,
    eagain: u64,
    /// Trims, made inside `queue` as fio's libaio engine makes them (no
    /// iocb), and completions known before any wait (those trims, iocbs
    /// the kernel refused at a commit) until reaped.
    trim: Option<Trimmer>,
    trimmed: Vec<Done>,
}

// SAFETY: the context and the ring are this worker's alone.
unsafe impl Send for Libaio {}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

impl Libaio {
    pub fn new(targets: &[Target], job: &Job, depth: usize) -> Result<Libaio> {
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: io_setup writes the new context into `ctx`.
        let r = unsafe { libc::syscall(libc::SYS_io_setup, depth as libc::c_long, &mut ctx) };
        if r < 0 {
            let e = errno();
            let why = match e {
                libc::ENOSYS => "this kernel has no AIO (built without CONFIG_AIO, or a seccomp filter forbids it); use ioengine=io_uring or psync".to_string(),
                libc::EAGAIN => format!(
                    "{depth} more requests would pass fs.aio-max-nr ({}, of which {} in use); lower iodepth or raise /proc/sys/fs/aio-max-nr",
                    read_proc("/proc/sys/fs/aio-max-nr"),
                    read_proc("/proc/sys/fs/aio-nr")
                ),
                _ => "use ioengine=io_uring or psync".into(),
            };
            return Err(Error::run(format!(
                "job {}: io_setup({depth}) failed: {}: {why}",
                job.name,
                super::errno_text(e)
            )));
        }
        // fio's libaio looks for completions with a minimum of 0 when
        // iodepth_batch_complete_min=0, spinning until its one arrives.
        let spin = job.completion() == Completion::Poll || job.batch_complete_min == 0;
        let o = &job.engine_opts;
        // SAFETY: the context's address is the ring io_setup mapped.
        let magic_ok = unsafe { (*(ctx as *const AioRing)).magic } == AIO_RING_MAGIC;
        Ok(Libaio {
            job: job.name.clone(),
            ctx,
            fds: targets.iter().map(Target::fd).collect(),
            direct: job.direct,
            depth,
            spin,
            ring: spin && o.userspace_reap && magic_ok,
            userspace_reap: o.userspace_reap,
            rw_flags: if o.nowait { libc::RWF_NOWAIT } else { 0 },
            iocbs: vec![Iocb::default(); depth],
            pending: vec![None; depth],
            unsubmitted: Vec::with_capacity(depth),
            ptrs: Vec::with_capacity(depth),
            events: vec![IoEvent::default(); depth],
            submits: 0,
            ios: 0,
            eagain: 0,
            trim: Trimmer::of(targets, job),
            trimmed: Vec::with_capacity(depth),
        })
    }

    /// Fills in slot `op.slot`'s iocb for the part of `op` after `moved`.
    fn push(&mut self, op: Op, moved: usize) {
        self.iocbs[op.slot] = Iocb {
            data: op.slot as u64,
            rw_flags: self.rw_flags,
            opcode: match op.dir {
                Dir::Read => IOCB_CMD_PREAD,
                Dir::Write => IOCB_CMD_PWRITE,
                Dir::Trim => unreachable!("a trim is made inside queue, not by an iocb"),
            },
            fildes: self.fds[op.file] as u32,
            buf: op.buf as u64 + moved as u64,
            nbytes: (op.len - moved) as u64,
            offset: (op.offset + moved as u64) as i64,
            // fio's libaio: only an I/O with a cmdprio priority carries one.
            reqprio: op.ioprio.map_or(0, |p| p as i16),
            flags: if op.ioprio.is_some() {
                IOCB_FLAG_IOPRIO
            } else {
                0
            },
            ..Iocb::default()
        };
        self.pending[op.slot] = Some((op, moved));
        self.unsubmitted.push(op.slot);
    }

    /// Submits every filled-in iocb, in as few `io_submit` calls as the
    /// kernel takes; an iocb it refuses completes with that error.
    fn submit_staged(&mut self, out: &mut Vec<Done>) -> Result<usize> {
        let mut failed = 0;
        let mut ptrs = std::mem::take(&mut self.ptrs);
        ptrs.extend(
            self.unsubmitted
                .drain(..)
                .map(|s| &mut self.iocbs[s] as *mut Iocb),
        );
        let mut at = 0;
        while at < ptrs.len() {
            self.submits += 1;
            // SAFETY: the iocbs live in `self.iocbs` and their buffers in
            // the worker's memory until the completion is reaped.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_submit,
                    self.ctx,
                    (ptrs.len() - at) as libc::c_long,
                    ptrs[at..].as_mut_ptr(),
                )
            };
            if r > 0 {
                at += r as usize;
                continue;
            }
            let e = if r == 0 { libc::EAGAIN } else { errno() };
            if e == libc::EINTR {
                continue;
            }
            // The first iocb left was refused.
            // SAFETY: ptrs[at] points into self.iocbs.
            let slot = unsafe { (*ptrs[at]).data } as usize;
            if let Some((op, moved)) = self.pending[slot].take() {
                self.flag_error(op.dir, e)?;
                out.push(Done {
                    slot,
                    res: if moved > 0 { Ok(moved) } else { Err(e) },
                });
                failed += 1;
            }
            at += 1;
        }
        ptrs.clear();
        self.ptrs = ptrs;
        Ok(failed)
    }

    /// RWF_NOWAIT refused by the target: one line, not an I/O error.
    fn flag_error(&self, dir: Dir, e: i32) -> Result<()> {
        if self.rw_flags != 0 && (e == libc::EOPNOTSUPP || e == libc::EINVAL) {
            return Err(Error::usage(format!(
                "job {}: ioengine=libaio: nowait (RWF_NOWAIT) {} was refused ({}); most file systems refuse buffered I/O that may not block: use direct=1 or drop nowait",
                self.job,
                dir.name(),
                super::errno_text(e)
            )));
        }
        Ok(())
    }

    /// Completions now in the ring, read in user space as fio's
    /// userspace_reap does: events from head to tail, then head moved on.
    fn ring_events(&mut self, max: usize) -> usize {
        let ring = self.ctx as *mut AioRing;
        let mut n = 0;
        // SAFETY: the ring stays mapped until io_destroy; the kernel only
        // writes events between tail and head and reads head under its lock.
        unsafe {
            let nr = std::ptr::read_volatile(&(*ring).nr);
            let mut head = std::ptr::read_volatile(&(*ring).head);
            let tail = std::ptr::read_volatile(&(*ring).tail);
            fence(Ordering::Acquire);
            let evs = (ring as *const u8).add(std::mem::size_of::<AioRing>()) as *const IoEvent;
            while head != tail && n < max {
                self.events[n] = std::ptr::read_volatile(evs.add(head as usize));
                head = (head + 1) % nr;
                n += 1;
            }
            fence(Ordering::Release);
            std::ptr::write_volatile(&mut (*ring).head, head);
        }
        n
    }

    /// Up to `max` completions (at most `events.len()`): at least `min`
    /// unless `timeout` passes first (0 = look and return).
    fn get_events(&mut self, min: usize, max: usize, timeout: Option<Duration>) -> Result<usize> {
        let room = self.events.len();
        let max = max.min(room).max(min.min(room)).max(1);
        if self.ring {
            return Ok(self.ring_events(max));
        }
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs() as libc::time_t,
            tv_nsec: t.subsec_nanos() as libc::c_long,
        });
        let tsp = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        loop {
            // SAFETY: `events` has room for `events.len()` completions.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.ctx,
                    min as libc::c_long,
                    max as libc::c_long,
                    self.events.as_mut_ptr(),
                    tsp,
                )
            };
            if r >= 0 {
                return Ok(r as usize);
            }
            let e = errno();
            if e != libc::EINTR {
                return Err(Error::run(format!(
                    "io_getevents failed: {}",
                    super::errno_text(e)
                )));
            }
        }
    }

    /// Turns `n` events into completions (or resubmissions of the rest of
    /// a short transfer); returns how many I/Os finished.
    fn complete(&mut self, n: usize, out: &mut Vec<Done>) -> Result<usize> {
        let mut finished = 0;
        for i in 0..n {
            let ev = self.events[i];
            let slot = ev.data as usize;
            let Some((op, moved)) = self.pending.get_mut(slot).and_then(Option::take) else {
                continue;
            };
            if ev.res < 0 {
                let e = (-ev.res) as i32;
                if e == libc::EAGAIN && self.rw_flags & libc::RWF_NOWAIT != 0 {
                    self.eagain += 1;
                    self.push(op, moved);
                    continue;
                }
                self.flag_error(op.dir, e)?;
                out.push(Done { slot, res: Err(e) });
                finished += 1;
                continue;
            }
            let moved = moved + ev.res as usize;
            if ev.res > 0 && moved < op.len {
                self.push(op, moved);
                continue;
            }
            out.push(Done {
                slot,
                res: Ok(moved),
            });
            finished += 1;
        }
        Ok(finished)
    }
}

fn read_proc(p: &str) -> String {
    std::fs::read_to_string(p).map_or_else(|_| "?".into(), |s| s.trim().to_string())
}

impl Engine for Libaio {
    fn queue(&mut self, op: Op) -> Result<()> {
        self.ios += 1;
        if op.dir == Dir::Trim {
            // What was queued before it goes to the kernel first (fio
            // answers a trim with "busy" until it has).
            let mut done = std::mem::take(&mut self.trimmed);
            let r = self.submit_staged(&mut done);
            self.trimmed = done;
            r?;
            let done = super::trim::complete(&mut self.trim, &op)?;
            self.trimmed.push(done);
            return Ok(());
        }
        self.push(op, 0);
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        let mut refused = std::mem::take(&mut self.trimmed);
        let r = self.submit_staged(&mut refused);
        self.trimmed = refused;
        r.map(|_| ())
    }

    fn submission(&self) -> Submit {
        Submit::Commit
    }

    fn poll(&mut self, out: &mut Vec<Done>) -> Result<()> {
        out.append(&mut self.trimmed);
        self.submit_staged(out)?;
        let n = self.get_events(0, usize::MAX, Some(Duration::ZERO))?;
        self.complete(n, out)?;
        if !self.unsubmitted.is_empty() {
            self.submit_staged(out)?;
        }
        Ok(())
    }

    fn wait(&mut self, until: Instant, out: &mut Vec<Done>) -> Result<()> {
        if self.ring || self.spin {
            return super::nap_between_polls(self, until, out);
        }
        let had = out.len();
        out.append(&mut self.trimmed);
        self.submit_staged(out)?;
        if out.len() == had {
            // Sleeps in io_getevents until the first completion or `until`.
            let left = until.saturating_duration_since(Instant::now());
            let n = self.get_events(1, usize::MAX, Some(left))?;
            self.complete(n, out)?;
        }
        if !self.unsubmitted.is_empty() {
            self.submit_staged(out)?;
        }
        Ok(())
    }

    fn reap(
        &mut self,
        min: usize,
        max: usize,
        timeout: Duration,
        out: &mut Vec<Done>,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut got = self.trimmed.len();
        out.append(&mut self.trimmed);
        got += self.submit_staged(out)?;
        let mut spins = 0u32;
        while got < min {
            // Each call asks for no more than is left of `max` (fio asks
            // io_getevents for its maximum, 1 by default).
            let room = max.saturating_sub(got).max(1);
            let n = if self.spin {
                self.get_events(0, room, Some(Duration::ZERO))?
            } else {
                let left = deadline.saturating_duration_since(Instant::now());
                self.get_events(min - got, room, Some(left))?
            };
            got += self.complete(n, out)?;
            if !self.unsubmitted.is_empty() {
                got += self.submit_staged(out)?;
            }
            if got >= min {
                break;
            }
            if n == 0 {
                spins = spins.wrapping_add(1);
                if (!self.spin || spins.is_multiple_of(4096)) && Instant::now() >= deadline {
                    return Err(super::hang(timeout));
                }
                std::hint::spin_loop();
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
        let mut s = format!(
            "libaio, io_submit/io_getevents (kernel AIO), up to {} in flight: {} I/Os in {} io_submit calls",
            self.depth, self.ios, self.submits
        );
        if self.ring {
            s.push_str(", spin reading the AIO completion ring in user space (userspace_reap)");
        } else if self.spin {
            s.push_str(", spin on io_getevents with min 0");
            if self.userspace_reap {
                s.push_str(" (userspace_reap: this kernel's ring is not the kind fio reads)");
            }
        } else {
            s.push_str(", sleep in io_getevents until woken");
            if self.userspace_reap {
                s.push_str(" (userspace_reap reaps only when polling: add completion=poll)");
            }
        }
        if self.rw_flags & libc::RWF_NOWAIT != 0 {
            s.push_str(&format!(
                ", RWF_NOWAIT ({} EAGAIN resubmitted)",
                self.eagain
            ));
        }
        if let Some(t) = &self.trim {
            s.push_str(&format!(
                ", trims by {} inside queue, done at once (as fio's libaio engine)",
                t.words()
            ));
        }
        if !self.direct {
            s.push_str(
                "; buffered (direct=0): Linux does the I/O inside io_submit, so nothing is queued",
            );
        }
        s
    }
}

impl Drop for Libaio {
    fn drop(&mut self) {
        // SAFETY: our context; io_destroy waits for I/O still in flight.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::IoMemory;
    use crate::job::IoMem;

    #[test]
    fn the_abi_structs_have_the_kernels_sizes() {
        assert_eq!(std::mem::size_of::<Iocb>(), 64);
        assert_eq!(std::mem::size_of::<IoEvent>(), 32);
        assert_eq!(std::mem::size_of::<AioRing>(), 32);
    }

    /// Eight writes in flight, then eight reads, polled through the ring
    /// and through io_getevents; the bytes land where they should.
    #[test]
    fn eight_in_flight_move_the_right_bytes() {
        let dir = tempfile::tempdir().unwrap();
        for (mode, reap) in [("interrupt", "0"), ("poll", "0"), ("poll", "1")] {
            let f = dir.path().join(format!("aio-{mode}-{reap}"));
            let mut j = Job::default();
            for (k, v) in [
                ("ioengine", "libaio"),
                ("rw", "rw"),
                ("size", "64k"),
                ("bs", "8k"),
                ("iodepth", "8"),
                ("completion", mode),
                ("userspace_reap", reap),
            ] {
                j.set(k, Some(v)).unwrap();
            }
            let t = Target::open(&j, &f, false).unwrap();
            let mut e = match Libaio::new(std::slice::from_ref(&t), &j, 8) {
                Ok(e) => e,
                Err(err) => {
                    eprintln!("skipped: {err}");
                    return;
                }
            };
            let mut mem = IoMemory::new(IoMem::Malloc, 8, 8192).unwrap();
            let mut out = Vec::new();
            for dir in [Dir::Write, Dir::Read] {
                for s in 0..8 {
                    if dir == Dir::Write {
                        mem.slot(s, 8192).fill(s as u8 + 1);
                    } else {
                        mem.slot(s, 8192).fill(0);
                    }
                    let buf = mem.slot_ptr(s);
                    e.queue(Op {
                        dir,
                        file: 0,
                        offset: (7 - s as u64) * 8192,
                        len: 8192,
                        slot: s,
                        buf,
                        ioprio: None,
                    })
                    .unwrap();
                }
                out.clear();
                while out.len() < 8 {
                    e.reap(1, 1, Duration::from_secs(5), &mut out).unwrap();
                }
                assert!(out.iter().all(|d| d.res == Ok(8192)), "{mode}");
            }
            for s in 0..8 {
                assert!(mem.slot(s, 8192).iter().all(|&b| b == s as u8 + 1));
            }
            let data = std::fs::read(&f).unwrap();
            assert_eq!(data[7 * 8192], 1);
            assert_eq!(data[0], 8);
            let d = e.completion_detail();
            assert!(d.starts_with("libaio, io_submit"), "{d}");
            if reap == "1" {
                assert!(d.contains("userspace_reap"), "{d}");
            }
        }
    }
}
