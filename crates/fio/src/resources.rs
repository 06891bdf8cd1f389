//! What a set of jobs will take from the machine, checked before any job
//! starts: a thread per job against the user's task limit (RLIMIT_NPROC),
//! and memory — each job's latency histograms (one per direction per
//! interval) and I/O buffers — against what the machine has available. A
//! run that cannot fit is refused in one line instead of dying half-way,
//! OOM-killed with nothing written or panicking on a thread it cannot spawn.

use crate::engine::DIRS;
use crate::error::{Error, Result};
use crate::intervals::Cut;
use crate::job::Job;
use crate::measure::stats::Recorder;

/// Threads kept free for the rest of the run (coordinator, watchdog,
/// responders, the engines' own threads).
const SPARE_TASKS: u64 = 32;

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

/// Refuses a set of jobs that would not fit: `threads` started at once, and
/// `groups` of jobs running side by side (each a list of jobs).
pub fn check<'a>(threads: usize, groups: impl Iterator<Item = Vec<&'a Job>>) -> Result<()> {
    if let Some(limit) = task_limit() {
        let used = tasks_in_use();
        if used + threads as u64 + SPARE_TASKS > limit {
            return Err(Error::usage(format!(
                "the run starts {threads} job threads, but this user may run {limit} tasks (ulimit -u) and {used} are in use; lower numjobs, or raise the limit"
            )));
        }
    }
    let Some(available) = mem_available() else {
        return Ok(());
    };
    for jobs in groups {
        let need: u64 = jobs.iter().map(|j| job_bytes(j)).sum();
        // A margin for the rest of the process and the page cache it uses.
        if need > available / 10 * 9 {
            let per = need / jobs.len().max(1) as u64;
            return Err(Error::usage(format!(
                "{} jobs running together would hold about {} (about {} each: latency histograms and buffers), more than the {} this machine has available; lower numjobs, iodepth or bs, or split them with stonewall",
                jobs.len(),
                gib(need),
                mib(per),
                gib(available)
            )));
        }
    }
    Ok(())
}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
}

/// The soft RLIMIT_NPROC, if there is one.
fn task_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: r is a valid rlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut r) } != 0 {
        return None;
    }
    (r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
}

/// Tasks (threads) of this user's processes, what RLIMIT_NPROC counts.
fn tasks_in_use() -> u64 {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() }.to_string();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut n = 0;
    for e in dir.flatten() {
        if !e
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else {
            continue;
        };
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .map(str::trim)
                .unwrap_or_default()
                .to_string()
        };
        if field("Uid:").split_whitespace().next() == Some(uid.as_str()) {
            n += field("Threads:").parse::<u64>().unwrap_or(1);
        }
    }
    n
}

/// MemAvailable, bytes.
fn mem_available() -> Option<u64> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = m
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb * 1024)
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
}
