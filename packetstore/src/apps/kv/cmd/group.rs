//! A replicated group's commands: ROLE (Redis's shape, with the group's
//! truth), READONLY and READWRITE (a follower's client opts into local,
//! possibly stale reads), and the numbers WAIT, WAITAOF, INFO replication
//! and /metrics report (`replicas_durable`, `info_replication`).
//!
//! A single server answers as Redis 7 does without replicas or cluster.

use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::store::db::StoreError;

#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("role", 1, &["noscript", "loading", "stale", "fast"], (0, 0, 0), "server", "This node's role: master (the group's leader) or slave, with the group's progress.", KvServer::cmd_role),
    cmd("readonly", 1, &["loading", "stale", "fast"], (0, 0, 0), "cluster", "A follower's client reads locally, possibly stale (its first command, to take effect).", KvServer::cmd_readonly),
    cmd("group", -2, &["admin", "noscript"], (0, 0, 0), "server", "GROUP ADD id host:port | GROUP REMOVE id | GROUP MEMBERS: the replicated group's membership.", KvServer::cmd_group),
    cmd("readwrite", 1, &["loading", "stale", "fast"], (0, 0, 0), "cluster", "Undoes READONLY (takes effect on the next connection).", KvServer::cmd_readonly),
];

pub(in crate::apps::kv) const NO_CLUSTER: &str = "ERR This instance has cluster support disabled";

impl KvServer {
    fn cmd_role(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some(replica) = self.replica.as_ref() else {
            ctx.array(3);
            ctx.bulk(b"master");
            ctx.int(0);
            ctx.array(0);
            return Ok(());
        };
        let members = replica.config.members.clone();
        if replica.is_leader() {
            // Redis lists the replicas connected: those heard from lately.
            let mut progress = replica.progress();
            progress.retain(|&(id, _)| replica.follower_active(id));
            ctx.array(3);
            ctx.bulk(b"master");
            ctx.int(replica.last_index() as i64);
            ctx.array(progress.len());
            for (id, matched) in progress {
                let addr = replica.client_addr(id);
                ctx.array(3);
                ctx.bulk(addr.map(|a| a.ip().to_string()).unwrap_or_default().as_bytes());
                ctx.bulk(addr.map(|a| a.port().to_string()).unwrap_or_default().as_bytes());
                ctx.bulk(matched.to_string().as_bytes());
            }
            return Ok(());
        }
        let leader = replica.client_addr(replica.leader_id()).filter(|_| members.contains_key(&replica.leader_id()));
        let state = if replica.is_loading() {
            "sync"
        } else if leader.is_some() {
            "connected"
        } else {
            "connect"
        };
        ctx.array(5);
        ctx.bulk(b"slave");
        ctx.bulk(leader.map(|a| a.ip().to_string()).unwrap_or_default().as_bytes());
        ctx.int(leader.map_or(-1, |a| i64::from(a.port())));
        ctx.bulk(state.as_bytes());
        ctx.int(replica.tree_index() as i64);
        Ok(())
    }

    fn cmd_group(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some(replica) = self.replica.as_mut() else {
            ctx.error("ERR this server is not a node of a replicated group (serve --node-id)");
            return Ok(());
        };
        let sub = ctx.conn.args.upper(1).unwrap_or_default();
        if sub == b"MEMBERS" && ctx.argc() == 2 {
            let voters = replica.voters();
            let members = replica.config.members.clone();
            ctx.array(voters.len());
            for id in voters {
                let addr = members.get(&id).map(|a| a.to_string()).unwrap_or_default();
                ctx.bulk(format!("{id} {addr}").as_bytes());
            }
            return Ok(());
        }
        let change = match (sub.as_slice(), ctx.argc()) {
            (b"ADD", 4) => {
                let addr = String::from_utf8_lossy(&ctx.arg(3)).parse::<std::net::SocketAddr>();
                match addr {
                    Ok(addr) => Some(addr),
                    Err(_) => {
                        ctx.error("ERR GROUP ADD needs an IP:PORT peer address");
                        return Ok(());
                    }
                }
            }
            (b"REMOVE", 3) => None,
            _ => {
                ctx.error("ERR syntax: GROUP ADD id ip:port | GROUP REMOVE id | GROUP MEMBERS");
                return Ok(());
            }
        };
        let Some(id) = crate::apps::kv::ops::parse_i64(&ctx.arg(2)).filter(|&id| id > 0) else {
            ctx.error("ERR node ids are integers from 1");
            return Ok(());
        };
        if self.config.settings.cluster.as_ref().is_some_and(|view| view.shards > 1) {
            ctx.error("ERR a sharded node's membership cannot change yet (each shard is a group of its own)");
            return Ok(());
        }
        if !replica.is_leader() {
            ctx.error("READONLY membership changes are made on the group's leader");
            return Ok(());
        }
        match replica.propose_membership(id as u64, change) {
            // The reply waits, like a write's, for the change to commit.
            Ok(()) => ctx.ok(),
            Err(error) => ctx.error(&format!("ERR the change was refused: {error} (one change at a time)")),
        }
        Ok(())
    }

    fn cmd_readonly(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if self.replica.is_none() && self.config.settings.cluster.is_none() {
            ctx.error(NO_CLUSTER);
        } else {
            ctx.ok();
        }
        Ok(())
    }

    /// WAIT and WAITAOF's count: followers that hold every entry logged so
    /// far durably. The reply leaves only once the entries before it are
    /// committed, so by then at least a majority minus the leader does.
    pub(in crate::apps::kv) fn replicas_durable(&self) -> i64 {
        let Some(replica) = self.replica.as_ref() else { return 0 };
        if !replica.is_leader() {
            return 0;
        }
        let last = replica.last_index();
        let caught_up = replica.progress().iter().filter(|(_, matched)| *matched >= last).count();
        let quorum_followers = replica.voters().len() / 2;
        caught_up.max(quorum_followers) as i64
    }

    /// INFO replication in a group: Redis's fields, then the group's.
    pub(in crate::apps::kv) fn info_replication(&self, text: &mut String) -> bool {
        use std::fmt::Write;
        let Some(replica) = self.replica.as_ref() else { return false };
        let members = &replica.config.members;
        text.push_str("# Replication\r\n");
        if replica.is_leader() {
            // Redis lists the replicas connected: those heard from lately;
            // the others are raft_followers_offline.
            let (progress, offline): (Vec<_>, Vec<_>) =
                replica.progress().into_iter().partition(|&(id, _)| replica.follower_active(id));
            let offline: Vec<u64> = offline.into_iter().map(|(id, _)| id).collect();
            let _ = write!(
                text,
                "role:master\r\nconnected_slaves:{}\r\nraft_followers_offline:{offline:?}\r\n",
                progress.len()
            );
            for (i, (id, matched)) in progress.iter().enumerate() {
                let addr = replica.client_addr(*id);
                let lag = replica.last_index().saturating_sub(*matched);
                let _ = write!(
                    text,
                    "slave{i}:id={id},ip={},port={},state=online,offset={matched},lag={lag}\r\n",
                    addr.map(|a| a.ip().to_string()).unwrap_or_default(),
                    addr.map_or(0, |a| a.port())
                );
            }
        } else {
            let leader =
                replica.client_addr(replica.leader_id()).filter(|_| members.contains_key(&replica.leader_id()));
            let _ = write!(
                text,
                "role:slave\r\nmaster_host:{}\r\nmaster_port:{}\r\nmaster_link_status:{}\r\nmaster_sync_in_progress:{}\r\nslave_repl_offset:{}\r\nslave_read_only:1\r\nconnected_slaves:0\r\n",
                leader.map(|a| a.ip().to_string()).unwrap_or_default(),
                leader.map_or(0, |a| a.port()),
                if leader.is_some() { "up" } else { "down" },
                u8::from(replica.is_loading()),
                replica.tree_index()
            );
        }
        let _ = write!(
            text,
            "master_repl_offset:{}\r\nraft_group_id:{}\r\nraft_node_id:{}\r\nraft_role:{}\r\nraft_term:{}\r\nraft_leader_id:{}\r\nraft_voters:{:?}\r\nraft_commit_index:{}\r\nraft_last_index:{}\r\nraft_applied_index:{}\r\nraft_first_index:{}\r\nraft_snapshots_streaming:{}\r\nraft_opened_part_loaded:{}\r\nraft_repairs:{}\r\n",
            replica.last_index(),
            replica.config.group_id,
            replica.config.node_id,
            replica.role(),
            replica.term(),
            replica.leader_id(),
            replica.voters(),
            replica.commit_index(),
            replica.last_index(),
            replica.tree_index(),
            replica.first_index(),
            replica.streams.len(),
            u8::from(replica.opened_part_loaded),
            replica.repairs_done
        );
        true
    }
}
