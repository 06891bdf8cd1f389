//! `xferbench flowgraph`: what a streaming runtime costs. For each core count
//! N and chain length M, each scheduler runs source → M saxpy → sink and the
//! sink's rate is set against the kernel alone: the ideal bounds (dynamic
//! N/M and static 1/⌈M/N⌉ times the best single-kernel rate measured in
//! this run) and the ring reference, which pays what any multi-core runtime
//! must (moving buffers between cores) and nothing else.

use super::Progress;
use crate::cli::FlowgraphArgs;
use crate::env::Env;
use crate::error::{Error, Result};
use crate::flowgraph::graph::{self, Config};
use crate::flowgraph::reference;
use crate::flowgraph::saxpy;
use crate::flowgraph::sched::Scheduler;
use crate::placement::Placement;
use crate::run::{PointMeta, Run};
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[derive(Clone, Debug, Serialize)]
pub struct FlowPoint {
    pub scheduler: &'static str,
    pub cores: usize,
    pub blocks: usize,
    pub samples_per_s: f64,
    /// N/M × the kernel-only rate: blocks shared fairly over every core.
    pub ideal_dynamic_sps: f64,
    /// 1/⌈M/N⌉ × the kernel-only rate: the best a fixed placement can do.
    pub ideal_static_sps: f64,
    /// Measured over the static bound (the one any fixed placement meets).
    pub efficiency: f64,
    /// Measured over the dynamic bound.
    pub efficiency_dynamic: f64,
    /// The CPUs used, in order (pinned, or the allowed set for thread-per-block).
    pub cpus: Vec<usize>,
    pub buffer_bytes: u64,
    pub buffers: usize,
    /// Items the sink counted while measured, and over how many seconds.
    pub items: u64,
    pub measured_s: f64,
    pub partial: bool,
    pub warnings: Vec<String>,
}

impl PointMeta for FlowPoint {
    fn count(&self) -> u64 {
        self.items
    }
    fn warmup(&self) -> u64 {
        0
    }
    fn partial(&self) -> bool {
        self.partial
    }
    fn warnings(&self) -> &[String] {
        &self.warnings
    }
    fn label(&self) -> String {
        format!("{} N={} M={}", self.scheduler, self.cores, self.blocks)
    }
    fn sample_noun(&self) -> &'static str {
        "samples"
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct ScanPoint {
    pub buffer_bytes: u64,
    pub samples_per_s: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowExtra {
    /// The kernel build the CPU got (avx2+fma, neon, portable).
    pub kernel: &'static str,
    /// The best single-kernel rate of the scan: the ideal bounds' unit.
    pub kernel_only_sps: f64,
    pub kernel_only_buffer_bytes: u64,
    pub kernel_scan: Vec<ScanPoint>,
}

pub type FlowRun = Run<FlowPoint, FlowExtra>;

/// The plan: (N, M, scheduler) in run order.
pub fn plan(args: &FlowgraphArgs, available: usize) -> Result<Vec<(usize, usize, Scheduler)>> {
    let cores = args
        .cores
        .as_ref()
        .map_or_else(|| (1..=available).collect(), |c| c.0.clone());
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
            .map_or_else(|| (n..=3 * n).collect(), |b| b.0.clone());
        for &m in &blocks {
            for &s in scheds.iter().filter(|s| s.applies(n)) {
                out.push((n, m, s));
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

/// The scan, on one pinned thread.
fn scan(args: &FlowgraphArgs, kernel: saxpy::Kernel, cpu: usize) -> Result<Vec<ScanPoint>> {
    let sizes = args.kernel_sizes.0.clone();
    std::thread::Builder::new()
        .name("xb-fg-scan".into())
        .spawn(move || -> Result<Vec<ScanPoint>> {
            crate::placement::pin_current(cpu)?;
            Ok(sizes
                .iter()
                .filter(|&&b| b >= 4)
                .map(|&b| ScanPoint {
                    buffer_bytes: b,
                    samples_per_s: reference::kernel_rate(
                        kernel,
                        (b / 4) as usize,
                        Duration::from_millis(40),
                    ),
                })
                .collect())
        })
        .map_err(|e| Error::run(format!("starting the kernel scan: {e}")))?
        .join()
        .unwrap_or_else(|_| Err(Error::run("the kernel scan panicked")))
}

pub fn run(
    args: &FlowgraphArgs,
    stop: &Arc<AtomicBool>,
    progress: &dyn Progress,
) -> Result<(FlowRun, Option<Error>)> {
    let allowed = match &args.cpus.0 {
        None => {
            return Err(Error::usage(
                "flowgraph pins its threads: give CPUs with --cpus 0,1 (or leave --cpus out)",
            ));
        }
        Some(v) if v.is_empty() => crate::placement::allowed_cpus(),
        Some(v) => {
            let ok = crate::placement::allowed_cpus();
            if let Some(c) = v.iter().find(|c| !ok.contains(c)) {
                return Err(Error::usage(format!(
                    "cpu {c} is not available to this process (available: {}); pick others with --cpus",
                    crate::placement::compact(&ok)
                )));
            }
            v.clone()
        }
    };
    let plan = plan(args, allowed.len())?;
    let (kernel, kernel_name) = saxpy::best();
    let env = Env::capture();
    let mut warnings = env.warnings();
    if kernel_name == "portable" {
        warnings.push(
            "no AVX2/FMA or NEON on this CPU: the portable kernel runs, and every rate with it"
                .into(),
        );
    }
    let mut run = FlowRun {
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
            allowed_cpus: allowed.clone(),
        },
        points: Vec::new(),
        extra: FlowExtra {
            kernel: kernel_name,
            ..FlowExtra::default()
        },
        warnings,
    };
    progress.start(plan.len() as u64 + 1);
    progress.point("kernel-only scan");
    let scan = scan(args, kernel, allowed[0])?;
    let best = scan
        .iter()
        .max_by(|a, b| a.samples_per_s.total_cmp(&b.samples_per_s))
        .cloned();
    if let Some(b) = &best {
        run.extra.kernel_only_sps = b.samples_per_s;
        run.extra.kernel_only_buffer_bytes = b.buffer_bytes;
    }
    run.extra.kernel_scan = scan;
    let k = run.extra.kernel_only_sps;
    let chunk = (args.buffer_size / 4) as usize;
    let mut err = None;
    for (n, m, s) in plan {
        if stop.load(Ordering::Relaxed) {
            err = Some(Error::Interrupted);
            break;
        }
        progress.point(&format!("{} N={n} M={m}", s.name()));
        let buffers = if args.buffers == "N+1" {
            n + 1
        } else {
            args.buffers.parse().unwrap_or(n + 1)
        };
        let cfg = Config {
            blocks: m,
            cpus: allowed[..n].to_vec(),
            chunk,
            buffers,
            edge_buffers: args.edge_buffers as usize,
            warmup: args.warmup,
            duration: args.duration,
            items: args.items,
            timeout: args.timeout,
        };
        let got = match graph::measure(s, &cfg, kernel, stop) {
            Ok(g) => g,
            Err(e) => {
                err = Some(e);
                break;
            }
        };
        let dynamic = k * n as f64 / m as f64;
        let fixed = k / m.div_ceil(n) as f64;
        let mut w = Vec::new();
        if got.samples_per_s > dynamic.max(fixed) * 1.05 {
            w.push("faster than the ideal bound: the kernel-only rate of this run was measured low (noise), so every efficiency is overstated".into());
        }
        if got.seconds < 0.1 {
            w.push(format!(
                "measured over only {:.0} ms: noisy",
                got.seconds * 1e3
            ));
        }
        run.points.push(FlowPoint {
            scheduler: s.name(),
            cores: n,
            blocks: m,
            samples_per_s: got.samples_per_s,
            ideal_dynamic_sps: dynamic,
            ideal_static_sps: fixed,
            efficiency: got.samples_per_s / fixed,
            efficiency_dynamic: got.samples_per_s / dynamic,
            cpus: cfg.cpus.clone(),
            buffer_bytes: args.buffer_size,
            buffers,
            items: got.items,
            measured_s: got.seconds,
            partial: false,
            warnings: w,
        });
    }
    progress.finish();
    match err {
        None => {
            run.complete = true;
            Ok((run, None))
        }
        Some(e) => {
            run.stopped_by = Some(match &e {
                Error::Interrupted => "interrupted".into(),
                other => other.to_string(),
            });
            Ok((run, Some(e)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> FlowgraphArgs {
        let mut v = vec!["xferbench", "flowgraph"];
        v.extend(extra);
        match crate::cli::Cli::try_parse_from(v).unwrap().command {
            Some(crate::cli::Command::Flowgraph(a)) => *a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_default_plan_is_the_seeds_grid() {
        let p = plan(&args(&[]), 2).unwrap();
        let seq: Vec<_> = p.iter().filter(|x| x.2 == Scheduler::Seq).collect();
        assert!(seq.iter().all(|x| x.0 == 1), "seq only on one core");
        let ms: Vec<usize> = p
            .iter()
            .filter(|x| x.0 == 2 && x.2 == Scheduler::Static)
            .map(|x| x.1)
            .collect();
        assert_eq!(ms, [2, 3, 4, 5, 6]);
        assert_eq!(p.len(), 3 * 6 + 5 * 5);
        assert!(plan(&args(&["--cores", "3"]), 2).is_err());
        assert!(plan(&args(&["--cores", "2", "--scheduler", "seq"]), 2).is_err());
    }
}
