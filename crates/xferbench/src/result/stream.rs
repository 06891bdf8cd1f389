//! Stream results in fio's JSON shape: per-job figures, reporting groups, a block-size sweep.

use crate::measure::distribution::{
    Distribution, Figures, Spread, combine, latency_figures, quantile,
};
use crate::measure::stats::{Recorder, Summary};
use crate::result::fio_json::{Bins, DiskUtil, FioDir, FioJob, PERCENTILES, Pairs};
use crate::result::{PointMeta, Repeatable, Run, merged_warnings};
pub use crate::stream::engine::TargetKind;
pub use crate::stream::job::{Completion, IoEngine, Rw};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Completion latency in fio's JSON shape.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
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
    /// fio's histogram of the I/Os (json+ only: `--output-format=json+`
    /// writes it; plain json leaves it out): bucket value, ns, to count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bins: Option<Bins>,
}

impl Clat {
    pub(crate) fn of(r: &Recorder) -> Clat {
        Clat {
            bins: Bins::of(r),
            ..Clat::from(&r.summary(), |p| r.quantile(p / 100.0))
        }
    }

    /// Several parts' I/Os together: count, mean, stddev, min and max
    /// exactly from the parts', the percentiles from `merged` (their
    /// histograms added; without it, the median of the parts' own).
    pub fn pooled(parts: &[&Clat], merged: Option<&Histogram<u64>>) -> Clat {
        let summaries: Vec<Summary> = parts.iter().map(|c| c.summary()).collect();
        let s = combine(&summaries, merged);
        let with: Vec<&&Clat> = parts.iter().filter(|c| c.n > 0).collect();
        let bins = (!with.is_empty() && with.iter().all(|c| c.bins.is_some()))
            .then(|| Bins::sum(with.iter().filter_map(|c| c.bins.as_ref())));
        let pooled = Clat::from(&s, |p| match merged {
            Some(h) => quantile(h, p / 100.0, s.min_ns, s.max_ns),
            None => {
                let mut v: Vec<u64> = with.iter().map(|c| c.at(p)).collect();
                v.sort_unstable();
                v[v.len() / 2]
            }
        });
        Clat { bins, ..pooled }
    }

    /// A summary's moments, with fio's percentile list from `at` (percent
    /// in, ns out); no percentiles without samples.
    fn from(s: &Summary, at: impl Fn(f64) -> u64) -> Clat {
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
                    .map(|&p| (format!("{p:.6}"), at(p)))
                    .collect()
            },
            bins: None,
        }
    }

    /// The figures as a [`Summary`] (its percentiles from fio's list).
    pub fn summary(&self) -> Summary {
        Summary {
            count: self.n,
            mean_ns: self.mean,
            stddev_ns: self.stddev,
            min_ns: self.min,
            p50_ns: self.at(50.0),
            p90_ns: self.at(90.0),
            p99_ns: self.at(99.0),
            p999_ns: self.at(99.9),
            p9999_ns: self.at(99.99),
            max_ns: self.max,
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
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
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
    /// The latency split by I/O priority (`cmdprio_*`), as fio's `prios`:
    /// listed when two or more priorities have I/Os; omitted otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prios: Vec<PrioStats>,
    /// For comparisons, when this direction did I/O (flattened; nothing
    /// otherwise): `histogram`, every I/O's latency (ns); `blocks`, the
    /// figures of consecutive intervals of the timed span (`bw_bytes`,
    /// `iops`, and `count`, `mean_ns`, `p50_ns`, `p90_ns`, `p99_ns`,
    /// `p999_ns` of their I/Os' latency); `repeats`, the same figures of
    /// the whole span in each repeat (`--repeat K`).
    #[serde(flatten)]
    pub spread: Spread,
    /// fio's other keys of a direction: slat_ns, lat_ns, the bandwidth and
    /// IOPS samples (flattened).
    #[serde(flatten)]
    pub fio: FioDir,
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
            prios: Vec::new(),
            spread: Spread::default(),
            fio: FioDir::default(),
        }
    }

    /// These figures with the latency per priority from `recs` (fio's
    /// rule: only when two or more priorities have I/Os).
    pub(crate) fn with_prios(self, recs: &[(u16, Recorder)]) -> DirStats {
        let prios = if recs.iter().filter(|(_, r)| r.count() > 0).count() >= 2 {
            recs.iter()
                .filter(|(_, r)| r.count() > 0)
                .map(|(p, r)| PrioStats::of(*p, Clat::of(r)))
                .collect()
        } else {
            Vec::new()
        };
        DirStats { prios, ..self }
    }

    /// These figures with `spread` beside them.
    pub(crate) fn with(self, spread: Spread) -> DirStats {
        DirStats { spread, ..self }
    }

    /// These figures with fio's other keys beside them.
    pub(crate) fn with_fio(self, fio: FioDir) -> DirStats {
        DirStats { fio, ..self }
    }

    /// The headline figures, as one repeat or block has them: `bw_bytes`,
    /// `iops` and the latency figures of `clat_ns`.
    pub fn figures(&self) -> Figures {
        let secs = self.runtime_ns as f64 / 1e9;
        let rate = |v: f64| if secs > 0.0 { v / secs } else { 0.0 };
        let mut f = latency_figures(&self.clat_ns.summary());
        f.insert("bw_bytes", rate(self.io_bytes as f64));
        f.insert("iops", rate(self.total_ios as f64));
        f
    }

    /// Several parts' I/Os together over `runtime_ns`: bytes and I/Os
    /// summed, the rates from the totals, the latency pooled (percentiles
    /// from the parts' histograms added, which `spread.histogram` keeps).
    /// Parts with no I/O count for nothing; no blocks or repeats are kept.
    pub fn pooled(parts: &[&DirStats], runtime_ns: u64) -> DirStats {
        let with: Vec<&&DirStats> = parts.iter().filter(|d| d.total_ios > 0).collect();
        let histogram = if !with.is_empty() && with.iter().all(|d| d.spread.histogram.is_some()) {
            Distribution::merge(with.iter().filter_map(|d| d.spread.histogram.as_ref()))
        } else {
            None
        };
        let hist = histogram
            .as_ref()
            .and_then(|h| Distribution::decode(h.as_str()).ok());
        let bytes: u64 = with.iter().map(|d| d.io_bytes).sum();
        let ios: u64 = with.iter().map(|d| d.total_ios).sum();
        let secs = runtime_ns as f64 / 1e9;
        let rate = |v: f64| if secs > 0.0 { v / secs } else { 0.0 };
        let clats: Vec<&Clat> = with.iter().map(|d| &d.clat_ns).collect();
        DirStats {
            io_bytes: bytes,
            io_kbytes: bytes / 1024,
            bw_bytes: rate(bytes as f64) as u64,
            bw: (rate(bytes as f64) / 1024.0) as u64,
            iops: rate(ios as f64),
            runtime: runtime_ns.div_ceil(1_000_000),
            total_ios: ios,
            runtime_ns,
            clat_ns: Clat::pooled(&clats, hist.as_ref()),
            prios: PrioStats::pooled(&with),
            spread: Spread {
                histogram,
                ..Spread::default()
            },
            fio: FioDir::pooled(&with.iter().map(|d| &d.fio).collect::<Vec<_>>()),
        }
    }

    /// One direction measured K times (`--repeat`), in run order: I/Os,
    /// bytes and runtimes summed, the rates from the totals, latency from
    /// every I/O; `repeats` holds each repeat's [`figures`](Self::figures)
    /// (those that did I/O this way) and `blocks` every repeat's blocks.
    pub fn merge_repeats(parts: &[&DirStats]) -> DirStats {
        let runtime: u64 = parts.iter().map(|d| d.runtime_ns).sum();
        let mut merged = DirStats::pooled(parts, runtime);
        if merged.total_ios == 0 {
            return merged;
        }
        let with: Vec<&&DirStats> = parts.iter().filter(|d| d.total_ios > 0).collect();
        let figures = with.iter().map(|d| d.figures()).collect();
        let mut spread =
            Spread::of_repeats(with.iter().map(|d| d.spread.clone()).collect(), figures);
        spread.histogram = merged.spread.histogram.take();
        merged.spread = spread;
        merged
    }
}

/// One I/O priority's latency within a direction (an entry of fio's
/// `prios`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PrioStats {
    /// The priority class: 1 real-time, 2 best-effort, 3 idle (0: none
    /// set, the kernel's default).
    pub prioclass: u32,
    /// The level within the class, 0 (highest) to 7.
    pub prio: u32,
    /// The latency of the I/Os that went with this priority.
    pub clat_ns: Clat,
}

impl PrioStats {
    fn of(ioprio: u16, clat_ns: Clat) -> PrioStats {
        let (prioclass, prio) = crate::stream::job::cmdprio::class_level(ioprio);
        PrioStats {
            prioclass,
            prio,
            clat_ns,
        }
    }

    /// Several parts' priorities, each class/level's parts pooled
    /// (percentiles the median of the parts'), in first-seen order.
    fn pooled(parts: &[&&DirStats]) -> Vec<PrioStats> {
        let mut keys: Vec<(u32, u32)> = Vec::new();
        for p in parts.iter().flat_map(|d| &d.prios) {
            if !keys.contains(&(p.prioclass, p.prio)) {
                keys.push((p.prioclass, p.prio));
            }
        }
        keys.into_iter()
            .map(|(prioclass, prio)| {
                let same: Vec<&Clat> = parts
                    .iter()
                    .flat_map(|d| &d.prios)
                    .filter(|p| (p.prioclass, p.prio) == (prioclass, prio))
                    .map(|p| &p.clat_ns)
                    .collect();
                PrioStats {
                    prioclass,
                    prio,
                    clat_ns: Clat::pooled(&same, None),
                }
            })
            .collect()
    }
}

/// What a verify pass found.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VerifyReport {
    /// The `verify=` kind (`md5`, `xxhash`, `meta`, `pattern`…).
    #[serde(deserialize_with = "crate::words::de_interned")]
    pub kind: crate::words::Interned,
    /// Blocks checked; `bad` of them failed.
    pub blocks: u64,
    /// Blocks whose contents did not match what was written.
    pub bad: u64,
    /// The first bad block, described.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_bad: Option<String>,
    /// Seconds a writer spent reading back and checking: after its write
    /// phase (not in its bandwidth), or with `backlog` also during it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readback_s: Option<f64>,
    /// `verify_backlog=`: the writer checked every this many blocks, so
    /// part of `readback_s` lies inside its write figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog: Option<u64>,
    /// `verify_pattern=`, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Files `verify_dump` wrote.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dumped: Vec<String>,
}

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
    pub iomem: crate::stream::job::IoMem,
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
    /// fio's `steadystate` object, for a job with `ss=` and `ss_dur=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steadystate: Option<crate::stream::worker::tuning::SteadyReport>,
    /// fio's `latency_depth`, `latency_target`, `latency_percentile` and
    /// `latency_window` keys, for a job with `latency_target=`.
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub latency_target: Option<crate::stream::worker::tuning::LatencyReport>,
}

/// One file of a job with several.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FileResult {
    /// The path opened (after `--map`).
    pub filename: String,
    /// The name the job gave, when `--map` replaced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapped_from: Option<String>,
    /// Where the file's region starts, bytes.
    pub offset: u64,
    /// The region's length, bytes.
    pub size: u64,
    /// What was done to the file before the job ran, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepared: Option<String>,
    /// I/Os issued to this file (ramp included), as `file_service_type` chose.
    pub ios: u64,
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
}

/// `--repeat K`: a job's K runs as one. Each direction's I/Os pooled and
/// each repeat's figures kept in that direction's `repeats`
/// ([`DirStats::merge_repeats`]); `start_ns` and `end_ns` are the first
/// repeat's (each repeat counts from its own start).
impl Repeatable for JobResult {
    fn identity(&self) -> String {
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
    fn figures(&self) -> Figures {
        self.main_dir().figures()
    }

    fn merge(reps: Vec<JobResult>) -> JobResult {
        let figures: Vec<Figures> = reps.iter().map(Repeatable::figures).collect();
        let warnings = merged_warnings(reps.iter().map(|r| &r.warnings), &figures, "bw_bytes");
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
}

impl VerifyReport {
    /// Several repeats' checks as one: blocks and bad ones summed, the first
    /// bad block described, read-back times summed.
    fn merge<'a>(parts: impl Iterator<Item = &'a VerifyReport>) -> Option<VerifyReport> {
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
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GroupResult {
    /// The group's number (`groupid` of its jobs).
    pub groupid: u32,
    /// The sweep block size the group ran at, when `--bs` gave several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    /// The group's trims.
    pub trim: GroupDir,
}

/// One direction of a group: aggregate bandwidth is all bytes over the
/// longest runtime; min and max are the jobs' own.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
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
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SweepRow {
    /// The block size, bytes.
    pub bs: u64,
    /// Jobs that ran at it, clones included.
    pub jobs: u32,
    /// Bytes moved by all of them, every way (trims too).
    pub io_bytes: u64,
    /// I/Os completed by all of them, every way.
    pub ios: u64,
    /// From the first job's start to the last one's end.
    pub wall_ns: u64,
    /// `io_bytes` over `wall_ns`, bytes per second.
    pub bw_bytes: f64,
    /// `ios` over `wall_ns`, per second.
    pub iops: f64,
    /// Median I/O latency over every job and every way, ns.
    pub clat_p50_ns: u64,
    /// 99th percentile I/O latency over every job and every way, ns.
    pub clat_p99_ns: u64,
    /// Jobs that failed.
    pub errors: u32,
}

/// What a stream run adds beside its jobs: the groups and the sweep.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StreamExtra {
    /// The job file run (`--job`); omitted when the job came from flags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_file: Option<String>,
    /// Each reporting group's aggregate (per block size when sweeping).
    pub groups: Vec<GroupResult>,
    /// One row per block size, when `--bs` gave several; omitted otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweep: Vec<SweepRow>,
    /// The `[global]` section's options as written (fio's `global
    /// options`); omitted without one, as fio omits it.
    #[serde(
        rename = "global options",
        default,
        skip_serializing_if = "global_unsaid"
    )]
    pub global_options: Pairs<String>,
    /// The block devices under the jobs' files over the run (fio's
    /// `disk_util`); empty when no file is on a block device.
    #[serde(default)]
    pub disk_util: Vec<DiskUtil>,
}

fn global_unsaid(p: &Pairs<String>) -> bool {
    p.0.is_empty()
}

impl GroupDir {
    /// One direction of a group measured K times: the aggregate as a job's
    /// ([`DirStats::merge_repeats`]), the slowest and fastest member and
    /// the shortest and longest runtime over every repeat.
    fn merge_repeats(parts: &[&GroupDir]) -> GroupDir {
        let with: Vec<&&GroupDir> = parts.iter().filter(|g| g.agg.total_ios > 0).collect();
        GroupDir {
            agg: DirStats::merge_repeats(&parts.iter().map(|g| &g.agg).collect::<Vec<_>>()),
            min_bw_bytes: with.iter().map(|g| g.min_bw_bytes).min().unwrap_or(0),
            max_bw_bytes: with.iter().map(|g| g.max_bw_bytes).max().unwrap_or(0),
            min_runtime: with.iter().map(|g| g.min_runtime).min().unwrap_or(0),
            max_runtime: with.iter().map(|g| g.max_runtime).max().unwrap_or(0),
        }
    }
}

impl GroupResult {
    /// A group measured K times (at least one).
    fn merge_repeats(parts: &[&GroupResult]) -> GroupResult {
        let first = parts[0];
        let dir = |f: fn(&GroupResult) -> &GroupDir| {
            GroupDir::merge_repeats(&parts.iter().map(|g| f(g)).collect::<Vec<_>>())
        };
        GroupResult {
            group_reporting: parts.iter().any(|g| g.group_reporting),
            error: parts.iter().map(|g| g.error).max().unwrap_or(0),
            read: dir(|g| &g.read),
            write: dir(|g| &g.write),
            trim: dir(|g| &g.trim),
            ..first.clone()
        }
    }
}

impl SweepRow {
    /// A block size's row measured K times (at least one): bytes, I/Os and
    /// wall times summed, the rates from the totals, the latency
    /// percentiles from the histograms of `jobs` (the merged jobs) at that
    /// block size, else the median of the repeats'.
    fn merge_repeats(rows: &[&SweepRow], jobs: &[JobResult]) -> SweepRow {
        let first = rows[0];
        let io_bytes = rows.iter().map(|r| r.io_bytes).sum();
        let ios = rows.iter().map(|r| r.ios).sum();
        let wall_ns: u64 = rows.iter().map(|r| r.wall_ns).sum();
        let secs = wall_ns as f64 / 1e9;
        let rate = |v: u64| if secs > 0.0 { v as f64 / secs } else { 0.0 };
        let dirs: Vec<&DirStats> = jobs
            .iter()
            .filter(|j| j.sweep_bs == Some(first.bs))
            .flat_map(|j| [&j.read, &j.write, &j.trim])
            .filter(|d| d.total_ios > 0)
            .collect();
        let mut hist: Option<Histogram<u64>> = None;
        let mut whole = !dirs.is_empty();
        for d in &dirs {
            match d
                .spread
                .histogram
                .as_ref()
                .map(|h| Distribution::decode(h.as_str()))
            {
                Some(Ok(h)) => match &mut hist {
                    None => hist = Some(h),
                    Some(a) => whole &= a.add(&h).is_ok(),
                },
                _ => whole = false,
            }
        }
        let (min, max) = (
            dirs.iter().map(|d| d.clat_ns.min).min().unwrap_or(0),
            dirs.iter().map(|d| d.clat_ns.max).max().unwrap_or(0),
        );
        let q = |p: f64, own: fn(&SweepRow) -> u64| match (&hist, whole) {
            (Some(h), true) => quantile(h, p, min, max),
            _ => {
                let mut v: Vec<u64> = rows.iter().map(|r| own(r)).collect();
                v.sort_unstable();
                v[v.len() / 2]
            }
        };
        SweepRow {
            io_bytes,
            ios,
            wall_ns,
            bw_bytes: rate(io_bytes),
            iops: rate(ios),
            clat_p50_ns: q(0.5, |r| r.clat_p50_ns),
            clat_p99_ns: q(0.99, |r| r.clat_p99_ns),
            errors: rows.iter().map(|r| r.errors).max().unwrap_or(0),
            ..first.clone()
        }
    }
}

impl StreamExtra {
    /// The groups and sweep rows of K repeats (`--repeat`), in run order,
    /// as one, given the merged `jobs`: each group and row merged with its
    /// own in the other repeats (groups by number and block size, rows by
    /// block size).
    pub fn merge_repeats(reps: Vec<StreamExtra>, jobs: &[JobResult]) -> StreamExtra {
        let Some(first) = reps.first() else {
            return StreamExtra::default();
        };
        let groups = first
            .groups
            .iter()
            .map(|g| {
                let same: Vec<&GroupResult> = reps
                    .iter()
                    .flat_map(|x| &x.groups)
                    .filter(|o| o.groupid == g.groupid && o.sweep_bs == g.sweep_bs)
                    .collect();
                GroupResult::merge_repeats(&same)
            })
            .collect();
        let sweep = first
            .sweep
            .iter()
            .map(|row| {
                let same: Vec<&SweepRow> = reps
                    .iter()
                    .flat_map(|x| &x.sweep)
                    .filter(|o| o.bs == row.bs)
                    .collect();
                SweepRow::merge_repeats(&same, jobs)
            })
            .collect();
        StreamExtra {
            job_file: first.job_file.clone(),
            groups,
            sweep,
            global_options: first.global_options.clone(),
            disk_util: reps
                .iter()
                .rev()
                .find(|x| !x.disk_util.is_empty())
                .map(|x| x.disk_util.clone())
                .unwrap_or_default(),
        }
    }
}

/// The buffers of a job read back from a file that leaves them out: fio's
/// own default.
fn unsaid_iomem() -> crate::stream::job::IoMem {
    crate::stream::job::IoMem::Malloc
}

/// The result of `xferbench stream`: one point per job run.
pub type StreamRun = Run<JobResult, StreamExtra>;

/// Reporting groups' aggregates, in group order: each job's figures
/// pooled with the latencies its worker recorded (`recs`, in job order).
pub fn groups(
    results: &[JobResult],
    recs: &[crate::stream::worker::Recorded],
    sweep_bs: Option<u64>,
) -> Vec<GroupResult> {
    let mut ids: Vec<u32> = results.iter().map(|r| r.groupid).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter()
        .map(|g| {
            let members: Vec<usize> = (0..results.len())
                .filter(|&i| results[i].groupid == g)
                .collect();
            let first = &results[members[0]];
            let timeline = crate::stream::intervals::Timeline::merge(
                &members
                    .iter()
                    .map(|&i| &recs[i].timeline)
                    .collect::<Vec<_>>(),
            );
            // fio splits a group's latency by priority where a member has
            // cmdprio_* or the members' own priorities differ.
            let split = members.iter().any(|&i| {
                recs[i].prios.iter().any(|p| !p.is_empty())
                    || recs[i].ioprio != recs[members[0]].ioprio
            });
            let dir = |d: usize| {
                let mut merged = Recorder::new();
                let mut prios: Vec<(u16, Recorder)> = Vec::new();
                let mut bytes = 0;
                let mut bws = Vec::new();
                let mut runs = Vec::new();
                let mut fios = Vec::new();
                for &i in &members {
                    let s = match d {
                        0 => &results[i].read,
                        1 => &results[i].write,
                        _ => &results[i].trim,
                    };
                    if s.total_ios == 0 {
                        continue;
                    }
                    merged.merge(&recs[i].recs[d]);
                    if split {
                        merge_prios(&mut prios, &recs[i], d);
                    }
                    fios.push(&recs[i].fio);
                    bytes += s.io_bytes;
                    bws.push(s.bw_bytes);
                    runs.push(s.runtime_ns);
                }
                let longest = runs.iter().copied().max().unwrap_or(0);
                let mut agg = DirStats::of(&merged, bytes, longest)
                    .with(timeline.spread(d, &merged))
                    .with_prios(&prios)
                    .with_fio(FioDir::group(&fios, d));
                agg.fio.set_agg(agg.bw_bytes);
                GroupDir {
                    agg,
                    min_bw_bytes: bws.iter().copied().min().unwrap_or(0),
                    max_bw_bytes: bws.iter().copied().max().unwrap_or(0),
                    min_runtime: runs.iter().copied().min().unwrap_or(0).div_ceil(1_000_000),
                    max_runtime: longest.div_ceil(1_000_000),
                }
            };
            GroupResult {
                groupid: g,
                sweep_bs,
                jobname: first.jobname.clone(),
                jobs: members.len() as u32,
                group_reporting: members.iter().any(|&i| results[i].group_reporting),
                error: members.iter().map(|&i| results[i].error).max().unwrap_or(0),
                read: dir(0),
                write: dir(1),
                trim: dir(2),
            }
        })
        .collect()
}

/// Adds a member's latency per priority to a group's; a member without
/// cmdprio_* counts all its I/Os under its own priority, as fio does.
fn merge_prios(into: &mut Vec<(u16, Recorder)>, rec: &crate::stream::worker::Recorded, d: usize) {
    let mut add = |p: u16, r: &Recorder| match into.iter_mut().find(|(q, _)| *q == p) {
        Some((_, m)) => m.merge(r),
        None => into.push((p, r.clone())),
    };
    if rec.prios[d].is_empty() {
        add(rec.ioprio, &rec.recs[d]);
    }
    for (p, r) in &rec.prios[d] {
        add(*p, r);
    }
}

/// Each job's `bw_agg`: its mean bandwidth sample as a share of its
/// reporting group's bandwidth that way, as fio gives it.
pub fn set_bw_agg(results: &mut [JobResult], groups: &[GroupResult]) {
    for r in results {
        let Some(g) = groups
            .iter()
            .find(|g| g.groupid == r.groupid && g.sweep_bs == r.sweep_bs)
        else {
            continue;
        };
        r.read.fio.set_agg(g.read.agg.bw_bytes);
        r.write.fio.set_agg(g.write.agg.bw_bytes);
        r.trim.fio.set_agg(g.trim.agg.bw_bytes);
    }
}

/// One sweep row: all jobs of a block size, their latencies pooled.
pub fn sweep_row(
    bs: u64,
    results: &[JobResult],
    recs: &[crate::stream::worker::Recorded],
) -> SweepRow {
    let mut merged = Recorder::new();
    for r in recs {
        for d in &r.recs {
            merged.merge(d);
        }
    }
    let io_bytes: u64 = results
        .iter()
        .map(|r| r.read.io_bytes + r.write.io_bytes + r.trim.io_bytes)
        .sum();
    let ios: u64 = results.iter().map(|r| r.total_ios()).sum();
    let start = results.iter().map(|r| r.start_ns).min().unwrap_or(0);
    let end = results.iter().map(|r| r.end_ns).max().unwrap_or(0);
    let wall_ns = end.saturating_sub(start);
    let secs = wall_ns as f64 / 1e9;
    SweepRow {
        bs,
        jobs: results.len() as u32,
        io_bytes,
        ios,
        wall_ns,
        bw_bytes: if secs > 0.0 {
            io_bytes as f64 / secs
        } else {
            0.0
        },
        iops: if secs > 0.0 { ios as f64 / secs } else { 0.0 },
        clat_p50_ns: merged.quantile(0.5),
        clat_p99_ns: merged.quantile(0.99),
        errors: results.iter().filter(|r| r.error != 0).count() as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::intervals::{Cut, Intervals};

    /// A read job of `ios` I/Os of 4 KiB, one every `gap_ns`, each taking
    /// `lat_ns` (and one more slow one in the middle).
    fn job(ios: u64, gap_ns: u64, lat_ns: u64) -> JobResult {
        let mut iv = Intervals::new(Cut::new(false, None, ios));
        for i in 0..ios {
            let slow = if i == ios / 2 { 50 * lat_ns } else { 0 };
            iv.record(0, (i + 1) * gap_ns, lat_ns + slow + i % 7, 4096);
        }
        let runtime = ios * gap_ns;
        let t = iv.finish(runtime);
        let (r, w, tr) = (t.total(0), t.total(1), t.total(2));
        JobResult {
            jobname: "j".into(),
            groupid: 0,
            error: 0,
            error_text: None,
            read: DirStats::of(&r, ios * 4096, runtime).with(t.spread(0, &r)),
            write: DirStats::of(&w, 0, runtime).with(t.spread(1, &w)),
            trim: DirStats::of(&tr, 0, runtime).with(t.spread(2, &tr)),
            sweep_bs: None,
            clone: 0,
            filename: "/tmp/f".into(),
            mapped_from: None,
            target: None,
            prepared: None,
            files: Vec::new(),
            file_service_type: None,
            rw: Rw::Read,
            bs: 4096,
            bs_mix: None,
            offset: 0,
            size: ios * 4096,
            ioengine: IoEngine::Psync,
            iodepth: 1,
            rate: None,
            direct: false,
            iomem: crate::stream::job::IoMem::Malloc,
            completion: Completion::Interrupt,
            completion_detail: String::new(),
            device: None,
            start_ns: 0,
            end_ns: runtime,
            ramp_ios: 0,
            verify: None,
            partial: false,
            group_reporting: false,
            warnings: vec![],
            fio: FioJob::default(),
            line: 3,
            steadystate: None,
            latency_target: None,
        }
    }

    fn decoded_count(d: &DirStats) -> u64 {
        let h = d.spread.histogram.as_ref().expect("a histogram");
        Distribution::decode(h.as_str()).unwrap().len()
    }

    #[test]
    fn a_direction_keeps_its_histogram_and_blocks_that_add_up_to_it() {
        let j = job(200, 10_000, 3_000);
        let r = &j.read;
        assert_eq!(decoded_count(r), r.total_ios);
        assert_eq!(r.spread.blocks.len(), crate::measure::distribution::BLOCKS);
        let mut bytes = 0.0;
        let mut ios = 0.0;
        for b in &r.spread.blocks {
            let keys: Vec<&str> = b.keys().copied().collect();
            assert_eq!(
                keys,
                [
                    "bw_bytes", "count", "iops", "mean_ns", "p50_ns", "p90_ns", "p999_ns", "p99_ns"
                ]
            );
            assert!(b["p50_ns"] >= 3_000.0 && b["p50_ns"] <= 3_010.0, "{b:?}");
            // A block's bytes: its rate times its length (count / iops).
            bytes += b["bw_bytes"] * b["count"] / b["iops"];
            ios += b["count"];
        }
        assert!((bytes - r.io_bytes as f64).abs() < 1.0, "{bytes}");
        assert_eq!(ios, r.total_ios as f64);
        // The slow I/O shows in its block's mean only.
        let means: Vec<f64> = r.spread.blocks.iter().map(|b| b["mean_ns"]).collect();
        assert!(means[5] > 2.0 * means[0], "{means:?}");
        // No writes: nothing beside fio's figures.
        let w = serde_json::to_value(&j.write).unwrap();
        for k in ["histogram", "intervals", "repeats"] {
            assert!(w.get(k).is_none(), "{k} in {w}");
        }
        let v = serde_json::to_value(&j.read).unwrap();
        assert!(v["histogram"].is_string() && v["intervals"].is_array());
    }

    #[test]
    fn two_repeats_merge_into_one_job_keeping_each_repeats_figures() {
        let (a, b) = (job(200, 10_000, 3_000), job(100, 40_000, 6_000));
        assert_eq!(a.identity(), b.identity());
        let m = JobResult::merge(vec![a.clone(), b.clone()]);
        let r = &m.read;
        assert_eq!(r.total_ios, 300);
        assert_eq!(r.io_bytes, 300 * 4096);
        assert_eq!(r.runtime_ns, 200 * 10_000 + 100 * 40_000);
        assert_eq!(r.bw_bytes, (300.0 * 4096.0 / 6e-3) as u64);
        assert_eq!(decoded_count(r), 300);
        assert_eq!(r.clat_ns.n, 300);
        // Two thirds of the I/Os at ~3 µs: the pooled median is theirs,
        // the 90th percentile the slower repeat's.
        assert!(r.clat_ns.at(50.0) < 3_100 && r.clat_ns.at(90.0) >= 6_000);
        assert_eq!(r.spread.repeats.len(), 2);
        assert_eq!(r.spread.repeats[0], a.read.figures());
        assert!((r.spread.repeats[1]["bw_bytes"] - 4096.0 / 40e-6).abs() < 1e-3);
        assert_eq!(r.spread.blocks.len(), 20);
        // The write side did nothing in either repeat: still nothing.
        assert_eq!(m.write.total_ios, 0);
        assert!(m.write.spread.histogram.is_none() && m.write.spread.repeats.is_empty());
        // bw differs by 2×: said once, with the repeats' warnings.
        assert!(m.warnings.iter().any(|w| w.contains("bw_bytes varies")));
        // One run alone is itself.
        let one = JobResult::merge(vec![a.clone()]);
        assert_eq!(one.read.total_ios, 200);
        assert!(one.read.spread.repeats.is_empty());
        assert_eq!(one.read.spread.blocks.len(), 10);
    }

    #[test]
    fn groups_and_sweep_rows_merge_across_repeats() {
        let (a, b) = (job(200, 10_000, 3_000), job(100, 40_000, 6_000));
        let group = |j: &JobResult| GroupResult {
            groupid: 0,
            sweep_bs: Some(4096),
            jobname: "j".into(),
            jobs: 1,
            group_reporting: false,
            error: 0,
            read: GroupDir {
                agg: j.read.clone(),
                min_bw_bytes: j.read.bw_bytes,
                max_bw_bytes: j.read.bw_bytes,
                min_runtime: j.read.runtime,
                max_runtime: j.read.runtime,
            },
            write: GroupDir::default(),
            trim: GroupDir::default(),
        };
        let row = |j: &JobResult| SweepRow {
            bs: 4096,
            jobs: 1,
            io_bytes: j.read.io_bytes,
            ios: j.read.total_ios,
            wall_ns: j.read.runtime_ns,
            bw_bytes: j.read.bw_bytes as f64,
            iops: j.read.iops,
            clat_p50_ns: j.read.clat_ns.at(50.0),
            clat_p99_ns: j.read.clat_ns.at(99.0),
            errors: 0,
        };
        let extra = |j: &JobResult| StreamExtra {
            job_file: None,
            groups: vec![group(j)],
            sweep: vec![row(j)],
            ..StreamExtra::default()
        };
        let mut merged = JobResult::merge(vec![a.clone(), b.clone()]);
        merged.sweep_bs = Some(4096);
        let x = StreamExtra::merge_repeats(vec![extra(&a), extra(&b)], &[merged.clone()]);
        let g = &x.groups[0].read;
        assert_eq!(g.agg.total_ios, 300);
        assert_eq!(g.agg.spread.repeats.len(), 2);
        assert_eq!(
            (g.min_bw_bytes, g.max_bw_bytes),
            (b.read.bw_bytes, a.read.bw_bytes)
        );
        assert_eq!(x.groups[0].write.agg.total_ios, 0);
        let s = &x.sweep[0];
        assert_eq!((s.ios, s.wall_ns), (300, merged.read.runtime_ns));
        assert_eq!(s.clat_p50_ns, merged.read.clat_ns.at(50.0));
        assert_eq!(s.clat_p99_ns, merged.read.clat_ns.at(99.0));
    }
}
