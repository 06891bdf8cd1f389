//! fio's synchronous engines, each the syscalls it is named after:
//!
//! | engine | a read / a write |
//! |---|---|
//! | `sync` | `lseek` + `read` / `write` |
//! | `psync` | `pread` / `pwrite` |
//! | `vsync` | `lseek` + `readv` / `writev`, the adjacent I/Os of one submit batch coalesced into one call |
//! | `pvsync` | `preadv` / `pwritev` (one iovec) |
//! | `pvsync2` | `preadv2` / `pwritev2` with RWF_HIPRI (`hipri`), RWF_NOWAIT (`nowait`), RWF_DONTCACHE (`uncached`) |
//!
//! `sync` and `vsync` skip the `lseek` when the file position is already
//! where the I/O starts, as fio does. One loop carries every engine's short
//! transfers on from where they stopped ([`SyncIo::transfer`]); only the
//! call differs. Polled completion opens the target non-blocking and spins
//! on EAGAIN — what a polled DMA driver's users do; regular files never
//! return EAGAIN.

use super::{Dir, Done, Engine, Op, Target, Trimmer};
use crate::error::{Error, Result};
use crate::job::{Completion, IoEngine, Job};
use std::collections::VecDeque;
use std::time::Duration;

/// Which syscalls move the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Sync,
    Psync,
    Vsync,
    Pvsync,
    Pvsync2,
}

impl Call {
    fn of(e: IoEngine) -> Call {
        match e {
            IoEngine::Sync => Call::Sync,
            IoEngine::Vsync => Call::Vsync,
            IoEngine::Pvsync => Call::Pvsync,
            IoEngine::Pvsync2 => Call::Pvsync2,
            _ => Call::Psync,
        }
    }

    /// Positions with lseek and then uses the file position.
    fn seeks(self) -> bool {
        matches!(self, Call::Sync | Call::Vsync)
    }

    /// The pair of syscalls, for the report.
    fn words(self) -> &'static str {
        match self {
            Call::Sync => "lseek + read/write",
            Call::Psync => "pread/pwrite",
            Call::Vsync => "lseek + readv/writev",
            Call::Pvsync => "preadv/pwritev",
            Call::Pvsync2 => "preadv2/pwritev2",
        }
    }
}

pub struct SyncIo {
    /// The job's files' descriptors, by [`Op::file`].
    fds: Vec<i32>,
    call: Call,
    engine: &'static str,
    /// The job's name, for messages.
    job: String,
    poll: bool,
    /// RWF_* flags on every pvsync2 I/O (RWF_HIPRI is added per I/O).
    flags: i32,
    hipri: bool,
    hipri_percentage: u32,
    rng: u64,
    /// Each file's position after the last sync/vsync transfer, if known.
    pos: Vec<Option<u64>>,
    /// vsync: adjacent I/Os waiting to go out in one readv/writev.
    batch: Vec<Op>,
    max_batch: usize,
    iov: Vec<libc::iovec>,
    done: VecDeque<Done>,
    ios: u64,
    calls: u64,
    lseeks: u64,
    eagain: u64,
    hipri_ios: u64,
    /// Trims, made in the call (`rw=trim` and kin).
    trim: Option<Trimmer>,
}

impl SyncIo {
    pub fn new(targets: &[Target], job: &Job, depth: usize) -> SyncIo {
        let call = Call::of(job.ioengine);
        let o = &job.engine_opts;
        let mut flags = 0;
        if call == Call::Pvsync2 {
            if o.nowait {
                flags |= libc::RWF_NOWAIT;
            }
            if o.uncached {
                flags |= RWF_DONTCACHE;
            }
        }
        // IOV_MAX is 1024 on Linux.
        let max_batch = if call == Call::Vsync {
            depth.clamp(1, 1024)
        } else {
            1
        };
        SyncIo {
            fds: targets.iter().map(Target::fd).collect(),
            call,
            engine: job.ioengine.name(),
            job: job.name.clone(),
            poll: job.completion() == Completion::Poll,
            flags,
            hipri: call == Call::Pvsync2 && job.hipri,
            hipri_percentage: o.hipri_percentage,
            rng: job.randseed ^ 0x4849_5052_4900_0001,
            pos: vec![None; targets.len()],
            batch: Vec::with_capacity(max_batch),
            max_batch,
            iov: Vec::with_capacity(max_batch),
            done: VecDeque::with_capacity(max_batch),
            ios: 0,
            calls: 0,
            lseeks: 0,
            eagain: 0,
            hipri_ios: 0,
            trim: Trimmer::of(targets, job),
        }
    }

    /// One call of the engine's syscall over `iov` at `off`: bytes moved,
    /// or the errno.
    fn call_once(
        &mut self,
        dir: Dir,
        file: usize,
        iov: &[libc::iovec],
        off: u64,
        flags: i32,
    ) -> std::result::Result<usize, i32> {
        let fd = self.fds[file];
        if self.call.seeks() && self.pos[file] != Some(off) {
            self.lseeks += 1;
            // SAFETY: plain lseek on our descriptor.
            if unsafe { libc::lseek(fd, off as libc::off_t, libc::SEEK_SET) } < 0 {
                self.pos[file] = None;
                return Err(errno());
            }
            self.pos[file] = Some(off);
        }
        self.calls += 1;
        let (p, n) = (iov[0].iov_base, iov[0].iov_len);
        let cnt = iov.len() as libc::c_int;
        let o = off as libc::off_t;
        // SAFETY: every iovec covers bytes of a slot buffer the worker owns
        // and keeps until the I/O is reaped; non-vectored calls get one.
        let r = unsafe {
            match (self.call, dir) {
                (Call::Sync, Dir::Read) => libc::read(fd, p, n),
                (Call::Sync, Dir::Write) => libc::write(fd, p, n),
                (Call::Psync, Dir::Read) => libc::pread(fd, p, n, o),
                (Call::Psync, Dir::Write) => libc::pwrite(fd, p, n, o),
                (Call::Vsync, Dir::Read) => libc::readv(fd, iov.as_ptr(), cnt),
                (Call::Vsync, Dir::Write) => libc::writev(fd, iov.as_ptr(), cnt),
                (Call::Pvsync, Dir::Read) => libc::preadv(fd, iov.as_ptr(), cnt, o),
                (Call::Pvsync, Dir::Write) => libc::pwritev(fd, iov.as_ptr(), cnt, o),
                (Call::Pvsync2, Dir::Read) => libc::preadv2(fd, iov.as_ptr(), cnt, o, flags),
                (Call::Pvsync2, Dir::Write) => libc::pwritev2(fd, iov.as_ptr(), cnt, o, flags),
                (_, Dir::Trim) => unreachable!("a trim is made by the Trimmer, not a transfer"),
            }
        };
        if r < 0 {
            self.pos[file] = None;
            return Err(errno());
        }
        if self.call.seeks() {
            self.pos[file] = Some(off + r as u64);
        }
        Ok(r as usize)
    }

    /// Moves the bytes `self.iov` describes, starting at `off`, calling
    /// again after a partial transfer from where it stopped (as fio
    /// requeues the residual) until all moved, the call returned 0 (end of
    /// file or device) or an error. Returns the bytes moved and the error.
    fn transfer(&mut self, dir: Dir, file: usize, off: u64) -> Result<(usize, Option<i32>)> {
        let total: usize = self.iov.iter().map(|v| v.iov_len).sum();
        let mut iov = std::mem::take(&mut self.iov);
        let mut first = 0;
        let mut moved = 0usize;
        let flags = self.flags | self.hipri_flag();
        let err = loop {
            match self.call_once(dir, file, &iov[first..], off + moved as u64, flags) {
                Err(e) if e == libc::EINTR => continue,
                Err(e)
                    if e == libc::EAGAIN && (self.poll || self.flags & libc::RWF_NOWAIT != 0) =>
                {
                    self.eagain += 1;
                    std::hint::spin_loop();
                    continue;
                }
                Err(e) => break Some(e),
                Ok(0) => break None,
                Ok(r) => {
                    moved += r;
                    if moved >= total {
                        break None;
                    }
                    // Step past what moved: whole iovecs, then part of one.
                    let mut left = r;
                    while left >= iov[first].iov_len {
                        left -= iov[first].iov_len;
                        first += 1;
                    }
                    // SAFETY: stays inside the iovec's own buffer.
                    iov[first].iov_base =
                        unsafe { iov[first].iov_base.cast::<u8>().add(left) }.cast();
                    iov[first].iov_len -= left;
                }
            }
        };
        iov.clear();
        self.iov = iov;
        if let Some(e) = err
            && (e == libc::EOPNOTSUPP || e == libc::EINVAL)
            && flags != 0
        {
            return Err(self.flags_refused(dir, e));
        }
        Ok((moved, err))
    }

    /// RWF_HIPRI for this I/O: always, or for `hipri_percentage` of them.
    fn hipri_flag(&mut self) -> i32 {
        if !self.hipri {
            return 0;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        if self.hipri_percentage >= 100 || (self.rng % 100) < u64::from(self.hipri_percentage) {
            self.hipri_ios += 1;
            libc::RWF_HIPRI
        } else {
            0
        }
    }

    /// The one line for a target that refuses pvsync2's flags.
    fn flags_refused(&self, dir: Dir, e: i32) -> Error {
        let mut why = Vec::new();
        if self.flags & libc::RWF_NOWAIT != 0 {
            why.push(if dir == Dir::Write {
                "nowait (RWF_NOWAIT): most file systems refuse buffered writes that may not block; use direct=1 or drop nowait"
            } else {
                "nowait (RWF_NOWAIT): this target refuses reads that may not block; drop nowait"
            });
        }
        if self.flags & RWF_DONTCACHE != 0 {
            why.push("uncached (RWF_DONTCACHE) needs Linux 6.14+ and a file system that supports it (ext4, xfs, btrfs…); drop uncached");
        }
        if why.is_empty() {
            why.push("hipri (RWF_HIPRI) is refused by this target; drop hipri");
        }
        Error::usage(format!(
            "job {}: ioengine=pvsync2: the {} was refused ({}): {}",
            self.job,
            dir.name(),
            super::errno_text(e),
            why.join("; ")
        ))
    }

    /// Sends the batch of adjacent I/Os out in one transfer and reports
    /// each: the bytes a short transfer moved go to the I/Os in order.
    fn flush(&mut self) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let ops = std::mem::take(&mut self.batch);
        self.iov.extend(ops.iter().map(|op| libc::iovec {
            iov_base: op.buf.cast(),
            iov_len: op.len,
        }));
        let (mut moved, err) = self.transfer(ops[0].dir, ops[0].file, ops[0].offset)?;
        for op in &ops {
            let part = moved.min(op.len);
            moved -= part;
            let res = match err {
                Some(e) if part < op.len => Err(e),
                _ => Ok(part),
            };
            self.done.push_back(Done { slot: op.slot, res });
        }
        self.ios += ops.len() as u64;
        self.batch = ops;
        self.batch.clear();
        Ok(())
    }
}

/// RWF_DONTCACHE (Linux 6.14), not yet in the libc crate.
const RWF_DONTCACHE: i32 = 0x80;

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

impl Engine for SyncIo {
    fn queue(&mut self, op: Op) -> Result<()> {
        // vsync: an I/O that starts where the batch ends, the same way,
        // joins it (fio's coalescing); anything else sends the batch first.
        if let Some(last) = self.batch.last()
            && (last.dir != op.dir
                || last.file != op.file
                || last.offset + last.len as u64 != op.offset
                || self.batch.len() >= self.max_batch)
        {
            self.flush()?;
        }
        if op.dir == Dir::Trim {
            // In the call, after whatever was batched before it.
            self.flush()?;
            let done = super::trim::complete(&mut self.trim, &op)?;
            self.ios += 1;
            self.calls += 1;
            self.done.push_back(done);
            return Ok(());
        }
        self.batch.push(op);
        if self.max_batch == 1 {
            self.flush()?;
        }
        Ok(())
    }

    /// vsync's coalesced batch goes in one call here, as fio's vsync
    /// commits: with `iodepth_batch_submit` 1 (fio's default) that is one
    /// call per I/O, adjacent I/Os joining only in a larger batch.
    fn commit(&mut self) -> Result<()> {
        self.flush()
    }

    fn submission(&self) -> super::Submit {
        super::Submit::CommitUntimed
    }

    fn reap(
        &mut self,
        _min: usize,
        _max: usize,
        _timeout: Duration,
        out: &mut Vec<Done>,
    ) -> Result<()> {
        self.flush()?;
        out.extend(self.done.drain(..));
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.fds
            .iter()
            .try_for_each(|&fd| super::flush_to_disk(fd, false))
    }

    fn completion_detail(&self) -> String {
        let mut s = format!("{}, {}", self.engine, self.call.words());
        if self.call.seeks() {
            s.push_str(&format!(
                " (lseek only where the file position was elsewhere: {} for {} I/Os)",
                self.lseeks, self.ios
            ));
        }
        if self.call == Call::Vsync {
            s.push_str(&format!(
                ", adjacent I/Os coalesced up to {} per call: {} I/Os in {} calls",
                self.max_batch, self.ios, self.calls
            ));
        }
        let mut flags = Vec::new();
        if self.hipri {
            flags.push(format!(
                "RWF_HIPRI on {} of {} I/Os ({}%)",
                self.hipri_ios, self.ios, self.hipri_percentage
            ));
        }
        if self.flags & libc::RWF_NOWAIT != 0 {
            flags.push(format!("RWF_NOWAIT ({} EAGAIN retried)", self.eagain));
        }
        if self.flags & RWF_DONTCACHE != 0 {
            flags.push("RWF_DONTCACHE (uncached)".into());
        }
        if !flags.is_empty() {
            s.push_str(&format!(", with {}", flags.join(", ")));
        }
        if let Some(t) = &self.trim {
            s.push_str(&format!(", trims by {} in the call", t.words()));
        }
        if self.poll {
            s.push_str(", O_NONBLOCK with spin on EAGAIN");
        } else {
            s.push_str(", blocking");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::IoMemory;
    use crate::job::IoMem;
    use std::os::unix::fs::FileExt;

    fn job(engine: &str, extra: &[(&str, &str)]) -> Job {
        let mut j = Job::default();
        j.set("ioengine", Some(engine)).unwrap();
        for (k, v) in extra {
            j.set(k, Some(v)).unwrap();
        }
        j
    }

    fn target(f: &std::path::Path, j: &Job) -> Target {
        Target::open(j, f, false).unwrap()
    }

    /// Each engine writes 8 blocks, vsync in one call when it may, and
    /// reads them back.
    #[test]
    fn every_sync_engine_writes_and_reads_back_through_its_own_call() {
        let dir = tempfile::tempdir().unwrap();
        for engine in ["sync", "psync", "vsync", "pvsync", "pvsync2"] {
            let f = dir.path().join(engine);
            let mut j = job(engine, &[("rw", "write"), ("size", "32k"), ("bs", "4k")]);
            let t = target(&f, &j);
            let mut e = SyncIo::new(std::slice::from_ref(&t), &j, 8);
            let mut mem = IoMemory::new(IoMem::Malloc, 8, 4096).unwrap();
            for s in 0..8 {
                mem.slot(s, 4096).fill(b'a' + s as u8);
                let buf = mem.slot_ptr(s);
                e.queue(Op {
                    dir: Dir::Write,
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
            e.reap(8, 8, Duration::from_secs(1), &mut out).unwrap();
            assert_eq!(out.len(), 8, "{engine}");
            assert!(out.iter().all(|d| d.res == Ok(4096)), "{engine}");
            if engine == "vsync" {
                assert_eq!(e.calls, 1, "vsync coalesces 8 adjacent writes");
            }
            let data = std::fs::read(&f).unwrap();
            for s in 0..8 {
                assert!(
                    data[s * 4096..(s + 1) * 4096]
                        .iter()
                        .all(|&b| b == b'a' + s as u8)
                );
            }
            // Backwards, so sync and vsync must seek every time.
            j.rw = crate::job::Rw::Read;
            let t = target(&f, &j);
            let mut e = SyncIo::new(std::slice::from_ref(&t), &j, 1);
            for s in (0..8).rev() {
                mem.slot(0, 4096).fill(0);
                let buf = mem.slot_ptr(0);
                e.queue(Op {
                    dir: Dir::Read,
                    file: 0,
                    offset: s as u64 * 4096,
                    len: 4096,
                    slot: 0,
                    buf,
                    ioprio: None,
                })
                .unwrap();
                out.clear();
                e.reap(1, 1, Duration::from_secs(1), &mut out).unwrap();
                assert_eq!(out[0].res, Ok(4096));
                assert!(mem.slot(0, 4096).iter().all(|&b| b == b'a' + s as u8));
            }
            if Call::of(j.ioengine).seeks() {
                assert_eq!(e.lseeks, 8, "{engine}");
            }
            assert!(
                e.completion_detail().starts_with(engine),
                "{}",
                e.completion_detail()
            );
        }
    }

    /// A read past the end stops short with the bytes there were, and a
    /// vsync batch hands them to its I/Os in order.
    #[test]
    fn a_short_transfer_is_split_over_the_batch() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("short");
        let j = job("vsync", &[("rw", "read"), ("size", "16k"), ("bs", "4k")]);
        let t = target(&f, &j);
        t.file.set_len(6144).unwrap();
        t.file.write_all_at(&[9u8; 6144], 0).unwrap();
        let mut e = SyncIo::new(std::slice::from_ref(&t), &j, 4);
        let mut mem = IoMemory::new(IoMem::Malloc, 4, 4096).unwrap();
        for s in 0..4 {
            let buf = mem.slot_ptr(s);
            e.queue(Op {
                dir: Dir::Read,
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
        e.reap(4, 4, Duration::from_secs(1), &mut out).unwrap();
        let got: Vec<_> = out.iter().map(|d| d.res).collect();
        assert_eq!(got, vec![Ok(4096), Ok(2048), Ok(0), Ok(0)]);
    }

    #[test]
    fn pvsync2_flags_are_set_and_refusals_are_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("flags");
        let mut j = job("pvsync2", &[("rw", "write"), ("size", "8k")]);
        j.set("hipri", None).unwrap();
        j.set("hipri_percentage", Some("50")).unwrap();
        let t = target(&f, &j);
        let mut e = SyncIo::new(std::slice::from_ref(&t), &j, 1);
        let mut mem = IoMemory::new(IoMem::Malloc, 1, 4096).unwrap();
        let mut out = Vec::new();
        for i in 0..200u64 {
            let buf = mem.slot_ptr(0);
            e.queue(Op {
                dir: Dir::Write,
                file: 0,
                offset: (i % 2) * 4096,
                len: 4096,
                slot: 0,
                buf,
                ioprio: None,
            })
            .unwrap();
            e.reap(1, 1, Duration::from_secs(1), &mut out).unwrap();
        }
        assert!(out.iter().all(|d| d.res == Ok(4096)));
        assert!((40..160).contains(&e.hipri_ios), "{}", e.hipri_ios);
        assert!(
            e.completion_detail().contains("RWF_HIPRI on"),
            "{}",
            e.completion_detail()
        );
        // Buffered writes that may not block: refused by most file
        // systems, in one line naming the fix; or done, where allowed.
        j.set("nowait", None).unwrap();
        let t = target(&f, &j);
        let mut e = SyncIo::new(std::slice::from_ref(&t), &j, 1);
        let buf = mem.slot_ptr(0);
        match e.queue(Op {
            dir: Dir::Write,
            file: 0,
            offset: 0,
            len: 4096,
            slot: 0,
            buf,
            ioprio: None,
        }) {
            Err(err) => {
                let m = err.to_string();
                assert!(
                    m.contains("nowait (RWF_NOWAIT)") && m.contains("direct=1"),
                    "{m}"
                );
                assert_eq!(m.lines().count(), 1);
            }
            Ok(()) => assert!(e.completion_detail().contains("RWF_NOWAIT")),
        }
    }
}
