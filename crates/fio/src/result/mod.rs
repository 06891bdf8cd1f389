//! fio's result model: what a job, a reporting group and a run report, in
//! fio's JSON shape (`jobs[]`, `read`/`write`/`trim`, `clat_ns`, the depth
//! and latency maps, `disk_util`) with xferbench's detail beside fio's keys.
//! A job's worker ([`crate::worker`]) measures; [`JobResult::of`] turns
//! what it measured into this; [`groups`] pools a reporting group;
//! the `output` module writes fio's formats from these types. A program that
//! runs fio jobs through this crate gets typed results without the
//! xferbench library.

mod dir;
mod groups;
mod job;
mod keys;

pub use crate::engine::TargetKind;
pub use crate::job::{Completion, IoEngine, Rw};
pub use crate::worker::{FileResult, VerifyReport};
pub use dir::{Clat, DirStats, PrioStats};
pub use groups::{GroupDir, GroupResult, groups, set_bw_agg};
pub use keys::{
    Bins, DiskUtil, FioDir, FioJob, JobFacts, LatPercentiles, Moments, PERCENTILES, Pairs,
    SyncStats,
};

use crate::measure::distribution::Figures;
use serde::{Deserialize, Serialize};

/// One job's result; serialises into fio's `jobs[]` shape plus xferbench's detail.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JobResult {
    /// The job's section name (or `--name`, default "stream"); `numjobs`
    /// clones share it.
    pub jobname: String,
    /// Reporting group: starts at 0, one more at each `new_group` or `stonewall`.
    pub groupid: u32,
    /// 0, or 1 when the job failed (fio's `error`); `error_text` says why.
    pub error: i32,
    /// Why the job failed; omitted when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_text: Option<String>,
    /// Reads in the timed span.
    pub read: DirStats,
    /// Writes in the timed span.
    pub write: DirStats,
    /// Trims in the timed span (`rw=trim` and kin): fio's `trim` object,
    /// present for every job as in fio's JSON, all zeros without trims.
    #[serde(default)]
    pub trim: DirStats,
    /// Sweep block size this job ran at, when `--bs` gave several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_bs: Option<u64>,
    /// Which of the job's `numjobs` copies this is, from 0.
    pub clone: u32,
    /// The target opened: a path (after `--map`), or `xfer:` and a transport spec.
    pub filename: String,
    /// The filename the job named, when `--map` replaced it; omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapped_from: Option<String>,
    /// What the target is; omitted for a transport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetKind>,
    /// What was done to the file before the job ran (created, extended, laid
    /// out); omitted when nothing was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepared: Option<String>,
    /// Each file of a job with several (`nrfiles`, `filename=a:b`), in
    /// order; `filename`, `offset` and the like are then the first's, and
    /// `size` and the figures cover them all. Omitted for one file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileResult>,
    /// How the next file was chosen (fio's `file_service_type`, and
    /// `openfiles` when it limited them); omitted for one file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_service_type: Option<String>,
    /// The I/O pattern (fio's `rw`).
    pub rw: Rw,
    /// Block size: bytes per I/O (with mixed sizes, the smallest).
    pub bs: u64,
    /// Mixed block sizes (`bssplit`, `bsrange`, `bs=R,W`) as fio writes
    /// them, as in `4k/60:64k/40`; omitted when every I/O is `bs` long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bs_mix: Option<String>,
    /// Start of the job's region in the target, bytes.
    #[serde(default)]
    pub offset: u64,
    /// Length of the job's region, bytes (a whole number of blocks).
    #[serde(default)]
    pub size: u64,
    /// The engine the I/Os went through.
    pub ioengine: IoEngine,
    /// I/Os in flight at most (1 for the synchronous engines, whatever was asked).
    pub iodepth: u32,
    /// `rate=`: the cap on the job's bandwidth, bytes/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<u64>,
    /// The target was opened with O_DIRECT (`direct=1`).
    #[serde(default)]
    pub direct: bool,
    /// Where the I/O buffers came from (fio's `iomem`).
    #[serde(default = "unsaid_iomem")]
    pub iomem: crate::job::IoMem,
    /// How the worker waited for completions: interrupt (sleep) or poll (spin).
    pub completion: Completion,
    /// The engine's own account of how it waits, in words.
    #[serde(default)]
    pub completion_detail: String,
    /// What the device at the far end said of itself (a plugin through the
    /// transport engine: name, ABI, library, counters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<serde_json::Value>,
    /// Start and end of the timed span, ns from the start of the run (with
    /// `--repeat`, the first repeat's).
    #[serde(default)]
    pub start_ns: u64,
    /// End of the timed span (after `end_fsync`, before any verify read-back),
    /// ns from the start of the run.
    #[serde(default)]
    pub end_ns: u64,
    /// I/Os done during `ramp_time`, not recorded.
    #[serde(default)]
    pub ramp_ios: u64,
    /// What verification found; omitted without `verify=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyReport>,
    /// The run was stopped (Ctrl-C) before the job finished.
    #[serde(default)]
    pub partial: bool,
    /// The job asked for fio's `group_reporting`.
    #[serde(default)]
    pub group_reporting: bool,
    /// Caveats on this job's figures.
    pub warnings: Vec<String>,
    /// fio's other keys of a job: `job options`, CPU usage, the depth and
    /// latency maps (flattened).
    #[serde(flatten)]
    pub fio: FioJob,
    /// Line of the job's section in the job file (0 from flags): with the
    /// name, clone and block size, what tells the same job apart in every
    /// repeat.
    #[serde(skip)]
    pub line: usize,
    /// Which of `slat_ns` and `lat_ns` carry percentiles (the job's
    /// `slat_percentiles`, `lat_percentiles`): what its group's figures
    /// follow too.
    #[serde(skip)]
    pub percentiles: LatPercentiles,
    /// fio's `steadystate` object, for a job with `ss=` and `ss_dur=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steadystate: Option<crate::worker::tuning::SteadyReport>,
    /// fio's `latency_depth`, `latency_target`, `latency_percentile` and
    /// `latency_window` keys, for a job with `latency_target=`.
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub latency_target: Option<crate::worker::tuning::LatencyReport>,
}

/// Ends a run's jobs as fio ends its report, `run_ns` after the run
/// started: each job's `elapsed` and `eta` ([`FioJob::set_elapsed`]).
pub fn finish_run(jobs: &mut [JobResult], run_ns: u64) {
    for j in jobs {
        j.fio.set_elapsed(run_ns);
    }
}

impl JobResult {
    /// I/Os completed every way (reads, writes, trims) in the timed span.
    pub fn total_ios(&self) -> u64 {
        self.read.total_ios + self.write.total_ios + self.trim.total_ios
    }

    /// The direction that did more I/Os (reads when even; writes over
    /// trims when even, as a trimwrite job's are).
    pub fn main_dir(&self) -> &DirStats {
        let rw = if self.write.total_ios > self.read.total_ios {
            &self.write
        } else {
            &self.read
        };
        if self.trim.total_ios > rw.total_ios {
            &self.trim
        } else {
            rw
        }
    }

    /// One job from its K runs (`--repeat`), in run order (at least one):
    /// each direction's I/Os pooled and each repeat's figures kept in that
    /// direction's `repeats` ([`DirStats::merge_repeats`]); `start_ns` and
    /// `end_ns` are the first repeat's (each repeat counts from its own
    /// start); `warnings` are the merged job's (the caller's rule for
    /// run-to-run noise).
    pub fn merge_repeats(reps: Vec<JobResult>, warnings: Vec<String>) -> JobResult {
        let read = DirStats::merge_repeats(&reps.iter().map(|r| &r.read).collect::<Vec<_>>());
        let write = DirStats::merge_repeats(&reps.iter().map(|r| &r.write).collect::<Vec<_>>());
        let trim = DirStats::merge_repeats(&reps.iter().map(|r| &r.trim).collect::<Vec<_>>());
        let error = reps.iter().map(|r| r.error).max().unwrap_or(0);
        let error_text = reps.iter().find_map(|r| r.error_text.clone());
        let ramp_ios = reps.iter().map(|r| r.ramp_ios).sum();
        let partial = reps.iter().any(|r| r.partial);
        let verify = VerifyReport::merge(reps.iter().filter_map(|r| r.verify.as_ref()));
        let first = reps.into_iter().next().expect("at least one repeat");
        JobResult {
            error,
            error_text,
            read,
            write,
            trim,
            ramp_ios,
            verify,
            partial,
            warnings,
            ..first
        }
    }

    /// The job's identity across repeats: name, section line, clone and
    /// block size, on its file.
    pub fn identity(&self) -> String {
        format!(
            "job {} (line {}, clone {}, bs {}) on {}",
            self.jobname,
            self.line,
            self.clone,
            self.sweep_bs.unwrap_or(self.bs),
            self.filename
        )
    }

    /// The figures of the job's main direction ([`JobResult::main_dir`]).
    pub fn figures(&self) -> Figures {
        self.main_dir().figures()
    }
}

impl VerifyReport {
    /// Several repeats' checks as one: blocks and bad ones summed, the first
    /// bad block described, read-back times summed.
    pub fn merge<'a>(parts: impl Iterator<Item = &'a VerifyReport>) -> Option<VerifyReport> {
        let mut out: Option<VerifyReport> = None;
        for p in parts {
            match &mut out {
                None => out = Some(p.clone()),
                Some(o) => {
                    o.blocks += p.blocks;
                    o.bad += p.bad;
                    if o.first_bad.is_none() {
                        o.first_bad = p.first_bad.clone();
                    }
                    o.readback_s = match (o.readback_s, p.readback_s) {
                        (Some(a), Some(b)) => Some(a + b),
                        (a, b) => a.or(b),
                    };
                    for d in &p.dumped {
                        if !o.dumped.contains(d) {
                            o.dumped.push(d.clone());
                        }
                    }
                }
            }
        }
        out
    }
}

/// The buffers of a job read back from a file that leaves them out: fio's
/// own default.
fn unsaid_iomem() -> crate::job::IoMem {
    crate::job::IoMem::Malloc
}
