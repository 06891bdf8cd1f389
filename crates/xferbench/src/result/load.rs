//! Load results: closed-loop cells (rate under each background load) and open-loop points (latency at an offered rate).

use crate::measure::distribution::latency_figures;
pub use crate::measure::loadgen::LoadStats;
use crate::measure::stats::Summary;
use crate::options::{Arrival, DataDirection};
use crate::result::{Figures, PointMeta, Repeatable, Run, Spread, merged_warnings, pooled};
use crate::transport::{BufferMode, CompletionMode};
use crate::words::Word;
use serde::{Deserialize, Serialize};

/// Bytes of the short half of each exchange (the command or the status).
pub const HEADER_BYTES: u64 = 16;

/// One cell of the closed-loop table.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClosedPoint {
    /// The transport's name (`tcp`, `shm`…).
    pub transport: String,
    /// The transport spec as given, options included.
    #[serde(default)]
    pub spec: String,
    /// Where the payload lives.
    #[serde(default = "unsaid_buffers")]
    pub buffers: BufferMode,
    /// How each end waits for a message: polling or blocking.
    #[serde(default = "unsaid_completion")]
    pub completion: CompletionMode,
    /// Which way the data goes: `read` (responder sends it) or `write`.
    #[serde(deserialize_with = "crate::words::de_word")]
    pub direction: DataDirection,
    /// Data bytes per request; the other half of the exchange is
    /// [`HEADER_BYTES`].
    pub size_bytes: u64,
    /// The background load's word (`idle`, `alu`…), or `cmd: ` and the command.
    pub load: String,
    /// Requests in flight at once: one link, and one thread, each.
    #[serde(default)]
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
    #[serde(default, deserialize_with = "crate::words::de_interned")]
    pub load_unit: crate::words::Interned,
    /// Requests completed in the timed span, over all links (warm-up excluded).
    #[serde(default)]
    pub requests: u64,
    /// The timed span, seconds: the longest of the links'.
    #[serde(default)]
    pub seconds: f64,
    /// Round-trip time of the requests, ns.
    #[serde(default)]
    pub latency: Summary,
    /// Where the round trips went, when the device reports its own time:
    /// device time and the host's share, over every client's requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_time: Option<crate::result::DeviceTime>,
    /// The run was stopped while this cell was measured.
    #[serde(default)]
    pub partial: bool,
    /// Caveats on this cell's figures.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The round-trip times' histogram; each tenth of the cell's timed
    /// span as a block (`req_per_s` and the latency figures), and each
    /// repeat's figures.
    #[serde(flatten)]
    pub spread: Spread,
}

/// One offered rate in the open loop.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OpenPoint {
    /// The transport's name (`tcp`, `shm`…).
    #[serde(default)]
    pub transport: String,
    /// The transport spec as given, options included.
    #[serde(default)]
    pub spec: String,
    /// Where the payload lives.
    #[serde(default = "unsaid_buffers")]
    pub buffers: BufferMode,
    /// How each end waits for a message: polling or blocking.
    #[serde(default = "unsaid_completion")]
    pub completion: CompletionMode,
    /// Which way the data goes: `read` (responder sends it) or `write`.
    #[serde(
        default = "unsaid_direction",
        deserialize_with = "crate::words::de_word"
    )]
    pub direction: DataDirection,
    /// Data bytes per request; the other half of the exchange is
    /// [`HEADER_BYTES`].
    #[serde(default)]
    pub size_bytes: u64,
    /// The background load's word (`idle`, `alu`…).
    #[serde(default)]
    pub load: String,
    /// How due times are spaced: fixed or Poisson.
    #[serde(default = "unsaid_arrival", deserialize_with = "crate::words::de_word")]
    pub arrival: Arrival,
    /// The rate requests were due at, per second.
    pub offered_per_s: f64,
    /// Requests completed per second of the cell.
    pub achieved_per_s: f64,
    /// Requests due within the cell, sent, and not sent by its end.
    #[serde(default)]
    pub due: u64,
    /// Requests sent and answered within the cell.
    #[serde(default)]
    pub completed: u64,
    /// Requests due within the cell but never sent: `due` − `completed`.
    #[serde(default)]
    pub missed: u64,
    /// Sent more than 10 µs after they were due.
    #[serde(default)]
    pub late: u64,
    /// The cell's length as measured, seconds (at most `--cell-time`).
    #[serde(default)]
    pub seconds: f64,
    /// From each request's due time to its reply, ns.
    pub latency: Summary,
    /// The run was stopped while this rate was measured.
    #[serde(default)]
    pub partial: bool,
    /// Caveats on this point's figures (requests never sent).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The latencies' histogram; each tenth of the cell, by when its
    /// replies came, as a block (`achieved_per_s` and the latency
    /// figures), and each repeat's figures.
    #[serde(flatten)]
    pub spread: Spread,
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

/// An open-loop point is the one with an offered rate: told apart by that
/// field rather than by trying each kind, so that a closed cell missing a
/// field is refused as one, not read as an open point.
impl<'de> Deserialize<'de> for LoadPoint {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let r = if v.get("offered_per_s").is_some() {
            serde_json::from_value(v).map(LoadPoint::Open)
        } else {
            serde_json::from_value(v).map(LoadPoint::Closed)
        };
        r.map_err(serde::de::Error::custom)
    }
}

// What a point read back from a file that leaves its configuration out is
// taken to have had. Every run writes these fields, and a non-empty `spec`
// with them, so a reader tells such a point by its empty `spec` and shows
// its configuration as unknown.
fn unsaid_buffers() -> BufferMode {
    BufferMode::User
}
fn unsaid_completion() -> CompletionMode {
    CompletionMode::Poll
}
fn unsaid_direction() -> DataDirection {
    DataDirection::Read
}
fn unsaid_arrival() -> Arrival {
    Arrival::Fixed
}

/// The warning of an open-loop point whose path fell behind the offered
/// rate: `missed` of `due` requests were never sent.
pub fn missed_warning(missed: u64, due: u64) -> String {
    format!(
        "{missed} of {due} requests due were never sent: the path is slower than the offered rate, so latency grows with the run's length"
    )
}

impl ClosedPoint {
    /// The figures a repeat keeps: the rates and the round-trip times.
    pub fn figures(&self) -> Figures {
        let mut f = latency_figures(&self.latency);
        f.insert("req_per_s", self.req_per_s);
        f.insert("kb_per_s", self.kb_per_s);
        f
    }

    /// One cell from its repeats: requests and seconds summed and the rates
    /// recomputed from them (the rate of every request over all the timed
    /// time, as one longer cell would give), the round-trip times pooled.
    /// The load's own rate is the mean of the repeats'.
    fn merge(reps: Vec<ClosedPoint>) -> ClosedPoint {
        let figures: Vec<Figures> = reps.iter().map(ClosedPoint::figures).collect();
        let warnings = merged_warnings(reps.iter().map(|p| &p.warnings), &figures, "req_per_s");
        let summaries: Vec<Summary> = reps.iter().map(|p| p.latency.clone()).collect();
        let requests: u64 = reps.iter().map(|p| p.requests).sum();
        let seconds: f64 = reps.iter().map(|p| p.seconds).sum();
        let rates: Vec<f64> = reps.iter().filter_map(|p| p.load_ops_per_s).collect();
        let load_ops_per_s =
            (!rates.is_empty()).then(|| rates.iter().sum::<f64>() / rates.len() as f64);
        let load_unit = reps
            .iter()
            .map(|p| p.load_unit)
            .find(|u| !u.is_empty())
            .unwrap_or("");
        let partial = reps.iter().any(|p| p.partial);
        let spread = Spread::of_repeats(reps.iter().map(|p| p.spread.clone()).collect(), figures);
        let latency = pooled(&summaries, &spread);
        let first = reps.into_iter().next().expect("at least one repeat");
        let req_per_s = if seconds > 0.0 {
            requests as f64 / seconds
        } else {
            0.0
        };
        ClosedPoint {
            req_per_s,
            kb_per_s: req_per_s * first.size_bytes as f64 / 1024.0,
            load_ops_per_s,
            load_unit,
            requests,
            seconds,
            latency,
            partial,
            warnings,
            spread,
            ..first
        }
    }
}

impl OpenPoint {
    /// The figures a repeat keeps: the achieved rate and the latencies.
    pub fn figures(&self) -> Figures {
        let mut f = latency_figures(&self.latency);
        f.insert("achieved_per_s", self.achieved_per_s);
        f
    }

    /// One offered rate from its repeats: counts summed, the achieved rate
    /// recomputed as every completion over every repeat's elapsed time, the
    /// latencies pooled, and one "never sent" warning for the totals.
    fn merge(reps: Vec<OpenPoint>) -> OpenPoint {
        let figures: Vec<Figures> = reps.iter().map(OpenPoint::figures).collect();
        let sum = |f: fn(&OpenPoint) -> u64| reps.iter().map(f).sum::<u64>();
        let (due, completed, missed, late) = (
            sum(|p| p.due),
            sum(|p| p.completed),
            sum(|p| p.missed),
            sum(|p| p.late),
        );
        // A repeat's rate is over its elapsed time, which `seconds` caps at
        // the cell's length: recovered from the rate where it can be.
        let elapsed: f64 = reps
            .iter()
            .map(|p| {
                if p.achieved_per_s > 0.0 {
                    p.completed as f64 / p.achieved_per_s
                } else {
                    p.seconds
                }
            })
            .sum();
        let own: Vec<Vec<String>> = reps
            .iter()
            .map(|p| {
                p.warnings
                    .iter()
                    .filter(|w| *w != &missed_warning(p.missed, p.due))
                    .cloned()
                    .collect()
            })
            .collect();
        let mut warnings = Vec::new();
        if missed > 0 {
            warnings.push(missed_warning(missed, due));
        }
        warnings.extend(merged_warnings(own.iter(), &figures, "achieved_per_s"));
        let summaries: Vec<Summary> = reps.iter().map(|p| p.latency.clone()).collect();
        let seconds = reps.iter().map(|p| p.seconds).sum();
        let partial = reps.iter().any(|p| p.partial);
        let spread = Spread::of_repeats(reps.iter().map(|p| p.spread.clone()).collect(), figures);
        let latency = pooled(&summaries, &spread);
        let first = reps.into_iter().next().expect("at least one repeat");
        OpenPoint {
            achieved_per_s: if elapsed > 0.0 {
                completed as f64 / elapsed
            } else {
                0.0
            },
            due,
            completed,
            missed,
            late,
            seconds,
            latency,
            partial,
            warnings,
            spread,
            ..first
        }
    }
}

impl Repeatable for LoadPoint {
    /// The cell's parameters: loop, transport spec and modes, direction,
    /// size, and the load and requests in flight (closed) or the offered
    /// rate and arrival (open).
    fn identity(&self) -> String {
        match self {
            LoadPoint::Closed(p) => format!(
                "closed {} {}/{} {} {} B under {} inflight {}",
                p.spec,
                p.buffers.name(),
                p.completion.name(),
                dir_name(p.direction),
                p.size_bytes,
                p.load,
                p.inflight
            ),
            LoadPoint::Open(p) => format!(
                "open {} {}/{} {} {} B at {}/s {} under {}",
                p.spec,
                p.buffers.name(),
                p.completion.name(),
                dir_name(p.direction),
                p.size_bytes,
                p.offered_per_s,
                p.arrival.word(),
                p.load
            ),
        }
    }
    fn figures(&self) -> Figures {
        match self {
            LoadPoint::Closed(p) => p.figures(),
            LoadPoint::Open(p) => p.figures(),
        }
    }
    fn merge(reps: Vec<LoadPoint>) -> LoadPoint {
        // Points of one identity are all of one loop (it names the loop).
        if matches!(reps.first(), Some(LoadPoint::Open(_))) {
            LoadPoint::Open(OpenPoint::merge(
                reps.into_iter()
                    .filter_map(|p| match p {
                        LoadPoint::Open(p) => Some(p),
                        LoadPoint::Closed(_) => None,
                    })
                    .collect(),
            ))
        } else {
            LoadPoint::Closed(ClosedPoint::merge(
                reps.into_iter()
                    .filter_map(|p| match p {
                        LoadPoint::Closed(p) => Some(p),
                        LoadPoint::Open(_) => None,
                    })
                    .collect(),
            ))
        }
    }
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
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LoadExtra {
    /// What each background load did, in the order they ran (closed loop:
    /// one per direction and load; open loop: one per configuration).
    #[serde(default)]
    pub loads: Vec<LoadStats>,
    /// CPUs the built-in loads ran on: `--load-cpus`, or the allowed CPUs
    /// the initiator and responder do not use (all of them when none is spare).
    #[serde(default)]
    pub load_cpus: Vec<usize>,
    /// Cells the transport or device cannot carry (a size over its limit,
    /// a mode it lacks, a shape its configure refuses), each with the
    /// reason; the rest are measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedLoad>,
}

/// One size of a load run left out, and why.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SkippedLoad {
    /// The transport spec that could not carry it.
    pub spec: String,
    /// Where the payload lives.
    pub buffers: BufferMode,
    /// How each end waits for a message.
    pub completion: CompletionMode,
    /// Which way the data goes.
    #[serde(deserialize_with = "crate::words::de_word")]
    pub direction: DataDirection,
    /// The data bytes per request left out.
    pub size_bytes: u64,
    /// Why, in words.
    pub reason: String,
}

impl SkippedLoad {
    /// The cell and why, in one line (the `Skipped:` list's).
    pub fn label(&self) -> String {
        format!(
            "{} {}/{} {} {} B: {}",
            self.spec,
            self.buffers.name(),
            self.completion.name(),
            dir_name(self.direction),
            self.size_bytes,
            self.reason
        )
    }
}

/// The result of `xferbench load`.
pub type LoadRun = Run<LoadPoint, LoadExtra>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::distribution::Distribution;
    use crate::measure::stats::Recorder;

    fn rec(from: u64, n: u64) -> Recorder {
        let mut r = Recorder::new();
        for i in 0..n {
            r.record(from + i % 100);
        }
        r
    }

    fn spread(r: &Recorder, blocks: usize) -> Spread {
        Spread {
            histogram: Some(Distribution::of(r)),
            repeats: Vec::new(),
            blocks: (0..blocks)
                .map(|_| Figures::from([("req_per_s", 1.0)]))
                .collect(),
        }
    }

    fn closed(requests: u64, seconds: f64, buffers: BufferMode) -> LoadPoint {
        let r = rec(10_000, requests);
        let rps = requests as f64 / seconds;
        LoadPoint::Closed(ClosedPoint {
            transport: "pipe".into(),
            spec: "pipe".into(),
            buffers,
            completion: CompletionMode::Block,
            direction: DataDirection::Write,
            size_bytes: 2048,
            load: "alu".into(),
            inflight: 1,
            req_per_s: rps,
            kb_per_s: rps * 2.0,
            load_ops_per_s: Some(requests as f64),
            load_unit: "adds",
            requests,
            seconds,
            latency: r.summary(),
            device_time: None,
            partial: false,
            warnings: vec!["same".into()],
            spread: spread(&r, 10),
        })
    }

    fn open(completed: u64, due: u64, achieved: f64) -> LoadPoint {
        let r = rec(50_000, completed);
        LoadPoint::Open(OpenPoint {
            transport: "pipe".into(),
            spec: "pipe".into(),
            buffers: BufferMode::User,
            completion: CompletionMode::Block,
            direction: DataDirection::Read,
            size_bytes: 64,
            load: "idle".into(),
            arrival: Arrival::Fixed,
            offered_per_s: 1000.0,
            achieved_per_s: achieved,
            due,
            completed,
            missed: due - completed,
            late: 1,
            seconds: 0.5,
            latency: r.summary(),
            partial: false,
            warnings: if due > completed {
                vec![missed_warning(due - completed, due)]
            } else {
                Vec::new()
            },
            spread: spread(&r, 10),
        })
    }

    #[test]
    fn closed_repeats_sum_their_counts_and_recompute_the_rates() {
        let reps = vec![
            closed(100, 1.0, BufferMode::User),
            closed(300, 1.0, BufferMode::User),
        ];
        let id = reps[0].identity();
        assert_eq!(id, reps[1].identity());
        let m = LoadPoint::merge(reps);
        assert_eq!(m.identity(), id, "identity survives the merge");
        let LoadPoint::Closed(p) = m else {
            panic!("a closed cell stays closed")
        };
        assert_eq!((p.requests, p.seconds), (400, 2.0));
        assert_eq!(p.req_per_s, 200.0);
        assert_eq!(p.kb_per_s, 200.0 * 2048.0 / 1024.0);
        assert_eq!(p.latency.count, 400);
        assert_eq!(
            p.load_ops_per_s,
            Some(200.0),
            "the mean of the load's rates"
        );
        assert_eq!(p.spread.repeats.len(), 2);
        assert_eq!(p.spread.repeats[0]["req_per_s"], 100.0);
        assert_eq!(p.spread.repeats[1]["req_per_s"], 300.0);
        assert_eq!(p.spread.repeats[1]["count"], 300.0);
        assert!(p.spread.repeats[0].contains_key("kb_per_s"));
        assert!(p.spread.repeats[0].contains_key("p99_ns"));
        assert_eq!(p.spread.blocks.len(), 20, "every repeat's blocks");
        let h = Distribution::decode(p.spread.histogram.as_ref().unwrap().as_str()).unwrap();
        assert_eq!(h.len(), 400);
        assert_eq!(p.warnings[0], "same", "each warning once");
        assert!(
            p.warnings[1].contains("req_per_s varies by 200%"),
            "{:?}",
            p.warnings
        );
        assert_eq!(p.warnings.len(), 2);
    }

    #[test]
    fn one_repeat_keeps_no_repeats_and_modes_tell_cells_apart() {
        let m = LoadPoint::merge(vec![closed(100, 1.0, BufferMode::User)]);
        let LoadPoint::Closed(p) = &m else { panic!() };
        assert!(p.spread.repeats.is_empty());
        assert_eq!(p.requests, 100);
        assert_ne!(
            closed(1, 1.0, BufferMode::User).identity(),
            closed(1, 1.0, BufferMode::Raw).identity()
        );
        assert_ne!(
            closed(1, 1.0, BufferMode::User).identity(),
            open(1, 1, 1.0).identity()
        );
        let json = serde_json::to_value(&m).unwrap();
        assert!(json["histogram"].is_string() && json["intervals"].is_array());
        assert!(json.get("repeats").is_none());
    }

    #[test]
    fn open_repeats_sum_their_counts_and_say_the_missed_requests_once() {
        // 400 completed over 0.5 s, then 200 over 0.4 s (a rate of 500/s).
        let reps = vec![open(400, 500, 800.0), open(200, 500, 500.0)];
        let id = reps[0].identity();
        let m = LoadPoint::merge(reps);
        assert_eq!(m.identity(), id);
        let LoadPoint::Open(p) = m else { panic!() };
        assert_eq!((p.due, p.completed, p.missed, p.late), (1000, 600, 400, 2));
        assert!((p.achieved_per_s - 600.0 / 0.9).abs() < 1e-9);
        assert_eq!(p.seconds, 1.0);
        assert_eq!(p.latency.count, 600);
        assert_eq!(p.spread.repeats.len(), 2);
        assert_eq!(p.spread.repeats[1]["achieved_per_s"], 500.0);
        assert!(!p.spread.repeats[0].contains_key("kb_per_s"));
        assert_eq!(p.spread.blocks.len(), 20);
        assert_eq!(p.warnings[0], missed_warning(400, 1000));
        assert_eq!(
            p.warnings
                .iter()
                .filter(|w| w.contains("never sent"))
                .count(),
            1,
            "{:?}",
            p.warnings
        );
        assert!(
            p.warnings
                .iter()
                .any(|w| w.contains("achieved_per_s varies"))
        );
    }
}
