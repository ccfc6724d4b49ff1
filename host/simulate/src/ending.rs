//! How a run ends, for a node's run and a fleet's alike: whether a signal cut it short,
//! and the deadlines of what follows the flush (the mark of shutting down, the
//! shutdown), all within `--flush-timeout`.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use podstatus_agent::node::Flushed;

use crate::config::{Signals, SimulateConfig};

/// Whether a signal stopped the churn before its own end (`--duration`, `--cycles`): a
/// run without one ends by a signal as asked.
pub(crate) fn interrupted(config: &SimulateConfig, signals: &Signals) -> bool {
    signals.stop.load(Ordering::SeqCst) && (config.duration.is_some() || config.cycles.is_some())
}

/// The deadline of what follows a flush: a flush a signal cut short leaves no time
/// (the run ends within a second), any other the rest of `deadline`.
pub(crate) fn after_flush(flush: Flushed, deadline: Instant) -> Instant {
    if flush == Flushed::Interrupted { Instant::now() } else { deadline }
}

/// What is left until `deadline`.
pub(crate) fn time_left(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// How long reporting the node as shutting down may take: what is left of the
/// deadline, at least half a second (a call or two, worth making when the flush used it
/// all) and at most ten.
pub(crate) fn mark_timeout(deadline: Instant) -> Duration {
    time_left(deadline).clamp(Duration::from_millis(500), Duration::from_secs(10))
}
