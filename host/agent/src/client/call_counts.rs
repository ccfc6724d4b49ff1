//! Counters of API calls by verb and outcome, for metrics: one relaxed atomic add per
//! call, no lock, read as a snapshot.

use std::sync::atomic::{AtomicU64, Ordering};

/// The API calls the status manager makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verb {
    /// GET a pod.
    Get,
    /// PUT the status subresource.
    UpdateStatus,
    /// PATCH the status subresource.
    PatchStatus,
    /// DELETE a pod.
    Delete,
}

impl Verb {
    /// Every verb, in a fixed order.
    pub const ALL: [Verb; 4] = [Verb::Get, Verb::UpdateStatus, Verb::PatchStatus, Verb::Delete];

    /// The metric label: `get`, `update_status`, `patch_status`, `delete`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::UpdateStatus => "update_status",
            Verb::PatchStatus => "patch_status",
            Verb::Delete => "delete",
        }
    }
}

/// How a call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// 2xx.
    Ok,
    /// 404.
    NotFound,
    /// 409 (a failed precondition, or the name taken).
    Conflict,
    /// 401/403.
    Forbidden,
    /// 400/422, or a request refused before it was sent.
    Invalid,
    /// Any other failure: 5xx, 429, transport errors, an unreadable answer.
    Error,
    /// Refused by the client-side rate limit; never sent.
    Throttled,
    /// No answer within the call timeout.
    Timeout,
    /// Failed fast by the open circuit breaker; never sent.
    CircuitOpen,
}

impl Outcome {
    /// Every outcome, in a fixed order.
    pub const ALL: [Outcome; 9] = [
        Outcome::Ok,
        Outcome::NotFound,
        Outcome::Conflict,
        Outcome::Forbidden,
        Outcome::Invalid,
        Outcome::Error,
        Outcome::Throttled,
        Outcome::Timeout,
        Outcome::CircuitOpen,
    ];

    /// The metric label: `ok`, `not_found`, `conflict`, `forbidden`, `invalid`, `error`,
    /// `throttled`, `timeout`, `circuit_open`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::NotFound => "not_found",
            Outcome::Conflict => "conflict",
            Outcome::Forbidden => "forbidden",
            Outcome::Invalid => "invalid",
            Outcome::Error => "error",
            Outcome::Throttled => "throttled",
            Outcome::Timeout => "timeout",
            Outcome::CircuitOpen => "circuit_open",
        }
    }
}

/// One counter of a snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallCount {
    /// The call.
    pub verb: Verb,
    /// How it ended.
    pub outcome: Outcome,
    /// How many calls ended this way since the counters were made.
    pub count: u64,
}

/// Lock-free counters of every (verb, outcome).
#[derive(Debug, Default)]
pub struct CallCounters {
    counts: [[AtomicU64; Outcome::ALL.len()]; Verb::ALL.len()],
}

impl CallCounters {
    /// Counts one call.
    pub fn record(&self, verb: Verb, outcome: Outcome) {
        self.counts[verb as usize][outcome as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Calls of `verb` that ended with `outcome`.
    pub fn get(&self, verb: Verb, outcome: Outcome) -> u64 {
        self.counts[verb as usize][outcome as usize].load(Ordering::Relaxed)
    }

    /// Every counter, zeros included (so a metric exists before its first call), verbs
    /// in [`Verb::ALL`] order, outcomes in [`Outcome::ALL`] order.
    pub fn snapshot(&self) -> Vec<CallCount> {
        Verb::ALL
            .iter()
            .flat_map(|&verb| Outcome::ALL.iter().map(move |&outcome| (verb, outcome)))
            .map(|(verb, outcome)| CallCount { verb, outcome, count: self.get(verb, outcome) })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_follow_the_declared_order() {
        // `record` indexes by discriminant: ALL must list them in that order.
        assert!(Verb::ALL.iter().enumerate().all(|(i, v)| *v as usize == i));
        assert!(Outcome::ALL.iter().enumerate().all(|(i, o)| *o as usize == i));
    }

    #[test]
    fn counts_each_verb_and_outcome_apart() {
        let counters = CallCounters::default();
        counters.record(Verb::Get, Outcome::Ok);
        counters.record(Verb::Get, Outcome::Ok);
        counters.record(Verb::Delete, Outcome::Conflict);
        let snapshot = counters.snapshot();
        assert_eq!(snapshot.len(), 36);
        let nonzero: Vec<_> =
            snapshot.iter().filter(|c| c.count > 0).map(|c| (c.verb.as_str(), c.outcome.as_str(), c.count)).collect();
        assert_eq!(nonzero, [("get", "ok", 2), ("delete", "conflict", 1)]);
    }
}
