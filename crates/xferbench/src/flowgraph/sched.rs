//! Schedulers: who calls `work` on which block, on which CPU.
//!
//! - `seq`: one pinned thread calls every block in flowgraph order.
//! - `static`: the seed's custom strategy — the saxpy blocks split into N
//!   consecutive groups (the first M mod N one larger; the source with the
//!   first, the sink with the last), each on its own pinned thread, in order.
//! - `thread-per-block`: one OS thread per block, allowed on the N cores but
//!   not pinned, sleeping when blocked (GNU Radio 3.10's model).
//! - `tokio`, `async-executor`: N pinned worker threads; blocks are tasks
//!   woken by buffer readiness, never polled while idle.

use super::block::{Block, Step};
use crate::error::{Error, Result};
use crate::words::{Word, word_enum};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

word_enum! {
    /// Who runs the blocks of a flowgraph, and on which CPUs (`--scheduler`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum Scheduler {
        /// One pinned thread calls every block in flowgraph order.
        Seq = "seq",
        /// The saxpy blocks split into N consecutive groups, each run in order
        /// by its own pinned thread.
        Static = "static",
        /// One OS thread per block, allowed on the N cores but not pinned,
        /// sleeping when blocked (GNU Radio 3.10's model).
        ThreadPerBlock = "thread-per-block",
        /// Blocks as tasks on a tokio runtime of N pinned workers, woken by
        /// buffer readiness.
        Tokio = "tokio",
        /// Blocks as tasks on N pinned `async-executor` threads, woken by
        /// buffer readiness.
        AsyncExecutor = "async-executor",
        /// No runtime: N pinned threads pass N+1 buffers around a ring, each
        /// running its static share of the kernels (the yardstick).
        Ring = "ring",
    }
}

impl Scheduler {
    /// In run order: the ring reference right after `static`, the
    /// scheduler it is the yardstick for, so the two are measured within a
    /// second of each other on a host whose speed drifts.
    pub const ALL: [Scheduler; 6] = [
        Scheduler::Seq,
        Scheduler::Static,
        Scheduler::Ring,
        Scheduler::ThreadPerBlock,
        Scheduler::Tokio,
        Scheduler::AsyncExecutor,
    ];

    /// The word that names it on the command line and in results.
    pub fn name(self) -> &'static str {
        self.word()
    }

    /// Whether blocks may sleep on their buffers (then buffers pay for
    /// wake-up checks); spinning schedulers need none.
    pub fn sleeps(self) -> bool {
        matches!(
            self,
            Scheduler::ThreadPerBlock | Scheduler::Tokio | Scheduler::AsyncExecutor
        )
    }

    /// `seq` is one thread by definition: it applies to one core only.
    pub fn applies(self, cores: usize) -> bool {
        self != Scheduler::Seq || cores == 1
    }
}

/// Saxpy blocks per core under the static strategy: M/N each, the first
/// M mod N cores one more.
pub fn partition(m: usize, n: usize) -> Vec<usize> {
    (0..n).map(|i| m / n + usize::from(i < m % n)).collect()
}

/// The thread each block (source, M saxpy, sink) runs on, where the
/// scheduler fixes it; `None` where blocks move between threads.
pub fn threads(kind: Scheduler, m: usize, n: usize) -> Option<Vec<usize>> {
    match kind {
        Scheduler::Seq => Some(vec![0; m + 2]),
        Scheduler::Static => {
            let mut t = vec![0];
            for (g, &k) in partition(m, n).iter().enumerate() {
                t.extend(std::iter::repeat_n(g, k));
            }
            t.push(n - 1);
            Some(t)
        }
        _ => None,
    }
}

/// Runs `blocks` (source, saxpys…, sink, in flowgraph order) to completion
/// on `cpus` (N of them) with the given scheduler.
pub fn run(kind: Scheduler, blocks: Vec<Box<dyn Block>>, cpus: &[usize]) -> Result<()> {
    match kind {
        Scheduler::Seq => spin_groups(vec![blocks], &cpus[..1]),
        Scheduler::Static => {
            let m = blocks.len() - 2;
            let sizes = partition(m, cpus.len());
            let mut it = blocks.into_iter();
            let mut groups: Vec<Vec<Box<dyn Block>>> = Vec::new();
            for (g, &k) in sizes.iter().enumerate() {
                let take = k + usize::from(g == 0) + usize::from(g == sizes.len() - 1);
                groups.push(it.by_ref().take(take).collect());
            }
            spin_groups(groups, cpus)
        }
        Scheduler::ThreadPerBlock => thread_per_block(blocks, cpus),
        Scheduler::Tokio => tokio_run(blocks, cpus),
        Scheduler::AsyncExecutor => executor_run(blocks, cpus),
        Scheduler::Ring => Err(Error::run("the ring reference has no blocks to schedule")),
    }
}

/// Joins worker threads, turning a panic into an error.
fn join_all(handles: Vec<std::thread::JoinHandle<Result<()>>>) -> Result<()> {
    let mut first = Ok(());
    for h in handles {
        let r = h
            .join()
            .unwrap_or_else(|_| Err(Error::run("a flowgraph worker thread panicked")));
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// One pinned thread per group, each calling its blocks in order until
/// all are done, spinning when a whole pass moved nothing.
fn spin_groups(groups: Vec<Vec<Box<dyn Block>>>, cpus: &[usize]) -> Result<()> {
    let handles = groups
        .into_iter()
        .zip(cpus.iter().copied())
        .map(|(mut g, cpu)| {
            std::thread::Builder::new()
                .name(format!("xb-fg-{cpu}"))
                .spawn(move || -> Result<()> {
                    crate::measure::placement::pin_current(cpu)?;
                    let mut live = g.len();
                    while live > 0 {
                        live = 0;
                        let mut moved = false;
                        for b in g.iter_mut() {
                            match b.work() {
                                Step::Worked(_) => {
                                    moved = true;
                                    live += 1;
                                }
                                Step::Blocked => live += 1,
                                Step::Done => {}
                            }
                        }
                        if !moved {
                            std::hint::spin_loop();
                        }
                    }
                    Ok(())
                })
                .map_err(|e| Error::run_from("starting a flowgraph thread", e))
        })
        .collect::<Result<Vec<_>>>()?;
    join_all(handles)
}

/// Wakes a parked thread.
struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Yields before a blocked thread sleeps on its buffer.
const YIELDS: u32 = 16;

fn thread_per_block(blocks: Vec<Box<dyn Block>>, cpus: &[usize]) -> Result<()> {
    let cpus = cpus.to_vec();
    let handles = blocks
        .into_iter()
        .map(|mut b| {
            let cpus = cpus.clone();
            std::thread::Builder::new()
                .name(format!("xb-fg-{}", b.name()))
                .spawn(move || -> Result<()> {
                    crate::measure::placement::set_allowed(&cpus)?;
                    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
                    let mut idle = 0u32;
                    loop {
                        match b.work() {
                            Step::Worked(_) => idle = 0,
                            Step::Done => return Ok(()),
                            // First hand the core to whichever block would
                            // unblock this one (cheap when it shares the
                            // core); sleep only if that does not help.
                            Step::Blocked if idle < YIELDS => {
                                idle += 1;
                                std::thread::yield_now();
                            }
                            Step::Blocked => {
                                idle = 0;
                                b.wait(&waker);
                                match b.work() {
                                    Step::Blocked => {
                                        // The timeout bounds a lost wake-up's cost; it is not the mechanism.
                                        std::thread::park_timeout(Duration::from_millis(20))
                                    }
                                    Step::Done => return Ok(()),
                                    Step::Worked(_) => {}
                                }
                            }
                        }
                    }
                })
                .map_err(|e| Error::run_from("starting a flowgraph thread", e))
        })
        .collect::<Result<Vec<_>>>()?;
    join_all(handles)
}

/// A block as a future: works while it can, yields after a budget so other
/// tasks on the worker get their turn, and sleeps on its buffer when blocked.
struct Task(Box<dyn Block>);

/// Work calls before a task yields to its worker's other tasks.
const BUDGET: usize = 64;

impl Future for Task {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        for _ in 0..BUDGET {
            match self.0.work() {
                Step::Worked(_) => {}
                Step::Done => return Poll::Ready(()),
                Step::Blocked => {
                    self.0.wait(cx.waker());
                    match self.0.work() {
                        Step::Blocked => return Poll::Pending,
                        Step::Done => return Poll::Ready(()),
                        Step::Worked(_) => {}
                    }
                }
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Pins each new worker thread to the next of `cpus`.
fn pinner(cpus: &[usize]) -> impl Fn() + Send + Sync + 'static {
    let cpus = cpus.to_vec();
    let next = AtomicUsize::new(0);
    move || {
        let i = next.fetch_add(1, Ordering::Relaxed) % cpus.len();
        let _ = crate::measure::placement::pin_current(cpus[i]);
    }
}

fn tokio_run(blocks: Vec<Box<dyn Block>>, cpus: &[usize]) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cpus.len())
        .thread_name("xb-fg-tokio")
        .on_thread_start(pinner(cpus))
        .build()
        .map_err(|e| Error::run_from("starting tokio", e))?;
    rt.block_on(async {
        let tasks: Vec<_> = blocks.into_iter().map(|b| tokio::spawn(Task(b))).collect();
        for t in tasks {
            t.await
                .map_err(|e| Error::run_from("a flowgraph task failed", e))?;
        }
        Ok::<(), Error>(())
    })?;
    rt.shutdown_timeout(Duration::from_secs(5));
    Ok(())
}

/// Counts unfinished tasks; wakes the executor threads' `run` futures when
/// the last one ends.
#[derive(Default)]
struct Remaining {
    left: AtomicUsize,
    wakers: Mutex<Vec<Waker>>,
}

impl Remaining {
    fn done_one(&self) {
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            for w in self
                .wakers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .drain(..)
            {
                w.wake();
            }
        }
    }

    fn all_done(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.left.load(Ordering::Acquire) == 0 {
            return Poll::Ready(());
        }
        self.wakers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(cx.waker().clone());
        if self.left.load(Ordering::Acquire) == 0 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

fn executor_run(blocks: Vec<Box<dyn Block>>, cpus: &[usize]) -> Result<()> {
    let ex = Arc::new(async_executor::Executor::new());
    let remaining = Arc::new(Remaining::default());
    remaining.left.store(blocks.len(), Ordering::Release);
    for b in blocks {
        let r = remaining.clone();
        ex.spawn(async move {
            Task(b).await;
            r.done_one();
        })
        .detach();
    }
    let handles = cpus
        .iter()
        .copied()
        .map(|cpu| {
            let (ex, r) = (ex.clone(), remaining.clone());
            std::thread::Builder::new()
                .name(format!("xb-fg-ex-{cpu}"))
                .spawn(move || -> Result<()> {
                    crate::measure::placement::pin_current(cpu)?;
                    futures_lite::future::block_on(
                        ex.run(std::future::poll_fn(|cx| r.all_done(cx))),
                    );
                    Ok(())
                })
                .map_err(|e| Error::run_from("starting an executor thread", e))
        })
        .collect::<Result<Vec<_>>>()?;
    join_all(handles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_matches_the_seed() {
        // "first M % N cores get floor(M/N) + 1 Saxpy blocks, the remaining
        // cores floor(M/N)".
        assert_eq!(partition(4, 2), [2, 2]);
        assert_eq!(partition(5, 2), [3, 2]);
        assert_eq!(partition(7, 3), [3, 2, 2]);
        assert_eq!(partition(8, 3), [3, 3, 2]);
        assert_eq!(partition(3, 4), [1, 1, 1, 0]);
        // Source with the first group, sink with the last.
        assert_eq!(
            threads(Scheduler::Static, 5, 2).unwrap(),
            [0, 0, 0, 0, 1, 1, 1]
        );
        assert_eq!(threads(Scheduler::Seq, 2, 1).unwrap(), [0; 4]);
        assert!(threads(Scheduler::Tokio, 2, 2).is_none());
        for n in 1..=4 {
            for m in n..=3 * n {
                let p = partition(m, n);
                assert_eq!(p.iter().sum::<usize>(), m);
                assert!(p.windows(2).all(|w| w[0] >= w[1] && w[0] - w[1] <= 1));
            }
        }
    }
}
