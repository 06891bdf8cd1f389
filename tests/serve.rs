//! `xferbench serve` on loopback: remote round trips and curves through it,
//! and clients that misbehave — garbage, oversized lengths, wrong tokens
//! (guessed fast, and throttled), a stall mid-frame or a trickle, unknown
//! control frames, silent connections, a crowd of them from many
//! addresses, one address taking every slot, spoofed UDP, a flood of junk —
//! cannot crash, hang, bloat, lock out or spin the server, and a good
//! client is served right after (or during) each.

mod common;

use common::{check_fits, finish, json, stderr, xferbench};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use xferbench::transport::ReplyShape;
use xferbench::transport::remote::{self, Hello, Status};

/// A running server, killed when dropped.
struct Server {
    child: Child,
    addr: String,
    /// Its stderr after the listening line, read as it comes (a server
    /// whose stderr closed would lose its log).
    log: Arc<Mutex<Vec<String>>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        Server::start_with(true, extra)
    }

    /// A server that logs each session (no `-q`), its idle timeout 1 s
    /// unless `extra` gives one.
    fn start_with(quiet: bool, extra: &[&str]) -> Server {
        Server::start_env(quiet, extra, &[])
    }

    /// As `start_with`, with these environment variables (a token).
    fn start_env(quiet: bool, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut c = xferbench();
        c.args(["serve", "--listen", "127.0.0.1:0"]);
        if !extra.contains(&"--idle-timeout") {
            c.args(["--idle-timeout", "1s"]);
        }
        if quiet {
            c.arg("-q");
        }
        c.args(extra)
            .env_remove("XFERBENCH_TOKEN")
            .env_remove("XFERBENCH_TOKEN_FILE")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = c.spawn().expect("start serve");
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        err.read_line(&mut line).unwrap();
        let addr = line
            .split("listening on ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        let log = Arc::new(Mutex::new(Vec::new()));
        let keep = log.clone();
        std::thread::spawn(move || {
            for l in err.lines() {
                let Ok(l) = l else { break };
                keep.lock().unwrap().push(l);
            }
        });
        Server { child, addr, log }
    }

    /// Waits for a log line containing `want`; a hang guard of a minute.
    fn logged(&self, want: &str) -> String {
        let t = Instant::now();
        loop {
            if let Some(l) = self.log.lock().unwrap().iter().find(|l| l.contains(want)) {
                return l.clone();
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "no log line with {want:?} in {:?}",
                self.log.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// As `logged`, for a line containing any of `wants`.
    fn logged_any(&self, wants: &[&str]) -> String {
        let t = Instant::now();
        loop {
            if let Some(l) = self
                .log
                .lock()
                .unwrap()
                .iter()
                .find(|l| wants.iter().any(|w| l.contains(w)))
            {
                return l.clone();
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "no log line with any of {wants:?} in {:?}",
                self.log.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    fn rss_kib(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        s.lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap()
    }

    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s
    }

    /// A UDP session as a client sets it up: the hello over TCP asking
    /// for UDP, then (if accepted) the grant's port and cookie, and a UDP
    /// socket connected to that port. The TCP connection is the session's:
    /// keep it.
    fn udp_session(&self, max: u64) -> (Option<UdpSession>, Option<Status>) {
        let mut t = self.connect();
        t.write_all(&udp_hello(max, b"")).unwrap();
        let st = answer(&mut t);
        if st != Some(Status::Ok) {
            return (None, st);
        }
        let mut g = [0u8; remote::GRANT_LEN];
        t.read_exact(&mut g).unwrap();
        let (port, cookie) = remote::parse_grant(&g).expect("a grant");
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        u.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        u.connect(("127.0.0.1", port)).unwrap();
        (Some(UdpSession { u, cookie, _tcp: t }), st)
    }

    /// As `serves_a_good_client`, with a token.
    fn serves_a_good_client_with(&self, token: &str) {
        let mut c = xferbench();
        c.env("XFERBENCH_TOKEN", token).args([
            "roundtrip",
            "-t",
            &format!("tcp://{}", self.addr),
            "--in",
            "64",
            "--out",
            "64",
            "--samples",
            "200",
            "--format",
            "json",
            "-q",
        ]);
        assert_eq!(json(&finish(c))["points"][0]["summary"]["count"], 200);
    }

    /// A good client: a short remote round trip must work. A session the
    /// server has not yet seen end (a client just gone, a stalled one before
    /// its idle timeout) can hold the last slot for a moment, longer on a
    /// busy machine: "at its --max-sessions" is the one refusal allowed,
    /// and the client tries again, for up to a minute.
    fn serves_a_good_client(&self) {
        let first = std::time::Instant::now();
        loop {
            let mut c = xferbench();
            c.args([
                "roundtrip",
                "-t",
                &format!("tcp://{}", self.addr),
                "--in",
                "64",
                "--out",
                "64",
                "--samples",
                "200",
                "--format",
                "json",
                "-q",
            ]);
            let o = finish(c);
            if !o.status.success() && stderr(&o).contains("--max-sessions") {
                assert!(
                    first.elapsed() < Duration::from_secs(60),
                    "still busy after a minute: {}",
                    stderr(&o)
                );
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            let d = json(&o);
            assert_eq!(d["points"][0]["summary"]["count"], 200);
            return;
        }
    }
}

/// A remote UDP session's ends, as a client holds them.
struct UdpSession {
    u: UdpSocket,
    cookie: [u8; remote::COOKIE_LEN],
    _tcp: TcpStream,
}

impl UdpSession {
    /// Sends one datagram behind the session's cookie.
    fn send(&self, payload: &[u8]) {
        self.u.send(&behind(&self.cookie, payload)).unwrap();
    }

    /// The payload of the next datagram, after checking its cookie.
    fn recv(&self) -> Vec<u8> {
        let mut b = vec![0u8; 70_000];
        let n = self.u.recv(&mut b).expect("an answer");
        assert_eq!(b[..remote::COOKIE_LEN], self.cookie, "the session's cookie");
        b[remote::COOKIE_LEN..n].to_vec()
    }
}

/// A payload behind a cookie, as every datagram of a session is sent.
fn behind(cookie: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut d = cookie.to_vec();
    d.extend_from_slice(payload);
    d
}

fn hello(max: u64, token: &[u8]) -> Vec<u8> {
    Hello {
        version: remote::VERSION,
        max_message: max,
        flags: 0,
        token: token.to_vec(),
    }
    .encode()
}

/// A hello asking for a UDP session.
fn udp_hello(max: u64, token: &[u8]) -> Vec<u8> {
    Hello {
        version: remote::VERSION,
        max_message: max,
        flags: remote::FLAG_UDP,
        token: token.to_vec(),
    }
    .encode()
}

/// A token long enough for a server to take without `--insecure`.
const TOKEN: &str = "sesame-sesame-open-up";

/// A TCP connection to `to` from the loopback address `from` (127.0.0.2…),
/// or None where this machine will not bind it.
fn connect_from(from: &str, to: &str) -> Option<TcpStream> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).ok()?;
    let at: std::net::SocketAddr = format!("{from}:0").parse().unwrap();
    s.bind(&at.into()).ok()?;
    let to: std::net::SocketAddr = to.parse().unwrap();
    s.connect_timeout(&to.into(), Duration::from_secs(5)).ok()?;
    Some(s.into())
}

fn answer(s: &mut TcpStream) -> Option<Status> {
    let mut w = [0u8; remote::WELCOME_LEN];
    s.read_exact(&mut w).ok()?;
    remote::parse_welcome(&w).map(|(st, _)| st)
}

/// Whether the server closed the connection (reads end, or error).
fn closed(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 64];
    matches!(s.read(&mut b), Ok(0) | Err(_))
}

#[test]
fn remote_roundtrip_and_curve_through_serve() {
    let srv = Server::start(&[]);
    let t = format!("tcp://{}", srv.addr);
    let mut c = xferbench();
    c.args([
        "roundtrip",
        "-t",
        &t,
        "--in",
        "64,4k",
        "--out",
        "64,4k",
        "--samples",
        "300",
        "--format",
        "json",
        "-q",
    ]);
    let d = json(&finish(c));
    assert_eq!(d["points"].as_array().unwrap().len(), 4);
    assert_eq!(d["points"][0]["transport"], "tcp://HOST:PORT");
    let mut c = xferbench();
    c.args([
        "curve",
        "-t",
        &t,
        "--sizes",
        "1..64k",
        "--duration",
        "20ms",
        "--format",
        "json",
        "-q",
    ]);
    let d = json(&finish(c));
    assert_eq!(d["points"].as_array().unwrap().len(), 17);
    assert_eq!(d["points"][0]["transport"], "tcp://HOST:PORT");
    // One curve, so one fit: present, or absent because its 20 ms points did
    // not grow with size (as on a loaded 2-CPU machine), and either way what
    // the points give.
    assert_eq!(d["fits"].as_array().unwrap().len(), 1, "{}", d["fits"]);
    check_fits(&d);
}

#[test]
fn bad_clients_are_refused_and_good_ones_still_served() {
    let mut srv = Server::start_env(
        true,
        &["--max-message", "1M"],
        &[("XFERBENCH_TOKEN", TOKEN)],
    );
    // Garbage instead of a hello.
    let mut s = srv.connect();
    s.write_all(b"GET / HTTP/1.1\r\nHost: example\r\n\r\n")
        .unwrap();
    assert!(closed(&mut s));
    // A wrong token, a missing one.
    for tok in [&b"open"[..], &b""[..]] {
        let mut s = srv.connect();
        s.write_all(&hello(64, tok)).unwrap();
        assert_eq!(answer(&mut s), Some(Status::BadToken));
    }
    // A claimed message size over --max-message.
    let mut s = srv.connect();
    s.write_all(&hello(1 << 30, TOKEN.as_bytes())).unwrap();
    assert_eq!(answer(&mut s), Some(Status::TooLarge));
    // An absurd token length: refused before it is read.
    let mut h = hello(64, b"");
    h[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
    let mut s = srv.connect();
    s.write_all(&h).unwrap();
    assert!(closed(&mut s));
    // A stall mid-hello: dropped at the hello deadline (2 s, or the idle
    // timeout, 1 s here, if shorter).
    let mut s = srv.connect();
    s.write_all(&h[..5]).unwrap();
    let t = std::time::Instant::now();
    assert!(closed(&mut s));
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "stalled client kept {:?}",
        t.elapsed()
    );
    // A good handshake, then a configure asking for 1 GiB messages:
    // refused with the reason, then closed.
    let mut s = srv.connect();
    s.write_all(&hello(64, TOKEN.as_bytes())).unwrap();
    assert_eq!(answer(&mut s), Some(Status::Ok));
    s.write_all(&configure(1 << 30, 64)).unwrap();
    let why = refused(&mut s);
    assert!(why.contains("1073741824-byte messages"), "{why}");
    cut(&mut s);
    assert!(srv.alive());
    // Through all that, a good client with the token is served.
    let mut c = xferbench();
    c.env("XFERBENCH_TOKEN", TOKEN).args([
        "roundtrip",
        "-t",
        &format!("tcp://{}", srv.addr),
        "--in",
        "64",
        "--out",
        "64",
        "--samples",
        "100",
        "--format",
        "json",
        "-q",
    ]);
    let d = json(&finish(c));
    assert_eq!(d["points"][0]["summary"]["count"], 100);
    // Without it, one clear line and exit 2.
    let mut c = xferbench();
    c.env_remove("XFERBENCH_TOKEN").args([
        "roundtrip",
        "-t",
        &format!("tcp://{}", srv.addr),
        "--in",
        "64",
        "--out",
        "64",
        "-q",
    ]);
    let o = finish(c);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("token"), "{}", stderr(&o));
}

/// A control frame as the measurement protocol sends it.
fn configure(request: usize, reply: usize) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&0x5842_4331u32.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&ReplyShape::pingpong(request, reply, 0, 1).encode());
    b
}

/// A control frame of any kind.
fn frame(kind: u32, shape: &ReplyShape) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&0x5842_4331u32.to_le_bytes());
    b.extend_from_slice(&kind.to_le_bytes());
    b.extend_from_slice(&shape.encode());
    b
}

/// The server's refusal of a control frame over TCP: its reason (a frame
/// acknowledged instead fails the test).
fn refused(s: &mut TcpStream) -> String {
    let mut head = [0u8; 12];
    s.read_exact(&mut head).expect("an answer to the frame");
    assert_ne!(&head[..8], b"XBACK001", "the frame was acknowledged");
    assert_eq!(&head[..8], b"XBNAK001");
    let n = u32::from_le_bytes(head[8..12].try_into().unwrap()) as usize;
    assert!(n <= 256, "a {n}-byte reason");
    let mut why = vec![0u8; n];
    s.read_exact(&mut why).unwrap();
    String::from_utf8(why).unwrap()
}

/// Reads until the server closes `s`; a read that times out instead (the
/// server kept it) fails the test.
fn cut(s: &mut TcpStream) {
    let mut b = [0u8; 64];
    loop {
        match s.read(&mut b) {
            Ok(0) => return,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
            Err(e) => panic!("the server kept a connection open: {e}"),
        }
    }
}

/// The frame a probe found: after a good hello, a control frame of an
/// unknown kind (99) was acknowledged and then panicked the session, whose
/// slot was never given back, so 16 of them (TCP or UDP) locked every real
/// client out. Now each is refused with its reason, its session closed and
/// its slot freed: 40 of them, then real clients are served.
#[test]
fn unknown_control_frames_are_refused_and_free_their_slot() {
    let srv = Server::start_with(false, &["--idle-timeout", "30s"]);
    let bad = frame(99, &ReplyShape::pingpong(64, 64, 0, 1));
    let mut whole = hello(64, b"");
    whole.extend_from_slice(&bad);
    assert_eq!(whole.len(), 96);
    for _ in 0..20 {
        let mut s = srv.connect();
        s.write_all(&whole).unwrap();
        assert_eq!(answer(&mut s), Some(Status::Ok));
        let why = refused(&mut s);
        assert!(why.contains("unknown control frame kind 99"), "{why}");
        cut(&mut s);
    }
    for _ in 0..20 {
        let (u, st) = srv.udp_session(64);
        assert_eq!(st, Some(Status::Ok));
        let u = u.unwrap();
        u.send(&bad);
        let b = u.recv();
        assert_eq!(&b[..8], b"XBNAK001", "{b:?}");
        let why = String::from_utf8_lossy(&b[12..]);
        assert!(why.contains("unknown control frame kind 99"), "{why}");
    }
    let line = srv.logged("unknown control frame kind 99");
    assert!(line.contains("closed"), "{line}");
    srv.serves_a_good_client();
    let mut c = xferbench();
    c.args([
        "roundtrip",
        "-t",
        &format!("udp://{}", srv.addr),
        "--in",
        "64",
        "--out",
        "64",
        "--samples",
        "100",
        "--format",
        "json",
        "-q",
    ]);
    assert_eq!(json(&finish(c))["points"][0]["summary"]["count"], 100);
    assert!(
        !srv.log.lock().unwrap().iter().any(|l| l.contains("panick")),
        "{:?}",
        srv.log.lock().unwrap()
    );
}

/// A session allows no message above the size its hello declared, even
/// below `--max-message`; what it refuses, the client is told.
#[test]
fn a_configure_above_the_hello_or_with_empty_requests_is_refused() {
    let srv = Server::start(&["--max-message", "1M"]);
    let mut s = srv.connect();
    s.write_all(&hello(64, b"")).unwrap();
    assert_eq!(answer(&mut s), Some(Status::Ok));
    s.write_all(&configure(4096, 64)).unwrap();
    let why = refused(&mut s);
    assert!(
        why.contains("4096-byte") && why.contains("at most 64"),
        "{why}"
    );
    cut(&mut s);
    // Empty requests would spin the server without waiting on the client.
    let mut s = srv.connect();
    s.write_all(&hello(64, b"")).unwrap();
    assert_eq!(answer(&mut s), Some(Status::Ok));
    s.write_all(&configure(0, 64)).unwrap();
    assert!(refused(&mut s).contains("empty requests"));
    cut(&mut s);
    // Within the hello: acknowledged.
    let mut s = srv.connect();
    s.write_all(&hello(4096, b"")).unwrap();
    assert_eq!(answer(&mut s), Some(Status::Ok));
    s.write_all(&configure(4096, 64)).unwrap();
    let mut ack = [0u8; 8];
    s.read_exact(&mut ack).unwrap();
    assert_eq!(&ack, b"XBACK001");
    // A real client asking for more delay than a server allows reads why.
    let mut c = xferbench();
    c.args([
        "roundtrip",
        "-t",
        &format!("tcp://{}", srv.addr),
        "--in",
        "64",
        "--out",
        "64",
        "--samples",
        "10",
        "--responder-delay",
        "200ms",
        "-q",
    ]);
    let o = finish(c);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("refused") && e.contains("responder delay"),
        "{e}"
    );
}

/// The first lines a `serve` writes, read with a hang guard; the server is
/// then stopped.
fn first_lines(mut c: std::process::Command, n: usize) -> Vec<String> {
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let lines: Vec<String> = BufReader::new(err)
            .lines()
            .take(n)
            .map_while(Result::ok)
            .collect();
        let _ = tx.send(lines);
    });
    let lines = rx.recv_timeout(Duration::from_secs(60));
    let _ = child.kill();
    let _ = child.wait();
    lines.expect("serve said nothing in a minute")
}

/// Beyond loopback a token is required, or `--insecure` said out loud.
#[test]
fn serve_beyond_loopback_needs_a_token_or_insecure() {
    let mut c = xferbench();
    c.env_remove("XFERBENCH_TOKEN")
        .args(["serve", "--listen", "0.0.0.0:0"]);
    let o = finish(c);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("without a token") && e.contains("XFERBENCH_TOKEN") && e.contains("--insecure"),
        "{e}"
    );
    let mut c = xferbench();
    c.env_remove("XFERBENCH_TOKEN")
        .args(["serve", "--listen", "0.0.0.0:0", "--insecure"]);
    let l = first_lines(c, 2);
    assert!(l[0].contains("listening on 0.0.0.0:"), "{l:?}");
    assert!(
        l[1].contains("warning") && l[1].contains("no token"),
        "{l:?}"
    );
    let mut c = xferbench();
    c.env("XFERBENCH_TOKEN", TOKEN)
        .args(["serve", "--listen", "0.0.0.0:0"]);
    let l = first_lines(c, 1);
    assert!(l[0].contains("token required"), "{l:?}");
}

/// Connections that send nothing, or trickle their hello, are cut at the
/// hello deadline (2 s), long before the idle timeout (60 s here), with a
/// plain log line; a real client is then served.
#[test]
fn silent_clients_are_cut_at_the_hello_deadline() {
    let srv = Server::start_with(
        false,
        &[
            "--idle-timeout",
            "60s",
            "--max-sessions",
            "3",
            "--max-per-address",
            "3",
        ],
    );
    let mut silent: Vec<TcpStream> = (0..2).map(|_| srv.connect()).collect();
    let slow = srv.connect();
    let mut slow_r = slow.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        let mut slow = slow;
        for b in hello(64, b"") {
            if slow.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    });
    // A hang guard well below the idle timeout: the deadline, not the
    // idle timeout, must be what closes them.
    for s in silent.iter_mut().chain([&mut slow_r]) {
        s.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
        cut(s);
    }
    let _ = trickle.join();
    let line = srv.logged("no hello within 2s from 127.0.0.1:");
    assert!(line.ends_with("; closed"), "{line}");
    assert!(
        !srv.log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("os error")),
        "{:?}",
        srv.log.lock().unwrap()
    );
    srv.serves_a_good_client();
}

/// One address holds at most `--max-per-address` sessions (TCP and UDP
/// together); another address is still served.
#[test]
fn one_address_cannot_take_every_slot() {
    let srv = Server::start_with(
        false,
        &[
            "--max-sessions",
            "4",
            "--max-per-address",
            "2",
            "--idle-timeout",
            "30s",
        ],
    );
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut s = srv.connect();
        s.write_all(&hello(64, b"")).unwrap();
        assert_eq!(answer(&mut s), Some(Status::Ok));
        held.push(s);
    }
    // A slot is taken only after the hello: a third connection waits
    // for it, and is refused then.
    let mut third = srv.connect();
    third.write_all(&hello(64, b"")).unwrap();
    assert_eq!(answer(&mut third), Some(Status::Busy));
    let (_u, st) = srv.udp_session(64);
    assert_eq!(st, Some(Status::Busy));
    srv.logged("127.0.0.1 already holds --max-per-address (2) sessions");
    let mut c = xferbench();
    c.args([
        "roundtrip",
        "-t",
        &format!("tcp://{}", srv.addr),
        "--in",
        "64",
        "--out",
        "64",
        "-q",
    ]);
    let o = finish(c);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--max-per-address"), "{}", stderr(&o));
    // Another loopback address is its own client.
    if let Some(mut s) = connect_from("127.0.0.2", &srv.addr) {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(&hello(64, b"")).unwrap();
        assert_eq!(answer(&mut s), Some(Status::Ok));
    } else {
        eprintln!("cannot bind 127.0.0.2 here: the second address is not tried");
    }
    drop(held);
    srv.serves_a_good_client();
}

/// splitmix64: a fixed-seed generator, so the probes below are the same on
/// every run.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A control frame that is mostly well formed, with the values probes
/// found trouble at: unknown kinds, zero and oversized lengths, bad
/// patterns and windows, short and long frames.
fn probe_frame(st: &mut u64) -> Vec<u8> {
    const EDGES: [u64; 10] = [
        0,
        1,
        2,
        64,
        4096,
        65536,
        65537,
        1 << 30,
        u32::MAX as u64,
        u64::MAX,
    ];
    let pick = |st: &mut u64| match splitmix(st) % 4 {
        0 => splitmix(st),
        1 => splitmix(st) % 256,
        _ => EDGES[(splitmix(st) % EDGES.len() as u64) as usize],
    };
    let mut f = Vec::with_capacity(96);
    let magic = if splitmix(st).is_multiple_of(16) {
        splitmix(st) as u32
    } else {
        0x5842_4331
    };
    f.extend_from_slice(&magic.to_le_bytes());
    let kind = [1u32, 1, 1, 2, 0, 3, 99, splitmix(st) as u32][(splitmix(st) % 8) as usize];
    f.extend_from_slice(&kind.to_le_bytes());
    for w in 0..8 {
        let v = match w {
            // Pattern in the low byte, window above.
            4 => (splitmix(st) % 4) | (pick(st) << 8),
            // Small requests and delays, most of the time, so sessions run.
            0 | 1 if splitmix(st).is_multiple_of(2) => splitmix(st) % 100,
            2 if splitmix(st).is_multiple_of(2) => 0,
            3 if splitmix(st).is_multiple_of(2) => splitmix(st) % 4,
            _ => pick(st),
        };
        f.extend_from_slice(&v.to_le_bytes());
    }
    match splitmix(st) % 16 {
        0 => f.truncate((splitmix(st) % 72) as usize),
        1 => f.extend_from_slice(&[0xa5; 24]),
        _ => {}
    }
    f
}

/// The fuzz targets' probes on every test run, without cargo-fuzz: a few
/// thousand seeded frames through the server's frame check (each accepted
/// one within the limits, each refusal one line, no panic), then a few
/// hundred whole sessions of such frames and data, each ending cleanly.
#[test]
fn seeded_serve_frames_and_sessions_never_panic() {
    let mut st = 0x5eed_5e7e_u64;
    let (mut ok, mut no) = (0, 0);
    for _ in 0..5000 {
        match xferbench::fuzzing::serve_frame(&probe_frame(&mut st)) {
            Ok(()) => ok += 1,
            Err(why) => {
                assert!(!why.is_empty());
                no += 1;
            }
        }
    }
    assert!(ok > 200 && no > 200, "{ok} accepted, {no} refused");
    for _ in 0..300 {
        let mut bytes = Vec::new();
        for _ in 0..=splitmix(&mut st) % 4 {
            bytes.extend(probe_frame(&mut st));
            let data = (splitmix(&mut st) % 300) as usize;
            bytes.extend((0..data).map(|_| splitmix(&mut st) as u8));
        }
        // Ok or a clean error, in bounded time: a hang would stop the test.
        let _ = xferbench::fuzzing::serve_session(&bytes);
    }
}

#[test]
fn a_burst_of_bad_clients_leaves_the_server_small_and_serving() {
    let mut srv = Server::start(&["--max-message", "64M"]);
    let before = srv.rss_kib();
    let mut socks = Vec::new();
    for i in 0..40 {
        let mut s = srv.connect();
        // A write may find the connection already reset: the server drops
        // a bad client (or one past its per-address share) as soon as it
        // sees it, which is what is under test, not a failure of it.
        let _ = match i % 4 {
            // Oversized configures after a good hello: refused unallocated.
            0 => s
                .write_all(&hello(1 << 20, b""))
                .and_then(|()| s.write_all(&configure(1 << 30, 1 << 30))),
            // Random bytes.
            1 => s.write_all(&[0xa5; 200]),
            // Half a hello, then silence (the idle timeout ends it).
            2 => s.write_all(&hello(64, b"")[..10]),
            // A configure frame with a bad magic.
            _ => s
                .write_all(&hello(64, b""))
                .and_then(|()| s.write_all(&[0xff; 72])),
        };
        socks.push(s);
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(srv.alive());
    let grown = srv.rss_kib().saturating_sub(before);
    assert!(
        grown < 64 * 1024,
        "server grew by {grown} KiB under bad clients"
    );
    srv.serves_a_good_client();
    drop(socks);
    srv.serves_a_good_client();
}

#[test]
fn sessions_are_bounded() {
    let srv = Server::start(&["--max-sessions", "1"]);
    let mut first = srv.connect();
    first.write_all(&hello(64, b"")).unwrap();
    assert_eq!(answer(&mut first), Some(Status::Ok));
    let mut second = srv.connect();
    second.write_all(&hello(64, b"")).unwrap();
    assert_eq!(answer(&mut second), Some(Status::Busy));
    drop(first);
    std::thread::sleep(Duration::from_millis(200));
    srv.serves_a_good_client();
}

#[test]
fn serve_usage_errors() {
    for (args, want) in [
        (vec!["--listen", "nonsense"], "cannot listen"),
        (vec!["--max-message", "2G"], "1 GiB"),
        (vec!["--max-sessions", "0"], "0"),
        (
            vec!["--idle-timeout", "0s"],
            "--idle-timeout 0s: must be from 10ms",
        ),
        (vec!["--idle-timeout", "48h"], "--idle-timeout"),
        (
            vec!["--token", "x", "--token-file", "/dev/null"],
            "--token is refused",
        ),
        (vec!["--token-file", "/nonexistent/token"], "cannot read"),
        (vec!["--token-file", "/dev/null"], "not a regular file"),
    ] {
        let mut c = xferbench();
        c.arg("serve")
            .args(&args)
            .env_remove("XFERBENCH_TOKEN")
            .env_remove("XFERBENCH_TOKEN_FILE");
        let o = finish(c);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: {e}");
    }
}

#[cfg(not(feature = "mpi"))]
#[test]
fn mpi_without_the_feature_says_how_to_build_it() {
    let mut c = xferbench();
    c.args(["curve", "-t", "mpi", "--sizes", "1", "-q"]);
    let o = finish(c);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--features mpi"), "{}", stderr(&o));
}

#[test]
fn remote_udp_through_serve_and_bad_datagrams_ignored() {
    let mut srv = Server::start(&[]);
    let u = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    // Datagrams to the listening port, even a well-formed hello: nothing
    // there answers UDP (sessions are set up over TCP).
    u.send_to(&[0x42; 100], &srv.addr).unwrap();
    u.send_to(&udp_hello(64, b""), &srv.addr).unwrap();
    u.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut b = [0u8; 64];
    assert!(
        u.recv_from(&mut b).is_err(),
        "the server answered a datagram to its listening port"
    );
    // A UDP hello claiming more than a datagram: refused.
    let (_, st) = srv.udp_session(1 << 20);
    assert_eq!(st, Some(Status::TooLarge));
    assert!(srv.alive());
    // A real run: a round trip and a curve whose sizes past a datagram are skipped.
    let t = format!("udp://{}", srv.addr);
    let mut c = xferbench();
    c.args([
        "roundtrip",
        "-t",
        &t,
        "--in",
        "64,1k",
        "--out",
        "64",
        "--samples",
        "300",
        "--format",
        "json",
        "-q",
    ]);
    let d = json(&finish(c));
    assert_eq!(d["points"].as_array().unwrap().len(), 2);
    let mut c = xferbench();
    c.args([
        "curve",
        "-t",
        &t,
        "--sizes",
        "1k..64k",
        "--duration",
        "20ms",
        "--format",
        "json",
        "-q",
    ]);
    let d = json(&finish(c));
    assert_eq!(d["points"].as_array().unwrap().len(), 6, "1k..32k measured");
    assert_eq!(d["skipped"].as_array().unwrap().len(), 1, "64k skipped");
    // A window of datagrams in flight fits the session's buffers (the
    // default receive buffer dropped them at 2 KiB, and the run timed out).
    let mut c = xferbench();
    c.args([
        "curve",
        "-t",
        &t,
        "--mode",
        "stream",
        "--sizes",
        "1k..4k",
        "--duration",
        "20ms",
        "--format",
        "json",
        "-q",
    ]);
    let d = json(&finish(c));
    assert_eq!(d["points"].as_array().unwrap().len(), 3);
}

/// With `--features mpi`: two ranks under mpirun run a curve; only rank 0
/// reports. (Skipped with a message when mpirun is not installed.)
#[cfg(feature = "mpi")]
#[test]
fn two_mpi_ranks_run_a_curve() {
    if std::process::Command::new("mpirun")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("mpirun not installed (Debian openmpi-bin): skipped");
        return;
    }
    let mut c = std::process::Command::new("mpirun");
    c.args(["--allow-run-as-root", "--oversubscribe", "-n", "2"])
        .arg(env!("CARGO_BIN_EXE_xferbench"))
        .args([
            "curve",
            "-t",
            "mpi",
            "--sizes",
            "1..4k",
            "--duration",
            "20ms",
            "--format",
            "json",
            "-q",
        ]);
    let o = finish(c);
    let d = json(&o);
    assert_eq!(d["points"].as_array().unwrap().len(), 13);
    assert_eq!(d["points"][0]["transport"], "mpi");
}

/// The crowd the issue measured, larger: silent connections without a
/// token from ten loopback addresses, eight each, reopened as soon as the
/// server closes them. A slot is taken only after a good hello, and the
/// crowd's waiting connections turn out each other, never the client with
/// an address of its own: it is served every time.
#[test]
fn a_crowd_without_the_token_cannot_lock_out_a_client_with_it() {
    let srv = Server::start_env(
        false,
        &["--idle-timeout", "30s"],
        &[("XFERBENCH_TOKEN", TOKEN)],
    );
    let hosts: Vec<String> = (2..12)
        .map(|h| format!("127.0.0.{h}"))
        .filter(|h| connect_from(h, &srv.addr).is_some())
        .collect();
    if hosts.len() < 4 {
        eprintln!("cannot bind 127.0.0.2… here: the crowd is not tried");
        return;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let opened = Arc::new(AtomicUsize::new(0));
    let crowd: Vec<_> = hosts
        .iter()
        .map(|h| {
            let (h, to) = (h.clone(), srv.addr.clone());
            let (stop, opened) = (stop.clone(), opened.clone());
            std::thread::spawn(move || {
                let mut held: Vec<Option<TcpStream>> = (0..8).map(|_| None).collect();
                while !stop.load(Ordering::Relaxed) {
                    for slot in held.iter_mut() {
                        let gone = slot.as_mut().is_none_or(|s| {
                            let mut b = [0u8; 64];
                            !matches!(s.read(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
                        });
                        if gone {
                            *slot = connect_from(&h, &to);
                            if let Some(s) = slot {
                                s.set_nonblocking(true).unwrap();
                                opened.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
        })
        .collect();
    // The crowd in place (a hang guard of a minute).
    let t = Instant::now();
    while opened.load(Ordering::Relaxed) < 8 * hosts.len() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the crowd never formed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for _ in 0..3 {
        let mut c = xferbench();
        c.env("XFERBENCH_TOKEN", TOKEN).args([
            "roundtrip",
            "-t",
            &format!("tcp://{}", srv.addr),
            "--in",
            "64",
            "--out",
            "64",
            "--samples",
            "200",
            "--format",
            "json",
            "-q",
        ]);
        let d = json(&finish(c));
        assert_eq!(d["points"][0]["summary"]["count"], 200);
    }
    stop.store(true, Ordering::Relaxed);
    for t in crowd {
        t.join().unwrap();
    }
    // Over the total, the crowd's own were turned out to make room: said
    // in a line, or counted in a summary when the log was at its rate.
    if 8 * hosts.len() > 64 {
        srv.logged_any(&["closed before its hello, to make room", " turned out"]);
    }
}

/// Wrong tokens from one address are checked further and further apart:
/// six in a row take seconds (0.1 + 0.2 + 0.4 + 0.8 + 1.6 s of waits), not
/// microseconds, and a burst past the longest wait is told `Throttled`
/// without a check. Another address is not held up, and the right token
/// from the guessing address still gets in.
#[test]
fn token_guesses_are_throttled_per_address() {
    let srv = Server::start_env(
        false,
        &["--idle-timeout", "30s"],
        &[("XFERBENCH_TOKEN", TOKEN)],
    );
    let guess = |from: &str, token: &[u8]| -> Option<Status> {
        let mut s = connect_from(from, &srv.addr).expect("a connection");
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(&hello(64, token)).unwrap();
        answer(&mut s)
    };
    let t = Instant::now();
    for _ in 0..6 {
        assert_eq!(
            guess("127.0.0.1", b"not-the-token-at-all"),
            Some(Status::BadToken)
        );
    }
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(1500),
        "six wrong tokens answered in {took:?}: guessing is not throttled"
    );
    // A burst: the checks run one at a time, 3.2 s then 5 s apart, so most
    // of these are told to come back later rather than checked.
    let burst: Vec<_> = (0..6)
        .map(|_| {
            let to = srv.addr.clone();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(&to).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                s.write_all(&hello(64, b"not-the-token-either")).unwrap();
                answer(&mut s)
            })
        })
        .collect();
    let answers: Vec<_> = burst.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(answers.contains(&Some(Status::Throttled)), "{answers:?}");
    assert!(
        answers
            .iter()
            .all(|a| matches!(a, Some(Status::Throttled | Status::BadToken))),
        "{answers:?}"
    );
    srv.logged("refused: too many wrong tokens from this address");
    if connect_from("127.0.0.2", &srv.addr).is_some() {
        assert_eq!(guess("127.0.0.2", TOKEN.as_bytes()), Some(Status::Ok));
    }
    // The right token from the guessing address: in, once its turn comes
    // (a client waits up to --timeout, 10 s, for its answer).
    let mut c = xferbench();
    c.env("XFERBENCH_TOKEN", TOKEN).args([
        "roundtrip",
        "-t",
        &format!("tcp://{}", srv.addr),
        "--in",
        "64",
        "--out",
        "64",
        "--samples",
        "100",
        "--timeout",
        "30s",
        "--format",
        "json",
        "-q",
    ]);
    let o = finish(c);
    if stderr(&o).contains("too many wrong tokens") {
        // Told to come back: the guesses' turns were still queued.
        std::thread::sleep(Duration::from_secs(6));
        srv.serves_a_good_client_with(TOKEN);
    } else {
        assert_eq!(json(&o)["points"][0]["summary"]["count"], 100);
    }
}

/// A server's token must hold against guessing: under 16 bytes, blank or
/// one byte repeated is refused (exit 2, one line) unless `--insecure`; the
/// token comes from a file (`--token-file`, `XFERBENCH_TOKEN_FILE`), which
/// both ends read, or the environment, never the command line, which every
/// user of the machine can read: `--token` is refused with where it goes.
#[test]
fn tokens_are_strong_and_come_from_files_or_the_environment() {
    for env in [" ", "                    ", "sesame"] {
        let mut c = xferbench();
        c.args(["serve", "--listen", "127.0.0.1:0"])
            .env_remove("XFERBENCH_TOKEN_FILE")
            .env("XFERBENCH_TOKEN", env);
        let o = finish(c);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{env:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains("at least 16") && e.contains("--insecure"), "{e}");
    }
    for insecure in [false, true] {
        let mut c = xferbench();
        c.args(["serve", "--listen", "127.0.0.1:0", "--token", TOKEN])
            .args(insecure.then_some("--insecure"))
            .env_remove("XFERBENCH_TOKEN_FILE")
            .env_remove("XFERBENCH_TOKEN");
        let o = finish(c);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(
            e.contains("--token is refused") && e.contains("--token-file") && !e.contains(TOKEN),
            "{e}"
        );
    }
    // --insecure takes a weak one.
    let mut c = xferbench();
    c.env_remove("XFERBENCH_TOKEN_FILE")
        .env("XFERBENCH_TOKEN", "sesame")
        .args(["serve", "--listen", "127.0.0.1:0", "--insecure"]);
    let l = first_lines(c, 1);
    assert!(l[0].contains("token required"), "{l:?}");
    // From a file, with its line end; the clients read it from a file too,
    // or from the environment.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("token");
    std::fs::write(&f, format!("{TOKEN}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    let fs = f.to_str().unwrap();
    let srv = Server::start_with(false, &["--token-file", fs]);
    for (k, v) in [("XFERBENCH_TOKEN_FILE", fs), ("XFERBENCH_TOKEN", TOKEN)] {
        let mut c = xferbench();
        c.env_remove("XFERBENCH_TOKEN")
            .env_remove("XFERBENCH_TOKEN_FILE")
            .env(k, v)
            .args([
                "roundtrip",
                "-t",
                &format!("udp://{}", srv.addr),
                "--in",
                "64",
                "--out",
                "64",
                "--samples",
                "50",
                "--format",
                "json",
                "-q",
            ]);
        assert_eq!(json(&finish(c))["points"][0]["summary"]["count"], 50, "{k}");
    }
    // Both on a client: which one was meant is not guessed.
    let mut c = xferbench();
    c.env("XFERBENCH_TOKEN_FILE", fs)
        .env("XFERBENCH_TOKEN", TOKEN)
        .args(["roundtrip", "-t", &format!("tcp://{}", srv.addr), "-q"]);
    let o = finish(c);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("both XFERBENCH_TOKEN_FILE and XFERBENCH_TOKEN"),
        "{}",
        stderr(&o)
    );
    // A token file others can read is warned of.
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut c = xferbench();
    c.env_remove("XFERBENCH_TOKEN")
        .env("XFERBENCH_TOKEN_FILE", fs)
        .args(["serve", "--listen", "127.0.0.1:0"]);
    let l = first_lines(c, 2);
    assert!(
        l[1].contains("can be read by other users (mode 0644)"),
        "{l:?}"
    );
}

/// `--once` serves one authenticated client: garbage, a silent connection
/// and a wrong token before it do not end the server; the good session
/// does.
#[test]
fn once_survives_bad_connections_and_ends_after_the_first_good_session() {
    let mut srv = Server::start_env(
        false,
        &["--once", "--idle-timeout", "5s"],
        &[("XFERBENCH_TOKEN", TOKEN)],
    );
    let mut s = srv.connect();
    s.write_all(b"GET / HTTP/1.1\r\nHost: example\r\n\r\n")
        .unwrap();
    assert!(closed(&mut s));
    drop(srv.connect());
    let mut s = srv.connect();
    s.write_all(&hello(64, b"not-the-token-at-all")).unwrap();
    assert_eq!(answer(&mut s), Some(Status::BadToken));
    srv.logged("refused: wrong or missing token");
    assert!(srv.alive(), "--once ended on a bad connection");
    srv.serves_a_good_client_with(TOKEN);
    let t = Instant::now();
    let status = loop {
        if let Some(st) = srv.child.try_wait().unwrap() {
            break st;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "--once went on serving"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
}

/// A UDP session answers only its client: the address that shook hands
/// over TCP, with the cookie it was given there. A datagram from another
/// address (even with the cookie), or without the cookie, draws nothing
/// and does not end the session; once the session has its client's port,
/// another port of the same address draws nothing either.
#[test]
fn udp_datagrams_from_anyone_but_the_client_draw_no_reply() {
    let srv = Server::start(&["--idle-timeout", "10s"]);
    let (sess, st) = srv.udp_session(64);
    assert_eq!(st, Some(Status::Ok));
    let sess = sess.unwrap();
    let to = sess.u.peer_addr().unwrap();
    let frame = configure(64, 64);
    let quiet = |u: &UdpSocket, what: &str| {
        u.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut b = [0u8; 128];
        assert!(u.recv_from(&mut b).is_err(), "{what} drew a reply");
    };
    // From another address, with the right cookie.
    match UdpSocket::bind("127.0.0.2:0") {
        Ok(spoof) => {
            spoof.send_to(&behind(&sess.cookie, &frame), to).unwrap();
            quiet(&spoof, "a datagram from another address");
        }
        Err(_) => eprintln!("cannot bind 127.0.0.2 here: that spoof is not tried"),
    }
    // From the client's own socket, without the cookie or with another.
    sess.u.send(&frame).unwrap();
    sess.u.send(&behind(b"12345678", &frame)).unwrap();
    sess.u.send(&[1]).unwrap();
    quiet(&sess.u, "a datagram without the cookie");
    // The real thing: acknowledged, and the exchange it announced runs,
    // each reply no larger than configured.
    sess.u
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    sess.send(&frame);
    assert_eq!(sess.recv(), b"XBACK001");
    // Now bound to the client's port: another port of its address, with
    // the cookie, draws nothing.
    let other = UdpSocket::bind("127.0.0.1:0").unwrap();
    other
        .send_to(&behind(&sess.cookie, &[7u8; 64]), to)
        .unwrap();
    quiet(&other, "a datagram from another port");
    sess.u
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    sess.send(&[7u8; 64]);
    assert_eq!(sess.recv().len(), 64);
}

/// A session whose client trickles a control frame, a byte at a time each
/// well within the idle timeout, is closed about the idle timeout after
/// the frame began, not kept for as long as the bytes come.
#[test]
fn a_trickling_client_loses_its_session() {
    let srv = Server::start_with(false, &["--idle-timeout", "1s"]);
    let mut s = srv.connect();
    s.write_all(&hello(64, b"")).unwrap();
    assert_eq!(answer(&mut s), Some(Status::Ok));
    let sent = Arc::new(AtomicUsize::new(0));
    let mut w = s.try_clone().unwrap();
    let count = sent.clone();
    let frame = configure(64, 64);
    let trickle = std::thread::spawn(move || {
        for b in frame {
            if w.write_all(&[b]).is_err() {
                return;
            }
            count.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(300));
        }
    });
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut b = [0u8; 64];
    let r = s.read(&mut b);
    let n = sent.load(Ordering::Relaxed);
    assert!(matches!(r, Ok(0) | Err(_)), "the frame was answered: {r:?}");
    assert!(
        n < 72,
        "the whole frame was trickled in ({n} bytes) before the cut"
    );
    let _ = trickle.join();
    srv.logged("took longer than the idle timeout allows");
}

/// Trickles 1-byte requests of a pingpong session on `s`, one every
/// `gap`, each reply read, until the server closes it (then the time that
/// took) or `give_up` passes (None).
fn trickle_messages(s: &mut TcpStream, gap: Duration, give_up: Duration) -> Option<Duration> {
    let t = Instant::now();
    s.write_all(&frame(1, &ReplyShape::pingpong(1, 1, 0, 1_000_000)))
        .unwrap();
    let mut ack = [0u8; 8];
    s.read_exact(&mut ack).expect("the configure's answer");
    assert_eq!(&ack, b"XBACK001");
    while t.elapsed() < give_up {
        let mut b = [0u8; 1];
        if s.write_all(&[7]).is_err() || !matches!(s.read(&mut b), Ok(1)) {
            return Some(t.elapsed());
        }
        std::thread::sleep(gap);
    }
    None
}

/// A session must make progress as a whole, not only within one message:
/// a client that completes a 1-byte request (and reads its reply) every
/// 0.6 s, each well within the 1 s idle timeout, kept its slot for ever
/// (with `--max-sessions 1`, the whole server); now it runs out of credit
/// in about the idle timeout and the slot goes to the next client. So does
/// one trickling a byte now and then into a large message, which had the
/// idle timeout plus the message's length at 64 KiB/s (here over four
/// minutes).
#[test]
fn a_session_trickling_whole_messages_is_dropped_and_frees_its_slot() {
    let srv = Server::start_with(false, &["--idle-timeout", "1s", "--max-sessions", "1"]);
    let mut s = srv.connect();
    s.write_all(&hello(64, b"")).unwrap();
    assert_eq!(answer(&mut s), Some(Status::Ok));
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let took = trickle_messages(&mut s, Duration::from_millis(600), Duration::from_secs(20));
    let took = took.expect("a client trickling whole messages kept its session for 20 s");
    assert!(took < Duration::from_secs(15), "dropped after {took:?}");
    let line = srv.logged("too little progress");
    assert!(line.contains("closed"), "{line}");
    srv.serves_a_good_client();

    // A byte every 0.6 s into a 16 MiB request.
    let mut s = srv.connect();
    s.write_all(&hello(16 << 20, b"")).unwrap();
    assert_eq!(answer(&mut s), Some(Status::Ok));
    s.write_all(&configure(16 << 20, 1)).unwrap();
    let mut ack = [0u8; 8];
    s.read_exact(&mut ack).unwrap();
    assert_eq!(&ack, b"XBACK001");
    let t = Instant::now();
    let mut w = s.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        while t.elapsed() < Duration::from_secs(30) && w.write_all(&[7]).is_ok() {
            std::thread::sleep(Duration::from_millis(600));
        }
    });
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    assert!(closed(&mut s), "the trickled message was answered");
    assert!(
        t.elapsed() < Duration::from_secs(15),
        "a trickled 16 MiB message held its session {:?}",
        t.elapsed()
    );
    drop(s);
    let _ = trickle.join();
    srv.serves_a_good_client();
}

/// A UDP session's TCP connection is its client: when the client closes
/// it, the session ends then (logged), not at its idle timeout (30 s
/// here), and a datagram with its cookie draws no reply.
#[test]
fn closing_a_udp_sessions_control_connection_ends_it() {
    let srv = Server::start_with(false, &["--idle-timeout", "30s"]);
    let (sess, st) = srv.udp_session(64);
    assert_eq!(st, Some(Status::Ok));
    let UdpSession {
        u,
        cookie,
        _tcp: tcp,
    } = sess.unwrap();
    let answer_to = |payload: &[u8]| {
        u.send(&behind(&cookie, payload)).unwrap();
        let mut b = [0u8; 128];
        let n = u.recv(&mut b).expect("an answer");
        b[remote::COOKIE_LEN..n].to_vec()
    };
    // One exchange: the session runs.
    assert_eq!(answer_to(&configure(64, 64)), b"XBACK001");
    assert_eq!(answer_to(&[7u8; 64]).len(), 64);
    let t = Instant::now();
    drop(tcp);
    let line = srv.logged("(udp) from");
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "the session ended {:?} after its control connection closed: {line}",
        t.elapsed()
    );
    assert!(line.contains("control connection"), "{line}");
    u.send(&behind(&cookie, &configure(64, 64))).unwrap();
    u.set_read_timeout(Some(Duration::from_millis(1500)))
        .unwrap();
    let mut b = [0u8; 128];
    assert!(u.recv(&mut b).is_err(), "the ended session answered");
}

/// The CPU time a process has used so far (user and system).
fn cpu_time(pid: u32) -> Duration {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<&str> = s.rsplit(") ").next().unwrap().split_whitespace().collect();
    // utime and stime: fields 14 and 15 of stat, 12 and 13 after the name.
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    // SAFETY: sysconf reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_millis(ticks * 1000 / hz.max(1))
}

/// Two sessions whose exchanges each ask for a 100 ms responder delay
/// leave the server idle: the delays are slept, not spun (two cores
/// were kept busy).
#[test]
fn long_responder_delays_are_slept() {
    let srv = Server::start(&["--idle-timeout", "10s"]);
    let before = cpu_time(srv.child.id());
    let t = Instant::now();
    let sessions: Vec<_> = (0..2)
        .map(|_| {
            let mut s = srv.connect();
            std::thread::spawn(move || {
                s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                s.write_all(&hello(64, b"")).unwrap();
                assert_eq!(answer(&mut s), Some(Status::Ok));
                let mut f = Vec::new();
                f.extend_from_slice(&0x5842_4331u32.to_le_bytes());
                f.extend_from_slice(&1u32.to_le_bytes());
                f.extend_from_slice(&ReplyShape::pingpong(64, 64, 100_000_000, 15).encode());
                s.write_all(&f).unwrap();
                let mut ack = [0u8; 8];
                s.read_exact(&mut ack).unwrap();
                assert_eq!(&ack, b"XBACK001");
                let mut rep = [0u8; 64];
                for _ in 0..15 {
                    s.write_all(&[1u8; 64]).unwrap();
                    s.read_exact(&mut rep).unwrap();
                }
            })
        })
        .collect();
    for s in sessions {
        s.join().unwrap();
    }
    let wall = t.elapsed();
    let cpu = cpu_time(srv.child.id()).saturating_sub(before);
    assert!(
        wall >= Duration::from_millis(1400),
        "the delays were not kept: {wall:?}"
    );
    assert!(
        cpu < Duration::from_millis(400),
        "the server used {cpu:?} of CPU over {wall:?} of 100 ms delays"
    );
}

/// A flood of junk connections makes a bounded number of log lines, with
/// a line that sums up what was left out; a client is served after it.
#[test]
fn a_flood_of_junk_is_logged_at_a_bounded_rate() {
    let srv = Server::start_with(false, &[]);
    for _ in 0..1500 {
        if let Ok(mut s) = TcpStream::connect(&srv.addr) {
            let _ = s.write_all(b"junk junk junk junk junk junk");
        }
    }
    srv.logged("log lines suppressed in the last");
    srv.serves_a_good_client();
    let lines = srv.log.lock().unwrap().len();
    assert!(lines < 750, "{lines} log lines for 1500 junk connections");
}
