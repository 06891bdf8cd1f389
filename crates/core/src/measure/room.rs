//! What the machine lets this process take — threads, memory, file
//! descriptors — read before a run starts, so that a run that cannot fit
//! is refused in one line naming the limit, rather than ending half-way in
//! an abort (an allocation that fails), a panic (a thread that cannot
//! start) or an error deep in a child process. Each figure is the
//! tightest of the limits that apply (`ulimit`, the kernel's, the
//! cgroup's), with what it is, for the message.

use crate::error::{Error, Result};

/// Room left under the tightest limit, and which limit that is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Room {
    /// How many more (threads, bytes, descriptors) fit.
    pub left: u64,
    /// The limit, as the refusal names it: "ulimit -u 32 (this user's
    /// tasks, 20 in use)".
    pub said: String,
}

/// The tighter of two rooms.
fn tighter(a: Option<Room>, b: Option<Room>) -> Option<Room> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.left < a.left { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// The soft limit `resource`, when there is one.
pub fn soft_limit(resource: libc::__rlimit_resource_t) -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a valid rlimit for getrlimit to fill.
    if unsafe { libc::getrlimit(resource, &mut r) } != 0 {
        return None;
    }
    (r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
}

/// A number from a file of /proc or /sys; None for "max" or unreadable.
fn read_num(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// A field of /proc/self/status, in its unit (kB for sizes).
fn status_field(key: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(key))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// This process's cgroup directories for `controller` (v1) or the unified
/// hierarchy (v2), where their files can be read.
fn cgroup_dirs(controller: &str) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string("/proc/self/cgroup") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let base = if ctrls.is_empty() {
            "/sys/fs/cgroup".to_string()
        } else if ctrls.split(',').any(|c| c == controller) {
            format!("/sys/fs/cgroup/{controller}")
        } else {
            continue;
        };
        // In a container the path may be the host's: the mount's own
        // root is then this cgroup.
        for dir in [format!("{base}{path}"), base] {
            if std::path::Path::new(&dir).is_dir() && !out.contains(&dir) {
                out.push(dir);
            }
        }
    }
    out
}

/// Tasks (threads) of this user's processes: what RLIMIT_NPROC counts.
fn user_tasks() -> u64 {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() }.to_string();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut n = 0;
    for e in dir.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else {
            continue;
        };
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .map(str::trim)
                .unwrap_or_default()
                .to_string()
        };
        if field("Uid:").split_whitespace().next() == Some(uid.as_str()) {
            n += field("Threads:").parse::<u64>().unwrap_or(1);
        }
    }
    n
}

/// Threads on the whole machine (the kernel's scheduling entities).
fn machine_tasks() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    s.split_whitespace().nth(3)?.split('/').nth(1)?.parse().ok()
}

/// How many more threads (or processes) this process may start: the
/// tightest of `ulimit -u` (RLIMIT_NPROC, this user's tasks), the
/// kernel's `threads-max` and `pid_max`, the cgroup's `pids.max`, the
/// mappings a thread's stack takes (`vm.max_map_count`) and the address
/// space its stack reserves (`ulimit -v`).
pub fn threads() -> Option<Room> {
    let mut room = soft_limit(libc::RLIMIT_NPROC).map(|limit| {
        let used = user_tasks();
        Room {
            left: limit.saturating_sub(used),
            said: format!("ulimit -u allows {limit} tasks for this user and {used} are in use"),
        }
    });
    if let Some(total) = machine_tasks() {
        for (file, name) in [
            ("/proc/sys/kernel/threads-max", "kernel.threads-max"),
            ("/proc/sys/kernel/pid_max", "kernel.pid_max"),
        ] {
            if let Some(limit) = read_num(file) {
                room = tighter(
                    room,
                    Some(Room {
                        left: limit.saturating_sub(total),
                        said: format!("{name} is {limit} and the machine runs {total} threads"),
                    }),
                );
            }
        }
    }
    for dir in cgroup_dirs("pids") {
        if let (Some(limit), Some(used)) = (
            read_num(&format!("{dir}/pids.max")),
            read_num(&format!("{dir}/pids.current")),
        ) {
            room = tighter(
                room,
                Some(Room {
                    left: limit.saturating_sub(used),
                    said: format!("the cgroup's pids.max is {limit} and {used} are in use"),
                }),
            );
        }
    }
    if let Some(limit) = read_num("/proc/sys/vm/max_map_count") {
        let maps = std::fs::read_to_string("/proc/self/maps")
            .map(|m| m.lines().count() as u64)
            .unwrap_or(0);
        room = tighter(
            room,
            Some(Room {
                left: limit.saturating_sub(maps) / MAPS_PER_THREAD,
                said: format!(
                    "vm.max_map_count is {limit} ({MAPS_PER_THREAD} a thread) and this process has {maps} mappings"
                ),
            }),
        );
    }
    if let Some(left) = address_space_left() {
        room = tighter(
            room,
            Some(Room {
                left: left / THREAD_STACK,
                said: format!(
                    "ulimit -v leaves {} of address space, {} a thread's stack",
                    size(left),
                    size(THREAD_STACK)
                ),
            }),
        );
    }
    room
}

/// The mappings a Rust thread takes: its stack and guard page, and the
/// signal stack (with its own guard) Rust gives every thread to report a
/// stack overflow. Past `vm.max_map_count` the next allocation aborts.
const MAPS_PER_THREAD: u64 = 4;

/// What a thread's stack reserves (Rust's default, 2 MiB).
const THREAD_STACK: u64 = 2 << 20;

/// Address space left under `ulimit -v` (RLIMIT_AS), bytes.
fn address_space_left() -> Option<u64> {
    let limit = soft_limit(libc::RLIMIT_AS)?;
    let used = status_field("VmSize:")? * 1024;
    Some(limit.saturating_sub(used))
}

/// How much more memory this process may take, bytes: the tightest of
/// `ulimit -v` (address space), `ulimit -d` (data), the cgroup's memory
/// limit and what the machine has available.
pub fn memory() -> Option<Room> {
    let mut room = address_space_left().map(|left| Room {
        left,
        said: format!("ulimit -v leaves {} of address space", size(left)),
    });
    if let (Some(limit), Some(used)) = (soft_limit(libc::RLIMIT_DATA), status_field("VmData:")) {
        let left = limit.saturating_sub(used * 1024);
        room = tighter(
            room,
            Some(Room {
                left,
                said: format!("ulimit -d leaves {} of data", size(left)),
            }),
        );
    }
    for dir in cgroup_dirs("memory") {
        let pairs = [
            ("memory.max", "memory.current"),
            ("memory.limit_in_bytes", "memory.usage_in_bytes"),
        ];
        for (max, cur) in pairs {
            if let (Some(limit), Some(used)) = (
                read_num(&format!("{dir}/{max}")),
                read_num(&format!("{dir}/{cur}")),
            ) && limit < 1 << 60
            {
                let left = limit.saturating_sub(used);
                room = tighter(
                    room,
                    Some(Room {
                        left,
                        said: format!("the cgroup's memory limit leaves {}", size(left)),
                    }),
                );
            }
        }
    }
    if let Some(kb) = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))?
            .split_whitespace()
            .next()?
            .parse::<u64>()
            .ok()
    }) {
        room = tighter(
            room,
            Some(Room {
                left: kb * 1024,
                said: format!("the machine has {} available", size(kb * 1024)),
            }),
        );
    }
    room
}

/// How many more file descriptors this process may open (`ulimit -n`).
pub fn descriptors() -> Option<Room> {
    let limit = soft_limit(libc::RLIMIT_NOFILE)?;
    let open = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
    Some(Room {
        left: limit.saturating_sub(open),
        said: format!("ulimit -n allows {limit} and {open} are open"),
    })
}

/// Refuses, in one line, a run that starts `need` threads (`what` says
/// which) where fewer are left; `fix` says what to lower.
pub fn check_threads(need: u64, what: &str, fix: &str) -> Result<()> {
    match threads() {
        Some(r) if need > r.left => Err(Error::usage(format!(
            "{what} needs {need} more threads, but {}; {fix}, or raise the limit",
            r.said
        ))),
        _ => Ok(()),
    }
}

/// Refuses, in one line, a run that needs `need` bytes of memory (`what`
/// says for what) where less is left (a tenth kept for the rest of the
/// process); `fix` says what to lower.
pub fn check_memory(need: u64, what: &str, fix: &str) -> Result<()> {
    match memory() {
        Some(r) if need > r.left / 10 * 9 => Err(Error::usage(format!(
            "{what} needs about {}, but {}; {fix}, or raise the limit",
            size(need),
            r.said
        ))),
        _ => Ok(()),
    }
}

/// Refuses, in one line, a run that opens `need` more file descriptors
/// (`what` says which) where fewer are left; `fix` says what to lower.
pub fn check_descriptors(need: u64, what: &str, fix: &str) -> Result<()> {
    match descriptors() {
        Some(r) if need > r.left => Err(Error::usage(format!(
            "{what} needs {need} more file descriptors, but {}; {fix}, or raise the limit (ulimit -n)",
            r.said
        ))),
        _ => Ok(()),
    }
}

/// A size as a person reads it: 512 KiB, 3.2 MiB, 1.5 GiB.
pub fn size(b: u64) -> String {
    let f = b as f64;
    if b >= 1 << 30 {
        format!("{:.1} GiB", f / (1u64 << 30) as f64)
    } else if b >= 1 << 20 {
        format!("{:.1} MiB", f / (1u64 << 20) as f64)
    } else {
        format!("{} KiB", b.div_ceil(1024))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tighter_room_wins() {
        let r = |left: u64, said: &str| {
            Some(Room {
                left,
                said: said.into(),
            })
        };
        assert_eq!(tighter(r(5, "a"), r(3, "b")).unwrap().said, "b");
        assert_eq!(tighter(r(5, "a"), None).unwrap().said, "a");
        assert_eq!(tighter(None, None), None);
    }

    #[test]
    fn this_process_has_room_and_a_reason() {
        // Every Linux machine has a threads-max and meminfo; the figures
        // are whatever they are, the words must be there.
        let t = threads().expect("some limit on threads");
        assert!(!t.said.is_empty());
        let m = memory().expect("MemAvailable");
        assert!(m.left > 0, "{m:?}");
        assert!(descriptors().is_some());
        assert!(check_threads(u64::MAX, "this test", "lower it").is_err());
        assert!(check_memory(u64::MAX, "this test", "lower it").is_err());
        assert!(check_threads(1, "this test", "lower it").is_ok());
    }
}
