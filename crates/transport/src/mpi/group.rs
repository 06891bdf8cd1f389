//! Many ranks at once: the exchanges the pair measurements of `mesh` and
//! `curve --pairs` are made of (a ping-pong, a window of messages closed
//! by an acknowledgement, the count the leader announces) and the little
//! collectives around them (a barrier, gather to rank 0, a word from rank
//! 0), every one of them waiting with a deadline so a stalled rank ends the
//! run instead of hanging it. The timed loops over these exchanges, and
//! what they record, are the library's (`experiment/mesh/timed.rs`), as a
//! link's are (`experiment/sample.rs`): this crate times nothing.
//!
//! The calls are MPI's non-blocking ones polled with MPI_Test, which spins
//! as MPI_Recv does internally. Buffers are allocated once and leaked: a
//! request still posted when a wait times out may name them until the job
//! is aborted.

use super::world::{self, Deadline, wait_all};
use crate::error::{Error, Result};
use mpi::ffi::{self, MPI_Request};
use mpi::traits::Communicator;
use std::os::raw::c_void;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

const TAG_CTRL: i32 = 101;
const TAG_DATA: i32 = 102;
const TAG_ACK: i32 = 103;
const TAG_GATHER: i32 = 104;
const TAG_WORD: i32 = 105;

/// The requests of one window, allocated once by the caller so a timed
/// loop of windows allocates nothing.
pub struct Requests(Vec<MPI_Request>);

impl Requests {
    /// Room for a window of `window` messages and its acknowledgement.
    pub fn new(window: u32) -> Requests {
        Requests(Vec::with_capacity(window as usize + 1))
    }
}

/// MPI_COMM_WORLD with the buffers and deadlines the pair measurements use.
pub struct Group {
    rank: usize,
    size: usize,
    buf: *mut u8,
    /// Where a ping-pong's leader receives the pong, apart from `buf`,
    /// which its ping is still being sent from when the receive is posted.
    pong: *mut u8,
    pong_cap: usize,
    word: *mut u64,
    timeout: Duration,
    /// Busy time added before each message this rank sends (the injected
    /// slow rank of a test); 0 on every other rank.
    delay: Duration,
    stop: std::sync::Arc<AtomicBool>,
}

impl Group {
    /// Joins the job: needs at least two ranks. `cap` is the largest
    /// message, `pong_cap` the largest of the latency ping-pongs.
    pub fn open(
        cap: usize,
        pong_cap: usize,
        timeout: Duration,
        stop: std::sync::Arc<AtomicBool>,
    ) -> Result<Group> {
        if cap > i32::MAX as usize {
            return Err(Error::usage(
                "MPI messages here are at most 2 GiB - 1 bytes; choose smaller sizes",
            ));
        }
        let w = world::world()?;
        // Leaked on purpose (see the module comment). Page-aligned and
        // written: untouched pages would all be the kernel's zero page, read
        // from cache, and inflate bandwidth.
        let leak = |n: usize| {
            Box::leak(Box::new(crate::buffer::PageBuf::filled(n.max(64), 0x5a))).as_mut_ptr()
        };
        let pong_cap = pong_cap.min(cap).max(64);
        let (buf, pong) = (leak(cap), leak(pong_cap));
        let word = Box::leak(Box::new([0u64; 8])).as_mut_ptr();
        Ok(Group {
            rank: w.rank() as usize,
            size: w.size() as usize,
            buf,
            pong,
            pong_cap,
            word,
            timeout,
            delay: Duration::ZERO,
            stop,
        })
    }

    /// Busy time this rank adds before each message it sends (a test's
    /// injected slow rank).
    pub fn set_delay(&mut self, d: Duration) {
        self.delay = d;
    }

    /// Ctrl-C (or the launcher's SIGTERM) arrived.
    pub fn stopped(&self) -> bool {
        self.stop.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The rank that said it leaves the job, a signal having stopped it
    /// (rank 0 hears it; `None` on the others).
    pub fn left(&self) -> Option<world::Left> {
        if self.rank == 0 { world::left() } else { None }
    }

    pub fn rank(&self) -> usize {
        self.rank
    }

    pub fn size(&self) -> usize {
        self.size
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The largest ping-pong this group was opened for.
    pub fn pong_cap(&self) -> usize {
        self.pong_cap
    }

    /// The deadline of one wait: the timeout plus `extra` (a long window's
    /// own time), ending early on a stop or, on rank 0, a rank leaving.
    pub fn deadline<'a>(&'a self, what: &'a dyn Fn() -> String, extra: Duration) -> Deadline<'a> {
        Deadline {
            limit: self.timeout + extra,
            what,
            stop: &self.stop,
            leaves: self.rank == 0,
            idle: false,
        }
    }

    fn isend(&self, ptr: *const u8, len: usize, peer: usize, tag: i32) -> MPI_Request {
        // SAFETY: reads an extern static that mpi-sys's C shim defines as
        // `const MPI_Request RSMPI_REQUEST_NULL = MPI_REQUEST_NULL`: always
        // initialised, never written, so the read races with nothing.
        let mut r = unsafe { ffi::RSMPI_REQUEST_NULL };
        // SAFETY: ptr..ptr+len lies in a leaked buffer (or a live local the
        // caller waits on); len ≤ i32::MAX was checked at open.
        unsafe {
            ffi::MPI_Isend(
                ptr as *const c_void,
                len as i32,
                ffi::RSMPI_UINT8_T,
                peer as i32,
                tag,
                ffi::RSMPI_COMM_WORLD,
                &mut r,
            );
        }
        r
    }

    fn irecv(&self, ptr: *mut u8, len: usize, peer: usize, tag: i32) -> MPI_Request {
        // SAFETY: as in `isend`: a C `const` static, initialised and never written.
        let mut r = unsafe { ffi::RSMPI_REQUEST_NULL };
        // SAFETY: as isend.
        unsafe {
            ffi::MPI_Irecv(
                ptr as *mut c_void,
                len as i32,
                ffi::RSMPI_UINT8_T,
                peer as i32,
                tag,
                ffi::RSMPI_COMM_WORLD,
                &mut r,
            );
        }
        r
    }

    /// The injected delay, spun (a sleep would give the core away).
    #[inline]
    fn lag(&self, times: u32) {
        if !self.delay.is_zero() {
            let until = Instant::now() + self.delay * times;
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        }
    }

    /// The leader tells the follower how many exchanges of `size` come next
    /// (`phase` keeps the two in step); the follower gets the leader's `n`.
    pub fn announce(
        &self,
        peer: usize,
        lead: bool,
        phase: u64,
        size: usize,
        n: u64,
    ) -> Result<u64> {
        let what = || format!("rank {peer} to agree on the next measurement");
        let dl = self.deadline(&what, Duration::ZERO);
        // SAFETY: `word` is a leaked [u64; 8].
        let w = unsafe { std::slice::from_raw_parts_mut(self.word, 3) };
        if lead {
            w.copy_from_slice(&[phase, size as u64, n]);
            let mut r = [self.isend(self.word as *const u8, 24, peer, TAG_CTRL)];
            wait_all(&mut r, &dl)?;
            Ok(n)
        } else {
            let mut r = [self.irecv(self.word as *mut u8, 24, peer, TAG_CTRL)];
            wait_all(&mut r, &dl)?;
            if w[0] != phase || w[1] != size as u64 {
                return Err(Error::run(format!(
                    "rank {peer} and rank {} are out of step (phase {} size {} vs {phase} {size}); were both started with the same command line?",
                    self.rank, w[0], w[1]
                )));
            }
            Ok(w[2])
        }
    }

    /// `n` ping-pongs, untimed: the leader sends each ping and waits for
    /// its pong ([`Self::pingpong`] n times); the follower posts the next
    /// ping's receive right after each pong, well before that ping can
    /// come.
    pub fn pingpongs(
        &self,
        peer: usize,
        lead: bool,
        size: usize,
        n: u64,
        dl: &Deadline,
    ) -> Result<()> {
        if lead {
            for _ in 0..n {
                self.pingpong(peer, size, dl, || {})?;
            }
            return Ok(());
        }
        self.answer(peer, size, n, dl)
    }

    /// The leader's one ping-pong: the ping sent, the pong's receive posted
    /// right after it; `pong_in` runs the moment the pong is in, which is
    /// where a timed loop stops its clock (the follower runs
    /// [`Self::pingpongs`] meanwhile). Inlined into that loop, so the call
    /// adds nothing to the time.
    #[inline]
    pub fn pingpong(
        &self,
        peer: usize,
        size: usize,
        dl: &Deadline,
        pong_in: impl FnOnce(),
    ) -> Result<()> {
        self.lag(1);
        // The ping first, as a blocking MPI_Send would: posting the
        // receive before it put a call (~15 ns one-way, measured against
        // osu_latency's loop) ahead of every ping. The pong needs a round
        // trip to come back and the receive is posted a call later; a pong
        // that still came first (this rank preempted) waits in MPI's
        // unexpected queue, as it would for a blocking MPI_Recv.
        let mut tx = self.isend(self.buf, size, peer, TAG_DATA);
        let mut rx = self.irecv(self.pong, size, peer, TAG_DATA);
        // The round trip ends when the pong is in: the ping has arrived by
        // then, and what is left of its send request is bookkeeping, done
        // after `pong_in` (a blocking MPI_Send has no request to free).
        wait_all(std::slice::from_mut(&mut rx), dl)?;
        pong_in();
        wait_all(std::slice::from_mut(&mut tx), dl)
    }

    /// The follower's side of `n` ping-pongs.
    fn answer(&self, peer: usize, size: usize, n: u64, dl: &Deadline) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        // The pong leaves as soon as the ping is in, and only then is the
        // next ping's receive posted: that ping cannot leave the leader
        // before this pong has arrived there (a one-way time later), so the
        // receive is still posted first and no message waits in MPI's
        // unexpected queue, while posting it earlier would delay every pong
        // by a call. The send completes before the buffer is received into
        // again.
        let mut rx = self.irecv(self.buf, size, peer, TAG_DATA);
        for i in 0..n {
            wait_all(std::slice::from_mut(&mut rx), dl)?;
            self.lag(1);
            wait_all(&mut [self.isend(self.buf, size, peer, TAG_DATA)], dl)?;
            if i + 1 < n {
                rx = self.irecv(self.buf, size, peer, TAG_DATA);
            }
        }
        Ok(())
    }

    /// One window: the leader sends `window` messages of `size` and waits
    /// for the follower's acknowledgement of the last; the follower
    /// receives them all, then acknowledges.
    pub fn window(
        &self,
        peer: usize,
        lead: bool,
        size: usize,
        window: u32,
        dl: &Deadline,
        reqs: &mut Requests,
    ) -> Result<()> {
        let reqs = &mut reqs.0;
        reqs.clear();
        // SAFETY: `word` is a leaked [u64; 8]; word[4] carries the ack.
        let ack = unsafe { self.word.add(4) } as *mut u8;
        if lead {
            reqs.push(self.irecv(ack, 1, peer, TAG_ACK));
            for _ in 0..window {
                self.lag(1);
                reqs.push(self.isend(self.buf, size, peer, TAG_DATA));
            }
            wait_all(reqs, dl)
        } else {
            // Every message lands in the same buffer, as in osu_bw: the
            // contents are not looked at.
            for _ in 0..window {
                reqs.push(self.irecv(self.buf, size, peer, TAG_DATA));
            }
            wait_all(reqs, dl)?;
            self.lag(window);
            wait_all(&mut [self.isend(ack, 1, peer, TAG_ACK)], dl)
        }
    }

    /// Every rank reaches this point, waiting at most `patience` beyond the
    /// timeout (the others may be measuring); sleeps while it waits.
    pub fn barrier(&self, patience: Duration, what: &dyn Fn() -> String) -> Result<()> {
        // SAFETY: as in `isend`: a C `const` static, initialised and never written.
        let mut r = unsafe { ffi::RSMPI_REQUEST_NULL };
        // SAFETY: a non-blocking barrier on the world communicator.
        unsafe {
            ffi::MPI_Ibarrier(ffi::RSMPI_COMM_WORLD, &mut r);
        }
        let mut dl = self.deadline(what, patience);
        dl.idle = true;
        wait_all(&mut [r], &dl)
    }

    /// Rank 0 collects one message from every other rank, for at most
    /// `patience` beyond the timeout; the others send theirs and get `None`.
    /// Ranks that did not report in time are `None` in the result.
    pub fn gather(
        &self,
        mine: Vec<u8>,
        patience: Duration,
    ) -> Result<Option<Vec<Option<Vec<u8>>>>> {
        let until = Instant::now() + self.timeout + patience;
        if self.rank != 0 {
            let what = || "rank 0 to take this rank's results".to_string();
            let mut dl = self.deadline(&what, patience);
            dl.idle = true;
            let mut r = [self.isend(mine.as_ptr(), mine.len(), 0, TAG_GATHER)];
            let res = wait_all(&mut r, &dl);
            if res.is_err() {
                // The request may still read `mine`.
                std::mem::forget(mine);
            }
            return res.map(|()| None);
        }
        let mut got: Vec<Option<Vec<u8>>> = vec![None; self.size];
        got[0] = Some(mine);
        let mut left = self.size - 1;
        let mut spins = 0u32;
        while left > 0 {
            for (r, slot) in got.iter_mut().enumerate().skip(1) {
                if slot.is_some() {
                    continue;
                }
                if let Some(len) = probe(r, TAG_GATHER) {
                    *slot = Some(recv_probed(r, TAG_GATHER, len));
                    left -= 1;
                }
            }
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(64) {
                if self.stop.load(std::sync::atomic::Ordering::Relaxed) {
                    return Err(Error::Interrupted);
                }
                // A rank that left will not report; those that did are kept.
                if Instant::now() >= until || world::left().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_micros(50));
            }
        }
        Ok(Some(got))
    }

    /// Rank 0 sends `msg` to every other rank; the others wait for it (at
    /// most `patience` beyond the timeout) and return it.
    pub fn share(&self, msg: Vec<u8>, patience: Duration) -> Result<Vec<u8>> {
        let what = || "rank 0's word to go on".to_string();
        let mut dl = self.deadline(&what, patience);
        dl.idle = true;
        if self.rank == 0 {
            let mut reqs: Vec<MPI_Request> = (1..self.size)
                .map(|r| self.isend(msg.as_ptr(), msg.len(), r, TAG_WORD))
                .collect();
            let res = wait_all(&mut reqs, &dl);
            if res.is_err() {
                // A send still posted may read it.
                std::mem::forget(msg);
                return res.map(|()| Vec::new());
            }
            return Ok(msg);
        }
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            if let Some(len) = probe(0, TAG_WORD) {
                return Ok(recv_probed(0, TAG_WORD, len));
            }
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(64) {
                dl.check(start)?;
            }
        }
    }
}

/// The length of a waiting message from `rank` with `tag`, if one is there.
fn probe(rank: usize, tag: i32) -> Option<usize> {
    let mut flag = 0;
    let mut st = std::mem::MaybeUninit::<ffi::MPI_Status>::uninit();
    // SAFETY: probe and count on a status MPI fills in when flag is set.
    unsafe {
        ffi::MPI_Iprobe(
            rank as i32,
            tag,
            ffi::RSMPI_COMM_WORLD,
            &mut flag,
            st.as_mut_ptr(),
        );
        if flag == 0 {
            return None;
        }
        let mut n = 0;
        ffi::MPI_Get_count(st.as_ptr(), ffi::RSMPI_UINT8_T, &mut n);
        Some(n.max(0) as usize)
    }
}

/// Receives the message `probe` found.
fn recv_probed(rank: usize, tag: i32, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    // SAFETY: a matching message is waiting (probed), so the blocking
    // receive returns at once into a buffer of its length.
    unsafe {
        ffi::MPI_Recv(
            v.as_mut_ptr() as *mut c_void,
            len as i32,
            ffi::RSMPI_UINT8_T,
            rank as i32,
            tag,
            ffi::RSMPI_COMM_WORLD,
            ffi::RSMPI_STATUS_IGNORE,
        );
    }
    v
}
