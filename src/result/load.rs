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
    pub transport: String,
    pub spec: String,
    pub buffers: BufferMode,
    pub completion: crate::transport::CompletionMode,
    pub direction: DataDirection,
    pub size_bytes: u64,
    pub load: String,
    pub inflight: u32,
    pub req_per_s: f64,
    /// KB = 1024 bytes, as rk11perf: req/s × size / 1024.
    pub kb_per_s: f64,
    /// The load's own rate over the cells it ran under (`load_unit` says of
    /// what); null for idle and external commands.
    pub load_ops_per_s: Option<f64>,
    pub load_unit: &'static str,
    pub requests: u64,
    pub seconds: f64,
    /// Round-trip time of the requests, ns.
    pub latency: Summary,
    pub partial: bool,
    pub warnings: Vec<String>,
}

/// One offered rate in the open loop.
#[derive(Clone, Debug, Serialize)]
pub struct OpenPoint {
    pub transport: String,
    pub spec: String,
    pub direction: DataDirection,
    pub size_bytes: u64,
    pub load: String,
    pub arrival: Arrival,
    pub offered_per_s: f64,
    pub achieved_per_s: f64,
    /// Requests due within the cell, sent, and not sent by its end.
    pub due: u64,
    pub completed: u64,
    pub missed: u64,
    /// Sent more than 10 µs after they were due.
    pub late: u64,
    pub seconds: f64,
    /// From each request's due time to its reply, ns.
    pub latency: Summary,
    pub partial: bool,
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum LoadPoint {
    Closed(ClosedPoint),
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

pub fn dir_name(d: DataDirection) -> &'static str {
    match d {
        DataDirection::Read => "read",
        DataDirection::Write => "write",
    }
}

/// What the run adds beside its points: each load's own rate.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LoadExtra {
    pub loads: Vec<LoadStats>,
    pub load_cpus: Vec<usize>,
}

pub type LoadRun = Run<LoadPoint, LoadExtra>;
