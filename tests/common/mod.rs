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
    let mut child = c.spawn().expect("spawn xferbench");
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
            let _ = child.kill();
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
    c
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
