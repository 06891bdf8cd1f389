//! Opening a net job's socket: the binding end waits for its peer, the
//! connecting end retries while nothing listens yet — each for at most the
//! run's timeout, with one line naming the port and what to start when it
//! runs out.

use super::wire::{LINK_LEN, open_msg, stamped_seq};
use super::{as_uninit, errno_is, fail, is_timeout, show};
use crate::error::{Error, Result};
use crate::net::{Addr, Endpoint};
use socket2::{Domain, SockAddr, Socket, Type};
use std::io::ErrorKind;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long a UDP sender waits for a refusal (ICMP port unreachable) of its
/// opening message before taking the receiver as there.
const REFUSAL_WAIT: Duration = Duration::from_millis(20);
/// Pause between connection attempts while nothing listens yet.
const RETRY_PAUSE: Duration = Duration::from_millis(20);

/// Removes a Unix socket's path when dropped: the listener's file goes once
/// its one connection is made, or when the wait for it fails.
struct Unlink(PathBuf);

impl Drop for Unlink {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Waits until `fd` is readable, or `deadline`: false when it passed.
fn readable_by(fd: RawFd, deadline: Instant) -> std::io::Result<bool> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
        // SAFETY: one pollfd we own.
        match unsafe { libc::poll(&mut p, 1, ms) } {
            r if r > 0 => return Ok(true),
            0 => continue,
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
}

/// The host's address of the family the protocol uses.
fn resolve(host: &str, port: u16, v6: bool) -> std::result::Result<SocketAddr, String> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = (bare, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve hostname={host}: {e}; check the name"))?
        .collect();
    addrs
        .into_iter()
        .find(|a| a.is_ipv6() == v6)
        .ok_or_else(|| {
            if v6 {
                format!("hostname={host} has no IPv6 address; give one (as in ::1) or use protocol=tcp/udp")
            } else {
                format!("hostname={host} has no IPv4 address; give one or use protocol=tcpv6/udpv6")
            }
        })
}

/// What opening a job's socket needs and learns: the endpoint, and the
/// addresses and notes the report gives.
pub(super) struct Setup {
    pub ep: Endpoint,
    pub job: String,
    pub timeout: Duration,
    pub send_to: Option<SockAddr>,
    pub local: String,
    pub peer: String,
    pub notes: Vec<String>,
    /// The sequence number a late-started UDP receiver expects first.
    pub next_seq: u64,
}

impl Setup {
    pub(super) fn fail(&self, msg: impl std::fmt::Display) -> Error {
        fail(&self.job, msg)
    }

    /// The port or path, and the protocol, for messages.
    fn place(&self) -> String {
        match &self.ep.addr {
            Addr::Inet { port, .. } => format!("port {port} ({})", self.ep.proto.name()),
            Addr::Unix(p) => format!("{} (unix)", p.display()),
        }
    }

    /// What a waiting receiver needs started, for its timeout message.
    fn start_hint(&self) -> String {
        let proto = self.ep.proto.name();
        let rw = if self.ep.sends { "read" } else { "write" };
        match &self.ep.addr {
            Addr::Unix(p) => format!(
                "start the other end: a job with ioengine=net, protocol=unix, hostname={}, rw={rw} (or fio with the same options)",
                p.display()
            ),
            Addr::Inet { port, .. } => format!(
                "start the other end: a job with ioengine=net, protocol={proto}, hostname=THIS-HOST, port={port}, rw={rw} (or fio with the same options)"
            ),
        }
    }

    /// SO_RCVBUF/SO_SNDBUF, TCP_MAXSEG and TCP_NODELAY, before the socket
    /// connects or listens (a window is agreed on at the handshake).
    fn tune(&self, s: &Socket) -> Result<()> {
        let recv_side = !self.ep.sends || self.ep.pingpong;
        let send_side = self.ep.sends || self.ep.pingpong;
        if let Some(w) = self.ep.window_size {
            if recv_side {
                s.set_recv_buffer_size(w as usize)
                    .map_err(|e| self.fail(format!("window_size={w}: SO_RCVBUF: {e}")))?;
            }
            if send_side {
                s.set_send_buffer_size(w as usize)
                    .map_err(|e| self.fail(format!("window_size={w}: SO_SNDBUF: {e}")))?;
            }
        } else if self.ep.proto.is_udp() && recv_side {
            // Room for a burst: a receiver that is not scheduled drains nothing.
            let _ = s.set_recv_buffer_size(crate::transport::DATAGRAM_BUFFER as usize);
        }
        if let Some(m) = self.ep.mss {
            s.set_tcp_mss(m).map_err(|e| {
                self.fail(format!(
                    "mss={m}: TCP_MAXSEG: {e} (Linux takes 88 to 32767)"
                ))
            })?;
        }
        self.nodelay(s)
    }

    fn nodelay(&self, s: &Socket) -> Result<()> {
        if self.ep.nodelay && self.ep.proto.is_tcp() {
            s.set_tcp_nodelay(true)
                .map_err(|e| self.fail(format!("nodelay: TCP_NODELAY: {e}")))?;
        }
        Ok(())
    }

    /// Waits for one connection on `l`, for at most the timeout.
    fn accept_one(&mut self, l: &Socket) -> Result<Socket> {
        let deadline = Instant::now() + self.timeout;
        loop {
            let ready = readable_by(l.as_raw_fd(), deadline)
                .map_err(|e| self.fail(format!("waiting for a connection: {e}")))?;
            if !ready {
                return Err(self.fail(format!(
                    "nobody connected to {} within {}; {}, or raise --timeout",
                    self.place(),
                    humantime::format_duration(self.timeout),
                    self.start_hint()
                )));
            }
            match l.accept() {
                Ok((s, from)) => {
                    // A Unix client is unnamed: its path is the listener's.
                    if from.as_socket().is_some() {
                        self.peer = show(&from);
                    }
                    return Ok(s);
                }
                Err(e)
                    if e.kind() == ErrorKind::Interrupted
                        || errno_is(&e, &[libc::EAGAIN, libc::ECONNABORTED]) =>
                {
                    continue;
                }
                Err(e) => return Err(self.fail(format!("accept on {}: {e}", self.place()))),
            }
        }
    }

    fn in_use(&self, e: &std::io::Error) -> Error {
        if errno_is(e, &[libc::EADDRINUSE]) {
            self.fail(format!(
                "{} is already in use on this machine; pick another port= (or stop what holds it)",
                self.place()
            ))
        } else {
            self.fail(format!("binding {}: {e}", self.place()))
        }
    }

    pub(super) fn accept_tcp(&mut self) -> Result<Socket> {
        let Addr::Inet { port, .. } = self.ep.addr else {
            unreachable!("tcp has a port")
        };
        let (domain, any) = if self.ep.proto.is_v6() {
            (
                Domain::IPV6,
                SocketAddr::from((Ipv6Addr::UNSPECIFIED, port)),
            )
        } else {
            (
                Domain::IPV4,
                SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)),
            )
        };
        let l = Socket::new(domain, Type::STREAM, None)
            .map_err(|e| self.fail(format!("socket: {e}")))?;
        // A port in TIME_WAIT from the last run is free to bind again.
        l.set_reuse_address(true)
            .map_err(|e| self.fail(format!("SO_REUSEADDR: {e}")))?;
        self.tune(&l)?;
        l.bind(&any.into()).map_err(|e| self.in_use(&e))?;
        l.listen(10)
            .map_err(|e| self.fail(format!("listen on {}: {e}", self.place())))?;
        self.local = any.to_string();
        let s = self.accept_one(&l)?;
        self.nodelay(&s)?;
        Ok(s)
    }

    pub(super) fn accept_unix(&mut self) -> Result<Socket> {
        let Addr::Unix(path) = self.ep.addr.clone() else {
            unreachable!("unix has a path")
        };
        use std::os::unix::fs::FileTypeExt;
        match std::fs::symlink_metadata(&path) {
            // A socket left by an earlier run (fio leaves its own).
            Ok(m) if m.file_type().is_socket() => {
                let _ = std::fs::remove_file(&path);
            }
            Ok(_) => {
                return Err(self.fail(format!(
                    "{} exists and is not a socket; name a free path in hostname=",
                    path.display()
                )));
            }
            Err(_) => {}
        }
        let l = Socket::new(Domain::UNIX, Type::STREAM, None)
            .map_err(|e| self.fail(format!("socket(AF_UNIX): {e}")))?;
        self.tune(&l)?;
        let addr = SockAddr::unix(&path)
            .map_err(|e| self.fail(format!("hostname={}: {e}", path.display())))?;
        l.bind(&addr)
            .map_err(|e| self.fail(format!("binding {}: {e}", path.display())))?;
        let _unlink = Unlink(path.clone());
        l.listen(10)
            .map_err(|e| self.fail(format!("listen on {}: {e}", path.display())))?;
        self.local = path.display().to_string();
        self.peer = format!("the client of {}", path.display());
        self.accept_one(&l)
    }

    /// Connects a stream socket (tcp, tcpv6, unix), retrying while nothing
    /// listens yet, for at most the timeout.
    pub(super) fn connect_stream(&mut self) -> Result<Socket> {
        let (domain, addr): (Domain, SockAddr) = match &self.ep.addr {
            Addr::Unix(p) => (
                Domain::UNIX,
                SockAddr::unix(p)
                    .map_err(|e| self.fail(format!("hostname={}: {e}", p.display())))?,
            ),
            Addr::Inet { host, port } => {
                let host = host.as_deref().unwrap_or_default();
                let a = resolve(host, *port, self.ep.proto.is_v6()).map_err(|m| self.fail(m))?;
                (Domain::for_address(a), a.into())
            }
        };
        self.peer = show(&addr);
        let deadline = Instant::now() + self.timeout;
        loop {
            let s = Socket::new(domain, Type::STREAM, None)
                .map_err(|e| self.fail(format!("socket: {e}")))?;
            self.tune(&s)?;
            let left = deadline.saturating_duration_since(Instant::now());
            let r = s.connect_timeout(&addr, left.max(Duration::from_millis(1)));
            match r {
                Ok(()) => {
                    self.local = match s.local_addr() {
                        Ok(a) if a.as_socket().is_some() => show(&a),
                        _ => "an unnamed socket".into(),
                    };
                    return Ok(s);
                }
                // Nothing listens yet (a receiver starting at the same time):
                // try again until the timeout.
                Err(e)
                    if errno_is(&e, &[libc::ECONNREFUSED, libc::ENOENT])
                        && Instant::now() + RETRY_PAUSE < deadline =>
                {
                    std::thread::sleep(RETRY_PAUSE);
                }
                Err(e) if errno_is(&e, &[libc::ECONNREFUSED, libc::ENOENT]) || is_timeout(&e) => {
                    return Err(self.fail(format!(
                        "nothing accepted a connection at {} within {} ({e}); start the receiver first ({}), or raise --timeout",
                        self.peer,
                        humantime::format_duration(self.timeout),
                        self.receiver_hint()
                    )));
                }
                Err(e) => {
                    return Err(self.fail(format!("connecting to {}: {e}", self.peer)));
                }
            }
        }
    }

    /// What a sender needs listening, for its timeout message.
    fn receiver_hint(&self) -> String {
        let rw = if self.ep.sends { "read" } else { "write" };
        match &self.ep.addr {
            Addr::Unix(p) => format!(
                "a job with ioengine=net, protocol=unix, hostname={}, rw={rw}",
                p.display()
            ),
            Addr::Inet { port, .. } if self.ep.proto.is_tcp() => format!(
                "a job with ioengine=net, listen, port={port}, protocol={}, rw={rw}, or fio --ioengine=net --listen --port={port}",
                self.ep.proto.name()
            ),
            Addr::Inet { port, .. } => format!(
                "a job with ioengine=net, port={port}, protocol={}, rw=read",
                self.ep.proto.name()
            ),
        }
    }

    /// A UDP receiver: binds the port (joining the multicast group, if
    /// any) and waits for the sender's opening message.
    pub(super) fn bind_udp(&mut self, bs: usize) -> Result<Socket> {
        let Addr::Inet { port, .. } = self.ep.addr else {
            unreachable!("udp has a port")
        };
        let v6 = self.ep.proto.is_v6();
        let s = Socket::new(
            if v6 { Domain::IPV6 } else { Domain::IPV4 },
            Type::DGRAM,
            None,
        )
        .map_err(|e| self.fail(format!("socket: {e}")))?;
        s.set_reuse_address(true)
            .map_err(|e| self.fail(format!("SO_REUSEADDR: {e}")))?;
        if self.ep.group.is_some() {
            // Several readers of one group share its port (fio's multicast example).
            s.set_reuse_port(true)
                .map_err(|e| self.fail(format!("SO_REUSEPORT: {e}")))?;
        }
        self.tune(&s)?;
        let at: SocketAddr = match (self.ep.group, v6) {
            (Some(g), _) => SocketAddrV4::new(g, port).into(),
            (None, true) => (Ipv6Addr::UNSPECIFIED, port).into(),
            (None, false) => (Ipv4Addr::UNSPECIFIED, port).into(),
        };
        s.bind(&at.into()).map_err(|e| self.in_use(&e))?;
        if let Some(g) = self.ep.group {
            let via = self.ep.interface.unwrap_or(Ipv4Addr::UNSPECIFIED);
            s.join_multicast_v4(&g, &via)
                .map_err(|e| self.fail(format!("joining multicast group {g} via {via}: {e}")))?;
        }
        self.local = at.to_string();
        // The sender's opening message (fio waits for it too); a data
        // datagram first means this receiver started late and missed it.
        let deadline = Instant::now() + self.timeout;
        let mut buf = vec![0u8; bs.max(LINK_LEN)];
        loop {
            if !readable_by(s.as_raw_fd(), deadline)
                .map_err(|e| self.fail(format!("waiting for the sender: {e}")))?
            {
                return Err(self.fail(format!(
                    "no sender on {} within {}; {}, or raise --timeout",
                    self.place(),
                    humantime::format_duration(self.timeout),
                    self.start_hint()
                )));
            }
            let (n, from) = match s.recv_from_with_flags(as_uninit(&mut buf), libc::MSG_TRUNC) {
                Ok(r) => r,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.fail(format!("receiving on {}: {e}", self.place()))),
            };
            if n == LINK_LEN && buf[..LINK_LEN] == open_msg() {
                self.peer = show(&from);
                return Ok(s);
            }
            if n == bs {
                self.peer = show(&from);
                self.notes.push(
                    "this receiver started after its sender and missed its opening message; datagrams sent before it bound count as lost"
                        .into(),
                );
                // The one in hand is not a block of this job's either.
                if let Some(seq) = stamped_seq(&buf[..n]) {
                    self.next_seq = seq;
                }
                return Ok(s);
            }
            // Anything else (a late close from an earlier sender) is not a start.
        }
    }

    /// A UDP sender: connects to the receiver (or aims at the multicast
    /// group) and announces itself, until the receiver stops refusing.
    pub(super) fn udp_sender(&mut self) -> Result<Socket> {
        let Addr::Inet { host, port } = self.ep.addr.clone() else {
            unreachable!("udp has a port")
        };
        let dst = resolve(
            host.as_deref().unwrap_or_default(),
            port,
            self.ep.proto.is_v6(),
        )
        .map_err(|m| self.fail(m))?;
        self.peer = dst.to_string();
        let s = Socket::new(Domain::for_address(dst), Type::DGRAM, None)
            .map_err(|e| self.fail(format!("socket: {e}")))?;
        self.tune(&s)?;
        if self.ep.group.is_some() {
            s.set_multicast_ttl_v4(self.ep.ttl)
                .map_err(|e| self.fail(format!("ttl={}: IP_MULTICAST_TTL: {e}", self.ep.ttl)))?;
            if let Some(i) = self.ep.interface {
                s.set_multicast_if_v4(&i)
                    .map_err(|e| self.fail(format!("interface={i}: IP_MULTICAST_IF: {e}")))?;
            }
            self.send_to = Some(dst.into());
        } else {
            // Connected, so a port nobody has bound answers with a refusal.
            s.connect(&dst.into())
                .map_err(|e| self.fail(format!("connecting to {dst}: {e}")))?;
        }
        let deadline = Instant::now() + self.timeout;
        loop {
            let sent = match &self.send_to {
                Some(to) => s.send_to(&open_msg(), to),
                None => s.send(&open_msg()),
            };
            let refused = match sent {
                Ok(_) => self.send_to.is_none() && refused_within(&s, REFUSAL_WAIT),
                Err(e) if errno_is(&e, &[libc::ECONNREFUSED]) => true,
                Err(e) => return Err(self.fail(format!("sending to {dst}: {e}"))),
            };
            if !refused {
                break;
            }
            if Instant::now() + RETRY_PAUSE >= deadline {
                return Err(self.fail(format!(
                    "nothing received on {dst} (udp) within {}: its port refused every datagram; start the receiver first ({}), or raise --timeout",
                    humantime::format_duration(self.timeout),
                    self.receiver_hint()
                )));
            }
            std::thread::sleep(RETRY_PAUSE);
        }
        self.local = s.local_addr().map(|a| show(&a)).unwrap_or_default();
        Ok(s)
    }
}

/// Whether a connected UDP socket's last datagram was refused (ICMP port
/// unreachable), waiting at most `wait` for the answer.
fn refused_within(s: &Socket, wait: Duration) -> bool {
    let mut p = libc::pollfd {
        fd: s.as_raw_fd(),
        events: 0, // errors only
        revents: 0,
    };
    // SAFETY: one pollfd we own.
    unsafe { libc::poll(&mut p, 1, wait.as_millis() as libc::c_int) };
    matches!(s.take_error(), Ok(Some(e)) if errno_is(&e, &[libc::ECONNREFUSED]))
}
