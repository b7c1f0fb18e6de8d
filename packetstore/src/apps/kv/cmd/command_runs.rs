//! Which of Redis's subcommands the dispatcher runs: every subcommand of a
//! container it runs, but for the containers whose handlers run only some
//! (`PARTIAL_CONTAINERS`). COMMAND's lists and lookups (`command.rs`) and
//! its INFO and DOCS replies (`command_reply.rs`) both ask here.
//!
//! Invariant: every container listed is one the dispatcher runs, and every
//! subcommand listed is Redis's (the test below).

use crate::redis_spec::command_table::RedisCommand;

/// The containers whose handlers run only some of Redis 7.0.15's
/// subcommands, and those they run. Every other container the dispatcher
/// runs runs all of Redis's (packetstore-cli's `commands` tests call each
/// listed subcommand to check it).
const PARTIAL_CONTAINERS: &[(&str, &[&str])] = &[
    ("cluster", &["countkeysinslot", "getkeysinslot", "help", "info", "keyslot", "myid", "nodes", "shards", "slots"]),
    ("memory", &["usage"]),
    ("script", &["exists", "flush", "help", "kill", "load"]),
];

/// Whether the dispatcher runs `sub`, a subcommand of a container it runs.
pub(super) fn runs(sub: &RedisCommand) -> bool {
    match PARTIAL_CONTAINERS.iter().find(|(container, _)| *container == sub.container) {
        Some((_, subs)) => subs.contains(&sub.name),
        None => true,
    }
}

/// The subcommands of `cmd` the server runs.
pub(super) fn running_subcommands(cmd: &RedisCommand) -> Vec<&'static RedisCommand> {
    cmd.subcommands().iter().filter(|sub| runs(sub)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::kv::dispatch::COMMANDS as ALL;
    use crate::apps::kv::state::CommandEntry;
    use crate::redis_spec::command_table::lookup;

    /// Every partly run container is one the dispatcher runs, and every
    /// subcommand named there is Redis's.
    #[test]
    fn partial_containers_name_redis_subcommands() {
        for (container, subs) in PARTIAL_CONTAINERS {
            assert!(CommandEntry::find(ALL, container.as_bytes()).is_some(), "{container}");
            assert!(subs.iter().all(|sub| lookup(container.as_bytes(), sub.as_bytes()).is_some()), "{container}");
        }
    }
}
