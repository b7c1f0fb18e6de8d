//! What Redis itself defines, apart from any server state: its command
//! table (generated from Redis 7.0.15's JSON files: arity, flags, key
//! specifications, documentation), its configuration parameters
//! (generated from its `config.c`), and two encodings that must match
//! Redis bit for bit: HyperLogLog values and geohash scores.
//!
//! Owns: data and pure functions only; nothing here knows a connection, a
//! store or a shard, so the key-value server (`apps::kv`) and its tools
//! read Redis's definitions from one place.

pub mod command_shape;
pub mod command_table;
pub mod config_table;
pub mod geohash;
pub mod getkeys;
pub mod hll;
pub mod numbers;
#[rustfmt::skip]
mod redis_commands;
