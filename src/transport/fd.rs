//! The link and responder shared by every fd-based transport (pipes, sockets):
//! exact-length reads and writes over a byte stream, or one datagram per
//! message. `poll` completion spins on non-blocking calls; `block` sleeps in
//! the syscall. Each batch of round trips is announced by a control frame that
//! the responder acknowledges, so sizes change outside the timed loop.

use super::peer::{CHILD_FD, Fault, Peer, Shared, fault_exit};
use super::{CompletionMode, Link, LinkConfig, ReplyShape, spin_until};
use crate::error::{Error, Result};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// A byte stream: a message is its length in bytes, however it is split.
    Stream,
    /// One datagram per message; a datagram of the wrong size is an error.
    Datagram,
}

const CTRL_MAGIC: u32 = 0x5842_4331; // "XBC1"
const CTRL_CONFIGURE: u32 = 1;
const CTRL_QUIT: u32 = 2;
const CTRL_LEN: usize = 40;
const ACK: [u8; 8] = *b"XBACK001";

/// Why an fd operation failed.
pub(crate) enum IoError {
    /// The other end closed.
    Eof,
    Os(std::io::Error),
    /// A datagram of another length than expected.
    Size {
        got: usize,
        want: usize,
    },
}

impl std::fmt::Display for IoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IoError::Eof => f.write_str("the responder closed the connection"),
            IoError::Os(e) => write!(f, "{e}"),
            IoError::Size { got, want } => write!(
                f,
                "received a {got}-byte datagram where {want} bytes were expected"
            ),
        }
    }
}

/// One end's fds and how to use them.
pub(crate) struct Chan {
    pub rx: RawFd,
    pub tx: RawFd,
    pub framing: Framing,
    pub poll: bool,
    /// The initiator's view of its child: a non-blocking datagram receive
    /// never sees its peer go, so the poll loop looks at this now and then.
    pub peer: Option<Arc<Shared>>,
}

impl Chan {
    /// Puts both fds in the mode the completion asks for.
    pub fn set_mode(&self) -> Result<()> {
        for fd in [self.rx, self.tx] {
            // SAFETY: fcntl on fds we hold.
            let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
            let fl = if self.poll {
                fl | libc::O_NONBLOCK
            } else {
                fl & !libc::O_NONBLOCK
            };
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
                while done < buf.len() {
                    // SAFETY: writing from a live slice.
                    let r = unsafe {
                        libc::write(self.tx, buf[done..].as_ptr().cast(), buf.len() - done)
                    };
                    if r >= 0 {
                        done += r as usize;
                    } else {
                        self.retry_or_fail(&mut spins)?;
                    }
                }
                Ok(())
            }
            Framing::Datagram => {
                let mut spins = 0u32;
                loop {
                    // SAFETY: as above.
                    let r = unsafe { libc::send(self.tx, buf.as_ptr().cast(), buf.len(), 0) };
                    if r >= 0 {
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
                while done < buf.len() {
                    // SAFETY: reading into a live slice.
                    let r = unsafe {
                        libc::read(self.rx, buf[done..].as_mut_ptr().cast(), buf.len() - done)
                    };
                    if r > 0 {
                        done += r as usize;
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
                loop {
                    // MSG_TRUNC: the return value is the datagram's real length,
                    // so an oversized one is caught rather than silently cut.
                    // SAFETY: as above.
                    let r = unsafe {
                        libc::recv(self.rx, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_TRUNC)
                    };
                    if r >= 0 {
                        return whole_datagram(r as usize, buf.len());
                    }
                    self.retry_or_fail(&mut spins)?;
                }
            }
        }
    }
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
    b[8..16].copy_from_slice(&(s.request_len as u64).to_le_bytes());
    b[16..24].copy_from_slice(&(s.reply_len as u64).to_le_bytes());
    b[24..32].copy_from_slice(&s.delay_ns.to_le_bytes());
    b[32..40].copy_from_slice(&s.exchanges.to_le_bytes());
    b
}

fn decode(b: &[u8; CTRL_LEN]) -> Option<(u32, ReplyShape)> {
    let w = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    let magic = u32::from_le_bytes(b[0..4].try_into().expect("4 bytes"));
    let kind = u32::from_le_bytes(b[4..8].try_into().expect("4 bytes"));
    (magic == CTRL_MAGIC).then(|| {
        (
            kind,
            ReplyShape {
                request_len: w(8) as usize,
                reply_len: w(16) as usize,
                delay_ns: w(24),
                exchanges: w(32),
            },
        )
    })
}

/// The initiator's end over fds, with its responder process.
pub(crate) struct FdLink {
    chan: Chan,
    req: Vec<u8>,
    rep: Vec<u8>,
    shape: ReplyShape,
    // Dropped before the fds: the watchdog, which may shut them down, stops first.
    peer: Peer,
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
        let raw: Vec<RawFd> = child_fds.iter().map(|f| f.as_raw_fd()).collect();
        let peer = Peer::spawn(cfg, &raw)?;
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
        };
        chan.set_mode()?;
        Ok(Box::new(FdLink {
            chan,
            _fds: own,
            req: vec![0u8; cfg.max_request],
            rep: vec![0u8; cfg.max_reply.max(CTRL_LEN)],
            shape: ReplyShape {
                request_len: 0,
                reply_len: 0,
                delay_ns: 0,
                exchanges: 0,
            },
            peer,
        }))
    }

    fn control(&mut self, kind: u32, shape: &ReplyShape) -> Result<()> {
        self.peer.enter();
        let r = self.chan.send(&encode(kind, shape)).and_then(|_| {
            let mut ack = [0u8; 8];
            self.chan.recv(&mut ack)?;
            if ack == ACK {
                Ok(())
            } else {
                Err(IoError::Os(std::io::Error::other(
                    "bad acknowledgement from the responder",
                )))
            }
        });
        self.peer.leave();
        r.map_err(|e| self.peer.failure("talking to the responder", e))
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
        self.control(CTRL_CONFIGURE, shape)?;
        self.shape = *shape;
        Ok(())
    }

    #[inline]
    fn exchange(&mut self) -> Result<()> {
        self.peer.enter();
        let r = match self.chan.send(&self.req[..self.shape.request_len]) {
            Ok(()) => self.chan.recv(&mut self.rep[..self.shape.reply_len]),
            Err(e) => Err(e),
        };
        self.peer.leave();
        r.map_err(|e| self.peer.failure("round trip", e))
    }

    fn close(mut self: Box<Self>) -> Result<()> {
        let quit = ReplyShape {
            request_len: 0,
            reply_len: 0,
            delay_ns: 0,
            exchanges: 0,
        };
        self.control(CTRL_QUIT, &quit)?;
        let FdLink { peer, _fds, .. } = *self;
        peer.forget_fds();
        drop(_fds);
        peer.finish()
    }
}

/// The responder's loop over its inherited fds (3 = receive, `tx` = send).
pub(crate) fn respond(tx: RawFd, framing: Framing, completion: CompletionMode) -> Result<()> {
    let chan = Chan {
        rx: CHILD_FD,
        tx,
        framing,
        poll: completion == CompletionMode::Poll,
        peer: None,
    };
    chan.set_mode()?;
    let mut fault = Fault::from_env();
    let mut device: Vec<u8> = Vec::new();
    loop {
        let mut frame = [0u8; CTRL_LEN];
        match chan.recv(&mut frame) {
            Ok(()) => {}
            // The initiator went away between batches: nothing more to do.
            Err(IoError::Eof) => return Ok(()),
            Err(e) => {
                return Err(Error::run(format!(
                    "responder: reading a control frame: {e}"
                )));
            }
        }
        let Some((kind, shape)) = decode(&frame) else {
            return Err(Error::run(
                "responder: malformed control frame (protocol out of step)",
            ));
        };
        let io = |e: IoError| Error::run(format!("responder: {e}"));
        if kind == CTRL_CONFIGURE {
            device.resize(shape.request_len.max(shape.reply_len), 0x5a);
        }
        chan.send(&ACK).map_err(io)?;
        if kind == CTRL_QUIT {
            return Ok(());
        }
        for _ in 0..shape.exchanges {
            chan.recv(&mut device[..shape.request_len]).map_err(io)?;
            if shape.delay_ns != 0 {
                spin_until(Instant::now(), shape.delay_ns);
            }
            chan.send(&device[..shape.reply_len]).map_err(io)?;
            if fault.tick() {
                fault_exit(&fault);
            }
        }
    }
}

/// Sets an integer socket option.
pub(crate) fn setsockopt(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    v: libc::c_int,
) -> Result<()> {
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
