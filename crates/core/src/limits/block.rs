//! From a file or a device node to the PCI function its data crosses: a
//! file's filesystem lives on a block device (its `st_dev`); a device
//! node is one (`st_rdev`). sysfs's `dev/block/MAJ:MIN` and
//! `dev/char/MAJ:MIN` lead to the device's directory, a partition's parent
//! is its disk, an NVMe namespace hangs under its controller, and a
//! device-mapper or md device's data goes to its `slaves`.

use super::pci;
use super::sysfs::{self, Sysfs};
use serde::{Deserialize, Serialize};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A block device as `limits` lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Disk {
    /// `nvme0n1`, `sda`, `vda`.
    pub name: String,
    /// `MAJ:MIN`.
    pub dev: String,
    /// The PCI function behind it, when there is one.
    pub pci: Option<String>,
    /// The disk's model, where sysfs gives one.
    pub model: Option<String>,
}

/// Block or character: which of sysfs's `dev/` folders a number is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `dev/block`.
    Block,
    /// `dev/char`.
    Char,
}

/// The PCI function behind the filesystem `path` is on; None for a
/// filesystem with no device (tmpfs, overlay, NFS) or a device with no
/// PCI function (zram, loop, a VM's virtio disk has one: its virtio
/// function).
pub fn function_of_file(sys: &Sysfs, path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    let (major, minor) = split(meta.dev());
    function_of_number(sys, Kind::Block, major, minor)
}

/// The PCI function behind a device node (`/dev/nvme0n1`,
/// `/dev/xdma0_h2c_0`); for a regular file, its filesystem's.
pub fn function_of_node(sys: &Sysfs, path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    let ft = meta.file_type();
    let kind = if ft.is_block_device() {
        Kind::Block
    } else if ft.is_char_device() {
        Kind::Char
    } else {
        return function_of_file(sys, path);
    };
    let (major, minor) = split(meta.rdev());
    function_of_number(sys, kind, major, minor)
}

/// `st_dev`'s major and minor numbers.
fn split(dev: u64) -> (u32, u32) {
    (libc::major(dev), libc::minor(dev))
}

/// The PCI function behind device `MAJ:MIN`.
pub fn function_of_number(sys: &Sysfs, kind: Kind, major: u32, minor: u32) -> Option<String> {
    let folder = match kind {
        Kind::Block => "dev/block",
        Kind::Char => "dev/char",
    };
    let entry = sys.path(folder).join(format!("{major}:{minor}"));
    function_of_dir(sys, &entry, 0)
}

/// The function behind a device directory: through its `device` link, up
/// its own real path, and for a virtual block device through its slaves
/// (the first that has one) or an NVMe subsystem's controllers.
fn function_of_dir(sys: &Sysfs, entry: &Path, depth: usize) -> Option<String> {
    if depth > 8 {
        return None;
    }
    let dir = sysfs::real(entry)?;
    // A partition's data is its disk's.
    let dir = if dir.join("partition").exists() {
        dir.parent()?.to_path_buf()
    } else {
        dir
    };
    for candidate in [dir.join("device"), dir.clone()] {
        if let Some(f) = pci::function_above(sys, &candidate) {
            return Some(f);
        }
    }
    let mut below: Vec<PathBuf> = entries(&dir.join("slaves"));
    // A multipath NVMe namespace sits under a virtual subsystem whose
    // controllers are links named nvmeN.
    if let Some(parent) = dir.parent() {
        below.extend(entries(parent).into_iter().filter(|p| {
            p.file_name()
                .is_some_and(|n| is_controller(&n.to_string_lossy()))
        }));
    }
    below
        .iter()
        .find_map(|p| function_of_dir(sys, p, depth + 1))
}

fn is_controller(name: &str) -> bool {
    name.strip_prefix("nvme")
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// Every whole disk of the tree (`class/block` entries that are not
/// partitions), skipping the ones with no hardware behind them (loop,
/// ram, zram, dm, md: their limits are their slaves').
pub fn disks(sys: &Sysfs) -> Vec<Disk> {
    let mut out = Vec::new();
    for p in entries(&sys.path("class/block")) {
        let Some(name) = p.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        if p.join("partition").exists()
            || ["loop", "ram", "zram", "dm-", "md", "nbd"]
                .iter()
                .any(|v| name.starts_with(v))
        {
            continue;
        }
        let Some(dev) = sysfs::read(&p.join("dev")) else {
            continue;
        };
        out.push(Disk {
            pci: function_of_dir(sys, &p, 0),
            model: sysfs::read(&p.join("device/model")),
            name,
            dev,
        });
    }
    out
}
