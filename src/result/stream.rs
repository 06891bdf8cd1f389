//! Stream results in fio's JSON shape: per-job figures, reporting groups, a block-size sweep.

use crate::measure::stats::Recorder;
use crate::result::{PointMeta, Run};
pub use crate::stream::engine::TargetKind;
pub use crate::stream::job::{Completion, IoEngine, Rw};
use serde::Serialize;
use std::collections::BTreeMap;

/// fio's default percentile list, the keys of `clat_ns.percentile`.
const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// Completion latency in fio's JSON shape.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Clat {
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    pub stddev: f64,
    #[serde(rename = "N")]
    pub n: u64,
    pub percentile: BTreeMap<String, u64>,
}

impl Clat {
    pub(crate) fn of(r: &Recorder) -> Clat {
        let s = r.summary();
        Clat {
            min: s.min_ns,
            max: s.max_ns,
            mean: s.mean_ns,
            stddev: s.stddev_ns,
            n: s.count,
            percentile: if s.count == 0 {
                BTreeMap::new()
            } else {
                PERCENTILES
                    .iter()
                    .map(|p| (format!("{p:.6}"), r.quantile(p / 100.0)))
                    .collect()
            },
        }
    }

    /// The value at percentile `p` (one of fio's list).
    pub fn at(&self, p: f64) -> u64 {
        self.percentile
            .get(&format!("{p:.6}"))
            .copied()
            .unwrap_or(0)
    }
}

/// One direction's figures, in fio's JSON shape (`bw` in KiB/s, `runtime`
/// in ms) plus exact nanoseconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DirStats {
    pub io_bytes: u64,
    pub io_kbytes: u64,
    pub bw_bytes: u64,
    pub bw: u64,
    pub iops: f64,
    pub runtime: u64,
    pub total_ios: u64,
    pub runtime_ns: u64,
    pub clat_ns: Clat,
}

impl DirStats {
    pub(crate) fn of(rec: &Recorder, bytes: u64, runtime_ns: u64) -> DirStats {
        let secs = runtime_ns as f64 / 1e9;
        let rate = |v: f64| if secs > 0.0 { v / secs } else { 0.0 };
        DirStats {
            io_bytes: bytes,
            io_kbytes: bytes / 1024,
            bw_bytes: rate(bytes as f64) as u64,
            bw: (rate(bytes as f64) / 1024.0) as u64,
            iops: rate(rec.count() as f64),
            runtime: runtime_ns.div_ceil(1_000_000),
            total_ios: rec.count(),
            runtime_ns,
            clat_ns: Clat::of(rec),
        }
    }
}

/// What a verify pass found.
#[derive(Clone, Debug, Serialize)]
pub struct VerifyReport {
    pub kind: &'static str,
    /// Blocks checked; `bad` of them failed.
    pub blocks: u64,
    pub bad: u64,
    /// The first bad block, described.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_bad: Option<String>,
    /// Seconds the separate read-back pass of a writer took (not in its bandwidth).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readback_s: Option<f64>,
    /// Files `verify_dump` wrote.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dumped: Vec<String>,
}

/// One job's result; serialises into fio's `jobs[]` shape plus xferbench's detail.
#[derive(Clone, Debug, Serialize)]
pub struct JobResult {
    pub jobname: String,
    pub groupid: u32,
    /// 0, or 1 when the job failed (fio's `error`); `error_text` says why.
    pub error: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_text: Option<String>,
    pub read: DirStats,
    pub write: DirStats,
    /// Sweep block size this job ran at, when `--bs` gave several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep_bs: Option<u64>,
    pub clone: u32,
    pub filename: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mapped_from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prepared: Option<String>,
    pub rw: Rw,
    pub bs: u64,
    pub offset: u64,
    pub size: u64,
    pub ioengine: IoEngine,
    pub iodepth: u32,
    pub direct: bool,
    pub iomem: crate::stream::job::IoMem,
    pub completion: Completion,
    pub completion_detail: String,
    /// What the device at the far end said of itself (a plugin through the
    /// transport engine: name, ABI, library, counters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<serde_json::Value>,
    /// Start and end of the timed span, ns from the start of the run.
    pub start_ns: u64,
    pub end_ns: u64,
    /// I/Os done during `ramp_time`, not recorded.
    pub ramp_ios: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyReport>,
    pub partial: bool,
    pub group_reporting: bool,
    pub warnings: Vec<String>,
}

impl JobResult {
    pub fn total_ios(&self) -> u64 {
        self.read.total_ios + self.write.total_ios
    }
}

impl PointMeta for JobResult {
    fn count(&self) -> u64 {
        self.total_ios()
    }
    fn warmup(&self) -> u64 {
        self.ramp_ios
    }
    fn partial(&self) -> bool {
        self.partial
    }
    fn warnings(&self) -> &[String] {
        &self.warnings
    }
    fn label(&self) -> String {
        format!("job {} ({})", self.jobname, self.filename)
    }
    fn sample_noun(&self) -> &'static str {
        "I/Os"
    }
}

/// A reporting group's aggregate, as fio's "Run status group" line.
#[derive(Clone, Debug, Serialize)]
pub struct GroupResult {
    pub groupid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep_bs: Option<u64>,
    /// Name of the group's first job (fio names a merged entry so).
    pub jobname: String,
    pub jobs: u32,
    pub group_reporting: bool,
    pub error: i32,
    pub read: GroupDir,
    pub write: GroupDir,
}

/// One direction of a group: aggregate bandwidth is all bytes over the
/// longest runtime; min and max are the jobs' own.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GroupDir {
    #[serde(flatten)]
    pub agg: DirStats,
    pub min_bw_bytes: u64,
    pub max_bw_bytes: u64,
    pub min_runtime: u64,
    pub max_runtime: u64,
}

/// One row of a block-size sweep: every job of that block size together.
#[derive(Clone, Debug, Serialize)]
pub struct SweepRow {
    pub bs: u64,
    pub jobs: u32,
    pub io_bytes: u64,
    pub ios: u64,
    /// From the first job's start to the last one's end.
    pub wall_ns: u64,
    pub bw_bytes: f64,
    pub iops: f64,
    pub clat_p50_ns: u64,
    pub clat_p99_ns: u64,
    pub errors: u32,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct StreamExtra {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_file: Option<String>,
    pub groups: Vec<GroupResult>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sweep: Vec<SweepRow>,
}

pub type StreamRun = Run<JobResult, StreamExtra>;
