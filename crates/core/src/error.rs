//! One error type for the whole tool. The split between usage and run errors is
//! what decides the exit code (2 vs 1), so every error is built as one or the other
//! at the place that knows which it is.

use std::fmt;
use std::sync::atomic::{AtomicI32, Ordering};

/// The signal that interrupted the run (0 until one arrives): the exit
/// status of an interrupted run is 128 + its number, as a shell reports a
/// process the signal killed.
pub static INTERRUPTED_BY: AtomicI32 = AtomicI32::new(0);

/// An error with a single-line, user-facing message.
#[derive(Debug)]
pub enum Error {
    /// The user asked for something invalid: bad flag value, unknown transport,
    /// a mode the transport lacks, a core that does not exist. Exit code 2.
    Usage(String),
    /// The measurement could not be carried out: responder died or hung, a
    /// syscall failed, a file could not be written. Exit code 1.
    Run(String),
    /// SIGINT or SIGTERM stopped the run; partial results were already
    /// written. Exit 128 + the signal (130 for Ctrl-C, 143 for SIGTERM).
    Interrupted,
}

/// `std::result::Result` with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A [`Error::Usage`] (exit code 2) with this message.
    pub fn usage(msg: impl Into<String>) -> Self {
        Error::Usage(msg.into())
    }

    /// A [`Error::Run`] (exit code 1) with this message.
    pub fn run(msg: impl Into<String>) -> Self {
        Error::Run(msg.into())
    }

    /// A failed syscall, with what we were doing when it failed.
    pub fn os(what: impl fmt::Display) -> Self {
        Error::Run(format!("{what}: {}", std::io::Error::last_os_error()))
    }

    /// A failed I/O operation, as a run error: what we were doing, then `e`.
    pub fn io(what: impl fmt::Display, e: std::io::Error) -> Self {
        Error::Run(format!("{what}: {e}"))
    }

    /// The process exit code for this error: 2 usage, 1 run, 128 + the
    /// signal interrupted (130 when no signal is known: Ctrl-C's).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            Error::Run(_) => 1,
            Error::Interrupted => match INTERRUPTED_BY.load(Ordering::Relaxed) {
                0 => 130,
                s => 128 + s,
            },
        }
    }
}

/// The longest run of characters without a space an error line shows: a
/// message quoting untrusted input (a 10 MB option name, a 200 MB host
/// name) keeps the quote's start and end, and the message around it.
pub const MAX_WORD: usize = 200;
/// The longest error line printed, a backstop for many long words.
pub const MAX_LINE: usize = 4000;

/// `line` with every word over [`MAX_WORD`] characters cut in its middle,
/// then the whole cut to [`MAX_LINE`], each cut saying how much it left out.
pub fn capped(line: &str) -> std::borrow::Cow<'_, str> {
    if line.chars().count() <= MAX_WORD {
        return line.into();
    }
    let mut out = String::new();
    let mut rest = line;
    while !rest.is_empty() {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let (word, after) = rest.split_at(end);
        out.push_str(&cut(word, MAX_WORD));
        let gap = after.len() - after.trim_start().len();
        out.push_str(&after[..gap]);
        rest = &after[gap..];
    }
    cut(&out, MAX_LINE).into_owned().into()
}

/// `s` cut to about `max` characters in its middle, saying how many went.
fn cut(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    let n = s.chars().count();
    if n <= max {
        return s.into();
    }
    let (head, tail) = (max * 2 / 3, max / 4);
    let h: String = s.chars().take(head).collect();
    let t: String = s.chars().skip(n - tail).collect();
    format!("{h}…[{} characters cut]…{t}", n - head - tail).into()
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::Run(m) => f.write_str(m),
            Error::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_words_are_cut_and_short_lines_kept() {
        let short = "cannot open /dev/x: No such file or directory";
        assert_eq!(capped(short), short);
        let hash = "a".repeat(130);
        let line = format!("payload sha512 is 0x{hash}, first bad byte at offset 1000");
        assert_eq!(capped(&line), line, "words under the limit stay whole");
        let huge = format!("unknown option '{}' (valid: a, b)", "k".repeat(100_000));
        let c = capped(&huge);
        assert!(c.len() < 400 && c.contains("characters cut") && c.ends_with("(valid: a, b)"));
    }
}
