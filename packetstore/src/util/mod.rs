//! Utilities below every layer: metrics (histograms and the Prometheus
//! text exposition) and a deterministic generator for the simulator and
//! the tests. Nothing here knows the pool.

pub(crate) mod metrics;
pub mod rng;
