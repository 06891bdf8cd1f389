//! `tcp://HOST:PORT`: a responder on another machine, run by `xferbench
//! serve`. Before any measurement the two ends shake hands (see
//! `docs/protocol.md`): the client says which protocol it speaks, the
//! largest message it will use and, if the server wants one, the shared
//! token; the server answers with a status. Then the link speaks the same
//! control and data protocol as a local `tcp` responder, over a socket
//! whose every read and write has the link's timeout.

use super::fd::{FdLink, Framing};
use super::{BufferMode, Capabilities, CompletionMode, Link, LinkConfig, Transport};
use crate::error::{Error, Result};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::OwnedFd;
use std::time::Duration;

/// First four bytes of every hello and welcome.
pub const MAGIC: [u8; 4] = *b"XBS1";
/// The handshake protocol version this build speaks.
pub const VERSION: u32 = 1;
/// The longest token either end accepts; checked before it is read.
pub const MAX_TOKEN: usize = 256;
/// Bytes of a hello's fixed header, before the token.
pub const HELLO_LEN: usize = 24;
/// Bytes of a welcome.
pub const WELCOME_LEN: usize = 16;
/// The scheme that names a remote responder in `-t`.
pub const SCHEME: &str = "tcp://";

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
}

impl Status {
    fn from_u32(v: u32) -> Option<Status> {
        Some(match v {
            0 => Status::Ok,
            1 => Status::BadVersion,
            2 => Status::BadToken,
            3 => Status::TooLarge,
            4 => Status::Busy,
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
                "wrong or missing token; set XFERBENCH_TOKEN to the server's --token"
            }
            Status::TooLarge => {
                "messages this large are over the server's --max-message; use smaller sizes or raise it"
            }
            Status::Busy => {
                "the server is at its --max-sessions, or this address at its --max-per-address; try again later"
            }
        }
    }
}

/// The client's first frame: magic, version, largest message, token length,
/// then the token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    /// The protocol version the client speaks.
    pub version: u32,
    /// The largest message, bytes, the client will ask for.
    pub max_message: u64,
    /// The shared token (the client's `XFERBENCH_TOKEN`; empty when unset).
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
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&self.token);
        b
    }

    /// Parses the fixed header; returns the version, largest message and
    /// token length, refusing a bad magic or an over-long token before
    /// anything is allocated.
    pub fn parse_header(h: &[u8; HELLO_LEN]) -> std::result::Result<(u32, u64, usize), String> {
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
        Ok((version, max, token_len))
    }

    /// Reads a hello from `r` (which has a timeout).
    pub fn read(r: &mut impl Read) -> std::result::Result<Hello, String> {
        let mut h = [0u8; HELLO_LEN];
        r.read_exact(&mut h)
            .map_err(|e| format!("reading the hello: {e}"))?;
        let (version, max_message, n) = Hello::parse_header(&h)?;
        let mut token = vec![0u8; n];
        r.read_exact(&mut token)
            .map_err(|e| format!("reading the token: {e}"))?;
        Ok(Hello {
            version,
            max_message,
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
fn address(name: &str) -> Result<std::net::SocketAddr> {
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

/// The hello for `cfg`: the largest message it can carry over this
/// transport (sizes past a datagram are skipped by the experiments).
fn hello_for(cfg: &LinkConfig, limit: u64) -> Hello {
    Hello {
        version: VERSION,
        max_message: (cfg.max_request.max(cfg.max_reply) as u64).min(limit),
        token: std::env::var("XFERBENCH_TOKEN")
            .unwrap_or_default()
            .into_bytes(),
    }
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
            super::DATAGRAM_BUFFER as libc::c_int,
        )?;
    }
    Ok(())
}

/// The server's answer, as a usage error when it refused.
fn accepted(addr: std::net::SocketAddr, w: &[u8; WELCOME_LEN]) -> Result<()> {
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
            "UDP to `xferbench serve` on another machine (token from XFERBENCH_TOKEN)"
        } else {
            "TCP to `xferbench serve` on another machine (token from XFERBENCH_TOKEN)"
        }
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            buffers: &[BufferMode::User],
            completions: &[CompletionMode::Block],
            default_completion: CompletionMode::Block,
            max_message: if self.udp {
                super::udp::MAX_DATAGRAM
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
        let timeout = cfg.timeout.max(Duration::from_millis(1));
        let io = |what: &str, e: std::io::Error| Error::run_from(format!("{what} {addr}"), e);
        if self.udp {
            let any = if addr.is_ipv4() {
                "0.0.0.0:0"
            } else {
                "[::]:0"
            };
            let s = UdpSocket::bind(any).map_err(|e| io("binding a UDP socket for", e))?;
            roomy(&s)?;
            s.set_read_timeout(Some(timeout))
                .map_err(|e| io("setting a timeout for", e))?;
            s.set_write_timeout(Some(timeout))
                .map_err(|e| io("setting a timeout for", e))?;
            s.send_to(
                &hello_for(cfg, self.capabilities().max_message).encode(),
                addr,
            )
            .map_err(|e| io("sending the hello to", e))?;
            let mut w = [0u8; WELCOME_LEN];
            let (n, from) = s.recv_from(&mut w).map_err(|e| {
                io(
                    "no answer (is `xferbench serve` running there, and UDP let through?) from",
                    e,
                )
            })?;
            if n != WELCOME_LEN {
                return Err(Error::run(format!("{addr} is not an xferbench server")));
            }
            accepted(addr, &w)?;
            // The session runs on a port of its own, the one that answered.
            s.connect(from)
                .map_err(|e| io("connecting to the session of", e))?;
            return FdLink::open_remote(cfg, OwnedFd::from(s), Framing::Datagram);
        }
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
        s.write_all(&hello_for(cfg, self.capabilities().max_message).encode())
            .map_err(|e| io("sending the hello to", e))?;
        let mut w = [0u8; WELCOME_LEN];
        s.read_exact(&mut w)
            .map_err(|e| io("reading the answer of", e))?;
        accepted(addr, &w)?;
        FdLink::open_remote(cfg, OwnedFd::from(s), Framing::Stream)
    }
}

pub use super::fd::Limits;

/// Serves the measurement protocol to one client that has shaken hands,
/// over its socket (whose reads and writes already have timeouts).
pub fn serve_connection(s: &TcpStream, limits: &Limits) -> Result<()> {
    use std::os::fd::AsRawFd;
    super::fd::serve_socket(s.as_raw_fd(), Framing::Stream, limits)
}

/// As `serve_connection`, over a UDP socket connected to the client.
pub fn serve_datagrams(s: &UdpSocket, limits: &Limits) -> Result<()> {
    use std::os::fd::AsRawFd;
    super::fd::serve_socket(s.as_raw_fd(), Framing::Datagram, limits)
}

/// The limits the probes below judge a client by: small, so a probe
/// session ends quickly whatever its frames ask for.
const PROBE_LIMITS: Limits = Limits {
    max_message: 64 << 10,
    max_delay_ns: 1_000,
};

/// What a server makes of one control frame from a client, held to what a
/// fuzzer checks: an accepted frame is within every limit and reads the
/// same to a local responder; a refusal is one short line. For
/// `xferbench::fuzzing` (the `fuzz/` targets and the seeded tests).
pub fn probe_control_frame(frame: &[u8]) -> std::result::Result<(), String> {
    use super::Pattern;
    use super::fd::{CTRL_LEN, Control, parse_control};
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
    let r = super::fd::serve_socket(server.as_raw_fd(), Framing::Stream, &PROBE_LIMITS)
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
    fn hello_and_welcome_round_trip() {
        let h = Hello {
            version: VERSION,
            max_message: 1 << 20,
            token: b"s3cret".to_vec(),
        };
        let b = h.encode();
        assert_eq!(b.len(), HELLO_LEN + 6);
        assert_eq!(Hello::read(&mut &b[..]).unwrap(), h);
        let w = welcome(Status::TooLarge, 4096);
        assert_eq!(parse_welcome(&w), Some((Status::TooLarge, 4096)));
    }

    #[test]
    fn bad_hellos_are_refused_before_allocating() {
        let mut b = Hello {
            version: VERSION,
            max_message: 1,
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
}
