//! The CUDA bandwidth sweep of `curve -t cuda --mode stream`: each
//! combination a `cuda` spec selects (direction, host memory, engine) timed
//! over the sizes with the driver-level rig of `cuda::bandwidth`, as
//! nvbandwidth does, and turned into curve points. The rig is a transport
//! concern; which sizes, how many trials and what a point records is the
//! experiment's.

use crate::error::{Error, Result};
use crate::measure::distribution::{Distribution, Figures, Spread};
use crate::measure::stats::Recorder;
use crate::options::{Amount, CurveConfig};
use crate::result::curve::{CurvePoint, Skipped};
use crate::transport::cuda::bandwidth::{
    Host, Rig, Selection, copies_per_trial, curve_spec, impossible,
};
use crate::transport::{BufferMode, CompletionMode, Pattern, Spec};
use crate::units::Chunk;
use std::sync::atomic::{AtomicBool, Ordering};

/// One measured curve: its spec, host memory as a buffer mode, and
/// (size, ns per copy) for the model fit.
pub type Measured = (Spec, BufferMode, Vec<(u64, f64)>);

/// Measures every selected curve of one `cuda` spec over `sizes`, pushing
/// points (and skipped sizes); returns each curve's (size, ns per copy)
/// for the model fit.
#[allow(clippy::too_many_arguments)]
pub fn run(
    args: &CurveConfig,
    spec: &Spec,
    completion: CompletionMode,
    sizes: &[u64],
    points: &mut Vec<CurvePoint>,
    skipped: &mut Vec<Skipped>,
    progress: &dyn crate::experiment::Progress,
    stop: &AtomicBool,
) -> Result<Vec<Measured>> {
    let sel = Selection::from_spec(spec)?;
    let ordinal = crate::transport::cuda_ordinal(spec)?;
    let largest = sizes.iter().copied().max().unwrap_or(1).max(1) as usize;
    let mut rig = Rig::new(
        ordinal,
        completion,
        largest,
        sel.hosts.contains(&Host::Pageable),
        args.common.timeout,
    )?;
    // A sample here is one trial (k copies timed by events), so --samples
    // counts trials and --duration runs trials until it has passed, as in
    // every other curve; neither: nvbandwidth's 3 (`copy_amount`'s default).
    let (trials, budget) = match args.copy_amount {
        Amount::Samples(n) => (n.max(1), None),
        Amount::Time(d) => (u64::MAX, Some(d)),
    };
    let mut curves = Vec::new();
    for (d, h, e) in sel.curves() {
        let cs = curve_spec(spec, d, h, e);
        let label = cs.to_string();
        let buffers = match h {
            Host::Pinned => BufferMode::Raw,
            Host::Pageable => BufferMode::User,
        };
        let mut curve = Vec::new();
        for &size in sizes {
            progress.point(&format!("{label} {size} B"));
            let why = if size == 0 {
                Some("nothing to copy")
            } else {
                impossible(h, e)
            };
            if let Some(why) = why {
                skipped.push(Skipped {
                    spec: label.clone(),
                    curve: label.clone(),
                    size_bytes: size,
                    reason: why.into(),
                });
                continue;
            }
            if stop.load(Ordering::Relaxed) {
                return Err(Error::Interrupted);
            }
            let k = copies_per_trial(size);
            let n = size as usize;
            // One untimed trial: first-touch, JIT and clocks ramping up.
            rig.trial(d, h, e, n, k)?;
            let mut rec = Recorder::new();
            let mut got = Vec::new();
            let started = std::time::Instant::now();
            for _ in 0..trials {
                if budget.is_some_and(|b| !got.is_empty() && started.elapsed() >= b) {
                    break;
                }
                if !got.is_empty() && stop.load(Ordering::Relaxed) {
                    return Err(Error::Interrupted);
                }
                let ns = rig.trial(d, h, e, n, k)?;
                rec.record(ns.round().max(1.0) as u64);
                got.push(ns);
            }
            let p = point(args, &cs, buffers, completion, size, k, &rec, &got);
            curve.push((size, p.oneway.p50_ns as f64));
            points.push(p);
        }
        curves.push((cs, buffers, curve));
    }
    Ok(curves)
}

#[allow(clippy::too_many_arguments)]
fn point(
    args: &CurveConfig,
    spec: &Spec,
    buffers: BufferMode,
    completion: CompletionMode,
    size: u64,
    k: u32,
    rec: &Recorder,
    trials: &[f64],
) -> CurvePoint {
    let exchange = rec.summary();
    let oneway = crate::measure::stats::per_message(&exchange, f64::from(k));
    let mut sorted = trials.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = median_of_sorted(&sorted);
    let ways = if spec.get("dir") == Some("bidir") {
        2.0
    } else {
        1.0
    };
    let mut warnings = Vec::new();
    let (lo, hi) = (sorted[0], sorted[sorted.len() - 1]);
    if lo > 0.0 && hi / lo > 1.10 {
        warnings.push(format!(
            "trials differ by {:.0}% (slowest against fastest): the figure is noisy",
            (hi / lo - 1.0) * 100.0
        ));
    }
    CurvePoint {
        transport: "cuda".into(),
        spec: spec.to_string(),
        buffers,
        completion,
        mode: Pattern::Stream,
        window: k,
        direction: None,
        chunk: Chunk::Whole,
        packet_bytes: size,
        payload: args.payload,
        size_bytes: size,
        warmup: 1,
        timed_s: trials.iter().sum::<f64>() / 1e9,
        partial: false,
        exchange,
        oneway,
        bandwidth_mbps: ways * size as f64 * f64::from(k) * 1e3 / median,
        warnings,
        device_time: None,
        // Each trial is a block: its own one-way time and bandwidth.
        spread: Spread {
            histogram: Some(Distribution::of(rec)),
            repeats: Vec::new(),
            blocks: trials
                .iter()
                .map(|&ns| {
                    Figures::from([
                        ("p50_ns", ns / f64::from(k)),
                        ("mean_ns", ns / f64::from(k)),
                        (
                            "bandwidth_MBps",
                            ways * size as f64 * f64::from(k) * 1e3 / ns,
                        ),
                    ])
                })
                .collect(),
        },
    }
}

/// The middle trial, or the mean of the middle two for an even count.
fn median_of_sorted(sorted: &[f64]) -> f64 {
    let mid = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    }
}

#[cfg(test)]
mod tests {
    use super::median_of_sorted;

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median_of_sorted(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(median_of_sorted(&[1.0, 2.0, 4.0, 9.0]), 3.0);
        assert_eq!(median_of_sorted(&[5.0]), 5.0);
    }
}
