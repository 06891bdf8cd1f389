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

use super::{Dir, Done, Engine, Op};
use crate::error::{Error, Result};
use crate::stream::job::Job;
use crate::stream::net::{Addr, Endpoint, Proto, Role};
use crate::units::format_size;
use socket2::{Domain, SockAddr, Socket, Type};
use std::io::{ErrorKind, Read};
use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, ToSocketAddrs};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// fio's link messages (engines/net.c), 8 bytes each: magic then command.
/// fio writes OPEN's words big-endian and CLOSE's little-endian.
const LINK_MAGIC: u32 = 0x6c69_6e6b;
const LINK_OPEN: u32 = 0x98;
const LINK_CLOSE: u32 = 0x89;
const LINK_LEN: usize = 8;
/// fio's UDP sequence trailer: magic, sequence number, block size, each a
/// little-endian u64, in a datagram's last 24 bytes.
const SEQ_MAGIC: u64 = 0x6573_7571_6e55_6563;
const SEQ_LEN: usize = 24;

fn open_msg() -> [u8; LINK_LEN] {
    let mut m = [0; LINK_LEN];
    m[..4].copy_from_slice(&LINK_MAGIC.to_be_bytes());
    m[4..].copy_from_slice(&LINK_OPEN.to_be_bytes());
    m
}

fn close_msg() -> [u8; LINK_LEN] {
    let mut m = [0; LINK_LEN];
    m[..4].copy_from_slice(&LINK_MAGIC.to_le_bytes());
    m[4..].copy_from_slice(&LINK_CLOSE.to_le_bytes());
    m
}

/// How long a UDP sender waits for a refusal (ICMP port unreachable) of its
/// opening message before taking the receiver as there.
const REFUSAL_WAIT: Duration = Duration::from_millis(20);
/// How long a UDP pingpong sender waits for its first echo before sending
/// the datagram again (the receiver may not have joined its group yet).
const FIRST_ECHO_WAIT: Duration = Duration::from_millis(100);
/// Pause between connection attempts while nothing listens yet.
const RETRY_PAUSE: Duration = Duration::from_millis(20);

/// A pipe that `netsplice` moves TCP blocks through.
struct Pipe {
    r: OwnedFd,
    w: OwnedFd,
    /// Its capacity: blocks move in pieces of at most this.
    cap: usize,
}

impl Pipe {
    fn new(bs: usize) -> std::io::Result<Pipe> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two fds into the array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both fds are fresh and ours.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // A block in one piece where the pipe can grow to it (best effort:
        // fs.pipe-max-size bounds it; the default is 64 KiB).
        let want = bs.next_multiple_of(4096).min(1 << 20) as libc::c_int;
        // SAFETY: fcntl on a pipe we hold.
        unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, want) };
        // SAFETY: as above.
        let cap = unsafe { libc::fcntl(w.as_raw_fd(), libc::F_GETPIPE_SZ) };
        Ok(Pipe {
            r,
            w,
            cap: usize::try_from(cap).unwrap_or(0).max(4096),
        })
    }
}

/// Removes a Unix socket's path when dropped: the listener's file goes once
/// its one connection is made, or when the wait for it fails.
struct Unlink(PathBuf);

impl Drop for Unlink {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

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

/// Reads into initialised bytes through socket2's uninitialised-buffer API.
fn as_uninit(buf: &mut [u8]) -> &mut [MaybeUninit<u8>] {
    // SAFETY: initialised bytes are valid MaybeUninit<u8>, and the socket
    // only writes bytes into them.
    unsafe { &mut *(buf as *mut [u8] as *mut [MaybeUninit<u8>]) }
}

/// What opening a job's socket needs and learns: the endpoint, and the
/// addresses and notes the report gives.
struct Setup {
    ep: Endpoint,
    job: String,
    timeout: Duration,
    send_to: Option<SockAddr>,
    local: String,
    peer: String,
    notes: Vec<String>,
    /// The sequence number a late-started UDP receiver expects first.
    next_seq: u64,
}

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

impl Setup {
    fn fail(&self, msg: impl std::fmt::Display) -> Error {
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

    fn accept_tcp(&mut self) -> Result<Socket> {
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

    fn accept_unix(&mut self) -> Result<Socket> {
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
    fn connect_stream(&mut self) -> Result<Socket> {
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
    fn bind_udp(&mut self, bs: usize) -> Result<Socket> {
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
    fn udp_sender(&mut self) -> Result<Socket> {
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
        let r = if self.pipe.is_some() {
            self.splice_out(buf, more)
        } else {
            self.send_stream(buf, more)
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

    /// `netsplice`: the block is mapped into the pipe (vmsplice) and the
    /// pipe spliced into the socket, a pipeful at a time.
    fn splice_out(&self, buf: &[u8], more: bool) -> std::io::Result<()> {
        let Some(p) = &self.pipe else {
            return self.send_stream(buf, more);
        };
        let mut off = 0;
        while off < buf.len() {
            let chunk = (buf.len() - off).min(p.cap);
            let mut put = 0;
            while put < chunk {
                let iov = libc::iovec {
                    iov_base: buf[off + put..].as_ptr() as *mut libc::c_void,
                    iov_len: chunk - put,
                };
                // SAFETY: the iovec covers live bytes of `buf`; the pipe is ours.
                let r = unsafe { libc::vmsplice(p.w.as_raw_fd(), &iov, 1, 0) };
                if r < 0 {
                    let e = std::io::Error::last_os_error();
                    if e.kind() != ErrorKind::Interrupted {
                        return Err(e);
                    }
                    continue;
                }
                put += r as usize;
            }
            let mut sent = 0;
            let last = off + chunk == buf.len();
            let flags = libc::SPLICE_F_MOVE
                | if more || !last {
                    libc::SPLICE_F_MORE
                } else {
                    0
                };
            while sent < chunk {
                // SAFETY: splicing between fds we hold, no offsets.
                let r = unsafe {
                    libc::splice(
                        p.r.as_raw_fd(),
                        std::ptr::null_mut(),
                        self.sock.as_raw_fd(),
                        std::ptr::null_mut(),
                        chunk - sent,
                        flags,
                    )
                };
                if r < 0 {
                    let e = std::io::Error::last_os_error();
                    if e.kind() != ErrorKind::Interrupted {
                        return Err(e);
                    }
                    continue;
                }
                sent += r as usize;
            }
            off += chunk;
        }
        Ok(())
    }

    /// Receives one block of a stream: its length, or less where the
    /// stream ended.
    fn recv_block(&mut self, buf: &mut [u8]) -> Result<usize> {
        let r = if self.pipe.is_some() {
            self.splice_in(buf)
        } else {
            self.recv_stream(buf)
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

    /// `netsplice`: the socket is spliced into the pipe and the pipe read
    /// into the block (fio maps it back with vmsplice, which copies as well).
    fn splice_in(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        let Some(p) = &self.pipe else {
            return self.recv_stream(buf);
        };
        let mut off = 0;
        while off < buf.len() {
            let want = (buf.len() - off).min(p.cap);
            // SAFETY: splicing between fds we hold, no offsets.
            let r = unsafe {
                libc::splice(
                    self.sock.as_raw_fd(),
                    std::ptr::null_mut(),
                    p.w.as_raw_fd(),
                    std::ptr::null_mut(),
                    want,
                    libc::SPLICE_F_MOVE,
                )
            };
            if r < 0 {
                let e = std::io::Error::last_os_error();
                match e.kind() {
                    ErrorKind::Interrupted => continue,
                    _ if peer_gone(&e) => break,
                    _ => return Err(e),
                }
            }
            if r == 0 {
                break;
            }
            let got = r as usize;
            let mut drained = 0;
            while drained < got {
                let dst = &mut buf[off + drained..off + got];
                // SAFETY: reading into live bytes of `buf` from our pipe.
                let k = unsafe { libc::read(p.r.as_raw_fd(), dst.as_mut_ptr().cast(), dst.len()) };
                if k < 0 {
                    let e = std::io::Error::last_os_error();
                    if e.kind() != ErrorKind::Interrupted {
                        return Err(e);
                    }
                    continue;
                }
                drained += k as usize;
            }
            off += got;
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
        if len >= SEQ_LEN {
            let t = len - SEQ_LEN;
            buf[t..t + 8].copy_from_slice(&SEQ_MAGIC.to_le_bytes());
            buf[t + 8..t + 16].copy_from_slice(&seq.to_le_bytes());
            buf[t + 16..t + 24].copy_from_slice(&(len as u64).to_le_bytes());
        }
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

/// fio's sequence number in a datagram's trailer, if it carries one for
/// its own length.
fn stamped_seq(b: &[u8]) -> Option<u64> {
    let t = b.len().checked_sub(SEQ_LEN)?;
    let word = |i: usize| u64::from_le_bytes(b[t + i..t + i + 8].try_into().unwrap_or([0; 8]));
    (word(0) == SEQ_MAGIC && word(16) == b.len() as u64).then(|| word(8))
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

    fn reap(&mut self, _min: usize, _timeout: Duration, out: &mut Vec<Done>) -> Result<()> {
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
    fn link_messages_are_fios() {
        // fio writes OPEN with htonl and CLOSE with cpu_to_le32.
        assert_eq!(open_msg(), [0x6c, 0x69, 0x6e, 0x6b, 0, 0, 0, 0x98]);
        assert_eq!(close_msg(), [0x6b, 0x6e, 0x69, 0x6c, 0x89, 0, 0, 0]);
    }

    #[test]
    fn sizes_for_people() {
        assert_eq!(approx_size(4 << 20), "4M");
        assert_eq!(approx_size(258_391), "~252k");
        assert_eq!(approx_size(1000), "1000");
    }

    #[test]
    fn sequence_trailer_round_trips() {
        let mut b = vec![7u8; 64];
        let t = b.len() - SEQ_LEN;
        b[t..t + 8].copy_from_slice(&SEQ_MAGIC.to_le_bytes());
        b[t + 8..t + 16].copy_from_slice(&41u64.to_le_bytes());
        b[t + 16..].copy_from_slice(&64u64.to_le_bytes());
        assert_eq!(stamped_seq(&b), Some(41));
        // Another length than the datagram's own: not a trailer.
        assert_eq!(stamped_seq(&b[..60]), None);
        assert_eq!(stamped_seq(&[0u8; 10]), None);
    }
}
