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

/// Read back as the text it was written as: a broken histogram must not
/// refuse the whole file, so it is judged where it is decoded.
impl<'de> serde::Deserialize<'de> for Distribution {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Distribution)
    }
}

/// Figures read back: their keys are the `&'static str` every writer uses.
fn de_figures<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Figures>, D::Error> {
    let raw: Vec<BTreeMap<String, f64>> = serde::Deserialize::deserialize(d)?;
    raw.into_iter()
        .map(|m| {
            m.into_iter()
                .map(|(k, v)| {
                    crate::words::intern(&k)
                        .map(|k| (k, v))
                        .ok_or_else(crate::words::too_many_words)
                })
                .collect()
        })
        .collect()
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

    /// The histogram `text` (a `histogram` field) holds. Saved results are
    /// untrusted: the sizes a header claims are checked before anything is
    /// allocated, and a deflated payload is inflated only up to what a
    /// histogram of xferbench's bounds can need (a 40-byte header claiming
    /// 4 GB, or a deflate bomb, is refused in one line).
    pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
        if text.len() > MAX_ENCODED {
            return Err(format!(
                "histogram is {} bytes of text, more than a histogram holds",
                text.len()
            ));
        }
        let bytes = STANDARD
            .decode(text.trim())
            .map_err(|e| format!("histogram is not base64 ({e})"))?;
        let plain = match be32(&bytes, 0) {
            Some(V2_DEFLATE) => {
                use std::io::Read;
                let len = be32(&bytes, 4).unwrap_or(0) as usize;
                if len > bytes.len() - 8 {
                    return Err(format!(
                        "histogram claims {len} deflated bytes, holds {}",
                        bytes.len() - 8
                    ));
                }
                let mut out = Vec::new();
                flate2::read::ZlibDecoder::new(&bytes[8..8 + len])
                    .take(MAX_PLAIN as u64 + 1)
                    .read_to_end(&mut out)
                    .map_err(|e| format!("histogram does not inflate ({e})"))?;
                if out.len() > MAX_PLAIN {
                    return Err(format!(
                        "histogram inflates past {MAX_PLAIN} bytes, more than a histogram of xferbench's holds"
                    ));
                }
                out
            }
            _ => bytes,
        };
        check_v2(&plain)?;
        Deserializer::new()
            .deserialize(&mut plain.as_slice())
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

/// HdrHistogram V2's cookies (its base values with the 0x10 of the
/// encoding): plain, and deflated around a plain one.
const V2: u32 = 0x1c84_9313;
const V2_DEFLATE: u32 = 0x1c84_9314;
/// The most text a `histogram` field may hold, and the most a deflated one
/// may inflate to: far above what a recorder of xferbench's bounds writes
/// (a few KiB), far below what would hurt.
const MAX_ENCODED: usize = 4 << 20;
const MAX_PLAIN: usize = 8 << 20;
/// The widest histogram accepted: buckets a recorder of xferbench's own
/// bounds (1 ns to 600 s, 3 digits) has, with room; more is not ours.
const MAX_BUCKETS: usize = 1 << 20;

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// A plain V2 histogram's header, checked before the deserializer sizes
/// its counts by it: the payload is there, and the bounds and precision
/// make a histogram of sane width.
fn check_v2(b: &[u8]) -> Result<(), String> {
    let bad = |why: String| {
        Err(format!(
            "histogram header is not one xferbench reads ({why})"
        ))
    };
    if be32(b, 0) != Some(V2) {
        return bad("no HdrHistogram V2 cookie".into());
    }
    let (Some(len), Some(digits), Some(low), Some(high)) =
        (be32(b, 4), be32(b, 12), be64(b, 16), be64(b, 24))
    else {
        return bad("shorter than its 40-byte header".into());
    };
    if len as usize > b.len().saturating_sub(40) {
        return bad(format!(
            "it claims {len} payload bytes and holds {}",
            b.len().saturating_sub(40)
        ));
    }
    if digits > 5 || low == 0 || high < 2 * low {
        return bad(format!(
            "precision {digits}, range {low}..{high} are not a histogram's"
        ));
    }
    // Buckets: 2^(digits' sub-bucket bits) per power of two of the range.
    let sub = (2.0 * 10f64.powi(digits as i32)).log2().ceil() as u32;
    let powers = 64 - (high / low).leading_zeros();
    let buckets = (u64::from(powers) + 1) << sub.min(40);
    if buckets > MAX_BUCKETS as u64 {
        return bad(format!(
            "{buckets} buckets for range {low}..{high} at {digits} digits"
        ));
    }
    Ok(())
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
    let mean = parts
        .iter()
        .map(|s| s.count as f64 * s.mean_ns)
        .sum::<f64>()
        / n as f64;
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
        stddev_ns: if n > 1 {
            (ss / (n - 1) as f64).sqrt()
        } else {
            0.0
        },
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
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct Spread {
    /// Every timed sample (ns) as an HdrHistogram, V2 + deflate, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<Distribution>,
    /// Each repeat's figures, in run order (`--repeat K`, K ≥ 2).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "de_figures"
    )]
    pub repeats: Vec<Figures>,
    /// The figures of consecutive blocks of the samples, in time order
    /// (every repeat's blocks, one repeat after the other). In the JSON
    /// `intervals`: a point's own `blocks` field is taken (flowgraph's M).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        rename = "intervals",
        deserialize_with = "de_figures"
    )]
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
            repeats: if figures.len() > 1 {
                figures
            } else {
                Vec::new()
            },
            blocks: parts.into_iter().flat_map(|p| p.blocks).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_histograms_are_refused_before_they_allocate() {
        // A 40-byte header claiming a 4 GB payload.
        let mut h = Vec::new();
        h.extend(V2.to_be_bytes());
        h.extend(u32::MAX.to_be_bytes());
        h.extend(0u32.to_be_bytes());
        h.extend(3u32.to_be_bytes());
        h.extend(1u64.to_be_bytes());
        h.extend(600_000_000_000u64.to_be_bytes());
        h.extend(1f64.to_bits().to_be_bytes());
        let e = Distribution::decode(&STANDARD.encode(&h)).unwrap_err();
        assert!(e.contains("payload bytes"), "{e}");
        // A huge range at high precision.
        let mut wide = h.clone();
        wide[4..8].copy_from_slice(&0u32.to_be_bytes());
        wide[12..16].copy_from_slice(&5u32.to_be_bytes());
        wide[24..32].copy_from_slice(&u64::MAX.to_be_bytes());
        let e = Distribution::decode(&STANDARD.encode(&wide)).unwrap_err();
        assert!(e.contains("buckets"), "{e}");
        // A deflate bomb: megabytes of zeros behind the deflate cookie.
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(&vec![0u8; 64 << 20]).unwrap();
        let z = z.finish().unwrap();
        let mut bomb = Vec::new();
        bomb.extend(V2_DEFLATE.to_be_bytes());
        bomb.extend((z.len() as u32).to_be_bytes());
        bomb.extend(z);
        let e = Distribution::decode(&STANDARD.encode(&bomb)).unwrap_err();
        assert!(e.contains("inflates past"), "{e}");
        // What a recorder writes still reads back.
        let mut r = Recorder::new();
        for v in [100u64, 2_000, 30_000, 599_000_000_000] {
            r.record(v);
        }
        let d = Distribution::of(&r);
        assert_eq!(Distribution::decode(d.as_str()).unwrap().len(), 4);
    }

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
        assert!(
            Distribution::decode("not base64!")
                .unwrap_err()
                .contains("base64")
        );
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
