//! fio's JSON keys of a stream job, beside xferbench's own: what tools
//! written for fio's `--output-format=json`/`json+` read (fio-plot reads
//! `job options`, fio's `fio_jsonplus_clat2csv` reads `clat_ns.bins`). Each
//! struct here is flattened into its xferbench counterpart, so one document
//! carries both; every field reads as zero or empty from a file written
//! before it existed.

use crate::fiostats::{FioStats, MAP_SLOTS, Usage, plat_bins};
use crate::measure::stats::Recorder;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// fio's default percentile list, the keys of `clat_ns.percentile`.
pub const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// fio's `eta` before its ETA is computed (its INT_MAX): what every job
/// reports when the run ends within fio's first 3 s.
const ETA_UNKNOWN: u64 = 2_147_483_647;

/// Keys and values written as a JSON object in their order (fio writes
/// `job options` as given and its maps in bucket order); read from any
/// object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pairs<V>(pub Vec<(String, V)>);

impl<V: Serialize> Serialize for Pairs<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Pairs<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Visit<V> {
            type Value = Pairs<V>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Pairs<V>, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, V>()? {
                    out.push((k, v));
                }
                Ok(Pairs(out))
            }
        }
        d.deserialize_map(Visit(std::marker::PhantomData))
    }
}

impl<V: Copy> Pairs<V> {
    /// The value at `key`, if there is one.
    pub fn get(&self, key: &str) -> Option<V> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

/// fio's clat histogram (`clat_ns.bins`, json+ only): bucket value in ns
/// (fio's `plat_idx_to_val`) to I/Os in that bucket, in increasing order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bins(pub Vec<(u64, u64)>);

impl Bins {
    /// A recorder's samples in fio's buckets.
    pub fn of(r: &Recorder) -> Option<Bins> {
        (r.count() > 0).then(|| Bins(plat_bins(r)))
    }

    /// Several histograms' buckets added.
    pub fn sum<'a>(parts: impl Iterator<Item = &'a Bins>) -> Bins {
        let mut m = std::collections::BTreeMap::new();
        for b in parts {
            for &(k, n) in &b.0 {
                *m.entry(k).or_insert(0) += n;
            }
        }
        Bins(m.into_iter().collect())
    }
}

impl Serialize for Bins {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(&k.to_string(), v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Bins {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let p = Pairs::<u64>::deserialize(d)?;
        let mut v =
            p.0.into_iter()
                .map(|(k, n)| {
                    k.parse::<u64>()
                        .map(|k| (k, n))
                        .map_err(|_| serde::de::Error::custom(format!("bin '{k}' is not a number")))
                })
                .collect::<Result<Vec<_>, _>>()?;
        v.sort_unstable();
        Ok(Bins(v))
    }
}

/// fio's latency figures without percentiles (`slat_ns`, `lat_ns`, and
/// `sync.lat_ns`): ns, the sample standard deviation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Moments {
    /// Smallest, ns (0 without samples).
    pub min: u64,
    /// Largest, ns.
    pub max: u64,
    /// Mean, ns.
    pub mean: f64,
    /// Sample standard deviation, ns.
    pub stddev: f64,
    /// Samples (fio's `N`).
    #[serde(rename = "N")]
    pub n: u64,
    /// ns at fio's percentiles, keyed as fio writes them (`"99.000000"`):
    /// `lat_ns` has them as fio's does with `lat_percentiles=1`; omitted
    /// elsewhere and without samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentile: Option<std::collections::BTreeMap<String, u64>>,
    /// fio's histogram beside the percentiles (json+ only, as `clat_ns`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bins: Option<Bins>,
}

impl Moments {
    /// A recorder's moments.
    pub fn of(r: &Recorder) -> Moments {
        let s = r.summary();
        Moments {
            min: s.min_ns,
            max: s.max_ns,
            mean: s.mean_ns,
            stddev: s.stddev_ns,
            n: s.count,
            percentile: None,
            bins: None,
        }
    }

    /// A recorder's moments and its values at fio's percentiles, with its
    /// histogram in fio's buckets (for json+).
    pub fn with_percentiles(r: &Recorder) -> Moments {
        Moments {
            percentile: (r.count() > 0).then(|| {
                PERCENTILES
                    .iter()
                    .map(|&p| (format!("{p:.6}"), r.quantile(p / 100.0)))
                    .collect()
            }),
            bins: Bins::of(r),
            ..Moments::of(r)
        }
    }

    /// The moments, with percentiles (and bins) when `pcts` says so.
    fn of_with(r: &Recorder, pcts: bool) -> Moments {
        if pcts {
            Moments::with_percentiles(r)
        } else {
            Moments::of(r)
        }
    }

    /// Several jobs' rate samples as fio's `group_reporting` adds them
    /// (`sum_stat` with `pure_sum`): minimum, maximum, mean, sample count
    /// and the sum of squared deviations each summed, so the group's mean
    /// is the sum of its members' mean rates (its bandwidth), not the mean
    /// of their samples.
    pub fn summed<'a>(parts: impl Iterator<Item = &'a Moments>) -> Moments {
        let with: Vec<&Moments> = parts.filter(|m| m.n > 0).collect();
        let n: u64 = with.iter().map(|m| m.n).sum();
        // fio keeps S = stddev² × (n - 1) and gives sqrt(S / (n - 1)).
        let ss: f64 = with
            .iter()
            .map(|m| m.n.saturating_sub(1) as f64 * m.stddev.powi(2))
            .sum();
        Moments {
            min: with.iter().map(|m| m.min).sum(),
            max: with.iter().map(|m| m.max).sum(),
            mean: with.iter().map(|m| m.mean).sum(),
            stddev: if n > 1 {
                (ss / (n - 1) as f64).sqrt()
            } else {
                0.0
            },
            n,
            percentile: None,
            bins: None,
        }
    }

    /// Of values given one by one (fio's `calc_lat` over its samples).
    fn of_values(v: &[u64]) -> Moments {
        let n = v.len() as f64;
        if v.is_empty() {
            return Moments::default();
        }
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = if v.len() > 1 {
            v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Moments {
            min: v.iter().copied().min().unwrap_or(0),
            max: v.iter().copied().max().unwrap_or(0),
            mean,
            stddev: var.sqrt(),
            n: v.len() as u64,
            percentile: None,
            bins: None,
        }
    }

    /// Several sets of samples as one: counts, min and max exact, the mean
    /// and standard deviation pooled from the parts'.
    pub fn pooled<'a>(parts: impl Iterator<Item = &'a Moments>) -> Moments {
        let with: Vec<&Moments> = parts.filter(|m| m.n > 0).collect();
        let n: u64 = with.iter().map(|m| m.n).sum();
        if n == 0 {
            return Moments::default();
        }
        let mean = with.iter().map(|m| m.mean * m.n as f64).sum::<f64>() / n as f64;
        // Sum of squared deviations from the pooled mean.
        let ss: f64 = with
            .iter()
            .map(|m| {
                (m.n.saturating_sub(1)) as f64 * m.stddev.powi(2)
                    + m.n as f64 * (m.mean - mean).powi(2)
            })
            .sum();
        Moments {
            min: with.iter().map(|m| m.min).min().unwrap_or(0),
            max: with.iter().map(|m| m.max).max().unwrap_or(0),
            mean,
            stddev: if n > 1 {
                (ss / (n - 1) as f64).sqrt()
            } else {
                0.0
            },
            n,
            percentile: None,
            bins: None,
        }
    }
}

/// fio's keys of one direction beside xferbench's (`read`, `write`,
/// `trim`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FioDir {
    /// I/Os that moved less than asked and were resubmitted: none here (a
    /// short transfer ends the job or is finished by the engine).
    pub short_ios: u64,
    /// I/Os dropped: none here.
    pub drop_ios: u64,
    /// Issue to the submission returning, for engines with a submission
    /// step (io_uring, libaio, posixaio…); N=0 for the synchronous ones, as
    /// in fio.
    pub slat_ns: Moments,
    /// Issue to completion: `slat_ns` plus `clat_ns`.
    pub lat_ns: Moments,
    /// Bandwidth samples (KiB/s), one per `bwavgtime` (500 ms).
    pub bw_min: u64,
    /// The largest bandwidth sample, KiB/s.
    pub bw_max: u64,
    /// The mean sample as a percentage of the reporting group's bandwidth.
    pub bw_agg: f64,
    /// The samples' mean, KiB/s.
    pub bw_mean: f64,
    /// Their sample standard deviation, KiB/s.
    pub bw_dev: f64,
    /// How many samples there were.
    pub bw_samples: u64,
    /// IOPS samples, one per `iopsavgtime` (500 ms).
    pub iops_min: u64,
    /// The largest IOPS sample.
    pub iops_max: u64,
    /// The samples' mean.
    pub iops_mean: f64,
    /// Their sample standard deviation.
    pub iops_stddev: f64,
    /// How many samples there were.
    pub iops_samples: u64,
}

/// Which latencies get fio's percentiles beside `clat_ns`'s: fio's
/// `slat_percentiles` and `lat_percentiles`, both off by default (so
/// `slat_ns` and `lat_ns` carry moments only, as in fio's JSON).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatPercentiles {
    /// `slat_percentiles=1`.
    pub slat: bool,
    /// `lat_percentiles=1`.
    pub lat: bool,
}

impl FioDir {
    /// Direction `d` of a job's accounting.
    pub fn of(f: &FioStats, d: usize, pcts: LatPercentiles) -> FioDir {
        let (b, i) = (
            Moments::of_values(&f.bw.samples[d]),
            Moments::of_values(&f.iops.samples[d]),
        );
        FioDir::from_parts(&f.slat[d], &f.lat[d], b, i, pcts)
    }

    fn from_parts(
        slat: &Recorder,
        lat: &Recorder,
        b: Moments,
        i: Moments,
        pcts: LatPercentiles,
    ) -> FioDir {
        FioDir {
            short_ios: 0,
            drop_ios: 0,
            slat_ns: Moments::of_with(slat, pcts.slat),
            lat_ns: Moments::of_with(lat, pcts.lat),
            bw_min: b.min,
            bw_max: b.max,
            bw_agg: 0.0,
            bw_mean: b.mean,
            bw_dev: b.stddev,
            bw_samples: b.n,
            iops_min: i.min,
            iops_max: i.max,
            iops_mean: i.mean,
            iops_stddev: i.stddev,
            iops_samples: i.n,
        }
    }

    /// Direction `d` of several jobs side by side (a reporting group), as
    /// fio's `sum_thread_stats` adds them: the latencies pooled, the rate
    /// samples' statistics summed member by member
    /// ([`Moments::summed`]: the group's `bw_mean` is its bandwidth).
    pub fn group(members: &[&FioStats], d: usize, pcts: LatPercentiles) -> FioDir {
        let (mut slat, mut lat) = (Recorder::new(), Recorder::new());
        let (mut bw, mut iops) = (Vec::new(), Vec::new());
        for m in members {
            slat.merge(&m.slat[d]);
            lat.merge(&m.lat[d]);
            bw.push(Moments::of_values(&m.bw.samples[d]));
            iops.push(Moments::of_values(&m.iops.samples[d]));
        }
        FioDir::from_parts(
            &slat,
            &lat,
            Moments::summed(bw.iter()),
            Moments::summed(iops.iter()),
            pcts,
        )
    }

    /// Several parts' figures as one (repeats, or a group read back).
    pub fn pooled(parts: &[&FioDir]) -> FioDir {
        let bw = |p: &FioDir| Moments {
            min: p.bw_min,
            max: p.bw_max,
            mean: p.bw_mean,
            stddev: p.bw_dev,
            n: p.bw_samples,
            percentile: None,
            bins: None,
        };
        let iops = |p: &FioDir| Moments {
            min: p.iops_min,
            max: p.iops_max,
            mean: p.iops_mean,
            stddev: p.iops_stddev,
            n: p.iops_samples,
            percentile: None,
            bins: None,
        };
        let b = Moments::pooled(parts.iter().map(|p| bw(p)).collect::<Vec<_>>().iter());
        let i = Moments::pooled(parts.iter().map(|p| iops(p)).collect::<Vec<_>>().iter());
        FioDir {
            short_ios: parts.iter().map(|p| p.short_ios).sum(),
            drop_ios: parts.iter().map(|p| p.drop_ios).sum(),
            slat_ns: Moments::pooled(parts.iter().map(|p| &p.slat_ns)),
            lat_ns: match parts {
                // One part (a repeat alone) keeps its percentiles.
                [one] => one.lat_ns.clone(),
                _ => Moments::pooled(parts.iter().map(|p| &p.lat_ns)),
            },
            bw_min: b.min,
            bw_max: b.max,
            bw_agg: parts.iter().map(|p| p.bw_agg).fold(0.0, f64::max),
            bw_mean: b.mean,
            bw_dev: b.stddev,
            bw_samples: b.n,
            iops_min: i.min,
            iops_max: i.max,
            iops_mean: i.mean,
            iops_stddev: i.stddev,
            iops_samples: i.n,
        }
    }

    /// `bw_agg` against a group bandwidth of `group_bw_bytes` (fio's
    /// `convert_agg_kbytes_percent`: at most 100).
    pub fn set_agg(&mut self, group_bw_bytes: u64) {
        self.bw_agg = if self.bw_samples > 0 && group_bw_bytes > 0 {
            (self.bw_mean * 100.0 / (group_bw_bytes as f64 / 1024.0)).min(100.0)
        } else {
            0.0
        };
    }
}

/// fio's `sync` object: the job's `fsync=`/`fdatasync=` syncs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SyncStats {
    /// Syncs issued in the timed span.
    pub total_ios: u64,
    /// Their latency.
    pub lat_ns: Moments,
}

/// fio's keys of a job beside xferbench's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FioJob {
    /// The options the job's own section gave, as written (fio's `job
    /// options`; `[global]`'s are the run's `global options`).
    #[serde(rename = "job options")]
    pub job_options: Pairs<String>,
    /// fio's `eta` when the run ended: INT_MAX within its first 3 s, 0
    /// after ([`FioJob::set_elapsed`]).
    pub eta: u64,
    /// Seconds from the run's start to its end, rounded up (fio's
    /// `elapsed`, the same for every job of a run).
    pub elapsed: u64,
    /// The timed span, ms (fio's `job_runtime`).
    pub job_runtime: u64,
    /// The worker thread's user and system CPU time, percent of `job_runtime`.
    pub usr_cpu: f64,
    /// System CPU time, percent of `job_runtime`.
    pub sys_cpu: f64,
    /// Its context switches, major and minor page faults.
    pub ctx: u64,
    /// Major page faults.
    pub majf: u64,
    /// Minor page faults.
    pub minf: u64,
    /// The job's syncs (`fsync=`, `fdatasync=`).
    pub sync: SyncStats,
    /// Percent of I/Os submitted at each queue depth ("1", "2", "4"…">=64").
    pub iodepth_level: Pairs<f64>,
    /// Percent of submissions and of reaps by the I/Os each carried
    /// ("0", "4", "8"…">=64").
    pub iodepth_submit: Pairs<f64>,
    /// Percent of reaps by the completions each returned.
    pub iodepth_complete: Pairs<f64>,
    /// Percent of I/Os whose completion latency fell in each range: below
    /// 2 ns, 4 ns… (`latency_ns`), µs and ms alike.
    pub latency_ns: Pairs<f64>,
    /// The same in µs (1 µs to 1 ms).
    pub latency_us: Pairs<f64>,
    /// The same in ms (from 1 ms).
    pub latency_ms: Pairs<f64>,
    /// fio's latency-target settings (no target here: its defaults).
    pub latency_depth: u32,
    /// fio's `latency_target`, ns (0: none).
    pub latency_target: u64,
    /// fio's `latency_percentile`.
    pub latency_percentile: f64,
    /// fio's `latency_window`, µs.
    pub latency_window: u64,
}

/// Labels of fio's depth map and of its submit/complete maps.
const DEPTH_KEYS: [&str; MAP_SLOTS] = ["1", "2", "4", "8", "16", "32", ">=64"];
const BATCH_KEYS: [&str; MAP_SLOTS] = ["0", "4", "8", "16", "32", "64", ">=64"];
/// Upper bounds of fio's latency ranges, in the unit of each map.
const LAT_EDGES: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];

/// fio's `stat_calc_dist`: percentages of `total`, any non-zero count
/// shown as at least 0.1.
fn dist(counts: &[u64; MAP_SLOTS], total: u64, keys: &[&str; MAP_SLOTS]) -> Pairs<f64> {
    Pairs(
        keys.iter()
            .zip(counts)
            .map(|(k, &c)| {
                let mut p = if total > 0 {
                    c as f64 * 100.0 / total as f64
                } else {
                    0.0
                };
                if c > 0 && p < 0.1 {
                    p = 0.1;
                }
                (k.to_string(), p)
            })
            .collect(),
    )
}

/// fio's latency maps of the completion latencies in `recs`: the share of
/// I/Os in each range of ns (below 1 µs), µs (below 1 ms) and ms.
fn latency_maps(recs: &[&Recorder]) -> [Pairs<f64>; 3] {
    let mut ns = [0u64; 10];
    let mut us = [0u64; 10];
    let mut ms = [0u64; 12];
    let mut total = 0;
    for r in recs {
        let h = r.histogram();
        for v in h.iter_recorded() {
            let n = v.count_at_value();
            let x = h.median_equivalent(v.value_iterated_to());
            total += n;
            let slot = |x: u64| LAT_EDGES.iter().position(|&e| x < e).unwrap_or(10);
            if x < 1_000 {
                ns[slot(x)] += n;
            } else if x < 1_000_000 {
                us[slot(x / 1_000)] += n;
            } else {
                let m = x / 1_000_000;
                ms[if m >= 2_000 { 11 } else { slot(m) }] += n;
            }
        }
    }
    let pct = |c: u64| {
        if total > 0 {
            c as f64 * 100.0 / total as f64
        } else {
            0.0
        }
    };
    let keys = |n: usize| {
        LAT_EDGES
            .iter()
            .map(|e| e.to_string())
            .chain(["2000".to_string(), ">=2000".to_string()])
            .take(n)
            .collect::<Vec<_>>()
    };
    let map = |counts: &[u64], keys: Vec<String>| {
        Pairs(
            keys.into_iter()
                .zip(counts)
                .map(|(k, &c)| (k, pct(c)))
                .collect(),
        )
    };
    [map(&ns, keys(10)), map(&us, keys(10)), map(&ms, keys(12))]
}

/// What the job-level keys are made of.
pub struct JobFacts<'a> {
    /// The options the job's section gave.
    pub given: &'a [(String, String)],
    /// The timed span, ns.
    pub runtime_ns: u64,
    /// The job's start and end, ns from the run's start.
    pub start_ns: u64,
    /// The job's end, ns from the run's start.
    pub end_ns: u64,
    /// The queue depth it ran at.
    pub iodepth: u32,
    /// Every direction's completion latencies.
    pub clat: &'a [Recorder],
}

impl FioJob {
    /// A finished job's keys from its worker's accounting.
    pub fn of(f: &FioStats, j: &JobFacts) -> FioJob {
        let ios: u64 = j.clat.iter().map(Recorder::count).sum();
        let cpu = |us: u64| {
            if j.runtime_ns > 0 {
                us as f64 * 1e5 / j.runtime_ns as f64
            } else {
                0.0
            }
        };
        let [latency_ns, latency_us, latency_ms] = latency_maps(&j.clat.iter().collect::<Vec<_>>());
        let Usage {
            usr_us,
            sys_us,
            ctx,
            majf,
            minf,
        } = f.usage;
        FioJob {
            job_options: Pairs(j.given.to_vec()),
            eta: ETA_UNKNOWN,
            elapsed: j.end_ns.saturating_sub(j.start_ns).div_ceil(1_000_000_000),
            job_runtime: j.runtime_ns / 1_000_000,
            usr_cpu: cpu(usr_us),
            sys_cpu: cpu(sys_us),
            ctx,
            majf,
            minf,
            sync: SyncStats {
                total_ios: f.sync.count(),
                // fio gives a sync's percentiles whenever clat's are given.
                lat_ns: Moments::with_percentiles(&f.sync),
            },
            iodepth_level: dist(&f.depth, f.depth.iter().sum::<u64>().max(ios), &DEPTH_KEYS),
            iodepth_submit: dist(&f.submit, f.submit.iter().sum(), &BATCH_KEYS),
            iodepth_complete: dist(&f.complete, f.complete.iter().sum(), &BATCH_KEYS),
            latency_ns,
            latency_us,
            latency_ms,
            latency_depth: j.iodepth,
            latency_target: 0,
            latency_percentile: 100.0,
            latency_window: 0,
        }
    }

    /// The run's `eta` and `elapsed` as fio reports them when it ends
    /// `run_ns` after it started: `elapsed` is the whole run's, in seconds
    /// rounded up (the same for every job), and `eta` fio's INT_MAX until
    /// 3 s have passed (fio computes no ETA before), 0 after (every job is
    /// done).
    pub fn set_elapsed(&mut self, run_ns: u64) {
        self.elapsed = run_ns.div_ceil(1_000_000_000);
        self.eta = if self.elapsed >= 3 { 0 } else { ETA_UNKNOWN };
    }

    /// A job's keys with nothing measured (an abandoned worker's).
    pub fn unmeasured(given: &[(String, String)], iodepth: u32) -> FioJob {
        FioJob::of(
            &FioStats::default(),
            &JobFacts {
                given,
                runtime_ns: 0,
                start_ns: 0,
                end_ns: 0,
                iodepth,
                clat: &[],
            },
        )
    }

    /// Jobs reported as one (`group_reporting`): the first's options, the
    /// longest runtime, CPU usage and counts summed, the maps weighted by
    /// each job's I/Os (fio adds the counts behind them).
    pub fn merged(parts: &[(&FioJob, u64)]) -> FioJob {
        let Some((first, _)) = parts.first() else {
            return FioJob::default();
        };
        let total: u64 = parts.iter().map(|p| p.1).sum();
        let weigh = |get: fn(&FioJob) -> &Pairs<f64>| {
            let keys = get(first).0.iter().map(|(k, _)| k.clone());
            Pairs(
                keys.map(|k| {
                    let v = parts
                        .iter()
                        .map(|(j, n)| get(j).get(&k).unwrap_or(0.0) * *n as f64)
                        .sum::<f64>();
                    (k, if total > 0 { v / total as f64 } else { 0.0 })
                })
                .collect(),
            )
        };
        let runtime = parts.iter().map(|p| p.0.job_runtime).max().unwrap_or(0);
        // CPU percentages back to time, summed, over the members' runtimes
        // summed: fio adds both (`usr_time`, `total_run_time`), so a group
        // of busy jobs shows each one's share, never above 100%.
        let summed: u64 = parts.iter().map(|p| p.0.job_runtime).sum();
        let cpu = |get: fn(&FioJob) -> f64| {
            let t: f64 = parts
                .iter()
                .map(|(j, _)| get(j) * j.job_runtime as f64)
                .sum();
            if summed > 0 { t / summed as f64 } else { 0.0 }
        };
        FioJob {
            job_options: first.job_options.clone(),
            eta: parts.iter().map(|p| p.0.eta).min().unwrap_or(ETA_UNKNOWN),
            elapsed: parts.iter().map(|p| p.0.elapsed).max().unwrap_or(0),
            job_runtime: runtime,
            usr_cpu: cpu(|j| j.usr_cpu),
            sys_cpu: cpu(|j| j.sys_cpu),
            ctx: parts.iter().map(|p| p.0.ctx).sum(),
            majf: parts.iter().map(|p| p.0.majf).sum(),
            minf: parts.iter().map(|p| p.0.minf).sum(),
            sync: SyncStats {
                total_ios: parts.iter().map(|p| p.0.sync.total_ios).sum(),
                lat_ns: Moments::pooled(parts.iter().map(|p| &p.0.sync.lat_ns)),
            },
            iodepth_level: weigh(|j| &j.iodepth_level),
            iodepth_submit: weigh(|j| &j.iodepth_submit),
            iodepth_complete: weigh(|j| &j.iodepth_complete),
            latency_ns: weigh(|j| &j.latency_ns),
            latency_us: weigh(|j| &j.latency_us),
            latency_ms: weigh(|j| &j.latency_ms),
            ..(*first).clone()
        }
    }
}

/// One block device's activity over the run, as fio's `disk_util` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DiskUtil {
    /// The whole disk's name, as /proc/diskstats has it.
    pub name: String,
    /// Reads completed.
    pub read_ios: u64,
    /// Writes completed.
    pub write_ios: u64,
    /// Reads merged with others.
    pub read_merges: u64,
    /// Writes merged with others.
    pub write_merges: u64,
    /// ms spent reading.
    pub read_ticks: u64,
    /// ms spent writing.
    pub write_ticks: u64,
    /// Weighted ms with I/O in flight.
    pub in_queue: u64,
    /// Percent of the run the device was busy.
    pub util: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_are_fios() {
        let mut r = Recorder::new();
        for v in [500u64, 1_500, 90_000, 3_000_000, 3_000_000_000] {
            r.record(v);
        }
        let [ns, us, ms] = latency_maps(&[&r]);
        assert_eq!(ns.get("750"), Some(20.0));
        assert_eq!(us.get("2"), Some(20.0));
        assert_eq!(us.get("100"), Some(20.0));
        assert_eq!(ms.get("4"), Some(20.0));
        assert_eq!(ms.get(">=2000"), Some(20.0));
        let d = dist(&[1, 0, 999, 0, 0, 0, 0], 1000, &DEPTH_KEYS);
        assert_eq!(d.get("1"), Some(0.1));
        assert_eq!(d.get("4"), Some(99.9));
        let m =
            Moments::pooled([Moments::of_values(&[1, 2, 3]), Moments::of_values(&[4, 5])].iter());
        let all = Moments::of_values(&[1, 2, 3, 4, 5]);
        assert_eq!((m.n, m.min, m.max), (5, 1, 5));
        assert!((m.mean - all.mean).abs() < 1e-9 && (m.stddev - all.stddev).abs() < 1e-9);
    }

    #[test]
    fn bins_serialise_in_numeric_order_and_read_back() {
        let b = Bins(vec![(9, 1), (100, 2), (1024, 3)]);
        let s = serde_json::to_string(&b).unwrap();
        assert_eq!(s, r#"{"9":1,"100":2,"1024":3}"#);
        let back: Bins = serde_json::from_str(&s).unwrap();
        assert_eq!(back, b);
        assert!(serde_json::from_str::<Bins>(r#"{"x":1}"#).is_err());
    }
}
