//! Where sysfs is (`XFERBENCH_SYSFS`, else `/sys`) and reading it: every
//! read may fail (a file a kernel lacks, a virtual device with no link, a
//! NIC whose speed is `-1` or refuses to be read), so each gives an Option.

use std::path::{Path, PathBuf};

/// The variable that points the whole program at another sysfs tree.
pub const VAR: &str = "XFERBENCH_SYSFS";

/// A sysfs tree: `/sys`, or the one `XFERBENCH_SYSFS` names. Everything
/// that reads sysfs takes one, so a test can read a fake tree without
/// setting a variable every thread of the process shares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sysfs {
    root: PathBuf,
}

impl Sysfs {
    /// The tree at `root`.
    pub fn at(root: impl Into<PathBuf>) -> Sysfs {
        Sysfs { root: root.into() }
    }

    /// The tree this process reads: `XFERBENCH_SYSFS` when set and not
    /// empty, else `/sys`.
    pub fn current() -> Sysfs {
        match std::env::var_os(VAR) {
            Some(dir) if !dir.is_empty() => Sysfs::at(dir),
            _ => Sysfs::at("/sys"),
        }
    }

    /// The tree's top directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `rel` under the root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// The real directory of the tree's top, for telling whether a
    /// resolved path is still inside it.
    pub fn real_root(&self) -> Option<PathBuf> {
        real(&self.root)
    }
}

/// A file's text, trimmed; None when it is missing, unreadable or empty.
pub fn read(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// A hexadecimal file such as `vendor` (`0x10de`).
pub fn read_hex(path: &Path) -> Option<u32> {
    let text = read(path)?;
    u32::from_str_radix(text.trim_start_matches("0x"), 16).ok()
}

/// A decimal file; None for a negative value (`numa_node` -1, a NIC's
/// speed -1: not known).
pub fn read_u64(path: &Path) -> Option<u64> {
    read(path)?
        .parse::<i64>()
        .ok()
        .and_then(|v| u64::try_from(v).ok())
}

/// The path a link points to, made absolute and free of `..` (the real
/// directory of a device): sysfs's links are relative, so they resolve
/// inside a fake tree as they do in `/sys`.
pub fn real(path: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(path).ok()
}

/// The name of the directory a link points to (a driver's name).
pub fn link_name(path: &Path) -> Option<String> {
    let target = std::fs::read_link(path).ok()?;
    Some(target.file_name()?.to_string_lossy().into_owned())
}

/// Whether `name` is a PCI address in sysfs's form, `DDDD:BB:DD.F`
/// (the domain may have more digits).
pub fn is_bdf(name: &str) -> bool {
    let hex = |s: &str, n: usize| s.len() == n && s.chars().all(|c| c.is_ascii_hexdigit());
    let Some((domain, rest)) = name.split_once(':') else {
        return false;
    };
    let Some((bus, rest)) = rest.split_once(':') else {
        return false;
    };
    let Some((dev, func)) = rest.split_once('.') else {
        return false;
    };
    domain.len() >= 4
        && domain.chars().all(|c| c.is_ascii_hexdigit())
        && hex(bus, 2)
        && hex(dev, 2)
        && func.len() == 1
        && func.chars().all(|c| ('0'..='7').contains(&c))
}

/// The CPUs of a sysfs list file (`cpulist`: `0-3,8`).
pub fn read_cpus(path: &Path) -> Option<Vec<usize>> {
    crate::units::parse_cpu_list(&read(path)?).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_addresses_are_told_from_other_names() {
        assert!(is_bdf("0000:41:00.0"));
        assert!(is_bdf("10000:00:1f.7"));
        assert!(!is_bdf("pci0000:00"));
        assert!(!is_bdf("0000:41:00.8"));
        assert!(!is_bdf("41:00.0"));
        assert!(!is_bdf("virtio2"));
        assert!(!is_bdf("0000:4g:00.0"));
    }

    #[test]
    fn unknown_values_read_as_none() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("speed");
        std::fs::write(&f, "-1\n").unwrap();
        assert_eq!(read_u64(&f), None);
        std::fs::write(&f, "25000\n").unwrap();
        assert_eq!(read_u64(&f), Some(25000));
        std::fs::write(&f, "0x10de\n").unwrap();
        assert_eq!(read_hex(&f), Some(0x10de));
        std::fs::write(&f, "\n").unwrap();
        assert_eq!(read(&f), None);
        assert_eq!(read(&dir.path().join("absent")), None);
    }
}
