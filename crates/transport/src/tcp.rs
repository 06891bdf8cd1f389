//! `tcp`: a loopback TCP connection to a child process, TCP_NODELAY on by
//! default (`tcp:nodelay=0` turns Nagle back on). The initiator makes both ends
//! and hands one to the child, so no port is left listening.

use super::fd::{self, FdLink, Framing};
use super::peer::CHILD_FD;
use crate::error::{Error, Result};
use crate::link::{
    BufferMode, Capabilities, CompletionMode, Link, LinkConfig, ResponderArgs, Spec, Transport,
};
use std::net::{TcpListener, TcpStream};

pub struct Tcp;

impl Transport for Tcp {
    fn name(&self) -> &'static str {
        "tcp"
    }

    fn summary(&self) -> &'static str {
        "loopback TCP (127.0.0.1) to a child process"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            buffers: &[BufferMode::User],
            completions: &[CompletionMode::Poll, CompletionMode::Block],
            default_completion: CompletionMode::Block,
            max_message: crate::units::MAX_SIZE,
            max_inline: None,
            responder: "process",
            options: &[("nodelay", "TCP_NODELAY on both ends: 1 (default) or 0")],
            empty_messages: false,
            flow_control: true,
            max_reply: None,
        }
    }

    fn check_options(&self, spec: &Spec) -> Result<()> {
        spec.flag("nodelay", true).map(|_| ())
    }

    fn open(&self, cfg: &LinkConfig) -> Result<Box<dyn Link>> {
        let nodelay = cfg.spec.flag("nodelay", true)?;
        let l = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| Error::io("binding a loopback TCP port", e))?;
        let addr = l.local_addr().map_err(|e| Error::io("getsockname", e))?;
        let a =
            TcpStream::connect(addr).map_err(|e| Error::io(format!("connecting to {addr}"), e))?;
        let (b, _) = l
            .accept()
            .map_err(|e| Error::io("accepting the loopback connection", e))?;
        for s in [&a, &b] {
            s.set_nodelay(nodelay)
                .map_err(|e| Error::io("setting TCP_NODELAY", e))?;
        }
        FdLink::open(cfg, vec![a.into()], vec![b.into()], Framing::Stream)
    }

    fn respond(&self, args: &ResponderArgs) -> Result<()> {
        fd::respond(CHILD_FD, Framing::Stream, args.completion)
    }
}
