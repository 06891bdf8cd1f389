//! Where each I/O of a job goes: fio's offset generators. Sequential or
//! random order (each block once per pass, or with `norandommap` drawn
//! afresh), holes and backwards runs (`rw=read:8k`, `rw=read:-8k`), runs of
//! sequential or identical offsets after each random one (`rw=randread:8`
//! with `rw_sequencer=`), strided zones (`zonemode=strided`), fio's
//! `random_distribution=` (zoned, zoned_abs, and the laws of
//! [`crate::distribution`]) and `percentage_random=`. Offsets are
//! pure functions of the I/O's index, so the verify read-back visits
//! exactly what the write phase did.

use crate::distribution::Sampler;
use crate::job::Job;
use crate::job::gcd;
use crate::payload::splitmix;

/// Mixes an I/O (group) index into a seed.
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

pub use crate::job::zones::{Sequencer, Zones};

/// The order blocks are visited in one pass: sequential, or a full-period
/// permutation so a random job touches every block exactly once per pass
/// (fio's random map).
#[derive(Clone, Debug)]
struct Order {
    n: u64,
    mult: u64,
    add: u64,
}

impl Order {
    fn new(random: bool, n: u64, seed: u64) -> Order {
        if !random || n < 2 {
            return Order {
                n: n.max(1),
                mult: 1,
                add: 0,
            };
        }
        let mut s = seed | 1;
        let mut mult = (splitmix(&mut s) % n) | 1;
        while gcd(mult, n) != 1 {
            mult = (mult + 2) % n;
            if mult == 0 {
                mult = 1;
            }
        }
        Order {
            n,
            mult,
            add: splitmix(&mut s) % n,
        }
    }

    /// The `i`-th block of the pass (`i` wraps at the end of a pass). Called
    /// once per I/O: a sequential order is `i` itself, and a random one
    /// stays in u64 arithmetic (one division) while `n ≤ 2³²`, where
    /// `i · mult + add < n²` cannot overflow; only larger regions need u128.
    #[inline]
    fn at(&self, i: u64) -> u64 {
        let i = if i < self.n { i } else { i % self.n };
        if self.mult == 1 && self.add == 0 {
            i
        } else if self.n <= 1 << 32 {
            (i * self.mult + self.add) % self.n
        } else {
            ((u128::from(i) * u128::from(self.mult) + u128::from(self.add)) % u128::from(self.n))
                as u64
        }
    }
}

/// A job's offset generator over a region of `size` bytes.
#[derive(Clone, Debug)]
pub struct Offsets {
    bs: u64,
    size: u64,
    random: bool,
    /// `norandommap`: each random block drawn independently (repeats allowed).
    fresh: bool,
    seed: u64,
    order: Order,
    /// Sequential jobs: bytes added after each block (fio's `rw=read:N`).
    add: i64,
    /// Random jobs: I/Os per random offset, and what the rest do.
    per_random: u64,
    sequencer: Sequencer,
    zones: Option<Zones>,
    /// `random_distribution=zoned:…`: (share of accesses, share of the
    /// region) per zone, in order.
    zoned: Vec<(u32, u32)>,
    /// `random_distribution=zoned_abs:…`: (share of accesses, bytes).
    zoned_abs: Vec<(u32, u64)>,
    /// `random_distribution=zipf|pareto|normal`: blocks drawn by that law.
    skew: Option<Sampler>,
    /// `percentage_random=`: the share of random offsets; the others
    /// follow on from the I/O before.
    perc_random: u32,
}

impl Offsets {
    /// The generator for `job` over a region of `size` bytes (a multiple of
    /// the block size); `seed` varies per clone.
    pub fn new(job: &Job, size: u64, seed: u64) -> Offsets {
        let bs = job.bs.max(1);
        let random = job.rw.random();
        // In zones, random blocks are drawn within one zone's range.
        let span = job.zones().map_or(size, |z| z.range.min(size));
        Offsets {
            bs,
            size,
            random,
            fresh: job.norandommap && !job.lfsr,
            seed,
            order: Order::new(random, (span / bs).max(1), seed),
            add: job.seq_add,
            per_random: u64::from(job.seq_nr.max(1)),
            sequencer: job.rw_sequencer,
            zones: job.zones(),
            zoned: job.zoned.clone(),
            zoned_abs: job.zoned_abs.clone(),
            skew: job
                .skew
                .map(|shape| Sampler::new(&shape, (span / bs).max(1), seed, true)),
            perc_random: job.percentage_random.min(100),
        }
    }

    /// Whether a random job's offsets are a plain permutation of the
    /// blocks (each once per pass): what a random map over mixed block
    /// sizes walks to find the next free unit.
    pub fn permutes(&self) -> bool {
        self.random
            && !self.fresh
            && self.per_random == 1
            && self.zoned.is_empty()
            && self.zoned_abs.is_empty()
            && self.skew.is_none()
            && self.perc_random >= 100
            && self.zones.is_none()
    }

    /// Whether the job's random offsets fit a region of `size` bytes:
    /// `zoned_abs` zones must lie within it (fio fails the job when it draws
    /// one that does not).
    pub fn check(job: &Job, size: u64) -> Result<(), String> {
        let span = job.zones().map_or(size, |z| z.range.min(size));
        let total: u64 = job.zoned_abs.iter().map(|z| z.1).sum();
        if job.rw.random() && total > span {
            return Err(format!(
                "random_distribution=zoned_abs: the zones add up to {total} bytes, more than the {span} bytes random offsets are drawn from; make them fit"
            ));
        }
        Ok(())
    }

    /// Byte offset, relative to the region, of the `i`-th I/O (0-based).
    pub fn at(&self, i: u64) -> u64 {
        match self.zones {
            Some(z) => self.in_zones(z, i),
            None => self.plain(i, self.size),
        }
    }

    /// Offset of I/O `i` within a span of `span` bytes.
    fn plain(&self, i: u64, span: u64) -> u64 {
        let blocks = (span / self.bs).max(1);
        if self.random {
            let (group, within) = (i / self.per_random, i % self.per_random);
            let base = if self.perc_random < 100 {
                self.mixed_start(group, blocks)
            } else {
                self.random_block(group, blocks)
            };
            let blk = match self.sequencer {
                Sequencer::Sequential => (base + within) % blocks,
                Sequencer::Identical => base,
            };
            return blk * self.bs;
        }
        if self.add == 0 {
            return (i % blocks) * self.bs;
        }
        // Holes (add > 0) or backwards runs (add < 0): each I/O starts
        // bs + add after the last one started; backwards starts at the end.
        let span = i128::from(blocks * self.bs);
        let stride = i128::from(self.bs) + i128::from(self.add);
        let first = if self.add < 0 {
            (span + i128::from(self.add)).max(0)
        } else {
            0
        };
        let last_start = span - i128::from(self.bs);
        let at = (first + stride * i128::from(i)).rem_euclid(span);
        // A start too near the end for a whole block wraps as fio does:
        // forwards to the start, backwards to the last whole block.
        (if at > last_start {
            if stride > 0 { 0 } else { last_start }
        } else {
            at
        }) as u64
    }

    /// The random block of group `group` (the I/O starting it, with
    /// `rw=randread:N`), by the job's distribution.
    fn random_block(&self, group: u64, blocks: u64) -> u64 {
        let mut s = self.seed ^ group.wrapping_mul(GOLDEN);
        if let Some(d) = &self.skew {
            d.draw(&mut s) % blocks
        } else if !self.zoned.is_empty() {
            self.zoned_block(splitmix(&mut s), splitmix(&mut s), blocks)
        } else if !self.zoned_abs.is_empty() {
            self.zoned_abs_block(splitmix(&mut s), splitmix(&mut s), blocks)
        } else if self.fresh {
            splitmix(&mut s) % blocks
        } else {
            self.order.at(group) % blocks
        }
    }

    /// `percentage_random=`: whether group `group` starts at a random block.
    fn is_random(&self, group: u64) -> bool {
        let mut s = self.seed ^ 0x5851_f42d_4c95_7f2d ^ group.wrapping_mul(GOLDEN);
        splitmix(&mut s) % 100 < u64::from(self.perc_random)
    }

    /// With `percentage_random=`: where group `group` starts. A random group
    /// at a random block; any other right after the I/O before it (block 0
    /// for the first), as fio's sequential offsets, wrapping at the end.
    fn mixed_start(&self, group: u64, blocks: u64) -> u64 {
        // Blocks one group moves the position on by.
        let step = u128::from(match self.sequencer {
            Sequencer::Sequential => self.per_random,
            Sequencer::Identical => 1,
        });
        let after = |from: u64, groups: u64| {
            ((u128::from(from) + u128::from(groups) * step) % u128::from(blocks)) as u64
        };
        if self.perc_random > 0 {
            // Back to the last random group (on average 100/N groups).
            for j in (0..=group).rev() {
                if self.is_random(j) {
                    return after(self.random_block(j, blocks), group - j);
                }
            }
        }
        after(0, group)
    }

    /// A block drawn as `random_distribution=zoned_abs` says: `pick`
    /// chooses the zone by its share of accesses, `at` a block in it.
    fn zoned_abs_block(&self, pick: u64, at: u64, blocks: u64) -> u64 {
        let mut draw = pick % 100;
        let mut start = 0u64;
        for &(access, size) in &self.zoned_abs {
            let n = (size / self.bs).max(1);
            if draw < u64::from(access) {
                return (start + at % n).min(blocks - 1);
            }
            draw -= u64::from(access);
            start += n;
        }
        at % blocks
    }

    /// A block drawn as `random_distribution=zoned` says: `pick` chooses
    /// the zone by its share of accesses, `at` a block in it.
    fn zoned_block(&self, pick: u64, at: u64, blocks: u64) -> u64 {
        let mut draw = pick % 100;
        let mut start = 0u64;
        for &(access, size) in &self.zoned {
            let n = (blocks * u64::from(size) / 100).max(1);
            if draw < u64::from(access) {
                return (start + at % n).min(blocks - 1);
            }
            draw -= u64::from(access);
            start += n;
        }
        at % blocks
    }

    fn in_zones(&self, z: Zones, i: u64) -> u64 {
        let per_zone = (z.size / self.bs).max(1);
        let (zone, within) = (i / per_zone, i % per_zone);
        let range = z.range.min(self.size).max(self.bs);
        let pitch = range + z.skip;
        // Zones that fit in the region; past the last, back to the first.
        let count = ((self.size - range) / pitch + 1).max(1);
        let start = (zone % count) * pitch;
        let inner = if self.random {
            self.plain(zone * per_zone + within, range)
        } else {
            (within % (range / self.bs)) * self.bs
        };
        start + inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::Rw;

    #[test]
    fn order_is_the_u128_formula_in_whichever_arithmetic() {
        let reference = |o: &Order, i: u64| {
            ((u128::from(i % o.n) * u128::from(o.mult) + u128::from(o.add)) % u128::from(o.n))
                as u64
        };
        for n in [
            1u64,
            2,
            1000,
            (1 << 32) - 1,
            1 << 32,
            (1 << 32) + 15,
            1 << 40,
        ] {
            let o = Order::new(true, n, 7);
            for i in [0, 1, n / 2, n - 1, n, n + 3, 5 * n + 1, u64::MAX] {
                assert_eq!(o.at(i), reference(&o, i), "n={n} i={i}");
            }
        }
    }

    fn offsets(set: &[(&str, &str)], size: u64) -> Vec<u64> {
        let mut j = Job::default();
        for (k, v) in set {
            j.set(k, Some(v)).unwrap();
        }
        let o = Offsets::new(&j, size, 7);
        (0..size / j.bs).map(|i| o.at(i)).collect()
    }

    #[test]
    fn random_order_is_a_permutation() {
        for n in [1u64, 2, 3, 7, 64, 1000, 4096] {
            let o = Order::new(true, n, 42);
            let mut seen: Vec<u64> = (0..n).map(|i| o.at(i)).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n={n}");
        }
        let o = Order::new(true, 1000, 42);
        assert!((0..10).any(|i| o.at(i) != i), "not shuffled");
        let s = Order::new(false, 5, 1);
        assert_eq!(
            (0..5).map(|i| s.at(i)).collect::<Vec<_>>(),
            vec![0, 1, 2, 3, 4]
        );
    }

    #[test]
    fn sequential_random_and_norandommap() {
        assert_eq!(offsets(&[("bs", "4k")], 16 << 10), [0, 4096, 8192, 12288]);
        let mut r = offsets(&[("rw", "randread"), ("bs", "1k")], 64 << 10);
        assert_ne!(r, (0..64).map(|b| b * 1024).collect::<Vec<_>>());
        r.sort_unstable();
        assert_eq!(r, (0..64).map(|b| b * 1024).collect::<Vec<_>>());
        let f = offsets(
            &[("rw", "randread"), ("bs", "1k"), ("norandommap", "1")],
            64 << 10,
        );
        assert!(f.iter().all(|&o| o < 64 << 10 && o % 1024 == 0));
        let mut d = f.clone();
        d.sort_unstable();
        d.dedup();
        assert!(
            d.len() < f.len(),
            "64 draws from 64 blocks should repeat one"
        );
    }

    #[test]
    fn holes_and_backwards() {
        // rw=write:4k with bs=4k: every other block, then wrap.
        assert_eq!(
            offsets(&[("rw", "write:4k"), ("bs", "4k")], 32 << 10),
            [0, 8192, 16384, 24576, 0, 8192, 16384, 24576]
        );
        // rw=read:-8k with bs=4k walks back 4k at a time from the end.
        let b = offsets(&[("rw", "read:-8k"), ("bs", "4k")], 32 << 10);
        assert_eq!(&b[..4], [24576, 20480, 16384, 12288]);
        assert!(b.iter().all(|&o| o + 4096 <= 32 << 10));
    }

    #[test]
    fn random_runs_sequential_or_identical() {
        let s = offsets(&[("rw", "randread:4"), ("bs", "1k")], 64 << 10);
        for run in s.chunks(4) {
            for w in run.windows(2) {
                assert!(w[1] == w[0] + 1024 || w[1] == 0, "{run:?}");
            }
        }
        let i = offsets(
            &[
                ("rw", "randread:4"),
                ("rw_sequencer", "identical"),
                ("bs", "1k"),
            ],
            64 << 10,
        );
        for run in i.chunks(4) {
            assert!(run.iter().all(|&o| o == run[0]), "{run:?}");
        }
    }

    #[test]
    fn zoned_distribution_puts_the_accesses_where_it_says() {
        let o = offsets(
            &[
                ("rw", "randread"),
                ("bs", "1k"),
                ("random_distribution", "zoned:60/10:40/90"),
            ],
            1000 << 10,
        );
        let first_tenth = o.iter().filter(|&&b| b < 100 << 10).count();
        // 60% of the accesses go to the first 10% of the region.
        assert!((500..700).contains(&first_tenth), "{first_tenth}");
    }

    #[test]
    fn zipf_pareto_normal_offsets_are_skewed_scattered_and_aligned() {
        let size = 4096u64 << 10;
        for (dist, least) in [("zipf:1.2", 0.5), ("pareto:0.2", 0.5), ("normal", 0.25)] {
            let o = offsets(
                &[
                    ("rw", "randread"),
                    ("bs", "1k"),
                    ("random_distribution", dist),
                ],
                size,
            );
            assert_eq!(o.len(), 4096);
            assert!(o.iter().all(|&b| b < size && b % 1024 == 0), "{dist}");
            let mut count = std::collections::HashMap::<u64, u64>::new();
            for &b in &o {
                *count.entry(b).or_default() += 1;
            }
            let mut hot: Vec<(u64, u64)> = count.into_iter().map(|(b, c)| (c, b)).collect();
            hot.sort_unstable_by(|a, b| b.cmp(a));
            // The hottest 10% of the blocks (410) take well over 10% of
            // the accesses (uniform draws: about 0.25 with repeats).
            let top: u64 = hot.iter().take(410).map(|h| h.0).sum();
            let share = top as f64 / o.len() as f64;
            assert!(share > least, "{dist}: hottest 10% took {share}");
            // Blocks repeat: no random map.
            assert!(hot[0].0 > 1, "{dist}");
            // The hottest blocks are not all at the region's start.
            let spread = hot.iter().take(20).filter(|h| h.1 >= size / 2).count();
            assert!(spread > 0, "{dist}: hottest blocks {:?}", &hot[..20]);
        }
        // The same job gives the same offsets (verify reads back the same).
        let a = offsets(
            &[("rw", "randwrite"), ("random_distribution", "zipf:1.1")],
            1 << 20,
        );
        let b = offsets(
            &[("rw", "randwrite"), ("random_distribution", "zipf:1.1")],
            1 << 20,
        );
        assert_eq!(a, b);
    }

    #[test]
    fn zoned_abs_puts_the_accesses_where_it_says() {
        let o = offsets(
            &[
                ("rw", "randread"),
                ("bs", "1k"),
                ("random_distribution", "zoned_abs:70/100k:30/200k"),
            ],
            1000 << 10,
        );
        assert!(o.iter().all(|&b| b < 300 << 10 && b % 1024 == 0));
        let first = o.iter().filter(|&&b| b < 100 << 10).count();
        // 70% of 1000 accesses to the first 100k.
        assert!((600..800).contains(&first), "{first}");
        let mut j = Job::default();
        j.set("rw", Some("randread")).unwrap();
        j.set("random_distribution", Some("zoned_abs:50/1m:50/1m"))
            .unwrap();
        assert!(Offsets::check(&j, 2 << 20).is_ok());
        let e = Offsets::check(&j, 1 << 20).unwrap_err();
        assert!(e.contains("2097152 bytes") && e.contains("1048576"), "{e}");
    }

    #[test]
    fn percentage_random_mixes_runs_and_random_blocks() {
        let n = 1000u64;
        let mixed = |pct: &str| {
            offsets(
                &[("rw", "randread"), ("bs", "1k"), ("percentage_random", pct)],
                n << 10,
            )
        };
        let follows = |o: &[u64]| {
            o.windows(2)
                .filter(|w| w[1] == (w[0] + 1024) % (n << 10))
                .count()
        };
        // 0%: plain sequential.
        assert_eq!(mixed("0"), (0..n).map(|b| b * 1024).collect::<Vec<_>>());
        // 100%: the random permutation, as without the option.
        let full = mixed("100");
        assert_eq!(full, offsets(&[("rw", "randread"), ("bs", "1k")], n << 10));
        assert!(follows(&full) < 10);
        // 30% random: about 70% of the I/Os follow on from the one before.
        let m = mixed("30");
        assert!(m.iter().all(|&b| b < n << 10 && b % 1024 == 0));
        let f = follows(&m);
        assert!((600..800).contains(&f), "{f} of {n} follow on");
        // With rw=randread:4 the choice is made once per run of 4.
        let r = offsets(
            &[
                ("rw", "randread:4"),
                ("bs", "1k"),
                ("percentage_random", "50"),
            ],
            64 << 10,
        );
        for run in r.chunks(4) {
            for w in run.windows(2) {
                assert!(w[1] == (w[0] + 1024) % (64 << 10), "{run:?}");
            }
        }
    }

    #[test]
    fn lfsr_keeps_every_block_once_with_norandommap() {
        let mut o = offsets(
            &[
                ("rw", "randread"),
                ("bs", "1k"),
                ("norandommap", "1"),
                ("random_generator", "lfsr"),
            ],
            64 << 10,
        );
        o.sort_unstable();
        assert_eq!(o, (0..64).map(|b| b * 1024).collect::<Vec<_>>());
    }

    #[test]
    fn strided_zones() {
        // 4 zones of 16k with 8k skipped between, 8k moved in each.
        let z = offsets(
            &[
                ("bs", "4k"),
                ("zonemode", "strided"),
                ("zonerange", "16k"),
                ("zonesize", "8k"),
                ("zoneskip", "8k"),
            ],
            96 << 10,
        );
        assert_eq!(&z[..8], [0, 4096, 24576, 28672, 49152, 53248, 73728, 77824]);
        // Past the last zone that fits, back to the first.
        assert_eq!(z[8], 0);
        let j = Job {
            rw: Rw::RandRead,
            ..Job::default()
        };
        assert!(Offsets::new(&j, 1 << 20, 1).at(5) < 1 << 20);
    }
}
