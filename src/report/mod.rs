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
pub mod saved;
pub mod stream;
pub mod svg;
pub mod table;

use crate::error::{Error, Result};
use crate::format::Format;
use crate::measure::stats::Stat;
use crate::result::Run;
use crate::units::Unit;
use std::io::Write;
use std::path::Path;

/// Renders `run` in `format` (tables show `stats`, sizes counted in `unit`).
pub fn render(run: &Run, format: Format, stats: &[Stat], unit: Unit) -> Result<String> {
    match format {
        Format::Table => Ok(table::render(run, stats, unit)),
        Format::Json => json::render(run),
        Format::Csv => Ok(csv::render(run)),
    }
}

/// Writes the rendered text to `path`, or to stdout.
/// Fails before a run, not after it, when the output file cannot be written.
/// Leaves no file behind that was not there before.
pub fn check_writable(path: Option<&Path>) -> Result<()> {
    let Some(p) = path else { return Ok(()) };
    let existed = p.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(p)
        .map_err(|e| {
            Error::usage(format!(
                "cannot write {}: {e}; pick a writable path with -o",
                p.display()
            ))
        })?;
    if !existed {
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}

pub fn emit(text: &str, path: Option<&Path>) -> Result<()> {
    match path {
        Some(p) => {
            // Written beside the target, then renamed over it: an interrupted
            // run never leaves a half-written results file.
            let mut tmp = p.as_os_str().to_owned();
            tmp.push(format!(".tmp-{}", std::process::id()));
            let tmp = std::path::PathBuf::from(tmp);
            let fail = |e| Error::io(format!("cannot write {}", p.display()), e);
            std::fs::write(&tmp, text)
                .and_then(|()| std::fs::rename(&tmp, p))
                .map_err(|e| {
                    let _ = std::fs::remove_file(&tmp);
                    fail(e)
                })
        }
        None => {
            let mut out = std::io::stdout().lock();
            // A closed stdout (e.g. `| head`) is not worth a panic.
            let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
            Ok(())
        }
    }
}
