//! Renderers from a `Run`, one file per format. Reports read only `Run`.

pub mod bundle;
pub mod compare;
pub mod csv;
pub mod curve;
pub mod figure;
pub mod figures;
pub mod flowgraph;
pub mod headline;
pub mod html;
pub mod json;
pub mod load;
pub mod mesh;
pub mod pairs;
pub mod runs_compared;
pub mod saved;
pub mod spectrum;
pub mod stream;
pub mod summary;
pub mod svg;
pub mod table;

use crate::error::{Error, Result};
use crate::format::Format;
use crate::measure::stats::Stat;
use crate::result::Run;
use crate::units::Unit;
use std::io::Write;
use std::path::Path;

/// The three forms every measuring command writes a result in. Each
/// experiment's result type implements it, so a caller (the CLI or a program
/// embedding the library) renders any result the same way.
pub trait Render {
    /// The tables for people, in Markdown.
    fn table(&self) -> String;
    /// The whole result as pretty JSON, for programs.
    fn json(&self) -> Result<String>;
    /// One row per measured point, for spreadsheets.
    fn csv(&self) -> String;
    /// Points measured so far (partial runs say how many were written).
    fn points(&self) -> usize;
    /// The result in `format`.
    fn render(&self, format: Format) -> Result<String> {
        match format {
            Format::Table => Ok(self.table()),
            Format::Json => self.json(),
            Format::Csv => Ok(self.csv()),
        }
    }
}

impl Render for Run {
    /// Shows the statistics and size unit the run was asked for (recorded
    /// in its options as `stats` and `unit`), else the defaults.
    fn table(&self) -> String {
        let stats = self.options["stats"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str()?.parse::<Stat>().ok())
                    .collect::<Vec<_>>()
            })
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| crate::options::Common::default().stats);
        let unit = self.options["unit"]
            .as_str()
            .and_then(|u| u.parse::<Unit>().ok())
            .unwrap_or(Unit::Bytes);
        table::render(self, &stats, unit)
    }
    fn json(&self) -> Result<String> {
        json::render(self)
    }
    fn csv(&self) -> String {
        csv::render(self)
    }
    fn points(&self) -> usize {
        self.points.len()
    }
}

/// `Render` for a result whose JSON is its plain serialization: the
/// experiment's table and CSV renderers, and the points it measured.
macro_rules! render_with {
    ($run:ty, $table:path, $csv:path) => {
        impl Render for $run {
            fn table(&self) -> String {
                $table(self)
            }
            fn json(&self) -> Result<String> {
                json::render(self)
            }
            fn csv(&self) -> String {
                $csv(self)
            }
            fn points(&self) -> usize {
                self.points.len()
            }
        }
    };
}

render_with!(crate::result::curve::CurveRun, curve::render, curve::csv);
render_with!(
    crate::result::flowgraph::FlowRun,
    flowgraph::render,
    flowgraph::csv
);
render_with!(crate::result::load::LoadRun, load::render, load::csv);
render_with!(crate::result::mesh::PairsRun, pairs::render, pairs::csv);

impl Render for crate::result::mesh::MeshRun {
    /// The matrices grouped by host, suspects first; rendered from the
    /// JSON form, as `report` renders a saved mesh.
    fn table(&self) -> String {
        mesh::table(&serde_json::to_value(self).unwrap_or_default())
    }
    fn json(&self) -> Result<String> {
        json::render(self)
    }
    fn csv(&self) -> String {
        mesh::csv(&serde_json::to_value(self).unwrap_or_default())
    }
    fn points(&self) -> usize {
        self.points.iter().filter(|p| !p.missing).count()
    }
}

/// Where `-o PATH` writes: a symlink's final target (followed, never
/// replaced), as a regular file (written beside it and renamed over it, so
/// an interrupted run never leaves half a file) or as something written
/// through in place (a device such as /dev/null, a FIFO, /dev/stdout).
enum Dest {
    File(std::path::PathBuf),
    Through(std::path::PathBuf),
}

fn destination(p: &Path) -> std::io::Result<Dest> {
    let mut cur = p.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() => {
                // /proc's links (/dev/stdout → /proc/self/fd/1 → a pipe)
                // name no path: opening the link itself reaches the file.
                if cur.starts_with("/proc") {
                    return Ok(Dest::Through(cur));
                }
                let t = std::fs::read_link(&cur)?;
                cur = match cur.parent() {
                    Some(dir) if t.is_relative() => dir.join(t),
                    _ => t,
                };
            }
            Ok(m) if m.is_dir() => {
                return Err(std::io::Error::other("it is a directory"));
            }
            Ok(m) if m.is_file() => return Ok(Dest::File(cur)),
            Ok(_) => return Ok(Dest::Through(cur)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Dest::File(cur)),
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// Fails before a run, not after it, when the output cannot be written:
/// the file (or its directory, where the new file is made), or the device.
/// Leaves no file behind that was not there before.
pub fn check_writable(path: Option<&Path>) -> Result<()> {
    let Some(p) = path else { return Ok(()) };
    let refuse = |e: std::io::Error| {
        Error::usage(format!(
            "cannot write {}: {e}; pick a writable path with -o",
            p.display()
        ))
    };
    match destination(p).map_err(refuse)? {
        Dest::Through(t) => {
            use std::os::unix::fs::OpenOptionsExt;
            // Non-blocking: a FIFO with no reader yet is not an error.
            match std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&t)
            {
                Err(e) if e.raw_os_error() != Some(libc::ENXIO) => Err(refuse(e)),
                _ => Ok(()),
            }
        }
        Dest::File(t) => {
            if t.exists() {
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(&t)
                    .map_err(refuse)?;
            }
            // The file is made beside the target, then renamed over it.
            let probe = temp_beside(&t);
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&probe)
                .map_err(refuse)?;
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
    }
}

/// A temporary name next to `t`.
fn temp_beside(t: &Path) -> std::path::PathBuf {
    let mut tmp = t.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    tmp.into()
}

/// Writes the rendered text to `path` (see [`Dest`]), or to stdout. When
/// the path cannot take it (a full file system, a device that refuses),
/// the results are kept in a fallback file named in the error, never lost.
pub fn emit(text: &str, path: Option<&Path>) -> Result<()> {
    match path {
        Some(p) => {
            let written = destination(p).and_then(|d| match d {
                Dest::Through(t) => std::fs::OpenOptions::new()
                    .write(true)
                    .open(&t)
                    .and_then(|mut f| f.write_all(text.as_bytes())),
                Dest::File(t) => {
                    let tmp = temp_beside(&t);
                    std::fs::write(&tmp, text)
                        .and_then(|()| std::fs::rename(&tmp, &t))
                        .inspect_err(|_| {
                            let _ = std::fs::remove_file(&tmp);
                        })
                }
            });
            written.map_err(|e| kept_elsewhere(text, p, e))
        }
        None => {
            let mut out = std::io::stdout().lock();
            // A closed stdout (e.g. `| head`) is not worth a panic.
            let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
            Ok(())
        }
    }
}

/// The error for an output that could not be written, after keeping the
/// results in a fallback file (the temporary directory, else the current
/// one) that the error names.
fn kept_elsewhere(text: &str, p: &Path, e: std::io::Error) -> Error {
    let name = p
        .file_name()
        .map_or("results".into(), |n| n.to_string_lossy().into_owned());
    let file = format!("xferbench-{}-{name}", std::process::id());
    for dir in [std::env::temp_dir(), std::path::PathBuf::from(".")] {
        let f = dir.join(&file);
        if std::fs::write(&f, text).is_ok() {
            return Error::run(format!(
                "cannot write {} ({e}); the results are kept in {}",
                p.display(),
                f.display()
            ));
        }
        let _ = std::fs::remove_file(&f);
    }
    Error::run(format!(
        "cannot write {} ({e}), nor a fallback file in the temporary or current directory: the results are lost",
        p.display()
    ))
}
