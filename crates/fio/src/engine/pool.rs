//! `io_submit_mode=offload` for a synchronous engine, as fio's
//! rate-submit.c does it: a pool of `iodepth` submitting threads, each with
//! an instance of the engine of its own, so that up to `iodepth` blocking
//! calls are in flight when their I/Os are due. Without the pool a
//! synchronous job does one I/O at a time, and a device slower than the
//! rate would build a backlog that fio's pool does not.
//!
//! Each thread serves one of the worker's buffer slots: a slot holds at
//! most one I/O in flight, so its thread is idle whenever the worker hands
//! it one, and no queue between them can grow. A thread stamps each
//! completion with its own clock read, as fio's submit worker accounts for
//! its I/O itself: the hand-back to the job thread is not in the latency.

use super::{Done, Engine, Op, hang, sync::SyncIo};
use crate::error::{Error, Result};
use crate::job::{IoEngine, Job};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Whether `job`'s I/Os go through a pool: offloaded submission with a
/// queue, on an engine whose calls carry their own offset (the engines that
/// seek share a file position, which threads cannot).
pub fn pooled(job: &Job) -> bool {
    job.tuning.offload
        && job.iodepth > 1
        && matches!(
            job.ioengine,
            IoEngine::Psync | IoEngine::Pvsync | IoEngine::Pvsync2
        )
}

/// What the job's thread asks of a submitting thread: an I/O, whose buffer
/// belongs to the worker's `IoMemory`, which outlives the pool (the worker
/// drops its engine first, and the pool's drop joins its threads); or its
/// engine's completion detail, once the I/O is over.
enum Task {
    Io(Op),
    Detail,
}
// SAFETY: the buffer pointer is used by exactly one thread at a time: the
// worker does not touch a slot while its I/O is in flight.
unsafe impl Send for Task {}

/// The engine a submitting thread owns. `SyncIo` holds descriptors and
/// iovec scratch space, none of it tied to the thread that made it.
struct Inner(Box<dyn Engine>);
// SAFETY: see above; the instance moves to its thread once and is used
// only there.
unsafe impl Send for Inner {}

enum Finished {
    Done(Done, Instant),
    Failed(Error),
    Detail(String),
}

pub struct Pool {
    /// One channel per slot, to the thread that serves it.
    tasks: Vec<SyncSender<Task>>,
    finished: Receiver<Finished>,
    /// When each slot's last I/O completed, by its thread's clock.
    at: Vec<Instant>,
    threads: Vec<JoinHandle<()>>,
    /// The job thread's own instance, for `sync` (a flush of the files'
    /// descriptors, after the worker has reaped everything in flight).
    local: SyncIo,
    /// pvsync2 counts its flagged I/Os, per thread.
    counts: bool,
}

impl Pool {
    /// Starts `depth` submitting threads, each with an instance of `job`'s
    /// engine over `targets`.
    pub fn start(targets: &[super::Target], job: &Job, depth: usize) -> Result<Pool> {
        let (done_tx, finished) = sync_channel(depth);
        let mut pool = Pool {
            tasks: Vec::with_capacity(depth),
            finished,
            at: vec![Instant::now(); depth],
            threads: Vec::with_capacity(depth),
            local: SyncIo::new(targets, job, 1),
            counts: job.ioengine == IoEngine::Pvsync2,
        };
        for i in 0..depth {
            let eng = Inner(super::faulted(Box::new(SyncIo::new(targets, job, 1))));
            let (tx, rx) = sync_channel::<Task>(1);
            let done = done_tx.clone();
            let t = std::thread::Builder::new()
                .name(format!("xb-submit-{i}"))
                .spawn(move || serve(eng, &rx, &done))
                .map_err(|e| {
                    Error::run(format!(
                        "job {}: io_submit_mode=offload could not start submitting thread {i} of {depth}: {e}; lower iodepth=",
                        job.name
                    ))
                    .with_source(e)
                })?;
            pool.tasks.push(tx);
            pool.threads.push(t);
        }
        Ok(pool)
    }

    /// Takes a thread's message: 1 for a completion, 0 for a late reply.
    fn take(&mut self, f: Finished, out: &mut Vec<Done>) -> Result<usize> {
        match f {
            Finished::Done(d, at) => {
                self.at[d.slot] = at;
                out.push(d);
                Ok(1)
            }
            Finished::Failed(e) => Err(e),
            Finished::Detail(_) => Ok(0),
        }
    }
}

/// A submitting thread: each I/O handed to it, performed and stamped,
/// until the pool is dropped.
fn serve(mut eng: Inner, tasks: &Receiver<Task>, done: &SyncSender<Finished>) {
    let mut out = Vec::with_capacity(1);
    while let Ok(task) = tasks.recv() {
        let op = match task {
            Task::Io(op) => op,
            Task::Detail => {
                let _ = done.send(Finished::Detail(eng.0.completion_detail()));
                continue;
            }
        };
        out.clear();
        let res = eng
            .0
            .queue(op)
            .and_then(|()| eng.0.reap(1, 1, Duration::ZERO, &mut out));
        let at = Instant::now();
        let msg = match (res, out.pop()) {
            (Ok(()), Some(d)) => Finished::Done(d, at),
            (Ok(()), None) => Finished::Failed(Error::run(format!(
                "a submitting thread's {} at offset {} did not complete",
                op.dir.name(),
                op.offset
            ))),
            (Err(e), _) => Finished::Failed(e),
        };
        if done.send(msg).is_err() {
            return;
        }
    }
}

impl Engine for Pool {
    fn queue(&mut self, op: Op) -> Result<()> {
        self.tasks[op.slot].send(Task::Io(op)).map_err(|_| ended())
    }

    fn reap(
        &mut self,
        min: usize,
        max: usize,
        timeout: Duration,
        out: &mut Vec<Done>,
    ) -> Result<()> {
        let mut got = 0;
        loop {
            if got >= max.max(1) {
                return Ok(());
            }
            match self.finished.try_recv() {
                Ok(f) => {
                    got += self.take(f, out)?;
                    continue;
                }
                Err(TryRecvError::Disconnected) => return Err(ended()),
                Err(TryRecvError::Empty) if got >= min => return Ok(()),
                Err(TryRecvError::Empty) => {}
            }
            // Waits for the next completion; a wait that sees none in
            // `timeout` is a hang.
            match self.finished.recv_timeout(timeout) {
                Ok(f) => got += self.take(f, out)?,
                Err(RecvTimeoutError::Timeout) => return Err(hang(timeout)),
                Err(RecvTimeoutError::Disconnected) => return Err(ended()),
            }
        }
    }

    fn wait(&mut self, until: Instant, out: &mut Vec<Done>) -> Result<()> {
        let left = until.saturating_duration_since(Instant::now());
        match self.finished.recv_timeout(left) {
            Ok(f) => {
                self.take(f, out)?;
            }
            Err(RecvTimeoutError::Timeout) => return Ok(()),
            Err(RecvTimeoutError::Disconnected) => return Err(ended()),
        }
        self.reap(0, usize::MAX, Duration::ZERO, out)
    }

    fn completed_at(&self, slot: usize) -> Option<Instant> {
        Some(self.at[slot])
    }

    fn stamps_completions(&self) -> bool {
        true
    }

    fn sync(&mut self) -> Result<()> {
        self.local.sync()
    }

    fn completion_detail(&self) -> String {
        // Asked when the job's I/O is over, so every thread is idle; one
        // stuck in the kernel cannot answer, and the job thread's own
        // (unused) instance describes the calls instead.
        let mut first = None;
        if self.tasks[0].try_send(Task::Detail).is_ok() {
            while let Ok(f) = self.finished.recv_timeout(Duration::from_secs(1)) {
                if let Finished::Detail(d) = f {
                    first = Some(d);
                    break;
                }
            }
        }
        let first = first.unwrap_or_else(|| self.local.completion_detail());
        let whose = if self.counts {
            "; counts are the first thread's"
        } else {
            ""
        };
        format!(
            "{first}; offloaded to {} submitting threads, one I/O each in flight (io_submit_mode=offload{whose})",
            self.threads.len()
        )
    }
}

fn ended() -> Error {
    Error::run("the submitting threads of io_submit_mode=offload ended early")
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Closing the task channels ends each thread after the I/O it is in
        // (a thread stuck in the kernel keeps the job's thread here, and the
        // run's watchdog abandons that thread, as for any blocking engine).
        self.tasks.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
