//! `serve`'s log, rate-limited: a flood of junk connections must not turn
//! into a flood of lines (50 000 a second were seen), which would bury the
//! lines that matter and cost the server its CPU. Lines past the rate are
//! counted by kind and summed up in one line a second.
//!
//! The lines are written by a thread of their own, through a bounded
//! queue: a stderr that blocks (a full pipe nobody reads) then costs lines,
//! never the accept loop or a session, which only ever queue them.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Lines written at once after a quiet spell.
const BURST: f64 = 40.0;
/// Lines a second, sustained.
const RATE: f64 = 10.0;
/// How often, at most, the dropped lines are summed up.
const SUMMARY_EVERY: Duration = Duration::from_secs(1);
/// Lines queued for the writer at most; past it they count as dropped.
const QUEUE: usize = 256;
/// How long the last lines may take to be written at the end of a run.
const LAST_WRITE: Duration = Duration::from_secs(2);

/// The server's log on stderr.
pub struct Log {
    state: Mutex<State>,
}

struct State {
    /// To the writer thread; `None` with `--quiet`, or once flushed.
    tx: Option<SyncSender<String>>,
    /// Told by the writer when its queue is done.
    done: Option<Receiver<()>>,
    /// Lines that may be written now (a token bucket).
    tokens: f64,
    /// When `tokens` was last topped up.
    at: Instant,
    /// Lines dropped since the last summary, by kind.
    dropped: BTreeMap<&'static str, u64>,
    /// When the first of them was dropped.
    since: Option<Instant>,
}

/// Writes what comes, until every sender is gone; a closed stderr loses
/// the lines, never the server.
fn writer(rx: Receiver<String>, done: SyncSender<()>) {
    for line in rx {
        let _ = writeln!(std::io::stderr().lock(), "xferbench serve: {line}");
    }
    let _ = done.send(());
}

impl Log {
    /// A log; `quiet` writes nothing.
    pub fn new(quiet: bool) -> Log {
        let (mut tx, mut done) = (None, None);
        if !quiet {
            let (line_tx, line_rx) = sync_channel(QUEUE);
            let (done_tx, done_rx) = sync_channel(1);
            let started = std::thread::Builder::new()
                .name("xb-serve-log".into())
                .spawn(move || writer(line_rx, done_tx));
            // Without the thread there is no log (the server still serves).
            if started.is_ok() {
                (tx, done) = (Some(line_tx), Some(done_rx));
            }
        }
        Log {
            state: Mutex::new(State {
                tx,
                done,
                tokens: BURST,
                at: Instant::now(),
                dropped: BTreeMap::new(),
                since: None,
            }),
        }
    }

    /// The state, whatever a panicking holder left behind: a counter
    /// or two, never half-written in a way that matters.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `line` (one of a `kind` of lines: "done", "refused"…), or
    /// counts it as dropped when lines come faster than the rate or the
    /// writer is behind.
    pub fn line(&self, kind: &'static str, line: &str) {
        let mut s = self.lock();
        if s.tx.is_none() {
            return;
        }
        let now = Instant::now();
        s.summary(now, false);
        let dt = now.saturating_duration_since(s.at).as_secs_f64();
        s.tokens = (s.tokens + dt * RATE).min(BURST);
        s.at = now;
        if s.tokens >= 1.0 && s.send(line.to_string()) {
            s.tokens -= 1.0;
        } else {
            *s.dropped.entry(kind).or_insert(0) += 1;
            s.since.get_or_insert(now);
        }
    }

    /// Sums up the dropped lines once they are a second old (the server's
    /// accept loop calls this a few times a second), so a flood that stops
    /// is still accounted for.
    pub fn tick(&self) {
        self.lock().summary(Instant::now(), false);
    }

    /// Sums up whatever was dropped, now, and waits a moment for the
    /// writer to finish: at the end of a run.
    pub fn flush(&self) {
        let done = {
            let mut s = self.lock();
            s.summary(Instant::now(), true);
            s.tx = None;
            s.done.take()
        };
        if let Some(done) = done {
            let _ = done.recv_timeout(LAST_WRITE);
        }
    }
}

impl State {
    /// Queues a line for the writer: false when the queue is full.
    fn send(&self, line: String) -> bool {
        match &self.tx {
            Some(tx) => match tx.try_send(line) {
                Ok(()) => true,
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => false,
            },
            None => false,
        }
    }

    fn summary(&mut self, now: Instant, now_anyway: bool) {
        let Some(since) = self.since else { return };
        let age = now.saturating_duration_since(since);
        if age < SUMMARY_EVERY && !now_anyway {
            return;
        }
        let total: u64 = self.dropped.values().sum();
        let kinds: Vec<String> = self
            .dropped
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        let line = format!(
            "{total} log lines suppressed in the last {:.1}s (at most {RATE} a second): {}",
            age.as_secs_f64(),
            kinds.join(", ")
        );
        // A full queue keeps the counts for the next summary.
        if self.send(line) {
            self.dropped.clear();
            self.since = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_cut_to_the_burst_and_counted() {
        let log = Log::new(false);
        // Writes to the test's stderr: a few dozen lines.
        for i in 0..1000 {
            log.line(if i % 2 == 0 { "closed" } else { "refused" }, "x");
        }
        let s = log.lock();
        let dropped: u64 = s.dropped.values().sum();
        assert!(dropped >= 500, "{dropped}");
        assert_eq!(s.dropped.len(), 2);
        assert!(s.since.is_some());
        drop(s);
        log.flush();
        assert!(log.lock().dropped.is_empty());
        assert!(log.lock().since.is_none());
    }

    /// A writer that cannot keep up (here: none at all) costs lines,
    /// never a wait.
    #[test]
    fn a_stuck_writer_never_blocks_a_line() {
        let (tx, _rx) = sync_channel(QUEUE);
        let log = Log {
            state: Mutex::new(State {
                tx: Some(tx),
                done: None,
                tokens: f64::MAX,
                at: Instant::now(),
                dropped: BTreeMap::new(),
                since: None,
            }),
        };
        for _ in 0..QUEUE + 100 {
            log.lock().tokens = BURST;
            log.line("closed", "x");
        }
        assert_eq!(log.lock().dropped.get("closed"), Some(&100));
        log.tick();
        log.flush();
    }
}
