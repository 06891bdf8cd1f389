//! `curve -t mpi --pairs K`, osu_mbw_mr's pattern: ranks 0..K each stream
//! windows of messages to ranks K..2K at the same time. Per size, the
//! pairs first time one warm-up window each; rank 0 fits one window count
//! to the slowest so that every pair runs the same count, overlapping; then
//! all pairs start together after a barrier.

use super::run::{GO, STOP, hello};
use super::timed;
use crate::error::{Error, Result};
use crate::experiment::Progress;
use crate::measure::stats::{Recorder, RecorderWire};
use crate::options::{Amount, CurveConfig};
use crate::result::Run;
use crate::result::mesh::{PairRate, PairsExtra, PairsPoint, PairsRun};
use crate::transport::mpi::group::Group;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// One sender's timed windows at one size.
#[derive(Serialize, Deserialize)]
struct Timed {
    from: usize,
    to: usize,
    timed_ns: u64,
    rec: RecorderWire,
}

pub fn run(
    cfg: &CurveConfig,
    k: usize,
    stop: &Arc<AtomicBool>,
    progress: &dyn Progress,
) -> Result<Option<(PairsRun, Option<Error>)>> {
    let cap = cfg.sizes.iter().copied().max().unwrap_or(0) as usize;
    let g = Group::open(cap, 0, cfg.common.timeout, stop.clone())?;
    let n = g.size();
    if 2 * k > n {
        return Err(Error::usage(format!(
            "--pairs {k} needs {} ranks (K senders and K receivers) but the job has {n}; run under `mpirun -n {}` or lower --pairs",
            2 * k,
            2 * k
        )));
    }
    let ranks = hello(&g)?;
    if g.rank() == 0 {
        crate::experiment::limits::warm_memory();
    }
    // Pairs stream for a time: a count of samples has no meaning here.
    let duration = match cfg.common.amount {
        Some(Amount::Time(d)) => d,
        _ => Duration::from_millis(200),
    };
    let role = if g.rank() < k {
        Some((true, g.rank() + k))
    } else if g.rank() < 2 * k {
        Some((false, g.rank() - k))
    } else {
        None
    };
    let root = g.rank() == 0;
    if root {
        progress.start(cfg.sizes.len() as u64);
    }
    let mut points = Vec::new();
    let mut err = None;
    for &size in &cfg.sizes {
        let size = size as usize;
        if root {
            progress.point(&format!("{k} pairs, {size} B"));
        }
        match one_size(cfg, &g, k, role, size, duration) {
            Ok(Some(p)) => points.push(p),
            Ok(None) => {}
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    if !root {
        return err.map_or(Ok(None), Err);
    }
    progress.finish();
    let env = crate::measure::env::Env::capture();
    let warnings = env.warnings();
    let r0 = &ranks[0];
    let mut run = Run {
        experiment: "pairs",
        complete: err.is_none(),
        stopped_by: err.as_ref().map(super::assemble::stopped_by),
        env,
        options: serde_json::to_value(cfg).unwrap_or_default(),
        placement: crate::measure::placement::Placement {
            pinned: r0.allowed_cpus.len() == 1,
            initiator_cpu: r0.cpu,
            responder_cpu: ranks.get(k).and_then(|r| r.cpu),
            same_core: false,
            smt_siblings: false,
            allowed_cpus: r0.allowed_cpus.clone(),
        },
        points,
        extra: PairsExtra {
            pairs: k,
            ranks_total: n,
            ranks,
        },
        warnings,
        devices: Vec::new(),
        limits: Vec::new(),
    };
    crate::experiment::limits::attach_pairs(&mut run);
    Ok(Some((run, err)))
}

/// One size: warm-up and count, then every pair at once. Rank 0 returns the
/// point.
fn one_size(
    cfg: &CurveConfig,
    g: &Group,
    k: usize,
    role: Option<(bool, usize)>,
    size: usize,
    duration: Duration,
) -> Result<Option<PairsPoint>> {
    let window = cfg.window;
    let mut est = Duration::ZERO;
    if let Some((lead, peer)) = role {
        // The second window: the first pays for first touch.
        timed::window_time(g, peer, lead, size, window)?;
        est = timed::window_time(g, peer, lead, size, window)?;
    }
    let ests = g.gather((est.as_nanos() as u64).to_le_bytes().to_vec(), duration * 4)?;
    let count = ests.map(|all| {
        let slowest = all
            .iter()
            .flatten()
            .filter_map(|b| Some(u64::from_le_bytes(b.as_slice().try_into().ok()?)))
            .max()
            .unwrap_or(1)
            .max(1);
        (duration.as_nanos() as u64 / slowest).clamp(3, 1_000_000)
    });
    let count = u64::from_le_bytes(
        g.share(count.unwrap_or(0).to_le_bytes().to_vec(), duration * 4)?
            .as_slice()
            .try_into()
            .map_err(|_| Error::run("rank 0 sent a malformed window count"))?,
    );
    let what = || format!("the other pairs to be ready for {size} B");
    g.barrier(duration * 4, &what)?;
    let mine = match role {
        Some((lead, peer)) => timed::bandwidth(g, peer, lead, size, window, duration, Some(count))?
            .map(|s| Timed {
                from: g.rank(),
                to: peer,
                timed_ns: s.timed.as_nanos() as u64,
                rec: s.rec.to_wire(),
            }),
        None => None,
    };
    let bytes = serde_json::to_vec(&mine).expect("plain data");
    let got = g.gather(bytes, duration * 8)?;
    let Some(got) = got else {
        return match g.share(Vec::new(), duration * 8)?.first() {
            Some(&GO) => Ok(None),
            _ => Err(Error::run("")),
        };
    };
    let timed: Vec<Timed> = got
        .iter()
        .flatten()
        .filter_map(|b| serde_json::from_slice::<Option<Timed>>(b).ok().flatten())
        .collect();
    let ok = timed.len() == k;
    let _ = g.share(vec![if ok { GO } else { STOP }], Duration::ZERO);
    if !ok {
        return Err(Error::run(format!(
            "only {} pairs reported for {size} B; a rank stopped answering",
            timed.len()
        )));
    }
    Ok(Some(point(size as u64, window, count, timed)))
}

fn point(size: u64, window: u32, windows: u64, timed: Vec<Timed>) -> PairsPoint {
    let per_pair_bytes = size * window as u64 * windows;
    let msgs = window as u64 * windows;
    let longest = timed.iter().map(|t| t.timed_ns).max().unwrap_or(1).max(1) as f64;
    let mut pairs: Vec<PairRate> = timed
        .into_iter()
        .map(|t| {
            let s = (t.timed_ns.max(1)) as f64 / 1e9;
            PairRate {
                from: t.from,
                to: t.to,
                bandwidth_mbps: per_pair_bytes as f64 / s / 1e6,
                messages_per_s: msgs as f64 / s,
                timed_s: s,
                window_time: Recorder::from_wire(&t.rec).summary(),
            }
        })
        .collect();
    pairs.sort_by_key(|p| p.from);
    let k = pairs.len() as f64;
    PairsPoint {
        size_bytes: size,
        window,
        windows,
        aggregate_mbps: k * per_pair_bytes as f64 / (longest / 1e9) / 1e6,
        messages_per_s: k * msgs as f64 / (longest / 1e9),
        slowest_pair_mbps: pairs
            .iter()
            .map(|p| p.bandwidth_mbps)
            .fold(f64::INFINITY, f64::min),
        pairs,
        partial: false,
        spread: crate::result::Spread::default(),
    }
}
