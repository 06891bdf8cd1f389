//! Mesh results: every ordered pair of MPI ranks measured (one-way latency
//! at a small size, bandwidth at a large one), the N × N matrices drawn from
//! them, the outliers found in those matrices and the health gate's verdict.

pub use crate::measure::outliers::{Better, Finding, Scope, ScopeStats, Side, Subject};
use crate::measure::stats::Summary;
use crate::result::{PointMeta, Run, Spread};
use serde::{Deserialize, Serialize};

/// A mesh run: one point per ordered pair of ranks (`from` ≠ `to`).
pub type MeshRun = Run<MeshPair, MeshExtra>;

/// Where one rank ran: what each rank reports of itself at the start.
#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq)]
pub struct RankInfo {
    /// MPI rank in MPI_COMM_WORLD.
    pub rank: usize,
    /// The host's name (`uname -n`).
    pub host: String,
    /// CPU the rank was running on when it started (sched_getcpu).
    pub cpu: Option<usize>,
    /// That CPU's physical core id (sysfs `topology/core_id`).
    pub core: Option<usize>,
    /// That CPU's package (socket) id.
    pub socket: Option<usize>,
    /// CPUs the rank may run on (the launcher's binding): one CPU means it
    /// is bound.
    pub allowed_cpus: Vec<usize>,
    /// Process id, to find the rank on its host.
    pub pid: u32,
}

/// One-way latency of a pair at one size: half of each ping-pong round trip.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LatencyPoint {
    /// Message size, bytes (both ways).
    pub size_bytes: u64,
    /// Round trips run before timing and not recorded.
    pub warmup: u64,
    /// Time in the timed loop, seconds.
    pub timed_s: f64,
    /// Half of each round trip, ns, from the pair's own histogram.
    pub oneway: Summary,
    /// The one-way times' histogram, and the latency figures of the timed
    /// loop's consecutive blocks (`histogram`, `blocks`).
    #[serde(flatten)]
    pub spread: Spread,
}

/// Bandwidth of a pair at one size: windows of messages in flight one way,
/// each closed by a one-byte acknowledgement (osu_bw's pattern).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BandwidthPoint {
    /// Message size, bytes.
    pub size_bytes: u64,
    /// Messages in flight per window.
    pub window: u32,
    /// Windows run before timing and not recorded.
    pub warmup: u64,
    /// Time in the timed loop, seconds.
    pub timed_s: f64,
    /// Bytes moved in timed windows.
    pub bytes: u64,
    /// Decimal MB/s over the whole timed loop (bytes / time), as OSU reports.
    #[serde(rename = "bandwidth_MBps")]
    pub bandwidth_mbps: f64,
    /// Decimal MB/s of the median window: what the matrix shows, since one
    /// disturbed window moves it less than the mean.
    #[serde(rename = "median_MBps")]
    pub median_mbps: f64,
    /// Time of one window, ns.
    pub window_time: Summary,
}

/// One ordered pair: `from` sends (and times), `to` answers.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MeshPair {
    /// The sending, timing rank.
    pub from: usize,
    /// The receiving rank.
    pub to: usize,
    /// Both ranks on one host.
    pub intra_host: bool,
    /// The round of the schedule it ran in (0-based).
    pub round: usize,
    /// Latency at each latency size, smallest first.
    pub latency: Vec<LatencyPoint>,
    /// Bandwidth at each bandwidth size, smallest first.
    pub bandwidth: Vec<BandwidthPoint>,
    /// Not measured (or not reported) because the run stopped or a rank
    /// failed: its cells are empty in the matrices.
    pub missing: bool,
    /// What went wrong with this pair, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl PointMeta for MeshPair {
    fn count(&self) -> u64 {
        self.latency.iter().map(|l| l.oneway.count).sum::<u64>()
            + self
                .bandwidth
                .iter()
                .map(|b| b.window_time.count)
                .sum::<u64>()
    }
    fn warmup(&self) -> u64 {
        self.latency.iter().map(|l| l.warmup).sum::<u64>()
            + self.bandwidth.iter().map(|b| b.warmup).sum::<u64>()
    }
    fn partial(&self) -> bool {
        self.missing
    }
    fn warnings(&self) -> &[String] {
        &[]
    }
    fn label(&self) -> String {
        format!("rank {} → rank {}", self.from, self.to)
    }
    fn sample_noun(&self) -> &'static str {
        "round trips and windows"
    }
}

/// How the pairs were scheduled.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Schedule {
    /// "tournament": the round-robin (circle) schedule, in which each round
    /// pairs every rank with one other (one rank sits out when N is odd),
    /// and each pair measures both directions in turn.
    #[serde(deserialize_with = "crate::words::de_interned")]
    pub kind: crate::words::Interned,
    /// "sequential": one pair at a time, the others idle, so each pair is
    /// measured undisturbed; "concurrent": all pairs of a round at once, to
    /// expose contention in the fabric.
    #[serde(deserialize_with = "crate::words::de_interned")]
    pub mode: crate::words::Interned,
    /// Rounds in the schedule.
    pub rounds: usize,
    /// Pairs per round (unordered; each measured both ways).
    pub pairs_per_round: usize,
    /// Sequential pairs whose two ranks share a host and an unbound CPU set
    /// were pinned to two distinct CPUs of it while they measured (else the
    /// scheduler may put both on one CPU and time its context switches).
    #[serde(default)]
    pub pinned_pairs: bool,
}

/// An N × N matrix, `cells[from][to]`; the diagonal and missing pairs are null.
pub type Matrix = Vec<Vec<Option<f64>>>;

/// The figures users scan, one matrix each.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Matrices {
    /// Message size of the latency matrices, bytes.
    pub latency_size_bytes: u64,
    /// Median one-way latency, µs.
    pub latency_p50_us: Matrix,
    /// 99th percentile one-way latency, µs.
    pub latency_p99_us: Matrix,
    /// Message size of the bandwidth matrix, bytes.
    pub bandwidth_size_bytes: u64,
    /// Bandwidth of the median window, decimal MB/s.
    #[serde(rename = "bandwidth_MBps")]
    pub bandwidth_mbps: Matrix,
}

/// All pairs of a scope together: their histograms merged, not their
/// percentiles averaged, so the worst pair shows in the tail.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Merged {
    /// Intra-host or inter-host pairs.
    pub scope: Scope,
    /// Pairs merged.
    pub pairs: usize,
    /// One-way latency at the latency size over every sample of every pair, ns.
    pub oneway: Summary,
}

/// A finding of the outlier rule, with its re-test.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Suspect {
    /// "latency" or "bandwidth".
    #[serde(deserialize_with = "crate::words::de_interned")]
    pub metric: crate::words::Interned,
    /// One line for people: "rank 5 (node03) ↔ all: bandwidth 0.41× …".
    pub line: String,
    /// The rule's figures.
    pub finding: Finding,
    /// The finding's cells measured again, alone, after the sweep (µs or MB/s).
    pub retest: Vec<f64>,
    /// Whether the re-test was still that far from the baseline; null when
    /// no re-test ran (the run stopped).
    pub confirmed: Option<bool>,
}

/// The health gate (`--min-bandwidth`, `--max-latency`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Health {
    /// Bandwidth floor, decimal MB/s.
    #[serde(rename = "min_bandwidth_MBps")]
    pub min_bandwidth_mbps: Option<f64>,
    /// Latency ceiling (p50 one-way), µs.
    pub max_latency_us: Option<f64>,
    /// Every pair outside the gate, one line each.
    pub failing: Vec<String>,
    /// Ranks every one of whose measured pairs failed: the node, not its links.
    pub failing_ranks: Vec<usize>,
    /// No gate was set, or every pair passed.
    pub passed: bool,
}

/// What a mesh run adds beside its pairs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MeshExtra {
    /// Ranks in the job.
    pub ranks_total: usize,
    /// What each rank reported of itself.
    pub ranks: Vec<RankInfo>,
    /// How the pairs were scheduled.
    pub schedule: Schedule,
    /// The matrices users scan.
    pub matrices: Matrices,
    /// Merged latency histograms, intra- and inter-host apart.
    pub merged: Vec<Merged>,
    /// The baselines the outlier rule judged against.
    pub baselines: Vec<Baseline>,
    /// Outliers, worst first, re-tested.
    pub suspects: Vec<Suspect>,
    /// The health gate's verdict.
    pub health: Health,
    /// Ordered pairs that were not measured.
    pub missing: Vec<[usize; 2]>,
}

/// One scope's baseline for one metric.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Baseline {
    /// "latency" (p50, µs) or "bandwidth" (MB/s).
    #[serde(deserialize_with = "crate::words::de_interned")]
    pub metric: crate::words::Interned,
    /// Cell count, median and MAD of the scope.
    pub stats: ScopeStats,
}

/// `curve -t mpi --pairs K`: K sender ranks stream to K receivers at once.
pub type PairsRun = Run<PairsPoint, PairsExtra>;

/// One size with every pair streaming at once (osu_mbw_mr's pattern).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PairsPoint {
    /// Message size, bytes.
    pub size_bytes: u64,
    /// Messages in flight per window.
    pub window: u32,
    /// Timed windows each pair ran (the same count for every pair, fitted
    /// to the slowest pair's warm-up so the pairs overlap).
    pub windows: u64,
    /// Every pair's bytes over the longest pair's timed time, decimal MB/s
    /// (osu_mbw_mr's aggregate).
    #[serde(rename = "aggregate_MBps")]
    pub aggregate_mbps: f64,
    /// Every pair's messages over the longest pair's timed time.
    pub messages_per_s: f64,
    /// The slowest pair's own MB/s: what one pair gets under contention.
    #[serde(rename = "slowest_pair_MBps")]
    pub slowest_pair_mbps: f64,
    /// Each pair, sender first.
    pub pairs: Vec<PairRate>,
    /// The run was stopped while this size was measured.
    pub partial: bool,
    /// Each repeat's `aggregate_MBps`, `messages_per_s` and
    /// `slowest_pair_MBps` (`--repeat K`).
    #[serde(flatten)]
    pub spread: crate::result::Spread,
}

impl crate::result::Repeatable for PairsPoint {
    fn identity(&self) -> String {
        format!("{} B window {}", self.size_bytes, self.window)
    }
    fn figures(&self) -> crate::result::Figures {
        crate::result::Figures::from([
            ("aggregate_MBps", self.aggregate_mbps),
            ("messages_per_s", self.messages_per_s),
            ("slowest_pair_MBps", self.slowest_pair_mbps),
        ])
    }
    /// Every repeat's bytes and messages over every repeat's time: each
    /// pair's own, and the aggregate's (all pairs' bytes over the longest
    /// pair's time, as in one repeat).
    fn merge(reps: Vec<PairsPoint>) -> PairsPoint {
        let figures: Vec<crate::result::Figures> = reps
            .iter()
            .map(crate::result::Repeatable::figures)
            .collect();
        let spread = crate::result::Spread::of_repeats(
            reps.iter().map(|p| p.spread.clone()).collect(),
            figures,
        );
        let first = &reps[0];
        let per_window = (first.size_bytes * u64::from(first.window)) as f64;
        let k = first.pairs.len().max(1) as f64;
        let windows: u64 = reps.iter().map(|p| p.windows).sum();
        // The aggregate's time in each repeat: its bytes over its rate.
        let time: f64 = reps
            .iter()
            .filter(|p| p.aggregate_mbps > 0.0)
            .map(|p| k * per_window * p.windows as f64 / (p.aggregate_mbps * 1e6))
            .sum();
        let mut pairs: Vec<PairRate> = Vec::new();
        for p in first.pairs.iter() {
            let mine: Vec<&PairRate> = reps
                .iter()
                .filter_map(|r| r.pairs.iter().find(|q| q.from == p.from && q.to == p.to))
                .collect();
            let t: f64 = mine.iter().map(|q| q.timed_s).sum();
            let parts: Vec<Summary> = mine.iter().map(|q| q.window_time.clone()).collect();
            let rate = |per: f64| {
                if t > 0.0 {
                    per * windows as f64 / t
                } else {
                    0.0
                }
            };
            pairs.push(PairRate {
                from: p.from,
                to: p.to,
                bandwidth_mbps: rate(per_window) / 1e6,
                messages_per_s: rate(f64::from(first.window)),
                timed_s: t,
                window_time: crate::measure::distribution::combine(&parts, None),
            });
        }
        let rate = |per: f64| {
            if time > 0.0 {
                k * per * windows as f64 / time
            } else {
                0.0
            }
        };
        PairsPoint {
            size_bytes: first.size_bytes,
            window: first.window,
            windows,
            aggregate_mbps: rate(per_window) / 1e6,
            messages_per_s: rate(f64::from(first.window)),
            slowest_pair_mbps: pairs
                .iter()
                .map(|p| p.bandwidth_mbps)
                .fold(f64::INFINITY, f64::min),
            partial: reps.iter().any(|p| p.partial),
            pairs,
            spread,
        }
    }
}

/// One pair's share of a `--pairs` point.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PairRate {
    /// Sending rank.
    pub from: usize,
    /// Receiving rank.
    pub to: usize,
    /// Its bytes over its own timed time, decimal MB/s.
    #[serde(rename = "bandwidth_MBps")]
    pub bandwidth_mbps: f64,
    /// Its messages over its own timed time.
    pub messages_per_s: f64,
    /// Its timed time, seconds.
    pub timed_s: f64,
    /// Time of one window, ns.
    pub window_time: Summary,
}

impl PointMeta for PairsPoint {
    fn count(&self) -> u64 {
        self.pairs.iter().map(|p| p.window_time.count).sum()
    }
    fn warmup(&self) -> u64 {
        3 * self.pairs.len() as u64
    }
    fn partial(&self) -> bool {
        self.partial
    }
    fn warnings(&self) -> &[String] {
        &[]
    }
    fn label(&self) -> String {
        format!("{} pairs, {} B", self.pairs.len(), self.size_bytes)
    }
    fn sample_noun(&self) -> &'static str {
        "windows"
    }
}

/// What a `--pairs` run adds beside its points.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PairsExtra {
    /// Pairs streaming at once.
    pub pairs: usize,
    /// Ranks in the job (those from 2K on stand by).
    pub ranks_total: usize,
    /// What each rank reported of itself.
    pub ranks: Vec<RankInfo>,
}
