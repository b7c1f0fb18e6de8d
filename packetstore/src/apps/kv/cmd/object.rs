//! Key introspection: OBJECT ENCODING, REFCOUNT, IDLETIME, FREQ and HELP,
//! TOUCH, and RANDOMKEY, with Redis 7.0's replies and errors.
//!
//! Encodings are packetstore's own, named as Redis names the nearest:
//! a string is `int` when it is a canonical integer, `embstr` when it is
//! stored inline in its tree leaf (`INLINE_VALUE_MAX` bytes at most), and
//! `raw` when it stays in the buffers it was received into; a hash is
//! `hashtable`. packetstore keeps no access clock: IDLETIME is 0 and FREQ
//! is 0, each refused under the maxmemory policy that would make Redis
//! refuse it. `encoding_of` is the one place a new type adds its name.
//!
//! Invariant: these commands read; none changes a key or its expiry.

use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::index::node::Value;
use crate::store::db::{KeyType, StoreError};

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("object", -2, &["readonly"], (2, 2, 1), "generic", "OBJECT ENCODING, REFCOUNT, IDLETIME, FREQ, HELP: how a key is stored.", KvServer::cmd_object),
];

/// The longest canonical 64-bit integer's text (`-9223372036854775808`).
const INT_TEXT_MAX: usize = 20;

const LFU_IDLETIME: &str = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";

const NO_LFU_FREQ: &str = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";

const HELP: &[&str] = &[
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Print this help.",
];

/// Whether a string value is the canonical text of a 64-bit integer (what
/// Redis stores as `int`).
fn is_canonical_int(bytes: &[u8]) -> bool {
    bytes.len() <= INT_TEXT_MAX
        && std::str::from_utf8(bytes)
            .ok()
            .and_then(|t| t.parse::<i64>().ok())
            .is_some_and(|n| n.to_string().as_bytes() == bytes)
}

impl KvServer {
    /// A key's encoding as OBJECT ENCODING names it; None if absent.
    pub(in crate::apps::kv) fn encoding_of(
        &self,
        ctx: &Ctx<'_>,
        key: &[u8],
    ) -> Result<Option<&'static str>, StoreError> {
        Ok(match self.store.key_type(ctx.pool, ctx.db, key, ctx.now)? {
            None => None,
            // The names of Redis's encodings nearest packetstore's own (every
            // collection is tree entries, docs/format.md): by member or
            // field for hashes and sets, by score for sorted sets, by
            // position for lists.
            Some(KeyType::Hash) | Some(KeyType::Set) => Some("hashtable"),
            Some(KeyType::ZSet) => Some("skiplist"),
            Some(KeyType::List) => Some("quicklist"),
            Some(KeyType::Stream) => Some("stream"),
            Some(KeyType::String) => match self.store.get(ctx.pool, ctx.db, key, ctx.now)? {
                Some(Value::Inline(bytes)) if is_canonical_int(&bytes) => Some("int"),
                Some(Value::Inline(_)) => Some("embstr"),
                Some(_) => Some("raw"),
                None => None,
            },
        })
    }

    fn lfu_policy(&self) -> bool {
        self.config_params.get("maxmemory-policy").is_some_and(|p| p.ends_with("-lfu"))
    }

    fn cmd_object(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let sub = ctx.conn.args.upper(1).unwrap_or_default();
        if sub == b"HELP" && ctx.argc() == 2 {
            ctx.array(HELP.len());
            HELP.iter().for_each(|line| ctx.out.push(format!("+{line}\r\n").as_bytes()));
            return Ok(());
        }
        if ctx.argc() != 3 || !matches!(sub.as_slice(), b"ENCODING" | b"REFCOUNT" | b"IDLETIME" | b"FREQ") {
            ctx.error(&format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try OBJECT HELP.",
                String::from_utf8_lossy(&ctx.arg(1))
            ));
            return Ok(());
        }
        let key = ctx.arg(2).into_owned();
        let Some(encoding) = self.encoding_of(ctx, &key)? else {
            ctx.null();
            return Ok(());
        };
        match sub.as_slice() {
            b"ENCODING" => ctx.bulk(encoding.as_bytes()),
            b"IDLETIME" if self.lfu_policy() => ctx.error(LFU_IDLETIME),
            b"FREQ" if !self.lfu_policy() => ctx.error(NO_LFU_FREQ),
            // One reference (no shared objects); no access clock: 0.
            b"REFCOUNT" => ctx.int(1),
            _ => ctx.int(0),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_canonical_only() {
        assert!(is_canonical_int(b"0"));
        assert!(is_canonical_int(b"-9223372036854775808"));
        assert!(!is_canonical_int(b"007"));
        assert!(!is_canonical_int(b"+1"));
        assert!(!is_canonical_int(b"1.5"));
        assert!(!is_canonical_int(b"9223372036854775808"));
    }
}
