//! The statistics of a comparison: an interval for the relative change of
//! one figure between two runs, and the verdict it supports.
//!
//! Why this method. The samples of one run are not independent draws: a
//! shared machine drifts, stalls in bursts, and places the two ends
//! differently from one run to the next. A test that treats every sample
//! as independent (a rank test on the samples, a bootstrap of samples)
//! therefore finds "significant" differences between two runs of the same
//! thing. The unit of replication has to be a whole run or, lacking
//! repeats, an interval of consecutive samples. We take the figure of each
//! repeat (or interval), work on its logarithm (changes are ratios, and
//! run-to-run noise is multiplicative), and give Welch's t interval for the
//! difference of the two sides' mean logarithms: it allows unequal
//! spreads and counts, and with the few repeats a run affords (3–10) it
//! widens honestly where a bootstrap of so few values cannot reach a 99%
//! interval at all. The interval is centred on the two files' headline
//! figures, so the change shown is the one their tables show.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// What the interval of a change rests on, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Each side's repeats (`--repeat K`, K ≥ 2 on both): run-to-run
    /// noise is measured.
    Repeats,
    /// Consecutive intervals of one run on each side (the `intervals`
    /// figures): noise within a run only; what changes between runs is
    /// not measured.
    Intervals,
    /// The samples' mean and standard deviation (an old file without
    /// distributions): treats samples as independent.
    Summary,
    /// Nothing to build an interval on: one figure per side.
    None,
    /// The base is zero and the new figure is not: no ratio exists, the
    /// change is infinite (`change` ±∞; JSON null) and its direction alone
    /// is the verdict.
    FromZero,
}

impl Method {
    /// The word tables show.
    pub fn name(self) -> &'static str {
        match self {
            Method::Repeats => "repeats",
            Method::Intervals => "intervals",
            Method::Summary => "summary",
            Method::None => "none",
            Method::FromZero => "from zero",
        }
    }
}

/// What a comparison concludes about one figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Worse, beyond the noise threshold over the whole interval.
    Regressed,
    /// Better, beyond the noise threshold over the whole interval.
    Improved,
    /// The whole interval lies within the noise threshold.
    NoChange,
    /// The interval reaches beyond the noise threshold on one side but not
    /// wholly: more repeats would tell.
    Inconclusive,
}

impl Verdict {
    /// The words tables show.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Improved => "improved",
            Verdict::NoChange => "no change",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// One side's evidence about a figure.
#[derive(Clone, Debug, Default)]
pub struct Evidence {
    /// The figure the run reports.
    pub value: f64,
    /// The figure in each repeat (empty with one repeat).
    pub repeats: Vec<f64>,
    /// The figure in each block of consecutive samples.
    pub blocks: Vec<f64>,
    /// Standard deviation and count of the samples, where the figure is
    /// their mean.
    pub moments: Option<(f64, u64)>,
}

/// The change of one figure, base → new.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    /// new / base − 1.
    pub change: f64,
    /// The interval of `change` at the asked confidence (None: nothing to
    /// build one on).
    pub interval: Option<[f64; 2]>,
    /// Two-sided p-value of "no change".
    pub p_value: Option<f64>,
    /// Replicates used on each side (repeats or blocks; samples for
    /// `summary`).
    pub n: [usize; 2],
    /// What the interval rests on.
    pub method: Method,
}

/// Student's t quantile, for `df` degrees of freedom.
fn t_quantile(p: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df.max(1.0))
        .map(|t| t.inverse_cdf(p))
        .unwrap_or(f64::INFINITY)
}

fn t_cdf(x: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df.max(1.0))
        .map(|t| t.cdf(x))
        .unwrap_or(0.5)
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, var)
}

/// Welch's interval for a difference `d` whose two sides have variances
/// of their means `vb`, `vn` on `db`, `dn` degrees of freedom each.
fn welch(d: f64, vb: f64, db: f64, vn: f64, dn: f64, confidence: f64) -> ([f64; 2], f64) {
    let se2 = vb + vn;
    if se2 <= 0.0 || !se2.is_finite() {
        // Identical replicates on both sides: the change is exact.
        let p = if d == 0.0 { 1.0 } else { 0.0 };
        return ([d, d], p);
    }
    let df = se2 * se2 / (vb * vb / db.max(1.0) + vn * vn / dn.max(1.0));
    let se = se2.sqrt();
    let t = t_quantile(0.5 + confidence / 2.0, df);
    let p = 2.0 * (1.0 - t_cdf((d / se).abs(), df));
    ([d - t * se, d + t * se], p.clamp(0.0, 1.0))
}

/// Replicates fit for logarithms: positive and finite.
fn logs(v: &[f64]) -> Option<Vec<f64>> {
    if v.len() < 2 || v.iter().any(|&x| x <= 0.0 || !x.is_finite()) {
        return None;
    }
    Some(v.iter().map(|x| x.ln()).collect())
}

/// The change of a figure between `base` and `new`, with its interval at
/// `confidence` from the best evidence both sides share.
pub fn change(base: &Evidence, new: &Evidence, confidence: f64) -> Change {
    if base.value == 0.0 && new.value != 0.0 {
        // From nothing to something is not "+0.0%, no change".
        return Change {
            change: f64::INFINITY.copysign(new.value),
            interval: None,
            p_value: None,
            n: [1, 1],
            method: Method::FromZero,
        };
    }
    let change = if base.value != 0.0 {
        new.value / base.value - 1.0
    } else {
        0.0
    };
    let ratio_interval = |b: &[f64], n: &[f64], method: Method| -> Option<Change> {
        let (lb, ln) = (logs(b)?, logs(n)?);
        if base.value <= 0.0 || new.value <= 0.0 {
            return None;
        }
        let (_, vb) = mean_var(&lb);
        let (_, vn) = mean_var(&ln);
        let d = (new.value / base.value).ln();
        let (ci, p) = welch(
            d,
            vb / lb.len() as f64,
            lb.len() as f64 - 1.0,
            vn / ln.len() as f64,
            ln.len() as f64 - 1.0,
            confidence,
        );
        Some(Change {
            change,
            interval: Some([ci[0].exp() - 1.0, ci[1].exp() - 1.0]),
            p_value: Some(p),
            n: [lb.len(), ln.len()],
            method,
        })
    };
    if let Some(c) = ratio_interval(&base.repeats, &new.repeats, Method::Repeats) {
        return c;
    }
    if let Some(c) = ratio_interval(&base.blocks, &new.blocks, Method::Intervals) {
        return c;
    }
    if let (Some((sb, nb)), Some((sn, nn))) = (base.moments, new.moments)
        && nb >= 2
        && nn >= 2
        && base.value > 0.0
    {
        let (vb, vn) = (sb * sb / nb as f64, sn * sn / nn as f64);
        let d = new.value - base.value;
        let (ci, p) = welch(d, vb, nb as f64 - 1.0, vn, nn as f64 - 1.0, confidence);
        return Change {
            change,
            interval: Some([ci[0] / base.value, ci[1] / base.value]),
            p_value: Some(p),
            n: [nb as usize, nn as usize],
            method: Method::Summary,
        };
    }
    Change {
        change,
        interval: None,
        p_value: None,
        n: [1, 1],
        method: Method::None,
    }
}

/// The interval of one side's figure itself at `confidence`, from its
/// repeats (else intervals): a t interval on the logarithms, centred on
/// the figure, for drawing a run's curve with its uncertainty.
pub fn level(e: &Evidence, confidence: f64) -> Option<[f64; 2]> {
    let l = logs(&e.repeats).or_else(|| logs(&e.blocks))?;
    if e.value <= 0.0 {
        return None;
    }
    let (_, var) = mean_var(&l);
    let half =
        t_quantile(0.5 + confidence / 2.0, l.len() as f64 - 1.0) * (var / l.len() as f64).sqrt();
    Some([e.value * (-half).exp(), e.value * half.exp()])
}

/// The verdict on a change, for a figure where `lower_is_better`: worse
/// needs the whole interval beyond `noise` (and so significance); no change
/// needs the whole interval within it, or a change within it that is not
/// significant. What is left — significant but maybe within the noise, or
/// not significant with a change beyond it — is inconclusive. Without an
/// interval only the change itself can say "no change".
pub fn verdict(c: &Change, lower_is_better: bool, noise: f64) -> Verdict {
    let worse = |x: f64| if lower_is_better { x } else { -x };
    if c.method == Method::FromZero {
        return if worse(c.change) > 0.0 {
            Verdict::Regressed
        } else {
            Verdict::Improved
        };
    }
    let Some([a, b]) = c.interval else {
        return if worse(c.change).abs() <= noise {
            Verdict::NoChange
        } else {
            Verdict::Inconclusive
        };
    };
    let (lo, hi) = {
        let (x, y) = (worse(a), worse(b));
        (x.min(y), x.max(y))
    };
    let small = worse(c.change).abs() <= noise;
    if lo > noise {
        Verdict::Regressed
    } else if hi < -noise {
        Verdict::Improved
    } else if (lo >= -noise && hi <= noise) || (lo <= 0.0 && hi >= 0.0 && small) {
        // Wholly within the threshold; or not significant and the change
        // itself within it (criterion's "no change detected").
        Verdict::NoChange
    } else {
        Verdict::Inconclusive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(value: f64, repeats: &[f64]) -> Evidence {
        Evidence {
            value,
            repeats: repeats.to_vec(),
            ..Evidence::default()
        }
    }

    #[test]
    fn a_change_from_zero_is_not_no_change() {
        let c = change(&ev(0.0, &[0.0, 0.0]), &ev(5.0, &[5.0, 5.0]), 0.99);
        assert_eq!(c.method, Method::FromZero);
        assert!(c.change.is_infinite() && c.change > 0.0);
        assert_eq!(verdict(&c, true, 0.02), Verdict::Regressed);
        assert_eq!(verdict(&c, false, 0.02), Verdict::Improved);
        let same = change(&ev(0.0, &[]), &ev(0.0, &[]), 0.99);
        assert_eq!(verdict(&same, true, 0.02), Verdict::NoChange);
    }

    #[test]
    fn t_quantiles_match_the_tables() {
        // Two-sided 99%: 63.657 at 1 df, 3.250 at 9, 2.576 in the limit.
        assert!((t_quantile(0.995, 1.0) - 63.657).abs() < 1e-2);
        assert!((t_quantile(0.995, 9.0) - 3.250).abs() < 1e-3);
        assert!((t_quantile(0.995, 1e6) - 2.576).abs() < 1e-3);
    }

    #[test]
    fn a_clear_slowdown_is_regressed_with_an_interval_around_it() {
        let b = ev(100.0, &[99.0, 100.0, 101.0, 100.5, 99.5]);
        let n = ev(150.0, &[149.0, 150.0, 151.0, 150.5, 149.5]);
        let c = change(&b, &n, 0.99);
        assert_eq!(c.method, Method::Repeats);
        let [lo, hi] = c.interval.unwrap();
        assert!(lo < 0.5 && 0.5 < hi && lo > 0.45 && hi < 0.55, "{lo} {hi}");
        assert!(c.p_value.unwrap() < 1e-6);
        assert_eq!(verdict(&c, true, 0.05), Verdict::Regressed);
        // The same change of a bandwidth is an improvement.
        assert_eq!(verdict(&c, false, 0.05), Verdict::Improved);
    }

    #[test]
    fn a_small_change_within_the_noise_is_no_change() {
        let b = ev(100.0, &[99.8, 100.0, 100.2, 100.1, 99.9]);
        let n = ev(101.0, &[100.8, 101.0, 101.2, 101.1, 100.9]);
        let c = change(&b, &n, 0.99);
        // Significant, but the whole interval is within 5%.
        assert!(c.p_value.unwrap() < 0.01);
        assert_eq!(verdict(&c, true, 0.05), Verdict::NoChange);
        // Within a 0.5% threshold it is a regression.
        assert_eq!(verdict(&c, true, 0.005), Verdict::Regressed);
    }

    #[test]
    fn noisy_repeats_make_a_large_change_inconclusive_and_a_small_one_no_change() {
        let b = ev(100.0, &[60.0, 100.0, 140.0]);
        let n = ev(120.0, &[80.0, 120.0, 170.0]);
        let c = change(&b, &n, 0.99);
        assert_eq!(verdict(&c, true, 0.05), Verdict::Inconclusive);
        let n = ev(102.0, &[80.0, 102.0, 130.0]);
        assert_eq!(
            verdict(&change(&b, &n, 0.99), true, 0.05),
            Verdict::NoChange
        );
        // Significant, but the interval straddles the threshold.
        let b = ev(100.0, &[99.0, 100.0, 101.0, 100.0, 100.5]);
        let n = ev(105.0, &[103.0, 105.0, 107.0, 104.0, 106.0]);
        let c = change(&b, &n, 0.99);
        assert!(c.interval.unwrap()[0] > 0.0 && c.interval.unwrap()[0] < 0.05);
        assert_eq!(verdict(&c, true, 0.05), Verdict::Inconclusive);
    }

    #[test]
    fn fallbacks_say_what_they_rest_on() {
        let mut b = ev(100.0, &[100.0]);
        let mut n = ev(200.0, &[]);
        assert_eq!(change(&b, &n, 0.99).method, Method::None);
        assert_eq!(
            verdict(&change(&b, &n, 0.99), true, 0.05),
            Verdict::Inconclusive
        );
        b.blocks = vec![99.0, 100.0, 101.0];
        n.blocks = vec![199.0, 200.0, 201.0];
        assert_eq!(change(&b, &n, 0.99).method, Method::Intervals);
        b.blocks.clear();
        b.moments = Some((10.0, 1000));
        n.moments = Some((10.0, 1000));
        let c = change(&b, &n, 0.99);
        assert_eq!(c.method, Method::Summary);
        assert_eq!(verdict(&c, true, 0.05), Verdict::Regressed);
    }

    #[test]
    fn identical_replicates_give_an_exact_change() {
        let b = ev(10.0, &[10.0, 10.0]);
        let n = ev(10.0, &[10.0, 10.0]);
        let c = change(&b, &n, 0.99);
        assert_eq!(c.interval, Some([0.0, 0.0]));
        assert_eq!(verdict(&c, true, 0.0), Verdict::NoChange);
    }
}
