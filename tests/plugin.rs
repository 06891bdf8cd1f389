//! Device plugins end to end: the two example plugins and a faulty one are
//! built with the system C compiler, then every experiment that takes -t
//! runs through them, and every bad input gets one clear line.

mod common;

use common::{finish, json, num, stderr, turn, xferbench};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

/// Where the plugins are built, once per test binary.
fn build_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("tempdir"))
        .path()
}

/// Builds `src` (relative to the repository) into NAME.so with the command
/// the README gives, plus `defines`.
fn build(name: &str, src: &str, defines: &[&str]) -> PathBuf {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let out = build_dir().join(format!("{name}.so"));
    if out.exists() {
        return out;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let o = std::process::Command::new(&cc)
        .current_dir(root)
        .args([
            "-O2",
            "-Wall",
            "-Wextra",
            "-std=gnu11",
            "-shared",
            "-fPIC",
            "-Iinclude",
        ])
        .args(defines)
        .arg(src)
        .arg("-o")
        .arg(&out)
        .arg("-lpthread")
        .output()
        .unwrap_or_else(|e| panic!("the plugin tests need a C compiler ({cc}): {e}"));
    assert!(
        o.status.success(),
        "{cc} {src} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let warnings = String::from_utf8_lossy(&o.stderr);
    assert!(
        !warnings.contains("warning"),
        "{src} builds with warnings:\n{warnings}"
    );
    out
}

fn echo() -> PathBuf {
    build("echo", "examples/plugins/echo.c", &[])
}

fn fdpair() -> PathBuf {
    build("fdpair", "examples/plugins/fdpair.c", &[])
}

fn faulty() -> PathBuf {
    build("faulty", "tests/fixtures/plugins/faulty.c", &[])
}

/// A FIFO that is both the host-to-card and card-to-host channel: a loopback.
fn loopback(dir: &Path) -> PathBuf {
    let p = dir.join("loop.fifo");
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: a valid path string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    p
}

fn spec(lib: &Path, opts: &str) -> String {
    format!("plugin:path={}{opts}", lib.display())
}

fn xb(args: &[&str]) -> Output {
    let mut c = xferbench();
    c.args(args);
    finish(c)
}

fn points(d: &Value) -> &Vec<Value> {
    d["points"].as_array().expect("points")
}

/// One line on stderr, no panic, the exit code asked for.
fn one_line(o: &Output, code: i32, needle: &str) -> String {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(code), "exit code for: {e}");
    assert!(!e.contains("panicked"), "{e}");
    let last = e.lines().last().unwrap_or_default().to_string();
    assert!(last.starts_with("xferbench: error: "), "{e}");
    assert!(last.contains(needle), "'{needle}' not in: {e}");
    last
}

fn roundtrip_modes(s: &str, ins: &str, outs: &str, buffers: &str) -> Value {
    json(&xb(&[
        "roundtrip",
        "-t",
        s,
        "--in",
        ins,
        "--out",
        outs,
        "--buffers",
        buffers,
        "--completion",
        "poll,block",
        "--samples",
        "300",
        "--warmup",
        "20",
        "--format",
        "json",
        "-q",
    ]))
}

#[test]
fn echo_runs_every_experiment() {
    let _t = turn();
    let lib = echo();
    let s = spec(&lib, "");
    // The in × out matrix in every buffer and completion mode.
    let d = roundtrip_modes(&s, "64,1024", "64,4096", "user,raw,mmio");
    assert_eq!(d["complete"], true);
    let pts = points(&d);
    assert_eq!(pts.len(), 3 * 2 * 2 * 2);
    for p in pts {
        assert_eq!(p["transport"], "plugin");
        assert_eq!(num(&p["summary"], "count"), 300.0, "{p}");
        assert!(num(&p["summary"], "p50_ns") > 0.0, "{p}");
    }
    // The responder delay reaches the device program.
    let with = json(&xb(&[
        "roundtrip",
        "-t",
        &s,
        "--in",
        "64",
        "--out",
        "64",
        "--responder-delay",
        "300us",
        "--samples",
        "200",
        "--format",
        "json",
        "-q",
    ]));
    let p50 = num(&points(&with)[0]["summary"], "p50_ns");
    assert!(p50 >= 300_000.0, "a 300 us device delay gave p50 {p50} ns");
    // Latency and the windowed bandwidth pattern.
    for mode in ["pingpong", "stream", "bidir"] {
        let d = json(&xb(&[
            "curve",
            "-t",
            &s,
            "--sizes",
            "64,4k,64k",
            "--mode",
            mode,
            "--window",
            "16",
            "--buffers",
            "raw",
            "--samples",
            "100",
            "--format",
            "json",
            "-q",
        ]));
        assert_eq!(d["complete"], true, "{mode}");
        let pts = points(&d);
        assert_eq!(pts.len(), 3, "{mode}: {d}");
        for p in pts {
            assert!(num(p, "bandwidth_MBps") > 0.0, "{mode}: {p}");
        }
    }
    // Load: request rate under background load.
    let d = json(&xb(&[
        "load",
        "-t",
        &s,
        "--sizes",
        "512,4k",
        "--load",
        "idle,alu",
        "--cell-time",
        "100ms",
        "--format",
        "json",
        "-q",
    ]));
    assert_eq!(d["complete"], true);
    assert!(points(&d).iter().all(|p| num(p, "req_per_s") > 0.0), "{d}");
    // list prints the plugin's capabilities and probes it.
    let d = json(&xb(&["list", "-t", &s, "--format", "json"]));
    assert_eq!(d[0]["status"], "ok", "{d}");
    assert_eq!(d[0]["capabilities"]["responder"], "device");
    assert!(
        d[0]["details"][0].as_str().unwrap().starts_with("echo 1.0"),
        "{d}"
    );
}

#[test]
fn echo_and_fdpair_run_stream_jobs() {
    let _t = turn();
    let dir = tempfile::tempdir().unwrap();
    let fifo = loopback(dir.path());
    let targets = [
        format!("xfer:{}", spec(&echo(), ",depth=8")),
        format!(
            "xfer:{}",
            spec(
                &fdpair(),
                &format!(",h2c={0},c2h={0},depth=4", fifo.display())
            )
        ),
    ];
    for t in &targets {
        let job = dir.path().join("dma.fio");
        std::fs::write(
            &job,
            format!("[global]\nrw=write\nbs=16k\nsize=4m\niodepth=4\n\n[h2c]\nfilename={t}\n"),
        )
        .unwrap();
        let o = xb(&[
            "stream",
            "--job",
            job.to_str().unwrap(),
            "--format",
            "json",
            "-q",
        ]);
        let d = json(&o);
        assert_eq!(d["complete"], true, "{t}");
        let w = &d["jobs"][0]["write"];
        assert_eq!(num(w, "io_bytes"), (4 << 20) as f64, "{t}: {w}");
        assert!(num(w, "bw_bytes") > 0.0, "{t}: {w}");
    }
}

#[test]
fn fdpair_measures_a_fifo_loopback() {
    let _t = turn();
    let dir = tempfile::tempdir().unwrap();
    let fifo = loopback(dir.path());
    let s = spec(&fdpair(), &format!(",h2c={0},c2h={0}", fifo.display()));
    let d = roundtrip_modes(&s, "64,4096", "64", "user,raw");
    assert_eq!(d["complete"], true);
    assert_eq!(points(&d).len(), 2 * 2 * 2);
    let deep = spec(
        &fdpair(),
        &format!(",h2c={0},c2h={0},depth=4", fifo.display()),
    );
    for mode in ["pingpong", "stream"] {
        let d = json(&xb(&[
            "curve",
            "-t",
            &deep,
            "--sizes",
            "64,16k,256k",
            "--mode",
            mode,
            "--window",
            "8",
            "--samples",
            "50",
            "--format",
            "json",
            "-q",
        ]));
        assert_eq!(d["complete"], true, "{mode}");
        assert_eq!(points(&d).len(), 3, "{mode}");
    }
    let d = json(&xb(&[
        "load",
        "-t",
        &s,
        "--sizes",
        "512,4k",
        "--direction",
        "write",
        "--load",
        "idle",
        "--cell-time",
        "100ms",
        "--format",
        "json",
        "-q",
    ]));
    assert_eq!(d["complete"], true);
    // The loopback cannot reply with more than it was sent: said, exit 2.
    let o = xb(&[
        "roundtrip",
        "-t",
        &s,
        "--in",
        "64",
        "--out",
        "128",
        "--samples",
        "10",
    ]);
    one_line(&o, 2, "cannot be longer than the request");
    // Nor has it a delay stage.
    let o = xb(&[
        "roundtrip",
        "-t",
        &s,
        "--in",
        "64",
        "--out",
        "64",
        "--responder-delay",
        "5us",
    ]);
    one_line(&o, 2, "delay");
    // Nor mmio windows.
    let o = xb(&[
        "roundtrip",
        "-t",
        &s,
        "--in",
        "64",
        "--out",
        "64",
        "--buffers",
        "mmio",
    ]);
    one_line(&o, 2, "does not support mmio buffers");
}

#[test]
fn plugin_check_passes_the_examples_and_names_each_broken_promise() {
    let _t = turn();
    let o = xb(&["plugin", "check", echo().to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(out.contains("verdict: PASS"), "{out}");
    for mode in [
        "user/poll",
        "raw/block",
        "mmio/poll",
        "queue depth",
        "delay 2 ms",
    ] {
        assert!(out.contains(mode), "{mode} not checked: {out}");
    }
    let dir = tempfile::tempdir().unwrap();
    let fifo = loopback(dir.path());
    let h2c = format!("h2c={}", fifo.display());
    let c2h = format!("c2h={}", fifo.display());
    let o = xb(&[
        "plugin",
        "check",
        fdpair().to_str().unwrap(),
        &h2c,
        &c2h,
        "depth=4",
        "--format",
        "json",
    ]);
    let d = json(&o);
    assert_eq!(d["passed"], true, "{d}");
    assert_eq!(d["plugin"], "fdpair");

    let f = faulty();
    for (fault, needle) in [
        ("never_complete", "never completed"),
        ("unknown_tag", "completion tag"),
        ("wrong_len", "reply bytes"),
        ("bad_reply", "XB_CAP_ECHO"),
        ("null_alloc", "NULL buffer"),
        ("misaligned_alloc", "not aligned"),
        ("ignore_busy", "must return XB_BUSY"),
        ("busy_always", "XB_BUSY with no job in flight"),
        ("bad_caps", "no buffer modes"),
        ("poll_error", "poll failed (XB_E_IO)"),
        ("hang_close", "close() did not return"),
    ] {
        let o = xb(&[
            "plugin",
            "check",
            f.to_str().unwrap(),
            &format!("fault={fault}"),
            "--timeout",
            "300ms",
        ]);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert_eq!(o.status.code(), Some(1), "{fault}: {out}");
        assert!(out.contains("verdict: FAIL"), "{fault}: {out}");
        let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
        assert!(
            fails.iter().any(|l| l.contains(needle)),
            "{fault}: '{needle}' not in {out}"
        );
    }
}

#[test]
fn bad_plugins_and_faults_get_one_line() {
    let _t = turn();
    let dir = tempfile::tempdir().unwrap();
    // Missing file, not a library, no path.
    let o = xb(&["roundtrip", "-t", "plugin:path=/nonexistent/dev.so"]);
    one_line(&o, 2, "No such file");
    let text = dir.path().join("text.so");
    std::fs::write(&text, "not a library\n").unwrap();
    let o = xb(&["roundtrip", "-t", &spec(&text, "")]);
    one_line(&o, 2, "not load");
    let o = xb(&["roundtrip", "-t", "plugin"]);
    one_line(&o, 2, "path=");
    // Not a plugin, another ABI, a NULL table, a truncated table.
    let src = "tests/fixtures/plugins/faulty.c";
    for (name, define, needle) in [
        (
            "noentry",
            "-DFAULTY_NO_ENTRY",
            "exports no xferbench_plugin_v1",
        ),
        (
            "abi2",
            "-DFAULTY_ABI_MAJOR=2",
            "built for plugin ABI 2.0, newer",
        ),
        (
            "abi0",
            "-DFAULTY_ABI_MAJOR=0",
            "built for plugin ABI 0.0, older",
        ),
        ("nullentry", "-DFAULTY_NULL_ENTRY", "returned NULL"),
        ("small", "-DFAULTY_SMALL_TABLE", "struct_size is 16"),
    ] {
        let lib = build(name, src, &[define]);
        let o = xb(&["roundtrip", "-t", &spec(&lib, ""), "--samples", "10"]);
        let line = one_line(&o, 2, needle);
        assert!(
            line.contains("rebuild") || line.contains("not an xferbench plugin"),
            "{line}"
        );
    }
    // plugin check: a bad plugin option, a format it does not print.
    let e = echo();
    let o = xb(&["plugin", "check", e.to_str().unwrap(), "depth=0"]);
    one_line(&o, 2, "depth");
    let o = xb(&["plugin", "check", e.to_str().unwrap(), "--format", "csv"]);
    one_line(&o, 2, "not CSV");
    let f = faulty();
    // The device's own refusals: its message, exit 1 for a failed open, 2 for a bad option.
    let o = xb(&["roundtrip", "-t", &spec(&f, ",fault=open_fail")]);
    one_line(&o, 1, "card 0 is not present");
    let o = xb(&["roundtrip", "-t", &spec(&f, ",card=3")]);
    one_line(&o, 2, "card");
    // A capability it lacks.
    let o = xb(&["roundtrip", "-t", &spec(&f, ""), "--buffers", "mmio"]);
    one_line(&o, 2, "does not support mmio");
    // Faults mid-run: exit 1, the partial run written and marked incomplete.
    for (fault, needle) in [
        ("never_complete", "did not complete within"),
        ("unknown_tag", "which no job in flight has"),
        ("wrong_len", "reply bytes; 64 were asked for"),
        ("null_alloc", "NULL buffer"),
        ("job_error", "descriptor error"),
        ("poll_error", "fell off the bus"),
    ] {
        let out = dir.path().join(format!("{fault}.json"));
        let o = xb(&[
            "roundtrip",
            "-t",
            &spec(&f, &format!(",fault={fault}")),
            "--in",
            "64",
            "--out",
            "64",
            "--buffers",
            "raw",
            "--samples",
            "50",
            "--timeout",
            "500ms",
            "--format",
            "json",
            "-o",
            out.to_str().unwrap(),
        ]);
        one_line(&o, 1, needle);
        let d: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        assert_eq!(d["complete"], false, "{fault}");
        assert!(
            d["stopped_by"].as_str().unwrap().contains(needle),
            "{fault}: {d}"
        );
    }
}

/// A plugin written from the header alone, unlike the examples: raw buffers
/// only, block completion only (its own wait), requests up to 64 KiB but
/// replies up to 16 KiB, a queue of 3, jobs completed out of order.
#[test]
fn a_plugin_written_from_the_header_alone_runs_every_experiment() {
    let _t = turn();
    let lib = build("blind", "tests/fixtures/plugins/blind.c", &[]);
    let s = spec(&lib, ",lanes=2");
    let o = xb(&["plugin", "check", lib.to_str().unwrap(), "lanes=2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    // Its modes are found without being named: raw, block.
    let d = json(&xb(&[
        "roundtrip",
        "-t",
        &s,
        "--in",
        "64,64k",
        "--out",
        "64,16k",
        "--samples",
        "100",
        "--format",
        "json",
        "-q",
    ]));
    assert_eq!(points(&d).len(), 4);
    assert!(
        points(&d)
            .iter()
            .all(|p| p["buffers"] == "raw" && p["completion"] == "block")
    );
    assert_eq!(d["devices"][0]["plugin"], "blind", "{}", d["devices"]);
    // A reply over its limit is refused up front, naming the limit.
    let o = xb(&["roundtrip", "-t", &s, "--in", "64", "--out", "32k"]);
    one_line(&o, 2, "replies of at most 16384 bytes");
    // A bad option gets the plugin's own reason, not the poll refusal.
    let o = xb(&["roundtrip", "-t", &spec(&lib, ",lanes=9")]);
    one_line(&o, 2, "lanes=9");
    // Curves over the default sizes: what the device cannot carry is skipped.
    for mode in ["pingpong", "stream", "bidir"] {
        let d = json(&xb(&[
            "curve",
            "-t",
            &s,
            "--mode",
            mode,
            "--window",
            "8",
            "--samples",
            "20",
            "--format",
            "json",
            "-q",
        ]));
        assert_eq!(d["complete"], true, "{mode}");
        assert!(!points(&d).is_empty(), "{mode}");
        let limit = if mode == "stream" { 65536.0 } else { 16384.0 };
        assert!(
            points(&d).iter().all(|p| num(p, "size_bytes") <= limit),
            "{mode}"
        );
        assert!(
            !d["skipped"].as_array().unwrap().is_empty(),
            "{mode}: nothing skipped"
        );
    }
    for dir in ["read", "write"] {
        let d = json(&xb(&[
            "load",
            "-t",
            &s,
            "--sizes",
            "512,4k",
            "--direction",
            dir,
            "--load",
            "idle",
            "--cell-time",
            "100ms",
            "--format",
            "json",
            "-q",
        ]));
        assert_eq!(d["complete"], true, "{dir}");
    }
    let d = json(&xb(&[
        "stream",
        "--filename",
        &format!("xfer:{s}"),
        "--rw",
        "write",
        "--bs",
        "16k",
        "--size",
        "1m",
        "--iodepth",
        "4",
        "--format",
        "json",
        "-q",
    ]));
    assert_eq!(num(&d["jobs"][0]["write"], "io_bytes"), (1 << 20) as f64);
    assert_eq!(
        d["jobs"][0]["device"]["plugin"], "blind",
        "{}",
        d["jobs"][0]
    );
}
