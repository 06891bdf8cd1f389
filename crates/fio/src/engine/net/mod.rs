//! fio's `net` and `netsplice` engines: a job's blocks cross one socket, one
//! send or one receive of `bs` bytes per I/O, timed as fio times them.
//!
//! The receiving end binds (a TCP job with `listen`, every UDP or Unix
//! reader) and waits for its peer for at most the run's `--timeout`; the
//! sending end connects, and retries while nothing listens yet, so a sender
//! started with its receiver — what fio's `startdelay=1` arranges — finds it.
//! The wire is fio's: a UDP sender opens with fio's 8-byte link message and
//! stamps a sequence number in each datagram's last 24 bytes (so the
//! receiver counts losses), and every sender ends with the close message,
//! so either end may be fio itself.

mod open;
mod splice;
mod wire;

use super::{Dir, Done, Engine, Op};
use crate::error::{Error, Result};
use crate::job::Job;
use crate::net::{Endpoint, Proto, Role};
use crate::units::format_size;
use open::Setup;
use socket2::{SockAddr, Socket};
use splice::Pipe;
use std::io::{ErrorKind, Read};
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};
use wire::{LINK_LEN, SEQ_LEN, close_msg, open_msg, stamped_seq};

/// What the far end said, as counted here.
#[derive(Default)]
struct Counts {
    /// Datagrams sent (UDP sender) or accepted as blocks (UDP receiver).
    datagrams: u64,
    /// Sequence gaps a UDP receiver saw: datagrams that never arrived.
    lost: u64,
    /// Datagrams that arrived after a later one.
    late: u64,
    /// Datagrams without fio's sequence trailer (a sender of another kind).
    unstamped: u64,
    /// The sequence number expected next.
    next_seq: u64,
    /// Bytes moved.
    bytes: u64,
    /// Echoes a UDP pingpong sender has had back.
    echoes: u64,
}

pub struct Net {
    sock: Socket,
    ep: Endpoint,
    job: String,
    timeout: Duration,
    /// The multicast group a UDP sender sends to (its socket is not connected).
    send_to: Option<SockAddr>,
    pipe: Option<Pipe>,
    /// Bytes the job still moves, when it is size-based (MSG_MORE until the last).
    left: Option<u64>,
    pending: Vec<Done>,
    /// The stream is over (the peer closed or stopped): every I/O after it
    /// moves nothing and the job ends.
    ended: bool,
    /// Why the job ended before its own size or runtime, if it did.
    cut_short: Option<String>,
    counts: Counts,
    /// The addresses, for the report.
    local: String,
    peer: String,
    notes: Vec<String>,
}

/// The job's name and the message, as one line.
fn fail(job: &str, msg: impl std::fmt::Display) -> Error {
    Error::run(format!("job {job}: {msg}"))
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

fn errno_is(e: &std::io::Error, codes: &[i32]) -> bool {
    e.raw_os_error().is_some_and(|c| codes.contains(&c))
}

/// The peer went away: a write into a closed connection, or a reset.
fn peer_gone(e: &std::io::Error) -> bool {
    errno_is(e, &[libc::EPIPE, libc::ECONNRESET, libc::ECONNREFUSED])
}

/// A size for people: exact where it is round (`4M`), else to the KiB.
fn approx_size(b: u64) -> String {
    let exact = format_size(b);
    if exact.ends_with(char::is_alphabetic) || b < 1024 {
        exact
    } else {
        format!("~{}k", (b + 512) / 1024)
    }
}

fn show(a: &SockAddr) -> String {
    match (a.as_socket(), a.as_pathname()) {
        (Some(s), _) => s.to_string(),
        (None, Some(p)) => p.display().to_string(),
        _ => "(unnamed)".into(),
    }
}

/// Reads into initialised bytes through socket2's uninitialised-buffer API.
fn as_uninit(buf: &mut [u8]) -> &mut [MaybeUninit<u8>] {
    // SAFETY: initialised bytes are valid MaybeUninit<u8>, and the socket
    // only writes bytes into them.
    unsafe { &mut *(buf as *mut [u8] as *mut [MaybeUninit<u8>]) }
}

/// How long a UDP pingpong sender waits for its first echo before sending
/// the datagram again (the receiver may not have joined its group yet).
const FIRST_ECHO_WAIT: Duration = Duration::from_millis(100);
impl Net {
    /// Opens the job's socket: binds and waits for the peer, or connects to
    /// it, each for at most `timeout`.
    pub fn open(job: &Job, ep: Endpoint, timeout: Duration) -> Result<Net> {
        let bs = job.bs as usize;
        let pipe = if ep.splice && ep.proto.is_tcp() {
            Some(Pipe::new(bs).map_err(|e| fail(&job.name, format!("pipe2: {e}")))?)
        } else {
            None
        };
        let mut s = Setup {
            ep,
            job: job.name.clone(),
            timeout,
            send_to: None,
            local: String::new(),
            peer: String::new(),
            notes: Vec::new(),
            next_seq: 0,
        };
        let sock = match (s.ep.proto, s.ep.role) {
            (Proto::Unix, Role::Listen) => s.accept_unix()?,
            (Proto::Unix, Role::Connect) => s.connect_stream()?,
            (p, Role::Listen) if p.is_tcp() => s.accept_tcp()?,
            (p, Role::Connect) if p.is_tcp() => s.connect_stream()?,
            (_, Role::Listen) => s.bind_udp(bs)?,
            (_, Role::Connect) => s.udp_sender()?,
        };
        let t = Some(timeout);
        sock.set_read_timeout(t)
            .and_then(|()| sock.set_write_timeout(t))
            .map_err(|e| s.fail(format!("setting the socket's timeouts: {e}")))?;
        if s.ep.splice && !s.ep.proto.is_tcp() {
            s.notes.push(format!(
                "ioengine=netsplice moves {} with send and receive, as fio does: splice(2) is used for tcp only",
                s.ep.proto.name()
            ));
        }
        if s.ep.proto.is_udp() && s.ep.sends {
            s.notes.push(
                "udp has no flow control: this sender counts the datagrams it sent, not what arrived; the receiving job reports what arrived and the losses it saw"
                    .into(),
            );
        }
        if s.ep.proto.is_udp() && !s.ep.sends && bs < SEQ_LEN {
            s.notes.push(format!(
                "bs={bs} leaves no room for fio's {SEQ_LEN}-byte sequence number, so lost datagrams are not counted"
            ));
        }
        Ok(Net {
            sock,
            ep: s.ep,
            job: s.job,
            timeout,
            send_to: s.send_to,
            pipe,
            left: (!job.time_based).then(|| job.size.unwrap_or(0) / job.bs * job.bs),
            pending: Vec::with_capacity(1),
            ended: false,
            cut_short: None,
            counts: Counts {
                next_seq: s.next_seq,
                ..Counts::default()
            },
            local: s.local,
            peer: s.peer,
            notes: s.notes,
        })
    }

    fn fail(&self, msg: impl std::fmt::Display) -> Error {
        fail(&self.job, msg)
    }
}

impl Net {
    /// Marks the stream over; `why` is said when the job stops short of its
    /// own size or runtime.
    fn end(&mut self, why: impl FnOnce(&Net) -> String) {
        self.ended = true;
        if self.left.is_none_or(|l| l > 0) && self.cut_short.is_none() {
            self.cut_short = Some(why(self));
        }
    }

    /// Sends one block; false when the peer has gone.
    fn send_block(&mut self, buf: &[u8]) -> Result<bool> {
        let more = !self.ep.pingpong && self.left.is_none_or(|l| l > buf.len() as u64);
        let r = match &self.pipe {
            Some(p) => p.send(self.sock.as_raw_fd(), buf, more),
            None => self.send_stream(buf, more),
        };
        match r {
            Ok(()) => Ok(true),
            Err(e) if peer_gone(&e) => Ok(false),
            Err(e) if is_timeout(&e) => Err(self.fail(format!(
                "{} took no data for {}: it stopped reading (or the link is down)",
                self.peer,
                humantime::format_duration(self.timeout)
            ))),
            Err(e) => Err(self.fail(format!("sending to {}: {e}", self.peer))),
        }
    }

    fn send_stream(&self, buf: &[u8], more: bool) -> std::io::Result<()> {
        let flags = libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
        let mut off = 0;
        while off < buf.len() {
            match self.sock.send_with_flags(&buf[off..], flags) {
                Ok(n) => off += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Receives one block of a stream: its length, or less where the
    /// stream ended.
    fn recv_block(&mut self, buf: &mut [u8]) -> Result<usize> {
        let r = match &self.pipe {
            Some(p) => p.recv(self.sock.as_raw_fd(), buf),
            None => self.recv_stream(buf),
        };
        match r {
            Ok(n) => Ok(n),
            Err(e) if is_timeout(&e) => Err(self.fail(format!(
                "no data from {} for {}: the sender stopped without closing (or the link is down); raise --timeout if it pauses on purpose",
                self.peer,
                humantime::format_duration(self.timeout)
            ))),
            Err(e) => Err(self.fail(format!("receiving from {}: {e}", self.peer))),
        }
    }

    fn recv_stream(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut off = 0;
        while off < buf.len() {
            match (&self.sock).read(&mut buf[off..]) {
                Ok(0) => break,
                Ok(n) => off += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if peer_gone(&e) => break,
                Err(e) => return Err(e),
            }
        }
        Ok(off)
    }

    /// One block of a stream (tcp, unix) out, and with pingpong its echo back.
    fn write_stream(&mut self, buf: &mut [u8]) -> Result<usize> {
        if !self.send_block(buf)? {
            self.end(|n| {
                format!(
                    "{} closed the connection after {} sent; this job stopped there",
                    n.peer,
                    format_size(n.counts.bytes)
                )
            });
            return Ok(0);
        }
        if self.ep.pingpong && self.recv_block(buf)? < buf.len() {
            self.end(|n| format!(
                "{} closed the connection before echoing a block (pingpong); this job stopped there",
                n.peer
            ));
            return Ok(0);
        }
        Ok(buf.len())
    }

    /// One block of a stream in, and with pingpong echoed back.
    fn read_stream(&mut self, buf: &mut [u8]) -> Result<usize> {
        let n = self.recv_block(buf)?;
        let close = n == LINK_LEN && buf[..LINK_LEN] == close_msg();
        if n < buf.len() || close {
            let tail = if n == 0 || close {
                String::new()
            } else {
                format!(
                    "; its last {n} bytes, less than a block (bs={}), are not counted",
                    buf.len()
                )
            };
            self.end(|s| {
                format!(
                    "{} closed the stream after {}{tail}; this job stopped there",
                    s.peer,
                    format_size(s.counts.bytes)
                )
            });
            return Ok(0);
        }
        if self.ep.pingpong && !self.send_block(buf)? {
            self.end(|s| format!(
                "{} closed the connection before taking its echo (pingpong); this job stopped there",
                s.peer
            ));
            return Ok(0);
        }
        Ok(n)
    }

    /// Sends one datagram, stamped with fio's sequence trailer; with pingpong,
    /// waits for it to come back.
    fn write_datagram(&mut self, buf: &mut [u8]) -> Result<usize> {
        let len = buf.len();
        let seq = self.counts.datagrams;
        wire::stamp(buf, seq);
        if !self.send_datagram(buf)? {
            self.refused();
            return Ok(0);
        }
        self.counts.datagrams += 1;
        if self.ep.pingpong && !self.await_echo(buf, seq)? {
            return Ok(0);
        }
        Ok(len)
    }

    fn refused(&mut self) {
        self.end(|n| {
            format!(
                "{}'s port refused a datagram after {} sent: the receiver stopped (or went away); this job stopped there",
                n.peer, n.counts.datagrams
            )
        });
    }

    /// Sends one datagram whole; false when the receiver's port refused it.
    fn send_datagram(&self, buf: &[u8]) -> Result<bool> {
        loop {
            let r = match &self.send_to {
                Some(to) => self.sock.send_to(buf, to),
                None => self.sock.send(buf),
            };
            match r {
                Ok(_) => return Ok(true),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // The interface queue is full: wait for room, as fio does.
                Err(e) if errno_is(&e, &[libc::ENOBUFS]) => std::thread::yield_now(),
                Err(e) if errno_is(&e, &[libc::ECONNREFUSED]) => return Ok(false),
                Err(e) if is_timeout(&e) => {
                    return Err(self.fail(format!(
                        "could not send a datagram for {}",
                        humantime::format_duration(self.timeout)
                    )));
                }
                Err(e) => return Err(self.fail(format!("sending to {}: {e}", self.peer))),
            }
        }
    }

    /// Waits for the echo of datagram `seq` (pingpong), skipping stale
    /// echoes (an earlier block's, or a second reader's); false when the
    /// receiver went away. Until the first echo the receiver may not have
    /// joined yet — a multicast group refuses nothing, so nothing says so —
    /// and the datagram goes again every [`FIRST_ECHO_WAIT`] until the timeout.
    fn await_echo(&mut self, buf: &mut [u8], seq: u64) -> Result<bool> {
        let copy = (self.counts.echoes == 0).then(|| buf.to_vec());
        if copy.is_some() {
            self.sock
                .set_read_timeout(Some(FIRST_ECHO_WAIT))
                .map_err(|e| self.fail(format!("SO_RCVTIMEO: {e}")))?;
        }
        let deadline = Instant::now() + self.timeout;
        let got = loop {
            match self.sock.recv_with_flags(as_uninit(buf), libc::MSG_TRUNC) {
                Ok(n) if n == buf.len() && stamped_seq(buf).is_none_or(|s| s == seq) => {
                    break Ok(true);
                }
                // A stale echo, or a stray datagram of another size.
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if errno_is(&e, &[libc::ECONNREFUSED]) => {
                    self.refused();
                    break Ok(false);
                }
                Err(e) if is_timeout(&e) => match &copy {
                    Some(c) if Instant::now() < deadline => {
                        if !self.send_datagram(c)? {
                            self.refused();
                            break Ok(false);
                        }
                    }
                    _ => {
                        break Err(self.fail(format!(
                            "no echo from {} within {} (pingpong): the datagram or its echo was lost, or the receiver does not have pingpong set; set pingpong on both ends, or raise --timeout",
                            self.peer,
                            humantime::format_duration(self.timeout)
                        )));
                    }
                },
                Err(e) => break Err(self.fail(format!("receiving from {}: {e}", self.peer))),
            }
        };
        if copy.is_some() {
            self.sock
                .set_read_timeout(Some(self.timeout))
                .map_err(|e| self.fail(format!("SO_RCVTIMEO: {e}")))?;
        }
        if got.as_ref().is_ok_and(|g| *g) {
            self.counts.echoes += 1;
        }
        got
    }

    /// Receives one datagram of a block's size (the close message ends the
    /// stream); counts sequence gaps; with pingpong, sends it back.
    fn read_datagram(&mut self, buf: &mut [u8]) -> Result<usize> {
        loop {
            let (n, from) = match self
                .sock
                .recv_from_with_flags(as_uninit(buf), libc::MSG_TRUNC)
            {
                Ok(r) => r,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if is_timeout(&e) => {
                    let t = humantime::format_duration(self.timeout);
                    self.end(|n| format!(
                        "no datagram from {} for {t} and no close message (lost, or the sender stopped without one); this job stopped there",
                        n.peer
                    ));
                    return Ok(0);
                }
                Err(e) => return Err(self.fail(format!("receiving on {}: {e}", self.local))),
            };
            // fio's link messages: the close ends the stream (with bs under
            // 8 bytes its content cannot be seen; an 8-byte datagram then is
            // the close too), a repeated open is skipped.
            if n == LINK_LEN && buf.len() != LINK_LEN {
                if buf.len() < LINK_LEN || buf[..LINK_LEN] == close_msg() {
                    self.end(|s| {
                        format!(
                            "{} closed the stream after {} datagrams arrived",
                            s.peer, s.counts.datagrams
                        )
                    });
                    return Ok(0);
                }
                if buf[..LINK_LEN] == open_msg() {
                    continue;
                }
            }
            if n == LINK_LEN && buf[..LINK_LEN] == close_msg() {
                self.end(|s| {
                    format!(
                        "{} closed the stream after {} datagrams arrived",
                        s.peer, s.counts.datagrams
                    )
                });
                return Ok(0);
            }
            if n != buf.len() {
                return Err(self.fail(format!(
                    "received a {n}-byte datagram from {} where blocks are bs={}: set the same bs= on both ends",
                    show(&from),
                    buf.len()
                )));
            }
            // A pingpong sender sends its first block again while no echo
            // came back: echoed again, it is no new block.
            if self.ep.pingpong && stamped_seq(buf).is_some_and(|s| s < self.counts.next_seq) {
                let _ = self.sock.send_to(buf, &from);
                continue;
            }
            self.count_seq(buf);
            if self.ep.pingpong {
                match self.sock.send_to(buf, &from) {
                    Ok(_) => {}
                    Err(e) => {
                        return Err(self.fail(format!("echoing to {}: {e}", show(&from))));
                    }
                }
            }
            return Ok(n);
        }
    }

    /// A received datagram's place in the sender's sequence.
    fn count_seq(&mut self, buf: &[u8]) {
        self.counts.datagrams += 1;
        match stamped_seq(buf) {
            Some(seq) if seq >= self.counts.next_seq => {
                self.counts.lost += seq - self.counts.next_seq;
                self.counts.next_seq = seq + 1;
            }
            Some(_) => {
                self.counts.late += 1;
                self.counts.lost = self.counts.lost.saturating_sub(1);
            }
            None => self.counts.unstamped += 1,
        }
    }
}

impl Engine for Net {
    fn queue(&mut self, op: Op) -> Result<()> {
        // SAFETY: the slot's buffer is `op.len` bytes owned by the worker's
        // IoMemory, which outlives this synchronous call.
        let buf = unsafe { std::slice::from_raw_parts_mut(op.buf, op.len) };
        let n = if self.ended {
            0
        } else {
            match (op.dir, self.ep.proto.is_udp()) {
                (Dir::Write, false) => self.write_stream(buf)?,
                (Dir::Read, false) => self.read_stream(buf)?,
                (Dir::Write, true) => self.write_datagram(buf)?,
                (Dir::Read, true) => self.read_datagram(buf)?,
                // Refused before the job starts (engine::check).
                (Dir::Trim, _) => unreachable!("a socket has no trim"),
            }
        };
        self.counts.bytes += n as u64;
        if let Some(l) = &mut self.left {
            *l = l.saturating_sub(n as u64);
        }
        self.pending.push(Done {
            slot: op.slot,
            res: Ok(n),
        });
        Ok(())
    }

    fn reap(
        &mut self,
        _min: usize,
        _max: usize,
        _timeout: Duration,
        out: &mut Vec<Done>,
    ) -> Result<()> {
        out.append(&mut self.pending);
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn completion_detail(&self) -> String {
        let ep = &self.ep;
        let (me, how) = match (ep.sends, ep.role) {
            (true, Role::Listen) => (
                "sender",
                format!("listening on {}, peer {}", self.local, self.peer),
            ),
            (false, Role::Listen) => ("receiver", format!("on {}, peer {}", self.local, self.peer)),
            (true, Role::Connect) => ("sender", format!("to {} from {}", self.peer, self.local)),
            (false, Role::Connect) => (
                "receiver",
                format!("connected to {} from {}", self.peer, self.local),
            ),
        };
        let io = match (ep.proto.is_udp(), self.pipe.is_some()) {
            (true, _) => "one datagram of bs per I/O".to_string(),
            (false, true) => {
                "one block per I/O through a pipe: vmsplice and splice(2) out, splice(2) and read in"
                    .to_string()
            }
            (false, false) => format!(
                "one block per I/O, {}",
                match (ep.sends, ep.pingpong) {
                    (true, false) => "send() until whole (MSG_MORE while more follows)",
                    (true, true) => "send() until whole",
                    (false, _) => "recv() until whole",
                }
            ),
        };
        let mut d = format!("{} {me} {how}: {io}, blocking", ep.proto.name());
        if ep.pingpong {
            d.push_str("; pingpong: each I/O is a block and its echo (a round trip)");
        }
        if ep.proto.is_tcp() {
            d.push_str(if ep.nodelay {
                "; TCP_NODELAY on"
            } else {
                "; TCP_NODELAY off"
            });
        }
        let buf = if ep.sends {
            self.sock.send_buffer_size()
        } else {
            self.sock.recv_buffer_size()
        };
        if let Ok(b) = buf {
            d.push_str(&format!(
                "; {} {}",
                if ep.sends { "SO_SNDBUF" } else { "SO_RCVBUF" },
                approx_size(b as u64)
            ));
        }
        if let Some(g) = ep.group {
            d.push_str(&format!("; multicast group {g}, ttl {}", ep.ttl));
        }
        if ep.proto.is_udp() && !ep.sends {
            d.push_str(&format!(
                "; {} datagrams arrived, {} lost, {} late",
                self.counts.datagrams, self.counts.lost, self.counts.late
            ));
        }
        if ep.splice && self.pipe.is_none() {
            d.push_str("; netsplice runs as net here (splice is for tcp)");
        }
        d
    }

    fn device(&mut self) -> Option<serde_json::Value> {
        let mut v = serde_json::json!({
            "protocol": self.ep.proto.name(),
            "local": self.local,
            "peer": self.peer,
            "bytes": self.counts.bytes,
        });
        if self.ep.proto.is_udp() {
            v["datagrams"] = self.counts.datagrams.into();
            if !self.ep.sends {
                v["lost"] = self.counts.lost.into();
                v["late"] = self.counts.late.into();
            }
        }
        Some(serde_json::json!({ "net": v }))
    }

    fn ended(&self) -> bool {
        self.ended
    }

    fn warnings(&self) -> Vec<String> {
        let mut w = self.notes.clone();
        let c = &self.counts;
        if c.lost > 0 {
            w.push(format!(
                "{} of {} datagrams lost on the way (~{}): gaps in the sender's sequence numbers (a full socket buffer or the network; rate= on the sender or a larger window_size= loses fewer)",
                c.lost,
                c.lost + c.datagrams,
                approx_size(c.lost * (c.bytes / c.datagrams.max(1)))
            ));
        }
        if c.unstamped > 0 && !self.ep.sends {
            w.push(format!(
                "{} datagrams carried no fio sequence number, so losses among them are not counted",
                c.unstamped
            ));
        }
        if let Some(why) = &self.cut_short {
            w.push(why.clone());
        }
        w
    }
}

impl Drop for Net {
    /// A sender ends with fio's close message, so a fio receiver stops (a
    /// TCP receiver also sees the connection close); a UDP one is sent
    /// thrice, a little apart, as a datagram may be dropped.
    fn drop(&mut self) {
        if !self.ep.sends || self.ended {
            return;
        }
        let msg = close_msg();
        if self.ep.proto.is_udp() {
            for pause in [0, 5, 50] {
                std::thread::sleep(Duration::from_millis(pause));
                let _ = match &self.send_to {
                    Some(to) => self.sock.send_to(&msg, to),
                    None => self.sock.send(&msg),
                };
            }
        } else {
            let _ = self.sock.send_with_flags(&msg, libc::MSG_NOSIGNAL);
            let _ = self.sock.shutdown(std::net::Shutdown::Write);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_for_people() {
        assert_eq!(approx_size(4 << 20), "4M");
        assert_eq!(approx_size(258_391), "~252k");
        assert_eq!(approx_size(1000), "1000");
    }
}
