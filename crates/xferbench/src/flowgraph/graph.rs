//! One flowgraph, built and measured: source → M saxpy → sink over
//! circular buffers of one chunk (same thread) or `edge_buffers` chunks
//! (across threads), or over a circuit of handed-off buffers, run by a
//! scheduler while the coordinator reads the sink's count at the end of
//! every 10 ms window after a warm-up (see [`super::rate`]).

use super::block::{BenchmarkSink, Block, DummySource, Meter, Saxpy};
use super::edge::{Edges, Input, Output};
use super::handoff;
use super::plan::{Config, Started};
use super::rate::{WINDOW, Windows};
use super::ring::channel;
use super::saxpy::Kernel;
use super::sched::{self, Scheduler};
use crate::error::{Error, Result};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Where ring `k` starts: 1 KiB + 64 B further round each successive ring,
/// so a block's input and output never sit at the same offset modulo 4 KiB.
fn start(k: usize) -> usize {
    k * (1024 + 64) / 4
}

/// source → `cfg.blocks` saxpy → sink, for scheduler `kind`.
pub fn build(
    cfg: &Config,
    kind: Scheduler,
    kernel: Kernel,
    stop: Arc<AtomicBool>,
) -> Result<(Vec<Box<dyn Block>>, Meter)> {
    let notify = kind.sleeps();
    let threads = sched::threads(kind, cfg.blocks, cfg.cpus.len());
    match cfg.edges {
        Edges::Circular => {
            // Ring k joins block k to block k + 1.
            let cap = |k: usize| match &threads {
                Some(t) if t[k] == t[k + 1] => cfg.chunk,
                _ => cfg.chunk * cfg.edge_buffers,
            };
            let (source, mut rx) = channel(cap(0), start(0), notify)?;
            let mut mids = Vec::with_capacity(cfg.blocks);
            for k in 1..=cfg.blocks {
                let (t, r) = channel(cap(k), start(k), notify)?;
                mids.push((rx, t));
                rx = r;
            }
            Ok(chain(cfg, kernel, stop, source, mids, rx))
        }
        Edges::Handoff => {
            let (source, mids, sink) = handoff::circuit(
                cfg.blocks,
                cfg.chunk,
                cfg.buffers.max(1),
                notify,
                threads.as_deref(),
                cfg.cpus.len() == 1,
            );
            Ok(chain(cfg, kernel, stop, source, mids, sink))
        }
    }
}

/// The blocks over edges of one kind.
fn chain<I: Input + 'static, O: Output + 'static>(
    cfg: &Config,
    kernel: Kernel,
    stop: Arc<AtomicBool>,
    source: O,
    mids: Vec<(I, O)>,
    sink: I,
) -> (Vec<Box<dyn Block>>, Meter) {
    let mut blocks: Vec<Box<dyn Block>> = vec![Box::new(DummySource::new(
        source, cfg.chunk, cfg.items, stop,
    ))];
    for (i, o) in mids {
        blocks.push(Box::new(Saxpy::new(i, o, kernel, cfg.chunk)));
    }
    let (sink, meter) = BenchmarkSink::new(sink);
    blocks.push(Box::new(sink));
    (blocks, meter)
}

/// Something the coordinator can measure, given the stop flag.
pub type Start = Box<dyn FnOnce(Arc<AtomicBool>) -> Result<Started>>;

/// Measures a flowgraph under `kind`: the windows of its measuring time
/// (the caller may pool those of several runs of the same point).
pub fn measure(
    kind: Scheduler,
    cfg: &Config,
    kernel: Kernel,
    interrupt: &AtomicBool,
) -> Result<Windows> {
    let c = cfg.clone();
    let start: Start = if kind == Scheduler::Ring {
        Box::new(move |stop| super::ring_reference::ring(&c, kernel, stop))
    } else {
        Box::new(move |stop| {
            let (blocks, meter) = build(&c, kind, kernel, stop)?;
            let cpus = c.cpus.clone();
            let run: Box<dyn FnOnce() -> Result<()> + Send> =
                Box::new(move || sched::run(kind, blocks, &cpus));
            Ok((meter, run))
        })
    };
    coordinate(start, cfg, kind.name(), interrupt)
}

/// Runs what `start` makes on a thread of its own; after the warm-up reads
/// the meter at the end of every window until the measuring time is over
/// (or the run ends by itself, with `items`); then stops it and waits,
/// within the timeout.
fn coordinate(start: Start, cfg: &Config, what: &str, interrupt: &AtomicBool) -> Result<Windows> {
    let stop = Arc::new(AtomicBool::new(false));
    let (meter, run) = start(stop.clone())?;
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("xb-fg-run".into())
        .spawn(move || {
            let _ = done_tx.send(run());
        })
        .map_err(|e| Error::run_from("starting the flowgraph", e))?;
    // Waits up to `d`, returning early if the run ended or the user stopped it.
    let wait = |d: Duration| -> Option<Result<()>> {
        let until = Instant::now() + d;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || interrupt.load(Ordering::Relaxed) {
                return None;
            }
            match done_rx.recv_timeout(left.min(Duration::from_millis(20))) {
                Ok(r) => return Some(r),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Some(Err(Error::run(format!("the {what} flowgraph thread died"))));
                }
            }
        }
    };
    let t0 = Instant::now();
    if let Some(r) = wait(cfg.warmup) {
        // Ended (an --items run) before the warm-up was over: the whole run
        // counts, as one window.
        r?;
        let mut w = Windows::with_capacity(1);
        w.record(meter.items(), t0.elapsed().as_secs_f64());
        return Ok(w);
    }
    let budget = if cfg.items.is_some() {
        Duration::from_secs(3600)
    } else {
        cfg.duration
    };
    // An --items run has no set length: room for a minute, growing after.
    let mut w = Windows::with_capacity(
        (budget.min(Duration::from_secs(60)).as_millis() / WINDOW.as_millis()) as usize + 2,
    );
    let (start, mut last) = (Instant::now(), (meter.items(), Instant::now()));
    // Window k ends at start + k·WINDOW, so late wake-ups do not drift.
    let mut k = 1u32;
    let ended = loop {
        let due = (start + WINDOW * k).min(start + budget);
        let r = wait(due.saturating_duration_since(Instant::now()));
        let now = (meter.items(), Instant::now());
        w.record(now.0 - last.0, now.1.duration_since(last.1).as_secs_f64());
        last = now;
        if r.is_some() || now.1 >= start + budget || interrupt.load(Ordering::Relaxed) {
            break r;
        }
        k += 1;
    };
    if let Some(r) = ended {
        r?;
        return Ok(w);
    }
    let interrupted = interrupt.load(Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    match done_rx.recv_timeout(cfg.timeout) {
        Ok(r) => r?,
        Err(_) => {
            return Err(Error::run(format!(
                "the {what} scheduler did not wind down within {:?} of being stopped",
                cfg.timeout
            )));
        }
    }
    if interrupted {
        return Err(Error::Interrupted);
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pinned spinning threads of two tests on one core would starve each
    /// other's sleeping schedulers: these tests take turns.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn turn() -> std::sync::MutexGuard<'static, ()> {
        ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn cfg(n: usize, m: usize, items: Option<u64>) -> Config {
        let cpus = crate::measure::placement::allowed_cpus();
        Config {
            blocks: m,
            cpus: (0..n).map(|i| cpus[i % cpus.len()]).collect(),
            chunk: 1024,
            edges: Edges::Circular,
            buffers: n + 1,
            edge_buffers: 2,
            warmup: Duration::from_millis(10),
            duration: Duration::from_millis(50),
            items,
            timeout: Duration::from_secs(20),
        }
    }

    /// Every scheduler runs every (N, M) it accepts to the end: the sink
    /// counts exactly what the source made, and every thread exits.
    #[test]
    fn every_scheduler_finishes_every_grid_point_with_every_item() {
        let _t = turn();
        let (kernel, _) = crate::flowgraph::saxpy::best();
        for n in 1..=2 {
            for m in n..=3 * n {
                for s in Scheduler::ALL
                    .into_iter()
                    .filter(|s| s.applies(n) && *s != Scheduler::Ring)
                {
                    for edges in Edges::ALL {
                        let c = Config {
                            edges,
                            ..cfg(n, m, Some(300_000))
                        };
                        let what = format!("{} on {} edges, N={n} M={m}", s.name(), edges.name());
                        let stop = Arc::new(AtomicBool::new(false));
                        let (blocks, meter) = build(&c, s, kernel, stop).unwrap();
                        let (tx, rx) = mpsc::channel();
                        let cpus = c.cpus.clone();
                        std::thread::spawn(move || {
                            let _ = tx.send(sched::run(s, blocks, &cpus));
                        });
                        rx.recv_timeout(Duration::from_secs(60))
                            .unwrap_or_else(|_| panic!("{what} hung"))
                            .unwrap();
                        assert_eq!(meter.items(), 300_000, "{what}");
                    }
                }
            }
        }
    }

    /// Stopped by time, each scheduler and the ring wind down and report a
    /// rate over at most one window per 10 ms of the duration, having
    /// measured the whole duration. How many items a busy machine moves in
    /// 50 ms is its own affair (a vCPU stalled for the whole measurement
    /// leaves every window empty); that items flow at all is checked by
    /// measuring again when none were counted, for up to a minute.
    #[test]
    fn measured_points_stop_on_time_and_count_items() {
        let _t = turn();
        let (kernel, _) = crate::flowgraph::saxpy::best();
        let none = AtomicBool::new(false);
        for n in 1..=2 {
            for s in Scheduler::ALL.into_iter().filter(|s| s.applies(n)) {
                for edges in Edges::ALL {
                    let c = Config {
                        edges,
                        ..cfg(n, n + 1, None)
                    };
                    let what = format!("{} on {} edges, N={n}", s.name(), edges.name());
                    let most = (c.duration.as_millis() / WINDOW.as_millis()) as usize;
                    let first = Instant::now();
                    loop {
                        let got = measure(s, &c, kernel, &none)
                            .unwrap_or_else(|e| panic!("{what}: {e}"))
                            .rate();
                        assert!(
                            (1..=most).contains(&got.windows),
                            "{what}: {} windows",
                            got.windows
                        );
                        // The whole 50 ms, less what a preemption between
                        // two clock reads at the start could take; the upper
                        // bound only catches a coordinator that never stops.
                        assert!(
                            got.seconds >= 0.025 && got.seconds < 20.0,
                            "{what}: {}",
                            got.seconds
                        );
                        assert!(
                            got.per_s >= 0.0 && got.p10_per_s <= got.p90_per_s,
                            "{what}: {got:?}"
                        );
                        assert_eq!(got.mean_per_s, got.items as f64 / got.seconds, "{what}");
                        if got.items > 0 {
                            break;
                        }
                        assert!(
                            first.elapsed() < Duration::from_secs(60),
                            "{what}: no item counted in a minute of measurements"
                        );
                    }
                }
            }
        }
    }

    /// With `items`, the run ends by itself once the ring has moved them
    /// (in whole chunks of 1024), however long that takes: the warm-up is
    /// long enough that it ends there, and the whole run is one window.
    #[test]
    fn the_ring_reference_stops_after_its_items() {
        let _t = turn();
        let (kernel, _) = crate::flowgraph::saxpy::best();
        let none = AtomicBool::new(false);
        let c = Config {
            warmup: Duration::from_secs(60),
            ..cfg(2, 3, Some(200_000))
        };
        let got = measure(Scheduler::Ring, &c, kernel, &none).unwrap().rate();
        assert_eq!(got.windows, 1, "{got:?}");
        assert!(
            got.items >= 200_000 && got.items < 200_000 + c.chunk as u64,
            "{got:?}"
        );
    }
}
