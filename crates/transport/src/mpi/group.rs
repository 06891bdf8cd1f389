//! Many ranks at once: the pair measurements of `mesh` and `curve --pairs`
//! (a ping-pong for latency, windows of messages for bandwidth) and the
//! little collectives around them (a barrier, gather to rank 0, a word
//! from rank 0), every one of them waiting with a deadline so a stalled
//! rank ends the run instead of hanging it.
//!
//! The calls are MPI's non-blocking ones polled with MPI_Test, which spins
//! as MPI_Recv does internally. Buffers are allocated once and leaked: a
//! request still posted when a wait times out may name them until the job
//! is aborted.

use super::world::{self, Deadline, wait_all};
use crate::error::{Error, Result};
use crate::measure::distribution::BLOCKS;
use crate::measure::stats::{Recorder, Summary};
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

/// What one leading rank measured in one phase: its histogram and counts.
pub struct Sampled {
    /// One-way times (latency) or window times (bandwidth), ns.
    pub rec: Recorder,
    /// Untimed exchanges (round trips or windows) first.
    pub warmup: u64,
    /// Time in the timed loop.
    pub timed: Duration,
    /// The timed loop's consecutive blocks (latency: up to
    /// [`crate::measure::distribution::BLOCKS`], in time order;
    /// bandwidth: none).
    pub blocks: Vec<Summary>,
}

/// How long a phase measures: warm-up, then as many exchanges as fit.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub duration: Duration,
    /// Fewest timed exchanges, whatever the duration.
    pub min_samples: u64,
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

    fn deadline<'a>(&'a self, what: &'a dyn Fn() -> String, extra: Duration) -> Deadline<'a> {
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

    /// The leader tells the follower how many exchanges of `size` come next.
    fn announce(&self, peer: usize, lead: bool, phase: u64, size: usize, n: u64) -> Result<u64> {
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

    /// One-way latency between this rank and `peer` at `size` bytes: the
    /// leader times each ping-pong and records half of it; the follower
    /// answers. Both call it with the same size and budget.
    pub fn latency(
        &self,
        peer: usize,
        lead: bool,
        size: usize,
        budget: Budget,
    ) -> Result<Option<Sampled>> {
        if size > self.pong_cap {
            return Err(Error::usage(format!(
                "a {size} B ping-pong is larger than the {} B this mesh was opened for; open it with the largest latency size",
                self.pong_cap
            )));
        }
        let what = || format!("rank {peer} in the latency ping-pong ({size} B)");
        let dl = self.deadline(&what, Duration::ZERO);
        // Three round trips say how long one takes; then more warm-up, up
        // to 100 in all, a quarter of the budget and 64 MiB moved.
        let first = self.announce(peer, lead, 1, size, 3)?;
        let t0 = Instant::now();
        self.pingpongs(peer, lead, size, first, &dl, None)?;
        let per = t0.elapsed() / first.max(1) as u32;
        let more = ((budget.duration / 4).as_nanos() / per.as_nanos().max(1)) as u64;
        let more = more.min(97).min(((64usize << 20) / size.max(1)) as u64);
        let more = self.announce(peer, lead, 5, size, more)?;
        self.pingpongs(peer, lead, size, more, &dl, None)?;
        let warm = first + more;
        let per = t0.elapsed() / warm.max(1) as u32;
        let n = timed_count(budget, per);
        let n = self.announce(peer, lead, 2, size, n)?;
        if !lead {
            self.pingpongs(peer, lead, size, n, &dl, None)?;
            return Ok(None);
        }
        // The leader times its ping-pongs in consecutive blocks, each its
        // own recorder (the follower answers them as one run: every ping
        // pong is the same to it).
        let count = (n as usize).clamp(1, BLOCKS) as u64;
        let mut blocks: Vec<Recorder> = (0..count).map(|_| Recorder::new()).collect();
        let start = Instant::now();
        for (i, r) in blocks.iter_mut().enumerate() {
            let i = i as u64;
            let part = n * (i + 1) / count - n * i / count;
            self.pingpongs(peer, lead, size, part, &dl, Some(r))?;
        }
        let timed = start.elapsed();
        let mut rec = Recorder::new();
        for b in &blocks {
            rec.merge(b);
        }
        Ok(Some(Sampled {
            rec,
            warmup: warm,
            timed,
            blocks: blocks
                .iter()
                .filter(|b| b.count() > 0)
                .map(Recorder::summary)
                .collect(),
        }))
    }

    /// `n` ping-pongs. The leader posts each reply's receive right after
    /// its ping leaves and, given `rec`, records half of each round trip;
    /// the follower posts the next ping's receive right after each pong,
    /// well before that ping can come.
    #[inline(never)]
    fn pingpongs(
        &self,
        peer: usize,
        lead: bool,
        size: usize,
        n: u64,
        dl: &Deadline,
        mut rec: Option<&mut Recorder>,
    ) -> Result<()> {
        if lead {
            for _ in 0..n {
                let t = Instant::now();
                self.lag(1);
                // The ping first, as a blocking MPI_Send would: posting the
                // receive before it put a call (~15 ns one-way, measured
                // against osu_latency's loop) ahead of every ping. The pong
                // needs a round trip to come back and the receive is posted
                // a call later; a pong that still came first (this rank
                // preempted) waits in MPI's unexpected queue, as it would
                // for a blocking MPI_Recv.
                let mut tx = self.isend(self.buf, size, peer, TAG_DATA);
                let mut rx = self.irecv(self.pong, size, peer, TAG_DATA);
                // The round trip ends when the pong is in: the ping has
                // arrived by then, and what is left of its send request is
                // bookkeeping, done after the clock stops (a blocking
                // MPI_Send has no request to free).
                wait_all(std::slice::from_mut(&mut rx), dl)?;
                if let Some(r) = rec.as_deref_mut() {
                    r.record((t.elapsed().as_nanos() / 2) as u64);
                }
                wait_all(std::slice::from_mut(&mut tx), dl)?;
            }
            return Ok(());
        }
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

    /// Bandwidth from the leader to `peer` at `size` bytes: windows of
    /// `window` messages in flight, each closed by the follower's
    /// acknowledgement; the leader records each window's time. With `count`
    /// the number of timed windows is given (all pairs of `curve --pairs`
    /// run alike); otherwise it is fitted to the budget after warm-up.
    pub fn bandwidth(
        &self,
        peer: usize,
        lead: bool,
        size: usize,
        window: u32,
        budget: Budget,
        count: Option<u64>,
    ) -> Result<Option<Sampled>> {
        let what = || format!("rank {peer} in the bandwidth window ({size} B × {window})");
        let mut reqs: Vec<MPI_Request> = Vec::with_capacity(window as usize + 1);
        let warm = self.announce(peer, lead, 3, size, 2)?;
        let t0 = Instant::now();
        // A window may take long by itself: allow it 100 MB/s beyond the timeout.
        let slow = Duration::from_secs_f64((size as f64 * window as f64) / 100e6);
        let dl = self.deadline(&what, slow);
        for _ in 0..warm {
            self.window(peer, lead, size, window, &dl, &mut reqs)?;
        }
        let per = t0.elapsed() / warm.max(1) as u32;
        let n = count.unwrap_or_else(|| timed_count(budget, per));
        let n = self.announce(peer, lead, 4, size, n)?;
        let dl = self.deadline(&what, per * 4);
        let mut rec = Recorder::new();
        let start = Instant::now();
        for _ in 0..n {
            let t = Instant::now();
            self.window(peer, lead, size, window, &dl, &mut reqs)?;
            if lead {
                rec.record(t.elapsed().as_nanos() as u64);
            }
        }
        let timed = start.elapsed();
        Ok(lead.then_some(Sampled {
            rec,
            warmup: warm,
            timed,
            blocks: Vec::new(),
        }))
    }

    /// Times one warm-up window, for `curve --pairs` to agree on a count.
    pub fn window_time(
        &self,
        peer: usize,
        lead: bool,
        size: usize,
        window: u32,
    ) -> Result<Duration> {
        let what = || format!("rank {peer} in the bandwidth warm-up ({size} B × {window})");
        let mut reqs: Vec<MPI_Request> = Vec::with_capacity(window as usize + 1);
        let slow = Duration::from_secs_f64((size as f64 * window as f64) / 100e6);
        let dl = self.deadline(&what, slow);
        let t = Instant::now();
        self.window(peer, lead, size, window, &dl, &mut reqs)?;
        Ok(t.elapsed())
    }

    /// One window. `reqs` is the caller's, allocated once, so the timed
    /// loop allocates nothing.
    fn window(
        &self,
        peer: usize,
        lead: bool,
        size: usize,
        window: u32,
        dl: &Deadline,
        reqs: &mut Vec<MPI_Request>,
    ) -> Result<()> {
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

/// Timed exchanges for a budget, given one warm-up exchange's time.
fn timed_count(b: Budget, per: Duration) -> u64 {
    let per = per.as_nanos().max(1);
    ((b.duration.as_nanos() / per) as u64).clamp(b.min_samples.max(1), 10_000_000)
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
