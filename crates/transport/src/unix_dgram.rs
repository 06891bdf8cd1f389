//! `unix-dgram`: a datagram socketpair (AF_UNIX, SOCK_DGRAM) to a child
//! process; one datagram per message, so the kernel's per-datagram limit
//! (the socket buffer size) bounds the message size.

use super::fd::{self, FdLink, Framing};
use super::peer::CHILD_FD;
use crate::error::{Error, Result};
use crate::link::{
    BufferMode, Capabilities, CompletionMode, Link, LinkConfig, ResponderArgs, Transport,
};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixDatagram;

pub struct UnixDgram;

/// The kernel caps SO_SNDBUF at net.core.wmem_max for unprivileged users; a
/// datagram must fit in the send buffer.
fn wmem_max() -> u64 {
    std::fs::read_to_string("/proc/sys/net/core/wmem_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(212_992)
}

impl Transport for UnixDgram {
    fn name(&self) -> &'static str {
        "unix-dgram"
    }

    fn summary(&self) -> &'static str {
        "a Unix datagram socketpair to a child process, one datagram per message"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            buffers: &[BufferMode::User],
            completions: &[CompletionMode::Poll, CompletionMode::Block],
            default_completion: CompletionMode::Block,
            // Room for the kernel's per-datagram overhead below the buffer size.
            max_message: wmem_max().saturating_sub(4096),
            max_inline: None,
            responder: "process",
            options: &[],
            empty_messages: true,
            flow_control: true,
            max_reply: None,
        }
    }

    fn open(&self, cfg: &LinkConfig) -> Result<Box<dyn Link>> {
        let (a, b) =
            UnixDatagram::pair().map_err(|e| Error::io("socketpair(AF_UNIX, SOCK_DGRAM)", e))?;
        let buf = wmem_max().min(i32::MAX as u64) as libc::c_int;
        for s in [&a, &b] {
            for opt in [libc::SO_SNDBUF, libc::SO_RCVBUF] {
                fd::setsockopt(s.as_raw_fd(), libc::SOL_SOCKET, opt, buf)?;
            }
        }
        FdLink::open(cfg, vec![a.into()], vec![b.into()], Framing::Datagram)
    }

    fn respond(&self, args: &ResponderArgs) -> Result<()> {
        fd::respond(CHILD_FD, Framing::Datagram, args.completion)
    }
}
