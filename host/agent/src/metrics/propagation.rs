//! Propagation latency: how long a status the plugin accepted takes to reach the API
//! server. Upstream measures the same thing for `kubelet_pod_status_sync_duration_seconds`
//! ("from the first update to the last event"): the clock starts at the first status
//! change of a pod not yet written, and stops when a status write for that pod succeeds.
//!
//! A pod whose change is never written (not in the API server, or its status dropped)
//! stays pending until the plugin drops its status (`remove-orphaned-statuses`) or the
//! pod is deleted: the pending count is a metric of its own.
//!
//! The tracker is told both ends by the metered wrappers
//! ([`crate::metered_plugin::MeteredPlugin`] and
//! [`crate::metered_api_server::MeteredApiServer`]), which keeps the plugin
//! itself free of metrics.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Pending starts per pod UID, and every measured latency so far.
#[derive(Debug, Default)]
pub struct PropagationTracker {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Pod UID -> when its first unwritten status change was accepted.
    pending: HashMap<String, Instant>,
    /// Every latency measured, at about 0.4% precision.
    samples: FineHistogram,
}

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
    /// Largest (exact).
    pub max: Duration,
}

impl PropagationTracker {
    /// A tracker with nothing pending and nothing measured.
    pub fn new() -> Self {
        Self::default()
    }

    /// A status change of pod `uid` was accepted at `at`. Only the first change since the
    /// last write starts the clock: later ones ride along with it.
    pub fn status_set(&self, uid: &str, at: Instant) {
        if uid.is_empty() {
            return;
        }
        self.lock().pending.entry(uid.to_owned()).or_insert(at);
    }

    /// A status of pod `uid` was written at `at`: returns the latency since its first
    /// unwritten change and records it, or `None` when nothing was pending (a write
    /// that repairs drift, or a pod this tracker never heard of).
    pub fn status_written(&self, uid: &str, at: Instant) -> Option<Duration> {
        let mut state = self.lock();
        let started = state.pending.remove(uid)?;
        let latency = at.saturating_duration_since(started);
        state.samples.record(latency);
        Some(latency)
    }

    /// Forgets the pending start of `uid` (its pod is gone; nothing will be written).
    pub fn forget(&self, uid: &str) {
        self.lock().pending.remove(uid);
    }

    /// Forgets the pending starts of every pod not in `keep`.
    pub fn retain(&self, keep: &[String]) {
        self.lock().pending.retain(|uid, _| keep.contains(uid));
    }

    /// Number of pods with a change not yet written.
    pub fn pending(&self) -> usize {
        self.lock().pending.len()
    }

    /// Quantiles of every latency measured so far.
    pub fn snapshot(&self) -> LatencySummary {
        let state = self.lock();
        let samples = &state.samples;
        LatencySummary {
            count: samples.count,
            p50: samples.quantile(0.50),
            p95: samples.quantile(0.95),
            p99: samples.quantile(0.99),
            max: Duration::from_nanos(samples.max),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Each update is a single map or counter change: a panic elsewhere leaves it whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Significant bits kept per value: bucket width is at most 1/2^(BITS-1) of the value.
const BITS: u32 = 9;
/// Values below this (in nanoseconds) have a bucket each.
const EXACT: u64 = 1 << BITS;
/// Buckets per power of two above [`EXACT`].
const PER_OCTAVE: usize = 1 << (BITS - 1);

/// A log-linear histogram of nanoseconds (like HDR histograms): exact below 512 ns, then
/// 256 buckets per power of two, so a quantile is off by less than 0.4% whatever the
/// number of samples, in fixed memory (about 110 KiB once values reach seconds).
#[derive(Debug, Default)]
struct FineHistogram {
    counts: Vec<u64>,
    count: u64,
    max: u64,
}

impl FineHistogram {
    fn record(&mut self, value: Duration) {
        let nanos = u64::try_from(value.as_nanos()).unwrap_or(u64::MAX);
        let index = bucket_of(nanos);
        if self.counts.len() <= index {
            self.counts.resize(index + 1, 0);
        }
        self.counts[index] += 1;
        self.count += 1;
        self.max = self.max.max(nanos);
    }

    /// The nearest-rank quantile `q`, reported as the top of its bucket (never above the
    /// largest value seen).
    fn quantile(&self, q: f64) -> Duration {
        if self.count == 0 {
            return Duration::ZERO;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (index, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Duration::from_nanos(bucket_top(index).min(self.max));
            }
        }
        Duration::from_nanos(self.max)
    }
}

fn bucket_of(nanos: u64) -> usize {
    if nanos < EXACT {
        return nanos as usize;
    }
    // shift >= 1: drop that many low bits so that BITS significant bits remain.
    let shift = (u64::BITS - nanos.leading_zeros()) - BITS;
    let mantissa = (nanos >> shift) as usize - PER_OCTAVE;
    EXACT as usize + (shift as usize - 1) * PER_OCTAVE + mantissa
}

fn bucket_top(index: usize) -> u64 {
    if index < EXACT as usize {
        return index as u64;
    }
    let above = index - EXACT as usize;
    let shift = (above / PER_OCTAVE + 1) as u32;
    let mantissa = (above % PER_OCTAVE + PER_OCTAVE) as u64;
    // u128: the top bucket's end is 2^64, one past u64::MAX.
    let top = ((u128::from(mantissa) + 1) << shift) - 1;
    u64::try_from(top).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_unwritten_change_starts_the_clock() {
        let tracker = PropagationTracker::new();
        let t0 = Instant::now();
        tracker.status_set("a", t0);
        tracker.status_set("a", t0 + Duration::from_millis(5));
        assert_eq!(tracker.pending(), 1);
        assert_eq!(tracker.status_written("a", t0 + Duration::from_millis(8)), Some(Duration::from_millis(8)));
        assert_eq!(tracker.status_written("a", t0 + Duration::from_millis(9)), None, "nothing pending any more");
        tracker.status_set("a", t0 + Duration::from_millis(10));
        assert_eq!(tracker.status_written("a", t0 + Duration::from_millis(12)), Some(Duration::from_millis(2)));
        assert_eq!(tracker.snapshot().count, 2);
        assert_eq!(tracker.snapshot().max, Duration::from_millis(8));
    }

    #[test]
    fn unknown_and_forgotten_pods_measure_nothing() {
        let tracker = PropagationTracker::new();
        let t0 = Instant::now();
        assert_eq!(tracker.status_written("x", t0), None);
        tracker.status_set("a", t0);
        tracker.status_set("b", t0);
        tracker.status_set("c", t0);
        tracker.forget("a");
        tracker.retain(&["b".to_owned()]);
        assert_eq!(tracker.pending(), 1);
        assert_eq!(tracker.status_written("a", t0), None);
        assert!(tracker.status_written("b", t0).is_some());
        tracker.status_set("", t0);
        assert_eq!(tracker.pending(), 0, "a pod without UID cannot be matched to its write");
    }

    #[test]
    fn quantiles_of_one_to_a_thousand_milliseconds() {
        let tracker = PropagationTracker::new();
        let t0 = Instant::now();
        for ms in 1..=1000u64 {
            let uid = ms.to_string();
            tracker.status_set(&uid, t0);
            tracker.status_written(&uid, t0 + Duration::from_millis(ms));
        }
        let summary = tracker.snapshot();
        assert_eq!(summary.count, 1000);
        assert_eq!(summary.max, Duration::from_millis(1000));
        for (got, want) in [(summary.p50, 500), (summary.p95, 950), (summary.p99, 990)] {
            let want = Duration::from_millis(want);
            assert!(got >= want && got <= want + want / 256, "{got:?} vs {want:?}");
        }
    }

    #[test]
    fn empty_snapshot_is_zero() {
        assert_eq!(PropagationTracker::new().snapshot(), LatencySummary::default());
    }

    #[test]
    fn buckets_are_contiguous_and_tight() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(EXACT - 1), EXACT as usize - 1);
        let mut previous = bucket_of(EXACT - 1);
        for value in (EXACT..EXACT * 64).chain([u64::MAX / 2, u64::MAX]) {
            let index = bucket_of(value);
            assert!(index == previous || index == previous + 1 || value > EXACT * 64, "{value}");
            assert!(bucket_top(index) >= value, "{value} above its bucket's top");
            assert!((bucket_top(index) - value) as f64 <= value as f64 / 256.0, "{value}");
            previous = index;
        }
    }
}
