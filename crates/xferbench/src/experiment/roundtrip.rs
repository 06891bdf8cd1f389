//! `xferbench roundtrip`: the in-size × out-size matrix of round-trip latency
//! (the Vollo IO round trip), for every transport and mode asked for.

use super::{Config, Progress, begin, configs, link_config, point_warnings};
use crate::error::{Error, Result};
use crate::experiment::sample::{self, Budget, Outcome};
use crate::measure::distribution::latency_figures;
use crate::measure::placement::Placement;
use crate::options::{Common, RoundtripConfig};
use crate::result::{Point, RoundtripExtra, Run, SkippedCell};
use crate::transport::{self, ReplyShape};
use std::sync::atomic::{AtomicBool, Ordering};

/// What a matrix runs: its sizes, the configurations to measure, and those
/// no cell of which the transport can carry (each with why).
struct Checked {
    ins: Vec<u64>,
    outs: Vec<u64>,
    cfgs: Vec<Config>,
    impossible: super::Impossible,
}

/// Checks the sizes and every configuration before anything starts, so a bad
/// option fails at once rather than halfway through a sweep.
fn validate(args: &RoundtripConfig) -> Result<Checked> {
    let scale = args.unit.bytes();
    let bytes = |v: &[u64], flag: &str| -> Result<Vec<u64>> {
        if v.is_empty() {
            return Err(Error::usage(format!("{flag} needs at least one size")));
        }
        if v.contains(&0) {
            return Err(Error::usage(format!(
                "{flag} size 0 is not allowed: a round trip needs at least one byte each way"
            )));
        }
        let b: Vec<u64> = v.iter().map(|x| x.saturating_mul(scale)).collect();
        if let Some(&big) = b.iter().find(|&&x| x > crate::units::MAX_SIZE) {
            return Err(Error::usage(format!(
                "{flag} size of {big} bytes is over the 1 GiB limit"
            )));
        }
        Ok(b)
    };
    args.common.validate()?;
    let ins = bytes(&args.in_sizes, "--in")?;
    let outs = bytes(&args.out_sizes, "--out")?;
    let cfgs = configs(&args.common, crate::transport::Capabilities::user_buffers)?;
    // Modes are checked here with the smallest cell; a cell over what the
    // transport or device carries is skipped when it comes, with a note.
    let (mi, mo) = (
        *ins.iter().min().expect("non-empty"),
        *outs.iter().min().expect("non-empty"),
    );
    let probe = Placement::unpinned();
    let (cfgs, impossible) = super::usable(cfgs, |c| {
        transport::check(c.transport, &link_config(c, &args.common, &probe, mi, mo)?)
    })?;
    Ok(Checked {
        ins,
        outs,
        cfgs,
        impossible,
    })
}

/// Runs the matrix. Always returns the run (possibly incomplete); the error,
/// if any, says why it stopped early.
/// With `--repeat K`, the whole matrix runs K times and each point keeps
/// every repeat.
pub fn run(
    args: &RoundtripConfig,
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<(Run, Option<Error>)> {
    let checked = validate(args)?;
    super::check_buffers(
        checked.ins.iter().copied().max().unwrap_or(0),
        checked.outs.iter().copied().max().unwrap_or(0),
        1,
        "lower the largest of --in and --out",
    )?;
    super::limits::warm(&args.common.specs(), args.common.cpus.requested());
    let (mut run, err) = super::repeat::repeated(args.common.out.repeat, progress, |_, p| {
        once(args, &checked, stop, p)
    })?;
    super::limits::attach(&mut run);
    Ok((run, err))
}

fn once(
    args: &RoundtripConfig,
    checked: &Checked,
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<(Run, Option<Error>)> {
    let _keep = crate::measure::placement::KeepAffinity::new();
    let common: &Common = &args.common;
    let budget = Budget {
        warmup: common.warmup,
        amount: common.amount.ok_or_else(|| {
            Error::usage("roundtrip: common.amount is unset; set samples or a duration (RoundtripConfig::default() holds 10 000 samples)")
        })?,
    };
    let options =
        serde_json::to_value(args).map_err(|e| Error::run_from("recording options", e))?;
    let (mut run, placement) = begin::<Point, RoundtripExtra>("roundtrip", common, options)?;
    let (ins, outs, cfgs) = (&checked.ins, &checked.outs, &checked.cfgs);
    for (c, why) in &checked.impossible {
        for &o in outs {
            for &i in ins {
                skip(&mut run, c, i, o, why.clone());
            }
        }
    }
    progress.checkpoint(&run);
    progress.start((cfgs.len() * ins.len() * outs.len()) as u64);
    let delay_ns = common.responder_delay.as_nanos() as u64;
    let mut after = None;
    let result = (|| -> Result<()> {
        for c in cfgs {
            let caps = c.transport.capabilities();
            // The cells this configuration can carry; the others are noted.
            let mut cells = Vec::new();
            for &o in outs {
                for &i in ins {
                    let shape = ReplyShape::pingpong(i as usize, o as usize, delay_ns, 0);
                    match transport::cannot_carry(&caps, c.buffers, i, &shape) {
                        Some(reason) => skip(&mut run, c, i, o, reason),
                        None => cells.push((i, o, shape)),
                    }
                }
            }
            let (Some(mi), Some(mo)) = (
                cells.iter().map(|c| c.0).max(),
                cells.iter().map(|c| c.1).max(),
            ) else {
                continue;
            };
            let lc = link_config(c, common, &placement, mi, mo)?;
            let (mut link, at) = super::open_link(&mut run, c, &lc, progress)?;
            // A recognisable pattern, written once: the payload is not the point.
            for (i, b) in link.request_buf().iter_mut().enumerate() {
                *b = i as u8;
            }
            let measured = (|| -> Result<()> {
                for (i, o, shape) in &cells {
                    let (i, o) = (*i, *o);
                    progress.point(&format!(
                        "{} {}/{} in {} out {}",
                        c.spec,
                        c.buffers.name(),
                        c.completion.name(),
                        i,
                        o
                    ));
                    let (m, partial) = match sample::measure(link.as_mut(), shape, &budget, stop) {
                        Ok(Outcome::Done(m)) => (m, false),
                        Ok(Outcome::Interrupted(Some(m))) => (m, true),
                        Ok(Outcome::Interrupted(None)) => return Err(Error::Interrupted),
                        // The device refused this shape at configure: the
                        // cell is left out, the link is still in step.
                        Err(Error::Usage {
                            message: reason, ..
                        }) => {
                            skip(&mut run, c, i, o, reason);
                            continue;
                        }
                        Err(e) => return Err(e),
                    };
                    let mut warnings = point_warnings(&m, &common.stats);
                    if partial {
                        warnings.insert(
                            0,
                            format!("partial: interrupted after {} samples", m.all.count()),
                        );
                    }
                    run.points.push(Point {
                        transport: c.transport.name().to_string(),
                        spec: c.spec.to_string(),
                        buffers: c.buffers,
                        completion: c.completion,
                        in_bytes: i,
                        out_bytes: o,
                        responder_delay_ns: delay_ns,
                        warmup: m.warmup,
                        timed_s: m.timed_s,
                        partial,
                        summary: m.all.summary(),
                        half_p50_ns: m.halves().map(|h| h.quantile(0.5)),
                        warnings,
                        device_time: sample::device_time(std::slice::from_ref(&m)),
                        spread: m.spread(|s| latency_figures(&s)),
                    });
                    progress.checkpoint(&run);
                    if stop.load(Ordering::Relaxed) {
                        return Err(Error::Interrupted);
                    }
                }
                Ok(())
            })();
            super::close_link(&mut run, c, at, link, &measured, &mut after);
            measured?;
        }
        nothing_measured(&run)
    })();
    progress.finish();
    Ok(super::finish_after(run, result, after))
}

/// Notes a cell left out.
fn skip(run: &mut Run, c: &Config, i: u64, o: u64, reason: String) {
    run.extra.skipped.push(SkippedCell {
        spec: c.spec.to_string(),
        buffers: c.buffers,
        completion: c.completion,
        in_bytes: i,
        out_bytes: o,
        reason,
    });
}

/// A matrix whose every cell was skipped measured nothing: a usage error
/// naming the first reason.
fn nothing_measured(run: &Run) -> Result<()> {
    let skipped: Vec<String> = run.extra.skipped.iter().map(SkippedCell::label).collect();
    super::nothing_measured(run.points.len(), &skipped, "cell(s)")
}
