//! Experiments: each turns options into points, runs them through the sampler
//! and returns one `Run`. They know nothing of sockets or shared memory.

pub mod cuda_curve;
pub mod curve;
pub mod flowgraph;
pub mod limits;
pub mod load;
pub mod mesh;
pub mod repeat;
pub mod roundtrip;
pub mod sample;
pub mod stream;

use crate::error::{Error, Result};
use crate::experiment::sample::Measured;
use crate::measure::env::Env;
use crate::measure::placement::Placement;
use crate::measure::stats::Stat;
use crate::options::Common;
use crate::result::Run;
use crate::transport::{self, BufferMode, CompletionMode, LinkConfig, Spec};

/// Hooks for progress reporting, so the experiment stays free of terminal code.
pub trait Progress {
    /// The run begins: `total` points (or cells) are planned.
    fn start(&self, total: u64);
    /// A point labelled `label` begins (and the one before it, if any, is done).
    fn point(&self, label: &str);
    /// The run is over, complete or not: the last call.
    fn finish(&self);
    /// Byte progress (`stream`): `total` 0 when unknown (time-based jobs).
    fn start_bytes(&self, _total: u64, _label: &str) {}
    /// Bytes moved so far, after [`start_bytes`](Progress::start_bytes).
    fn at(&self, _done: u64) {}
    /// A line worth saying before a long run starts: what it will do and
    /// about how long it takes (`mesh`).
    fn note(&self, _line: &str) {}
    /// The run as measured so far (its `Run`, as `&dyn Any`), after each
    /// point and each device opened: what a supervisor writes if a device
    /// call never returns and the run cannot finish by itself.
    fn checkpoint(&self, _partial: &dyn std::any::Any) {}
    /// The run so far (its `Run`, as `&dyn Any`), every
    /// `status_interval` of a `stream` run that asks for it (fio's
    /// `--status-interval`): what a long run has measured, while it runs.
    fn status(&self, _so_far: &dyn std::any::Any) {}
}

/// No progress shown: what a program embedding the library passes when it
/// wants no bar (`&()`).
impl Progress for () {
    fn start(&self, _total: u64) {}
    fn point(&self, _label: &str) {}
    fn finish(&self) {}
}

/// One transport configuration to measure: a spec with its modes resolved.
#[derive(Clone, Debug)]
pub struct Config {
    pub transport: &'static dyn transport::Transport,
    pub spec: Spec,
    pub buffers: BufferMode,
    pub completion: CompletionMode,
}

/// Expands specs × buffer modes × completion modes; a spec's own options
/// override the global flags.
/// `default_buffers` picks the mode for a transport when neither the spec
/// nor `--buffers` names one.
pub fn configs(
    common: &Common,
    default_buffers: fn(&transport::Capabilities) -> BufferMode,
) -> Result<Vec<Config>> {
    let mut out = Vec::new();
    // A device opened to read its capabilities is bounded as the run's calls are.
    transport::guard::set_default_bound(common.timeout);
    for spec in common.specs() {
        let t = transport::resolve(&spec)?;
        t.ensure_available()?;
        let buffers = match spec.mode::<BufferMode>("buffers")? {
            Some(b) => vec![b],
            None if common.buffers.is_empty() => vec![default_buffers(&t.capabilities())],
            None => common.buffers.clone(),
        };
        let completions = match spec.mode::<CompletionMode>("completion")? {
            Some(c) => vec![c],
            None if common.completion.is_empty() => vec![t.capabilities().default_completion],
            None => common.completion.clone(),
        };
        for &b in &buffers {
            for &c in &completions {
                out.push(Config {
                    transport: t,
                    spec: spec.clone(),
                    buffers: b,
                    completion: c,
                });
            }
        }
    }
    Ok(out)
}

/// Configurations a transport cannot run at all, each with why: skipped
/// and said, as an impossible cell is.
pub type Impossible = Vec<(Config, String)>;

/// The configurations a run can measure, and those `check` refuses as
/// impossible (a mode a transport lacks: a usage error), each with why. The
/// rule every experiment follows: an impossible configuration, cell or
/// size is skipped and said (the run's `skipped`, a `Skipped:` line); only
/// a run left with nothing to measure is refused, with the first reason.
pub fn usable(
    cfgs: Vec<Config>,
    check: impl Fn(&Config) -> Result<()>,
) -> Result<(Vec<Config>, Impossible)> {
    let (mut ok, mut skipped) = (Vec::new(), Vec::new());
    for c in cfgs {
        match check(&c) {
            Ok(()) => ok.push(c),
            Err(Error::Usage { message, .. }) => skipped.push((c, message)),
            Err(e) => return Err(e),
        }
    }
    if ok.is_empty()
        && let Some((_, why)) = skipped.first()
    {
        return Err(Error::usage(why.clone()));
    }
    Ok((ok, skipped))
}

/// A run that skipped everything it was asked to measure measured nothing:
/// a usage error (exit 2) naming how many were skipped and the first
/// reason. A run with a point, or with nothing skipped, passes.
pub fn nothing_measured(points: usize, skipped: &[String], what: &str) -> Result<()> {
    match (points, skipped.first()) {
        (0, Some(first)) => Err(Error::usage(format!(
            "nothing to measure: all {} {what} were skipped; first, {first}",
            skipped.len()
        ))),
        _ => Ok(()),
    }
}

/// Refuses, in one line before the run, messages whose buffers would not
/// fit in the memory this process may take (`ulimit -v`, `ulimit -d`, the
/// cgroup's limit, what the machine has): the allocation would otherwise
/// fail at the link's open, after the run began, or abort the process.
/// Each of `links` holds the largest request and reply twice (the
/// initiator's, and the responder's copy: in this process for the thread
/// transport, in a shared region for shm); `fix` says what to lower.
pub fn check_buffers(
    largest_request: u64,
    largest_reply: u64,
    links: u64,
    fix: &str,
) -> Result<()> {
    let need = largest_request
        .saturating_add(largest_reply)
        .saturating_mul(2)
        .saturating_mul(links.max(1));
    crate::measure::room::check_memory(
        need,
        &format!(
            "{} of {} requests and {} replies",
            if links > 1 {
                format!("{links} links")
            } else {
                "a link".to_string()
            },
            crate::units::format_size(largest_request),
            crate::units::format_size(largest_reply)
        ),
        fix,
    )
}

/// The link configuration for one transport configuration.
pub fn link_config(
    c: &Config,
    common: &Common,
    placement: &Placement,
    max_request: u64,
    max_reply: u64,
) -> Result<LinkConfig> {
    let exe = std::env::current_exe().map_err(|e| Error::io("finding this executable", e))?;
    Ok(LinkConfig {
        spec: c.spec.clone(),
        buffers: c.buffers,
        completion: c.completion,
        max_request: max_request as usize,
        max_reply: max_reply as usize,
        responder_cpu: placement.responder_cpu,
        timeout: common.timeout,
        exe,
    })
}

/// Caveats on one point's figures: too few samples for a quantile, drift
/// between halves, a tail heavier than the mean.
/// Only the quantiles in `shown` are checked for thin samples.
pub fn point_warnings(m: &Measured, shown: &[Stat]) -> Vec<String> {
    let s = m.all.summary();
    let mut w = Vec::new();
    let thin: Vec<&str> = shown
        .iter()
        .filter(|q| s.count < q.min_samples())
        .map(|q| q.name())
        .collect();
    if !thin.is_empty() {
        w.push(format!(
            "{} rest on fewer than 10 samples beyond them (n={})",
            thin.join(", "),
            s.count
        ));
    }
    let [h0, h1] = m.halves();
    let (a, b) = (h0.quantile(0.5) as f64, h1.quantile(0.5) as f64);
    if a > 0.0 && b > 0.0 {
        let d = (a - b).abs() / a.min(b);
        if d > 0.10 {
            w.push(format!("medians of the first and second halves differ by {:.0}%: the figure drifted (noise)", d * 100.0));
        }
    }
    if s.count > 1 && s.stddev_ns > s.mean_ns {
        w.push("stddev exceeds the mean: heavy tail or interference".into());
    }
    if let Some(why) = m
        .split
        .as_ref()
        .and_then(|sp| sample::split_warning(sp, s.count))
    {
        w.push(why);
    }
    if m.all.saturated() > 0 {
        w.push(format!(
            "{} samples exceeded the histogram's 600 s ceiling",
            m.all.saturated()
        ));
    }
    w
}

/// Everything before the first point: CPUs chosen and this thread pinned,
/// the environment captured (before pinning, so it records the CPUs the
/// process may use), run-wide warnings, the options recorded.
pub fn begin<P, X: Default>(
    experiment: &'static str,
    common: &Common,
    options: serde_json::Value,
) -> Result<(Run<P, X>, Placement)> {
    let placement = crate::measure::placement::choose(common.cpus.requested())?;
    let mut env = Env::capture();
    if let Some(c) = placement.initiator_cpu {
        crate::measure::placement::pin_current(c)?;
    }
    // Where the samples will be taken: pinned, the sampler's own cost.
    let (floor, turn) = sample::self_cost();
    env.clock.sample_floor_ns = Some(floor);
    env.clock.loop_ns = Some(turn);
    let mut warnings = env.warnings();
    warnings.extend(placement_warnings(&placement));
    Ok((
        Run {
            experiment,
            complete: false,
            stopped_by: None,
            env,
            options,
            placement: placement.clone(),
            points: Vec::new(),
            extra: X::default(),
            warnings,
            devices: Vec::new(),
            limits: Vec::new(),
        },
        placement,
    ))
}

/// Marks the run complete, or records why it stopped; the error goes back
/// to the caller beside the (partial) run.
pub fn finish<P, X>(mut run: Run<P, X>, result: Result<()>) -> (Run<P, X>, Option<Error>) {
    run.env.gpus = crate::transport::cuda::driver::used_devices();
    match result {
        Ok(()) => {
            run.env.ended();
            run.complete = true;
            (run, None)
        }
        Err(e) => {
            run.stop(&e);
            (run, Some(e))
        }
    }
}

/// [`finish`], then an error that came after every point was measured (a
/// device whose close failed): the run stays complete, the error fails the
/// exit status.
pub fn finish_after<P, X>(
    run: Run<P, X>,
    result: Result<()>,
    after: Option<Error>,
) -> (Run<P, X>, Option<Error>) {
    match finish(run, result) {
        (run, None) => (run, after),
        done => done,
    }
}

/// Opens `c`'s link, recording its device (a plugin's name, ABI and
/// library) in the run first and taking a checkpoint, so a run whose device
/// fails or hangs from its very open still names it. Returns the link and
/// where its device's record is, for [`close_link`].
pub fn open_link<P, X>(
    run: &mut Run<P, X>,
    c: &Config,
    lc: &LinkConfig,
    progress: &dyn Progress,
) -> Result<(Box<dyn transport::Link>, Option<usize>)>
where
    Run<P, X>: 'static,
{
    let at = c.transport.device().map(|mut d| {
        d["spec"] = c.spec.to_string().into();
        d["buffers"] = c.buffers.name().into();
        d["completion"] = c.completion.name().into();
        d["counters"] = serde_json::Value::Null;
        // Until close_link replaces the record: a run stopped meanwhile
        // (a call that never returned) puts its error here.
        d["state"] = crate::result::DEVICE_OPEN.into();
        run.devices.push(d);
        run.devices.len() - 1
    });
    progress.checkpoint(run);
    match c.transport.open(lc) {
        Ok(link) => Ok((link, at)),
        Err(e) => {
            if let Some(d) = at.and_then(|i| run.devices.get_mut(i)) {
                d["error"] = e.to_string().into();
                closed(d);
            }
            Err(e)
        }
    }
}

/// A device record no longer open: its `state` goes.
fn closed(d: &mut serde_json::Value) {
    if let Some(o) = d.as_object_mut() {
        o.remove("state");
    }
}

fn device_record(c: &Config, link: &mut dyn transport::Link) -> Option<serde_json::Value> {
    let mut device = link.counters()?;
    device["spec"] = c.spec.to_string().into();
    device["buffers"] = c.buffers.name().into();
    device["completion"] = c.completion.name().into();
    Some(device)
}

/// Closes a link after its points, whatever they came to (`outcome`): the
/// device's record gets its final counters and what failed; a close that
/// fails after good points (a plugin's close that hung) is recorded with the
/// device and kept in `after` rather than unmaking the points.
pub fn close_link<P, X>(
    run: &mut Run<P, X>,
    c: &Config,
    at: Option<usize>,
    mut link: Box<dyn transport::Link>,
    outcome: &Result<()>,
    after: &mut Option<Error>,
) {
    if let Some(i) = at {
        if let Some(device) = device_record(c, link.as_mut()) {
            run.devices[i] = device;
        }
        closed(&mut run.devices[i]);
        if let Err(e) = outcome {
            run.devices[i]["error"] = e.to_string().into();
        }
    }
    if let Err(e) = link.close() {
        if let Some(device) = at.and_then(|i| run.devices.get_mut(i)) {
            device["close"] = e.to_string().into();
        }
        // Said once: a plugin whose close hung is not waited for again,
        // and its later closes fail for the same reason.
        if outcome.is_ok() && after.is_none() {
            run.warnings.push(e.to_string());
            *after = Some(e);
        }
    }
}

/// Caveats from the placement.
pub fn placement_warnings(p: &Placement) -> Vec<String> {
    let mut w = Vec::new();
    if !p.pinned {
        w.push("initiator and responder are not pinned (--cpus none): the scheduler may move them mid-run".into());
    } else if p.same_core {
        w.push(
            "initiator and responder share one core: poll completion then measures the scheduler"
                .into(),
        );
    } else if p.smt_siblings {
        w.push("initiator and responder are hyperthreads of one core: they share caches and execution units".into());
    }
    w
}
