//! LATENCY DOCTOR's report and LATENCY GRAPH's sparkline, as Redis 7.0
//! writes them (`createLatencyReport`, `latencyCommandGenSparkeline`,
//! `sparkline.c`), over packetstore's events (`latency.rs`).
//!
//! Invariant: read-only: a report changes nothing; its size is bounded by
//! the events' (at most `SAMPLES_MAX` samples each, a fixed set of names).

use std::fmt::Write as _;

use crate::apps::kv::kept::latency::{Series, SAMPLES_MAX};
use crate::apps::kv::state::KvServer;

/// Redis's `LATENCY_GRAPH_COLS` and the sparkline's rows.
const GRAPH_COLS: usize = 80;
const GRAPH_ROWS: usize = 4;
/// `/proc/self/smaps_rollup` is read up to this many bytes (THP advice).
const SMAPS_BYTES_MAX: u64 = 64 * 1024;

const DISABLED: &str = "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n";
const NONE_SEEN: &str = "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n";
const NO_ADVICE: &str = "\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n";

/// The advices, in Redis's order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Advice {
    SlowlogEnabled,
    SlowlogTuning,
    SlowlogInspect,
    Scheduler,
    LocalDisk,
    Ssd,
    DataWriteback,
    DiskContention,
    RelaxFsync,
    LargeObjects,
    DisableThp,
}

const SCHEDULER: &str = "- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n  1) Lower the system load.\n  2) Use a computer / VM just for Redis if you are running other software in the same system.\n  3) Check if you have a \"noisy neighbour\" problem.\n  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n";

fn advice_text(advice: Advice, threshold_ms: u64) -> String {
    let fixed = match advice {
        Advice::SlowlogEnabled => {
            return format!("- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than {}'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n", threshold_ms * 1000)
        }
        Advice::SlowlogTuning => {
            return format!("- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than {}'.\n", threshold_ms * 1000)
        }
        Advice::SlowlogInspect => "- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n",
        Advice::Scheduler => SCHEDULER,
        Advice::LocalDisk => "- It is strongly advised to use local disks for persistence, especially if you are using AOF. Remote disks provided by platform-as-a-service providers are known to be slow.\n",
        Advice::Ssd => "- SSD disks are able to reduce fsync latency, and total time needed for snapshotting and AOF log rewriting (resulting in smaller memory usage). With extremely high write load SSD disks can be a good option. However Redis should perform reasonably with high load using normal disks. Use this advice as a last resort.\n",
        Advice::DataWriteback => "- Mounting ext3/4 filesystems with data=writeback can provide a performance boost compared to data=ordered, however this mode of operation provides less guarantees, and sometimes it can happen that after a hard crash the AOF file will have a half-written command at the end and will require to be repaired before Redis restarts.\n",
        Advice::DiskContention => "- Try to lower the disk contention. This is often caused by other disk intensive processes running in the same computer (including other Redis instances).\n",
        Advice::RelaxFsync => "- Your fsync policy is set to 'always'. It is very hard to get good performances with such a setup, if possible try to relax the fsync policy to 'onesec'.\n",
        Advice::LargeObjects => "- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n",
        Advice::DisableThp => "- I detected a non zero amount of anonymous huge pages used by your process. This creates very serious latency events in different conditions, especially when Redis is persisting on disk. To disable THP support use the command 'echo never > /sys/kernel/mm/transparent_hugepage/enabled', make sure to also add it into /etc/rc.local so that the command will be executed again after a reboot. Note that even if you have already disabled THP, you still need to restart the Redis process to get rid of the huge pages already created.\n",
    };
    fixed.to_string()
}

/// Redis's `analyzeLatencyForEvent`: samples, average, mean deviation,
/// seconds since the oldest.
struct Analysis {
    samples: u64,
    avg: u64,
    mad: u64,
    period: u64,
}

fn analyze(series: &Series, now: u64) -> Analysis {
    let samples: Vec<_> = series.samples().collect();
    let count = samples.len() as u64;
    if count == 0 {
        return Analysis { samples: 0, avg: 0, mad: 0, period: 0 };
    }
    let avg = samples.iter().map(|s| s.latency).sum::<u64>() / count;
    let mad = samples.iter().map(|s| s.latency.abs_diff(avg)).sum::<u64>() / count;
    let oldest = samples.iter().map(|s| s.time).min().unwrap_or(now);
    Analysis { samples: count, avg, mad, period: now.saturating_sub(oldest).max(1) }
}

/// Whether the process holds anonymous huge pages (Redis's THP check).
fn holds_huge_pages() -> bool {
    use std::io::Read;
    let mut text = String::new();
    let Ok(file) = std::fs::File::open("/proc/self/smaps_rollup") else { return false };
    if file.take(SMAPS_BYTES_MAX).read_to_string(&mut text).is_err() {
        return false;
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("AnonHugePages:"))
        .any(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().is_ok_and(|kb| kb > 0))
}

impl KvServer {
    /// LATENCY DOCTOR's text.
    pub(in crate::apps::kv) fn latency_report(&self) -> String {
        let latency = &self.latency;
        if latency.events.is_empty() && latency.threshold_ms == 0 {
            return DISABLED.to_string();
        }
        let now = crate::store::db::now_ms() / 1000;
        let mut report = String::new();
        let mut advices = std::collections::BTreeSet::new();
        for (number, (event, series)) in latency.events.iter().enumerate() {
            if number == 0 {
                report.push_str("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n");
            }
            let a = analyze(series, now);
            let _ = writeln!(
                report,
                "{}. {event}: {} latency spikes (average {}ms, mean deviation {}ms, period {:.2} sec). Worst all time event {}ms.",
                number + 1,
                a.samples,
                a.avg,
                a.mad,
                a.period as f64 / a.samples.max(1) as f64,
                series.max
            );
            advices.extend(self.advices_for(event));
        }
        if holds_huge_pages() {
            advices.insert(Advice::DisableThp);
        }
        if latency.events.is_empty() && advices.is_empty() {
            report.push_str(NONE_SEEN);
        } else if !latency.events.is_empty() && advices.is_empty() {
            report.push_str(NO_ADVICE);
        } else {
            report.push_str("\nI have a few advices for you:\n\n");
            advices.iter().for_each(|&advice| report.push_str(&advice_text(advice, latency.threshold_ms)));
        }
        report
    }

    /// Redis's advices for an event packetstore samples. `checkpoint`,
    /// packetstore's own, gets Redis's disk advices (its phases write and
    /// sync the tree). Redis's `hz` advice is not given: packetstore's tick
    /// does not follow `hz`.
    fn advices_for(&self, event: &str) -> Vec<Advice> {
        match event {
            "command" => {
                let slower_than_us = self.slowlog.slower_than_us();
                let tuning = if slower_than_us < 0 {
                    Some(Advice::SlowlogEnabled)
                } else if slower_than_us as u64 / 1000 > self.latency.threshold_ms {
                    Some(Advice::SlowlogTuning)
                } else {
                    None
                };
                tuning.into_iter().chain([Advice::SlowlogInspect, Advice::LargeObjects]).collect()
            }
            "fast-command" => vec![Advice::Scheduler],
            // packetstore always syncs each batch: Redis's "always" policy.
            "aof-fsync-always" => vec![Advice::RelaxFsync],
            "expire-cycle" => vec![Advice::LargeObjects],
            "checkpoint" => vec![Advice::LocalDisk, Advice::Ssd, Advice::DiskContention, Advice::DataWriteback],
            _ => Vec::new(),
        }
    }
}

/// LATENCY GRAPH's text: a title, a rule, and the samples' sparkline,
/// labelled with how long ago each was.
pub(in crate::apps::kv) fn graph(event: &str, series: &Series) -> String {
    let now = crate::store::db::now_ms() / 1000;
    let samples: Vec<(f64, String)> =
        series.samples().map(|s| (s.latency as f64, ago(now.saturating_sub(s.time)))).collect();
    let low = samples.iter().map(|s| s.0 as u64).min().unwrap_or(0);
    let high = samples.iter().map(|s| s.0 as u64).max().unwrap_or(0);
    let mut out = format!("{event} - high {high} ms, low {low} ms (all time high {} ms)\n", series.max);
    out.push_str(&"-".repeat(GRAPH_COLS));
    out.push('\n');
    debug_assert!(samples.len() <= SAMPLES_MAX);
    for (n, chunk) in samples.chunks(GRAPH_COLS).enumerate() {
        if n != 0 {
            out.push('\n');
        }
        render_range(&mut out, chunk, low as f64, high as f64);
    }
    out
}

/// Seconds, minutes, hours or days ago, as Redis labels a sample.
fn ago(elapsed: u64) -> String {
    match elapsed {
        0..=59 => format!("{elapsed}s"),
        60..=3599 => format!("{}m", elapsed / 60),
        3600..=86399 => format!("{}h", elapsed / 3600),
        _ => format!("{}d", elapsed / 86400),
    }
}

/// `sparklineRenderRange` with SPARKLINE_FILL: `GRAPH_ROWS` rows of
/// `_o#|`, a blank row, then the labels written downwards.
fn render_range(out: &mut String, samples: &[(f64, String)], min: f64, max: f64) {
    const FILL: [char; 3] = ['_', 'o', '#'];
    let steps = (FILL.len() * GRAPH_ROWS) as i64;
    let relmax = if max - min == 0.0 { 1.0 } else { max - min };
    let step_of = |value: f64| (((value - min) * steps as f64) as i64 / relmax as i64).clamp(0, steps - 1);
    for row in 0..GRAPH_ROWS as i64 {
        let line: String = samples
            .iter()
            .map(|(value, _)| {
                let index = step_of(*value) - (GRAPH_ROWS as i64 - row - 1) * FILL.len() as i64;
                match index {
                    i if (0..FILL.len() as i64).contains(&i) => FILL[i as usize],
                    i if i >= FILL.len() as i64 => '|',
                    _ => ' ',
                }
            })
            .collect();
        out.push_str(&line);
        out.push('\n');
    }
    // Labels: one blank row, then a row per character of the longest.
    out.push_str(&" ".repeat(samples.len()));
    out.push('\n');
    let longest = samples.iter().map(|s| s.1.len()).max().unwrap_or(0);
    for at in 0..longest {
        let line: String = samples.iter().map(|s| s.1.as_bytes().get(at).map_or(' ', |&b| b as char)).collect();
        out.push_str(&line);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_say_how_long_ago() {
        assert_eq!([ago(5), ago(120), ago(7200), ago(200_000)], ["5s", "2m", "2h", "2d"]);
    }

    #[test]
    fn the_sparkline_fills_up_to_each_sample() {
        let mut out = String::new();
        render_range(&mut out, &[(0.0, "2s".into()), (100.0, "1s".into())], 0.0, 100.0);
        // The low sample is the bottom row's `_`, the high one a full
        // column topped by `#`; then a blank row and the labels.
        assert_eq!(out, " #\n |\n |\n_|\n  \n21\nss\n");
    }
}
