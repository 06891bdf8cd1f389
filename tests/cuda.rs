//! The `cuda` transport end to end. Without a GPU (or without libcuda) it
//! must be listed as unavailable and refuse `-t cuda` with one line; with
//! one, every buffer and completion mode runs the Vollo-shaped matrix and
//! the bandwidth curve.
//!
//! Where there is no GPU but a C compiler, the GPU tests run against
//! `tests/fake_cuda/libcuda.c`, a stand-in driver that emulates the device
//! programs on host threads: that checks the host side (arguments, stream
//! order, the doorbell, the capture, the latch), not the GPU. With neither,
//! they skip with a message.

mod common;

use common::{finish, json, num, stderr, xferbench};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The stand-in driver's folder, built once per test run, if `cc` works.
fn fake_driver() -> Option<&'static PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("xb-fake-cuda-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake_cuda/libcuda.c");
        let ok = Command::new("cc")
            .args(["-O2", "-shared", "-fPIC", "-pthread", "-o"])
            .arg(dir.join("libcuda.so"))
            .arg(src)
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(dir)
    })
    .as_ref()
}

/// xferbench on the real driver when it works here, else on the stand-in
/// (None when there is neither).
fn gpu_xferbench() -> Option<Command> {
    if unavailable(xferbench()).is_none() {
        return Some(xferbench());
    }
    let dir = fake_driver()?;
    let mut c = xferbench();
    c.env("LD_LIBRARY_PATH", dir);
    Some(c)
}

/// Why there is no GPU for this command, as `xferbench list` says, or None.
fn unavailable(mut c: Command) -> Option<String> {
    let o = finish({
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
        match gpu_xferbench() {
            Some(c) => c,
            None => {
                eprintln!("skipped: no GPU here and no C compiler for the stand-in driver");
                return;
            }
        }
    };
}

#[test]
fn without_a_gpu_cuda_is_listed_unavailable_and_refused() {
    let Some(why) = unavailable(xferbench()) else {
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

/// `limits` lists each GPU the driver has on the link sysfs holds at its
/// bus id (the stand-in driver's is the fake tree's Gen5 card trained at
/// Gen4 x8), once: not again as the 3D controller sysfs also lists there.
#[test]
fn limits_lists_the_drivers_gpus_on_their_links() {
    let Some(dir) = fake_driver() else {
        eprintln!("skipped: no C compiler for the stand-in driver");
        return;
    };
    let cache = tempfile::tempdir().unwrap();
    let tree = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/sysfs/gen4x8");
    let run = |format: &str| {
        let mut c = xferbench();
        c.args(["limits", "--format", format])
            .env("LD_LIBRARY_PATH", dir)
            .env("XFERBENCH_SYSFS", &tree)
            .env("XDG_CACHE_HOME", cache.path());
        let o = finish(c);
        assert!(o.status.success(), "{}", stderr(&o));
        o
    };
    let j = json(&run("json"));
    let gpus = j["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 1, "{j}");
    let g = &gpus[0];
    assert_eq!(g["address"], "0000:41:00.0", "{g}");
    assert_eq!(g["cuda"]["name"], "xferbench fake GPU", "{g}");
    assert_eq!(g["cuda"]["ordinal"], 0, "{g}");
    assert_eq!(g["limit"]["what"], "PCIe 4.0 x8", "{g}");
    assert_eq!(g["downgraded"], true, "{g}");
    let table = String::from_utf8_lossy(&run("table").stdout).to_string();
    assert!(table.contains("GPU 0: xferbench fake GPU"), "{table}");
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

fn run_json(mut c: Command, args: &[&str]) -> Value {
    c.args(args);
    json(&finish(c))
}

/// A driver that loads but finds no device is refused like a missing one.
#[test]
fn a_driver_without_devices_is_one_clear_error() {
    let Some(dir) = fake_driver() else {
        eprintln!("skipped: no C compiler for the stand-in driver");
        return;
    };
    let mut c = xferbench();
    c.env("LD_LIBRARY_PATH", dir).env("XB_FAKE_CUDA_NODEV", "1");
    c.args(["roundtrip", "-q", "-t", "cuda", "--in", "64", "--out", "64"]);
    let o = finish(c);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(
        e.contains("cuda: not available (no usable GPU: cuInit says"),
        "{e}"
    );
}

/// An ordinal past the last GPU is a usage error naming what exists.
#[test]
fn a_missing_device_number_is_a_usage_error() {
    let c = need_gpu!();
    let mut c = c;
    c.args([
        "roundtrip",
        "-q",
        "-t",
        "cuda:device=7",
        "--in",
        "64",
        "--out",
        "64",
    ]);
    let o = finish(c);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("device=7 does not exist"), "{e}");
}

#[test]
fn gpu_round_trip_matrix_in_every_mode() {
    // Spinning hosts and device threads would starve each other on 2 CPUs.
    let _turn = common::turn();
    for completion in ["poll", "block"] {
        let c = need_gpu!();
        let buffers = if completion == "poll" {
            "user,raw,mmio,graph"
        } else {
            "user,raw,graph"
        };
        let d = run_json(
            c,
            &[
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
            ],
        );
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

/// mmio with one, some and all of its polling warps, at sizes either side
/// of what one poll read holds (124 B) and up to the largest (32 KiB): the
/// host writes every poller's copy, and any warp may answer.
#[test]
fn gpu_mmio_answers_with_any_number_of_pollers() {
    let _turn = common::turn();
    for pollers in ["1", "3", "8"] {
        let c = need_gpu!();
        let d = run_json(
            c,
            &[
                "roundtrip",
                "-q",
                "-t",
                &format!("cuda:pollers={pollers}"),
                "--buffers",
                "mmio",
                "--in",
                "4,124,128,4k,32k",
                "--out",
                "4,128,32k",
                "--samples",
                "50",
                "--format",
                "json",
            ],
        );
        assert_eq!(d["complete"], true, "pollers={pollers}");
        let pts = d["points"].as_array().expect("points");
        assert_eq!(pts.len(), 15, "pollers={pollers}");
        for p in pts {
            assert!(num(&p["summary"], "count") >= 50.0, "pollers={pollers}");
        }
    }
}

#[test]
fn gpu_latency_curve_in_the_round_trip_modes() {
    // Spinning hosts and device threads would starve each other on 2 CPUs.
    let _turn = common::turn();
    let c = need_gpu!();
    let d = run_json(
        c,
        &[
            "curve",
            "-q",
            "-t",
            "cuda",
            "--buffers",
            "user,raw,mmio,graph",
            "--sizes",
            "0,4,4k,32k",
            "--samples",
            "100",
            "--format",
            "json",
        ],
    );
    assert_eq!(d["complete"], true);
    let pts = d["points"].as_array().expect("points");
    assert_eq!(pts.len(), 4 * 4);
    for p in pts {
        assert_eq!(p["mode"], "pingpong");
        assert!(num(&p["oneway"], "p50_ns") > 0.0, "{p}");
    }
    // A fill-checked curve is refused: the device program computes nothing.
    let mut c = gpu_xferbench().expect("checked above");
    c.args([
        "curve",
        "-q",
        "-t",
        "cuda",
        "--sizes",
        "64",
        "--payload",
        "fill-check",
    ]);
    let o = finish(c);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("fill-check"));
}

#[test]
fn gpu_bandwidth_curve_has_every_combination() {
    // Spinning hosts and device threads would starve each other on 2 CPUs.
    let _turn = common::turn();
    let c = need_gpu!();
    let d = run_json(
        c,
        &[
            "curve", "-q", "-t", "cuda", "--mode", "stream", "--sizes", "4,64k,4M", "--format",
            "json",
        ],
    );
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

/// `--samples` and `--duration` mean on a copy curve what they mean
/// everywhere: timed samples per point (here a sample is one trial of k
/// copies), or samples until the time has passed.
#[test]
fn gpu_bandwidth_curve_takes_the_shared_sample_budget() {
    let _turn = common::turn();
    let c = need_gpu!();
    let spec = "cuda:dir=h2d,host=pinned,engine=ce";
    let count = |d: &Value| -> Vec<f64> {
        d["points"]
            .as_array()
            .expect("points")
            .iter()
            .map(|p| num(&p["oneway"], "count"))
            .collect()
    };
    let base = [
        "curve", "-q", "-t", spec, "--mode", "stream", "--sizes", "4k,64k", "--format", "json",
    ];
    let d = run_json(c, &[&base[..], &["--samples", "5"]].concat());
    assert_eq!(count(&d), vec![5.0, 5.0]);
    let d = run_json(gpu_xferbench().expect("checked above"), &base);
    assert_eq!(
        count(&d),
        vec![3.0, 3.0],
        "nvbandwidth's default of 3 trials"
    );
    let d = run_json(
        gpu_xferbench().expect("checked above"),
        &[&base[..], &["--duration", "100ms"]].concat(),
    );
    assert_eq!(d["complete"], true);
    // A trial of these sizes takes well under 30 ms even on a loaded host
    // (real GPU or the stand-in), so a 100 ms budget holds more than the
    // default 3 (it was ignored once).
    assert!(count(&d).iter().all(|&n| n > 3.0), "{:?}", count(&d));
    assert_eq!(num(&d["options"], "duration_s"), 0.1);
}
