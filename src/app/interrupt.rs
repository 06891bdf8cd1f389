//! SIGINT, SIGTERM and SIGHUP: the first one asks the run to stop after the
//! current sample and write what it has; a second SIGINT or SIGTERM ends
//! the process at once. The exit status is 128 + the first signal's number,
//! as a shell reports a process killed by it.
//!
//! A hang-up is a stop like SIGTERM (an ssh session that drops must not
//! lose the run), with two differences. It never quits at once: a terminal
//! that drops sends it more than once (the shell passes on its own, the
//! kernel sends another as the session ends), and the results must still be
//! written. And a terminal that hung up fails every write to it with EIO,
//! where a failed `eprintln!` panics: stdout and stderr, when they are that
//! terminal, are pointed at /dev/null, so the run's last lines go nowhere
//! instead of ending it before its results are written. A SIGHUP ignored
//! when xferbench starts (`nohup`) stays ignored.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};

/// The stop flag, once installed: one per process.
static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Who sent the first signal (its pid; 0 when the kernel did, as for a
/// terminal's Ctrl-C).
static SENDER: AtomicI32 = AtomicI32::new(0);

/// Installs the handlers (SIGINT, SIGTERM, SIGHUP) once and returns the
/// stop flag.
pub fn install() -> Arc<AtomicBool> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    FLAG.get_or_init(|| {
        // Raised already (a signal passed on by the supervising parent
        // before the run began): the run stops at once.
        let flag = Arc::new(AtomicBool::new(requested()));
        // Raised by SIGINT and SIGTERM alone: a hang-up (or the run
        // raising its own stop flag) must not turn the next one into an
        // exit without results.
        let asked = Arc::new(AtomicBool::new(false));
        for sig in [SIGINT, SIGTERM] {
            // Order matters: the conditional shutdown sees the flag before
            // this signal sets it, so only a second signal exits.
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, asked.clone());
            let _ = signal_hook::flag::register(sig, asked.clone());
        }
        if SUPERVISED.load(Ordering::Relaxed) && ignored(SIGHUP) {
            parent_death_under_nohup(&flag);
        }
        let hup = (!ignored(SIGHUP)).then_some(SIGHUP);
        for sig in [SIGINT, SIGTERM].into_iter().chain(hup) {
            let action = move |info: &libc::siginfo_t| {
                // The first signal names the exit status.
                let first = xferbench::error::INTERRUPTED_BY
                    .compare_exchange(0, sig, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok();
                if first {
                    // SAFETY: a sent signal's siginfo carries the sender's
                    // pid (0 when the kernel sent it).
                    SENDER.store(unsafe { info.si_pid() }, Ordering::Relaxed);
                }
                leave_dead_terminal();
            };
            // SAFETY: the action is atomic operations, a read of the
            // siginfo the kernel filled in, and the syscalls of
            // `leave_dead_terminal`: all async-signal-safe.
            let _ = unsafe { signal_hook_registry::register_sigaction(sig, action) };
            let _ = signal_hook::flag::register(sig, flag.clone());
        }
        flag
    })
    .clone()
}

/// Set in the measuring child of a supervised run, before it installs
/// anything: it then has a parent-death signal to take.
static SUPERVISED: AtomicBool = AtomicBool::new(false);

/// Marks this process as a supervised run's measuring child (called as it
/// learns so, first thing in `main`).
pub fn supervised() {
    SUPERVISED.store(true, Ordering::Relaxed);
}

/// The measuring child's parent-death signal where SIGHUP is ignored
/// (`nohup`): a signal nothing else sends, taken as a SIGTERM that never
/// quits at once. The kernel sends a parent-death signal again each time a
/// thread of the dying parent goes, and a second SIGTERM would end the
/// child before it ended the programs it started.
pub const DEATH_UNDER_NOHUP: libc::c_int = libc::SIGUSR2;

/// Catches [`DEATH_UNDER_NOHUP`]: the run stops as on SIGTERM (its status
/// and `stopped_by` say SIGTERM, what killed the supervisor is not known
/// here), however often it comes.
fn parent_death_under_nohup(flag: &Arc<AtomicBool>) {
    let action = |_: &libc::siginfo_t| {
        let _ = xferbench::error::INTERRUPTED_BY.compare_exchange(
            0,
            libc::SIGTERM,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    };
    // SAFETY: the action is one atomic operation: async-signal-safe.
    let _ = unsafe { signal_hook_registry::register_sigaction(DEATH_UNDER_NOHUP, action) };
    let _ = signal_hook::flag::register(DEATH_UNDER_NOHUP, flag.clone());
}

/// A signal asked the run to stop (not the run itself raising its stop
/// flag, as a stream job that cannot start does).
pub fn requested() -> bool {
    signal().is_some()
}

/// The signal that asked the run to stop, if one did.
pub fn signal() -> Option<i32> {
    Some(xferbench::error::INTERRUPTED_BY.load(Ordering::Relaxed)).filter(|&s| s != 0)
}

/// Whether that signal came from this process's parent: under an MPI
/// launcher, the launcher ending the whole job rather than someone
/// stopping this rank alone.
pub fn from_parent() -> bool {
    let sender = SENDER.load(Ordering::Relaxed);
    // SAFETY: getppid takes nothing and cannot fail.
    sender != 0 && sender == unsafe { libc::getppid() }
}

/// Whether `sig` is ignored (SIG_IGN), as `nohup` leaves SIGHUP.
pub(super) fn ignored(sig: libc::c_int) -> bool {
    // SAFETY: a plain C struct, all zeroes a valid value.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads the current one into `old`.
    let read = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) };
    read == 0 && old.sa_sigaction == libc::SIG_IGN
}

/// Points stdout and stderr at /dev/null where they are a terminal that
/// hung up (its every call fails with EIO; a live terminal, a file or a
/// pipe is left alone). Called from a signal handler: syscalls only, no
/// allocation.
fn leave_dead_terminal() {
    for fd in [libc::STDOUT_FILENO, libc::STDERR_FILENO] {
        // SAFETY: a plain C struct, all zeroes a valid value.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: tcgetattr writes only `t`; it is async-signal-safe.
        if unsafe { libc::tcgetattr(fd, &mut t) } == 0 {
            continue;
        }
        // Reads errno (no allocation); signal-hook restores it afterwards.
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EIO) {
            continue;
        }
        // SAFETY: open, dup2 and close are async-signal-safe; the path is
        // a NUL-terminated literal; `fd` is one of the standard streams.
        unsafe {
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if null >= 0 {
                libc::dup2(null, fd);
                libc::close(null);
            }
        }
    }
}

/// Acts on `sig` as its first delivery here would: the supervising parent
/// was signalled (a `kill` of the process the user started) and passes it
/// on. A signal the terminal sent to both processes arrives here first
/// (the parent's word comes through a thread and a pipe) and is taken once.
pub fn raise(sig: i32) {
    xferbench::error::INTERRUPTED_BY
        .compare_exchange(0, sig, Ordering::Relaxed, Ordering::Relaxed)
        .ok();
    if let Some(f) = FLAG.get() {
        f.store(true, Ordering::Relaxed);
    }
}
