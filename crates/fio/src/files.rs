//! A job's several files (fio's `nrfiles=`, `filename=a:b:c`): each file's
//! region and its own offset order (fio keeps per-file state: a sequential
//! job walks each file from its start, a random one visits each file's
//! blocks once per pass), and which file the next I/O goes to — fio's
//! `file_service_type=` (`roundrobin`, `sequential`, `random`, each with
//! `:N` I/Os before switching) within fio's `openfiles=` limit.
//!
//! A job with one file is the same machinery with one region: the offsets
//! are exactly the single file's.

use crate::job::Job;
use crate::offsets::Offsets;
use crate::payload::splitmix;

pub use crate::job::file_service::{FileService, Service};

/// One file's part of a job: its name (after `--map`, for messages) and
/// the region `[offset, offset + size)` the job covers in it.
#[derive(Clone, Debug)]
pub struct Region {
    pub name: String,
    pub offset: u64,
    pub size: u64,
}

/// The job's files and which one each I/O goes to, one pass after another.
/// [`FileSet::next`] is called once per I/O issued, in order, so the
/// sequence is the same on every run with the same seed.
pub struct FileSet {
    regions: Vec<Region>,
    orders: Vec<Offsets>,
    /// I/Os per file in one pass (the region's blocks).
    blocks: Vec<u64>,
    /// I/Os issued to each file, over every pass.
    issued: Vec<u64>,
    /// I/Os issued to each file in this pass.
    in_pass: Vec<u64>,
    /// Files in service now (fio's open files), at most `max_open`.
    open: Vec<bool>,
    open_count: usize,
    max_open: usize,
    service: FileService,
    current: Option<usize>,
    /// I/Os left for `current` before another file is chosen.
    left: u32,
    /// Where round robin looks next.
    next_rr: usize,
    /// I/Os in one pass over every file (fewer than their blocks when
    /// `size=` caps a job whose files are sized by `filesize=`).
    pass_ios: u64,
    done_in_pass: u64,
    /// Passes started after the first (each `loops` round or time_based wrap).
    pub passes: u64,
    rng: u64,
}

impl FileSet {
    /// The files of `job` over `regions` (each a whole number of blocks);
    /// `seed` varies per clone, `cap` limits the I/Os of one pass.
    pub fn new(job: &Job, regions: Vec<Region>, seed: u64, cap: Option<u64>) -> FileSet {
        let bs = job.bs.max(1);
        let n = regions.len().max(1);
        // Each file its own random order, as fio seeds each file's map.
        let orders: Vec<Offsets> = regions
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let s = if i == 0 {
                    seed
                } else {
                    seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
                };
                Offsets::new(job, r.size, s)
            })
            .collect();
        let blocks: Vec<u64> = regions.iter().map(|r| (r.size / bs).max(1)).collect();
        let all: u64 = blocks.iter().sum();
        let max_open = job.openfiles.map_or(n, |m| (m as usize).clamp(1, n));
        FileSet {
            orders,
            issued: vec![0; n],
            in_pass: vec![0; n],
            open: vec![false; n],
            open_count: 0,
            max_open,
            service: job.file_service,
            current: None,
            left: 0,
            next_rr: 0,
            pass_ios: cap.map_or(all, |c| c.clamp(1, all)),
            done_in_pass: 0,
            passes: 0,
            rng: seed ^ 0xf11e_5e1e_c7ed_0001,
            blocks,
            regions,
        }
    }

    /// How many files.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.regions.len()
    }

    /// I/Os in one pass over all the files.
    pub fn pass_ios(&self) -> u64 {
        self.pass_ios
    }

    /// Where file `f`'s region starts in it.
    pub fn start(&self, f: usize) -> u64 {
        self.regions[f].offset
    }

    /// File `f`'s name, for messages.
    pub fn name(&self, f: usize) -> &str {
        &self.regions[f].name
    }

    /// The regions' sizes added up.
    pub fn total_size(&self) -> u64 {
        self.regions.iter().map(|r| r.size).sum()
    }

    /// File `f`'s offset order.
    pub fn order(&self, f: usize) -> &Offsets {
        &self.orders[f]
    }

    /// The regions.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// I/Os issued to each file so far.
    pub fn issued(&self) -> &[u64] {
        &self.issued
    }

    fn done(&self, f: usize) -> bool {
        self.in_pass[f] >= self.blocks[f]
    }

    /// Whether file `f` may be served now: not done this pass, and in
    /// service or with room to bring it in (fio opens it then).
    fn usable(&self, f: usize) -> bool {
        !self.done(f) && (self.open[f] || self.open_count < self.max_open)
    }

    /// The file the next I/O goes to, as `file_service_type` says.
    fn pick(&mut self) -> usize {
        let n = self.len();
        if n == 1 {
            return 0;
        }
        if let Some(c) = self.current
            && !self.done(c)
        {
            if self.service.kind == Service::Sequential {
                return c;
            }
            if self.left > 0 {
                self.left -= 1;
                return c;
            }
        }
        let f = match self.service.kind {
            Service::RoundRobin | Service::Sequential => {
                let mut f = self.next_rr;
                for _ in 0..n {
                    if self.usable(f) {
                        break;
                    }
                    f = (f + 1) % n;
                }
                self.next_rr = (f + 1) % n;
                f
            }
            Service::Random => {
                let usable: Vec<usize> = (0..n).filter(|&f| self.usable(f)).collect();
                usable[(splitmix(&mut self.rng) % usable.len().max(1) as u64) as usize]
            }
        };
        self.current = Some(f);
        self.left = self.service.per.saturating_sub(1);
        f
    }

    /// Starts a new pass: every file back at its start, none in service.
    fn new_pass(&mut self) {
        self.passes += 1;
        for f in 0..self.len() {
            // The next pass starts each file's order afresh.
            let b = self.blocks[f];
            self.issued[f] = self.issued[f].div_ceil(b) * b;
            self.in_pass[f] = 0;
            self.open[f] = false;
        }
        self.open_count = 0;
        self.current = None;
        self.left = 0;
        self.next_rr = 0;
        self.done_in_pass = 0;
    }

    /// The next I/O's file and its offset relative to that file's region.
    // Not an Iterator: the draws never end, and none is optional.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> (usize, u64) {
        if self.done_in_pass >= self.pass_ios {
            self.new_pass();
        }
        let f = self.pick();
        if !self.open[f] {
            self.open[f] = true;
            self.open_count += 1;
        }
        let i = self.issued[f];
        self.issued[f] += 1;
        self.in_pass[f] += 1;
        self.done_in_pass += 1;
        if self.done(f) {
            // fio closes a file when its pass is done, making room.
            self.open[f] = false;
            self.open_count -= 1;
        }
        (f, self.orders[f].at(i))
    }

    /// Blocks the first pass wrote, for the read-back: how many.
    pub fn written_count(&self) -> u64 {
        (0..self.len())
            .map(|f| self.issued[f].min(self.blocks[f]))
            .sum()
    }

    /// The `i`-th of them (file by file, each in its own order): the file
    /// and the offset relative to its region.
    pub fn written(&self, mut i: u64) -> (usize, u64) {
        for f in 0..self.len() {
            let w = self.issued[f].min(self.blocks[f]);
            if i < w {
                return (f, self.orders[f].at(i));
            }
            i -= w;
        }
        (0, self.orders[0].at(0))
    }
}

/// The byte size of each of `n` files sharing `size` bytes, as fio splits
/// them: `size / n` rounded down to a block, the first files one block
/// more until the remainder is used.
pub fn split_size(size: u64, n: u64, bs: u64) -> Vec<u64> {
    let n = n.max(1);
    let bs = bs.max(1);
    let each = size / n / bs * bs;
    let mut extra = (size - each * n) / bs;
    (0..n)
        .map(|_| {
            let mut s = each;
            if extra > 0 {
                extra -= 1;
                s += bs;
            }
            s
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(lines: &[(&str, &str)], sizes: &[u64]) -> FileSet {
        let mut j = Job::default();
        for (k, v) in lines {
            j.set(k, Some(v)).unwrap();
        }
        let regions = sizes
            .iter()
            .enumerate()
            .map(|(i, &s)| Region {
                name: format!("f{i}"),
                offset: 0,
                size: s,
            })
            .collect();
        FileSet::new(&j, regions, 7, None)
    }

    fn files(s: &mut FileSet, n: usize) -> Vec<usize> {
        (0..n).map(|_| s.next().0).collect()
    }

    #[test]
    fn parse_service_types() {
        let p = |v| FileService::parse(v);
        assert_eq!(p("roundrobin").unwrap(), FileService::default());
        assert_eq!(
            p("random:8").unwrap(),
            FileService {
                kind: Service::Random,
                per: 8
            }
        );
        assert_eq!(p("sequential").unwrap().kind, Service::Sequential);
        assert!(p("zipf:1.2").unwrap_err().contains("zipf distribution"));
        assert!(p("gauss").unwrap_err().contains("not supported yet"));
        assert!(
            p("bogus")
                .unwrap_err()
                .contains("unknown file service type")
        );
        assert!(p("roundrobin:0").unwrap_err().contains("from 1"));
        assert_eq!(p("roundrobin:4").unwrap().text(), "roundrobin:4");
    }

    #[test]
    fn roundrobin_sequential_and_random_visit_each_file_its_blocks() {
        let k = 4096;
        let mut rr = set(&[("rw", "write")], &[3 * k, 3 * k, 3 * k]);
        assert_eq!(files(&mut rr, 9), [0, 1, 2, 0, 1, 2, 0, 1, 2]);
        let mut rr2 = set(
            &[("rw", "write"), ("file_service_type", "roundrobin:2")],
            &[4 * k, 4 * k],
        );
        assert_eq!(files(&mut rr2, 8), [0, 0, 1, 1, 0, 0, 1, 1]);
        let mut seq = set(
            &[("rw", "write"), ("file_service_type", "sequential")],
            &[2 * k, 3 * k],
        );
        let got: Vec<(usize, u64)> = (0..5).map(|_| seq.next()).collect();
        assert_eq!(got, [(0, 0), (0, k), (1, 0), (1, k), (1, 2 * k)]);
        // A second pass starts each file over.
        assert_eq!(seq.next(), (0, 0));
        // Random: every block of every file once per pass.
        let mut r = set(
            &[("rw", "randwrite"), ("file_service_type", "random")],
            &[8 * k, 4 * k, 4 * k],
        );
        let mut seen: Vec<(usize, u64)> = (0..16).map(|_| r.next()).collect();
        let order: Vec<usize> = seen.iter().map(|x| x.0).collect();
        assert_ne!(order, [0; 16]);
        seen.sort_unstable();
        let mut want: Vec<(usize, u64)> = (0..8).map(|b| (0, b * k)).collect();
        want.extend((0..4).map(|b| (1, b * k)));
        want.extend((0..4).map(|b| (2, b * k)));
        assert_eq!(seen, want);
        assert_eq!(r.written_count(), 16);
    }

    #[test]
    fn unequal_files_and_openfiles() {
        let k = 4096;
        // The small file is done first; the rest go on.
        let mut rr = set(&[("rw", "write")], &[k, 3 * k]);
        assert_eq!(files(&mut rr, 4), [0, 1, 1, 1]);
        // openfiles=1: round robin serves one file until it is done.
        let mut one = set(
            &[("rw", "write"), ("openfiles", "1")],
            &[2 * k, 2 * k, 2 * k],
        );
        assert_eq!(files(&mut one, 6), [0, 0, 1, 1, 2, 2]);
        let mut two = set(
            &[("rw", "write"), ("openfiles", "2")],
            &[2 * k, 2 * k, 2 * k],
        );
        assert_eq!(files(&mut two, 6), [0, 1, 0, 1, 2, 2]);
    }

    #[test]
    fn read_back_covers_what_the_first_pass_wrote() {
        let k = 4096;
        let mut s = set(&[("rw", "write")], &[2 * k, 2 * k]);
        files(&mut s, 3);
        assert_eq!(s.written_count(), 3);
        assert_eq!(
            (0..3).map(|i| s.written(i)).collect::<Vec<_>>(),
            [(0, 0), (0, k), (1, 0)]
        );
    }

    #[test]
    fn split_as_fio_splits() {
        assert_eq!(split_size(96 << 10, 3, 4096), [32 << 10; 3]);
        assert_eq!(
            split_size(5 * 4096, 3, 4096),
            [4096 + 4096, 4096 + 4096, 4096]
        );
    }
}
