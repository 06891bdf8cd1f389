//! The flags of each subcommand, as clap sees them, and their conversion
//! into the plain settings the library reads (`options`,
//! `command::serve::ServeConfig`, …). Values are parsed into typed options here, so
//! a malformed size or duration is a usage error before anything runs; the
//! parsers are the library's own, so a program that fills the settings in
//! gets the same checks from their `validate`.

use super::defaults as D;
use super::word;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Duration;
use xferbench::format::Format;
use xferbench::measure::fit::Breakpoint;
use xferbench::measure::placement::Cpus;
use xferbench::measure::stats::Stat;
use xferbench::options::{
    self as opt, Amount, Common, CurveConfig, FlowgraphConfig, LoadConfig, Output, PayloadMode,
    RoundtripConfig, STREAM_FLAGS, StreamConfig, StreamFlags,
};
use xferbench::transport::{BufferMode, CompletionMode, Spec};
use xferbench::units::{self, Chunk, Unit};

/// A parsed list of sizes (one flag value).
#[derive(Clone, Debug)]
pub struct Sizes(pub Vec<u64>);

/// The transports one `-t` value names.
#[derive(Clone, Debug)]
pub struct SpecList(pub Vec<Spec>);

/// Offered rates, requests/s (one flag value).
#[derive(Clone, Debug)]
pub struct Rates(pub Vec<f64>);

/// Whole numbers from one flag value.
#[derive(Clone, Debug)]
pub struct Counts(pub Vec<usize>);

fn size_list(s: &str) -> Result<Sizes, String> {
    units::parse_size_list(s)
        .map(Sizes)
        .map_err(|e| e.to_string())
}

fn duration(s: &str) -> Result<Duration, String> {
    units::parse_duration(s).map_err(|e| e.to_string())
}

pub(super) fn specs(s: &str) -> Result<SpecList, String> {
    xferbench::transport::parse_specs(s)
        .map(SpecList)
        .map_err(|e| e.to_string())
}

fn cpus(s: &str) -> Result<Cpus, String> {
    s.parse()
        .map_err(|e: xferbench::error::Error| e.to_string())
}

fn count(s: &str) -> Result<u64, String> {
    opt::parse_count(s)
}

fn chunk(s: &str) -> Result<Chunk, String> {
    s.parse()
}

fn breakpoint(s: &str) -> Result<Breakpoint, String> {
    s.parse()
}

fn rates(s: &str) -> Result<Rates, String> {
    opt::parse_rates(s).map(Rates)
}

fn counts(s: &str) -> Result<Counts, String> {
    opt::parse_counts(s).map(Counts)
}

fn items(s: &str) -> Result<u64, String> {
    opt::parse_items(s)
}

fn buffer_count(s: &str) -> Result<String, String> {
    opt::parse_buffer_count(s)
}

fn edge_buffer_count(s: &str) -> Result<String, String> {
    opt::parse_edge_buffer_count(s)
}

fn kernel_choice(s: &str) -> Result<String, String> {
    opt::parse_kernel(s)
}

fn size_one(s: &str) -> Result<u64, String> {
    opt::parse_buffer_size(s)
}

fn map_pair(s: &str) -> Result<(String, String), String> {
    opt::parse_map_pair(s)
}

fn set_pair(s: &str) -> Result<(String, Option<String>), String> {
    opt::parse_set_pair(s)
}

fn flat(lists: Vec<SpecList>) -> Vec<Spec> {
    lists.into_iter().flat_map(|l| l.0).collect()
}

/// Options every measuring experiment shares.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Transports to measure, with options: thread, shm, pipe, unix, unix-dgram, tcp, udp, cuda, plugin:path=FILE.so (see `xferbench list`); e.g. `-t thread:completion=block -t tcp:nodelay=0`.
    #[arg(short = 't', long = "transport", value_name = "SPEC", value_parser = specs, default_value = D::TRANSPORTS.as_str())]
    pub transports: Vec<SpecList>,
    /// Buffer modes, comma-separated: user (the caller's buffer, copied per message), raw (memory the transport or device owns, filled in place: zero copy), inline (the payload in the doorbell cache lines: thread, shm), mmio (the request written into a mapped window: for a plugin, device memory such as a BAR that the CPU writes into; for cuda, host memory the GPU polls), graph (cuda: one CUDA graph launch per request). Each transport offers some (`xferbench list`); a plugin those it declares. Default: user for roundtrip and load (a transport without it: its first mode); for curve, raw where the transport has it.
    #[arg(long, value_parser = word::<BufferMode>(), value_delimiter = ',')]
    pub buffers: Vec<BufferMode>,
    /// Completion modes, comma-separated: poll (spin) or block (sleep). Default: each transport's own.
    #[arg(long, value_parser = word::<CompletionMode>(), value_delimiter = ',')]
    pub completion: Vec<CompletionMode>,
    /// CPUs for initiator and responder, e.g. 0,1; `none` disables pinning. Default: the first two available.
    #[arg(long, value_parser = cpus, default_value = D::CPUS.as_str())]
    pub cpus: Cpus,
    // The help names the warm-up `sample` makes when given no count;
    // `load` puts its own in place (cli/mod.rs).
    #[arg(long, value_parser = count, help = warmup_help())]
    pub warmup: Option<u64>,
    // The help names each experiment's default from its config.
    #[arg(long, value_parser = count, conflicts_with = "duration", help = samples_help())]
    pub samples: Option<u64>,
    /// Timed time per point instead of a sample count, e.g. 2s or 250ms: samples are taken until it has passed.
    #[arg(long, value_parser = duration, visible_alias = "point-time")]
    pub duration: Option<Duration>,
    /// The responder busy-waits this long before replying: a known delay to check accuracy against (e.g. 20us).
    #[arg(long, value_parser = duration, default_value = D::RESPONDER_DELAY.as_str())]
    pub responder_delay: Duration,
    /// Give up on a responder that has not answered for this long.
    #[arg(long, value_parser = duration, default_value = D::TIMEOUT.as_str())]
    pub timeout: Duration,
    /// Statistics to tabulate: count, mean, stddev, min, p50, p90, p99, p999, p9999, max.
    #[arg(long, value_parser = word::<Stat>(), value_delimiter = ',', default_value = D::STATS.as_str())]
    pub stats: Vec<Stat>,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Where a measuring command's results go, and what is set beside them.
#[derive(Args, Debug, Clone)]
pub struct OutputArgs {
    /// Output format.
    #[arg(long, value_parser = word::<Format>(), default_value = D::FORMAT.as_str())]
    pub format: Format,
    #[command(flatten)]
    pub rest: OutputRest,
}

/// `stream`'s output: xferbench's formats and fio's (json+, terse).
#[derive(Args, Debug, Clone)]
pub struct StreamOutputArgs {
    /// Output format: table, json (fio's keys and xferbench's), json+ (json with fio's clat_ns.bins), terse (fio's terse v3 lines), csv.
    #[arg(long, value_name = "FORMAT", value_parser = stream_format, default_value = D::STREAM_FORMAT.as_str())]
    pub format: StreamFormat,
    #[command(flatten)]
    pub rest: OutputRest,
}

/// A `stream` output format: the form written, and fio's own where it is
/// one xferbench's formats lack.
#[derive(Clone, Copy, Debug)]
pub struct StreamFormat(pub Format, pub Option<xferbench::options::FioOutput>);

/// `stream --format`: xferbench's words, fio's json+ and terse, and fio's
/// `normal` for the table.
fn stream_format(s: &str) -> Result<StreamFormat, String> {
    use xferbench::options::FioOutput;
    match s {
        "json+" => Ok(StreamFormat(Format::Json, Some(FioOutput::JsonPlus))),
        "terse" => Ok(StreamFormat(Format::Json, Some(FioOutput::Terse))),
        "normal" => Ok(StreamFormat(Format::Table, None)),
        _ => s.parse::<Format>().map(|f| StreamFormat(f, None)).map_err(|_| {
            format!("'{s}' is not a stream output format: table (or normal), json, json+, terse, csv")
        }),
    }
}

/// Where a measuring command's results go besides its format.
#[derive(Args, Debug, Clone)]
pub struct OutputRest {
    /// Write the output to this file instead of stdout (format from --format, or from the extension .json/.csv).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Put published figures beside the results in the tables (column and ratio): names from `xferbench reference list`.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub compare: Vec<String>,
    /// Run the whole sweep K times, one sweep after another (A B C A B C), and keep every repeat's figures: what `xferbench compare` needs to tell run-to-run noise from a change (5 for a CI gate).
    #[arg(long, value_name = "K", default_value = D::REPEAT.as_str(), value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Also store the result as the baseline NAME (in $XFERBENCH_BASELINE_DIR, else .xferbench/baselines).
    #[arg(long, value_name = "NAME")]
    pub save_baseline: Option<String>,
    /// Compare the result with the baseline NAME saved before (as `xferbench compare` does; exit 1 on a regression).
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct RoundtripArgs {
    /// Request sizes: a list and/or ranges, e.g. 32..8192 (powers of two), 64,1k,1M.
    #[arg(long = "in", value_name = "SIZES", value_parser = size_list, default_value = D::ROUNDTRIP_IN.as_str())]
    pub in_sizes: Sizes,
    /// Reply sizes, as for --in.
    #[arg(long = "out", value_name = "SIZES", value_parser = size_list, default_value = D::ROUNDTRIP_OUT.as_str())]
    pub out_sizes: Sizes,
    /// What the sizes count: bytes, bf16 values (2 bytes) or f32 values (4 bytes).
    #[arg(long, value_parser = word::<Unit>(), default_value = D::ROUNDTRIP_UNIT.as_str())]
    pub unit: Unit,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Args, Debug, Clone)]
pub struct CurveArgs {
    /// Message sizes: lists and ranges as for roundtrip; 0..8M = 0 and every power of two to 8 MiB.
    #[arg(long, value_name = "SIZES", value_parser = size_list, default_value = D::CURVE_SIZES.as_str())]
    pub sizes: Sizes,
    /// Also measure each size N bytes below and above it (NetPIPE's perturbation, to expose alignment effects).
    #[arg(long, value_name = "N", value_parser = count, default_value = D::CURVE_PERTURB.as_str())]
    pub perturb: u64,
    /// pingpong: one-way = half the round trip; stream: a window of messages one way, then an acknowledgement (osu_bw); bidir: a window each way at once.
    #[arg(long, value_parser = word::<xferbench::transport::Pattern>(), default_value = D::CURVE_MODE.as_str())]
    pub mode: xferbench::transport::Pattern,
    /// Messages in flight per exchange in stream and bidir modes.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=65536), default_value = D::CURVE_WINDOW.as_str())]
    pub window: u32,
    /// --mode stream: write = initiator to responder (host to device, H2C); read = responder to initiator (device to host, C2H: tiny requests, whole messages back); write,read = both curves.
    #[arg(long, value_parser = word::<opt::DataDirection>(), value_delimiter = ',', default_value = D::CURVE_DIRECTION.as_str())]
    pub direction: Vec<opt::DataDirection>,
    /// raw: time the transfer; fill-check: fill every message with values and check every value received.
    #[arg(long, value_parser = word::<PayloadMode>(), default_value = D::CURVE_PAYLOAD.as_str())]
    pub payload: PayloadMode,
    /// Cut messages into packets sent back to back: a size (e.g. 4k), whole (or 0), or adaptive.
    #[arg(long, value_parser = chunk, default_value = D::CURVE_CHUNK.as_str())]
    pub chunk: Chunk,
    /// Measure the curve once per packetization strategy and tabulate bandwidth side by side, e.g. 256,4096,adaptive.
    #[arg(long, value_delimiter = ',', value_parser = chunk, conflicts_with = "chunk")]
    pub compare_chunks: Vec<Chunk>,
    /// Fit two segments of t(n) = t0 + n/r∞, split where the protocol changes: auto, none, or a size.
    #[arg(long, value_parser = breakpoint, default_value = D::CURVE_BREAKPOINT.as_str())]
    pub breakpoint: Breakpoint,
    /// -t mpi: K sender ranks (0..K) stream to K receivers (K..2K) at once, osu_mbw_mr's pattern: aggregate bandwidth and message rate per size, and per pair.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub pairs: Option<u32>,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Args, Debug, Clone)]
pub struct MeshArgs {
    /// The transport: mpi, the one that spans ranks (run under mpirun -n N or srun).
    #[arg(
        short = 't',
        long = "transport",
        value_name = "NAME",
        default_value = D::MESH_TRANSPORT.as_str()
    )]
    pub transport: String,
    /// Message size of the latency matrices (one-way, half a ping-pong).
    #[arg(long, value_name = "SIZE", value_parser = size_any, default_value = D::MESH_LATENCY_SIZE.as_str())]
    pub latency_size: u64,
    /// Message size of the bandwidth matrix.
    #[arg(long, value_name = "SIZE", value_parser = size_any, default_value = D::MESH_BANDWIDTH_SIZE.as_str())]
    pub bandwidth_size: u64,
    /// A short sweep per pair instead: latency and bandwidth at each size, e.g. 8,4k,1M.
    #[arg(long, value_name = "SIZES", value_parser = size_list)]
    pub sizes: Option<Sizes>,
    /// Messages in flight per bandwidth window (osu_bw).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=65536), default_value = D::MESH_WINDOW.as_str())]
    pub window: u32,
    /// Timed time of each measurement (one pair, one direction, one size).
    #[arg(long, value_parser = duration, default_value = D::MESH_DURATION.as_str())]
    pub duration: Duration,
    /// Run all pairs of a round at once, to expose contention in the fabric (default: one pair at a time).
    #[arg(long)]
    pub concurrent: bool,
    /// Report suspects without measuring them again first.
    #[arg(long)]
    pub no_retest: bool,
    /// Health gate: exit 1 when a pair's bandwidth is below this (MB/s, or 5GB/s, 100Gb/s).
    #[arg(long, value_name = "RATE", value_parser = opt::parse_bandwidth)]
    pub min_bandwidth: Option<f64>,
    /// Health gate: exit 1 when a pair's median one-way latency is above this, e.g. 5us.
    #[arg(long, value_name = "TIME", value_parser = duration)]
    pub max_latency: Option<Duration>,
    /// Give up on a rank silent this long (beyond the time its work takes).
    #[arg(long, value_parser = duration, default_value = D::MESH_TIMEOUT.as_str())]
    pub timeout: Duration,
    /// Slow one rank on purpose, before every message it sends, e.g. 2:200us: checks that the outlier rule finds it.
    #[arg(long, value_name = "RANK:DELAY", value_parser = opt::parse_rank_delay)]
    pub inject_delay: Option<(usize, Duration)>,
    /// Testing: this rank stops answering in the second round.
    #[arg(long, value_name = "RANK", hide = true)]
    pub inject_stall: Option<usize>,
    #[command(flatten)]
    pub out: OutputArgs,
}

fn size_any(s: &str) -> Result<u64, String> {
    units::parse_size(s).map_err(|e| e.to_string())
}

#[derive(Args, Debug, Clone)]
pub struct LoadArgs {
    /// Transfer sizes (rk11perf: 1..32 disk blocks of 512 B).
    #[arg(long, value_parser = size_list, default_value = D::LOAD_SIZES.as_str())]
    pub sizes: Sizes,
    /// Background loads, each in turn: idle, wait, alu, slow, memcopy.
    #[arg(
        long = "load",
        value_parser = word::<xferbench::measure::loadgen::LoadMode>(),
        value_delimiter = ',',
        default_value = D::LOAD_LOADS.as_str()
    )]
    pub loads: Vec<xferbench::measure::loadgen::LoadMode>,
    /// read: the responder sends the data; write: the initiator sends it.
    #[arg(long, value_parser = word::<opt::DataDirection>(), value_delimiter = ',', default_value = D::LOAD_DIRECTION.as_str())]
    pub direction: Vec<opt::DataDirection>,
    /// Requests in flight in the closed loop: this many clients, each with its own link.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64), default_value = D::LOAD_INFLIGHT.as_str())]
    pub inflight: u32,
    /// Measuring time of each cell (one size under one load).
    #[arg(long, value_parser = duration, default_value = D::LOAD_CELL_TIME.as_str())]
    pub cell_time: Duration,
    /// CPUs for the load threads (default: those the initiator and responder do not use; all of them on a machine that has no others).
    #[arg(long, value_parser = cpus)]
    pub load_cpus: Option<Cpus>,
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
    #[arg(long, value_parser = word::<opt::Arrival>(), default_value = D::LOAD_ARRIVAL.as_str())]
    pub arrival: opt::Arrival,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Args, Debug, Clone)]
pub struct FlowgraphArgs {
    /// Core counts N to sweep: 1..2, or a list (default: 1 up to the CPUs available).
    #[arg(long, value_name = "N", value_parser = counts)]
    pub cores: Option<Counts>,
    /// Saxpy blocks M for every N: a range or list (default: N..3N for each N, as the qsdr benchmark report).
    #[arg(long, value_name = "M", value_parser = counts)]
    pub blocks: Option<Counts>,
    /// Schedulers (default: every one that applies; seq only on one core).
    #[arg(long, value_parser = word::<xferbench::flowgraph::sched::Scheduler>(), value_delimiter = ',')]
    pub scheduler: Vec<xferbench::flowgraph::sched::Scheduler>,
    /// Edges between blocks: circular buffers (one per edge, double-mapped), whole buffers handed off round a circuit (as qsdr), or both.
    #[arg(
        long,
        value_parser = word::<xferbench::flowgraph::edge::Edges>(),
        value_delimiter = ',',
        default_value = D::FLOW_EDGES.as_str()
    )]
    pub edges: Vec<xferbench::flowgraph::edge::Edges>,
    /// Bytes each block moves per call, and the size of one ring buffer (16 KiB, as the qsdr benchmark report).
    #[arg(long, value_parser = size_one, default_value = D::FLOW_BUFFER_SIZE.as_str())]
    pub buffer_size: u64,
    /// Buffers circulating in the ring reference and in a handoff circuit: N+1 as in the qsdr benchmark report (a circuit then holds --edge-buffers more per edge between cores under static, and --edge-buffers per edge under thread-per-block, tokio or async-executor, as its circular buffers do), or a number.
    #[arg(long, value_parser = buffer_count, default_value = D::FLOW_BUFFERS.as_str())]
    pub buffers: String,
    /// Capacity, in buffers, of a circular buffer between blocks that may run on different threads: auto (enough for twice the CPU's L2 cache, so a consumer's copy of a line has left its private cache before the producer writes it again; at least 2), or a number up to 4096. One between blocks on one thread holds one buffer.
    #[arg(long, value_parser = edge_buffer_count, default_value = D::FLOW_EDGE_BUFFERS.as_str())]
    pub edge_buffers: String,
    /// Measuring time per point, after the warm-up.
    #[arg(long, value_parser = duration, default_value = D::FLOW_DURATION.as_str())]
    pub duration: Duration,
    /// Time each point runs before it is measured.
    #[arg(long, value_parser = duration, default_value = D::FLOW_WARMUP.as_str())]
    pub warmup: Duration,
    /// Rounds per (N, M): each scheduler measures 1/R of --duration in turn with the others, R times, so a slow second of the host falls on all alike (the first round warms up for --warmup, later ones for a third of it).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=50), default_value = D::FLOW_ROUNDS.as_str())]
    pub rounds: u32,
    /// Stop each point after the source made this many items, instead of after --duration.
    #[arg(long, value_parser = items)]
    pub items: Option<u64>,
    /// CPUs to use, in order (default: those this process may run on).
    #[arg(long, value_parser = cpus, default_value = D::FLOW_CPUS.as_str())]
    pub cpus: Cpus,
    /// Buffer sizes of the kernel-only scan (the qsdr benchmark report's scan-buffer-size).
    #[arg(long, value_parser = size_list, default_value = D::FLOW_KERNEL_SIZES.as_str())]
    pub kernel_sizes: Sizes,
    /// The Saxpy kernel every block and reference runs: auto (the widest this CPU has), avx512, avx2+fma, neon or portable; a narrower one to compare with a machine or peer that lacks the wider.
    #[arg(long, value_parser = kernel_choice, default_value = D::FLOW_KERNEL.as_str())]
    pub kernel: String,
    /// Give up on a scheduler that has not wound down this long after being stopped.
    #[arg(long, value_parser = duration, default_value = D::FLOW_TIMEOUT.as_str())]
    pub timeout: Duration,
    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long, value_parser = word::<Format>(), default_value = D::LIST_FORMAT.as_str())]
    pub format: Format,
    /// Only these transports, with their options: e.g. `-t plugin:path=./echo.so` prints a plugin's capabilities and probes it.
    #[arg(short = 't', long = "transport", value_parser = specs)]
    pub transports: Vec<SpecList>,
    /// Skip the check that each transport really works here (faster).
    #[arg(long)]
    pub no_probe: bool,
    /// How long one call of a probe may take (a plugin's open, close, a
    /// round trip) before that transport is said not to work.
    #[arg(long, value_parser = duration, default_value = D::LIST_TIMEOUT.as_str())]
    pub timeout: Duration,
}

#[derive(Args, Debug)]
pub struct LimitsArgs {
    /// Output format.
    #[arg(long, value_parser = word::<Format>(), default_value = D::LIMITS_FORMAT.as_str())]
    pub format: Format,
    /// Write the output to this file instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the tables as one self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Measure memory copy, the core-to-core round trip and the clock again
    /// instead of reading them back from the cache.
    #[arg(long)]
    pub refresh: bool,
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
    #[arg(long, value_parser = duration, default_value = D::CHECK_TIMEOUT.as_str())]
    pub timeout: Duration,
    /// table: verdict lines; json: the verdicts as one JSON object on stdout.
    #[arg(long, value_parser = CheckFormat, default_value = D::CHECK_FORMAT.as_str())]
    pub format: Format,
}

/// The formats `plugin check` prints: verdict lines or JSON. CSV is not
/// offered (a verdict is not a table of points), so `--help` lists only
/// these two, and `--format csv` gets the reason rather than a bare list.
#[derive(Clone)]
struct CheckFormat;

impl clap::builder::TypedValueParser for CheckFormat {
    type Value = Format;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Format, clap::Error> {
        match value.to_str() {
            Some("table") => Ok(Format::Table),
            Some("json") => Ok(Format::Json),
            Some("csv") => Err(clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                "plugin check prints verdict lines (--format table) or JSON (--format json), not CSV\n",
            )
            .with_cmd(cmd)),
            _ => {
                let inner = clap::builder::PossibleValuesParser::new(["table", "json"]);
                clap::builder::TypedValueParser::parse_ref(&inner, cmd, arg, value)
                    .map(|_| Format::Table)
            }
        }
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        use clap::builder::PossibleValue;
        Some(Box::new(
            [
                PossibleValue::new("table").help("Verdict lines for people"),
                PossibleValue::new("json").help("The verdicts as one JSON object, for CI"),
            ]
            .into_iter(),
        ))
    }
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address and port to listen on (0.0.0.0:PORT for every interface).
    #[arg(long, default_value = D::SERVE_LISTEN.as_str())]
    pub listen: String,
    /// A file holding the shared secret clients must present (they set XFERBENCH_TOKEN_FILE or XFERBENCH_TOKEN); at least 16 bytes. Also read from XFERBENCH_TOKEN_FILE or XFERBENCH_TOKEN.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<std::path::PathBuf>,
    /// Refused with the way to give the token instead: a command line is public (ps, /proc/PID/cmdline).
    #[arg(long, value_name = "SECRET", hide = true)]
    pub token: Option<String>,
    /// Largest message a client may use; checked before anything is allocated.
    #[arg(long, value_parser = size_one_message, default_value = D::SERVE_MAX_MESSAGE.as_str())]
    pub max_message: u64,
    /// Clients served at once; more are refused as busy.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024), default_value = D::SERVE_MAX_SESSIONS.as_str())]
    pub max_sessions: u32,
    /// Sessions one client address may hold at once, so one address cannot take every slot [default: half of --max-sessions, rounded up].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub max_per_address: Option<u32>,
    /// A client silent this long (mid-frame or between runs) loses its connection, and one message that has begun must end within it (plus its length at 64 KiB/s): trickled bytes do not extend it. Its hello must come within 2s of connecting (or this, if shorter). From 10ms to 1 day.
    #[arg(long, value_parser = duration, default_value = D::SERVE_IDLE_TIMEOUT.as_str())]
    pub idle_timeout: Duration,
    /// Serve one client whose session ends well, then exit (connections that fail their hello, and sessions that end on an error, do not count).
    #[arg(long)]
    pub once: bool,
    /// Listen beyond loopback without a token, or accept a token under 16 bytes (refused otherwise): anyone who reaches the port or guesses the token can then run measurements here.
    #[arg(long)]
    pub insecure: bool,
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
    // No config behind `report`: the title is the command line's own.
    #[arg(long, default_value = "xferbench report")]
    pub title: String,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The run to compare against: a results file (--format json), or the name of a baseline saved with --save-baseline.
    #[arg(value_name = "BASE")]
    pub base: String,
    /// The run to judge: a results file, or a baseline name.
    #[arg(value_name = "NEW")]
    pub new: String,
    /// Confidence of the intervals: 99%, 95% or 0.99.
    #[arg(long, default_value = D::COMPARE_CONFIDENCE.as_str(), value_parser = parse_confidence)]
    pub confidence: f64,
    /// Changes within ± this are no change: 5%, 2% or 0.05.
    #[arg(long, default_value = D::COMPARE_NOISE.as_str(), value_parser = parse_noise)]
    pub noise: f64,
    /// Statistics to compare: p50, mean, p90, p99, p999, bandwidth, iops, rate (default: p50, mean, p99 and every rate the points have).
    #[arg(long, value_parser = word::<xferbench::compare::extract::Statistic>(), value_delimiter = ',')]
    pub stats: Vec<xferbench::compare::extract::Statistic>,
    /// Statistics whose regression fails the comparison (exit 1); default: every statistic compared.
    #[arg(long, value_parser = word::<xferbench::compare::extract::Statistic>(), value_delimiter = ',', value_name = "STATS")]
    pub fail_on: Vec<xferbench::compare::extract::Statistic>,
    /// An inconclusive verdict fails too (exit 1).
    #[arg(long)]
    pub strict: bool,
    /// Compare runs whose figure-changing options or machines differ, listing the differences first.
    #[arg(long)]
    pub allow_different: bool,
    /// Output format (markdown: a pull-request comment).
    // How the comparison is written is the command line's choice, not a
    // `compare::Settings` one: the default stays here.
    #[arg(long, value_parser = word::<xferbench::compare::render::CompareFormat>(), default_value = "table")]
    pub format: xferbench::compare::render::CompareFormat,
    /// Write the comparison to this file instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// A fraction from "5%", "0.05" (below 1) or "5" (a percentage).
fn parse_fraction(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, percent) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (t, false),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a number: give e.g. 5% or 0.05"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{s:?} must be a positive number"));
    }
    Ok(if percent || v >= 1.0 { v / 100.0 } else { v })
}

fn parse_confidence(s: &str) -> Result<f64, String> {
    let v = parse_fraction(s)?;
    if v <= 0.5 || v >= 1.0 {
        return Err(format!(
            "{s}: a confidence lies between 50% and 100% (99% is usual)"
        ));
    }
    Ok(v)
}

fn parse_noise(s: &str) -> Result<f64, String> {
    let v = parse_fraction(s)?;
    if v >= 1.0 {
        return Err(format!("{s}: a noise threshold below 100% (5% is usual)"));
    }
    Ok(v)
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
        // `reference::Action` carries the format chosen and holds no
        // default of its own: the command line's choice.
        #[arg(long, value_parser = word::<Format>(), default_value = "table")]
        format: Format,
    },
    /// Prints one dataset, shaped as its source document's table.
    Show {
        /// A name from `xferbench reference list`.
        name: String,
        // As for `list`: no config default behind it.
        #[arg(long, value_parser = word::<Format>(), default_value = "table")]
        format: Format,
    },
}

#[derive(Args, Debug)]
pub struct RespondArgs {
    #[arg(long, value_parser = specs)]
    pub spec: SpecList,
    #[arg(long, value_parser = word::<CompletionMode>())]
    pub completion: CompletionMode,
    #[arg(long)]
    pub cpu: Option<usize>,
}

#[derive(Args, Debug, Clone)]
pub struct StreamArgs {
    /// fio job files to run, one after the other, as `fio a.fio b.fio` runs them (the same as --job for one).
    #[arg(value_name = "JOB.fio")]
    pub job_files: Vec<PathBuf>,
    /// A fio job file to run ([global] and job sections, fio's options).
    #[arg(long, value_name = "FILE.fio")]
    pub job: Option<PathBuf>,
    /// Only run this section of the job files (repeatable), as fio's --section.
    #[arg(long = "section", value_name = "NAME")]
    pub sections: Vec<String>,
    /// fio's spelling of --format: normal (a table), json, json+ (json with fio's clat_ns.bins), terse (fio's terse v3).
    #[arg(long, value_name = "FORMAT", value_parser = fio_output_format, conflicts_with = "format")]
    pub output_format: Option<StreamFormat>,
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
    /// The flags that set fio options, one per entry of the library's table.
    #[command(flatten)]
    pub flags: StreamFlagArgs,
    /// Give up on an I/O that has not completed for this long.
    #[arg(long, value_parser = duration, default_value = D::STREAM_TIMEOUT.as_str())]
    pub timeout: Duration,
    /// Lay out a file for a read job even when that means writing more than 8 GiB of zeros or half the file system's free space (never more than fits).
    #[arg(long)]
    pub allow_large_layout: bool,
    #[command(flatten)]
    pub out: StreamOutputArgs,
}

/// `xferbench fio ARGS…`: fio's arguments, untouched, for the fio crate's
/// parser (clap knows none of fio's options).
#[derive(Args, Debug)]
pub struct FioArgs {
    /// fio's options, job options and job files, as fio takes them (`xferbench fio --help` lists them).
    #[arg(value_name = "ARGS", trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<std::ffi::OsString>,
}

impl From<OutputArgs> for Output {
    fn from(a: OutputArgs) -> Output {
        output(a.format, a.rest)
    }
}

fn output(format: Format, a: OutputRest) -> Output {
    Output {
        format,
        output: a.output,
        compare: a.compare,
        repeat: a.repeat,
        save_baseline: a.save_baseline,
        baseline: a.baseline,
    }
}

impl CommonArgs {
    /// The amount timed per point that was given, if one was.
    fn amount(&self) -> Option<Amount> {
        match (self.samples, self.duration) {
            (Some(n), _) => Some(Amount::Samples(n)),
            (None, Some(d)) => Some(Amount::Time(d)),
            (None, None) => None,
        }
    }

    /// The config of these flags, for an experiment whose config defaults
    /// to `default`: what was given, else the experiment's own amount
    /// (roundtrip's samples, curve's time), so each default is written
    /// once, in the config's `Default`.
    fn into_common(self, default: &Common) -> Common {
        Common {
            amount: self.amount().or(default.amount),
            transports: flat(self.transports),
            buffers: self.buffers,
            completion: self.completion,
            cpus: self.cpus,
            warmup: self.warmup,
            responder_delay: self.responder_delay,
            timeout: self.timeout,
            stats: self.stats,
            out: self.out.into(),
        }
    }
}

/// `--samples`' help, its defaults read from the configs that hold them.
fn samples_help() -> String {
    let curve = CurveConfig::default();
    format!(
        "Timed samples per point: a sample is one round trip, one exchange of curve's --mode (stream: a window and its acknowledgement), or one trial of a cuda copy curve. Default: {} (roundtrip), a {} budget (curve), {} (cuda copy curves)",
        shown(RoundtripConfig::default().common.amount),
        shown(curve.common.amount),
        curve.copy_amount.shown()
    )
}

/// `--warmup`'s help: the warm-up `sample::measure` makes when given no
/// count, from the constants it uses.
fn warmup_help() -> String {
    use xferbench::experiment::sample::{AUTO_WARMUP, AUTO_WARMUP_TIME};
    format!(
        "Untimed round trips before each point. Default: up to {AUTO_WARMUP} within {} s",
        AUTO_WARMUP_TIME.as_secs_f64()
    )
}

/// `load --warmup`'s help: a count per client and cell, its default from
/// [`LoadConfig`].
pub(super) fn load_warmup_help() -> String {
    format!(
        "Untimed round trips each client (--inflight) makes before each cell, under that cell's load; the open loop (--rate, --rates) does not use it: it warms each size up with round trips of its own. Default: {}",
        LoadConfig::default().cell_warmup
    )
}

fn shown(a: Option<Amount>) -> String {
    a.map_or_else(|| "none".into(), |a| a.shown())
}

impl From<RoundtripArgs> for RoundtripConfig {
    fn from(a: RoundtripArgs) -> RoundtripConfig {
        RoundtripConfig {
            in_sizes: a.in_sizes.0,
            out_sizes: a.out_sizes.0,
            unit: a.unit,
            common: a.common.into_common(&RoundtripConfig::default().common),
        }
    }
}

impl From<CurveArgs> for CurveConfig {
    fn from(a: CurveArgs) -> CurveConfig {
        let defaults = CurveConfig::default();
        CurveConfig {
            sizes: a.sizes.0,
            perturb: a.perturb,
            mode: a.mode,
            window: a.window,
            direction: a.direction,
            payload: a.payload,
            chunk: a.chunk,
            compare_chunks: a.compare_chunks,
            breakpoint: a.breakpoint,
            pairs: a.pairs,
            copy_amount: a.common.amount().unwrap_or(defaults.copy_amount),
            common: a.common.into_common(&defaults.common),
        }
    }
}

impl From<MeshArgs> for opt::MeshConfig {
    fn from(a: MeshArgs) -> opt::MeshConfig {
        opt::MeshConfig {
            transport: a.transport,
            latency_size: a.latency_size,
            bandwidth_size: a.bandwidth_size,
            sizes: a.sizes.map(|s| s.0).unwrap_or_default(),
            window: a.window,
            duration: a.duration,
            concurrent: a.concurrent,
            retest: !a.no_retest,
            min_bandwidth: a.min_bandwidth,
            max_latency: a.max_latency,
            timeout: a.timeout,
            inject_delay: a.inject_delay,
            inject_stall: a.inject_stall,
            out: a.out.into(),
        }
    }
}

impl From<LoadArgs> for LoadConfig {
    fn from(a: LoadArgs) -> LoadConfig {
        let defaults = LoadConfig::default();
        LoadConfig {
            sizes: a.sizes.0,
            loads: a.loads,
            direction: a.direction,
            inflight: a.inflight,
            cell_time: a.cell_time,
            // `none` names no CPU, which the load refuses with its own message.
            load_cpus: a.load_cpus.map(|c| match c {
                Cpus::List(v) => v,
                Cpus::Auto | Cpus::Unpinned => Vec::new(),
            }),
            load_cmd: a.load_cmd,
            rate: a.rate.map(|r| r.0),
            rates: a.rates.map(|r| r.0),
            arrival: a.arrival,
            // `--warmup` lands in `common`; this is the count used without it.
            cell_warmup: defaults.cell_warmup,
            common: a.common.into_common(&defaults.common),
        }
    }
}

impl From<FlowgraphArgs> for FlowgraphConfig {
    fn from(a: FlowgraphArgs) -> FlowgraphConfig {
        FlowgraphConfig {
            cores: a.cores.map(|c| c.0),
            blocks: a.blocks.map(|c| c.0),
            scheduler: a.scheduler,
            edges: a.edges,
            buffer_size: a.buffer_size,
            buffers: a.buffers,
            edge_buffers: a.edge_buffers,
            duration: a.duration,
            warmup: a.warmup,
            rounds: a.rounds,
            items: a.items,
            cpus: a.cpus,
            kernel_sizes: a.kernel_sizes.0,
            kernel: a.kernel,
            timeout: a.timeout,
            out: a.out.into(),
        }
    }
}

impl From<StreamArgs> for StreamConfig {
    fn from(a: StreamArgs) -> StreamConfig {
        let mut files = a.job.into_iter().chain(a.job_files);
        let job = files.next();
        let StreamFormat(format, fio_output) = a.output_format.unwrap_or(a.out.format);
        let out = output(format, a.out.rest);
        StreamConfig {
            job,
            more_jobs: files.collect(),
            sections: a.sections,
            map: a.map,
            set: a.set,
            strict: a.strict,
            name: a.name,
            flags: StreamFlags(a.flags.0),
            timeout: a.timeout,
            allow_large_layout: a.allow_large_layout,
            fio_output,
            out,
            ..StreamConfig::default()
        }
    }
}

/// fio's `--output-format` words, as xferbench's formats.
fn fio_output_format(s: &str) -> Result<StreamFormat, String> {
    match s {
        "normal" | "json" | "json+" | "terse" => stream_format(s),
        _ => Err(format!(
            "'{s}' is not one of fio's output formats: normal, json, json+, terse"
        )),
    }
}

/// The `stream` flags made from [`STREAM_FLAGS`], so each is declared once
/// (there) rather than as a field here, a field of the config and a line of
/// each conversion: what was given, as (fio option, value text).
#[derive(Clone, Debug, Default)]
pub struct StreamFlagArgs(pub Vec<(String, Option<String>)>);

impl clap::FromArgMatches for StreamFlagArgs {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Self::from_arg_matches_mut(&mut m.clone())
    }

    fn from_arg_matches_mut(m: &mut clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut given = Vec::new();
        for f in STREAM_FLAGS {
            let value = match f.value {
                None => m.remove_one::<bool>(f.flag).filter(|&on| on).map(|_| None),
                Some(_) => m.remove_one::<String>(f.flag).map(Some),
            };
            if let Some(v) = value {
                given.push((f.option(), v));
            }
        }
        Ok(StreamFlagArgs(given))
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for StreamFlagArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        STREAM_FLAGS.iter().fold(cmd, |cmd, f| {
            let arg = clap::Arg::new(f.flag).long(f.flag).help(f.help);
            cmd.arg(match f.value {
                None => arg.action(clap::ArgAction::SetTrue),
                Some(name) => arg
                    .value_name(name)
                    .value_parser(clap::value_parser!(String))
                    .action(clap::ArgAction::Set),
            })
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl From<ServeArgs> for xferbench::command::serve::ServeConfig {
    fn from(a: ServeArgs) -> xferbench::command::serve::ServeConfig {
        xferbench::command::serve::ServeConfig {
            listen: a.listen,
            token_arg: a.token.is_some(),
            token_file: a.token_file,
            max_message: a.max_message,
            max_sessions: a.max_sessions,
            max_per_address: a.max_per_address,
            idle_timeout: a.idle_timeout,
            once: a.once,
            insecure: a.insecure,
        }
    }
}

impl From<ListArgs> for xferbench::command::list::ListOptions {
    fn from(a: ListArgs) -> xferbench::command::list::ListOptions {
        xferbench::command::list::ListOptions {
            format: a.format,
            transports: flat(a.transports),
            no_probe: a.no_probe,
            timeout: a.timeout,
        }
    }
}

impl From<LimitsArgs> for xferbench::command::limits::LimitsOptions {
    fn from(a: LimitsArgs) -> xferbench::command::limits::LimitsOptions {
        xferbench::command::limits::LimitsOptions {
            format: a.format,
            output: a.output,
            html: a.html,
            refresh: a.refresh,
        }
    }
}

impl From<PluginCheckArgs> for xferbench::command::plugin_check::CheckOptions {
    fn from(a: PluginCheckArgs) -> xferbench::command::plugin_check::CheckOptions {
        xferbench::command::plugin_check::CheckOptions {
            path: a.path,
            options: a.options,
            timeout: a.timeout,
            format: a.format,
        }
    }
}

impl From<&CompareArgs> for xferbench::compare::Settings {
    fn from(a: &CompareArgs) -> xferbench::compare::Settings {
        xferbench::compare::Settings {
            confidence: a.confidence,
            noise: a.noise,
            stats: a.stats.clone(),
            fail_on: a.fail_on.clone(),
            strict: a.strict,
            allow_different: a.allow_different,
        }
    }
}

impl From<ReferenceAction> for xferbench::command::reference::Action {
    fn from(a: ReferenceAction) -> xferbench::command::reference::Action {
        match a {
            ReferenceAction::List { format } => {
                xferbench::command::reference::Action::List { format }
            }
            ReferenceAction::Show { name, format } => {
                xferbench::command::reference::Action::Show { name, format }
            }
        }
    }
}
