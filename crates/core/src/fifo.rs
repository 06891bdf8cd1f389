//! Writing into a FIFO (a named pipe, or a pipe reached through
//! `/proc/self/fd`) without ever blocking for good: a plain `open` waits
//! for a reader that may never come, and a plain `write` waits for a
//! reader that stopped reading. Here both waits end at a deadline, or
//! earlier when the caller's `stop` says so, and the caller keeps the
//! bytes elsewhere (results are never lost to a pipe).

use std::io::{Error, ErrorKind, Read, Result};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

/// How often a FIFO with no reader is tried again.
const RETRY: Duration = Duration::from_millis(20);

/// Whether `path` (symlinks followed) is a FIFO or a pipe: what [`write()`]
/// is for, and what a plain open would block on.
pub fn is_fifo(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// Whether this process may write `path`, without opening it (opening a
/// FIFO and closing it again would end a reader's input).
pub fn writable(path: &Path) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::new(ErrorKind::InvalidInput, "the name holds a NUL byte"))?;
    // SAFETY: `c` is a NUL-terminated string that outlives the call.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
        return Err(Error::last_os_error());
    }
    Ok(())
}

/// Writes everything `from` holds into the FIFO at `path`: waits for a
/// reader to open it until `deadline`, then for the reader to take each
/// part, each wait as long again (a reader that keeps reading, however
/// slowly, gets everything), or until `stop()` says to give up. An error
/// (`TimedOut` for a reader that never came or stopped reading,
/// `Interrupted` for a stop, `BrokenPipe` for a reader that left) means
/// the reader may have part of it at most.
pub fn write(
    path: &Path,
    mut from: impl Read,
    deadline: Instant,
    stop: &dyn Fn() -> bool,
) -> Result<()> {
    let patience = deadline.saturating_duration_since(Instant::now());
    let f = open(path, deadline, stop)?;
    let mut buf = vec![0u8; 64 << 10];
    let mut deadline = Instant::now() + patience;
    loop {
        let n = from.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        let mut part = &buf[..n];
        while !part.is_empty() {
            match std::io::Write::write(&mut &f, part) {
                Ok(w) => {
                    part = &part[w..];
                    deadline = Instant::now() + patience;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    wait_writable(&f, deadline, stop)?;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// [`write()`] of bytes in memory.
pub fn write_bytes(
    path: &Path,
    bytes: &[u8],
    deadline: Instant,
    stop: &dyn Fn() -> bool,
) -> Result<()> {
    write(path, bytes, deadline, stop)
}

/// The FIFO opened for writing, non-blocking, once a reader has it open.
fn open(path: &Path, deadline: Instant, stop: &dyn Fn() -> bool) -> Result<std::fs::File> {
    loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            Ok(f) => return Ok(f),
            // No reader yet.
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {}
            Err(e) => return Err(e),
        }
        let now = Instant::now();
        if stop() {
            return Err(Error::new(
                ErrorKind::Interrupted,
                "stopped waiting for a reader",
            ));
        }
        if now >= deadline {
            return Err(Error::new(ErrorKind::TimedOut, "no reader opened it"));
        }
        std::thread::sleep(RETRY.min(deadline - now));
    }
}

/// Waits until the pipe has room again (its reader took something).
fn wait_writable(f: &std::fs::File, deadline: Instant, stop: &dyn Fn() -> bool) -> Result<()> {
    loop {
        let now = Instant::now();
        if stop() {
            return Err(Error::new(
                ErrorKind::Interrupted,
                "stopped waiting for the reader",
            ));
        }
        if now >= deadline {
            return Err(Error::new(
                ErrorKind::TimedOut,
                "the reader stopped reading",
            ));
        }
        let ms = (deadline - now).min(RETRY * 5).as_millis().max(1) as libc::c_int;
        let mut p = libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: `p` is one live pollfd for the duration of the call.
        let r = unsafe { libc::poll(&mut p, 1, ms) };
        if r < 0 {
            let e = Error::last_os_error();
            if e.kind() != ErrorKind::Interrupted {
                return Err(e);
            }
        } else if r > 0 {
            if p.revents & (libc::POLLERR | libc::POLLHUP) != 0 {
                return Err(Error::new(ErrorKind::BrokenPipe, "the reader closed it"));
            }
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(p: &Path) {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn no_reader_ends_at_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        mkfifo(&p);
        assert!(is_fifo(&p));
        let t = Instant::now();
        let e = write_bytes(&p, b"x", t + Duration::from_millis(200), &|| false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
        // Loose: the point is that it ends, not how fast.
        assert!(t.elapsed() < Duration::from_secs(30));
        let e =
            write_bytes(&p, b"x", Instant::now() + Duration::from_secs(60), &|| true).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Interrupted, "{e}");
    }

    #[test]
    fn a_reader_gets_everything() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        mkfifo(&p);
        let q = p.clone();
        let reader = std::thread::spawn(move || std::fs::read(&q).unwrap());
        let data: Vec<u8> = (0..1_000_000u32).map(|i| i as u8).collect();
        write_bytes(&p, &data, Instant::now() + Duration::from_secs(60), &|| {
            false
        })
        .unwrap();
        assert_eq!(reader.join().unwrap(), data);
    }

    #[test]
    fn a_reader_that_stops_reading_ends_at_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        mkfifo(&p);
        // Opened for reading and never read: the pipe fills.
        let _held = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&p)
            .unwrap();
        let data = vec![7u8; 4 << 20];
        let e = write_bytes(
            &p,
            &data,
            Instant::now() + Duration::from_millis(300),
            &|| false,
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
    }
}
