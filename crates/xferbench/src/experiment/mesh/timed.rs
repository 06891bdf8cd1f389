//! The timed loops of the pair measurements (`mesh`, `curve --pairs`): a
//! ping-pong's one-way time and a window's time between two MPI ranks,
//! warmed up and sized to the time given. The exchanges themselves are the
//! transport's (`transport::mpi::group`); the clock is here, as a link's
//! is in `experiment/sample.rs`.

use crate::error::{Error, Result};
use crate::measure::distribution::BLOCKS;
use crate::measure::stats::{Recorder, Summary};
use crate::transport::mpi::group::{Group, Requests};
use std::time::{Duration, Instant};

/// The fewest timed ping-pongs a latency takes, whatever the time given.
const LATENCY_MIN_SAMPLES: u64 = 10;
/// The fewest timed windows a bandwidth takes, whatever the time given.
const BANDWIDTH_MIN_WINDOWS: u64 = 3;

/// What one leading rank measured in one phase: its histogram and counts.
pub struct Sampled {
    /// One-way times (latency) or window times (bandwidth), ns.
    pub rec: Recorder,
    /// Untimed exchanges (round trips or windows) first.
    pub warmup: u64,
    /// Time in the timed loop.
    pub timed: Duration,
    /// The timed loop's consecutive blocks (latency: up to [`BLOCKS`], in
    /// time order; bandwidth: none).
    pub blocks: Vec<Summary>,
}

/// One-way latency between this rank and `peer` at `size` bytes, for
/// about `duration`: the leader times each ping-pong and records half of
/// it; the follower answers. Both call it with the same size and duration.
pub fn latency(
    g: &Group,
    peer: usize,
    lead: bool,
    size: usize,
    duration: Duration,
) -> Result<Option<Sampled>> {
    if size > g.pong_cap() {
        return Err(Error::usage(format!(
            "a {size} B ping-pong is larger than the {} B this mesh was opened for; open it with the largest latency size",
            g.pong_cap()
        )));
    }
    let what = || format!("rank {peer} in the latency ping-pong ({size} B)");
    let dl = g.deadline(&what, Duration::ZERO);
    // Three round trips say how long one takes; then more warm-up, up to
    // 100 in all, a quarter of the time and 64 MiB moved.
    let first = g.announce(peer, lead, 1, size, 3)?;
    let t0 = Instant::now();
    g.pingpongs(peer, lead, size, first, &dl)?;
    let per = t0.elapsed() / first.max(1) as u32;
    let more = ((duration / 4).as_nanos() / per.as_nanos().max(1)) as u64;
    let more = more.min(97).min(((64usize << 20) / size.max(1)) as u64);
    let more = g.announce(peer, lead, 5, size, more)?;
    g.pingpongs(peer, lead, size, more, &dl)?;
    let warm = first + more;
    let per = t0.elapsed() / warm.max(1) as u32;
    let n = timed_count(duration, LATENCY_MIN_SAMPLES, per);
    let n = g.announce(peer, lead, 2, size, n)?;
    if !lead {
        g.pingpongs(peer, lead, size, n, &dl)?;
        return Ok(None);
    }
    // The leader times its ping-pongs in consecutive blocks, each its own
    // recorder (the follower answers them as one run: every ping pong is
    // the same to it).
    let count = (n as usize).clamp(1, BLOCKS) as u64;
    let mut blocks: Vec<Recorder> = (0..count).map(|_| Recorder::new()).collect();
    let start = Instant::now();
    for (i, r) in blocks.iter_mut().enumerate() {
        let i = i as u64;
        let part = n * (i + 1) / count - n * i / count;
        pingpongs_timed(g, peer, size, part, &dl, r)?;
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

/// `n` of the leader's ping-pongs, half of each round trip recorded: the
/// clock starts before the ping and stops when the pong is in.
#[inline(never)]
fn pingpongs_timed(
    g: &Group,
    peer: usize,
    size: usize,
    n: u64,
    dl: &crate::transport::mpi::world::Deadline,
    rec: &mut Recorder,
) -> Result<()> {
    for _ in 0..n {
        let t = Instant::now();
        g.pingpong(peer, size, dl, || {
            rec.record((t.elapsed().as_nanos() / 2) as u64)
        })?;
    }
    Ok(())
}

/// Bandwidth from the leader to `peer` at `size` bytes: windows of
/// `window` messages in flight, each closed by the follower's
/// acknowledgement; the leader records each window's time. With `count`
/// the number of timed windows is given (all pairs of `curve --pairs` run
/// alike); otherwise it is fitted to `duration` after warm-up.
pub fn bandwidth(
    g: &Group,
    peer: usize,
    lead: bool,
    size: usize,
    window: u32,
    duration: Duration,
    count: Option<u64>,
) -> Result<Option<Sampled>> {
    let what = || format!("rank {peer} in the bandwidth window ({size} B × {window})");
    let mut reqs = Requests::new(window);
    let warm = g.announce(peer, lead, 3, size, 2)?;
    let t0 = Instant::now();
    // A window may take long by itself: allow it 100 MB/s beyond the timeout.
    let slow = Duration::from_secs_f64((size as f64 * window as f64) / 100e6);
    let dl = g.deadline(&what, slow);
    for _ in 0..warm {
        g.window(peer, lead, size, window, &dl, &mut reqs)?;
    }
    let per = t0.elapsed() / warm.max(1) as u32;
    let n = count.unwrap_or_else(|| timed_count(duration, BANDWIDTH_MIN_WINDOWS, per));
    let n = g.announce(peer, lead, 4, size, n)?;
    let dl = g.deadline(&what, per * 4);
    let mut rec = Recorder::new();
    let start = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        g.window(peer, lead, size, window, &dl, &mut reqs)?;
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
    g: &Group,
    peer: usize,
    lead: bool,
    size: usize,
    window: u32,
) -> Result<Duration> {
    let what = || format!("rank {peer} in the bandwidth warm-up ({size} B × {window})");
    let mut reqs = Requests::new(window);
    let slow = Duration::from_secs_f64((size as f64 * window as f64) / 100e6);
    let dl = g.deadline(&what, slow);
    let t = Instant::now();
    g.window(peer, lead, size, window, &dl, &mut reqs)?;
    Ok(t.elapsed())
}

/// Timed exchanges for `duration`, at least `min`, given one warm-up
/// exchange's time.
fn timed_count(duration: Duration, min: u64, per: Duration) -> u64 {
    let per = per.as_nanos().max(1);
    ((duration.as_nanos() / per) as u64).clamp(min.max(1), 10_000_000)
}
