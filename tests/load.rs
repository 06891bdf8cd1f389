//! `xferbench load` end to end: the rk11perf table for every load mode with
//! each mode's own rate, the closed-loop rate a known responder delay
//! implies, and the open loop charging queueing to late requests.

mod common;

use common::{finish, json, num as f, stderr, turn, xferbench};
#[test]
fn every_load_mode_runs_and_reports_its_own_rate() {
    let _t = turn();
    let mut c = xferbench();
    c.args([
        "load",
        "-t",
        "pipe",
        "--sizes",
        "512,4k",
        "--cell-time",
        "100ms",
        "--format",
        "json",
        "-q",
    ]);
    let d = json(&finish(c));
    assert_eq!(d["experiment"], "load");
    assert_eq!(d["complete"], true);
    let pts = d["points"].as_array().unwrap();
    // 2 directions × 5 loads × 2 sizes.
    assert_eq!(pts.len(), 20);
    for p in pts {
        let (rps, size) = (f(p, "req_per_s"), f(p, "size_bytes"));
        assert!(rps > 0.0, "{p}");
        assert!(
            (f(p, "kb_per_s") - rps * size / 1024.0).abs() < 1e-6 * rps * size,
            "{p}"
        );
        let load = p["load"].as_str().unwrap();
        if load == "idle" {
            assert!(p["load_ops_per_s"].is_null(), "{p}");
        } else {
            assert!(
                f(p, "load_ops_per_s") > 0.0,
                "{load} did no measured work: {p}"
            );
        }
    }
    let loads = d["loads"].as_array().unwrap();
    assert_eq!(loads.len(), 2 * 5, "one record per direction and load");
    // The table: rk11perf's shape, a section per direction.
    let mut c = xferbench();
    c.args([
        "load",
        "-t",
        "pipe",
        "--sizes",
        "512",
        "--load",
        "idle,alu",
        "--cell-time",
        "50ms",
        "-q",
    ]);
    let o = finish(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = String::from_utf8(o.stdout).unwrap();
    for s in ["### read", "### write", "idle req/s", "alu KB/s", "adds/s"] {
        assert!(t.contains(s), "'{s}' missing: {t}");
    }
}

#[test]
fn a_responder_delay_sets_the_closed_loop_rate() {
    let _t = turn();
    // 2 ms per request: about 500 requests/s, whatever the transport adds.
    let mut c = xferbench();
    c.args([
        "load",
        "-t",
        "pipe",
        "--sizes",
        "512",
        "--load",
        "idle",
        "--direction",
        "write",
        "--responder-delay",
        "2ms",
        "--cell-time",
        "400ms",
        "--format",
        "json",
        "-q",
    ]);
    let d = json(&finish(c));
    let rps = f(&d["points"][0], "req_per_s");
    assert!(
        (350.0..=520.0).contains(&rps),
        "{rps} req/s with a 2 ms responder"
    );
}

#[test]
fn overload_latency_grows_with_the_run_while_the_rate_stays_at_capacity() {
    let _t = turn();
    // Capacity about 1000/s (1 ms per request); offered 4000/s.
    let run = |cell: &str| {
        let mut c = xferbench();
        c.args([
            "load",
            "-t",
            "pipe",
            "--sizes",
            "512",
            "--direction",
            "write",
            "--responder-delay",
            "1ms",
            "--rate",
            "4k",
            "--cell-time",
            cell,
            "--format",
            "json",
            "-q",
        ]);
        let d = json(&finish(c));
        d["points"][0].clone()
    };
    let short = run("300ms");
    let long = run("900ms");
    for p in [&short, &long] {
        assert!(f(p, "achieved_per_s") < 1100.0, "above capacity: {p}");
        assert!(f(p, "achieved_per_s") > 500.0, "far below capacity: {p}");
        assert!(f(p, "missed") > 0.0, "{p}");
    }
    let p50 = |p: &serde_json::Value| f(&p["latency"], "p50_ns");
    // From the due time, the backlog grows with the run: the median of a
    // three times longer run is well over one and a half times larger.
    assert!(
        p50(&long) > 1.5 * p50(&short),
        "short {} long {}",
        p50(&short),
        p50(&long)
    );
    // Below capacity nothing is missed and latency stays near the service time.
    let mut c = xferbench();
    c.args([
        "load",
        "-t",
        "pipe",
        "--sizes",
        "512",
        "--direction",
        "write",
        "--responder-delay",
        "1ms",
        "--rates",
        "200",
        "--arrival",
        "poisson",
        "--cell-time",
        "300ms",
        "--format",
        "json",
        "-q",
    ]);
    let d = json(&finish(c));
    let p = &d["points"][0];
    assert!(f(p, "missed") <= 1.0, "{p}");
    assert!(p50(p) < 5e6, "{p}");
}

#[test]
fn bad_load_options_are_one_line_usage_errors() {
    for (args, want) in [
        (vec!["--load", "spin"], "invalid value"),
        (vec!["--rate", "fast"], "malformed rate"),
        (
            vec!["--rate", "1k", "--inflight", "2"],
            "one request at a time",
        ),
        (vec!["--samples", "10"], "--cell-time"),
        (vec!["--load-cpus", "999"], "not available"),
        (vec!["--sizes", "0"], "at least one byte"),
    ] {
        let mut c = xferbench();
        c.args(["load", "-t", "pipe", "--cell-time", "20ms"])
            .args(&args);
        let o = finish(c);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert_eq!(e.trim().lines().count(), 1, "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: {e}");
    }
}
