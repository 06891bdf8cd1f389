//! A job's result from what its worker measured ([`JobResult::of`]), or
//! from what is known of a worker that never came back
//! ([`JobResult::abandoned`]).

use super::{DirStats, FioDir, FioJob, JobFacts, JobResult, LatPercentiles};
use crate::engine::Dir;
use crate::intervals::{Cut, Intervals};
use crate::measure::stats::Recorder;
use crate::worker::{JobRun, Prepared, Recorded, Snapshot};

impl JobResult {
    /// A finished job's result: its options (from `p`) beside what running
    /// it found, and what its reporting group pools (the latencies).
    pub fn of(p: &Prepared, run: JobRun) -> (JobResult, Recorded) {
        let job = &p.job;
        let JobRun {
            failure,
            bytes,
            tuned,
            runtime_ns,
            target,
            prepared,
            files,
            file_service_type,
            offset,
            size,
            iodepth,
            iomem,
            completion,
            completion_detail,
            device,
            start_ns,
            end_ns,
            ramp_ios,
            verify,
            partial,
            warnings,
            recorded,
        } = run;
        let percentiles = percentiles_of(job);
        let span = Span {
            bytes,
            runtime_ns,
            start_ns,
            end_ns,
            iodepth,
        };
        let ([read, write, trim], fio) = measured(job, &recorded, &span);
        let result = JobResult {
            jobname: job.name.clone(),
            groupid: job.group,
            error: i32::from(failure.is_some()),
            error_text: failure,
            read,
            write,
            trim,
            sweep_bs: None,
            clone: job.clone,
            filename: p.path.clone(),
            mapped_from: p.mapped_from.clone(),
            target,
            prepared,
            files,
            file_service_type,
            rw: job.rw,
            bs: job.bs,
            bs_mix: job.bs_mix.as_ref().map(|m| m.text()),
            offset,
            size,
            ioengine: job.ioengine,
            iodepth,
            rate: job.rate,
            direct: job.direct,
            iomem,
            completion,
            completion_detail,
            device,
            start_ns,
            end_ns,
            ramp_ios,
            verify,
            partial,
            group_reporting: job.group_reporting,
            warnings,
            fio,
            line: job.line,
            percentiles,
            steadystate: tuned.steadystate,
            latency_target: tuned.latency,
        };
        (result, recorded)
    }

    /// The result of a job whose worker was abandoned (a call that never
    /// returned), ended at `end_ns`: its options, the `moved` bytes it had
    /// reported (its latencies stayed with the stuck worker), and `why`.
    pub fn abandoned(p: &Prepared, moved: u64, end_ns: u64, why: String) -> (JobResult, Recorded) {
        let (mut r, rest) = JobResult::moved_only(p, moved, end_ns);
        (r.error, r.error_text) = (1, Some(why.clone()));
        r.device = p.transport.as_ref().and_then(|s| {
            let mut d = crate::engine::link_device(&p.job, s)?;
            d["counters"] = serde_json::Value::Null;
            d["state"] = "abandoned: a call into it did not return".into();
            d["error"] = why.clone().into();
            Some(d)
        });
        r.warnings = vec![format!(
            "the job was abandoned after moving {moved} bytes; its latencies stayed with its stuck worker"
        )];
        (r, rest)
    }

    /// The record of a job still running, for a status report
    /// (`--status-interval`): with the worker's `snapshot` of what it
    /// measured so far, every figure up to then (latencies included);
    /// without one (the worker has not reaped since it was asked), the
    /// `moved` bytes in `ran_ns` and the rates they make.
    pub fn running(
        p: &Prepared,
        snapshot: Option<Snapshot>,
        moved: u64,
        end_ns: u64,
        ran_ns: u64,
    ) -> (JobResult, Recorded) {
        let (mut r, rest) = match snapshot {
            Some(snap) => {
                let (mut r, _) = JobResult::moved_only(p, 0, snap.end_ns);
                let span = Span {
                    bytes: snap.bytes,
                    runtime_ns: snap.runtime_ns,
                    start_ns: snap.start_ns,
                    end_ns: snap.end_ns,
                    iodepth: p.job.iodepth.max(1),
                };
                let ([read, write, trim], fio) = measured(&p.job, &snap.recorded, &span);
                (r.read, r.write, r.trim, r.fio) = (read, write, trim, fio);
                (r.start_ns, r.percentiles) = (snap.start_ns, percentiles_of(&p.job));
                (r, snap.recorded)
            }
            None => {
                let (mut r, rest) = JobResult::moved_only(p, moved, end_ns);
                for d in [&mut r.read, &mut r.write, &mut r.trim] {
                    if d.io_bytes > 0 {
                        let ios = if p.job.bs_mix.is_none() {
                            d.io_bytes / p.job.bs.max(1)
                        } else {
                            0
                        };
                        *d = DirStats::of(&Recorder::new(), d.io_bytes, ran_ns);
                        d.total_ios = ios;
                        d.iops = ios as f64 * 1e9 / ran_ns.max(1) as f64;
                    }
                }
                (r, rest)
            }
        };
        r.warnings = vec!["still running: its figures are those of its timed span so far".into()];
        (r, rest)
    }

    /// A job's record with nothing but its options and the `moved` bytes
    /// (one way: a mixed job's split is with its worker), ended at
    /// `end_ns`, partial.
    fn moved_only(p: &Prepared, moved: u64, end_ns: u64) -> (JobResult, Recorded) {
        let job = &p.job;
        let timeline = Intervals::new(Cut::new(false, None, 1)).finish(0);
        let recs = [Recorder::new(), Recorder::new(), Recorder::new()];
        let empty = |r: &Recorder| DirStats::of(r, 0, 0);
        let mut dirs = [empty(&recs[0]), empty(&recs[1]), empty(&recs[2])];
        // Bytes by direction are with the worker; a one-way job's are all its.
        let only = match (job.rw.reads(), job.rw.writes()) {
            (true, false) => Some(Dir::Read),
            (false, true) => Some(Dir::Write),
            _ => None,
        };
        if let Some(d) = only {
            dirs[d as usize].io_bytes = moved;
        }
        let [read, write, trim] = dirs;
        let result = JobResult {
            jobname: job.name.clone(),
            groupid: job.group,
            error: 0,
            error_text: None,
            read,
            write,
            trim,
            sweep_bs: None,
            clone: job.clone,
            filename: p.path.clone(),
            mapped_from: p.mapped_from.clone(),
            target: None,
            prepared: None,
            files: Vec::new(),
            file_service_type: None,
            rw: job.rw,
            bs: job.bs,
            bs_mix: job.bs_mix.as_ref().map(|m| m.text()),
            offset: job.offset,
            size: job.size.unwrap_or(0),
            ioengine: job.ioengine,
            iodepth: job.iodepth.max(1),
            rate: job.rate,
            direct: job.direct,
            iomem: job.iomem,
            completion: job.completion(),
            completion_detail: String::new(),
            device: None,
            start_ns: 0,
            end_ns,
            ramp_ios: 0,
            verify: None,
            partial: true,
            group_reporting: job.group_reporting,
            warnings: Vec::new(),
            fio: FioJob::unmeasured(&job.given, job.iodepth.max(1)),
            line: job.line,
            percentiles: LatPercentiles::default(),
            steadystate: None,
            latency_target: None,
        };
        let rest = Recorded {
            recs,
            timeline,
            prios: Default::default(),
            ioprio: crate::job::cmdprio::job_ioprio(job),
            fio: Default::default(),
        };
        (result, rest)
    }
}

/// The timed span a job's figures cover.
struct Span {
    bytes: [u64; crate::engine::DIRS],
    runtime_ns: u64,
    start_ns: u64,
    end_ns: u64,
    iodepth: u32,
}

/// Which latencies `job` asked percentiles of.
fn percentiles_of(job: &crate::job::Job) -> LatPercentiles {
    LatPercentiles {
        slat: job.slat_percentiles,
        lat: job.lat_percentiles,
    }
}

/// A job's directions and fio's job-level keys from what it recorded over
/// `span`.
fn measured(job: &crate::job::Job, recorded: &Recorded, span: &Span) -> ([DirStats; 3], FioJob) {
    let (recs, timeline) = (&recorded.recs, &recorded.timeline);
    let pcts = percentiles_of(job);
    let dir = |d: usize| {
        DirStats::of(&recs[d], span.bytes[d], span.runtime_ns)
            .with(timeline.spread(d, &recs[d]))
            .with_prios(&recorded.prios[d])
            .with_fio(FioDir::of(&recorded.fio, d, pcts))
    };
    let fio = FioJob::of(
        &recorded.fio,
        &JobFacts {
            given: &job.given,
            runtime_ns: span.runtime_ns,
            start_ns: span.start_ns,
            end_ns: span.end_ns,
            iodepth: span.iodepth,
            clat: recs,
        },
    );
    ([dir(0), dir(1), dir(2)], fio)
}
