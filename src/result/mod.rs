//! The result of one experiment: the canonical, lossless form every report is
//! rendered from, and what `--format json` prints.

pub mod curve;
pub mod flowgraph;
pub mod load;
pub mod mesh;
pub mod stream;

pub use crate::measure::env::{Env, Gpu};
pub use crate::measure::placement::Placement;
pub use crate::measure::stats::Summary;
use crate::transport::{BufferMode, CompletionMode};
use serde::Serialize;

/// What every experiment's points tell the shared report footer.
pub trait PointMeta {
    /// Samples the point's figures rest on (round trips, requests, items).
    fn count(&self) -> u64;
    /// Samples run before timing and not recorded (0 where there is no warm-up).
    fn warmup(&self) -> u64;
    /// The run was stopped while this point was measured.
    fn partial(&self) -> bool;
    /// Caveats on this point's figures.
    fn warnings(&self) -> &[String];
    /// Names the point in a warning line.
    fn label(&self) -> String;
    /// What one sample is, for the footer.
    fn sample_noun(&self) -> &'static str {
        "round trips"
    }
}

/// An experiment that adds nothing at the top level.
#[derive(Clone, Debug, Default, Serialize)]
pub struct NoExtra {}

/// One run of an experiment: its environment, options, placement and
/// points (`P`), with what the experiment adds beside them (`X`).
#[derive(Clone, Debug, Serialize)]
pub struct Run<P = Point, X = NoExtra> {
    /// Which experiment: "roundtrip", "curve", "load", "flowgraph" or "stream".
    pub experiment: &'static str,
    /// False when the run was interrupted or failed part-way: `points` holds
    /// the points that finished, and the one under way if it had samples
    /// (marked `partial`).
    pub complete: bool,
    /// Why the run is incomplete, if it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    /// The machine and software it ran on.
    pub env: Env,
    /// Every option in force, defaults included.
    pub options: serde_json::Value,
    /// Where the initiator and responder ran.
    pub placement: Placement,
    /// The measured points, in run order.
    pub points: Vec<P>,
    /// Experiment-specific results beside the points (a curve's fits).
    #[serde(flatten)]
    pub extra: X,
    /// Caveats that apply to the whole run (virtual machine, shared core…).
    pub warnings: Vec<String>,
    /// What each link's device said of itself (plugins: name, ABI, library,
    /// and the JSON object its `counters` returned), with the spec and modes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<serde_json::Value>,
}

/// One measured configuration: a transport, its modes, and one size pair.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    /// The transport's name (`tcp`, `shm`…).
    pub transport: String,
    /// The transport spec as given, options included.
    pub spec: String,
    /// Where the payload lives.
    pub buffers: BufferMode,
    /// How each end waits for a message: polling or blocking.
    pub completion: CompletionMode,
    /// Request size, bytes (initiator to responder).
    pub in_bytes: u64,
    /// Reply size, bytes (responder to initiator).
    pub out_bytes: u64,
    /// Added responder delay, ns.
    pub responder_delay_ns: u64,
    /// Round trips run before timing and not recorded.
    pub warmup: u64,
    /// Time spent in the timed loop, seconds.
    pub timed_s: f64,
    /// The run was stopped while this point was measured: it holds fewer
    /// samples than asked for.
    pub partial: bool,
    /// Round-trip times, ns.
    pub summary: Summary,
    /// Median of the first and second halves of the samples: they should agree.
    pub half_p50_ns: [u64; 2],
    /// Caveats on this point's figures.
    pub warnings: Vec<String>,
}

impl PointMeta for Point {
    fn count(&self) -> u64 {
        self.summary.count
    }
    fn warmup(&self) -> u64 {
        self.warmup
    }
    fn partial(&self) -> bool {
        self.partial
    }
    fn warnings(&self) -> &[String] {
        &self.warnings
    }
    fn label(&self) -> String {
        format!(
            "{} {}/{} in {} out {}",
            self.spec,
            self.buffers.name(),
            self.completion.name(),
            self.in_bytes,
            self.out_bytes
        )
    }
}

impl Run {
    /// The distinct (spec, buffers, completion) configurations, in run order.
    pub fn configs(&self) -> Vec<(String, BufferMode, CompletionMode)> {
        let mut out: Vec<(String, BufferMode, CompletionMode)> = Vec::new();
        for p in &self.points {
            let k = (p.spec.clone(), p.buffers, p.completion);
            if !out.contains(&k) {
                out.push(k);
            }
        }
        out
    }
}
