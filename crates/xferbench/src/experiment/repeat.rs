//! `--repeat K`: the whole sweep run K times, one sweep after another
//! (A B C A B C, not A A A B B B), and each point's K measurements merged
//! into one point that keeps every repeat's figures. Interleaving puts time
//! between a point's repeats, so what changes from run to run on a shared
//! machine (placement, caches, neighbours) shows between repeats instead of
//! hiding inside one of them.

use super::Progress;
use crate::error::{Error, Result};
use crate::result::{Repeatable, Run};
use std::cell::Cell;

/// Runs `once` `k` times (k ≥ 1), each a whole sweep, and merges the runs
/// point by point. A repeat that stops early (Ctrl-C, an error) ends the
/// loop; what was measured until then is merged and the error returned
/// with it. `once` gets the repeat's index (0-based).
pub fn repeated<P: Repeatable, X>(
    k: u32,
    progress: &dyn Progress,
    mut once: impl FnMut(u32, &dyn Progress) -> Result<(Run<P, X>, Option<Error>)>,
) -> Result<(Run<P, X>, Option<Error>)> {
    repeated_ranked(k, progress, |r, p| once(r, p).map(Some))?
        .ok_or_else(|| Error::run("no repeat gave a result"))
}

/// What a sweep on one MPI rank gives: rank 0's run (and why it stopped
/// early, if it did); nothing on the other ranks.
type Ranked<P, X> = Result<Option<(Run<P, X>, Option<Error>)>>;

/// `repeated` for an MPI command: every rank runs the K sweeps in step;
/// the rank whose sweeps return a run (rank 0) merges them, the others
/// return `None`.
pub fn repeated_ranked<P: Repeatable, X>(
    k: u32,
    progress: &dyn Progress,
    mut once: impl FnMut(u32, &dyn Progress) -> Ranked<P, X>,
) -> Ranked<P, X> {
    if k <= 1 {
        return once(0, progress);
    }
    let relay = Relay {
        inner: progress,
        k,
        repeat: Cell::new(0),
    };
    let mut runs: Vec<Run<P, X>> = Vec::new();
    let mut err = None;
    for r in 0..k {
        relay.repeat.set(r);
        match once(r, &relay)? {
            None => {}
            Some((run, e)) => {
                runs.push(run);
                if e.is_some() {
                    err = e;
                    break;
                }
            }
        }
    }
    if runs.is_empty() {
        return Ok(None);
    }
    progress.finish();
    Ok(Some((merge_runs(runs, k), err)))
}

/// The K runs as one: the first run's environment and options, every
/// point merged with its other measurements, warnings of all runs once.
fn merge_runs<P: Repeatable, X>(runs: Vec<Run<P, X>>, k: u32) -> Run<P, X> {
    let done = runs.len() as u32;
    let complete = runs.iter().all(|r| r.complete) && done == k;
    let mut it = runs.into_iter();
    let mut first = it.next().expect("at least one repeat ran");
    let mut groups: Vec<(String, Vec<P>)> = Vec::new();
    let add = |p: P, groups: &mut Vec<(String, Vec<P>)>| {
        let id = p.identity();
        match groups.iter_mut().find(|(g, _)| *g == id) {
            Some((_, v)) => v.push(p),
            None => groups.push((id, vec![p])),
        }
    };
    for p in std::mem::take(&mut first.points) {
        add(p, &mut groups);
    }
    for run in it {
        for p in run.points {
            add(p, &mut groups);
        }
        for w in run.warnings {
            if !first.warnings.contains(&w) {
                first.warnings.push(w);
            }
        }
        first.devices.extend(run.devices);
        if first.stopped_by.is_none() {
            first.stopped_by = run.stopped_by;
        }
    }
    let short: Vec<String> = groups
        .iter()
        .filter(|(_, v)| (v.len() as u32) < done)
        .map(|(id, v)| format!("{id} ({} of {done})", v.len()))
        .collect();
    first.points = groups.into_iter().map(|(_, v)| P::merge(v)).collect();
    first.complete = complete;
    if done < k {
        first.warnings.push(format!(
            "stopped during repeat {} of {k}: points hold fewer repeats than asked",
            done
        ));
    }
    if !short.is_empty() {
        first.warnings.push(format!(
            "measured in fewer repeats than the others: {}",
            short.join(", ")
        ));
    }
    first
}

/// The progress of K sweeps as one: the bar counts every repeat's points,
/// and each label says which repeat it belongs to.
struct Relay<'a> {
    inner: &'a dyn Progress,
    k: u32,
    repeat: Cell<u32>,
}

impl Progress for Relay<'_> {
    fn start(&self, total: u64) {
        if self.repeat.get() == 0 {
            self.inner.start(total * u64::from(self.k));
        }
    }
    fn point(&self, label: &str) {
        self.inner.point(&format!(
            "repeat {}/{}: {label}",
            self.repeat.get() + 1,
            self.k
        ));
    }
    fn finish(&self) {}
    fn start_bytes(&self, total: u64, label: &str) {
        self.inner.start_bytes(
            total,
            &format!("repeat {}/{}: {label}", self.repeat.get() + 1, self.k),
        );
    }
    fn at(&self, done: u64) {
        self.inner.at(done);
    }
    fn note(&self, line: &str) {
        if self.repeat.get() == 0 {
            self.inner.note(line);
        }
    }
    /// The repeat under way; earlier repeats are not in it (a hang then
    /// writes the repeat it stopped).
    fn checkpoint(&self, partial: &dyn std::any::Any) {
        self.inner.checkpoint(partial);
    }
    /// The repeat under way, as for a checkpoint.
    fn status(&self, so_far: &dyn std::any::Any) {
        self.inner.status(so_far);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::distribution::Figures;
    use crate::result::NoExtra;

    #[derive(Debug)]
    struct P {
        id: &'static str,
        v: Vec<f64>,
    }

    impl Repeatable for P {
        fn identity(&self) -> String {
            self.id.into()
        }
        fn figures(&self) -> Figures {
            Figures::from([("v", self.v[0])])
        }
        fn merge(reps: Vec<P>) -> P {
            P {
                id: reps[0].id,
                v: reps.iter().flat_map(|p| p.v.clone()).collect(),
            }
        }
    }

    fn run(points: Vec<P>) -> Run<P, NoExtra> {
        Run {
            experiment: "t",
            complete: true,
            stopped_by: None,
            env: crate::measure::env::Env::capture(),
            options: serde_json::Value::Null,
            placement: crate::measure::placement::Placement::unpinned(),
            points,
            extra: NoExtra {},
            warnings: vec![],
            devices: vec![],
            limits: vec![],
        }
    }

    #[test]
    fn repeats_run_whole_sweeps_in_turn_and_merge_by_identity() {
        let order = std::cell::RefCell::new(Vec::new());
        let (r, e) = repeated(3, &(), |k, _| {
            let pts = ["a", "b"]
                .iter()
                .map(|&id| {
                    order.borrow_mut().push(format!("{id}{k}"));
                    P {
                        id,
                        v: vec![f64::from(k)],
                    }
                })
                .collect();
            Ok((run(pts), None))
        })
        .unwrap();
        assert!(e.is_none() && r.complete);
        assert_eq!(*order.borrow(), ["a0", "b0", "a1", "b1", "a2", "b2"]);
        assert_eq!(r.points.len(), 2);
        assert_eq!(r.points[1].v, [0.0, 1.0, 2.0]);
    }

    #[test]
    fn a_stop_keeps_what_was_measured_and_says_so() {
        let (r, e) = repeated(4, &(), |k, _| {
            let mut run = run(vec![P {
                id: "a",
                v: vec![1.0],
            }]);
            if k == 1 {
                run.complete = false;
                return Ok((run, Some(Error::Interrupted)));
            }
            Ok((run, None))
        })
        .unwrap();
        assert!(matches!(e, Some(Error::Interrupted)));
        assert!(!r.complete);
        assert_eq!(r.points[0].v.len(), 2);
        assert!(r.warnings.iter().any(|w| w.contains("repeat 2 of 4")));
    }
}
