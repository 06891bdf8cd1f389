//! Block sizes, drawn and placed (the options are `job::blocksizes`'s).
//! Mixed block sizes: fio's `bs=R,W`, `bsrange=`/`blocksize_range=` and
//! `bssplit=`. Each I/O draws its length; `Extents` then places it — one
//! after another for sequential jobs, and for random jobs at a random
//! unit (the smallest size) that no I/O of this pass has covered yet, so
//! that, as fio's random map does, a pass touches every byte once and no
//! two I/Os of a pass overlap (which a verify pass depends on).

use crate::offsets::Offsets;
use crate::payload::splitmix;

pub use crate::job::blocksizes::BlockSizes;

/// Places a job's I/Os of mixed lengths in its region of `size` bytes
/// (a multiple of the smallest length).
pub struct Extents {
    sizes: BlockSizes,
    unit: u64,
    /// Where random I/Os may start: every `slot` bytes (fio's `blockalign`,
    /// by default the smallest length); the random map counts slots.
    slot: u64,
    size: u64,
    random: bool,
    /// Random jobs with fio's random map: which slots this pass covered.
    map: Option<Vec<u64>>,
    /// No two I/Os of a pass overlap (a verified job): a random I/O is cut
    /// to the free run at its start, not only to the region's end.
    tile: bool,
    covered: u64,
    /// The next permutation index to try.
    probe: u64,
    /// Sequential jobs: where the next I/O starts.
    cursor: u64,
    rng: u64,
    /// Each new pass (a sequential wrap, a random map filled) bumps it.
    pub pass: u64,
}

/// Regions with more units than this draw random offsets without a map
/// (repeats allowed, as `norandommap`): the map would take over 256 MiB.
const MAP_UNITS_MAX: u64 = 1 << 31;

impl Extents {
    /// `offsets` (built with the smallest length as its block size) gives
    /// random units; `plain_random` says whether it is a plain permutation
    /// (no `norandommap`, zoned distribution or `rw=randread:N` runs),
    /// where a map keeps I/Os of one pass apart; `align` (a multiple of
    /// the smallest length, or 0) aligns random starts (`blockalign`).
    pub fn new(
        sizes: BlockSizes,
        size: u64,
        random: bool,
        plain_random: bool,
        tile: bool,
        align: u64,
        seed: u64,
    ) -> Extents {
        let unit = sizes.min().max(1);
        let units = (size / unit).max(1);
        let slot = if align > unit && align <= units * unit && align.is_multiple_of(unit) {
            align
        } else {
            unit
        };
        let slots = (units * unit / slot).max(1);
        let map = (random && plain_random && slots <= MAP_UNITS_MAX)
            .then(|| vec![0u64; slots.div_ceil(64) as usize]);
        Extents {
            sizes,
            unit,
            slot,
            size: units * unit,
            random,
            map,
            tile,
            covered: 0,
            probe: 0,
            cursor: 0,
            rng: seed ^ 0x5eed_b10c,
            pass: 0,
        }
    }

    /// The I/O the job issues next in direction `dir` (0 read, 1 write):
    /// (offset from the region's start, length). `i` is its index, for
    /// offset generators that are functions of it; `left` the bytes the job
    /// has still to move (its last I/O is cut to end it exactly).
    pub fn next(&mut self, offsets: &Offsets, i: u64, dir: usize, left: u64) -> (u64, u64) {
        let choice = &self.sizes.dirs[dir.min(1)];
        let want = choice.pick(splitmix(&mut self.rng));
        let want = if want > left {
            choice.fit(want, left.max(self.unit), self.unit)
        } else {
            want
        };
        if !self.random {
            if self.cursor >= self.size {
                self.cursor = 0;
                self.pass += 1;
            }
            let at = self.cursor;
            let len = choice.fit(want, self.size - at, self.unit);
            self.cursor += len;
            return (at, len);
        }
        let (units, slot) = (self.size / self.unit, self.slot);
        let slots = self.size / slot;
        let Some(map) = self.map.as_mut() else {
            let at = (offsets.at(i) / slot).min(slots - 1) * slot;
            return (at, choice.fit(want, self.size - at, self.unit));
        };
        if self.covered >= slots {
            map.iter_mut().for_each(|w| *w = 0);
            self.covered = 0;
            self.pass += 1;
        }
        let taken = |map: &[u64], u: u64| map[(u / 64) as usize] & (1 << (u % 64)) != 0;
        // The permutation visits every unit once per `units` probes (so
        // every slot too): the first free slot it meets starts this I/O.
        let start = loop {
            let u = (offsets.at(self.probe) / slot).min(slots - 1);
            self.probe = (self.probe + 1) % units;
            if !taken(map, u) {
                break u;
            }
        };
        // As fio: the start is a slot this pass has not covered; the length
        // is cut to the region's end, and for a verified job to the free
        // run, so that no I/O overwrites another's checked data.
        let mut room = self.size - start * slot;
        if self.tile {
            let want_slots = want.div_ceil(slot);
            let mut free = 1u64;
            while free < want_slots && start + free < slots && !taken(map, start + free) {
                free += 1;
            }
            room = room.min(free * slot);
        }
        let len = choice.fit(want, room, self.unit);
        for u in start..(start + len.div_ceil(slot)).min(slots) {
            let (w, bit) = ((u / 64) as usize, 1u64 << (u % 64));
            if map[w] & bit == 0 {
                map[w] |= bit;
                self.covered += 1;
            }
        }
        (start * slot, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::blocksizes::Choice;
    use crate::job::{Job, Rw};

    fn split(v: &[(u64, u32)]) -> Choice {
        Choice::Split(v.to_vec())
    }

    fn both(c: Choice) -> BlockSizes {
        BlockSizes {
            dirs: [c.clone(), c],
        }
    }

    fn offsets(random: bool, unit: u64, size: u64) -> Offsets {
        let j = Job {
            rw: if random { Rw::RandWrite } else { Rw::Write },
            bs: unit,
            ..Job::default()
        };
        Offsets::new(&j, size, 9)
    }

    #[test]
    fn picks_follow_the_weights_and_the_range() {
        let c = split(&[(4096, 70), (65536, 30)]);
        let mut s = 1u64;
        let n = 20_000;
        let small = (0..n).filter(|_| c.pick(splitmix(&mut s)) == 4096).count();
        let share = small as f64 / n as f64;
        assert!((0.65..0.75).contains(&share), "{share}");
        let r = Choice::Range {
            lo: 4096,
            hi: 65536,
        };
        let picks: Vec<u64> = (0..2000).map(|_| r.pick(splitmix(&mut s))).collect();
        assert!(
            picks
                .iter()
                .all(|&p| (4096..=65536).contains(&p) && p % 4096 == 0)
        );
        assert!(picks.contains(&4096) && picks.contains(&65536));
    }

    #[test]
    fn sequential_extents_tile_the_region_pass_after_pass() {
        let sizes = both(split(&[(4096, 50), (12288, 50)]));
        let size = 1 << 20;
        let o = offsets(false, 4096, size);
        let mut e = Extents::new(sizes, size, false, true, false, 0, 3);
        let mut at = 0;
        let mut i = 0;
        while e.pass == 0 || at != 0 {
            let (off, len) = e.next(&o, i, 1, u64::MAX);
            if e.pass > 0 {
                assert_eq!(off, 0, "a new pass starts at the region's start");
                break;
            }
            assert_eq!(off, at);
            assert!(off + len <= size);
            at += len;
            i += 1;
        }
        assert_eq!(at, size, "the first pass covered the region exactly");
    }

    #[test]
    fn random_extents_cover_every_byte_once_per_pass_without_overlap() {
        for c in [
            split(&[(4096, 60), (16384, 30), (65536, 10)]),
            Choice::Range {
                lo: 4096,
                hi: 131072,
            },
        ] {
            let size = 4 << 20;
            let o = offsets(true, 4096, size);
            let mut e = Extents::new(both(c), size, true, true, true, 0, 5);
            let mut seen = vec![0u8; (size / 4096) as usize];
            let mut total = 0;
            let mut i = 0;
            let mut starts = Vec::new();
            while total < size {
                let (off, len) = e.next(&o, i, 0, u64::MAX);
                assert_eq!(off % 4096, 0);
                assert!(len >= 4096 && off + len <= size);
                for u in off / 4096..(off + len) / 4096 {
                    seen[u as usize] += 1;
                }
                starts.push(off);
                total += len;
                i += 1;
            }
            assert_eq!(total, size);
            assert!(seen.iter().all(|&n| n == 1), "each unit once per pass");
            assert!(starts.windows(2).any(|w| w[1] < w[0]), "not sequential");
            assert_eq!(e.pass, 0);
            e.next(&o, i, 0, u64::MAX);
            assert_eq!(e.pass, 1, "the next I/O starts a new pass");
        }
    }

    #[test]
    fn blockalign_puts_random_starts_on_its_boundaries_without_overlap() {
        let size = 1 << 20;
        let o = offsets(true, 512, size);
        let c = split(&[(512, 50), (4096, 30), (16384, 20)]);
        let mut e = Extents::new(both(c), size, true, true, true, 4096, 7);
        let mut seen = vec![0u8; (size / 512) as usize];
        let mut i = 0;
        while e.pass == 0 && i < 100_000 {
            let (off, len) = e.next(&o, i, 1, u64::MAX);
            if e.pass > 0 {
                break;
            }
            assert_eq!(off % 4096, 0, "start {off} not on a 4k boundary");
            assert!(off + len <= size);
            for u in off / 512..(off + len) / 512 {
                seen[u as usize] += 1;
            }
            i += 1;
        }
        assert_eq!(e.pass, 1, "the pass ended");
        assert!(seen.iter().all(|&n| n <= 1), "no overlap");
    }

    #[test]
    fn lengths_are_cut_to_fit_and_text_reads_back() {
        let c = split(&[(4096, 50), (65536, 50)]);
        assert_eq!(c.fit(65536, 8192, 4096), 4096);
        assert_eq!(c.fit(65536, 65536, 4096), 65536);
        let r = Choice::Range {
            lo: 4096,
            hi: 1 << 20,
        };
        assert_eq!(r.fit(1 << 20, 3 * 4096 + 100, 4096), 3 * 4096);
        // A fixed size that does not fit is cut to whole units of the job.
        assert_eq!(Choice::Fixed(65536).fit(65536, 12288, 4096), 12288);
        let b = BlockSizes {
            dirs: [Choice::Fixed(8192), r],
        };
        assert_eq!((b.min(), b.max()), (4096, 1 << 20));
        assert_eq!(b.text(), "8k,4k-1M");
        assert!(b.all_multiples_of(4096) && !b.all_multiples_of(8192));
    }
}
