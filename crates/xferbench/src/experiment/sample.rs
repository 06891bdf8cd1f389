//! The sampler: warm-up, then timed round trips, each timed on the monotonic
//! clock from just before the request is sent to just after the whole reply
//! was seen (as the Vollo benchmark times its jobs). The timed loop allocates
//! nothing, locks nothing and logs nothing; it checks one atomic flag for
//! Ctrl-C per sample.

use crate::error::{Error, Result};
use crate::measure::distribution::{BLOCKS, Distribution, Figures, Spread};
use crate::measure::stats::{Recorder, Summary};
use crate::options::Amount;
use crate::payload::{self, Direction};
use crate::transport::{Link, Pattern, ReplyShape};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How much to measure at one point: the warm-up, then the config's
/// [`Amount`]. The one `Budget` of the code: the mesh's pair loops
/// (`experiment/mesh/timed.rs`) are sized by the mesh's `duration` alone,
/// and the fio crate's include limit is an `IncludeAllowance`.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Exactly this many untimed round trips first, or `None`: up to
    /// [`AUTO_WARMUP`] of them within [`AUTO_WARMUP_TIME`], so a gigabyte
    /// message is not warmed up a thousand times.
    pub warmup: Option<u64>,
    /// Then how much is timed: the config's [`Amount`] as it stands.
    pub amount: Amount,
}

pub const AUTO_WARMUP: u64 = 1000;
pub const AUTO_WARMUP_TIME: Duration = Duration::from_millis(500);

/// The most round trips one control frame announces in `--duration` mode.
const MAX_BATCH: u64 = 1 << 20;

/// One point's measurement.
pub struct Measured {
    pub all: Recorder,
    /// Consecutive blocks of the samples ([`BLOCKS`] of them, fewer when
    /// there are fewer samples), kept apart to see how much the figures
    /// wander within the point: drift, and the spread a comparison needs.
    pub blocks: Vec<Recorder>,
    /// Timed seconds of each block, beside `blocks`: a block's rate is its
    /// count over its own time.
    pub block_s: Vec<f64>,
    pub warmup: u64,
    /// Time spent in timed loops, seconds.
    pub timed_s: f64,
    /// Where each round trip's time went, when the device reports its own
    /// time per job: the device's time, and the rest (the round trip minus
    /// it: host software, driver, bus), sample by sample.
    pub split: Option<Split>,
}

/// A point's round trips split into device time and host time.
pub struct Split {
    pub device: Recorder,
    pub host: Recorder,
    /// Round trips whose device time was longer than the whole round trip
    /// the host timed (impossible for a duration: a clock reading, or a
    /// wrong unit), and the largest such device time, ns.
    pub over: u64,
    pub over_max_ns: u64,
}

impl Split {
    fn new() -> Split {
        Split {
            device: Recorder::new(),
            host: Recorder::new(),
            over: 0,
            over_max_ns: 0,
        }
    }
}

/// The latency budget of the measurements of one point or cell (load's
/// clients: their splits pooled), if they were split.
pub fn device_time(ms: &[Measured]) -> Option<crate::result::DeviceTime> {
    let mut splits = ms.iter().filter_map(|m| m.split.as_ref()).peekable();
    splits.peek()?;
    let (mut device, mut host) = (Recorder::new(), Recorder::new());
    let (mut over, mut over_max_ns) = (0, 0);
    for s in splits {
        device.merge(&s.device);
        host.merge(&s.host);
        over += s.over;
        over_max_ns = over_max_ns.max(s.over_max_ns);
    }
    Some(crate::result::DeviceTime {
        device: device.summary(),
        host: host.summary(),
        over_round_trip: over,
        over_max_ns,
    })
}

/// The caveat on a split whose device time exceeded the round trip: the
/// device's figure cannot be the job's duration, so the budget is wrong.
pub fn split_warning(s: &Split, samples: u64) -> Option<String> {
    (s.over > 0).then(|| {
        format!(
            "the device's own time exceeded the whole round trip the host measured in {} of {samples} round trips (up to {} ns): hw_ns must be the job's duration on the device, not a clock reading; the latency budget is not to be trusted",
            s.over, s.over_max_ns
        )
    })
}

pub enum Outcome {
    Done(Measured),
    /// Ctrl-C arrived mid-point; the link is out of step and must be dropped.
    /// Carries the samples timed before the stop, if any.
    Interrupted(Option<Measured>),
}

impl Measured {
    /// `all` from the blocks; empty blocks (a stop came first) dropped.
    fn gather(&mut self) {
        let kept: Vec<bool> = self.blocks.iter().map(|b| b.count() > 0).collect();
        let mut keep = kept.iter();
        self.block_s.retain(|_| *keep.next().unwrap_or(&false));
        self.blocks.retain(|b| b.count() > 0);
        for b in &self.blocks {
            self.all.merge(b);
        }
    }

    /// What a comparison needs of the point: the histogram of every
    /// sample, and `figures` of each block's summary.
    pub fn spread(&self, figures: impl Fn(Summary) -> Figures) -> Spread {
        Spread {
            histogram: Some(Distribution::of(&self.all)),
            repeats: Vec::new(),
            blocks: self.blocks.iter().map(|b| figures(b.summary())).collect(),
        }
    }

    /// The first and second halves of the samples, by whole blocks.
    pub fn halves(&self) -> [Recorder; 2] {
        let mut h = [Recorder::new(), Recorder::new()];
        let mid = self.blocks.len().div_ceil(2);
        for (i, b) in self.blocks.iter().enumerate() {
            h[usize::from(i >= mid)].merge(b);
        }
        h
    }
    /// Wraps what was timed before a stop request.
    fn interrupted(mut self, timed_s: f64) -> Outcome {
        self.gather();
        self.timed_s = timed_s;
        if self.all.count() == 0 {
            Outcome::Interrupted(None)
        } else {
            Outcome::Interrupted(Some(self))
        }
    }
}

/// `timed`, also splitting each round trip by the device's own time for it.
#[inline(never)]
fn timed_split(
    link: &mut dyn Link,
    n: u64,
    rec: &mut Recorder,
    split: &mut Split,
    stop: &AtomicBool,
) -> Result<u64> {
    for i in 0..n {
        if stop.load(Ordering::Relaxed) {
            return Ok(i);
        }
        let t0 = Instant::now();
        link.exchange()?;
        let t1 = Instant::now();
        let rtt = (t1 - t0).as_nanos() as u64;
        rec.record(rtt);
        let dev = link.device_time().unwrap_or(0);
        split.device.record(dev);
        split.host.record(rtt.saturating_sub(dev));
        if dev > rtt {
            split.over += 1;
            split.over_max_ns = split.over_max_ns.max(dev);
        }
    }
    Ok(n)
}

/// The sampler's own cost, as `Clock::sample_floor_ns` and `loop_ns`
/// record it: `timed` itself over a link whose exchange does nothing, so a
/// reader knows how much of a 400 ns figure is the instrument. About 20 000
/// turns (a few milliseconds).
pub fn self_cost() -> (f64, f64) {
    struct Empty;
    impl Link for Empty {
        fn request_buf(&mut self) -> &mut [u8] {
            &mut []
        }
        fn reply(&self) -> &[u8] {
            &[]
        }
        fn configure(&mut self, _: &ReplyShape) -> Result<()> {
            Ok(())
        }
        fn exchange(&mut self) -> Result<()> {
            Ok(())
        }
        fn close(self: Box<Self>) -> Result<()> {
            Ok(())
        }
    }
    let stop = AtomicBool::new(false);
    // Behind black_box the call stays a virtual one, as a real link's is.
    let mut empty = Empty;
    let link: &mut dyn Link = std::hint::black_box(&mut empty);
    let _ = timed(link, 2_000, &mut Recorder::new(), &stop);
    let mut rec = Recorder::new();
    const TURNS: u64 = 20_000;
    let t = Instant::now();
    let _ = timed(link, TURNS, &mut rec, &stop);
    let turn = t.elapsed().as_nanos() as f64 / TURNS as f64;
    (rec.summary().p50_ns as f64, turn)
}

/// Times `n` round trips into `rec`; returns how many ran before a stop request.
#[inline(never)]
fn timed(link: &mut dyn Link, n: u64, rec: &mut Recorder, stop: &AtomicBool) -> Result<u64> {
    for i in 0..n {
        if stop.load(Ordering::Relaxed) {
            return Ok(i);
        }
        let t0 = Instant::now();
        link.exchange()?;
        let t1 = Instant::now();
        rec.record((t1 - t0).as_nanos() as u64);
    }
    Ok(n)
}

/// `timed` with BIP's "real usage": every request filled with fresh values
/// before it goes, every reply value checked when it is back, both inside
/// the timed span. Message numbers restart at each configure, as the
/// responder's do.
#[inline(never)]
fn timed_checked(
    link: &mut dyn Link,
    n: u64,
    rec: &mut Recorder,
    stop: &AtomicBool,
    shape: &ReplyShape,
    seed: u64,
) -> Result<u64> {
    for i in 0..n {
        if stop.load(Ordering::Relaxed) {
            return Ok(i);
        }
        let t0 = Instant::now();
        payload::fill(
            &mut link.request_buf()[..shape.request_len],
            seed,
            i,
            Direction::Request,
        );
        link.exchange()?;
        payload::check(link.reply(), seed, i, Direction::Reply)
            .map_err(|m| Error::run(format!("{m} (reply from the responder)")))?;
        let t1 = Instant::now();
        rec.record((t1 - t0).as_nanos() as u64);
    }
    Ok(n)
}

/// Runs one configured batch of `n` exchanges, timed into `rec` (and
/// split into device and host time into `split`) or not.
fn batch(
    link: &mut dyn Link,
    shape: &ReplyShape,
    n: u64,
    rec: Option<&mut Recorder>,
    split: Option<&mut Split>,
    stop: &AtomicBool,
) -> Result<u64> {
    link.configure(&ReplyShape {
        exchanges: n,
        ..*shape
    })?;
    let mut scratch = Recorder::new();
    let timing = rec.is_some();
    let rec = rec.unwrap_or(&mut scratch);
    match (shape.check, split) {
        // A round trip's request and reply are filled and checked here; a
        // stream's messages are filled by the link, one by one, and checked
        // by the responder.
        (Some(seed), _) if shape.pattern == Pattern::Pingpong => {
            timed_checked(link, n, rec, stop, shape, seed)
        }
        (_, Some(split)) if timing => timed_split(link, n, rec, split, stop),
        _ => timed(link, n, rec, stop),
    }
}

/// Measures one shape (`exchanges` is set per batch) over an open link.
pub fn measure(
    link: &mut dyn Link,
    shape: &ReplyShape,
    budget: &Budget,
    stop: &AtomicBool,
) -> Result<Outcome> {
    let mut m = Measured {
        all: Recorder::new(),
        blocks: Vec::new(),
        block_s: Vec::new(),
        warmup: 0,
        timed_s: 0.0,
        // Only a round trip is one job whose device time splits it.
        split: (shape.pattern == Pattern::Pingpong && link.device_time().is_some())
            .then(Split::new),
    };
    // Warm-up, in its own batches; it also tells how long one exchange takes.
    let t = Instant::now();
    let first = budget.warmup.unwrap_or(1);
    if batch(link, shape, first, None, None, stop)? < first {
        return Ok(Outcome::Interrupted(None));
    }
    let mut per = t.elapsed().as_secs_f64() / first.max(1) as f64;
    m.warmup = first;
    if budget.warmup.is_none() {
        // Doubling batches: the first exchanges are the slow ones, so one
        // of them alone would underestimate how many fit in the time.
        let mut size = 1u64;
        let started = Instant::now();
        while m.warmup < AUTO_WARMUP && started.elapsed() < AUTO_WARMUP_TIME {
            let left = (AUTO_WARMUP_TIME.saturating_sub(started.elapsed())).as_secs_f64();
            size = (size * 2)
                .min(AUTO_WARMUP - m.warmup)
                .min(((left / per.max(1e-9)) as u64).max(1));
            let t = Instant::now();
            if batch(link, shape, size, None, None, stop)? < size {
                return Ok(Outcome::Interrupted(None));
            }
            per = t.elapsed().as_secs_f64() / size as f64;
            m.warmup += size;
        }
    }
    match budget.amount {
        Amount::Samples(n) => {
            let blocks = (n as usize).clamp(1, BLOCKS);
            m.blocks = (0..blocks).map(|_| Recorder::new()).collect();
            m.block_s = vec![0.0; blocks];
            let start = Instant::now();
            for (i, rec) in m.blocks.iter_mut().enumerate() {
                // Block i holds samples [n·i/B, n·(i+1)/B).
                let size = n * (i as u64 + 1) / blocks as u64 - n * i as u64 / blocks as u64;
                let t = Instant::now();
                let done = batch(link, shape, size, Some(rec), m.split.as_mut(), stop)?;
                m.block_s[i] = t.elapsed().as_secs_f64();
                if done < size {
                    return Ok(m.interrupted(start.elapsed().as_secs_f64()));
                }
            }
            m.timed_s = start.elapsed().as_secs_f64();
        }
        Amount::Time(duration) => {
            let total = duration.as_secs_f64();
            m.blocks = (0..BLOCKS).map(|_| Recorder::new()).collect();
            let mut last = (MAX_BATCH / 4).min(16);
            m.block_s = vec![0.0; BLOCKS];
            let end_of = |b: usize| total * (b + 1) as f64 / BLOCKS as f64;
            while m.timed_s < total {
                // Aim at the end of the current block, so every block gets
                // samples.
                let block = ((m.timed_s / total * BLOCKS as f64) as usize).min(BLOCKS - 1);
                let left = end_of(block) - m.timed_s;
                // At most 4× the last batch: a wrong estimate of one
                // exchange's time cannot overshoot several blocks at once.
                let size = ((left / per.max(1e-9)).ceil() as u64).clamp(1, last * 4);
                last = size;
                let start = Instant::now();
                let done = batch(
                    link,
                    shape,
                    size,
                    Some(&mut m.blocks[block]),
                    m.split.as_mut(),
                    stop,
                )?;
                let took = start.elapsed().as_secs_f64();
                m.timed_s += took;
                m.block_s[block] += took;
                if done < size {
                    let t = m.timed_s;
                    return Ok(m.interrupted(t));
                }
                per = took / size as f64;
            }
        }
    }
    m.gather();
    Ok(Outcome::Done(m))
}
