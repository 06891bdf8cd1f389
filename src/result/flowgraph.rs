//! Flowgraph results: one point per scheduler, edges, N and M, with the kernel-only scan and bounds.

use crate::flowgraph::edge::{self};
use crate::result::{PointMeta, Run};
use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowPoint {
    pub scheduler: &'static str,
    /// The kind of edge between blocks: `circular` buffers or `handoff`
    /// (the ring reference always hands buffers over).
    pub edges: &'static str,
    pub cores: usize,
    pub blocks: usize,
    /// The median rate over windows of `flowgraph::rate::WINDOW` (10 ms),
    /// the estimator the kernel scan uses too.
    pub samples_per_s: f64,
    /// All items over all measured time: what the median discounts (stalls).
    pub mean_sps: f64,
    /// The spread of the window rates.
    pub p10_sps: f64,
    pub p90_sps: f64,
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
    pub buffer_bytes: u64,
    /// Buffers round the circuit (the ring, handoff edges), or held by each
    /// circular buffer between threads (circular edges).
    pub buffers: usize,
    /// Items the sink counted while measured, and over how many seconds.
    pub items: u64,
    pub measured_s: f64,
    pub partial: bool,
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

#[derive(Clone, Debug, Default, Serialize)]
pub struct ScanPoint {
    pub buffer_bytes: u64,
    /// The median over 10 ms windows, as for every flowgraph point (the
    /// scan's two passes pooled).
    pub samples_per_s: f64,
    /// All items over all time, both passes.
    pub mean_sps: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowExtra {
    /// The kernel build that ran (avx512, avx2+fma, neon, portable): the
    /// widest the CPU has unless `--kernel` chose another.
    pub kernel: &'static str,
    /// Buffers a circular buffer between threads holds (`--edge-buffers`,
    /// resolved), and the L2 cache size `auto` sized them from.
    pub edge_buffers: usize,
    pub l2_cache_bytes: Option<usize>,
    /// The kernel alone at the scan's best buffer size: the ideal bounds'
    /// unit. The median of its measurements through the run (the scan's,
    /// and one before the first point and after each), so that no one fast
    /// or slow second of the host sets every bound.
    pub kernel_only_sps: f64,
    pub kernel_only_min_sps: f64,
    pub kernel_only_max_sps: f64,
    pub kernel_only_measurements: usize,
    pub kernel_only_buffer_bytes: u64,
    /// The kernel alone at the flowgraph's own `--buffer-size`, measured
    /// the same way (the scan's figure if it has that size, and beside the
    /// best size through the run; their median). At 16 KiB an out-of-place
    /// kernel's input and output fill a 32 KiB L1 cache, so it runs below
    /// its best size: every runtime at that size pays the same.
    pub kernel_at_buffer_sps: f64,
    pub kernel_at_buffer_measurements: usize,
    pub kernel_scan: Vec<ScanPoint>,
}

pub type FlowRun = Run<FlowPoint, FlowExtra>;
