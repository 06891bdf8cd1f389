//! xferbench measures how fast data moves between two endpoints: round-trip
//! latency, one-way latency and bandwidth over message size, fio-like
//! streams, request rate under load, and flowgraph throughput, over threads,
//! processes, pipes, sockets, files, GPUs, device plugins and remote hosts.
//!
//! The `xferbench` binary (crate `xferbench-cli`) is one thin layer over
//! this library, which has no command line of its own; a program
//! (a test harness, a lab script, a binding for another language) runs the
//! same experiments without a command line:
//!
//! ```
//! use std::sync::atomic::AtomicBool;
//! use xferbench::{Render, RoundtripConfig};
//!
//! let mut config = RoundtripConfig::default();
//! config.common.transports = xferbench::transport::parse_specs("thread")?;
//! config.in_sizes = vec![64];
//! config.out_sizes = vec![64, 1024];
//! config.common.samples = Some(200);
//!
//! // A stop flag another thread may set (the run ends early, marked
//! // incomplete), and `&()` for no progress bar.
//! let stop = AtomicBool::new(false);
//! let (run, stopped) = xferbench::roundtrip(&config, &stop, &())?;
//! assert!(stopped.is_none() && run.complete);
//! assert_eq!(run.points.len(), 2);
//! println!("{}", run.render(xferbench::Format::Json)?);
//! # Ok::<(), xferbench::Error>(())
//! ```
//!
//! What is here:
//! - [`options`]: one plain config per experiment ([`RoundtripConfig`],
//!   [`CurveConfig`], [`StreamConfig`], [`LoadConfig`], [`FlowgraphConfig`]),
//!   each with `Default` (the CLI's defaults) and `validate`, and the
//!   vocabulary they use (transport specs, buffer and completion modes,
//!   statistics, units).
//! - The experiments: [`roundtrip()`], [`curve()`], [`stream()`], [`load()`],
//!   [`flowgraph()`]. Each returns its result, complete or not, and the error
//!   that stopped it early if one did; a config the transport cannot carry
//!   is an [`Error::Usage`] before anything runs.
//! - [`result`]: what a run recorded ([`Run`] and its kinds), serde data
//!   whose JSON is the CLI's `--format json`; [`Render`] writes any of them
//!   as tables, JSON or CSV.
//! - [`transport`]: the links the experiments drive, for a program that wants
//!   to time its own loop; [`serve()`] is the responder for remote initiators.
//! - [`reference`](mod@reference): the published datasets results can be set beside.
//! - [`fit`]: Hockney's model and the two-segment fit, for curves measured
//!   elsewhere too.
//!
//! Every measurement follows the same rules as the CLI: the clock's overhead,
//! the sample counts, the placement of both endpoints and the environment are
//! recorded with every result, and figures that cannot be trusted carry
//! warnings. `docs/architecture.md` in the repository draws the layers.

#![warn(missing_docs)]

pub mod options;

pub use xferbench_core::{error, limits, units};
pub use xferbench_transport as transport;
pub mod compare;
pub mod reference;
pub mod result;

// The modules below are the command line's (crate `xferbench-cli`, the
// `xferbench` binary) and the tests': public so the binary can be a separate
// crate that the library never depends on, hidden because their shape is not
// a promise to other programs.
#[doc(hidden)]
pub use xferbench_core::{buffer, fifo, measure, payload, words};
#[doc(hidden)]
pub use xferbench_fio as fio;
#[doc(hidden)]
pub mod command;
#[doc(hidden)]
pub mod experiment;
#[doc(hidden)]
pub mod flowgraph;
#[doc(hidden)]
pub mod format;
#[doc(hidden)]
pub mod output;
#[doc(hidden)]
pub mod report;

pub use command::serve::{ServeConfig, run as serve};
pub use compare::{Comparison, Settings as CompareSettings, compare};
pub use error::{Error, Result};
pub use experiment::Progress;
pub use experiment::curve::run as curve;
pub use experiment::flowgraph::run as flowgraph;
pub use experiment::load::run as load;
pub use experiment::mesh::{pairs as mpi_pairs, run as mesh};
pub use experiment::roundtrip::run as roundtrip;
pub use experiment::stream::run as stream;
pub use format::Format;
pub use measure::fit;
pub use options::{
    Common, CurveConfig, FlowgraphConfig, LoadConfig, MeshConfig, Output, RoundtripConfig,
    StreamConfig,
};
pub use report::Render;
pub use result::Run;
pub use result::curve::CurveRun;
pub use result::flowgraph::FlowRun;
pub use result::load::LoadRun;
pub use result::mesh::{MeshRun, PairsRun};
pub use result::saved::SavedRun;
pub use result::stream::StreamRun;

/// Entry points for `fuzz/` and for the tests that keep its probes running
/// without cargo-fuzz: hostile input in, a result or a clean error out,
/// never a panic. Not part of the library's API; may change at any time.
#[doc(hidden)]
pub mod fuzzing {
    /// A fio job file's text, parsed as `stream --job` parses one (no
    /// environment, no `--set`); how many jobs it gives.
    pub fn parse_jobfile(text: &str) -> crate::Result<usize> {
        crate::fio::jobfile::parse(text, "fuzz.fio", &|_| None, &[]).map(|f| f.jobs.len())
    }

    /// A saved result's bytes, decoded and reported as `xferbench report`
    /// reads a file; the report's text.
    pub fn decode_saved_run(bytes: &[u8]) -> crate::Result<String> {
        let value: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|e| crate::Error::usage(format!("not JSON ({e})")).with_source(e))?;
        let run = crate::SavedRun::from_value("fuzz", value)?;
        Ok(crate::report::bundle::Report::new(vec![run], &[]).text())
    }

    /// One control frame, judged as `serve` judges a client's.
    pub fn serve_frame(frame: &[u8]) -> Result<(), String> {
        crate::transport::remote::probe_control_frame(frame)
    }

    /// Everything a client sends after its hello, served as `serve` serves
    /// it (over a socket pair, small limits, 2 s timeouts).
    pub fn serve_session(bytes: &[u8]) -> Result<(), String> {
        crate::transport::remote::probe_session(bytes)
    }
}
