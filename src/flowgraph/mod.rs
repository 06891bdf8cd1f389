//! A lean streaming runtime to measure against: a Dummy Source feeding a
//! chain of Saxpy blocks into a Benchmark Sink (the SDR runtime benchmark of
//! `sdr-runtimes.rst`), run by several schedulers, and the kernel-only
//! references that bound what any runtime can reach.

pub mod block;
pub mod edge;
pub mod graph;
pub mod handoff;
pub mod rate;
pub mod reference;
pub mod ring;
pub mod saxpy;
pub mod sched;
