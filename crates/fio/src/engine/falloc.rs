//! fio's `falloc` and `ftruncate` engines: I/Os that change a file's
//! allocation rather than move data, for fragmentation and metadata tests.
//! `falloc`: a write allocates its range (`fallocate` mode 0), a read
//! allocates it without growing the file (KEEP_SIZE), a trim punches it
//! out. `ftruncate`: a write truncates the file to its offset. Each call is
//! one timed I/O of the block's length, as fio counts them.

use super::{Dir, Done, Engine, Op, Target};
use crate::error::{Error, Result};
use crate::job::Job;
use std::time::Duration;

pub struct Falloc {
    fds: Vec<i32>,
    truncate: bool,
    job: String,
    /// The one I/O `queue` performed (depth is 1).
    done: Option<Done>,
    calls: u64,
}

impl Falloc {
    pub fn new(targets: &[Target], job: &Job, truncate: bool) -> Falloc {
        Falloc {
            fds: targets.iter().map(Target::fd).collect(),
            truncate,
            job: job.name.clone(),
            done: None,
            calls: 0,
        }
    }
}

impl Engine for Falloc {
    fn queue(&mut self, op: Op) -> Result<()> {
        let fd = self.fds[op.file];
        self.calls += 1;
        let r = loop {
            // SAFETY: fallocate / ftruncate on the job's own descriptor.
            let r = unsafe {
                if self.truncate {
                    libc::ftruncate(fd, op.offset as libc::off_t)
                } else {
                    let mode = match op.dir {
                        Dir::Write => 0,
                        Dir::Read => libc::FALLOC_FL_KEEP_SIZE,
                        Dir::Trim => libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    };
                    libc::fallocate(fd, mode, op.offset as libc::off_t, op.len as libc::off_t)
                }
            };
            if r == 0 {
                break Ok(op.len);
            }
            let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            if e != libc::EINTR {
                break Err(e);
            }
        };
        if let Err(e) = r
            && (e == libc::EOPNOTSUPP || e == libc::ENOSYS)
        {
            return Err(Error::usage(format!(
                "job {}: ioengine=falloc: this file system cannot fallocate ({}); put the file on ext4, xfs, btrfs or tmpfs",
                self.job,
                super::errno_text(e)
            )));
        }
        self.done = Some(Done {
            slot: op.slot,
            res: r,
        });
        Ok(())
    }

    fn reap(
        &mut self,
        _min: usize,
        _max: usize,
        _timeout: Duration,
        out: &mut Vec<Done>,
    ) -> Result<()> {
        out.extend(self.done.take());
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        for &fd in &self.fds {
            super::flush_to_disk(fd, false)?;
        }
        Ok(())
    }

    fn completion_detail(&self) -> String {
        if self.truncate {
            format!(
                "ftruncate: each write truncates the file to its offset, no data moved ({} calls)",
                self.calls
            )
        } else {
            format!(
                "falloc: writes fallocate their range, reads fallocate it with KEEP_SIZE, trims punch it out; no data moved ({} calls)",
                self.calls
            )
        }
    }
}
