//! One `stream` job: the typed options of a fio job section, whether they came
//! from a job file or from command-line flags. Both paths set options through
//! [`Job::set`], so a flag and a job-file line can never mean different things.

use crate::distribution::Shape;
use crate::error::{Error, Result};
use crate::pattern::Pattern;
use crate::units::parse_fio_size;
use blocksizes::{BlockSizes, Choice};
use serde::Serialize;
use std::path::Path;
use std::time::Duration;
pub use zones::{Sequencer, Zones};

pub mod blocksizes;
pub mod buffers;
pub mod cmdprio;
pub mod engine_opts;
pub mod file_service;
pub mod net;
pub mod options;
pub mod refused;
pub mod spec;
pub mod tuning;
pub mod verify;
pub mod zones;

/// fio's `rw=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
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
    /// `trim`: sequential trims (a hole punched in a file, a discard on a
    /// block device).
    Trim,
    /// `randtrim`: trims in a random order, each block once per pass.
    RandTrim,
    /// `trimwrite`: each block trimmed, then written, in sequence.
    TrimWrite,
    /// `randtrimwrite`: the same in a random order.
    RandTrimWrite,
}

impl Rw {
    /// The job issues reads (read-only or mixed).
    pub fn reads(self) -> bool {
        matches!(self, Rw::Read | Rw::RandRead | Rw::ReadWrite | Rw::RandRw)
    }
    /// The job issues writes (write-only, mixed, or after trims).
    pub fn writes(self) -> bool {
        !matches!(self, Rw::Read | Rw::RandRead | Rw::Trim | Rw::RandTrim)
    }
    /// The job issues trims (`trim`, `randtrim`, `trimwrite`, `randtrimwrite`).
    pub fn trims(self) -> bool {
        matches!(
            self,
            Rw::Trim | Rw::RandTrim | Rw::TrimWrite | Rw::RandTrimWrite
        )
    }
    /// Each block is trimmed and then written (`trimwrite`,
    /// `randtrimwrite`): two I/Os per block, at the same offset.
    pub fn trim_then_write(self) -> bool {
        matches!(self, Rw::TrimWrite | Rw::RandTrimWrite)
    }
    /// Blocks are visited in a random order rather than sequentially.
    pub fn random(self) -> bool {
        matches!(
            self,
            Rw::RandRead | Rw::RandWrite | Rw::RandRw | Rw::RandTrim | Rw::RandTrimWrite
        )
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
            Rw::Trim => "trim",
            Rw::RandTrim => "randtrim",
            Rw::TrimWrite => "trimwrite",
            Rw::RandTrimWrite => "randtrimwrite",
        }
    }
}

/// fio's `ioengine=`: each variant is the engine fio names so, making the
/// syscalls fio's does (see `engine`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoEngine {
    /// `sync`: lseek, then read/write.
    Sync,
    /// `psync`: pread/pwrite, one block per call.
    Psync,
    /// `vsync`: lseek, then readv/writev; adjacent I/Os coalesced.
    Vsync,
    /// `pvsync`: preadv/pwritev.
    Pvsync,
    /// `pvsync2`: preadv2/pwritev2 with RWF_* flags (`hipri`, `nowait`).
    Pvsync2,
    /// io_uring with `iodepth` requests in flight.
    IoUring,
    /// Linux kernel AIO: io_submit/io_getevents, `iodepth` in flight.
    Libaio,
    /// POSIX AIO (glibc's aio_read/aio_write), `iodepth` in flight.
    Posixaio,
    /// memcpy to and from a shared mapping of the target.
    Mmap,
    /// fio's `falloc`: each I/O fallocates (or punches) its range.
    Falloc,
    /// fio's `ftruncate`: each write truncates the file to its offset.
    Ftruncate,
    /// One-way stream over an xferbench transport (`filename=xfer:tcp`).
    Transport,
    /// fio's `null`: every I/O completes at once, no data moves, no file
    /// is opened; its rate is xferbench's own cost per I/O.
    Null,
    /// `filecreate`: each I/O creates (opens with O_CREAT) one of `nrfiles`.
    Filecreate,
    /// `filestat`: each I/O stats one of `nrfiles` files.
    Filestat,
    /// `filedelete`: each I/O unlinks one of `nrfiles` files.
    Filedelete,
    /// `cpuio`: burns `cpuload`% of a CPU alongside the other jobs; no I/O.
    Cpuio,
    /// fio's `exec`: runs `program=` beside the other jobs; no I/O.
    Exec,
    /// fio's `net`: blocks sent or received over a socket (`hostname=`,
    /// `port=`, `protocol=`; see `net`).
    Net,
    /// fio's `netsplice`: `net` with TCP blocks moved through a pipe by splice(2).
    #[serde(rename = "netsplice")]
    NetSplice,
}

impl IoEngine {
    /// Every engine `ioengine=` takes, in the order `--enghelp` lists them.
    pub const ALL: &'static [IoEngine] = &[
        IoEngine::Sync,
        IoEngine::Psync,
        IoEngine::Vsync,
        IoEngine::Pvsync,
        IoEngine::Pvsync2,
        IoEngine::IoUring,
        IoEngine::Libaio,
        IoEngine::Posixaio,
        IoEngine::Mmap,
        IoEngine::Falloc,
        IoEngine::Ftruncate,
        IoEngine::Transport,
        IoEngine::Null,
        IoEngine::Filecreate,
        IoEngine::Filestat,
        IoEngine::Filedelete,
        IoEngine::Cpuio,
        IoEngine::Exec,
        IoEngine::Net,
        IoEngine::NetSplice,
    ];

    /// fio's word for it (`io_uring`, `psync`…).
    pub fn name(self) -> &'static str {
        match self {
            IoEngine::Sync => "sync",
            IoEngine::Psync => "psync",
            IoEngine::Vsync => "vsync",
            IoEngine::Pvsync => "pvsync",
            IoEngine::Pvsync2 => "pvsync2",
            IoEngine::IoUring => "io_uring",
            IoEngine::Libaio => "libaio",
            IoEngine::Posixaio => "posixaio",
            IoEngine::Mmap => "mmap",
            IoEngine::Falloc => "falloc",
            IoEngine::Ftruncate => "ftruncate",
            IoEngine::Transport => "transport",
            IoEngine::Null => "null",
            IoEngine::Filecreate => "filecreate",
            IoEngine::Filestat => "filestat",
            IoEngine::Filedelete => "filedelete",
            IoEngine::Cpuio => "cpuio",
            IoEngine::Exec => "exec",
            IoEngine::Net => "net",
            IoEngine::NetSplice => "netsplice",
        }
    }

    /// What it does, in a phrase, for `--cmdhelp=ioengine`.
    pub fn about(self) -> &'static str {
        match self {
            IoEngine::Sync => "lseek, then read/write",
            IoEngine::Psync => "pread/pwrite",
            IoEngine::Vsync => "readv/writev, adjacent I/Os coalesced",
            IoEngine::Pvsync => "preadv/pwritev",
            IoEngine::Pvsync2 => "preadv2/pwritev2 with RWF_* flags",
            IoEngine::IoUring => "Linux io_uring",
            IoEngine::Libaio => "Linux native asynchronous I/O",
            IoEngine::Posixaio => "POSIX asynchronous I/O",
            IoEngine::Mmap => "memcpy to and from a mapping of the target",
            IoEngine::Falloc => "fallocate(2) per I/O",
            IoEngine::Ftruncate => "ftruncate(2) per write",
            IoEngine::Transport => "xferbench: a stream over filename=xfer:TRANSPORT",
            IoEngine::Null => "No I/O: every I/O completes at once",
            IoEngine::Filecreate => "Create files",
            IoEngine::Filestat => "Stat files",
            IoEngine::Filedelete => "Delete files",
            IoEngine::Cpuio => "Burn CPU beside the other jobs",
            IoEngine::Exec => "Run a program beside the other jobs",
            IoEngine::Net => "Network I/O over a socket",
            IoEngine::NetSplice => "net, with TCP blocks moved by splice(2)",
        }
    }

    /// `ioengine=`'s values, each with its phrase, in [`IoEngine::ALL`]'s
    /// order.
    pub fn words() -> Vec<spec::Word> {
        Self::ALL.iter().map(|e| (e.name(), e.about())).collect()
    }

    /// The engines whose I/O is an operation on a whole file (one per file
    /// of `nrfiles`), not data moved.
    pub fn file_op(self) -> bool {
        matches!(
            self,
            IoEngine::Filecreate | IoEngine::Filestat | IoEngine::Filedelete
        )
    }
}

/// fio's `iomem=` / `mem=`: where I/O buffers come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoMem {
    /// Heap memory (fio's default).
    Malloc,
    /// Anonymous mmap (fio's `mmap`, also `mmapshared`, `shm`).
    Mmap,
    /// Anonymous mmap with MAP_HUGETLB (fio's `mmaphuge`, `shmhuge`).
    MmapHuge,
}

/// fio's `verify=`: what each written block carries and what a read checks.
/// The checksum kinds put a header (offset, sequence, seed, checksum of the
/// rest) at the start of the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(into = "&'static str")]
pub enum VerifyKind {
    Md5,
    Crc64,
    Crc32,
    /// `crc32c` and `crc32c-intel`.
    Crc32c,
    Crc16,
    Crc7,
    Xxhash,
    Sha1,
    /// Not in fio: sha2 gives it for free.
    Sha224,
    Sha256,
    /// Not in fio: sha2 gives it for free.
    Sha384,
    Sha512,
    Sha3_224,
    Sha3_256,
    Sha3_384,
    Sha3_512,
    /// `meta`: the header alone (where the block belongs), no checksum of
    /// the data; with `verify_pattern` the data is checked against it.
    Meta,
    /// `pattern`: no header; every byte must be `verify_pattern`'s.
    Pattern,
}

impl VerifyKind {
    /// Every kind by its `verify=` word (`crc32c-intel` also means crc32c).
    pub const ALL: [(&'static str, VerifyKind); 18] = [
        ("md5", VerifyKind::Md5),
        ("crc64", VerifyKind::Crc64),
        ("crc32", VerifyKind::Crc32),
        ("crc32c", VerifyKind::Crc32c),
        ("crc16", VerifyKind::Crc16),
        ("crc7", VerifyKind::Crc7),
        ("xxhash", VerifyKind::Xxhash),
        ("sha1", VerifyKind::Sha1),
        ("sha224", VerifyKind::Sha224),
        ("sha256", VerifyKind::Sha256),
        ("sha384", VerifyKind::Sha384),
        ("sha512", VerifyKind::Sha512),
        ("sha3-224", VerifyKind::Sha3_224),
        ("sha3-256", VerifyKind::Sha3_256),
        ("sha3-384", VerifyKind::Sha3_384),
        ("sha3-512", VerifyKind::Sha3_512),
        ("meta", VerifyKind::Meta),
        ("pattern", VerifyKind::Pattern),
    ];

    /// fio's word for it.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("?", |(n, _)| n)
    }
}

impl VerifyKind {
    /// What a block carries, in a phrase, for `--cmdhelp=verify`.
    pub fn about(self) -> &'static str {
        match self {
            VerifyKind::Md5 => "An md5 checksum in each block's header",
            VerifyKind::Crc64 => "A crc64 checksum in each block's header",
            VerifyKind::Crc32 => "A crc32 checksum in each block's header",
            VerifyKind::Crc32c => "A crc32c checksum in each block's header",
            VerifyKind::Crc16 => "A crc16 checksum in each block's header",
            VerifyKind::Crc7 => "A crc7 checksum in each block's header",
            VerifyKind::Xxhash => "An xxhash checksum in each block's header",
            VerifyKind::Sha1 => "A sha1 checksum in each block's header",
            VerifyKind::Sha224 => "A sha224 checksum (not in fio)",
            VerifyKind::Sha256 => "A sha256 checksum in each block's header",
            VerifyKind::Sha384 => "A sha384 checksum (not in fio)",
            VerifyKind::Sha512 => "A sha512 checksum in each block's header",
            VerifyKind::Sha3_224 => "A sha3-224 checksum in each block's header",
            VerifyKind::Sha3_256 => "A sha3-256 checksum in each block's header",
            VerifyKind::Sha3_384 => "A sha3-384 checksum in each block's header",
            VerifyKind::Sha3_512 => "A sha3-512 checksum in each block's header",
            VerifyKind::Meta => "The header alone: where the block belongs",
            VerifyKind::Pattern => "No header: every byte is verify_pattern's",
        }
    }
}

impl From<VerifyKind> for &'static str {
    fn from(k: VerifyKind) -> Self {
        k.name()
    }
}

/// How a worker learns an I/O finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Completion {
    /// Sleep in the kernel until woken: blocking syscalls, io_uring wait.
    Interrupt,
    /// Spin: io_uring IOPOLL (`hipri`) and/or SQPOLL, non-blocking syscalls.
    Poll,
}

/// fio's block size when a job names none (or leaves a side of `bs=` empty).
pub const DEFAULT_BS: u64 = 4096;

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
    /// The job's (first) file: `filename=`, or once resolved the name
    /// `filename_format=` gives file 0.
    pub filename: Option<String>,
    /// Every file of a job that has several (`filename=a:b:c`, or once
    /// resolved the `nrfiles` generated names); empty for one file.
    pub filenames: Vec<String>,
    /// `directory=`: where a relative or generated filename lives (the
    /// first, when several are given).
    pub directory: Option<String>,
    /// `directory=a:b`: every directory, when several are given (fio puts
    /// clone N's generated files in directory N modulo their count);
    /// empty for one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub directories: Vec<String>,
    /// `filename_format=`: how a job without `filename=` names its file
    /// (fio's default `$jobname.$jobnum.$filenum`).
    pub filename_format: Option<String>,
    /// `nrfiles=`: files per job (with `filename=a:b:c`, the list's length).
    pub nrfiles: u32,
    /// `filesize=`: the target's size, used when the target reports none
    /// (a character device) or when a file is created; with several files,
    /// each file's size (the job's `size=` then caps the I/O). A range
    /// `lo-hi` gives each file a size drawn from it; this is `lo`.
    pub filesize: Option<u64>,
    /// The top of a `filesize=lo-hi` range.
    pub filesize_max: Option<u64>,
    /// `openfiles=`: at most this many of the job's files in service at once.
    pub openfiles: Option<u32>,
    /// `file_service_type=`: which file the next I/O goes to.
    pub file_service: file_service::FileService,
    /// `size=`: bytes this job transfers; default: the target's size minus offset.
    pub size: Option<u64>,
    pub offset: u64,
    /// `offset_increment=`: added to `offset` for each `numjobs` clone.
    pub offset_increment: u64,
    /// `bs=` / `blocksize=`; with mixed sizes, the smallest (the unit of
    /// offsets and regions).
    pub bs: u64,
    /// `bs=R,W` with different sides (reads, writes).
    #[serde(skip)]
    pub bs_sides: Option<[u64; 2]>,
    /// `bsrange=` / `blocksize_range=`: (low, high) for reads, writes.
    #[serde(skip)]
    pub bsrange: Option<[(u64, u64); 2]>,
    /// `bssplit=`: (length, percent) lists for reads, writes.
    #[serde(skip)]
    pub bssplit: Option<[Vec<(u64, u32)>; 2]>,
    /// `blockalign=` / `ba=`: where random I/Os may start (default: every
    /// `bs`, or the smallest of mixed sizes).
    pub blockalign: Option<u64>,
    /// I/O lengths that vary, resolved from the three above by
    /// [`Job::resolve_block_sizes`] (None: every I/O is `bs` long).
    pub bs_mix: Option<BlockSizes>,
    /// `bs_is_seq_rand`: the read side of `bs=`, `bsrange=` and `bssplit=`
    /// sizes sequential I/Os, the write side random ones, whichever way
    /// they move; folded into the others by [`Job::resolve_block_sizes`].
    #[serde(skip)]
    pub bs_is_seq_rand: bool,
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
    /// `verify_pattern=`: what verified blocks are filled with and checked
    /// against, in fio's pattern syntax.
    pub verify_pattern: Option<Pattern>,
    /// `verify_interval=`: a header every this many bytes of a block
    /// rather than one per block.
    pub verify_interval: Option<u64>,
    /// `verify_offset=`: each header is swapped with the bytes this far
    /// into its block before writing, and back before checking.
    pub verify_offset: u64,
    /// `verify_backlog=`: a writer checks what it wrote every N blocks
    /// rather than once after the write phase; 0 = after.
    pub verify_backlog: u64,
    /// `verify_backlog_batch=`: how many of those N blocks are checked.
    pub verify_backlog_batch: Option<u64>,
    /// `verify_only`: a writer skips its writes and checks what an earlier
    /// run of the same job left.
    pub verify_only: bool,
    /// `verify_header_seed=`: a header's seed must be this job's `randseed`
    /// (off: any consistent block is accepted, whichever run wrote it).
    pub verify_header_seed: bool,
    /// `serialize_overlap`: an I/O waits while one in flight overlaps it.
    pub serialize_overlap: bool,
    /// `verify=` was given (fio: `verify_pattern` alone implies a header
    /// and pattern check, but not over an explicit `verify=0`).
    #[serde(skip)]
    pub verify_given: bool,
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
    /// `lat_percentiles=1`, `slat_percentiles=1`: fio's JSON (and text)
    /// gives `lat_ns`/`slat_ns` percentiles too, not only `clat_ns`'s.
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
    pub allow_file_create: bool,
    /// fio's `--readonly` (a command-line switch, not a job option): the
    /// job may neither create nor grow its files, as fio refuses to.
    pub readonly: bool,
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
    /// `cpus_allowed_policy=split`: each clone takes one CPU of the set.
    pub cpus_split: bool,
    /// `rw=read:N` on a sequential job: bytes added after each block
    /// (holes; negative runs backwards).
    pub seq_add: i64,
    /// `rw=randread:N`: I/Os per random offset (the rest per `rw_sequencer`).
    pub seq_nr: u32,
    pub rw_sequencer: Sequencer,
    /// `norandommap`: random blocks drawn independently, repeats allowed.
    pub norandommap: bool,
    /// `random_distribution=zoned:A/S:…`: A% of accesses to the next S%
    /// of the region; empty for uniform.
    pub zoned: Vec<(u32, u32)>,
    /// `random_distribution=zoned_abs:A/SIZE:…`: A% of accesses to the next
    /// SIZE bytes; empty for uniform.
    pub zoned_abs: Vec<(u32, u64)>,
    /// `random_distribution=zipf|pareto|normal[:V[:CENTER]]`.
    pub skew: Option<Shape>,
    /// `percentage_random=` (default 100): the share of a random job's
    /// offsets that are random; the others follow on from the I/O before.
    pub percentage_random: u32,
    /// `random_generator=lfsr`: every block once per pass even with
    /// `norandommap`, as fio's LFSR guarantees.
    pub lfsr: bool,
    /// `randrepeat=` (default on): the same random order every run.
    pub randrepeat: bool,
    /// `zonemode=strided` with `zonerange=`, `zonesize=`, `zoneskip=`.
    pub strided: bool,
    pub zonerange: Option<u64>,
    pub zonesize: Option<u64>,
    pub zoneskip: u64,
    /// `startdelay=`: how long after the run starts the job may start (a
    /// range picks a time in it).
    pub startdelay: Option<(Duration, Duration)>,
    /// `number_ios=`: stop after this many I/Os.
    pub number_ios: Option<u64>,
    /// `loops=`: passes over the region.
    pub loops: u32,
    /// `thinktime=`: pause after every `thinktime_blocks` I/Os, the first
    /// `thinktime_spin` of it spinning.
    pub thinktime: Option<Duration>,
    pub thinktime_spin: Option<Duration>,
    pub thinktime_blocks: u32,
    /// `rate_iops=` / `rate_iops_min=`: rates in I/Os per second.
    pub rate_iops: Option<u64>,
    pub rate_iops_min: Option<u64>,
    /// `rate_process=poisson`: I/Os at exponentially spaced times.
    pub poisson: bool,
    /// `rate_cycle=`: the window `ratemin` is judged over (fio's 1 s default).
    pub rate_cycle: Duration,
    /// `bwavgtime=`: ms between the bandwidth samples of `bw_min`… (None:
    /// not given; see [`Job::sample_windows`]).
    #[serde(skip)]
    pub bw_avg_time: Option<u32>,
    /// `iopsavgtime=`: ms between the IOPS samples of `iops_min`….
    #[serde(skip)]
    pub iops_avg_time: Option<u32>,
    /// The options this job's own section (or the command line) gave, as
    /// written, in order: fio's `job options`. Valueless flags are left
    /// out, as fio leaves them out.
    #[serde(skip)]
    pub given: Vec<(String, String)>,
    /// `max_latency=`: fail the job when one I/O takes longer.
    pub max_latency: Option<Duration>,
    /// `size=N%` / `offset=N%`: fractions of the target's size.
    pub size_pct: Option<f64>,
    pub offset_pct: Option<f64>,
    /// `invalidate=` (default on): drop the target's cached pages first.
    pub invalidate: bool,
    /// `fadvise_hint=`: the POSIX_FADV_* advice given, if any.
    pub fadvise: Option<i32>,
    /// `sync=`: open with O_SYNC or O_DSYNC.
    pub open_sync: Option<i32>,
    /// `fdatasync=N`: fdatasync after every N writes.
    pub fdatasync: u32,
    /// `fill_device=` / `fill_fs=`: a writer goes on until the device or
    /// file system is full (ENOSPC ends it, not as an error); without
    /// `size=`, a file's region is the file system's free space.
    pub fill_device: bool,
    /// `fallocate=`: preallocate a file the job writes (fio's default), or not.
    pub fallocate: bool,
    /// `unlink=`: remove the job's file (never a device) when it is done.
    pub unlink: bool,
    /// `zero_buffers`, `buffer_pattern=`, `refill_buffers`: what writes carry.
    pub zero_buffers: bool,
    pub buffer_pattern: Option<Vec<u8>>,
    pub refill_buffers: bool,
    /// `iodepth_low=`: once the queue is full, reap until this few are in
    /// flight before refilling it (0 or above `iodepth`: `iodepth`, fio's
    /// default, so one completion makes room for one new I/O).
    pub iodepth_low: Option<u32>,
    /// `iodepth_batch_submit=` (`iodepth_batch`): I/Os queued before the
    /// engine submits them in one call (fio's 1; 0: `iodepth`).
    pub batch_submit: u32,
    /// `iodepth_batch_complete_min=`: reap at least this many at once (fio's
    /// 1; 0: the engine looks without waiting, and spins for the one
    /// completion a full queue needs).
    pub batch_complete_min: u32,
    /// `iodepth_batch_complete_max=`: reap at most this many at once (0, or
    /// below the minimum: the minimum, as fio has it).
    pub batch_complete_max: u32,
    /// `exitall` / `exit_what=` / `exitall_on_error`: when this job ends
    /// (or fails), stop the others.
    pub exitall: bool,
    pub exit_what: ExitWhat,
    pub exitall_on_error: bool,
    /// `overwrite=1`: a write job's region past the file's end is written
    /// (laid out) before the job, so it overwrites rather than allocates.
    pub overwrite: bool,
    /// `file_append=1`: the region starts at the file's current end.
    pub file_append: bool,
    /// `offset_align=`: a percentage offset is rounded down to this.
    pub offset_align: u64,
    /// `buffer_compress_percentage=` / `buffer_compress_chunk=`: that share
    /// of each chunk of a write buffer is zeros, so it compresses.
    pub compress_pct: u32,
    pub compress_chunk: u64,
    /// `nice=`: the worker thread's niceness.
    pub nice: Option<i32>,
    /// `prioclass=` and `prio=`: the worker's I/O priority (ioprio_set).
    pub ioprio: (Option<u32>, Option<u32>),
    /// fio's log files (`write_lat_log=`…, `log_*=`).
    #[serde(skip_serializing_if = "crate::logs::LogSpec::is_off")]
    pub logs: crate::logs::LogSpec,
    /// What written buffers hold beyond the options above: dedupe,
    /// scrambling, whether refilling was asked for.
    pub buffers: buffers::BufferOpts,
    /// `flow_id=`, `flow=`, `flow_sleep=`: fio's flow control between jobs.
    pub flow: FlowOpts,
    /// libaio's and io_uring's per-command priorities (`cmdprio_*`).
    pub cmdprio: cmdprio::CmdPrio,
    /// fio's engine-specific options (`fixedbufs`, `nowait`, `cpuload`…).
    pub engine_opts: engine_opts::EngineOpts,
    /// The `net` engine's options (`port=`, `protocol=`, `listen`…).
    pub net: net::NetOptions,
    /// Offloaded submission, the latency target, steady state.
    pub tuning: tuning::Tuning,
}

/// fio's flow control (flow.c): jobs sharing a `flow_id` keep their I/O
/// counts in the ratio of their `flow` weights; the one ahead waits
/// `flow_sleep` before trying again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FlowOpts {
    pub id: i32,
    /// The weight; 0: the job takes no part. fio's old signed form
    /// (`flow=8` beside `flow=-1` runs 8:1) counts by its magnitude.
    pub weight: u32,
    /// µs to wait when held back.
    pub sleep_us: u32,
}

/// fio's `exit_what=`: which jobs an `exitall` job stops when it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExitWhat {
    /// The jobs running now (fio's default, `group`).
    Group,
    /// The running jobs of this job's stonewall group.
    Stonewall,
    /// Every job, running or not yet started.
    All,
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
            filenames: Vec::new(),
            directory: None,
            directories: Vec::new(),
            filename_format: None,
            nrfiles: 1,
            filesize: None,
            filesize_max: None,
            openfiles: None,
            file_service: Default::default(),
            size: None,
            offset: 0,
            offset_increment: 0,
            bs: DEFAULT_BS,
            rw: Rw::Read,
            rwmixread: 50,
            numjobs: 1,
            iodepth: 1,
            bs_sides: None,
            bsrange: None,
            bssplit: None,
            bs_mix: None,
            bs_is_seq_rand: false,
            blockalign: None,
            ioengine: IoEngine::Psync,
            iomem: IoMem::Malloc,
            direct: false,
            verify: None,
            do_verify: true,
            verify_fatal: false,
            verify_dump: false,
            verify_pattern: None,
            verify_interval: None,
            verify_offset: 0,
            verify_backlog: 0,
            verify_backlog_batch: None,
            verify_only: false,
            verify_header_seed: false,
            serialize_overlap: false,
            verify_given: false,
            randseed: 0x5eed_f10e_5eed_f10e,
            ratemin: None,
            rate: None,
            new_group: false,
            stonewall: false,
            wait_for: None,
            group_reporting: false,
            lat_percentiles: false,
            slat_percentiles: false,
            allow_file_create: true,
            readonly: false,
            fsync: 0,
            end_fsync: false,
            runtime: None,
            time_based: false,
            ramp_time: None,
            hipri: false,
            sqthread_poll: false,
            completion: None,
            cpus_allowed: None,
            cpus_split: false,
            seq_add: 0,
            seq_nr: 1,
            rw_sequencer: Sequencer::Sequential,
            norandommap: false,
            zoned: Vec::new(),
            zoned_abs: Vec::new(),
            skew: None,
            percentage_random: 100,
            lfsr: false,
            randrepeat: true,
            strided: false,
            zonerange: None,
            zonesize: None,
            zoneskip: 0,
            startdelay: None,
            number_ios: None,
            loops: 1,
            thinktime: None,
            thinktime_spin: None,
            thinktime_blocks: 1,
            rate_iops: None,
            rate_iops_min: None,
            poisson: false,
            rate_cycle: Duration::from_secs(1),
            bw_avg_time: None,
            iops_avg_time: None,
            given: Vec::new(),
            max_latency: None,
            size_pct: None,
            offset_pct: None,
            invalidate: true,
            fadvise: None,
            open_sync: None,
            fdatasync: 0,
            fallocate: true,
            fill_device: false,
            unlink: false,
            zero_buffers: false,
            buffer_pattern: None,
            refill_buffers: false,
            iodepth_low: None,
            batch_submit: 1,
            batch_complete_min: 1,
            batch_complete_max: 0,
            exitall: false,
            exit_what: ExitWhat::Group,
            exitall_on_error: false,
            overwrite: false,
            file_append: false,
            offset_align: 0,
            compress_pct: 0,
            compress_chunk: 512,
            nice: None,
            ioprio: (None, None),
            logs: crate::logs::LogSpec::default(),
            buffers: Default::default(),
            flow: Default::default(),
            cmdprio: Default::default(),
            engine_opts: Default::default(),
            net: Default::default(),
            tuning: Default::default(),
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
    /// The windows (ms) of the bandwidth and IOPS samples behind the JSON's
    /// `bw_min`… and `iops_min`…, as fio's init.c sets them: `bwavgtime` /
    /// `iopsavgtime` (500 ms); a job writing that log and not given the
    /// option samples at the log's `log_avg_msec` instead, and where the
    /// log's own window is 0 (a line per I/O) every I/O is a sample: 0.
    pub fn sample_windows(&self) -> (u32, u32) {
        let window = |given: Option<u32>, logged: bool| match (given, logged) {
            (Some(ms), true) if self.logs.avg_msec.min(ms) == 0 => 0,
            (Some(ms), _) => ms,
            (None, true) => self.logs.avg_msec,
            (None, false) => 500,
        };
        (
            window(self.bw_avg_time, self.logs.bw.is_some()),
            window(self.iops_avg_time, self.logs.iops.is_some()),
        )
    }

    /// The strided zones in force (`zonemode=strided`), in bytes.
    pub fn zones(&self) -> Option<Zones> {
        if !self.strided {
            return None;
        }
        let range = self.zonerange.or(self.zonesize)?;
        Some(Zones {
            range,
            size: self.zonesize.unwrap_or(range),
            skip: self.zoneskip,
        })
    }

    /// The completion mode in force.
    pub fn completion(&self) -> Completion {
        self.completion
            .unwrap_or(if self.hipri || self.sqthread_poll {
                Completion::Poll
            } else {
                Completion::Interrupt
            })
    }

    /// How the queue of `depth` I/Os is fed and drained, with fio's fix-ups
    /// of the batch options against the depth (init.c): the options can be
    /// given before `iodepth=`, so they are resolved only here.
    pub fn batches(&self, depth: usize) -> Batches {
        let depth = depth.max(1);
        let within = |v: u32| match v as usize {
            0 => depth,
            v => v.min(depth),
        };
        let min = self.batch_complete_min as usize;
        Batches {
            submit: within(self.batch_submit),
            complete_min: min,
            complete_max: (self.batch_complete_max as usize).max(min),
            low: within(self.iodepth_low.unwrap_or(0)),
            polling: self.batch_complete_min == 0 && self.batch_complete_max == 0,
        }
    }
}

/// A job's queue discipline, as fio keeps its queue by default: each I/O
/// submitted as it is made (`submit` 1), and once the queue is full one
/// completion reaped (`complete_min` = `complete_max` = 1) to make room for
/// the next (`low` = the depth), so the device sees the queue stay at the
/// depth rather than drain and refill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batches {
    /// I/Os queued before they are submitted in one call.
    pub submit: usize,
    /// Completions a reap waits for (0: it looks, the engine spinning for
    /// the one a full queue must have).
    pub complete_min: usize,
    /// Completions a reap takes at most.
    pub complete_max: usize,
    /// A full queue is reaped until this few are in flight.
    pub low: usize,
    /// fio's polling loop (both completion batches 0): a reap after every
    /// I/O, not only when the queue is full.
    pub polling: bool,
}

/// fio's `filename_format=` keywords (matched in any case).
pub const NAME_KEYWORDS: [&str; 4] = ["$jobname", "$jobnum", "$filenum", "$clientuid"];

/// fio's default `filename_format=`.
pub const DEFAULT_FILENAME_FORMAT: &str = "$jobname.$jobnum.$filenum";

/// Expands a `filename_format=` as fio's `make_filename` does: each
/// keyword in turn (`$jobname`, then `$jobnum`, `$filenum`, `$clientuid`),
/// every occurrence, in any case. `$jobnum` is the clone's number,
/// `$filenum` the file's (0..nrfiles-1); `$clientuid` is fio's client
/// address in client/server mode, and empty in a plain run, as in fio.
pub fn expand_filename_format(fmt: &str, jobname: &str, jobnum: u32, filenum: u32) -> String {
    let values = [
        jobname.to_string(),
        jobnum.to_string(),
        filenum.to_string(),
        String::new(),
    ];
    let mut out = fmt.to_string();
    for (kw, value) in NAME_KEYWORDS.iter().zip(values) {
        // Matches found in an ASCII-lowercased copy: the keywords are
        // ASCII, so each starts and ends on a character boundary of `out`.
        let lower = out.to_ascii_lowercase();
        let mut done = String::with_capacity(out.len());
        let mut from = 0;
        for (i, _) in lower.match_indices(kw) {
            done.push_str(&out[from..i]);
            done.push_str(&value);
            from = i + kw.len();
        }
        done.push_str(&out[from..]);
        out = done;
    }
    out
}

/// A percentage's number without its `%` signs: fio reads the digits and
/// takes what follows them starting with `%` for a percentage, so `100%%`
/// (a job file written through printf) is `100%`.
pub(crate) fn unpercent(v: &str) -> &str {
    v.trim_end_matches('%').trim_end()
}

/// Greatest common divisor.
pub(crate) fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

impl Job {
    /// fio's fix-up of `verify_interval` (run after the block sizes are
    /// resolved): no longer than the smallest block, and a divisor of the
    /// smallest and the largest, else their greatest common divisor.
    pub fn fit_verify_interval(&mut self) {
        if self.verify.is_none() {
            return;
        }
        let (lo, hi) = self
            .bs_mix
            .as_ref()
            .map_or((self.bs, self.bs), |m| (m.min(), m.max()));
        let Some(mut i) = self.verify_interval.map(|i| i.min(lo)) else {
            return;
        };
        if !lo.is_multiple_of(i) || !hi.is_multiple_of(i) {
            i = gcd(lo, hi);
        }
        self.verify_interval = Some(i);
    }

    /// Folds `bs=R,W`, `bsrange=` and `bssplit=` into [`Job::bs_mix`] (fio's
    /// precedence: bssplit, then bsrange, then bs), with `bs` the smallest
    /// length. A range or split that comes down to one length is plain `bs`.
    pub fn resolve_block_sizes(&mut self) -> std::result::Result<(), String> {
        if self.bs_is_seq_rand {
            self.sides_by_randomness()?;
        }
        let dirs: [Choice; 2] = if let Some(split) = &self.bssplit {
            split.clone().map(|v| match v.as_slice() {
                [(b, _)] => Choice::Fixed(*b),
                _ => Choice::Split(v),
            })
        } else if let Some(range) = self.bsrange {
            let mut out = [Choice::Fixed(0), Choice::Fixed(0)];
            for (c, (lo, hi)) in out.iter_mut().zip(range) {
                *c = if lo == hi {
                    Choice::Fixed(lo)
                } else {
                    Choice::Range { lo, hi }
                };
            }
            out
        } else if let Some([r, w]) = self.bs_sides {
            [Choice::Fixed(r), Choice::Fixed(w)]
        } else {
            return Ok(());
        };
        let mix = BlockSizes { dirs };
        self.bs = mix.min();
        if let [Choice::Fixed(a), Choice::Fixed(b)] = &mix.dirs
            && a == b
        {
            self.bs_mix = None;
            return Ok(());
        }
        if let Some(ba) = self.blockalign
            && !ba.is_multiple_of(mix.min())
        {
            return Err(format!(
                "blockalign={}: random I/Os are laid out in units of the smallest block size ({}); give a multiple of it",
                crate::units::format_size(ba),
                crate::units::format_size(mix.min())
            ));
        }
        if !mix.all_multiples_of(self.bs) {
            return Err(format!(
                "block sizes {}: each must be a multiple of the smallest ({}), as offsets are laid out in its units; adjust the sizes",
                mix.text(),
                crate::units::format_size(self.bs)
            ));
        }
        self.bs_mix = Some(mix);
        Ok(())
    }

    /// `bs_is_seq_rand`: both directions take the side fio would give every
    /// I/O of this job (the write side when all are random, the read side
    /// when all are sequential). xferbench sizes I/Os by direction, so a
    /// job mixing random and sequential I/Os is refused rather than sized
    /// otherwise than in fio.
    fn sides_by_randomness(&mut self) -> std::result::Result<(), String> {
        let side = if !self.rw.random() || self.percentage_random == 0 {
            0
        } else if self.percentage_random == 100 && self.seq_nr == 1 {
            1
        } else {
            return Err(format!(
                "bs_is_seq_rand with rw={}{} (percentage_random={}): its I/Os are a mix of random and sequential ones, which fio sizes one by one and xferbench cannot; make the job all random or all sequential, or drop bs_is_seq_rand",
                self.rw.name(),
                if self.seq_nr > 1 {
                    format!(":{}", self.seq_nr)
                } else {
                    String::new()
                },
                self.percentage_random
            ));
        };
        if let Some(s) = &mut self.bs_sides {
            *s = [s[side]; 2];
        }
        if let Some(r) = &mut self.bsrange {
            *r = [r[side]; 2];
        }
        if let Some(b) = &mut self.bssplit {
            b[1 - side] = b[side].clone();
        }
        Ok(())
    }

    /// The share of the job's I/Os that read (0 to 1): `rwmixread` for
    /// mixed workloads.
    pub fn read_share(&self) -> f64 {
        match self.rw {
            Rw::ReadWrite | Rw::RandRw => f64::from(self.rwmixread) / 100.0,
            rw if rw.reads() => 1.0,
            _ => 0.0,
        }
    }

    /// The longest I/O the job issues: what each buffer must hold.
    pub fn max_bs(&self) -> u64 {
        self.bs_mix.as_ref().map_or(self.bs, BlockSizes::max)
    }

    /// The shortest I/O: what fio's buffer filling takes as its smallest
    /// write.
    pub fn min_bs(&self) -> u64 {
        self.bs_mix.as_ref().map_or(self.bs, BlockSizes::min)
    }

    /// The files this clone uses: `filename=` (each name under `directory=`
    /// when it is a relative path; `filename=a:b:c` names several), or
    /// without one fio's generated names, `directory/filename_format` for
    /// each `$filenum` below `nrfiles` (default `jobname.jobnum.N`, in the
    /// current directory). Errors carry no location; the caller adds it.
    pub fn resolved_files(&self) -> std::result::Result<Vec<String>, String> {
        let under_dir = |name: &str| match &self.directory {
            Some(d) if !name.starts_with('/') => {
                Path::new(d).join(name).to_string_lossy().into_owned()
            }
            _ => name.to_string(),
        };
        let net = matches!(self.ioengine, IoEngine::Net | IoEngine::NetSplice);
        let listed = if net {
            1
        } else {
            self.filenames.len().max(1) as u32
        };
        if !net && self.filenames.iter().any(String::is_empty) {
            return Err(format!(
                "filename={}: an empty file name in the list; separate names with ':' (a colon inside a name is written \\:)",
                self.filenames.join(":")
            ));
        }
        let no_files = matches!(
            self.ioengine,
            IoEngine::Net
                | IoEngine::NetSplice
                | IoEngine::Cpuio
                | IoEngine::Exec
                | IoEngine::Transport
        ) || self
            .filename
            .as_deref()
            .is_some_and(|f| f.starts_with(TRANSPORT_PREFIX));
        if no_files && (self.nrfiles > 1 || listed > 1) {
            return Err(format!(
                "nrfiles={}: ioengine={} has no files to spread over; use one job per target (numjobs=N)",
                self.nrfiles.max(listed),
                if self
                    .filename
                    .as_deref()
                    .is_some_and(|f| f.starts_with(TRANSPORT_PREFIX))
                {
                    "transport"
                } else {
                    self.ioengine.name()
                }
            ));
        }
        if self.filename.is_some() && self.nrfiles > 1 && self.nrfiles != listed {
            return Err(if listed == 1 {
                format!(
                    "nrfiles={} with filename=: filename= names one file; drop it and the files are named by filename_format= ($filenum counts them), or list them as filename=a:b",
                    self.nrfiles
                )
            } else {
                format!(
                    "nrfiles={} with filename= naming {listed} files: as in fio the list is the job's files; drop nrfiles= or name {} files",
                    self.nrfiles, self.nrfiles
                )
            });
        }
        if net {
            // The peer's host or socket path (fio's hostname=), not a file
            // (its colons kept); none for a listener.
            if !self.filenames.is_empty() {
                return Ok(vec![self.filenames.join(":")]);
            }
            return Ok(vec![self.filename.clone().unwrap_or_default()]);
        }
        match &self.filename {
            Some(f) if f.starts_with(TRANSPORT_PREFIX) => Ok(vec![f.clone()]),
            Some(_) if !self.filenames.is_empty() => {
                let names: Vec<String> = self.filenames.iter().map(|f| under_dir(f)).collect();
                if let Some(d) = names
                    .iter()
                    .enumerate()
                    .find_map(|(i, n)| names[..i].contains(n).then_some(n))
                {
                    return Err(format!("filename= names {d} twice; name each file once"));
                }
                Ok(names)
            }
            Some(f) => Ok(vec![under_dir(f)]),
            None => {
                let fmt = self
                    .filename_format
                    .as_deref()
                    .filter(|f| !f.is_empty())
                    .unwrap_or(DEFAULT_FILENAME_FORMAT);
                // fio puts every generated name under directory=, even one
                // that starts with '/', and gives a job nrfiles files even
                // when the format names them alike (filename_format=file$jobnum
                // with nrfiles=16: the one file, 16 times over).
                // Clone N's directory is N modulo their count, as fio's
                // set_name_idx picks it.
                let dir = match self.directories.len() {
                    0 => self.directory.as_ref(),
                    n => self.directories.get(self.subjob() as usize % n),
                };
                let generated = |n: u32| {
                    let name = expand_filename_format(fmt, &self.name, self.subjob(), n);
                    match dir {
                        Some(d) => format!(
                            "{}/{}",
                            d.trim_end_matches('/'),
                            name.trim_start_matches('/')
                        ),
                        None => name,
                    }
                };
                let names: Vec<String> = (0..self.nrfiles.max(1)).map(generated).collect();
                if names.iter().any(|n| n.is_empty() || n.ends_with('/')) {
                    return Err(format!(
                        "filename_format={fmt} gives an empty file name; name the file with filename="
                    ));
                }
                Ok(names)
            }
        }
    }

    /// fio's number for this clone (its `subjob_number`: `$jobnum`, the
    /// directory of `directory=a:b`, the `offset_increment` multiple).
    /// fio makes the clones after the first counting down, so the second
    /// job of `numjobs=4` is number 3, the fourth number 1.
    pub fn subjob(&self) -> u32 {
        match self.clone {
            0 => 0,
            c if c < self.numjobs => self.numjobs - c,
            // A job made by hand, not by numjobs.
            c => c,
        }
    }

    /// Resolves the job's files ([`Job::resolved_files`]) in place:
    /// `filename` is the first, `filenames` all of them when there are
    /// several, and `nrfiles` their count.
    pub fn resolve_files(&mut self) -> std::result::Result<(), String> {
        let mut names = self.resolved_files()?;
        self.nrfiles = names.len() as u32;
        self.filename = Some(names[0].clone());
        if names.len() == 1 {
            names.clear();
        }
        self.filenames = names;
        Ok(())
    }

    /// File `i`'s size from `filesize=`: the size itself, or for a range
    /// `lo-hi` one drawn from it for this clone and file (fio draws each
    /// file's), rounded down to a block.
    pub fn filesize_of(&self, i: usize) -> Option<u64> {
        let lo = self.filesize?;
        let Some(hi) = self.filesize_max else {
            return Some(lo);
        };
        let mut s = self.randseed ^ u64::from(self.clone).rotate_left(32) ^ (i as u64 + 1);
        let pick = lo + crate::payload::splitmix(&mut s) % (hi - lo + 1);
        Some((pick - pick % self.bs.max(1)).max(lo))
    }
}

/// What [`Job::set`] did with an option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetOutcome {
    Applied,
    /// Accepted without effect on any figure; the text says why, for a note.
    Note(String),
    /// Ignored, or applied differently from fio. The text names the option so
    /// the caller can warn, or refuse under `--strict`.
    Unsupported(String),
}

impl Job {
    /// Applies one fio option; `value` is None for a bare flag (`stonewall`).
    /// Errors name the option and its value; the caller adds where it came from.
    pub fn set(&mut self, key: &str, value: Option<&str>) -> Result<SetOutcome> {
        let value = value.map(str::trim);
        if let Some(spec) = options::GENERAL
            .iter()
            .chain(verify::VERIFY)
            .find(|s| s.is(key))
        {
            return spec.apply(self, &Opt::new(key, value, spec));
        }
        if let Some(spec) = engine_opts::find(key) {
            let outcome = spec.apply(self, &Opt::new(key, value, spec))?;
            self.engine_opts.mark(spec.name);
            return Ok(outcome);
        }
        if let Some(e) = verify::refuse_other(key) {
            return Err(e);
        }
        Err(Error::usage(match nearest(key) {
            Some(near) => {
                format!("unknown option '{key}' (not a fio option); did you mean '{near}'?")
            }
            None => format!(
                "unknown option '{key}' (not a fio option); check the spelling against fio's HOWTO"
            ),
        }))
    }

    fn set_engine(&mut self, o: &Opt) -> Result<()> {
        let v = o.value()?;
        self.ioengine = *IoEngine::ALL
            .iter()
            .find(|e| e.name() == v)
            .ok_or_else(|| o.bad(&refused::refusal(v)))?;
        Ok(())
    }
}

/// The table entry of the option `key` names (by any of its names):
/// general, verify, or an engine's.
pub fn spec(key: &str) -> Option<&'static spec::Spec> {
    options::GENERAL
        .iter()
        .chain(verify::VERIFY)
        .find(|s| s.is(key))
        .or_else(|| engine_opts::find(key))
}

/// Every name (and alias) of every option in the tables.
pub fn option_names() -> impl Iterator<Item = &'static str> {
    options::GENERAL
        .iter()
        .chain(verify::VERIFY)
        .chain(engine_opts::ENGINES.iter().flat_map(|(_, t)| t.iter()))
        .flat_map(|s| s.names())
}

/// The fio option spelled most like `key`, for "did you mean".
pub fn nearest(key: &str) -> Option<&'static str> {
    option_names()
        .map(|k| (strsim::damerau_levenshtein(key, k), k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min()
        .map(|(_, k)| k)
}

/// The most NUMA nodes Linux can be built for (`NODES_SHIFT` 10).
const MAX_NUMA_NODES: u64 = 1024;

/// The CPUs of NUMA nodes `list` (as in `0-1,3`), from sysfs.
fn numa_cpus(list: &str) -> std::result::Result<Vec<usize>, String> {
    // Checked before the list is expanded: `0-4000000000` is one line,
    // not gigabytes of node numbers.
    if let Some(n) = list
        .split([',', '-'])
        .filter_map(|n| n.trim().parse::<u64>().ok())
        .find(|&n| n >= MAX_NUMA_NODES)
    {
        return Err(format!(
            "node {n} is out of range (Linux numbers NUMA nodes below {MAX_NUMA_NODES})"
        ));
    }
    let nodes = crate::units::parse_cpu_list(list)
        .map_err(|_| "malformed node list (expected numbers and ranges, as in 0-1)".to_string())?
        .unwrap_or_default();
    let mut cpus = Vec::new();
    for n in nodes {
        let path = format!("/sys/devices/system/node/node{n}/cpulist");
        let text = std::fs::read_to_string(&path)
            .map_err(|_| format!("NUMA node {n} does not exist here ({path} is missing)"))?;
        cpus.extend(
            crate::units::parse_cpu_list(text.trim())
                .map_err(|_| format!("cannot read {path}"))?
                .unwrap_or_default(),
        );
    }
    Ok(cpus)
}

/// A parsed `random_distribution=`.
enum Distribution {
    Uniform,
    Zoned(Vec<(u32, u32)>),
    ZonedAbs(Vec<(u32, u64)>),
    Skewed(Shape),
}

/// A whole number as fio's strtoll reads it: a fraction after it is
/// dropped (`rwmixread=70.0`, a float as Python writes it, is 70).
fn whole_part(v: &str) -> &str {
    match v.split_once('.') {
        Some((n, frac)) if !n.is_empty() && frac.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => v,
    }
}

/// One option being parsed, handed to its table entry: knows how to word
/// errors about itself, and carries the entry's bounds so that a parse
/// enforces the range `--cmdhelp` shows rather than a copy of it.
pub struct Opt<'a> {
    key: &'a str,
    value: Option<&'a str>,
    range: Option<spec::Range>,
}

impl<'a> Opt<'a> {
    fn new(key: &'a str, value: Option<&'a str>, spec: &spec::Spec) -> Opt<'a> {
        Opt {
            key,
            value,
            range: spec.range,
        }
    }

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

    /// The entry's bounds; one that states none has fio's for a whole
    /// number (0 up to UINT_MAX).
    fn bounds(&self) -> spec::Range {
        self.range
            .unwrap_or(spec::Range::new(0, spec::Range::NO_MAX))
    }

    /// `v` as a whole number within `range` (no maximum: fio's UINT_MAX),
    /// or the one-line error naming the option, its value, `what` it is
    /// and the range.
    fn number_in(&self, v: &str, range: spec::Range, what: &str) -> Result<i64> {
        let hi = range.top(u32::MAX.into());
        whole_part(v)
            .parse::<i64>()
            .ok()
            .filter(|n| (range.min..=hi).contains(n))
            .ok_or_else(|| self.bad(&format!("expected {what} from {} to {hi}", range.min)))
    }

    /// The value as a number within the entry's bounds, called `what` in
    /// the error.
    fn whole(&self, what: &str) -> Result<i64> {
        self.number_in(self.value()?, self.bounds(), what)
    }

    /// The value as a whole number within the entry's bounds (which start
    /// at 0 or above for the options read this way).
    fn int(&self) -> Result<u32> {
        Ok(self.whole("a whole number")? as u32)
    }

    /// A whole percentage within the entry's bounds, as fio reads it: `50`,
    /// `50%` or `50%%` (job files written through printf double their `%`).
    fn share(&self) -> Result<u32> {
        Ok(self.number_in(
            unpercent(self.value()?),
            self.bounds(),
            "a whole percentage",
        )? as u32)
    }

    fn size(&self) -> Result<u64> {
        self.parse_size(self.value()?)
    }

    /// A size, or fio's range `lo-hi` (also `lo:hi`): the low end, and the
    /// high end when it is a range.
    fn size_range(&self) -> Result<(Option<u64>, Option<u64>)> {
        let v = self.value()?;
        let Some((lo, hi)) = v.split_once(['-', ':']) else {
            return Ok((Some(self.parse_size(v)?), None));
        };
        let (lo, hi) = (self.parse_size(lo.trim())?, self.parse_size(hi.trim())?);
        if hi < lo {
            return Err(self.bad("the range's end is smaller than its start"));
        }
        Ok((Some(lo), Some(hi).filter(|&h| h > lo)))
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

    /// fio's `read,write[,trim]` lists for block sizes: a value not ended
    /// by a comma applies to the sides after it (`bs=8k,32k`: 8k reads,
    /// 32k writes), an empty side keeps fio's default (None). Trims, which
    /// xferbench does not issue, are left out.
    fn sides<T: Clone>(&self, parse: impl Fn(&str) -> Result<T>) -> Result<[Option<T>; 2]> {
        let parts: Vec<&str> = self.value()?.split(',').map(str::trim).collect();
        if parts.len() > 3 {
            return Err(
                self.bad("expected at most three comma-separated values (reads, writes, trims)")
            );
        }
        let one = |p: &str| (!p.is_empty()).then(|| parse(p)).transpose();
        let r = one(parts[0])?;
        let w = match parts.get(1) {
            Some(p) => one(p)?,
            None => r.clone(),
        };
        if r.is_none() && w.is_none() {
            return Err(self.bad("expected a value, as in 4k or 4k,64k"));
        }
        Ok([r, w])
    }

    fn block_size(&self, v: &str) -> Result<u64> {
        match self.parse_size(v)? {
            0 => Err(self.bad("the block size must be at least 1 byte")),
            bs => Ok(bs),
        }
    }

    /// `LOW-HIGH` (`bsrange=4k-64k`); a single size is both ends.
    fn block_range(&self, v: &str) -> Result<(u64, u64)> {
        // fio takes `-` or `:` between the ends, and either end first.
        let (lo, hi) = v
            .split_once('-')
            .or_else(|| v.split_once(':'))
            .unwrap_or((v, v));
        let (lo, hi) = (self.block_size(lo.trim())?, self.block_size(hi.trim())?);
        Ok((lo.min(hi), lo.max(hi)))
    }

    /// `bssplit=` for one side: `SIZE/PERCENT:…`; sizes without a percent
    /// share what the others leave (as fio). Percentages may add up to less
    /// than 100: each size then gets its share of the total, as drawn.
    fn split(&self, v: &str) -> Result<Vec<(u64, u32)>> {
        let mut out = Vec::new();
        let mut missing = 0u32;
        for part in v.split(':').map(str::trim).filter(|p| !p.is_empty()) {
            let (size, pct) = part.split_once('/').unwrap_or((part, ""));
            let size = self.block_size(size.trim())?;
            let pct = match pct.trim() {
                "" => {
                    missing += 1;
                    None
                }
                p => Some(
                    unpercent(p)
                        .parse::<u32>()
                        .ok()
                        .filter(|&p| p <= 100)
                        .ok_or_else(|| {
                            self.bad(&format!(
                                "'{part}': the share after / is a whole percent, as in 4k/60:64k/40"
                            ))
                        })?,
                ),
            };
            out.push((size, pct));
        }
        if out.is_empty() {
            return Err(self.bad("expected SIZE/PERCENT entries, as in 4k/60:64k/40"));
        }
        let given: u32 = out.iter().filter_map(|e| e.1).sum();
        if given > 100 {
            return Err(self.bad(&format!("the percentages add up to {given}, more than 100")));
        }
        let share = (100 - given).checked_div(missing).unwrap_or(0);
        let mut split: Vec<(u64, u32)> = out
            .into_iter()
            .map(|(b, p)| (b, p.unwrap_or(share)))
            .filter(|e| e.1 > 0)
            .collect();
        let total: u32 = split.iter().map(|e| e.1).sum();
        if total == 0 {
            return Err(self.bad("every size has a 0% share; give at least one a share"));
        }
        // Shares that add up to less than 100 are scaled to 100, rounding
        // into the largest so that a draw of 0..100 always lands on one.
        if total != 100 {
            for e in &mut split {
                e.1 = e.1 * 100 / total;
            }
            let left = 100 - split.iter().map(|e| e.1).sum::<u32>();
            if let Some(big) = split.iter_mut().max_by_key(|e| e.1) {
                big.1 += left;
            }
        }
        Ok(split)
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
    fn filenames(&self) -> Result<Vec<String>> {
        let v = self.value()?;
        if v.starts_with(TRANSPORT_PREFIX) {
            return Ok(vec![v.to_string()]);
        }
        let mut out = vec![String::with_capacity(v.len())];
        let mut chars = v.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&':') => {
                    out.last_mut().unwrap().push(chars.next().unwrap())
                }
                ':' => out.push(String::new()),
                c => out.last_mut().unwrap().push(c),
            }
        }
        // An empty name is refused once the engine is known: a net job's
        // filename is a host, whose IPv6 colons it keeps.
        Ok(out.into_iter().map(|n| n.trim().to_string()).collect())
    }

    /// fio's `directory=a:b:c` (`\:` is a colon inside a name): the
    /// directories in order.
    fn directories(&self) -> Result<Vec<String>> {
        let v = self.value()?.replace(r"\:", "\0");
        let dirs: Vec<String> = v.split(':').map(|d| d.trim().replace('\0', ":")).collect();
        if dirs.iter().any(String::is_empty) {
            return Err(self.bad(
                "an empty directory in the list; separate directories with ':' (a colon inside a name is written \\:)",
            ));
        }
        Ok(dirs)
    }

    /// fio's `random_distribution=`: `random` (uniform), `zoned:A/S:…` (A%
    /// of the accesses to the next S% of the region; both sum to 100),
    /// `zoned_abs:A/SIZE:…` (sizes in bytes), or a law
    /// (`zipf|pareto|normal[:V[:CENTER]]`).
    fn distribution(&self) -> Result<Distribution> {
        let v = self.value()?;
        if v == "random" {
            return Ok(Distribution::Uniform);
        }
        if let Some(shape) = Shape::parse(v) {
            return shape
                .map(Distribution::Skewed)
                .map_err(|why| self.bad(&why));
        }
        if let Some(list) = v.strip_prefix("zoned_abs:") {
            return self.zoned_abs(list).map(Distribution::ZonedAbs);
        }
        let Some(list) = v.strip_prefix("zoned:") else {
            return Err(self.bad(
                "use random, zipf[:THETA[:CENTER]], pareto[:H[:CENTER]], normal[:DEV[:CENTER]], zoned:ACCESS%/SIZE%:… or zoned_abs:ACCESS%/SIZE:…",
            ));
        };
        let parts: Vec<&str> = list.split(':').collect();
        let mut zones = parts
            .iter()
            .enumerate()
            .map(|(i, z)| {
                let (a, s) = z.split_once('/')?;
                let a = a.trim().parse::<u32>().ok()?;
                // As in fio, the last zone's size may be left out: the rest.
                match s.trim() {
                    "" if i + 1 == parts.len() => Some((a, u32::MAX)),
                    s => Some((a, s.parse::<u32>().ok()?)),
                }
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| self.bad("zones are ACCESS%/SIZE% pairs, as in zoned:60/10:40/90"))?;
        let given: u32 = zones.iter().filter(|z| z.1 != u32::MAX).map(|z| z.1).sum();
        if let Some(last) = zones.last_mut().filter(|z| z.1 == u32::MAX) {
            last.1 = 100u32.saturating_sub(given);
        }
        let (a, s) = zones.iter().fold((0, 0), |(a, s), z| (a + z.0, s + z.1));
        if a != 100 || s != 100 {
            return Err(self.bad(&format!(
                "the zones' accesses and sizes must each add up to 100 (they add up to {a} and {s})"
            )));
        }
        Ok(Distribution::Zoned(zones))
    }

    /// `zoned_abs:A/SIZE:…`: A% of the accesses to the next SIZE bytes; the
    /// accesses add up to 100.
    fn zoned_abs(&self, list: &str) -> Result<Vec<(u32, u64)>> {
        let zones = list
            .split(':')
            .map(|z| {
                let (a, s) = z.split_once('/')?;
                let a = a.trim().parse::<u32>().ok()?;
                Some((a, parse_fio_size(s.trim()).ok().filter(|&s| s > 0)?))
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                self.bad("zones are ACCESS%/SIZE pairs with a size in bytes, as in zoned_abs:60/20g:40/100g")
            })?;
        let a: u32 = zones.iter().map(|z| z.0).sum();
        if a != 100 {
            return Err(self.bad(&format!(
                "the zones' accesses must add up to 100 (they add up to {a})"
            )));
        }
        Ok(zones)
    }

    /// fio's `percentage_random=R[,W[,T]]`, within the entry's bounds; the
    /// sides must agree.
    fn per_direction_pct(&self) -> Result<u32> {
        let v = self.value()?;
        let parts: Vec<i64> = v
            .split(',')
            .map(|p| self.number_in(unpercent(p.trim()), self.bounds(), "a whole number"))
            .collect::<Result<_>>()?;
        if parts.iter().any(|&p| p != parts[0]) {
            return Err(self.bad(&format!(
                "different read and write percentages are not supported; give one value, as in {}={}",
                self.key, parts[0]
            )));
        }
        Ok(parts[0] as u32)
    }

    /// `N%` as a fraction of the target (0 < N ≤ 100), or None for a size.
    fn percent(&self) -> Result<Option<f64>> {
        let v = self.value()?;
        if !v.ends_with('%') {
            return Ok(None);
        }
        match unpercent(v).parse::<f64>() {
            Ok(p) if p > 0.0 && p <= 100.0 => Ok(Some(p / 100.0)),
            _ => Err(self.bad("expected a percentage above 0 and at most 100, as in 50%")),
        }
    }

    /// fio's time values whose bare numbers are microseconds (`thinktime`,
    /// `max_latency`); 0 means none.
    fn micros(&self) -> Result<Option<Duration>> {
        let v = self.value()?;
        let d = if v.bytes().all(|b| b.is_ascii_digit()) {
            Duration::from_micros(v.parse().map_err(|_| self.bad("number too large"))?)
        } else {
            crate::units::parse_duration(v).map_err(|_| {
                self.bad("malformed time (microseconds, or a number with a unit us, ms or s)")
            })?
        };
        Ok(Some(d).filter(|d| !d.is_zero()))
    }

    /// A duration or a range `A-B` (seconds when bare), as `startdelay`.
    fn duration_range(&self) -> Result<Option<(Duration, Duration)>> {
        let v = self.value()?;
        let one = |s: &str| {
            crate::units::parse_duration(s.trim())
                .map_err(|_| self.bad("malformed duration or range (seconds, as in 5 or 2-10)"))
        };
        let (lo, hi) = match v.split_once('-') {
            Some((a, b)) => (one(a)?, one(b)?),
            None => (one(v)?, one(v)?),
        };
        if hi < lo {
            return Err(self.bad("the range's end comes before its start"));
        }
        Ok(Some((lo, hi)).filter(|(_, h)| !h.is_zero()))
    }

    /// fio's `buffer_pattern=`: the pattern syntax `verify_pattern` takes
    /// (hex, "text", decimal numbers, 'file', one after another), but not its
    /// `%o`, which only a verified block carries.
    fn pattern(&self) -> Result<Vec<u8>> {
        let p = crate::pattern::Pattern::parse(self.value()?).map_err(|e| self.bad(&e))?;
        if p.has_offsets() {
            return Err(self.bad("%o (the block's offset) is for verify_pattern; drop it here"));
        }
        Ok(p.unit_bytes().to_vec())
    }

    /// The workload and fio's offset modifier after ':': bytes added after
    /// each block for sequential jobs, I/Os per random offset for random ones.
    fn rw(&self) -> Result<(Rw, i64, u32)> {
        let v = self.value()?;
        let (name, modifier) = match v.split_once(':') {
            Some((n, m)) => (n.trim(), Some(m.trim())),
            None => (v, None),
        };
        let rw = Opt {
            value: Some(name),
            ..*self
        }
        .rw_name()?;
        let Some(m) = modifier else {
            return Ok((rw, 0, 1));
        };
        if rw.random() {
            let n = m.parse::<u32>().ok().filter(|&n| n > 0).ok_or_else(|| {
                self.bad("after ':' a random workload takes a count of I/Os per random offset, as in randread:8")
            })?;
            return Ok((rw, 0, n));
        }
        let (neg, mag) = match m.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, m),
        };
        let add = i64::try_from(self.parse_size(mag)?)
            .map_err(|_| self.bad("offset modifier too large"))?;
        Ok((rw, if neg { -add } else { add }, 1))
    }

    fn rw_name(&self) -> Result<Rw> {
        Ok(match self.value()? {
            "read" => Rw::Read,
            "write" => Rw::Write,
            "randread" => Rw::RandRead,
            "randwrite" => Rw::RandWrite,
            "rw" | "readwrite" => Rw::ReadWrite,
            "randrw" => Rw::RandRw,
            "trim" => Rw::Trim,
            "randtrim" => Rw::RandTrim,
            "trimwrite" => Rw::TrimWrite,
            "randtrimwrite" => Rw::RandTrimWrite,
            _ => {
                return Err(self.bad("unknown workload; use read, write, randread, randwrite, rw (readwrite), randrw, trim, randtrim, trimwrite or randtrimwrite"));
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
    fn queue_batches_have_fios_defaults_and_fix_ups() {
        let b = |lines: &[(&str, &str)], depth| {
            let mut j = Job::default();
            for (k, v) in lines {
                j.set(k, Some(v)).unwrap();
            }
            let b = j.batches(depth);
            (b.submit, b.complete_min, b.complete_max, b.low, b.polling)
        };
        // fio: submit 1, reap 1 to 1, refill as soon as one is reaped.
        assert_eq!(b(&[], 8), (1, 1, 1, 8, false));
        // 0 or beyond the depth: the depth (the options may come first).
        assert_eq!(
            b(&[("iodepth_batch", "0"), ("iodepth_low", "0")], 8),
            (8, 1, 1, 8, false)
        );
        assert_eq!(
            b(&[("iodepth_batch_submit", "64"), ("iodepth_low", "9")], 8).0,
            8
        );
        // A maximum below the minimum is the minimum.
        assert_eq!(
            b(&[("iodepth_batch_complete", "4")], 8),
            (1, 4, 4, 8, false)
        );
        assert_eq!(
            b(
                &[
                    ("iodepth_batch_complete_min", "2"),
                    ("iodepth_batch_complete_max", "6"),
                    ("iodepth_low", "3")
                ],
                8
            ),
            (1, 2, 6, 3, false)
        );
        // Both completion batches 0: fio's polling loop.
        let polled = [
            ("iodepth_batch_complete_min", "0"),
            ("iodepth_batch_complete_max", "0"),
        ];
        assert_eq!(b(&polled, 8), (1, 0, 0, 8, true));
        assert!(
            err("iodepth_batch_complete_max", Some("x")).contains("iodepth_batch_complete_max")
        );
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
    fn verify_interval_is_fitted_to_the_block_sizes_as_fio_does() {
        let fitted = |lines: &[(&str, &str)]| {
            let mut j = Job::default();
            for (k, v) in lines {
                set(&mut j, k, Some(v)).unwrap();
            }
            j.resolve_block_sizes().unwrap();
            j.fit_verify_interval();
            j.verify_interval
        };
        let md5 = ("verify", "md5");
        // Longer than the block: the block; not a divisor: the gcd.
        assert_eq!(
            fitted(&[md5, ("bs", "512"), ("verify_interval", "1m")]),
            Some(512)
        );
        assert_eq!(
            fitted(&[md5, ("bs", "4k"), ("verify_interval", "3k")]),
            Some(4096)
        );
        assert_eq!(
            fitted(&[md5, ("bsrange", "8k-24k"), ("verify_interval", "16k")]),
            Some(8192)
        );
        assert_eq!(
            fitted(&[md5, ("bs", "4k"), ("verify_interval", "1k")]),
            Some(1024)
        );
        assert_eq!(fitted(&[md5, ("bs", "4k")]), None);
        assert_eq!(
            fitted(&[("bs", "512"), ("verify_interval", "1m")]),
            Some(1 << 20)
        );
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
        // An empty filename= keeps the generated default.
        set(&mut j, "filename", Some("/tmp/x")).unwrap();
        set(&mut j, "filename", Some("")).unwrap();
        assert_eq!(j.filename, None);
        // fio's sides: a value not ended by a comma carries on; empty is the default.
        set(&mut j, "bs", Some("4k,64k")).unwrap();
        assert_eq!((j.bs, j.bs_sides), (4096, Some([4096, 65536])));
        set(&mut j, "bs", Some(",8k")).unwrap();
        assert_eq!(j.bs_sides, Some([DEFAULT_BS, 8192]));
        set(&mut j, "bs", Some("16k,16k,")).unwrap();
        assert_eq!((j.bs, j.bs_sides), (16384, None));
        set(&mut j, "bsrange", Some("4k-64k")).unwrap();
        assert_eq!(j.bsrange, Some([(4096, 65536), (4096, 65536)]));
        set(&mut j, "blocksize_range", Some("512-4k,8k")).unwrap();
        assert_eq!(j.bsrange, Some([(512, 4096), (8192, 8192)]));
        // Either end first, and `:` as fio takes it.
        for v in ["64k-4k", "4k:64k"] {
            set(&mut j, "bsrange", Some(v)).unwrap();
            assert_eq!(j.bsrange, Some([(4096, 65536), (4096, 65536)]), "{v}");
        }
        set(&mut j, "bssplit", Some("4k/50:8k:16k,1m/100")).unwrap();
        assert_eq!(
            j.bssplit,
            Some([
                vec![(4096, 50), (8192, 25), (16384, 25)],
                vec![(1 << 20, 100)]
            ])
        );
        // Shares under 100 are scaled; a 0% size drops out.
        set(&mut j, "bssplit", Some("4k/30:8k/30:64k/0")).unwrap();
        assert_eq!(j.bssplit.as_ref().unwrap()[0], vec![(4096, 50), (8192, 50)]);
        assert!(err("bssplit", Some("4k/60:8k/50")).contains("add up to 110"));
        assert!(err("bssplit", Some("4k/x")).contains("a whole percent"));
        assert!(err("bs", Some("4k,8k,16k,32k")).contains("at most three"));
        // Resolution: bssplit over bsrange over bs; the smallest is bs.
        j.resolve_block_sizes().unwrap();
        assert_eq!(j.bs, 4096);
        assert_eq!(
            j.bs_mix.as_ref().map(|m| m.text()).as_deref(),
            Some("4k/50:8k/50")
        );
        let mut k = Job::default();
        set(&mut k, "bsrange", Some("4k-4k")).unwrap();
        k.resolve_block_sizes().unwrap();
        assert_eq!((k.bs, k.bs_mix.is_none()), (4096, true));
        set(&mut k, "bssplit", Some("4k/50:6k/50")).unwrap();
        assert!(
            k.resolve_block_sizes()
                .unwrap_err()
                .contains("a multiple of the smallest (4k)")
        );
        assert!(err("bs", Some("0")).contains("at least 1 byte"));
        assert!(err("rate", Some("1m,2m")).contains("different read and write rates"));
        assert_eq!(
            err("bs", Some("4q")),
            "bs=4q: malformed size (expected a number with an optional k/m/g/t suffix, as in 4k or 1m)"
        );
        set(&mut j, "size", Some("50%")).unwrap();
        assert_eq!((j.size, j.size_pct), (None, Some(0.5)));
        set(&mut j, "size", Some("8m")).unwrap();
        assert_eq!((j.size, j.size_pct), (Some(8 << 20), None));
        assert!(err("size", Some("150%")).contains("at most 100"));
        assert!(err("size", None).contains("size needs a value"));
    }

    #[test]
    fn enums() {
        let mut j = Job::default();
        set(&mut j, "readwrite", Some("randrw")).unwrap();
        assert_eq!(j.rw, Rw::RandRw);
        set(&mut j, "rwmixwrite", Some("30")).unwrap();
        assert_eq!(j.rwmixread, 70);
        for (w, rw) in [
            ("trim", Rw::Trim),
            ("randtrim", Rw::RandTrim),
            ("trimwrite", Rw::TrimWrite),
            ("randtrimwrite", Rw::RandTrimWrite),
        ] {
            set(&mut j, "rw", Some(w)).unwrap();
            assert_eq!((j.rw, j.rw.name()), (rw, w));
            assert!(j.rw.trims() && !j.rw.reads());
            assert_eq!(j.rw.writes(), j.rw.trim_then_write());
            assert_eq!(j.rw.random(), w.starts_with("rand"));
        }
        set(&mut j, "rw", Some("randtrim:4")).unwrap();
        assert_eq!((j.rw, j.seq_nr), (Rw::RandTrim, 4));
        set(&mut j, "rw", Some("trim:8k")).unwrap();
        assert_eq!((j.rw, j.seq_add), (Rw::Trim, 8192));
        assert!(err("rw", Some("discard")).contains("unknown workload"));
        set(&mut j, "rw", Some("randread:8")).unwrap();
        assert_eq!((j.rw, j.seq_nr), (Rw::RandRead, 8));
        set(&mut j, "rw", Some("read:-8k")).unwrap();
        assert_eq!((j.rw, j.seq_add, j.seq_nr), (Rw::Read, -8192, 1));
        assert!(err("rw", Some("randread:0")).contains("count of I/Os"));
        assert!(err("rw", Some("read:8q")).contains("malformed size"));
        assert!(err("rwmixread", Some("101")).contains("from 0 to 100"));

        // Every engine runs as itself, under fio's name.
        for e in [
            "sync",
            "psync",
            "vsync",
            "pvsync",
            "pvsync2",
            "io_uring",
            "libaio",
            "posixaio",
            "mmap",
            "null",
            "filecreate",
            "filestat",
            "filedelete",
            "cpuio",
        ] {
            assert_eq!(
                set(&mut j, "ioengine", Some(e)).unwrap(),
                SetOutcome::Applied
            );
            assert_eq!(j.ioengine.name(), e);
            assert_eq!(serde_json::to_value(j.ioengine).unwrap(), e);
        }
        // Engines that need hardware or a service: one line naming what,
        // and what xferbench offers instead.
        for e in [
            "sg",
            "io_uring_cmd",
            "rdma",
            "rbd",
            "http",
            "libcufile",
            "nbd",
            "xnvme",
            "spdk",
            "dfs",
        ] {
            let m = err("ioengine", Some(e));
            assert!(
                m.starts_with(&format!("ioengine={e}: this engine needs ")),
                "{m}"
            );
            assert!(
                m.contains("device plugin") && m.contains("docs/plugins.md"),
                "{m}"
            );
            assert_eq!(m.lines().count(), 1);
        }
        assert!(
            err("ioengine", Some("splice")).contains("not supported by xferbench; use sync, psync")
        );
        assert!(err("ioengine", Some("external:/tmp/x.o")).contains("device plugin"));
        set(&mut j, "ioengine", Some("net")).unwrap();
        assert_eq!(j.ioengine.name(), "net");
        assert!(err("ioengine", Some("bogus")).contains("unknown engine"));
        // fio's file-engine examples say rw=filecreate: the job keeps its rw.
        set(&mut j, "rw", Some("write")).unwrap();
        set(&mut j, "rw", Some("filecreate")).unwrap();
        assert_eq!(j.rw, Rw::Write);

        set(&mut j, "mem", Some("shmhuge")).unwrap();
        assert_eq!(j.iomem, IoMem::MmapHuge);
        assert!(err("iomem", Some("mmaphuge:/hugetlbfs/x")).contains("file-backed"));

        set(&mut j, "verify", Some("crc32c-intel")).unwrap();
        assert_eq!(j.verify, Some(VerifyKind::Crc32c));
        set(&mut j, "verify", Some("")).unwrap();
        assert_eq!(j.verify, None);
        assert!(err("verify", Some("md4")).starts_with("verify=md4: unknown verify kind"));
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
        assert!(j.filenames.is_empty());
        set(&mut j, "filename", Some("xfer:shm:completion=poll")).unwrap();
        assert_eq!(j.filename.as_deref(), Some("xfer:shm:completion=poll"));
        assert!(j.filenames.is_empty());
        // fio's list: the job's files, a colon inside a name escaped.
        set(&mut j, "filename", Some(r"/dev/a:/mnt/b\:c: d")).unwrap();
        assert_eq!(j.filename.as_deref(), Some("/dev/a"));
        assert_eq!(j.filenames, ["/dev/a", "/mnt/b:c", "d"]);
        set(&mut j, "directory", Some("/t")).unwrap();
        j.resolve_files().unwrap();
        assert_eq!(j.nrfiles, 3);
        assert_eq!(j.filenames, ["/dev/a", "/mnt/b:c", "/t/d"]);
        let mut e = Job::default();
        set(&mut e, "filename", Some("a::b")).unwrap();
        assert!(
            e.resolved_files()
                .unwrap_err()
                .contains("an empty file name")
        );
        // A net job's filename is a host: an IPv6 address keeps its colons.
        set(&mut e, "ioengine", Some("net")).unwrap();
        set(&mut e, "filename", Some("::1")).unwrap();
        e.resolve_files().unwrap();
        assert_eq!(e.filename.as_deref(), Some("::1"));
        assert!(e.filenames.is_empty());
        let mut j = Job::default();
        set(&mut j, "filename", Some("a:b")).unwrap();
        set(&mut j, "nrfiles", Some("3")).unwrap();
        assert!(j.resolved_files().unwrap_err().contains("naming 2 files"),);
        set(&mut j, "filename", Some("a:a")).unwrap();
        set(&mut j, "nrfiles", Some("1")).unwrap();
        assert!(j.resolved_files().unwrap_err().contains("names a twice"));
        // filesize= takes fio's range; each file's size is drawn in it.
        set(&mut j, "filesize", Some("8k-64k")).unwrap();
        assert_eq!(
            (j.filesize, j.filesize_max),
            (Some(8 << 10), Some(64 << 10))
        );
        let sizes: Vec<u64> = (0..20).map(|i| j.filesize_of(i).unwrap()).collect();
        assert!(
            sizes
                .iter()
                .all(|s| (8 << 10..=64 << 10).contains(s) && s % 4096 == 0)
        );
        assert!(sizes.iter().any(|&s| s != sizes[0]), "{sizes:?}");
        set(&mut j, "filesize", Some("16k")).unwrap();
        assert_eq!((j.filesize_of(3), j.filesize_max), (Some(16 << 10), None));
        assert!(err("filesize", Some("64k-8k")).contains("smaller than its start"));
        assert!(
            err("file_service_type", Some("zipf:1.1"))
                .starts_with("file_service_type=zipf:1.1: choosing files by a zipf")
        );
        assert!(err("file_service_type", Some("bogus")).contains("unknown file service type"));
        set(&mut j, "file_service_type", Some("random:4")).unwrap();
        assert_eq!(j.file_service.text(), "random:4");
        set(&mut j, "openfiles", Some("2")).unwrap();
        assert_eq!(j.openfiles, Some(2));
    }

    #[test]
    fn filename_format_expansion() {
        let x = |f: &str, c| expand_filename_format(f, "job", c, 0);
        assert_eq!(x(DEFAULT_FILENAME_FORMAT, 0), "job.0.0");
        assert_eq!(x("$jobname.$jobnum.$filenum", 7), "job.7.0");
        assert_eq!(x("/d/$JobName-$JOBNUM", 2), "/d/job-2");
        assert_eq!(x("$$cost$", 1), "$$cost$");
        // Empty outside fio's client/server mode, as fio 3.33 has it.
        assert_eq!(x("f.$clientuid.$jobnum", 1), "f..1");
        // Keyword by keyword, as fio: a job name holding one is expanded.
        assert_eq!(expand_filename_format("$jobname", "a$filenum", 0, 5), "a5");
        let mut j = Job {
            name: "w".into(),
            clone: 3,
            ..Job::default()
        };
        let first = |j: &Job| j.resolved_files().map(|v| v[0].clone());
        assert_eq!(first(&j).unwrap(), "w.3.0");
        set(&mut j, "directory", Some("/tmp/x")).unwrap();
        assert_eq!(first(&j).unwrap(), "/tmp/x/w.3.0");
        set(&mut j, "filename_format", Some("f$jobnum")).unwrap();
        assert_eq!(first(&j).unwrap(), "/tmp/x/f3");
        set(&mut j, "filename", Some("/dev/sda")).unwrap();
        assert_eq!(first(&j).unwrap(), "/dev/sda");
        set(&mut j, "nrfiles", Some("2")).unwrap();
        assert!(first(&j).unwrap_err().contains("filename= names one file"));
        // nrfiles names the files by filename_format=, for every engine
        // with files.
        for engine in ["filecreate", "psync", "io_uring", "null"] {
            set(&mut j, "ioengine", Some(engine)).unwrap();
            j.filename = None;
            j.filename_format = None;
            assert_eq!(
                j.resolved_files().unwrap(),
                ["/tmp/x/w.3.0", "/tmp/x/w.3.1"]
            );
        }
        // A format without $filenum names every file alike: fio's job then
        // has the one file nrfiles times over (OpenZFS's perf suite).
        set(&mut j, "filename_format", Some("f$jobnum")).unwrap();
        assert_eq!(j.resolved_files().unwrap(), ["/tmp/x/f3", "/tmp/x/f3"]);
        // Generated names are under directory= even when absolute, as fio.
        set(&mut j, "filename_format", Some("/abs/f$filenum")).unwrap();
        assert_eq!(
            j.resolved_files().unwrap(),
            ["/tmp/x/abs/f0", "/tmp/x/abs/f1"]
        );
        set(&mut j, "ioengine", Some("cpuio")).unwrap();
        assert!(
            first(&j)
                .unwrap_err()
                .contains("has no files to spread over")
        );
        set(&mut j, "ioengine", Some("psync")).unwrap();
        set(&mut j, "filename", Some("xfer:tcp")).unwrap();
        assert!(
            first(&j)
                .unwrap_err()
                .contains("ioengine=transport has no files")
        );
        set(&mut j, "nrfiles", Some("1")).unwrap();
        assert_eq!(j.resolved_files().unwrap(), ["xfer:tcp"]);
        set(&mut j, "directory", Some(r"/a\:b")).unwrap();
        assert_eq!(j.directory.as_deref(), Some("/a:b"));
        assert!(j.directories.is_empty());
        // Several: the clones' generated files spread over them, as fio.
        set(&mut j, "directory", Some("/a:/b:/c")).unwrap();
        assert_eq!(j.directories, ["/a", "/b", "/c"]);
        (j.filename, j.filename_format) = (None, None);
        j.filenames.clear();
        // numjobs=5: fio's clone numbers, position by position, 0 4 3 2 1.
        j.numjobs = 5;
        for (clone, dir, n) in [(0, "/a", 0), (1, "/b", 4), (2, "/a", 3), (4, "/b", 1)] {
            j.clone = clone;
            assert_eq!(first(&j).unwrap(), format!("{dir}/w.{n}.0"));
        }
        assert!(err("directory", Some("/a::/b")).contains("an empty directory"));
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
    fn bs_is_seq_rand_sizes_random_ios_by_the_write_side() {
        let sized = |rw: &str, extra: &[(&str, &str)]| {
            let mut j = Job::default();
            for (k, v) in [("bs", "4k,64k"), ("bs_is_seq_rand", "1"), ("rw", rw)]
                .iter()
                .chain(extra)
            {
                j.set(k, Some(v)).unwrap();
            }
            j.resolve_block_sizes().map(|()| (j.bs, j.bs_mix.is_none()))
        };
        // Every I/O of a random job is random: the write side, reads too.
        assert_eq!(sized("randrw", &[]), Ok((64 << 10, true)));
        // Every I/O of a sequential job is sequential: the read side.
        assert_eq!(sized("rw", &[]), Ok((4 << 10, true)));
        assert_eq!(
            sized("randwrite", &[("percentage_random", "0")]),
            Ok((4 << 10, true))
        );
        let e = sized("randread", &[("percentage_random", "50")]).unwrap_err();
        assert!(
            e.starts_with("bs_is_seq_rand with rw=randread (percentage_random=50)"),
            "{e}"
        );
        assert!(
            sized("randread:8", &[])
                .unwrap_err()
                .contains("rw=randread:8")
        );
        // bssplit and bsrange sides follow the same rule.
        let mut j = Job::default();
        for (k, v) in [
            ("bssplit", "4k/50:8k/50,64k/100"),
            ("bs_is_seq_rand", "1"),
            ("rw", "read"),
        ] {
            j.set(k, Some(v)).unwrap();
        }
        j.resolve_block_sizes().unwrap();
        assert_eq!(j.bs_mix.unwrap().text(), "4k/50:8k/50");
        // Off (fio's default): each direction keeps its own size.
        let mut j = Job::default();
        for (k, v) in [("bs", "4k,64k"), ("bs_is_seq_rand", "0"), ("rw", "randrw")] {
            j.set(k, Some(v)).unwrap();
        }
        j.resolve_block_sizes().unwrap();
        assert_eq!(j.bs_mix.unwrap().text(), "4k,64k");
    }

    #[test]
    fn every_engine_is_listed_once_under_its_name() {
        let mut names: Vec<&str> = IoEngine::ALL.iter().map(|e| e.name()).collect();
        for n in &names {
            let mut j = Job::default();
            j.set("ioengine", Some(n)).unwrap();
            assert_eq!(j.ioengine.name(), *n);
        }
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "an engine listed twice");
        assert_eq!(n, 20, "an engine missing from IoEngine::ALL");
    }

    #[test]
    fn near_misses_are_named() {
        assert_eq!(nearest("direcotry"), Some("directory"));
        assert_eq!(nearest("write_bw_logs"), Some("write_bw_log"));
        assert_eq!(nearest("fixedbuf"), Some("fixedbufs"));
        assert_eq!(nearest("zzzzzzzz"), None);
    }

    #[test]
    fn every_option_is_taken_noted_or_refused() {
        use spec::{Effect, Spec};
        use std::collections::BTreeSet;
        let names = |s: &'static Spec| s.names();
        let engines = || engine_opts::ENGINES.iter().flat_map(|(_, t)| t.iter());
        // Each name once: one general or verify entry, or one engine option
        // (the same entry in each engine's table that takes it).
        let mut general: Vec<&str> = options::GENERAL
            .iter()
            .chain(verify::VERIFY)
            .flat_map(names)
            .collect();
        let n = general.len();
        general.sort_unstable();
        general.dedup();
        assert_eq!(general.len(), n, "an option has two entries");
        let engine: BTreeSet<&str> = engines().flat_map(names).collect();
        assert!(
            general.iter().all(|g| !engine.contains(g)),
            "an engine option is also a general one"
        );
        for name in &engine {
            let kinds: BTreeSet<String> = engines()
                .filter(|s| s.is(name))
                .map(|s| format!("{:?}", s.kind))
                .collect();
            assert_eq!(kinds.len(), 1, "{name}: two engine entries differ");
        }
        // Every option set() takes takes its example, under every name, and
        // each of its words; the others are noted or refused as the table says.
        let all = options::GENERAL
            .iter()
            .chain(verify::VERIFY)
            .chain(engine_opts::ENGINES.iter().flat_map(|(_, t)| t.iter()));
        for s in all {
            let words = s.kind.words();
            for k in s.names() {
                for v in std::iter::once(s.kind.example()).chain(words.iter().map(|w| w.0)) {
                    let r = Job::default().set(k, Some(v));
                    match s.effect {
                        Effect::Set(_) | Effect::Take(_) => assert!(r.is_ok(), "{k}={v}: {r:?}"),
                        Effect::Note(_) | Effect::OtherEngine(_) => {
                            assert!(matches!(r, Ok(SetOutcome::Note(_))), "{k}={v}: {r:?}")
                        }
                        Effect::Refuse(_) => assert!(
                            r.as_ref()
                                .is_err_and(|e| e.to_string().contains("is not supported")),
                            "{k}={v}: {r:?}"
                        ),
                    }
                }
            }
        }
        let mut j = Job::default();
        assert!(
            matches!(set(&mut j, "clat_percentiles", Some("1")), Ok(SetOutcome::Note(w)) if w.contains("histogram"))
        );
        assert!(
            matches!(set(&mut j, "http_host", Some("x")), Ok(SetOutcome::Note(w)) if w.contains("ioengine=http"))
        );
        assert!(err("latency_percentile", Some("0")).contains("above 0"));
        assert!(err("thinkcycles", Some("10")).contains("use thinktime="));
        assert!(err("directoy", Some("/x")).ends_with("did you mean 'directory'?"));
        assert!(err("kb_base", Some("1000")).contains("binary"));
        set(&mut j, "cpumask", Some("0x5")).unwrap();
        assert_eq!(j.cpus_allowed, Some(vec![0, 2]));
        set(&mut j, "thinktime", Some("250")).unwrap();
        assert_eq!(j.thinktime, Some(Duration::from_micros(250)));
        set(&mut j, "startdelay", Some("2-5")).unwrap();
        assert_eq!(
            j.startdelay,
            Some((Duration::from_secs(2), Duration::from_secs(5)))
        );
        set(&mut j, "buffer_pattern", Some("0xdead\"ab\"")).unwrap();
        assert_eq!(
            j.buffer_pattern.as_deref(),
            Some(&[0xde, 0xad, b'a', b'b'][..])
        );
        // fio's own t0028: a string, -12 (four bytes) and hex, run together.
        set(&mut j, "buffer_pattern", Some("\"abcd\"-120xdeadface")).unwrap();
        assert_eq!(
            j.buffer_pattern.as_deref(),
            Some(
                &[
                    b'a', b'b', b'c', b'd', 0xf4, 0xff, 0xff, 0xff, 0xde, 0xad, 0xfa, 0xce
                ][..]
            )
        );
        assert!(err("buffer_pattern", Some("zz")).contains("expected 0xHEX"));
        assert!(err("buffer_pattern", Some("%o")).contains("verify_pattern"));
        assert!(err("zonemode", Some("zbd")).contains("zoned block devices"));
        set(&mut j, "random_distribution", Some("zoned:50/5:30/15:20/")).unwrap();
        assert_eq!(j.zoned, [(50, 5), (30, 15), (20, 80)]);
        assert!(err("random_distribution", Some("zoned:50/5:40/15")).contains("add up to 100"));
        set(&mut j, "random_distribution", Some("zipf:1.2:0.25")).unwrap();
        assert!(j.zoned.is_empty() && j.skew.is_some());
        set(&mut j, "random_distribution", Some("pareto")).unwrap();
        set(&mut j, "random_distribution", Some("normal:10")).unwrap();
        set(&mut j, "random_distribution", Some("zoned_abs:60/1m:40/3m")).unwrap();
        assert_eq!(j.zoned_abs, [(60, 1 << 20), (40, 3 << 20)]);
        assert!(j.skew.is_none());
        set(&mut j, "random_distribution", Some("random")).unwrap();
        assert!(j.zoned_abs.is_empty() && j.zoned.is_empty() && j.skew.is_none());
        let e = err("random_distribution", Some("zipf:1"));
        assert!(
            e.contains("random_distribution=zipf:1") && e.contains("not 1"),
            "{e}"
        );
        assert!(err("random_distribution", Some("pareto:1.5")).contains("above 0 and below 1"));
        assert!(err("random_distribution", Some("normal:100")).contains("below 100"));
        assert!(
            err("random_distribution", Some("zoned_abs:60/1m:30/2m")).contains("add up to 100")
        );
        assert!(err("random_distribution", Some("zoned_abs:60/x:40/2m")).contains("ACCESS%/SIZE"));
        assert!(err("random_distribution", Some("gauss")).contains("normal[:DEV"));
        set(&mut j, "percentage_random", Some("30")).unwrap();
        assert_eq!(j.percentage_random, 30);
        set(&mut j, "percentage_random", Some("40,40")).unwrap();
        assert!(err("percentage_random", Some("40,60")).contains("one value"));
        assert!(err("percentage_random", Some("101")).contains("0 to 100"));
        assert!(err("percentage_sequential", Some("30")).contains("percentage_random"));
        set(&mut j, "random_generator", Some("lfsr")).unwrap();
        assert!(j.lfsr);
        assert!(matches!(
            set(&mut j, "random_generator", Some("tausworthe64")),
            Ok(SetOutcome::Note(_))
        ));
        assert!(!j.lfsr);
        assert!(err("random_generator", Some("mt")).contains("lfsr"));
    }
}
