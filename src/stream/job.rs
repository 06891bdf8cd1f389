//! One `stream` job: the typed options of a fio job section, whether they came
//! from a job file or from command-line flags. Both paths set options through
//! [`Job::set`], so a flag and a job-file line can never mean different things.

use crate::error::{Error, Result};
use crate::units::parse_fio_size;
use serde::Serialize;
use std::path::Path;
use std::time::Duration;

/// fio's `rw=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    /// `read`: sequential reads.
    Read,
    /// `write`: sequential writes.
    Write,
    /// `randread`: reads in a random order, each block once per pass.
    RandRead,
    /// `randwrite`: writes in a random order, each block once per pass.
    RandWrite,
    /// `rw` / `readwrite`: sequential, mixed by `rwmixread`.
    ReadWrite,
    /// `randrw`.
    RandRw,
}

impl Rw {
    /// The job issues reads (read-only or mixed).
    pub fn reads(self) -> bool {
        !matches!(self, Rw::Write | Rw::RandWrite)
    }
    /// The job issues writes (write-only or mixed).
    pub fn writes(self) -> bool {
        !matches!(self, Rw::Read | Rw::RandRead)
    }
    /// Blocks are visited in a random order rather than sequentially.
    pub fn random(self) -> bool {
        matches!(self, Rw::RandRead | Rw::RandWrite | Rw::RandRw)
    }
    /// fio's word for it (`rw` for [`Rw::ReadWrite`]).
    pub fn name(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::Write => "write",
            Rw::RandRead => "randread",
            Rw::RandWrite => "randwrite",
            Rw::ReadWrite => "rw",
            Rw::RandRw => "randrw",
        }
    }
}

/// fio's `ioengine=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IoEngine {
    /// pread/pwrite, one block per call.
    Psync,
    /// io_uring with `iodepth` requests in flight (`libaio` maps here).
    IoUring,
    /// memcpy to and from a shared mapping of the target.
    Mmap,
    /// One-way stream over an xferbench transport (`filename=xfer:tcp`).
    Transport,
    /// fio's `null`: every I/O completes at once, no data moves, no file
    /// is opened; its rate is xferbench's own cost per I/O.
    Null,
    /// fio's `net`: blocks sent or received over a socket (`hostname=`,
    /// `port=`, `protocol=`; see `stream::net`).
    Net,
    /// fio's `netsplice`: `net` with TCP blocks moved through a pipe by splice(2).
    #[serde(rename = "netsplice")]
    NetSplice,
}

impl IoEngine {
    /// fio's word for it (`io_uring`, `psync`…).
    pub fn name(self) -> &'static str {
        match self {
            IoEngine::Psync => "psync",
            IoEngine::IoUring => "io_uring",
            IoEngine::Mmap => "mmap",
            IoEngine::Transport => "transport",
            IoEngine::Null => "null",
            IoEngine::Net => "net",
            IoEngine::NetSplice => "netsplice",
        }
    }
}

/// fio's `iomem=` / `mem=`: where I/O buffers come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IoMem {
    /// Heap memory (fio's default).
    Malloc,
    /// Anonymous mmap (fio's `mmap`, also `mmapshared`, `shm`).
    Mmap,
    /// Anonymous mmap with MAP_HUGETLB (fio's `mmaphuge`, `shmhuge`).
    MmapHuge,
}

/// fio's `verify=`, the checksums xferbench writes and checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VerifyKind {
    Xxhash,
    /// `crc32c` and `crc32c-intel`.
    Crc32c,
}

/// How a worker learns an I/O finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Completion {
    /// Sleep in the kernel until woken: blocking syscalls, io_uring wait.
    Interrupt,
    /// Spin: io_uring IOPOLL (`hipri`) and/or SQPOLL, non-blocking syscalls.
    Poll,
}

/// Prefix of a filename that names a transport instead of a file
/// (`xfer:tcp`): the job keeps its colons, the engine opens a link.
pub const TRANSPORT_PREFIX: &str = "xfer:";

/// One job after `[global]` inheritance, `numjobs` expansion and environment
/// substitution. Sizes are bytes, rates bytes per second.
#[derive(Clone, Debug, Serialize)]
pub struct Job {
    /// The section name (`numjobs` clones keep it, as fio's do).
    pub name: String,
    /// Line of the section header in the job file; 0 for command-line jobs.
    pub line: usize,
    /// The file that section is in (an `include`d file's own name).
    #[serde(skip)]
    pub source: String,
    /// Which `numjobs` clone this is (0-based).
    pub clone: u32,
    /// Reporting group: starts at 0, +1 at every `new_group` or `stonewall`.
    pub group: u32,
    pub filename: Option<String>,
    /// `directory=`: where a relative or generated filename lives.
    pub directory: Option<String>,
    /// `filename_format=`: how a job without `filename=` names its file
    /// (fio's default `$jobname.$jobnum.$filenum`).
    pub filename_format: Option<String>,
    /// `nrfiles=`: files per job; only 1 is supported.
    pub nrfiles: u32,
    /// `filesize=`: the target's size, used when the target reports none
    /// (a character device) or when a file is created.
    pub filesize: Option<u64>,
    /// `size=`: bytes this job transfers; default: the target's size minus offset.
    pub size: Option<u64>,
    pub offset: u64,
    /// `offset_increment=`: added to `offset` for each `numjobs` clone.
    pub offset_increment: u64,
    /// `bs=` / `blocksize=`.
    pub bs: u64,
    pub rw: Rw,
    /// `rwmixread=` percentage for `rw`/`randrw`.
    pub rwmixread: u32,
    pub numjobs: u32,
    pub iodepth: u32,
    pub ioengine: IoEngine,
    pub iomem: IoMem,
    pub direct: bool,
    pub verify: Option<VerifyKind>,
    /// `do_verify=` (default true): a write job with `verify` reads its
    /// region back and checks it after writing; a read job checks as it reads.
    pub do_verify: bool,
    pub verify_fatal: bool,
    pub verify_dump: bool,
    /// Seed written into every block header; `randseed=`, default fixed.
    pub randseed: u64,
    /// `ratemin=`: fail the job when its bandwidth falls below this.
    pub ratemin: Option<u64>,
    /// `rate=`: cap the job's bandwidth at this.
    pub rate: Option<u64>,
    pub new_group: bool,
    pub stonewall: bool,
    /// `wait_for=`: the name of a job this one starts after.
    pub wait_for: Option<String>,
    pub group_reporting: bool,
    pub allow_file_create: bool,
    /// `fsync=N`: fsync after every N writes; 0 = never.
    pub fsync: u32,
    pub end_fsync: bool,
    pub runtime: Option<Duration>,
    pub time_based: bool,
    /// `ramp_time=`: run this long before timing starts.
    pub ramp_time: Option<Duration>,
    /// `hipri` (io_uring IOPOLL).
    pub hipri: bool,
    /// `sqthread_poll` (io_uring SQPOLL).
    pub sqthread_poll: bool,
    /// xferbench's `completion=interrupt|poll`; None = from hipri/sqthread_poll.
    pub completion: Option<Completion>,
    /// `cpus_allowed=`: CPUs this job's worker may run on.
    pub cpus_allowed: Option<Vec<usize>>,
    /// The `net` engine's options (`port=`, `protocol=`, `listen`…).
    pub net: crate::stream::net::NetOptions,
}

impl Default for Job {
    fn default() -> Self {
        Job {
            name: "job".to_string(),
            line: 0,
            source: String::new(),
            clone: 0,
            group: 0,
            filename: None,
            directory: None,
            filename_format: None,
            nrfiles: 1,
            filesize: None,
            size: None,
            offset: 0,
            offset_increment: 0,
            bs: 4096,
            rw: Rw::Read,
            rwmixread: 50,
            numjobs: 1,
            iodepth: 1,
            ioengine: IoEngine::Psync,
            iomem: IoMem::Malloc,
            direct: false,
            verify: None,
            do_verify: true,
            verify_fatal: false,
            verify_dump: false,
            randseed: 0x5eed_f10e_5eed_f10e,
            ratemin: None,
            rate: None,
            new_group: false,
            stonewall: false,
            wait_for: None,
            group_reporting: false,
            allow_file_create: true,
            fsync: 0,
            end_fsync: false,
            runtime: None,
            time_based: false,
            ramp_time: None,
            hipri: false,
            sqthread_poll: false,
            completion: None,
            cpus_allowed: None,
            net: Default::default(),
        }
    }
}

impl Completion {
    /// The word for it: `interrupt` or `poll`.
    pub fn name(self) -> &'static str {
        match self {
            Completion::Interrupt => "interrupt",
            Completion::Poll => "poll",
        }
    }
}

impl Job {
    /// The completion mode in force.
    pub fn completion(&self) -> Completion {
        self.completion
            .unwrap_or(if self.hipri || self.sqthread_poll {
                Completion::Poll
            } else {
                Completion::Interrupt
            })
    }
}

/// fio's `filename_format=` keywords (matched in any case).
pub const NAME_KEYWORDS: [&str; 4] = ["$jobname", "$jobnum", "$filenum", "$clientuid"];

/// fio's default `filename_format=`.
pub const DEFAULT_FILENAME_FORMAT: &str = "$jobname.$jobnum.$filenum";

/// Expands a `filename_format=` as fio does: `$jobname` is the job's name,
/// `$jobnum` its clone (0..numjobs-1), `$filenum` the file (0..nrfiles-1).
/// `$clientuid` (fio's client address in client/server mode) is refused.
pub fn expand_filename_format(
    fmt: &str,
    jobname: &str,
    jobnum: u32,
    filenum: u32,
) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(fmt.len() + jobname.len());
    let mut rest = fmt;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let kw = NAME_KEYWORDS.iter().find(|k| {
            rest.get(..k.len())
                .is_some_and(|h| h.eq_ignore_ascii_case(k))
        });
        match kw.copied() {
            Some("$jobname") => out.push_str(jobname),
            Some("$jobnum") => out.push_str(&jobnum.to_string()),
            Some("$filenum") => out.push_str(&filenum.to_string()),
            Some(_) => {
                return Err(format!(
                    "filename_format={fmt}: $clientuid is fio's client address in client/server mode, which xferbench does not have; drop it"
                ));
            }
            None => {
                out.push('$');
                rest = &rest[1..];
                continue;
            }
        }
        rest = &rest[kw.map_or(1, |k| k.len())..];
    }
    out.push_str(rest);
    Ok(out)
}

impl Job {
    /// The file this clone uses: `filename=` (under `directory=` when it is
    /// a relative path), or without one fio's generated name,
    /// `directory/filename_format` (default `jobname.jobnum.0`, in the
    /// current directory). Errors carry no location; the caller adds it.
    pub fn resolved_filename(&self) -> std::result::Result<String, String> {
        if self.nrfiles > 1 {
            return Err(format!(
                "nrfiles={}: several files per job are not supported; use one file per job (numjobs=N gives each clone its own file)",
                self.nrfiles
            ));
        }
        let under_dir = |name: String| match &self.directory {
            Some(d) if !name.starts_with('/') => {
                Path::new(d).join(&name).to_string_lossy().into_owned()
            }
            _ => name,
        };
        if matches!(self.ioengine, IoEngine::Net | IoEngine::NetSplice) {
            // The peer's host or socket path (fio's hostname=), not a file;
            // none for a listener.
            return Ok(self.filename.clone().unwrap_or_default());
        }
        match &self.filename {
            Some(f) if f.starts_with(TRANSPORT_PREFIX) => Ok(f.clone()),
            Some(f) => Ok(under_dir(f.clone())),
            None => {
                let fmt = self
                    .filename_format
                    .as_deref()
                    .filter(|f| !f.is_empty())
                    .unwrap_or(DEFAULT_FILENAME_FORMAT);
                let name = expand_filename_format(fmt, &self.name, self.clone, 0)?;
                if name.is_empty() {
                    return Err(format!(
                        "filename_format={fmt} gives an empty file name; name the file with filename="
                    ));
                }
                Ok(under_dir(name))
            }
        }
    }
}

/// What [`Job::set`] did with an option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetOutcome {
    Applied,
    /// Ignored, or applied differently from fio. The text names the option so
    /// the caller can warn, or refuse under `--strict`.
    Unsupported(String),
}

impl Job {
    /// Applies one fio option; `value` is None for a bare flag (`stonewall`).
    /// Errors name the option and its value; the caller adds where it came from.
    pub fn set(&mut self, key: &str, value: Option<&str>) -> Result<SetOutcome> {
        let o = Opt {
            key,
            value: value.map(str::trim),
        };
        match key {
            "name" => self.name = o.value()?.to_string(),
            "filename" => self.filename = Some(o.filename()?),
            "directory" => self.directory = Some(o.directory()?),
            "filename_format" => self.filename_format = Some(o.value()?.to_string()),
            "nrfiles" | "nr_files" => self.nrfiles = o.int(1, 1 << 20)?,
            "filesize" => self.filesize = Some(o.size()?),
            "size" | "io_size" | "io_limit" => self.size = Some(o.size()?),
            "offset" => self.offset = o.size()?,
            "offset_increment" => self.offset_increment = o.size()?,
            "bs" | "blocksize" => match o.pair("block size")? {
                0 => return Err(o.bad("the block size must be at least 1 byte")),
                bs => self.bs = bs,
            },
            "rw" | "readwrite" => self.rw = o.rw()?,
            "rwmixread" => self.rwmixread = o.int(0, 100)?,
            "rwmixwrite" => self.rwmixread = 100 - o.int(0, 100)?,
            "numjobs" => self.numjobs = o.int(1, 4096)?,
            "iodepth" => self.iodepth = o.int(1, 65536)?,
            "ioengine" => return self.set_engine(&o),
            "iomem" | "mem" => self.iomem = o.iomem()?,
            "direct" => self.direct = o.bool()?,
            "buffered" => self.direct = !o.bool()?,
            "verify" => self.verify = o.verify()?,
            "do_verify" => self.do_verify = o.bool()?,
            "verify_fatal" => self.verify_fatal = o.bool()?,
            "verify_dump" => self.verify_dump = o.bool()?,
            "randseed" => {
                self.randseed = o
                    .value()?
                    .parse()
                    .map_err(|_| o.bad("expected a whole number"))?
            }
            // fio: 0 means no limit.
            "ratemin" => self.ratemin = Some(o.pair("rate")?).filter(|&r| r > 0),
            "rate" => self.rate = Some(o.pair("rate")?).filter(|&r| r > 0),
            "new_group" => self.new_group = o.bool()?,
            "stonewall" | "wait_for_previous" => self.stonewall = o.bool()?,
            "wait_for" => self.wait_for = Some(o.value()?.to_string()),
            "group_reporting" => self.group_reporting = o.bool()?,
            "allow_file_create" => self.allow_file_create = o.bool()?,
            "fsync" => self.fsync = o.int(0, u32::MAX.into())?,
            "end_fsync" => self.end_fsync = o.bool()?,
            "runtime" | "timeout" => self.runtime = o.duration()?,
            "time_based" => self.time_based = o.bool()?,
            "ramp_time" => self.ramp_time = o.duration()?,
            "hipri" => self.hipri = o.bool()?,
            "sqthread_poll" => self.sqthread_poll = o.bool()?,
            "completion" => {
                self.completion = Some(match o.value()? {
                    "interrupt" => Completion::Interrupt,
                    "poll" => Completion::Poll,
                    _ => return Err(o.bad("unknown completion mode; use interrupt or poll")),
                })
            }
            "cpus_allowed" => {
                self.cpus_allowed = crate::units::parse_cpu_list(o.value()?).map_err(|_| {
                    o.bad("malformed cpu list (expected numbers and ranges, as in 0-3,6)")
                })?
            }
            // fio's net engine options (stream::net checks them together).
            // hostname= is the peer, kept as the filename as fio keeps it,
            // so --map can point it elsewhere; an IPv6 address keeps its colons.
            "hostname" => {
                self.filename = Some(o.value()?.to_string());
                self.net.hostname = self.filename.clone();
            }
            "port" => self.net.port = Some(o.int(1, 65535)? as u16),
            "protocol" | "proto" => {
                self.net.protocol =
                    Some(crate::stream::net::Proto::parse(o.value()?).map_err(|e| o.bad(&e))?)
            }
            "listen" => self.net.listen = Some(o.bool()?),
            "pingpong" => self.net.pingpong = Some(o.bool()?),
            "nodelay" => self.net.nodelay = Some(o.bool()?),
            "window_size" => {
                self.net.window_size = Some(
                    u32::try_from(o.size()?)
                        .ok()
                        .filter(|w| *w <= i32::MAX as u32)
                        .ok_or_else(|| o.bad("a socket buffer is at most 2g"))?,
                )
            }
            "mss" => self.net.mss = Some(o.int(0, 65535)?),
            "interface" => self.net.interface = Some(o.value()?.to_string()),
            "ttl" => self.net.ttl = Some(o.int(0, 255)?),
            // fio options whose setting here is what xferbench always does:
            // workers are threads, random orders come from a fixed seed.
            "thread" | "randrepeat" if o.bool()? => {}
            "loops" if o.value == Some("1") => {}
            "loops" => {
                return Ok(ignored(
                    key,
                    "; each job runs once (use time_based with runtime= to run longer)",
                ));
            }
            // Ignoring kb_base=1000 would silently change every size.
            "kb_base" if o.value == Some("1024") => {}
            "kb_base" => {
                return Err(o.bad("xferbench sizes are binary (k = 1024); drop kb_base and write sizes in bytes or with k/m/g"));
            }
            "cpumask" | "numa_cpu_nodes" => return Ok(ignored(key, "; use cpus_allowed")),
            // Everything else, including fio options that change nothing this
            // tool measures (logs, percentiles, description, invalidate,
            // io_uring fixedbufs/registerfiles...): named, so a typo shows.
            _ => return Ok(ignored(key, "")),
        }
        Ok(SetOutcome::Applied)
    }

    fn set_engine(&mut self, o: &Opt) -> Result<SetOutcome> {
        let (engine, note) = match o.value()? {
            "psync" | "pvsync" => (IoEngine::Psync, None),
            "sync" => (
                IoEngine::Psync,
                Some("ioengine=sync runs as psync (pread/pwrite at explicit offsets)"),
            ),
            "libaio" => (IoEngine::IoUring, Some("ioengine=libaio runs as io_uring")),
            "io_uring" => (IoEngine::IoUring, None),
            "mmap" => (IoEngine::Mmap, None),
            "transport" => (IoEngine::Transport, None),
            "null" => (IoEngine::Null, None),
            "net" => (IoEngine::Net, None),
            "netsplice" => (IoEngine::NetSplice, None),
            _ => {
                return Err(o.bad(
                    "unknown engine; use psync, io_uring, mmap, null, net, netsplice or transport (sync, pvsync and libaio are accepted too)",
                ));
            }
        };
        self.ioengine = engine;
        Ok(note.map_or(SetOutcome::Applied, |n| SetOutcome::Unsupported(n.into())))
    }
}

fn ignored(key: &str, hint: &str) -> SetOutcome {
    SetOutcome::Unsupported(format!(
        "option '{key}' is not supported by xferbench and was ignored{hint}"
    ))
}

/// One option being parsed: knows how to word errors about itself.
struct Opt<'a> {
    key: &'a str,
    value: Option<&'a str>,
}

impl<'a> Opt<'a> {
    fn bad(&self, why: &str) -> Error {
        match self.value {
            Some(v) => Error::usage(format!("{}={v}: {why}", self.key)),
            None => Error::usage(format!("{}: {why}", self.key)),
        }
    }

    fn value(&self) -> Result<&'a str> {
        self.value.filter(|v| !v.is_empty()).ok_or_else(|| {
            Error::usage(format!("{k} needs a value, as in {k}=VALUE", k = self.key))
        })
    }

    /// A bare flag means true, as in fio.
    fn bool(&self) -> Result<bool> {
        let Some(v) = self.value else { return Ok(true) };
        match v.to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(self.bad("expected a boolean: 1/0, true/false, yes/no or on/off")),
        }
    }

    fn int(&self, lo: u32, hi: u64) -> Result<u32> {
        self.value()?
            .parse::<u32>()
            .ok()
            .filter(|n| (lo..).contains(n) && u64::from(*n) <= hi)
            .ok_or_else(|| self.bad(&format!("expected a whole number from {lo} to {hi}")))
    }

    fn size(&self) -> Result<u64> {
        self.parse_size(self.value()?)
    }

    fn parse_size(&self, s: &str) -> Result<u64> {
        if s.ends_with('%') {
            return Err(Error::usage(format!(
                "{}={s} (percentage of the target) is not supported; give a size",
                self.key
            )));
        }
        parse_fio_size(s).map_err(|e| self.bad(&e.to_string()))
    }

    /// fio's `read,write[,trim]` triples: xferbench jobs take one value, so
    /// the sides must agree. Rates may leave a side empty (no limit there);
    /// the limit given then applies to the whole job.
    fn pair(&self, what: &str) -> Result<u64> {
        let parts: Vec<&str> = self.value()?.split(',').map(str::trim).collect();
        let given: Vec<u64> = parts
            .iter()
            .filter(|p| !p.is_empty())
            .map(|p| self.parse_size(p))
            .collect::<Result<_>>()?;
        let first = *given
            .first()
            .ok_or_else(|| self.bad("expected a size, as in 4k or 1m"))?;
        let empty_ok = what == "rate";
        if given.iter().any(|&g| g != first) || (!empty_ok && given.len() != parts.len()) {
            return Err(self.bad(&format!(
                "different read and write {what}s are not supported; give one value, as in {}={}",
                self.key, parts[0]
            )));
        }
        Ok(first)
    }

    /// fio reads a bare number as seconds; 0 means no limit.
    fn duration(&self) -> Result<Option<Duration>> {
        let d = crate::units::parse_duration(self.value()?).map_err(|_| {
            self.bad("malformed duration (expected seconds, or a number with a unit us, ms, s, m or h, as in 30 or 500ms)")
        })?;
        Ok(Some(d).filter(|d| !d.is_zero()))
    }

    /// fio separates several files with ':' (`\:` is a literal colon); a
    /// transport name (`xfer:shm:completion=poll`) keeps its colons.
    fn filename(&self) -> Result<String> {
        let v = self.value()?;
        if v.starts_with(TRANSPORT_PREFIX) {
            return Ok(v.to_string());
        }
        let mut out = String::with_capacity(v.len());
        let mut chars = v.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&':') => out.push(chars.next().unwrap()),
                ':' => {
                    return Err(
                        self.bad("multiple files per job are not supported; use one job per file")
                    );
                }
                c => out.push(c),
            }
        }
        Ok(out)
    }

    /// fio separates several directories with ':'; xferbench takes one.
    fn directory(&self) -> Result<String> {
        let v = self.value()?;
        let out = v.replace(r"\:", "\0");
        if out.contains(':') {
            return Err(self.bad("several directories are not supported; name one"));
        }
        Ok(out.replace('\0', ":"))
    }

    fn rw(&self) -> Result<Rw> {
        Ok(match self.value()? {
            "read" => Rw::Read,
            "write" => Rw::Write,
            "randread" => Rw::RandRead,
            "randwrite" => Rw::RandWrite,
            "rw" | "readwrite" => Rw::ReadWrite,
            "randrw" => Rw::RandRw,
            "trim" | "randtrim" | "trimwrite" | "randtrimwrite" => {
                return Err(self.bad("trim workloads are not supported; use read, write, randread, randwrite, rw or randrw"));
            }
            v if v.contains(':') => {
                return Err(self.bad("the ':N' offset modifier is not supported; drop it"));
            }
            _ => {
                return Err(self.bad("unknown workload; use read, write, randread, randwrite, rw (readwrite) or randrw"));
            }
        })
    }

    fn iomem(&self) -> Result<IoMem> {
        Ok(match self.value()? {
            "malloc" => IoMem::Malloc,
            "mmap" | "mmapshared" | "shm" => IoMem::Mmap,
            "mmaphuge" | "shmhuge" => IoMem::MmapHuge,
            v if v.contains(':') => {
                return Err(self.bad("file-backed buffers are not supported; drop the ':PATH' (anonymous memory is used)"));
            }
            _ => {
                return Err(self.bad(
                    "unknown buffer type; use malloc, mmap, mmapshared, shm, mmaphuge or shmhuge",
                ));
            }
        })
    }

    fn verify(&self) -> Result<Option<VerifyKind>> {
        if self.value.is_none() {
            self.value()?;
        }
        Ok(match self.value.unwrap_or_default() {
            "" | "0" | "none" => None,
            "xxhash" => Some(VerifyKind::Xxhash),
            "crc32c" | "crc32c-intel" => Some(VerifyKind::Crc32c),
            v => {
                return Err(Error::usage(format!(
                    "verify={v} is not supported; use verify=xxhash or verify=crc32c"
                )));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(job: &mut Job, key: &str, value: Option<&str>) -> Result<SetOutcome> {
        job.set(key, value)
    }

    fn err(key: &str, value: Option<&str>) -> String {
        Job::default().set(key, value).unwrap_err().to_string()
    }

    #[test]
    fn bool_spellings() {
        let mut j = Job::default();
        for (v, want) in [
            (None, true),
            (Some("1"), true),
            (Some("0"), false),
            (Some("true"), true),
            (Some("false"), false),
            (Some("yes"), true),
            (Some("no"), false),
            (Some("on"), true),
            (Some("OFF"), false),
        ] {
            set(&mut j, "direct", v).unwrap();
            assert_eq!(j.direct, want, "direct={v:?}");
            set(&mut j, "buffered", v).unwrap();
            assert_eq!(j.direct, !want, "buffered={v:?}");
        }
        set(&mut j, "stonewall", None).unwrap();
        set(&mut j, "wait_for_previous", Some("0")).unwrap();
        assert!(!j.stonewall);
        assert!(err("direct", Some("maybe")).starts_with("direct=maybe: expected a boolean"));
    }

    #[test]
    fn sizes_and_pairs() {
        let mut j = Job::default();
        set(&mut j, "bs", Some("4k,4k")).unwrap();
        assert_eq!(j.bs, 4096);
        set(&mut j, "blocksize", Some(" 1m ")).unwrap();
        assert_eq!(j.bs, 1 << 20);
        set(&mut j, "io_size", Some("16g")).unwrap();
        assert_eq!(j.size, Some(16 << 30));
        set(&mut j, "rate", Some(",2m")).unwrap();
        assert_eq!(j.rate, Some(2 << 20));
        set(&mut j, "rate", Some("0")).unwrap();
        assert_eq!(j.rate, None);
        assert!(err("bs", Some("4k,8k")).starts_with("bs=4k,8k: different read and write"));
        assert!(err("bs", Some("0")).contains("at least 1 byte"));
        assert!(err("rate", Some("1m,2m")).contains("different read and write rates"));
        assert_eq!(
            err("bs", Some("4q")),
            "bs=4q: malformed size (expected a number with an optional k/m/g/t suffix, as in 4k or 1m)"
        );
        assert_eq!(
            err("size", Some("50%")),
            "size=50% (percentage of the target) is not supported; give a size"
        );
        assert!(err("size", None).contains("size needs a value"));
    }

    #[test]
    fn enums() {
        let mut j = Job::default();
        set(&mut j, "readwrite", Some("randrw")).unwrap();
        assert_eq!(j.rw, Rw::RandRw);
        set(&mut j, "rwmixwrite", Some("30")).unwrap();
        assert_eq!(j.rwmixread, 70);
        assert!(err("rw", Some("trim")).contains("trim workloads are not supported"));
        assert!(err("rw", Some("randread:8")).contains("offset modifier"));
        assert!(err("rwmixread", Some("101")).contains("from 0 to 100"));

        assert_eq!(
            set(&mut j, "ioengine", Some("pvsync")).unwrap(),
            SetOutcome::Applied
        );
        assert_eq!(j.ioengine, IoEngine::Psync);
        let SetOutcome::Unsupported(w) = set(&mut j, "ioengine", Some("libaio")).unwrap() else {
            panic!("libaio should warn")
        };
        assert_eq!(
            (w.as_str(), j.ioengine),
            ("ioengine=libaio runs as io_uring", IoEngine::IoUring)
        );
        assert!(
            matches!(set(&mut j, "ioengine", Some("sync")), Ok(SetOutcome::Unsupported(w)) if w.contains("psync"))
        );
        assert!(err("ioengine", Some("posixaio")).contains("use psync, io_uring, mmap"));

        set(&mut j, "mem", Some("shmhuge")).unwrap();
        assert_eq!(j.iomem, IoMem::MmapHuge);
        assert!(err("iomem", Some("mmaphuge:/hugetlbfs/x")).contains("file-backed"));

        set(&mut j, "verify", Some("crc32c-intel")).unwrap();
        assert_eq!(j.verify, Some(VerifyKind::Crc32c));
        set(&mut j, "verify", Some("")).unwrap();
        assert_eq!(j.verify, None);
        assert_eq!(
            err("verify", Some("md5")),
            "verify=md5 is not supported; use verify=xxhash or verify=crc32c"
        );
        set(&mut j, "completion", Some("poll")).unwrap();
        assert_eq!(j.completion(), Completion::Poll);
    }

    #[test]
    fn filenames() {
        let mut j = Job::default();
        set(&mut j, "filename", Some(" /dev/xdma0_h2c_0 ")).unwrap();
        assert_eq!(j.filename.as_deref(), Some("/dev/xdma0_h2c_0"));
        set(&mut j, "filename", Some(r"/mnt/a\:b")).unwrap();
        assert_eq!(j.filename.as_deref(), Some("/mnt/a:b"));
        set(&mut j, "filename", Some("xfer:shm:completion=poll")).unwrap();
        assert_eq!(j.filename.as_deref(), Some("xfer:shm:completion=poll"));
        assert_eq!(
            err("filename", Some("/dev/a:/dev/b")),
            "filename=/dev/a:/dev/b: multiple files per job are not supported; use one job per file"
        );
    }

    #[test]
    fn filename_format_expansion() {
        let x = |f: &str, c| expand_filename_format(f, "job", c, 0).unwrap();
        assert_eq!(x(DEFAULT_FILENAME_FORMAT, 0), "job.0.0");
        assert_eq!(x("$jobname.$jobnum.$filenum", 7), "job.7.0");
        assert_eq!(x("/d/$JobName-$JOBNUM", 2), "/d/job-2");
        assert_eq!(x("$$cost$", 1), "$$cost$");
        assert!(expand_filename_format("$clientuid", "j", 0, 0).is_err());
        let mut j = Job {
            name: "w".into(),
            clone: 3,
            ..Job::default()
        };
        assert_eq!(j.resolved_filename().unwrap(), "w.3.0");
        set(&mut j, "directory", Some("/tmp/x")).unwrap();
        assert_eq!(j.resolved_filename().unwrap(), "/tmp/x/w.3.0");
        set(&mut j, "filename_format", Some("f$jobnum")).unwrap();
        assert_eq!(j.resolved_filename().unwrap(), "/tmp/x/f3");
        set(&mut j, "filename", Some("/dev/sda")).unwrap();
        assert_eq!(j.resolved_filename().unwrap(), "/dev/sda");
        set(&mut j, "nrfiles", Some("2")).unwrap();
        assert!(j.resolved_filename().unwrap_err().starts_with("nrfiles=2:"));
        set(&mut j, "directory", Some(r"/a\:b")).unwrap();
        assert_eq!(j.directory.as_deref(), Some("/a:b"));
    }

    #[test]
    fn numbers_durations_cpus() {
        let mut j = Job::default();
        set(&mut j, "runtime", Some("30")).unwrap();
        assert_eq!(j.runtime, Some(Duration::from_secs(30)));
        set(&mut j, "timeout", Some("2h")).unwrap();
        assert_eq!(j.runtime, Some(Duration::from_secs(7200)));
        set(&mut j, "ramp_time", Some("500ms")).unwrap();
        assert_eq!(j.ramp_time, Some(Duration::from_millis(500)));
        set(&mut j, "runtime", Some("0")).unwrap();
        assert_eq!(j.runtime, None);
        assert!(err("runtime", Some("5q")).starts_with("runtime=5q: malformed duration"));
        set(&mut j, "cpus_allowed", Some("0-3,6")).unwrap();
        assert_eq!(j.cpus_allowed, Some(vec![0, 1, 2, 3, 6]));
        set(&mut j, "randseed", Some("42")).unwrap();
        assert_eq!(j.randseed, 42);
        assert!(err("numjobs", Some("0")).contains("from 1 to 4096"));
        assert!(err("iodepth", Some("65537")).contains("from 1 to 65536"));
    }

    #[test]
    fn ignored_options_are_named() {
        let mut j = Job::default();
        assert_eq!(
            set(&mut j, "norandommap", None).unwrap(),
            SetOutcome::Unsupported(
                "option 'norandommap' is not supported by xferbench and was ignored".into()
            )
        );
        assert!(
            matches!(set(&mut j, "cpumask", Some("3")), Ok(SetOutcome::Unsupported(w)) if w.contains("cpus_allowed"))
        );
        assert!(matches!(
            set(&mut j, "loops", Some("3")),
            Ok(SetOutcome::Unsupported(_))
        ));
        // Settings xferbench already follows are not worth a warning.
        for (k, v) in [
            ("thread", None),
            ("randrepeat", Some("1")),
            ("kb_base", Some("1024")),
            ("loops", Some("1")),
        ] {
            assert_eq!(set(&mut j, k, v).unwrap(), SetOutcome::Applied, "{k}");
        }
        assert!(err("kb_base", Some("1000")).contains("binary"));
    }
}
