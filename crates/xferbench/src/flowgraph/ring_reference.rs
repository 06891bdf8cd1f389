//! The references no runtime can beat: the Saxpy kernel alone on one core
//! over a scan of buffer sizes (the seed's `scan-buffer-size`), and the
//! multi-kernel ring — N pinned threads passing N+1 buffers around, each
//! running its static share of the M kernels, with nothing else in the way.

use super::block::Meter;
use super::handoff::{Buffers, Queue};
use super::plan::{Config, Started};
use super::rate::{Rate, WINDOW, Windows};
use super::saxpy::{Kernel, Pair};
use super::sched::partition;
use crate::error::{Error, Result};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The kernel alone on `n` floats for about `time`, measured over the
/// same windows as every flowgraph point (see [`super::rate`]).
pub fn kernel_rate(kernel: Kernel, n: usize, time: Duration) -> Rate {
    kernel_windows(kernel, n, time).rate()
}

/// [`kernel_rate`]'s windows, for pooling several passes over one size.
pub fn kernel_windows(kernel: Kernel, n: usize, time: Duration) -> Windows {
    let mut pair = Pair::new(n);
    for _ in 0..3 {
        pair.run(kernel, 1.000_001, 0.5);
    }
    // Batches of about 64 Ki items (a few µs), timed in whole windows.
    let reps = (1 << 16) / n.max(1) + 1;
    let mut w = Windows::with_capacity((time.as_millis() / WINDOW.as_millis()) as usize + 2);
    let end = Instant::now() + time;
    loop {
        let t = Instant::now();
        let mut items = 0u64;
        while t.elapsed() < WINDOW {
            for _ in 0..reps {
                pair.run(kernel, 1.000_001, 0.5);
            }
            items += (reps * n) as u64;
        }
        w.record(items, t.elapsed().as_secs_f64());
        if Instant::now() >= end {
            return w;
        }
    }
}

/// Starts the ring reference for `cfg` (N = its CPUs, M = its blocks); the
/// returned closure runs it until `stop`, counting items out of the last
/// thread.
pub fn ring(cfg: &Config, kernel: Kernel, stop: Arc<AtomicBool>) -> Result<Started> {
    let n = cfg.cpus.len();
    if n == 0 {
        return Err(Error::usage("the ring reference needs at least one core"));
    }
    let shares = partition(cfg.blocks, n);
    let nbuf = cfg.buffers.max(2);
    let items = cfg.chunk;
    // Buffers 0..nbuf circulate; nbuf + k is thread k's scratch.
    let bufs = Arc::new(Buffers::new(nbuf + n, items));
    let queues: Arc<Vec<Queue>> = Arc::new((0..n).map(|_| Queue::new(nbuf, false)).collect());
    for b in 0..nbuf {
        queues[0].push(b);
    }
    let meter = Meter::default();
    let m2 = meter.clone();
    let cpus = cfg.cpus.clone();
    let limit = cfg.items;
    let run = Box::new(move || -> Result<()> {
        let handles: Vec<_> = (0..n)
            .map(|k| {
                let (bufs, queues, stop, meter) =
                    (bufs.clone(), queues.clone(), stop.clone(), m2.clone());
                let (cpu, share) = (cpus[k], shares[k]);
                std::thread::Builder::new()
                    .name(format!("xb-ring-{cpu}"))
                    .spawn(move || -> Result<()> {
                        crate::measure::placement::pin_current(cpu)?;
                        // This thread's spare buffer. A kernel reads one buffer and
                        // writes the other; after an odd number of kernels the result
                        // is in the spare, so the two swap names and the buffer passed
                        // on always holds the data just written, as in a real chain
                        // (whose cost of moving written data between cores the ring
                        // must pay too).
                        let mut spare = nbuf + k;
                        let mut count = 0u64;
                        // On one core the buffer just written goes straight
                        // round again, still in this core's cache (as the
                        // handoff source takes the newest there): two
                        // buffers turn, not N+1 and the spare.
                        let mut again = None;
                        loop {
                            let Some(mut b) = again.take().or_else(|| queues[k].pop()) else {
                                if stop.load(Ordering::Relaxed) {
                                    return Ok(());
                                }
                                std::hint::spin_loop();
                                continue;
                            };
                            for _ in 0..share {
                                // SAFETY: this thread holds buffer b and its spare;
                                // both are `items` long and disjoint.
                                let (x, y) = unsafe {
                                    (
                                        std::slice::from_raw_parts(bufs.ptr(b), items),
                                        std::slice::from_raw_parts_mut(bufs.ptr(spare), items),
                                    )
                                };
                                kernel(1.000_001, 0.5, x, y);
                                std::mem::swap(&mut b, &mut spare);
                            }
                            if n == 1 {
                                again = Some(b);
                            } else {
                                queues[(k + 1) % n].push(b);
                            }
                            if k == n - 1 {
                                count += items as u64;
                                meter.set(count);
                                if limit.is_some_and(|l| count >= l) {
                                    stop.store(true, Ordering::Relaxed);
                                }
                            }
                            if stop.load(Ordering::Relaxed) {
                                return Ok(());
                            }
                        }
                    })
                    .map_err(|e| Error::run_from("starting a ring thread", e))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut first = Ok(());
        for h in handles {
            let r = h
                .join()
                .unwrap_or_else(|_| Err(Error::run("a ring thread panicked")));
            if first.is_ok() {
                first = r;
            }
        }
        first
    });
    Ok((meter, run))
}
