//! What fio's JSON reports of a job beside its completion latency, kept by
//! the worker as fio keeps it: submission latency (`slat`, from the end of
//! an I/O's preparation to the return of the call that submitted it) and
//! total latency (`lat`, from that preparation to completion) for the
//! engines with a submission step; bandwidth and
//! IOPS sampled every `bwavgtime`/`iopsavgtime` ms; how deep the queue was
//! and how many I/Os each submission and each reap carried (fio's
//! `iodepth_level`, `iodepth_submit`, `iodepth_complete`); the latency of
//! `fsync=` syncs; and the thread's CPU time, context switches and page
//! faults over the timed span (getrusage of the worker thread).
//!
//! Everything here is counted on the worker's own thread, without a lock; a
//! completion costs a comparison for the samplers, and for an engine with a
//! submission step two more histogram updates.

use crate::engine::DIRS;
use crate::measure::stats::Recorder;

/// Slots of fio's depth, submit and complete maps.
pub const MAP_SLOTS: usize = 7;

/// fio's slot for a submission or reap of `n` I/Os (`__io_u_mark_map`):
/// 0, 1–4, 5–8, 9–16, 17–32, 33–64, more.
pub fn batch_slot(n: usize) -> usize {
    match n {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// fio's slot for the queue depth an I/O was submitted at
/// (`io_u_mark_depth`): 1, 2–3, 4–7, 8–15, 16–31, 32–63, 64 and more.
pub fn depth_slot(depth: usize) -> usize {
    match depth {
        0 | 1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

/// Rates sampled as fio's `__add_samples` takes them: once the window has
/// passed since the last sample (fio's helper thread sleeps one window
/// between its calls, so its samples fall a window apart, not a window
/// less its 1 ms slack), each direction that moved something gets one
/// sample of what it moved over the time that passed (KiB/s for
/// bandwidth, I/Os per second for IOPS, rounded down); a direction that
/// moved nothing gets none. With no window (a job writing that log per
/// I/O, fio's `per_unit_log`) every I/O is a sample of its own instead.
#[derive(Clone, Debug)]
pub struct Sampler {
    /// 0: a sample per I/O.
    window_ns: u64,
    per_kib: bool,
    since_ns: u64,
    next_ns: u64,
    seen: [u64; DIRS],
    /// Each direction's samples, in time order.
    pub samples: [Vec<u64>; DIRS],
}

impl Sampler {
    /// Samples every `window_ms` of bytes in KiB/s (`per_kib`) or of
    /// counts per second; a `window_ms` of 0 takes [`Sampler::each`] I/O.
    pub fn new(window_ms: u32, per_kib: bool) -> Sampler {
        let window_ns = u64::from(window_ms) * 1_000_000;
        Sampler {
            window_ns,
            per_kib,
            since_ns: 0,
            next_ns: window_ns,
            seen: [0; DIRS],
            samples: Default::default(),
        }
    }

    /// Given the running totals (bytes or I/Os each way) at `at_ns` into
    /// the timed span, takes a sample when the window has passed.
    #[inline]
    pub fn tick(&mut self, at_ns: u64, totals: &[u64; DIRS]) {
        if self.window_ns > 0 && at_ns >= self.next_ns {
            self.take(at_ns, totals);
        }
    }

    /// One I/O of direction `dir` that moved `len` bytes in `clat_ns`,
    /// where every I/O is a sample: its own rate (fio's `add_bw_sample`,
    /// bytes × 10⁶ / ns) or 1 (`add_iops_sample`).
    #[inline]
    pub fn each(&mut self, dir: usize, len: u64, clat_ns: u64) {
        if self.window_ns == 0 {
            let v = match self.per_kib {
                true => (len * 1_000_000).checked_div(clat_ns).unwrap_or(0),
                false => 1,
            };
            self.samples[dir].push(v);
        }
    }

    fn take(&mut self, at_ns: u64, totals: &[u64; DIRS]) {
        let spent_ms = (at_ns - self.since_ns) / 1_000_000;
        for (d, &total) in totals.iter().enumerate() {
            let delta = total - self.seen[d];
            if delta == 0 {
                continue;
            }
            let rate = match (spent_ms, self.per_kib) {
                (0, _) => 0,
                (ms, true) => delta * 1000 / ms / 1024,
                (ms, false) => delta * 1000 / ms,
            };
            self.samples[d].push(rate);
            self.seen[d] = total;
        }
        self.since_ns = at_ns;
        self.next_ns = at_ns + self.window_ns;
    }

    /// Starts over (the end of `ramp_time` starts the timed span).
    pub fn restart(&mut self) {
        *self = Sampler::new((self.window_ns / 1_000_000) as u32, self.per_kib);
    }
}

/// A thread's CPU time, context switches and page faults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// User CPU time, µs.
    pub usr_us: u64,
    /// System CPU time, µs.
    pub sys_us: u64,
    /// Context switches, voluntary and not.
    pub ctx: u64,
    /// Major page faults.
    pub majf: u64,
    /// Minor page faults.
    pub minf: u64,
}

impl Usage {
    /// The calling thread's usage so far (zeros where getrusage fails).
    pub fn now() -> Usage {
        // SAFETY: rusage is plain C data (integers, timevals): all zeroes is valid.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a live, writable rusage; getrusage writes only into it.
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
            return Usage::default();
        }
        let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
        Usage {
            usr_us: us(ru.ru_utime),
            sys_us: us(ru.ru_stime),
            ctx: (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
            majf: ru.ru_majflt as u64,
            minf: ru.ru_minflt as u64,
        }
    }

    /// What was used between `start` and `self`.
    pub fn since(self, start: Usage) -> Usage {
        Usage {
            usr_us: self.usr_us.saturating_sub(start.usr_us),
            sys_us: self.sys_us.saturating_sub(start.sys_us),
            ctx: self.ctx.saturating_sub(start.ctx),
            majf: self.majf.saturating_sub(start.majf),
            minf: self.minf.saturating_sub(start.minf),
        }
    }
}

/// A job's fio accounting over its timed span.
#[derive(Clone)]
pub struct FioStats {
    /// The engine has a submission step, so `slat` and `lat` were measured
    /// apart from the completion latency; otherwise `slat` is empty and
    /// `lat` is the completion latency (fio's sync engines alike).
    pub measured_slat: bool,
    /// Preparation to the submitting call's return, each way.
    pub slat: [Recorder; DIRS],
    /// Preparation to completion, each way.
    pub lat: [Recorder; DIRS],
    /// Bandwidth samples (KiB/s).
    pub bw: Sampler,
    /// IOPS samples.
    pub iops: Sampler,
    /// I/Os completed each way in the timed span (the IOPS sampler's totals).
    pub ios: [u64; DIRS],
    /// I/Os by the queue depth their submit batch brought the queue to.
    pub depth: [u64; MAP_SLOTS],
    /// Submitting calls by the I/Os each carried.
    pub submit: [u64; MAP_SLOTS],
    /// Reaps by the completions each returned.
    pub complete: [u64; MAP_SLOTS],
    /// Latency of each `fsync=`/`fdatasync=` sync.
    pub sync: Recorder,
    /// The thread's usage over the span (final once the job ends).
    pub usage: Usage,
    usage_start: Usage,
}

impl Default for FioStats {
    fn default() -> FioStats {
        FioStats::new(500, 500, false)
    }
}

impl FioStats {
    /// Sampling bandwidth every `bw_ms` and IOPS every `iops_ms`.
    pub fn new(bw_ms: u32, iops_ms: u32, measured_slat: bool) -> FioStats {
        FioStats {
            measured_slat,
            slat: std::array::from_fn(|_| Recorder::new()),
            lat: std::array::from_fn(|_| Recorder::new()),
            bw: Sampler::new(bw_ms, true),
            iops: Sampler::new(iops_ms, false),
            ios: [0; DIRS],
            depth: [0; MAP_SLOTS],
            submit: [0; MAP_SLOTS],
            complete: [0; MAP_SLOTS],
            sync: Recorder::new(),
            usage: Usage::default(),
            usage_start: Usage::now(),
        }
    }

    /// The job's I/O loop starts: its CPU usage is counted from here, not
    /// from the setup before (laying out files).
    pub fn begin(&mut self) {
        self.usage_start = Usage::now();
    }

    /// The timed span starts (again, after `ramp_time`): what the ramp
    /// counted is dropped, as fio zeroes its stats then.
    pub fn restart(&mut self) {
        let mut fresh = FioStats::new(1, 1, self.measured_slat);
        fresh.bw = self.bw.clone();
        fresh.bw.restart();
        fresh.iops = self.iops.clone();
        fresh.iops.restart();
        *self = fresh;
    }

    /// An I/O of direction `dir` and `len` bytes completed, having been
    /// issued `slat_ns` before its submission returned and `lat_ns` before
    /// it completed (`lat_ns - slat_ns`: its clat).
    #[inline]
    pub fn completed(&mut self, dir: usize, len: u64, slat_ns: u64, lat_ns: u64) {
        self.ios[dir] += 1;
        self.bw.each(dir, len, lat_ns - slat_ns);
        self.iops.each(dir, len, lat_ns - slat_ns);
        if self.measured_slat {
            self.slat[dir].record(slat_ns);
            self.lat[dir].record(lat_ns);
        }
    }

    /// After a reap at `at_ns` into the span with the span's bytes so far.
    #[inline]
    pub fn tick(&mut self, at_ns: u64, bytes: &[u64; DIRS]) {
        self.bw.tick(at_ns, bytes);
        let ios = self.ios;
        self.iops.tick(at_ns, &ios);
    }

    /// The job's I/O and its read-back are over: its thread's usage is
    /// final, taken before the account is drawn up (pooling the intervals'
    /// histograms faults in fresh pages, hundreds of them, that are no part
    /// of the job; fio likewise reads its usage once the job is done).
    pub fn end_usage(&mut self) {
        self.usage = Usage::now().since(self.usage_start);
    }

    /// The job's span ended: for an engine without a submission step `lat`
    /// is the completion latency `clat`.
    pub fn finish(&mut self, clat: &[Recorder; DIRS]) {
        if !self.measured_slat {
            self.lat = clat.clone();
        }
    }
}

/// fio's clat histogram: 64 buckets per power of two above the first 128
/// values (`FIO_IO_U_PLAT_BITS` = 6, `FIO_IO_U_PLAT_VAL` = 64).
const PLAT_BITS: u32 = 6;
const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// fio's bucket count (`FIO_IO_U_PLAT_NR`: 29 groups): the last one holds
/// everything from about 17 s up.
const PLAT_NR: u64 = 29 * PLAT_VAL;

/// fio's bucket of a latency in ns (`plat_val_to_idx`).
pub fn plat_val_to_idx(val: u64) -> u64 {
    // The most significant bit's position.
    let msb = if val == 0 {
        0
    } else {
        63 - val.leading_zeros()
    };
    if msb <= PLAT_BITS {
        return val;
    }
    let error_bits = msb - PLAT_BITS;
    let base = u64::from(error_bits + 1) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (val >> error_bits);
    (base + offset).min(PLAT_NR - 1)
}

/// The value fio writes for bucket `idx` (`plat_idx_to_val`): the middle
/// of the bucket's range.
pub fn plat_idx_to_val(idx: u64) -> u64 {
    if idx < (PLAT_VAL << 1) {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) as u32 - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = idx % PLAT_VAL;
    base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

/// A recorder's samples in fio's buckets: (bucket value in ns, count), in
/// increasing order; the counts add up to the samples recorded.
pub fn plat_bins(r: &Recorder) -> Vec<(u64, u64)> {
    let h = r.histogram();
    let mut bins: Vec<(u64, u64)> = Vec::new();
    for v in h.iter_recorded() {
        let ns = h.median_equivalent(v.value_iterated_to());
        let key = plat_idx_to_val(plat_val_to_idx(ns));
        match bins.last_mut() {
            Some(last) if last.0 == key => last.1 += v.count_at_value(),
            _ => bins.push((key, v.count_at_value())),
        }
    }
    bins
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_fios() {
        // Below 128 each value is its own bucket.
        for v in 0..128 {
            assert_eq!(plat_idx_to_val(plat_val_to_idx(v)), v);
        }
        // 128..255: buckets of 2, valued at their middle (fio: base + (k+0.5)·2).
        assert_eq!(plat_val_to_idx(128), 128);
        assert_eq!(plat_val_to_idx(129), 128);
        assert_eq!(plat_idx_to_val(128), 129);
        // Every value lands in a bucket whose value is within 1/64 of it.
        for v in [1_000u64, 65_277, 93_194, 4_122_312, 1 << 33] {
            let b = plat_idx_to_val(plat_val_to_idx(v));
            assert!((b as f64 - v as f64).abs() <= v as f64 / 64.0, "{v} -> {b}");
        }
        let mut r = Recorder::new();
        for v in [100u64, 100, 5_000, 5_010, 1_000_000] {
            r.record(v);
        }
        let bins = plat_bins(&r);
        assert_eq!(bins.iter().map(|b| b.1).sum::<u64>(), 5);
        assert_eq!(bins[0], (100, 2));
        assert!(bins.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn samples_follow_fios_window() {
        let mut s = Sampler::new(500, true);
        let ms = 1_000_000u64;
        // 1 MiB read by 250 ms: no sample yet.
        s.tick(250 * ms, &[1 << 20, 0, 0]);
        assert!(s.samples[0].is_empty());
        // 2 MiB by 500 ms: one sample of 2 MiB over 500 ms, 4096 KiB/s;
        // the idle write side gets none.
        s.tick(500 * ms, &[2 << 20, 0, 0]);
        assert_eq!(s.samples[0], [4096]);
        assert!(s.samples[1].is_empty());
        // Not a window since the last sample yet (fio's slack does not
        // bring its next sample forward).
        s.tick(999 * ms, &[3 << 20, 0, 0]);
        assert_eq!(s.samples[0], [4096]);
        s.tick(1000 * ms, &[3 << 20, 0, 0]);
        assert_eq!(s.samples[0], [4096, 2048]);
        assert_eq!((batch_slot(0), batch_slot(4), batch_slot(65)), (0, 1, 6));
        assert_eq!((depth_slot(1), depth_slot(3), depth_slot(64)), (0, 1, 6));
    }
}
