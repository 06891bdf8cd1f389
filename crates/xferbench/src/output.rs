//! Where a command's output goes: stdout, or the file `-o` names, written
//! through symlinks and devices, whole or not at all, and never lost.

use crate::error::{Error, Result};
use std::io::Write;
use std::path::Path;

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
                Dest::Through(t) => std::fs::OpenOptions::new()
                    .write(true)
                    .open(&t)
                    .and_then(|mut f| f.write_all(text.as_bytes())),
                Dest::File(t) => {
                    let tmp = temp_beside(&t);
                    std::fs::write(&tmp, text)
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
        if std::fs::write(&f, text).is_ok() {
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
