//! What a set of jobs will take from the machine, checked before any job
//! starts: the threads of the jobs that run side by side (a thread per
//! job, and per I/O in flight for `io_submit_mode=offload`) against what
//! the machine allows ([`room::threads`]: `ulimit -u`, the kernel's
//! thread and pid limits, the cgroup's, address space for their stacks),
//! and memory — each job's latency histograms (one per direction per
//! interval) and I/O buffers — against what is left ([`room::memory`]:
//! `ulimit -v`, the cgroup's limit, what the machine has available). A run
//! that cannot fit is refused in one line instead of dying half-way,
//! OOM-killed or aborted on an allocation with nothing written, or
//! stopped on a thread it cannot start.

use crate::engine::DIRS;
use crate::error::{Error, Result};
use crate::intervals::Cut;
use crate::job::{IoEngine, Job};
use crate::measure::room;
use crate::measure::stats::Recorder;

/// Threads the run starts beside its jobs' (the coordinator's watch, the
/// guard's watchdog, the progress bar's): the process's own threads that
/// exist already are counted as in use.
const SPARE_TASKS: u64 = 4;

/// Memory one job holds while it runs, bytes: its histograms (a total and
/// one per interval, for each direction) and its buffers.
pub fn job_bytes(job: &Job) -> u64 {
    let ios = job.size.unwrap_or(0) / job.bs.max(1);
    let slots = Cut::new(job.time_based, job.runtime, ios).slots() as u64;
    // With fio's slat, lat and sync recorders beside them.
    let histograms = ((slots + 3) * DIRS as u64 + 1) * Recorder::heap_bytes();
    let buffers = u64::from(job.iodepth.max(1)).saturating_mul(job.max_bs());
    histograms.saturating_add(buffers)
}

/// Threads (and processes) one job starts: its own, a submitting thread
/// per I/O in flight when offloaded, and a transport's responder process
/// with the thread that watches it.
pub fn job_tasks(job: &Job) -> u64 {
    let pool = if crate::engine::pooled(job) {
        u64::from(job.iodepth)
    } else {
        0
    };
    let responder = if job.ioengine == IoEngine::Transport {
        2
    } else {
        0
    };
    1 + pool + responder
}

/// File descriptors one job holds: its files in service at once, its
/// engine's own (a ring, an event fd) and a transport's link.
pub fn job_descriptors(job: &Job) -> u64 {
    let files = u64::from(job.nrfiles.max(1));
    let open = job
        .openfiles
        .map_or(files, |o| files.min(u64::from(o.max(1))));
    let link = if job.ioengine == IoEngine::Transport {
        6
    } else {
        0
    };
    open + 2 + link
}

/// Descriptors the process opens beside its jobs' (its output, a log
/// file's spool, the progress bar's terminal).
const SPARE_FDS: u64 = 16;

/// Refuses a set of jobs that would not fit: `waves` are the jobs that
/// run side by side (one list each: the jobs between two stonewalls),
/// one wave after another.
pub fn check<'a>(waves: impl Iterator<Item = Vec<&'a Job>>) -> Result<()> {
    let waves: Vec<Vec<&Job>> = waves.collect();
    check_threads(&waves)?;
    if let Some(widest) = waves
        .iter()
        .map(|w| w.iter().map(|j| job_descriptors(j)).sum::<u64>())
        .max()
    {
        room::check_descriptors(
            widest + SPARE_FDS,
            "the jobs running together (their files, engines and links)",
            "lower numjobs or nrfiles (or set openfiles=)",
        )?;
    }
    let Some(room) = room::memory() else {
        return Ok(());
    };
    for jobs in &waves {
        let need: u64 = jobs.iter().map(|j| job_bytes(j)).sum();
        // A margin for the rest of the process and the page cache it uses.
        if need > room.left / 10 * 9 {
            let per = need / jobs.len().max(1) as u64;
            return Err(Error::usage(format!(
                "{} jobs running together would hold about {} (about {} each: latency histograms and buffers), but {}; lower numjobs, iodepth or bs, or split them with stonewall",
                jobs.len(),
                room::size(need),
                room::size(per),
                room.said
            )));
        }
    }
    Ok(())
}

/// The threads of the widest wave, against what the machine allows.
fn check_threads(waves: &[Vec<&Job>]) -> Result<()> {
    let Some(widest) = waves
        .iter()
        .max_by_key(|w| w.iter().map(|j| job_tasks(j)).sum::<u64>())
    else {
        return Ok(());
    };
    let jobs = widest.len() as u64;
    let all: u64 = widest.iter().map(|j| job_tasks(j)).sum();
    let submitting: u64 = widest
        .iter()
        .filter(|j| crate::engine::pooled(j))
        .map(|j| u64::from(j.iodepth))
        .sum();
    let mut parts = vec![format!(
        "{jobs} job thread{}",
        if jobs == 1 { "" } else { "s" }
    )];
    if submitting > 0 {
        parts.push(format!(
            "{submitting} submitting threads (io_submit_mode=offload: one per I/O in flight)"
        ));
    }
    let others = all - jobs - submitting;
    if others > 0 {
        parts.push(format!("{others} for the transports' responders"));
    }
    parts.push(format!("{SPARE_TASKS} of xferbench's own"));
    let fix = if submitting > jobs {
        "lower iodepth= (or use io_submit_mode=inline) or numjobs"
    } else {
        "lower numjobs, or split the jobs with stonewall"
    };
    room::check_threads(
        all + SPARE_TASKS,
        &format!("the run ({})", parts.join(", ")),
        fix,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_costs_its_histograms_and_buffers() {
        let job = Job {
            bs: 4096,
            size: Some(1 << 30),
            iodepth: 32,
            ..Job::default()
        };
        let b = job_bytes(&job);
        assert!(b > 32 * 4096, "{b}");
        // A time-based job keeps a histogram per interval and direction.
        assert!(b > 3 * Recorder::heap_bytes(), "{b}");
    }

    #[test]
    fn an_offloaded_job_counts_a_thread_per_io_in_flight() {
        let mut job = Job {
            iodepth: 64,
            ioengine: IoEngine::Psync,
            ..Job::default()
        };
        assert_eq!(job_tasks(&job), 1);
        job.tuning.offload = true;
        assert_eq!(job_tasks(&job), 65);
        // More than any machine allows: refused in one line, before any start.
        job.iodepth = u32::MAX;
        let e = check(std::iter::once(vec![&job])).unwrap_err().to_string();
        assert!(e.contains("submitting threads"), "{e}");
        assert_eq!(e.lines().count(), 1);
    }
}
