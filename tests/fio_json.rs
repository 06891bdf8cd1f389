//! `xferbench stream`'s JSON read by what reads fio's: every key fio 3.33
//! writes for a psync job is there with the same JSON type (the list is
//! tests/fixtures/fio-3.33-json-plus-keys.txt, and when fio is installed
//! the same job run by fio too); fio's own `fio_jsonplus_clat2csv` turns
//! the json+ histogram into rows that add up to the I/Os; a fio-plot-like
//! reader finds its keys; terse lines have fio's fields; slat, lat and the
//! bandwidth samples mean what fio's do. Times are never asserted.

mod common;

use common::{json, stderr};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// `xferbench --quiet stream ARGS…` run in `dir`.
fn stream(dir: &Path, args: &[&str]) -> Output {
    let mut c = common::xferbench();
    c.arg("--quiet").arg("stream").args(args).current_dir(dir);
    common::finish(c)
}

/// A small psync random-read job, as fio's reference run had it.
fn job_file(dir: &Path) -> String {
    let f = dir.join("job.fio");
    std::fs::write(
        &f,
        format!(
            "[global]\nioengine=psync\nbs=4k\n[job1]\nfilename={}\nrw=randread\nsize=1m\n",
            dir.join("data").display()
        ),
    )
    .unwrap();
    f.display().to_string()
}

/// A JSON value's type as the key list names it.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every (path, type) of `v`, arrays by their first element, the maps
/// whose keys are data (options, percentiles, bins) not entered.
fn paths(v: &Value, at: &str, out: &mut Vec<(String, &'static str)>) {
    if !at.is_empty() {
        out.push((at.to_string(), kind(v)));
    }
    let data = ["bins", "percentile", "job options", "global options"];
    match v {
        Value::Object(m) if !data.iter().any(|d| at.ends_with(d)) => {
            for (k, x) in m {
                paths(x, &format!("{at}/{k}"), out);
            }
        }
        Value::Array(a) if !a.is_empty() => paths(&a[0], &format!("{at}/0"), out),
        _ => {}
    }
}

/// The keys of `want` (path type) missing from `got` or of another type;
/// `disk_util`'s entries only where both have one (it lists the block
/// device under the file, which a tmpfs or overlay has none of).
fn missing(want: &[(String, String)], got: &Value) -> Vec<String> {
    let mut have = Vec::new();
    paths(got, "", &mut have);
    let disks = got["disk_util"].as_array().is_some_and(|a| !a.is_empty());
    want.iter()
        .filter(|(p, _)| disks || !p.starts_with("/disk_util/0"))
        .filter(|(p, t)| !have.iter().any(|(q, u)| q == p && u == t))
        .map(|(p, t)| format!("{p} ({t})"))
        .collect()
}

#[test]
fn every_key_fio_writes_is_there_with_fios_type() {
    let dir = tempfile::tempdir().unwrap();
    let job = job_file(dir.path());
    let o = stream(dir.path(), &[&job, "--output-format=json+"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ours = json(&o);
    let list = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio-3.33-json-plus-keys.txt"),
    )
    .unwrap();
    let want: Vec<(String, String)> = list
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(p, t)| (p.to_string(), t.replace("dict", "object")))
        .collect();
    assert!(want.len() > 200, "{}", want.len());
    let gone = missing(&want, &ours);
    assert!(gone.is_empty(), "missing or of another type: {gone:?}");
    // fio itself on the same job, when it is installed (CI installs it).
    let Ok(fio) = Command::new("fio")
        .args(["--output-format=json+", &job])
        .current_dir(dir.path())
        .output()
    else {
        eprintln!("fio is not installed: compared with the stored fio 3.33 key list only");
        return;
    };
    assert!(
        fio.status.success(),
        "{}",
        String::from_utf8_lossy(&fio.stderr)
    );
    let theirs: Value = serde_json::from_slice(&fio.stdout).unwrap();
    let mut want = Vec::new();
    paths(&theirs, "", &mut want);
    let want: Vec<(String, String)> = want.into_iter().map(|(p, t)| (p, t.into())).collect();
    let gone = missing(&want, &ours);
    assert!(gone.is_empty(), "fio wrote these, xferbench not: {gone:?}");
    // The options as fio lists them.
    assert_eq!(ours["global options"], theirs["global options"]);
    assert_eq!(
        ours["jobs"][0]["job options"],
        theirs["jobs"][0]["job options"]
    );
}

#[test]
fn fios_clat2csv_reads_the_json_plus_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let job = job_file(dir.path());
    let o = stream(dir.path(), &[&job, "--format", "json+"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let d = json(&o);
    let read = &d["jobs"][0]["read"];
    let ios = read["total_ios"].as_u64().unwrap();
    assert_eq!(ios, 256);
    let bins = read["clat_ns"]["bins"].as_object().unwrap();
    assert_eq!(bins.values().map(|v| v.as_u64().unwrap()).sum::<u64>(), ios);
    // Plain json leaves fio's histogram out, as fio does.
    let plain = json(&stream(dir.path(), &[&job, "--format", "json"]));
    assert!(plain["jobs"][0]["read"]["clat_ns"].get("bins").is_none());
    assert!(plain["jobs"][0]["read"]["lat_ns"]["N"].as_u64() == Some(ios));
    let script = [
        "/usr/bin/fio_jsonplus_clat2csv",
        "/usr/local/bin/fio_jsonplus_clat2csv",
    ]
    .into_iter()
    .find(|p| Path::new(p).exists());
    let Some(script) = script else {
        eprintln!("fio_jsonplus_clat2csv not installed (Debian's fio package has it): skipped");
        return;
    };
    let src = dir.path().join("plus.json");
    std::fs::write(&src, &o.stdout).unwrap();
    let r = Command::new("python3")
        .arg(script)
        .arg(&src)
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let csv = std::fs::read_to_string(dir.path().join("out_job0.csv"))
        .or_else(|_| std::fs::read_to_string(dir.path().join("out_job0")))
        .unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').map(str::trim).collect();
    let col = header
        .iter()
        .position(|h| *h == "read_clat_ns_count")
        .unwrap();
    let counts: Vec<u64> = lines
        .filter_map(|l| l.split(',').nth(col)?.trim().parse().ok())
        .collect();
    assert_eq!(counts.len(), bins.len(), "{csv}");
    assert_eq!(counts.iter().sum::<u64>(), ios, "{csv}");
}

#[test]
fn a_fio_plot_like_reader_and_stdout_only_json() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("d").display().to_string();
    // Not quiet: whatever the run says goes to stderr; stdout is the
    // JSON alone (a job of few I/Os, warned of in the JSON).
    let mut c = common::xferbench();
    c.current_dir(dir.path()).args([
        "stream",
        "--name=plot",
        &format!("--filename={f}"),
        "--rw=randwrite",
        "--bs=4k",
        "--size=64k",
        "--format",
        "json",
    ]);
    let o = common::finish(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let d: Value = serde_json::from_slice(&o.stdout).expect("stdout is one JSON document");
    let j = &d["jobs"][0];
    assert!(j["warnings"].to_string().contains("only 16 I/Os"), "{j}");
    // What fio-plot reads.
    assert_eq!(j["job options"]["rw"], "randwrite");
    assert_eq!(j["job options"]["name"], "plot");
    assert_eq!(j["job options"]["bs"], "4k");
    assert!(j["write"]["iops"].as_f64().unwrap() > 0.0);
    let w = &j["write"];
    // fio gives lat_ns percentiles only with lat_percentiles=1.
    assert!(w["lat_ns"].get("percentile").is_none(), "{w}");
    assert!(w["clat_ns"]["percentile"]["99.000000"].as_u64().unwrap() > 0);
    assert!(j["iodepth_level"]["1"].as_f64().unwrap() > 99.0);
    let short = j["elapsed"].as_u64().unwrap() < 3;
    assert_eq!(j["eta"], if short { 2147483647u64 } else { 0 });
    // psync has no submission step: slat N=0, lat is clat, as in fio.
    assert_eq!(w["slat_ns"]["N"], 0);
    assert_eq!(w["lat_ns"]["N"], w["clat_ns"]["N"]);
    assert_eq!(w["lat_ns"]["mean"], w["clat_ns"]["mean"]);
    assert!(d["timestamp_ms"].as_u64().unwrap() / 1000 >= d["timestamp"].as_u64().unwrap() - 1);
    assert!(d["time"].as_str().unwrap().len() >= 20);
    assert!(d["disk_util"].is_array());
    // xferbench's own keys stay beside fio's.
    assert!(d["env"].is_object() && j["warnings"].is_array() && w["histogram"].is_string());
    // No [global]: no "global options", as fio.
    assert!(d.get("global options").is_none());
}

#[test]
fn an_async_engine_measures_slat_and_lat_is_slat_plus_clat() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("d").display().to_string();
    let o = stream(
        dir.path(),
        &[
            &format!("--filename={f}"),
            "--rw=write",
            "--bs=4k",
            "--size=1m",
            "--ioengine=io_uring",
            "--iodepth=8",
            "--format",
            "json",
        ],
    );
    if !o.status.success() && stderr(&o).contains("io_uring") {
        eprintln!("io_uring unavailable here: {}", stderr(&o));
        return;
    }
    assert!(o.status.success(), "{}", stderr(&o));
    let d = json(&o);
    let w = &d["jobs"][0]["write"];
    let n = w["total_ios"].as_u64().unwrap();
    assert_eq!(n, 256);
    for k in ["slat_ns", "clat_ns", "lat_ns"] {
        assert_eq!(w[k]["N"].as_u64(), Some(n), "{k}");
    }
    let mean = |k: &str| w[k]["mean"].as_f64().unwrap();
    let sum = mean("slat_ns") + mean("clat_ns");
    assert!(
        (mean("lat_ns") - sum).abs() <= 0.01 * sum + 1.0,
        "lat {} vs slat+clat {sum}",
        mean("lat_ns")
    );
    assert!(w["slat_ns"]["min"].as_u64().unwrap() <= w["lat_ns"]["min"].as_u64().unwrap());
    let j = &d["jobs"][0];
    let submit: f64 = j["iodepth_submit"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!((submit - 100.0).abs() < 0.5, "{submit}");
}

#[test]
fn bandwidth_samples_follow_bwavgtime() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("d").display().to_string();
    let job = dir.path().join("t.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\nfilename={f}\nrw=read\nbs=4k\nsize=1m\ntime_based\nruntime=1200ms\n\
             [half]\n[tenth]\nnew_group\nbwavgtime=100\niopsavgtime=100\n"
        ),
    )
    .unwrap();
    let job = job.display().to_string();
    let o = stream(dir.path(), &[&job, "--output-format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let d = json(&o);
    let (half, tenth) = (&d["jobs"][0], &d["jobs"][1]);
    let samples = |j: &Value, k: &str| j["read"][k].as_u64().unwrap();
    // 1.2 s in 500 ms windows: one or two samples; in 100 ms ones, many.
    assert!((1..=3).contains(&samples(half, "bw_samples")), "{half}");
    assert!(samples(tenth, "bw_samples") >= 5, "{tenth}");
    assert!(samples(tenth, "iops_samples") >= 5, "{tenth}");
    for j in [half, tenth] {
        let r = &j["read"];
        let (lo, mean, hi) = (
            r["bw_min"].as_f64().unwrap(),
            r["bw_mean"].as_f64().unwrap(),
            r["bw_max"].as_f64().unwrap(),
        );
        assert!(lo <= mean && mean <= hi && lo > 0.0, "{r}");
        // Alone in its group: its mean is nearly all of the group's.
        let agg = r["bw_agg"].as_f64().unwrap();
        assert!(agg > 50.0 && agg <= 100.0, "{agg}");
        // The worker thread was busy for 1.2 s.
        let cpu = j["usr_cpu"].as_f64().unwrap() + j["sys_cpu"].as_f64().unwrap();
        assert!(
            cpu > 0.0 && j["job_runtime"].as_u64().unwrap() >= 1200,
            "{j}"
        );
    }
    assert_eq!(tenth["job options"]["bwavgtime"], "100");
    assert_eq!(d["global options"]["runtime"], "1200ms");
}

#[test]
fn terse_lines_have_fios_fields() {
    let dir = tempfile::tempdir().unwrap();
    let job = job_file(dir.path());
    let t = stream(dir.path(), &[&job, "--output-format=terse"]);
    assert!(t.status.success(), "{}", stderr(&t));
    let text = String::from_utf8(t.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    // fio's 121 fields, then 9 for each disk.
    let f: Vec<&str> = lines[0].split(';').collect();
    assert!(
        f.len() >= 121 && (f.len() - 121).is_multiple_of(9),
        "{}",
        f.len()
    );
    assert_eq!(f[0], "3");
    assert!(f[1].starts_with("fio-3.33 (xferbench "), "{}", f[1]);
    assert_eq!(&f[2..5], ["job1", "0", "0"]);
    // Reads: 1 MiB in KiB; psync's slat zero; 17 percentiles then 3 empty
    // slots; no writes.
    assert_eq!(f[5], "1024");
    assert_eq!(f[10], "0");
    assert!(f[17].starts_with("1.000000%=") && f[33].starts_with("99.990000%="));
    assert_eq!(&f[34..37], ["0%=0", "0%=0", "0%=0"]);
    assert_eq!(f[46], "0");
    assert!(
        f[87].ends_with('%') && f[92].ends_with('%'),
        "{} {}",
        f[87],
        f[92]
    );
    if let Ok(fio) = Command::new("fio")
        .args(["--output-format=terse", &job])
        .current_dir(dir.path())
        .output()
    {
        // fio's own line: its first 121 fields of the same kinds as ours
        // (its disks may add their slaves' figures).
        let theirs = String::from_utf8_lossy(&fio.stdout);
        let g: Vec<&str> = theirs.lines().next().unwrap_or("").split(';').collect();
        let shape = |x: &str| {
            if x.contains("%=") {
                "percentile"
            } else if x.ends_with('%') {
                "percent"
            } else if x.parse::<f64>().is_ok() {
                "number"
            } else {
                "text"
            }
        };
        assert!(g.len() >= 121, "fio: {theirs}");
        for i in 0..121 {
            assert_eq!(
                shape(f[i]),
                shape(g[i]),
                "field {i}: {} vs fio's {}",
                f[i],
                g[i]
            );
        }
    }
}

#[test]
fn group_reporting_merges_fios_job_keys_too() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("g.fio");
    std::fs::write(
        &job,
        format!(
            "[g]\nfilename={}\nrw=write\nbs=4k\nsize=256k\nnumjobs=2\ngroup_reporting\n",
            dir.path().join("d").display()
        ),
    )
    .unwrap();
    let o = stream(dir.path(), &[job.to_str().unwrap(), "--format", "json+"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let d = json(&o);
    let j = &d["jobs"][0];
    assert_eq!(j["jobs"], 2);
    assert_eq!(j["job options"]["numjobs"], "2");
    let w = &j["write"];
    assert_eq!(w["total_ios"], 128);
    assert_eq!(w["lat_ns"]["N"], 128);
    let bins: u64 = w["clat_ns"]["bins"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(bins, 128);
    let level: f64 = j["iodepth_level"]["1"].as_f64().unwrap();
    assert!(level > 99.0, "{j}");
    // fio's --output=FILE: the same document in the file, nothing on stdout.
    let f = dir.path().join("g.json");
    let to = format!("--output={}", f.display());
    let w = stream(
        dir.path(),
        &[job.to_str().unwrap(), "--output-format=json+", &to],
    );
    assert!(w.status.success(), "{}", stderr(&w));
    assert!(w.stdout.is_empty());
    let saved: Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
    assert!(saved["jobs"][0]["write"]["clat_ns"]["bins"].is_object());
    // Read back typed, as `report` and `compare` read it.
    let r = common::finish({
        let mut c = common::xferbench();
        c.args(["report", f.to_str().unwrap()]);
        c
    });
    assert!(r.status.success(), "{}", stderr(&r));
    let c = common::finish({
        let mut c = common::xferbench();
        c.args(["compare", f.to_str().unwrap(), f.to_str().unwrap()]);
        c
    });
    assert!(c.status.success(), "{}", stderr(&c));
}

#[test]
fn percentiles_where_fio_gives_them_sync_lat_and_groups_summed_as_fio() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("d").display().to_string();
    let file = dir.path().join("g.fio");
    std::fs::write(
        &file,
        format!(
            "[global]\nfilename={f}\nsize=1m\nbs=4k\nioengine=libaio\niodepth=2\n\
             [w]\nrw=write\nfsync=4\nlat_percentiles=1\nslat_percentiles=1\n\
             [r]\nstonewall\nrw=read\nnumjobs=2\ngroup_reporting\nruntime=1100ms\ntime_based\n"
        ),
    )
    .unwrap();
    let args = ["--job", file.to_str().unwrap(), "--output-format", "json+"];
    let o = stream(dir.path(), &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let d: Value = serde_json::from_slice(&o.stdout).unwrap();
    let w = &d["jobs"][0];
    // Asked for: slat and lat percentiles; a sync's always, with its bins.
    for k in ["slat_ns", "lat_ns"] {
        assert!(
            w["write"][k]["percentile"]["50.000000"].as_u64().unwrap() > 0,
            "{k}"
        );
    }
    let sync = &w["sync"];
    assert_eq!(sync["total_ios"], 64);
    assert!(sync["lat_ns"]["percentile"]["99.000000"].as_u64().unwrap() > 0);
    assert!(sync["lat_ns"]["bins"].is_object());
    // A direction without I/O has no runtime, as fio's.
    assert_eq!(w["read"]["runtime"], 0);
    assert!(w["write"]["runtime"].as_u64().unwrap() > 0);
    // The merged group: its rate samples summed member by member, so the
    // mean sample is the group's bandwidth (bw_agg near 100%), as fio's.
    let g = &d["jobs"][1];
    assert_eq!(g["jobs"], 2);
    let per: Vec<&Value> = d["per_job"].as_array().unwrap().iter().skip(1).collect();
    let samples: u64 = per
        .iter()
        .map(|j| j["read"]["bw_samples"].as_u64().unwrap())
        .sum();
    assert!(samples >= 2, "{samples} samples in 1.1 s");
    assert_eq!(g["read"]["bw_samples"].as_u64().unwrap(), samples);
    let means: f64 = per
        .iter()
        .map(|j| j["read"]["bw_mean"].as_f64().unwrap())
        .sum();
    let gm = g["read"]["bw_mean"].as_f64().unwrap();
    assert!(
        (gm - means).abs() < 1e-6 * means.max(1.0),
        "{gm} vs {means}"
    );
    // eta: INT_MAX for a run under 3 s, 0 after, as fio; elapsed is the
    // run's, the same for every job.
    let elapsed = w["elapsed"].as_u64().unwrap();
    assert_eq!(w["eta"], if elapsed < 3 { 2147483647u64 } else { 0 });
    assert_eq!(w["elapsed"], g["elapsed"]);
    // Plain json: no bins anywhere.
    let o = stream(
        dir.path(),
        &args[..3]
            .iter()
            .copied()
            .chain(["json"])
            .collect::<Vec<_>>(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("\"bins\""));
}
