//! End-to-end tests of what a run may take and where its output goes:
//! `-o` never replaces an input (by inode, through another name), never
//! hangs on a FIFO (outputs and fio's log files: the results go to a
//! fallback file named on stderr), keeps the mode of a file written over;
//! ranges are checked before they are expanded; finished stream jobs keep
//! only their results; threads, memory and descriptors are checked
//! against the machine's limits (`setrlimit` in the child) before a run,
//! in one line, never an abort or a panic; `report` and `compare` read
//! regular files of a bounded size. Memory is asserted only as loose
//! bounds far from what the unbounded code took, times only as hang
//! guards of several seconds.

mod common;

use common::{finish, stderr, xferbench};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The tests that set limits count this user's tasks: one at a time.
static LIMITS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn limits_turn() -> std::sync::MutexGuard<'static, ()> {
    LIMITS.lock().unwrap_or_else(|p| p.into_inner())
}

fn mkfifo(p: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// `c` with the soft and hard limit `resource` set to `value` in the
/// child, before it runs.
fn limited(mut c: Command, resource: libc::__rlimit_resource_t, value: u64) -> Command {
    // SAFETY: setrlimit is async-signal-safe; nothing else runs here.
    unsafe {
        c.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            if libc::setrlimit(resource, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    c
}

/// The one error line of a refused run: exit 2, one line, no panic.
fn refused(o: &Output) -> String {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(!e.contains("panicked"), "{e}");
    e
}

/// A small result to compare and report.
fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
    .unwrap()
}

#[test]
fn compare_refuses_an_output_that_is_one_of_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let text = fixture("roundtrip.json");
    std::fs::write(&a, &text).unwrap();
    std::fs::write(&b, &text).unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&b, &link).unwrap();
    for out in [&b, &link] {
        let mut c = xferbench();
        c.arg("compare").arg(&a).arg(&b).arg("-o").arg(out);
        let e = refused(&finish(c));
        assert!(e.contains("would replace it"), "{e}");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), text, "b intact");
    }
    // Another file is written.
    let mut c = xferbench();
    let other = dir.path().join("c.txt");
    c.arg("compare").arg(&a).arg(&b).arg("-o").arg(&other);
    let o = finish(c);
    assert!(o.status.code().is_some_and(|c| c < 2), "{}", stderr(&o));
    assert!(std::fs::metadata(&other).unwrap().len() > 0);
}

#[test]
fn stream_refuses_an_output_that_is_its_job_file_or_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let job = "[j]\nfilename=data\nsize=64k\nrw=write\n";
    std::fs::write(dir.path().join("j.fio"), job).unwrap();
    std::fs::write(dir.path().join("data"), "keep").unwrap();
    for (args, out) in [
        (&["stream", "--job", "j.fio"][..], "j.fio"),
        (&["stream", "j.fio"][..], "./j.fio"),
        (&["stream", "--job", "j.fio"][..], "data"),
        (&["fio", "j.fio"][..], "j.fio"),
    ] {
        let mut c = xferbench();
        c.args(args).current_dir(dir.path());
        if args[0] == "fio" {
            c.arg(format!("--output={out}"));
        } else {
            c.args(["-o", out]);
        }
        let e = refused(&finish(c));
        assert!(e.contains("would replace it"), "{args:?} -o {out}: {e}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("j.fio")).unwrap(),
        job
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("data")).unwrap(),
        "keep"
    );
}

#[test]
fn an_output_written_over_keeps_its_mode() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("private.json");
    std::fs::write(&out, "old").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    std::fs::write(&a, fixture("roundtrip.json")).unwrap();
    std::fs::write(&b, fixture("roundtrip.json")).unwrap();
    let mut c = xferbench();
    c.arg("compare").arg(&a).arg(&b).arg("-o").arg(&out);
    let o = finish(c);
    assert!(o.status.code().is_some_and(|c| c < 2), "{}", stderr(&o));
    let m = std::fs::metadata(&out).unwrap();
    assert_eq!(m.permissions().mode() & 0o777, 0o600);
    assert_ne!(std::fs::read_to_string(&out).unwrap(), "old");
}

/// The file a FIFO output's results were kept in, from the error line.
fn fallback(e: &str) -> PathBuf {
    let at = e
        .find("kept in ")
        .unwrap_or_else(|| panic!("no fallback named: {e}"));
    PathBuf::from(e[at + "kept in ".len()..].trim())
}

#[test]
fn an_output_fifo_without_a_reader_ends_at_the_timeout_with_the_results_kept() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("out.fifo");
    mkfifo(&fifo);
    let t = Instant::now();
    let mut c = xferbench();
    c.args([
        "--quiet",
        "roundtrip",
        "-t",
        "pipe",
        // Unpinned: pinned spinning pairs beside the other tests' runs
        // on two cores can starve for minutes.
        "--cpus",
        "none",
        "--samples",
        "20",
        "--in",
        "64",
        "--timeout",
        "1s",
        "--format",
        "json",
        "-o",
    ])
    .arg(&fifo);
    let o = finish(c);
    // A hang guard (before, it waited for ever), far above the second it
    // waits: a loaded machine can take a minute over the run itself.
    assert!(t.elapsed() < Duration::from_secs(180));
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("no reader"), "{e}");
    let kept = fallback(&e);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&kept).unwrap()).unwrap();
    assert_eq!(v["experiment"], "roundtrip");
    let _ = std::fs::remove_file(&kept);
}

#[test]
fn an_output_fifo_with_a_reader_gets_everything() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("out.fifo");
    mkfifo(&fifo);
    // The reader is there before the run starts: the check before the run
    // must not end its input.
    let reader = {
        let f = fifo.clone();
        std::thread::spawn(move || std::fs::read(&f).unwrap())
    };
    // A pipe's responder, and a long timeout: on a loaded machine a
    // pinned thread responder can miss the default 10 s.
    let mut c = xferbench();
    c.args([
        "--quiet",
        "roundtrip",
        "-t",
        "pipe",
        // Unpinned: pinned spinning pairs beside the other tests' runs
        // on two cores can starve for minutes.
        "--cpus",
        "none",
        "--samples",
        "50",
        "--in",
        "64",
        "--timeout",
        "60s",
        "--format",
        "json",
        "-o",
    ])
    .arg(&fifo);
    let o = finish(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let got = reader.join().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&got).expect("the whole JSON");
    assert_eq!(v["experiment"], "roundtrip");
}

#[test]
fn a_log_file_that_is_a_fifo_never_blocks_the_job() {
    let dir = tempfile::tempdir().unwrap();
    mkfifo(&dir.path().join("f_bw.1.log"));
    std::fs::write(
        dir.path().join("j.fio"),
        "[j]\nfilename=data\nsize=64k\nbs=4k\nrw=write\nwrite_bw_log=f\n",
    )
    .unwrap();
    let t = Instant::now();
    let mut c = xferbench();
    c.args([
        "stream",
        "--format",
        "json",
        "--timeout",
        "1s",
        "j.fio",
        "-o",
        "out.json",
    ])
    .current_dir(dir.path());
    let o = finish(c);
    assert!(t.elapsed() < Duration::from_secs(180), "a hang guard");
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    // The job's warning names where its lines went.
    let line = e
        .lines()
        .find(|l| l.contains("f_bw.1.log"))
        .unwrap_or_else(|| panic!("{e}"));
    let kept = fallback(line);
    assert!(std::fs::read_to_string(&kept).unwrap().lines().count() > 0);
    let _ = std::fs::remove_file(&kept);
    assert!(dir.path().join("out.json").exists());
}

#[test]
fn huge_cpu_ranges_are_refused_before_they_are_expanded() {
    let dir = tempfile::tempdir().unwrap();
    for opt in ["cpus_allowed=0-4000000000", "numa_cpu_nodes=0-4000000000"] {
        std::fs::write(
            dir.path().join("j.fio"),
            format!("[j]\nfilename=data\nsize=64k\nrw=write\n{opt}\n"),
        )
        .unwrap();
        let mut c = xferbench();
        c.args(["stream", "j.fio"]).current_dir(dir.path());
        // Under a small address space, expanding the range would abort.
        let c = limited(c, libc::RLIMIT_AS, 4 << 30);
        let e = refused(&finish(c));
        assert!(e.contains("4000000000 is out of range"), "{opt}: {e}");
    }
    let mut c = xferbench();
    c.args(["load", "--load-cpus", "0-4000000000"]);
    let o = finish(limited(c, libc::RLIMIT_AS, 4 << 30));
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("4000000000 is out of range"), "{e}");
}

/// Runs `c` to its end; its output, and its peak memory in bytes (its
/// own, from wait4, which also reaps it: `Child::wait` would not give it).
#[allow(clippy::zombie_processes)]
fn peak_rss(c: &mut Command) -> (Output, u64) {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = common::Guarded::spawn(c).unwrap();
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let mut status = 0;
    // SAFETY: rusage is plain integers; wait4 only writes into it and
    // into `status`.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; the child is ours and not yet reaped.
    let r = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut ru) };
    assert!(r > 0, "wait4");
    let o = Output {
        status: std::process::ExitStatus::from_raw(status),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    (o, ru.ru_maxrss as u64 * 1024)
}

#[test]
fn finished_stream_jobs_keep_their_results_only() {
    let _turn = limits_turn();
    let dir = tempfile::tempdir().unwrap();
    // 300 stonewalled jobs, each with megabytes of latency recorders while
    // it runs: held all at once, about a gigabyte.
    let mut job = String::from("[global]\nfilename=data\nsize=4k\nbs=4k\nrw=write\nstonewall\n");
    for i in 0..300 {
        job += &format!("[j{i}]\n");
    }
    std::fs::write(dir.path().join("j.fio"), job).unwrap();
    let mut c = xferbench();
    c.args(["--quiet", "stream", "--format", "json", "j.fio"])
        .current_dir(dir.path());
    let (o, peak) = peak_rss(&mut c);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["jobs"].as_array().unwrap().len(), 300);
    assert!(peak < 400 << 20, "peak {} MiB", peak >> 20);
}

#[test]
fn offloaded_submission_is_refused_past_the_thread_limit() {
    let _turn = limits_turn();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("j.fio"),
        "[j]\nfilename=data\nsize=64m\nrw=randread\nioengine=psync\niodepth=16384\n\
         io_submit_mode=offload\nruntime=1\ntime_based\n",
    )
    .unwrap();
    let mut c = xferbench();
    c.args(["stream", "j.fio"]).current_dir(dir.path());
    let e = refused(&finish(limited(c, libc::RLIMIT_NPROC, 2000)));
    assert!(
        e.contains("16384 submitting threads") && e.contains("ulimit -u"),
        "{e}"
    );
    assert!(!dir.path().join("data").exists(), "nothing ran");
}

/// This user's tasks (threads), as RLIMIT_NPROC counts them.
fn user_tasks() -> u64 {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() }.to_string();
    let mut n = 0;
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(s) = std::fs::read_to_string(e.path().join("status")) else {
            continue;
        };
        let field = |k: &str| {
            s.lines()
                .find_map(|l| l.strip_prefix(k))
                .map(|v| v.split_whitespace().next().unwrap_or("").to_string())
        };
        if field("Uid:").as_deref() == Some(uid.as_str()) {
            n += field("Threads:").and_then(|t| t.parse().ok()).unwrap_or(1);
        }
    }
    n
}

#[test]
fn a_one_job_stream_fits_a_tight_task_limit_and_a_tighter_one_is_said_plainly() {
    let _turn = limits_turn();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("j.fio"),
        "[j]\nfilename=data\nsize=64k\nrw=write\n",
    )
    .unwrap();
    // Room for the job and its few threads (the margin is wide: as root,
    // every builder's threads on the machine count, and they come and go).
    let mut c = xferbench();
    c.args(["--quiet", "stream", "j.fio"])
        .current_dir(dir.path());
    let o = finish(limited(c, libc::RLIMIT_NPROC, user_tasks() + 2000));
    assert!(o.status.success(), "{}", stderr(&o));
    // No room: one line whose figures agree with the refusal (the old
    // line refused 1 thread with the limit far above the tasks in use).
    let mut c = xferbench();
    c.args(["--quiet", "stream", "j.fio"])
        .current_dir(dir.path());
    let e = refused(&finish(limited(c, libc::RLIMIT_NPROC, 1)));
    assert!(
        e.contains("1 job thread") && e.contains("ulimit -u allows 1 tasks"),
        "{e}"
    );
    let figure = |before: &str| -> u64 {
        let at = e.find(before).unwrap_or_else(|| panic!("{before}: {e}")) + before.len();
        e[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{before}: {e}"))
    };
    let (need, limit) = (figure("needs "), figure("allows "));
    let used = figure("tasks for this user and ");
    assert!(need > limit.saturating_sub(used), "{e}");
}

#[test]
fn load_under_a_task_limit_is_one_line_not_a_panic() {
    let _turn = limits_turn();
    let mut c = xferbench();
    c.args(["load", "--inflight", "4", "--cell-time", "100ms"]);
    let e = refused(&finish(limited(c, libc::RLIMIT_NPROC, 1)));
    assert!(e.contains("ulimit -u"), "{e}");
}

#[test]
fn process_transports_work_under_a_low_descriptor_limit() {
    for t in ["pipe", "tcp", "unix"] {
        let mut c = xferbench();
        c.args([
            "--quiet",
            "roundtrip",
            "-t",
            t,
            // Unpinned, as above.
            "--cpus",
            "none",
            "--samples",
            "100",
            "--in",
            "64",
            // A loaded machine can keep a responder quiet past the default.
            "--timeout",
            "60s",
            "--format",
            "json",
        ]);
        let o = finish(limited(c, libc::RLIMIT_NOFILE, 64));
        assert!(o.status.success(), "{t}: {}", stderr(&o));
    }
}

#[test]
fn report_and_compare_refuse_what_is_not_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("r.json");
    mkfifo(&fifo);
    for path in [Path::new("/dev/zero"), Path::new("/dev/urandom"), &fifo] {
        let mut c = xferbench();
        c.arg("report").arg(path);
        let e = refused(&finish(c));
        assert!(e.contains("not a regular file"), "{e}");
        let mut c = xferbench();
        c.arg("compare").arg(path).arg(path);
        let e = refused(&finish(c));
        assert!(e.contains("not a regular file"), "{e}");
    }
    // Past the documented size (a sparse file: nothing is written).
    let big = dir.path().join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len((512 << 20) + 1)
        .unwrap();
    let mut c = xferbench();
    c.arg("report").arg(&big);
    let e = refused(&finish(c));
    assert!(e.contains("larger than 512 MiB"), "{e}");
}

#[test]
fn an_unknown_field_is_skipped_as_it_is_read() {
    let _turn = limits_turn();
    let dir = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&fixture("roundtrip.json")).unwrap();
    // 8 million numbers: as parsed JSON, a quarter of a gigabyte.
    v["junk"] = serde_json::Value::Array(Vec::new());
    let text = serde_json::to_string(&v).unwrap().replace(
        "\"junk\":[]",
        &format!("\"junk\":[{}0]", "0,".repeat(8_000_000)),
    );
    let f = dir.path().join("run.json");
    std::fs::write(&f, text).unwrap();
    let html = dir.path().join("html");
    let mut c = xferbench();
    c.arg("report").arg(&f).arg("--html").arg(&html);
    let (o, peak) = peak_rss(&mut c);
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    // The run's caveats, on the page: the field is named, not kept.
    let page = std::fs::read_to_string(html.join("index.html")).unwrap();
    assert!(
        page.contains("junk: no field of a saved roundtrip run"),
        "{e}"
    );
    // Parsed into a Value, the list alone took a quarter of a gigabyte.
    assert!(peak < 160 << 20, "peak {} MiB", peak >> 20);
}

/// Under `ulimit -v` (200 000 KiB here), a run whose messages or rings
/// would not fit is refused before it starts, in one line that names the
/// limit and what to lower: it used to begin, then fail at the link's
/// open (exit 1, "0 points") or abort (flowgraph, SIGABRT).
#[test]
fn messages_and_rings_past_ulimit_v_are_refused_before_the_run() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["roundtrip", "-t", "thread", "--in", "1g", "--samples", "10"],
            "--in and --out",
        ),
        (
            &["roundtrip", "-t", "shm", "--in", "64m", "--samples", "10"],
            "--in",
        ),
        (&["curve", "-t", "thread", "--sizes", "64,4k,1g"], "--sizes"),
        (
            &[
                "load",
                "-t",
                "thread",
                "--sizes",
                "256m",
                "--cell-time",
                "200ms",
            ],
            "--inflight",
        ),
        (
            &[
                "flowgraph",
                "--cores",
                "1",
                "--duration",
                "100ms",
                "--buffer-size",
                "64m",
            ],
            "--buffer-size",
        ),
    ];
    for (args, fix) in cases {
        let mut c = xferbench();
        c.args(args).args(["-q", "--format", "json"]);
        let o = finish(limited(c, libc::RLIMIT_AS, 200_000 << 10));
        let e = refused(&o);
        assert!(e.contains("ulimit -v") && e.contains(fix), "{args:?}: {e}");
        assert!(o.stdout.is_empty(), "{args:?}: a run was written");
    }
}
