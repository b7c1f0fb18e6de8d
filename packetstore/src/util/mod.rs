//! Utilities below every layer: metrics (histograms and the Prometheus
//! text exposition), a deterministic generator for the simulator and the
//! tests, a fast hasher for the pool's own integer ids, and CRC-32C for
//! short inputs. Nothing here
//! knows the pool.

pub mod crc;
pub mod idhash;
pub(crate) mod metrics;
pub mod rng;
pub mod slots;
