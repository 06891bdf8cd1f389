//! From saved runs to figures, one function per experiment. Runs of the same
//! experiment share their line plots (several transports or machines
//! overlaid); round-trip matrices get one heat map per configuration, and a
//! mesh run three (latency p50 and p99, bandwidth between every two ranks).

use super::figure::{Axis, Bars, Figure, Heatmap, Kind, Lines, Plot, Role, Scale, Series};
use crate::measure::fit::Fit;
use crate::measure::stats::Summary;
use crate::options::DataDirection;
use crate::result::curve::CurvePoint;
use crate::result::flowgraph::{FlowExtra, FlowPoint};
use crate::result::load::{ClosedPoint, LoadPoint, OpenPoint};
use crate::result::saved::SavedRun;
use crate::result::saved::{AnyRun, written};
use crate::result::saved::{Saved, StreamJob};
use crate::result::{DeviceTime, Point};
use crate::transport::{BufferMode, CompletionMode, Pattern};
use crate::units::Chunk;
use crate::units::si;

/// Every figure the runs give, in the order the report shows them.
pub fn all(runs: &[SavedRun]) -> Vec<Figure> {
    let of = |e: &str| -> Vec<&SavedRun> { runs.iter().filter(|r| r.experiment == e).collect() };
    let mut out = Vec::new();
    out.extend(roundtrip(&of("roundtrip")));
    out.extend(curve(&of("curve")));
    out.extend(stream(&of("stream")));
    out.extend(load(&of("load")));
    out.extend(flowgraph(&of("flowgraph")));
    out.extend(mesh(&of("mesh")));
    out.extend(pairs(&of("pairs")));
    out
}

/// The figures that have something to draw: a line plot with no point is
/// left out.
fn with_points(mut figs: Vec<Figure>) -> Vec<Figure> {
    figs.retain(|f| match &f.plot {
        Plot::Lines(l) => l.series.iter().any(|s| !s.points.is_empty()),
        Plot::Heatmap(_) => true,
        Plot::Bars(b) => b.parts.iter().any(|(_, v)| v.iter().any(Option::is_some)),
    });
    figs
}

/// `curve --pairs` runs: the aggregate and each pair's MB/s, and the
/// aggregate message rate, over message size (osu_mbw_mr's two columns).
pub fn pairs(runs: &[&SavedRun]) -> Vec<Figure> {
    if runs.is_empty() {
        return Vec::new();
    }
    let (mut bw, mut rate) = (Vec::new(), Vec::new());
    for run in runs {
        let AnyRun::Pairs(typed) = &run.run else {
            continue;
        };
        let k = typed.extra.pairs;
        let agg = format!("{k} pairs, aggregate");
        let (mut b, mut r): (Vec<Series>, Vec<Series>) = (Vec::new(), Vec::new());
        for p in &typed.points {
            let x = p.size_bytes as f64;
            let i = series_index(&mut b, &agg, Role::Measured);
            b[i].points.push((x, p.aggregate_mbps));
            for q in &p.pairs {
                let name = format!("pair {} → {}", q.from, q.to);
                let i = series_index(&mut b, &name, Role::Measured);
                b[i].points.push((x, q.bandwidth_mbps));
            }
            let i = series_index(&mut r, &agg, Role::Measured);
            r[i].points.push((x, p.messages_per_s));
        }
        bw.push((*run, b));
        rate.push((*run, r));
    }
    let size = || Axis::new("message size (bytes)", true, Scale::Bytes);
    let out = vec![
        Figure {
            kind: Kind::Pairs,
            id: "pairs-bandwidth".into(),
            title: "Pairs streaming at once: bandwidth vs message size".into(),
            caption: "MB/s (10^6 bytes/s) of every pair together (their bytes over the longest pair's time, as osu_mbw_mr) and of each pair alone, windows of messages in flight.".into(),
            lead: Vec::new(),
            plot: Plot::Lines(Lines {
                x: size(),
                y: Axis::new("MB/s", true, Scale::Number),
                series: name_runs(bw),
            }),
        },
        Figure {
            kind: Kind::Pairs,
            id: "pairs-rate".into(),
            title: "Pairs streaming at once: message rate vs message size".into(),
            caption: "Messages per second of every pair together, over the longest pair's time.".into(),
            lead: Vec::new(),
            plot: Plot::Lines(Lines {
                x: size(),
                y: Axis::new("messages/s", true, Scale::Number),
                series: name_runs(rate),
            }),
        },
    ];
    with_points(out)
}

/// Adds the run's label to series names that several runs share, so
/// overlaid runs stay apart in the legend.
fn name_runs(per_run: Vec<(&SavedRun, Vec<Series>)>) -> Vec<Series> {
    let mut names: Vec<(String, usize)> = Vec::new();
    for (_, ss) in &per_run {
        let mut seen: Vec<&str> = Vec::new();
        for s in ss {
            if seen.contains(&s.name.as_str()) {
                continue;
            }
            seen.push(&s.name);
            match names.iter_mut().find(|(n, _)| *n == s.name) {
                Some((_, c)) => *c += 1,
                None => names.push((s.name.clone(), 1)),
            }
        }
    }
    let mut out = Vec::new();
    for (run, ss) in per_run {
        let base = out.len();
        for mut s in ss {
            if names.iter().any(|(n, c)| *n == s.name && *c > 1) {
                s.name = format!("{} · {}", s.name, run.label);
            }
            s.of = s.of.map(|i| i + base);
            out.push(s);
        }
    }
    out
}

/// A ceiling line per path with a bandwidth limit, across the sizes
/// measured on it (`spans`: each point's path and size): dashed grey, so a
/// curve reads against what its link allows.
fn ceilings<'a>(
    limits: &[crate::result::limit::PathLimit],
    spans: impl Iterator<Item = (&'a str, f64)>,
) -> Vec<Series> {
    let spans: Vec<(&str, f64)> = spans.collect();
    let mut out: Vec<Series> = Vec::new();
    for l in limits {
        let Some(lim) = l
            .limit
            .as_ref()
            .filter(|x| x.unit == "MB/s" && x.value > 0.0)
        else {
            continue;
        };
        // Sizes above zero: the axis is logarithmic.
        let xs = spans
            .iter()
            .filter(|(s, x)| *s == l.spec && *x > 0.0)
            .map(|(_, x)| *x);
        let (lo, hi) = xs.fold((f64::INFINITY, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
        if !lo.is_finite() {
            continue;
        }
        let name = format!(
            "limit: {} ({})",
            lim.what,
            crate::result::limit::rate(lim.value)
        );
        if out.iter().any(|s| s.name == name) {
            continue;
        }
        out.push(Series::new(
            name,
            Role::Bound,
            vec![(lo, lim.value), (hi, lim.value)],
        ));
    }
    out
}

/// Index of the series called `name`, created empty if new.
fn series_index(list: &mut Vec<Series>, name: &str, role: Role) -> usize {
    match list.iter().position(|s| s.name == name && s.role == role) {
        Some(i) => i,
        None => {
            list.push(Series::new(name, role, Vec::new()));
            list.len() - 1
        }
    }
}

pub fn roundtrip(runs: &[&SavedRun]) -> Vec<Figure> {
    let mut out: Vec<Figure> = Vec::new();
    for run in runs {
        let AnyRun::Roundtrip(typed) = &run.run else {
            continue;
        };
        // Points by configuration, in run order, then by cell: a lookup
        // each, so a run of tens of thousands of points stays linear.
        let mut configs: Vec<(String, Vec<&Point>)> = Vec::new();
        let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for p in &typed.points {
            let c = point_config(p);
            let i = *at.entry(c.clone()).or_insert_with(|| {
                configs.push((c, Vec::new()));
                configs.len() - 1
            });
            configs[i].1.push(p);
        }
        for (c, mine) in configs {
            let axis = |k: fn(&Point) -> u64| {
                let mut v: Vec<f64> = mine.iter().map(|p| k(p) as f64).collect();
                v.sort_by(f64::total_cmp);
                v.dedup();
                v
            };
            let (xs, ys) = (axis(|p| p.in_bytes), axis(|p| p.out_bytes));
            let mut cell: std::collections::HashMap<(u64, u64), &Point> =
                std::collections::HashMap::new();
            for p in &mine {
                cell.entry((p.in_bytes, p.out_bytes)).or_insert(p);
            }
            let matrix = |stat: fn(&Summary) -> f64| -> Vec<Vec<Option<f64>>> {
                ys.iter()
                    .map(|&y| {
                        xs.iter()
                            .map(|&x| {
                                cell.get(&(x as u64, y as u64))
                                    .map(|p| stat(&p.summary) / 1000.0)
                            })
                            .collect()
                    })
                    .collect()
            };
            let n = out.iter().filter(|f| f.kind == Kind::RoundTrip).count() + 1;
            let budget = latency_budget(&mine, n, &c, &run.label);
            out.push(Figure {
                kind: Kind::RoundTrip,
                id: format!("roundtrip-{n}"),
                title: format!("Round trip, {c}"),
                caption: format!(
                    "Mean round-trip time in µs for each request (in) and reply (out) size, as the Vollo tables; darker is slower. The table gives mean (p99). Run {}.",
                    run.label
                ),
                lead: Vec::new(),
                plot: Plot::Heatmap(Heatmap {
                    x: Axis::new("in (bytes)", true, Scale::Bytes),
                    y: Axis::new("out (bytes)", true, Scale::Bytes),
                    cells: matrix(|s| s.mean_ns),
                    second: Some(("p99".into(), matrix(|s| s.p99_ns as f64))),
                    ratio: false,
                    labels: None,
                    higher_is_better: false,
                    xs,
                    ys,
                    value: "mean round trip (µs)".into(),
                }),
            });
            out.extend(budget);
        }
    }
    out
}

/// The latency budget of one round-trip configuration (`c`, the `n`th
/// matrix), when its points carry `device_time` (a plugin that reports the
/// device's own time): per (in, out) cell, the device's p50 at the bottom
/// and the host's p50 (round trip minus device time) stacked on it. None
/// when no point has the split.
fn latency_budget(mine: &[&Point], n: usize, c: &str, label: &str) -> Option<Figure> {
    let mut cells: Vec<(&Point, &DeviceTime)> = mine
        .iter()
        .filter_map(|p| Some((*p, p.device_time.as_ref()?)))
        .collect();
    cells.sort_by_key(|(p, _)| (p.in_bytes, p.out_bytes));
    let bytes = Axis::new("bytes", true, Scale::Bytes);
    let cells = cells
        .into_iter()
        .map(|(p, d)| {
            (
                format!(
                    "{} → {}",
                    bytes.format(p.in_bytes as f64),
                    bytes.format(p.out_bytes as f64)
                ),
                d,
            )
        })
        .collect();
    budget_figure(
        format!("roundtrip-{n}-budget"),
        format!("Latency budget, {c}"),
        format!(
            "Where the round trip goes, in µs, per request (in) and reply (out) size: the device's own time for each round trip as the plugin reports it (p50) at the bottom, the host's share (the round trip minus the device's time: host software, driver, bus; p50) on top. The medians of the two parts are taken apart, so their sum is near, not exactly, the round trip's p50. The table adds each part's p99. Run {label}."
        ),
        "in → out (bytes)",
        cells,
    )
}

/// A latency budget as stacked bars, one per category (a cell, a size, a
/// size under a load): the device's p50 at the bottom, the host's on top,
/// each part's p99 in the table. None without a category.
fn budget_figure(
    id: String,
    title: String,
    caption: String,
    x_label: &str,
    cells: Vec<(String, &DeviceTime)>,
) -> Option<Figure> {
    if cells.is_empty() {
        return None;
    }
    let part = |side: fn(&DeviceTime) -> &Summary, stat: fn(&Summary) -> u64| -> Vec<Option<f64>> {
        cells
            .iter()
            .map(|(_, d)| Some(stat(side(d)) as f64 / 1000.0))
            .collect()
    };
    let parts = vec![
        ("device".into(), part(|d| &d.device, |s| s.p50_ns)),
        ("host".into(), part(|d| &d.host, |s| s.p50_ns)),
    ];
    let extra = vec![
        ("device p99".into(), part(|d| &d.device, |s| s.p99_ns)),
        ("host p99".into(), part(|d| &d.host, |s| s.p99_ns)),
    ];
    Some(Figure {
        kind: Kind::LatencyBudget,
        id,
        title,
        caption,
        lead: Vec::new(),
        plot: Plot::Bars(Bars {
            x_label: x_label.into(),
            categories: cells.into_iter().map(|(c, _)| c).collect(),
            y: Axis::new("round trip p50 (µs)", false, Scale::Number),
            parts,
            extra,
        }),
    })
}

/// The latency budget of each curve whose points carry `device_time`: per
/// message size, the device's share of the round trip and the host's.
fn curve_budgets(run: &SavedRun, points: &[CurvePoint], first: usize) -> Vec<Figure> {
    let mut names: Vec<String> = Vec::new();
    for p in points.iter().filter(|p| p.device_time.is_some()) {
        let name = point_curve(p);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let bytes = Axis::new("bytes", true, Scale::Bytes);
    names
        .into_iter()
        .enumerate()
        .filter_map(|(i, name)| {
            let cells = points
                .iter()
                .filter(|p| point_curve(p) == name)
                .filter_map(|p| Some((bytes.format(p.size_bytes as f64), p.device_time.as_ref()?)))
                .collect();
            budget_figure(
                format!("curve-budget-{}", first + i + 1),
                format!("Latency budget, {name}"),
                format!(
                    "Where each round trip of the curve goes, in µs, per message size: the device's own time as the plugin reports it (p50) at the bottom, the host's share (the round trip minus the device's time; p50) on top; the table adds each part's p99. Run {}.",
                    run.label
                ),
                "message size (bytes)",
                cells,
            )
        })
        .collect()
}

/// The latency budget of each closed-loop load series (transport, load,
/// direction) whose cells carry `device_time`: per transfer size, the
/// device's share of the round trip and the host's.
fn load_budgets(run: &SavedRun, points: &[LoadPoint], first: usize) -> Vec<Figure> {
    let closed: Vec<&ClosedPoint> = points
        .iter()
        .filter_map(|p| match p {
            LoadPoint::Closed(c) if c.device_time.is_some() => Some(c),
            _ => None,
        })
        .collect();
    let mut names: Vec<String> = Vec::new();
    for p in &closed {
        let name = format!("{} {}", p.spec, closed_name(p));
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let bytes = Axis::new("bytes", true, Scale::Bytes);
    names
        .into_iter()
        .enumerate()
        .filter_map(|(i, name)| {
            let cells = closed
                .iter()
                .filter(|p| format!("{} {}", p.spec, closed_name(p)) == name)
                .filter_map(|p| Some((bytes.format(p.size_bytes as f64), p.device_time.as_ref()?)))
                .collect();
            budget_figure(
                format!("load-budget-{}", first + i + 1),
                format!("Latency budget under load, {name}"),
                format!(
                    "Where each request's round trip goes, in µs, per transfer size, every link's requests together: the device's own time as the plugin reports it (p50) at the bottom, the host's share (the round trip minus the device's time; p50) on top; the table adds each part's p99. Run {}.",
                    run.label
                ),
                "transfer size (bytes)",
                cells,
            )
        })
        .collect()
}

/// "tcp user/block": a round-trip point's configuration.
pub fn point_config(p: &Point) -> String {
    format!(
        "{} {}/{}",
        p.spec,
        written(&p.buffers),
        written(&p.completion)
    )
}

/// One curve's name, from its point or fit: spec, mode, packet strategy,
/// and buffers/completion.
fn typed_curve_name(
    spec: &str,
    mode: Pattern,
    direction: Option<DataDirection>,
    chunk: Chunk,
    buffers: BufferMode,
    completion: CompletionMode,
) -> String {
    let mut s = format!("{spec} {}", written(&mode));
    // A stream the responder sent (device to host) is a curve of its own.
    if direction == Some(DataDirection::Read) {
        s.push_str(" read");
    }
    let chunk = written(&chunk);
    if chunk != "whole" {
        s.push_str(&format!(" chunk {chunk}"));
    }
    s.push_str(&format!(" {}/{}", written(&buffers), written(&completion)));
    s
}

/// A curve point's curve, named.
pub fn point_curve(p: &CurvePoint) -> String {
    typed_curve_name(
        &p.spec,
        p.mode,
        p.direction,
        p.chunk,
        p.buffers,
        p.completion,
    )
}

/// Hockney's t(n) = t0 + n/r∞ over [lo, hi], sampled at the measured sizes.
fn model(fit: &Fit, sizes: &[f64]) -> Vec<(f64, f64)> {
    let (t0, r) = (fit.t0_ns, fit.r_inf_MBps);
    let lo = fit.min_size_bytes as f64;
    let hi = fit.max_size_bytes as f64;
    sizes
        .iter()
        .filter(|&&n| n >= lo && n <= hi && r > 0.0)
        .map(|&n| (n, t0 / 1000.0 + n / r))
        .collect()
}

pub fn curve(runs: &[&SavedRun]) -> Vec<Figure> {
    if runs.is_empty() {
        return Vec::new();
    }
    let mut lat_runs = Vec::new();
    let mut bw_runs = Vec::new();
    let mut budgets = Vec::new();
    for run in runs {
        let AnyRun::Curve(typed) = &run.run else {
            continue;
        };
        let mut lat: Vec<Series> = Vec::new();
        let mut bw: Vec<Series> = Vec::new();
        for p in &typed.points {
            let name = point_curve(p);
            let x = p.size_bytes as f64;
            let i = series_index(&mut lat, &name, Role::Measured);
            lat[i].points.push((x, p.oneway.p50_ns as f64 / 1000.0));
            let i = series_index(&mut bw, &name, Role::Measured);
            bw[i].points.push((x, p.bandwidth_mbps));
        }
        // The fitted model, dashed in its curve's colour.
        for f in &typed.extra.fits {
            let name = typed_curve_name(
                &f.spec,
                f.mode,
                f.direction,
                f.chunk,
                f.buffers,
                f.completion,
            );
            let Some(of) = lat.iter().position(|s| s.name == name) else {
                continue;
            };
            let sizes: Vec<f64> = lat[of].points.iter().map(|p| p.0).collect();
            let segs: Vec<&Fit> = match &f.two_segment {
                Some(t) => vec![&t.below, &t.above],
                None => f.fit.iter().collect(),
            };
            for (k, seg) in segs.iter().enumerate() {
                let pts = model(seg, &sizes);
                if pts.len() < 2 {
                    continue;
                }
                let label = if segs.len() > 1 {
                    format!("{name} model ({})", ["below", "above"][k])
                } else {
                    format!("{name} model")
                };
                let bw_pts = pts.iter().map(|&(n, t)| (n, n / t)).collect();
                let bw_of = bw.iter().position(|s| s.name == name);
                let mut m = Series::new(label.clone(), Role::Model, pts);
                m.of = Some(of);
                lat.push(m);
                let mut m = Series::new(label, Role::Model, bw_pts);
                m.of = bw_of;
                bw.push(m);
            }
        }
        let spans = typed
            .points
            .iter()
            .map(|p| (p.spec.as_str(), p.size_bytes as f64));
        bw.extend(ceilings(&typed.limits, spans));
        lat_runs.push((*run, lat));
        bw_runs.push((*run, bw));
        budgets.extend(curve_budgets(run, &typed.points, budgets.len()));
    }
    let labels = runs
        .iter()
        .map(|r| r.label.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let mut out = vec![
        Figure {
            kind: Kind::CurveLatency,
            id: "curve-latency".into(),
            title: "One-way latency vs message size".into(),
            caption: format!(
                "Median one-way time (half a round trip in pingpong) per message size, log-log; dashed: Hockney's model t0 + n/r∞ fitted to each curve. Runs: {labels}."
            ),
            lead: Vec::new(),
            plot: Plot::Lines(Lines {
                x: Axis::new("message size (bytes)", true, Scale::Bytes),
                y: Axis::new("one-way latency (µs)", true, Scale::Number),
                series: name_runs(lat_runs),
            }),
        },
        Figure {
            kind: Kind::CurveBandwidth,
            id: "curve-bandwidth".into(),
            title: "Bandwidth vs message size".into(),
            caption: format!(
                "Decimal MB/s (10^6 bytes/s) from the median one-way time; dashed: the fitted model. Runs: {labels}."
            ),
            lead: Vec::new(),
            plot: Plot::Lines(Lines {
                x: Axis::new("message size (bytes)", true, Scale::Bytes),
                y: Axis::new("bandwidth (MB/s)", true, Scale::Number),
                series: name_runs(bw_runs),
            }),
        },
    ];
    out.extend(budgets);
    out
}

/// Which way a fio job moves data: "read", "write", "trim", "trimwrite"
/// or "rw".
fn stream_direction(rw: &str) -> &'static str {
    match rw {
        "read" | "randread" => "read",
        "write" | "randwrite" => "write",
        "trim" | "randtrim" => "trim",
        "trimwrite" | "randtrimwrite" => "trimwrite",
        _ => "rw",
    }
}

/// A saved stream entry's name: job, rw, engine and completion (a merged
/// group's jobs have no one rw, engine or completion: blank).
pub fn stream_job_name(j: &StreamJob) -> String {
    match j.job() {
        Some(x) => format!(
            "{} {} {}/{}",
            x.jobname,
            written(&x.rw),
            written(&x.ioengine),
            written(&x.completion)
        ),
        None => format!("{}  /", j.jobname()),
    }
}

pub fn stream(runs: &[&SavedRun]) -> Vec<Figure> {
    if runs.is_empty() {
        return Vec::new();
    }
    let mut per_run = Vec::new();
    for run in runs {
        let AnyRun::Stream(typed) = &run.run else {
            continue;
        };
        // Clones of one job run side by side: their bandwidth adds up.
        let mut ss: Vec<Series> = Vec::new();
        for j in &typed.jobs {
            let dir = stream_direction(&j.job().map_or(String::new(), |x| written(&x.rw)));
            let name = stream_job_name(j);
            let Some(bs) = j.block_size().map(|b| b as f64) else {
                continue;
            };
            let bw = j.dirs().iter().map(|(_, d)| d.bw_bytes as f64).sum::<f64>() / 1e6;
            let i = series_index(&mut ss, &name, Role::Measured);
            ss[i].key = Some(dir.into());
            match ss[i].points.iter_mut().find(|p| p.0 == bs) {
                Some(p) => p.1 += bw,
                None => ss[i].points.push((bs, bw)),
            }
        }
        for s in &mut ss {
            s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let spans = typed.jobs.iter().filter_map(|j| {
            let job = j.job()?;
            Some((job.filename.as_str(), j.block_size()? as f64))
        });
        ss.extend(ceilings(&typed.limits, spans));
        per_run.push((*run, ss));
    }
    vec![Figure {
        kind: Kind::StreamBandwidth,
        id: "stream-bandwidth".into(),
        title: "Stream bandwidth vs block size".into(),
        caption: "Bandwidth of each fio-style job (its clones added up) in decimal MB/s per block size, one series per job, engine and completion mode.".into(),
        lead: Vec::new(),
        plot: Plot::Lines(Lines {
            x: Axis::new("block size (bytes)", true, Scale::Bytes),
            y: Axis::new("bandwidth (MB/s)", true, Scale::Number),
            series: name_runs(per_run),
        }),
    }]
}

/// A closed-loop load cell's series: transport, load and direction.
pub fn closed_name(p: &ClosedPoint) -> String {
    load_name(&p.transport, &p.load, p.direction)
}

/// An open-loop point's sweep, named as a closed-loop series is.
pub fn open_name(p: &OpenPoint) -> String {
    load_name(&p.transport, &p.load, p.direction)
}

fn load_name(transport: &str, load: &str, direction: DataDirection) -> String {
    let key = format!("{load} {}", written(&direction));
    match transport {
        "" => key,
        t => format!("{t} {key}"),
    }
}

pub fn load(runs: &[&SavedRun]) -> Vec<Figure> {
    if runs.is_empty() {
        return Vec::new();
    }
    let mut rate = Vec::new();
    let mut kb = Vec::new();
    let mut lat = Vec::new();
    let mut budgets = Vec::new();
    for run in runs {
        let AnyRun::Load(typed) = &run.run else {
            continue;
        };
        let (mut r, mut k, mut l) = (Vec::new(), Vec::new(), Vec::new());
        for p in &typed.points {
            match p {
                LoadPoint::Closed(p) => {
                    let x = p.size_bytes as f64;
                    let key = format!("{} {}", p.load, written(&p.direction));
                    let name = closed_name(p);
                    let i = series_index(&mut r, &name, Role::Measured);
                    r[i].key = Some(key.clone());
                    r[i].points.push((x, p.req_per_s));
                    let i = series_index(&mut k, &name, Role::Measured);
                    k[i].key = Some(key);
                    k[i].points.push((x, p.kb_per_s));
                }
                LoadPoint::Open(p) => {
                    let stats: [(&str, u64); 3] = [
                        ("p50", p.latency.p50_ns),
                        ("p99", p.latency.p99_ns),
                        ("p999", p.latency.p999_ns),
                    ];
                    for (stat, ns) in stats {
                        let i = series_index(&mut l, stat, Role::Measured);
                        l[i].points.push((p.offered_per_s, ns as f64 / 1000.0));
                    }
                }
            }
        }
        rate.push((*run, r));
        kb.push((*run, k));
        lat.push((*run, l));
        budgets.extend(load_budgets(run, &typed.points, budgets.len()));
    }
    let size = || Axis::new("transfer size (bytes)", true, Scale::Bytes);
    let out = vec![
        Figure {
            kind: Kind::LoadRate,
            id: "load-rate".into(),
            title: "Request rate vs transfer size under load".into(),
            caption: "Completed requests per second, closed loop, one series per load mode and direction, as rk11perf's req/s columns.".into(),
            lead: Vec::new(),
            plot: Plot::Lines(Lines {
                x: size(),
                y: Axis::new("requests/s", true, Scale::Number),
                series: name_runs(rate),
            }),
        },
        Figure {
            kind: Kind::LoadKbps,
            id: "load-kbps".into(),
            title: "Throughput vs transfer size under load".into(),
            caption: "KB/s (1 KB = 1024 bytes, as rk11perf) = requests/s × size / 1024, one series per load mode and direction.".into(),
            lead: Vec::new(),
            plot: Plot::Lines(Lines {
                x: size(),
                y: Axis::new("KB/s", true, Scale::Number),
                series: name_runs(kb),
            }),
        },
        Figure {
            kind: Kind::LoadLatency,
            id: "load-latency".into(),
            title: "Open-loop latency vs offered rate".into(),
            caption: "Latency measured from each request's scheduled send time (no coordinated omission): where it turns up is the knee.".into(),
            lead: Vec::new(),
            plot: Plot::Lines(Lines {
                x: Axis::new("offered rate (requests/s)", true, Scale::Number),
                y: Axis::new("latency (µs)", true, Scale::Number),
                series: name_runs(lat),
            }),
        },
    ];
    let mut out = with_points(out);
    out.extend(budgets);
    out
}

/// What the kernel alone reached in each run, at its best buffer size and
/// at the flowgraph's own: the gap between the two is the buffer size's
/// cost, which no scheduler can win back.
fn kernel_rates(runs: &[(&SavedRun, &Saved<FlowPoint, FlowExtra>)]) -> String {
    runs.iter()
        .map(|(saved, r)| {
            let label = &saved.label;
            let x = &r.extra;
            let mut s = format!(
                " The kernel alone{}: {} samples/s at its best size ({})",
                if runs.len() > 1 {
                    format!(" ({label})")
                } else {
                    String::new()
                },
                si(x.kernel_only_sps),
                crate::units::format_size(x.kernel_only_buffer_bytes)
            );
            // 0: not measured, as in runs saved before this figure existed.
            let own = r.points.first().map_or(0, |p| p.buffer_bytes);
            if x.kernel_at_buffer_sps > 0.0 && own > 0 && own != x.kernel_only_buffer_bytes {
                s.push_str(&format!(
                    ", {} at the flowgraph's own {}",
                    si(x.kernel_at_buffer_sps),
                    crate::units::format_size(own)
                ));
            }
            s.push('.');
            s
        })
        .collect()
}

pub fn flowgraph(runs: &[&SavedRun]) -> Vec<Figure> {
    let typed: Vec<(&SavedRun, &Saved<FlowPoint, FlowExtra>)> = runs
        .iter()
        .filter_map(|r| match &r.run {
            AnyRun::Flowgraph(t) => Some((*r, t)),
            _ => None,
        })
        .collect();
    let mut cores: Vec<usize> = typed
        .iter()
        .flat_map(|(_, r)| r.points.iter().map(|p| p.cores))
        .collect();
    cores.sort_unstable();
    cores.dedup();
    let mut out = Vec::new();
    for n in cores {
        let mut per_run = Vec::new();
        for (run, t) in &typed {
            let mut ss: Vec<Series> = Vec::new();
            let mut bounds: Vec<Series> = Vec::new();
            for p in t.points.iter().filter(|p| p.cores == n) {
                let m = p.blocks as f64;
                let name = crate::flowgraph::edge::series(p.scheduler, p.edges);
                let i = series_index(&mut ss, &name, Role::Measured);
                ss[i].points.push((m, p.samples_per_s));
                for (b, name) in [
                    (p.ideal_dynamic_sps, "ideal dynamic (N/M)"),
                    (p.ideal_static_sps, "ideal static (1/⌈M/N⌉)"),
                ] {
                    let i = series_index(&mut bounds, name, Role::Bound);
                    if !bounds[i].points.iter().any(|q| q.0 == m) {
                        bounds[i].points.push((m, b));
                    }
                }
            }
            for s in ss.iter_mut().chain(bounds.iter_mut()) {
                s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
            // A scheduler on handoff edges wears its circular twin's colour.
            for i in 0..ss.len() {
                if let Some(base) = ss[i].name.strip_suffix("+handoff") {
                    ss[i].of = ss.iter().position(|t| t.name == base);
                }
            }
            ss.extend(bounds);
            per_run.push((*run, ss));
        }
        out.push(Figure {
            kind: Kind::Flowgraph { cores: n as u64 },
            id: format!("flowgraph-{n}-cores"),
            title: format!("Flowgraph throughput on {n} core{}", if n == 1 { "" } else { "s" }),
            caption: format!(
                "Samples/s through source → M saxpy → sink per scheduler (+handoff: on handed-off buffers rather than circular ones; dotted, in the colour of the same scheduler on circular buffers); dashed grey: the ideal bounds from the best single-kernel rate measured in the same run.{}",
                kernel_rates(&typed)
            ),
            lead: Vec::new(),
            plot: Plot::Lines(Lines {
                x: Axis::new("saxpy blocks (M)", false, Scale::Count),
                y: Axis::new("samples/s", true, Scale::Number),
                series: name_runs(per_run),
            }),
        });
    }
    out
}

/// Each mesh run's rank × rank matrices as heat maps.
pub fn mesh(runs: &[&SavedRun]) -> Vec<Figure> {
    runs.iter()
        .enumerate()
        .flat_map(|(i, r)| match &r.run {
            AnyRun::Mesh(m) => {
                super::mesh::mesh_run(&format!("mesh-{}", i + 1), &r.label, &m.into())
            }
            _ => Vec::new(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn run(extra: Value) -> SavedRun {
        let mut v = json!({
            "experiment": "flowgraph",
            "complete": true,
            "kernel_only_sps": 15e9,
            "kernel_only_buffer_bytes": 4096,
            "points": [{"scheduler": "seq", "cores": 1, "blocks": 1,
                        "samples_per_s": 12e9, "buffer_bytes": 16384}]
        });
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        crate::result::saved::sketch("a", v).unwrap()
    }

    #[test]
    fn the_caption_gives_the_kernel_at_its_best_size_and_the_flowgraphs() {
        let r = run(json!({"kernel_at_buffer_sps": 13e9}));
        let c = &flowgraph(&[&r])[0].caption;
        assert!(
            c.contains("15.0G samples/s at its best size (4k), 13.0G at the flowgraph's own 16k."),
            "{c}"
        );
        // A run saved before the second figure existed: the best size only.
        let old = run(json!({}));
        let c = &flowgraph(&[&old])[0].caption;
        assert!(c.ends_with("at its best size (4k)."), "{c}");
    }
}
