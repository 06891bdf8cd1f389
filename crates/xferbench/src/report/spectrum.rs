//! Latency as a distribution: every point that keeps its samples'
//! histogram (a `histogram` field: HdrHistogram V2 + deflate, base64) drawn
//! as a percentile spectrum, HdrHistogram's classic plot. The x axis is in
//! nines (0%, 90%, 99%, 99.9%…: each step ten times rarer), so the tail gets
//! as much room as the body; y is the latency that fraction of the samples
//! stayed under.
//!
//! Histograms are those of a run's points (`AnyRun::views`): a round
//! trip's, curve's or load's point, or one direction of a stream job. A
//! point without one (a run saved before histograms were kept) gives no
//! figure; a histogram that does not decode is left out with a warning.
//!
//! One run: a figure per configuration, a series per point (at most
//! `MAX_SERIES`, spread over the sizes). Runs of one experiment whose points
//! match (same configuration fields, same sizes): a figure per shared point
//! (at most `MAX_SERIES` per configuration), a series per run, the first run
//! dashed as the baseline the others are read against.

use super::figure::{Axis, Figure, Kind, Lines, Plot, Role, Scale, Series, nines, spans_decade};
use super::figures::{closed_name, open_name, point_config, point_curve, stream_job_name};
use crate::measure::distribution::{Distribution, quantile};
use crate::result::points::{Config, Of, PointView, Sizes};
use crate::result::saved::SavedRun;
use crate::units::format_size;
use crate::units::si;
use hdrhistogram::Histogram;

/// Series on one plot, and plots per configuration, at most: a curve's 24
/// sizes would be a tangle.
pub const MAX_SERIES: usize = 6;

/// About how many quantiles a spectrum is sampled at.
const SAMPLES: f64 = 150.0;

/// How to read a spectrum, at the head of every spectrum's caption.
const READING: &str = "Each point: the latency that fraction of the samples stayed under, on a nines axis (90%, 99%, 99.9%: each step ten times rarer); the right end is the tail, drawn as far as a point's n samples reach (1 − 1/n).";

/// One histogram found in a run, with what names it. The histogram stays
/// encoded (a few hundred bytes) until a figure draws it: decoded, one is
/// a quarter of a megabyte, and a report of tens of thousands of points
/// draws only a few of them.
struct Found<'a> {
    /// The configuration (and a stream job's direction), to match runs
    /// by, and its name.
    key: Key<'a>,
    config: String,
    /// The point's sizes (or offered rate), to match runs by, and its name.
    sizes: Sizes,
    point: String,
    /// Where the point sorts within its configuration: its sizes.
    order: Vec<f64>,
    /// The encoded histograms of the entries that share this point (a
    /// stream job's clones), each checked to decode.
    hists: Vec<&'a str>,
    /// Recorded ns per plotted ns: a curve point records whole exchanges
    /// and is plotted one way (over 2 in pingpong, the window in stream).
    divisor: f64,
}

/// A configuration and, for a stream job, the direction: what a spectrum
/// figure is drawn for.
type Key<'a> = (Config<'a>, Option<&'static str>);

impl Found<'_> {
    /// The point's histogram: its entries' decoded and added (each was
    /// decoded once already when found, so none fails here; one that did
    /// would be left out).
    fn hist(&self) -> Histogram<u64> {
        let mut all: Option<Histogram<u64>> = None;
        for h in self
            .hists
            .iter()
            .filter_map(|t| Distribution::decode(t).ok())
        {
            match &mut all {
                None => all = Some(h),
                Some(a) => {
                    let _ = a.add(&h);
                }
            }
        }
        all.unwrap_or_else(|| Histogram::new(3).expect("static bounds"))
    }
}

/// Quantile `q`'s position on the nines axis and its latency in µs, over
/// `divisor`.
fn at(h: &Histogram<u64>, x: f64, divisor: f64) -> (f64, f64) {
    let q = 1.0 - 10f64.powf(-x);
    let ns = quantile(h, q, h.min(), h.max()) as f64;
    (x, ns / 1e3 / divisor)
}

/// The spectrum of `h` in µs (its ns over `divisor`): about `SAMPLES`
/// quantiles evenly spaced on the nines axis from 0% (the minimum) to
/// 1 − 1/n, the last the n samples support, with every whole nine and the
/// median among them. Empty under two samples.
pub fn spectrum(h: &Histogram<u64>, divisor: f64) -> Vec<(f64, f64)> {
    if h.len() < 2 {
        return Vec::new();
    }
    let top = (h.len() as f64).log10();
    // Whole steps per nine, so that every whole nine is sampled exactly.
    let per = (SAMPLES / top).ceil();
    let mut xs: Vec<f64> = (0u32..)
        .map(|j| f64::from(j) / per)
        .take_while(|&x| x < top)
        .collect();
    xs.push(top);
    if nines(0.5) < top {
        xs.push(nines(0.5));
    }
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    xs.into_iter().map(|x| at(h, x, divisor)).collect()
}

/// At most `k` of `n` things in order: the first, the last, and evenly
/// between.
pub fn spread(n: usize, k: usize) -> Vec<usize> {
    if n <= k {
        return (0..n).collect();
    }
    if k < 2 {
        return (0..k).collect();
    }
    let mut v: Vec<usize> = (0..k)
        .map(|i| (i * (n - 1) + (k - 1) / 2) / (k - 1))
        .collect();
    v.dedup();
    v
}

/// A point's configuration named as the experiment's other figures name
/// it (and a stream job's direction).
fn configuration(v: &PointView) -> String {
    let name = match v.of {
        Of::Roundtrip(p) => point_config(p),
        Of::Curve(p) => point_curve(p),
        Of::Closed(p) => closed_name(p),
        // An open-loop sweep is over offered rates at one size.
        Of::Open(p) => format!(
            "{} open loop, {} bytes",
            open_name(p),
            format_size(p.size_bytes)
        ),
        Of::Job(j) => stream_job_name(j),
        Of::Flowgraph(_) => "flowgraph".into(),
        Of::Pairs(_) => "pairs".into(),
    };
    match v.direction {
        Some(d) => format!("{name}, {d}"),
        None => name,
    }
}

/// A point within its configuration, named in a legend.
fn point(sizes: Sizes) -> String {
    match sizes {
        Sizes::Offered(r) => format!("{}/s offered", si(r)),
        Sizes::InOut {
            in_bytes,
            out_bytes,
        } => format!(
            "in {}, out {}",
            format_size(in_bytes),
            format_size(out_bytes)
        ),
        Sizes::Message(n) => format!("{} bytes", format_size(n)),
        Sizes::Block(n) => format!("bs {}", format_size(n)),
        Sizes::Blocks(m) => format!("M={m}"),
        Sizes::Unsaid => "all samples".into(),
    }
}

/// Recorded ns per plotted ns: a curve point records whole exchanges and
/// is plotted one way (2 in pingpong, the window in stream); else 1.
fn divisor(v: &PointView) -> f64 {
    match v.of {
        Of::Curve(p) if p.exchange.mean_ns > 0.0 && p.oneway.mean_ns > 0.0 => {
            p.exchange.mean_ns / p.oneway.mean_ns
        }
        _ => 1.0,
    }
}

/// The histograms of `run`'s points, merged where points share their
/// configuration and sizes (a stream job's clones); one that does not
/// decode is left out, with a warning in `warnings`.
fn found<'a>(run: &'a SavedRun, warnings: &mut Vec<String>) -> Vec<Found<'a>> {
    let mut out: Vec<Found> = Vec::new();
    // Where each (configuration, point) is in `out`: one lookup per point.
    let mut index: std::collections::HashMap<(Key, Sizes), usize> =
        std::collections::HashMap::new();
    let mut views = run.run.views();
    // A stream job's directions by name (read, trim, write), the order its
    // spectra have always come in.
    views.sort_by_key(|v| (v.entry, v.direction));
    for v in views {
        let Some(h) = &v.spread.histogram else {
            continue;
        };
        let text = h.as_str();
        let key = (v.config, v.direction);
        // Decoded to check it, then dropped: kept encoded.
        match Distribution::decode(text) {
            Ok(h) if h.is_empty() => continue,
            Ok(_) => {}
            Err(e) => {
                warnings.push(format!(
                    "{}: {}, {}: {e}; its latency spectrum is left out",
                    run.label,
                    configuration(&v),
                    point(v.sizes)
                ));
                continue;
            }
        }
        match index.get(&(key, v.sizes)) {
            Some(&i) => out[i].hists.push(text),
            None => {
                index.insert((key, v.sizes), out.len());
                out.push(Found {
                    divisor: divisor(&v),
                    key,
                    config: configuration(&v),
                    sizes: v.sizes,
                    point: point(v.sizes),
                    order: v.sizes.order(),
                    hists: vec![text],
                });
            }
        }
    }
    out
}

/// The latency axis of an experiment's spectra and what its histograms
/// hold, for captions.
fn latency(experiment: &str) -> (&'static str, &'static str) {
    match experiment {
        "roundtrip" => ("round-trip time (µs)", "round-trip times"),
        "curve" => (
            "one-way latency (µs)",
            "one-way times (each exchange's time over its messages: half a round trip in pingpong, over the window in stream)",
        ),
        "stream" => ("completion latency (µs)", "completion latencies"),
        "load" => ("latency (µs)", "request latencies"),
        _ => ("latency (µs)", "latencies"),
    }
}

/// A spectrum plot of `series`: the nines along x, latency up y, on a log
/// scale when it spans more than a decade.
fn plot(experiment: &str, series: Vec<Series>) -> Plot {
    Plot::Lines(Lines {
        x: Axis::new("percentile (nines)", false, Scale::Nines),
        y: Axis::new(latency(experiment).0, spans_decade(&series), Scale::Number),
        series,
    })
}

/// Spectrum figures of every run that keeps histograms, in the order of
/// the runs' experiments; and a warning for each histogram left out.
pub fn figures(runs: &[SavedRun]) -> (Vec<Figure>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut experiments: Vec<&str> = Vec::new();
    for r in runs {
        if !experiments.contains(&r.experiment.as_str()) {
            experiments.push(&r.experiment);
        }
    }
    let mut out = Vec::new();
    for e in experiments {
        let found: Vec<(&SavedRun, Vec<Found>)> = runs
            .iter()
            .filter(|r| r.experiment == e)
            .map(|r| (r, found(r, &mut warnings)))
            .collect();
        let mut figs = experiment(e, &found);
        for (k, f) in figs.iter_mut().enumerate() {
            f.id = format!("spectrum-{e}-{}", k + 1);
        }
        out.extend(figs);
    }
    (out, warnings)
}

/// One experiment's spectra: per configuration, the runs' shared points
/// compared, or each run's points on one plot.
fn experiment(e: &str, runs: &[(&SavedRun, Vec<Found>)]) -> Vec<Figure> {
    let mut configs: Vec<Key> = Vec::new();
    for f in runs.iter().flat_map(|(_, fs)| fs) {
        if !configs.contains(&f.key) {
            configs.push(f.key);
        }
    }
    let mut out = Vec::new();
    for c in configs {
        let per_run: Vec<(&SavedRun, Vec<&Found>)> = runs
            .iter()
            .filter_map(|(r, fs)| {
                let mut mine: Vec<&Found> = fs.iter().filter(|f| f.key == c).collect();
                mine.sort_by(|a, b| {
                    a.order
                        .partial_cmp(&b.order)
                        .unwrap_or(std::cmp::Ordering::Equal)
                });
                (!mine.is_empty()).then_some((*r, mine))
            })
            .collect();
        // Points two runs or more have, in size order.
        let mut all: Vec<&Found> = per_run
            .iter()
            .flat_map(|(_, m)| m.iter().copied())
            .collect();
        all.sort_by(|a, b| {
            a.order
                .partial_cmp(&b.order)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let mut shared: Vec<&Found> = Vec::new();
        let mut alone = 0;
        let mut runs_with: std::collections::HashMap<Sizes, usize> =
            std::collections::HashMap::new();
        for f in &all {
            *runs_with.entry(f.sizes).or_default() += 1;
        }
        let mut seen: std::collections::HashSet<Sizes> = std::collections::HashSet::new();
        for f in &all {
            if !seen.insert(f.sizes) {
                continue;
            }
            if runs_with[&f.sizes] >= 2 {
                shared.push(f);
            } else {
                alone += 1;
            }
        }
        if shared.is_empty() {
            out.extend(per_run.iter().filter_map(|(r, mine)| one_run(e, r, mine)));
        } else {
            out.extend(compared(e, &per_run, &shared, alone));
        }
    }
    out
}

/// "64 bytes, 4k bytes and 1M bytes".
fn listed(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// One run's points of one configuration on one plot, a series each (at
/// most `MAX_SERIES`).
fn one_run(e: &str, run: &SavedRun, mine: &[&Found]) -> Option<Figure> {
    let picked = spread(mine.len(), MAX_SERIES);
    let series: Vec<Series> = picked
        .iter()
        .map(|&i| {
            let f = mine[i];
            Series::new(
                f.point.clone(),
                Role::Measured,
                spectrum(&f.hist(), f.divisor),
            )
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if series.is_empty() {
        return None;
    }
    let shown = if picked.len() < mine.len() {
        let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
        format!(
            " Shown: {} of its {} points, spread over the sizes ({}).",
            picked.len(),
            mine.len(),
            listed(&names)
        )
    } else {
        String::new()
    };
    Some(Figure {
        kind: Kind::Spectrum,
        id: String::new(),
        title: format!("Latency spectrum, {} ({})", mine[0].config, run.label),
        caption: format!(
            "{READING} Percentiles of the {} of run {}, one series per point.{shown}",
            latency(e).1,
            run.label
        ),
        lead: Vec::new(),
        plot: plot(e, series),
    })
}

/// A figure per point two runs or more share (at most `MAX_SERIES`), a
/// series per run: the first run given dashed, as the baseline.
fn compared(
    e: &str,
    per_run: &[(&SavedRun, Vec<&Found>)],
    shared: &[&Found],
    alone: usize,
) -> Vec<Figure> {
    let picked = spread(shared.len(), MAX_SERIES);
    let names: Vec<&str> = picked.iter().map(|&i| shared[i].point.as_str()).collect();
    let mut shown = if picked.len() < shared.len() {
        format!(
            " Points shown: {} of the {} the runs share, spread over the sizes ({}).",
            picked.len(),
            shared.len(),
            listed(&names)
        )
    } else {
        String::new()
    };
    if alone > 0 {
        shown.push_str(&format!(
            " {alone} point{} measured in one run only {} not compared.",
            if alone == 1 { "" } else { "s" },
            if alone == 1 { "is" } else { "are" }
        ));
    }
    let mut out = Vec::new();
    for &i in &picked {
        let p = shared[i];
        let with: Vec<(&SavedRun, &Found)> = per_run
            .iter()
            .filter_map(|(r, m)| Some((*r, *m.iter().find(|f| f.sizes == p.sizes)?)))
            .collect();
        let series: Vec<Series> = with
            .iter()
            .enumerate()
            .map(|(k, (r, f))| {
                let role = if k == 0 {
                    Role::Reference
                } else {
                    Role::Measured
                };
                Series::new(r.label.clone(), role, spectrum(&f.hist(), f.divisor))
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        if series.len() < 2 {
            continue;
        }
        let labels: Vec<&str> = with.iter().map(|(r, _)| r.label.as_str()).collect();
        out.push(Figure {
            kind: Kind::Spectrum,
            id: String::new(),
            title: format!(
                "Latency spectrum, {}, {}: {}",
                p.config,
                p.point,
                labels.join(" vs ")
            ),
            caption: format!(
                "{READING} Percentiles of the {} of each run at this point; dashed: {} (given first), the baseline to read the others (solid) against.{shown}",
                latency(e).1,
                labels[0]
            ),
            lead: Vec::new(),
            plot: plot(e, series),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::stats::Recorder;
    use serde_json::{Value, json};

    fn encoded(values: impl IntoIterator<Item = u64>) -> String {
        let mut r = Recorder::new();
        for v in values {
            r.record(v);
        }
        Distribution::of(&r).as_str().to_string()
    }

    #[test]
    fn spread_keeps_the_ends_and_spaces_the_rest() {
        assert_eq!(spread(24, 6), [0, 5, 9, 14, 18, 23]);
        assert_eq!(spread(4, 6), [0, 1, 2, 3]);
        assert_eq!(spread(7, 6), [0, 1, 2, 4, 5, 6]);
    }

    #[test]
    fn a_spectrum_stops_at_the_nines_its_samples_reach() {
        // 1000 samples, 1..=1000 µs: q reaches 99.9% and no further.
        let text = encoded((1..=1000).map(|i| i * 1000));
        let h = Distribution::decode(&text).unwrap();
        let s = spectrum(&h, 1.0);
        assert!(s.len() >= 100 && s.len() <= 210, "{} samples", s.len());
        let top = s.last().unwrap();
        assert!((top.0 - 3.0).abs() < 1e-9, "ends at {}", top.0);
        let y = |x: f64| s.iter().find(|p| p.0 == x).unwrap().1;
        assert!((y(0.0) - 1.0).abs() < 0.01, "min {}", y(0.0));
        assert!((y(nines(0.5)) - 500.0).abs() < 1.0);
        assert!((y(1.0) - 900.0).abs() < 1.0);
        assert!((y(2.0) - 990.0).abs() < 1.0);
        // Halved for a curve's one-way figures.
        let half = spectrum(&h, 2.0);
        assert!((half[half.len() - 1].1 - top.1 / 2.0).abs() < 1e-9);
        // Rising all along.
        assert!(s.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    }

    #[test]
    fn nines_ticks_read_as_percentages() {
        let a = Axis::new("p", false, Scale::Nines);
        let ticks: Vec<String> = (0..=5).map(|k| a.tick(f64::from(k))).collect();
        assert_eq!(ticks, ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]);
        assert_eq!(a.tick(nines(0.5)), "50%");
        assert_eq!(a.tick((20_000f64).log10()), "99.995%");
    }

    fn run(label: &str, points: Value) -> SavedRun {
        crate::result::saved::sketch(label, json!({"experiment": "curve", "points": points}))
            .unwrap()
    }

    fn curve_point(size: u64, hist: &str) -> Value {
        json!({"spec": "thread", "mode": "pingpong", "chunk": "whole", "buffers": "raw",
               "completion": "poll", "window": 1, "size_bytes": size,
               "exchange": {"mean_ns": 2000.0}, "oneway": {"mean_ns": 1000.0},
               "histogram": hist})
    }

    #[test]
    fn a_curve_of_many_sizes_shows_six_spread_and_says_which() {
        let h = encoded((1..=200).map(|i| i * 10));
        let pts: Vec<Value> = (0..24).map(|k| curve_point(1 << k, &h)).collect();
        let (figs, warnings) = figures(&[run("a", Value::Array(pts))]);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(figs.len(), 1);
        let Plot::Lines(l) = &figs[0].plot else {
            panic!("not lines")
        };
        let names: Vec<&str> = l.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "1 bytes",
                "32 bytes",
                "512 bytes",
                "16k bytes",
                "256k bytes",
                "8M bytes"
            ]
        );
        assert!(
            figs[0].caption.contains("6 of its 24 points"),
            "{}",
            figs[0].caption
        );
        // One-way: the exchange times halved (max 2000 ns → 1 µs).
        let top = l.series[0].points.last().unwrap().1;
        assert!((top - 1.0).abs() < 0.01, "{top}");
        assert_eq!(figs[0].id, "spectrum-curve-1");
        // The table: a row per size, a column per labelled percentile.
        let (header, rows) = figs[0].table();
        assert_eq!(header[1..], ["0%", "50%", "90%", "99%"]);
        assert_eq!(rows.len(), 6);
    }

    #[test]
    fn matching_runs_share_a_plot_per_point_and_the_rest_stay_apart() {
        let h = encoded((1..=200).map(|i| i * 10));
        let a = run("a", json!([curve_point(64, &h), curve_point(128, &h)]));
        let b = run("b", json!([curve_point(64, &h), curve_point(256, &h)]));
        let (figs, _) = figures(&[a, b]);
        assert_eq!(
            figs.len(),
            1,
            "{:?}",
            figs.iter().map(|f| &f.title).collect::<Vec<_>>()
        );
        let Plot::Lines(l) = &figs[0].plot else {
            panic!("not lines")
        };
        let s: Vec<(&str, Role)> = l.series.iter().map(|s| (s.name.as_str(), s.role)).collect();
        assert_eq!(s, [("a", Role::Reference), ("b", Role::Measured)]);
        assert!(
            figs[0].title.contains("64 bytes: a vs b"),
            "{}",
            figs[0].title
        );
        assert!(
            figs[0]
                .caption
                .contains("2 points measured in one run only")
        );
    }

    #[test]
    fn a_stream_job_has_a_spectrum_per_direction_and_clones_add_up() {
        let h = encoded([1000, 2000, 3000]);
        let job = |clone: u64| {
            json!({"jobname": "j", "rw": "readwrite", "ioengine": "psync", "completion": "poll",
                   "bs": 4096, "clone": clone,
                   "read": {"histogram": h}, "write": {"histogram": h}})
        };
        let r = crate::result::saved::sketch(
            "s",
            json!({"experiment": "stream", "jobs": [job(0), job(1)]}),
        )
        .unwrap();
        let mut w = Vec::new();
        let f = found(&r, &mut w);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].config, "j readwrite psync/poll, read");
        assert_eq!(f[0].hist().len(), 6);
        assert_eq!(f[1].point, "bs 4k");
    }

    #[test]
    fn a_histogram_that_does_not_decode_is_left_out_with_a_warning() {
        let good = encoded([1000, 2000, 3000]);
        let r = run(
            "a",
            json!([curve_point(64, "garbage!"), curve_point(128, &good)]),
        );
        let (figs, w) = figures(&[r]);
        assert_eq!(figs.len(), 1);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("a: thread pingpong raw/poll, 64 bytes: histogram is not base64"),
            "{w:?}"
        );
        // Saved before histograms were kept: nothing, and no warning.
        let old = run("old", json!([{"spec": "thread", "size_bytes": 64}]));
        let (figs, w) = figures(&[old]);
        assert!(figs.is_empty() && w.is_empty());
    }
}
