//! A results file as `xferbench report` reads one: decoded and reported,
//! or refused with an error, never a panic, an unbounded allocation or a
//! hang (libFuzzer's -rss_limit_mb and -timeout catch the last two).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = xferbench::fuzzing::decode_saved_run(data);
});
