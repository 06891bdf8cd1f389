//! `xferbench compare`: verdicts on known changes (a file against itself, a
//! hand-made 1% and 50% change, a real 2 µs responder delay), the exit
//! status a CI gate reads, every output format, baselines, and the refusals
//! (other experiment, other configuration, nothing in common, a broken file).

mod common;

use common::{finish, stderr, xferbench};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A small real run: thread round trips at two sizes, three repeats.
fn measure(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let mut c = xferbench();
    c.args([
        "roundtrip",
        "-t",
        "thread",
        "--in",
        "64,256",
        "--out",
        "64",
        "--samples",
        "2000",
        "--warmup",
        "200",
        "--repeat",
        "3",
        "--quiet",
        "-o",
    ])
    .arg(&path)
    .args(extra);
    let o = finish(c);
    assert!(o.status.success(), "{}", stderr(&o));
    path
}

fn compare(args: &[&str], files: &[&Path]) -> Output {
    let mut c = xferbench();
    c.arg("compare").args(files).args(args);
    finish(c)
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&o.stdout)))
}

/// Multiplies every latency figure of every point (headline, repeats and
/// blocks) by `f`: the same run, made `f` times slower.
fn scaled(src: &Path, dst: &Path, f: f64) {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(src).unwrap()).unwrap();
    fn scale(o: &mut Value, f: f64) {
        if let Some(m) = o.as_object_mut() {
            for (k, x) in m.iter_mut() {
                if k.ends_with("_ns")
                    && let Some(n) = x.as_f64()
                {
                    // A summary's counts of ns are whole numbers.
                    *x = if x.is_u64() {
                        ((n * f).round() as u64).into()
                    } else {
                        (n * f).into()
                    };
                }
            }
        }
    }
    for p in v["points"].as_array_mut().unwrap() {
        scale(&mut p["summary"], f);
        for list in ["repeats", "intervals"] {
            for r in p[list].as_array_mut().unwrap() {
                scale(r, f);
            }
        }
    }
    std::fs::write(dst, serde_json::to_string(&v).unwrap()).unwrap();
}

/// A real run whose repeats are made steady: each repeat's and block's
/// figures are the headline ± 0.1%, so verdicts on hand-made changes do not
/// hang on this machine's noise.
fn steady(dir: &Path) -> PathBuf {
    let src = measure(dir, "real.json", &[]);
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&src).unwrap()).unwrap();
    for p in v["points"].as_array_mut().unwrap() {
        let head = p["summary"].clone();
        for list in ["repeats", "intervals"] {
            for (i, r) in p[list].as_array_mut().unwrap().iter_mut().enumerate() {
                let f = [0.999, 1.0, 1.001][i % 3];
                for (k, x) in r.as_object_mut().unwrap().iter_mut() {
                    if let Some(h) = head[k.as_str()].as_f64()
                        && k.ends_with("_ns")
                    {
                        *x = (h * f).into();
                    }
                }
            }
        }
    }
    let path = dir.join("a.json");
    std::fs::write(&path, v.to_string()).unwrap();
    path
}

fn verdicts(c: &Value) -> Vec<(String, String)> {
    c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["stat"].as_str().unwrap().to_string(),
                r["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_run_against_itself_is_no_change_and_a_1_percent_change_within_5_is_too() {
    let _t = common::turn();
    let dir = tempfile::tempdir().unwrap();
    // The same run 1000 times slower: a summary's figures are whole ns, and
    // a 1% change of a 140 ns median would not survive the rounding.
    let a = dir.path().join("big.json");
    scaled(&steady(dir.path()), &a, 1000.0);
    let o = compare(&["--format", "json"], &[&a, &a]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let c = json_of(&o);
    assert!(verdicts(&c).iter().all(|(_, v)| v == "no_change"), "{c}");
    assert_eq!(c["rows"][0]["method"], "repeats");
    assert_eq!(c["rows"][0]["n"], serde_json::json!([3, 3]));

    let b = dir.path().join("b.json");
    scaled(&a, &b, 1.01);
    let o = compare(&["--noise", "5%", "--format", "json"], &[&a, &b]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let c = json_of(&o);
    for r in c["rows"].as_array().unwrap() {
        assert_eq!(r["verdict"], "no_change", "{r}");
        assert!((r["change"].as_f64().unwrap() - 0.01).abs() < 0.002, "{r}");
        let ci = r["interval"].as_array().unwrap();
        assert!(ci[0].as_f64().unwrap() <= 0.0101 && ci[1].as_f64().unwrap() >= 0.0099);
    }
    // With a threshold below the change, the same 1% is a regression.
    let o = compare(&["--noise", "0.1%"], &[&a, &b]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("regressed"), "{}", stderr(&o));
}

#[test]
fn a_50_percent_slowdown_regresses_and_the_gate_follows_fail_on_and_strict() {
    let _t = common::turn();
    let dir = tempfile::tempdir().unwrap();
    let a = steady(dir.path());
    let b = dir.path().join("slow.json");
    scaled(&a, &b, 1.5);
    let o = compare(&["--format", "json"], &[&a, &b]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let c = json_of(&o);
    assert!(c["failed"].as_bool().unwrap());
    assert!(verdicts(&c).iter().all(|(_, v)| v == "regressed"), "{c}");
    // Improvements the other way round, and no failure.
    let o = compare(&["--format", "json"], &[&b, &a]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(verdicts(&json_of(&o)).iter().all(|(_, v)| v == "improved"));
    // Only bandwidth gates: a round trip has none, so nothing fails.
    let o = compare(&["--fail-on", "bandwidth"], &[&a, &b]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("(no gate)"), "{text}");
    // --strict fails on inconclusive figures: a file against a noisy copy
    // 8% slower, a change beyond the threshold that is not significant.
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    for p in v["points"].as_array_mut().unwrap() {
        p["summary"]["p50_ns"] =
            ((p["summary"]["p50_ns"].as_f64().unwrap() * 1.08).round() as u64).into();
        let reps = p["repeats"].as_array_mut().unwrap();
        for (i, r) in reps.iter_mut().enumerate() {
            let f = [0.5, 1.0, 1.6][i % 3];
            r["p50_ns"] = (r["p50_ns"].as_f64().unwrap() * f).into();
        }
    }
    let noisy = dir.path().join("noisy.json");
    std::fs::write(&noisy, v.to_string()).unwrap();
    let o = compare(&["--stats", "p50", "--format", "json"], &[&a, &noisy]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        verdicts(&json_of(&o))
            .iter()
            .all(|(_, v)| v == "inconclusive")
    );
    let o = compare(&["--stats", "p50", "--strict"], &[&a, &noisy]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

#[test]
fn a_2us_responder_delay_is_a_regression_of_about_2us() {
    let _t = common::turn();
    let dir = tempfile::tempdir().unwrap();
    let a = measure(dir.path(), "a.json", &[]);
    let d = measure(dir.path(), "delayed.json", &["--responder-delay", "2us"]);
    // The runs differ in an option that changes figures: refused…
    let o = compare(&[], &[&a, &d]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("responder_delay_s"), "{}", stderr(&o));
    assert!(stderr(&o).contains("--allow-different"), "{}", stderr(&o));
    // …or compared with the difference listed first.
    let o = compare(&["--allow-different", "--stats", "p50"], &[&a, &d]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(text.contains("option responder_delay_s"), "{text}");
    let o = compare(
        &["--allow-different", "--stats", "p50", "--format", "json"],
        &[&a, &d],
    );
    let c = json_of(&o);
    for r in c["rows"].as_array().unwrap() {
        // A busy machine can blur a tail but not hide 2 µs added to a
        // sub-µs median: the change is up, and its Δ interval lies
        // around 2 µs give or take the machine's noise.
        let [lo, hi] = [0, 1].map(|i| r["delta_interval"][i].as_f64().unwrap());
        assert!(hi > 1000.0 && lo < 4000.0, "{r}");
        assert_ne!(r["verdict"], "improved", "{r}");
        // 2 µs is beyond the 5% threshold only while the round trip is
        // under 40 µs: a machine loaded enough to slow it past that may
        // rightly call +2 µs no change.
        if r["base"].as_f64().unwrap() < 40_000.0 {
            assert_ne!(r["verdict"], "no_change", "{r}");
        }
    }
    assert_eq!(o.status.code(), Some(i32::from(c["failed"] == true)));
}

/// Firmware `lat` of a plugin device, saved: the fixture's tcp points made
/// plugin points of about 5 µs, every latency figure `shift_ns` later, and
/// the run's device record naming plugin `device`.
fn plugin_run(dir: &Path, name: &str, lat: &str, shift_ns: f64, device: &str) -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/roundtrip.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let spec = format!("plugin:path=/opt/fw/{device}.so,lat={lat}");
    let points = v["points"].as_array_mut().unwrap();
    points.retain(|p| p["transport"] == "tcp");
    for p in points.iter_mut() {
        p["transport"] = "plugin".into();
        p["spec"] = spec.clone().into();
        for (k, x) in p["summary"].as_object_mut().unwrap().iter_mut() {
            if let Some(n) = x.as_f64().filter(|_| k.ends_with("_ns")) {
                let shift = if k == "stddev_ns" { 0.0 } else { shift_ns };
                *x = if x.is_u64() {
                    ((n / 4.0 + shift).round() as u64).into()
                } else {
                    (n / 4.0 + shift).into()
                };
            }
        }
    }
    v["devices"] = serde_json::json!([{
        "plugin": device, "abi": "1.0", "library": format!("/opt/fw/{device}.so"),
        "counters": {}, "spec": spec, "buffers": "user", "completion": "block"
    }]);
    let path = dir.join(name);
    std::fs::write(&path, v.to_string()).unwrap();
    path
}

#[test]
fn one_plugin_with_other_options_is_compared_only_when_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let a = plugin_run(dir.path(), "fw-a.json", "5us", 0.0, "sim");
    let b = plugin_run(dir.path(), "fw-b.json", "7us", 2000.0, "sim");
    // Refused in one line that names the option and the flag.
    let o = compare(&[], &[&a, &b]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(
        e.contains("plugin option lat 5us vs 7us") && e.contains("--allow-different"),
        "{e}"
    );
    // Allowed: +2 µs on about 5 µs regresses, the option listed first.
    let o = compare(&["--allow-different", "--format", "json"], &[&a, &b]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let c = json_of(&o);
    assert_eq!(c["differences"][0]["what"], "plugin option lat", "{c}");
    let rows = c["rows"].as_array().unwrap();
    assert!(
        c["only_in_base"].as_array().unwrap().is_empty()
            && c["only_in_new"].as_array().unwrap().is_empty(),
        "every point paired: {c}"
    );
    assert!(
        rows.iter()
            .any(|r| r["stat"] == "mean" && r["verdict"] == "regressed"),
        "{c}"
    );
    assert!(rows.iter().all(|r| r["verdict"] != "improved"), "{c}");
    assert!(
        rows[0]["point"]
            .as_str()
            .unwrap()
            .starts_with("plugin:path=/opt/fw/sim.so,lat=5us→7us "),
        "{c}"
    );
    let o = compare(&["--allow-different"], &[&a, &b]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(text.contains("plugin option lat: 5us → 7us"), "{text}");
    // The same figures under other options: no change.
    let same = plugin_run(dir.path(), "fw-c.json", "7us", 0.0, "sim");
    let o = compare(&["--allow-different", "--format", "json"], &[&a, &same]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(verdicts(&json_of(&o)).iter().all(|(_, v)| v == "no_change"));
    // Another plugin is another device: nothing in common, allowed or not.
    let other = plugin_run(dir.path(), "other.json", "5us", 0.0, "xdma");
    let o = compare(&["--allow-different"], &[&a, &other]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no point in common"), "{}", stderr(&o));
}

#[test]
fn formats_table_markdown_csv() {
    let _t = common::turn();
    let dir = tempfile::tempdir().unwrap();
    let a = steady(dir.path());
    let b = dir.path().join("slow.json");
    scaled(&a, &b, 2.0);
    let o = compare(&[], &[&a, &b]);
    let t = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(t.contains("FAIL: 6 regressed"), "{t}");
    assert!(t.contains("| point"), "{t}");
    assert!(!t.contains('\x1b'), "no colour off a terminal: {t}");
    let o = compare(&["--format", "markdown"], &[&a, &b]);
    let m = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(m.contains("**regressed**") && m.contains("|---"), "{m}");
    let o = compare(&["--format", "csv"], &[&a, &b]);
    let csv = String::from_utf8_lossy(&o.stdout).into_owned();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("point,stat,unit,base,new,change,ci_low,ci_high"));
    assert_eq!(lines.len(), 1 + 6, "{csv}");
}

#[test]
fn old_files_without_distributions_fall_back_and_say_so() {
    let _t = common::turn();
    let dir = tempfile::tempdir().unwrap();
    let a = measure(dir.path(), "a.json", &[]);
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    for p in v["points"].as_array_mut().unwrap() {
        let o = p.as_object_mut().unwrap();
        for k in ["histogram", "repeats", "intervals"] {
            o.remove(k);
        }
    }
    let old = dir.path().join("old.json");
    std::fs::write(&old, v.to_string()).unwrap();
    let o = compare(&["--format", "json"], &[&old, &a]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let c = json_of(&o);
    let methods: Vec<&str> = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["method"].as_str().unwrap())
        .collect();
    assert!(
        methods.contains(&"summary") && methods.contains(&"none"),
        "{methods:?}"
    );
    assert!(
        c["notes"].to_string().contains("no stored distribution"),
        "{}",
        c["notes"]
    );
}

#[test]
fn refusals_name_the_problem_and_exit_2() {
    let _t = common::turn();
    let dir = tempfile::tempdir().unwrap();
    let a = measure(dir.path(), "a.json", &[]);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/curve.json");
    let o = compare(&[], &[&a, &fixture]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("one experiment"), "{}", stderr(&o));

    // Truncated.
    let text = std::fs::read_to_string(&a).unwrap();
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let o = compare(&[], &[&a, &cut]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cut.json is not JSON"),
        "{}",
        stderr(&o)
    );

    // Hand-edited: a figure that is not a number, named with its point.
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["points"][1]["summary"]["p50_ns"] = "fast".into();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, v.to_string()).unwrap();
    let o = compare(&[], &[&a, &bad]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("points[1]") && e.contains("p50_ns"), "{e}");

    // Nothing in common: other sizes.
    let mut v: Value = serde_json::from_str(&text).unwrap();
    for p in v["points"].as_array_mut().unwrap() {
        p["in_bytes"] = 9999.into();
    }
    let other = dir.path().join("other.json");
    std::fs::write(&other, v.to_string()).unwrap();
    let o = compare(&[], &[&a, &other]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no point in common"), "{}", stderr(&o));

    // Some in common: the rest listed, not dropped.
    v["points"][0]["in_bytes"] = 64.into();
    std::fs::write(&other, v.to_string()).unwrap();
    let o = compare(&[], &[&a, &other]);
    let t = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        t.contains("Only in a (1)") && t.contains("Only in other (1)"),
        "{t}"
    );

    // A missing file, a bad flag value.
    let o = compare(&[], &[&a, &dir.path().join("nope.json")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read"), "{}", stderr(&o));
    let o = compare(&["--noise", "lots"], &[&a, &a]);
    assert_eq!(o.status.code(), Some(2));
    let o = compare(&["--confidence", "40%"], &[&a, &a]);
    assert_eq!(o.status.code(), Some(2));
    let mut c = xferbench();
    c.args(["roundtrip", "--repeat", "0"]);
    let o = finish(c);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn baselines_are_saved_by_name_and_compared_against() {
    let _t = common::turn();
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        let mut c = xferbench();
        c.env("XFERBENCH_BASELINE_DIR", dir.path().join("bl"))
            .args([
                "roundtrip",
                "-t",
                "thread",
                "--in",
                "64",
                "--out",
                "64",
                "--samples",
                "1000",
                "--repeat",
                "2",
                "--quiet",
            ])
            .args(extra);
        finish(c)
    };
    let o = run(&["--save-baseline", "main", "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("baseline main saved"), "{}", stderr(&o));
    assert!(dir.path().join("bl/main.json").exists());
    // stdout still holds only the run's JSON.
    let _: Value = serde_json::from_slice(&o.stdout).unwrap();

    let o = run(&["--baseline", "main"]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains("## compare roundtrip: main → this run"),
        "{out}"
    );
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));

    let o = run(&["--baseline", "nightly"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("saved: main"), "{}", stderr(&o));
    let o = run(&["--save-baseline", "../escape"]);
    assert_eq!(o.status.code(), Some(2));

    // `compare NAME FILE` finds the baseline by name.
    let f = dir.path().join("new.json");
    let o = run(&["-o", f.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut c = xferbench();
    c.env("XFERBENCH_BASELINE_DIR", dir.path().join("bl"))
        .args(["compare", "main"])
        .arg(&f);
    let o = finish(c);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("main → new"));
}

#[test]
fn every_experiments_saved_results_compare_with_themselves() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for name in [
        "roundtrip",
        "curve",
        "stream",
        "load",
        "flowgraph",
        "mesh",
        "pairs",
    ] {
        let f = dir.join(format!("{name}.json"));
        let o = compare(&["--format", "json"], &[&f, &f]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        let c = json_of(&o);
        assert_eq!(c["experiment"], name);
        let rows = c["rows"].as_array().unwrap();
        assert!(!rows.is_empty(), "{name}");
        assert!(
            rows.iter()
                .all(|r| r["verdict"] != "regressed" && r["change"] == 0.0),
            "{name}: {c}"
        );
    }
}

#[test]
fn the_library_repeats_and_compares_without_the_cli() {
    let _t = common::turn();
    let mut c = xferbench::RoundtripConfig::default();
    c.common.transports = xferbench::transport::parse_specs("thread").unwrap();
    c.in_sizes = vec![64];
    c.out_sizes = vec![64];
    c.common.amount = Some(xferbench::options::Amount::Samples(500));
    c.common.out.repeat = 3;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (run, err) = xferbench::roundtrip(&c, &stop, &()).unwrap();
    assert!(err.is_none() && run.complete);
    let v: Value = serde_json::from_str(&xferbench::Render::json(&run).unwrap()).unwrap();
    assert_eq!(v["points"][0]["repeats"].as_array().unwrap().len(), 3);
    assert_eq!(v["points"][0]["summary"]["count"], 1500);
    let a = xferbench::SavedRun::from_value("a", v.clone()).unwrap();
    let b = xferbench::SavedRun::from_value("b", v).unwrap();
    let cmp = xferbench::compare(&a, &b, &xferbench::CompareSettings::default()).unwrap();
    assert!(!cmp.failed);
    assert!(cmp.rows.iter().all(|r| r.change.change == 0.0));
}

/// Names from the runs are shown inert: no ANSI escape reaches the
/// terminal, no HTML or table-breaking `|` reaches the Markdown.
#[test]
fn hostile_names_are_shown_inert() {
    let dir = tempfile::tempdir().unwrap();
    let a = steady(dir.path());
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    let evil = "thread\u{1b}[31m\u{1b}[2J<script>alert(1)</script>|x";
    for p in v["points"].as_array_mut().unwrap() {
        p["spec"] = evil.into();
    }
    let base = dir.path().join("evil-a.json");
    std::fs::write(&base, v.to_string()).unwrap();
    let new = dir.path().join("evil-b.json");
    scaled(&base, &new, 1.5);
    for format in ["table", "markdown"] {
        let o = compare(&["--format", format], &[&base, &new]);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            out.contains("alert(1)"),
            "{format}: the name is shown: {out}"
        );
        assert!(
            !out.contains('\u{1b}'),
            "{format}: an escape reached the output"
        );
        if format == "markdown" {
            assert!(
                !out.contains("<script>") && out.contains("&lt;script&gt;"),
                "{out}"
            );
            assert!(out.contains("\\|x"), "{out}");
        }
    }
    // On a terminal the verdicts are coloured, and the names still inert:
    // the only escapes are the verdicts' own.
    let out = on_a_terminal(&[&base, &new]);
    assert!(
        out.contains("\u{1b}[1;31m"),
        "no colour on a terminal: {out:?}"
    );
    assert!(out.contains("alert(1)"), "the name is shown: {out:?}");
    assert!(
        !out.contains("\u{1b}[31m") && !out.contains("\u{1b}[2J"),
        "a name's escape reached the terminal: {out:?}"
    );
}

/// `xferbench compare FILES` with its stdout on a pseudo-terminal (as a
/// person sees it): what it wrote there.
fn on_a_terminal(files: &[&Path]) -> String {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    // SAFETY: plain libc calls on fds this test owns; ptsname_r writes
    // into the buffer it is given, NUL-terminated.
    let (master, slave) = unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(master >= 0, "posix_openpt");
        assert_eq!(libc::grantpt(master), 0);
        assert_eq!(libc::unlockpt(master), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(master, name.as_mut_ptr(), name.len()), 0);
        let slave = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY);
        assert!(slave >= 0, "opening the pty");
        (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave))
    };
    let mut c = xferbench();
    c.arg("compare")
        .args(files)
        .env_remove("NO_COLOR")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::from(slave))
        .stderr(std::process::Stdio::null());
    let mut child = common::Guarded::spawn(&mut c).unwrap();
    // The command holds the terminal's other end: only the child may.
    drop(c);
    let reader = std::thread::spawn(move || {
        let mut f = std::fs::File::from(master);
        let mut v = Vec::new();
        let mut b = [0u8; 4096];
        // Ends with EIO once the last writer (the child) has gone.
        while let Ok(n) = f.read(&mut b) {
            if n == 0 {
                break;
            }
            v.extend_from_slice(&b[..n]);
        }
        v
    });
    let t = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(t.elapsed() < std::time::Duration::from_secs(120), "hung");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    String::from_utf8_lossy(&reader.join().unwrap()).into_owned()
}
