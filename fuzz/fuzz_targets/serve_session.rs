//! Everything a `serve` client sends after its hello (control frames,
//! then the messages they announce), served over a socket pair: the
//! session ends in Ok or a clean error, never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = xferbench::fuzzing::serve_session(data);
});
