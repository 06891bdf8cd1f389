//! The buffer between two blocks: a lock-free single-producer/single-consumer
//! ring of f32. The memory is mapped twice, back to back, so the free space
//! and the data are always one contiguous slice, even across the wrap: a
//! block hands its kernel a plain `&[f32]`/`&mut [f32]` and never copies.

use super::edge::{Input, Output};
use crate::error::{Error, Result};
use atomic_waker::AtomicWaker;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::Waker;

/// Keeps a value on its own cache lines (two, for the adjacent-line
/// prefetcher), so the producer's and consumer's indices never share one.
#[repr(align(128))]
pub struct Padded<T>(pub T);

pub const PAGE: usize = 4096;

struct Ring {
    base: *mut f32,
    /// Items; a power of two whose bytes are a whole number of pages.
    cap: usize,
    /// Items ever produced / consumed. Only their difference matters, so
    /// they may start anywhere: see [`channel`]'s `start`.
    head: Padded<AtomicUsize>,
    tail: Padded<AtomicUsize>,
    closed: AtomicBool,
    /// Whether anyone may be asleep on this ring (async and thread-per-block
    /// schedulers): then every produce/consume checks for a waiter. Spinning
    /// schedulers skip that cost.
    notify: bool,
    data: Signal,
    space: Signal,
}

/// One side that may sleep: its waker, and whether it said it is waiting.
pub(super) struct Signal {
    waiting: Padded<AtomicBool>,
    waker: AtomicWaker,
}

impl Signal {
    pub(super) fn new() -> Signal {
        Signal {
            waiting: Padded(AtomicBool::new(false)),
            waker: AtomicWaker::new(),
        }
    }

    /// Wakes the waiter if it said it may sleep. The caller's SeqCst store
    /// of its index and the SeqCst load here pair with the waiter's SeqCst
    /// flag store and index re-check: one of the two sees the other.
    pub(super) fn notify(&self) {
        if self.waiting.0.load(Ordering::SeqCst) {
            self.waiting.0.store(false, Ordering::Relaxed);
            self.waker.wake();
        }
    }

    /// Wakes the waiter whether or not it said so (closing).
    pub(super) fn wake(&self) {
        self.waker.wake();
    }

    /// Wakes `w` at the next `notify` (the caller then re-checks what it
    /// waits for: it may have come before this returned).
    pub(super) fn wait(&self, w: &Waker) {
        self.waker.register(w);
        self.waiting.0.store(true, Ordering::SeqCst);
    }
}

// SAFETY: `base` is a private mapping; the producer writes only the free
// region and the consumer reads only the filled one, and the indices that
// hand regions over are published with release/acquire.
unsafe impl Send for Ring {}
// SAFETY: a ring is shared (`Arc`) by exactly one `Producer` and one
// `Consumer`, neither of them Clone; every other field reached through
// `&Ring` is an atomic (`head`, `tail`, `closed`, the signals) or fixed at
// creation (`base`, `cap`, `notify`), so the only unsynchronised memory is
// the items, split between the two ends as above.
unsafe impl Sync for Ring {}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: the two mappings made in `map` are 2·cap items long.
        unsafe { libc::munmap(self.base.cast(), 2 * self.cap * 4) };
    }
}

/// Maps `bytes` of a memfd twice, back to back.
fn map(bytes: usize) -> Result<*mut f32> {
    // SAFETY: plain syscalls on memory and a descriptor this function owns;
    // every failure path releases what was made.
    unsafe {
        let fd = libc::memfd_create(c"xferbench-ring".as_ptr(), libc::MFD_CLOEXEC);
        if fd < 0 {
            return Err(Error::os("memfd_create for a flowgraph buffer"));
        }
        let fail = |what: &str, fd: i32| {
            let e = Error::os(what);
            libc::close(fd);
            e
        };
        if libc::ftruncate(fd, bytes as libc::off_t) != 0 {
            return Err(fail("sizing a flowgraph buffer", fd));
        }
        let base = libc::mmap(
            std::ptr::null_mut(),
            2 * bytes,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if base == libc::MAP_FAILED {
            return Err(fail("reserving a flowgraph buffer", fd));
        }
        for half in 0..2 {
            let at = base.cast::<u8>().add(half * bytes).cast();
            let p = libc::mmap(
                at,
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                fd,
                0,
            );
            if p == libc::MAP_FAILED {
                let e = fail("mapping a flowgraph buffer", fd);
                libc::munmap(base, 2 * bytes);
                return Err(e);
            }
        }
        libc::close(fd);
        Ok(base.cast())
    }
}

/// The producing end. It keeps the last consumer index it read and reads
/// the shared one (a cache miss when the consumer runs on another core)
/// only when the cached one shows less than `want` items free.
pub struct Producer {
    ring: Arc<Ring>,
    head: usize,
    tail_seen: usize,
    want: usize,
}

/// The consuming end; caches the producer's index the same way.
pub struct Consumer {
    ring: Arc<Ring>,
    tail: usize,
    head_seen: std::cell::Cell<usize>,
    want: usize,
}

/// A ring of at least `items` f32 (rounded up to a power of two of whole
/// pages). `start` offsets where the first item lands: giving consecutive
/// rings different starts keeps a block's input and output from sitting at
/// the same offset modulo 4 KiB, where loads would falsely wait on stores.
pub fn channel(items: usize, start: usize, notify: bool) -> Result<(Producer, Consumer)> {
    let cap = items.max(PAGE / 4).next_power_of_two();
    let base = map(cap * 4)?;
    let ring = Arc::new(Ring {
        base,
        cap,
        head: Padded(AtomicUsize::new(start)),
        tail: Padded(AtomicUsize::new(start)),
        closed: AtomicBool::new(false),
        notify,
        data: Signal::new(),
        space: Signal::new(),
    });
    Ok((
        Producer {
            ring: ring.clone(),
            head: start,
            tail_seen: start,
            want: cap,
        },
        Consumer {
            ring,
            tail: start,
            head_seen: std::cell::Cell::new(start),
            want: cap,
        },
    ))
}

impl Ring {
    fn slice(&self, at: usize, len: usize) -> *mut f32 {
        debug_assert!(len <= self.cap);
        // SAFETY: at & (cap-1) + len ≤ 2·cap, inside the double mapping.
        unsafe { self.base.add(at & (self.cap - 1)) }
    }
}

#[cfg(test)]
impl Producer {
    fn capacity(&self) -> usize {
        self.ring.cap
    }
}

impl Output for Producer {
    /// Reads the consumer's index only when fewer than `n` items look free
    /// (default: the whole capacity, i.e. always).
    fn set_want(&mut self, n: usize) {
        self.want = n.min(self.ring.cap);
    }

    fn writable(&mut self) -> &mut [f32] {
        let r = &*self.ring;
        if r.cap - (self.head - self.tail_seen) < self.want {
            self.tail_seen = r.tail.0.load(Ordering::Acquire);
        }
        let free = r.cap - (self.head - self.tail_seen);
        // SAFETY: the consumer never touches [head, tail + cap).
        unsafe { std::slice::from_raw_parts_mut(r.slice(self.head, free), free) }
    }

    fn produce(&mut self, n: usize) {
        self.head += n;
        let r = &*self.ring;
        if r.notify {
            r.head.0.store(self.head, Ordering::SeqCst);
            r.data.notify();
        } else {
            r.head.0.store(self.head, Ordering::Release);
        }
    }

    fn wait_space(&self, w: &Waker) {
        self.ring.space.wait(w);
    }

    fn close(&mut self) {
        let r = &*self.ring;
        r.closed.store(true, Ordering::SeqCst);
        r.data.wake();
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.close();
    }
}

impl Input for Consumer {
    /// Reads the producer's index only when fewer than `n` items look ready.
    fn set_want(&mut self, n: usize) {
        self.want = n.min(self.ring.cap);
    }

    fn readable(&self) -> &[f32] {
        let r = &*self.ring;
        if self.head_seen.get() - self.tail < self.want {
            self.head_seen.set(r.head.0.load(Ordering::Acquire));
        }
        let ready = self.head_seen.get() - self.tail;
        // SAFETY: the producer never touches [tail, head).
        unsafe { std::slice::from_raw_parts(r.slice(self.tail, ready), ready) }
    }

    fn consume(&mut self, n: usize) {
        self.tail += n;
        let r = &*self.ring;
        if r.notify {
            r.tail.0.store(self.tail, Ordering::SeqCst);
            r.space.notify();
        } else {
            r.tail.0.store(self.tail, Ordering::Release);
        }
    }

    fn finished(&self) -> bool {
        let r = &*self.ring;
        r.closed.load(Ordering::Acquire) && r.head.0.load(Ordering::Acquire) == self.tail
    }

    fn wait_data(&self, w: &Waker) {
        self.ring.data.wait(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_free_space_is_contiguous_across_the_wrap() {
        let (mut p, mut c) = channel(1024, 1000, false).unwrap();
        assert_eq!(p.capacity(), 1024);
        // 1000 mod 1024: the free space runs 24 items past the end, then wraps.
        let w = p.writable();
        assert_eq!(w.len(), 1024);
        for (i, v) in w.iter_mut().enumerate() {
            *v = i as f32;
        }
        p.produce(1024);
        assert!(p.writable().is_empty());
        let r = c.readable();
        assert_eq!(r.len(), 1024);
        assert!(r.iter().enumerate().all(|(i, v)| *v == i as f32));
        c.consume(1000);
        assert_eq!(p.writable().len(), 1000);
        assert_eq!(c.readable().len(), 24);
    }

    #[test]
    fn close_finishes_the_consumer_after_the_rest() {
        let (mut p, mut c) = channel(1024, 0, true).unwrap();
        p.writable()[0] = 7.0;
        p.produce(1);
        drop(p);
        assert!(!c.finished());
        assert_eq!(c.readable(), [7.0]);
        c.consume(1);
        assert!(c.finished());
    }
}

#[cfg(test)]
mod concurrent {
    use super::channel;

    #[test]
    fn spinning_ends_lose_duplicate_or_reorder_nothing() {
        let (p, c) = channel(1024, 777, false).unwrap();
        super::super::edge::check::counter(p, c, false);
    }

    #[test]
    fn sleeping_ends_lose_duplicate_or_reorder_nothing() {
        let (p, c) = channel(1024, 777, true).unwrap();
        super::super::edge::check::counter(p, c, true);
    }
}
