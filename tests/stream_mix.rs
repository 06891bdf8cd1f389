//! End-to-end tests of the fio options that shape a job mix rather than one
//! job: flow control between jobs (`flow=`), per-command priorities
//! (`cmdprio_*`, the latency split per priority) and what written buffers
//! hold (`dedupe_percentage`, `buffer_compress_percentage`, scrambling).
//! Each checks the effect — I/O counts, tags, the bytes on disk — never a
//! time.

mod common;

use common::{json, stderr};
use serde_json::Value;
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use std::process::Output;

/// `xferbench --quiet stream JOB.fio [ARGS…]` with `text` as the job file, in `dir`.
fn run(dir: &Path, text: &str, args: &[&str]) -> Output {
    let job = dir.join("mix.fio");
    std::fs::write(&job, text).unwrap();
    let mut c = common::xferbench();
    c.args(["--quiet", "stream", job.to_str().unwrap()])
        .args(args)
        .current_dir(dir);
    common::finish(c)
}

fn jobs(dir: &Path, text: &str) -> Vec<Value> {
    let v = json(&run(dir, text, &["--output-format", "json"]));
    v["jobs"].as_array().unwrap().clone()
}

fn ios(j: &Value, dir: &str) -> u64 {
    j[dir]["total_ios"].as_u64().unwrap()
}

#[test]
fn jobs_sharing_a_flow_keep_the_ratio_of_their_weights() {
    let dir = tempfile::tempdir().unwrap();
    // fio's flow.fio shape on the null engine; the old signed form
    // (flow=-1) weighs 1. The workers start one by one, and a job alone in
    // its flow runs free: rate limits bound what either does before the
    // other starts (the other absorbs it), and the light job ends the
    // other (exitall), so neither runs alone at the end.
    let text = "[global]\nioengine=null\nbs=4k\nflow_sleep=100\n\
                [ahead]\nrw=read\nflow=8\nrate_iops=20000\nsize=1g\ntime_based\nruntime=120\n\
                [behind]\nrw=write\nflow=-1\nsize=4m\nrate_iops=2000\nexitall\n";
    let j = jobs(dir.path(), text);
    let (a, b) = (ios(&j[0], "read"), ios(&j[1], "write"));
    assert_eq!(b, 1024);
    let ratio = a as f64 / b as f64;
    assert!(
        (7.2..=8.8).contains(&ratio),
        "{a}:{b} is not 8:1 within 10%"
    );
    // Weights are fio's 0 to 1000.
    let o = run(dir.path(), "[x]\nioengine=null\nsize=1m\nflow=1001\n", &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("flow=1001: expected a weight from -1000 to 1000"));
}

/// One direction's `prios` as (class, level, N).
fn prios(d: &Value) -> Vec<(u64, u64, u64)> {
    d["prios"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|p| {
                    let n = p["clat_ns"]["N"].as_u64().unwrap();
                    (
                        p["prioclass"].as_u64().unwrap(),
                        p["prio"].as_u64().unwrap(),
                        n,
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn cmdprio_tags_its_share_of_ios_and_splits_the_latency_by_priority() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("data");
    // Best-effort priorities need no privilege; the kernel may ignore them
    // on this file system, but every I/O is tagged and timed under its own.
    for engine in ["io_uring", "libaio"] {
        let text = format!(
            "[p]\nfilename={}\nsize=8m\nbs=4k\nrw=randrw\nioengine={engine}\niodepth=4\n\
             prio=6\ncmdprio_percentage=30,60\ncmdprio_class=2\ncmdprio=1\n",
            f.display()
        );
        let j = &jobs(dir.path(), &text)[0];
        for (side, want) in [("read", 30.0), ("write", 60.0)] {
            let p = prios(&j[side]);
            assert_eq!(p.len(), 2, "{engine} {side}: {p:?}");
            // The job's own priority first, then cmdprio's.
            assert_eq!((p[0].0, p[0].1, p[1].0, p[1].1), (2, 6, 2, 1), "{p:?}");
            let total = ios(j, side);
            assert_eq!(p[0].2 + p[1].2, total, "{engine} {side}");
            let share = 100.0 * p[1].2 as f64 / total as f64;
            assert!((share - want).abs() <= 10.0, "{engine} {side}: {share}%");
        }
    }
    // cmdprio_bssplit's per-entry class and level; the text shows each.
    let text = format!(
        "[b]\nfilename={}\nsize=8m\nrw=randread\nioengine=io_uring\nbssplit=4k/50:8k/50\n\
         cmdprio_bssplit=4k/100/3/2:8k/50/2/0\n",
        f.display()
    );
    let j = &jobs(dir.path(), &text)[0];
    let p = prios(&j["read"]);
    assert_eq!(
        p.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(),
        [(0, 0), (3, 2), (2, 0)],
        "{p:?}"
    );
    let out = run(dir.path(), &text, &[]);
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(
        t.contains("clat prio 3/2 (") && t.contains("% of IOs)"),
        "{t}"
    );
    // A reporting group splits by priority, as fio 3.33 does, where its
    // members' own priorities differ or one of them has cmdprio: a member
    // without cmdprio counts all its I/Os under its own priority.
    let group = "[global]\nioengine=null\nsize=4m\nbs=4k\ngroup_reporting\n\
                 [a]\nprioclass=2\nprio=1\n[b]\nprioclass=2\nprio=5\n";
    let g = &jobs(dir.path(), group)[0];
    assert_eq!(prios(&g["read"]), [(2, 1, 1024), (2, 5, 1024)]);
    let mixed = format!(
        "[global]\nfilename={}\nsize=4m\nbs=4k\nrw=randread\nioengine=io_uring\ngroup_reporting\n\
         [tagged]\ncmdprio_percentage=50\ncmdprio_class=2\ncmdprio=0\n[plain]\n",
        f.display()
    );
    let g = &jobs(dir.path(), &mixed)[0];
    let p = prios(&g["read"]);
    assert_eq!(
        p.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(),
        [(0, 0), (2, 0)],
        "{p:?}"
    );
    // The plain job's 1024 I/Os sit under the default priority with the
    // tagged job's untagged half.
    assert_eq!(p[0].2 + p[1].2, 2048, "{p:?}");
    assert!(p[0].2 > 1024, "{p:?}");
    // Equal priorities and no cmdprio: no split.
    let same = group.replace("prio=5", "prio=1");
    assert!(prios(&jobs(dir.path(), &same)[0]["read"]).is_empty());
    // Bad values and engines: one line each.
    for (opts, want) in [
        (
            "ioengine=libaio\ncmdprio_class=4",
            "cmdprio_class=4: expected a priority class from 1 to 3",
        ),
        (
            "ioengine=libaio\ncmdprio=8",
            "cmdprio=8: expected a priority level from 0 (highest) to 7",
        ),
        (
            "ioengine=psync\ncmdprio_percentage=10",
            "is an option of ioengine=libaio or ioengine=io_uring",
        ),
        (
            "ioengine=io_uring\ncmdprio_percentage=10\ncmdprio_bssplit=4k/10",
            "mutually exclusive",
        ),
    ] {
        let o = run(
            dir.path(),
            &format!("[x]\nfilename={}\nsize=1m\n{opts}\n", f.display()),
            &[],
        );
        assert_eq!(o.status.code(), Some(2), "{opts}");
        let e = stderr(&o);
        assert!(e.contains(want) && e.lines().count() == 1, "{opts}: {e}");
    }
}

/// The file's `bs`-sized blocks: how many, and how many distinct.
fn blocks(f: &Path, bs: usize) -> (usize, usize) {
    let data = std::fs::read(f).unwrap();
    let all: Vec<&[u8]> = data.chunks(bs).collect();
    let distinct: HashSet<&[u8]> = all.iter().copied().collect();
    (all.len(), distinct.len())
}

#[test]
fn written_buffers_dedupe_and_compress_by_the_asked_share() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("w");
    let write = |extra: &str| {
        let text = format!(
            "[w]\nfilename={}\nrw=write\nbs=4k\nsize=16m\nioengine=libaio\niodepth=8\n{extra}\n",
            f.display()
        );
        json(&run(dir.path(), &text, &["--output-format", "json"]));
    };
    write("dedupe_percentage=40");
    let (n, distinct) = blocks(&f, 4096);
    let dup = 100.0 * (n - distinct) as f64 / n as f64;
    assert!((dup - 40.0).abs() <= 5.0, "{dup}% duplicates");
    // fio's own tool agrees, where it is installed.
    if let Ok(o) = std::process::Command::new("fio-dedupe")
        .args(["-b", "4096"])
        .arg(&f)
        .output()
    {
        let out = String::from_utf8_lossy(&o.stdout);
        if let Some(pct) = out
            .lines()
            .find_map(|l| l.strip_prefix("Fio setting: dedupe_percentage="))
        {
            let pct: f64 = pct.trim().parse().unwrap();
            assert!((pct - 40.0).abs() <= 5.0, "fio-dedupe: {out}");
        }
    }
    write("buffer_compress_percentage=60");
    let data = std::fs::read(&f).unwrap();
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&data).unwrap();
    let saved = 100.0 * (1.0 - z.finish().unwrap().len() as f64 / data.len() as f64);
    assert!((saved - 60.0).abs() <= 5.0, "{saved}% saved");
    // Without them, fio's default: buffers filled once, each write's
    // 512-byte blocks stamped, so no two blocks repeat.
    write("");
    let (n, distinct) = blocks(&f, 512);
    assert_eq!(n, distinct);
    // zero_buffers alone is not scrambled: all zeros.
    write("zero_buffers=1");
    assert!(std::fs::read(&f).unwrap().iter().all(|&b| b == 0));
}

/// trimwrite with mixed block sizes (fio's t0023/t0024): each write goes
/// where its trim went, as long, and the job covers its size once in each
/// direction; the null engine takes `filesize=` as its size, as fio's does.
#[test]
fn trimwrite_with_mixed_sizes_writes_each_trimmed_extent() {
    let dir = tempfile::tempdir().unwrap();
    for rw in ["trimwrite", "randtrimwrite"] {
        for sizes in ["bsrange=512-4k", "bssplit=512/25:1k/:2k/:4k/"] {
            let text = format!(
                "[j]\nioengine=null\nfilesize=256k\nrw={rw}\n{sizes}\nwrite_bw_log=j\nlog_offset=1\nper_job_logs=0\n"
            );
            // A shared log (per_job_logs=0) is appended to, as fio's: each
            // run starts from none.
            let _ = std::fs::remove_file(dir.path().join("j_bw.log"));
            let j = &jobs(dir.path(), &text)[0];
            for d in ["trim", "write"] {
                assert_eq!(j[d]["io_bytes"], 256 << 10, "{rw} {sizes}: {d}");
            }
            assert_eq!(ios(j, "trim"), ios(j, "write"), "{rw} {sizes}");
            // fio's per-I/O bw log (time, value, direction, length,
            // offset, prio): trims (2) and writes (1) pair up, same offset
            // and length, in issue order at depth 1.
            let log = std::fs::read_to_string(dir.path().join("j_bw.log")).unwrap();
            let ops: Vec<Vec<String>> = log
                .lines()
                .map(|l| l.split(',').map(|f| f.trim().to_string()).collect())
                .collect();
            assert_eq!(ops.len() as u64, 2 * ios(j, "trim"), "{log}");
            for pair in ops.chunks(2) {
                assert_eq!(
                    (pair[0][2].as_str(), pair[1][2].as_str()),
                    ("2", "1"),
                    "{pair:?}"
                );
                assert_eq!(pair[0][3..5], pair[1][3..5], "{pair:?}");
            }
        }
    }
}

/// serialize_overlap: an I/O waits while one in flight overlaps it, so a
/// 16-deep queue over 4 blocks never has more than 4 in flight (without it
/// the queue fills: norandommap draws the same blocks again).
#[test]
fn serialize_overlap_keeps_overlapping_ios_apart() {
    let dir = tempfile::tempdir().unwrap();
    let deep = |serialize: u8| {
        let text = format!(
            "[o]\nioengine=null\niodepth=16\nrw=randwrite\nbs=4k\nsize=16k\nnorandommap\ntime_based\nruntime=300ms\nserialize_overlap={serialize}\n"
        );
        let j = &jobs(dir.path(), &text)[0];
        assert!(ios(j, "write") > 100, "{j}");
        let levels = &j["iodepth_level"];
        ["8", "16"]
            .iter()
            .map(|k| levels[*k].as_f64().unwrap_or(0.0))
            .sum::<f64>()
    };
    assert_eq!(deep(1), 0.0);
    assert!(deep(0) > 0.0);
}
