//! libFuzzer entry for the `log_records` harness (`fuzz/harness.rs`).
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::log_records(data));
