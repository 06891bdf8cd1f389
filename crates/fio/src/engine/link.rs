//! The `transport` engine: a stream over one of xferbench's own transports
//! or a device plugin (`filename=xfer:tcp`, `xfer:shm`,
//! `xfer:plugin:path=dev.so`). Writes go host to device: each window of
//! `iodepth` blocks back to back, one acknowledgement for the window
//! (curve's `stream` pattern). Reads go device to host: `iodepth` tiny
//! requests in flight, each answered by a block (an XDMA card's C2H
//! channel, an accelerator's output queue). A mix (`rw=rw`) moves each
//! window's reads and writes as two windows. The bytes are the link's own
//! buffers: the stream measures the transport, not a file's contents.

use super::{Dir, Done, Engine, Op};
use crate::error::{Error, Result};
use crate::job::{Completion, Job};
use crate::transport::{
    self, BufferMode, CompletionMode, Link, LinkConfig, Pattern, ReplyShape, Spec,
};
use std::path::PathBuf;
use std::time::Duration;

use crate::job::TRANSPORT_PREFIX as PREFIX;

pub struct LinkEngine {
    link: Option<Box<dyn Link>>,
    /// A window of writes: `bs`-byte requests back to back, one
    /// acknowledgement (curve's stream pattern).
    write: ReplyShape,
    /// A window of reads: tiny requests, `bs`-byte replies, all in flight
    /// at once (the device writes host memory: an XDMA C2H channel).
    read: ReplyShape,
    /// The direction configured last, and the exchanges the responder
    /// still expects of it.
    current: Option<Dir>,
    batch_left: u64,
    /// Blocks the job still has to move, when it is size-based and goes
    /// one way (a mix reconfigures at each change of direction instead).
    blocks_left: Option<u64>,
    mixed: bool,
    queued: Vec<Op>,
    /// The completion mode the link was opened in.
    completion: CompletionMode,
    detail: String,
    /// The transport as named, and the buffers the link uses: what the
    /// device's record says it ran as.
    spec: Spec,
    buffers: BufferMode,
    /// The device's record taken at close (its last counters, and the
    /// close's error if it failed), once the link is gone.
    closed: Option<serde_json::Value>,
}

/// The modes a job's link opens in: the spec's own, else the job's
/// (`completion=` for a poll or interrupt job), else the transport's.
fn modes(
    job: &Job,
    spec: &Spec,
    caps: &transport::Capabilities,
) -> Result<(BufferMode, CompletionMode)> {
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
    Ok((buffers, completion))
}

/// The device record of a job's link, as the other experiments record
/// theirs: what the device says of itself, with the spec and modes it ran
/// as. None for a transport without a device (tcp, shm).
pub fn device_record(job: &Job, spec: &Spec) -> Option<serde_json::Value> {
    let t = transport::resolve(spec).ok()?;
    let mut d = t.device()?;
    if let Ok((buffers, completion)) = modes(job, spec, &t.capabilities()) {
        with_modes(&mut d, spec, buffers, completion);
    }
    Some(d)
}

fn with_modes(d: &mut serde_json::Value, spec: &Spec, b: BufferMode, c: CompletionMode) {
    d["spec"] = spec.to_string().into();
    d["buffers"] = b.name().into();
    d["completion"] = c.name().into();
}

/// The largest request and reply a job's link carries: a write's block
/// out and a tiny acknowledgement back, a read's tiny request and block
/// back.
fn sizes(job: &Job, caps: &transport::Capabilities) -> (usize, usize, usize) {
    let (reads, writes) = (job.rw.reads(), job.rw.writes());
    // A read asks with as little as the transport carries.
    let ask = usize::from(!caps.empty_messages);
    let bs = job.bs as usize;
    (
        ask,
        if writes { bs } else { ask.max(1) },
        if reads { bs } else { 1 },
    )
}

/// Whether the transport can carry the job at all (its modes, its block
/// size), checked without opening it: a block-size sweep leaves out the
/// sizes over the device's limit instead of failing at them.
pub fn check(job: &Job, spec: &Spec, timeout: Duration, exe: PathBuf) -> Result<()> {
    transport::guard::set_default_bound(timeout);
    let t = transport::resolve(spec)?;
    let caps = t.capabilities();
    let (buffers, completion) = modes(job, spec, &caps)?;
    let (_, max_request, max_reply) = sizes(job, &caps);
    transport::check(
        t,
        &LinkConfig {
            spec: spec.clone(),
            buffers,
            completion,
            max_request,
            max_reply,
            responder_cpu: None,
            timeout,
            exe,
        },
    )
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
    /// `blocks`: how many blocks the job moves, if known (not time-based).
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
        let (reads, writes) = (job.rw.reads(), job.rw.writes());
        if job.rw.trims() || !(reads || writes) {
            return Err(Error::usage(format!(
                "job {}: a transport stream reads (rw=read: the far end sends, device to host) or writes (rw=write: host to device), or mixes both (rw=rw/randrw); rw={} has no meaning over a link",
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
        let (buffers, completion) = modes(job, &spec, &caps)?;
        // Both ends on cores of their own, as the other experiments place
        // them: a spinning initiator and a spinning device worker sharing a
        // core measure the scheduler. A job's cpus_allowed pins it already;
        // numjobs clones take the next pairs of CPUs.
        let (placed, responder_cpu) = match &job.cpus_allowed {
            Some(_) => (String::new(), None),
            None => {
                let cpus = crate::measure::placement::allowed_cpus();
                let k = 2 * job.clone as usize;
                match cpus.len() {
                    n if n >= 2 => {
                        let (a, b) = (cpus[k % n], cpus[(k + 1) % n]);
                        crate::measure::placement::pin_current(a)?;
                        (
                            format!(", initiator on cpu {a}, responder on cpu {b}"),
                            Some(b),
                        )
                    }
                    _ => (String::new(), None),
                }
            }
        };
        let (ask, max_request, max_reply) = sizes(job, &caps);
        let bs = job.bs as usize;
        let cfg = LinkConfig {
            spec: spec.clone(),
            buffers,
            completion,
            max_request,
            max_reply,
            responder_cpu,
            timeout,
            exe,
        };
        transport::check(t, &cfg)?;
        let link = t.open(&cfg)?;
        let window = depth as u32;
        let write = ReplyShape {
            request_len: bs,
            reply_len: 1,
            pattern: Pattern::Stream,
            window,
            ..ReplyShape::default()
        };
        let read = ReplyShape {
            request_len: ask,
            reply_len: bs,
            pattern: Pattern::Bidir,
            window,
            ..ReplyShape::default()
        };
        let far = if caps.responder == "device" {
            "device"
        } else {
            "responder"
        };
        let ways = match (reads, writes) {
            (true, true) => format!(
                "reads ({far} to host) and writes (host to {far}), {}% reads",
                job.rwmixread
            ),
            (true, false) => {
                format!("reads ({far} to host: {ask}-byte requests, {bs}-byte replies)")
            }
            _ => format!("writes (host to {far}, one acknowledgement per window)"),
        };
        Ok(LinkEngine {
            link: Some(link),
            write,
            read,
            current: None,
            batch_left: 0,
            blocks_left: blocks.filter(|_| !(reads && writes)),
            mixed: reads && writes,
            queued: Vec::with_capacity(depth),
            completion,
            detail: format!(
                "{spec}: {ways}, {} buffers, {} completion, up to {depth} block(s) in flight{placed}",
                buffers.name(),
                completion.name()
            ),
            spec,
            buffers,
            closed: None,
        })
    }

    fn link(&mut self) -> Result<&mut Box<dyn Link>> {
        self.link
            .as_mut()
            .ok_or_else(|| Error::run("transport link already closed"))
    }

    /// Runs the exchanges the responder still expects in this batch.
    fn finish_batch(&mut self) -> Result<()> {
        while self.batch_left > 0 {
            self.link()?.exchange()?;
            self.batch_left -= 1;
        }
        Ok(())
    }

    /// Moves one window of `n` blocks in direction `dir`, configuring the
    /// link when the window's shape changes.
    fn window(&mut self, dir: Dir, n: u32) -> Result<()> {
        let shape = if dir == Dir::Read {
            &mut self.read
        } else {
            &mut self.write
        };
        if (self.current != Some(dir) || n != shape.window) && self.batch_left > 0 {
            self.finish_batch()?;
        }
        if self.batch_left == 0 {
            // Size-based one-way jobs are planned exactly: all full windows
            // in one batch, then the tail's shorter window; a time-based
            // job goes in batches and finishes the last one after its timed
            // span; a mix configures each window (its direction is drawn
            // per block).
            let shape = if dir == Dir::Read {
                &mut self.read
            } else {
                &mut self.write
            };
            shape.window = n;
            shape.exchanges = match (self.mixed, self.blocks_left) {
                (true, _) => 1,
                (false, Some(b)) => (b / u64::from(n)).max(1),
                (false, None) => 1024,
            };
            self.batch_left = shape.exchanges;
            let shape = *shape;
            self.current = Some(dir);
            self.link()?.configure(&shape)?;
        }
        self.link()?.exchange()?;
        self.batch_left -= 1;
        if let Some(b) = &mut self.blocks_left {
            *b = b.saturating_sub(u64::from(n));
        }
        Ok(())
    }
}

impl Engine for LinkEngine {
    fn queue(&mut self, op: Op) -> Result<()> {
        self.queued.push(op);
        Ok(())
    }

    fn reap(
        &mut self,
        _min: usize,
        _max: usize,
        _timeout: Duration,
        out: &mut Vec<Done>,
    ) -> Result<()> {
        if self.queued.is_empty() {
            return Ok(());
        }
        // One window per direction among the queued blocks.
        for dir in [Dir::Write, Dir::Read] {
            let n = self.queued.iter().filter(|op| op.dir == dir).count() as u32;
            if n > 0 {
                self.window(dir, n)?;
            }
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

    fn completion(&self) -> Option<Completion> {
        Some(match self.completion {
            CompletionMode::Poll => Completion::Poll,
            CompletionMode::Block => Completion::Interrupt,
        })
    }

    fn device(&mut self) -> Option<serde_json::Value> {
        match self.link.as_mut() {
            Some(l) => {
                let mut d = l.counters()?;
                with_modes(&mut d, &self.spec, self.buffers, self.completion);
                Some(d)
            }
            None => self.closed.clone(),
        }
    }

    /// The batch's leftovers and the close are teardown, as they were when
    /// the link closed on drop: not in the job's runtime.
    fn close_untimed(&self) -> bool {
        true
    }

    /// Runs what the batch still owes, then closes the link once, keeping
    /// the device's last record; a close that fails is the job's error
    /// (and the device record's `close`), not something dropped.
    fn close(&mut self) -> Result<()> {
        let owed = self.finish_batch();
        let Some(mut link) = self.link.take() else {
            return owed;
        };
        self.closed = link.counters().map(|mut d| {
            with_modes(&mut d, &self.spec, self.buffers, self.completion);
            d
        });
        let closed = link.close();
        if let (Err(e), Some(d)) = (&closed, self.closed.as_mut()) {
            d["close"] = e.to_string().into();
        }
        owed.and(closed)
    }
}

impl Drop for LinkEngine {
    /// A job that ended without its close (an error before it): the link
    /// closes as it is dropped, its error said by the link's own drop.
    fn drop(&mut self) {
        if self.finish_batch().is_err() {
            return;
        }
        if let Some(l) = self.link.take()
            && let Err(e) = l.close()
        {
            eprintln!(
                "xferbench: warning: {}",
                crate::error::inert(&e.to_string())
            );
        }
    }
}
