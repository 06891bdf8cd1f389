//! fio's engine-specific options (`fixedbufs`, `nowait`, `cpuload`…), in a
//! table per engine as fio keeps them. Whether an option suits the job's
//! engine is checked once every option is in (`engine::check`): fio reads a
//! job's lines in order, xferbench does not make `ioengine=` come first.

use super::Opt;
use super::net::NET;
use super::spec::{Kind, Spec};
use crate::error::Result;
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
    /// exec `program=`: what the job runs (required).
    pub program: Option<String>,
    /// exec `arguments=`: split on spaces, `%r` and `%n` expanded.
    pub arguments: Option<String>,
    /// exec `grace_time=`: between SIGTERM and SIGKILL at the job's end.
    pub grace_time: std::time::Duration,
    /// exec `std_redirect`: the program's stdout and stderr to
    /// JOBNAME.stdout and JOBNAME.stderr (fio's default).
    pub std_redirect: bool,
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
            program: None,
            arguments: None,
            grace_time: std::time::Duration::from_secs(1),
            std_redirect: true,
            given: Vec::new(),
        }
    }
}

/// The options of each engine that has its own, as fio gives each engine an
/// option table: an option in an engine's table belongs to that engine (an
/// option several engines take is in each of their tables), and a job
/// setting it on another engine is refused by `engine::check`, naming the
/// engines from here. The order is that of the refusal's list.
pub static ENGINES: &[(&str, &[Spec])] = &[
    ("pvsync2", &[NOWAIT, UNCACHED, HIPRI_PERCENTAGE]),
    (
        "libaio",
        &[
            NOWAIT,
            USERSPACE_REAP,
            CMDPRIO_PERCENTAGE,
            CMDPRIO_CLASS,
            CMDPRIO,
            CMDPRIO_BSSPLIT,
        ],
    ),
    (
        "io_uring",
        &[
            FIXEDBUFS,
            REGISTERFILES,
            SQTHREAD_POLL_CPU,
            NONVECTORED,
            FORCE_ASYNC,
            NOWAIT,
            CMDPRIO_PERCENTAGE,
            CMDPRIO_CLASS,
            CMDPRIO,
            CMDPRIO_BSSPLIT,
        ],
    ),
    ("cpuio", &[CPULOAD, CPUCHUNKS, CPUMODE, EXIT_ON_IO_DONE]),
    ("filestat", &[STAT_TYPE]),
    ("exec", &[PROGRAM, ARGUMENTS, GRACE_TIME, STD_REDIRECT]),
    ("net", NET),
    ("netsplice", NET),
];

const FIXEDBUFS: Spec = Spec::set("fixedbufs", Kind::Flag, |j, o| {
    o.bool().map(|v| j.engine_opts.fixedbufs = v)
})
.help("Register the I/O buffers with io_uring once, then READ_FIXED/WRITE_FIXED");
const REGISTERFILES: Spec = Spec::set("registerfiles", Kind::Flag, |j, o| {
    o.bool().map(|v| j.engine_opts.registerfiles = v)
})
.help("Register the files' descriptors with io_uring");
const SQTHREAD_POLL_CPU: Spec = Spec::set("sqthread_poll_cpu", Kind::Int, |j, o| {
    j.engine_opts.sqthread_poll_cpu = Some(whole(o)? as u32);
    Ok(())
})
.help("CPU the io_uring submission-polling thread runs on")
.no_def()
.range(0, 65535);
const NONVECTORED: Spec = Spec::set("nonvectored", Kind::Int, |j, o| {
    j.engine_opts.nonvectored = whole(o)? as i32;
    Ok(())
})
.help("io_uring: plain READ/WRITE (1) or READV/WRITEV (0) commands")
.def("-1")
.range(-1, 1);
const FORCE_ASYNC: Spec = Spec::set("force_async", Kind::Int, |j, o| {
    j.engine_opts.force_async = whole(o)? as u32;
    Ok(())
})
.help("io_uring: every Nth request is queued with IOSQE_ASYNC")
.no_def()
.range(0, 1 << 30);
const NOWAIT: Spec = Spec::set("nowait", Kind::Bool, |j, o| {
    o.bool().map(|v| j.engine_opts.nowait = v)
})
.help("RWF_NOWAIT on every I/O: fail rather than block")
.no_def();
const UNCACHED: Spec = Spec::set("uncached", Kind::Int, |j, o| {
    j.engine_opts.uncached = whole(o)? == 1;
    Ok(())
})
.help("pvsync2: RWF_DONTCACHE, reads and writes that leave no page cache")
.no_def()
.range(0, 1);
const HIPRI_PERCENTAGE: Spec = Spec::set("hipri_percentage", Kind::Int, |j, o| {
    j.engine_opts.hipri_percentage = whole(o)? as u32;
    Ok(())
})
.help("pvsync2: share of I/Os sent with RWF_HIPRI (polled)")
.def("100")
.range(0, 100);
const USERSPACE_REAP: Spec = Spec::set("userspace_reap", Kind::Flag, |j, o| {
    o.bool().map(|v| j.engine_opts.userspace_reap = v)
})
.help("libaio: read completions off the AIO ring in user space when polling");
// fio's cmdprio options (engines/cmdprio.h), each `r,w` as fio's.
const CMDPRIO_PERCENTAGE: Spec = Spec::set("cmdprio_percentage", Kind::Text("30"), |j, o| {
    let [r, w] = o.sides(|v| o.side_percent(v, o.bounds()))?;
    j.cmdprio.percentage = [r.unwrap_or(0), w.unwrap_or(0)];
    Ok(())
})
.help("Share of I/Os sent with the priority of cmdprio_class/cmdprio")
.no_def()
.range(0, 100);
const CMDPRIO_CLASS: Spec = Spec::set("cmdprio_class", Kind::Text("1"), |j, o| {
    let [r, w] = o.sides(|v| o.prio_class(v, o.bounds()))?;
    j.cmdprio.class = [r.unwrap_or(0), w.unwrap_or(0)];
    Ok(())
})
.help("I/O priority class of the I/Os cmdprio_percentage picks")
.no_def()
.range(1, 3);
const CMDPRIO: Spec = Spec::set("cmdprio", Kind::Text("0"), |j, o| {
    let [r, w] = o.sides(|v| o.prio_level(v, o.bounds()))?;
    j.cmdprio.level = [r.unwrap_or(0), w.unwrap_or(0)];
    Ok(())
})
.help("I/O priority level of the I/Os cmdprio_percentage picks")
.no_def()
.bounds(super::cmdprio::LEVELS);
const CMDPRIO_BSSPLIT: Spec = Spec::set(
    "cmdprio_bssplit",
    Kind::Text("64k/25/1/1:64k/75/3/2"),
    |j, o| {
        let [r, w] = o.sides(|v| o.prio_split(v))?;
        j.cmdprio.bssplit = Some([r.unwrap_or_default(), w.unwrap_or_default()]);
        Ok(())
    },
)
.help("Per-block-size shares of I/Os sent with a priority")
.no_def();
// fio caps cpuload at 100; 0 is fio's "cpu thread needs rate".
const CPULOAD: Spec = Spec::set("cpuload", Kind::Int, |j, o| {
    j.engine_opts.cpuload = Some(whole(o)? as u32);
    Ok(())
})
.help("cpuio: percent of one CPU to burn")
.no_def()
.range(1, 100);
const CPUCHUNKS: Spec = Spec::set("cpuchunks", Kind::Int, |j, o| {
    j.engine_opts.cpuchunks = whole(o)? as u32;
    Ok(())
})
.help("cpuio: length of one burn, microseconds")
.def("50000")
.range(1, 10_000_000);
const CPUMODE: Spec = Spec::set(
    "cpumode",
    Kind::Words(&[
        ("noop", "Spin on the clock"),
        ("qsort", "Sort a small array again and again"),
    ]),
    |j, o| {
        j.engine_opts.cpumode = match o.value.unwrap_or_default() {
            "noop" => CpuMode::Noop,
            "qsort" => CpuMode::Qsort,
            _ => return Err(o.bad("unknown cpu mode; use noop or qsort")),
        };
        Ok(())
    },
)
.help("cpuio: how the CPU is kept busy")
.def("noop");
const EXIT_ON_IO_DONE: Spec = Spec::set("exit_on_io_done", Kind::Bool, |j, o| {
    o.bool().map(|v| j.engine_opts.exit_on_io_done = v)
})
.help("cpuio: stop once the I/O jobs beside it are done")
.def("0");
const STAT_TYPE: Spec = Spec::set(
    "stat_type",
    Kind::Words(&[
        ("stat", "stat(2)"),
        ("lstat", "lstat(2)"),
        ("statx", "statx(2)"),
    ]),
    |j, o| {
        j.engine_opts.stat_type = match o.value.unwrap_or_default() {
            "stat" => StatType::Stat,
            "lstat" => StatType::Lstat,
            "statx" => StatType::Statx,
            _ => return Err(o.bad("unknown stat call; use stat, lstat or statx")),
        };
        Ok(())
    },
)
.help("filestat: the call that stats each file")
.def("stat");

const PROGRAM: Spec = Spec::set("program", Kind::Text("/bin/true"), |j, o| {
    j.engine_opts.program = Some(o.value()?.to_string());
    Ok(())
})
.help("exec: the program the job runs")
.no_def();
const ARGUMENTS: Spec = Spec::set("arguments", Kind::Text("-c %r"), |j, o| {
    j.engine_opts.arguments = o.value.filter(|v| !v.trim().is_empty()).map(String::from);
    Ok(())
})
.help("exec: its arguments (%r the runtime, %n the job's name)")
.no_def();
// fio's grace_time is whole seconds.
const GRACE_TIME: Spec = Spec::set("grace_time", Kind::Int, |j, o| {
    j.engine_opts.grace_time = std::time::Duration::from_secs(whole(o)? as u64);
    Ok(())
})
.help("exec: time between SIGTERM and SIGKILL at the job's end")
.def("1")
.range(0, 86_400);
const STD_REDIRECT: Spec = Spec::set("std_redirect", Kind::Bool, |j, o| {
    o.bool().map(|v| j.engine_opts.std_redirect = v)
})
.help("exec: the program's stdout and stderr to JOBNAME.stdout/.stderr")
.def("1");

/// An engine option's whole number within its entry's bounds (an empty or
/// bare one too is "expected a whole number", as fio's engines say).
fn whole(o: &Opt) -> Result<i64> {
    o.number_in(o.value.unwrap_or_default(), o.bounds(), "a whole number")
}

/// The engine option spelled `key`, if one engine's table holds it.
pub fn find(key: &str) -> Option<&'static Spec> {
    ENGINES
        .iter()
        .flat_map(|(_, t)| t.iter())
        .find(|s| s.is(key))
}

/// The engines an option given to a job belongs to: those whose table holds
/// it, or for `rw=filecreate` (and the like) the engine of that name.
pub fn owners(given: &str) -> Vec<&'static str> {
    ENGINES
        .iter()
        .filter(|(_, t)| t.iter().any(|s| s.name == given))
        .map(|(e, _)| *e)
        .chain(FILE_RW.iter().filter(|r| **r == given).map(|r| &r[3..]))
        .collect()
}

/// `rw=` values that name a file engine (fio's examples write them), which
/// the job records as given so that they go with their engine.
const FILE_RW: [&str; 3] = ["rw=filecreate", "rw=filestat", "rw=filedelete"];

impl EngineOpts {
    /// Records `rw=filecreate` (or filestat, filedelete), which leaves the
    /// job's `rw` as it is but belongs with its engine.
    pub fn file_rw(&mut self, value: &str) {
        if let Some(&name) = FILE_RW
            .iter()
            .find(|k| k.strip_prefix("rw=") == Some(value))
            && !self.given.contains(&name)
        {
            self.given.push(name);
        }
    }

    /// Records that an engine's option was set, for [`owners`]' check.
    pub fn mark(&mut self, name: &'static str) {
        if !self.given.contains(&name) {
            self.given.push(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Job, SetOutcome};

    #[test]
    fn parses_and_names_bad_values() {
        let mut j = Job::default();
        for (k, v) in [
            ("fixedbufs", None),
            ("registerfiles", Some("1")),
            ("nonvectored", Some("0")),
            ("force_async", Some("4")),
            ("cpuload", Some("40")),
            ("cpumode", Some("qsort")),
            ("stat_type", Some("statx")),
        ] {
            assert_eq!(j.set(k, v).unwrap(), SetOutcome::Applied, "{k}");
        }
        let o = &j.engine_opts;
        assert!(o.fixedbufs && o.registerfiles);
        assert_eq!((o.nonvectored, o.force_async, o.cpuload), (0, 4, Some(40)));
        assert_eq!((o.cpumode, o.stat_type), (CpuMode::Qsort, StatType::Statx));
        assert_eq!(
            o.given,
            [
                "fixedbufs",
                "registerfiles",
                "nonvectored",
                "force_async",
                "cpuload",
                "cpumode",
                "stat_type"
            ]
        );
        let err = |k, v| Job::default().set(k, Some(v)).unwrap_err().to_string();
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

    #[test]
    fn owners_come_from_the_engines_tables() {
        assert_eq!(owners("nowait"), ["pvsync2", "libaio", "io_uring"]);
        assert_eq!(owners("cmdprio_bssplit"), ["libaio", "io_uring"]);
        assert_eq!(owners("fixedbufs"), ["io_uring"]);
        assert_eq!(owners("port"), ["net", "netsplice"]);
        assert_eq!(owners("rw=filestat"), ["filestat"]);
        assert!(owners("bs").is_empty());
    }
}
