//! Stopping signals and the processes a run leaves: SIGHUP (an ssh session
//! that drops) stops every experiment as SIGTERM does, with the partial
//! results written and exit 129, also when the terminal it writes to is
//! gone; and nothing a run started outlives it, even when it is killed.
//! Every wait here is a hang guard, never a time assertion.

mod common;

use common::Guarded;
use serde_json::Value;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Far beyond any healthy wait below; only a hang gets here.
const GUARD: Duration = Duration::from_secs(120);

/// Waits (under the hang guard) until `done` holds.
fn until(what: &str, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < GUARD, "{what}: not within {GUARD:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` catches `sig` (its handler installed), from /proc.
fn catches(pid: u32, sig: i32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (sig - 1)) != 0)
}

/// Starts xferbench with `args`, stdout to nowhere (results go to `-o`)
/// and stderr kept; waits until it handles SIGHUP, so a signal sent next
/// cannot find it before its handlers are in (which would kill it).
fn start(args: &[&str], dir: &Path) -> Guarded {
    let child = Guarded::spawn(
        common::xferbench()
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
    .expect("spawn xferbench");
    let pid = child.id();
    until("SIGHUP handled (the stop handlers installed)", || {
        catches(pid, libc::SIGHUP)
    });
    child
}

/// Sends `sig` to the child.
fn signal(child: &Guarded, sig: i32) {
    // SAFETY: signalling our own child, still unreaped.
    unsafe { libc::kill(child.id() as libc::pid_t, sig) };
}

/// Waits for the child (hang guard); its status and stderr.
fn end(mut child: Guarded) -> (ExitStatus, String) {
    let mut err = child.stderr.take().expect("stderr piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if t.elapsed() > GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!("xferbench did not end within {GUARD:?} of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status, reader.join().expect("stderr reader"))
}

fn read_json(p: &Path, err: &str) -> Value {
    let text = std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("no results in {} ({e}); stderr: {err}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The round trip: a long point under way when the hang-up comes.
const ROUNDTRIP: [&str; 13] = [
    "roundtrip",
    "-q",
    "-t",
    "thread",
    "--in",
    "64,128,256",
    "--out",
    "64",
    "--samples",
    "500000000",
    "--format",
    "json",
    "-o",
];

/// Checks a stopped round trip's results: incomplete, stopped by the
/// signal, the point under way (if the run got to one) kept as partial.
fn check_partial_roundtrip(d: &Value) {
    assert_eq!(d["complete"], false, "{d}");
    assert_eq!(d["stopped_by"], "interrupted");
    let pts = d["points"].as_array().unwrap();
    assert!(pts.len() <= 1, "only the first point was under way");
    if let Some(p) = pts.first() {
        assert_eq!(p["partial"], true);
    }
}

/// The judged case: a round trip over shared memory (its responder a
/// process of its own) hangs up mid-run. The partial results are written,
/// the status is 129, and no process of the run is left.
#[test]
fn a_hang_up_stops_a_round_trip_with_its_partial_results_and_exit_129() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rt.json");
    let mut args = ROUNDTRIP.to_vec();
    args[3] = "shm";
    args.push(out.to_str().unwrap());
    let child = start(&args, dir.path());
    // The responder runs: the run is measuring (or about to).
    let mut kids = Vec::new();
    until("the responder started", || {
        kids = children_with(child.id(), "__respond");
        !kids.is_empty()
    });
    std::thread::sleep(Duration::from_millis(500));
    signal(&child, libc::SIGHUP);
    // A dropping terminal sends more than one: the second must not quit
    // before the results are written, as a second SIGTERM does.
    std::thread::sleep(Duration::from_millis(20));
    signal(&child, libc::SIGHUP);
    let (status, err) = end(child);
    assert_eq!(status.code(), Some(129), "{err}");
    assert!(err.contains("partial results"), "{err}");
    check_partial_roundtrip(&read_json(&out, &err));
    for k in kids {
        until(&format!("the responder {k} ended"), || !alive(k));
    }
}

/// Under `nohup` (SIGHUP ignored when xferbench starts) a hang-up reaching
/// the run's processes leaves it measuring: neither the supervisor nor the
/// measuring child it re-executes catches SIGHUP then; SIGTERM still stops
/// it with its results.
#[test]
fn a_hang_up_under_nohup_leaves_the_run_measuring() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rt.json");
    let mut args = ROUNDTRIP.to_vec();
    args.push(out.to_str().unwrap());
    let mut cmd = common::xferbench();
    cmd.args(&args)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: only signal(), async-signal-safe, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = Guarded::spawn(&mut cmd).expect("spawn xferbench");
    let pid = child.id();
    until("SIGTERM handled (the stop handlers installed)", || {
        catches(pid, libc::SIGTERM)
    });
    assert!(!catches(pid, libc::SIGHUP), "nohup's SIGHUP is caught");
    // What a dropping terminal does: SIGHUP to every process of the run.
    let mut kids = Vec::new();
    until("the measuring process started", || {
        kids = children_with(pid, "roundtrip");
        !kids.is_empty()
    });
    std::thread::sleep(Duration::from_millis(300));
    for p in std::iter::once(pid).chain(kids.iter().copied()) {
        // SAFETY: signalling this test's own processes.
        unsafe { libc::kill(p as libc::pid_t, libc::SIGHUP) };
    }
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "a hang-up under nohup ended the run"
    );
    signal(&child, libc::SIGTERM);
    let (status, err) = end(child);
    assert_eq!(status.code(), Some(143), "{err}");
    check_partial_roundtrip(&read_json(&out, &err));
}

/// A pseudo-terminal's two ends (`O_NOCTTY`: it becomes no one's
/// controlling terminal, so closing it signals no process by itself).
fn pty() -> (OwnedFd, OwnedFd) {
    // SAFETY: plain libc calls on fds this test owns; ptsname_r writes
    // into the buffer it is given, NUL-terminated.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(
            master >= 0,
            "posix_openpt: {}",
            std::io::Error::last_os_error()
        );
        assert_eq!(libc::grantpt(master), 0);
        assert_eq!(libc::unlockpt(master), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(master, name.as_mut_ptr(), name.len()), 0);
        let slave = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY);
        assert!(
            slave >= 0,
            "opening the pty: {}",
            std::io::Error::last_os_error()
        );
        (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave))
    }
}

/// An ssh session that drops: the terminal xferbench writes its lines to
/// hangs up (every write to it fails), then SIGHUP comes. The results are
/// still written and the exit status is still 129 (a failed write of the
/// last lines must not end the run first).
#[test]
fn a_hang_up_after_the_terminal_is_gone_still_writes_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rt.json");
    let mut args = ROUNDTRIP.to_vec();
    args.push(out.to_str().unwrap());
    let (master, slave) = pty();
    let mut child = Guarded::spawn(
        common::xferbench()
            .args(&args)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave)),
    )
    .expect("spawn xferbench");
    let pid = child.id();
    until("SIGHUP handled", || catches(pid, libc::SIGHUP));
    std::thread::sleep(Duration::from_millis(1500));
    // The master's last close hangs the terminal up.
    drop(master);
    signal(&child, libc::SIGHUP);
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > GUARD {
            let _ = child.kill();
            panic!("xferbench did not end after its terminal hung up");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(129), "{status:?}");
    check_partial_roundtrip(&read_json(&out, "(on the terminal that hung up)"));
}

/// The kernel scan that opens a flowgraph run takes seconds: a stop in it
/// (any stopping signal) still writes the run, with its conditions.
#[test]
fn every_stopping_signal_stops_a_flowgraph_in_its_first_seconds_with_results() {
    let dir = tempfile::tempdir().unwrap();
    for (sig, code) in SIGNALS {
        let out = dir.path().join(format!("fg{sig}.json"));
        let child = start(
            &[
                "flowgraph",
                "-q",
                "--cores",
                "1",
                "--format",
                "json",
                "-o",
                out.to_str().unwrap(),
            ],
            dir.path(),
        );
        // At once: the handlers are in, the scan has not ended.
        signal(&child, sig);
        let (status, err) = end(child);
        assert_eq!(status.code(), Some(code), "signal {sig}: {err}");
        let d = read_json(&out, &err);
        assert_eq!(d["experiment"], "flowgraph");
        assert_eq!(d["complete"], false, "signal {sig}: {d}");
        assert_eq!(d["stopped_by"], "interrupted");
        assert!(
            d["env"]["hostname"].is_string(),
            "the run's conditions: {d}"
        );
    }
}

/// The stopping signals and the exit status each gives.
const SIGNALS: [(i32, i32); 3] = [
    (libc::SIGHUP, 129),
    (libc::SIGINT, 130),
    (libc::SIGTERM, 143),
];

/// Every stopping signal writes a stream's results: SIGINT, SIGTERM and
/// SIGHUP, each with its own exit status.
#[test]
fn every_stopping_signal_writes_a_streams_partial_results() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("t.fio"),
        "[s]\nfilename=data\nsize=1m\nbs=4k\nrw=randwrite\nioengine=psync\ntime_based\nruntime=1h\n\
         rate_iops=2000\n",
    )
    .unwrap();
    for (sig, code) in SIGNALS {
        let out = dir.path().join(format!("s{sig}.json"));
        let child = start(
            &[
                "stream",
                "-q",
                "--format",
                "json",
                "t.fio",
                "-o",
                out.to_str().unwrap(),
            ],
            dir.path(),
        );
        // Until the job has written (a hang guard, no timing).
        let data = dir.path().join("data");
        until("the job's first writes", || {
            std::fs::metadata(&data).is_ok_and(|m| m.len() > 0)
        });
        std::thread::sleep(Duration::from_millis(300));
        signal(&child, sig);
        let (status, err) = end(child);
        assert_eq!(status.code(), Some(code), "signal {sig}: {err}");
        let d = read_json(&out, &err);
        assert_eq!(d["complete"], false, "signal {sig}: {d}");
        let job = &d["jobs"][0];
        assert_eq!(job["partial"], true, "signal {sig}: {d}");
        assert!(
            job["write"]["total_ios"].as_u64().unwrap_or(0) > 0,
            "signal {sig}: {job}"
        );
        let _ = std::fs::remove_file(&data);
    }
}

/// A stream with an exec job (fio's exec.fio: a program beside the I/O)
/// hangs up: its results are written, exit 129, and the program is gone.
#[test]
fn a_hang_up_ends_an_exec_jobs_program_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("x.fio"),
        "[monitor]\nioengine=exec\nprogram=sleep\narguments=986\nstd_redirect=0\n\
         time_based\nruntime=1h\n\n\
         [s]\nfilename=data\nsize=1m\nbs=4k\nrw=randwrite\nioengine=psync\ntime_based\n\
         runtime=1h\nrate_iops=2000\n",
    )
    .unwrap();
    let out = dir.path().join("x.json");
    let child = start(
        &[
            "stream",
            "-q",
            "--format",
            "json",
            "x.fio",
            "-o",
            out.to_str().unwrap(),
        ],
        dir.path(),
    );
    let mut kids = Vec::new();
    until("the exec job's program started", || {
        kids = children_with(child.id(), "986");
        !kids.is_empty()
    });
    let data = dir.path().join("data");
    until("the I/O job's first writes", || {
        std::fs::metadata(&data).is_ok_and(|m| m.len() > 0)
    });
    signal(&child, libc::SIGHUP);
    let (status, err) = end(child);
    assert_eq!(status.code(), Some(129), "{err}");
    let d = read_json(&out, &err);
    assert_eq!(d["complete"], false, "{d}");
    assert_eq!(d["jobs"].as_array().map(Vec::len), Some(2), "{d}");
    for k in kids {
        until(&format!("the program {k} ended"), || !alive(k));
    }
}

/// Whether `pid` still runs (a zombie, waiting for its reaper, does not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

/// The descendants of `parent` whose command line has `word` among its
/// arguments.
fn children_with(parent: u32, word: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    // Every process's parent, so that a descendant is found however deep:
    // the experiments measure in a child of the process started here.
    let procs: Vec<(u32, u32, Vec<u8>)> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())?;
            let argv = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            Some((pid, ppid, argv))
        })
        .collect();
    let parent_of = |pid: u32| procs.iter().find(|p| p.0 == pid).map(|p| p.1);
    let below = |mut pid: u32| {
        for _ in 0..64 {
            match parent_of(pid) {
                Some(p) if p == parent => return true,
                Some(p) if p > 1 => pid = p,
                _ => return false,
            }
        }
        false
    };
    procs
        .iter()
        .filter(|(pid, _, argv)| {
            argv.split(|&b| b == 0).any(|a| a == word.as_bytes()) && below(*pid)
        })
        .map(|p| p.0)
        .collect()
}

/// SIGKILL leaves xferbench no say; its children go with it all the same:
/// an exec job's program and a process transport's responder.
#[test]
fn a_killed_run_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("exec.fio"),
        "[monitor]\nioengine=exec\nprogram=sleep\narguments=987\nstd_redirect=0\n\
         time_based\nruntime=1h\n",
    )
    .unwrap();
    let runs: [(&[&str], &str); 2] = [
        (&["stream", "-q", "--format", "json", "exec.fio"], "987"),
        (
            &[
                "roundtrip",
                "-q",
                "-t",
                "shm",
                "--samples",
                "500000000",
                "--format",
                "json",
            ],
            "__respond",
        ),
    ];
    for (args, word) in runs {
        let mut child = Guarded::spawn(
            common::xferbench()
                .args(args)
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
        .unwrap();
        let pid = child.id();
        let mut kids = Vec::new();
        until(&format!("{args:?}: its child ({word}) started"), || {
            kids = children_with(pid, word);
            !kids.is_empty()
        });
        child.kill().unwrap();
        child.wait().unwrap();
        for k in kids {
            until(&format!("{args:?}: its child {k} ({word}) ended"), || {
                !alive(k)
            });
        }
    }
}

/// Waits up to `limit` until `done` holds; whether it did.
fn within(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while !done() {
        if t.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// An exec job's program that starts programs of its own (a shell script
/// with a background `sleep` and a foreground one): when xferbench is
/// killed outright, or its measuring process is (the OOM killer, say), the
/// program's children go too, not only the program. The parent-death
/// signal ends the program alone; its children were left running for ever.
#[test]
fn a_killed_run_leaves_no_grandchild_behind() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("spawn.sh");
    std::fs::write(&script, "#!/bin/sh\nsleep 9871 &\nsleep 9872\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        dir.path().join("exec.fio"),
        format!(
            "[monitor]\nioengine=exec\nprogram={}\nstd_redirect=0\ntime_based\nruntime=1h\n",
            script.display()
        ),
    )
    .unwrap();
    // Kill the process started here, then the measuring one (a child of
    // it, with the same command line); each also under `nohup` (SIGHUP
    // ignored), where the child's parent-death signal is another.
    for (measuring, nohup) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut cmd = common::xferbench();
        cmd.args(["stream", "-q", "--format", "json", "exec.fio"])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if nohup {
            // SAFETY: only signal(), async-signal-safe, between fork and exec.
            unsafe {
                cmd.pre_exec(|| {
                    libc::signal(libc::SIGHUP, libc::SIG_IGN);
                    Ok(())
                });
            }
        }
        let mut top = Guarded::spawn(&mut cmd).unwrap();
        let pid = top.id();
        let mut kids = Vec::new();
        until("the program's children started", || {
            kids = [children_with(pid, "9871"), children_with(pid, "9872")].concat();
            kids.len() == 2
        });
        let victim = if measuring {
            let m = children_with(pid, "exec.fio");
            assert_eq!(m.len(), 1, "one measuring process: {m:?}");
            m[0]
        } else {
            pid
        };
        // SAFETY: kill with integer arguments, to a process of this test's.
        unsafe { libc::kill(victim as libc::pid_t, libc::SIGKILL) };
        let _ = top.wait();
        for k in kids {
            assert!(
                within(Duration::from_secs(10), || !alive(k)),
                "killing the {} process{} left its program's child {k} running",
                if measuring { "measuring" } else { "top" },
                if nohup { " under nohup" } else { "" }
            );
        }
    }
}

/// A test that fails while its run is under way (a panic between spawn and
/// wait) leaves nothing measuring beside the next tests: the guard kills
/// the run and what it started (here the responder of a round trip).
#[test]
fn a_failing_test_leaves_no_run_behind() {
    let (tx, rx) = std::sync::mpsc::channel();
    let failed = std::thread::spawn(move || {
        let run = Guarded::spawn(
            common::xferbench()
                .args(["roundtrip", "-q", "-t", "shm", "--samples", "500000000"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
        .unwrap();
        let pid = run.id();
        let mut kids = Vec::new();
        until("the responder started", || {
            kids = children_with(pid, "__respond");
            !kids.is_empty()
        });
        tx.send((pid, kids)).unwrap();
        panic!("this test thread fails on purpose, its run under way");
    })
    .join();
    assert!(failed.is_err());
    let (pid, kids) = rx.recv().unwrap();
    for p in std::iter::once(pid).chain(kids) {
        assert!(
            within(Duration::from_secs(10), || !alive(p)),
            "{p} outlived the failed test"
        );
    }
}

/// `mesh` under `mpirun -n 4`, one rank (2) stopped by SIGTERM sent to it
/// alone: rank 0 still writes the rounds measured so far, marked
/// incomplete and naming the rank, and the job ends with no rank left.
#[cfg(feature = "mpi")]
#[test]
fn a_signal_to_one_rank_of_a_mesh_leaves_rank_0s_results() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mesh.json");
    let bin = env!("CARGO_BIN_EXE_xferbench");
    let mut mpirun = Command::new("mpirun");
    common::stopping_signals_default(&mut mpirun);
    let mut mpirun = mpirun
        .args(["--allow-run-as-root", "--oversubscribe", "-n", "4", bin])
        .args([
            "mesh",
            "-t",
            "mpi",
            "--duration",
            "500ms",
            "--format",
            "json",
            "-o",
        ])
        .arg(&out)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mpirun");
    // Rank 0's note comes once every rank has said hello: all four run.
    let (tx, rx) = std::sync::mpsc::channel();
    let lines = std::io::BufReader::new(mpirun.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for l in lines.lines().map_while(|l| l.ok()) {
            if l.contains("mesh of 4 ranks") {
                let _ = tx.send(());
            }
            all += &l;
            all.push('\n');
        }
        all
    });
    if rx.recv_timeout(GUARD).is_err() {
        let _ = mpirun.kill();
        panic!(
            "no rank 0 note within {GUARD:?}: {}",
            reader.join().unwrap()
        );
    }
    let ranks = ranks_of(mpirun.id(), bin);
    assert_eq!(ranks.len(), 4, "the job's ranks: {ranks:?}");
    let two = ranks.iter().find(|(r, _)| *r == 2).expect("rank 2").1;
    // Into the rounds (a hang guard is the sync above; this is margin).
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: signalling a process of this test's own job.
    unsafe { libc::kill(two as libc::pid_t, libc::SIGTERM) };
    let t = Instant::now();
    let status = loop {
        if let Some(s) = mpirun.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > GUARD {
            let _ = mpirun.kill();
            panic!("the job did not end within {GUARD:?} of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = reader.join().unwrap();
    assert!(!status.success(), "{err}");
    let d = read_json(&out, &err);
    assert_eq!(d["complete"], false, "{d}");
    let why = d["stopped_by"].as_str().unwrap_or_default();
    assert!(why.contains("rank 2"), "stopped_by: {why}; stderr: {err}");
    for (r, pid) in ranks {
        until(&format!("rank {r} ({pid}) ended"), || !alive(pid));
    }
}

/// The ranks of the job under `launcher` that run `bin`: (rank, pid).
#[cfg(feature = "mpi")]
fn ranks_of(launcher: u32, bin: &str) -> Vec<(usize, u32)> {
    let ppid = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()?
            .rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse::<u32>()
            .ok()
    };
    let under = |mut pid: u32| {
        for _ in 0..8 {
            match ppid(pid) {
                Some(p) if p == launcher => return true,
                Some(p) if p > 1 => pid = p,
                _ => return false,
            }
        }
        false
    };
    let rank = |pid: u32| {
        let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        env.split(|&b| b == 0).find_map(|v| {
            std::str::from_utf8(v.strip_prefix(b"OMPI_COMM_WORLD_RANK=")?)
                .ok()?
                .parse::<usize>()
                .ok()
        })
    };
    let exe = std::fs::canonicalize(bin).ok();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|e| Some(e) == exe)
                && under(pid)
        })
        .filter_map(|pid| Some((rank(pid)?, pid)))
        .collect()
}
