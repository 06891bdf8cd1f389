//! fio's `null` engine: every I/O completes at once and moves no data, so
//! a null job's rate is what xferbench itself costs per I/O — the worker
//! loop, the recorder, the clock — the floor under every other engine.

use super::{Done, Engine, Op, Submit};
use crate::error::Result;
use std::time::Duration;

/// I/Os queued and not yet submitted, and completions waiting to be reaped.
pub struct Null {
    staged: Vec<Done>,
    pending: Vec<Done>,
}

impl Null {
    pub fn new(depth: usize) -> Null {
        Null {
            staged: Vec::with_capacity(depth),
            pending: Vec::with_capacity(depth),
        }
    }
}

impl Engine for Null {
    fn queue(&mut self, op: Op) -> Result<()> {
        self.staged.push(Done {
            slot: op.slot,
            res: Ok(op.len),
        });
        Ok(())
    }

    /// Submitted in batches like a kernel queue's (fio's null engine has a
    /// commit step too), so that a null job shows the worker's queue
    /// discipline — its depths, submits and reaps — without a device.
    fn commit(&mut self) -> Result<()> {
        self.pending.append(&mut self.staged);
        Ok(())
    }

    fn submission(&self) -> Submit {
        Submit::Commit
    }

    fn reap(
        &mut self,
        _min: usize,
        max: usize,
        _timeout: Duration,
        out: &mut Vec<Done>,
    ) -> Result<()> {
        self.commit()?;
        let n = max.min(self.pending.len());
        out.extend(self.pending.drain(..n));
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn completion_detail(&self) -> String {
        "none: the null engine completes every I/O at once and moves no data".into()
    }
}
