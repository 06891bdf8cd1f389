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
//!
//! A call may also crash the process (a plugin's segfault, `abort()`,
//! `exit()`). Those words then live in memory a supervising process maps
//! too ([`Flight`]), so that it can say which device and call were in
//! progress when this process died: the same stores, in another page.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
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
    /// The call numbered `n` (as stored), if it is one.
    fn from_u8(n: u8) -> Option<Call> {
        Call::ALL.get(n as usize).copied()
    }

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
/// thread is the only writer of its words' `seq`, `call` and `tag`.
///
/// Aligned to two cache lines as its `Words` are (see there): every call
/// reads where they are from here, and a line shared with a plugin's heap
/// state would bounce between the cores on that read.
#[repr(align(128))]
pub struct Guard {
    /// What each call writes, apart from the rest: see [`Words`].
    words: &'static Words,
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

/// A device's hot words: what its thread writes on every call, and what
/// names the device for a supervising process that reads them after this
/// one died. Taken from a pool ([`Flight`]'s shared slots when this process
/// is supervised, the heap otherwise) and given back when the guard goes.
///
/// Aligned to four cache lines, so that it shares no line with the heap's
/// neighbours nor with another device's words: `seq` is written twice a
/// call, and a plugin's own state (its ring indices, which its engine
/// thread spins on) is malloc'd from the same heap. Sharing a line cost
/// ~100 ns an echo round trip (the line bouncing between the two cores at
/// every poll).
#[repr(C, align(256))]
struct Words {
    /// Even: idle; odd: a call is in progress.
    seq: AtomicU64,
    /// The last job's tag handed to `submit`, to name the job.
    tag: AtomicU64,
    call: AtomicU8,
    /// 1 while a guard holds these words (the device is open).
    held: AtomicU8,
    /// 1 while the device's close runs (on a thread of its own, so not
    /// through `seq`, which only the device's thread writes).
    closing: AtomicU8,
    /// 1 once the device was abandoned (its call hung): not in progress.
    lost: AtomicU8,
    who_len: AtomicU8,
    context_len: AtomicU8,
    who: [AtomicU8; WHO],
    context: [AtomicU8; CONTEXT],
}

/// Bytes of a device's name kept for a supervising process.
const WHO: usize = 64;
/// Bytes of what the device was doing kept for a supervising process.
const CONTEXT: usize = 160;

impl Words {
    const fn new() -> Words {
        Words {
            seq: AtomicU64::new(0),
            tag: AtomicU64::new(u64::MAX),
            call: AtomicU8::new(0),
            held: AtomicU8::new(0),
            closing: AtomicU8::new(0),
            lost: AtomicU8::new(0),
            who_len: AtomicU8::new(0),
            context_len: AtomicU8::new(0),
            who: [const { AtomicU8::new(0) }; WHO],
            context: [const { AtomicU8::new(0) }; CONTEXT],
        }
    }
}

/// Stores `text` (cut at a character boundary to fit) in `bytes`.
fn put(bytes: &[AtomicU8], len: &AtomicU8, text: &str) {
    let mut n = text.len().min(bytes.len());
    while !text.is_char_boundary(n) {
        n -= 1;
    }
    for (b, &x) in bytes.iter().zip(&text.as_bytes()[..n]) {
        b.store(x, Ordering::Relaxed);
    }
    len.store(n as u8, Ordering::Release);
}

/// The text [`put`] stored.
fn get(bytes: &[AtomicU8], len: &AtomicU8) -> String {
    let n = (len.load(Ordering::Acquire) as usize).min(bytes.len());
    let v: Vec<u8> = bytes[..n]
        .iter()
        .map(|b| b.load(Ordering::Relaxed))
        .collect();
    String::from_utf8_lossy(&v).into_owned()
}

/// Words no guard holds. Shared slots go in when this process attaches to
/// its supervisor's [`Flight`]; heap words are made only when it is empty,
/// and come back here rather than being freed, so there are never more
/// than the most guards alive at once.
static POOL: Mutex<Vec<&'static Words>> = Mutex::new(Vec::new());

fn take_words(who: &str) -> &'static Words {
    let pooled = POOL.lock().unwrap_or_else(|e| e.into_inner()).pop();
    let w = pooled.unwrap_or_else(|| Box::leak(Box::new(Words::new())));
    put(&w.who, &w.who_len, who);
    w.held.store(1, Ordering::Release);
    w
}

fn give_back(w: &'static Words) {
    w.held.store(0, Ordering::Release);
    w.seq.store(0, Ordering::Relaxed);
    w.tag.store(u64::MAX, Ordering::Relaxed);
    w.call.store(0, Ordering::Relaxed);
    w.closing.store(0, Ordering::Relaxed);
    w.lost.store(0, Ordering::Relaxed);
    w.who_len.store(0, Ordering::Relaxed);
    w.context_len.store(0, Ordering::Relaxed);
    POOL.lock().unwrap_or_else(|e| e.into_inner()).push(w);
}

impl Drop for Guard {
    fn drop(&mut self) {
        give_back(self.words);
    }
}

impl Guard {
    /// A guard for `who`'s calls, each bounded by `bound`; watched from now.
    pub fn new(who: impl Into<String>, bound: Duration) -> Arc<Guard> {
        let who = who.into();
        let g = Arc::new(Guard {
            words: take_words(&who),
            bound_ns: AtomicU64::new(bound_ns(bound)),
            who,
            context: Mutex::new(String::new()),
            abandoned: AtomicBool::new(false),
        });
        watch(&g);
        g
    }

    /// A call begins. Pair with [`leave`](Guard::leave).
    #[inline(always)]
    pub fn enter(&self, call: Call) {
        let w = self.words;
        w.call.store(call as u8, Ordering::Relaxed);
        let s = w.seq.load(Ordering::Relaxed);
        w.seq.store(s | 1, Ordering::Release);
    }

    /// The call returned.
    #[inline(always)]
    pub fn leave(&self) {
        let w = self.words;
        let s = w.seq.load(Ordering::Relaxed);
        w.seq.store((s | 1) + 1, Ordering::Release);
    }

    /// Notes the tag of the job being submitted, to name it if it hangs.
    #[inline(always)]
    pub fn job(&self, tag: u64) {
        self.words.tag.store(tag, Ordering::Relaxed);
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
        let what = what.into();
        put(&self.words.context, &self.words.context_len, &what);
        *self.context.lock().unwrap_or_else(|e| e.into_inner()) = what;
    }

    /// The device's close runs (`true`) or returned (`false`), on the
    /// thread that closes it: said to a supervising process only, since
    /// close has its own bound (the caller waits for it).
    pub fn closing(&self, running: bool) {
        self.words.closing.store(running as u8, Ordering::Release);
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
        self.words.lost.store(1, Ordering::Release);
        self.message(call, waited)
    }

    fn message(&self, call: Call, waited: Duration) -> String {
        let context = self
            .context
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        format!(
            "{}: {}() did not return within {:.1}s{}; the device was abandoned ({})",
            self.who,
            call.name(),
            waited.as_secs_f64(),
            about(context, self.words.tag.load(Ordering::Relaxed), call),
            call.rule()
        )
    }
}

/// " (what the device was doing; last job submitted: tag N)", or nothing.
fn about(context: String, tag: u64, call: Call) -> String {
    let mut about = Vec::new();
    if !context.is_empty() {
        about.push(context);
    }
    if tag != u64::MAX && matches!(call, Call::Submit | Call::Poll | Call::Wait) {
        about.push(format!("last job submitted: tag {tag}"));
    }
    if about.is_empty() {
        String::new()
    } else {
        format!(" ({})", about.join("; "))
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
/// A supervising process is told, so that it writes nothing over it.
pub fn claim() -> bool {
    let won = !CLAIMED.swap(true, Ordering::SeqCst);
    if won && let Some(s) = SUPERVISOR.get() {
        s.claimed();
    }
    won
}

/// The process that supervises this one, which outlives its crash (the
/// command line re-executes itself as a child that measures): what it is
/// told, always outside a timed loop.
pub trait Supervisor: Send + Sync {
    /// The run so far, serialized: what the supervisor writes, marked
    /// incomplete, if this process dies before writing its results.
    fn checkpoint(&self, state: &[u8]);
    /// This process writes its results itself from now on.
    fn claimed(&self);
}

static SUPERVISOR: OnceLock<Box<dyn Supervisor>> = OnceLock::new();

/// Registers this process's supervisor (once; later calls are ignored).
pub fn supervised_by(s: Box<dyn Supervisor>) {
    let _ = SUPERVISOR.set(s);
}

/// Another process keeps this one's checkpoints: worth serializing them.
pub fn supervised() -> bool {
    SUPERVISOR.get().is_some()
}

/// Hands the run so far to the supervisor, if there is one.
pub fn checkpoint(state: &[u8]) {
    if let Some(s) = SUPERVISOR.get() {
        s.checkpoint(state);
    }
}

/// Slots in a [`Flight`]: devices open at once that a supervisor can name
/// (more are still guarded, with words from the heap, unnamed).
const SLOTS: usize = 64;
const FLIGHT_BYTES: usize = SLOTS * std::mem::size_of::<Words>();

/// The words of every device of a supervised process, in memory its
/// supervisor maps too: after the process died, what was in progress.
/// The supervisor creates it and hands its descriptor to the child, which
/// [`attach`]es it before any device opens.
pub struct Flight {
    base: NonNull<Words>,
    fd: OwnedFd,
}

impl Flight {
    /// A new, empty region, mapped here.
    pub fn create() -> std::io::Result<Flight> {
        // SAFETY: a NUL-terminated name and flags; the fd is checked.
        let fd = unsafe { libc::memfd_create(c"xferbench-flight".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a descriptor just created, owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: a valid descriptor and a size.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), FLIGHT_BYTES as libc::off_t) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let base = map(fd.as_fd())?;
        for i in 0..SLOTS {
            // SAFETY: as in `Flight::read`; no child holds the region yet.
            let w = unsafe { &*base.as_ptr().add(i) };
            // A zero page says "tag 0": no job was submitted is u64::MAX.
            w.tag.store(u64::MAX, Ordering::Relaxed);
        }
        Ok(Flight { base, fd })
    }

    /// The descriptor a child attaches.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// What the devices were doing, read after the process that holds them
    /// died: the calls in progress (`plugin x: submit() (request 64 B…)`),
    /// and the devices open with no call in progress.
    pub fn read(&self) -> InFlight {
        let mut out = InFlight::default();
        for i in 0..SLOTS {
            // SAFETY: the mapping lives as long as self, holds SLOTS words
            // (page-aligned, so each is aligned), and any bytes are valid
            // atomics.
            let w = unsafe { &*self.base.as_ptr().add(i) };
            if w.held.load(Ordering::Acquire) == 0 || w.lost.load(Ordering::Acquire) != 0 {
                continue;
            }
            let who = get(&w.who, &w.who_len);
            let call = Call::from_u8(w.call.load(Ordering::Relaxed));
            match call {
                Some(call) if w.seq.load(Ordering::Acquire) & 1 == 1 => {
                    let context = get(&w.context, &w.context_len);
                    let tag = w.tag.load(Ordering::Relaxed);
                    out.calls.push(format!(
                        "{who}: {}(){}",
                        call.name(),
                        about(context, tag, call)
                    ));
                }
                _ if w.closing.load(Ordering::Acquire) != 0 => {
                    out.calls.push(format!("{who}: close()"));
                }
                _ => out.open.push(who),
            }
        }
        out
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        // SAFETY: mapped by `map` with this length; nothing borrows it past self.
        unsafe { libc::munmap(self.base.as_ptr().cast(), FLIGHT_BYTES) };
    }
}

/// What a [`Flight`] says of the devices of a process that died.
#[derive(Debug, Default)]
pub struct InFlight {
    /// Each call in progress, named with its device and what it was doing.
    pub calls: Vec<String>,
    /// Devices open with no call in progress.
    pub open: Vec<String>,
}

impl InFlight {
    /// ", in plugin x: submit() (…)", ", while plugin x was open (no call
    /// into it in progress)", or nothing: to follow what happened.
    pub fn phrase(&self) -> String {
        if !self.calls.is_empty() {
            format!(", in {}", self.calls.join(", and in "))
        } else if !self.open.is_empty() {
            format!(
                ", while {} {} open (no call into {} in progress)",
                self.open.join(", "),
                if self.open.len() == 1 { "was" } else { "were" },
                if self.open.len() == 1 { "it" } else { "them" }
            )
        } else {
            String::new()
        }
    }
}

fn map(fd: BorrowedFd<'_>) -> std::io::Result<NonNull<Words>> {
    // SAFETY: a fresh shared mapping of a descriptor at least FLIGHT_BYTES long.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            FLIGHT_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    NonNull::new(p.cast()).ok_or_else(|| std::io::Error::other("mmap returned NULL"))
}

/// Maps the supervisor's [`Flight`] (its descriptor, inherited) and makes
/// its slots the words of the devices opened from now on. The mapping is
/// kept for the life of the process.
pub fn attach(fd: OwnedFd) -> std::io::Result<()> {
    let base = map(fd.as_fd())?;
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    // Reversed: the pool is taken from its end, so slot 0 goes first.
    for i in (0..SLOTS).rev() {
        // SAFETY: as in `Flight::read`; the mapping is never unmapped, so
        // the words are 'static, and each is handed to one guard at a time.
        pool.push(unsafe { &*base.as_ptr().add(i) });
    }
    Ok(())
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
            let s = g.words.seq.load(Ordering::Acquire);
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
                let call =
                    Call::from_u8(g.words.call.load(Ordering::Relaxed)).unwrap_or(Call::Wait);
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
