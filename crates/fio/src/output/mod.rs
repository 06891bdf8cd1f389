//! fio's output formats, written from the fio crate's typed results
//! ([`crate::result`]): the normal text, JSON and json+, terse. The caller
//! (the xferbench library, or any program running jobs through this crate)
//! gathers a run's jobs and groups into a [`Report`] and adds its own views
//! after fio's.

pub mod json;
pub mod normal;
pub mod num;
pub mod terse;

use crate::result::{DiskUtil, GroupResult, JobResult, Pairs};
use std::time::SystemTime;

/// What fio's formats are written from: a run's jobs and reporting groups.
pub struct Report<'a> {
    /// Every job as it ran, in run order.
    pub jobs: &'a [JobResult],
    /// The reporting groups (per sweep block size when sweeping).
    pub groups: &'a [GroupResult],
    /// The block devices under the jobs' files.
    pub disk_util: &'a [DiskUtil],
    /// json+: keep fio's clat histograms (`clat_ns.bins`).
    pub plus: bool,
    /// The `[global]` section's options as written: fio's first lines
    /// read `thread` and `iodepth` from there as from a job's own section.
    pub global_options: &'a Pairs<String>,
    /// When the run began (the jobs' `start_ns`/`end_ns` count from it):
    /// the normal text dates its job blocks by when the last job ended,
    /// the moment fio would have printed them; without it, the moment of
    /// writing.
    pub started: Option<SystemTime>,
    /// The process the jobs ran in (they are its threads), for fio's
    /// `pid=`; `None` (printed as 0) when the text is written elsewhere,
    /// as from a saved run, since no run records its process.
    pub pid: Option<u32>,
}

impl Report<'_> {
    /// The jobs of group `g` (of its sweep point).
    pub fn members(&self, g: &GroupResult) -> Vec<&JobResult> {
        self.jobs
            .iter()
            .filter(|r| r.groupid == g.groupid && r.sweep_bs == g.sweep_bs)
            .collect()
    }
}
