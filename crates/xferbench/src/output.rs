//! Where a command's output goes: stdout, or the file `-o` names, written
//! through symlinks and devices, whole or not at all, and never lost: a
//! FIFO with no reader (or one that stops reading) is given up on at the
//! command's `--timeout`, a file written over keeps its mode, and an `-o`
//! naming one of the command's inputs is refused before anything runs.

use crate::error::{Error, Result};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long an output that is a FIFO waits for its reader, ms: the
/// command's `--timeout` once [`wait_for_readers`] is told it.
static READER_WAIT_MS: AtomicU64 = AtomicU64::new(10_000);

/// What ends a wait for a reader at once (a stopping signal).
static STOPPED: Mutex<Option<fn() -> bool>> = Mutex::new(None);

/// How long an output FIFO may wait for a reader (the command's
/// `--timeout`), and what says to stop waiting (a signal came): the
/// results then go to the fallback file at once.
pub fn wait_for_readers(timeout: Duration, stopped: Option<fn() -> bool>) {
    READER_WAIT_MS.store(timeout.as_millis() as u64, Ordering::Relaxed);
    if let Some(f) = stopped {
        *STOPPED.lock().unwrap_or_else(|e| e.into_inner()) = Some(f);
    }
}

/// The wait for a reader, and whether to stop it now.
fn reader_deadline() -> (Instant, impl Fn() -> bool) {
    let wait = Duration::from_millis(READER_WAIT_MS.load(Ordering::Relaxed));
    let stopped = *STOPPED.lock().unwrap_or_else(|e| e.into_inner());
    (Instant::now() + wait, move || stopped.is_some_and(|f| f()))
}

/// Refuses an output (`flag`'s: `-o`, `--html`) that is one of the
/// command's inputs (each with how to name it), compared by device and
/// inode so that another name, a symlink or a hard link to an input is
/// caught as well: writing the results there would replace what the run
/// reads. An output that is not a regular file (/dev/null, a FIFO)
/// replaces nothing.
pub fn refuse_inputs(out: &Path, flag: &str, inputs: &[(PathBuf, String)]) -> Result<()> {
    let Ok(o) = std::fs::metadata(out) else {
        return Ok(());
    };
    if !o.is_file() {
        return Ok(());
    }
    for (p, what) in inputs {
        if let Ok(m) = std::fs::metadata(p)
            && (m.dev(), m.ino()) == (o.dev(), o.ino())
        {
            let other = if p.as_path() == out {
                ""
            } else {
                " (the same file by another name)"
            };
            return Err(Error::usage(format!(
                "{flag} writes {}, which is {what}{other}: the results would replace it; give {flag} another place",
                out.display()
            )));
        }
    }
    Ok(())
}

/// Where `-o PATH` writes: a symlink's final target (followed, never
/// replaced), as a regular file (written beside it and renamed over it, so
/// an interrupted run never leaves half a file) or as something written
/// through in place (a device such as /dev/null, a FIFO, /dev/stdout).
enum Dest {
    File(std::path::PathBuf),
    Through(std::path::PathBuf),
}

fn destination(p: &Path) -> std::io::Result<Dest> {
    let mut cur = p.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() => {
                // /proc's links (/dev/stdout → /proc/self/fd/1 → a pipe)
                // name no path: opening the link itself reaches the file.
                if cur.starts_with("/proc") {
                    return Ok(Dest::Through(cur));
                }
                let t = std::fs::read_link(&cur)?;
                cur = match cur.parent() {
                    Some(dir) if t.is_relative() => dir.join(t),
                    _ => t,
                };
            }
            Ok(m) if m.is_dir() => {
                return Err(std::io::Error::other("it is a directory"));
            }
            Ok(m) if m.is_file() => return Ok(Dest::File(cur)),
            Ok(_) => return Ok(Dest::Through(cur)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Dest::File(cur)),
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// Fails before a run, not after it, when the output cannot be written:
/// the file (or its directory, where the new file is made), or the device.
/// Leaves no file behind that was not there before.
pub fn check_writable(path: Option<&Path>) -> Result<()> {
    let Some(p) = path else { return Ok(()) };
    let refuse = |e: std::io::Error| {
        Error::usage(format!(
            "cannot write {}: {e}; pick a writable path with -o",
            p.display()
        ))
        .with_source(e)
    };
    match destination(p).map_err(refuse)? {
        // Not opened: a reader already waiting on it would see the open
        // and close as the end of its input, and leave.
        Dest::Through(t) if crate::fifo::is_fifo(&t) => crate::fifo::writable(&t).map_err(refuse),
        Dest::Through(t) => {
            use std::os::unix::fs::OpenOptionsExt;
            // Non-blocking: a FIFO with no reader yet is not an error.
            match std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&t)
            {
                Err(e) if e.raw_os_error() != Some(libc::ENXIO) => Err(refuse(e)),
                _ => Ok(()),
            }
        }
        Dest::File(t) => {
            if t.exists() {
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(&t)
                    .map_err(refuse)?;
            }
            // The file is made beside the target, then renamed over it.
            let probe = temp_beside(&t);
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&probe)
                .map_err(refuse)?;
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
    }
}

/// A temporary name next to `t`.
fn temp_beside(t: &Path) -> std::path::PathBuf {
    let mut tmp = t.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    tmp.into()
}

/// Writes the rendered text to `path` (a file, a symlink's target, a device
/// or FIFO in place), or to stdout. When
/// the path cannot take it (a full file system, a device that refuses),
/// the results are kept in a fallback file named in the error, never lost.
pub fn emit(text: &str, path: Option<&Path>) -> Result<()> {
    match path {
        Some(p) => {
            let written = destination(p).and_then(|d| match d {
                Dest::Through(t) if crate::fifo::is_fifo(&t) => {
                    let (deadline, stopped) = reader_deadline();
                    crate::fifo::write_bytes(&t, text.as_bytes(), deadline, &stopped)
                        .map_err(|e| std::io::Error::new(e.kind(), fifo_words(&e)))
                }
                Dest::Through(t) => std::fs::OpenOptions::new()
                    .write(true)
                    .open(&t)
                    .and_then(|mut f| f.write_all(text.as_bytes())),
                Dest::File(t) => {
                    let tmp = temp_beside(&t);
                    write_new(&tmp, text, std::fs::metadata(&t).ok())
                        .and_then(|()| std::fs::rename(&tmp, &t))
                        .inspect_err(|_| {
                            let _ = std::fs::remove_file(&tmp);
                        })
                }
            });
            written.map_err(|e| kept_elsewhere(text, p, e))
        }
        None => {
            let mut out = std::io::stdout().lock();
            // A closed stdout (e.g. `| head`) is not worth a panic.
            let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
            Ok(())
        }
    }
}

/// What went wrong with a FIFO, with how long was waited for its reader.
fn fifo_words(e: &std::io::Error) -> String {
    let waited = READER_WAIT_MS.load(Ordering::Relaxed) as f64 / 1000.0;
    match e.kind() {
        std::io::ErrorKind::TimedOut => format!("{e}; waited {waited:.1}s, the --timeout"),
        std::io::ErrorKind::Interrupted => "interrupted while waiting for its reader".into(),
        _ => e.to_string(),
    }
}

/// Writes `text` into the new file `tmp` that will replace a file whose
/// metadata is `old` (None: no file there yet): it takes the old file's
/// mode (and owner, where this process may give it), so writing over a
/// private file leaves it private. The file is made private first, so
/// the results are never readable by more than the old file was.
fn write_new(tmp: &Path, text: &str, old: Option<std::fs::Metadata>) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let old = old.filter(std::fs::Metadata::is_file);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(if old.is_some() { 0o600 } else { 0o666 })
        .open(tmp)?;
    if let Some(m) = &old {
        // Only root may give a file away; anyone else keeps it as made.
        // (Before the mode: a change of owner clears set-id bits.)
        let _ = std::os::unix::fs::fchown(&f, Some(m.uid()), Some(m.gid()));
        f.set_permissions(std::fs::Permissions::from_mode(m.mode() & 0o7777))?;
    }
    f.write_all(text.as_bytes())
}

/// A new file readable by this user alone (results kept in a shared
/// temporary directory are nobody else's to read).
fn write_private(f: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(f)?
        .write_all(text.as_bytes())
}

/// The error for an output that could not be written, after keeping the
/// results in a fallback file (the temporary directory, else the current
/// one) that the error names.
fn kept_elsewhere(text: &str, p: &Path, e: std::io::Error) -> Error {
    let name = p
        .file_name()
        .map_or("results".into(), |n| n.to_string_lossy().into_owned());
    let file = format!("xferbench-{}-{name}", std::process::id());
    for dir in [std::env::temp_dir(), std::path::PathBuf::from(".")] {
        let f = dir.join(&file);
        if write_private(&f, text).is_ok() {
            return Error::run(format!(
                "cannot write {} ({e}); the results are kept in {}",
                p.display(),
                f.display()
            ))
            .with_source(e);
        }
        let _ = std::fs::remove_file(&f);
    }
    Error::run(format!(
        "cannot write {} ({e}), nor a fallback file in the temporary or current directory: the results are lost",
        p.display()
    ))
    .with_source(e)
}
