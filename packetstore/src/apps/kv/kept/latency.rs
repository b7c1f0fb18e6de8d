//! What LATENCY keeps (`cmd/latency.rs` runs the command and notes each
//! command's run): the latency monitor's events, each a ring of samples
//! (`Series`), and each command's latency histogram (`latency_histogram.rs`),
//! with their settings (`Latency`); and the percentile setting's parsing
//! and printing, which CONFIG shares.
//!
//! Invariant: bounded: at most `SAMPLES_MAX` samples per event, one per
//! second (the worst of it); at most `PERCENTILES_MAX` percentiles; with
//! the threshold at 0 a sample costs one compare.

use std::collections::BTreeMap;

use crate::apps::kv::kept::latency_histogram::Histogram;

/// Redis's `LATENCY_TS_LEN`: samples kept per event.
pub(in crate::apps::kv) const SAMPLES_MAX: usize = 160;
/// Percentiles INFO latencystats may be asked for.
const PERCENTILES_MAX: usize = 64;
/// Redis's default `latency-tracking-info-percentiles`.
pub(in crate::apps::kv) const PERCENTILES_DEFAULT: &str = "50 99 99.9";

/// One sample: when (unix seconds) and how long (ms).
#[derive(Clone, Copy, Default)]
pub(in crate::apps::kv) struct Sample {
    pub(in crate::apps::kv) time: u64,
    pub(in crate::apps::kv) latency: u64,
}

/// An event's last `SAMPLES_MAX` seconds with a sample (a ring), and its
/// all-time worst.
pub(in crate::apps::kv) struct Series {
    samples: [Sample; SAMPLES_MAX],
    next: usize,
    pub(in crate::apps::kv) max: u64,
}

impl Series {
    /// The samples, oldest first.
    pub(in crate::apps::kv) fn samples(&self) -> impl Iterator<Item = Sample> + '_ {
        (0..SAMPLES_MAX).map(|j| self.samples[(self.next + j) % SAMPLES_MAX]).filter(|s| s.time != 0)
    }

    pub(in crate::apps::kv) fn latest(&self) -> Sample {
        self.samples[(self.next + SAMPLES_MAX - 1) % SAMPLES_MAX]
    }

    /// Redis's `latencyAddSample`: one sample per second, the worst.
    fn add(&mut self, now: u64, latency: u64) {
        self.max = self.max.max(latency);
        let prev = (self.next + SAMPLES_MAX - 1) % SAMPLES_MAX;
        if self.samples[prev].time == now {
            self.samples[prev].latency = self.samples[prev].latency.max(latency);
            return;
        }
        self.samples[self.next] = Sample { time: now, latency };
        self.next = (self.next + 1) % SAMPLES_MAX;
    }
}

/// Redis 7.0's subcommands of each container command (its
/// `src/commands/*.json`), and CLIENT NO-TOUCH, which packetstore has too:
/// a histogram is kept per `container|subcommand`, as Redis keeps it.
#[rustfmt::skip]
pub(in crate::apps::kv) fn subcommands_of(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "acl" => &["cat", "deluser", "dryrun", "genpass", "getuser", "help", "list", "load", "log", "save", "setuser", "users", "whoami"],
        "client" => &["caching", "getname", "getredir", "help", "id", "info", "kill", "list", "no-evict", "no-touch", "pause", "reply", "setname", "tracking", "trackinginfo", "unblock", "unpause"],
        "cluster" => &["addslots", "addslotsrange", "bumpepoch", "count-failure-reports", "countkeysinslot", "delslots", "delslotsrange", "failover", "flushslots", "forget", "getkeysinslot", "help", "info", "keyslot", "links", "meet", "myid", "nodes", "replicas", "replicate", "reset", "saveconfig", "set-config-epoch", "setslot", "shards", "slaves", "slots"],
        "command" => &["count", "docs", "getkeys", "getkeysandflags", "help", "info", "list"],
        "config" => &["get", "help", "resetstat", "rewrite", "set"],
        "function" => &["delete", "dump", "flush", "help", "kill", "list", "load", "restore", "stats"],
        "latency" => &["doctor", "graph", "help", "histogram", "history", "latest", "reset"],
        "memory" => &["doctor", "help", "malloc-stats", "purge", "stats", "usage"],
        "module" => &["help", "list", "load", "loadex", "unload"],
        "object" => &["encoding", "freq", "help", "idletime", "refcount"],
        "pubsub" => &["channels", "help", "numpat", "numsub", "shardchannels", "shardnumsub"],
        "script" => &["debug", "exists", "flush", "help", "kill", "load"],
        "slowlog" => &["get", "help", "len", "reset"],
        "xgroup" => &["create", "createconsumer", "delconsumer", "destroy", "help", "setid"],
        "xinfo" => &["consumers", "groups", "help", "stream"],
        _ => return None,
    })
}

/// The monitor's events, the commands' histograms, and their settings.
pub(in crate::apps::kv) struct Latency {
    pub(in crate::apps::kv) events: BTreeMap<&'static str, Series>,
    /// `latency-monitor-threshold` (ms; 0: off).
    pub(in crate::apps::kv) threshold_ms: u64,
    /// `latency-tracking`.
    pub(in crate::apps::kv) tracking: bool,
    /// `latency-tracking-info-percentiles`.
    percentiles: Vec<f64>,
    /// By command and subcommand ("" for none), keyed by `histogram_key`
    /// (a number: no name is hashed per command).
    pub(in crate::apps::kv) histograms: crate::util::idhash::IdHashMap<u32, ((&'static str, &'static str), Histogram)>,
}

impl Default for Latency {
    fn default() -> Self {
        Latency {
            events: BTreeMap::new(),
            threshold_ms: 0,
            tracking: true,
            percentiles: parse_percentiles(PERCENTILES_DEFAULT).expect("valid"),
            histograms: Default::default(),
        }
    }
}

/// `latency-tracking-info-percentiles`' value: numbers within 0..=100
/// ("" for none); Err: Redis's reason.
pub(in crate::apps::kv) fn parse_percentiles(value: &str) -> Result<Vec<f64>, String> {
    let words: Vec<&str> = value.split_ascii_whitespace().collect();
    if words.len() > PERCENTILES_MAX {
        return Err(format!("latency-tracking-info-percentiles takes at most {PERCENTILES_MAX} percentiles"));
    }
    words
        .iter()
        .map(|word| match word.parse::<f64>() {
            Ok(p) if p.is_nan() => Err("Invalid latency-tracking-info-percentiles parameters".to_string()),
            Ok(p) if !(0.0..=100.0).contains(&p) => {
                Err("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]".to_string())
            }
            Ok(p) => Ok(p),
            Err(_) => Err("Invalid latency-tracking-info-percentiles parameters".to_string()),
        })
        .collect()
}

/// A number as Redis prints a percentile: `%f`, trailing zeros cut.
pub(in crate::apps::kv) fn percentile_text(value: f64) -> String {
    let text = format!("{value:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

impl Latency {
    /// Redis's `latencyAddSampleIfNeeded`.
    pub(in crate::apps::kv) fn sample(&mut self, event: &'static str, ms: u64) {
        if self.threshold_ms == 0 || ms < self.threshold_ms {
            return;
        }
        let now = crate::store::db::now_ms() / 1000;
        let series = self.events.entry(event).or_insert_with(|| Series {
            samples: [Sample::default(); SAMPLES_MAX],
            next: 0,
            max: 0,
        });
        series.add(now, ms);
    }

    /// Whether the monitor is on: a caller whose measure costs something
    /// (a clock read) skips it otherwise.
    pub(in crate::apps::kv) fn monitoring(&self) -> bool {
        self.threshold_ms > 0
    }

    pub(in crate::apps::kv) fn set_threshold(&mut self, value: &str) {
        self.threshold_ms = value.parse().unwrap_or(0);
    }

    pub(in crate::apps::kv) fn set_tracking(&mut self, value: &str) {
        self.tracking = value == "yes";
    }

    pub(in crate::apps::kv) fn set_percentiles(&mut self, value: &str) {
        self.percentiles = parse_percentiles(value).unwrap_or_default();
    }

    /// CONFIG RESETSTAT: the histograms go (the events stay, as in Redis).
    pub(in crate::apps::kv) fn reset_histograms(&mut self) {
        self.histograms.clear();
    }

    /// Redis's `latencyResetEvent`: how many events went.
    pub(in crate::apps::kv) fn reset(&mut self, event: Option<&[u8]>) -> usize {
        let before = self.events.len();
        self.events.retain(|name, _| event.is_some_and(|e| !e.eq_ignore_ascii_case(name.as_bytes())));
        before - self.events.len()
    }

    /// The histograms, by full name (`client|id`), sorted.
    pub(in crate::apps::kv) fn sorted_histograms(&self) -> Vec<(String, &Histogram)> {
        let mut all: Vec<_> = self.histograms.values().map(|(name, h)| (full_name(*name), h)).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// INFO latencystats: `latency_percentiles_usec_<name>:p50=...`.
    pub(in crate::apps::kv) fn info(&self, text: &mut String) {
        text.push_str("# Latencystats\r\n");
        if !self.tracking {
            return;
        }
        for (name, histogram) in self.sorted_histograms() {
            let values: Vec<String> = self
                .percentiles
                .iter()
                .map(|&p| format!("p{}={:.3}", percentile_text(p), histogram.percentile(p) as f64 / 1000.0))
                .collect();
            text.push_str(&format!("latency_percentiles_usec_{name}:{}\r\n", values.join(",")));
        }
    }
}

/// A histogram's key: the command's slot (`CommandIndex`) and its
/// subcommand's position in `subcommands_of` plus one (0: none).
pub(in crate::apps::kv) fn histogram_key(slot: u16, sub: Option<usize>) -> u32 {
    assert!(sub.is_none_or(|sub| sub < 255), "a subcommand past the key's byte");
    u32::from(slot) << 8 | sub.map_or(0, |sub| sub as u32 + 1)
}

/// `name|sub`, or `name`.
pub(in crate::apps::kv) fn full_name((name, sub): (&str, &str)) -> String {
    if sub.is_empty() {
        name.to_string()
    } else {
        format!("{name}|{sub}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_keeps_one_sample_a_second_and_at_most_its_length() {
        let mut series = Series { samples: [Sample::default(); SAMPLES_MAX], next: 0, max: 0 };
        series.add(100, 5);
        series.add(100, 9);
        series.add(100, 7);
        assert_eq!(series.samples().map(|s| (s.time, s.latency)).collect::<Vec<_>>(), [(100, 9)]);
        for t in 101..101 + SAMPLES_MAX as u64 {
            series.add(t, 1);
        }
        assert_eq!(series.samples().count(), SAMPLES_MAX);
        assert_eq!(series.samples().next().map(|s| s.time), Some(101));
        assert_eq!(series.max, 9);
        assert_eq!(series.latest().time, 100 + SAMPLES_MAX as u64);
    }

    #[test]
    fn the_threshold_decides_and_reset_is_case_insensitive() {
        let mut latency = Latency::default();
        latency.sample("command", 1000);
        assert!(latency.events.is_empty(), "threshold 0 is off");
        latency.set_threshold("20");
        latency.sample("command", 19);
        assert!(latency.events.is_empty());
        latency.sample("command", 20);
        latency.sample("expire-cycle", 50);
        assert_eq!(latency.reset(Some(b"no-such-event")), 0);
        assert_eq!(latency.reset(Some(b"COMMAND")), 1);
        assert_eq!(latency.reset(None), 1);
    }

    #[test]
    fn percentiles_parse_and_print_as_redis_does() {
        assert_eq!(parse_percentiles("0.0 50.0 100.0"), Ok(vec![0.0, 50.0, 100.0]));
        assert_eq!(parse_percentiles(""), Ok(vec![]));
        assert!(parse_percentiles("101").is_err());
        assert!(parse_percentiles("abc").is_err());
        let texts: Vec<String> = [50.0, 99.9, 0.0, 100.0].iter().map(|&p| percentile_text(p)).collect();
        assert_eq!(texts, ["50", "99.9", "0", "100"]);
    }
}
