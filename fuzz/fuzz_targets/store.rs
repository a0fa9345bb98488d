//! One fuzz input is a store's files packed by `fuzz_common::join`; opening
//! it and reading every record, locally and through the remote reader served
//! from memory, must never panic, never give an untyped error or disagreeing
//! records, and (run with `-malloc_limit_mb=64`) never allocate more than 64 MiB.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/fuzz_common/mod.rs"]
mod fuzz_common;

fuzz_target!(|input: &[u8]| {
    let files = fuzz_common::split(input);
    if let Err(why) = fuzz_common::exercise_remote(&files) {
        panic!("remote: {why}");
    }
    if let Err(why) = fuzz_common::exercise(files) {
        panic!("{why}");
    }
});
