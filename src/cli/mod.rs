//! The command line: clap's definitions of every flag, and nothing else
//! depends on clap. `main.rs` and the app layer are its only users; they
//! turn the parsed flags into the library's plain settings with `into()`.

mod args;
mod defaults;

pub use args::*;

use xferbench::error::capped;

use clap::builder::PossibleValue;
use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;
use xferbench::words::Word;

#[derive(Parser, Debug)]
#[command(
    name = "xferbench",
    version,
    about = "Measures how fast data moves: round-trip latency, one-way latency, bandwidth and request rate between two endpoints.",
    long_about = "Measures how fast data moves between two endpoints: threads, processes, pipes, sockets.\n\nWith no command, runs the default suite: the round-trip matrix and latency/bandwidth curve on every local transport and a short stream on a temporary file; prints a one-screen summary and writes xferbench-report/index.html with the JSON beside it (--quick: half the time; --out DIR: elsewhere)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// No progress bar on stderr.
    // Its place in every subcommand's help is its display order, which
    // clap counts past the subcommands; pinned where it stood before
    // `fio` joined them, so no help text moved.
    #[arg(short, long, global = true, display_order = 13)]
    pub quiet: bool,
    /// Default suite: half the sizes and time.
    #[arg(long)]
    pub quick: bool,
    /// Default suite: folder for the report and JSON files.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

impl Cli {
    /// Parses this process's command line; on an error or `--help`, prints
    /// what clap says (an error as one line on stderr) and gives the exit
    /// code to leave with.
    pub fn parse_or_exit_code() -> Result<Cli, i32> {
        Cli::try_parse().map_err(clap_error)
    }

    /// Parses `argv` (the program name first) as the command line would be
    /// parsed, for callers that build one (the suite, tests).
    pub fn parse_argv<I, T>(argv: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        Cli::try_parse_from(argv)
    }
}

/// Teaches clap the words of the enums the library defines (`words.rs`),
/// each with its variant's doc comment as help, as `#[derive(ValueEnum)]`
/// would have given: a value parser of the CLI's own (the enums and clap's
/// traits both live in other crates), used as `value_parser = word::<T>()`.
#[derive(Clone)]
pub struct WordParser<T>(std::marker::PhantomData<T>);

/// The parser of `T`'s words.
pub fn word<T>() -> WordParser<T> {
    WordParser(std::marker::PhantomData)
}

impl<T: Word + Clone + Send + Sync + 'static> clap::builder::TypedValueParser for WordParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        // The words through clap's own parser: its errors, its suggestions.
        let words =
            clap::builder::PossibleValuesParser::new(T::VARIANTS.iter().map(|v| possible(*v)));
        let w = words.parse_ref(cmd, arg, value)?;
        Ok(*T::VARIANTS
            .iter()
            .find(|v| v.word() == w)
            .expect("the parser accepts only these words"))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(T::VARIANTS.iter().map(|v| possible(*v))))
    }
}

/// One word as clap shows it, with its doc comment as help.
fn possible<T: Word>(v: T) -> PossibleValue {
    let value = PossibleValue::new(v.word());
    match value_help(v.doc()) {
        Some(help) => value.help(help),
        None => value,
    }
}

/// A doc comment as clap's derive turns it into a value's help: the first
/// paragraph on one line, without its closing period; none when empty.
fn value_help(doc: &str) -> Option<String> {
    let lines: Vec<&str> = doc
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        return None;
    }
    let mut help = lines.join(" ");
    if help.ends_with('.') && !help.ends_with("..") {
        help.pop();
    }
    Some(help)
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Round-trip latency matrix: requests of each --in size, replies of each --out size.
    Roundtrip(Box<RoundtripArgs>),
    /// Latency and bandwidth over message size (BIP, NetPIPE, OSU): one-way time, MB/s, a model fit.
    Curve(Box<CurveArgs>),
    /// Throughput of fio-style jobs: workers on files, block and character devices (DMA channels) or transports; fio job files, verify, poll vs interrupt, block-size sweeps.
    Stream(Box<StreamArgs>),
    /// fio's own command line, run as fio runs it: `xferbench fio --name=j --rw=read --size=1m --filename=F`, `xferbench fio --showcmd job.fio`, `xferbench fio --help` (also as a program named fio: a symlink).
    #[command(disable_help_flag = true)]
    Fio(FioArgs),
    /// Re-renders saved results (JSON) as an HTML report, SVG plots or tables, optionally beside published figures (--compare).
    Report(ReportArgs),
    /// Did it get slower? Two runs of one experiment (files, or baselines saved with --save-baseline), point by point: change, 99% interval, verdict; exit 1 on a regression.
    Compare(CompareArgs),
    /// Request rate under background CPU and memory load (rk11perf), and open-loop latency at offered rates.
    // A cell is timed by --cell-time: the shared --samples and --duration
    // stay parsed (to refuse them with that hint) but out of the help.
    // Its --warmup is a count per client and cell, with load's own default.
    #[command(
        mut_arg("samples", |a| a.hide(true)),
        mut_arg("duration", |a| a.hide(true)),
        mut_arg("warmup", |a| a.help(args::load_warmup_help()))
    )]
    Load(Box<LoadArgs>),
    /// Every pair of MPI ranks (mpiGraph): N × N latency and bandwidth matrices, the slow node or link found and re-tested, a health gate. Run under mpirun -n N or srun.
    Mesh(Box<MeshArgs>),
    /// Streaming-runtime cost (the SDR runtime benchmark): source → M saxpy blocks → sink on N cores, per scheduler, against the kernel alone.
    Flowgraph(Box<FlowgraphArgs>),
    /// Lists every transport with its buffer and completion modes, limits, and whether it works here.
    List(ListArgs),
    /// This machine's data paths and their ceilings: memory copy and the core-to-core round trip (measured), every PCIe link (trained vs capable, payload a direction, NUMA node), NICs, GPUs, disks.
    Limits(LimitsArgs),
    /// Runs the responder for initiators on other machines (-t tcp://HOST:PORT); binds 127.0.0.1 unless told otherwise.
    Serve(ServeArgs),
    /// Published figures to compare with (--compare): Vollo IA420F round trips, BIP on Myrinet, rk11perf, Xilinx XDMA, qsdr flowgraphs.
    Reference(ReferenceArgs),
    /// Device plugins (include/xferbench/plugin.h): `plugin check FILE.so` runs the conformance checks a plugin author needs.
    Plugin(PluginArgs),
    /// Runs a responder (started by xferbench itself; not for direct use).
    #[command(name = "__respond", hide = true)]
    Respond(RespondArgs),
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
            let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
            let first = lines.next().unwrap_or("invalid arguments");
            let first = first.trim_start_matches("error: ");
            // "…were not provided:" names the arguments on the next line.
            let joined;
            let first = match (first.ends_with(':'), lines.next()) {
                (true, Some(what)) => {
                    joined = format!("{first} {what}");
                    joined.as_str()
                }
                _ => first,
            };
            // Keep clap's list of valid values: it is the fix.
            let valid = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("[possible values: "))
                .map(|v| v.trim_end_matches(']'));
            match valid {
                Some(v) if !first.contains("possible values") => {
                    eprintln!(
                        "xferbench: error: {}",
                        capped(&format!("{first} (valid: {v})"))
                    )
                }
                _ => eprintln!(
                    "xferbench: error: {}",
                    capped(&format!("{first} (see --help)"))
                ),
            }
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_enums_give_clap_their_words_and_first_doc_paragraph() {
        use clap::builder::TypedValueParser;
        use xferbench::measure::stats::Stat;
        let stats: Vec<PossibleValue> = word::<Stat>().possible_values().unwrap().collect();
        let names: Vec<&str> = stats.iter().map(PossibleValue::get_name).collect();
        assert_eq!(names[7..9], ["p999", "p9999"]);
        assert_eq!(
            possible(Stat::Mean)
                .get_help()
                .map(|h| h.to_string())
                .as_deref(),
            Some("Arithmetic mean")
        );
        let memcopy = possible(xferbench::measure::loadgen::LoadMode::Memcopy);
        assert_eq!(
            memcopy.get_help().unwrap().to_string(),
            "Copies between buffers twice the last-level cache: maximal contention for caches and memory bandwidth"
        );
        assert_eq!(value_help(" One.\n\n Two.\n").as_deref(), Some("One"));
        assert_eq!(value_help(" Etc..\n").as_deref(), Some("Etc.."));
    }

    /// The settings' `Default` is what the command line gives with no
    /// flags. The texts clap shows and parses are written from those
    /// defaults (`defaults.rs`), so this fails where a text does not parse
    /// back to its value, or a flag keeps a default of its own.
    #[test]
    fn defaults_of_the_settings_are_the_command_lines() {
        let parse = |line: &str| {
            Cli::parse_argv(line.split_whitespace())
                .expect("parses")
                .command
                .expect("a command")
        };
        use xferbench::options::*;
        match parse("xferbench roundtrip") {
            Command::Roundtrip(a) => {
                assert_eq!(RoundtripConfig::from(*a), RoundtripConfig::default())
            }
            _ => unreachable!(),
        }
        match parse("xferbench curve") {
            Command::Curve(a) => assert_eq!(CurveConfig::from(*a), CurveConfig::default()),
            _ => unreachable!(),
        }
        match parse("xferbench load") {
            Command::Load(a) => assert_eq!(LoadConfig::from(*a), LoadConfig::default()),
            _ => unreachable!(),
        }
        match parse("xferbench flowgraph") {
            Command::Flowgraph(a) => {
                assert_eq!(FlowgraphConfig::from(*a), FlowgraphConfig::default())
            }
            _ => unreachable!(),
        }
        match parse("xferbench stream") {
            Command::Stream(a) => assert_eq!(StreamConfig::from(*a), StreamConfig::default()),
            _ => unreachable!(),
        }
        // A budget given replaces the default's whole (it is one value):
        // --duration on roundtrip leaves no sample count behind, and
        // curve's --samples counts a CUDA copy curve's trials too.
        match parse("xferbench roundtrip --duration 1s") {
            Command::Roundtrip(a) => assert_eq!(
                RoundtripConfig::from(*a).common.amount,
                Some(Amount::Time(std::time::Duration::from_secs(1)))
            ),
            _ => unreachable!(),
        }
        match parse("xferbench curve --samples 7") {
            Command::Curve(a) => {
                let c = CurveConfig::from(*a);
                assert_eq!(c.common.amount, Some(Amount::Samples(7)));
                assert_eq!(c.copy_amount, Amount::Samples(7));
            }
            _ => unreachable!(),
        }
        match parse("xferbench serve") {
            Command::Serve(a) => assert_eq!(
                xferbench::command::serve::ServeConfig::from(a),
                xferbench::command::serve::ServeConfig::default()
            ),
            _ => unreachable!(),
        }
        match parse("xferbench mesh") {
            Command::Mesh(a) => assert_eq!(MeshConfig::from(*a), MeshConfig::default()),
            _ => unreachable!(),
        }
        use xferbench::command::{limits, list, plugin_check};
        match parse("xferbench list") {
            Command::List(a) => {
                assert_eq!(list::ListOptions::from(a), list::ListOptions::default())
            }
            _ => unreachable!(),
        }
        match parse("xferbench limits") {
            Command::Limits(a) => assert_eq!(
                limits::LimitsOptions::from(a),
                limits::LimitsOptions::default()
            ),
            _ => unreachable!(),
        }
        match parse("xferbench plugin check x.so") {
            Command::Plugin(PluginArgs {
                action: PluginAction::Check(a),
            }) => assert_eq!(
                plugin_check::CheckOptions::from(a),
                plugin_check::CheckOptions {
                    path: "x.so".into(),
                    ..Default::default()
                }
            ),
            _ => unreachable!(),
        }
        match parse("xferbench compare a b") {
            Command::Compare(a) => assert_eq!(
                xferbench::compare::Settings::from(&a),
                xferbench::compare::Settings::default()
            ),
            _ => unreachable!(),
        }
        // load's --warmup, given, is recorded in `common`; not given, the
        // load uses its own count and the record stays empty.
        match parse("xferbench load --warmup 5") {
            Command::Load(a) => {
                let c = LoadConfig::from(*a);
                let own = LoadConfig::default().cell_warmup;
                assert_eq!((c.common.warmup, c.cell_warmup), (Some(5), own));
            }
            _ => unreachable!(),
        }
    }

    /// `load --warmup` says what it is for load, with load's default.
    #[test]
    fn load_has_its_own_warmup_help() {
        use clap::CommandFactory;
        let mut cli = Cli::command();
        let help = |cli: &mut clap::Command, sub: &str| {
            cli.find_subcommand_mut(sub)
                .expect("a subcommand")
                .render_long_help()
                .to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        let load = help(&mut cli, "load");
        let default = xferbench::options::LoadConfig::default().cell_warmup;
        assert!(load.contains("each client (--inflight)"), "{load}");
        assert!(load.contains(&format!("Default: {default} ")), "{load}");
        assert!(!load.contains("up to 1000"), "{load}");
        assert!(help(&mut cli, "roundtrip").contains("up to 1000 within 0.5 s"));
    }
}
