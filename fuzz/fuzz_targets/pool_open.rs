//! libFuzzer entry for the `pool_open` harness (`fuzz/harness.rs`).
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::pool_open(data));
