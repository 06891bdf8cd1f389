//! fio's log files (`write_lat_log`, `write_bw_log`, `write_iops_log`,
//! `write_hist_log`), written as fio 3.33 writes them so that fio's own
//! tools read them (fio2gnuplot, fio_generate_plots, fiologparser_hist.py):
//! one text line per sample, `time (ms), value, direction (0 read, 1 write,
//! 2 trim), block size[, offset], priority`; the histogram log's lines are
//! `time, direction, block size, bucket counts…` in fio's bucket scheme.
//!
//! Lines go through a small buffer into the file as the job runs, so a job
//! of any length needs the same memory, and what was logged up to a Ctrl-C
//! or a failure is on disk ([`JobLogs`] flushes when dropped too). A file
//! the jobs share (`per_job_logs=0`) gets each job's lines as one block
//! when the job ends, as fio's does (spooled beside it meanwhile).
//!
//! Times are milliseconds since the job's timed span began (fio's epoch,
//! restarted after `ramp_time`); only the timed span's I/Os are logged.
//!
//! A log file that is a FIFO is never written by the job as it runs (a
//! reader that is not there would block its I/O loop): its lines are
//! spooled, and handed to the FIFO whole when the job ends, waiting for a
//! reader no longer than the run's `--timeout`; a FIFO nobody reads leaves
//! the lines in a fallback file the job's warnings name.

use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// fio's latency histogram: `FIO_IO_U_PLAT_BITS` = 6 (64 buckets a group),
/// `FIO_IO_U_PLAT_GROUP_NR` = 29, as fio 3.33 and fiologparser_hist.py's
/// default `--group_nr` have it.
const PLAT_BITS: u32 = 6;
const PLAT_VAL: u64 = 1 << PLAT_BITS;
pub const PLAT_NR: usize = 29 * PLAT_VAL as usize;

/// Bytes of text buffered per log file before it is written out: bounds a
/// job's memory whatever its length (six files at most per job).
const BUFFER: usize = 64 << 10;

/// What `log_window_value=` (alias `log_max_value=`) puts in an averaged
/// line: the window's mean, its maximum, or both (mean first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Window {
    #[default]
    Avg,
    Max,
    Both,
}

/// A job's log options, as fio's `write_*_log` and `log_*` set them.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LogSpec {
    /// `write_lat_log=NAME`: NAME_lat, NAME_clat, NAME_slat (an empty NAME
    /// is the job's name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lat: Option<String>,
    /// `write_bw_log=NAME`: NAME_bw.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bw: Option<String>,
    /// `write_iops_log=NAME`: NAME_iops.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iops: Option<String>,
    /// `write_hist_log=NAME`: NAME_clat_hist.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hist: Option<String>,
    /// `log_avg_msec=`: one averaged line per direction per window (0:
    /// one line per I/O).
    pub avg_msec: u32,
    pub window: Window,
    /// `log_hist_msec=`: the histogram log's window (0: no lines, as fio).
    pub hist_msec: u32,
    /// `log_hist_coarseness=`: 2^N fio buckets summed into one column.
    pub hist_coarseness: u32,
    /// `log_offset=`: each line names its I/O's offset.
    pub offset: bool,
    /// `log_prio=`: the priority column is the ioprio value (0x%04x), not
    /// whether it is the real-time class.
    pub prio: bool,
    /// `per_job_logs=0`: every job writes the one file without its number.
    pub shared: bool,
    /// `log_unix_epoch=`: times counted from the Unix epoch.
    pub unix_epoch: bool,
    /// `log_alternate_epoch=`: times from the epoch of `clock_id`.
    pub alternate_epoch: bool,
    /// `log_alternate_epoch_clock_id=` (0: CLOCK_REALTIME).
    pub clock_id: u32,
    /// fio's job number (1-based, in the order the jobs are defined), in
    /// each file's name; set when the jobs are prepared.
    #[serde(skip)]
    pub number: u32,
}

/// The kinds of log file and the word fio puts in each one's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Lat,
    Clat,
    Slat,
    Bw,
    Iops,
    Hist,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Lat => "lat",
            Kind::Clat => "clat",
            Kind::Slat => "slat",
            Kind::Bw => "bw",
            Kind::Iops => "iops",
            Kind::Hist => "clat_hist",
        }
    }

    fn option(self) -> &'static str {
        match self {
            Kind::Lat | Kind::Clat | Kind::Slat => "write_lat_log",
            Kind::Bw => "write_bw_log",
            Kind::Iops => "write_iops_log",
            Kind::Hist => "write_hist_log",
        }
    }
}

impl LogSpec {
    /// Whether no log file is asked for (the JSON leaves the spec out).
    pub fn is_off(&self) -> bool {
        self.lat.is_none() && self.bw.is_none() && self.iops.is_none() && self.hist.is_none()
    }

    /// Every file the job writes, with its kind, named as fio names them:
    /// `NAME_KIND.N.log`, or `NAME_KIND.log` with `per_job_logs=0`.
    fn files(&self, job_name: &str) -> Vec<(Kind, PathBuf)> {
        let named = [
            (&self.lat, &[Kind::Lat, Kind::Clat, Kind::Slat][..]),
            (&self.bw, &[Kind::Bw][..]),
            (&self.iops, &[Kind::Iops][..]),
            (&self.hist, &[Kind::Hist][..]),
        ];
        let mut out = Vec::new();
        for (name, kinds) in named {
            let Some(name) = name else { continue };
            let prefix = if name.is_empty() { job_name } else { name };
            for k in kinds {
                let file = if self.shared {
                    format!("{prefix}_{}.log", k.word())
                } else {
                    format!("{prefix}_{}.{}.log", k.word(), self.number.max(1))
                };
                out.push((*k, PathBuf::from(file)));
            }
        }
        out
    }

    /// The names of the job's log files.
    pub fn paths(&self, job_name: &str) -> Vec<PathBuf> {
        self.files(job_name).into_iter().map(|(_, p)| p).collect()
    }
}

/// Creates the job's log files before anything runs, so that a path that
/// cannot be written is a usage error up front. A job's own file is
/// emptied; a shared one (`per_job_logs=0`) is kept and appended to, as
/// fio appends to it (a second run adds its lines after the first's), and
/// its directory must take the jobs' spools.
pub fn create(spec: &LogSpec, job_name: &str) -> crate::error::Result<()> {
    for (kind, path) in spec.files(job_name) {
        // A FIFO is not opened here: that would wait for a reader (and a
        // reader waiting already would take the close for the end).
        let made = if crate::fifo::is_fifo(&path) {
            crate::fifo::writable(&path)
        } else if spec.shared {
            OpenOptions::new()
                .append(true)
                .create(true)
                .open(&path)
                .and_then(|_| spool_beside(&path).map(drop))
        } else {
            File::create(&path).map(drop)
        };
        made.map_err(|e| {
            crate::error::Error::usage(format!(
                "job {job_name}: {}: cannot create the log file {}: {e}; create its directory or give {}= a writable NAME",
                kind.option(),
                path.display(),
                kind.option()
            ))
            .with_source(e)
        })?;
    }
    Ok(())
}

/// One I/O of the timed span, as the worker hands it to the logs.
pub struct Io {
    /// ns since the timed span began, at its completion.
    pub at_ns: u64,
    /// 0 read, 1 write, 2 trim.
    pub dir: usize,
    pub len: u64,
    pub offset: u64,
    /// When it was issued, when the engine submitted it (None for a
    /// synchronous engine, whose slat log stays empty, as fio's), and when
    /// it was reaped.
    pub t0: Instant,
    pub sub: Option<Instant>,
    pub now: Instant,
    /// Its priority (kernel ioprio value: class << 13 | level; per
    /// command with `cmdprio_*`).
    pub prio: u16,
    /// The job is within its runtime: fio's timer still takes bandwidth and
    /// IOPS samples (none at or past it, as in the JSON's).
    pub timed: bool,
}

/// How the lines of a job's files look.
#[derive(Clone, Copy)]
struct Format {
    offset: bool,
    prio: bool,
    window: Window,
}

/// One line of a value log.
struct Line {
    ms: u64,
    value: u64,
    /// log_window_value=both: the window's maximum after its mean.
    max: Option<u64>,
    dir: usize,
    bs: u64,
    offset: u64,
    prio: u32,
}

/// One log file being written: its buffer, and the first write error (the
/// file is then left as it is and the error reported once).
///
/// A shared file (`per_job_logs=0`) is never written by the job as it
/// runs: its lines go to the job's own spool, an unnamed file beside the
/// log, and [`Sink::finish`] appends the spool whole under one lock. Each
/// job's lines are then one block of whole lines in the shared file, in the
/// order the jobs end, as fio writes them (fio holds each job's lines in
/// memory and appends them under a lock on the file when the job ends);
/// jobs writing into one buffered file as they run cut each other's lines
/// wherever a buffer happened to fill. The spool keeps a job's memory
/// bounded whatever its length, and the I/O path takes no lock.
struct Sink {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    shared: bool,
    /// The log is a FIFO: its lines are spooled and handed over at the end.
    fifo: bool,
    error: Option<String>,
}

/// How long a log that is a FIFO waits for its reader at the job's end,
/// and what ends the wait early (the run is stopping).
pub struct Until<'a> {
    pub deadline: Instant,
    pub stop: &'a dyn Fn() -> bool,
}

/// A stop already asked for (no wait at all).
fn stopped() -> bool {
    true
}

impl Until<'_> {
    /// No wait at all: for a job dropped on its way out.
    fn now() -> Until<'static> {
        Until {
            deadline: Instant::now(),
            stop: &stopped,
        }
    }
}

/// Held while a job's spool is appended to a shared log file, so that the
/// jobs' blocks follow one another whole (one lock for every shared file:
/// appends happen once per job and file, when the job ends).
static SHARED_APPEND: Mutex<()> = Mutex::new(());

impl Sink {
    fn open(path: PathBuf, shared: bool) -> std::io::Result<Sink> {
        let fifo = crate::fifo::is_fifo(&path);
        let file = if fifo {
            // Beside the FIFO may be /dev, or no writable directory.
            spool_in(&std::env::temp_dir(), &path)?
        } else if shared {
            spool_beside(&path)?
        } else {
            OpenOptions::new().append(true).create(true).open(&path)?
        };
        Ok(Sink {
            out: Some(BufWriter::with_capacity(BUFFER, file)),
            path,
            shared,
            fifo,
            error: None,
        })
    }

    fn failed(&mut self, e: std::io::Error) {
        self.out = None;
        self.error
            .get_or_insert_with(|| format!("log file {}: {e}", self.path.display()));
    }

    fn line(&mut self, l: &Line, f: Format) {
        let Some(out) = self.out.as_mut() else { return };
        let r = (|| {
            write!(out, "{}, {}", l.ms, l.value)?;
            if let Some(m) = l.max {
                write!(out, ", {m}")?;
            }
            write!(out, ", {}, {}", l.dir, l.bs)?;
            if f.offset {
                write!(out, ", {}", l.offset)?;
            }
            if f.prio {
                writeln!(out, ", 0x{:04x}", l.prio)
            } else {
                // Whether the I/O ran in the real-time class.
                writeln!(out, ", {}", u32::from(l.prio >> 13 == 1))
            }
        })();
        if let Err(e) = r {
            self.failed(e);
        }
    }

    /// Writes out what is buffered: into the job's own file, (shared)
    /// the whole spool appended to the shared file, or (a FIFO) the whole
    /// spool handed to its reader by `until`. Nothing more is written after.
    fn finish(&mut self, until: &Until) {
        let Some(mut out) = self.out.take() else {
            return;
        };
        let r = out.flush().and_then(|()| {
            if !self.shared && !self.fifo {
                return Ok(());
            }
            let spool = out.into_inner().map_err(|e| e.into_error())?;
            if self.fifo {
                return self.hand_over(spool, until);
            }
            append_whole(spool, &self.path)
        });
        if let Err(e) = r {
            self.failed(e);
        }
    }

    /// The spool of a FIFO's lines given to its reader; when there is
    /// none in time, kept in a fallback file that the error names.
    fn hand_over(&mut self, mut spool: File, until: &Until) -> std::io::Result<()> {
        spool.seek(SeekFrom::Start(0))?;
        let given = {
            let _one_writer = SHARED_APPEND.lock().unwrap_or_else(PoisonError::into_inner);
            crate::fifo::write(&self.path, &mut spool, until.deadline, until.stop)
        };
        let Err(e) = given else { return Ok(()) };
        let why = match e.kind() {
            std::io::ErrorKind::Interrupted => "the run stopped before a reader took it".into(),
            _ => e.to_string(),
        };
        spool.seek(SeekFrom::Start(0))?;
        let kept = match keep_elsewhere(&mut spool, &self.path) {
            Some(f) => format!("{why}; its lines are kept in {}", f.display()),
            None => format!("{why}; its lines are lost (no fallback file could be written)"),
        };
        // Said at once, as verify_dump's failures are: the job's warnings
        // reach the JSON alone (fio's mode keeps stderr quiet), and where
        // the lines went is for the person waiting on the FIFO.
        eprintln!(
            "xferbench: warning: log file {}: {kept}",
            self.path.display()
        );
        Err(std::io::Error::new(e.kind(), kept))
    }
}

/// A copy of `spool` in a new file named after `log`, in the temporary
/// directory or else the current one; its name. Never another's: two
/// jobs' FIFOs of one name get a file each.
fn keep_elsewhere(spool: &mut File, log: &Path) -> Option<PathBuf> {
    let name = log
        .file_name()
        .map_or("log".into(), |n| n.to_string_lossy().into_owned());
    for dir in [std::env::temp_dir(), PathBuf::from(".")] {
        for n in 0..100 {
            let file = match n {
                0 => format!("xferbench-{}-{name}", std::process::id()),
                n => format!("xferbench-{}-{n}-{name}", std::process::id()),
            };
            let f = dir.join(&file);
            let to = match OpenOptions::new().write(true).create_new(true).open(&f) {
                Ok(to) => to,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(_) => break,
            };
            let copied = spool
                .seek(SeekFrom::Start(0))
                .and_then(|_| std::io::copy(spool, &mut &to));
            if copied.is_ok() {
                return Some(f);
            }
            let _ = std::fs::remove_file(&f);
            break;
        }
    }
    None
}

/// An unnamed file in `log`'s directory (on its file system, which the
/// log's creation showed writable; /tmp may be memory): O_TMPFILE where the
/// file system has it, else a file removed as soon as it is open. Either
/// way nothing is left behind, whatever stops the process.
fn spool_beside(log: &Path) -> std::io::Result<File> {
    let dir = match log.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    spool_in(dir, log)
}

/// An unnamed file in `dir` for `log`'s lines (see [`spool_beside`]).
fn spool_in(dir: &Path, log: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let unnamed = OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE)
        .open(dir);
    match unnamed {
        Ok(f) => Ok(f),
        Err(_) => removed_spool(dir, log),
    }
}

/// A spool for a file system without O_TMPFILE: a new file in `dir`,
/// removed as soon as it is open.
fn removed_spool(dir: &Path, log: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let stem = log
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy());
    let mut k = 0u32;
    loop {
        let named = dir.join(format!(".{stem}.{}.{k}.spool", std::process::id()));
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&named)
        {
            Ok(f) => {
                std::fs::remove_file(&named)?;
                return Ok(f);
            }
            // Another job's spool of the same log, being removed.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && k < 1000 => k += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Appends a job's whole spool to the shared log at `path`, one job at a
/// time.
fn append_whole(mut spool: File, path: &Path) -> std::io::Result<()> {
    spool.seek(SeekFrom::Start(0))?;
    let _one_writer = SHARED_APPEND.lock().unwrap_or_else(PoisonError::into_inner);
    // Not O_APPEND: the lock orders this process's writers, and a plain
    // descriptor lets the kernel copy file to file.
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    f.seek(SeekFrom::End(0))?;
    std::io::copy(&mut spool, &mut f)?;
    Ok(())
}

/// A window of per-I/O values being averaged (`log_avg_msec`), one per
/// direction, as fio's: a line when a sample lands a window or more after
/// the last line, the next window starting at the last boundary passed.
#[derive(Default, Clone, Copy)]
struct Mean {
    n: u64,
    sum: u128,
    max: u64,
    last: u64,
}

impl Mean {
    /// The line the window's samples make, if it has any; then empties it.
    fn take(&mut self, ms: u64, dir: usize, w: Window) -> Option<Line> {
        if self.n == 0 {
            return None;
        }
        let mean = ((self.sum + u128::from(self.n / 2)) / u128::from(self.n)) as u64;
        let (value, max) = match w {
            Window::Avg => (mean, None),
            Window::Max => (self.max, None),
            Window::Both => (mean, Some(self.max)),
        };
        (self.n, self.sum, self.max) = (0, 0, 0);
        Some(Line {
            ms,
            value,
            max,
            dir,
            bs: 0,
            offset: 0,
            prio: 0,
        })
    }
}

/// A per-I/O value log (lat, clat, slat, or bw/iops without averaging),
/// with its windows when averaged.
struct ValueLog {
    sink: Sink,
    means: [Mean; 3],
}

impl ValueLog {
    fn new(sink: Sink) -> ValueLog {
        ValueLog {
            sink,
            means: [Mean::default(); 3],
        }
    }

    /// One I/O's value: its own line, or into its window (`avg` ms).
    fn sample(&mut self, l: Line, avg: u64, f: Format) {
        if avg == 0 {
            return self.sink.line(&l, f);
        }
        let m = &mut self.means[l.dir];
        m.n += 1;
        m.sum += u128::from(l.value);
        m.max = m.max.max(l.value);
        if l.ms < m.last || l.ms - m.last < avg {
            return;
        }
        if let Some(line) = m.take(l.ms, l.dir, f.window) {
            self.sink.line(&line, f);
        }
        m.last = l.ms - l.ms % avg;
    }

    /// The windows still open, as lines at `ms` (fio's `finalize_logs`).
    fn close(&mut self, ms: u64, f: Format, until: &Until) {
        for dir in 0..3 {
            if let Some(line) = self.means[dir].take(ms, dir, f.window) {
                self.sink.line(&line, f);
            }
        }
        self.sink.finish(until);
    }
}

/// Averaged bandwidth and IOPS (`log_avg_msec` with write_bw_log or
/// write_iops_log): what each direction moved since the last lines, put
/// out as a rate once a window has passed, as fio's timer does.
#[derive(Default)]
struct Rates {
    bytes: [u64; 3],
    ios: [u64; 3],
    last: u64,
    due: u64,
}

/// fio's bucket for a value (ns): exact below 128, then 64 buckets for
/// each power of two, the last bucket holding everything above.
pub fn plat_index(v: u64) -> usize {
    let msb = 63u32.saturating_sub(v.leading_zeros());
    if v == 0 || msb <= PLAT_BITS {
        return v as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) << PLAT_BITS) as usize;
    let offset = ((v >> error_bits) & (PLAT_VAL - 1)) as usize;
    (base + offset).min(PLAT_NR - 1)
}

/// One direction's histogram window.
struct HistWindow {
    counts: Vec<u64>,
    n: u64,
    /// The window's start (ms; 0: not started, as fio's `hist_last`).
    last: u64,
    /// The block size of the window's last I/O.
    bs: u64,
}

/// The completion-latency histogram log (`write_hist_log`).
struct HistLog {
    sink: Sink,
    msec: u64,
    stride: usize,
    windows: Vec<HistWindow>,
}

impl HistLog {
    fn new(sink: Sink, msec: u64, coarseness: u32) -> HistLog {
        let windows = (0..3)
            .map(|_| HistWindow {
                counts: vec![0; PLAT_NR],
                n: 0,
                last: 0,
                bs: 0,
            })
            .collect();
        HistLog {
            sink,
            msec,
            stride: 1 << coarseness,
            windows,
        }
    }

    /// One I/O's completion latency; a line once its window has lasted
    /// `log_hist_msec` (the next window starts where this one should have
    /// ended, as fio's).
    fn sample(&mut self, ms: u64, dir: usize, bs: u64, clat: u64) {
        let w = &mut self.windows[dir];
        w.counts[plat_index(clat)] += 1;
        w.n += 1;
        w.bs = bs;
        if self.msec == 0 {
            return;
        }
        if w.last == 0 {
            w.last = ms;
        }
        let span = ms.saturating_sub(w.last);
        if span >= self.msec {
            self.put(ms, dir);
            let w = &mut self.windows[dir];
            w.last = ms - (span - self.msec);
        }
    }

    /// The window's line: time, direction, block size, then the counts,
    /// `stride` buckets summed into each column; the window emptied.
    fn put(&mut self, ms: u64, dir: usize) {
        let w = &mut self.windows[dir];
        let stride = self.stride;
        if let Some(out) = self.sink.out.as_mut() {
            let r = (|| {
                write!(out, "{ms}, {dir}, {}", w.bs)?;
                for c in w.counts.chunks(stride) {
                    write!(out, ", {}", c.iter().sum::<u64>())?;
                }
                writeln!(out)
            })();
            if let Err(e) = r {
                self.sink.failed(e);
            }
        }
        w.counts.fill(0);
        w.n = 0;
    }

    /// The last, partial windows (fio drops them; written here so that the
    /// log holds every I/O of the job).
    fn close(&mut self, ms: u64, until: &Until) {
        for dir in 0..3 {
            if self.msec > 0 && self.windows[dir].n > 0 {
                self.put(ms, dir);
            }
        }
        self.sink.finish(until);
    }
}

/// The log files of one running job.
pub struct JobLogs {
    format: Format,
    avg: u64,
    lat: Option<[ValueLog; 3]>,
    bw: Option<ValueLog>,
    iops: Option<ValueLog>,
    rates: Rates,
    hist: Option<HistLog>,
    /// Added to every time (log_unix_epoch, log_alternate_epoch): the
    /// epoch's clock at the span's start, in ms; found at the first sample.
    base: Option<u64>,
    clock: Option<libc::clockid_t>,
    /// The latest time seen (ns since the span began), where a job that
    /// ends on an error closes its logs.
    last_ns: u64,
    closed: bool,
    /// How long a log that is a FIFO waits for its reader at the end.
    wait: Duration,
}

impl JobLogs {
    /// Opens job `job_name`'s log files (created by [`create`]) for
    /// appending; None when the job writes none. A log that is a FIFO
    /// waits `wait` for its reader when the job ends.
    pub fn open(
        spec: &LogSpec,
        job_name: &str,
        wait: Duration,
    ) -> std::io::Result<Option<JobLogs>> {
        if spec.is_off() {
            return Ok(None);
        }
        let mut sinks = Vec::new();
        for (kind, path) in spec.files(job_name) {
            sinks.push((kind, Sink::open(path, spec.shared)?));
        }
        let mut take = |k: Kind| {
            let i = sinks.iter().position(|(kind, _)| *kind == k)?;
            Some(sinks.remove(i).1)
        };
        let lat = match (take(Kind::Lat), take(Kind::Clat), take(Kind::Slat)) {
            (Some(l), Some(c), Some(s)) => {
                Some([ValueLog::new(l), ValueLog::new(c), ValueLog::new(s)])
            }
            _ => None,
        };
        let (bw, iops) = (
            take(Kind::Bw).map(ValueLog::new),
            take(Kind::Iops).map(ValueLog::new),
        );
        let hist = take(Kind::Hist)
            .map(|s| HistLog::new(s, u64::from(spec.hist_msec), spec.hist_coarseness));
        let avg = u64::from(spec.avg_msec);
        let clock = match (spec.unix_epoch, spec.alternate_epoch) {
            (false, false) => None,
            (true, false) => Some(libc::CLOCK_REALTIME),
            (_, true) => Some(spec.clock_id as libc::clockid_t),
        };
        Ok(Some(JobLogs {
            format: Format {
                offset: spec.offset,
                prio: spec.prio,
                window: spec.window,
            },
            avg,
            lat,
            bw,
            iops,
            rates: Rates {
                due: avg,
                ..Rates::default()
            },
            hist,
            base: None,
            clock,
            last_ns: 0,
            closed: false,
            wait,
        }))
    }

    /// The time a line carries: ms since the span began, plus the epoch's.
    fn time(&mut self, at_ns: u64) -> u64 {
        let ms = at_ns / 1_000_000;
        self.last_ns = self.last_ns.max(at_ns);
        let Some(clock) = self.clock else { return ms };
        let base = *self
            .base
            .get_or_insert_with(|| clock_ms(clock).saturating_sub(ms));
        base + ms
    }

    /// One I/O of the timed span, into every log of the job.
    pub fn io(&mut self, io: &Io) {
        let ms = self.time(io.at_ns);
        let lat = io.now.duration_since(io.t0).as_nanos() as u64;
        // Asynchronous: submitted at a reap; clat from there.
        let (clat, slat) = match io.sub {
            Some(s) => (
                io.now.saturating_duration_since(s).as_nanos() as u64,
                Some(s.saturating_duration_since(io.t0).as_nanos() as u64),
            ),
            None => (lat, None),
        };
        let sub_ms = self.time(io.at_ns.saturating_sub(clat));
        let (f, avg, prio) = (self.format, self.avg, u32::from(io.prio));
        let line = |value: u64| Line {
            ms,
            value,
            max: (f.window == Window::Both && avg == 0).then_some(value),
            dir: io.dir,
            bs: io.len,
            offset: io.offset,
            prio,
        };
        if let Some([l, c, s]) = self.lat.as_mut() {
            l.sample(line(lat), avg, f);
            c.sample(line(clat), avg, f);
            if let Some(slat) = slat {
                // fio logs it when the I/O is submitted: at that time.
                s.sample(
                    Line {
                        ms: sub_ms,
                        ..line(slat)
                    },
                    avg,
                    f,
                );
            }
        }
        if avg == 0 {
            // fio's per-I/O bandwidth: the I/O's bytes over its clat, in
            // (decimal) KB/s; its IOPS sample is 1.
            let bw = (io.len * 1_000_000).checked_div(clat).unwrap_or(0);
            if let Some(b) = self.bw.as_mut() {
                b.sample(line(bw), 0, f);
            }
            if let Some(i) = self.iops.as_mut() {
                i.sample(line(1), 0, f);
            }
        } else if self.bw.is_some() || self.iops.is_some() {
            self.rates.bytes[io.dir] += io.len;
            self.rates.ios[io.dir] += 1;
            if io.timed && ms >= self.rates.due {
                self.put_rates(ms);
            }
        }
        if let Some(h) = self.hist.as_mut() {
            h.sample(ms, io.dir, io.len, clat);
        }
    }

    /// Averaged bandwidth (KiB/s) and IOPS lines for the directions that
    /// moved since the last ones, at `ms`.
    fn put_rates(&mut self, ms: u64) {
        let f = self.format;
        let r = &mut self.rates;
        let spent = ms.saturating_sub(r.last).max(1);
        for dir in 0..3 {
            if r.ios[dir] == 0 {
                continue;
            }
            let line = |value: u64| Line {
                ms,
                value,
                max: (f.window == Window::Both).then_some(value),
                dir,
                bs: 0,
                offset: 0,
                prio: 0,
            };
            if let Some(b) = self.bw.as_mut() {
                b.sink.line(&line(r.bytes[dir] * 1000 / spent / 1024), f);
            }
            if let Some(i) = self.iops.as_mut() {
                i.sink.line(&line(r.ios[dir] * 1000 / spent), f);
            }
            (r.bytes[dir], r.ios[dir]) = (0, 0);
        }
        r.last = ms;
        if self.avg > 0 {
            r.due = ms - ms % self.avg + self.avg;
        }
    }

    /// Ends the logs at `end_ns` (ns since the span began): the open
    /// windows as lines, every buffer written out (a FIFO's handed to its
    /// reader, waiting until `stop()` says the run is stopping at most).
    /// Returns what went wrong writing them, for the job's warnings.
    pub fn close(&mut self, end_ns: u64, stop: &dyn Fn() -> bool) -> Vec<String> {
        let until = Until {
            deadline: Instant::now() + self.wait,
            stop,
        };
        self.close_by(end_ns, &until)
    }

    fn close_by(&mut self, end_ns: u64, until: &Until) -> Vec<String> {
        if self.closed {
            return Vec::new();
        }
        self.closed = true;
        let ms = self.time(end_ns);
        let f = self.format;
        // The averaged bandwidth and IOPS of the window the job ends in are
        // not written: fio's helper thread takes those samples on its timer
        // while the job runs, and the JSON's `bw_samples` are the same ones.
        let mut logs: Vec<&mut ValueLog> = Vec::new();
        if let Some(l) = self.lat.as_mut() {
            logs.extend(l.iter_mut());
        }
        logs.extend(self.bw.as_mut());
        logs.extend(self.iops.as_mut());
        let mut errors = Vec::new();
        for l in logs {
            l.close(ms, f, until);
            errors.extend(l.sink.error.take());
        }
        if let Some(h) = self.hist.as_mut() {
            h.close(ms, until);
            errors.extend(h.sink.error.take());
        }
        errors
    }
}

impl Drop for JobLogs {
    /// A job that ended on an error still leaves what it logged (a
    /// FIFO's lines in their fallback file: no reader is waited for on
    /// the way out).
    fn drop(&mut self) {
        let _ = self.close_by(self.last_ns, &Until::now());
    }
}

/// `clock`'s time now, in ms.
fn clock_ms(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_fio() {
        // Exact below 128; then 64 buckets per power of two.
        assert_eq!(plat_index(0), 0);
        assert_eq!(plat_index(127), 127);
        assert_eq!(plat_index(128), 128);
        assert_eq!(plat_index(129), 128);
        assert_eq!(plat_index(130), 129);
        assert_eq!(plat_index(256), 192);
        assert_eq!(plat_index(u64::MAX), PLAT_NR - 1);
        // Monotonic.
        let mut prev = 0;
        for v in (0..1u64 << 40).step_by(99_991) {
            let i = plat_index(v);
            assert!(i >= prev);
            prev = i;
        }
    }

    #[test]
    fn names_follow_fio() {
        let mut s = LogSpec {
            lat: Some(String::new()),
            bw: Some("dir/b".into()),
            number: 3,
            ..LogSpec::default()
        };
        let names = |s: &LogSpec| {
            s.paths("job")
                .into_iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(&s),
            [
                "job_lat.3.log",
                "job_clat.3.log",
                "job_slat.3.log",
                "dir/b_bw.3.log"
            ]
        );
        s.shared = true;
        s.lat = None;
        s.hist = Some("h".into());
        assert_eq!(names(&s), ["dir/b_bw.log", "h_clat_hist.log"]);
    }

    #[test]
    fn shared_sinks_append_each_job_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s_lat.log");
        std::fs::write(&path, "0, 1, 0, 4096, 0\n").unwrap();
        let f = Format {
            offset: false,
            prio: false,
            window: Window::Avg,
        };
        let line = |ms: u64| Line {
            ms,
            value: 7,
            max: None,
            dir: 1,
            bs: 512,
            offset: 0,
            prio: 0,
        };
        let mut a = Sink::open(path.clone(), true).unwrap();
        let mut b = Sink::open(path.clone(), true).unwrap();
        // Lines written turn about, far past a buffer's worth each.
        for ms in 0..20_000 {
            a.line(&line(ms), f);
            b.line(&line(ms), f);
        }
        b.finish(&Until::now());
        a.finish(&Until::now());
        assert!(a.error.is_none() && b.error.is_none());
        let text = std::fs::read_to_string(&path).unwrap();
        let times: Vec<u64> = text
            .lines()
            .map(|l| {
                assert_eq!(l.split(", ").count(), 5, "{l}");
                l.split(", ").next().unwrap().parse().unwrap()
            })
            .collect();
        // What was there, then b's block, then a's.
        assert_eq!(times.len(), 1 + 40_000);
        assert!(times[1..20_001].windows(2).all(|w| w[0] < w[1]));
        assert!(times[20_001..].windows(2).all(|w| w[0] < w[1]));
        // The spools left nothing in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_spool_without_o_tmpfile_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("x_bw.log");
        let mut spools: Vec<File> = (0..3)
            .map(|_| removed_spool(dir.path(), &log).unwrap())
            .collect();
        for (i, f) in spools.iter_mut().enumerate() {
            writeln!(f, "{i}").unwrap();
            f.seek(SeekFrom::Start(0)).unwrap();
            let mut back = String::new();
            std::io::Read::read_to_string(f, &mut back).unwrap();
            assert_eq!(back, format!("{i}\n"));
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn averaged_windows_give_one_line_each() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.log");
        let mut v = ValueLog::new(Sink::open(path.clone(), false).unwrap());
        let f = Format {
            offset: false,
            prio: false,
            window: Window::Both,
        };
        let line = |ms: u64, value: u64| Line {
            ms,
            value,
            max: None,
            dir: 1,
            bs: 4096,
            offset: 0,
            prio: 0,
        };
        for (ms, value) in [(1, 10), (5, 20), (10, 30), (12, 1), (25, 3)] {
            v.sample(line(ms, value), 10, f);
        }
        v.close(27, f, &Until::now());
        drop(v);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "10, 20, 30, 1, 0, 0\n25, 2, 3, 1, 0, 0\n");
    }
}
