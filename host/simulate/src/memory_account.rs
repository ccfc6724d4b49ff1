//! Where a fleet's memory goes (`simulate --json`'s `memory`): the bytes each part
//! holds, from counters the parts keep, counted once when the nodes have started and
//! again at the end of the churn, and per pod. What no part counts (the allocator's
//! headers, free lists and fragmentation, and any holder not counted) is the peak
//! resident memory less the memory before any pod and less what the parts grew by.

use serde::Serialize;

use crate::driver::Driver;
use podstatus_agent::NodeAgent;

/// Bytes by part: a node's parts added up over the fleet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Parts<T> {
    /// The embedded API server: its store of pods and its watch hub beside it (0 when
    /// the server is not in the process).
    pub store: T,
    /// The nodes' pod managers: the pods from the watch, their indexes, the JSON kept
    /// of the pods read last.
    pub pod_managers: T,
    /// The plugins' linear memories.
    pub plugins: T,
    /// The supervisors' copies of each plugin's accepted state.
    pub supervisors: T,
    /// The host views: what each node reported of its pods and the statuses its plugin
    /// accepted.
    pub host_views: T,
    /// The simulated kubelets: every pod's life and the status it sent last.
    pub drivers: T,
}

impl<T: Copy> Parts<T> {
    /// Each part of this and `other` made one by `f`.
    fn zip_with<U>(&self, other: &Parts<T>, f: impl Fn(T, T) -> U) -> Parts<U> {
        Parts {
            store: f(self.store, other.store),
            pod_managers: f(self.pod_managers, other.pod_managers),
            plugins: f(self.plugins, other.plugins),
            supervisors: f(self.supervisors, other.supervisors),
            host_views: f(self.host_views, other.host_views),
            drivers: f(self.drivers, other.drivers),
        }
    }
}

impl Parts<u64> {
    fn total(&self) -> u64 {
        self.store + self.pod_managers + self.plugins + self.supervisors + self.host_views + self.drivers
    }

    /// Each part's growth from `earlier` (0 where it shrank).
    fn since(&self, earlier: &Parts<u64>) -> Parts<u64> {
        self.zip_with(earlier, u64::saturating_sub)
    }

    fn per(&self, pods: u64) -> Parts<f64> {
        self.zip_with(self, |bytes, _| if pods == 0 { 0.0 } else { bytes as f64 / pods as f64 })
    }
}

/// The parts' bytes counted now: the embedded server's (if the run started one), each
/// node's, and each driver's.
pub(crate) fn count(
    server: Option<&podstatus_apiserver::EmbeddedApiServer>,
    agents: &[NodeAgent],
    drivers: &[&Driver],
) -> Parts<u64> {
    let mut parts = Parts::<u64> { store: server.map_or(0, |s| s.held_bytes() as u64), ..Parts::default() };
    for agent in agents {
        let plugin = agent.handle().plugin_memory();
        parts.pod_managers += agent.pod_manager().held_bytes() as u64;
        parts.plugins += plugin.linear as u64;
        parts.supervisors += plugin.accepted_state as u64;
        parts.host_views += agent.handle().host_view().map_or(0, |view| view.held_bytes()) as u64;
    }
    parts.drivers = drivers.iter().map(|driver| driver.held_bytes() as u64).sum();
    parts
}

/// The memory account of a run (see the module's documentation).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MemoryAccount {
    /// Pods the nodes held at the end of the churn (their pod managers', static and
    /// mirror pods included): what the figures per pod divide by.
    pub pods: u64,
    /// Bytes each part held when the nodes had started, before any pod.
    pub at_start_bytes: Parts<u64>,
    /// Bytes each part held at the end of the churn.
    pub bytes: Parts<u64>,
    /// Each part's growth from the start to the end of the churn, per pod.
    pub bytes_per_pod: Parts<f64>,
    /// Resident memory when the nodes had started, before any pod (Linux only).
    pub start_rss_bytes: Option<u64>,
    /// The process's peak resident memory (VmHWM, Linux only).
    pub peak_rss_bytes: Option<u64>,
    /// What no part counts, per pod: the peak less the resident memory at the start
    /// and less the parts' growth, divided by `pods` (the allocator's headers, free
    /// lists and fragmentation, and whatever holds memory that no counter sees).
    pub allocator_overhead_per_pod: Option<f64>,
}

impl MemoryAccount {
    /// The account from the parts at the start (with the resident memory then) and at
    /// the end of the churn, with the pods held then and the peak.
    pub(crate) fn new(
        at_start: Parts<u64>,
        start_rss_bytes: Option<u64>,
        at_end: Parts<u64>,
        pods: u64,
        peak_rss_bytes: Option<u64>,
    ) -> Self {
        let grown = at_end.since(&at_start);
        let allocator_overhead_per_pod = start_rss_bytes
            .zip(peak_rss_bytes)
            .filter(|_| pods > 0)
            .map(|(start, peak)| peak.saturating_sub(start).saturating_sub(grown.total()) as f64 / pods as f64);
        MemoryAccount {
            pods,
            at_start_bytes: at_start,
            bytes: at_end,
            bytes_per_pod: grown.per(pods),
            start_rss_bytes,
            peak_rss_bytes,
            allocator_overhead_per_pod,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overhead_is_the_growth_no_part_counts() {
        let start = Parts { plugins: 1_000, ..Parts::default() };
        let end = Parts {
            store: 2_000,
            pod_managers: 1_000,
            plugins: 3_000,
            supervisors: 500,
            host_views: 500,
            drivers: 1_000,
        };
        let account = MemoryAccount::new(start, Some(10_000), end, 10, Some(20_000));
        assert_eq!(account.bytes_per_pod.plugins, 200.0, "growth, not the whole");
        assert_eq!(account.bytes_per_pod.store, 200.0);
        // 10,000 grown, 7,000 of it counted.
        assert_eq!(account.allocator_overhead_per_pod, Some(300.0));
        let none = MemoryAccount::new(start, None, end, 10, Some(20_000));
        assert_eq!(none.allocator_overhead_per_pod, None);
    }
}
