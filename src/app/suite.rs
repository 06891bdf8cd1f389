//! The default suite (`xferbench` with no arguments): the round-trip matrix
//! and the latency/bandwidth curve on every local transport, a short
//! stream on a temporary file, and the flowgraph sweep. Each part is an ordinary command line, parsed
//! as the user would type it and recorded in its results, so any part can be
//! rerun alone. Writes the JSON of each part and an HTML report into one
//! folder. Sized to finish in well under 90 s on 2 cores (`--quick`: half).

use crate::cli::{Cli, Command};
use crate::error::{Error, Result};
use crate::experiment::{Progress, curve, flowgraph, roundtrip, stream};
use crate::report::bundle::Report;
use crate::report::figure::si;
use crate::report::saved::SavedRun;
use crate::report::saved::num;
use crate::report::table::markdown;
use crate::transport;
use serde_json::Value;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

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
                if crate::measure::placement::allowed_cpus().len() >= 2 {
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

/// Runs one part; returns its results as JSON.
fn run_part(
    part: &Part,
    stop: &Arc<AtomicBool>,
    progress: &dyn Progress,
) -> Result<(Value, Option<Error>)> {
    let argv = std::iter::once("xferbench".to_string()).chain(part.args.iter().cloned());
    let cli =
        Cli::parse_argv(argv).map_err(|e| Error::run(format!("suite part {}: {e}", part.name)))?;
    let to_value =
        |v: serde_json::Result<Value>| v.map_err(|e| Error::run(format!("encoding JSON: {e}")));
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
                to_value(serde_json::from_str(&crate::report::stream::json(&run)?))?,
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
    })?;
    let data = std::env::temp_dir().join(format!("xferbench-suite-{}.dat", std::process::id()));
    let job = o.out.join("stream-suite.fio");
    crate::report::emit(&stream_job(&data, o.quick), Some(&job))?;
    let parts = parts(o.quick, &job);
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
        if part.name == "stream" {
            let _ = std::fs::remove_file(&data);
        }
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
        crate::report::emit(&crate::report::json::render(&value)?, Some(&path))?;
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

/// One screen: a row per transport (64-byte round trip, the fitted model,
/// the peak bandwidth), the stream jobs, the caveats and where the report is.
pub fn summary(out: &Outcome) -> String {
    let mut s = String::new();
    let run = |e: &str| out.runs.iter().find(|r| r.experiment == e);
    let mut specs: Vec<String> = Vec::new();
    for r in &out.runs {
        if r.experiment == "roundtrip" || r.experiment == "curve" {
            for p in r.entries() {
                if let Some(t) = p.get("spec").and_then(Value::as_str)
                    && !specs.iter().any(|x| x == t)
                {
                    specs.push(t.to_string());
                }
            }
        }
    }
    let header: Vec<String> = [
        "transport",
        "round trip 64 B mean (µs)",
        "p99 (µs)",
        "one-way t0 (µs)",
        "r∞ (MB/s)",
        "peak MB/s (at size)",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<Vec<String>> = specs
        .iter()
        .map(|t| {
            let small = run("roundtrip").and_then(|r| {
                r.entries().iter().find(|p| {
                    p["spec"] == *t.as_str()
                        && num(p, "in_bytes") == Some(64.0)
                        && num(p, "out_bytes") == Some(64.0)
                })
            });
            let stat = |k: &str| {
                small
                    .and_then(|p| num(&p["summary"], k))
                    .map_or("—".into(), |ns| si(ns / 1000.0))
            };
            let fit = run("curve").and_then(|r| {
                r.value["fits"]
                    .as_array()?
                    .iter()
                    .find(|f| f["spec"] == *t.as_str())
                    .map(|f| f["fit"].clone())
            });
            let fitv = |k: &str, scale: f64| {
                fit.as_ref()
                    .and_then(|f| num(f, k))
                    .map_or("—".into(), |v| si(v / scale))
            };
            let peak = run("curve").and_then(|r| {
                r.entries()
                    .iter()
                    .filter(|p| p["spec"] == *t.as_str())
                    .filter_map(|p| Some((num(p, "bandwidth_MBps")?, num(p, "size_bytes")?)))
                    .max_by(|a, b| a.0.total_cmp(&b.0))
            });
            vec![
                t.clone(),
                stat("mean_ns"),
                stat("p99_ns"),
                fitv("t0_ns", 1000.0),
                fitv("r_inf_MBps", 1.0),
                peak.map_or("—".into(), |(bw, n)| {
                    format!("{} ({})", si(bw), crate::units::format_size(n as u64))
                }),
            ]
        })
        .collect();
    let host = out.runs.iter().find_map(|r| r.env.as_ref());
    let _ = writeln!(
        s,
        "xferbench default suite: {} runs in {:.0} s{}\n",
        out.runs.len(),
        out.elapsed_s,
        host.map_or(String::new(), |e| format!(
            " on {} ({}, {} CPUs{})",
            e.hostname,
            e.cpu_model,
            e.cpus_online,
            if e.virtualization.virtual_machine {
                ", virtual machine"
            } else {
                ""
            }
        ))
    );
    if !rows.is_empty() {
        s.push_str(&markdown(&header, &rows));
        s.push('\n');
    }
    if let Some(r) = run("stream") {
        let mut names: Vec<String> = Vec::new();
        let mut sizes: Vec<u64> = Vec::new();
        for j in r.entries() {
            let n = j["jobname"].as_str().unwrap_or("?").to_string();
            if !names.contains(&n) {
                names.push(n);
            }
            if let Some(b) = j["sweep_bs"].as_u64().or_else(|| j["bs"].as_u64())
                && !sizes.contains(&b)
            {
                sizes.push(b);
            }
        }
        let mut header = vec!["stream job (MB/s)".to_string()];
        header.extend(
            sizes
                .iter()
                .map(|&b| format!("bs {}", crate::units::format_size(b))),
        );
        let rows: Vec<Vec<String>> = names
            .iter()
            .map(|n| {
                let mut row = vec![n.clone()];
                row.extend(sizes.iter().map(|&b| {
                    let bw: f64 = r
                        .entries()
                        .iter()
                        .filter(|j| {
                            j["jobname"] == *n.as_str()
                                && j["sweep_bs"].as_u64().or_else(|| j["bs"].as_u64()) == Some(b)
                        })
                        .flat_map(|j| {
                            ["read", "write"].map(|d| num(&j[d], "bw_bytes").unwrap_or(0.0))
                        })
                        .sum();
                    si(bw / 1e6)
                }));
                row
            })
            .collect();
        s.push_str(&markdown(&header, &rows));
        s.push('\n');
    }
    if let Some(r) = run("flowgraph") {
        let k = num(&r.value, "kernel_only_sps").unwrap_or(0.0);
        let mut scheds: Vec<String> = Vec::new();
        let mut grid: Vec<(u64, u64)> = Vec::new();
        for p in r.entries() {
            let sc = crate::flowgraph::edge::series_of(p);
            if !scheds.contains(&sc) {
                scheds.push(sc);
            }
            let nm = (
                p["cores"].as_u64().unwrap_or(0),
                p["blocks"].as_u64().unwrap_or(0),
            );
            // The diagonal M = N: one kernel per core, the fairest case.
            if nm.0 == nm.1 && !grid.contains(&nm) {
                grid.push(nm);
            }
        }
        // A row per scheduler and a column per (N, M): a dozen series
        // side by side would not fit a terminal.
        let mut header = vec!["flowgraph (samples/s)".to_string()];
        header.extend(grid.iter().map(|(n, m)| format!("N={n} M={m}")));
        let rows: Vec<Vec<String>> = scheds
            .iter()
            .map(|sc| {
                let mut row = vec![sc.clone()];
                row.extend(grid.iter().map(|&(n, m)| {
                    r.entries()
                        .iter()
                        .find(|p| {
                            crate::flowgraph::edge::series_of(p) == *sc
                                && p["cores"] == n
                                && p["blocks"] == m
                        })
                        .and_then(|p| num(p, "samples_per_s"))
                        .map_or("—".into(), si)
                }));
                row
            })
            .collect();
        s.push_str(&markdown(&header, &rows));
        let at_buffer = num(&r.value, "kernel_at_buffer_sps").unwrap_or(0.0);
        let size = |v: Option<f64>| crate::units::format_size(v.unwrap_or(0.0) as u64);
        let _ = writeln!(
            s,
            "Saxpy kernel alone (medians through the run): {} samples/s at the scan's best buffer size, {} (the ideal bound for one kernel); {} at the flowgraph's own {}.\n",
            si(k),
            size(num(&r.value, "kernel_only_buffer_bytes")),
            si(at_buffer),
            size(r.entries().first().and_then(|p| num(p, "buffer_bytes")))
        );
    }
    let caveats: usize = out
        .runs
        .iter()
        .map(|r| r.warnings.len() + r.point_warnings().len())
        .sum();
    if caveats > 0 {
        let _ = writeln!(
            s,
            "{caveats} caveats on these figures: see the report's warnings."
        );
    }
    for k in &out.skipped {
        let _ = writeln!(s, "Skipped {k}");
    }
    let _ = writeln!(s, "Report: {}", out.report.display());
    s
}
