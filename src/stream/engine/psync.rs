//! `psync`: one pread/pwrite per block at an explicit offset, as fio's psync.
//! Polled completion opens the target non-blocking and spins on EAGAIN —
//! what a polled DMA driver's users do; regular files never return EAGAIN.

use super::{Done, Engine, Op, Target};
use crate::error::Result;
use std::collections::VecDeque;
use std::time::Duration;

pub struct Psync {
    fd: i32,
    poll: bool,
    done: VecDeque<Done>,
}

impl Psync {
    pub fn new(target: &Target, poll: bool) -> Psync {
        Psync {
            fd: target.fd(),
            poll,
            done: VecDeque::with_capacity(1),
        }
    }
}

impl Engine for Psync {
    fn queue(&mut self, op: Op) -> Result<()> {
        let mut moved = 0usize;
        let res = loop {
            // SAFETY: op.buf holds op.len bytes owned by the worker.
            let r = unsafe {
                let p = op.buf.add(moved);
                let off = (op.offset + moved as u64) as libc::off_t;
                match op.dir {
                    super::Dir::Read => libc::pread(self.fd, p.cast(), op.len - moved, off),
                    super::Dir::Write => libc::pwrite(self.fd, p.cast(), op.len - moved, off),
                }
            };
            if r < 0 {
                let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
                if e == libc::EINTR || (self.poll && e == libc::EAGAIN) {
                    std::hint::spin_loop();
                    continue;
                }
                break Err(e);
            }
            // A partial transfer continues where it stopped, as fio requeues
            // the residual; 0 (end of file or device) ends it short, and the
            // worker reports that.
            moved += r as usize;
            if r == 0 || moved == op.len {
                break Ok(moved);
            }
        };
        self.done.push_back(Done { slot: op.slot, res });
        Ok(())
    }

    fn reap(&mut self, _min: usize, _timeout: Duration, out: &mut Vec<Done>) -> Result<()> {
        out.extend(self.done.drain(..));
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        // SAFETY: plain fsync on our descriptor.
        if unsafe { libc::fsync(self.fd) } < 0 {
            return Err(crate::error::Error::os("fsync"));
        }
        Ok(())
    }

    fn completion_detail(&self) -> String {
        if self.poll {
            "psync, O_NONBLOCK with spin on EAGAIN".into()
        } else {
            "psync, blocking pread/pwrite".into()
        }
    }
}
