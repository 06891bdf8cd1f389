//! The `transport` engine: a one-way stream over one of xferbench's own
//! transports (`filename=xfer:tcp`, `xfer:shm`, `xfer:pipe`…). Each window of
//! `iodepth` blocks goes back to back to the responder, which acknowledges the
//! window — curve's `stream` pattern. The bytes sent are the link's own
//! buffer: the stream measures the transport, not a file's contents.

use super::{Done, Engine, Op};
use crate::error::{Error, Result};
use crate::stream::job::{Completion, Job};
use crate::transport::{
    self, BufferMode, CompletionMode, Link, LinkConfig, Pattern, ReplyShape, Spec,
};
use std::path::PathBuf;
use std::time::Duration;

use crate::stream::job::TRANSPORT_PREFIX as PREFIX;

pub struct LinkEngine {
    link: Option<Box<dyn Link>>,
    shape: ReplyShape,
    /// Exchanges left in the configured batch (the responder counts them).
    batch_left: u64,
    /// Blocks the job still has to send, when it is size-based.
    blocks_left: Option<u64>,
    queued: Vec<Op>,
    detail: String,
}

/// The transport a `xfer:` filename names.
pub fn spec_of(filename: &str) -> Option<Result<Spec>> {
    let rest = filename.strip_prefix(PREFIX)?;
    Some(transport::parse_specs(rest).and_then(|mut v| {
        if v.len() != 1 {
            return Err(Error::usage(format!(
                "filename={filename}: name one transport, as in xfer:tcp or xfer:shm:completion=block"
            )));
        }
        Ok(v.remove(0))
    }))
}

impl LinkEngine {
    /// `blocks`: how many blocks the job sends, if known (not time-based).
    pub fn open(
        job: &Job,
        spec: Spec,
        depth: usize,
        blocks: Option<u64>,
        timeout: Duration,
        exe: PathBuf,
    ) -> Result<LinkEngine> {
        transport::guard::set_default_bound(timeout);
        let t = transport::resolve(&spec)?;
        let caps = t.capabilities();
        if job.rw != crate::stream::job::Rw::Write {
            return Err(Error::usage(format!(
                "job {}: a transport stream goes one way, initiator to responder: use rw=write (got rw={})",
                job.name,
                job.rw.name()
            )));
        }
        if job.verify.is_some() {
            return Err(Error::usage(format!(
                "job {}: verify checks blocks stored in a target; a transport stream stores nothing (use curve --payload fill-check to check a transport's data)",
                job.name
            )));
        }
        if !caps.flow_control {
            return Err(Error::usage(format!(
                "job {}: {} has no flow control, so a stream would drop datagrams; use tcp, unix, pipe or shm",
                job.name, spec.name
            )));
        }
        let completion = match spec.mode::<CompletionMode>("completion")? {
            Some(c) => c,
            None => match job.completion {
                Some(Completion::Poll) => CompletionMode::Poll,
                Some(Completion::Interrupt) => CompletionMode::Block,
                None => caps.default_completion,
            },
        };
        let buffers = match spec.mode::<BufferMode>("buffers")? {
            Some(b) => b,
            None if caps.buffers.contains(&BufferMode::Raw) => BufferMode::Raw,
            None => caps.user_buffers(),
        };
        let cfg = LinkConfig {
            spec: spec.clone(),
            buffers,
            completion,
            max_request: job.bs as usize,
            max_reply: 1,
            responder_cpu: None,
            timeout,
            exe,
        };
        transport::check(t, &cfg)?;
        let link = t.open(&cfg)?;
        let shape = ReplyShape {
            request_len: job.bs as usize,
            reply_len: 1,
            pattern: Pattern::Stream,
            window: depth as u32,
            ..ReplyShape::default()
        };
        Ok(LinkEngine {
            link: Some(link),
            shape,
            batch_left: 0,
            blocks_left: blocks,
            queued: Vec::with_capacity(depth),
            detail: format!(
                "{spec} stream, {} buffers, {} completion, window of {depth} blocks per acknowledgement",
                buffers.name(),
                completion.name()
            ),
        })
    }

    fn link(&mut self) -> Result<&mut Box<dyn Link>> {
        self.link
            .as_mut()
            .ok_or_else(|| Error::run("transport link already closed"))
    }
}

impl LinkEngine {
    /// Runs the exchanges the responder still expects in this batch.
    fn finish_batch(&mut self) -> Result<()> {
        while self.batch_left > 0 {
            self.link()?.exchange()?;
            self.batch_left -= 1;
        }
        Ok(())
    }
}

impl Engine for LinkEngine {
    fn queue(&mut self, op: Op) -> Result<()> {
        self.queued.push(op);
        Ok(())
    }

    fn reap(&mut self, _min: usize, _timeout: Duration, out: &mut Vec<Done>) -> Result<()> {
        if self.queued.is_empty() {
            return Ok(());
        }
        let n = self.queued.len() as u32;
        if n != self.shape.window && self.batch_left > 0 {
            self.finish_batch()?;
        }
        if self.batch_left == 0 {
            // Size-based jobs are planned exactly: all full windows in one
            // batch, then the tail's shorter window; a time-based job goes
            // in batches and finishes the last one after its timed span.
            self.shape.window = n;
            self.shape.exchanges = match self.blocks_left {
                Some(b) => (b / u64::from(n)).max(1),
                None => 1024,
            };
            self.batch_left = self.shape.exchanges;
            let shape = self.shape;
            self.link()?.configure(&shape)?;
        }
        self.link()?.exchange()?;
        self.batch_left -= 1;
        if let Some(b) = &mut self.blocks_left {
            *b = b.saturating_sub(u64::from(n));
        }
        out.extend(self.queued.drain(..).map(|op| Done {
            slot: op.slot,
            res: Ok(op.len),
        }));
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn completion_detail(&self) -> String {
        self.detail.clone()
    }

    fn device(&mut self) -> Option<serde_json::Value> {
        self.link.as_mut()?.counters()
    }
}

impl Drop for LinkEngine {
    fn drop(&mut self) {
        if self.finish_batch().is_err() {
            return;
        }
        if let Some(l) = self.link.take() {
            let _ = l.close();
        }
    }
}
