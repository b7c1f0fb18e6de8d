//! INFO across the shards of a sharded server's main port (issue 37): one
//! text from every shard's INFO, as one Redis would answer. Most of it is
//! the first part's (the server, memory, persistence: alike on every
//! shard, or the process's already: connected_clients, tracking); the
//! per-command and per-error lines and the keyspace are every shard's
//! merged by name, their counts added; the Stats counters are added.
//!
//! Owns: only the merge of INFO texts. Pure functions.
//!
//! Invariant: a merged text has the first part's sections in its order,
//! each line once; a count is the sum over the parts that have the line.

use std::collections::BTreeMap;

/// Sections whose lines are every shard's, merged by name.
const MERGED_BY_NAME: [&str; 4] = ["commandstats", "errorstats", "keyspace", "latencystats"];

/// Lines of the Stats and Clients sections that are the process's sum of
/// every shard's. Others (connected_clients, blocked_clients, the tracking
/// figures) are summed by each shard already, through the exchange, or are
/// alike on every shard.
const SUMMED: [&str; 39] = [
    "total_commands_processed",
    "instantaneous_ops_per_sec",
    "total_http_requests",
    "writes",
    "expired_keys",
    "evicted_keys",
    "refused_full",
    "errors",
    "total_error_replies",
    "keyspace_hits",
    "keyspace_misses",
    "bytes_sent_zero_copy",
    "bytes_sent_copied",
    "pubsub_channels",
    "pubsub_patterns",
    "pubsub_shardchannels",
    "pubsub_mailbox_disconnections",
    "command_panics",
    "script_pauses",
    "total_connections_received",
    "rejected_connections",
    "total_net_input_bytes",
    "ring_enobufs",
    "clients_paused_for_output",
    "client_output_buffer_limit_disconnections",
    "coalesced_streams",
    "receives_limited",
    "cross_protocol_closed",
    // Persistence: each shard flushes, fences and keeps its own values.
    "fences",
    "lines_flushed",
    "value_bytes_in_place",
    "value_bytes_copied",
    "values_corrupt",
    "scrub_rate_bytes",
    "scrub_bytes",
    "scrub_values",
    "scrub_corrupt",
    "scrub_unchecked_values",
    "scrub_errors",
];

/// Lines that are the smallest part's: a scrub pass of the data set is
/// done when every shard's is.
const LEAST: [&str; 1] = ["scrub_passes"];

/// One section: its title line's name and its `name:value` lines.
struct Section<'a> {
    title: &'a str,
    lines: Vec<(&'a str, &'a str)>,
}

fn sections(text: &str) -> Vec<Section<'_>> {
    let mut out: Vec<Section<'_>> = Vec::new();
    for line in text.split("\r\n").filter(|line| !line.is_empty()) {
        if let Some(title) = line.strip_prefix("# ") {
            out.push(Section { title, lines: Vec::new() });
        } else if let (Some(section), Some((name, value))) = (out.last_mut(), line.split_once(':')) {
            section.lines.push((name, value));
        }
    }
    out
}

/// `a=1,b=2.5,...` fields of every part's line, numbers added; a
/// usec_per_call is worked out again, a keyspace's avg_ttl is the average
/// over every shard's keys with an expiry, percentiles (p50=...) are the
/// largest part's.
fn merge_fields(values: &[&str]) -> String {
    let mut fields: Vec<(String, f64, bool)> = Vec::new();
    // avg_ttl times expires, added over the parts.
    let mut ttl_total = 0.0;
    for value in values {
        let field_of = |wanted: &str| {
            value.split(',').find_map(|f| f.split_once('=').filter(|(n, _)| *n == wanted)?.1.parse::<f64>().ok())
        };
        ttl_total += field_of("avg_ttl").unwrap_or(0.0) * field_of("expires").unwrap_or(0.0);
        for field in value.split(',') {
            let Some((name, number)) = field.split_once('=') else { continue };
            let number: f64 = number.parse().unwrap_or(0.0);
            let largest = name.starts_with('p');
            match fields.iter_mut().find(|(n, _, _)| n == name) {
                Some((_, total, _)) if largest => *total = total.max(number),
                Some((_, total, _)) => *total += number,
                None => fields.push((name.to_owned(), number, number.fract() != 0.0)),
            }
        }
    }
    let get = |name: &str| fields.iter().find(|(n, _, _)| n == name).map(|(_, v, _)| *v);
    let per_call = match (get("usec"), get("calls")) {
        (Some(usec), Some(calls)) if calls > 0.0 => Some(usec / calls),
        (Some(_), Some(_)) => Some(0.0),
        _ => None,
    };
    let shown: Vec<String> = fields
        .iter()
        .map(|(name, value, fractional)| match (name.as_str(), per_call) {
            ("usec_per_call", Some(per_call)) => format!("{name}={per_call:.2}"),
            ("avg_ttl", _) => {
                let expires = get("expires").unwrap_or(0.0);
                format!("{name}={}", if expires > 0.0 { (ttl_total / expires) as i64 } else { 0 })
            }
            _ if *fractional || name.starts_with('p') => format!("{name}={value:.3}"),
            _ => format!("{name}={}", *value as i64),
        })
        .collect();
    shown.join(",")
}

/// The INFO texts of every shard (the first is the base) as one.
pub fn merge_info(texts: &[&str]) -> String {
    let parts: Vec<Vec<Section<'_>>> = texts.iter().map(|text| sections(text)).collect();
    let Some(base) = parts.first() else { return String::new() };
    let mut out = String::new();
    for (index, section) in base.iter().enumerate() {
        if index > 0 {
            out.push_str("\r\n");
        }
        out.push_str("# ");
        out.push_str(section.title);
        out.push_str("\r\n");
        let same = |other: &&Section<'_>| other.title == section.title;
        let all: Vec<&Section<'_>> = parts.iter().filter_map(|p| p.iter().find(|s| same(s))).collect();
        if MERGED_BY_NAME.contains(&section.title.to_ascii_lowercase().as_str()) {
            let mut by_name: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for part in &all {
                for (name, value) in &part.lines {
                    by_name.entry(name).or_default().push(value);
                }
            }
            for (name, values) in by_name {
                out.push_str(&format!("{name}:{}\r\n", merge_fields(&values)));
            }
            continue;
        }
        for (name, value) in &section.lines {
            let numbers = || {
                let lines = all.iter().filter_map(|part| part.lines.iter().find(|(n, _)| n == name));
                lines.map(|(_, v)| v.parse::<i64>().unwrap_or(0))
            };
            let folded = if SUMMED.contains(name) {
                Some(numbers().sum::<i64>())
            } else if LEAST.contains(name) {
                numbers().min()
            } else {
                None
            };
            match folded {
                Some(total) => out.push_str(&format!("{name}:{total}\r\n")),
                None => out.push_str(&format!("{name}:{value}\r\n")),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_by_name_and_the_rest_is_the_first_parts() {
        let first = "# Server\r\ntcp_port:6379\r\n\r\n# Stats\r\ntotal_commands_processed:5\r\nturn_received_bytes_max:100\r\n\r\n# Commandstats\r\ncmdstat_get:calls=2,usec=10,usec_per_call=5.00,rejected_calls=0,failed_calls=0\r\n\r\n# Keyspace\r\ndb0:keys=3,expires=1,avg_ttl=1000\r\n";
        let second = "# Server\r\ntcp_port:6379\r\n\r\n# Stats\r\ntotal_commands_processed:7\r\nturn_received_bytes_max:900\r\n\r\n# Commandstats\r\ncmdstat_get:calls=3,usec=20,usec_per_call=6.67,rejected_calls=1,failed_calls=0\r\ncmdstat_set:calls=1,usec=4,usec_per_call=4.00,rejected_calls=0,failed_calls=0\r\n\r\n# Keyspace\r\ndb0:keys=4,expires=3,avg_ttl=2000\r\ndb1:keys=1,expires=0,avg_ttl=0\r\n";
        let merged = merge_info(&[first, second]);
        assert!(merged.starts_with("# Server\r\ntcp_port:6379\r\n\r\n# Stats\r\n"), "{merged}");
        assert!(merged.contains("total_commands_processed:12\r\n"), "{merged}");
        // Not a counter: the first part's.
        assert!(merged.contains("turn_received_bytes_max:100\r\n"), "{merged}");
        assert!(
            merged.contains("cmdstat_get:calls=5,usec=30,usec_per_call=6.00,rejected_calls=1,failed_calls=0\r\n"),
            "{merged}"
        );
        assert!(merged.contains("cmdstat_set:calls=1,"), "{merged}");
        // avg_ttl: (1000 * 1 + 2000 * 3) / 4, not added.
        assert!(merged.contains("db0:keys=7,expires=4,avg_ttl=1750\r\ndb1:keys=1,"), "{merged}");
    }

    #[test]
    fn scrub_figures_are_the_data_sets() {
        let first = "# Persistence\r\nscrub_values:10\r\nscrub_passes:3\r\nscrub_corrupt:1\r\nscrub_rate_bytes:100\r\n";
        let second = "# Persistence\r\nscrub_values:7\r\nscrub_passes:2\r\nscrub_corrupt:0\r\nscrub_rate_bytes:100\r\n";
        let merged = merge_info(&[first, second]);
        assert!(merged.contains("scrub_values:17\r\n"), "{merged}");
        assert!(merged.contains("scrub_passes:2\r\n"), "a pass of the data set is every shard's: {merged}");
        assert!(merged.contains("scrub_corrupt:1\r\n"), "{merged}");
        assert!(merged.contains("scrub_rate_bytes:200\r\n"), "each shard scrubs its share: {merged}");
    }
}
