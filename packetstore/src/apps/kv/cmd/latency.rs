//! LATENCY (LATEST, HISTORY, RESET, GRAPH, DOCTOR, HISTOGRAM, HELP) and
//! what it reads (Redis 7.0's `latency.c`): the latency monitor's events,
//! sampled when they took at least `latency-monitor-threshold`
//! milliseconds (0: off), and each command's latency histogram, kept while
//! `latency-tracking` is yes (INFO latencystats reads its percentiles,
//! `latency-tracking-info-percentiles`).
//!
//! The events packetstore samples, named as Redis names the closest:
//! `command` and `fast-command` (a command's run, by its `fast` flag),
//! `expire-cycle` (the tick's active expiry), `aof-fsync-always` (a
//! batch's durability wait: from its commit's start until its sync is
//! done, the wait every write's reply of the batch had) and, packetstore's
//! own, `checkpoint` (the event loop's time in a commit that also ran a
//! checkpoint's phase).
//!
//! The events, histograms and settings (`Latency`) are in `kept/latency.rs`.
//!
//! Invariant: bounded: at most `SAMPLES_MAX` samples per event, one per
//! second (the worst of it), events only of the names above; a histogram
//! per command or Redis 7.0 subcommand (`SUBCOMMANDS`), each of fixed size;
//! at most `PERCENTILES_MAX` percentiles. With the threshold at 0 a
//! sample costs one compare.

use std::time::Duration;

use crate::apps::kv::kept::latency::{full_name, histogram_key, Sample};
use crate::apps::kv::kept::latency_histogram::Histogram;
use crate::apps::kv::state::{cmd, CommandEntry, CommandSlot, Ctx, KvServer};
use crate::store::db::StoreError;

#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("latency", -2, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Reads or resets the latency monitor's events and the commands' latency histograms.", KvServer::cmd_latency),
];

/// LATENCY's subcommands and their Redis 7.0 arities.
const ARITIES: &[(&str, i64)] =
    &[("doctor", 2), ("graph", 3), ("help", 2), ("histogram", -2), ("history", 3), ("latest", 2), ("reset", -2)];

const HELP: &[&str] = &[
    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "GRAPH <event>",
    "    Return an ASCII latency graph for the <event> class.",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "HISTOGRAM [COMMAND ...]",
    "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
    "    If no commands are specified then all histograms are replied.",
    "HELP",
    "    Print this help.",
];

impl KvServer {
    /// Samples the command `ctx` just ran (`command` or `fast-command`)
    /// and counts it in its histogram.
    pub(in crate::apps::kv) fn latency_note(&mut self, ctx: &Ctx<'_>, slot: CommandSlot, took: Duration) {
        let entry = self.command_index.entry(slot);
        let event = if entry.has_flag("fast") { "fast-command" } else { "command" };
        self.latency.sample(event, took.as_millis() as u64);
        // A parked command run again is the call it was (Redis counts a
        // blocking command once).
        if !self.latency.tracking || self.retrying_blocked {
            return;
        }
        let (sub, at) = match self.command_index.subcommands(slot) {
            None => ("", None),
            Some(_) if ctx.argc() < 2 => return,
            Some(subs) => {
                let asked = ctx.arg(1).to_ascii_lowercase();
                // Redis refuses an unknown subcommand before running it.
                let Some(at) = subs.iter().position(|s| s.as_bytes() == asked.as_slice()) else { return };
                (subs[at], Some(at))
            }
        };
        // Redis's resolution: microseconds, recorded in nanoseconds.
        let ns = took.as_micros() as u64 * 1000;
        let key = histogram_key(slot, at);
        self.latency.histograms.entry(key).or_insert_with(|| ((entry.name, sub), Histogram::default())).1.record(ns);
    }

    fn cmd_latency(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let sub = String::from_utf8_lossy(&ctx.arg(1)).to_ascii_lowercase();
        let Some(&(name, arity)) = ARITIES.iter().find(|(name, _)| *name == sub) else {
            ctx.error(&format!(
                "ERR unknown subcommand '{}'. Try LATENCY HELP.",
                String::from_utf8_lossy(&ctx.arg(1)).chars().take(128).collect::<String>()
            ));
            return Ok(());
        };
        let argc = ctx.argc() as i64;
        if (arity >= 0 && argc != arity) || argc < -arity {
            ctx.error(&format!("ERR wrong number of arguments for 'latency|{name}' command"));
            return Ok(());
        }
        match name {
            "latest" => self.latency_latest(ctx),
            "history" => self.latency_history(ctx),
            "reset" => self.latency_reset(ctx),
            "graph" => self.latency_graph(ctx),
            "doctor" => {
                let report = self.latency_report();
                ctx.enc().verbatim(ctx.out.bytes(), &report);
            }
            "histogram" => self.latency_histogram(ctx),
            _ => {
                ctx.array(HELP.len());
                HELP.iter().for_each(|line| ctx.enc().simple(ctx.out.bytes(), line));
            }
        }
        Ok(())
    }

    fn latency_latest(&mut self, ctx: &mut Ctx<'_>) {
        ctx.array(self.latency.events.len());
        for (name, series) in &self.latency.events {
            let last = series.latest();
            ctx.array(4);
            ctx.bulk(name.as_bytes());
            ctx.int(last.time as i64);
            ctx.int(last.latency as i64);
            ctx.int(series.max as i64);
        }
    }

    fn latency_history(&mut self, ctx: &mut Ctx<'_>) {
        let event = ctx.arg(2).into_owned();
        let Some(series) = self.latency.events.iter().find(|(name, _)| name.as_bytes() == event).map(|(_, s)| s) else {
            ctx.array(0);
            return;
        };
        let samples: Vec<Sample> = series.samples().collect();
        ctx.array(samples.len());
        for sample in samples {
            ctx.array(2);
            ctx.int(sample.time as i64);
            ctx.int(sample.latency as i64);
        }
    }

    fn latency_reset(&mut self, ctx: &mut Ctx<'_>) {
        let resets = if ctx.argc() == 2 {
            self.latency.reset(None)
        } else {
            (2..ctx.argc()).map(|i| self.latency.reset(Some(&ctx.arg(i)))).sum()
        };
        ctx.int(resets as i64);
    }

    fn latency_graph(&mut self, ctx: &mut Ctx<'_>) {
        let event = ctx.arg(2).into_owned();
        match self.latency.events.iter().find(|(name, _)| name.as_bytes() == event) {
            Some((name, series)) => {
                let graph = crate::apps::kv::cmd::latency_report::graph(name, series);
                ctx.enc().verbatim(ctx.out.bytes(), &graph);
            }
            None => ctx.error(&format!("ERR No samples available for event '{}'", String::from_utf8_lossy(&event))),
        }
    }

    /// LATENCY HISTOGRAM [command ...]: by command asked (a container:
    /// each of its subcommands), or every one with calls.
    fn latency_histogram(&mut self, ctx: &mut Ctx<'_>) {
        let mut shown: Vec<(String, &Histogram)> = Vec::new();
        if ctx.argc() == 2 {
            shown = self.latency.sorted_histograms();
        }
        for i in 2..ctx.argc() {
            let asked = String::from_utf8_lossy(&ctx.arg(i)).to_ascii_lowercase();
            let (name, sub) = asked.split_once('|').unwrap_or((&asked, ""));
            let Some((slot, _)) = self.command_index.find_slot(name.as_bytes()) else { continue };
            let subs = self.command_index.subcommands(slot).unwrap_or(&[]);
            if !sub.is_empty() && !subs.contains(&sub) {
                continue;
            }
            let wanted = |(_, s): &(usize, &&str)| sub.is_empty() || **s == sub;
            let keys = std::iter::once(None)
                .filter(|_| sub.is_empty())
                .chain(subs.iter().enumerate().filter(wanted).map(|(at, _)| Some(at)));
            for at in keys {
                if let Some((name, histogram)) = self.latency.histograms.get(&histogram_key(slot, at)) {
                    shown.push((full_name(*name), histogram));
                }
            }
        }
        let enc = ctx.enc();
        enc.map(ctx.out.bytes(), shown.len());
        for (name, histogram) in shown {
            enc.bulk(ctx.out.bytes(), name.as_bytes());
            enc.map(ctx.out.bytes(), 2);
            enc.bulk(ctx.out.bytes(), b"calls");
            enc.int(ctx.out.bytes(), histogram.total() as i64);
            enc.bulk(ctx.out.bytes(), b"histogram_usec");
            let rows = histogram.rows();
            enc.map(ctx.out.bytes(), rows.len());
            for (usec, count) in rows {
                enc.int(ctx.out.bytes(), usec as i64);
                enc.int(ctx.out.bytes(), count as i64);
            }
        }
    }
}
