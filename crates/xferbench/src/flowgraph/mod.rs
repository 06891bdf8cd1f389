//! A lean streaming runtime to measure against: a Dummy Source feeding a
//! chain of Saxpy blocks into a Benchmark Sink (the SDR runtime benchmark of
//! the qsdr paper), run by several schedulers, and the kernel-only
//! references that bound what any runtime can reach.

pub mod block;
pub mod edge;
pub mod graph;
pub mod handoff;
pub mod plan;
pub mod rate;
pub mod ring;
pub mod ring_reference;
pub mod saxpy;
pub mod sched;
