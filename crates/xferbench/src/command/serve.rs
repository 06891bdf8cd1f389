//! `xferbench serve`: the responder for initiators on other machines
//! (`-t tcp://HOST:PORT`). It is exposed to a network, so it trusts nothing
//! a client sends: the hello is checked (magic, version, token compared in
//! constant time) before anything else and must arrive within a short
//! deadline; every length is checked against `--max-message` and the size
//! the hello declared before any allocation; every read and write has the
//! idle timeout; a bad client loses its own connection, logged with the
//! reason, and the server goes on; sessions are bounded by `--max-sessions`
//! and, per client address, by `--max-per-address`, and a session gives its
//! place back however it ends (a panic included).

use crate::error::{Error, Result};
use crate::transport::remote::{self, Hello, Limits, Status};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// The longest responder delay a client may ask for: a client must not be
/// able to park a server thread spinning.
const MAX_DELAY_NS: u64 = 100_000_000;

/// How long a TCP client has, from its connection, to send its whole hello
/// (or the idle timeout, if shorter). A real client sends it at once; a
/// silent or trickling one would otherwise hold a session for the whole
/// idle timeout, and a handful of them would lock real clients out.
pub const HELLO_DEADLINE: Duration = Duration::from_secs(2);

/// The sessions running: in all, and per client address.
#[derive(Default)]
struct Sessions {
    total: usize,
    per_address: HashMap<IpAddr, usize>,
}

/// Why a client got no session.
enum Full {
    /// `--max-sessions` are running.
    Server,
    /// Its address holds `--max-per-address` of them.
    Address,
}

struct Server {
    token: Option<Vec<u8>>,
    max_message: u64,
    idle: Duration,
    sessions: Mutex<Sessions>,
    max_sessions: usize,
    max_per_address: usize,
    quiet: bool,
}

/// One session's place among `--max-sessions` and its address's share,
/// given back when dropped: whether the session ends well, fails, panics or
/// never starts (a thread that could not be spawned drops its closure), the
/// count goes down, so no way out of a session can leak a slot.
struct Slot {
    srv: Arc<Server>,
    ip: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut s = self.srv.lock();
        s.total = s.total.saturating_sub(1);
        if let Some(n) = s.per_address.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                s.per_address.remove(&self.ip);
            }
        }
    }
}

/// How a session ended, for its log line.
enum Ended {
    Done,
    Closed(String),
    /// The hello did not arrive in time: the deadline.
    NoHello(Duration),
}

impl Server {
    /// The sessions, whatever a panicking holder left behind: the counts
    /// are updated in single steps, so they are never half-written.
    fn lock(&self) -> std::sync::MutexGuard<'_, Sessions> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A log line on stderr (unless --quiet). A closed stderr does not stop
    /// the server: the line is dropped rather than panicking.
    fn log(&self, line: &str) {
        if !self.quiet {
            let _ = writeln!(std::io::stderr(), "xferbench serve: {line}");
        }
    }

    /// A slot for a client at `ip`, or why there is none.
    fn take_slot(self: &Arc<Self>, ip: IpAddr) -> std::result::Result<Slot, Full> {
        let mut s = self.lock();
        if s.total >= self.max_sessions {
            return Err(Full::Server);
        }
        let mine = s.per_address.entry(ip).or_insert(0);
        if *mine >= self.max_per_address {
            return Err(Full::Address);
        }
        *mine += 1;
        s.total += 1;
        Ok(Slot {
            srv: self.clone(),
            ip,
        })
    }

    /// The log's words for a refusal.
    fn full(&self, why: &Full, ip: IpAddr) -> String {
        match why {
            Full::Server => format!("at --max-sessions ({})", self.max_sessions),
            Full::Address => format!(
                "{ip} already holds --max-per-address ({}) sessions",
                self.max_per_address
            ),
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

    /// What one session allows: no message above what its hello declared
    /// (the server checked that against `--max-message`), so a client
    /// cannot shake hands small and then ask for more.
    fn limits(&self, hello: &Hello) -> Limits {
        Limits {
            max_message: hello.max_message.min(self.max_message) as usize,
            max_delay_ns: MAX_DELAY_NS,
        }
    }

    /// How long a TCP client has for its hello.
    fn hello_deadline(&self) -> Duration {
        HELLO_DEADLINE.min(self.idle)
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
                    // Not a spin if the error persists.
                    std::thread::sleep(Duration::from_millis(10));
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
            let mut slot = None;
            let mut busy = String::new();
            if status == Status::Ok {
                match self.take_slot(from.ip()) {
                    Ok(s) => slot = Some(s),
                    Err(why) => {
                        busy = self.full(&why, from.ip());
                        status = Status::Busy;
                    }
                }
            }
            let Some(slot) = slot else {
                let _ = sock.send_to(&remote::welcome(status, self.max_message), from);
                let why = if busy.is_empty() {
                    status.reason().to_string()
                } else {
                    busy
                };
                self.log(&format!("udp session {id} from {from}: refused: {why}"));
                continue;
            };
            let srv = self.clone();
            let local = sock.local_addr().map(|a| SocketAddr::new(a.ip(), 0));
            let limits = self.limits(&hello);
            let started = std::thread::Builder::new()
                .name(format!("xb-serve-udp-{id}"))
                .spawn(move || {
                    let r = guarded(|| -> std::result::Result<(), String> {
                        let at = local.map_err(|e| e.to_string())?;
                        let s = UdpSocket::bind(at)
                            .map_err(|e| format!("binding a session socket: {e}"))?;
                        remote::roomy(&s).map_err(|e| e.to_string())?;
                        s.connect(from)
                            .map_err(|e| format!("connecting to the client: {e}"))?;
                        s.set_read_timeout(Some(srv.idle))
                            .and_then(|_| s.set_write_timeout(Some(srv.idle)))
                            .map_err(|e| format!("setting timeouts: {e}"))?;
                        s.send(&remote::welcome(Status::Ok, srv.max_message))
                            .map_err(|e| format!("answering the hello: {e}"))?;
                        remote::serve_datagrams(&s, &limits).map_err(|e| e.to_string())
                    });
                    drop(slot);
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
                self.log(&format!("udp session {id}: cannot start a thread: {e}"));
            }
        }
    }

    /// One client, from hello to goodbye; how it ended.
    fn session(&self, mut s: TcpStream) -> Ended {
        let r = (|| {
            s.set_write_timeout(Some(self.idle))
                .and_then(|_| s.set_nodelay(true))
                .map_err(|e| format!("setting up the socket: {e}"))?;
            let deadline = self.hello_deadline();
            let mut by = Deadline {
                s: &s,
                until: Instant::now() + deadline,
                expired: false,
                hung_up: false,
            };
            let hello = match Hello::read(&mut by) {
                Ok(h) => h,
                Err(_) if by.expired => return Ok(Some(deadline)),
                Err(_) if by.hung_up => return Err("the client hung up before its hello".into()),
                Err(why) => return Err(why),
            };
            s.set_read_timeout(Some(self.idle))
                .map_err(|e| format!("setting up the socket: {e}"))?;
            let status = self.judge(&hello);
            s.write_all(&remote::welcome(status, self.max_message))
                .map_err(|e| format!("answering the hello: {e}"))?;
            if status != Status::Ok {
                return Err(format!("refused: {}", status.reason()));
            }
            remote::serve_connection(&s, &self.limits(&hello)).map_err(|e| e.to_string())?;
            Ok(None)
        })();
        match r {
            Ok(None) => Ended::Done,
            Ok(Some(deadline)) => Ended::NoHello(deadline),
            Err(why) => Ended::Closed(why),
        }
    }
}

/// Reads a socket until an overall deadline, however the bytes trickle in:
/// the read timeout is set to what is left before each read, so a client
/// sending a byte a second cannot stretch the hello past the deadline.
struct Deadline<'a> {
    s: &'a TcpStream,
    until: Instant,
    /// The deadline passed (rather than the client hanging up or erring).
    expired: bool,
    /// The client closed its end first.
    hung_up: bool,
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left < Duration::from_millis(1) {
            self.expired = true;
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.s.set_read_timeout(Some(left))?;
        let r = (&mut &*self.s).read(buf);
        match &r {
            Ok(0) if !buf.is_empty() => self.hung_up = true,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                self.expired = true
            }
            _ => {}
        }
        r
    }
}

/// Runs one session's work, turning a panic inside it into an error: a bug
/// a client's bytes reach must cost that client its session, never the
/// server a thread, a slot or its log line.
fn guarded<T>(
    work: impl FnOnce() -> std::result::Result<T, String>,
) -> std::result::Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into())
            .replace(['\n', '\r'], " ");
        Err(format!(
            "internal error ({what}); the session was closed and its slot freed; please report this"
        ))
    })
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
    /// Sessions one client address may hold at once (1..=1024); None: half
    /// of `max_sessions`, rounded up. One address cannot take every slot.
    pub max_per_address: Option<u32>,
    /// A client silent this long loses its connection.
    pub idle_timeout: Duration,
    /// Serve one client, then return.
    pub once: bool,
    /// Listen beyond loopback without a token (refused otherwise).
    pub insecure: bool,
}

impl Default for ServeConfig {
    fn default() -> ServeConfig {
        ServeConfig {
            listen: "127.0.0.1:5290".into(),
            token: None,
            max_message: 64 << 20,
            max_sessions: 16,
            max_per_address: None,
            idle_timeout: Duration::from_secs(30),
            once: false,
            insecure: false,
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
        if let Some(n) = self.max_per_address
            && !(1..=1024).contains(&n)
        {
            return Err(Error::usage(format!(
                "--max-per-address {n}: must be from 1 to 1024"
            )));
        }
        Ok(())
    }

    /// Sessions one address may hold: as given, else half of
    /// `--max-sessions` (rounded up), so `load --inflight N` from one
    /// client still fits the default while one address leaves room for others.
    pub fn per_address(&self) -> u32 {
        self.max_per_address
            .unwrap_or(self.max_sessions.div_ceil(2))
            .min(self.max_sessions)
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
        .with_source(e)
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
    // Beyond loopback, anyone who reaches the port could otherwise use this
    // machine's CPUs and network: a token, or a choice said out loud.
    let open = token.is_none() && !local.ip().is_loopback();
    if open && !args.insecure {
        return Err(Error::usage(format!(
            "listening on {local} without a token lets anyone who reaches it use this machine; set XFERBENCH_TOKEN (or --token) here and on the clients, or pass --insecure on a network you trust"
        )));
    }
    let per_address = args.per_address();
    let server = Arc::new(Server {
        token: token.map(String::into_bytes),
        max_message: args.max_message,
        idle: args.idle_timeout,
        sessions: Mutex::new(Sessions::default()),
        max_sessions: args.max_sessions as usize,
        max_per_address: per_address as usize,
        quiet,
    });
    // UDP on the same address and port as TCP.
    let udp = UdpSocket::bind(local).map_err(|e| {
        Error::usage(format!(
            "cannot listen for UDP on {local}: {e}; pick another --listen ADDR:PORT"
        ))
        .with_source(e)
    })?;
    {
        let srv = server.clone();
        let once = args.once;
        std::thread::Builder::new()
            .name("xb-serve-udp".into())
            .spawn(move || srv.udp(udp, once))
            .map_err(|e| Error::run_from("starting the UDP listener", e))?;
    }
    // Always said, even with --quiet: scripts read the port from it.
    eprintln!(
        "xferbench serve: listening on {local} (TCP and UDP; max message {} bytes, {} sessions, {per_address} per address, hello within {}, idle timeout {:?}{})",
        args.max_message,
        args.max_sessions,
        humantime::format_duration(server.hello_deadline()),
        args.idle_timeout,
        if server.token.is_some() {
            ", token required"
        } else {
            ""
        }
    );
    if open {
        eprintln!(
            "xferbench serve: warning: no token (--insecure): anyone who reaches {local} can run measurements here"
        );
    }
    let mut sessions = 0u64;
    for conn in listener.incoming() {
        let s = match conn {
            Ok(s) => s,
            Err(e) => {
                server.log(&format!("accept failed: {e}"));
                // Out of fds, say: wait for sessions to end rather than spin.
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        sessions += 1;
        let id = sessions;
        let Ok(peer) = s.peer_addr() else {
            server.log(&format!(
                "session {id}: closed: the client was already gone"
            ));
            continue;
        };
        let slot = match server.take_slot(peer.ip()) {
            Ok(slot) => slot,
            Err(why) => {
                let mut s = s;
                let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
                let _ = s.write_all(&remote::welcome(Status::Busy, server.max_message));
                server.log(&format!(
                    "session {id} from {peer}: refused: {}",
                    server.full(&why, peer.ip())
                ));
                continue;
            }
        };
        let srv = server.clone();
        let started = std::thread::Builder::new()
            .name(format!("xb-serve-{id}"))
            .spawn(move || {
                let r = guarded(|| Ok(srv.session(s)));
                drop(slot);
                srv.log(&match r {
                    Ok(Ended::Done) => format!("session {id} from {peer}: done"),
                    Ok(Ended::Closed(why)) | Err(why) => {
                        format!("session {id} from {peer}: closed: {why}")
                    }
                    Ok(Ended::NoHello(d)) => format!(
                        "session {id}: no hello within {} from {peer}; closed",
                        humantime::format_duration(d)
                    ),
                });
            });
        match started {
            Ok(handle) if args.once => {
                let _ = handle.join();
                return Ok(());
            }
            Ok(_) => {}
            // The closure, and the slot in it, were dropped: nothing leaks.
            Err(e) => server.log(&format!("session {id}: cannot start a thread: {e}")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(max_sessions: usize, max_per_address: usize) -> Arc<Server> {
        Arc::new(Server {
            token: None,
            max_message: 1 << 20,
            idle: Duration::from_secs(1),
            sessions: Mutex::new(Sessions::default()),
            max_sessions,
            max_per_address,
            quiet: true,
        })
    }

    #[test]
    fn a_panicking_session_frees_its_slot() {
        let srv = server(1, 1);
        let ip: IpAddr = [10, 0, 0, 1].into();
        let slot = srv.take_slot(ip).ok().unwrap();
        assert!(srv.take_slot(ip).is_err(), "the one slot is taken");
        let srv2 = srv.clone();
        let r = std::thread::spawn(move || {
            let r = guarded(|| -> std::result::Result<(), String> {
                let v: Vec<u8> = Vec::new();
                let n = v.len() + 64;
                // The bug this guards against: a slice past a buffer's end.
                let _ = &v[..n];
                Ok(())
            });
            drop(slot);
            let _ = srv2;
            r
        })
        .join()
        .expect("the panic was caught");
        let e = r.unwrap_err();
        assert!(e.contains("internal error") && !e.contains('\n'), "{e}");
        assert_eq!(srv.lock().total, 0);
        assert!(srv.lock().per_address.is_empty());
        assert!(srv.take_slot(ip).is_ok(), "the slot came back");
    }

    #[test]
    fn one_address_cannot_take_every_slot() {
        let srv = server(4, 2);
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        let held: Vec<Slot> = (0..2).map(|_| srv.take_slot(a).ok().unwrap()).collect();
        assert!(matches!(srv.take_slot(a), Err(Full::Address)));
        let more: Vec<Slot> = (0..2).map(|_| srv.take_slot(b).ok().unwrap()).collect();
        assert!(matches!(srv.take_slot(b), Err(Full::Server)));
        drop(held);
        assert!(srv.take_slot(a).is_ok());
        drop(more);
        assert_eq!(srv.lock().total, 0);
    }

    #[test]
    fn per_address_defaults_to_half_the_sessions() {
        let mut c = ServeConfig::default();
        assert_eq!(c.per_address(), 8);
        c.max_sessions = 1;
        assert_eq!(c.per_address(), 1);
        c.max_sessions = 3;
        assert_eq!(c.per_address(), 2);
        c.max_per_address = Some(100);
        assert_eq!(c.per_address(), 3, "never above --max-sessions");
    }
}
