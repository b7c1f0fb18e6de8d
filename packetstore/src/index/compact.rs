//! Compaction of partly live buffers (eFactory's log cleaning, PASTE's
//! "return buffers to the free pool"), in the background, a bounded step
//! per event-loop turn.
//!
//! Values stay in the buffers they were received into, so a buffer holds
//! request framing and often several values: it is freed only when every
//! value in it is overwritten or deleted. Small values overwritten at random
//! can leave most buffers pinned by a few live bytes. The compactor keeps
//! the live value bytes of every buffer (`live`), and when the buffers that
//! hold values waste too much, it relocates the values of the emptiest
//! ones: their bytes are copied, packed, into fresh buffers and written
//! back as ordinary puts (logged, durable at the next commit, the tree
//! pointing at the copy), after which the old buffers lose their references
//! at the next checkpoint and return to the free list.
//!
//! Counting: the live bytes of the values found at open are learned by one
//! pass over the tree in key order, a few entries per step. A change during
//! that pass adjusts `live` only for keys the pass has already visited (it
//! will see the others as they are when it gets there), so the count is
//! exact when the pass ends; from then on every change adjusts it.
//!
//! Invariant (once counted): `live[b]` is the number of bytes of tree
//! values (strings and hash fields, extent or indirect) that lie in buffer
//! `b`; `value_buffers` counts the buffers with `live > 0`, `live_total`
//! sums them. Relocation never changes a value's bytes, nor the tree's
//! keys: it is an overwrite, so the tree's subtree counts (order
//! statistics, `tree.rs`) do not change either, and the nodes it copies
//! are rewritten by the tree's ordinary path, which keeps them exact.

use std::ops::Bound;

use crate::pool::extent::Extent;

/// A relocation pass starts only when it can free at least this many
/// buffers. Values already packed as tightly as they can be (a few small
/// ones in one buffer: half of it or more is "waste") are left alone; else
/// an idle server moved them from buffer to buffer 15 times a second.
pub const RECLAIM_BUFFERS_MIN: u64 = 8;

/// When and how much to compact.
#[derive(Clone, Copy, Debug)]
pub struct CompactConfig {
    /// Relocate when the buffers holding values waste at least this
    /// fraction of their bytes (0.0..=1.0; above 1.0: never).
    pub waste_min: f64,
    /// A buffer is emptied (its values relocated) when less than this
    /// fraction of it is live.
    pub fill_max: f64,
    /// Tree entries visited per step.
    pub entries_per_step: usize,
    /// Bytes copied per step.
    pub bytes_per_step: u64,
}

impl Default for CompactConfig {
    fn default() -> Self {
        CompactConfig { waste_min: 0.5, fill_max: 0.5, entries_per_step: 1024, bytes_per_step: 256 * 1024 }
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct CompactStats {
    /// Counting passes finished (one per start).
    pub counted: bool,
    pub relocation_passes: u64,
    pub relocated_values: u64,
    pub relocated_bytes: u64,
    pub running: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Pass {
    /// Learning the live bytes of the values found at open; visited every
    /// key up to and including the cursor (None: nothing yet).
    Counting {
        after: Option<Vec<u8>>,
    },
    /// Relocating the values of emptied buffers, key by key.
    Relocating {
        after: Option<Vec<u8>>,
    },
    Idle,
}

pub struct Compactor {
    pub config: CompactConfig,
    pass: Pass,
    buffer_size: u32,
    live: Vec<u32>,
    value_buffers: u64,
    live_total: u64,
    stats: CompactStats,
}

/// A range of tree keys: where the next step scans.
pub type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// What the store must do for one step: values to relocate (key and its
/// current extents), found by `Compactor::step_scan`.
pub struct Relocation {
    pub key: Vec<u8>,
    pub extents: Vec<Extent>,
    pub len: u64,
}

/// Whether a tree key holds a value the compactor tracks.
fn tracked(key: &[u8]) -> bool {
    matches!(key.first(), Some(b'k') | Some(b'f'))
}

impl Compactor {
    pub fn new(config: CompactConfig, buffer_count: u32, buffer_size: u32) -> Compactor {
        Compactor {
            config,
            pass: Pass::Counting { after: None },
            buffer_size,
            live: vec![0; buffer_count as usize],
            value_buffers: 0,
            live_total: 0,
            stats: CompactStats::default(),
        }
    }

    pub fn stats(&self) -> CompactStats {
        CompactStats { running: self.pass != Pass::Idle && self.stats.counted, ..self.stats }
    }

    /// Bytes the buffers holding values do not use for live values.
    pub fn waste_bytes(&self) -> u64 {
        (self.value_buffers * u64::from(self.buffer_size)).saturating_sub(self.live_total)
    }

    /// Value buffers a perfect packing of the live bytes would free.
    pub fn reclaimable_buffers(&self) -> u64 {
        self.value_buffers.saturating_sub(self.live_total.div_ceil(u64::from(self.buffer_size)))
    }

    /// The fraction of the value buffers' bytes that is waste.
    pub fn waste_ratio(&self) -> f64 {
        if self.value_buffers == 0 {
            return 0.0;
        }
        self.waste_bytes() as f64 / (self.value_buffers * u64::from(self.buffer_size)) as f64
    }

    fn add(&mut self, extents: &[Extent], sign: i64) {
        for extent in extents {
            let slot = &mut self.live[extent.buffer as usize];
            let before = *slot;
            let after = i64::from(before) + sign * i64::from(extent.len);
            assert!(after >= 0, "live bytes of buffer {} below zero: the count is wrong", extent.buffer);
            *slot = after as u32;
            if before == 0 && after > 0 {
                self.value_buffers += 1;
            } else if before > 0 && after == 0 {
                self.value_buffers -= 1;
            }
            self.live_total = (self.live_total as i64 + sign * i64::from(extent.len)) as u64;
        }
    }

    /// Whether changes to `key` must adjust the count now.
    pub fn counts(&self, key: &[u8]) -> bool {
        if !tracked(key) {
            return false;
        }
        match &self.pass {
            Pass::Counting { after } => after.as_deref().is_some_and(|a| key <= a),
            _ => true,
        }
    }

    /// A tree key's value changed from `old` to `new` (their extents, an
    /// indirect value's resolved).
    pub fn note_change(&mut self, key: &[u8], old: &[Extent], new: &[Extent]) {
        debug_assert!(self.counts(key));
        self.add(old, -1);
        self.add(new, 1);
    }

    /// Everything was deleted (FLUSHALL): nothing is live.
    pub fn note_flush(&mut self) {
        if let Pass::Counting { after } = &mut self.pass {
            // Keys visited are gone, keys not visited will be found gone.
            *after = None;
        }
        self.live.iter_mut().for_each(|l| *l = 0);
        self.value_buffers = 0;
        self.live_total = 0;
    }

    /// The range the next step scans, or None when idle.
    /// A pool running `short` of free buffers relocates at a quarter of
    /// the waste it otherwise waits for.
    pub fn next_range(&mut self, short: bool) -> Option<KeyRange> {
        let waste_min = if short { self.config.waste_min / 4.0 } else { self.config.waste_min };
        if self.pass == Pass::Idle
            && self.stats.counted
            && self.waste_ratio() >= waste_min
            && self.reclaimable_buffers() >= RECLAIM_BUFFERS_MIN
        {
            self.pass = Pass::Relocating { after: None };
        }
        let after = match &self.pass {
            Pass::Counting { after } | Pass::Relocating { after } => after.clone(),
            Pass::Idle => return None,
        };
        Some((after.map_or(Bound::Unbounded, Bound::Excluded), Bound::Unbounded))
    }

    /// Feeds the entries a step scanned (in key order, at most
    /// `entries_per_step`; `end` when the tree has no more): counts them, or
    /// picks the values to relocate. Returns the relocations to apply.
    pub fn step_scan(&mut self, entries: Vec<(Vec<u8>, Vec<Extent>, u64)>, end: bool, bytes: u64) -> Vec<Relocation> {
        let mut relocations = Vec::new();
        let mut budget = bytes;
        let mut last = None;
        let counting = matches!(self.pass, Pass::Counting { .. });
        let threshold = (f64::from(self.buffer_size) * self.config.fill_max) as u32;
        let mut stopped_early = false;
        for (key, extents, len) in entries {
            if counting {
                if tracked(&key) {
                    self.add(&extents, 1);
                }
            } else if tracked(&key) && extents.iter().any(|e| self.live[e.buffer as usize] < threshold) {
                // Out of budget: this key is the next step's first. A value
                // larger than a whole step's budget goes alone.
                let alone = relocations.is_empty() && bytes >= self.config.bytes_per_step;
                if len > budget && !alone {
                    stopped_early = true;
                    break;
                }
                budget = budget.saturating_sub(len);
                relocations.push(Relocation { key: key.clone(), extents, len });
            }
            last = Some(key);
        }
        let done = end && !stopped_early;
        match &mut self.pass {
            Pass::Counting { after } | Pass::Relocating { after } => {
                if let Some(key) = last {
                    *after = Some(key);
                }
            }
            Pass::Idle => {}
        }
        if done {
            if counting {
                self.stats.counted = true;
            } else {
                self.stats.relocation_passes += 1;
            }
            self.pass = Pass::Idle;
        }
        relocations
    }

    pub fn note_relocated(&mut self, bytes: u64) {
        self.stats.relocated_values += 1;
        self.stats.relocated_bytes += bytes;
    }

    /// Recounts from scratch (a check for tests): the live bytes per buffer
    /// of `values`.
    pub fn check_against(&self, values: &[(Vec<u8>, Vec<Extent>)]) -> Result<(), String> {
        if !self.stats.counted {
            return Ok(());
        }
        let mut expected = vec![0u32; self.live.len()];
        for (key, extents) in values {
            if tracked(key) {
                for extent in extents {
                    expected[extent.buffer as usize] += u32::from(extent.len);
                }
            }
        }
        for (buffer, (&have, &want)) in self.live.iter().zip(&expected).enumerate() {
            if have != want {
                return Err(format!("buffer {buffer}: {have} live bytes counted, {want} in the tree"));
            }
        }
        Ok(())
    }
}
