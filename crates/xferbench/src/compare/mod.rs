//! Did it get slower? Two runs of one experiment, point by point and
//! statistic by statistic: the change, its confidence interval, and a
//! verdict that needs both significance and a change beyond the noise
//! threshold (criterion's rule). `method` holds the statistics and why,
//! `extract` reads points from any experiment's JSON, `config` says what
//! must match, `render` writes the result, `baseline` keeps named runs.

pub mod baseline;
pub mod config;
pub mod extract;
pub mod method;
pub mod render;

use crate::error::{Error, Result};
use crate::result::saved::SavedRun;
use config::Difference;
use extract::{Statistic, Subject};
use method::{Method, Verdict};
use serde::Serialize;

/// How to compare, and what fails.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Settings {
    /// Two-sided confidence of the intervals (0.99).
    pub confidence: f64,
    /// Changes within ±noise (a fraction: 0.05) are no change.
    pub noise: f64,
    /// The statistics compared (empty: every one a point has, of
    /// `Statistic::DEFAULT`).
    pub stats: Vec<Statistic>,
    /// The statistics whose regression fails the comparison (empty: all
    /// compared).
    pub fail_on: Vec<Statistic>,
    /// An inconclusive verdict fails too.
    pub strict: bool,
    /// Compare runs whose options or machines differ, listing how.
    pub allow_different: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            confidence: 0.99,
            noise: 0.05,
            stats: Vec::new(),
            fail_on: Vec::new(),
            strict: false,
            allow_different: false,
        }
    }
}

/// One side of a comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Side {
    /// The file stem or baseline name.
    pub label: String,
    /// Repeats behind its points (the most any point has).
    pub repeats: usize,
    /// False when the run stopped early.
    pub complete: bool,
    /// A hash of its figure-changing options and environment.
    pub config_hash: String,
    /// When it ran (UTC).
    pub timestamp: Option<String>,
}

/// One statistic of one point, base against new.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The point's identity, as both runs name it.
    pub point: String,
    /// Which statistic.
    pub stat: Statistic,
    /// The unit of `base` and `new`: `ns`, `MB/s`, `IOPS`, `req/s`…
    pub unit: &'static str,
    /// Latency: a rise is worse. Rates: a fall is worse.
    pub lower_is_better: bool,
    /// The figure in the base run.
    pub base: f64,
    /// The figure in the new run.
    pub new: f64,
    /// The change, its interval and what the interval rests on.
    #[serde(flatten)]
    pub change: method::Change,
    /// The interval in the figure's unit (new − base), where that reads
    /// better than a percentage: times.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_interval: Option<[f64; 2]>,
    /// What the change and its interval say.
    pub verdict: Verdict,
    /// Whether this statistic's verdict decides the exit status.
    pub gates: bool,
}

/// Counts of verdicts.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Tally {
    /// Figures worse beyond the noise threshold.
    pub regressed: usize,
    /// Figures better beyond the noise threshold.
    pub improved: usize,
    /// Figures within the noise threshold.
    pub no_change: usize,
    /// Figures whose interval cannot tell.
    pub inconclusive: usize,
}

/// The comparison of two runs.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// The experiment both runs are of.
    pub experiment: String,
    /// The run compared against.
    pub base: Side,
    /// The run judged.
    pub new: Side,
    /// How the comparison was made.
    pub settings: Settings,
    /// How the runs' options and machines differ (compared only with
    /// `allow_different`).
    pub differences: Vec<Difference>,
    /// Regressions first, then inconclusive, improvements, no change.
    pub rows: Vec<Row>,
    /// How many rows got each verdict.
    pub tally: Tally,
    /// Points measured in the base run only.
    pub only_in_base: Vec<String>,
    /// Points measured in the new run only.
    pub only_in_new: Vec<String>,
    /// What the verdicts rest on, and the fallbacks taken.
    pub notes: Vec<String>,
    /// A gating statistic regressed (or was inconclusive, with `strict`).
    pub failed: bool,
}

fn side(run: &SavedRun, subjects: &[Subject]) -> Side {
    Side {
        label: run.label.clone(),
        repeats: subjects.iter().map(|s| s.repeats).max().unwrap_or(1),
        complete: run.complete,
        config_hash: config::hash(run),
        timestamp: run.env.as_ref().map(|e| e.timestamp.clone()),
    }
}

/// Compares `new` with `base`. Refuses (usage error) runs of different
/// experiments, runs whose configurations differ (unless allowed), files
/// it cannot read, and runs with no point in common.
pub fn compare(base: &SavedRun, new: &SavedRun, settings: &Settings) -> Result<Comparison> {
    if base.experiment != new.experiment {
        return Err(Error::usage(format!(
            "{} is a {} run and {} a {} run: compare two runs of one experiment",
            base.label, base.experiment, new.label, new.experiment
        )));
    }
    let read = |r: &SavedRun| {
        extract::subjects(r).map_err(|e| {
            Error::usage(format!(
                "{}: {e}; give results files written by xferbench with --format json, unedited",
                r.label
            ))
        })
    };
    let (mut bs, mut ns) = (read(base)?, read(new)?);
    let differences = like_with_like(base, new, &mut bs, &mut ns, settings)?;
    let only_in_base: Vec<String> = bs
        .iter()
        .filter(|b| !ns.iter().any(|n| n.id == b.id))
        .map(|b| b.id.clone())
        .collect();
    let only_in_new: Vec<String> = ns
        .iter()
        .filter(|n| !bs.iter().any(|b| b.id == n.id))
        .map(|n| n.id.clone())
        .collect();
    let mut rows = rows(&bs, &ns, settings);
    if rows.is_empty() {
        let sample = |v: &[Subject]| {
            v.iter()
                .take(3)
                .map(|s| s.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(Error::usage(format!(
            "{} and {} have no point in common{}: {} has {}; {} has {}",
            base.label,
            new.label,
            if settings.stats.is_empty() {
                String::new()
            } else {
                " with the statistics asked for".into()
            },
            base.label,
            if bs.is_empty() {
                "none".into()
            } else {
                sample(&bs)
            },
            new.label,
            if ns.is_empty() {
                "none".into()
            } else {
                sample(&ns)
            }
        )));
    }
    let rank = |v: Verdict| match v {
        Verdict::Regressed => 0,
        Verdict::Inconclusive => 1,
        Verdict::Improved => 2,
        Verdict::NoChange => 3,
    };
    rows.sort_by_key(|r| rank(r.verdict));
    let mut tally = Tally::default();
    for r in &rows {
        match r.verdict {
            Verdict::Regressed => tally.regressed += 1,
            Verdict::Improved => tally.improved += 1,
            Verdict::NoChange => tally.no_change += 1,
            Verdict::Inconclusive => tally.inconclusive += 1,
        }
    }
    let failed = rows.iter().any(|r| {
        r.gates
            && (r.verdict == Verdict::Regressed
                || (settings.strict && r.verdict == Verdict::Inconclusive))
    });
    let notes = notes(base, new, &bs, &ns, &rows, settings);
    Ok(Comparison {
        experiment: base.experiment.clone(),
        base: side(base, &bs),
        new: side(new, &ns),
        settings: settings.clone(),
        differences,
        rows,
        tally,
        only_in_base,
        only_in_new,
        notes,
        failed,
    })
}

/// The differences between how the two runs were made; an error listing
/// the first four unless `--allow-different`. Transport options first: when
/// they differ, they are what the user changed on purpose (firmware A
/// against B).
fn like_with_like(
    base: &SavedRun,
    new: &SavedRun,
    bs: &mut [Subject],
    ns: &mut [Subject],
    settings: &Settings,
) -> Result<Vec<Difference>> {
    let mut differences = config::pair_transports(bs, ns);
    differences.extend(config::differences(base, new));
    if !differences.is_empty() && !settings.allow_different {
        let list: Vec<String> = differences
            .iter()
            .take(4)
            .map(|d| format!("{} {} vs {}", d.what, d.base, d.new))
            .collect();
        return Err(Error::usage(format!(
            "{} and {} were run differently ({}{}): compare like with like, or pass --allow-different to compare anyway",
            base.label,
            new.label,
            list.join("; "),
            if differences.len() > 4 {
                format!("; {} more", differences.len() - 4)
            } else {
                String::new()
            }
        )));
    }
    Ok(differences)
}

/// One row per point both runs have and statistic asked for (the
/// defaults when none were): the change, its interval and the verdict.
fn rows(bs: &[Subject], ns: &[Subject], settings: &Settings) -> Vec<Row> {
    let stats: Vec<Statistic> = if settings.stats.is_empty() {
        Statistic::DEFAULT.to_vec()
    } else {
        settings.stats.clone()
    };
    let mut rows = Vec::new();
    for b in bs {
        let Some(n) = ns.iter().find(|n| n.id == b.id) else {
            continue;
        };
        for &stat in &stats {
            let (Some(fb), Some(fnew)) = (
                b.figures.iter().find(|f| f.stat == stat),
                n.figures.iter().find(|f| f.stat == stat),
            ) else {
                continue;
            };
            let c = method::change(&fb.evidence, &fnew.evidence, settings.confidence);
            let verdict = method::verdict(&c, stat.lower_is_better(), settings.noise);
            let delta_interval = (fb.unit == "ns")
                .then(|| {
                    c.interval
                        .map(|[lo, hi]| [lo * fb.evidence.value, hi * fb.evidence.value])
                })
                .flatten();
            rows.push(Row {
                point: b.id.clone(),
                stat,
                unit: fb.unit,
                lower_is_better: stat.lower_is_better(),
                base: fb.evidence.value,
                new: fnew.evidence.value,
                change: c,
                delta_interval,
                verdict,
                gates: settings.fail_on.is_empty() || settings.fail_on.contains(&stat),
            });
        }
    }
    rows
}

/// What the verdicts rest on, said once per kind.
fn notes(
    base: &SavedRun,
    new: &SavedRun,
    bs: &[Subject],
    ns: &[Subject],
    rows: &[Row],
    s: &Settings,
) -> Vec<String> {
    let mut out = Vec::new();
    let count = |m: Method| rows.iter().filter(|r| r.change.method == m).count();
    let kb = bs.iter().map(|x| x.repeats).max().unwrap_or(1);
    let kn = ns.iter().map(|x| x.repeats).max().unwrap_or(1);
    out.push(format!(
        "regressed/improved: the whole {:.0}% interval of the change beyond ±{}%; no change: the interval within it, or a change within it that is not significant; otherwise inconclusive",
        s.confidence * 100.0,
        trim(s.noise * 100.0)
    ));
    if count(Method::Repeats) > 0 {
        out.push(format!(
            "intervals from the spread between repeats ({kb} in {}, {kn} in {}): run-to-run noise included",
            base.label, new.label
        ));
        if kb.min(kn) == 2 {
            out.push("2 repeats give wide intervals: 5 is a good number for a CI gate".into());
        }
    }
    if count(Method::Intervals) > 0 {
        let one = if kb < 2 && kn < 2 {
            format!("{} and {} ran once", base.label, new.label)
        } else if kb < 2 {
            format!("{} ran once", base.label)
        } else {
            format!("{} ran once", new.label)
        };
        out.push(format!(
            "{one}: {} intervals rest on intervals of samples within one run, so noise from run to run is not in them; run both with --repeat 5 for a verdict that holds across runs",
            count(Method::Intervals)
        ));
    }
    if count(Method::Summary) + count(Method::None) > 0 {
        out.push(format!(
            "{} figures have no stored distribution on one side (a file from an older xferbench?): means fall back to a t-test on the samples' mean and deviation, other statistics to the change alone (no change within the threshold, else inconclusive)",
            count(Method::Summary) + count(Method::None)
        ));
    }
    let busy = |r: &SavedRun| -> Option<f64> {
        let [a, b] = r.env.as_ref()?.load_average?;
        Some(a.max(b))
    };
    if let (Some(lb), Some(ln)) = (busy(base), busy(new)) {
        let cpus = base
            .env
            .as_ref()
            .map_or(1.0, |e| e.cpus_online.max(1) as f64);
        if (lb - ln).abs() >= 0.5 && (lb - ln).abs() >= 0.25 * cpus {
            out.push(format!(
                "the machine was busier beside {} (1-minute load average up to {:.1} against {:.1}, on {} CPUs): a change may be the neighbours', not the code's",
                if lb > ln { &base.label } else { &new.label },
                lb.max(ln),
                lb.min(ln),
                cpus
            ));
        }
    }
    for r in [base, new] {
        if !r.complete {
            out.push(format!(
                "{} is incomplete ({}): its missing points are listed",
                r.label,
                r.stopped_by.as_deref().unwrap_or("stopped early")
            ));
        }
    }
    out
}

/// A percentage without trailing zeros (5, 2.5).
pub fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
