//! fio's `null` engine: every I/O completes at once and moves no data, so
//! a null job's rate is what xferbench itself costs per I/O — the worker
//! loop, the recorder, the clock — the floor under every other engine.

use super::{Done, Engine, Op};
use crate::error::Result;
use std::time::Duration;

/// Completions waiting to be reaped.
pub struct Null {
    pending: Vec<Done>,
}

impl Null {
    pub fn new(depth: usize) -> Null {
        Null {
            pending: Vec::with_capacity(depth),
        }
    }
}

impl Engine for Null {
    fn queue(&mut self, op: Op) -> Result<()> {
        self.pending.push(Done {
            slot: op.slot,
            res: Ok(op.len),
        });
        Ok(())
    }

    fn reap(&mut self, _min: usize, _timeout: Duration, out: &mut Vec<Done>) -> Result<()> {
        out.append(&mut self.pending);
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn completion_detail(&self) -> String {
        "none: the null engine completes every I/O at once and moves no data".into()
    }
}
