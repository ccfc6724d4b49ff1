//! What a simulation did, as a table for people and as JSON for machines.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use serde::Serialize;

/// Everything `podstatus simulate` reports at the end.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// The contract of the plugin that ran (the last one, after a swap).
    pub plugin: String,
    /// Where statuses were written: the embedded server's URL or the cluster's.
    pub api_server: String,
    /// The node the pods were bound to.
    pub node: String,
    /// The generator's seed: the same seed gives the same lives.
    pub seed: u64,
    /// Pods alive at once (not counting static pods).
    pub pods: usize,
    /// Static pods from the manifest folder.
    pub static_pods: usize,
    /// Pods created in the API server over the run (replacements included).
    pub pods_created: u64,
    /// Pods the status manager deleted from the API server after termination.
    pub pods_deleted: u64,
    /// Wall time of the churn, in seconds.
    pub seconds: f64,
    /// Status updates handed to the plugin, by operation.
    pub updates: BTreeMap<&'static str, u64>,
    /// Updates that made a new status version.
    pub versions: u64,
    /// Updates the plugin found unchanged after normalisation.
    pub unchanged: u64,
    /// New versions the sync queue had no room for (the batch sync wrote them).
    pub queue_full: u64,
    /// API calls the plugin made, by verb then outcome.
    pub api_calls: BTreeMap<String, BTreeMap<String, u64>>,
    /// Calls the client gave up on: refused before sending (`throttled`,
    /// `circuit_open`) or cut by its timeout (`timeout`).
    pub client_refusals: BTreeMap<String, u64>,
    /// API calls sent to the server (all verbs and outcomes; calls the client throttled
    /// or failed fast on an open circuit not counted) per new status version.
    pub api_calls_per_version: f64,
    /// Status set until written to the API server, in milliseconds.
    pub propagation_ms: Latency,
    /// Pods in the API server by phase at the end (the node's pods only).
    pub pods_by_phase: BTreeMap<String, u64>,
    /// Plugin calls that failed, by what went wrong.
    pub faults: BTreeMap<String, u64>,
    /// The hot swap, if one was asked for.
    pub swap: Option<SwapSummary>,
    /// The final check: the API server against the plugin's cache.
    pub check: Check,
    /// Peak resident memory of the process, in MiB (Linux only).
    pub peak_rss_mib: Option<f64>,
}

/// Latency percentiles, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest sample.
    pub max: f64,
}

/// What the swap did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SwapSummary {
    /// Seconds into the run.
    pub at_seconds: f64,
    /// Contract before.
    pub from: String,
    /// Contract after.
    pub to: String,
    /// Calls were held this long, in milliseconds.
    pub pause_ms: f64,
    /// The whole swap, in milliseconds.
    pub total_ms: f64,
    /// Why it failed, if it did (the old plugin kept serving).
    pub error: Option<String>,
}

/// The invariant check after the final quiet sync.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Check {
    /// Pods whose cached status was compared with the API server's.
    pub compared: u64,
    /// Pods whose statuses differ, each with what differs.
    pub differing: Vec<Difference>,
}

/// One pod whose API server status is not the plugin's.
#[derive(Clone, Debug, Serialize)]
pub struct Difference {
    /// `namespace/name`.
    pub pod: String,
    /// What differs.
    pub detail: String,
}

impl Summary {
    /// Whether the run kept its promise: every status reached the API server.
    pub fn passed(&self) -> bool {
        self.check.differing.is_empty()
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rows: Vec<(String, String)> = vec![
            ("plugin".into(), self.plugin.clone()),
            ("api server".into(), self.api_server.clone()),
            (
                "node".into(),
                format!("{} ({} pods + {} static, seed {})", self.node, self.pods, self.static_pods, self.seed),
            ),
            (
                "run".into(),
                format!(
                    "{:.1} s, {} pods created, {} deleted by the status manager",
                    self.seconds, self.pods_created, self.pods_deleted
                ),
            ),
        ];
        let updates: u64 = self.updates.values().sum();
        let by_op = self.updates.iter().map(|(op, n)| format!("{op} {n}")).collect::<Vec<_>>().join(", ");
        rows.push(("statuses set".into(), format!("{updates} ({by_op})")));
        rows.push((
            "versions".into(),
            format!("{} new, {} unchanged, {} past a full queue", self.versions, self.unchanged, self.queue_full),
        ));
        for (verb, outcomes) in &self.api_calls {
            let line = outcomes.iter().map(|(o, n)| format!("{o} {n}")).collect::<Vec<_>>().join(", ");
            rows.push((format!("api {verb}"), line));
        }
        if !self.client_refusals.is_empty() {
            let line = self.client_refusals.iter().map(|(o, n)| format!("{o} {n}")).collect::<Vec<_>>().join(", ");
            rows.push(("client refused".into(), line));
        }
        rows.push(("api calls / version".into(), format!("{:.2}", self.api_calls_per_version)));
        let l = &self.propagation_ms;
        rows.push((
            "propagation".into(),
            format!(
                "p50 {:.1} ms, p95 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} samples)",
                l.p50, l.p95, l.p99, l.max, l.count
            ),
        ));
        let phases = self.pods_by_phase.iter().map(|(p, n)| format!("{p} {n}")).collect::<Vec<_>>().join(", ");
        rows.push(("pods by phase".into(), phases));
        let faults = if self.faults.is_empty() {
            "none".to_owned()
        } else {
            self.faults.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ")
        };
        rows.push(("faults".into(), faults));
        if let Some(swap) = &self.swap {
            let text = match &swap.error {
                Some(error) => format!("at {:.1} s failed: {error}", swap.at_seconds),
                None => format!(
                    "at {:.1} s {} -> {}: pause {:.2} ms, whole {:.1} ms",
                    swap.at_seconds, swap.from, swap.to, swap.pause_ms, swap.total_ms
                ),
            };
            rows.push(("swap".into(), text));
        }
        if let Some(mib) = self.peak_rss_mib {
            rows.push(("peak memory".into(), format!("{mib:.0} MiB")));
        }
        let verdict = if self.passed() {
            format!("{} pods: API server equals the cache", self.check.compared)
        } else {
            format!("{} of {} pods differ", self.check.differing.len(), self.check.compared)
        };
        rows.push(("check".into(), verdict));
        let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        let mut out = String::new();
        for (key, value) in rows {
            let _ = writeln!(out, "{key:<width$}  {value}");
        }
        for d in &self.check.differing {
            let _ = writeln!(out, "  differs: {}: {}", d.pod, d.detail);
        }
        f.write_str(&out)
    }
}

/// The process's peak resident set (VmHWM), in MiB, where the OS tells it.
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_differing_pods() {
        let mut summary = Summary::default();
        assert!(summary.passed());
        summary.check.differing.push(Difference { pod: "sim/web-0001-0".into(), detail: "phase".into() });
        assert!(!summary.passed());
        let table = summary.to_string();
        assert!(table.contains("differs: sim/web-0001-0: phase"), "{table}");
        assert!(table.contains("1 of 0 pods differ"), "{table}");
    }
}
