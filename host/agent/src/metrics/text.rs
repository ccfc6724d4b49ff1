//! The Prometheus text exposition format, version 0.0.4, written by hand: a scrape is a
//! handful of families, so a client library would cost more build time than it saves.
//!
//! Each metric kind keeps its values in atomics (or a short-held lock for labelled
//! families), so recording never waits on a scrape for long.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The `Content-Type` of a scrape answer in this format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A monotonically increasing count.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds one.
    pub fn inc(&self) {
        self.add(1);
    }

    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// The count so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A value that goes up and down, stored as the bits of an `f64`.
#[derive(Debug, Default)]
pub struct Gauge(AtomicU64);

impl Gauge {
    /// Sets the value.
    pub fn set(&self, value: f64) {
        self.0.store(value.to_bits(), Ordering::Relaxed);
    }

    /// The value.
    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

/// Observations counted into fixed buckets (upper bounds, ascending), with their sum.
#[derive(Debug)]
pub struct Histogram {
    /// Upper bounds, ascending; `+Inf` is implied after the last.
    bounds: &'static [f64],
    /// Non-cumulative count per bound, plus one for `+Inf`; made cumulative when written.
    counts: Box<[AtomicU64]>,
    /// Sum of observations, as `f64` bits (updated by compare-and-swap).
    sum: AtomicU64,
}

impl Histogram {
    /// An empty histogram with these bucket upper bounds (ascending).
    pub fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0f64.to_bits()),
        }
    }

    /// Records one observation (a value equal to a bound counts in that bound's bucket,
    /// as Prometheus' `le` says). A NaN counts only in `+Inf`, and poisons the sum as in
    /// Prometheus' own clients.
    pub fn observe(&self, value: f64) {
        let index = self.bounds.iter().position(|bound| value <= *bound).unwrap_or(self.bounds.len());
        self.counts[index].fetch_add(1, Ordering::Relaxed);
        let mut current = self.sum.load(Ordering::Relaxed);
        loop {
            let next = (f64::from_bits(current) + value).to_bits();
            match self.sum.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => break,
                Err(actual) => current = actual,
            }
        }
    }

    /// Number of observations.
    pub fn count(&self) -> u64 {
        self.counts.iter().map(|count| count.load(Ordering::Relaxed)).sum()
    }

    /// Sum of observations.
    pub fn sum(&self) -> f64 {
        f64::from_bits(self.sum.load(Ordering::Relaxed))
    }

    /// (upper bound, cumulative count) per bucket, `+Inf` last.
    pub fn cumulative(&self) -> Vec<(f64, u64)> {
        let mut total = 0;
        self.bounds
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY))
            .zip(self.counts.iter())
            .map(|(bound, count)| {
                total += count.load(Ordering::Relaxed);
                (bound, total)
            })
            .collect()
    }
}

/// Metrics of one kind told apart by label values (a Prometheus "vector"). The label
/// names are fixed at creation; series appear on first use and stay.
#[derive(Debug)]
pub struct Family<T> {
    label_names: &'static [&'static str],
    /// Label values (in `label_names` order) -> metric; a BTreeMap so output is sorted.
    series: Mutex<BTreeMap<Vec<String>, std::sync::Arc<T>>>,
    make: fn() -> T,
}

impl<T> Family<T> {
    /// A family with these label names; `make` builds a new series.
    pub fn new(label_names: &'static [&'static str], make: fn() -> T) -> Self {
        Family { label_names, series: Mutex::new(BTreeMap::new()), make }
    }

    /// The series with these label values (one per label name, in order), created on
    /// first use. Values beyond the names are ignored; missing ones are empty.
    pub fn with(&self, values: &[&str]) -> std::sync::Arc<T> {
        let key: Vec<String> =
            (0..self.label_names.len()).map(|i| values.get(i).copied().unwrap_or_default().to_owned()).collect();
        let mut series = self.lock();
        std::sync::Arc::clone(series.entry(key).or_insert_with(|| std::sync::Arc::new((self.make)())))
    }

    /// Every series, sorted by label values.
    pub fn series(&self) -> Vec<(Vec<String>, std::sync::Arc<T>)> {
        self.lock().iter().map(|(k, v)| (k.clone(), std::sync::Arc::clone(v))).collect()
    }

    /// The label names.
    pub fn label_names(&self) -> &'static [&'static str] {
        self.label_names
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<Vec<String>, std::sync::Arc<T>>> {
        // Entries are only ever inserted whole: a panic elsewhere leaves the map usable.
        self.series.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Writes the `# HELP` and `# TYPE` lines of a family.
pub fn write_header(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {}", escape_help(help));
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// Writes one sample line: `name{labels} value`.
pub fn write_sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: f64) {
    out.push_str(name);
    write_labels(out, labels);
    out.push(' ');
    out.push_str(&format_value(value));
    out.push('\n');
}

/// Writes a whole counter family.
pub fn write_counter_family(out: &mut String, name: &str, help: &str, family: &Family<Counter>) {
    write_header(out, name, help, "counter");
    for (values, counter) in family.series() {
        let labels = zip_labels(family.label_names(), &values);
        write_sample(out, name, &labels, counter.get() as f64);
    }
}

/// Writes the samples of one histogram series: cumulative `_bucket{le=...}` lines, then
/// `_sum` and `_count`. `labels` come before `le`.
pub fn write_histogram(out: &mut String, name: &str, labels: &[(&str, &str)], histogram: &Histogram) {
    let buckets = histogram.cumulative();
    let bucket_name = format!("{name}_bucket");
    for (bound, count) in &buckets {
        let le = format_value(*bound);
        let mut with_le: Vec<(&str, &str)> = labels.to_vec();
        with_le.push(("le", &le));
        write_sample(out, &bucket_name, &with_le, *count as f64);
    }
    write_sample(out, &format!("{name}_sum"), labels, histogram.sum());
    // The +Inf bucket is the count, read once so that the two always agree.
    let count = buckets.last().map_or(0, |(_, count)| *count);
    write_sample(out, &format!("{name}_count"), labels, count as f64);
}

/// Writes a whole histogram family.
pub fn write_histogram_family(out: &mut String, name: &str, help: &str, family: &Family<Histogram>) {
    write_header(out, name, help, "histogram");
    for (values, histogram) in family.series() {
        write_histogram(out, name, &zip_labels(family.label_names(), &values), &histogram);
    }
}

fn zip_labels<'a>(names: &'a [&'a str], values: &'a [String]) -> Vec<(&'a str, &'a str)> {
    names.iter().copied().zip(values.iter().map(String::as_str)).collect()
}

fn write_labels(out: &mut String, labels: &[(&str, &str)]) {
    if labels.is_empty() {
        return;
    }
    out.push('{');
    for (i, (name, value)) in labels.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{name}=\"{}\"", escape_label_value(value));
    }
    out.push('}');
}

/// A label value with `\`, `"` and newlines escaped, as the format requires.
pub fn escape_label_value(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '"' => escaped.push_str("\\\""),
            '\n' => escaped.push_str("\\n"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// A help text with `\` and newlines escaped (quotes stay as they are in HELP lines).
pub fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A sample value as the format spells it: `+Inf`, `-Inf`, `NaN`, else the shortest
/// decimal that reads back as the same `f64`.
pub fn format_value(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value == f64::INFINITY {
        "+Inf".to_owned()
    } else if value == f64::NEG_INFINITY {
        "-Inf".to_owned()
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_family_lines() {
        let family = Family::<Counter>::new(&["verb", "outcome"], Counter::default);
        family.with(&["get", "ok"]).add(3);
        family.with(&["delete", "not_found"]).inc();
        let mut out = String::new();
        write_counter_family(&mut out, "calls_total", "Calls.", &family);
        assert_eq!(
            out,
            "# HELP calls_total Calls.\n\
             # TYPE calls_total counter\n\
             calls_total{verb=\"delete\",outcome=\"not_found\"} 1\n\
             calls_total{verb=\"get\",outcome=\"ok\"} 3\n"
        );
    }

    #[test]
    fn gauge_lines() {
        let gauge = Gauge::default();
        gauge.set(7.0);
        let mut out = String::new();
        write_header(&mut out, "depth", "Queue depth.", "gauge");
        write_sample(&mut out, "depth", &[], gauge.get());
        assert_eq!(out, "# HELP depth Queue depth.\n# TYPE depth gauge\ndepth 7\n");
    }

    #[test]
    fn histogram_lines_are_cumulative_with_sum_and_count() {
        static BOUNDS: [f64; 3] = [0.01, 0.5, 1.0];
        let histogram = Histogram::new(&BOUNDS);
        for value in [0.005, 0.01, 0.25, 3.0] {
            histogram.observe(value);
        }
        let mut out = String::new();
        write_histogram(&mut out, "lat_seconds", &[("op", "get")], &histogram);
        assert_eq!(
            out,
            "lat_seconds_bucket{op=\"get\",le=\"0.01\"} 2\n\
             lat_seconds_bucket{op=\"get\",le=\"0.5\"} 3\n\
             lat_seconds_bucket{op=\"get\",le=\"1\"} 3\n\
             lat_seconds_bucket{op=\"get\",le=\"+Inf\"} 4\n\
             lat_seconds_sum{op=\"get\"} 3.265\n\
             lat_seconds_count{op=\"get\"} 4\n"
        );
        assert_eq!(histogram.count(), 4);
    }

    #[test]
    fn empty_histogram_without_labels() {
        static BOUNDS: [f64; 1] = [1.0];
        let mut out = String::new();
        write_histogram(&mut out, "h", &[], &Histogram::new(&BOUNDS));
        assert_eq!(out, "h_bucket{le=\"1\"} 0\nh_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n");
    }

    #[test]
    fn label_values_and_help_are_escaped() {
        let mut out = String::new();
        write_header(&mut out, "m", "a \\ \"quoted\"\nline", "counter");
        write_sample(&mut out, "m", &[("path", "C:\\dir \"x\"\ny")], 1.0);
        assert_eq!(out, "# HELP m a \\\\ \"quoted\"\\nline\n# TYPE m counter\nm{path=\"C:\\\\dir \\\"x\\\"\\ny\"} 1\n");
    }

    #[test]
    fn special_values() {
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        assert_eq!(format_value(f64::NEG_INFINITY), "-Inf");
        assert_eq!(format_value(f64::NAN), "NaN");
        assert_eq!(format_value(0.1), "0.1");
        assert_eq!(format_value(42.0), "42");
    }

    #[test]
    fn missing_label_values_are_empty() {
        let family = Family::<Counter>::new(&["a", "b"], Counter::default);
        family.with(&["x"]).inc();
        assert_eq!(family.series()[0].0, ["x", ""]);
    }
}
