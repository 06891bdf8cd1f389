//! Tuning, the worker's part (the options are `job::tuning`'s): the
//! worker's run-time tuning, after fio: the offloaded submission's
//! schedule (`io_submit_mode=offload`, rate-submit.c), the queue-depth
//! search of `latency_target` (io_u.c's lat_target_*), and steady-state
//! detection (steadystate.c). Each is a small state machine the worker's
//! loop feeds; what they found goes into the job's record as fio's JSON
//! keys.

use crate::job::Job;
use crate::job::tuning::{Steady, SteadyMetric};
use crate::payload::splitmix;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// When each I/O of an offloaded job is due: `rate_iops` apart
/// (`rate_process=linear`) or exponentially apart with that mean
/// (`poisson`, fio's lambda of 10^6/IOPS µs). The schedule never waits for
/// the device: an I/O issued late is charged from when it was due, so a
/// device that falls behind shows it in its latencies (no coordinated
/// omission), as the `load` experiment's open loop does.
pub struct Schedule {
    next: Instant,
    /// Mean gap between I/Os, seconds.
    gap: f64,
    poisson: bool,
    rng: u64,
}

impl Schedule {
    /// The schedule of an offloaded job with a rate, from `start`.
    pub fn of(job: &Job, start: Instant) -> Option<Schedule> {
        if !job.tuning.offload {
            return None;
        }
        let iops = match (job.rate_iops, job.rate) {
            (Some(n), _) => n as f64,
            (None, Some(r)) => r as f64 / job.bs.max(1) as f64,
            (None, None) => return None,
        };
        Some(Schedule {
            next: start,
            gap: 1.0 / iops.max(1e-9),
            poisson: job.poisson,
            rng: job.randseed ^ 0x0ff1_0ad5 ^ u64::from(job.clone),
        })
    }

    /// The time the next I/O is due, and moves on to the one after.
    pub fn take(&mut self) -> Instant {
        let due = self.next;
        let gap = if self.poisson {
            let u = (splitmix(&mut self.rng) >> 11) as f64 / (1u64 << 53) as f64;
            -(1.0 - u).ln() * self.gap
        } else {
            self.gap
        };
        self.next += Duration::from_secs_f64(gap);
        due
    }

    /// The time the next I/O is due, without taking it.
    pub fn peek(&self) -> Instant {
        self.next
    }
}

/// fio's latency-target search: the queue depth starts at 1 and doubles
/// while each `latency_window` meets the target at `latency_percentile`,
/// bisects between the last good and the first bad depth when one does
/// not, and settles on the deepest that meets it (one more window is then
/// run at that depth, its figures the job's, and the job ends — unless
/// `latency_run`, which keeps adjusting).
pub struct LatTarget {
    target_ns: u64,
    window: Duration,
    pct: f64,
    run: bool,
    /// The depth cap: the job's queue depth.
    max: u32,
    pub qd: u32,
    low: u32,
    high: u32,
    stable: u32,
    window_start: Instant,
    window_ios: u64,
    failed: u64,
    /// The final window at the found depth is running.
    pub end_run: bool,
}

/// What the search asks of the worker after a window or a completion.
#[derive(Debug, PartialEq, Eq)]
pub enum LatStep {
    Carry,
    /// The depth changed: let what is in flight drain first (fio's quiesce).
    Quiesce,
    /// The depth is found: drain, restart the figures, run one more window.
    FinalWindow,
    /// The final window is done: the job ends.
    Done,
    /// Even one I/O at a time misses a 100% target: fio fails the job.
    Fatal,
}

impl LatTarget {
    pub fn of(job: &Job, depth: usize, now: Instant) -> Option<LatTarget> {
        let t = &job.tuning;
        let target = t.latency_target?;
        Some(LatTarget {
            target_ns: target.as_nanos() as u64,
            window: t.latency_window,
            pct: t.latency_percentile,
            run: t.latency_run,
            max: depth as u32,
            qd: 1,
            low: 1,
            high: depth as u32,
            stable: 0,
            window_start: now,
            window_ios: 0,
            failed: 0,
            end_run: false,
        })
    }

    /// One completed I/O of `lat_ns`.
    pub fn completed(&mut self, lat_ns: u64, ios: u64, now: Instant) -> LatStep {
        if lat_ns <= self.target_ns {
            return LatStep::Carry;
        }
        if self.pct < 100.0 {
            self.failed += 1;
            return LatStep::Carry;
        }
        self.fail(ios, now)
    }

    /// After a reap: judges the window once it is `latency_window` long.
    pub fn check(&mut self, ios: u64, now: Instant) -> LatStep {
        if now.duration_since(self.window_start) < self.window {
            return LatStep::Carry;
        }
        let n = ios - self.window_ios;
        if n == 0 {
            return LatStep::Carry;
        }
        let ok = 100.0 * (n - self.failed.min(n)) as f64 / n as f64;
        if ok >= self.pct {
            self.succeed(ios, now)
        } else {
            match self.fail(ios, now) {
                LatStep::Fatal => LatStep::Carry,
                s => s,
            }
        }
    }

    fn new_cycle(&mut self, ios: u64, now: Instant) {
        self.window_start = now;
        self.window_ios = ios;
        self.failed = 0;
    }

    fn fail(&mut self, ios: u64, now: Instant) -> LatStep {
        if self.qd == 1 {
            return LatStep::Fatal;
        }
        self.high = self.qd;
        if self.qd == self.low {
            self.low -= 1;
        }
        self.qd = (self.qd + self.low) / 2;
        self.stable = 0;
        self.new_cycle(ios, now);
        LatStep::Quiesce
    }

    fn succeed(&mut self, ios: u64, now: Instant) -> LatStep {
        let qd = self.qd;
        self.low = self.qd;
        if self.qd + 1 == self.high {
            // Stuck one below the high mark: raise the mark slowly.
            self.stable += 1;
            if self.stable >= 3 {
                self.high += 1;
                self.stable = 0;
            }
        }
        if self.high != self.max {
            self.qd = (self.qd + self.high) / 2;
        } else {
            self.qd *= 2;
        }
        self.qd = self.qd.min(self.max);
        let mut step = LatStep::Carry;
        if !self.run && self.qd == qd {
            step = if self.end_run {
                LatStep::Done
            } else {
                self.end_run = true;
                LatStep::FinalWindow
            };
        }
        self.new_cycle(ios, now);
        step
    }

    /// fio's JSON keys for the search's outcome.
    pub fn report(&self) -> LatencyReport {
        LatencyReport {
            latency_depth: self.qd,
            latency_target: self.target_ns,
            latency_percentile: self.pct,
            latency_window: self.window.as_micros() as u64,
        }
    }
}

/// fio's keys of a job with `latency_target`: the depth found, the target
/// (ns), the percentile and the window (µs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyReport {
    pub latency_depth: u32,
    pub latency_target: u64,
    pub latency_percentile: f64,
    pub latency_window: u64,
}

/// Steady-state detection: IOPS and bandwidth sampled every `ss_interval`
/// from `ss_ramp` on; once `ss_dur` of samples are in, each new one judges
/// the window — the largest deviation from its mean (`iops`, `bw`) or its
/// least-squares slope (`_slope`), either as is or as a percentage of the
/// mean — and the job ends when it is below the limit.
pub struct SteadyState {
    ss: Steady,
    n: usize,
    interval: Duration,
    dur_s: u64,
    next: Instant,
    /// The first sample's start has been marked.
    started: bool,
    /// The last sample's end (the first's start until `started`) and the
    /// counts then.
    last: (Instant, u64, u64),
    /// (iops, bw) per sample, oldest first; at most `n`.
    samples: std::collections::VecDeque<(u64, u64)>,
    criterion: f64,
    deviation: f64,
    slope: f64,
    pub attained: bool,
}

impl SteadyState {
    pub fn of(job: &Job, start: Instant) -> Option<SteadyState> {
        let t = &job.tuning;
        let ss = t.steady()?;
        let n = (t.ss_dur.as_secs() / t.ss_interval.as_secs().max(1)).max(1) as usize;
        let from = start + t.ss_ramp;
        Some(SteadyState {
            ss,
            n,
            interval: t.ss_interval,
            dur_s: t.ss_dur.as_secs(),
            next: from,
            started: false,
            last: (from, 0, 0),
            samples: Default::default(),
            criterion: 0.0,
            deviation: 0.0,
            slope: 0.0,
            attained: false,
        })
    }

    /// Samples when one is due (`ios` and `bytes` done so far, ramp
    /// included); whether steady state is now attained. The first call
    /// from `ss_ramp` on marks where the first sample starts.
    pub fn tick(&mut self, now: Instant, ios: u64, bytes: u64) -> bool {
        if !self.started {
            if now >= self.last.0 {
                self.started = true;
                self.last = (now, ios, bytes);
                self.next = now + self.interval;
            }
            return false;
        }
        if self.attained || now < self.next {
            return self.attained;
        }
        let (t, i0, b0) = self.last;
        let secs = now.duration_since(t).as_secs_f64().max(1e-9);
        let sample = (
            ((ios - i0) as f64 / secs).round() as u64,
            ((bytes - b0) as f64 / secs).round() as u64,
        );
        self.last = (now, ios, bytes);
        self.next = now + self.interval;
        if self.samples.len() == self.n {
            self.samples.pop_front();
        }
        self.samples.push_back(sample);
        if self.samples.len() == self.n {
            self.attained = self.judge();
        }
        self.attained
    }

    fn values(&self) -> Vec<f64> {
        self.samples
            .iter()
            .map(|&(i, b)| match self.ss.metric {
                SteadyMetric::Iops => i as f64,
                SteadyMetric::Bw => b as f64,
            })
            .collect()
    }

    fn judge(&mut self) -> bool {
        let y = self.values();
        let n = y.len() as f64;
        let mean = y.iter().sum::<f64>() / n;
        if self.ss.slope {
            let sx = n * (n - 1.0) / 2.0;
            let sxx = (n - 1.0) * n * (2.0 * n - 1.0) / 6.0;
            let sy: f64 = y.iter().sum();
            let sxy: f64 = y.iter().enumerate().map(|(i, v)| i as f64 * v).sum();
            let den = sxx - sx * sx / n;
            self.slope = if den > 0.0 {
                (sxy - sx * sy / n) / den
            } else {
                0.0
            };
            self.criterion = if self.ss.pct {
                100.0 * self.slope / mean
            } else {
                self.slope
            };
            self.criterion.abs() < self.ss.limit
        } else {
            self.deviation = y.iter().map(|v| (v - mean).abs()).fold(0.0, f64::max);
            self.criterion = if self.ss.pct {
                100.0 * self.deviation / mean
            } else {
                self.deviation
            };
            self.criterion < self.ss.limit
        }
    }

    /// fio's `steadystate` object: the last window's samples, oldest
    /// first (a window not yet full is padded with zeros and its means
    /// divided by the whole window, as fio does).
    pub fn report(&self) -> SteadyReport {
        let mut iops: Vec<u64> = self.samples.iter().map(|s| s.0).collect();
        let mut bw: Vec<u64> = self.samples.iter().map(|s| s.1).collect();
        iops.resize(self.n, 0);
        bw.resize(self.n, 0);
        let n = self.n as u64;
        SteadyReport {
            ss: self.ss.text(),
            duration: self.dur_s,
            attained: u8::from(self.attained),
            criterion: format!(
                "{:.6}{}",
                if self.criterion.is_finite() {
                    self.criterion
                } else {
                    0.0
                },
                if self.ss.pct { "%" } else { "" }
            ),
            max_deviation: self.deviation,
            slope: self.slope,
            data: SteadyData {
                bw_mean: bw.iter().sum::<u64>() / n,
                iops_mean: iops.iter().sum::<u64>() / n,
                iops,
                bw,
            },
        }
    }
}

/// fio's `steadystate` object of a job (fio 3.33's keys).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SteadyReport {
    /// The criterion as fio writes it (`iops:5.000000%`).
    pub ss: String,
    /// `ss_dur`, seconds.
    pub duration: u64,
    /// 1 when steady state was attained (the job then ended early).
    pub attained: u8,
    /// The last judged value of the criterion (`0.233489%`).
    pub criterion: String,
    pub max_deviation: f64,
    pub slope: f64,
    pub data: SteadyData,
}

/// The window judged last.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SteadyData {
    pub bw_mean: u64,
    pub iops_mean: u64,
    pub iops: Vec<u64>,
    pub bw: Vec<u64>,
}

/// What the run-time tuning found, for the job's record.
#[derive(Clone, Debug, Default)]
pub struct Tuned {
    pub steadystate: Option<SteadyReport>,
    pub latency: Option<LatencyReport>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(lines: &[(&str, &str)]) -> Job {
        let mut j = Job::default();
        for (k, v) in lines {
            j.set(k, Some(v)).unwrap();
        }
        j
    }

    /// Coefficient of variation of the gaps of `n` scheduled I/Os.
    fn cv(j: &Job, n: usize) -> f64 {
        let t = Instant::now();
        let mut s = Schedule::of(j, t).unwrap();
        let times: Vec<f64> = (0..n)
            .map(|_| s.take().duration_since(t).as_secs_f64())
            .collect();
        let gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        assert!((mean - 1.0 / 2000.0).abs() < 0.1 / 2000.0, "{mean}");
        var.sqrt() / mean
    }

    #[test]
    fn poisson_gaps_vary_as_much_as_they_average_and_linear_ones_do_not() {
        let lin = job(&[("io_submit_mode", "offload"), ("rate_iops", "2000")]);
        assert!(cv(&lin, 2000) < 0.01);
        let mut poi = lin.clone();
        poi.set("rate_process", Some("poisson")).unwrap();
        let c = cv(&poi, 2000);
        assert!((0.7..1.3).contains(&c), "{c}");
        // Inline submission keeps the paced loop: no schedule.
        assert!(Schedule::of(&job(&[("rate_iops", "5")]), Instant::now()).is_none());
    }

    #[test]
    fn the_depth_search_doubles_bisects_and_settles() {
        let j = job(&[("latency_target", "1ms"), ("latency_window", "0")]);
        let now = Instant::now();
        let mut l = LatTarget::of(&j, 16, now).unwrap();
        // Every window meets the target: 1, 2, 4, 8, 16, then the final
        // window at 16, then done.
        let mut ios = 0;
        let mut steps = Vec::new();
        for _ in 0..7 {
            ios += 10;
            steps.push((l.check(ios, now), l.qd));
        }
        assert_eq!(steps[4], (LatStep::FinalWindow, 16));
        assert_eq!(steps[5], (LatStep::Done, 16));
        // A device that misses the target beyond depth 1 settles low.
        let mut l = LatTarget::of(&j, 16, now).unwrap();
        for _ in 0..40 {
            ios += 10;
            let lat = if l.qd > 1 { 5_000_000 } else { 100_000 };
            if l.completed(lat, ios, now) == LatStep::Fatal {
                panic!("fatal at depth {}", l.qd);
            }
            if l.check(ios, now) == LatStep::Done {
                break;
            }
        }
        assert!(l.qd <= 2, "{}", l.qd);
        assert_eq!(l.report().latency_target, 1_000_000);
    }

    #[test]
    fn steady_samples_attain_and_a_ramp_does_not() {
        let j = job(&[("ss", "iops:5%"), ("ss_dur", "3")]);
        let t = Instant::now();
        let mut s = SteadyState::of(&j, t).unwrap();
        let sec = Duration::from_secs(1);
        let (mut ios, mut attained) = (0, false);
        assert!(!s.tick(t, 0, 0));
        for k in 1..=5 {
            ios += 1000 + k;
            attained = s.tick(t + sec * k as u32, ios, ios * 4096);
            if attained {
                break;
            }
        }
        assert!(attained);
        let r = s.report();
        assert_eq!((r.attained, r.duration, r.data.iops.len()), (1, 3, 3));
        assert!(r.criterion.ends_with('%') && r.data.bw_mean > 4_000_000);
        // Doubling every second never settles, by deviation or by slope.
        for ss in ["iops:5%", "iops_slope:1%"] {
            let j = job(&[("ss", ss), ("ss_dur", "3")]);
            let mut s = SteadyState::of(&j, t).unwrap();
            let mut ios = 0;
            s.tick(t, 0, 0);
            for k in 1..=8u32 {
                ios += 100 << k;
                assert!(!s.tick(t + sec * k, ios, ios * 4096), "{ss} at {k}");
            }
            assert_eq!(s.report().attained, 0);
        }
    }
}
