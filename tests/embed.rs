//! The library without the CLI: `examples/embed.rs` measures a round trip and
//! a curve through the public API and prints one JSON document. `cargo test`
//! builds the examples beside the test binaries, so this runs the real one.

mod common;

use common::{finish, json, stderr, turn};
use std::path::PathBuf;
use std::process::Command;

/// target/<profile>/examples/embed, found from this test binary's own path
/// (target/<profile>/deps/embed-HASH).
fn embed() -> Command {
    let me = std::env::current_exe().expect("test binary path");
    let profile = me
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    let exe: PathBuf = profile
        .join("examples")
        .join(format!("embed{}", std::env::consts::EXE_SUFFIX));
    assert!(
        exe.exists(),
        "{} missing: `cargo test` builds the examples",
        exe.display()
    );
    Command::new(exe)
}

#[test]
fn the_embedding_example_prints_a_round_trip_and_a_curve_as_json() {
    let _t = turn();
    let d = json(&finish(embed()));
    let rt = &d["roundtrip"];
    assert_eq!(rt["experiment"], "roundtrip");
    assert_eq!(rt["complete"], true);
    let points = rt["points"].as_array().expect("roundtrip points");
    // 2 request sizes × 1 reply size on one transport configuration.
    assert_eq!(points.len(), 2, "{rt}");
    for p in points {
        assert_eq!(p["transport"], "thread");
        assert_eq!(p["summary"]["count"], 2000, "{p}");
        assert!(p["summary"]["min_ns"].as_u64().unwrap() > 0, "{p}");
    }
    let cv = &d["curve"];
    assert_eq!(cv["experiment"], "curve");
    assert_eq!(cv["complete"], true);
    let sizes: Vec<u64> = cv["points"]
        .as_array()
        .expect("curve points")
        .iter()
        .map(|p| p["size_bytes"].as_u64().expect("size_bytes"))
        .collect();
    assert_eq!(sizes, [64, 1024, 16 * 1024, 64 * 1024]);
    // Recorded like a CLI run: the environment and the options it ran with.
    assert!(rt["env"]["clock"].is_object(), "{}", rt["env"]);
    assert_eq!(rt["options"]["in"], serde_json::json!([64, 4096]));
}

#[test]
fn the_embedding_example_reports_a_bad_transport_as_an_error() {
    let _t = turn();
    let o = finish({
        let mut c = embed();
        c.arg("nosuch");
        c
    });
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("unknown transport 'nosuch'"), "{e}");
    assert!(o.stdout.is_empty());
}

/// An experiment pins its initiator to the calling thread while it runs; a
/// program that calls several in a row must get its thread back as it was
/// (before this held, a second experiment found its thread confined to the
/// first one's CPU, both endpoints spinning on one core: 17 s instead of
/// 15 ms for the example above).
#[test]
fn an_experiment_gives_the_calling_thread_its_cpus_back() {
    let _t = turn();
    let ids = || {
        let mut v: Vec<usize> = core_affinity::get_core_ids()
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.id)
            .collect();
        v.sort_unstable();
        v
    };
    let before = ids();
    let mut c = xferbench::RoundtripConfig {
        in_sizes: vec![64],
        out_sizes: vec![64],
        ..Default::default()
    };
    c.common.amount = Some(xferbench::options::Amount::Samples(100));
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (run, err) = xferbench::roundtrip(&c, &stop, &()).expect("a round trip on thread");
    assert!(err.is_none() && run.complete);
    // Pinned during the run (when there were two CPUs to choose from) ...
    if before.len() >= 2 {
        assert!(run.placement.initiator_cpu.is_some(), "{:?}", run.placement);
    }
    // ... and the whole mask back after it.
    assert_eq!(ids(), before);
}
