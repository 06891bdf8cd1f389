//! `xferbench flowgraph`: what a streaming runtime costs. For each core count
//! N and chain length M, each scheduler runs source → M saxpy → sink and the
//! sink's rate is set against the kernel alone: the ideal bounds (dynamic
//! N/M and static 1/⌈M/N⌉ times the best single-kernel rate measured in
//! this run) and the ring reference, which pays what any multi-core runtime
//! must (moving buffers between cores) and nothing else.

use super::Progress;
use crate::error::{Error, Result};
use crate::flowgraph::edge::{self, Edges};
use crate::flowgraph::graph;
use crate::flowgraph::plan::Config;
use crate::flowgraph::rate::{Windows, quantile};
use crate::flowgraph::ring_reference as reference;
use crate::flowgraph::saxpy;
use crate::flowgraph::sched::Scheduler;
use crate::measure::distribution::{BLOCKS, Spread};
use crate::measure::env::Env;
use crate::measure::placement::Placement;
use crate::options::FlowgraphConfig;
use crate::result::flowgraph::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// One point of the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub cores: usize,
    pub blocks: usize,
    pub scheduler: Scheduler,
    pub edges: Edges,
}

/// The kernel `--kernel` names (`auto`: the widest), if this CPU runs it.
fn kernel_for(name: &str) -> Result<(saxpy::Kernel, &'static str)> {
    if name == "auto" {
        return Ok(saxpy::best());
    }
    saxpy::by_name(name).ok_or_else(|| {
        let here: Vec<&str> = saxpy::available().iter().map(|k| k.1).collect();
        Error::usage(format!(
            "--kernel {name}: this CPU cannot run it (it has {}); pick one of those or auto",
            here.join(", ")
        ))
    })
}

/// The plan, in run order: every scheduler that applies on every kind of
/// edge asked for (the ring reference once: it has no runtime edges).
pub fn plan(args: &FlowgraphConfig, available: usize) -> Result<Vec<Step>> {
    let cores = args
        .cores
        .as_ref()
        .map_or_else(|| (1..=available).collect(), |c| c.clone());
    if let Some(&n) = cores.iter().find(|&&n| n > available) {
        return Err(Error::usage(format!(
            "--cores {n}: only {available} CPUs are available here; use --cores 1..{available} or name more with --cpus"
        )));
    }
    let scheds: Vec<Scheduler> = if args.scheduler.is_empty() {
        Scheduler::ALL.to_vec()
    } else {
        args.scheduler.clone()
    };
    let mut out = Vec::new();
    for &n in &cores {
        let blocks = args
            .blocks
            .as_ref()
            .map_or_else(|| (n..=3 * n).collect(), |b| b.clone());
        for &m in &blocks {
            for &s in scheds.iter().filter(|s| s.applies(n)) {
                let kinds = if s == Scheduler::Ring {
                    &[Edges::Handoff][..]
                } else {
                    &args.edges[..]
                };
                for &e in kinds {
                    out.push(Step {
                        cores: n,
                        blocks: m,
                        scheduler: s,
                        edges: e,
                    });
                }
            }
        }
    }
    if out.is_empty() {
        return Err(Error::usage(
            "nothing to run: seq needs --cores 1; add another --scheduler or core count",
        ));
    }
    Ok(out)
}

/// Runs `f` on a thread pinned to `cpu` (the kernel references must not
/// share a core with the coordinator's bookkeeping).
fn pinned<T: Send + 'static>(
    cpu: usize,
    what: &'static str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T> {
    std::thread::Builder::new()
        .name("xb-fg-kernel".into())
        .spawn(move || -> Result<T> {
            crate::measure::placement::pin_current(cpu)?;
            Ok(f())
        })
        .map_err(|e| Error::run_from(format!("starting {what}"), e))?
        .join()
        .unwrap_or_else(|_| Err(Error::run(format!("{what} panicked"))))
}

/// The scan over buffer sizes: two passes, the second in reverse order, so
/// a slow second of the host does not hide a size's rate (which would pick
/// the wrong best size); each size keeps its better median. It takes a
/// couple of seconds, so a stop ends it between sizes (with the sizes
/// measured so far) rather than after it.
fn scan(
    args: &FlowgraphConfig,
    kernel: saxpy::Kernel,
    cpu: usize,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<ScanPoint>> {
    let sizes: Vec<u64> = args
        .kernel_sizes
        .iter()
        .copied()
        .filter(|&b| b >= 4)
        .collect();
    let stop = Arc::clone(stop);
    pinned(cpu, "the kernel scan", move || {
        let time = Duration::from_millis(60);
        let mut windows: Vec<Option<Windows>> = sizes.iter().map(|_| None).collect();
        // Forward then back, pooled: a slow stretch of the host falls on
        // small and large sizes alike, and the best size is picked by the
        // same median as everything else, not by the luckier of two passes.
        let order = (0..sizes.len()).chain((0..sizes.len()).rev());
        for i in order {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            windows[i]
                .get_or_insert_default()
                .merge(reference::kernel_windows(
                    kernel,
                    (sizes[i] / 4) as usize,
                    time,
                ));
        }
        sizes
            .iter()
            .zip(windows)
            .filter_map(|(&b, w)| {
                let r = w?.rate();
                Some(ScanPoint {
                    buffer_bytes: b,
                    samples_per_s: r.per_s,
                    mean_sps: r.mean_per_s,
                })
            })
            .collect()
    })
}

/// Fills in each point's bounds from the run's kernel-only rate (and its
/// paired efficiency from the kernel measured beside it). Run again on
/// merged repeats, it redoes them (and the warning) from the merged rates.
fn bound(run: &mut FlowRun) {
    let k = run.extra.kernel_only_sps;
    for p in &mut run.points {
        let (n, m) = (p.cores as f64, p.blocks);
        p.ideal_dynamic_sps = k * n / m as f64;
        p.ideal_static_sps = k / m.div_ceil(p.cores) as f64;
        p.efficiency = p.samples_per_s / p.ideal_static_sps;
        p.efficiency_dynamic = p.samples_per_s / p.ideal_dynamic_sps;
        p.efficiency_paired = p.samples_per_s * m.div_ceil(p.cores) as f64 / p.kernel_paired_sps;
        p.efficiency_same_size =
            p.samples_per_s * m.div_ceil(p.cores) as f64 / run.extra.kernel_at_buffer_sps;
        p.warnings.retain(|w| w != FASTER_THAN_BOUND);
        if p.samples_per_s > p.ideal_dynamic_sps.max(p.ideal_static_sps) * 1.05 {
            p.warnings.push(FASTER_THAN_BOUND.into());
        }
    }
}

/// Rounds per (N, M): `--rounds`, or one when each point runs until
/// `--items` (a count cannot be split into slices of time).
fn rounds(args: &FlowgraphConfig) -> usize {
    if args.items.is_some() {
        1
    } else {
        args.rounds as usize
    }
}

/// Buffers circulating in the ring reference or a handoff circuit. By
/// default N+1, the seed's ring — except for two kinds of circuit, which
/// hold what the circular buffers of the same flowgraph hold:
/// - under a scheduler whose blocks sleep, `edge_buffers` per edge: a block
///   there can run only after another has been woken and handed a buffer
///   on, so N+1 buffers among M+2 blocks leave most of them waiting on
///   wake-ups;
/// - under `static` on more than one core, `edge_buffers` more per edge
///   between cores: a buffer read on the next core straight after it was
///   written is fetched from the writer's cache line by line, and one that
///   waited has left it (on a Sapphire Rapids guest, N=2: 2.4 G samples/s
///   with N+1, 4.3–5.5 G with 256 more; the ring, with N+1, 2.0–2.4 G).
fn circulating(
    args: &FlowgraphConfig,
    edge_buffers: usize,
    s: Scheduler,
    edges: Edges,
    n: usize,
    m: usize,
) -> usize {
    match args.buffers.parse() {
        Ok(b) => b,
        Err(_) if s.sleeps() && edges == Edges::Handoff => edge_buffers * (m + 1),
        Err(_) if s == Scheduler::Static && edges == Edges::Handoff => {
            edge_buffers * (n - 1) + n + 1
        }
        Err(_) => n + 1,
    }
}

/// Bytes of buffers one point of `st` allocates, at most: every edge as
/// deep as a circular one between threads, every spare a buffer of its own.
fn footprint(args: &FlowgraphConfig, eb: usize, st: &Step) -> u64 {
    let (bs, m) = (args.buffer_size, st.blocks as u64);
    let handed = |count: usize| (count as u64 + m) * (bs + 2 * crate::flowgraph::ring::PAGE as u64);
    match (st.scheduler, st.edges) {
        (Scheduler::Ring, _) | (_, Edges::Handoff) => handed(circulating(
            args,
            eb,
            st.scheduler,
            st.edges,
            st.cores,
            st.blocks,
        )),
        (_, Edges::Circular) => (m + 1) * (eb as u64 * bs).max(bs).next_power_of_two(),
    }
}

/// Refuses a plan whose buffers alone would take more than half the memory
/// available: the run would thrash or be killed instead of measuring.
fn check_memory(args: &FlowgraphConfig, eb: usize, plan: &[Step]) -> Result<()> {
    let Some(avail) = crate::measure::env::available_memory() else {
        return Ok(());
    };
    if let Some(st) = plan.iter().max_by_key(|st| footprint(args, eb, st)) {
        // Circular buffers are mapped twice: address space for both, and
        // the kernel-only scan's and the blocks' own buffers beside them.
        crate::measure::room::check_memory(
            footprint(args, eb, st)
                .saturating_mul(2)
                .saturating_add(args.buffer_size.saturating_mul(4 * st.blocks as u64)),
            &format!(
                "{} at N={} M={}",
                edge::series(st.scheduler.name(), st.edges.name()),
                st.cores,
                st.blocks
            ),
            "use a smaller --buffer-size, --edge-buffers or --blocks",
        )?;
    }
    match plan.iter().max_by_key(|st| footprint(args, eb, st)) {
        Some(st) if footprint(args, eb, st) > avail / 2 => Err(Error::usage(format!(
            "{} at N={} M={} needs about {} of buffers ({eb} × {} per edge between threads), more than half the {} available; use a smaller --buffer-size, --edge-buffers or --buffers",
            edge::series(st.scheduler.name(), st.edges.name()),
            st.cores,
            st.blocks,
            gib(footprint(args, eb, st)),
            crate::units::format_size(args.buffer_size),
            gib(avail),
        ))),
        _ => Ok(()),
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// Where sysfs does not say: a common size today.
const L2_GUESS: usize = 1 << 20;

/// `--edge-buffers`: a number, or (auto) enough buffers for twice the L2
/// cache, a power of two from 2 to 4096. Why: the lines a producer writes
/// on each lap of a circular buffer are lines its consumer read on the
/// last. While the consumer's core still holds them, every store has to
/// take its line back from that core first; on a 2-core EPYC that held
/// `static` at N=2 to half the ring reference with 2 buffers (32 KiB) per
/// edge. Past twice the L2 the consumer's copies have been evicted by the
/// time the producer comes round, and the stores find the lines in the
/// shared L3 instead. Sleeping schedulers gain as much again from the
/// depth: a block woken once works through many buffers.
fn edge_buffers(args: &FlowgraphConfig, l2: Option<usize>) -> usize {
    args.edge_buffers.parse().unwrap_or_else(|_| {
        (2 * l2.unwrap_or(L2_GUESS) as u64)
            .div_ceil(args.buffer_size)
            .next_power_of_two()
            .clamp(2, 4096) as usize
    })
}

/// The depth of a circular buffer that may join blocks on different
/// threads, at one (N, M): `eb` (`--edge-buffers`), except when `auto` sizes
/// it on one core. There nothing crosses between caches, so twice the L2
/// per edge only spreads the working set over the L2 and beyond; the
/// schedulers whose blocks sleep still want some depth, so a block woken
/// once works through several buffers. It gets as many as keep every
/// ring of the flowgraph within half the L2 (at least 2, at most `eb`):
/// on a Sapphire Rapids guest at M=1..3, tokio and async-executor went
/// from 3.6, 2.0, 1.4 G samples/s with 4 MiB per edge to 10, 5.5, 3.6 G.
fn depth(args: &FlowgraphConfig, eb: usize, l2: Option<usize>, n: usize, m: usize) -> usize {
    if n > 1 || args.edge_buffers.parse::<usize>().is_ok() {
        return eb;
    }
    let room = l2.unwrap_or(L2_GUESS) as u64 / 2;
    let per = (m as u64 + 1) * args.buffer_size;
    let d = (room / per).max(1);
    // The largest power of two not above d.
    (1usize << d.ilog2()).clamp(2, eb.max(2))
}

/// A point's (depth of a circular buffer between threads, buffers round a
/// handoff circuit), from the run's resolved `--edge-buffers` `eb`.
fn point_buffers(
    args: &FlowgraphConfig,
    eb: usize,
    l2: Option<usize>,
    st: &Step,
) -> (usize, usize) {
    let d = depth(args, eb, l2, st.cores, st.blocks);
    let c = circulating(args, d, st.scheduler, st.edges, st.cores, st.blocks);
    (d, c)
}

/// The kernel alone at the scan's best size, between two points.
const PAIRED: Duration = Duration::from_millis(100);

/// Runs the flowgraph plan. Always returns the run (possibly incomplete) once
/// measuring begins; the error, if any, says why it stopped early. Setting
/// `stop` interrupts it. With `--repeat K` the whole plan, kernel scan
/// included, runs K times; each point pools its repeats' windows, and the
/// kernel-only references (the bounds' unit) are the first repeat's.
pub fn run(
    args: &FlowgraphConfig,
    stop: &Arc<AtomicBool>,
    progress: &dyn Progress,
) -> Result<(FlowRun, Option<Error>)> {
    args.validate()?;
    let allowed = cpus_of(args)?;
    let plan = plan(args, allowed.len())?;
    let kernel = kernel_for(&args.kernel)?;
    let k = args.out.repeat;
    super::limits::warm_memory();
    let (mut run, err) = super::repeat::repeated(k, progress, |_, p| {
        once(args, &allowed, plan.clone(), kernel, stop, p)
    })?;
    if k > 1 {
        bound(&mut run);
    }
    super::limits::attach_flowgraph(&mut run);
    Ok((run, err))
}

/// One run of the whole plan.
fn once(
    args: &FlowgraphConfig,
    allowed: &[usize],
    plan: Vec<Step>,
    (kernel, kernel_name): (saxpy::Kernel, &'static str),
    stop: &Arc<AtomicBool>,
    progress: &dyn Progress,
) -> Result<(FlowRun, Option<Error>)> {
    let _keep = crate::measure::placement::KeepAffinity::new();
    let mut run = new_run(args, allowed, kernel_name);
    let l2 = run.extra.l2_cache_bytes;
    let eb = edge_buffers(args, l2);
    run.extra.edge_buffers = eb;
    check_memory(args, eb, &plan)?;
    let rounds = rounds(args);
    progress.start((plan.len() * rounds) as u64 + 1);
    // What a run stopped before its first point writes: its conditions.
    progress.checkpoint(&run);
    progress.point("kernel-only scan");
    let scan = scan(args, kernel, allowed[0], stop)?;
    if stop.load(Ordering::Relaxed) {
        run.extra.kernel_scan = scan;
        progress.finish();
        return Ok(ended(run, Some(Error::Interrupted)));
    }
    let best = scan
        .iter()
        .max_by(|a, b| a.samples_per_s.total_cmp(&b.samples_per_s))
        .cloned();
    let Some(best) = best else {
        return Err(Error::usage(
            "--kernel-sizes has no size of at least 4 B: the bounds need a kernel-only rate",
        ));
    };
    run.extra.kernel_only_buffer_bytes = best.buffer_bytes;
    let chunk = (args.buffer_size / 4) as usize;
    // The kernel at the flowgraph's own size, as far as the scan has it.
    let mut at_buffer: Vec<f64> = scan
        .iter()
        .filter(|p| p.buffer_bytes / 4 == chunk as u64)
        .map(|p| p.samples_per_s)
        .collect();
    run.extra.kernel_scan = scan;
    // The scan took seconds: kept, should the run die before its first point.
    progress.checkpoint(&run);
    // The kernel at the best size (and at the flowgraph's, where that
    // differs) again before the first point and after each round: the
    // host's speed drifts over seconds, and each point's paired rate is the
    // kernel's in the same stretch of time.
    let (cpu0, best_n) = (allowed[0], (best.buffer_bytes / 4) as usize);
    let paired = move || {
        pinned(cpu0, "the paired kernel", move || {
            let at_best = reference::kernel_rate(kernel, best_n, PAIRED).per_s;
            let at_buffer = if best_n == chunk {
                at_best
            } else {
                reference::kernel_rate(kernel, chunk, PAIRED).per_s
            };
            (at_best, at_buffer)
        })
    };
    let mut refs = vec![best.samples_per_s];
    let (before, buf) = paired()?;
    refs.push(before);
    at_buffer.push(buf);
    // Each (N, M) in rounds: every scheduler of it measures a slice of its
    // time in turn, then again, so a slow second of the host falls on all
    // of them alike rather than on whichever ran then.
    let rig = Rig {
        args,
        allowed,
        kernel,
        eb,
        l2,
        rounds,
        chunk,
        slice: args.duration / rounds as u32,
        stop,
        progress,
        paired: &paired,
    };
    let mut kernel = Kernel { refs, at_buffer };
    let mut err = None;
    for group in same_graph(plan) {
        err = rig.group(&mut run, &group, &mut kernel);
        if err.is_some() {
            break;
        }
    }
    kernel.settle(&mut run);
    progress.finish();
    Ok(ended(run, err))
}

/// The run as it ends: complete, or stopped by `err`.
fn ended(mut run: FlowRun, err: Option<Error>) -> (FlowRun, Option<Error>) {
    match &err {
        None => run.complete = true,
        Some(e) => {
            run.stopped_by = Some(match e {
                Error::Interrupted => "interrupted".into(),
                other => other.to_string(),
            });
        }
    }
    (run, err)
}

/// The kernel-only rates measured between rounds: at its best size, and
/// at the flowgraph's buffer size.
struct Kernel {
    refs: Vec<f64>,
    at_buffer: Vec<f64>,
}

impl Kernel {
    /// Puts the kernel-only figures in `run` and each point's bounds
    /// from them: at the end, and in each checkpoint.
    fn settle(&self, run: &mut FlowRun) {
        let mut refs = self.refs.clone();
        refs.sort_by(f64::total_cmp);
        let x = &mut run.extra;
        x.kernel_only_sps = quantile(&refs, 0.5);
        x.kernel_only_min_sps = refs.first().copied().unwrap_or_default();
        x.kernel_only_max_sps = refs.last().copied().unwrap_or_default();
        x.kernel_only_measurements = refs.len();
        let mut at_buffer = self.at_buffer.clone();
        at_buffer.sort_by(f64::total_cmp);
        x.kernel_at_buffer_sps = quantile(&at_buffer, 0.5);
        x.kernel_at_buffer_measurements = at_buffer.len();
        bound(run);
    }
}

/// What every point of one run shares.
struct Rig<'a> {
    args: &'a FlowgraphConfig,
    allowed: &'a [usize],
    kernel: saxpy::Kernel,
    eb: usize,
    l2: Option<usize>,
    rounds: usize,
    chunk: usize,
    slice: Duration,
    stop: &'a Arc<AtomicBool>,
    progress: &'a dyn Progress,
    /// The kernel measured again, pinned: (at its best size, at the buffer's).
    paired: &'a dyn Fn() -> Result<(f64, f64)>,
}

impl Rig<'_> {
    /// One (N, M): its schedulers measured in turn, round after round, the
    /// kernel again after each round; their points pushed (those that ran
    /// at least once); the error that stopped it, if one did.
    fn group(&self, run: &mut FlowRun, group: &[Step], kernel: &mut Kernel) -> Option<Error> {
        let mut got: Vec<(Windows, usize)> =
            group.iter().map(|_| (Windows::default(), 0)).collect();
        let mut kernel_runs = vec![kernel.refs.last().copied().unwrap_or_default()];
        let mut err = None;
        'rounds: for round in 0..self.rounds {
            for (i, st) in group.iter().enumerate() {
                if self.stop.load(Ordering::Relaxed) {
                    err = Some(Error::Interrupted);
                    break 'rounds;
                }
                match self.measure(st, round) {
                    Ok(w) => {
                        got[i].0.merge(w);
                        got[i].1 += 1;
                        // After each scheduler, not only each round: a
                        // round of a large group takes long, and a killed
                        // measuring process leaves only what was sent.
                        self.keep(run, group, &got, &kernel_runs, kernel);
                    }
                    Err(e) => {
                        err = Some(e);
                        break 'rounds;
                    }
                }
            }
            match (self.paired)() {
                Ok((k, buf)) => {
                    kernel.refs.push(k);
                    kernel.at_buffer.push(buf);
                    kernel_runs.push(k);
                }
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
            self.keep(run, group, &got, &kernel_runs, kernel);
        }
        run.points.extend(self.points(group, got, &kernel_runs));
        err
    }

    /// Checkpoints the run so far, this group's points as they stand
    /// (those measured at least once): what a stop the run cannot answer
    /// in time writes, and what the supervisor writes if this process dies.
    fn keep(
        &self,
        run: &FlowRun,
        group: &[Step],
        got: &[(Windows, usize)],
        kernel_runs: &[f64],
        kernel: &Kernel,
    ) {
        let mut snap = run.clone();
        snap.points
            .extend(self.points(group, got.to_vec(), kernel_runs));
        kernel.settle(&mut snap);
        self.progress.checkpoint(&snap);
    }

    /// The group's points from what each scheduler measured (those that
    /// ran at least once), with the kernel's mean rate over `kernel_runs`.
    fn points(
        &self,
        group: &[Step],
        got: Vec<(Windows, usize)>,
        kernel_runs: &[f64],
    ) -> Vec<FlowPoint> {
        let kernel_paired = kernel_runs.iter().sum::<f64>() / kernel_runs.len() as f64;
        group
            .iter()
            .zip(got)
            .filter(|(_, (_, done))| *done > 0)
            .map(|(st, (windows, done))| {
                let measured = Measured {
                    windows,
                    done,
                    kernel_paired,
                };
                point(
                    self.args,
                    st,
                    self.allowed,
                    self.eb,
                    self.l2,
                    self.rounds,
                    measured,
                )
            })
            .collect()
    }

    /// One scheduler's slice of one round.
    fn measure(&self, st: &Step, round: usize) -> Result<Windows> {
        let (args, rounds) = (self.args, self.rounds);
        let (n, m, s) = (st.cores, st.blocks, st.scheduler);
        let (depth, circuit) = point_buffers(args, self.eb, self.l2, st);
        self.progress.point(&format!(
            "{} N={n} M={m}{}",
            edge::series(s.name(), st.edges.name()),
            if rounds > 1 {
                format!(" (round {}/{rounds})", round + 1)
            } else {
                String::new()
            }
        ));
        let cfg = Config {
            blocks: m,
            cpus: self.allowed[..n].to_vec(),
            chunk: self.chunk,
            edges: st.edges,
            buffers: circuit,
            edge_buffers: depth,
            // The first round warms the caches; later ones need only fill
            // the pipeline.
            warmup: if round == 0 {
                args.warmup
            } else {
                args.warmup / 3
            },
            duration: self.slice,
            items: args.items,
            timeout: args.timeout,
        };
        graph::measure(s, &cfg, self.kernel, self.stop)
    }
}

/// The CPUs the flowgraph may pin its threads to: those given, each checked
/// against this process's mask, or the whole mask.
fn cpus_of(args: &FlowgraphConfig) -> Result<Vec<usize>> {
    Ok(match args.cpus.requested() {
        None => {
            return Err(Error::usage(
                "flowgraph pins its threads: give CPUs with --cpus 0,1 (or leave --cpus out)",
            ));
        }
        Some([]) => crate::measure::placement::allowed_cpus(),
        Some(v) => {
            let ok = crate::measure::placement::allowed_cpus();
            if let Some(c) = v.iter().find(|c| !ok.contains(c)) {
                return Err(Error::usage(format!(
                    "cpu {c} is not available to this process (available: {}); pick others with --cpus",
                    crate::measure::placement::compact(&ok)
                )));
            }
            v.to_vec()
        }
    })
}

/// The run record before its first point: the environment, the placement
/// (every thread pinned, the first two CPUs named), the kernel in use.
fn new_run(args: &FlowgraphConfig, allowed: &[usize], kernel_name: &'static str) -> FlowRun {
    let env = Env::capture();
    let mut warnings = env.warnings();
    if kernel_name == "portable" && saxpy::best().1 == "portable" {
        warnings.push(
            "no AVX2/FMA, AVX-512 or NEON on this CPU: the portable kernel runs, and every rate with it"
                .into(),
        );
    }
    FlowRun {
        experiment: "flowgraph",
        complete: false,
        stopped_by: None,
        env,
        options: serde_json::to_value(args).unwrap_or_default(),
        placement: Placement {
            pinned: true,
            initiator_cpu: allowed.first().copied(),
            responder_cpu: allowed.get(1).copied(),
            same_core: false,
            smt_siblings: false,
            allowed_cpus: allowed.to_vec(),
        },
        points: Vec::new(),
        extra: FlowExtra {
            kernel: kernel_name,
            l2_cache_bytes: crate::measure::placement::cache_bytes(allowed[0], Some(2)),
            ..FlowExtra::default()
        },
        warnings,
        devices: Vec::new(),
        limits: Vec::new(),
    }
}

/// The plan's steps grouped by graph (N, M), each group its schedulers.
fn same_graph(plan: Vec<Step>) -> Vec<Vec<Step>> {
    let mut groups: Vec<Vec<Step>> = Vec::new();
    for st in plan {
        match groups.last_mut() {
            Some(g) if (g[0].cores, g[0].blocks) == (st.cores, st.blocks) => g.push(st),
            _ => groups.push(vec![st]),
        }
    }
    groups
}

/// What one (N, M, scheduler) point measured over its rounds.
struct Measured {
    windows: Windows,
    /// Rounds it ran in (fewer than asked when the run was stopped).
    done: usize,
    /// The kernel alone in the same stretch of time (mean of its runs).
    kernel_paired: f64,
}

/// A point's record, with the caveats its measurement earned.
fn point(
    args: &FlowgraphConfig,
    st: &Step,
    allowed: &[usize],
    eb: usize,
    l2: Option<usize>,
    rounds: usize,
    m: Measured,
) -> FlowPoint {
    let Measured {
        windows,
        done,
        kernel_paired,
    } = m;
    let r = windows.rate();
    let mut w = rate_warnings(&r);
    if done < rounds {
        w.push(format!(
            "measured in {done} of {rounds} rounds (the run was stopped)"
        ));
    }
    let blocks = windows.blocks(BLOCKS).iter().map(rate_figures).collect();
    FlowPoint {
        scheduler: st.scheduler.name(),
        edges: st.edges.name(),
        cores: st.cores,
        blocks: st.blocks,
        samples_per_s: r.per_s,
        mean_sps: r.mean_per_s,
        p10_sps: r.p10_per_s,
        p90_sps: r.p90_per_s,
        windows: r.windows,
        rounds: done,
        kernel_paired_sps: kernel_paired,
        cpus: allowed[..st.cores].to_vec(),
        buffer_bytes: args.buffer_size,
        buffers: match (st.edges, point_buffers(args, eb, l2, st)) {
            (Edges::Circular, (depth, _)) => depth,
            (Edges::Handoff, (_, circuit)) => circuit,
        },
        items: r.items,
        measured_s: r.seconds,
        partial: done < rounds,
        warnings: w,
        spread: Spread {
            histogram: None,
            repeats: Vec::new(),
            blocks,
        },
        windows_kept: windows,
        ..FlowPoint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults with `key value` pairs set as the flags would.
    fn args(extra: &[&str]) -> FlowgraphConfig {
        let mut c = FlowgraphConfig::default();
        for kv in extra.chunks(2) {
            let v = kv[1];
            match kv[0] {
                "--buffers" => c.buffers = v.into(),
                "--edge-buffers" => c.edge_buffers = v.into(),
                "--buffer-size" => c.buffer_size = crate::units::parse_size(v).unwrap(),
                "--edges" => c.edges = vec![v.parse().unwrap()],
                "--cores" => c.cores = Some(vec![v.parse().unwrap()]),
                "--scheduler" => c.scheduler = vec![v.parse().unwrap()],
                other => unreachable!("{other}"),
            }
        }
        c
    }

    #[test]
    fn circuits_hold_n_plus_1_buffers_unless_their_blocks_sleep_or_cross_cores() {
        let a = args(&[]);
        assert_eq!(circulating(&a, 2, Scheduler::Ring, Edges::Handoff, 2, 5), 3);
        assert_eq!(
            circulating(&a, 2, Scheduler::Static, Edges::Handoff, 1, 5),
            2,
            "one core: nothing crosses"
        );
        assert_eq!(
            circulating(&a, 2, Scheduler::Static, Edges::Handoff, 2, 5),
            2 + 3,
            "one edge between cores"
        );
        assert_eq!(
            circulating(&a, 4, Scheduler::Static, Edges::Handoff, 3, 5),
            2 * 4 + 4
        );
        assert_eq!(
            circulating(&a, 2, Scheduler::Tokio, Edges::Handoff, 2, 5),
            12
        );
        let a = args(&["--buffers", "5"]);
        assert_eq!(
            circulating(&a, 3, Scheduler::Tokio, Edges::Handoff, 2, 5),
            5
        );
        assert_eq!(
            circulating(&a, 3, Scheduler::ThreadPerBlock, Edges::Handoff, 1, 2),
            5
        );
        let a = args(&[]);
        assert_eq!(
            circulating(&a, 3, Scheduler::ThreadPerBlock, Edges::Handoff, 1, 2),
            9
        );
    }

    #[test]
    fn on_one_core_auto_rings_keep_the_flowgraph_in_half_the_l2() {
        let l2 = Some(2 << 20);
        let a = args(&[]);
        // 1 MiB over (M+1) edges of 16 KiB, rounded down to a power of two.
        assert_eq!(depth(&a, 256, l2, 1, 1), 32);
        assert_eq!(depth(&a, 256, l2, 1, 2), 16);
        assert_eq!(depth(&a, 256, l2, 1, 3), 16);
        assert_eq!(depth(&a, 256, l2, 1, 40), 2, "never below 2");
        assert_eq!(
            depth(&a, 8, l2, 1, 1),
            8,
            "never above the cross-core depth"
        );
        // Across cores, and whenever a number was given: as resolved.
        assert_eq!(depth(&a, 256, l2, 2, 2), 256);
        let a = args(&["--edge-buffers", "4"]);
        assert_eq!(depth(&a, 4, l2, 1, 1), 4);
    }

    #[test]
    fn edge_buffers_cover_twice_the_l2_cache_unless_given() {
        let l2 = Some(512 << 10);
        assert_eq!(edge_buffers(&args(&[]), l2), 64, "1 MiB of 16 KiB");
        assert_eq!(edge_buffers(&args(&[]), None), 128, "2 × the 1 MiB guess");
        assert_eq!(edge_buffers(&args(&["--buffer-size", "48k"]), l2), 32);
        assert_eq!(edge_buffers(&args(&["--buffer-size", "4m"]), l2), 2);
        assert_eq!(edge_buffers(&args(&["--buffer-size", "64"]), l2), 4096);
        assert_eq!(edge_buffers(&args(&["--edge-buffers", "3"]), l2), 3);
    }

    #[test]
    fn the_default_plan_is_the_seeds_grid() {
        let p = plan(&args(&[]), 2).unwrap();
        let seq: Vec<_> = p.iter().filter(|x| x.scheduler == Scheduler::Seq).collect();
        assert!(seq.iter().all(|x| x.cores == 1), "seq only on one core");
        for e in Edges::ALL {
            let ms: Vec<usize> = p
                .iter()
                .filter(|x| x.cores == 2 && x.scheduler == Scheduler::Static && x.edges == e)
                .map(|x| x.blocks)
                .collect();
            assert_eq!(ms, [2, 3, 4, 5, 6], "{e:?}");
        }
        assert!(
            p.iter()
                .filter(|x| x.scheduler == Scheduler::Ring)
                .all(|x| x.edges == Edges::Handoff)
        );
        // N=1: 5 schedulers on 2 edge kinds + ring, 3 M; N=2: 4 × 2 + ring, 5 M.
        assert_eq!(p.len(), 3 * 11 + 5 * 9);
        let circ = plan(&args(&["--edges", "circular"]), 2).unwrap();
        assert_eq!(circ.len(), 3 * 6 + 5 * 5);
        assert!(plan(&args(&["--cores", "3"]), 2).is_err());
        assert!(plan(&args(&["--cores", "2", "--scheduler", "seq"]), 2).is_err());
    }
}
