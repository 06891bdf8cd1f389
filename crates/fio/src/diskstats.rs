//! The block devices under a run's files and their counters in
//! /proc/diskstats, read before and after the run: fio's `disk_util`. A
//! file on a partition counts against its whole disk, as fio reports it; a
//! file on no block device (tmpfs, overlay, a transport) has none.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

/// One device's counters (the /proc/diskstats fields fio reads).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskCounters {
    pub name: String,
    pub read_ios: u64,
    pub read_merges: u64,
    pub read_ticks: u64,
    pub write_ios: u64,
    pub write_merges: u64,
    pub write_ticks: u64,
    /// ms the device had I/O in flight.
    pub io_ticks: u64,
    /// Weighted ms of I/O in flight.
    pub in_queue: u64,
}

impl DiskCounters {
    /// What happened between `before` and `self`.
    pub fn since(&self, before: &DiskCounters) -> DiskCounters {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        DiskCounters {
            name: self.name.clone(),
            read_ios: d(self.read_ios, before.read_ios),
            read_merges: d(self.read_merges, before.read_merges),
            read_ticks: d(self.read_ticks, before.read_ticks),
            write_ios: d(self.write_ios, before.write_ios),
            write_merges: d(self.write_merges, before.write_merges),
            write_ticks: d(self.write_ticks, before.write_ticks),
            io_ticks: d(self.io_ticks, before.io_ticks),
            in_queue: d(self.in_queue, before.in_queue),
        }
    }
}

/// The whole-disk name of the block device holding `path` (or that `path`
/// is), if there is one.
pub fn disk_of(path: &Path) -> Option<String> {
    // A file the job has yet to create is on its directory's device.
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let m = std::fs::metadata(path)
        .or_else(|_| std::fs::metadata(dir))
        .ok()?;
    let dev = if m.file_type().is_block_device() {
        m.rdev()
    } else {
        m.dev()
    };
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = Path::new("/sys/dev/block").join(format!("{major}:{minor}"));
    let real = std::fs::canonicalize(&sys).ok()?;
    let disk = if real.join("partition").exists() {
        real.parent()?.to_path_buf()
    } else {
        real
    };
    Some(disk.file_name()?.to_string_lossy().into_owned())
}

/// The counters of the named devices now (those /proc/diskstats lists).
pub fn read(names: &[String]) -> Vec<DiskCounters> {
    let Ok(text) = std::fs::read_to_string("/proc/diskstats") else {
        return Vec::new();
    };
    parse(&text, names)
}

fn parse(text: &str, names: &[String]) -> Vec<DiskCounters> {
    let mut out = Vec::new();
    for name in names {
        let line = text.lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 14 && f[2] == name).then_some(f)
        });
        let Some(f) = line else { continue };
        let n = |i: usize| f[i].parse::<u64>().unwrap_or(0);
        out.push(DiskCounters {
            name: name.clone(),
            read_ios: n(3),
            read_merges: n(4),
            read_ticks: n(6),
            write_ios: n(7),
            write_merges: n(8),
            write_ticks: n(10),
            io_ticks: n(12),
            in_queue: n(13),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diskstats_line_reads_as_fio_reads_it() {
        let text = " 254       0 vda 1168 2 9344 79 10 3 80 5 0 80 84 0 0 0 0\n 254       1 vda1 1 0 8 0 0 0 0 0 0 0 0\n";
        let c = parse(text, &["vda".into(), "nope".into()]);
        assert_eq!(c.len(), 1);
        let c = &c[0];
        assert_eq!(
            (c.read_ios, c.read_merges, c.read_ticks, c.write_ios),
            (1168, 2, 79, 10)
        );
        assert_eq!(
            (c.write_merges, c.write_ticks, c.io_ticks, c.in_queue),
            (3, 5, 80, 84)
        );
        assert_eq!(c.since(c).read_ios, 0);
    }
}
