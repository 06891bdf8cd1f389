//! Flowgraph results: one point per scheduler, edges, N and M, with the kernel-only scan and bounds.

use crate::flowgraph::edge::{self};
use crate::flowgraph::rate::{Rate, Windows, quantile};
use crate::result::{Figures, PointMeta, Repeatable, Run, Spread, merged_warnings};
use serde::{Deserialize, Serialize};

/// One flowgraph measured: a scheduler and an edge kind on N cores with M
/// saxpy blocks. Rates are in samples (f32 items reaching the sink) per second.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FlowPoint {
    /// The scheduler's word (`seq`, `static`, `ring`, `tokio`…).
    #[serde(deserialize_with = "crate::words::de_interned")]
    pub scheduler: crate::words::Interned,
    /// The kind of edge between blocks: `circular` buffers or `handoff`
    /// (the ring reference always hands buffers over).
    #[serde(default, deserialize_with = "crate::words::de_interned")]
    pub edges: crate::words::Interned,
    /// N: the cores the flowgraph ran on.
    pub cores: usize,
    /// M: the saxpy blocks between the source and the sink.
    pub blocks: usize,
    /// The median rate over windows of `flowgraph::rate::WINDOW` (10 ms),
    /// the estimator the kernel scan uses too.
    pub samples_per_s: f64,
    /// All items over all measured time: what the median discounts (stalls).
    #[serde(default)]
    pub mean_sps: f64,
    /// The spread of the window rates: their 10th percentile (the mean when
    /// there were fewer than 5 windows).
    #[serde(default)]
    pub p10_sps: f64,
    /// The 90th percentile of the window rates (the mean with fewer than 5).
    #[serde(default)]
    pub p90_sps: f64,
    /// 10 ms windows measured, over every round.
    #[serde(default)]
    pub windows: usize,
    /// In how many rounds (slices of the measuring time, taken in turn with
    /// the other schedulers of the same N and M) those windows were taken.
    #[serde(default)]
    pub rounds: usize,
    /// N/M × the kernel-only rate: blocks shared fairly over every core.
    pub ideal_dynamic_sps: f64,
    /// 1/⌈M/N⌉ × the kernel-only rate: the best a fixed placement can do.
    pub ideal_static_sps: f64,
    /// Measured over the static bound (the one any fixed placement meets).
    pub efficiency: f64,
    /// Measured over the dynamic bound.
    #[serde(default)]
    pub efficiency_dynamic: f64,
    /// The kernel alone at the best size on the first CPU, measured before
    /// this point's first round and after each (their mean): the host's speed
    /// drifts by ±15 % over seconds on a shared VM, so this is the fair
    /// unit for this point.
    #[serde(default)]
    pub kernel_paired_sps: f64,
    /// Measured × ⌈M/N⌉ over the paired kernel rate: the static efficiency
    /// with the drift taken out.
    #[serde(default)]
    pub efficiency_paired: f64,
    /// Measured × ⌈M/N⌉ over the kernel alone at this run's buffer size
    /// (`kernel_at_buffer_sps`): what the runtime itself costs, apart from
    /// what the buffer size costs the kernel against its best size.
    #[serde(default)]
    pub efficiency_same_size: f64,
    /// The CPUs used, in order (pinned, or the allowed set for thread-per-block).
    #[serde(default)]
    pub cpus: Vec<usize>,
    /// Bytes each block moves per call (`--buffer-size`).
    #[serde(default)]
    pub buffer_bytes: u64,
    /// Buffers round the circuit (the ring, handoff edges), or held by each
    /// circular buffer between threads (circular edges).
    #[serde(default)]
    pub buffers: usize,
    /// Items the sink counted while measured, and over how many seconds.
    #[serde(default)]
    pub items: u64,
    /// Seconds `items` were counted over: every round's windows together.
    #[serde(default)]
    pub measured_s: f64,
    /// The run was stopped before every round of this point was measured.
    #[serde(default)]
    pub partial: bool,
    /// Caveats on this point's figures (short or noisy measurement, a rate
    /// above the ideal bound).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Each repeat's figures (`repeats`), and the windows cut into
    /// consecutive runs (`intervals`). No histogram: the sink counts items
    /// per window, not a time per item.
    #[serde(flatten)]
    pub spread: Spread,
    /// The windows themselves, so that repeats pool them into one median as
    /// rounds do.
    #[serde(skip)]
    pub(crate) windows_kept: Windows,
}

/// What a point's windows say of its measurement: too short, or windows
/// that disagree widely.
pub fn rate_warnings(r: &Rate) -> Vec<String> {
    let mut w = Vec::new();
    if r.seconds < 0.1 {
        w.push(format!(
            "measured over only {:.0} ms: noisy",
            r.seconds * 1e3
        ));
    }
    w.extend(r.noise_warning());
    w
}

/// The warning of a point faster than its ideal bound.
pub const FASTER_THAN_BOUND: &str = "faster than the ideal bound: the host ran faster during this point than the kernel's typical rate (see efficiency_paired)";

/// A block's or a repeat's figures of a rate.
pub fn rate_figures(r: &Rate) -> Figures {
    Figures::from([("samples_per_s", r.per_s), ("mean_sps", r.mean_per_s)])
}

impl Repeatable for FlowPoint {
    fn identity(&self) -> String {
        self.label()
    }
    fn figures(&self) -> Figures {
        Figures::from([
            ("samples_per_s", self.samples_per_s),
            ("mean_sps", self.mean_sps),
        ])
    }
    /// One point from its repeats. A repeat is more rounds of the same
    /// point, so the windows of every repeat are pooled and `samples_per_s`
    /// (and p10, p90) is their median, exactly as a single run pools its
    /// rounds: the same estimator whatever K, and as robust to a stalled
    /// window. (The median of the repeats' medians would weigh a short
    /// repeat as much as a long one; it is used only when the windows are
    /// not at hand.) `mean_sps` is every item over every measured second;
    /// windows, rounds, items and seconds are summed; the kernel beside the
    /// point is the mean of the repeats'. The bounds and efficiencies are
    /// the experiment's to redo against the run's kernel rate.
    fn merge(reps: Vec<FlowPoint>) -> FlowPoint {
        let figures: Vec<Figures> = reps.iter().map(Repeatable::figures).collect();
        let pooled = reps.iter().all(|p| p.windows_kept.rate().windows > 0);
        let mut windows = Windows::default();
        if pooled {
            for p in &reps {
                windows.merge(p.windows_kept.clone());
            }
        }
        // Each repeat's own rate warnings give way to the pooled windows'.
        let own: Vec<Vec<String>> = reps
            .iter()
            .map(|p| {
                let mine = rate_warnings(&p.windows_kept.rate());
                p.warnings
                    .iter()
                    .filter(|w| !(pooled && mine.contains(w)) && *w != FASTER_THAN_BOUND)
                    .cloned()
                    .collect()
            })
            .collect();
        let mut warnings = merged_warnings(own.iter(), &figures, "samples_per_s");
        let items: u64 = reps.iter().map(|p| p.items).sum();
        let measured_s: f64 = reps.iter().map(|p| p.measured_s).sum();
        let (per_s, p10, p90) = if pooled {
            let r = windows.rate();
            warnings.extend(rate_warnings(&r));
            (r.per_s, r.p10_per_s, r.p90_per_s)
        } else {
            let median = |f: fn(&FlowPoint) -> f64| {
                let mut v: Vec<f64> = reps.iter().map(f).collect();
                v.sort_by(f64::total_cmp);
                quantile(&v, 0.5)
            };
            (
                median(|p| p.samples_per_s),
                median(|p| p.p10_sps),
                median(|p| p.p90_sps),
            )
        };
        let spread = Spread::of_repeats(reps.iter().map(|p| p.spread.clone()).collect(), figures);
        let kernel_paired_sps =
            reps.iter().map(|p| p.kernel_paired_sps).sum::<f64>() / reps.len() as f64;
        let windows_n = reps.iter().map(|p| p.windows).sum();
        let rounds = reps.iter().map(|p| p.rounds).sum();
        let partial = reps.iter().any(|p| p.partial);
        let first = reps.into_iter().next().expect("at least one repeat");
        FlowPoint {
            samples_per_s: per_s,
            mean_sps: if measured_s > 0.0 {
                items as f64 / measured_s
            } else {
                0.0
            },
            p10_sps: p10,
            p90_sps: p90,
            windows: windows_n,
            rounds,
            kernel_paired_sps,
            items,
            measured_s,
            partial,
            warnings,
            spread,
            windows_kept: windows,
            ..first
        }
    }
}

impl PointMeta for FlowPoint {
    fn count(&self) -> u64 {
        self.items
    }
    fn warmup(&self) -> u64 {
        0
    }
    fn partial(&self) -> bool {
        self.partial
    }
    fn warnings(&self) -> &[String] {
        &self.warnings
    }
    fn label(&self) -> String {
        format!(
            "{} N={} M={}",
            edge::series(self.scheduler, self.edges),
            self.cores,
            self.blocks
        )
    }
    fn sample_noun(&self) -> &'static str {
        "samples"
    }
}

/// The kernel alone on the first CPU at one buffer size (the kernel-only scan).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ScanPoint {
    /// Bytes per kernel call: the size scanned (`--kernel-sizes`).
    pub buffer_bytes: u64,
    /// The median over 10 ms windows, as for every flowgraph point (the
    /// scan's two passes pooled).
    pub samples_per_s: f64,
    /// All items over all time, both passes.
    pub mean_sps: f64,
}

/// What a flowgraph run adds beside its points: the kernel-alone rates the
/// ideal bounds and efficiencies are drawn from.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FlowExtra {
    /// The kernel build that ran (avx512, avx2+fma, neon, portable): the
    /// widest the CPU has unless `--kernel` chose another.
    #[serde(default, deserialize_with = "crate::words::de_interned")]
    pub kernel: crate::words::Interned,
    /// Buffers a circular buffer between threads holds (`--edge-buffers`,
    /// resolved), and the L2 cache size `auto` sized them from.
    #[serde(default)]
    pub edge_buffers: usize,
    /// L2 cache of the first CPU, bytes; null when sysfs does not say.
    #[serde(default)]
    pub l2_cache_bytes: Option<usize>,
    /// The kernel alone at the scan's best buffer size: the ideal bounds'
    /// unit. The median of its measurements through the run (the scan's,
    /// and one before the first point and after each), so that no one fast
    /// or slow second of the host sets every bound.
    pub kernel_only_sps: f64,
    /// The slowest of those measurements, samples/s.
    #[serde(default)]
    pub kernel_only_min_sps: f64,
    /// The fastest of those measurements, samples/s.
    #[serde(default)]
    pub kernel_only_max_sps: f64,
    /// How many measurements `kernel_only_sps` is the median of.
    #[serde(default)]
    pub kernel_only_measurements: usize,
    /// The scan's best buffer size, bytes: where the kernel alone ran fastest.
    #[serde(default)]
    pub kernel_only_buffer_bytes: u64,
    /// The kernel alone at the flowgraph's own `--buffer-size`, measured
    /// the same way (the scan's figure if it has that size, and beside the
    /// best size through the run; their median). At 16 KiB an out-of-place
    /// kernel's input and output fill a 32 KiB L1 cache, so it runs below
    /// its best size: every runtime at that size pays the same.
    #[serde(default)]
    pub kernel_at_buffer_sps: f64,
    /// How many measurements `kernel_at_buffer_sps` is the median of.
    #[serde(default)]
    pub kernel_at_buffer_measurements: usize,
    /// The kernel alone at each `--kernel-sizes` size, before any point.
    #[serde(default)]
    pub kernel_scan: Vec<ScanPoint>,
}

/// The result of `xferbench flowgraph`.
pub type FlowRun = Run<FlowPoint, FlowExtra>;

impl FlowRun {
    /// Whether the edges' depth was left to the run (`edge_buffers`
    /// `auto`, as recorded), which sized it from this CPU's L2 cache.
    pub fn edge_buffers_auto(&self) -> bool {
        self.options["edge_buffers"] == "auto"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A point measured over `n` windows of 10 ms, `items` each.
    fn point(n: u64, items: u64) -> FlowPoint {
        let mut w = Windows::default();
        for _ in 0..n {
            w.record(items, 0.01);
        }
        let r = w.rate();
        FlowPoint {
            scheduler: "static",
            edges: "circular",
            cores: 2,
            blocks: 3,
            samples_per_s: r.per_s,
            mean_sps: r.mean_per_s,
            p10_sps: r.p10_per_s,
            p90_sps: r.p90_per_s,
            windows: r.windows,
            rounds: 3,
            kernel_paired_sps: 1e9,
            items: r.items,
            measured_s: r.seconds,
            warnings: rate_warnings(&r),
            spread: Spread {
                histogram: None,
                repeats: Vec::new(),
                blocks: w.blocks(10).iter().map(rate_figures).collect(),
            },
            windows_kept: w,
            ..FlowPoint::default()
        }
    }

    #[test]
    fn repeats_pool_their_windows_and_keep_their_figures() {
        let reps = vec![point(20, 100), point(10, 400)];
        let id = reps[0].identity();
        assert_eq!(id, reps[1].identity());
        let m = FlowPoint::merge(reps);
        assert_eq!(m.identity(), id, "identity survives the merge");
        assert_eq!((m.windows, m.rounds, m.items), (30, 6, 2000 + 4000));
        assert!((m.measured_s - 0.3).abs() < 1e-9);
        assert!((m.mean_sps - 6000.0 / 0.3).abs() < 1e-6);
        // The median of all 30 windows: twenty at 10 k/s, ten at 40 k/s.
        assert_eq!(m.samples_per_s, 10_000.0);
        assert_eq!((m.p10_sps, m.p90_sps), (10_000.0, 40_000.0));
        assert_eq!(m.kernel_paired_sps, 1e9);
        let r = &m.spread.repeats;
        assert_eq!(r.len(), 2);
        assert_eq!(
            (r[0]["samples_per_s"], r[1]["samples_per_s"]),
            (10_000.0, 40_000.0)
        );
        assert_eq!(m.spread.blocks.len(), 20, "every repeat's blocks");
        assert!(
            m.warnings
                .iter()
                .any(|w| w.contains("samples_per_s varies"))
        );
        assert_eq!(
            m.warnings.iter().filter(|w| w.contains("p10")).count(),
            1,
            "one noise warning, the pooled windows': {:?}",
            m.warnings
        );
    }

    #[test]
    fn spread_keeps_clear_of_the_count_of_blocks() {
        let one = FlowPoint::merge(vec![point(20, 100)]);
        let j = serde_json::to_value(&one).unwrap();
        assert_eq!(j["blocks"], 3, "M, as the reports read it");
        assert_eq!(j["intervals"].as_array().unwrap().len(), 10);
        assert!(j["intervals"][0]["samples_per_s"].is_number());
        assert!(j.get("histogram").is_none() && j.get("repeats").is_none());
        assert!(j.get("windows_kept").is_none());
        let two = FlowPoint::merge(vec![point(20, 100), point(20, 100)]);
        let j = serde_json::to_value(&two).unwrap();
        assert_eq!(j["repeats"].as_array().unwrap().len(), 2);
        assert_eq!(j["intervals"].as_array().unwrap().len(), 20);
    }
}
