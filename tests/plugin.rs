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
    // `defines` first: an -I among them is searched before include/.
    let o = std::process::Command::new(&cc)
        .current_dir(root)
        .args(defines)
        .args([
            "-O2",
            "-Wall",
            "-Wextra",
            "-std=gnu11",
            "-shared",
            "-fPIC",
            "-Iinclude",
        ])
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
        d[0]["details"][0].as_str().unwrap().starts_with("echo 1.1"),
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
            // Longer than any healthy call takes on a loaded machine: only
            // the faults' own calls may run into it.
            "--timeout",
            "2s",
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
    // A repeated key is refused, not the last taken.
    let o = xb(&[
        "roundtrip",
        "-t",
        &format!("{},path=/nonexistent.so", spec(&echo(), "")),
    ]);
    one_line(&o, 2, "option 'path' twice");
    // A plugin whose dependency is missing: the loader's own words.
    let dep = dir.path().join("dep.c");
    std::fs::write(&dep, "int xb_dep(void) { return 1; }\n").unwrap();
    let user = dir.path().join("user.c");
    std::fs::write(
        &user,
        "int xb_dep(void);\nint xb_use(void) { return xb_dep(); }\n",
    )
    .unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let libdep = dir.path().join("libxbdep.so");
    let sh = |args: &[&std::ffi::OsStr]| {
        let o = std::process::Command::new(&cc).args(args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    sh(&[
        "-shared".as_ref(),
        "-fPIC".as_ref(),
        dep.as_os_str(),
        "-o".as_ref(),
        libdep.as_os_str(),
    ]);
    let needs = dir.path().join("needs.so");
    let ldir = format!("-L{}", dir.path().display());
    sh(&[
        "-shared".as_ref(),
        "-fPIC".as_ref(),
        user.as_os_str(),
        "-o".as_ref(),
        needs.as_os_str(),
        ldir.as_ref(),
        "-lxbdep".as_ref(),
    ]);
    std::fs::remove_file(&libdep).unwrap();
    let o = xb(&["roundtrip", "-t", &spec(&needs, "")]);
    one_line(&o, 2, "libxbdep.so: cannot open shared object file");
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
            "was built for plugin ABI 2.",
        ),
        (
            "abi0",
            "-DFAULTY_ABI_MAJOR=0",
            "was built for plugin ABI 0.",
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
            "2s",
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

/// Runs `args` and returns its output and how long it took.
fn timed(args: &[&str]) -> (Output, std::time::Duration) {
    let t = std::time::Instant::now();
    let o = xb(args);
    (o, t.elapsed())
}

/// The last line on stderr: the one that names what failed.
fn last_line(o: &Output) -> String {
    stderr(o).lines().last().unwrap_or_default().to_string()
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", p.display()))
}

/// A device call that never returns cannot hang any experiment: each one
/// ends after about --timeout with exit 1, one line naming the call, and
/// partial JSON marked incomplete that still names the device.
#[test]
fn a_device_call_that_never_returns_ends_every_experiment() {
    let _t = turn();
    let f = faulty();
    let dir = tempfile::tempdir().unwrap();
    // (fault, completion, the call the line must name)
    let faults = [
        ("hang_wait", "block", "wait()"),
        ("hang_poll", "poll", "poll()"),
        ("hang_submit", "poll", "submit()"),
        ("hang_open", "poll", "open()"),
    ];
    for (fault, completion, call) in faults {
        let s = spec(
            &f,
            &format!(",fault={fault},fail_after=150,completion={completion}"),
        );
        let out = dir.path().join(format!("{fault}.json"));
        let o_ = out.to_str().unwrap();
        let runs: Vec<(&str, Vec<&str>)> = vec![
            (
                "roundtrip",
                vec![
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
                ],
            ),
            (
                "curve",
                vec![
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
            ),
            (
                "load",
                vec![
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
            ),
        ];
        for (what, mut args) in runs {
            args.extend(["--timeout", "1s", "--format", "json", "-o", o_, "-q"]);
            let _ = std::fs::remove_file(&out);
            let (o, took) = timed(&args);
            assert_eq!(o.status.code(), Some(1), "{what} {fault}: {}", stderr(&o));
            let line = last_line(&o);
            assert!(
                line.starts_with("xferbench: error: plugin faulty: ") && line.contains(call),
                "{what} {fault}: {line}"
            );
            assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
            // A hang guard for noisy machines, not a timing assertion: the
            // supervisor ends the run a fraction of a second after --timeout.
            assert!(took.as_secs_f64() < 20.0, "{what} {fault} took {took:?}");
            let d = read_json(&out);
            assert_eq!(d["complete"], false, "{what} {fault}");
            assert!(
                d["stopped_by"].as_str().unwrap_or_default().contains(call),
                "{what} {fault}: {}",
                d["stopped_by"]
            );
            assert_eq!(d["devices"][0]["plugin"], "faulty", "{what} {fault}: {d}");
            // The device the call hung in says so itself.
            let dev = &d["devices"][0];
            assert!(
                dev["error"].as_str().unwrap_or_default().contains(call),
                "{what} {fault}: {dev}"
            );
            assert_eq!(
                dev["state"], "in use when the run stopped",
                "{what} {fault}"
            );
        }
        // A stream job over the device: the job stays in jobs[] with what it moved.
        let _ = std::fs::remove_file(&out);
        let (o, _) = timed(&[
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
            "--timeout",
            "1s",
            "--format",
            "json",
            "-o",
            o_,
            "-q",
        ]);
        assert_eq!(o.status.code(), Some(1), "stream {fault}: {}", stderr(&o));
        assert!(
            last_line(&o).contains(call),
            "stream {fault}: {}",
            stderr(&o)
        );
        let d = read_json(&out);
        assert_eq!(d["complete"], false);
        let j = &d["jobs"][0];
        assert_eq!(j["error"], 1, "{j}");
        assert!(j["error_text"].as_str().unwrap().contains(call), "{j}");
        assert!(
            j["device"]["error"]
                .as_str()
                .unwrap_or_default()
                .contains(call),
            "{j}"
        );
        assert_eq!(j["device"]["spec"], s, "{j}");
        if fault != "hang_open" {
            assert_eq!(num(&j["write"], "io_bytes"), 150.0 * 4096.0, "{fault}: {j}");
        }
    }
}

/// One SIGINT or SIGTERM ends a run whose device call blocks, within a
/// second, with its partial results written; the status is 128 + signal.
#[test]
fn a_signal_ends_a_run_blocked_in_a_device_call() {
    let _t = turn();
    let f = faulty();
    let dir = tempfile::tempdir().unwrap();
    for (sig, code) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        let out = dir.path().join(format!("sig{sig}.json"));
        let mut c = xferbench();
        c.args([
            "roundtrip",
            "-t",
            &spec(&f, ",fault=hang_wait,fail_after=150,completion=block"),
            "--in",
            "64,128",
            "--out",
            "64",
            "--samples",
            "100",
            "--warmup",
            "10",
            "--timeout",
            "60s",
            "--format",
            "json",
            "-o",
            out.to_str().unwrap(),
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
        let mut child = c.spawn().unwrap();
        // The hang comes after the first point: wait for the device to block.
        std::thread::sleep(std::time::Duration::from_millis(1500));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let t = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(t.elapsed().as_secs() < 30, "signal {sig} ignored");
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(code), "signal {sig}");
        let d = read_json(&out);
        assert_eq!(d["complete"], false);
        assert_eq!(d["stopped_by"], "interrupted");
        assert_eq!(d["points"].as_array().unwrap().len(), 1, "{d}");
        assert_eq!(d["devices"][0]["plugin"], "faulty");
    }
}

/// A close that hangs is waited for once, said once, and leaves a run
/// whose every point was measured complete; the exit status says it failed.
#[test]
fn a_hung_close_is_said_once_and_keeps_the_points() {
    let _t = turn();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("close.json");
    let (o, took) = timed(&[
        "roundtrip",
        "-t",
        &spec(&faulty(), ",fault=hang_close"),
        "--in",
        "64,128",
        "--out",
        "64",
        "--samples",
        "50",
        "--timeout",
        "2s",
        "--format",
        "json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.matches("close() did not return").count(), 1, "{e}");
    assert!(took.as_secs_f64() < 20.0, "took {took:?}");
    let d = read_json(&out);
    assert_eq!(d["complete"], true, "{d}");
    assert_eq!(points(&d).len(), 2);
    assert!(
        d["devices"][0]["close"]
            .as_str()
            .unwrap()
            .contains("close() did not return"),
        "{}",
        d["devices"]
    );
}

/// A device that fails mid-run: what it measured before is kept, with the
/// device's record and its message.
#[test]
fn a_device_failing_mid_run_keeps_what_was_measured() {
    let _t = turn();
    let f = faulty();
    let s = spec(&f, ",fault=fail_mid_run,fail_after=49");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let o = xb(&[
        "stream",
        "--filename",
        &format!("xfer:{s}"),
        "--rw",
        "write",
        "--bs",
        "4k",
        "--size",
        "1m",
        "--iodepth",
        "1",
        "--format",
        "json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        last_line(&o).contains("DMA engine halted after 49 jobs"),
        "{}",
        stderr(&o)
    );
    let d = read_json(&out);
    let j = &d["jobs"][0];
    assert_eq!(num(&j["write"], "io_bytes"), 49.0 * 4096.0, "{j}");
    assert_eq!(j["device"]["plugin"], "faulty", "{j}");
    // The table says what failed and what was measured.
    let o = xb(&[
        "roundtrip",
        "-t",
        &spec(&f, ",fault=fail_mid_run,fail_after=700"),
        "--in",
        "64,128",
        "--out",
        "64",
        "--samples",
        "500",
        "--warmup",
        "10",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("INCOMPLETE:") && text.contains("halted after 700 jobs"),
        "{text}"
    );
    assert!(text.contains("measured before it"), "{text}");
    assert!(text.contains("Device: faulty"), "{text}");
}

/// The echo example as a 1000 MB/s device: host to device and device to
/// host through stream jobs (one job file, the XDMA table's two channels)
/// and curve, each direction with its own figures, none above the model.
#[test]
fn both_directions_through_a_plugin() {
    let _t = turn();
    let model = 1e9;
    let s = spec(&echo(), ",bw=1000000000,depth=16");
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("xdma.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\nfilename=xfer:{s}\nsize=32m\niodepth=8\nstonewall\n\n[h2c]\nrw=write\n\n[c2h]\nrw=read\n\n[mix]\nrw=randrw\nrwmixread=30\n"
        ),
    )
    .unwrap();
    let d = json(&xb(&[
        "stream",
        "--job",
        job.to_str().unwrap(),
        "--bs",
        "64k,256k",
        "--format",
        "json",
        "-q",
    ]));
    assert_eq!(d["complete"], true);
    let jobs = d["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 6, "3 jobs x 2 block sizes");
    for j in jobs {
        let (r, w) = (num(&j["read"], "bw_bytes"), num(&j["write"], "bw_bytes"));
        let (rb, wb) = (num(&j["read"], "io_bytes"), num(&j["write"], "io_bytes"));
        match j["jobname"].as_str().unwrap() {
            "h2c" => assert!(wb == 32.0 * 1048576.0 && rb == 0.0, "{j}"),
            "c2h" => assert!(rb == 32.0 * 1048576.0 && wb == 0.0, "{j}"),
            _ => assert!(rb > 0.0 && wb > 0.0 && rb + wb == 32.0 * 1048576.0, "{j}"),
        }
        // Never above the model (a mix shares it between its directions);
        // a busy machine may only slow it.
        let bw = r + w;
        assert!(bw <= model * 1.05 && bw > 0.0, "{bw} B/s: {j}");
        assert_eq!(j["completion"], "poll", "{j}");
    }
    // Curve, both ways: direction per point, the H2C/C2H table.
    let o = xb(&[
        "curve",
        "-t",
        &s,
        "--mode",
        "stream",
        "--direction",
        "write,read",
        "--sizes",
        "64k,1m",
        "--window",
        "16",
        "--samples",
        "20",
    ]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        text.contains("both directions") && text.contains("read MB/s"),
        "{text}"
    );
    let d = json(&xb(&[
        "curve",
        "-t",
        &s,
        "--mode",
        "stream",
        "--direction",
        "write,read",
        "--sizes",
        "64k,1m",
        "--window",
        "16",
        "--samples",
        "20",
        "--format",
        "json",
        "-q",
    ]));
    let pts = points(&d);
    assert_eq!(pts.len(), 4);
    for way in ["write", "read"] {
        let of: Vec<&Value> = pts.iter().filter(|p| p["direction"] == way).collect();
        assert_eq!(of.len(), 2, "{way}");
        for p in of {
            // The model's 1000 MB/s is a ceiling the figure must respect;
            // how close it gets depends on the host (beside two CPU hogs a
            // read measured 88 MB/s), so below it only that data moved.
            let mbps = num(p, "bandwidth_MBps");
            assert!(mbps <= 1050.0 && mbps > 0.0, "{way}: {mbps} MB/s");
        }
    }
    // Read is a stream: refused with pingpong, in one line.
    let o = xb(&["curve", "-t", &s, "--direction", "read", "--sizes", "64"]);
    one_line(&o, 2, "--mode stream");
}

/// A device that reports its own time: each round trip splits into the
/// device's share and the host's, and a 5 µs device shows as 5 µs of
/// device time with the host's share about what it is at 0 µs.
#[test]
fn device_time_splits_each_round_trip() {
    let _t = turn();
    let budget = |lat: &str| {
        let d = json(&xb(&[
            "roundtrip",
            "-t",
            &spec(&echo(), &format!(",lat={lat},hw_time=1")),
            "--in",
            "64",
            "--out",
            "64",
            "--samples",
            "5000",
            "--format",
            "json",
            "-q",
        ]));
        let p = &points(&d)[0];
        let t = &p["device_time"];
        (
            num(&t["device"], "p50_ns"),
            num(&t["host"], "p50_ns"),
            num(&p["summary"], "p50_ns"),
        )
    };
    let (dev0, host0, _) = budget("0us");
    let (dev5, host5, rtt5) = budget("5us");
    assert!(dev0 < 2_000.0, "a 0 µs device took {dev0} ns");
    assert!(
        (5_000.0..7_000.0).contains(&dev5),
        "a 5 µs device: {dev5} ns"
    );
    assert!(rtt5 >= dev5, "the round trip holds the device time");
    // The host's share does not grow with the device's time (loosely: a
    // busy machine moves both).
    assert!(
        host5 < host0 * 3.0 + 2_000.0,
        "host {host0} ns at 0 µs, {host5} at 5 µs"
    );
    // The table and CSV carry the budget.
    let s = spec(&echo(), ",lat=5us");
    let o = xb(&[
        "roundtrip",
        "-t",
        &s,
        "--in",
        "64",
        "--out",
        "64",
        "--samples",
        "200",
    ]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("latency budget"));
    let o = xb(&[
        "roundtrip",
        "-t",
        &s,
        "--in",
        "64",
        "--out",
        "64",
        "--samples",
        "200",
        "--format",
        "csv",
    ]);
    let csv = String::from_utf8_lossy(&o.stdout).into_owned();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    for col in ["device_p50_ns", "host_p50_ns", "host_mean_ns"] {
        assert!(header.contains(&col), "{csv}");
    }
}

/// Cells a device cannot carry are skipped with a reason; the rest measured.
#[test]
fn matrices_skip_what_the_device_cannot_carry() {
    let _t = turn();
    // echo's mmio window is 4 KiB: the 64k requests are skipped.
    let o = xb(&[
        "roundtrip",
        "-t",
        &spec(&echo(), ""),
        "--buffers",
        "mmio",
        "--in",
        "64,4k,64k",
        "--out",
        "64",
        "--samples",
        "50",
        "--format",
        "json",
        "-q",
    ]);
    let d = json(&o);
    assert_eq!(d["complete"], true);
    assert_eq!(points(&d).len(), 2);
    let skipped = d["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{d}");
    assert_eq!(skipped[0]["in_bytes"], 65536);
    assert!(
        skipped[0]["reason"]
            .as_str()
            .unwrap()
            .contains("mmio window"),
        "{d}"
    );
    let o = xb(&[
        "roundtrip",
        "-t",
        &spec(&echo(), ""),
        "--buffers",
        "mmio",
        "--in",
        "64,64k",
        "--out",
        "64",
        "--samples",
        "50",
    ]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        text.contains("Skipped:") && text.contains("mmio window"),
        "{text}"
    );
    // A loopback never replies longer than the request: those cells are
    // skipped at the device's refusal.
    let dir = tempfile::tempdir().unwrap();
    let fifo = loopback(dir.path());
    let s = spec(&fdpair(), &format!(",h2c={0},c2h={0}", fifo.display()));
    let d = json(&xb(&[
        "roundtrip",
        "-t",
        &s,
        "--in",
        "64,256",
        "--out",
        "128",
        "--samples",
        "50",
        "--format",
        "json",
        "-q",
    ]));
    assert_eq!(points(&d).len(), 1, "{d}");
    assert_eq!(points(&d)[0]["in_bytes"], 256);
    assert!(
        d["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("cannot be longer than the request"),
        "{d}"
    );
}

/// ABI 1.1: options the plugin describes are listed, checked by kind
/// before open, and named in the error; a plugin built against the 1.0
/// header still loads.
#[test]
fn abi_1_1_options_and_a_1_0_plugin() {
    let _t = turn();
    let e = echo();
    let d = json(&xb(&["list", "-t", &spec(&e, ""), "--format", "json"]));
    let text = d.to_string();
    for o in ["depth", "lat", "bw", "hw_time"] {
        assert!(text.contains(o), "{o} not listed: {text}");
    }
    let o = xb(&["roundtrip", "-t", &spec(&e, ",lat=5"), "--samples", "10"]);
    let line = one_line(&o, 2, "lat=5 is not a time");
    assert!(line.contains("a bare number is refused"), "{line}");
    let o = xb(&[
        "roundtrip",
        "-t",
        &spec(&e, ",latency=5us"),
        "--samples",
        "10",
    ]);
    let line = one_line(&o, 2, "unknown option 'latency'");
    assert!(line.contains("lat=TIME"), "{line}");
    // blind.c built against the 1.0 header, as released.
    let old = build(
        "blind10",
        "tests/fixtures/plugins/blind.c",
        &["-Itests/fixtures/plugins/abi-1.0"],
    );
    let d = json(&xb(&[
        "roundtrip",
        "-t",
        &spec(&old, ",lanes=2"),
        "--in",
        "64",
        "--out",
        "64",
        "--samples",
        "50",
        "--format",
        "json",
        "-q",
    ]));
    assert_eq!(d["devices"][0]["abi"], "1.0", "{}", d["devices"]);
    assert_eq!(d["complete"], true);
}

/// The header's value helpers and the host accept exactly the same option
/// values, so a plugin parsing with them gets what the host checked.
#[test]
fn the_headers_helpers_agree_with_the_host() {
    let _t = turn();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("agree.c");
    std::fs::write(
        &src,
        r#"#include <xferbench/plugin.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        uint64_t v = 0; int b = 0, r;
        if (!strcmp(argv[1], "time")) r = xb_parse_time_ns(argv[i], &v);
        else if (!strcmp(argv[1], "size")) r = xb_parse_size(argv[i], &v);
        else if (!strcmp(argv[1], "rate")) r = xb_parse_rate(argv[i], &v);
        else if (!strcmp(argv[1], "count")) r = xb_parse_count(argv[i], &v);
        else { r = xb_parse_bool(argv[i], &b); v = (uint64_t)b; }
        printf("%s %llu\n", r ? "bad" : "ok", (unsigned long long)v);
    }
    return 0;
}
"#,
    )
    .unwrap();
    let exe = dir.path().join("agree");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let o = std::process::Command::new(&cc)
        .current_dir(root)
        .args(["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Iinclude"])
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        o.stderr.is_empty(),
        "warnings: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let e = echo();
    // (helper, echo's option of that kind, values)
    let cases: [(&str, &str, &[&str]); 5] = [
        (
            "time",
            "lat",
            &[
                "5us", "1.5ms", "250ns", "2s", "5", "5.us", "us", "1.25US", "-1us", "1e3us",
            ],
        ),
        (
            "size",
            "max",
            &["4k", "1M", "2GiB", "64", "1.5k", "k", "4kk", "4 k", "0x10"],
        ),
        (
            "rate",
            "bw",
            &["1000000000", "1G/s", "1g", "10m/S", "1G/sec", "/s", "5 /s"],
        ),
        ("count", "depth", &["1", "64", "4096", "64k", "+1", "1.0"]),
        ("bool", "hw_time", &["1", "0", "true", "No", "ON", "2", "y"]),
    ];
    for (kind, key, values) in cases {
        let out = std::process::Command::new(&exe)
            .arg(kind)
            .args(values)
            .output()
            .unwrap();
        let c_says: Vec<bool> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.starts_with("ok"))
            .collect();
        assert_eq!(c_says.len(), values.len());
        for (v, ok) in values.iter().zip(c_says) {
            let o = xb(&["list", "-t", &spec(&e, &format!(",{key}={v}"))]);
            let host_refused = stderr(&o).contains(&format!("{key}={v} is not a"));
            assert_eq!(
                !host_refused,
                ok,
                "{kind} '{v}': C says {ok}, host: {}",
                stderr(&o)
            );
        }
    }
}

/// Two runs of one device with different plugin options compare with
/// --allow-different, the option listed as a configuration difference.
#[test]
fn compare_firmware_a_with_firmware_b() {
    let _t = turn();
    let dir = tempfile::tempdir().unwrap();
    let run = |lat: &str| {
        let p = dir.path().join(format!("{lat}.json"));
        let o = xb(&[
            "roundtrip",
            "-t",
            &spec(&echo(), &format!(",lat={lat}")),
            "--in",
            "64",
            "--out",
            "64",
            "--samples",
            "3000",
            "--repeat",
            "3",
            "--format",
            "json",
            "-o",
            p.to_str().unwrap(),
            "-q",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        p
    };
    let (a, b) = (run("5us"), run("7us"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let o = xb(&["compare", a, b]);
    one_line(&o, 2, "lat");
    let o = xb(&["compare", a, b, "--allow-different"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        stderr(&o)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("lat"));
}

/// `plugin check` with `args` after the library, its output and stdout.
fn check(lib: &Path, args: &[&str]) -> (Output, String) {
    let mut all = vec!["plugin", "check", lib.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = xb(&all);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    (o, out)
}

/// A device whose every job takes a fifth of the per-call timeout passes:
/// each shape check (8 jobs) runs for longer than a timeout, but no single
/// call does, and completions keep arriving. (Timeouts only bound one
/// call; no time is asserted, and a healthy call has seconds.)
#[test]
fn plugin_check_calls_a_slow_but_progressing_device_slow_not_hung() {
    let _t = turn();
    let f = faulty();
    let (o, out) = check(
        &f,
        &["fault=none", "job_ms=200", "depth=2", "--timeout", "1500ms"],
    );
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(out.contains("verdict: PASS"), "{out}");
    assert!(
        out.contains("raw/block request 64 reply 64: 8 jobs"),
        "{out}"
    );
}

/// Each call that never returns ends the check with a FAIL line naming
/// that call (the guard's message), the verdict, and exit 1 — a hung
/// close() included, which used to be named "load/open/caps".
#[test]
fn plugin_check_names_the_call_that_hung() {
    let _t = turn();
    let f = faulty();
    for (fault, call) in [
        ("hang_open", "open()"),
        ("hang_submit", "submit()"),
        ("hang_poll", "poll()"),
        ("hang_wait", "wait()"),
        ("hang_close", "close()"),
    ] {
        // Two seconds: a healthy call (a close joining the plugin's worker
        // beside two CPU hogs) is never expected to return within less.
        let (o, out) = check(&f, &[&format!("fault={fault}"), "--timeout", "2s"]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{fault}: {out}{e}");
        assert!(!e.contains("panicked"), "{fault}: {e}");
        let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
        assert_eq!(fails.len(), 1, "{fault}: {out}");
        assert!(
            fails[0].contains(&format!("{call} did not return within 2.0s")),
            "{fault}: {out}"
        );
        assert!(!fails[0].contains("load/open/caps"), "{fault}: {out}");
        let verdict = out.lines().last().unwrap_or_default();
        assert!(verdict.starts_with("verdict: FAIL ("), "{fault}: {out}");
        assert!(
            verdict.contains(&format!("; {call} never returned")),
            "{fault}: {out}"
        );
        let last = e.lines().last().unwrap_or_default();
        assert!(last.starts_with("xferbench: error: "), "{fault}: {e}");
    }
    // The blocking wait is only used in block mode, after poll mode passed.
    let (_, out) = check(&f, &["fault=hang_wait", "--timeout", "2s"]);
    assert!(out.contains("ok    user/poll queue depth"), "{out}");
    assert!(out.contains("FAIL  user/block request 1 reply 1"), "{out}");
    // JSON: the checks so far and the hung one, as one object.
    let (o, out) = check(
        &f,
        &["fault=hang_wait", "--timeout", "2s", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(1));
    let d: Value = serde_json::from_str(&out).expect("stdout is JSON");
    assert_eq!(d["passed"], false, "{d}");
    let checks = d["checks"].as_array().unwrap();
    let last = checks.last().unwrap();
    assert_eq!(last["result"], "FAIL", "{d}");
    assert!(last["detail"].as_str().unwrap().contains("wait()"), "{d}");
    assert!(checks.iter().filter(|c| c["result"] == "ok").count() > 5);
}

/// A job that completes with a negative status is shown with the status's
/// name and the plugin's message, not a bare number.
#[test]
fn plugin_check_shows_a_failed_jobs_status_name_and_message() {
    let _t = turn();
    let f = faulty();
    // Every job fails: the first shape check says why.
    let (o, out) = check(&f, &["fault=job_error"]);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("FAIL")
            && l.contains("XB_E_IO (-5): faulty: DMA engine reported a descriptor error")),
        "{out}"
    );
    // Jobs fail after the shape checks: the queue-depth check says why.
    let (o, out) = check(&f, &["fault=fail_mid_run", "fail_after=40"]);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(!fails.is_empty(), "{out}");
    for l in &fails {
        assert!(
            l.contains("XB_E_IO (-5): faulty: DMA engine halted after 40 jobs"),
            "{out}"
        );
        assert!(!l.contains("status -5"), "{out}");
    }
    assert!(
        stderr(&o).contains("checks failed, the first: "),
        "{}",
        stderr(&o)
    );
}

/// `--help` offers only the formats the check prints; CSV is refused in
/// one line.
#[test]
fn plugin_check_offers_table_and_json_only() {
    let o = xb(&["plugin", "check", "--help"]);
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(help.contains("table") && help.contains("json"), "{help}");
    assert!(!help.to_lowercase().contains("csv"), "{help}");
    let o = xb(&["plugin", "check", "x.so", "--format", "csv"]);
    one_line(&o, 2, "not CSV");
    let o = xb(&["plugin", "check", "x.so", "--format", "xml"]);
    one_line(&o, 2, "table, json");
}

/// faulty.c again, its table extended with ABI 1.1 option_info: a plugin
/// that describes the options it takes.
fn described() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = build_dir().join("described.c");
    let code = format!(
        r#"#define xferbench_plugin_v1 faulty_entry
#include "{}"
#undef xferbench_plugin_v1

static const xb_option_info described_options[] = {{
    {{"depth", XB_OPT_COUNT, 0, "8", "jobs in flight, 1..65536"}},
    {{"fault", XB_OPT_STRING, 0, "none", "the misbehaviour <to> show"}},
    {{"fail_after", XB_OPT_COUNT, 0, "0", "good jobs before a fault"}},
    {{"job_ms", XB_OPT_COUNT, 0, "0", "extra time per job, ms"}},
}};
static xb_plugin described_table;

XB_EXPORT const xb_plugin *xferbench_plugin_v1(uint32_t major, uint32_t minor)
{{
    const xb_plugin *t = faulty_entry(major, minor);

    if (t == NULL)
        return NULL;
    described_table = *t;
    described_table.option_info = described_options;
    described_table.n_option_info = 4;
    return &described_table;
}}
"#,
        root.join("tests/fixtures/plugins/faulty.c").display()
    );
    std::fs::write(&src, code).unwrap();
    build("described", src.to_str().unwrap(), &[])
}

/// The header says what was given and, for a plugin that describes its
/// options (ABI 1.1), what it takes; so does the JSON.
#[test]
fn plugin_check_header_lists_given_and_described_options() {
    let _t = turn();
    let f = faulty();
    let (o, out) = check(&f, &["depth=4", "fault=none"]);
    assert!(o.status.success(), "{out}");
    let first = out.lines().next().unwrap();
    assert_eq!(
        first,
        format!("plugin check {} depth=4 fault=none", f.display())
    );
    let (o, out) = check(&f, &["depth=4", "--format", "json"]);
    assert!(o.status.success(), "{out}");
    let d: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(d["options"], serde_json::json!(["depth=4"]), "{d}");
    assert_eq!(d["described_options"], serde_json::json!([]), "{d}");

    let lib = described();
    let (o, out) = check(&lib, &["depth=2"]);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].ends_with("described.so depth=2"), "{out}");
    assert!(lines[1].starts_with("faulty takes (ABI 1.1"), "{out}");
    assert!(
        lines[2].contains("depth=COUNT (default 8): jobs in flight"),
        "{out}"
    );
    let (o, out) = check(&lib, &["depth=2", "--format", "json"]);
    assert!(o.status.success(), "{out}");
    let d: Value = serde_json::from_str(&out).unwrap();
    let opts = d["described_options"].as_array().unwrap();
    assert_eq!(opts.len(), 4, "{d}");
    assert_eq!(opts[0]["name"], "depth");
    assert_eq!(opts[0]["kind"], "count");
    assert_eq!(opts[0]["default"], "8");
    assert_eq!(opts[1]["help"], "the misbehaviour <to> show");
    // The host checks given options against the description before open.
    let (o, _) = check(&lib, &["depth=two"]);
    one_line(&o, 2, "depth=two");
}

/// `list` names a plugin's mmio limit as its window, not "inline".
#[test]
fn list_calls_a_plugins_mmio_limit_its_window() {
    let e = echo();
    let o = xb(&["list", "--no-probe", "-t", &spec(&e, "")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("(mmio window 4 KiB, reply 1 GiB)"), "{out}");
    assert!(!out.contains("(inline 4 KiB"), "{out}");
}

/// Every close hangs, that of the device opened to read the capabilities
/// too: it is waited for once (the run's own close is not waited for
/// again), said once, recorded on the device, and fails the exit status;
/// a stream job whose close hangs fails the same way.
#[test]
fn a_close_that_hangs_is_waited_for_once_and_fails_the_run() {
    let _t = turn();
    let f = faulty();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("always.json");
    let o = xb(&[
        "roundtrip",
        "-t",
        &spec(&f, ",fault=hang_close_always"),
        "--in",
        "64",
        "--out",
        "64",
        "--samples",
        "50",
        "--timeout",
        "2s",
        "--format",
        "json",
        "-o",
        out.to_str().unwrap(),
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert_eq!(
        e.lines().filter(|l| l.contains("close()")).count(),
        1,
        "{e}"
    );
    let d = read_json(&out);
    assert_eq!(d["complete"], true, "{d}");
    assert_eq!(points(&d).len(), 1);
    let dev = &d["devices"][0];
    let close = dev["close"].as_str().unwrap_or_default();
    assert!(
        close.contains("not waited for")
            && close.contains("opened to read its capabilities")
            && close.contains("within 2.0s"),
        "{dev}"
    );
    assert!(
        dev.get("error").is_none() && dev.get("state").is_none(),
        "{dev}"
    );

    let s = spec(&f, ",fault=hang_close");
    let out = dir.path().join("stream.json");
    let o = xb(&[
        "stream",
        "--filename",
        &format!("xfer:{s}"),
        "--rw",
        "write",
        "--bs",
        "4k",
        "--size",
        "64k",
        "--iodepth",
        "1",
        "--timeout",
        "2s",
        "--format",
        "json",
        "-o",
        out.to_str().unwrap(),
        "-q",
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert_eq!(
        e.lines().filter(|l| l.contains("did not return")).count(),
        1,
        "{e}"
    );
    let d = read_json(&out);
    let j = &d["jobs"][0];
    assert_eq!(num(&j["write"], "io_bytes"), 65536.0, "{j}");
    let dev = &j["device"];
    assert!(
        dev["close"]
            .as_str()
            .unwrap_or_default()
            .contains("close() did not return within 2.0s"),
        "{dev}"
    );
    assert_eq!(dev["spec"], s, "{dev}");
    assert!(
        dev["buffers"].is_string() && dev["completion"].is_string(),
        "{dev}"
    );
}

/// What failed while measuring is the device's `error`, a close that
/// returned is no failed close, and a stream job's device says its spec
/// and modes as the other experiments' devices do.
#[test]
fn device_records_hold_their_own_errors() {
    let _t = turn();
    let f = faulty();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rt.json");
    let o = xb(&[
        "roundtrip",
        "-t",
        &spec(&f, ",fault=fail_mid_run,fail_after=700"),
        "--in",
        "64,128",
        "--out",
        "64",
        "--samples",
        "500",
        "--warmup",
        "10",
        "--format",
        "json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let d = read_json(&out);
    let dev = &d["devices"][0];
    assert!(
        dev["error"]
            .as_str()
            .unwrap_or_default()
            .contains("halted after 700 jobs"),
        "{dev}"
    );
    assert!(dev.get("close").is_none(), "close returned: {dev}");
    let s = spec(&f, ",fault=fail_mid_run,fail_after=49");
    let out = dir.path().join("s.json");
    let o = xb(&[
        "stream",
        "--filename",
        &format!("xfer:{s}"),
        "--rw",
        "write",
        "--bs",
        "4k",
        "--size",
        "1m",
        "--iodepth",
        "1",
        "--format",
        "json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let dev = &read_json(&out)["jobs"][0]["device"];
    assert!(
        dev["error"]
            .as_str()
            .unwrap_or_default()
            .contains("halted after 49 jobs"),
        "{dev}"
    );
    assert!(dev.get("close").is_none(), "{dev}");
    assert_eq!(dev["spec"], s, "{dev}");
    assert_eq!(dev["buffers"], "raw", "{dev}");
}

/// One rule in every experiment: a size, cell or mode the device cannot
/// carry is skipped and said (JSON `skipped`, a `Skipped:` line), the rest
/// measured with exit 0; a run left with nothing to measure exits 2.
#[test]
fn every_experiment_skips_what_the_device_cannot_carry() {
    let _t = turn();
    let s = spec(&faulty(), "");
    // faulty takes requests of at most 1 MiB.
    let load = |sizes: &str, format: &str| {
        xb(&[
            "load",
            "-t",
            &s,
            "--sizes",
            sizes,
            "--load",
            "idle",
            "--direction",
            "write",
            "--cell-time",
            "100ms",
            "--format",
            format,
            "-q",
        ])
    };
    let d = json(&load("64,2m", "json"));
    assert_eq!(d["complete"], true, "{d}");
    assert_eq!(points(&d).len(), 1, "{d}");
    let skipped = d["skipped"].as_array().expect("skipped");
    assert_eq!(skipped.len(), 1, "{d}");
    assert_eq!(skipped[0]["size_bytes"], 2 << 20);
    assert!(
        skipped[0]["reason"].as_str().unwrap().contains("limit"),
        "{d}"
    );
    let o = load("64,2m", "table");
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        text.contains("Skipped:") && text.contains("write 2097152 B"),
        "{text}"
    );
    one_line(&load("2m", "json"), 2, "nothing to measure");

    // A stream --bs sweep leaves out the size over the limit.
    let stream = |bs: &str| {
        xb(&[
            "stream",
            "--filename",
            &format!("xfer:{s}"),
            "--rw",
            "write",
            "--bs",
            bs,
            "--size",
            "4m",
            "--iodepth",
            "1",
            "--format",
            "json",
            "-q",
        ])
    };
    let d = json(&stream("4k,2m"));
    assert_eq!(d["complete"], true, "{d}");
    assert_eq!(d["jobs"].as_array().unwrap().len(), 1, "{d}");
    assert_eq!(d["skipped"][0]["bs"], 2 << 20, "{d}");
    one_line(&stream("2m,4m"), 2, "nothing to measure");

    // A curve whose every size is skipped measured nothing.
    let o = xb(&[
        "curve",
        "-t",
        &s,
        "--sizes",
        "2m,4m",
        "--samples",
        "20",
        "--format",
        "json",
        "-q",
    ]);
    one_line(&o, 2, "nothing to measure");

    // Mixed transports, one without mmio: its mmio cells are skipped.
    let d = json(&xb(&[
        "roundtrip",
        "-t",
        &spec(&echo(), ""),
        "-t",
        &s,
        "--buffers",
        "user,mmio",
        "--in",
        "64",
        "--out",
        "64",
        "--samples",
        "50",
        "--format",
        "json",
        "-q",
    ]));
    assert_eq!(points(&d).len(), 3, "{d}");
    let skipped = d["skipped"].as_array().expect("skipped");
    assert_eq!(skipped.len(), 1, "{d}");
    assert_eq!(skipped[0]["buffers"], "mmio");
    assert!(
        skipped[0]["reason"]
            .as_str()
            .unwrap()
            .contains("does not support mmio"),
        "{d}"
    );
    let d = json(&xb(&[
        "curve",
        "-t",
        &spec(&echo(), ""),
        "-t",
        &s,
        "--buffers",
        "user,mmio",
        "--sizes",
        "64",
        "--samples",
        "20",
        "--format",
        "json",
        "-q",
    ]));
    assert_eq!(points(&d).len(), 3, "{d}");
    assert_eq!(d["skipped"].as_array().unwrap().len(), 1, "{d}");
}

/// A device time longer than the round trip the host measured is not a
/// duration: the run flags it on the point, and `plugin check` fails it.
#[test]
fn a_device_time_longer_than_the_round_trip_is_flagged() {
    let _t = turn();
    let f = faulty();
    let d = json(&xb(&[
        "roundtrip",
        "-t",
        &spec(&f, ",fault=clock_hw_ns"),
        "--in",
        "64",
        "--out",
        "64",
        "--samples",
        "100",
        "--format",
        "json",
        "-q",
    ]));
    let p = &points(&d)[0];
    assert!(
        p["device_time"]["over_round_trip"].as_u64().unwrap_or(0) > 0,
        "{p}"
    );
    assert!(
        p["warnings"].to_string().contains("not a clock reading"),
        "{p}"
    );
    let (o, out) = check(&f, &["fault=clock_hw_ns"]);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(
        out.lines()
            .any(|l| l.starts_with("FAIL") && l.contains("hw_ns is")),
        "{out}"
    );
    // An honest device time is no caveat.
    let d = json(&xb(&[
        "roundtrip",
        "-t",
        &spec(&echo(), ",lat=5us,hw_time=1"),
        "--in",
        "64",
        "--out",
        "64",
        "--samples",
        "100",
        "--format",
        "json",
        "-q",
    ]));
    let p = &points(&d)[0];
    assert!(p["device_time"].is_object(), "{p}");
    assert!(!p["warnings"].to_string().contains("clock reading"), "{p}");
}

/// Two stream runs of one device given other plugin options are not like
/// with like: compare refuses them, and lists the option with
/// --allow-different.
#[test]
fn compare_lists_a_stream_devices_options() {
    let _t = turn();
    let dir = tempfile::tempdir().unwrap();
    let run = |bw: &str| {
        let p = dir.path().join(format!("{bw}.json"));
        let o = xb(&[
            "stream",
            "--filename",
            &format!("xfer:{}", spec(&echo(), &format!(",bw={bw}"))),
            "--rw",
            "write",
            "--bs",
            "64k",
            "--size",
            "4m",
            "--iodepth",
            "4",
            "--format",
            "json",
            "-o",
            p.to_str().unwrap(),
            "-q",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        p
    };
    let (a, b) = (run("1g"), run("500m"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let line = one_line(&xb(&["compare", a, b]), 2, "option bw");
    assert!(line.contains("1g vs 500m"), "{line}");
    let o = xb(&["compare", a, b, "--allow-different"]);
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("option bw") && out.contains("500m"), "{out}");
}

/// The latency budget of a device that times itself is in curve's and
/// load's tables, and in the report's HTML, as it is in roundtrip's.
#[test]
fn curve_and_load_show_the_latency_budget() {
    let _t = turn();
    let s = spec(&echo(), ",lat=5us,hw_time=1");
    let dir = tempfile::tempdir().unwrap();
    let (c, l) = (dir.path().join("c.json"), dir.path().join("l.json"));
    let curve = |format: &str, out: Option<&Path>| {
        let mut a: Vec<&str> = vec![
            "curve",
            "-t",
            &s,
            "--mode",
            "pingpong",
            "--sizes",
            "64,4k",
            "--samples",
            "200",
            "--format",
            format,
            "-q",
        ];
        if let Some(p) = out {
            a.extend(["-o", p.to_str().unwrap()]);
        }
        xb(&a)
    };
    let o = curve("table", None);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(text.contains("round-trip budget"), "{text}");
    assert!(curve("json", Some(&c)).status.success());
    let load = |format: &str, out: Option<&Path>| {
        let mut a: Vec<&str> = vec![
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
            "200ms",
            "--format",
            format,
            "-q",
        ];
        if let Some(p) = out {
            a.extend(["-o", p.to_str().unwrap()]);
        }
        xb(&a)
    };
    let o = load("table", None);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        text.contains("latency budget") && text.contains("idle budget"),
        "{text}"
    );
    assert!(load("json", Some(&l)).status.success());
    let html = dir.path().join("html");
    let o = xb(&[
        "report",
        c.to_str().unwrap(),
        l.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(html.join("index.html")).unwrap();
    assert!(page.contains("Latency budget, "), "no curve budget");
    assert!(page.contains("Latency budget under load"), "no load budget");
}

/// A plugin option's value may hold commas when quoted: the plugin gets
/// it whole.
#[test]
fn a_quoted_option_value_keeps_its_commas() {
    let f = faulty();
    let o = xb(&[
        "roundtrip",
        "-t",
        &format!("{},fault=\"hang,close\"", spec(&f, "")),
        "--samples",
        "10",
    ]);
    one_line(&o, 2, "fault=hang,close is unknown");
    let o = xb(&["roundtrip", "-t", &format!("{},fault=\"none", spec(&f, ""))]);
    one_line(&o, 2, "quote is not closed");
}

/// `list` bounds a plugin's calls by --timeout: a close that never returns
/// makes the plugin "not available", said, and list ends.
#[test]
fn list_bounds_a_plugins_calls_by_its_timeout() {
    let _t = turn();
    let o = xb(&[
        "list",
        "-t",
        &spec(&faulty(), ",fault=hang_close_always"),
        "--timeout",
        "2s",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains("not available") && out.contains("did not return within 2.0s"),
        "{out}"
    );
}

/// `report` of a saved run prints the lines its live table printed beside
/// the figures (`Skipped:`, `Device:`), and names from the file (a plugin's
/// name, a spec) are shown inert on a terminal and well-formed in SVG.
#[test]
fn report_says_what_the_run_said_and_keeps_names_inert() {
    let _t = turn();
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("rt.json");
    let o = xb(&[
        "roundtrip",
        "-t",
        &spec(&faulty(), ""),
        "--in",
        "64,2m",
        "--out",
        "64",
        "--samples",
        "50",
        "--format",
        "json",
        "-o",
        saved.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = xb(&["report", saved.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        text.contains("Skipped:") && text.contains("in 2097152 out 64"),
        "{text}"
    );
    assert!(text.contains("Device: faulty"), "{text}");

    // Names with escape sequences and control characters in them.
    let mut d = read_json(&saved);
    let evil = "\u{1b}]0;owned\u{7}\u{1b}[31mred\u{1}";
    d["devices"][0]["plugin"] = format!("faulty{evil}").into();
    for p in d["points"].as_array_mut().unwrap() {
        p["spec"] = format!("plugin{evil}").into();
    }
    let edited = dir.path().join("evil.json");
    std::fs::write(&edited, d.to_string()).unwrap();
    let o = xb(&["report", edited.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        !text.contains(|c: char| c.is_control() && c != '\n' && c != '\t'),
        "{text:?}"
    );
    assert!(text.contains("\\x1b[31mred"), "{text}");
    let svg = dir.path().join("svg");
    let o = xb(&[
        "report",
        edited.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut n = 0;
    for e in std::fs::read_dir(&svg).unwrap() {
        let p = e.unwrap().path();
        let doc = std::fs::read_to_string(&p).unwrap();
        roxmltree::Document::parse(&doc)
            .unwrap_or_else(|e| panic!("{} is not well-formed: {e}", p.display()));
        n += 1;
    }
    assert!(n > 0, "no SVG written");
    // An error line quoting a name from the command line, inert too.
    let o = xb(&[
        "roundtrip",
        "-t",
        &format!("{},\u{1b}[31m=1", spec(&faulty(), "")),
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(!e.contains('\u{1b}') && e.contains("\\x1b[31m"), "{e:?}");
}
