//! Where the memory figures are kept between runs: one JSON file,
//! `$XDG_CACHE_HOME/xferbench/limits.json` (`~/.cache/xferbench/` without
//! it), a list of entries each valid for one boot of one CPU model with one
//! set of allowed CPUs (the key): a reboot, another machine or a `taskset`
//! measures again, and `xferbench limits --refresh` does on demand. Up to
//! [`KEPT`] keys are kept, so runs bound to different CPUs (MPI ranks,
//! `taskset`) do not measure over each other's figures. Figures measured
//! while other tasks were running are kept marked as such, and measured
//! again by the first run that finds the machine quiet: a busy machine
//! copies slower, and a low figure read back would stand as every later
//! run's ceiling (while it stays busy, measuring again would cost each run
//! a second and give no better figure). A machine where nothing can be
//! written still works; it measures once a process.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The figures as measured and kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Boot id, CPU model and allowed CPUs: what the figures hold for.
    pub key: String,
    /// One core copying between two buffers larger than its caches, MB/s.
    pub copy_one_core_mbps: f64,
    /// Every allowed CPU copying its own buffers at once, MB/s in all.
    pub copy_all_cores_mbps: f64,
    /// How many CPUs that was.
    pub cores: usize,
    /// Two back-to-back clock reads, ns (the median).
    pub clock_floor_ns: f64,
    /// Core-to-core cache-line round trips, ns, by pair ("0,1").
    #[serde(default)]
    pub round_trips: BTreeMap<String, f64>,
    /// The one-core copy's buffer, bytes.
    pub buffer_bytes: usize,
    /// When (RFC 3339, UTC).
    pub measured_at: String,
    /// Tasks other than the measurement that were ready to run while it
    /// ran (the median of `procs_running` sampled before, between and
    /// after its copies): more than none, and the figures may be low.
    #[serde(default)]
    pub others_running: u32,
}

/// Keys kept in the file at most (the newest).
pub const KEPT: usize = 8;

/// The entries in the file: a list, or the single entry files written
/// before there were several.
fn entries() -> Vec<Measured> {
    let Some(text) = path().and_then(|p| std::fs::read_to_string(p).ok()) else {
        return Vec::new();
    };
    serde_json::from_str::<Vec<Measured>>(&text)
        .or_else(|_| serde_json::from_str::<Measured>(&text).map(|m| vec![m]))
        .unwrap_or_default()
}

/// What the figures of this process hold for: this boot, this CPU model,
/// these CPUs.
pub fn key() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    format!(
        "{boot}|{}|{}",
        crate::measure::env::cpu_model(),
        crate::measure::placement::compact(&crate::measure::placement::allowed_cpus())
    )
}

/// The cache file: under `XDG_CACHE_HOME` when it is an absolute path,
/// else under `~/.cache`; None with neither.
pub fn path() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from) {
        Some(p) if p.is_absolute() => p,
        _ => PathBuf::from(std::env::var_os("HOME").filter(|h| !h.is_empty())?).join(".cache"),
    };
    Some(base.join("xferbench").join("limits.json"))
}

/// The kept figures, when they are for `key`.
pub fn load(key: &str) -> Option<Measured> {
    entries()
        .into_iter()
        .find(|m| m.key == key && m.copy_one_core_mbps > 0.0)
}

/// Keeps `m` (in place of any entry with its key, first in the list),
/// written whole to a temporary file and renamed over the old one, so a
/// reader never sees half of it; a failure is not an error (the next run
/// measures again).
pub fn store(m: &Measured) {
    let Some(path) = path() else {
        return;
    };
    let Some(dir) = path.parent() else {
        return;
    };
    let mut all = entries();
    all.retain(|e| e.key != m.key);
    all.insert(0, m.clone());
    all.truncate(KEPT);
    let Ok(text) = serde_json::to_string_pretty(&all) else {
        return;
    };
    let tmp = dir.join(format!("limits.json.{}.tmp", std::process::id()));
    let written = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&tmp, text))
        .and_then(|()| std::fs::rename(&tmp, &path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Where a limit of `m` came from, with how to measure again.
pub fn source(m: &Measured) -> String {
    if m.others_running > 0 {
        return format!(
            "measured {} while {} other task{} ran: may be low; the next run on a quiet machine measures again (or `xferbench limits --refresh`)",
            m.measured_at,
            m.others_running,
            if m.others_running == 1 { "" } else { "s" }
        );
    }
    match path() {
        Some(p) if p.exists() => format!(
            "measured {} (kept in {}; `xferbench limits --refresh` measures again)",
            m.measured_at,
            p.display()
        ),
        _ => format!("measured {} (not kept: no writable cache)", m.measured_at),
    }
}
