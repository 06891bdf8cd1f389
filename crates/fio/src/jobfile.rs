//! fio job files: INI sections of `key=value` options with `[global]`
//! defaults, turned into [`Job`]s with `numjobs` clones and reporting groups.
//! Every option goes through [`Job::set`], so the file and the flags agree.

use crate::error::{Error, Result};
use crate::job::{Job, NAME_KEYWORDS, SetOutcome};
use std::path::Path;

/// A parsed job file: the jobs in order (clones expanded) and one warning per
/// option that was ignored or taken differently from fio.
#[derive(Debug)]
pub struct JobFile {
    pub jobs: Vec<Job>,
    pub warnings: Vec<String>,
    /// The warnings that are notes: options accepted that change no figure
    /// (fio has nothing to say of them; `xferbench fio` keeps them off
    /// stderr).
    pub notes: Vec<String>,
    /// The `[global]` section's options as written (fio's `global
    /// options`), of the first file read.
    pub global_options: Vec<(String, String)>,
    /// Each section as fio's `--showcmd` prints it, in the file's order.
    pub shown: Vec<Shown>,
    /// The files read: each job file and every file it includes (what an
    /// output file must not name).
    pub read: Vec<std::path::PathBuf>,
}

/// One section of a job file as fio's `--showcmd` prints it: fio's name
/// for each option and its value as written after the `=` (None for a bare
/// option), in the order fio applies them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shown {
    /// The job's name; None for a `[global]` section, which shows every
    /// global option given so far (the command line's, then the file's),
    /// as fio does.
    pub job: Option<String>,
    pub options: Vec<(String, Option<String>)>,
}

/// Reads and parses a job file, looking variables up in the environment.
pub fn load(path: &Path, overrides: &[(String, Option<String>)]) -> Result<JobFile> {
    let shown = path.display().to_string();
    let text = read_job_file(path)?;
    parse(&text, &shown, &|k| std::env::var(k).ok(), overrides)
}

/// A job file's text, bounded as every job file is.
pub fn read_job_file(path: &Path) -> Result<String> {
    let shown = path.display().to_string();
    read_bounded(path, MAX_JOB_BYTES)
        .map_err(|e| Error::usage(format!("cannot read job file {shown}: {e}; check the path")))
}

/// Job-file text from a reader (fio's `-`, standard input), bounded as a
/// job file is.
pub fn read_job_text(r: impl std::io::Read, what: &str) -> Result<String> {
    use std::io::Read;
    let mut text = String::new();
    r.take(MAX_JOB_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| Error::usage(format!("cannot read the job file from {what}: {e}")))?;
    if text.len() as u64 > MAX_JOB_BYTES {
        return Err(Error::usage(format!(
            "the job file on {what} is longer than {} MiB, more than a job file holds",
            MAX_JOB_BYTES >> 20
        )));
    }
    Ok(text)
}

/// Reads several job files as fio reads `fio a.fio b.fio`: each file with
/// its own `[global]`, the files run one after the other (the first job of
/// each later file starts a new group after everything before it), and with
/// `sections` only the jobs of those sections (`fio --section`), each of
/// which must exist.
pub fn load_all(
    paths: &[&Path],
    sections: &[String],
    overrides: &[(String, Option<String>)],
) -> Result<JobFile> {
    let files = paths
        .iter()
        .map(|p| Ok((p.display().to_string(), load(p, overrides)?)))
        .collect::<Result<Vec<_>>>()?;
    join(files, sections)
}

/// Joins parsed files (each named as its messages name it) as
/// [`load_all`] does.
pub fn join(files: Vec<(String, JobFile)>, sections: &[String]) -> Result<JobFile> {
    let mut all = JobFile {
        jobs: Vec::new(),
        warnings: Vec::new(),
        notes: Vec::new(),
        global_options: Vec::new(),
        shown: Vec::new(),
        read: Vec::new(),
    };
    let mut seen = vec![false; sections.len()];
    let mut every: Vec<String> = Vec::new();
    let names: Vec<String> = files.iter().map(|(n, _)| n.clone()).collect();
    for (k, (_, f)) in files.into_iter().enumerate() {
        all.warnings.extend(f.warnings);
        all.notes.extend(f.notes);
        all.shown.extend(f.shown);
        all.read.extend(f.read);
        if k == 0 {
            all.global_options = f.global_options;
        }
        let first = all.jobs.len();
        for job in f.jobs {
            if !every.contains(&job.name) {
                every.push(job.name.clone());
            }
            if let Some(i) = sections.iter().position(|s| *s == job.name) {
                seen[i] = true;
            } else if !sections.is_empty() {
                continue;
            }
            all.jobs.push(job);
        }
        if k > 0
            && let Some(j) = all.jobs.get_mut(first)
        {
            j.stonewall = true;
        }
    }
    if let Some(i) = seen.iter().position(|s| !s) {
        return Err(Error::usage(format!(
            "--section {}: no such section in {} (its sections: {}); name one of those",
            sections[i],
            names.join(", "),
            every.join(", ")
        )));
    }
    renumber_groups(&mut all.jobs);
    Ok(all)
}

/// Group numbers in order from 0 again, after files were joined or
/// sections picked: a job starts a new group when it says so (`stonewall`,
/// `new_group`) or when its file gave it a new number; its clones stay with it.
fn renumber_groups(jobs: &mut [Job]) {
    let mut group = 0;
    let mut last: Option<u32> = None;
    for (i, j) in jobs.iter_mut().enumerate() {
        let first_clone = j.clone == 0;
        let new = first_clone && (j.stonewall || j.new_group || last != Some(j.group));
        if i > 0 && new {
            group += 1;
        }
        last = Some(j.group);
        j.group = group;
    }
}

/// The most a job file and everything it includes may hold together: far
/// above any real job file (fio's examples are a few KiB), far below what
/// would take a machine's memory or minutes to read.
const MAX_JOB_BYTES: u64 = 16 << 20;
/// The most `include` directives one job file may expand in all.
const MAX_INCLUDES: usize = 1000;

/// A file's text, refused past `limit` bytes (a device or a runaway file
/// named as a job file) rather than read without end.
fn read_bounded(path: &Path, limit: u64) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    // Non-blocking open: a FIFO (or /dev/stdin) named as a job file would
    // otherwise block for ever waiting for a writer.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = f.metadata()?.file_type();
    if !kind.is_file() && !kind.is_char_device() {
        return Err(std::io::Error::other(
            "not a regular file (a FIFO, socket or directory); give a job file",
        ));
    }
    let mut text = String::new();
    f.take(limit + 1).read_to_string(&mut text)?;
    if text.len() as u64 > limit {
        return Err(std::io::Error::other(format!(
            "longer than {} MiB, more than a job file holds",
            limit >> 20
        )));
    }
    Ok(text)
}

/// What the includes of one job file may still add, and the files they
/// read. Not a `Budget`: that word is the library's, for how much of a
/// point is measured; this is a limit on reading, counted down.
struct IncludeAllowance {
    bytes: u64,
    includes: usize,
    read: Vec<std::path::PathBuf>,
}

/// A job section being read, with where its `wait_for` was set: the check
/// that it names an earlier job can only run once the section is complete.
#[derive(Clone, Default)]
struct Section {
    job: Job,
    wait_at: String,
    /// Its options as `--showcmd` prints them.
    shown: Vec<(String, Option<String>)>,
}

/// Jobs being defined section by section, as fio defines them from a job
/// file or from its command line (`--name` starts a section): fio copies
/// the globals into a job when its section starts, so a later `[global]`
/// only affects later jobs. The job-file parser and the command line feed
/// the same builder, so both take every option through [`Job::set`].
pub struct Builder<'a> {
    overrides: &'a [(String, Option<String>)],
    global: Section,
    in_global: bool,
    cur: Option<Section>,
    done: Vec<Job>,
    warnings: Vec<String>,
    notes: Vec<String>,
    shown: Vec<Shown>,
    /// Where the current `[global]` section's options start among the
    /// globals shown: each section's are sorted on their own.
    global_mark: usize,
    /// Options xferbench refuses (or values it cannot take) are kept for
    /// `--showcmd` rather than stopping it: fio prints such a job too.
    lenient: bool,
    /// The files read so far (job files and their includes).
    read: Vec<std::path::PathBuf>,
}

impl<'a> Builder<'a> {
    /// A builder whose `overrides` (command-line `--set`) apply to every
    /// job last.
    pub fn new(overrides: &'a [(String, Option<String>)]) -> Builder<'a> {
        Builder {
            overrides,
            global: Section::default(),
            in_global: false,
            cur: None,
            done: Vec::new(),
            warnings: Vec::new(),
            notes: Vec::new(),
            shown: Vec::new(),
            global_mark: 0,
            lenient: false,
            read: Vec::new(),
        }
    }

    /// A builder for `--showcmd`: an option the tables know is shown even
    /// when xferbench would refuse it (an engine it lacks, a zoned
    /// device); only an unknown option stops it, as it stops fio.
    pub fn lenient(mut self) -> Self {
        self.lenient = true;
        self
    }

    /// Starts a section: `global`, or a job named `name` defined at
    /// `file`:`line`.
    pub fn section(&mut self, name: &str, file: &str, line: usize) -> Result<()> {
        self.end_section()?;
        self.in_global = name == "global";
        self.global_mark = self.global.shown.len();
        if !self.in_global {
            let mut s = self.global.clone();
            // The section's own options, not the globals it inherits.
            s.job.given.clear();
            s.shown.clear();
            s.job.name = name.to_string();
            s.job.line = line;
            s.job.source = file.to_string();
            self.cur = Some(s);
        }
        Ok(())
    }

    /// Sets an option of the current section (`key=value`, or bare), or of
    /// the globals outside any section; `raw` is the value as written, for
    /// `--showcmd`, and `at` says where it was given.
    pub fn option(
        &mut self,
        key: &str,
        value: Option<&str>,
        raw: Option<String>,
        at: &str,
    ) -> Result<()> {
        let sec = match &mut self.cur {
            Some(s) => s,
            None => &mut self.global,
        };
        let said = (&mut self.warnings, &mut self.notes);
        match apply(&mut sec.job, key, value, at, said) {
            Err(_) if self.lenient && crate::job::spec(key).is_some() => {}
            r => r?,
        }
        if let Some(v) = value {
            sec.job.given.push((key.to_string(), v.to_string()));
        }
        if key == "wait_for" {
            sec.wait_at = at.to_string();
        }
        let name = crate::job::spec(key).map_or(key, |s| s.fio_name(key));
        sec.shown.push((name.to_string(), raw));
        Ok(())
    }

    /// Whether options now go to the globals (before any section, or in
    /// a `[global]` one).
    pub fn in_global(&self) -> bool {
        self.cur.is_none()
    }

    /// Ends the section being read: a job is checked and kept, a
    /// `[global]` shown.
    fn end_section(&mut self) -> Result<()> {
        if let Some(mut s) = self.cur.take() {
            sort_shown(&mut s.shown);
            self.shown.push(Shown {
                job: Some(s.job.name.clone()),
                options: std::mem::take(&mut s.shown),
            });
            let said = (&mut self.warnings, &mut self.notes);
            let job = finish(s, &self.done, self.overrides, said)?;
            self.done.push(job);
        } else if self.in_global {
            // fio prints the whole of its global job at each [global].
            self.in_global = false;
            sort_shown(&mut self.global.shown[self.global_mark..]);
            self.shown.push(Shown {
                job: None,
                options: self.global.shown.clone(),
            });
        }
        Ok(())
    }

    /// Each section as `--showcmd` prints it, the last one checked as any.
    pub fn shown(mut self) -> Result<Vec<Shown>> {
        self.end_section()?;
        Ok(self.shown)
    }

    /// The jobs defined, with their clones; `path` names the source in
    /// the message when there are none.
    pub fn finish(mut self, path: &str) -> Result<JobFile> {
        self.end_section()?;
        if self.done.is_empty() {
            return Err(Error::usage(format!(
                "{path}: no jobs defined (only [global]?); add a [name] section for each job"
            )));
        }
        let jobs = expand_clones(self.done)?;
        Ok(JobFile {
            jobs,
            warnings: self.warnings,
            notes: self.notes,
            global_options: self.global.job.given,
            shown: self.shown,
            read: self.read,
        })
    }

    /// Reads job-file text into the builder. `path` is used in messages
    /// and to find included files; `env` looks up variables.
    pub fn text(
        &mut self,
        text: &str,
        path: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<()> {
        let mut allowance = IncludeAllowance {
            bytes: MAX_JOB_BYTES.saturating_sub(text.len() as u64),
            includes: MAX_INCLUDES,
            read: Vec::new(),
        };
        // The name of text read from a file (not `-`, or the command line).
        if std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
            self.read.push(path.into());
        }
        let lines = with_includes(text, path, 0, &mut allowance)?;
        self.read.append(&mut allowance.read);
        let mut outside = true;
        for (raw, file, n) in lines {
            let at = format!("{file}:{n}");
            let line = strip_comment(&raw).trim();
            if line.is_empty() {
                continue;
            }
            let malformed = || {
                Error::usage(format!(
                    "{at}: malformed line '{}': expected [section], key=value or a comment",
                    raw.trim()
                ))
            };
            if let Some(rest) = line.strip_prefix('[') {
                let name = rest
                    .strip_suffix(']')
                    .map(str::trim)
                    .filter(|s| !s.is_empty() && !s.contains(['[', ']']))
                    .ok_or_else(malformed)?;
                self.section(name, &file, n)?;
                outside = false;
                continue;
            }
            let (key, value) = match line.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v)),
                None => (line, None),
            };
            if key.is_empty()
                || !key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
            {
                return Err(malformed());
            }
            if outside {
                return Err(Error::usage(format!(
                    "{at}: option '{key}' outside any [section]; put it under [global] or a job section"
                )));
            }
            self.line(key, value, &at, env)?;
        }
        Ok(())
    }

    /// One `key=value` line of a job file: variables expanded as fio
    /// expands them ([`substituted`]), then set. A value an unset variable
    /// left unparsable is fio's "failed parsing": the job is dropped and
    /// nothing runs (exit 1).
    fn line(
        &mut self,
        key: &str,
        value: Option<&str>,
        at: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<()> {
        let job = self
            .cur
            .as_ref()
            .map_or("global", |s| s.job.name.as_str())
            .to_string();
        let (expanded, blank) = match value {
            Some(v) => {
                let (e, b) = substituted(key, v.trim(), env, at, &job, &mut self.warnings)?;
                (Some(e), b)
            }
            None => (None, None),
        };
        // fio prints a value as written after the '=', blanks before it
        // included.
        let raw = value.zip(expanded.as_deref()).map(|(v, e)| {
            let lead = &v[..v.len() - v.trim_start().len()];
            format!("{lead}{e}")
        });
        self.option(key, expanded.as_deref(), raw, at)
            .map_err(|e| match &blank {
                Some(vars) => Error::run(format!(
                    "{e}; environment variable {vars} is not set, and fio, taking it as empty, drops job {job} for this line and runs nothing (exit 1): set {vars}"
                )),
                None => e,
            })
    }
}

/// The options fio applies before the others (`prio` 1) and after them
/// (-1: a `filename` after the `directory` it lies in), as options.c
/// ranks them; fio sorts a section's options by it (stably), and
/// `--showcmd` prints them in that order.
const FIO_PRIO: &[(&str, i32)] = &[
    ("lockfile", 1),
    ("cpus_allowed_policy", 1),
    ("kb_base", 1),
    ("unit_base", 1),
    ("filename", -1),
    ("filename_format", -1),
];

/// Options of fio's engines that xferbench reads as general ones (beside
/// `completion=`, or to refuse them).
const FIO_ENGINE_OWNED: &[&str] = &["hipri", "sqthread_poll", "thp"];

/// A section's options in fio's order: its general options by `prio`,
/// then its engine's (fio parses those once the engine is loaded).
fn sort_shown(options: &mut [(String, Option<String>)]) {
    let prio = |k: &str| FIO_PRIO.iter().find(|(n, _)| *n == k).map_or(0, |p| p.1);
    let engine = |k: &str| {
        FIO_ENGINE_OWNED.contains(&k)
            || crate::job::engine_opts::find(k).is_some()
            || crate::job::spec(k)
                .is_some_and(|s| matches!(s.effect, crate::job::spec::Effect::OtherEngine(_)))
    };
    options.sort_by_key(|(k, _)| (engine(k), std::cmp::Reverse(prio(k))));
}

/// Parses job-file text. `path` is used only in messages; `env` looks up
/// variables; `overrides` (command-line `--set`) apply to every job last.
pub fn parse(
    text: &str,
    path: &str,
    env: &dyn Fn(&str) -> Option<String>,
    overrides: &[(String, Option<String>)],
) -> Result<JobFile> {
    let mut b = Builder::new(overrides);
    b.text(text, path, env)?;
    b.finish(path)
}

/// The options fio takes with an empty value (the log's name is then the
/// job's); any other option left empty fails fio's parsing.
const EMPTY_OK: [&str; 4] = [
    "write_lat_log",
    "write_bw_log",
    "write_iops_log",
    "write_hist_log",
];

/// `key=raw`'s value after fio's substitutions ([`expand`]), with the
/// environment variables it took as empty, if any: a value that then fails
/// to parse is fio's "failed parsing", which drops the job and runs
/// nothing (exit 1), not a default. A `$NAME` fio keeps as written is a
/// warning.
fn substituted(
    key: &str,
    raw: &str,
    env: &dyn Fn(&str) -> Option<String>,
    at: &str,
    job: &str,
    warnings: &mut Vec<String>,
) -> Result<(String, Option<String>)> {
    let mut blank = Vec::new();
    let mut literal = Vec::new();
    let value = expand(raw, env, &mut blank, &mut literal)
        .map_err(|m| Error::usage(format!("{at}: {m}")))?;
    for name in literal {
        let w = format!(
            "{at}: {key}: ${name} is kept as written, as fio keeps it: fio substitutes an environment variable only written ${{{name}}}"
        );
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    if blank.is_empty() {
        return Ok((value, None));
    }
    let vars = blank.join(", ");
    if value.trim().is_empty() && !EMPTY_OK.contains(&key) {
        return Err(Error::run(format!(
            "{at}: {key}={raw}: environment variable {vars} is not set (or is empty), which leaves {key} empty: fio drops job {job} for it and runs nothing (exit 1); set {vars}"
        )));
    }
    let w = format!(
        "{at}: {key}: environment variable {vars} is not set and was taken as empty, as fio does"
    );
    if !warnings.contains(&w) {
        warnings.push(w);
    }
    Ok((value, Some(vars)))
}

/// The sections' jobs with their `numjobs` clones, in order: each clone's
/// reporting group, offset and place in the run (for its buffers' data).
fn expand_clones(done: Vec<Job>) -> Result<Vec<Job>> {
    let mut jobs = Vec::new();
    let mut group = 0;
    for (i, job) in done.into_iter().enumerate() {
        if i > 0 && (job.new_group || job.stonewall) {
            group += 1;
        }
        for c in 0..job.numjobs {
            let mut j = job.clone();
            (j.clone, j.group) = (c, group);
            // The clones run alongside the first, in its group.
            if c > 0 {
                (j.new_group, j.stonewall) = (false, false);
            }
            j.resolve_files().map_err(|m| {
                Error::usage(format!(
                    "{}:{}: job {}: {m}",
                    job.source, job.line, job.name
                ))
            })?;
            j.offset = u64::from(j.subjob())
                .checked_mul(job.offset_increment)
                .and_then(|d| d.checked_add(job.offset))
                .ok_or_else(|| {
                    Error::usage(format!(
                        "{}:{}: offset + numjobs x offset_increment is past 2^64; use a smaller offset_increment",
                        job.source, job.line
                    ))
                })?;
            j.buffers.job_index = jobs.len() as u32;
            jobs.push(j);
        }
    }
    let n = jobs.len() as u32;
    for j in &mut jobs {
        j.buffers.jobs = n;
    }
    Ok(jobs)
}

/// The warnings said so far, and which of them are notes.
type Said<'s> = (&'s mut Vec<String>, &'s mut Vec<String>);

/// Sets one option, prefixing errors and warnings with `at`. A `[global]` line
/// reaches many jobs but warns once.
fn apply(job: &mut Job, key: &str, value: Option<&str>, at: &str, said: Said) -> Result<()> {
    let (warnings, notes) = said;
    let outcome = job
        .set(key, value)
        .map_err(|e| Error::usage(format!("{at}: {e}")))?;
    let (w, note) = match outcome {
        SetOutcome::Applied => return Ok(()),
        SetOutcome::Unsupported(w) => (w, false),
        SetOutcome::Note(w) => (w, true),
    };
    let w = format!("{at}: {w}");
    if !warnings.contains(&w) {
        if note {
            notes.push(w.clone());
        }
        warnings.push(w);
    }
    Ok(())
}

/// Applies the overrides and checks `wait_for` against the jobs before it.
fn finish(
    mut s: Section,
    earlier: &[Job],
    overrides: &[(String, Option<String>)],
    said: Said,
) -> Result<Job> {
    let (warnings, notes) = said;
    for (k, v) in overrides {
        apply(
            &mut s.job,
            k,
            v.as_deref(),
            "command line",
            (&mut *warnings, &mut *notes),
        )?;
        if let Some(v) = v {
            s.job.given.retain(|(g, _)| g != k);
            s.job.given.push((k.clone(), v.clone()));
        }
        if k == "wait_for" {
            s.wait_at = "command line".into();
        }
    }
    if let Some(w) = &s.job.wait_for
        && !earlier.iter().any(|j| &j.name == w)
    {
        return Err(Error::usage(format!(
            "{}: wait_for={w} names no earlier job; name a job section above this one",
            s.wait_at
        )));
    }
    Ok(s.job)
}

/// How deep `include` may nest: deeper is taken for a loop.
const MAX_INCLUDE_DEPTH: usize = 8;

/// The lines of `text` with fio's `include FILE` directives replaced by the
/// named file's lines (a relative name is taken from the including file's
/// directory), each line with the file and line number it came from.
fn with_includes(
    text: &str,
    path: &str,
    depth: usize,
    allowance: &mut IncludeAllowance,
) -> Result<Vec<(String, String, usize)>> {
    let mut out = Vec::new();
    for (raw, n) in text.lines().zip(1..) {
        let line = strip_comment(raw).trim();
        let Some(name) = line
            .strip_prefix("include")
            .filter(|r| r.starts_with([' ', '\t']))
        else {
            out.push((raw.to_string(), path.to_string(), n));
            continue;
        };
        let name = name.trim();
        if depth >= MAX_INCLUDE_DEPTH {
            return Err(Error::usage(format!(
                "{path}:{n}: include {name}: includes nest more than {MAX_INCLUDE_DEPTH} deep (a file including itself?); flatten them"
            )));
        }
        let full = match Path::new(path).parent() {
            Some(dir) if !Path::new(name).is_absolute() => dir.join(name),
            _ => Path::new(name).to_path_buf(),
        };
        let shown = full.display().to_string();
        // A total allowance as well as a depth: ten includes a level, seven
        // levels deep, is ten million files' worth of lines.
        if allowance.includes == 0 {
            return Err(Error::usage(format!(
                "{path}:{n}: include {name}: more than {MAX_INCLUDES} includes in all; flatten them"
            )));
        }
        allowance.includes -= 1;
        let inner = read_bounded(&full, allowance.bytes).map_err(|e| {
            Error::usage(format!(
                "{path}:{n}: include {name}: cannot read {shown}: {e}; check the path (relative names are taken from the including file's directory; a job file and its includes hold {} MiB at most)",
                MAX_JOB_BYTES >> 20
            ))
        })?;
        allowance.bytes = allowance.bytes.saturating_sub(inner.len() as u64);
        allowance.read.push(full.clone());
        out.extend(with_includes(&inner, &shown, depth + 1, allowance)?);
    }
    Ok(out)
}

/// Drops `#`/`;` comments: whole lines, and (as fio does) trailing ones that
/// follow whitespace, so `#` inside a value such as a path survives.
fn strip_comment(line: &str) -> &str {
    if line.trim_start().starts_with(['#', ';']) {
        return "";
    }
    let b = line.as_bytes();
    match (1..b.len()).find(|&i| matches!(b[i], b'#' | b';') && b[i - 1].is_ascii_whitespace()) {
        Some(i) => &line[..i],
        None => line,
    }
}

/// A job-file value after fio's substitutions (fio's
/// `fio_option_dup_subs`, then its keywords):
///
/// - `${NAME}` is the environment's NAME; an unset NAME is the empty string
///   (named in `blank`, as is one set empty), an unterminated `${` stays as
///   written;
/// - then `$pagesize`, `$mb_memory` and `$ncpus`, wherever they stand.
///
/// `$NAME` without braces is not substituted: fio keeps it as written
/// (`filename=$DEV` is a file named `$DEV`), so it is named in `literal`
/// for a warning. filename_format's keywords (`$jobnum`…) stay for the job.
fn expand(
    v: &str,
    env: &dyn Fn(&str) -> Option<String>,
    blank: &mut Vec<String>,
    literal: &mut Vec<String>,
) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(v.len());
    let mut rest = v;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[i..]);
            rest = "";
            break;
        };
        let name = &after[..end];
        match env(name).filter(|v| !v.is_empty()) {
            Some(value) => out.push_str(&value),
            None if name.is_empty() => {}
            None => blank.push(name.to_string()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    if out.contains('$') {
        for (word, value) in builtins() {
            out = out.replace(word, &value);
        }
    }
    if out.contains("$(") {
        return Err(format!(
            "arithmetic $(...) in '{v}' is not supported; write the value out"
        ));
    }
    let mut at = 0;
    while let Some(i) = out[at..].find('$').map(|i| i + at) {
        at = i + 1;
        let tail = &out[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let keyword = NAME_KEYWORDS.iter().any(|k| {
            tail.get(..k.len() - 1)
                .is_some_and(|h| h.eq_ignore_ascii_case(&k[1..]))
        });
        if end > 0 && !tail.starts_with(|c: char| c.is_ascii_digit()) && !keyword {
            let name = tail[..end].to_string();
            if !literal.contains(&name) {
                literal.push(name);
            }
        }
    }
    Ok(out)
}

/// fio's keywords `$pagesize`, `$mb_memory` and `$ncpus`, with their values.
fn builtins() -> Vec<(&'static str, String)> {
    // SAFETY: sysconf only reads system configuration.
    let conf = |c| u64::try_from(unsafe { libc::sysconf(c) }).ok();
    let ncpus = std::thread::available_parallelism()
        .ok()
        .map(|n| n.get() as u64);
    let mb = conf(libc::_SC_PHYS_PAGES)
        .zip(conf(libc::_SC_PAGESIZE))
        .map(|(p, s)| (p * s) >> 20);
    [
        ("$pagesize", conf(libc::_SC_PAGESIZE)),
        ("$mb_memory", mb),
        ("$ncpus", ncpus),
    ]
    .into_iter()
    .filter_map(|(w, v)| Some((w, v?.to_string())))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{IoEngine, IoMem, Rw, VerifyKind};

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn ok(text: &str) -> JobFile {
        parse(text, "t.fio", &no_env, &[]).unwrap()
    }

    fn err(text: &str) -> String {
        parse(text, "t.fio", &no_env, &[]).unwrap_err().to_string()
    }

    const AWS: &str = "[global] \nallow_file_create=0\nioengine=psync\niomem=mmap\nfilesize=64g\nsize=16g\nbs=1m \nratemin=1m\nverify=xxhash\nverify_fatal=1\nverify_dump=1\n\n[write-phase-0] \noffset=0\nrw=write\nfilename=/dev/xdma0_h2c_0\ndo_verify=0\n\n[verify-phase-0] \nnew_group\nwait_for=write-phase-0\noffset=0\nrw=read\nfilename=/dev/xdma0_c2h_0\ndo_verify=1\n";

    #[test]
    fn aws_fpga_style() {
        let f = ok(AWS);
        assert!(f.warnings.is_empty(), "{:?}", f.warnings);
        let [w, v] = &f.jobs[..] else {
            panic!("want 2 jobs, got {}", f.jobs.len())
        };
        assert_eq!(
            (w.name.as_str(), w.group, w.rw, w.do_verify),
            ("write-phase-0", 0, Rw::Write, false)
        );
        assert_eq!(w.filename.as_deref(), Some("/dev/xdma0_h2c_0"));
        assert_eq!(
            (v.name.as_str(), v.line, v.group, v.rw),
            ("verify-phase-0", 19, 1, Rw::Read)
        );
        assert_eq!(v.wait_for.as_deref(), Some("write-phase-0"));
        assert_eq!(
            (v.filesize, v.size, v.bs),
            (Some(64 << 30), Some(16 << 30), 1 << 20)
        );
        assert_eq!(
            (v.verify, v.iomem, v.ioengine),
            (Some(VerifyKind::Xxhash), IoMem::Mmap, IoEngine::Psync)
        );
        assert!(!v.allow_file_create && v.verify_fatal && v.verify_dump && v.do_verify);
        assert_eq!(v.ratemin, Some(1 << 20));
    }

    #[test]
    fn later_global_affects_later_jobs_only() {
        let f = ok("[global]\nbs=8k\n[a]\n[global]\niodepth=4\n[ 4KB ]\nbs=4k\n[4KB]\n");
        let d: Vec<_> = f
            .jobs
            .iter()
            .map(|j| (j.name.as_str(), j.bs, j.iodepth))
            .collect();
        assert_eq!(d, [("a", 8192, 1), ("4KB", 4096, 4), ("4KB", 8192, 4)]);
    }

    #[test]
    fn comments_and_values() {
        let f = ok(
            "; top\n  # indented\n[j] # job\nfilename=/tmp/a#b ; inline\nname = x=y\ndirect\t;c\n",
        );
        let j = &f.jobs[0];
        assert_eq!(
            (j.filename.as_deref(), j.name.as_str(), j.direct),
            (Some("/tmp/a#b"), "x=y", true)
        );
    }

    #[test]
    fn env_substitution() {
        let env = |k: &str| (k == "DEV").then(|| "/dev/nvme0n1".to_string());
        let f = parse(
            "[j]\nfilename=${DEV}p1\nbs=$pagesize\nnumjobs=$ncpus\ndescription=cost $\n",
            "t.fio",
            &env,
            &[],
        )
        .unwrap();
        assert_eq!(f.jobs[0].filename.as_deref(), Some("/dev/nvme0n1p1"));
        assert_eq!(f.jobs[0].bs, 4096);
        let ncpus = std::thread::available_parallelism().unwrap().get();
        assert_eq!(f.jobs.len(), ncpus);
        assert!(
            f.warnings.iter().all(|w| w.contains("'description'")),
            "{:?}",
            f.warnings
        );
        // Unset, within a value: empty, as in fio, said once.
        let f = parse("[global]\n\n[j]\nfilename=${NOPE}/x\n", "t.fio", &env, &[]).unwrap();
        assert_eq!(f.jobs[0].filename.as_deref(), Some("/x"));
        assert!(
            f.warnings[0].contains("taken as empty, as fio does"),
            "{:?}",
            f.warnings
        );
        // $NAME without braces is kept as written, as fio keeps it; an
        // unterminated ${ too; ${} is empty.
        let f = parse(
            "[j]\nfilename=$DEV:${DEV-x\n[k]\nfilename=a${}b\n",
            "t.fio",
            &env,
            &[],
        )
        .unwrap();
        assert_eq!(f.jobs[0].filenames, ["$DEV", "${DEV-x"]);
        assert_eq!(f.jobs[1].filename.as_deref(), Some("ab"));
        assert_eq!(
            f.warnings,
            [
                "t.fio:2: filename: $DEV is kept as written, as fio keeps it: fio substitutes an environment variable only written ${DEV}"
            ]
        );
        // Unset, leaving the option empty or unparsable: fio drops the job
        // and runs nothing, exit 1 (no default taken).
        let e = parse("[j]\nfilename=$DEV\nsize=${SZ}\n", "t.fio", &env, &[]).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert_eq!(
            e.to_string(),
            "t.fio:3: size=${SZ}: environment variable SZ is not set (or is empty), which leaves size empty: fio drops job j for it and runs nothing (exit 1); set SZ"
        );
        let e = parse("[global]\nbs=${BS}k\n[j]\n", "t.fio", &env, &[]).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        let e = e.to_string();
        assert!(e.starts_with("t.fio:2: bs=k: malformed size"), "{e}");
        assert!(e.ends_with("drops job global for this line and runs nothing (exit 1): set BS"));
        // A log's name may be empty (the job's), in fio too.
        let f = parse("[j]\nwrite_bw_log=${NOPE}\n", "t.fio", &env, &[]).unwrap();
        assert_eq!(f.jobs[0].logs.bw.as_deref(), Some(""));
        assert!(err("[j]\nsize=$(1+2)\n").contains("arithmetic"));
        // filename_format's keywords are the job's, not the environment's.
        let f = parse(
            "[j]\nfilename_format=f.$JobNum.${NOPE}$filenum\n",
            "t.fio",
            &env,
            &[],
        )
        .unwrap();
        assert_eq!(f.jobs[0].filename.as_deref(), Some("f.0.0"));
        assert_eq!(f.warnings.len(), 1, "{:?}", f.warnings);
    }

    #[test]
    fn include_fan_out_has_a_total_allowance() {
        // Ten includes of the next level, seven levels: refused quickly.
        let dir = tempfile::tempdir().unwrap();
        for level in 0..7 {
            let body: String = (0..10)
                .map(|_| format!("include l{}.inc\n", level + 1))
                .collect();
            std::fs::write(dir.path().join(format!("l{level}.inc")), body).unwrap();
        }
        std::fs::write(dir.path().join("l7.inc"), "bs=4k\n").unwrap();
        let main = dir.path().join("main.fio");
        std::fs::write(&main, "[j]\ninclude l0.inc\n").unwrap();
        let t = std::time::Instant::now();
        let e = load(&main, &[]).unwrap_err().to_string();
        assert!(e.contains("includes in all"), "{e}");
        assert!(t.elapsed() < std::time::Duration::from_secs(30));
        // A job file that never ends (a device) is refused, not read for ever.
        let e = load(Path::new("/dev/zero"), &[]).unwrap_err().to_string();
        assert!(e.contains("more than a job file holds"), "{e}");
        // Nor does a FIFO with no writer block.
        let fifo = dir.path().join("jobs.fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid path string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = load(&fifo, &[]).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        std::fs::write(&main, "[j]\ninclude jobs.fifo\n").unwrap();
        let e = load(&main, &[]).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }

    #[test]
    fn include_takes_the_named_file_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main.fio");
        std::fs::write(dir.path().join("common.inc"), "bs=8k\n\nbogus line\n").unwrap();
        std::fs::write(&main, "[global]\ninclude common.inc\n[j]\n").unwrap();
        let shown = main.display().to_string();
        let e = load(&main, &[]).unwrap_err().to_string();
        assert!(e.ends_with("common.inc:3: malformed line 'bogus line': expected [section], key=value or a comment"), "{e}");
        std::fs::write(dir.path().join("common.inc"), "bs=8k\n").unwrap();
        let f = load(&main, &[]).unwrap();
        assert_eq!(f.jobs[0].bs, 8192);
        std::fs::write(&main, "[j]\ninclude missing.inc\n").unwrap();
        let e = load(&main, &[]).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{shown}:2: include missing.inc: cannot read")),
            "{e}"
        );
        std::fs::write(&main, "[j]\ninclude main.fio\n").unwrap();
        let e = load(&main, &[]).unwrap_err().to_string();
        assert!(e.contains("nest more than 8 deep"), "{e}");
    }

    #[test]
    fn malformed_lines() {
        let msg = |l: &str| {
            format!("t.fio:2: malformed line '{l}': expected [section], key=value or a comment")
        };
        for l in ["[unterminated", "=value", "bs 4k", "[]", "[a]b"] {
            assert_eq!(err(&format!("[j]\n{l}\n")), msg(l));
        }
        assert_eq!(
            err("\nbs=4k\n[j]\n"),
            "t.fio:2: option 'bs' outside any [section]; put it under [global] or a job section"
        );
        assert!(err("[global]\nbs=4k\n").starts_with("t.fio: no jobs defined (only [global]?)"));
    }

    #[test]
    fn errors_and_warnings_carry_lines() {
        assert!(
            err("[j]\n\nverify=md4\n")
                .starts_with("t.fio:3: verify=md4: unknown verify kind; use one of md5,")
        );
        assert!(
            err("[j]\nbssplit=4k/60:8k/50\n")
                .starts_with("t.fio:2: bssplit=4k/60:8k/50: the percentages add up to 110")
        );
        // A [global] line reaching three jobs notes once; job lines each note.
        let f = ok("[global]\nthread\nclat_percentiles=1\n[a]\n[b]\n[c]\ngtod_reduce=1\n");
        assert_eq!(f.warnings.len(), 2, "{:?}", f.warnings);
        assert!(f.warnings[0].starts_with("t.fio:3: option 'clat_percentiles' changes no figure"));
        assert!(f.warnings[1].starts_with("t.fio:7: option 'gtod_reduce' changes no figure"));
        // Options that would change a figure are refused where they stand;
        // misspellings are named with the nearest fio option.
        assert_eq!(
            err("[a]\nbs=4k\nbs_unaligned=1\n"),
            "t.fio:3: option 'bs_unaligned' is not supported: unaligned block sizes are not supported; drop it"
        );
        assert_eq!(
            err("[a]\ndirecotry=/tmp\n"),
            "t.fio:2: unknown option 'direcotry' (not a fio option); did you mean 'directory'?"
        );
    }

    #[test]
    fn numjobs_expansion() {
        let f = ok("[a]\nnumjobs=3\noffset=1m\noffset_increment=1g\nstonewall\n[b]\n");
        let d: Vec<_> = f
            .jobs
            .iter()
            .map(|j| (j.name.as_str(), j.clone, j.group, j.offset, j.stonewall))
            .collect();
        assert_eq!(
            d,
            [
                ("a", 0, 0, 1 << 20, true),
                // fio numbers the clones after the first counting down.
                ("a", 1, 0, (1 << 20) + (2 << 30), false),
                ("a", 2, 0, (1 << 20) + (1 << 30), false),
                ("b", 0, 0, 0, false),
            ]
        );
    }

    #[test]
    fn default_filenames_as_fio_makes_them() {
        let names = |t: &str| -> Vec<String> {
            ok(t)
                .jobs
                .into_iter()
                .map(|j| j.filename.unwrap())
                .collect()
        };
        // No filename=: jobname.jobnum.filenum, one per clone, here.
        assert_eq!(
            names("[seq-w]\nnumjobs=3\n[r]\n"),
            // The second job is fio's clone 2: fio makes them counting down.
            ["seq-w.0.0", "seq-w.2.0", "seq-w.1.0", "r.0.0"]
        );
        // directory= holds generated and relative names, not absolute ones.
        assert_eq!(
            names(
                "[global]\ndirectory=/mnt/t\n[a]\nnumjobs=2\n[b]\nfilename=f\n[c]\nfilename=/dev/x\n[d]\nfilename=xfer:tcp\n"
            ),
            [
                "/mnt/t/a.0.0",
                "/mnt/t/a.1.0",
                "/mnt/t/f",
                "/dev/x",
                "xfer:tcp"
            ]
        );
        // filename_format= with its keywords (any case), not taken for
        // environment variables.
        assert_eq!(
            names(
                "[global]\nfilename_format=data/$JOBNAME-$jobnumx$filenum.$jobname$\n[j]\nnumjobs=2\n"
            ),
            ["data/j-0x0.j$", "data/j-1x0.j$"]
        );
        assert_eq!(names("[j]\nfilename_format=f.$clientuid\n"), ["f."]);
        // nrfiles with a format naming the files alike: fio's job has the
        // one file nrfiles times; the clones theirs.
        let j = &ok("[j]\nfilename_format=file$jobnum\nnrfiles=3\nnumjobs=2\ndirectory=/d\n").jobs;
        assert_eq!(j[0].filenames, ["/d/file0"; 3]);
        assert_eq!(j[1].filenames, ["/d/file1"; 3]);
        assert_eq!(
            err("\n[j]\nnrfiles=4\nioengine=cpuio\n"),
            "t.fio:2: job j: nrfiles=4: ioengine=cpuio has no files to spread over; use one job per target (numjobs=N)"
        );
        assert_eq!(names("[j]\nnrfiles=1\n"), ["j.0.0"]);
        // nrfiles: the job's filename is file 0's, filenames all of them.
        assert_eq!(
            names("[j]\nnrfiles=3\nioengine=filestat\nnumjobs=2\n"),
            ["j.0.0", "j.1.0"]
        );
        let j = &ok("[global]\ndirectory=/d\n[j]\nnrfiles=2\n[k]\nfilename=a:/b\n").jobs;
        assert_eq!(j[0].filenames, ["/d/j.0.0", "/d/j.0.1"]);
        assert_eq!(
            (j[1].nrfiles, &j[1].filenames[..]),
            (2, &["/d/a".to_string(), "/b".to_string()][..])
        );
        // Several directories: clone N's files in directory N modulo
        // their count (fio's set_name_idx); filename= under the first.
        assert_eq!(
            names("[j]\ndirectory=/a:/b\nnumjobs=3\n[k]\ndirectory=/a:/b\nfilename=f\nnumjobs=2\n"),
            ["/a/j.0.0", "/a/j.2.0", "/b/j.1.0", "/a/f", "/a/f"]
        );
    }

    #[test]
    fn groups() {
        let f = ok("[a]\n[b]\n[c]\nstonewall\n[d]\nnew_group=1\n[e]\nwait_for_previous=0\n");
        let g: Vec<u32> = f.jobs.iter().map(|j| j.group).collect();
        assert_eq!(g, [0, 0, 1, 2, 2]);
        // stonewall in [global] reaches every job: each its own group.
        let f = ok("[global]\nstonewall\n[a]\n[b]\n[c]\n");
        let g: Vec<u32> = f.jobs.iter().map(|j| j.group).collect();
        assert_eq!(g, [0, 1, 2]);
    }

    #[test]
    fn wait_for_names_an_earlier_job() {
        let f = ok("[a]\n[b]\nwait_for=a\n");
        assert_eq!(f.jobs[1].wait_for.as_deref(), Some("a"));
        assert_eq!(
            err("[a]\nwait_for=b\n[b]\n"),
            "t.fio:2: wait_for=b names no earlier job; name a job section above this one"
        );
        assert!(err("[a]\n[b]\nwait_for=zzz\n").starts_with("t.fio:3: wait_for=zzz"));
    }

    #[test]
    fn overrides_apply_to_every_job() {
        let o = vec![
            ("bs".to_string(), Some("64k".to_string())),
            ("direct".to_string(), None),
            ("clat_percentiles".to_string(), Some("1".to_string())),
        ];
        let f = parse("[a]\nbs=4k\n[b]\n", "t.fio", &no_env, &o).unwrap();
        assert!(f.jobs.iter().all(|j| j.bs == 65536 && j.direct));
        assert_eq!(f.warnings.len(), 1, "{:?}", f.warnings);
        assert!(
            f.warnings[0].starts_with("command line: option 'clat_percentiles' changes no figure")
        );
        let o = vec![("fancy".to_string(), Some("1".to_string()))];
        assert_eq!(
            parse("[a]\n", "t.fio", &no_env, &o)
                .unwrap_err()
                .to_string(),
            "command line: unknown option 'fancy' (not a fio option); check the spelling against fio's HOWTO"
        );
        let o = vec![("iodepth".to_string(), Some("0".to_string()))];
        let e = parse("[a]\n", "t.fio", &no_env, &o)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("command line: iodepth=0: expected a whole number from 1 to 65536"),
            "{e}"
        );
    }

    #[test]
    fn load_reports_unreadable_files() {
        let e = load(Path::new("/nonexistent/x.fio"), &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("cannot read job file /nonexistent/x.fio: ")
                && e.ends_with("; check the path"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.fio");
        std::fs::write(&p, AWS).unwrap();
        assert_eq!(load(&p, &[]).unwrap().jobs.len(), 2);
    }
}
