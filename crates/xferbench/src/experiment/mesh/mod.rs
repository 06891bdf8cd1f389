//! `mesh`: every ordered pair of MPI ranks measured, mpiGraph-style, with
//! the outliers attributed to a node, a host or a link.
//!
//! All ranks run the same command line. The pairs follow a round-robin
//! tournament: in each round every rank is in at most one pair, and each
//! pair measures both directions in turn. Sequentially (the default) the
//! pairs of a round take turns, the others idle, so each pair has the
//! fabric to itself; `--concurrent` runs a round's pairs at once. After
//! each round every rank sends what it measured to rank 0, which is also
//! where a stalled rank shows: a rank that has not reported within the
//! timeout ends the run, with the pairs measured so far written and the
//! rest marked missing.

// The collation and the schedule are plain code, used by the MPI driver.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
mod assemble;
#[cfg(feature = "mpi")]
mod pairs;
#[cfg(feature = "mpi")]
mod run;
#[cfg(feature = "mpi")]
mod timed;

use crate::error::{Error, Result};
use crate::experiment::Progress;
use crate::options::MeshConfig;
use crate::result::mesh::MeshRun;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Runs the mesh on this rank. Rank 0 returns the run (and the error that
/// ended it early, if one did); every other rank returns `None`.
pub fn run(
    cfg: &MeshConfig,
    stop: &Arc<AtomicBool>,
    progress: &dyn Progress,
) -> Result<Option<(MeshRun, Option<Error>)>> {
    cfg.validate()?;
    no_repeats(cfg.out.repeat)?;
    if !launched_by_mpi() {
        return Err(Error::usage(
            "mesh runs every pair of MPI ranks: start it as `mpirun -n N xferbench mesh -t mpi` (N ≥ 2), or under Slurm as `srun -n N xferbench mesh -t mpi`",
        ));
    }
    #[cfg(feature = "mpi")]
    {
        run::run(cfg, stop, progress)
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = (stop, progress);
        Err(Error::usage(crate::transport::mpi::NOT_BUILT))
    }
}

/// `curve -t mpi --pairs K` on this rank: K senders stream to K receivers
/// at once. Rank 0 returns the run; every other rank returns `None`.
pub fn pairs(
    cfg: &crate::options::CurveConfig,
    stop: &Arc<AtomicBool>,
    progress: &dyn Progress,
) -> Result<Option<(crate::result::mesh::PairsRun, Option<Error>)>> {
    cfg.validate()?;
    let k = cfg.pairs.unwrap_or(1) as usize;
    if !launched_by_mpi() {
        return Err(Error::usage(format!(
            "--pairs runs MPI ranks in pairs: start it as `mpirun -n {} xferbench curve -t mpi --pairs {k}`",
            2 * k
        )));
    }
    #[cfg(feature = "mpi")]
    {
        crate::experiment::repeat::repeated_ranked(cfg.common.out.repeat, progress, |_, p| {
            pairs::run(cfg, k, stop, p)
        })
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = (stop, progress);
        Err(Error::usage(crate::transport::mpi::NOT_BUILT))
    }
}

/// `--repeat K` (K > 1) is refused on `mesh`: its matrices, outliers,
/// re-tests and health gate would have to be made again from K sweeps'
/// merged pairs. (`curve --pairs` repeats: its points merge alone.)
fn no_repeats(k: u32) -> Result<()> {
    if k > 1 {
        return Err(Error::usage(
            "mesh does not repeat sweeps yet: run the job K times and compare the files",
        ));
    }
    Ok(())
}

/// Whether a launcher started this process as an MPI rank (Open MPI,
/// MPICH/Hydra, PMIx, Slurm's PMI): without one, MPI would start a
/// one-rank job of its own.
pub fn launched_by_mpi() -> bool {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMIX_RANK",
        "PMI_RANK",
        "PMI_SIZE",
        "MPI_LOCALNRANKS",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some())
}

/// The rank the launcher gave this process, read before MPI starts (Open
/// MPI, PMI/PMIx, Slurm).
pub fn launcher_rank() -> Option<usize> {
    [
        "OMPI_COMM_WORLD_RANK",
        "PMIX_RANK",
        "PMI_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.parse().ok())
}

/// One round of the tournament: the unordered pairs (lower rank first)
/// that run in it.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub type Round = Vec<(usize, usize)>;

/// The round-robin ("circle") schedule: N − 1 rounds for even N, N for odd
/// N (one rank sits out each round); every unordered pair exactly once, and
/// no rank twice in a round.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub fn tournament(n: usize) -> Vec<Round> {
    if n < 2 {
        return Vec::new();
    }
    // An odd count gets a phantom rank `n`; whoever meets it sits out.
    let m = if n.is_multiple_of(2) { n } else { n + 1 };
    let mut ring: Vec<usize> = (1..m).collect();
    let mut rounds = Vec::with_capacity(m - 1);
    for _ in 0..m - 1 {
        let mut round = Vec::with_capacity(m / 2);
        let seat = |i: usize| if i == 0 { 0 } else { ring[i - 1] };
        for i in 0..m / 2 {
            let (a, b) = (seat(i), seat(m - 1 - i));
            if a < n && b < n {
                round.push((a.min(b), a.max(b)));
            }
        }
        round.sort_unstable();
        rounds.push(round);
        ring.rotate_right(1);
    }
    rounds
}

/// Seconds a mesh will take, roughly: each measurement's duration plus a
/// fifth for warm-up and hand-over, per direction of each pair (all of a
/// round's pairs at once when concurrent).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub fn estimate_s(cfg: &MeshConfig, ranks: usize) -> f64 {
    let per_direction = (cfg.latency_sizes().len() + cfg.bandwidth_sizes().len()) as f64
        * cfg.duration.as_secs_f64()
        * 1.2;
    let rounds = tournament(ranks);
    let slots: usize = if cfg.concurrent {
        rounds.len()
    } else {
        rounds.iter().map(Vec::len).sum()
    };
    slots as f64 * 2.0 * per_direction
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_meets_once_and_no_rank_twice_in_a_round() {
        for n in 2..=17 {
            let rounds = tournament(n);
            assert_eq!(rounds.len(), if n % 2 == 0 { n - 1 } else { n }, "n={n}");
            let mut seen = std::collections::BTreeSet::new();
            for r in &rounds {
                let mut in_round = std::collections::BTreeSet::new();
                for &(a, b) in r {
                    assert!(a < b && b < n);
                    assert!(
                        in_round.insert(a) && in_round.insert(b),
                        "n={n}: rank twice"
                    );
                    assert!(seen.insert((a, b)), "n={n}: ({a},{b}) twice");
                }
                assert_eq!(r.len(), n / 2, "n={n}: every round as full as it can be");
            }
            assert_eq!(seen.len(), n * (n - 1) / 2, "n={n}");
        }
        assert!(tournament(1).is_empty());
    }

    #[test]
    fn the_estimate_grows_with_the_pairs_and_shrinks_when_concurrent() {
        let mut c = MeshConfig::default();
        let four = estimate_s(&c, 4);
        assert!(estimate_s(&c, 8) > 4.0 * four);
        c.concurrent = true;
        assert!(estimate_s(&c, 8) < estimate_s(&MeshConfig::default(), 8));
    }

    #[test]
    fn outside_a_launcher_mesh_says_how_to_start_it() {
        if launched_by_mpi() {
            return;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let e = run(&MeshConfig::default(), &stop, &()).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("mpirun -n N"), "{e}");
    }
}
