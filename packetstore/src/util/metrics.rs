//! Metrics: lock-free histograms and the Prometheus text exposition
//! (format 0.0.4) that `GET /metrics` serves.
//!
//! Owns: `Histogram` (power-of-two buckets of a u64 quantity: nanoseconds,
//! or a count) and `Exposition` (writes families and samples as text).
//! Invariant: a histogram's buckets, sum and count only grow; each bucket
//! counts the observations at most its bound, so the exposition's
//! cumulative buckets never decrease and the last equals the count.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// Buckets: values up to 2^0, 2^1, ..., 2^(BUCKETS-2), and the rest.
pub const BUCKETS: usize = 40;

/// A histogram of u64 observations in power-of-two buckets.
#[derive(Debug)]
pub struct Histogram {
    buckets: [AtomicU64; BUCKETS],
    sum: AtomicU64,
    count: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }
}

impl Histogram {
    pub fn observe(&self, value: u64) {
        // The first bucket whose bound 2^i is at least the value.
        let index = if value <= 1 { 0 } else { (64 - (value - 1).leading_zeros()) as usize };
        self.buckets[index.min(BUCKETS - 1)].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(value, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    pub fn sum(&self) -> u64 {
        self.sum.load(Ordering::Relaxed)
    }

    /// Observations at most 2^i, for each i (cumulative).
    fn cumulative(&self) -> [u64; BUCKETS] {
        let mut total = 0;
        std::array::from_fn(|i| {
            total += self.buckets[i].load(Ordering::Relaxed);
            total
        })
    }
}

/// The text exposition being written.
#[derive(Default)]
pub struct Exposition {
    pub text: String,
}

/// A label set: (name, value) pairs.
pub type Labels<'a> = &'a [(&'a str, &'a str)];

impl Exposition {
    /// Starts a family: its help and type lines.
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    pub fn sample(&mut self, name: &str, labels: Labels<'_>, value: f64) {
        self.text.push_str(name);
        write_labels(&mut self.text, labels, None);
        let _ = writeln!(self.text, " {value}");
    }

    /// A family of one sample.
    pub fn single(&mut self, name: &str, kind: &str, help: &str, value: f64) {
        self.family(name, kind, help);
        self.sample(name, &[], value);
    }

    /// A histogram family; observations are multiplied by `scale` (1e-9 for
    /// nanoseconds exposed in seconds) and buckets from `first` (a power of
    /// two) to `last` are shown, every `step`-th.
    #[allow(clippy::too_many_arguments)]
    pub fn histogram(
        &mut self,
        name: &str,
        help: &str,
        labels: Labels<'_>,
        histogram: &Histogram,
        scale: f64,
        first: u32,
        last: u32,
        step: usize,
    ) {
        if !self.text.contains(&format!("# TYPE {name} ")) {
            self.family(name, "histogram", help);
        }
        let cumulative = histogram.cumulative();
        for power in (first..=last.min(BUCKETS as u32 - 2)).step_by(step) {
            let bound = format!("{}", (1u64 << power) as f64 * scale);
            let _ = write!(self.text, "{name}_bucket");
            write_labels(&mut self.text, labels, Some(&bound));
            let _ = writeln!(self.text, " {}", cumulative[power as usize]);
        }
        let _ = write!(self.text, "{name}_bucket");
        write_labels(&mut self.text, labels, Some("+Inf"));
        let _ = writeln!(self.text, " {}", cumulative[BUCKETS - 1]);
        let _ = write!(self.text, "{name}_sum");
        write_labels(&mut self.text, labels, None);
        let _ = writeln!(self.text, " {}", histogram.sum() as f64 * scale);
        let _ = write!(self.text, "{name}_count");
        write_labels(&mut self.text, labels, None);
        let _ = writeln!(self.text, " {}", histogram.count());
    }
}

fn write_labels(text: &mut String, labels: Labels<'_>, le: Option<&str>) {
    if labels.is_empty() && le.is_none() {
        return;
    }
    text.push('{');
    let mut first = true;
    for (name, value) in labels.iter().copied().chain(le.map(|le| ("le", le))) {
        if !first {
            text.push(',');
        }
        first = false;
        let _ = write!(text, "{name}=\"");
        for c in value.chars() {
            match c {
                '\\' => text.push_str("\\\\"),
                '"' => text.push_str("\\\""),
                '\n' => text.push_str("\\n"),
                c => text.push(c),
            }
        }
        text.push('"');
    }
    text.push('}');
}

/// How `merge_expositions` folds a family's samples that have the same
/// name and labels in several parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fold {
    /// Added: counters, histograms, and gauges of a part each (keys,
    /// buffers, connections).
    Sum,
    /// The largest: a gauge of the whole that each part has its view of
    /// (a height, a ratio, whether anything runs).
    Max,
    /// The first part's: alike in every part (a version, a size).
    First,
}

/// A family being merged: its HELP and TYPE lines, its samples in order
/// (series, value).
struct Family {
    name: String,
    heads: Vec<String>,
    samples: Vec<(String, f64)>,
}

/// The expositions of several parts (the shards of one server) as one:
/// each family once, in the first part's order (then a later part's new
/// families), its samples folded by name and labels as `fold(family)`
/// says. Lines that are not samples or `# HELP`/`# TYPE` are dropped.
pub fn merge_expositions(parts: &[&str], fold: impl Fn(&str) -> Fold) -> String {
    let mut families: Vec<Family> = Vec::new();
    let mut index = std::collections::HashMap::new();
    for (part, text) in parts.iter().enumerate() {
        let mut current: Option<usize> = None;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ").or_else(|| line.strip_prefix("# TYPE ")) {
                let family = rest.split(' ').next().unwrap_or_default().to_owned();
                let at = *index.entry(family.clone()).or_insert_with(|| {
                    families.push(Family { name: family.clone(), heads: Vec::new(), samples: Vec::new() });
                    families.len() - 1
                });
                if part == 0 || !families[at].heads.iter().any(|l| l == line) {
                    families[at].heads.push(line.to_owned());
                }
                current = Some(at);
                continue;
            }
            let (Some(at), Some((series, value))) = (current, line.rsplit_once(' ')) else { continue };
            let Ok(value) = value.parse::<f64>() else { continue };
            let how = fold(&families[at].name);
            let samples = &mut families[at].samples;
            match samples.iter_mut().find(|(s, _)| s == series) {
                Some((_, total)) => match how {
                    Fold::Sum => *total += value,
                    Fold::Max => *total = total.max(value),
                    Fold::First => {}
                },
                None => samples.push((series.to_owned(), value)),
            }
        }
    }
    let mut text = String::new();
    for Family { heads, samples, .. } in &families {
        for head in heads {
            text.push_str(head);
            text.push('\n');
        }
        for (series, value) in samples {
            let _ = writeln!(text, "{series} {value}");
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expositions_merge_by_series() {
        let a = "# HELP up Up.\n# TYPE up gauge\nup{v=\"1\"} 1\n# HELP req_total Requests.\n# TYPE req_total counter\n\
                 req_total{kind=\"a\"} 2\nreq_total{kind=\"b\"} 0\n# HELP h Height.\n# TYPE h gauge\nh 3\n";
        let b = "# HELP up Up.\n# TYPE up gauge\nup{v=\"1\"} 1\n# HELP req_total Requests.\n# TYPE req_total counter\n\
                 req_total{kind=\"a\"} 5\nreq_total{kind=\"c\"} 1.5\n# HELP h Height.\n# TYPE h gauge\nh 4\n";
        let fold = |family: &str| match family {
            "up" => Fold::First,
            "h" => Fold::Max,
            _ => Fold::Sum,
        };
        assert_eq!(
            merge_expositions(&[a, b], fold),
            "# HELP up Up.\n# TYPE up gauge\nup{v=\"1\"} 1\n# HELP req_total Requests.\n# TYPE req_total counter\n\
             req_total{kind=\"a\"} 7\nreq_total{kind=\"b\"} 0\nreq_total{kind=\"c\"} 1.5\n# HELP h Height.\n\
             # TYPE h gauge\nh 4\n"
        );
    }

    #[test]
    fn buckets_are_cumulative_and_bounded_by_powers_of_two() {
        let h = Histogram::default();
        for value in [0, 1, 2, 3, 4, 5, 1000, u64::MAX] {
            h.observe(value);
        }
        let c = h.cumulative();
        assert_eq!(c[0], 2, "0 and 1 are at most 2^0");
        assert_eq!(c[1], 3, "2");
        assert_eq!(c[2], 5, "3 and 4");
        assert_eq!(c[3], 6, "5");
        assert_eq!(c[10], 7, "1000 <= 1024");
        assert_eq!(c[BUCKETS - 1], 8, "everything");
        assert!(c.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn exposition_text() {
        let h = Histogram::default();
        h.observe(3);
        let mut e = Exposition::default();
        e.single("up", "gauge", "Up.", 1.0);
        e.family("req_total", "counter", "Requests.");
        e.sample("req_total", &[("kind", "a\"b")], 2.0);
        e.histogram("lat", "Latency.", &[("d", "x")], &h, 1.0, 0, 2, 1);
        assert_eq!(
            e.text,
            "# HELP up Up.\n# TYPE up gauge\nup 1\n# HELP req_total Requests.\n# TYPE req_total counter\n\
             req_total{kind=\"a\\\"b\"} 2\n# HELP lat Latency.\n# TYPE lat histogram\n\
             lat_bucket{d=\"x\",le=\"1\"} 0\nlat_bucket{d=\"x\",le=\"2\"} 0\nlat_bucket{d=\"x\",le=\"4\"} 1\n\
             lat_bucket{d=\"x\",le=\"+Inf\"} 1\nlat_sum{d=\"x\"} 3\nlat_count{d=\"x\"} 1\n"
        );
    }
}
