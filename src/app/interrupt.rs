//! SIGINT and SIGTERM: the first one asks the run to stop after the current
//! sample and write what it has; a second one ends the process at once.
//! Either way the exit status is 128 + the signal's number, as a shell
//! reports a process killed by it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// The stop flag, once installed: one per process.
static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Installs the handlers (SIGINT, SIGTERM) once and returns the stop flag.
pub fn install() -> Arc<AtomicBool> {
    FLAG.get_or_init(|| {
        // Raised already (a signal passed on by the supervising parent
        // before the run began): the run stops at once.
        let flag = Arc::new(AtomicBool::new(requested()));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // Order matters: the conditional shutdown sees the flag before
            // this signal sets it, so only a second signal exits.
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, flag.clone());
            // SAFETY: the action is one atomic store, async-signal-safe.
            let _ = unsafe {
                signal_hook::low_level::register(sig, move || {
                    xferbench::error::INTERRUPTED_BY.store(sig, Ordering::Relaxed)
                })
            };
            let _ = signal_hook::flag::register(sig, flag.clone());
        }
        flag
    })
    .clone()
}

/// A signal asked the run to stop (not the run itself raising its stop
/// flag, as a stream job that cannot start does).
pub fn requested() -> bool {
    xferbench::error::INTERRUPTED_BY.load(Ordering::Relaxed) != 0
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
