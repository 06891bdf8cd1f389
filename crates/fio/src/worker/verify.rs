//! Verify, the worker's part (the options are `job::verify`'s, the block
//! format `crate::verify`'s). Checking what was written (fio's
//! `do_verify`): a reader checks each
//! block as it lands; a writer reads back what it wrote, after its write
//! phase or every `verify_backlog` blocks during it.

use super::{Flight, VerifyReport, Worker};
use crate::engine::{self, Dir, Done, Op};
use crate::error::Result;
use crate::job::Job;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Which blocks a read-back goes over.
#[derive(Clone, Copy)]
enum Blocks {
    /// verify_backlog's list, from its start (cycled for a batch larger
    /// than the list).
    Backlog,
    /// The writes of mixed sizes this pass made.
    Logged,
    /// A fixed size's blocks, in the write order.
    Order,
}

impl Worker<'_> {
    /// A reader's completed read, checked against what the writer put there.
    pub(super) fn check_read(&mut self, f: &Flight, slot: usize) {
        let job = self.job;
        let Some(v) = self.verify.as_mut().filter(|v| v.reads) else {
            return;
        };
        v.tally.blocks += 1;
        let data = self.mem.slot(slot, f.len as usize);
        if let Err(bad) = crate::verify::check(data, &v.spec, f.offset, f.block, job.randseed) {
            note_bad(&mut v.tally, &bad, job, self.files.name(f.file), data);
            if job.verify_fatal {
                self.end.stopping = true;
            }
        }
    }

    /// verify_backlog: with the queue drained, the blocks written since the
    /// last check are read back and checked.
    pub(super) fn check_backlog(&mut self) -> Result<()> {
        let job = self.job;
        let Some(v) = self.verify.as_mut() else {
            return Ok(());
        };
        v.want_check = false;
        if self.end.stopping {
            return Ok(());
        }
        let batch = job.verify_backlog_batch.unwrap_or(v.unchecked.len() as u64);
        self.end.failure = self.read_back(Blocks::Backlog, batch)?;
        let Some(v) = self.verify.as_mut() else {
            return Ok(());
        };
        v.unchecked.clear();
        if self.end.failure.is_some() || (v.tally.bad > 0 && job.verify_fatal) {
            self.end.stopping = true;
        }
        Ok(())
    }

    /// The writer's read-back pass after its write phase: every block it
    /// wrote (with verify_backlog: those written since the last check),
    /// unless the job failed, was stopped, or already found a fatal bad one.
    pub(super) fn final_check(&mut self) -> Result<()> {
        let job = self.job;
        let Some(v) = &self.verify else {
            return Ok(());
        };
        if !(job.rw.writes()
            && job.do_verify
            && self.end.failure.is_none()
            && !self.end.partial
            && !(job.verify_fatal && v.tally.bad > 0))
        {
            return Ok(());
        }
        let (which, count) = if v.backlog > 0 {
            (Blocks::Backlog, v.unchecked.len() as u64)
        } else if v.rw_blocks.is_some() {
            let bs = job.bs;
            let v = self.verify.as_mut().expect("verify");
            let mut list = v.rw_blocks.take().unwrap_or_default();
            list.sort_unstable();
            list.dedup();
            v.written = list.into_iter().map(|(f, rel)| (f, rel, bs)).collect();
            (Blocks::Logged, v.written.len() as u64)
        } else if v.log_writes {
            (Blocks::Logged, v.written.len() as u64)
        } else {
            (
                Blocks::Order,
                self.issued.writes.min(self.files.written_count()),
            )
        };
        self.end.failure = self.read_back(which, count)?;
        Ok(())
    }

    /// Where the i-th block of a read-back lies: its file, its offset from
    /// that file's region's start, and its length.
    fn extent(&self, which: Blocks, i: u64) -> (usize, u64, u64) {
        let v = self.verify.as_ref().expect("a read-back has verify=");
        match which {
            Blocks::Backlog => v.unchecked[(i % v.unchecked.len() as u64) as usize],
            Blocks::Logged => v.written[i as usize],
            Blocks::Order => {
                let (f, rel) = self.files.written(i);
                (f, rel, self.job.bs)
            }
        }
    }

    /// Reads `count` blocks back one at a time, checking each. Returns why
    /// it failed, if it did.
    fn read_back(&mut self, which: Blocks, count: u64) -> Result<Option<String>> {
        let job = self.job;
        let mut done: Vec<Done> = Vec::with_capacity(1);
        let mut failure = None;
        let t = Instant::now();
        let mut i = 0u64;
        while i < count && !self.stop.load(Ordering::Relaxed) {
            let (file, rel, len) = self.extent(which, i);
            let (blk, offset, bs) = (rel / job.bs, self.files.start(file) + rel, len as usize);
            let buf = self.mem.slot_ptr(0);
            self.eng.queue(Op {
                dir: Dir::Read,
                file,
                offset,
                len: bs,
                slot: 0,
                buf,
                ioprio: None,
            })?;
            done.clear();
            while done.is_empty() {
                self.eng.reap(1, 1, self.shared.timeout, &mut done)?;
            }
            let path = self.files.name(file);
            if let Some(why) = read_failure(job, done[0].res, offset, path, bs) {
                failure = Some(why);
                break;
            }
            let Some(v) = self.verify.as_mut() else { break };
            v.tally.blocks += 1;
            let data = self.mem.slot(0, bs);
            if let Err(bad) = crate::verify::check(data, &v.spec, offset, blk, job.randseed) {
                note_bad(&mut v.tally, &bad, job, path, data);
                if job.verify_fatal {
                    break;
                }
            }
            i += 1;
            self.prog.last_ns.store(
                self.shared.t0.elapsed().as_nanos() as u64,
                Ordering::Relaxed,
            );
        }
        if let Some(v) = self.verify.as_mut() {
            let vs = &mut v.tally;
            vs.readback_s = Some(vs.readback_s.unwrap_or(0.0) + t.elapsed().as_secs_f64());
        }
        Ok(failure)
    }
}

/// Why a read-back read failed, if it did: short, or refused.
fn read_failure(
    job: &Job,
    res: std::result::Result<usize, i32>,
    offset: u64,
    path: &str,
    bs: usize,
) -> Option<String> {
    match res {
        Ok(n) if n == bs => None,
        Ok(n) => Some(format!(
            "job {}: short read-back at offset {offset} of {path}: {n} of {bs} bytes",
            job.name
        )),
        Err(e) => Some(format!(
            "job {}: read-back at offset {offset} of {path} failed: {} (a write-only device? verify by reading through its read channel in a later job, as do_verify=0 writers do)",
            job.name,
            engine::errno_text(e)
        )),
    }
}

/// Records a bad block of file `path`: the first is described (naming
/// its file when the job has several) and dumped if asked.
fn note_bad(
    vs: &mut VerifyReport,
    bad: &crate::verify::BadBlock,
    job: &Job,
    path: &str,
    data: &[u8],
) {
    vs.bad += 1;
    if vs.first_bad.is_some() {
        return;
    }
    vs.first_bad = Some(if job.filenames.is_empty() {
        bad.to_string()
    } else {
        format!("{bad} in {path}")
    });
    if job.verify_dump {
        let base = Path::new(path)
            .file_name()
            .map_or_else(|| "target".into(), |s| s.to_string_lossy().into_owned());
        for (suffix, bytes) in [("received", data), ("expected", &bad.expected_block[..])] {
            let name = format!("{base}.{}.{suffix}", bad.offset);
            match std::fs::write(&name, bytes) {
                Ok(()) => vs.dumped.push(name),
                Err(e) => eprintln!("xferbench: warning: verify_dump: cannot write {name}: {e}"),
            }
        }
    }
}

/// Why the job fails when blocks did not verify, naming the first bad one.
pub(super) fn verify_failure(vs: &VerifyReport, job: &Job, path: &str) -> Option<String> {
    (vs.bad > 0).then(|| {
        format!(
            "job {}: verify failed on {}: {} bad block{} of {} checked; first: {}{}",
            job.name,
            path,
            vs.bad,
            if vs.bad == 1 { "" } else { "s" },
            vs.blocks,
            vs.first_bad.as_deref().unwrap_or("?"),
            if vs.dumped.is_empty() {
                String::new()
            } else {
                format!(" (dumped to {})", vs.dumped.join(" and "))
            }
        )
    })
}
