//! Dispatch from parsed arguments to experiments and reports, and the mapping
//! of every outcome to one line on stderr and an exit code.

use crate::cli::Format;
use crate::cli::{Cli, Command, RespondArgs};
use crate::error::{Error, Result};
use crate::experiment::{curve, roundtrip, stream, suite};
use crate::progress::Bar;
use crate::report;
use crate::transport::{self, ResponderArgs};
use clap::Parser;

/// Runs the command line; returns the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return clap_error(e),
    };
    match dispatch(cli) {
        Ok(()) => 0,
        Err(e) => {
            if !matches!(e, Error::Interrupted) {
                eprintln!("xferbench: error: {e}");
            } else {
                eprintln!("xferbench: interrupted");
            }
            e.exit_code()
        }
    }
}

/// Prints clap's message as one line (help and version go to stdout as usual).
fn clap_error(e: clap::Error) -> i32 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            0
        }
        _ => {
            let text = e.render().to_string();
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments");
            let first = first.trim_start_matches("error: ");
            // Keep clap's list of valid values: it is the fix.
            let valid = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("[possible values: "))
                .map(|v| v.trim_end_matches(']'));
            match valid {
                Some(v) if !first.contains("possible values") => {
                    eprintln!("xferbench: error: {first} (valid: {v})")
                }
                _ => eprintln!("xferbench: error: {first} (see --help)"),
            }
            2
        }
    }
}

fn dispatch(cli: Cli) -> Result<()> {
    if cli.command.is_some() && (cli.quick || cli.out.is_some()) {
        return Err(Error::usage(
            "--quick and --out apply to the default suite (xferbench with no command); put them without a command",
        ));
    }
    match cli.command {
        None => default_suite(&cli),
        Some(Command::List(a)) => crate::list::run(&a),
        Some(Command::Reference(a)) => crate::reference::run(&a),
        Some(Command::Report(a)) => report_cmd(&a),
        Some(Command::Respond(a)) => respond(a),
        Some(Command::Curve(a)) => {
            report::check_writable(a.common.output.as_deref())?;
            let refs = references(&a.common.compare)?;
            let stop = crate::interrupt::install();
            let bar = Bar::new(cli.quiet);
            let (run, err) = curve::run(&a, &stop, &bar)?;
            if let Some(e @ Error::Usage(_)) = err {
                return Err(e);
            }
            let text = match a.common.effective_format() {
                Format::Table => report::curve::render(&run) + &comparison(&run, "curve", &refs)?,
                Format::Json => report::json::render(&run)?,
                Format::Csv => report::curve::csv(&run),
            };
            emit_run(&text, a.common.output.as_deref(), run.points.len(), err)
        }
        Some(Command::Stream(a)) => {
            report::check_writable(a.output.as_deref())?;
            let refs = references(&a.compare)?;
            let stop = crate::interrupt::install();
            let bar = Bar::new(cli.quiet);
            let (run, err) = stream::run(&a, &stop, &bar)?;
            if let Some(e @ Error::Usage(_)) = err {
                return Err(e);
            }
            for w in &run.warnings {
                if !cli.quiet {
                    eprintln!("xferbench: warning: {w}");
                }
            }
            let text = match a.effective_format() {
                Format::Table => {
                    let json: serde_json::Value =
                        serde_json::from_str(&report::stream::json(&run)?)
                            .map_err(|e| Error::run(format!("encoding JSON: {e}")))?;
                    report::stream::render(&run) + &comparison(&json, "stream", &refs)?
                }
                Format::Json => report::stream::json(&run)?,
                Format::Csv => report::stream::csv(&run),
            };
            emit_run(&text, a.output.as_deref(), run.points.len(), err)
        }
        Some(Command::Flowgraph(a)) => {
            report::check_writable(a.output.as_deref())?;
            let refs = references(&a.compare)?;
            let stop = crate::interrupt::install();
            let bar = Bar::new(cli.quiet);
            let (run, err) = crate::experiment::flowgraph::run(&a, &stop, &bar)?;
            if let Some(e @ Error::Usage(_)) = err {
                return Err(e);
            }
            let text = match a.effective_format() {
                Format::Table => {
                    report::flowgraph::render(&run) + &comparison(&run, "flowgraph", &refs)?
                }
                Format::Json => report::json::render(&run)?,
                Format::Csv => report::flowgraph::csv(&run),
            };
            emit_run(&text, a.output.as_deref(), run.points.len(), err)
        }
        Some(Command::Roundtrip(a)) => {
            report::check_writable(a.common.output.as_deref())?;
            let refs = references(&a.common.compare)?;
            let stop = crate::interrupt::install();
            let bar = Bar::new(cli.quiet);
            let (run, err) = roundtrip::run(&a, &stop, &bar)?;
            // A usage error found on opening a link is not a result worth writing.
            if let Some(e @ Error::Usage(_)) = err {
                return Err(e);
            }
            let format = a.common.effective_format();
            let mut text = report::render(&run, format, &a.common.stats, a.unit)?;
            if format == Format::Table {
                text += &comparison(&run, "roundtrip", &refs)?;
            }
            emit_run(&text, a.common.output.as_deref(), run.points.len(), err)
        }
    }
}

/// The datasets `--compare` names, checked before anything runs.
fn references(names: &[String]) -> Result<Vec<crate::reference::Dataset>> {
    names.iter().map(|n| crate::reference::find(n)).collect()
}

/// The comparison tables for a run's table output (empty without --compare).
fn comparison<T: serde::Serialize>(
    run: &T,
    label: &str,
    refs: &[crate::reference::Dataset],
) -> Result<String> {
    if refs.is_empty() {
        return Ok(String::new());
    }
    let value = serde_json::to_value(run).map_err(|e| Error::run(format!("encoding JSON: {e}")))?;
    let saved = report::saved::SavedRun::from_value(label, value)?;
    let r = report::bundle::Report::new(vec![saved], refs);
    Ok(format!("\n{}", r.comparison_text()))
}

/// `xferbench report`: saved runs to HTML, SVG, or tables on stdout.
fn report_cmd(a: &crate::cli::ReportArgs) -> Result<()> {
    let refs = a
        .compare
        .iter()
        .map(|n| crate::reference::find(n))
        .collect::<Result<Vec<_>>>()?;
    let runs = a
        .runs
        .iter()
        .map(|p| report::saved::SavedRun::load(p))
        .collect::<Result<Vec<_>>>()?;
    let r = report::bundle::Report::new(runs, &refs);
    if a.html.is_none() && a.svg.is_none() {
        return report::emit(&r.text(), None);
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

/// Writes a run's output, saying where partial results went if it stopped early.
fn emit_run(
    text: &str,
    output: Option<&std::path::Path>,
    points: usize,
    err: Option<Error>,
) -> Result<()> {
    report::emit(text, output)?;
    if err.is_some() {
        let to = output.map_or("stdout".to_string(), |p| p.display().to_string());
        eprintln!(
            "xferbench: partial results ({points} points, marked incomplete) written to {to}"
        );
    }
    err.map_or(Ok(()), Err)
}

fn default_suite(cli: &Cli) -> Result<()> {
    let stop = crate::interrupt::install();
    let bar = Bar::new(cli.quiet);
    let opts = suite::Options {
        quick: cli.quick,
        out: cli.out.clone().unwrap_or_else(|| suite::REPORT_DIR.into()),
    };
    let quiet = cli.quiet;
    if !quiet {
        eprintln!(
            "xferbench: default suite: round trips, latency/bandwidth curves and a file stream on every local transport, and the flowgraph sweep (about {} s); `xferbench --help` for more",
            if opts.quick { 30 } else { 70 }
        );
    }
    let note = |line: &str| {
        if !quiet {
            eprintln!("xferbench: {line}");
        }
    };
    let (outcome, err) = suite::run(&opts, &stop, &bar, &note)?;
    report::emit(&suite::summary(&outcome), None)?;
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
        crate::placement::pin_current(c)?;
    }
    let t = transport::find(&spec.name)?;
    t.respond(&ResponderArgs {
        spec,
        completion: a.completion,
        cpu: a.cpu,
    })
}
