//! `xferbench serve`: the responder for initiators on other machines
//! (`-t tcp://HOST:PORT`). It is exposed to a network, so it trusts nothing
//! a client sends: the hello is checked (magic, version, token compared in
//! constant time) before anything else; every length is checked against
//! `--max-message` before any allocation; every read and write has the idle
//! timeout; a bad client loses its own connection, logged with the reason,
//! and the server goes on; sessions are bounded by `--max-sessions`.

use crate::error::{Error, Result};
use crate::transport::remote::{self, Hello, Limits, Status};
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use subtle::ConstantTimeEq;

/// The longest responder delay a client may ask for: a client must not be
/// able to park a server thread spinning.
const MAX_DELAY_NS: u64 = 100_000_000;

struct Server {
    token: Option<Vec<u8>>,
    max_message: u64,
    idle: std::time::Duration,
    active: AtomicUsize,
    max_sessions: usize,
    quiet: bool,
}

impl Server {
    fn log(&self, line: &str) {
        if !self.quiet {
            eprintln!("xferbench serve: {line}");
        }
    }

    /// Checks a hello; the status to answer.
    fn judge(&self, h: &Hello) -> Status {
        if h.version != remote::VERSION {
            return Status::BadVersion;
        }
        if let Some(t) = &self.token {
            // Equal lengths and equal bytes, in time that does not depend on
            // where they first differ.
            let same = t.len() == h.token.len() && bool::from(t.as_slice().ct_eq(&h.token));
            if !same {
                return Status::BadToken;
            }
        }
        if h.max_message > self.max_message {
            return Status::TooLarge;
        }
        Status::Ok
    }

    fn limits(&self) -> Limits {
        Limits {
            max_message: self.max_message as usize,
            max_delay_ns: MAX_DELAY_NS,
        }
    }

    /// Answers UDP hellos on the listening port. An accepted client gets a
    /// socket of its own, connected to it, and the welcome comes from that
    /// socket: the client then talks to the session's port, and this loop
    /// only ever reads hellos. A welcome is never larger than the hello
    /// that asked for it, so the server cannot be used to amplify traffic.
    fn udp(self: Arc<Self>, sock: UdpSocket, once: bool) {
        let mut buf = [0u8; remote::HELLO_LEN + remote::MAX_TOKEN];
        let mut id = 0u64;
        loop {
            let (n, from) = match sock.recv_from(&mut buf) {
                Ok(r) => r,
                Err(e) => {
                    self.log(&format!("udp: receive failed: {e}"));
                    continue;
                }
            };
            id += 1;
            let hello = match Hello::read(&mut &buf[..n]) {
                Ok(h) if n == remote::HELLO_LEN + h.token.len() => h,
                Ok(_) => {
                    self.log(&format!(
                        "udp hello {id} from {from}: ignored: trailing bytes"
                    ));
                    continue;
                }
                Err(why) => {
                    self.log(&format!("udp hello {id} from {from}: ignored: {why}"));
                    continue;
                }
            };
            let mut status = self.judge(&hello);
            if status == Status::Ok && hello.max_message > remote_udp_max() {
                status = Status::TooLarge;
            }
            if status == Status::Ok
                && self.active.fetch_add(1, Ordering::AcqRel) >= self.max_sessions
            {
                self.active.fetch_sub(1, Ordering::AcqRel);
                status = Status::Busy;
            }
            if status != Status::Ok {
                let _ = sock.send_to(&remote::welcome(status, self.max_message), from);
                self.log(&format!(
                    "udp session {id} from {from}: refused: {}",
                    status.reason()
                ));
                continue;
            }
            let srv = self.clone();
            let local = sock.local_addr().map(|a| SocketAddr::new(a.ip(), 0));
            let started = std::thread::Builder::new()
                .name(format!("xb-serve-udp-{id}"))
                .spawn(move || {
                    let r = (|| -> std::result::Result<(), String> {
                        let at = local.map_err(|e| e.to_string())?;
                        let s = UdpSocket::bind(at)
                            .map_err(|e| format!("binding a session socket: {e}"))?;
                        s.connect(from)
                            .map_err(|e| format!("connecting to the client: {e}"))?;
                        s.set_read_timeout(Some(srv.idle))
                            .and_then(|_| s.set_write_timeout(Some(srv.idle)))
                            .map_err(|e| format!("setting timeouts: {e}"))?;
                        s.send(&remote::welcome(Status::Ok, srv.max_message))
                            .map_err(|e| format!("answering the hello: {e}"))?;
                        remote::serve_datagrams(&s, &srv.limits()).map_err(|e| e.to_string())
                    })();
                    srv.active.fetch_sub(1, Ordering::AcqRel);
                    match r {
                        Ok(()) => srv.log(&format!("udp session {id} from {from}: done")),
                        Err(why) => {
                            srv.log(&format!("udp session {id} from {from}: closed: {why}"))
                        }
                    }
                    if once {
                        std::process::exit(0);
                    }
                });
            if let Err(e) = started {
                self.active.fetch_sub(1, Ordering::AcqRel);
                self.log(&format!("udp session {id}: cannot start a thread: {e}"));
            }
        }
    }

    /// One client, from hello to goodbye; the reason it ended.
    fn session(&self, mut s: TcpStream) -> std::result::Result<String, String> {
        s.set_read_timeout(Some(self.idle))
            .and_then(|_| s.set_write_timeout(Some(self.idle)))
            .and_then(|_| s.set_nodelay(true))
            .map_err(|e| format!("setting up the socket: {e}"))?;
        let hello = Hello::read(&mut s)?;
        let status = self.judge(&hello);
        s.write_all(&remote::welcome(status, self.max_message))
            .map_err(|e| format!("answering the hello: {e}"))?;
        if status != Status::Ok {
            return Err(format!("refused: {}", status.reason()));
        }
        remote::serve_connection(&s, &self.limits()).map_err(|e| e.to_string())?;
        Ok("done".into())
    }
}

/// The largest message a UDP session can carry (one datagram).
fn remote_udp_max() -> u64 {
    use crate::transport::Transport;
    remote::REMOTE_UDP.capabilities().max_message
}

/// What `xferbench serve` is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeConfig {
    /// Address and port to listen on.
    pub listen: String,
    /// Shared secret clients must present; None: `XFERBENCH_TOKEN`, or none.
    pub token: Option<String>,
    /// Largest message a client may use (1 byte to 1 GiB).
    pub max_message: u64,
    /// Clients served at once (1..=1024); more are refused as busy.
    pub max_sessions: u32,
    /// A client silent this long loses its connection.
    pub idle_timeout: std::time::Duration,
    /// Serve one client, then return.
    pub once: bool,
}

impl Default for ServeConfig {
    fn default() -> ServeConfig {
        ServeConfig {
            listen: "127.0.0.1:5290".into(),
            token: None,
            max_message: 64 << 20,
            max_sessions: 16,
            idle_timeout: std::time::Duration::from_secs(30),
            once: false,
        }
    }
}

impl ServeConfig {
    /// The checks the command line makes of each value.
    pub fn validate(&self) -> Result<()> {
        if self.max_message == 0 || self.max_message > crate::units::MAX_SIZE {
            return Err(Error::usage(format!(
                "--max-message {}: must be from 1 byte to 1 GiB",
                self.max_message
            )));
        }
        if !(1..=1024).contains(&self.max_sessions) {
            return Err(Error::usage(format!(
                "--max-sessions {}: must be from 1 to 1024",
                self.max_sessions
            )));
        }
        Ok(())
    }
}

/// Serves until killed (or one client, with `once`).
pub fn run(args: &ServeConfig, quiet: bool) -> Result<()> {
    args.validate()?;
    let listener = TcpListener::bind(&args.listen).map_err(|e| {
        Error::usage(format!(
            "cannot listen on {}: {e}; pick another --listen ADDR:PORT",
            args.listen
        ))
    })?;
    let local: SocketAddr = listener
        .local_addr()
        .map_err(|e| Error::io("reading the listening address", e))?;
    let token = args
        .token
        .clone()
        .or_else(|| std::env::var("XFERBENCH_TOKEN").ok())
        .filter(|t| !t.is_empty());
    if token.as_ref().is_some_and(|t| t.len() > remote::MAX_TOKEN) {
        return Err(Error::usage(format!(
            "--token is longer than {} bytes",
            remote::MAX_TOKEN
        )));
    }
    let server = Arc::new(Server {
        token: token.map(String::into_bytes),
        max_message: args.max_message,
        idle: args.idle_timeout,
        active: AtomicUsize::new(0),
        max_sessions: args.max_sessions as usize,
        quiet,
    });
    // UDP on the same address and port as TCP.
    let udp = UdpSocket::bind(local).map_err(|e| {
        Error::usage(format!(
            "cannot listen for UDP on {local}: {e}; pick another --listen ADDR:PORT"
        ))
    })?;
    {
        let srv = server.clone();
        let once = args.once;
        std::thread::Builder::new()
            .name("xb-serve-udp".into())
            .spawn(move || srv.udp(udp, once))
            .map_err(|e| Error::run(format!("starting the UDP listener: {e}")))?;
    }
    // Always said, even with --quiet: scripts read the port from it.
    eprintln!(
        "xferbench serve: listening on {local} (TCP and UDP; max message {} bytes, {} sessions, idle timeout {:?}{})",
        args.max_message,
        args.max_sessions,
        args.idle_timeout,
        if server.token.is_some() {
            ", token required"
        } else {
            ""
        }
    );
    let mut sessions = 0u64;
    for conn in listener.incoming() {
        let s = match conn {
            Ok(s) => s,
            Err(e) => {
                server.log(&format!("accept failed: {e}"));
                continue;
            }
        };
        sessions += 1;
        let id = sessions;
        let peer = s
            .peer_addr()
            .map_or_else(|_| "?".to_string(), |a| a.to_string());
        if server.active.fetch_add(1, Ordering::AcqRel) >= server.max_sessions {
            server.active.fetch_sub(1, Ordering::AcqRel);
            let mut s = s;
            let _ = s.set_write_timeout(Some(std::time::Duration::from_secs(1)));
            let _ = s.write_all(&remote::welcome(Status::Busy, server.max_message));
            server.log(&format!(
                "session {id} from {peer}: refused: at --max-sessions"
            ));
            continue;
        }
        let srv = server.clone();
        let handle = std::thread::Builder::new()
            .name(format!("xb-serve-{id}"))
            .spawn(move || {
                let r = srv.session(s);
                srv.active.fetch_sub(1, Ordering::AcqRel);
                match r {
                    Ok(why) => srv.log(&format!("session {id} from {peer}: {why}")),
                    Err(why) => srv.log(&format!("session {id} from {peer}: closed: {why}")),
                }
            })
            .map_err(|e| Error::run(format!("starting a session thread: {e}")))?;
        if args.once {
            let _ = handle.join();
            return Ok(());
        }
    }
    Ok(())
}
