//! Where the memory figures are kept between runs: one JSON file,
//! `$XDG_CACHE_HOME/xferbench/limits.json` (`~/.cache/xferbench/` without
//! it), valid for one boot of one CPU model with one set of allowed CPUs
//! (the key): a reboot, another machine or a `taskset` measures again, and
//! `xferbench limits --refresh` does on demand. A machine where nothing can
//! be written still works; it measures once a process.

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
    let text = std::fs::read_to_string(path()?).ok()?;
    serde_json::from_str::<Measured>(&text)
        .ok()
        .filter(|m| m.key == key && m.copy_one_core_mbps > 0.0)
}

/// Keeps `m`, written whole to a temporary file and renamed over the old
/// one, so a reader never sees half of it; a failure is not an error (the
/// next run measures again).
pub fn store(m: &Measured) {
    let Some(path) = path() else {
        return;
    };
    let Some(dir) = path.parent() else {
        return;
    };
    let Ok(text) = serde_json::to_string_pretty(m) else {
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
    match path() {
        Some(p) if p.exists() => format!(
            "measured {} (kept in {}; `xferbench limits --refresh` measures again)",
            m.measured_at,
            p.display()
        ),
        _ => format!("measured {} (not kept: no writable cache)", m.measured_at),
    }
}
