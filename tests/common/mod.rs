//! What the end-to-end tests share: running the binary with a hang guard and
//! reading its output.
#![allow(dead_code)]

use serde_json::Value;
use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs the prepared command to completion; a hang guard, not a time
/// assertion. Its output is drained while it runs, so a large one cannot
/// fill the pipe and stall it.
pub fn finish(mut c: Command) -> Output {
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let what = format!("{c:?}");
    let mut child = Guarded::spawn(&mut c).expect("spawn xferbench");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if start.elapsed() > Duration::from_secs(240) {
            drop(child);
            panic!("{what} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
    }
}

pub fn xferbench() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xferbench"));
    c.env_remove("XFERBENCH_RESPONDER_FAULT");
    stopping_signals_default(&mut c);
    c
}

/// Gives `c` the default action for every stopping signal, whatever the
/// test run inherited: under `nohup`, or in a shell's background job
/// (SIGINT and SIGQUIT ignored), xferbench keeps an ignored signal ignored
/// on purpose, and the tests that send one would wait for a handler that
/// never comes. A test that wants one ignored sets it after this.
pub fn stopping_signals_default(c: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only signal(), async-signal-safe, between fork and exec.
    unsafe {
        c.pre_exec(|| {
            for sig in [libc::SIGHUP, libc::SIGINT, libc::SIGQUIT, libc::SIGTERM] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        });
    }
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// stdout as JSON, after checking the run succeeded.
pub fn json(o: &Output) -> Value {
    assert!(o.status.success(), "failed: {}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("stdout is JSON")
}

/// A number in a JSON object, or a panic naming what is missing.
pub fn num(v: &Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Serialises the timing tests of one test binary: runs that pin spinning
/// threads or busy every CPU would otherwise measure each other.
pub fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// Checks a curve run's fits against its own points, which always holds,
/// however noisy the machine: every fit belongs to a measured curve, and it
/// is what `fit::hockney` makes of that curve's (size, one-way p50) points —
/// present with a positive r∞ when the times grow with size, `null` when
/// they do not (the text report then says "not enough distinct sizes with a
/// visible bandwidth limit"). A short curve on a busy machine can be flat
/// or falling, so whether a fit is present is not asserted here. The
/// top-level `fit` is the first curve's. Returns how many fits are present.
pub fn check_fits(d: &Value) -> usize {
    let points = d["points"].as_array().expect("points");
    let fits = d["fits"].as_array().expect("fits");
    assert!(!fits.is_empty(), "no fits: {d}");
    assert_eq!(
        d["fit"], fits[0]["fit"],
        "the top-level fit is the first curve's"
    );
    let keys = ["spec", "buffers", "completion", "mode", "chunk"];
    let mut present = 0;
    for f in fits {
        let curve: Vec<(u64, f64)> = points
            .iter()
            .filter(|p| keys.iter().all(|k| p[k] == f[k]))
            .map(|p| {
                let size = p["size_bytes"].as_u64().expect("size_bytes");
                let p50 = p["oneway"]["p50_ns"].as_u64().expect("oneway.p50_ns");
                (size, p50 as f64)
            })
            .collect();
        assert!(!curve.is_empty(), "a fit without points: {f}");
        match (xferbench::fit::hockney(&curve), f["fit"].is_null()) {
            (None, true) => {}
            (Some(want), false) => {
                let got = &f["fit"];
                assert!(want.r_inf_MBps > 0.0, "{f}");
                for (k, w) in [
                    ("t0_ns", want.t0_ns),
                    ("r_inf_MBps", want.r_inf_MBps),
                    ("n_half_bytes", want.n_half_bytes),
                ] {
                    let g = num(got, k);
                    assert!(
                        (g - w).abs() <= 1e-9 * w.abs().max(1.0),
                        "{k}: {g} in the run, {w} from its points: {f}"
                    );
                }
                assert_eq!(got["points"].as_u64(), Some(want.points as u64), "{f}");
                present += 1;
            }
            (want, _) => panic!("fit {} but its points give {want:?}: {curve:?}", f["fit"]),
        }
    }
    present
}

/// A spawned xferbench that is killed, with everything it started, when
/// dropped before it ended: a test that fails (a panic between spawn and
/// wait) must not leave its run measuring on beside the next tests, nor
/// the run's own children. The drop kills it, every descendant, and each
/// one's process group (an exec program's, a responder's), all found
/// before any is killed, since a killed process's children are reparented
/// away from it. It stays in the test's process group, so a Ctrl-C of the
/// test run still reaches it.
pub struct Guarded(pub std::process::Child);

impl Guarded {
    /// Spawns `c`, guarded.
    pub fn spawn(c: &mut Command) -> std::io::Result<Guarded> {
        c.spawn().map(Guarded)
    }
}

impl std::ops::Deref for Guarded {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for Guarded {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // Only a child still running and unreaped: its pid is still its
        // own (a reaped one's could be anyone's by now).
        if !matches!(self.0.try_wait(), Ok(None)) {
            return;
        }
        let pid = self.0.id() as libc::pid_t;
        // SAFETY: getpgrp takes nothing and cannot fail.
        let mine = unsafe { libc::getpgrp() };
        for p in std::iter::once(pid).chain(descendants(pid)) {
            // SAFETY: integer arguments only, to processes of this test's
            // run; never the test's own group.
            unsafe {
                let g = libc::getpgid(p);
                if g > 0 && g != mine {
                    libc::kill(-g, libc::SIGKILL);
                }
                libc::kill(p, libc::SIGKILL);
            }
        }
        let _ = self.0.wait();
    }
}

/// Every live descendant of `pid`, however deep, from /proc.
pub fn descendants(pid: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let procs: Vec<(libc::pid_t, libc::pid_t)> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter_map(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((p, ppid))
        })
        .collect();
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            procs
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    found.remove(0);
    found
}
