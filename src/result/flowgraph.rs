//! Flowgraph results: one point per scheduler, edges, N and M, with the kernel-only scan and bounds.

use crate::flowgraph::edge::{self};
use crate::result::{PointMeta, Run};
use serde::Serialize;

/// One flowgraph measured: a scheduler and an edge kind on N cores with M
/// saxpy blocks. Rates are in samples (f32 items reaching the sink) per second.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowPoint {
    /// The scheduler's word (`seq`, `static`, `ring`, `tokio`…).
    pub scheduler: &'static str,
    /// The kind of edge between blocks: `circular` buffers or `handoff`
    /// (the ring reference always hands buffers over).
    pub edges: &'static str,
    /// N: the cores the flowgraph ran on.
    pub cores: usize,
    /// M: the saxpy blocks between the source and the sink.
    pub blocks: usize,
    /// The median rate over windows of `flowgraph::rate::WINDOW` (10 ms),
    /// the estimator the kernel scan uses too.
    pub samples_per_s: f64,
    /// All items over all measured time: what the median discounts (stalls).
    pub mean_sps: f64,
    /// The spread of the window rates: their 10th percentile (the mean when
    /// there were fewer than 5 windows).
    pub p10_sps: f64,
    /// The 90th percentile of the window rates (the mean with fewer than 5).
    pub p90_sps: f64,
    /// 10 ms windows measured, over every round.
    pub windows: usize,
    /// In how many rounds (slices of the measuring time, taken in turn with
    /// the other schedulers of the same N and M) those windows were taken.
    pub rounds: usize,
    /// N/M × the kernel-only rate: blocks shared fairly over every core.
    pub ideal_dynamic_sps: f64,
    /// 1/⌈M/N⌉ × the kernel-only rate: the best a fixed placement can do.
    pub ideal_static_sps: f64,
    /// Measured over the static bound (the one any fixed placement meets).
    pub efficiency: f64,
    /// Measured over the dynamic bound.
    pub efficiency_dynamic: f64,
    /// The kernel alone at the best size on the first CPU, measured before
    /// this point's first round and after each (their mean): the host's speed
    /// drifts by ±15 % over seconds on a shared VM, so this is the fair
    /// unit for this point.
    pub kernel_paired_sps: f64,
    /// Measured × ⌈M/N⌉ over the paired kernel rate: the static efficiency
    /// with the drift taken out.
    pub efficiency_paired: f64,
    /// Measured × ⌈M/N⌉ over the kernel alone at this run's buffer size
    /// (`kernel_at_buffer_sps`): what the runtime itself costs, apart from
    /// what the buffer size costs the kernel against its best size.
    pub efficiency_same_size: f64,
    /// The CPUs used, in order (pinned, or the allowed set for thread-per-block).
    pub cpus: Vec<usize>,
    /// Bytes each block moves per call (`--buffer-size`).
    pub buffer_bytes: u64,
    /// Buffers round the circuit (the ring, handoff edges), or held by each
    /// circular buffer between threads (circular edges).
    pub buffers: usize,
    /// Items the sink counted while measured, and over how many seconds.
    pub items: u64,
    /// Seconds `items` were counted over: every round's windows together.
    pub measured_s: f64,
    /// The run was stopped before every round of this point was measured.
    pub partial: bool,
    /// Caveats on this point's figures (short or noisy measurement, a rate
    /// above the ideal bound).
    pub warnings: Vec<String>,
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
#[derive(Clone, Debug, Default, Serialize)]
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
#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowExtra {
    /// The kernel build that ran (avx512, avx2+fma, neon, portable): the
    /// widest the CPU has unless `--kernel` chose another.
    pub kernel: &'static str,
    /// Buffers a circular buffer between threads holds (`--edge-buffers`,
    /// resolved), and the L2 cache size `auto` sized them from.
    pub edge_buffers: usize,
    /// L2 cache of the first CPU, bytes; null when sysfs does not say.
    pub l2_cache_bytes: Option<usize>,
    /// The kernel alone at the scan's best buffer size: the ideal bounds'
    /// unit. The median of its measurements through the run (the scan's,
    /// and one before the first point and after each), so that no one fast
    /// or slow second of the host sets every bound.
    pub kernel_only_sps: f64,
    /// The slowest of those measurements, samples/s.
    pub kernel_only_min_sps: f64,
    /// The fastest of those measurements, samples/s.
    pub kernel_only_max_sps: f64,
    /// How many measurements `kernel_only_sps` is the median of.
    pub kernel_only_measurements: usize,
    /// The scan's best buffer size, bytes: where the kernel alone ran fastest.
    pub kernel_only_buffer_bytes: u64,
    /// The kernel alone at the flowgraph's own `--buffer-size`, measured
    /// the same way (the scan's figure if it has that size, and beside the
    /// best size through the run; their median). At 16 KiB an out-of-place
    /// kernel's input and output fill a 32 KiB L1 cache, so it runs below
    /// its best size: every runtime at that size pays the same.
    pub kernel_at_buffer_sps: f64,
    /// How many measurements `kernel_at_buffer_sps` is the median of.
    pub kernel_at_buffer_measurements: usize,
    /// The kernel alone at each `--kernel-sizes` size, before any point.
    pub kernel_scan: Vec<ScanPoint>,
}

/// The result of `xferbench flowgraph`.
pub type FlowRun = Run<FlowPoint, FlowExtra>;
