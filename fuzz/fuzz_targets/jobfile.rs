//! fio job files from anywhere: parsing must give a job list or an error
//! with a line number, never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = xferbench::fuzzing::parse_jobfile(text);
    }
});
