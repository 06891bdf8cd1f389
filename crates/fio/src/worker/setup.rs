//! Before the first I/O (fio's `thread_main` up to `do_io`): the thread's
//! CPUs and priority, the start delay, the engine and its buffers, the
//! files' regions and orders, and how much the job is to do.

use super::{
    Checking, Clock, End, Issued, Prepared, Progress, Queue, Shared, Totals, VerifyReport, Worker,
};
use crate::blocksizes::Extents;
use crate::engine::{self, Engine, IoMemory, Target};
use crate::error::{Error, Result};
use crate::files::{self, FileSet, Region};
use crate::intervals::{Cut, Intervals};
use crate::job::{IoEngine, Job};
use crate::offsets::Offsets;
use crate::payload::splitmix;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

impl<'a> Worker<'a> {
    /// Readies the thread and opens the job's engine: everything the loop
    /// needs, so that its clock starts on the first I/O.
    pub(super) fn open(
        p: &'a Prepared,
        shared: &'a Shared,
        prog: &'a Progress,
        stop: &'a AtomicBool,
    ) -> Result<Worker<'a>> {
        let job = &p.job;
        place_thread(job)?;
        start_delay(job, shared, prog, stop)?;
        let sync_engine = engine::one_at_a_time(job.ioengine);
        // An offloaded synchronous job has a submitting thread per slot.
        let depth = if sync_engine && !engine::pooled(job) {
            1
        } else {
            job.iodepth.max(1) as usize
        };
        let bs = job.max_bs() as usize;
        // The buffers before the engine, so that an engine failing here is
        // dropped first (an asynchronous one waits there for I/O still in
        // flight into them), as the worker's field order has it later.
        let mut mem = IoMemory::new(job.iomem, depth, bs)?;
        let (targets, mut eng) = open_engine(p, shared, depth)?;
        eng.register_memory(&mut mem)?;
        let acct = eng.accounting();
        let stamped = eng.stamps_completions();
        let submit = eng.submission();
        // fio times no slat where the I/O is done in the call (the sync
        // engines, vsync's commit).
        let measured_slat = !sync_engine && submit != engine::Submit::CommitUntimed;
        // randrepeat=0: a different random order every run.
        let seed = if job.randrepeat {
            job.randseed
        } else {
            job.randseed ^ shared.t0.elapsed().as_nanos() as u64 ^ u64::from(std::process::id())
        };
        let files = file_set(p, &targets, seed)?;
        let mut content = crate::content::Content::new(job, files.total_size());
        if job.rw.writes() && job.verify.is_none() && !content.refill {
            // fio's default: buffers filled once (random bytes unless told).
            for s in 0..depth {
                content.fill(mem.slot(s, bs), s as u64);
            }
        }
        let spec = crate::verify::Spec::of(job);
        let extents = extents(job, &files, spec.is_some(), seed);
        let verify = spec.map(|spec| checking(job, spec, &files, extents.is_some()));
        let (totals, expected) = totals(job, &files);
        let logs = crate::logs::JobLogs::open(&job.logs, &job.name, shared.timeout)
            .map_err(|e| Error::run_from(format!("job {}: its log files", job.name), e))?
            .map(Box::new);
        // Before the clock starts: its histograms are megabytes to allocate
        // and zero (some 20 ms on a small VM), not part of the job's time.
        let intervals = Intervals::new(Cut::new(job.time_based, job.runtime, expected));
        let start = Instant::now();
        Ok(Worker {
            p,
            job,
            shared,
            prog,
            stop,
            began: shared.ending.begin(),
            eng,
            targets,
            mem,
            sync_engine,
            stamped,
            acct,
            region: (files.start(0), files.total_size()),
            files,
            extents,
            verify,
            totals,
            issued: Issued {
                count: 0,
                bytes: 0,
                writes: 0,
                pair: (0, 0, 0),
                seen_pass: 0,
                think_done: 0,
                rng: job.randseed ^ 0xa5a5 ^ u64::from(job.clone),
            },
            queue: Queue {
                depth,
                bs,
                free: (0..depth).rev().collect(),
                flights: vec![None; depth],
                done: Vec::with_capacity(depth),
                inflight: 0,
                batches: job.batches(depth),
                submit,
                uncommitted: 0,
                fresh: Vec::with_capacity(depth),
                held: None,
            },
            since_fsync: 0,
            want_sync: false,
            end: End::default(),
            clock: Clock::new(job, shared, start),
            intervals,
            fio: {
                let (bw, iops) = job.sample_windows();
                crate::fiostats::FioStats::new(bw, iops, measured_slat)
            },
            bytes: [0; engine::DIRS],
            logs,
            content,
            // Joined last, so that its weight counts from its first I/O.
            flow: shared.flows.join(job.flow.id, job.flow.weight),
            prios: super::prio::Prios::new(job),
            tune: super::Tune {
                sched: super::tuning::Schedule::of(job, start),
                lat: super::tuning::LatTarget::of(job, depth, start),
                steady: super::tuning::SteadyState::of(job, start),
                quiesce: false,
            },
        })
    }
}

impl Clock {
    fn new(job: &Job, shared: &Shared, start: Instant) -> Clock {
        let ramp_end = start + job.ramp_time.unwrap_or_default();
        Clock {
            ramping: job.ramp_time.is_some_and(|r| !r.is_zero()),
            ramp_end,
            measure_start: start,
            measure_from_t0: start.duration_since(shared.t0).as_nanos() as u64,
            progress_bytes: 0,
            progress_ios: 0,
            ramp_ios: 0,
            deadline: job.runtime.map(|r| ramp_end + r),
            window: (start, 0),
            rate_from: (start, 0),
            next_due: start,
        }
    }
}

/// fio's `cpus_allowed` (with `cpus_allowed_policy=split`, each clone on
/// one CPU of the set) and its priorities, for this thread.
fn place_thread(job: &Job) -> Result<()> {
    if let Some(cpus) = &job.cpus_allowed {
        let mine = match cpus.len() {
            n if job.cpus_split && n > 0 => vec![cpus[job.clone as usize % n]],
            _ => cpus.clone(),
        };
        crate::measure::placement::pin_current_to(&mine)
            .map_err(|e| Error::usage_from(format!("job {}: cpus_allowed", job.name), e))?;
    }
    set_priority(job)
}

/// fio's startdelay, which counts from the start of the run, not of the job.
fn start_delay(job: &Job, shared: &Shared, prog: &Progress, stop: &AtomicBool) -> Result<()> {
    if let Some((lo, hi)) = job.startdelay {
        let mut s = job.randseed ^ u64::from(job.clone);
        let span = hi.saturating_sub(lo).as_nanos() as u64;
        let pick = lo + Duration::from_nanos(if span > 0 { splitmix(&mut s) % span } else { 0 });
        let now = Instant::now();
        prog.wait_while(shared.t0, now, shared.t0 + pick, || {
            stop.load(Ordering::Relaxed) || shared.ending.stops(job, u64::MAX)
        });
        if stop.load(Ordering::Relaxed) {
            return Err(Error::Interrupted);
        }
    }
    Ok(())
}

/// Each file's region and offset order, and which file each I/O goes to.
fn file_set(p: &Prepared, targets: &[Target], seed: u64) -> Result<FileSet> {
    let job = &p.job;
    let cap = pass_cap(job, targets.len());
    let regions = regions(p, targets);
    for r in &regions {
        Offsets::check(job, r.size).map_err(|m| Error::usage(format!("job {}: {m}", job.name)))?;
    }
    Ok(FileSet::new(job, regions, seed ^ u64::from(job.clone), cap))
}

/// Mixed block sizes: the generator that draws each I/O's length and place.
fn extents(job: &Job, files: &FileSet, verified: bool, seed: u64) -> Option<Extents> {
    job.bs_mix.clone().map(|mix| {
        // One file (the library's check of mixed sizes): its order and region.
        let plain = files.order(0).permutes();
        // A verified job's I/Os must not overlap: a later one would
        // overwrite data an earlier one's header vouches for.
        Extents::new(
            mix,
            files.regions()[0].size,
            job.rw.random(),
            plain,
            verified,
            job.blockalign.unwrap_or(0),
            seed ^ u64::from(job.clone),
        )
    })
}

/// The verify state of a job with `verify=`.
fn checking(job: &Job, spec: crate::verify::Spec, files: &FileSet, mixed: bool) -> Checking {
    let backlog = if job.rw.writes() && job.do_verify {
        job.verify_backlog
    } else {
        0
    };
    let tally = VerifyReport {
        kind: spec.kind.name(),
        backlog: Some(backlog).filter(|&n| n > 0),
        pattern: spec.pattern.as_ref().map(|p| p.text().to_string()),
        ..VerifyReport::default()
    };
    let both = job.rw.reads() && job.rw.writes();
    Checking {
        spec,
        tally,
        reads: job.do_verify && job.rw.reads() && !both,
        backlog,
        unchecked: Vec::new(),
        written: Vec::new(),
        log_writes: mixed && job.rw.writes() && job.do_verify && backlog == 0,
        // A mix logs each pass's writes instead (log_writes).
        rw_blocks: (both && !mixed && job.do_verify && backlog == 0).then(|| {
            let bs = job.bs.max(1);
            let blocks: u64 = files
                .regions()
                .iter()
                .map(|r| r.size.div_ceil(bs) + 1)
                .sum();
            Vec::with_capacity(2 * blocks.min(1 << 20) as usize)
        }),
        last_pass: 0,
        want_check: false,
    }
}

/// How much the job does, and the I/O count its intervals expect.
fn totals(job: &Job, files: &FileSet) -> (Totals, u64) {
    let per_block = if job.rw.trim_then_write() { 2 } else { 1 };
    let ios = if job.time_based {
        u64::MAX
    } else {
        files
            .pass_ios()
            .saturating_mul(u64::from(job.loops) * per_block)
    };
    // Mixed sizes: a sized job ends when it has moved its bytes (fio's
    // io_size), not after a count of I/Os.
    let (ios, bytes, expected) = match &job.bs_mix {
        Some(mix) if !job.time_based => {
            // trimwrite: each block's bytes are trimmed, then written.
            let bytes = files.total_size().saturating_mul(u64::from(job.loops));
            (
                u64::MAX,
                bytes.saturating_mul(per_block),
                (bytes as f64 / mix.mean(job.read_share())).ceil() as u64 * per_block,
            )
        }
        Some(_) => (u64::MAX, u64::MAX, u64::MAX),
        None => (ios, u64::MAX, ios),
    };
    let ios = job.number_ios.map_or(ios, |n| n.min(ios));
    let expected = job.number_ios.map_or(expected, |n| n.min(expected));
    (
        Totals {
            ios,
            bytes,
            per_block,
        },
        expected,
    )
}

/// The job's target and engine: a file or device opened for its engine, or a
/// transport link for `filename=xfer:…`.
fn open_engine(
    p: &Prepared,
    shared: &Shared,
    depth: usize,
) -> Result<(Vec<Target>, Box<dyn Engine>)> {
    let job = &p.job;
    if job.ioengine.file_op() {
        let e = engine::FileOps::open(job, &p.paths())?;
        return Ok((Vec::new(), Box::new(e)));
    }
    if job.ioengine == IoEngine::Exec {
        return Ok((Vec::new(), engine::Exec::open(job)?));
    }
    if job.ioengine == IoEngine::Cpuio {
        let e = engine::CpuIo::new(job, Arc::clone(&shared.io_left));
        return Ok((Vec::new(), Box::new(e)));
    }
    if job.ioengine == IoEngine::Null {
        if job.verify.is_some() {
            return Err(Error::usage(format!(
                "job {}: verify= checks data and the null engine moves none; drop verify= or pick a real engine",
                job.name
            )));
        }
        if null_size(job, 1) < job.bs && !job.time_based {
            return Err(Error::usage(format!(
                "job {}: the null engine needs size= (at least one block) or time_based with runtime=",
                job.name
            )));
        }
        let null = Box::new(engine::Null::new(depth));
        return Ok((Vec::new(), engine::faulted(null)));
    }
    if let Some(ep) = &p.net {
        let e = engine::Net::open(job, ep.clone(), shared.timeout)?;
        return Ok((Vec::new(), Box::new(e)));
    }
    Ok(match &p.transport {
        Some(spec) => {
            let size = job.size.unwrap_or(0);
            if size < job.bs && !job.time_based {
                return Err(Error::usage(format!(
                    "job {}: a transport stream needs size= (bytes to send, at least one block) or time_based with runtime=",
                    job.name
                )));
            }
            let blocks = (!job.time_based).then_some(size / job.bs);
            let e = engine::LinkEngine::open(
                job,
                spec.clone(),
                depth,
                blocks,
                shared.timeout,
                shared.exe.clone(),
            )?;
            (Vec::new(), Box::new(e))
        }
        None => {
            let paths = p.paths();
            let paths: Vec<&Path> = paths.iter().map(Path::new).collect();
            let t = Target::open_all(job, &paths, shared.allow_large_layout)?;
            let e = engine::open(job, &t, depth)?;
            (t, e)
        }
    })
}

/// What an engine that opens no file covers: `size=`, else (as fio) its
/// `files` of `filesize=` each.
fn null_size(job: &Job, files: usize) -> u64 {
    job.size
        .or(job.filesize.map(|f| f.saturating_mul(files.max(1) as u64)))
        .unwrap_or(0)
}

/// The job's files as regions for its [`FileSet`]: each target's, or for
/// an engine that opens none, the job's size (`null` with `nrfiles`
/// splits it among its files, as fio's null engine does).
fn regions(p: &Prepared, targets: &[Target]) -> Vec<Region> {
    let job = &p.job;
    if !targets.is_empty() {
        return targets
            .iter()
            .map(|t| Region {
                name: t.path.display().to_string(),
                offset: t.offset,
                size: t.size,
            })
            .collect();
    }
    let names = p.paths();
    let size = (null_size(job, names.len()) / job.bs).max(1) * job.bs;
    if job.ioengine != IoEngine::Null || names.len() < 2 {
        return vec![Region {
            name: p.path.clone(),
            offset: 0,
            size,
        }];
    }
    files::split_size(size, names.len() as u64, job.bs)
        .into_iter()
        .zip(names)
        .map(|(s, name)| Region {
            name,
            offset: 0,
            size: (s / job.bs).max(1) * job.bs,
        })
        .collect()
}

/// A `size=` cap on a pass over files each sized by `filesize=` (fio:
/// the files' sizes are the regions, `size=` the I/O), in I/Os.
fn pass_cap(job: &Job, files: usize) -> Option<u64> {
    let sized_by_filesize = (files > 1 || job.filesize_max.is_some()) && job.filesize.is_some();
    job.size
        .filter(|_| sized_by_filesize && job.size_pct.is_none())
        .map(|s| (s / job.bs).max(1))
}

/// fio's `nice=`, `prioclass=`, `prio=` for this worker thread.
fn set_priority(job: &Job) -> Result<()> {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::id_t;
    if let Some(n) = job.nice {
        // SAFETY: setpriority on our own thread (Linux: per thread).
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, n) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(Error::usage(format!(
                "job {}: nice={n}: {e} (a negative niceness needs root or CAP_SYS_NICE)",
                job.name
            ))
            .with_source(e));
        }
    }
    if job.ioprio.0.is_some() || job.ioprio.1.is_some() {
        // fio's defaults: no class is best-effort (2), the level 0.
        let (class, level) = (job.ioprio.0.unwrap_or(0), job.ioprio.1.unwrap_or(0));
        const IOPRIO_WHO_PROCESS: libc::c_long = 1;
        let value = libc::c_long::from(crate::job::cmdprio::ioprio_value(class, level));
        // SAFETY: ioprio_set on our own thread with a plain integer value.
        let r = unsafe {
            libc::syscall(
                libc::SYS_ioprio_set,
                IOPRIO_WHO_PROCESS,
                tid as libc::c_long,
                value,
            )
        };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            return Err(Error::usage(format!(
                "job {}: prioclass={class} prio={level}: {e} (the real-time class needs root)",
                job.name
            ))
            .with_source(e));
        }
    }
    Ok(())
}
