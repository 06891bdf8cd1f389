//! One estimator for every rate the flowgraph experiment reports: the
//! median over fixed windows of wall time.
//!
//! Why windows, and why the same for all: a VM stalls a vCPU now and then
//! for milliseconds. A plain mean charges such a stall to whichever point
//! ran into it, and a best-of-short-batches figure never sees one, so a
//! runtime measured by the mean and a kernel measured by its best batch
//! differ by 10–15 % here with no runtime cost at all. The median of 10 ms
//! windows is robust to the stalls, and giving the kernel scan, the ring
//! reference and every scheduler the same windows keeps their ratios honest.
//! The plain mean is reported beside it.

use serde::Serialize;
use std::time::Duration;

/// The window length every rate is measured over.
pub const WINDOW: Duration = Duration::from_millis(10);

/// Below this many windows the median means little: the mean is used.
const MIN_WINDOWS: usize = 5;

/// Items counted over windows of time.
#[derive(Clone, Debug, Default)]
pub struct Windows {
    /// Each window's items and seconds, in time order.
    spans: Vec<(u64, f64)>,
    items: u64,
    seconds: f64,
}

/// What the windows say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Rate {
    /// The median window rate (the mean when there were too few windows).
    pub per_s: f64,
    /// All items over all time.
    pub mean_per_s: f64,
    /// The 10th and 90th percentile window rates (the mean when too few).
    pub p10_per_s: f64,
    pub p90_per_s: f64,
    pub windows: usize,
    pub items: u64,
    pub seconds: f64,
}

impl Windows {
    /// Room for `expected` windows, so recording does not allocate.
    pub fn with_capacity(expected: usize) -> Windows {
        Windows {
            spans: Vec::with_capacity(expected),
            ..Windows::default()
        }
    }

    /// `items` counted over `seconds`: one window.
    pub fn record(&mut self, items: u64, seconds: f64) {
        if seconds > 0.0 {
            self.spans.push((items, seconds));
            self.items += items;
            self.seconds += seconds;
        }
    }

    /// Pools `other`'s windows into these (the same point measured again).
    pub fn merge(&mut self, other: Windows) {
        self.spans.extend(other.spans);
        self.items += other.items;
        self.seconds += other.seconds;
    }

    pub fn rate(&self) -> Rate {
        let mean = if self.seconds > 0.0 {
            self.items as f64 / self.seconds
        } else {
            0.0
        };
        let mut r = Rate {
            per_s: mean,
            mean_per_s: mean,
            p10_per_s: mean,
            p90_per_s: mean,
            windows: self.spans.len(),
            items: self.items,
            seconds: self.seconds,
        };
        if self.spans.len() >= MIN_WINDOWS {
            let mut s: Vec<f64> = self.spans.iter().map(|&(i, t)| i as f64 / t).collect();
            s.sort_by(f64::total_cmp);
            r.per_s = quantile(&s, 0.5);
            r.p10_per_s = quantile(&s, 0.1);
            r.p90_per_s = quantile(&s, 0.9);
        }
        r
    }
}

impl Windows {
    /// The windows cut into `n` runs of consecutive windows (as even as
    /// they go; fewer runs when there are fewer windows), each estimated
    /// as the whole is: how much the rate wanders within one measurement.
    pub fn blocks(&self, n: usize) -> Vec<Rate> {
        let w = self.spans.len();
        let n = n.min(w);
        (0..n)
            .map(|b| {
                let mut part = Windows::default();
                for &(items, seconds) in &self.spans[w * b / n..w * (b + 1) / n] {
                    part.record(items, seconds);
                }
                part.rate()
            })
            .collect()
    }
}

/// The `q` quantile (nearest rank) of sorted values; 0 when there are none.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

impl Rate {
    /// A warning when the windows disagree widely (p90 over 1.5× p10).
    pub fn noise_warning(&self) -> Option<String> {
        (self.windows >= MIN_WINDOWS && self.p90_per_s > 1.5 * self.p10_per_s).then(|| {
            format!(
                "rate varied from {:.3}G (p10) to {:.3}G (p90) over {} windows of {} ms: noisy",
                self.p10_per_s / 1e9,
                self.p90_per_s / 1e9,
                self.windows,
                WINDOW.as_millis()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_ignores_a_stalled_window_and_the_mean_does_not() {
        let mut w = Windows::with_capacity(8);
        for _ in 0..6 {
            w.record(100, 0.01);
        }
        // A 50 ms stall with nothing done.
        w.record(0, 0.05);
        let r = w.rate();
        assert_eq!(r.per_s, 10_000.0);
        assert_eq!(r.items, 600);
        assert!((r.mean_per_s - 600.0 / 0.11).abs() < 1e-6);
        assert!(r.mean_per_s < r.per_s);
        assert_eq!(r.windows, 7);
        assert!(r.noise_warning().is_none(), "one stall is not spread");
    }

    #[test]
    fn windows_that_disagree_are_flagged() {
        let mut w = Windows::with_capacity(10);
        for k in 0..10 {
            w.record(if k % 2 == 0 { 100 } else { 300 }, 0.01);
        }
        let r = w.rate();
        assert_eq!((r.p10_per_s, r.p90_per_s), (10_000.0, 30_000.0));
        assert!(r.noise_warning().unwrap().contains("noisy"));
    }

    #[test]
    fn rounds_pool_their_windows_into_one_median() {
        let mut a = Windows::default();
        for _ in 0..3 {
            a.record(100, 1.0);
        }
        let mut b = Windows::default();
        for _ in 0..4 {
            b.record(300, 1.0);
        }
        a.merge(b);
        let r = a.rate();
        assert_eq!((r.windows, r.items), (7, 1500));
        assert_eq!(r.per_s, 300.0, "the median of all seven windows");
        assert!((r.mean_per_s - 1500.0 / 7.0).abs() < 1e-9);
    }

    #[test]
    fn blocks_cut_the_windows_in_time_order() {
        let mut w = Windows::default();
        for k in 0..23u64 {
            w.record(100 * (k / 12 + 1), 1.0);
        }
        let b = w.blocks(10);
        assert_eq!(b.len(), 10);
        assert_eq!(b.iter().map(|r| r.windows).sum::<usize>(), 23);
        assert_eq!(b.iter().map(|r| r.items).sum::<u64>(), w.rate().items);
        assert_eq!((b[0].per_s, b[9].per_s), (100.0, 200.0));
        assert_eq!(Windows::default().blocks(10).len(), 0);
        assert_eq!(w.blocks(50).len(), 23, "never an empty block");
    }

    #[test]
    fn few_windows_fall_back_to_the_mean() {
        let mut w = Windows::with_capacity(2);
        w.record(100, 0.01);
        w.record(300, 0.01);
        let r = w.rate();
        assert_eq!(r.per_s, 20_000.0);
        assert_eq!(r.per_s, r.mean_per_s);
        assert!(r.noise_warning().is_none());
        assert_eq!(Windows::default().rate().per_s, 0.0);
    }
}
