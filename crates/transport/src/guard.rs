//! Foreign calls that may never return: a device plugin's `wait()` that
//! ignores its timeout, a `submit()` spinning on a full ring, a `close()`
//! joining a worker that is stuck. Such a call cannot be cancelled (it runs
//! foreign code on our thread), so the host does the next best thing: a
//! watchdog notices a call that has run past its bound, names it, and
//! tells whoever supervises the run (the command line writes the results
//! it has and exits); the stuck thread is abandoned, never unwound, and
//! nothing it may still touch is freed.
//!
//! The calling thread pays two plain stores per call (no lock, no clock):
//! a sequence number that is odd while a call is in progress. The watchdog
//! thread samples it every few milliseconds; the same odd value seen for
//! longer than the bound is a hung call.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// A call the host makes into a device, for the message that names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
#[allow(missing_docs)] // the header's operations, by name
pub enum Call {
    Open,
    Caps,
    Alloc,
    Configure,
    Submit,
    Poll,
    Wait,
    CompletionFd,
    Counters,
    Describe,
    Close,
}

impl Call {
    const ALL: [Call; 11] = [
        Call::Open,
        Call::Caps,
        Call::Alloc,
        Call::Configure,
        Call::Submit,
        Call::Poll,
        Call::Wait,
        Call::CompletionFd,
        Call::Counters,
        Call::Describe,
        Call::Close,
    ];

    /// The operation's name in the plugin header.
    pub fn name(self) -> &'static str {
        match self {
            Call::Open => "open",
            Call::Caps => "caps",
            Call::Alloc => "alloc",
            Call::Configure => "configure",
            Call::Submit => "submit",
            Call::Poll => "poll",
            Call::Wait => "wait",
            Call::CompletionFd => "completion_fd",
            Call::Counters => "counters",
            Call::Describe => "options",
            Call::Close => "close",
        }
    }

    /// What the plugin must do instead of hanging, for the message.
    fn rule(self) -> &'static str {
        match self {
            Call::Wait => "wait() must return by its timeout_ns, with *n = 0 if nothing completed",
            Call::Poll => "poll() must return at once, with *n = 0 if nothing completed",
            Call::Submit => "submit() must return at once, XB_BUSY when its queue is full",
            Call::Close => "close() must stop the plugin's threads and return",
            _ => "every operation must return",
        }
    }
}

/// One device's calls, watched. Created per device handle; the device's
/// thread is the only writer of `seq`, `call` and `tag`.
///
/// Aligned to two cache lines, so that its allocation shares no line with
/// the heap's neighbours: `seq` is written twice a call, and a plugin's own
/// state (its ring indices, which its engine thread spins on) is malloc'd
/// from the same heap. Sharing a line cost ~100 ns an echo round trip (the
/// line bouncing between the two cores at every poll).
#[repr(align(128))]
pub struct Guard {
    /// Even: idle; odd: a call is in progress.
    seq: AtomicU64,
    call: AtomicU8,
    /// The last job's tag handed to `submit`, to name the job.
    tag: AtomicU64,
    /// How long one call may take before it is hung, ns.
    bound_ns: AtomicU64,
    /// Who makes the calls ("plugin faulty").
    who: String,
    /// What the device was doing (a point, a stream job), set outside the
    /// timed loop.
    context: Mutex<String>,
    /// Set once the watchdog gave up on this device: nothing may call it,
    /// free what it holds, or wait for it again.
    abandoned: AtomicBool,
}

impl Guard {
    /// A guard for `who`'s calls, each bounded by `bound`; watched from now.
    pub fn new(who: impl Into<String>, bound: Duration) -> Arc<Guard> {
        let g = Arc::new(Guard {
            seq: AtomicU64::new(0),
            call: AtomicU8::new(0),
            tag: AtomicU64::new(u64::MAX),
            bound_ns: AtomicU64::new(bound_ns(bound)),
            who: who.into(),
            context: Mutex::new(String::new()),
            abandoned: AtomicBool::new(false),
        });
        watch(&g);
        g
    }

    /// A call begins. Pair with [`leave`](Guard::leave).
    #[inline(always)]
    pub fn enter(&self, call: Call) {
        self.call.store(call as u8, Ordering::Relaxed);
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s | 1, Ordering::Release);
    }

    /// The call returned.
    #[inline(always)]
    pub fn leave(&self) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store((s | 1) + 1, Ordering::Release);
    }

    /// Notes the tag of the job being submitted, to name it if it hangs.
    #[inline(always)]
    pub fn job(&self, tag: u64) {
        self.tag.store(tag, Ordering::Relaxed);
    }

    /// Runs `f` as one guarded call.
    #[inline(always)]
    pub fn call<T>(&self, call: Call, f: impl FnOnce() -> T) -> T {
        self.enter(call);
        let r = f();
        self.leave();
        r
    }

    /// Says what the device is doing, for the message if a call hangs.
    pub fn set_context(&self, what: impl Into<String>) {
        *self.context.lock().unwrap_or_else(|e| e.into_inner()) = what.into();
    }

    /// Changes the bound (the run's `--timeout`).
    pub fn set_bound(&self, bound: Duration) {
        self.bound_ns.store(bound_ns(bound), Ordering::Relaxed);
    }

    /// How long one call may take (the run's timeout).
    pub fn bound(&self) -> Duration {
        Duration::from_nanos(self.bound_ns.load(Ordering::Relaxed)).saturating_sub(SLACK)
    }

    /// The watchdog gave up on this device.
    pub fn abandoned(&self) -> bool {
        self.abandoned.load(Ordering::Acquire)
    }

    /// Marks the device abandoned and says so, from outside the watchdog
    /// (a close that did not return in time).
    pub fn abandon(&self, call: Call, waited: Duration) -> String {
        self.abandoned.store(true, Ordering::Release);
        self.message(call, waited)
    }

    fn message(&self, call: Call, waited: Duration) -> String {
        let context = self
            .context
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let tag = self.tag.load(Ordering::Relaxed);
        let mut about = Vec::new();
        if !context.is_empty() {
            about.push(context);
        }
        if tag != u64::MAX && matches!(call, Call::Submit | Call::Poll | Call::Wait) {
            about.push(format!("last job submitted: tag {tag}"));
        }
        format!(
            "{}: {}() did not return within {:.1}s{}; the device was abandoned ({})",
            self.who,
            call.name(),
            waited.as_secs_f64(),
            if about.is_empty() {
                String::new()
            } else {
                format!(" ({})", about.join("; "))
            },
            call.rule()
        )
    }
}

/// A hung call's bound: the run's timeout, plus a margin for a wait that
/// returns a little after the deadline it was given.
fn bound_ns(bound: Duration) -> u64 {
    (bound + SLACK).as_nanos().min(u64::MAX as u128) as u64
}

/// What a device call may overrun its deadline by before it is hung.
const SLACK: Duration = Duration::from_millis(100);
/// How often the watchdog looks.
const TICK: Duration = Duration::from_millis(20);

/// What the command line writes when it abandons a run it cannot finish
/// (a device call that never returns, a signal the run does not answer):
/// the last checkpoint of the run, marked stopped by the error. Kept here,
/// below the commands that register one, beside the hangs that call for it.
pub type Writer = Box<dyn FnOnce(&crate::error::Error) + Send>;

/// What to write if the run must be abandoned (set by the measuring
/// commands, replaced at each checkpoint's registration).
static WRITER: Mutex<Option<Writer>> = Mutex::new(None);

/// Set by whoever writes the final output first: the run itself, or the
/// watch abandoning it. The other one then writes nothing.
static CLAIMED: AtomicBool = AtomicBool::new(false);

/// Registers what to write if the run is abandoned.
pub fn on_abandon(w: Writer) {
    *WRITER.lock().unwrap_or_else(|e| e.into_inner()) = Some(w);
}

/// Claims the right to write the run's output: false when the watch has
/// already written it (the caller then writes nothing and waits to be ended).
pub fn claim() -> bool {
    !CLAIMED.swap(true, Ordering::SeqCst)
}

/// The writer registered last, taken (the supervisor calls it once).
pub fn take_writer() -> Option<Writer> {
    WRITER.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// The bound for calls made before a run's options are known (the probe
/// that reads a plugin's capabilities), ns: the run's `--timeout` once set.
static DEFAULT_BOUND_NS: AtomicU64 = AtomicU64::new(10_000_000_000);

/// The bound for calls outside a link (opening a device to read its
/// capabilities): the last [`set_default_bound`], else 10 s.
pub fn default_bound() -> Duration {
    Duration::from_nanos(DEFAULT_BOUND_NS.load(Ordering::Relaxed))
}

/// Sets [`default_bound`] (the run's `--timeout`).
pub fn set_default_bound(d: Duration) {
    DEFAULT_BOUND_NS.store(d.as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
}

/// The first hung call of the process: its message and when it was found.
static HUNG: Mutex<Option<(String, Instant)>> = Mutex::new(None);

/// The hung call the watchdog found, if any, and when: the run it belongs
/// to cannot finish, so its supervisor writes what it has and ends it.
pub fn hung() -> Option<(String, Instant)> {
    HUNG.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Records a hung call (the first one wins).
pub fn report(message: String) {
    let mut h = HUNG.lock().unwrap_or_else(|e| e.into_inner());
    if h.is_none() {
        *h = Some((message, Instant::now()));
    }
}

/// The guards being watched.
static WATCHED: Mutex<Vec<Weak<Guard>>> = Mutex::new(Vec::new());

fn watch(g: &Arc<Guard>) {
    let mut w = WATCHED.lock().unwrap_or_else(|e| e.into_inner());
    w.retain(|g| g.strong_count() > 0);
    w.push(Arc::downgrade(g));
    drop(w);
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let _ = std::thread::Builder::new()
            .name("xb-device-watchdog".into())
            .spawn(watchdog);
    });
}

/// Samples every guard; a call seen in progress (the same odd sequence
/// number) for longer than its bound is hung.
fn watchdog() {
    // Per guard: the in-progress sequence number last seen and since when.
    let mut seen: Vec<(Weak<Guard>, u64, Instant)> = Vec::new();
    loop {
        std::thread::sleep(TICK);
        let now = Instant::now();
        let guards: Vec<Arc<Guard>> = WATCHED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        seen.retain(|(w, _, _)| w.strong_count() > 0);
        for g in guards {
            let s = g.seq.load(Ordering::Acquire);
            let at = seen
                .iter()
                .position(|(w, _, _)| std::ptr::eq(w.as_ptr(), &*g));
            if s & 1 == 0 || g.abandoned() {
                if let Some(i) = at {
                    seen.swap_remove(i);
                }
                continue;
            }
            let since = match at {
                Some(i) if seen[i].1 == s => seen[i].2,
                Some(i) => {
                    seen[i].1 = s;
                    seen[i].2 = now;
                    now
                }
                None => {
                    seen.push((Arc::downgrade(&g), s, now));
                    now
                }
            };
            let bound = g.bound_ns.load(Ordering::Relaxed);
            if now.duration_since(since).as_nanos() as u64 >= bound {
                let call = Call::ALL
                    .get(g.call.load(Ordering::Relaxed) as usize)
                    .copied()
                    .unwrap_or(Call::Wait);
                // Said as the user's --timeout, without the margin.
                let timeout = Duration::from_nanos(bound).saturating_sub(SLACK);
                report(g.abandon(call, timeout));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_past_its_bound_is_named_and_the_device_abandoned() {
        let g = Guard::new("plugin stuck", Duration::from_millis(50));
        g.set_context("request 64 B, reply 64 B");
        g.job(7);
        // Short calls, many of them, are never hung.
        for _ in 0..1000 {
            g.call(Call::Poll, || ());
        }
        std::thread::sleep(Duration::from_millis(300));
        assert!(!g.abandoned());
        g.enter(Call::Wait);
        let t0 = Instant::now();
        while !g.abandoned() && t0.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(g.abandoned(), "not abandoned");
        let (m, _) = hung().expect("reported");
        assert!(m.starts_with("plugin stuck: wait() did not return"), "{m}");
        assert!(m.contains("tag 7") && m.contains("request 64 B"), "{m}");
        g.leave();
    }
}
