//! Per-command priorities in the worker: each I/O's priority drawn from the
//! job's `cmdprio_*` options, and its latency recorded under that priority
//! (fio's `clat_prio` stats), beside the direction's own record.

use crate::engine::{self, Dir};
use crate::job::Job;
use crate::job::cmdprio::job_ioprio;
use crate::measure::stats::Recorder;

/// Each direction's latency per priority: (ioprio value, its I/Os), the
/// job's own priority first; empty for a direction whose I/Os all go with
/// the job's priority.
pub type PrioRecs = [Vec<(u16, Recorder)>; engine::DIRS];

/// The worker's priority state.
pub(super) struct Prios {
    /// The job's own priority (`prioclass`/`prio`; 0 when neither is
    /// given), which I/Os not drawn for a cmdprio priority carry.
    pub default: u16,
    rng: u64,
    pub recs: PrioRecs,
}

impl Prios {
    pub fn new(job: &Job) -> Prios {
        let default = job_ioprio(job);
        let per = |d: usize| {
            job.cmdprio
                .values(d, default)
                .into_iter()
                .map(|v| (v, Recorder::new()))
                .collect()
        };
        Prios {
            default,
            rng: job.randseed ^ 0x9e10_c0de ^ u64::from(job.clone),
            recs: [per(0), per(1), Vec::new()],
        }
    }

    /// The cmdprio priority of the next I/O, or None for the job's own.
    pub fn pick(&mut self, job: &Job, dir: Dir, len: u64) -> Option<u16> {
        match dir {
            Dir::Trim => None,
            d if self.recs[d as usize].is_empty() => None,
            d => job.cmdprio.pick(d as usize, len, &mut self.rng),
        }
    }

    /// Records a timed I/O's latency under its priority.
    pub fn record(&mut self, dir: usize, prio: u16, lat_ns: u64) {
        if let Some((_, r)) = self.recs[dir].iter_mut().find(|(p, _)| *p == prio) {
            r.record(lat_ns);
        }
    }
}
