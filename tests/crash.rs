//! A measurement outlives what it measures: a device plugin that segfaults,
//! aborts or calls `exit(0)` in the middle of a run (the fixture's
//! `crash=`), or a measuring process killed outright, still leaves the
//! points measured so far with `complete: false`, one line naming what
//! happened and the call in progress, and a non-zero exit; `plugin check`
//! fails such a plugin.

mod common;

use common::{finish, stderr, turn, xferbench};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The faulty fixture, built once per test binary with the README's command.
fn faulty() -> PathBuf {
    static SO: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    SO.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("faulty.so");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let o = std::process::Command::new(&cc)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["-O2", "-Wall", "-Wextra", "-std=gnu11", "-shared", "-fPIC"])
            .args(["-Iinclude", "tests/fixtures/plugins/faulty.c", "-o"])
            .arg(&out)
            .arg("-lpthread")
            .output()
            .unwrap_or_else(|e| panic!("the plugin tests need a C compiler ({cc}): {e}"));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (dir, out)
    })
    .1
    .clone()
}

fn xb(args: &[&str]) -> Output {
    let mut c = xferbench();
    c.args(args);
    finish(c)
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", p.display()))
}

/// The last line on stderr, checked to be the one error line, no panic.
fn last_error(o: &Output, what: &str) -> String {
    let e = stderr(o);
    assert!(!e.contains("panicked"), "{what}: {e}");
    let last = e.lines().last().unwrap_or_default().to_string();
    assert!(last.starts_with("xferbench: error: "), "{what}: {e}");
    last
}

/// A plugin crashing mid-matrix, each way: the first point (110 jobs: 10
/// warm-up, 100 timed) is written, the second (the crash at job 150) is
/// not; the status is 128 + the signal, or 1 for `exit(0)`; the line and
/// `stopped_by` name what happened and the call in progress.
#[test]
fn a_plugin_that_crashes_mid_run_leaves_the_points_measured() {
    let _t = turn();
    let f = faulty();
    let dir = tempfile::tempdir().unwrap();
    // (crash, in, completion, exit status, said)
    let crashes = [
        ("segv", "submit", "poll", 139, "killed by SIGSEGV"),
        ("abort", "poll", "poll", 134, "killed by SIGABRT"),
        ("exit", "wait", "block", 1, "exited with status 0"),
    ];
    for (crash, call, completion, code, said) in crashes {
        let what = format!("crash={crash} in {call}");
        let s = format!(
            "plugin:path={},crash={crash},crash_in={call},fail_after=150,completion={completion}",
            f.display()
        );
        let out = dir.path().join(format!("{crash}.json"));
        let o = xb(&[
            "roundtrip",
            "-t",
            &s,
            "--in",
            "64,128",
            "--out",
            "64",
            "--samples",
            "100",
            "--warmup",
            "10",
            "--format",
            "json",
            "-o",
            out.to_str().unwrap(),
            "-q",
        ]);
        assert_eq!(o.status.code(), Some(code), "{what}: {}", stderr(&o));
        let line = last_error(&o, &what);
        assert!(line.contains(said), "{what}: {line}");
        assert!(
            line.contains(&format!("in plugin faulty: {call}()")),
            "{what}: {line}"
        );
        assert!(
            stderr(&o).contains("partial results (1 points, marked incomplete)"),
            "{what}: {}",
            stderr(&o)
        );
        let d = read_json(&out);
        assert_eq!(d["complete"], false, "{what}");
        let stopped = d["stopped_by"].as_str().unwrap_or_default();
        assert!(
            stopped.contains(said) && stopped.contains(call),
            "{what}: {stopped}"
        );
        let points = d["points"].as_array().expect("points");
        assert_eq!(points.len(), 1, "{what}: {d}");
        assert_eq!(points[0]["in_bytes"], 64, "{what}");
        assert_eq!(points[0]["summary"]["count"], 100, "{what}");
        assert_eq!(d["devices"][0]["plugin"], "faulty", "{what}");
    }
}

/// The other experiments through a crashing device, and the results on
/// stdout: each writes what it has in its own format.
#[test]
fn every_experiment_and_format_keeps_its_results_through_a_crash() {
    let _t = turn();
    let f = faulty();
    let s = format!(
        "plugin:path={},crash=segv,crash_in=submit,fail_after=150",
        f.display()
    );
    let runs: [&[&str]; 3] = [
        &[
            "curve",
            "-t",
            &s,
            "--sizes",
            "64,128,256",
            "--samples",
            "100",
            "--warmup",
            "10",
        ],
        &[
            "load",
            "-t",
            &s,
            "--sizes",
            "64",
            "--load",
            "idle",
            "--direction",
            "write",
            "--cell-time",
            "100ms",
        ],
        &[
            "stream",
            "--filename",
            &format!("xfer:{s}"),
            "--rw",
            "write",
            "--bs",
            "4k",
            "--size",
            "4m",
            "--iodepth",
            "1",
        ],
    ];
    for args in runs {
        let mut a = args.to_vec();
        a.extend(["--format", "json", "-q"]);
        let o = xb(&a);
        assert_eq!(o.status.code(), Some(139), "{}: {}", args[0], stderr(&o));
        let line = last_error(&o, args[0]);
        assert!(
            line.contains("SIGSEGV") && line.contains("submit()"),
            "{line}"
        );
        let d: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{}: stdout is not JSON ({e}): {}", args[0], stderr(&o)));
        assert_eq!(d["complete"], false, "{}", args[0]);
        assert!(
            d["stopped_by"]
                .as_str()
                .unwrap_or_default()
                .contains("SIGSEGV"),
            "{}: {d}",
            args[0]
        );
    }
    // A table on stdout: the first point, then the line on stderr.
    let o = xb(&[
        "roundtrip",
        "-t",
        &s,
        "--in",
        "64,128",
        "--out",
        "64",
        "--samples",
        "100",
        "--warmup",
        "10",
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(139), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    let head = table
        .lines()
        .find(|l| l.starts_with("| out\\in"))
        .unwrap_or_else(|| panic!("no table: {table}"));
    let cols: Vec<&str> = head
        .split('|')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(cols, ["out\\in", "64"], "{table}");
    assert!(
        table.contains("INCOMPLETE: the measuring process was killed by SIGSEGV"),
        "{table}"
    );
}

/// The measuring process killed outright (as the OOM killer does) while
/// its device is stuck in wait() on the second point: the parent still
/// writes the first, and names the signal and the call.
#[test]
fn a_measuring_process_killed_outright_leaves_its_points() {
    let _t = turn();
    let f = faulty();
    let dir = tempfile::tempdir().unwrap();
    let (out, mark) = (dir.path().join("killed.json"), dir.path().join("stuck"));
    let s = format!(
        "plugin:path={},fault=hang_wait,fail_after=150,completion=block,mark={}",
        f.display(),
        mark.display()
    );
    let mut c = xferbench();
    c.args([
        "roundtrip",
        "-t",
        &s,
        "--in",
        "64,128",
        "--out",
        "64",
        "--samples",
        "100",
        "--warmup",
        "10",
        "--timeout",
        "600s",
        "--format",
        "json",
        "-q",
        "-o",
    ])
    .arg(&out)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    let mut parent = common::Guarded::spawn(&mut c).unwrap();
    stuck(&mark, &mut parent);
    let child = child_of(parent.id()).expect("the measuring child");
    // SAFETY: signalling a process of this test.
    unsafe { libc::kill(child, libc::SIGKILL) };
    let status = wait(&mut parent);
    let mut e = String::new();
    use std::io::Read;
    parent
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut e)
        .unwrap();
    assert_eq!(status.code(), Some(137), "{e}");
    let last = e.lines().last().unwrap_or_default();
    assert!(last.contains("killed by SIGKILL"), "{e}");
    assert!(last.contains("in plugin faulty: wait()"), "{e}");
    let d = read_json(&out);
    assert_eq!(d["complete"], false);
    assert_eq!(d["points"].as_array().unwrap().len(), 1, "{d}");
}

/// Waits until the faulty device's hang_* fault has begun (it creates
/// `mark`): the call is stuck, and everything before it is done.
fn stuck(mark: &Path, p: &mut std::process::Child) {
    let start = Instant::now();
    while !mark.exists() {
        if let Some(s) = p.try_wait().unwrap() {
            panic!("ended ({s}) before the device got stuck");
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = p.kill();
            panic!("the device never got stuck");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The measuring child of `pid`: the one process whose parent it is.
fn child_of(pid: u32) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let p: i32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        // pid (comm) state ppid …: comm may hold spaces, so after its ')'.
        let ppid: u32 = stat
            .rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        (ppid == pid).then_some(p)
    })
}

fn wait(child: &mut std::process::Child) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `plugin check` of a plugin that ends the process: a FAIL line naming
/// the check under way and what happened, the verdict, exit 1 — never the
/// exit status 0 of the plugin's `exit(0)`.
#[test]
fn plugin_check_fails_a_plugin_that_ends_the_process() {
    let _t = turn();
    let f = faulty();
    let lib = f.to_str().unwrap();
    for (crash, call, check, said) in [
        ("exit", "open", "open and close", "exited with status 0"),
        ("segv", "submit", "", "killed by SIGSEGV"),
        ("abort", "close", "", "killed by SIGABRT"),
    ] {
        let what = format!("crash={crash} in {call}");
        let o = xb(&[
            "plugin",
            "check",
            lib,
            &format!("crash={crash}"),
            &format!("crash_in={call}"),
        ]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{what}: {out}{}", stderr(&o));
        let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
        assert_eq!(fails.len(), 1, "{what}: {out}");
        assert!(fails[0].contains(said), "{what}: {out}");
        assert!(fails[0].contains(&format!("{call}()")), "{what}: {out}");
        assert!(
            fails[0].starts_with(&format!("FAIL  {check}")),
            "{what}: {out}"
        );
        let verdict = out.lines().last().unwrap_or_default();
        assert!(verdict.starts_with("verdict: FAIL ("), "{what}: {out}");
        last_error(&o, &what);
    }
    // JSON: the checks so far and the one the plugin ended, as one object.
    let o = xb(&[
        "plugin",
        "check",
        lib,
        "crash=exit",
        "crash_in=open",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let d: Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    assert_eq!(d["passed"], false, "{d}");
    let last = d["checks"].as_array().unwrap().last().cloned().unwrap();
    assert_eq!(last["result"], "FAIL", "{d}");
    assert!(
        last["detail"]
            .as_str()
            .unwrap()
            .contains("exited with status 0"),
        "{d}"
    );
}

/// SIGINT or SIGTERM ends `plugin check` with its verdicts so far and the
/// signal's status, also while a plugin call blocks.
#[test]
fn plugin_check_ends_on_a_signal_with_its_verdicts_so_far() {
    let _t = turn();
    let f = faulty();
    for (sig, code) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        let mut c = xferbench();
        let dir = tempfile::tempdir().unwrap();
        let mark = dir.path().join("stuck");
        c.args(["plugin", "check", f.to_str().unwrap(), "fault=hang_wait"])
            .arg(format!("mark={}", mark.display()))
            .args(["--timeout", "600s"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = common::Guarded::spawn(&mut c).unwrap();
        // The poll-mode checks pass; then wait() blocks.
        stuck(&mark, &mut child);
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let t = Instant::now();
        let status = wait(&mut child);
        assert!(t.elapsed() < Duration::from_secs(30), "signal {sig}");
        let mut out = String::new();
        use std::io::Read;
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(status.code(), Some(code), "signal {sig}: {out}");
        assert!(out.contains("ok    load"), "{out}");
        assert!(
            out.lines()
                .last()
                .unwrap_or_default()
                .starts_with("verdict: INTERRUPTED"),
            "{out}"
        );
    }
}

/// A flowgraph whose measuring process is killed mid-round (one round of
/// four schedulers, 4 s each, on one core): the schedulers measured so
/// far are in the JSON, marked incomplete. It kept no checkpoint until a
/// round ended, so such a kill left the run's conditions and no point.
#[test]
fn a_killed_flowgraph_keeps_the_blocks_measured_so_far() {
    let _t = turn();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fg.json");
    let mut c = xferbench();
    c.args([
        "flowgraph",
        "--cores",
        "1",
        "--blocks",
        "2",
        "--scheduler",
        "seq,static,thread-per-block,ring",
        "--edges",
        "circular",
        "--rounds",
        "1",
        "--duration",
        "4s",
        "--warmup",
        "10ms",
        "--kernel-sizes",
        "16k",
        "--format",
        "json",
        "-q",
        "-o",
    ])
    .arg(&out)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    let mut parent = common::Guarded::spawn(&mut c).unwrap();
    let start = Instant::now();
    let child = loop {
        if let Some(p) = child_of(parent.id()) {
            break p;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no measuring child"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // Wall time: every step of a flowgraph lasts a wall-clock time (the
    // scan's sizes, each scheduler's --duration), however busy the
    // machine; its CPU time is not (a loaded machine gave the run all 16 s
    // before it had used 5 s of CPU). 8 s after the measuring process
    // started, the scan and the first scheduler's 4 s are done, and the
    // round's 16 s are not.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(8) {
        assert!(
            parent.try_wait().unwrap().is_none(),
            "the run ended before it was killed"
        );
        assert!(start.elapsed() < Duration::from_secs(120), "hung");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: signalling a process of this test.
    unsafe { libc::kill(child, libc::SIGKILL) };
    let status = wait(&mut parent);
    let mut e = String::new();
    use std::io::Read;
    parent
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut e)
        .unwrap();
    assert_eq!(status.code(), Some(137), "{e}");
    let d = read_json(&out);
    assert_eq!(d["complete"], false, "{d}");
    let points = d["points"].as_array().unwrap();
    assert!(
        !points.is_empty() && points.len() < 4,
        "the schedulers measured before the kill: {d}"
    );
    assert!(d["kernel_scan"].as_array().is_some_and(|s| !s.is_empty()));
}
