//! Every experiment's measured points as one kind of thing, for the
//! renderers that walk points across experiments (latency spectra, one
//! run's curves against another's). Each experiment's point type says its
//! configuration and sizes in its own fields; a [`PointView`] says them the
//! same way for all, typed, so that those renderers need no list of field
//! names and a field renamed in `result/` fails to compile there.

use crate::fio::job::{Completion, IoEngine, Rw};
use crate::measure::distribution::Spread;
use crate::options::{Arrival, DataDirection};
use crate::result::Point;
use crate::result::curve::CurvePoint;
use crate::result::flowgraph::FlowPoint;
use crate::result::load::{ClosedPoint, LoadPoint, OpenPoint};
use crate::result::mesh::PairsPoint;
use crate::result::saved::{AnyRun, StreamJob};
use crate::transport::{BufferMode, CompletionMode, Pattern};
use crate::units::Chunk;

/// The typed point a view stands for.
#[derive(Clone, Copy, Debug)]
pub enum Of<'a> {
    /// A round trip's cell.
    Roundtrip(&'a Point),
    /// A curve's message size.
    Curve(&'a CurvePoint),
    /// A closed-loop load cell.
    Closed(&'a ClosedPoint),
    /// An open-loop offered rate.
    Open(&'a OpenPoint),
    /// A stream job, or a `group_reporting` group.
    Job(&'a StreamJob),
    /// A flowgraph point.
    Flowgraph(&'a FlowPoint),
    /// `mesh --pairs`' message size.
    Pairs(&'a PairsPoint),
}

/// What tells a point apart from the run's other points besides its sizes:
/// two runs' points are the same point when these and their sizes agree.
/// Each field is the point's own field of that name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Config<'a> {
    /// A round trip's transport and how it ran.
    Roundtrip {
        /// The transport spec as given.
        spec: &'a str,
        /// The transport's name.
        transport: &'a str,
        /// Where the payload lives.
        buffers: BufferMode,
        /// Polling or blocking.
        completion: CompletionMode,
    },
    /// A curve: transport, exchange, packets, and which way a stream went.
    Curve {
        /// The transport spec as given.
        spec: &'a str,
        /// The transport's name.
        transport: &'a str,
        /// Pingpong, stream or bidir.
        mode: Pattern,
        /// The packetization strategy.
        chunk: Chunk,
        /// Messages per exchange.
        window: u32,
        /// Where the payload lives.
        buffers: BufferMode,
        /// Polling or blocking.
        completion: CompletionMode,
        /// Which way a stream went (none in pingpong and bidir).
        direction: Option<DataDirection>,
    },
    /// A closed-loop load series.
    Closed {
        /// The transport spec as given.
        spec: &'a str,
        /// The transport's name.
        transport: &'a str,
        /// Where the payload lives.
        buffers: BufferMode,
        /// Polling or blocking.
        completion: CompletionMode,
        /// Which way the data went.
        direction: DataDirection,
        /// The background load.
        load: &'a str,
        /// Requests in flight at once.
        inflight: u32,
    },
    /// An open-loop sweep, over offered rates at one size.
    Open {
        /// The transport spec as given.
        spec: &'a str,
        /// The transport's name.
        transport: &'a str,
        /// Where the payload lives.
        buffers: BufferMode,
        /// Polling or blocking.
        completion: CompletionMode,
        /// Which way the data went.
        direction: DataDirection,
        /// The background load.
        load: &'a str,
        /// How due times were spaced.
        arrival: Arrival,
        /// Data bytes per request.
        size_bytes: u64,
    },
    /// A stream job by name. Clones share it: their I/Os are one job's.
    Stream {
        /// The job's (or its group's first job's) name.
        jobname: &'a str,
        /// Its pattern, engine, depth and completion, when it is one job
        /// rather than a merged group.
        job: Option<(Rw, IoEngine, u32, Completion)>,
    },
    /// A flowgraph scheduler and its edges, on so many cores.
    Flowgraph {
        /// The scheduler.
        scheduler: &'a str,
        /// Its edges' kind.
        edges: &'a str,
        /// Cores it ran on (N).
        cores: usize,
    },
    /// Pairs streaming at once.
    Pairs {
        /// Messages in flight per pair.
        window: u32,
    },
}

/// Only the names are hashed (not every field's type hashes): equal
/// configurations hash equal, which is all a map of them needs.
impl std::hash::Hash for Config<'_> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        std::mem::discriminant(self).hash(h);
        match self {
            Config::Roundtrip { spec, .. }
            | Config::Curve { spec, .. }
            | Config::Closed { spec, .. }
            | Config::Open { spec, .. } => spec.hash(h),
            Config::Stream { jobname, .. } => jobname.hash(h),
            Config::Flowgraph { scheduler, .. } => scheduler.hash(h),
            Config::Pairs { window } => window.hash(h),
        }
    }
}

/// Where a point sits within its configuration. Two are the same point
/// when their sizes are the same numbers, bit for bit (an offered rate is
/// a float), so that they can key a map.
#[derive(Clone, Copy, Debug)]
pub enum Sizes {
    /// A round trip's request and reply.
    InOut {
        /// Request size, bytes.
        in_bytes: u64,
        /// Reply size, bytes.
        out_bytes: u64,
    },
    /// A message or transfer size.
    Message(u64),
    /// An open-loop point's offered rate, requests per second.
    Offered(f64),
    /// A stream job's block size.
    Block(u64),
    /// A flowgraph's saxpy blocks (M).
    Blocks(usize),
    /// None said (a merged stream group run at one block size).
    Unsaid,
}

impl PartialEq for Sizes {
    fn eq(&self, other: &Sizes) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Sizes {}

impl std::hash::Hash for Sizes {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.key().hash(h);
    }
}

impl Sizes {
    /// Which kind of sizes, and the sizes' bits.
    fn key(&self) -> (u8, [u64; 2]) {
        match *self {
            Sizes::InOut {
                in_bytes,
                out_bytes,
            } => (0, [in_bytes, out_bytes]),
            Sizes::Message(n) => (1, [n, 0]),
            Sizes::Offered(r) => (2, [r.to_bits(), 0]),
            Sizes::Block(n) => (3, [n, 0]),
            Sizes::Blocks(m) => (4, [m as u64, 0]),
            Sizes::Unsaid => (5, [0, 0]),
        }
    }

    /// Where a point sorts within its configuration.
    pub fn order(&self) -> Vec<f64> {
        match *self {
            Sizes::InOut {
                in_bytes,
                out_bytes,
            } => vec![in_bytes as f64, out_bytes as f64],
            Sizes::Message(n) | Sizes::Block(n) => vec![n as f64],
            Sizes::Offered(r) => vec![r],
            Sizes::Blocks(m) => vec![m as f64],
            Sizes::Unsaid => Vec::new(),
        }
    }
}

/// One measured point of a run, whatever its experiment. A stream job is a
/// point per direction (read, write, trim), each with its own figures.
#[derive(Clone, Copy, Debug)]
pub struct PointView<'a> {
    /// Which entry of the run it is (of `points`, or of a stream run's
    /// `jobs`).
    pub entry: usize,
    /// The point itself, for what only its experiment has.
    pub of: Of<'a>,
    /// A stream job's direction: `read`, `write` or `trim`.
    pub direction: Option<&'static str>,
    /// Its configuration.
    pub config: Config<'a>,
    /// Its sizes within the configuration.
    pub sizes: Sizes,
    /// Its samples' histogram (still encoded), and each repeat's and
    /// block's figures.
    pub spread: &'a Spread,
}

impl AnyRun {
    /// The run's points, in run order (a stream job's directions in
    /// [`StreamJob::dirs`]' order). A mesh gives none: its points are
    /// pairs of ranks, drawn as matrices rather than compared as points.
    pub fn views(&self) -> Vec<PointView<'_>> {
        let one = |entry, of, config, sizes, spread| PointView {
            entry,
            of,
            direction: None,
            config,
            sizes,
            spread,
        };
        match self {
            AnyRun::Roundtrip(r) => r
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| one(i, Of::Roundtrip(p), roundtrip(p), in_out(p), &p.spread))
                .collect(),
            AnyRun::Curve(r) => r
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let sizes = Sizes::Message(p.size_bytes);
                    one(i, Of::Curve(p), curve(p), sizes, &p.spread)
                })
                .collect(),
            AnyRun::Load(r) => r
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| match p {
                    LoadPoint::Closed(c) => {
                        let sizes = Sizes::Message(c.size_bytes);
                        one(i, Of::Closed(c), closed(c), sizes, &c.spread)
                    }
                    LoadPoint::Open(o) => {
                        let sizes = Sizes::Offered(o.offered_per_s);
                        one(i, Of::Open(o), open(o), sizes, &o.spread)
                    }
                })
                .collect(),
            AnyRun::Stream(r) => r
                .jobs
                .iter()
                .enumerate()
                .flat_map(|(i, j)| {
                    let sizes = j.block_size().map_or(Sizes::Unsaid, Sizes::Block);
                    j.dirs().map(|(dir, d)| PointView {
                        direction: Some(dir),
                        ..one(i, Of::Job(j), stream(j), sizes, &d.spread)
                    })
                })
                .collect(),
            AnyRun::Flowgraph(r) => r
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let config = Config::Flowgraph {
                        scheduler: p.scheduler,
                        edges: p.edges,
                        cores: p.cores,
                    };
                    one(
                        i,
                        Of::Flowgraph(p),
                        config,
                        Sizes::Blocks(p.blocks),
                        &p.spread,
                    )
                })
                .collect(),
            AnyRun::Pairs(r) => r
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let config = Config::Pairs { window: p.window };
                    let sizes = Sizes::Message(p.size_bytes);
                    one(i, Of::Pairs(p), config, sizes, &p.spread)
                })
                .collect(),
            AnyRun::Mesh(_) => Vec::new(),
        }
    }
}

fn roundtrip(p: &Point) -> Config<'_> {
    Config::Roundtrip {
        spec: &p.spec,
        transport: &p.transport,
        buffers: p.buffers,
        completion: p.completion,
    }
}

fn in_out(p: &Point) -> Sizes {
    Sizes::InOut {
        in_bytes: p.in_bytes,
        out_bytes: p.out_bytes,
    }
}

fn curve(p: &CurvePoint) -> Config<'_> {
    Config::Curve {
        spec: &p.spec,
        transport: &p.transport,
        mode: p.mode,
        chunk: p.chunk,
        window: p.window,
        buffers: p.buffers,
        completion: p.completion,
        direction: p.direction,
    }
}

fn closed(p: &ClosedPoint) -> Config<'_> {
    Config::Closed {
        spec: &p.spec,
        transport: &p.transport,
        buffers: p.buffers,
        completion: p.completion,
        direction: p.direction,
        load: &p.load,
        inflight: p.inflight,
    }
}

fn open(p: &OpenPoint) -> Config<'_> {
    Config::Open {
        spec: &p.spec,
        transport: &p.transport,
        buffers: p.buffers,
        completion: p.completion,
        direction: p.direction,
        load: &p.load,
        arrival: p.arrival,
        size_bytes: p.size_bytes,
    }
}

fn stream(j: &StreamJob) -> Config<'_> {
    Config::Stream {
        jobname: j.jobname(),
        job: j.job().map(|x| (x.rw, x.ioengine, x.iodepth, x.completion)),
    }
}

#[cfg(test)]
mod tests {
    use crate::result::saved::sketch;
    use serde_json::json;

    #[test]
    fn a_stream_job_is_a_point_per_direction_and_clones_share_a_config() {
        let job =
            |clone: u64| json!({"jobname": "j", "rw": "readwrite", "bs": 4096, "clone": clone});
        let r = sketch(
            "s",
            json!({"experiment": "stream", "jobs": [job(0), job(1)]}),
        )
        .unwrap();
        let v = r.run.views();
        let dirs: Vec<(usize, Option<&str>)> = v.iter().map(|p| (p.entry, p.direction)).collect();
        assert_eq!(
            dirs,
            [
                (0, Some("read")),
                (0, Some("write")),
                (0, Some("trim")),
                (1, Some("read")),
                (1, Some("write")),
                (1, Some("trim"))
            ]
        );
        assert_eq!(v[0].config, v[3].config);
        assert_eq!(v[0].sizes, super::Sizes::Block(4096));
    }

    #[test]
    fn an_open_loop_point_is_placed_by_its_rate_and_configured_by_its_size() {
        let latency = serde_json::to_value(crate::result::Summary::default()).unwrap();
        let at = |size: u64| {
            json!({"offered_per_s": 1000.0, "achieved_per_s": 990.0, "size_bytes": size,
                   "latency": latency})
        };
        let r = sketch(
            "l",
            json!({"experiment": "load", "points": [at(64), at(128)]}),
        )
        .unwrap();
        let v = r.run.views();
        assert_eq!(v[0].sizes, super::Sizes::Offered(1000.0));
        assert_ne!(v[0].config, v[1].config);
    }
}
