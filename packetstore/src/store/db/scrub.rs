//! Value checksums in the store (eFactory's per-object CRC,
//! `docs/format.md`, "Value checksums"): every read a command makes of a
//! value is checked against the CRC stored with it, and a background
//! scrubber checks every value of the tree, a bounded number of bytes per
//! step, pass after pass.
//!
//! Owns: the count of corrupt values reads found, and the scrubber's place
//! and counters.
//!
//! Invariant: a value whose bytes fail their CRC is never handed to a
//! caller: the read is an error naming its tree key
//! (`TreeError::CorruptValue`), counted once per read. The scrubber only
//! reads: it changes nothing in the tree or the log, so it may run at any
//! time, on a follower too.

use std::cell::Cell;
use std::ops::Bound;
use std::time::{Duration, Instant};

use super::{Store, StoreError};
use crate::index::node::Value;
use crate::index::tree::{check_value, key_text, verify_value, TreeError, ValueCheck};
use crate::pool::file::Pool;

/// Tree entries one scrub step visits at most, whatever their size, so
/// that a step of many small values stays short too.
pub const SCRUB_ENTRIES_PER_STEP_MAX: usize = 4096;

/// The shortest time between two scrub steps: the event loop calls
/// `scrub_at_rate` every turn, and a step per turn would pay a descent of
/// the tree for a few bytes.
const SCRUB_STEP_INTERVAL: Duration = Duration::from_millis(10);

/// The most credit the scrubber saves up (a tenth of a second's worth), so
/// that an idle spell is not followed by a burst.
const SCRUB_CREDIT_MAX: Duration = Duration::from_millis(100);

/// The bytes a scrub step charges per entry beyond its value's bytes (its
/// key and slot, and the walk to it), so that empty values cost something.
const SCRUB_ENTRY_COST_BYTES: u64 = 64;

/// What the scrubber did since the server started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScrubStats {
    /// Value bytes read and checked (inline values included).
    pub bytes: u64,
    /// Values checked.
    pub values: u64,
    /// Values without a CRC met (written before value checksums).
    pub unchecked: u64,
    /// Whole passes over the tree completed.
    pub passes: u64,
    /// Corrupt values found (each time a pass meets one).
    pub corrupt: u64,
    /// Steps that stopped on another error (a damaged node): the pass
    /// starts over.
    pub errors: u64,
}

/// What one scrub step found, applied to the counters when it ends.
#[derive(Default)]
struct Step {
    /// Bytes charged to the budget.
    spent: u64,
    /// Value bytes checked.
    bytes: u64,
    values: u64,
    unchecked: u64,
    /// Tree keys of corrupt values.
    found: Vec<Vec<u8>>,
    /// The last key visited: where the next step goes on.
    last: Option<Vec<u8>>,
}

/// The scrubber's place and counters, and the reads' corrupt count.
#[derive(Default)]
pub(super) struct Integrity {
    /// Corrupt values reads found (`Cell`: reads take the store shared).
    corrupt_reads: Cell<u64>,
    /// The last tree key the current pass checked (None: at its start).
    cursor: Option<Vec<u8>>,
    stats: ScrubStats,
    /// The last corrupt value's tree key, as text (INFO).
    last_corrupt: Option<String>,
    /// When `scrub_at_rate` last ran a step, and the bytes it may still
    /// read (negative: a step overspent by its last entry, repaid first).
    last_step: Option<Instant>,
    credit_bytes: i64,
}

impl Store {
    /// Corrupt values found by reads since the store opened.
    pub fn corrupt_reads(&self) -> u64 {
        self.integrity.corrupt_reads.get()
    }

    /// What the scrubber did, and the last corrupt value's tree key.
    pub fn scrub_stats(&self) -> (ScrubStats, Option<&str>) {
        (self.integrity.stats, self.integrity.last_corrupt.as_deref())
    }

    /// A tree read's result for a caller: a corrupt value is counted.
    pub(super) fn counted<T>(&self, result: Result<T, TreeError>) -> Result<T, StoreError> {
        if let Err(TreeError::CorruptValue { key }) = &result {
            let count = self.integrity.corrupt_reads.get() + 1;
            self.integrity.corrupt_reads.set(count);
            // A client reading a damaged key in a loop must not flood the
            // log: the first ten, then at each power of two.
            if count <= 10 || count.is_power_of_two() {
                tracing::warn!("corrupt value for tree key '{}': checksum mismatch ({count} so far)", key_text(key));
            }
        }
        result.map_err(StoreError::from)
    }

    /// `value`, read at tree key `key`, with its bytes checked against its
    /// CRC (an inline value's was checked as it was read from its node).
    pub(super) fn checked(&self, pool: &Pool, key: &[u8], value: Option<Value>) -> Result<Option<Value>, StoreError> {
        if let Some(value) = &value {
            self.counted(verify_value(pool, key, value))?;
        }
        Ok(value)
    }

    /// Runs a scrub step when one is due at `rate_bytes` a second (0:
    /// never): the bytes read over time stay within the rate, whatever how
    /// often it is called.
    pub fn scrub_at_rate(&mut self, pool: &Pool, rate_bytes: u64) {
        if rate_bytes == 0 {
            return;
        }
        let now = Instant::now();
        let last = *self.integrity.last_step.get_or_insert(now);
        let elapsed = now.duration_since(last);
        if elapsed < SCRUB_STEP_INTERVAL {
            return;
        }
        self.integrity.last_step = Some(now);
        let rate = rate_bytes.min(i64::MAX as u64 / 4) as i64;
        let earned = (rate as f64 * elapsed.min(SCRUB_CREDIT_MAX).as_secs_f64()) as i64;
        let cap = (rate as f64 * SCRUB_CREDIT_MAX.as_secs_f64()) as i64;
        let credit = (self.integrity.credit_bytes + earned).min(cap.max(1));
        if credit <= 0 {
            self.integrity.credit_bytes = credit;
            return;
        }
        let spent = self.scrub_step(pool, credit as u64);
        self.integrity.credit_bytes = credit - spent.min(i64::MAX as u64) as i64;
    }

    /// One scrub step: checks the values after the pass's place, up to
    /// about `budget_bytes` of them (and `SCRUB_ENTRIES_PER_STEP_MAX`
    /// entries); at the end of the tree a pass is complete and the next
    /// starts. Returns the bytes it charged to its budget.
    pub fn scrub_step(&mut self, pool: &Pool, budget_bytes: u64) -> u64 {
        let mut step = Step::default();
        let end = self.scrub_walk(pool, budget_bytes, &mut step);
        let stats = &mut self.integrity.stats;
        stats.bytes += step.bytes;
        stats.values += step.values;
        stats.unchecked += step.unchecked;
        for key in &step.found {
            self.scrub_found(key);
        }
        match end {
            Ok(true) => {
                self.integrity.cursor = None;
                self.integrity.stats.passes += 1;
            }
            Ok(false) => {
                if step.last.is_some() {
                    self.integrity.cursor = step.last;
                }
            }
            Err(error) => {
                tracing::error!("scrub: the pass stopped and starts over: {error}");
                self.integrity.stats.errors += 1;
                self.integrity.cursor = None;
            }
        }
        step.spent
    }

    /// The reading half of `scrub_step`: true at the end of the tree.
    fn scrub_walk(&self, pool: &Pool, budget_bytes: u64, step: &mut Step) -> Result<bool, TreeError> {
        let start = match &self.integrity.cursor {
            Some(key) => Bound::Excluded(key.as_slice()),
            None => Bound::Unbounded,
        };
        let mut entries = self.tree.range(pool, (start, Bound::Unbounded), false);
        for _ in 0..SCRUB_ENTRIES_PER_STEP_MAX {
            if step.spent >= budget_bytes {
                return Ok(false);
            }
            let Some(entry) = entries.next() else { return Ok(true) };
            step.spent += SCRUB_ENTRY_COST_BYTES;
            let (key, value) = match entry {
                Ok(entry) => entry,
                Err(TreeError::CorruptValue { key }) => {
                    step.found.push(key.clone());
                    step.values += 1;
                    step.last = Some(key);
                    continue;
                }
                Err(error) => return Err(error),
            };
            let bytes = match check_value(pool, &value)? {
                ValueCheck::Matched { bytes } => bytes,
                ValueCheck::Unchecked => match &value {
                    Value::Inline(bytes) => bytes.len() as u64,
                    _ => {
                        step.unchecked += 1;
                        0
                    }
                },
                ValueCheck::Mismatch { bytes } => {
                    step.found.push(key.clone());
                    bytes
                }
            };
            step.bytes += bytes;
            step.spent += bytes;
            step.values += 1;
            step.last = Some(key);
        }
        Ok(false)
    }

    fn scrub_found(&mut self, key: &[u8]) {
        let text = key_text(key);
        tracing::error!("scrub: corrupt value for tree key '{text}': checksum mismatch");
        self.integrity.stats.corrupt += 1;
        self.integrity.last_corrupt = Some(text);
    }
}
