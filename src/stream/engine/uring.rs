//! `io_uring`: up to `iodepth` reads/writes in flight on one ring. Interrupt
//! completion sleeps in `io_uring_enter`; polled completion either lets the
//! kernel poll the device (`hipri` → IORING_SETUP_IOPOLL, needs O_DIRECT on a
//! device with poll queues) or spins on the completion ring in user space;
//! `sqthread_poll` adds a kernel thread that picks up submissions (SQPOLL).

use super::{Dir, Done, Engine, Op, Target};
use crate::error::{Error, Result};
use crate::stream::job::{Completion, Job};
use io_uring::{IoUring, opcode, types};
use std::time::{Duration, Instant};

pub struct Uring {
    ring: IoUring,
    fd: i32,
    iopoll: bool,
    sqpoll: bool,
    spin: bool,
    /// The op each slot carries and how many of its bytes have moved, so a
    /// short transfer is continued rather than lost.
    pending: Vec<Option<(Op, usize)>>,
    unsubmitted: usize,
}

impl Uring {
    pub fn new(target: &Target, job: &Job, depth: usize) -> Result<Uring> {
        let mut b = IoUring::builder();
        if job.hipri {
            b.setup_iopoll();
        }
        if job.sqthread_poll {
            b.setup_sqpoll(1000);
        }
        let entries = depth.next_power_of_two().max(1) as u32;
        let ring = b.build(entries).map_err(|e| {
            Error::run(format!(
                "job {}: cannot set up io_uring with {entries} entries{}: {e}; check that io_uring is enabled (sysctl kernel.io_uring_disabled=0) or use ioengine=psync",
                job.name,
                if job.sqthread_poll { " and SQPOLL" } else { "" }
            ))
        })?;
        Ok(Uring {
            ring,
            fd: target.fd(),
            iopoll: job.hipri,
            sqpoll: job.sqthread_poll,
            spin: job.completion() == Completion::Poll && !job.hipri,
            pending: vec![None; depth],
            unsubmitted: 0,
        })
    }

    fn push(&mut self, op: Op, moved: usize) -> Result<()> {
        // SAFETY: the buffer stays valid until the completion is reaped.
        let p = unsafe { op.buf.add(moved) };
        let len = (op.len - moved) as u32;
        let off = op.offset + moved as u64;
        let fd = types::Fd(self.fd);
        let e = match op.dir {
            Dir::Read => opcode::Read::new(fd, p, len).offset(off).build(),
            Dir::Write => opcode::Write::new(fd, p, len).offset(off).build(),
        }
        .user_data(op.slot as u64);
        // SAFETY: as above.
        while unsafe { self.ring.submission().push(&e) }.is_err() {
            self.ring
                .submit()
                .map_err(|e| Error::run(format!("io_uring submit: {e}")))?;
            self.unsubmitted = 0;
        }
        self.pending[op.slot] = Some((op, moved));
        self.unsubmitted += 1;
        Ok(())
    }

    /// Moves finished entries from the completion ring to `out`; returns how many.
    fn drain(&mut self, out: &mut Vec<Done>) -> Result<usize> {
        let mut n = 0;
        let cqes: Vec<(u64, i32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (slot, res) in cqes {
            let slot = slot as usize;
            let Some((op, moved)) = self.pending.get_mut(slot).and_then(Option::take) else {
                continue;
            };
            if res < 0 {
                if -res == libc::EOPNOTSUPP && self.iopoll {
                    return Err(Error::usage(
                        "hipri (IOPOLL) is not supported by this target: polled I/O needs direct=1 on a block device with poll queues; drop hipri or use completion=poll (user-space spin)",
                    ));
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

impl Engine for Uring {
    fn queue(&mut self, op: Op) -> Result<()> {
        self.push(op, 0)
    }

    fn reap(&mut self, min: usize, timeout: Duration, out: &mut Vec<Done>) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut got = self.drain(out)?;
        if self.spin {
            if self.unsubmitted > 0 || self.sqpoll {
                self.ring
                    .submit()
                    .map_err(|e| Error::run(format!("io_uring submit: {e}")))?;
                self.unsubmitted = 0;
            }
            let mut spins = 0u32;
            while got < min {
                got += self.drain(out)?;
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(4096) && Instant::now() > deadline {
                    return Err(hang(timeout));
                }
                std::hint::spin_loop();
            }
            return Ok(());
        }
        while got < min {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(hang(timeout));
            }
            let ts = types::Timespec::from(left);
            let args = types::SubmitArgs::new().timespec(&ts);
            match self.ring.submitter().submit_with_args(min - got, &args) {
                Ok(_) => self.unsubmitted = 0,
                Err(e) if e.raw_os_error() == Some(libc::ETIME) => self.unsubmitted = 0,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) => return Err(Error::run(format!("io_uring wait: {e}"))),
            }
            got += self.drain(out)?;
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        // SAFETY: plain fsync on our descriptor (no I/O is in flight here).
        if unsafe { libc::fsync(self.fd) } < 0 {
            return Err(Error::os("fsync"));
        }
        Ok(())
    }

    fn completion_detail(&self) -> String {
        let mut s = String::from("io_uring");
        if self.iopoll {
            s.push_str(", IOPOLL (kernel polls the device)");
        } else if self.spin {
            s.push_str(", user-space spin on the completion ring");
        } else {
            s.push_str(", sleep in io_uring_enter until woken");
        }
        if self.sqpoll {
            s.push_str(", SQPOLL submission thread");
        }
        s
    }
}

fn hang(timeout: Duration) -> Error {
    Error::run(format!(
        "no I/O completed within {} (target hung or far too slow); raise --timeout if this device is that slow",
        humantime::format_duration(timeout)
    ))
}
