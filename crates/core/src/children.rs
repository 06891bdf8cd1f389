//! The processes a run starts (a transport's responder, an exec job's
//! program, a load command) end with it, however it ends: a normal stop
//! ends them as their owner does (an exec job's program gets fio's SIGTERM,
//! grace time and SIGKILL); a run that stops without unwinding kills the
//! process groups still listed here; and a run killed outright (SIGKILL,
//! the OOM killer, a crash) takes each child with it by the kernel's
//! parent-death signal, since nothing of the run is left to do it.

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::Mutex;

/// Makes the child get SIGKILL when the thread that spawns it ends (Linux
/// sends the parent-death signal when the creating *thread* goes, not the
/// process): spawn from the thread that also stops the child, or from one
/// that lives as long. A run that died while the child started (before
/// the signal was armed) is seen by the child's parent changing, and the
/// child does not run.
pub fn die_with_parent(cmd: &mut Command) -> &mut Command {
    // SAFETY: getpid takes nothing and cannot fail.
    let parent = unsafe { libc::getpid() };
    // SAFETY: between fork and exec only prctl and getppid run (both
    // async-signal-safe) and the errors are built without allocating.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    }
}

/// Process groups started and not yet ended (each led by a child, its id
/// the child's pid).
struct Groups(Mutex<Vec<i32>>);

impl Groups {
    fn track(&self, pgid: u32) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(pgid as i32);
    }

    fn forget(&self, pgid: u32) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|&g| g != pgid as i32);
    }

    /// SIGKILL to every group listed, emptying the list.
    fn kill_all(&self) {
        let groups = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        for g in groups {
            // SAFETY: signals a process group this process created.
            unsafe { libc::kill(-g, libc::SIGKILL) };
        }
    }
}

/// The run's groups.
static GROUPS: Groups = Groups(Mutex::new(Vec::new()));

/// Lists the process group `pgid` for [`kill_all`].
pub fn track(pgid: u32) {
    GROUPS.track(pgid);
}

/// Takes `pgid` off the list: its owner ended it.
pub fn forget(pgid: u32) {
    GROUPS.forget(pgid);
}

/// Kills (SIGKILL) every process group still listed: for a process about
/// to end without unwinding (a run abandoned on a hung device call or an
/// unanswered signal), which would leave them running. The parent-death
/// signal would end each group's leader, not what the leader started.
pub fn kill_all() {
    GROUPS.kill_all();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Whether `pid` is still a live process (a zombie counts as gone).
    fn alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| !s.rsplit(')').next().unwrap_or("").trim().starts_with('Z'))
    }

    #[test]
    fn a_child_dies_with_the_thread_that_spawned_it() {
        let child = std::thread::spawn(|| {
            let mut cmd = Command::new("sleep");
            cmd.arg("60");
            die_with_parent(&mut cmd).spawn().unwrap()
        })
        .join()
        .unwrap();
        let pid = child.id();
        let t = Instant::now();
        while alive(pid) {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "sleep outlived its parent thread"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(child);
    }

    #[test]
    fn kill_all_ends_every_group_listed_and_forget_takes_one_off() {
        let spawn = || {
            Command::new("sleep")
                .arg("60")
                .process_group(0)
                .spawn()
                .unwrap()
        };
        // A list of the test's own: the process's is shared with the
        // load commands of other tests running beside this one.
        let groups = Groups(Mutex::new(Vec::new()));
        let (mut a, mut b) = (spawn(), spawn());
        groups.track(a.id());
        groups.track(b.id());
        groups.forget(b.id());
        groups.kill_all();
        let t = Instant::now();
        while a.try_wait().unwrap().is_none() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "a group outlived kill_all"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            b.try_wait().unwrap().is_none(),
            "a forgotten group was killed"
        );
        let _ = b.kill();
        let _ = b.wait();
    }
}
