//! fio's command line, `fio [options] [job options] [job files]`, read as
//! fio 3.33 reads it (init.c's `parse_cmd_line`), so that a command line
//! written for fio runs unchanged:
//!
//! - every job option as `--opt=value`, `--opt value`, or bare for a
//!   switch; one dash does as well as two (`-rw=read`, fio's
//!   `getopt_long_only`), and a name may be shortened while it names one
//!   option (`--runt=10`). What is a job option is the option table's
//!   decision ([`crate::job::spec()`]), the one the job-file parser uses;
//! - `--name=NAME` starts a job; the options before the first `--name`
//!   (and after `--name=global`) are global: the defaults of the jobs that
//!   follow, and of the first job file, whose own options win over them;
//! - the other words are job files, run after the command line's jobs, one
//!   after the other; `-` is standard input;
//! - fio's own options (`--showcmd`, `--output-format`, …) and the caller's
//!   ([`Extra`]: xferbench's `--map`…), each by name.
//!
//! What the options ask for is returned as data ([`CmdLine`]); running the
//! jobs, and printing what they measured, is the caller's.

use crate::error::{Error, Result};
use crate::job::spec::{Effect, Kind, Spec};
use crate::jobfile::{self, Builder, JobFile, Shown};
use serde::Serialize;
use std::time::Duration;

/// The fio whose command line, output and files xferbench's fio mode
/// follows: its `--version` says so first, for scripts that check it.
pub const FIO_VERSION: &str = "fio-3.33";

/// `fio --version`: fio's form, saying on the same line that it is
/// xferbench (a script matching `fio-3` still does).
pub fn version() -> String {
    format!("{FIO_VERSION} (xferbench {})", env!("CARGO_PKG_VERSION"))
}

/// How an option takes its value (getopt's `has_arg`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    /// A switch: `--showcmd`.
    Nothing,
    /// `--opt=VALUE` or `--opt VALUE`.
    Value,
    /// `--opt` or `--opt=VALUE` (never the next word).
    Optional,
}

/// An option of the program around the parser that a fio command line may
/// carry beside fio's (xferbench's `--map OLD=NEW`): returned as given, in
/// [`CmdLine::extras`], for the caller to act on.
#[derive(Clone, Copy, Debug)]
pub struct Extra {
    pub name: &'static str,
    pub takes: Takes,
    /// `--help`'s line.
    pub help: &'static str,
}

/// The jobs a command line defines: its own sections, then its job files.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Jobs {
    /// The command line's sections in order: the options before the first
    /// `--name` (name None), then each `--name=NAME` with the options after
    /// it (`--name=global` sets global options again, for the jobs after
    /// it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sections: Vec<CmdSection>,
    /// The job files, in order; `-` is standard input.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<JobSource>,
    /// `--section NAME`: only these jobs run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub only: Vec<String>,
    /// `--readonly`: jobs that write or trim are refused, and no file is
    /// created or grown.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub readonly: bool,
}

/// One `--name` of a command line and the options after it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CmdSection {
    /// The job's name; None for the options before any `--name`.
    pub name: Option<String>,
    /// Where its `--name` stands among the arguments (1 for the first):
    /// what tells two jobs of one name apart, as a job file's line does.
    #[serde(skip)]
    pub at: usize,
    /// (option as typed, value; None for a bare switch).
    pub options: Vec<(String, Option<String>)>,
}

impl CmdSection {
    /// Whether its options are global ones (before any `--name`, or after
    /// `--name=global`; fio takes any name starting `global` as it).
    pub fn global(&self) -> bool {
        self.name.as_deref().is_none_or(|n| n.starts_with("global"))
    }
}

/// A job file named on the command line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobSource {
    /// Its path, or `-` for standard input.
    pub path: String,
    /// The text of one read already (standard input, which can be read
    /// once); a file is read when the jobs are loaded.
    #[serde(skip)]
    pub text: Option<String>,
}

impl JobSource {
    fn text(&self) -> Result<String> {
        match &self.text {
            Some(t) => Ok(t.clone()),
            None => jobfile::read_job_file(std::path::Path::new(&self.path)),
        }
    }
}

impl Jobs {
    /// The jobs, as fio defines them: the command line's sections (their
    /// globals the defaults of every job after them), then the first job
    /// file with the same globals, then each later file on its own (fio
    /// starts each later file from its defaults again) after a stonewall;
    /// `overrides` apply to every job last.
    pub fn load(&self, overrides: &[(String, Option<String>)]) -> Result<JobFile> {
        let env = |k: &str| std::env::var(k).ok();
        let mut b = Builder::new(overrides);
        self.feed(&mut b, true)?;
        let mut files = Vec::new();
        match self.files.split_first() {
            None => {
                if !self.sections.iter().any(|s| !s.global()) {
                    return Err(Error::usage(
                        "no job defined: give --name=NAME before a job's options (fio --name=job --rw=read --size=1m --filename=FILE), or a job file",
                    ));
                }
                files.push(("command line".to_string(), b.finish("command line")?));
            }
            Some((first, rest)) => {
                b.text(&first.text()?, &first.path, &env)?;
                files.push((first.path.clone(), b.finish(&first.path)?));
                for f in rest {
                    let mut b = Builder::new(overrides);
                    b.text(&f.text()?, &f.path, &env)?;
                    files.push((f.path.clone(), b.finish(&f.path)?));
                }
            }
        }
        let mut all = jobfile::join(files, &self.only)?;
        if self.readonly {
            for j in &mut all.jobs {
                if j.rw.writes() || j.rw.trims() {
                    return Err(Error::usage(format!(
                        "job {}: rw={} writes or trims, and --readonly refuses writes and trims (as fio's read-only mode does); drop --readonly or make the job read",
                        j.name,
                        j.rw.name()
                    )));
                }
                j.readonly = true;
            }
        }
        Ok(all)
    }

    /// Gives the command line's sections to `b`: with `jobs`, as fio
    /// defines them; without, only the global options, in order (what a
    /// job file read after them inherits).
    fn feed(&self, b: &mut Builder, jobs: bool) -> Result<()> {
        const AT: &str = "command line";
        for s in &self.sections {
            if jobs && let Some(name) = &s.name {
                b.section(if s.global() { "global" } else { name }, AT, s.at)?;
                if !s.global() {
                    // fio lists a command-line job's name among its options.
                    b.option("name", Some(name), Some(name.clone()), AT)?;
                }
            } else if !s.global() {
                continue;
            }
            for (k, v) in &s.options {
                b.option(k, v.as_deref(), v.clone(), AT)?;
            }
        }
        Ok(())
    }

    /// fio's `--showcmd`: each job file as the one command line that
    /// defines its jobs, one line a file, byte for byte as fio 3.33 prints
    /// it (fio's name for each option, in the order fio applies them; a
    /// `[global]` section shows every global option so far, the command
    /// line's included; with `--section`, only those jobs).
    pub fn show_cmd(&self) -> Result<String> {
        let env = |k: &str| std::env::var(k).ok();
        let mut out = String::new();
        for (k, f) in self.files.iter().enumerate() {
            let mut b = Builder::new(&[]).lenient();
            if k == 0 {
                self.feed(&mut b, false)?;
            }
            b.text(&f.text()?, &f.path, &env)?;
            out.push_str(&show_line(&b.shown()?, &self.only));
        }
        Ok(out)
    }
}

/// One file's line of `--showcmd`.
fn show_line(sections: &[Shown], only: &[String]) -> String {
    let mut line = String::new();
    for s in sections {
        if let Some(name) = &s.job
            && !only.is_empty()
            && !only.contains(name)
        {
            continue;
        }
        if line.is_empty() {
            line.push_str("fio ");
        }
        if let Some(name) = &s.job {
            line.push_str(&format!("--name={name} "));
        }
        for (k, v) in &s.options {
            match v {
                None => line.push_str(&format!("--{k} ")),
                Some(v) if k == "description" => line.push_str(&format!("--{k}=\"{v}\" ")),
                Some(v) => line.push_str(&format!("--{k}={v} ")),
            }
        }
    }
    line.push('\n');
    line
}

/// fio's output formats (`--output-format`, a comma-separated list):
/// which are written, each once, in fio's order (terse, json, normal).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Formats {
    pub terse: bool,
    pub json: bool,
    /// json with each direction's latency bins (implies json).
    pub json_plus: bool,
    pub normal: bool,
}

impl Default for Formats {
    fn default() -> Formats {
        Formats {
            terse: false,
            json: false,
            json_plus: false,
            normal: true,
        }
    }
}

impl Formats {
    /// A `--output-format` list, as fio reads it (`minimal` and `csv` are
    /// its names for terse).
    pub fn parse(list: &str) -> Result<Formats> {
        let mut f = Formats {
            normal: false,
            ..Formats::default()
        };
        for word in list.split(',') {
            match word {
                "terse" | "minimal" | "csv" => f.terse = true,
                "json" => f.json = true,
                "json+" => (f.json, f.json_plus) = (true, true),
                "normal" => f.normal = true,
                _ => {
                    return Err(Error::usage(format!(
                        "--output-format={list}: '{word}' is not one of fio's output formats; give a list of terse, json, json+, normal (as in json,normal)"
                    )));
                }
            }
        }
        Ok(f)
    }
}

/// When fio prints its ETA line (`--eta`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Eta {
    /// On a terminal.
    #[default]
    Auto,
    /// Even when stderr is not a terminal.
    Always,
    Never,
}

/// What a fio command line asks for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CmdLine {
    pub jobs: Jobs,
    /// `--showcmd`: print each job file as a command line; run nothing.
    pub show_cmd: bool,
    /// `--parse-only`: read and check every job; run nothing.
    pub parse_only: bool,
    /// `--version`.
    pub version: bool,
    /// `--help`.
    pub help: bool,
    /// `--cmdhelp[=OPTION]`: Some("") for every option.
    pub cmdhelp: Option<String>,
    /// `--enghelp[=ENGINE[,OPTION]]`: Some("") lists the engines.
    pub enghelp: Option<String>,
    /// `--output=FILE`.
    pub output: Option<String>,
    pub formats: Formats,
    /// `--terse-version` (fio's default 3).
    pub terse_version: u32,
    pub eta: Eta,
    /// `--eta-newline=TIME`: the ETA as a new line every TIME.
    pub eta_newline: Option<Duration>,
    /// `--eta-interval=TIME`: how often the ETA is drawn.
    pub eta_interval: Option<Duration>,
    /// `--status-interval=TIME`: the whole output so far every TIME.
    pub status_interval: Option<Duration>,
    /// `--warnings-fatal`: a warning about an option is an error.
    pub warnings_fatal: bool,
    /// `--max-jobs=N`, which fio 3.33 reads and ignores.
    pub max_jobs: Option<u64>,
    /// `--alloc-size=KiB`: fio's shared-memory pool; nothing here.
    pub alloc_size: Option<u64>,
    /// The caller's options given ([`Extra`]), in order.
    pub extras: Vec<(String, Option<String>)>,
}

/// What an option of fio's own is, beside its name and value.
#[derive(Clone, Copy)]
enum Own {
    /// Read into the [`CmdLine`].
    Read,
    /// fio has it; xferbench does not run it here: why, and what to do.
    Refused(&'static str),
}

/// fio's own options (init.c's `l_opts`): name, short letter, value.
const OWN: &[(&str, char, Takes, Own)] = &[
    ("output", 'o', Takes::Value, Own::Read),
    (
        "latency-log",
        'l',
        Takes::Value,
        Own::Refused("deprecated: fio refuses it too; use write_lat_log= in the job"),
    ),
    (
        "bandwidth-log",
        'b',
        Takes::Nothing,
        Own::Refused("the aggregate bandwidth log is not written; use write_bw_log= in each job"),
    ),
    ("minimal", 'm', Takes::Nothing, Own::Read),
    ("output-format", 'F', Takes::Value, Own::Read),
    ("append-terse", 'f', Takes::Optional, Own::Read),
    ("version", 'v', Takes::Nothing, Own::Read),
    ("help", 'h', Takes::Nothing, Own::Read),
    ("cmdhelp", 'c', Takes::Optional, Own::Read),
    ("enghelp", 'i', Takes::Optional, Own::Read),
    ("showcmd", 's', Takes::Nothing, Own::Read),
    ("readonly", 'r', Takes::Nothing, Own::Read),
    ("eta", 'e', Takes::Value, Own::Read),
    ("eta-interval", 'O', Takes::Value, Own::Read),
    ("eta-newline", 'E', Takes::Value, Own::Read),
    (
        "debug",
        'd',
        Takes::Value,
        Own::Refused("fio's debug tracing is not built in; drop it"),
    ),
    ("parse-only", 'P', Takes::Nothing, Own::Read),
    ("section", 'x', Takes::Value, Own::Read),
    (
        "inflate-log",
        'X',
        Takes::Value,
        Own::Refused("compressed logs are never written here; inflate fio's own with fio"),
    ),
    ("alloc-size", 'a', Takes::Value, Own::Read),
    (
        "profile",
        'p',
        Takes::Value,
        Own::Refused("fio's built-in profiles are not supported; write the jobs out"),
    ),
    ("warnings-fatal", 'w', Takes::Nothing, Own::Read),
    ("max-jobs", 'j', Takes::Value, Own::Read),
    ("terse-version", 'V', Takes::Value, Own::Read),
    (
        "server",
        'S',
        Takes::Optional,
        Own::Refused(
            "fio's client/server mode is not supported; run xferbench fio on that machine (or xferbench serve for transports)",
        ),
    ),
    (
        "daemonize",
        'D',
        Takes::Value,
        Own::Refused("fio's server mode is not supported; run xferbench fio on that machine"),
    ),
    (
        "client",
        'C',
        Takes::Value,
        Own::Refused(
            "fio's client/server mode is not supported; run xferbench fio on each machine",
        ),
    ),
    (
        "remote-config",
        'R',
        Takes::Value,
        Own::Refused(
            "fio's client/server mode is not supported; run xferbench fio on that machine",
        ),
    ),
    (
        "cpuclock-test",
        'T',
        Takes::Nothing,
        Own::Refused(
            "fio's clock test is not built in; xferbench records its clock's cost with every run",
        ),
    ),
    (
        "crctest",
        'G',
        Takes::Optional,
        Own::Refused("fio's checksum speed test is not built in; drop it"),
    ),
    (
        "memcpytest",
        'M',
        Takes::Optional,
        Own::Refused("fio's memcpy test is not built in; drop it"),
    ),
    (
        "idle-prof",
        'I',
        Takes::Value,
        Own::Refused("idle profiling is not supported; drop it"),
    ),
    ("status-interval", 'L', Takes::Value, Own::Read),
    (
        "trigger-file",
        'W',
        Takes::Value,
        Own::Refused("triggers are not supported; drop it"),
    ),
    (
        "trigger-timeout",
        'B',
        Takes::Value,
        Own::Refused("triggers are not supported; drop it"),
    ),
    (
        "trigger",
        'H',
        Takes::Value,
        Own::Refused("triggers are not supported; drop it"),
    ),
    (
        "trigger-remote",
        'J',
        Takes::Value,
        Own::Refused("triggers are not supported; drop it"),
    ),
    (
        "aux-path",
        'K',
        Takes::Value,
        Own::Refused("fio's state files are not written; drop it"),
    ),
    (
        "merge-blktrace-only",
        'A',
        Takes::Nothing,
        Own::Refused("blktrace merging is not supported; drop it"),
    ),
];

/// What an option's name resolves to.
#[derive(Clone, Copy)]
enum Target {
    Own(usize),
    Extra(usize),
    /// A job option: its table entry (None for a `verify*` key the table
    /// lacks, which the job refuses with its own message).
    Job(Option<&'static Spec>),
}

impl Target {
    fn same(&self, other: &Target) -> bool {
        match (self, other) {
            (Target::Own(a), Target::Own(b)) | (Target::Extra(a), Target::Extra(b)) => a == b,
            (Target::Job(Some(a)), Target::Job(Some(b))) => std::ptr::eq(*a, *b),
            _ => false,
        }
    }
}

/// Reads a fio command line (the words after the program's name); the
/// caller's own options are `extras`. A word that is no option, a value
/// an option lacks, an option fio has but xferbench cannot run: a usage
/// error naming it and what to do.
pub fn parse(args: &[String], extras: &[Extra]) -> Result<CmdLine> {
    let mut p = Parser {
        args,
        extras,
        i: 0,
        line: CmdLine {
            terse_version: 3,
            ..CmdLine::default()
        },
    };
    while p.i < args.len() {
        let arg = &args[p.i];
        p.i += 1;
        if arg == "--" {
            for rest in &args[p.i..] {
                p.file(rest);
            }
            break;
        }
        if arg == "-" || !arg.starts_with('-') {
            p.file(arg);
            continue;
        }
        p.option(arg)?;
    }
    Ok(p.line)
}

struct Parser<'a> {
    args: &'a [String],
    extras: &'a [Extra],
    /// The next word.
    i: usize,
    line: CmdLine,
}

impl Parser<'_> {
    fn file(&mut self, path: &str) {
        self.line.jobs.files.push(JobSource {
            path: path.to_string(),
            text: None,
        });
    }

    /// One word starting with a dash (not `-` or `--`).
    fn option(&mut self, arg: &str) -> Result<()> {
        let (body, double) = match arg.strip_prefix("--") {
            Some(b) => (b, true),
            None => (&arg[1..], false),
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        // A single letter after one dash is a short option (`-v`).
        let mut letters = name.chars();
        let target = match (double, letters.next(), letters.next(), &inline) {
            (false, Some(c), None, None) => OWN
                .iter()
                .position(|o| o.1 == c)
                .map(Target::Own)
                .ok_or_else(|| unrecognized(arg, name))?,
            _ => self.resolve(arg, name)?,
        };
        match target {
            Target::Own(k) => {
                let (long, _, takes, own) = OWN[k];
                let value = self.value(arg, long, takes, inline)?;
                match own {
                    Own::Read => self.own(long, value),
                    Own::Refused(why) => Err(Error::usage(format!(
                        "fio's --{long} cannot run under xferbench: {why}"
                    ))),
                }
            }
            Target::Extra(k) => {
                let e = self.extras[k];
                let value = self.value(arg, e.name, e.takes, inline)?;
                self.line.extras.push((e.name.to_string(), value));
                Ok(())
            }
            Target::Job(spec) => {
                // The key as typed when it names the option in full (an
                // alias is the user's word); fio's name for an abbreviation.
                let key = match spec {
                    Some(s) if !s.is(name) => s.name,
                    _ => name,
                };
                let value = match inline {
                    Some(v) => Some(v),
                    None => self.job_value(arg, spec)?,
                };
                if key == "name" && value.as_deref().is_none_or(|v| v.trim().is_empty()) {
                    return Err(Error::usage(format!(
                        "option '{arg}' needs a job name: --name=NAME"
                    )));
                }
                self.job_option(key, value);
                Ok(())
            }
        }
    }

    /// What `name` names: an option of fio's own, the caller's, or a job
    /// option; in full, or shortened to a prefix of exactly one of them.
    fn resolve(&self, arg: &str, name: &str) -> Result<Target> {
        if let Some(k) = OWN.iter().position(|o| o.0 == name) {
            return Ok(Target::Own(k));
        }
        if let Some(k) = self.extras.iter().position(|e| e.name == name) {
            return Ok(Target::Extra(k));
        }
        if let Some(s) = crate::job::spec(name) {
            return Ok(Target::Job(Some(s)));
        }
        if name.starts_with("verify") {
            return Ok(Target::Job(None));
        }
        let mut found: Vec<(String, Target)> = Vec::new();
        let mut add = |n: &str, t: Target| {
            if !name.is_empty() && n.starts_with(name) && !found.iter().any(|(_, f)| f.same(&t)) {
                found.push((n.to_string(), t));
            }
        };
        for (k, o) in OWN.iter().enumerate() {
            add(o.0, Target::Own(k));
        }
        for (k, e) in self.extras.iter().enumerate() {
            add(e.name, Target::Extra(k));
        }
        for n in crate::job::option_names() {
            add(n, Target::Job(crate::job::spec(n)));
        }
        match &found[..] {
            [(_, t)] => Ok(*t),
            [] => Err(unrecognized(arg, name)),
            many => Err(Error::usage(format!(
                "option '{arg}' is ambiguous: it begins {}; spell the option out",
                many.iter()
                    .take(6)
                    .map(|(n, _)| format!("--{n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
                    + if many.len() > 6 { ", …" } else { "" }
            ))),
        }
    }

    /// The value of an option of fio's own or the caller's, as getopt
    /// takes it.
    fn value(
        &mut self,
        arg: &str,
        name: &str,
        takes: Takes,
        inline: Option<String>,
    ) -> Result<Option<String>> {
        match (takes, inline) {
            (Takes::Nothing, Some(_)) => Err(Error::usage(format!(
                "option '{arg}': --{name} takes no value; give it alone"
            ))),
            (Takes::Nothing | Takes::Optional, None) => Ok(None),
            (_, Some(v)) => Ok(Some(v)),
            (Takes::Value, None) => match self.args.get(self.i) {
                Some(v) => {
                    self.i += 1;
                    Ok(Some(v.clone()))
                }
                None => Err(Error::usage(format!(
                    "option '{arg}' needs a value: --{name}=VALUE"
                ))),
            },
        }
    }

    /// The value of a job option given without `=`: a switch (a boolean,
    /// or an option xferbench only notes) takes the next word only when it
    /// is a boolean (`-direct 1`; fio reads `--time_based 1` as the switch
    /// and a job file named 1, which no one means); the others take the
    /// next word, as getopt does.
    fn job_value(&mut self, arg: &str, spec: Option<&Spec>) -> Result<Option<String>> {
        let switch = spec.is_none_or(|s| match s.kind {
            Kind::Bool | Kind::Any => true,
            Kind::Words(w) => w.iter().any(|v| matches!(*v, "0" | "1")),
            _ => false,
        });
        let next = self.args.get(self.i);
        if switch {
            const BOOLS: &[&str] = &["0", "1", "true", "false", "yes", "no", "on", "off"];
            return Ok(match next {
                Some(v) if BOOLS.contains(&v.as_str()) => {
                    self.i += 1;
                    Some(v.clone())
                }
                _ => None,
            });
        }
        match next {
            Some(v) => {
                self.i += 1;
                Ok(Some(v.clone()))
            }
            None => Err(Error::usage(format!(
                "option '{arg}' needs a value: {arg}=VALUE"
            ))),
        }
    }

    /// A job option: `--name` starts a section, the others go to the
    /// section open (the globals before any `--name`).
    fn job_option(&mut self, key: &str, value: Option<String>) {
        let sections = &mut self.line.jobs.sections;
        if key == "name" {
            sections.push(CmdSection {
                name: Some(value.unwrap_or_default()),
                at: self.i,
                options: Vec::new(),
            });
            return;
        }
        if sections.is_empty() {
            sections.push(CmdSection {
                name: None,
                at: 0,
                options: Vec::new(),
            });
        }
        let last = sections.len() - 1;
        sections[last].options.push((key.to_string(), value));
    }

    /// An option of fio's own that xferbench reads.
    fn own(&mut self, name: &str, value: Option<String>) -> Result<()> {
        let l = &mut self.line;
        let v = value.clone().unwrap_or_default();
        match name {
            "output" => l.output = Some(v),
            "minimal" => l.formats = Formats::parse("terse")?,
            "output-format" => l.formats = Formats::parse(&v)?,
            "append-terse" => l.formats.terse = true,
            "version" => l.version = true,
            "help" => l.help = true,
            "cmdhelp" => l.cmdhelp = Some(v),
            "enghelp" => l.enghelp = Some(v),
            "showcmd" => l.show_cmd = true,
            "readonly" => l.jobs.readonly = true,
            "eta" => {
                l.eta = match v.as_str() {
                    "auto" => Eta::Auto,
                    "always" => Eta::Always,
                    "never" => Eta::Never,
                    _ => {
                        return Err(Error::usage(format!(
                            "--eta={v}: expected always, never or auto"
                        )));
                    }
                }
            }
            "eta-interval" => l.eta_interval = Some(time(name, &v)?),
            "eta-newline" => l.eta_newline = Some(time(name, &v)?),
            "status-interval" => l.status_interval = Some(time(name, &v)?),
            "parse-only" => l.parse_only = true,
            "section" if v == "global" => {
                return Err(Error::usage(
                    "--section=global: [global] is not a job; name a job section",
                ));
            }
            "section" => l.jobs.only.push(v),
            "alloc-size" => l.alloc_size = Some(number(name, &v)?),
            "warnings-fatal" => l.warnings_fatal = true,
            "max-jobs" => l.max_jobs = Some(number(name, &v)?),
            "terse-version" => {
                l.terse_version = number(name, &v)? as u32;
                if !(2..=5).contains(&l.terse_version) {
                    return Err(Error::usage(format!(
                        "--terse-version={v}: fio's terse versions are 2 to 5"
                    )));
                }
            }
            _ => unreachable!("every option read is handled: {name}"),
        }
        Ok(())
    }
}

/// A time as fio's command line takes it: seconds, or a number with a
/// unit (`500ms`, `2s`, `1m`); above zero.
fn time(name: &str, v: &str) -> Result<Duration> {
    crate::units::parse_duration(v)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            Error::usage(format!(
                "--{name}={v}: expected a time above zero (seconds, or with a unit: 500ms, 2s, 1m)"
            ))
        })
}

/// A whole number.
fn number(name: &str, v: &str) -> Result<u64> {
    v.trim()
        .parse()
        .map_err(|_| Error::usage(format!("--{name}={v}: expected a whole number")))
}

/// The error for a word that names no option, with the nearest that does.
fn unrecognized(arg: &str, name: &str) -> Error {
    let own = OWN
        .iter()
        .map(|o| o.0)
        .map(|n| (strsim::damerau_levenshtein(name, n), n))
        .filter(|(d, n)| *d <= 2.max(n.len() / 4))
        .min();
    let job = crate::job::nearest(name).map(|n| (strsim::damerau_levenshtein(name, n), n));
    let near = match (own, job) {
        (Some(a), Some(b)) => Some(a.min(b).1),
        (a, b) => a.or(b).map(|x| x.1),
    };
    Error::usage(match near {
        Some(n) => format!(
            "unrecognized option '{arg}' (neither fio's nor a job option); did you mean --{n}?"
        ),
        None => format!(
            "unrecognized option '{arg}' (neither fio's nor a job option); see --help, and --cmdhelp for the job options"
        ),
    })
}

/// `fio --help`: fio's usage in its shape, with what xferbench runs and
/// the caller's options.
pub fn usage(program: &str, extras: &[Extra]) -> String {
    let mut s = format!(
        "{}\n{program} [options] [job options] <job file(s)>\n",
        version()
    );
    let lines: &[(&str, &str)] = &[
        ("--parse-only", "Parse options only, don't start any IO"),
        ("--output", "Write output to file"),
        ("--minimal", "Minimal (terse) output"),
        (
            "--output-format=type",
            "Output format (terse,json,json+,normal)",
        ),
        (
            "--terse-version=type",
            "Set terse version output format (3 is written)",
        ),
        ("--append-terse", "Add the terse output to the others"),
        ("--version", "Print version info and exit"),
        ("--help", "Print this page"),
        (
            "--cmdhelp=cmd",
            "Print command help, \"all\" for all of them",
        ),
        (
            "--enghelp=engine",
            "Print ioengine help, or list available ioengines",
        ),
        ("--enghelp=engine,cmd", "Print help for an ioengine cmd"),
        ("--showcmd", "Turn a job file into command line options"),
        (
            "--eta=when",
            "When ETA estimate should be printed: always, never or auto",
        ),
        (
            "--eta-newline=t",
            "Force a new line for every 't' period passed",
        ),
        ("--eta-interval=t", "How often the ETA line is redrawn"),
        (
            "--status-interval=t",
            "Force full status dump every 't' period passed",
        ),
        (
            "--readonly",
            "Turn on safety read-only checks, preventing writes",
        ),
        (
            "--section=name",
            "Only run specified section in job file, multiple sections can be specified",
        ),
        (
            "--alloc-size=kb",
            "Accepted; xferbench has no shared-memory pool to size",
        ),
        ("--warnings-fatal", "Fio parser warnings are fatal"),
        (
            "--max-jobs=nr",
            "Accepted and ignored, as fio 3.33 ignores it",
        ),
    ];
    for (opt, help) in lines {
        s.push_str(&format!("  {opt:<22}{help}\n"));
    }
    if !extras.is_empty() {
        s.push_str("\nxferbench's own options:\n");
        for e in extras {
            let opt = match e.takes {
                Takes::Nothing => format!("--{}", e.name),
                _ => format!("--{}=…", e.name),
            };
            s.push_str(&format!("  {opt:<22}{}\n", e.help));
        }
    }
    s.push_str("\nJob options are fio's (--cmdhelp lists them); see docs/stream.md for what xferbench does with each.\n");
    s
}

/// The line `--cmdhelp` prints for an option: its own help, else what the
/// table says it does here.
fn help_line(s: &Spec) -> String {
    match s.effect {
        _ if !s.help.is_empty() => s.help.to_string(),
        Effect::Set(_) | Effect::Take(_) => "fio's option, taken as fio takes it".to_string(),
        Effect::Note(why) => format!("accepted, changes no figure here: {why}"),
        Effect::Refuse(why) => format!("not supported by xferbench: {why}"),
        Effect::OtherEngine(e) => format!("option of ioengine={e}, which xferbench does not have"),
    }
}

/// fio's words for what an option's value is.
fn type_words(k: Kind) -> String {
    match k {
        Kind::Bool => "boolean value (opt=1)".into(),
        Kind::Int => "integer value (opt=100)".into(),
        Kind::Size => "string with possible k/m/g postfix (opt=4k)".into(),
        Kind::Time => "string with time postfix (opt=10s)".into(),
        Kind::Words(_) => "string (opt=bla)".into(),
        Kind::Text(e) => format!("string (opt={e})"),
        Kind::Any => "any value (xferbench does not read it)".into(),
    }
}

/// One option's `--cmdhelp=NAME` block, in fio's shape.
fn option_help(s: &Spec) -> String {
    let mut out = format!("{:>20}: {}\n", s.name, help_line(s));
    let others: Vec<&str> = s.aliases.iter().chain(s.also).copied().collect();
    if !others.is_empty() {
        out.push_str(&format!("{:>20}: {}\n", "alias", others.join(", ")));
    }
    out.push_str(&format!("{:>20}: {}\n", "type", type_words(s.kind)));
    if let Kind::Words(w) = s.kind {
        for (i, v) in w.iter().enumerate() {
            out.push_str(&format!(
                "{:>20}: {v}\n",
                if i == 0 { "valid values" } else { "" }
            ));
        }
    }
    out.push('\n');
    out
}

/// `--cmdhelp[=NAME]`: every option with its line (NAME empty or `all`),
/// or one option's block; an option no table has is an error naming the
/// nearest.
pub fn cmdhelp(name: &str) -> Result<String> {
    let tables = || {
        crate::job::options::GENERAL
            .iter()
            .chain(crate::job::verify::VERIFY)
    };
    if name.is_empty() || name == "all" {
        let mut out = String::new();
        for s in tables() {
            out.push_str(&format!("{:<24}: {}\n", s.name, help_line(s)));
        }
        for (engine, t) in crate::job::engine_opts::ENGINES {
            for s in *t {
                out.push_str(&format!("{:<24}: ({engine}) {}\n", s.name, help_line(s)));
            }
        }
        return Ok(out);
    }
    match crate::job::spec(name) {
        Some(s) => Ok(option_help(s)),
        None => Err(no_option(name, "")),
    }
}

/// `--enghelp[=ENGINE[,OPTION]]`: the engines, or an engine's options, or
/// one of them.
pub fn enghelp(what: &str) -> Result<String> {
    if what.is_empty() {
        let mut out = "Available IO engines:\n".to_string();
        for e in crate::job::IoEngine::ALL {
            out.push_str(&format!("\t{}\n", e.name()));
        }
        return Ok(out);
    }
    let (engine, opt) = match what.split_once(',') {
        Some((e, o)) => (e, Some(o)),
        None => (what, None),
    };
    if !crate::job::IoEngine::ALL.iter().any(|e| e.name() == engine) {
        return Err(Error::usage(format!(
            "--enghelp={what}: {}",
            crate::job::refused::refusal(engine)
        )));
    }
    let table = crate::job::engine_opts::ENGINES
        .iter()
        .find(|(e, _)| *e == engine)
        .map(|(_, t)| *t);
    match (table, opt) {
        (None, _) => Err(Error::usage(format!("IO engine {engine} has no options"))),
        (Some(t), None) => Ok(t
            .iter()
            .map(|s| format!("{:<24}: {}\n", s.name, help_line(s)))
            .collect()),
        (Some(t), Some(o)) => t
            .iter()
            .find(|s| s.is(o))
            .map(option_help)
            .ok_or_else(|| no_option(o, &format!(" of ioengine={engine}"))),
    }
}

fn no_option(name: &str, of: &str) -> Error {
    match crate::job::nearest(name) {
        Some(n) => Error::usage(format!(
            "no such option{of}: {name}; did you mean {n}? (--cmdhelp lists them all)"
        )),
        None => Error::usage(format!(
            "no such option{of}: {name} (--cmdhelp lists them all)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::Rw;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    fn parsed(line: &str) -> CmdLine {
        parse(&args(line), &[]).unwrap()
    }

    fn refused(line: &str) -> String {
        parse(&args(line), &[]).unwrap_err().to_string()
    }

    /// A job file in a temporary directory.
    fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }

    #[test]
    fn name_starts_a_job_and_the_options_before_it_are_global() {
        // fio's HOWTO: two jobs sharing the global options.
        let l = parsed("--name=global --rw=randread --size=128m --name=job1 --name=job2");
        let f = l.jobs.load(&[]).unwrap();
        let d: Vec<_> = f
            .jobs
            .iter()
            .map(|j| (j.name.as_str(), j.rw, j.size, j.group))
            .collect();
        assert_eq!(
            d,
            [
                ("job1", Rw::RandRead, Some(128 << 20), 0),
                ("job2", Rw::RandRead, Some(128 << 20), 0)
            ]
        );
        // A command-line job lists its name among its options, as fio's do.
        assert_eq!(f.jobs[0].given, [("name".to_string(), "job1".to_string())]);
        // Options before any --name are global too; after one, the job's.
        let f = parsed("--bs=8k --name=a --bs=16k --name=b")
            .jobs
            .load(&[])
            .unwrap();
        assert_eq!((f.jobs[0].bs, f.jobs[1].bs), (16384, 8192));
        // --name=global again sets globals for the jobs after it only.
        let f = parsed("--name=a --name=global --iodepth=4 --name=b")
            .jobs
            .load(&[])
            .unwrap();
        assert_eq!((f.jobs[0].iodepth, f.jobs[1].iodepth), (1, 4));
    }

    #[test]
    fn options_take_values_as_getopt_gives_them() {
        // One dash as well as two; a value after a space; a bare switch; a
        // boolean after a space (the published "-direct 1 -thread" lines).
        let l = parsed(
            "-filename /tmp/x -direct 1 -iodepth 1 -thread -rw=randread -bs=16k -size=200G -numjobs=2 -runtime=1000 -group_reporting -name=mytest",
        );
        let s = &l.jobs.sections;
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].name, None);
        assert!(s[0].options.contains(&("direct".into(), Some("1".into()))));
        assert!(s[0].options.contains(&("thread".into(), None)));
        assert!(s[0].options.contains(&("group_reporting".into(), None)));
        assert_eq!(s[1].name.as_deref(), Some("mytest"));
        let f = l.jobs.load(&[]).unwrap();
        assert_eq!(f.jobs.len(), 2);
        assert!(f.jobs[0].direct && f.jobs[0].group_reporting);
        // A switch before a job file does not take the file as its value.
        let l = parsed("--time_based job.fio");
        assert_eq!(l.jobs.files[0].path, "job.fio");
        // A shortened name that names one option is that option, under
        // fio's name; one that names several is refused.
        let l = parsed("--name=x --runt=10 --numj=2");
        assert_eq!(
            l.jobs.sections[0].options,
            [
                ("runtime".to_string(), Some("10".to_string())),
                ("numjobs".to_string(), Some("2".to_string()))
            ]
        );
        assert!(refused("--name=x --blocksi=8k").contains("--blocksize, --blocksize_range"));
        assert!(refused("--name=x --si=1m").starts_with("option '--si=1m' is ambiguous"));
        // Job files anywhere; '-' is one; '--' ends the options.
        let l = parsed("a.fio --output-format=json - -- --b.fio");
        let files: Vec<&str> = l.jobs.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(files, ["a.fio", "-", "--b.fio"]);
        assert!(l.formats.json && !l.formats.normal);
    }

    #[test]
    fn unknown_and_unrunnable_options_are_one_line_each() {
        let e = refused("--name=x --bogus=1");
        assert_eq!(
            e,
            "unrecognized option '--bogus=1' (neither fio's nor a job option); see --help, and --cmdhelp for the job options"
        );
        assert!(refused("--name=x --directroy=/tmp").ends_with("did you mean --directory?"));
        assert!(refused("--showcmdd").ends_with("did you mean --showcmd?"));
        assert!(refused("--client=host").starts_with("fio's --client cannot run under xferbench"));
        assert_eq!(
            refused("--showcmd=1"),
            "option '--showcmd=1': --showcmd takes no value; give it alone"
        );
        assert_eq!(
            refused("--name=x --bs"),
            "option '--bs' needs a value: --bs=VALUE"
        );
        assert!(
            refused("--output-format=xml").contains("'xml' is not one of fio's output formats")
        );
        assert!(refused("--terse-version=9").contains("terse versions are 2 to 5"));
        assert!(refused("--section=global").contains("[global] is not a job"));
        assert_eq!(
            refused("--name= --rw=read"),
            "option '--name=' needs a job name: --name=NAME"
        );
        let e = parsed("--rw=read").jobs.load(&[]).unwrap_err().to_string();
        assert!(e.starts_with("no job defined: give --name=NAME"), "{e}");
    }

    #[test]
    fn fios_own_options_are_read() {
        let l = parsed(
            "--output=o.txt --output-format=json+,normal --append-terse --eta=never --eta-newline=2 --status-interval=500ms --warnings-fatal --readonly --max-jobs=4 --alloc-size=1024 --section=a --section b -v",
        );
        assert_eq!(l.output.as_deref(), Some("o.txt"));
        assert_eq!(
            l.formats,
            Formats {
                terse: true,
                json: true,
                json_plus: true,
                normal: true
            }
        );
        assert_eq!(l.eta, Eta::Never);
        assert_eq!(l.eta_newline, Some(Duration::from_secs(2)));
        assert_eq!(l.status_interval, Some(Duration::from_millis(500)));
        assert!(l.warnings_fatal && l.jobs.readonly && l.version);
        assert_eq!((l.max_jobs, l.alloc_size), (Some(4), Some(1024)));
        assert_eq!(l.jobs.only, ["a", "b"]);
        assert_eq!(
            parsed("--minimal").formats,
            Formats::parse("terse").unwrap()
        );
        assert_eq!(parsed("--cmdhelp").cmdhelp.as_deref(), Some(""));
        assert_eq!(
            parsed("--enghelp=io_uring").enghelp.as_deref(),
            Some("io_uring")
        );
        // The caller's options come back as given.
        let extras = [Extra {
            name: "map",
            takes: Takes::Value,
            help: "",
        }];
        let l = parse(&args("--map a=b --name=x --map=c=d"), &extras).unwrap();
        assert_eq!(
            l.extras,
            [
                ("map".to_string(), Some("a=b".to_string())),
                ("map".to_string(), Some("c=d".to_string()))
            ]
        );
    }

    #[test]
    fn command_line_options_are_the_defaults_a_job_file_overrides() {
        let dir = tempfile::tempdir().unwrap();
        let no_bs = file(&dir, "a.fio", "[global]\nrw=write\n[a]\nsize=1m\n");
        let with_bs = file(&dir, "b.fio", "[global]\nbs=1m\n[b]\nsize=1m\n");
        let own_bs = file(&dir, "c.fio", "[c]\nbs=64k\n");
        let bs = |line: String| -> Vec<(String, u64)> {
            parse(&args(&line), &[])
                .unwrap()
                .jobs
                .load(&[])
                .unwrap()
                .jobs
                .into_iter()
                .map(|j| (j.name, j.bs))
                .collect()
        };
        assert_eq!(
            bs(format!("--blocksize=128k {no_bs}")),
            [("a".into(), 128 << 10)]
        );
        assert_eq!(
            bs(format!("--blocksize=128k {with_bs}")),
            [("b".into(), 1 << 20)]
        );
        assert_eq!(bs(format!("--bs=128k {own_bs}")), [("c".into(), 64 << 10)]);
        // As fio: the command line's jobs first, in the first file's group;
        // a later file starts from fio's defaults again, after a stonewall.
        let f = parse(
            &args(&format!("--bs=8k --name=x {no_bs} {own_bs} {no_bs}")),
            &[],
        )
        .unwrap()
        .jobs
        .load(&[])
        .unwrap();
        let d: Vec<_> = f
            .jobs
            .iter()
            .map(|j| (j.name.as_str(), j.bs, j.group))
            .collect();
        assert_eq!(
            d,
            [
                ("x", 8192, 0),
                ("a", 8192, 0),
                ("c", 65536, 1),
                ("a", 4096, 2)
            ]
        );
        // --section picks jobs, from the command line too.
        let f = parse(&args(&format!("--name=x --section=a {no_bs}")), &[])
            .unwrap()
            .jobs
            .load(&[])
            .unwrap();
        assert_eq!(f.jobs.len(), 1);
        assert_eq!(f.jobs[0].name, "a");
    }

    #[test]
    fn readonly_refuses_writers_and_marks_readers() {
        let e = parsed("--readonly --name=w --rw=randwrite")
            .jobs
            .load(&[])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("job w: rw=randwrite writes or trims, and --readonly refuses"),
            "{e}"
        );
        let f = parsed("--readonly --name=r --rw=read")
            .jobs
            .load(&[])
            .unwrap();
        assert!(f.jobs[0].readonly);
    }

    /// What fio 3.33's `--showcmd` printed for these files, byte for byte.
    #[test]
    fn showcmd_prints_what_fio_prints() {
        let dir = tempfile::tempdir().unwrap();
        let show = |line: String| parse(&args(&line), &[]).unwrap().jobs.show_cmd().unwrap();
        let seed = file(
            &dir,
            "seed.fio",
            "[global]\nioengine=psync\nbs=1m\nfilesize=16m\nallow_file_create=0\nrw=write\n; comment\ndirect = 0\ndescription=four channels\n\n[ch0]\nfilename=/tmp/fc/d0\noffset=0\nsize=4m\n\n[ch1]\nfilename=/tmp/fc/d1\noffset=4m\nsize=4m\ntime_based\n",
        );
        assert_eq!(
            show(seed.clone()),
            "fio --ioengine=psync --bs=1m --filesize=16m --allow_file_create=0 --rw=write --direct= 0 --description=\"four channels\" --name=ch0 --offset=0 --size=4m --filename=/tmp/fc/d0 --name=ch1 --offset=4m --size=4m --time_based --filename=/tmp/fc/d1 \n"
        );
        // The command line's options show in a file's [global] only, and a
        // later [global] shows every global option so far.
        let two = file(
            &dir,
            "two.fio",
            "[a]\nrw=randread\niodepth=4\nioengine=libaio\nbs=4k\ngroup_reporting\n[global]\nbs=8k\n[b]\nstonewall\n",
        );
        assert_eq!(
            show(format!("--bs=2k {two}")),
            "fio --name=a --rw=randread --iodepth=4 --ioengine=libaio --bs=4k --group_reporting --bs=2k --bs=8k --name=b --stonewall \n"
        );
        let g2 = file(
            &dir,
            "g2.fio",
            "[global]\nbs=4k\n[a]\n[global]\nrw=read\n[b]\n",
        );
        assert_eq!(
            show(format!("--size=1m {g2}")),
            "fio --size=1m --bs=4k --name=a --size=1m --bs=4k --rw=read --name=b \n"
        );
        // fio's names (an alias is shown as the option; a separate fio
        // option as itself), engine options after the others.
        let aws = file(
            &dir,
            "aws.fio",
            "[global]\niomem=mmap\nratemin=1m\nblocksize=4k\nio_size=1m\n[n]\nioengine=net\nport=8888\nprotocol=tcp\nbs=4k\nlisten\nrw=read\n",
        );
        assert_eq!(
            show(aws),
            "fio --mem=mmap --rate_min=1m --bs=4k --io_size=1m --name=n --ioengine=net --bs=4k --rw=read --port=8888 --protocol=tcp --listen \n"
        );
        // One line a file; --section shows those jobs only (and every
        // [global]); an empty file, an empty line.
        let empty = file(&dir, "e.fio", "");
        assert_eq!(
            show(format!("--section=b {two} {empty}")),
            "fio --bs=8k --name=b --stonewall \n\n"
        );
        // Refused options are shown all the same, as fio shows them; an
        // unknown one stops it.
        let dax = file(&dir, "dax.fio", "[d]\nioengine=dev-dax\nzonemode=zbd\n");
        assert_eq!(
            show(dax),
            "fio --name=d --ioengine=dev-dax --zonemode=zbd \n"
        );
        let bad = file(&dir, "bad.fio", "[d]\nbogus=1\n");
        let e = parse(&args(&bad), &[])
            .unwrap()
            .jobs
            .show_cmd()
            .unwrap_err();
        assert!(e.to_string().contains("unknown option 'bogus'"), "{e}");
    }

    #[test]
    fn help_is_made_from_the_option_tables() {
        use crate::job::spec::Effect;
        // Every option xferbench takes says what it does.
        let all = crate::job::options::GENERAL
            .iter()
            .chain(crate::job::verify::VERIFY)
            .chain(
                crate::job::engine_opts::ENGINES
                    .iter()
                    .flat_map(|(_, t)| t.iter()),
            );
        for s in all {
            if matches!(s.effect, Effect::Set(_) | Effect::Take(_)) {
                assert!(!s.help.is_empty(), "{} has no help", s.name);
            }
        }
        assert_eq!(
            cmdhelp("blocksize").unwrap(),
            "                  bs: Block size: bytes per I/O (reads,writes)\n               alias: blocksize\n                type: string with possible k/m/g postfix (opt=4k)\n\n"
        );
        let rw = cmdhelp("rw").unwrap();
        assert!(
            rw.contains("        valid values: read\n                    : write\n"),
            "{rw}"
        );
        let every = cmdhelp("all").unwrap();
        assert!(
            every.contains("\nbs                      : Block size"),
            "{every}"
        );
        assert!(every.contains("bs_unaligned            : not supported by xferbench"));
        assert!(every.contains("fixedbufs               : (io_uring) Register"));
        assert!(
            cmdhelp("bss")
                .unwrap_err()
                .to_string()
                .contains("did you mean")
        );
        let engines = enghelp("").unwrap();
        assert!(engines.starts_with("Available IO engines:\n\tsync\n\tpsync\n"));
        assert!(
            enghelp("io_uring")
                .unwrap()
                .starts_with("fixedbufs               : ")
        );
        assert!(
            enghelp("io_uring,fixedbufs")
                .unwrap()
                .starts_with("           fixedbufs: ")
        );
        assert_eq!(
            enghelp("psync").unwrap_err().to_string(),
            "IO engine psync has no options"
        );
        assert!(enghelp("rdma").unwrap_err().to_string().contains("RDMA"));
        assert!(version().starts_with("fio-3.33 (xferbench "));
        assert!(usage("fio", &[]).starts_with(&format!("{}\nfio [options]", version())));
    }
}
