//! A control frame from a `serve` client: refused with a one-line reason,
//! or accepted only within the server's limits (the entry point asserts
//! both), never a panic. Frames of any length are tried.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = xferbench::fuzzing::serve_frame(data);
});
