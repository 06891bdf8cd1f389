//! A job's timed span cut into intervals, so that one run alone shows how
//! much its bandwidth, IOPS and latency wander: the `blocks` of each
//! direction in the JSON, which a comparison of two runs reads as
//! replicates.
//!
//! The span is cut into [`BLOCKS`] slots before the timed loop starts, each
//! with its own latency recorders, so recording an I/O costs a comparison
//! with the next slot's start and one recorder update (no allocation, no
//! lock, no division); the job's
//! whole-span recorders are the slots' merged afterwards. A time-based job
//! knows its runtime, so its slots are equal time intervals; a job with a
//! size knows how many I/Os it will do, so its slots are equal numbers of
//! I/Os (consecutive, in completion order), each as long as it took. When
//! the job's span is closed, each slot gets its length, and a direction's
//! blocks are its slots in time order, where a slot with none of that
//! direction's I/Os (a stall) or no length (I/Os reaped together) is joined
//! to the next one.

use crate::measure::distribution::{BLOCKS, Distribution, Figures, Spread, latency_figures};
use crate::measure::stats::Recorder;
use std::time::Duration;

/// Directions kept apart: 0 reads, 1 writes, 2 trims.
const DIRS: usize = crate::engine::DIRS;

/// How a job's span is cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Equal time intervals of `width_ns` (a time-based job).
    Time { width_ns: u64 },
    /// Equal numbers of I/Os, `expected` of them in all (a job with a size;
    /// one cut short by `runtime=` has fewer blocks).
    Count { expected: u64 },
}

impl Cut {
    /// The cut for a job that runs `runtime` when `time_based`, else does
    /// `ios` I/Os.
    pub fn new(time_based: bool, runtime: Option<Duration>, ios: u64) -> Cut {
        match runtime {
            Some(r) if time_based => Cut::Time {
                width_ns: (r.as_nanos() as u64 / BLOCKS as u64).max(1),
            },
            _ => Cut::Count {
                expected: ios.max(1),
            },
        }
    }

    /// Slots used: [`BLOCKS`], or for a job of few I/Os one per two I/Os.
    pub fn slots(self) -> usize {
        match self {
            Cut::Time { .. } => BLOCKS,
            Cut::Count { expected } => ((expected / 2) as usize).clamp(1, BLOCKS),
        }
    }
}

/// One slot while the job runs.
#[derive(Clone)]
struct Slot {
    recs: [Recorder; DIRS],
    bytes: [u64; DIRS],
    /// When its last I/O completed, ns from the span's start.
    last_ns: u64,
}

/// A job's slots while it runs. Indexed by direction: 0 reads, 1 writes,
/// 2 trims. A clone is a status report's copy (never the timed loop's).
#[derive(Clone)]
pub struct Intervals {
    cut: Cut,
    used: usize,
    done: u64,
    /// The slot the last I/O went to.
    slot: usize,
    /// Where slot `slot + 1` starts: an I/O count (count cut) or ns (time
    /// cut). Both only grow, so moving on is a comparison, not a division
    /// per I/O.
    next: u64,
    slots: Vec<Slot>,
}

impl Intervals {
    /// Every slot's recorders, allocated now (before the timed loop).
    pub fn new(cut: Cut) -> Intervals {
        let mut iv = Intervals {
            cut,
            used: 1,
            done: 0,
            slot: 0,
            next: 0,
            slots: (0..BLOCKS)
                .map(|_| Slot {
                    recs: std::array::from_fn(|_| Recorder::new()),
                    bytes: [0; DIRS],
                    last_ns: 0,
                })
                .collect(),
        };
        iv.recut(cut);
        iv
    }

    /// A new cut, before anything was recorded (at the end of `ramp_time`).
    pub fn recut(&mut self, cut: Cut) {
        debug_assert_eq!(self.done, 0, "recut after recording");
        self.cut = cut;
        self.used = cut.slots();
        self.slot = 0;
        self.next = self.start_of(1);
    }

    /// Where slot `j` starts: the first I/O count `d` with
    /// `d · used / expected ≥ j` (count cut), or `j · width_ns` (time cut).
    fn start_of(&self, j: usize) -> u64 {
        let j = j as u128;
        let v = match self.cut {
            Cut::Time { width_ns } => j * u128::from(width_ns),
            Cut::Count { expected } => (j * u128::from(expected)).div_ceil(self.used as u128),
        };
        v.min(u128::from(u64::MAX)) as u64
    }

    /// An I/O of `bytes` in direction `dir` that completed `at_ns` after the
    /// span started and took `lat_ns`. `at_ns` never goes back.
    #[inline]
    pub fn record(&mut self, dir: usize, at_ns: u64, lat_ns: u64, bytes: u64) {
        let key = match self.cut {
            Cut::Time { .. } => at_ns,
            Cut::Count { .. } => self.done,
        };
        while key >= self.next && self.slot + 1 < self.used {
            self.slot += 1;
            self.next = self.start_of(self.slot + 1);
        }
        self.done += 1;
        let s = &mut self.slots[self.slot];
        s.recs[dir].record(lat_ns);
        s.bytes[dir] += bytes;
        s.last_ns = at_ns;
    }

    /// The slots with their lengths, the span having ended `end_ns` after
    /// it started (the last slot reaches it: an `end_fsync` counts, as it
    /// does in the job's bandwidth).
    pub fn finish(self, end_ns: u64) -> Timeline {
        let used = self.used;
        let cut = self.cut;
        let mut prev = 0u64;
        let spans = self
            .slots
            .into_iter()
            .take(used)
            .enumerate()
            .map(|(j, s)| {
                let end = if j + 1 == used {
                    end_ns
                } else {
                    match cut {
                        Cut::Time { width_ns } => (j as u64 + 1).saturating_mul(width_ns),
                        Cut::Count { .. } if s.recs.iter().any(|r| r.count() > 0) => s.last_ns,
                        Cut::Count { .. } => prev,
                    }
                    .min(end_ns)
                }
                .max(prev);
                let dur_ns = end - prev;
                prev = end;
                Span {
                    recs: s.recs,
                    bytes: s.bytes,
                    dur_ns,
                }
            })
            .collect();
        Timeline { spans }
    }
}

/// One closed slot: its I/Os each way and how long it lasted.
#[derive(Clone)]
pub struct Span {
    pub recs: [Recorder; DIRS],
    pub bytes: [u64; DIRS],
    pub dur_ns: u64,
}

/// A job's span, cut: its slots in time order.
#[derive(Clone)]
pub struct Timeline {
    pub spans: Vec<Span>,
}

impl Timeline {
    /// Every I/O of direction `dir` over the span.
    pub fn total(&self, dir: usize) -> Recorder {
        let mut r = Recorder::new();
        for s in &self.spans {
            r.merge(&s.recs[dir]);
        }
        r
    }

    /// A reporting group's timeline: its members' slots added index by
    /// index (members run side by side), each as long as the longest
    /// member's, as the group's bandwidth is all bytes over the longest
    /// runtime.
    pub fn merge(members: &[&Timeline]) -> Timeline {
        let n = members.iter().map(|t| t.spans.len()).max().unwrap_or(0);
        let spans = (0..n)
            .map(|j| {
                let mut s = Span {
                    recs: std::array::from_fn(|_| Recorder::new()),
                    bytes: [0; DIRS],
                    dur_ns: 0,
                };
                for m in members {
                    if let Some(o) = m.spans.get(j) {
                        for d in 0..DIRS {
                            s.recs[d].merge(&o.recs[d]);
                            s.bytes[d] += o.bytes[d];
                        }
                        s.dur_ns = s.dur_ns.max(o.dur_ns);
                    }
                }
                s
            })
            .collect();
        Timeline { spans }
    }

    /// Direction `dir`'s figures per block, in time order: `bw_bytes`
    /// (bytes/s), `iops`, and the latency figures of the block's I/Os.
    /// Slots are joined until a block has some length and at least two
    /// I/Os (one when the direction did fewer than four); what is left at
    /// the end joins the last block.
    pub fn blocks(&self, dir: usize) -> Vec<Figures> {
        let total: u64 = self.spans.iter().map(|s| s.recs[dir].count()).sum();
        if total == 0 {
            return Vec::new();
        }
        let least = if total >= 4 { 2 } else { 1 };
        let mut out: Vec<(Recorder, u64, u64)> = Vec::new();
        let mut acc: Option<(Recorder, u64, u64)> = None;
        for s in &self.spans {
            let a = acc.get_or_insert_with(|| (Recorder::new(), 0, 0));
            a.0.merge(&s.recs[dir]);
            a.1 += s.bytes[dir];
            a.2 += s.dur_ns;
            if a.0.count() >= least && a.2 > 0 {
                out.extend(acc.take());
            }
        }
        if let Some((r, bytes, dur)) = acc {
            match out.last_mut() {
                Some(last) => {
                    last.0.merge(&r);
                    last.1 += bytes;
                    last.2 += dur;
                }
                None => out.push((r, bytes, dur)),
            }
        }
        out.iter()
            .map(|(r, bytes, dur)| {
                let secs = *dur as f64 / 1e9;
                let rate = |v: f64| if secs > 0.0 { v / secs } else { 0.0 };
                let mut f = latency_figures(&r.summary());
                f.insert("bw_bytes", rate(*bytes as f64));
                f.insert("iops", rate(r.count() as f64));
                f
            })
            .collect()
    }

    /// What direction `dir` keeps for comparisons: `total` (its I/Os over
    /// the span) as a histogram, and its blocks; nothing when it did no I/O.
    pub fn spread(&self, dir: usize, total: &Recorder) -> Spread {
        if total.count() == 0 {
            return Spread::default();
        }
        Spread {
            histogram: Some(Distribution::of(total)),
            repeats: Vec::new(),
            blocks: self.blocks(dir),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block's keys, in the JSON's (sorted) order.
    const KEYS: [&str; 8] = [
        "bw_bytes", "count", "iops", "mean_ns", "p50_ns", "p90_ns", "p999_ns", "p99_ns",
    ];

    #[test]
    fn a_sized_job_is_cut_into_equal_counts_of_ios() {
        let mut iv = Intervals::new(Cut::new(false, None, 100));
        // 100 reads of 4 KiB, one every µs, each taking 500 ns.
        for i in 0..100u64 {
            iv.record(0, (i + 1) * 1_000, 500, 4096);
        }
        let t = iv.finish(100_000);
        assert_eq!(t.total(0).count(), 100);
        assert_eq!(t.total(1).count(), 0);
        let b = t.blocks(0);
        assert_eq!(b.len(), BLOCKS);
        for f in &b {
            assert_eq!(f.keys().copied().collect::<Vec<_>>(), KEYS);
            assert_eq!(f["count"], 10.0);
            // 10 I/Os of 4 KiB in 10 µs.
            assert!((f["bw_bytes"] - 4096.0 * 1e6).abs() < 1.0, "{f:?}");
            assert!((f["iops"] - 1e6).abs() < 1e-3);
            assert_eq!(f["p50_ns"], 500.0);
        }
        assert!(t.blocks(1).is_empty());
        assert!(t.spread(1, &t.total(1)).histogram.is_none());
    }

    #[test]
    fn trims_keep_their_own_slot_beside_writes() {
        // trimwrite: a trim then a write of each of 50 blocks.
        let mut iv = Intervals::new(Cut::new(false, None, 100));
        for i in 0..50u64 {
            iv.record(2, (2 * i + 1) * 1_000, 300, 4096);
            iv.record(1, (2 * i + 2) * 1_000, 700, 4096);
        }
        let t = iv.finish(100_000);
        assert_eq!(
            (t.total(0).count(), t.total(1).count(), t.total(2).count()),
            (0, 50, 50)
        );
        let trims = t.blocks(2);
        assert_eq!(trims.len(), BLOCKS);
        assert!(trims.iter().all(|f| f["p50_ns"] == 300.0), "{trims:?}");
        let bytes: f64 = trims
            .iter()
            .map(|f| f["bw_bytes"] * f["count"] / f["iops"])
            .sum();
        assert!((bytes - 50.0 * 4096.0).abs() < 1.0, "{bytes}");
        let g = Timeline::merge(&[&t, &t]);
        assert_eq!(g.total(2).count(), 100);
    }

    #[test]
    fn a_time_based_job_is_cut_into_equal_times_and_a_stall_joins_the_next_block() {
        let mut iv = Intervals::new(Cut::new(true, Some(Duration::from_micros(100)), 0));
        // Writes every µs, none between 30 and 50 µs; the last one late,
        // past the runtime, and an end_fsync to 110 µs.
        for at in (1..=100u64).filter(|t| !(30..50).contains(t)) {
            iv.record(1, at * 1_000, 200, 1000);
        }
        iv.record(1, 105_000, 200, 1000);
        let t = iv.finish(110_000);
        let b = t.blocks(1);
        // 0-10-20-30 | 30-50 joined with 50-60 | 60-70-80-90-100..110.
        assert_eq!(b.len(), 8);
        let secs = [10, 10, 10, 30, 10, 10, 10, 20].map(|us| us as f64 * 1e-6);
        let bytes: f64 = b.iter().zip(secs).map(|(f, s)| f["bw_bytes"] * s).sum();
        assert!((bytes - 81_000.0).abs() < 1e-6, "{bytes}");
        assert_eq!(b[0]["count"], 9.0);
        assert_eq!(b[3]["count"], 10.0);
        assert!((b[3]["bw_bytes"] - 10_000.0 / 30e-6).abs() < 1e-3);
        assert_eq!(b[7]["count"], 12.0);
    }

    #[test]
    fn ios_reaped_together_and_few_ios_still_make_blocks_with_a_length() {
        // Completions reaped 8 at a time share their time: a slot of 4
        // may have no length of its own.
        let mut iv = Intervals::new(Cut::new(false, None, 40));
        for i in 0..40u64 {
            iv.record(0, (i / 8 + 1) * 1_000, 3_000, 512);
        }
        let b = iv.finish(5_000).blocks(0);
        assert!(b.len() >= 2);
        assert!(
            b.iter()
                .all(|f| f["bw_bytes"].is_finite() && f["bw_bytes"] > 0.0)
        );
        let ios: f64 = b.iter().map(|f| f["count"]).sum();
        assert_eq!(ios, 40.0);
        // Three I/Os: one block each at most, never an empty one.
        let mut iv = Intervals::new(Cut::new(false, None, 3));
        for i in 0..3u64 {
            iv.record(1, (i + 1) * 1_000, 900, 512);
        }
        let b = iv.finish(3_000).blocks(1);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0]["count"], 3.0);
    }

    #[test]
    fn slots_are_those_of_the_division_they_replace() {
        // Each I/O's slot is floor(done · used / expected) for a count cut
        // and floor(at / width) for a time cut, capped at the last slot.
        for expected in (1..=64u64).chain([99, 1000, 4097]) {
            let cut = Cut::new(false, None, expected);
            let used = cut.slots() as u64;
            let mut iv = Intervals::new(cut);
            let mut want = vec![0u64; used as usize];
            for d in 0..expected {
                iv.record(0, d + 1, 1, 1);
                want[(d * used / expected).min(used - 1) as usize] += 1;
            }
            let got: Vec<u64> = iv
                .finish(expected + 1)
                .spans
                .iter()
                .map(|s| s.recs[0].count())
                .collect();
            assert_eq!(got, want, "expected={expected}");
        }
        let width = 1_000u64;
        let mut iv = Intervals::new(Cut::Time { width_ns: width });
        let mut want = vec![0u64; BLOCKS];
        let mut at = 0u64;
        for step in [0u64, 1, 998, 1, 1, 3_000, 7, 2_500, 4_000, 50_000, 1] {
            at += step;
            iv.record(1, at, 1, 1);
            want[((at / width) as usize).min(BLOCKS - 1)] += 1;
        }
        let got: Vec<u64> = iv
            .finish(at + 1)
            .spans
            .iter()
            .map(|s| s.recs[1].count())
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_group_adds_its_members_slot_by_slot() {
        let job = || {
            let mut iv = Intervals::new(Cut::new(true, Some(Duration::from_micros(10)), 0));
            for at in 1..=10u64 {
                iv.record(0, at * 1_000 - 1, 100 * at, 100);
            }
            iv.finish(10_000)
        };
        let (a, b) = (job(), job());
        // One I/O per slot: blocks of two slots, 200 bytes in 2 µs.
        let alone = a.blocks(0);
        assert_eq!(alone.len(), BLOCKS / 2);
        assert!((alone[0]["bw_bytes"] - 100e6).abs() < 1e-3);
        let g = Timeline::merge(&[&a, &b]);
        assert_eq!(g.total(0).count(), 20);
        // Two I/Os per slot: a block per slot, 200 bytes in 1 µs.
        let blocks = g.blocks(0);
        assert_eq!(blocks.len(), BLOCKS);
        assert!(blocks.iter().all(|f| (f["bw_bytes"] - 200e6).abs() < 1e-3));
    }
}
