//! What a block sees of the buffers between blocks, whichever kind they
//! are: the ready items as one slice, the free space as one slice, and a
//! way to sleep until either changes. Blocks are generic over these, so a
//! flowgraph of either kind runs the same block code with no dispatch.

use crate::words::{Word, word_enum};
use std::task::Waker;

word_enum! {
    /// The kinds of edge a flowgraph can be built with.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum Edges {
        /// A fixed circular buffer per edge, mapped twice so both the data and
        /// the free space are always one slice (`ring.rs`).
        Circular = "circular",
        /// Whole buffers handed from block to block round a closed circuit,
        /// each block writing into the buffer it read last (`handoff.rs`).
        Handoff = "handoff",
    }
}

impl Edges {
    /// Both kinds, in declaration order.
    pub const ALL: [Edges; 2] = [Edges::Circular, Edges::Handoff];

    /// The word that names it on the command line and in results.
    pub fn name(self) -> &'static str {
        self.word()
    }
}

/// How a (scheduler, edges) pair is named in tables and plots: circular
/// buffers are the runtime's default and go unnamed; the ring reference
/// hands buffers over by nature.
pub fn series(scheduler: &str, edges: &str) -> String {
    if edges == Edges::Handoff.name() && scheduler != "ring" {
        format!("{scheduler}+{edges}")
    } else {
        scheduler.to_string()
    }
}

/// The consuming end of an edge.
pub trait Input: Send {
    /// A hint: the block takes up to `n` items per call.
    fn set_want(&mut self, n: usize);
    /// The items ready, one contiguous slice (empty when none).
    fn readable(&self) -> &[f32];
    /// Gives the first `n` ready items back.
    fn consume(&mut self, n: usize);
    /// The producer has closed and every item is read.
    fn finished(&self) -> bool;
    /// Wakes `w` when data arrives or the producer closes (then call
    /// `readable` again: it may have come before this returned).
    fn wait_data(&self, w: &Waker);
}

/// The producing end of an edge.
pub trait Output: Send {
    /// A hint: the block fills up to `n` items per call.
    fn set_want(&mut self, n: usize);
    /// The free space, one contiguous slice (empty when none).
    fn writable(&mut self) -> &mut [f32];
    /// Hands the first `n` items of the free space on.
    fn produce(&mut self, n: usize);
    /// Wakes `w` when space frees up (then call `writable` again).
    fn wait_space(&self, w: &Waker);
    /// No more items will come: the consumer finishes after the rest.
    fn close(&mut self);
}

/// The test every kind of edge must pass.
#[cfg(test)]
pub mod check {
    use super::{Input, Output};
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    /// A producer writing a counter in uneven chunks and a consumer checking
    /// every item, across thousands of wraps: nothing lost, duplicated or
    /// reordered. With `notify`, both sides sleep when blocked.
    pub fn counter(mut p: impl Output + 'static, mut c: impl Input, notify: bool) {
        const TOTAL: u64 = 3_000_000;
        let writer = std::thread::spawn(move || {
            let w = Waker::from(Arc::new(Unpark(std::thread::current())));
            let mut next = 0u64;
            let mut step = 1usize;
            while next < TOTAL {
                let free = p.writable();
                if free.is_empty() {
                    if notify {
                        p.wait_space(&w);
                        if p.writable().is_empty() {
                            std::thread::park_timeout(std::time::Duration::from_millis(50));
                        }
                    }
                    continue;
                }
                step = step * 7 % 1500 + 1;
                let n = free.len().min(step).min((TOTAL - next) as usize);
                for v in &mut free[..n] {
                    *v = (next % (1 << 24)) as f32;
                    next += 1;
                }
                p.produce(n);
            }
        });
        let w = Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut expect = 0u64;
        let mut step = 3usize;
        loop {
            let r = c.readable();
            if r.is_empty() {
                if c.finished() {
                    break;
                }
                if notify {
                    c.wait_data(&w);
                    if c.readable().is_empty() && !c.finished() {
                        std::thread::park_timeout(std::time::Duration::from_millis(50));
                    }
                }
                continue;
            }
            step = step * 5 % 1300 + 1;
            let n = r.len().min(step);
            for v in &r[..n] {
                assert_eq!(*v, (expect % (1 << 24)) as f32, "item {expect}");
                expect += 1;
            }
            c.consume(n);
        }
        writer.join().unwrap();
        assert_eq!(expect, TOTAL);
    }
}
