//! Utilities below every layer: metrics (histograms and the Prometheus
//! text exposition), a deterministic generator for the simulator and the
//! tests, and a fast hasher for the pool's own integer ids. Nothing here
//! knows the pool.

pub mod idhash;
pub(crate) mod metrics;
pub mod rng;
pub mod slots;
