//! xferbench as a library: a round trip and a latency/bandwidth curve
//! measured from a program of your own, no command line involved.
//!
//! ```text
//! cargo run --release --example embed            # prints one JSON document
//! cargo run --release --example embed -- pipe    # another transport
//! ```
//!
//! Each experiment takes a plain config (start from `Default`, change what you
//! need), a stop flag (set it from another thread to end the run early; the
//! result comes back marked incomplete) and a progress sink (`&()` for none).
//! It returns the result and, if the run stopped early, why.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use xferbench::transport::parse_specs;
use xferbench::{CurveConfig, Render, RoundtripConfig};

fn main() -> ExitCode {
    match run() {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("embed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> xferbench::Result<String> {
    let transport = std::env::args().nth(1).unwrap_or_else(|| "thread".into());
    let stop = AtomicBool::new(false);

    // Round trips of 64 B and 4 KiB requests, each answered with 64 B.
    let mut rt = RoundtripConfig::default();
    rt.common.transports = parse_specs(&transport)?;
    rt.in_sizes = vec![64, 4096];
    rt.out_sizes = vec![64];
    rt.common.amount = Some(xferbench::options::Amount::Samples(2_000));
    rt.common.warmup = Some(200);
    let (roundtrip, stopped) = xferbench::roundtrip(&rt, &stop, &())?;
    if let Some(e) = stopped {
        return Err(e);
    }

    // One-way time and bandwidth from 64 B to 64 KiB, ping-pong.
    let mut cv = CurveConfig::default();
    cv.common.transports = parse_specs(&transport)?;
    cv.sizes = vec![64, 1024, 16 * 1024, 64 * 1024];
    cv.common.amount = Some(xferbench::options::Amount::Samples(500));
    cv.common.warmup = Some(50);
    let (curve, stopped) = xferbench::curve(&cv, &stop, &())?;
    if let Some(e) = stopped {
        return Err(e);
    }

    // Every result renders as a table, JSON or CSV (`Render`) and is plain
    // serde data; here both go into one JSON document, with the table's
    // headings on stderr for people.
    for line in roundtrip.table().lines().filter(|l| l.starts_with("## ")) {
        eprintln!("embed: measured {}", &line[3..]);
    }
    let doc = serde_json::json!({ "roundtrip": roundtrip, "curve": curve });
    serde_json::to_string_pretty(&doc).map_err(|e| xferbench::Error::run(e.to_string()))
}
