//! The lookups of Redis's command table (`redis_commands.rs`, generated
//! from Redis 7.0.15's command JSON files, of the types in
//! `command_shape.rs`, re-exported here): a command by name, a subcommand
//! by its container, the command a call runs.
//!
//! Invariant: what it answers is the generated table's data as Redis's
//! server.c holds it after startup; nothing here is written by hand but the
//! search.

use super::redis_commands::REDIS_COMMANDS;

pub use super::command_shape::*;

/// Command names are at most this long (Redis's longest is 21 bytes).
const NAME_MAX: usize = 32;

impl RedisCommand {
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }

    /// `name`, or `container|name` for a subcommand.
    pub fn fullname(&self) -> String {
        match self.container {
            "" => self.name.to_string(),
            container => format!("{container}|{}", self.name),
        }
    }

    /// Its subcommands in Redis's table, by name.
    pub fn subcommands(&self) -> &'static [RedisCommand] {
        if !self.container.is_empty() {
            return &[];
        }
        let start = REDIS_COMMANDS.partition_point(|c| c.container < self.name);
        let end = REDIS_COMMANDS.partition_point(|c| c.container <= self.name);
        &REDIS_COMMANDS[start..end]
    }
}

/// Redis's top-level commands (no subcommands).
pub fn top_level() -> impl Iterator<Item = &'static RedisCommand> {
    REDIS_COMMANDS.iter().filter(|cmd| cmd.container.is_empty())
}

/// The command `(container, name)` ("" container: a top-level one), names
/// in any case.
pub fn lookup(container: &[u8], name: &[u8]) -> Option<&'static RedisCommand> {
    if container.len() > NAME_MAX || name.len() > NAME_MAX {
        return None;
    }
    let (mut c, mut n) = ([0u8; NAME_MAX], [0u8; NAME_MAX]);
    let (c, n) = (&mut c[..container.len()], &mut n[..name.len()]);
    c.copy_from_slice(container);
    n.copy_from_slice(name);
    c.make_ascii_lowercase();
    n.make_ascii_lowercase();
    let at =
        REDIS_COMMANDS.binary_search_by(|cmd| (cmd.container.as_bytes(), cmd.name.as_bytes()).cmp(&(&*c, &*n))).ok()?;
    Some(&REDIS_COMMANDS[at])
}

/// Redis's lookupCommandBySds: `name` or `container|name`.
pub fn lookup_fullname(fullname: &[u8]) -> Option<&'static RedisCommand> {
    let mut parts = fullname.split(|&b| b == b'|');
    let first = parts.next()?;
    match (parts.next(), parts.next()) {
        (None, _) => lookup(b"", first),
        (Some(sub), None) if lookup(b"", first).is_some() => lookup(first, sub),
        _ => None,
    }
}

/// Redis's lookupCommand: the command a call runs, the subcommand named by
/// its second argument when it is a container's (`args[0]` is the name).
pub fn lookup_call(args: &[Vec<u8>]) -> Option<&'static RedisCommand> {
    let top = lookup(b"", args.first()?)?;
    match args.get(1) {
        Some(sub) if !top.subcommands().is_empty() => lookup(top.name.as_bytes(), sub),
        _ => Some(top),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_finds_commands_and_subcommands() {
        assert!(REDIS_COMMANDS.windows(2).all(|w| (w[0].container, w[0].name) < (w[1].container, w[1].name)));
        assert_eq!(lookup(b"", b"GET").map(|c| c.name), Some("get"));
        assert_eq!(lookup_fullname(b"config|GET").map(|c| c.fullname()), Some("config|get".to_string()));
        assert!(lookup_fullname(b"get|key").is_none());
        assert!(lookup_fullname(b"config|get|key").is_none());
        let call: Vec<Vec<u8>> = vec![b"memory".to_vec(), b"usage".to_vec(), b"k".to_vec()];
        assert_eq!(lookup_call(&call).map(|c| c.fullname()), Some("memory|usage".to_string()));
        assert_eq!(lookup(b"", b"config").map(|c| c.subcommands().len()), Some(5));
    }
}
