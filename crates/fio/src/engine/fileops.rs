//! fio's file-operation engines: each "I/O" is one operation on one of the
//! job's `nrfiles` files, and no data moves — the figures are IOPS and the
//! latency of the operation, as fio reports them.
//!
//! | engine | one I/O |
//! |---|---|
//! | `filecreate` | `open(O_CREAT\|O_RDWR, 0600)` then `close` |
//! | `filestat` | `stat`, `lstat` or `statx` (`stat_type=`) |
//! | `filedelete` | `unlink` |
//!
//! The files are named as fio names them: `filename_format=` (default
//! `$jobname.$jobnum.$filenum`) for each `$filenum` under `directory=`.
//! Before the timed loop (untimed, as fio's layout), filestat and
//! filedelete create the files missing, `filesize=` bytes each; filecreate
//! counts those already there, whose opens create nothing. Block `k` of the
//! job's pass is file `k`, so `rw=randread` visits them in a random order.

use super::{Accounting, Done, Engine, Op};
use crate::engine::StatType;
use crate::error::{Error, Result};
use crate::job::{IoEngine, Job};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

pub struct FileOps {
    engine: IoEngine,
    stat_type: StatType,
    paths: Vec<CString>,
    /// Where the files are, for the report.
    place: String,
    /// filecreate: files there before the job; the others: files made.
    before: usize,
    ops: u64,
    done: Vec<Done>,
}

impl FileOps {
    /// The job's files (their names after `--map`), prepared for
    /// `job.ioengine`.
    pub fn open(job: &Job, names: &[String]) -> Result<FileOps> {
        let name = &job.name;
        let dir = Path::new(&names[0])
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(Error::usage(format!(
                "job {name}: directory {} does not exist; create it or set directory=",
                dir.display()
            )));
        }
        let place = if names.len() == 1 {
            names[0].clone()
        } else {
            format!("{} files like {}", names.len(), names[0])
        };
        let mut before = 0;
        for (i, n) in names.iter().enumerate() {
            let p = Path::new(n);
            let there = p.symlink_metadata().is_ok();
            match job.ioengine {
                IoEngine::Filecreate => before += usize::from(there),
                _ if there => {}
                _ if !job.allow_file_create => {
                    return Err(Error::usage(format!(
                        "job {name}: {n} does not exist and allow_file_create=0; ioengine={} needs its files there",
                        job.ioengine.name()
                    )));
                }
                _ => {
                    let f = std::fs::File::create(p).map_err(|e| {
                        Error::run_from(format!("job {name}: cannot create {n}"), e)
                    })?;
                    f.set_len(job.filesize_of(i).unwrap_or(0))
                        .map_err(|e| Error::run_from(format!("job {name}: cannot size {n}"), e))?;
                    before += 1;
                }
            }
        }
        let paths = names
            .iter()
            .map(|n| {
                CString::new(Path::new(n).as_os_str().as_bytes()).map_err(|_| {
                    Error::usage(format!("job {name}: file name {n:?} holds a NUL byte"))
                })
            })
            .collect::<Result<_>>()?;
        Ok(FileOps {
            engine: job.ioengine,
            stat_type: job.engine_opts.stat_type,
            paths,
            place,
            before,
            ops: 0,
            done: Vec::with_capacity(1),
        })
    }

    /// The operation on file `i`: Ok, or the errno.
    fn op(&self, i: usize) -> std::result::Result<(), i32> {
        let p = self.paths[i].as_ptr();
        // SAFETY: a NUL-terminated path; the buffers are ours.
        let r = unsafe {
            match (self.engine, self.stat_type) {
                (IoEngine::Filecreate, _) => {
                    let fd = libc::open(p, libc::O_CREAT | libc::O_RDWR | libc::O_CLOEXEC, 0o600);
                    if fd >= 0 {
                        libc::close(fd);
                    }
                    fd.min(0)
                }
                (IoEngine::Filedelete, _) => libc::unlink(p),
                (_, StatType::Stat) => {
                    let mut st: libc::stat = std::mem::zeroed();
                    libc::stat(p, &mut st)
                }
                (_, StatType::Lstat) => {
                    let mut st: libc::stat = std::mem::zeroed();
                    libc::lstat(p, &mut st)
                }
                (_, StatType::Statx) => {
                    let mut st: libc::statx = std::mem::zeroed();
                    libc::statx(libc::AT_FDCWD, p, 0, libc::STATX_ALL, &mut st)
                }
            }
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
        }
        Ok(())
    }
}

impl Engine for FileOps {
    fn queue(&mut self, op: Op) -> Result<()> {
        let i = (op.offset / op.len.max(1) as u64) as usize % self.paths.len();
        self.ops += 1;
        let res = self.op(i).map(|()| op.len);
        self.done.push(Done { slot: op.slot, res });
        Ok(())
    }

    fn reap(
        &mut self,
        _min: usize,
        _max: usize,
        _timeout: Duration,
        out: &mut Vec<Done>,
    ) -> Result<()> {
        out.append(&mut self.done);
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn accounting(&self) -> Accounting {
        Accounting::Ops
    }

    fn completion_detail(&self) -> String {
        let call = match (self.engine, self.stat_type) {
            (IoEngine::Filecreate, _) => "open(O_CREAT|O_RDWR, 0600) + close",
            (IoEngine::Filedelete, _) => "unlink",
            (_, StatType::Stat) => "stat",
            (_, StatType::Lstat) => "lstat",
            (_, StatType::Statx) => "statx",
        };
        let setup = match self.engine {
            IoEngine::Filecreate if self.before > 0 => format!(
                "; {} of them existed already, and opening those created nothing",
                self.before
            ),
            IoEngine::Filecreate if self.ops > self.paths.len() as u64 => {
                "; passes after the first found the files there and created nothing".into()
            }
            IoEngine::Filecreate => String::new(),
            _ if self.before > 0 => format!("; {} created first (untimed)", self.before),
            _ => String::new(),
        };
        format!(
            "{}: one {call} per I/O, no data moved ({} operations on {}){setup}",
            self.engine.name(),
            self.ops,
            self.place
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(engine: &str, dir: &Path, n: &str) -> Job {
        let mut j = Job {
            name: "f".into(),
            ..Job::default()
        };
        for (k, v) in [
            ("ioengine", engine),
            ("nrfiles", n),
            ("directory", dir.to_str().unwrap()),
            ("filesize", "1k"),
        ] {
            j.set(k, Some(v)).unwrap();
        }
        j
    }

    fn run(e: &mut FileOps, n: u64) -> Vec<Done> {
        let mut out = Vec::new();
        for i in 0..n {
            e.queue(Op {
                dir: super::super::Dir::Read,
                file: 0,
                offset: i * 4096,
                len: 4096,
                slot: 0,
                buf: std::ptr::null_mut(),
                ioprio: None,
            })
            .unwrap();
            e.reap(1, 1, Duration::from_secs(1), &mut out).unwrap();
        }
        out
    }

    #[test]
    fn create_stat_delete_n_files_named_as_fio_names_them() {
        let d = tempfile::tempdir().unwrap();
        let j = job("filecreate", d.path(), "5");
        let mut e = FileOps::open(&j, &j.resolved_files().unwrap()).unwrap();
        assert!(run(&mut e, 5).iter().all(|d| d.res == Ok(4096)));
        for n in 0..5 {
            assert!(d.path().join(format!("f.0.{n}")).exists(), "f.0.{n}");
        }
        let mut j = job("filestat", d.path(), "7");
        j.set("stat_type", Some("statx")).unwrap();
        let mut e = FileOps::open(&j, &j.resolved_files().unwrap()).unwrap();
        // Two were missing: made first, 1 KiB each.
        assert_eq!(e.before, 2);
        assert_eq!(
            std::fs::metadata(d.path().join("f.0.6")).unwrap().len(),
            1024
        );
        assert!(run(&mut e, 7).iter().all(|d| d.res.is_ok()));
        assert!(
            e.completion_detail().contains("one statx per I/O"),
            "{}",
            e.completion_detail()
        );
        let j = job("filedelete", d.path(), "7");
        let mut e = FileOps::open(&j, &j.resolved_files().unwrap()).unwrap();
        assert!(run(&mut e, 7).iter().all(|d| d.res.is_ok()));
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
        // A second pass finds nothing to delete: the errno, per I/O.
        assert_eq!(run(&mut e, 1)[0].res, Err(libc::ENOENT));
    }
}
