//! fio's options that change how a job paces itself while it runs:
//! `io_submit_mode=offload` (I/Os issued on a schedule, latency counted from
//! it), `latency_target` and its kin (fio's search for the deepest queue
//! that meets a latency), and steady-state detection (`ss=`, which ends a
//! job once its IOPS or bandwidth has settled). Kept together, apart from
//! the option table that names them, so the job model grows by one field;
//! the state machines that act on them are the worker's `tuning` module.

use super::Opt;
use crate::error::Result;
use serde::Serialize;
use std::time::Duration;

/// The job's run-time tuning, fio's defaults unless set.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Tuning {
    /// `io_submit_mode=offload`.
    pub offload: bool,
    /// `latency_target=`: the latency each window's percentile must meet.
    pub latency_target: Option<Duration>,
    /// `latency_window=`: how long each queue depth is tried (0: judged
    /// after every completion, as in fio).
    pub latency_window: Duration,
    /// `latency_percentile=`: the share of I/Os (percent) that must meet
    /// the target (fio's default 100: every one).
    pub latency_percentile: f64,
    /// `latency_run`: keep adjusting the depth for the whole run rather
    /// than end once the depth is found.
    pub latency_run: bool,
    /// `ss=`: the steady-state criterion.
    pub ss: Option<Steady>,
    /// `ss_dur=`: the rolling window judged (0 disables detection, as fio).
    pub ss_dur: Duration,
    /// `ss_ramp=`: time before the first sample.
    pub ss_ramp: Duration,
    /// `ss_interval=`: the time between samples (fio's 1 s).
    pub ss_interval: Duration,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            offload: false,
            latency_target: None,
            latency_window: Duration::ZERO,
            latency_percentile: 100.0,
            latency_run: false,
            ss: None,
            ss_dur: Duration::ZERO,
            ss_ramp: Duration::ZERO,
            ss_interval: Duration::from_secs(1),
        }
    }
}

/// What `ss=` watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SteadyMetric {
    Iops,
    Bw,
}

/// fio's `ss=METRIC[_slope]:LIMIT[%]`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Steady {
    pub metric: SteadyMetric,
    /// `_slope`: the least-squares slope over the window; otherwise the
    /// largest deviation from the window's mean.
    pub slope: bool,
    /// The limit the criterion must fall below.
    pub limit: f64,
    /// `%`: the limit is a percentage of the window's mean.
    pub pct: bool,
}

impl Steady {
    /// fio's spelling, as its JSON `ss` key writes it (`iops:5.000000%`).
    pub fn text(&self) -> String {
        format!(
            "{}{}:{:.6}{}",
            self.name(),
            if self.slope { "_slope" } else { "" },
            self.limit,
            if self.pct { "%" } else { "" }
        )
    }

    /// `iops` or `bw`.
    pub fn name(&self) -> &'static str {
        match self.metric {
            SteadyMetric::Iops => "iops",
            SteadyMetric::Bw => "bw",
        }
    }
}

impl Tuning {
    /// Whether steady-state detection is on (fio: `ss_dur` above 0).
    pub fn steady(&self) -> Option<Steady> {
        self.ss.filter(|_| !self.ss_dur.is_zero())
    }
}

/// `io_submit_mode=inline|offload`.
pub fn submit_mode(t: &mut Tuning, o: &Opt) -> Result<()> {
    t.offload = match o.value()? {
        "inline" => false,
        "offload" => true,
        _ => return Err(o.bad("use inline or offload")),
    };
    Ok(())
}

/// `latency_percentile=`: above 0, at most 100.
pub fn percentile(t: &mut Tuning, o: &Opt) -> Result<()> {
    t.latency_percentile = o
        .value()?
        .trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|p| *p > 0.0 && *p <= 100.0)
        .ok_or_else(|| o.bad("expected a percentage above 0 and at most 100, as in 99.9"))?;
    Ok(())
}

/// `ss=iops|iops_slope|bw|bw_slope:LIMIT[%]` (fio's default criterion is
/// `iops_slope:0.01%`, taken for a bare `ss`).
pub fn steadystate(t: &mut Tuning, o: &Opt) -> Result<()> {
    let v = o
        .value
        .filter(|v| !v.is_empty())
        .unwrap_or("iops_slope:0.01%");
    let (what, limit) = v
        .split_once(':')
        .ok_or_else(|| o.bad("a limit must follow the criterion, as in iops:10% or bw_slope:1m"))?;
    let (metric, slope) = match what.trim() {
        "iops" => (SteadyMetric::Iops, false),
        "iops_slope" => (SteadyMetric::Iops, true),
        "bw" => (SteadyMetric::Bw, false),
        "bw_slope" => (SteadyMetric::Bw, true),
        "lat" | "lat_slope" => {
            return Err(o.bad(
                "the latency criterion is newer than fio 3.33 and not supported; use iops, iops_slope, bw or bw_slope",
            ));
        }
        _ => return Err(o.bad("unknown criterion; use iops, iops_slope, bw or bw_slope")),
    };
    let limit = limit.trim();
    let bad =
        || o.bad("malformed limit (a number, a percentage as in 10%, or for bw a size as in 1m)");
    let (limit, pct) = match limit.strip_suffix('%') {
        Some(p) => (
            crate::job::unpercent(p).parse::<f64>().map_err(|_| bad())?,
            true,
        ),
        None if metric == SteadyMetric::Iops => (limit.parse::<f64>().map_err(|_| bad())?, false),
        None => (
            crate::units::parse_fio_size(limit).map_err(|_| bad())? as f64,
            false,
        ),
    };
    if !(limit.is_finite() && limit >= 0.0) {
        return Err(bad());
    }
    t.ss = Some(Steady {
        metric,
        slope,
        limit,
        pct,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::job::Job;

    #[test]
    fn parses_fios_spellings_and_names_bad_ones() {
        let mut j = Job::default();
        for (k, v) in [
            ("io_submit_mode", "offload"),
            ("latency_target", "500000"),
            ("latency_window", "5s"),
            ("latency_percentile", "99.9"),
            ("ss", "bw_slope:1%"),
            ("ss_dur", "30s"),
            ("ss_ramp", "10"),
        ] {
            j.set(k, Some(v)).unwrap();
        }
        let t = &j.tuning;
        assert!(t.offload);
        assert_eq!(
            t.latency_target,
            Some(std::time::Duration::from_millis(500))
        );
        assert_eq!(t.latency_window.as_secs(), 5);
        assert_eq!(t.latency_percentile, 99.9);
        let ss = t.steady().unwrap();
        assert_eq!(ss.text(), "bw_slope:1.000000%");
        assert_eq!((t.ss_dur.as_secs(), t.ss_ramp.as_secs()), (30, 10));
        j.set("ss", Some("bw:1m")).unwrap();
        assert_eq!(j.tuning.ss.unwrap().limit, 1048576.0);
        let err = |k, v| Job::default().set(k, Some(v)).unwrap_err().to_string();
        assert!(err("ss", "iops").contains("a limit must follow"));
        assert!(err("ss", "lat:1ms").contains("newer than fio 3.33"));
        assert!(err("ss", "iops:x%").contains("malformed limit"));
        assert!(err("latency_percentile", "101").contains("at most 100"));
        assert!(err("io_submit_mode", "async").contains("inline or offload"));
        // ss without ss_dur: detection off, as in fio.
        let mut j = Job::default();
        j.set("ss", Some("iops:5%")).unwrap();
        assert!(j.tuning.steady().is_none());
    }
}
