//! A command's latency histogram, as Redis 7.0 keeps one per command
//! (`hdr_init(1, 1_000_000_000, 2)`: nanoseconds from 1 ns to 1 s, two
//! significant figures): the same buckets, so LATENCY HISTOGRAM's
//! power-of-two rows (`hdr_iter_log_init(1024, 2)`) and INFO
//! latencystats' percentiles (`hdr_value_at_percentile`) read as Redis's.
//!
//! Invariant: bounded: `COUNTS` counters (24 KiB) whatever is recorded; a
//! value outside 1 ns ..= 1 s is clamped into it, as Redis clamps it.

/// Redis's `LATENCY_HISTOGRAM_MIN_VALUE` and `_MAX_VALUE` (ns).
const MIN_NS: u64 = 1;
const MAX_NS: u64 = 1_000_000_000;
/// Two significant figures: 256 sub-buckets, 128 of them per bucket past
/// the first (hdr's `sub_bucket_half_count_magnitude` is 7).
const HALF_MAGNITUDE: u32 = 7;
const HALF_COUNT: usize = 1 << HALF_MAGNITUDE;
/// Buckets hdr needs to reach `MAX_NS` (23) plus one: 3,072 counters.
const COUNTS: usize = 24 * HALF_COUNT;
/// LATENCY HISTOGRAM's first row ends at 1,024 ns; each next one doubles.
const FIRST_ROW_NS: u64 = 1024;

pub(in crate::apps::kv) struct Histogram {
    counts: Box<[u64; COUNTS]>,
    total: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: Box::new([0; COUNTS]), total: 0 }
    }
}

/// The counter a value falls in (hdr's `counts_index_for`).
fn index_of(value: u64) -> usize {
    let bucket = (64 - (value | 255).leading_zeros()) - (HALF_MAGNITUDE + 1);
    let sub = (value >> bucket) as usize;
    (((bucket as usize) + 1) << HALF_MAGNITUDE) + sub - HALF_COUNT
}

/// The lowest value of a counter, and how many values it holds.
fn range_of(index: usize) -> (u64, u64) {
    let bucket = (index >> HALF_MAGNITUDE) as i64 - 1;
    let sub = (index & (HALF_COUNT - 1)) + HALF_COUNT;
    if bucket < 0 {
        return ((sub - HALF_COUNT) as u64, 1);
    }
    ((sub as u64) << bucket, 1 << bucket)
}

impl Histogram {
    /// Counts one command that took `ns` nanoseconds.
    pub(in crate::apps::kv) fn record(&mut self, ns: u64) {
        self.counts[index_of(ns.clamp(MIN_NS, MAX_NS))] += 1;
        self.total += 1;
    }

    pub(in crate::apps::kv) fn total(&self) -> u64 {
        self.total
    }

    /// LATENCY HISTOGRAM's rows: (microseconds, commands at most that
    /// long), at each power of two of 1,024 ns where the count grew.
    pub(in crate::apps::kv) fn rows(&self) -> Vec<(u64, u64)> {
        let mut rows = Vec::new();
        let (mut level, mut cumulative, mut shown) = (FIRST_ROW_NS, 0, 0);
        let mut highest = 0;
        for (index, count) in self.counts.iter().enumerate() {
            cumulative += count;
            let (low, size) = range_of(index);
            highest = low + size - 1;
            if low < level {
                continue;
            }
            if cumulative > shown {
                rows.push((highest / 1000, cumulative));
                shown = cumulative;
            }
            level *= 2;
            if cumulative == self.total {
                return rows;
            }
        }
        // hdr's iterator runs off the last counter before its next level:
        // what is left shows at the last counter's highest value.
        if cumulative > shown {
            rows.push((highest / 1000, cumulative));
        }
        rows
    }

    /// The value (ns) under which `percentile` of the commands fall.
    pub(in crate::apps::kv) fn percentile(&self, percentile: f64) -> u64 {
        let wanted = ((percentile.min(100.0) / 100.0 * self.total as f64) + 0.5) as u64;
        let wanted = wanted.max(1);
        let mut cumulative = 0;
        let index = self
            .counts
            .iter()
            .position(|count| {
                cumulative += count;
                cumulative >= wanted
            })
            .unwrap_or(0);
        let (low, size) = range_of(index);
        if percentile == 0.0 {
            low
        } else {
            low + size - 1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_hold_the_ranges_hdr_gives_them() {
        assert_eq!(range_of(index_of(1)), (1, 1));
        assert_eq!(range_of(index_of(255)), (255, 1));
        assert_eq!(range_of(index_of(1024)), (1024, 8));
        assert_eq!(range_of(index_of(1031)), (1024, 8));
        assert_eq!(range_of(index_of(32_768)), (32_768, 256));
        assert_eq!(index_of(MAX_NS), index_of(MAX_NS - 1));
        assert!(index_of(MAX_NS) < COUNTS);
        for index in [0, 255, 256, 1000, COUNTS - 1] {
            assert_eq!(index_of(range_of(index).0), index);
        }
    }

    #[test]
    fn rows_are_redis_powers_of_two() {
        let mut histogram = Histogram::default();
        for ns in [500, 1500, 1500, 40_000] {
            histogram.record(ns);
        }
        // 1,031 ns -> 1 us; 2,063 -> 2; 66,047 -> 66 (a row only where
        // the count grew: none at 33 us).
        assert_eq!(histogram.rows(), [(1, 1), (2, 3), (66, 4)]);
        histogram.record(5_000_000_000);
        assert_eq!(histogram.rows().last(), Some(&(1_073_741, 5)));
        assert_eq!(histogram.total(), 5);
    }

    #[test]
    fn percentiles_read_as_hdr_reads_them() {
        let mut histogram = Histogram::default();
        (0..99).for_each(|_| histogram.record(1000));
        histogram.record(2_000_000);
        assert_eq!(histogram.percentile(50.0), 1003);
        assert_eq!(histogram.percentile(99.0), 1003);
        assert_eq!(histogram.percentile(100.0), 2_007_039);
        assert_eq!(histogram.percentile(0.0), 1000);
    }
}
