//! Hockney's model of a transfer, t(n) = t0 + n / r∞, fitted to a measured
//! latency curve the way NetPIPE/BIP-style tools summarise one: a start-up
//! latency t0, an asymptotic bandwidth r∞, and n½ = t0 · r∞, the message size
//! that reaches half of r∞. Optionally two segments, because real transports
//! often switch protocol (eager → rendezvous, inline → DMA) at some size and
//! one line through both regimes describes neither.

use serde::{Deserialize, Serialize};

/// One straight-line fit of time against size.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[allow(non_snake_case)] // `r_inf_MBps` is the JSON field name; MB ≠ mb.
pub struct Fit {
    /// Latency at size 0, ns. May be negative on odd data; it is reported as
    /// fitted, not clamped, so a bad curve looks bad rather than plausible.
    pub t0_ns: f64,
    /// Asymptotic bandwidth, decimal MB/s (1 MB/s = 10^6 bytes/s).
    pub r_inf_MBps: f64,
    /// t0 · r∞ in bytes: the size at which half of r∞ is reached.
    pub n_half_bytes: f64,
    /// Coefficient of determination on the weighted (relative) residuals,
    /// i.e. on the scale the fit actually minimised.
    pub r2: f64,
    /// Largest |model − measured| / measured over the points used.
    pub max_rel_err: f64,
    /// Points used (after dropping non-positive or non-finite times).
    pub points: usize,
    /// Smallest message size among the points used, bytes.
    pub min_size_bytes: u64,
    /// Largest message size among the points used, bytes.
    pub max_size_bytes: u64,
}

/// Two fits split at a size; `breakpoint_bytes` is the smallest size in
/// `above`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TwoSegment {
    /// Where the curve is split, bytes: the first size fitted by `above`.
    pub breakpoint_bytes: u64,
    /// The fit over the sizes smaller than the breakpoint.
    pub below: Fit,
    /// The fit over the breakpoint and every larger size.
    pub above: Fit,
}

/// Where, if anywhere, to split the curve into two segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Breakpoint {
    /// One segment over every size.
    None,
    /// Where the protocol changes, found from the data.
    Auto,
    /// At this message size.
    Size(u64),
}

impl Breakpoint {
    /// The word or size that names it, as `--breakpoint` takes it.
    pub fn name(self) -> String {
        match self {
            Breakpoint::None => "none".into(),
            Breakpoint::Auto => "auto".into(),
            Breakpoint::Size(n) => crate::units::format_size(n),
        }
    }
}

impl serde::Serialize for Breakpoint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Breakpoint::None => s.serialize_str("none"),
            Breakpoint::Auto => s.serialize_str("auto"),
            Breakpoint::Size(n) => s.serialize_u64(*n),
        }
    }
}

impl std::str::FromStr for Breakpoint {
    type Err = String;

    /// `auto`, `none`, or a size like `64k`.
    fn from_str(s: &str) -> std::result::Result<Breakpoint, String> {
        match s.trim() {
            "auto" => Ok(Breakpoint::Auto),
            "none" => Ok(Breakpoint::None),
            v => crate::units::parse_size(v)
                .map(Breakpoint::Size)
                .map_err(|_| {
                    format!("malformed breakpoint '{v}': expected auto, none or a size like 64k")
                }),
        }
    }
}

/// A second segment must cut the single line's leave-one-size-out
/// prediction error (see [`held_out_error`]) to this fraction or less.
/// Over 2000 simulated 25-size sweeps of each kind (`auto_rule_figures`
/// prints them), the best split's ratio was never below 0.48 on a straight
/// line with ±5% noise (1st percentile 0.65), nor below 0.88 on a line with
/// ±0.2% noise and one point 20–40% off, and never above 0.003 for a change
/// of regime (t0 ×20, r∞ ×4) or 0.1 for a 25 µs latency step at 64 KiB,
/// both under ±2% noise. The residual of the fit itself, which this rule
/// replaced (a quarter of the single fit's), let 588 of the 2000 stray-point
/// sweeps grow a segment: bending through the stray point is what lowers it.
const AUTO_MAX_RESIDUAL_RATIO: f64 = 0.25;

/// With `Auto`, each side needs this many distinct sizes: a line fits any
/// two exactly, so a segment of two says nothing, and the prediction test
/// needs two left when one is held out.
const AUTO_MIN_SIZES_PER_SIDE: usize = 3;

/// With `Auto`, no segment's r∞ may exceed the largest bandwidth measured
/// at any size by more than this fraction. r∞ is an asymptote: Hockney
/// puts it above the bandwidth at the largest size n by n½/n, which is
/// under 5% once the sweep reaches 20·n½ (the default sweep's 8 MiB covers
/// n½ up to 400 KiB). A segment further above every measured rate claims a
/// bandwidth no point showed: the steep slope of a few points, one of them
/// noisy, not a device.
const AUTO_MAX_R_INF_OVER_MEASURED: f64 = 0.05;

/// A single fit whose RMS relative error is below this already matches the
/// data to far better than any timer resolves; what is left is rounding, and
/// cutting rounding noise is not a knee.
const EXACT_RMS_REL: f64 = 1e-6;

/// The unconstrained weighted line: intercept, slope (ns/byte), the weighted
/// squared residual Σ((model − t)/t)², and the weighted total sum of squares.
struct Line {
    t0: f64,
    slope: f64,
    sse: f64,
    sst: f64,
}

/// Weighted least squares with weights 1/t², i.e. minimising the squared
/// *relative* residuals. Times on a latency curve span four or five decades
/// (µs at 0 B, ms at 8 MiB); with plain least squares the absolute errors of
/// the largest sizes dominate, and t0 ends up as whatever intercept suits the
/// 8 MiB points — often off by more than t0 itself. Relative residuals give
/// every size an equal say, so the small sizes pin t0 and the large ones r∞.
///
/// The 2×2 normal equations are solved in closed form about the weighted
/// means (centred sums), which avoids the cancellation of the textbook
/// Σw·Σwx² − (Σwx)² determinant when sizes reach 10^7 and weights 10^-14.
///
/// Expects positive, finite times and at least two distinct sizes.
fn solve(points: &[(u64, f64)]) -> Option<Line> {
    let (mut sw, mut swx, mut swy) = (0.0f64, 0.0f64, 0.0f64);
    for &(n, t) in points {
        let w = 1.0 / (t * t);
        sw += w;
        swx += w * n as f64;
        swy += w * t;
    }
    if !(sw > 0.0 && sw.is_finite()) {
        return None;
    }
    let (xm, ym) = (swx / sw, swy / sw);
    let (mut sxx, mut sxy, mut sst) = (0.0f64, 0.0f64, 0.0f64);
    for &(n, t) in points {
        let w = 1.0 / (t * t);
        let (dx, dy) = (n as f64 - xm, t - ym);
        sxx += w * dx * dx;
        sxy += w * dx * dy;
        sst += w * dy * dy;
    }
    if !(sxx > 0.0 && sxx.is_finite()) {
        return None;
    }
    let slope = sxy / sxx;
    let t0 = ym - slope * xm;
    if !(slope.is_finite() && t0.is_finite()) {
        return None;
    }
    let sse = points
        .iter()
        .map(|&(n, t)| ((t0 + slope * n as f64 - t) / t).powi(2))
        .sum();
    Some(Line {
        t0,
        slope,
        sse,
        sst,
    })
}

/// Drops unusable points and sorts by size so splits are contiguous slices.
fn clean(points: &[(u64, f64)]) -> Vec<(u64, f64)> {
    let mut v: Vec<(u64, f64)> = points
        .iter()
        .copied()
        .filter(|&(_, t)| t.is_finite() && t > 0.0)
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    v
}

/// Distinct sizes of a size-sorted slice, ascending.
fn distinct_sizes(sorted: &[(u64, f64)]) -> Vec<u64> {
    let mut s: Vec<u64> = sorted.iter().map(|p| p.0).collect();
    s.dedup();
    s
}

/// How well the unconstrained line predicts each size it has not seen: for
/// each distinct size of a size-sorted slice, the line through the other
/// sizes, and its squared relative error at the held-out points, summed
/// (the PRESS statistic, Allen 1974, holding out a size rather than a point
/// so repeats of a size cannot vouch for each other). Unlike the residual
/// of a fit, this cannot be lowered by a segment that bends to pass through
/// one stray point: predicted from its neighbours, the stray point is as
/// far off as it was from the single line, and predicting the neighbours
/// from a line through it is worse still. `None` when a held-out fit
/// cannot be made (under three distinct sizes).
fn held_out_error(sorted: &[(u64, f64)]) -> Option<f64> {
    let mut total = 0.0;
    let mut start = 0;
    while start < sorted.len() {
        let n = sorted[start].0;
        let end = start + sorted[start..].partition_point(|p| p.0 == n);
        let rest: Vec<(u64, f64)> = sorted[..start]
            .iter()
            .chain(&sorted[end..])
            .copied()
            .collect();
        // `solve` refuses fewer than two distinct sizes.
        let line = solve(&rest)?;
        total += sorted[start..end]
            .iter()
            .map(|&(n, t)| ((line.t0 + line.slope * n as f64 - t) / t).powi(2))
            .sum::<f64>();
        start = end;
    }
    Some(total)
}

/// The largest bandwidth any point shows, bytes/ns.
fn max_measured_bandwidth(sorted: &[(u64, f64)]) -> f64 {
    sorted
        .iter()
        .map(|&(n, t)| n as f64 / t)
        .fold(0.0, f64::max)
}

/// The fit of a cleaned, size-sorted slice.
fn fit_sorted(sorted: &[(u64, f64)]) -> Option<Fit> {
    let (first, last) = (sorted.first()?.0, sorted.last()?.0);
    if first == last {
        return None; // fewer than two distinct sizes
    }
    let line = solve(sorted)?;
    // Time that does not grow with size shows no bandwidth limit: r∞ would
    // be infinite or negative, which no report should print as a number.
    if line.slope <= 0.0 {
        return None;
    }
    let r_bytes_per_ns = 1.0 / line.slope;
    let max_rel_err = sorted
        .iter()
        .map(|&(n, t)| ((line.t0 + line.slope * n as f64 - t) / t).abs())
        .fold(0.0, f64::max);
    let r2 = if line.sst > 0.0 {
        1.0 - line.sse / line.sst
    } else {
        1.0
    };
    Some(Fit {
        t0_ns: line.t0,
        // bytes/ns → MB/s: 1 byte/ns = 10^9 bytes/s = 10^3 MB/s.
        r_inf_MBps: r_bytes_per_ns * 1e3,
        n_half_bytes: line.t0 * r_bytes_per_ns,
        r2,
        max_rel_err,
        points: sorted.len(),
        min_size_bytes: first,
        max_size_bytes: last,
    })
}

/// Fits t(n) = t0 + n / r∞ to `(size in bytes, one-way time in ns)` points,
/// in any order and with repeated sizes allowed. Points whose time is not
/// finite and positive are skipped.
///
/// Returns `None` when fewer than two distinct sizes remain, or when the
/// fitted slope 1/r∞ is not positive: flat or falling times show no
/// bandwidth limit, and an infinite or negative r∞ is not a result.
pub fn hockney(points: &[(u64, f64)]) -> Option<Fit> {
    fit_sorted(&clean(points))
}

/// Fits two segments, split at a size.
///
/// - `Breakpoint::None`: `None`.
/// - `Breakpoint::Size(b)`: sizes `< b` form `below`, sizes `>= b` form
///   `above`; `None` unless each side fits on its own (two distinct sizes,
///   positive slope).
/// - `Breakpoint::Auto`: a second segment must be supported by several
///   sizes, predict the curve better than one line beyond what noise does,
///   and claim no bandwidth the points do not show. Of the splits between
///   consecutive distinct sizes that leave three distinct sizes a side and
///   whose two segments both have an r∞ at most 5% above the largest
///   bandwidth measured, it keeps the one whose segments predict each
///   held-out size best (`held_out_error`), and only if that error is a
///   quarter of the single line's or less. Any split lowers the residual of
///   the fit itself, so that residual cannot judge: a curve with one stray
///   point at 4 MiB would otherwise grow a segment through it with an r∞
///   far above the device's. `None` when no split qualifies.
pub fn two_segment(points: &[(u64, f64)], bp: Breakpoint) -> Option<TwoSegment> {
    let pts = clean(points);
    match bp {
        Breakpoint::None => None,
        Breakpoint::Size(b) => split_at(&pts, b).map(|(t, _)| t),
        Breakpoint::Auto => {
            let (best, ratio) = best_split(&pts)?;
            (ratio <= AUTO_MAX_RESIDUAL_RATIO).then_some(best)
        }
    }
}

/// Both fits of a cleaned, size-sorted slice split before size `b`, and
/// where the slice splits (the index of the first point above).
fn split_at(pts: &[(u64, f64)], b: u64) -> Option<(TwoSegment, usize)> {
    let at = pts.partition_point(|p| p.0 < b);
    let (lo, hi) = pts.split_at(at);
    let below = fit_sorted(lo)?;
    let above = fit_sorted(hi)?;
    Some((
        TwoSegment {
            breakpoint_bytes: above.min_size_bytes,
            below,
            above,
        },
        at,
    ))
}

/// The split `Auto` would consider, with its held-out error as a fraction
/// of the single line's; the bar is the caller's.
fn best_split(pts: &[(u64, f64)]) -> Option<(TwoSegment, f64)> {
    let sizes = distinct_sizes(pts);
    let k = AUTO_MIN_SIZES_PER_SIDE;
    if sizes.len() < 2 * k {
        return None;
    }
    // Compare with the unconstrained single line, even when its slope is
    // not positive: two clean regimes can average to a flat line.
    if solve(pts)?.sse <= EXACT_RMS_REL * EXACT_RMS_REL * pts.len() as f64 {
        return None;
    }
    let single = held_out_error(pts)?;
    // bytes/ns → MB/s, as in `fit_sorted`.
    let shown = max_measured_bandwidth(pts) * 1e3;
    let most = shown * (1.0 + AUTO_MAX_R_INF_OVER_MEASURED);
    sizes[k..=sizes.len() - k]
        .iter()
        .filter_map(|&b| split_at(pts, b))
        .filter(|(t, _)| t.below.r_inf_MBps <= most && t.above.r_inf_MBps <= most)
        .filter_map(|(t, at)| {
            let (lo, hi) = pts.split_at(at);
            Some((t, (held_out_error(lo)? + held_out_error(hi)?) / single))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// One line for people, e.g.
/// `t(n) = 12.3 µs + n / 1234.5 MB/s  (n½ = 15.2 KiB; 18 points, 0 B..8 MiB, R² 0.9993, worst 4.1%)`.
pub fn describe(f: &Fit) -> String {
    format!(
        "t(n) = {} + n / {:.1} MB/s  (n½ = {}; {} points, {}..{}, R² {:.4}, worst {:.1}%)",
        format_ns(f.t0_ns),
        f.r_inf_MBps,
        format_bytes(f.n_half_bytes),
        f.points,
        format_bytes(f.min_size_bytes as f64),
        format_bytes(f.max_size_bytes as f64),
        f.r2,
        f.max_rel_err * 100.0
    )
}

/// µs, or ns below 1 µs; about three significant figures.
fn format_ns(ns: f64) -> String {
    let a = ns.abs();
    if a < 1000.0 {
        if a < 10.0 {
            format!("{ns:.2} ns")
        } else {
            format!("{ns:.0} ns")
        }
    } else {
        let us = ns / 1000.0;
        if a < 10_000.0 {
            format!("{us:.2} µs")
        } else {
            format!("{us:.1} µs")
        }
    }
}

/// Bytes in binary units (B, KiB, MiB, GiB, TiB), one decimal, none when the
/// value is whole in its unit: `0 B`, `6000 B`→`5.9 KiB`, `8 MiB`.
fn format_bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let sign = if b < 0.0 { "-" } else { "" };
    let mut v = b.abs();
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    let s = format!("{v:.1}");
    let s = s.strip_suffix(".0").unwrap_or(&s);
    format!("{sign}{s} {}", UNITS[u])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Noiseless Hockney times for `sizes`.
    fn model(t0: f64, mbps: f64, sizes: &[u64]) -> Vec<(u64, f64)> {
        sizes
            .iter()
            .map(|&n| (n, t0 + n as f64 / (mbps * 1e-3)))
            .collect()
    }

    /// 0 and every power of two from 1 B to 8 MiB.
    fn sweep() -> Vec<u64> {
        std::iter::once(0)
            .chain((0..=23).map(|k| 1u64 << k))
            .collect()
    }

    fn rel(a: f64, b: f64) -> f64 {
        ((a - b) / b).abs()
    }

    /// Deterministic pseudo-noise in [-1, 1) (64-bit LCG, top bits).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        }
    }

    /// Fisher–Yates with the same LCG, so tests are reproducible.
    fn shuffle<T>(v: &mut [T], seed: u64) {
        let mut r = Lcg(seed);
        for i in (1..v.len()).rev() {
            let j = (((r.next() + 1.0) / 2.0) * (i + 1) as f64) as usize;
            v.swap(i, j.min(i));
        }
    }

    fn knee_data() -> Vec<(u64, f64)> {
        let (lo, hi): (Vec<u64>, Vec<u64>) = sweep().into_iter().partition(|&n| n < 65536);
        let mut pts = model(2000.0, 1000.0, &lo);
        pts.extend(model(40000.0, 4000.0, &hi));
        pts
    }

    #[test]
    fn recovers_exact_parameters() {
        let f = hockney(&model(5000.0, 1200.0, &sweep())).unwrap();
        assert!(rel(f.t0_ns, 5000.0) < 1e-9, "{f:?}");
        assert!(rel(f.r_inf_MBps, 1200.0) < 1e-9, "{f:?}");
        // 5000 ns × 1.2 bytes/ns.
        assert!(rel(f.n_half_bytes, 6000.0) < 1e-9, "{f:?}");
        assert!(rel(f.n_half_bytes, f.t0_ns * f.r_inf_MBps * 1e-3) < 1e-12);
        assert!(f.max_rel_err < 1e-9 && (f.r2 - 1.0).abs() < 1e-9, "{f:?}");
        assert_eq!(f.points, 25);
        assert_eq!((f.min_size_bytes, f.max_size_bytes), (0, 8 << 20));
    }

    #[test]
    fn order_and_repeats_do_not_matter() {
        let base = hockney(&model(5000.0, 1200.0, &sweep())).unwrap();
        let mut pts = model(5000.0, 1200.0, &sweep());
        pts.extend(model(5000.0, 1200.0, &sweep()));
        pts.extend(model(5000.0, 1200.0, &[64, 64, 1 << 20]));
        shuffle(&mut pts, 7);
        let f = hockney(&pts).unwrap();
        assert_eq!(f.points, 53);
        assert!(rel(f.t0_ns, base.t0_ns) < 1e-9, "{f:?}");
        assert!(rel(f.r_inf_MBps, base.r_inf_MBps) < 1e-9, "{f:?}");
        assert_eq!((f.min_size_bytes, f.max_size_bytes), (0, 8 << 20));
    }

    #[test]
    fn relative_weights_keep_latency_from_large_sizes() {
        // +1% at the top two sizes is ~140 µs of absolute error, 28× t0;
        // plain least squares would drag t0 far off, relative weights barely.
        let mut pts = model(5000.0, 1200.0, &sweep());
        for p in pts.iter_mut().filter(|p| p.0 >= 4 << 20) {
            p.1 *= 1.01;
        }
        let f = hockney(&pts).unwrap();
        assert!(rel(f.t0_ns, 5000.0) < 0.01, "{f:?}");
        assert!(rel(f.r_inf_MBps, 1200.0) < 0.02, "{f:?}");
    }

    #[test]
    fn negative_intercept_is_kept() {
        let f = hockney(&model(-100.0, 1000.0, &[1000, 2000, 4000, 8000])).unwrap();
        assert!(rel(f.t0_ns, -100.0) < 1e-9, "{f:?}");
        assert!(f.n_half_bytes < 0.0);
    }

    #[test]
    fn skips_unusable_points() {
        let mut pts = model(5000.0, 1200.0, &sweep());
        pts.extend([
            (3, 0.0),
            (5, -1.0),
            (7, f64::NAN),
            (9, f64::INFINITY),
            (1 << 30, f64::NEG_INFINITY),
        ]);
        let f = hockney(&pts).unwrap();
        assert_eq!(f.points, 25);
        assert!(rel(f.t0_ns, 5000.0) < 1e-9 && rel(f.r_inf_MBps, 1200.0) < 1e-9);
    }

    #[test]
    fn degenerate_input_gives_none() {
        let cases: Vec<Vec<(u64, f64)>> = vec![
            vec![],
            vec![(64, 100.0)],
            vec![(64, 100.0), (64, 110.0), (64, 90.0)],
            vec![(1, 0.0), (2, -1.0), (4, 0.0)],
            vec![(1, 100.0), (2, f64::NAN), (4, -5.0), (8, 0.0)],
            vec![(1, 100.0), (1 << 20, 100.0)], // flat: slope 0
            vec![(1, 100.0), (64, 100.0), (4096, 100.0)], // flat, three sizes
            vec![(1, 300.0), (64, 200.0), (4096, 100.0)], // falling
            vec![(u64::MAX, 1.0), (0, f64::MAX)], // absurd
        ];
        for pts in &cases {
            assert!(hockney(pts).is_none(), "{pts:?}");
            for bp in [
                Breakpoint::None,
                Breakpoint::Auto,
                Breakpoint::Size(2),
                Breakpoint::Size(64),
            ] {
                assert!(two_segment(pts, bp).is_none(), "{pts:?} {bp:?}");
            }
        }
    }

    #[test]
    fn auto_finds_the_knee_and_both_segments() {
        let mut pts = knee_data();
        shuffle(&mut pts, 3);
        let t = two_segment(&pts, Breakpoint::Auto).unwrap();
        assert_eq!(t.breakpoint_bytes, 65536);
        assert!(rel(t.below.t0_ns, 2000.0) < 1e-9, "{t:?}");
        assert!(rel(t.below.r_inf_MBps, 1000.0) < 1e-9, "{t:?}");
        assert!(rel(t.above.t0_ns, 40000.0) < 1e-9, "{t:?}");
        assert!(rel(t.above.r_inf_MBps, 4000.0) < 1e-9, "{t:?}");
        assert_eq!(t.below.max_size_bytes, 32768);
        assert_eq!(t.above.min_size_bytes, 65536);
        assert_eq!(t.below.points + t.above.points, 25);
    }

    #[test]
    fn auto_on_a_single_line_gives_none() {
        assert!(two_segment(&model(5000.0, 1200.0, &sweep()), Breakpoint::Auto).is_none());
        // Noise alone does not earn a second segment.
        for seed in 1..=200 {
            let mut r = Lcg(seed);
            let pts: Vec<(u64, f64)> = model(5000.0, 1200.0, &sweep())
                .into_iter()
                .map(|(n, t)| (n, t * (1.0 + 0.05 * r.next())))
                .collect();
            assert!(two_segment(&pts, Breakpoint::Auto).is_none(), "seed {seed}");
        }
    }

    #[test]
    fn auto_needs_three_sizes_a_side() {
        // Five distinct sizes cannot leave three on each side.
        let mut pts = model(1000.0, 100.0, &[1, 2, 4]);
        pts.extend(model(9000.0, 9000.0, &[1 << 20, 2 << 20]));
        assert!(two_segment(&pts, Breakpoint::Auto).is_none());
        // With a sixth, the only split (3 | 3) is taken.
        pts.extend(model(9000.0, 9000.0, &[4 << 20]));
        let t = two_segment(&pts, Breakpoint::Auto).unwrap();
        assert_eq!(t.breakpoint_bytes, 1 << 20);
    }

    /// Hockney times for `sizes` times (1 + `noise` × uniform[-1, 1)),
    /// then `stray` (index, factor) applied to one point.
    fn noisy(
        t: impl Fn(u64) -> f64,
        sizes: &[u64],
        noise: f64,
        seed: u64,
        stray: Option<(usize, f64)>,
    ) -> Vec<(u64, f64)> {
        let mut r = Lcg(seed);
        sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let f = stray.filter(|s| s.0 == i).map_or(1.0, |s| s.1);
                (n, t(n) * (1.0 + noise * r.next()) * f)
            })
            .collect()
    }

    /// 1000 MB/s after 5 µs: the simulated device of issue 34.
    fn device(n: u64) -> f64 {
        5000.0 + n as f64
    }

    /// An eager/rendezvous switch at 64 KiB: the same 1000 MB/s, 25 µs
    /// more of handshake from 64 KiB on.
    fn rendezvous(n: u64) -> f64 {
        device(n) + if n < 65536 { 0.0 } else { 25000.0 }
    }

    /// A line with light noise and one point 20–40% off at a random size,
    /// from `seed`.
    fn stray_point(seed: u64) -> Vec<(u64, f64)> {
        let mut r = Lcg(seed ^ 0x5eed);
        let at = (((r.next() + 1.0) / 2.0) * 25.0) as usize;
        let off = 0.2 + 0.1 * (r.next() + 1.0);
        let f = if r.next() < 0.0 { 1.0 - off } else { 1.0 + off };
        noisy(device, &sweep(), 0.002, seed, Some((at.min(24), f)))
    }

    /// Issue 34: a clean 1000 MB/s device up to 4 MiB whose 4 MiB point
    /// came back 20% fast grew a second segment through it, r∞ 1286 MB/s
    /// (1653 on the machine that found it). It is one noisy point, not a
    /// regime: one segment, r∞ within a few % of the device's.
    #[test]
    fn one_stray_last_point_keeps_one_segment() {
        let sizes: Vec<u64> = sweep().into_iter().filter(|&n| n <= 4 << 20).collect();
        let last = sizes.len() - 1;
        for f in [0.7, 0.8, 1.25, 1.4] {
            let pts = noisy(device, &sizes, 0.002, 7, Some((last, f)));
            assert!(two_segment(&pts, Breakpoint::Auto).is_none(), "×{f}");
            if (0.8..=1.25).contains(&f) {
                let one = hockney(&pts).unwrap();
                assert!(rel(one.r_inf_MBps, 1000.0) < 0.05, "×{f}: {one:?}");
            }
        }
        // A stray point anywhere on the sweep, 20–40% either way.
        for seed in 1..=200 {
            assert!(
                two_segment(&stray_point(seed), Breakpoint::Auto).is_none(),
                "seed {seed}"
            );
        }
    }

    #[test]
    fn a_latency_step_at_64k_still_splits_there() {
        for seed in 1..=50 {
            let pts = noisy(rendezvous, &sweep(), 0.02, seed, None);
            let t = two_segment(&pts, Breakpoint::Auto).unwrap();
            assert_eq!(t.breakpoint_bytes, 65536, "seed {seed}: {t:?}");
            assert_eq!((t.below.points, t.above.points), (17, 8));
            for seg in [&t.below, &t.above] {
                assert!(rel(seg.r_inf_MBps, 1000.0) < 0.05, "seed {seed}: {t:?}");
            }
            assert!(rel(t.above.t0_ns, 30000.0) < 0.2, "seed {seed}: {t:?}");
        }
    }

    #[test]
    fn auto_never_reports_an_r_inf_the_points_do_not_show() {
        let shown = |pts: &[(u64, f64)]| {
            pts.iter()
                .map(|&(n, t)| n as f64 / t * 1e3)
                .fold(0.0, f64::max)
        };
        let mut cases: Vec<Vec<(u64, f64)>> = vec![knee_data()];
        for seed in 1..=50 {
            cases.push(stray_point(seed));
            cases.push(noisy(rendezvous, &sweep(), 0.02, seed, None));
            cases.push(noisy(device, &sweep(), 0.05, seed, None));
        }
        for pts in &cases {
            if let Some(t) = two_segment(pts, Breakpoint::Auto) {
                let most = shown(pts) * (1.0 + AUTO_MAX_R_INF_OVER_MEASURED);
                assert!(
                    t.below.r_inf_MBps <= most && t.above.r_inf_MBps <= most,
                    "{t:?}"
                );
            }
        }
        // A real second regime whose sweep stops at 84% of its r∞: auto
        // does not claim the 9000 MB/s no point reached; asked for, the
        // split is still fitted as asked.
        let mut pts = model(1000.0, 100.0, &[1, 2, 4]);
        pts.extend(model(90000.0, 9000.0, &[1 << 20, 2 << 20, 4 << 20]));
        assert!(shown(&pts) < 0.85 * 9000.0);
        assert!(two_segment(&pts, Breakpoint::Auto).is_none());
        let t = two_segment(&pts, Breakpoint::Size(1 << 20)).unwrap();
        assert!(rel(t.above.r_inf_MBps, 9000.0) < 1e-9);
    }

    /// The figures behind `AUTO_MAX_RESIDUAL_RATIO`: the best split's
    /// held-out error over the single line's, over 2000 simulated sweeps
    /// of each kind. `cargo test --lib auto_rule_figures -- --ignored --nocapture`.
    #[test]
    #[ignore = "prints the figures of the auto rule's doc comment; slow in debug builds"]
    fn auto_rule_figures() {
        type Gen = Box<dyn Fn(u64) -> Vec<(u64, f64)>>;
        let kinds: [(&str, Gen); 4] = [
            (
                "line, ±5% noise",
                Box::new(|s| noisy(device, &sweep(), 0.05, s, None)),
            ),
            (
                "line, ±0.2% noise, one point 20–40% off",
                Box::new(stray_point),
            ),
            (
                "knee t0 ×20 r∞ ×4, ±2%",
                Box::new(|s| {
                    let mut r = Lcg(s);
                    knee_data()
                        .into_iter()
                        .map(|(n, t)| (n, t * (1.0 + 0.02 * r.next())))
                        .collect()
                }),
            ),
            (
                "25 µs latency step at 64 KiB, ±2%",
                Box::new(|s| noisy(rendezvous, &sweep(), 0.02, s, None)),
            ),
        ];
        for (name, make) in kinds {
            let mut v: Vec<f64> = (1..=2000)
                .map(|s| best_split(&clean(&make(s))).map_or(f64::INFINITY, |b| b.1))
                .collect();
            v.sort_by(f64::total_cmp);
            let kept = v.iter().filter(|&&r| r <= AUTO_MAX_RESIDUAL_RATIO).count();
            println!(
                "{name}: min {:.3}, 1st pct {:.3}, median {:.3}, max {:.3}; kept {kept} of 2000",
                v[0], v[20], v[1000], v[1999]
            );
        }
    }

    #[test]
    fn size_splits_where_asked() {
        let pts = knee_data();
        let t = two_segment(&pts, Breakpoint::Size(65536)).unwrap();
        assert_eq!(t.breakpoint_bytes, 65536);
        assert!(rel(t.below.r_inf_MBps, 1000.0) < 1e-9);
        assert!(rel(t.above.t0_ns, 40000.0) < 1e-9);

        let t = two_segment(&pts, Breakpoint::Size(4096)).unwrap();
        assert_eq!(t.breakpoint_bytes, 4096);
        assert_eq!(t.below.max_size_bytes, 2048);
        assert_eq!((t.below.points, t.above.points), (13, 12));

        // A size between samples: breakpoint is the smallest size above it.
        let t = two_segment(&pts, Breakpoint::Size(5000)).unwrap();
        assert_eq!(t.breakpoint_bytes, 8192);
        assert_eq!(t.below.max_size_bytes, 4096);

        // Each side needs two distinct sizes.
        assert!(two_segment(&pts, Breakpoint::Size(0)).is_none());
        assert!(two_segment(&pts, Breakpoint::Size(1)).is_none()); // below: {0}
        assert!(two_segment(&pts, Breakpoint::Size(2)).is_some()); // below: {0, 1}
        assert!(two_segment(&pts, Breakpoint::Size(8 << 20)).is_none());
        assert!(two_segment(&pts, Breakpoint::Size(u64::MAX)).is_none());
        assert!(two_segment(&pts, Breakpoint::None).is_none());
    }

    #[test]
    fn mild_noise_stays_close() {
        // ±2% noise, three repeats per size, sizes perturbed by a few bytes.
        let mut r = Lcg(42);
        let mut pts = Vec::new();
        for n in sweep() {
            for rep in 0..3u64 {
                let n = if n >= 64 { n + rep * 8 } else { n };
                let t = 5000.0 + n as f64 / 1.2;
                pts.push((n, t * (1.0 + 0.02 * r.next())));
            }
        }
        shuffle(&mut pts, 9);
        let f = hockney(&pts).unwrap();
        assert!(rel(f.t0_ns, 5000.0) < 0.05, "{f:?}");
        assert!(rel(f.r_inf_MBps, 1200.0) < 0.05, "{f:?}");
        assert!(rel(f.n_half_bytes, 6000.0) < 0.10, "{f:?}");
        assert!(f.max_rel_err < 0.05 && f.r2 > 0.99, "{f:?}");

        // The knee, with the same noise, is still found and both sides close.
        let mut r = Lcg(5);
        let pts: Vec<(u64, f64)> = knee_data()
            .into_iter()
            .map(|(n, t)| (n, t * (1.0 + 0.02 * r.next())))
            .collect();
        let t = two_segment(&pts, Breakpoint::Auto).unwrap();
        assert_eq!(t.breakpoint_bytes, 65536);
        assert!(rel(t.below.t0_ns, 2000.0) < 0.05, "{t:?}");
        assert!(rel(t.below.r_inf_MBps, 1000.0) < 0.05, "{t:?}");
        assert!(rel(t.above.t0_ns, 40000.0) < 0.05, "{t:?}");
        assert!(rel(t.above.r_inf_MBps, 4000.0) < 0.05, "{t:?}");
    }

    #[test]
    fn describes_for_people() {
        let f = hockney(&model(5000.0, 1200.0, &sweep())).unwrap();
        assert_eq!(
            describe(&f),
            "t(n) = 5.00 µs + n / 1200.0 MB/s  (n½ = 5.9 KiB; 25 points, 0 B..8 MiB, R² 1.0000, worst 0.0%)"
        );
        let f = hockney(&model(850.0, 12000.0, &[64, 100, 1 << 20])).unwrap();
        let s = describe(&f);
        assert!(
            s.starts_with("t(n) = 850 ns + n / 12000.0 MB/s  (n½ = 10 KiB; 3 points, 64 B..1 MiB"),
            "{s}"
        );
        let f = hockney(&model(123_456.0, 1200.0, &[1000, 1 << 30])).unwrap();
        assert!(describe(&f).contains("123.5 µs") && describe(&f).contains("1000 B..1 GiB"));
        assert_eq!(format_bytes(-1536.0), "-1.5 KiB");
    }

    #[test]
    fn serializes_with_the_given_field_names() {
        let t = two_segment(&knee_data(), Breakpoint::Size(65536)).unwrap();
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(v["breakpoint_bytes"], 65536);
        for k in [
            "t0_ns",
            "r_inf_MBps",
            "n_half_bytes",
            "r2",
            "max_rel_err",
            "points",
            "min_size_bytes",
            "max_size_bytes",
        ] {
            assert!(
                v["below"].get(k).is_some() && v["above"].get(k).is_some(),
                "{k}"
            );
        }
    }

    #[test]
    fn breakpoints_are_named_as_they_parse_back() {
        for b in [
            Breakpoint::Auto,
            Breakpoint::None,
            Breakpoint::Size(64 << 10),
        ] {
            assert_eq!(b.name().parse::<Breakpoint>(), Ok(b), "{}", b.name());
        }
        assert_eq!(Breakpoint::Size(64 << 10).name(), "64k");
    }
}
