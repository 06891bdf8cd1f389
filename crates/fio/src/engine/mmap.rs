//! `mmap`: the job's region mapped shared, I/O as memcpy to and from it, as
//! fio's mmap engine. `fsync` is msync.

use super::{Dir, Done, Engine, Op, Target, Trimmer};
use crate::error::{Error, Result};
use crate::job::Job;
use std::collections::VecDeque;
use std::time::Duration;

/// One file's shared mapping.
struct Map {
    base: *mut u8,
    len: usize,
    /// Target offset of `base` (page-aligned at or below the job's offset).
    start: u64,
}

pub struct Mmap {
    /// The job's files' mappings, by [`Op::file`].
    maps: Vec<Map>,
    done: VecDeque<Done>,
    /// Trims: as fio's mmap engine, not through the mapping but on the
    /// file (a hole punched, a discard); the mapping then reads zeros.
    trim: Option<Trimmer>,
}

impl Mmap {
    pub fn new(targets: &[Target], job: &Job) -> Result<Mmap> {
        let mut m = Mmap {
            maps: Vec::with_capacity(targets.len()),
            done: VecDeque::with_capacity(1),
            trim: Trimmer::of(targets, job),
        };
        for target in targets {
            // Pushed one by one: what is mapped is unmapped on an error.
            m.maps.push(Map::new(target, job)?);
        }
        Ok(m)
    }
}

impl Map {
    fn new(target: &Target, job: &Job) -> Result<Map> {
        let page = 4096u64;
        let start = target.offset / page * page;
        let len = usize::try_from(target.offset + target.size - start)
            .map_err(|_| Error::usage("region too large to map"))?;
        let prot = if job.rw.writes() {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: maps the target's region; unmapped in Drop.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                target.fd(),
                start as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            let e = std::io::Error::last_os_error();
            return Err(Error::run(format!(
                "job {}: cannot mmap {} ({e}); this target may not support mapping (use ioengine=psync)",
                job.name,
                target.path.display()
            ))
            .with_source(e));
        }
        Ok(Map {
            base: p.cast(),
            len,
            start,
        })
    }
}

impl Engine for Mmap {
    fn queue(&mut self, op: Op) -> Result<()> {
        if op.dir == Dir::Trim {
            let done = super::trim::complete(&mut self.trim, &op)?;
            self.done.push_back(done);
            return Ok(());
        }
        let map = &self.maps[op.file];
        let at = (op.offset - map.start) as usize;
        debug_assert!(at + op.len <= map.len);
        // SAFETY: the op lies inside the mapped region (the worker draws
        // offsets from the target's region) and inside the slot buffer.
        unsafe {
            let m = map.base.add(at);
            match op.dir {
                Dir::Read => std::ptr::copy_nonoverlapping(m, op.buf, op.len),
                Dir::Write => std::ptr::copy_nonoverlapping(op.buf, m, op.len),
                Dir::Trim => unreachable!("trims are made on the file"),
            }
        }
        self.done.push_back(Done {
            slot: op.slot,
            res: Ok(op.len),
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
        out.extend(self.done.drain(..));
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        for m in &self.maps {
            // SAFETY: msync over our own mapping.
            if unsafe { libc::msync(m.base.cast(), m.len, libc::MS_SYNC) } < 0 {
                return Err(Error::os("msync"));
            }
        }
        Ok(())
    }

    fn completion_detail(&self) -> String {
        let mut s =
            String::from("mmap, memcpy to/from a shared mapping (no completion to wait for)");
        if let Some(t) = &self.trim {
            s.push_str(&format!(", trims by {} on the file", t.words()));
        }
        s
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: mapped in `new` with this length.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}
