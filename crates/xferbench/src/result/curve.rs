//! Curve results: one point per size and packetization, the fits, the packet rule.

use crate::measure::distribution::latency_figures;
pub use crate::measure::fit::{Fit, TwoSegment};
use crate::measure::stats::Summary;
use crate::options::{DataDirection, PayloadMode};
use crate::result::{Figures, PointMeta, Repeatable, Run, Spread, merged_warnings, pooled};
use crate::transport::{self, BufferMode, Pattern};
use crate::units::Chunk;
use serde::{Deserialize, Serialize};

/// One size on one curve.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CurvePoint {
    /// The transport's name (`tcp`, `shm`, `cuda`…).
    pub transport: String,
    /// The transport spec as given, options included (for `cuda`, the
    /// curve's own direction, host memory and engine).
    pub spec: String,
    /// Where the payload lives; in the `cuda` sweep, pageable host memory
    /// is `user` and pinned is `raw`.
    pub buffers: BufferMode,
    /// How each end waits for a message: polling or blocking.
    pub completion: transport::CompletionMode,
    /// The exchange: pingpong, stream (a window one way, then an
    /// acknowledgement) or bidir (windows both ways at once).
    pub mode: Pattern,
    /// Messages per exchange (1 in pingpong).
    pub window: u32,
    /// In stream mode, which way the messages went: `write` (initiator to
    /// responder, host to device) or `read` (responder to initiator, device
    /// to host, each a reply to a tiny request); absent in pingpong and
    /// bidir, and for cuda (its spec's `dir=` says).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::words::de_opt_word"
    )]
    pub direction: Option<DataDirection>,
    /// The packetization strategy this curve uses, and the packet size it
    /// gave this message (the message length when whole).
    pub chunk: Chunk,
    /// The packet size this message went in, bytes (its length when whole).
    pub packet_bytes: u64,
    /// Whether messages were filled and checked inside the timed span.
    #[serde(deserialize_with = "crate::words::de_word")]
    pub payload: PayloadMode,
    /// Message size, bytes.
    pub size_bytes: u64,
    /// Exchanges run before timing and not recorded (`cuda`: untimed trials).
    pub warmup: u64,
    /// Time spent in the timed loop, seconds.
    pub timed_s: f64,
    /// The run was stopped while this point was measured: it holds fewer
    /// samples than asked for.
    pub partial: bool,
    /// Raw times of one exchange (a round trip, or a whole window), ns.
    pub exchange: Summary,
    /// One message's one-way time, ns: half a round trip in pingpong, an
    /// exchange over the window in stream and bidir. `p50_ns` is the median.
    pub oneway: Summary,
    /// Decimal MB/s (10^6 bytes/s) from the median one-way time; in bidir the
    /// sum of both directions.
    #[serde(rename = "bandwidth_MBps")]
    pub bandwidth_mbps: f64,
    /// Caveats on this point's figures.
    pub warnings: Vec<String>,
    /// Where the round trips went (pingpong), when the device reports its
    /// own time: device time and the host's share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_time: Option<crate::result::DeviceTime>,
    /// The exchange times' histogram (ns), and each repeat's and block's
    /// one-way figures and `bandwidth_MBps`.
    #[serde(flatten)]
    pub spread: Spread,
}

impl Repeatable for CurvePoint {
    fn identity(&self) -> String {
        format!("{} {}", self.label(), self.completion.name())
    }
    fn figures(&self) -> Figures {
        let mut f = latency_figures(&self.oneway);
        f.insert("bandwidth_MBps", self.bandwidth_mbps);
        f.insert("timed_s", self.timed_s);
        f
    }
    /// The exchanges of every repeat pooled; one-way times divide them as
    /// each repeat's did, and bandwidth keeps each repeat's bytes per
    /// median exchange time.
    fn merge(reps: Vec<CurvePoint>) -> CurvePoint {
        let figures: Vec<Figures> = reps.iter().map(Repeatable::figures).collect();
        let warnings = merged_warnings(reps.iter().map(|p| &p.warnings), &figures, "p50_ns");
        let exchanges: Vec<Summary> = reps.iter().map(|p| p.exchange.clone()).collect();
        let spread = Spread::of_repeats(reps.iter().map(|p| p.spread.clone()).collect(), figures);
        let exchange = pooled(&exchanges, &spread);
        let first = &reps[0];
        let by = if first.oneway.mean_ns > 0.0 {
            first.exchange.mean_ns / first.oneway.mean_ns
        } else {
            1.0
        };
        // bandwidth × median exchange time: the bytes one exchange carries
        // (× 1e3), the same in every repeat.
        let mut carried: Vec<f64> = reps
            .iter()
            .map(|p| p.bandwidth_mbps * p.exchange.p50_ns as f64)
            .collect();
        carried.sort_by(f64::total_cmp);
        let bandwidth_mbps = if exchange.p50_ns > 0 {
            carried[carried.len() / 2] / exchange.p50_ns as f64
        } else {
            0.0
        };
        let (warmup, timed_s, partial) = (
            reps.iter().map(|p| p.warmup).sum(),
            reps.iter().map(|p| p.timed_s).sum(),
            reps.iter().any(|p| p.partial),
        );
        let first = reps.into_iter().next().expect("at least one repeat");
        CurvePoint {
            warmup,
            timed_s,
            partial,
            oneway: crate::measure::stats::per_message(&exchange, by),
            exchange,
            bandwidth_mbps,
            warnings,
            spread,
            ..first
        }
    }
}

impl PointMeta for CurvePoint {
    fn count(&self) -> u64 {
        self.exchange.count
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
            "{} {} {}",
            curve_label(&self.spec, self.mode, self.chunk, self.direction),
            self.buffers.name(),
            self.size_bytes
        )
    }
}

/// Names one curve in tables and warnings (a stream the responder sends,
/// device to host, is a "stream read").
pub fn curve_label(
    spec: &str,
    mode: Pattern,
    chunk: Chunk,
    direction: Option<DataDirection>,
) -> String {
    let way = match direction {
        Some(DataDirection::Read) => " read",
        _ => "",
    };
    match chunk {
        Chunk::Whole => format!("{spec} {}{way}", mode.name()),
        c => format!("{spec} {}{way} chunk {}", mode.name(), c.name()),
    }
}

/// A size a transport could not carry, and why.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Skipped {
    /// The transport spec that could not carry it.
    pub spec: String,
    /// The curve it belongs to: spec, mode and packet strategy.
    pub curve: String,
    /// The message size left out, bytes.
    pub size_bytes: u64,
    /// Why, in words (e.g. the transport's message limit).
    pub reason: String,
}

impl Skipped {
    /// The size, its curve and why, in one line (the `Skipped:` list's).
    pub fn label(&self) -> String {
        format!("{} {} B: {}", self.curve, self.size_bytes, self.reason)
    }
}

/// The adaptive packet rule derived for one transport configuration.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChunkRule {
    /// The transport spec it was calibrated on.
    pub spec: String,
    /// The buffer mode it was calibrated with.
    pub buffers: BufferMode,
    /// Cost of one packet: the one-way time of a small message, ns.
    pub packet_cost_ns: f64,
    /// Bandwidth of a large unpacketized message, decimal MB/s (10^6 bytes/s):
    /// from the slope between a 64 B and a 1 MiB message (or the largest size).
    #[serde(rename = "bandwidth_MBps")]
    pub bandwidth_mbps: f64,
    /// Smallest packet the rule gives, bytes: 1 KiB, or the transport's
    /// message limit when that is smaller.
    pub min_packet_bytes: u64,
    /// The largest power of two a datagram can carry, on a transport with a
    /// message limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_packet_bytes: Option<u64>,
    /// The rule in words, with the calibrated figures, as tables print it.
    pub rule: String,
}

impl ChunkRule {
    /// Pipelining n bytes in packets of c costs about (n/c)·o + n/r + c/r
    /// (per-packet cost o, bandwidth r): least at c = √(n·o·r). Rounded down
    /// to a power of two, never below the minimum or above n.
    pub fn packet(&self, n: u64) -> u64 {
        let r = self.bandwidth_mbps * 1e-3; // bytes per ns
        let c = ((n as f64) * self.packet_cost_ns * r).sqrt().max(1.0) as u64;
        let c = if c.is_power_of_two() {
            c
        } else {
            c.next_power_of_two() / 2
        };
        c.min(self.max_packet_bytes.unwrap_or(u64::MAX))
            .max(self.min_packet_bytes)
            .min(n.max(1))
    }
}

/// The fits of one curve.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CurveFit {
    /// The curve's transport spec.
    pub spec: String,
    /// The curve's buffer mode.
    pub buffers: BufferMode,
    /// The curve's completion mode.
    pub completion: transport::CompletionMode,
    /// The curve's exchange pattern.
    pub mode: Pattern,
    /// In stream mode, which way the data went.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::words::de_opt_word"
    )]
    pub direction: Option<DataDirection>,
    /// The curve's packetization strategy.
    pub chunk: Chunk,
    /// Hockney's model over the median one-way times; null with fewer than
    /// two usable sizes or when time does not grow with size.
    pub fit: Option<Fit>,
    /// Two segments split at `--breakpoint`; null with `none`, or when no
    /// split fits (with `auto`: none cuts the residual to a quarter).
    pub two_segment: Option<TwoSegment>,
}

/// What a curve run adds beside its points.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CurveExtra {
    /// The first curve's single-segment fit (the common one-curve case).
    pub fit: Option<Fit>,
    /// Every curve's fits, in run order.
    #[serde(default)]
    pub fits: Vec<CurveFit>,
    /// The adaptive packet rule of each configuration calibrated for
    /// `--chunk adaptive`; omitted when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunk_rules: Vec<ChunkRule>,
    /// Sizes a transport could not carry, left out of their curves.
    #[serde(default)]
    pub skipped: Vec<Skipped>,
}

/// The result of `xferbench curve`.
pub type CurveRun = Run<CurvePoint, CurveExtra>;
