//! What one flowgraph point is told, and what a started one hands back:
//! the types the scheduled graph and the ring reference both speak.

use super::block::Meter;
use super::edge::Edges;
use crate::error::Result;
use std::time::Duration;

/// How one point runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// M, the saxpy blocks.
    pub blocks: usize,
    /// The N cores, in order.
    pub cpus: Vec<usize>,
    /// Items per work call (the buffer size, in f32).
    pub chunk: usize,
    /// The kind of edge between blocks (the ring reference ignores it).
    pub edges: Edges,
    /// Buffers circulating in the ring reference and in a handoff circuit
    /// (the seed's N+1).
    pub buffers: usize,
    /// Capacity in chunks of a ring between blocks on different threads:
    /// at least 2, one filling while another drains; the experiment sizes
    /// it to twice the L2 cache (`--edge-buffers auto`). A ring between
    /// blocks that one thread runs in turn holds one chunk: more would only
    /// spread the working set over more cache.
    pub edge_buffers: usize,
    pub warmup: Duration,
    pub duration: Duration,
    /// Stop after the source made this many items, instead of after `duration`.
    pub items: Option<u64>,
    /// How long the scheduler may take to wind down once told to stop.
    pub timeout: Duration,
}

/// A started flowgraph: the sink's meter, and the call that runs it on its
/// own threads until stopped.
pub type Started = (Meter, Box<dyn FnOnce() -> Result<()> + Send>);
