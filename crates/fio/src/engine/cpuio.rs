//! fio's `cpuio`: no I/O, a CPU load beside the jobs that do I/O. Each
//! cycle burns `cpuchunks` µs on the worker's CPU (`cpumode=noop`: spin on
//! the clock; `qsort`: sort a small array again and again) and then sleeps
//! long enough that the busy share is `cpuload`%, as fio's thinktime does.
//! fio's caveat holds: the load is on one CPU (use `numjobs` for more).
//!
//! The job runs until `runtime=` passes or, without one (or with
//! `exit_on_io_done`), until the I/O jobs running beside it are done. It
//! adds nothing to bandwidth, IOPS or a group's figures: its account — the
//! cycles, and the busy share it really reached — is its completion detail.

use super::{Accounting, Done, Engine, Op};
use crate::engine::CpuMode;
use crate::error::Result;
use crate::job::Job;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The longest one queued "I/O" lasts, so that Ctrl-C, the end of the
/// I/O jobs and the stall watchdog are seen within it.
const SLICE: Duration = Duration::from_millis(50);

pub struct CpuIo {
    load: u32,
    chunk: Duration,
    idle: Duration,
    mode: CpuMode,
    /// I/O jobs beside this one still running; watched when `watch`.
    io_left: Arc<AtomicUsize>,
    watch: bool,
    /// Left of the current cycle's burn, then of its sleep.
    burn_left: Duration,
    idle_left: Duration,
    cycles: u64,
    busy: Duration,
    first: Option<Instant>,
    last: Option<Instant>,
    rng: u64,
    sorted: Vec<u64>,
    done: Vec<Done>,
}

impl CpuIo {
    /// `io_left` counts the I/O jobs running beside this one.
    pub fn new(job: &Job, io_left: Arc<AtomicUsize>) -> CpuIo {
        let o = &job.engine_opts;
        let load = o.cpuload.unwrap_or(100).clamp(1, 100);
        let chunk = Duration::from_micros(u64::from(o.cpuchunks));
        let idle = chunk * (100 - load) / load;
        CpuIo {
            load,
            chunk,
            idle,
            mode: o.cpumode,
            io_left,
            watch: job.runtime.is_none() || o.exit_on_io_done,
            burn_left: chunk,
            idle_left: idle,
            cycles: 0,
            busy: Duration::ZERO,
            first: None,
            last: None,
            rng: job.randseed | 1,
            sorted: Vec::new(),
            done: Vec::with_capacity(1),
        }
    }

    /// Keeps the CPU busy for `d`.
    fn burn(&mut self, d: Duration) {
        let t = Instant::now();
        match self.mode {
            CpuMode::Noop => {
                while t.elapsed() < d {
                    for _ in 0..256 {
                        std::hint::spin_loop();
                    }
                }
            }
            CpuMode::Qsort => {
                while t.elapsed() < d {
                    self.sorted.clear();
                    for _ in 0..1024 {
                        self.rng ^= self.rng << 13;
                        self.rng ^= self.rng >> 7;
                        self.rng ^= self.rng << 17;
                        self.sorted.push(self.rng);
                    }
                    self.sorted.sort_unstable();
                    black_box(&self.sorted);
                }
            }
        }
        self.busy += t.elapsed();
    }
}

impl Engine for CpuIo {
    fn queue(&mut self, op: Op) -> Result<()> {
        let now = Instant::now();
        self.first.get_or_insert(now);
        if !self.burn_left.is_zero() {
            let d = self.burn_left.min(SLICE);
            self.burn(d);
            self.burn_left -= d;
        } else if !self.finished() {
            let d = self.idle_left.min(SLICE);
            std::thread::sleep(d);
            self.idle_left -= d;
        }
        if self.burn_left.is_zero() && self.idle_left.is_zero() {
            self.cycles += 1;
            self.burn_left = self.chunk;
            self.idle_left = self.idle;
        }
        self.last = Some(Instant::now());
        self.done.push(Done {
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
        out.append(&mut self.done);
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn accounting(&self) -> Accounting {
        Accounting::Nothing
    }

    fn finished(&self) -> bool {
        self.watch && self.io_left.load(Ordering::Relaxed) == 0
    }

    fn completion_detail(&self) -> String {
        let span = match (self.first, self.last) {
            (Some(a), Some(b)) => b.duration_since(a),
            _ => Duration::ZERO,
        };
        let share = if span.is_zero() {
            0.0
        } else {
            100.0 * self.busy.as_secs_f64() / span.as_secs_f64()
        };
        format!(
            "cpuio: a load, not I/O — cpuload={}% of one CPU: {} µs of {} then {} µs asleep per cycle; {} cycles, busy {:.2} s of {:.2} s ({share:.1}%){}",
            self.load,
            self.chunk.as_micros(),
            match self.mode {
                CpuMode::Noop => "spinning (cpumode=noop)",
                CpuMode::Qsort => "sorting (cpumode=qsort)",
            },
            self.idle.as_micros(),
            self.cycles,
            self.busy.as_secs_f64(),
            span.as_secs_f64(),
            if self.watch {
                "; until the I/O jobs beside it were done"
            } else {
                ""
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burns_its_share_and_stops_when_the_io_jobs_do() {
        let mut j = Job::default();
        for (k, v) in [
            ("ioengine", "cpuio"),
            ("cpuload", "50"),
            ("cpuchunks", "20000"),
        ] {
            j.set(k, Some(v)).unwrap();
        }
        let left = Arc::new(AtomicUsize::new(1));
        let mut e = CpuIo::new(&j, left.clone());
        let mut out = Vec::new();
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(400) {
            e.queue(Op {
                dir: super::super::Dir::Read,
                file: 0,
                offset: 0,
                len: 1,
                slot: 0,
                buf: std::ptr::null_mut(),
                ioprio: None,
            })
            .unwrap();
            e.reap(1, 1, Duration::from_secs(1), &mut out).unwrap();
            assert!(!e.finished());
        }
        assert!(e.cycles >= 5, "{}", e.cycles);
        // Loose: about half busy.
        let share = e.busy.as_secs_f64() / t.elapsed().as_secs_f64();
        assert!((0.2..0.8).contains(&share), "{share}");
        left.store(0, Ordering::Relaxed);
        assert!(e.finished());
        assert_eq!(e.accounting(), Accounting::Nothing);
        assert!(e.completion_detail().starts_with("cpuio: a load"));
    }
}
