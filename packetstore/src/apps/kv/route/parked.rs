//! Commands that run on one shard with other shards *parked* for them
//! (`across.rs`) and reach those shards' keys as they go, on the main port
//! of a sharded server: scripts and functions (EVAL, EVALSHA, FCALL and
//! their read-only forms), and SORT with BY/GET patterns or a STORE on
//! another shard. No other command sees one half done, and a power failure
//! keeps all of its writes or none.
//!
//! SORT runs on its source's shard: every shard parked when its patterns
//! name keys (each lookup of another shard's key runs there), the
//! destination's when it stores there (deleted, then pushed, there).
//!
//! Which shards: a script whose declared keys several shards own parks
//! those before it starts. A script that calls a command for another
//! shard's key without a session (no keys declared, or undeclared ones, as
//! Redis allows outside a cluster) is stopped there if it has written
//! nothing yet: every later call fails too, its reply is dropped, and it
//! runs again from the start with every shard parked. One that has written
//! already parks the shards it needs then (`grow_session`: its session
//! begins, or grows), and the call runs in it; inside EXEC too. Only a
//! script run as another command's part (a parked shard's) gets Redis
//! Cluster's error.
//!
//! In a session, the script's calls for a parked shard's keys run there
//! (`across_call`), and a call whose keys several shards own runs as a
//! command across shards (`across_plans.rs`) within the same session.
//! A script in a session cannot pause (its shards would serve nobody
//! meanwhile): it runs to its end, or to the scripts' time limit.
//!
//! Owns: the server's `session` (the shards parked for the command
//! running here), `Scripting::may_restart` and `restart_across`.
//!
//! Invariant: a script restarts only if its first run wrote nothing (its
//! group holds no record), so running it again changes nothing it did; a
//! session ends, made durable on every shard that wrote, before the
//! script's reply is sent.

use std::collections::BTreeSet;

use crate::apps::kv::cluster::owner;
use crate::apps::kv::cmd::command::keys_and_flags;
use crate::apps::kv::placement::Placement;
use crate::apps::kv::session::Session;
use crate::apps::kv::state::{CommandEntry, Ctx, KvServer};
use crate::store::db::StoreError;

/// What a script's calls answer once it is to run again across every
/// shard (it never sees it: its reply is dropped).
pub(in crate::apps::kv) const RESTARTING: &str =
    "ERR this script touched another shard's key: it runs again across every shard";

/// Redis Cluster's reply to a script's call for a key of another node.
pub(in crate::apps::kv) const NON_LOCAL_KEY: &str =
    "ERR Script attempted to access a non local key in a cluster node script";

/// Whether a command runs a script or a function.
pub(in crate::apps::kv) fn runs_script(entry: &CommandEntry) -> bool {
    matches!(entry.name, "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro")
}

impl KvServer {
    /// Where a running script's call for keys of other shards (`owners`)
    /// runs: in its session, if the shards are parked; else the script
    /// restarts across every shard (if it may), or the call is refused.
    pub(in crate::apps::kv) fn script_placement(
        &self,
        ctx: &Ctx<'_>,
        entry: &CommandEntry,
        owners: BTreeSet<u16>,
    ) -> Placement {
        if self.scripting.restart_across {
            return Placement::Refused(RESTARTING.into());
        }
        let Some(view) = self.config.settings.cluster.as_ref() else { return Placement::Here };
        // The main port's clients (or relayed from it): a cluster port's
        // script gets Redis Cluster's error, as on a cluster node.
        let own_client = view.relays(ctx.conn.listener) || ctx.conn.listener == crate::apps::kv::LISTENER_LINK_IN;
        let growable = self.scripting.may_grow && self.across.is_some() && own_client;
        let Some(session) = self.session.as_ref() else {
            let restartable = self.scripting.may_restart && self.store.group_records() == 0 && own_client;
            return match (restartable && self.across.is_some(), growable) {
                (true, _) => Placement::RestartAcross,
                (false, true) => Placement::Grow(owners),
                (false, false) => Placement::Refused(NON_LOCAL_KEY.into()),
            };
        };
        if !owners.iter().all(|&shard| shard == view.shard || session.has_parked(shard)) {
            return match growable {
                true => Placement::Grow(owners),
                false => Placement::Refused(NON_LOCAL_KEY.into()),
            };
        }
        if let [shard] = owners.iter().copied().collect::<Vec<u16>>()[..] {
            return Placement::InSession(shard);
        }
        let args: Vec<Vec<u8>> = (0..ctx.argc()).map(|i| ctx.arg(i).into_owned()).collect();
        let keys = keys_and_flags(entry, &args);
        match crate::apps::kv::across_plans::plan(entry.name, &args, &keys, view.shards) {
            Some(across) => Placement::InSessionAcross(across, args, keys),
            None => Placement::Refused(
                "CROSSSLOT a script's call whose keys several shards own, which this command cannot span".into(),
            ),
        }
    }

    /// A script or function whose declared keys `shards` own: they are
    /// parked before it runs here (`end_parked` ends the session
    /// after it). Err: why not (nothing ran).
    pub(in crate::apps::kv) fn begin_parked(
        &mut self,
        ctx: &mut Ctx<'_>,
        shards: &BTreeSet<u16>,
    ) -> Result<(), String> {
        assert!(self.session.is_none(), "one script session at a time");
        if self.store.in_group() {
            return Err("ERR this command cannot park other shards inside a transaction".into());
        }
        let exchange = self.across.clone().expect("placed across only with an exchange");
        let session = self.across_begin(ctx.pool, ctx.buffers, &exchange, shards, ctx.conn)?;
        self.session = Some(session);
        Ok(())
    }

    /// A running script that wrote calls for keys of `shards` not parked
    /// for it: they are parked now. Without a session one begins: the
    /// process's transaction lock first (meanwhile a coordinator's `Park`
    /// for this shard is refused with `RETRY`, which that coordinator
    /// takes as "begin again": this shard is mid-script and must not run
    /// its parts), then the shards, the script's group here becoming the
    /// transaction's part (`script_done` ends the session). Err: a shard
    /// refused (a paused script there, a full log, or another script
    /// growing into this one's shards): the call fails, the script goes on.
    ///
    /// Serializable as two-phase locking: this shard is the script's from
    /// its start, each other shard from the moment it is parked, and none
    /// is released before the end.
    pub(in crate::apps::kv) fn grow_session(&mut self, ctx: &Ctx<'_>, shards: &BTreeSet<u16>) -> Result<(), String> {
        use crate::apps::kv::exchange::Response;
        let exchange = self.across.clone().expect("grows only with an exchange");
        let me = self.shard_index();
        let mut session = match self.session.take() {
            Some(session) => session,
            None => {
                while !exchange.try_lock() {
                    while exchange.take_park(me) {
                        exchange.respond(me, Response::Parked(Err(crate::apps::kv::across::RETRY.into())));
                    }
                    std::thread::yield_now();
                }
                let (db, resp3, client) = (ctx.conn.db, ctx.conn.encoder.resp3, ctx.conn.id);
                Session::new(exchange.clone(), me, (db, resp3, client))
            }
        };
        let new: Vec<u16> = shards.iter().copied().filter(|&s| s != me && !session.has_parked(s)).collect();
        let refused = crate::apps::kv::across::park_into(&mut session, &new);
        self.session = Some(session);
        refused.map_or(Ok(()), Err)
    }

    /// The script of the session has ended: every part made durable, then
    /// every shard released. Should that fail (its reads could not be made
    /// durable), its reply, from `reply_from` on, becomes the error.
    pub(in crate::apps::kv) fn end_parked(&mut self, ctx: &mut Ctx<'_>, reply_from: usize) {
        let Some(mut session) = self.session.take() else { return };
        if self.store.group_records() > 0 {
            session.wrote_here();
        }
        if let Err(why) = self.across_end(ctx.pool, ctx.buffers, session) {
            let out = ctx.out.bytes();
            out.truncate(reply_from.min(out.len()));
            ctx.error(&format!("ERR {why}"));
        }
    }

    /// A script's call for keys of one parked shard, run there.
    pub(in crate::apps::kv) fn call_in_session(&mut self, ctx: &mut Ctx<'_>, shard: u16) {
        let args: Vec<Vec<u8>> = (0..ctx.argc()).map(|i| ctx.arg(i).into_owned()).collect();
        self.answer_in_session(ctx, |server, ctx, session| {
            server.across_call(ctx.pool, ctx.buffers, session, shard, args)
        });
    }

    /// A script's call whose keys several parked shards own, as a command
    /// across shards within the script's session.
    pub(in crate::apps::kv) fn call_across_in_session(
        &mut self,
        ctx: &mut Ctx<'_>,
        across: &crate::apps::kv::across_plans::Across,
        args: &[Vec<u8>],
        keys: &[(usize, u16)],
    ) {
        self.answer_in_session(ctx, |server, ctx, session| server.run_recipe(ctx, session, across, args, keys));
    }

    /// Runs `call` within the running script's session, in the database
    /// and protocol the script's connection has now (it may have selected
    /// another database since it began), and answers its reply.
    fn answer_in_session(
        &mut self,
        ctx: &mut Ctx<'_>,
        call: impl FnOnce(&mut KvServer, &mut Ctx<'_>, &mut Session) -> Vec<u8>,
    ) {
        let mut session = self.session.take().expect("placed in a session");
        (session.db, session.resp3) = (ctx.conn.db, ctx.conn.encoder.resp3);
        let args: Vec<Vec<u8>> = (0..ctx.argc()).map(|i| ctx.arg(i).into_owned()).collect();
        self.monitor_elsewhere(ctx.conn.id, ctx.conn.db, &args);
        let reply = call(self, ctx, &mut session);
        self.session = Some(session);
        ctx.failed = reply.first() == Some(&b'-');
        ctx.out.bytes().extend_from_slice(&reply);
    }

    /// The script ended after it met another shard's key with nothing
    /// written: it runs again, from the start, with every shard parked.
    pub(in crate::apps::kv) fn rerun_script_across(
        &mut self,
        ctx: &mut Ctx<'_>,
        run: crate::apps::kv::kept::scripting::Run,
    ) -> Result<(), StoreError> {
        let view = self.config.settings.cluster.as_ref().expect("restarts only when sharded");
        let every: BTreeSet<u16> = (0..view.shards).collect();
        if let Err(why) = self.begin_parked(ctx, &every) {
            ctx.error(&why);
            return Ok(());
        }
        let reply_from = ctx.out.bytes().len();
        let result = self.run_script(ctx, run);
        self.end_parked(ctx, reply_from);
        result
    }
}

/// Elements per RPUSH when a SORT stores into another shard's key.
const STORE_CHUNK_ELEMENTS: usize = 1024;

impl KvServer {
    /// The shard that owns `key`, if not this one (a sharded server).
    pub(in crate::apps::kv) fn elsewhere(&self, key: &[u8]) -> Option<u16> {
        let view = self.config.settings.cluster.as_ref()?;
        let slot = crate::apps::kv::cluster::key_slot(key);
        (!view.owns(slot)).then(|| owner(slot, view.shards))
    }

    /// A SORT's BY or GET lookup of another shard's key (its `field`, of a
    /// hash): read there if that shard is parked for it; None: no value
    /// (absent, another type, or the shard not parked).
    pub(in crate::apps::kv) fn parked_lookup(
        &mut self,
        ctx: &mut Ctx<'_>,
        shard: u16,
        key: &[u8],
        field: Option<&[u8]>,
    ) -> Option<Vec<u8>> {
        let args = match field {
            Some(field) => vec![b"HGET".to_vec(), key.to_vec(), field.to_vec()],
            None => vec![b"GET".to_vec(), key.to_vec()],
        };
        let reply = self.parked_call(ctx, shard, args)?;
        crate::apps::kv::across_plans::bulk(&reply)
    }

    /// SORT ... STORE into another shard's key `dst`: it becomes the list
    /// `list` there (deleted if empty). The reply: its length, or an error.
    pub(in crate::apps::kv) fn parked_store(
        &mut self,
        ctx: &mut Ctx<'_>,
        shard: u16,
        dst: &[u8],
        list: Vec<Vec<u8>>,
    ) -> Vec<u8> {
        let length = list.len();
        let Some(_) = self.parked_call(ctx, shard, vec![b"DEL".to_vec(), dst.to_vec()]) else {
            return format!("-ERR shard {shard} is not parked for this command\r\n").into_bytes();
        };
        for chunk in list.chunks(STORE_CHUNK_ELEMENTS) {
            let mut args = vec![b"RPUSH".to_vec(), dst.to_vec()];
            args.extend(chunk.iter().cloned());
            let reply = self.parked_call(ctx, shard, args).unwrap_or_default();
            if reply.first() != Some(&b':') {
                return reply;
            }
        }
        format!(":{length}\r\n").into_bytes()
    }

    /// `args` run on parked `shard` in the database of `ctx`, in RESP2:
    /// the reply. None: no session has that shard parked.
    fn parked_call(&mut self, ctx: &mut Ctx<'_>, shard: u16, args: Vec<Vec<u8>>) -> Option<Vec<u8>> {
        let mut session = self.session.take()?;
        if !session.has_parked(shard) {
            self.session = Some(session);
            return None;
        }
        (session.db, session.resp3) = (ctx.conn.db, false);
        let reply = self.across_call(ctx.pool, ctx.buffers, &mut session, shard, args);
        self.session = Some(session);
        Some(reply)
    }

    /// Where a SORT or SORT_RO of the main port (or relayed here) runs:
    /// on its source's shard, with every shard parked if its patterns read
    /// keys, or the destination's if it stores elsewhere. None: as any
    /// command.
    pub(in crate::apps::kv) fn sort_placement(&self, ctx: &Ctx<'_>, entry: &CommandEntry) -> Option<Placement> {
        let view = self.config.settings.cluster.as_ref()?;
        let own_client = view.relays(ctx.conn.listener) || ctx.conn.listener == crate::apps::kv::LISTENER_LINK_IN;
        // Not queued in MULTI nor run by EXEC (inside its group, where no
        // shard can be parked).
        let in_transaction = ctx.conn.multi.is_some() || self.store.in_group();
        if !own_client || in_transaction || self.across.is_none() || ctx.argc() < 2 {
            return None;
        }
        let source = owner(crate::apps::kv::cluster::key_slot(&ctx.arg(1)), view.shards);
        if source != view.shard {
            return view.relays(ctx.conn.listener).then_some(Placement::Relay(source));
        }
        let (patterns, store) = crate::apps::kv::cmd::sort::sort_reaches(ctx, entry.name == "sort_ro")?;
        let mut shards: BTreeSet<u16> = match patterns {
            true => (0..view.shards).collect(),
            false => BTreeSet::from([view.shard]),
        };
        if let Some(dst) = store {
            shards.insert(owner(crate::apps::kv::cluster::key_slot(&dst), view.shards));
        }
        Some(match shards.len() {
            1 => Placement::Here,
            _ => Placement::Parked(shards),
        })
    }
}

/// The shards a script's declared keys (`slots`) belong to, when more than
/// one (`None`: it runs where one shard's keys run).
pub(in crate::apps::kv) fn script_shards(slots: &[u16], shards: u16) -> Option<BTreeSet<u16>> {
    let owners: BTreeSet<u16> = slots.iter().map(|&slot| owner(slot, shards)).collect();
    (owners.len() > 1).then_some(owners)
}
