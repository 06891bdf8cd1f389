//! `xferbench flowgraph` end to end: the JSON shape the report and peers
//! read, the bounds' arithmetic, and one-line usage errors.

mod common;

use common::{finish, json, num as f, stderr, turn, xferbench};
#[test]
fn a_small_sweep_reports_every_point_with_its_bounds() {
    let _t = turn();
    let cores = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(2);
    let mut c = xferbench();
    c.args([
        "flowgraph",
        "--cores",
        &format!("1..{cores}"),
        "--duration",
        "60ms",
        "--warmup",
        "20ms",
        "--kernel-sizes",
        "1k,16k",
        "--format",
        "json",
        "-q",
    ]);
    let o = finish(c);
    let d = json(&o);
    assert_eq!(d["experiment"], "flowgraph");
    assert_eq!(d["complete"], true);
    let k = f(&d, "kernel_only_sps");
    assert!(k > 0.0);
    let scan = d["kernel_scan"].as_array().unwrap();
    assert_eq!(scan.len(), 2);
    let best = scan
        .iter()
        .max_by(|a, b| f(a, "samples_per_s").total_cmp(&f(b, "samples_per_s")))
        .unwrap();
    assert_eq!(
        f(&d, "kernel_only_buffer_bytes"),
        f(best, "buffer_bytes"),
        "the bounds use the scan's best size"
    );
    // Its rate: the median of the scan's figure and one measurement before
    // the first point and after each.
    let (lo, hi) = (f(&d, "kernel_only_min_sps"), f(&d, "kernel_only_max_sps"));
    assert!(lo <= k && k <= hi, "{lo} {k} {hi}");
    assert!(lo <= f(best, "samples_per_s") && f(best, "samples_per_s") <= hi);
    let pts = d["points"].as_array().unwrap();
    // The scan's figure, one before the first (N, M), one after each round.
    let rounds = d["options"]["rounds"].as_u64().unwrap() as usize;
    assert_eq!(rounds, 3, "the default");
    let mut groups: Vec<(f64, f64)> = pts
        .iter()
        .map(|p| (f(p, "cores"), f(p, "blocks")))
        .collect();
    groups.dedup();
    assert_eq!(
        f(&d, "kernel_only_measurements") as usize,
        2 + groups.len() * rounds
    );
    // The kernel at the flowgraph's own 16 KiB, measured as often; the
    // same figures when 16 KiB is the best size.
    let kab = f(&d, "kernel_at_buffer_sps");
    assert!(kab > 0.0);
    assert_eq!(
        f(&d, "kernel_at_buffer_measurements") as usize,
        2 + groups.len() * rounds
    );
    if f(best, "buffer_bytes") == 16384.0 {
        assert_eq!(kab, k);
    }
    // Circular buffers between threads: auto, a power of two, at least 2.
    let eb = d["edge_buffers"].as_u64().unwrap();
    assert!(eb >= 2 && eb.is_power_of_two(), "{eb}");
    // N=1: M=1..3 × (5 schedulers × 2 kinds of edge + ring); N=2: M=2..6
    // × (4 × 2 + ring): no seq.
    let want = if cores == 2 { 33 + 45 } else { 33 };
    assert_eq!(pts.len(), want);
    for p in pts {
        let (n, m) = (f(p, "cores"), f(p, "blocks"));
        assert!(m >= n && m <= 3.0 * n, "{p}");
        // The median 10 ms window: 0 when a busy machine stalled the
        // pipeline for most of the point's windows, which a point this short
        // always warns of ("measured over only 60 ms: noisy").
        let sps = f(p, "samples_per_s");
        assert!(sps >= 0.0, "{p}");
        assert!(sps > 0.0 || noisy(p), "{p}");
        assert!(f(p, "p10_sps") <= sps && sps <= f(p, "p90_sps"), "{p}");
        let dynamic = k * n / m;
        let fixed = k / (m / n).ceil();
        assert!(
            (f(p, "ideal_dynamic_sps") - dynamic).abs() <= dynamic * 1e-9,
            "{p}"
        );
        assert!(
            (f(p, "ideal_static_sps") - fixed).abs() <= fixed * 1e-9,
            "{p}"
        );
        assert!((f(p, "efficiency") - sps / fixed).abs() < 1e-9, "{p}");
        let paired = f(p, "kernel_paired_sps");
        assert!(lo <= paired && paired <= hi, "{p}");
        let e = sps * (m / n).ceil() / paired;
        assert!((f(p, "efficiency_paired") - e).abs() <= e * 1e-9, "{p}");
        let e = sps * (m / n).ceil() / kab;
        assert!((f(p, "efficiency_same_size") - e).abs() <= e * 1e-9, "{p}");
        assert!(f(p, "windows") >= 1.0, "{p}");
        assert!(
            (f(p, "mean_sps") - f(p, "items") / f(p, "measured_s")).abs()
                <= f(p, "mean_sps") * 1e-9,
            "{p}"
        );
        assert_eq!(p["rounds"].as_u64(), Some(rounds as u64), "{p}");
        assert_eq!(p["partial"], false, "{p}");
        assert_eq!(p["cpus"].as_array().unwrap().len(), n as usize);
        if p["scheduler"] == "seq" {
            assert_eq!(n, 1.0);
        }
        let edges = p["edges"].as_str().unwrap();
        if edges == "circular" && n > 1.0 {
            assert_eq!(p["buffers"], d["edge_buffers"], "{p}");
        } else if edges == "circular" {
            // One core: as deep as keeps every ring within half the L2.
            let b = f(p, "buffers");
            assert!(b >= 2.0 && b <= f(&d, "edge_buffers"), "{p}");
            assert!((b as u64).is_power_of_two(), "{p}");
            if let Some(l2) = d["l2_cache_bytes"].as_f64() {
                let rings = (m + 1.0) * b * f(p, "buffer_bytes");
                assert!(b == 2.0 || rings <= l2 / 2.0, "{p}");
            }
        }
        assert!(
            edges == "handoff" || (edges == "circular" && p["scheduler"] != "ring"),
            "{p}"
        );
    }
    // Items flow: a stalled vCPU can empty one short point, not the sweep.
    assert!(
        pts.iter().any(|p| f(p, "items") > 0.0),
        "no point moved an item"
    );
    // A limit per core count: N cores copying memory, beside (or over) the
    // bytes the blocks moved at the best point of that N.
    let limits = d["limits"].as_array().unwrap();
    assert_eq!(limits.len(), cores, "{limits:?}");
    for (i, l) in limits.iter().enumerate() {
        let n = i + 1;
        assert!(
            l["spec"]
                .as_str()
                .unwrap()
                .starts_with(&format!("flowgraph N={n} (cpus ")),
            "{l}"
        );
        assert_eq!(l["limit"]["unit"], "MB/s", "{l}");
        assert!(f(&l["limit"], "value") > 0.0, "{l}");
        let what = l["limit"]["what"].as_str().unwrap();
        assert!(what.starts_with("memory copy, "), "{l}");
        assert!(l["figure"].as_str().unwrap().contains("× 4 B × M"), "{l}");
        let moved = pts
            .iter()
            .filter(|p| f(p, "cores") == n as f64)
            .map(|p| f(p, "samples_per_s") * 4.0 * f(p, "blocks") / 1e6)
            .fold(0.0, f64::max);
        if moved > 0.0 {
            let best = f(&l["best"], "value");
            assert!((best - moved).abs() <= moved * 1e-9, "{best} {moved} {l}");
        }
    }
    for s in [
        "seq",
        "static",
        "thread-per-block",
        "tokio",
        "async-executor",
        "ring",
    ] {
        for e in ["circular", "handoff"] {
            if s != "ring" || e == "handoff" {
                assert!(
                    pts.iter().any(|p| p["scheduler"] == s && p["edges"] == e),
                    "{s} on {e} edges missing"
                );
            }
        }
    }
}

#[test]
fn table_and_csv_outputs() {
    let _t = turn();
    let base = [
        "flowgraph",
        "--cores",
        "1",
        "--blocks",
        "1",
        "--scheduler",
        "seq,ring",
        "--duration",
        "30ms",
        "--warmup",
        "10ms",
        "--kernel-sizes",
        "4k",
        "-q",
    ];
    let mut c = xferbench();
    c.args(base);
    let o = finish(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = String::from_utf8(o.stdout).unwrap();
    assert!(
        t.contains("scheduler |")
            && t.contains(" M=1 |")
            && t.contains(" seq |")
            && t.contains(" seq+handoff |")
            && t.contains(" ring |")
            && t.contains(" ideal static |"),
        "{t}"
    );
    assert!(t.contains("Kernel alone"), "{t}");
    let mut c = xferbench();
    c.args(base).args(["--format", "csv"]);
    let o = finish(c);
    let t = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = t.lines().collect();
    assert!(lines[0].starts_with("scheduler,cores,blocks,samples_per_s"));
    assert!(lines[0].ends_with(",edges,rounds,efficiency_same_size"));
    // seq on both kinds of edge, and the ring.
    assert_eq!(lines.len(), 4, "{t}");
    assert!(
        lines[1..]
            .iter()
            .any(|l| l.starts_with("seq,") && l.contains(",handoff,3,"))
    );
    // Every row has every column.
    let cols = lines[0].split(',').count();
    assert!(lines.iter().all(|l| l.split(',').count() == cols), "{t}");
}

/// A SIMD kernel of the other architecture, which this CPU cannot run.
fn other_arch_kernel() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "avx2+fma"
    } else {
        "neon"
    }
}

#[test]
fn bad_flowgraph_options_are_one_line_usage_errors() {
    for (args, want) in [
        (vec!["--cores", "999"], "CPUs are available"),
        (vec!["--cores", "0"], "not a count"),
        (vec!["--blocks", "x"], "malformed list"),
        (vec!["--buffers", "0"], "--buffers"),
        (vec!["--buffer-size", "100"], "multiple of 64"),
        (vec!["--cores", "2", "--scheduler", "seq"], "nothing to run"),
        (vec!["--scheduler", "gnuradio"], "invalid value"),
        (vec!["--edges", "linked-list"], "invalid value"),
        (vec!["--rounds", "0"], "--rounds"),
        (vec!["--edge-buffers", "0"], "auto or a number"),
        (vec!["--edge-buffers", "lots"], "auto or a number"),
        (vec!["--kernel", "sse9"], "expected auto or one of"),
        // A kernel no CPU has both of: one of the two is refused here.
        (
            vec!["--kernel", other_arch_kernel()],
            "this CPU cannot run it",
        ),
        // 256 GiB per edge: refused before anything is allocated, naming
        // the flags to lower.
        (
            vec!["--buffer-size", "64m", "--edge-buffers", "4096"],
            "use a smaller --buffer-size",
        ),
    ] {
        let mut c = xferbench();
        c.arg("flowgraph").args(&args);
        let o = finish(c);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert_eq!(e.trim().lines().count(), 1, "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: {e}");
    }
}

#[test]
fn a_chosen_kernel_runs_everywhere_and_is_recorded() {
    let _t = turn();
    let mut c = xferbench();
    c.args([
        "flowgraph",
        "--cores",
        "1",
        "--blocks",
        "2",
        "--scheduler",
        "seq,ring",
        "--items",
        "1000000",
        "--kernel-sizes",
        "4k",
        "--kernel",
        "portable",
        "--format",
        "json",
        "-q",
    ]);
    let o = finish(c);
    let d = json(&o);
    assert_eq!(d["kernel"], "portable", "{d}");
    assert_eq!(d["options"]["kernel"], "portable");
    assert_eq!(d["complete"], true);
    for p in d["points"].as_array().unwrap() {
        // A run of --items that ends just after the warm-up leaves little
        // (or, in a race, nothing) to measure; the point then says so.
        assert!(f(p, "samples_per_s") > 0.0 || noisy(p), "{p}");
    }
}

/// Whether a point carries a warning that its figure is noisy.
fn noisy(p: &serde_json::Value) -> bool {
    p["warnings"].as_array().is_some_and(|w| {
        w.iter()
            .any(|w| w.as_str().is_some_and(|w| w.contains("noisy")))
    })
}

/// `--repeat 2`: one point per (scheduler, N, M) with both repeats' rates
/// and its windows in blocks, under `intervals` (`blocks` is M).
#[test]
fn repeats_pool_a_points_windows_and_keep_each_repeats_rate() {
    let _t = turn();
    let mut c = xferbench();
    c.args([
        "flowgraph",
        "--cores",
        "1",
        "--blocks",
        "2",
        "--scheduler",
        "seq",
        "--edges",
        "circular",
        "--duration",
        "40ms",
        "--warmup",
        "10ms",
        "--rounds",
        "1",
        "--kernel-sizes",
        "16k",
        "--repeat",
        "2",
        "--format",
        "json",
        "-q",
    ]);
    let d = json(&finish(c));
    assert_eq!(d["complete"], true);
    let pts = d["points"].as_array().unwrap();
    assert_eq!(pts.len(), 1, "the repeats merged: {pts:?}");
    let p = &pts[0];
    assert_eq!(f(p, "blocks"), 2.0, "M stays M: {p}");
    assert_eq!(f(p, "rounds"), 2.0, "one round a repeat: {p}");
    assert!(p.get("histogram").is_none(), "no time per item: {p}");
    let reps = p["repeats"].as_array().unwrap();
    assert_eq!(reps.len(), 2, "{p}");
    for r in reps {
        assert!(f(r, "samples_per_s") > 0.0 && f(r, "mean_sps") > 0.0, "{r}");
    }
    let blocks = p["intervals"].as_array().unwrap();
    assert!(blocks.len() >= 2, "{p}");
    // A 10 ms window can be empty when a loaded VM deschedules the graph
    // for longer than that; the windows together must have moved items.
    assert!(blocks.iter().all(|b| f(b, "samples_per_s") >= 0.0), "{p}");
    assert!(blocks.iter().any(|b| f(b, "samples_per_s") > 0.0), "{p}");
    let ideal = f(p, "ideal_static_sps");
    assert!(
        (f(p, "efficiency") - f(p, "samples_per_s") / ideal).abs()
            < 1e-9 * f(p, "efficiency").max(1.0)
    );
}
