//! The buffer between two blocks: a lock-free single-producer/single-consumer
//! ring of f32. The memory is mapped twice, back to back, so the free space
//! and the data are always one contiguous slice, even across the wrap: a
//! block hands its kernel a plain `&[f32]`/`&mut [f32]` and never copies.

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
    data_waiting: Padded<AtomicBool>,
    space_waiting: Padded<AtomicBool>,
    data_waker: AtomicWaker,
    space_waker: AtomicWaker,
}

// SAFETY: `base` is a private mapping; the producer writes only the free
// region and the consumer reads only the filled one, and the indices that
// hand regions over are published with release/acquire.
unsafe impl Send for Ring {}
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
        data_waiting: Padded(AtomicBool::new(false)),
        space_waiting: Padded(AtomicBool::new(false)),
        data_waker: AtomicWaker::new(),
        space_waker: AtomicWaker::new(),
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

    /// Wakes the other side if it said it may sleep. The SeqCst store of the
    /// index (by the caller) and the SeqCst load here pair with the waiter's
    /// SeqCst flag store and index re-check: one of the two sees the other.
    fn wake(waiting: &AtomicBool, waker: &AtomicWaker) {
        if waiting.load(Ordering::SeqCst) {
            waiting.store(false, Ordering::Relaxed);
            waker.wake();
        }
    }
}

impl Producer {
    pub fn capacity(&self) -> usize {
        self.ring.cap
    }

    /// Reads the consumer's index only when fewer than `n` items look free
    /// (default: the whole capacity, i.e. always).
    pub fn set_want(&mut self, n: usize) {
        self.want = n.min(self.ring.cap);
    }

    /// The free space, one contiguous slice (empty when full).
    pub fn writable(&mut self) -> &mut [f32] {
        let r = &*self.ring;
        if r.cap - (self.head - self.tail_seen) < self.want {
            self.tail_seen = r.tail.0.load(Ordering::Acquire);
        }
        let free = r.cap - (self.head - self.tail_seen);
        // SAFETY: the consumer never touches [head, tail + cap).
        unsafe { std::slice::from_raw_parts_mut(r.slice(self.head, free), free) }
    }

    /// Hands `n` items of the free space to the consumer.
    pub fn produce(&mut self, n: usize) {
        self.head += n;
        let r = &*self.ring;
        if r.notify {
            r.head.0.store(self.head, Ordering::SeqCst);
            Ring::wake(&r.data_waiting.0, &r.data_waker);
        } else {
            r.head.0.store(self.head, Ordering::Release);
        }
    }

    /// Wakes `w` when space frees up (then call `writable` again: the space
    /// may have freed before this returned).
    pub fn wait_space(&self, w: &Waker) {
        self.ring.space_waker.register(w);
        self.ring.space_waiting.0.store(true, Ordering::SeqCst);
    }

    /// No more items will come: the consumer finishes once it has read the rest.
    pub fn close(&mut self) {
        let r = &*self.ring;
        r.closed.store(true, Ordering::SeqCst);
        r.data_waker.wake();
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.close();
    }
}

impl Consumer {
    /// Reads the producer's index only when fewer than `n` items look ready.
    pub fn set_want(&mut self, n: usize) {
        self.want = n.min(self.ring.cap);
    }

    /// The items ready, one contiguous slice (empty when none).
    pub fn readable(&self) -> &[f32] {
        let r = &*self.ring;
        if self.head_seen.get() - self.tail < self.want {
            self.head_seen.set(r.head.0.load(Ordering::Acquire));
        }
        let ready = self.head_seen.get() - self.tail;
        // SAFETY: the producer never touches [tail, head).
        unsafe { std::slice::from_raw_parts(r.slice(self.tail, ready), ready) }
    }

    /// Gives `n` items back to the producer.
    pub fn consume(&mut self, n: usize) {
        self.tail += n;
        let r = &*self.ring;
        if r.notify {
            r.tail.0.store(self.tail, Ordering::SeqCst);
            Ring::wake(&r.space_waiting.0, &r.space_waker);
        } else {
            r.tail.0.store(self.tail, Ordering::Release);
        }
    }

    /// The producer has closed and every item is read.
    pub fn finished(&self) -> bool {
        let r = &*self.ring;
        r.closed.load(Ordering::Acquire) && r.head.0.load(Ordering::Acquire) == self.tail
    }

    /// Wakes `w` when data arrives or the producer closes.
    pub fn wait_data(&self, w: &Waker) {
        self.ring.data_waker.register(w);
        self.ring.data_waiting.0.store(true, Ordering::SeqCst);
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
    use super::*;
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
    fn counter(notify: bool) {
        const TOTAL: u64 = 3_000_000;
        let (mut p, mut c) = channel(1024, 777, notify).unwrap();
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

    #[test]
    fn spinning_ends_lose_duplicate_or_reorder_nothing() {
        counter(false);
    }

    #[test]
    fn sleeping_ends_lose_duplicate_or_reorder_nothing() {
        counter(true);
    }
}
