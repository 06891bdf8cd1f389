//! The result of one experiment: the canonical, lossless form every report is
//! rendered from, and what `--format json` prints.

pub mod curve;
pub mod flowgraph;
pub mod limit;
pub mod limits;
pub mod load;
pub mod mesh;
pub mod points;
pub mod saved;
pub mod stream;

pub use crate::measure::distribution::{Figures, Spread};
pub use crate::measure::env::{Env, Gpu};
pub use crate::measure::placement::Placement;
pub use crate::measure::stats::Summary;
use crate::transport::{BufferMode, CompletionMode};
use serde::{Deserialize, Serialize};

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

/// A point that can be measured more than once and merged.
pub trait Repeatable: Sized {
    /// What names the same point in every repeat (transport, modes, sizes).
    fn identity(&self) -> String;
    /// This measurement's headline figures, as one repeat of the point.
    fn figures(&self) -> Figures;
    /// One point from the K measurements of it, in run order (at least
    /// one): samples pooled, every repeat's figures kept.
    fn merge(reps: Vec<Self>) -> Self;
}

/// An experiment that adds nothing at the top level.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NoExtra {}

/// What `roundtrip` adds beside its points: the cells it left out.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RoundtripExtra {
    /// Cells of the matrix the transport or device cannot carry (a request
    /// over an mmio window, a reply over the device's limit, a shape its
    /// configure refuses), each with the reason; the rest are measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedCell>,
}

impl SkippedCell {
    /// The cell and why, in one line.
    pub fn label(&self) -> String {
        format!(
            "{} {}/{} in {} out {}: {}",
            self.spec,
            self.buffers.name(),
            self.completion.name(),
            self.in_bytes,
            self.out_bytes,
            self.reason
        )
    }
}

/// One cell of a round-trip matrix left out, and why.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SkippedCell {
    /// The transport spec that could not carry it.
    pub spec: String,
    /// Where the payload lives.
    pub buffers: BufferMode,
    /// How each end waits for a message.
    pub completion: CompletionMode,
    /// Request size, bytes.
    pub in_bytes: u64,
    /// Reply size, bytes.
    pub out_bytes: u64,
    /// Why, in words (the limit it is over, or the device's refusal).
    pub reason: String,
}

/// One run of an experiment: its environment, options, placement and
/// points (`P`), with what the experiment adds beside them (`X`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Run<P = Point, X = RoundtripExtra> {
    /// Which experiment: "roundtrip", "curve", "load", "flowgraph" or "stream".
    #[serde(deserialize_with = "crate::words::de_interned")]
    pub experiment: crate::words::Interned,
    /// False when the run was interrupted or failed part-way: `points` holds
    /// the points that finished, and the one under way if it had samples
    /// (marked `partial`).
    pub complete: bool,
    /// Why the run is incomplete, if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<serde_json::Value>,
    /// The ceiling of each path the run crossed (a PCIe link, a NIC,
    /// memory) and its figures' share of it; empty when no path's limit is
    /// known, and in runs written before limits were recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<limit::PathLimit>,
}

/// One measured configuration: a transport, its modes, and one size pair.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
    /// Where the round trips went, when the device reports its own time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_time: Option<DeviceTime>,
    /// The samples' histogram, and each repeat's and block's figures.
    #[serde(flatten)]
    pub spread: Spread,
}

/// A point's latency budget, when the device reports its own time for each
/// job (a plugin with `XB_CAP_HW_TIMESTAMPS`): the device's time, and the
/// host's share — each round trip minus the device's time for it (host
/// software, driver, runtime, bus) — over the same samples.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeviceTime {
    /// The device's own time per round trip, ns.
    pub device: Summary,
    /// The round trip minus the device's time, ns.
    pub host: Summary,
    /// Round trips whose device time was longer than the whole round trip
    /// (the device's figure is not a duration: flagged in the warnings).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub over_round_trip: u64,
    /// The largest such device time, ns.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub over_max_ns: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Repeatable for Point {
    fn identity(&self) -> String {
        self.label()
    }
    fn figures(&self) -> Figures {
        let mut f = crate::measure::distribution::latency_figures(&self.summary);
        f.insert("timed_s", self.timed_s);
        f
    }
    fn merge(reps: Vec<Point>) -> Point {
        let figures: Vec<Figures> = reps.iter().map(Repeatable::figures).collect();
        let summaries: Vec<Summary> = reps.iter().map(|p| p.summary.clone()).collect();
        let warnings = merged_warnings(reps.iter().map(|p| &p.warnings), &figures, "p50_ns");
        let half_p50_ns = [reps[0].half_p50_ns[0], reps[reps.len() - 1].half_p50_ns[1]];
        let (warmup, timed_s) = (
            reps.iter().map(|p| p.warmup).sum(),
            reps.iter().map(|p| p.timed_s).sum(),
        );
        let partial = reps.iter().any(|p| p.partial);
        let spread = Spread::of_repeats(reps.iter().map(|p| p.spread.clone()).collect(), figures);
        let summary = pooled(&summaries, &spread);
        let first = reps.into_iter().next().expect("at least one repeat");
        Point {
            warmup,
            timed_s,
            partial,
            summary,
            half_p50_ns,
            warnings,
            spread,
            ..first
        }
    }
}

/// The summary of every repeat's samples together.
pub fn pooled(parts: &[Summary], spread: &Spread) -> Summary {
    let hist = spread
        .histogram
        .as_ref()
        .and_then(|d| crate::measure::distribution::Distribution::decode(d.as_str()).ok());
    crate::measure::distribution::combine(parts, hist.as_ref())
}

/// Every repeat's warnings once, and one more when the repeats' `key`
/// figures spread over more than 10%: the run-to-run noise a single run
/// cannot show.
pub fn merged_warnings<'a>(
    lists: impl Iterator<Item = &'a Vec<String>>,
    figures: &[Figures],
    key: &str,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in lists.flatten() {
        if !out.contains(w) {
            out.push(w.clone());
        }
    }
    let v: Vec<f64> = figures.iter().filter_map(|f| f.get(key).copied()).collect();
    let (lo, hi) = v
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
    if v.len() > 1 && lo > 0.0 && hi / lo > 1.10 {
        out.push(format!(
            "{key} varies by {:.0}% between repeats ({} to {}): run-to-run noise",
            (hi / lo - 1.0) * 100.0,
            figure(key, lo),
            figure(key, hi)
        ));
    }
    out
}

/// A figure for a warning line: times in µs, the rest to 3 digits.
fn figure(key: &str, v: f64) -> String {
    if key.ends_with("_ns") {
        format!("{} µs", crate::units::format_us(v))
    } else {
        format!("{v:.3}")
    }
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

impl<P, X> Run<P, X> {
    /// How many times the whole sweep ran (`--repeat`), as recorded; 1 for
    /// a record without it.
    pub fn repeats(&self) -> u64 {
        self.options["repeat"].as_u64().unwrap_or(1)
    }

    /// Marks the run stopped early by `why`: incomplete, the reason kept,
    /// its end time taken.
    pub fn stop(&mut self, why: &crate::error::Error) {
        self.complete = false;
        self.stopped_by = Some(why.to_string());
        self.env.ended();
        stop_devices(&mut self.devices, why);
    }
}

/// The `state` of a device record between its open and its close.
pub const DEVICE_OPEN: &str = "open";

/// The devices still open when a run stopped: each is said to have been in
/// use, and a failure that names its plugin ("plugin NAME: ...", a call
/// that never returned) is recorded on it as its `error`, where the
/// reader of `devices[]` looks, not only in the run's `stopped_by`.
pub fn stop_devices(devices: &mut [serde_json::Value], why: &crate::error::Error) {
    let text = why.to_string();
    let named = |d: &serde_json::Value| {
        d["plugin"]
            .as_str()
            .is_some_and(|n| text.starts_with(&format!("plugin {n}: ")))
    };
    for d in devices.iter_mut() {
        if d["state"].as_str() != Some(DEVICE_OPEN) {
            continue;
        }
        d["state"] = "in use when the run stopped".into();
        if named(d) && d.get("error").is_none() {
            d["error"] = text.clone().into();
        }
    }
}

/// What a round-trip run's tables show: the statistics and the unit of the
/// sizes it was asked for. Read here, where results are read (a run just
/// measured and one read back from its JSON alike), so the renderers take
/// them typed.
#[derive(Clone, Debug, PartialEq)]
pub struct Shown {
    /// The statistics, in the order asked for.
    pub stats: Vec<crate::measure::stats::Stat>,
    /// What the sizes count.
    pub unit: crate::units::Unit,
}

impl Run {
    /// The run's [`Shown`], from its recorded `stats` and `unit`; the
    /// config's defaults where a record lacks them (an older file).
    pub fn shown(&self) -> Shown {
        let stats = self.options["stats"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str()?.parse().ok())
                    .collect::<Vec<_>>()
            })
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| crate::options::Common::default().stats);
        let unit = self.options["unit"]
            .as_str()
            .and_then(|u| u.parse().ok())
            .unwrap_or(crate::options::RoundtripConfig::default().unit);
        Shown { stats, unit }
    }

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
