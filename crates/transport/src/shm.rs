//! `shm`: the slot protocol of `thread` across two processes, through a memfd
//! mapped shared by both. The responder finds the memfd as its fd 3.

use super::peer::{CHILD_FD, Peer, Shared};
use super::slots::{self, Initiator, Layout, Region, WaitError};
use crate::error::{Error, Result};
use crate::link::{
    BufferMode, Capabilities, CompletionMode, Link, LinkConfig, ReplyShape, ResponderArgs,
    Transport,
};
use crate::peer::Fault;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

pub struct Shm;

impl Transport for Shm {
    fn name(&self) -> &'static str {
        "shm"
    }

    fn summary(&self) -> &'static str {
        "two processes, cache-line doorbells in a shared memfd mapping"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            buffers: &[BufferMode::User, BufferMode::Raw, BufferMode::Inline],
            completions: &[CompletionMode::Poll, CompletionMode::Block],
            default_completion: CompletionMode::Poll,
            max_message: crate::units::MAX_SIZE,
            max_inline: Some(slots::MAX_INLINE as u64),
            responder: "process",
            options: &[],
            empty_messages: true,
            flow_control: true,
            max_reply: None,
        }
    }

    fn open(&self, cfg: &LinkConfig) -> Result<Box<dyn Link>> {
        let layout = Layout::new(cfg.buffers, cfg.max_request, cfg.max_reply);
        // SAFETY: the name is a NUL-terminated static C string; the fd
        // returned is owned just below.
        let fd = unsafe { libc::memfd_create(c"xferbench-shm".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(Error::os("memfd_create"));
        }
        // SAFETY: fd ≥ 0 is the memfd just made, open and owned by no one else;
        // the OwnedFd is its only owner and closes it once.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: integer arguments only; the fd is open (owned just above).
        if unsafe { libc::ftruncate(fd.as_raw_fd(), layout.len as libc::off_t) } != 0 {
            return Err(Error::os(format!(
                "sizing the {}-byte shared region",
                layout.len
            )));
        }
        let map = Mapping::new(fd.as_raw_fd(), layout.len)?;
        // SAFETY: a fresh memfd mapping reads as zeroes and is page-aligned.
        let region = unsafe { Region::init(map.ptr, layout) };
        let peer = Peer::spawn(cfg, &[fd.as_raw_fd()])?;
        drop(fd);
        let init = Initiator::new(region, cfg.buffers, cfg.completion, cfg.timeout);
        Ok(Box::new(ShmLink {
            init,
            shared: peer.shared().clone(),
            peer: Some(peer),
            _map: map,
        }))
    }

    fn respond(&self, args: &ResponderArgs) -> Result<()> {
        let fd = CHILD_FD;
        // SAFETY: stat is plain C data (integers, timespecs): all zeroes is valid.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `st` is a live, writable stat that fstat writes only into;
        // a missing CHILD_FD only makes it fail.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return Err(Error::os("responder: fstat of the shared region"));
        }
        let map = Mapping::new(fd, st.st_size as usize)?;
        // SAFETY: the mapping is st_size bytes long.
        let region = unsafe { Region::attach(map.ptr, map.len)? };
        let mut fault = Fault::from_env();
        if slots::respond(region, args.completion, &AtomicBool::new(false), &mut fault)? {
            super::peer::fault_exit(&fault);
        }
        Ok(())
    }
}

/// A shared mapping of an fd, unmapped on drop.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned; moving its owner (a link) to another thread
// moves every access with it. Cross-process sharing goes through the
// doorbell protocol, not through this handle.
unsafe impl Send for Mapping {}

impl Mapping {
    fn new(fd: RawFd, len: usize) -> Result<Mapping> {
        // SAFETY: mapping a file we hold; checked for failure below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::os(format!("mapping the {len}-byte shared region")));
        }
        Ok(Mapping { ptr: p.cast(), len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: mapped in new() with this length.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

struct ShmLink {
    init: Initiator,
    shared: Arc<Shared>,
    peer: Option<Peer>,
    // Last: unmapped after the peer was stopped.
    _map: Mapping,
}

impl ShmLink {
    fn failure(&mut self, e: WaitError) -> Error {
        let peer = self.peer.as_mut().expect("peer lives until close");
        match e {
            WaitError::Gone => peer.failure("waiting for the responder", "it is gone"),
            WaitError::TimedOut => Error::run(format!(
                "responder did not answer within {:.1}s; raise --timeout if it is just slow",
                peer.timeout().as_secs_f64()
            )),
        }
    }
}

impl Link for ShmLink {
    fn request_buf(&mut self) -> &mut [u8] {
        self.init.request_buf()
    }

    fn reply(&self) -> &[u8] {
        self.init.reply()
    }

    fn configure(&mut self, shape: &ReplyShape) -> Result<()> {
        self.init
            .configure(shape, &self.shared.gone)
            .map_err(|e| self.failure(e))
    }

    #[inline]
    fn exchange(&mut self) -> Result<()> {
        self.init
            .exchange(&self.shared.gone)
            .map_err(|e| self.failure(e))
    }

    fn close(mut self: Box<Self>) -> Result<()> {
        self.init
            .quit(&self.shared.gone)
            .map_err(|e| self.failure(e))?;
        self.peer.take().expect("peer lives until close").finish()
    }
}
