//! What a comparison of two runs needs besides the headline figures: the
//! whole distribution of a point's samples, and the spread of its figures
//! between repeats and between blocks of one run.
//!
//! The histogram travels in the JSON as HdrHistogram's V2 format, deflated
//! and base64-encoded: the form every HdrHistogram library (Java, C, Go,
//! Python, Rust) reads, and a few hundred bytes per point. Repeats and
//! blocks are plain figures, keyed by the name of the field they replicate
//! (`p50_ns`, `bandwidth_MBps`…), so a reader needs no schema per experiment.

use crate::measure::stats::{Recorder, Summary};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use serde::{Serialize, Serializer as SerdeSerializer};
use std::collections::BTreeMap;

/// Figures of one repeat or one block, by the field name they replicate.
pub type Figures = BTreeMap<&'static str, f64>;

/// How many consecutive blocks a point's samples are cut into, so that
/// one run alone shows how much its figures wander.
pub const BLOCKS: usize = 10;

/// A histogram of samples (ns), encoded: V2 + deflate, base64.
#[derive(Clone, Debug, PartialEq)]
pub struct Distribution(String);

impl Serialize for Distribution {
    fn serialize<S: SerdeSerializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl Distribution {
    /// The recorder's histogram, encoded.
    pub fn of(r: &Recorder) -> Distribution {
        Distribution::encode(r.histogram())
    }

    fn encode(h: &Histogram<u64>) -> Distribution {
        let mut bytes = Vec::new();
        // Writing to a Vec cannot fail; a histogram V2 cannot express does
        // not arise from a Recorder's bounds.
        let _ = V2DeflateSerializer::new().serialize(h, &mut bytes);
        Distribution(STANDARD.encode(bytes))
    }

    /// The text as it appears in the JSON.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The histogram `text` (a `histogram` field) holds.
    pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
        let bytes = STANDARD
            .decode(text.trim())
            .map_err(|e| format!("histogram is not base64 ({e})"))?;
        Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("histogram is not HdrHistogram V2 ({e:?})"))
    }

    /// One histogram holding every part's samples.
    pub fn merge<'a>(parts: impl IntoIterator<Item = &'a Distribution>) -> Option<Distribution> {
        let mut all: Option<Histogram<u64>> = None;
        for p in parts {
            let h = Distribution::decode(&p.0).ok()?;
            match &mut all {
                None => all = Some(h),
                Some(a) => a.add(&h).ok()?,
            }
        }
        all.map(|h| Distribution::encode(&h))
    }
}

/// Quantile `q` of a decoded histogram, nearest rank, within [min, max] as
/// `Recorder::quantile` gives it.
pub fn quantile(h: &Histogram<u64>, q: f64, min: u64, max: u64) -> u64 {
    if h.is_empty() {
        return 0;
    }
    h.value_at_quantile(q).clamp(min.min(max), max)
}

/// The summary of several parts' samples together: count, mean, stddev,
/// min and max exactly from the parts' own, the quantiles from `merged`
/// (their histograms added).
pub fn combine(parts: &[Summary], merged: Option<&Histogram<u64>>) -> Summary {
    let parts: Vec<&Summary> = parts.iter().filter(|s| s.count > 0).collect();
    let n: u64 = parts.iter().map(|s| s.count).sum();
    if n == 0 {
        return Summary::default();
    }
    let mean = parts.iter().map(|s| s.count as f64 * s.mean_ns).sum::<f64>() / n as f64;
    let ss: f64 = parts
        .iter()
        .map(|s| {
            (s.count.saturating_sub(1)) as f64 * s.stddev_ns * s.stddev_ns
                + s.count as f64 * (s.mean_ns - mean).powi(2)
        })
        .sum();
    let min = parts.iter().map(|s| s.min_ns).min().unwrap_or(0);
    let max = parts.iter().map(|s| s.max_ns).max().unwrap_or(0);
    let q = |p: f64, fallback: fn(&Summary) -> u64| match merged {
        Some(h) => quantile(h, p, min, max),
        // Without histograms: the median of the parts' own, the best a
        // summary allows.
        None => {
            let mut v: Vec<u64> = parts.iter().map(|s| fallback(s)).collect();
            v.sort_unstable();
            v[v.len() / 2]
        }
    };
    Summary {
        count: n,
        mean_ns: mean,
        stddev_ns: if n > 1 { (ss / (n - 1) as f64).sqrt() } else { 0.0 },
        min_ns: min,
        p50_ns: q(0.50, |s| s.p50_ns),
        p90_ns: q(0.90, |s| s.p90_ns),
        p99_ns: q(0.99, |s| s.p99_ns),
        p999_ns: q(0.999, |s| s.p999_ns),
        p9999_ns: q(0.9999, |s| s.p9999_ns),
        max_ns: max,
    }
}

/// The latency figures a block or repeat keeps of a summary.
pub fn latency_figures(s: &Summary) -> Figures {
    Figures::from([
        ("count", s.count as f64),
        ("mean_ns", s.mean_ns),
        ("p50_ns", s.p50_ns as f64),
        ("p90_ns", s.p90_ns as f64),
        ("p99_ns", s.p99_ns as f64),
        ("p999_ns", s.p999_ns as f64),
    ])
}

/// What a point keeps for comparisons, flattened into its JSON object.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Spread {
    /// Every timed sample (ns) as an HdrHistogram, V2 + deflate, base64.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub histogram: Option<Distribution>,
    /// Each repeat's figures, in run order (`--repeat K`, K ≥ 2).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<Figures>,
    /// The figures of consecutive blocks of the samples, in time order
    /// (every repeat's blocks, one repeat after the other).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<Figures>,
}

impl Spread {
    /// The spread of a point measured K times: histograms added, blocks
    /// one repeat after the other, `figures` each repeat's headline.
    pub fn of_repeats(parts: Vec<Spread>, figures: Vec<Figures>) -> Spread {
        let histogram = if parts.iter().all(|p| p.histogram.is_some()) {
            Distribution::merge(parts.iter().filter_map(|p| p.histogram.as_ref()))
        } else {
            None
        };
        Spread {
            histogram,
            repeats: if figures.len() > 1 { figures } else { Vec::new() },
            blocks: parts.into_iter().flat_map(|p| p.blocks).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(values: impl IntoIterator<Item = u64>) -> Recorder {
        let mut r = Recorder::new();
        for v in values {
            r.record(v);
        }
        r
    }

    #[test]
    fn encoded_histogram_decodes_to_the_same_quantiles_and_is_small() {
        let r = rec((0..10_000u64).map(|i| 1_000 + (i * 7919) % 5_000));
        let d = Distribution::of(&r);
        assert!(d.as_str().len() < 20_000, "{} bytes", d.as_str().len());
        let h = Distribution::decode(d.as_str()).unwrap();
        assert_eq!(h.len(), 10_000);
        for q in [0.5, 0.9, 0.99, 0.999] {
            assert_eq!(quantile(&h, q, 1_000, 5_999), r.quantile(q));
        }
    }

    #[test]
    fn garbage_is_refused_with_what_is_wrong() {
        assert!(Distribution::decode("not base64!").unwrap_err().contains("base64"));
        assert!(Distribution::decode("aGVsbG8=").unwrap_err().contains("V2"));
    }

    #[test]
    fn combined_summary_is_the_summary_of_all_samples() {
        let (a, b) = (rec(1..=100), rec(200..=450));
        let all = rec((1..=100).chain(200..=450));
        let m = Distribution::merge([&Distribution::of(&a), &Distribution::of(&b)]).unwrap();
        let h = Distribution::decode(m.as_str()).unwrap();
        let s = combine(&[a.summary(), b.summary()], Some(&h));
        let want = all.summary();
        assert_eq!(s.count, want.count);
        assert!((s.mean_ns - want.mean_ns).abs() < 1e-9);
        assert!((s.stddev_ns - want.stddev_ns).abs() < 1e-6);
        assert_eq!((s.min_ns, s.max_ns), (want.min_ns, want.max_ns));
        assert_eq!((s.p50_ns, s.p99_ns), (want.p50_ns, want.p99_ns));
    }
}
