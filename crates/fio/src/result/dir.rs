//! One direction of a job or group in fio's JSON shape (`read`, `write`,
//! `trim`): completion latency with fio's percentiles, rates, the latency
//! per I/O priority, and xferbench's spread beside them.

use super::keys::{Bins, FioDir, PERCENTILES};
use crate::measure::distribution::{
    Distribution, Figures, Spread, combine, latency_figures, quantile,
};
use crate::measure::stats::{Recorder, Summary};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Completion latency in fio's JSON shape.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Clat {
    /// Fastest I/O, ns (0 with no I/Os).
    pub min: u64,
    /// Slowest I/O, ns.
    pub max: u64,
    /// Mean, ns.
    pub mean: f64,
    /// Sample standard deviation, ns.
    pub stddev: f64,
    /// I/Os timed (fio's `N`).
    #[serde(rename = "N")]
    pub n: u64,
    /// ns at each of fio's percentiles, keyed as fio writes them
    /// (`"99.000000"`); empty with no I/Os.
    pub percentile: BTreeMap<String, u64>,
    /// fio's histogram of the I/Os (json+ only: `--output-format=json+`
    /// writes it; plain json leaves it out): bucket value, ns, to count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bins: Option<Bins>,
}

impl Clat {
    pub(crate) fn of(r: &Recorder) -> Clat {
        Clat {
            bins: Bins::of(r),
            ..Clat::from(&r.summary(), |p| r.quantile(p / 100.0))
        }
    }

    /// Several parts' I/Os together: count, mean, stddev, min and max
    /// exactly from the parts', the percentiles from `merged` (their
    /// histograms added; without it, the median of the parts' own).
    pub fn pooled(parts: &[&Clat], merged: Option<&Histogram<u64>>) -> Clat {
        let summaries: Vec<Summary> = parts.iter().map(|c| c.summary()).collect();
        let s = combine(&summaries, merged);
        let with: Vec<&&Clat> = parts.iter().filter(|c| c.n > 0).collect();
        let bins = (!with.is_empty() && with.iter().all(|c| c.bins.is_some()))
            .then(|| Bins::sum(with.iter().filter_map(|c| c.bins.as_ref())));
        let pooled = Clat::from(&s, |p| match merged {
            Some(h) => quantile(h, p / 100.0, s.min_ns, s.max_ns),
            None => {
                let mut v: Vec<u64> = with.iter().map(|c| c.at(p)).collect();
                v.sort_unstable();
                v[v.len() / 2]
            }
        });
        Clat { bins, ..pooled }
    }

    /// A summary's moments, with fio's percentile list from `at` (percent
    /// in, ns out); no percentiles without samples.
    fn from(s: &Summary, at: impl Fn(f64) -> u64) -> Clat {
        Clat {
            min: s.min_ns,
            max: s.max_ns,
            mean: s.mean_ns,
            stddev: s.stddev_ns,
            n: s.count,
            percentile: if s.count == 0 {
                BTreeMap::new()
            } else {
                PERCENTILES
                    .iter()
                    .map(|&p| (format!("{p:.6}"), at(p)))
                    .collect()
            },
            bins: None,
        }
    }

    /// The figures as a [`Summary`] (its percentiles from fio's list).
    pub fn summary(&self) -> Summary {
        Summary {
            count: self.n,
            mean_ns: self.mean,
            stddev_ns: self.stddev,
            min_ns: self.min,
            p50_ns: self.at(50.0),
            p90_ns: self.at(90.0),
            p99_ns: self.at(99.0),
            p999_ns: self.at(99.9),
            p9999_ns: self.at(99.99),
            max_ns: self.max,
        }
    }

    /// The value at percentile `p` (one of fio's list), ns; 0 when absent.
    pub fn at(&self, p: f64) -> u64 {
        self.percentile
            .get(&format!("{p:.6}"))
            .copied()
            .unwrap_or(0)
    }
}

/// One direction's figures, in fio's JSON shape (`bw` in KiB/s, `runtime`
/// in ms) plus exact nanoseconds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DirStats {
    /// Bytes moved this way in the timed span (after `ramp_time`).
    pub io_bytes: u64,
    /// `io_bytes` in KiB (1024 bytes), rounded down.
    pub io_kbytes: u64,
    /// Bandwidth, bytes per second, rounded down.
    pub bw_bytes: u64,
    /// Bandwidth, KiB (1024 bytes) per second, rounded down, as fio's `bw`.
    pub bw: u64,
    /// I/Os completed per second.
    pub iops: f64,
    /// The timed span, ms, rounded up (fio's `runtime`).
    pub runtime: u64,
    /// I/Os completed this way in the timed span.
    pub total_ios: u64,
    /// The timed span, ns: the rates' denominator.
    pub runtime_ns: u64,
    /// Latency of each I/O from queueing it to reaping its completion, ns.
    pub clat_ns: Clat,
    /// The latency split by I/O priority (`cmdprio_*`), as fio's `prios`:
    /// listed when two or more priorities have I/Os; omitted otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prios: Vec<PrioStats>,
    /// For comparisons, when this direction did I/O (flattened; nothing
    /// otherwise): `histogram`, every I/O's latency (ns); `blocks`, the
    /// figures of consecutive intervals of the timed span (`bw_bytes`,
    /// `iops`, and `count`, `mean_ns`, `p50_ns`, `p90_ns`, `p99_ns`,
    /// `p999_ns` of their I/Os' latency); `repeats`, the same figures of
    /// the whole span in each repeat (`--repeat K`).
    #[serde(flatten)]
    pub spread: Spread,
    /// fio's other keys of a direction: slat_ns, lat_ns, the bandwidth and
    /// IOPS samples (flattened).
    #[serde(flatten)]
    pub fio: FioDir,
}

impl DirStats {
    /// A direction's figures from its I/Os' latencies (`rec`) and the `bytes`
    /// they moved over `runtime_ns`.
    /// A direction that moved nothing has no runtime (fio counts a
    /// direction's runtime only while it does I/O).
    pub fn of(rec: &Recorder, bytes: u64, runtime_ns: u64) -> DirStats {
        let runtime_ns = if rec.count() == 0 && bytes == 0 {
            0
        } else {
            runtime_ns
        };
        let secs = runtime_ns as f64 / 1e9;
        let rate = |v: f64| if secs > 0.0 { v / secs } else { 0.0 };
        DirStats {
            io_bytes: bytes,
            io_kbytes: bytes / 1024,
            bw_bytes: rate(bytes as f64) as u64,
            bw: (rate(bytes as f64) / 1024.0) as u64,
            iops: rate(rec.count() as f64),
            runtime: runtime_ns.div_ceil(1_000_000),
            total_ios: rec.count(),
            runtime_ns,
            clat_ns: Clat::of(rec),
            prios: Vec::new(),
            spread: Spread::default(),
            fio: FioDir::default(),
        }
    }

    /// These figures with the latency per priority from `recs` (fio's
    /// rule: only when two or more priorities have I/Os).
    pub(crate) fn with_prios(self, recs: &[(u16, Recorder)]) -> DirStats {
        let prios = if recs.iter().filter(|(_, r)| r.count() > 0).count() >= 2 {
            recs.iter()
                .filter(|(_, r)| r.count() > 0)
                .map(|(p, r)| PrioStats::of(*p, Clat::of(r)))
                .collect()
        } else {
            Vec::new()
        };
        DirStats { prios, ..self }
    }

    /// These figures with `spread` beside them.
    pub fn with(self, spread: Spread) -> DirStats {
        DirStats { spread, ..self }
    }

    /// These figures with fio's other keys beside them.
    pub(crate) fn with_fio(self, fio: FioDir) -> DirStats {
        DirStats { fio, ..self }
    }

    /// The headline figures, as one repeat or block has them: `bw_bytes`,
    /// `iops` and the latency figures of `clat_ns`.
    pub fn figures(&self) -> Figures {
        let secs = self.runtime_ns as f64 / 1e9;
        let rate = |v: f64| if secs > 0.0 { v / secs } else { 0.0 };
        let mut f = latency_figures(&self.clat_ns.summary());
        f.insert("bw_bytes", rate(self.io_bytes as f64));
        f.insert("iops", rate(self.total_ios as f64));
        f
    }

    /// Several parts' I/Os together over `runtime_ns`: bytes and I/Os
    /// summed, the rates from the totals, the latency pooled (percentiles
    /// from the parts' histograms added, which `spread.histogram` keeps).
    /// Parts with no I/O count for nothing; no blocks or repeats are kept.
    pub fn pooled(parts: &[&DirStats], runtime_ns: u64) -> DirStats {
        let with: Vec<&&DirStats> = parts.iter().filter(|d| d.total_ios > 0).collect();
        let histogram = if !with.is_empty() && with.iter().all(|d| d.spread.histogram.is_some()) {
            Distribution::merge(with.iter().filter_map(|d| d.spread.histogram.as_ref()))
        } else {
            None
        };
        let hist = histogram
            .as_ref()
            .and_then(|h| Distribution::decode(h.as_str()).ok());
        let bytes: u64 = with.iter().map(|d| d.io_bytes).sum();
        let ios: u64 = with.iter().map(|d| d.total_ios).sum();
        let secs = runtime_ns as f64 / 1e9;
        let rate = |v: f64| if secs > 0.0 { v / secs } else { 0.0 };
        let clats: Vec<&Clat> = with.iter().map(|d| &d.clat_ns).collect();
        DirStats {
            io_bytes: bytes,
            io_kbytes: bytes / 1024,
            bw_bytes: rate(bytes as f64) as u64,
            bw: (rate(bytes as f64) / 1024.0) as u64,
            iops: rate(ios as f64),
            runtime: runtime_ns.div_ceil(1_000_000),
            total_ios: ios,
            runtime_ns,
            clat_ns: Clat::pooled(&clats, hist.as_ref()),
            prios: PrioStats::pooled(&with),
            spread: Spread {
                histogram,
                ..Spread::default()
            },
            fio: FioDir::pooled(&with.iter().map(|d| &d.fio).collect::<Vec<_>>()),
        }
    }

    /// One direction measured K times (`--repeat`), in run order: I/Os,
    /// bytes and runtimes summed, the rates from the totals, latency from
    /// every I/O; `repeats` holds each repeat's [`figures`](Self::figures)
    /// (those that did I/O this way) and `blocks` every repeat's blocks.
    pub fn merge_repeats(parts: &[&DirStats]) -> DirStats {
        let runtime: u64 = parts.iter().map(|d| d.runtime_ns).sum();
        let mut merged = DirStats::pooled(parts, runtime);
        if merged.total_ios == 0 {
            return merged;
        }
        let with: Vec<&&DirStats> = parts.iter().filter(|d| d.total_ios > 0).collect();
        let figures = with.iter().map(|d| d.figures()).collect();
        let mut spread =
            Spread::of_repeats(with.iter().map(|d| d.spread.clone()).collect(), figures);
        spread.histogram = merged.spread.histogram.take();
        merged.spread = spread;
        merged
    }
}

/// One I/O priority's latency within a direction (an entry of fio's
/// `prios`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PrioStats {
    /// The priority class: 1 real-time, 2 best-effort, 3 idle (0: none
    /// set, the kernel's default).
    pub prioclass: u32,
    /// The level within the class, 0 (highest) to 7.
    pub prio: u32,
    /// The latency of the I/Os that went with this priority.
    pub clat_ns: Clat,
}

impl PrioStats {
    fn of(ioprio: u16, clat_ns: Clat) -> PrioStats {
        let (prioclass, prio) = crate::job::cmdprio::class_level(ioprio);
        PrioStats {
            prioclass,
            prio,
            clat_ns,
        }
    }

    /// Several parts' priorities, each class/level's parts pooled
    /// (percentiles the median of the parts'), in first-seen order.
    fn pooled(parts: &[&&DirStats]) -> Vec<PrioStats> {
        let mut keys: Vec<(u32, u32)> = Vec::new();
        for p in parts.iter().flat_map(|d| &d.prios) {
            if !keys.contains(&(p.prioclass, p.prio)) {
                keys.push((p.prioclass, p.prio));
            }
        }
        keys.into_iter()
            .map(|(prioclass, prio)| {
                let same: Vec<&Clat> = parts
                    .iter()
                    .flat_map(|d| &d.prios)
                    .filter(|p| (p.prioclass, p.prio) == (prioclass, prio))
                    .map(|p| &p.clat_ns)
                    .collect();
                PrioStats {
                    prioclass,
                    prio,
                    clat_ns: Clat::pooled(&same, None),
                }
            })
            .collect()
    }
}
