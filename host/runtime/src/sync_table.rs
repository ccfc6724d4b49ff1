//! Per-pod ordering of overlapping syncs: at most one sync of a pod in flight, later
//! ones waiting behind it and coalescing into the newest.
//!
//! A 0.2.0 plugin plans syncs (a request's, a pass's, a batch's) and the host runs them
//! call by call, many pods at once. Two syncs of one pod must not race each other's
//! writes, so the table admits a sync only while its pod has none in flight; the others
//! wait. When the sync in flight ends, the newest waiting sync of the pod starts and the
//! older waiting ones are dropped: each writes the pod's status as of its planning or
//! newer, so the newest covers them. Plain data, no threads and no clock: the agent's
//! scheduler and replay's deterministic driver share it.

use std::collections::{BTreeMap, VecDeque};

use crate::bindings::PodSync;

/// Which pods have a sync in flight, and what waits behind each.
#[derive(Debug, Default)]
pub struct SyncTable {
    /// Pod UID to the sync of it in flight (started, not yet over).
    in_flight: BTreeMap<String, u64>,
    /// Pod UID to the syncs of it planned while one was in flight, oldest first.
    waiting: BTreeMap<String, VecDeque<PodSync>>,
}

/// What to do once a pod's sync is over.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Next {
    /// The sync of the same pod to start now, if one waited.
    pub start: Option<PodSync>,
    /// Older waiting syncs of the pod that `start` covers: the host drops them.
    pub superseded: Vec<PodSync>,
}

impl SyncTable {
    /// An empty table.
    pub fn new() -> Self {
        SyncTable::default()
    }

    /// Takes planned syncs: returns, in plan order, those that may start now (their
    /// pod had none in flight; each is now in flight), and keeps the others waiting.
    pub fn admit(&mut self, syncs: Vec<PodSync>) -> Vec<PodSync> {
        let mut ready = Vec::new();
        for sync in syncs {
            if self.in_flight.contains_key(&sync.pod_uid) {
                self.waiting.entry(sync.pod_uid.clone()).or_default().push_back(sync);
            } else {
                self.in_flight.insert(sync.pod_uid.clone(), sync.id);
                ready.push(sync);
            }
        }
        ready
    }

    /// The sync `id` of `pod_uid` is over (done, failed or dropped): the newest sync
    /// waiting for the pod, if any, is in flight now and returned with those it covers.
    /// A sync that was not in flight changes nothing.
    pub fn finish(&mut self, pod_uid: &str, id: u64) -> Next {
        if self.in_flight.get(pod_uid) != Some(&id) {
            return Next::default();
        }
        self.in_flight.remove(pod_uid);
        let Some(mut waiting) = self.waiting.remove(pod_uid) else {
            return Next::default();
        };
        let start = waiting.pop_back();
        if let Some(next) = &start {
            self.in_flight.insert(next.pod_uid.clone(), next.id);
        }
        Next { start, superseded: waiting.into() }
    }

    /// Forgets everything (the plugin that planned the syncs is gone); returns the
    /// syncs that were waiting, for the host to account for.
    pub fn clear(&mut self) -> Vec<PodSync> {
        self.in_flight.clear();
        std::mem::take(&mut self.waiting).into_values().flatten().collect()
    }

    /// Syncs in flight.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Syncs waiting behind one of the same pod.
    pub fn waiting(&self) -> usize {
        self.waiting.values().map(VecDeque::len).sum()
    }

    /// Whether no sync is in flight or waiting.
    pub fn is_idle(&self) -> bool {
        self.in_flight.is_empty() && self.waiting.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::SyncOrigin;

    fn sync(id: u64, pod: &str) -> PodSync {
        PodSync { id, pod_uid: pod.into(), origin: SyncOrigin::Request }
    }

    #[test]
    fn one_sync_per_pod_is_in_flight_and_the_newest_waiting_one_follows() {
        let mut table = SyncTable::new();
        let ready = table.admit(vec![sync(1, "a"), sync(2, "b")]);
        assert_eq!(ready.iter().map(|s| s.id).collect::<Vec<_>>(), [1, 2]);
        assert!(table.admit(vec![sync(3, "a"), sync(4, "a"), sync(5, "a")]).is_empty());
        assert_eq!((table.in_flight(), table.waiting()), (2, 3));

        let next = table.finish("a", 1);
        assert_eq!(next.start.map(|s| s.id), Some(5), "the newest waiting sync starts");
        assert_eq!(next.superseded.iter().map(|s| s.id).collect::<Vec<_>>(), [3, 4], "the older ones are covered");
        assert_eq!((table.in_flight(), table.waiting()), (2, 0));

        assert_eq!(table.finish("a", 5), Next::default());
        assert_eq!(table.finish("b", 2), Next::default());
        assert!(table.is_idle());
    }

    #[test]
    fn finishing_a_sync_that_is_not_in_flight_changes_nothing() {
        let mut table = SyncTable::new();
        table.admit(vec![sync(1, "a")]);
        table.admit(vec![sync(2, "a")]);
        assert_eq!(table.finish("a", 2), Next::default(), "a waiting sync is not the one in flight");
        assert_eq!(table.finish("b", 1), Next::default());
        assert_eq!((table.in_flight(), table.waiting()), (1, 1));
        assert_eq!(table.clear().iter().map(|s| s.id).collect::<Vec<_>>(), [2]);
        assert!(table.is_idle());
    }
}
