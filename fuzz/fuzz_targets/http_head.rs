//! libFuzzer entry for the `http_head` harness (`fuzz/harness.rs`).
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::http_head(data));
