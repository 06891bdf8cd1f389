//! xferbench: measures how fast data moves between two endpoints.

pub mod app;
pub mod buffer;
pub mod cli;
pub mod command;
pub mod error;
pub mod experiment;
pub mod flowgraph;
pub mod format;
pub mod measure;
pub mod options;
pub mod payload;
pub mod reference;
pub mod report;
pub mod result;
pub mod stream;
pub mod transport;
pub mod units;
pub mod words;
