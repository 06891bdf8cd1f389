//! fio's flow control (flow.c): jobs sharing a `flow_id` keep their I/O
//! counts in the ratio of their `flow` weights. Each flow has a counter of
//! its members' I/Os and the sum of their weights, shared by the worker
//! threads as atomics; a member whose share of the I/Os is above its share
//! of the weight is held back (it waits `flow_sleep`) until the others
//! catch up.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// One flow's shared counters.
struct Flow {
    /// I/Os of its members, plus one (fio starts it at 1, so that the
    /// first member's ratio is defined).
    count: AtomicU64,
    /// Its members' weights summed.
    weight: AtomicU64,
}

/// The run's flows by id (fio's `flow_list`).
#[derive(Default)]
pub struct Flows(Mutex<HashMap<i32, Arc<Flow>>>);

impl Flows {
    /// Joins flow `id` with `weight` (fio's `flow_init_job`); None for a
    /// job without a weight, which takes no part.
    pub fn join(&self, id: i32, weight: u32) -> Option<Member> {
        if weight == 0 {
            return None;
        }
        let flow = {
            // A poisoned lock still holds a usable map of counters.
            let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(map.entry(id).or_insert_with(|| {
                Arc::new(Flow {
                    count: AtomicU64::new(1),
                    weight: AtomicU64::new(0),
                })
            }))
        };
        flow.weight.fetch_add(u64::from(weight), Ordering::Relaxed);
        Some(Member {
            flow,
            weight: u64::from(weight),
            count: 0,
        })
    }
}

/// A job's part in a flow; leaving (drop) takes its I/Os and weight out,
/// so the others are measured against those still running.
pub struct Member {
    flow: Arc<Flow>,
    weight: u64,
    count: u64,
}

impl Member {
    /// fio's `flow_threshold_exceeded`: whether this job is ahead of its
    /// share and must wait; if not, its next I/O is counted.
    pub fn held(&mut self) -> bool {
        let total = self.flow.count.load(Ordering::Relaxed).max(1);
        let weights = self.flow.weight.load(Ordering::Relaxed).max(1);
        // count/total > weight/weights, without floating point.
        if u128::from(self.count) * u128::from(weights)
            > u128::from(self.weight) * u128::from(total)
        {
            return true;
        }
        self.flow.count.fetch_add(1, Ordering::Relaxed);
        self.count += 1;
        false
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.flow.count.fetch_sub(self.count, Ordering::Relaxed);
        self.flow.weight.fetch_sub(self.weight, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_keep_the_ratio_of_their_weights() {
        let flows = Flows::default();
        let mut a = flows.join(0, 8).unwrap();
        let mut b = flows.join(0, 1).unwrap();
        assert!(flows.join(0, 0).is_none());
        let (mut na, mut nb) = (0u64, 0u64);
        // Both try in turn; each goes only when not held.
        for _ in 0..9000 {
            na += u64::from(!a.held());
            nb += u64::from(!b.held());
        }
        let ratio = na as f64 / nb as f64;
        assert!((7.5..8.5).contains(&ratio), "{na}:{nb}");
        // Once b leaves, a alone is never held.
        drop(b);
        assert!((0..100).all(|_| !a.held()));
        // Another flow id is apart.
        let mut c = flows.join(1, 1).unwrap();
        assert!(!c.held());
    }
}
