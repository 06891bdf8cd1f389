//! The default suite (`xferbench` with no arguments): the round-trip matrix
//! and the latency/bandwidth curve on every local transport, a short
//! stream on a temporary file, and the flowgraph sweep. Each part is an ordinary command line, parsed
//! as the user would type it and recorded in its results, so any part can be
//! rerun alone. Writes the JSON of each part and an HTML report into one
//! folder. Sized to finish in well under 90 s on 2 cores (`--quick`: half).

use crate::cli::{Cli, Command};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;
use xferbench::error::{Error, Result};
use xferbench::experiment::{Progress, curve, flowgraph, roundtrip, stream};
use xferbench::report::bundle::Report;
use xferbench::result::saved::SavedRun;
use xferbench::transport;

pub const REPORT_DIR: &str = "xferbench-report";

pub struct Options {
    pub quick: bool,
    pub out: PathBuf,
}

/// What the suite left behind.
pub struct Outcome {
    pub runs: Vec<SavedRun>,
    pub report: PathBuf,
    pub elapsed_s: f64,
    /// Parts that could not run here, and why (the suite goes on without them).
    pub skipped: Vec<String>,
}

/// One part: its name (the JSON file stem) and its command line.
pub struct Part {
    pub name: &'static str,
    pub args: Vec<String>,
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// The parts' command lines. `job` is the stream part's job file.
pub fn parts(quick: bool, job: &Path) -> Vec<Part> {
    // Local transports that work here (cuda only where a GPU is).
    let all: Vec<&str> = transport::all()
        .iter()
        .filter(|t| t.unavailable().is_none())
        .map(|t| t.name())
        .collect();
    let all = all.join(",");
    let (rt_sizes, rt_time, curve_sizes, curve_time) = if quick {
        ("64,16k", "100ms", "1,16,256,4k,64k,1M", "40ms")
    } else {
        (
            "64,1k,16k",
            "200ms",
            "1,4,16,64,256,1k,4k,16k,64k,256k,1M,4M",
            "50ms",
        )
    };
    vec![
        Part {
            name: "roundtrip",
            args: words(&format!(
                "roundtrip -t {all} --in {rt_sizes} --out {rt_sizes} --duration {rt_time} --warmup 200"
            )),
        },
        Part {
            name: "curve",
            args: words(&format!(
                "curve -t {all} --sizes {curve_sizes} --duration {curve_time}"
            )),
        },
        Part {
            name: "stream",
            args: vec![
                "stream".into(),
                "--job".into(),
                job.display().to_string(),
                "--bs".into(),
                if quick { "4k,1m" } else { "4k,64k,1m" }.into(),
            ],
        },
        Part {
            name: "flowgraph",
            // One and two cores: the flowgraph's own default sweeps every
            // core count with 2N+1 chains each, hours on a large machine.
            args: words(&format!(
                "flowgraph --cores {} {}",
                if xferbench::measure::placement::allowed_cpus().len() >= 2 {
                    "1,2"
                } else {
                    "1"
                },
                if quick {
                    "--duration 150ms --warmup 50ms --kernel-sizes 1k..64k"
                } else {
                    "--duration 300ms --warmup 100ms"
                }
            )),
        },
    ]
}

/// The stream part's jobs: write, read, and read through io_uring with eight
/// in flight, each time-based, one after the other.
fn stream_job(data: &Path, quick: bool) -> String {
    let runtime = if quick { "250ms" } else { "400ms" };
    format!(
        "; xferbench default suite: the stream part (xferbench stream --job THIS_FILE --bs 4k,64k,1m)\n\
         [global]\nfilename={}\nsize=64m\nallow_file_create=1\ntime_based\nruntime={runtime}\n\n\
         [psync-write]\nioengine=psync\nrw=write\nstonewall\n\n\
         [psync-read]\nioengine=psync\nrw=read\nstonewall\n\n\
         [io_uring-read]\nioengine=io_uring\niodepth=8\nrw=read\nstonewall\n",
        data.display()
    )
}

/// A scratch file that is already unlinked: open, and gone from `path`.
fn scratch_file(path: &Path) -> Result<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| Error::io(format!("creating the scratch file {}", path.display()), e))?;
    std::fs::remove_file(path)
        .map_err(|e| Error::io(format!("unlinking the scratch file {}", path.display()), e))?;
    Ok(f)
}

/// Runs one part; returns its results as JSON.
fn run_part(
    part: &Part,
    stop: &Arc<AtomicBool>,
    progress: &dyn Progress,
) -> Result<(Value, Option<Error>)> {
    let argv = std::iter::once("xferbench".to_string()).chain(part.args.iter().cloned());
    let cli = Cli::parse_argv(argv)
        .map_err(|e| Error::run_from(format!("suite part {}", part.name), e))?;
    let to_value =
        |v: serde_json::Result<Value>| v.map_err(|e| Error::run_from("encoding JSON", e));
    let (mut value, err) = match cli.command {
        Some(Command::Roundtrip(a)) => {
            let (run, err) = roundtrip::run(&(*a).into(), stop, progress)?;
            (to_value(serde_json::to_value(&run))?, err)
        }
        Some(Command::Curve(a)) => {
            let (run, err) = curve::run(&(*a).into(), stop, progress)?;
            (to_value(serde_json::to_value(&run))?, err)
        }
        Some(Command::Flowgraph(a)) => {
            let (run, err) = flowgraph::run(&(*a).into(), stop, progress)?;
            (to_value(serde_json::to_value(&run))?, err)
        }
        Some(Command::Stream(a)) => {
            let (run, err) = stream::run(&(*a).into(), stop, progress)?;
            (
                to_value(serde_json::from_str(&xferbench::report::stream::json(
                    &run,
                )?))?,
                err,
            )
        }
        _ => {
            return Err(Error::run(format!(
                "suite part {} is not an experiment",
                part.name
            )));
        }
    };
    // The command that reproduces this part, not the bare `xferbench`.
    if let Some(env) = value.get_mut("env") {
        env["command"] = Value::from(
            std::iter::once("xferbench".to_string())
                .chain(part.args.iter().cloned())
                .collect::<Vec<_>>(),
        );
    }
    Ok((value, err))
}

/// Runs the suite. `note` prints a line for people between parts.
pub fn run(
    o: &Options,
    stop: &Arc<AtomicBool>,
    progress: &dyn Progress,
    note: &dyn Fn(&str),
) -> Result<(Outcome, Option<Error>)> {
    let start = Instant::now();
    std::fs::create_dir_all(&o.out).map_err(|e| {
        Error::usage(format!(
            "cannot create {}: {e}; pick a writable folder with --out",
            o.out.display()
        ))
        .with_source(e)
    })?;
    let data = std::env::temp_dir().join(format!("xferbench-suite-{}.dat", std::process::id()));
    let job = o.out.join("stream-suite.fio");
    xferbench::output::emit(&stream_job(&data, o.quick), Some(&job))?;
    // The stream part's 64 MiB scratch file is unlinked as soon as it is
    // made and reached through this process's descriptor (--map), so no
    // way of ending the process (a second Ctrl-C, SIGKILL) leaves it in
    // /tmp. The job file keeps the plain name, for a rerun by hand.
    let scratch = scratch_file(&data)?;
    let mut parts = parts(o.quick, &job);
    if let Some(p) = parts.iter_mut().find(|p| p.name == "stream") {
        use std::os::fd::AsRawFd;
        p.args.push("--map".into());
        p.args.push(format!(
            "{}=/proc/self/fd/{}",
            data.display(),
            scratch.as_raw_fd()
        ));
    }
    let mut runs = Vec::new();
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    let mut stopped = None;
    for (i, part) in parts.iter().enumerate() {
        note(&format!(
            "[{}/{}] {}",
            i + 1,
            parts.len(),
            std::iter::once("xferbench")
                .chain(part.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ")
        ));
        // Each experiment gives this thread its CPU mask back when it ends
        // (placement::KeepAffinity), so every part starts from the whole machine.
        let result = run_part(part, stop, progress);
        let (value, err) = match result {
            Ok(r) => r,
            Err(Error::Interrupted) => {
                stopped = Some(Error::Interrupted);
                break;
            }
            Err(e) => {
                // One part that cannot run here (no io_uring in a container,
                // say) does not cost the others.
                note(&format!("{} skipped: {e}", part.name));
                skipped.push(format!("{}: {e}", part.name));
                continue;
            }
        };
        let path = o.out.join(format!("{}.json", part.name));
        xferbench::output::emit(&xferbench::report::json::render(&value)?, Some(&path))?;
        files.push(path);
        runs.push(SavedRun::from_value(part.name, value)?);
        if let Some(e) = err {
            stopped = Some(e);
            break;
        }
    }
    let report = Report::new(runs.clone(), &[]).write_html(
        &o.out,
        "xferbench default suite",
        format!(
            "xferbench report {} --html {}",
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(" "),
            o.out.display()
        ),
    )?;
    Ok((
        Outcome {
            runs,
            report,
            elapsed_s: start.elapsed().as_secs_f64(),
            skipped,
        },
        stopped,
    ))
}

/// The suite's one screen (rendered by `report::summary`).
pub fn summary(out: &Outcome) -> String {
    xferbench::report::summary::render(&out.runs, out.elapsed_s, &out.skipped, &out.report)
}
