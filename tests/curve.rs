//! End-to-end tests of `xferbench curve`: every transport and mode, fill-check
//! catching a flipped bit, packetization, the fit, and the outputs. Times are
//! never asserted: these are small noisy VMs.

mod common;

use common::json;
use serde_json::Value;
use std::process::Output;

const TRANSPORTS: [&str; 7] = ["thread", "shm", "pipe", "unix", "unix-dgram", "tcp", "udp"];

fn xb(args: &[&str], fault: Option<&str>) -> Output {
    let mut c = common::xferbench();
    c.args(args);
    if let Some(f) = fault {
        c.env("XFERBENCH_RESPONDER_FAULT", f);
    }
    common::finish(c)
}

fn points(d: &Value) -> &Vec<Value> {
    d["points"].as_array().expect("points")
}

fn check_point(p: &Value) {
    let o = &p["oneway"];
    let g = |k: &str| o[k].as_u64().unwrap_or_else(|| panic!("oneway.{k} in {p}"));
    assert!(g("count") > 0);
    assert!(
        g("min_ns") <= g("p50_ns") && g("p50_ns") <= g("p99_ns") && g("p99_ns") <= g("max_ns"),
        "{o}"
    );
    let bw = p["bandwidth_MBps"].as_f64().expect("bandwidth");
    let size = p["size_bytes"].as_u64().unwrap();
    assert!(bw >= 0.0 && (size == 0) == (bw == 0.0), "{p}");
}

#[test]
fn pingpong_sweep_to_8m_on_every_transport() {
    let mut fitted = Vec::new();
    for t in TRANSPORTS {
        let o = xb(
            &[
                "curve",
                "-q",
                "-t",
                t,
                "--sizes",
                "0,1,64,4k,64k,1M,8M",
                "--point-time",
                "20ms",
                "--format",
                "json",
            ],
            None,
        );
        let d = json(&o);
        assert_eq!(d["experiment"], "curve");
        assert_eq!(d["complete"], true, "{t}");
        let pts = points(&d);
        let sizes: Vec<u64> = pts
            .iter()
            .map(|p| p["size_bytes"].as_u64().unwrap())
            .collect();
        let skipped: Vec<u64> = d["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["size_bytes"].as_u64().unwrap())
            .collect();
        // Every size is measured or skipped with a reason, never both or neither.
        for s in [0u64, 1, 64, 4096, 65536, 1 << 20, 8 << 20] {
            assert!(sizes.contains(&s) != skipped.contains(&s), "{t}: size {s}");
        }
        for s in d["skipped"].as_array().unwrap() {
            assert!(!s["reason"].as_str().unwrap().is_empty());
        }
        match t {
            "pipe" | "unix" | "tcp" => assert!(skipped.contains(&0), "{t} cannot carry 0 bytes"),
            "udp" => assert!(
                skipped.contains(&(1 << 20)),
                "udp cannot carry 1 MiB unpacketized"
            ),
            _ => {}
        }
        assert!(sizes.contains(&64));
        pts.iter().for_each(check_point);
        // A fit is null only when the times do not grow with size, which a
        // busy machine can do even to a curve to 8 MiB (a 20 ms point is a
        // few samples of 8 MiB, and small sizes may wait for a CPU): what
        // always holds is that the fit, or its absence, is what the points
        // give.
        if common::check_fits(&d) == 1 {
            fitted.push(t);
        }
    }
    // Six curves reach 8 MiB: that all six come out flat would be no noise
    // but a broken fit or a broken clock.
    assert!(!fitted.is_empty(), "no transport's curve has a fit");
}

#[test]
fn stream_and_bidir_modes() {
    for (t, mode) in [
        ("thread", "stream"),
        ("shm", "bidir"),
        ("thread", "bidir"),
        ("tcp", "stream"),
        ("unix", "bidir"),
        ("pipe", "bidir"),
        ("unix-dgram", "stream"),
        ("udp", "bidir"),
        ("tcp:completion=poll", "bidir"),
    ] {
        let spec = if mode == "bidir" && matches!(t, "thread" | "shm") {
            format!("{t}:completion=poll")
        } else {
            t.to_string()
        };
        let o = xb(
            &[
                "curve",
                "-q",
                "-t",
                &spec,
                "--mode",
                mode,
                "--window",
                "8",
                "--sizes",
                "64,4k,64k",
                "--point-time",
                "20ms",
                "--format",
                "json",
            ],
            None,
        );
        let d = json(&o);
        let pts = points(&d);
        assert!(!pts.is_empty(), "{t} {mode}");
        for p in pts {
            assert_eq!(p["mode"], mode);
            assert_eq!(p["window"], 8);
            check_point(p);
        }
    }
}

#[test]
fn fill_check_passes_clean_and_catches_a_flipped_bit() {
    for t in ["thread", "shm:buffers=user", "tcp", "unix-dgram"] {
        let clean = xb(
            &[
                "curve",
                "-q",
                "-t",
                t,
                "--payload",
                "fill-check",
                "--sizes",
                "1,7,4k,100000",
                "--point-time",
                "20ms",
                "--format",
                "json",
            ],
            None,
        );
        let d = json(&clean);
        assert_eq!(points(&d).len(), 4, "{t}");
        assert_eq!(points(&d)[0]["payload"], "fill-check");

        // The responder flips one bit in its 50th reply: the run must stop
        // with the size, offset, expected and received value.
        let bad = xb(
            &[
                "curve",
                "-q",
                "-t",
                t,
                "--payload",
                "fill-check",
                "--sizes",
                "4k",
                "--samples",
                "200",
                "--warmup",
                "10",
            ],
            Some("flip-bit:50"),
        );
        let err = String::from_utf8_lossy(&bad.stderr);
        assert_eq!(bad.status.code(), Some(1), "{t}: {err}");
        assert!(
            err.contains("fill-check mismatch in a 4096-byte message at offset 2048"),
            "{t}: {err}"
        );
        assert!(
            err.contains("expected 0x") && err.contains("received 0x"),
            "{err}"
        );
    }
    // Without fill-check the same corruption goes unseen: the check is what catches it.
    let raw = xb(
        &[
            "curve",
            "-q",
            "-t",
            "thread",
            "--sizes",
            "4k",
            "--samples",
            "200",
            "--warmup",
            "10",
            "--format",
            "json",
        ],
        Some("flip-bit:50"),
    );
    assert!(raw.status.success());
}

#[test]
fn fill_check_in_stream_mode_checks_every_message_of_the_window() {
    for t in ["thread", "shm:buffers=user", "tcp", "udp"] {
        let base = [
            "curve",
            "-q",
            "-t",
            t,
            "--mode",
            "stream",
            "--window",
            "8",
            "--payload",
            "fill-check",
        ];
        // Clean, whole and in packets (reassembled byte-exact).
        let clean = xb(
            &[
                &base[..],
                &[
                    "--sizes",
                    "1,999,10000",
                    "--chunk",
                    "1000",
                    "--point-time",
                    "20ms",
                ],
            ]
            .concat(),
            None,
        );
        let err = String::from_utf8_lossy(&clean.stderr);
        assert!(clean.status.success(), "{t}: {err}");
        // The 50th window arrives damaged: the responder's check stops the run.
        let bad = xb(
            &[
                &base[..],
                &["--sizes", "4k", "--samples", "200", "--warmup", "10"],
            ]
            .concat(),
            Some("flip-bit:50"),
        );
        let err = String::from_utf8_lossy(&bad.stderr);
        assert_eq!(bad.status.code(), Some(1), "{t}: {err}");
        assert!(
            err.contains("responder: fill-check mismatch in a 4096-byte message at offset 2048"),
            "{t}: {err}"
        );
    }
}

#[test]
fn packetization_strategies_compare_in_one_table() {
    for t in ["thread:buffers=user", "tcp", "udp"] {
        let o = xb(
            &[
                "curve",
                "-q",
                "-t",
                t,
                "--compare-chunks",
                "256,4096,adaptive",
                "--sizes",
                "1k,64k,1M",
                "--point-time",
                "20ms",
                "--payload",
                "fill-check",
            ],
            None,
        );
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{t}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(text.contains("packetization strategies"), "{text}");
        let header = text
            .lines()
            .find(|l| l.starts_with('|') && l.contains(" size ") && l.contains("adaptive"))
            .unwrap_or_else(|| panic!("{t}: no strategy table header in\n{text}"));
        assert!(header.contains("256") && header.contains("4k"), "{header}");
        assert!(
            text.contains("Adaptive packets for"),
            "{t}: the rule is printed"
        );
    }
    // Packets are reassembled byte-exact: fill-check over every strategy passed above;
    // the JSON records the packet size each message used.
    let o = xb(
        &[
            "curve",
            "-q",
            "-t",
            "unix",
            "--chunk",
            "1000",
            "--sizes",
            "10000,999,1000",
            "--point-time",
            "20ms",
            "--payload",
            "fill-check",
            "--format",
            "json",
        ],
        None,
    );
    let d = json(&o);
    for p in points(&d) {
        let size = p["size_bytes"].as_u64().unwrap();
        assert_eq!(p["packet_bytes"].as_u64().unwrap(), size.min(1000));
    }
}

#[test]
fn csv_and_table_outputs() {
    let o = xb(
        &[
            "curve",
            "-q",
            "-t",
            "pipe",
            "--sizes",
            "1..1k",
            "--point-time",
            "10ms",
            "--format",
            "csv",
        ],
        None,
    );
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("transport,") && lines[0].contains("bandwidth_MBps"));
    assert_eq!(lines.len(), 1 + 11);
    let o = xb(
        &[
            "curve",
            "-q",
            "-t",
            "shm",
            "--sizes",
            "0..64k",
            "--point-time",
            "10ms",
        ],
        None,
    );
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("one-way µs") && text.contains("MB/s (decimal"),
        "{text}"
    );
    // The fit, or the reason there is none: a 10 ms-per-size curve on a busy
    // machine can come out flat, and the table then says so.
    assert!(
        text.contains("Fit (Hockney): t(n) =")
            || text.contains(
                "Fit (Hockney): not enough distinct sizes with a visible bandwidth limit."
            ),
        "{text}"
    );
}

#[test]
fn bad_curve_options_are_usage_errors() {
    for (args, needle) in [
        (
            vec!["curve", "--mode", "bidir", "--payload", "fill-check"],
            "not bidir",
        ),
        (vec!["curve", "--mode", "bidir", "--chunk", "4k"], "bidir"),
        (vec!["curve", "--chunk", "lots"], "malformed chunk"),
        (
            vec!["curve", "--breakpoint", "soon"],
            "malformed breakpoint",
        ),
        (vec!["curve", "--window", "0"], "window"),
        (
            vec!["curve", "--chunk", "4k", "--compare-chunks", "256"],
            "cannot be used with",
        ),
        (
            vec!["curve", "-t", "thread:completion=block", "--mode", "bidir"],
            "completion=poll",
        ),
    ] {
        let o = xb(&args, None);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
