//! End-to-end tests of the `stream` options that tune a job as it runs:
//! `ioengine=exec` (a program beside the I/O jobs, stopped at the end of
//! its runtime), `io_submit_mode=offload` (I/Os on a schedule, latency
//! counted from it), `latency_target` (fio's queue-depth search) and
//! steady state (`ss=`). Each checks the feature's effect with loose
//! bounds: the machine may be busy, times are never asserted closely.

mod common;

use common::{json, num, stderr};
use serde_json::Value;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

/// `xferbench --quiet stream FILE --format json` in `dir`, the job file
/// written from `text`, with `fault` as XFERBENCH_ENGINE_FAULT if given.
fn run(dir: &Path, text: &str, fault: Option<&str>) -> Output {
    std::fs::write(dir.join("job.fio"), text).unwrap();
    let mut c = common::xferbench();
    c.args(["--quiet", "stream", "job.fio", "--format", "json"])
        .current_dir(dir);
    match fault {
        Some(f) => c.env("XFERBENCH_ENGINE_FAULT", f),
        None => c.env_remove("XFERBENCH_ENGINE_FAULT"),
    };
    common::finish(c)
}

fn job<'a>(d: &'a Value, name: &str) -> &'a Value {
    d["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no job {name} in {d}"))
}

#[test]
fn exec_runs_its_program_beside_an_io_job_and_stops_it_at_the_runtime() {
    let _t = common::turn();
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = run(
        dir.path(),
        "[global]\nruntime=1s\n\n[mon]\nioengine=exec\nprogram=sh\narguments=-c 'echo hi; sleep 100'\n\n\
         [io]\nioengine=null\nsize=1g\ntime_based\n",
        None,
    );
    let d = json(&out);
    // Loose: the program sleeps 100 s and ignores nothing; it is stopped
    // at the 1 s runtime (plus its 1 s grace at most).
    assert!(started.elapsed() < Duration::from_secs(60));
    let mon = job(&d, "mon");
    assert_eq!(mon["error"], 0, "{mon}");
    let detail = mon["completion_detail"].as_str().unwrap();
    assert!(detail.contains("SIGTERM"), "{detail}");
    let said = std::fs::read_to_string(dir.path().join("mon.stdout")).unwrap();
    assert_eq!(said, "hi\n");
    assert!(dir.path().join("mon.stderr").exists());
    // The I/O job ran beside it.
    assert!(num(&job(&d, "io")["read"], "total_ios") > 0.0);
}

#[test]
fn exec_fails_the_job_on_a_failing_program_and_warns_of_a_missing_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        "[x]\nioengine=exec\nprogram=sh\narguments=-c 'exit 3'\nruntime=5s\nstd_redirect=0\n",
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("exited with status 3"),
        "{}",
        stderr(&out)
    );
    // A program that cannot be started (fio's exec.fio names turbostat,
    // often not installed): as in fio, the jobs beside it run; the exec
    // job runs nothing and its warning says why.
    let out = run(
        dir.path(),
        "[x]\nioengine=exec\nprogram=/nonexistent/monitor\nruntime=1s\n\n\
         [io]\nioengine=null\nsize=1m\nbs=4k\n",
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let d = json(&out);
    let x = job(&d, "x");
    let warned = x["warnings"].to_string();
    assert!(
        warned.contains("program=/nonexistent/monitor: no such executable"),
        "{x}"
    );
    assert_eq!(num(&job(&d, "io")["read"], "total_ios"), 256.0);
    let out = run(dir.path(), "[x]\nioengine=exec\nruntime=1s\n", None);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("needs program="));
}

const OFFLOAD: &str =
    "[o]\nioengine=null\nsize=1g\nbs=4k\ntime_based\nruntime=1s\nio_submit_mode=offload\n";

#[test]
fn offload_issues_at_the_rate_and_charges_latency_from_the_schedule() {
    let _t = common::turn();
    let dir = tempfile::tempdir().unwrap();
    for process in ["linear", "poisson"] {
        let text = format!("{OFFLOAD}rate_iops=2000\nrate_process={process}\n");
        let d = json(&run(dir.path(), &text, None));
        let r = &job(&d, "o")["read"];
        let (ios, ms) = (num(r, "total_ios"), num(r, "runtime"));
        let want = 2000.0 * ms / 1000.0;
        assert!(
            (ios - want).abs() <= 0.1 * want,
            "{process}: {ios} I/Os in {ms} ms, want about {want}"
        );
    }
    // A device slower than the rate (2 ms an I/O, 1000 due a second): the
    // inline job's I/Os wait for each other unseen; the offloaded job's
    // latencies grow with the backlog behind the schedule.
    let mean = |mode: &str| {
        let text = format!("{OFFLOAD}rate_iops=1000\nio_submit_mode={mode}\n");
        let d = json(&run(dir.path(), &text, Some("delay-us:2000")));
        num(&job(&d, "o")["read"]["clat_ns"], "mean")
    };
    let (inline, offload) = (mean("inline"), mean("offload"));
    assert!(
        offload > 5.0 * inline,
        "offload mean {offload} ns, inline {inline} ns"
    );
}

/// An offloaded synchronous job has `iodepth` submitting threads, as fio's
/// pool: with each I/O taking 2 ms, 1000 due a second are held with 8
/// threads (about 2 in flight), where one thread could do at most 500 and
/// its latencies would grow with the backlog. Without offload the same
/// job does one I/O at a time (iodepth has no effect, as fio warns).
#[test]
fn offload_gives_a_synchronous_engine_a_submitting_thread_per_depth() {
    let _t = common::turn();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::write(&data, vec![7u8; 1 << 20]).unwrap();
    let base = format!(
        "[p]\nioengine=psync\nfilename={}\nsize=1m\nbs=4k\nrw=randread\niodepth=8\ntime_based\nruntime=1s\n",
        data.display()
    );
    let text = format!("{base}io_submit_mode=offload\nrate_iops=1000\n");
    let d = json(&run(dir.path(), &text, Some("delay-us:2000")));
    let p = job(&d, "p");
    let r = &p["read"];
    let (ios, ms) = (num(r, "total_ios"), num(r, "runtime"));
    let want = 1000.0 * ms / 1000.0;
    assert!(
        ios >= 0.8 * want,
        "{ios} I/Os in {ms} ms, want about {want}"
    );
    // Latency from the schedule, stamped by the submitting thread: about
    // the device's 2 ms, no backlog (a loose bound for a busy machine).
    let p50 = num(&r["clat_ns"]["percentile"], "50.000000");
    assert!(p50 < 20e6, "p50 {p50} ns");
    let detail = p["completion_detail"].as_str().unwrap();
    assert!(
        detail.contains("offloaded to 8 submitting threads"),
        "{detail}"
    );
    // Without a rate the eight threads keep eight I/Os going: several
    // times what the inline job does in the same second.
    let count = |mode: &str| {
        let text = format!("{base}io_submit_mode={mode}\n");
        let d = json(&run(dir.path(), &text, Some("delay-us:2000")));
        num(&job(&d, "p")["read"], "total_ios")
    };
    let (inline, offload) = (count("inline"), count("offload"));
    assert!(offload > 3.0 * inline, "offload {offload}, inline {inline}");
}

/// `rate` and `rate_iops` without offload hold each I/O until it is due,
/// whatever the queue depth: a deep queue's first I/Os are not issued at
/// once (fio drains the queue and sleeps), and `rate_iops` limits as `rate`
/// does. Only lower bounds on time: a busy machine makes a run slower.
#[test]
fn an_inline_rate_paces_each_io_even_with_a_deep_queue() {
    let _t = common::turn();
    let dir = tempfile::tempdir().unwrap();
    // 50 I/Os a second either way: I/O k is due at k × 20 ms, so the 10th
    // cannot start before 180 ms although all 10 fit the queue at once.
    for limit in ["rate_iops=50", "rate=200k"] {
        let text = format!("[r]\nioengine=null\nsize=40k\nbs=4k\niodepth=16\n{limit}\n");
        let d = json(&run(dir.path(), &text, None));
        let r = &job(&d, "r")["read"];
        assert_eq!(num(r, "total_ios"), 10.0, "{limit}");
        assert!(num(r, "runtime") >= 150.0, "{limit}: {r}");
    }
    // A time-based job at 100 I/Os a second for 1 s: about 100, never a
    // device's worth.
    let text =
        "[t]\nioengine=null\nsize=1g\nbs=4k\niodepth=8\nrate_iops=100\ntime_based\nruntime=1s\n";
    let d = json(&run(dir.path(), text, None));
    let ios = num(&job(&d, "t")["read"], "total_ios");
    assert!((30.0..=110.0).contains(&ios), "{ios} I/Os");
}

const LATENCY: &str = "[l]\nioengine=null\nsize=1g\nbs=4k\niodepth=16\ntime_based\nruntime=4s\nlatency_window=100ms\nlatency_percentile=99\n";

#[test]
fn latency_target_finds_a_low_depth_on_a_slow_device_and_the_full_one_on_a_fast() {
    let _t = common::turn();
    let dir = tempfile::tempdir().unwrap();
    // Each I/O takes 0.5 ms and the engine does them one after another:
    // at depth 4 an I/O waits ~2 ms, beyond a 1 ms target.
    let text = format!("{LATENCY}latency_target=1ms\n");
    let d = json(&run(dir.path(), &text, Some("delay-us:500")));
    let l = job(&d, "l");
    let depth = num(l, "latency_depth");
    assert!((1.0..=2.0).contains(&depth), "{l}");
    assert_eq!(l["latency_target"], 1_000_000);
    assert_eq!(l["latency_window"], 100_000);
    assert_eq!(num(l, "latency_percentile"), 99.0);
    // A target nothing misses: the depth doubles to iodepth, one window
    // runs there, and the job ends before its runtime.
    let text = format!("{LATENCY}latency_target=10s\n");
    let d = json(&run(dir.path(), &text, None));
    let l = job(&d, "l");
    assert_eq!(num(l, "latency_depth"), 16.0, "{l}");
    assert!(num(&l["read"], "runtime") < 4000.0, "{l}");
    // Without latency_target the keys carry fio 3.33's defaults (it writes
    // them for every job): no target, the job's own depth.
    let d = json(&run(dir.path(), OFFLOAD, None));
    assert_eq!(job(&d, "o")["latency_target"], 0);
    assert_eq!(num(job(&d, "o"), "latency_depth"), 1.0);
}

const STEADY: &str =
    "[s]\nioengine=null\nsize=1g\nbs=4k\nrate_iops=1000\ntime_based\nruntime=30s\nss_dur=2s\n";

#[test]
fn steady_state_ends_a_steady_job_early_and_not_an_unsettled_one() {
    let _t = common::turn();
    let dir = tempfile::tempdir().unwrap();
    let d = json(&run(dir.path(), &format!("{STEADY}ss=iops:25%\n"), None));
    let s = job(&d, "s");
    let ss = &s["steadystate"];
    assert_eq!(ss["attained"], 1, "{s}");
    assert_eq!(ss["ss"], "iops:25.000000%");
    assert_eq!(ss["duration"], 2);
    assert_eq!(ss["data"]["iops"].as_array().unwrap().len(), 2);
    let iops_mean = num(&ss["data"], "iops_mean");
    assert!((500.0..1500.0).contains(&iops_mean), "{ss}");
    assert!(num(&ss["data"], "bw_mean") > 0.0);
    // Ended well before its 30 s runtime.
    assert!(num(&s["read"], "runtime") < 20_000.0, "{s}");
    // A limit no window can meet: the job runs to its runtime, not attained.
    let text = STEADY.replace("runtime=30s", "runtime=3s") + "ss=iops_slope:0\n";
    let d = json(&run(dir.path(), &text, None));
    let s = job(&d, "s");
    assert_eq!(s["steadystate"]["attained"], 0, "{s}");
    assert!(num(&s["read"], "runtime") >= 2900.0, "{s}");
    // The text report has fio's line.
    std::fs::write(dir.path().join("t.fio"), format!("{STEADY}ss=iops:25%\n")).unwrap();
    let mut c = common::xferbench();
    c.args(["--quiet", "stream", "t.fio"])
        .current_dir(dir.path());
    let out = common::finish(c);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("steadystate  : attained=yes") && text.contains("iops mean dev="),
        "{text}"
    );
}
