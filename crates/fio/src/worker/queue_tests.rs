//! The queue kept as fio keeps it: by default each I/O submitted as it is
//! made and one completion reaped to make room for the next, so the queue
//! stays at its depth; the batch options and `iodepth_low` change that as
//! in fio. Counted on the null engine, which completes at once: the maps
//! are the worker's discipline alone, never a device's timing.

use super::tests::{prepared, shared};
use super::{Progress, run};
use crate::fiostats::MAP_SLOTS;
use std::sync::atomic::AtomicBool;

/// 1024 I/Os of 4 KiB at `iodepth` with `extra` option lines; the
/// job's depth, submit and complete maps.
fn maps(iodepth: u32, extra: &str) -> [[u64; MAP_SLOTS]; 3] {
    let p = prepared(&format!(
        "[q]\nfilename=x\nioengine=null\nrw=randread\nbs=4k\nsize=4m\niodepth={iodepth}\n{extra}"
    ));
    let r = run(&p, &shared(), &Progress::default(), &AtomicBool::new(false)).unwrap();
    assert_eq!(r.failure, None);
    let f = &r.recorded.fio;
    // Every I/O had its submission timed (null submits at the commit).
    assert_eq!(f.slat[0].count(), 1024);
    [f.depth, f.submit, f.complete]
}

#[test]
fn by_default_each_io_is_submitted_alone_and_the_queue_stays_at_its_depth() {
    let [depth, submit, complete] = maps(8, "");
    // One submission per I/O (fio's "4" slot: 1 to 4 I/Os).
    assert_eq!(submit, [0, 1024, 0, 0, 0, 0, 0]);
    // Filling the empty queue once (1, 2–3, 4–7), then every I/O at 8.
    assert_eq!(depth, [1, 2, 4, 1017, 0, 0, 0]);
    // One completion a reap while the queue is full; the end drains the
    // last seven in one.
    assert_eq!(complete, [0, 1017, 1, 0, 0, 0, 0]);
}

#[test]
fn batches_of_eight_are_submitted_and_reaped_together() {
    let [depth, submit, complete] =
        maps(8, "iodepth_batch_submit=8\niodepth_batch_complete_min=8\n");
    assert_eq!(submit, [0, 0, 128, 0, 0, 0, 0]);
    // Each batch is counted at the depth it brings the queue to.
    assert_eq!(depth, [0, 0, 0, 1024, 0, 0, 0]);
    assert_eq!(complete, [0, 0, 128, 0, 0, 0, 0]);
    // fio's aliases say the same.
    let aliased = maps(8, "iodepth_batch=8\niodepth_batch_complete=8\n");
    assert_eq!(aliased, [depth, submit, complete]);
    // A reap never takes more than iodepth_batch_complete_max, but the
    // end's drain, which takes all there is (12 to 14 here) in one.
    let [_, _, complete] = maps(
        16,
        "iodepth_batch_complete_min=2\niodepth_batch_complete_max=4\n",
    );
    assert_eq!(complete[2..], [0, 1, 0, 0, 0], "{complete:?}");
}

#[test]
fn iodepth_low_drains_a_full_queue_to_the_mark_before_refilling() {
    let total = 1024;
    let [full, ..] = maps(16, "");
    assert!(full[4] * 10 >= total * 9, "{full:?}");
    let [depth, submit, _] = maps(16, "iodepth_low=4\n");
    assert_eq!(submit[1], total);
    // Only the first fill passes 1–3; each refill goes from 5 to 16, one
    // I/O in twelve at 16.
    assert_eq!(depth[..2], [1, 2]);
    assert!(depth[4] * 10 < total, "{depth:?}");
    assert!(depth[2] * 5 > total, "{depth:?}");
    assert_eq!(depth.iter().sum::<u64>(), total);
}

#[test]
fn polling_reaps_after_every_io() {
    // Both completion batches 0: fio's polling loop looks for a completion
    // after each I/O, so the null engine's queue never deepens.
    let [depth, submit, complete] = maps(
        8,
        "iodepth_batch_complete_min=0\niodepth_batch_complete_max=0\n",
    );
    assert_eq!(depth[0], 1024, "{depth:?}");
    assert_eq!((submit[1], complete[1]), (1024, 1024));
}
