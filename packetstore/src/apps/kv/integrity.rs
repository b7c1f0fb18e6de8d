//! Value checksums as the server shows them: a read that met a corrupt
//! value answers an error naming the user's key (never the bytes), the
//! scrubber runs at its configured rate between event-loop turns, and INFO
//! and /metrics report both (`docs/operations.md`, "Value checksums").
//!
//! Invariant: the scrubber reads no more than `scrub_rate_bytes` value
//! bytes per second on average (`Store::scrub_at_rate` earns credit by the
//! clock; a step that overspends by its last entry repays it first).

use std::fmt::Write;

use super::state::{CommandEntry, Ctx, KvServer};
use crate::index::tree::key_text;
use crate::pool::file::Pool;
use crate::store::keyspace::{ELEMENT_PREFIX_LEN, KEY_PREFIX_LEN, NS_ELEMENT, NS_META, NS_STRING};
use crate::util::metrics::Exposition;

/// The default `--scrub-rate`: 8 MiB of values a second (a 1 GiB pool of
/// values is checked every two minutes, for well under 1% of a core).
pub const SCRUB_RATE_DEFAULT_BYTES: u64 = 8 << 20;

impl KvServer {
    /// The error reply for a value of tree key `tree_key` that failed its
    /// CRC while `entry` ran: the user's key, found from the tree key (a
    /// string's or a collection's), or, for an element, the command's key
    /// whose collection owns it.
    pub(super) fn corrupt_reply(&self, ctx: &Ctx<'_>, entry: &CommandEntry, tree_key: &[u8]) -> String {
        let name = match tree_key.first() {
            Some(&NS_STRING) | Some(&NS_META) if tree_key.len() >= KEY_PREFIX_LEN => {
                Some(tree_key[KEY_PREFIX_LEN..].to_vec())
            }
            Some(&NS_ELEMENT) if tree_key.len() >= ELEMENT_PREFIX_LEN => {
                let oid = u64::from_be_bytes(tree_key[1..9].try_into().expect("8 bytes"));
                self.owner_of(ctx, entry, oid)
            }
            _ => None,
        };
        match name {
            Some(key) => format!("ERR corrupt value for key '{}': checksum mismatch", key_text(&key)),
            None => format!("ERR corrupt value (tree key '{}'): checksum mismatch", key_text(tree_key)),
        }
    }

    /// The key among the command's whose collection is object `oid`.
    fn owner_of(&self, ctx: &Ctx<'_>, entry: &CommandEntry, oid: u64) -> Option<Vec<u8>> {
        entry
            .key_positions(ctx.argc())
            .map(|i| ctx.arg(i).into_owned())
            .find(|key| self.store.meta_raw(ctx.pool, ctx.db, key).ok().flatten().is_some_and(|meta| meta.oid == oid))
    }

    /// A scrub step when one is due (`tick` runs every event-loop turn;
    /// the store keeps the rate by the clock).
    pub(super) fn scrub_tick(&mut self, pool: &Pool) {
        self.store.scrub_at_rate(pool, self.config.scrub_rate_bytes);
    }

    /// INFO's lines on value checksums (in the Persistence section).
    pub(super) fn info_integrity(&self, text: &mut String) {
        let (scrub, last) = self.store.scrub_stats();
        let _ = write!(
            text,
            "values_corrupt:{}\r\nscrub_rate_bytes:{}\r\nscrub_bytes:{}\r\nscrub_values:{}\r\nscrub_passes:{}\r\nscrub_corrupt:{}\r\nscrub_unchecked_values:{}\r\nscrub_errors:{}\r\nscrub_last_corrupt:{}\r\n",
            self.store.corrupt_reads(),
            self.config.scrub_rate_bytes,
            scrub.bytes,
            scrub.values,
            scrub.passes,
            scrub.corrupt,
            scrub.unchecked,
            scrub.errors,
            last.unwrap_or("")
        );
    }

    /// /metrics' families on value checksums.
    pub(super) fn expose_integrity(&self, e: &mut Exposition) {
        let (scrub, _) = self.store.scrub_stats();
        let corrupt = self.store.corrupt_reads() as f64;
        e.single("packetstore_values_corrupt_total", "counter", "Reads that found a value failing its CRC.", corrupt);
        e.single("packetstore_scrub_bytes_total", "counter", "Value bytes the scrubber checked.", scrub.bytes as f64);
        e.single("packetstore_scrub_values_total", "counter", "Values the scrubber checked.", scrub.values as f64);
        e.single("packetstore_scrub_passes_total", "counter", "Whole passes of the scrubber.", scrub.passes as f64);
        e.single(
            "packetstore_scrub_corrupt_total",
            "counter",
            "Values failing their CRC the scrubber found.",
            scrub.corrupt as f64,
        );
        e.single(
            "packetstore_scrub_unchecked_values_total",
            "counter",
            "Values without a CRC (written before value checksums) the scrubber met.",
            scrub.unchecked as f64,
        );
    }
}
