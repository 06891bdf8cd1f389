//! Rank 0's side of a mesh: what ranks send it, filed into pairs; the
//! matrices, the outliers and the health gate drawn from them; the run.
//! Nothing here speaks MPI, so it builds (and is tested) without it.

use crate::error::Error;
use crate::measure::distribution::{Distribution, latency_figures};
use crate::measure::outliers::{self, Better, Finding, Rule, Scope};
use crate::measure::stats::{Recorder, RecorderWire, Summary};
use crate::options::MeshConfig;
use crate::result::mesh::{
    BandwidthPoint, Baseline, Health, LatencyPoint, Matrices, Matrix, Merged, MeshExtra, MeshPair,
    MeshRun, RankInfo, Schedule, Suspect,
};
use crate::result::{Run, Spread};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What each rank says of itself first.
#[derive(Serialize, Deserialize)]
pub struct Hello {
    pub argv: Vec<String>,
    pub info: RankInfo,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    Latency,
    Bandwidth,
}

/// One measurement a leading rank made.
#[derive(Serialize, Deserialize)]
pub struct Measured {
    pub from: usize,
    pub to: usize,
    pub round: usize,
    /// Made when re-testing a suspect.
    pub retest: bool,
    pub kind: Kind,
    pub size: u64,
    pub window: u32,
    pub warmup: u64,
    pub timed_ns: u64,
    pub rec: RecorderWire,
    /// Summaries of the timed loop's consecutive blocks (latency only).
    #[serde(default)]
    pub blocks: Vec<Summary>,
}

/// What one rank sends rank 0 after a round.
#[derive(Default, Serialize, Deserialize)]
pub struct RankReport {
    pub measured: Vec<Measured>,
    /// (from, to, what went wrong).
    pub errors: Vec<(usize, usize, String)>,
}

/// Re-tests per node or host finding (its worst cells), and in all.
const RETEST_PER_FINDING: usize = 4;
const RETEST_MAX: usize = 32;

#[derive(Clone)]
pub struct Collector {
    n: usize,
    ranks: Vec<RankInfo>,
    /// `pairs[from][to]`; the diagonal is never read.
    pairs: Vec<Vec<MeshPair>>,
    lat_sizes: usize,
    bw_sizes: usize,
    lat_size: u64,
    bw_size: u64,
    /// Latency at the matrix size, every pair of a scope merged.
    merged: BTreeMap<Scope, (usize, Recorder)>,
    retest_lat: BTreeMap<(usize, usize), f64>,
    retest_bw: BTreeMap<(usize, usize), f64>,
    errors: Vec<String>,
    findings: Vec<(&'static str, Finding)>,
    baselines: Vec<Baseline>,
}

impl Collector {
    pub fn new(cfg: &MeshConfig, ranks: Vec<RankInfo>, rounds: &[super::Round]) -> Collector {
        let n = ranks.len();
        let mut round_of = vec![vec![0usize; n]; n];
        for (i, r) in rounds.iter().enumerate() {
            for &(a, b) in r {
                round_of[a][b] = i;
                round_of[b][a] = i;
            }
        }
        let pairs = (0..n)
            .map(|from| {
                (0..n)
                    .map(|to| MeshPair {
                        from,
                        to,
                        intra_host: ranks[from].host == ranks[to].host,
                        round: round_of[from][to],
                        latency: Vec::new(),
                        bandwidth: Vec::new(),
                        missing: true,
                        error: None,
                    })
                    .collect()
            })
            .collect();
        Collector {
            n,
            ranks,
            pairs,
            lat_sizes: cfg.latency_sizes().len(),
            bw_sizes: cfg.bandwidth_sizes().len(),
            lat_size: cfg.latency_matrix_size(),
            bw_size: cfg.bandwidth_matrix_size(),
            merged: BTreeMap::new(),
            retest_lat: BTreeMap::new(),
            retest_bw: BTreeMap::new(),
            errors: Vec::new(),
            findings: Vec::new(),
            baselines: Vec::new(),
        }
    }

    /// Distinct hosts.
    pub fn hosts(&self) -> usize {
        let mut h: Vec<&str> = self.ranks.iter().map(|r| r.host.as_str()).collect();
        h.sort_unstable();
        h.dedup();
        h.len()
    }

    /// The first thing that went wrong in a pair, if any.
    pub fn first_error(&self) -> Option<String> {
        self.errors.first().cloned()
    }

    /// Files one rank's report.
    pub fn file(&mut self, rep: RankReport) {
        for m in rep.measured {
            if m.from >= self.n || m.to >= self.n || m.from == m.to {
                continue;
            }
            let rec = Recorder::from_wire(&m.rec);
            let s = rec.summary();
            let timed_s = m.timed_ns as f64 / 1e9;
            if m.retest {
                let cell = (m.from, m.to);
                match m.kind {
                    Kind::Latency => self.retest_lat.insert(cell, s.p50_ns as f64 / 1e3),
                    Kind::Bandwidth => self
                        .retest_bw
                        .insert(cell, mbps(m.size, m.window, s.p50_ns as f64)),
                };
                continue;
            }
            let pair = &mut self.pairs[m.from][m.to];
            match m.kind {
                Kind::Latency => {
                    if m.size == self.lat_size {
                        let scope = if pair.intra_host {
                            Scope::Intra
                        } else {
                            Scope::Inter
                        };
                        let e = self
                            .merged
                            .entry(scope)
                            .or_insert_with(|| (0, Recorder::new()));
                        e.0 += 1;
                        e.1.merge(&rec);
                    }
                    // Only the encoded histogram is kept: a 64-rank mesh
                    // has 4032 pairs.
                    pair.latency.push(LatencyPoint {
                        size_bytes: m.size,
                        warmup: m.warmup,
                        timed_s,
                        oneway: s,
                        spread: Spread {
                            histogram: Some(Distribution::of(&rec)),
                            repeats: Vec::new(),
                            blocks: m.blocks.iter().map(latency_figures).collect(),
                        },
                    });
                }
                Kind::Bandwidth => {
                    let bytes = m.size * m.window as u64 * s.count;
                    pair.bandwidth.push(BandwidthPoint {
                        size_bytes: m.size,
                        window: m.window,
                        warmup: m.warmup,
                        timed_s,
                        bytes,
                        bandwidth_mbps: if timed_s > 0.0 {
                            bytes as f64 / timed_s / 1e6
                        } else {
                            0.0
                        },
                        median_mbps: mbps(m.size, m.window, s.p50_ns as f64),
                        window_time: s,
                    });
                }
            }
            pair.missing =
                pair.latency.len() < self.lat_sizes || pair.bandwidth.len() < self.bw_sizes;
        }
        for (from, to, msg) in rep.errors {
            if from < self.n && to < self.n && from != to {
                self.pairs[from][to].error = Some(msg.clone());
            }
            if msg != "interrupted" {
                self.errors.push(msg);
            }
        }
    }

    fn matrix(&self, cell: impl Fn(&MeshPair) -> Option<f64>) -> Matrix {
        (0..self.n)
            .map(|f| {
                (0..self.n)
                    .map(|t| {
                        let p = &self.pairs[f][t];
                        if f == t { None } else { cell(p) }
                    })
                    .collect()
            })
            .collect()
    }

    fn latency_cell(
        &self,
        p: &MeshPair,
        q: impl Fn(&crate::measure::stats::Summary) -> u64,
    ) -> Option<f64> {
        p.latency
            .iter()
            .find(|l| l.size_bytes == self.lat_size && l.oneway.count > 0)
            .map(|l| q(&l.oneway) as f64 / 1e3)
    }

    fn bandwidth_cell(&self, p: &MeshPair) -> Option<f64> {
        p.bandwidth
            .iter()
            .find(|b| b.size_bytes == self.bw_size && b.window_time.count > 0)
            .map(|b| b.median_mbps)
    }

    pub fn matrices(&self) -> Matrices {
        Matrices {
            latency_size_bytes: self.lat_size,
            latency_p50_us: self.matrix(|p| self.latency_cell(p, |s| s.p50_ns)),
            latency_p99_us: self.matrix(|p| self.latency_cell(p, |s| s.p99_ns)),
            bandwidth_size_bytes: self.bw_size,
            bandwidth_mbps: self.matrix(|p| self.bandwidth_cell(p)),
        }
    }

    fn hosts_by_rank(&self) -> Vec<String> {
        self.ranks.iter().map(|r| r.host.clone()).collect()
    }

    /// Runs the outlier rule over both matrices and returns the cells to
    /// measure again: a link's own cell; a node's or host's worst few.
    pub fn suspect_cells(&mut self) -> Vec<(usize, usize)> {
        let m = self.matrices();
        let hosts = self.hosts_by_rank();
        let rule = Rule::default();
        self.findings.clear();
        self.baselines.clear();
        for (metric, cells, better) in [
            ("latency", &m.latency_p50_us, Better::Lower),
            ("bandwidth", &m.bandwidth_mbps, Better::Higher),
        ] {
            let a = outliers::analyse(cells, &hosts, better, &rule);
            self.baselines
                .extend(a.scopes.into_iter().map(|stats| Baseline { metric, stats }));
            self.findings
                .extend(a.findings.into_iter().map(|f| (metric, f)));
        }
        let mut out: Vec<(usize, usize)> = Vec::new();
        for (metric, f) in &self.findings {
            let m = if *metric == "latency" {
                &m.latency_p50_us
            } else {
                &m.bandwidth_mbps
            };
            let mut cells: Vec<(usize, usize)> = f.cells.clone();
            // Worst first, so the few re-tested are the telling ones.
            let key = |c: &(usize, usize)| m[c.0][c.1].unwrap_or(0.0);
            cells.sort_by(|a, b| match better_of(metric) {
                Better::Lower => key(b).total_cmp(&key(a)),
                Better::Higher => key(a).total_cmp(&key(b)),
            });
            for c in cells.into_iter().take(RETEST_PER_FINDING) {
                if !out.contains(&c) && out.len() < RETEST_MAX {
                    out.push(c);
                }
            }
        }
        out
    }

    /// Every finding with its re-test, in the order people read them:
    /// confirmed before transient, hosts and ranks before links, then the
    /// worst first.
    fn suspects(&self, retested: bool) -> Vec<Suspect> {
        let hosts = self.hosts_by_rank();
        let rule = Rule::default();
        let mut out: Vec<Suspect> = self
            .findings
            .iter()
            .map(|(metric, f)| {
                let map = if *metric == "latency" {
                    &self.retest_lat
                } else {
                    &self.retest_bw
                };
                let retest: Vec<f64> = f.cells.iter().filter_map(|c| map.get(c).copied()).collect();
                let confirmed = (retested && !retest.is_empty())
                    .then(|| outliers::confirmed(f, &retest, better_of(metric), &rule));
                Suspect {
                    metric,
                    line: f.describe(metric, &hosts),
                    finding: f.clone(),
                    retest,
                    confirmed,
                }
            })
            .collect();
        out.sort_by(|a, b| {
            let key = |s: &Suspect| {
                (
                    s.confirmed == Some(false),
                    matches!(
                        s.finding.subject,
                        crate::measure::outliers::Subject::Link { .. }
                    ),
                )
            };
            key(a)
                .cmp(&key(b))
                .then(b.finding.factor.total_cmp(&a.finding.factor))
        });
        out
    }

    fn health(&self, cfg: &MeshConfig, m: &Matrices) -> Health {
        let name = |r: usize| format!("rank {r} ({})", self.ranks[r].host);
        let mut failing = Vec::new();
        let mut bad = vec![vec![false; self.n]; self.n];
        let mut valued = vec![vec![false; self.n]; self.n];
        for f in 0..self.n {
            for t in (0..self.n).filter(|&t| t != f) {
                let (lat, bw) = (m.latency_p50_us[f][t], m.bandwidth_mbps[f][t]);
                valued[f][t] = lat.is_some() || bw.is_some();
                if let (Some(min), Some(b)) = (cfg.min_bandwidth, bw)
                    && b < min
                {
                    failing.push(format!(
                        "{} → {}: {b:.0} MB/s < {min} MB/s",
                        name(f),
                        name(t)
                    ));
                    bad[f][t] = true;
                }
                if let (Some(max), Some(l)) = (cfg.max_latency, lat) {
                    let max_us = max.as_secs_f64() * 1e6;
                    if l > max_us {
                        failing.push(format!(
                            "{} → {}: {} µs > {} µs",
                            name(f),
                            name(t),
                            crate::units::si(l),
                            crate::units::si(max_us)
                        ));
                        bad[f][t] = true;
                    }
                }
            }
        }
        let failing_ranks = (0..self.n)
            .filter(|&r| {
                let cells: Vec<(usize, usize)> = (0..self.n)
                    .filter(|&o| o != r)
                    .flat_map(|o| [(r, o), (o, r)])
                    .filter(|&(a, b)| valued[a][b])
                    .collect();
                !cells.is_empty() && cells.iter().all(|&(a, b)| bad[a][b])
            })
            .collect();
        Health {
            min_bandwidth_mbps: cfg.min_bandwidth,
            max_latency_us: cfg.max_latency.map(|d| d.as_secs_f64() * 1e6),
            passed: failing.is_empty(),
            failing,
            failing_ranks,
        }
    }

    fn warnings(&self, cfg: &MeshConfig, env: &crate::measure::env::Env) -> Vec<String> {
        let mut w = env.warnings();
        if let Some((r, d)) = cfg.inject_delay {
            w.push(format!(
                "rank {r} was slowed on purpose by {} before every message it sent (--inject-delay)",
                humantime::format_duration(d)
            ));
        }
        let mut by_host: BTreeMap<&str, (usize, Vec<usize>)> = BTreeMap::new();
        for r in &self.ranks {
            let e = by_host.entry(&r.host).or_default();
            e.0 += 1;
            e.1.extend(&r.allowed_cpus);
        }
        for (host, (ranks, mut cpus)) in by_host {
            cpus.sort_unstable();
            cpus.dedup();
            if !cpus.is_empty() && ranks > cpus.len() {
                w.push(format!(
                    "{host}: {ranks} ranks share {} CPUs, so ranks take turns on a core and the figures include the scheduler's time slices",
                    cpus.len()
                ));
            }
        }
        let few = self
            .pairs
            .iter()
            .flatten()
            .filter(|p| p.from != p.to && !p.missing)
            .filter(|p| p.latency.iter().any(|l| l.oneway.count < 100))
            .count();
        if few > 0 {
            w.push(format!(
                "{few} pairs have fewer than 100 latency samples: their p99 is the largest sample or near it; give --duration more time"
            ));
        }
        w
    }

    pub fn finish(
        self,
        cfg: &MeshConfig,
        schedule: Schedule,
        retested: bool,
        err: Option<&Error>,
    ) -> MeshRun {
        self.finish_in(
            cfg,
            schedule,
            retested,
            err,
            crate::measure::env::Env::capture(),
        )
    }

    /// [`finish`](Collector::finish) with the environment given: a
    /// checkpoint after each round reuses one taken before the first
    /// (taking it calibrates the clock, on a host where others measure).
    pub fn finish_in(
        self,
        cfg: &MeshConfig,
        schedule: Schedule,
        retested: bool,
        err: Option<&Error>,
        env: crate::measure::env::Env,
    ) -> MeshRun {
        let matrices = self.matrices();
        let health = self.health(cfg, &matrices);
        let missing: Vec<[usize; 2]> = self
            .pairs
            .iter()
            .flatten()
            .filter(|p| p.from != p.to && p.missing)
            .map(|p| [p.from, p.to])
            .collect();
        let r0 = &self.ranks[0];
        let placement = crate::measure::placement::Placement {
            pinned: r0.allowed_cpus.len() == 1,
            initiator_cpu: r0.cpu,
            responder_cpu: None,
            same_core: false,
            smt_siblings: false,
            allowed_cpus: r0.allowed_cpus.clone(),
        };
        let warnings = self.warnings(cfg, &env);
        let merged = self
            .merged
            .iter()
            .map(|(scope, (pairs, rec))| Merged {
                scope: *scope,
                pairs: *pairs,
                oneway: rec.summary(),
            })
            .collect();
        let suspects = self.suspects(retested);
        Run {
            experiment: "mesh",
            complete: err.is_none(),
            stopped_by: err.map(stopped_by),
            env,
            options: serde_json::to_value(cfg).unwrap_or_default(),
            placement,
            points: self
                .pairs
                .into_iter()
                .flatten()
                .filter(|p| p.from != p.to)
                .collect(),
            extra: MeshExtra {
                ranks_total: self.n,
                ranks: self.ranks,
                schedule,
                matrices,
                merged,
                baselines: self.baselines,
                suspects,
                health,
                missing,
            },
            warnings,
            devices: Vec::new(),
            limits: Vec::new(),
        }
    }
}

/// Why an MPI run stopped, in the results: a signal is Ctrl-C or the
/// launcher ending the job, which it does when a rank exits or is killed.
pub fn stopped_by(e: &Error) -> String {
    match e {
        Error::Interrupted => {
            "interrupted: Ctrl-C, or the launcher ended the job (it does when a rank exits or is killed)".into()
        }
        e => e.to_string(),
    }
}

fn better_of(metric: &str) -> Better {
    if metric == "latency" {
        Better::Lower
    } else {
        Better::Higher
    }
}

/// Decimal MB/s of a window of `window` messages of `size` bytes taking `ns`.
fn mbps(size: u64, window: u32, ns: f64) -> f64 {
    if ns <= 0.0 {
        0.0
    } else {
        (size * window as u64) as f64 / ns * 1e3
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(rank: usize) -> RankInfo {
        RankInfo {
            rank,
            host: "h".into(),
            cpu: None,
            core: None,
            socket: None,
            allowed_cpus: vec![0, 1],
            pid: 1,
        }
    }

    #[test]
    fn a_latency_point_keeps_its_histogram_and_blocks_only() {
        let cfg = MeshConfig::default();
        let mut col = Collector::new(&cfg, vec![info(0), info(1)], &super::super::tournament(2));
        let mut rec = Recorder::new();
        let mut blocks = Vec::new();
        for b in 0..10u64 {
            let mut r = Recorder::new();
            for i in 0..50 {
                r.record(1_000 + 10 * b + i);
            }
            rec.merge(&r);
            blocks.push(r.summary());
        }
        col.file(RankReport {
            measured: vec![Measured {
                from: 0,
                to: 1,
                round: 0,
                retest: false,
                kind: Kind::Latency,
                size: cfg.latency_matrix_size(),
                window: 1,
                warmup: 3,
                timed_ns: 1_000_000,
                rec: rec.to_wire(),
                blocks,
            }],
            errors: Vec::new(),
        });
        let schedule = Schedule {
            kind: "tournament",
            mode: "sequential",
            rounds: 1,
            pairs_per_round: 1,
            pinned_pairs: false,
        };
        let run = col.finish(&cfg, schedule, false, None);
        let p = run
            .points
            .iter()
            .find(|p| (p.from, p.to) == (0, 1))
            .unwrap();
        let l = &p.latency[0];
        let h = Distribution::decode(l.spread.histogram.as_ref().unwrap().as_str()).unwrap();
        assert_eq!(h.len(), 500);
        assert_eq!(l.spread.blocks.len(), 10);
        assert_eq!(l.spread.blocks[3]["count"], 50.0);
        assert!(l.spread.blocks[9]["p50_ns"] > l.spread.blocks[0]["p50_ns"]);
        let j = serde_json::to_value(l).unwrap();
        assert!(j["histogram"].is_string() && j["intervals"].as_array().unwrap().len() == 10);
        assert!(j.get("repeats").is_none());
    }
}
