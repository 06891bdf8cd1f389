//! fio's general options, one entry each, as fio's options.c lists them:
//! those xferbench takes, those it notes (they change no figure it reports:
//! logs, labels, percentile lists…), those it refuses (they would), and the
//! options of fio engines it does not have. The engines' own options are in
//! their tables ([`super::engine_opts::ENGINES`]), the verify options in
//! [`super::verify::VERIFY`]. A key in none of them is "not a fio
//! option", so a typo in a job file is caught rather than silently measured
//! without it.
//!
//! The names are fio 3.41's (options.c and the engines' option tables),
//! aliases included.

use super::spec::{Kind, Range, Spec, refusal};
use super::{Completion, ExitWhat, IoEngine, Job, Opt, Sequencer, SetOutcome, file_service};
use crate::error::Result;
use std::time::Duration;

const LOG_TEXT: &str =
    "the log files are written as plain text while the job runs, in a bounded buffer";
const PCT: &str = "xferbench reports fixed percentiles from a full histogram kept in the JSON";
const CLOCK: &str = "xferbench times every I/O with its own clock, whose overhead it reports";
const LABEL: &str = "a label only";
const LAYOUT: &str = "files are created and laid out before timing starts";
const NO_ZBD: &str = "zoned block devices (zonemode=zbd) are not supported; run the job on a conventional target or use zonemode=strided";
const CMDPRIO: &str =
    "I/O priority hints are not supported; use cmdprio_class=/cmdprio= (libaio, io_uring)";
const CGROUP: &str = "cgroups are not supported; start xferbench inside the cgroup instead";
const FDP: &str = "NVMe flexible data placement is not supported; drop it";
const DP: &str = "NVMe data placement is not supported; drop it";
const BLKTRACE: &str = "trace replay is not supported";
const IOLOG: &str = "I/O log replay is not supported";
const SPRANDOM: &str = "SPRandom preconditioning is not supported";
const TRIM_VERIFY: &str = "trim-and-verify is not supported";
const UNALIGNED: &str = "unaligned block sizes are not supported; drop it";

/// A job option whose value is a boolean with a default.
const fn flag(name: &'static str, f: fn(&mut Job, &Opt) -> Result<()>) -> Spec {
    Spec::set(name, Kind::Bool, f)
}

/// A job option that is off unless given (fio's `FIO_OPT_STR_SET`).
const fn switch(name: &'static str, f: fn(&mut Job, &Opt) -> Result<()>) -> Spec {
    Spec::set(name, Kind::Flag, f)
}

/// fio's general options.
pub static GENERAL: &[Spec] = &[
    // fio's log files (crate::logs).
    Spec::set("write_lat_log", Kind::Text("NAME"), |j, o| {
        j.logs.lat = Some(o.value.unwrap_or("").to_string());
        Ok(())
    })
.help("Write per-I/O latency logs (NAME_lat/clat/slat.N.log)").no_def(),
    Spec::set("write_bw_log", Kind::Text("NAME"), |j, o| {
        j.logs.bw = Some(o.value.unwrap_or("").to_string());
        Ok(())
    })
.help("Write a bandwidth log (NAME_bw.N.log)").no_def(),
    Spec::set("write_iops_log", Kind::Text("NAME"), |j, o| {
        j.logs.iops = Some(o.value.unwrap_or("").to_string());
        Ok(())
    })
.help("Write an IOPS log (NAME_iops.N.log)").no_def(),
    Spec::set("write_hist_log", Kind::Text("NAME"), |j, o| {
        j.logs.hist = Some(o.value.unwrap_or("").to_string());
        Ok(())
    })
.help("Write a latency histogram log (NAME_clat_hist.N.log)").no_def(),
    Spec::set("log_avg_msec", Kind::Int, |j, o| {
        j.logs.avg_msec = o.int()?;
        Ok(())
    })
.help("Average the logs over windows of this many ms").def("0").range(0, Range::NO_MAX),
    Spec::set("log_hist_msec", Kind::Int, |j, o| {
        j.logs.hist_msec = o.int()?;
        Ok(())
    })
.help("Window of the histogram log, ms").def("0").range(0, Range::NO_MAX),
    Spec::set("log_hist_coarseness", Kind::Int, |j, o| {
        j.logs.hist_coarseness = o.int()?;
        Ok(())
    })
.help("Sum 2^N histogram buckets per column").def("0").range(0, 6),
    Spec::set(
        "log_window_value",
        Kind::Words(&[
            ("avg", "The window's mean"),
            ("max", "The window's maximum"),
            ("both", "Mean and maximum, mean first"),
            ("0", "Alias for avg"),
            ("1", "Alias for max"),
        ]),
        |j, o| {
            j.logs.window = match o.value()? {
                "avg" | "0" => crate::logs::Window::Avg,
                "max" | "1" => crate::logs::Window::Max,
                "both" => crate::logs::Window::Both,
                _ => return Err(o.bad("expected avg, max or both (or 0/1)")),
            };
            Ok(())
        },
    )
.help("What a log window holds: its mean, its maximum or both").def("avg")
    .alias(&["log_max_value"]),
    flag("log_offset", |j, o| o.bool().map(|v| j.logs.offset = v))
.help("Add each I/O's offset to the logs").def("0"),
    flag("log_prio", |j, o| o.bool().map(|v| j.logs.prio = v))
.help("Log each I/O's priority value rather than a real-time flag").def("0"),
    flag("per_job_logs", |j, o| o.bool().map(|v| j.logs.shared = !v))
.help("One log file per job (0: every job writes one file)").def("1"),
    flag("log_unix_epoch", |j, o| o.bool().map(|v| j.logs.unix_epoch = v))
.help("Log times from the Unix epoch").no_def(),
    flag("log_alternate_epoch", |j, o| {
        o.bool().map(|v| j.logs.alternate_epoch = v)
    })
.help("Log times from the epoch of log_alternate_epoch_clock_id").no_def(),
    Spec::set("log_alternate_epoch_clock_id", Kind::Int, |j, o| {
        j.logs.clock_id = o.int()?;
        Ok(())
    })
.help("clock_gettime clock whose epoch the logs count from").no_def().range(0, 64),
    // Only 0 is taken: compressed (.fz) files are not written.
    Spec::take("log_store_compressed", Kind::Words(&[("0", "Plain text logs")]), |_, o| {
        if o.bool()? {
            return Err(refusal(
                o.key,
                "xferbench writes the log files as text; drop it (fio's own output is the same text once inflated)",
            ));
        }
        Ok(SetOutcome::Applied)
    })
.help("Store the logs compressed (only 0 is taken here)").no_def(),
    Spec::take("log_issue_time", Kind::Bool, |_, o| {
        o.bool()?;
        Ok(SetOutcome::Note(format!(
            "option '{}' (fio 3.36 and later) was accepted without its column: the latency logs keep fio 3.33's columns",
            o.key
        )))
    })
.help("Log each I/O's issue time (fio 3.36)").def("0"),
    Spec::set("name", Kind::Text("x"), |j, o| {
        j.name = o.value()?.to_string();
        Ok(())
    })
.help("Name of the job (on the command line: starts a new job)").no_def(),
    Spec::set("filename", Kind::Text("x"), |j, o| {
        // An empty filename= (a template's blank, an unset ${VAR}) keeps
        // fio's default: the generated jobname.jobnum.filenum.
        if o.value.is_some_and(|v| v.trim().is_empty()) {
            j.filename = None;
            j.filenames.clear();
            return Ok(());
        }
        let mut names = o.filenames()?;
        j.filename = Some(names[0].clone());
        if names.len() == 1 {
            names.clear();
        }
        j.filenames = names;
        Ok(())
    })
.help("File(s) or device(s) the job does its I/O to, ':'-separated").no_def(),
    Spec::set("directory", Kind::Text("x"), |j, o| {
        let mut dirs = o.directories()?;
        j.directory = Some(dirs[0].clone());
        if dirs.len() == 1 {
            dirs.clear();
        }
        j.directories = dirs;
        Ok(())
    })
.help("Directory the job's files are in").no_def(),
    Spec::set("filename_format", Kind::Text("x"), |j, o| {
        j.filename_format = Some(o.value()?.to_string());
        Ok(())
    })
.help("How generated file names are made ($jobname.$jobnum.$filenum)").def("$jobname.$jobnum.$filenum"),
    Spec::set("nrfiles", Kind::Int, |j, o| {
        j.nrfiles = o.int()?;
        Ok(())
    })
.help("Number of files the job spreads its I/O over").def("1").range(1, 1 << 20)
    .alias(&["nr_files"]),
    Spec::set("filesize", Kind::Size, |j, o| {
        (j.filesize, j.filesize_max) = o.size_range()?;
        Ok(())
    })
.help("Size of each file (a range lo-hi draws one per file)").no_def(),
    Spec::set("openfiles", Kind::Int, |j, o| {
        j.openfiles = Some(o.int()?);
        Ok(())
    })
.help("Most files open at once").no_def().range(1, 1 << 20),
    Spec::set(
        "file_service_type",
        Kind::Words(&[
            ("roundrobin", "Each file in turn"),
            ("sequential", "One file to its end, then the next"),
            ("random", "A file drawn at random (uniform)"),
            ("random:2", "Any of them with :N, I/Os before switching"),
        ]),
        |j, o| {
            j.file_service = file_service::FileService::parse(o.value()?).map_err(|why| o.bad(&why))?;
            Ok(())
        },
    )
.help("How the next file is chosen").def("roundrobin"),
    Spec::set("size", Kind::Size, |j, o| {
        match o.percent()? {
            Some(p) => (j.size, j.size_pct) = (None, Some(p)),
            None => (j.size, j.size_pct) = (Some(o.size()?), None),
        }
        Ok(())
    })
.help("Bytes of I/O per job, or N% of the target").no_def()
    .also(&["io_size", "io_limit"]),
    Spec::set("offset", Kind::Size, |j, o| {
        match o.percent()? {
            Some(p) => (j.offset, j.offset_pct) = (0, Some(p)),
            None => (j.offset, j.offset_pct) = (o.size()?, None),
        }
        Ok(())
    })
.help("Where the job's region starts in the target").def("0")
    .alias(&["fileoffset"]),
    Spec::set("offset_increment", Kind::Size, |j, o| {
        j.offset_increment = o.size()?;
        Ok(())
    })
.help("Added to offset for each numjobs clone").def("0"),
    Spec::set("bs", Kind::Size, |j, o| {
        let [r, w] = o.sides(|v| o.block_size(v))?;
        let (r, w) = (r.unwrap_or(super::DEFAULT_BS), w.unwrap_or(super::DEFAULT_BS));
        j.bs = r.min(w);
        j.bs_sides = (r != w).then_some([r, w]);
        Ok(())
    })
.help("Block size: bytes per I/O (reads,writes)").def("4096").range(1, Range::NO_MAX)
    .alias(&["blocksize"]),
    Spec::set("bsrange", Kind::Text("4k-64k"), |j, o| {
        let [r, w] = o.sides(|v| o.block_range(v))?;
        let d = (super::DEFAULT_BS, super::DEFAULT_BS);
        j.bsrange = Some([r.unwrap_or(d), w.unwrap_or(d)]);
        Ok(())
    })
.help("Range of block sizes drawn per I/O").no_def()
    .alias(&["blocksize_range"]),
    Spec::set("ba", Kind::Size, |j, o| {
        let [r, w] = o.sides(|v| o.block_size(v))?;
        if r.is_some() && w.is_some() && r != w {
            return Err(
                o.bad("different read and write alignments are not supported; give one value")
            );
        }
        j.blockalign = r.or(w);
        Ok(())
    })
.help("Alignment of random offsets").no_def().range(1, Range::NO_MAX)
    .alias(&["blockalign"]),
    flag("bs_is_seq_rand", |j, o| o.bool().map(|v| j.bs_is_seq_rand = v))
.help("bs=R,W means sequential,random rather than reads,writes").def("0"),
    Spec::set("bssplit", Kind::Text("4k/50:64k/50"), |j, o| {
        let [r, w] = o.sides(|v| o.split(v))?;
        let d = || vec![(super::DEFAULT_BS, 100)];
        j.bssplit = Some([r.unwrap_or_else(d), w.unwrap_or_else(d)]);
        Ok(())
    })
.help("Mix of block sizes with their shares").no_def(),
    Spec::set(
        "rw",
        Kind::Words(&[
            ("read", "Sequential reads"),
            ("write", "Sequential writes"),
            ("randread", "Random reads"),
            ("randwrite", "Random writes"),
            ("rw", "Sequential mix of reads and writes"),
            ("readwrite", "Alias for rw"),
            ("randrw", "Random mix of reads and writes"),
            ("trim", "Sequential trims"),
            ("randtrim", "Random trims"),
            ("trimwrite", "Each block trimmed, then written"),
            ("randtrimwrite", "trimwrite at random offsets"),
            ("filecreate", "With ioengine=filecreate"),
            ("filestat", "With ioengine=filestat"),
            ("filedelete", "With ioengine=filedelete"),
        ]),
        |j, o| {
            // fio's examples for the file engines write rw=filecreate (and
            // filestat, filedelete): the job keeps its rw, and the value
            // must go with its engine (engine::check).
            match o.value {
                Some(v @ ("filecreate" | "filestat" | "filedelete")) => j.engine_opts.file_rw(v),
                _ => (j.rw, j.seq_add, j.seq_nr) = o.rw()?,
            }
            Ok(())
        },
    )
.help("I/O pattern: read, write, randread, randwrite, rw, randrw, trim…").def("read")
    .alias(&["readwrite"]),
    Spec::set(
        "rw_sequencer",
        Kind::Words(&[
            ("sequential", "The I/Os after a random one follow on from it"),
            ("identical", "The I/Os after a random one repeat its offset"),
        ]),
        |j, o| {
            j.rw_sequencer = match o.value()? {
                "sequential" => Sequencer::Sequential,
                "identical" => Sequencer::Identical,
                _ => return Err(o.bad("use sequential or identical")),
            };
            Ok(())
        },
    )
.help("How rw=randread:N's offsets are made: sequential or identical").def("sequential"),
    switch("norandommap", |j, o| o.bool().map(|v| j.norandommap = v))
.help("Random offsets drawn independently (repeats allowed)"),
    Spec::set(
        "random_distribution",
        Kind::Text("zoned:60/10:40/90"),
        |j, o| {
            (j.zoned, j.zoned_abs, j.skew) = (Vec::new(), Vec::new(), None);
            match o.distribution()? {
                super::Distribution::Uniform => {}
                super::Distribution::Zoned(z) => j.zoned = z,
                super::Distribution::ZonedAbs(z) => j.zoned_abs = z,
                super::Distribution::Skewed(s) => j.skew = Some(s),
            }
            Ok(())
        },
    )
.help("Law of the random offsets: random, zoned, zipf, pareto, normal").def("random"),
    Spec::set("percentage_random", Kind::Int, |j, o| {
        j.percentage_random = o.per_direction_pct()?;
        Ok(())
    })
.help("Share of a random job's offsets that are random").def("100,100,100").range(0, 100),
    Spec::take(
        "random_generator",
        Kind::Words(&[
            ("tausworthe", "fio's default; drawn here by splitmix64"),
            ("lfsr", "Every block once per pass, even with norandommap"),
            ("tausworthe64", "As tausworthe"),
        ]),
        |j, o| match o.value()? {
            "lfsr" => {
                j.lfsr = true;
                Ok(SetOutcome::Applied)
            }
            g @ ("tausworthe" | "tausworthe64") => {
                j.lfsr = false;
                Ok(SetOutcome::Note(format!(
                    "random_generator={g}: xferbench draws random offsets with its own generator (splitmix64) to the same distribution (uniform: each block once per pass, or drawn afresh with norandommap)"
                )))
            }
            _ => Err(o.bad("use tausworthe, lfsr or tausworthe64")),
        },
    )
.help("Random number generator").def("tausworthe"),
    flag("randrepeat", |j, o| o.bool().map(|v| j.randrepeat = v))
.help("The same random sequence every run").def("1").also(&["allrandrepeat"]),
    Spec::set("zonemode", Kind::Words(&[
            ("none", "No zones"),
            ("strided", "zonesize bytes done in every zonerange"),
        ]), |j, o| {
        j.strided = match o.value()? {
            "none" => false,
            "strided" => true,
            "zbd" => {
                return Err(o.bad(
                    "zoned block devices are not supported; run the job on a conventional target or use zonemode=strided",
                ));
            }
            _ => return Err(o.bad("use none or strided")),
        };
        Ok(())
    })
.help("Zoned access: none or strided").def("none"),
    Spec::set("zonerange", Kind::Size, |j, o| {
        j.zonerange = Some(o.size()?).filter(|&z| z > 0);
        Ok(())
    })
.help("Size of a zone's range").def("0"),
    Spec::set("zonesize", Kind::Size, |j, o| {
        j.zonesize = Some(o.size()?).filter(|&z| z > 0);
        Ok(())
    })
.help("Bytes done in each zone").def("0"),
    Spec::set("zoneskip", Kind::Size, |j, o| {
        j.zoneskip = o.size()?;
        Ok(())
    })
.help("Bytes skipped after each zone").def("0"),
    Spec::set("startdelay", Kind::Time, |j, o| {
        j.startdelay = o.duration_range()?;
        Ok(())
    })
.help("Time before the job starts (or a range to draw from)").def("0"),
    Spec::set("number_ios", Kind::Int, |j, o| {
        j.number_ios = Some(o.size()?).filter(|&n| n > 0);
        Ok(())
    })
.help("Stop after this many I/Os").def("0").range(0, Range::NO_MAX),
    Spec::set("thinktime", Kind::Time, |j, o| {
        j.thinktime = o.micros()?;
        Ok(())
    })
.help("Pause between I/Os (microseconds when bare)").def("0"),
    Spec::set("thinktime_spin", Kind::Time, |j, o| {
        j.thinktime_spin = o.micros()?;
        Ok(())
    })
.help("Part of thinktime spent spinning").def("0"),
    Spec::set("thinktime_blocks", Kind::Int, |j, o| {
        j.thinktime_blocks = o.int()?;
        Ok(())
    })
.help("I/Os between pauses").def("1").range(1, Range::NO_MAX),
    Spec::set("rate_iops", Kind::Int, |j, o| {
        j.rate_iops = Some(o.pair("rate")?).filter(|r| *r > 0);
        Ok(())
    })
.help("Cap on I/Os per second").no_def().range(0, Range::NO_MAX),
    Spec::set("rate_iops_min", Kind::Int, |j, o| {
        j.rate_iops_min = Some(o.pair("rate")?).filter(|r| *r > 0);
        Ok(())
    })
.help("Minimum I/Os per second, or the job fails").no_def().range(0, Range::NO_MAX),
    Spec::set("rate_process", Kind::Words(&[
            ("linear", "Rated I/Os evenly spaced"),
            ("poisson", "Rated I/Os at exponentially spaced times"),
        ]), |j, o| {
        j.poisson = match o.value()? {
            "linear" => false,
            "poisson" => true,
            _ => return Err(o.bad("use linear or poisson")),
        };
        Ok(())
    })
.help("How rated I/Os are spaced: linear or poisson").def("linear"),
    // The bandwidth and IOPS samples' window, ms (bw_min… iops_samples).
    Spec::set("bwavgtime", Kind::Int, |j, o| {
        j.bw_avg_time = Some(o.int()?);
        Ok(())
    })
.help("Window of the bandwidth samples, ms").def("500").range(1, Range::NO_MAX),
    Spec::set("iopsavgtime", Kind::Int, |j, o| {
        j.iops_avg_time = Some(o.int()?);
        Ok(())
    })
.help("Window of the IOPS samples, ms").def("500").range(1, Range::NO_MAX),
    Spec::set("rate_cycle", Kind::Int, |j, o| {
        j.rate_cycle = Duration::from_millis(o.int()?.into());
        Ok(())
    })
.help("Window over which rate_min is judged, ms").def("1000").range(1, Range::NO_MAX)
    .alias(&["ratecycle"]),
    Spec::set("max_latency", Kind::Time, |j, o| {
        j.max_latency = o.micros()?;
        Ok(())
    })
.help("The job fails at the first I/O slower than this").no_def(),
    Spec::set("latency_target", Kind::Time, |j, o| {
        j.tuning.latency_target = o.micros()?;
        Ok(())
    })
.help("Latency the deepest queue must meet").no_def(),
    Spec::set("latency_window", Kind::Time, |j, o| {
        j.tuning.latency_window = o.micros()?.unwrap_or_default();
        Ok(())
    })
.help("Window over which latency_target is judged").no_def(),
    Spec::set("latency_percentile", Kind::Text("99.9"), |j, o| {
        super::tuning::percentile(&mut j.tuning, o)
    })
.help("Share of I/Os that must meet latency_target").def("100"),
    flag("latency_run", |j, o| o.bool().map(|v| j.tuning.latency_run = v))
.help("Keep adjusting the depth rather than stop once found").def("0"),
    Spec::set("steadystate", Kind::Text("iops:10%"), |j, o| {
        super::tuning::steadystate(&mut j.tuning, o)
    })
.help("End the job once IOPS or bandwidth hold steady (iops|bw[_slope]:LIMIT)").no_def()
    .alias(&["ss"]),
    Spec::set("steadystate_duration", Kind::Time, |j, o| {
        j.tuning.ss_dur = o.duration()?.unwrap_or_default();
        Ok(())
    })
.help("Span of samples judged for steady state").def("0")
    .alias(&["ss_dur"]),
    Spec::set("steadystate_ramp_time", Kind::Time, |j, o| {
        j.tuning.ss_ramp = o.duration()?.unwrap_or_default();
        Ok(())
    })
.help("Time before steady-state samples start").def("0")
    .alias(&["ss_ramp"]),
    Spec::set("steadystate_check_interval", Kind::Time, |j, o| {
        j.tuning.ss_interval = o
            .duration()?
            .filter(|d| d.subsec_nanos() == 0)
            .ok_or_else(|| o.bad("expected a whole number of seconds, at least 1"))?;
        Ok(())
    })
.help("Time between steady-state samples").def("1")
    .alias(&["ss_interval"]),
    flag("invalidate", |j, o| o.bool().map(|v| j.invalidate = v))
.help("Drop the region's cached pages before the job").def("1"),
    Spec::set(
        "fadvise_hint",
        Kind::Words(&[
            ("0", "No advice"),
            ("none", "Alias for 0"),
            ("1", "Advice from the job's rw pattern"),
            ("sequential", "POSIX_FADV_SEQUENTIAL"),
            ("random", "POSIX_FADV_RANDOM"),
            ("normal", "POSIX_FADV_NORMAL"),
        ]),
        |j, o| {
            j.fadvise = match o.value.unwrap_or("1") {
                "0" | "none" => None,
                "1" => Some(-1),
                "sequential" => Some(libc::POSIX_FADV_SEQUENTIAL),
                "random" => Some(libc::POSIX_FADV_RANDOM),
                "normal" => Some(libc::POSIX_FADV_NORMAL),
                _ => return Err(o.bad("use 0, 1, sequential, random or normal")),
            };
            Ok(())
        },
    )
.help("posix_fadvise advice given for the file").def("0"),
    Spec::set(
        "sync",
        Kind::Words(&[
            ("none", "Plain writes"),
            ("0", "Alias for none"),
            ("false", "Alias for none"),
            ("sync", "O_SYNC"),
            ("1", "Alias for sync"),
            ("true", "Alias for sync"),
            ("dsync", "O_DSYNC"),
        ]),
        |j, o| {
            j.open_sync = match o.value.unwrap_or("1") {
                "0" | "none" | "false" => None,
                "1" | "sync" | "true" => Some(libc::O_SYNC),
                "dsync" => Some(libc::O_DSYNC),
                _ => return Err(o.bad("use none, sync or dsync (0 or 1)")),
            };
            Ok(())
        },
    )
.help("O_SYNC or O_DSYNC writes").def("none"),
    Spec::set("fdatasync", Kind::Int, |j, o| {
        j.fdatasync = o.int()?;
        Ok(())
    })
.help("fdatasync after every N writes").def("0").range(0, Range::NO_MAX),
    flag("fsync_on_close", |j, o| {
        j.end_fsync |= o.bool()?;
        Ok(())
    })
.help("fsync when a file is closed").def("0"),
    flag("fill_device", |j, o| o.bool().map(|v| j.fill_device = v))
.help("Write until the device or file system is full").def("0").alias(&["fill_fs"]),
    Spec::set(
        "fallocate",
        Kind::Words(&[
            ("none", "No preallocation"),
            ("native", "fallocate where the file system has it"),
            ("posix", "As native"),
            ("keep", "As native"),
            ("truncate", "Alias for none"),
            ("0", "Alias for none"),
            ("1", "As native"),
        ]),
        |j, o| {
            j.fallocate = match o.value.unwrap_or("native") {
                "none" | "0" | "truncate" => false,
                "native" | "posix" | "keep" | "1" => true,
                _ => return Err(o.bad("use none, native, posix, keep or truncate")),
            };
            Ok(())
        },
    )
.help("How files are preallocated").def("native"),
    flag("unlink", |j, o| o.bool().map(|v| j.unlink = v))
.help("Remove the job's files when it is done").def("0"),
    switch("zero_buffers", |j, o| o.bool().map(|v| j.zero_buffers = v))
.help("Write buffers of zeros"),
    switch("refill_buffers", |j, o| {
        j.refill_buffers = o.bool()?;
        j.buffers.refill_set = true;
        Ok(())
    })
.help("New random data before every write"),
    Spec::set("buffer_pattern", Kind::Text("0xab"), |j, o| {
        j.buffer_pattern = Some(o.pattern()?);
        // fio: the pattern replaces zeros and scrambling, and is refilled
        // where reads could overwrite it or compression mixes it in.
        (j.zero_buffers, j.buffers.scramble) = (false, false);
        j.refill_buffers = j.compress_pct > 0 || j.rw.reads();
        Ok(())
    })
.help("Fill write buffers with this pattern").no_def(),
    Spec::set("iodepth_low", Kind::Int, |j, o| {
        j.iodepth_low = Some(o.int()?);
        Ok(())
    })
    .help("Refill the queue only when it drains to this depth").no_def().range(0, 65536),
    Spec::set("iodepth_batch", Kind::Int, |j, o| {
        j.batch_submit = o.int()?;
        Ok(())
    })
    .help("I/Os submitted to the engine in one call (fio's default 1)").def("1").range(0, 65536)
    .alias(&["iodepth_batch_submit"]),
    Spec::set("iodepth_batch_complete_min", Kind::Int, |j, o| {
        j.batch_complete_min = o.int()?;
        Ok(())
    })
.help("Reap at least this many completions at once").def("1").range(0, 65536)
    .alias(&["iodepth_batch_complete"]),
    Spec::set("iodepth_batch_complete_max", Kind::Int, |j, o| {
        j.batch_complete_max = o.int()?;
        Ok(())
    })
    .help("Reap at most this many completions at once (default: iodepth)").no_def().range(0, 65536),
    switch("exitall", |j, o| o.bool().map(|v| j.exitall = v))
    .help("When one job ends, end the others its exit_what names"),
    switch("exitall_on_error", |j, o| {
        o.bool().map(|v| j.exitall_on_error = v)
    })
.help("When one job fails, end the others"),
    Spec::set(
        "exit_what",
        Kind::Words(&[
            ("group", "The jobs running now"),
            ("stonewall", "The running jobs of its stonewall group"),
            ("all", "Every job, running or not"),
        ]),
        |j, o| {
            j.exit_what = match o.value()? {
                "group" => ExitWhat::Group,
                "stonewall" => ExitWhat::Stonewall,
                "all" => ExitWhat::All,
                _ => return Err(o.bad("use group, stonewall or all")),
            };
            Ok(())
        },
    )
.help("What exitall ends: group, stonewall or all").def("group"),
    Spec::set(
        "cpus_allowed_policy",
        Kind::Words(&[
            ("shared", "Every clone on the whole set"),
            ("split", "Each clone on one CPU of the set"),
        ]),
        |j, o| {
            j.cpus_split = match o.value()? {
                "shared" => false,
                "split" => true,
                _ => return Err(o.bad("use shared or split")),
            };
            Ok(())
        },
    )
.help("How numjobs clones share cpus_allowed: shared or split").no_def(),
    Spec::set("cpumask", Kind::Text("0x3"), |j, o| {
        let mask = o.value()?;
        let bits = match mask.strip_prefix("0x").or_else(|| mask.strip_prefix("0X")) {
            Some(h) => u64::from_str_radix(h, 16),
            None => mask.parse::<u64>(),
        }
        .map_err(|_| o.bad("expected a bit mask, as in 0x3 or 3"))?;
        j.cpus_allowed = Some((0..64).filter(|b| bits >> b & 1 == 1).collect());
        Ok(())
    })
.help("CPUs the job may run on, as a bit mask").no_def(),
    Spec::take("iomem_align", Kind::Size, |_, o| {
        let a = o.size()?;
        let page = o.bounds().max;
        if a > page as u64 || (a > 0 && !a.is_power_of_two()) {
            return Err(o.bad(&format!("xferbench aligns buffers to the page ({page} bytes); larger or odd alignments are not supported")));
        }
        Ok(SetOutcome::Note(format!(
            "{}={a}: xferbench's buffers are page-aligned, which satisfies it",
            o.key
        )))
    })
.help("Alignment of the I/O buffers").def("0").range(0, 4096)
    .alias(&["mem_align"]),
    Spec::take("create_on_open", Kind::Any, |_, o| {
        Ok(SetOutcome::Note(format!(
            "{} changes no figure here: a job's files are created and opened before timing starts",
            o.key
        )))
    })
.help("Create files when they are opened").def("0")
    .also(&["create_serialize"]),
    Spec::take(
        "continue_on_error",
        Kind::Words(&[
            ("none", "An error ends the job"),
            ("0", "Alias for none"),
            ("verify", "A bad block is counted and the job goes on"),
        ]),
        |_, o| match o.value {
            Some("verify") => Ok(SetOutcome::Note(
                "continue_on_error=verify is what xferbench does: a bad block is counted and the job goes on (unless verify_fatal), then fails naming the first".into(),
            )),
            _ => on_error(o),
        },
    )
.help("Errors to go on past (only none is taken here)").def("none"),
    Spec::take("ignore_error", Kind::Words(&[
            ("none", "An error ends the job"),
            ("0", "Alias for none"),
        ]), |_, o| {
        on_error(o)
    })
.help("Errors to go on past (only none is taken here)").no_def(),
    Spec::take("lockfile", Kind::Words(&[("none", "No file locking")]), |_, o| {
        if o.value != Some("none") {
            return Err(refusal(
                o.key,
                "file locking between jobs is not supported; drop it",
            ));
        }
        Ok(SetOutcome::Note(
            "lockfile=none is what xferbench does: jobs on one file do not lock it".into(),
        ))
    })
.help("Lock the file around its I/O").def("none"),
    Spec::set("io_submit_mode", Kind::Words(&[
            ("inline", "The job's thread submits and reaps"),
            ("offload", "Submitting threads issue I/O on schedule"),
        ]), |j, o| {
        super::tuning::submit_mode(&mut j.tuning, o)
    })
.help("inline, or offload: I/O issued on schedule by submitting threads").def("inline"),
    flag("overwrite", |j, o| o.bool().map(|v| j.overwrite = v))
.help("Lay a file out before writing over it").def("0"),
    flag("file_append", |j, o| o.bool().map(|v| j.file_append = v))
.help("Writes start at the file's end").def("0"),
    Spec::set("offset_align", Kind::Size, |j, o| {
        j.offset_align = o.size()?;
        Ok(())
    })
.help("Alignment of offset= given as a percentage").def("0").range(0, Range::NO_MAX),
    flag("unlink_each_loop", |j, o| {
        j.unlink |= o.bool()?;
        Ok(())
    })
.help("Remove the job's files after each loop").def("0"),
    Spec::set("buffer_compress_percentage", Kind::Int, |j, o| {
        j.compress_pct = o.share()?;
        j.buffers.generated = true;
        Ok(())
    })
.help("How much each write buffer compresses, %").no_def().range(0, 100),
    Spec::set("dedupe_percentage", Kind::Int, |j, o| {
        j.buffers.dedupe_pct = o.share()?;
        // fio: dedupe implies refilling every write buffer.
        (j.buffers.generated, j.refill_buffers) = (true, true);
        Ok(())
    })
.help("Share of write buffers that repeat an earlier one, %").no_def().range(0, 100),
    Spec::set(
        "dedupe_mode",
        Kind::Words(&[
            ("repeat", "The previous unique buffer again"),
            ("working_set", "One of dedupe_working_set_percentage's buffers"),
        ]),
        |j, o| {
            j.buffers.dedupe_mode = match o.value()? {
                "repeat" => super::buffers::DedupeMode::Repeat,
                "working_set" => super::buffers::DedupeMode::WorkingSet,
                _ => return Err(o.bad("use repeat or working_set")),
            };
            Ok(())
        },
    )
.help("Where a repeated buffer comes from: the last one, or a working set").def("repeat"),
    Spec::set("dedupe_working_set_percentage", Kind::Int, |j, o| {
        j.buffers.dedupe_ws_pct = o.share()?;
        Ok(())
    })
.help("Size of the repeated buffers' working set, % of the job").def("5").range(0, 100),
    flag("dedupe_global", |j, o| {
        o.bool().map(|v| j.buffers.dedupe_global = v)
    })
.help("Repeated buffers shared by every job").def("0"),
    Spec::set("flow_id", Kind::Int, |j, o| {
        j.flow.id = o.whole("a flow's id")? as i32;
        Ok(())
    })
.help("Jobs of one flow id keep their I/O in the ratio of their flow").def("0").range(i32::MIN as i64, i32::MAX as i64),
    Spec::set("flow", Kind::Int, |j, o| {
        // fio 3.33 takes 0 to 1000; older fio's signed weights (flow=-1
        // beside flow=8) count by their magnitude.
        j.flow.weight = o.whole("a weight")?.unsigned_abs() as u32;
        Ok(())
    })
.help("The job's weight in its flow").def("0").range(-1000, 1000),
    Spec::set("flow_sleep", Kind::Int, |j, o| {
        j.flow.sleep_us = o.int()?;
        Ok(())
    })
.help("Wait before retrying an I/O held back by its flow, microseconds").def("0").range(0, Range::NO_MAX),
    Spec::set("buffer_compress_chunk", Kind::Size, |j, o| {
        j.compress_chunk = o.size()?.max(1);
        Ok(())
    })
.help("Size of a compressible chunk").def("512").range(0, Range::NO_MAX),
    Spec::set("nice", Kind::Int, |j, o| {
        j.nice = Some(o.whole("a niceness")? as i32);
        Ok(())
    })
.help("The job's nice value").no_def().range(-20, 19),
    Spec::set("prio", Kind::Int, |j, o| {
        j.ioprio.1 = Some(o.value().and_then(|v| o.prio_level(v, o.bounds()))?);
        Ok(())
    })
.help("I/O priority level").no_def().bounds(super::cmdprio::LEVELS),
    Spec::set("prioclass", Kind::Int, |j, o| {
        j.ioprio.0 = Some(o.int()?);
        Ok(())
    })
    .help("I/O priority class").no_def().range(0, 3),
    flag("scramble_buffers", |j, o| {
        j.buffers.scramble = o.bool()?;
        j.buffers.scramble_set = true;
        Ok(())
    })
.help("Stamp each write buffer so that it does not dedupe").def("1"),
    Spec::set("rwmixread", Kind::Int, |j, o| {
        j.rwmixread = o.share()?;
        Ok(())
    })
.help("Share of a mixed job's I/Os that are reads, %").def("50").range(0, 100),
    Spec::set("rwmixwrite", Kind::Int, |j, o| {
        j.rwmixread = 100 - o.share()?;
        Ok(())
    })
.help("Share of a mixed job's I/Os that are writes, %").def("50").range(0, 100),
    Spec::set("numjobs", Kind::Int, |j, o| {
        j.numjobs = o.int()?;
        Ok(())
    })
.help("Copies of the job that run at once").def("1").range(1, 4096),
    Spec::set("iodepth", Kind::Int, |j, o| {
        j.iodepth = o.int()?;
        Ok(())
    })
.help("I/Os in flight").def("1").range(1, 65536),
    Spec::set("ioengine", Kind::Listed(IoEngine::words), |j, o| j.set_engine(o))
.help("How the I/O is done (--enghelp lists the engines)").def("psync"),
    Spec::set(
        "mem",
        Kind::Words(&[
            ("malloc", "Heap memory"),
            ("mmap", "Anonymous mmap(2)"),
            ("mmapshared", "As mmap"),
            ("shm", "As mmap"),
            ("mmaphuge", "mmap(2) with huge pages"),
            ("shmhuge", "As mmaphuge"),
        ]),
        |j, o| {
            j.iomem = o.iomem()?;
            Ok(())
        },
    )
.help("Where the I/O buffers come from").def("malloc")
    .alias(&["iomem"]),
    flag("direct", |j, o| o.bool().map(|v| j.direct = v))
.help("O_DIRECT: I/O that bypasses the page cache").def("0"),
    flag("buffered", |j, o| o.bool().map(|v| j.direct = !v))
.help("Buffered I/O (the opposite of direct)").def("1"),
    Spec::set("randseed", Kind::Int, |j, o| {
        j.randseed = o
            .value()?
            .parse()
            .map_err(|_| o.bad("expected a whole number"))?;
        Ok(())
    })
.help("Seed of the random offsets").def("6840388453070139662").range(0, Range::NO_MAX),
    // fio: 0 means no limit.
    Spec::set("rate_min", Kind::Size, |j, o| {
        j.ratemin = Some(o.pair("rate")?).filter(|&r| r > 0);
        Ok(())
    })
.help("Minimum bandwidth, or the job fails").no_def().range(0, Range::NO_MAX)
    .alias(&["ratemin"]),
    Spec::set("rate", Kind::Size, |j, o| {
        j.rate = Some(o.pair("rate")?).filter(|&r| r > 0);
        Ok(())
    })
.help("Cap on bandwidth, bytes per second").no_def().range(0, Range::NO_MAX),
    switch("new_group", |j, o| o.bool().map(|v| j.new_group = v))
.help("Start a new reporting group"),
    switch("stonewall", |j, o| o.bool().map(|v| j.stonewall = v))
.help("Wait for the jobs before this one to end, and start a new group").alias(&["wait_for_previous"]),
    flag("serialize_overlap", |j, o| {
        o.bool().map(|v| j.serialize_overlap = v)
    })
.help("An I/O waits for overlapping ones in flight").def("0"),
    Spec::set("wait_for", Kind::Text("x"), |j, o| {
        j.wait_for = Some(o.value()?.to_string());
        Ok(())
    })
.help("Start after the named job ends").no_def(),
    switch("group_reporting", |j, o| {
        o.bool().map(|v| j.group_reporting = v)
    })
    .help("Report the group's jobs as one"),
    flag("lat_percentiles", |j, o| {
        o.bool().map(|v| j.lat_percentiles = v)
    })
    .help("Give percentiles of the total latency (lat) too").def("0"),
    flag("slat_percentiles", |j, o| {
        o.bool().map(|v| j.slat_percentiles = v)
    })
    .help("Give percentiles of the submission latency (slat) too").def("0"),
    flag("allow_file_create", |j, o| {
        o.bool().map(|v| j.allow_file_create = v)
    })
.help("Create files that do not exist").def("1"),
    Spec::set("fsync", Kind::Int, |j, o| {
        j.fsync = o.int()?;
        Ok(())
    })
.help("fsync after every N writes").def("0").range(0, Range::NO_MAX),
    flag("end_fsync", |j, o| o.bool().map(|v| j.end_fsync = v))
.help("fsync the files at the job's end").def("0"),
    Spec::set("runtime", Kind::Time, |j, o| {
        j.runtime = o.duration()?;
        Ok(())
    })
.help("Stop the job after this long").def("0")
    .alias(&["timeout"]),
    switch("time_based", |j, o| o.bool().map(|v| j.time_based = v))
.help("Run for runtime, going over the region again as needed"),
    Spec::set("ramp_time", Kind::Time, |j, o| {
        j.ramp_time = o.duration()?;
        Ok(())
    })
.help("Time run before the figures start").no_def(),
    // io_uring's and pvsync2's in fio, but read beside completion= for
    // every engine, and refused on the others by engine::check with its
    // own advice.
    switch("hipri", |j, o| o.bool().map(|v| j.hipri = v))
.help("Polled completions (io_uring IOPOLL, pvsync2 RWF_HIPRI)"),
    switch("sqthread_poll", |j, o| o.bool().map(|v| j.sqthread_poll = v))
.help("io_uring: a kernel thread polls the submission queue"),
    Spec::set("completion", Kind::Words(&[
            ("interrupt", "Sleep until woken"),
            ("poll", "Spin"),
        ]), |j, o| {
        j.completion = Some(match o.value()? {
            "interrupt" => Completion::Interrupt,
            "poll" => Completion::Poll,
            _ => return Err(o.bad("unknown completion mode; use interrupt or poll")),
        });
        Ok(())
    })
.help("xferbench: wait for completions by sleeping (interrupt) or spinning (poll)").no_def(),
    Spec::set("cpus_allowed", Kind::Text("0"), |j, o| {
        let list = o.value()?;
        j.cpus_allowed = crate::units::parse_cpu_list(list).map_err(|e| {
            // Out of range is said as such (with the limit); anything else
            // is a malformed list.
            if list.split([',', '-']).all(|n| n.trim().parse::<u64>().is_ok()) {
                o.bad(&e.to_string())
            } else {
                o.bad("malformed cpu list (expected numbers and ranges, as in 0-3,6)")
            }
        })?;
        Ok(())
    })
.help("CPUs the job may run on").no_def(),
    // Workers are threads: the setting is what xferbench always does.
    Spec::set("thread", Kind::Words(&[("1", "Jobs as threads")]), |_, o| {
        if !o.bool()? {
            return Err(o.bad(
                "fio's jobs as processes are not supported: xferbench's jobs are threads; drop it",
            ));
        }
        Ok(())
    })
.help("Jobs as threads (xferbench's always are)").no_def()
    .also(&["threads"]),
    Spec::set("loops", Kind::Int, |j, o| {
        j.loops = o.int()?;
        Ok(())
    })
.help("Passes over the region").def("1").range(1, Range::NO_MAX),
    // Ignoring kb_base=1000 would silently change every size.
    Spec::set("kb_base", Kind::Words(&[("1024", "k is 1024")]), |_, o| {
        if o.value != Some("1024") {
            return Err(o.bad("xferbench sizes are binary (k = 1024); drop kb_base and write sizes in bytes or with k/m/g"));
        }
        Ok(())
    })
.help("Whether k means 1024 or 1000 (only 1024 is taken here)").def("1024"),
    Spec::set("numa_cpu_nodes", Kind::Text("0"), |j, o| {
        j.cpus_allowed = Some(super::numa_cpus(o.value()?).map_err(|e| o.bad(&e))?);
        Ok(())
    })
.help("Run on the CPUs of these NUMA nodes").no_def(),
    // Accepted: they change no figure xferbench reports.
    Spec::note("block_error_percentiles", PCT),
    Spec::note("clat_percentiles", PCT),
    Spec::note("clocksource", CLOCK),
    Spec::note("create_fsync", LAYOUT),
    Spec::note("description", LABEL),
    Spec::note("disable_bw_measurement", CLOCK).alias(&["disable_bw"]),
    Spec::note("disable_clat", CLOCK),
    Spec::note("disable_lat", CLOCK),
    Spec::note("disable_slat", CLOCK),
    Spec::note("disk_util", "xferbench does not sample disk utilisation"),
    Spec::note(
        "error_dump",
        "errors are reported with their offset and errno",
    ),
    Spec::note("gtod_cpu", CLOCK),
    Spec::note("gtod_reduce", CLOCK),
    Spec::note(
        "hugepage-size",
        "huge-page buffers use the system's default huge page size",
    ),
    Spec::note("job_start_clock_id", CLOCK),
    Spec::note("log_compression", LOG_TEXT),
    Spec::note("log_compression_cpus", LOG_TEXT),
    Spec::note("log_entries", LOG_TEXT),
    Spec::note("percentile_list", PCT),
    Spec::note("rwmixcycle", "deprecated in fio and without effect there"),
    Spec::note("significant_figures", PCT),
    Spec::note("stats", CLOCK),
    Spec::note(
        "unified_rw_reporting",
        "reads and writes are reported apart; the group line sums them",
    ),
    Spec::note("unique_filename", "only fio's client/server mode uses it"),
    Spec::note("unit_base", "xferbench reports bytes per second"),
    Spec::note(
        "write_iolog",
        "xferbench does not write I/O logs; its JSON holds each job's settings",
    ),
    Spec::note("flow_watermark", "deprecated in fio"),
    // Refused: they would change what is measured.
    Spec::refuse("cmdprio_hint", CMDPRIO),
    Spec::refuse(
        "create_only",
        "a job that only creates its files is not supported; drop it",
    ),
    Spec::refuse(
        "libaio_vectored",
        "vectored libaio commands are not supported; drop it",
    ),
    Spec::refuse(
        "rate_ignore_thinktime",
        "rates always count think time here; drop it",
    ),
    Spec::refuse(
        "thp",
        "transparent huge pages for mmap targets are not supported; drop it",
    ),
    Spec::refuse(
        "allow_mounted_write",
        "xferbench never checks for mounted file systems; drop it",
    ),
    Spec::refuse(
        "atomic",
        "atomic writes (RWF_ATOMIC) are not supported; drop it",
    ),
    Spec::refuse("blocksize_unaligned", UNALIGNED),
    Spec::refuse("bs_unaligned", UNALIGNED),
    Spec::refuse("cgroup", CGROUP),
    Spec::refuse("cgroup_nodelete", CGROUP),
    Spec::refuse("cgroup_weight", CGROUP),
    Spec::refuse("dataplacement", DP),
    Spec::refuse("data_placement", DP),
    Spec::refuse("dp_scheme", DP),
    Spec::refuse(
        "exec_postrun",
        "xferbench runs no commands; run it after xferbench",
    ),
    Spec::refuse(
        "exec_prerun",
        "xferbench runs no commands; run it before xferbench",
    ),
    Spec::refuse("fdp", FDP),
    Spec::refuse("fdp_pli", FDP),
    Spec::refuse("fdp_pli_select", FDP),
    Spec::refuse(
        "filetype",
        "xferbench takes the target's type from the file itself; drop it",
    ),
    Spec::refuse(
        "gid",
        "xferbench does not switch users; run it as that group",
    ),
    Spec::refuse(
        "gpu_dev_id",
        "GPU placement of jobs is not supported; see xferbench curve -t cuda",
    ),
    Spec::refuse("ignore_zone_limits", NO_ZBD),
    Spec::refuse(
        "ioscheduler",
        "xferbench does not change the I/O scheduler; set it in /sys/block/DEV/queue/scheduler first",
    ),
    Spec::refuse("job_max_open_zones", NO_ZBD),
    Spec::refuse(
        "lockmem",
        "pinning memory away from the page cache is not supported; drop it",
    ),
    Spec::refuse("max_open_zones", NO_ZBD),
    Spec::refuse("merge_blktrace_file", BLKTRACE),
    Spec::refuse("merge_blktrace_iters", BLKTRACE),
    Spec::refuse("merge_blktrace_scalars", BLKTRACE),
    Spec::refuse("num_range", "multi-range trims are not supported"),
    Spec::refuse(
        "numa_mem_policy",
        "NUMA memory policies are not supported; run xferbench under numactl",
    ),
    Spec::refuse(
        "opendir",
        "taking every file under a directory is not supported; name the files",
    ),
    Spec::refuse(
        "percentage_sequential",
        "deprecated in fio, which refuses it; write percentage_random= with 100 minus the value",
    ),
    Spec::refuse("plid_select", FDP),
    Spec::refuse("plids", FDP),
    Spec::refuse(
        "pre_read",
        "pre-reading files into the cache is not supported; run a read job first",
    ),
    Spec::refuse("priohint", "I/O priority hints are not supported; drop it"),
    Spec::refuse(
        "profile",
        "fio's built-in profiles are not supported; write the jobs out",
    ),
    Spec::refuse("read_beyond_wp", NO_ZBD),
    Spec::refuse("read_iolog", IOLOG),
    Spec::refuse("read_iolog_chunked", IOLOG),
    Spec::refuse("recover_zbd_write_error", NO_ZBD),
    Spec::refuse("replay_align", IOLOG),
    Spec::refuse("replay_no_stall", IOLOG),
    Spec::refuse("replay_redirect", IOLOG),
    Spec::refuse("replay_scale", IOLOG),
    Spec::refuse("replay_skip", IOLOG),
    Spec::refuse("replay_time_scale", IOLOG),
    Spec::refuse("softrandommap", "random maps are always kept; drop it"),
    Spec::refuse("sprandom", SPRANDOM),
    Spec::refuse("spr_num_regions", SPRANDOM),
    Spec::refuse("spr_op", SPRANDOM),
    Spec::refuse(
        "sync_file_range",
        "sync_file_range is not supported; use fsync= or fdatasync=",
    ),
    Spec::refuse(
        "thinkcycles",
        "CPU-cycle think time is not supported; use thinktime=",
    ),
    Spec::refuse(
        "thinktime_blocks_type",
        "think time per issued block is not supported; drop it",
    ),
    Spec::refuse(
        "thinktime_iotime",
        "think time after a span of I/O time is not supported; drop it",
    ),
    Spec::refuse("trim_backlog", TRIM_VERIFY),
    Spec::refuse("trim_backlog_batch", TRIM_VERIFY),
    Spec::refuse("trim_percentage", TRIM_VERIFY),
    Spec::refuse("trim_verify_zero", TRIM_VERIFY),
    Spec::refuse(
        "uid",
        "xferbench does not switch users; run it as that user",
    ),
    Spec::refuse(
        "write_barrier",
        "write barriers are not supported; use fsync=",
    ),
    Spec::refuse(
        "write_hint",
        "write lifetime hints are not supported; drop it",
    ),
    Spec::refuse("zone_reset_frequency", NO_ZBD),
    Spec::refuse("zone_reset_threshold", NO_ZBD),
    Spec::refuse("zonecapacity", NO_ZBD),
    // Options of fio's engines that xferbench does not have.
    Spec::other_engine("no_completion_thread", "windowsaio"),
    Spec::other_engine("apptag", "io_uring_cmd"),
    Spec::other_engine("apptag_mask", "io_uring_cmd"),
    Spec::other_engine("brick", "gfapi"),
    Spec::other_engine("bucket_name", "http"),
    Spec::other_engine("busy_poll", "rados/rbd"),
    Spec::other_engine("bindname", "rdma"),
    Spec::other_engine("chunk_size", "dfs/libhdfs"),
    Spec::other_engine("chunck_size", "libhdfs"),
    Spec::other_engine("clientname", "rados/rbd"),
    Spec::other_engine("clustername", "rados/rbd"),
    Spec::other_engine("cmd_type", "io_uring_cmd"),
    Spec::other_engine("conf", "rados"),
    Spec::other_engine("cont", "dfs"),
    Spec::other_engine("cuda_io", "libcufile"),
    Spec::other_engine("deac", "io_uring_cmd"),
    Spec::other_engine("device-names", "xnvme"),
    Spec::other_engine("donorname", "e4defrag"),
    Spec::other_engine("gpu_dev_ids", "libcufile"),
    Spec::other_engine("hdfs_use_direct", "libhdfs"),
    Spec::other_engine("hdfsdirectory", "libhdfs"),
    Spec::other_engine("http_host", "http"),
    Spec::other_engine("http_mode", "http"),
    Spec::other_engine("http_object_mode", "http"),
    Spec::other_engine("http_pass", "http"),
    Spec::other_engine("http_s3_key", "http"),
    Spec::other_engine("http_s3_keyid", "http"),
    Spec::other_engine("http_s3_region", "http"),
    Spec::other_engine("http_s3_security_token", "http"),
    Spec::other_engine("http_s3_sse_customer_algorithm", "http"),
    Spec::other_engine("http_s3_sse_customer_key", "http"),
    Spec::other_engine("http_s3_storage_class", "http"),
    Spec::other_engine("http_swift_auth_token", "http"),
    Spec::other_engine("http_user", "http"),
    Spec::other_engine("http_verbose", "http"),
    Spec::other_engine("https", "http"),
    Spec::other_engine("initiator", "libiscsi"),
    Spec::other_engine("inplace", "e4defrag"),
    Spec::other_engine("libblkio_driver", "libblkio"),
    Spec::other_engine("libblkio_force_enable_completion_eventfd", "libblkio"),
    Spec::other_engine("libblkio_num_entries", "libblkio"),
    Spec::other_engine("libblkio_path", "libblkio"),
    Spec::other_engine("libblkio_pre_connect_props", "libblkio"),
    Spec::other_engine("libblkio_pre_start_props", "libblkio"),
    Spec::other_engine("libblkio_queue_size", "libblkio"),
    Spec::other_engine("libblkio_vectored", "libblkio"),
    Spec::other_engine("libblkio_wait_mode", "libblkio"),
    Spec::other_engine("libblkio_write_zeroes_on_trim", "libblkio"),
    Spec::other_engine("md_per_io_size", "io_uring_cmd/xnvme"),
    Spec::other_engine("namenode", "libhdfs"),
    Spec::other_engine("nfs_url", "nfs"),
    Spec::other_engine("object_class", "dfs"),
    Spec::other_engine("pi_act", "io_uring_cmd/xnvme"),
    Spec::other_engine("pi_chk", "io_uring_cmd/xnvme"),
    Spec::other_engine("pool", "dfs/rados/rbd"),
    Spec::other_engine("rbdname", "rbd"),
    Spec::other_engine("readfua", "sg/io_uring_cmd"),
    Spec::other_engine("sg_write_mode", "sg"),
    Spec::other_engine("single-instance", "gfapi"),
    Spec::other_engine("single_instance", "libhdfs"),
    Spec::other_engine("skip_bad", "mtd"),
    Spec::other_engine("stream_id", "sg"),
    Spec::other_engine("svcl", "dfs"),
    Spec::other_engine("touch_objects", "rados"),
    Spec::other_engine("uri", "nbd"),
    Spec::other_engine("verb", "rdma"),
    Spec::other_engine("verify_mode", "io_uring_cmd"),
    Spec::other_engine("volume", "gfapi"),
    Spec::other_engine("write_mode", "io_uring_cmd"),
    Spec::other_engine("writefua", "sg/io_uring_cmd"),
    Spec::other_engine("xnvme_admin", "xnvme"),
    Spec::other_engine("xnvme_async", "xnvme"),
    Spec::other_engine("xnvme_be", "xnvme"),
    Spec::other_engine("xnvme_dev_nsid", "xnvme"),
    Spec::other_engine("xnvme_dev_subnqn", "xnvme"),
    Spec::other_engine("xnvme_iovec", "xnvme"),
    Spec::other_engine("xnvme_mem", "xnvme"),
    Spec::other_engine("xnvme_sync", "xnvme"),
];

/// `continue_on_error=` / `ignore_error=`: none is what xferbench does;
/// anything else would run on past errors it stops at.
fn on_error(o: &Opt) -> Result<SetOutcome> {
    if matches!(o.value, Some("none" | "0" | "")) {
        return Ok(SetOutcome::Note(format!(
            "{}=none is what xferbench does: an error ends the job",
            o.key
        )));
    }
    Err(o.bad("going on past I/O errors is not supported: an error ends the job, naming its offset; drop it"))
}
