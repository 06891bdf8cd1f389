//! Opening a job's target — a regular file, a block device, or a character
//! device such as XDMA's `h2c`/`c2h` channels, which report size 0 — and
//! working out the region the job may touch.

use crate::error::{Error, Result};
use crate::job::{Completion, IoEngine, Job};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// What a job's filename turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    /// A regular file (or one the job creates): it grows to fit the region.
    File,
    /// A block device: the region must lie within its size.
    Block,
    /// A character device (e.g. XDMA `h2c`/`c2h`), which reports no size:
    /// the region comes from `size=` or `filesize=`.
    Char,
}

/// An open target and the region `[offset, offset + size)` the job covers.
pub struct Target {
    pub file: File,
    pub path: PathBuf,
    pub kind: TargetKind,
    pub offset: u64,
    pub size: u64,
    /// What happened to the file before the job ran (created, extended, laid out).
    pub prepared: Option<String>,
}

/// Whether the job ever reads its target (a verifying writer reads back).
pub fn job_reads(job: &Job) -> bool {
    job.rw.reads() || (job.verify.is_some() && job.do_verify)
}

impl Target {
    /// Opens `path` (the job's filename after `--map`) for `job`;
    /// `allow_large` lifts the sane bound on laying a file out for reading.
    /// In fio's order: what the name is, the file opened (made if it may
    /// be), the region worked out, the file grown or laid out to cover it.
    pub fn open(job: &Job, path: &Path, allow_large: bool) -> Result<Target> {
        // Jobs sharing a file open it at once; one at a time, so one that
        // creates or extends it never truncates what another just extended.
        static PREPARE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one = PREPARE.lock().unwrap_or_else(|e| e.into_inner());
        let meta = match std::fs::metadata(path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(open_error(&job.name, path, e)),
        };
        let kind = kind_of(job, path, meta.as_ref())?;
        let exists = meta.is_some();
        if !exists {
            may_create(job, path)?;
        }
        let file = open_file(job, path, exists)?;
        let mut prepared = (!exists).then(|| "created".to_string());
        let shown = path.display();
        let current = match kind {
            TargetKind::File => file.metadata().map(|m| m.len()).unwrap_or(0),
            TargetKind::Block => block_size(&file).map_err(|e| {
                Error::run_from(
                    format!("job {}: cannot read the size of {shown}", job.name),
                    e,
                )
            })?,
            TargetKind::Char => 0,
        };
        let (offset, size) = region(job, path, kind, current)?;
        let end = offset + size;
        if kind == TargetKind::File && end > current {
            let step = grow(job, &file, path, (offset, current, end), allow_large)?;
            prepared = Some(match prepared {
                Some(p) => format!("{p}, {step}"),
                None => step,
            });
        }
        advise(&file, job, kind, offset, size);
        Ok(Target {
            file,
            path: path.to_path_buf(),
            kind,
            offset,
            size,
            prepared,
        })
    }

    pub fn fd(&self) -> i32 {
        self.file.as_raw_fd()
    }

    /// fio's `invalidate` again at the start of each pass (a `loops` round,
    /// a time_based wrap), where fio reopens the file and drops its cached
    /// pages: a buffered job over a small file then reads the device each
    /// pass, as fio's does, rather than the cache its last pass left.
    pub fn invalidate_again(&self, job: &Job) {
        if job.invalidate && !job.direct && self.kind != TargetKind::Char {
            // SAFETY: advice about our own descriptor.
            unsafe {
                libc::posix_fadvise(
                    self.fd(),
                    self.offset as libc::off_t,
                    self.size as libc::off_t,
                    libc::POSIX_FADV_DONTNEED,
                );
            }
        }
    }

    /// Opens each of a job's files (`paths`, after `--map`) as
    /// [`Target::open`] opens one, each with its own region: the job's
    /// `size=` divided among them as fio divides it, or each file
    /// `filesize=` (a range draws each file's size) from `offset=`, with
    /// `size=` then capping the job's I/O rather than sizing the files.
    /// Before any file is laid out for reading, the zeros all of them
    /// need are checked together against the same bounds as one file's.
    /// One path and no `filesize=` range is exactly [`Target::open`].
    pub fn open_all(job: &Job, paths: &[&Path], allow_large: bool) -> Result<Vec<Target>> {
        if let [one] = paths
            && job.filesize_max.is_none()
        {
            return Ok(vec![Target::open(job, one, allow_large)?]);
        }
        let name = &job.name;
        let split = match (job.filesize, job.size, job.size_pct) {
            (None, Some(size), None) => {
                Some(crate::files::split_size(size, paths.len() as u64, job.bs))
            }
            _ => None,
        };
        let jobs = (0..paths.len())
            .map(|i| {
                let mut j = job.clone();
                if let Some(fs) = job.filesize_of(i) {
                    j.filesize = Some(fs);
                    j.filesize_max = None;
                    if job.size_pct.is_none() && job.offset_pct.is_none() {
                        if job.offset >= fs {
                            return Err(Error::usage(format!(
                                "job {name}: offset={} is not below filesize={fs} (file {}); each file's region runs from offset= to its filesize=, so lower offset= or raise filesize=",
                                job.offset,
                                paths[i].display()
                            )));
                        }
                        j.size = Some(fs - job.offset);
                    }
                } else if let Some(s) = &split {
                    if s[i] < job.bs {
                        return Err(Error::usage(format!(
                            "job {name}: size={} over {} files is less than one block (bs={}) each; raise size= or lower nrfiles=",
                            job.size.unwrap_or(0),
                            paths.len(),
                            job.bs
                        )));
                    }
                    j.size = Some(s[i]);
                }
                Ok(j)
            })
            .collect::<Result<Vec<Job>>>()?;
        if job.rw.reads() || job.overwrite {
            let need: u64 = jobs
                .iter()
                .zip(paths)
                .filter_map(|(j, p)| {
                    let end = j.offset.checked_add(j.size?)?;
                    let m = std::fs::metadata(p).ok();
                    match m {
                        Some(m) if !m.is_file() => None,
                        m => Some(end.saturating_sub(m.map_or(0, |m| m.len()))),
                    }
                })
                .sum();
            if need > 0 {
                // The first file's file system (its directory, before it exists).
                let at = match paths[0].parent() {
                    Some(d) if !paths[0].exists() && !d.as_os_str().is_empty() => d,
                    Some(_) if !paths[0].exists() => Path::new("."),
                    _ => paths[0],
                };
                let what = format!(
                    "reading its {} files (like {}) means laying them out",
                    paths.len(),
                    paths[0].display()
                );
                check_zeros(name, at, need, &what, allow_large)?;
            }
        }
        jobs.iter()
            .zip(paths)
            .map(|(j, p)| Target::open(j, p, allow_large))
            .collect()
    }
}

/// fio's default `fallocate=native` for a file a write job extends: the
/// job's own region (never the gap before it) is reserved before timing
/// starts. False, leaving the file to be extended sparse as with
/// `fallocate=none`, where the file system cannot, or where the region
/// would take more than the layout bound or half the free space: a
/// reservation that ran out of space would leave the disk full.
fn preallocate(file: &File, path: &Path, from: u64, to: u64) -> bool {
    let need = to.saturating_sub(from);
    let fits = file_system(path).is_some_and(|(free, _)| need <= free / 2);
    if need == 0 || need > LAYOUT_BOUND || !fits {
        return false;
    }
    // SAFETY: fallocate on our descriptor; mode 0 extends the file.
    unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            0,
            from as libc::off_t,
            need as libc::off_t,
        ) == 0
    }
}

/// fio's `invalidate` (default on: drop the region's cached pages, so a
/// buffered read starts cold) and `fadvise_hint`. Advice only: a target
/// that takes none (a character device) is left as it is.
fn advise(file: &File, job: &Job, kind: TargetKind, offset: u64, size: u64) {
    if kind == TargetKind::Char {
        return;
    }
    let fd = file.as_raw_fd();
    let (off, len) = (offset as libc::off_t, size as libc::off_t);
    // SAFETY: posix_fadvise only advises the kernel about our descriptor.
    unsafe {
        if job.invalidate && !job.direct {
            libc::posix_fadvise(fd, off, len, libc::POSIX_FADV_DONTNEED);
        }
        let hint = match job.fadvise {
            Some(-1) if job.rw.random() => Some(libc::POSIX_FADV_RANDOM),
            Some(-1) => Some(libc::POSIX_FADV_SEQUENTIAL),
            other => other,
        };
        if let Some(h) = hint {
            libc::posix_fadvise(fd, off, len, h);
        }
    }
}

/// One line naming what went wrong opening a target, and the fix.
/// Device nodes beside a missing one whose names start alike
/// (`/dev/xdma0_h2c_9` → `/dev/xdma0_h2c_0, /dev/xdma0_h2c_1`), to name in
/// the error.
fn look_alikes(path: &Path) -> String {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return String::new();
    };
    let name = name.to_string_lossy();
    let stem: String = name.trim_end_matches(|c: char| c.is_ascii_digit()).into();
    let prefix = if stem.len() >= 3 {
        stem
    } else {
        name.chars().take(3).collect()
    };
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    if found.is_empty() {
        return format!(" (nothing in {} starts with {prefix})", dir.display());
    }
    let more = found.len().saturating_sub(8);
    found.truncate(8);
    format!(
        " (there: {}{})",
        found
            .iter()
            .map(|n| dir.join(n).display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )
}

/// What the name is (a file, or one to create; a block or character
/// device), and whether the job can run on it.
fn kind_of(job: &Job, path: &Path, meta: Option<&std::fs::Metadata>) -> Result<TargetKind> {
    let name = &job.name;
    let shown = path.display();
    let kind = match meta {
        None => TargetKind::File,
        Some(m) if m.file_type().is_block_device() => TargetKind::Block,
        Some(m) if m.file_type().is_char_device() => TargetKind::Char,
        Some(m) if m.is_file() => TargetKind::File,
        Some(m) if m.is_dir() => {
            return Err(Error::usage(format!(
                "job {name}: {shown} is a directory; name a file or a device"
            )));
        }
        Some(_) => {
            return Err(Error::usage(format!(
                "job {name}: {shown} is not a file, block or character device (a FIFO or socket? stream over a transport with filename=xfer:pipe)"
            )));
        }
    };
    if kind == TargetKind::Char && job.rw.trims() {
        return Err(Error::usage(format!(
            "job {name}: rw={} on {shown}: a character device has no trim (neither hole punching nor discard); trim a regular file or a block device, or use rw=write",
            job.rw.name()
        )));
    }
    Ok(kind)
}

/// Whether a missing `path` may be made, making the job's missing
/// `directory=` on the way.
fn may_create(job: &Job, path: &Path) -> Result<()> {
    let name = &job.name;
    let shown = path.display();
    // A missing name under /dev is a typo for a device (xdma0_h2c_9 for
    // _0), not a file to create: made there, it would be measured as
    // page cache. /dev/shm is the exception: a tmpfs for files, as fio
    // (and every user of it) treats it.
    if path.starts_with("/dev") && !path.starts_with("/dev/shm") {
        return Err(Error::usage(format!(
            "job {name}: {shown} does not exist, and xferbench does not create files under /dev{}; fix the name, or map it elsewhere with --map {shown}=FILE",
            look_alikes(path)
        )));
    }
    if job.readonly {
        return Err(Error::usage(format!(
            "job {name}: {shown} does not exist, and --readonly refuses to create files; create it first, or drop --readonly"
        )));
    }
    if !job.allow_file_create {
        return Err(Error::usage(format!(
            "job {name}: {shown} does not exist and allow_file_create=0; create it, fix the name, or map it with --map {shown}=FILE"
        )));
    }
    // fio makes a missing `directory=` (create_work_dirs): a job file
    // written for a scratch tree runs without a mkdir first. Only the
    // job's own directory, never a filename's parents, which are as
    // likely a typo as a tree to make.
    let missing_parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty() && !p.exists());
    if let Some(parent) = missing_parent
        && job.directory.is_some()
    {
        std::fs::create_dir_all(parent).map_err(|e| {
            Error::usage(format!(
                "job {name}: cannot make the directory {} for {shown}: {e}; make it, or point directory= elsewhere",
                parent.display()
            ))
            .with_source(e)
        })?;
    }
    Ok(())
}

/// The target opened as the job's engine and directions need it.
fn open_file(job: &Job, path: &Path, exists: bool) -> Result<File> {
    let reads = job_reads(job);
    // A trim needs the target open for writing (fallocate, BLKDISCARD),
    // and mmap a readable one: trims open it read-write, as fio's do. A
    // shared writable mapping needs the file open for reading too
    // (mmap's EACCES otherwise), so mmap writers open it read-write.
    let writes = job.rw.writes() || job.rw.trims();
    let mapped = job.ioengine == crate::job::IoEngine::Mmap;
    let mut oo = OpenOptions::new();
    oo.read(reads || !writes || job.rw.trims() || mapped)
        .write(writes);
    let mut flags = libc::O_CLOEXEC;
    if job.direct {
        flags |= libc::O_DIRECT;
    }
    flags |= job.open_sync.unwrap_or(0);
    let sync_family = matches!(
        job.ioengine,
        IoEngine::Sync | IoEngine::Psync | IoEngine::Vsync | IoEngine::Pvsync | IoEngine::Pvsync2
    );
    if sync_family && job.completion() == Completion::Poll {
        flags |= libc::O_NONBLOCK;
    }
    oo.custom_flags(flags);
    if !exists {
        // A file this job creates must be written before it can be read.
        oo.write(true).create(true);
    }
    oo.open(path).map_err(|e| {
        if job.direct && e.raw_os_error() == Some(libc::EINVAL) {
            Error::usage(format!(
                "job {}: {} does not support O_DIRECT (tmpfs and some filesystems do not); use direct=0 or a file on another filesystem",
                job.name,
                path.display()
            ))
        } else {
            open_error(&job.name, path, e)
        }
    })
}

/// The region `(offset, size)` the job covers on a target of `kind` now
/// `current` bytes long, checked against what the target can hold.
fn region(job: &Job, path: &Path, kind: TargetKind, current: u64) -> Result<(u64, u64)> {
    let name = &job.name;
    let shown = path.display();
    // The space the job may address: a device's own size, or for a char
    // device that reports none, the job's filesize; a file grows to fit.
    let limit = match kind {
        TargetKind::Block => Some(current),
        TargetKind::Char => job.filesize,
        TargetKind::File => None,
    };
    let avail = match kind {
        TargetKind::File => current.max(job.filesize.unwrap_or(0)),
        _ => limit.unwrap_or(0),
    };
    // offset=N% and size=N% are fractions of the target, the offset
    // rounded down to a block.
    let offset = match job.offset_pct {
        Some(p) if avail > 0 => {
            let o = (avail as f64 * p) as u64;
            let align = if job.offset_align > 0 {
                job.offset_align
            } else {
                job.bs
            };
            o - o % align
        }
        Some(_) => {
            return Err(Error::usage(format!(
                "job {name}: offset= is a percentage but {shown} reports no size; give offset= in bytes"
            )));
        }
        None if job.file_append && kind == TargetKind::File => current,
        None => job.offset,
    };
    let size = match (job.size, job.size_pct) {
        (_, Some(p)) if avail > offset => ((avail - offset) as f64 * p) as u64,
        (_, Some(_)) => {
            return Err(Error::usage(format!(
                "job {name}: size= is a percentage but {shown} has nothing past offset {offset} to take it of; give size= in bytes"
            )));
        }
        (Some(s), None) => s,
        (None, None) if avail > offset && !job.fill_device => avail - offset,
        // fill_device on a file: as far as the file system's free space
        // goes (the writes end at ENOSPC in any case).
        (None, None) if job.fill_device && kind == TargetKind::File => {
            let free = file_system(path.parent().unwrap_or(Path::new("."))).map_or(0, |f| f.0);
            (avail.saturating_sub(offset) + free).max(job.bs)
        }
        (None, None) if avail > offset => avail - offset,
        (None, None) if kind == TargetKind::Char => {
            return Err(Error::usage(format!(
                "job {name}: {shown} is a character device and reports no size; set size= or filesize="
            )));
        }
        (None, None) => {
            return Err(Error::usage(format!(
                "job {name}: {shown} holds nothing past offset {offset}; set size= (and filesize=) for the job"
            )));
        }
    };
    let size = size - size % job.bs;
    if size == 0 {
        return Err(Error::usage(format!(
            "job {name}: size is smaller than one block (bs={}); raise size= or lower bs=",
            job.bs
        )));
    }
    let end = offset
        .checked_add(size)
        .ok_or_else(|| Error::usage(format!("job {name}: offset + size overflows")))?;
    if let Some(l) = limit
        && end > l
    {
        return Err(Error::usage(format!(
            "job {name}: region {offset}..{end} lies beyond the end of {shown} ({l} bytes{}); lower size=/offset= or raise filesize=",
            if kind == TargetKind::Char {
                ", from filesize="
            } else {
                ""
            }
        )));
    }
    if job.direct && (!offset.is_multiple_of(512) || !job.bs.is_multiple_of(512)) {
        return Err(Error::usage(format!(
            "job {name}: direct=1 needs offset and bs in multiples of 512 (offset {offset}, bs {}); align them or use direct=0",
            job.bs
        )));
    }
    Ok((offset, size))
}

/// Grows a file from `current` to `end` bytes for the job's region
/// starting at `offset`: laid out with zeros where something will read
/// (or trim, or overwrite) it, else preallocated or extended; says how.
fn grow(
    job: &Job,
    file: &File,
    path: &Path,
    (offset, current, end): (u64, u64, u64),
    allow_large: bool,
) -> Result<String> {
    let name = &job.name;
    let shown = path.display();
    if job.readonly {
        return Err(Error::usage(format!(
            "job {name}: {shown} is {current} bytes, short of the job's region (to {end}), and --readonly refuses to grow files; make the file that long first, shrink size=, or drop --readonly"
        )));
    }
    // Trims alone need blocks there to give back: laid out as for reads.
    let trims_only = job.rw.trims() && !job.rw.writes();
    Ok(if job.rw.reads() || trims_only || job.overwrite {
        check_layout(name, path, current, end, allow_large)?;
        lay_out(path, current, end).map_err(|e| {
            Error::run_from(
                format!("job {name}: cannot lay out {shown} to {end} bytes"),
                e,
            )
        })?;
        format!(
            "laid out to {end} bytes (zeros) for {}",
            if job.rw.reads() {
                "reading"
            } else if trims_only {
                "trimming"
            } else {
                "overwriting (overwrite=1)"
            }
        )
    } else if job.fallocate && preallocate(file, path, offset.max(current), end) {
        format!("region preallocated to {end} bytes (fallocate)")
    } else {
        file.set_len(end).map_err(|e| {
            Error::run_from(
                format!("job {name}: cannot extend {shown} to {end} bytes"),
                e,
            )
        })?;
        format!("extended to {end} bytes")
    })
}

fn open_error(job: &str, path: &Path, e: std::io::Error) -> Error {
    let p = path.display();
    let hint = match e.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => {
            "permission denied; run as a user that may open it (DMA character devices usually need root)"
        }
        Some(libc::EBUSY) => {
            "device or resource busy; another process holds it — stop that one and retry"
        }
        Some(libc::ENOENT) => "its directory does not exist; fix the path",
        Some(libc::ENXIO | libc::ENODEV) => "no such device behind this node (driver not loaded?)",
        Some(libc::EROFS) => "read-only filesystem; a write job needs a writable target",
        _ => "check the path and permissions",
    };
    let msg = format!("job {job}: cannot open {p}: {e}: {hint}");
    match e.raw_os_error() {
        Some(libc::EACCES | libc::EPERM | libc::ENOENT | libc::EROFS) => Error::usage(msg),
        _ => Error::run(msg),
    }
}

/// A block device's size in bytes (BLKGETSIZE64).
fn block_size(f: &File) -> std::io::Result<u64> {
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    let mut n: u64 = 0;
    // SAFETY: the ioctl writes one u64.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), BLKGETSIZE64 as _, &mut n) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(n)
}

/// The most zeros a read job's layout writes without `--allow-large-layout`.
const LAYOUT_BOUND: u64 = 8 << 30;

/// Free bytes (for an unprivileged user) and whether it is tmpfs, of the
/// file system holding `path`.
fn file_system(path: &Path) -> Option<(u64, bool)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statfs is plain C data (integers): all zeroes is valid.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated CString alive for the call, and `st` a
    // live, writable statfs that the call writes only into.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    Some((
        (st.f_bavail as u64).saturating_mul(st.f_bsize as u64),
        st.f_type as i64 == TMPFS_MAGIC,
    ))
}

/// Refuses a layout that would not fit on the file system, or that passes
/// the sane bound (8 GiB of zeros, or half the free space) without
/// `allow_large`: a read job with `offset=` far past a small file's end
/// would otherwise write zeros until the disk is full.
fn check_layout(name: &str, path: &Path, from: u64, to: u64, allow_large: bool) -> Result<()> {
    let what = format!(
        "reading {} up to byte {to} means laying it out",
        path.display()
    );
    check_zeros(name, path, to - from, &what, allow_large)
}

/// [`check_layout`] for `need` bytes of zeros, `what` saying why.
fn check_zeros(name: &str, path: &Path, need: u64, what: &str, allow_large: bool) -> Result<()> {
    let gib = |b: u64| format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30));
    let Some((free, _)) = file_system(path) else {
        return Ok(());
    };
    if need > free.saturating_sub(free / 20) {
        return Err(Error::usage(format!(
            "job {name}: {what} first with {} of zeros, but its file system has {} free; lower offset=/size= (e.g. --set size=8m), or map the file elsewhere with --map",
            gib(need),
            gib(free)
        )));
    }
    if !allow_large && (need > LAYOUT_BOUND || need > free / 2) {
        return Err(Error::usage(format!(
            "job {name}: {what} first with {} of zeros ({} free there); lower offset=/size=, or pass --allow-large-layout if that is meant",
            gib(need),
            gib(free)
        )));
    }
    Ok(())
}

/// Lays out `from..to` so reads find real blocks, as fio does before a
/// read job (untimed): the space is reserved first with fallocate (so a
/// full disk fails at once, not half-way), then written with zeros — on
/// tmpfs the reservation alone gives the same state, zeroed pages. Layouts
/// over 256 MiB report their progress to [`LAYOUT`].
fn lay_out(path: &Path, from: u64, to: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    // A handle of its own: the job's may be read-only or O_DIRECT.
    let f = OpenOptions::new().write(true).open(path)?;
    // SAFETY: plain syscall on an open descriptor.
    let r = unsafe { libc::fallocate(f.as_raw_fd(), 0, from as i64, (to - from) as i64) };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENOSPC) {
            return Err(e);
        }
        // EOPNOTSUPP and the like: the zeros below do it.
    } else if file_system(path).is_some_and(|(_, tmpfs)| tmpfs) {
        return Ok(());
    }
    // Told to whoever shows progress (the command line's bar), for layouts
    // long enough to wait on.
    let shown = (to - from > 256 << 20).then(|| LAYOUT.get()).flatten();
    let chunk = vec![0u8; 1 << 20];
    let mut at = from;
    while at < to {
        let n = (to - at).min(chunk.len() as u64) as usize;
        f.write_all_at(&chunk[..n], at)?;
        at += n as u64;
        if let Some(show) = shown {
            show(path, at - from, to - from);
        }
    }
    Ok(())
}

/// What a layout in progress reports: the file, bytes written, bytes in all
/// (the last call has them equal).
pub type LayoutProgress = Box<dyn Fn(&Path, u64, u64) + Send + Sync>;

/// Where layouts report their progress, if anywhere: set once by whoever
/// draws it, so the job model needs no terminal code of its own.
pub static LAYOUT: std::sync::OnceLock<LayoutProgress> = std::sync::OnceLock::new();
