//! `netsplice`'s pipe: a TCP block goes through it with splice(2) instead
//! of being copied by send and receive.

use super::peer_gone;
use std::io::ErrorKind;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A pipe that `netsplice` moves TCP blocks through.
pub(super) struct Pipe {
    r: OwnedFd,
    w: OwnedFd,
    /// Its capacity: blocks move in pieces of at most this.
    cap: usize,
}

impl Pipe {
    pub(super) fn new(bs: usize) -> std::io::Result<Pipe> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two fds into the array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both fds are fresh and ours.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // A block in one piece where the pipe can grow to it (best effort:
        // fs.pipe-max-size bounds it; the default is 64 KiB).
        let want = bs.next_multiple_of(4096).min(1 << 20) as libc::c_int;
        // SAFETY: fcntl on a pipe we hold.
        unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, want) };
        // SAFETY: as above.
        let cap = unsafe { libc::fcntl(w.as_raw_fd(), libc::F_GETPIPE_SZ) };
        Ok(Pipe {
            r,
            w,
            cap: usize::try_from(cap).unwrap_or(0).max(4096),
        })
    }

    /// `netsplice`: the block is mapped into the pipe (vmsplice) and the
    /// pipe spliced into the socket, a pipeful at a time.
    pub(super) fn send(&self, sock: RawFd, buf: &[u8], more: bool) -> std::io::Result<()> {
        let p = self;
        let mut off = 0;
        while off < buf.len() {
            let chunk = (buf.len() - off).min(p.cap);
            let mut put = 0;
            while put < chunk {
                let iov = libc::iovec {
                    iov_base: buf[off + put..].as_ptr() as *mut libc::c_void,
                    iov_len: chunk - put,
                };
                // SAFETY: the iovec covers live bytes of `buf`; the pipe is ours.
                let r = unsafe { libc::vmsplice(p.w.as_raw_fd(), &iov, 1, 0) };
                if r < 0 {
                    let e = std::io::Error::last_os_error();
                    if e.kind() != ErrorKind::Interrupted {
                        return Err(e);
                    }
                    continue;
                }
                put += r as usize;
            }
            let mut sent = 0;
            let last = off + chunk == buf.len();
            let flags = libc::SPLICE_F_MOVE
                | if more || !last {
                    libc::SPLICE_F_MORE
                } else {
                    0
                };
            while sent < chunk {
                // SAFETY: splicing between fds we hold, no offsets.
                let r = unsafe {
                    libc::splice(
                        p.r.as_raw_fd(),
                        std::ptr::null_mut(),
                        sock,
                        std::ptr::null_mut(),
                        chunk - sent,
                        flags,
                    )
                };
                if r < 0 {
                    let e = std::io::Error::last_os_error();
                    if e.kind() != ErrorKind::Interrupted {
                        return Err(e);
                    }
                    continue;
                }
                sent += r as usize;
            }
            off += chunk;
        }
        Ok(())
    }

    /// `netsplice`: the socket is spliced into the pipe and the pipe read
    /// into the block (fio maps it back with vmsplice, which copies as well).
    pub(super) fn recv(&self, sock: RawFd, buf: &mut [u8]) -> std::io::Result<usize> {
        let p = self;
        let mut off = 0;
        while off < buf.len() {
            let want = (buf.len() - off).min(p.cap);
            // SAFETY: splicing between fds we hold, no offsets.
            let r = unsafe {
                libc::splice(
                    sock,
                    std::ptr::null_mut(),
                    p.w.as_raw_fd(),
                    std::ptr::null_mut(),
                    want,
                    libc::SPLICE_F_MOVE,
                )
            };
            if r < 0 {
                let e = std::io::Error::last_os_error();
                match e.kind() {
                    ErrorKind::Interrupted => continue,
                    _ if peer_gone(&e) => break,
                    _ => return Err(e),
                }
            }
            if r == 0 {
                break;
            }
            let got = r as usize;
            let mut drained = 0;
            while drained < got {
                let dst = &mut buf[off + drained..off + got];
                // SAFETY: reading into live bytes of `buf` from our pipe.
                let k = unsafe { libc::read(p.r.as_raw_fd(), dst.as_mut_ptr().cast(), dst.len()) };
                if k < 0 {
                    let e = std::io::Error::last_os_error();
                    if e.kind() != ErrorKind::Interrupted {
                        return Err(e);
                    }
                    continue;
                }
                drained += k as usize;
            }
            off += got;
        }
        Ok(off)
    }
}
