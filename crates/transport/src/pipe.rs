//! `pipe`: one pipe each way between the initiator and a child process.

use super::fd::{self, FdLink, Framing};
use super::peer::CHILD_FD;
use crate::error::{Error, Result};
use crate::link::{
    BufferMode, Capabilities, CompletionMode, Link, LinkConfig, ResponderArgs, Transport,
};
use std::os::fd::{FromRawFd, OwnedFd};

pub struct Pipe;

impl Transport for Pipe {
    fn name(&self) -> &'static str {
        "pipe"
    }

    fn summary(&self) -> &'static str {
        "a pair of pipes to a child process"
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
        let (req_r, req_w) = pipe()?;
        let (rep_r, rep_w) = pipe()?;
        // We read replies and write requests; the child reads requests (fd 3)
        // and writes replies (fd 4).
        FdLink::open(cfg, vec![rep_r, req_w], vec![req_r, rep_w], Framing::Stream)
    }

    fn respond(&self, args: &ResponderArgs) -> Result<()> {
        fd::respond(CHILD_FD + 1, Framing::Stream, args.completion)
    }
}

fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two fds, owned from here on.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::os("pipe2"));
    }
    // SAFETY: pipe2 succeeded, so both numbers are fresh open fds that nothing
    // else owns; each OwnedFd is its fd's only owner and closes it once.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
