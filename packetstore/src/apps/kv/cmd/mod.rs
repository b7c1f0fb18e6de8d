//! The command families, one file each, with its table of commands
//! (`COMMANDS`, listed in `dispatch::FAMILIES`) and its handlers.

pub(super) mod bits;
pub(super) mod blocking;
pub(super) mod client;
pub(super) mod cluster;
pub(super) mod command;
mod command_reply;
mod command_runs;
pub(super) mod config;
pub(super) mod databases;
pub(super) mod dump;
pub(super) mod durability;
pub(super) mod expire;
pub(super) mod functions;
pub(super) mod geo;
pub(super) mod group;
pub(super) mod hashes;
pub(super) mod hyperloglog;
pub(super) mod keys;
pub(super) mod latency;
mod latency_report;
pub(super) mod lists;
pub(super) mod monitor;
pub(super) mod multi;
pub(super) mod notify;
pub(super) mod object;
pub(super) mod pubsub;
#[rustfmt::skip]
pub(super) mod scripting;
pub(super) mod server;
pub(super) mod sets;
pub(super) mod slowlog;
pub(super) mod sort;
pub(super) mod stream_groups;
pub(super) mod stream_pending;
pub(super) mod streams;
pub(super) mod strings;
pub(super) mod tracking;
pub(super) mod zranges;
pub(super) mod zsets;
