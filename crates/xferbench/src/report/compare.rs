//! `--compare NAME`: a published dataset beside the measurement. The
//! reference becomes dashed series on the line plots it belongs to (a ratio
//! heat map for round-trip matrices), and a table pairs each measured value
//! with the published one at the same size, matched by value.

use super::figure::{Figure, Heatmap, Kind, Plot, Role, Series};
use crate::reference::Dataset;
use crate::units::si;

/// A measured-vs-published table.
#[derive(Clone, Debug)]
pub struct Comparison {
    pub title: String,
    /// How to read it, or why it is empty.
    pub note: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

fn ratio(ours: f64, theirs: f64) -> String {
    if theirs > 0.0 && ours.is_finite() {
        format!("{:.2}×", ours / theirs)
    } else {
        "—".into()
    }
}

/// A published value as it was published (1.7, not 1.70), large ones with
/// an SI prefix.
fn published(v: f64) -> String {
    if v.abs() < 1e4 { format!("{v}") } else { si(v) }
}

/// Rows of `d` as (x, y) from two numeric columns, where `keep` accepts the row.
fn column_points(d: &Dataset, x: &str, y: &str, keep: impl Fn(usize) -> bool) -> Vec<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = (0..d.rows.len())
        .filter(|&r| keep(r))
        .filter_map(|r| Some((d.num(r, x)?, d.num(r, y)?)))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// Distinct values of a text column, in first-seen order.
fn distinct(d: &Dataset, col: &str) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in 0..d.rows.len() {
        if let Some(t) = d.text(r, col)
            && !v.iter().any(|x| x == t)
        {
            v.push(t.to_string());
        }
    }
    v
}

/// Adds `d` to the figures it belongs on and returns the comparison tables.
pub fn apply(figs: &mut Vec<Figure>, d: &Dataset) -> Vec<Comparison> {
    let out = match d.experiment {
        "roundtrip" => roundtrip(figs, d),
        "curve" => {
            overlay(
                figs,
                &Kind::CurveLatency,
                vec![Series::new(
                    d.name,
                    Role::Reference,
                    column_points(d, "size_bytes", "oneway_us", |_| true),
                )],
            );
            overlay(
                figs,
                &Kind::CurveBandwidth,
                vec![Series::new(
                    d.name,
                    Role::Reference,
                    column_points(d, "size_bytes", "bandwidth_MBps", |_| true),
                )],
            );
            tables(figs, d, &[Kind::CurveLatency, Kind::CurveBandwidth])
        }
        "stream" => {
            let mut refs = Vec::new();
            for dir in distinct(d, "direction") {
                for comp in distinct(d, "completion") {
                    let pts = column_points(d, "bs_bytes", "bw_MBps", |r| {
                        d.text(r, "direction") == Some(&dir)
                            && d.text(r, "completion") == Some(&comp)
                    });
                    if !pts.is_empty() {
                        refs.push(
                            Series::new(format!("{} {dir} {comp}", d.name), Role::Reference, pts)
                                .keyed(dir.clone()),
                        );
                    }
                }
            }
            overlay(figs, &Kind::StreamBandwidth, refs);
            tables(figs, d, &[Kind::StreamBandwidth])
        }
        "load" => {
            for (kind, col) in [(Kind::LoadRate, "req_per_s"), (Kind::LoadKbps, "kb_per_s")] {
                let mut refs = Vec::new();
                for dir in distinct(d, "direction") {
                    for load in distinct(d, "load") {
                        let pts = column_points(d, "size_bytes", col, |r| {
                            d.text(r, "direction") == Some(&dir) && d.text(r, "load") == Some(&load)
                        });
                        if !pts.is_empty() {
                            refs.push(
                                Series::new(
                                    format!("{} {load} {dir}", d.name),
                                    Role::Reference,
                                    pts,
                                )
                                .keyed(format!("{load} {dir}")),
                            );
                        }
                    }
                }
                overlay(figs, &kind, refs);
            }
            tables(figs, d, &[Kind::LoadRate, Kind::LoadKbps])
        }
        "flowgraph" => flowgraph(figs, d),
        _ => Vec::new(),
    };
    if out.is_empty() || out.iter().all(|c| c.rows.is_empty()) {
        return vec![Comparison {
            title: format!("Comparison with {}", d.name),
            note: format!(
                "{} holds {} results, at sizes none of these runs measured; run `xferbench {}` at the sizes `xferbench reference show {}` lists.",
                d.name, d.experiment, d.experiment, d.name
            ),
            header: Vec::new(),
            rows: Vec::new(),
        }];
    }
    out
}

fn overlay(figs: &mut [Figure], kind: &Kind, refs: Vec<Series>) {
    for f in figs.iter_mut().filter(|f| f.kind == *kind) {
        if let Plot::Lines(l) = &mut f.plot {
            l.series.extend(refs.iter().cloned());
        }
    }
}

/// One table per figure kind: each measured series beside each reference
/// series it pairs with, at the x values both have.
fn tables(figs: &[Figure], d: &Dataset, kinds: &[Kind]) -> Vec<Comparison> {
    let mut out = Vec::new();
    for f in figs.iter().filter(|f| kinds.contains(&f.kind)) {
        let Plot::Lines(l) = &f.plot else { continue };
        let mut rows = Vec::new();
        for s in l.series.iter().filter(|s| s.role == Role::Measured) {
            for r in l.series.iter().filter(|r| {
                r.role == Role::Reference && r.name.starts_with(d.name) && s.pairs_with(r)
            }) {
                for &(x, ours) in &s.points {
                    if let Some(&(_, theirs)) = r.points.iter().find(|p| p.0 == x) {
                        rows.push(vec![
                            s.name.clone(),
                            r.name.clone(),
                            l.x.format(x),
                            si(ours),
                            published(theirs),
                            ratio(ours, theirs),
                        ]);
                    }
                }
            }
        }
        out.push(Comparison {
            title: format!("{}: measured vs {}", f.title, d.name),
            note: format!(
                "{} ({}). Ratio = measured / published; {}",
                d.title,
                d.source,
                lower_is_better(&f.kind)
            ),
            header: vec![
                "measured".into(),
                "reference".into(),
                l.x.label.clone(),
                format!("measured {}", l.y.label),
                "published".into(),
                "ratio".into(),
            ],
            rows,
        });
    }
    out
}

fn lower_is_better(k: &Kind) -> &'static str {
    match k {
        Kind::CurveLatency | Kind::RoundTrip | Kind::LoadLatency | Kind::MeshLatency => {
            "below 1 is faster than the published figure."
        }
        _ => "above 1 is faster than the published figure.",
    }
}

/// Round-trip matrices: the published mean and p99 at each (in, out) both
/// measured, and a heat map of the ratio of means after each matrix.
fn roundtrip(figs: &mut Vec<Figure>, d: &Dataset) -> Vec<Comparison> {
    let find = |i: f64, o: f64| {
        (0..d.rows.len())
            .find(|&r| d.num(r, "in_bytes") == Some(i) && d.num(r, "out_bytes") == Some(o))
    };
    let mut rows = Vec::new();
    let mut k = 0;
    while k < figs.len() {
        let f = &figs[k];
        let (Kind::RoundTrip, Plot::Heatmap(h)) = (&f.kind, &f.plot) else {
            k += 1;
            continue;
        };
        let config = f.title.trim_start_matches("Round trip, ").to_string();
        let p99 = h.second.as_ref().map(|(_, m)| m);
        let mut cells = vec![vec![None; h.xs.len()]; h.ys.len()];
        for (j, &o) in h.ys.iter().enumerate() {
            for (i, &inb) in h.xs.iter().enumerate() {
                let (Some(ours), Some(r)) = (h.cells[j][i], find(inb, o)) else {
                    continue;
                };
                let theirs = d.num(r, "mean_us").unwrap_or(f64::NAN);
                let ours99 = p99.and_then(|m| m[j][i]).unwrap_or(f64::NAN);
                let theirs99 = d.num(r, "p99_us").unwrap_or(f64::NAN);
                cells[j][i] = Some(ours / theirs).filter(|v| v.is_finite());
                rows.push(vec![
                    config.clone(),
                    h.x.format(inb),
                    h.y.format(o),
                    si(ours),
                    d.text(r, "mean_us").unwrap_or("—").to_string(),
                    ratio(ours, theirs),
                    si(ours99),
                    d.text(r, "p99_us").unwrap_or("—").to_string(),
                    ratio(ours99, theirs99),
                ]);
            }
        }
        if cells.iter().flatten().any(Option::is_some) {
            let fig = Figure {
                kind: Kind::RoundTripRatio,
                id: format!("{}-vs-{}", f.id, d.name),
                title: format!("{config}: measured / {}", d.name),
                caption: format!(
                    "Measured mean round trip over the published one ({}, {}) at each size both have; below 1 is faster.",
                    d.title, d.source
                ),
                lead: Vec::new(),
                plot: Plot::Heatmap(Heatmap {
                    x: h.x.clone(),
                    y: h.y.clone(),
                    xs: h.xs.clone(),
                    ys: h.ys.clone(),
                    cells,
                    value: "ratio of means".into(),
                    second: None,
                    ratio: true,
                    labels: None,
                    higher_is_better: false,
                }),
            };
            figs.insert(k + 1, fig);
            k += 1;
        }
        k += 1;
    }
    vec![Comparison {
        title: format!("Round trip: measured vs {}", d.name),
        note: format!(
            "{} ({}). Times in µs; ratio = measured / published, below 1 is faster.",
            d.title, d.source
        ),
        header: [
            "configuration",
            "in",
            "out",
            "mean",
            "published mean",
            "ratio",
            "p99",
            "published p99",
            "ratio",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }]
}

/// Flowgraph: each published runtime/scheduler as a dashed series on the
/// figure with the same core count. The kernel dataset's multi-kernel rings
/// (named `multi-kernel-M<blocks>`) pair with our `ring` scheduler.
fn flowgraph(figs: &mut [Figure], d: &Dataset) -> Vec<Comparison> {
    for f in figs.iter_mut() {
        let Kind::Flowgraph { cores } = f.kind else {
            continue;
        };
        let n = cores as f64;
        let mut refs = Vec::new();
        if d.col("runtime").is_some() {
            for rt in distinct(d, "runtime") {
                for sch in distinct(d, "scheduler") {
                    let pts = column_points(d, "blocks", "samples_per_s", |r| {
                        d.text(r, "runtime") == Some(&rt)
                            && d.text(r, "scheduler") == Some(&sch)
                            && d.num(r, "cores") == Some(n)
                    });
                    if !pts.is_empty() {
                        refs.push(Series::new(
                            format!("{} {rt} {sch}", d.name),
                            Role::Reference,
                            pts,
                        ));
                    }
                }
            }
        } else {
            let mut pts: Vec<(f64, f64)> = (0..d.rows.len())
                .filter(|&r| d.num(r, "cores") == Some(n))
                .filter_map(|r| {
                    let m = d.text(r, "benchmark")?.strip_prefix("multi-kernel-M")?;
                    Some((m.parse().ok()?, d.num(r, "samples_per_s")?))
                })
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            if !pts.is_empty() {
                refs.push(
                    Series::new(format!("{} ring", d.name), Role::Reference, pts).keyed("ring"),
                );
            }
        }
        if let Plot::Lines(l) = &mut f.plot {
            l.series.extend(refs);
        }
    }
    let kinds: Vec<Kind> = figs
        .iter()
        .filter(|f| matches!(f.kind, Kind::Flowgraph { .. }))
        .map(|f| f.kind.clone())
        .collect();
    tables(figs, d, &kinds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_is_measured_over_published() {
        assert_eq!(ratio(1.0, 2.0), "0.50×");
        assert_eq!(ratio(1.0, 0.0), "—");
        assert_eq!(published(1.7), "1.7");
        assert_eq!(published(4.30979), "4.30979");
        assert_eq!(published(588_770_000.0), "589M");
    }
}
