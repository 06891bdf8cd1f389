//! fio's engine-specific options (`fixedbufs`, `nowait`, `cpuload`…): parsed
//! here, beside the engines that read them, so [`Job::set`] hands on the
//! keys it does not know itself. Whether an option suits the job's engine is
//! checked once every option is in (`engine::check`): fio reads a job's
//! lines in order, xferbench does not make `ioengine=` come first.
//!
//! [`Job::set`]: crate::job::Job::set

use crate::error::{Error, Result};
use crate::job::SetOutcome;
use serde::Serialize;

/// `cpumode=` of the cpuio engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuMode {
    /// Spin on the clock (fio: "noop instructions").
    Noop,
    /// Sort a small array again and again (more memory traffic, more power).
    Qsort,
}

/// `stat_type=` of the filestat engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StatType {
    Stat,
    Lstat,
    Statx,
}

/// The engine-specific options of one job, fio's defaults unless set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EngineOpts {
    /// io_uring `fixedbufs`: the worker's buffers registered, I/O by
    /// READ_FIXED/WRITE_FIXED.
    pub fixedbufs: bool,
    /// io_uring `registerfiles`: the target's descriptor registered.
    pub registerfiles: bool,
    /// io_uring `sqthread_poll_cpu`: the SQPOLL thread's CPU.
    pub sqthread_poll_cpu: Option<u32>,
    /// io_uring `nonvectored`: -1 (fio's default: non-vectored where the
    /// kernel has it, as always here), 0 (READV/WRITEV), 1 (READ/WRITE).
    pub nonvectored: i32,
    /// io_uring `force_async=N`: every N-th request with IOSQE_ASYNC.
    pub force_async: u32,
    /// pvsync2, libaio, io_uring `nowait`: RWF_NOWAIT on every I/O.
    pub nowait: bool,
    /// pvsync2 `uncached`: RWF_DONTCACHE (Linux 6.14+; fio itself now
    /// ignores the option).
    pub uncached: bool,
    /// pvsync2 `hipri_percentage`: the share of I/Os with RWF_HIPRI.
    pub hipri_percentage: u32,
    /// libaio `userspace_reap`: read completions from the AIO ring in user
    /// space when polling.
    pub userspace_reap: bool,
    /// cpuio `cpuload=`: percent of one CPU to burn (required).
    pub cpuload: Option<u32>,
    /// cpuio `cpuchunks=`: length of one burn, µs.
    pub cpuchunks: u32,
    pub cpumode: CpuMode,
    /// cpuio `exit_on_io_done`: stop when the I/O jobs alongside are done
    /// even if `runtime=` has time left.
    pub exit_on_io_done: bool,
    pub stat_type: StatType,
    /// Which of these were set (names, in order), for the check that they
    /// suit the job's engine.
    #[serde(skip)]
    pub given: Vec<&'static str>,
}

impl Default for EngineOpts {
    fn default() -> Self {
        EngineOpts {
            fixedbufs: false,
            registerfiles: false,
            sqthread_poll_cpu: None,
            nonvectored: -1,
            force_async: 0,
            nowait: false,
            uncached: false,
            hipri_percentage: 100,
            userspace_reap: false,
            cpuload: None,
            cpuchunks: 50_000,
            cpumode: CpuMode::Noop,
            exit_on_io_done: false,
            stat_type: StatType::Stat,
            given: Vec::new(),
        }
    }
}

/// The engine options xferbench knows, and the engines each belongs to
/// (`rw=filecreate` and the like: what fio's examples for the file engines
/// write, recorded by [`EngineOpts::file_rw`]).
pub const OWNERS: [(&str, &[&str]); 17] = [
    ("fixedbufs", &["io_uring"]),
    ("registerfiles", &["io_uring"]),
    ("sqthread_poll_cpu", &["io_uring"]),
    ("nonvectored", &["io_uring"]),
    ("force_async", &["io_uring"]),
    ("nowait", &["pvsync2", "libaio", "io_uring"]),
    ("uncached", &["pvsync2"]),
    ("hipri_percentage", &["pvsync2"]),
    ("userspace_reap", &["libaio"]),
    ("cpuload", &["cpuio"]),
    ("cpuchunks", &["cpuio"]),
    ("cpumode", &["cpuio"]),
    ("exit_on_io_done", &["cpuio"]),
    ("stat_type", &["filestat"]),
    ("rw=filecreate", &["filecreate"]),
    ("rw=filestat", &["filestat"]),
    ("rw=filedelete", &["filedelete"]),
];

impl EngineOpts {
    /// Records `rw=filecreate` (or filestat, filedelete), which leaves the
    /// job's `rw` as it is but belongs with its engine.
    pub fn file_rw(&mut self, value: &str) {
        if let Some(&(name, _)) = OWNERS
            .iter()
            .find(|(k, _)| k.strip_prefix("rw=") == Some(value))
            && !self.given.contains(&name)
        {
            self.given.push(name);
        }
    }

    /// Applies `key` if it is one of these options (None otherwise, for the
    /// caller's "not supported" warning). Errors name the option and value.
    pub fn set(&mut self, key: &str, value: Option<&str>) -> Result<Option<SetOutcome>> {
        let Some(&(name, _)) = OWNERS.iter().find(|(k, _)| *k == key) else {
            return Ok(None);
        };
        let bad = |why: &str| match value {
            Some(v) => Error::usage(format!("{key}={v}: {why}")),
            None => Error::usage(format!("{key}: {why}")),
        };
        let flag = || -> Result<bool> {
            match value.map(|v| v.to_ascii_lowercase()).as_deref() {
                None | Some("1" | "true" | "yes" | "on") => Ok(true),
                Some("0" | "false" | "no" | "off") => Ok(false),
                _ => Err(bad("expected a boolean: 1/0, true/false, yes/no or on/off")),
            }
        };
        let int = |lo: i64, hi: i64| -> Result<i64> {
            value
                .filter(|v| !v.is_empty())
                .and_then(|v| v.parse::<i64>().ok())
                .filter(|n| (lo..=hi).contains(n))
                .ok_or_else(|| bad(&format!("expected a whole number from {lo} to {hi}")))
        };
        match name {
            "fixedbufs" => self.fixedbufs = flag()?,
            "registerfiles" => self.registerfiles = flag()?,
            "sqthread_poll_cpu" => self.sqthread_poll_cpu = Some(int(0, 65535)? as u32),
            "nonvectored" => self.nonvectored = int(-1, 1)? as i32,
            "force_async" => self.force_async = int(0, 1 << 30)? as u32,
            "nowait" => self.nowait = flag()?,
            "uncached" => self.uncached = int(0, 1)? == 1,
            "hipri_percentage" => self.hipri_percentage = int(0, 100)? as u32,
            "userspace_reap" => self.userspace_reap = flag()?,
            // fio caps cpuload at 100; 0 is fio's "cpu thread needs rate".
            "cpuload" => self.cpuload = Some(int(1, 100)? as u32),
            "cpuchunks" => self.cpuchunks = int(1, 10_000_000)? as u32,
            "cpumode" => {
                self.cpumode = match value.unwrap_or_default() {
                    "noop" => CpuMode::Noop,
                    "qsort" => CpuMode::Qsort,
                    _ => return Err(bad("unknown cpu mode; use noop or qsort")),
                }
            }
            "exit_on_io_done" => self.exit_on_io_done = flag()?,
            "stat_type" => {
                self.stat_type = match value.unwrap_or_default() {
                    "stat" => StatType::Stat,
                    "lstat" => StatType::Lstat,
                    "statx" => StatType::Statx,
                    _ => return Err(bad("unknown stat call; use stat, lstat or statx")),
                }
            }
            _ => unreachable!("every owned option is parsed"),
        }
        if !self.given.contains(&name) {
            self.given.push(name);
        }
        Ok(Some(SetOutcome::Applied))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_names_bad_values() {
        let mut o = EngineOpts::default();
        for (k, v) in [
            ("fixedbufs", None),
            ("registerfiles", Some("1")),
            ("nonvectored", Some("0")),
            ("force_async", Some("4")),
            ("cpuload", Some("40")),
            ("cpumode", Some("qsort")),
            ("stat_type", Some("statx")),
        ] {
            assert_eq!(o.set(k, v).unwrap(), Some(SetOutcome::Applied), "{k}");
        }
        assert!(o.fixedbufs && o.registerfiles);
        assert_eq!((o.nonvectored, o.force_async, o.cpuload), (0, 4, Some(40)));
        assert_eq!((o.cpumode, o.stat_type), (CpuMode::Qsort, StatType::Statx));
        assert_eq!(o.set("fancy", Some("1")).unwrap(), None);
        let err = |k, v| {
            EngineOpts::default()
                .set(k, Some(v))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err("cpuload", "0"),
            "cpuload=0: expected a whole number from 1 to 100"
        );
        assert_eq!(
            err("cpumode", "spin"),
            "cpumode=spin: unknown cpu mode; use noop or qsort"
        );
        assert!(err("nonvectored", "2").starts_with("nonvectored=2:"));
        assert!(err("hipri_percentage", "101").contains("from 0 to 100"));
        assert!(err("fixedbufs", "maybe").contains("expected a boolean"));
    }
}
