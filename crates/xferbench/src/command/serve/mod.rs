//! `xferbench serve`: the responder for initiators on other machines
//! (`-t tcp://HOST:PORT`, `-t udp://HOST:PORT`). It is exposed to a
//! network, so it trusts nothing a client sends and gives nothing away
//! before the token:
//!
//! - a connection waits in a bounded room (`gate::Pending`: per address
//!   and in all, the oldest turned out to make room) until its hello is
//!   read, within a short deadline that shrinks as its address opens more;
//!   only an authenticated client takes one of the `--max-sessions` slots,
//!   so a crowd that never says hello cannot lock a real client out;
//! - the token is compared in constant time, and an address that sends
//!   wrong ones has its next checks spaced out (`gate::Throttle`);
//! - every length is checked against `--max-message` and the size the
//!   hello declared before any allocation; every read and write has the
//!   idle timeout, which also bounds each whole message, so trickled bytes
//!   do not keep a session for ever; long responder delays are slept;
//! - a UDP session's port and cookie travel over its TCP connection, and
//!   only datagrams from that client's address with that cookie are
//!   answered, so a spoofed source draws nothing;
//! - a bad client loses its own connection, logged (at a bounded rate) with
//!   the reason, and the server goes on; a session gives its slot back
//!   however it ends, a panic included.

mod gate;
mod log;

use crate::error::{Error, Result};
use crate::transport::remote::{self, Hello, Limits, Status, Token};
use gate::{Pending, Throttle, Turn, client_key};
use log::Log;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// The longest responder delay a client may ask for.
const MAX_DELAY_NS: u64 = 100_000_000;

/// The longest part of a responder delay spent spinning; the rest is
/// slept, so sessions asking for long delays leave the CPUs idle (two of
/// them with 100 ms delays kept two cores busy).
const MAX_SPIN_NS: u64 = 50_000;

/// How long a TCP client has, from its connection, to send its whole hello
/// (or the idle timeout, if shorter), when its address has no other
/// connection waiting; with n waiting, 1/n of it (but `MIN_HELLO`). A real
/// client sends it at once.
pub const HELLO_DEADLINE: Duration = Duration::from_secs(2);

/// The shortest hello deadline, however many connections an address opens.
const MIN_HELLO: Duration = Duration::from_millis(250);

/// The shortest and longest `--idle-timeout`: 0 would fail every session,
/// and a deadline past the clock's range would panic.
const MIN_IDLE: Duration = Duration::from_millis(10);
const MAX_IDLE: Duration = Duration::from_secs(86_400);

/// The fewest bytes of a token, unless `--insecure`: a short one is
/// guessed, throttle or not.
pub const MIN_TOKEN: usize = 16;

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
    pending: Mutex<Pending>,
    throttle: Mutex<Throttle>,
    log: Log,
    /// `--once`: the first session that ends well is the last.
    once: bool,
    /// Set when that session has ended: the accept loop then returns.
    over: AtomicBool,
}

/// One session's place among `--max-sessions` and its address's share,
/// given back when dropped: whether the session ends well, fails, panics or
/// never starts, the count goes down, so no way out of a session can leak a
/// slot.
struct Slot {
    srv: Arc<Server>,
    key: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut s = lock(&self.srv.sessions);
        s.total = s.total.saturating_sub(1);
        if let Some(n) = s.per_address.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                s.per_address.remove(&self.key);
            }
        }
    }
}

/// A mutex's contents, whatever a panicking holder left behind: every
/// update under these locks is made in single steps, never half-written.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How a connection ended, for its log line.
enum Ended {
    /// An authenticated session ended well.
    Done,
    /// An authenticated session ended on an error.
    Failed(String),
    /// Refused at its hello, answered with a status.
    Refused(String),
    /// Closed before it was authenticated: garbage, a hang-up.
    Dropped(String),
    /// The hello did not arrive within the deadline.
    NoHello(Duration),
    /// Turned out of the waiting room to make room for newer connections.
    TurnedOut,
}

/// One connection's particulars.
struct Client {
    id: u64,
    peer: SocketAddr,
    key: IpAddr,
}

impl Server {
    /// A slot for a client at `key`, or why there is none.
    fn take_slot(self: &Arc<Self>, key: IpAddr) -> std::result::Result<Slot, Full> {
        let mut s = lock(&self.sessions);
        if s.total >= self.max_sessions {
            return Err(Full::Server);
        }
        let mine = s.per_address.entry(key).or_insert(0);
        if *mine >= self.max_per_address {
            return Err(Full::Address);
        }
        *mine += 1;
        s.total += 1;
        Ok(Slot {
            srv: self.clone(),
            key,
        })
    }

    /// The log's words for a refusal.
    fn full(&self, why: &Full, key: IpAddr) -> String {
        match why {
            Full::Server => format!("at --max-sessions ({})", self.max_sessions),
            Full::Address => format!(
                "{key} already holds --max-per-address ({}) sessions",
                self.max_per_address
            ),
        }
    }

    /// The token check, spaced out for an address that got it wrong
    /// lately: `Ok` or the status to refuse with; `None` when the
    /// connection was turned out while it waited.
    fn check_token(&self, c: &Client, token: &[u8]) -> Option<Status> {
        let Some(t) = &self.token else {
            return Some(Status::Ok);
        };
        let arrived = Instant::now();
        loop {
            let now = Instant::now();
            let mut gates = lock(&self.throttle);
            match gates.turn(c.key, now) {
                Turn::Now => {
                    // Equal lengths and equal bytes, in time that does not
                    // depend on where they first differ.
                    let same = t.len() == token.len() && bool::from(t.as_slice().ct_eq(token));
                    return Some(if same {
                        gates.passed(c.key);
                        Status::Ok
                    } else {
                        gates.failed(c.key, now);
                        Status::BadToken
                    });
                }
                Turn::Wait(d) if now + d <= arrived + gate::MAX_WAIT => {
                    drop(gates);
                    if !self.sleep_waiting(c.id, d) {
                        return None;
                    }
                }
                Turn::Wait(_) => return Some(Status::Throttled),
            }
        }
    }

    /// Sleeps `d` while connection `id` waits, looking every 50 ms whether
    /// it was turned out meanwhile (then false: its thread ends sooner).
    fn sleep_waiting(&self, id: u64, d: Duration) -> bool {
        let until = Instant::now() + d;
        loop {
            if !lock(&self.pending).holds(id) {
                return false;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }

    /// What one session allows: no message above what its hello declared
    /// (checked against `--max-message` before), so a client cannot shake
    /// hands small and then ask for more.
    fn limits(&self, hello: &Hello) -> Limits {
        Limits {
            max_message: hello.max_message.min(self.max_message) as usize,
            max_delay_ns: MAX_DELAY_NS,
            max_spin_ns: MAX_SPIN_NS,
            idle: self.idle,
        }
    }

    /// How long a client has for its hello when its address has `n`
    /// connections waiting, this one included.
    fn hello_deadline(&self, n: usize) -> Duration {
        (HELLO_DEADLINE / n.max(1) as u32)
            .max(MIN_HELLO)
            .min(self.idle)
    }

    /// Reads and judges a hello; the session's slot, or how it ended.
    fn handshake(
        self: &Arc<Self>,
        c: &Client,
        s: &mut TcpStream,
        deadline: Duration,
    ) -> std::result::Result<(Hello, Slot), Ended> {
        let mut by = Deadline {
            s,
            until: Instant::now() + deadline,
            expired: false,
            hung_up: false,
        };
        let hello = match Hello::read(&mut by) {
            Ok(h) => h,
            Err(_) if !lock(&self.pending).holds(c.id) => return Err(Ended::TurnedOut),
            Err(_) if by.expired => return Err(Ended::NoHello(deadline)),
            Err(_) if by.hung_up => {
                return Err(Ended::Dropped("the client hung up before its hello".into()));
            }
            Err(why) => return Err(Ended::Dropped(why)),
        };
        // Turned out last from here on: its token is being checked.
        lock(&self.pending).heard(c.id);
        let refuse = |s: &mut TcpStream, st: Status, why: String| {
            let _ = s.write_all(&remote::welcome(st, self.max_message));
            Err(Ended::Refused(why))
        };
        if hello.version != remote::VERSION || hello.flags & !remote::FLAG_UDP != 0 {
            return refuse(s, Status::BadVersion, Status::BadVersion.reason().into());
        }
        match self.check_token(c, &hello.token) {
            None => return Err(Ended::TurnedOut),
            Some(Status::Ok) => {}
            Some(st) => return refuse(s, st, st.reason().into()),
        }
        let limit = if hello.udp() {
            self.max_message.min(remote::MAX_UDP_MESSAGE)
        } else {
            self.max_message
        };
        if hello.max_message > limit {
            return refuse(s, Status::TooLarge, Status::TooLarge.reason().into());
        }
        // Out of the waiting room before taking a slot: from here on the
        // connection cannot be turned out.
        if !lock(&self.pending).leave(c.id) {
            return Err(Ended::TurnedOut);
        }
        match self.take_slot(c.key) {
            Ok(slot) => Ok((hello, slot)),
            Err(why) => refuse(s, Status::Busy, self.full(&why, c.key)),
        }
    }

    /// One authenticated session over TCP, or over UDP set up through it.
    fn session(
        &self,
        c: &Client,
        s: &mut TcpStream,
        hello: &Hello,
    ) -> std::result::Result<(), String> {
        sleep_precisely();
        if !hello.udp() {
            s.set_read_timeout(Some(self.idle))
                .map_err(|e| format!("setting up the socket: {e}"))?;
            s.write_all(&remote::welcome(Status::Ok, self.max_message))
                .map_err(|e| format!("answering the hello: {e}"))?;
            return remote::serve_connection(s, &self.limits(hello)).map_err(|e| e.to_string());
        }
        let local = s
            .local_addr()
            .map_err(|e| format!("reading the local address: {e}"))?;
        let u = UdpSocket::bind(SocketAddr::new(local.ip(), 0))
            .map_err(|e| format!("binding a session socket: {e}"))?;
        remote::roomy(&u).map_err(|e| e.to_string())?;
        u.set_write_timeout(Some(self.idle))
            .map_err(|e| format!("setting timeouts: {e}"))?;
        let port = u
            .local_addr()
            .map_err(|e| format!("reading the session's port: {e}"))?
            .port();
        let cookie = remote::new_cookie().map_err(|e| format!("drawing a cookie: {e}"))?;
        let mut answer = remote::welcome(Status::Ok, self.max_message).to_vec();
        answer.extend_from_slice(&remote::grant(port, &cookie));
        s.write_all(&answer)
            .map_err(|e| format!("answering the hello: {e}"))?;
        // The TCP connection is the session's: when the client closes it
        // (or dies), the session ends then, not at its idle timeout.
        let ended = Arc::new(AtomicBool::new(false));
        let watch = s
            .try_clone()
            .and_then(|w| w.set_read_timeout(None).map(|_| w))
            .map_err(|e| format!("watching the control connection: {e}"))?;
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name(format!("xb-serve-{}-tcp", c.id))
                .spawn_scoped(scope, || watch_control(watch, &ended, &u))
                .map_err(|e| format!("cannot start a thread: {e}"))?;
            let r = remote::await_client(&u, c.peer.ip(), &cookie, self.idle, &ended)
                .and_then(|_| {
                    u.set_read_timeout(Some(self.idle))
                        .map_err(|e| format!("setting timeouts: {e}"))
                })
                .and_then(|()| {
                    remote::serve_datagrams(&u, &self.limits(hello), &cookie, &ended)
                        .map_err(|e| e.to_string())
                });
            // Wakes the watcher, whose read then ends (no FIN is sent).
            let _ = s.shutdown(std::net::Shutdown::Read);
            r
        })
    }

    /// One connection, from its hello to its log line; in its own thread.
    fn client(self: Arc<Self>, c: Client, mut s: TcpStream, deadline: Duration) {
        let mut udp = false;
        let ended = guarded(|| {
            s.set_write_timeout(Some(self.idle))
                .and_then(|_| s.set_nodelay(true))
                .map_err(|e| format!("setting up the socket: {e}"))?;
            let (hello, slot) = match self.handshake(&c, &mut s, deadline) {
                Ok(h) => h,
                Err(ended) => return Ok(ended),
            };
            udp = hello.udp();
            let r = self.session(&c, &mut s, &hello);
            drop(slot);
            Ok(match r {
                Ok(()) => Ended::Done,
                Err(why) => Ended::Failed(why),
            })
        })
        .unwrap_or_else(Ended::Failed);
        lock(&self.pending).leave(c.id);
        drop(s);
        self.log_end(&c, udp, &ended);
        // Only a session that ended well: a client that authenticated and
        // then sent garbage (or any client, without a token) is a bad
        // connection too, and `--once` waits for the run it was started for.
        if self.once && matches!(ended, Ended::Done) {
            self.over.store(true, Ordering::SeqCst);
        }
    }

    /// The log line of a connection that ended.
    fn log_end(&self, c: &Client, udp: bool, ended: &Ended) {
        let Client { id, peer, key } = c;
        let s = format!(
            "session {id}{} from {peer}",
            if udp { " (udp)" } else { "" }
        );
        let (kind, line) = match ended {
            Ended::Done => ("done", format!("{s}: done")),
            Ended::Failed(why) | Ended::Dropped(why) => ("closed", format!("{s}: closed: {why}")),
            Ended::Refused(why) => ("refused", format!("{s}: refused: {why}")),
            Ended::NoHello(d) => (
                "no hello",
                format!(
                    "session {id}: no hello within {} from {peer}; closed",
                    humantime::format_duration(*d)
                ),
            ),
            Ended::TurnedOut => (
                "turned out",
                format!(
                    "{s}: closed before its hello, to make room: {key} held {} unauthenticated connections, or the server {}",
                    gate::PENDING_PER_ADDRESS,
                    gate::PENDING_TOTAL
                ),
            ),
        };
        self.log.line(kind, &line);
    }
}

/// Sleeps of this thread end when asked, not up to 50 µs later (the
/// kernel's default slack): a responder delay's sleep stays within its
/// spinning margin.
fn sleep_precisely() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer and changes only this
    // thread's timer slack; no memory is passed.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
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

/// What `xferbench serve` is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeConfig {
    /// Address and port to listen on.
    pub listen: String,
    /// `--token SECRET` was given: refused (see `validate`), as every user
    /// of the machine reads a command line in `ps` and /proc/PID/cmdline
    /// for as long as the server runs. The secret itself is not kept.
    pub token_arg: bool,
    /// A file holding the shared secret (one line).
    pub token_file: Option<PathBuf>,
    /// Largest message a client may use (1 byte to 1 GiB).
    pub max_message: u64,
    /// Clients served at once (1..=1024); more are refused as busy.
    pub max_sessions: u32,
    /// Sessions one client address may hold at once (1..=1024); None: half
    /// of `max_sessions`, rounded up. One address cannot take every slot.
    pub max_per_address: Option<u32>,
    /// A client silent this long loses its connection; also the most one
    /// message may take to arrive once begun (plus its length at 64 KiB/s).
    pub idle_timeout: Duration,
    /// Serve one client whose session ends well, then return.
    pub once: bool,
    /// Listen beyond loopback without a token, or with a weak one
    /// (refused otherwise).
    pub insecure: bool,
}

impl Default for ServeConfig {
    fn default() -> ServeConfig {
        ServeConfig {
            listen: "127.0.0.1:5290".into(),
            token_arg: false,
            token_file: None,
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
        if !(MIN_IDLE..=MAX_IDLE).contains(&self.idle_timeout) {
            return Err(Error::usage(format!(
                "--idle-timeout {}: must be from {} to {} (a client silent this long loses its connection)",
                humantime::format_duration(self.idle_timeout),
                humantime::format_duration(MIN_IDLE),
                humantime::format_duration(MAX_IDLE)
            )));
        }
        if self.token_arg {
            return Err(Error::usage(
                "--token is refused: a command line shows in ps and /proc/PID/cmdline to every user of this machine; put the token in a file only you can read (--token-file F, chmod 600 F; clients: XFERBENCH_TOKEN_FILE=F) or in XFERBENCH_TOKEN",
            ));
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

    /// The token, from `--token-file` or the environment
    /// (`XFERBENCH_TOKEN_FILE`, `XFERBENCH_TOKEN`), held to `strong`.
    pub fn resolve_token(&self) -> Result<Option<Token>> {
        let token = match &self.token_file {
            Some(path) => Some(remote::token_file(
                path,
                format!("--token-file {}", path.display()),
            )?),
            None => remote::env_token()?,
        };
        token.map(|t| strong(t, self.insecure)).transpose()
    }
}

/// `t`, if it holds against guessing: not over `MAX_TOKEN` bytes and,
/// unless `insecure`, at least `MIN_TOKEN` bytes, not all blank or one
/// byte repeated (the throttle slows guesses; only length defeats them).
fn strong(t: Token, insecure: bool) -> Result<Token> {
    let b = &t.bytes;
    if b.len() > remote::MAX_TOKEN {
        return Err(Error::usage(format!(
            "the token from {} is longer than {} bytes",
            t.source,
            remote::MAX_TOKEN
        )));
    }
    let weak = b.len() < MIN_TOKEN
        || b.iter().all(|c| c.is_ascii_whitespace())
        || b.iter().all(|c| *c == b[0]);
    if weak && !insecure {
        return Err(Error::usage(format!(
            "the token from {} is {} bytes{}: a token needs at least {MIN_TOKEN}, not all blank or alike, to hold against guessing (one: `head -c 24 /dev/urandom | base64 > F; chmod 600 F`, then --token-file F here and XFERBENCH_TOKEN_FILE=F on the clients), or pass --insecure to accept it",
            t.source,
            b.len(),
            if b.len() >= MIN_TOKEN {
                ", all blank or alike"
            } else {
                ""
            }
        )));
    }
    Ok(t)
}

/// Reads a UDP session's TCP connection until it closes (anything the
/// client sends on it is dropped), then ends the session: `ended` set, and
/// the UDP socket shut down so that a receive waiting on it returns at once.
fn watch_control(mut tcp: TcpStream, ended: &AtomicBool, udp: &UdpSocket) {
    use std::os::fd::AsRawFd;
    let mut b = [0u8; 256];
    loop {
        match tcp.read(&mut b) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    ended.store(true, Ordering::SeqCst);
    // SAFETY: shutdown takes integers only; `udp` is borrowed, so its fd
    // is open. An unconnected socket answers ENOTCONN but is woken all the same.
    unsafe { libc::shutdown(udp.as_raw_fd(), libc::SHUT_RDWR) };
}

/// Waits up to `timeout` for the listener to have a connection to accept.
fn readable(l: &TcpListener, timeout: Duration) -> bool {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: l.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one live pollfd, of which poll writes only revents.
    let r = unsafe { libc::poll(&mut p, 1, timeout.as_millis() as libc::c_int) };
    r > 0
}

/// The warning a start may owe: a token file others can read.
fn token_warning(token: Option<&Token>) {
    let Some(t) = token else { return };
    if let Some(mode) = t.mode
        && mode & 0o077 != 0
    {
        eprintln!(
            "xferbench serve: warning: {} can be read by other users (mode {mode:04o}); chmod 600 it",
            t.source
        );
    }
}

/// Serves until killed (or, with `once`, until a session ends well).
pub fn run(args: &ServeConfig, quiet: bool) -> Result<()> {
    args.validate()?;
    let token = args.resolve_token()?;
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
    // Beyond loopback, anyone who reaches the port could otherwise use this
    // machine's CPUs and network: a token, or a choice said out loud.
    let open = token.is_none() && !local.ip().is_loopback();
    if open && !args.insecure {
        return Err(Error::usage(format!(
            "listening on {local} without a token lets anyone who reaches it use this machine; set --token-file F (or XFERBENCH_TOKEN_FILE, XFERBENCH_TOKEN) here and XFERBENCH_TOKEN_FILE on the clients, or pass --insecure on a network you trust"
        )));
    }
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::io("setting up the listening socket", e))?;
    let per_address = args.per_address();
    let server = Arc::new(Server {
        token: token.as_ref().map(|t| t.bytes.clone()),
        max_message: args.max_message,
        idle: args.idle_timeout,
        sessions: Mutex::new(Sessions::default()),
        // One session at a time with --once: the first is the last.
        max_sessions: if args.once {
            1
        } else {
            args.max_sessions as usize
        },
        max_per_address: per_address as usize,
        pending: Mutex::new(Pending::default()),
        throttle: Mutex::new(Throttle::default()),
        log: Log::new(quiet),
        once: args.once,
        over: AtomicBool::new(false),
    });
    // Always said, even with --quiet: scripts read the port from it.
    eprintln!(
        "xferbench serve: listening on {local} (TCP; UDP sessions are set up over it; max message {} bytes, {} sessions, {per_address} per address, hello within {}, idle timeout {:?}{})",
        args.max_message,
        server.max_sessions,
        humantime::format_duration(server.hello_deadline(1)),
        args.idle_timeout,
        if server.token.is_some() {
            ", token required"
        } else {
            ""
        }
    );
    token_warning(token.as_ref());
    if open {
        eprintln!(
            "xferbench serve: warning: no token (--insecure): anyone who reaches {local} can run measurements here"
        );
    }
    accept_loop(&server, &listener);
    server.log.flush();
    Ok(())
}

/// Accepts connections until `--once`'s session is over, each into the
/// waiting room and a thread of its own.
fn accept_loop(server: &Arc<Server>, listener: &TcpListener) {
    let mut id = 0u64;
    while !server.over.load(Ordering::SeqCst) {
        server.log.tick();
        if !readable(listener, Duration::from_millis(250)) {
            continue;
        }
        let (s, peer) = match listener.accept() {
            Ok(c) => c,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(e) => {
                server.log.line("accept", &format!("accept failed: {e}"));
                // Out of fds, say: wait for sessions to end rather than spin.
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        id += 1;
        let key = client_key(peer.ip());
        let shut = match s.set_nonblocking(false).and_then(|_| s.try_clone()) {
            Ok(shut) => shut,
            Err(e) => {
                server
                    .log
                    .line("closed", &format!("session {id} from {peer}: closed: {e}"));
                continue;
            }
        };
        let n = lock(&server.pending).admit(id, key, shut);
        let deadline = server.hello_deadline(n);
        let srv = server.clone();
        let c = Client { id, peer, key };
        let started = std::thread::Builder::new()
            .name(format!("xb-serve-{id}"))
            .spawn(move || srv.client(c, s, deadline));
        if let Err(e) = started {
            // The closure, and the connection in it, were dropped.
            lock(&server.pending).leave(id);
            server.log.line(
                "closed",
                &format!("session {id}: cannot start a thread: {e}"),
            );
        }
    }
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
            pending: Mutex::new(Pending::default()),
            throttle: Mutex::new(Throttle::default()),
            log: Log::new(true),
            once: false,
            over: AtomicBool::new(false),
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
        assert_eq!(lock(&srv.sessions).total, 0);
        assert!(lock(&srv.sessions).per_address.is_empty());
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
        assert_eq!(lock(&srv.sessions).total, 0);
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

    #[test]
    fn the_hello_deadline_shrinks_as_an_address_opens_more() {
        let srv = server(4, 2);
        assert_eq!(
            srv.hello_deadline(1),
            Duration::from_secs(1),
            "the idle timeout"
        );
        let mut srv = Arc::into_inner(srv).unwrap();
        srv.idle = Duration::from_secs(30);
        assert_eq!(srv.hello_deadline(1), HELLO_DEADLINE);
        assert_eq!(srv.hello_deadline(4), HELLO_DEADLINE / 4);
        assert_eq!(srv.hello_deadline(100), MIN_HELLO);
    }

    #[test]
    fn weak_tokens_need_insecure() {
        let t = |s: &str| Token {
            bytes: s.as_bytes().to_vec(),
            source: "XFERBENCH_TOKEN".into(),
            mode: None,
        };
        let e = strong(t(" "), false).unwrap_err().to_string();
        assert!(
            e.contains("XFERBENCH_TOKEN is 1 bytes") && e.contains("--insecure"),
            "{e}"
        );
        let e = strong(t(&"a".repeat(20)), false).unwrap_err().to_string();
        assert!(e.contains("alike"), "{e}");
        let e = strong(t(&" ".repeat(20)), false).unwrap_err().to_string();
        assert!(e.contains("alike"), "{e}");
        let ok = "correct horse battery";
        assert_eq!(strong(t(ok), false).unwrap().bytes, ok.as_bytes());
        assert_eq!(strong(t("short"), true).unwrap().bytes, b"short");
        let e = strong(t(&"x".repeat(remote::MAX_TOKEN + 1)), true).unwrap_err();
        assert!(e.to_string().contains("longer than 256"), "{e}");
    }

    #[test]
    fn a_token_on_the_command_line_is_refused() {
        let c = ServeConfig {
            token_arg: true,
            ..ServeConfig::default()
        };
        let e = c.validate().unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("--token-file"), "{e}");
    }

    #[test]
    fn idle_timeouts_of_zero_or_past_a_day_are_usage_errors() {
        for d in [Duration::ZERO, Duration::from_secs(86_401)] {
            let c = ServeConfig {
                idle_timeout: d,
                ..ServeConfig::default()
            };
            let e = c.validate().unwrap_err();
            assert!(e.to_string().contains("--idle-timeout"), "{e}");
        }
    }
}
