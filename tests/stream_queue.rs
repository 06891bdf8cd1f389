//! `xferbench stream` keeps its queue as fio keeps it, and counts what
//! fio's JSON counts of it: `iodepth_level` at the job's depth once the
//! queue is full, one I/O per submission by default and batches with
//! `iodepth_batch_submit`; and the job thread's page faults and context
//! switches are measured, not a constant. Structure and loose bounds only:
//! never a time or a speed.

mod common;

use common::json;
use serde_json::Value;
use std::path::Path;

/// Runs the job file `text` from `dir`; its first job's JSON.
fn job(dir: &Path, text: &str) -> Option<Value> {
    let f = dir.join("q.fio");
    std::fs::write(&f, text).unwrap();
    let mut c = common::xferbench();
    c.args(["--quiet", "stream", "--output-format", "json"])
        .arg(&f)
        .current_dir(dir);
    let o = common::finish(c);
    let err = common::stderr(&o);
    if !o.status.success() && (err.contains("io_uring") || err.contains("io_setup")) {
        eprintln!("engine unavailable here: {err}");
        return None;
    }
    Some(json(&o)["jobs"][0].clone())
}

fn pct(j: &Value, map: &str, key: &str) -> f64 {
    j[map][key]
        .as_f64()
        .unwrap_or_else(|| panic!("{map}.{key} in {j}"))
}

#[test]
fn a_full_queue_stays_at_its_depth_with_one_io_a_submission() {
    let _t = common::turn();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    for engine in ["null", "libaio", "io_uring"] {
        let text = format!(
            "[q]\nfilename={data}\nioengine={engine}\nrw=randread\nbs=4k\nsize=2m\niodepth=8\n"
        );
        let Some(j) = job(dir.path(), &text) else {
            continue;
        };
        // 512 I/Os: the first seven fill the queue, the rest go in at 8.
        assert!(pct(&j, "iodepth_level", "8") >= 90.0, "{engine}: {j}");
        assert_eq!(pct(&j, "iodepth_submit", "4"), 100.0, "{engine}: {j}");
        assert!(pct(&j, "iodepth_complete", "4") >= 90.0, "{engine}: {j}");
        // Every I/O's submission was timed, and lat is slat + clat.
        let r = &j["read"];
        let n = r["total_ios"].as_u64().unwrap();
        assert_eq!(r["slat_ns"]["N"].as_u64(), Some(n), "{engine}");
        let mean = |k: &str| r[k]["mean"].as_f64().unwrap();
        let sum = mean("slat_ns") + mean("clat_ns");
        assert!(
            (mean("lat_ns") - sum).abs() <= 0.01 * sum + 1.0,
            "{engine}: {r}"
        );
        // Batches of eight, submitted and reaped together.
        let batched = format!("{text}iodepth_batch_submit=8\niodepth_batch_complete_min=8\n");
        let Some(j) = job(dir.path(), &batched) else {
            continue;
        };
        assert_eq!(pct(&j, "iodepth_submit", "8"), 100.0, "{engine}: {j}");
        assert_eq!(pct(&j, "iodepth_level", "8"), 100.0, "{engine}: {j}");
    }
}

#[test]
fn page_faults_and_context_switches_are_the_jobs_own() {
    let _t = common::turn();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("m").display().to_string();
    // Writing through a mapping faults in every page it writes: the job's
    // minor faults follow its size (a 4 KiB page, 2 MiB or 8 MiB).
    let minf = |size: &str| {
        let text = format!("[m]\nfilename={data}\nioengine=mmap\nrw=write\nbs=4k\nsize={size}\n");
        job(dir.path(), &text).unwrap()["minf"].as_u64().unwrap()
    };
    let (small, large) = (minf("2m"), minf("8m"));
    assert!(
        small >= 256,
        "2 MiB written through a mapping: {small} minor faults"
    );
    assert!(
        large >= 1024 && large > 2 * small,
        "{small} then {large} minor faults"
    );
    // Each thinktime pause sleeps: at least one switch a pause.
    let text =
        format!("[t]\nfilename={data}\nioengine=null\nrw=read\nbs=4k\nsize=64k\nthinktime=2ms\n");
    let j = job(dir.path(), &text).unwrap();
    assert!(j["ctx"].as_u64().unwrap() >= 15, "16 I/Os, 15 pauses: {j}");
    assert!(j["majf"].is_u64(), "{j}");
}
