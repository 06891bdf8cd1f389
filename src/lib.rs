#![warn(missing_docs)]
//! xferbench: measures how fast data moves between two endpoints.

pub mod error;
pub mod options;
pub mod reference;
pub mod result;
pub mod transport;
pub mod units;

pub(crate) mod app;
pub(crate) mod buffer;
pub(crate) mod cli;
pub(crate) mod command;
pub(crate) mod experiment;
pub(crate) mod flowgraph;
pub(crate) mod format;
pub(crate) mod measure;
pub(crate) mod payload;
pub(crate) mod report;
pub(crate) mod stream;
pub(crate) mod words;

pub use command::serve::{ServeConfig, run as serve};
pub use error::{Error, Result};
pub use experiment::Progress;
pub use experiment::curve::run as curve;
pub use experiment::flowgraph::run as flowgraph;
pub use experiment::load::run as load;
pub use experiment::roundtrip::run as roundtrip;
pub use experiment::stream::run as stream;
pub use format::Format;
pub use options::{
    Common, CurveConfig, FlowgraphConfig, LoadConfig, Output, RoundtripConfig, StreamConfig,
};
pub use report::Render;
pub use result::Run;
pub use result::curve::CurveRun;
pub use result::flowgraph::FlowRun;
pub use result::load::LoadRun;
pub use result::stream::StreamRun;

/// Runs the `xferbench` command line on this process's arguments and returns
/// its exit code; the binary is this one call.
pub fn main() -> i32 {
    app::main()
}
