//! The plain settings each experiment reads: what a program embedding
//! xferbench fills in, and what the command line converts its flags into.
//!
//! They live here, apart from the argument parser, for the reason hyperfine
//! keeps `options.rs` apart from `cli.rs`: the measuring code must not depend
//! on how its settings were typed. `Default` gives the command line's
//! defaults; `validate` gives the errors a mistyped flag gets. Each type
//! serializes as the `options` object of its run's JSON, so field names and
//! their serde names are part of the results format: add, never rename.

pub use crate::flowgraph::edge::Edges;
pub use crate::flowgraph::sched::Scheduler;
pub use crate::format::Format;
pub use crate::measure::fit::Breakpoint;
pub use crate::measure::loadgen::LoadMode;
pub use crate::measure::placement::Cpus;
pub use crate::measure::stats::Stat;
pub use crate::transport::{BufferMode, CompletionMode, Pattern, Spec};
pub use crate::units::{Chunk, Unit};

use crate::error::{Error, Result};
use crate::units;
use crate::words::word_enum;
use serde::{Serialize, Serializer};
use std::path::PathBuf;
use std::time::Duration;

fn ser_secs<S: Serializer>(d: &Duration, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn ser_opt_secs<S: Serializer>(d: &Option<Duration>, s: S) -> std::result::Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

fn ser_specs<S: Serializer>(v: &[Spec], s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|sp| sp.to_string()))
}

/// How much of a point is timed: a count of samples, or a time during
/// which samples are taken. One value rather than two optional fields, so
/// a program that sets one cannot leave its config's default of the other
/// behind (the two exclude each other, as `--samples` and `--duration` do).
///
/// A sample is one timed exchange of the point's pattern: a round trip; a
/// window and its acknowledgement in curve's stream mode; a window each way
/// in bidir; or one trial of a CUDA copy curve (k copies timed by events).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Amount {
    /// Exactly this many timed samples.
    Samples(u64),
    /// As many samples as fit in this much timed time.
    Time(Duration),
}

impl Amount {
    /// What `--help` shows as this amount: `10000`, `0.25 s`.
    pub fn shown(&self) -> String {
        match self {
            Amount::Samples(n) => n.to_string(),
            Amount::Time(d) => format!("{} s", d.as_secs_f64()),
        }
    }
}

/// An [`Amount`] as runs have always recorded it: `samples` and
/// `duration_s`, the one not used null.
fn ser_amount<S: Serializer>(a: &Option<Amount>, s: S) -> std::result::Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Keys {
        samples: Option<u64>,
        duration_s: Option<f64>,
    }
    let (samples, duration_s) = match a {
        Some(Amount::Samples(n)) => (Some(*n), None),
        Some(Amount::Time(d)) => (None, Some(d.as_secs_f64())),
        None => (None, None),
    };
    Keys {
        samples,
        duration_s,
    }
    .serialize(s)
}

/// Where a measuring experiment's results go, and what is set beside them.
/// Recorded in a run's options with the format actually written
/// ([`Output::effective_format`]): `-o x.json` writes JSON whatever
/// `--format` was left at, and the record says so.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// How the result is written.
    pub format: Format,
    /// A file instead of stdout.
    pub output: Option<PathBuf>,
    /// Published datasets to put beside the results (`xferbench reference list`).
    pub compare: Vec<String>,
    /// Runs of the whole sweep, one after another; each point keeps every
    /// repeat's figures (1: one run).
    pub repeat: u32,
    /// Also store the result as the baseline of this name.
    pub save_baseline: Option<String>,
    /// Compare the result with the baseline of this name.
    pub baseline: Option<String>,
}

impl Default for Output {
    fn default() -> Output {
        Output {
            format: Format::Table,
            output: None,
            compare: Vec::new(),
            repeat: 1,
            save_baseline: None,
            baseline: None,
        }
    }
}

/// [`Output`] as a run records it.
#[derive(Serialize)]
struct OutputRecord<'a> {
    format: Format,
    output: &'a Option<PathBuf>,
    compare: &'a [String],
    repeat: u32,
    save_baseline: &'a Option<String>,
    baseline: &'a Option<String>,
}

impl Serialize for Output {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        OutputRecord {
            format: self.effective_format(),
            output: &self.output,
            compare: &self.compare,
            repeat: self.repeat,
            save_baseline: &self.save_baseline,
            baseline: &self.baseline,
        }
        .serialize(s)
    }
}

impl Output {
    /// The format to write: `format`, unless left at table and the output
    /// file's extension says otherwise.
    pub fn effective_format(&self) -> Format {
        if self.format != Format::Table {
            return self.format;
        }
        match self
            .output
            .as_deref()
            .and_then(|p| p.extension())
            .and_then(|e| e.to_str())
        {
            Some("json") => Format::Json,
            Some("csv") => Format::Csv,
            _ => Format::Table,
        }
    }
}

/// Settings every link-measuring experiment (roundtrip, curve, load) shares.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Common {
    /// Transports to measure, each with its options (`thread:completion=block`).
    #[serde(serialize_with = "ser_specs")]
    pub transports: Vec<Spec>,
    /// Buffer modes to measure; empty: the experiment's default per transport.
    pub buffers: Vec<BufferMode>,
    /// Completion modes to measure; empty: each transport's own.
    pub completion: Vec<CompletionMode>,
    /// Where the initiator and responder run.
    #[serde(skip)]
    pub cpus: Cpus,
    /// Untimed round trips before each point; None: up to 1000 within 0.5 s.
    pub warmup: Option<u64>,
    /// How much of each point is timed (`--samples` or `--duration`):
    /// [`RoundtripConfig`]'s and [`CurveConfig`]'s `Default` hold their
    /// experiment's own amount, which is what the command line shows and
    /// uses when neither flag is given. None only where an experiment times
    /// otherwise ([`LoadConfig`]: `cell_time`), which refuses one given.
    /// Recorded as `samples` and `duration_s`, one of them null.
    #[serde(flatten, serialize_with = "ser_amount")]
    pub amount: Option<Amount>,
    /// The responder busy-waits this long before replying (an accuracy check).
    #[serde(serialize_with = "ser_secs", rename = "responder_delay_s")]
    pub responder_delay: Duration,
    /// Give up on a responder silent this long.
    #[serde(serialize_with = "ser_secs", rename = "timeout_s")]
    pub timeout: Duration,
    /// Statistics the tables show.
    pub stats: Vec<Stat>,
    /// Where the results go.
    #[serde(flatten)]
    pub out: Output,
}

impl Default for Common {
    fn default() -> Common {
        Common {
            transports: vec![Spec {
                name: "thread".into(),
                options: Vec::new(),
            }],
            buffers: Vec::new(),
            completion: Vec::new(),
            cpus: Cpus::Auto,
            warmup: None,
            amount: None,
            responder_delay: Duration::ZERO,
            timeout: Duration::from_secs(10),
            stats: vec![Stat::Mean, Stat::P99],
            out: Output::default(),
        }
    }
}

impl Common {
    /// The transports, in order.
    pub fn specs(&self) -> Vec<Spec> {
        self.transports.clone()
    }

    /// The checks every link experiment makes before it starts.
    pub fn validate(&self) -> Result<()> {
        if self.transports.is_empty() {
            return Err(Error::usage("name at least one transport with -t"));
        }
        if self.stats.is_empty() {
            return Err(Error::usage("--stats needs at least one statistic"));
        }
        match self.amount {
            Some(Amount::Samples(0)) => {
                return Err(Error::usage("--samples must be at least 1"));
            }
            Some(Amount::Samples(n)) => check_count(n)?,
            Some(Amount::Time(d)) if d.is_zero() => {
                return Err(Error::usage("--duration must be longer than zero"));
            }
            _ => {}
        }
        if self.responder_delay >= self.timeout {
            return Err(Error::usage(
                "--responder-delay must be shorter than --timeout",
            ));
        }
        if let Some(v) = self.warmup {
            check_count(v)?;
        }
        Ok(())
    }
}

/// `xferbench roundtrip`: requests of each `in_sizes` size, replies of each
/// `out_sizes` size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundtripConfig {
    /// Request sizes, in `unit`s.
    #[serde(rename = "in")]
    pub in_sizes: Vec<u64>,
    /// Reply sizes, in `unit`s.
    #[serde(rename = "out")]
    pub out_sizes: Vec<u64>,
    /// What the sizes count.
    pub unit: Unit,
    /// Transports, modes, sampling and output.
    #[serde(flatten)]
    pub common: Common,
}

impl Default for RoundtripConfig {
    fn default() -> RoundtripConfig {
        let sizes = units::parse_size_list("64..16k").expect("a valid list");
        RoundtripConfig {
            in_sizes: sizes.clone(),
            out_sizes: sizes,
            unit: Unit::Bytes,
            common: Common {
                amount: Some(Amount::Samples(10_000)),
                ..Common::default()
            },
        }
    }
}

word_enum! {
    /// What a message carries.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum PayloadMode {
        /// Whatever is in the buffer: the transfer alone is timed.
        Raw = "raw",
        /// The sender fills every message with pseudo-random values and the
        /// receiver checks every one, inside the timed span (BIP's "real usage").
        FillCheck = "fill-check",
    }
}

/// The largest `window` a curve takes.
pub const MAX_WINDOW: u32 = 65536;

/// `xferbench curve`: one-way time and bandwidth over message size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurveConfig {
    /// Message sizes in bytes.
    pub sizes: Vec<u64>,
    /// Also measure each size this many bytes below and above it (NetPIPE).
    pub perturb: u64,
    /// Ping-pong, stream (a window one way, then an acknowledgement) or bidir.
    pub mode: Pattern,
    /// Messages in flight per exchange in stream and bidir modes (1..=65536).
    pub window: u32,
    /// Which way a stream curve moves the data: `write` (initiator to
    /// responder: host to device), `read` (responder to initiator: device
    /// to host, tiny requests answered by whole messages); both in turn.
    pub direction: Vec<DataDirection>,
    /// Time the transfer alone, or fill and check every value.
    pub payload: PayloadMode,
    /// How messages are cut into packets.
    pub chunk: Chunk,
    /// Measure once per packetization and tabulate side by side (replaces `chunk`).
    pub compare_chunks: Vec<Chunk>,
    /// Where the two-segment fit splits.
    pub breakpoint: Breakpoint,
    /// `-t mpi` only: this many sender ranks (0..K) stream to as many
    /// receivers (K..2K) at once, osu_mbw_mr's pattern; `None`: one pair
    /// ping-pongs as usual.
    pub pairs: Option<u32>,
    /// How much of each size a CUDA copy curve times, in trials: apart from
    /// `common.amount` because the two defaults differ (a link's curve
    /// takes 0.25 s a size, a copy curve nvbandwidth's 3 trials), while a
    /// `--samples` or `--duration` given sets both. Not recorded apart:
    /// runs have always recorded `common`'s.
    #[serde(skip)]
    pub copy_amount: Amount,
    /// Transports, modes, sampling and output.
    #[serde(flatten)]
    pub common: Common,
}

impl Default for CurveConfig {
    fn default() -> CurveConfig {
        CurveConfig {
            sizes: units::parse_size_list("0..8M").expect("a valid list"),
            perturb: 0,
            mode: Pattern::Pingpong,
            window: 64,
            direction: vec![DataDirection::Write],
            payload: PayloadMode::Raw,
            chunk: Chunk::Whole,
            compare_chunks: Vec::new(),
            breakpoint: Breakpoint::Auto,
            pairs: None,
            copy_amount: Amount::Samples(3),
            common: Common {
                amount: Some(Amount::Time(Duration::from_millis(250))),
                ..Common::default()
            },
        }
    }
}

impl CurveConfig {
    /// The checks of the values themselves (the sizes are checked against
    /// each transport when the curve starts).
    pub fn validate(&self) -> Result<()> {
        self.common.validate()?;
        if !(1..=MAX_WINDOW).contains(&self.window) {
            return Err(Error::usage(format!(
                "--window {}: must be from 1 to {MAX_WINDOW}",
                self.window
            )));
        }
        if let Some(k) = self.pairs {
            if k == 0 {
                return Err(Error::usage("--pairs 0: give at least one pair"));
            }
            if self.common.transports.iter().any(|t| t.name != "mpi") {
                return Err(Error::usage(
                    "--pairs runs MPI ranks in pairs: use it with -t mpi under mpirun -n 2K",
                ));
            }
        }
        check_count(self.perturb)
    }
}

/// `mesh`: every ordered pair of MPI ranks, latency and bandwidth, the
/// matrices, their outliers and a health gate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeshConfig {
    /// The transport: only `mpi` spans ranks today.
    pub transport: String,
    /// Message size of the latency matrices, bytes.
    pub latency_size: u64,
    /// Message size of the bandwidth matrix, bytes.
    pub bandwidth_size: u64,
    /// A short sweep per pair: latency and bandwidth at each of these sizes
    /// (the matrices take `latency_size` and `bandwidth_size` if listed,
    /// else the smallest and the largest).
    pub sizes: Vec<u64>,
    /// Messages in flight per bandwidth window.
    pub window: u32,
    /// Timed time of each measurement (one pair, one direction, one size).
    #[serde(serialize_with = "ser_secs", rename = "duration_s")]
    pub duration: Duration,
    /// All pairs of a round at once (contention) rather than one at a time.
    pub concurrent: bool,
    /// Measure suspect pairs again, alone, before reporting them.
    pub retest: bool,
    /// Health gate: exit 1 when a pair's bandwidth is below this, MB/s.
    #[serde(rename = "min_bandwidth_MBps")]
    pub min_bandwidth: Option<f64>,
    /// Health gate: exit 1 when a pair's median one-way latency is above this.
    #[serde(serialize_with = "ser_opt_secs", rename = "max_latency_s")]
    pub max_latency: Option<Duration>,
    /// Give up on a rank silent this long (beyond the time its work takes).
    #[serde(serialize_with = "ser_secs", rename = "timeout_s")]
    pub timeout: Duration,
    /// A known delay on one rank, before every message it sends: checks
    /// that the outlier rule finds it (rank, delay).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inject_delay: Option<(usize, Duration)>,
    /// Testing: this rank stops answering in the second round.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inject_stall: Option<usize>,
    /// Where the results go.
    #[serde(flatten)]
    pub out: Output,
}

impl Default for MeshConfig {
    fn default() -> MeshConfig {
        MeshConfig {
            transport: "mpi".into(),
            latency_size: 8,
            bandwidth_size: 1 << 20,
            sizes: Vec::new(),
            window: 64,
            duration: Duration::from_millis(50),
            concurrent: false,
            retest: true,
            min_bandwidth: None,
            max_latency: None,
            timeout: Duration::from_secs(10),
            inject_delay: None,
            inject_stall: None,
            out: Output::default(),
        }
    }
}

impl MeshConfig {
    /// The checks of the values themselves (the ranks are checked when
    /// MPI starts).
    pub fn validate(&self) -> Result<()> {
        if self.transport != "mpi" {
            return Err(Error::usage(format!(
                "mesh runs over MPI only: use -t mpi under `mpirun -n N xferbench mesh -t mpi` (not {})",
                self.transport
            )));
        }
        if !(1..=MAX_WINDOW).contains(&self.window) {
            return Err(Error::usage(format!(
                "--window {}: must be from 1 to {MAX_WINDOW}",
                self.window
            )));
        }
        let max = i32::MAX as u64;
        for s in self.latency_sizes().iter().chain(&self.bandwidth_sizes()) {
            if *s > max {
                return Err(Error::usage(format!(
                    "size {s}: MPI messages here are at most {max} bytes; choose a smaller size"
                )));
            }
        }
        if self.bandwidth_sizes().iter().all(|&s| s == 0) {
            return Err(Error::usage(
                "a bandwidth size of 0 moves no data; give --bandwidth-size (or --sizes) above 0",
            ));
        }
        if self.duration.is_zero() {
            return Err(Error::usage(
                "--duration 0: give each measurement some time, e.g. 50ms",
            ));
        }
        if self.timeout.is_zero() {
            return Err(Error::usage(
                "--timeout 0: give ranks some time to answer, e.g. 10s",
            ));
        }
        if let Some(b) = self.min_bandwidth
            && !(b.is_finite() && b > 0.0)
        {
            return Err(Error::usage(
                "--min-bandwidth: give a bandwidth above 0, e.g. 5000 (MB/s) or 5GB/s",
            ));
        }
        Ok(())
    }

    /// Sizes latency is measured at, smallest first.
    pub fn latency_sizes(&self) -> Vec<u64> {
        if self.sizes.is_empty() {
            vec![self.latency_size]
        } else {
            sorted(&self.sizes)
        }
    }

    /// Sizes bandwidth is measured at, smallest first (a 0 in `sizes` is a
    /// latency point only: it moves no data).
    pub fn bandwidth_sizes(&self) -> Vec<u64> {
        if self.sizes.is_empty() {
            vec![self.bandwidth_size]
        } else {
            sorted(&self.sizes).into_iter().filter(|&s| s > 0).collect()
        }
    }

    /// The size the latency matrices show.
    pub fn latency_matrix_size(&self) -> u64 {
        let s = self.latency_sizes();
        if s.contains(&self.latency_size) {
            self.latency_size
        } else {
            s[0]
        }
    }

    /// The size the bandwidth matrix shows.
    pub fn bandwidth_matrix_size(&self) -> u64 {
        let s = self.bandwidth_sizes();
        if s.contains(&self.bandwidth_size) {
            self.bandwidth_size
        } else {
            s.last().copied().unwrap_or(self.bandwidth_size)
        }
    }
}

/// A bandwidth in decimal MB/s: a plain number is MB/s; `5GB/s`, `800MB/s`
/// and `100Gb/s` (bits) are read as written.
pub fn parse_bandwidth(s: &str) -> std::result::Result<f64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let cut = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = (&t[..cut], lower[cut..].trim());
    let scale = match unit {
        "" | "mb/s" | "mbps" => 1.0,
        "kb/s" => 1e-3,
        "gb/s" if t[cut..].trim().starts_with("Gb") => 1e3 / 8.0,
        "gb/s" | "gbps" => 1e3,
        "tb/s" => 1e6,
        _ => {
            return Err(format!(
                "bandwidth {s:?}: give MB/s (e.g. 5000), or a unit: 800MB/s, 5GB/s, 100Gb/s"
            ));
        }
    };
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v * scale),
        _ => Err(format!(
            "bandwidth {s:?}: give a number above 0, e.g. 5000 (MB/s) or 5GB/s"
        )),
    }
}

/// `RANK:DELAY`, e.g. `2:200us`.
pub fn parse_rank_delay(s: &str) -> std::result::Result<(usize, Duration), String> {
    let (r, d) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?}: give RANK:DELAY, e.g. 2:200us"))?;
    let rank = r
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: the rank must be a number, e.g. 2:200us"))?;
    let delay = units::parse_duration(d.trim()).map_err(|e| e.to_string())?;
    Ok((rank, delay))
}

fn sorted(v: &[u64]) -> Vec<u64> {
    let mut v = v.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

word_enum! {
    /// Which way the data of a load request goes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "lowercase")]
    pub enum DataDirection {
        /// The responder sends the data (the device writes memory, as an RK11 read).
        Read = "read",
        /// The initiator sends the data.
        Write = "write",
    }
}

word_enum! {
    /// When open-loop requests are due.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Arrival {
        /// Evenly spaced, 1/R apart.
        Fixed = "fixed",
        /// Exponential gaps with mean 1/R (a Poisson process).
        Poisson = "poisson",
    }
}

/// The most requests in flight a closed-loop load run takes.
pub const MAX_INFLIGHT: u32 = 64;

/// `xferbench load`: request rate under background load, or latency at
/// offered rates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadConfig {
    /// Transfer sizes in bytes.
    pub sizes: Vec<u64>,
    /// Background loads, each in turn.
    #[serde(rename = "loads")]
    pub loads: Vec<LoadMode>,
    /// Which way the data goes; each in turn.
    pub direction: Vec<DataDirection>,
    /// Requests in flight in the closed loop (clients, each with its own link; 1..=64).
    pub inflight: u32,
    /// Measuring time of each cell (one size under one load).
    #[serde(serialize_with = "ser_secs", rename = "cell_time_s")]
    pub cell_time: Duration,
    /// CPUs for the load threads; None: those the initiator and responder
    /// leave free (all of them on a machine with none spare).
    #[serde(skip)]
    pub load_cpus: Option<Vec<usize>>,
    /// A shell command to run as the load instead, killed after each run.
    pub load_cmd: Option<String>,
    /// Open loop at one offered rate, requests/s (exclusive with `rates`).
    pub rate: Option<Vec<f64>>,
    /// Open loop over several offered rates, requests/s.
    pub rates: Option<Vec<f64>>,
    /// Open-loop arrivals: fixed spacing or Poisson.
    pub arrival: Arrival,
    /// Untimed round trips each client makes before each closed-loop cell,
    /// under that cell's load, when `common.warmup` gives no count: load's
    /// own default, where roundtrip and curve warm up for a time instead
    /// (`common.warmup`'s None). Not recorded apart: runs record
    /// `common.warmup` as given, null by default, as they always have.
    #[serde(skip)]
    pub cell_warmup: u64,
    /// Transports, modes, sampling and output.
    #[serde(flatten)]
    pub common: Common,
}

impl Default for LoadConfig {
    fn default() -> LoadConfig {
        LoadConfig {
            sizes: units::parse_size_list("512,1k,2k,4k,8k,16k").expect("a valid list"),
            loads: <LoadMode as crate::words::Word>::VARIANTS.to_vec(),
            direction: vec![DataDirection::Read, DataDirection::Write],
            inflight: 1,
            cell_time: Duration::from_secs(1),
            load_cpus: None,
            load_cmd: None,
            rate: None,
            rates: None,
            arrival: Arrival::Fixed,
            cell_warmup: 20,
            common: Common::default(),
        }
    }
}

impl LoadConfig {
    /// The checks of the values themselves.
    pub fn validate(&self) -> Result<()> {
        // A cell is a rate over a time, not a count of samples: the shared
        // budget flags have no meaning here (hidden from `load --help`).
        if self.common.amount.is_some() {
            return Err(Error::usage(
                "load times each cell with --cell-time; --samples and --duration do not apply",
            ));
        }
        self.common.validate()?;
        if !(1..=MAX_INFLIGHT).contains(&self.inflight) {
            return Err(Error::usage(format!(
                "--inflight {}: must be from 1 to {MAX_INFLIGHT}",
                self.inflight
            )));
        }
        if self.rate.is_some() && self.rates.is_some() {
            return Err(Error::usage(
                "--rate and --rates exclude each other: give one",
            ));
        }
        for r in self.rate.iter().chain(&self.rates).flatten() {
            check_rate(*r)?;
        }
        Ok(())
    }
}

/// Parses offered rates in requests/s: `1000`, `10k`, `2.5M` (decimal
/// prefixes), comma-separated.
pub fn parse_rates(s: &str) -> std::result::Result<Vec<f64>, String> {
    let mut v = Vec::new();
    for item in s.split(',').map(str::trim) {
        let (num, mul) = match item.chars().last() {
            Some('k' | 'K') => (&item[..item.len() - 1], 1e3),
            Some('M') => (&item[..item.len() - 1], 1e6),
            _ => (item, 1.0),
        };
        let r = num
            .parse::<f64>()
            .ok()
            .map(|x| x * mul)
            .filter(|r| check_rate(*r).is_ok())
            .ok_or_else(|| {
                format!("malformed rate '{item}': expected requests/s like 1000, 10k or 2.5M (up to 100M)")
            })?;
        v.push(r);
    }
    Ok(v)
}

fn check_rate(r: f64) -> Result<()> {
    if r.is_finite() && r > 0.0 && r <= 1e8 {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "rate {r} requests/s is out of range: give more than 0 and up to 100M"
        )))
    }
}

/// The largest count (samples, warm-up, perturbation) any option takes.
pub const MAX_COUNT: u64 = 1_000_000_000;

/// Parses a whole count: `1000` or `10k`.
pub fn parse_count(s: &str) -> std::result::Result<u64, String> {
    let v = units::parse_size(s)
        .map_err(|_| format!("malformed count '{s}': expected a whole number like 1000 or 10k"))?;
    check_count(v).map_err(|e| e.to_string())?;
    Ok(v)
}

fn check_count(v: u64) -> Result<()> {
    if v > MAX_COUNT {
        return Err(Error::usage(format!(
            "count {v} is absurdly large (limit 1e9)"
        )));
    }
    Ok(())
}

/// Parses whole numbers: `1..4` (every value), `2,4,6`, or both mixed;
/// sorted, without repeats, none zero.
pub fn parse_counts(s: &str) -> std::result::Result<Vec<usize>, String> {
    let bad = || format!("malformed list '{s}': expected numbers and ranges like 1..4 or 2,4,6");
    let mut v = Vec::new();
    for item in s.split(',').map(str::trim) {
        let num = |t: &str| t.trim().parse::<usize>().map_err(|_| bad());
        match item.split_once("..") {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b || b - a > 1024 {
                    return Err(bad());
                }
                v.extend(a..=b);
            }
            None => v.push(num(item)?),
        }
    }
    if v.contains(&0) {
        return Err(format!("'{s}': 0 is not a count"));
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// The most items a flowgraph point may be told to stop after.
pub const MAX_ITEMS: u64 = 10_000_000_000_000;

/// Parses a flowgraph item count: `100000000` or `64M`.
pub fn parse_items(s: &str) -> std::result::Result<u64, String> {
    let v = units::parse_size(s).map_err(|_| {
        format!("malformed item count '{s}': expected a whole number like 100000000 or 64M")
    })?;
    if v == 0 || v > MAX_ITEMS {
        return Err(format!("item count {v} out of range (1..1e13)"));
    }
    Ok(v)
}

/// `word` or a count from 1 to `max`, for the options that take either.
fn count_or(s: &str, word: &str, max: usize, opt: &str) -> std::result::Result<String, String> {
    if s == word || s.parse::<usize>().is_ok_and(|n| (1..=max).contains(&n)) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "{opt} '{s}': expected {word} or a number from 1 to {max}"
        ))
    }
}

/// Checks a flowgraph `buffers` value: `N+1` or 1..=64.
pub fn parse_buffer_count(s: &str) -> std::result::Result<String, String> {
    count_or(s, "N+1", 64, "--buffers")
}

/// Checks a flowgraph `edge_buffers` value: `auto` or 1..=4096.
pub fn parse_edge_buffer_count(s: &str) -> std::result::Result<String, String> {
    count_or(s, "auto", 4096, "--edge-buffers")
}

/// Checks a Saxpy kernel name: `auto` or one this build has.
pub fn parse_kernel(s: &str) -> std::result::Result<String, String> {
    let known = crate::flowgraph::saxpy::NAMES;
    if s == "auto" || known.contains(&s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "'{s}': expected auto or one of {}",
            known.join(", ")
        ))
    }
}

/// Parses a flowgraph buffer size: a multiple of 64 bytes from 64 B to 64 MiB.
pub fn parse_buffer_size(s: &str) -> std::result::Result<u64, String> {
    let v = units::parse_size(s).map_err(|e| e.to_string())?;
    check_buffer_size(v).map_err(|_| {
        format!("'{s}': the buffer size must be a multiple of 64 bytes from 64 B to 64 MiB")
    })?;
    Ok(v)
}

fn check_buffer_size(v: u64) -> Result<()> {
    if !(64..=(64 << 20)).contains(&v) || !v.is_multiple_of(64) {
        return Err(Error::usage(format!(
            "buffer size {v}: must be a multiple of 64 bytes from 64 B to 64 MiB"
        )));
    }
    Ok(())
}

/// The most rounds a flowgraph point takes.
pub const MAX_ROUNDS: u32 = 50;

/// `xferbench flowgraph`: source → M Saxpy blocks → sink on N cores, per
/// scheduler, against the kernel alone.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowgraphConfig {
    /// Core counts N; None: 1 up to the CPUs available.
    pub cores: Option<Vec<usize>>,
    /// Saxpy blocks M for every N; None: N..3N for each N.
    pub blocks: Option<Vec<usize>>,
    /// Schedulers; empty: every one that applies.
    pub scheduler: Vec<Scheduler>,
    /// Edges between blocks.
    pub edges: Vec<Edges>,
    /// Bytes each block moves per call (a multiple of 64 from 64 B to 64 MiB).
    pub buffer_size: u64,
    /// Buffers circulating in the ring reference and a handoff circuit: `N+1` or 1..=64.
    pub buffers: String,
    /// Capacity of a circular buffer between threads: `auto` or 1..=4096.
    pub edge_buffers: String,
    /// Measuring time per point, after the warm-up.
    #[serde(serialize_with = "ser_secs", rename = "duration_s")]
    pub duration: Duration,
    /// Time each point runs before it is measured.
    #[serde(serialize_with = "ser_secs", rename = "warmup_s")]
    pub warmup: Duration,
    /// Rounds per (N, M), interleaving the schedulers (1..=50).
    pub rounds: u32,
    /// Stop each point after the source made this many items, not after `duration`.
    pub items: Option<u64>,
    /// CPUs to use, in order (`Cpus::Unpinned` is refused: the flowgraph pins).
    #[serde(skip)]
    pub cpus: Cpus,
    /// Buffer sizes of the kernel-only scan.
    pub kernel_sizes: Vec<u64>,
    /// The Saxpy kernel: `auto` or a name from `flowgraph::saxpy::NAMES`.
    pub kernel: String,
    /// Give up on a scheduler that has not wound down this long after being stopped.
    #[serde(serialize_with = "ser_secs", rename = "timeout_s")]
    pub timeout: Duration,
    /// Where the results go.
    #[serde(flatten)]
    pub out: Output,
}

impl Default for FlowgraphConfig {
    fn default() -> FlowgraphConfig {
        use crate::flowgraph::edge::Edges;
        FlowgraphConfig {
            cores: None,
            blocks: None,
            scheduler: Vec::new(),
            edges: vec![Edges::Circular, Edges::Handoff],
            buffer_size: 16 << 10,
            buffers: "N+1".into(),
            edge_buffers: "auto".into(),
            duration: Duration::from_millis(500),
            warmup: Duration::from_millis(150),
            rounds: 3,
            items: None,
            cpus: Cpus::Auto,
            kernel_sizes: units::parse_size_list("256..8M").expect("a valid list"),
            kernel: "auto".into(),
            timeout: Duration::from_secs(10),
            out: Output::default(),
        }
    }
}

impl FlowgraphConfig {
    /// The checks of the values themselves.
    pub fn validate(&self) -> Result<()> {
        let usage = |e: String| Error::usage(e);
        for list in [&self.cores, &self.blocks].into_iter().flatten() {
            if list.is_empty() || list.contains(&0) {
                return Err(Error::usage(
                    "--cores and --blocks need counts of at least 1",
                ));
            }
        }
        check_buffer_size(self.buffer_size)?;
        parse_buffer_count(&self.buffers).map_err(usage)?;
        parse_edge_buffer_count(&self.edge_buffers).map_err(usage)?;
        parse_kernel(&self.kernel).map_err(usage)?;
        if !(1..=MAX_ROUNDS).contains(&self.rounds) {
            return Err(Error::usage(format!(
                "--rounds {}: must be from 1 to {MAX_ROUNDS}",
                self.rounds
            )));
        }
        if let Some(i) = self.items {
            parse_items(&i.to_string()).map_err(usage)?;
        }
        Ok(())
    }
}

/// Parses a `--map OLD=NEW` filename rewrite.
pub fn parse_map_pair(s: &str) -> std::result::Result<(String, String), String> {
    match s.split_once('=') {
        Some((a, b)) if !a.trim().is_empty() && !b.trim().is_empty() => {
            Ok((a.trim().to_string(), b.trim().to_string()))
        }
        _ => Err(format!(
            "malformed map '{s}': expected OLD=NEW, as in /dev/xdma0_h2c_0=/tmp/card0"
        )),
    }
}

/// Parses a `--set KEY=VALUE` fio option (a bare `KEY` is a flag option).
pub fn parse_set_pair(s: &str) -> std::result::Result<(String, Option<String>), String> {
    let (k, v) = match s.split_once('=') {
        Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
        None => (s.trim(), None),
    };
    if k.is_empty() || k.contains(char::is_whitespace) {
        return Err(format!(
            "malformed option '{s}': expected KEY=VALUE (a fio option), as in size=64m"
        ));
    }
    Ok((k.to_string(), v))
}

/// One `stream` flag that sets a fio option: declared once, in
/// [`STREAM_FLAGS`]; the command line makes a flag of it, [`StreamConfig`]
/// keeps what was given under the option's name, and the jobs get it
/// through `Job::set`, exactly as a job-file line.
#[derive(Clone, Copy, Debug)]
pub struct StreamFlag {
    /// The flag as typed after `--`; the fio option is this with `_` for `-`.
    pub flag: &'static str,
    /// `--help`'s name for its value; None for a switch (`--time-based`),
    /// which sets the option bare (`time_based`).
    pub value: Option<&'static str>,
    /// `--help`'s line.
    pub help: &'static str,
}

impl StreamFlag {
    /// The fio option it sets.
    pub fn option(&self) -> String {
        self.flag.replace('-', "_")
    }
}

/// The `stream` flags that are fio options, in `--help`'s order (which is
/// also their order in a run's `options`).
pub const STREAM_FLAGS: &[StreamFlag] = &[
    StreamFlag {
        flag: "filename",
        value: Some("FILENAME"),
        help: "Target: a file, a block or character device, or xfer:TRANSPORT (e.g. xfer:tcp) for a one-way stream",
    },
    StreamFlag {
        flag: "rw",
        value: Some("RW"),
        help: "read, write, randread, randwrite, rw, randrw, trim, randtrim, trimwrite, randtrimwrite",
    },
    StreamFlag {
        flag: "bs",
        value: Some("SIZE|SIZES"),
        help: "Block size, or several to sweep (4k..2m doubles, or a list 4k,64k,1m): one table row per size",
    },
    StreamFlag {
        flag: "size",
        value: Some("SIZE"),
        help: "Bytes per job (fio suffixes: k, m, g, t are powers of 1024)",
    },
    StreamFlag {
        flag: "offset",
        value: Some("OFFSET"),
        help: "Byte offset in the target where each job's I/O starts (fio suffixes)",
    },
    StreamFlag {
        flag: "filesize",
        value: Some("FILESIZE"),
        help: "Size of the target when it reports none (character devices) or is created",
    },
    StreamFlag {
        flag: "numjobs",
        value: Some("NUMJOBS"),
        help: "Copies of the job that run at once, each in its own thread on the same target, as fio's numjobs (1 to 4096)",
    },
    StreamFlag {
        flag: "iodepth",
        value: Some("IODEPTH"),
        help: "I/Os in flight per job (io_uring, libaio, posixaio; vsync coalesces up to this many adjacent I/Os; the other synchronous engines do one at a time)",
    },
    StreamFlag {
        flag: "ioengine",
        value: Some("IOENGINE"),
        help: "fio's engines, each making fio's syscalls: sync, psync, vsync, pvsync, pvsync2, libaio, posixaio, io_uring, mmap, null, filecreate, filestat, filedelete, cpuio",
    },
    StreamFlag {
        flag: "iomem",
        value: Some("IOMEM"),
        help: "Buffers: malloc, mmap, mmaphuge",
    },
    StreamFlag {
        flag: "direct",
        value: Some("0|1"),
        help: "O_DIRECT (1) or buffered (0)",
    },
    StreamFlag {
        flag: "verify",
        value: Some("VERIFY"),
        help: "Write a header and checksum into every block and check them on read: md5, crc64, crc32c, xxhash, sha1, sha256, sha512, sha3-256…, meta or pattern (with --set verify_pattern=)",
    },
    StreamFlag {
        flag: "completion",
        value: Some("COMPLETION"),
        help: "interrupt (sleep until woken) or poll (spin; io_uring hipri/sqthread_poll add kernel polling)",
    },
    StreamFlag {
        flag: "runtime",
        value: Some("RUNTIME"),
        help: "Stop each job after this long (fio's runtime; with --time-based, run exactly this long)",
    },
    StreamFlag {
        flag: "time-based",
        value: None,
        help: "Loop over the region until --runtime has passed",
    },
    StreamFlag {
        flag: "rate",
        value: Some("RATE"),
        help: "Cap each job's bandwidth (bytes per second, e.g. 100m)",
    },
];

/// The [`STREAM_FLAGS`] given, as (fio option, value text; None for a
/// switch). A run's `options` show every flag by its option's name: the
/// value or null, and a switch as true or false, as they always have.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamFlags(pub Vec<(String, Option<String>)>);

impl StreamFlags {
    /// The value given for `option` (Some(None) for a switch given).
    pub fn get(&self, option: &str) -> Option<Option<&str>> {
        self.0
            .iter()
            .find(|(k, _)| k == option)
            .map(|(_, v)| v.as_deref())
    }
}

impl Serialize for StreamFlags {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(STREAM_FLAGS.len()))?;
        for f in STREAM_FLAGS {
            let k = f.option();
            let given = self.get(&k);
            match f.value {
                None => m.serialize_entry(&k, &given.is_some())?,
                Some(_) => m.serialize_entry(&k, &given.flatten())?,
            }
        }
        m.end()
    }
}

/// `xferbench stream`: fio-style jobs from a job file, flags, or both.
/// The fio options are kept as written (fio's own syntax, checked when the
/// jobs are built), so a job given by fields reads like a job file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamConfig {
    /// A fio job file to run.
    pub job: Option<PathBuf>,
    /// More job files, run after `job`'s one after the other, as
    /// `fio a.fio b.fio` runs them (each with its own `[global]`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub more_jobs: Vec<PathBuf>,
    /// Only these sections of the job files (fio's `--section`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sections: Vec<String>,
    /// Filename rewrites applied before opening (OLD, NEW).
    pub map: Vec<(String, String)>,
    /// fio options set on every job after the job file's own.
    pub set: Vec<(String, Option<String>)>,
    /// Options xferbench does not support are errors instead of warnings.
    pub strict: bool,
    /// Job name for a job given by fields.
    pub name: Option<String>,
    /// The fio options given as flags ([`STREAM_FLAGS`]).
    #[serde(flatten)]
    pub flags: StreamFlags,
    /// Give up on an I/O that has not completed for this long.
    #[serde(serialize_with = "ser_secs", rename = "timeout_s")]
    pub timeout: Duration,
    /// Lay out a file for reading even past the sane bound (8 GiB of zeros,
    /// or half the file system's free space).
    pub allow_large_layout: bool,
    /// fio's json+ or terse in place of the JSON (`--output-format`);
    /// omitted for xferbench's own formats.
    #[serde(rename = "output_format", skip_serializing_if = "Option::is_none")]
    pub fio_output: Option<FioOutput>,
    /// fio's command line (`xferbench fio`): its jobs and job files, read
    /// in fio's order with fio's precedence. When set, it defines the jobs
    /// and `job`, `more_jobs`, `sections`, `name` and the flags are unused.
    #[serde(rename = "fio_command_line", skip_serializing_if = "Option::is_none")]
    pub fio_jobs: Option<crate::fio::cmdline::Jobs>,
    /// fio's `--status-interval`: how often the run so far is handed to
    /// the progress sink (its `status` hook).
    #[serde(skip)]
    pub status_interval: Option<Duration>,
    /// Where the results go.
    #[serde(flatten)]
    pub out: Output,
}

/// fio's output formats that xferbench's `--format` words lack: written
/// where the JSON would be (the run is JSON underneath).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum FioOutput {
    /// The JSON with each direction's `clat_ns.bins` (fio's histogram).
    #[serde(rename = "json+")]
    JsonPlus,
    /// fio's terse lines (version 3), semicolon-separated.
    #[serde(rename = "terse")]
    Terse,
}

impl Default for StreamConfig {
    fn default() -> StreamConfig {
        StreamConfig {
            job: None,
            more_jobs: Vec::new(),
            sections: Vec::new(),
            map: Vec::new(),
            set: Vec::new(),
            strict: false,
            name: None,
            flags: StreamFlags::default(),
            timeout: Duration::from_secs(10),
            allow_large_layout: false,
            fio_output: None,
            fio_jobs: None,
            status_interval: None,
            out: Output::default(),
        }
    }
}

impl StreamConfig {
    /// The value of a flag given (`filename`, `rw`…; by fio option name).
    pub fn flag(&self, option: &str) -> Option<&str> {
        self.flags.get(option).flatten()
    }

    /// The flags given, as fio options applied to every job (after the job
    /// file's own), then the `set` ones, then `--bs` when it names one size
    /// (a sweep is [`Self::bs_list`]'s): a flag's value reaches the job as
    /// typed, parsed once by the option's own table entry.
    pub fn overrides(&self) -> Vec<(String, Option<String>)> {
        let (bs, mut o): (Vec<_>, Vec<_>) =
            self.flags.0.iter().cloned().partition(|(k, _)| k == "bs");
        o.extend(self.set.iter().cloned());
        if self.bs_list().is_ok_and(|l| l.is_empty()) {
            o.extend(bs);
        }
        o
    }

    /// Block sizes to sweep: empty without `--bs`, or when it names one
    /// size (then [`Self::overrides`] sets it as any other option).
    pub fn bs_list(&self) -> Result<Vec<u64>> {
        match self.flag("bs") {
            Some(b) if b.contains("..") || b.contains(',') => units::parse_size_list(b),
            _ => Ok(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `-o x.json` writes JSON with `--format` left at table: the run's
    /// options record the format written, in every experiment (flattened).
    #[test]
    fn options_record_the_format_actually_written() {
        let mut c = RoundtripConfig::default();
        c.common.out.output = Some(PathBuf::from("x.json"));
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["format"], "json", "{v}");
        assert_eq!(v["output"], "x.json", "{v}");
        c.common.out.output = Some(PathBuf::from("x.csv"));
        assert_eq!(serde_json::to_value(&c).unwrap()["format"], "csv");
        c.common.out.output = Some(PathBuf::from("x.txt"));
        assert_eq!(serde_json::to_value(&c).unwrap()["format"], "table");
        // An explicit format wins over the extension, as it does when writing.
        c.common.out.format = Format::Json;
        c.common.out.output = Some(PathBuf::from("x.csv"));
        assert_eq!(serde_json::to_value(&c).unwrap()["format"], "json");
        let mut s = StreamConfig::default();
        s.out.output = Some(PathBuf::from("s.json"));
        assert_eq!(serde_json::to_value(&s).unwrap()["format"], "json");
    }

    /// The amount timed per point is recorded under the two keys runs have
    /// always had, straight from the config: each experiment's default is
    /// in the record without being patched in after serialising.
    #[test]
    fn the_amount_is_recorded_as_samples_or_duration() {
        let keys = |v: serde_json::Value| (v["samples"].clone(), v["duration_s"].clone());
        let rt = serde_json::to_value(RoundtripConfig::default()).unwrap();
        assert_eq!(keys(rt), (10_000.into(), serde_json::Value::Null));
        let cv = serde_json::to_value(CurveConfig::default()).unwrap();
        assert_eq!(keys(cv), (serde_json::Value::Null, 0.25.into()));
        let ld = serde_json::to_value(LoadConfig::default()).unwrap();
        assert_eq!(keys(ld), (serde_json::Value::Null, serde_json::Value::Null));
        // Load times cells by cell_time: an amount given is refused.
        let mut ld = LoadConfig::default();
        ld.common.amount = Some(Amount::Samples(5));
        let e = ld.validate().unwrap_err().to_string();
        assert!(e.contains("do not apply"), "{e}");
    }
}
