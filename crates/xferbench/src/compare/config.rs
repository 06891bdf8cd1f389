//! What must be the same for two runs to be compared as like with like:
//! the options that change figures, and the machine they ran on. Options
//! that only shape the output, and those that pick points (sizes,
//! transports, modes: points are matched one by one) do not count. A
//! transport given other options in the other run (firmware A against
//! firmware B) is the same transport set up differently: its points are
//! paired and the options listed as differences.

use super::extract::{Measured, Subject};
use crate::result::saved::{AnyRun, SavedRun, StreamJob};
use serde::Serialize;
use serde_json::Value;

/// Options that do not change a point's figures: output, display, and
/// what selects the points (matched by identity instead).
const NOT_FIGURES: &[&str] = &[
    "baseline",
    "save_baseline",
    "compare",
    "format",
    "output",
    "repeat",
    "stats",
    "unit",
    "timeout_s",
    "transports",
    "buffers",
    "completion",
    "in",
    "out",
    "sizes",
    "job",
    "filename",
    "quiet",
];

/// The environment fields that change figures.
const ENV: &[&str] = &[
    "hostname",
    "kernel",
    "arch",
    "cpu_model",
    "cpus_online",
    "governor",
];

/// Job fields of a stream run that change its figures.
const JOB: &[&str] = &[
    "rw",
    "bs",
    "size",
    "ioengine",
    "iodepth",
    "direct",
    "iomem",
    "completion",
    "rate",
];

/// One way the two runs differ.
#[derive(Clone, Debug, Serialize)]
pub struct Difference {
    /// `transport`, `option`, `environment`, `job` or `version`.
    pub kind: &'static str,
    /// The option or field.
    pub what: String,
    /// Its value in the base run.
    pub base: String,
    /// Its value in the new run.
    pub new: String,
}

fn show(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "(none)".into(),
        Some(Value::String(s)) => s.clone(),
        Some(x) => x.to_string(),
    }
}

/// The options of a run that change figures, as (name, value), sorted.
fn figure_options(run: &SavedRun) -> Vec<(String, Value)> {
    let mut v: Vec<(String, Value)> = run
        .run
        .options()
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| !NOT_FIGURES.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// One of the environment's fields, by the name differences show it under.
fn env_field(run: &SavedRun, k: &str) -> Option<Value> {
    let e = run.env.as_ref()?;
    Some(match k {
        "hostname" => e.hostname.clone().into(),
        "kernel" => e.kernel.clone().into(),
        "arch" => e.arch.clone().into(),
        "cpu_model" => e.cpu_model.clone().into(),
        "cpus_online" => e.cpus_online.into(),
        "governor" => e.governor.clone().into(),
        "version" => e.version.clone().into(),
        _ => return None,
    })
}

/// A short hash of what must match (figure-changing options and the
/// environment), to tell at a glance whether two runs are comparable.
pub fn hash(run: &SavedRun) -> String {
    let mut text = String::new();
    for (k, v) in figure_options(run) {
        text += &format!("{k}={v};");
    }
    for k in ENV {
        text += &format!("{k}={};", show(env_field(run, k).as_ref()));
    }
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(text.as_bytes()))
}

/// Every way `base` and `new` differ in what changes figures.
pub fn differences(base: &SavedRun, new: &SavedRun) -> Vec<Difference> {
    let mut out = Vec::new();
    let (bo, no) = (figure_options(base), figure_options(new));
    let mut keys: Vec<&String> = bo.iter().chain(no.iter()).map(|(k, _)| k).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let get = |o: &[(String, Value)]| o.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone());
        let (b, n) = (get(&bo), get(&no));
        if b != n {
            out.push(Difference {
                kind: "option",
                what: k.clone(),
                base: show(b.as_ref()),
                new: show(n.as_ref()),
            });
        }
    }
    for k in ENV {
        let (b, n) = (env_field(base, k), env_field(new, k));
        if b != n {
            out.push(Difference {
                kind: "environment",
                what: (*k).into(),
                base: show(b.as_ref()),
                new: show(n.as_ref()),
            });
        }
    }
    if base.experiment == "stream" {
        jobs(base, new, &mut out);
    }
    let (bv, nv) = (env_field(base, "version"), env_field(new, "version"));
    if bv != nv {
        out.push(Difference {
            kind: "version",
            what: "xferbench".into(),
            base: show(bv.as_ref()),
            new: show(nv.as_ref()),
        });
    }
    out
}

/// Stream jobs of the same name that were set up differently.
fn jobs(base: &SavedRun, new: &SavedRun, out: &mut Vec<Difference>) {
    use super::extract::stream_job_name;
    let (AnyRun::Stream(bs), AnyRun::Stream(ns)) = (&base.run, &new.run) else {
        return;
    };
    for b in &bs.jobs {
        let name = stream_job_name(b);
        let Some(n) = ns.jobs.iter().find(|n| stream_job_name(n) == name) else {
            continue;
        };
        if let (Some(bj), Some(nj)) = (b.job(), n.job()) {
            xfer_differences(&name, &bj.filename, &nj.filename, out);
        }
        let (bf, nf) = (job_fields(b), job_fields(n));
        for (k, (bv, nv)) in JOB.iter().zip(bf.iter().zip(&nf)) {
            if bv != nv {
                let what = format!("job {name}: {k}");
                if !out.iter().any(|d| d.what == what) {
                    out.push(Difference {
                        kind: "job",
                        what,
                        base: show(bv.as_ref()),
                        new: show(nv.as_ref()),
                    });
                }
            }
        }
    }
}

/// How two jobs' transports (`filename=xfer:SPEC`) differ: another
/// transport, or the same one given other options (a plugin's `bw=1g`
/// against `bw=500m`), each option a difference of its own. A job's file
/// paths are not compared (`--map` moves them); its transport's options
/// change its figures.
fn xfer_differences(job: &str, base: &str, new: &str, out: &mut Vec<Difference>) {
    let prefix = crate::fio::job::TRANSPORT_PREFIX;
    let (Some(b), Some(n)) = (base.strip_prefix(prefix), new.strip_prefix(prefix)) else {
        return;
    };
    let ((bn, bo), (nn, no)) = (split_spec(b), split_spec(n));
    let mut push = |what: String, base: String, new: String| {
        if !out.iter().any(|d| d.what == what) {
            out.push(Difference {
                kind: "transport",
                what,
                base,
                new,
            });
        }
    };
    if bn != nn {
        push(format!("job {job}: transport"), bn.into(), nn.into());
        return;
    }
    let mut keys: Vec<&str> = bo.iter().map(|(k, _)| *k).collect();
    keys.extend(
        no.iter()
            .map(|(k, _)| *k)
            .filter(|k| !bo.iter().any(|(x, _)| x == k)),
    );
    for k in keys {
        let get = |o: &[(&str, &str)]| o.iter().find(|(x, _)| *x == k).map(|(_, v)| v.to_string());
        let (bv, nv) = (get(&bo), get(&no));
        if bv != nv {
            let none = || "(none)".to_string();
            push(
                format!("job {job}: {bn} option {k}"),
                bv.unwrap_or_else(none),
                nv.unwrap_or_else(none),
            );
        }
    }
}

/// A job's [`JOB`] fields, in that order, as the file writes them (none
/// for a merged group, which has no one setting of its own).
fn job_fields(j: &StreamJob) -> Vec<Option<Value>> {
    fn v<T: Serialize>(x: &T) -> Option<Value> {
        serde_json::to_value(x).ok()
    }
    match j.job() {
        Some(j) => vec![
            v(&j.rw),
            v(&j.bs),
            v(&j.size),
            v(&j.ioengine),
            v(&j.iodepth),
            v(&j.direct),
            v(&j.iomem),
            v(&j.completion),
            j.rate.map(Value::from),
        ],
        None => vec![None; JOB.len()],
    }
}

/// Spec options the point's own fields already carry (its buffer and
/// completion mode are part of its identity): not a difference.
const MODES: &[&str] = &["buffers", "completion"];

/// A saved spec as name and options, as `transport::Spec` writes it
/// (`name:k=v,k=v`). Parsed here rather than by `transport::parse_specs`,
/// which would look the transport up (and load a plugin) on this machine.
/// A remote address, or anything not in that shape, is all name.
fn split_spec(spec: &str) -> (&str, Vec<(&str, &str)>) {
    if spec.contains("://") {
        return (spec, Vec::new());
    }
    let Some((name, opts)) = spec.split_once(':') else {
        return (spec, Vec::new());
    };
    let mut out: Vec<(&str, &str)> = Vec::new();
    // A value may be quoted, commas and colons inside it (`ids="1,2"`).
    for kv in crate::transport::split_unquoted(opts, &[',', ':']) {
        let Some((k, v)) = kv.split_once('=') else {
            return (spec, Vec::new());
        };
        let v = crate::transport::unquote(v);
        // The last one wins, as in `Spec::get`.
        out.retain(|(x, _)| *x != k);
        out.push((k, v));
    }
    (name, out)
}

/// Whether two points' transports could be one device set up twice: the
/// same transport, and for plugins the same plugin where both runs say.
fn same_kind(a: &Measured, b: &Measured) -> bool {
    a.kind == b.kind
        && match (&a.device, &b.device) {
            (Some(x), Some(y)) => x == y,
            _ => true,
        }
}

/// How a base spec and a new spec differ, and the one name both runs'
/// points go by: the spec with each differing option written `k=base→new`
/// (modes left out: the point names its own).
fn spec_differences(b: &Measured, n: &Measured) -> (Vec<Difference>, String) {
    let ((bn, bo), (nn, no)) = (split_spec(&b.spec), split_spec(&n.spec));
    let mut diffs = Vec::new();
    let mut label = if bn == nn {
        bn.to_string()
    } else {
        diffs.push(Difference {
            kind: "transport",
            what: b.kind.clone(),
            base: bn.into(),
            new: nn.into(),
        });
        format!("{bn}→{nn}")
    };
    let mut keys: Vec<&str> = bo.iter().map(|(k, _)| *k).collect();
    keys.extend(
        no.iter()
            .map(|(k, _)| *k)
            .filter(|k| !bo.iter().any(|(x, _)| x == k)),
    );
    let mut shown = Vec::new();
    for k in keys {
        let get = |o: &[(&str, &str)]| o.iter().find(|(x, _)| *x == k).map(|(_, v)| v.to_string());
        let (bv, nv) = (get(&bo), get(&no));
        if bv == nv {
            shown.push(format!("{k}={}", bv.unwrap_or_default()));
        } else if !MODES.contains(&k) {
            let none = || "(none)".to_string();
            let (bv, nv) = (bv.unwrap_or_else(none), nv.unwrap_or_else(none));
            shown.push(format!("{k}={bv}→{nv}"));
            diffs.push(Difference {
                kind: "transport",
                what: format!("{} option {k}", b.kind),
                base: bv,
                new: nv,
            });
        }
    }
    if !shown.is_empty() {
        label += &format!(":{}", shown.join(","));
    }
    (diffs, label)
}

/// The distinct transports of a run's points, in run order.
fn transports(subjects: &[Subject]) -> Vec<Measured> {
    let mut out: Vec<Measured> = Vec::new();
    for m in subjects.iter().filter_map(|s| s.transport.as_ref()) {
        if !out.iter().any(|x| x.spec == m.spec) {
            out.push(m.clone());
        }
    }
    out
}

/// Pairs each transport found in one run only with the other run's
/// transport of the same kind, where each run has exactly one such left
/// (so pairing is never a guess), renames both sides' points to one name,
/// and returns how the paired specs differ. Specs found in both runs pair
/// with themselves; transports of different kinds never pair.
pub fn pair_transports(bs: &mut [Subject], ns: &mut [Subject]) -> Vec<Difference> {
    let (bt, nt) = (transports(bs), transports(ns));
    let lone = |mine: &[Measured], theirs: &[Measured]| -> Vec<Measured> {
        mine.iter()
            .filter(|m| !theirs.iter().any(|t| t.spec == m.spec))
            .cloned()
            .collect()
    };
    let (lb, ln) = (lone(&bt, &nt), lone(&nt, &bt));
    let mut out = Vec::new();
    for b in &lb {
        let bk: Vec<&Measured> = lb.iter().filter(|x| same_kind(x, b)).collect();
        let nk: Vec<&Measured> = ln.iter().filter(|x| same_kind(x, b)).collect();
        let ([_], [n]) = (bk.as_slice(), nk.as_slice()) else {
            continue;
        };
        let (diffs, label) = spec_differences(b, n);
        out.extend(diffs);
        for (side, spec) in [(&mut *bs, &b.spec), (&mut *ns, &n.spec)] {
            for s in side.iter_mut() {
                if s.transport.as_ref().is_some_and(|m| &m.spec == spec)
                    && let Some(rest) = s.id.strip_prefix(spec.as_str())
                {
                    s.id = format!("{label}{rest}");
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(options: Value, host: &str) -> SavedRun {
        crate::result::saved::sketch(
            "r",
            json!({"experiment": "roundtrip", "options": options,
                   "env": {"hostname": host, "kernel": "k", "version": "0.1.0"}, "points": []}),
        )
        .unwrap()
    }

    #[test]
    fn output_and_point_selection_do_not_count_but_figures_do() {
        let a = run(
            json!({"format": "json", "in": [64], "samples": 1000, "responder_delay_s": 0.0}),
            "h",
        );
        let b = run(
            json!({"format": "table", "in": [64, 128], "samples": 1000, "responder_delay_s": 0.0}),
            "h",
        );
        assert!(differences(&a, &b).is_empty());
        assert_eq!(hash(&a), hash(&b));
        let c = run(json!({"samples": 1000, "responder_delay_s": 2e-6}), "other");
        let d = differences(&a, &c);
        let whats: Vec<&str> = d.iter().map(|d| d.what.as_str()).collect();
        assert_eq!(whats, ["responder_delay_s", "hostname"]);
        assert_ne!(hash(&a), hash(&c));
    }
}

#[cfg(test)]
mod pairing {
    use super::*;

    fn point(spec: &str, kind: &str, device: Option<&str>, size: u32) -> Subject {
        Subject {
            id: format!("{spec} user/poll in {size} out 64"),
            figures: Vec::new(),
            repeats: 1,
            transport: Some(Measured {
                spec: spec.into(),
                kind: kind.into(),
                device: device.map(str::to_string),
            }),
        }
    }

    fn ids(v: &[Subject]) -> Vec<&str> {
        v.iter().map(|s| s.id.as_str()).collect()
    }

    #[test]
    fn one_device_with_other_options_pairs_and_lists_each_option() {
        let a = "plugin:path=./fw.so,lat=5us,completion=poll";
        let b = "plugin:path=./fw.so,lat=7us,bw=1g,completion=block";
        let mut bs = vec![
            point(a, "plugin", Some("sim"), 64),
            point(a, "plugin", Some("sim"), 128),
        ];
        let mut ns = vec![point(b, "plugin", Some("sim"), 64)];
        let d = pair_transports(&mut bs, &mut ns);
        let got: Vec<(&str, &str, &str)> = d
            .iter()
            .map(|d| (d.what.as_str(), d.base.as_str(), d.new.as_str()))
            .collect();
        // Modes are the point's own fields, not differences.
        assert_eq!(
            got,
            [
                ("plugin option lat", "5us", "7us"),
                ("plugin option bw", "(none)", "1g")
            ]
        );
        let label = "plugin:path=./fw.so,lat=5us→7us,bw=(none)→1g";
        assert_eq!(ids(&bs)[0], format!("{label} user/poll in 64 out 64"));
        assert_eq!(ids(&ns)[0], ids(&bs)[0]);
        assert_eq!(ids(&bs)[1], format!("{label} user/poll in 128 out 64"));
    }

    #[test]
    fn other_transports_other_plugins_and_guesses_do_not_pair() {
        // tcp against unix: nothing in common, as before.
        let mut bs = vec![point("tcp", "tcp", None, 64)];
        let mut ns = vec![point("unix", "unix", None, 64)];
        assert!(pair_transports(&mut bs, &mut ns).is_empty());
        assert_ne!(ids(&bs), ids(&ns));
        // Two plugins are two devices.
        let mut bs = vec![point("plugin:path=./a.so", "plugin", Some("a"), 64)];
        let mut ns = vec![point("plugin:path=./b.so", "plugin", Some("b"), 64)];
        assert!(pair_transports(&mut bs, &mut ns).is_empty());
        assert_ne!(ids(&bs), ids(&ns));
        // Two tcp variants on each side, none alike: which is which is a guess.
        let mut bs = vec![
            point("tcp:nodelay=0", "tcp", None, 64),
            point("tcp:nodelay=1", "tcp", None, 64),
        ];
        let mut ns = vec![
            point("tcp:nodelay=0,x=1", "tcp", None, 64),
            point("tcp:nodelay=1,x=1", "tcp", None, 64),
        ];
        assert!(pair_transports(&mut bs, &mut ns).is_empty());
        assert!(ids(&bs).iter().all(|b| !ids(&ns).contains(b)));
        // The same spec on both sides keeps its name; the lone others pair.
        let mut bs = vec![
            point("tcp", "tcp", None, 64),
            point("tcp:nodelay=0", "tcp", None, 64),
        ];
        let mut ns = vec![
            point("tcp", "tcp", None, 64),
            point("tcp:nodelay=1", "tcp", None, 64),
        ];
        let d = pair_transports(&mut bs, &mut ns);
        assert_eq!(d.len(), 1);
        assert_eq!(ids(&bs)[0], "tcp user/poll in 64 out 64");
        assert_eq!(ids(&bs)[1], ids(&ns)[1]);
    }

    #[test]
    fn a_remote_address_is_the_transport_not_an_option() {
        let k = "tcp://HOST:PORT";
        let mut bs = vec![point("tcp://10.0.0.1:7000", k, None, 64)];
        let mut ns = vec![point("tcp://10.0.0.2:7000", k, None, 64)];
        let d = pair_transports(&mut bs, &mut ns);
        assert_eq!(d.len(), 1);
        assert_eq!(
            (d[0].base.as_str(), d[0].new.as_str()),
            ("tcp://10.0.0.1:7000", "tcp://10.0.0.2:7000")
        );
        assert_eq!(ids(&bs), ids(&ns));
    }
}
