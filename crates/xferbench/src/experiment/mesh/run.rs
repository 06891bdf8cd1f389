//! The mesh on every rank: hello (who runs where, and the same command
//! line everywhere), the rounds, the re-test of suspects, and rank 0
//! collecting it all.

use super::assemble::{Collector, Hello, Kind, Measured, RankReport};
use super::timed::{self, Sampled};
use super::tournament;
use crate::error::{Error, Result};
use crate::experiment::Progress;
use crate::options::MeshConfig;
use crate::result::mesh::{MeshRun, RankInfo, Schedule};
use crate::transport::mpi::group::Group;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// The words rank 0 sends after each step.
pub(super) const GO: u8 = 1;
pub(super) const STOP: u8 = 0;

pub fn run(
    cfg: &MeshConfig,
    stop: &Arc<AtomicBool>,
    progress: &dyn Progress,
) -> Result<Option<(MeshRun, Option<Error>)>> {
    let cap = cfg
        .latency_sizes()
        .iter()
        .chain(&cfg.bandwidth_sizes())
        .copied()
        .max()
        .unwrap_or(0) as usize;
    let pong_cap = cfg.latency_sizes().iter().copied().max().unwrap_or(0) as usize;
    let me_delay = |rank: usize| match cfg.inject_delay {
        Some((r, d)) if r == rank => d,
        _ => Duration::ZERO,
    };
    let mut g = Group::open(cap, pong_cap, cfg.timeout, stop.clone())?;
    g.set_delay(me_delay(g.rank()));
    let n = g.size();
    if let Some((r, _)) = cfg.inject_delay.filter(|(r, _)| *r >= n) {
        return Err(Error::usage(format!(
            "--inject-delay names rank {r}, but the job has ranks 0..{}",
            n - 1
        )));
    }
    if n < 2 {
        return Err(Error::usage(
            "mesh needs at least two ranks: run it as `mpirun -n N xferbench mesh -t mpi` with N ≥ 2",
        ));
    }
    let ranks = hello(&g)?;
    if g.rank() == 0 {
        crate::experiment::limits::warm_memory();
    }
    let rounds = tournament(n);
    let mut col = (g.rank() == 0).then(|| Collector::new(cfg, ranks.clone(), &rounds));
    if let Some(c) = &col {
        let est = super::estimate_s(cfg, n);
        let hosts = c.hosts();
        progress.note(&format!(
            "mesh of {n} ranks on {hosts} host{}: {} ordered pairs in {} rounds ({}), about {}",
            if hosts == 1 { "" } else { "s" },
            n * (n - 1),
            rounds.len(),
            if cfg.concurrent {
                "a round's pairs at once"
            } else {
                "one pair at a time"
            },
            humantime::format_duration(Duration::from_secs(est.ceil() as u64))
        ));
        progress.start(rounds.len() as u64);
    }
    let schedule = schedule(cfg, &ranks, &rounds);
    // Rank 0's run after each round: what a stop that the run cannot
    // answer in time (a wait on a rank that will not answer) writes.
    let env = col.as_ref().map(|_| crate::measure::env::Env::capture());
    let keep = |c: &Collector| {
        if let Some(env) = &env {
            let run = c
                .clone()
                .finish_in(cfg, schedule.clone(), false, None, env.clone());
            progress.checkpoint(&run);
        }
    };
    if let Some(c) = &col {
        // What a stop before the first round's reports writes: the ranks.
        keep(c);
    }
    let res = sweep(cfg, &g, &ranks, &rounds, col.as_mut(), progress, &keep);
    let (res, retested) = match res {
        Ok(()) => {
            let cells = col.as_mut().map(|c| c.suspect_cells()).unwrap_or_default();
            match retest(cfg, &g, &ranks, cells, col.as_mut()) {
                Ok(()) => (Ok(()), true),
                Err(e) => (Err(e), false),
            }
        }
        Err(e) => (Err(e), false),
    };
    let Some(c) = col else {
        // A rank other than 0: rank 0 reports. After a failure it aborts
        // the job once its results are written; wait for that.
        return match res {
            Ok(()) => Ok(None),
            Err(e) => Err(e),
        };
    };
    let err = res.err().map(|e| named(e, &ranks));
    progress.finish();
    let mut run = c.finish(cfg, schedule, retested, err.as_ref());
    crate::experiment::limits::attach_mesh(&mut run);
    Ok(Some((run, err)))
}

/// How the pairs are scheduled.
fn schedule(cfg: &MeshConfig, ranks: &[RankInfo], rounds: &[super::Round]) -> Schedule {
    let n = ranks.len();
    Schedule {
        kind: "tournament",
        mode: if cfg.concurrent {
            "concurrent"
        } else {
            "sequential"
        },
        rounds: rounds.len(),
        pairs_per_round: n / 2,
        pinned_pairs: !cfg.concurrent && (0..n).any(|a| (a + 1..n).any(|b| pins(ranks, a, b))),
    }
}

/// Rank 0's stop, told by the rank behind it where that is known: the
/// launcher ends the whole job (a signal to every rank) when one rank's
/// process ends, so a rank of this host whose process is gone is the one
/// that ended it. Ranks on other hosts cannot be looked at from here.
fn named(e: Error, ranks: &[RankInfo]) -> Error {
    if !matches!(e, Error::Interrupted) {
        return e;
    }
    let here = &ranks[0].host;
    let gone: Vec<usize> = ranks
        .iter()
        .filter(|r| r.rank != 0 && &r.host == here && !alive(r.pid))
        .map(|r| r.rank)
        .collect();
    if gone.is_empty() {
        return e;
    }
    Error::run(format!(
        "{} ended while the job ran (no such process any more: killed, or it crashed), and the launcher then stopped the others; the pairs not measured are missing",
        ranks_list(&gone)
    ))
}

/// Whether process `pid` still runs (a zombie does not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        // The state follows the command name, which may hold spaces.
        s.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

/// Every rank says where it runs and what command line it has; rank 0
/// refuses a job whose ranks disagree, or sends every rank the list.
pub(super) fn hello(g: &Group) -> Result<Vec<RankInfo>> {
    let mine = Hello {
        argv: std::env::args().skip(1).collect(),
        info: rank_info(g.rank()),
    };
    let bytes = serde_json::to_vec(&mine).expect("plain data");
    let got = g.gather(bytes, Duration::ZERO)?;
    let Some(got) = got else {
        let verdict = g.share(Vec::new(), Duration::ZERO)?;
        // `null`: refused, and rank 0 says why.
        return serde_json::from_slice::<Option<Vec<RankInfo>>>(&verdict)
            .ok()
            .flatten()
            .ok_or_else(|| Error::usage(String::new()));
    };
    let mut infos = Vec::with_capacity(got.len());
    let mut problem = None;
    for (r, b) in got.iter().enumerate() {
        let Some(h) = b
            .as_deref()
            .and_then(|b| serde_json::from_slice::<Hello>(b).ok())
        else {
            problem = Some(Error::run(format!(
                "rank {r} did not answer within {}; is every rank running this xferbench?",
                humantime::format_duration(g.timeout())
            )));
            break;
        };
        if h.argv != mine.argv {
            problem = Some(Error::usage(format!(
                "rank {r} runs `xferbench {}` but rank 0 runs `xferbench {}`; every rank must run the same command line",
                h.argv.join(" "),
                mine.argv.join(" ")
            )));
            break;
        }
        infos.push(h.info);
    }
    let list = problem.is_none().then_some(&infos);
    g.share(
        serde_json::to_vec(&list).expect("plain data"),
        Duration::ZERO,
    )?;
    match problem {
        Some(e) => Err(e),
        None => Ok(infos),
    }
}

fn rank_info(rank: usize) -> RankInfo {
    // SAFETY: sched_getcpu takes nothing and touches no memory; failure is -1.
    let cpu = unsafe { libc::sched_getcpu() };
    let cpu = (cpu >= 0).then_some(cpu as usize);
    let topo = |f: &str| -> Option<usize> {
        let c = cpu?;
        std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{c}/topology/{f}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    RankInfo {
        rank,
        host: crate::measure::env::hostname(),
        cpu,
        core: topo("core_id"),
        socket: topo("physical_package_id"),
        allowed_cpus: crate::measure::placement::allowed_cpus(),
        pid: std::process::id(),
    }
}

/// How long a rank may wait for the others while they measure `slots`
/// pair directions, beyond the timeout.
fn patience(cfg: &MeshConfig, slots: usize) -> Duration {
    let per = (cfg.latency_sizes().len() + cfg.bandwidth_sizes().len()) as u32;
    (cfg.duration * per * 4 + Duration::from_millis(200)) * slots.max(1) as u32
}

/// The rounds; after each, what the ranks measured goes to rank 0, which
/// tells everyone whether to go on.
fn sweep(
    cfg: &MeshConfig,
    g: &Group,
    ranks: &[RankInfo],
    rounds: &[super::Round],
    mut col: Option<&mut Collector>,
    progress: &dyn Progress,
    keep: &dyn Fn(&Collector),
) -> Result<()> {
    for (i, round) in rounds.iter().enumerate() {
        if cfg.inject_stall == Some(g.rank()) && i == 1.min(rounds.len() - 1) {
            stall(g);
        }
        let mine = round.iter().find(|(a, b)| *a == g.rank() || *b == g.rank());
        let mut report = RankReport::default();
        let slots: Vec<&(usize, usize)> = if cfg.concurrent {
            mine.into_iter().collect()
        } else {
            round.iter().collect()
        };
        // A failed wait ends this rank's part of the round, but what it
        // measured still goes to rank 0.
        let mut failed = None;
        for &&(a, b) in &slots {
            if failed.is_some() {
                break;
            }
            if a == g.rank() || b == g.rank() {
                let _pin = (!cfg.concurrent)
                    .then(|| pin_for_pair(ranks, a, b, g.rank()))
                    .flatten();
                both_ways(cfg, g, a, b, i, false, &mut report);
            }
            if !cfg.concurrent {
                let what = || format!("the other ranks to finish pair {a}–{b} of round {}", i + 1);
                failed = g.barrier(patience(cfg, 2), &what).err();
            }
        }
        let wait = patience(cfg, if cfg.concurrent { 2 } else { 2 * round.len() });
        let go = exchange(g, report, wait, col.as_deref_mut(), failed);
        if let Some(c) = col.as_deref() {
            progress.point(&format!("round {}/{}", i + 1, rounds.len()));
            keep(c);
        }
        go?;
    }
    Ok(())
}

/// Sends this rank's report to rank 0, which files every report and then
/// says whether to go on. `failed` is this rank's own failed wait, if any.
/// Rank 0's error names what ended the run: a rank that did not report,
/// else the first pair that failed; the other ranks' is empty when rank 0
/// stopped the run (rank 0 says why).
fn exchange(
    g: &Group,
    report: RankReport,
    wait: Duration,
    col: Option<&mut Collector>,
    failed: Option<Error>,
) -> Result<()> {
    let bytes = serde_json::to_vec(&report).expect("plain data");
    // After a failed wait the others are late or gone: give them a timeout.
    let wait = if failed.is_some() {
        Duration::ZERO
    } else {
        wait
    };
    let got = g.gather(bytes, wait)?;
    let Some(got) = got else {
        return match g.share(Vec::new(), wait)?.first() {
            Some(&GO) => failed.map_or(Ok(()), Err),
            _ => Err(failed.unwrap_or_else(|| Error::run(""))),
        };
    };
    let col = col.expect("rank 0 collects");
    let mut silent = Vec::new();
    for (r, b) in got.iter().enumerate() {
        match b.as_deref().map(serde_json::from_slice::<RankReport>) {
            Some(Ok(rep)) => col.file(rep),
            _ => silent.push(r),
        }
    }
    let first = col.first_error();
    let verdict = if g.stopped() {
        Err(Error::Interrupted)
    } else if let Some(l) = g.left() {
        Err(Error::run(l.to_string()))
    } else if !silent.is_empty() {
        Err(Error::run(format!(
            "{} stopped answering (no report within {} of the round's end), so their pairs are marked missing{}",
            ranks_list(&silent),
            humantime::format_duration(g.timeout()),
            first.map_or(String::new(), |e| format!("; first failure: {e}"))
        )))
    } else if let Some(e) = first {
        Err(Error::run(e))
    } else {
        failed.map_or(Ok(()), Err)
    };
    let _ = g.share(
        vec![if verdict.is_ok() { GO } else { STOP }],
        Duration::ZERO,
    );
    verdict
}

fn ranks_list(r: &[usize]) -> String {
    let names: Vec<String> = r.iter().map(|r| r.to_string()).collect();
    if r.len() == 1 {
        format!("rank {}", names[0])
    } else {
        format!("ranks {}", names.join(", "))
    }
}

/// Whether a pair's two ranks could land on one CPU: same host, same
/// unbound CPU set (an oversubscribed or unbound launch). Such a pair is
/// pinned while it measures, the lower rank to the set's first CPU and the
/// other to its second, as the local transports pin their two ends; a
/// launcher's binding is left as it is.
pub(super) fn pins(ranks: &[RankInfo], a: usize, b: usize) -> bool {
    let (ra, rb) = (&ranks[a], &ranks[b]);
    ra.host == rb.host && ra.allowed_cpus == rb.allowed_cpus && ra.allowed_cpus.len() >= 2
}

/// Pins this rank for the pair a–b where [`pins`] says so; the guard gives
/// the launcher's mask back.
fn pin_for_pair(
    ranks: &[RankInfo],
    a: usize,
    b: usize,
    me: usize,
) -> Option<crate::measure::placement::KeepAffinity> {
    if !pins(ranks, a, b) {
        return None;
    }
    let cpus = &ranks[me].allowed_cpus;
    let keep = crate::measure::placement::KeepAffinity::new();
    let cpu = if me == a.min(b) { cpus[0] } else { cpus[1] };
    crate::measure::placement::pin_current(cpu).ok()?;
    Some(keep)
}

/// One pair, both directions: `a` leads, then `b`.
fn both_ways(
    cfg: &MeshConfig,
    g: &Group,
    a: usize,
    b: usize,
    round: usize,
    retest: bool,
    report: &mut RankReport,
) {
    for (from, to) in [(a, b), (b, a)] {
        if let Err(e) = one_way(cfg, g, from, to, round, retest, report) {
            let msg = if matches!(e, Error::Interrupted) {
                "interrupted".to_string()
            } else {
                format!("rank {} → rank {to}: {e}", from)
            };
            report.errors.push((from, to, msg));
            return;
        }
    }
}

/// `from` leads the measurements of one direction; `to` follows.
fn one_way(
    cfg: &MeshConfig,
    g: &Group,
    from: usize,
    to: usize,
    round: usize,
    retest: bool,
    report: &mut RankReport,
) -> Result<()> {
    let lead = g.rank() == from;
    let peer = if lead { to } else { from };
    let lat_sizes = if retest {
        vec![cfg.latency_matrix_size()]
    } else {
        cfg.latency_sizes()
    };
    let bw_sizes = if retest {
        vec![cfg.bandwidth_matrix_size()]
    } else {
        cfg.bandwidth_sizes()
    };
    let mut keep = |kind: Kind, size: u64, window: u32, s: Option<Sampled>| {
        if let Some(s) = s {
            report.measured.push(Measured {
                from,
                to,
                round,
                retest,
                kind,
                size,
                window,
                warmup: s.warmup,
                timed_ns: s.timed.as_nanos() as u64,
                rec: s.rec.to_wire(),
                blocks: s.blocks,
            });
        }
    };
    for s in lat_sizes {
        let got = timed::latency(g, peer, lead, s as usize, cfg.duration)?;
        keep(Kind::Latency, s, 1, got);
    }
    for s in bw_sizes {
        let got = timed::bandwidth(g, peer, lead, s as usize, cfg.window, cfg.duration, None)?;
        keep(Kind::Bandwidth, s, cfg.window, got);
    }
    Ok(())
}

/// The suspects measured again, one pair at a time; rank 0 picks them and
/// files the results as re-tests.
fn retest(
    cfg: &MeshConfig,
    g: &Group,
    ranks: &[RankInfo],
    cells: Vec<(usize, usize)>,
    col: Option<&mut Collector>,
) -> Result<()> {
    let list = if cfg.retest { cells } else { Vec::new() };
    let bytes = g.share(
        serde_json::to_vec(&list).expect("plain data"),
        Duration::ZERO,
    )?;
    let list: Vec<(usize, usize)> = serde_json::from_slice(&bytes)
        .map_err(|_| Error::run("rank 0 sent a malformed re-test list"))?;
    if list.is_empty() {
        return Ok(());
    }
    let mut report = RankReport::default();
    let mut failed = None;
    for &(from, to) in &list {
        if from == g.rank() || to == g.rank() {
            let _pin = pin_for_pair(ranks, from, to, g.rank());
            if let Err(e) = one_way(cfg, g, from, to, usize::MAX, true, &mut report) {
                report.errors.push((from, to, format!("re-test: {e}")));
            }
        }
        let what = || format!("the other ranks to finish re-testing {from} → {to}");
        if let Err(e) = g.barrier(patience(cfg, 1), &what) {
            failed = Some(e);
            break;
        }
    }
    exchange(g, report, patience(cfg, 1), col, failed)
}

/// The injected stall: this rank stops answering (until the job is ended).
fn stall(g: &Group) -> ! {
    let until = Instant::now() + g.timeout() * 20 + Duration::from_secs(60);
    while Instant::now() < until && !g.stopped() {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::process::exit(1)
}
