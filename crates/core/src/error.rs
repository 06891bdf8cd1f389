//! One error type for the whole tool. The split between usage and run errors is
//! what decides the exit code (2 vs 1), so every error is built as one or the other
//! at the place that knows which it is.
//!
//! An error is one line for the user (its `Display`). One that another error
//! caused (a failed syscall, a file that would not open, JSON that would not
//! encode) also keeps that error as its [`source`](std::error::Error::source),
//! for an embedder that wants the `io::ErrorKind` or the OS error number
//! rather than the words; the line already quotes it, so a reporter that
//! walks the chain would print it twice.

use std::fmt;
use std::sync::atomic::{AtomicI32, Ordering};

/// The signal that interrupted the run (0 until one arrives): the exit
/// status of an interrupted run is 128 + its number, as a shell reports a
/// process the signal killed.
pub static INTERRUPTED_BY: AtomicI32 = AtomicI32::new(0);

/// What caused an error: another error, kept whole.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An error with a single-line, user-facing message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user asked for something invalid: bad flag value, unknown transport,
    /// a mode the transport lacks, a core that does not exist. Exit code 2.
    #[error("{message}")]
    Usage {
        /// The line the user reads.
        message: String,
        /// The error behind it, where another error caused it (a job file
        /// that cannot be read).
        #[source]
        source: Option<Cause>,
    },
    /// The measurement could not be carried out: responder died or hung, a
    /// syscall failed, a file could not be written. Exit code 1.
    #[error("{message}")]
    Run {
        /// The line the user reads.
        message: String,
        /// The error behind it, where another error caused it (the
        /// `io::Error` of a failed syscall).
        #[source]
        source: Option<Cause>,
    },
    /// SIGINT or SIGTERM stopped the run; partial results were already
    /// written. Exit 128 + the signal (130 for Ctrl-C, 143 for SIGTERM).
    #[error("interrupted")]
    Interrupted,
}

/// `std::result::Result` with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A [`Error::Usage`] (exit code 2) with this message.
    pub fn usage(msg: impl Into<String>) -> Self {
        Error::Usage {
            message: msg.into(),
            source: None,
        }
    }

    /// A [`Error::Run`] (exit code 1) with this message.
    pub fn run(msg: impl Into<String>) -> Self {
        Error::Run {
            message: msg.into(),
            source: None,
        }
    }

    /// A [`Error::Usage`] that `e` caused: `what: e`, with `e` as its source.
    pub fn usage_from(
        what: impl fmt::Display,
        e: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::usage(format!("{what}: {e}")).with_source(e)
    }

    /// A [`Error::Run`] that `e` caused: `what: e`, with `e` as its source.
    pub fn run_from(
        what: impl fmt::Display,
        e: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::run(format!("{what}: {e}")).with_source(e)
    }

    /// A failed syscall, with what we were doing when it failed; errno's
    /// `io::Error` is the source.
    pub fn os(what: impl fmt::Display) -> Self {
        Error::io(what, std::io::Error::last_os_error())
    }

    /// A failed I/O operation, as a run error: what we were doing, then `e`,
    /// which stays the source.
    pub fn io(what: impl fmt::Display, e: std::io::Error) -> Self {
        Error::run_from(what, e)
    }

    /// This error with `e` as its source, the message unchanged (it should
    /// already say what `e` says): for a line that quotes its cause
    /// somewhere other than at its end. An interruption has no source.
    pub fn with_source(self, e: impl std::error::Error + Send + Sync + 'static) -> Self {
        match self {
            Error::Usage { message, .. } => Error::Usage {
                message,
                source: Some(Box::new(e)),
            },
            Error::Run { message, .. } => Error::Run {
                message,
                source: Some(Box::new(e)),
            },
            Error::Interrupted => Error::Interrupted,
        }
    }

    /// The process exit code for this error: 2 usage, 1 run, 128 + the
    /// signal interrupted (130 when no signal is known: Ctrl-C's).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage { .. } => 2,
            Error::Run { .. } => 1,
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

/// `text` made inert for a terminal: every control character but the
/// newline and the tab (an escape sequence in a plugin's name or message,
/// a carriage return in a file name) written as a visible escape (`\x1b`,
/// `\u{9b}`), so text from outside shows what it holds instead of moving
/// the cursor, recolouring or retitling the terminal. Text without one is
/// returned as it is.
pub fn inert(text: &str) -> std::borrow::Cow<'_, str> {
    let live = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.contains(live) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if live(c) && (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if live(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.into()
}

/// `line` made [`inert`], with every word over [`MAX_WORD`] characters cut
/// in its middle, then the whole cut to [`MAX_LINE`], each cut saying how
/// much it left out.
pub fn capped(line: &str) -> std::borrow::Cow<'_, str> {
    if let std::borrow::Cow::Owned(safe) = inert(line) {
        return capped(&safe).into_owned().into();
    }
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

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(inert("plain\tline\n"), "plain\tline\n");
        assert_eq!(
            inert("plugin \x1b[31mred\x1b[0m"),
            "plugin \\x1b[31mred\\x1b[0m"
        );
        assert_eq!(inert("a\rb\u{9b}c\u{7f}"), "a\\x0db\\u{9b}c\\x7f");
        assert_eq!(capped("bad \x07 bell"), "bad \\x07 bell");
    }

    #[test]
    fn an_error_keeps_its_cause_and_its_line() {
        use std::error::Error as _;
        let nf = || std::io::Error::from(std::io::ErrorKind::NotFound);
        let e = Error::io("opening /x", nf());
        assert_eq!(e.to_string(), format!("opening /x: {}", nf()));
        assert_eq!(e.exit_code(), 1);
        let io = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
        assert_eq!(
            io.map(std::io::Error::kind),
            Some(std::io::ErrorKind::NotFound)
        );

        let bad = "x".parse::<u32>().unwrap_err();
        let e = Error::usage_from("--n x", bad.clone());
        assert_eq!((e.to_string(), e.exit_code()), (format!("--n x: {bad}"), 2));
        assert!(
            e.source()
                .is_some_and(|s| s.is::<std::num::ParseIntError>())
        );

        let e = Error::run(format!("cannot start ({}), giving up", nf())).with_source(nf());
        assert_eq!(e.to_string(), format!("cannot start ({}), giving up", nf()));
        assert!(e.source().is_some());

        for e in [Error::usage("u"), Error::run("r"), Error::Interrupted] {
            assert!(e.source().is_none(), "{e}");
        }
        assert_eq!(Error::usage("bad flag").to_string(), "bad flag");
        assert_eq!(Error::Interrupted.to_string(), "interrupted");
    }

    /// Errors cross threads (a job's thread, the watchdog) inside results.
    #[test]
    fn an_error_is_send_and_sync() {
        fn both<T: Send + Sync + 'static>() {}
        both::<Error>();
    }
}
