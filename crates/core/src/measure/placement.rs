//! Where the initiator and responder run. Pinning both to distinct cores is the
//! default (rules of measurement); the chosen placement is recorded with every
//! run, including when it had to share a core.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Which CPUs the two ends ran on, and what that implies for the figures.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Placement {
    /// The threads were pinned (false with `--cpus none`).
    pub pinned: bool,
    /// CPU the initiator (the timing side) was pinned to; null when unpinned.
    /// (flowgraph: the first of its CPUs.)
    pub initiator_cpu: Option<usize>,
    /// CPU the responder was pinned to; null when unpinned.
    /// (flowgraph: the second of its CPUs.)
    pub responder_cpu: Option<usize>,
    /// Both ends on one core: polling then measures the scheduler, not the link.
    pub same_core: bool,
    /// The two cores are hyperthreads of one physical core.
    pub smt_siblings: bool,
    /// CPUs this process may run on.
    pub allowed_cpus: Vec<usize>,
}

impl Placement {
    /// No pinning at all (used to check configurations before choosing cores).
    pub fn unpinned() -> Placement {
        Placement {
            pinned: false,
            initiator_cpu: None,
            responder_cpu: None,
            same_core: false,
            smt_siblings: false,
            allowed_cpus: Vec::new(),
        }
    }
}

/// CPUs in this process's affinity mask.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live cpu_set_t and the size passed is its own, so
    // the kernel writes only inside it; pid 0 is the calling thread.
    let ok =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) }
            == 0;
    if !ok {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        return (0..n).collect();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: c < CPU_SETSIZE, the number of bits in `set`, so the bit
        // read lies inside it.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Which CPUs to pin to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Cpus {
    /// The first available ones (the default).
    #[default]
    Auto,
    /// No pinning: the scheduler places the threads (`--cpus none`).
    Unpinned,
    /// These, in order.
    List(Vec<usize>),
}

impl Cpus {
    /// The form `placement::choose` takes: None for no pinning, empty for the default.
    pub fn requested(&self) -> Option<&[usize]> {
        match self {
            Cpus::Auto => Some(&[]),
            Cpus::Unpinned => None,
            Cpus::List(v) => Some(v),
        }
    }
}

impl std::str::FromStr for Cpus {
    type Err = Error;

    /// Empty for the default, `none`, or a list such as `0,1` or `2-5`.
    fn from_str(s: &str) -> Result<Cpus> {
        if s.is_empty() {
            return Ok(Cpus::Auto);
        }
        Ok(match crate::units::parse_cpu_list(s)? {
            None => Cpus::Unpinned,
            Some(v) => Cpus::List(v),
        })
    }
}

/// As `--cpus` takes it back: empty for the default, `none`, or the list.
impl std::fmt::Display for Cpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cpus::Auto => Ok(()),
            Cpus::Unpinned => f.write_str("none"),
            // In order, not compacted: the first is the initiator's.
            Cpus::List(v) => {
                let items: Vec<String> = v.iter().map(usize::to_string).collect();
                f.write_str(&items.join(","))
            }
        }
    }
}

/// Chooses the placement from `--cpus` (None = "none": no pinning; empty = default).
pub fn choose(requested: Option<&[usize]>) -> Result<Placement> {
    let allowed = allowed_cpus();
    let (ini, rsp) = match requested {
        None => (None, None),
        Some([]) => match allowed.as_slice() {
            [a, b, ..] => (Some(*a), Some(*b)),
            [a] => (Some(*a), Some(*a)),
            [] => (None, None),
        },
        Some([a]) => (Some(*a), Some(*a)),
        Some([a, b]) => (Some(*a), Some(*b)),
        Some(more) => {
            return Err(Error::usage(format!(
                "--cpus takes two cpus (initiator, responder), not {}",
                more.len()
            )));
        }
    };
    for c in [ini, rsp].into_iter().flatten() {
        if !allowed.contains(&c) {
            return Err(Error::usage(format!(
                "cpu {c} does not exist or is not available to this process (available: {}); pick others with --cpus",
                compact(&allowed)
            )));
        }
    }
    let smt = match (ini, rsp) {
        (Some(a), Some(b)) if a != b => siblings(a).contains(&b),
        _ => false,
    };
    Ok(Placement {
        pinned: ini.is_some(),
        initiator_cpu: ini,
        responder_cpu: rsp,
        same_core: ini.is_some() && ini == rsp,
        smt_siblings: smt,
        allowed_cpus: allowed,
    })
}

/// Pins the calling thread to one CPU.
pub fn pin_current(cpu: usize) -> Result<()> {
    if core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
        Ok(())
    } else {
        Err(Error::os(format!("cannot pin to cpu {cpu}")))
    }
}

/// The calling thread's CPU mask, put back when dropped. An experiment pins
/// its initiator to the thread that called it; a program that runs several
/// in one thread (the default suite, a library user) must not find the
/// second confined to the first one's CPU, so every experiment holds one
/// of these for its whole run, early returns included.
pub struct KeepAffinity(Vec<usize>);

impl KeepAffinity {
    /// Remembers the calling thread's mask. Not `Default`: it reads the
    /// thread's state, which a default value should not.
    #[allow(clippy::new_without_default)]
    pub fn new() -> KeepAffinity {
        KeepAffinity(allowed_cpus())
    }
}

impl Drop for KeepAffinity {
    fn drop(&mut self) {
        // Nothing to do about a failure here: the mask was valid when read.
        let _ = set_allowed(&self.0);
    }
}

/// Sets the calling thread's affinity to `cpus`: how a caller that ran an
/// experiment in this thread (which pins its initiator here) gets its
/// earlier mask back.
pub fn set_allowed(cpus: &[usize]) -> Result<()> {
    set_mask(
        cpus.iter()
            .copied()
            .filter(|&c| c < libc::CPU_SETSIZE as usize),
    )
    .map_err(|_| Error::os("restoring the CPU affinity"))
}

/// Restricts the calling thread to the set `cpus` (fio's `cpus_allowed`:
/// a worker may move among them, unlike [`pin_current`]'s one CPU). A CPU
/// the mask cannot hold is refused rather than dropped, and a refusal
/// names the CPUs this process may use, as a usage error: the set is the
/// user's.
pub fn pin_current_to(cpus: &[usize]) -> Result<()> {
    if let Some(c) = cpus.iter().find(|&&c| c >= libc::CPU_SETSIZE as usize) {
        return Err(Error::usage(format!("cpu {c} is out of range")));
    }
    set_mask(cpus.iter().copied()).map_err(|e| {
        Error::usage(format!("{e} (allowed here: {})", compact(&allowed_cpus()))).with_source(e)
    })
}

/// The calling thread's affinity mask set to `cpus`, each below CPU_SETSIZE.
fn set_mask(cpus: impl Iterator<Item = usize>) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for c in cpus {
        // SAFETY: the callers keep every CPU below CPU_SETSIZE (`pin_current_to`
        // refuses a larger one, the restore filters them out), so the bit set
        // lies inside `set`; libc's CPU_SET also indexes its array checked.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: set is a valid cpu_set_t; 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn siblings(cpu: usize) -> Vec<usize> {
    let path = format!("/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list");
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| crate::units::parse_cpu_list(s.trim()).ok().flatten())
        .unwrap_or_default()
}

/// `0-3,6` from a sorted list.
pub fn compact(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// Bytes of `cpu`'s data (or unified) cache at `level`, or of its last
/// level with `None`, where sysfs says.
pub fn cache_bytes(cpu: usize, level: Option<u32>) -> Option<usize> {
    let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cache");
    let read = |i: usize, f: &str| std::fs::read_to_string(format!("{dir}/index{i}/{f}")).ok();
    (0..16)
        .filter_map(|i| {
            let lvl: u32 = read(i, "level")?.trim().parse().ok()?;
            if read(i, "type")?.trim() == "Instruction" {
                return None;
            }
            Some((lvl, parse_cache_size(&read(i, "size")?)?))
        })
        .filter(|&(l, _)| level.is_none_or(|want| l == want))
        .max_by_key(|&(l, _)| l)
        .map(|(_, bytes)| bytes)
}

/// sysfs's `512K`, `32M` or plain bytes.
fn parse_cache_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mul) = if let Some(n) = s.strip_suffix('K') {
        (n, 1 << 10)
    } else if let Some(n) = s.strip_suffix('M') {
        (n, 1 << 20)
    } else {
        (s, 1)
    };
    num.parse::<usize>().ok().map(|n| n * mul)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_read_as_sysfs_writes_them() {
        assert_eq!(parse_cache_size("512K\n"), Some(512 << 10));
        assert_eq!(parse_cache_size("32M"), Some(32 << 20));
        assert_eq!(parse_cache_size("4096"), Some(4096));
        assert_eq!(parse_cache_size("lots"), None);
        // Where sysfs has caches, the last level is the largest data one.
        if let (Some(l2), Some(last)) = (cache_bytes(0, Some(2)), cache_bytes(0, None)) {
            assert!(last >= l2);
        }
    }

    #[test]
    fn compacting() {
        assert_eq!(compact(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(compact(&[]), "");
        // `--cpus` reads each form back as it is shown.
        for cpus in [Cpus::Auto, Cpus::Unpinned, Cpus::List(vec![3, 1, 2, 5])] {
            assert_eq!(cpus.to_string().parse::<Cpus>().unwrap(), cpus);
        }
    }

    #[test]
    fn pinning_to_a_set_refuses_what_the_mask_cannot_hold() {
        let e = pin_current_to(&[libc::CPU_SETSIZE as usize]).unwrap_err();
        assert!(matches!(e, Error::Usage { .. }), "{e}");
        assert!(e.to_string().contains("out of range"), "{e}");
        // The thread's own CPUs are always a set it may be pinned to.
        let keep = KeepAffinity::new();
        pin_current_to(&allowed_cpus()).unwrap();
        drop(keep);
    }

    #[test]
    fn rejects_missing_cpu() {
        let e = choose(Some(&[0, 100_000])).unwrap_err();
        assert!(e.to_string().contains("cpu 100000 does not exist"), "{e}");
        assert!(choose(Some(&[0, 1, 2])).is_err());
    }
}
