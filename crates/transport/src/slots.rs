//! The shared-memory message protocol behind `thread` and `shm`: one doorbell
//! per direction (a sequence word, a futex waiter count, kind and length, then
//! an inline payload area), and one data area per direction. The same code runs
//! over heap memory (threads) or a memfd mapping (processes).
//!
//! Region layout (all offsets multiples of 128, data areas page-aligned):
//! `[header][request bell][reply bell][request data][reply data]`.

use crate::buffer::{PageBuf, page_round};
use crate::error::{Error, Result};
use crate::link::{BufferMode, CompletionMode, Pattern, ReplyShape, spin_until};
use crate::payload::{self, Direction};
use crate::peer::Fault;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Two cache lines: keeps the adjacent-line prefetcher from coupling neighbours.
pub const LINE: usize = 128;
const PAGE: usize = 4096;
const MAGIC: u64 = 0x5842_534c_4f54_5331; // "XBSLOTS1"
/// Bytes before the inline payload in a doorbell.
const BELL_HDR: usize = 32;
/// Largest inline payload: the 16 KiB of the Vollo MMIO tables, and more.
pub const MAX_INLINE: usize = 64 << 10;

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
    /// Bytes of packetized messages published so far (all messages, ever):
    /// the receiver takes each packet as soon as this passes its end.
    progress: AtomicU64,
    /// In `bidir`: how many messages of the *other* bell this bell's writer
    /// has consumed, so the other side knows its data area is free again.
    consumed: AtomicU32,
    _pad: u32,
}

/// Where things are in a region. Both sides read it from the region's header.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
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
pub struct Region {
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
        // SAFETY: the caller's contract: `base` is 4096-aligned (Header needs
        // 8) with layout.len ≥ LINE ≥ size_of::<Header>() writable bytes, and
        // the memory is fresh, so no other reference to it exists yet.
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
    /// `base` must point to `len` mapped bytes, 8-aligned (a mapping's start
    /// is page-aligned), that stay mapped while the region is used.
    pub unsafe fn attach(base: *mut u8, len: usize) -> Result<Region> {
        let bad = || Error::run("shared region header is corrupt");
        if len < LINE {
            return Err(bad());
        }
        // SAFETY: the caller's contract: `base` is 8-aligned with len ≥ LINE ≥
        // size_of::<Header>() mapped bytes (len checked just above). Header is
        // integers only, so any bytes are a valid value, and nothing writes it
        // while this reference lives: the initiator's `init` ran before the
        // responder was started.
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
            // SAFETY: req_data + max_request ≤ len (Layout::new builds it so;
            // `attach` checks it), so the offset stays inside the mapping.
            unsafe { self.base.add(self.layout.req_data) }
        }
    }

    pub fn reply_area(&self) -> *mut u8 {
        if self.layout.inline {
            self.reply_bell().payload
        } else {
            // SAFETY: rep_data + max_reply ≤ len (Layout::new builds it so;
            // `attach` checks it), so the offset stays inside the mapping.
            unsafe { self.base.add(self.layout.rep_data) }
        }
    }

    /// Where the reply of `shape` goes. A ping-pong's reply reuses the
    /// request's data area when it fits: the request is consumed before the
    /// reply is written, and one shared area instead of two keeps the working
    /// set at memcpy's (source and destination). With a third 8 MiB buffer a
    /// round trip ran at half the bandwidth here, on a 32 MiB L3. Bidir
    /// traffic needs both areas at once; inline payloads have their own bells.
    pub fn reply_area_for(&self, shape: &ReplyShape) -> *mut u8 {
        if !self.layout.inline
            && shape.pattern == Pattern::Pingpong
            && shape.reply_len <= self.layout.max_request
        {
            self.request_area()
        } else {
            self.reply_area()
        }
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }
}

/// One direction's doorbell. Only one side writes it.
#[derive(Clone, Copy)]
pub struct Bell {
    hdr: &'static BellHdr,
    pub payload: *mut u8,
}

/// What a bell's single writer last stored in it (a fresh bell is all zero).
#[derive(Default)]
pub struct Sent {
    kind: u32,
    len: u32,
}

/// Why a wait ended without a message.
pub enum WaitError {
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
    let b = s.encode();
    // SAFETY: every bell has room for LINE - BELL_HDR = 96 ≥ WIRE_LEN bytes.
    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), bell.payload, b.len()) };
}

fn read_shape(bell: &Bell) -> Option<ReplyShape> {
    let mut b = [0u8; ReplyShape::WIRE_LEN];
    // SAFETY: as above.
    unsafe { std::ptr::copy_nonoverlapping(bell.payload as *const u8, b.as_mut_ptr(), b.len()) };
    ReplyShape::decode(&b)
}

const _: () = assert!(ReplyShape::WIRE_LEN <= LINE - BELL_HDR);

impl Bell {
    /// Publishes that packets up to `to` (cumulative bytes) are in place.
    #[inline]
    fn publish(&self, to: u64) {
        self.hdr.progress.store(to, Ordering::Release);
    }

    /// Spins until the writer has published up to `to`. Packets are always
    /// polled: they follow each other too closely for a sleep to pay.
    #[inline]
    fn wait_progress(
        &self,
        to: u64,
        gone: &AtomicBool,
        timeout: Option<Duration>,
    ) -> Result<(), WaitError> {
        let mut spins: u32 = 0;
        let mut start: Option<Instant> = None;
        while self.hdr.progress.load(Ordering::Acquire) < to {
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(4096) {
                check(gone, timeout, start.get_or_insert_with(Instant::now))?;
            }
        }
        Ok(())
    }
}

/// Copies `len` bytes from `src` to `dst` as the packets of a message: after
/// each packet the writer publishes it on `bell`, so the reader can take it
/// while the next one is written. `None` source: the bytes are already in
/// place (raw buffers), only the publishing remains.
#[inline]
fn send_packets(
    bell: &Bell,
    src: Option<*const u8>,
    dst: *mut u8,
    len: usize,
    packet: usize,
    progress: &mut u64,
) {
    let mut off = 0;
    while off < len {
        let n = packet.min(len - off);
        if let Some(src) = src {
            // SAFETY: callers pass areas of at least `len` bytes.
            unsafe { std::ptr::copy_nonoverlapping(src.add(off), dst.add(off), n) };
        }
        off += n;
        *progress += n as u64;
        bell.publish(*progress);
    }
}

/// The reader's side of `send_packets`: takes each packet as it is published.
#[inline]
#[allow(clippy::too_many_arguments)]
fn recv_packets(
    bell: &Bell,
    src: *const u8,
    dst: Option<*mut u8>,
    len: usize,
    packet: usize,
    progress: &mut u64,
    gone: &AtomicBool,
    timeout: Option<Duration>,
) -> Result<(), WaitError> {
    let mut off = 0;
    while off < len {
        let n = packet.min(len - off);
        bell.wait_progress(*progress + n as u64, gone, timeout)?;
        if let Some(dst) = dst {
            // SAFETY: callers pass areas of at least `len` bytes.
            unsafe { std::ptr::copy_nonoverlapping(src.add(off), dst.add(off), n) };
        }
        off += n;
        *progress += n as u64;
    }
    Ok(())
}

/// The initiator's side of the protocol, shared by `thread` and `shm`.
pub struct Initiator {
    region: Region,
    buffers: BufferMode,
    completion: CompletionMode,
    seq: u32,
    /// The last sequence seen on the reply bell.
    reply_seen: u32,
    /// A wait has failed: the responder may be hung.
    failed: bool,
    sent: Sent,
    /// Packet bytes published on the request bell / taken from the reply bell.
    req_progress: u64,
    rep_progress: u64,
    shape: ReplyShape,
    /// Stream messages sent since the last configure: their fill-check number.
    stream_seq: u64,
    /// The caller's own buffers in `user` mode.
    user_req: PageBuf,
    user_rep: PageBuf,
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
                PageBuf::zeroed(region.layout.max_request),
                PageBuf::zeroed(region.layout.max_reply),
            ),
            _ => (PageBuf::zeroed(0), PageBuf::zeroed(0)),
        };
        Initiator {
            region,
            buffers,
            completion,
            seq: 0,
            reply_seen: 0,
            failed: false,
            sent: Sent::default(),
            req_progress: 0,
            rep_progress: 0,
            shape: ReplyShape::default(),
            user_req: ureq,
            user_rep: urep,
            stream_seq: 0,
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
                std::slice::from_raw_parts(
                    self.region.reply_area_for(&self.shape),
                    self.shape.reply_len,
                )
            },
        }
    }

    /// Rings the request bell for the next message.
    #[inline]
    fn ring(&mut self, kind: u32, len: usize) {
        self.seq = self.seq.wrapping_add(1);
        self.region
            .request_bell()
            .ring(self.seq, kind, len, self.completion, &mut self.sent);
    }

    /// Waits for the answer to the last request rung. The responder answers
    /// each request with the request's own sequence, so a late answer to a
    /// request that already timed out is told apart from this one and skipped.
    #[inline]
    fn answer(
        &mut self,
        gone: &AtomicBool,
        timeout: Option<Duration>,
    ) -> Result<(u32, usize), WaitError> {
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

    /// Sends one message and waits for the answer; `Err` explains a wait that failed.
    #[inline]
    fn call(
        &mut self,
        kind: u32,
        len: usize,
        gone: &AtomicBool,
        timeout: Option<Duration>,
    ) -> Result<(u32, usize), WaitError> {
        self.ring(kind, len);
        self.answer(gone, timeout)
    }

    pub fn configure(&mut self, shape: &ReplyShape, gone: &AtomicBool) -> Result<(), WaitError> {
        write_shape(&self.region.request_bell(), shape);
        self.call(KIND_CONFIG, ReplyShape::WIRE_LEN, gone, Some(self.timeout))?;
        if shape.pattern == Pattern::Bidir {
            // Every reply so far is consumed.
            self.region
                .request_bell()
                .hdr
                .consumed
                .store(self.reply_seen, Ordering::Release);
        }
        self.shape = *shape;
        self.stream_seq = 0;
        Ok(())
    }

    /// Sends the request: copied in (user buffers) and published whole, or
    /// packet by packet after ringing so the responder can start on the first.
    #[inline]
    fn send_request(&mut self, len: usize) {
        let area = self.region.request_area();
        let user = (self.buffers == BufferMode::User).then_some(self.user_req.as_ptr());
        if self.shape.chunk == 0 || len == 0 {
            if let Some(src) = user {
                // SAFETY: len ≤ max_request, checked when the link was opened.
                unsafe { std::ptr::copy_nonoverlapping(src, area, len) };
            }
            self.ring(KIND_DATA, len);
        } else {
            self.ring(KIND_DATA, len);
            let bell = self.region.request_bell();
            send_packets(
                &bell,
                user,
                area,
                len,
                self.shape.packet(len),
                &mut self.req_progress,
            );
        }
    }

    /// Takes the reply of `len` bytes after its bell rang.
    #[inline]
    fn take_reply(&mut self, len: usize, gone: &AtomicBool) -> Result<(), WaitError> {
        let area = self.region.reply_area_for(&self.shape);
        let user = (self.buffers == BufferMode::User).then_some(self.user_rep.as_mut_ptr());
        if self.shape.chunk == 0 || len == 0 {
            if let Some(dst) = user {
                // SAFETY: len ≤ max_reply.
                unsafe { std::ptr::copy_nonoverlapping(area, dst, len) };
            }
            Ok(())
        } else {
            let bell = self.region.reply_bell();
            let packet = self.shape.packet(len);
            recv_packets(
                &bell,
                area,
                user,
                len,
                packet,
                &mut self.rep_progress,
                gone,
                Some(self.timeout),
            )
            .inspect_err(|_| self.failed = true)
        }
    }

    #[inline]
    pub fn exchange(&mut self, gone: &AtomicBool) -> Result<(), WaitError> {
        let (n, m) = (self.shape.request_len, self.shape.reply_len);
        match self.shape.pattern {
            Pattern::Pingpong => {
                self.send_request(n);
                self.answer(gone, Some(self.timeout))?;
                self.take_reply(m, gone)
            }
            // Each message is acknowledged as soon as the responder has taken
            // it (one data area); the last acknowledgement ends the exchange.
            Pattern::Stream => {
                for _ in 0..self.shape.messages() {
                    // With fill-check every message of the window gets its
                    // own values, filled inside the timed span.
                    if let Some(seed) = self.shape.check {
                        let seq = self.stream_seq;
                        payload::fill(&mut self.request_buf()[..n], seed, seq, Direction::Request);
                        self.stream_seq += 1;
                    }
                    self.send_request(n);
                    self.answer(gone, Some(self.timeout))?;
                }
                Ok(())
            }
            Pattern::Bidir => self.bidir(gone),
        }
    }

    /// Both ways at once: send whenever the responder has consumed our last
    /// message, take each of its messages as it comes, until both are done.
    fn bidir(&mut self, gone: &AtomicBool) -> Result<(), WaitError> {
        let (n, m, w) = (
            self.shape.request_len,
            self.shape.reply_len,
            self.shape.messages(),
        );
        let (rq, rp) = (self.region.request_bell(), self.region.reply_bell());
        let (req_area, rep_area) = (self.region.request_area(), self.region.reply_area());
        let (mut sent, mut got) = (0u64, 0u64);
        let mut spins = 0u32;
        let mut idle_since: Option<Instant> = None;
        // Done when our last message is consumed too: a configure rung before
        // would be taken by the responder for one more message.
        while sent < w || got < w || rp.hdr.consumed.load(Ordering::Acquire) != self.seq {
            let mut moved = false;
            if sent < w && rp.hdr.consumed.load(Ordering::Acquire) == self.seq {
                if self.buffers == BufferMode::User {
                    // SAFETY: n ≤ max_request.
                    unsafe { std::ptr::copy_nonoverlapping(self.user_req.as_ptr(), req_area, n) };
                }
                self.ring(KIND_DATA, n);
                sent += 1;
                moved = true;
            }
            if got < w {
                let seq = rp.hdr.seq.load(Ordering::Acquire);
                if seq != self.reply_seen {
                    if self.buffers == BufferMode::User {
                        // SAFETY: m ≤ max_reply.
                        unsafe {
                            std::ptr::copy_nonoverlapping(rep_area, self.user_rep.as_mut_ptr(), m)
                        };
                    }
                    self.reply_seen = seq;
                    rq.hdr.consumed.store(seq, Ordering::Release);
                    got += 1;
                    moved = true;
                }
            }
            if moved {
                idle_since = None;
                continue;
            }
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(4096) {
                check(
                    gone,
                    Some(self.timeout),
                    idle_since.get_or_insert_with(Instant::now),
                )
                .inspect_err(|_| self.failed = true)?;
            }
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
pub fn respond(
    region: Region,
    completion: CompletionMode,
    gone: &AtomicBool,
    fault: &mut Fault,
) -> Result<bool> {
    let req = region.request_bell();
    let rep = region.reply_bell();
    let req_area = region.request_area();
    let mut rep_area = region.reply_area();
    let mut device = PageBuf::zeroed(0);
    let mut shape = ReplyShape::default();
    let mut last = 0u32;
    let mut sent = Sent::default();
    let (mut req_progress, mut rep_progress) = (0u64, 0u64);
    // Messages since the last configure: fill-check numbers them.
    let mut message = 0u64;
    // The last sequence rung on the reply bell.
    let mut rseq = 0u32;
    loop {
        // No timeout: the initiator may be busy elsewhere for as long as it likes.
        let prev = last;
        let (seq, kind, len) = match req.wait(last, completion, gone, None) {
            Ok(m) => m,
            Err(_) => return Ok(false),
        };
        last = seq;
        match kind {
            KIND_DATA if shape.pattern == Pattern::Bidir => {
                match respond_bidir(
                    &region,
                    &shape,
                    &mut device,
                    prev,
                    &mut rseq,
                    &mut sent,
                    gone,
                ) {
                    Some(l) => last = l,
                    None => return Ok(false),
                }
                if fault.tick() {
                    return Ok(true);
                }
            }
            KIND_DATA => {
                let t = (shape.delay_ns != 0).then(Instant::now);
                if shape.chunk == 0 || len == 0 {
                    // SAFETY: len ≤ request_len ≤ max_request and device holds both lengths.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            req_area as *const u8,
                            device.as_mut_ptr(),
                            len,
                        )
                    };
                } else if recv_packets(
                    &req,
                    req_area,
                    Some(device.as_mut_ptr()),
                    len,
                    shape.packet(len),
                    &mut req_progress,
                    gone,
                    None,
                )
                .is_err()
                {
                    return Ok(false);
                }
                if shape.pattern == Pattern::Stream {
                    if let Some(seed) = shape.check {
                        fault.corrupt(&mut device[..len]);
                        payload::check(&device[..len], seed, message, Direction::Request)
                            .map_err(|m| Error::run(format!("responder: {m}")))?;
                    }
                    rep.ring(seq, KIND_ACK, 0, completion, &mut sent);
                } else {
                    if let Some(seed) = shape.check {
                        payload::check(&device[..len], seed, message, Direction::Request)
                            .map_err(|m| Error::run(format!("responder: {m}")))?;
                    }
                    if let Some(t) = t {
                        spin_until(t, shape.delay_ns);
                    }
                    let m = shape.reply_len;
                    if let Some(seed) = shape.check {
                        payload::fill(&mut device[..m], seed, message, Direction::Reply);
                    }
                    fault.corrupt(&mut device[..m]);
                    if shape.chunk == 0 || m == 0 {
                        // SAFETY: m ≤ max_reply.
                        unsafe { std::ptr::copy_nonoverlapping(device.as_ptr(), rep_area, m) };
                        rep.ring(seq, KIND_DATA, m, completion, &mut sent);
                    } else {
                        rep.ring(seq, KIND_DATA, m, completion, &mut sent);
                        send_packets(
                            &rep,
                            Some(device.as_ptr()),
                            rep_area,
                            m,
                            shape.packet(m),
                            &mut rep_progress,
                        );
                    }
                }
                rseq = seq;
                message += 1;
                if fault.tick() {
                    return Ok(true);
                }
            }
            KIND_CONFIG => {
                shape = read_shape(&req).ok_or_else(|| {
                    Error::run("responder: malformed control frame in shared region")
                })?;
                let l = region.layout();
                if shape.request_len > l.max_request || shape.reply_len > l.max_reply {
                    return Err(Error::run(
                        "responder: configured size exceeds the shared region",
                    ));
                }
                device.grow(page_round(shape.request_len) + shape.reply_len, 0xa5);
                rep_area = region.reply_area_for(&shape);
                message = 0;
                if shape.pattern == Pattern::Bidir {
                    // Every request so far is consumed.
                    rep.hdr.consumed.store(seq, Ordering::Release);
                }
                rep.ring(seq, KIND_ACK, 0, completion, &mut sent);
                rseq = seq;
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

/// The responder's half of a `bidir` exchange, entered when the first
/// request has arrived (its sequence is past `prev`). Returns the last request
/// sequence consumed, or `None` when the initiator is gone.
fn respond_bidir(
    region: &Region,
    shape: &ReplyShape,
    device: &mut [u8],
    prev: u32,
    rseq: &mut u32,
    sent_cache: &mut Sent,
    gone: &AtomicBool,
) -> Option<u32> {
    let (req, rep) = (region.request_bell(), region.reply_bell());
    let (req_area, rep_area) = (region.request_area(), region.reply_area());
    let (n, m, w) = (shape.request_len, shape.reply_len, shape.messages());
    let (inp, out) = device.split_at_mut(page_round(n));
    let (mut got, mut sent, mut seen) = (0u64, 0u64, prev);
    let mut spins = 0u32;
    while got < w || sent < w {
        let mut moved = false;
        if got < w {
            let s = req.hdr.seq.load(Ordering::Acquire);
            if s != seen {
                // SAFETY: n ≤ max_request; inp is at least n long.
                unsafe {
                    std::ptr::copy_nonoverlapping(req_area as *const u8, inp.as_mut_ptr(), n)
                };
                seen = s;
                rep.hdr.consumed.store(s, Ordering::Release);
                got += 1;
                moved = true;
            }
        }
        if sent < w && req.hdr.consumed.load(Ordering::Acquire) == *rseq {
            // SAFETY: m ≤ max_reply; out is m long.
            unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), rep_area, m) };
            *rseq = rseq.wrapping_add(1);
            rep.ring(*rseq, KIND_DATA, m, CompletionMode::Poll, sent_cache);
            sent += 1;
            moved = true;
        }
        if !moved {
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(4096) && gone.load(Ordering::Relaxed) {
                return None;
            }
        }
    }
    Some(seen)
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
