//! xferbench: measures how fast data moves between two endpoints.
//!
//! Layout follows the design: `transport/` moves bytes, `experiment/` owns the
//! sweeps, `sample` and `stats` measure, `report/` renders a `Run`.

pub mod app;
pub mod buffer;
pub mod cli;
pub mod cuda;
pub mod engine;
pub mod env;
pub mod error;
pub mod experiment;
pub mod fit;
pub mod flowgraph;
pub mod format;
pub mod interrupt;
pub mod job;
pub mod jobfile;
pub mod list;
pub mod loadgen;
pub mod options;
pub mod payload;
pub mod placement;
pub mod plugin_check;
pub mod progress;
pub mod reference;
pub mod report;
pub mod result;
pub mod sample;
pub mod serve;
pub mod stats;
pub mod transport;
pub mod units;
pub mod verify;
pub mod words;
