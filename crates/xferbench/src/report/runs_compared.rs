//! `report BASE.json NEW.json`: two runs of one experiment read against
//! each other. The verdicts are `compare`'s (the table `xferbench compare`
//! prints, with the runs' differences listed rather than refused); the
//! figures draw both runs' curves on one plot, each point with the interval
//! of its figure, so the reader sees what each verdict rests on.
//!
//! Each run is compared with the first run of its experiment given before
//! it: `report a.json b.json c.json` reads b and c against a.

use super::figure::{Axis, Figure, Kind, Lines, Plot, Role, Scale, Series, spans_decade};
use super::figures::{closed_name, open_name, point_config, point_curve};
use crate::compare::extract::{self, Statistic, Subject};
use crate::compare::{self, Comparison, Settings, method};
use crate::result::points::{Of, PointView, Sizes};
use crate::result::saved::{AnyRun, SavedRun};
use crate::units::format_size;

/// Two runs compared: the table, or why there is none, and the figures.
#[derive(Clone, Debug)]
pub struct RunComparison {
    pub experiment: String,
    /// The labels of the run read against and of the run judged.
    pub base: String,
    pub new: String,
    /// The comparison, or the one-line reason there is none (no point in
    /// common).
    pub outcome: std::result::Result<Comparison, String>,
    /// Both runs' curves with their intervals (none without a comparison).
    pub figures: Vec<Figure>,
}

/// How a report compares: `compare`'s defaults (99% intervals, ±5% noise),
/// runs that were run differently compared anyway, their differences listed.
pub fn settings() -> Settings {
    Settings {
        allow_different: true,
        ..Settings::default()
    }
}

/// Each run against the first run of its experiment given before it.
pub fn all(runs: &[SavedRun]) -> Vec<RunComparison> {
    let mut out = Vec::new();
    for (j, new) in runs.iter().enumerate() {
        let Some(base) = runs[..j].iter().find(|r| r.experiment == new.experiment) else {
            continue;
        };
        let id = format!("compared-{}", out.len() + 1);
        out.push(pair(&id, base, new));
    }
    out
}

/// `new` read against `base`; figure ids start with `id`.
pub fn pair(id: &str, base: &SavedRun, new: &SavedRun) -> RunComparison {
    let outcome = compare::compare(base, new, &settings()).map_err(|e| e.to_string());
    let figures = match &outcome {
        Ok(_) => figures(id, base, new),
        Err(_) => Vec::new(),
    };
    RunComparison {
        experiment: base.experiment.clone(),
        base: base.label.clone(),
        new: new.label.clone(),
        outcome,
        figures,
    }
}

/// What every comparison figure's bars are.
pub const BARS: &str = "Bars: the 99% interval of each run's figure, from its repeats, else from the intervals within the run; none where a run has only one figure.";

/// Where a point's figure goes: the figure (empty: the only one), the
/// series group (a curve, a configuration), and x.
type Place = (String, String, f64);

/// Where a point (of a stream job: one direction) goes, if on a panel.
type Placer = Box<dyn Fn(&PointView) -> Option<Place>>;

/// One statistic of an experiment against one x: a figure per key.
struct Panel {
    stem: &'static str,
    title: &'static str,
    /// What is plotted, opening the caption.
    what: &'static str,
    stat: Statistic,
    x: Axis,
    y: Axis,
    /// Plotted units per figure unit (ns → µs: 1e-3).
    scale: f64,
    place: Placer,
}

/// A run's points beside their subjects: one per point, a stream job once
/// per direction that did I/O. A run `compare` cannot read gives none.
fn items(run: &SavedRun) -> Vec<(PointView<'_>, Subject)> {
    let Ok(subjects) = extract::subjects(run) else {
        return Vec::new();
    };
    let views = run.run.views();
    match &run.run {
        AnyRun::Stream(_) => views
            .into_iter()
            .filter_map(|v| {
                let (Of::Job(j), Some(dir)) = (v.of, v.direction) else {
                    return None;
                };
                let id = format!("job {} {dir}", extract::stream_job_name(j));
                let s = subjects.iter().find(|s| s.id == id)?;
                Some((v, s.clone()))
            })
            .collect(),
        // A subject per point, in run order.
        _ => views.into_iter().zip(subjects).collect(),
    }
}

/// The request sizes and the reply sizes of both runs' round trips, each
/// sorted and once.
fn in_out(runs: [&SavedRun; 2]) -> (Vec<u64>, Vec<u64>) {
    let (mut ins, mut outs) = (Vec::new(), Vec::new());
    for v in runs.iter().flat_map(|r| r.run.views()) {
        if let Sizes::InOut {
            in_bytes,
            out_bytes,
        } = v.sizes
        {
            ins.push(in_bytes);
            outs.push(out_bytes);
        }
    }
    for v in [&mut ins, &mut outs] {
        v.sort_unstable();
        v.dedup();
    }
    (ins, outs)
}

fn bytes() -> Axis {
    Axis::new("message size (bytes)", true, Scale::Bytes)
}

/// The panels of an experiment (none for mesh: its matrices are heat maps).
fn panels(experiment: &str, runs: [&SavedRun; 2]) -> Vec<Panel> {
    match experiment {
        "curve" => curve_panels(),
        "roundtrip" => roundtrip_panels(runs),
        "stream" => stream_panels(),
        "load" => load_panels(),
        "flowgraph" => flowgraph_panels(),
        "pairs" => pairs_panels(),
        _ => Vec::new(),
    }
}

/// A figure's y axis: log where the figure spans a decade (set when it is
/// drawn).
fn y(label: &str) -> Axis {
    Axis::new(label, true, Scale::Number)
}

/// curve: one-way p50 and bandwidth over message size.
fn curve_panels() -> Vec<Panel> {
    let place = || -> Placer {
        Box::new(|v| match v.of {
            Of::Curve(p) => Some((String::new(), point_curve(p), p.size_bytes as f64)),
            _ => None,
        })
    };
    vec![
        Panel {
            stem: "p50",
            title: "One-way latency (p50) vs message size",
            what: "Median one-way time (half a round trip in pingpong) per message size.",
            stat: Statistic::P50,
            x: bytes(),
            y: y("one-way latency p50 (µs)"),
            scale: 1e-3,
            place: place(),
        },
        Panel {
            stem: "bandwidth",
            title: "Bandwidth vs message size",
            what: "Decimal MB/s (10^6 bytes/s) from the median one-way time, per message size.",
            stat: Statistic::Bandwidth,
            x: bytes(),
            y: y("bandwidth (MB/s)"),
            scale: 1.0,
            place: place(),
        },
    ]
}

/// roundtrip: p50 and p99 over whichever of in and out takes more sizes.
fn roundtrip_panels(runs: [&SavedRun; 2]) -> Vec<Panel> {
    // x: whichever of in and out takes more sizes; a series per
    // size of the other where it takes several.
    let (ins, outs) = in_out(runs);
    let by_in = ins.len() >= outs.len();
    let several = ins.len().min(outs.len()) > 1;
    let place = move || -> Placer {
        Box::new(move |v| {
            let Of::Roundtrip(p) = v.of else {
                return None;
            };
            let (x, other, other_name) = if by_in {
                (p.in_bytes, p.out_bytes, "out")
            } else {
                (p.out_bytes, p.in_bytes, "in")
            };
            let mut group = point_config(p);
            if several {
                group = format!("{group}, {other_name} {}", format_size(other));
            }
            Some((String::new(), group, x as f64))
        })
    };
    let axis = if by_in {
        "request size, in (bytes)"
    } else {
        "reply size, out (bytes)"
    };
    let (t50, t99) = if by_in {
        (
            "Round trip (p50) vs request size",
            "Round trip (p99) vs request size",
        )
    } else {
        (
            "Round trip (p50) vs reply size",
            "Round trip (p99) vs reply size",
        )
    };
    vec![
        Panel {
            stem: "p50",
            title: t50,
            what: "Median round-trip time per point.",
            stat: Statistic::P50,
            x: Axis::new(axis, true, Scale::Bytes),
            y: y("round trip p50 (µs)"),
            scale: 1e-3,
            place: place(),
        },
        Panel {
            stem: "p99",
            title: t99,
            what: "99th-percentile round-trip time per point.",
            stat: Statistic::P99,
            x: Axis::new(axis, true, Scale::Bytes),
            y: y("round trip p99 (µs)"),
            scale: 1e-3,
            place: place(),
        },
    ]
}

/// stream: each job's bandwidth over block size.
fn stream_panels() -> Vec<Panel> {
    vec![Panel {
        stem: "bandwidth",
        title: "Stream bandwidth vs block size",
        what: "Decimal MB/s of each job and direction (clones apart) per block size.",
        stat: Statistic::Bandwidth,
        x: Axis::new("block size (bytes)", true, Scale::Bytes),
        y: y("bandwidth (MB/s)"),
        scale: 1.0,
        place: Box::new(|v| {
            let Of::Job(j) = v.of else {
                return None;
            };
            let mut group = j.jobname().to_string();
            if let Some(c) = j.job().map(|x| x.clone).filter(|&c| c > 0) {
                group.push_str(&format!(" clone {c}"));
            }
            group.push_str(&format!(" {}", v.direction?));
            Some((String::new(), group, j.block_size()? as f64))
        }),
    }]
}

/// load: request rate over size, open-loop latency over offered rate.
fn load_panels() -> Vec<Panel> {
    vec![
        Panel {
            stem: "rate",
            title: "Request rate vs transfer size under load",
            what: "Completed requests per second, closed loop, per load mode and direction.",
            stat: Statistic::Rate,
            x: Axis::new("transfer size (bytes)", true, Scale::Bytes),
            y: y("requests/s"),
            scale: 1.0,
            place: Box::new(|v| match v.of {
                Of::Closed(p) => Some((String::new(), closed_name(p), p.size_bytes as f64)),
                _ => None,
            }),
        },
        Panel {
            stem: "latency",
            title: "Open-loop latency (p50) vs offered rate",
            what: "Median latency from each request's scheduled send time, per offered rate.",
            stat: Statistic::P50,
            x: Axis::new("offered rate (requests/s)", true, Scale::Number),
            y: y("latency p50 (µs)"),
            scale: 1e-3,
            place: Box::new(|v| {
                let Of::Open(p) = v.of else {
                    return None;
                };
                let group = format!("{} {} bytes", open_name(p), format_size(p.size_bytes));
                Some((String::new(), group, p.offered_per_s))
            }),
        },
    ]
}

/// flowgraph: samples/s over blocks, per scheduler.
fn flowgraph_panels() -> Vec<Panel> {
    vec![Panel {
        stem: "rate",
        title: "Flowgraph throughput vs blocks",
        what: "Samples/s through source → M saxpy → sink per scheduler.",
        stat: Statistic::Rate,
        x: Axis::new("saxpy blocks (M)", false, Scale::Count),
        y: y("samples/s"),
        scale: 1.0,
        place: Box::new(|v| {
            let Of::Flowgraph(p) = v.of else {
                return None;
            };
            let n = p.cores;
            let key = format!("{n} core{}", if n == 1 { "" } else { "s" });
            let group = crate::flowgraph::edge::series(p.scheduler, p.edges);
            Some((key, group, p.blocks as f64))
        }),
    }]
}

/// curve --pairs: aggregate bandwidth over message size.
fn pairs_panels() -> Vec<Panel> {
    vec![Panel {
        stem: "bandwidth",
        title: "Pairs streaming at once: aggregate bandwidth vs message size",
        what: "MB/s of every pair together, per message size.",
        stat: Statistic::Bandwidth,
        x: bytes(),
        y: y("MB/s"),
        scale: 1.0,
        place: Box::new(|v| {
            let Of::Pairs(p) = v.of else {
                return None;
            };
            let group = format!("aggregate, window {}", p.window);
            Some((String::new(), group, p.size_bytes as f64))
        }),
    }]
}

/// A point drawn: its figure, group, x, y and the interval of y.
struct Mark {
    figure: String,
    group: String,
    x: f64,
    y: f64,
    bar: Option<[f64; 2]>,
}

fn marks(p: &Panel, items: &[(PointView, Subject)], confidence: f64) -> Vec<Mark> {
    items
        .iter()
        .filter_map(|(v, s)| {
            let (figure, group, x) = (p.place)(v)?;
            let f = s.figures.iter().find(|f| f.stat == p.stat)?;
            Some(Mark {
                figure,
                group,
                x,
                y: f.evidence.value * p.scale,
                bar: method::level(&f.evidence, confidence)
                    .map(|[lo, hi]| [lo * p.scale, hi * p.scale]),
            })
        })
        .collect()
}

fn push_new<T: PartialEq + Clone>(v: &mut Vec<T>, x: &T) {
    if !v.contains(x) {
        v.push(x.clone());
    }
}

/// Lower-case letters and digits, the rest dashes: a figure key in an id.
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// Both runs' curves on one plot per panel (and per figure key): for each
/// group, the base dashed and the new solid, in one colour when there are
/// several groups (else a colour each), each point with its interval.
pub fn figures(id: &str, base: &SavedRun, new: &SavedRun) -> Vec<Figure> {
    let confidence = settings().confidence;
    let sides = [(base, items(base)), (new, items(new))];
    let mut out = Vec::new();
    for p in panels(&base.experiment, [base, new]) {
        let per_side: Vec<Vec<Mark>> = sides
            .iter()
            .map(|(_, it)| marks(&p, it, confidence))
            .collect();
        let (mut keys, mut groups) = (Vec::new(), Vec::new());
        for m in per_side.iter().flatten() {
            push_new(&mut keys, &m.figure);
            push_new(&mut groups, &m.group);
        }
        for key in &keys {
            let mine: Vec<&String> = groups
                .iter()
                .filter(|g| {
                    per_side
                        .iter()
                        .flatten()
                        .any(|m| m.figure == *key && m.group == **g)
                })
                .collect();
            let mut series: Vec<Series> = Vec::new();
            for g in &mine {
                let mut pair = Vec::new();
                for (k, ((run, _), ms)) in sides.iter().zip(&per_side).enumerate() {
                    let mut pts: Vec<&Mark> = ms
                        .iter()
                        .filter(|m| m.figure == *key && m.group == **g)
                        .collect();
                    if pts.is_empty() {
                        continue;
                    }
                    pts.sort_by(|a, b| a.x.total_cmp(&b.x));
                    let name = if mine.len() > 1 {
                        format!("{g} · {}", run.label)
                    } else {
                        run.label.clone()
                    };
                    let role = if k == 0 {
                        Role::Reference
                    } else {
                        Role::Measured
                    };
                    let mut s = Series::new(name, role, pts.iter().map(|m| (m.x, m.y)).collect());
                    s.bars = pts.iter().filter_map(|m| Some((m.x, m.bar?))).collect();
                    pair.push(s);
                }
                // Several groups: a colour per group, the base in its new's.
                if mine.len() > 1 && pair.len() == 2 {
                    pair[0].of = Some(series.len() + 1);
                }
                series.extend(pair);
            }
            if series.is_empty() {
                continue;
            }
            let (title, stem) = if key.is_empty() {
                (p.title.to_string(), p.stem.to_string())
            } else {
                (
                    format!("{}, {key}", p.title),
                    format!("{}-{}", p.stem, slug(key)),
                )
            };
            out.push(Figure {
                kind: Kind::RunsCompared,
                id: format!("{id}-{stem}"),
                title: format!("{title}: {} vs {}", base.label, new.label),
                caption: format!(
                    "{} Dashed: {} (the base); solid: {}. {BARS}",
                    p.what, base.label, new.label
                ),
                lead: Vec::new(),
                plot: Plot::Lines(Lines {
                    x: p.x.clone(),
                    y: Axis {
                        log: spans_decade(&series),
                        ..p.y.clone()
                    },
                    series,
                }),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn curve_point(spec: &str, size: u64, p50: f64, repeats: &[f64]) -> Value {
        let reps: Vec<Value> = repeats
            .iter()
            .map(|r| {
                json!({"p50_ns": r, "mean_ns": r, "p90_ns": r, "p99_ns": r, "p999_ns": r,
                            "bandwidth_MBps": size as f64 / r * 1e3})
            })
            .collect();
        json!({"transport": spec, "spec": spec, "mode": "pingpong", "chunk": "whole", "buffers": "raw",
               "completion": "poll", "size_bytes": size,
               "oneway": {"p50_ns": p50 as u64, "mean_ns": p50, "p90_ns": p50 as u64,
                          "p99_ns": p50 as u64, "p999_ns": p50 as u64, "stddev_ns": 1.0,
                          "count": 100},
               "bandwidth_MBps": size as f64 / p50 * 1e3, "repeats": reps})
    }

    fn run(label: &str, points: Vec<Value>) -> SavedRun {
        crate::result::saved::sketch(label, json!({"experiment": "curve", "points": points}))
            .unwrap()
    }

    #[test]
    fn one_curve_is_two_series_named_by_run_with_bars() {
        let a = run(
            "a",
            vec![
                curve_point("thread", 64, 100.0, &[99.0, 100.0, 101.0]),
                curve_point("thread", 1024, 200.0, &[198.0, 200.0, 202.0]),
            ],
        );
        let b = run(
            "b",
            vec![
                curve_point("thread", 64, 150.0, &[149.0, 150.0, 151.0]),
                // One figure only: no bar.
                curve_point("thread", 1024, 300.0, &[]),
            ],
        );
        let c = pair("compared-1", &a, &b);
        let cmp = c.outcome.as_ref().expect("compared");
        assert!(cmp.tally.regressed > 0);
        let ids: Vec<&str> = c.figures.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["compared-1-p50", "compared-1-bandwidth"]);
        let Plot::Lines(l) = &c.figures[0].plot else {
            panic!("lines")
        };
        let s: Vec<(&str, Role, usize)> = l
            .series
            .iter()
            .map(|s| (s.name.as_str(), s.role, s.bars.len()))
            .collect();
        assert_eq!(s, [("a", Role::Reference, 2), ("b", Role::Measured, 1)]);
        assert_eq!(l.series[0].points, [(64.0, 0.1), (1024.0, 0.2)]);
        let [lo, hi] = l.series[0].bars[0].1;
        assert!(lo < 0.1 && hi > 0.1 && hi < 0.11, "{lo} {hi}");
        assert!(c.figures[0].caption.contains("99% interval"));
        // The table gives each value with its interval.
        let (_, rows) = c.figures[0].table();
        assert!(rows[0][1].starts_with("0.100 (0.09"), "{rows:?}");
    }

    #[test]
    fn several_curves_pair_each_base_with_its_new_in_one_colour() {
        let pts = |k: f64| {
            vec![
                curve_point("thread", 64, 100.0 * k, &[100.0 * k, 101.0 * k]),
                curve_point("tcp", 64, 900.0 * k, &[900.0 * k, 910.0 * k]),
            ]
        };
        let c = pair("x", &run("a", pts(1.0)), &run("b", pts(1.5)));
        let Plot::Lines(l) = &c.figures[0].plot else {
            panic!("lines")
        };
        let s: Vec<(&str, Option<usize>)> =
            l.series.iter().map(|s| (s.name.as_str(), s.of)).collect();
        assert_eq!(
            s,
            [
                ("thread pingpong raw/poll · a", Some(1)),
                ("thread pingpong raw/poll · b", None),
                ("tcp pingpong raw/poll · a", Some(3)),
                ("tcp pingpong raw/poll · b", None),
            ]
        );
    }

    #[test]
    fn a_stream_job_is_a_series_per_clone_and_direction_that_did_io() {
        let run = |label: &str, bw: u64| {
            let job = |clone: u64| {
                json!({"jobname": "j", "rw": "readwrite", "clone": clone, "sweep_bs": 4096,
                       "read": {"bw_bytes": bw, "total_ios": 10},
                       "write": {"bw_bytes": bw, "total_ios": 10}})
            };
            crate::result::saved::sketch(
                label,
                json!({"experiment": "stream", "jobs": [job(0), job(1)]}),
            )
            .unwrap()
        };
        let c = pair("x", &run("a", 1_000_000), &run("b", 2_000_000));
        assert_eq!(c.figures.len(), 1);
        let Plot::Lines(l) = &c.figures[0].plot else {
            panic!("lines")
        };
        let s: Vec<(&str, &[(f64, f64)])> = l
            .series
            .iter()
            .map(|s| (s.name.as_str(), s.points.as_slice()))
            .collect();
        assert_eq!(
            s,
            [
                ("j read · a", &[(4096.0, 1.0)][..]),
                ("j read · b", &[(4096.0, 2.0)][..]),
                ("j write · a", &[(4096.0, 1.0)][..]),
                ("j write · b", &[(4096.0, 2.0)][..]),
                ("j clone 1 read · a", &[(4096.0, 1.0)][..]),
                ("j clone 1 read · b", &[(4096.0, 2.0)][..]),
                ("j clone 1 write · a", &[(4096.0, 1.0)][..]),
                ("j clone 1 write · b", &[(4096.0, 2.0)][..]),
            ]
        );
    }

    #[test]
    fn runs_without_a_point_in_common_say_why_and_draw_nothing() {
        let a = run("a", vec![curve_point("thread", 64, 100.0, &[])]);
        let b = run("b", vec![curve_point("tcp", 64, 100.0, &[])]);
        let c = pair("x", &a, &b);
        let why = c.outcome.expect_err("nothing in common");
        assert!(why.contains("no point in common"), "{why}");
        assert!(c.figures.is_empty());
    }

    #[test]
    fn each_run_is_read_against_the_first_of_its_experiment() {
        let p = || vec![curve_point("thread", 64, 100.0, &[])];
        let other = crate::result::saved::sketch(
            "f",
            json!({"experiment": "flowgraph", "points": [{"scheduler": "seq", "cores": 1,
                   "blocks": 1, "samples_per_s": 1e9}]}),
        )
        .unwrap();
        let runs = [run("a", p()), other, run("b", p()), run("c", p())];
        let pairs: Vec<(String, String)> =
            all(&runs).into_iter().map(|c| (c.base, c.new)).collect();
        assert_eq!(pairs, [("a".into(), "b".into()), ("a".into(), "c".into())]);
    }
}
