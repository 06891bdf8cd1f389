//! `xferbench curve`: one-way latency and bandwidth over message size, the
//! picture BIP, NetPIPE and OSU draw, with tails, packetization strategies,
//! BIP's fill-and-check "real usage", and Hockney's model fitted to it.

use super::{Config, Progress, begin, configs, link_config, point_warnings};
use crate::error::{Error, Result};
use crate::experiment::sample::{self, Budget, Measured, Outcome};
use crate::measure::distribution::latency_figures;
use crate::measure::fit::{self};
use crate::measure::placement::Placement;
use crate::measure::stats::per_message;
use crate::options::{Amount, CurveConfig, DataDirection, PayloadMode};
use crate::result::curve::*;
use crate::transport::{self, BufferMode, Link, Pattern, ReplyShape};
use crate::units::Chunk;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The sizes to measure: each asked-for size, and with --perturb N also N
/// bytes either side (NetPIPE's three points per size).
pub fn sizes(args: &CurveConfig) -> Vec<u64> {
    let p = args.perturb;
    let mut v: Vec<u64> = Vec::new();
    for &s in &args.sizes {
        v.push(s);
        if p > 0 {
            if s >= p {
                v.push(s - p);
            }
            if s + p <= crate::units::MAX_SIZE {
                v.push(s + p);
            }
        }
    }
    v.sort_unstable();
    v.dedup();
    v
}

fn strategies(args: &CurveConfig) -> Vec<Chunk> {
    if args.compare_chunks.is_empty() {
        vec![args.chunk]
    } else {
        let mut v = args.compare_chunks.clone();
        v.dedup();
        v
    }
}

/// What a curve run sweeps: its sizes, the configurations to measure, and
/// those the transport cannot run at all (a mode it lacks), each with why.
struct Checked {
    sizes: Vec<u64>,
    cfgs: Vec<Config>,
    impossible: super::Impossible,
}

fn validate(args: &CurveConfig) -> Result<Checked> {
    let sizes = sizes(args);
    if sizes.is_empty() {
        return Err(Error::usage("--sizes needs at least one size"));
    }
    let cfgs = configs(&args.common, |caps| {
        if caps.buffers.contains(&BufferMode::Raw) {
            BufferMode::Raw
        } else {
            caps.user_buffers()
        }
    })?;
    if args.payload == PayloadMode::FillCheck && args.mode == Pattern::Bidir {
        return Err(Error::usage(
            "--payload fill-check works with --mode pingpong or stream, not bidir yet",
        ));
    }
    let strat = strategies(args);
    if args.direction.is_empty() {
        return Err(Error::usage(
            "--direction needs write, read, or both (write,read)",
        ));
    }
    if args.direction.contains(&DataDirection::Read) {
        if args.mode != Pattern::Stream {
            return Err(Error::usage(format!(
                "--direction read is a stream the responder sends (device to host): use it with --mode stream (--mode {} moves data both ways already)",
                args.mode.name()
            )));
        }
        if strat.iter().any(|c| *c != Chunk::Whole) {
            return Err(Error::usage(
                "--direction read sends whole messages back; packetization (--chunk, --compare-chunks) is measured for writes",
            ));
        }
        if args.payload == PayloadMode::FillCheck {
            return Err(Error::usage(
                "--payload fill-check checks what the initiator sends; use it with --direction write",
            ));
        }
    }
    if args.mode == Pattern::Bidir && strat.iter().any(|c| *c != Chunk::Whole) {
        return Err(Error::usage(
            "packetization (--chunk, --compare-chunks) is measured in pingpong and stream modes, not bidir",
        ));
    }
    if strat.contains(&Chunk::Size(0)) {
        return Err(Error::usage(
            "a packet of 0 bytes carries nothing: use --chunk whole",
        ));
    }
    args.validate()?;
    let probe = Placement::unpinned();
    for c in &cfgs {
        if c.transport.name() == "cuda" && args.direction.contains(&DataDirection::Read) {
            return Err(Error::usage(
                "cuda: the copy direction is the spec's dir= (h2d, d2h, bidir): run curve -t cuda:dir=d2h --mode stream, without --direction",
            ));
        }
        if c.transport.name() == "cuda" && args.mode == Pattern::Bidir {
            return Err(Error::usage(
                "cuda: both directions at once are measured by --mode stream (dir=bidir); run curve -t cuda:dir=bidir --mode stream",
            ));
        }
        if args.mode == Pattern::Bidir
            && c.completion == transport::CompletionMode::Block
            && matches!(c.transport.name(), "thread" | "shm")
        {
            return Err(Error::usage(format!(
                "{}: bidir over shared memory spins on both sides; use completion=poll",
                c.spec
            )));
        }
    }
    // Modes only: sizes a transport cannot carry are skipped, not refused,
    // and so is a configuration whose modes it lacks, beside others.
    let (cfgs, impossible) = super::usable(cfgs, |c| {
        transport::check(c.transport, &link_config(c, &args.common, &probe, 1, 1)?)
    })?;
    Ok(Checked {
        sizes,
        cfgs,
        impossible,
    })
}

/// The shape of one exchange of `len`-byte messages.
fn shape(
    args: &CurveConfig,
    len: u64,
    packet: u64,
    seed: Option<u64>,
    dir: Option<(DataDirection, &transport::Capabilities)>,
) -> ReplyShape {
    let n = len as usize;
    if let Some((DataDirection::Read, caps)) = dir {
        // The responder sends: a window of requests as small as the
        // transport carries, each answered by a whole message, all in
        // flight at once (a device writing host memory, C2H).
        return ReplyShape {
            request_len: usize::from(!caps.empty_messages),
            reply_len: n,
            delay_ns: args.common.responder_delay.as_nanos() as u64,
            exchanges: 0,
            pattern: Pattern::Bidir,
            window: args.window,
            chunk: 0,
            check: None,
        };
    }
    ReplyShape {
        request_len: n,
        reply_len: match args.mode {
            Pattern::Pingpong | Pattern::Bidir => n,
            // The acknowledgement: one byte says the window arrived.
            Pattern::Stream => 1,
        },
        // --responder-delay: the responder spins before each reply (or
        // acknowledgement), a known change to check a comparison against.
        delay_ns: args.common.responder_delay.as_nanos() as u64,
        exchanges: 0,
        pattern: args.mode,
        window: if args.mode == Pattern::Pingpong {
            1
        } else {
            args.window
        },
        chunk: if packet >= len { 0 } else { packet as usize },
        check: seed,
    }
}

/// Derives the adaptive rule from two quick measurements on an open link:
/// a small message's one-way time and a large one's bandwidth.
fn calibrate(
    link: &mut dyn Link,
    cfg: &Config,
    largest: u64,
    stop: &AtomicBool,
) -> Result<Option<ChunkRule>> {
    let budget = Budget {
        warmup: None,
        amount: Amount::Time(Duration::from_millis(100)),
    };
    let caps = cfg.transport.capabilities();
    let small = 64u64.min(largest).max(1);
    let big = (1u64 << 20).min(largest).min(caps.max_message);
    if big <= small {
        return Ok(None);
    }
    let mut oneway = |len: u64| -> Result<Option<f64>> {
        let sh = ReplyShape::pingpong(len as usize, len as usize, 0, 0);
        Ok(match sample::measure(link, &sh, &budget, stop)? {
            Outcome::Done(m) => Some(m.all.quantile(0.5) as f64 / 2.0),
            Outcome::Interrupted(_) => None,
        })
    };
    let (Some(t_small), Some(t_big)) = (oneway(small)?, oneway(big)?) else {
        return Err(Error::Interrupted);
    };
    let per_byte = ((t_big - t_small) / (big - small) as f64).max(1e-6);
    let mbps = 1e3 / per_byte;
    let min_packet = 1024u64.min(caps.max_message);
    let max_packet = (caps.max_message < crate::units::MAX_SIZE).then(|| {
        if caps.max_message.is_power_of_two() {
            caps.max_message
        } else {
            caps.max_message.next_power_of_two() / 2
        }
    });
    Ok(Some(ChunkRule {
        spec: cfg.spec.to_string(),
        buffers: cfg.buffers,
        packet_cost_ns: t_small,
        bandwidth_mbps: mbps,
        min_packet_bytes: min_packet,
        max_packet_bytes: max_packet,
        rule: format!(
            "packet = √(n × {} × {:.0} MB/s), rounded down to a power of two, between {} and {}",
            crate::units::format_us(t_small) + " µs",
            mbps,
            crate::units::format_size(min_packet),
            match max_packet {
                Some(m) => format!(
                    "the smaller of n and {} (a datagram holds at most {} B)",
                    crate::units::format_size(m),
                    caps.max_message
                ),
                None => "n".to_string(),
            }
        ),
    }))
}

#[allow(clippy::too_many_arguments)]
fn point(
    args: &CurveConfig,
    c: &Config,
    chunk: Chunk,
    direction: Option<DataDirection>,
    len: u64,
    packet: u64,
    m: &Measured,
    partial: bool,
) -> CurvePoint {
    let exchange = m.all.summary();
    let (by, ways) = match args.mode {
        Pattern::Pingpong => (2.0, 1.0),
        Pattern::Stream => (f64::from(args.window), 1.0),
        Pattern::Bidir => (f64::from(args.window), 2.0),
    };
    let oneway = per_message(&exchange, by);
    // Unrounded median: a sub-ns rounding must not move small-size bandwidth.
    let median_ns = m.all.quantile(0.5) as f64 / by;
    let bandwidth = |median_ns: f64| {
        if median_ns > 0.0 {
            ways * len as f64 * 1e3 / median_ns
        } else {
            0.0
        }
    };
    let mut warnings = point_warnings(
        m,
        &[
            crate::measure::stats::Stat::P50,
            crate::measure::stats::Stat::P99,
        ],
    );
    if partial {
        warnings.insert(
            0,
            format!("partial: interrupted after {} samples", m.all.count()),
        );
    }
    CurvePoint {
        transport: c.transport.name().to_string(),
        spec: c.spec.to_string(),
        buffers: c.buffers,
        completion: c.completion,
        mode: args.mode,
        window: if args.mode == Pattern::Pingpong {
            1
        } else {
            args.window
        },
        direction,
        chunk,
        packet_bytes: packet,
        payload: args.payload,
        size_bytes: len,
        warmup: m.warmup,
        timed_s: m.timed_s,
        partial,
        exchange,
        oneway,
        bandwidth_mbps: bandwidth(median_ns),
        warnings,
        device_time: sample::device_time(std::slice::from_ref(m)),
        spread: m.spread(|s| {
            let mut f = latency_figures(&per_message(&s, by));
            f.insert("bandwidth_MBps", bandwidth(s.p50_ns as f64 / by));
            f
        }),
    }
}

/// The GPU bandwidth curves a `cuda` spec selects, when the curve is a
/// stream (measured by `cuda::bandwidth`, not through a link).
fn cuda_stream(
    args: &CurveConfig,
    c: &Config,
) -> Option<crate::transport::cuda::bandwidth::Selection> {
    (args.mode == Pattern::Stream && c.transport.name() == "cuda")
        .then(|| crate::transport::cuda::bandwidth::Selection::from_spec(&c.spec).ok())
        .flatten()
}

/// Runs every curve. Always returns the run (possibly incomplete); the
/// error, if any, says why it stopped early.
/// With `--repeat K`, every curve runs K times, one sweep after another,
/// and the fits are made again on the merged points.
pub fn run(
    args: &CurveConfig,
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<(CurveRun, Option<Error>)> {
    let checked = validate(args)?;
    let largest = checked.sizes.iter().copied().max().unwrap_or(0);
    super::check_buffers(largest, largest, 1, "lower the largest of --sizes")?;
    let k = args.common.out.repeat;
    super::limits::warm(&args.common.specs(), args.common.cpus.requested());
    let (mut run, err) =
        super::repeat::repeated(k, progress, |_, p| once(args, &checked, stop, p))?;
    if k > 1 {
        refit(&mut run, args.breakpoint);
    }
    super::limits::attach(&mut run);
    Ok((run, err))
}

/// Each curve's fits from its merged points.
fn refit(run: &mut CurveRun, breakpoint: crate::options::Breakpoint) {
    for f in &mut run.extra.fits {
        let curve: Vec<(u64, f64)> = run
            .points
            .iter()
            .filter(|p| {
                p.spec == f.spec
                    && p.buffers == f.buffers
                    && p.completion == f.completion
                    && p.mode == f.mode
                    && p.direction == f.direction
                    && p.chunk == f.chunk
            })
            .map(|p| (p.size_bytes, p.oneway.p50_ns as f64))
            .collect();
        f.fit = fit::hockney(&curve);
        f.two_segment = fit::two_segment(&curve, breakpoint);
    }
    run.extra.fit = run.extra.fits.first().and_then(|f| f.fit.clone());
}

fn once(
    args: &CurveConfig,
    checked: &Checked,
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<(CurveRun, Option<Error>)> {
    let _keep = crate::measure::placement::KeepAffinity::new();
    let common = &args.common;
    let budget = Budget {
        warmup: common.warmup,
        amount: common.amount.ok_or_else(|| {
            Error::usage("curve: common.amount is unset; set samples or a duration (CurveConfig::default() holds 0.25 s)")
        })?,
    };
    let options =
        serde_json::to_value(args).map_err(|e| Error::run_from("recording options", e))?;
    let (mut run, placement) = begin::<CurvePoint, CurveExtra>("curve", common, options)?;
    let (sizes, cfgs) = (&checked.sizes, &checked.cfgs);
    let strat = strategies(args);
    for (c, why) in &checked.impossible {
        for (&chunk, way) in strat
            .iter()
            .flat_map(|k| ways(args).into_iter().map(move |w| (k, w)))
        {
            // The modes say which configuration of the spec it was.
            let label = format!(
                "{} {}/{}",
                curve_label(&c.spec.to_string(), args.mode, chunk, way),
                c.buffers.name(),
                c.completion.name()
            );
            for &len in sizes {
                run.extra.skipped.push(Skipped {
                    spec: c.spec.to_string(),
                    curve: label.clone(),
                    size_bytes: len,
                    reason: why.clone(),
                });
            }
        }
    }
    progress.checkpoint(&run);
    let total: usize = cfgs
        .iter()
        .map(|c| match cuda_stream(args, c) {
            Some(sel) => sel.curves().len() * sizes.len(),
            None => strat.len() * sizes.len(),
        })
        .sum();
    progress.start(total as u64);
    let seed = (args.payload == PayloadMode::FillCheck).then(|| {
        // Fresh values each run, recorded so a failure can be replayed.
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x5eed, |d| d.as_nanos() as u64)
    });
    let mut after = None;
    let result = (|| -> Result<()> {
        for c in cfgs {
            if cuda_stream(args, c).is_some() {
                cuda_curves(args, c, sizes, &mut run, progress, stop)?;
                continue;
            }
            // Sizes this transport carries at all (packets aside: checked per strategy).
            let largest = *sizes.iter().max().expect("validated");
            let lc = link_config(c, common, &placement, largest.max(1), largest.max(1))?;
            let (mut link, at) = super::open_link(&mut run, c, &lc, progress)?;
            let sweep = Sweep {
                args,
                c,
                caps: c.transport.capabilities(),
                budget: &budget,
                seed,
                sizes,
                stop,
                progress,
            };
            let measured = (|| -> Result<()> {
                let rule = if strat.contains(&Chunk::Adaptive) {
                    let r = calibrate(link.as_mut(), c, largest, stop)?;
                    if let Some(r) = &r {
                        run.extra.chunk_rules.push(r.clone());
                    }
                    r
                } else {
                    None
                };
                let ways = ways(args);
                for (&chunk, &way) in strat.iter().flat_map(|c| ways.iter().map(move |w| (c, w))) {
                    sweep.curve(&mut run, link.as_mut(), chunk, way, rule.as_ref())?;
                }
                Ok(())
            })();
            super::close_link(&mut run, c, at, link, &measured, &mut after);
            measured?;
        }
        let skipped: Vec<String> = run.extra.skipped.iter().map(Skipped::label).collect();
        super::nothing_measured(run.points.len(), &skipped, "size(s)")
    })();
    progress.finish();
    Ok(super::finish_after(run, result, after))
}

/// The directions a curve goes: stream curves each way asked, the others
/// both ways at once (one curve, no direction).
fn ways(args: &CurveConfig) -> Vec<Option<DataDirection>> {
    if args.mode == Pattern::Stream {
        args.direction.iter().map(|d| Some(*d)).collect()
    } else {
        vec![None]
    }
}

/// Records a measured curve's fits; the first curve's is also the run's.
fn push_fit(run: &mut CurveRun, f: CurveFit) {
    if run.extra.fits.is_empty() {
        run.extra.fit = f.fit.clone();
    }
    run.extra.fits.push(f);
}

/// A CUDA copy-bandwidth spec's curves (`curve -t cuda --mode stream`),
/// measured by the driver-level rig, with their fits.
fn cuda_curves(
    args: &CurveConfig,
    c: &Config,
    sizes: &[u64],
    run: &mut CurveRun,
    progress: &dyn Progress,
    stop: &AtomicBool,
) -> Result<()> {
    let curves = super::cuda_curve::run(
        args,
        &c.spec,
        c.completion,
        sizes,
        &mut run.points,
        &mut run.extra.skipped,
        progress,
        stop,
    )?;
    for (spec, buffers, curve) in curves {
        push_fit(
            run,
            CurveFit {
                spec: spec.to_string(),
                buffers,
                completion: c.completion,
                mode: args.mode,
                direction: None,
                chunk: Chunk::Whole,
                fit: fit::hockney(&curve),
                two_segment: fit::two_segment(&curve, args.breakpoint),
            },
        );
    }
    Ok(())
}

/// What every curve over one open link shares.
struct Sweep<'a> {
    args: &'a CurveConfig,
    c: &'a Config,
    caps: transport::Capabilities,
    budget: &'a Budget,
    seed: Option<u64>,
    sizes: &'a [u64],
    stop: &'a AtomicBool,
    progress: &'a dyn Progress,
}

impl Sweep<'_> {
    /// One curve (a packetization strategy, a direction) over every size:
    /// its points, the sizes it cannot carry as skipped, then its fit.
    fn curve(
        &self,
        run: &mut CurveRun,
        link: &mut dyn Link,
        chunk: Chunk,
        way: Option<DataDirection>,
        rule: Option<&ChunkRule>,
    ) -> Result<()> {
        let (args, c) = (self.args, self.c);
        let label = curve_label(&c.spec.to_string(), args.mode, chunk, way);
        let mut curve: Vec<(u64, f64)> = Vec::new();
        for &len in self.sizes {
            self.progress.point(&format!("{label} {len} B"));
            let packet = match (chunk, rule) {
                (Chunk::Whole, _) => len,
                (Chunk::Size(p), _) => p.min(len.max(1)),
                (Chunk::Adaptive, Some(r)) => r.packet(len),
                (Chunk::Adaptive, None) => len,
            };
            let sh = shape(args, len, packet, self.seed, way.map(|w| (w, &self.caps)));
            // A read's request is the tiny one; its reply is the message.
            let asked = if way == Some(DataDirection::Read) {
                sh.request_len as u64
            } else {
                len
            };
            let mut skip = |reason: String| {
                run.extra.skipped.push(Skipped {
                    spec: c.spec.to_string(),
                    curve: label.clone(),
                    size_bytes: len,
                    reason,
                })
            };
            if let Some(reason) = transport::cannot_carry(&self.caps, c.buffers, asked, &sh) {
                skip(reason);
                continue;
            }
            let (m, partial) = match sample::measure(link, &sh, self.budget, self.stop) {
                Ok(Outcome::Done(m)) => (m, false),
                Ok(Outcome::Interrupted(Some(m))) => (m, true),
                Ok(Outcome::Interrupted(None)) => return Err(Error::Interrupted),
                // The device refused this shape at configure:
                // the size is skipped, the link is in step.
                Err(Error::Usage {
                    message: reason, ..
                }) if c.transport.name() == "plugin" => {
                    skip(reason);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let p = point(args, c, chunk, way, len, packet, &m, partial);
            curve.push((len, p.oneway.p50_ns as f64));
            run.points.push(p);
            self.progress.checkpoint(run);
            if self.stop.load(Ordering::Relaxed) {
                return Err(Error::Interrupted);
            }
        }
        push_fit(
            run,
            CurveFit {
                spec: c.spec.to_string(),
                buffers: c.buffers,
                completion: c.completion,
                mode: args.mode,
                direction: way,
                chunk,
                fit: fit::hockney(&curve),
                two_segment: fit::two_segment(&curve, args.breakpoint),
            },
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> CurveConfig {
        assert!(extra.is_empty());
        CurveConfig::default()
    }

    #[test]
    fn default_sizes_are_zero_and_powers_of_two_to_8m() {
        let s = sizes(&args(&[]));
        assert_eq!(s[0], 0);
        assert_eq!(s[1], 1);
        assert_eq!(*s.last().unwrap(), 8 << 20);
        assert_eq!(s.len(), 2 + 23);
        assert!(s[1..].iter().all(|v| v.is_power_of_two()));
    }

    #[test]
    fn perturbation_adds_both_neighbours() {
        let s = sizes(&CurveConfig {
            sizes: vec![0, 1, 16, 1024],
            perturb: 3,
            ..CurveConfig::default()
        });
        assert_eq!(s, vec![0, 1, 3, 4, 13, 16, 19, 1021, 1024, 1027]);
    }

    #[test]
    fn adaptive_rule_is_the_pipelining_optimum() {
        let mut r = ChunkRule {
            spec: "x".into(),
            buffers: BufferMode::User,
            packet_cost_ns: 1000.0,
            bandwidth_mbps: 1000.0, // 1 byte/ns
            min_packet_bytes: 1024,
            max_packet_bytes: None,
            rule: String::new(),
        };
        // √(1 MiB × 1000 ns × 1 B/ns) = 32381 → 16 KiB.
        assert_eq!(r.packet(1 << 20), 16 << 10);
        // √(4 MiB × 1000) = 64763 → 32 KiB.
        assert_eq!(r.packet(4 << 20), 32 << 10);
        // √(64 MiB × 1000) = 259k → 128 KiB, unless a datagram limit caps it.
        assert_eq!(r.packet(64 << 20), 128 << 10);
        r.max_packet_bytes = Some(32 << 10);
        assert_eq!(r.packet(64 << 20), 32 << 10);
        assert_eq!(r.packet(2000), 1024);
        assert_eq!(r.packet(100), 100);
    }

    #[test]
    fn one_way_divides_every_statistic() {
        let s = crate::measure::stats::Summary {
            count: 10,
            mean_ns: 200.0,
            stddev_ns: 20.0,
            min_ns: 100,
            p50_ns: 200,
            p90_ns: 300,
            p99_ns: 400,
            p999_ns: 500,
            p9999_ns: 600,
            max_ns: 700,
        };
        let o = per_message(&s, 2.0);
        assert_eq!((o.count, o.min_ns, o.p50_ns, o.max_ns), (10, 50, 100, 350));
        assert_eq!(o.mean_ns, 100.0);
    }
}
