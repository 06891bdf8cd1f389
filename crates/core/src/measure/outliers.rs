//! Outliers in a mesh: which ranks, hosts and links of an all-pairs matrix sit
//! far from the rest, and which side of them is at fault.
//!
//! `xferbench mesh` measures every ordered pair of ranks i → j (one-way
//! latency, lower is better, or bandwidth, higher is better) into an N×N
//! matrix `cells[from][to]`; [`analyse`] judges that matrix. It is pure (no
//! I/O, no clock) and deterministic: the same matrix gives the same findings.
//!
//! The rule, in the order it is applied:
//!
//! - **Scopes.** A pair on one host (intra-host: shared memory) and a pair
//!   across hosts (inter-host: the network) are different things, so each
//!   scope is judged on its own against its own baseline: fast intra-host
//!   pairs never make inter-host pairs look slow. A scope with fewer than 2
//!   valued cells is not judged. Missing cells (`None`) and values that are
//!   not finite and positive take no part.
//! - **Robust statistics.** Baselines are medians and spreads are MADs
//!   (median absolute deviation, ×1.4826 so that it estimates σ for normal
//!   noise); the robust z of x is (x − median) / (1.4826 · MAD), oriented so
//!   that positive is worse. One bad rank moves neither, unlike a mean and a
//!   standard deviation.
//! - **Factor floor.** Nothing is flagged unless it is at least
//!   [`Rule::min_factor`] (default 1.5) times worse than its baseline, however
//!   large its z: on quiet hardware the MAD is tiny and 3 % of noise would
//!   otherwise be an outlier.
//! - **Ranks, leave-one-out.** A median over all cells fails: with 3 ranks one
//!   bad rank spoils 4 of the 6 cells. So rank r is set against its
//!   baseline, the median of the scope's cells that do not involve r (a rank
//!   without such cells, as with N = 2, is not judged). Its factor is the
//!   worst of its row (r → all), its column (all → r) and both together, each
//!   a median against that baseline. r is flagged when
//!   1. its factor is ≥ `min_factor`, and
//!   2. the robust z of ln(factor) against the median and MAD of the other
//!      ranks' ln(factor) is ≥ [`Rule::z`] (default 3.5). The others only: a
//!      bad rank would widen its own yardstick, which among 4 ranks hides
//!      it. With fewer than 3 ranks, or a MAD of 0, this test becomes "is
//!      the single worst rank".
//!
//!   The side at fault is [`Side::Sends`] when only the row reaches
//!   `min_factor`, [`Side::Receives`] when only the column does,
//!   [`Side::Both`] otherwise.
//! - **Neighbours of bad ranks.** A good rank whose few cells are mostly with
//!   bad ranks looks bad too (4 ranks to a host, 2 of them bad: 4 of a good
//!   neighbour's 6 intra-host cells are bad). So the flagged ranks are kept
//!   one at a time, the one with the largest share of cells each
//!   `min_factor` worse first (then the largest factor), each time
//!   re-judging the others without the cells that touch ranks already kept;
//!   one that falls below `min_factor` is cleared, one with no cells left to
//!   re-judge stays flagged.
//! - **Hosts.** With at least 3 hosts the same test runs with hosts in place
//!   of ranks over the inter-host cells (host h's cells against the
//!   inter-host cells touching neither end on h). A host whose ranks are all
//!   flagged in a scope, or which this test flags and which is still
//!   `min_factor` worse without the cells of its flagged ranks (two bad ranks
//!   of four do not make a bad host), is reported once as a host in place of
//!   its ranks, provided its cells in that scope are `min_factor` worse than
//!   the scope's cells not touching it.
//! - **Links.** The scope's cells that no rank or host finding rests on give
//!   a median m and a MAD; a cell is a bad link when its robust z in the bad
//!   direction is ≥ `z` and it is ≥ `min_factor` times worse than m (with a
//!   MAD of 0, the factor test alone).
//!
//! Every [`Finding`] gives `ratio` = value / baseline as measured (bandwidth
//! 0.41×, latency 2.3×) and `factor`, how many times worse that is (≥ 1 for
//! anything flagged): `1 / ratio` for bandwidth, `ratio` for latency.

use serde::{Deserialize, Serialize};

/// Scales a MAD to estimate the standard deviation of normal noise.
const MAD_SCALE: f64 = 1.4826;

/// Which way a measurement improves, so that "worse" has one meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// Bandwidth: a ratio below 1 is worse.
    Higher,
    /// Latency: a ratio above 1 is worse.
    Lower,
}

impl Better {
    /// How many times worse `value` is than `baseline` (above 1 is worse).
    fn factor(self, value: f64, baseline: f64) -> f64 {
        match self {
            Better::Higher => baseline / value,
            Better::Lower => value / baseline,
        }
    }
}

/// The thresholds an outlier must pass, both of them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rule {
    /// The robust z (in the bad direction) a rank, host or link must reach.
    pub z: f64,
    /// How many times worse than its baseline it must also be (≥ 1), so that
    /// small noise on quiet hardware is never an outlier.
    pub min_factor: f64,
}

impl Default for Rule {
    /// z ≥ 3.5 (the usual cut for the MAD-based z) and at least 1.5× worse.
    fn default() -> Self {
        Rule {
            z: 3.5,
            min_factor: 1.5,
        }
    }
}

/// Where a cell's two ranks run: judged separately, each with its own baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Both ranks on one host.
    Intra,
    /// The ranks on different hosts.
    Inter,
}

/// Which of a subject's cells are bad.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// Only what it sends (its row, from → *).
    Sends,
    /// Only what it receives (its column, * → to).
    Receives,
    /// Both; also a link's one cell, which has its direction already.
    /// Mesh files from before this rule (`bench/mesh-fixture.py`) said
    /// `high` or `low`, which way the value was off, and always blamed
    /// both a rank's row and column, or both ways of a link.
    #[serde(alias = "high", alias = "low")]
    Both,
}

/// What a finding blames.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Subject {
    /// A whole host: all its ranks together.
    Host {
        /// The host's name.
        host: String,
        /// Its ranks, ascending.
        ranks: Vec<usize>,
    },
    /// One rank: its row, its column or both.
    Rank {
        /// The rank.
        rank: usize,
        /// The host it runs on.
        host: String,
    },
    /// One ordered pair, from → to.
    Link {
        /// The sending rank.
        from: usize,
        /// The receiving rank.
        to: usize,
    },
}

/// The median and spread of one scope's valued cells, for the report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScopeStats {
    /// Which cells.
    pub scope: Scope,
    /// How many valued cells the scope has.
    pub cells: usize,
    /// Their median.
    pub median: f64,
    /// Their median absolute deviation (unscaled).
    pub mad: f64,
}

/// One rank, host or link that sits far from the rest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// What is blamed.
    pub subject: Subject,
    /// The scope whose cells it was judged on.
    pub scope: Scope,
    /// Which of its cells are bad ([`Side::Both`] for a link).
    pub side: Side,
    /// The median of the cells it rests on (a link: the cell).
    pub value: f64,
    /// What it was set against: the median of the scope's cells not involving
    /// it (a link: of the cells no rank or host finding rests on).
    pub baseline: f64,
    /// value / baseline, as measured.
    pub ratio: f64,
    /// How many times worse than the baseline (≥ 1).
    pub factor: f64,
    /// The robust z it passed, when the MAD was defined and not 0.
    pub z: Option<f64>,
    /// The cells (from, to) it rests on, row-major.
    pub cells: Vec<(usize, usize)>,
}

/// What [`analyse`] found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Analysis {
    /// One entry per scope that has valued cells, intra-host first.
    pub scopes: Vec<ScopeStats>,
    /// Worst first (factor descending; hosts, then ranks, then links at an
    /// equal factor).
    pub findings: Vec<Finding>,
}

impl Finding {
    /// One line for a person, `what` being "bandwidth" or "latency", e.g.
    /// `rank 5 (node03) → all: bandwidth 0.41× the median of the other
    /// inter-host pairs`.
    pub fn describe(&self, what: &str, hosts: &[String]) -> String {
        let scope = match self.scope {
            Scope::Intra => "intra-host",
            Scope::Inter => "inter-host",
        };
        let rank = |r: usize| format!("rank {r} ({})", host_of(hosts, r));
        let (who, pairs) = match &self.subject {
            Subject::Rank { rank: r, host } => {
                let me = format!("rank {r} ({host})");
                let who = match self.side {
                    Side::Sends => format!("{me} → all"),
                    Side::Receives => format!("all → {me}"),
                    Side::Both => format!("{me} ↔ all"),
                };
                (who, format!("the other {scope} pairs"))
            }
            Subject::Host { host, ranks } => {
                let list = ranks.iter().map(usize::to_string).collect::<Vec<_>>();
                let me = format!("host {host} (ranks {})", list.join(", "));
                let who = match (self.scope, self.side) {
                    (Scope::Intra, _) => format!("within {me}"),
                    (Scope::Inter, Side::Sends) => format!("{me} → other hosts"),
                    (Scope::Inter, Side::Receives) => format!("other hosts → {me}"),
                    (Scope::Inter, Side::Both) => format!("{me} ↔ other hosts"),
                };
                (who, format!("the other {scope} pairs"))
            }
            Subject::Link { from, to } => (
                format!("{} → {}", rank(*from), rank(*to)),
                format!("{scope} pairs"),
            ),
        };
        format!("{who}: {what} {:.2}× the median of {pairs}", self.ratio)
    }
}

/// Whether a re-test bears a finding out: the median of the re-measured cells
/// (invalid values ignored) is still at least `rule.min_factor` times worse than
/// the finding's baseline. No valid value confirms nothing.
pub fn confirmed(f: &Finding, retest: &[f64], better: Better, rule: &Rule) -> bool {
    let mut values: Vec<f64> = retest.iter().copied().filter(|v| valid(*v)).collect();
    !values.is_empty() && better.factor(median(&mut values), f.baseline) >= rule.min_factor
}

/// Judges an all-pairs matrix `cells[from][to]` of ranks on `hosts[rank]` by
/// the rule in the module's documentation. Ranks beyond `hosts` share one
/// unnamed host; short rows are missing cells.
pub fn analyse(
    cells: &[Vec<Option<f64>>],
    hosts: &[String],
    better: Better,
    rule: &Rule,
) -> Analysis {
    let n = cells.len();
    let host_names: Vec<&str> = (0..n).map(|r| host_of(hosts, r)).collect();
    // Hosts in order of their first rank, and each rank's host index.
    let mut host_list: Vec<&str> = Vec::new();
    let host_ix: Vec<usize> = host_names
        .iter()
        .map(|h| match host_list.iter().position(|x| x == h) {
            Some(i) => i,
            None => {
                host_list.push(h);
                host_list.len() - 1
            }
        })
        .collect();

    let mut scopes = Vec::new();
    let mut findings = Vec::new();
    for scope in [Scope::Intra, Scope::Inter] {
        let scope_cells: Vec<Cell> = (0..n)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .filter(|&(i, j)| i != j && (host_ix[i] == host_ix[j]) == (scope == Scope::Intra))
            .filter_map(|(i, j)| {
                let v = cells[i].get(j).copied().flatten()?;
                valid(v).then_some(Cell { from: i, to: j, v })
            })
            .collect();
        if scope_cells.is_empty() {
            continue;
        }
        let mut values: Vec<f64> = scope_cells.iter().map(|c| c.v).collect();
        let (median, mad) = median_mad(&mut values);
        scopes.push(ScopeStats {
            scope,
            cells: scope_cells.len(),
            median,
            mad,
        });
        if scope_cells.len() >= 2 {
            let judge = Judge {
                cells: &scope_cells,
                scope,
                better,
                rule,
            };
            findings.extend(judge.run(&host_ix, &host_list));
        }
    }
    findings.sort_by(|a, b| {
        b.factor
            .total_cmp(&a.factor)
            .then(kind_order(&a.subject).cmp(&kind_order(&b.subject)))
            .then(a.scope.cmp(&b.scope))
            .then(a.cells.first().cmp(&b.cells.first()))
    });
    Analysis { scopes, findings }
}

/// One valued cell of a scope.
struct Cell {
    from: usize,
    to: usize,
    v: f64,
}

/// A rank or a host against its leave-one-out baseline (indices into the
/// scope's cells).
struct Group {
    row: Vec<usize>,
    column: Vec<usize>,
    all: Vec<usize>,
    baseline: f64,
    row_factor: Option<f64>,
    column_factor: Option<f64>,
    /// The worst of row, column and both together: what the z is taken on.
    factor: f64,
}

impl Group {
    /// The side at fault and the cells it rests on: the row or the column
    /// alone when only it reaches `min_factor`, else all.
    fn side(&self, min_factor: f64) -> (Side, &[usize]) {
        let bad = |f: Option<f64>| f.is_some_and(|f| f >= min_factor);
        match (bad(self.row_factor), bad(self.column_factor)) {
            (true, false) => (Side::Sends, &self.row),
            (false, true) => (Side::Receives, &self.column),
            _ => (Side::Both, &self.all),
        }
    }
}

/// Whether a candidate passed, and the z it had.
#[derive(Default)]
struct Verdict {
    flagged: bool,
    z: Option<f64>,
}

/// Judges one scope's cells.
struct Judge<'a> {
    cells: &'a [Cell],
    scope: Scope,
    better: Better,
    rule: &'a Rule,
}

impl Judge<'_> {
    /// Ranks, then hosts, then links.
    fn run(&self, host_ix: &[usize], host_list: &[&str]) -> Vec<Finding> {
        let n = host_ix.len();
        let rank_members: Vec<Vec<usize>> = (0..n).map(|r| vec![r]).collect();
        let (ranks, rank_verdicts) = self.outliers(&rank_members, n);
        let host_members: Vec<Vec<usize>> = (0..host_list.len())
            .map(|h| (0..n).filter(|&r| host_ix[r] == h).collect())
            .collect();
        let flagged: Vec<bool> = rank_verdicts.iter().map(|v| v.flagged).collect();
        let (hosts, host_verdicts) = if self.scope == Scope::Inter && host_list.len() >= 3 {
            let (groups, verdicts) = self.outliers(&host_members, n);
            (groups, Some(verdicts))
        } else {
            (
                host_members
                    .iter()
                    .map(|m| self.group(m, &vec![false; n]))
                    .collect(),
                None,
            )
        };

        let mut findings = Vec::new();
        let mut absorbed = vec![false; n];
        for (h, members) in host_members.into_iter().enumerate() {
            let by_ranks = members.iter().all(|&r| flagged[r]);
            // The host test counts only when the host is bad beyond its flagged
            // ranks: two bad ranks of four make half its cells bad.
            let by_test = host_verdicts.as_ref().is_some_and(|v| v[h].flagged)
                && self
                    .group(&members, &flagged)
                    .is_some_and(|g| g.factor >= self.rule.min_factor);
            let Some(group) = hosts[h]
                .as_ref()
                .filter(|g| g.factor >= self.rule.min_factor)
            else {
                continue;
            };
            if by_test || by_ranks {
                members.iter().for_each(|&r| absorbed[r] = true);
                let z = host_verdicts.as_ref().and_then(|v| v[h].z);
                let subject = Subject::Host {
                    host: host_list[h].to_string(),
                    ranks: members,
                };
                findings.push(self.finding(subject, group, z));
            }
        }
        for (r, group) in ranks.iter().enumerate() {
            if let (Some(group), false) = (group, absorbed[r])
                && rank_verdicts[r].flagged
            {
                let subject = Subject::Rank {
                    rank: r,
                    host: host_list[host_ix[r]].to_string(),
                };
                findings.push(self.finding(subject, group, rank_verdicts[r].z));
            }
        }
        let mut covered: Vec<(usize, usize)> = findings
            .iter()
            .flat_map(|f| f.cells.iter().copied())
            .collect();
        covered.sort_unstable();
        findings.extend(self.links(&covered));
        findings
    }

    /// The groups of ranks `members` (ranks or hosts) and which of them are
    /// outliers. The flagged ones are kept one at a time, each time
    /// regrouping those left without the cells that touch ranks already kept
    /// and taking the one with the largest share of bad cells (then the
    /// largest factor); one that no longer reaches min_factor was bad only
    /// through its cells with worse ones (with 4 ranks to a host, 2 bad ranks
    /// spoil 4 of a good neighbour's 6 intra-host cells) and is cleared. One
    /// with no cells left to re-judge (the last rank of a bad host) stays.
    fn outliers(&self, members: &[Vec<usize>], n: usize) -> (Vec<Option<Group>>, Vec<Verdict>) {
        let mut kept = vec![false; n];
        let mut groups: Vec<Option<Group>> = members.iter().map(|m| self.group(m, &kept)).collect();
        let mut verdicts = self.verdicts(&groups);
        let mut pending: Vec<usize> = (0..members.len())
            .filter(|&g| verdicts[g].flagged)
            .collect();
        while !pending.is_empty() {
            let regrouped = pending.iter().filter_map(|&g| {
                let group = self.group(&members[g], &kept)?;
                (group.factor >= self.rule.min_factor).then(|| (g, self.share(&group), group))
            });
            // Most of its cells bad, then the larger factor, then the lowest index.
            let worst = regrouped.max_by(|a, b| {
                (a.1.total_cmp(&b.1))
                    .then(a.2.factor.total_cmp(&b.2.factor))
                    .then(b.0.cmp(&a.0))
            });
            let Some((g, _, group)) = worst else { break };
            members[g].iter().for_each(|&r| kept[r] = true);
            groups[g] = Some(group);
            pending.retain(|&p| p != g);
        }
        for g in pending {
            // Cleared on evidence only: with no cells left to re-judge it stays.
            verdicts[g].flagged = self.group(&members[g], &kept).is_none();
        }
        (groups, verdicts)
    }

    /// The cells involving the ranks `members` against the scope's other
    /// cells, both without the cells touching a `skip` rank; None without
    /// such cells or without a baseline.
    fn group(&self, members: &[usize], skip: &[bool]) -> Option<Group> {
        let (mut row, mut column, mut all, mut rest) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (k, c) in self.cells.iter().enumerate() {
            if skip[c.from] || skip[c.to] {
                continue;
            }
            let (sends, receives) = (members.contains(&c.from), members.contains(&c.to));
            if sends {
                row.push(k);
            }
            if receives {
                column.push(k);
            }
            if sends || receives {
                all.push(k);
            } else {
                rest.push(c.v);
            }
        }
        if all.is_empty() || rest.is_empty() {
            return None;
        }
        let baseline = median(&mut rest);
        let factor_of = |ix: &[usize]| {
            (!ix.is_empty()).then(|| self.better.factor(self.median_of(ix), baseline))
        };
        let (row_factor, column_factor) = (factor_of(&row), factor_of(&column));
        let all_factor = self.better.factor(self.median_of(&all), baseline);
        let factor = [row_factor, column_factor]
            .into_iter()
            .flatten()
            .fold(all_factor, f64::max);
        Some(Group {
            row,
            column,
            all,
            baseline,
            row_factor,
            column_factor,
            factor,
        })
    }

    /// Which groups are outliers among their peers: factor ≥ min_factor and
    /// robust z of ln(factor) against the other judged groups ≥ z, or, with
    /// fewer than 3 judged or a MAD of 0, the single worst.
    fn verdicts(&self, groups: &[Option<Group>]) -> Vec<Verdict> {
        let judged: Vec<(usize, f64)> = groups
            .iter()
            .enumerate()
            .filter_map(|(i, g)| Some((i, g.as_ref()?.factor)))
            .collect();
        let top = judged.iter().map(|j| j.1).fold(f64::NEG_INFINITY, f64::max);
        let single_worst = judged.iter().filter(|j| j.1 == top).count() == 1;
        let mut verdicts: Vec<Verdict> = groups.iter().map(|_| Verdict::default()).collect();
        for &(i, factor) in &judged {
            // Against the others only: a bad group must not widen its own yardstick.
            let mut others: Vec<f64> = judged
                .iter()
                .filter(|j| j.0 != i)
                .map(|j| j.1.ln())
                .collect();
            let (centre, mad) = median_mad(&mut others);
            let spread = MAD_SCALE * mad;
            let z = (judged.len() >= 3 && spread > 0.0).then(|| (factor.ln() - centre) / spread);
            let stands_out = z.map_or(single_worst && factor == top, |z| z >= self.rule.z);
            verdicts[i] = Verdict {
                flagged: stands_out && factor >= self.rule.min_factor,
                z,
            };
        }
        verdicts
    }

    /// A rank or host finding, on the side(s) that reach min_factor.
    fn finding(&self, subject: Subject, g: &Group, z: Option<f64>) -> Finding {
        let (side, ix) = g.side(self.rule.min_factor);
        let value = self.median_of(ix);
        Finding {
            subject,
            scope: self.scope,
            side,
            value,
            baseline: g.baseline,
            ratio: value / g.baseline,
            factor: self.better.factor(value, g.baseline),
            z,
            cells: ix
                .iter()
                .map(|&k| (self.cells[k].from, self.cells[k].to))
                .collect(),
        }
    }

    /// The share of the cells on a group's bad side that are each
    /// `min_factor` worse than its baseline.
    fn share(&self, g: &Group) -> f64 {
        let (_, ix) = g.side(self.rule.min_factor);
        let bad = ix
            .iter()
            .filter(|&&k| self.better.factor(self.cells[k].v, g.baseline) >= self.rule.min_factor);
        bad.count() as f64 / ix.len() as f64
    }

    /// Single bad cells among those no other finding rests on (`covered`, sorted).
    fn links(&self, covered: &[(usize, usize)]) -> Vec<Finding> {
        let rest: Vec<&Cell> = self
            .cells
            .iter()
            .filter(|c| covered.binary_search(&(c.from, c.to)).is_err())
            .collect();
        if rest.len() < 2 {
            return Vec::new();
        }
        let (m, mad) = median_mad(&mut rest.iter().map(|c| c.v).collect::<Vec<_>>());
        let spread = MAD_SCALE * mad;
        rest.iter()
            .filter_map(|c| {
                let factor = self.better.factor(c.v, m);
                let worse_by = match self.better {
                    Better::Higher => m - c.v,
                    Better::Lower => c.v - m,
                };
                let z = (spread > 0.0).then(|| worse_by / spread);
                let passes = factor >= self.rule.min_factor && z.is_none_or(|z| z >= self.rule.z);
                passes.then(|| Finding {
                    subject: Subject::Link {
                        from: c.from,
                        to: c.to,
                    },
                    scope: self.scope,
                    side: Side::Both,
                    value: c.v,
                    baseline: m,
                    ratio: c.v / m,
                    factor,
                    z,
                    cells: vec![(c.from, c.to)],
                })
            })
            .collect()
    }

    fn median_of(&self, ix: &[usize]) -> f64 {
        median(&mut ix.iter().map(|&k| self.cells[k].v).collect::<Vec<_>>())
    }
}

/// A measurement that can take part: finite and positive.
fn valid(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

fn host_of(hosts: &[String], rank: usize) -> &str {
    hosts.get(rank).map_or("", String::as_str)
}

/// Hosts, then ranks, then links, at an equal factor.
fn kind_order(s: &Subject) -> u8 {
    match s {
        Subject::Host { .. } => 0,
        Subject::Rank { .. } => 1,
        Subject::Link { .. } => 2,
    }
}

/// The middle value, or the mean of the middle two; sorts `v`. Not for empty input.
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    }
}

/// Median and (unscaled) median absolute deviation; (NaN, NaN) when empty.
fn median_mad(v: &mut [f64]) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let m = median(v);
    let mut dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    (m, median(&mut dev))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64: deterministic jitter without a dependency.
    struct Rng(u64);

    impl Rng {
        /// A factor in [1 − pct, 1 + pct].
        fn jitter(&mut self, pct: f64) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            let unit = (self.0 >> 11) as f64 / (1u64 << 53) as f64;
            1.0 + pct * (2.0 * unit - 1.0)
        }
    }

    /// `n` ranks, `per_host` to a host: node00, node01, …
    fn hosts(n: usize, per_host: usize) -> Vec<String> {
        (0..n).map(|r| format!("node{:02}", r / per_host)).collect()
    }

    /// `value(from, to)` with ±`pct` jitter off the diagonal.
    fn matrix(
        n: usize,
        seed: u64,
        pct: f64,
        value: impl Fn(usize, usize) -> f64,
    ) -> Vec<Vec<Option<f64>>> {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| (i != j).then(|| value(i, j) * rng.jitter(pct)))
                    .collect()
            })
            .collect()
    }

    fn subjects(a: &Analysis) -> Vec<(Subject, Scope, Side)> {
        a.findings
            .iter()
            .map(|f| (f.subject.clone(), f.scope, f.side))
            .collect()
    }

    fn rank(rank: usize, host: &str) -> Subject {
        Subject::Rank {
            rank,
            host: host.into(),
        }
    }

    const SEEDS: std::ops::RangeInclusive<u64> = 1..=20;

    #[test]
    fn three_ranks_one_host_bad_node_is_the_only_finding() {
        let h = hosts(3, 3);
        for seed in SEEDS {
            let m = matrix(3, seed, 0.1, |i, j| {
                if i == 1 || j == 1 { 10.0 / 3.0 } else { 10.0 }
            });
            let a = analyse(&m, &h, Better::Higher, &Rule::default());
            assert_eq!(
                subjects(&a),
                [(rank(1, "node00"), Scope::Intra, Side::Both)],
                "seed {seed}"
            );
            let f = &a.findings[0];
            assert!(f.factor > 2.4 && f.factor < 3.7, "{f:?}");
            assert_eq!(f.cells, [(0, 1), (1, 0), (1, 2), (2, 1)]);
        }
    }

    #[test]
    fn four_ranks_bad_node() {
        let h = hosts(4, 4);
        for seed in SEEDS {
            let m = matrix(
                4,
                seed,
                0.1,
                |i, j| if i == 2 || j == 2 { 3.0 } else { 10.0 },
            );
            let a = analyse(&m, &h, Better::Higher, &Rule::default());
            assert_eq!(
                subjects(&a),
                [(rank(2, "node00"), Scope::Intra, Side::Both)],
                "seed {seed}"
            );
        }
    }

    #[test]
    fn slow_link_is_only_a_link() {
        let h = hosts(16, 4);
        for seed in SEEDS {
            let m = matrix(
                16,
                seed,
                0.1,
                |i, j| if (i, j) == (2, 7) { 3.0 } else { 10.0 },
            );
            let a = analyse(&m, &h, Better::Higher, &Rule::default());
            let link = Subject::Link { from: 2, to: 7 };
            assert_eq!(
                subjects(&a),
                [(link, Scope::Inter, Side::Both)],
                "seed {seed}"
            );
            assert!(a.findings[0].z.unwrap() > 3.5);
        }
    }

    #[test]
    fn bad_host_is_one_host_finding() {
        let h = hosts(16, 4);
        for seed in SEEDS {
            let m = matrix(16, seed, 0.1, |i, j| {
                let cross = i / 4 != j / 4;
                if cross && (i / 4 == 2 || j / 4 == 2) {
                    3.0
                } else {
                    10.0
                }
            });
            let a = analyse(&m, &h, Better::Higher, &Rule::default());
            let host = Subject::Host {
                host: "node02".into(),
                ranks: vec![8, 9, 10, 11],
            };
            assert_eq!(
                subjects(&a),
                [(host, Scope::Inter, Side::Both)],
                "seed {seed}"
            );
            assert_eq!(a.findings[0].cells.len(), 2 * 4 * 12);
        }
    }

    #[test]
    fn latency_node_twice_slower_in_both_scopes() {
        let h = hosts(16, 4);
        for seed in SEEDS {
            let m = matrix(16, seed, 0.1, |i, j| {
                let base = if i / 4 == j / 4 { 1.0 } else { 5.0 };
                if i == 5 || j == 5 { 2.0 * base } else { base }
            });
            let a = analyse(&m, &h, Better::Lower, &Rule::default());
            let mut got = subjects(&a);
            got.sort_by_key(|s| s.1);
            let want = [Scope::Intra, Scope::Inter].map(|s| (rank(5, "node01"), s, Side::Both));
            assert_eq!(got, want, "seed {seed}");
            assert!(
                a.findings
                    .iter()
                    .all(|f| f.ratio > 1.5 && f.factor == f.ratio)
            );
        }
    }

    #[test]
    fn clean_matrices_flag_nothing() {
        for (n, per_host) in [(3, 3), (4, 4), (4, 2), (16, 4), (64, 8)] {
            let h = hosts(n, per_host);
            for seed in 1..=8 {
                let m = matrix(n, seed, 0.1, |i, j| {
                    if i / per_host == j / per_host {
                        40.0
                    } else {
                        10.0
                    }
                });
                for better in [Better::Higher, Better::Lower] {
                    let a = analyse(&m, &h, better, &Rule::default());
                    assert_eq!(a.findings, [], "n {n} seed {seed} {better:?}");
                }
            }
        }
    }

    #[test]
    fn missing_cells_are_tolerated() {
        let h = hosts(16, 4);
        for seed in SEEDS {
            let mut m = matrix(
                16,
                seed,
                0.1,
                |i, j| if i == 9 || j == 9 { 3.0 } else { 10.0 },
            );
            for (k, cell) in m.iter_mut().flatten().enumerate() {
                if k % 7 == 0 {
                    *cell = None;
                }
            }
            m[3] = vec![None; 16];
            m[4].truncate(5);
            m[6][1] = Some(f64::NAN);
            m[6][2] = Some(0.0);
            let a = analyse(&m, &h, Better::Higher, &Rule::default());
            let mut got = subjects(&a);
            got.sort_by_key(|s| s.1);
            let want = [Scope::Intra, Scope::Inter].map(|s| (rank(9, "node02"), s, Side::Both));
            assert_eq!(got, want, "seed {seed}");
        }
        // Nothing valued at all, and no hosts given.
        let a = analyse(
            &[vec![None; 3], vec![None; 3], vec![None; 3]],
            &[],
            Better::Lower,
            &Rule::default(),
        );
        assert_eq!(
            a,
            Analysis {
                scopes: vec![],
                findings: vec![]
            }
        );
        assert_eq!(
            analyse(&[], &[], Better::Higher, &Rule::default()).findings,
            []
        );
    }

    #[test]
    fn two_ranks_cannot_be_judged() {
        for per_host in [1, 2] {
            let h = hosts(2, per_host);
            let m = vec![vec![None, Some(10.0)], vec![Some(1.0), None]];
            let a = analyse(&m, &h, Better::Higher, &Rule::default());
            assert_eq!(a.findings, []);
            assert_eq!(a.scopes.len(), 1);
            assert_eq!((a.scopes[0].cells, a.scopes[0].median), (2, 5.5));
        }
    }

    #[test]
    fn fast_intra_host_pairs_leave_inter_host_pairs_alone() {
        let h = hosts(16, 4);
        for seed in SEEDS {
            let m = matrix(
                16,
                seed,
                0.1,
                |i, j| if i / 4 == j / 4 { 100.0 } else { 10.0 },
            );
            let a = analyse(&m, &h, Better::Higher, &Rule::default());
            assert_eq!(a.findings, [], "seed {seed}");
            let scopes: Vec<_> = a.scopes.iter().map(|s| (s.scope, s.cells)).collect();
            assert_eq!(scopes, [(Scope::Intra, 48), (Scope::Inter, 192)]);
            assert!((a.scopes[0].median / a.scopes[1].median - 10.0).abs() < 1.0);
        }
    }

    #[test]
    fn one_sided_ranks_get_their_side() {
        let h = hosts(16, 4);
        for seed in SEEDS {
            let m = matrix(
                16,
                seed,
                0.1,
                |i, j| if i == 6 || j == 13 { 3.0 } else { 10.0 },
            );
            let a = analyse(&m, &h, Better::Higher, &Rule::default());
            let mut got = subjects(&a);
            got.sort_by_key(|s| (s.1, kind_order(&s.0), s.2 == Side::Receives));
            let want = [
                (rank(6, "node01"), Scope::Intra, Side::Sends),
                (rank(13, "node03"), Scope::Intra, Side::Receives),
                (rank(6, "node01"), Scope::Inter, Side::Sends),
                (rank(13, "node03"), Scope::Inter, Side::Receives),
            ];
            assert_eq!(got, want, "seed {seed}");
            let sends = a.findings.iter().find(|f| f.side == Side::Sends).unwrap();
            assert!(sends.cells.iter().all(|&(from, _)| from == 6));
        }
    }

    #[test]
    fn two_bad_ranks_on_one_host_stay_ranks() {
        // Half the host's cells are bad: neither a bad host nor bad neighbours.
        let h = hosts(16, 4);
        for seed in SEEDS {
            let m = matrix(16, seed, 0.1, |i, j| {
                if [4, 5].contains(&i) || [4, 5].contains(&j) {
                    3.0
                } else {
                    10.0
                }
            });
            let a = analyse(&m, &h, Better::Higher, &Rule::default());
            let mut got = subjects(&a);
            got.sort_by_key(|s| (s.1, format!("{:?}", s.0)));
            let want = [Scope::Intra, Scope::Inter]
                .map(|s| [4, 5].map(|r| (rank(r, "node01"), s, Side::Both)));
            assert_eq!(got, want.concat(), "seed {seed}");
        }
    }

    #[test]
    fn two_hosts_of_two_bad_rank() {
        let h = hosts(4, 2);
        for seed in SEEDS {
            let m = matrix(
                4,
                seed,
                0.05,
                |i, j| if i == 2 || j == 2 { 3.0 } else { 10.0 },
            );
            let a = analyse(&m, &h, Better::Higher, &Rule::default());
            assert_eq!(
                subjects(&a),
                [(rank(2, "node01"), Scope::Inter, Side::Both)],
                "seed {seed}"
            );
        }
    }

    #[test]
    fn slow_shared_memory_is_a_host_within() {
        let h = hosts(8, 4);
        for seed in SEEDS {
            let m = matrix(8, seed, 0.1, |i, j| {
                if i / 4 == 1 && j / 4 == 1 { 3.0 } else { 10.0 }
            });
            let a = analyse(&m, &h, Better::Higher, &Rule::default());
            let host = Subject::Host {
                host: "node01".into(),
                ranks: vec![4, 5, 6, 7],
            };
            assert_eq!(
                subjects(&a),
                [(host, Scope::Intra, Side::Both)],
                "seed {seed}"
            );
            assert_eq!(a.findings[0].cells.len(), 12);
        }
    }

    #[test]
    fn host_of_one_rank_each_is_a_host() {
        let h = hosts(8, 1);
        let m = matrix(8, 3, 0.1, |i, j| if i == 4 || j == 4 { 3.0 } else { 10.0 });
        let a = analyse(&m, &h, Better::Higher, &Rule::default());
        let host = Subject::Host {
            host: "node04".into(),
            ranks: vec![4],
        };
        assert_eq!(subjects(&a), [(host, Scope::Inter, Side::Both)]);
    }

    #[test]
    fn worst_first_then_hosts_ranks_links() {
        // Rank 3 is 2× worse everywhere, link 10 → 1 is 5× worse.
        let h = hosts(16, 4);
        let m = matrix(16, 7, 0.05, |i, j| match (i, j) {
            (10, 1) => 2.0,
            _ if i == 3 || j == 3 => 5.0,
            _ => 10.0,
        });
        let a = analyse(&m, &h, Better::Higher, &Rule::default());
        let kinds: Vec<u8> = a.findings.iter().map(|f| kind_order(&f.subject)).collect();
        assert_eq!(kinds, [2, 1, 1]);
        assert!(a.findings.windows(2).all(|w| w[0].factor >= w[1].factor));
        assert_eq!(a.findings[0].subject, Subject::Link { from: 10, to: 1 });
    }

    #[test]
    fn exact_values_use_the_single_worst_rule() {
        // No noise: MAD 0 among the good ranks, the bad one still stands out.
        let h = hosts(6, 6);
        let m = matrix(6, 1, 0.0, |i, j| if i == 0 || j == 0 { 1.0 } else { 4.0 });
        let a = analyse(&m, &h, Better::Higher, &Rule::default());
        assert_eq!(
            subjects(&a),
            [(rank(0, "node00"), Scope::Intra, Side::Both)]
        );
        assert_eq!((a.findings[0].factor, a.findings[0].z), (4.0, None));
    }

    #[test]
    fn describe_reads_as_one_line() {
        let h = hosts(8, 2);
        let finding = |subject, scope, side| Finding {
            subject,
            scope,
            side,
            value: 4.1,
            baseline: 10.0,
            ratio: 0.41,
            factor: 1.0 / 0.41,
            z: Some(9.0),
            cells: vec![],
        };
        let bw = |s: Subject, scope, side| finding(s, scope, side).describe("bandwidth", &h);
        assert_eq!(
            bw(rank(5, "node02"), Scope::Inter, Side::Both),
            "rank 5 (node02) ↔ all: bandwidth 0.41× the median of the other inter-host pairs"
        );
        assert_eq!(
            bw(rank(5, "node02"), Scope::Intra, Side::Sends),
            "rank 5 (node02) → all: bandwidth 0.41× the median of the other intra-host pairs"
        );
        assert_eq!(
            bw(rank(5, "node02"), Scope::Inter, Side::Receives),
            "all → rank 5 (node02): bandwidth 0.41× the median of the other inter-host pairs"
        );
        let host = Subject::Host {
            host: "node02".into(),
            ranks: vec![4, 5],
        };
        assert_eq!(
            bw(host.clone(), Scope::Inter, Side::Both),
            "host node02 (ranks 4, 5) ↔ other hosts: bandwidth 0.41× the median of the other inter-host pairs"
        );
        assert_eq!(
            bw(host, Scope::Intra, Side::Both),
            "within host node02 (ranks 4, 5): bandwidth 0.41× the median of the other intra-host pairs"
        );
        assert_eq!(
            bw(Subject::Link { from: 2, to: 7 }, Scope::Inter, Side::Both),
            "rank 2 (node01) → rank 7 (node03): bandwidth 0.41× the median of inter-host pairs"
        );
    }

    #[test]
    fn retest_confirms_or_clears() {
        let h = hosts(4, 4);
        let m = matrix(4, 5, 0.05, |i, j| if i == 1 || j == 1 { 2.0 } else { 10.0 });
        let a = analyse(&m, &h, Better::Higher, &Rule::default());
        let f = &a.findings[0];
        let rule = Rule::default();
        assert!(confirmed(f, &[2.1, 1.9, 2.0, 9.0], Better::Higher, &rule));
        assert!(!confirmed(f, &[9.0, 10.0, 2.0], Better::Higher, &rule));
        assert!(!confirmed(f, &[], Better::Higher, &rule));
        assert!(!confirmed(f, &[f64::NAN], Better::Higher, &rule));
    }

    #[test]
    fn serializes_with_a_kind_tag() {
        let h = hosts(3, 3);
        let m = matrix(3, 2, 0.05, |i, j| if i == 1 || j == 1 { 1.0 } else { 10.0 });
        let a = analyse(&m, &h, Better::Higher, &Rule::default());
        let json = serde_json::to_value(&a).unwrap();
        let f = &json["findings"][0];
        assert_eq!(
            f["subject"],
            serde_json::json!({"kind": "rank", "rank": 1, "host": "node00"})
        );
        assert_eq!(
            (f["scope"].as_str(), f["side"].as_str()),
            (Some("intra"), Some("both"))
        );
    }
}
