//! The link and responder shared by every fd-based transport (pipes, sockets):
//! exact-length reads and writes over a byte stream, or one datagram per
//! message. `poll` completion spins on non-blocking calls; `block` sleeps in
//! the syscall. Each batch of round trips is announced by a control frame that
//! the responder acknowledges, so sizes change outside the timed loop.

use super::peer::{CHILD_FD, Fault, Peer, Shared, fault_exit};
use crate::buffer::{PageBuf, page_round};
use crate::error::{Error, Result};
use crate::link::{
    CompletionMode, Link, LinkConfig, Pattern, ReplyShape, sleep_then_spin, spin_until,
};
use crate::payload::{self, Direction};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// A byte stream: a message is its length in bytes, however it is split.
    Stream,
    /// One datagram per message; a datagram of the wrong size is an error.
    Datagram,
}

const CTRL_MAGIC: u32 = 0x5842_4331; // "XBC1"
const CTRL_CONFIGURE: u32 = 1;
const CTRL_QUIT: u32 = 2;
/// Bytes of a control frame: magic, kind, then the shape.
pub const CTRL_LEN: usize = 8 + ReplyShape::WIRE_LEN;
const ACK: [u8; 8] = *b"XBACK001";
/// A refused control frame's answer in place of `ACK`: this, a u32 length,
/// then the reason as text. It tells the initiator why the responder is
/// about to close, rather than leaving it to guess from a closed socket.
const NAK: [u8; 8] = *b"XBNAK001";
/// The longest reason a refusal carries; a longer length is a malformed
/// answer, refused before anything is read into it.
const MAX_REASON: usize = 256;

/// Why an fd operation failed.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The other end closed. Either end reads this: a server's log as much
    /// as an initiator.
    #[error("the other end closed the connection")]
    Eof,
    /// The syscall's error, kept as the source.
    #[error("{0}")]
    Os(#[source] std::io::Error),
    /// A datagram of another length than expected.
    #[error("received a {got}-byte datagram where {want} bytes were expected")]
    Size { got: usize, want: usize },
    /// The responder refused a control frame, and said why.
    #[error("the responder refused it: {0}")]
    Refused(String),
}

/// One end's fds and how to use them.
pub struct Chan {
    pub rx: RawFd,
    pub tx: RawFd,
    pub framing: Framing,
    pub poll: bool,
    /// The initiator's view of its child: a non-blocking datagram receive
    /// never sees its peer go, so the poll loop looks at this now and then.
    pub peer: Option<Arc<Shared>>,
    /// Blocking sockets with SO_RCVTIMEO/SO_SNDTIMEO set (a remote link, or
    /// `serve`'s end): EAGAIN then means the peer was silent too long.
    pub timed: bool,
    /// A remote UDP session's cookie, agreed over its TCP connection: every
    /// datagram starts with it, and one that does not is dropped unanswered,
    /// so a spoofed source cannot make a server send anything.
    pub cookie: Option<[u8; COOKIE_LEN]>,
    /// `serve`'s end: the idle timeout, which also bounds one whole message
    /// (see `allowance`), and the session's progress. The socket's own
    /// timeout restarts at every byte, so a client trickling a byte now and
    /// then would otherwise hold its session for ever.
    pub whole: Option<Progress>,
}

/// Bytes of a remote UDP session's cookie, at the start of every datagram.
pub const COOKIE_LEN: usize = 8;

/// The slowest a client may send or take one message on a server once
/// it has begun, beyond the idle timeout itself, in bytes per second: far
/// below any real link, far above a trickle.
const MIN_RATE: u128 = 64 << 10;

/// How long `serve` gives one message of `len` bytes once it has begun:
/// the idle timeout, plus its length at `MIN_RATE`.
fn allowance(idle: Duration, len: usize) -> Duration {
    let extra = (len as u128 * 1_000_000_000 / MIN_RATE).min(u64::MAX as u128) as u64;
    idle.saturating_add(Duration::from_nanos(extra))
}

/// A server session's progress, judged over the whole session rather than
/// one read at a time: the session holds credit, at most the idle timeout,
/// which time spends and progress earns back, and it ends when the credit
/// is gone. Every message the client completes earns `per_message` (a
/// tenth of the idle timeout, at most a second), every byte moved either
/// way its time at `MIN_RATE`, and the server's own responder delays what
/// they took. So a real client, sending back to back or a big message at
/// any usable rate, never runs short, while one that sends a byte (or a
/// one-byte message) now and then, each within the idle timeout, runs out
/// in about the idle timeout and frees its slot.
///
/// A UDP session's credit also ends when its TCP control connection closes
/// (`ended`): the client is gone, and its cookie must not be answered.
pub struct Progress {
    idle_ns: u64,
    per_message_ns: u64,
    base: Instant,
    /// When the credit runs out, in ns after `base`. Earned by adding to
    /// it; held to the idle timeout from now at each check.
    until: AtomicU64,
    /// Set (by whoever watches the control connection) when the session's
    /// client is gone.
    ended: Option<Arc<AtomicBool>>,
}

impl Progress {
    /// A session's progress, with a full idle timeout of credit.
    pub fn new(idle: Duration, ended: Option<Arc<AtomicBool>>) -> Progress {
        let idle_ns = idle.as_nanos().min(u64::MAX as u128 / 4) as u64;
        Progress {
            idle_ns,
            per_message_ns: (idle_ns / 10).min(1_000_000_000),
            base: Instant::now(),
            until: AtomicU64::new(idle_ns),
            ended,
        }
    }

    fn idle(&self) -> Duration {
        Duration::from_nanos(self.idle_ns)
    }

    /// `bytes` moved: their time at `MIN_RATE` earned.
    #[inline]
    fn moved(&self, bytes: usize) {
        let ns = (bytes as u128 * 1_000_000_000 / MIN_RATE).min(u64::MAX as u128 / 4) as u64;
        self.earn(ns);
    }

    /// Credit earned (held to the idle timeout at the next check).
    #[inline]
    fn earn(&self, ns: u64) {
        let _ = self
            .until
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                Some(u.saturating_add(ns))
            });
    }

    /// A message (or control frame) the client completed: checked, then
    /// its credit earned.
    #[inline]
    fn message(&self) -> Result<(), IoError> {
        self.check()?;
        self.earn(self.per_message_ns);
        self.check()
    }

    /// Whether the session still has credit (and its client): the error
    /// that ends it otherwise.
    fn check(&self) -> Result<(), IoError> {
        if self
            .ended
            .as_ref()
            .is_some_and(|e| e.load(Ordering::Relaxed))
        {
            return Err(IoError::Os(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "the client closed the session's control connection",
            )));
        }
        let now = self.base.elapsed().as_nanos().min(u64::MAX as u128 / 4) as u64;
        let until = self.until.load(Ordering::Relaxed);
        if now > until {
            return Err(IoError::Os(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "the client made too little progress: less than a message every {} and {} KiB/s on average, for longer than the idle timeout ({}): a trickle",
                    humantime::format_duration(Duration::from_nanos(self.per_message_ns)),
                    MIN_RATE >> 10,
                    humantime::format_duration(self.idle())
                ),
            )));
        }
        self.until.store(
            until.min(now.saturating_add(self.idle_ns)),
            Ordering::Relaxed,
        );
        Ok(())
    }
}

/// What one datagram receive got.
enum Got {
    /// A datagram of this session, its payload this long (the real length,
    /// past the buffer when it was cut).
    Len(usize),
    /// Another session's datagram, or a stranger's: dropped.
    Foreign,
    /// The call failed; errno says why.
    Failed,
}

impl Chan {
    /// One blocking socket for both ways whose reads and writes time out
    /// (SO_RCVTIMEO/SO_SNDTIMEO, set by the caller): a remote link's end.
    pub fn timed_socket(fd: RawFd, framing: Framing) -> Result<Chan> {
        let chan = Chan {
            rx: fd,
            tx: fd,
            framing,
            poll: false,
            peer: None,
            timed: true,
            cookie: None,
            whole: None,
        };
        chan.set_mode()?;
        Ok(chan)
    }

    /// Sends one datagram, behind the cookie if the session has one; the
    /// payload's length sent, or -1 with errno set.
    #[inline]
    fn send_datagram(&self, buf: &[u8]) -> isize {
        let Some(cookie) = &self.cookie else {
            // SAFETY: sending from a live slice of buf.len() bytes.
            return unsafe { libc::send(self.tx, buf.as_ptr().cast(), buf.len(), 0) };
        };
        let iov = [
            libc::iovec {
                iov_base: cookie.as_ptr() as *mut libc::c_void,
                iov_len: COOKIE_LEN,
            },
            libc::iovec {
                iov_base: buf.as_ptr() as *mut libc::c_void,
                iov_len: buf.len(),
            },
        ];
        // SAFETY: an all-zero msghdr is valid (no name, no control data).
        let mut m: libc::msghdr = unsafe { std::mem::zeroed() };
        m.msg_iov = iov.as_ptr() as *mut libc::iovec;
        m.msg_iovlen = 2;
        // SAFETY: both iovecs point into live buffers of the lengths given,
        // which sendmsg only reads.
        let r = unsafe { libc::sendmsg(self.tx, &m, 0) };
        if r < 0 {
            r
        } else {
            (r - COOKIE_LEN as isize).max(0)
        }
    }

    /// Receives one datagram into `buf`, checking and stripping the cookie
    /// if the session has one.
    #[inline]
    fn recv_datagram(&self, buf: &mut [u8]) -> Got {
        let Some(cookie) = &self.cookie else {
            // MSG_TRUNC: the return value is the datagram's real length,
            // so an oversized one is caught rather than silently cut.
            // SAFETY: reading into a live slice of buf.len() bytes.
            let r =
                unsafe { libc::recv(self.rx, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_TRUNC) };
            return if r >= 0 {
                Got::Len(r as usize)
            } else {
                Got::Failed
            };
        };
        let mut head = [0u8; COOKIE_LEN];
        let iov = [
            libc::iovec {
                iov_base: head.as_mut_ptr().cast(),
                iov_len: COOKIE_LEN,
            },
            libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            },
        ];
        // SAFETY: an all-zero msghdr is valid (no name, no control data).
        let mut m: libc::msghdr = unsafe { std::mem::zeroed() };
        m.msg_iov = iov.as_ptr() as *mut libc::iovec;
        m.msg_iovlen = 2;
        // SAFETY: both iovecs point into live, exclusively borrowed buffers
        // of the lengths given; recvmsg writes at most that much (MSG_TRUNC
        // only changes the length returned).
        let r = unsafe { libc::recvmsg(self.rx, &mut m, libc::MSG_TRUNC) };
        if r < 0 {
            return Got::Failed;
        }
        // One comparison of two words: no early exit that would time where
        // a guessed cookie first differs.
        if (r as usize) < COOKIE_LEN || u64::from_ne_bytes(head) != u64::from_ne_bytes(*cookie) {
            return Got::Foreign;
        }
        Got::Len(r as usize - COOKIE_LEN)
    }

    /// After part of a message moved on a server's end: still within what
    /// one message is allowed (`allowance`), counted from the first part?
    fn within(&self, began: &mut Option<Instant>, len: usize) -> Result<(), IoError> {
        let Some(p) = &self.whole else {
            return Ok(());
        };
        let idle = p.idle();
        let t = *began.get_or_insert_with(Instant::now);
        if t.elapsed() <= allowance(idle, len) {
            return p.check();
        }
        Err(IoError::Os(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "one {len}-byte message took longer than the idle timeout allows ({}: bytes trickling in or out)",
                humantime::format_duration(allowance(idle, len))
            ),
        )))
    }

    /// On a server's end, a message (or control frame) from the client has
    /// come in whole: the session's progress is checked, and credited
    /// (`Progress`). Nothing elsewhere.
    #[inline]
    fn progressed(&self) -> Result<(), IoError> {
        match &self.whole {
            Some(p) => p.message(),
            None => Ok(()),
        }
    }

    /// On a server's end, the responder's own delay is not the client's
    /// time: it is given back to the session's credit.
    #[inline]
    fn delayed(&self, ns: u64) {
        if let Some(p) = &self.whole {
            p.earn(ns);
        }
    }

    /// Puts both fds in the mode the completion asks for.
    pub fn set_mode(&self) -> Result<()> {
        self.set_mode_for(Pattern::Pingpong)
    }

    /// Bidirectional exchanges need non-blocking fds whatever the completion:
    /// `duplex` must never sit in one call while the other way is stuck.
    pub fn set_mode_for(&self, pattern: Pattern) -> Result<()> {
        let nonblock = self.poll || pattern == Pattern::Bidir;
        for fd in [self.rx, self.tx] {
            // SAFETY: fcntl on fds we hold.
            let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
            let fl = if nonblock {
                fl | libc::O_NONBLOCK
            } else {
                fl & !libc::O_NONBLOCK
            };
            // SAFETY: as F_GETFL: integer arguments only, no memory is passed;
            // a closed fd only makes it fail.
            if fl < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, fl) } < 0 {
                return Err(Error::os("setting the link's blocking mode"));
            }
        }
        Ok(())
    }

    /// Sends exactly `buf` as one message.
    #[inline]
    pub fn send(&self, buf: &[u8]) -> Result<(), IoError> {
        match self.framing {
            Framing::Stream => {
                let mut spins = 0u32;
                let mut done = 0;
                let mut began = None;
                while done < buf.len() {
                    // SAFETY: writing from a live slice.
                    let r = unsafe {
                        libc::write(self.tx, buf[done..].as_ptr().cast(), buf.len() - done)
                    };
                    if r >= 0 {
                        done += r as usize;
                        if let Some(p) = &self.whole {
                            p.moved(r as usize);
                            if done < buf.len() {
                                self.within(&mut began, buf.len())?;
                            }
                        }
                    } else {
                        self.retry_or_fail(&mut spins)?;
                    }
                }
                Ok(())
            }
            Framing::Datagram => {
                let mut spins = 0u32;
                loop {
                    let r = self.send_datagram(buf);
                    if r >= 0 {
                        if let Some(p) = &self.whole {
                            p.moved(r as usize);
                        }
                        return whole_datagram(r as usize, buf.len());
                    }
                    self.retry_or_fail(&mut spins)?;
                }
            }
        }
    }

    /// Receives exactly `buf.len()` bytes as one message.
    #[inline]
    pub fn recv(&self, buf: &mut [u8]) -> Result<(), IoError> {
        match self.framing {
            Framing::Stream => {
                let mut spins = 0u32;
                let mut done = 0;
                let mut began = None;
                while done < buf.len() {
                    // SAFETY: reading into a live slice.
                    let r = unsafe {
                        libc::read(self.rx, buf[done..].as_mut_ptr().cast(), buf.len() - done)
                    };
                    if r > 0 {
                        done += r as usize;
                        if let Some(p) = &self.whole {
                            p.moved(r as usize);
                            if done < buf.len() {
                                self.within(&mut began, buf.len())?;
                            }
                        }
                    } else if r == 0 {
                        return Err(IoError::Eof);
                    } else {
                        self.retry_or_fail(&mut spins)?;
                    }
                }
                Ok(())
            }
            Framing::Datagram => {
                let mut spins = 0u32;
                let mut began = None;
                loop {
                    match self.recv_datagram(buf) {
                        Got::Len(n) => {
                            if let Some(p) = &self.whole {
                                p.moved(n);
                            }
                            return whole_datagram(n, buf.len());
                        }
                        // Dropped unanswered; strays cannot keep a server's
                        // session waiting past what one message is allowed.
                        Got::Foreign => self.within(&mut began, buf.len())?,
                        Got::Failed => self.retry_or_fail(&mut spins)?,
                    }
                }
            }
        }
    }
}

impl Chan {
    /// Receives one datagram of at most `buf.len()` bytes; its length.
    /// Only for datagram framing, where an answer's length is not known in
    /// advance (an acknowledgement or a refusal).
    fn recv_upto(&self, buf: &mut [u8]) -> Result<usize, IoError> {
        let mut spins = 0u32;
        let mut began = None;
        loop {
            match self.recv_datagram(buf) {
                Got::Len(got) if got <= buf.len() => return Ok(got),
                Got::Len(got) => {
                    return Err(IoError::Size {
                        got,
                        want: buf.len(),
                    });
                }
                Got::Foreign => self.within(&mut began, buf.len())?,
                Got::Failed => self.retry_or_fail(&mut spins)?,
            }
        }
    }

    /// Reads the answer to a control frame: `Ok` for the acknowledgement,
    /// `Refused` with the responder's reason for a refusal.
    fn recv_answer(&self) -> Result<(), IoError> {
        let bad = || {
            IoError::Os(std::io::Error::other(
                "bad acknowledgement from the responder",
            ))
        };
        let mut b = [0u8; 12 + MAX_REASON];
        let (head, reason) = match self.framing {
            Framing::Stream => {
                self.recv(&mut b[..8])?;
                if b[..8] != NAK {
                    (&b[..8], 0)
                } else {
                    self.recv(&mut b[8..12])?;
                    let n = u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize;
                    if n > MAX_REASON {
                        return Err(bad());
                    }
                    self.recv(&mut b[12..12 + n])?;
                    (&b[..], n)
                }
            }
            Framing::Datagram => {
                let got = self.recv_upto(&mut b)?;
                if got >= 12 && b[..8] == NAK {
                    let n = u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize;
                    if n != got - 12 {
                        return Err(bad());
                    }
                    (&b[..], n)
                } else {
                    (&b[..got], 0)
                }
            }
        };
        if head == ACK {
            return Ok(());
        }
        if head.len() < 12 || head[..8] != NAK {
            return Err(bad());
        }
        Err(IoError::Refused(printable(&head[12..12 + reason])))
    }
}

/// A refusal as one line of plain text: the responder may be another
/// machine's, so its bytes are not trusted to be UTF-8 or free of escapes.
fn printable(b: &[u8]) -> String {
    String::from_utf8_lossy(b)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// The refusal of a control frame as sent: `NAK`, the reason's length and
/// the reason, cut to `MAX_REASON` bytes at a character boundary.
fn refusal(why: &str) -> Vec<u8> {
    let mut end = why.len().min(MAX_REASON);
    while !why.is_char_boundary(end) {
        end -= 1;
    }
    let mut b = Vec::with_capacity(12 + end);
    b.extend_from_slice(&NAK);
    b.extend_from_slice(&(end as u32).to_le_bytes());
    b.extend_from_slice(&why.as_bytes()[..end]);
    b
}

/// A datagram moves whole or not at all: any other length is an error.
#[inline]
fn whole_datagram(got: usize, want: usize) -> Result<(), IoError> {
    if got == want {
        Ok(())
    } else {
        Err(IoError::Size { got, want })
    }
}

/// Polls between looks at whether the peer is gone.
const SPINS_PER_CHECK: u32 = 1024;

impl Chan {
    /// After a failed call: Ok to try again, or why not.
    #[inline]
    fn retry_or_fail(&self, spins: &mut u32) -> Result<(), IoError> {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EAGAIN) && self.timed {
            return Err(IoError::Os(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the other end was silent for longer than the timeout",
            )));
        }
        if e.raw_os_error() == Some(libc::EAGAIN) {
            std::hint::spin_loop();
            *spins = spins.wrapping_add(1);
            if (*spins).is_multiple_of(SPINS_PER_CHECK)
                && self
                    .peer
                    .as_ref()
                    .is_some_and(|p| p.gone.load(Ordering::Relaxed))
            {
                return Err(IoError::Eof);
            }
            return Ok(());
        }
        classify(e)
    }
}

#[inline]
fn classify(e: std::io::Error) -> Result<(), IoError> {
    match e.raw_os_error() {
        Some(libc::EINTR) => Ok(()),
        Some(libc::EPIPE | libc::ECONNRESET | libc::ECONNREFUSED) => Err(IoError::Eof),
        _ => Err(IoError::Os(e)),
    }
}

fn encode(kind: u32, s: &ReplyShape) -> [u8; CTRL_LEN] {
    let mut b = [0u8; CTRL_LEN];
    b[0..4].copy_from_slice(&CTRL_MAGIC.to_le_bytes());
    b[4..8].copy_from_slice(&kind.to_le_bytes());
    b[8..].copy_from_slice(&s.encode());
    b
}

/// What a control frame asks of the responder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Run `exchanges` round trips of this shape.
    Configure(ReplyShape),
    /// End the session.
    Quit,
}

/// Decodes one control frame and, for a server (`limits`), checks it
/// against what the server and this session allow. Everything a frame says
/// is judged here, before the responder acknowledges it or allocates for
/// it: a frame of the wrong length, another magic, an unknown kind or
/// pattern, or sizes and delays over the limits are refused with the reason
/// (one line, sent to the initiator and logged).
pub fn parse_control(b: &[u8], limits: Option<&Limits>) -> Result<Control, String> {
    let b: &[u8; CTRL_LEN] = b.try_into().map_err(|_| {
        format!(
            "a {}-byte control frame where {CTRL_LEN} bytes were expected",
            b.len()
        )
    })?;
    let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    if word(0) != CTRL_MAGIC {
        return Err("malformed control frame (bad magic: protocol out of step)".into());
    }
    match word(4) {
        CTRL_CONFIGURE => {}
        CTRL_QUIT => return Ok(Control::Quit),
        kind => {
            return Err(format!(
                "unknown control frame kind {kind} (1 configure and 2 quit are known); use the same xferbench version on both ends"
            ));
        }
    }
    let shape = b
        .split_last_chunk::<{ ReplyShape::WIRE_LEN }>()
        .and_then(|(_, body)| ReplyShape::decode(body))
        .ok_or(
            "malformed control frame (an unknown pattern, or a length this machine cannot hold)",
        )?;
    if device_len(&shape).is_none() {
        return Err("malformed control frame (message lengths overflow)".into());
    }
    if let Some(l) = limits {
        let largest = shape.request_len.max(shape.reply_len);
        if largest > l.max_message {
            return Err(format!(
                "client asked for {largest}-byte messages; this session allows at most {} (the smaller of the size its hello declared and --max-message)",
                l.max_message
            ));
        }
        if shape.delay_ns > l.max_delay_ns {
            return Err(format!(
                "client asked for a {} ns responder delay; this server allows at most {} ns",
                shape.delay_ns, l.max_delay_ns
            ));
        }
        if shape.pattern == Pattern::Bidir {
            return Err(
                "client asked for bidirectional exchanges, which a server does not run (they need non-blocking sockets without a timeout)"
                    .into(),
            );
        }
        // Initiators never send empty requests to a server (a remote link
        // carries none), and on a byte stream receiving one is no I/O at
        // all: the server would run the announced exchanges (or a window
        // of up to 2^32 requests each) without waiting on the client, out
        // of reach of the idle timeout.
        if shape.request_len == 0 && shape.exchanges != 0 {
            return Err(
                "client asked for empty requests, which a remote link does not carry".into(),
            );
        }
    }
    Ok(Control::Configure(shape))
}

/// The responder's buffer for one shape: the request and reply overlap but
/// in bidir, where both are in flight at once. `None` for lengths so large
/// that the page rounding or the buffer's layout would overflow.
fn device_len(shape: &ReplyShape) -> Option<usize> {
    const LARGEST: usize = isize::MAX as usize / 4;
    let (n, m) = (shape.request_len, shape.reply_len);
    if n > LARGEST || m > LARGEST {
        return None;
    }
    Some(match shape.pattern {
        Pattern::Bidir => page_round(n) + m,
        _ => n.max(m),
    })
}

impl Chan {
    /// Sends one message as packets of `packet` bytes, each its own write or
    /// datagram. An empty message is an empty datagram (nothing on a stream).
    #[inline]
    fn send_msg(&self, buf: &[u8], packet: usize) -> Result<(), IoError> {
        if buf.is_empty() || packet >= buf.len() {
            return self.send(buf);
        }
        // On a server, packets are parts of one message: together they get
        // one message's allowance, or a client could trickle 1-byte packets.
        let mut began = None;
        buf.chunks(packet).try_for_each(|p| {
            self.send(p)?;
            self.within(&mut began, buf.len())
        })
    }

    /// Receives one message sent by `send_msg` with the same packet size.
    #[inline]
    fn recv_msg(&self, buf: &mut [u8], packet: usize) -> Result<(), IoError> {
        if buf.is_empty() || packet >= buf.len() {
            return self.recv(buf);
        }
        let len = buf.len();
        let mut began = None;
        buf.chunks_mut(packet).try_for_each(|p| {
            self.recv(p)?;
            self.within(&mut began, len)
        })
    }

    /// Sends `count` messages from `out` while receiving `count` into `inp`,
    /// interleaving non-blocking calls so neither side's full buffer stalls
    /// the other (both ends of a bidirectional stream run this). Blocking
    /// completion sleeps in poll(2) when neither way can move.
    fn duplex(&self, out: &[u8], inp: &mut [u8], count: u64, packet: usize) -> Result<(), IoError> {
        if self.cookie.is_some() {
            // A server refuses them first; this keeps the cookie's rule whole.
            return Err(IoError::Os(std::io::Error::other(
                "bidirectional exchanges are not carried by a remote UDP session",
            )));
        }
        let (opk, ipk) = (packet.min(out.len()).max(1), packet.min(inp.len()).max(1));
        let (mut sent, mut s_off) = (0u64, 0usize);
        let (mut got, mut r_off) = (0u64, 0usize);
        let mut spins = 0u32;
        while sent < count || got < count {
            let mut moved = false;
            if sent < count {
                let end = if self.framing == Framing::Datagram {
                    (s_off + opk).min(out.len())
                } else {
                    out.len()
                };
                let want = &out[s_off..end];
                // SAFETY: `want` is a live slice of `out`; send reads at most
                // want.len() bytes from its start.
                let r = unsafe {
                    libc::send(
                        self.tx,
                        want.as_ptr().cast(),
                        want.len(),
                        libc::MSG_DONTWAIT,
                    )
                };
                let r = if r < 0 && errno() == libc::ENOTSOCK {
                    // SAFETY: as send: want.len() readable bytes at want's start.
                    unsafe { libc::write(self.tx, want.as_ptr().cast(), want.len()) }
                } else {
                    r
                };
                if r >= 0 {
                    if self.framing == Framing::Datagram {
                        whole_datagram(r as usize, want.len())?;
                    }
                    s_off += r as usize;
                    if s_off >= out.len() {
                        sent += 1;
                        s_off = 0;
                    }
                    moved = true;
                } else {
                    let e = std::io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EAGAIN) {
                        classify(e)?;
                    }
                }
            }
            if got < count {
                let end = if self.framing == Framing::Datagram {
                    (r_off + ipk).min(inp.len())
                } else {
                    inp.len()
                };
                let room = &mut inp[r_off..end];
                let flags = libc::MSG_DONTWAIT
                    | if self.framing == Framing::Datagram {
                        libc::MSG_TRUNC
                    } else {
                        0
                    };
                // SAFETY: `room` is a live, exclusively borrowed slice of `inp`;
                // recv writes at most room.len() bytes into it (MSG_TRUNC only
                // changes the length returned, not what is written).
                let r = unsafe { libc::recv(self.rx, room.as_mut_ptr().cast(), room.len(), flags) };
                let r = if r < 0 && errno() == libc::ENOTSOCK {
                    // SAFETY: as recv: room.len() writable bytes at room's start.
                    unsafe { libc::read(self.rx, room.as_mut_ptr().cast(), room.len()) }
                } else {
                    r
                };
                if r > 0 || (r == 0 && self.framing == Framing::Datagram) {
                    if self.framing == Framing::Datagram {
                        whole_datagram(r as usize, room.len())?;
                    }
                    r_off += r as usize;
                    if r_off >= inp.len() {
                        got += 1;
                        r_off = 0;
                    }
                    moved = true;
                } else if r == 0 {
                    return Err(IoError::Eof);
                } else {
                    let e = std::io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EAGAIN) {
                        classify(e)?;
                    }
                }
            }
            if moved {
                continue;
            }
            if self.poll {
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(SPINS_PER_CHECK)
                    && self
                        .peer
                        .as_ref()
                        .is_some_and(|p| p.gone.load(Ordering::Relaxed))
                {
                    return Err(IoError::Eof);
                }
                std::hint::spin_loop();
            } else {
                let mut fds = [
                    libc::pollfd {
                        fd: self.tx,
                        events: if sent < count { libc::POLLOUT } else { 0 },
                        revents: 0,
                    },
                    libc::pollfd {
                        fd: self.rx,
                        events: if got < count { libc::POLLIN } else { 0 },
                        revents: 0,
                    },
                ];
                // 100 ms at a time: the watchdog's verdict is looked at in between.
                // SAFETY: `fds` is a live array of exactly the 2 pollfds passed;
                // poll writes only their revents.
                unsafe { libc::poll(fds.as_mut_ptr(), 2, 100) };
                if self
                    .peer
                    .as_ref()
                    .is_some_and(|p| p.gone.load(Ordering::Relaxed))
                {
                    return Err(IoError::Eof);
                }
            }
        }
        Ok(())
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// The initiator's end over fds, with its responder process.
pub struct FdLink {
    chan: Chan,
    req: PageBuf,
    rep: PageBuf,
    shape: ReplyShape,
    /// Stream messages sent since the last configure: their fill-check number.
    stream_seq: u64,
    // Dropped before the fds: the watchdog, which may shut them down, stops first.
    // None for a remote link, whose timeouts are the socket's own.
    peer: Option<Peer>,
    _fds: Vec<OwnedFd>,
}

impl FdLink {
    /// Starts the responder with `child_fds` as its fds 3, 4…, then keeps `own`
    /// (rx first, tx second; one fd for both on sockets).
    pub fn open(
        cfg: &LinkConfig,
        own: Vec<OwnedFd>,
        child_fds: Vec<OwnedFd>,
        framing: Framing,
    ) -> Result<Box<dyn Link>> {
        Self::open_with(cfg, own, child_fds, framing, false)
    }

    /// As `open`, for a transport that may drop datagrams (UDP): a timeout is
    /// then explained as a probable loss, not only as a slow responder.
    pub fn open_lossy(
        cfg: &LinkConfig,
        own: Vec<OwnedFd>,
        child_fds: Vec<OwnedFd>,
    ) -> Result<Box<dyn Link>> {
        Self::open_with(cfg, own, child_fds, Framing::Datagram, true)
    }

    fn open_with(
        cfg: &LinkConfig,
        own: Vec<OwnedFd>,
        child_fds: Vec<OwnedFd>,
        framing: Framing,
        lossy: bool,
    ) -> Result<Box<dyn Link>> {
        let raw: Vec<RawFd> = child_fds.iter().map(|f| f.as_raw_fd()).collect();
        let mut peer = Peer::spawn(cfg, &raw)?;
        peer.lossy = lossy;
        drop(child_fds);
        let rx = own[0].as_raw_fd();
        let tx = own.get(1).map_or(rx, |f| f.as_raw_fd());
        peer.wake_on_gone(&[rx, tx]);
        let chan = Chan {
            rx,
            tx,
            framing,
            poll: cfg.completion == CompletionMode::Poll,
            peer: Some(peer.shared().clone()),
            timed: false,
            cookie: None,
            whole: None,
        };
        chan.set_mode()?;
        Ok(Box::new(FdLink {
            chan,
            _fds: own,
            req: PageBuf::zeroed(cfg.max_request),
            rep: PageBuf::zeroed(cfg.max_reply.max(CTRL_LEN)),
            shape: ReplyShape::default(),
            stream_seq: 0,
            peer: Some(peer),
        }))
    }

    /// A link over a connected socket to a remote responder (`serve`): no
    /// child to watch; every wait ends at the socket's own timeouts, which
    /// the caller has set to the link's. A UDP session has its cookie, and
    /// keeps its TCP connection (`keep`) open for as long as the link.
    pub fn open_remote(
        cfg: &LinkConfig,
        sock: OwnedFd,
        framing: Framing,
        cookie: Option<[u8; COOKIE_LEN]>,
        keep: Option<OwnedFd>,
    ) -> Result<Box<dyn Link>> {
        let mut chan = Chan::timed_socket(sock.as_raw_fd(), framing)?;
        chan.cookie = cookie;
        let mut fds = vec![sock];
        fds.extend(keep);
        Ok(Box::new(FdLink {
            chan,
            _fds: fds,
            req: PageBuf::zeroed(cfg.max_request),
            rep: PageBuf::zeroed(cfg.max_reply.max(CTRL_LEN)),
            shape: ReplyShape::default(),
            stream_seq: 0,
            peer: None,
        }))
    }

    fn enter(&self) {
        if let Some(p) = &self.peer {
            p.enter();
        }
    }

    fn leave(&self) {
        if let Some(p) = &self.peer {
            p.leave();
        }
    }

    fn failure(&mut self, what: &str, e: IoError) -> Error {
        match &mut self.peer {
            Some(p) => p.failure(what, e),
            None => Error::run_from(format!("{what} with the remote responder"), e),
        }
    }

    fn control(&mut self, kind: u32, shape: &ReplyShape) -> Result<()> {
        self.enter();
        let r = self
            .chan
            .send(&encode(kind, shape))
            .and_then(|_| self.chan.recv_answer());
        self.leave();
        r.map_err(|e| self.failure("setting up a batch", e))
    }
}

impl Link for FdLink {
    fn request_buf(&mut self) -> &mut [u8] {
        &mut self.req
    }

    fn reply(&self) -> &[u8] {
        &self.rep[..self.shape.reply_len]
    }

    fn configure(&mut self, shape: &ReplyShape) -> Result<()> {
        if shape.pattern == Pattern::Bidir && self.rep.len() < shape.reply_len {
            self.rep.grow(shape.reply_len, 0);
        }
        self.control(CTRL_CONFIGURE, shape)?;
        // Control frames always travel in the completion's own mode.
        self.chan.set_mode_for(shape.pattern)?;
        self.shape = *shape;
        self.stream_seq = 0;
        Ok(())
    }

    #[inline]
    fn exchange(&mut self) -> Result<()> {
        let sh = self.shape;
        let n = sh.request_len;
        self.enter();
        let r = match sh.pattern {
            Pattern::Pingpong => self
                .chan
                .send_msg(&self.req[..n], sh.packet(n))
                .and_then(|_| {
                    self.chan
                        .recv_msg(&mut self.rep[..sh.reply_len], sh.packet(sh.reply_len))
                }),
            // With fill-check every message of the window gets its own values
            // (numbered from the configure), filled inside the timed span.
            Pattern::Stream => (0..sh.messages())
                .try_for_each(|_| {
                    if let Some(seed) = sh.check {
                        payload::fill(
                            &mut self.req[..n],
                            seed,
                            self.stream_seq,
                            Direction::Request,
                        );
                        self.stream_seq += 1;
                    }
                    self.chan.send_msg(&self.req[..n], sh.packet(n))
                })
                .and_then(|_| {
                    self.chan
                        .recv_msg(&mut self.rep[..sh.reply_len], sh.packet(sh.reply_len))
                }),
            Pattern::Bidir => self.chan.duplex(
                &self.req[..n],
                &mut self.rep[..sh.reply_len],
                sh.messages(),
                sh.packet(n),
            ),
        };
        self.leave();
        r.map_err(|e| self.failure("exchange", e))
    }

    fn close(mut self: Box<Self>) -> Result<()> {
        self.control(CTRL_QUIT, &ReplyShape::default())?;
        let FdLink { peer, _fds, .. } = *self;
        match peer {
            Some(peer) => {
                peer.forget_fds();
                drop(_fds);
                peer.finish()
            }
            None => Ok(()),
        }
    }
}

/// The responder's loop over its inherited fds (3 = receive, `tx` = send).
pub fn respond(tx: RawFd, framing: Framing, completion: CompletionMode) -> Result<()> {
    let chan = Chan {
        rx: CHILD_FD,
        tx,
        framing,
        poll: completion == CompletionMode::Poll,
        peer: None,
        timed: false,
        cookie: None,
        whole: None,
    };
    chan.set_mode()?;
    serve_loop(&chan, None)
}

/// What a responder serving remote clients allows, checked before any
/// allocation: a client cannot make it reserve or spin more than this.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest request or reply a client may configure, bytes (`--max-message`).
    pub max_message: usize,
    /// Longest responder delay a client may ask for, ns.
    pub max_delay_ns: u64,
    /// The longest part of a delay spent spinning, ns: the rest is slept,
    /// so a client asking for long delays cannot keep a server's CPU busy.
    pub max_spin_ns: u64,
    /// The idle timeout, which also bounds each whole message (see `allowance`).
    pub idle: Duration,
}

/// Serves one remote client over a connected, timed socket (see `Chan::timed`);
/// a UDP session's datagrams carry its cookie.
pub fn serve_socket(
    fd: RawFd,
    framing: Framing,
    limits: &Limits,
    cookie: Option<[u8; COOKIE_LEN]>,
    ended: Option<Arc<AtomicBool>>,
) -> Result<()> {
    let mut chan = Chan::timed_socket(fd, framing)?;
    chan.cookie = cookie;
    chan.whole = Some(Progress::new(limits.idle, ended));
    serve_loop(&chan, Some(limits))
}

/// The responder's loop: control frames, then the exchanges they announce.
/// Exchanges run only after a configure, into a buffer that configure sized:
/// whatever a frame says, no slice below can reach past the buffer.
fn serve_loop(chan: &Chan, limits: Option<&Limits>) -> Result<()> {
    // Test faults apply to local children only, never to a server.
    let mut fault = if limits.is_some() {
        Fault::none()
    } else {
        Fault::from_env()
    };
    let mut device = PageBuf::zeroed(0);
    loop {
        let mut frame = [0u8; CTRL_LEN];
        match chan.recv(&mut frame) {
            Ok(()) => {}
            // The initiator went away between batches: nothing more to do.
            Err(IoError::Eof) => return Ok(()),
            Err(e) => {
                return Err(Error::run_from("responder: reading a control frame", e));
            }
        }
        let io = |e: IoError| Error::run_from("responder", e);
        chan.progressed().map_err(io)?;
        let shape = match parse_control(&frame, limits) {
            Ok(Control::Configure(shape)) => shape,
            Ok(Control::Quit) => {
                chan.send(&ACK).map_err(io)?;
                return Ok(());
            }
            Err(why) => {
                // Best effort: the initiator learns why before the close.
                let _ = chan.send(&refusal(&why));
                return Err(Error::run(format!("refused a control frame: {why}")));
            }
        };
        let need =
            device_len(&shape).ok_or_else(|| Error::run("responder: message lengths overflow"))?;
        device.grow(need, 0x5a);
        chan.set_mode_for(shape.pattern)?;
        chan.send(&ACK).map_err(io)?;
        let (n, m) = (shape.request_len, shape.reply_len);
        // Message numbers restart at each configure, as the initiator's do.
        for message in 0..shape.exchanges {
            match shape.pattern {
                Pattern::Pingpong => {
                    chan.recv_msg(&mut device[..n], shape.packet(n))
                        .map_err(io)?;
                    chan.progressed().map_err(io)?;
                    reply_prep(&shape, &mut device, message, &mut fault, limits)?;
                    chan.delayed(shape.delay_ns);
                    chan.send_msg(&device[..m], shape.packet(m)).map_err(io)?;
                }
                Pattern::Stream => {
                    for k in 0..shape.messages() {
                        chan.recv_msg(&mut device[..n], shape.packet(n))
                            .map_err(io)?;
                        chan.progressed().map_err(io)?;
                        if let Some(seed) = shape.check {
                            fault.corrupt(&mut device[..n]);
                            // Wrapping, as the initiator's count would after
                            // 2^64 messages: a frame cannot make this panic.
                            let seq = message.wrapping_mul(shape.messages()).wrapping_add(k);
                            payload::check(&device[..n], seed, seq, Direction::Request)
                                .map_err(|m| Error::run(format!("responder: {m}")))?;
                        }
                    }
                    chan.send_msg(&device[..m], shape.packet(m)).map_err(io)?;
                }
                Pattern::Bidir => {
                    let (inp, out) = device.split_at_mut(page_round(n));
                    chan.duplex(&out[..m], &mut inp[..n], shape.messages(), shape.packet(m))
                        .map_err(io)?;
                }
            }
            if fault.tick() {
                fault_exit(&fault);
            }
        }
    }
}

/// Between receiving a request in `device` and sending the reply from it:
/// check the request's values, wait the added delay, fill the reply.
fn reply_prep(
    shape: &ReplyShape,
    device: &mut [u8],
    message: u64,
    fault: &mut Fault,
    limits: Option<&Limits>,
) -> Result<()> {
    let t = Instant::now();
    if let Some(seed) = shape.check {
        payload::check(
            &device[..shape.request_len],
            seed,
            message,
            Direction::Request,
        )
        .map_err(|m| Error::run(format!("responder: {m}")))?;
    }
    if shape.delay_ns != 0 {
        match limits {
            // A local responder spins: its delay must be exact.
            None => spin_until(t, shape.delay_ns),
            Some(l) => sleep_then_spin(t, shape.delay_ns, l.max_spin_ns),
        }
    }
    let reply = &mut device[..shape.reply_len];
    if let Some(seed) = shape.check {
        payload::fill(reply, seed, message, Direction::Reply);
    }
    fault.corrupt(reply);
    Ok(())
}

/// Sets an integer socket option.
pub fn setsockopt(fd: RawFd, level: libc::c_int, opt: libc::c_int, v: libc::c_int) -> Result<()> {
    // SAFETY: passing a live c_int by pointer with its size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(Error::os(format!("setsockopt({opt})")));
    }
    Ok(())
}
