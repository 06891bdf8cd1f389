//! The shared-memory message protocol behind `thread` and `shm`: one doorbell
//! per direction (a sequence word, a futex waiter count, kind and length, then
//! an inline payload area), and one data area per direction. The same code runs
//! over heap memory (threads) or a memfd mapping (processes).
//!
//! Region layout (all offsets multiples of 128, data areas page-aligned):
//! `[header][request bell][reply bell][request data][reply data]`.

use super::{BufferMode, CompletionMode, Fault, ReplyShape, spin_until};
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Two cache lines: keeps the adjacent-line prefetcher from coupling neighbours.
pub(crate) const LINE: usize = 128;
const PAGE: usize = 4096;
const MAGIC: u64 = 0x5842_534c_4f54_5331; // "XBSLOTS1"
/// Bytes before the inline payload in a doorbell.
const BELL_HDR: usize = 16;
/// Largest inline payload: the 16 KiB of the Vollo MMIO tables, and more.
pub(crate) const MAX_INLINE: usize = 64 << 10;

const KIND_DATA: u32 = 1;
const KIND_CONFIG: u32 = 2;
const KIND_QUIT: u32 = 3;
const KIND_ACK: u32 = 4;

#[repr(C)]
struct Header {
    magic: AtomicU64,
    region_len: u64,
    inline: u64,
    bell_len: u64,
    req_data: u64,
    rep_data: u64,
    max_request: u64,
    max_reply: u64,
}

#[repr(C)]
struct BellHdr {
    seq: AtomicU32,
    waiters: AtomicU32,
    kind: AtomicU32,
    len: AtomicU32,
}

/// Where things are in a region. Both sides read it from the region's header.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    pub len: usize,
    inline: bool,
    bell_len: usize,
    req_data: usize,
    rep_data: usize,
    max_request: usize,
    max_reply: usize,
}

fn round_up(v: usize, to: usize) -> usize {
    v.div_ceil(to) * to
}

impl Layout {
    pub fn new(buffers: BufferMode, max_request: usize, max_reply: usize) -> Layout {
        let inline = buffers == BufferMode::Inline;
        // The bell always has room for a control frame; inline mode for the payload too.
        let payload = if inline {
            max_request.max(max_reply)
        } else {
            0
        }
        .max(LINE - BELL_HDR);
        let bell_len = round_up(BELL_HDR + payload, LINE);
        let req_data = round_up(LINE + 2 * bell_len, PAGE);
        let rep_data = round_up(req_data + max_request.max(1), PAGE);
        let len = round_up(rep_data + max_reply.max(1), PAGE);
        Layout {
            len,
            inline,
            bell_len,
            req_data,
            rep_data,
            max_request,
            max_reply,
        }
    }
}

/// A pointer to a mapped region; both ends hold one.
#[derive(Clone, Copy)]
pub(crate) struct Region {
    base: *mut u8,
    layout: Layout,
}

// SAFETY: the region is plain shared memory; all cross-side access goes through
// the doorbells' atomics, which order the payload reads and writes.
unsafe impl Send for Region {}

impl Region {
    /// Writes the header into fresh zeroed memory of at least `layout.len` bytes.
    ///
    /// # Safety
    /// `base` must point to `layout.len` writable bytes, 4096-aligned, zeroed.
    pub unsafe fn init(base: *mut u8, layout: Layout) -> Region {
        let h = unsafe { &mut *(base as *mut Header) };
        h.region_len = layout.len as u64;
        h.inline = layout.inline as u64;
        h.bell_len = layout.bell_len as u64;
        h.req_data = layout.req_data as u64;
        h.rep_data = layout.rep_data as u64;
        h.max_request = layout.max_request as u64;
        h.max_reply = layout.max_reply as u64;
        h.magic.store(MAGIC, Ordering::Release);
        Region { base, layout }
    }

    /// Reads the layout another process wrote, checking it fits the mapping.
    ///
    /// # Safety
    /// `base` must point to `len` mapped bytes.
    pub unsafe fn attach(base: *mut u8, len: usize) -> Result<Region> {
        let bad = || Error::run("shared region header is corrupt");
        if len < LINE {
            return Err(bad());
        }
        let h = unsafe { &*(base as *const Header) };
        if h.magic.load(Ordering::Acquire) != MAGIC || h.region_len as usize != len {
            return Err(bad());
        }
        let layout = Layout {
            len,
            inline: h.inline != 0,
            bell_len: h.bell_len as usize,
            req_data: h.req_data as usize,
            rep_data: h.rep_data as usize,
            max_request: h.max_request as usize,
            max_reply: h.max_reply as usize,
        };
        let fits = layout.bell_len >= LINE
            && LINE + 2 * layout.bell_len <= layout.req_data
            && layout.req_data + layout.max_request <= layout.rep_data
            && layout.rep_data + layout.max_reply <= len;
        if !fits {
            return Err(bad());
        }
        Ok(Region { base, layout })
    }

    fn bell(&self, which: usize) -> Bell {
        let off = LINE + which * self.layout.bell_len;
        // SAFETY: offsets were checked against the region's length.
        unsafe {
            let p = self.base.add(off);
            Bell {
                hdr: &*(p as *const BellHdr),
                payload: p.add(BELL_HDR),
            }
        }
    }

    pub fn request_bell(&self) -> Bell {
        self.bell(0)
    }

    pub fn reply_bell(&self) -> Bell {
        self.bell(1)
    }

    /// The request payload area for this region's buffer mode.
    pub fn request_area(&self) -> *mut u8 {
        if self.layout.inline {
            self.request_bell().payload
        } else {
            unsafe { self.base.add(self.layout.req_data) }
        }
    }

    pub fn reply_area(&self) -> *mut u8 {
        if self.layout.inline {
            self.reply_bell().payload
        } else {
            unsafe { self.base.add(self.layout.rep_data) }
        }
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }
}

/// One direction's doorbell. Only one side writes it.
#[derive(Clone, Copy)]
pub(crate) struct Bell {
    hdr: &'static BellHdr,
    pub payload: *mut u8,
}

/// What a bell's single writer last stored in it (a fresh bell is all zero).
#[derive(Default)]
pub(crate) struct Sent {
    kind: u32,
    len: u32,
}

/// Why a wait ended without a message.
pub(crate) enum WaitError {
    Gone,
    TimedOut,
}

impl Bell {
    /// Publishes a message whose payload is already in place. Both sides use
    /// the same completion mode, so with `poll` nobody ever sleeps on the bell.
    /// Kind and length are stored only when they change: every store is a
    /// chance for the spinning reader to pull the line away mid-message, so
    /// the steady state writes just the payload and the sequence.
    #[inline]
    pub fn ring(&self, seq: u32, kind: u32, len: usize, mode: CompletionMode, sent: &mut Sent) {
        if sent.kind != kind {
            self.hdr.kind.store(kind, Ordering::Relaxed);
            sent.kind = kind;
        }
        if sent.len != len as u32 {
            self.hdr.len.store(len as u32, Ordering::Relaxed);
            sent.len = len as u32;
        }
        match mode {
            // A plain release store: no fence on the hot path.
            CompletionMode::Poll => self.hdr.seq.store(seq, Ordering::Release),
            CompletionMode::Block => {
                // SeqCst pairs with the waiter's SeqCst increment of `waiters`:
                // either we see the waiter, or it sees the new sequence first.
                self.hdr.seq.store(seq, Ordering::SeqCst);
                if self.hdr.waiters.load(Ordering::SeqCst) != 0 {
                    futex_wake(&self.hdr.seq);
                }
            }
        }
    }

    /// Waits until the sequence moves away from `last`; returns (seq, kind, len).
    /// No clock is read while the message arrives within ~4096 spins.
    #[inline]
    pub fn wait(
        &self,
        last: u32,
        mode: CompletionMode,
        gone: &AtomicBool,
        timeout: Option<Duration>,
    ) -> Result<(u32, u32, usize), WaitError> {
        match mode {
            CompletionMode::Poll => {
                let mut spins: u32 = 0;
                let mut start: Option<Instant> = None;
                loop {
                    let seq = self.hdr.seq.load(Ordering::Acquire);
                    if seq != last {
                        return Ok(self.message(seq));
                    }
                    std::hint::spin_loop();
                    spins = spins.wrapping_add(1);
                    if spins.is_multiple_of(4096) {
                        check(gone, timeout, start.get_or_insert_with(Instant::now))?;
                    }
                }
            }
            CompletionMode::Block => {
                let start = Instant::now();
                loop {
                    let seq = self.hdr.seq.load(Ordering::Acquire);
                    if seq != last {
                        return Ok(self.message(seq));
                    }
                    self.hdr.waiters.fetch_add(1, Ordering::SeqCst);
                    if self.hdr.seq.load(Ordering::SeqCst) == last {
                        futex_wait(&self.hdr.seq, last, Duration::from_millis(100));
                    }
                    self.hdr.waiters.fetch_sub(1, Ordering::SeqCst);
                    let seq = self.hdr.seq.load(Ordering::Acquire);
                    if seq != last {
                        return Ok(self.message(seq));
                    }
                    check(gone, timeout, &start)?;
                }
            }
        }
    }

    #[inline]
    fn message(&self, seq: u32) -> (u32, u32, usize) {
        (
            seq,
            self.hdr.kind.load(Ordering::Relaxed),
            self.hdr.len.load(Ordering::Relaxed) as usize,
        )
    }
}

fn check(gone: &AtomicBool, timeout: Option<Duration>, start: &Instant) -> Result<(), WaitError> {
    if gone.load(Ordering::Relaxed) {
        return Err(WaitError::Gone);
    }
    match timeout {
        Some(t) if start.elapsed() > t => Err(WaitError::TimedOut),
        _ => Ok(()),
    }
}

fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as _,
        tv_nsec: timeout.subsec_nanos() as _,
    };
    // SAFETY: the word lives as long as the region; the kernel only reads it.
    // Shared (non-private) futex: the region may be mapped by two processes.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
        );
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: as above.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, 1);
    }
}

/// The control frame carried in the request bell's payload.
fn write_shape(bell: &Bell, s: &ReplyShape) {
    let words = [
        s.request_len as u64,
        s.reply_len as u64,
        s.delay_ns,
        s.exchanges,
    ];
    // SAFETY: every bell has room for at least LINE - BELL_HDR = 112 bytes.
    unsafe { std::ptr::copy_nonoverlapping(words.as_ptr() as *const u8, bell.payload, 32) };
}

fn read_shape(bell: &Bell) -> ReplyShape {
    let mut w = [0u64; 4];
    // SAFETY: as above.
    unsafe {
        std::ptr::copy_nonoverlapping(bell.payload as *const u8, w.as_mut_ptr() as *mut u8, 32)
    };
    ReplyShape {
        request_len: w[0] as usize,
        reply_len: w[1] as usize,
        delay_ns: w[2],
        exchanges: w[3],
    }
}

/// The initiator's side of the protocol, shared by `thread` and `shm`.
pub(crate) struct Initiator {
    region: Region,
    buffers: BufferMode,
    completion: CompletionMode,
    seq: u32,
    /// The last sequence seen on the reply bell.
    reply_seen: u32,
    /// A wait has failed: the responder may be hung.
    failed: bool,
    sent: Sent,
    shape: ReplyShape,
    /// The caller's own buffers in `user` mode.
    user_req: Vec<u8>,
    user_rep: Vec<u8>,
    timeout: Duration,
}

impl Initiator {
    pub fn new(
        region: Region,
        buffers: BufferMode,
        completion: CompletionMode,
        timeout: Duration,
    ) -> Self {
        let (ureq, urep) = match buffers {
            BufferMode::User => (
                vec![0u8; region.layout.max_request],
                vec![0u8; region.layout.max_reply],
            ),
            _ => (Vec::new(), Vec::new()),
        };
        Initiator {
            region,
            buffers,
            completion,
            seq: 0,
            reply_seen: 0,
            failed: false,
            sent: Sent::default(),
            shape: ReplyShape {
                request_len: 0,
                reply_len: 0,
                delay_ns: 0,
                exchanges: 0,
            },
            user_req: ureq,
            user_rep: urep,
            timeout,
        }
    }

    pub fn request_buf(&mut self) -> &mut [u8] {
        match self.buffers {
            BufferMode::User => &mut self.user_req,
            // SAFETY: the area is max_request long and only the initiator writes it.
            _ => unsafe {
                std::slice::from_raw_parts_mut(
                    self.region.request_area(),
                    self.region.layout.max_request,
                )
            },
        }
    }

    pub fn reply(&self) -> &[u8] {
        match self.buffers {
            BufferMode::User => &self.user_rep[..self.shape.reply_len],
            // SAFETY: the responder finished writing before it rang the bell.
            _ => unsafe {
                std::slice::from_raw_parts(self.region.reply_area(), self.shape.reply_len)
            },
        }
    }

    /// Sends one message and waits for the answer; `Err` explains a wait that failed.
    #[inline]
    fn call(
        &mut self,
        kind: u32,
        len: usize,
        gone: &AtomicBool,
        timeout: Option<Duration>,
    ) -> Result<(u32, usize), WaitError> {
        // The responder answers each request with the request's own sequence,
        // so a late answer to a request that already timed out is told apart
        // from the answer to this one and skipped.
        self.seq = self.seq.wrapping_add(1);
        self.region
            .request_bell()
            .ring(self.seq, kind, len, self.completion, &mut self.sent);
        loop {
            let (seq, kind, len) = self
                .region
                .reply_bell()
                .wait(self.reply_seen, self.completion, gone, timeout)
                .inspect_err(|_| self.failed = true)?;
            self.reply_seen = seq;
            if seq == self.seq {
                return Ok((kind, len));
            }
        }
    }

    pub fn configure(&mut self, shape: &ReplyShape, gone: &AtomicBool) -> Result<(), WaitError> {
        write_shape(&self.region.request_bell(), shape);
        self.call(KIND_CONFIG, 32, gone, Some(self.timeout))?;
        self.shape = *shape;
        Ok(())
    }

    #[inline]
    pub fn exchange(&mut self, gone: &AtomicBool) -> Result<(), WaitError> {
        let (n, m) = (self.shape.request_len, self.shape.reply_len);
        if self.buffers == BufferMode::User {
            // SAFETY: n ≤ max_request, checked when the link was opened.
            unsafe {
                std::ptr::copy_nonoverlapping(self.user_req.as_ptr(), self.region.request_area(), n)
            };
        }
        self.call(KIND_DATA, n, gone, Some(self.timeout))?;
        if self.buffers == BufferMode::User {
            // SAFETY: m ≤ max_reply.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.region.reply_area(),
                    self.user_rep.as_mut_ptr(),
                    m,
                )
            };
        }
        Ok(())
    }

    /// Asks the responder to stop. After a failed wait the responder is likely
    /// hung, so it gets a short grace period rather than a second full timeout.
    pub fn quit(&mut self, gone: &AtomicBool) -> Result<(), WaitError> {
        let grace = if self.failed {
            Duration::from_millis(100)
        } else {
            Duration::from_secs(2)
        };
        self.call(KIND_QUIT, 0, gone, Some(grace.min(self.timeout)))
            .map(|_| ())
    }
}

/// The responder's loop: until told to quit, copy each request into its own
/// memory (the device reading it), wait the added delay, write the reply.
pub(crate) fn respond(
    region: Region,
    completion: CompletionMode,
    gone: &AtomicBool,
    fault: &mut Fault,
) -> Result<bool> {
    let req = region.request_bell();
    let rep = region.reply_bell();
    let (req_area, rep_area) = (region.request_area(), region.reply_area());
    let mut device: Vec<u8> = Vec::new();
    let mut shape = ReplyShape {
        request_len: 0,
        reply_len: 0,
        delay_ns: 0,
        exchanges: 0,
    };
    let mut last = 0u32;
    let mut sent = Sent::default();
    loop {
        // No timeout: the initiator may be busy elsewhere for as long as it likes.
        let (seq, kind, len) = match req.wait(last, completion, gone, None) {
            Ok(m) => m,
            Err(_) => return Ok(false),
        };
        last = seq;
        match kind {
            KIND_DATA => {
                let t = (shape.delay_ns != 0).then(Instant::now);
                // SAFETY: len ≤ request_len ≤ max_request and device holds both lengths.
                unsafe {
                    std::ptr::copy_nonoverlapping(req_area as *const u8, device.as_mut_ptr(), len)
                };
                if let Some(t) = t {
                    spin_until(t, shape.delay_ns);
                }
                unsafe {
                    std::ptr::copy_nonoverlapping(device.as_ptr(), rep_area, shape.reply_len)
                };
                rep.ring(seq, KIND_DATA, shape.reply_len, completion, &mut sent);
                if fault.tick() {
                    return Ok(true);
                }
            }
            KIND_CONFIG => {
                shape = read_shape(&req);
                let l = region.layout();
                if shape.request_len > l.max_request || shape.reply_len > l.max_reply {
                    return Err(Error::run(
                        "responder: configured size exceeds the shared region",
                    ));
                }
                device.resize(shape.request_len.max(shape.reply_len), 0xa5);
                rep.ring(seq, KIND_ACK, 0, completion, &mut sent);
            }
            KIND_QUIT => {
                rep.ring(seq, KIND_ACK, 0, completion, &mut sent);
                return Ok(false);
            }
            k => {
                return Err(Error::run(format!(
                    "responder: unknown message kind {k} in shared region"
                )));
            }
        }
    }
}

const _: () = assert!(std::mem::size_of::<BellHdr>() == BELL_HDR);
const _: () = assert!(std::mem::size_of::<Header>() <= LINE);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_aligned_and_fits() {
        for (b, rq, rp) in [
            (BufferMode::User, 64, 64),
            (BufferMode::Inline, 16384, 8),
            (BufferMode::Raw, 1 << 20, 3),
        ] {
            let l = Layout::new(b, rq, rp);
            assert_eq!(l.req_data % PAGE, 0);
            assert_eq!(l.rep_data % PAGE, 0);
            assert!(l.req_data >= LINE + 2 * l.bell_len);
            assert!(l.rep_data >= l.req_data + rq);
            assert!(l.len >= l.rep_data + rp);
            if b == BufferMode::Inline {
                assert!(l.bell_len >= BELL_HDR + rq.max(rp));
            }
        }
    }
}
