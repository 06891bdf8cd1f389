//! Reaping (fio's io_u completion): each finished I/O judged, timed and
//! counted, reads checked, writes queued for a backlog check or a sync;
//! then the clocks — the end of the ramp, the deadline, the stops.

use super::tuning::LatStep;
use super::{Flight, Worker};
use crate::engine::{self, Accounting, Dir, Done};
use crate::error::Result;
use crate::fiostats::batch_slot;
use crate::intervals::Cut;
use std::sync::atomic::Ordering;
use std::time::Instant;

impl Worker<'_> {
    /// fio's reap (`wait_for_completions`, or the drain at the end): what
    /// was queued and not yet submitted goes first, then a full queue gives
    /// up at least `iodepth_batch_complete_min` and at most
    /// `iodepth_batch_complete_max` completions a call (fio's 1 and 1: one
    /// completion makes room for one I/O, and the queue stays at its
    /// depth), again until no more than `iodepth_low` are in flight; a
    /// queue waiting on something else (a rate, a sync, a backlog check)
    /// gives up at least one; and an ending job's, all it has in one call
    /// (after the reap of a full queue that its last I/O filled).
    /// The time of the last reap, or None when the engine failed.
    pub(super) fn reap(&mut self) -> Result<Option<Instant>> {
        self.commit(false)?;
        if self.end.broken {
            return Ok(None);
        }
        let b = self.queue.batches;
        let (full, ending) = (self.full(), self.ending());
        loop {
            let inflight = self.queue.inflight;
            // A full queue is reaped as a full one even by a job that
            // queues nothing more: fio checks for a full queue as soon as
            // an I/O is queued, and for its end at the next turn.
            let min = match (full, ending) {
                (true, _) => b.complete_min.min(inflight).max(1),
                (false, true) => inflight,
                (false, false) => 1,
            };
            let max = b.complete_max.min(inflight).max(min);
            let reaped = self
                .eng
                .reap(min, max, self.shared.timeout, &mut self.queue.done);
            let Some(now) = self.collected(reaped)? else {
                return Ok(None);
            };
            if !full || self.queue.inflight <= b.low {
                return Ok(Some(now));
            }
        }
    }

    /// Whether the queue is full: at its depth, or at the depth the
    /// latency target allows (fio's `queue_full`).
    fn full(&self) -> bool {
        let inflight = self.queue.inflight;
        inflight >= self.queue.depth
            || self
                .tune
                .lat
                .as_ref()
                .is_some_and(|l| inflight >= l.qd as usize)
    }

    /// Whether the job will queue nothing more: what is in flight is
    /// drained in one reap, as fio's end of `do_io` drains it.
    fn ending(&self) -> bool {
        self.end.stopping
            || (self.issued.count >= self.totals.ios || self.issued.bytes >= self.totals.bytes)
                && self.queue.held.is_none()
    }

    /// Collects what has completed without waiting, or waiting for a first
    /// completion until `until` (the offloaded submission between due
    /// times); the ramp, deadline and stops are seen as after a reap.
    /// Nothing is stamped at submission here: an offloaded I/O's completion
    /// latency, like its latency, runs from when it was due, so a backlog
    /// behind the schedule shows in the percentiles.
    pub(super) fn harvest(&mut self, until: Option<Instant>) -> Result<()> {
        let polled = match until {
            Some(t) => self.eng.wait(t, &mut self.queue.done),
            None => self.eng.poll(&mut self.queue.done),
        };
        if self.queue.done.is_empty() {
            return polled;
        }
        if let Some(now) = self.collected(polled)? {
            self.after_reap(now);
        }
        Ok(())
    }

    /// Accounts for the completions an engine call left in the queue.
    fn collected(&mut self, reaped: Result<()>) -> Result<Option<Instant>> {
        let job = self.job;
        if super::engine_failed(reaped, job, &mut self.end.failure)? {
            self.end.broken = true;
            return Ok(None);
        }
        let now = Instant::now();
        let at_ns = now.duration_since(self.clock.measure_start).as_nanos() as u64;
        let mut done = std::mem::take(&mut self.queue.done);
        if !self.sync_engine {
            self.fio.complete[batch_slot(done.len())] += 1;
        }
        for d in done.drain(..) {
            // A clock read per I/O where the engine made one (not a call).
            let stamp = if self.stamped {
                self.eng.completed_at(d.slot)
            } else {
                None
            };
            match stamp {
                Some(t) => {
                    let at = t.saturating_duration_since(self.clock.measure_start);
                    self.complete(d, t, at.as_nanos() as u64);
                }
                None => self.complete(d, now, at_ns),
            }
        }
        self.queue.done = done;
        // No sample at or past the runtime: fio's samples come from its
        // helper thread, which finds a job that ran its time done.
        if !self.clock.ramping && self.clock.deadline.is_none_or(|d| now < d) {
            self.fio.tick(at_ns, &self.bytes);
        }
        if self.prog.want_snapshot.load(Ordering::Relaxed) && !self.clock.ramping {
            self.offer_snapshot(now);
        }
        // The clock was just read: no second read on the hot path.
        self.prog
            .bytes
            .store(self.clock.progress_bytes, Ordering::Relaxed);
        self.prog
            .last_ns
            .store(self.clock.measure_from_t0 + at_ns, Ordering::Relaxed);
        Ok(Some(now))
    }

    fn complete(&mut self, d: Done, now: Instant, at_ns: u64) {
        self.queue.inflight -= 1;
        self.queue.free.push(d.slot);
        let Some(f) = self.queue.flights[d.slot].take() else {
            return;
        };
        if !self.landed(&f, d.res) {
            return;
        }
        self.account(&f, now, at_ns);
        self.clock.progress_bytes += f.len;
        self.clock.progress_ios += 1;
        if f.dir == Dir::Read {
            self.check_read(&f, d.slot);
        }
        if f.dir == Dir::Write {
            self.written(&f);
        }
    }

    /// Whether an I/O did all it was to; if not, how the job ends: a full
    /// device (fill_device) or the peer's end is the end, anything else a
    /// failure.
    fn landed(&mut self, f: &Flight, res: std::result::Result<usize, i32>) -> bool {
        let job = self.job;
        let what = f.dir.name();
        let want = f.len as usize;
        let fail = match res {
            // fill_device: a full device or file system is the end.
            Err(e) if job.fill_device && e == libc::ENOSPC && f.dir == Dir::Write => {
                self.end.filled = true;
                None
            }
            Ok(n) if job.fill_device && n < want && f.dir == Dir::Write => {
                self.end.filled = true;
                None
            }
            Err(e) => Some(format!(
                "job {}: {what} of {want} bytes at offset {} of {} failed: {}",
                job.name,
                f.offset,
                self.files.name(f.file),
                engine::errno_text(e)
            )),
            // The peer ended the stream (net): not a failure, the end.
            Ok(n) if n < want && self.eng.ended() => None,
            Ok(n) if n < want => Some(format!(
                "job {}: short {what} at offset {} of {}: {n} of {want} bytes (end of the device or file? check size=/offset=)",
                job.name,
                f.offset,
                self.files.name(f.file)
            )),
            Ok(_) => return true,
        };
        if let Some(why) = fail {
            self.end.failure.get_or_insert(why);
        }
        self.end.stopping = true;
        false
    }

    /// Records an I/O in the timed span (a ramp's I/Os are only counted),
    /// failing the job on one slower than `max_latency`.
    fn account(&mut self, f: &Flight, now: Instant, at_ns: u64) {
        let job = self.job;
        let di = f.dir as usize;
        let io_bytes = if self.acct == Accounting::Bytes {
            f.len
        } else {
            0
        };
        if self.clock.ramping {
            self.clock.ramp_ios += 1;
        } else if self.acct != Accounting::Nothing {
            // fio's lat (issue to completion) and clat (submission
            // returning to completion; the same for a synchronous engine).
            let lat_ns = now.duration_since(f.t0).as_nanos() as u64;
            self.latency_target(lat_ns, now);
            let clat_ns = now.duration_since(f.sub).as_nanos() as u64;
            self.intervals.record(di, at_ns, clat_ns, io_bytes);
            self.fio.completed(di, io_bytes, lat_ns - clat_ns, lat_ns);
            self.prios.record(di, f.prio, clat_ns);
            self.bytes[di] += io_bytes;
            if let Some(l) = self.logs.as_mut() {
                l.io(&crate::logs::Io {
                    at_ns,
                    dir: di,
                    len: f.len,
                    offset: f.offset,
                    t0: f.t0,
                    sub: (!self.sync_engine).then_some(f.sub),
                    now,
                    prio: f.prio,
                    timed: self.clock.deadline.is_none_or(|d| now < d),
                });
            }
            if let Some(max) = job.max_latency
                && lat_ns > max.as_nanos() as u64
            {
                self.end.failure.get_or_insert_with(|| {
                    format!(
                        "job {}: a {} at offset {} took {} µs, beyond max_latency={}",
                        job.name,
                        f.dir.name(),
                        f.offset,
                        crate::units::format_us(lat_ns as f64),
                        humantime::format_duration(max)
                    )
                });
                self.end.stopping = true;
            }
        }
    }

    /// A finished write: held for a backlog check, and counted towards
    /// the next fsync.
    fn written(&mut self, f: &Flight) {
        let job = self.job;
        if let Some(v) = self.verify.as_mut()
            && v.backlog > 0
        {
            v.unchecked
                .push((f.file, f.offset - self.files.start(f.file), f.len));
            v.want_check |= v.unchecked.len() as u64 >= v.backlog;
        }
        let every = if job.fsync > 0 {
            job.fsync
        } else {
            job.fdatasync
        };
        if every > 0 {
            self.since_fsync += 1;
            if self.since_fsync >= every {
                self.since_fsync = 0;
                self.want_sync = true;
            }
        }
    }

    /// `fsync=`/`fdatasync=`, once the queue is empty: each file flushed,
    /// or the engine's own sync.
    pub(super) fn sync(&mut self) -> Result<()> {
        let t0 = Instant::now();
        match (self.targets.is_empty(), self.job.fsync) {
            (false, 0) => {
                for t in &self.targets {
                    engine::flush_to_disk(t.fd(), true)?;
                }
            }
            _ => self.eng.sync()?,
        }
        if !self.clock.ramping {
            self.fio.sync.record(t0.elapsed().as_nanos() as u64);
        }
        self.want_sync = false;
        Ok(())
    }

    /// After a reap: the ramp's end restarts the timed span; the deadline,
    /// the engine, a stop or an `exitall` job may end the job. Whether the
    /// job is past its ramp (and so paced).
    pub(super) fn after_reap(&mut self, now: Instant) -> bool {
        let job = self.job;
        if self.clock.ramping && now >= self.clock.ramp_end {
            self.end_ramp(now);
        }
        self.tune_after_reap(now);
        if self.clock.deadline.is_some_and(|d| now >= d) || self.eng.finished() {
            self.end.stopping = true;
        }
        if self.stop.load(Ordering::Relaxed) && !self.end.stopping {
            self.end.stopping = true;
            self.end.partial = true;
        }
        if self.shared.ending.stops(job, self.began) {
            self.end.stopping = true;
        }
        !self.clock.ramping
    }

    /// One I/O's latency against `latency_target`: a 100% target missed at
    /// depth 1 fails the job, as fio's does.
    fn latency_target(&mut self, lat_ns: u64, now: Instant) {
        let ios = self.clock.progress_ios;
        let Some(l) = self.tune.lat.as_mut() else {
            return;
        };
        match l.completed(lat_ns, ios, now) {
            LatStep::Fatal => {
                let job = self.job;
                self.end.failure.get_or_insert_with(|| {
                    format!(
                        "job {}: an I/O took {} µs, beyond latency_target={} µs even at queue depth 1",
                        job.name,
                        crate::units::format_us(lat_ns as f64),
                        crate::units::format_us(l.report().latency_target as f64)
                    )
                });
                self.end.stopping = true;
            }
            LatStep::Quiesce => self.tune.quiesce = true,
            _ => {}
        }
    }

    /// After a reap: the latency target's window and steady state's sample.
    fn tune_after_reap(&mut self, now: Instant) {
        let (ios, bytes) = (self.clock.progress_ios, self.clock.progress_bytes);
        if let Some(s) = self.tune.steady.as_mut()
            && s.tick(now, ios, bytes)
        {
            self.end.stopping = true;
        }
        if self.clock.ramping {
            return;
        }
        let step = match self.tune.lat.as_mut() {
            Some(l) => l.check(ios, now),
            None => return,
        };
        match step {
            LatStep::Quiesce => self.tune.quiesce = true,
            LatStep::FinalWindow => {
                // Only the found depth's window is the job's figures.
                self.tune.quiesce = true;
                self.restart_figures(now);
            }
            LatStep::Done => self.end.stopping = true,
            LatStep::Carry | LatStep::Fatal => {}
        }
    }

    /// The timed span starts again at `now` (its deadline stays).
    fn restart_figures(&mut self, now: Instant) {
        let job = self.job;
        let c = &mut self.clock;
        c.measure_start = now;
        c.measure_from_t0 = now.duration_since(self.shared.t0).as_nanos() as u64;
        let left = c.deadline.map(|d| d.saturating_duration_since(now));
        // What was recorded is dropped: fresh intervals.
        self.intervals = crate::intervals::Intervals::new(Cut::new(
            job.time_based,
            left.or(job.runtime),
            self.totals.ios.saturating_sub(self.issued.count),
        ));
        self.bytes = [0; engine::DIRS];
        c.window = (now, 0);
        c.rate_from = (now, self.issued.bytes);
        c.next_due = now;
    }

    fn end_ramp(&mut self, now: Instant) {
        let job = self.job;
        let c = &mut self.clock;
        c.ramping = false;
        c.measure_start = now;
        c.measure_from_t0 = now.duration_since(self.shared.t0).as_nanos() as u64;
        // Nothing was recorded while ramping: the intervals are empty;
        // a sized job has what the ramp did not do left.
        self.intervals.recut(Cut::new(
            job.time_based,
            job.runtime,
            self.totals.ios.saturating_sub(c.ramp_ios),
        ));
        self.bytes = [0; engine::DIRS];
        self.fio.restart();
        c.window = (now, 0);
        c.rate_from = (now, self.issued.bytes);
        c.next_due = now;
        if job.runtime.is_some() {
            c.deadline = job.runtime.map(|r| now + r);
        }
    }
}
