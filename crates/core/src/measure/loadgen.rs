//! Background load on chosen CPUs while a transfer path is measured, as
//! rk11perf runs its RK11 requests while the CPU waits, runs a cheap ALU
//! loop, the slowest instruction, or copies with maximal cache contention.
//! Each load counts its own operations, so a report can show it really ran.

use crate::error::{Error, Result};
use crate::words::{Word, word_enum};
use serde::Serialize;
use std::hint::black_box;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

word_enum! {
    /// What the background load runs on its CPUs (`--load`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "lowercase")]
    pub enum LoadMode {
        /// Nothing runs.
        Idle = "idle",
        /// Threads that sleep in a loop (the CPU idles, as on WAIT).
        Wait = "wait",
        /// A chain of dependent integer adds: busy, cheap, no memory traffic.
        Alu = "alu",
        /// A chain of dependent integer divisions: the slowest common instruction.
        Slow = "slow",
        /// Copies between buffers twice the last-level cache: maximal contention
        /// for caches and memory bandwidth.
        Memcopy = "memcopy",
    }
}

impl LoadMode {
    /// The word that names it on the command line and in results.
    pub fn name(self) -> &'static str {
        self.word()
    }

    /// What one counted operation is.
    pub fn unit(self) -> &'static str {
        match self {
            LoadMode::Idle => "none",
            LoadMode::Wait => "sleeps",
            LoadMode::Alu => "adds",
            LoadMode::Slow => "divisions",
            LoadMode::Memcopy => "bytes copied",
        }
    }
}

/// What a load did while it ran.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct LoadStats {
    /// The load mode's word (`alu`, `memcopy`…), or `cmd: ` and the command.
    pub load: String,
    /// Operations per second over all its threads (`unit` says what one is);
    /// null for `idle` and for an external command, which xferbench cannot count.
    pub ops_per_s: Option<f64>,
    /// What one operation is ("adds", "bytes copied"…; "not counted" for a command).
    #[serde(deserialize_with = "crate::words::de_interned")]
    pub unit: crate::words::Interned,
    /// CPUs the load's threads were pinned to (empty for a command).
    pub cpus: Vec<usize>,
    /// How long the load ran, from start to stop, seconds.
    pub seconds: f64,
}

/// A running load.
pub struct Background {
    name: String,
    mode: Option<LoadMode>,
    stop: Arc<AtomicBool>,
    ops: Arc<AtomicU64>,
    threads: Vec<JoinHandle<Result<()>>>,
    child: Option<Child>,
    cpus: Vec<usize>,
    started: Instant,
}

/// Work between two updates of the shared counter.
const BATCH: u64 = 1 << 16;

fn body(mode: LoadMode, stop: &AtomicBool, ops: &AtomicU64) {
    match mode {
        LoadMode::Idle => {}
        LoadMode::Wait => {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_micros(100));
                ops.fetch_add(1, Ordering::Relaxed);
            }
        }
        LoadMode::Alu => {
            let (mut x, mut y) = (black_box(1u64), black_box(3u64));
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..BATCH {
                    x = x.wrapping_add(y);
                    y = y.wrapping_add(x);
                }
                black_box((x, y));
                ops.fetch_add(2 * BATCH, Ordering::Relaxed);
            }
        }
        LoadMode::Slow => {
            let d = black_box(7u64);
            let mut x = black_box(u64::MAX - 12345);
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..BATCH / 64 {
                    // Each division waits for the one before.
                    x = (x / d) | (1 << 63);
                }
                black_box(x);
                ops.fetch_add(BATCH / 64, Ordering::Relaxed);
            }
        }
        LoadMode::Memcopy => {
            // Twice the last-level cache, so the copies reach memory; at
            // most 1 GiB (a VM may report its host's whole L3: 480 MiB seen).
            let half = (2 * crate::measure::placement::cache_bytes(0, None).unwrap_or(32 << 20))
                .clamp(8 << 20, 1 << 30);
            // Zeroed: mapped lazily, so copying starts at once and the first
            // pass's page faults are part of the load, not a silent delay.
            let mut a = vec![0u8; half];
            let mut b = vec![0u8; half];
            let chunk = 1 << 20;
            while !stop.load(Ordering::Relaxed) {
                for off in (0..half).step_by(chunk) {
                    let end = (off + chunk).min(half);
                    b[off..end].copy_from_slice(&a[off..end]);
                    ops.fetch_add((end - off) as u64, Ordering::Relaxed);
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                }
                std::mem::swap(&mut a, &mut b);
                black_box(&a);
            }
        }
    }
}

impl Background {
    /// Starts `mode` with one thread pinned on each of `cpus`.
    pub fn start(mode: LoadMode, cpus: &[usize]) -> Result<Background> {
        let stop = Arc::new(AtomicBool::new(false));
        let ops = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        if mode != LoadMode::Idle {
            for &cpu in cpus {
                let (stop, ops) = (stop.clone(), ops.clone());
                threads.push(
                    std::thread::Builder::new()
                        .name(format!("xb-load-{}", mode.name()))
                        .spawn(move || -> Result<()> {
                            crate::measure::placement::pin_current(cpu)?;
                            body(mode, &stop, &ops);
                            Ok(())
                        })
                        .map_err(|e| {
                            Error::run_from(format!("starting the {} load", mode.name()), e)
                        })?,
                );
            }
        }
        Ok(Background {
            name: mode.name().into(),
            mode: Some(mode),
            stop,
            ops,
            threads,
            child: None,
            cpus: cpus.to_vec(),
            started: Instant::now(),
        })
    }

    /// Starts `sh -c CMD` (e.g. stress-ng) as the load, in a process group
    /// of its own: on stop the whole group is killed, so the commands the
    /// shell started (`yes | cat`, stress-ng's workers) go with it.
    pub fn command(cmd: &str) -> Result<Background> {
        use std::os::unix::process::CommandExt;
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let child = crate::children::die_with_parent(&mut sh)
            .spawn()
            .map_err(|e| Error::usage_from(format!("--load-cmd '{cmd}' could not start"), e))?;
        crate::children::track(child.id());
        Ok(Background {
            name: format!("cmd: {cmd}"),
            mode: None,
            stop: Arc::new(AtomicBool::new(false)),
            ops: Arc::new(AtomicU64::new(0)),
            threads: Vec::new(),
            child: Some(child),
            cpus: Vec::new(),
            started: Instant::now(),
        })
    }

    /// Stops the load and reports its rate.
    pub fn stop(mut self) -> Result<LoadStats> {
        let seconds = self.started.elapsed().as_secs_f64();
        let ops = self.ops.load(Ordering::Relaxed);
        self.stop.store(true, Ordering::Relaxed);
        let mut result = Ok(());
        for t in self.threads.drain(..) {
            let r = t
                .join()
                .unwrap_or_else(|_| Err(Error::run("a load thread panicked")));
            if result.is_ok() {
                result = r;
            }
        }
        let external_died = match self.child.take() {
            Some(mut c) => {
                let early = c.try_wait().ok().flatten();
                end_group(c);
                early
            }
            None => None,
        };
        result?;
        if let Some(status) = external_died {
            return Err(Error::run(format!(
                "the load command ended before the measurement did ({status}); it must run until killed"
            )));
        }
        Ok(LoadStats {
            load: self.name.clone(),
            ops_per_s: match self.mode {
                Some(LoadMode::Idle) | None => None,
                Some(_) => Some(ops as f64 / seconds),
            },
            unit: self.mode.map_or("not counted", LoadMode::unit),
            cpus: self.cpus.clone(),
            seconds,
        })
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(c) = self.child.take() {
            end_group(c);
        }
    }
}

/// Kills a load command's whole group and reaps its shell.
fn end_group(mut c: std::process::Child) {
    let pgid = c.id() as i32;
    // SAFETY: signals a process group this process created.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let _ = c.kill();
    let _ = c.wait();
    crate::children::forget(pgid as u32);
}

/// Kills every process group the run started and has not ended (load
/// commands, exec jobs' programs): for a process that ends without
/// unwinding (a run abandoned on a hung device call).
pub fn kill_all() {
    crate::children::kill_all();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits, within a hang guard, until a load has counted something.
    fn counted(b: &Background) -> u64 {
        let t = Instant::now();
        loop {
            let n = b.ops.load(Ordering::Relaxed);
            if n > 0 {
                return n;
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "{} counted nothing in a minute",
                b.name
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Each mode starts, does work at a measured rate, and stops cleanly.
    /// How much work a loaded CPU leaves it room for is not asserted: each
    /// load runs until it has counted something, and its rate must then
    /// account for at least that much.
    #[test]
    fn every_mode_runs_counts_and_stops() {
        let cpu = crate::measure::placement::allowed_cpus()[0];
        for mode in [
            LoadMode::Wait,
            LoadMode::Alu,
            LoadMode::Slow,
            LoadMode::Memcopy,
        ] {
            let b = Background::start(mode, &[cpu]).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            let seen = counted(&b);
            let s = b.stop().unwrap();
            let rate = s.ops_per_s.unwrap();
            assert!(
                rate > 0.0 && rate * s.seconds >= seen as f64 * (1.0 - 1e-9),
                "{}: {rate} {}/s over {} s, {seen} counted",
                mode.name(),
                s.unit,
                s.seconds
            );
            assert_eq!(s.unit, mode.unit());
            assert_eq!(s.cpus, [cpu]);
        }
        let s = Background::start(LoadMode::Idle, &[cpu])
            .unwrap()
            .stop()
            .unwrap();
        assert!(s.ops_per_s.is_none());
    }

    /// CPU time a thread of `b` has used so far.
    fn cpu_time(b: &Background) -> Duration {
        use std::os::unix::thread::JoinHandleExt;
        let mut clock: libc::clockid_t = 0;
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: the thread is running (it ends only on stop), so its
        // pthread_t is valid; both out-pointers point at locals.
        unsafe {
            assert_eq!(
                libc::pthread_getcpuclockid(b.threads[0].as_pthread_t(), &mut clock),
                0
            );
            assert_eq!(libc::clock_gettime(clock, &mut ts), 0);
        }
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    /// A dependent 64-bit division costs well over an add. Compared per
    /// second of the load thread's own CPU time, not of wall time: on a busy
    /// machine the two loads get different shares of the CPU, and a wall-time
    /// ratio would measure those shares instead.
    #[test]
    fn divisions_are_slower_than_adds() {
        let cpu = crate::measure::placement::allowed_cpus()[0];
        let rate = |m| {
            let b = Background::start(m, &[cpu]).unwrap();
            let t = Instant::now();
            // 50 ms of its own CPU, however long a busy machine takes to give it.
            while cpu_time(&b) < Duration::from_millis(50) {
                assert!(t.elapsed() < Duration::from_secs(60), "{m:?} got no CPU");
                std::thread::sleep(Duration::from_millis(10));
            }
            // The count lags the CPU clock by at most one batch (tens of µs).
            let (ops, cpu_s) = (b.ops.load(Ordering::Relaxed), cpu_time(&b));
            b.stop().unwrap();
            ops as f64 / cpu_s.as_secs_f64()
        };
        let (adds, divisions) = (rate(LoadMode::Alu), rate(LoadMode::Slow));
        assert!(
            adds > 3.0 * divisions,
            "{adds} adds and {divisions} divisions per CPU second"
        );
    }

    #[test]
    fn an_external_command_runs_until_killed() {
        let b = Background::command("sleep 30").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let s = b.stop().unwrap();
        assert!(s.ops_per_s.is_none());
        let b = Background::command("true").unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(b.stop().is_err(), "a command that exits early is an error");
    }

    /// Stopping kills what the shell started too, not only the shell.
    #[test]
    fn the_commands_the_shell_started_end_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let b = Background::command(&format!(
            "sleep 300 & echo $! > {}; wait",
            pid_file.display()
        ))
        .unwrap();
        let t = Instant::now();
        let pid: i32 = loop {
            if let Some(p) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                break p;
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "the shell never started"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        drop(b);
        // Gone, or a zombie waiting for init: not running either way.
        let t = Instant::now();
        loop {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| s.rsplit(')').next().map(|r| r.trim().to_string()));
            match state {
                None => break,
                Some(s) if s.starts_with('Z') || s.starts_with('X') => break,
                Some(_) => {}
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "sleep {pid} outlived the load"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
