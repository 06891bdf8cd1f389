//! A results file read back: the JSON any experiment writes with
//! `--format json`, deserialized into the experiment's own run type, so that
//! a field renamed in `result/` fails to compile in `report/` and `compare/`
//! instead of silently reading as absent.

use crate::error::{Error, Result};
use crate::measure::env::Env;
use crate::measure::placement::Placement;
use crate::result::RoundtripExtra;
use crate::result::curve::{CurveExtra, CurvePoint};
use crate::result::flowgraph::{FlowExtra, FlowPoint};
use crate::result::load::{LoadExtra, LoadPoint};
use crate::result::mesh::{MeshExtra, MeshPair, PairsExtra, PairsPoint};
use crate::result::stream::{DirStats, JobResult, StreamExtra};
use crate::result::{Point, PointMeta};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

mod read;

/// The most a results file may hold for `report` and `compare` to read it:
/// far above any run xferbench writes (a stream run of thousands of jobs
/// with fio's latency bins is tens of MiB), far below what would take a
/// machine's memory to read. Said in docs/report.md.
pub const MAX_FILE_BYTES: u64 = 512 << 20;

/// Below this size a file the typed reader does not take is read again the
/// long way, through a `Value`, for a message that names the field: that
/// costs many times the file's size.
const LONG_WAY_BYTES: usize = 64 << 20;

/// Memory a file takes to read, as a multiple of its size (its text, the
/// typed run, and one entry's JSON at a time), for the check before it is
/// read.
const READ_COST: u64 = 6;

/// One saved run: a [`Run`](crate::result::Run) as its file holds it. The
/// points and what the experiment adds beside them are the experiment's
/// own types; the bookkeeping around them may be absent, as in files
/// trimmed by hand or written before the field (no `env`, no `placement`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(bound(deserialize = "P: Deserialize<'de>, X: Deserialize<'de>"))]
pub struct Saved<P, X> {
    /// Which experiment wrote it.
    pub experiment: String,
    /// False when the run stopped early.
    #[serde(default = "yes")]
    pub complete: bool,
    /// Why it stopped early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    /// The machine it ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Env>,
    /// Every option in force: each experiment's own, so kept as JSON.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub options: Value,
    /// Where the initiator and responder ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// The measured points, in run order.
    #[serde(default)]
    pub points: Vec<P>,
    /// What the experiment adds beside its points.
    #[serde(flatten)]
    pub extra: X,
    /// Caveats on the whole run.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// What each link's device said of itself: whatever a plugin returned,
    /// so kept as JSON.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<Value>,
    /// The ceiling of each path the run crossed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<crate::result::limit::PathLimit>,
}

fn yes() -> bool {
    true
}

/// A saved stream run: fio's layout, `jobs` first, rather than a run's
/// `points` (see `report::stream::json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SavedStream {
    /// fio's version line, as fio's JSON has it.
    #[serde(
        rename = "fio version",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub fio_version: Option<String>,
    /// When the file was written, Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<u64>,
    /// The same in ms (fio's `timestamp_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp_ms: Option<u64>,
    /// The same as local time in words (fio's `time`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// Each job, or each group merged by `group_reporting`.
    #[serde(default)]
    pub jobs: Vec<StreamJob>,
    /// The jobs one by one, when `jobs` holds merged groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_job: Vec<JobResult>,
    /// Which experiment wrote it.
    pub experiment: String,
    /// False when the run stopped early.
    #[serde(default = "yes")]
    pub complete: bool,
    /// Why it stopped early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    /// The machine it ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Env>,
    /// Every option in force.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub options: Value,
    /// Where the initiator and responder ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// The groups, the job file and the sweep.
    #[serde(flatten)]
    pub extra: StreamExtra,
    /// Caveats on the whole run.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// What each link's device said of itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<Value>,
    /// The ceiling of each path the run crossed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<crate::result::limit::PathLimit>,
}

/// One entry of a saved stream run's `jobs`.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum StreamJob {
    /// A job as it ran.
    Job(Box<JobResult>),
    /// A `group_reporting` group's jobs as one.
    Group(Box<MergedGroup>),
}

/// A group's jobs reported as one (fio's `group_reporting`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MergedGroup {
    /// The group's first job's name.
    pub jobname: String,
    /// The group.
    pub groupid: u32,
    /// The first error of its jobs (0: none).
    pub error: i32,
    /// How many jobs it merges.
    pub jobs: u32,
    /// The swept block size the group ran at.
    pub sweep_bs: Option<u64>,
    /// Reads of all its jobs.
    pub read: DirStats,
    /// Writes of all its jobs.
    pub write: DirStats,
    /// Trims of all its jobs.
    pub trim: DirStats,
    /// fio's other keys of a job, its jobs' merged (flattened).
    #[serde(flatten)]
    pub fio: crate::result::stream::FioJob,
}

/// A merged group says how many jobs it merges; a job does not.
impl<'de> Deserialize<'de> for StreamJob {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let r = if v.get("jobs").is_some() {
            serde_json::from_value(v).map(StreamJob::Group)
        } else {
            serde_json::from_value(v).map(StreamJob::Job)
        };
        r.map_err(serde::de::Error::custom)
    }
}

impl StreamJob {
    /// The job's name.
    pub fn jobname(&self) -> &str {
        match self {
            StreamJob::Job(j) => &j.jobname,
            StreamJob::Group(g) => &g.jobname,
        }
    }

    /// Its reads, writes and trims, in that order.
    pub fn dirs(&self) -> [(&'static str, &DirStats); 3] {
        match self {
            StreamJob::Job(j) => [("read", &j.read), ("write", &j.write), ("trim", &j.trim)],
            StreamJob::Group(g) => [("read", &g.read), ("write", &g.write), ("trim", &g.trim)],
        }
    }

    /// The block size it ran at: the swept one, or the job's own (a merged
    /// group says only a swept one).
    pub fn block_size(&self) -> Option<u64> {
        match self {
            StreamJob::Job(j) => Some(j.sweep_bs.unwrap_or(j.bs)),
            StreamJob::Group(g) => g.sweep_bs,
        }
    }

    /// The job, when it is one rather than a merged group.
    pub fn job(&self) -> Option<&JobResult> {
        match self {
            StreamJob::Job(j) => Some(j),
            StreamJob::Group(_) => None,
        }
    }

    /// Its caveats (a merged group carries none of its own).
    pub fn warnings(&self) -> &[String] {
        match self {
            StreamJob::Job(j) => &j.warnings,
            StreamJob::Group(_) => &[],
        }
    }
}

/// The run a results file holds, typed by the experiment that wrote it.
/// Serializes back to the JSON it was read from (see the round-trip tests).
/// There is one per file read, so its variants' sizes differing costs
/// nothing worth a box.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)]
pub enum AnyRun {
    /// `xferbench roundtrip`.
    Roundtrip(Saved<Point, RoundtripExtra>),
    /// `xferbench curve`.
    Curve(Saved<CurvePoint, CurveExtra>),
    /// `xferbench load`.
    Load(Saved<LoadPoint, LoadExtra>),
    /// `xferbench flowgraph`.
    Flowgraph(Saved<FlowPoint, FlowExtra>),
    /// `xferbench stream`.
    Stream(Box<SavedStream>),
    /// `xferbench mesh`.
    Mesh(Saved<MeshPair, MeshExtra>),
    /// `xferbench mesh --pairs`.
    Pairs(Saved<PairsPoint, PairsExtra>),
}

/// Every experiment name a results file may carry.
const EXPERIMENTS: &str = "roundtrip, curve, load, flowgraph, stream, mesh, pairs";

impl AnyRun {
    /// The run in `value`, typed by its `experiment` field. The error says
    /// what did not fit (a missing or mistyped field), without the file.
    pub fn from_value(value: Value) -> std::result::Result<AnyRun, String> {
        /// The run, or what did not fit; in a point, which point (serde's
        /// own message names the field but not where it is).
        fn typed<T: serde::de::DeserializeOwned, P: serde::de::DeserializeOwned>(
            v: Value,
            list: &str,
        ) -> std::result::Result<T, String> {
            serde_json::from_value(v.clone()).map_err(|e| {
                let bad = v.get(list).and_then(Value::as_array).and_then(|a| {
                    a.iter().enumerate().find_map(|(i, p)| {
                        serde_json::from_value::<P>(p.clone()).err().map(|e| {
                            let e = e.to_string();
                            match located(p, &e) {
                                Some(at) => format!("{list}[{i}].{at}: {e}"),
                                None => format!("{list}[{i}]: {e}"),
                            }
                        })
                    })
                });
                bad.unwrap_or_else(|| {
                    let e = e.to_string();
                    match located(&v, &e) {
                        Some(at) => format!("{at}: {e}"),
                        None => e,
                    }
                })
            })
        }
        let experiment = value
            .get("experiment")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        Ok(match experiment.as_str() {
            "roundtrip" => AnyRun::Roundtrip(typed::<_, Point>(value, "points")?),
            "curve" => AnyRun::Curve(typed::<_, CurvePoint>(value, "points")?),
            "load" => AnyRun::Load(typed::<_, LoadPoint>(value, "points")?),
            "flowgraph" => AnyRun::Flowgraph(typed::<_, FlowPoint>(value, "points")?),
            "stream" => AnyRun::Stream(typed::<_, StreamJob>(value, "jobs")?),
            "mesh" => AnyRun::Mesh(typed::<_, MeshPair>(value, "points")?),
            "pairs" => AnyRun::Pairs(typed::<_, PairsPoint>(value, "points")?),
            e => {
                return Err(format!(
                    "unknown experiment {e:?}; xferbench writes {EXPERIMENTS}"
                ));
            }
        })
    }

    /// The bookkeeping every experiment's run has, whatever its points.
    fn common(&self) -> Common<'_> {
        macro_rules! common {
            ($r:expr) => {
                Common {
                    experiment: &$r.experiment,
                    complete: $r.complete,
                    stopped_by: $r.stopped_by.as_deref(),
                    env: $r.env.as_ref(),
                    options: &$r.options,
                    placement: $r.placement.as_ref(),
                    warnings: &$r.warnings,
                    devices: &$r.devices,
                }
            };
        }
        match self {
            AnyRun::Roundtrip(r) => common!(r),
            AnyRun::Curve(r) => common!(r),
            AnyRun::Load(r) => common!(r),
            AnyRun::Flowgraph(r) => common!(r),
            AnyRun::Stream(r) => common!(r),
            AnyRun::Mesh(r) => common!(r),
            AnyRun::Pairs(r) => common!(r),
        }
    }

    /// Every option in force when it ran.
    pub fn options(&self) -> &Value {
        self.common().options
    }

    /// Where the initiator and responder ran, when the file says.
    pub fn placement(&self) -> Option<&Placement> {
        self.common().placement
    }

    /// What each link's device said of itself.
    pub fn devices(&self) -> &[Value] {
        self.common().devices
    }

    /// The ceilings of the paths it crossed (none in runs written before
    /// they were recorded).
    pub fn limits(&self) -> &[crate::result::limit::PathLimit] {
        match self {
            AnyRun::Roundtrip(r) => &r.limits,
            AnyRun::Curve(r) => &r.limits,
            AnyRun::Load(r) => &r.limits,
            AnyRun::Flowgraph(r) => &r.limits,
            AnyRun::Stream(r) => &r.limits,
            AnyRun::Mesh(r) => &r.limits,
            AnyRun::Pairs(r) => &r.limits,
        }
    }

    /// How many points (stream: entries of `jobs`) it holds.
    pub fn len(&self) -> usize {
        self.point_warnings().len()
    }

    /// Whether it holds no point.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each point's (stream: each job's) caveats, in run order.
    pub fn point_warnings(&self) -> Vec<&[String]> {
        fn of<P: PointMeta>(ps: &[P]) -> Vec<&[String]> {
            ps.iter().map(PointMeta::warnings).collect()
        }
        match self {
            AnyRun::Roundtrip(r) => of(&r.points),
            AnyRun::Curve(r) => of(&r.points),
            AnyRun::Load(r) => of(&r.points),
            AnyRun::Flowgraph(r) => of(&r.points),
            AnyRun::Stream(r) => r.jobs.iter().map(StreamJob::warnings).collect(),
            AnyRun::Mesh(r) => of(&r.points),
            AnyRun::Pairs(r) => of(&r.points),
        }
    }

    /// The run's JSON without its lists of entries (`points`; a stream
    /// run's `jobs` and `per_job`), which may be most of it: those are
    /// made an entry at a time ([`AnyRun::entry_json`]).
    fn json_without_entries(&mut self) -> Option<Value> {
        macro_rules! without {
            ($r:expr) => {{
                let points = std::mem::take(&mut $r.points);
                let v = serde_json::to_value(&*$r);
                $r.points = points;
                v
            }};
        }
        let v = match self {
            AnyRun::Roundtrip(r) => without!(r),
            AnyRun::Curve(r) => without!(r),
            AnyRun::Load(r) => without!(r),
            AnyRun::Flowgraph(r) => without!(r),
            AnyRun::Mesh(r) => without!(r),
            AnyRun::Pairs(r) => without!(r),
            AnyRun::Stream(r) => {
                let jobs = std::mem::take(&mut r.jobs);
                let per_job = std::mem::take(&mut r.per_job);
                let v = serde_json::to_value(&**r);
                (r.jobs, r.per_job) = (jobs, per_job);
                v
            }
        };
        v.ok()
    }

    /// How many entries the list `key` holds, if the run has such a list.
    fn entries_len(&self, key: &str) -> Option<usize> {
        match (self, key) {
            (AnyRun::Stream(r), "jobs") => Some(r.jobs.len()),
            (AnyRun::Stream(r), "per_job") => Some(r.per_job.len()),
            (AnyRun::Stream(_), _) => None,
            (_, "points") => Some(self.point_warnings().len()),
            _ => None,
        }
    }

    /// Entry `n` of the list `key`, as JSON.
    fn entry_json(&self, key: &str, n: usize) -> Option<Value> {
        fn at<T: Serialize>(v: &[T], n: usize) -> Option<Value> {
            serde_json::to_value(v.get(n)?).ok()
        }
        match (self, key) {
            (AnyRun::Stream(r), "jobs") => at(&r.jobs, n),
            (AnyRun::Stream(r), "per_job") => at(&r.per_job, n),
            (AnyRun::Roundtrip(r), "points") => at(&r.points, n),
            (AnyRun::Curve(r), "points") => at(&r.points, n),
            (AnyRun::Load(r), "points") => at(&r.points, n),
            (AnyRun::Flowgraph(r), "points") => at(&r.points, n),
            (AnyRun::Mesh(r), "points") => at(&r.points, n),
            (AnyRun::Pairs(r), "points") => at(&r.points, n),
            _ => None,
        }
    }
}

/// Where in `v` the value a type error names is: serde says what it found
/// and what it wanted, not where, and a hand-edited figure should be named
/// with its field. Only a value found once is placed: a guess would send
/// the reader to the wrong field.
fn located(v: &Value, error: &str) -> Option<String> {
    let found = error
        .strip_prefix("invalid type: ")
        .or_else(|| error.strip_prefix("invalid value: "))?;
    let said = |x: &Value| -> String {
        match x {
            Value::Null => "null".into(),
            Value::Bool(b) => format!("boolean `{b}`"),
            Value::Number(n) if n.is_f64() => {
                let f = n.as_f64().unwrap_or_default();
                let t = f.to_string();
                if t.contains(['.', 'e', 'i', 'N']) {
                    format!("floating point `{t}`")
                } else {
                    format!("floating point `{t}.0`")
                }
            }
            Value::Number(n) => format!("integer `{n}`"),
            Value::String(s) => format!("string {s:?}"),
            Value::Array(_) => "sequence".into(),
            Value::Object(_) => "map".into(),
        }
    };
    fn walk(x: &Value, at: String, hit: &dyn Fn(&Value) -> bool, out: &mut Vec<String>) {
        match x {
            Value::Object(o) => {
                for (k, c) in o {
                    let here = if at.is_empty() {
                        k.clone()
                    } else {
                        format!("{at}.{k}")
                    };
                    walk(c, here, hit, out);
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    walk(c, format!("{at}[{i}]"), hit, out);
                }
            }
            _ => {}
        }
        if !at.is_empty() && hit(x) {
            out.push(at);
        }
    }
    let mut out = Vec::new();
    let hit = |x: &Value| {
        found
            .strip_prefix(said(x).as_str())
            .is_some_and(|rest| rest.starts_with(", expected"))
    };
    walk(v, String::new(), &hit, &mut out);
    match out.len() {
        1 => out.pop(),
        _ => None,
    }
}

struct Common<'a> {
    experiment: &'a str,
    complete: bool,
    stopped_by: Option<&'a str>,
    env: Option<&'a Env>,
    options: &'a Value,
    placement: Option<&'a Placement>,
    warnings: &'a [String],
    devices: &'a [Value],
}

/// A results file read back (any experiment, any version): what `report`
/// renders and `compare` compares.
#[derive(Clone, Debug)]
pub struct SavedRun {
    /// Names the run in legends and headings: the file stem, or the
    /// experiment for a run made in this process.
    pub label: String,
    /// The experiment that wrote it (`roundtrip`, `curve`…).
    pub experiment: String,
    /// The run itself, typed by its experiment.
    pub run: AnyRun,
    /// The machine it ran on.
    pub env: Option<Env>,
    /// False when the run stopped early.
    pub complete: bool,
    /// Why it stopped early.
    pub stopped_by: Option<String>,
    /// Caveats on the whole run.
    pub warnings: Vec<String>,
}

impl SavedRun {
    /// Reads a results file written with `--format json`: a regular file
    /// of [`MAX_FILE_BYTES`] at most (a device, a FIFO or a runaway file
    /// is refused, never read without end), read straight into its typed
    /// run (fields no run holds are skipped as they are read, and said).
    pub fn load(path: &Path) -> Result<SavedRun> {
        let text = read_bounded(path)?;
        let label = path
            .file_stem()
            .map_or("run".into(), |s| s.to_string_lossy().into_owned());
        let why = match read::typed(&text) {
            Ok((run, unknown)) => {
                drop(text);
                let experiment = run.common().experiment.to_string();
                let unknown = unknown.map(|(first, n)| unknown_said(&experiment, &first, n));
                return Ok(SavedRun::assemble(label, run, unknown));
            }
            Err(why) => why,
        };
        if text.len() > LONG_WAY_BYTES {
            return Err(Error::usage(format!(
                "{}: not an unedited xferbench result ({why}); give results files written with --format json",
                path.display()
            )));
        }
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            Error::usage(format!(
                "{} is not JSON ({e}); give results files written with --format json or -o FILE.json",
                path.display()
            ))
            .with_source(e)
        })?;
        drop(text);
        SavedRun::from_value(label, value).map_err(|e| {
            Error::usage(format!(
                "{}: {e}; give results files written with --format json",
                path.display()
            ))
            .with_source(e)
        })
    }

    /// A result already parsed, named `label`.
    pub fn from_value(label: impl Into<String>, value: Value) -> Result<SavedRun> {
        let experiment = value
            .get("experiment")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::usage("not an xferbench result (no \"experiment\" field)"))?
            .to_string();
        // The measured entries must be a list of objects: a result whose
        // points are something else is refused, as compare refuses it.
        let key = if experiment == "stream" {
            "jobs"
        } else {
            "points"
        };
        match value.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) => {
                if let Some(i) = a.iter().position(|e| !e.is_object()) {
                    return Err(Error::usage(format!(
                        "not an unedited xferbench result (\"{key}\"[{i}] is not an object)"
                    )));
                }
            }
            Some(_) => {
                return Err(Error::usage(format!(
                    "not an unedited xferbench result (\"{key}\" is not a list)"
                )));
            }
        }
        if !EXPERIMENTS.split(", ").any(|e| e == experiment) {
            return Err(Error::usage(format!(
                "not an xferbench result (unknown experiment {experiment:?}; xferbench writes {EXPERIMENTS})"
            )));
        }
        let run = AnyRun::from_value(value.clone()).map_err(|e| {
            Error::usage(format!(
                "not an unedited xferbench {experiment} result ({e})"
            ))
        })?;
        let unknown = unknown_fields(&experiment, &value, &run);
        Ok(SavedRun::assemble(label, run, unknown))
    }

    /// A saved run of `run`, with the warning of the fields it dropped.
    fn assemble(label: impl Into<String>, run: AnyRun, unknown: Option<String>) -> SavedRun {
        let mut warnings = run.common().warnings.to_vec();
        warnings.extend(unknown);
        let c = run.common();
        SavedRun {
            label: label.into(),
            experiment: c.experiment.to_string(),
            complete: c.complete,
            stopped_by: c.stopped_by.map(str::to_string),
            env: c.env.cloned(),
            warnings,
            run,
        }
    }

    /// Caveats on single points, each with how many points it applies to.
    pub fn point_warnings(&self) -> Vec<(String, usize)> {
        let mut out: Vec<(String, usize)> = Vec::new();
        for w in self.run.point_warnings().into_iter().flatten() {
            match out.iter_mut().find(|(x, _)| x == w) {
                Some((_, n)) => *n += 1,
                None => out.push((w.clone(), 1)),
            }
        }
        out
    }

    /// The command line that produced the run, quoted for a POSIX shell.
    pub fn command(&self) -> Option<String> {
        let argv = self.env.as_ref()?.command.as_slice();
        if argv.is_empty() {
            return None;
        }
        let mut words: Vec<String> = argv.iter().map(|a| shell_quote(a)).collect();
        // The path the binary was run by says nothing about the run.
        if let Some(first) = words.first_mut()
            && first.ends_with("xferbench")
        {
            *first = "xferbench".into();
        }
        Some(words.join(" "))
    }
}

/// The fields of `value` its typed run does not hold, as one warning: a
/// misspelt or renamed field reads as absent (its default) rather than
/// refusing the file, which may come from a newer xferbench, so it is said.
/// Empty and null fields are left out: the typed run omits those too.
fn unknown_fields(experiment: &str, value: &Value, run: &AnyRun) -> Option<String> {
    fn walk(given: &Value, kept: &Value, at: &str, out: &mut Vec<String>) {
        let empty = |v: &Value| match v {
            Value::Null => true,
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            _ => false,
        };
        match (given, kept) {
            (Value::Object(g), Value::Object(k)) => {
                for (name, v) in g {
                    let here = if at.is_empty() {
                        name.clone()
                    } else {
                        format!("{at}.{name}")
                    };
                    match k.get(name) {
                        Some(kv) => walk(v, kv, &here, out),
                        None if !empty(v) => out.push(here),
                        None => {}
                    }
                }
            }
            (Value::Array(g), Value::Array(k)) if g.len() == k.len() => {
                for (i, (gv, kv)) in g.iter().zip(k).enumerate() {
                    walk(gv, kv, &format!("{at}[{i}]"), out);
                }
            }
            _ => {}
        }
    }
    let kept = serde_json::to_value(run).ok()?;
    let mut out = Vec::new();
    walk(value, &kept, "", &mut out);
    let first = out.first()?;
    Some(unknown_said(experiment, first, out.len()))
}

/// The warning for `n` fields no run holds, the first at `first`.
fn unknown_said(experiment: &str, first: &str, n: usize) -> String {
    let more = match n {
        1 => String::new(),
        n => format!(" and {} more", n - 1),
    };
    format!(
        "{first}{more}: no field of a saved {experiment} run (misspelt, or from a newer xferbench), ignored"
    )
}

/// A results file's text: a regular file (not a device, FIFO or
/// directory, whose reading may never end) of at most
/// [`MAX_FILE_BYTES`], and only when the memory reading it takes is there.
fn read_bounded(path: &Path) -> Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let cannot = |e: std::io::Error| {
        Error::usage(format!(
            "cannot read {}: {e}; give results files written with --format json or -o FILE.json",
            path.display()
        ))
        .with_source(e)
    };
    // Non-blocking: a FIFO with no writer would hold the open for ever.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(cannot)?;
    let meta = f.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(Error::usage(format!(
            "{} is not a regular file (a device, FIFO, socket or directory); give results files written with --format json or -o FILE.json",
            path.display()
        )));
    }
    let too_big = || {
        Error::usage(format!(
            "{} is larger than {} MiB, more than a results file holds (report and compare read {} MiB at most); give results files written with --format json",
            path.display(),
            MAX_FILE_BYTES >> 20,
            MAX_FILE_BYTES >> 20
        ))
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_big());
    }
    crate::measure::room::check_memory(
        meta.len().saturating_mul(READ_COST),
        &format!("reading {}", path.display()),
        "read it on a machine with more memory",
    )?;
    let mut text = String::new();
    text.try_reserve_exact(meta.len() as usize + 1)
        .map_err(|e| cannot(std::io::Error::other(e.to_string())))?;
    f.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(cannot)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big());
    }
    Ok(text)
}

/// What a file says for `x` (an enum's word, a chunk's size or word), as
/// the report shows it: the serialized form, which for some enums is not
/// their `name()` (`Rw::ReadWrite` is written `readwrite`, named `rw`).
pub fn written<T: Serialize>(x: &T) -> String {
    match serde_json::to_value(x) {
        Ok(Value::String(s)) => s,
        Ok(v) => v.to_string(),
        Err(_) => String::new(),
    }
}

fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A saved run for a unit test that names only the fields it is about: the
/// rest comes from the fixture of its experiment (`tests/fixtures/`), each
/// given point laid over the fixture's first point, so that the test still
/// reads as the few fields that matter while the run is a whole one.
#[cfg(test)]
pub(crate) fn sketch(label: &str, given: Value) -> Result<SavedRun> {
    fn over(base: &mut Value, top: &Value) {
        match (base, top) {
            (Value::Object(b), Value::Object(t)) => {
                for (k, v) in t {
                    match b.get_mut(k) {
                        Some(x) if x.is_object() && v.is_object() => over(x, v),
                        _ => {
                            b.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            (b, t) => *b = t.clone(),
        }
    }
    let experiment = given["experiment"].as_str().unwrap_or_default();
    let mut base: Value = serde_json::from_str(match experiment {
        "roundtrip" => include_str!("../../../../tests/fixtures/roundtrip.json"),
        "curve" => include_str!("../../../../tests/fixtures/curve.json"),
        "load" => include_str!("../../../../tests/fixtures/load.json"),
        "flowgraph" => include_str!("../../../../tests/fixtures/flowgraph.json"),
        "stream" => include_str!("../../../../tests/fixtures/stream.json"),
        "mesh" => include_str!("../../../../tests/fixtures/mesh.json"),
        "pairs" => include_str!("../../../../tests/fixtures/pairs.json"),
        _ => "{}",
    })
    .expect("a fixture");
    let list = if experiment == "stream" {
        "jobs"
    } else {
        "points"
    };
    let first = base[list][0].clone();
    let mut given = given;
    if let Some(points) = given.get_mut(list).and_then(Value::as_array_mut) {
        for p in points {
            let mut whole = first.clone();
            over(&mut whole, p);
            *p = whole;
        }
    }
    over(&mut base, &given);
    SavedRun::from_value(label, base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refuses_json_that_is_not_a_result() {
        let e = SavedRun::from_value("x", json!({"a": 1})).unwrap_err();
        assert!(e.to_string().contains("experiment"));
    }

    #[test]
    fn counts_point_warnings_and_quotes_the_command() {
        let v = json!({
            "experiment": "roundtrip",
            "complete": false,
            "stopped_by": "interrupted",
            "env": {"tool":"xferbench","version":"0","timestamp":"t","hostname":"h","kernel":"k",
                "arch":"a","cpu_model":"c","cpus_online":2,"cpus_allowed":2,
                "virtualization":{"virtual_machine":true,"hypervisor":null,"container":null},
                "clock":{"source":"s","kernel_clocksource":null,"overhead_ns":20.0,"min_step_ns":10,"resolution_ns":1},
                "governor":null,"command":["/x/xferbench","roundtrip","--in","64 k's"]},
            "points": [{"warnings": ["a", "b"]}, {"warnings": ["a"]}],
            "warnings": ["vm"],
        });
        let r = sketch("x", v).unwrap();
        assert!(!r.complete);
        assert_eq!(r.warnings, ["vm"]);
        assert_eq!(
            r.point_warnings(),
            [("a".to_string(), 2), ("b".to_string(), 1)]
        );
        assert_eq!(
            r.command().unwrap(),
            r"xferbench roundtrip --in '64 k'\''s'"
        );
    }
}
