//! libFuzzer entry for the `tree_node` harness (`fuzz/harness.rs`).
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::tree_node(data));
