//! fio's trims (`rw=trim`, `randtrim`, `trimwrite`, `randtrimwrite`): a
//! block given back to the storage, as fio's `os_trim` does on Linux. A
//! block device gets `ioctl(BLKDISCARD, [offset, len])`; a regular file
//! gets `fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)` over the
//! block, which frees its space and leaves the file's size as it was
//! (the block then reads as zeros).
//!
//! A trim is one synchronous call in every engine with a file: the sync
//! family and mmap make it where they make a read or write, and io_uring,
//! libaio and posixaio make it inside `queue` and report it done at once,
//! as fio's engines do (none of them queues a discard asynchronously).

use super::{Done, Op, Target, TargetKind};
use crate::error::{Error, Result};
use crate::job::Job;
use std::path::PathBuf;

/// `BLKDISCARD`, `_IO(0x12, 119)`: the architectures whose `_IOC_NONE` is
/// 1 put it in bit 29.
#[cfg(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "sparc",
    target_arch = "sparc64"
))]
const BLKDISCARD: u64 = 0x2000_1277;
#[cfg(not(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "sparc",
    target_arch = "sparc64"
)))]
const BLKDISCARD: u64 = 0x1277;

/// One of the job's files, as a trim sees it.
struct TrimTarget {
    fd: i32,
    block: bool,
    path: PathBuf,
}

/// What trims a job's targets (one per file, by [`super::Op::file`]).
pub struct Trimmer {
    targets: Vec<TrimTarget>,
    /// The job's name, its `rw` and the target's path, for the one-line
    /// refusal.
    job: String,
    rw: &'static str,
    /// Trims done, for the engine's completion detail.
    pub done: u64,
}

impl Trimmer {
    /// The trimmer for the job's `targets`, or None when the job issues
    /// no trims.
    pub fn of(targets: &[Target], job: &Job) -> Option<Trimmer> {
        job.rw.trims().then(|| Trimmer {
            targets: targets
                .iter()
                .map(|t| TrimTarget {
                    fd: t.fd(),
                    block: t.kind == TargetKind::Block,
                    path: t.path.clone(),
                })
                .collect(),
            job: job.name.clone(),
            rw: job.rw.name(),
            done: 0,
        })
    }

    /// Trims `len` bytes at `offset`: the bytes trimmed, or the errno the
    /// call failed with (an I/O error, counted as the job's). A target
    /// that cannot trim at all (a file system without hole punching, a
    /// device without discard) is an error of its own: one line naming
    /// the file system or device and the errno.
    pub fn trim(
        &mut self,
        file: usize,
        offset: u64,
        len: usize,
    ) -> Result<std::result::Result<usize, i32>> {
        self.done += 1;
        let t = &self.targets[file];
        let r = loop {
            // SAFETY: fallocate / ioctl on our own descriptor; the range
            // array lives across the call.
            let r = unsafe {
                if t.block {
                    let range: [u64; 2] = [offset, len as u64];
                    libc::ioctl(t.fd, BLKDISCARD as _, range.as_ptr())
                } else {
                    libc::fallocate(
                        t.fd,
                        libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                        offset as libc::off_t,
                        len as libc::off_t,
                    )
                }
            };
            if r == 0 {
                break Ok(len);
            }
            let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            if e != libc::EINTR {
                break Err(e);
            }
        };
        match r {
            Err(e) if e == libc::EOPNOTSUPP || e == libc::ENOSYS => Err(self.unsupported(file, e)),
            r => Ok(r),
        }
    }

    /// How trims are made, for the engine's completion detail.
    pub fn words(&self) -> &'static str {
        if self.targets.first().is_some_and(|t| t.block) {
            "ioctl BLKDISCARD"
        } else {
            "fallocate PUNCH_HOLE|KEEP_SIZE"
        }
    }

    fn unsupported(&self, file: usize, e: i32) -> Error {
        let t = &self.targets[file];
        let shown = t.path.display();
        let errno = super::errno_text(e);
        if t.block {
            return Error::usage(format!(
                "job {}: rw={}: {shown} does not support discard (BLKDISCARD: {errno}); trim a device that does (an SSD or NVMe namespace, a thin volume)",
                self.job, self.rw
            ));
        }
        Error::usage(format!(
            "job {}: rw={}: the {} file system holding {shown} cannot punch holes (fallocate PUNCH_HOLE: {errno}); put the file on ext4, xfs, btrfs or tmpfs, or trim a block device",
            self.job,
            self.rw,
            fs_name(t.fd)
        ))
    }
}

/// Makes the trim `op` with an engine's trimmer (`None` when its job does
/// not trim, which the worker never sends a trim to) and gives its
/// completion: what every engine's `queue` does with a trim.
pub fn complete(trim: &mut Option<Trimmer>, op: &Op) -> Result<Done> {
    let t = trim
        .as_mut()
        .ok_or_else(|| Error::run("a trim reached an engine whose job issues none"))?;
    Ok(Done {
        slot: op.slot,
        res: t.trim(op.file, op.offset, op.len)?,
    })
}

/// The name of the file system `fd` lies on, from its statfs magic.
pub fn fs_name(fd: i32) -> String {
    // SAFETY: statfs is plain C data (integers): all zeroes is valid.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a live, writable statfs that fstatfs writes only into;
    // a stale `fd` only makes it fail (EBADF).
    if unsafe { libc::fstatfs(fd, &mut st) } != 0 {
        return "unknown".into();
    }
    let magic = st.f_type as u64 & 0xffff_ffff;
    let name = match magic {
        0xEF53 => "ext2/3/4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x0102_1994 => "tmpfs",
        0x794C_7630 => "overlayfs",
        0x6969 => "nfs",
        0x6573_5546 => "fuse",
        0x2FC1_2FC1 => "zfs",
        0x0102_1997 => "9p",
        0x4D44 => "vfat",
        0x2011_BAB0 => "exfat",
        0x5346_544E => "ntfs",
        0xF2F5_2010 => "f2fs",
        0x5346_4846 => "wslfs",
        0xFF53_4D42 | 0xFE53_4D42 => "cifs/smb",
        0x8584_58F6 => "ramfs",
        0x0000_9FA0 => "proc",
        0x6265_6572 => "sysfs",
        _ => return format!("unknown (statfs type 0x{magic:x})"),
    };
    name.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trim_punches_a_hole_and_keeps_the_size() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t");
        std::fs::write(&f, vec![7u8; 64 << 10]).unwrap();
        let mut j = Job::default();
        j.set("rw", Some("randtrim")).unwrap();
        j.set("bs", Some("16k")).unwrap();
        let t = Target::open(&j, &f, false).unwrap();
        let mut tr = Trimmer::of(std::slice::from_ref(&t), &j).unwrap();
        match tr.trim(0, 16 << 10, 16 << 10) {
            Ok(r) => assert_eq!(r, Ok(16 << 10)),
            Err(e) => {
                // A file system without hole punching: the one line.
                let e = e.to_string();
                assert!(
                    e.contains("cannot punch holes") && e.contains("fallocate"),
                    "{e}"
                );
                return;
            }
        }
        assert_eq!(tr.done, 1);
        let data = std::fs::read(&f).unwrap();
        assert_eq!(data.len(), 64 << 10);
        assert!(data[16 << 10..32 << 10].iter().all(|&b| b == 0));
        assert!(data[..16 << 10].iter().all(|&b| b == 7));
        assert!(data[32 << 10..].iter().all(|&b| b == 7));
        assert!(!fs_name(t.fd()).is_empty());
        // No trimmer for a job that does not trim.
        j.set("rw", Some("write")).unwrap();
        assert!(Trimmer::of(std::slice::from_ref(&t), &j).is_none());
    }

    #[test]
    fn a_file_system_without_hole_punching_is_one_line_naming_it() {
        // procfs has no fallocate: EOPNOTSUPP, as on ramfs or vfat (the
        // call fails before anything is written).
        use std::os::unix::io::AsRawFd;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open("/proc/self/comm")
            .unwrap();
        let mut tr = Trimmer {
            targets: vec![TrimTarget {
                fd: f.as_raw_fd(),
                block: false,
                path: "/proc/self/comm".into(),
            }],
            job: "j".into(),
            rw: "randtrim",
            done: 0,
        };
        let e = tr.trim(0, 0, 4096).unwrap_err().to_string();
        assert!(
            e.starts_with("job j: rw=randtrim: the proc file system holding /proc/self/comm cannot punch holes (fallocate PUNCH_HOLE: "),
            "{e}"
        );
        assert!(e.contains("(os error 95)") && !e.contains('\n'), "{e}");
    }
}
