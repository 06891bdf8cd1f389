//! `xferbench serve` on loopback: remote round trips and curves through it,
//! and clients that misbehave — garbage, oversized lengths, a wrong token, a
//! stall mid-frame, a burst of them — cannot crash, hang or bloat the
//! server, and a good client is served right after each.

mod common;

use common::{check_fits, finish, json, stderr, xferbench};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::Duration;
use xferbench::transport::ReplyShape;
use xferbench::transport::remote::{self, Hello, Status};

/// A running server, killed when dropped.
struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let mut c = xferbench();
        c.args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--idle-timeout",
            "1s",
            "-q",
        ])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        let mut child = c.spawn().expect("start serve");
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .split("listening on ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Server { child, addr }
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
    // A stall mid-hello: dropped at the idle timeout (1 s).
    let mut s = srv.connect();
    s.write_all(&h[..5]).unwrap();
    let t = std::time::Instant::now();
    assert!(closed(&mut s));
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "stalled client kept {:?}",
        t.elapsed()
    );
    // A good handshake, then a configure asking for 1 GiB messages.
    let mut s = srv.connect();
    s.write_all(&hello(64, b"sesame")).unwrap();
    assert_eq!(answer(&mut s), Some(Status::Ok));
    s.write_all(&configure(1 << 30, 64)).unwrap();
    assert!(closed(&mut s));
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

#[test]
fn a_burst_of_bad_clients_leaves_the_server_small_and_serving() {
    let mut srv = Server::start(&["--max-message", "64M"]);
    let before = srv.rss_kib();
    let mut socks = Vec::new();
    for i in 0..40 {
        let mut s = srv.connect();
        match i % 4 {
            // Oversized configures after a good hello: refused unallocated.
            0 => {
                s.write_all(&hello(1 << 20, b"")).unwrap();
                s.write_all(&configure(1 << 30, 1 << 30)).unwrap();
            }
            // Random bytes.
            1 => s.write_all(&[0xa5; 200]).unwrap(),
            // Half a hello, then silence (the idle timeout ends it).
            2 => s.write_all(&hello(64, b"")[..10]).unwrap(),
            // A configure frame with a bad magic.
            _ => {
                s.write_all(&hello(64, b"")).unwrap();
                s.write_all(&[0xff; 72]).unwrap();
            }
        }
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
