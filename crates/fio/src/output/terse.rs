//! fio's terse output, version 3 (`--output-format=terse`, `--minimal`):
//! semicolon-separated lines projected from fio's JSON document.

use crate::result::PERCENTILES;
use std::fmt::Write;

/// fio's terse lines of `doc` (fio's JSON document): one line per entry of its `jobs`
/// (merged groups as one), its numbers projected from that JSON: the
/// general fields; reads then writes (KiB, KiB/s, IOPS, ms; slat, clat and
/// lat in µs; 20 percentile slots; the bandwidth samples); CPU; the depth
/// and latency maps (ns folded into the first µs range, as fio does); then
/// each disk's counters.
pub fn render(doc: &serde_json::Value) -> String {
    let version = doc["fio version"].as_str().unwrap_or("xferbench");
    let mut disks = String::new();
    for d in doc["disk_util"].as_array().into_iter().flatten() {
        let n = |k: &str| d[k].as_u64().unwrap_or(0);
        let _ = write!(
            disks,
            ";{};{};{};{};{};{};{};{};{:.2}%",
            d["name"].as_str().unwrap_or(""),
            n("read_ios"),
            n("write_ios"),
            n("read_merges"),
            n("write_merges"),
            n("read_ticks"),
            n("write_ticks"),
            n("in_queue"),
            d["util"].as_f64().unwrap_or(0.0)
        );
    }
    let mut out = String::new();
    for j in doc["jobs"].as_array().into_iter().flatten() {
        let _ = write!(
            out,
            "3;{version};{};{};{}",
            j["jobname"].as_str().unwrap_or(""),
            j["groupid"].as_u64().unwrap_or(0),
            j["error"].as_i64().unwrap_or(0)
        );
        for dir in ["read", "write"] {
            terse_dir(&mut out, &j[dir]);
        }
        let f = |k: &str| j[k].as_f64().unwrap_or(0.0);
        let n = |k: &str| j[k].as_u64().unwrap_or(0);
        let _ = write!(
            out,
            ";{:.6}%;{:.6}%;{};{};{}",
            f("usr_cpu"),
            f("sys_cpu"),
            n("ctx"),
            n("majf"),
            n("minf")
        );
        let map = |k: &str| -> Vec<f64> {
            j[k].as_object()
                .map(|m| m.values().map(|v| v.as_f64().unwrap_or(0.0)).collect())
                .unwrap_or_default()
        };
        for k in ["1", "2", "4", "8", "16", "32", ">=64"] {
            let _ = write!(
                out,
                ";{:.1}%",
                j["iodepth_level"][k].as_f64().unwrap_or(0.0)
            );
        }
        let below_us: f64 = map("latency_ns").iter().sum();
        for (i, k) in [
            "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
        ]
        .iter()
        .enumerate()
        {
            let v = j["latency_us"][k].as_f64().unwrap_or(0.0);
            let _ = write!(out, ";{:.2}%", if i == 0 { v + below_us } else { v });
        }
        for k in [
            "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
        ] {
            let _ = write!(out, ";{:.2}%", j["latency_ms"][k].as_f64().unwrap_or(0.0));
        }
        out.push_str(&disks);
        out.push('\n');
    }
    out
}

/// One direction's terse fields, from its JSON object.
fn terse_dir(out: &mut String, d: &serde_json::Value) {
    let n = |k: &str| d[k].as_u64().unwrap_or(0);
    let runtime = n("runtime");
    let bw = (1000 * n("io_bytes")).checked_div(runtime).unwrap_or(0) / 1024;
    let iops = (1000 * n("total_ios")).checked_div(runtime).unwrap_or(0);
    let _ = write!(out, ";{};{bw};{iops};{runtime}", n("io_kbytes"));
    let us = |o: &serde_json::Value| {
        format!(
            ";{};{};{:.6};{:.6}",
            o["min"].as_u64().unwrap_or(0) / 1000,
            o["max"].as_u64().unwrap_or(0) / 1000,
            o["mean"].as_f64().unwrap_or(0.0) / 1000.0,
            o["stddev"].as_f64().unwrap_or(0.0) / 1000.0
        )
    };
    out.push_str(&us(&d["slat_ns"]));
    out.push_str(&us(&d["clat_ns"]));
    for p in PERCENTILES {
        let v = d["clat_ns"]["percentile"][format!("{p:.6}")]
            .as_u64()
            .unwrap_or(0);
        let _ = write!(out, ";{p:.6}%={}", v / 1000);
    }
    // fio's list has room for 20.
    out.push_str(&";0%=0".repeat(20 - PERCENTILES.len()));
    out.push_str(&us(&d["lat_ns"]));
    let f = |k: &str| d[k].as_f64().unwrap_or(0.0);
    let _ = write!(
        out,
        ";{};{};{:.6}%;{:.6};{:.6}",
        n("bw_min"),
        n("bw_max"),
        f("bw_agg"),
        f("bw_mean"),
        f("bw_dev")
    );
}
