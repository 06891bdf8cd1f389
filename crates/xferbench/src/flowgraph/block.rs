//! Blocks and the one call a scheduler makes on them: `work` does what can
//! be done now and says whether it did anything; `wait` names what would let
//! it go on, for schedulers that sleep instead of spinning.

use super::edge::{Input, Output};
use super::saxpy::Kernel;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::Waker;

/// What one `work` call achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Moved this many items.
    Worked(usize),
    /// Nothing to do until an input fills or an output drains.
    Blocked,
    /// Finished: its output (if any) is closed.
    Done,
}

pub trait Block: Send {
    fn name(&self) -> &'static str;
    fn work(&mut self) -> Step;
    /// After `Blocked`: wake `w` when whatever blocked it changes. The caller
    /// then calls `work` once more before sleeping (the change may already
    /// have happened).
    fn wait(&self, w: &Waker);
}

/// Pretends to produce: claims the whole free output without writing it.
pub struct DummySource<O> {
    out: O,
    stop: Arc<AtomicBool>,
    /// Items left before it stops by itself (`u64::MAX`: until `stop`).
    left: u64,
    /// Claims at most this many items per call (one buffer's worth).
    chunk: usize,
    done: bool,
}

impl<O: Output> DummySource<O> {
    pub fn new(mut out: O, chunk: usize, items: Option<u64>, stop: Arc<AtomicBool>) -> Self {
        out.set_want(chunk);
        DummySource {
            out,
            stop,
            left: items.unwrap_or(u64::MAX),
            chunk,
            done: false,
        }
    }
}

impl<O: Output> Block for DummySource<O> {
    fn name(&self) -> &'static str {
        "source"
    }

    fn work(&mut self) -> Step {
        if self.done {
            return Step::Done;
        }
        if self.left == 0 || self.stop.load(Ordering::Relaxed) {
            self.out.close();
            self.done = true;
            return Step::Done;
        }
        let n = self
            .out
            .writable()
            .len()
            .min(self.chunk)
            .min(self.left.min(usize::MAX as u64) as usize);
        if n == 0 {
            return Step::Blocked;
        }
        self.out.produce(n);
        self.left -= n as u64;
        Step::Worked(n)
    }

    fn wait(&self, w: &Waker) {
        self.out.wait_space(w);
    }
}

/// y = a·x + b from its input edge into its output edge, up to one chunk
/// per call.
pub struct Saxpy<I, O> {
    inp: I,
    out: O,
    kernel: Kernel,
    a: f32,
    b: f32,
    chunk: usize,
    done: bool,
}

impl<I: Input, O: Output> Saxpy<I, O> {
    pub fn new(mut inp: I, mut out: O, kernel: Kernel, chunk: usize) -> Self {
        inp.set_want(chunk);
        out.set_want(chunk);
        Saxpy {
            inp,
            out,
            kernel,
            a: 1.000_001,
            b: 0.5,
            chunk,
            done: false,
        }
    }
}

impl<I: Input, O: Output> Block for Saxpy<I, O> {
    fn name(&self) -> &'static str {
        "saxpy"
    }

    fn work(&mut self) -> Step {
        if self.done {
            return Step::Done;
        }
        let x = self.inp.readable();
        if x.is_empty() {
            if self.inp.finished() {
                self.out.close();
                self.done = true;
                return Step::Done;
            }
            return Step::Blocked;
        }
        let y = self.out.writable();
        let n = x.len().min(y.len()).min(self.chunk);
        if n == 0 {
            return Step::Blocked;
        }
        (self.kernel)(self.a, self.b, &x[..n], &mut y[..n]);
        self.inp.consume(n);
        self.out.produce(n);
        Step::Worked(n)
    }

    /// Both ends: between this call and the caller's re-check the block
    /// may become blocked on the other one, and a wake-up on the wrong end
    /// would never come (a spurious one costs one `work` call).
    fn wait(&self, w: &Waker) {
        self.inp.wait_data(w);
        self.out.wait_space(w);
    }
}

/// What the sink has counted, read by the coordinator while it runs.
#[derive(Clone, Default)]
pub struct Meter(Arc<AtomicU64>);

impl Meter {
    pub fn items(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Publishes a running count (one writer).
    pub fn set(&self, items: u64) {
        self.0.store(items, Ordering::Relaxed);
    }
}

/// Consumes without reading and counts; the coordinator turns the count
/// into items/s between two readings after a warm-up.
pub struct BenchmarkSink<I> {
    inp: I,
    count: u64,
    meter: Meter,
    done: bool,
}

impl<I: Input> BenchmarkSink<I> {
    pub fn new(inp: I) -> (Self, Meter) {
        let meter = Meter::default();
        (
            BenchmarkSink {
                inp,
                count: 0,
                meter: meter.clone(),
                done: false,
            },
            meter,
        )
    }
}

impl<I: Input> Block for BenchmarkSink<I> {
    fn name(&self) -> &'static str {
        "sink"
    }

    fn work(&mut self) -> Step {
        if self.done {
            return Step::Done;
        }
        let n = self.inp.readable().len();
        if n == 0 {
            if self.inp.finished() {
                self.done = true;
                return Step::Done;
            }
            return Step::Blocked;
        }
        self.inp.consume(n);
        self.count += n as u64;
        self.meter.set(self.count);
        Step::Worked(n)
    }

    fn wait(&self, w: &Waker) {
        self.inp.wait_data(w);
    }
}
