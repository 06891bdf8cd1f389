//! Dispatch from parsed arguments to experiments and reports, and the mapping
//! of every outcome to one line on stderr and an exit code.

pub mod channel;
pub mod checkpoint;
pub mod fio;
pub mod interrupt;
pub mod parent;
pub mod progress;
pub mod suite;
pub mod supervise;

use crate::app::progress::Bar;
use crate::cli::{Cli, Command, RespondArgs};
use std::io::IsTerminal;
use xferbench::error::{Error, Result};
use xferbench::experiment::{curve, roundtrip, stream};
use xferbench::format::Format;
use xferbench::options::{
    CurveConfig, FlowgraphConfig, LoadConfig, Output, RoundtripConfig, StreamConfig,
};
use xferbench::report::{self, Render};
use xferbench::transport::{self, ResponderArgs};

/// Runs the command line; returns the exit code. A command that measures
/// runs in a child process this one supervises, so a device that crashes
/// it still leaves its results (see [`parent`]); there, the command runs on
/// a worker thread watched from the main one, so a device call that never
/// returns cannot hang the process (see [`supervise`]).
pub fn main() -> i32 {
    // First: while this is the only thread (it edits the environment).
    let measuring_child = channel::attach();
    if fio::started_as_fio() {
        return fio::main(std::env::args_os().skip(1).collect(), false);
    }
    let cli = match Cli::parse_or_exit_code() {
        Ok(c) => c,
        Err(code) => return code,
    };
    if !cli.quick
        && cli.out.is_none()
        && let Some(Command::Fio(a)) = cli.command
    {
        return fio::main(a.args, cli.quiet);
    }
    if !measuring_child
        && let Some(kind) = parent::wanted(&cli)
        && let Some(code) = parent::run(kind)
    {
        return code;
    }
    progress::show_layouts();
    let code = supervise::run(move || {
        let result = dispatch(cli);
        // Said before MPI is finalised: the other ranks may leave as soon
        // as it is (a refusal exits 2), and mpirun then ends this rank.
        let code = match result {
            Ok(()) => 0,
            Err(e) => {
                if e.to_string().is_empty() {
                    // Said already (another MPI rank's refusal).
                } else if !matches!(e, Error::Interrupted) {
                    eprintln!(
                        "xferbench: error: {}",
                        xferbench::error::capped(&e.to_string())
                    );
                } else {
                    eprintln!("xferbench: interrupted");
                }
                e.exit_code()
            }
        };
        xferbench::transport::mpi::shutdown();
        code
    });
    // A process group the run started and did not end (an exec program
    // whose job was not stopped on the way out) would outlive it, and the
    // parent-death signal would end only its leader.
    xferbench::measure::loadgen::kill_all();
    channel::done(code);
    code
}

/// How long an output that is a FIFO waits for its reader: the
/// command's `--timeout` (10 s for a command without one).
fn reader_wait(cmd: Option<&Command>) -> std::time::Duration {
    match cmd {
        Some(Command::Roundtrip(a)) => a.common.timeout,
        Some(Command::Curve(a)) => a.common.timeout,
        Some(Command::Load(a)) => a.common.timeout,
        Some(Command::Mesh(a)) => a.timeout,
        Some(Command::Flowgraph(a)) => a.timeout,
        Some(Command::Stream(a)) => a.timeout,
        _ => std::time::Duration::from_secs(10),
    }
}

fn dispatch(cli: Cli) -> Result<()> {
    xferbench::output::wait_for_readers(
        reader_wait(cli.command.as_ref()),
        Some(interrupt::requested),
    );
    if cli.command.is_some() && (cli.quick || cli.out.is_some()) {
        return Err(Error::usage(
            "--quick and --out apply to the default suite (xferbench with no command); put them without a command",
        ));
    }
    match cli.command {
        None => default_suite(&cli),
        Some(Command::List(a)) => xferbench::command::list::run(&a.into()),
        Some(Command::Limits(a)) => xferbench::command::limits::run(&a.into()),
        Some(Command::Plugin(a)) => match a.action {
            crate::cli::PluginAction::Check(c) => {
                // A signal ends the check with its verdicts so far (the
                // watch writes them if a plugin call does not return).
                crate::app::interrupt::install();
                xferbench::command::plugin_check::run(&c.into())
            }
        },
        Some(Command::Reference(a)) => xferbench::command::reference::run(&a.action.into()),
        Some(Command::Report(a)) => report_cmd(&a),
        Some(Command::Compare(a)) => compare_cmd(&a),
        Some(Command::Serve(a)) => xferbench::command::serve::run(&a.into(), cli.quiet),
        Some(Command::Respond(a)) => respond(a),
        // Run by `main` before dispatch (fio's exit codes are its own);
        // here only with --quick or --out, refused above.
        Some(Command::Fio(_)) => Ok(()),
        Some(Command::Curve(a)) if a.pairs.is_some() => {
            let c: CurveConfig = (*a).into();
            ranked(&c.common.out, cli.quiet, c.common.timeout, |stop, bar| {
                xferbench::experiment::mesh::pairs(&c, stop, bar)
            })
            .map(drop)
        }
        Some(Command::Curve(a)) => {
            let c: CurveConfig = (*a).into();
            measured(&c.common.out, cli.quiet, |stop, bar| {
                curve::run(&c, stop, bar)
            })
        }
        Some(Command::Stream(a)) => {
            let c: StreamConfig = (*a).into();
            measured(&c.out, cli.quiet, |stop, bar| {
                let (run, err) = stream::run(&c, stop, bar)?;
                if !cli.quiet {
                    for w in &run.warnings {
                        eprintln!("xferbench: warning: {}", xferbench::error::inert(w));
                    }
                }
                Ok((run, err))
            })
        }
        Some(Command::Flowgraph(a)) => {
            let c: FlowgraphConfig = (*a).into();
            measured(&c.out, cli.quiet, |stop, bar| {
                xferbench::experiment::flowgraph::run(&c, stop, bar)
            })
        }
        Some(Command::Load(a)) => {
            let c: LoadConfig = (*a).into();
            measured(&c.common.out, cli.quiet, |stop, bar| {
                xferbench::experiment::load::run(&c, stop, bar)
            })
        }
        Some(Command::Mesh(a)) => mesh(&(*a).into(), cli.quiet),
        Some(Command::Roundtrip(a)) => {
            let c: RoundtripConfig = (*a).into();
            measured(&c.common.out, cli.quiet, |stop, bar| {
                roundtrip::run(&c, stop, bar)
            })
        }
    }
}

/// What every measuring command does around its experiment: checks that
/// the output can be written and the `--compare` datasets exist before
/// anything runs; runs with Ctrl-C handling, a progress bar and
/// checkpoints (written if a device hangs); renders in the format asked
/// (tables followed by the comparisons); writes, saying where partial
/// results went.
fn measured<P: 'static, X: 'static>(
    out: &Output,
    quiet: bool,
    run: impl FnOnce(
        &std::sync::Arc<std::sync::atomic::AtomicBool>,
        &dyn xferbench::experiment::Progress,
    ) -> Result<(xferbench::result::Run<P, X>, Option<Error>)>,
) -> Result<()>
where
    xferbench::result::Run<P, X>: Render + Clone + Send + serde::Serialize,
{
    xferbench::output::check_writable(out.output.as_deref())?;
    let refs = references(&out.compare)?;
    let base = baseline_first(out)?;
    let stop = crate::app::interrupt::install();
    let bar = Bar::new(quiet);
    let kept = checkpoint::Checkpoints::new(&bar, out);
    let (run, err) = run(&stop, &kept)?;
    // A usage error found on opening a link is not a result worth writing.
    if let Some(e @ Error::Usage { .. }) = err {
        return Err(e);
    }
    if !xferbench::transport::guard::claim() {
        // The watch wrote the run already and is ending the process.
        loop {
            std::thread::park();
        }
    }
    let format = out.effective_format();
    let mut text = run.render(format)?;
    if format == Format::Table && !refs.is_empty() {
        text += &comparison(&run.json()?, &refs)?;
    }
    emit_run(
        &text,
        out.output.as_deref(),
        run.points(),
        run.complete,
        err,
    )?;
    baselines(out, base, &run.json()?)
}

/// A baseline that is not there, or a bad name, fails before the run.
fn baseline_first(out: &Output) -> Result<Option<xferbench::result::saved::SavedRun>> {
    if let Some(name) = &out.save_baseline {
        xferbench::compare::baseline::check_name(name)?;
    }
    if let (Some(o), Some(name)) = (out.output.as_deref(), &out.baseline) {
        let file = xferbench::compare::baseline::path(name)?;
        xferbench::output::refuse_inputs(o, "-o", &[(file, format!("the baseline {name}"))])?;
    }
    out.baseline
        .as_deref()
        .map(xferbench::compare::baseline::load)
        .transpose()
}

/// `--save-baseline NAME` keeps a complete run under NAME; `--baseline NAME`
/// compares the run with NAME as `xferbench compare` does (on stdout after
/// the results, or on stderr when stdout carries JSON or CSV) and fails on
/// a regression.
fn baselines(
    out: &Output,
    base: Option<xferbench::result::saved::SavedRun>,
    json: &str,
) -> Result<()> {
    if out.save_baseline.is_none() && base.is_none() {
        return Ok(());
    }
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| Error::run_from("reading back the result", e))?;
    let mut verdict = Ok(());
    if let Some(base) = base {
        let new = xferbench::result::saved::SavedRun::from_value("this run", value.clone())?;
        let c = xferbench::compare::compare(&base, &new, &xferbench::compare::Settings::default())?;
        let to_stdout = out.output.is_some() || out.effective_format() == Format::Table;
        let colour = if to_stdout {
            colour_for(std::io::stdout().is_terminal())
        } else {
            colour_for(std::io::stderr().is_terminal())
        };
        let text = xferbench::compare::render::render(
            &c,
            xferbench::compare::render::CompareFormat::Table,
            colour,
        )?;
        if to_stdout {
            xferbench::output::emit(&format!("\n{text}"), None)?;
        } else {
            eprint!("{text}");
        }
        verdict = gate(&c);
    }
    if let Some(name) = &out.save_baseline {
        if value.get("complete").and_then(serde_json::Value::as_bool) == Some(false) {
            eprintln!("xferbench: not saved as baseline {name}: the run is incomplete");
        } else {
            let p = xferbench::compare::baseline::save(name, json)?;
            eprintln!("xferbench: baseline {name} saved to {}", p.display());
        }
    }
    verdict
}

/// Colour only on a terminal, and never with NO_COLOR set.
fn colour_for(terminal: bool) -> bool {
    terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Exit 1 when the comparison failed, naming the first regression.
fn gate(c: &xferbench::compare::Comparison) -> Result<()> {
    if !c.failed {
        return Ok(());
    }
    let first = c
        .rows
        .iter()
        .find(|r| r.gates && r.verdict != xferbench::compare::method::Verdict::NoChange)
        .map(|r| {
            format!(
                ": first, {} of {} ({} {:+.1}%)",
                r.stat.name(),
                r.point,
                r.verdict.name(),
                r.change.change * 100.0
            )
        })
        .unwrap_or_default();
    Err(Error::run(format!(
        "{} regressed, {} inconclusive{}{}",
        c.tally.regressed,
        c.tally.inconclusive,
        if c.settings.strict { " (--strict)" } else { "" },
        first
    )))
}

/// `xferbench compare BASE NEW`.
fn compare_cmd(a: &crate::cli::CompareArgs) -> Result<()> {
    use xferbench::compare::{baseline, render};
    xferbench::output::check_writable(a.output.as_deref())?;
    if let Some(out) = a.output.as_deref() {
        let inputs: Vec<_> = [&a.base, &a.new]
            .into_iter()
            .map(|arg| (baseline::source(arg), format!("the run {arg} compared")))
            .collect();
        xferbench::output::refuse_inputs(out, "-o", &inputs)?;
    }
    let base = baseline::resolve(&a.base)?;
    let new = baseline::resolve(&a.new)?;
    let settings = xferbench::compare::Settings::from(a);
    let c = xferbench::compare::compare(&base, &new, &settings)?;
    let colour = a.output.is_none() && colour_for(std::io::stdout().is_terminal());
    xferbench::output::emit(&render::render(&c, a.format, colour)?, a.output.as_deref())?;
    gate(&c)
}

/// `mesh`: every rank measures, rank 0 writes; a health gate that fails
/// makes the exit status 1 after the results are written.
fn mesh(c: &xferbench::options::MeshConfig, quiet: bool) -> Result<()> {
    let run = ranked(&c.out, quiet, c.timeout, |stop, bar| {
        xferbench::experiment::mesh::run(c, stop, bar)
    })?;
    let Some(run) = run else { return Ok(()) };
    if !quiet {
        let (transient, kept): (Vec<_>, Vec<_>) = run
            .extra
            .suspects
            .iter()
            .partition(|s| s.confirmed == Some(false));
        for s in kept {
            let verdict = if s.confirmed == Some(true) {
                " (confirmed by re-test)"
            } else {
                ""
            };
            eprintln!("xferbench: suspect: {}{verdict}", s.line);
        }
        if !transient.is_empty() {
            eprintln!(
                "xferbench: {} more suspect(s) not confirmed by re-test (transient), listed with the results",
                transient.len()
            );
        }
    }
    let h = &run.extra.health;
    if h.passed {
        return Ok(());
    }
    Err(Error::run(format!(
        "health gate failed for {} pair(s){}: {}{}",
        h.failing.len(),
        if h.failing_ranks.is_empty() {
            String::new()
        } else {
            format!(" (every pair of rank {:?})", h.failing_ranks)
        },
        h.failing.first().map_or("", String::as_str),
        if h.failing.len() > 1 {
            "; the results list them all"
        } else {
            ""
        }
    )))
}

/// What the MPI commands do around their experiment: every rank runs it;
/// rank 0 writes the results (returned for a last look; its checkpoint
/// after each round, if it cannot finish by itself); the others write
/// nothing. A run that ended early (a rank stalled or left, Ctrl-C) is
/// written and then the whole job is aborted, since MPI cannot finish
/// around a rank that no longer answers.
fn ranked<P: 'static, X: 'static>(
    out: &Output,
    quiet: bool,
    timeout: std::time::Duration,
    run: impl FnOnce(
        &std::sync::Arc<std::sync::atomic::AtomicBool>,
        &dyn xferbench::experiment::Progress,
    ) -> Result<Option<(xferbench::result::Run<P, X>, Option<Error>)>>,
) -> Result<Option<xferbench::result::Run<P, X>>>
where
    xferbench::result::Run<P, X>: Render + Clone + Send + serde::Serialize,
{
    use xferbench::transport::mpi;
    let root = xferbench::experiment::mesh::launcher_rank().is_none_or(|r| r == 0);
    // Names are checked on every rank, so a bad one stops them all alike.
    for name in [&out.save_baseline, &out.baseline].into_iter().flatten() {
        xferbench::compare::baseline::check_name(name)?;
    }
    let mut base = None;
    if root {
        xferbench::output::check_writable(out.output.as_deref())?;
        base = baseline_first(out)?;
    }
    let stop = crate::app::interrupt::install();
    let bar = Bar::new(quiet || !root);
    let kept = checkpoint::Checkpoints::<P, X>::new(&bar, out);
    let (result, err) = match run(&stop, &kept) {
        Ok(Some(r)) => r,
        Ok(None) => return Ok(None),
        Err(e) => {
            let Some(rank) = mpi::rank().filter(|&r| r != 0) else {
                return Err(e);
            };
            if !e.to_string().is_empty() {
                eprintln!("xferbench: rank {rank}: {e}");
            }
            if matches!(e, Error::Usage { .. }) {
                // Every rank agreed to stop: MPI can finish normally.
                return Err(Error::usage(""));
            }
            // A signal sent to this rank alone (not the launcher ending
            // the job): rank 0 hears it and writes, naming this rank.
            if let Some(sig) = interrupt::signal().filter(|_| !interrupt::from_parent()) {
                mpi::leave(sig);
            }
            // Rank 0 writes what it has and ends the job; wait for it. An
            // exit from here would make the launcher end rank 0 before it
            // has written, so the watch waits too (as for a run writing).
            let _ = xferbench::transport::guard::claim();
            std::thread::sleep(timeout * 3 + std::time::Duration::from_secs(10));
            mpi::abort(e.exit_code())
        }
    };
    if !xferbench::transport::guard::claim() {
        // The watch wrote the checkpoint already and is ending the process.
        loop {
            std::thread::park();
        }
    }
    let text = result.render(out.effective_format())?;
    match err {
        Some(e) => {
            let code = e.exit_code();
            if let Err(e) = emit_run(
                &text,
                out.output.as_deref(),
                result.points(),
                false,
                Some(e),
            ) {
                eprintln!("xferbench: error: {e}");
            }
            mpi::abort(code)
        }
        None => {
            xferbench::output::emit(&text, out.output.as_deref())?;
            baselines(out, base, &result.json()?)?;
            Ok(Some(result))
        }
    }
}

/// The datasets `--compare` names, checked before anything runs.
fn references(names: &[String]) -> Result<Vec<xferbench::reference::Dataset>> {
    names
        .iter()
        .map(|n| xferbench::reference::find(n))
        .collect()
}

/// The comparison tables for a run's table output, from its JSON.
fn comparison(json: &str, refs: &[xferbench::reference::Dataset]) -> Result<String> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| Error::run_from("reading JSON back", e))?;
    let saved = xferbench::result::saved::SavedRun::from_value("this run", value)?;
    let r = report::bundle::Report::new(vec![saved], refs);
    Ok(format!("\n{}", r.comparison_text()))
}

/// `xferbench report`: saved runs to HTML, SVG, or tables on stdout.
fn report_cmd(a: &crate::cli::ReportArgs) -> Result<()> {
    let refs = references(&a.compare)?;
    if let Some(dir) = &a.html {
        let inputs: Vec<_> = a
            .runs
            .iter()
            .map(|p| (p.clone(), format!("the run {} reported", p.display())))
            .collect();
        xferbench::output::refuse_inputs(&dir.join("index.html"), "--html", &inputs)?;
    }
    let runs = a
        .runs
        .iter()
        .map(|p| xferbench::result::saved::SavedRun::load(p))
        .collect::<Result<Vec<_>>>()?;
    let r = report::bundle::Report::new(runs, &refs);
    for w in &r.warnings {
        eprintln!("xferbench: warning: {}", xferbench::error::inert(w));
    }
    if a.html.is_none() && a.svg.is_none() {
        return xferbench::output::emit(&r.text(), None);
    }
    if let Some(dir) = &a.svg {
        let files = r.write_svgs(dir)?;
        eprintln!(
            "xferbench: {} SVG files written to {}",
            files.len(),
            dir.display()
        );
    }
    if let Some(dir) = &a.html {
        let argv: Vec<String> = std::env::args().skip(1).collect();
        let path = r.write_html(dir, &a.title, format!("xferbench {}", argv.join(" ")))?;
        eprintln!("xferbench: report written to {}", path.display());
    }
    Ok(())
}

/// Writes a run's output, saying where partial results went if it stopped
/// early; returns the error that stopped it (or failed it after every point,
/// as a device's close that hung).
fn emit_run(
    text: &str,
    output: Option<&std::path::Path>,
    points: usize,
    complete: bool,
    err: Option<Error>,
) -> Result<()> {
    xferbench::output::emit(text, output)?;
    if !complete {
        let to = output.map_or("stdout".to_string(), |p| p.display().to_string());
        eprintln!(
            "xferbench: partial results ({points} points, marked incomplete) written to {to}"
        );
    }
    err.map_or(Ok(()), Err)
}

fn default_suite(cli: &Cli) -> Result<()> {
    let stop = crate::app::interrupt::install();
    let bar = Bar::new(cli.quiet);
    let opts = suite::Options {
        quick: cli.quick,
        out: cli.out.clone().unwrap_or_else(|| suite::REPORT_DIR.into()),
    };
    let quiet = cli.quiet;
    if !quiet {
        eprintln!(
            "xferbench: default suite: round trips, latency/bandwidth curves and a file stream on every local transport, and the flowgraph sweep (about {} s); `xferbench --help` for more",
            if opts.quick { 35 } else { 70 }
        );
    }
    let note = |line: &str| {
        if !quiet {
            eprintln!("xferbench: {line}");
        }
    };
    let (outcome, err) = suite::run(&opts, &stop, &bar, &note)?;
    xferbench::output::emit(&suite::summary(&outcome), None)?;
    if err.is_some() {
        eprintln!(
            "xferbench: partial results (marked incomplete) written to {}",
            opts.out.display()
        );
    }
    err.map_or(Ok(()), Err)
}

/// The child side of a process transport: pin, then serve until told to stop.
fn respond(a: RespondArgs) -> Result<()> {
    let spec = a
        .spec
        .0
        .into_iter()
        .next()
        .ok_or_else(|| Error::usage("__respond needs --spec"))?;
    if let Some(c) = a.cpu {
        xferbench::measure::placement::pin_current(c)?;
    }
    let t = transport::find(&spec.name)?;
    t.respond(&ResponderArgs {
        spec,
        completion: a.completion,
        cpu: a.cpu,
    })
}
