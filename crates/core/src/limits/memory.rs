//! The ceilings of paths that stay in the host, measured: memory copy
//! bandwidth by one core and by all of them, the round trip of a cache
//! line between two CPUs (the floor of any thread or shared-memory
//! exchange), and the clock's floor (two back-to-back reads: no latency
//! figure can show less). The whole measurement takes well under a second
//! and is kept (`cache`), so a later run pays nothing.

use super::Limit;
use super::cache::{self, Measured};
use crate::measure::placement;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

/// How long the one-core copy is timed.
const ONE_CORE: Duration = Duration::from_millis(150);
/// How long all cores copy together.
const ALL_CORES: Duration = Duration::from_millis(200);
/// How long one pair of CPUs passes its cache line back and forth.
const ROUND_TRIPS: Duration = Duration::from_millis(80);
/// Round trips in one timed batch.
const BATCH: u64 = 500;

/// What this process measured or read, so it measures at most once.
static MEMO: Mutex<Option<Measured>> = Mutex::new(None);

/// The machine's memory figures: from this process's memory, else the
/// cache file when it was taken on this boot with these CPUs, else
/// measured now (and cached). `refresh` measures again whatever is kept.
pub fn measured(refresh: bool) -> Measured {
    let mut memo = MEMO.lock().unwrap_or_else(|e| e.into_inner());
    let key = cache::key();
    if !refresh && let Some(m) = memo.as_ref().filter(|m| m.key == key) {
        return m.clone();
    }
    // Figures taken on a busy machine are read back only while it is
    // still busy: the first run that finds it quiet measures them again.
    let kept = if refresh { None } else { cache::load(&key) };
    let m = match kept {
        Some(k) if k.others_running == 0 || others_running() > 0 => k,
        _ => {
            let m = measure(key);
            cache::store(&m);
            m
        }
    };
    *memo = Some(m.clone());
    m
}

/// The round trip between `a` and `b`, ns: kept, or measured now and kept.
/// None when either CPU cannot be pinned to or the pair never answered.
pub fn round_trip(a: usize, b: usize) -> Option<f64> {
    let pair = format!("{a},{b}");
    let mut m = measured(false);
    if let Some(&ns) = m.round_trips.get(&pair) {
        return Some(ns);
    }
    let ns = measure_round_trip(a, b, ROUND_TRIPS)?;
    m.round_trips.insert(pair, ns);
    cache::store(&m);
    *MEMO.lock().unwrap_or_else(|e| e.into_inner()) = Some(m);
    Some(ns)
}

fn measure(key: String) -> Measured {
    let cpus = placement::allowed_cpus();
    let llc = cpus
        .first()
        .and_then(|&c| placement::cache_bytes(c, None))
        .unwrap_or(32 << 20);
    // Two buffers of twice the last-level cache: the copy streams from
    // memory, and faulting the pages in stays a small part of the second.
    let one = fit_memory((2 * llc).clamp(16 << 20, 128 << 20), 1);
    let per_core = fit_memory(
        (2 * llc / cpus.len().max(1)).clamp(4 << 20, 32 << 20),
        cpus.len(),
    );
    let before = others_running();
    let copy_one_core_mbps = copy_one_core(one, ONE_CORE);
    let between = others_running();
    let copy_all_cores_mbps = copy_all_cores(&cpus, per_core, ALL_CORES);
    let mut m = Measured {
        key,
        copy_one_core_mbps,
        copy_all_cores_mbps,
        others_running: {
            let mut seen = [before, between, others_running()];
            seen.sort_unstable();
            seen[1]
        },
        cores: cpus.len(),
        clock_floor_ns: crate::measure::env::Clock::calibrate().overhead_ns,
        round_trips: Default::default(),
        buffer_bytes: one,
        measured_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
    };
    if let [a, b, ..] = cpus.as_slice()
        && let Some(ns) = measure_round_trip(*a, *b, ROUND_TRIPS)
    {
        m.round_trips.insert(format!("{a},{b}"), ns);
    }
    m
}

/// Tasks ready to run besides the one reading (`procs_running` in
/// /proc/stat counts the reader): what would have shared the CPUs with a
/// measurement taken now. 0 where /proc/stat cannot be read.
fn others_running() -> u32 {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("procs_running "))
                .and_then(|n| n.trim().parse::<u32>().ok())
        })
        .map_or(0, |n| n.saturating_sub(1))
}

/// `bytes` per buffer for `threads` threads with two buffers each, made
/// smaller when the machine has less than 4 times that free.
fn fit_memory(bytes: usize, threads: usize) -> usize {
    let need = (2 * bytes * threads.max(1)) as u64;
    match crate::measure::env::available_memory() {
        Some(free) if need * 4 > free => ((free / 4) as usize / (2 * threads.max(1))).max(1 << 20),
        _ => bytes,
    }
}

/// Copies between two buffers of `bytes` for `budget`; the best pass, MB/s
/// of bytes copied (read once, written once).
fn copy_one_core(bytes: usize, budget: Duration) -> f64 {
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    // The first pass faults the pages in: not timed.
    dst.copy_from_slice(&src);
    let start = Instant::now();
    let mut best = f64::INFINITY;
    let mut passes = 0;
    while passes < 3 || start.elapsed() < budget {
        let t = Instant::now();
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&mut dst);
        best = best.min(t.elapsed().as_secs_f64());
        passes += 1;
    }
    bytes as f64 / best.max(1e-9) / 1e6
}

/// Every CPU copying its own pair of buffers at once, each pinned; the sum
/// of their rates, MB/s.
fn copy_all_cores(cpus: &[usize], bytes: usize, budget: Duration) -> f64 {
    if cpus.len() < 2 {
        return copy_one_core(bytes, budget);
    }
    let start = Arc::new(Barrier::new(cpus.len()));
    let handles: Vec<_> = cpus
        .iter()
        .map(|&cpu| {
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                // An unpinned thread still copies; the figure is the sum.
                let _ = placement::pin_current(cpu);
                let src = vec![1u8; bytes];
                let mut dst = vec![0u8; bytes];
                dst.copy_from_slice(&src);
                start.wait();
                let t = Instant::now();
                let mut copied = 0u64;
                while copied == 0 || t.elapsed() < budget {
                    dst.copy_from_slice(std::hint::black_box(&src));
                    std::hint::black_box(&mut dst);
                    copied += bytes as u64;
                }
                copied as f64 / t.elapsed().as_secs_f64().max(1e-9) / 1e6
            })
        })
        .collect();
    handles.into_iter().filter_map(|h| h.join().ok()).sum()
}

/// A cache line of its own, so the flag shares it with nothing.
#[repr(align(128))]
struct Line(AtomicU64);

/// Passes a cache line between threads pinned to `a` and `b`: the
/// initiator writes an odd number, the responder answers with the next
/// even one. The fastest batch's mean, ns a round trip. Every wait checks
/// the deadline, so a CPU that is never scheduled ends it with None.
fn measure_round_trip(a: usize, b: usize, budget: Duration) -> Option<f64> {
    let allowed = placement::allowed_cpus();
    if a == b || !allowed.contains(&a) || !allowed.contains(&b) {
        return None;
    }
    let line = Arc::new(Line(AtomicU64::new(0)));
    let stop = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + budget + Duration::from_secs(2);
    let responder = {
        let (line, stop) = (Arc::clone(&line), Arc::clone(&stop));
        std::thread::spawn(move || {
            if placement::pin_current(b).is_err() {
                stop.store(true, Ordering::Release);
                return;
            }
            let mut seen = 0;
            while !stop.load(Ordering::Relaxed) {
                let v = line.0.load(Ordering::Acquire);
                if v != seen && v & 1 == 1 {
                    line.0.store(v + 1, Ordering::Release);
                    seen = v;
                } else {
                    std::hint::spin_loop();
                }
            }
        })
    };
    let initiator = {
        let (line, stop) = (Arc::clone(&line), Arc::clone(&stop));
        std::thread::spawn(move || -> Option<f64> {
            placement::pin_current(a).ok()?;
            let start = Instant::now();
            let mut best = f64::INFINITY;
            let mut v = 0u64;
            while best.is_infinite() || start.elapsed() < budget {
                let t = Instant::now();
                for _ in 0..BATCH {
                    v += 1;
                    line.0.store(v, Ordering::Release);
                    let mut spins = 0u32;
                    while line.0.load(Ordering::Acquire) != v + 1 {
                        spins = spins.wrapping_add(1);
                        if spins & 4095 == 0
                            && (stop.load(Ordering::Relaxed) || Instant::now() > deadline)
                        {
                            return None;
                        }
                        std::hint::spin_loop();
                    }
                    v += 1;
                }
                best = best.min(t.elapsed().as_secs_f64() * 1e9 / BATCH as f64);
            }
            Some(best)
        })
    };
    let ns = initiator.join().ok().flatten();
    stop.store(true, Ordering::Release);
    let _ = responder.join();
    ns
}

/// Memory copy's ceiling for a run on `cpus`: one core's copy for two
/// CPUs or fewer (one side copies at a time), else that many cores copying
/// at once ([`copy_limit_of_cores`]).
pub fn copy_limit(cpus: &[usize]) -> Limit {
    copy_limit_of_cores(if cpus.len() <= 2 { 1 } else { cpus.len() })
}

/// What `n` cores copying at once can reach: the lower of `n` times one
/// core's copy and what all cores reached together.
pub fn copy_limit_of_cores(n: usize) -> Limit {
    let m = measured(false);
    let n = n.max(1);
    let (value, what) = if n == 1 {
        (m.copy_one_core_mbps, "memory copy, 1 core".to_string())
    } else {
        (
            (m.copy_one_core_mbps * n as f64).min(m.copy_all_cores_mbps),
            format!("memory copy, {n} cores"),
        )
    };
    Limit {
        value,
        unit: "MB/s".into(),
        what,
        source: cache::source(&m),
        warnings: Vec::new(),
        numa_node: None,
    }
}

/// What every allowed CPU copied together, MB/s in all.
pub fn copy_all_limit() -> Limit {
    let m = measured(false);
    Limit {
        value: m.copy_all_cores_mbps,
        unit: "MB/s".into(),
        what: format!("memory copy, all {} cores", m.cores),
        source: cache::source(&m),
        warnings: Vec::new(),
        numa_node: None,
    }
}

/// The clock's floor as a limit, ns.
pub fn clock_limit() -> Limit {
    let m = measured(false);
    Limit {
        value: m.clock_floor_ns,
        unit: "ns".into(),
        what: "the clock's floor (two back-to-back reads)".into(),
        source: cache::source(&m),
        warnings: Vec::new(),
        numa_node: None,
    }
}

/// The round trip between `a` and `b` as a limit, ns.
pub fn round_trip_limit(a: usize, b: usize) -> Option<Limit> {
    let ns = round_trip(a, b)?;
    let m = measured(false);
    Some(Limit {
        value: ns,
        unit: "ns".into(),
        what: format!("core-to-core round trip, CPUs {a} and {b}"),
        source: cache::source(&m),
        warnings: Vec::new(),
        numa_node: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_moves_bytes_at_a_finite_positive_rate() {
        let r = copy_one_core(1 << 20, Duration::from_millis(5));
        assert!(r.is_finite() && r > 1.0, "{r}");
    }

    #[test]
    fn a_round_trip_between_two_cpus_is_measured_or_refused() {
        assert_eq!(measure_round_trip(0, 0, Duration::from_millis(5)), None);
        let cpus = placement::allowed_cpus();
        if let [a, b, ..] = cpus.as_slice() {
            let ns = measure_round_trip(*a, *b, Duration::from_millis(20));
            // A loaded VM may starve one side past the deadline: None then,
            // never a hang and never a zero.
            assert!(ns.is_none_or(|ns| ns > 0.0 && ns.is_finite()), "{ns:?}");
        }
        // A CPU this process may not use is refused, not waited for.
        assert_eq!(
            measure_round_trip(0, 100_000, Duration::from_millis(5)),
            None
        );
    }
}
