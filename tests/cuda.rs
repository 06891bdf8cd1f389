//! The `cuda` transport end to end. Without a GPU (or without libcuda) it
//! must be listed as unavailable and refuse `-t cuda` with one line; with
//! one, every buffer and completion mode runs the Vollo-shaped matrix and
//! the bandwidth curve. The GPU tests skip with a message otherwise.

mod common;

use common::{finish, json, num, stderr, xferbench};
use serde_json::Value;

/// Why there is no GPU here, as `xferbench list` says, or None.
fn unavailable() -> Option<String> {
    let o = finish({
        let mut c = xferbench();
        c.args(["list", "--no-probe", "--format", "json"]);
        c
    });
    let list = json(&o);
    let cuda = list
        .as_array()
        .expect("list is an array")
        .iter()
        .find(|e| e["name"] == "cuda")
        .expect("cuda is listed")
        .clone();
    let status = cuda["status"].as_str().expect("status").to_string();
    status
        .strip_prefix("not available (")
        .map(|s| s.trim_end_matches(')').to_string())
}

macro_rules! need_gpu {
    () => {
        if let Some(why) = unavailable() {
            eprintln!("skipped: no GPU here ({why})");
            return;
        }
    };
}

#[test]
fn without_a_gpu_cuda_is_listed_unavailable_and_refused() {
    let Some(why) = unavailable() else {
        eprintln!("skipped: a GPU is present");
        return;
    };
    if std::path::Path::new("/dev/nvidiactl").exists() {
        eprintln!("note: /dev/nvidiactl exists but cuda is unavailable: {why}");
    } else {
        assert!(
            why == "libcuda not found" || why.contains("no CUDA device") || why.contains("cuInit"),
            "{why}"
        );
    }
    for args in [
        &["roundtrip", "-q", "-t", "cuda", "--in", "64", "--out", "64"][..],
        &[
            "curve", "-q", "-t", "cuda", "--mode", "stream", "--sizes", "4k",
        ][..],
        &["load", "-q", "-t", "cuda", "--sizes", "64"][..],
    ] {
        let o = finish({
            let mut c = xferbench();
            c.args(args);
            c
        });
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let e = stderr(&o);
        assert_eq!(e.trim().lines().count(), 1, "one line: {e}");
        assert!(e.contains("cuda: not available ("), "{e}");
        assert!(!e.contains("panicked"), "{e}");
    }
    // The table form says it the way the issue asks.
    let o = finish({
        let mut c = xferbench();
        c.args(["list", "--no-probe"]);
        c
    });
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.lines()
            .any(|l| l.contains("cuda") && l.contains(&format!("not available ({why})"))),
        "{out}"
    );
}

#[test]
fn bad_cuda_options_are_usage_errors_with_or_without_a_gpu() {
    for (spec, says) in [
        ("cuda:dir=up", "h2d, d2h, bidir or all"),
        ("cuda:engine=dma", "ce, sm or all"),
        ("cuda:device=x", "device=x"),
        ("cuda:buffers=inline", ""),
    ] {
        let o = finish({
            let mut c = xferbench();
            c.args(["roundtrip", "-q", "-t", spec, "--in", "64", "--out", "64"]);
            c
        });
        let e = stderr(&o);
        if spec.ends_with("inline") {
            // Unknown mode for this transport: usage (2) or no GPU (1), never a panic.
            assert!(matches!(o.status.code(), Some(1) | Some(2)), "{spec}: {e}");
        } else {
            assert_eq!(o.status.code(), Some(2), "{spec}: {e}");
            assert!(e.contains(says), "{spec}: {e}");
        }
        assert!(!e.contains("panicked"), "{e}");
    }
}

fn run_json(args: &[&str]) -> Value {
    let o = finish({
        let mut c = xferbench();
        c.args(args);
        c
    });
    json(&o)
}

#[test]
fn gpu_round_trip_matrix_in_every_mode() {
    need_gpu!();
    for completion in ["poll", "block"] {
        let buffers = if completion == "poll" {
            "user,raw,mmio,graph"
        } else {
            "user,raw,graph"
        };
        let d = run_json(&[
            "roundtrip",
            "-q",
            "-t",
            "cuda",
            "--buffers",
            buffers,
            "--completion",
            completion,
            "--unit",
            "bf16",
            "--in",
            "32,8192",
            "--out",
            "32,8192",
            "--samples",
            "200",
            "--format",
            "json",
        ]);
        assert_eq!(d["complete"], true);
        let pts = d["points"].as_array().expect("points");
        let modes = buffers.split(',').count();
        assert_eq!(pts.len(), modes * 4, "{completion}");
        for p in pts {
            let s = &p["summary"];
            assert!(num(s, "count") >= 200.0);
            assert!(num(s, "mean_ns") > 0.0 && num(s, "p99_ns") >= num(s, "p50_ns"));
        }
        assert!(
            d["env"]["gpus"].as_array().is_some_and(|g| !g.is_empty()),
            "the GPU is recorded"
        );
    }
}

#[test]
fn gpu_bandwidth_curve_has_every_combination() {
    need_gpu!();
    let d = run_json(&[
        "curve", "-q", "-t", "cuda", "--mode", "stream", "--sizes", "4,64k,4M", "--format", "json",
    ]);
    assert_eq!(d["complete"], true);
    let pts = d["points"].as_array().expect("points");
    // 3 directions × (pinned ce, pinned sm, pageable ce) × 3 sizes.
    assert_eq!(pts.len(), 3 * 3 * 3);
    for p in pts {
        assert!(num(p, "bandwidth_MBps") > 0.0, "{p}");
    }
    // Larger copies move more bytes per second than 4-byte ones.
    let bw = |spec: &str, size: u64| {
        pts.iter()
            .find(|p| p["spec"] == spec && p["size_bytes"] == size)
            .map(|p| num(p, "bandwidth_MBps"))
            .expect("point")
    };
    let s = "cuda:dir=h2d,host=pinned,engine=ce";
    assert!(bw(s, 4 << 20) > bw(s, 4));
    let skipped = d["skipped"].as_array().expect("skipped");
    assert!(
        skipped
            .iter()
            .any(|k| k["reason"].as_str().is_some_and(|r| r.contains("pageable")))
    );
}
