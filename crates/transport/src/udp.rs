//! `udp`: two loopback UDP sockets connected to each other, one datagram per
//! message. A message over the IPv4 datagram limit is refused up front, never
//! truncated.

use super::fd::{self, FdLink, Framing};
use super::peer::CHILD_FD;
use crate::error::{Error, Result};
use crate::link::{
    BufferMode, Capabilities, CompletionMode, DATAGRAM_BUFFER, Link, LinkConfig, ResponderArgs,
    Transport,
};
use std::net::UdpSocket;
use std::os::fd::AsRawFd;

/// 65535 − 20 (IPv4 header) − 8 (UDP header).
pub const MAX_DATAGRAM: u64 = 65_507;

pub struct Udp;

impl Transport for Udp {
    fn name(&self) -> &'static str {
        "udp"
    }

    fn summary(&self) -> &'static str {
        "loopback UDP (127.0.0.1) to a child process, one datagram per message"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            buffers: &[BufferMode::User],
            completions: &[CompletionMode::Poll, CompletionMode::Block],
            default_completion: CompletionMode::Block,
            max_message: MAX_DATAGRAM,
            max_inline: None,
            responder: "process",
            options: &[],
            empty_messages: true,
            flow_control: false,
            max_reply: None,
        }
    }

    fn open(&self, cfg: &LinkConfig) -> Result<Box<dyn Link>> {
        let bind = || {
            UdpSocket::bind("127.0.0.1:0").map_err(|e| Error::io("binding a loopback UDP port", e))
        };
        let (a, b) = (bind()?, bind()?);
        let addr = |s: &UdpSocket| s.local_addr().map_err(|e| Error::io("getsockname", e));
        a.connect(addr(&b)?)
            .map_err(|e| Error::io("connecting UDP sockets", e))?;
        b.connect(addr(&a)?)
            .map_err(|e| Error::io("connecting UDP sockets", e))?;
        // Room for a whole datagram of the largest size either way.
        for s in [&a, &b] {
            for opt in [libc::SO_SNDBUF, libc::SO_RCVBUF] {
                fd::setsockopt(
                    s.as_raw_fd(),
                    libc::SOL_SOCKET,
                    opt,
                    DATAGRAM_BUFFER as libc::c_int,
                )?;
            }
        }
        FdLink::open_lossy(cfg, vec![a.into()], vec![b.into()])
    }

    fn respond(&self, args: &ResponderArgs) -> Result<()> {
        fd::respond(CHILD_FD, Framing::Datagram, args.completion)
    }
}
