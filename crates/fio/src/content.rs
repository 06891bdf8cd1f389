//! What a job writes (fio's `fill_io_buffer`, `get_buf_state` and
//! `small_content_scramble`): random bytes, zeros or a pattern; with
//! `buffer_compress_percentage` each chunk's tail zeroed (or patterned) so
//! that share compresses; with `dedupe_percentage` that share of buffers
//! made again from an earlier buffer's seed — the previous one, or one of a
//! working set, possibly shared by every job (`dedupe_global`) — so that
//! share deduplicates; and without refilling, each write's 512-byte blocks
//! stamped with its offset and time so reused buffers do not.
//!
//! Each unique buffer is made from a seed, one seed per chunk drawn from
//! it, so making a buffer again from the same seed gives the same bytes:
//! that is what dedupes, as in fio.

use crate::job::Job;
use crate::job::buffers::DedupeMode;
use crate::payload::{self, Direction, splitmix};

/// Bytes per block that fio stamps when scrambling.
const SCRAMBLE_BLOCK: usize = 512;

/// A job's buffer maker: its options and where its random streams are.
pub struct Content {
    zero: bool,
    pattern: Option<Vec<u8>>,
    randseed: u64,
    /// Compression and dedupe are on: buffers are made chunk by chunk
    /// from seeds (fio's TD_F_COMPRESS path).
    generated: bool,
    compress_pct: u32,
    /// Bytes per chunk: `buffer_compress_chunk`, at most the smallest write.
    chunk: usize,
    dedupe_pct: u32,
    mode: DedupeMode,
    /// The job's own stream of unique buffers.
    stream: u64,
    /// Unique buffers made so far.
    unique: u64,
    /// The seed of the last unique buffer (`repeat` makes it again).
    prev: u64,
    /// Draws whether a buffer dedupes, and which working-set page.
    rng: u64,
    /// Working-set pages, and with `dedupe_global` where they come from:
    /// (this job's index, the run's jobs, pages per job).
    pages: u64,
    global: Option<(u64, u64, u64)>,
    /// Buffers are refilled before every write.
    pub refill: bool,
    /// Writes of reused buffers are stamped (fio's scramble_buffers).
    pub scramble: bool,
}

impl Content {
    /// The maker for `job`, whose writes go over a region of `size` bytes
    /// (the working set is a share of it).
    pub fn new(job: &Job, size: u64) -> Content {
        let b = &job.buffers;
        // fio: a fully compressible buffer is all zeros.
        let (zero, compress_pct) = match job.compress_pct {
            100 => (true, 0),
            p => (job.zero_buffers, p),
        };
        let generated = compress_pct > 0 || b.dedupe_pct > 0;
        let refill =
            job.refill_buffers || (job.compress_pct > 0 && compress_pct > 0 && !b.refill_set);
        let min_write = job.min_bs().max(1);
        let stream = stream_of(job.randseed, u64::from(b.job_index));
        let pages = (size.saturating_mul(u64::from(b.dedupe_ws_pct)) / 100 / min_write).max(1);
        let jobs = u64::from(b.jobs.max(1));
        Content {
            zero,
            pattern: job.buffer_pattern.clone(),
            randseed: job.randseed,
            generated,
            compress_pct,
            chunk: job.compress_chunk.clamp(1, min_write) as usize,
            dedupe_pct: b.dedupe_pct,
            mode: b.dedupe_mode,
            stream,
            unique: 0,
            prev: seed_of(stream, 0),
            rng: stream ^ 0xdede_dede,
            pages,
            global: b
                .dedupe_global
                .then(|| (u64::from(b.job_index), jobs, (pages / jobs).max(1))),
            refill,
            scramble: b.scramble
                && (b.scramble_set || !job.zero_buffers)
                && !b.generated
                && job.verify.is_none(),
        }
    }

    /// Fills `buf` as fio fills a write buffer; `n` varies plain random
    /// buffers (the I/O's number).
    pub fn fill(&mut self, buf: &mut [u8], n: u64) {
        if self.generated {
            let seed = self.next_seed();
            self.fill_from(buf, seed);
        } else if let Some(p) = &self.pattern {
            for (b, v) in buf.iter_mut().zip(p.iter().cycle()) {
                *b = *v;
            }
        } else if self.zero {
            buf.fill(0);
        } else {
            payload::fill(buf, self.randseed, n, Direction::Request);
        }
    }

    /// The seed of the next buffer: a new unique one, or an earlier one
    /// again for `dedupe_percentage` of them.
    fn next_seed(&mut self) -> u64 {
        let dedupe = match self.dedupe_pct {
            0 => false,
            // fio: every buffer is the first one.
            100 => return self.prev,
            p => splitmix(&mut self.rng) % 100 < u64::from(p),
        };
        if !dedupe {
            let s = seed_of(self.stream, self.unique);
            self.unique += 1;
            self.prev = s;
            return s;
        }
        match self.mode {
            DedupeMode::Repeat => self.prev,
            DedupeMode::WorkingSet => {
                let page = splitmix(&mut self.rng) % self.pages;
                self.page_seed(page)
            }
        }
    }

    /// Working-set page `i`: the job's own i-th unique buffer, or with
    /// `dedupe_global` the pages taken in turn from each job's first
    /// buffers, starting with this job's (fio's seed rotation), so that
    /// jobs write each other's buffers. The other jobs' streams are
    /// derived from this job's `randseed`: they match when the jobs share
    /// it (fio's default).
    fn page_seed(&self, i: u64) -> u64 {
        match self.global {
            None => seed_of(self.stream, i),
            Some((me, jobs, per)) => {
                let job = (me + i / per) % jobs;
                seed_of(stream_of(self.randseed, job), i % per)
            }
        }
    }

    /// A buffer from `seed`: each chunk random for its first
    /// (100 - compress)% and zeros (or the pattern) after, as fio's
    /// `fill_random_buf_percentage`.
    fn fill_from(&self, buf: &mut [u8], seed: u64) {
        let mut s = seed;
        for c in buf.chunks_mut(self.chunk) {
            let chunk_seed = splitmix(&mut s);
            let random = c.len() * (100 - self.compress_pct as usize) / 100;
            let (head, tail) = c.split_at_mut(random);
            payload::fill(head, chunk_seed, 0, Direction::Request);
            match &self.pattern {
                Some(p) => {
                    for (b, v) in tail.iter_mut().zip(p.iter().cycle()) {
                        *b = *v;
                    }
                }
                None => tail.fill(0),
            }
        }
    }

    /// fio's `small_content_scramble`: in each 512-byte block the write's
    /// offset goes into one of its 64-byte lines (chosen from the time and
    /// offset) and the time (s, ns) into bytes 48..64.
    pub fn stamp(buf: &mut [u8], offset: u64, at_ns: u64) {
        let (sec, nsec) = (at_ns / 1_000_000_000, at_ns % 1_000_000_000);
        let line = ((nsec ^ offset) & 7) as usize * 64;
        for (i, b) in buf.chunks_exact_mut(SCRAMBLE_BLOCK).enumerate() {
            let off = offset + (i * SCRAMBLE_BLOCK) as u64;
            b[line..line + 8].copy_from_slice(&off.to_ne_bytes());
            b[48..56].copy_from_slice(&sec.to_ne_bytes());
            b[56..64].copy_from_slice(&nsec.to_ne_bytes());
        }
    }
}

/// Job `index`'s stream of unique buffers.
fn stream_of(randseed: u64, index: u64) -> u64 {
    let mut s = randseed ^ index.wrapping_mul(0xa076_1d64_78bd_642f) ^ 0xb0ff_e75e_ed00_0001;
    splitmix(&mut s)
}

/// The seed of unique buffer `k` of `stream`.
fn seed_of(stream: u64, k: u64) -> u64 {
    let mut s = stream ^ k.wrapping_mul(0xe703_7ed1_a0b4_28db);
    splitmix(&mut s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn job(opts: &[(&str, &str)]) -> Job {
        let mut j = Job::default();
        for (k, v) in opts {
            j.set(k, Some(v)).unwrap();
        }
        j.resolve_block_sizes().unwrap();
        j
    }

    /// Distinct buffers among `n` made by `c`.
    fn distinct(c: &mut Content, n: usize, bs: usize) -> usize {
        let mut seen = HashSet::new();
        for i in 0..n {
            let mut b = vec![0u8; bs];
            c.fill(&mut b, i as u64);
            seen.insert(b);
        }
        seen.len()
    }

    #[test]
    fn dedupe_repeats_that_share_of_buffers() {
        let j = job(&[("dedupe_percentage", "40"), ("bs", "4k")]);
        let mut c = Content::new(&j, 64 << 20);
        assert!(c.refill && !c.scramble);
        let d = distinct(&mut c, 2000, 4096);
        assert!((1100..1300).contains(&d), "{d}");
        // Working set: duplicates of a few pages.
        let j = job(&[
            ("dedupe_percentage", "50"),
            ("dedupe_mode", "working_set"),
            ("dedupe_working_set_percentage", "1"),
        ]);
        let mut c = Content::new(&j, 4 << 20);
        let d = distinct(&mut c, 2000, 4096);
        assert!((900..1100).contains(&d), "{d}");
    }

    #[test]
    fn compression_zeros_the_tail_of_each_chunk() {
        let j = job(&[("buffer_compress_percentage", "60"), ("bs", "4k")]);
        let mut c = Content::new(&j, 1 << 20);
        assert!(c.refill);
        let mut b = vec![0xffu8; 4096];
        c.fill(&mut b, 0);
        for chunk in b.chunks(512) {
            assert!(chunk[204..].iter().all(|&x| x == 0));
            assert!(chunk[..204].iter().filter(|&&x| x == 0).count() < 10);
        }
        // 100% is all zeros; refill_buffers=0 is kept.
        let j = job(&[("buffer_compress_percentage", "100")]);
        let mut c = Content::new(&j, 1 << 20);
        c.fill(&mut b, 0);
        assert!(b.iter().all(|&x| x == 0));
        let j = job(&[
            ("buffer_compress_percentage", "50"),
            ("refill_buffers", "0"),
        ]);
        assert!(!Content::new(&j, 1 << 20).refill);
    }

    #[test]
    fn scrambling_follows_fios_flags() {
        assert!(Content::new(&job(&[]), 1 << 20).scramble);
        assert!(!Content::new(&job(&[("zero_buffers", "1")]), 1 << 20).scramble);
        let both = job(&[("zero_buffers", "1"), ("scramble_buffers", "1")]);
        assert!(Content::new(&both, 1 << 20).scramble);
        assert!(!Content::new(&job(&[("buffer_pattern", "0xab")]), 1 << 20).scramble);
        let mut b = vec![0u8; 1024];
        Content::stamp(&mut b, 4096, 1_000_000_003);
        assert_eq!(&b[48..56], &1u64.to_ne_bytes());
        assert_eq!(&b[512 + 56..512 + 64], &3u64.to_ne_bytes());
        let line = ((3u64 ^ 4096) & 7) as usize * 64;
        assert_eq!(&b[512 + line..512 + line + 8], &4608u64.to_ne_bytes());
    }

    #[test]
    fn global_dedupe_shares_pages_between_jobs() {
        let mk = |i: u32| {
            let mut j = job(&[
                ("dedupe_percentage", "100"),
                ("dedupe_mode", "working_set"),
                ("dedupe_global", "1"),
            ]);
            (j.buffers.job_index, j.buffers.jobs) = (i, 2);
            Content::new(&j, 1 << 20)
        };
        let (a, b) = (mk(0), mk(1));
        // Job 0's second half of pages are job 1's first buffers.
        let per = a.pages / 2;
        assert_eq!(a.page_seed(per), b.page_seed(0));
        assert_eq!(a.page_seed(0), seed_of(a.stream, 0));
    }
}
