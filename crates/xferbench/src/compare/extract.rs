//! A saved run's points as comparable subjects: an identity that names the
//! same point in another run of the experiment, and for each statistic the
//! figure with its evidence (repeats, blocks, moments), read from the JSON
//! every experiment writes.

use super::method::Evidence;
use crate::measure::distribution::{Figures, Spread};
use crate::measure::stats::Summary;
use crate::options::DataDirection;
use crate::result::load::LoadPoint;
use crate::result::mesh::MeshPair;
use crate::result::saved::{AnyRun, SavedRun, StreamJob, written};
use crate::words::{Word, word_enum};
use serde::Serialize;
use serde_json::Value;

word_enum! {
    /// A statistic a comparison can judge, by the name `--stats` and
    /// `--fail-on` take.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Statistic {
        /// Median latency.
        P50 = "p50",
        /// Mean latency.
        Mean = "mean",
        /// 90th percentile latency.
        P90 = "p90",
        /// 99th percentile latency.
        P99 = "p99",
        /// 99.9th percentile latency.
        P999 = "p999",
        /// Bytes per second (MB/s).
        Bandwidth = "bandwidth",
        /// I/O operations per second (stream).
        Iops = "iops",
        /// Requests, samples or messages per second (load, flowgraph, pairs).
        Rate = "rate",
    }
}

impl Statistic {
    /// The statistics compared when `--stats` names none.
    pub const DEFAULT: [Statistic; 6] = [
        Statistic::P50,
        Statistic::Mean,
        Statistic::P99,
        Statistic::Bandwidth,
        Statistic::Iops,
        Statistic::Rate,
    ];

    /// Latency: a rise is worse. Rates: a fall is worse.
    pub fn lower_is_better(self) -> bool {
        matches!(
            self,
            Statistic::P50 | Statistic::Mean | Statistic::P90 | Statistic::P99 | Statistic::P999
        )
    }

    /// The column heading (`p99.9` where `--stats` says `p999`).
    pub fn name(self) -> &'static str {
        match self {
            Statistic::P999 => "p99.9",
            s => s.word(),
        }
    }

    /// The latency statistics: field and figure key in a summary, and the
    /// quantile.
    fn latency_key(self) -> Option<&'static str> {
        Some(match self {
            Statistic::P50 => "p50_ns",
            Statistic::Mean => "mean_ns",
            Statistic::P90 => "p90_ns",
            Statistic::P99 => "p99_ns",
            Statistic::P999 => "p999_ns",
            _ => return None,
        })
    }
}

/// One figure of a subject.
#[derive(Clone, Debug)]
pub struct Figure {
    /// Which statistic.
    pub stat: Statistic,
    /// `ns`, `MB/s`, `IOPS`, `req/s`, `samples/s`, `msg/s`.
    pub unit: &'static str,
    /// The figure and what its spread is known from.
    pub evidence: Evidence,
}

/// One point of a run, as a comparison sees it.
#[derive(Clone, Debug)]
pub struct Subject {
    /// Names the same point in another run (and is what the tables show).
    pub id: String,
    /// Its statistics.
    pub figures: Vec<Figure>,
    /// The number of repeats behind the point (1 without `--repeat`).
    pub repeats: usize,
    /// The transport the point went through, for points that name one: the
    /// id starts with its spec, which `config::pair_transports` may replace
    /// so that firmware A's point meets firmware B's.
    pub transport: Option<Measured>,
}

/// The transport of a point, as two runs' points are paired by it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measured {
    /// The spec as the run wrote it, options included (`plugin:path=./x.so,lat=5us`).
    pub spec: String,
    /// The transport's name (`plugin`, `tcp`, `tcp://HOST:PORT`): what was
    /// measured, whatever options it was given.
    pub kind: String,
    /// A plugin's own name from the run's `devices[]`: two plugins are two
    /// devices, not one device with other options. None for built-in
    /// transports and for runs that recorded no device.
    pub device: Option<String>,
}

/// The name of a stream job across runs: its name, clone and swept size
/// (its file may be a fresh temporary one each run).
pub fn stream_job_name(j: &StreamJob) -> String {
    let mut name = j.jobname().to_string();
    if let Some(x) = j.job() {
        if x.clone > 0 {
            name += &format!(" clone {}", x.clone);
        }
        if let Some(bs) = x.sweep_bs {
            name += &format!(" bs {bs}");
        }
    } else if let StreamJob::Group(g) = j
        && let Some(bs) = g.sweep_bs
    {
        name += &format!(" bs {bs}");
    }
    name
}

/// The `key` figure of each repeat or block of `spread`, times `scale`
/// (a block without it, one with no samples of it, is left out).
fn replicates(list: &[Figures], key: &str, scale: f64) -> Vec<f64> {
    list.iter()
        .filter_map(|f| f.get(key).map(|v| v * scale))
        .collect()
}

fn evidence(spread: &Spread, value: f64, key: &str, scale: f64) -> Evidence {
    Evidence {
        value,
        repeats: replicates(&spread.repeats, key, scale),
        blocks: replicates(&spread.blocks, key, scale),
        moments: None,
    }
}

/// The latency figures of `summary`, with evidence from `spread`. An
/// all-zero summary is one with no samples, or a file that left it out
/// (an old load cell): no latency figures, as for no summary at all.
fn latency(summary: &Summary, spread: &Spread, out: &mut Vec<Figure>) {
    if *summary == Summary::default() {
        return;
    }
    for (stat, value) in [
        (Statistic::P50, summary.p50_ns as f64),
        (Statistic::Mean, summary.mean_ns),
        (Statistic::P90, summary.p90_ns as f64),
        (Statistic::P99, summary.p99_ns as f64),
        (Statistic::P999, summary.p999_ns as f64),
    ] {
        let key = stat.latency_key().expect("a latency statistic");
        let mut ev = evidence(spread, value, key, 1.0);
        if stat == Statistic::Mean {
            ev.moments = Some((summary.stddev_ns, summary.count));
        }
        out.push(Figure {
            stat,
            unit: "ns",
            evidence: ev,
        });
    }
}

/// A rate figure: `value` (the point's `key` field) times `scale`.
fn rate(
    spread: &Spread,
    stat: Statistic,
    key: &str,
    value: f64,
    unit: &'static str,
    scale: f64,
) -> Figure {
    Figure {
        stat,
        unit,
        evidence: evidence(spread, value * scale, key, scale),
    }
}

fn repeats_of(spread: &Spread) -> usize {
    spread.repeats.len().max(1)
}

/// The subjects of a run, in the run's order.
pub fn subjects(run: &SavedRun) -> Result<Vec<Subject>, String> {
    let mut out = Vec::new();
    match &run.run {
        AnyRun::Roundtrip(r) => {
            for p in &r.points {
                let mut figures = Vec::new();
                latency(&p.summary, &p.spread, &mut figures);
                out.push(Subject {
                    id: format!(
                        "{} {}/{} in {} out {}",
                        p.spec,
                        written(&p.buffers),
                        written(&p.completion),
                        p.in_bytes,
                        p.out_bytes
                    ),
                    figures,
                    repeats: repeats_of(&p.spread),
                    transport: Some(measured(run, &p.spec, &p.transport)),
                });
            }
        }
        AnyRun::Curve(r) => {
            for p in &r.points {
                let mut figures = Vec::new();
                latency(&p.oneway, &p.spread, &mut figures);
                figures.push(rate(
                    &p.spread,
                    Statistic::Bandwidth,
                    "bandwidth_MBps",
                    p.bandwidth_mbps,
                    "MB/s",
                    1.0,
                ));
                let chunk = written(&p.chunk);
                // A stream the responder sent is a curve of its own (runs
                // saved before directions, or with write, name none).
                let way = match p.direction {
                    Some(DataDirection::Read) => " read",
                    _ => "",
                };
                out.push(Subject {
                    id: format!(
                        "{} {}{way}{} {}/{} {} B",
                        p.spec,
                        written(&p.mode),
                        if chunk == "whole" {
                            String::new()
                        } else {
                            format!(" chunk {chunk}")
                        },
                        written(&p.buffers),
                        written(&p.completion),
                        p.size_bytes
                    ),
                    figures,
                    repeats: repeats_of(&p.spread),
                    transport: Some(measured(run, &p.spec, &p.transport)),
                });
            }
        }
        AnyRun::Load(r) => {
            for p in &r.points {
                out.push(load(run, p));
            }
        }
        AnyRun::Flowgraph(r) => {
            for p in &r.points {
                out.push(Subject {
                    id: format!(
                        "{} {} N={} M={}",
                        p.scheduler,
                        or_dash(p.edges),
                        p.cores,
                        p.blocks
                    ),
                    figures: vec![rate(
                        &p.spread,
                        Statistic::Rate,
                        "samples_per_s",
                        p.samples_per_s,
                        "samples/s",
                        1.0,
                    )],
                    repeats: repeats_of(&p.spread),
                    transport: None,
                });
            }
        }
        AnyRun::Pairs(r) => {
            for p in &r.points {
                out.push(Subject {
                    id: format!("{} B window {}", p.size_bytes, p.window),
                    figures: vec![
                        rate(
                            &p.spread,
                            Statistic::Bandwidth,
                            "aggregate_MBps",
                            p.aggregate_mbps,
                            "MB/s",
                            1.0,
                        ),
                        rate(
                            &p.spread,
                            Statistic::Rate,
                            "messages_per_s",
                            p.messages_per_s,
                            "msg/s",
                            1.0,
                        ),
                    ],
                    repeats: repeats_of(&p.spread),
                    transport: None,
                });
            }
        }
        AnyRun::Stream(r) => {
            for j in &r.jobs {
                stream(j, &mut out);
            }
        }
        AnyRun::Mesh(r) => {
            for p in &r.points {
                mesh(p, &mut out);
            }
        }
    }
    Ok(out)
}

/// `-` for a name a file left out.
fn or_dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

/// The transport of a point that names one (roundtrip, curve, load); its
/// spec is the start of the point's id. A point without a spec (a file
/// that left it out) goes by its transport's name.
fn measured(run: &SavedRun, spec: &str, transport: &str) -> Measured {
    let spec = or_dash(if spec.is_empty() { transport } else { spec }).to_string();
    let kind = if transport.is_empty() {
        spec.clone()
    } else {
        transport.to_string()
    };
    let device = run
        .run
        .devices()
        .iter()
        .find(|d| d.get("spec").and_then(Value::as_str) == Some(&spec))
        .and_then(|d| d.get("plugin"))
        .and_then(Value::as_str)
        .map(str::to_string);
    Measured { spec, kind, device }
}

/// A load point. Every run writes a point's spec with its configuration:
/// a point without one comes from a file that left the configuration out,
/// whose buffers, completion, direction, arrival and sizes are unknown
/// (read as `-`, not as the defaults they were filled with).
fn load(run: &SavedRun, p: &LoadPoint) -> Subject {
    let mut figures = Vec::new();
    let said = |x: String, known: bool| if known { x } else { "-".into() };
    match p {
        LoadPoint::Open(p) => {
            let known = !p.spec.is_empty();
            latency(&p.latency, &p.spread, &mut figures);
            figures.push(rate(
                &p.spread,
                Statistic::Rate,
                "achieved_per_s",
                p.achieved_per_s,
                "req/s",
                1.0,
            ));
            let m = measured(run, &p.spec, &p.transport);
            Subject {
                id: format!(
                    "{} {}/{} {} {} B at {:.0}/s {}",
                    m.spec,
                    said(written(&p.buffers), known),
                    said(written(&p.completion), known),
                    said(written(&p.direction), known),
                    said(p.size_bytes.to_string(), p.size_bytes > 0),
                    p.offered_per_s,
                    said(written(&p.arrival), known)
                ),
                figures,
                repeats: repeats_of(&p.spread),
                transport: Some(m),
            }
        }
        LoadPoint::Closed(p) => {
            let known = !p.spec.is_empty();
            latency(&p.latency, &p.spread, &mut figures);
            figures.push(rate(
                &p.spread,
                Statistic::Rate,
                "req_per_s",
                p.req_per_s,
                "req/s",
                1.0,
            ));
            let m = measured(run, &p.spec, &p.transport);
            Subject {
                id: format!(
                    "{} {}/{} {} {} B under {} inflight {}",
                    m.spec,
                    said(written(&p.buffers), known),
                    said(written(&p.completion), known),
                    written(&p.direction),
                    p.size_bytes,
                    p.load,
                    said(p.inflight.to_string(), p.inflight > 0)
                ),
                figures,
                repeats: repeats_of(&p.spread),
                transport: Some(m),
            }
        }
    }
}

/// A stream entry: one subject per direction that did I/O.
fn stream(job: &StreamJob, out: &mut Vec<Subject>) {
    let name = stream_job_name(job);
    for (dir, d) in job.dirs() {
        if d.total_ios == 0 {
            continue;
        }
        let clat = &d.clat_ns;
        let mut figures = vec![
            rate(
                &d.spread,
                Statistic::Bandwidth,
                "bw_bytes",
                d.bw_bytes as f64,
                "MB/s",
                1e-6,
            ),
            rate(&d.spread, Statistic::Iops, "iops", d.iops, "IOPS", 1.0),
        ];
        // fio's percentile keys hold dots: read them whole. A percentile
        // the file does not list is not compared.
        for (stat, p, key) in [
            (Statistic::P50, "50.000000", "p50_ns"),
            (Statistic::P90, "90.000000", "p90_ns"),
            (Statistic::P99, "99.000000", "p99_ns"),
            (Statistic::P999, "99.900000", "p999_ns"),
        ] {
            if let Some(&v) = clat.percentile.get(p) {
                figures.push(Figure {
                    stat,
                    unit: "ns",
                    evidence: evidence(&d.spread, v as f64, key, 1.0),
                });
            }
        }
        let mut mean = evidence(&d.spread, clat.mean, "mean_ns", 1.0);
        mean.moments = Some((clat.stddev, clat.n));
        figures.push(Figure {
            stat: Statistic::Mean,
            unit: "ns",
            evidence: mean,
        });
        out.push(Subject {
            id: format!("job {name} {dir}"),
            figures,
            repeats: repeats_of(&d.spread),
            transport: None,
        });
    }
}

/// A mesh pair: one subject per latency size and per bandwidth size.
fn mesh(pair: &MeshPair, out: &mut Vec<Subject>) {
    if pair.missing {
        return;
    }
    let (from, to) = (pair.from, pair.to);
    for l in &pair.latency {
        let mut figures = Vec::new();
        latency(&l.oneway, &l.spread, &mut figures);
        out.push(Subject {
            id: format!("{from}→{to} {} B latency", l.size_bytes),
            figures,
            repeats: repeats_of(&l.spread),
            transport: None,
        });
    }
    for b in &pair.bandwidth {
        out.push(Subject {
            id: format!("{from}→{to} {} B bandwidth", b.size_bytes),
            // A bandwidth point keeps no repeats or blocks.
            figures: vec![rate(
                &Spread::default(),
                Statistic::Bandwidth,
                "bandwidth_MBps",
                b.bandwidth_mbps,
                "MB/s",
                1.0,
            )],
            repeats: 1,
            transport: None,
        });
    }
}
