//! One line per run for summaries: the figure a reader looks for first.

use crate::measure::placement::Placement;
use crate::result::saved::{AnyRun, SavedRun, written};
use crate::units::format_size;
use crate::units::si;

/// The best figure of a run, in words, and beside it the share of its
/// path's limit when the run recorded one ("52.4 GB/s = 83% of PCIe 5.0
/// x16").
pub fn of(r: &SavedRun) -> String {
    let mut s = figure(r);
    if let Some(l) = share(r.run.limits()) {
        s.push_str("; ");
        s.push_str(&l);
    }
    s
}

/// The best figure on the run's paths beside its limit: the path nearest
/// its ceiling (a flagged one first, since that is what to look at).
pub fn share(limits: &[crate::result::limit::PathLimit]) -> Option<String> {
    let judged = limits.iter().filter(|l| l.best.is_some());
    let l = judged.max_by(|a, b| {
        (a.exceeded, a.best.as_ref().map_or(0.0, |x| x.share))
            .partial_cmp(&(b.exceeded, b.best.as_ref().map_or(0.0, |x| x.share)))
            .unwrap_or(std::cmp::Ordering::Equal)
    })?;
    let b = l.best.as_ref()?;
    let flag = if l.exceeded {
        " (faster than its path: the link or the clock is wrong)"
    } else if l.reference {
        " (a reference: nothing crossed memory at its copy rate)"
    } else {
        ""
    };
    match (b.unit.as_str(), &l.limit, &l.floor) {
        ("MB/s", Some(lim), _) => Some(format!(
            "{} = {:.0}% of {}{flag}",
            crate::result::limit::rate(b.value),
            b.share * 100.0,
            lim.what
        )),
        ("ns", _, Some(floor)) => Some(format!(
            "{} µs = {:.1}× the floor ({}){flag}",
            si(b.value / 1000.0),
            b.share,
            floor.what
        )),
        _ => None,
    }
}

/// The best figure of a run, in words.
fn figure(r: &SavedRun) -> String {
    match &r.run {
        AnyRun::Roundtrip(run) => {
            let best = run
                .points
                .iter()
                .map(|p| (p, p.summary.mean_ns))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            match best {
                Some((p, ns)) => format!(
                    "fastest mean round trip {} µs ({} {}/{}, in {} out {} B)",
                    si(ns / 1000.0),
                    p.spec,
                    written(&p.buffers),
                    written(&p.completion),
                    p.in_bytes,
                    p.out_bytes
                ),
                None => "no points".into(),
            }
        }
        AnyRun::Curve(run) => {
            let parts: Vec<String> = run
                .extra
                .fits
                .iter()
                .filter_map(|f| {
                    let fit = f.fit.as_ref()?;
                    Some(format!(
                        "{}: t0 {} µs, r∞ {} MB/s",
                        f.spec,
                        si(fit.t0_ns / 1000.0),
                        si(fit.r_inf_MBps)
                    ))
                })
                .collect();
            if parts.is_empty() {
                format!("{} points, no model fitted", run.points.len())
            } else {
                parts.join("; ")
            }
        }
        AnyRun::Stream(run) => {
            let best = run
                .jobs
                .iter()
                .map(|j| {
                    let bw: u64 = j.dirs().iter().map(|(_, d)| d.bw_bytes).sum();
                    (j, bw as f64)
                })
                .max_by(|a, b| a.1.total_cmp(&b.1));
            match best {
                Some((j, bw)) => format!(
                    "best job {} MB/s ({} {} bs {})",
                    si(bw / 1e6),
                    j.jobname(),
                    j.job().map_or("?".into(), |j| written(&j.rw)),
                    format_size(j.job().map_or(0, |j| j.bs))
                ),
                None => "no jobs".into(),
            }
        }
        AnyRun::Load(run) => {
            let best = run
                .points
                .iter()
                .filter_map(|p| match p {
                    crate::result::load::LoadPoint::Closed(c) => Some((c, c.req_per_s)),
                    crate::result::load::LoadPoint::Open(_) => None,
                })
                .max_by(|a, b| a.1.total_cmp(&b.1));
            match best {
                Some((p, v)) => format!(
                    "peak {} req/s ({} {})",
                    si(v),
                    p.load,
                    written(&p.direction)
                ),
                None => format!("{} points", run.points.len()),
            }
        }
        AnyRun::Flowgraph(run) => {
            let best = run
                .points
                .iter()
                .map(|p| (p, p.samples_per_s))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            match best {
                Some((p, v)) => format!(
                    "peak {} samples/s ({} on {} cores, {} blocks)",
                    si(v),
                    crate::flowgraph::edge::series(p.scheduler, p.edges),
                    p.cores,
                    p.blocks
                ),
                None => format!("{} points", run.points.len()),
            }
        }
        AnyRun::Mesh(m) => super::mesh::headline(&m.into()),
        AnyRun::Pairs(run) => format!("{} points", run.points.len()),
    }
}

/// Where the two ends ran, in words.
pub fn placement(p: &Placement) -> String {
    let mut s = match (p.initiator_cpu, p.responder_cpu) {
        (Some(a), Some(b)) => format!("initiator on cpu {a}, responder on cpu {b}"),
        (Some(a), None) => format!("initiator on cpu {a}"),
        _ => "not pinned".into(),
    };
    if p.same_core {
        s.push_str(" (same core: they share it)");
    }
    if p.smt_siblings {
        s.push_str(" (SMT siblings)");
    }
    s
}

/// What the far NUMA node cost, for each path measured both ways across
/// the runs read together: one run's CPUs on the device's node, another's
/// on another node (its limit carries the NUMA note), the best figure of
/// each on the same path.
pub fn numa_costs(runs: &[SavedRun]) -> Vec<String> {
    let mut out = Vec::new();
    for far in runs {
        for f in far.run.limits() {
            let (Some(_), Some(fb)) = (&f.numa, &f.best) else {
                continue;
            };
            let near = runs.iter().find_map(|r| {
                let n = r.run.limits().iter().find(|n| {
                    n.spec == f.spec
                        && n.numa.is_none()
                        && n.limit.as_ref().is_some_and(|l| l.numa_node.is_some())
                        && n.best
                            .as_ref()
                            .is_some_and(|b| b.unit == fb.unit && b.value > 0.0)
                })?;
                Some((r, n.best.as_ref()?))
            });
            let Some((r, nb)) = near else { continue };
            let cost = if fb.unit == "ns" {
                fb.value / nb.value - 1.0
            } else {
                1.0 - fb.value / nb.value
            };
            out.push(format!(
                "NUMA: {} measured both ways: {} from the device's node ({}), {} from another ({}): the far node cost {:.0}%{}.",
                f.spec,
                best_words(nb),
                r.label,
                best_words(fb),
                far.label,
                cost * 100.0,
                if fb.unit == "ns" { " more time" } else { " of the bandwidth" }
            ));
        }
    }
    out
}

fn best_words(b: &crate::result::limit::Best) -> String {
    match b.unit.as_str() {
        "ns" => format!("{} µs", crate::units::si(b.value / 1000.0)),
        _ => crate::result::limit::rate(b.value),
    }
}
