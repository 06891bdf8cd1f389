//! Issuing (fio's io_u filling and queueing): which way the next I/O goes,
//! where and how long, its buffer, and the pauses fio's options put
//! between I/Os.

use super::{Flight, Worker};
use crate::engine::{Dir, Op, Submit};
use crate::error::Result;
use crate::fiostats::{batch_slot, depth_slot};
use crate::job::Rw;
use crate::payload::splitmix;
use std::time::{Duration, Instant};

impl Worker<'_> {
    /// Fills the queue as fio's `do_io` does: each I/O prepared and queued,
    /// and every `iodepth_batch_submit` of them submitted in one engine
    /// call, until the queue is full, the job has issued all it is to, or
    /// is ending, or waits to sync or check a backlog (fio's polling loop,
    /// both completion batches 0, reaps after every I/O instead).
    pub(super) fn issue(&mut self) -> Result<()> {
        let job = self.job;
        while self.queue.inflight < self.queue.depth
            && self.issued.count < self.totals.ios
            && self.issued.bytes < self.totals.bytes
            && !self.end.stopping
            && !self.want_sync
            && !self.verify.as_ref().is_some_and(|v| v.want_check)
            && self.room()
        {
            if self.flow.as_mut().is_some_and(|f| f.held()) {
                // fio quiesces, then sleeps: the I/Os in flight are reaped
                // first, and the hold is tried again after them.
                if self.queue.inflight > 0 {
                    break;
                }
                self.flow_wait();
                continue;
            }
            if !self.rate_allows() || self.end.stopping {
                break;
            }
            let (due, dir, file, rel, len) = match self.queue.held.take() {
                Some(held) => held,
                None => {
                    self.think();
                    let Some(due) = self.due()? else { break };
                    let dir = self.next_dir();
                    let (file, rel, len) = self.next_extent(dir);
                    self.new_pass();
                    (due, dir, file, rel, len)
                }
            };
            if job.serialize_overlap && self.overlaps_inflight(file, rel, len) {
                // Reaped first; it goes when the overlapping one is done.
                self.queue.held = Some((due, dir, file, rel, len));
                break;
            }
            let blk = rel / job.bs;
            self.issued.count += 1;
            self.issued.bytes += len;
            self.rate_issued(len);
            let Some(slot) = self.queue.free.pop() else {
                break;
            };
            let offset = self.files.start(file) + rel;
            // fio's preparation ends with the buffer refilled
            // (`refill_buffers`) and then reads its clock; the verify
            // header and the scramble are written after, in its slat.
            let refill = dir == Dir::Write && self.verify.is_none() && self.content.refill;
            if refill {
                self.fill_buffer(slot, file, rel, len, offset, blk);
            }
            let t0 = due.unwrap_or_else(Instant::now);
            if dir == Dir::Write && !refill {
                self.fill_buffer(slot, file, rel, len, offset, blk);
            }
            let buf = self.mem.slot_ptr(slot);
            let cmdprio = self.prios.pick(job, dir, len);
            self.queue.flights[slot] = Some(Flight {
                dir,
                file,
                offset,
                len,
                block: blk,
                t0,
                sub: t0,
                prio: cmdprio.unwrap_or(self.prios.default),
            });
            let queued = self.eng.queue(Op {
                dir,
                file,
                offset,
                len: len as usize,
                slot,
                buf,
                ioprio: cmdprio,
            });
            if super::engine_failed(queued, job, &mut self.end.failure)? {
                self.end.broken = true;
                break;
            }
            self.queue.inflight += 1;
            self.submitted(slot);
            if self.queue.uncommitted >= self.queue.batches.submit {
                self.commit(true)?;
                if self.end.broken {
                    break;
                }
            }
            if self.tune.sched.is_some() {
                // Submitted now, not at the next reap: it was due.
                self.harvest(None)?;
            }
            if self.queue.batches.polling && !self.sync_engine {
                break;
            }
        }
        Ok(())
    }

    /// An I/O was queued: a synchronous engine's is counted as fio counts
    /// it (depth 1, a submission and a completion of one); an asynchronous
    /// engine's waits for the batch's commit, and if the engine submitted
    /// it in `queue` its submission time is now.
    fn submitted(&mut self, slot: usize) {
        let f = &mut self.fio;
        if self.sync_engine {
            f.depth[0] += 1;
            f.submit[1] += 1;
            f.complete[1] += 1;
            return;
        }
        self.queue.uncommitted += 1;
        match self.queue.submit {
            Submit::Commit => self.queue.fresh.push(slot),
            submit => {
                if submit == Submit::Queue {
                    // fio's engines without a commit step: each I/O is a
                    // submission and a completion of one (besides the
                    // reaps, which count too).
                    f.submit[1] += 1;
                    f.complete[1] += 1;
                }
                if self.tune.sched.is_none()
                    && let Some(fl) = self.queue.flights[slot].as_mut()
                {
                    fl.sub = Instant::now();
                }
            }
        }
    }

    /// fio's `td_io_commit`: the I/Os queued since the last commit are
    /// submitted in one engine call, and each ends its `slat` when the call
    /// returns. A full batch (`batch`) is counted in the depth map at the
    /// queue's depth, as fio counts it there; the commit a reap makes of
    /// a partial batch is not (fio's reap commits without counting).
    pub(super) fn commit(&mut self, batch: bool) -> Result<()> {
        let n = self.queue.uncommitted;
        if n == 0 {
            return Ok(());
        }
        self.queue.uncommitted = 0;
        if batch {
            self.fio.depth[depth_slot(self.queue.inflight)] += n as u64;
        }
        let committed = self.eng.commit();
        if super::engine_failed(committed, self.job, &mut self.end.failure)? {
            self.end.broken = true;
            self.queue.fresh.clear();
            return Ok(());
        }
        if self.queue.submit != Submit::Queue {
            self.fio.submit[batch_slot(n)] += 1;
        }
        if self.queue.submit == Submit::Commit {
            // An offloaded job's I/Os are timed from their due time instead.
            if self.tune.sched.is_none() {
                let now = Instant::now();
                for &slot in &self.queue.fresh {
                    if let Some(f) = self.queue.flights[slot].as_mut() {
                        f.sub = now;
                    }
                }
            }
        }
        self.queue.fresh.clear();
        Ok(())
    }

    /// `serialize_overlap`: whether bytes `rel..rel + len` of `file`'s
    /// region overlap an I/O in flight.
    fn overlaps_inflight(&self, file: usize, rel: u64, len: u64) -> bool {
        let at = self.files.start(file) + rel;
        self.queue
            .flights
            .iter()
            .flatten()
            .any(|f| f.file == file && f.offset < at + len && at < f.offset + f.len)
    }

    /// Whether the latency target's depth (and its quiesce after a change)
    /// leaves room for another I/O.
    fn room(&mut self) -> bool {
        let inflight = self.queue.inflight;
        if self.tune.quiesce {
            if inflight > 0 {
                return false;
            }
            self.tune.quiesce = false;
        }
        self.tune
            .lat
            .as_ref()
            .is_none_or(|l| inflight < l.qd as usize)
    }

    /// When the next I/O is due: for an offloaded job the time on its
    /// schedule, after waiting for it while collecting completions (its
    /// latency runs from there); Some(None) for any other job, whose I/O
    /// is timed from the end of its preparation; None: the job ended while
    /// waiting.
    fn due(&mut self) -> Result<Option<Option<Instant>>> {
        let Some(due) = self.tune.sched.as_ref().map(|s| s.peek()) else {
            return Ok(Some(None));
        };
        if self.clock.deadline.is_some_and(|d| due >= d) {
            self.end.stopping = true;
            return Ok(None);
        }
        loop {
            let now = Instant::now();
            if now >= due {
                break;
            }
            if self.stop.load(std::sync::atomic::Ordering::Relaxed) {
                self.end.stopping = true;
                self.end.partial = true;
                return Ok(None);
            }
            let left = due - now;
            if self.queue.inflight == 0 && left > Duration::from_millis(2) {
                // A long wait, told to the watchdog; the last stretch is
                // timed finely below (a sleep overshoots).
                self.hold_until(due - Duration::from_millis(1));
                continue;
            }
            // The last stretch is spun (a sleep overshoots).
            let fine = Duration::from_micros(150);
            if self.queue.inflight > 0 {
                if left > fine {
                    // Completions are collected as they come (the engine
                    // waits for one until just before the due time), so
                    // that their times are theirs, not the due time's.
                    let until =
                        (due - Duration::from_micros(100)).min(now + Duration::from_millis(100));
                    self.harvest(Some(until))?;
                    continue;
                }
                self.harvest(None)?;
            } else if left > fine {
                std::thread::sleep(
                    (left - Duration::from_micros(100)).min(Duration::from_micros(200)),
                );
                continue;
            }
            std::hint::spin_loop();
        }
        Ok(Some(self.tune.sched.as_mut().map(|s| s.take())))
    }

    /// fio's `thinktime`: every `thinktime_blocks` I/Os the job pauses
    /// before its next one.
    fn think(&mut self) {
        let job = self.job;
        let issued = self.issued.count;
        if let Some(pause) = job.thinktime
            && issued > 0
            && issued.is_multiple_of(u64::from(job.thinktime_blocks))
            && self.issued.think_done < issued
        {
            self.issued.think_done = issued;
            // Spinning for `thinktime_spin` of it and sleeping the rest (a
            // deliberate wait the stall watchdog is told of).
            let start = Instant::now();
            let spin = job.thinktime_spin.unwrap_or_default().min(pause);
            while start.elapsed() < spin {
                std::hint::spin_loop();
            }
            self.hold_until(start + pause);
        }
    }

    /// A deliberate wait (thinktime, the rate limiter) that ends early on a
    /// stop or when an `exitall` job ends this one: `rate=300` with 4 KiB
    /// blocks waits 13 s between I/Os, and fio stops such a job at once.
    fn hold_until(&self, until: Instant) {
        let (stop, ending, job, began) = (self.stop, &self.shared.ending, self.job, self.began);
        self.prog
            .wait_while(self.shared.t0, Instant::now(), until, || {
                stop.load(std::sync::atomic::Ordering::Relaxed) || ending.stops(job, began)
            });
    }

    /// The next I/O's direction, from `rw=` (and `rwmixread=`).
    fn next_dir(&mut self) -> Dir {
        let job = self.job;
        match job.rw {
            // The pair's first I/O trims, the second writes.
            rw if rw.trim_then_write() && self.issued.count.is_multiple_of(2) => Dir::Trim,
            rw if rw.trim_then_write() => Dir::Write,
            Rw::Trim | Rw::RandTrim => Dir::Trim,
            Rw::ReadWrite | Rw::RandRw => {
                if splitmix(&mut self.issued.rng) % 100 < u64::from(job.rwmixread) {
                    Dir::Read
                } else {
                    Dir::Write
                }
            }
            rw if rw.reads() => Dir::Read,
            _ => Dir::Write,
        }
    }

    /// The next I/O's file, offset from that file's region's start, and
    /// length.
    fn next_extent(&mut self, dir: Dir) -> (usize, u64, u64) {
        let job = self.job;
        let per_block = self.totals.per_block;
        // trimwrite: the write goes where its trim went, as long.
        if per_block == 2 && self.issued.count % 2 == 1 {
            return self.issued.pair;
        }
        let next = match self.extents.as_mut() {
            // verify_only reads what the writes would have been; a
            // trimwrite pair takes the write side's sizes.
            Some(e) => {
                let side = if job.verify_only || per_block == 2 {
                    1
                } else {
                    dir as usize
                };
                let left = (self.totals.bytes - self.issued.bytes) / per_block;
                let (rel, len) = e.next(self.files.order(0), self.issued.count, side, left);
                (0, rel, len)
            }
            None => {
                let (file, rel) = self.files.next();
                (file, rel, job.bs)
            }
        };
        self.issued.pair = next;
        next
    }

    /// A new pass: fio reopens its files and invalidates them again.
    fn new_pass(&mut self) {
        let pass = self.extents.as_ref().map_or(self.files.passes, |e| e.pass);
        if pass != self.issued.seen_pass {
            self.issued.seen_pass = pass;
            for t in &self.targets {
                t.invalidate_again(self.job);
            }
        }
    }

    /// A write's buffer: what verify will check, or fio's buffer contents;
    /// and, for a read-back of mixed sizes, where it went.
    fn fill_buffer(&mut self, slot: usize, file: usize, rel: u64, len: u64, offset: u64, blk: u64) {
        let job = self.job;
        self.issued.writes += 1;
        if let Some(v) = self.verify.as_mut()
            && v.log_writes
            && let Some(e) = &self.extents
        {
            // A new pass writes over the last: only it is checked.
            if e.pass != v.last_pass {
                v.last_pass = e.pass;
                v.written.clear();
            }
            v.written.push((file, rel, len));
        }
        if let Some(list) = self.verify.as_mut().and_then(|v| v.rw_blocks.as_mut()) {
            if list.len() == list.capacity() {
                // Rewritten blocks: at most half the room is distinct ones.
                list.sort_unstable();
                list.dedup();
            }
            list.push((file, rel));
        }
        let bs = self.queue.bs;
        if let Some(v) = &self.verify {
            let buf = &mut self.mem.slot(slot, bs)[..len as usize];
            crate::verify::fill(buf, &v.spec, offset, blk, job.randseed);
        } else if self.content.refill {
            let buf = &mut self.mem.slot(slot, bs)[..len as usize];
            self.content.fill(buf, self.issued.count);
        } else if self.content.scramble {
            let buf = &mut self.mem.slot(slot, bs)[..len as usize];
            let at = self.shared.t0.elapsed().as_nanos() as u64;
            crate::content::Content::stamp(buf, offset, at);
        }
    }

    /// Held back by the job's flow with nothing in flight: waits
    /// `flow_sleep` (a deliberate wait, told to the watchdog; at least a
    /// moment, rather than spinning as fio does with 0), then lets the
    /// clocks and stops end the job as a reap would.
    fn flow_wait(&mut self) {
        let now = Instant::now();
        let pause = Duration::from_micros(u64::from(self.job.flow.sleep_us).max(1));
        let until = self
            .clock
            .deadline
            .map_or(now + pause, |d| d.min(now + pause));
        self.prog.wait(self.shared.t0, now, until, self.stop);
        self.after_reap(Instant::now());
    }

    /// fio's rate limiter (`rate=`, `rate_iops=`), before each I/O: one
    /// ahead of the rate waits. As fio does inline, the queue drains first
    /// (the caller reaps), then the worker holds until the I/O is due,
    /// telling the watchdog, as the gap may be longer than its limit. False:
    /// not yet, reap first. An offloaded job's schedule paces it instead.
    fn rate_allows(&mut self) -> bool {
        let Some(bps) = rate_bps(self.job) else {
            return true;
        };
        if self.tune.sched.is_some() {
            return true;
        }
        let c = &self.clock;
        let due = if self.job.poisson {
            c.next_due
        } else {
            let (from, bytes0) = c.rate_from;
            from + Duration::from_secs_f64(self.issued.bytes.saturating_sub(bytes0) as f64 / bps)
        };
        if due <= Instant::now() {
            return true;
        }
        if self.queue.inflight > 0 {
            return false;
        }
        // Not past the job's runtime: a time-based job ends on time.
        let until = c.deadline.map_or(due, |d| due.min(d));
        self.hold_until(until);
        self.after_reap(Instant::now());
        !self.end.stopping
    }

    /// A Poisson-paced job's next I/O is due an exponential gap (the rate's
    /// mean for `len` bytes) after this one's.
    fn rate_issued(&mut self, len: u64) {
        if !self.job.poisson || self.tune.sched.is_some() {
            return;
        }
        if let Some(bps) = rate_bps(self.job) {
            let u = (splitmix(&mut self.issued.rng) >> 11) as f64 / (1u64 << 53) as f64;
            self.clock.next_due += Duration::from_secs_f64(-(1.0 - u).ln() * len as f64 / bps);
        }
    }

    /// `ratemin` / `rate_iops_min`: fails a job too slow over a cycle.
    pub(super) fn ratemin(&mut self, now: Instant) {
        let job = self.job;
        let Some(min) = job
            .ratemin
            .map(|r| r as f64)
            .or(job.rate_iops_min.map(|i| i as f64 * io_len(job)))
        else {
            return;
        };
        let moved: u64 = self.bytes.iter().sum();
        let c = &mut self.clock;
        let span = now.duration_since(c.window.0);
        if span >= job.rate_cycle {
            let bw = (moved - c.window.1) as f64 / span.as_secs_f64();
            if bw < min {
                self.end.failure.get_or_insert_with(|| {
                    format!(
                        "job {}: bandwidth fell to {:.0} B/s over {:.1} s, below the minimum rate ({min:.0} B/s)",
                        job.name,
                        bw,
                        span.as_secs_f64()
                    )
                });
                self.end.stopping = true;
            }
            c.window = (now, moved);
        }
    }
}

/// The job's rate in bytes a second: `rate=`, else `rate_iops=` at the
/// block size (a mix's mean length), or None without a limit.
fn rate_bps(job: &crate::job::Job) -> Option<f64> {
    job.rate
        .map(|r| r as f64)
        .or(job.rate_iops.map(|i| i as f64 * io_len(job)))
}

/// What one I/O of the job moves on average: an IOPS figure in bytes.
fn io_len(job: &crate::job::Job) -> f64 {
    job.bs_mix
        .as_ref()
        .map_or(job.bs as f64, |m| m.mean(job.read_share()))
}
