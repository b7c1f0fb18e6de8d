//! Redis's persistence and replication commands, answered truthfully for a
//! server whose every acknowledged write is already durable: SAVE, BGSAVE,
//! BGREWRITEAOF, LASTSAVE, WAIT, WAITAOF.
//!
//! packetstore writes no RDB or AOF file: the pool is the persistence, and
//! a write's reply leaves only after its log record is durable. So SAVE
//! and its kin have nothing left to do; LASTSAVE is the last commit (every
//! write acknowledged by then is on the media); WAITAOF counts the local
//! write as durable at once; WAIT counts no replica on a single server,
//! and in a replicated group the followers that hold every entry durably
//! (at least a majority less the leader: a reply leaves only once the
//! writes before it are committed), without blocking.

use crate::apps::kv::ops::{parse_i64, NOT_INTEGER, SYNTAX};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::store::db::StoreError;

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("save", 1, &["admin", "noscript", "no_async_loading", "no_multi"], (0, 0, 0), "server", "Every write is durable already: nothing to save.", KvServer::cmd_save),
    cmd("bgsave", -1, &["admin", "noscript", "no_async_loading"], (0, 0, 0), "server", "Every write is durable already: nothing to save.", KvServer::cmd_bgsave),
    cmd("bgrewriteaof", 1, &["admin", "noscript", "no_async_loading"], (0, 0, 0), "server", "There is no AOF: the log is folded into the tree continuously.", KvServer::cmd_bgrewriteaof),
    cmd("lastsave", 1, &["random", "loading", "stale", "fast"], (0, 0, 0), "server", "The time of the last commit: every write acknowledged by then is durable.", KvServer::cmd_lastsave),
    cmd("wait", 3, &["noscript"], (0, 0, 0), "generic", "Replicas acknowledging: none exist yet (0, at once).", KvServer::cmd_wait),
    cmd("waitaof", 4, &["noscript"], (0, 0, 0), "generic", "Every write is durable locally before its reply: [1, 0] at once.", KvServer::cmd_waitaof),
];

/// Seconds since the epoch.
fn unix_seconds() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

impl KvServer {
    fn cmd_save(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        ctx.ok();
        Ok(())
    }

    fn cmd_bgsave(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let option = (ctx.argc() == 2).then(|| ctx.conn.args.upper(1)).flatten();
        match (ctx.argc(), option.as_deref()) {
            (1, _) => ctx.out.push(b"+Background saving started\r\n"),
            (2, Some(b"SCHEDULE")) => ctx.out.push(b"+Background saving scheduled\r\n"),
            _ => ctx.error(SYNTAX),
        }
        Ok(())
    }

    fn cmd_bgrewriteaof(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        ctx.out.push(b"+Background append only file rewriting started\r\n");
        Ok(())
    }

    fn cmd_lastsave(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        // The last commit is at most a loop turn ago: every reply already
        // sent acknowledged a durable write.
        ctx.int(unix_seconds());
        Ok(())
    }

    fn cmd_wait(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let (Some(_replicas), Some(timeout)) = (parse_i64(&ctx.arg(1)), parse_i64(&ctx.arg(2))) else {
            ctx.error(NOT_INTEGER);
            return Ok(());
        };
        if timeout < 0 {
            ctx.error("ERR timeout is negative");
            return Ok(());
        }
        ctx.int(self.replicas_durable());
        Ok(())
    }

    fn cmd_waitaof(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let numbers = [1, 2, 3].map(|i| parse_i64(&ctx.arg(i)));
        let [Some(local), Some(_replicas), Some(timeout)] = numbers else {
            ctx.error(NOT_INTEGER);
            return Ok(());
        };
        if timeout < 0 {
            ctx.error("ERR timeout is negative");
            return Ok(());
        }
        if local > 0 && self.config.domain_name == "none" {
            ctx.error("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.");
            return Ok(());
        }
        ctx.array(2);
        ctx.int(1);
        ctx.int(self.replicas_durable());
        Ok(())
    }
}
