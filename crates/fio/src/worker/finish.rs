//! The end of a job: its last sync and read-back, its files removed if
//! asked, and the account of what it did, with the caveats on its figures.

use super::{FileResult, JobRun, Prepared, Recorded, Snapshot, Worker};
use crate::engine::{self, Dir, Target};
use crate::files::FileSet;
use crate::job::{IoEngine, Job};
use crate::measure::stats::Recorder;
use std::time::Instant;

impl Worker<'_> {
    /// Ends the job (`end_fsync`, the writer's read-back, `exitall`,
    /// `unlink`) and gives its account.
    pub(super) fn finish(mut self) -> crate::error::Result<JobRun> {
        let job = self.job;
        if job.end_fsync && job.rw.writes() && self.end.failure.is_none() {
            self.eng.sync()?;
        }
        if self.end.broken {
            // I/Os still queued in a failed engine are lost, not measured.
            note_lost(&mut self.end.failure, self.queue.inflight);
        }
        // What failed while the job ran is its device's error; a failed
        // close is the device's `close`, kept by the engine.
        let measuring = self.end.failure.clone();
        let untimed = self.eng.close_untimed().then(Instant::now);
        let closed = self.eng.close();
        if super::engine_failed(closed, job, &mut self.end.failure)? {
            self.end.broken = true;
        }
        let end = untimed.unwrap_or_else(Instant::now);
        let runtime_ns = end.duration_since(self.clock.measure_start).as_nanos() as u64;
        self.final_check()?;
        self.fio.end_usage();
        if let Some(why) = self
            .verify
            .as_ref()
            .and_then(|v| super::verify::verify_failure(&v.tally, job, &self.p.shown()))
        {
            self.end.failure.get_or_insert(why);
        }
        self.shared.ending.end(job, self.end.failure.is_some());
        unlink(job, &self.targets);
        let mut run = self.into_run(end, runtime_ns);
        if let (Some(d), Some(why)) = (run.device.as_mut(), measuring) {
            d["error"] = why.into();
        }
        Ok(run)
    }

    /// A status report asked for the figures so far: a copy of what the
    /// job recorded up to `now`, left for the coordinator (a copy of the
    /// histograms, made only when asked, between two reaps).
    #[cold]
    pub(super) fn offer_snapshot(&mut self, now: Instant) {
        use std::sync::atomic::Ordering;
        self.prog.want_snapshot.store(false, Ordering::Relaxed);
        let runtime_ns = now
            .saturating_duration_since(self.clock.measure_start)
            .as_nanos() as u64;
        let timeline = self.intervals.clone().finish(runtime_ns);
        let recs = [timeline.total(0), timeline.total(1), timeline.total(2)];
        let mut fio = self.fio.clone();
        fio.end_usage();
        fio.finish(&recs);
        let t0 = self.shared.t0;
        let snap = Snapshot {
            bytes: self.bytes,
            runtime_ns,
            start_ns: self
                .clock
                .measure_start
                .saturating_duration_since(t0)
                .as_nanos() as u64,
            end_ns: now.saturating_duration_since(t0).as_nanos() as u64,
            recorded: Recorded {
                recs,
                timeline,
                prios: self.prios.recs.clone(),
                ioprio: self.prios.default,
                fio,
            },
        };
        *self.prog.snapshot.lock().unwrap_or_else(|e| e.into_inner()) = Some(snap);
    }

    fn into_run(mut self, end: Instant, runtime_ns: u64) -> JobRun {
        let job = self.job;
        let timeline = self.intervals.finish(runtime_ns);
        let recs = [timeline.total(0), timeline.total(1), timeline.total(2)];
        let mut fio = std::mem::take(&mut self.fio);
        fio.finish(&recs);
        let n: u64 = recs.iter().map(Recorder::count).sum();
        let failed = self.end.failure.is_some();
        let mut warnings = job_warnings(
            job,
            self.sync_engine,
            n,
            runtime_ns,
            self.end.partial,
            failed,
        );
        if self.end.filled {
            warnings.push(format!(
                "fill_device: the writes stopped at a full device or file system (ENOSPC) after {} bytes",
                self.bytes[Dir::Write as usize]
            ));
        }
        warnings.extend(self.eng.warnings());
        if let Some(mut l) = self.logs.take() {
            let stop = self.stop;
            warnings.extend(l.close(runtime_ns, &|| {
                stop.load(std::sync::atomic::Ordering::Relaxed)
            }));
        }
        let t0 = self.shared.t0;
        JobRun {
            failure: self.end.failure.take(),
            bytes: self.bytes,
            tuned: super::tuning::Tuned {
                steadystate: self.tune.steady.as_ref().map(|s| s.report()),
                latency: self.tune.lat.as_ref().map(|l| l.report()),
            },
            runtime_ns,
            target: self.targets.first().map(|t| t.kind),
            prepared: prepared_of(&self.targets),
            files: file_infos(self.p, &self.targets, &self.files),
            file_service_type: file_service_of(job, &self.files),
            offset: self.region.0,
            size: self.region.1,
            iodepth: self.queue.depth as u32,
            iomem: self.mem.kind(),
            completion: self.eng.completion().unwrap_or(job.completion()),
            completion_detail: self.eng.completion_detail(),
            device: self.eng.device(),
            start_ns: self.clock.measure_start.duration_since(t0).as_nanos() as u64,
            end_ns: end.duration_since(t0).as_nanos() as u64,
            ramp_ios: self.clock.ramp_ios,
            verify: self.verify.take().map(|v| v.tally),
            partial: self.end.partial,
            warnings,
            recorded: Recorded {
                recs,
                timeline,
                prios: std::mem::take(&mut self.prios.recs),
                ioprio: self.prios.default,
                fio,
            },
        }
    }
}

/// Says how many I/Os a failed engine still held.
fn note_lost(failure: &mut Option<String>, inflight: usize) {
    if let Some(f) = failure.as_mut()
        && inflight > 0
    {
        f.push_str(&format!(" ({inflight} I/O(s) in flight were lost)"));
    }
}

/// fio's `unlink`: the job's files removed once it is done with them.
fn unlink(job: &Job, targets: &[Target]) {
    for t in targets
        .iter()
        .filter(|t| job.unlink && t.kind == engine::TargetKind::File)
    {
        if let Err(e) = std::fs::remove_file(&t.path) {
            eprintln!(
                "xferbench: warning: job {}: unlink: cannot remove {}: {e}",
                job.name,
                t.path.display()
            );
        }
    }
}

/// What was done to the job's files before it ran: the one file's, or
/// the files' in one line when it was the same for each.
fn prepared_of(targets: &[Target]) -> Option<String> {
    match targets {
        [] => None,
        [t] => t.prepared.clone(),
        [first, rest @ ..] if rest.iter().all(|t| t.prepared == first.prepared) => first
            .prepared
            .as_ref()
            .map(|p| format!("each of the {} files: {p}", targets.len())),
        _ => Some("per file, in files[]".into()),
    }
}

/// Each file of a job with several: name, region, preparation and the
/// I/Os issued to it.
fn file_infos(p: &Prepared, targets: &[Target], files: &FileSet) -> Vec<FileResult> {
    if files.len() < 2 {
        return Vec::new();
    }
    files
        .regions()
        .iter()
        .enumerate()
        .map(|(i, r)| FileResult {
            filename: r.name.clone(),
            mapped_from: p.more.get(i).and_then(|m| m.1.clone()),
            offset: r.offset,
            size: r.size,
            prepared: targets.get(i).and_then(|t| t.prepared.clone()),
            ios: files.issued()[i],
        })
        .collect()
}

/// How a job with several files chose them, for its result.
fn file_service_of(job: &Job, files: &FileSet) -> Option<String> {
    (files.len() > 1).then(|| match job.openfiles {
        Some(m) if (m as usize) < files.len() => {
            format!("{}, openfiles={m}", job.file_service.text())
        }
        _ => job.file_service.text(),
    })
}

/// The caveats of a finished job: options that did nothing, and runs too
/// short for their figures to be trusted (not said of a failed job: its
/// error says more; an interrupted one is not told to raise size=).
fn job_warnings(
    job: &Job,
    sync_engine: bool,
    ios: u64,
    runtime_ns: u64,
    partial: bool,
    failed: bool,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if job.ioengine == IoEngine::Null && ios > 0 && runtime_ns > 0 {
        warnings.push(format!(
            "ioengine=null moves no data: its {:.0} ns per I/O is xferbench's own cost (worker loop, clock, recorder), the floor under every engine",
            runtime_ns as f64 / ios as f64
        ));
    }
    if sync_engine && job.iodepth > 1 && !crate::engine::pooled(job) {
        let fix = match job.ioengine {
            // fio's net engines are synchronous too: a socket is one stream.
            IoEngine::Net | IoEngine::NetSplice => {
                "as in fio, a socket carries one block at a time"
            }
            // Their calls share the file position: no pool of threads.
            IoEngine::Sync | IoEngine::Vsync if job.tuning.offload => {
                "with io_submit_mode=offload, ioengine=psync gets a submitting thread per iodepth"
            }
            _ => "use ioengine=io_uring for a queue",
        };
        warnings.push(format!(
            "iodepth={} has no effect with ioengine={} (one I/O at a time); {fix}",
            job.iodepth,
            job.ioengine.name()
        ));
    }
    if let Some(m) = job.openfiles.filter(|&m| m < job.nrfiles) {
        warnings.push(format!(
            "openfiles={m}: at most {m} of the {} files are served at once, in fio's order, but every file is opened before timing starts rather than opened and closed as the job goes",
            job.nrfiles
        ));
    }
    if job.verify_only {
        warnings.push(
            "verify_only: the writes were skipped; the figures are the reads that checked what an earlier run wrote".into(),
        );
    }
    if job.verify_backlog > 0 && job.rw.writes() && job.do_verify {
        warnings.push(format!(
            "verify_backlog={}: the write figures include the pauses to read back and check (verify.readback_s says how long)",
            job.verify_backlog
        ));
    }
    if failed || matches!(job.ioengine, IoEngine::Cpuio | IoEngine::Exec) {
        return warnings;
    }
    if ios < 100 && !partial {
        warnings.push(format!(
            "only {ios} I/Os: too few for stable bandwidth or tail latency; raise size= or use time_based with runtime="
        ));
    } else if runtime_ns < 100_000_000 {
        warnings.push(format!(
            "ran for {:.1} ms: startup and timer noise matter at this length; raise size= or use time_based",
            runtime_ns as f64 / 1e6
        ));
    }
    warnings
}
