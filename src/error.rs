//! One error type for the whole tool. The split between usage and run errors is
//! what decides the exit code (2 vs 1), so every error is built as one or the other
//! at the place that knows which it is.

use std::fmt;
use std::sync::atomic::{AtomicI32, Ordering};

/// The signal that interrupted the run (0 until one arrives): the exit
/// status of an interrupted run is 128 + its number, as a shell reports a
/// process the signal killed.
pub(crate) static INTERRUPTED_BY: AtomicI32 = AtomicI32::new(0);

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

/// The longest error line printed: a message quoting untrusted input (a
/// 10 MB option name, a 200 MB host name) is cut in its middle, keeping its
/// start (what failed) and its end (the fix).
pub const MAX_LINE: usize = 600;

/// `line` cut to [`MAX_LINE`] characters, saying how much was left out.
pub fn capped(line: &str) -> std::borrow::Cow<'_, str> {
    let n = line.chars().count();
    if n <= MAX_LINE {
        return line.into();
    }
    let head: String = line.chars().take(MAX_LINE * 2 / 3).collect();
    let tail: String = line.chars().skip(n - MAX_LINE / 4).collect();
    format!(
        "{head} …[{} characters cut]… {tail}",
        n - head.chars().count() - MAX_LINE / 4
    )
    .into()
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
