//! Latency statistics: an HDR histogram for the quantiles plus exact running
//! moments, so mean, stddev, min and max are exact and only the quantiles carry
//! the histogram's 3-significant-digit resolution (0.1 %).

use crate::words::word_enum;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Largest latency the histogram holds: 10 minutes. A wait longer than that has
/// already failed on its timeout.
const HIGHEST_NS: u64 = 600_000_000_000;
const SIGFIG: u8 = 3;

/// Collects one point's samples. Built before the timed loop; `record` neither
/// allocates nor locks.
#[derive(Clone)]
pub struct Recorder {
    hist: Histogram<u64>,
    count: u64,
    sum: u128,
    sum_sq: u128,
    min: u64,
    max: u64,
    /// Exceeded HIGHEST_NS (clamped into the histogram, counted exactly here).
    saturated: u64,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    pub fn new() -> Self {
        Recorder {
            hist: Histogram::new_with_bounds(1, HIGHEST_NS, SIGFIG)
                .expect("static histogram bounds are valid"),
            count: 0,
            sum: 0,
            sum_sq: 0,
            min: u64::MAX,
            max: 0,
            saturated: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.count += 1;
        self.sum += ns as u128;
        self.sum_sq += (ns as u128) * (ns as u128);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        if ns > HIGHEST_NS {
            self.saturated += 1;
        }
        // Clamped into range, so this cannot fail or resize.
        let _ = self.hist.record(ns.clamp(1, HIGHEST_NS));
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// The histogram behind the quantiles.
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// Samples beyond the histogram's ceiling (kept exactly in min/max/mean).
    pub fn saturated(&self) -> u64 {
        self.saturated
    }

    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// Quantile q in [0, 1], nearest rank: the smallest recorded value v such
    /// that at least ceil(q·n) samples are ≤ v (the Vollo benchmark's
    /// `sorted[(99·n)/100]` rounds the same way up to one rank).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        // The histogram reports the top of the bucket; never beyond what was seen.
        self.hist.value_at_quantile(q).clamp(self.min, self.max)
    }

    pub fn merge(&mut self, other: &Recorder) {
        self.hist.add(&other.hist).expect("histograms share bounds");
        self.count += other.count;
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.saturated += other.saturated;
    }

    pub fn summary(&self) -> Summary {
        let n = self.count;
        let mean = self.mean_ns();
        let stddev = if n > 1 {
            let n_f = n as f64;
            let var = (self.sum_sq as f64 - (self.sum as f64) * mean) / (n_f - 1.0);
            var.max(0.0).sqrt()
        } else {
            0.0
        };
        Summary {
            count: n,
            mean_ns: mean,
            stddev_ns: stddev,
            min_ns: if n == 0 { 0 } else { self.min },
            p50_ns: self.quantile(0.50),
            p90_ns: self.quantile(0.90),
            p99_ns: self.quantile(0.99),
            p999_ns: self.quantile(0.999),
            p9999_ns: self.quantile(0.9999),
            max_ns: self.max,
        }
    }
}

/// A recorder as plain numbers, to send to another process and merge
/// there: the MPI ranks of a mesh send theirs to rank 0.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RecorderWire {
    count: u64,
    sum: u128,
    sum_sq: u128,
    min: u64,
    max: u64,
    saturated: u64,
    /// (a value in the bucket, samples in it) for every non-empty bucket.
    buckets: Vec<(u64, u64)>,
}

impl Recorder {
    /// What one recorder holds on the heap: its histogram's counts. A
    /// stream job keeps one per direction per interval, so this is most of
    /// what a job costs in memory.
    pub fn heap_bytes() -> u64 {
        static BYTES: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        *BYTES.get_or_init(|| {
            (Recorder::new().hist.distinct_values() * std::mem::size_of::<u64>()) as u64
        })
    }

    pub fn to_wire(&self) -> RecorderWire {
        RecorderWire {
            count: self.count,
            sum: self.sum,
            sum_sq: self.sum_sq,
            min: self.min,
            max: self.max,
            saturated: self.saturated,
            buckets: self
                .hist
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect(),
        }
    }

    /// The recorder `to_wire` described (values outside the histogram's
    /// range are clamped into it, as `record` does).
    pub fn from_wire(w: &RecorderWire) -> Recorder {
        let mut r = Recorder::new();
        for &(v, n) in &w.buckets {
            let _ = r.hist.record_n(v.clamp(1, HIGHEST_NS), n);
        }
        r.count = w.count;
        r.sum = w.sum;
        r.sum_sq = w.sum_sq;
        r.min = w.min;
        r.max = w.max;
        r.saturated = w.saturated;
        r
    }
}

/// The summary every point carries. Field names are the JSON contract.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Samples recorded (warm-up excluded); with none, every other field is 0.
    pub count: u64,
    /// Arithmetic mean, ns (exact, not from the histogram).
    pub mean_ns: f64,
    /// Sample standard deviation (n − 1), ns; 0 with fewer than two samples.
    pub stddev_ns: f64,
    /// Fastest sample, ns (exact).
    pub min_ns: u64,
    /// Median, ns (nearest rank, to the histogram's 3 significant digits).
    pub p50_ns: u64,
    /// 90th percentile, ns (nearest rank, 3 significant digits).
    pub p90_ns: u64,
    /// 99th percentile, ns (nearest rank, 3 significant digits).
    pub p99_ns: u64,
    /// 99.9th percentile, ns (nearest rank, 3 significant digits).
    pub p999_ns: u64,
    /// 99.99th percentile, ns (nearest rank, 3 significant digits).
    pub p9999_ns: u64,
    /// Slowest sample, ns (exact, even beyond the histogram's 10-minute ceiling).
    pub max_ns: u64,
}

word_enum! {
    /// The statistics a table can show, by the names `--stats` takes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Stat {
        /// Samples recorded.
        Count = "count",
        /// Arithmetic mean.
        Mean = "mean",
        /// Sample standard deviation.
        Stddev = "stddev",
        /// Fastest sample.
        Min = "min",
        /// Median.
        P50 = "p50",
        /// 90th percentile.
        P90 = "p90",
        /// 99th percentile.
        P99 = "p99",
        /// 99.9th percentile.
        P999 = "p999",
        /// 99.99th percentile.
        P9999 = "p9999",
        /// Slowest sample.
        Max = "max",
    }
}

impl Stat {
    /// The column heading tables give it (`p99.9`, where `--stats` says `p999`).
    pub fn name(self) -> &'static str {
        match self {
            Stat::Count => "count",
            Stat::Mean => "mean",
            Stat::Stddev => "stddev",
            Stat::Min => "min",
            Stat::P50 => "p50",
            Stat::P90 => "p90",
            Stat::P99 => "p99",
            Stat::P999 => "p99.9",
            Stat::P9999 => "p99.99",
            Stat::Max => "max",
        }
    }

    /// The value in nanoseconds (or the plain count).
    pub fn of(self, s: &Summary) -> f64 {
        match self {
            Stat::Count => s.count as f64,
            Stat::Mean => s.mean_ns,
            Stat::Stddev => s.stddev_ns,
            Stat::Min => s.min_ns as f64,
            Stat::P50 => s.p50_ns as f64,
            Stat::P90 => s.p90_ns as f64,
            Stat::P99 => s.p99_ns as f64,
            Stat::P999 => s.p999_ns as f64,
            Stat::P9999 => s.p9999_ns as f64,
            Stat::Max => s.max_ns as f64,
        }
    }

    /// Samples needed before this quantile rests on at least 10 samples beyond it.
    pub fn min_samples(self) -> u64 {
        match self {
            Stat::P90 => 100,
            Stat::P99 => 1_000,
            Stat::P999 => 10_000,
            Stat::P9999 => 100_000,
            _ => 2,
        }
    }
}

/// Divides every time of an exchange summary by `by` messages (2 for the two
/// halves of a round trip): the one-way time of one message.
pub fn per_message(s: &Summary, by: f64) -> Summary {
    let d = |v: u64| (v as f64 / by).round() as u64;
    Summary {
        count: s.count,
        mean_ns: s.mean_ns / by,
        stddev_ns: s.stddev_ns / by,
        min_ns: d(s.min_ns),
        p50_ns: d(s.p50_ns),
        p90_ns: d(s.p90_ns),
        p99_ns: d(s.p99_ns),
        p999_ns: d(s.p999_ns),
        p9999_ns: d(s.p9999_ns),
        max_ns: d(s.max_ns),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_recorder_sent_as_json_and_merged_is_the_one_recorded() {
        let mut a = Recorder::new();
        for ns in [120u64, 130, 125, 90_000, 1_000_000_000_000] {
            a.record(ns);
        }
        let text = serde_json::to_string(&a.to_wire()).unwrap();
        let back = Recorder::from_wire(&serde_json::from_str(&text).unwrap());
        assert_eq!(back.summary(), a.summary());
        let mut m = Recorder::new();
        m.merge(&back);
        m.merge(&back);
        assert_eq!(m.count(), 10);
        assert_eq!(m.quantile(0.5), a.quantile(0.5));
        assert_eq!(m.saturated(), 2);
    }

    use super::*;

    fn rec(values: &[u64]) -> Recorder {
        let mut r = Recorder::new();
        for &v in values {
            r.record(v);
        }
        r
    }

    #[test]
    fn hand_computed_small_set() {
        // 1..=100: nearest-rank p50 = 50, p90 = 90, p99 = 99, p99.9 = 100.
        let values: Vec<u64> = (1..=100).collect();
        let s = rec(&values).summary();
        assert_eq!(s.count, 100);
        assert_eq!(s.min_ns, 1);
        assert_eq!(s.max_ns, 100);
        assert_eq!(s.p50_ns, 50);
        assert_eq!(s.p90_ns, 90);
        assert_eq!(s.p99_ns, 99);
        assert_eq!(s.p999_ns, 100);
        assert_eq!(s.p9999_ns, 100);
        assert!((s.mean_ns - 50.5).abs() < 1e-9);
        // Sample stddev of 1..=100 = sqrt(100*101/12) = 29.0115...
        assert!(
            (s.stddev_ns - 29.011_491_975_882_016).abs() < 1e-6,
            "{}",
            s.stddev_ns
        );
    }

    #[test]
    fn skewed_tail() {
        // 990 fast samples and 10 slow ones: p99 is still fast, p99.9 is slow.
        let mut v = vec![1000u64; 990];
        v.extend([50_000u64; 10]);
        let s = rec(&v).summary();
        assert_eq!(s.p50_ns, 1000);
        assert_eq!(s.p99_ns, 1000);
        // 50_000 lies in a bucket 32 ns wide; the top of it is clamped to the max.
        assert_eq!(s.p999_ns, 50_000);
        assert!((s.mean_ns - (990.0 * 1000.0 + 10.0 * 50_000.0) / 1000.0).abs() < 1e-9);
    }

    #[test]
    fn large_values_within_resolution() {
        let s = rec(&[1_234_567, 7_654_321, 9_999_999]).summary();
        let rel = |a: u64, b: u64| (a as f64 - b as f64).abs() / b as f64;
        assert!(rel(s.p50_ns, 7_654_321) < 1e-3);
        assert_eq!(s.min_ns, 1_234_567);
        assert_eq!(s.max_ns, 9_999_999);
    }

    #[test]
    fn empty_and_single() {
        let s = Recorder::new().summary();
        assert_eq!(s.count, 0);
        assert_eq!(s.p99_ns, 0);
        let s = rec(&[42]).summary();
        assert_eq!((s.min_ns, s.p50_ns, s.max_ns), (42, 42, 42));
        assert_eq!(s.stddev_ns, 0.0);
    }

    #[test]
    fn merge_equals_single_recorder() {
        let (a, b) = (rec(&[1, 2, 3]), rec(&[4, 5, 6, 7]));
        let mut m = Recorder::new();
        m.merge(&a);
        m.merge(&b);
        assert_eq!(m.summary(), rec(&[1, 2, 3, 4, 5, 6, 7]).summary());
    }
}
