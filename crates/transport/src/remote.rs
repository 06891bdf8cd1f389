//! `tcp://HOST:PORT` and `udp://HOST:PORT`: a responder on another machine,
//! run by `xferbench serve`. Before any measurement the two ends shake hands
//! over TCP (see `docs/protocol.md`): the client says which protocol it
//! speaks, whether it wants a UDP session, the largest message it will use
//! and, if the server wants one, the shared token; the server answers with a
//! status. Then the link speaks the same control and data protocol as a
//! local `tcp` responder, over a socket whose every read and write has the
//! link's timeout. A UDP session learns its port and cookie over that TCP
//! connection, which is what proves the client's address: a datagram from
//! anywhere else, or without the cookie, draws nothing.

use super::fd::{FdLink, Framing};
use crate::error::{Error, Result};
use crate::link::{BufferMode, Capabilities, CompletionMode, Link, LinkConfig, Transport};
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// First four bytes of every hello and welcome.
pub const MAGIC: [u8; 4] = *b"XBS1";
/// The handshake protocol version this build speaks: 2 set UDP sessions up
/// over TCP, with a cookie in every datagram.
pub const VERSION: u32 = 2;
/// The longest token either end accepts; checked before it is read.
pub const MAX_TOKEN: usize = 256;
/// Bytes of a hello's fixed header, before the token.
pub const HELLO_LEN: usize = 24;
/// Bytes of a welcome.
pub const WELCOME_LEN: usize = 16;
/// Bytes of the UDP grant that follows an accepting welcome to a hello
/// asking for a UDP session: the session's port and cookie.
pub const GRANT_LEN: usize = 16;
/// The hello's flag asking for a UDP session.
pub const FLAG_UDP: u32 = 1;
/// The scheme that names a remote responder in `-t`.
pub const SCHEME: &str = "tcp://";
/// The environment variable holding the token itself.
pub const TOKEN_ENV: &str = "XFERBENCH_TOKEN";
/// The environment variable naming a file that holds the token: unlike the
/// token itself on a command line, neither shows in `ps`.
pub const TOKEN_FILE_ENV: &str = "XFERBENCH_TOKEN_FILE";

/// What the server answers to a hello.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Status {
    /// Accepted: the session begins.
    Ok = 0,
    /// The client speaks another protocol version.
    BadVersion = 1,
    /// The token is wrong or missing.
    BadToken = 2,
    /// The client's largest message is over the server's `--max-message`.
    TooLarge = 3,
    /// The server already serves `--max-sessions` clients, or this
    /// client's address already holds its `--max-per-address` share.
    Busy = 4,
    /// Wrong tokens came from this address lately, and its next check is
    /// further off than the server makes anyone wait: not checked.
    Throttled = 5,
}

impl Status {
    fn from_u32(v: u32) -> Option<Status> {
        Some(match v {
            0 => Status::Ok,
            1 => Status::BadVersion,
            2 => Status::BadToken,
            3 => Status::TooLarge,
            4 => Status::Busy,
            5 => Status::Throttled,
            _ => return None,
        })
    }

    /// What the status means to the user, and the fix.
    pub fn reason(self) -> &'static str {
        match self {
            Status::Ok => "accepted",
            Status::BadVersion => {
                "the server speaks another protocol version; use the same xferbench version on both ends"
            }
            Status::BadToken => {
                "wrong or missing token; set XFERBENCH_TOKEN_FILE (a file holding the server's token) or XFERBENCH_TOKEN"
            }
            Status::TooLarge => {
                "messages this large are over the server's --max-message; use smaller sizes or raise it"
            }
            Status::Busy => {
                "the server is at its --max-sessions, or this address at its --max-per-address; try again later"
            }
            Status::Throttled => {
                "too many wrong tokens from this address lately, so the server spaces out its checks; fix XFERBENCH_TOKEN_FILE or XFERBENCH_TOKEN and try again in a few seconds"
            }
        }
    }
}

/// The client's first frame: magic, version, largest message, token length,
/// flags, then the token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    /// The protocol version the client speaks.
    pub version: u32,
    /// The largest message, bytes, the client will ask for.
    pub max_message: u64,
    /// `FLAG_UDP` for a UDP session; no other bit is known (a server
    /// answers an unknown one as another version).
    pub flags: u32,
    /// The shared token (empty when the client has none).
    pub token: Vec<u8>,
}

impl Hello {
    /// The hello as sent: the 24-byte header, then the token.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(HELLO_LEN + self.token.len());
        b.extend_from_slice(&MAGIC);
        b.extend_from_slice(&self.version.to_le_bytes());
        b.extend_from_slice(&self.max_message.to_le_bytes());
        b.extend_from_slice(&(self.token.len() as u32).to_le_bytes());
        b.extend_from_slice(&self.flags.to_le_bytes());
        b.extend_from_slice(&self.token);
        b
    }

    /// Whether the client asks for a UDP session.
    pub fn udp(&self) -> bool {
        self.flags & FLAG_UDP != 0
    }

    /// Parses the fixed header; returns the version, largest message, token
    /// length and flags, refusing a bad magic or an over-long token before
    /// anything is allocated.
    pub fn parse_header(
        h: &[u8; HELLO_LEN],
    ) -> std::result::Result<(u32, u64, usize, u32), String> {
        if h[..4] != MAGIC {
            return Err("not an xferbench client (bad magic)".into());
        }
        let word = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let version = word(4);
        let max = u64::from_le_bytes(h[8..16].try_into().expect("8 bytes"));
        let token_len = word(16) as usize;
        if token_len > MAX_TOKEN {
            return Err(format!(
                "token of {token_len} bytes (the limit is {MAX_TOKEN})"
            ));
        }
        Ok((version, max, token_len, word(20)))
    }

    /// Reads a hello from `r` (which has a timeout).
    pub fn read(r: &mut impl Read) -> std::result::Result<Hello, String> {
        let mut h = [0u8; HELLO_LEN];
        r.read_exact(&mut h)
            .map_err(|e| format!("reading the hello: {e}"))?;
        let (version, max_message, n, flags) = Hello::parse_header(&h)?;
        let mut token = vec![0u8; n];
        r.read_exact(&mut token)
            .map_err(|e| format!("reading the token: {e}"))?;
        Ok(Hello {
            version,
            max_message,
            flags,
            token,
        })
    }
}

/// The server's answer: magic, status, and its largest message.
pub fn welcome(status: Status, max_message: u64) -> [u8; WELCOME_LEN] {
    let mut b = [0u8; WELCOME_LEN];
    b[..4].copy_from_slice(&MAGIC);
    b[4..8].copy_from_slice(&(status as u32).to_le_bytes());
    b[8..16].copy_from_slice(&max_message.to_le_bytes());
    b
}

/// The status and the server's largest message from a welcome; `None` for a
/// bad magic or an unknown status.
pub fn parse_welcome(b: &[u8; WELCOME_LEN]) -> Option<(Status, u64)> {
    if b[..4] != MAGIC {
        return None;
    }
    let status = Status::from_u32(u32::from_le_bytes(b[4..8].try_into().ok()?))?;
    Some((status, u64::from_le_bytes(b[8..16].try_into().ok()?)))
}

/// A UDP session's grant: its port on the server, and its cookie.
pub fn grant(port: u16, cookie: &[u8; COOKIE_LEN]) -> [u8; GRANT_LEN] {
    let mut b = [0u8; GRANT_LEN];
    b[..4].copy_from_slice(&u32::from(port).to_le_bytes());
    b[8..].copy_from_slice(cookie);
    b
}

/// The port and cookie from a grant; `None` for a port of 0 or above 65535,
/// or a reserved word that is not 0.
pub fn parse_grant(b: &[u8; GRANT_LEN]) -> Option<(u16, [u8; COOKIE_LEN])> {
    let port = u32::from_le_bytes(b[..4].try_into().ok()?);
    if port == 0 || b[4..8] != [0u8; 4] {
        return None;
    }
    Some((u16::try_from(port).ok()?, b[8..].try_into().ok()?))
}

/// A fresh cookie from the kernel's random source: an address that can
/// send datagrams but never saw the TCP connection cannot guess it.
pub fn new_cookie() -> std::io::Result<[u8; COOKIE_LEN]> {
    let mut c = [0u8; COOKIE_LEN];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut c)?;
    Ok(c)
}

/// A token and where it came from, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// Its bytes (a file's less its final line end).
    pub bytes: Vec<u8>,
    /// Where it came from, as a message names it (`--token-file F`,
    /// `XFERBENCH_TOKEN`, …).
    pub source: String,
    /// A file's permission bits, so a server can warn of one others can read.
    pub mode: Option<u32>,
}

/// Reads a token from a file: at most `MAX_TOKEN` bytes, less one final
/// line end (`echo` and editors add one). Only a regular file: a FIFO or a
/// device would block or never end.
pub fn token_file(path: &Path, source: String) -> Result<Token> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let bad = |why: String| Error::usage(format!("{source}: {why}"));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| bad(format!("cannot read {}: {e}", path.display())).with_source(e))?;
    let meta = f
        .metadata()
        .map_err(|e| bad(format!("cannot read {}: {e}", path.display())).with_source(e))?;
    if !meta.is_file() {
        return Err(bad(format!(
            "{} is not a regular file; put the token in one",
            path.display()
        )));
    }
    let mut bytes = Vec::new();
    f.take(MAX_TOKEN as u64 + 3)
        .read_to_end(&mut bytes)
        .map_err(|e| bad(format!("cannot read {}: {e}", path.display())).with_source(e))?;
    if bytes.ends_with(b"\n") {
        bytes.pop();
        if bytes.ends_with(b"\r") {
            bytes.pop();
        }
    }
    if bytes.len() > MAX_TOKEN {
        return Err(bad(format!(
            "the token in {} is longer than {MAX_TOKEN} bytes",
            path.display()
        )));
    }
    if bytes.is_empty() {
        return Err(bad(format!("{} holds no token", path.display())));
    }
    Ok(Token {
        bytes,
        source,
        mode: Some(meta.mode() & 0o7777),
    })
}

/// The token the environment gives: the file `XFERBENCH_TOKEN_FILE` names,
/// or `XFERBENCH_TOKEN` itself (both set is refused: which one was meant is
/// not for this end to guess). An empty variable counts as unset.
pub fn env_token() -> Result<Option<Token>> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    match (var(TOKEN_FILE_ENV), var(TOKEN_ENV)) {
        (Some(_), Some(_)) => Err(Error::usage(format!(
            "both {TOKEN_FILE_ENV} and {TOKEN_ENV} are set; unset one"
        ))),
        (Some(path), None) => {
            let p = Path::new(&path);
            token_file(p, format!("{TOKEN_FILE_ENV} {}", p.display())).map(Some)
        }
        (None, Some(t)) => {
            use std::os::unix::ffi::OsStrExt;
            if t.len() > MAX_TOKEN {
                return Err(Error::usage(format!(
                    "{TOKEN_ENV} is longer than {MAX_TOKEN} bytes"
                )));
            }
            Ok(Some(Token {
                bytes: t.as_bytes().to_vec(),
                source: TOKEN_ENV.into(),
                mode: None,
            }))
        }
        (None, None) => Ok(None),
    }
}

/// A remote responder over TCP or UDP.
pub struct Remote {
    udp: bool,
}

/// The remote transport over TCP (`tcp://HOST:PORT`).
pub static REMOTE: Remote = Remote { udp: false };
/// The remote transport over UDP (`udp://HOST:PORT`).
pub static REMOTE_UDP: Remote = Remote { udp: true };

/// The scheme that names a remote responder over UDP.
pub const UDP_SCHEME: &str = "udp://";

/// Resolves `HOST:PORT` after the scheme.
fn address(name: &str) -> Result<SocketAddr> {
    let text = name
        .strip_prefix(SCHEME)
        .or_else(|| name.strip_prefix(UDP_SCHEME))
        .ok_or_else(|| {
            Error::usage(format!(
                "'{name}' is not a tcp:// or udp://HOST:PORT address"
            ))
        })?;
    text.to_socket_addrs()
        .map_err(|e| {
            Error::usage(format!("cannot resolve {text}: {e}; give HOST:PORT")).with_source(e)
        })?
        .next()
        .ok_or_else(|| Error::usage(format!("{text} resolves to no address")))
}

/// The local address this host sends from to the remote responder `name`
/// names (`tcp://HOST:PORT`): the interface whose NIC a run's data leaves
/// by. Found from the routing table by connecting a UDP socket, which
/// sends nothing; None when the name does not resolve or has no route.
pub fn local_address(name: &str) -> Option<std::net::IpAddr> {
    let to = address(name).ok()?;
    let any: SocketAddr = if to.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let s = UdpSocket::bind(any).ok()?;
    s.connect(to).ok()?;
    Some(s.local_addr().ok()?.ip())
}

/// The hello for `cfg`: the largest message it can carry over this
/// transport (sizes past a datagram are skipped by the experiments), and
/// the token from the environment.
fn hello_for(cfg: &LinkConfig, limit: u64, udp: bool) -> Result<Hello> {
    Ok(Hello {
        version: VERSION,
        max_message: (cfg.max_request.max(cfg.max_reply) as u64).min(limit),
        flags: if udp { FLAG_UDP } else { 0 },
        token: env_token()?.map(|t| t.bytes).unwrap_or_default(),
    })
}

/// Gives a UDP socket of a remote session the buffers a local `udp` link
/// has: room for a window of datagrams in flight, which the default
/// receive buffer drops (a `curve --mode stream` over `udp://` lost
/// datagrams at 2 KiB and timed out). The kernel caps what it grants.
pub fn roomy(s: &UdpSocket) -> Result<()> {
    use std::os::fd::AsRawFd;
    for opt in [libc::SO_SNDBUF, libc::SO_RCVBUF] {
        super::fd::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            crate::link::DATAGRAM_BUFFER as libc::c_int,
        )?;
    }
    Ok(())
}

/// The server's answer, as a usage error when it refused.
fn accepted(addr: SocketAddr, w: &[u8; WELCOME_LEN]) -> Result<()> {
    match parse_welcome(w) {
        Some((Status::Ok, _)) => Ok(()),
        Some((st, max)) => Err(Error::usage(format!(
            "{addr} refused the link: {} (server limit {max} bytes)",
            st.reason()
        ))),
        None => Err(Error::run(format!(
            "{addr} is not an xferbench server (bad answer to the hello)"
        ))),
    }
}

/// The largest message over a remote UDP session: a datagram, less the cookie.
pub const MAX_UDP_MESSAGE: u64 = super::udp::MAX_DATAGRAM - COOKIE_LEN as u64;

impl Transport for Remote {
    fn name(&self) -> &'static str {
        if self.udp {
            "udp://HOST:PORT"
        } else {
            "tcp://HOST:PORT"
        }
    }

    fn summary(&self) -> &'static str {
        if self.udp {
            "UDP to `xferbench serve` on another machine (token from XFERBENCH_TOKEN_FILE or XFERBENCH_TOKEN)"
        } else {
            "TCP to `xferbench serve` on another machine (token from XFERBENCH_TOKEN_FILE or XFERBENCH_TOKEN)"
        }
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            buffers: &[BufferMode::User],
            completions: &[CompletionMode::Block],
            default_completion: CompletionMode::Block,
            max_message: if self.udp {
                MAX_UDP_MESSAGE
            } else {
                crate::units::MAX_SIZE
            },
            max_inline: None,
            responder: "remote (xferbench serve)",
            options: &[],
            empty_messages: false,
            flow_control: !self.udp,
            max_reply: None,
        }
    }

    fn open(&self, cfg: &LinkConfig) -> Result<Box<dyn Link>> {
        let addr = address(&cfg.spec.name)?;
        let hello = hello_for(cfg, self.capabilities().max_message, self.udp)?;
        let timeout = cfg.timeout.max(Duration::from_millis(1));
        let io = |what: &str, e: std::io::Error| Error::run_from(format!("{what} {addr}"), e);
        let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| {
            Error::run(format!(
                "cannot connect to {addr}: {e}; is `xferbench serve --listen {addr}` running there?"
            ))
            .with_source(e)
        })?;
        s.set_nodelay(true)
            .map_err(|e| io("setting TCP_NODELAY to", e))?;
        s.set_read_timeout(Some(timeout))
            .map_err(|e| io("setting a timeout on", e))?;
        s.set_write_timeout(Some(timeout))
            .map_err(|e| io("setting a timeout on", e))?;
        s.write_all(&hello.encode())
            .map_err(|e| io("sending the hello to", e))?;
        let mut w = [0u8; WELCOME_LEN];
        s.read_exact(&mut w)
            .map_err(|e| io("reading the answer of", e))?;
        accepted(addr, &w)?;
        if !self.udp {
            return FdLink::open_remote(cfg, OwnedFd::from(s), Framing::Stream, None, None);
        }
        let mut g = [0u8; GRANT_LEN];
        s.read_exact(&mut g)
            .map_err(|e| io("reading the UDP session's port from", e))?;
        let (port, cookie) = parse_grant(&g).ok_or_else(|| {
            Error::run(format!("{addr} is not an xferbench server (bad UDP grant)"))
        })?;
        let any = if addr.is_ipv4() {
            "0.0.0.0:0"
        } else {
            "[::]:0"
        };
        let u = UdpSocket::bind(any).map_err(|e| io("binding a UDP socket for", e))?;
        roomy(&u)?;
        u.set_read_timeout(Some(timeout))
            .map_err(|e| io("setting a timeout for", e))?;
        u.set_write_timeout(Some(timeout))
            .map_err(|e| io("setting a timeout for", e))?;
        u.connect(SocketAddr::new(addr.ip(), port))
            .map_err(|e| io("connecting to the UDP session of", e))?;
        // The TCP connection stays open with the link: it is the session's.
        FdLink::open_remote(
            cfg,
            OwnedFd::from(u),
            Framing::Datagram,
            Some(cookie),
            Some(OwnedFd::from(s)),
        )
    }
}

pub use super::fd::{COOKIE_LEN, Limits};

/// Serves the measurement protocol to one client that has shaken hands,
/// over its socket (whose reads and writes already have timeouts).
pub fn serve_connection(s: &TcpStream, limits: &Limits) -> Result<()> {
    use std::os::fd::AsRawFd;
    super::fd::serve_socket(s.as_raw_fd(), Framing::Stream, limits, None, None)
}

/// As `serve_connection`, over a UDP socket connected to the client, every
/// datagram behind the session's cookie. `ended` is set (and the socket
/// shut down, to wake a receive) by whoever watches the session's TCP
/// connection when it closes: the session then ends, its cookie no longer
/// answered.
pub fn serve_datagrams(
    s: &UdpSocket,
    limits: &Limits,
    cookie: &[u8; COOKIE_LEN],
    ended: &Arc<AtomicBool>,
) -> Result<()> {
    use std::os::fd::AsRawFd;
    super::fd::serve_socket(
        s.as_raw_fd(),
        Framing::Datagram,
        limits,
        Some(*cookie),
        Some(ended.clone()),
    )
}

/// Waits on a UDP session's unconnected socket for its client's first
/// datagram: from `peer`'s address (the one that shook hands over TCP)
/// and starting with `cookie`. Anything else is dropped unanswered. Then
/// connects the socket to where it came from, leaving the datagram to be
/// read, and returns that address.
pub fn await_client(
    s: &UdpSocket,
    peer: IpAddr,
    cookie: &[u8; COOKIE_LEN],
    within: Duration,
    ended: &AtomicBool,
) -> std::result::Result<SocketAddr, String> {
    let until = Instant::now() + within;
    let mut strays = 0u64;
    loop {
        if ended.load(Ordering::Relaxed) {
            return Err("the client closed the session's control connection".into());
        }
        let left = until.saturating_duration_since(Instant::now());
        if left < Duration::from_millis(1) {
            return Err(format!(
                "no datagram of the session from {peer} within {}{}",
                humantime::format_duration(within),
                if strays > 0 {
                    format!(" ({strays} from elsewhere or without its cookie dropped)")
                } else {
                    String::new()
                }
            ));
        }
        s.set_read_timeout(Some(left))
            .map_err(|e| format!("setting a timeout: {e}"))?;
        let mut head = [0u8; COOKIE_LEN];
        match s.peek_from(&mut head) {
            Ok((n, from)) => {
                // Plain comparisons: the address is not secret, and the
                // cookie is compared as one word.
                if n == COOKIE_LEN
                    && from.ip().to_canonical() == peer.to_canonical()
                    && u64::from_ne_bytes(head) == u64::from_ne_bytes(*cookie)
                {
                    s.connect(from)
                        .map_err(|e| format!("connecting to the client: {e}"))?;
                    return Ok(from);
                }
                strays += 1;
                // Consumed and dropped: a datagram is read whole or not at all.
                let _ = s.recv_from(&mut []);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(format!("receiving: {e}")),
        }
    }
}

/// The limits the probes below judge a client by: small, so a probe
/// session ends quickly whatever its frames ask for.
const PROBE_LIMITS: Limits = Limits {
    max_message: 64 << 10,
    max_delay_ns: 1_000,
    max_spin_ns: 1_000,
    idle: Duration::from_secs(2),
};

/// What a server makes of one control frame from a client, held to what a
/// fuzzer checks: an accepted frame is within every limit and reads the
/// same to a local responder; a refusal is one short line. For
/// `xferbench::fuzzing` (the `fuzz/` targets and the seeded tests).
pub fn probe_control_frame(frame: &[u8]) -> std::result::Result<(), String> {
    use super::fd::{CTRL_LEN, Control, parse_control};
    use crate::link::Pattern;
    let l = PROBE_LIMITS;
    match parse_control(frame, Some(&l)) {
        Ok(c) => {
            assert_eq!(frame.len(), CTRL_LEN, "accepted a short or long frame");
            assert_eq!(
                parse_control(frame, None),
                Ok(c),
                "a local responder differs"
            );
            if let Control::Configure(s) = c {
                assert!(s.request_len.max(s.reply_len) <= l.max_message, "{s:?}");
                assert!(s.delay_ns <= l.max_delay_ns, "{s:?}");
                assert!(s.pattern != Pattern::Bidir, "{s:?}");
                assert!(s.request_len != 0 || s.exchanges == 0, "{s:?}");
            }
            Ok(())
        }
        Err(why) => {
            assert!(
                !why.is_empty() && why.len() <= 300 && !why.contains('\n'),
                "not one short line: {why:?}"
            );
            Err(why)
        }
    }
}

/// A whole server session fed `bytes` as everything a client sends after
/// its hello (control frames and messages), over a socket pair, with a
/// client that reads what comes back (up to 1 MiB, then hangs up). It must
/// end, in `Ok` or an error, and never panic; every wait has a 2 s timeout.
pub fn probe_session(bytes: &[u8]) -> std::result::Result<(), String> {
    use std::net::Shutdown;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    let (server, client) = UnixStream::pair().map_err(|e| e.to_string())?;
    let reader = client.try_clone().map_err(|e| e.to_string())?;
    for s in [&server, &client] {
        s.set_read_timeout(Some(Duration::from_secs(2)))
            .and_then(|_| s.set_write_timeout(Some(Duration::from_secs(2))))
            .map_err(|e| e.to_string())?;
    }
    let data = bytes.to_vec();
    let writer = std::thread::spawn(move || {
        let mut c = client;
        let _ = c.write_all(&data);
        let _ = c.shutdown(Shutdown::Write);
    });
    let drain = std::thread::spawn(move || {
        let mut c = reader;
        let mut buf = vec![0u8; 64 << 10];
        let mut got = 0usize;
        while got < 1 << 20 {
            match c.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
        // The server's next write fails rather than waits.
        let _ = c.shutdown(Shutdown::Both);
    });
    let r = super::fd::serve_socket(
        server.as_raw_fd(),
        Framing::Stream,
        &PROBE_LIMITS,
        None,
        None,
    )
    .map_err(|e| e.to_string());
    drop(server);
    let _ = writer.join();
    let _ = drain.join();
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_welcome_and_grant_round_trip() {
        let h = Hello {
            version: VERSION,
            max_message: 1 << 20,
            flags: FLAG_UDP,
            token: b"s3cret".to_vec(),
        };
        let b = h.encode();
        assert_eq!(b.len(), HELLO_LEN + 6);
        assert_eq!(Hello::read(&mut &b[..]).unwrap(), h);
        assert!(h.udp());
        let w = welcome(Status::TooLarge, 4096);
        assert_eq!(parse_welcome(&w), Some((Status::TooLarge, 4096)));
        let w = welcome(Status::Throttled, 1);
        assert_eq!(parse_welcome(&w), Some((Status::Throttled, 1)));
        let c = *b"cookie!!";
        assert_eq!(parse_grant(&grant(5290, &c)), Some((5290, c)));
        let mut g = grant(5290, &c);
        g[..4].copy_from_slice(&70_000u32.to_le_bytes());
        assert_eq!(parse_grant(&g), None, "not a port");
        assert_eq!(parse_grant(&grant(0, &c)), None);
        assert_ne!(new_cookie().unwrap(), new_cookie().unwrap());
    }

    #[test]
    fn bad_hellos_are_refused_before_allocating() {
        let mut b = Hello {
            version: VERSION,
            max_message: 1,
            flags: 0,
            token: Vec::new(),
        }
        .encode();
        b[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = Hello::read(&mut &b[..]).unwrap_err();
        assert!(e.contains("token of"), "{e}");
        let e = Hello::read(&mut &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..]).unwrap_err();
        assert!(e.contains("bad magic"), "{e}");
        assert!(Hello::read(&mut &b"XBS1"[..]).is_err(), "short");
        assert!(parse_welcome(&[0u8; WELCOME_LEN]).is_none());
    }

    #[test]
    fn token_files_lose_their_line_end_and_must_be_regular() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("t");
        std::fs::write(&f, "0123456789abcdef\n").unwrap();
        let t = token_file(&f, "--token-file".into()).unwrap();
        assert_eq!(t.bytes, b"0123456789abcdef");
        std::fs::write(&f, "a b\r\n").unwrap();
        assert_eq!(token_file(&f, "x".into()).unwrap().bytes, b"a b");
        std::fs::write(&f, "\n").unwrap();
        let e = token_file(&f, "--token-file".into())
            .unwrap_err()
            .to_string();
        assert!(e.contains("holds no token"), "{e}");
        std::fs::write(&f, vec![b'x'; MAX_TOKEN + 1]).unwrap();
        let e = token_file(&f, "x".into()).unwrap_err().to_string();
        assert!(e.contains("longer than 256"), "{e}");
        let e = token_file(d.path(), "x".into()).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let e = token_file(&d.path().join("none"), "x".into())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x: cannot read"), "{e}");
    }

    /// The first datagram of a UDP session must come from the address that
    /// shook hands and carry the cookie; anything else is dropped unread.
    #[test]
    fn a_udp_session_takes_its_cookie_from_its_address_only() {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let at = s.local_addr().unwrap();
        let cookie = *b"8bytes!!";
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        c.send_to(b"8bytes?? wrong cookie", at).unwrap();
        c.send_to(b"short", at).unwrap();
        let e = await_client(
            &s,
            "127.0.0.1".parse().unwrap(),
            &cookie,
            Duration::from_millis(300),
            &AtomicBool::new(false),
        )
        .unwrap_err();
        assert!(e.contains("2 from elsewhere"), "{e}");
        // Right cookie, another address than the one that shook hands.
        c.send_to(b"8bytes!! from the wrong host", at).unwrap();
        let e = await_client(
            &s,
            "127.0.0.9".parse().unwrap(),
            &cookie,
            Duration::from_millis(300),
            &AtomicBool::new(false),
        )
        .unwrap_err();
        assert!(e.contains("1 from elsewhere"), "{e}");
        c.send_to(b"8bytes!!hello", at).unwrap();
        let from = await_client(
            &s,
            "127.0.0.1".parse().unwrap(),
            &cookie,
            Duration::from_secs(10),
            &AtomicBool::new(false),
        )
        .unwrap();
        assert_eq!(from, c.local_addr().unwrap());
        let mut b = [0u8; 64];
        let n = s.recv(&mut b).unwrap();
        assert_eq!(&b[..n], b"8bytes!!hello", "left to be read");
    }
}
