//! Block sizes, the job's part: mixed sizes as a job sets them (fio's
//! `bs=R,W`, `bsrange=`, `bssplit=`). One concept in three places, each in
//! its layer: the options here, drawing and placing each I/O's length in
//! the top-level `blocksizes` module, and the worker's use of them when it issues.

/// How one direction's I/O lengths are chosen.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Choice {
    /// Every I/O this long.
    Fixed(u64),
    /// A multiple of `lo` between `lo` and `hi`, uniformly (fio's bsrange
    /// without `bs_unaligned`).
    Range { lo: u64, hi: u64 },
    /// (length, weight in percent): fio's bssplit; weights sum to 100.
    Split(Vec<(u64, u32)>),
}

impl Choice {
    fn min(&self) -> u64 {
        match self {
            Choice::Fixed(b) => *b,
            Choice::Range { lo, .. } => *lo,
            Choice::Split(v) => v.iter().map(|e| e.0).min().unwrap_or(1),
        }
    }

    fn max(&self) -> u64 {
        match self {
            Choice::Fixed(b) => *b,
            Choice::Range { hi, .. } => *hi,
            Choice::Split(v) => v.iter().map(|e| e.0).max().unwrap_or(1),
        }
    }

    /// The length drawn by `r` (a uniform 64-bit draw).
    pub fn pick(&self, r: u64) -> u64 {
        match self {
            Choice::Fixed(b) => *b,
            Choice::Range { lo, hi } => {
                let steps = hi / lo;
                lo * (1 + r % steps)
            }
            Choice::Split(v) => {
                let mut draw = (r % 100) as u32;
                for &(len, w) in v {
                    if draw < w {
                        return len;
                    }
                    draw -= w;
                }
                v.last().map_or(1, |e| e.0)
            }
        }
    }

    /// The longest length this choice allows that is at most `room` (an I/O
    /// near the end of the region, or before a covered unit, is cut down to
    /// one that fits, as fio retries a smaller size); failing that, `room`
    /// in whole `unit`s (`room` is at least one unit).
    pub fn fit(&self, want: u64, room: u64, unit: u64) -> u64 {
        if want <= room {
            return want;
        }
        let allowed = match self {
            Choice::Fixed(_) => 0,
            Choice::Range { lo, .. } => room / lo * lo,
            Choice::Split(v) => v
                .iter()
                .map(|e| e.0)
                .filter(|&l| l <= room)
                .max()
                .unwrap_or(0),
        };
        if allowed > 0 {
            allowed
        } else {
            (room / unit).max(1) * unit
        }
    }
}

/// The block sizes of a job whose I/Os are not all one length.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BlockSizes {
    /// Reads, writes.
    pub dirs: [Choice; 2],
}

impl BlockSizes {
    /// The smallest length of either direction: the unit of offsets, region
    /// sizes and the random map.
    pub fn min(&self) -> u64 {
        self.dirs.iter().map(Choice::min).min().unwrap_or(1)
    }

    /// The longest: what each I/O buffer must hold.
    pub fn max(&self) -> u64 {
        self.dirs.iter().map(Choice::max).max().unwrap_or(1)
    }

    /// Mean length over both directions' draws, weighted by `read_share`
    /// (0–1): what an IOPS figure multiplies to bytes.
    pub fn mean(&self, read_share: f64) -> f64 {
        let m = |c: &Choice| match c {
            Choice::Fixed(b) => *b as f64,
            Choice::Range { lo, hi } => {
                let steps = hi / lo;
                *lo as f64 * (steps + 1) as f64 / 2.0
            }
            Choice::Split(v) => v
                .iter()
                .map(|&(l, w)| l as f64 * f64::from(w) / 100.0)
                .sum(),
        };
        read_share * m(&self.dirs[0]) + (1.0 - read_share) * m(&self.dirs[1])
    }

    /// How the job's sizes read in its record: `4k-64k`, `4k/50:8k/50`,
    /// with `,` between reads and writes when they differ.
    pub fn text(&self) -> String {
        let one = |c: &Choice| match c {
            Choice::Fixed(b) => crate::units::format_size(*b),
            Choice::Range { lo, hi } => format!(
                "{}-{}",
                crate::units::format_size(*lo),
                crate::units::format_size(*hi)
            ),
            Choice::Split(v) => v
                .iter()
                .map(|&(l, w)| format!("{}/{w}", crate::units::format_size(l)))
                .collect::<Vec<_>>()
                .join(":"),
        };
        let (r, w) = (one(&self.dirs[0]), one(&self.dirs[1]));
        if r == w { r } else { format!("{r},{w}") }
    }

    /// Whether every length is a multiple of `n`.
    pub fn all_multiples_of(&self, n: u64) -> bool {
        self.dirs.iter().all(|c| match c {
            Choice::Fixed(b) => b.is_multiple_of(n),
            Choice::Range { lo, .. } => lo.is_multiple_of(n),
            Choice::Split(v) => v.iter().all(|e| e.0.is_multiple_of(n)),
        })
    }
}
