//! End-to-end tests of `xferbench fio`: fio's own command line. The seed's
//! workflow (a 4-channel job file turned into one command line with
//! `--showcmd`, edited, run), fio's precedence between the command line
//! and a job file, a published fio line, stdin, the binary named `fio`,
//! fio's output formats and exit codes. Times are never asserted.

mod common;

use common::stderr;
use serde_json::Value;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `xferbench fio ARGS…` run in `dir`.
fn fio(dir: &Path, args: &[&str]) -> Output {
    let mut c = common::xferbench();
    c.arg("fio").args(args).current_dir(dir);
    common::finish(c)
}

/// `xferbench fio ARGS…` with `input` on its standard input.
fn fio_stdin(dir: &Path, args: &[&str], input: &str) -> Output {
    let mut c = common::xferbench();
    c.arg("fio")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn xferbench");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(240) {
            let _ = child.kill();
            panic!("xferbench fio with stdin hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    child.stderr.take().unwrap().read_to_end(&mut err).unwrap();
    Output {
        status,
        stdout: out,
        stderr: err,
    }
}

fn ok_json(o: &Output) -> Value {
    assert!(o.status.success(), "failed: {}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("stdout is one JSON document")
}

/// Each job's (name, bs, total writes, bytes written).
fn writes(doc: &Value) -> Vec<(String, u64, u64, u64)> {
    doc["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap().to_string(),
                j["bs"].as_u64().unwrap(),
                j["write"]["total_ios"].as_u64().unwrap(),
                j["write"]["io_bytes"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The seed's shape: four channels of one card written at 1 MiB, each job
/// its own file (the seed's /dev/xdma0_h2c_N), offset and size.
fn four_channels(dir: &Path) -> std::path::PathBuf {
    let mut s = String::from(
        "[global]\nioengine=psync\nbs=1m\nfilesize=4m\nallow_file_create=0\nrw=write\n\n",
    );
    for n in 0..4 {
        let f = dir.join(format!("h2c_{n}"));
        std::fs::write(&f, vec![0u8; 4 << 20]).unwrap();
        s.push_str(&format!(
            "[ch{n}]\nfilename={}\noffset={}m\nsize=2m\n\n",
            f.display(),
            n % 2 * 2
        ));
    }
    let job = dir.join("xdma.fio");
    std::fs::write(&job, s).unwrap();
    job
}

#[test]
fn showcmd_line_edited_runs_the_four_jobs_at_the_new_block_size() {
    let dir = tempfile::tempdir().unwrap();
    let job = four_channels(dir.path());
    let o = fio(dir.path(), &["--showcmd", job.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.starts_with("fio --ioengine=psync --bs=1m --filesize=4m --allow_file_create=0 --rw=write --name=ch0 --offset=0m --size=2m --filename="),
        "{text}"
    );
    // The line, with --bs=256k for --bs=1m, is a command line that runs.
    let edited = text.trim_end().replace("--bs=1m", "--bs=256k");
    let mut words: Vec<&str> = edited.split(' ').collect();
    assert_eq!(words.remove(0), "fio");
    words.push("--output-format=json");
    let d = ok_json(&fio(dir.path(), &words));
    let w = writes(&d);
    assert_eq!(w.len(), 4, "{w:?}");
    for (n, (name, bs, ios, bytes)) in w.iter().enumerate() {
        assert_eq!(
            (name.as_str(), *bs, *ios, *bytes),
            (format!("ch{n}").as_str(), 256 << 10, 8, 2 << 20)
        );
    }
}

#[test]
fn command_line_options_are_defaults_a_job_file_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    std::fs::write(&t, vec![0u8; 4 << 20]).unwrap();
    let file = |name: &str, bs: &str| {
        let p = dir.path().join(name);
        std::fs::write(
            &p,
            format!(
                "[global]\nioengine=psync\n{bs}filesize=4m\nallow_file_create=0\nrw=write\n[a]\nfilename={}\nsize=1m\n",
                t.display()
            ),
        )
        .unwrap();
        p.display().to_string()
    };
    let no_bs = file("no_bs.fio", "");
    let bs_1m = file("bs_1m.fio", "bs=1m\n");
    let run = |f: &str| {
        writes(&ok_json(&fio(
            dir.path(),
            &["--blocksize=128k", f, "--output-format=json"],
        )))
    };
    assert_eq!(run(&no_bs), [("a".to_string(), 128 << 10, 8, 1 << 20)]);
    assert_eq!(run(&bs_1m), [("a".to_string(), 1 << 20, 1, 1 << 20)]);
}

/// A benchmark driver's way: `fio --version`, then a command line of
/// fio's options with JSON out.
#[test]
fn published_command_line_runs() {
    let dir = tempfile::tempdir().unwrap();
    let v = fio(dir.path(), &["--version"]);
    assert!(v.status.success());
    let version = String::from_utf8(v.stdout).unwrap();
    assert!(version.starts_with("fio-3"), "{version}");
    assert!(version.contains("xferbench"), "{version}");
    let f = dir.path().join("rr");
    std::fs::write(&f, vec![0u8; 1 << 20]).unwrap();
    let filename = format!("--filename={}", f.display());
    let line = [
        "--name=rr",
        "--rw=randread",
        "--bs=4k",
        "--ioengine=libaio",
        "--iodepth=4",
        "--direct=0",
        "--size=1m",
        "--runtime=1",
        "--time_based",
        "--group_reporting",
        &filename,
        "--output-format=json",
    ];
    let d = ok_json(&fio(dir.path(), &line));
    let jobs = d["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "{d}");
    let j = &jobs[0];
    assert_eq!(j["jobname"], "rr");
    assert_eq!(j["error"], 0);
    assert_eq!(j["ioengine"], "libaio");
    assert_eq!(j["iodepth"], 4);
    assert!(j["read"]["total_ios"].as_u64().unwrap() > 0, "{j}");
    assert_eq!(j["write"]["total_ios"], 0);
    // The jobs named on the command line are fio's, in fio's JSON.
    assert_eq!(j["job options"]["name"], "rr");
    assert_eq!(j["job options"]["rw"], "randread");
}

#[test]
fn output_formats_are_written_in_fios_order() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t");
    std::fs::write(&f, vec![0u8; 256 << 10]).unwrap();
    let filename = format!("--filename={}", f.display());
    let o = fio(
        dir.path(),
        &["--name=x", &filename, "--output-format=json,normal"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    // json first, then the normal output, as fio writes them.
    assert!(text.starts_with('{'), "{text}");
    let end = text.find("\n}\n").expect("the JSON document ends") + 3;
    let doc: Value = serde_json::from_str(&text[..end]).unwrap();
    assert_eq!(doc["jobs"][0]["jobname"], "x");
    assert!(text[end..].contains("Run status group 0"), "{text}");
    // terse, then json+, each once; --minimal is terse alone.
    let o = fio(
        dir.path(),
        &["--name=x", &filename, "--output-format=json+,terse"],
    );
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.starts_with("3;"), "{text}");
    let (terse, json) = text.split_once('\n').unwrap();
    assert_eq!(terse.split(';').nth(2), Some("x"), "{terse}");
    let doc: Value = serde_json::from_str(json).unwrap();
    assert!(
        doc["jobs"][0]["read"]["clat_ns"]["bins"].is_object(),
        "{doc}"
    );
    let o = fio(dir.path(), &["--name=x", &filename, "--minimal"]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("3;"), "{text}");
    // --output writes it all to the file, nothing to stdout.
    let out = dir.path().join("out.json");
    let o = fio(
        dir.path(),
        &[
            "--name=x",
            &filename,
            "--output-format=json",
            &format!("--output={}", out.display()),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(doc["jobs"][0]["jobname"], "x");
}

#[test]
fn dash_reads_the_job_file_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t");
    std::fs::write(&f, vec![0u8; 1 << 20]).unwrap();
    let job = format!(
        "[global]\nrw=write\nallow_file_create=0\n[s]\nfilename={}\nsize=512k\n",
        f.display()
    );
    let o = fio_stdin(dir.path(), &["--bs=64k", "-", "--output-format=json"], &job);
    assert_eq!(
        writes(&ok_json(&o)),
        [("s".to_string(), 64 << 10, 8, 512 << 10)]
    );
    // --showcmd reads it too.
    let o = fio_stdin(dir.path(), &["--showcmd", "-"], &job);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.starts_with("fio --rw=write --allow_file_create=0 --name=s --size=512k --filename="),
        "{text}"
    );
}

#[test]
fn the_binary_named_fio_is_fio() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("fio");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_xferbench"), &link).unwrap();
    let run = |args: &[&str]| {
        let mut c = Command::new(&link);
        c.args(args).current_dir(dir.path());
        common::finish(c)
    };
    let v = run(&["--version"]);
    assert!(String::from_utf8(v.stdout).unwrap().starts_with("fio-3"));
    let f = dir.path().join("t");
    std::fs::write(&f, vec![0u8; 64 << 10]).unwrap();
    let o = run(&[
        "--name=one",
        &format!("--filename={}", f.display()),
        "--size=64k",
        "--output-format=json",
    ]);
    let d = ok_json(&o);
    assert_eq!(d["jobs"][0]["read"]["io_bytes"], 64 << 10);
    let help = String::from_utf8(run(&["--help"]).stdout).unwrap();
    assert!(
        help.contains("\nfio [options] [job options] <job file(s)>\n"),
        "{help}"
    );
}

#[test]
fn refusals_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let one_line = |o: &Output| {
        assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
        let e = stderr(o);
        assert_eq!(e.lines().count(), 1, "{e}");
        e
    };
    let e = one_line(&fio(dir.path(), &["--name=x", "--bogus=1"]));
    assert!(
        e.starts_with("xferbench: error: unrecognized option '--bogus=1'"),
        "{e}"
    );
    let e = one_line(&fio(dir.path(), &["--client=host", "job.fio"]));
    assert!(e.contains("client/server mode is not supported"), "{e}");
    let e = one_line(&fio(dir.path(), &[]));
    assert!(e.contains("no job defined"), "{e}");
    let f = dir.path().join("t");
    std::fs::write(&f, vec![0u8; 64 << 10]).unwrap();
    let filename = format!("--filename={}", f.display());
    let e = one_line(&fio(
        dir.path(),
        &["--readonly", "--name=w", "--rw=write", &filename],
    ));
    assert!(e.contains("--readonly refuses writes"), "{e}");
    // A read job may not grow its file under --readonly either.
    let e = one_line(&fio(
        dir.path(),
        &["--readonly", "--name=r", "--size=1m", &filename],
    ));
    assert!(e.contains("--readonly refuses to grow files"), "{e}");
    // A warning made fatal.
    let e = one_line(&fio(
        dir.path(),
        &[
            "--warnings-fatal",
            "--name=r",
            "--size=64k",
            "--gtod_reduce=1",
            &filename,
        ],
    ));
    assert!(e.contains("--warnings-fatal makes warnings errors"), "{e}");
    // --parse-only reads and checks, runs nothing, writes nothing.
    let o = fio(
        dir.path(),
        &["--parse-only", "--name=r", "--size=64k", &filename],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
}

#[test]
fn xferbench_options_ride_along() {
    let dir = tempfile::tempdir().unwrap();
    let card = dir.path().join("card");
    std::fs::write(&card, vec![0u8; 1 << 20]).unwrap();
    let map = format!("--map=/dev/xdma0_c2h_0={}", card.display());
    let d = ok_json(&fio(
        dir.path(),
        &[
            "--name=c2h",
            "--filename=/dev/xdma0_c2h_0",
            "--size=256k",
            "--bs=64k",
            &map,
            "--repeat=2",
            "--format=json",
        ],
    ));
    let j = &d["jobs"][0];
    assert_eq!(j["mapped_from"], "/dev/xdma0_c2h_0");
    assert_eq!(
        j["read"]["repeats"].as_array().map(Vec::len),
        Some(2),
        "{j}"
    );
    assert_eq!(j["read"]["io_bytes"], 2 * (256 << 10));
}

#[test]
fn status_interval_writes_the_run_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t");
    std::fs::write(&f, vec![0u8; 1 << 20]).unwrap();
    let o = fio(
        dir.path(),
        &[
            "--name=s",
            &format!("--filename={}", f.display()),
            "--size=1m",
            "--rate=1m",
            "--runtime=2",
            "--time_based",
            "--status-interval=500ms",
            "--output-format=json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let docs: Vec<Value> = serde_json::Deserializer::from_str(&text)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap();
    // At least one status while the job ran, then the final document.
    assert!(docs.len() >= 2, "{} documents", docs.len());
    let last = docs.last().unwrap();
    let mut timed = 0;
    for d in &docs[..docs.len() - 1] {
        let j = &d["jobs"][0];
        assert_eq!(j["jobname"], "s");
        let r = &j["read"];
        assert!(
            r["io_bytes"].as_u64().unwrap()
                <= last["jobs"][0]["read"]["io_bytes"].as_u64().unwrap()
        );
        // A running job's latencies so far, as fio's status has them (the
        // worker's snapshot; a job caught inside a rate wait may give its
        // bytes alone).
        if r["clat_ns"]["N"].as_u64().unwrap_or(0) > 0 {
            assert_eq!(r["clat_ns"]["N"], r["total_ios"], "{r}");
            assert!(r["clat_ns"]["percentile"]["50.000000"].as_u64().unwrap() > 0);
            timed += 1;
        }
    }
    assert!(timed > 0, "no status carried latencies: {text}");
    assert_eq!(last["jobs"][0]["error"], 0);
}

/// Tools that drive fio (fio-plot's bench-fio) take any stderr as a
/// failed run: a run that succeeds writes nothing there, whatever the
/// machine (a virtual machine's caveat stays in the JSON's warnings), and
/// no ETA where fio would print none.
#[test]
fn a_run_that_succeeds_is_silent_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let o = fio(
        dir.path(),
        &[
            "--name=quiet",
            "--filename=data",
            "--size=256k",
            "--bs=4k",
            "--rw=randwrite",
            "--output-format=json",
            "--output=out.json",
        ],
    );
    assert!(o.status.success(), "failed: {}", stderr(&o));
    assert_eq!(stderr(&o), "", "stderr of a run that succeeded");
    let text = std::fs::read_to_string(dir.path().join("out.json")).unwrap();
    let d: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(d["jobs"][0]["write"]["io_bytes"], 256 << 10);
    // Azure's published line asks for --eta-newline=1: fio prints no ETA
    // where its output is piped (only --eta=always does).
    let line = [
        "--name=iops-test-job",
        "--filename=data",
        "--size=256k",
        "--rw=randrw",
        "--time_based",
        "--runtime=300ms",
        "--eta-newline=100ms",
    ];
    let o = fio(dir.path(), &line);
    assert!(o.status.success(), "failed: {}", stderr(&o));
    assert_eq!(stderr(&o), "", "an ETA line where stdout is piped");
    assert!(String::from_utf8_lossy(&o.stdout).contains("Run status group 0"));
    let o = fio(dir.path(), &[&line[..], &["--eta=always"]].concat());
    assert!(
        stderr(&o).contains("Jobs: "),
        "--eta=always: {}",
        stderr(&o)
    );
}

/// Lines in a log file.
fn log_lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .count()
}

/// The JSON's bandwidth and IOPS samples are the logs' when a job writes
/// those logs, as fio 3.33 sets them (init.c): a line per I/O makes every
/// I/O a sample; `log_avg_msec` makes the log's lines the samples, the
/// window the job ends in written in neither.
#[test]
fn rate_samples_follow_the_logs_windows() {
    let dir = tempfile::tempdir().unwrap();
    let read = |args: &[&str]| {
        let mut all = vec![
            "--name=s",
            "--filename=data",
            "--size=1m",
            "--bs=4k",
            "--rw=randread",
            "--output-format=json",
        ];
        all.extend_from_slice(args);
        ok_json(&fio(dir.path(), &all))["jobs"][0]["read"].clone()
    };
    let r = read(&["--write_bw_log=pu", "--write_iops_log=pu"]);
    let ios = r["total_ios"].as_u64().unwrap();
    assert_eq!(ios, 256);
    assert_eq!(
        (r["bw_samples"].as_u64(), r["iops_samples"].as_u64()),
        (Some(ios), Some(ios))
    );
    assert_eq!(
        (r["iops_min"].as_u64(), r["iops_max"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(log_lines(&dir.path().join("pu_bw.1.log")), ios as usize);
    let r = read(&[
        "--time_based",
        "--runtime=1s",
        "--write_bw_log=av",
        "--write_iops_log=av",
        "--log_avg_msec=200",
    ]);
    let samples = r["bw_samples"].as_u64().unwrap() as usize;
    assert!((1..=5).contains(&samples), "{r}");
    assert_eq!(log_lines(&dir.path().join("av_bw.1.log")), samples);
    assert_eq!(r["iops_samples"].as_u64().unwrap() as usize, samples);
    assert_eq!(log_lines(&dir.path().join("av_iops.1.log")), samples);
}

/// The command line cdmpy (a CrystalDiskMark look-alike) gives fio: its
/// job file's numbers are Python floats (`rwmixread=70.0`), read as fio's
/// strtoll reads them, and `--max-jobs` beside a group of two.
#[test]
fn a_python_float_is_a_whole_number_as_in_fio() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("cdm.jobfile");
    std::fs::write(
        &job,
        "[global]\nioengine=posixaio\nfilename=.fio_testmark\nsize=262144.0\ndirect=0\n\
         refill_buffers\nnorandommap\nrandrepeat=0\nallrandrepeat=0\ngroup_reporting\n\
         [rnd-rw-4k-q4-t2]\nrw=randrw\nbs=4k\nrwmixread=70.0\niodepth=4\nnumjobs=2\nloops=1\nstonewall\n",
    )
    .unwrap();
    let job = job.display().to_string();
    let o = fio(
        dir.path(),
        &[
            "--ioengine",
            "posixaio",
            "--max-jobs=1",
            "--output-format",
            "json",
            &job,
        ],
    );
    let d = ok_json(&o);
    let jobs = d["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "group_reporting merges the two: {d}");
    let j = &jobs[0];
    assert_eq!(j["jobname"], "rnd-rw-4k-q4-t2");
    let moved = j["read"]["io_bytes"].as_u64().unwrap() + j["write"]["io_bytes"].as_u64().unwrap();
    assert_eq!(moved, 2 * (256 << 10));
    assert!(
        j["read"]["io_bytes"].as_u64() > j["write"]["io_bytes"].as_u64(),
        "{j}"
    );
    let bad = fio(dir.path(), &["--name=x", "--rwmixread=70.x", "--size=4k"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
}

/// disk-bench's command line (seven jobs, `--stonewall` before the first
/// `--name`, `--gtod_reduce=1`), which asserts that fio wrote nothing on
/// stderr: an option accepted as a note stays in the JSON's warnings.
#[test]
fn disk_bench_line_runs_its_seven_jobs_silently() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let mut args = vec![
        "--directory",
        &d,
        "--filename=disk~bench.tmp",
        "--output-format=json",
        "--stonewall",
        "--ioengine=libaio",
        "--direct=0",
        "--gtod_reduce=1",
    ];
    let jobs: [&[&str]; 7] = [
        &["--name=seqread", "--bs=1m", "--rw=read"],
        &["--name=seqwrite", "--bs=1m", "--rw=write"],
        &["--name=randread", "--bs=512k", "--rw=randread"],
        &["--name=randwrite", "--bs=512k", "--rw=randwrite"],
        &[
            "--name=4kQD32read",
            "--bs=4k",
            "--iodepth=32",
            "--rw=randread",
        ],
        &[
            "--name=4kQD32write",
            "--bs=4k",
            "--iodepth=32",
            "--rw=randwrite",
        ],
        &[
            "--name=4kQD16",
            "--bs=4k",
            "--iodepth=32",
            "--rw=randrw",
            "--rwmixread=65",
        ],
    ];
    for j in jobs {
        args.extend_from_slice(j);
        args.push("--size=1m");
    }
    let o = fio(dir.path(), &args);
    assert_eq!(stderr(&o), "", "disk-bench fails on any stderr");
    let doc = ok_json(&o);
    let jobs = doc["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 7);
    for (k, j) in jobs.iter().enumerate() {
        let moved =
            j["read"]["io_bytes"].as_u64().unwrap() + j["write"]["io_bytes"].as_u64().unwrap();
        assert_eq!(moved, 1 << 20, "{}", j["jobname"]);
        assert_eq!(
            j["groupid"].as_u64(),
            Some(k as u64),
            "stonewall: a group each"
        );
    }
    let notes = doc["warnings"].to_string();
    assert!(notes.contains("gtod_reduce"), "{notes}");
}
