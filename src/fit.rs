//! Hockney's model of a transfer, t(n) = t0 + n / r∞, fitted to a measured
//! curve, with n½ = t0 · r∞ (the size that reaches half the asymptotic
//! bandwidth), and optionally two segments where the protocol changes.

use serde::Serialize;

#[derive(Clone, Debug, Serialize, PartialEq)]
#[allow(non_snake_case)]
pub struct Fit {
    /// Latency at size 0, ns.
    pub t0_ns: f64,
    /// Asymptotic bandwidth, decimal MB/s (10^6 bytes/s).
    pub r_inf_MBps: f64,
    pub n_half_bytes: f64,
    /// Coefficient of determination, on the relative residuals.
    pub r2: f64,
    /// Largest |model − measured| / measured over the points used.
    pub max_rel_err: f64,
    pub points: usize,
    pub min_size_bytes: u64,
    pub max_size_bytes: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TwoSegment {
    pub breakpoint_bytes: u64,
    pub below: Fit,
    pub above: Fit,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Breakpoint {
    None,
    Auto,
    Size(u64),
}

/// Weighted sums of a least-squares fit with weights 1/t²: the relative
/// residuals, so the small sizes (µs) set t0 and the large ones (ms) set r∞.
/// Plain least squares would let the 8 MiB points swamp t0 entirely.
fn solve(points: &[(u64, f64)]) -> Option<(f64, f64, f64)> {
    let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(n, t) in points {
        let (x, w) = (n as f64, 1.0 / (t * t));
        sw += w;
        sx += w * x;
        sy += w * t;
        sxx += w * x * x;
        sxy += w * x * t;
    }
    let det = sw * sxx - sx * sx;
    if det.abs() <= f64::EPSILON * sw * sxx || !det.is_finite() {
        return None;
    }
    let slope = (sw * sxy - sx * sy) / det;
    let t0 = (sy - slope * sx) / sw;
    // Weighted squared relative residuals.
    let sse: f64 = points
        .iter()
        .map(|&(n, t)| ((t0 + slope * n as f64 - t) / t).powi(2))
        .sum();
    Some((t0, slope, sse))
}

fn clean(points: &[(u64, f64)]) -> Vec<(u64, f64)> {
    let mut v: Vec<(u64, f64)> = points
        .iter()
        .copied()
        .filter(|&(_, t)| t.is_finite() && t > 0.0)
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    v
}

fn distinct(points: &[(u64, f64)]) -> usize {
    let mut n = 0;
    let mut last = None;
    for p in points {
        if last != Some(p.0) {
            n += 1;
            last = Some(p.0);
        }
    }
    n
}

fn fit_sorted(points: &[(u64, f64)]) -> Option<(Fit, f64)> {
    if distinct(points) < 2 {
        return None;
    }
    let (t0, slope, sse) = solve(points)?;
    // No bandwidth limit visible (flat or falling times): no r∞ to report.
    if slope.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let r_bytes_per_ns = 1.0 / slope;
    let mean_rel = {
        let ws: f64 = points.iter().map(|_| 1.0).sum();
        points.iter().map(|&(_, t)| t).sum::<f64>() / ws
    };
    // R² on the relative scale: 1 − SSE / Σ((t − t̄)/t)².
    let sst: f64 = points
        .iter()
        .map(|&(_, t)| ((t - mean_rel) / t).powi(2))
        .sum();
    let max_rel_err = points
        .iter()
        .map(|&(n, t)| ((t0 + slope * n as f64 - t) / t).abs())
        .fold(0.0, f64::max);
    Some((
        Fit {
            t0_ns: t0,
            r_inf_MBps: r_bytes_per_ns * 1e3,
            n_half_bytes: t0 * r_bytes_per_ns,
            r2: if sst > 0.0 { 1.0 - sse / sst } else { 1.0 },
            max_rel_err,
            points: points.len(),
            min_size_bytes: points[0].0,
            max_size_bytes: points[points.len() - 1].0,
        },
        sse,
    ))
}

/// The single-segment fit; `None` with fewer than two distinct sizes or when
/// time does not grow with size (no bandwidth limit to speak of).
pub fn hockney(points: &[(u64, f64)]) -> Option<Fit> {
    fit_sorted(&clean(points)).map(|(f, _)| f)
}

/// Two segments split at a size: `Auto` tries every split leaving three
/// distinct sizes a side and keeps the best, but only if it cuts the single
/// fit's residual by at least 25% — a second segment must earn its place,
/// or every noisy curve would grow a spurious knee.
pub fn two_segment(points: &[(u64, f64)], bp: Breakpoint) -> Option<TwoSegment> {
    let pts = clean(points);
    let split = |b: u64| -> Option<(TwoSegment, f64)> {
        let cut = pts.partition_point(|p| p.0 < b);
        let (lo, hi) = pts.split_at(cut);
        let (below, e1) = fit_sorted(lo)?;
        let (above, e2) = fit_sorted(hi)?;
        Some((
            TwoSegment {
                breakpoint_bytes: hi.first()?.0,
                below,
                above,
            },
            e1 + e2,
        ))
    };
    match bp {
        Breakpoint::None => None,
        Breakpoint::Size(b) => split(b).map(|(t, _)| t),
        Breakpoint::Auto => {
            let (_, single) = fit_sorted(&pts)?;
            let mut sizes: Vec<u64> = pts.iter().map(|p| p.0).collect();
            sizes.dedup();
            if sizes.len() < 6 {
                return None;
            }
            let best = sizes[3..=sizes.len() - 3]
                .iter()
                .filter_map(|&b| split(b))
                .min_by(|a, b| a.1.total_cmp(&b.1))?;
            // A single fit already within rounding of every point has no knee.
            let exact = single <= 1e-18 * pts.len() as f64;
            (!exact && best.1 <= 0.75 * single).then_some(best.0)
        }
    }
}

/// One line for people.
pub fn describe(f: &Fit) -> String {
    let t0 = if f.t0_ns.abs() < 1000.0 {
        format!("{:.0} ns", f.t0_ns)
    } else {
        format!("{:.2} µs", f.t0_ns / 1000.0)
    };
    let size = |b: f64| crate::units::format_size(b.max(0.0).round() as u64);
    format!(
        "t(n) = {t0} + n / {:.1} MB/s  (n½ = {} B; {} points, {}..{} B, R² {:.4}, worst {:.1}%)",
        f.r_inf_MBps,
        size(f.n_half_bytes),
        f.points,
        f.min_size_bytes,
        f.max_size_bytes,
        f.r2,
        f.max_rel_err * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(t0: f64, mbps: f64, sizes: &[u64]) -> Vec<(u64, f64)> {
        sizes
            .iter()
            .map(|&n| (n, t0 + n as f64 / (mbps * 1e-3)))
            .collect()
    }

    fn sweep() -> Vec<u64> {
        std::iter::once(0)
            .chain((0..=23).map(|k| 1u64 << k))
            .collect()
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        ((a - b) / b).abs() < tol
    }

    #[test]
    fn recovers_exact_parameters() {
        let f = hockney(&model(5000.0, 1200.0, &sweep())).unwrap();
        assert!(close(f.t0_ns, 5000.0, 1e-9), "{f:?}");
        assert!(close(f.r_inf_MBps, 1200.0, 1e-9), "{f:?}");
        assert!(close(f.n_half_bytes, 5000.0 * 1.2, 1e-9));
        assert!(f.max_rel_err < 1e-9);
        assert_eq!((f.min_size_bytes, f.max_size_bytes), (0, 8 << 20));
    }

    #[test]
    fn finds_a_knee_and_both_segments() {
        let s = sweep();
        let (lo, hi): (Vec<u64>, Vec<u64>) = s.iter().partition(|&&n| n < 65536);
        let mut pts = model(2000.0, 500.0, &lo);
        pts.extend(model(30000.0, 2000.0, &hi));
        let t = two_segment(&pts, Breakpoint::Auto).unwrap();
        assert_eq!(t.breakpoint_bytes, 65536);
        assert!(close(t.below.t0_ns, 2000.0, 1e-9) && close(t.below.r_inf_MBps, 500.0, 1e-9));
        assert!(close(t.above.t0_ns, 30000.0, 1e-9) && close(t.above.r_inf_MBps, 2000.0, 1e-9));
        let t = two_segment(&pts, Breakpoint::Size(4096)).unwrap();
        assert_eq!(t.breakpoint_bytes, 4096);
        assert!(two_segment(&pts, Breakpoint::None).is_none());
    }

    #[test]
    fn no_knee_in_a_straight_line() {
        assert!(two_segment(&model(5000.0, 1200.0, &sweep()), Breakpoint::Auto).is_none());
    }

    #[test]
    fn degenerate_input_gives_none() {
        assert!(hockney(&[]).is_none());
        assert!(hockney(&[(64, 100.0)]).is_none());
        assert!(hockney(&[(64, 100.0), (64, 110.0)]).is_none());
        assert!(hockney(&[(1, 0.0), (2, -1.0)]).is_none());
        assert!(hockney(&[(1, 100.0), (1 << 20, 100.0)]).is_none());
        assert!(hockney(&[(1, 100.0), (2, f64::NAN)]).is_none());
    }

    #[test]
    fn mild_noise_stays_close() {
        let pts: Vec<(u64, f64)> = model(5000.0, 1200.0, &sweep())
            .into_iter()
            .enumerate()
            .map(|(i, (n, t))| (n, t * (1.0 + 0.02 * ((i as f64 * 2.7).sin()))))
            .collect();
        let f = hockney(&pts).unwrap();
        assert!(close(f.t0_ns, 5000.0, 0.05), "{f:?}");
        assert!(close(f.r_inf_MBps, 1200.0, 0.05), "{f:?}");
    }
}
