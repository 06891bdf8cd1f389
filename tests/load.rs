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
    let p = &d["points"][0];
    // One request at a time, each held at least 2 ms by the responder: the
    // rate can never pass 500/s (plus a request's worth of rounding), and
    // every latency includes the delay. How far below 500/s it falls is the
    // machine's business (a busy one is far below), so it is not asserted.
    let rps = f(p, "req_per_s");
    assert!(
        rps > 0.0 && rps <= 520.0,
        "{rps} req/s with a 2 ms responder"
    );
    assert!(
        f(&p["latency"], "min_ns") >= 2e6,
        "a request faster than the 2 ms delay: {p}"
    );
    assert_eq!(f(p, "requests"), f(&p["latency"], "count"), "{p}");
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
        // Each request holds the responder at least 1 ms: capacity is at
        // most 1000/s, so of 4000/s offered most are missed, and said so.
        let achieved = f(p, "achieved_per_s");
        assert!(achieved > 0.0 && achieved < 1100.0, "above capacity: {p}");
        assert!(f(p, "missed") > 0.0, "{p}");
        assert_eq!(f(p, "missed"), f(p, "due") - f(p, "completed"), "{p}");
        assert!(has_warning(p, "were never sent"), "{p}");
        assert!(f(&p["latency"], "min_ns") >= 1e6, "{p}");
    }
    // From the due time, the backlog grows with the run. The request
    // finished last, at the end of the cell (time T), was due at most at
    // T / 4 (it is the k-th, k ≤ T / 1 ms, due at k / 4000/s), so it waited
    // at least 3/4 T: over 675 ms in the 900 ms run, while no request of the
    // 300 ms run can wait much past 300 ms. (The medians grow too, but how
    // much depends on how evenly a busy machine serves the cell.)
    let max = |p: &serde_json::Value| f(&p["latency"], "max_ns");
    assert!(
        max(&long) > 1.5 * max(&short),
        "short {} long {}",
        max(&short),
        max(&long)
    );
    // Below capacity nothing is queued by design, but whether a busy machine
    // keeps up is its own affair: what always holds is that the figures add
    // up, a request is never faster than the responder's 1 ms, and anything
    // missed is said.
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
    assert_eq!(f(p, "offered_per_s"), 200.0, "{p}");
    assert_eq!(p["arrival"], "poisson", "{p}");
    assert!(f(p, "completed") > 0.0, "{p}");
    assert_eq!(f(p, "completed"), f(&p["latency"], "count"), "{p}");
    assert_eq!(f(p, "missed"), f(p, "due") - f(p, "completed"), "{p}");
    assert_eq!(
        f(p, "missed") > 0.0,
        has_warning(p, "were never sent"),
        "{p}"
    );
    assert!(f(&p["latency"], "min_ns") >= 1e6, "{p}");
}

/// Whether a point's warnings include one containing `needle`.
fn has_warning(p: &serde_json::Value, needle: &str) -> bool {
    p["warnings"]
        .as_array()
        .unwrap_or_else(|| panic!("no warnings array in {p}"))
        .iter()
        .any(|w| w.as_str().is_some_and(|w| w.contains(needle)))
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
        (vec!["--duration", "1s"], "--cell-time"),
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
    // Refused, so not offered: load's help lists --cell-time only.
    let mut c = xferbench();
    c.args(["load", "--help"]);
    let help = String::from_utf8_lossy(&finish(c).stdout).into_owned();
    assert!(help.contains("--cell-time"), "{help}");
    assert!(
        !help.contains("--samples") && !help.contains("--duration"),
        "{help}"
    );
}

/// `--repeat 2`: each cell and each offered rate once, with both repeats'
/// figures, every repeat's blocks and one histogram of all its requests.
#[test]
fn repeats_keep_every_repeat_and_block_of_a_cell() {
    let _t = turn();
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
        "--cell-time",
        "50ms",
        "--repeat",
        "2",
        "--format",
        "json",
        "-q",
    ]);
    let d = json(&finish(c));
    assert_eq!(d["complete"], true);
    assert_eq!(d["options"]["repeat"], 2, "{}", d["options"]);
    assert_eq!(
        d["loads"].as_array().unwrap().len(),
        2,
        "each repeat's load"
    );
    let pts = d["points"].as_array().unwrap();
    assert_eq!(pts.len(), 1, "the repeats merged: {pts:?}");
    let p = &pts[0];
    assert!(
        p["histogram"].as_str().is_some_and(|h| !h.is_empty()),
        "{p}"
    );
    let reps = p["repeats"].as_array().unwrap();
    assert_eq!(reps.len(), 2, "{p}");
    for r in reps {
        for k in [
            "req_per_s",
            "kb_per_s",
            "count",
            "mean_ns",
            "p50_ns",
            "p99_ns",
        ] {
            assert!(r[k].is_number(), "{k} missing from {r}");
        }
    }
    let counted: f64 = reps.iter().map(|r| f(r, "count")).sum();
    assert_eq!(counted, f(p, "requests"), "{p}");
    assert_eq!(f(p, "requests"), f(&p["latency"], "count"), "{p}");
    let rps = f(p, "requests") / f(p, "seconds");
    assert!((f(p, "req_per_s") - rps).abs() < 1e-6 * rps, "{p}");
    // Up to ten blocks a repeat (a stall longer than a block skips one).
    let blocks = p["intervals"].as_array().unwrap();
    assert!((2..=20).contains(&blocks.len()), "{p}");
    for b in blocks {
        assert!(f(b, "req_per_s") > 0.0 && b["p50_ns"].is_number(), "{b}");
    }
    let in_blocks: f64 = blocks.iter().map(|b| f(b, "count")).sum();
    assert_eq!(in_blocks, f(p, "requests"), "{p}");

    // The open loop: ten tenths of the cell a repeat, by when replies came.
    let mut c = xferbench();
    c.args([
        "load",
        "-t",
        "pipe",
        "--sizes",
        "512",
        "--direction",
        "write",
        "--rates",
        "2000",
        "--cell-time",
        "50ms",
        "--repeat",
        "2",
        "--format",
        "json",
        "-q",
    ]);
    let d = json(&finish(c));
    let pts = d["points"].as_array().unwrap();
    assert_eq!(pts.len(), 1, "{pts:?}");
    let p = &pts[0];
    assert!(p["histogram"].is_string(), "{p}");
    let reps = p["repeats"].as_array().unwrap();
    assert_eq!(reps.len(), 2, "{p}");
    assert!(reps.iter().all(|r| r["achieved_per_s"].is_number()), "{p}");
    let counted: f64 = reps.iter().map(|r| f(r, "count")).sum();
    assert_eq!(counted, f(p, "completed"), "{p}");
    assert_eq!(f(p, "missed"), f(p, "due") - f(p, "completed"), "{p}");
    let blocks = p["intervals"].as_array().unwrap();
    assert_eq!(blocks.len(), 20, "{p}");
    assert!(
        blocks.iter().all(|b| b["achieved_per_s"].is_number()),
        "{p}"
    );
    let in_blocks: f64 = blocks.iter().map(|b| f(b, "count")).sum();
    assert_eq!(in_blocks, f(p, "completed"), "{p}");
}
