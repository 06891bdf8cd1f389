//! The MPI process state every MPI user shares: initialised once per process
//! (MPI_THREAD_SINGLE, below), finalised at the end, and the waits with a
//! deadline that keep a dead or stalled rank from hanging the others.

use crate::error::{Error, Result};
use mpi::ffi;
use mpi::topology::SimpleCommunicator;
use std::cell::RefCell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The tag of a rank's word to rank 0 that a signal stopped it and it
/// leaves the job: what rank 0 needs to write its results, naming that
/// rank, before the launcher (which ends the whole job once one rank
/// exits) ends it too.
const TAG_LEAVE: i32 = 106;

/// How long a busy wait on rank 0 runs before it also looks for a rank's
/// word that it leaves.
const LEAVE_PROBE_AFTER: Duration = Duration::from_millis(10);

thread_local! {
    /// MPI is initialised once per process and finalised when it ends.
    static UNIVERSE: RefCell<Option<mpi::environment::Universe>> = const { RefCell::new(None) };
}

/// MPI_COMM_WORLD, initialising MPI on first use.
///
/// It asks for MPI_THREAD_SINGLE, as osu_latency's `MPI_Init` does. At any
/// higher level (funneled included) Open MPI 4 takes a lock around every
/// call and its progress loop, which cost ~120 ns a 16-byte round trip here
/// (a C ping-pong: 400 ns at single, 520 ns at funneled or serialized), a
/// third of the figure being measured. xferbench's own threads never call
/// MPI at the same time: the universe is thread-local, a link or group is
/// used by one thread at a time, and the thread that opened it waits while
/// another (`load`'s connection thread) drives it. Open MPI's own helper
/// threads lock for themselves at every level.
pub fn world() -> Result<SimpleCommunicator> {
    UNIVERSE.with(|u| {
        let mut u = u.borrow_mut();
        if u.is_none() {
            let (univ, _) =
                mpi::initialize_with_threading(mpi::Threading::Single).ok_or_else(|| {
                    Error::run("MPI was already initialised and finalised in this process")
                })?;
            *u = Some(univ);
        }
        Ok(u.as_ref().expect("set above").world())
    })
}

/// The world if MPI was initialised in this process.
pub fn initialised() -> Option<SimpleCommunicator> {
    UNIVERSE.with(|u| u.borrow().as_ref().map(|u| u.world()))
}

pub fn finalize() {
    UNIVERSE.with(|u| drop(u.borrow_mut().take()));
}

/// Ends every rank of the job with `code` (MPI_Abort): what a rank does once
/// it has written what it could and another rank no longer answers, since
/// MPI gives no way to finish a job around a dead rank.
pub fn abort(code: i32) -> ! {
    // SAFETY: MPI_Abort takes the world communicator and never returns.
    unsafe {
        ffi::MPI_Abort(ffi::RSMPI_COMM_WORLD, code);
    }
    std::process::exit(code)
}

/// How long one wait may take, and what to say when it runs out.
pub struct Deadline<'a> {
    /// The longest one wait may take: a peer silent this long is gone.
    pub limit: Duration,
    /// "rank 3 to answer the latency ping-pong": completes "timed out waiting for …".
    pub what: &'a dyn Fn() -> String,
    pub stop: &'a AtomicBool,
    /// Rank 0's waits also end when another rank says it leaves ([`left`]).
    pub leaves: bool,
    /// The wait may be long (a barrier while other pairs measure): sleep
    /// between tests after a millisecond, leaving the CPU to the ranks that
    /// measure.
    pub idle: bool,
}

impl Deadline<'_> {
    /// Fails once the deadline has passed or a stop was asked for; sleeps a
    /// little in an idle wait.
    pub fn check(&self, start: Instant) -> Result<()> {
        let now = Instant::now();
        if self.stop.load(Ordering::Relaxed) {
            return Err(Error::Interrupted);
        }
        // Probed in an idle wait, or one already long (a peer late), never
        // in the ping-pong's hot loop: a probe is an MPI call of its own.
        if self.leaves
            && (self.idle || now - start >= LEAVE_PROBE_AFTER)
            && let Some(gone) = left()
        {
            return Err(Error::run(gone.to_string()));
        }
        if now - start >= self.limit {
            return Err(Error::run(format!(
                "timed out after {} waiting for {}",
                humantime::format_duration(round_ms(now - start)),
                (self.what)()
            )));
        }
        // Idle: sleep at once, longer the longer the wait (20 µs up to
        // 2 ms), so the ranks that measure keep the cores.
        if self.idle {
            std::thread::sleep(
                ((now - start) / 16).clamp(Duration::from_micros(20), Duration::from_millis(2)),
            );
        }
        Ok(())
    }
}

/// A rank that left the job, as rank 0 heard it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Left {
    pub rank: usize,
    /// The signal that stopped it.
    pub signal: i32,
}

impl std::fmt::Display for Left {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rank {} left the job (stopped by signal {}{}), so its pairs and those not yet measured are missing",
            self.rank,
            self.signal,
            match self.signal {
                libc::SIGINT => ", SIGINT",
                libc::SIGTERM => ", SIGTERM",
                libc::SIGHUP => ", SIGHUP",
                _ => "",
            }
        )
    }
}

/// The first rank that said it leaves the job (rank 0 only; `None` until
/// one does). Its word is received once and kept: every later wait fails
/// on it as the first did.
pub fn left() -> Option<Left> {
    static LEFT: OnceLock<Left> = OnceLock::new();
    if let Some(l) = LEFT.get() {
        return Some(*l);
    }
    let mut flag = 0;
    let mut st = std::mem::MaybeUninit::<ffi::MPI_Status>::uninit();
    let mut sig = [0i32; 1];
    // SAFETY: a probe on the world communicator, then (when it found a
    // message) the blocking receive of that very message, which is in,
    // into a buffer of its size; MPI fills `st` in when flag is set.
    let source = unsafe {
        ffi::MPI_Iprobe(
            ffi::RSMPI_ANY_SOURCE,
            TAG_LEAVE,
            ffi::RSMPI_COMM_WORLD,
            &mut flag,
            st.as_mut_ptr(),
        );
        if flag == 0 {
            return None;
        }
        let source = st.assume_init().MPI_SOURCE;
        ffi::MPI_Recv(
            sig.as_mut_ptr() as *mut std::os::raw::c_void,
            4,
            ffi::RSMPI_UINT8_T,
            source,
            TAG_LEAVE,
            ffi::RSMPI_COMM_WORLD,
            ffi::RSMPI_STATUS_IGNORE,
        );
        source
    };
    Some(*LEFT.get_or_init(|| Left {
        rank: source.max(0) as usize,
        signal: sig[0],
    }))
}

/// Tells rank 0 that `signal` stopped this rank and it leaves the job:
/// one small message, waited for at most a second (rank 0 may be gone).
/// Rank 0 itself, or a process without MPI, sends nothing.
pub fn leave(signal: i32) {
    let Some(w) = initialised() else { return };
    if mpi::traits::Communicator::rank(&w) == 0 {
        return;
    }
    // Leaked: a send still posted after the wait may read it.
    let word: &'static mut [i32; 1] = Box::leak(Box::new([signal]));
    // SAFETY: as `isend` in the group: a C `const` static, never written.
    let mut r = unsafe { ffi::RSMPI_REQUEST_NULL };
    // SAFETY: a 4-byte send from a leaked buffer to rank 0.
    unsafe {
        ffi::MPI_Isend(
            word.as_ptr() as *const std::os::raw::c_void,
            4,
            ffi::RSMPI_UINT8_T,
            0,
            TAG_LEAVE,
            ffi::RSMPI_COMM_WORLD,
            &mut r,
        );
    }
    let what = || "rank 0 to hear that this rank leaves".to_string();
    let never = AtomicBool::new(false);
    let dl = Deadline {
        limit: Duration::from_secs(1),
        what: &what,
        stop: &never,
        leaves: false,
        idle: true,
    };
    let _ = wait_all(&mut [r], &dl);
}

fn round_ms(d: Duration) -> Duration {
    Duration::from_millis(d.as_millis() as u64)
}

/// Waits until every request completes, or fails once it has waited the
/// deadline's limit (counted from the first check, a few hundred tests in,
/// so the hot loop reads no clock). On a
/// timeout the requests stay posted: the buffers they name must outlive the
/// process (the mesh leaks its buffers), and the caller ends the job.
pub fn wait_all(reqs: &mut [ffi::MPI_Request], dl: &Deadline) -> Result<()> {
    let mut start = None;
    let mut spins: u32 = 0;
    loop {
        let mut flag = 0;
        // SAFETY: the requests are live handles from MPI_Isend/Irecv/Ibarrier
        // (or MPI_REQUEST_NULL once complete).
        unsafe {
            if let [one] = reqs {
                // The ping-pong's case: MPI_Test skips Testall's array walk.
                ffi::MPI_Test(one, &mut flag, ffi::RSMPI_STATUS_IGNORE);
            } else {
                ffi::MPI_Testall(
                    reqs.len() as i32,
                    reqs.as_mut_ptr(),
                    &mut flag,
                    ffi::RSMPI_STATUSES_IGNORE,
                );
            }
        }
        if flag != 0 {
            return Ok(());
        }
        spins = spins.wrapping_add(1);
        if dl.idle || spins.is_multiple_of(256) {
            dl.check(*start.get_or_insert_with(Instant::now))?;
        }
    }
}
