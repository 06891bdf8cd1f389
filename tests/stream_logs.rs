//! End-to-end tests of fio's log files from `xferbench stream`
//! (`write_lat_log`, `write_bw_log`, `write_iops_log`, `write_hist_log`):
//! fio's names, one line per I/O with fio's columns, one averaged line per
//! window, slat + clat = lat on an asynchronous engine, whole lines in a
//! file the jobs share (`per_job_logs=0`), logs kept by a Ctrl-C, an
//! unwritable name refused up front; and fio's own tools reading them
//! (fio2gnuplot, fiologparser_hist.py, from Debian's fio package; each
//! check says why it is skipped where the tool is missing). Then the files
//! a job file names and how its values read, beside fio 3.33 where it is
//! installed: `filename_format=` with `nrfiles=`, `size=100%%`, unset
//! `${VAR}`s. Times are never asserted.

mod common;

use common::{json, stderr};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `xferbench --quiet stream --format json JOB` run in `dir`.
fn stream(dir: &Path, job: &str) -> Output {
    std::fs::write(dir.join("t.fio"), job).unwrap();
    let mut c = common::xferbench();
    c.args(["--quiet", "stream", "--format", "json", "t.fio"])
        .current_dir(dir);
    common::finish(c)
}

/// A log file's lines, each split into its numeric columns.
fn lines(path: &Path) -> Vec<Vec<u64>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| {
            l.split(", ")
                .map(|f| match f.strip_prefix("0x") {
                    Some(hex) => u64::from_str_radix(hex, 16),
                    None => f.parse(),
                })
                .collect::<Result<Vec<u64>, _>>()
                .unwrap_or_else(|e| panic!("{}: line {l:?}: {e}", path.display()))
        })
        .collect()
}

/// Job `i`'s I/Os in direction `dir` (read, write) from the JSON.
fn ios(d: &Value, i: usize, dir: &str) -> u64 {
    d["jobs"][i][dir]["total_ios"].as_u64().expect("total_ios")
}

#[test]
fn per_io_logs_have_fios_names_and_columns() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let d = json(&stream(
        dir.path(),
        "[j]\nfilename=data\nsize=256k\nbs=4k\nrw=randrw\nioengine=psync\nnumjobs=2\n\
         write_lat_log=lat\nwrite_bw_log\nwrite_iops_log=sub/io\nlog_offset=1\n\
         prioclass=2\nprio=3\nlog_prio=1\n",
    ));
    for (i, n) in [(0, 1), (1, 2)] {
        let (r, w) = (ios(&d, i, "read"), ios(&d, i, "write"));
        assert_eq!(r + w, 64, "job {n}");
        let at = |name: &str| dir.path().join(name.replace('N', &n.to_string()));
        // A synchronous engine has no submission latency: fio leaves its
        // slat log empty too.
        assert_eq!(lines(&at("lat_slat.N.log")).len(), 0);
        for name in [
            "lat_lat.N.log",
            "lat_clat.N.log",
            "j_bw.N.log",
            "sub/io_iops.N.log",
        ] {
            let l = lines(&at(name));
            assert_eq!(l.len() as u64, r + w, "{name}: one line per I/O");
            let reads = l.iter().filter(|c| c[2] == 0).count() as u64;
            assert_eq!(reads, r, "{name}: direction 0 for reads");
            let mut last = 0;
            for c in &l {
                // time, value, direction, block size, offset, priority.
                assert_eq!(c.len(), 6, "{name}: {c:?}");
                assert!(c[0] >= last, "{name}: times in order");
                last = c[0];
                assert!(c[2] <= 1 && c[3] == 4096, "{name}: {c:?}");
                assert!(c[4] < 256 << 10 && c[4] % 4096 == 0, "{name}: offset {c:?}");
                assert_eq!(c[5], 2 << 13 | 3, "{name}: log_prio's class << 13 | level");
                if name.contains("iops") {
                    assert_eq!(c[1], 1);
                } else {
                    assert!(c[1] > 0, "{name}: {c:?}");
                }
            }
        }
        // Every offset of the job's region, each read or written once.
        let mut offs: Vec<u64> = lines(&at("lat_lat.N.log")).iter().map(|c| c[4]).collect();
        offs.sort();
        offs.dedup();
        assert_eq!(offs.len(), 64);
    }
}

#[test]
fn async_submission_latency_splits_the_total() {
    let dir = tempfile::tempdir().unwrap();
    let d = json(&stream(
        dir.path(),
        "[a]\nfilename=data\nsize=512k\nbs=4k\nrw=randwrite\nioengine=posixaio\niodepth=8\n\
         write_lat_log\nper_job_logs=0\n",
    ));
    let n = ios(&d, 0, "write") as usize;
    let (lat, clat, slat) = (
        lines(&dir.path().join("a_lat.log")),
        lines(&dir.path().join("a_clat.log")),
        lines(&dir.path().join("a_slat.log")),
    );
    assert_eq!((lat.len(), clat.len(), slat.len()), (n, n, n));
    for ((l, c), s) in lat.iter().zip(&clat).zip(&slat) {
        // Without log_offset: time, value, direction, block size, priority.
        assert_eq!(l.len(), 5);
        assert_eq!(l[1], c[1] + s[1], "lat = slat + clat: {l:?} {c:?} {s:?}");
        assert_eq!((l[2], l[3], l[4]), (1, 4096, 0));
    }
}

#[test]
fn averaged_logs_give_one_line_per_window_and_fio2gnuplot_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = json(&stream(
        dir.path(),
        "[w]\nfilename=data\nsize=1m\nbs=4k\nrw=randrw\nioengine=psync\ntime_based\nruntime=700ms\n\
         write_lat_log=w\nwrite_bw_log=w\nwrite_iops_log=w\nlog_avg_msec=100\n",
    ));
    let total = ios(&d, 0, "read") + ios(&d, 0, "write");
    for name in ["w_lat.1.log", "w_clat.1.log", "w_bw.1.log", "w_iops.1.log"] {
        let l = lines(&dir.path().join(name));
        assert!(
            !l.is_empty() && (l.len() as u64) < total,
            "{name}: {}",
            l.len()
        );
        for dir_ in 0..2 {
            let times: Vec<u64> = l.iter().filter(|c| c[2] == dir_).map(|c| c[0]).collect();
            assert!(!times.is_empty(), "{name}: direction {dir_}");
            // Each line closes another 100 ms window; the last, the
            // window the job ended in.
            let windows: Vec<u64> = times[..times.len() - 1].iter().map(|t| t / 100).collect();
            assert!(windows.windows(2).all(|w| w[0] < w[1]), "{name}: {times:?}");
            assert!(times.windows(2).all(|w| w[0] <= w[1]), "{name}: {times:?}");
        }
        for c in &l {
            // An averaged line has no block size, offset or priority.
            assert_eq!((c.len(), c[3], c[4]), (5, 0, 0), "{name}: {c:?}");
            assert!(c[1] > 0, "{name}: {c:?}");
        }
    }
    // The windows' IOPS add up to the job's I/Os (each window's rate times
    // its length), loosely: the windows' lengths are the lines' gaps, and
    // the window the job ends in (a seventh of it) has no line, as fio's.
    let iops = lines(&dir.path().join("w_iops.1.log"));
    let mut counted = 0.0;
    for dir_ in 0..2 {
        let mut last = 0;
        for c in iops.iter().filter(|c| c[2] == dir_) {
            counted += c[1] as f64 * (c[0] - last).max(1) as f64 / 1000.0;
            last = c[0];
        }
    }
    let ratio = counted / total as f64;
    assert!((0.7..1.1).contains(&ratio), "{counted} vs {total}");
    fio2gnuplot(dir.path(), [("-b", "w_bw.1.log"), ("-i", "w_iops.1.log")]);
}

/// fio2gnuplot's -b and -i modes turn the bandwidth and IOPS logs into
/// gnuplot data without error (no -g: gnuplot itself is not needed).
fn fio2gnuplot(dir: &Path, logs: [(&str, &str); 2]) {
    let Some(f2g) = installed("fio2gnuplot") else {
        println!("skipped: fio2gnuplot is not installed (Debian's fio package has it)");
        return;
    };
    for (flag, log) in logs {
        let work = tempfile::tempdir().unwrap();
        std::fs::copy(dir.join(log), work.path().join(log)).unwrap();
        let o = tool(&f2g, &[flag], work.path());
        let out = String::from_utf8_lossy(&o.stdout).into_owned() + &stderr(&o);
        assert!(o.status.success(), "fio2gnuplot {flag}: {out}");
        assert!(!out.contains("Traceback"), "fio2gnuplot {flag}: {out}");
        let avg = std::fs::read_to_string(work.path().join("result.average")).unwrap();
        let value: f64 = avg
            .lines()
            .last()
            .and_then(|l| l.split_whitespace().last())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("fio2gnuplot {flag}: result.average: {avg}"));
        assert!(value > 0.0, "fio2gnuplot {flag}: {avg}");
    }
}

#[test]
fn hist_log_holds_every_io_and_fiologparser_hist_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = json(&stream(
        dir.path(),
        "[global]\nfilename=data\nsize=1m\nbs=4k\nrw=randrw\nioengine=psync\ntime_based\nruntime=500ms\n\
         log_hist_msec=50\n[h]\nwrite_hist_log=h\n[c]\nwrite_hist_log=c\nlog_hist_coarseness=3\n",
    ));
    for (i, name, columns) in [
        (0, "h_clat_hist.1.log", 1856),
        (1, "c_clat_hist.2.log", 232),
    ] {
        let l = lines(&dir.path().join(name));
        assert!(!l.is_empty(), "{name}");
        for c in &l {
            // time, direction, block size, then fio's buckets.
            assert_eq!(c.len(), 3 + columns, "{name}");
            assert!(c[1] <= 1 && c[2] == 4096, "{name}: {:?}", &c[..3]);
        }
        for (k, dir_) in ["read", "write"].into_iter().enumerate() {
            let counted: u64 = l
                .iter()
                .filter(|c| c[1] == k as u64)
                .map(|c| c[3..].iter().sum::<u64>())
                .sum();
            assert_eq!(
                counted,
                ios(&d, i, dir_),
                "{name}: every {dir_} in a bucket"
            );
        }
    }
    fiologparser_hist(dir.path(), &d);
}

/// fiologparser_hist.py (gzipped in Debian's fio docs) reads the histogram
/// log; its per-direction median and p90 agree with the job's own clat
/// percentiles within fio's bucket widths (loosely: 10%).
fn fiologparser_hist(dir: &Path, d: &Value) {
    let gz = Path::new("/usr/share/doc/fio/fiologparser_hist.py.gz");
    if !gz.exists() {
        println!(
            "skipped: {} is missing (Debian's fio package has it)",
            gz.display()
        );
        return;
    }
    let Some(python) = python_with_pandas() else {
        println!(
            "skipped: no python3 with numpy and pandas (Debian: python3-numpy python3-pandas)"
        );
        return;
    };
    let script = dir.join("fiologparser_hist.py");
    let o = tool(Path::new("gzip"), &["-dc", &gz.display().to_string()], dir);
    assert!(o.status.success(), "gzip -dc {}", gz.display());
    std::fs::write(&script, &o.stdout).unwrap();
    let script = script.display().to_string();
    let args = [
        script.as_str(),
        "-i",
        "100000",
        "--noweight",
        "--percentiles",
        "50:90",
        "--directions=rw",
        "h_clat_hist.1.log",
    ];
    let o = tool(&python, &args, dir);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "fiologparser_hist.py: {out}{}",
        stderr(&o)
    );
    // end-time, dir, samples, min, avg, median, 50%, 90%, max
    for row in out.lines().skip(1) {
        let f: Vec<&str> = row.split(", ").collect();
        assert_eq!(f.len(), 9, "{out}");
        let dir_ = if f[1] == "r" { "read" } else { "write" };
        assert_eq!(f[2].parse::<u64>().unwrap(), ios(d, 0, dir_), "{out}");
        let pct = &d["jobs"][0][dir_]["clat_ns"]["percentile"];
        for (col, key) in [(6, "50.000000"), (7, "90.000000")] {
            let theirs: f64 = f[col].parse().unwrap();
            let ours = pct[key].as_f64().expect("percentile");
            let ratio = theirs / ours;
            assert!(
                (0.9..1.1).contains(&ratio),
                "{dir_} p{key}: {theirs} vs {ours}\n{out}"
            );
        }
    }
    assert_eq!(out.lines().count(), 3, "{out}");
}

#[test]
fn an_unwritable_log_name_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let o = stream(
        dir.path(),
        "[j]\nfilename=data\nsize=64k\nrw=write\nwrite_bw_log=nodir/x\n",
    );
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("write_bw_log") && e.contains("nodir/x_bw.1.log"),
        "{e}"
    );
    assert!(!dir.path().join("data").exists(), "nothing ran");
}

#[test]
fn a_stopped_run_keeps_its_logs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("t.fio"),
        "[s]\nfilename=data\nsize=1m\nbs=4k\nrw=randwrite\nioengine=psync\ntime_based\nruntime=1h\n\
         rate_iops=4000\nwrite_lat_log=s\n",
    )
    .unwrap();
    let out = dir.path().join("out.json");
    let mut child = common::xferbench()
        .args(["--quiet", "stream", "--format", "json", "t.fio", "-o"])
        .arg(&out)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Until the first buffer of lines is on disk (a hang guard, no timing).
    let log = dir.path().join("s_lat.1.log");
    let start = Instant::now();
    while std::fs::metadata(&log).map_or(0, |m| m.len()) == 0 {
        assert!(start.elapsed() < Duration::from_secs(120), "no log lines");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("a stopped run hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let d: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(d["jobs"][0]["partial"], true, "{d}");
    let n = ios(&d, 0, "write");
    assert!(n > 0);
    assert_eq!(lines(&log).len() as u64, n, "every I/O of the stopped run");
}

/// `program ARGS…` run in `dir`, with the tests' hang guard.
fn tool(program: &Path, args: &[&str], dir: &Path) -> Output {
    let mut c = Command::new(program);
    c.args(args).current_dir(dir);
    common::finish(c)
}

/// Where `tool` is on PATH, if it is.
fn installed(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file())
}

/// A python3 that imports numpy and pandas (Debian's first: a python3 of
/// one's own earlier on PATH may lack them).
fn python_with_pandas() -> Option<PathBuf> {
    let debian = Path::new("/usr/bin/python3");
    [
        debian.is_file().then(|| debian.to_path_buf()),
        installed("python3"),
    ]
    .into_iter()
    .flatten()
    .find(|p| {
        let mut c = Command::new(p);
        c.args(["-c", "import numpy, pandas"]);
        common::finish(c).status.success()
    })
}

#[test]
fn a_log_that_cannot_be_written_is_a_warning_of_the_job() {
    if !Path::new("/dev/full").exists() {
        println!("skipped: no /dev/full to fail the writes");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/dev/full", dir.path().join("f_iops.1.log")).unwrap();
    let d = json(&stream(
        dir.path(),
        "[j]\nfilename=data\nsize=4m\nbs=4k\nrw=write\nioengine=psync\nwrite_iops_log=f\n",
    ));
    // The job's figures stand; the log's failure is said once.
    assert_eq!(ios(&d, 0, "write"), 1024);
    let warnings = d["jobs"][0]["warnings"].to_string();
    assert_eq!(warnings.matches("f_iops.1.log").count(), 1, "{warnings}");
    assert!(warnings.contains("No space left"), "{warnings}");
}

/// `per_job_logs=0`: four jobs share each log file. Every line is whole
/// (fio's columns, each a number), each job's lines are one block, as fio
/// writes them, and a second run appends to the first's, as fio's does —
/// ten runs in a row into the same files.
#[test]
fn shared_logs_hold_whole_lines_one_block_per_job() {
    let dir = tempfile::tempdir().unwrap();
    // Enough lines a job (well over the 64 KiB a buffer holds) that lines
    // cut where a buffer filled would show.
    let job = "[global]\nfilename=data\nsize=256k\nbs=4k\nrw=randrw\nioengine=psync\n\
               time_based\nruntime=300ms\nrate_iops=20000\nper_job_logs=0\n\
               write_lat_log=s\nwrite_bw_log=s\nwrite_iops_log=s\nwrite_hist_log=s\n\
               log_hist_msec=50\nlog_hist_coarseness=4\n[j]\nnumjobs=4\n";
    let value_logs = ["s_lat.log", "s_clat.log", "s_bw.log", "s_iops.log"];
    let mut before = 0;
    for run in 1..=10 {
        let d = json(&stream(dir.path(), job));
        let ios: u64 = (0..4)
            .map(|i| ios(&d, i, "read") + ios(&d, i, "write"))
            .sum();
        for name in value_logs {
            let l = fields(&dir.path().join(name), 5);
            assert_eq!(l.len() as u64, before + ios, "run {run}: {name}: every I/O");
            // Times fall only where the next job's block starts.
            let falls = l.windows(2).filter(|w| w[1][0] < w[0][0]).count();
            assert!(
                falls < 4 * run as usize,
                "run {run}: {name}: {falls} blocks"
            );
        }
        // time, direction, block size, 1856 buckets / 2^4.
        let h = fields(&dir.path().join("s_clat_hist.log"), 3 + 1856 / 16);
        assert!(!h.is_empty(), "run {run}");
        before += ios;
    }
    // fio's own tool reads them (a cut line made it fail).
    fio2gnuplot(dir.path(), [("-b", "s_bw.log"), ("-i", "s_iops.log")]);
    // Nothing of the jobs' spools is left behind.
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "data",
            "s_bw.log",
            "s_clat.log",
            "s_clat_hist.log",
            "s_iops.log",
            "s_lat.log",
            "s_slat.log",
            "t.fio"
        ]
    );
}

/// A log file's lines, each checked to hold `n` comma-separated numbers (a
/// line cut short, or two run together, fails with the line shown).
fn fields(path: &Path, n: usize) -> Vec<Vec<u64>> {
    let l = lines(path);
    for (i, c) in l.iter().enumerate() {
        assert_eq!(c.len(), n, "{}: line {}: {c:?}", path.display(), i + 1);
    }
    l
}

/// What a run of a job file left: each job's (read, written) bytes,
/// `data/`'s sorted listing ("name size"), the exit code and stderr.
struct Ran {
    bytes: Vec<(u64, u64)>,
    files: Vec<String>,
    code: i32,
    stderr: String,
}

/// fio 3.33 on `job` (see [`run_in`]); None where fio is not installed.
fn fio_run(job: &str) -> Option<Ran> {
    let fio = installed("fio")?;
    let dir = tempfile::tempdir().unwrap();
    Some(run_in(dir.path(), &fio, &["--output-format=json"], job))
}

/// What xferbench does with the same job, in the same shape.
fn xferbench_run(job: &str) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_xferbench"));
    run_in(
        dir.path(),
        &bin,
        &["--quiet", "stream", "--format", "json"],
        job,
    )
}

/// Runs `program ARGS… t.fio` in `dir`, with `data/` made for the job's
/// files and XB_UNSET unset.
fn run_in(dir: &Path, program: &Path, args: &[&str], job: &str) -> Ran {
    std::fs::create_dir(dir.join("data")).unwrap();
    std::fs::write(dir.join("t.fio"), job).unwrap();
    let mut c = Command::new(program);
    c.args(args)
        .arg("t.fio")
        .current_dir(dir)
        .env_remove("XB_UNSET")
        .env_remove("XFERBENCH_RESPONDER_FAULT");
    let o = common::finish(c);
    let bytes = serde_json::from_slice::<Value>(&o.stdout)
        .ok()
        .and_then(|d| {
            let jobs = d["jobs"].as_array()?.clone();
            Some(
                jobs.iter()
                    .map(|j| {
                        let b = |k: &str| j[k]["io_bytes"].as_u64().unwrap_or(0);
                        (b("read"), b("write"))
                    })
                    .collect(),
            )
        })
        .unwrap_or_default();
    let mut files: Vec<String> = std::fs::read_dir(dir.join("data"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            format!(
                "{} {}",
                e.file_name().to_string_lossy(),
                e.metadata().unwrap().len()
            )
        })
        .collect();
    files.sort();
    Ran {
        bytes,
        files,
        code: o.status.code().unwrap_or(-1),
        stderr: stderr(&o),
    }
}

/// OpenZFS's performance suite: `filename_format=file$jobnum` with
/// `nrfiles=`: every job's files have the one name, so a job has its one
/// file nrfiles times over, as in fio (each pass over it counted); the
/// files are fio's, in fio's place.
#[test]
fn filename_format_without_filenum_makes_fios_files() {
    let job = "[global]\nfilename_format=file$jobnum\nnrfiles=4\nnumjobs=2\ndirectory=data\n\
               ioengine=psync\nbs=64k\nrw=write\nfilesize=256k\n[job]\n";
    let x = xferbench_run(job);
    assert_eq!(x.code, 0, "{}", x.stderr);
    assert_eq!(x.files, ["file0 262144", "file1 262144"]);
    assert_eq!(x.bytes, [(0, 1 << 20), (0, 1 << 20)]);
    match fio_run(job) {
        Some(fio) => same_as_fio(&x, &fio),
        None => println!("skipped the side-by-side run: fio is not installed"),
    }
    // fio numbers the clones after the first counting down: the second of
    // three jobs is clone 2, its file file2.
    let job = "[global]\nfilename_format=f$jobnum.$filenum\nnumjobs=3\ndirectory=data\n\
               ioengine=psync\nbs=4k\nrw=write\n[j]\nsize=4k\n";
    let d = json(&stream_with_dir(job));
    let files: Vec<&str> = d["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["filename"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["data/f0.0", "data/f2.0", "data/f1.0"]);
}

/// The same files, and each job the same bytes, as fio.
fn same_as_fio(x: &Ran, fio: &Ran) {
    assert_eq!(
        (&fio.bytes, &fio.files),
        (&x.bytes, &x.files),
        "fio: {}",
        fio.stderr
    );
}

/// `stream` on `job` in a fresh directory holding `data/`.
fn stream_with_dir(job: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    stream(dir.path(), job)
}

/// `size=100%%` (a job file written through printf) is 100%, as fio
/// reads it.
#[test]
fn a_doubled_percent_sign_is_a_percentage() {
    let job = "[j]\nfilename=data/f\nioengine=psync\nbs=4k\nrw=write\nsize=128k\n\
               [r]\nstonewall\nfilename=data/f\nioengine=psync\nbs=4k\nrw=read\nsize=100%%\n";
    let x = xferbench_run(job);
    assert_eq!(x.code, 0, "{}", x.stderr);
    assert_eq!(x.bytes, [(0, 128 << 10), (128 << 10, 0)]);
    if let Some(fio) = fio_run(job) {
        same_as_fio(&x, &fio);
    }
}

/// An unset `${VAR}` is the empty string, as in fio: within a value the
/// rest stands (`${XB_UNSET}x` is `x`); an option it leaves empty or
/// unparsable makes fio drop the job and run nothing, exit 1 — no job
/// runs with a default instead. `$VAR` without braces is not a variable
/// in fio: kept as written.
#[test]
fn an_unset_variable_does_what_fio_does() {
    let head = "[global]\nioengine=psync\nrw=write\nbs=4k\nsize=16k\ndirectory=data\n";
    for (lines, want_code, want_files) in [
        ("[a]\nfilename=${XB_UNSET}x\n", 0, vec!["x 16384"]),
        ("[a]\nfilename=$XB_UNSET-y\n", 0, vec!["$XB_UNSET-y 16384"]),
        ("[a]\n[b]\nsize=${XB_UNSET}\n", 1, vec![]),
        ("[a]\nbs=${XB_UNSET}k\n[b]\n", 1, vec![]),
        ("[a]\nwrite_bw_log=${XB_UNSET}\n", 0, vec!["a.0.0 16384"]),
    ] {
        let job = format!("{head}{lines}");
        let x = xferbench_run(&job);
        let e = &x.stderr;
        assert_eq!(x.code, want_code, "{lines}: {e}");
        assert_eq!(x.files, want_files, "{lines}: {e}");
        if x.code != 0 {
            assert_eq!(e.lines().count(), 1, "{e}");
            assert!(e.contains("XB_UNSET is not set"), "{e}");
        }
        if let Some(fio) = fio_run(&job) {
            assert_eq!(
                (fio.code, &fio.files),
                (x.code, &x.files),
                "{lines}: fio: {}",
                fio.stderr
            );
        }
    }
}
