//! libFuzzer entry for the `resp_parser` harness (`fuzz/harness.rs`).
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::resp_parser(data));
