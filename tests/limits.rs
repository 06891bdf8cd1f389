//! `xferbench limits` end to end: the fake sysfs trees under
//! tests/data/sysfs (XFERBENCH_SYSFS) give known links, and this machine's
//! memory is measured. Structure only, never an absolute speed: the
//! machine running the tests may be a loaded VM.

mod common;

use common::{Guarded, finish, xferbench};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn tree(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/sysfs")
        .join(name)
}

/// `xferbench limits ARGS` on the tree `name`, with a cache of its own.
fn limits(name: &str, cache: &Path, args: &[&str]) -> std::process::Output {
    let mut c = xferbench();
    c.arg("limits")
        .args(args)
        .env("XFERBENCH_SYSFS", tree(name))
        .env("XDG_CACHE_HOME", cache);
    finish(c)
}

fn json(name: &str, cache: &Path) -> Value {
    let out = limits(name, cache, &["--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("limits --format json is JSON")
}

#[test]
fn a_gen4_x8_link_of_a_gen5_x16_card_is_15_75_gbps_and_flagged() {
    let cache = tempfile::tempdir().unwrap();
    let out = limits("gen4x8", cache.path(), &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .find(|l| l.contains("0000:41:00.0"))
        .unwrap_or_else(|| panic!("no row for the card:\n{text}"));
    for want in [
        "10de:2331",
        "PCIe 4.0 x8",
        "PCIe 5.0 x16",
        "15.75 GB/s",
        "TRAINED BELOW CAPABLE",
    ] {
        assert!(row.contains(want), "{want} missing: {row}");
    }
    assert!(text.contains("## GPUs"), "{text}");
    assert!(text.contains("trained at PCIe 4.0 x8"), "{text}");

    let j = json("gen4x8", cache.path());
    let card = &j["pci"][0];
    assert_eq!(card["address"], "0000:41:00.0");
    assert_eq!(card["downgraded"], true);
    assert_eq!(card["numa_node"], 1);
    let limit = &card["limit"];
    assert_eq!(limit["unit"], "MB/s");
    assert!(
        (limit["value"].as_f64().unwrap() - 15_753.8).abs() < 0.1,
        "{limit}"
    );
    assert_eq!(j["gpus"].as_array().unwrap().len(), 1);
}

#[test]
fn a_25g_nic_shows_3125_mbps_and_its_link() {
    let cache = tempfile::tempdir().unwrap();
    let out = limits("nic25g", cache.path(), &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text.lines().find(|l| l.contains("eth2")).expect("eth2");
    assert!(
        row.contains("3125 MB/s") && row.contains("0000:03:00.0"),
        "{row}"
    );
    assert!(!text.lines().any(|l| l.starts_with("| lo ")), "{text}");
    let j = json("nic25g", cache.path());
    assert_eq!(j["nics"][0]["limit"]["value"], 3125.0);
    assert_eq!(
        j["nics"][1]["speed_mbit"],
        Value::Null,
        "speed -1 is unknown"
    );
}

#[test]
fn a_gen1_x1_device_and_an_nvme_disk_have_their_links() {
    let cache = tempfile::tempdir().unwrap();
    let j = json("gen1x1", cache.path());
    assert_eq!(j["pci"][0]["limit"]["value"], 250.0);
    assert_eq!(j["pci"][0]["downgraded"], false);
    let j = json("nvme4x4", cache.path());
    let disk = &j["disks"][0];
    assert_eq!(disk["name"], "nvme0n1");
    assert_eq!(disk["pci"], "0000:02:00.0");
    assert_eq!(disk["limit"]["what"], "PCIe 4.0 x4");
}

/// Memory is measured whatever the tree, kept in the cache, and a second
/// run reads it back (the same figures) unless told --refresh.
#[test]
fn memory_is_measured_once_and_kept() {
    let cache = tempfile::tempdir().unwrap();
    let first = json("gen1x1", cache.path());
    let m = &first["memory"];
    for k in ["copy_one_core", "copy_all_cores", "clock"] {
        assert!(m[k]["value"].as_f64().unwrap() > 0.0, "{k}: {m}");
    }
    let kept = cache.path().join("xferbench/limits.json");
    assert!(kept.exists());
    assert!(
        m["copy_one_core"]["source"]
            .as_str()
            .unwrap()
            .contains("--refresh")
    );
    let second = json("gen1x1", cache.path());
    let busy = |j: &Value| {
        j["copy_one_core"]["source"]
            .as_str()
            .unwrap()
            .contains("other task")
    };
    // Taken while other tasks ran (tests beside this one), the figures are
    // measured again by the first run that finds the machine quiet, which
    // the second may or may not have; taken quiet, they are read back.
    if !busy(m) {
        assert_eq!(second["memory"]["copy_one_core"], m["copy_one_core"]);
    } else if second["memory"]["copy_one_core"] != m["copy_one_core"] {
        assert!(
            !busy(&second["memory"]),
            "measured again, on a quiet machine"
        );
    }
    let csv = limits("gen1x1", cache.path(), &["--format", "csv", "--refresh"]);
    assert!(csv.status.success());
    let text = String::from_utf8_lossy(&csv.stdout);
    assert!(text.starts_with("kind,name,pci,value,unit,what"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("pci,") && l.contains(",250.0,MB/s,")),
        "{text}"
    );
    let third = json("gen1x1", cache.path());
    // Measured again and kept: a copy rate timed to the nanosecond does
    // not come out the same twice.
    assert_ne!(
        third["memory"]["copy_one_core"]["value"], m["copy_one_core"]["value"],
        "--refresh measured again and kept it"
    );
}

/// Memory figures taken while other work ran are said to be and kept
/// marked; a run that finds the machine still busy reads them back (it
/// could measure no better), one that finds it quiet measures again. A run
/// confined to other CPUs keeps its own figures beside them.
#[test]
fn figures_taken_beside_other_work_are_marked_and_cpu_sets_kept_apart() {
    let cache = tempfile::tempdir().unwrap();
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let hogs: Vec<Guarded> = (0..cpus)
        .map(|_| Guarded::spawn(Command::new("sh").args(["-c", "while :; do :; done"])).unwrap())
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let first = json("gen1x1", cache.path());
    let second = json("gen1x1", cache.path());
    drop(hogs);
    let one = |j: &Value| j["memory"]["copy_one_core"].clone();
    let source = one(&first)["source"].as_str().unwrap().to_string();
    assert!(source.contains("other task"), "{source}");
    assert!(source.contains("--refresh"), "{source}");
    assert_eq!(one(&second), one(&first), "still busy: read back");
    let file = cache.path().join("xferbench/limits.json");
    let kept = |f: &Path| -> Vec<Value> {
        serde_json::from_str::<Vec<Value>>(&std::fs::read_to_string(f).unwrap()).unwrap()
    };
    assert_eq!(kept(&file).len(), 1, "one key, kept once");
    assert!(kept(&file)[0]["others_running"].as_u64().unwrap() >= 1);
    // Confined to one CPU: a key of its own, beside the first.
    let mut c = Command::new("taskset");
    c.args(["-c", "0"])
        .arg(env!("CARGO_BIN_EXE_xferbench"))
        .args(["limits", "--format", "json"])
        .env("XFERBENCH_SYSFS", tree("gen1x1"))
        .env("XDG_CACHE_HOME", cache.path());
    assert!(finish(c).status.success());
    let keys: Vec<String> = kept(&file)
        .iter()
        .map(|e| e["key"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert_ne!(keys[0], keys[1]);
}

#[test]
fn no_pcie_links_is_said_plainly_and_a_cache_that_cannot_be_written_is_no_error() {
    let empty = tempfile::tempdir().unwrap();
    let mut c = xferbench();
    c.args(["limits", "--format", "json"])
        .env("XFERBENCH_SYSFS", empty.path())
        .env("XDG_CACHE_HOME", "/proc/no-cache-here");
    let out = finish(c);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        j["notes"][0].as_str().unwrap().contains("no PCI functions"),
        "{j}"
    );
    assert!(j["memory"]["copy_one_core"]["value"].as_f64().unwrap() > 0.0);
}

#[test]
fn html_and_output_files_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let (html, out) = (dir.path().join("l.html"), dir.path().join("l.txt"));
    let o = limits(
        "gen4x8",
        dir.path(),
        &[
            "--html",
            html.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.is_empty());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("15.75 GB/s"));
    assert!(page.contains("class=\"bad\""));
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .contains("15.75 GB/s")
    );
    let bad = limits("gen4x8", dir.path(), &["--format", "yaml"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// A fake tree that is not there is one usage line, not an empty survey.
#[test]
fn a_sysfs_tree_that_is_not_a_directory_is_refused_in_one_line() {
    let cache = tempfile::tempdir().unwrap();
    let o = limits("no-such-tree", cache.path(), &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("XFERBENCH_SYSFS="), "{err}");
}
