//! `unix`: a stream socketpair (AF_UNIX, SOCK_STREAM) to a child process.

use super::fd::{self, FdLink, Framing};
use super::peer::CHILD_FD;
use crate::error::{Error, Result};
use crate::link::{
    BufferMode, Capabilities, CompletionMode, Link, LinkConfig, ResponderArgs, Transport,
};
use std::os::unix::net::UnixStream;

pub struct Unix;

impl Transport for Unix {
    fn name(&self) -> &'static str {
        "unix"
    }

    fn summary(&self) -> &'static str {
        "a Unix stream socketpair to a child process"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            buffers: &[BufferMode::User],
            completions: &[CompletionMode::Poll, CompletionMode::Block],
            default_completion: CompletionMode::Block,
            max_message: crate::units::MAX_SIZE,
            max_inline: None,
            responder: "process",
            options: &[],
            empty_messages: false,
            flow_control: true,
            max_reply: None,
        }
    }

    fn open(&self, cfg: &LinkConfig) -> Result<Box<dyn Link>> {
        let (a, b) =
            UnixStream::pair().map_err(|e| Error::io("socketpair(AF_UNIX, SOCK_STREAM)", e))?;
        FdLink::open(cfg, vec![a.into()], vec![b.into()], Framing::Stream)
    }

    fn respond(&self, args: &ResponderArgs) -> Result<()> {
        fd::respond(CHILD_FD, Framing::Stream, args.completion)
    }
}
