//! The default suite (`xferbench` with no arguments): a short round-trip
//! matrix on every local transport, tables on stdout, JSON in
//! `xferbench-results/`. Sized to finish well under a minute on 2 cores.

use super::Progress;
use super::roundtrip;
use crate::cli::{CommonArgs, CpuList, Format, RoundtripArgs, Sizes, SpecList};
use crate::error::{Error, Result};
use crate::run::Run;
use crate::stats::Stat;
use crate::transport::{self, BufferMode, Spec};
use crate::units::Unit;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

pub const RESULTS_DIR: &str = "xferbench-results";

pub fn args() -> RoundtripArgs {
    let specs = transport::all()
        .iter()
        .map(|t| Spec {
            name: t.name().into(),
            options: Vec::new(),
        })
        .collect();
    RoundtripArgs {
        in_sizes: Sizes(vec![64, 1024, 16384]),
        out_sizes: Sizes(vec![64, 1024, 16384]),
        unit: Unit::Bytes,
        common: CommonArgs {
            transports: vec![SpecList(specs)],
            buffers: vec![BufferMode::User],
            completion: Vec::new(),
            cpus: CpuList(Some(Vec::new())),
            warmup: Some(200),
            samples: None,
            duration: Some(Duration::from_millis(200)),
            responder_delay: Duration::ZERO,
            timeout: Duration::from_secs(10),
            format: Format::Table,
            output: None,
            stats: vec![Stat::Mean, Stat::P99],
        },
    }
}

/// Runs the suite; returns the run and where its JSON was written.
pub fn run(stop: &AtomicBool, progress: &dyn Progress) -> Result<(Run, Option<Error>, PathBuf)> {
    let (run, err) = roundtrip::run(&args(), stop, progress)?;
    std::fs::create_dir_all(RESULTS_DIR)
        .map_err(|e| Error::io(format!("cannot create {RESULTS_DIR}/"), e))?;
    let stamp = run.env.timestamp.replace([':', '-'], "");
    let path = PathBuf::from(RESULTS_DIR).join(format!("roundtrip-{stamp}.json"));
    crate::report::emit(&crate::report::json::render(&run)?, Some(&path))?;
    Ok((run, err, path))
}
