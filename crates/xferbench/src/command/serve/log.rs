//! `serve`'s log, rate-limited: a flood of junk connections must not turn
//! into a flood of lines (50 000 a second were seen), which would bury the
//! lines that matter and cost the server its CPU. Lines past the rate are
//! counted by kind and summed up in one line a second.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Lines written at once after a quiet spell.
const BURST: f64 = 40.0;
/// Lines a second, sustained.
const RATE: f64 = 10.0;
/// How often, at most, the dropped lines are summed up.
const SUMMARY_EVERY: Duration = Duration::from_secs(1);

/// The server's log on stderr.
pub struct Log {
    quiet: bool,
    state: Mutex<State>,
}

struct State {
    /// Lines that may be written now (a token bucket).
    tokens: f64,
    /// When `tokens` was last topped up.
    at: Instant,
    /// Lines dropped since the last summary, by kind.
    dropped: BTreeMap<&'static str, u64>,
    /// When the first of them was dropped.
    since: Option<Instant>,
}

impl Log {
    /// A log; `quiet` writes nothing.
    pub fn new(quiet: bool) -> Log {
        Log {
            quiet,
            state: Mutex::new(State {
                tokens: BURST,
                at: Instant::now(),
                dropped: BTreeMap::new(),
                since: None,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes `line` (one of a `kind` of lines: "done", "refused"…), or
    /// counts it as dropped when lines come faster than the rate. A closed
    /// stderr does not stop the server: the line is lost, not a panic.
    pub fn line(&self, kind: &'static str, line: &str) {
        if self.quiet {
            return;
        }
        let mut s = self.lock();
        let now = Instant::now();
        s.summary(now, false);
        let dt = now.saturating_duration_since(s.at).as_secs_f64();
        s.tokens = (s.tokens + dt * RATE).min(BURST);
        s.at = now;
        if s.tokens >= 1.0 {
            s.tokens -= 1.0;
            let _ = writeln!(std::io::stderr().lock(), "xferbench serve: {line}");
        } else {
            *s.dropped.entry(kind).or_insert(0) += 1;
            s.since.get_or_insert(now);
        }
    }

    /// Sums up the dropped lines once they are a second old (the server's
    /// accept loop calls this a few times a second), so a flood that stops
    /// is still accounted for.
    pub fn tick(&self) {
        if !self.quiet {
            self.lock().summary(Instant::now(), false);
        }
    }

    /// Sums up whatever was dropped, now: at the end of a run.
    pub fn flush(&self) {
        if !self.quiet {
            self.lock().summary(Instant::now(), true);
        }
    }
}

impl State {
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
        let _ = writeln!(
            std::io::stderr().lock(),
            "xferbench serve: {total} log lines suppressed in the last {:.1}s (at most {RATE} a second): {}",
            age.as_secs_f64(),
            kinds.join(", ")
        );
        self.dropped.clear();
        self.since = None;
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
}
