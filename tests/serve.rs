//! `xferbench serve` on loopback: remote round trips and curves through it,
//! and clients that misbehave — garbage, oversized lengths, a wrong token, a
//! stall mid-frame, unknown control frames, silent connections, one address
//! taking every slot, a burst of them — cannot crash, hang or bloat the
//! server, and a good client is served right after each.

mod common;

use common::{check_fits, finish, json, stderr, xferbench};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::process::{Child, Stdio};
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

    /// A UDP session: the hello to the listening port, the welcome from
    /// the session's own, to which the socket is then connected.
    fn udp_session(&self, max: u64) -> (UdpSocket, Option<Status>) {
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        u.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        u.send_to(&hello(max, b""), &self.addr).unwrap();
        let mut b = [0u8; 64];
        let (n, from) = u.recv_from(&mut b).unwrap();
        let w: &[u8; remote::WELCOME_LEN] = b[..n].try_into().unwrap();
        let st = remote::parse_welcome(w).map(|x| x.0);
        u.connect(from).unwrap();
        (u, st)
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

fn hello(max: u64, token: &[u8]) -> Vec<u8> {
    Hello {
        version: remote::VERSION,
        max_message: max,
        token: token.to_vec(),
    }
    .encode()
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
    let mut srv = Server::start(&["--max-message", "1M", "--token", "sesame"]);
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
    s.write_all(&hello(1 << 30, b"sesame")).unwrap();
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
    s.write_all(&hello(64, b"sesame")).unwrap();
    assert_eq!(answer(&mut s), Some(Status::Ok));
    s.write_all(&configure(1 << 30, 64)).unwrap();
    let why = refused(&mut s);
    assert!(why.contains("1073741824-byte messages"), "{why}");
    cut(&mut s);
    assert!(srv.alive());
    // Through all that, a good client with the token is served.
    let mut c = xferbench();
    c.env("XFERBENCH_TOKEN", "sesame").args([
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
        u.send(&bad).unwrap();
        let mut b = [0u8; 512];
        let n = u.recv(&mut b).expect("an answer to the frame");
        assert_eq!(&b[..8], b"XBNAK001", "{:?}", &b[..n]);
        let why = String::from_utf8_lossy(&b[12..n]);
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
    c.env("XFERBENCH_TOKEN", "sesame")
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
    let mut third = srv.connect();
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
    use socket2::{Domain, Socket, Type};
    let other = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    let from: std::net::SocketAddr = "127.0.0.2:0".parse().unwrap();
    if other.bind(&from.into()).is_ok() {
        let to: std::net::SocketAddr = srv.addr.parse().unwrap();
        other.connect(&to.into()).unwrap();
        let mut s: TcpStream = other.into();
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
    ] {
        let mut c = xferbench();
        c.arg("serve").args(&args);
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
    // Garbage, a short hello, an over-long token length: ignored, no answer.
    u.send_to(&[0x42; 100], &srv.addr).unwrap();
    u.send_to(&hello(64, b"")[..10], &srv.addr).unwrap();
    let mut h = hello(64, b"");
    h[16..20].copy_from_slice(&4096u32.to_le_bytes());
    u.send_to(&h, &srv.addr).unwrap();
    u.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut b = [0u8; 64];
    assert!(
        u.recv_from(&mut b).is_err(),
        "the server answered a bad hello"
    );
    // A hello claiming more than a datagram: refused.
    u.send_to(&hello(1 << 20, b""), &srv.addr).unwrap();
    u.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let (n, _) = u.recv_from(&mut b).unwrap();
    assert_eq!(n, remote::WELCOME_LEN);
    let w: &[u8; remote::WELCOME_LEN] = b[..n].try_into().unwrap();
    assert_eq!(
        remote::parse_welcome(w).map(|x| x.0),
        Some(Status::TooLarge)
    );
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
