//! Results are read back typed: every fixture (the old-file corpus) loads
//! into its experiment's run type, a result made now survives a trip
//! through JSON unchanged, and a field a reader needs that a file misspells
//! is refused or said, never read as zero.

mod common;

use common::turn;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use xferbench::SavedRun;
use xferbench::result::saved::AnyRun;

fn fixture(name: &str) -> Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

const FIXTURES: [&str; 10] = [
    "roundtrip.json",
    "roundtrip-repeats.json",
    "curve.json",
    "curve-repeats.json",
    "load.json",
    "flowgraph.json",
    "stream.json",
    "mesh.json",
    "mesh-partial.json",
    "pairs.json",
];

/// Every field of `part` is in `whole` with the same value (numbers
/// compared as numbers: a typed run writes `0` where a file said `0.0`).
fn contained(part: &Value, whole: &Value, at: &str) -> Result<(), String> {
    match (part, whole) {
        (Value::Object(p), Value::Object(w)) => {
            for (k, v) in p {
                let here = format!("{at}.{k}");
                match w.get(k) {
                    Some(x) => contained(v, x, &here)?,
                    // A typed run leaves out what is empty.
                    None if v.is_null() || v == &Value::Array(vec![]) => {}
                    None => return Err(format!("{here} lost")),
                }
            }
            Ok(())
        }
        (Value::Array(p), Value::Array(w)) if p.len() == w.len() => p
            .iter()
            .zip(w)
            .enumerate()
            .try_for_each(|(i, (a, b))| contained(a, b, &format!("{at}[{i}]"))),
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => Ok(()),
        // The mesh fixtures' generator said which way a finding was off;
        // their cells are always both ways (see `outliers::Side::Both`).
        (Value::String(a), Value::String(b))
            if at.ends_with(".finding.side") && ["high", "low"].contains(&a.as_str()) =>
        {
            (b == "both")
                .then_some(())
                .ok_or(format!("{at}: {a} became {b}"))
        }
        (a, b) if a == b => Ok(()),
        (a, b) => Err(format!("{at}: {a} became {b}")),
    }
}

#[test]
fn every_fixture_loads_into_its_experiments_typed_run() {
    for name in FIXTURES {
        let v = fixture(name);
        let run = AnyRun::from_value(v.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = v["experiment"].as_str().unwrap();
        let got = match &run {
            AnyRun::Roundtrip(_) => "roundtrip",
            AnyRun::Curve(_) => "curve",
            AnyRun::Load(_) => "load",
            AnyRun::Flowgraph(_) => "flowgraph",
            AnyRun::Stream(_) => "stream",
            AnyRun::Mesh(_) => "mesh",
            AnyRun::Pairs(_) => "pairs",
        };
        assert_eq!(got, want, "{name}");
        // Nothing the file says is lost; a file trimmed by hand gains the
        // defaults of what it leaves out.
        let back = serde_json::to_value(&run).unwrap();
        contained(&v, &back, name).unwrap_or_else(|e| panic!("{e}"));
        // Whole files come back as they were.
        if matches!(
            name,
            "roundtrip.json" | "roundtrip-repeats.json" | "curve.json" | "curve-repeats.json"
        ) {
            assert_eq!(back, v, "{name}");
        }
        // And a report says of none of them that it ignored a field.
        let saved = SavedRun::from_value(name, v).unwrap();
        assert!(
            saved.warnings.iter().all(|w| !w.contains("no field")),
            "{name}: {:?}",
            saved.warnings
        );
    }
}

/// `run` as JSON, read back into its own type and written again: the same
/// JSON.
fn round_trips<T: Serialize + DeserializeOwned>(what: &str, run: &T) -> Value {
    let v = serde_json::to_value(run).unwrap();
    let again: T = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(serde_json::to_value(&again).unwrap(), v, "{what}");
    v
}

/// A saved file read back typed and written again: the same JSON.
fn saved_round_trips(what: &str, v: Value) {
    let typed = AnyRun::from_value(v.clone()).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(serde_json::to_value(&typed).unwrap(), v, "{what}");
    let saved = SavedRun::from_value(what, v).unwrap();
    assert!(
        saved.warnings.iter().all(|w| !w.contains("no field")),
        "{what}: {:?}",
        saved.warnings
    );
}

#[test]
fn a_fresh_result_of_each_experiment_round_trips_through_json() {
    let _t = turn();
    let stop = AtomicBool::new(false);
    let threads = xferbench::transport::parse_specs("thread").unwrap();

    let mut rt = xferbench::RoundtripConfig::default();
    rt.common.transports = threads.clone();
    rt.in_sizes = vec![64];
    rt.out_sizes = vec![64];
    rt.common.amount = Some(xferbench::options::Amount::Samples(300));
    rt.common.warmup = Some(30);
    let (run, _) = xferbench::roundtrip(&rt, &stop, &()).unwrap();
    saved_round_trips("roundtrip", round_trips("roundtrip", &run));

    let mut cv = xferbench::CurveConfig::default();
    cv.common.transports = threads.clone();
    cv.sizes = vec![64, 4096];
    cv.common.amount = Some(xferbench::options::Amount::Samples(200));
    cv.common.warmup = Some(20);
    let (run, _) = xferbench::curve(&cv, &stop, &()).unwrap();
    saved_round_trips("curve", round_trips("curve", &run));

    let mut ld = xferbench::LoadConfig::default();
    ld.common.transports = threads.clone();
    ld.sizes = vec![512];
    ld.loads = vec![xferbench::measure::loadgen::LoadMode::Idle];
    ld.direction = vec![xferbench::options::DataDirection::Write];
    ld.cell_time = std::time::Duration::from_millis(20);
    let (run, _) = xferbench::load(&ld, &stop, &()).unwrap();
    saved_round_trips("load closed", round_trips("load closed", &run));
    ld.rate = Some(vec![2000.0]);
    let (run, _) = xferbench::load(&ld, &stop, &()).unwrap();
    saved_round_trips("load open", round_trips("load open", &run));

    let stop = Arc::new(AtomicBool::new(false));
    let mut fg = xferbench::FlowgraphConfig {
        cores: Some(vec![1]),
        blocks: Some(vec![1]),
        duration: std::time::Duration::from_millis(30),
        warmup: std::time::Duration::from_millis(10),
        kernel_sizes: vec![1024],
        ..Default::default()
    };
    fg.scheduler.truncate(1);
    let (run, _) = xferbench::flowgraph(&fg, &stop, &()).unwrap();
    saved_round_trips("flowgraph", round_trips("flowgraph", &run));

    let dir = tempfile::tempdir().unwrap();
    let flag = |k: &str, v: String| (k.to_string(), Some(v));
    let st = xferbench::StreamConfig {
        flags: xferbench::options::StreamFlags(vec![
            flag("filename", dir.path().join("f").display().to_string()),
            flag("rw", "write".into()),
            flag("size", "64k".into()),
            flag("bs", "4k".into()),
        ]),
        ..Default::default()
    };
    let (run, _) = xferbench::stream(&st, &stop, &()).unwrap();
    round_trips("stream run", &run);
    // A stream file is fio's layout, not the run's.
    let file: Value =
        serde_json::from_str(&xferbench::report::stream::json(&run).unwrap()).unwrap();
    saved_round_trips("stream file", file);
}

#[test]
fn mesh_and_pairs_results_round_trip_through_their_own_types() {
    // Made only under MPI: the fixtures stand in, read once into their run
    // type (which adds what they predate) and then round-tripped.
    for name in ["mesh.json", "mesh-partial.json"] {
        let run: xferbench::MeshRun =
            serde_json::from_value(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let v = round_trips(name, &run);
        saved_round_trips(name, v);
    }
    let run: xferbench::PairsRun = serde_json::from_value(fixture("pairs.json")).unwrap();
    let v = round_trips("pairs.json", &run);
    saved_round_trips("pairs.json", v);
}

fn renamed(v: &mut Value, path: &[&str], to: &str) {
    let (last, up) = path.split_last().unwrap();
    let mut o = &mut *v;
    for k in up {
        o = match k.parse::<usize>() {
            Ok(i) => &mut o[i],
            Err(_) => &mut o[*k],
        };
    }
    let o = o.as_object_mut().unwrap();
    let x = o.remove(*last).unwrap();
    o.insert(to.into(), x);
}

#[test]
fn a_misspelt_field_is_refused_or_said_never_read_as_zero() {
    // A field every version wrote: the file is refused, naming it.
    for (file, path, to, field) in [
        (
            "roundtrip.json",
            &["points", "0", "summary"][..],
            "sumary",
            "summary",
        ),
        (
            "curve.json",
            &["points", "1", "oneway"][..],
            "one_way",
            "oneway",
        ),
        (
            "flowgraph.json",
            &["kernel_only_sps"][..],
            "kernel_only_spss",
            "kernel_only_sps",
        ),
        (
            "load.json",
            &["points", "0", "req_per_s"][..],
            "reqs_per_s",
            "req_per_s",
        ),
        (
            "stream.json",
            &["jobs", "0", "write"][..],
            "writes",
            "write",
        ),
    ] {
        let mut v = fixture(file);
        renamed(&mut v, path, to);
        let e = SavedRun::from_value("x", v).unwrap_err().to_string();
        assert!(e.contains(&format!("`{field}`")), "{file}: {e}");
        assert_eq!(e.lines().count(), 1, "{file}: {e}");
    }
    // A field older or trimmed files may lack reads as absent, and a
    // misspelling of it is said beside the run's other caveats.
    let mut v = fixture("flowgraph.json");
    v["points"][0]["edge"] = "handoff".into();
    let r = SavedRun::from_value("x", v).unwrap();
    let w = r.warnings.last().unwrap();
    assert_eq!(
        w,
        "points[0].edge: no field of a saved flowgraph run (misspelt, or from a newer xferbench), ignored"
    );
    let mut v = fixture("load.json");
    renamed(&mut v, &["points", "0", "transport"], "transprt");
    let e = SavedRun::from_value("x", v).unwrap_err().to_string();
    assert!(e.contains("`transport`"), "{e}");
}

/// Every fixture with one field of its run or of its first point made
/// something else (null, text, a fraction, a negative number, a list, an
/// object, zero): read as `report` reads a file, each is a report or one
/// clean line of error, never a panic.
#[test]
fn hostile_edits_of_every_fixture_are_a_report_or_one_line() {
    let odd = [
        Value::Null,
        "x".into(),
        1.5.into(),
        (-1).into(),
        serde_json::json!([]),
        serde_json::json!({}),
        0.into(),
    ];
    for name in FIXTURES {
        let v = fixture(name);
        let list = if name == "stream.json" {
            "jobs"
        } else {
            "points"
        };
        let mut places: Vec<Vec<String>> = v
            .as_object()
            .unwrap()
            .keys()
            .map(|k| vec![k.clone()])
            .collect();
        if let Some(p) = v[list][0].as_object() {
            places.extend(p.keys().map(|k| vec![list.into(), "0".into(), k.clone()]));
        }
        for at in &places {
            for x in &odd {
                let mut e = v.clone();
                let (last, up) = at.split_last().unwrap();
                let mut o = &mut e;
                for k in up {
                    o = match k.parse::<usize>() {
                        Ok(i) => &mut o[i],
                        Err(_) => &mut o[k.as_str()],
                    };
                }
                o[last.as_str()] = x.clone();
                let bytes = serde_json::to_vec(&e).unwrap();
                if let Err(err) = xferbench::fuzzing::decode_saved_run(&bytes) {
                    let err = err.to_string();
                    assert_eq!(err.lines().count(), 1, "{name} {at:?} = {x}: {err}");
                }
            }
        }
    }
}
