//! Edges that hand whole buffers from block to block, as qsdr does,
//! instead of one fixed circular buffer per edge.
//!
//! Why a second kind: with a circular buffer, the memory a producer writes
//! on each lap is memory its consumer has just read. When the two run on
//! different cores every line written first has to be taken back from the
//! other core's cache, and that transfer is started by a store, which the
//! hardware prefetchers do not run ahead of. Here each block writes into
//! the buffer it read last, already in its own cache, so the only
//! cross-core traffic is the next block's reads, which prefetch well — the
//! ring reference's pattern, with a runtime around it. (A circular buffer
//! escapes the same cost by depth instead: deeper than twice the L2 cache,
//! the consumer's copies are gone before the producer comes round; see
//! `--edge-buffers`. A circuit needs only N+1 buffers.)
//!
//! The circuit: `buffers` buffers go round source → saxpy… → sink and back
//! to the source, and there is one spare per saxpy (or per thread, for
//! saxpys one thread runs in turn). A saxpy reads buffer X into a spare Y,
//! passes Y on, and X becomes the spare. Every edge is a queue of buffer
//! numbers with one producer and one consumer at a time; the data never
//! moves.

use super::edge::{Input, Output};
use super::ring::{PAGE, Padded, Signal};
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::Waker;

/// Page-aligned buffers of f32, known by number.
pub struct Buffers {
    base: *mut f32,
    /// The whole allocation, for `Drop`.
    len: usize,
    stride: usize,
    chunk: usize,
    count: usize,
}

// SAFETY: a buffer number is held by one end at a time, handed over through
// a `Queue` with release/acquire; the memory is freed only on drop.
unsafe impl Send for Buffers {}
// SAFETY: `&Buffers` hands out raw pointers only (`ptr`), reading fields
// fixed at `new`; who may touch the floats behind a pointer is the buffer
// number's holder, one end at a time as above, so sharing the handle between
// the producer's and the consumer's threads races on nothing.
unsafe impl Sync for Buffers {}

impl Buffers {
    /// `count` buffers of `chunk` floats, each starting 1 KiB + 64 B further
    /// past a page boundary than the one before: two buffers less than 64
    /// apart never sit at the same offset modulo 4 KiB (where loads would
    /// falsely wait on stores).
    pub fn new(count: usize, chunk: usize) -> Buffers {
        let page = PAGE / 4;
        let stride = chunk.div_ceil(page) * page + page + (1024 + 64) / 4;
        let len = page + count * stride;
        let base = Box::into_raw(vec![0.25f32; len].into_boxed_slice()).cast::<f32>();
        let skip = base.align_offset(PAGE);
        Buffers {
            // SAFETY: skip < one page of floats, inside the allocation.
            base: unsafe { base.add(skip) },
            len: len - skip,
            stride,
            chunk,
            count,
        }
    }

    /// The start of buffer `i` (`chunk` floats).
    pub fn ptr(&self, i: usize) -> *mut f32 {
        assert!(i < self.count);
        // SAFETY: within the allocation; see `new`.
        unsafe { self.base.add(i * self.stride) }
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        let page = PAGE / 4;
        let whole = page + self.count * self.stride;
        let skip = whole - self.len;
        // SAFETY: rebuilds the box `new` leaked, from its own start and length.
        unsafe {
            let start = self.base.sub(skip);
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                start, whole,
            )));
        }
    }
}

/// A single-producer/single-consumer queue of buffer numbers (with, on a
/// data edge, the items each holds in the upper 32 bits of its 64-bit slot:
/// one cache line per hand-over, not two, on 32-bit targets too). It never
/// fills: its capacity exceeds every buffer there is.
pub struct Queue {
    slots: Box<[AtomicU64]>,
    head: Padded<AtomicUsize>,
    tail: Padded<AtomicUsize>,
    closed: AtomicBool,
    /// Whether the popping side may sleep (see `ring::Ring::notify`).
    notify: bool,
    signal: Signal,
}

impl Queue {
    /// Room for more than `buffers` numbers.
    pub fn new(buffers: usize, notify: bool) -> Queue {
        Queue {
            slots: (0..(buffers + 1).next_power_of_two())
                .map(|_| AtomicU64::new(0))
                .collect(),
            head: Padded(AtomicUsize::new(0)),
            tail: Padded(AtomicUsize::new(0)),
            closed: AtomicBool::new(false),
            notify,
            signal: Signal::new(),
        }
    }

    pub fn push(&self, b: usize) {
        self.push_filled(b, 0);
    }

    /// Buffer `b` holding `items`, both far below 2^32 (a buffer holds at
    /// most 16 Mi items by `--buffer-size`'s limit).
    pub fn push_filled(&self, b: usize, items: usize) {
        let v = b as u64 | (items as u64) << 32;
        let h = self.head.0.load(Ordering::Relaxed);
        let mask = self.slots.len() - 1;
        debug_assert!(h - self.tail.0.load(Ordering::Relaxed) <= mask);
        self.slots[h & mask].store(v, Ordering::Relaxed);
        if self.notify {
            self.head.0.store(h + 1, Ordering::SeqCst);
            self.signal.notify();
        } else {
            self.head.0.store(h + 1, Ordering::Release);
        }
    }

    pub fn pop(&self) -> Option<usize> {
        self.pop_filled().map(|(b, _)| b)
    }

    /// The buffer at the front and the items it holds.
    pub fn pop_filled(&self) -> Option<(usize, usize)> {
        let t = self.tail.0.load(Ordering::Relaxed);
        if self.head.0.load(Ordering::Acquire) == t {
            return None;
        }
        let v = self.slots[t & (self.slots.len() - 1)].load(Ordering::Relaxed);
        self.tail.0.store(t + 1, Ordering::Release);
        Some(((v & 0xffff_ffff) as usize, (v >> 32) as usize))
    }

    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.signal.wake();
    }

    /// Closed, and everything pushed before was popped (popping side only).
    fn drained(&self) -> bool {
        self.closed.load(Ordering::Acquire)
            && self.head.0.load(Ordering::Acquire) == self.tail.0.load(Ordering::Relaxed)
    }
}

/// The producing end: fills one buffer taken from its supply, then hands
/// it on whole.
pub struct Producer {
    bufs: Arc<Buffers>,
    to: Arc<Queue>,
    supply: Arc<Queue>,
    /// Buffers taken from the supply and not yet used, newest last (the
    /// source only: it alone pops its supply; saxpys on one thread share
    /// theirs, so each takes just the one it needs).
    held: Option<Vec<usize>>,
    cur: Option<usize>,
    fill: usize,
}

impl Producer {
    fn new(bufs: &Arc<Buffers>, to: &Arc<Queue>, supply: &Arc<Queue>, newest: bool) -> Producer {
        Producer {
            bufs: bufs.clone(),
            to: to.clone(),
            supply: supply.clone(),
            held: newest.then(|| Vec::with_capacity(bufs.count)),
            cur: None,
            fill: 0,
        }
    }

    /// The next buffer to fill. On one core the source takes the one
    /// returned last: the most likely to be still in this core's cache
    /// (with N+1 = 2 buffers, only two of the three then ever turn). Across
    /// cores it takes the oldest: the newest was last written on another
    /// core and is still in that core's cache, where the next read must
    /// fetch it line by line; the oldest has had the longest to leave it
    /// (with more than N+1 buffers, 2.4 → 4.4 G samples/s for `static` at
    /// N=2, M=2 on a Sapphire Rapids guest, where newest-first gained
    /// nothing from any depth).
    fn take(&mut self) -> Option<usize> {
        match &mut self.held {
            Some(held) => {
                while let Some(b) = self.supply.pop() {
                    held.push(b);
                }
                held.pop()
            }
            None => self.supply.pop(),
        }
    }

    fn hand_on(&mut self) {
        if let Some(b) = self.cur.take() {
            self.to.push_filled(b, self.fill);
            self.fill = 0;
        }
    }
}

impl Output for Producer {
    fn set_want(&mut self, _: usize) {}

    /// The rest of the buffer being filled (empty when the supply is).
    fn writable(&mut self) -> &mut [f32] {
        if self.cur.is_none() {
            self.cur = self.take();
        }
        match self.cur {
            // SAFETY: this end holds buffer b; fill ≤ chunk.
            Some(b) => unsafe {
                std::slice::from_raw_parts_mut(
                    self.bufs.ptr(b).add(self.fill),
                    self.bufs.chunk - self.fill,
                )
            },
            None => &mut [],
        }
    }

    /// Hands the buffer on once it is full.
    fn produce(&mut self, n: usize) {
        self.fill += n;
        debug_assert!(self.fill <= self.bufs.chunk && self.cur.is_some());
        if self.fill == self.bufs.chunk {
            self.hand_on();
        }
    }

    fn wait_space(&self, w: &Waker) {
        self.supply.signal.wait(w);
    }

    /// Hands on a part-filled buffer first.
    fn close(&mut self) {
        if self.fill > 0 {
            self.hand_on();
        }
        self.to.close();
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.close();
    }
}

/// The consuming end: reads the buffer at the front, then returns it to
/// where its next writer takes buffers from.
pub struct Consumer {
    bufs: Arc<Buffers>,
    from: Arc<Queue>,
    back: Arc<Queue>,
    /// The buffer at the front and the items it holds.
    cur: Cell<Option<(usize, usize)>>,
    read: usize,
}

impl Input for Consumer {
    fn set_want(&mut self, _: usize) {}

    /// The unread rest of the buffer at the front.
    fn readable(&self) -> &[f32] {
        if self.cur.get().is_none() {
            self.cur.set(self.from.pop_filled());
        }
        match self.cur.get() {
            Some((b, n)) => {
                // SAFETY: this end holds buffer b, of which n items were
                // written before it was handed over; read ≤ n.
                unsafe {
                    std::slice::from_raw_parts(self.bufs.ptr(b).add(self.read), n - self.read)
                }
            }
            None => &[],
        }
    }

    /// Returns the buffer once all of it is read.
    fn consume(&mut self, n: usize) {
        debug_assert!(self.cur.get().is_some_and(|(_, len)| self.read + n <= len));
        self.read += n;
        if let Some((b, n)) = self.cur.get()
            && self.read == n
        {
            self.back.push(b);
            self.cur.set(None);
            self.read = 0;
        }
    }

    fn finished(&self) -> bool {
        self.cur.get().is_none() && self.from.drained()
    }

    fn wait_data(&self, w: &Waker) {
        self.from.signal.wait(w);
    }
}

/// The edges of source → `blocks` saxpy → sink: the source's output, each
/// saxpy's (input, output), and the sink's input. `buffers` buffers of
/// `chunk` floats circulate; `notify` when any block may sleep.
///
/// `threads` (source, saxpys…, sink) says which blocks one thread runs in
/// turn, where the scheduler fixes it: those saxpys share one spare, so the
/// next block writes into the buffer the one before it has just read, still
/// in the core's first-level cache (the ring reference swaps two buffers
/// the same way). Blocks that move between threads keep a spare each.
/// `one_core`: every block runs on one core, so the source reuses the
/// buffer returned last (see `Producer::take`).
pub fn circuit(
    blocks: usize,
    chunk: usize,
    buffers: usize,
    notify: bool,
    threads: Option<&[usize]>,
    one_core: bool,
) -> (Producer, Vec<(Consumer, Producer)>, Consumer) {
    // The spare each saxpy draws from: spares[k] for saxpy k.
    let owner: Vec<usize> = (0..blocks)
        .map(|k| threads.map_or(k, |t| t[k + 1]))
        .collect();
    let mut kinds = owner.clone();
    kinds.sort_unstable();
    kinds.dedup();
    let total = buffers + kinds.len();
    let bufs = Arc::new(Buffers::new(total, chunk));
    let queue = || Arc::new(Queue::new(total, notify));
    let stashes: Vec<Arc<Queue>> = kinds
        .iter()
        .enumerate()
        .map(|(i, _)| {
            let q = queue();
            q.push(buffers + i);
            q
        })
        .collect();
    // The sink returns buffers to the source.
    let back = queue();
    for b in 0..buffers {
        back.push(b);
    }
    let mut from = queue();
    let source = Producer::new(&bufs, &from, &back, one_core);
    let mut mids = Vec::with_capacity(blocks);
    for o in owner {
        let spare = &stashes[kinds.binary_search(&o).unwrap_or(0)];
        let to = queue();
        mids.push((
            Consumer {
                bufs: bufs.clone(),
                from,
                back: spare.clone(),
                cur: Cell::new(None),
                read: 0,
            },
            Producer::new(&bufs, &to, spare, false),
        ));
        from = to;
    }
    let sink = Consumer {
        bufs,
        from,
        back,
        cur: Cell::new(None),
        read: 0,
    };
    (source, mids, sink)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_goes_round_whole_and_a_part_filled_one_on_close() {
        let (mut p, mids, mut c) = circuit(0, 256, 2, false, None, true);
        assert!(mids.is_empty());
        let w = p.writable();
        assert_eq!(w.len(), 256);
        w[..100].fill(1.0);
        p.produce(100);
        assert!(c.readable().is_empty(), "nothing is handed on half-filled");
        p.writable()[..156].fill(2.0);
        p.produce(156);
        let r = c.readable();
        assert_eq!(r.len(), 256);
        assert!(r[..100].iter().all(|&v| v == 1.0) && r[100..].iter().all(|&v| v == 2.0));
        // The second buffer fills while the first is out; a third is not there.
        p.writable();
        p.produce(256);
        assert!(p.writable().is_empty());
        c.consume(200);
        assert!(
            p.writable().is_empty(),
            "a buffer comes back only when all read"
        );
        c.consume(56);
        assert_eq!(p.writable().len(), 256);
        p.writable()[0] = 7.0;
        p.produce(1);
        drop(p);
        assert_eq!(c.readable().len(), 256);
        c.consume(256);
        assert!(!c.finished());
        assert_eq!(c.readable(), [7.0]);
        c.consume(1);
        assert!(c.finished());
    }

    #[test]
    fn the_buffer_returned_last_is_written_next() {
        let (mut p, _, mut c) = circuit(0, 64, 3, false, None, true);
        let first = p.writable().as_ptr();
        p.produce(64);
        assert_eq!(c.readable().len(), 64);
        c.consume(64);
        assert_eq!(p.writable().as_ptr(), first, "still in cache: reused");
    }

    #[test]
    fn across_cores_the_oldest_buffer_is_written_next() {
        let (mut p, _, mut c) = circuit(0, 64, 3, false, None, false);
        let mut order = Vec::new();
        for _ in 0..6 {
            order.push(p.writable().as_ptr());
            p.produce(64);
            assert_eq!(c.readable().len(), 64);
            c.consume(64);
        }
        // All three turn, in order, however soon each comes back.
        assert_eq!(order[0..3], order[3..6]);
        assert!(order[0] != order[1] && order[1] != order[2] && order[0] != order[2]);
    }

    #[test]
    fn buffers_never_alias_modulo_4k() {
        let b = Buffers::new(40, 4096);
        let offs: Vec<usize> = (0..40).map(|i| b.ptr(i) as usize % PAGE).collect();
        assert!((b.ptr(0) as usize).is_multiple_of(PAGE));
        for i in 0..40 {
            for j in 0..i {
                assert_ne!(offs[i], offs[j], "buffers {i} and {j}");
            }
        }
    }

    #[test]
    fn spinning_ends_lose_duplicate_or_reorder_nothing() {
        let (p, _, c) = circuit(0, 1000, 3, false, None, false);
        super::super::edge::check::counter(p, c, false);
    }

    #[test]
    fn sleeping_ends_lose_duplicate_or_reorder_nothing() {
        let (p, _, c) = circuit(0, 1000, 2, true, None, true);
        super::super::edge::check::counter(p, c, true);
    }
}
