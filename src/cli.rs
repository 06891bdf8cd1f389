//! Command-line definitions. Values are parsed into typed options here, so a
//! malformed size or duration is a usage error before anything runs.

use crate::stats::Stat;
use crate::transport::{BufferMode, CompletionMode, Spec};
use crate::units::{self, Unit};
use crate::words::Word;
use clap::builder::PossibleValue;
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::{Serialize, Serializer};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "xferbench",
    version,
    about = "Measures how fast data moves: round-trip latency, one-way latency, bandwidth and request rate between two endpoints.",
    long_about = "Measures how fast data moves between two endpoints: threads, processes, pipes, sockets.\n\nWith no command, runs the default suite: the round-trip matrix and latency/bandwidth curve on every local transport and a short stream on a temporary file; prints a one-screen summary and writes xferbench-report/index.html with the JSON beside it (--quick: half the time; --out DIR: elsewhere)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// No progress bar on stderr.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Default suite: half the sizes and time.
    #[arg(long)]
    pub quick: bool,
    /// Default suite: folder for the report and JSON files.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

impl Cli {
    /// Parses `argv` (the program name first) as the command line would be
    /// parsed, for callers that build one (the suite, tests).
    pub fn parse_argv<I, T>(argv: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        Cli::try_parse_from(argv)
    }
}

/// Teaches clap the words of the enums the experiments define (`words.rs`),
/// each with its variant's doc comment as help, as `#[derive(ValueEnum)]`
/// would have given.
macro_rules! value_enum_by_word {
    ($($t:ty),* $(,)?) => {$(
        impl ValueEnum for $t {
            fn value_variants<'a>() -> &'a [Self] {
                <$t as Word>::VARIANTS
            }

            fn to_possible_value(&self) -> Option<PossibleValue> {
                let value = PossibleValue::new(self.word());
                Some(match value_help(self.doc()) {
                    Some(help) => value.help(help),
                    None => value,
                })
            }
        }
    )*};
}

value_enum_by_word!(
    BufferMode,
    CompletionMode,
    crate::transport::Pattern,
    Stat,
    Unit,
    crate::loadgen::LoadMode,
    crate::flowgraph::sched::Scheduler,
    crate::flowgraph::edge::Edges,
);

/// A doc comment as clap's derive turns it into a value's help: the first
/// paragraph on one line, without its closing period; none when empty.
fn value_help(doc: &str) -> Option<String> {
    let lines: Vec<&str> = doc
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        return None;
    }
    let mut help = lines.join(" ");
    if help.ends_with('.') && !help.ends_with("..") {
        help.pop();
    }
    Some(help)
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Round-trip latency matrix: requests of each --in size, replies of each --out size.
    Roundtrip(Box<RoundtripArgs>),
    /// Latency and bandwidth over message size (BIP, NetPIPE, OSU): one-way time, MB/s, a model fit.
    Curve(Box<CurveArgs>),
    /// Throughput of fio-style jobs: workers on files, block and character devices (DMA channels) or transports; fio job files, verify, poll vs interrupt, block-size sweeps.
    Stream(Box<StreamArgs>),
    /// Re-renders saved results (JSON) as an HTML report, SVG plots or tables, optionally beside published figures (--compare).
    Report(ReportArgs),
    /// Request rate under background CPU and memory load (rk11perf), and open-loop latency at offered rates.
    Load(Box<LoadArgs>),
    /// Streaming-runtime cost (the SDR runtime benchmark): source → M saxpy blocks → sink on N cores, per scheduler, against the kernel alone.
    Flowgraph(Box<FlowgraphArgs>),
    /// Lists every transport with its buffer and completion modes, limits, and whether it works here.
    List(ListArgs),
    /// Runs the responder for initiators on other machines (-t tcp://HOST:PORT); binds 127.0.0.1 unless told otherwise.
    Serve(ServeArgs),
    /// Published figures from the seed documents (Vollo, BIP, rk11perf, XDMA, qsdr), for --compare.
    Reference(ReferenceArgs),
    /// Device plugins (include/xferbench/plugin.h): `plugin check FILE.so` runs the conformance checks a plugin author needs.
    Plugin(PluginArgs),
    /// Runs a responder (started by xferbench itself; not for direct use).
    #[command(name = "__respond", hide = true)]
    Respond(RespondArgs),
}

fn ser_secs<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn ser_opt_secs<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

fn ser_specs<S: Serializer>(v: &[SpecList], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().flat_map(|l| l.0.iter()).map(|sp| sp.to_string()))
}

/// A parsed list of sizes (one flag value).
#[derive(Clone, Debug, Serialize)]
#[serde(transparent)]
pub struct Sizes(pub Vec<u64>);

/// The transports one `-t` value names.
#[derive(Clone, Debug)]
pub struct SpecList(pub Vec<Spec>);

/// `--cpus`: None = no pinning.
#[derive(Clone, Debug)]
pub struct CpuList(pub Option<Vec<usize>>);

fn size_list(s: &str) -> Result<Sizes, String> {
    units::parse_size_list(s)
        .map(Sizes)
        .map_err(|e| e.to_string())
}

fn duration(s: &str) -> Result<Duration, String> {
    units::parse_duration(s).map_err(|e| e.to_string())
}

fn specs(s: &str) -> Result<SpecList, String> {
    crate::transport::parse_specs(s)
        .map(SpecList)
        .map_err(|e| e.to_string())
}

fn cpus(s: &str) -> Result<CpuList, String> {
    if s.is_empty() {
        return Ok(CpuList(Some(Vec::new())));
    }
    units::parse_cpu_list(s)
        .map(CpuList)
        .map_err(|e| e.to_string())
}

fn count(s: &str) -> Result<u64, String> {
    let v = units::parse_size(s)
        .map_err(|_| format!("malformed count '{s}': expected a whole number like 1000 or 10k"))?;
    if v > 1_000_000_000 {
        return Err(format!("count {v} is absurdly large (limit 1e9)"));
    }
    Ok(v)
}

/// What to write and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Tables shaped like the seed documents'.
    Table,
    /// The lossless result, and nothing else, on stdout.
    Json,
    Csv,
}

/// Options every measuring experiment shares.
#[derive(Args, Debug, Clone, Serialize)]
pub struct CommonArgs {
    /// Transports to measure, with options: thread, shm, pipe, unix, unix-dgram, tcp, udp, cuda, plugin:path=FILE.so (see `xferbench list`); e.g. `-t thread:completion=block -t tcp:nodelay=0`.
    #[arg(short = 't', long = "transport", value_name = "SPEC", value_parser = specs, default_value = "thread")]
    #[serde(rename = "transports", serialize_with = "ser_specs")]
    pub transports: Vec<SpecList>,
    /// Buffer modes, comma-separated: user (caller's buffer, copied), raw (transport-owned, zero copy), inline (in the doorbell); cuda adds mmio (device polls mapped host memory) and graph (one CUDA graph launch); a plugin has those it declares. Default: user for roundtrip and load (a transport without it: its first mode); for curve, raw where the transport has it.
    #[arg(long, value_delimiter = ',')]
    pub buffers: Vec<BufferMode>,
    /// Completion modes, comma-separated: poll (spin) or block (sleep). Default: each transport's own.
    #[arg(long, value_delimiter = ',')]
    pub completion: Vec<CompletionMode>,
    /// CPUs for initiator and responder, e.g. 0,1; `none` disables pinning. Default: the first two available.
    #[arg(long, value_parser = cpus, default_value = "")]
    #[serde(skip)]
    pub cpus: CpuList,
    /// Untimed round trips before each point. Default: up to 1000 within 0.5 s.
    #[arg(long, value_parser = count)]
    pub warmup: Option<u64>,
    /// Timed round trips per point.
    #[arg(long, value_parser = count, conflicts_with = "duration")]
    pub samples: Option<u64>,
    /// Timed time per point instead of a sample count, e.g. 2s or 250ms.
    #[arg(long, value_parser = duration, visible_alias = "point-time")]
    #[serde(serialize_with = "ser_opt_secs", rename = "duration_s")]
    pub duration: Option<Duration>,
    /// The responder busy-waits this long before replying: a known delay to check accuracy against (e.g. 20us).
    #[arg(long, value_parser = duration, default_value = "0s")]
    #[serde(serialize_with = "ser_secs", rename = "responder_delay_s")]
    pub responder_delay: Duration,
    /// Give up on a responder that has not answered for this long.
    #[arg(long, value_parser = duration, default_value = "10s")]
    #[serde(serialize_with = "ser_secs", rename = "timeout_s")]
    pub timeout: Duration,
    /// Statistics to tabulate: count, mean, stddev, min, p50, p90, p99, p999, p9999, max.
    #[arg(long, value_delimiter = ',', default_value = "mean,p99")]
    pub stats: Vec<Stat>,
    #[command(flatten)]
    #[serde(flatten)]
    pub out: OutputArgs,
}

/// Where a measuring command's results go, and what is set beside them.
#[derive(Args, Debug, Clone, Serialize)]
pub struct OutputArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Write the output to this file instead of stdout (format from --format, or from the extension .json/.csv).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Put published figures beside the results in the tables (column and ratio): names from `xferbench reference list`.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub compare: Vec<String>,
}

impl OutputArgs {
    /// The format to write: `--format`, unless left at its default and the
    /// output file's extension says otherwise.
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

impl CommonArgs {
    pub fn specs(&self) -> Vec<Spec> {
        self.transports
            .iter()
            .flat_map(|l| l.0.iter())
            .cloned()
            .collect()
    }
}

#[derive(Args, Debug, Clone, Serialize)]
pub struct RoundtripArgs {
    /// Request sizes: a list and/or ranges, e.g. 32..8192 (powers of two), 64,1k,1M.
    #[arg(long = "in", value_name = "SIZES", value_parser = size_list, default_value = "64..16k")]
    #[serde(rename = "in")]
    pub in_sizes: Sizes,
    /// Reply sizes, as for --in.
    #[arg(long = "out", value_name = "SIZES", value_parser = size_list, default_value = "64..16k")]
    #[serde(rename = "out")]
    pub out_sizes: Sizes,
    /// What the sizes count: bytes, bf16 values (2 bytes) or f32 values (4 bytes).
    #[arg(long, value_enum, default_value = "bytes")]
    pub unit: Unit,
    #[command(flatten)]
    #[serde(flatten)]
    pub common: CommonArgs,
}

/// How messages are cut into packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chunk {
    /// Each message in one piece.
    Whole,
    /// Packets of this many bytes.
    Size(u64),
    /// A packet size chosen per message length by a rule derived from
    /// measurements of the transport.
    Adaptive,
}

impl Chunk {
    pub fn name(self) -> String {
        match self {
            Chunk::Whole => "whole".into(),
            Chunk::Size(n) => units::format_size(n),
            Chunk::Adaptive => "adaptive".into(),
        }
    }
}

impl Serialize for Chunk {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Chunk::Size(n) => s.serialize_u64(*n),
            c => s.serialize_str(&c.name()),
        }
    }
}

fn chunk(s: &str) -> Result<Chunk, String> {
    match s.trim() {
        "adaptive" => Ok(Chunk::Adaptive),
        "whole" | "none" | "0" => Ok(Chunk::Whole),
        v => units::parse_size(v).map(Chunk::Size).map_err(|_| {
            format!("malformed chunk '{v}': expected a size like 4k, 'adaptive' or 'whole'")
        }),
    }
}

/// What a message carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum PayloadMode {
    /// Whatever is in the buffer: the transfer alone is timed.
    Raw,
    /// The sender fills every message with pseudo-random values and the
    /// receiver checks every one, inside the timed span (BIP's "real usage").
    FillCheck,
}

/// Where the two-segment fit splits the curve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakpointArg {
    None,
    Auto,
    Size(u64),
}

impl Serialize for BreakpointArg {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            BreakpointArg::None => s.serialize_str("none"),
            BreakpointArg::Auto => s.serialize_str("auto"),
            BreakpointArg::Size(n) => s.serialize_u64(*n),
        }
    }
}

fn breakpoint(s: &str) -> Result<BreakpointArg, String> {
    match s.trim() {
        "auto" => Ok(BreakpointArg::Auto),
        "none" => Ok(BreakpointArg::None),
        v => units::parse_size(v).map(BreakpointArg::Size).map_err(|_| {
            format!("malformed breakpoint '{v}': expected auto, none or a size like 64k")
        }),
    }
}

#[derive(Args, Debug, Clone, Serialize)]
pub struct CurveArgs {
    /// Message sizes: lists and ranges as for roundtrip; 0..8M = 0 and every power of two to 8 MiB.
    #[arg(long, value_name = "SIZES", value_parser = size_list, default_value = "0..8M")]
    pub sizes: Sizes,
    /// Also measure each size N bytes below and above it (NetPIPE's perturbation, to expose alignment effects).
    #[arg(long, value_name = "N", value_parser = count, default_value = "0")]
    pub perturb: u64,
    /// pingpong: one-way = half the round trip; stream: a window of messages one way, then an acknowledgement (osu_bw); bidir: a window each way at once.
    #[arg(long, value_enum, default_value = "pingpong")]
    pub mode: crate::transport::Pattern,
    /// Messages in flight per exchange in stream and bidir modes.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=65536), default_value = "64")]
    pub window: u32,
    /// raw: time the transfer; fill-check: fill every message with values and check every value received.
    #[arg(long, value_enum, default_value = "raw")]
    pub payload: PayloadMode,
    /// Cut messages into packets sent back to back: a size (e.g. 4k), whole (or 0), or adaptive.
    #[arg(long, value_parser = chunk, default_value = "whole")]
    pub chunk: Chunk,
    /// Measure the curve once per packetization strategy and tabulate bandwidth side by side, e.g. 256,4096,adaptive.
    #[arg(long, value_delimiter = ',', value_parser = chunk, conflicts_with = "chunk")]
    pub compare_chunks: Vec<Chunk>,
    /// Fit two segments of t(n) = t0 + n/r∞, split where the protocol changes: auto, none, or a size.
    #[arg(long, value_parser = breakpoint, default_value = "auto")]
    pub breakpoint: BreakpointArg,
    #[command(flatten)]
    #[serde(flatten)]
    pub common: CommonArgs,
}

/// Rates in requests/s: `1000`, `10k`, `2.5M` (decimal prefixes), comma-separated.
fn rates(s: &str) -> Result<Rates, String> {
    let mut v = Vec::new();
    for item in s.split(',').map(str::trim) {
        let (num, mul) = match item.chars().last() {
            Some('k' | 'K') => (&item[..item.len() - 1], 1e3),
            Some('M') => (&item[..item.len() - 1], 1e6),
            _ => (item, 1.0),
        };
        let r = num.parse::<f64>().ok().map(|x| x * mul).filter(|r| r.is_finite() && *r > 0.0 && *r <= 1e8)
            .ok_or_else(|| format!("malformed rate '{item}': expected requests/s like 1000, 10k or 2.5M (up to 100M)"))?;
        v.push(r);
    }
    Ok(Rates(v))
}

/// Offered rates, requests/s.
#[derive(Clone, Debug, Serialize)]
#[serde(transparent)]
pub struct Rates(pub Vec<f64>);

/// Which way the data of a load request goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum DataDirection {
    /// The responder sends the data (the device writes memory, as an RK11 read).
    Read,
    /// The initiator sends the data.
    Write,
}

/// When open-loop requests are due.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Evenly spaced, 1/R apart.
    Fixed,
    /// Exponential gaps with mean 1/R (a Poisson process).
    Poisson,
}

#[derive(Args, Debug, Clone, Serialize)]
pub struct LoadArgs {
    /// Transfer sizes (rk11perf: 1..32 disk blocks of 512 B).
    #[arg(long, value_parser = size_list, default_value = "512,1k,2k,4k,8k,16k")]
    pub sizes: Sizes,
    /// Background loads, each in turn: idle, wait, alu, slow, memcopy.
    #[arg(
        long = "load",
        value_enum,
        value_delimiter = ',',
        default_value = "idle,wait,alu,slow,memcopy"
    )]
    #[serde(rename = "loads")]
    pub loads: Vec<crate::loadgen::LoadMode>,
    /// read: the responder sends the data; write: the initiator sends it.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "read,write")]
    pub direction: Vec<DataDirection>,
    /// Requests in flight in the closed loop: this many clients, each with its own link.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64), default_value = "1")]
    pub inflight: u32,
    /// Measuring time of each cell (one size under one load).
    #[arg(long, value_parser = duration, default_value = "1s")]
    #[serde(serialize_with = "ser_secs", rename = "cell_time_s")]
    pub cell_time: Duration,
    /// CPUs for the load threads (default: those the initiator and responder do not use; all of them on a machine that has no others).
    #[arg(long, value_parser = cpus)]
    #[serde(skip)]
    pub load_cpus: Option<CpuList>,
    /// Run this shell command as the load instead (e.g. "stress-ng --cpu 2"); it is killed after each run.
    #[arg(long, value_name = "CMD")]
    pub load_cmd: Option<String>,
    /// Open loop: offer this many requests/s and time each from when it was due.
    #[arg(long, value_parser = rates, conflicts_with = "rates")]
    pub rate: Option<Rates>,
    /// Open loop over several offered rates (the knee): 1k,10k,100k.
    #[arg(long, value_parser = rates)]
    pub rates: Option<Rates>,
    /// Open-loop arrivals: fixed spacing or Poisson.
    #[arg(long, value_enum, default_value = "fixed")]
    pub arrival: Arrival,
    #[command(flatten)]
    #[serde(flatten)]
    pub common: CommonArgs,
}

/// Whole numbers from one flag value.
#[derive(Clone, Debug, Serialize)]
#[serde(transparent)]
pub struct Counts(pub Vec<usize>);

/// Whole numbers: `1..4` (every value), `2,4,6`, or both mixed.
fn counts(s: &str) -> Result<Counts, String> {
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
    Ok(Counts(v))
}

fn items(s: &str) -> Result<u64, String> {
    let v = units::parse_size(s).map_err(|_| {
        format!("malformed item count '{s}': expected a whole number like 100000000 or 64M")
    })?;
    if v == 0 || v > 10_000_000_000_000 {
        return Err(format!("item count {v} out of range (1..1e13)"));
    }
    Ok(v)
}

/// `word` or a count from 1 to `max`, for the options that take either.
fn count_or(s: &str, word: &str, max: usize, opt: &str) -> Result<String, String> {
    if s == word || s.parse::<usize>().is_ok_and(|n| (1..=max).contains(&n)) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "{opt} '{s}': expected {word} or a number from 1 to {max}"
        ))
    }
}

fn buffer_count(s: &str) -> Result<String, String> {
    count_or(s, "N+1", 64, "--buffers")
}

fn edge_buffer_count(s: &str) -> Result<String, String> {
    count_or(s, "auto", 4096, "--edge-buffers")
}

#[derive(Args, Debug, Clone, Serialize)]
pub struct FlowgraphArgs {
    /// Core counts N to sweep: 1..2, or a list (default: 1 up to the CPUs available).
    #[arg(long, value_name = "N", value_parser = counts)]
    pub cores: Option<Counts>,
    /// Saxpy blocks M for every N: a range or list (default: N..3N for each N, as the seed).
    #[arg(long, value_name = "M", value_parser = counts)]
    pub blocks: Option<Counts>,
    /// Schedulers (default: every one that applies; seq only on one core).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub scheduler: Vec<crate::flowgraph::sched::Scheduler>,
    /// Edges between blocks: circular buffers (one per edge, double-mapped), whole buffers handed off round a circuit (as qsdr), or both.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "circular,handoff"
    )]
    pub edges: Vec<crate::flowgraph::edge::Edges>,
    /// Bytes each block moves per call, and the size of one ring buffer (the seed's 16 KiB).
    #[arg(long, value_parser = size_one, default_value = "16k")]
    pub buffer_size: u64,
    /// Buffers circulating in the ring reference and in a handoff circuit: N+1 as in the seed (a circuit then holds --edge-buffers more per edge between cores under static, and --edge-buffers per edge under thread-per-block, tokio or async-executor, as its circular buffers do), or a number.
    #[arg(long, value_parser = buffer_count, default_value = "N+1")]
    pub buffers: String,
    /// Capacity, in buffers, of a circular buffer between blocks that may run on different threads: auto (enough for twice the CPU's L2 cache, so a consumer's copy of a line has left its private cache before the producer writes it again; at least 2), or a number up to 4096. One between blocks on one thread holds one buffer.
    #[arg(long, value_parser = edge_buffer_count, default_value = "auto")]
    pub edge_buffers: String,
    /// Measuring time per point, after the warm-up.
    #[arg(long, value_parser = duration, default_value = "500ms")]
    #[serde(serialize_with = "ser_secs", rename = "duration_s")]
    pub duration: Duration,
    /// Time each point runs before it is measured.
    #[arg(long, value_parser = duration, default_value = "150ms")]
    #[serde(serialize_with = "ser_secs", rename = "warmup_s")]
    pub warmup: Duration,
    /// Rounds per (N, M): each scheduler measures 1/R of --duration in turn with the others, R times, so a slow second of the host falls on all alike (the first round warms up for --warmup, later ones for a third of it).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=50), default_value = "3")]
    pub rounds: u32,
    /// Stop each point after the source made this many items, instead of after --duration.
    #[arg(long, value_parser = items)]
    pub items: Option<u64>,
    /// CPUs to use, in order (default: those this process may run on).
    #[arg(long, value_parser = cpus, default_value = "")]
    #[serde(skip)]
    pub cpus: CpuList,
    /// Buffer sizes of the kernel-only scan (the seed's scan-buffer-size).
    #[arg(long, value_parser = size_list, default_value = "256..8M")]
    pub kernel_sizes: Sizes,
    /// The Saxpy kernel every block and reference runs: auto (the widest this CPU has), avx512, avx2+fma, neon or portable; a narrower one to compare with a machine or peer that lacks the wider.
    #[arg(long, value_parser = kernel_choice, default_value = "auto")]
    pub kernel: String,
    /// Give up on a scheduler that has not wound down this long after being stopped.
    #[arg(long, value_parser = duration, default_value = "10s")]
    #[serde(serialize_with = "ser_secs", rename = "timeout_s")]
    pub timeout: Duration,
    #[command(flatten)]
    #[serde(flatten)]
    pub out: OutputArgs,
}

fn kernel_choice(s: &str) -> Result<String, String> {
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

fn size_one(s: &str) -> Result<u64, String> {
    let v = units::parse_size(s).map_err(|e| e.to_string())?;
    if !(64..=(64 << 20)).contains(&v) || v % 64 != 0 {
        return Err(format!(
            "'{s}': the buffer size must be a multiple of 64 bytes from 64 B to 64 MiB"
        ));
    }
    Ok(v)
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Only these transports, with their options: e.g. `-t plugin:path=./echo.so` prints a plugin's capabilities and probes it.
    #[arg(short = 't', long = "transport", value_parser = specs)]
    pub transports: Vec<SpecList>,
    /// Skip the check that each transport really works here (faster).
    #[arg(long)]
    pub no_probe: bool,
}

#[derive(Args, Debug)]
pub struct PluginArgs {
    #[command(subcommand)]
    pub action: PluginAction,
}

#[derive(Subcommand, Debug)]
pub enum PluginAction {
    /// Exercises every capability a plugin declares (buffer and completion modes, reply lengths and contents, tags, queue depth, refusals, delay, close with jobs in flight); exit 1 on any failure.
    Check(PluginCheckArgs),
}

#[derive(Args, Debug)]
pub struct PluginCheckArgs {
    /// The plugin's shared library.
    pub path: PathBuf,
    /// Options for the plugin's open, as key=value (e.g. depth=4 h2c=/dev/xdma0_h2c_0).
    #[arg(value_name = "KEY=VALUE")]
    pub options: Vec<String>,
    /// A job that has not completed after this long fails the check.
    #[arg(long, value_parser = duration, default_value = "2s")]
    pub timeout: Duration,
    /// table: verdict lines; json: the verdicts as one JSON object on stdout.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address and port to listen on (0.0.0.0:PORT for every interface).
    #[arg(long, default_value = "127.0.0.1:5290")]
    pub listen: String,
    /// Shared secret clients must present (they set XFERBENCH_TOKEN); also read from XFERBENCH_TOKEN.
    #[arg(long)]
    pub token: Option<String>,
    /// Largest message a client may use; checked before anything is allocated.
    #[arg(long, value_parser = size_one_message, default_value = "64M")]
    pub max_message: u64,
    /// Clients served at once; more are refused as busy.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024), default_value = "16")]
    pub max_sessions: u32,
    /// A client silent this long (mid-frame or between runs) loses its connection.
    #[arg(long, value_parser = duration, default_value = "30s")]
    pub idle_timeout: Duration,
    /// Serve one client, then exit.
    #[arg(long)]
    pub once: bool,
}

fn size_one_message(s: &str) -> Result<u64, String> {
    let v = units::parse_size(s).map_err(|e| e.to_string())?;
    if v == 0 || v > units::MAX_SIZE {
        return Err(format!("--max-message {s}: must be from 1 byte to 1 GiB"));
    }
    Ok(v)
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Results files written with --format json (or -o FILE.json).
    #[arg(required = true, value_name = "RUN.json")]
    pub runs: Vec<PathBuf>,
    /// Write a self-contained DIR/index.html (inline SVG, no network).
    #[arg(long, value_name = "DIR")]
    pub html: Option<PathBuf>,
    /// Write one SVG per figure into DIR.
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// Put a published dataset beside the measurement (names: `xferbench reference list`); repeatable or comma-separated.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub compare: Vec<String>,
    /// Title of the HTML page.
    #[arg(long, default_value = "xferbench report")]
    pub title: String,
}

#[derive(Args, Debug)]
pub struct ReferenceArgs {
    #[command(subcommand)]
    pub action: ReferenceAction,
}

#[derive(Subcommand, Debug)]
pub enum ReferenceAction {
    /// Lists the reference datasets: name, experiment it compares with, size, source.
    List {
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
    },
    /// Prints one dataset, shaped as its source document's table.
    Show {
        /// A name from `xferbench reference list`.
        name: String,
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
    },
}

#[derive(Args, Debug)]
pub struct RespondArgs {
    #[arg(long, value_parser = specs)]
    pub spec: SpecList,
    #[arg(long, value_enum)]
    pub completion: CompletionMode,
    #[arg(long)]
    pub cpu: Option<usize>,
}

fn map_pair(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((a, b)) if !a.trim().is_empty() && !b.trim().is_empty() => {
            Ok((a.trim().to_string(), b.trim().to_string()))
        }
        _ => Err(format!(
            "malformed map '{s}': expected OLD=NEW, as in /dev/xdma0_h2c_0=/tmp/card0"
        )),
    }
}

fn set_pair(s: &str) -> Result<(String, Option<String>), String> {
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

#[derive(Args, Debug, Clone, Serialize)]
pub struct StreamArgs {
    /// A fio job file to run ([global] and job sections, fio's options).
    #[arg(long, value_name = "FILE.fio")]
    pub job: Option<PathBuf>,
    /// Rewrite a filename before opening it, so a device job runs on ordinary files: --map /dev/xdma0_h2c_0=/tmp/card (repeatable).
    #[arg(long, value_name = "OLD=NEW", value_parser = map_pair)]
    pub map: Vec<(String, String)>,
    /// Set a fio option on every job, after the job file's own: --set size=64m (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = set_pair)]
    pub set: Vec<(String, Option<String>)>,
    /// Options xferbench does not support are errors instead of warnings.
    #[arg(long)]
    pub strict: bool,
    /// Job name for a job given by flags.
    #[arg(long)]
    pub name: Option<String>,
    /// Target: a file, a block or character device, or xfer:TRANSPORT (e.g. xfer:tcp) for a one-way stream.
    #[arg(long)]
    pub filename: Option<String>,
    /// read, write, randread, randwrite, rw, randrw.
    #[arg(long)]
    pub rw: Option<String>,
    /// Block size, or several to sweep (4k..2m doubles, or a list 4k,64k,1m): one table row per size.
    #[arg(long, value_name = "SIZE|SIZES")]
    pub bs: Option<String>,
    /// Bytes per job (fio suffixes: k, m, g, t are powers of 1024).
    #[arg(long)]
    pub size: Option<String>,
    #[arg(long)]
    pub offset: Option<String>,
    /// Size of the target when it reports none (character devices) or is created.
    #[arg(long)]
    pub filesize: Option<String>,
    #[arg(long)]
    pub numjobs: Option<String>,
    /// I/Os in flight per job (io_uring; psync and mmap do one at a time).
    #[arg(long)]
    pub iodepth: Option<String>,
    /// psync, io_uring, mmap (libaio runs as io_uring).
    #[arg(long)]
    pub ioengine: Option<String>,
    /// Buffers: malloc, mmap, mmaphuge.
    #[arg(long)]
    pub iomem: Option<String>,
    /// O_DIRECT (1) or buffered (0).
    #[arg(long, value_name = "0|1")]
    pub direct: Option<String>,
    /// Write a header and checksum into every block and check them on read: xxhash or crc32c.
    #[arg(long)]
    pub verify: Option<String>,
    /// interrupt (sleep until woken) or poll (spin; io_uring hipri/sqthread_poll add kernel polling).
    #[arg(long)]
    pub completion: Option<String>,
    /// Stop each job after this long (fio's runtime; with --time-based, run exactly this long).
    #[arg(long)]
    pub runtime: Option<String>,
    /// Loop over the region until --runtime has passed.
    #[arg(long)]
    pub time_based: bool,
    /// Cap each job's bandwidth (bytes per second, e.g. 100m).
    #[arg(long)]
    pub rate: Option<String>,
    /// Give up on an I/O that has not completed for this long.
    #[arg(long, value_parser = duration, default_value = "10s")]
    #[serde(serialize_with = "ser_secs", rename = "timeout_s")]
    pub timeout: Duration,
    #[command(flatten)]
    #[serde(flatten)]
    pub out: OutputArgs,
}

impl StreamArgs {
    /// The flags given, as fio options applied to every job (after the job
    /// file's own), then the `--set` ones. `--bs` is left to [`Self::bs_list`].
    pub fn overrides(&self) -> Vec<(String, Option<String>)> {
        let mut o: Vec<(String, Option<String>)> = Vec::new();
        let flags: [(&str, &Option<String>); 14] = [
            ("filename", &self.filename),
            ("rw", &self.rw),
            ("size", &self.size),
            ("offset", &self.offset),
            ("filesize", &self.filesize),
            ("numjobs", &self.numjobs),
            ("iodepth", &self.iodepth),
            ("ioengine", &self.ioengine),
            ("iomem", &self.iomem),
            ("direct", &self.direct),
            ("verify", &self.verify),
            ("completion", &self.completion),
            ("runtime", &self.runtime),
            ("rate", &self.rate),
        ];
        for (k, v) in flags {
            if let Some(v) = v {
                o.push((k.to_string(), Some(v.clone())));
            }
        }
        if self.time_based {
            o.push(("time_based".into(), None));
        }
        o.extend(self.set.iter().cloned());
        o
    }

    /// Block sizes to sweep (empty: no --bs, the jobs' own).
    pub fn bs_list(&self) -> crate::error::Result<Vec<u64>> {
        let Some(b) = &self.bs else {
            return Ok(Vec::new());
        };
        if b.contains("..") || b.contains(',') {
            units::parse_size_list(b)
        } else {
            Ok(vec![crate::jobfile::parse_fio_size(b).map_err(|e| {
                crate::error::Error::usage(format!("--bs {b}: {e}"))
            })?])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_enums_give_clap_their_words_and_first_doc_paragraph() {
        let names: Vec<_> = Stat::value_variants()
            .iter()
            .map(|s| s.to_possible_value().unwrap().get_name().to_string())
            .collect();
        assert_eq!(names[7..9], ["p999", "p9999"]);
        assert!(Stat::Mean.to_possible_value().unwrap().get_help().is_none());
        let memcopy = crate::loadgen::LoadMode::Memcopy
            .to_possible_value()
            .unwrap();
        assert_eq!(
            memcopy.get_help().unwrap().to_string(),
            "Copies between buffers twice the last-level cache: maximal contention for caches and memory bandwidth"
        );
        assert_eq!(value_help(" One.\n\n Two.\n").as_deref(), Some("One"));
        assert_eq!(value_help(" Etc..\n").as_deref(), Some("Etc.."));
    }
}
