//! `xferbench fio ARGS…`, and this binary run under the name `fio` (a
//! symlink): fio's command line, read by the fio crate's parser
//! (`xferbench::fio::cmdline`), run as a `stream` run, written in fio's
//! output formats, with fio's exit codes.

use super::progress::Bar;
use std::ffi::OsString;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use xferbench::error::{Error, Result};
use xferbench::experiment::Progress;
use xferbench::fio::cmdline::{self, CmdLine, Eta, Extra, Takes};
use xferbench::format::Format;
use xferbench::options::{FioOutput, Output, StreamConfig};
use xferbench::report::Render;
use xferbench::result::stream::StreamRun;

/// xferbench's own options a fio command line may carry: none is a fio
/// option (a test holds them apart).
const EXTRAS: &[Extra] = &[
    Extra {
        name: "map",
        takes: Takes::Value,
        help: "Rewrite a filename before opening it: --map /dev/xdma0_h2c_0=/tmp/card (repeatable)",
    },
    Extra {
        name: "repeat",
        takes: Takes::Value,
        help: "Run every job K times in turn and merge each job's figures (what xferbench compare needs)",
    },
    Extra {
        name: "save-baseline",
        takes: Takes::Value,
        help: "Also store the result as the baseline NAME",
    },
    Extra {
        name: "baseline",
        takes: Takes::Value,
        help: "Compare the result with the baseline NAME; exit 1 on a regression",
    },
    Extra {
        name: "format",
        takes: Takes::Value,
        help: "xferbench's output format in place of --output-format: normal (table), json, json+, terse, csv",
    },
    Extra {
        name: "strict",
        takes: Takes::Nothing,
        help: "Options xferbench does not support are errors (as --warnings-fatal)",
    },
    Extra {
        name: "allow-large-layout",
        takes: Takes::Nothing,
        help: "Lay out a file for reading even past 8 GiB of zeros or half the free space",
    },
];

/// Whether this process was started under the name `fio` (argv[0]'s file
/// name): then it is fio, and its arguments are fio's.
pub fn started_as_fio() -> bool {
    std::env::args_os()
        .next()
        .is_some_and(|a0| std::path::Path::new(&a0).file_name() == Some("fio".as_ref()))
}

/// Runs fio's command line `args` (without the program's name); returns
/// the exit code: fio's (0, or the number of jobs that failed; 128 when
/// interrupted), 2 for a command line it cannot run, 1 for a regression
/// against `--baseline`.
pub fn main(args: Vec<OsString>, quiet: bool) -> i32 {
    super::progress::show_layouts();
    super::supervise::run(move || {
        let code = match run(args, quiet) {
            Ok(code) => code,
            Err(Error::Interrupted) => {
                eprintln!("xferbench: interrupted");
                128
            }
            Err(e) => {
                eprintln!(
                    "xferbench: error: {}",
                    xferbench::error::capped(&e.to_string())
                );
                e.exit_code()
            }
        };
        xferbench::transport::mpi::shutdown();
        code
    })
}

/// What the command line asks for, done; the exit code.
fn run(args: Vec<OsString>, quiet: bool) -> Result<i32> {
    let args = args
        .into_iter()
        .map(|a| {
            a.into_string().map_err(|a| {
                Error::usage(format!(
                    "argument {} is not valid UTF-8; rename the file or give its value in UTF-8",
                    a.to_string_lossy()
                ))
            })
        })
        .collect::<Result<Vec<String>>>()?;
    let mut line = cmdline::parse(&args, EXTRAS)?;
    let program = if started_as_fio() {
        "fio"
    } else {
        "xferbench fio"
    };
    if let Some(text) = helps(&line, program)? {
        print!("{text}");
        return Ok(0);
    }
    read_stdin(&mut line)?;
    let outs = outputs(&line)?;
    if line.show_cmd {
        let text = line.jobs.show_cmd()?;
        xferbench::output::emit(&text, line.output.as_deref().map(std::path::Path::new))?;
        return Ok(0);
    }
    let config = config_of(&line, &outs)?;
    if line.parse_only {
        if !quiet {
            for w in xferbench::experiment::stream::check(&config)? {
                eprintln!("xferbench: warning: {w}");
            }
        } else {
            xferbench::experiment::stream::check(&config)?;
        }
        return Ok(0);
    }
    run_jobs(&line, &config, &outs, quiet)
}

/// `--help`, `--version`, `--cmdhelp`, `--enghelp`: their text, which is
/// all the command line does.
fn helps(line: &CmdLine, program: &str) -> Result<Option<String>> {
    Ok(if line.help {
        Some(cmdline::usage(program, EXTRAS))
    } else if line.version {
        Some(format!("{}\n", cmdline::version()))
    } else if let Some(c) = &line.cmdhelp {
        Some(cmdline::cmdhelp(c)?)
    } else if let Some(e) = &line.enghelp {
        Some(cmdline::enghelp(e)?)
    } else {
        None
    })
}

/// The job file `-` names, read from standard input once, before the run
/// (every repeat reads the same jobs).
fn read_stdin(line: &mut CmdLine) -> Result<()> {
    let mut stdin = line.jobs.files.iter_mut().filter(|f| f.path == "-");
    if let Some(f) = stdin.next() {
        f.text = Some(xferbench::fio::jobfile::read_job_text(
            std::io::stdin().lock(),
            "standard input",
        )?);
    }
    if stdin.next().is_some() {
        return Err(Error::usage(
            "'-' (a job file on standard input) is given twice; standard input holds one",
        ));
    }
    Ok(())
}

/// One output written, in the order fio writes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Out {
    Terse,
    Json,
    JsonPlus,
    Normal,
    /// xferbench's own (`--format csv`).
    Csv,
}

/// The outputs asked for: `--format` (xferbench's word), else fio's
/// `--output-format` list, in fio's order: terse, json, normal.
fn outputs(line: &CmdLine) -> Result<Vec<Out>> {
    let format = line
        .extras
        .iter()
        .rev()
        .find(|(k, _)| k == "format")
        .and_then(|(_, v)| v.clone());
    let outs = match format.as_deref() {
        Some("table" | "normal") => vec![Out::Normal],
        Some("json") => vec![Out::Json],
        Some("json+") => vec![Out::JsonPlus],
        Some("terse") => vec![Out::Terse],
        Some("csv") => vec![Out::Csv],
        Some(w) => {
            return Err(Error::usage(format!(
                "--format {w}: expected normal (or table), json, json+, terse or csv"
            )));
        }
        None => {
            let f = line.formats;
            let json = match (f.json, f.json_plus) {
                (_, true) => Some(Out::JsonPlus),
                (true, false) => Some(Out::Json),
                _ => None,
            };
            [
                f.terse.then_some(Out::Terse),
                json,
                f.normal.then_some(Out::Normal),
            ]
            .into_iter()
            .flatten()
            .collect()
        }
    };
    if outs.contains(&Out::Terse) && line.terse_version != 3 {
        return Err(Error::usage(format!(
            "--terse-version={}: xferbench writes fio's terse version 3; drop --terse-version or give 3",
            line.terse_version
        )));
    }
    Ok(outs)
}

/// The `stream` run the command line describes.
fn config_of(line: &CmdLine, outs: &[Out]) -> Result<StreamConfig> {
    let mut c = StreamConfig {
        fio_jobs: Some(line.jobs.clone()),
        strict: line.warnings_fatal,
        status_interval: line.status_interval,
        ..StreamConfig::default()
    };
    let mut out = Output {
        output: line.output.as_ref().map(Into::into),
        ..Output::default()
    };
    for (k, v) in &line.extras {
        let v = v.clone().unwrap_or_default();
        match k.as_str() {
            "map" => c.map.push(
                xferbench::options::parse_map_pair(&v)
                    .map_err(|e| Error::usage(format!("--map {v}: {e}")))?,
            ),
            "repeat" => {
                out.repeat = v
                    .parse()
                    .ok()
                    .filter(|k| (1..=1000).contains(k))
                    .ok_or_else(|| {
                        Error::usage(format!(
                            "--repeat {v}: expected a whole number from 1 to 1000"
                        ))
                    })?
            }
            "save-baseline" => out.save_baseline = Some(v),
            "baseline" => out.baseline = Some(v),
            "strict" => c.strict = true,
            "allow-large-layout" => c.allow_large_layout = true,
            _ => {}
        }
    }
    // What a checkpoint (a run a hung device stopped) is written as, and
    // what the run records: the first output asked for.
    (out.format, c.fio_output) = match outs.first() {
        Some(Out::Normal) | None => (Format::Table, None),
        Some(Out::Csv) => (Format::Csv, None),
        Some(Out::Json) => (Format::Json, None),
        Some(Out::JsonPlus) => (Format::Json, Some(FioOutput::JsonPlus)),
        Some(Out::Terse) => (Format::Json, Some(FioOutput::Terse)),
    };
    c.out = out;
    Ok(c)
}

/// Runs the jobs as `measured` runs any experiment (checks first, Ctrl-C,
/// progress, checkpoints, baselines), then writes every output asked for;
/// the exit code.
fn run_jobs(line: &CmdLine, c: &StreamConfig, outs: &[Out], quiet: bool) -> Result<i32> {
    let out = &c.out;
    xferbench::output::wait_for_readers(c.timeout, Some(super::interrupt::requested));
    xferbench::output::check_writable(out.output.as_deref())?;
    let base = super::baseline_first(out)?;
    let stop = super::interrupt::install();
    let eta = EtaLines::of(line, outs, quiet);
    let bar = Bar::new(quiet || line.eta == Eta::Never || eta.is_some());
    let kept: super::checkpoint::Checkpoints<_, _> = super::checkpoint::Checkpoints::<
        xferbench::result::stream::JobResult,
        xferbench::result::stream::StreamExtra,
    >::new(&bar, out);
    let status = line.status_interval.map(|_| Status {
        outs: outs.to_vec(),
        output: out.output.clone(),
    });
    let mut sinks: Vec<&dyn Progress> = vec![&kept];
    sinks.extend(eta.as_ref().map(|e| e as &dyn Progress));
    sinks.extend(status.as_ref().map(|s| s as &dyn Progress));
    let (run, err) = xferbench::experiment::stream::run(c, &stop, &Fanout(sinks))?;
    // A job that could not start as written: the one line says it all.
    if let Some(e @ Error::Usage { .. }) = err {
        return Err(e);
    }
    if !quiet {
        for w in job_warnings(&run) {
            eprintln!("xferbench: warning: {w}");
        }
    }
    if !xferbench::transport::guard::claim() {
        // The watch wrote the run already and is ending the process.
        loop {
            std::thread::park();
        }
    }
    let text = render(&run, outs)?;
    super::emit_run(
        &text,
        out.output.as_deref(),
        run.points.len(),
        run.complete,
        None,
    )?;
    let verdict = super::baselines(out, base, &run.json()?);
    let failed = run.points.iter().filter(|j| j.error != 0).count();
    match err {
        Some(Error::Interrupted) => Err(Error::Interrupted),
        Some(e) => {
            eprintln!(
                "xferbench: error: {}",
                xferbench::error::capped(&e.to_string())
            );
            // fio's exit status counts the jobs that failed.
            Ok(failed.clamp(1, 127) as i32)
        }
        None => verdict.map(|()| 0),
    }
}

/// The run's warnings that stderr carries: those about the jobs, less the
/// notes (options accepted that change no figure, as `gtod_reduce`). The
/// machine's caveats (a virtual machine, one CPU, the governor) and the
/// notes stay in the JSON's `warnings` alone: fio prints nothing on stderr
/// for them, and tools that drive fio (fio-plot's bench-fio, disk-bench)
/// read any stderr as a failed run.
fn job_warnings(run: &StreamRun) -> impl Iterator<Item = &String> {
    let machine = run.env.warnings();
    run.warnings
        .iter()
        .filter(move |w| !machine.contains(w) && !run.extra.notes.contains(w))
}

/// The normal output: ONE call site, so that fio's exact text can take
/// the place of the `stream` table here alone.
fn normal(run: &StreamRun) -> Result<String> {
    run.render(Format::Table)
}

/// Every output asked for, one after the other.
fn render(run: &StreamRun, outs: &[Out]) -> Result<String> {
    let mut text = String::new();
    for o in outs {
        let part = match o {
            Out::Normal => normal(run)?,
            Out::Csv => run.render(Format::Csv)?,
            Out::Terse | Out::Json | Out::JsonPlus => {
                // The run's JSON renderer writes what its options say.
                let mut r = run.clone();
                r.options["output_format"] = match o {
                    Out::Terse => "terse".into(),
                    Out::JsonPlus => "json+".into(),
                    _ => "json".into(),
                };
                r.render(Format::Json)?
            }
        };
        text.push_str(&part);
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    Ok(text)
}

/// Progress handed to several sinks.
struct Fanout<'a>(Vec<&'a dyn Progress>);

impl Progress for Fanout<'_> {
    fn start(&self, total: u64) {
        self.0.iter().for_each(|p| p.start(total));
    }
    fn point(&self, label: &str) {
        self.0.iter().for_each(|p| p.point(label));
    }
    fn finish(&self) {
        self.0.iter().for_each(|p| p.finish());
    }
    fn start_bytes(&self, total: u64, label: &str) {
        self.0.iter().for_each(|p| p.start_bytes(total, label));
    }
    fn at(&self, done: u64) {
        self.0.iter().for_each(|p| p.at(done));
    }
    fn note(&self, line: &str) {
        self.0.iter().for_each(|p| p.note(line));
    }
    fn checkpoint(&self, partial: &dyn std::any::Any) {
        self.0.iter().for_each(|p| p.checkpoint(partial));
    }
    fn status(&self, so_far: &dyn std::any::Any) {
        self.0.iter().for_each(|p| p.status(so_far));
    }
}

/// fio's `--status-interval`: the whole output of the run so far, as the
/// run hands it over.
struct Status {
    outs: Vec<Out>,
    output: Option<std::path::PathBuf>,
}

impl Progress for Status {
    fn start(&self, _total: u64) {}
    fn point(&self, _label: &str) {}
    fn finish(&self) {}
    fn status(&self, so_far: &dyn std::any::Any) {
        let Some(run) = so_far.downcast_ref::<StreamRun>() else {
            return;
        };
        // With --output the file holds the latest figures until the final
        // ones replace them; without, each dump follows the last.
        let written = render(run, &self.outs)
            .and_then(|text| xferbench::output::emit(&text, self.output.as_deref()));
        if let Err(e) = written {
            eprintln!("xferbench: warning: status output: {e}");
        }
    }
}

/// fio's ETA as lines on stderr (`--eta-newline`, or `--eta=always` when
/// stderr is not a terminal, where the bar is not drawn): done, rate and
/// time left, every interval.
struct EtaLines {
    every: Duration,
    /// Each line ends in a newline; else in a carriage return, drawn over.
    newline: bool,
    at: Mutex<EtaState>,
}

struct EtaState {
    total: u64,
    label: String,
    t0: Instant,
    last: Instant,
    drawn: bool,
}

impl EtaLines {
    /// The lines fio 3.33 would print (eta.c): none unless the normal
    /// output is asked for or the outputs go to a file, and none when
    /// stdout is not a terminal unless `--eta=always` (`--eta-newline`
    /// alone forces nothing: a tool that pipes fio's output gets none).
    fn of(line: &CmdLine, outs: &[Out], quiet: bool) -> Option<EtaLines> {
        if quiet || line.eta == Eta::Never {
            return None;
        }
        let over_output = line.output.is_none() && !outs.contains(&Out::Normal);
        if over_output || (line.eta != Eta::Always && !std::io::stdout().is_terminal()) {
            return None;
        }
        let (every, newline) = match line.eta_newline {
            Some(t) => (t, true),
            None if line.eta == Eta::Always && !std::io::stderr().is_terminal() => {
                (line.eta_interval.unwrap_or(Duration::from_secs(1)), false)
            }
            None => return None,
        };
        let now = Instant::now();
        Some(EtaLines {
            every,
            newline,
            at: Mutex::new(EtaState {
                total: 0,
                label: String::new(),
                t0: now,
                last: now,
                drawn: false,
            }),
        })
    }
}

impl Progress for EtaLines {
    fn start(&self, _total: u64) {}
    fn point(&self, _label: &str) {}
    fn finish(&self) {
        let s = self.at.lock().unwrap_or_else(|e| e.into_inner());
        if s.drawn && !self.newline {
            eprintln!();
        }
    }
    fn start_bytes(&self, total: u64, label: &str) {
        let mut s = self.at.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        (s.total, s.label, s.t0, s.last) = (total, label.to_string(), now, now);
    }
    fn at(&self, done: u64) {
        let mut s = self.at.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if now.duration_since(s.last) < self.every {
            return;
        }
        s.last = now;
        s.drawn = true;
        let secs = now.duration_since(s.t0).as_secs_f64().max(1e-3);
        let rate = done as f64 / secs;
        let mut line = format!("Jobs: {}", s.label);
        if s.total > 0 {
            let left = s.total.saturating_sub(done) as f64 / rate.max(1.0);
            line.push_str(&format!(
                "[{:.1}%][{:.1}MiB/s][eta {:02}m:{:02}s]",
                done as f64 * 100.0 / s.total as f64,
                rate / (1u64 << 20) as f64,
                (left as u64) / 60,
                (left as u64) % 60
            ));
        } else {
            line.push_str(&format!(
                "[{:.1}MiB/s][{:.0}s elapsed]",
                rate / (1u64 << 20) as f64,
                secs
            ));
        }
        if self.newline {
            eprintln!("{line}");
        } else {
            eprint!("\r{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xferbench's options on a fio command line must never shadow one of
    /// fio's: a job file written for fio would change meaning.
    #[test]
    fn extras_are_not_fio_options() {
        for e in EXTRAS {
            assert!(
                xferbench::fio::job::spec(e.name).is_none(),
                "--{} is a fio job option",
                e.name
            );
            let line = cmdline::parse(&[format!("--{}", e.name)], &[]);
            assert!(line.is_err(), "--{} is one of fio's own options", e.name);
        }
    }
}
