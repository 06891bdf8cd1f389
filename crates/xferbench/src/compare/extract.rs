//! A saved run's points as comparable subjects: an identity that names the
//! same point in another run of the experiment, and for each statistic the
//! figure with its evidence (repeats, blocks, moments), read from the JSON
//! every experiment writes.

use super::method::Evidence;
use crate::result::saved::{SavedRun, StreamJob};
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

type Found<T> = Result<T, String>;

fn num(v: &Value, path: &str) -> Found<f64> {
    let mut cur = v;
    for k in path.split('.') {
        cur = cur
            .get(k)
            .ok_or_else(|| format!("field {path} is missing"))?;
    }
    cur.as_f64()
        .ok_or_else(|| format!("field {path} is not a number ({cur})"))
}

/// A field that names the point. Files from older versions lack some
/// (load points had no `spec`): a missing one is left out of the name, one
/// of the wrong type is refused.
fn text(v: &Value, k: &str) -> Found<String> {
    match v.get(k) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        None | Some(Value::Null) => Ok(match k {
            "spec" => v
                .get("transport")
                .and_then(Value::as_str)
                .unwrap_or("-")
                .to_string(),
            _ => "-".into(),
        }),
        Some(x) => Err(format!("field {k} is not a string ({x})")),
    }
}

/// The name of a stream job across runs: its name, clone and swept size
/// (its file may be a fresh temporary one each run).
pub fn job_name(job: &Value) -> Found<String> {
    let mut name = text(job, "jobname")?;
    if let Ok(c) = num(job, "clone")
        && c > 0.0
    {
        name += &format!(" clone {c}");
    }
    if let Ok(bs) = num(job, "sweep_bs") {
        name += &format!(" bs {bs}");
    }
    Ok(name)
}

/// [`job_name`] for a typed stream entry.
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

/// The `key` figure of each repeat or block of `spread` (an entry holding
/// `repeats` and `blocks`), times `scale`. Figures that are not positive
/// numbers are refused by name.
fn replicates(spread: &Value, list: &str, key: &str, scale: f64) -> Found<Vec<f64>> {
    let Some(items) = spread.get(list) else {
        return Ok(Vec::new());
    };
    let items = items
        .as_array()
        .ok_or_else(|| format!("field {list} is not a list"))?;
    let mut out = Vec::with_capacity(items.len());
    for (i, it) in items.iter().enumerate() {
        match it.get(key) {
            // A block without this figure (a block with no samples of it).
            None | Some(Value::Null) => {}
            Some(x) => out.push(
                x.as_f64()
                    .ok_or_else(|| format!("{list}[{i}].{key} is not a number ({x})"))?
                    * scale,
            ),
        }
    }
    Ok(out)
}

fn evidence(spread: &Value, value: f64, key: &str, scale: f64) -> Found<Evidence> {
    Ok(Evidence {
        value,
        repeats: replicates(spread, "repeats", key, scale)?,
        blocks: replicates(spread, "intervals", key, scale)?,
        moments: None,
    })
}

/// The latency figures of `summary` (a Summary object), with evidence from
/// `spread`.
/// No summary at all (an older file) gives no latency figures; a summary
/// missing a field is refused.
fn latency(summary: &Value, spread: &Value, prefix: &str, out: &mut Vec<Figure>) -> Found<()> {
    if summary.is_null() {
        return Ok(());
    }
    for stat in [
        Statistic::P50,
        Statistic::Mean,
        Statistic::P90,
        Statistic::P99,
        Statistic::P999,
    ] {
        let key = stat.latency_key().expect("a latency statistic");
        let value = num(summary, key).map_err(|e| format!("{prefix}{e}"))?;
        let mut ev = evidence(spread, value, key, 1.0)?;
        if stat == Statistic::Mean {
            ev.moments = Some((
                num(summary, "stddev_ns").map_err(|e| format!("{prefix}{e}"))?,
                num(summary, "count").map_err(|e| format!("{prefix}{e}"))? as u64,
            ));
        }
        out.push(Figure {
            stat,
            unit: "ns",
            evidence: ev,
        });
    }
    Ok(())
}

fn rate(
    entry: &Value,
    stat: Statistic,
    field: &str,
    unit: &'static str,
    scale: f64,
) -> Found<Figure> {
    Ok(Figure {
        stat,
        unit,
        evidence: evidence(entry, num(entry, field)? * scale, field, scale)?,
    })
}

/// A number that names the point (a size, a count): missing is `-`.
fn id_num(v: &Value, k: &str) -> Found<String> {
    match v.get(k) {
        None | Some(Value::Null) => Ok("-".into()),
        Some(x) => x
            .as_f64()
            .map(|n| n.to_string())
            .ok_or_else(|| format!("field {k} is not a number ({x})")),
    }
}

fn repeats_of(entry: &Value) -> usize {
    entry
        .get("repeats")
        .and_then(Value::as_array)
        .map_or(1, |a| a.len().max(1))
}

/// The subjects of a run, in the run's order. An entry that cannot be read
/// is refused with where it is and what is wrong.
pub fn subjects(run: &SavedRun) -> Result<Vec<Subject>, String> {
    let mut out = Vec::new();
    let list = if run.experiment == "stream" {
        "jobs"
    } else {
        "points"
    };
    let entries = match run.value.get(list) {
        Some(Value::Array(a)) => a,
        Some(_) => return Err(format!("field {list} is not a list")),
        None => return Err(format!("field {list} is missing")),
    };
    for (i, e) in entries.iter().enumerate() {
        let at = |err: String| format!("{list}[{i}]: {err}");
        match run.experiment.as_str() {
            "stream" => stream(e, &mut out).map_err(at)?,
            "mesh" => mesh(e, &mut out).map_err(at)?,
            x => out.push(point(run, x, e).map_err(at)?),
        }
    }
    Ok(out)
}

/// The transport of a point that names one (roundtrip, curve, load); its
/// spec is the start of the point's id.
fn measured(run: &SavedRun, e: &Value) -> Found<Measured> {
    let spec = text(e, "spec")?;
    let kind = match e.get("transport") {
        Some(Value::String(k)) => k.clone(),
        _ => spec.clone(),
    };
    let device = run
        .value
        .get("devices")
        .and_then(Value::as_array)
        .and_then(|d| {
            d.iter()
                .find(|d| d.get("spec").and_then(Value::as_str) == Some(&spec))
        })
        .and_then(|d| d.get("plugin"))
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok(Measured { spec, kind, device })
}

/// A point of roundtrip, curve, load, flowgraph or pairs.
fn point(run: &SavedRun, experiment: &str, e: &Value) -> Found<Subject> {
    let mut figures = Vec::new();
    let transport = match experiment {
        "roundtrip" | "curve" | "load" => Some(measured(run, e)?),
        _ => None,
    };
    let id = match experiment {
        "roundtrip" => {
            latency(
                e.get("summary").unwrap_or(&Value::Null),
                e,
                "summary.",
                &mut figures,
            )?;
            format!(
                "{} {}/{} in {} out {}",
                text(e, "spec")?,
                text(e, "buffers")?,
                text(e, "completion")?,
                id_num(e, "in_bytes")?,
                id_num(e, "out_bytes")?
            )
        }
        "curve" => {
            latency(
                e.get("oneway").unwrap_or(&Value::Null),
                e,
                "oneway.",
                &mut figures,
            )?;
            figures.push(rate(
                e,
                Statistic::Bandwidth,
                "bandwidth_MBps",
                "MB/s",
                1.0,
            )?);
            let chunk = text(e, "chunk").unwrap_or_else(|_| "whole".into());
            // A stream the responder sent is a curve of its own (runs
            // saved before directions, or with write, name none).
            let way = match e.get("direction").and_then(Value::as_str) {
                Some("read") => " read",
                _ => "",
            };
            format!(
                "{} {}{way}{} {}/{} {} B",
                text(e, "spec")?,
                text(e, "mode")?,
                if chunk == "whole" {
                    String::new()
                } else {
                    format!(" chunk {chunk}")
                },
                text(e, "buffers")?,
                text(e, "completion")?,
                id_num(e, "size_bytes")?
            )
        }
        "load" if e.get("offered_per_s").is_some() => {
            latency(
                e.get("latency").unwrap_or(&Value::Null),
                e,
                "latency.",
                &mut figures,
            )?;
            figures.push(rate(e, Statistic::Rate, "achieved_per_s", "req/s", 1.0)?);
            format!(
                "{} {}/{} {} {} B at {:.0}/s {}",
                text(e, "spec")?,
                text(e, "buffers")?,
                text(e, "completion")?,
                text(e, "direction")?,
                id_num(e, "size_bytes")?,
                num(e, "offered_per_s")?,
                text(e, "arrival").unwrap_or_default()
            )
        }
        "load" => {
            latency(
                e.get("latency").unwrap_or(&Value::Null),
                e,
                "latency.",
                &mut figures,
            )?;
            figures.push(rate(e, Statistic::Rate, "req_per_s", "req/s", 1.0)?);
            format!(
                "{} {}/{} {} {} B under {} inflight {}",
                text(e, "spec")?,
                text(e, "buffers")?,
                text(e, "completion")?,
                text(e, "direction")?,
                id_num(e, "size_bytes")?,
                text(e, "load")?,
                id_num(e, "inflight")?
            )
        }
        "flowgraph" => {
            figures.push(rate(e, Statistic::Rate, "samples_per_s", "samples/s", 1.0)?);
            format!(
                "{} {} N={} M={}",
                text(e, "scheduler")?,
                text(e, "edges")?,
                id_num(e, "cores")?,
                id_num(e, "blocks")?
            )
        }
        "pairs" => {
            figures.push(rate(
                e,
                Statistic::Bandwidth,
                "aggregate_MBps",
                "MB/s",
                1.0,
            )?);
            figures.push(rate(e, Statistic::Rate, "messages_per_s", "msg/s", 1.0)?);
            format!(
                "{} B window {}",
                id_num(e, "size_bytes")?,
                id_num(e, "window")?
            )
        }
        x => return Err(format!("experiment {x:?} has no points a comparison knows")),
    };
    Ok(Subject {
        id,
        figures,
        repeats: repeats_of(e),
        transport,
    })
}

/// A stream job: one subject per direction that did I/O (runs saved
/// before trims were measured have no `trim`).
fn stream(job: &Value, out: &mut Vec<Subject>) -> Found<()> {
    let name = job_name(job)?;
    for dir in ["read", "write", "trim"] {
        let d = match job.get(dir) {
            Some(d) => d,
            None if dir == "trim" => continue,
            None => return Err(format!("field {dir} is missing")),
        };
        if num(d, "total_ios").map_err(|e| format!("{dir}.{e}"))? == 0.0 {
            continue;
        }
        let at = |e: String| format!("{dir}.{e}");
        let clat = d.get("clat_ns").unwrap_or(&Value::Null);
        let mut figures = vec![
            rate(d, Statistic::Bandwidth, "bw_bytes", "MB/s", 1e-6).map_err(at)?,
            rate(d, Statistic::Iops, "iops", "IOPS", 1.0).map_err(at)?,
        ];
        // fio's percentile keys hold dots: read them whole. A percentile
        // the file does not list is not compared.
        let pv = |p: &str| -> Found<Option<f64>> {
            match clat.get("percentile").and_then(|m| m.get(p)) {
                None => Ok(None),
                Some(x) => x
                    .as_f64()
                    .map(Some)
                    .ok_or_else(|| format!("clat_ns.percentile[{p}] is not a number ({x})")),
            }
        };
        for (stat, p, key) in [
            (Statistic::P50, "50.000000", "p50_ns"),
            (Statistic::P90, "90.000000", "p90_ns"),
            (Statistic::P99, "99.000000", "p99_ns"),
            (Statistic::P999, "99.900000", "p999_ns"),
        ] {
            if let Some(v) = pv(p).map_err(at)? {
                figures.push(Figure {
                    stat,
                    unit: "ns",
                    evidence: evidence(d, v, key, 1.0).map_err(at)?,
                });
            }
        }
        let mut mean = evidence(d, num(clat, "mean").map_err(at)?, "mean_ns", 1.0).map_err(at)?;
        mean.moments = Some((
            num(clat, "stddev").map_err(at)?,
            num(clat, "N").map_err(at)? as u64,
        ));
        figures.push(Figure {
            stat: Statistic::Mean,
            unit: "ns",
            evidence: mean,
        });
        out.push(Subject {
            id: format!("job {name} {dir}"),
            figures,
            repeats: repeats_of(d),
            transport: None,
        });
    }
    Ok(())
}

/// A mesh pair: one subject per latency size and per bandwidth size.
fn mesh(pair: &Value, out: &mut Vec<Subject>) -> Found<()> {
    if pair.get("missing").and_then(Value::as_bool) == Some(true) {
        return Ok(());
    }
    let (from, to) = (num(pair, "from")?, num(pair, "to")?);
    for (j, l) in crate::result::saved::array(pair, "latency")
        .iter()
        .enumerate()
    {
        let mut figures = Vec::new();
        latency(
            l.get("oneway").unwrap_or(&Value::Null),
            l,
            &format!("latency[{j}].oneway."),
            &mut figures,
        )?;
        out.push(Subject {
            id: format!("{from}→{to} {} B latency", num(l, "size_bytes")?),
            figures,
            repeats: repeats_of(l),
            transport: None,
        });
    }
    for (j, b) in crate::result::saved::array(pair, "bandwidth")
        .iter()
        .enumerate()
    {
        out.push(Subject {
            id: format!("{from}→{to} {} B bandwidth", num(b, "size_bytes")?),
            figures: vec![
                rate(b, Statistic::Bandwidth, "bandwidth_MBps", "MB/s", 1.0)
                    .map_err(|e| format!("bandwidth[{j}].{e}"))?,
            ],
            repeats: repeats_of(b),
            transport: None,
        });
    }
    Ok(())
}
