//! Latency quantiles for summaries, kept in an HDR histogram (the maintained
//! `hdrhistogram` crate): three significant digits whatever the number of samples, in
//! fixed memory, so a long run's p99 costs what a short run's does.
//!
//! Shared by every latency a summary reports ([`super::PropagationTracker`],
//! [`super::CallerLatency`]), so they all have one shape and one precision.

use std::time::Duration;

use hdrhistogram::Histogram;

/// Significant decimal digits kept: a quantile is off by at most 0.1%.
const SIGNIFICANT_DIGITS: u8 = 3;
/// The largest latency told apart, in nanoseconds (an hour); longer ones are counted as
/// an hour. Nanoseconds: a native plugin call takes well under a microsecond.
const HIGHEST_NANOS: u64 = 3_600 * 1_000_000_000;

/// Quantiles of the latencies measured so far (all zero when none were).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatencySummary {
    /// Number of latencies measured.
    pub count: u64,
    /// Median.
    pub p50: Duration,
    /// 95th percentile.
    pub p95: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Largest (exact, even past the histogram's range).
    pub max: Duration,
}

/// Latencies recorded so far: an HDR histogram of nanoseconds, and the exact largest.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    histogram: Histogram<u64>,
    max: Duration,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        // Bounds and digits are constants the tests exercise: this cannot fail.
        let histogram = Histogram::new_with_bounds(1, HIGHEST_NANOS, SIGNIFICANT_DIGITS)
            .expect("constant histogram bounds are valid");
        LatencyHistogram { histogram, max: Duration::ZERO }
    }

    /// Records one latency; one past the histogram's range is counted at its top (the
    /// exact maximum is still kept).
    pub fn record(&mut self, latency: Duration) {
        let nanos = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        self.histogram.saturating_record(nanos.clamp(1, HIGHEST_NANOS));
        self.max = self.max.max(latency);
    }

    /// The quantiles of every latency recorded; each reported as the top of its bucket,
    /// never above the largest latency seen.
    pub fn summary(&self) -> LatencySummary {
        if self.histogram.is_empty() {
            return LatencySummary::default();
        }
        let at = |q: f64| Duration::from_nanos(self.histogram.value_at_quantile(q)).min(self.max);
        LatencySummary { count: self.histogram.len(), p50: at(0.50), p95: at(0.95), p99: at(0.99), max: self.max }
    }

    /// Latencies recorded so far.
    pub fn count(&self) -> u64 {
        self.histogram.len()
    }

    /// Adds every latency `other` recorded (a group's nodes summed).
    pub fn add(&mut self, other: &LatencyHistogram) {
        // Both have the same bounds (made by `new`): adding cannot run out of range.
        if let Err(error) = self.histogram.add(&other.histogram) {
            tracing::warn!(?error, "adding latency histograms");
        }
        self.max = self.max.max(other.max);
    }

    /// The histogram as `[nanoseconds, count]` per bucket that holds any (each bucket's
    /// highest value): what a shard reports of a window, for the leader to add up
    /// ([`LatencyHistogram::from_buckets`]).
    pub fn buckets(&self) -> Vec<[u64; 2]> {
        self.histogram.iter_recorded().map(|v| [v.value_iterated_to(), v.count_at_value()]).collect()
    }

    /// The histogram `buckets` describe (values past the range counted at its top); the
    /// largest latency is the top of the largest bucket.
    pub fn from_buckets(buckets: &[[u64; 2]]) -> LatencyHistogram {
        let mut histogram = LatencyHistogram::new();
        for &[nanos, count] in buckets {
            histogram.histogram.saturating_record_n(nanos.clamp(1, HIGHEST_NANOS), count);
            if count > 0 {
                histogram.max = histogram.max.max(Duration::from_nanos(nanos));
            }
        }
        histogram
    }

    /// The latencies recorded since `before`, a copy of this histogram taken earlier:
    /// a window of samples (a canary's since it started), not every sample since the
    /// process started. The largest is then the top of the largest sample's bucket (the
    /// exact one is not kept per window). A `before` that is not an earlier copy (it
    /// holds samples this one does not) gives the whole of this one.
    pub fn since(&self, before: &LatencyHistogram) -> LatencyHistogram {
        let mut window = self.clone();
        if window.histogram.subtract(&before.histogram).is_err() {
            return self.clone();
        }
        let top = if window.histogram.is_empty() { 0 } else { window.histogram.max() };
        window.max = Duration::from_nanos(top).min(self.max);
        window
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_carry_a_histogram_to_another_process_and_back() {
        let mut histogram = LatencyHistogram::new();
        for ms in 1..=500u64 {
            histogram.record(Duration::from_millis(ms));
        }
        let back = LatencyHistogram::from_buckets(&histogram.buckets());
        assert_eq!(back.count(), 500);
        assert_eq!(back.summary().p99, histogram.summary().p99);
        assert!(back.buckets().len() <= 500);
        let mut two = back.clone();
        two.add(&LatencyHistogram::from_buckets(&histogram.buckets()));
        assert_eq!(two.count(), 1000, "shards' windows add up");
        assert_eq!(LatencyHistogram::from_buckets(&[]).count(), 0);
        assert_eq!(LatencyHistogram::from_buckets(&[[u64::MAX, 3]]).count(), 3, "past the range: at the top");
    }

    #[test]
    fn quantiles_of_one_to_a_thousand_milliseconds_within_a_tenth_of_a_percent() {
        let mut histogram = LatencyHistogram::new();
        for ms in (1..=1000u64).rev() {
            histogram.record(Duration::from_millis(ms));
        }
        let summary = histogram.summary();
        assert_eq!(summary.count, 1000);
        assert_eq!(summary.max, Duration::from_millis(1000));
        for (got, want) in [(summary.p50, 500), (summary.p95, 950), (summary.p99, 990)] {
            let want = Duration::from_millis(want);
            assert!(got >= want && got <= want + want / 1000, "{got:?} vs {want:?}");
        }
    }

    #[test]
    fn empty_is_zero() {
        assert_eq!(LatencyHistogram::new().summary(), LatencySummary::default());
    }

    #[test]
    fn values_past_the_range_and_zero_are_counted_without_panicking() {
        let mut histogram = LatencyHistogram::new();
        histogram.record(Duration::ZERO);
        histogram.record(Duration::from_secs(86_400 * 365));
        histogram.record(Duration::MAX);
        let summary = histogram.summary();
        assert_eq!(summary.count, 3);
        assert_eq!(summary.max, Duration::MAX, "the exact maximum is kept");
        assert!(summary.p99 >= Duration::from_secs(3_600), "{summary:?}");
        assert!(summary.p50 >= Duration::from_secs(3_600), "{summary:?}");
    }

    #[test]
    fn a_window_holds_only_the_samples_since_its_start() {
        let mut histogram = LatencyHistogram::new();
        for _ in 0..100 {
            histogram.record(Duration::from_millis(1));
        }
        let start = histogram.clone();
        for _ in 0..10 {
            histogram.record(Duration::from_millis(500));
        }
        let window = histogram.since(&start);
        assert_eq!(window.count(), 10);
        let summary = window.summary();
        assert!(summary.p50 >= Duration::from_millis(500), "{summary:?}");
        assert!(summary.max >= Duration::from_millis(500) && summary.max <= Duration::from_millis(501), "{summary:?}");
        assert_eq!(histogram.since(&histogram).summary(), LatencySummary::default(), "an empty window");
        assert_eq!(start.since(&histogram).count(), 100, "not an earlier copy: the whole histogram");

        let mut sum = LatencyHistogram::new();
        sum.add(&start);
        sum.add(&window);
        assert_eq!(sum.count(), 110);
        assert_eq!(sum.summary().max, window.summary().max);
    }

    #[test]
    fn sub_microsecond_latencies_keep_their_precision() {
        let mut histogram = LatencyHistogram::new();
        histogram.record(Duration::from_nanos(750));
        let summary = histogram.summary();
        assert_eq!(summary.p50, Duration::from_nanos(750));
    }
}
