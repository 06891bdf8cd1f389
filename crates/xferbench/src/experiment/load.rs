//! `xferbench load`: what a transfer path delivers while the CPUs do other
//! things (rk11perf's table: requests/s and KB/s per size under each CPU
//! mode), and latency at an offered rate measured from when each request
//! was due, so a stall is charged to every request queued behind it (no
//! coordinated omission).

use super::{Progress, begin, configs, link_config, point_warnings};
use crate::error::{Error, Result};
use crate::experiment::sample::{self, Budget, Outcome};
use crate::measure::distribution::{BLOCKS, Distribution, Figures, Spread, latency_figures};
use crate::measure::loadgen::{Background, LoadMode, LoadStats};
use crate::measure::stats::{Recorder, Stat};
use crate::options::{Amount, Arrival, DataDirection, LoadConfig};
use crate::result::load::*;
use crate::transport::{Link, ReplyShape};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Request and reply bytes for a transfer of `size` in `dir`.
fn shape(size: u64, dir: DataDirection, delay_ns: u64) -> ReplyShape {
    match dir {
        DataDirection::Read => {
            ReplyShape::pingpong(HEADER_BYTES as usize, size as usize, delay_ns, 0)
        }
        DataDirection::Write => {
            ReplyShape::pingpong(size as usize, HEADER_BYTES as usize, delay_ns, 0)
        }
    }
}

/// The CPUs the load runs on: as asked, or every allowed CPU the
/// initiator and responder do not use; on a machine with none spare, all
/// of them (shared, and said so).
fn load_cpus(
    args: &LoadConfig,
    allowed: &[usize],
    used: &[usize],
    warnings: &mut Vec<String>,
) -> Result<Vec<usize>> {
    if let Some(list) = &args.load_cpus {
        let v = list.clone();
        if v.is_empty() {
            return Err(Error::usage(
                "--load-cpus needs at least one CPU, e.g. --load-cpus 2,3",
            ));
        }
        if let Some(c) = v.iter().find(|c| !allowed.contains(c)) {
            return Err(Error::usage(format!(
                "--load-cpus: cpu {c} is not available (available: {})",
                crate::measure::placement::compact(allowed)
            )));
        }
        return Ok(v);
    }
    let spare: Vec<usize> = allowed
        .iter()
        .copied()
        .filter(|c| !used.contains(c))
        .collect();
    if spare.is_empty() {
        warnings.push(format!(
            "no CPU is free of the initiator and responder: the load shares cpus {} with them, so it competes for their time as well as for caches",
            crate::measure::placement::compact(allowed)
        ));
        Ok(allowed.to_vec())
    } else {
        Ok(spare)
    }
}

fn start_load(args: &LoadConfig, mode: LoadMode, cpus: &[usize]) -> Result<Background> {
    match (&args.load_cmd, mode) {
        (Some(cmd), m) if m != LoadMode::Idle => Background::command(cmd),
        _ => Background::start(mode, cpus),
    }
}

fn validate(args: &LoadConfig) -> Result<()> {
    if args.sizes.is_empty() || args.sizes.contains(&0) {
        return Err(Error::usage("--sizes needs sizes of at least one byte"));
    }
    if args.cell_time.is_zero() {
        return Err(Error::usage("--cell-time must be longer than zero"));
    }
    if args.loads.is_empty() || args.direction.is_empty() {
        return Err(Error::usage(
            "--load and --direction need at least one value each",
        ));
    }
    if args.inflight > 1 && (args.rate.is_some() || args.rates.is_some()) {
        return Err(Error::usage(
            "the open loop sends one request at a time; drop --inflight or --rate",
        ));
    }
    args.validate()
}

/// Runs the load matrix. Always returns the run (possibly incomplete) once
/// measuring begins; the error, if any, says why it stopped early. Setting
/// `stop` interrupts it. With `--repeat K`, the whole matrix runs K times
/// and each cell keeps every repeat; `loads` then lists every repeat's
/// background loads, in the order they ran.
pub fn run(
    args: &LoadConfig,
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<(LoadRun, Option<Error>)> {
    validate(args)?;
    let largest = args.sizes.iter().copied().max().unwrap_or(0);
    super::check_buffers(
        largest,
        largest,
        u64::from(args.inflight),
        "lower the largest of --sizes, or --inflight",
    )?;
    let cfgs = configs(&args.common, crate::transport::Capabilities::user_buffers)?;
    // Modes only, with the smallest exchange: sizes over a limit are
    // skipped cell by cell.
    let probe = crate::measure::placement::Placement::unpinned();
    let (cfgs, impossible) = super::usable(cfgs, |c| {
        let lc = link_config(c, &args.common, &probe, HEADER_BYTES, HEADER_BYTES)?;
        crate::transport::check(c.transport, &lc)
    })?;
    let mut loads: Vec<LoadStats> = Vec::new();
    super::limits::warm(&args.common.specs(), args.common.cpus.requested());
    let (mut run, err) = super::repeat::repeated(args.common.out.repeat, progress, |_, p| {
        let (run, err) = once(args, (cfgs.as_slice(), impossible.as_slice()), stop, p)?;
        loads.extend(run.extra.loads.iter().cloned());
        Ok((run, err))
    })?;
    run.extra.loads = loads;
    super::limits::attach(&mut run);
    Ok((run, err))
}

/// Notes a cell left out.
fn skip_cell(run: &mut LoadRun, c: &super::Config, dir: DataDirection, size: u64, reason: String) {
    run.extra.skipped.push(SkippedLoad {
        spec: c.spec.to_string(),
        buffers: c.buffers,
        completion: c.completion,
        direction: dir,
        size_bytes: size,
        reason,
    });
}

/// The cells of `c` its transport cannot carry, with why (a size over its
/// limit), in the matrix's order.
fn impossible_cells(args: &LoadConfig, c: &super::Config) -> Vec<(DataDirection, u64, String)> {
    let caps = c.transport.capabilities();
    let delay = args.common.responder_delay.as_nanos() as u64;
    let mut out = Vec::new();
    for &dir in &args.direction {
        for &size in &args.sizes {
            let sh = shape(size, dir, delay);
            if let Some(why) =
                crate::transport::cannot_carry(&caps, c.buffers, sh.request_len as u64, &sh)
            {
                out.push((dir, size, why));
            }
        }
    }
    out
}

/// One run of the whole matrix: the configurations to measure, and those
/// whose modes the transport lacks (each with why).
fn once(
    args: &LoadConfig,
    (cfgs, impossible): (&[super::Config], &[(super::Config, String)]),
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<(LoadRun, Option<Error>)> {
    let _keep = crate::measure::placement::KeepAffinity::new();
    let options =
        serde_json::to_value(args).map_err(|e| Error::run_from("recording options", e))?;
    let (mut run, placement): (LoadRun, _) = begin("load", &args.common, options)?;
    for (c, why) in impossible {
        for &dir in &args.direction {
            for &size in &args.sizes {
                skip_cell(&mut run, c, dir, size, why.clone());
            }
        }
    }
    progress.checkpoint(&run);
    let used: Vec<usize> = [placement.initiator_cpu, placement.responder_cpu]
        .into_iter()
        .flatten()
        .collect();
    // The process's CPUs as they were before the initiator pinned itself.
    let cpus = load_cpus(args, &placement.allowed_cpus, &used, &mut run.warnings)?;
    check_room(args, cfgs, &cpus)?;
    run.extra.load_cpus = cpus.clone();
    let open: Option<Vec<f64>> = args.rate.clone().or(args.rates.clone());
    let cells = match &open {
        Some(r) => cfgs.len() * args.direction.len() * args.sizes.len() * r.len(),
        None => cfgs.len() * args.direction.len() * args.loads.len() * args.sizes.len(),
    };
    progress.start(cells as u64);
    let mut after = None;
    let result = (|| -> Result<()> {
        for c in cfgs {
            let out = impossible_cells(args, c);
            for (dir, size, why) in &out {
                skip_cell(&mut run, c, *dir, *size, why.clone());
            }
            let carried = |dir: DataDirection, size: u64| {
                !out.iter().any(|(d, s, _)| *d == dir && *s == size)
            };
            let Some(max) = args
                .direction
                .iter()
                .flat_map(|&d| args.sizes.iter().filter(move |&&s| carried(d, s)))
                .max()
                .copied()
            else {
                continue;
            };
            let lc = link_config(
                c,
                &args.common,
                &placement,
                max.max(HEADER_BYTES),
                max.max(HEADER_BYTES),
            )?;
            let mut links: Vec<(Box<dyn Link>, Option<usize>)> = Vec::new();
            for _ in 0..args.inflight {
                links.push(super::open_link(&mut run, c, &lc, progress)?);
            }
            let ctx = Ctx {
                args,
                c,
                cpus: &cpus,
                stop,
                progress,
                carried: &carried,
            };
            let (mut ls, ats): (Vec<Box<dyn Link>>, Vec<Option<usize>>) = links.into_iter().unzip();
            let outcome = match &open {
                Some(rates) => open_loop(&ctx, ls[0].as_mut(), rates, &mut run),
                None => closed_loop(&ctx, &mut ls, &mut run),
            };
            for (l, at) in ls.into_iter().zip(ats) {
                super::close_link(&mut run, c, at, l, &outcome, &mut after);
            }
            outcome?;
        }
        let skipped: Vec<String> = run.extra.skipped.iter().map(SkippedLoad::label).collect();
        super::nothing_measured(run.points.len(), &skipped, "cell(s)")
    })();
    progress.finish();
    Ok(super::finish_after(run, result, after))
}

/// Refuses in one line, before any link opens, a load the machine's
/// limits cannot hold: each of `--inflight` clients is a thread with a
/// responder (a thread, or a process and the thread that watches it) and
/// a few descriptors, and the built-in load is a thread per CPU.
fn check_room(args: &LoadConfig, cfgs: &[super::Config], cpus: &[usize]) -> Result<()> {
    use crate::measure::room;
    let inflight = u64::from(args.inflight);
    let loads = if args.loads.iter().any(|&m| m != LoadMode::Idle) {
        cpus.len() as u64
    } else {
        0
    };
    let per_link = 3;
    room::check_threads(
        inflight * per_link + loads,
        &format!(
            "load --inflight {inflight} ({inflight} clients with their responders, {loads} load threads)"
        ),
        "lower --inflight",
    )?;
    // Each link's descriptors: its channel's two ends each way, the
    // responder's pidfd and the watchdog's eventfd, and some to spare.
    let fds = if cfgs.is_empty() { 0 } else { inflight * 8 };
    room::check_descriptors(
        fds,
        &format!("load --inflight {inflight}"),
        "lower --inflight",
    )
}

/// What every cell of one transport configuration shares.
struct Ctx<'a> {
    args: &'a LoadConfig,
    c: &'a super::Config,
    cpus: &'a [usize],
    stop: &'a AtomicBool,
    progress: &'a dyn Progress,
    /// Whether the transport carries a cell (direction, size): the others
    /// are skipped already.
    carried: &'a dyn Fn(DataDirection, u64) -> bool,
}

/// The reason a cell's exchange was refused (the device's configure
/// turned its shape down: a usage error), if it was: the cell is then
/// skipped, the links still in step.
fn refused(results: &[Result<Outcome>]) -> Option<String> {
    results.iter().find_map(|r| match r {
        Err(Error::Usage { message, .. }) => Some(message.clone()),
        _ => None,
    })
}

fn closed_loop(ctx: &Ctx, links: &mut [Box<dyn Link>], run: &mut LoadRun) -> Result<()> {
    let Ctx {
        args,
        c,
        cpus,
        stop,
        progress,
        carried,
    } = *ctx;
    let delay = args.common.responder_delay.as_nanos() as u64;
    let budget = Budget {
        warmup: Some(args.common.warmup.unwrap_or(args.cell_warmup)),
        amount: Amount::Time(args.cell_time),
    };
    for &dir in &args.direction {
        if !args.sizes.iter().any(|&s| carried(dir, s)) {
            continue;
        }
        for &mode in &args.loads {
            let bg = start_load(args, mode, cpus)?;
            let first = run.points.len();
            for &size in args.sizes.iter().filter(|&&s| carried(dir, s)) {
                progress.point(&format!(
                    "{} {} {} under {}",
                    c.spec,
                    dir_name(dir),
                    size,
                    mode.name()
                ));
                let sh = shape(size, dir, delay);
                // Every link measures the same cell at the same time.
                let results: Vec<Result<Outcome>> = std::thread::scope(|s| {
                    let hs: Vec<_> = links
                        .iter_mut()
                        .map(|l| {
                            std::thread::Builder::new()
                                .name("xb-client".into())
                                .spawn_scoped(s, move || {
                                    sample::measure(l.as_mut(), &sh, &budget, stop)
                                })
                        })
                        .collect();
                    hs.into_iter()
                        .map(|h| match h {
                            Ok(h) => h
                                .join()
                                .unwrap_or_else(|_| Err(Error::run("a load client panicked"))),
                            Err(e) => Err(Error::run_from(
                                "cannot start a load client's thread (lower --inflight)",
                                e,
                            )),
                        })
                        .collect()
                });
                if let Some(why) = refused(&results) {
                    skip_cell(run, c, dir, size, why);
                    continue;
                }
                let mut all = Recorder::new();
                let (mut secs, mut partial) = (0.0f64, false);
                let mut warnings = Vec::new();
                let mut measured = Vec::new();
                for r in results {
                    match r? {
                        Outcome::Done(m) => {
                            all.merge(&m.all);
                            secs = secs.max(m.timed_s);
                            warnings.extend(point_warnings(&m, &[Stat::Mean, Stat::P99]));
                            measured.push(m);
                        }
                        Outcome::Interrupted(m) => {
                            partial = true;
                            if let Some(m) = m {
                                all.merge(&m.all);
                                secs = secs.max(m.timed_s);
                                measured.push(m);
                            }
                        }
                    }
                }
                warnings.dedup();
                let n = all.count();
                if n > 0 {
                    let rps = n as f64 / secs.max(1e-9);
                    run.points.push(LoadPoint::Closed(ClosedPoint {
                        transport: c.transport.name().into(),
                        spec: c.spec.to_string(),
                        buffers: c.buffers,
                        completion: c.completion,
                        direction: dir,
                        size_bytes: size,
                        load: load_label(args, mode),
                        inflight: args.inflight,
                        req_per_s: rps,
                        kb_per_s: rps * size as f64 / 1024.0,
                        load_ops_per_s: None,
                        load_unit: "",
                        requests: n,
                        seconds: secs,
                        latency: all.summary(),
                        device_time: sample::device_time(&measured),
                        partial,
                        warnings,
                        spread: Spread {
                            histogram: Some(Distribution::of(&all)),
                            repeats: Vec::new(),
                            blocks: closed_blocks(&measured),
                        },
                    }));
                    progress.checkpoint(run);
                }
                if partial {
                    let _ = bg.stop();
                    return Err(Error::Interrupted);
                }
            }
            let stats = bg.stop()?;
            for p in &mut run.points[first..] {
                if let LoadPoint::Closed(p) = p {
                    p.load_ops_per_s = stats.ops_per_s;
                    p.load_unit = stats.unit;
                }
            }
            run.extra.loads.push(stats);
        }
    }
    Ok(())
}

/// The closed loop's blocks: each tenth of the cell's timed span (the
/// sampler's time blocks), every link's requests in it together. The links
/// run side by side, so block i of each covers about the same stretch of
/// time: its rate is their requests over the longest link's time in it,
/// as the cell's own rate is over the longest link's span. None when the
/// links kept different numbers of blocks (a block with no request at all
/// on one link: a request longer than a tenth of the cell).
fn closed_blocks(measured: &[sample::Measured]) -> Vec<Figures> {
    let Some(n) = measured.first().map(|m| m.blocks.len()) else {
        return Vec::new();
    };
    if measured
        .iter()
        .any(|m| m.blocks.len() != n || m.block_s.len() != n)
    {
        return Vec::new();
    }
    (0..n)
        .map(|i| {
            let mut rec = Recorder::new();
            let mut secs = 0.0f64;
            for m in measured {
                rec.merge(&m.blocks[i]);
                secs = secs.max(m.block_s[i]);
            }
            let mut f = latency_figures(&rec.summary());
            f.insert("req_per_s", rec.count() as f64 / secs.max(1e-9));
            f
        })
        .collect()
}

/// Exchanges configured with the responder at a time in the open loop: the
/// run can stop at any batch boundary when the cell ends.
const OPEN_BATCH: u64 = 64;

/// Waits until `t`: sleeps while it is far, spins the last stretch.
fn wait_until(t: Instant) {
    loop {
        let now = Instant::now();
        if now >= t {
            return;
        }
        let left = t - now;
        if left > Duration::from_micros(200) {
            std::thread::sleep(left - Duration::from_micros(100));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// What a point records as its load: the mode's word, or the command that
/// ran in its place (`--load-cmd`, every mode but idle), the same in the
/// closed and the open loop.
fn load_label(args: &LoadConfig, mode: LoadMode) -> String {
    match &args.load_cmd {
        Some(cmd) if mode != LoadMode::Idle => format!("cmd: {cmd}"),
        _ => mode.name().into(),
    }
}

fn open_loop(ctx: &Ctx, link: &mut dyn Link, rates: &[f64], run: &mut LoadRun) -> Result<()> {
    let Ctx {
        args,
        c,
        cpus,
        stop,
        progress,
        carried,
    } = *ctx;
    let delay = args.common.responder_delay.as_nanos() as u64;
    let mode = args.loads[0];
    let bg = start_load(args, mode, cpus)?;
    let result = (|| -> Result<()> {
        for &dir in &args.direction {
            for &size in args.sizes.iter().filter(|&&s| carried(dir, s)) {
                // A short warm-up at no particular rate; a shape the
                // device refuses is skipped here, at all rates.
                let warm = match sample::measure(
                    link,
                    &shape(size, dir, delay),
                    &Budget {
                        warmup: Some(50),
                        amount: Amount::Samples(50),
                    },
                    stop,
                ) {
                    Err(Error::Usage { message, .. }) => {
                        skip_cell(run, c, dir, size, message);
                        continue;
                    }
                    r => r?,
                };
                if matches!(warm, Outcome::Interrupted(_)) {
                    return Err(Error::Interrupted);
                }
                for &rate in rates {
                    progress.point(&format!(
                        "{} {} {} at {rate:.0}/s",
                        c.spec,
                        dir_name(dir),
                        size
                    ));
                    let p = open_cell(args, c, link, shape(size, dir, delay), rate, stop)?;
                    let interrupted = p.partial;
                    run.points.push(LoadPoint::Open(OpenPoint {
                        direction: dir,
                        size_bytes: size,
                        load: load_label(args, mode),
                        ..p
                    }));
                    ctx.progress.checkpoint(run);
                    if interrupted {
                        return Err(Error::Interrupted);
                    }
                }
            }
        }
        Ok(())
    })();
    let stats = bg.stop();
    result?;
    run.extra.loads.push(stats?);
    Ok(())
}

/// One offered rate for one cell time. Each reply is filed in the tenth of
/// the cell it came back in, so the blocks show whether the rate and the
/// latencies held through the cell (a queue that builds up shows as
/// latencies growing block after block).
fn open_cell(
    args: &LoadConfig,
    c: &super::Config,
    link: &mut dyn Link,
    mut sh: ReplyShape,
    rate: f64,
    stop: &AtomicBool,
) -> Result<OpenPoint> {
    let cell = args.cell_time;
    let cell_s = cell.as_secs_f64();
    let mut rng = 0x5eed_u64 ^ rate.to_bits();
    let gap = |rng: &mut u64| -> f64 {
        match args.arrival {
            Arrival::Fixed => 1.0 / rate,
            Arrival::Poisson => {
                let u = (crate::payload::splitmix(rng) >> 11) as f64 / (1u64 << 53) as f64;
                -(1.0 - u).ln() / rate
            }
        }
    };
    let mut blocks: Vec<Recorder> = (0..BLOCKS).map(|_| Recorder::new()).collect();
    let per_block = BLOCKS as f64 / cell_s;
    let (mut completed, mut late, mut due_at) = (0u64, 0u64, 0.0f64);
    let mut partial = false;
    let start = Instant::now();
    let end = start + cell;
    // Exchanges announced to the responder and not yet made.
    let mut owed = 0u64;
    loop {
        // The cell ends at its time, however far behind the schedule is:
        // what was due and not sent by then is missed. (The nanosecond
        // keeps a sum of 1/R steps that lands on the end from counting.)
        if due_at >= cell_s - 1e-9 || Instant::now() >= end {
            break;
        }
        let due = start + Duration::from_secs_f64(due_at);
        if stop.load(Ordering::Relaxed) {
            partial = true;
            break;
        }
        if owed == 0 {
            sh.exchanges = OPEN_BATCH;
            link.configure(&sh)?;
            owed = OPEN_BATCH;
        }
        wait_until(due);
        if Instant::now() > due + Duration::from_micros(10) {
            late += 1;
        }
        link.exchange()?;
        owed -= 1;
        let back = Instant::now();
        let block = (((back - start).as_secs_f64() * per_block) as usize).min(BLOCKS - 1);
        blocks[block].record((back - due).as_nanos() as u64);
        completed += 1;
        due_at += gap(&mut rng);
    }
    let elapsed = start.elapsed().as_secs_f64().max(1e-9);
    if !partial {
        // The rest of the announced batch, untimed, so the link stays in step.
        for _ in 0..owed {
            link.exchange()?;
        }
    }
    let seconds = elapsed.min(cell.as_secs_f64());
    // Every request due before the end of the cell, from the same schedule.
    let mut rng = 0x5eed_u64 ^ rate.to_bits();
    let (mut due, mut t) = (0u64, 0.0f64);
    while t < cell_s - 1e-9 {
        due += 1;
        t += gap(&mut rng);
    }
    let missed = due.saturating_sub(completed);
    let mut warnings = Vec::new();
    if missed > 0 {
        warnings.push(missed_warning(missed, due));
    }
    let mut rec = Recorder::new();
    for b in &blocks {
        rec.merge(b);
    }
    Ok(OpenPoint {
        transport: c.transport.name().into(),
        spec: c.spec.to_string(),
        buffers: c.buffers,
        completion: c.completion,
        direction: DataDirection::Write,
        size_bytes: 0,
        load: String::new(),
        arrival: args.arrival,
        offered_per_s: rate,
        achieved_per_s: completed as f64 / elapsed,
        due,
        completed,
        missed,
        late,
        seconds,
        latency: rec.summary(),
        partial,
        warnings,
        spread: Spread {
            histogram: Some(Distribution::of(&rec)),
            repeats: Vec::new(),
            blocks: open_blocks(&blocks, cell_s, elapsed),
        },
    })
}

/// The open loop's blocks: the replies that came back in each tenth of the
/// cell, over that tenth's length (the last runs to the end of the cell's
/// elapsed time, a stop cuts one short and drops those after it). A tenth
/// in which nothing came back is kept, at 0/s: a stall is what it shows.
fn open_blocks(blocks: &[Recorder], cell_s: f64, elapsed: f64) -> Vec<Figures> {
    let n = blocks.len();
    blocks
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let from = cell_s * i as f64 / n as f64;
            let to = if i + 1 == n {
                elapsed
            } else {
                (cell_s * (i + 1) as f64 / n as f64).min(elapsed)
            };
            if to <= from {
                return None;
            }
            let mut f = if r.count() > 0 {
                latency_figures(&r.summary())
            } else {
                Figures::from([("count", 0.0)])
            };
            f.insert("achieved_per_s", r.count() as f64 / (to - from));
            Some(f)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_command_is_recorded_as_the_load_in_either_loop() {
        let mut args = LoadConfig::default();
        assert_eq!(load_label(&args, LoadMode::Alu), "alu");
        args.load_cmd = Some("stress-ng --cpu 2".into());
        assert_eq!(load_label(&args, LoadMode::Alu), "cmd: stress-ng --cpu 2");
        // Idle stays idle: the command runs only in place of a load.
        assert_eq!(load_label(&args, LoadMode::Idle), "idle");
    }
}
