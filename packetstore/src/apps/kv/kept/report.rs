//! What INFO's rate keeps (`report.rs` writes INFO and /metrics): the
//! commands per second of the last periods (`OpsRate`), sampled by the
//! tick.
//!
//! Invariant: bounded: `OPS_RATE_SAMPLES` periods, each at least
//! `OPS_RATE_PERIOD` long.

/// INFO's instantaneous_ops_per_sec, as Redis's `trackInstantaneousMetric`:
/// the commands per second of each of the last 16 periods of at least
/// 100 ms, averaged.
#[derive(Default)]
pub(in crate::apps::kv) struct OpsRate {
    samples: [u64; OPS_RATE_SAMPLES],
    next: usize,
    last: Option<(std::time::Instant, u64)>,
}

const OPS_RATE_SAMPLES: usize = 16;

const OPS_RATE_PERIOD: std::time::Duration = std::time::Duration::from_millis(100);

impl OpsRate {
    /// Notes the commands counted so far (`commands`, which CONFIG
    /// RESETSTAT may have set back) at `now`.
    pub(in crate::apps::kv) fn note(&mut self, now: std::time::Instant, commands: u64) {
        let Some((at, count)) = self.last else {
            self.last = Some((now, commands));
            return;
        };
        let elapsed = now.duration_since(at);
        if elapsed < OPS_RATE_PERIOD {
            return;
        }
        let ran = commands.saturating_sub(count);
        self.samples[self.next] = (ran as u128 * 1_000_000 / elapsed.as_micros().max(1)) as u64;
        self.next = (self.next + 1) % OPS_RATE_SAMPLES;
        self.last = Some((now, commands));
    }

    pub(in crate::apps::kv) fn per_second(&self) -> u64 {
        self.samples.iter().sum::<u64>() / OPS_RATE_SAMPLES as u64
    }
}
