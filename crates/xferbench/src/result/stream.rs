//! What `stream` records: fio's result model (the fio crate's jobs and
//! reporting groups) in a [`Run`], with what xferbench adds beside it — the
//! block-size sweep (`--bs` with several sizes), the job file's name and
//! `--repeat`'s merging.

pub use crate::fio::result::*;
use crate::measure::distribution::{Distribution, Figures, quantile};
use crate::measure::stats::Recorder;
use crate::result::{PointMeta, Repeatable, Run, merged_warnings};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

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
    /// The run's warnings that are notes: options accepted that change no
    /// figure. They are in `warnings` too; `xferbench fio` keeps them off
    /// stderr, where fio has nothing to say of them.
    #[serde(skip)]
    pub notes: Vec<String>,
    /// Block sizes of a sweep that a job's transport cannot carry (over a
    /// device's limit), each with the reason; the others are measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedSize>,
}

/// A block size of a sweep left out, and why.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SkippedSize {
    /// The block size, bytes.
    pub bs: u64,
    /// Why, in words (the job and the limit it is over).
    pub reason: String,
}

impl SkippedSize {
    /// The block size and why, in one line (the `Skipped:` list's).
    pub fn label(&self) -> String {
        format!("bs={}: {}", crate::units::format_size(self.bs), self.reason)
    }
}

fn global_unsaid(p: &Pairs<String>) -> bool {
    p.0.is_empty()
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
            notes: first.notes.clone(),
            skipped: first.skipped.clone(),
            disk_util: reps
                .iter()
                .rev()
                .find(|x| !x.disk_util.is_empty())
                .map(|x| x.disk_util.clone())
                .unwrap_or_default(),
        }
    }
}

/// The result of `xferbench stream`: one point per job run.
pub type StreamRun = Run<JobResult, StreamExtra>;

impl StreamRun {
    /// fio's output format the run was asked for in place of the JSON
    /// (`json+`, `terse`), as recorded in its options; `None` for
    /// xferbench's own formats.
    pub fn fio_output(&self) -> Option<crate::options::FioOutput> {
        use crate::options::FioOutput;
        match self.options["output_format"].as_str() {
            Some("json+") => Some(FioOutput::JsonPlus),
            Some("terse") => Some(FioOutput::Terse),
            _ => None,
        }
    }
}

/// One sweep row: all jobs of a block size, with their completion
/// latencies pooled in `merged`.
pub fn sweep_row(bs: u64, results: &[JobResult], merged: &Recorder) -> SweepRow {
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

/// `--repeat K`: a job's K runs as one. Each direction's I/Os pooled and
/// each repeat's figures kept in that direction's `repeats`
/// ([`DirStats::merge_repeats`]); `start_ns` and `end_ns` are the first
/// repeat's (each repeat counts from its own start).
impl Repeatable for JobResult {
    fn identity(&self) -> String {
        JobResult::identity(self)
    }

    fn figures(&self) -> Figures {
        JobResult::figures(self)
    }

    fn merge(reps: Vec<JobResult>) -> JobResult {
        let figures: Vec<Figures> = reps.iter().map(JobResult::figures).collect();
        let warnings = merged_warnings(reps.iter().map(|r| &r.warnings), &figures, "bw_bytes");
        JobResult::merge_repeats(reps, warnings)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::intervals::{Cut, Intervals};

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
            iomem: crate::fio::job::IoMem::Malloc,
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
            percentiles: Default::default(),
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
