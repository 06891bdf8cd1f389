//! Load results: closed-loop cells (rate under each background load) and open-loop points (latency at an offered rate).

pub use crate::measure::loadgen::LoadStats;
use crate::measure::stats::Summary;
use crate::options::{Arrival, DataDirection};
use crate::result::{PointMeta, Run};
use crate::transport::BufferMode;
use serde::Serialize;

/// Bytes of the short half of each exchange (the command or the status).
pub const HEADER_BYTES: u64 = 16;

/// One cell of the closed-loop table.
#[derive(Clone, Debug, Serialize)]
pub struct ClosedPoint {
    /// The transport's name (`tcp`, `shm`…).
    pub transport: String,
    /// The transport spec as given, options included.
    pub spec: String,
    /// Where the payload lives.
    pub buffers: BufferMode,
    /// How each end waits for a message: polling or blocking.
    pub completion: crate::transport::CompletionMode,
    /// Which way the data goes: `read` (responder sends it) or `write`.
    pub direction: DataDirection,
    /// Data bytes per request; the other half of the exchange is
    /// [`HEADER_BYTES`].
    pub size_bytes: u64,
    /// The background load's word (`idle`, `alu`…), or `cmd: ` and the command.
    pub load: String,
    /// Requests in flight at once: one link, and one thread, each.
    pub inflight: u32,
    /// Requests completed per second, over all links.
    pub req_per_s: f64,
    /// KB = 1024 bytes, as rk11perf: req/s × size / 1024.
    pub kb_per_s: f64,
    /// The load's own rate over the cells it ran under (`load_unit` says of
    /// what); null for idle and external commands.
    pub load_ops_per_s: Option<f64>,
    /// What one load operation is ("adds", "bytes copied"…); empty when the
    /// run was stopped before the load's cells were done.
    pub load_unit: &'static str,
    /// Requests completed in the timed span, over all links (warm-up excluded).
    pub requests: u64,
    /// The timed span, seconds: the longest of the links'.
    pub seconds: f64,
    /// Round-trip time of the requests, ns.
    pub latency: Summary,
    /// The run was stopped while this cell was measured.
    pub partial: bool,
    /// Caveats on this cell's figures.
    pub warnings: Vec<String>,
}

/// One offered rate in the open loop.
#[derive(Clone, Debug, Serialize)]
pub struct OpenPoint {
    /// The transport's name (`tcp`, `shm`…).
    pub transport: String,
    /// The transport spec as given, options included.
    pub spec: String,
    /// Which way the data goes: `read` (responder sends it) or `write`.
    pub direction: DataDirection,
    /// Data bytes per request; the other half of the exchange is
    /// [`HEADER_BYTES`].
    pub size_bytes: u64,
    /// The background load's word (`idle`, `alu`…).
    pub load: String,
    /// How due times are spaced: fixed or Poisson.
    pub arrival: Arrival,
    /// The rate requests were due at, per second.
    pub offered_per_s: f64,
    /// Requests completed per second of the cell.
    pub achieved_per_s: f64,
    /// Requests due within the cell, sent, and not sent by its end.
    pub due: u64,
    /// Requests sent and answered within the cell.
    pub completed: u64,
    /// Requests due within the cell but never sent: `due` − `completed`.
    pub missed: u64,
    /// Sent more than 10 µs after they were due.
    pub late: u64,
    /// The cell's length as measured, seconds (at most `--cell-time`).
    pub seconds: f64,
    /// From each request's due time to its reply, ns.
    pub latency: Summary,
    /// The run was stopped while this rate was measured.
    pub partial: bool,
    /// Caveats on this point's figures (requests never sent).
    pub warnings: Vec<String>,
}

/// One point of a load run; in JSON, the point's own fields with no tag.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum LoadPoint {
    /// A closed-loop cell: requests back to back under a background load.
    Closed(ClosedPoint),
    /// An open-loop point: requests due at an offered rate.
    Open(OpenPoint),
}

impl PointMeta for LoadPoint {
    fn count(&self) -> u64 {
        match self {
            LoadPoint::Closed(p) => p.requests,
            LoadPoint::Open(p) => p.completed,
        }
    }
    fn warmup(&self) -> u64 {
        0
    }
    fn partial(&self) -> bool {
        match self {
            LoadPoint::Closed(p) => p.partial,
            LoadPoint::Open(p) => p.partial,
        }
    }
    fn warnings(&self) -> &[String] {
        match self {
            LoadPoint::Closed(p) => &p.warnings,
            LoadPoint::Open(p) => &p.warnings,
        }
    }
    fn label(&self) -> String {
        match self {
            LoadPoint::Closed(p) => format!(
                "{} {} {} B under {}",
                p.spec,
                dir_name(p.direction),
                p.size_bytes,
                p.load
            ),
            LoadPoint::Open(p) => format!(
                "{} {} {} B at {:.0}/s",
                p.spec,
                dir_name(p.direction),
                p.size_bytes,
                p.offered_per_s
            ),
        }
    }
    fn sample_noun(&self) -> &'static str {
        "requests"
    }
}

/// The direction's word: `read` or `write`.
pub fn dir_name(d: DataDirection) -> &'static str {
    match d {
        DataDirection::Read => "read",
        DataDirection::Write => "write",
    }
}

/// What the run adds beside its points: each load's own rate.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LoadExtra {
    /// What each background load did, in the order they ran (closed loop:
    /// one per direction and load; open loop: one per configuration).
    pub loads: Vec<LoadStats>,
    /// CPUs the built-in loads ran on: `--load-cpus`, or the allowed CPUs
    /// the initiator and responder do not use (all of them when none is spare).
    pub load_cpus: Vec<usize>,
}

/// The result of `xferbench load`.
pub type LoadRun = Run<LoadPoint, LoadExtra>;
