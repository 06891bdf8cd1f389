//! I/O engines for `stream`: each fills in [`Engine`], as each of fio's
//! engines fills in `ioengine_ops` — queue an I/O, reap completions. The
//! worker loop in `experiment::stream` knows nothing of syscalls or rings.

mod link;
mod memory;
mod mmap;
mod net;
mod null;
mod psync;
mod target;
mod uring;

pub use link::{LinkEngine, spec_of as transport_spec};
pub use memory::IoMemory;
pub use net::Net;
pub use null::Null;
pub use target::{Target, TargetKind};

use crate::error::Result;
use crate::stream::job::{Completion, IoEngine, Job};
use std::time::Duration;

/// Which way an I/O moves data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    Read,
    Write,
}

/// One I/O: `len` bytes between buffer slot `slot` and the target at `offset`.
#[derive(Clone, Copy, Debug)]
pub struct Op {
    pub dir: Dir,
    pub offset: u64,
    pub len: usize,
    pub slot: usize,
    /// Start of the slot's buffer (owned by the worker's [`IoMemory`], which
    /// outlives the engine's use of it).
    pub buf: *mut u8,
}

/// A finished I/O: bytes moved, or the errno it failed with.
#[derive(Clone, Copy, Debug)]
pub struct Done {
    pub slot: usize,
    pub res: std::result::Result<usize, i32>,
}

/// The narrow table every engine fills in.
pub trait Engine {
    /// Starts `op` (an engine without a queue performs it at once).
    fn queue(&mut self, op: Op) -> Result<()>;
    /// Waits until at least `min` I/Os have finished, or `timeout` passes
    /// with none finishing (an error naming the hang), and appends them.
    fn reap(&mut self, min: usize, timeout: Duration, out: &mut Vec<Done>) -> Result<()>;
    /// Makes written data durable (fsync / msync).
    fn sync(&mut self) -> Result<()>;
    /// How completions are awaited, for the report.
    fn completion_detail(&self) -> String;
    /// What the device behind the engine says of itself, if anything (a
    /// plugin's name and counters), for the job's record.
    fn device(&mut self) -> Option<serde_json::Value> {
        None
    }
    /// The peer ended the stream (a net receiver saw its sender close, a
    /// sender its receiver go): the I/O that found it moved less than asked
    /// and the job ends there, not failed.
    fn ended(&self) -> bool {
        false
    }
    /// Caveats the engine learned while running (datagrams lost, a stream
    /// cut short), for the job's warnings.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Opens the engine `job` names on `target`, for `depth` I/Os in flight.
pub fn open(job: &Job, target: &Target, depth: usize) -> Result<Box<dyn Engine>> {
    let poll = job.completion() == Completion::Poll;
    let eng: Box<dyn Engine> = match job.ioengine {
        IoEngine::Psync => Box::new(psync::Psync::new(target, poll)),
        IoEngine::IoUring => Box::new(uring::Uring::new(target, job, depth)?),
        IoEngine::Mmap => Box::new(mmap::Mmap::new(target, job)?),
        IoEngine::Transport | IoEngine::Null | IoEngine::Net | IoEngine::NetSplice => {
            return Err(crate::error::Error::usage(
                "the transport, null and net engines open no file",
            ));
        }
    };
    Ok(match hang_after_from_env() {
        Some(after) => Box::new(Hang {
            inner: eng,
            after,
            queued: 0,
        }),
        None => eng,
    })
}

/// `XFERBENCH_ENGINE_FAULT=hang-after:N` (for tests of the stall watchdog):
/// the engine's I/O after the N-th never completes, as a read of a device
/// that never answers would block in the kernel.
fn hang_after_from_env() -> Option<u64> {
    let v = std::env::var("XFERBENCH_ENGINE_FAULT").ok()?;
    let (kind, n) = v.split_once(':')?;
    (kind == "hang-after").then(|| n.parse().ok())?
}

/// An engine whose I/Os after the first `after` block forever in `queue`
/// (a synchronous engine stuck in a syscall); the rest goes to `inner`.
struct Hang {
    inner: Box<dyn Engine>,
    after: u64,
    queued: u64,
}

impl Engine for Hang {
    fn queue(&mut self, op: Op) -> Result<()> {
        if self.queued >= self.after {
            loop {
                std::thread::park();
            }
        }
        self.queued += 1;
        self.inner.queue(op)
    }
    fn reap(&mut self, min: usize, timeout: Duration, out: &mut Vec<Done>) -> Result<()> {
        self.inner.reap(min, timeout, out)
    }
    fn sync(&mut self) -> Result<()> {
        self.inner.sync()
    }
    fn completion_detail(&self) -> String {
        self.inner.completion_detail()
    }
    fn device(&mut self) -> Option<serde_json::Value> {
        self.inner.device()
    }
    fn ended(&self) -> bool {
        self.inner.ended()
    }
    fn warnings(&self) -> Vec<String> {
        self.inner.warnings()
    }
}

/// errno as text, for messages.
pub fn errno_text(e: i32) -> String {
    std::io::Error::from_raw_os_error(e).to_string()
}
