//! The MPI process state every MPI user shares: initialised once per process
//! (MPI_THREAD_SINGLE, below), finalised at the end, and the waits with a
//! deadline that keep a dead or stalled rank from hanging the others.

use crate::error::{Error, Result};
use mpi::ffi;
use mpi::topology::SimpleCommunicator;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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
