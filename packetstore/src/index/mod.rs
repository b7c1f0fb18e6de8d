//! The persistent index: a copy-on-write B+ tree in pool buffers (`tree`,
//! its nodes in `node`, values larger than a leaf keeps inline in
//! `indirect` blocks), and the compaction that moves live values out of
//! mostly-dead buffers (`compact`). It stores what the log has made
//! durable; a tree version is durable when its meta slot is.

pub mod compact;
pub(crate) mod indirect;
pub mod node;
pub mod tree;

pub use tree::{Tree, TreeConfig, TreeError};
