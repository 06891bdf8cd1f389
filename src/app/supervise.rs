//! The command runs on a worker thread while this one watches: a device
//! call that never returns (found by `transport::guard`'s watchdog) or a
//! signal the run cannot answer (it is stuck in such a call) still ends the
//! process in time, with the results measured so far written and marked
//! incomplete. The stuck thread is abandoned, never unwound.

use std::io::Write;
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::{Duration, Instant};
use xferbench::error::Error;

/// How often the watch looks.
const TICK: Duration = Duration::from_millis(20);
/// How long a run has, after its device hung or a signal came, to end by
/// itself (a stream job's coordinator reports a hung job's figures) before
/// its last checkpoint is written instead.
const GRACE: Duration = Duration::from_millis(500);
/// How long a run that started writing its results may take to finish.
const WRITING: Duration = Duration::from_secs(10);

/// Runs `work` on a worker thread and returns its exit code, unless a
/// device call hangs or a signal goes unanswered: then the process ends
/// from here, after writing what the run measured.
pub fn run(work: impl FnOnce() -> i32 + Send + 'static) -> i32 {
    let (tx, rx) = channel();
    let spawned = std::thread::Builder::new()
        .name("xferbench".into())
        .stack_size(64 << 20)
        .spawn(move || {
            let code = work();
            let _ = tx.send(code);
        });
    if let Err(e) = spawned {
        eprintln!("xferbench: error: cannot start the measuring thread: {e}");
        return 1;
    }
    let mut signalled: Option<Instant> = None;
    loop {
        match rx.recv_timeout(TICK) {
            Ok(code) => return code,
            // The worker panicked; the panic hook has said where.
            Err(RecvTimeoutError::Disconnected) => return 101,
            Err(RecvTimeoutError::Timeout) => {}
        }
        if let Some((message, at)) = xferbench::transport::guard::hung()
            && at.elapsed() >= GRACE
        {
            return abandon(Error::run(message), &rx);
        }
        if signalled.is_none() && super::interrupt::requested() {
            signalled = Some(Instant::now());
        }
        if signalled.is_some_and(|t| t.elapsed() >= GRACE) {
            return abandon(Error::Interrupted, &rx);
        }
    }
}

/// Writes the last checkpoint marked stopped by `e`, says why, and ends the
/// process; if the run is writing its own results already, waits for them.
fn abandon(e: Error, rx: &std::sync::mpsc::Receiver<i32>) -> i32 {
    if !xferbench::transport::guard::claim() {
        return rx.recv_timeout(WRITING).unwrap_or(e.exit_code());
    }
    // The run's helpers go with it: nothing will stop them once we exit.
    xferbench::measure::loadgen::kill_all();
    if let Some(w) = xferbench::transport::guard::take_writer() {
        w(&e);
    }
    match &e {
        Error::Interrupted => eprintln!("xferbench: interrupted"),
        e => eprintln!(
            "xferbench: error: {}",
            xferbench::error::capped(&e.to_string())
        ),
    }
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    super::channel::done(e.exit_code());
    // Not a return: the worker is stuck in foreign code, and returning
    // from main would wait for nothing but run destructors under it.
    std::process::exit(e.exit_code())
}
