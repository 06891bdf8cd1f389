//! Ctrl-C: the first one asks the run to stop after the current sample and
//! write what it has; a second one ends the process at once.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Installs the handlers (SIGINT, SIGTERM) and returns the stop flag.
pub fn install() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Order matters: the conditional shutdown sees the flag before this
        // signal sets it, so only a second signal exits.
        let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, flag.clone());
        let _ = signal_hook::flag::register(sig, flag.clone());
    }
    flag
}
