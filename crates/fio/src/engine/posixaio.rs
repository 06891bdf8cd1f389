//! `posixaio`: POSIX AIO as glibc provides it — `aio_read`/`aio_write` per
//! I/O, `aio_error`/`aio_return` to collect, `aio_suspend` (with a timeout)
//! to wait, as fio's posixaio engine. glibc does the I/O in helper threads
//! with pread/pwrite, so this measures that user-space machinery; the
//! kernel's own queue is `libaio` or `io_uring`. Polled completion spins on
//! `aio_error` instead of sleeping in `aio_suspend`. A short transfer is
//! resubmitted for the rest.

use super::{Dir, Done, Engine, Op, Target, Trimmer, hang};
use crate::error::{Error, Result};
use crate::job::{Completion, Job};
use std::time::{Duration, Instant};

pub struct PosixAio {
    /// The job's files' descriptors, by [`Op::file`].
    fds: Vec<i32>,
    depth: usize,
    spin: bool,
    /// One control block per slot, where glibc may write until it is done.
    cbs: Box<[libc::aiocb]>,
    pending: Vec<Option<(Op, usize)>>,
    /// Slots submitted and not yet collected, oldest first.
    inflight: Vec<usize>,
    /// The control blocks `aio_suspend` waits on (kept for its room): the
    /// oldest [`SUSPEND_ENTRIES`] in flight.
    suspend: Vec<*const libc::aiocb>,
    /// Completions found at submission (a refused request).
    ready: Vec<Done>,
    ios: u64,
    suspends: u64,
    /// Trims, made inside `queue` as fio's posixaio engine makes them
    /// (POSIX AIO has no trim); their completions wait in `ready`.
    trim: Option<Trimmer>,
}

// SAFETY: the control blocks are this worker's alone.
unsafe impl Send for PosixAio {}

/// The most control blocks one `aio_suspend` waits on, as fio's posixaio
/// engine: glibc looks each one up along its queue, so a wait on every
/// I/O of a deep queue costs the square of the depth (seconds at 64 Ki).
/// The oldest in flight are the ones that finish first.
const SUSPEND_ENTRIES: usize = 8;

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

impl PosixAio {
    pub fn new(targets: &[Target], job: &Job, depth: usize) -> PosixAio {
        PosixAio {
            fds: targets.iter().map(Target::fd).collect(),
            depth,
            spin: job.completion() == Completion::Poll,
            // SAFETY: an all-zero aiocb is a valid idle control block.
            cbs: (0..depth).map(|_| unsafe { std::mem::zeroed() }).collect(),
            pending: vec![None; depth],
            inflight: Vec::with_capacity(depth),
            suspend: Vec::with_capacity(SUSPEND_ENTRIES),
            ready: Vec::with_capacity(depth),
            ios: 0,
            suspends: 0,
            trim: Trimmer::of(targets, job),
        }
    }

    /// Submits the part of `op` after `moved`.
    fn push(&mut self, op: Op, moved: usize) {
        let cb = &mut self.cbs[op.slot];
        // SAFETY: reset to idle; glibc is done with this block.
        *cb = unsafe { std::mem::zeroed() };
        cb.aio_fildes = self.fds[op.file];
        // SAFETY: inside the slot's buffer.
        cb.aio_buf = unsafe { op.buf.add(moved) }.cast();
        cb.aio_nbytes = op.len - moved;
        cb.aio_offset = (op.offset + moved as u64) as libc::off_t;
        cb.aio_sigevent.sigev_notify = libc::SIGEV_NONE;
        // SAFETY: the block and the buffer outlive the request (collected
        // before reuse, and waited for in Drop).
        let r = unsafe {
            match op.dir {
                Dir::Read => libc::aio_read(cb),
                Dir::Write => libc::aio_write(cb),
                Dir::Trim => unreachable!("a trim is made inside queue, not by aio"),
            }
        };
        if r < 0 {
            let e = errno();
            self.ready.push(Done {
                slot: op.slot,
                res: if moved > 0 { Ok(moved) } else { Err(e) },
            });
            return;
        }
        self.pending[op.slot] = Some((op, moved));
        self.inflight.push(op.slot);
    }

    /// Collects every finished request; returns how many I/Os finished.
    /// What is still in flight keeps its order (a resubmitted rest goes
    /// last).
    fn collect(&mut self, out: &mut Vec<Done>) -> usize {
        let mut finished = 0;
        let seen = self.inflight.len();
        let mut kept = 0;
        for i in 0..seen {
            let slot = self.inflight[i];
            let cb = &mut self.cbs[slot];
            // SAFETY: a submitted control block.
            let e = unsafe { libc::aio_error(cb) };
            if e == libc::EINPROGRESS {
                self.inflight[kept] = slot;
                kept += 1;
                continue;
            }
            // SAFETY: finished; aio_return may be called once.
            let r = unsafe { libc::aio_return(cb) };
            let Some((op, moved)) = self.pending[slot].take() else {
                continue;
            };
            if e != 0 || r < 0 {
                let err = if e > 0 { e } else { libc::EIO };
                out.push(Done {
                    slot,
                    res: if moved > 0 { Ok(moved) } else { Err(err) },
                });
                finished += 1;
                continue;
            }
            let moved = moved + r as usize;
            if r > 0 && moved < op.len {
                self.push(op, moved);
                continue;
            }
            out.push(Done {
                slot,
                res: Ok(moved),
            });
            finished += 1;
        }
        self.inflight.drain(kept..seen);
        finished
    }
}

impl Engine for PosixAio {
    fn queue(&mut self, op: Op) -> Result<()> {
        self.ios += 1;
        if op.dir == Dir::Trim {
            let done = super::trim::complete(&mut self.trim, &op)?;
            self.ready.push(done);
            return Ok(());
        }
        self.push(op, 0);
        Ok(())
    }

    /// Collects every request found finished, as fio's posixaio engine
    /// does (its reap takes no maximum).
    fn reap(
        &mut self,
        min: usize,
        _max: usize,
        timeout: Duration,
        out: &mut Vec<Done>,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut got = self.ready.len();
        out.append(&mut self.ready);
        let mut spins = 0u32;
        loop {
            got += self.collect(out);
            got += self.ready.len();
            out.append(&mut self.ready);
            if got >= min || self.inflight.is_empty() {
                return Ok(());
            }
            let now = Instant::now();
            if self.spin {
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(4096) && now >= deadline {
                    return Err(hang(timeout));
                }
                std::hint::spin_loop();
                continue;
            }
            let left = deadline.saturating_duration_since(now);
            if left.is_zero() {
                return Err(hang(timeout));
            }
            // The list's room was made with the engine: no allocation here.
            let mut list = std::mem::take(&mut self.suspend);
            list.clear();
            list.extend(
                self.inflight
                    .iter()
                    .take(SUSPEND_ENTRIES)
                    .map(|&s| &self.cbs[s] as *const libc::aiocb),
            );
            let ts = libc::timespec {
                tv_sec: left.as_secs() as libc::time_t,
                tv_nsec: left.subsec_nanos() as libc::c_long,
            };
            self.suspends += 1;
            // SAFETY: every pointer is a submitted control block.
            let r = unsafe { libc::aio_suspend(list.as_ptr(), list.len() as libc::c_int, &ts) };
            self.suspend = list;
            if r < 0 {
                let e = errno();
                if e != libc::EAGAIN && e != libc::EINTR {
                    return Err(Error::run(format!(
                        "aio_suspend failed: {}",
                        super::errno_text(e)
                    )));
                }
            }
        }
    }

    fn sync(&mut self) -> Result<()> {
        self.fds
            .iter()
            .try_for_each(|&fd| super::flush_to_disk(fd, false))
    }

    fn completion_detail(&self) -> String {
        format!(
            "posixaio, glibc aio_read/aio_write (helper threads doing pread/pwrite), up to {} in flight, {}{}",
            self.depth,
            if self.spin {
                "spin on aio_error".to_string()
            } else {
                format!(
                    "sleep in aio_suspend until one finishes ({} waits)",
                    self.suspends
                )
            },
            self.trim.as_ref().map_or(String::new(), |t| format!(
                ", trims by {} inside queue, done at once (as fio's posixaio engine)",
                t.words()
            ))
        )
    }
}

impl Drop for PosixAio {
    fn drop(&mut self) {
        // glibc writes into the blocks (and buffers) of requests still in
        // flight: cancel them and wait until none is.
        if self.inflight.is_empty() {
            return;
        }
        for &fd in &self.fds {
            // SAFETY: cancels this descriptor's requests.
            unsafe { libc::aio_cancel(fd, std::ptr::null_mut()) };
        }
        for &s in &self.inflight {
            let cb = &self.cbs[s] as *const libc::aiocb;
            // SAFETY: a submitted control block.
            while unsafe { libc::aio_error(cb) } == libc::EINPROGRESS {
                let ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 100_000_000,
                };
                // SAFETY: as above.
                unsafe { libc::aio_suspend(&cb, 1, &ts) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::IoMemory;
    use crate::job::IoMem;

    #[test]
    fn four_in_flight_write_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        for mode in ["interrupt", "poll"] {
            let f = dir.path().join(mode);
            let mut j = Job::default();
            for (k, v) in [
                ("ioengine", "posixaio"),
                ("rw", "rw"),
                ("size", "16k"),
                ("iodepth", "4"),
                ("completion", mode),
            ] {
                j.set(k, Some(v)).unwrap();
            }
            let t = Target::open(&j, &f, false).unwrap();
            let mut e = PosixAio::new(std::slice::from_ref(&t), &j, 4);
            let mut mem = IoMemory::new(IoMem::Malloc, 4, 4096).unwrap();
            for dir in [Dir::Write, Dir::Read] {
                for s in 0..4 {
                    mem.slot(s, 4096)
                        .fill(if dir == Dir::Write { 0x30 + s as u8 } else { 0 });
                    let buf = mem.slot_ptr(s);
                    e.queue(Op {
                        dir,
                        file: 0,
                        offset: s as u64 * 4096,
                        len: 4096,
                        slot: s,
                        buf,
                        ioprio: None,
                    })
                    .unwrap();
                }
                let mut out = Vec::new();
                while out.len() < 4 {
                    e.reap(1, 1, Duration::from_secs(5), &mut out).unwrap();
                }
                assert!(out.iter().all(|d| d.res == Ok(4096)), "{mode}");
            }
            for s in 0..4 {
                assert!(mem.slot(s, 4096).iter().all(|&b| b == 0x30 + s as u8));
            }
            assert!(e.completion_detail().starts_with("posixaio, glibc"));
        }
    }
}
