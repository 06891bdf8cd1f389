//! `mesh` and `curve --pairs`: bad input everywhere; with the `mpi`
//! feature, real jobs under `mpirun -n 3` and `-n 4` on this machine
//! (oversubscribed: the figures are noisy, so only structure, the injected
//! slow rank and loose ratios are asserted).

mod common;
use common::{finish, stderr, xferbench};

#[test]
fn mesh_outside_mpi_says_how_to_start_it() {
    let o = finish({
        let mut c = xferbench();
        c.args(["mesh", "-t", "mpi"]);
        for v in ["OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"] {
            c.env_remove(v);
        }
        c
    });
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("mpirun -n N"), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

#[test]
fn bad_mesh_and_pairs_flags_are_usage_errors() {
    for args in [
        &["mesh", "-t", "tcp"][..],
        &["mesh", "--min-bandwidth", "fast"],
        &["mesh", "--min-bandwidth", "-3"],
        &["mesh", "--inject-delay", "1"],
        &["mesh", "--inject-delay", "x:1us"],
        &["mesh", "--latency-size", "3Q"],
        &["mesh", "--bandwidth-size", "0"],
        &["mesh", "--duration", "0s"],
        &["curve", "-t", "thread", "--pairs", "2"],
        &["curve", "-t", "mpi", "--pairs", "0"],
    ] {
        let o = finish({
            let mut c = xferbench();
            c.args(args);
            c
        });
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert_eq!(e.trim().lines().count(), 1, "{args:?}: {e}");
        assert!(!e.contains("panicked"), "{args:?}: {e}");
    }
}

#[test]
fn mesh_refuses_to_repeat() {
    let o = finish({
        let mut c = xferbench();
        c.args(["mesh", "-t", "mpi", "--repeat", "2"]);
        c
    });
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(
        e.contains("mesh does not repeat sweeps yet: run the job K times and compare the files"),
        "{e}"
    );
}

#[test]
fn bandwidth_units_read_as_written() {
    use xferbench::options::MeshConfig;
    let parse = xferbench::options::parse_bandwidth;
    assert_eq!(parse("5000").unwrap(), 5000.0);
    assert_eq!(parse("5GB/s").unwrap(), 5000.0);
    assert_eq!(parse("100Gb/s").unwrap(), 12500.0);
    assert_eq!(parse("800MB/s").unwrap(), 800.0);
    assert!(parse("0").is_err() && parse("5 parsecs").is_err());
    let c = MeshConfig {
        sizes: vec![1 << 20, 8, 4096],
        latency_size: 3,
        ..MeshConfig::default()
    };
    // The matrices take the listed sizes nearest the asked-for ones' roles.
    assert_eq!(c.latency_matrix_size(), 8);
    assert_eq!(c.bandwidth_matrix_size(), 1 << 20);
    // A 0 in the sweep is a latency point only.
    let z = MeshConfig {
        sizes: vec![0, 64],
        ..MeshConfig::default()
    };
    assert!(z.validate().is_ok());
    assert_eq!(z.latency_sizes(), [0, 64]);
    assert_eq!(z.bandwidth_sizes(), [64]);
}

#[cfg(feature = "mpi")]
mod mpi {
    use super::common::{finish, stderr};
    use serde_json::Value;
    use std::process::{Command, Output};

    /// `mpirun -n N xferbench ARGS…` (space-separated), then `more`.
    fn mpirun(n: usize, args: &str, more: &[&str]) -> Output {
        let mut c = Command::new("mpirun");
        c.args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-n",
            &n.to_string(),
        ])
        .arg(env!("CARGO_BIN_EXE_xferbench"))
        .args(args.split_whitespace())
        .args(more);
        finish(c)
    }

    fn json(o: &Output) -> Value {
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}): {}\nstderr: {}",
                String::from_utf8_lossy(&o.stdout),
                stderr(o)
            )
        })
    }

    /// The rank and host findings: (metric, rank) of each rank finding,
    /// and the count of host findings.
    fn flagged(d: &Value) -> (Vec<(String, u64)>, usize) {
        let mut ranks = Vec::new();
        let mut hosts = 0;
        for s in d["suspects"].as_array().unwrap() {
            let subj = &s["finding"]["subject"];
            match subj["kind"].as_str().unwrap() {
                "rank" => ranks.push((
                    s["metric"].as_str().unwrap().to_string(),
                    subj["rank"].as_u64().unwrap(),
                )),
                "host" => hosts += 1,
                _ => {}
            }
        }
        (ranks, hosts)
    }

    fn check_complete(d: &Value, n: usize) {
        assert_eq!(d["experiment"], "mesh");
        assert_eq!(d["complete"], true, "{}", d["stopped_by"]);
        assert_eq!(d["ranks_total"].as_u64().unwrap() as usize, n);
        assert_eq!(d["ranks"].as_array().unwrap().len(), n);
        for r in d["ranks"].as_array().unwrap() {
            assert!(!r["host"].as_str().unwrap().is_empty());
        }
        let m = &d["matrices"];
        for k in ["latency_p50_us", "latency_p99_us", "bandwidth_MBps"] {
            let rows = m[k].as_array().unwrap();
            assert_eq!(rows.len(), n, "{k}");
            for (i, row) in rows.iter().enumerate() {
                let row = row.as_array().unwrap();
                assert_eq!(row.len(), n, "{k}");
                for (j, c) in row.iter().enumerate() {
                    if i == j {
                        assert!(c.is_null(), "{k}: the diagonal is empty");
                    } else {
                        assert!(c.as_f64().is_some_and(|v| v > 0.0), "{k}[{i}][{j}] = {c}");
                    }
                }
            }
        }
        let pts = d["points"].as_array().unwrap();
        assert_eq!(pts.len(), n * (n - 1), "one point per ordered pair");
        for p in pts {
            assert_eq!(p["missing"], false);
            assert!(
                p["latency"][0]["oneway"]["count"].as_u64().unwrap() >= 10,
                "{p}"
            );
            // What a comparison needs: the one-way histogram, and the
            // timed loop's blocks adding up to the point's count.
            for l in p["latency"].as_array().unwrap() {
                assert!(
                    l["histogram"].as_str().is_some_and(|h| !h.is_empty()),
                    "{l}"
                );
                let blocks = l["intervals"].as_array().unwrap();
                assert!((1..=10).contains(&blocks.len()), "{l}");
                let n: u64 = blocks
                    .iter()
                    .map(|b| b["count"].as_f64().unwrap() as u64)
                    .sum();
                assert_eq!(n, l["oneway"]["count"].as_u64().unwrap(), "{l}");
            }
            assert!(
                p["bandwidth"][0]["window_time"]["count"].as_u64().unwrap() >= 3,
                "{p}"
            );
        }
        assert!(d["missing"].as_array().unwrap().is_empty());
        assert_eq!(d["schedule"]["kind"], "tournament");
        // Every rank on this host: one limit, memory's, beside the best
        // pair's bandwidth.
        let l = &d["limits"][0];
        assert!(
            l["spec"].as_str().unwrap().starts_with("mesh within "),
            "{l}"
        );
        assert_eq!(l["limit"]["what"], "memory copy, 1 core", "{l}");
        let best = pts
            .iter()
            .flat_map(|p| p["bandwidth"].as_array().unwrap())
            .map(|b| b["bandwidth_MBps"].as_f64().unwrap())
            .fold(0.0, f64::max);
        assert_eq!(l["best"]["value"].as_f64(), Some(best), "{l}");
        assert!(
            l["figure"].as_str().unwrap().contains("between hosts"),
            "{l}"
        );
    }

    #[test]
    fn a_slow_rank_is_flagged_and_no_other_with_three_and_four_ranks() {
        let _t = super::common::turn();
        for n in [3, 4] {
            // 20 ms dwarfs what a loaded machine's time slices do to the
            // others (a few ms), and 200 ms per measurement steadies their
            // medians.
            let args = "mesh -t mpi --duration 200ms --bandwidth-size 64k --window 8 --inject-delay 1:20ms --format json";
            let o = mpirun(n, args, &[]);
            assert!(o.status.success(), "n={n}: {}", stderr(&o));
            let d = json(&o);
            check_complete(&d, n);
            let (ranks, hosts) = flagged(&d);
            assert!(
                ranks.iter().any(|(_, r)| *r == 1),
                "n={n}: rank 1 not flagged: {:#}",
                d["suspects"]
            );
            assert!(
                ranks.iter().all(|(_, r)| *r == 1),
                "n={n}: another rank flagged: {:#}",
                d["suspects"]
            );
            assert_eq!(hosts, 0, "n={n}: one host only");
            // The re-test measured rank 1's cells again and agreed.
            let s = d["suspects"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["metric"] == "latency")
                .unwrap();
            assert!(!s["retest"].as_array().unwrap().is_empty(), "{s}");
            assert_eq!(s["confirmed"], true, "{s}");
            // 20 ms before rank 1's one send in each round trip: half of
            // it shows in the one-way figure.
            let lat = &d["matrices"]["latency_p50_us"];
            assert!(lat[0][1].as_f64().unwrap() > 9_000.0, "{lat}");
            assert!(stderr(&o).contains("suspect: rank 1"), "{}", stderr(&o));
        }
    }

    #[test]
    fn concurrent_rounds_give_the_same_complete_matrices_in_csv_too() {
        let _t = super::common::turn();
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("m.json");
        let o = mpirun(
            4,
            "mesh -t mpi --duration 10ms --concurrent --no-retest -o",
            &[f.to_str().unwrap()],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let d: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        check_complete(&d, 4);
        assert_eq!(d["schedule"]["mode"], "concurrent");
        let o = mpirun(3, "mesh -t mpi --duration 10ms --format csv", &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        let csv = String::from_utf8_lossy(&o.stdout);
        assert_eq!(
            csv.lines().count(),
            1 + 6,
            "a header and one row per ordered pair: {csv}"
        );
    }

    #[test]
    fn a_stalled_rank_ends_the_run_with_a_partial_matrix_and_exit_1() {
        let _t = super::common::turn();
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("partial.json");
        let o = mpirun(
            4,
            "mesh -t mpi --duration 10ms --timeout 2s --inject-stall 2 -o",
            &[f.to_str().unwrap()],
        );
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("rank 2 stopped answering"),
            "{}",
            stderr(&o)
        );
        let d: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        assert_eq!(d["complete"], false);
        let missing = d["missing"].as_array().unwrap();
        assert!(!missing.is_empty());
        assert!(missing.iter().any(|c| c[0] == 2 || c[1] == 2));
        // The first round was measured and kept.
        assert!(
            d["points"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["missing"] == false)
        );
    }

    #[test]
    fn ranks_that_disagree_or_a_lone_rank_are_refused() {
        let _t = super::common::turn();
        let bin = env!("CARGO_BIN_EXE_xferbench");
        let mut c = Command::new("mpirun");
        c.args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-n",
            "1",
            bin,
            "mesh",
            "--duration",
            "10ms",
        ])
        .args([":", "-n", "1", bin, "mesh", "--duration", "20ms"]);
        let o = finish(c);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("same command line"), "{}", stderr(&o));
        let o = mpirun(1, "mesh -t mpi", &[]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("at least two ranks"), "{}", stderr(&o));
        let o = mpirun(3, "curve -t mpi --pairs 2 --sizes 1k", &[]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("needs 4 ranks"), "{}", stderr(&o));
    }

    #[test]
    fn the_health_gate_fails_the_job_and_lists_the_pairs() {
        let _t = super::common::turn();
        let o = mpirun(
            3,
            "mesh -t mpi --duration 10ms --no-retest --min-bandwidth 100TB/s --format json",
            &[],
        );
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let d = json(&o);
        assert_eq!(d["health"]["passed"], false);
        assert_eq!(d["health"]["failing"].as_array().unwrap().len(), 6);
        assert_eq!(d["health"]["failing_ranks"].as_array().unwrap().len(), 3);
        assert!(
            stderr(&o).contains("health gate failed for 6 pair(s)"),
            "{}",
            stderr(&o)
        );
        let o = mpirun(
            3,
            "mesh -t mpi --duration 10ms --no-retest --max-latency 10s --format json",
            &[],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(json(&o)["health"]["passed"], true);
    }

    #[test]
    fn pairs_repeat_whole_sweeps_and_merge_each_size() {
        let _t = super::common::turn();
        let o = mpirun(
            2,
            "curve -t mpi --pairs 1 --sizes 4k,64k --duration 20ms --repeat 3 --format json",
            &[],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let d = json(&o);
        let pts = d["points"].as_array().unwrap();
        assert_eq!(pts.len(), 2, "one point per size, repeats merged");
        for p in pts {
            let reps = p["repeats"].as_array().unwrap();
            assert_eq!(reps.len(), 3, "{p}");
            let agg = p["aggregate_MBps"].as_f64().unwrap();
            let each: Vec<f64> = reps
                .iter()
                .map(|r| r["aggregate_MBps"].as_f64().unwrap())
                .collect();
            // All bytes over all time: within the repeats' own range.
            let (lo, hi) = each
                .iter()
                .fold((f64::INFINITY, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
            assert!(
                agg >= lo * 0.999 && agg <= hi * 1.001,
                "{agg} not in {each:?}"
            );
            let pair = &p["pairs"][0];
            assert_eq!(pair["window_time"]["count"], p["windows"], "{p}");
        }
    }

    #[test]
    fn two_pairs_at_once_move_at_least_about_what_one_pair_does() {
        let _t = super::common::turn();
        let agg = |k: &str| -> (f64, Value) {
            let o = mpirun(
                4,
                "curve -t mpi --pairs",
                &[
                    k,
                    "--sizes",
                    "64k,1M",
                    "--duration",
                    "50ms",
                    "--format",
                    "json",
                ],
            );
            assert!(o.status.success(), "{}", stderr(&o));
            let d = json(&o);
            assert_eq!(d["experiment"], "pairs");
            let pts = d["points"].as_array().unwrap();
            assert_eq!(pts.len(), 2);
            for p in pts {
                let pairs = p["pairs"].as_array().unwrap();
                assert_eq!(pairs.len(), k.parse::<usize>().unwrap());
                for q in pairs {
                    assert!(q["bandwidth_MBps"].as_f64().unwrap() > 0.0);
                    assert!(q["window_time"]["count"].as_u64().unwrap() >= 3);
                }
                // The aggregate is every pair's bytes over the longest time.
                let sum: f64 = pairs
                    .iter()
                    .map(|q| q["bandwidth_MBps"].as_f64().unwrap())
                    .sum();
                assert!(p["aggregate_MBps"].as_f64().unwrap() <= sum * 1.0001);
            }
            // K cores copying memory stand beside the aggregate.
            let l = &d["limits"][0];
            let pairs = if k == "1" { "1 pair" } else { "2 pairs" };
            assert!(l["spec"].as_str().unwrap().starts_with(pairs), "{l}");
            assert!(l["limit"]["value"].as_f64().unwrap() > 0.0, "{l}");
            let best = pts
                .iter()
                .map(|p| p["aggregate_MBps"].as_f64().unwrap())
                .fold(0.0, f64::max);
            assert_eq!(l["best"]["value"].as_f64(), Some(best), "{l}");
            (pts[1]["aggregate_MBps"].as_f64().unwrap(), d)
        };
        let (one, _) = agg("1");
        let (two, d) = agg("2");
        assert_eq!(d["points"][0]["pairs"][1]["from"], 1);
        assert_eq!(d["points"][0]["pairs"][1]["to"], 3);
        // Four spinning ranks share two cores here, so two pairs cannot be
        // asked to double one, and beside other load (CI with two CPU hogs
        // measured 0.49) the spinning ranks wait on descheduled peers: a
        // very loose sanity ratio only, against an aggregate wrong by a
        // whole factor.
        assert!(two >= 0.2 * one, "2 pairs {two} MB/s vs 1 pair {one} MB/s");
        eprintln!("aggregate at 1 MiB: 1 pair {one:.0} MB/s, 2 pairs {two:.0} MB/s");
    }
}
