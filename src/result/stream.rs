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
    /// Fastest I/O, ns (0 with no I/Os).
    pub min: u64,
    /// Slowest I/O, ns.
    pub max: u64,
    /// Mean, ns.
    pub mean: f64,
    /// Sample standard deviation, ns.
    pub stddev: f64,
    /// I/Os timed (fio's `N`).
    #[serde(rename = "N")]
    pub n: u64,
    /// ns at each of fio's percentiles, keyed as fio writes them
    /// (`"99.000000"`); empty with no I/Os.
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

    /// The value at percentile `p` (one of fio's list), ns; 0 when absent.
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
    /// Bytes moved this way in the timed span (after `ramp_time`).
    pub io_bytes: u64,
    /// `io_bytes` in KiB (1024 bytes), rounded down.
    pub io_kbytes: u64,
    /// Bandwidth, bytes per second, rounded down.
    pub bw_bytes: u64,
    /// Bandwidth, KiB (1024 bytes) per second, rounded down, as fio's `bw`.
    pub bw: u64,
    /// I/Os completed per second.
    pub iops: f64,
    /// The timed span, ms, rounded up (fio's `runtime`).
    pub runtime: u64,
    /// I/Os completed this way in the timed span.
    pub total_ios: u64,
    /// The timed span, ns: the rates' denominator.
    pub runtime_ns: u64,
    /// Latency of each I/O from queueing it to reaping its completion, ns.
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
    /// The checksum used: `xxhash` or `crc32c`.
    pub kind: &'static str,
    /// Blocks checked; `bad` of them failed.
    pub blocks: u64,
    /// Blocks whose contents did not match what was written.
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
    /// The job's section name (or `--name`, default "stream"); `numjobs`
    /// clones share it.
    pub jobname: String,
    /// Reporting group: starts at 0, one more at each `new_group` or `stonewall`.
    pub groupid: u32,
    /// 0, or 1 when the job failed (fio's `error`); `error_text` says why.
    pub error: i32,
    /// Why the job failed; omitted when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_text: Option<String>,
    /// Reads in the timed span.
    pub read: DirStats,
    /// Writes in the timed span.
    pub write: DirStats,
    /// Sweep block size this job ran at, when `--bs` gave several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep_bs: Option<u64>,
    /// Which of the job's `numjobs` copies this is, from 0.
    pub clone: u32,
    /// The target opened: a path (after `--map`), or `xfer:` and a transport spec.
    pub filename: String,
    /// The filename the job named, when `--map` replaced it; omitted otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mapped_from: Option<String>,
    /// What the target is; omitted for a transport.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetKind>,
    /// What was done to the file before the job ran (created, extended, laid
    /// out); omitted when nothing was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prepared: Option<String>,
    /// The I/O pattern (fio's `rw`).
    pub rw: Rw,
    /// Block size: bytes per I/O.
    pub bs: u64,
    /// Start of the job's region in the target, bytes.
    pub offset: u64,
    /// Length of the job's region, bytes (a whole number of blocks).
    pub size: u64,
    /// The engine the I/Os went through.
    pub ioengine: IoEngine,
    /// I/Os in flight at most (1 for the synchronous engines, whatever was asked).
    pub iodepth: u32,
    /// The target was opened with O_DIRECT (`direct=1`).
    pub direct: bool,
    /// Where the I/O buffers came from (fio's `iomem`).
    pub iomem: crate::stream::job::IoMem,
    /// How the worker waited for completions: interrupt (sleep) or poll (spin).
    pub completion: Completion,
    /// The engine's own account of how it waits, in words.
    pub completion_detail: String,
    /// What the device at the far end said of itself (a plugin through the
    /// transport engine: name, ABI, library, counters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<serde_json::Value>,
    /// Start and end of the timed span, ns from the start of the run.
    pub start_ns: u64,
    /// End of the timed span (after `end_fsync`, before any verify read-back),
    /// ns from the start of the run.
    pub end_ns: u64,
    /// I/Os done during `ramp_time`, not recorded.
    pub ramp_ios: u64,
    /// What verification found; omitted without `verify=`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyReport>,
    /// The run was stopped (Ctrl-C) before the job finished.
    pub partial: bool,
    /// The job asked for fio's `group_reporting`.
    pub group_reporting: bool,
    /// Caveats on this job's figures.
    pub warnings: Vec<String>,
}

impl JobResult {
    /// I/Os completed both ways in the timed span.
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
    /// The group's number (`groupid` of its jobs).
    pub groupid: u32,
    /// The sweep block size the group ran at, when `--bs` gave several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep_bs: Option<u64>,
    /// Name of the group's first job (fio names a merged entry so).
    pub jobname: String,
    /// Jobs in the group, clones included.
    pub jobs: u32,
    /// Some job of the group asked for `group_reporting`.
    pub group_reporting: bool,
    /// 1 when any job of the group failed, else 0.
    pub error: i32,
    /// The group's reads.
    pub read: GroupDir,
    /// The group's writes.
    pub write: GroupDir,
}

/// One direction of a group: aggregate bandwidth is all bytes over the
/// longest runtime; min and max are the jobs' own.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GroupDir {
    /// Every member's I/Os together, over the longest member's runtime
    /// (flattened into this object in JSON).
    #[serde(flatten)]
    pub agg: DirStats,
    /// The slowest member's bandwidth, bytes/s (members with no I/O this way
    /// left out; 0 when none has any).
    pub min_bw_bytes: u64,
    /// The fastest member's bandwidth, bytes/s.
    pub max_bw_bytes: u64,
    /// The shortest member's runtime, ms, rounded up.
    pub min_runtime: u64,
    /// The longest member's runtime, ms, rounded up.
    pub max_runtime: u64,
}

/// One row of a block-size sweep: every job of that block size together.
#[derive(Clone, Debug, Serialize)]
pub struct SweepRow {
    /// The block size, bytes.
    pub bs: u64,
    /// Jobs that ran at it, clones included.
    pub jobs: u32,
    /// Bytes moved by all of them, both ways.
    pub io_bytes: u64,
    /// I/Os completed by all of them, both ways.
    pub ios: u64,
    /// From the first job's start to the last one's end.
    pub wall_ns: u64,
    /// `io_bytes` over `wall_ns`, bytes per second.
    pub bw_bytes: f64,
    /// `ios` over `wall_ns`, per second.
    pub iops: f64,
    /// Median I/O latency over every job and both ways, ns.
    pub clat_p50_ns: u64,
    /// 99th percentile I/O latency over every job and both ways, ns.
    pub clat_p99_ns: u64,
    /// Jobs that failed.
    pub errors: u32,
}

/// What a stream run adds beside its jobs: the groups and the sweep.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StreamExtra {
    /// The job file run (`--job`); omitted when the job came from flags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_file: Option<String>,
    /// Each reporting group's aggregate (per block size when sweeping).
    pub groups: Vec<GroupResult>,
    /// One row per block size, when `--bs` gave several; omitted otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sweep: Vec<SweepRow>,
}

/// The result of `xferbench stream`: one point per job run.
pub type StreamRun = Run<JobResult, StreamExtra>;
