//! Named baselines: a run's JSON kept under a name, to compare later runs
//! with (`--save-baseline NAME`, `--baseline NAME`, `compare NAME NEW.json`).
//! They live in `$XFERBENCH_BASELINE_DIR`, else `.xferbench/baselines` in
//! the working directory (as criterion keeps its baselines under `target/`),
//! one `NAME.json` each.

use crate::error::{Error, Result};
use crate::result::saved::SavedRun;
use std::path::PathBuf;

/// The folder baselines are kept in.
pub fn dir() -> PathBuf {
    std::env::var_os("XFERBENCH_BASELINE_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from(".xferbench/baselines"), PathBuf::from)
}

/// Checks a baseline name: letters, digits, `.`, `_`, `-`, not starting
/// with a dot (a name, not a path).
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "baseline name {name:?}: use letters, digits, '.', '_' and '-' (e.g. main or v1.2)"
        )))
    }
}

/// Where the baseline `name` is kept.
pub fn path(name: &str) -> Result<PathBuf> {
    check_name(name)?;
    Ok(dir().join(format!("{name}.json")))
}

/// The names of the saved baselines, sorted.
pub fn list() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir())
        .map(|d| {
            d.filter_map(|e| {
                let p = e.ok()?.path();
                if p.extension()? != "json" {
                    return None;
                }
                Some(p.file_stem()?.to_string_lossy().into_owned())
            })
            .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Keeps `json` (a complete run) as the baseline `name`; returns where.
pub fn save(name: &str, json: &str) -> Result<PathBuf> {
    let p = path(name)?;
    let d = dir();
    std::fs::create_dir_all(&d).map_err(|e| {
        Error::usage(format!(
            "cannot create the baseline folder {}: {e}; set XFERBENCH_BASELINE_DIR to a writable folder",
            d.display()
        ))
        .with_source(e)
    })?;
    crate::output::emit(json, Some(&p))?;
    Ok(p)
}

/// The baseline `name`, read back.
pub fn load(name: &str) -> Result<SavedRun> {
    let p = path(name)?;
    if !p.exists() {
        let have = list();
        return Err(Error::usage(format!(
            "no baseline named {name} in {} ({}); save one with --save-baseline {name}",
            dir().display(),
            if have.is_empty() {
                "none saved yet".to_string()
            } else {
                format!("saved: {}", have.join(", "))
            }
        )));
    }
    let mut run = SavedRun::load(&p)?;
    run.label = name.to_string();
    Ok(run)
}

/// A run named on the command line: a results file, or else the name of
/// a saved baseline.
pub fn resolve(arg: &str) -> Result<SavedRun> {
    if is_path(arg) {
        return SavedRun::load(std::path::Path::new(arg));
    }
    load(arg)
}

/// Whether [`resolve`] takes `arg` as a file rather than a baseline's name.
fn is_path(arg: &str) -> bool {
    std::path::Path::new(arg).exists()
        || arg.contains('/')
        || arg.ends_with(".json")
        || check_name(arg).is_err()
}

/// The file [`resolve`] reads for `arg`: the path, or the baseline's file.
pub fn source(arg: &str) -> std::path::PathBuf {
    if !is_path(arg)
        && let Ok(p) = path(arg)
    {
        return p;
    }
    std::path::PathBuf::from(arg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_names_not_paths() {
        for ok in ["main", "v1.2", "pr-42_b"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "../x", ".hidden", "a/b", "a b"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
