//! End-to-end tests of `xferbench stream`: the aws-fpga XDMA job files mapped
//! onto ordinary files, verify catching a flipped byte at its offset, a
//! 4-worker job whose blocks land at the right offsets, both engines, the
//! sweep table, fio-shaped JSON, bad input, and the stall watchdog (a
//! rate-limited job is not stuck; a hung I/O is). Times are never asserted.

mod common;

use common::{json, stderr};
use std::path::{Path, PathBuf};
use std::process::Output;

fn xb_in(dir: &Path, args: &[&str]) -> Output {
    let mut c = common::xferbench();
    c.args(args).current_dir(dir);
    common::finish(c)
}

/// `xferbench --quiet stream ARGS…` run in `dir`.
fn stream(dir: &Path, args: &[&str]) -> Output {
    let mut a = vec!["--quiet", "stream"];
    a.extend_from_slice(args);
    xb_in(dir, &a)
}

/// The aws-fpga XDMA files' shape: four channels, 16g regions at 0/16g/32g/48g.
fn xdma_file(kind: &str) -> String {
    let mut s = String::from(
        "[global]\nallow_file_create=0\nioengine=psync\niomem=mmap\nfilesize=64g\nbs=1m\nratemin=1m\n",
    );
    match kind {
        "verify" => {
            s.push_str("size=16g\nverify=xxhash\nverify_fatal=1\nverify_dump=1\n\n");
            for n in 0..4 {
                s.push_str(&format!(
                    "[write-phase-{n}] \noffset={o}g\nrw=write\nfilename=/dev/xdma0_h2c_{n}\ndo_verify=0\n\n\
                     [verify-phase-{n}] \nnew_group\nwait_for=write-phase-{n}\noffset={o}g\nrw=read\nfilename=/dev/xdma0_c2h_{n}\ndo_verify=1\n\n",
                    o = n * 16
                ));
            }
        }
        rw => {
            for n in 0..4 {
                let dev = if rw == "write" { "h2c" } else { "c2h" };
                s.push_str(&format!(
                    "[w{}] \nsize=16g\noffset={}g\nrw={rw}\nfilename=/dev/xdma0_{dev}_{n} \n\n",
                    n + 1,
                    n * 16
                ));
            }
        }
    }
    s
}

/// Maps all eight channels onto one "card" file, shrinking the job so it fits.
fn card_args(card: &Path, job: &Path) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "--quiet".into(),
        "stream".into(),
        "--job".into(),
        job.display().to_string(),
        "--format".into(),
        "json".into(),
        // The jobs' 16g regions at 16g strides, scaled down: the offsets are
        // the file's, so the whole "card" is sized, and regions shrunk.
        "--set".into(),
        "size=1m".into(),
        "--set".into(),
        "ratemin=0".into(),
    ];
    for n in 0..4 {
        for dev in ["h2c", "c2h"] {
            a.push("--map".into());
            a.push(format!("/dev/xdma0_{dev}_{n}={}", card.display()));
        }
    }
    a
}

fn sparse_card(dir: &Path) -> PathBuf {
    let card = dir.join("card");
    let f = std::fs::File::create(&card).unwrap();
    f.set_len(49 << 30).unwrap(); // sparse: 48g + a region
    card
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn xdma_job_files_run_mapped_onto_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let card = sparse_card(dir.path());
    for kind in ["write", "read", "verify"] {
        let job = dir.path().join(format!("xdma_4-ch_4-1M_{kind}.fio"));
        std::fs::write(&job, xdma_file(kind)).unwrap();
        let o = xb_in(dir.path(), &args(&card_args(&card, &job)));
        let d = json(&o);
        let jobs = d["jobs"].as_array().expect("jobs[]");
        assert_eq!(jobs.len(), if kind == "verify" { 8 } else { 4 }, "{kind}");
        for j in jobs {
            assert_eq!(j["error"], 0, "{j}");
            let name = j["jobname"].as_str().unwrap();
            let dir_ = if kind == "read" || name.starts_with("verify") {
                "read"
            } else {
                "write"
            };
            assert_eq!(j[dir_]["io_bytes"], 1 << 20, "{kind} {name}");
            assert!(j[dir_]["bw_bytes"].as_u64().unwrap() > 0);
            assert!(
                j[dir_]["clat_ns"]["percentile"]["99.000000"]
                    .as_u64()
                    .is_some()
            );
            if name.starts_with("verify") {
                assert_eq!(j["verify"]["blocks"], 1, "{j}");
                assert_eq!(j["verify"]["bad"], 0, "{j}");
            }
        }
        if kind == "verify" {
            // wait_for: each reader started after its writer ended.
            for n in 0..4 {
                let find = |p: &str| {
                    jobs.iter()
                        .find(|j| j["jobname"] == format!("{p}-phase-{n}"))
                        .unwrap()
                        .clone()
                };
                let (w, v) = (find("write"), find("verify"));
                assert!(v["start_ns"].as_u64() >= w["end_ns"].as_u64(), "{w} {v}");
                assert_eq!(v["groupid"].as_u64().unwrap(), n + 1);
            }
        }
    }
    // The card got exactly the four mapped regions, at 16g strides.
    let meta = std::fs::metadata(&card).unwrap();
    assert_eq!(meta.len(), 49 << 30, "the target was not resized");
}

#[test]
fn verify_catches_a_flipped_byte_at_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("data");
    let fs = f.display().to_string();
    for kind in ["xxhash", "crc32c"] {
        let w = stream(
            dir.path(),
            &[
                "--filename",
                &fs,
                "--rw",
                "write",
                "--bs",
                "4k",
                "--size",
                "256k",
                "--verify",
                kind,
                "--set",
                "do_verify=0",
                "--format",
                "json",
            ],
        );
        json(&w);
        // Flip one byte inside block 5's payload.
        let at = 5 * 4096 + 1234;
        let mut data = std::fs::read(&f).unwrap();
        data[at] ^= 0x40;
        std::fs::write(&f, &data).unwrap();
        let r = stream(
            dir.path(),
            &[
                "--filename",
                &fs,
                "--rw",
                "read",
                "--bs",
                "4k",
                "--size",
                "256k",
                "--verify",
                kind,
                "--set",
                "verify_fatal=1",
                "--set",
                "verify_dump=1",
            ],
        );
        assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
        let e = stderr(&r);
        assert!(e.contains(&format!("offset {at}")), "{e}");
        assert!(e.contains("bad block at offset 20480"), "{e}");
        assert!(e.contains("expected header"), "{e}");
        // verify_dump wrote the bad block beside where we ran, and nothing else.
        let got = std::fs::read(dir.path().join("data.20480.received")).unwrap();
        let want = std::fs::read(dir.path().join("data.20480.expected")).unwrap();
        assert_eq!(got.len(), 4096);
        let diff: Vec<usize> = (0..4096).filter(|&i| got[i] != want[i]).collect();
        assert_eq!(diff, vec![1234]);
        // The table still came out, marked with the error.
        let out = String::from_utf8_lossy(&r.stdout);
        assert!(out.contains("err= 1"), "{out}");
        std::fs::remove_file(dir.path().join("data.20480.received")).unwrap();
        std::fs::remove_file(dir.path().join("data.20480.expected")).unwrap();
        std::fs::remove_file(&f).unwrap();
    }
}

#[test]
fn four_workers_write_their_own_regions_with_both_engines() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("four");
    let job = dir.path().join("four.fio");
    for (writer, reader) in [("io_uring", "psync"), ("psync", "io_uring")] {
        let _ = std::fs::remove_file(&f);
        let text = format!(
            "; four workers, one region each\n[global]\nfilename={}\nbs=8k\nsize=128k\nverify=crc32c\nioengine=${{ENGINE}}\niodepth=4\n\n[w]\nrw=write\ndo_verify=0\nnumjobs=4\noffset_increment=128k\n\n[r]\nstonewall\nrw=read\noffset=0\nsize=512k\n",
            f.display()
        );
        std::fs::write(&job, text).unwrap();
        let mut c = common::xferbench();
        c.args([
            "--quiet",
            "stream",
            "--job",
            job.to_str().unwrap(),
            "--format",
            "json",
        ])
        .env("ENGINE", writer)
        .args(["--set", &format!("ioengine={writer}")]);
        let d = json(&common::finish(c));
        let jobs = d["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), 5);
        let mut offs: Vec<u64> = jobs[..4]
            .iter()
            .map(|j| j["offset"].as_u64().unwrap())
            .collect();
        offs.sort_unstable();
        assert_eq!(offs, vec![0, 128 << 10, 256 << 10, 384 << 10]);
        assert_eq!(jobs[4]["verify"]["blocks"], 64);
        assert_eq!(jobs[4]["verify"]["bad"], 0);
        // Every block's header names the offset it sits at.
        let data = std::fs::read(&f).unwrap();
        assert_eq!(data.len(), 512 << 10);
        for (i, b) in data.chunks(8192).enumerate() {
            assert_eq!(&b[0..4], b"XBVF");
            let off = u64::from_le_bytes(b[16..24].try_into().unwrap());
            assert_eq!(off, (i * 8192) as u64);
        }
        // And the other engine reads them back clean.
        let o = stream(
            dir.path(),
            &[
                "--filename",
                f.to_str().unwrap(),
                "--rw",
                "randread",
                "--bs",
                "8k",
                "--verify",
                "crc32c",
                "--ioengine",
                reader,
                "--iodepth",
                "8",
                "--format",
                "json",
            ],
        );
        let d = json(&o);
        assert_eq!(d["jobs"][0]["verify"]["blocks"], 64);
        assert_eq!(d["jobs"][0]["read"]["total_ios"], 64);
    }
}

#[test]
fn block_size_sweep_table_and_group_reporting() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("sweep");
    let o = stream(
        dir.path(),
        &[
            "--filename",
            f.to_str().unwrap(),
            "--rw",
            "write",
            "--bs",
            "4k..16k",
            "--size",
            "1m",
            "--numjobs",
            "2",
            "--set",
            "group_reporting=1",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Block-size sweep"), "{out}");
    for bs in [" 4k |", " 8k |", " 16k |"] {
        assert!(out.contains(bs), "{bs} in {out}");
    }
    assert!(out.contains("Run status group 0 at bs=4k"), "{out}");
    assert!(out.contains("WRITE: bw="), "{out}");
    // JSON: merged per group as fio does with group_reporting, members kept.
    let o = stream(
        dir.path(),
        &[
            "--filename",
            f.to_str().unwrap(),
            "--rw",
            "write",
            "--bs",
            "4k,8k",
            "--size",
            "1m",
            "--numjobs",
            "2",
            "--set",
            "group_reporting=1",
            "--format",
            "json",
        ],
    );
    let d = json(&o);
    assert_eq!(d["jobs"].as_array().unwrap().len(), 2);
    assert_eq!(d["jobs"][0]["write"]["io_bytes"], 2 << 20);
    assert_eq!(d["per_job"].as_array().unwrap().len(), 4);
    assert_eq!(d["sweep"].as_array().unwrap().len(), 2);
}

#[test]
fn devices_mmap_and_transports() {
    let dir = tempfile::tempdir().unwrap();
    // A character device reports size 0: the job's size is used.
    let o = stream(
        dir.path(),
        &[
            "--filename",
            "/dev/zero",
            "--rw",
            "read",
            "--bs",
            "64k",
            "--size",
            "4m",
            "--format",
            "json",
        ],
    );
    let d = json(&o);
    assert_eq!(d["jobs"][0]["target"], "char");
    assert_eq!(d["jobs"][0]["read"]["io_bytes"], 4 << 20);
    // …and without one it says what to set.
    let o = stream(dir.path(), &["--filename", "/dev/zero", "--rw", "read"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("set size= or filesize="),
        "{}",
        stderr(&o)
    );
    // A region beyond filesize on a char device.
    let o = stream(
        dir.path(),
        &[
            "--filename",
            "/dev/zero",
            "--rw",
            "read",
            "--size",
            "2m",
            "--filesize",
            "1m",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("beyond the end"), "{}", stderr(&o));
    // mmap engine round trip with verify.
    let f = dir.path().join("m");
    let o = stream(
        dir.path(),
        &[
            "--filename",
            f.to_str().unwrap(),
            "--rw",
            "write",
            "--bs",
            "4k",
            "--size",
            "256k",
            "--ioengine",
            "mmap",
            "--verify",
            "xxhash",
            "--format",
            "json",
        ],
    );
    let d = json(&o);
    assert_eq!(d["jobs"][0]["verify"]["blocks"], 64, "{d}");
    // Polled completion, reported per job.
    for engine in ["psync", "io_uring"] {
        let o = stream(
            dir.path(),
            &[
                "--filename",
                f.to_str().unwrap(),
                "--rw",
                "read",
                "--bs",
                "4k",
                "--size",
                "256k",
                "--ioengine",
                engine,
                "--iodepth",
                "4",
                "--completion",
                "poll",
                "--verify",
                "xxhash",
                "--format",
                "json",
            ],
        );
        let d = json(&o);
        assert_eq!(d["jobs"][0]["completion"], "poll", "{engine}");
        assert!(
            d["jobs"][0]["completion_detail"]
                .as_str()
                .unwrap()
                .contains(engine),
            "{d}"
        );
        assert_eq!(d["jobs"][0]["verify"]["bad"], 0);
    }
    // A transport as a one-way stream.
    for t in ["xfer:pipe", "xfer:shm"] {
        let o = stream(
            dir.path(),
            &[
                "--filename",
                t,
                "--rw",
                "write",
                "--bs",
                "64k",
                "--size",
                "8m",
                "--iodepth",
                "4",
                "--format",
                "json",
            ],
        );
        let d = json(&o);
        assert_eq!(d["jobs"][0]["write"]["io_bytes"], 8 << 20, "{t}");
        assert_eq!(d["jobs"][0]["ioengine"], "transport");
    }
}

#[test]
fn bad_input_is_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let run = |a: &[&str]| xb_in(dir.path(), a);
    let job = dir.path().join("bad.fio");
    std::fs::write(
        &job,
        "[global]\nbs=4k\n\n[j]\nrw=write\nfilename=/nonexistent-dir/x\nsize 4k\n",
    )
    .unwrap();
    let o = run(&["stream", "--job", job.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(":7:"), "{}", stderr(&o));
    // Missing file with allow_file_create=0: nothing is created.
    let missing = dir.path().join("missing");
    std::fs::write(
        &job,
        format!(
            "[j]\nallow_file_create=0\nrw=write\nsize=4k\nfilename={}\n",
            missing.display()
        ),
    )
    .unwrap();
    let o = run(&["stream", "--job", job.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("allow_file_create=0"), "{}", stderr(&o));
    assert!(!missing.exists());
    // Not a fio option: refused where it stands, nothing written.
    let f = dir.path().join("w");
    std::fs::write(
        &job,
        format!(
            "[j]\nrw=write\nsize=64k\nfilename={}\nfancy_option=3\n",
            f.display()
        ),
    )
    .unwrap();
    let o = run(&["stream", "--job", job.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("bad.fio:5: unknown option 'fancy_option' (not a fio option)"),
        "{}",
        stderr(&o)
    );
    assert!(!f.exists());
    // A fio option that changes no figure: a note, and the job runs.
    std::fs::write(
        &job,
        format!(
            "[j]\nrw=write\nsize=64k\nfilename={}\nclat_percentiles=1\n",
            f.display()
        ),
    )
    .unwrap();
    let o = run(&["stream", "--job", job.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("bad.fio:5: option 'clat_percentiles' changes no figure"),
        "{}",
        stderr(&o)
    );
    // A fio option that would change figures: refused with file:line.
    std::fs::write(
        &job,
        format!(
            "[j]\nrw=write\nsize=64k\nfilename={}\nbs_unaligned=1\n",
            f.display()
        ),
    )
    .unwrap();
    let o = run(&["stream", "--job", job.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("bad.fio:5: option 'bs_unaligned' is not supported"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    // Unreadable job file, no target at all.
    let o = run(&["stream", "--job", "/nonexistent.fio"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["stream"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--job"), "{}", stderr(&o));
    for o in [
        run(&["stream", "--job", "/nonexistent.fio"]),
        run(&["stream"]),
    ] {
        assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    }
}

/// The `histogram` field of a direction, decoded.
fn histogram(v: &serde_json::Value) -> hdrhistogram::Histogram<u64> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(v.as_str().expect("histogram is a string"))
        .expect("base64");
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .expect("HdrHistogram V2")
}

#[test]
fn repeats_keep_each_directions_histogram_blocks_and_repeat_figures_under_a_rate_limit() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r");
    std::fs::write(&f, vec![7u8; 256 << 10]).unwrap();
    // 64 reads of 4 KiB at 4 MiB/s: about 60 ms a repeat.
    let rate = 4u64 << 20;
    let o = stream(
        dir.path(),
        &[
            "--filename",
            f.to_str().unwrap(),
            "--rw",
            "read",
            "--bs",
            "4k",
            "--size",
            "256k",
            "--set",
            &format!("rate={rate}"),
            "--repeat",
            "2",
            "--format",
            "json",
        ],
    );
    let d = json(&o);
    let jobs = d["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "one job, its repeats merged");
    let r = &jobs[0]["read"];
    assert_eq!(r["total_ios"], 128);
    assert_eq!(r["io_bytes"], 2 * (256 << 10));
    assert_eq!(histogram(&r["histogram"]).len(), 128);
    let blocks = r["intervals"].as_array().unwrap();
    assert_eq!(blocks.len(), 20, "10 per repeat: {blocks:?}");
    let repeats = r["repeats"].as_array().unwrap();
    assert_eq!(repeats.len(), 2);
    // The limiter sleeps until each I/O is due: never faster than the rate
    // (but for the last I/O of a repeat), however loaded the machine.
    let most = rate as f64 * 64.0 / 63.0 * 1.01;
    for f in blocks.iter().chain(repeats) {
        for k in [
            "bw_bytes", "iops", "count", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns",
        ] {
            assert!(f[k].as_f64().is_some_and(|v| v > 0.0), "{k} in {f}");
        }
    }
    for f in repeats {
        assert_eq!(f["count"], 64.0);
        assert!(f["bw_bytes"].as_f64().unwrap() <= most, "{f}");
    }
    assert!(common::num(r, "bw_bytes") <= most);
    let bytes: f64 = blocks
        .iter()
        .map(|b| common::num(b, "bw_bytes") * common::num(b, "count") / common::num(b, "iops"))
        .sum();
    assert!((bytes / (512 << 10) as f64 - 1.0).abs() < 1e-6, "{bytes}");
    // Nothing was written: no spread that way.
    assert!(jobs[0]["write"].get("histogram").is_none());
    assert!(jobs[0]["write"].get("repeats").is_none());
    // The group's aggregate is merged the same way.
    let g = &d["groups"][0]["read"];
    assert_eq!(g["total_ios"], 128);
    assert_eq!(g["repeats"].as_array().map(Vec::len), Some(2));
}

#[test]
fn a_read_far_past_a_files_end_is_refused_before_any_zero_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("small.bin");
    std::fs::write(&f, vec![0u8; 64 << 10]).unwrap();
    let name = f.to_str().unwrap();
    // 131 GB in: more than the disk holds here, and over the sane bound
    // anywhere without --allow-large-layout.
    for offset in ["131g", "9g"] {
        let o = stream(
            dir.path(),
            &[
                "--name",
                "far",
                "--filename",
                name,
                "--rw",
                "read",
                "--bs",
                "4k",
                "--size",
                "64k",
                "--offset",
                offset,
                "--quiet",
            ],
        );
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{offset}: {e}");
        assert_eq!(e.trim().lines().count(), 1, "{e}");
        assert!(e.contains("of zeros") && e.contains("free"), "{e}");
        assert!(
            e.contains("--allow-large-layout") || e.contains("lower offset="),
            "{e}"
        );
        assert_eq!(
            std::fs::metadata(&f).unwrap().len(),
            64 << 10,
            "nothing written"
        );
    }
    // A small layout still happens, as fio does it.
    let o = stream(
        dir.path(),
        &[
            "--name",
            "near",
            "--filename",
            name,
            "--rw",
            "read",
            "--bs",
            "4k",
            "--size",
            "64k",
            "--offset",
            "1m",
            "--quiet",
            "--format",
            "json",
        ],
    );
    let d = json(&o);
    assert!(
        d["jobs"][0]["prepared"]
            .as_str()
            .unwrap()
            .contains("laid out"),
        "{d}"
    );
    assert_eq!(std::fs::metadata(&f).unwrap().len(), (1 << 20) + (64 << 10));
}

/// fio's command-line habits: job files as arguments, run one after the
/// other as `fio a.fio b.fio` runs them; `--section`; `--output-format`.
#[test]
fn job_files_as_arguments_sections_and_fios_output_format() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.fio");
    let b = dir.path().join("b.fio");
    std::fs::write(
        &a,
        "[global]\nrw=write\nbs=4k\nsize=64k\n[a1]\n[a2]\nsize=128k\n",
    )
    .unwrap();
    // b's own [global]: a's does not reach it.
    std::fs::write(&b, "[global]\nrw=write\nbs=8k\n[b1]\nsize=32k\n").unwrap();
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let o = stream(dir.path(), &[a, b, "--output-format", "json"]);
    let d = json(&o);
    let jobs: Vec<(String, u64, u64)> = d["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap().to_string(),
                j["groupid"].as_u64().unwrap(),
                j["write"]["io_bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    // a's jobs side by side, then b's after them: a group of its own.
    assert_eq!(
        jobs,
        vec![
            ("a1".into(), 0, 65536),
            ("a2".into(), 0, 131072),
            ("b1".into(), 1, 32768)
        ]
    );
    assert_eq!(d["jobs"][2]["bs"], 8192);
    let o = stream(
        dir.path(),
        &[
            a,
            b,
            "--section",
            "a2",
            "--section",
            "b1",
            "--format",
            "json",
        ],
    );
    let names: Vec<String> = json(&o)["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["jobname"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["a2", "b1"]);
    for (args, says) in [
        (vec![a, "--section", "a3"], "its sections: a1, a2"),
        (
            vec![a, "--output-format", "xml"],
            "normal, json, json+, terse",
        ),
        (
            vec![a, "--output-format", "json", "--format", "csv"],
            "cannot be used with",
        ),
    ] {
        let o = stream(dir.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}

/// A missing `directory=` is made, as fio makes it; a missing parent of a
/// `filename=` is still an error (a typo, not a tree to make).
#[test]
fn a_missing_job_directory_is_made_as_fio_makes_it() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("dir.fio");
    std::fs::write(
        &job,
        "[global]\ndirectory=scratch/deeper\nrw=write\nbs=4k\nsize=64k\n\n[a]\n",
    )
    .unwrap();
    let o = stream(
        dir.path(),
        &["--job", job.to_str().unwrap(), "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json(&o)["jobs"][0]["write"]["io_bytes"], 65536);
    let made = dir.path().join("scratch/deeper/a.0.0");
    assert_eq!(std::fs::metadata(&made).unwrap().len(), 65536);
    let o = stream(
        dir.path(),
        &[
            "--filename",
            "nowhere/file",
            "--rw",
            "write",
            "--bs",
            "4k",
            "--size",
            "64k",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("its directory does not exist"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("nowhere").exists());
}

#[test]
fn the_null_engine_opens_no_file_and_reports_xferbenchs_own_cost_per_io() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("null.fio");
    std::fs::write(
        &job,
        "[global]\nioengine=null\nbs=4k\nsize=8m\n\n[nullread]\nrw=randread\nfilename=never-made\n",
    )
    .unwrap();
    let o = stream(
        dir.path(),
        &["--job", job.to_str().unwrap(), "--format", "json"],
    );
    let d = json(&o);
    let j = &d["jobs"][0];
    assert_eq!(j["ioengine"], "null");
    assert_eq!(j["read"]["total_ios"], 2048);
    assert!(!dir.path().join("never-made").exists(), "no file opened");
    let w = j["warnings"].to_string();
    assert!(w.contains("ns per I/O is xferbench's own cost"), "{w}");
    // Nothing to verify.
    let o = stream(
        dir.path(),
        &["--job", job.to_str().unwrap(), "--set", "verify=crc32c"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("null engine moves none"),
        "{}",
        stderr(&o)
    );
}

/// A 4 KiB file and the flags of a read job over `size` of it at `rate`
/// bytes/s, with `--timeout` (the watchdog gives up after twice that).
fn slow_job(f: &Path, size: &str, rate: &str, timeout: &str) -> Vec<String> {
    [
        "--quiet",
        "stream",
        "--name",
        "slow",
        "--filename",
        f.to_str().unwrap(),
        "--rw",
        "read",
        "--bs",
        "4k",
        "--size",
        size,
        "--rate",
        rate,
        "--timeout",
        timeout,
        "--format",
        "json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn a_rate_limited_job_waiting_longer_than_the_stall_limit_is_not_stuck() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r");
    std::fs::write(&f, vec![7u8; 12 << 10]).unwrap();
    // One 4 KiB read a second; the watchdog's limit is 2 × 200 ms.
    let a = slow_job(&f, "12k", "4k", "200ms");
    let o = xb_in(dir.path(), &args(&a));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("no progress"), "{}", stderr(&o));
    let d = json(&o);
    assert_eq!(d["jobs"][0]["read"]["total_ios"], 3, "{d}");
    assert_eq!(d["jobs"][0]["read"]["io_bytes"], 12 << 10, "{d}");
}

#[test]
fn an_io_that_never_completes_is_still_a_stall() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r");
    std::fs::write(&f, vec![7u8; 16 << 10]).unwrap();
    // The second I/O blocks forever: without a rate limit, and after a
    // deliberate 1 s wait for it (the limit counts from the wait's end).
    for rate in ["0", "4k"] {
        let a = slow_job(&f, "16k", rate, "200ms");
        let mut c = common::xferbench();
        c.args(args(&a))
            .current_dir(dir.path())
            .env("XFERBENCH_ENGINE_FAULT", "hang-after:1");
        let start = std::time::Instant::now();
        let o = common::finish(c);
        let e = stderr(&o);
        assert!(!o.status.success(), "rate={rate}: {e}");
        assert!(
            e.contains("job slow made no progress for 400ms"),
            "rate={rate}: {e}"
        );
        // Loose: caught long before the harness's own limit.
        assert!(start.elapsed() < std::time::Duration::from_secs(60));
    }
}

#[test]
fn a_job_without_filename_uses_fios_default_name_in_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("noname.fio");
    std::fs::write(
        &job,
        "[global]\nbs=4k\nsize=64k\n\n[name]\nrw=write\nnumjobs=2\n\n[sub]\nstonewall\nrw=read\ndirectory=d\nfilename_format=$jobname-$jobnum\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("d")).unwrap();
    let o = stream(
        dir.path(),
        &["--job", job.to_str().unwrap(), "--format", "json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let d = json(&o);
    let names: Vec<&str> = d["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["filename"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["name.0.0", "name.1.0", "d/sub-0"]);
    for f in ["name.0.0", "name.1.0", "d/sub-0"] {
        let m = std::fs::metadata(dir.path().join(f)).unwrap();
        assert_eq!(m.len(), 64 << 10, "{f}");
    }
    // nrfiles=2: two files named by $filenum, size= divided between them.
    std::fs::write(&job, "[global]\nsize=64k\nrw=write\n[n]\nnrfiles=2\n").unwrap();
    let d = json(&stream(
        dir.path(),
        &["--job", job.to_str().unwrap(), "--format", "json"],
    ));
    assert_eq!(d["jobs"][0]["filename"], "n.0.0");
    for f in ["n.0.0", "n.0.1"] {
        let m = std::fs::metadata(dir.path().join(f)).unwrap();
        assert_eq!(m.len(), 32 << 10, "{f}");
    }
    // A format that names every file alike: as in fio, the job has the one
    // file twice over, each its share of size= (fio 3.33: a 32 KiB file
    // read twice).
    std::fs::write(
        &job,
        "[global]\nsize=64k\n[n]\nnrfiles=2\nfilename_format=same\n",
    )
    .unwrap();
    let d = json(&stream(
        dir.path(),
        &["--job", job.to_str().unwrap(), "--format", "json"],
    ));
    assert_eq!(d["jobs"][0]["read"]["io_bytes"], 64 << 10);
    let m = std::fs::metadata(dir.path().join("same")).unwrap();
    assert_eq!(m.len(), 32 << 10);
}

/// `xferbench --quiet stream --job FILE --format json` on `text`, in `dir`.
fn job_json(dir: &Path, text: &str) -> serde_json::Value {
    let job = dir.join("engines.fio");
    std::fs::write(&job, text).unwrap();
    json(&stream(
        dir,
        &["--job", job.to_str().unwrap(), "--format", "json"],
    ))
}

#[test]
fn each_sync_family_engine_reads_back_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    for engine in ["sync", "psync", "vsync", "pvsync", "pvsync2"] {
        let f = dir.path().join(engine);
        // The writer reads its blocks back (do_verify), then a second job
        // reads them in a random order, checking each.
        let d = job_json(
            dir.path(),
            &format!(
                "[global]\nioengine={engine}\nfilename={}\nbs=4k\nsize=256k\nverify=crc32c\niodepth=8\n[w]\nrw=write\n[r]\nstonewall\nrw=randread\n",
                f.display()
            ),
        );
        for (i, j) in d["jobs"].as_array().unwrap().iter().enumerate() {
            assert_eq!(j["ioengine"], engine);
            let detail = j["completion_detail"].as_str().unwrap();
            assert!(detail.starts_with(&format!("{engine}, ")), "{detail}");
            assert_eq!(j["verify"]["blocks"], 64, "{engine} job {i}");
            assert_eq!(j["verify"]["bad"], 0, "{engine} job {i}");
            assert_eq!(j["error"], 0);
        }
        assert_eq!(d["jobs"][0]["write"]["io_bytes"], 256 << 10);
        assert_eq!(d["jobs"][1]["read"]["total_ios"], 64);
        let writer = d["jobs"][0]["completion_detail"].as_str().unwrap();
        match engine {
            "sync" => assert!(writer.contains("lseek + read/write"), "{writer}"),
            "vsync" => assert!(writer.contains("coalesced up to 8 per call"), "{writer}"),
            "pvsync2" => assert!(writer.contains("preadv2/pwritev2"), "{writer}"),
            _ => {}
        }
        // vsync takes iodepth (it coalesces); the others do one at a time.
        let depth = if engine == "vsync" { 8 } else { 1 };
        assert_eq!(d["jobs"][0]["iodepth"], depth, "{engine}");
    }
}

#[test]
fn libaio_and_posixaio_keep_iodepth_in_flight_and_move_the_right_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for engine in ["libaio", "posixaio"] {
        let f = dir.path().join(engine);
        let d = job_json(
            dir.path(),
            &format!(
                "[global]\nioengine={engine}\niodepth=8\nfilename={}\nbs=16k\nsize=1m\n[w]\nrw=randwrite\nverify=crc32c\ndo_verify=0\n[r]\nstonewall\nrw=read\nverify=crc32c\n[poll]\nstonewall\nrw=read\ncompletion=poll\n",
                f.display()
            ),
        );
        let jobs = d["jobs"].as_array().unwrap();
        assert_eq!(jobs[0]["ioengine"], engine);
        assert_eq!(jobs[0]["iodepth"], 8);
        assert_eq!(jobs[0]["write"]["io_bytes"], 1 << 20);
        assert_eq!(jobs[1]["read"]["io_bytes"], 1 << 20);
        assert_eq!(jobs[1]["verify"]["blocks"], 64);
        assert_eq!(jobs[1]["verify"]["bad"], 0);
        assert_eq!(jobs[2]["read"]["total_ios"], 64);
        assert_eq!(jobs[2]["completion"], "poll");
        let detail = jobs[0]["completion_detail"].as_str().unwrap();
        assert!(detail.starts_with(&format!("{engine}, ")), "{detail}");
        if engine == "libaio" {
            assert!(
                detail.contains("io_submit/io_getevents (kernel AIO), up to 8 in flight"),
                "{detail}"
            );
            let polled = jobs[2]["completion_detail"].as_str().unwrap();
            assert!(polled.contains("spin on io_getevents"), "{polled}");
        }
        // Every 16 KiB block's header names the offset it sits at.
        let data = std::fs::read(&f).unwrap();
        for (i, b) in data.chunks(16 << 10).enumerate() {
            assert_eq!(&b[0..4], b"XBVF");
            assert_eq!(
                u64::from_le_bytes(b[16..24].try_into().unwrap()),
                (i << 14) as u64
            );
        }
    }
}

#[test]
fn io_uring_fixedbufs_with_registerfiles_and_its_other_options_run() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("u");
    let d = job_json(
        dir.path(),
        &format!(
            "[global]\nioengine=io_uring\niodepth=16\nfilename={}\nbs=8k\nsize=512k\n[w]\nrw=write\nverify=xxhash\nfixedbufs\nregisterfiles\n[r]\nstonewall\nrw=randread\nverify=xxhash\nnonvectored=0\nforce_async=4\n",
            f.display()
        ),
    );
    let jobs = d["jobs"].as_array().unwrap();
    let w = jobs[0]["completion_detail"].as_str().unwrap();
    assert!(
        w.contains("READ_FIXED/WRITE_FIXED on registered buffers (fixedbufs)"),
        "{w}"
    );
    assert!(w.contains("registered file (registerfiles)"), "{w}");
    assert_eq!(jobs[0]["verify"]["blocks"], 64);
    assert_eq!(jobs[0]["verify"]["bad"], 0);
    let r = jobs[1]["completion_detail"].as_str().unwrap();
    assert!(
        r.contains("READV/WRITEV") && r.contains("IOSQE_ASYNC on every 4 requests (16 of 64"),
        "{r}"
    );
    assert_eq!(jobs[1]["verify"]["bad"], 0);
}

#[test]
fn file_engines_create_stat_and_delete_nrfiles_named_as_fio_names_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("d")).unwrap();
    // fio's example shape: rw=filecreate, nrfiles per job, one job per section.
    let d = job_json(
        dir.path(),
        "[global]\nrw=filecreate\nioengine=filecreate\nnrfiles=40\nfilesize=4k\ndirectory=d\n[t0]\n[t1]\n",
    );
    for (i, j) in d["jobs"].as_array().unwrap().iter().enumerate() {
        assert_eq!(j["ioengine"], "filecreate");
        assert_eq!(j["read"]["total_ios"], 40, "{j}");
        assert_eq!(j["read"]["io_bytes"], 0);
        assert!(j["read"]["iops"].as_f64().unwrap() > 0.0);
        let detail = j["completion_detail"].as_str().unwrap();
        assert!(
            detail.starts_with("filecreate: one open(O_CREAT|O_RDWR, 0600) + close per I/O"),
            "{detail}"
        );
        for n in 0..40 {
            assert!(
                dir.path().join(format!("d/t{i}.0.{n}")).exists(),
                "t{i}.0.{n}"
            );
        }
    }
    assert_eq!(std::fs::read_dir(dir.path().join("d")).unwrap().count(), 80);
    // stat them (making the 10 more filestat asks for), then delete them all.
    let d = job_json(
        dir.path(),
        "[global]\ndirectory=d\nfilesize=4k\n[t0]\nioengine=filestat\nstat_type=lstat\nnrfiles=50\n[t0]\nstonewall\nioengine=filedelete\nnrfiles=50\nrw=write\n",
    );
    let jobs = d["jobs"].as_array().unwrap();
    assert_eq!(jobs[0]["read"]["total_ios"], 50);
    let detail = jobs[0]["completion_detail"].as_str().unwrap();
    assert!(
        detail.contains("one lstat per I/O") && detail.contains("10 created first"),
        "{detail}"
    );
    assert_eq!(jobs[1]["write"]["total_ios"], 50);
    assert_eq!(
        std::fs::read_dir(dir.path().join("d")).unwrap().count(),
        40,
        "t1's remain"
    );
}

#[test]
fn cpuio_burns_beside_the_io_jobs_and_reports_no_bandwidth() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("c");
    let d = job_json(
        dir.path(),
        &format!(
            "[burn]\nioengine=cpuio\ncpuload=40\ncpuchunks=10000\n[io]\nfilename={}\nrw=write\nbs=4k\nsize=8m\nrate=16m\n",
            f.display()
        ),
    );
    let jobs = d["jobs"].as_array().unwrap();
    let burn = &jobs[0];
    assert_eq!(burn["ioengine"], "cpuio");
    assert_eq!(burn["read"]["total_ios"], 0);
    assert_eq!(burn["write"]["total_ios"], 0);
    let detail = burn["completion_detail"].as_str().unwrap();
    assert!(
        detail.starts_with("cpuio: a load, not I/O — cpuload=40%"),
        "{detail}"
    );
    assert!(
        detail.contains("until the I/O jobs beside it were done"),
        "{detail}"
    );
    assert_eq!(burn["warnings"].as_array().unwrap().len(), 0, "{burn}");
    // The group's figures are the I/O job's alone.
    assert_eq!(jobs[1]["write"]["io_bytes"], 8 << 20);
    // Alone and without runtime= it would never end: refused.
    let job = dir.path().join("alone.fio");
    std::fs::write(&job, "[burn]\nioengine=cpuio\ncpuload=10\n").unwrap();
    let o = stream(dir.path(), &["--job", job.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("give it runtime="), "{}", stderr(&o));
}

#[test]
fn a_hostile_engine_value_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("h.fio");
    for (text, want) in [
        (
            "[j]\nioengine=sg\nsize=4k\n",
            "h.fio:2: ioengine=sg: this engine needs SCSI generic (sg) devices",
        ),
        (
            "[j]\nioengine=cpuio\ncpuload=500\n",
            "h.fio:3: cpuload=500: expected a whole number from 1 to 100",
        ),
        (
            "[j]\nioengine=psync\nfixedbufs\nsize=4k\n",
            "job j: fixedbufs is an option of ioengine=io_uring, not of ioengine=psync",
        ),
        (
            "[j]\nioengine=psync\nnrfiles=3\nsize=4k\n",
            "job j: size=4096 over 3 files is less than one block (bs=4096) each",
        ),
        (
            "[j]\nioengine=pvsync2\nhipri_percentage=-4\n",
            "hipri_percentage=-4: expected a whole number from 0 to 100",
        ),
        (
            "[j]\nioengine=filecreate\nnrfiles=2\ndirectory=/nonexistent-xb\n",
            "directory /nonexistent-xb does not exist",
        ),
    ] {
        std::fs::write(&job, text).unwrap();
        let o = stream(dir.path(), &["--job", job.to_str().unwrap()]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{text}: {e}");
        assert!(e.contains(want), "{text}: {e}");
        assert_eq!(e.lines().count(), 1, "{text}: {e}");
    }
}

/// A one-job file on `f` with these extra lines.
fn job_file(dir: &Path, f: &Path, lines: &str) -> PathBuf {
    let job = dir.join("v.fio");
    std::fs::write(
        &job,
        format!("[v]\nfilename={}\nbs=4k\nsize=64k\n{lines}\n", f.display()),
    )
    .unwrap();
    job
}

/// The stderr line that says where verification failed.
fn failure_line(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(1), "{}", stderr(o));
    let e = stderr(o);
    e.lines()
        .find(|l| l.contains("verify failed"))
        .unwrap_or_else(|| panic!("no verify failure line: {e}"))
        .to_string()
}

#[test]
fn every_verify_kind_writes_checks_and_names_a_corrupted_byte() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("data");
    for kind in [
        "md5",
        "crc64",
        "crc32",
        "crc32c-intel",
        "crc16",
        "crc7",
        "xxhash",
        "sha1",
        "sha224",
        "sha256",
        "sha384",
        "sha512",
        "sha3-224",
        "sha3-256",
        "sha3-384",
        "sha3-512",
        "meta",
    ] {
        let _ = std::fs::remove_file(&f);
        // The writer reads every block back and checks it.
        let job = job_file(dir.path(), &f, &format!("rw=write\nverify={kind}"));
        let d = json(&stream(
            dir.path(),
            &["--job", job.to_str().unwrap(), "--format", "json"],
        ));
        let v = &d["jobs"][0]["verify"];
        assert_eq!(
            (v["blocks"].as_u64(), v["bad"].as_u64()),
            (Some(16), Some(0)),
            "{kind}: {v}"
        );
        assert_eq!(v["kind"], kind.trim_end_matches("-intel"));
        // A reader in a later run finds the flipped byte: in the payload,
        // or for meta (the header alone is checked) in the header.
        let at = 3 * 4096 + if kind == "meta" { 20 } else { 1000 };
        let mut data = std::fs::read(&f).unwrap();
        data[at] ^= 0x08;
        std::fs::write(&f, &data).unwrap();
        let o = stream(
            dir.path(),
            &["--job", job.to_str().unwrap(), "--set", "rw=read"],
        );
        let line = failure_line(&o);
        assert!(line.contains("bad block at offset 12288"), "{kind}: {line}");
        assert!(
            line.contains(&format!("first bad byte at offset {at}")),
            "{kind}: {line}"
        );
    }
}

#[test]
fn verify_patterns_fill_blocks_as_fio_does_and_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("pat");
    // verify=pattern: no header, the pattern (with %o, the block's offset)
    // from each block's start.
    let job = job_file(
        dir.path(),
        &f,
        "rw=write\nverify=pattern\nverify_pattern=0xff%o\"abcd\"-12",
    );
    let d = json(&stream(
        dir.path(),
        &["--job", job.to_str().unwrap(), "--format", "json"],
    ));
    assert_eq!(d["jobs"][0]["verify"]["pattern"], "0xff%o\"abcd\"-12");
    assert_eq!(d["jobs"][0]["verify"]["blocks"], 16);
    let data = std::fs::read(&f).unwrap();
    for (i, b) in data.chunks(4096).enumerate() {
        let mut unit = vec![0xff];
        unit.extend_from_slice(&((i * 4096) as u64).to_le_bytes());
        unit.extend_from_slice(b"abcd");
        unit.extend_from_slice(&(-12i32).to_le_bytes());
        let want: Vec<u8> = unit.iter().copied().cycle().take(4096).collect();
        assert!(b == want.as_slice(), "block {i}");
    }
    let mut bad = data.clone();
    bad[5 * 4096 + 77] = 0x5a;
    std::fs::write(&f, &bad).unwrap();
    let o = stream(
        dir.path(),
        &["--job", job.to_str().unwrap(), "--set", "rw=read"],
    );
    let line = failure_line(&o);
    assert!(
        line.contains("bad block at offset 20480: data does not match verify_pattern="),
        "{line}"
    );
    assert!(
        line.contains(&format!("first bad byte at offset {}", 5 * 4096 + 77)),
        "{line}"
    );

    // verify_pattern alone: a header per block, then the pattern, both checked.
    let _ = std::fs::remove_file(&f);
    let job = job_file(dir.path(), &f, "rw=write\nverify_pattern=0xdeadbeef");
    let d = json(&stream(
        dir.path(),
        &["--job", job.to_str().unwrap(), "--format", "json"],
    ));
    assert_eq!(d["jobs"][0]["verify"]["kind"], "meta");
    let mut data = std::fs::read(&f).unwrap();
    assert_eq!(&data[0..4], b"XBVF");
    assert_eq!(
        &data[64..72],
        &[0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef]
    );
    data[4096 + 3000] ^= 1;
    std::fs::write(&f, &data).unwrap();
    let o = stream(
        dir.path(),
        &["--job", job.to_str().unwrap(), "--set", "rw=read"],
    );
    let line = failure_line(&o);
    assert!(
        line.contains(&format!("first bad byte at offset {}", 4096 + 3000)),
        "{line}"
    );
}

#[test]
fn verify_interval_offset_backlog_and_only() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("chunks");
    let opts = "verify=sha256\nverify_interval=1k\nverify_offset=512";
    // A random writer that checks every 5 blocks as it goes.
    let job = job_file(
        dir.path(),
        &f,
        &format!("rw=randwrite\n{opts}\nverify_backlog=5"),
    );
    let d = json(&stream(
        dir.path(),
        &["--job", job.to_str().unwrap(), "--format", "json"],
    ));
    let j = &d["jobs"][0];
    assert_eq!(j["verify"]["blocks"], 16, "{j}");
    assert_eq!(j["verify"]["backlog"], 5);
    assert!(
        j["warnings"].to_string().contains("verify_backlog=5"),
        "{j}"
    );
    // Each 1k chunk holds its header 512 bytes in.
    let data = std::fs::read(&f).unwrap();
    for c in 0..64 {
        assert_eq!(&data[c * 1024 + 512..c * 1024 + 516], b"XBVF", "chunk {c}");
    }
    // verify_only: the same job checks without writing.
    let job = job_file(
        dir.path(),
        &f,
        &format!("rw=randwrite\n{opts}\nverify_only=1"),
    );
    let d = json(&stream(
        dir.path(),
        &["--job", job.to_str().unwrap(), "--format", "json"],
    ));
    let j = &d["jobs"][0];
    assert_eq!(
        (
            j["write"]["total_ios"].as_u64(),
            j["read"]["total_ios"].as_u64()
        ),
        (Some(0), Some(16)),
        "{j}"
    );
    assert_eq!(j["verify"]["bad"], 0);
    assert_eq!(std::fs::read(&f).unwrap(), data, "verify_only wrote");
    // A damaged chunk is named along with its block.
    let mut bad = data.clone();
    bad[9 * 4096 + 3 * 1024 + 900] ^= 0x80;
    std::fs::write(&f, &bad).unwrap();
    let line = failure_line(&stream(dir.path(), &["--job", job.to_str().unwrap()]));
    assert!(
        line.contains("bad block at offset 36864 (verify_interval chunk at offset 39936)"),
        "{line}"
    );
    assert!(
        line.contains(&format!(
            "first bad byte at offset {}",
            9 * 4096 + 3 * 1024 + 900
        )),
        "{line}"
    );
}

/// fio fits `verify_interval` to the block sizes instead of refusing it
/// (fio's own t0004 writes 512 B blocks with verify_interval=1m), and takes
/// `bsrange=` ends with `:` either way round: the jobs run and verify.
#[test]
fn verify_interval_is_fitted_and_bsrange_takes_fios_spellings() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x");
    for lines in [
        "bs=512\nverify=md5\nverify_interval=1m",
        "bs=4k\nverify=crc32c\nverify_interval=3k",
        "bsrange=4k:512\nverify=md5\nverify_interval=1m",
    ] {
        let job = job_file(dir.path(), &f, &format!("rw=write\nsize=64k\n{lines}"));
        let o = stream(
            dir.path(),
            &["--job", job.to_str().unwrap(), "--format", "json"],
        );
        assert!(o.status.success(), "{lines}: {}", stderr(&o));
        let d = json(&o);
        let w = &d["jobs"][0]["write"];
        assert_eq!(w["io_bytes"].as_f64(), Some(65536.0), "{lines}");
    }
}

/// A job that reads and writes verifies as fio's does (fio's t0006, t0008
/// and t0026): its reads along the way are not checked (they find blocks
/// not yet written: zeros in a new file, which would fail), and every block
/// it wrote is read back after its I/O, or every verify_backlog writes;
/// with mixed sizes too (fio's t0002).
#[test]
fn a_job_that_reads_and_writes_reads_back_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    for (n, lines) in [
        "rw=randrw\nverify=md5",
        "rw=readwrite\nverify=crc32c\nverify_backlog=1",
        "rw=randrw\nverify=meta\nverify_backlog=4\nverify_pattern=0xaaa",
        // A mix: each pass's writes are logged (no two of a pass overlap).
        "rw=randrw\nverify=md5\nbsrange=4k-16k",
        "rw=rw\nverify=md5\nbssplit=4k/50:16k/50",
    ]
    .iter()
    .enumerate()
    {
        let f = dir.path().join(format!("d{n}"));
        let job = job_file(dir.path(), &f, &format!("{lines}\nsize=256k"));
        let o = stream(
            dir.path(),
            &["--job", job.to_str().unwrap(), "--format", "json"],
        );
        assert!(o.status.success(), "{lines}: {}", stderr(&o));
        let d = json(&o);
        let j = &d["jobs"][0];
        let writes = j["write"]["total_ios"].as_u64().unwrap();
        assert!(
            writes > 0 && j["read"]["total_ios"].as_u64().unwrap() > 0,
            "{lines}: {j}"
        );
        let v = &j["verify"];
        assert_eq!(
            (v["blocks"].as_u64(), v["bad"].as_u64()),
            (Some(writes), Some(0)),
            "{lines}: {v}"
        );
    }
}

#[test]
fn verify_options_that_cannot_work_are_one_line_each() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x");
    for (lines, want) in [
        (
            "verify=sha4",
            "verify=sha4: unknown verify kind; use one of md5, crc64",
        ),
        (
            "verify=md5\nverify_write_sequence=0",
            "verify_write_sequence is not supported; the verify options xferbench takes are verify,",
        ),
        ("verify=pattern", "verify=pattern needs verify_pattern="),
        (
            "verify=sha512\nbs=64\nsize=4k",
            "verify=sha512 needs bs of at least 128 bytes",
        ),
        (
            "verify=0\nverify_backlog=4",
            "verify_backlog= needs verify=",
        ),
        (
            "verify=md5\nverify_only=1\ntime_based\nruntime=1",
            "verify_only checks the blocks one pass",
        ),
        (
            "verify_pattern=0xgg",
            "verify_pattern=0xgg: '0xgg' has no hex digits",
        ),
    ] {
        let job = job_file(dir.path(), &f, &format!("rw=write\n{lines}"));
        let o = stream(dir.path(), &["--job", job.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{lines}: {}", stderr(&o));
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains(want), "{lines}: {e}");
    }
    // Threads for checking: taken with a note, refused under --strict.
    let job = job_file(dir.path(), &f, "rw=write\nverify=crc7\nverify_async=2");
    let o = xb_in(dir.path(), &["stream", "--job", job.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("verify_async=2: xferbench checks blocks inline"),
        "{}",
        stderr(&o)
    );
    let o = stream(dir.path(), &["--job", job.to_str().unwrap(), "--strict"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// Each job of a `--format json` run, by name (clones and repeats aside).
fn jobs_by_name(v: &serde_json::Value) -> std::collections::HashMap<String, serde_json::Value> {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["jobname"].as_str().unwrap().to_string(), j.clone()))
        .collect()
}

#[test]
fn fio_offset_modifiers_zones_and_counts_run_as_fio_runs_them() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("data");
    let f = f.display();
    // Holes, backwards runs, strided zones and random runs each write with
    // verify and read back what they wrote: an offset computed two ways
    // would fail the check.
    for rw in [
        "rw=write:4k",
        "rw=write:-8k",
        "rw=randwrite:4\nrw_sequencer=sequential",
        "rw=randwrite:4\nrw_sequencer=identical",
        "rw=write\nzonemode=strided\nzonerange=64k\nzonesize=16k\nzoneskip=32k",
        "rw=randwrite\nnorandommap",
    ] {
        let v = job_json(
            dir.path(),
            &format!("[w]\nfilename={f}\nbs=4k\nsize=1m\n{rw}\nverify=crc32c\n"),
        );
        let w = &v["jobs"][0];
        assert_eq!(w["error"], 0, "{rw}: {v}");
        assert_eq!(w["write"]["total_ios"], 256, "{rw}");
        assert_eq!(w["verify"]["bad"], 0, "{rw}");
    }
    // A backwards reader checks blocks a forward writer wrote.
    job_json(
        dir.path(),
        &format!("[w]\nfilename={f}\nbs=4k\nsize=1m\nrw=write\nverify=crc32c\n"),
    );
    let v = job_json(
        dir.path(),
        &format!("[r]\nfilename={f}\nbs=4k\nsize=1m\nrw=read:-8k\nverify=crc32c\n"),
    );
    assert_eq!(v["jobs"][0]["verify"]["bad"], 0, "{v}");
    // number_ios, loops, size=N% of the target.
    let v = job_json(
        dir.path(),
        &format!(
            "[global]\nfilename={f}\nbs=4k\nrw=read\n[n]\nnumber_ios=10\n[l]\nsize=64k\nloops=3\n[p]\nsize=25%\n"
        ),
    );
    let j = jobs_by_name(&v);
    assert_eq!(j["n"]["read"]["total_ios"], 10);
    assert_eq!(j["l"]["read"]["total_ios"], 48);
    assert_eq!(j["p"]["read"]["io_bytes"], 256 << 10);
}

#[test]
fn startdelay_thinktime_and_exitall_shape_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("data");
    let f = f.display();
    let v = job_json(
        dir.path(),
        &format!(
            "[global]\nfilename={f}\nbs=4k\nsize=64k\nrw=write\n\
             [late]\nstartdelay=300ms\nnumber_ios=4\n\
             [slow]\nthinktime=20ms\nnumber_ios=6\n\
             [forever]\ntime_based\nruntime=30s\n\
             [quick]\nstartdelay=500ms\nexitall\nnumber_ios=4\n"
        ),
    );
    let j = jobs_by_name(&v);
    let ms = |n: &str, k: &str| j[n][k].as_u64().unwrap() / 1_000_000;
    // Think time only ever lengthens a run: a lower bound.
    assert!(ms("slow", "end_ns") - ms("slow", "start_ns") >= 100, "{v}");
    // fio's exitall is the run's, not the job's: once one job has it, the
    // first job to end (slow, ~120 ms) ends its group — the 30 s job, and
    // the two still in their start delay, which then do no I/O (fio 3.33
    // gives the same: forever ran 135 ms, late and quick 0 I/Os).
    assert_eq!(j["forever"]["error"], 0, "{v}");
    assert!(ms("forever", "end_ns") < 25_000, "{v}");
    assert!(ms("forever", "end_ns") >= ms("slow", "end_ns") - 50, "{v}");
    for n in ["late", "quick"] {
        assert_eq!(j[n]["write"]["total_ios"], 0, "{n}: {v}");
    }
}

/// fio's examples/exitwhat.fio, shortened: exit_what=stonewall stops the
/// jobs running then (fast1, in another reporting group, rate-limited to
/// one I/O every 13 s) and not those after the next stonewall, which hold
/// back the jobs that follow them too; exit_what=all then stops everything.
#[test]
fn exit_what_stonewall_and_all_as_fio() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("data");
    let f = f.display();
    let fast = "rw=randrw\nnumjobs=2\nioengine=libaio\niodepth=4\nrate=300,300\n";
    let t = std::time::Instant::now();
    let v = job_json(
        dir.path(),
        &format!(
            "[global]\nfilename={f}\nfilesize=1m\nbs=4k\nexitall=1\n\
             [slow1]\nrw=read\nioengine=sync\nnew_group=1\nthinktime=2ms\nnumber_ios=50\nexit_what=stonewall\n\
             [fast1]\nnew_group=1\n{fast}\
             [slow2]\nstonewall\nrw=write\nioengine=sync\nnew_group=1\nthinktime=2ms\nnumber_ios=50\nexit_what=all\n\
             [fast2]\n{fast}"
        ),
    );
    // Rate-limited jobs left alone would run 13 s an I/O for 256 I/Os.
    assert!(t.elapsed() < std::time::Duration::from_secs(20), "{v}");
    let j = jobs_by_name(&v);
    let ns = |n: &str, k: &str| j[n][k].as_u64().unwrap();
    // fast1 ended when slow1 did, not by itself.
    assert!(ns("fast1", "end_ns") >= ns("slow1", "end_ns"), "{v}");
    assert!(
        ns("fast1", "end_ns") < ns("slow1", "end_ns") + 2_000_000_000,
        "{v}"
    );
    // slow2's stonewall held fast2 back until slow1 and fast1 were done,
    // and slow2 ran its 50 I/Os: stonewall stopped only the running jobs.
    let first_done = ns("slow1", "end_ns").max(ns("fast1", "end_ns"));
    assert!(ns("fast2", "start_ns") >= first_done, "{v}");
    assert!(ns("slow2", "start_ns") >= first_done, "{v}");
    assert_eq!(j["slow2"]["write"]["total_ios"], 50, "{v}");
    // exit_what=all: fast2 ended with slow2.
    assert!(
        ns("fast2", "end_ns") < ns("slow2", "end_ns") + 2_000_000_000,
        "{v}"
    );
}

// ---- ioengine=net / netsplice: fio's network engine over loopback ----

/// fio's examples/netio.fio as it ships (its fixed port aside): a listening
/// receiver and a sender with `startdelay=1`, 100g each.
const NETIO_FIO: &str = "# Example network job, just defines two clients that send/recv data
[global]
ioengine=net
#Use hostname=/tmp.fio.sock for local unix domain sockets
port=8888
#Use =udp for UDP, =unix for local unix domain socket
protocol=tcp
bs=4k
size=100g
#set the below option to enable end-to-end data integrity tests
#verify=md5
iodepth=128

[receiver]
listen
rw=read

[sender]
hostname=localhost
startdelay=1
rw=write
";

/// A port nothing holds now, for a job to listen on. It is taken below the
/// kernel's ephemeral range (`ip_local_port_range`, 32768 up by default): a
/// port handed out by bind(:0) and let go is free only until any outgoing
/// connection of a test running beside this one is given it (CI failed that
/// way). Each call moves on, so the tests of this binary never share one.
fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let (base, span) = (10_000u16, low.saturating_sub(10_000).max(1000));
    let start = (std::process::id() % u32::from(span)) as u16;
    for _ in 0..span {
        let i = NEXT.fetch_add(1, Ordering::Relaxed);
        let p = base + (start.wrapping_add(i) % span);
        let tcp = std::net::TcpListener::bind(("0.0.0.0", p)).is_ok();
        if tcp && std::net::UdpSocket::bind(("0.0.0.0", p)).is_ok() {
            return p;
        }
    }
    panic!("no free port below the ephemeral range");
}

/// The jobs of a JSON run, by name.
fn job_named<'a>(d: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    d["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no job {name} in {d}"))
}

/// fio's close message, as a sender ends its stream with it.
const FIO_CLOSE: [u8; 8] = [0x6b, 0x6e, 0x69, 0x6c, 0x89, 0, 0, 0];

#[test]
fn netio_fio_runs_its_receiver_and_sender_as_two_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("netio.fio");
    std::fs::write(&job, NETIO_FIO).unwrap();
    let port = format!("port={}", free_port());
    // What the corpus runner does to every job file.
    let o = stream(
        dir.path(),
        &[
            "--job",
            job.to_str().unwrap(),
            "--set",
            "size=8m",
            "--set",
            "runtime=1s",
            "--set",
            &port,
            "--format",
            "json",
        ],
    );
    let d = json(&o);
    let r = job_named(&d, "receiver");
    let s = job_named(&d, "sender");
    for j in [r, s] {
        assert_eq!(j["ioengine"], "net", "{j}");
        assert_eq!(j["error"], 0, "{j}");
        assert_eq!(j["iodepth"], 1, "a socket carries one block at a time: {j}");
    }
    // Every byte sent arrived, in 4 KiB I/Os, each timed.
    assert_eq!(s["write"]["io_bytes"], 8 << 20);
    assert_eq!(r["read"]["io_bytes"], 8 << 20);
    assert_eq!(r["read"]["total_ios"], 2048);
    assert_eq!(s["write"]["total_ios"], 2048);
    assert_eq!(r["write"]["total_ios"], 0);
    assert!(common::num(&r["read"]["clat_ns"], "max") > 0.0, "{r}");
    assert!(
        r["filename"].as_str().unwrap().starts_with("0.0.0.0/"),
        "{r}"
    );
    assert!(
        s["filename"].as_str().unwrap().starts_with("localhost/"),
        "{s}"
    );
    assert_eq!(s["device"]["net"]["bytes"], 8 << 20);
    let detail = r["completion_detail"].as_str().unwrap();
    assert!(detail.contains("tcp receiver"), "{detail}");
    // fio's iodepth=128 is said to do nothing, as with fio's net engine.
    assert!(
        s["warnings"]
            .to_string()
            .contains("iodepth=128 has no effect"),
        "{s}"
    );
}

#[test]
fn a_net_sender_streams_to_a_plain_listener() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let peer = std::thread::spawn(move || {
        use std::io::Read;
        let (mut c, _) = l.accept().unwrap();
        let mut all = Vec::new();
        c.read_to_end(&mut all).unwrap();
        all
    });
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("send.fio");
    std::fs::write(
        &job,
        format!(
            "[send]\nioengine=net\nhostname=127.0.0.1\nport={port}\nrw=write\nbs=16k\nsize=1m\nnodelay=1\nwindow_size=128k\nmss=1200\n"
        ),
    )
    .unwrap();
    let o = stream(
        dir.path(),
        &["--job", job.to_str().unwrap(), "--format", "json"],
    );
    let d = json(&o);
    let got = peer.join().unwrap();
    // The blocks, then fio's close message.
    assert_eq!(got.len(), (1 << 20) + 8);
    assert_eq!(got[1 << 20..], FIO_CLOSE);
    let s = &d["jobs"][0];
    assert_eq!(s["write"]["io_bytes"], 1 << 20);
    assert_eq!(s["write"]["total_ios"], 64);
    let detail = s["completion_detail"].as_str().unwrap();
    assert!(detail.contains("TCP_NODELAY on"), "{detail}");
}

#[test]
fn a_net_receiver_ends_when_its_plain_sender_closes() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let job = dir.path().join("recv.fio");
    // It expects 2 MiB; the sender stops after 1 MiB and a stray half block.
    std::fs::write(
        &job,
        format!("[recv]\nioengine=net\nlisten\nport={port}\nrw=read\nbs=64k\nsize=2m\n"),
    )
    .unwrap();
    let run = {
        let (dir, job) = (dir.path().to_path_buf(), job.clone());
        std::thread::spawn(move || {
            stream(&dir, &["--job", job.to_str().unwrap(), "--format", "json"])
        })
    };
    // The listener binds when its job starts: try until it does (the
    // run's own --timeout bounds how long it waits for us).
    let mut c = loop {
        match std::net::TcpStream::connect(("127.0.0.1", port)) {
            Ok(c) => break c,
            Err(_) if !run.is_finished() => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            Err(e) => panic!(
                "the receiver never listened ({e}): {}",
                stderr(&run.join().unwrap())
            ),
        }
    };
    use std::io::Write;
    c.write_all(&vec![7u8; (1 << 20) + (32 << 10)]).unwrap();
    drop(c);
    let d = json(&run.join().unwrap());
    let r = &d["jobs"][0];
    assert_eq!(r["error"], 0, "{r}");
    assert_eq!(r["read"]["io_bytes"], 1 << 20);
    assert_eq!(r["read"]["total_ios"], 16);
    let w = r["warnings"].to_string();
    assert!(w.contains("closed the stream after 1M"), "{w}");
    assert!(w.contains("last 32768 bytes"), "{w}");
}

#[test]
fn net_over_udp_unix_splice_and_pingpong() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("n.fio");
    let run = |text: String| {
        std::fs::write(&job, text).unwrap();
        let o = stream(
            dir.path(),
            &["--job", job.to_str().unwrap(), "--format", "json"],
        );
        json(&o)
    };
    // UDP: the receiver counts what arrived and the gaps in the sender's
    // sequence; it cannot have more than was sent, and the sender says it
    // cannot know of losses.
    let port = free_port();
    let d = run(format!(
        "[global]\nioengine=net\nprotocol=udp\nport={port}\nbs=1k\nsize=2m\n[r]\nrw=read\n[s]\nhostname=127.0.0.1\nrw=write\n"
    ));
    let (r, s) = (job_named(&d, "r"), job_named(&d, "s"));
    let sent = s["write"]["total_ios"].as_u64().unwrap();
    let got = r["read"]["total_ios"].as_u64().unwrap();
    let lost = r["device"]["net"]["lost"].as_u64().unwrap();
    assert_eq!(sent, 2048);
    assert_eq!(s["device"]["net"]["datagrams"], 2048);
    assert!(
        got >= 1 && got + lost <= sent,
        "got {got} lost {lost} of {sent}"
    );
    assert_eq!(r["device"]["net"]["datagrams"], got);
    assert!(s["warnings"].to_string().contains("no flow control"), "{s}");
    // Unix socket, every block echoed (fio's pingpong): the writer's I/O is
    // a round trip, so both ends move the same blocks; the path is removed.
    let sock = dir.path().join("fio.sock");
    let d = run(format!(
        "[global]\nioengine=net\nprotocol=unix\nhostname={}\nbs=8k\nsize=1m\npingpong=1\n[r]\nrw=read\n[s]\nrw=write\n",
        sock.display()
    ));
    let (r, s) = (job_named(&d, "r"), job_named(&d, "s"));
    assert_eq!(r["read"]["io_bytes"], 1 << 20);
    assert_eq!(s["write"]["io_bytes"], 1 << 20);
    assert!(
        s["completion_detail"]
            .as_str()
            .unwrap()
            .contains("pingpong"),
        "{s}"
    );
    assert!(!sock.exists(), "the listener's socket file is removed");
    // netsplice: TCP through a pipe with splice(2), time-based on the
    // sender; the receiver ends when the sender closes, with all it sent.
    let port = free_port();
    let d = run(format!(
        "[global]\nioengine=netsplice\nport={port}\nbs=64k\nsize=64m\n[r]\nlisten\nrw=read\n[s]\nhostname=127.0.0.1\nrw=write\ntime_based\nruntime=300ms\n"
    ));
    let (r, s) = (job_named(&d, "r"), job_named(&d, "s"));
    assert_eq!(r["ioengine"], "netsplice");
    assert!(
        r["completion_detail"]
            .as_str()
            .unwrap()
            .contains("splice(2)"),
        "{r}"
    );
    let sent = s["write"]["io_bytes"].as_u64().unwrap();
    assert!(sent > 0);
    assert_eq!(r["read"]["io_bytes"].as_u64().unwrap(), sent.min(64 << 20));
}

#[test]
fn fios_multicast_example_runs_on_loopback() {
    // examples/netio_multicast.fio, with its interface on loopback and a
    // free port: a pingpong reader, a plain reader and a pingpong writer.
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("mc.fio");
    let port = free_port();
    std::fs::write(
        &job,
        format!(
            "[global]\nioengine=net\nprotocol=udp\nbs=64\nsize=100m\ninterface=127.0.0.1\nport={port}\nhostname=239.0.0.0\nttl=1\n\n[pingpong_reader]\npingpong=1\nrw=read\n\n[normal_reader]\nrw=read\n\n[pingpong_writer]\nstartdelay=1\npingpong=1\nrw=write\n"
        ),
    )
    .unwrap();
    let o = stream(
        dir.path(),
        &[
            "--job",
            job.to_str().unwrap(),
            "--set",
            "size=256k",
            "--format",
            "json",
        ],
    );
    let d = json(&o);
    let w = job_named(&d, "pingpong_writer");
    let pr = job_named(&d, "pingpong_reader");
    let nr = job_named(&d, "normal_reader");
    // Each write waited for its echo, so the echoing reader saw every one.
    assert_eq!(w["write"]["total_ios"], 4096);
    assert_eq!(pr["read"]["total_ios"], 4096, "{pr}");
    assert!(nr["read"]["total_ios"].as_u64().unwrap() <= pr["read"]["total_ios"].as_u64().unwrap());
    assert!(
        w["completion_detail"]
            .as_str()
            .unwrap()
            .contains("multicast group 239.0.0.0"),
        "{w}"
    );
}

#[test]
fn net_jobs_that_cannot_work_say_so_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("bad.fio");
    let port = free_port();
    let usage = |text: &str, want: &str| {
        std::fs::write(&job, text).unwrap();
        let o = stream(dir.path(), &["--job", job.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{text}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(want), "{text}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    };
    usage(
        "[r]\nioengine=net\nport=9\nrw=read\nsize=1m\n",
        "did you forget listen",
    );
    usage(
        "[s]\nioengine=net\nhostname=h\nrw=write\nsize=1m\n",
        "needs port=",
    );
    usage(
        "[r]\nioengine=net\nlisten\nport=9\nrw=randread\nsize=1m\n",
        "cannot be random",
    );
    usage(
        "[r]\nioengine=net\nlisten\nport=9\nrw=read\n",
        "needs size=",
    );
    usage(
        "[r]\nioengine=net\nlisten\nport=9\nprotocol=vsock\nsize=1m\n",
        "vsock",
    );
    usage(
        "[r]\nioengine=psync\nport=9\nfilename=x\nsize=1m\n",
        "port= is an option of ioengine=net",
    );
    usage(
        "[s]\nioengine=net\nhostname=h\nport=9\nttl=3\nrw=write\nsize=1m\n",
        "drop ttl=",
    );
    // A listener nobody connects to gives up after --timeout, naming its
    // port and what to start; so does a sender nothing accepts.
    for (text, want) in [
        (
            format!("[r]\nioengine=net\nlisten\nport={port}\nrw=read\nsize=1m\n"),
            format!("nobody connected to port {port} (tcp) within 1s; start the other end"),
        ),
        (
            format!("[s]\nioengine=net\nhostname=127.0.0.1\nport={port}\nrw=write\nsize=1m\n"),
            "start the receiver first".to_string(),
        ),
        (
            format!(
                "[s]\nioengine=net\nprotocol=udp\nhostname=127.0.0.1\nport={port}\nrw=write\nsize=1m\n"
            ),
            "its port refused every datagram".to_string(),
        ),
    ] {
        std::fs::write(&job, &text).unwrap();
        let o = stream(
            dir.path(),
            &["--job", job.to_str().unwrap(), "--timeout", "1s"],
        );
        assert_eq!(o.status.code(), Some(1), "{text}: {}", stderr(&o));
        assert!(stderr(&o).contains(&want), "{text}: {}", stderr(&o));
    }
}

#[test]
fn net_jobs_follow_map_and_the_old_filename_form() {
    // fio's extension-less examples/netio: filename=host,port,proto and a
    // receiver that listens because it reads. --map sends the sender to
    // 127.0.0.1 and --set moves both to a free port.
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("netio");
    let port = free_port();
    std::fs::write(
        &job,
        "[global]\nioengine=net\nfilename=localhost,8888,tcp\nbs=4k\nsize=10g\n\n[receiver]\nrw=read\n\n[sender]\nstartdelay=1\nrw=write\n",
    )
    .unwrap();
    let o = stream(
        dir.path(),
        &[
            "--job",
            job.to_str().unwrap(),
            "--map",
            &format!("localhost,8888,tcp=127.0.0.1/{port}/tcp"),
            "--set",
            "size=1m",
            "--format",
            "json",
        ],
    );
    let d = json(&o);
    let (r, s) = (job_named(&d, "receiver"), job_named(&d, "sender"));
    assert_eq!(r["read"]["io_bytes"], 1 << 20);
    assert_eq!(s["write"]["io_bytes"], 1 << 20);
    assert_eq!(s["filename"], format!("127.0.0.1/{port}/tcp"));
    assert_eq!(s["mapped_from"], "localhost,8888,tcp");
    assert_eq!(r["filename"], format!("0.0.0.0/{port}/tcp"));
}

#[test]
fn a_job_that_cannot_start_ends_the_run_without_waiting_out_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("sd.fio");
    let f = dir.path().join("data");
    std::fs::write(
        &job,
        format!(
            "[global]\nsize=1m\nrw=read\n[a]\nfilename=no-such-dir/a.0.0\n[b]\nstartdelay=60\nfilename={}\n",
            f.display()
        ),
    )
    .unwrap();
    let t = std::time::Instant::now();
    let o = stream(dir.path(), &["--job", job.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("job a: cannot open no-such-dir/a.0.0"),
        "{}",
        stderr(&o)
    );
    // Far below job b's 60 s start delay, however loaded the machine.
    assert!(t.elapsed() < std::time::Duration::from_secs(45));
}

#[test]
fn skewed_random_distributions_run_verify_and_refuse_bad_values_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("data");
    let fd = f.display();
    // Writers with each law (blocks repeat: no random map) read back what
    // they wrote; the offsets are one function of the I/O's index.
    for dist in [
        "random_distribution=zipf:1.2",
        "random_distribution=pareto:0.3:0.5",
        "random_distribution=normal:5",
        "random_distribution=zoned_abs:60/64k:40/192k",
        "percentage_random=40",
    ] {
        let v = job_json(
            dir.path(),
            &format!("[w]\nfilename={fd}\nbs=4k\nsize=1m\nrw=randwrite\n{dist}\nverify=crc32c\n"),
        );
        let w = &v["jobs"][0];
        assert_eq!(w["error"], 0, "{dist}: {v}");
        assert_eq!(w["write"]["total_ios"], 256, "{dist}");
        assert_eq!(w["verify"]["bad"], 0, "{dist}");
    }
    // A zipf reader on a small file: one I/O per block of the region.
    let v = job_json(
        dir.path(),
        &format!(
            "[r]\nfilename={fd}\nbs=4k\nsize=1m\nrw=randread\nrandom_distribution=zipf:1.1\nrandom_generator=tausworthe64\n"
        ),
    );
    let r = &v["jobs"][0];
    assert_eq!(r["error"], 0, "{v}");
    assert_eq!(r["read"]["total_ios"], 256);
    assert_eq!(r["read"]["io_bytes"], 1 << 20);
    // Bad values: exit 2, one line naming the option, the value and the range.
    let job = dir.path().join("bad.fio");
    for (line, want) in [
        (
            "random_distribution=zipf:1",
            "random_distribution=zipf:1: the zipf theta must be above 0 and not 1",
        ),
        (
            "random_distribution=pareto:1.5",
            "random_distribution=pareto:1.5: the pareto power must be above 0 and below 1",
        ),
        (
            "random_distribution=normal:100",
            "random_distribution=normal:100: the normal deviation must be from 0 to below 100",
        ),
        (
            "random_distribution=zipf:1.2:2",
            "the center must be from 0.0 to 1.0",
        ),
        (
            "random_distribution=zoned_abs:50/64k:40/64k",
            "must add up to 100",
        ),
        (
            "percentage_random=120",
            "percentage_random=120: expected a whole number from 0 to 100",
        ),
        ("percentage_sequential=30", "percentage_random"),
        (
            "random_generator=mt19937",
            "use tausworthe, lfsr or tausworthe64",
        ),
    ] {
        std::fs::write(
            &job,
            format!("[j]\nrw=randread\nsize=64k\nfilename={fd}\n{line}\n"),
        )
        .unwrap();
        let o = xb_in(dir.path(), &["stream", "--job", job.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{line}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{line}: {}", stderr(&o));
        assert!(stderr(&o).contains("bad.fio:5"), "{line}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{line}: {}", stderr(&o));
    }
    // zoned_abs zones larger than the region: refused before any I/O.
    std::fs::write(
        &job,
        format!("[j]\nrw=randread\nsize=64k\nfilename={fd}\nrandom_distribution=zoned_abs:50/64k:50/64k\n"),
    )
    .unwrap();
    let o = xb_in(dir.path(), &["stream", "--job", job.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("zoned_abs: the zones add up to 131072 bytes"),
        "{e}"
    );
    // One error line (beside the run's own warnings, such as a VM's).
    let errors = e.lines().filter(|l| !l.contains("warning:")).count();
    assert_eq!(errors, 1, "{e}");
}

/// The 4k blocks of `f` that hold anything but zeros (written ones).
fn written_blocks(f: &Path) -> usize {
    std::fs::read(f)
        .unwrap()
        .chunks(4096)
        .filter(|b| b.iter().any(|&x| x != 0))
        .count()
}

#[test]
fn nrfiles_splits_size_over_files_named_as_fio_names_them_on_every_engine() {
    let dir = tempfile::tempdir().unwrap();
    for engine in [
        "psync", "io_uring", "sync", "vsync", "pvsync", "pvsync2", "libaio", "posixaio", "mmap",
    ] {
        let sub = dir.path().join(engine);
        std::fs::create_dir(&sub).unwrap();
        // The writer checks its blocks (read back across the files), then
        // a reader checks them in a random order.
        let extra = if engine == "io_uring" {
            "fixedbufs\nregisterfiles\n"
        } else {
            ""
        };
        let d = job_json(
            dir.path(),
            &format!(
                "[global]\nioengine={engine}\ndirectory={}\nfilename_format=w.0.$filenum\nbs=4k\nsize=96k\nnrfiles=3\niodepth=4\nverify=crc32c\n[w]\nrw=write\n{extra}[r]\nstonewall\nrw=randread\n",
                sub.display()
            ),
        );
        let jobs = d["jobs"].as_array().unwrap();
        let (w, r) = (&jobs[0], &jobs[1]);
        assert_eq!(w["error"], 0, "{engine}: {w}");
        assert_eq!(w["write"]["io_bytes"], 96 << 10, "{engine}");
        assert_eq!(w["size"], 96 << 10, "{engine}");
        assert_eq!(w["verify"]["blocks"], 24, "{engine}");
        assert_eq!(w["verify"]["bad"], 0, "{engine}");
        assert_eq!(r["read"]["io_bytes"], 96 << 10, "{engine}");
        assert_eq!(r["verify"]["blocks"], 24, "{engine}");
        assert_eq!(r["verify"]["bad"], 0, "{engine}");
        assert_eq!(w["file_service_type"], "roundrobin");
        assert_eq!(
            w["filename"],
            sub.join("w.0.0").display().to_string(),
            "{engine}"
        );
        let files = w["files"].as_array().unwrap();
        assert_eq!(files.len(), 3, "{engine}");
        for (n, f) in files.iter().enumerate() {
            let path = sub.join(format!("w.0.{n}"));
            assert_eq!(f["filename"], path.display().to_string());
            assert_eq!(f["size"], 32 << 10);
            assert_eq!(f["ios"], 8, "{engine} file {n}");
            assert_eq!(std::fs::metadata(&path).unwrap().len(), 32 << 10);
            // Every block's header names its offset in its own file.
            let data = std::fs::read(&path).unwrap();
            for (i, b) in data.chunks(4096).enumerate() {
                assert_eq!(&b[0..4], b"XBVF", "{engine} {n}");
                assert_eq!(
                    u64::from_le_bytes(b[16..24].try_into().unwrap()),
                    (i * 4096) as u64,
                    "{engine} file {n} block {i}"
                );
            }
        }
        if engine == "io_uring" {
            let detail = w["completion_detail"].as_str().unwrap();
            assert!(
                detail.contains("registered files (registerfiles)"),
                "{detail}"
            );
        }
    }
    // null: no file opened, the size split among the files all the same.
    let d = job_json(
        dir.path(),
        "[n]\nioengine=null\nnrfiles=4\nsize=64k\nrw=write\ndirectory=nowhere\n",
    );
    let j = &d["jobs"][0];
    assert_eq!(j["write"]["io_bytes"], 64 << 10);
    let files = j["files"].as_array().unwrap();
    assert_eq!(files.len(), 4);
    assert!(files.iter().all(|f| f["ios"] == 4 && f["size"] == 16 << 10));
    assert!(!dir.path().join("nowhere").exists());
}

#[test]
fn a_read_job_lays_out_each_file_and_filesize_sizes_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = job_json(dir.path(), "[r]\nrw=read\nnrfiles=2\nsize=64k\nbs=4k\n");
    let j = &d["jobs"][0];
    assert_eq!(j["read"]["io_bytes"], 64 << 10);
    assert!(
        j["prepared"]
            .as_str()
            .unwrap()
            .starts_with("each of the 2 files: created, laid out to 32768 bytes"),
        "{j}"
    );
    for n in 0..2 {
        let f = dir.path().join(format!("r.0.{n}"));
        assert_eq!(std::fs::metadata(&f).unwrap().len(), 32 << 10);
        assert!(
            j["files"][n]["prepared"]
                .as_str()
                .unwrap()
                .contains("laid out")
        );
    }
    // The zeros all the files need are checked together, before any is
    // created: three 10g files pass no bound alone but 30g do.
    let job = dir.path().join("big.fio");
    std::fs::write(&job, "[big]\nrw=read\nnrfiles=3\nsize=30g\n").unwrap();
    let o = stream(dir.path(), &["--job", job.to_str().unwrap()]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("job big: reading its 3 files (like big.0.0) means laying them out first with 30.0 GiB of zeros"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(!dir.path().join("big.0.0").exists());
    // filesize= sizes each file; size= caps the job's I/O (fio's io_size).
    let d = job_json(
        dir.path(),
        "[s]\nrw=write\nnrfiles=2\nfilesize=16k\nsize=16k\nbs=4k\n",
    );
    let j = &d["jobs"][0];
    assert_eq!(j["write"]["io_bytes"], 16 << 10);
    let files = j["files"].as_array().unwrap();
    assert!(
        files.iter().all(|f| f["size"] == 16 << 10 && f["ios"] == 2),
        "{j}"
    );
    for n in 0..2 {
        let f = dir.path().join(format!("s.0.{n}"));
        assert_eq!(std::fs::metadata(&f).unwrap().len(), 16 << 10);
    }
    // A range gives each file a size in it, a whole number of blocks.
    let d = job_json(
        dir.path(),
        "[g]\nrw=write\nnrfiles=6\nfilesize=4k-64k\nbs=4k\n",
    );
    let j = &d["jobs"][0];
    let sizes: Vec<u64> = j["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["size"].as_u64().unwrap())
        .collect();
    assert!(
        sizes
            .iter()
            .all(|s| (4096..=65536).contains(s) && s % 4096 == 0),
        "{sizes:?}"
    );
    assert_eq!(j["write"]["io_bytes"], sizes.iter().sum::<u64>());
}

#[test]
fn filename_lists_name_the_files_and_map_applies_to_each() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    std::fs::create_dir(&m).unwrap();
    let job = dir.path().join("list.fio");
    std::fs::write(
        &job,
        "[l]\nfilename=/mnt/fake/a:/mnt/fake/b\\:c\nrw=write\nsize=64k\n",
    )
    .unwrap();
    let map = format!("/mnt/fake={}", m.display());
    let d = json(&stream(
        dir.path(),
        &[
            "--job",
            job.to_str().unwrap(),
            "--map",
            &map,
            "--format",
            "json",
        ],
    ));
    let j = &d["jobs"][0];
    assert_eq!(j["write"]["io_bytes"], 64 << 10);
    assert_eq!(j["filename"], m.join("a").display().to_string());
    assert_eq!(
        j["files"][1]["filename"],
        m.join("b:c").display().to_string()
    );
    assert_eq!(j["files"][1]["mapped_from"], "/mnt/fake/b:c");
    for f in ["a", "b:c"] {
        assert_eq!(std::fs::metadata(m.join(f)).unwrap().len(), 32 << 10, "{f}");
    }
    // From the command line too; a transport keeps its colons.
    let d = json(&stream(
        dir.path(),
        &[
            "--filename",
            "x:y",
            "--rw",
            "write",
            "--size",
            "16k",
            "--format",
            "json",
        ],
    ));
    assert_eq!(d["jobs"][0]["files"].as_array().unwrap().len(), 2);
    assert!(dir.path().join("x").exists() && dir.path().join("y").exists());
}

#[test]
fn file_service_type_and_openfiles_choose_the_file_of_each_io() {
    let dir = tempfile::tempdir().unwrap();
    // 8 blocks per file, 4 I/Os: where they land says how files were chosen.
    let cases = [
        ("roundrobin", "", [2, 2]),
        ("sequential", "", [4, 0]),
        ("roundrobin:4", "", [4, 0]),
        ("roundrobin", "openfiles=1\n", [4, 0]),
    ];
    for (i, (kind, extra, want)) in cases.iter().enumerate() {
        let d = job_json(
            dir.path(),
            &format!(
                "[s{i}]\nrw=write\nnrfiles=2\nsize=64k\nbs=4k\nnumber_ios=4\nfallocate=none\nfile_service_type={kind}\n{extra}"
            ),
        );
        let j = &d["jobs"][0];
        assert_eq!(j["write"]["total_ios"], 4, "{kind}");
        let ios: Vec<u64> = j["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["ios"].as_u64().unwrap())
            .collect();
        assert_eq!(ios, want, "{kind} {extra}");
        for (n, w) in want.iter().enumerate() {
            let f = dir.path().join(format!("s{i}.0.{n}"));
            assert_eq!(written_blocks(&f), *w as usize, "{kind} {extra} file {n}");
        }
        if !extra.is_empty() {
            assert_eq!(j["file_service_type"], "roundrobin, openfiles=1");
            let w = j["warnings"].to_string();
            assert!(w.contains("openfiles=1: at most 1 of the 2 files"), "{w}");
        }
    }
    // random: a file drawn for each I/O, every block of each once a pass.
    let d = job_json(
        dir.path(),
        "[r]\nrw=randwrite\nnrfiles=3\nsize=96k\nbs=4k\nfile_service_type=random\n",
    );
    let j = &d["jobs"][0];
    assert_eq!(j["file_service_type"], "random");
    assert!(j["files"].as_array().unwrap().iter().all(|f| f["ios"] == 8));
    for n in 0..3 {
        assert_eq!(written_blocks(&dir.path().join(format!("r.0.{n}"))), 8);
    }
}

#[test]
fn bad_file_options_are_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("bad.fio");
    for (text, want) in [
        (
            "[b]\nnrfiles=2\nfile_service_type=bogus\n",
            "bad.fio:3: file_service_type=bogus: unknown file service type",
        ),
        (
            "[b]\nnrfiles=2\nfile_service_type=zipf:1.2\n",
            "file_service_type=zipf:1.2: choosing files by a zipf distribution is not supported yet",
        ),
        (
            "[b]\nfile_service_type=gauss\n",
            "choosing files by a gauss distribution",
        ),
        (
            "[b]\nfilename=a:b\nnrfiles=3\n",
            "bad.fio:1: job b: nrfiles=3 with filename= naming 2 files",
        ),
        ("[b]\nfilename=a::b\n", "an empty file name"),
        ("[b]\nopenfiles=0\n", "openfiles=0: expected a whole number"),
        ("[b]\nfilesize=8k-4k\n", "smaller than its start"),
        (
            "[b]\nioengine=cpuio\ncpuload=10\nnrfiles=2\n",
            "has no files to spread over",
        ),
        (
            "[b]\nnrfiles=2\nsize=4k\nrw=write\n",
            "less than one block (bs=4096) each",
        ),
    ] {
        std::fs::write(&job, text).unwrap();
        let o = stream(dir.path(), &["--job", job.to_str().unwrap()]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{text}: {e}");
        assert!(e.contains(want), "{text}: {e}");
        assert_eq!(e.lines().count(), 1, "{text}: {e}");
    }
}

/// Whether the file system under `dir` punches holes (fallocate
/// PUNCH_HOLE|KEEP_SIZE): the trim tests skip, saying so, where it does not.
fn punches_holes(dir: &Path) -> bool {
    use std::os::unix::io::AsRawFd;
    let p = dir.join("hole-probe");
    std::fs::write(&p, vec![1u8; 64 << 10]).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    // SAFETY: fallocate on our own descriptor.
    let r = unsafe {
        libc::fallocate(
            f.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            0,
            64 << 10,
        )
    };
    drop(f);
    std::fs::remove_file(&p).unwrap();
    if r != 0 {
        eprintln!(
            "skipped: {} cannot punch holes ({})",
            dir.display(),
            std::io::Error::last_os_error()
        );
    }
    r == 0
}

/// Bytes the file's blocks take on disk (st_blocks).
fn allocated(f: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(f).unwrap().blocks() * 512
}

/// A 1 MiB file of 0x5a bytes, written and synced (allocated).
fn data_file(f: &Path) {
    std::fs::write(f, vec![0x5au8; 1 << 20]).unwrap();
    std::fs::File::open(f).unwrap().sync_all().unwrap();
}

#[test]
fn randtrim_punches_holes_in_its_region_with_every_file_engine() {
    let dir = tempfile::tempdir().unwrap();
    if !punches_holes(dir.path()) {
        return;
    }
    let f = dir.path().join("data");
    for engine in [
        "psync", "sync", "vsync", "pvsync2", "io_uring", "libaio", "posixaio", "mmap",
    ] {
        data_file(&f);
        // The middle half of the file, in a random order.
        let v = job_json(
            dir.path(),
            &format!(
                "[t]\nfilename={}\nioengine={engine}\niodepth=4\nrw=randtrim\nbs=64k\noffset=256k\nsize=512k\n",
                f.display()
            ),
        );
        let j = &v["jobs"][0];
        assert_eq!(j["error"], 0, "{engine}: {j}");
        assert_eq!(j["rw"], "randtrim");
        assert_eq!(j["trim"]["io_bytes"], 512 << 10, "{engine}");
        assert_eq!(j["trim"]["total_ios"], 8, "{engine}");
        assert!(j["trim"]["iops"].as_f64().unwrap() > 0.0, "{engine}");
        assert!(j["trim"]["clat_ns"]["N"] == 8, "{engine}: {j}");
        assert_eq!(j["read"]["total_ios"], 0);
        assert_eq!(j["write"]["total_ios"], 0);
        let detail = j["completion_detail"].as_str().unwrap();
        assert!(
            detail.contains("fallocate PUNCH_HOLE"),
            "{engine}: {detail}"
        );
        // The group's figures have the trims too.
        assert_eq!(v["groups"][0]["trim"]["io_bytes"], 512 << 10);
        // Holes where the region was, data around it, the size kept.
        let data = std::fs::read(&f).unwrap();
        assert_eq!(data.len(), 1 << 20, "{engine}");
        assert!(
            data[256 << 10..768 << 10].iter().all(|&b| b == 0),
            "{engine}"
        );
        assert!(data[..256 << 10].iter().all(|&b| b == 0x5a), "{engine}");
        assert!(data[768 << 10..].iter().all(|&b| b == 0x5a), "{engine}");
        let on_disk = allocated(&f);
        assert!(
            on_disk <= (512 + 64) << 10,
            "{engine}: {on_disk} bytes allocated"
        );
    }
}

#[test]
fn a_trim_job_lays_out_a_new_file_and_reports_trim_lines_as_fio_does() {
    let dir = tempfile::tempdir().unwrap();
    if !punches_holes(dir.path()) {
        return;
    }
    let f = dir.path().join("new");
    let job = job_file(dir.path(), &f, "rw=trim\nnumber_ios=4");
    let o = stream(dir.path(), &["--job", job.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("rw=trim,"), "{out}");
    assert!(
        out.contains("laid out to 65536 bytes (zeros) for trimming"),
        "{out}"
    );
    assert!(out.contains("  trim: IOPS="), "{out}");
    assert!(out.contains("  TRIM: bw="), "{out}");
    assert!(
        !out.contains("  read: ") && !out.contains("  write: "),
        "{out}"
    );
    // number_ios=4 of the 16 blocks: the first 16k trimmed, the rest laid out.
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 64 << 10);
    let on_disk = allocated(&f);
    assert!(
        (32 << 10..=(48 << 10) + 8192).contains(&on_disk),
        "{on_disk}"
    );
    // CSV: one row for the trims.
    let o = stream(
        dir.path(),
        &["--job", job.to_str().unwrap(), "--format", "csv"],
    );
    let csv = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "{csv}");
    assert!(rows[0].contains(",trim,16384,"), "{csv}");
}

#[test]
fn trimwrite_trims_then_writes_each_block_and_reports_both() {
    let dir = tempfile::tempdir().unwrap();
    if !punches_holes(dir.path()) {
        return;
    }
    let f = dir.path().join("data");
    for (rw, engine) in [
        ("trimwrite", "psync"),
        ("randtrimwrite", "psync"),
        ("randtrimwrite", "io_uring"),
        ("trimwrite", "libaio"),
        ("randtrimwrite", "posixaio"),
        ("trimwrite", "vsync"),
    ] {
        data_file(&f);
        let v = job_json(
            dir.path(),
            &format!(
                "[tw]\nfilename={}\nioengine={engine}\niodepth=4\nrw={rw}\nbs=64k\nsize=1m\n",
                f.display()
            ),
        );
        let j = &v["jobs"][0];
        assert_eq!(j["error"], 0, "{rw} {engine}: {j}");
        for dir_ in ["trim", "write"] {
            assert_eq!(j[dir_]["io_bytes"], 1 << 20, "{rw} {engine} {dir_}");
            assert_eq!(j[dir_]["total_ios"], 16, "{rw} {engine} {dir_}");
        }
        assert_eq!(j["read"]["total_ios"], 0);
        // Every block written after its trim: data (fio's random buffer,
        // neither the old bytes nor a hole's zeros) everywhere, allocated.
        let data = std::fs::read(&f).unwrap();
        assert_eq!(data.len(), 1 << 20);
        for (i, b) in data.chunks(64 << 10).enumerate() {
            assert!(
                b.iter().any(|&x| x != 0),
                "{rw} {engine}: block {i} is a hole"
            );
            assert!(
                b.iter().any(|&x| x != 0x5a),
                "{rw} {engine}: block {i} unwritten"
            );
        }
        assert!(allocated(&f) >= 1 << 20, "{rw} {engine}");
    }
    // The text has both lines, writes first as fio prints them.
    data_file(&f);
    let job = job_file(dir.path(), &f, "rw=trimwrite");
    let o = stream(dir.path(), &["--job", job.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let (w, t) = (out.find("  write: IOPS="), out.find("  trim: IOPS="));
    assert!(w.is_some() && t.is_some() && w < t, "{out}");
}

#[test]
fn every_job_has_a_trim_object_in_json_and_the_null_engine_trims_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("data");
    // A reader: fio's JSON has "trim" for every job, zeros without trims;
    // merged groups (group_reporting) have it too.
    let v = job_json(
        dir.path(),
        &format!(
            "[global]\nfilename={}\nbs=4k\nsize=64k\nrw=read\n[r]\nnumjobs=2\ngroup_reporting\n",
            f.display()
        ),
    );
    let j = &v["jobs"][0];
    assert_eq!(j["trim"]["io_bytes"], 0, "{j}");
    assert_eq!(j["trim"]["total_ios"], 0);
    assert!(j["trim"]["clat_ns"].is_object());
    assert_eq!(j["read"]["total_ios"], 32);
    assert!(v["per_job"][0]["trim"].is_object(), "{v}");
    // null: no file; trims complete at once, as reads and writes do.
    let v = job_json(
        dir.path(),
        "[n]\nioengine=null\nrw=randtrimwrite\nbs=4k\nsize=64k\niodepth=8\n",
    );
    let j = &v["jobs"][0];
    assert_eq!(j["error"], 0, "{j}");
    assert_eq!(j["trim"]["total_ios"], 16);
    assert_eq!(j["write"]["total_ios"], 16);
}

#[test]
fn trims_where_there_is_nothing_to_trim_are_one_line_each() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("data");
    let f = f.display();
    for (text, want) in [
        (
            "[j]\nfilename=xfer:tcp\nrw=trim\nsize=64k\n".into(),
            "rw=trim needs a file or block device to trim, and ioengine=transport is a transport stream",
        ),
        (
            "[j]\nioengine=net\nhostname=127.0.0.1\nport=9\nrw=randtrim\nsize=64k\n".into(),
            "rw=randtrim needs a file or block device to trim",
        ),
        (
            format!("[j]\nioengine=filecreate\nfilename={f}\nrw=trimwrite\n"),
            "ioengine=filecreate is a file operation",
        ),
        (
            "[j]\nioengine=cpuio\ncpuload=10\nrw=trim\nruntime=1\n".into(),
            "ioengine=cpuio is a CPU load",
        ),
        (
            "[j]\nfilename=/dev/null\nrw=trim\nsize=64k\n".into(),
            "a character device has no trim",
        ),
        (
            format!("[j]\nfilename={f}\nrw=randtrimwrite\nsize=64k\nverify=crc32c\n"),
            "verify checks blocks a job writes or reads, and rw=randtrimwrite trims them",
        ),
        (
            format!("[j]\nfilename={f}\nrw=trim\nsize=64k\ntrim_percentage=10\n"),
            "trim-and-verify is not supported",
        ),
    ] {
        let job = dir.path().join("t.fio");
        std::fs::write(&job, &text).unwrap();
        let o = stream(dir.path(), &["--strict", "--job", job.to_str().unwrap()]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{text}: {e}");
        assert!(e.contains(want), "{text}: {e}");
        assert_eq!(e.lines().count(), 1, "{text}: {e}");
    }
}

#[test]
fn trims_follow_the_offset_generators_holes_and_strided_zones() {
    let dir = tempfile::tempdir().unwrap();
    if !punches_holes(dir.path()) {
        return;
    }
    let f = dir.path().join("data");
    // Which of the 16 blocks of 64k each job trims.
    for (lines, trimmed) in [
        ("rw=trim:64k\nnumber_ios=8", vec![0, 2, 4, 6, 8, 10, 12, 14]),
        (
            "rw=trim\nzonemode=strided\nzonerange=256k\nzonesize=64k\nnumber_ios=4",
            vec![0, 4, 8, 12],
        ),
        ("rw=trim\noffset=512k\nsize=128k", vec![8, 9]),
    ] {
        data_file(&f);
        let v = job_json(
            dir.path(),
            &format!("[t]\nfilename={}\nbs=64k\n{lines}\n", f.display()),
        );
        let j = &v["jobs"][0];
        assert_eq!(j["error"], 0, "{lines}: {j}");
        assert_eq!(j["trim"]["total_ios"], trimmed.len(), "{lines}");
        let data = std::fs::read(&f).unwrap();
        for (i, b) in data.chunks(64 << 10).enumerate() {
            let want = if trimmed.contains(&i) { 0 } else { 0x5a };
            assert!(b.iter().all(|&x| x == want), "{lines}: block {i}");
        }
    }
}

#[test]
fn mixed_block_sizes_move_exactly_the_region_and_verify_what_they_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("data");
    let fd = f.display();
    // Writers of each kind of mix, on several engines: the region moved
    // exactly once (lengths cut to end it), checked by the read-back; a
    // second job with the same mix reads and checks the same extents.
    for (engine, mix, rw) in [
        ("psync", "bssplit=4k/50:16k/30:64k/20", "randwrite"),
        ("io_uring\niodepth=8", "bsrange=4k-64k", "randwrite"),
        ("libaio\niodepth=4", "blocksize_range=8k-32k", "write"),
        ("pvsync2", "bssplit=512/10:4k/60:8k:32k", "randwrite"),
    ] {
        let read = rw.replace("write", "read");
        let v = job_json(
            dir.path(),
            &format!(
                "[global]\nfilename={fd}\nsize=1m\nioengine={engine}\n{mix}\nverify=crc32c\n[w]\nrw={rw}\n[r]\nstonewall\nrw={read}\n"
            ),
        );
        for (j, side) in [(&v["jobs"][0], "write"), (&v["jobs"][1], "read")] {
            assert_eq!(j["error"], 0, "{mix}: {j}");
            assert_eq!(j[side]["io_bytes"], 1 << 20, "{mix} {side}");
            assert!(j["verify"]["blocks"].as_u64().unwrap() > 0, "{mix}");
            assert_eq!(j["verify"]["bad"], 0, "{mix}");
            assert!(j["bs_mix"].is_string(), "{mix}: {j}");
        }
        // Mixed lengths: fewer I/Os than 4k blocks, more than the largest's.
        let ios = v["jobs"][0]["write"]["total_ios"].as_u64().unwrap();
        assert!(ios > 16 && ios < 2048, "{mix}: {ios} I/Os");
    }
    // Different read and write sizes (bs=R,W) in a mixed job.
    let v = job_json(
        dir.path(),
        &format!("[m]\nfilename={fd}\nsize=1m\nrw=randrw\nbs=4k,64k\n"),
    );
    let j = &v["jobs"][0];
    let (r, w) = (&j["read"], &j["write"]);
    assert_eq!(j["error"], 0, "{j}");
    assert_eq!(j["bs_mix"], "4k,64k");
    assert_eq!(
        r["io_bytes"].as_u64().unwrap() + w["io_bytes"].as_u64().unwrap(),
        1 << 20
    );
    assert_eq!(r["io_bytes"].as_u64().unwrap() % 4096, 0);
    // Reads are 4k each (none cut: every unit is 4k).
    assert_eq!(
        r["io_bytes"].as_u64().unwrap(),
        r["total_ios"].as_u64().unwrap() * 4096
    );
    // Combinations that take one block size: one line, exit 2.
    let job = dir.path().join("bad.fio");
    for (text, want) in [
        (
            "rw=write:8k\nbssplit=4k/50:8k/50",
            "rw=…:N (holes or backwards runs) takes one block size",
        ),
        (
            "rw=write\nnrfiles=2\nbsrange=4k-16k",
            "2 files per job take one block size",
        ),
        (
            "rw=write\nbssplit=4k/50:6k/50",
            "a multiple of the smallest (4k)",
        ),
        (
            "rw=write\nbssplit=4k/70:8k/70",
            "the percentages add up to 140",
        ),
    ] {
        std::fs::write(
            &job,
            format!(
                "[j]\nsize=64k\ndirectory={}\n{text}\n",
                dir.path().display()
            ),
        )
        .unwrap();
        let o = stream(dir.path(), &["--job", job.to_str().unwrap()]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{text}: {e}");
        assert!(e.contains(want), "{text}: {e}");
        assert_eq!(
            e.lines().filter(|l| !l.contains("warning:")).count(),
            1,
            "{text}: {e}"
        );
    }
}

#[test]
fn falloc_and_ftruncate_engines_change_allocation_not_data() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("sparse");
    // A sparse 1 MiB file: falloc's writes allocate every block of it.
    std::fs::File::create(&f).unwrap().set_len(1 << 20).unwrap();
    let before = std::fs::metadata(&f).unwrap().blocks();
    let v = job_json(
        dir.path(),
        &format!(
            "[a]\nioengine=falloc\nfilename={}\nrw=randwrite\nbs=64k\nsize=1m\n",
            f.display()
        ),
    );
    let j = &v["jobs"][0];
    if j["error"] != 0
        && j["error_text"]
            .as_str()
            .unwrap_or("")
            .contains("cannot fallocate")
    {
        return; // a file system without fallocate: nothing to measure here
    }
    assert_eq!(j["error"], 0, "{j}");
    assert_eq!(j["write"]["total_ios"], 16);
    let after = std::fs::metadata(&f).unwrap().blocks();
    assert!(
        after >= before + 2048 - 8,
        "{before} -> {after} blocks of 512"
    );
    assert!(
        std::fs::read(&f).unwrap().iter().all(|&b| b == 0),
        "no data written"
    );
    // ftruncate: each write sets the file's length to its offset; the last
    // of a sequential pass leaves it one block short of the region.
    let t = dir.path().join("trunc");
    let v = job_json(
        dir.path(),
        &format!(
            "[t]\nioengine=ftruncate\nfilename={}\nrw=write\nbs=4k\nsize=64k\n",
            t.display()
        ),
    );
    assert_eq!(v["jobs"][0]["error"], 0, "{v}");
    assert_eq!(v["jobs"][0]["write"]["total_ios"], 16);
    assert_eq!(std::fs::metadata(&t).unwrap().len(), 60 << 10);
    // Reads through ftruncate: one line, exit 2.
    let job = dir.path().join("bad.fio");
    std::fs::write(
        &job,
        format!(
            "[r]\nioengine=ftruncate\nfilename={}\nrw=read\nsize=64k\n",
            t.display()
        ),
    )
    .unwrap();
    let o = stream(dir.path(), &["--job", job.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("ioengine=ftruncate only truncates"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn fill_device_ends_at_a_full_device_without_failing() {
    let dir = tempfile::tempdir().unwrap();
    if !Path::new("/dev/full").exists() {
        return;
    }
    // /dev/full answers every write with ENOSPC: the end of a fill, not an
    // error; without fill_device the same write fails the job.
    let v = job_json(
        dir.path(),
        "[f]\nfilename=/dev/full\nrw=write\nbs=4k\nsize=64k\nfill_device=1\n",
    );
    let j = &v["jobs"][0];
    assert_eq!(j["error"], 0, "{j}");
    assert!(
        j["warnings"]
            .to_string()
            .contains("fill_device: the writes stopped at a full device"),
        "{j}"
    );
    let job = dir.path().join("nofill.fio");
    std::fs::write(&job, "[f]\nfilename=/dev/full\nrw=write\nbs=4k\nsize=64k\n").unwrap();
    let o = stream(dir.path(), &["--job", job.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("No space left on device"),
        "{}",
        stderr(&o)
    );
}

/// mmap writers map the file shared and writable, which needs it open for
/// reading too: rw=write and randwrite run, as fio's do, and write the data.
#[test]
fn mmap_writes_run_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    for rw in ["write", "randwrite"] {
        let o = stream(
            dir.path(),
            &[
                "--filename",
                "mm.dat",
                "--ioengine",
                "mmap",
                "--rw",
                rw,
                "--bs",
                "4k",
                "--size",
                "1m",
                "--verify",
                "crc32c",
                "--format",
                "json",
            ],
        );
        let d = json(&o);
        assert_eq!(d["jobs"][0]["error"], 0, "{rw}: {d}");
        assert_eq!(d["jobs"][0]["write"]["io_bytes"], 1 << 20, "{rw}");
    }
}

/// A run that cannot fit the machine is refused before any job starts:
/// memory for the jobs' histograms and buffers, threads against ulimit -u.
#[test]
fn jobs_that_cannot_fit_are_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let o = stream(
        dir.path(),
        &[
            "--filename",
            "nj.dat",
            "--rw",
            "randread",
            "--bs",
            "16m",
            "--iodepth",
            "1024",
            "--size",
            "64m",
            "--numjobs",
            "4096",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("jobs running together would hold about"), "{e}");
    assert!(!e.contains("panicked") && e.lines().count() == 1, "{e}");
    assert!(!dir.path().join("nj.dat.0.0").exists(), "nothing laid out");
    // Under a task limit the thread count is checked first.
    let mut c = std::process::Command::new("bash");
    c.args([
        "-c",
        "ulimit -u 300 && exec \"$0\" --quiet stream --filename nj.dat --rw randread --bs 4k --size 4m --numjobs 512",
        env!("CARGO_BIN_EXE_xferbench"),
    ])
    .current_dir(dir.path());
    let o = common::finish(c);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("ulimit -u"), "{}", stderr(&o));
}

/// A name under /dev that does not exist is a typo for a device: refused,
/// naming the nodes that look alike, never created as a file.
#[test]
fn a_missing_device_node_is_refused_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let o = stream(
        dir.path(),
        &[
            "--filename",
            "/dev/nulll",
            "--rw",
            "write",
            "--bs",
            "4k",
            "--size",
            "64k",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("does not create files under /dev") && e.contains("/dev/null"),
        "{e}"
    );
    assert!(!std::path::Path::new("/dev/nulll").exists());
}

/// /dev/shm is a tmpfs for files: a missing one there is made, as fio makes
/// it (a typo'd device node elsewhere under /dev is refused, above).
#[test]
fn a_missing_file_in_dev_shm_is_created() {
    if !std::path::Path::new("/dev/shm").is_dir() {
        eprintln!("skipped: no /dev/shm here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = format!("/dev/shm/xferbench-test-{}", std::process::id());
    let _ = std::fs::remove_file(&f);
    let o = stream(
        dir.path(),
        &[
            "--filename",
            &f,
            "--rw",
            "write",
            "--bs",
            "4k",
            "--size",
            "64k",
        ],
    );
    let made = std::fs::metadata(&f).map(|m| m.len());
    let _ = std::fs::remove_file(&f);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(made.ok(), Some(64 << 10));
}
