//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST
//! (Redis 7's `hyperloglog.c`; the encoding is `redis_spec/hll.rs`).
//!
//! Invariant: a HyperLogLog is a string value, rewritten whole and made
//! durable by the command that changes it (one store group, durable
//! before the reply), as Redis rewrites its string in place. PFCOUNT of
//! one key stores the cardinality it computed in the value's header, as
//! Redis does; on a read-only store (a follower) it only answers. A value
//! that is not a HyperLogLog is refused with Redis's WRONGTYPE; one whose
//! registers do not decode, with INVALIDOBJ, and nothing is written.

use crate::apps::kv::cmd::notify;
use crate::apps::kv::ops::{key_ok, WRONGTYPE};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::redis_spec::hll::{self, Hll, REGISTERS};
use crate::store::db::{value_bytes, StoreError};
use crate::store::keyspace::string_key;

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("pfadd", -2, &["write", "denyoom", "fast"], (1, 1, 1), "hyperloglog", "Adds elements to a HyperLogLog key.", KvServer::cmd_pfadd),
    cmd("pfcount", -2, &["readonly", "may_replicate"], (1, -1, 1), "hyperloglog", "Returns the approximated cardinality of the union of HyperLogLog keys.", KvServer::cmd_pfcount),
    cmd("pfmerge", -2, &["write", "denyoom"], (1, -1, 1), "hyperloglog", "Merges HyperLogLog keys into one.", KvServer::cmd_pfmerge),
    cmd("pfdebug", -3, &["write", "denyoom", "admin"], (2, 2, 1), "hyperloglog", "Internal commands for debugging HyperLogLog values.", KvServer::cmd_pfdebug),
    cmd("pfselftest", 1, &["admin"], (0, 0, 0), "hyperloglog", "An internal command for testing HyperLogLog values.", KvServer::cmd_pfselftest),
];

/// The union of several HyperLogLogs' registers, and whether one of
/// them was dense.
type Union = (Box<[u8; REGISTERS]>, bool);

/// What a key holds, for the HyperLogLog commands.
enum Found {
    Missing,
    Hll(Hll),
    /// Refused: the reply is sent.
    Refused,
}

impl KvServer {
    /// `hll-sparse-max-bytes`.
    fn hll_sparse_max_bytes(&self) -> usize {
        self.config_params.get("hll-sparse-max-bytes").and_then(|v| v.parse().ok()).unwrap_or(3000)
    }

    /// The HyperLogLog at `key`, or the refusal (WRONGTYPE) sent.
    fn hll_at(&self, ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Found, StoreError> {
        let value = match self.string_of(ctx, key)? {
            Ok(Some(value)) => value,
            Ok(None) => return Ok(Found::Missing),
            Err(()) => {
                ctx.error(WRONGTYPE);
                return Ok(Found::Refused);
            }
        };
        match Hll::from_bytes(value_bytes(ctx.pool, &value)?.into_owned()) {
            Some(hll) => Ok(Found::Hll(hll)),
            None => {
                ctx.error(hll::NOT_HLL);
                Ok(Found::Refused)
            }
        }
    }

    /// Stores `hll` at `key` as one durable write.
    fn hll_store(&mut self, ctx: &mut Ctx<'_>, key: &[u8], hll: Hll) -> Result<(), StoreError> {
        let mut ops = Vec::new();
        self.purge_if_expired(ctx, key, &mut ops)?;
        ops.push(self.put_bytes(ctx, string_key(ctx.db, key), &hll.into_bytes())?);
        self.apply(ctx, &ops)
    }

    fn cmd_pfadd(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if let Err(why) = key_ok(&key) {
            ctx.error(&why);
            return Ok(());
        }
        let (mut hll, created) = match self.hll_at(ctx, &key)? {
            Found::Refused => return Ok(()),
            Found::Missing => (Hll::new(), true),
            Found::Hll(hll) => (hll, false),
        };
        let sparse_max = self.hll_sparse_max_bytes();
        let mut updated = created;
        for i in 2..ctx.argc() {
            match hll.add(&ctx.arg(i), sparse_max) {
                Ok(grew) => updated |= grew,
                Err(hll::Corrupt) => {
                    ctx.error(hll::CORRUPT);
                    return Ok(());
                }
            }
        }
        if updated {
            hll.invalidate_cache();
            self.hll_store(ctx, &key, hll)?;
            self.notify_created(ctx, created, &key);
            self.notify(ctx, notify::STRING, "pfadd", &key);
        }
        ctx.int(i64::from(updated));
        Ok(())
    }

    fn cmd_pfcount(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if ctx.argc() > 2 {
            return self.pfcount_union(ctx);
        }
        let key = ctx.arg(1).into_owned();
        let mut hll = match self.hll_at(ctx, &key)? {
            Found::Refused => return Ok(()),
            Found::Missing => {
                ctx.int(0);
                return Ok(());
            }
            Found::Hll(hll) => hll,
        };
        if let Some(card) = hll.cached() {
            ctx.int(card as i64);
            return Ok(());
        }
        let Ok(card) = hll.count() else {
            ctx.error(hll::CORRUPT);
            return Ok(());
        };
        hll.set_cached(card);
        match self.hll_store(ctx, &key, hll) {
            // A follower answers without keeping the count.
            Ok(()) | Err(StoreError::ReadOnly) => {}
            Err(error) => return Err(error),
        }
        ctx.int(card as i64);
        Ok(())
    }

    /// The registers' maxima over keys `from..` of the command (a missing
    /// key is empty); None: refused, the reply sent. `dense`: whether one
    /// of them was dense.
    fn hll_union(&self, ctx: &mut Ctx<'_>, from: usize) -> Result<Option<Union>, StoreError> {
        let mut max = Box::new([0u8; REGISTERS]);
        let mut dense = false;
        for i in from..ctx.argc() {
            let key = ctx.arg(i).into_owned();
            let hll = match self.hll_at(ctx, &key)? {
                Found::Refused => return Ok(None),
                Found::Missing => continue,
                Found::Hll(hll) => hll,
            };
            dense |= !hll.is_sparse();
            if hll.merge_into(&mut max).is_err() {
                ctx.error(hll::CORRUPT);
                return Ok(None);
            }
        }
        Ok(Some((max, dense)))
    }

    fn pfcount_union(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if let Some((max, _)) = self.hll_union(ctx, 1)? {
            ctx.int(hll::count_registers(&max) as i64);
        }
        Ok(())
    }

    fn cmd_pfmerge(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if let Err(why) = key_ok(&key) {
            ctx.error(&why);
            return Ok(());
        }
        // The destination is one of the sources, as in Redis.
        let Some((max, dense)) = self.hll_union(ctx, 1)? else { return Ok(()) };
        let (mut hll, created) = match self.hll_at(ctx, &key)? {
            Found::Refused => return Ok(()),
            Found::Missing => (Hll::new(), true),
            Found::Hll(hll) => (hll, false),
        };
        if dense && hll.make_dense().is_err() {
            ctx.error(hll::CORRUPT);
            return Ok(());
        }
        let sparse_max = self.hll_sparse_max_bytes();
        for (index, &value) in max.iter().enumerate() {
            if value > 0 && hll.set(index, value, sparse_max).is_err() {
                ctx.error(hll::CORRUPT);
                return Ok(());
            }
        }
        hll.invalidate_cache();
        self.hll_store(ctx, &key, hll)?;
        self.notify_created(ctx, created, &key);
        self.notify(ctx, notify::STRING, "pfadd", &key);
        ctx.ok();
        Ok(())
    }

    fn cmd_pfdebug(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let sub = String::from_utf8_lossy(&ctx.arg(1)).into_owned();
        let lower = sub.to_ascii_lowercase();
        let key = ctx.arg(2).into_owned();
        let known = ["getreg", "todense", "decode", "encoding"].contains(&lower.as_str());
        if known && ctx.argc() != 3 {
            ctx.error(&format!("ERR Wrong number of arguments for the '{sub}' subcommand"));
            return Ok(());
        }
        let mut hll = match self.hll_at(ctx, &key)? {
            Found::Refused => return Ok(()),
            Found::Missing => {
                ctx.error("ERR The specified key does not exist");
                return Ok(());
            }
            Found::Hll(hll) => hll,
        };
        match lower.as_str() {
            "getreg" | "todense" => {
                // Both leave the value dense, as Redis does.
                let Ok(converted) = hll.make_dense() else {
                    ctx.error(hll::CORRUPT);
                    return Ok(());
                };
                let registers = hll.registers().expect("a dense value decodes");
                if converted {
                    self.hll_store(ctx, &key, hll)?;
                }
                if lower == "todense" {
                    ctx.int(i64::from(converted));
                } else {
                    ctx.array(REGISTERS);
                    for register in registers {
                        ctx.int(i64::from(register));
                    }
                }
            }
            "decode" => match hll.decode_sparse() {
                Some(text) => ctx.bulk(text.as_bytes()),
                None => ctx.error("ERR HLL encoding is not sparse"),
            },
            "encoding" => {
                let enc = ctx.enc();
                enc.simple(ctx.out.bytes(), if hll.is_sparse() { "sparse" } else { "dense" });
            }
            _ => ctx.error(&format!("ERR Unknown PFDEBUG subcommand '{sub}'")),
        }
        Ok(())
    }

    fn cmd_pfselftest(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let seed = crate::store::db::now_us();
        match hll::self_test(self.hll_sparse_max_bytes(), seed, hll::SELF_TEST_ELEMENTS) {
            Ok(()) => ctx.ok(),
            Err(why) => ctx.error(&why),
        }
        Ok(())
    }
}
