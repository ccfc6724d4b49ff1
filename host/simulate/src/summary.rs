//! What a simulation did, as a table for people and as JSON for machines.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use serde::Serialize;

use crate::kubelet_1_35::NewPaths;
use podstatus_agent::format_seconds;
use podstatus_agent::metrics::{CallerLatencySummary, LatencySummary};

/// The name and version of the JSON document's schema (docs/json-output.md): a field
/// may be added within a version, none removed or changed.
pub const SUMMARY_FORMAT: &str = "podstatus.simulate/v1";

/// Everything `podstatus simulate` reports at the end.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// [`SUMMARY_FORMAT`].
    pub format: &'static str,
    /// The contract of the plugin that ran (the last one, after a swap).
    pub plugin: String,
    /// The logic version the run started with, as `--logic` names it (`1.37`), read
    /// from the plugin by the caller; `unknown` for a plugin that does not say.
    pub logic: String,
    /// The SHA-256 of the plugin component the run started with (lower-case hex), as
    /// the caller read it.
    pub plugin_sha256: String,
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
    /// Of the updates, the resyncs: a pod's last status sent again, with nothing new
    /// (`--sync-frequency`).
    pub resyncs: u64,
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
    /// How long the node's side waited in each status manager call (measured by the
    /// caller, the wait for the plugin included), in milliseconds: over all calls, and
    /// per operation.
    pub caller_latency_ms: CallerLatency,
    /// Status writes (updates and patches) the API server accepted during the churn
    /// (`seconds`; the final flush's are not counted, so the rate below is the run's).
    pub statuses_written: u64,
    /// [`Summary::statuses_written`] per second of churn.
    pub statuses_written_per_second: f64,
    /// How long the plugin was held during the churn (calls, sync steps, batches:
    /// [`podstatus_runtime::ManagerHandle::plugin_busy`]) per status update handed to
    /// it, in microseconds: the plugin's CPU per status, syncs included.
    pub plugin_busy_us_per_update: f64,
    /// What the paths of a 1.35 kubelet did (generations, sidecars, in-place resizes),
    /// in runs of a plugin with the resize calls (`--logic v4`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_paths: Option<NewPaths>,
    /// Pods in the API server by phase at the end (the node's pods only).
    pub pods_by_phase: BTreeMap<String, u64>,
    /// Plugin calls that failed, by what went wrong.
    pub faults: BTreeMap<String, u64>,
    /// The hot swap, if one was asked for.
    pub swap: Option<SwapSummary>,
    /// The final check: the API server against the plugin's cache.
    pub check: Check,
    /// Peak resident memory of the process (VmHWM: the embedded API server and every
    /// node of a fleet included), in MiB (Linux only).
    pub peak_memory_mib: Option<f64>,
    /// The share of the machine's CPU time the hypervisor gave to others during the
    /// churn, in percent (Linux only): a virtual machine's neighbours stretch every
    /// latency figure, so the figures are read beside it.
    pub cpu_steal_percent: Option<f64>,
    /// A fleet's own figures (`--nodes` above 1), beside the others (which then add up
    /// every node's); absent for one node.
    #[serde(flatten)]
    pub fleet: Option<FleetFigures>,
    /// A fleet's canary rollout, if one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutSummary>,
    /// A fleet's memory account: the bytes each part holds, per pod, and what no part
    /// counts; absent for one node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<crate::memory_account::MemoryAccount>,
    /// How the run ended: at its own end, or cut short by a signal or the flush's
    /// time limit.
    pub ended: Ended,
}

/// How a run ended. A run cut short says so (and `podstatus simulate` exits non-zero):
/// its figures are of less than was asked for, and its check of what was flushed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Ended {
    /// A signal stopped the churn before its own end (`--duration`, `--cycles`); never
    /// set for a run that has none (`--duration off`), which a signal ends.
    pub interrupted: bool,
    /// The final flush: `done`, `timed-out` (past `--flush-timeout`: statuses left
    /// unwritten) or `interrupted` (a signal during it).
    pub flush: podstatus_agent::node::Flushed,
}

impl Ended {
    /// Whether the run was cut short: a signal, or a flush that did not finish.
    pub fn cut_short(&self) -> bool {
        self.interrupted || self.flush != podstatus_agent::node::Flushed::Done
    }

    /// Whether a signal cut it short (the churn or the flush).
    pub fn by_signal(&self) -> bool {
        self.interrupted || self.flush == podstatus_agent::node::Flushed::Interrupted
    }
}

impl fmt::Display for Ended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use podstatus_agent::node::Flushed;
        let run = if self.interrupted { "interrupted by a signal before its end" } else { "at its end" };
        let flush = match self.flush {
            Flushed::Done => "flush done",
            Flushed::TimedOut => "flush timed out (--flush-timeout): statuses left unwritten",
            Flushed::Interrupted => "flush cut short by a signal",
        };
        write!(f, "{run}; {flush}")
    }
}

/// What a canary rollout did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RolloutSummary {
    /// The canary group.
    pub group: String,
    /// The plugin rolled out.
    pub to: String,
    /// Nodes in the canary.
    pub canary_nodes: usize,
    /// Seconds into the churn the canary moved.
    pub started_at_seconds: f64,
    /// Seconds into the churn the rollout was decided.
    pub decided_at_seconds: f64,
    /// `promoted`, `rolled back`, or not decided when the churn ended first.
    pub decision: String,
    /// `automatic` (the rollout itself), or `operator`.
    pub decided_by: String,
    /// Why.
    pub reason: String,
    /// Faults per update of the canary while it was watched.
    pub canary_fault_rate: f64,
    /// Faults per update of the other nodes over the same time.
    pub rest_fault_rate: f64,
    /// The canary's plugin time per update while it was watched, in microseconds.
    pub canary_plugin_us_per_update: f64,
    /// The other nodes' plugin time per update over the same time, in microseconds.
    pub rest_plugin_us_per_update: f64,
    /// The canary's propagation p99 while it was watched, in milliseconds.
    pub canary_p99_ms: f64,
    /// The other nodes' over the same time, in milliseconds.
    pub rest_p99_ms: f64,
    /// The canary's API calls per status version while it was watched.
    pub canary_api_calls_per_version: f64,
    /// The other nodes' over the same time.
    pub rest_api_calls_per_version: f64,
    /// How long the canary's nodes took to swap, in milliseconds.
    pub canary_swap_ms: f64,
    /// How long the promotion (every other node) or the rollback (the canary's) took.
    pub decision_swap_ms: f64,
    /// The longest pause of one node's status manager in those swaps, in milliseconds.
    pub decision_max_pause_ms: f64,
    /// Swaps that failed (those nodes kept their plugin).
    pub swap_errors: usize,
    /// Every criterion of the comparison, with both sides' figures and samples.
    pub verdict: Option<podstatus_agent::rollout::Verdict>,
}

/// What only a fleet reports: its nodes, their Leases, and what a node costs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FleetFigures {
    /// Virtual nodes in the process.
    pub nodes: usize,
    /// Of them, those whose Node reported Ready at the end of the churn.
    pub nodes_ready: usize,
    /// Lease renewals over all nodes.
    pub lease_renewals: u64,
    /// Renewals that came after their Lease had expired.
    pub leases_late: u64,
    /// Seconds from the first node's start to the last's (plugins loaded, Nodes
    /// registered).
    pub start_seconds: f64,
    /// Resident memory the started nodes added before any pod, per node, in MiB
    /// (Linux only).
    pub idle_memory_mib_per_node: Option<f64>,
    /// Pods created per second over all nodes: the first pods (each node's share of
    /// `pods`) from the churn's start until the last of them was created; over the
    /// whole run when some of them never were.
    pub pods_created_per_second: f64,
    /// How long creating the first pods took, from the churn's start; absent when some
    /// of them never were created.
    pub first_pods_seconds: Option<f64>,
    /// The figures of each group of nodes running one plugin.
    pub groups: Vec<GroupFigures>,
}

/// A group of a fleet's nodes, running one plugin: what its nodes did, added up.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GroupFigures {
    /// The group's name.
    pub name: String,
    /// The contract its nodes ran last.
    pub plugin: String,
    /// Its nodes.
    pub nodes: usize,
    /// Pods its nodes' owners created.
    pub pods_created: u64,
    /// Updates that made a new version.
    pub versions: u64,
    /// Plugin calls that failed, all kinds together.
    pub faults: u64,
    /// Pods of its nodes the final check compared.
    pub compared: u64,
    /// Of them, those whose API status is not the cached one.
    pub differing: usize,
    /// The plugin's held time per update handed to it, in microseconds.
    pub plugin_busy_us_per_update: f64,
    /// Status set until written to the API server, its nodes' writes only, in
    /// milliseconds (from the group's metrics, the final flush included).
    pub propagation_ms: Latency,
    /// The API calls its nodes' plugins made per status version.
    pub api_calls_per_version: f64,
    /// Plugin instances its nodes' supervisors restored after a fault.
    pub recoveries: u64,
}

impl GroupFigures {
    /// Adds a node's counts and check to the group's.
    pub(crate) fn add(&mut self, counts: &crate::driver::DriverCounts, check: &Check) {
        self.pods_created += counts.created;
        self.versions += counts.versions;
        self.faults += counts.faults.values().sum::<u64>();
        self.compared += check.compared;
        self.differing += check.differing.len();
    }
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

impl From<LatencySummary> for Latency {
    fn from(summary: LatencySummary) -> Self {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        Latency {
            count: summary.count,
            p50: ms(summary.p50),
            p95: ms(summary.p95),
            p99: ms(summary.p99),
            max: ms(summary.max),
        }
    }
}

impl fmt::Display for Latency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "p50 {}, p95 {}, p99 {}, max {} ({} samples)",
            millis(self.p50),
            millis(self.p95),
            millis(self.p99),
            millis(self.max),
            self.count
        )
    }
}

/// Milliseconds (as the JSON keeps them) for people: three significant digits with
/// their unit (`12.3µs`, `350ms`, `16.8s`), as the duration flags take them.
fn millis(ms: f64) -> String {
    format_seconds(ms / 1e3)
}

/// [`Latency`] over every Manager call of the node's side, with the same per operation.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CallerLatency {
    /// Over every call.
    #[serde(flatten)]
    pub all: Latency,
    /// Per operation (`set_pod_status`, `terminate_pod`, ...): those called only.
    pub by_operation: BTreeMap<String, Latency>,
}

impl From<CallerLatencySummary> for CallerLatency {
    fn from(summary: CallerLatencySummary) -> Self {
        CallerLatency {
            all: summary.all.into(),
            by_operation: summary.by_operation.into_iter().map(|(op, l)| (op.to_owned(), l.into())).collect(),
        }
    }
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
            ("logic".into(), {
                let short = self.plugin_sha256.get(..12).unwrap_or(&self.plugin_sha256);
                format!("{}, plugin sha256:{short}", self.logic)
            }),
            ("api server".into(), self.api_server.clone()),
            (
                "node".into(),
                format!("{} ({} pods + {} static, seed {})", self.node, self.pods, self.static_pods, self.seed),
            ),
            (
                "run".into(),
                format!(
                    "{}, {} pods created, {} deleted by the status manager",
                    format_seconds(self.seconds),
                    self.pods_created,
                    self.pods_deleted
                ),
            ),
        ];
        let updates: u64 = self.updates.values().sum();
        let by_op = self.updates.iter().map(|(op, n)| format!("{op} {n}")).collect::<Vec<_>>().join(", ");
        rows.push(("statuses set".into(), format!("{updates} ({by_op})")));
        rows.push((
            "versions".into(),
            format!(
                "{} new, {} unchanged ({} resyncs), {} past a full queue",
                self.versions, self.unchanged, self.resyncs, self.queue_full
            ),
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
        rows.push((
            "statuses written".into(),
            format!("{} ({:.1} per second)", self.statuses_written, self.statuses_written_per_second),
        ));
        rows.push(("plugin busy / update".into(), format_seconds(self.plugin_busy_us_per_update / 1e6)));
        if let Some(paths) = &self.new_paths {
            rows.extend(paths.rows());
        }
        rows.push(("propagation".into(), self.propagation_ms.to_string()));
        rows.push(("caller latency".into(), self.caller_latency_ms.all.to_string()));
        for (op, latency) in &self.caller_latency_ms.by_operation {
            rows.push((format!("  {op}"), latency.to_string()));
        }
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
                Some(error) => format!("at {} failed: {error}", format_seconds(swap.at_seconds)),
                None => format!(
                    "at {} {} -> {}: pause {}, whole {}",
                    format_seconds(swap.at_seconds),
                    swap.from,
                    swap.to,
                    format_seconds(swap.pause_ms / 1e3),
                    format_seconds(swap.total_ms / 1e3)
                ),
            };
            rows.push(("swap".into(), text));
        }
        if let Some(fleet) = &self.fleet {
            rows.extend(fleet.rows());
        }
        if let Some(rollout) = &self.rollout {
            rows.extend(rollout.rows());
        }
        if let Some(mib) = self.peak_memory_mib {
            rows.push(("peak memory".into(), format!("{mib:.0} MiB")));
        }
        if let Some(steal) = self.cpu_steal_percent {
            rows.push(("cpu steal".into(), format!("{steal:.1}% (time the hypervisor gave to others)")));
        }
        let verdict = if self.passed() {
            format!("{} pods: API server equals the cache", self.check.compared)
        } else {
            format!("{} of {} pods differ", self.check.differing.len(), self.check.compared)
        };
        rows.push(("check".into(), verdict));
        rows.push(("ended".into(), self.ended.to_string()));
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

impl FleetFigures {
    /// The summary's rows of a fleet run: the fleet's, then each group's.
    fn rows(&self) -> Vec<(String, String)> {
        let started = format!(
            "{} nodes ({} Ready), started in {}, {:.1} pods created per second",
            self.nodes,
            self.nodes_ready,
            format_seconds(self.start_seconds),
            self.pods_created_per_second
        );
        let leases = format!("{} renewals, {} after their Lease expired", self.lease_renewals, self.leases_late);
        let memory = self.idle_memory_mib_per_node.map(|mib| ("memory / idle node".into(), format!("{mib:.2} MiB")));
        [("fleet".into(), started), ("leases".into(), leases)]
            .into_iter()
            .chain(memory)
            .chain(self.groups.iter().map(GroupFigures::row))
            .collect()
    }
}

impl GroupFigures {
    /// The summary's row of a fleet's group.
    fn row(&self) -> (String, String) {
        let figures = format!(
            "{} nodes on {}: {} pods, {} versions, {} faults ({} recoveries), {} of {} pods differ, \
             plugin {} / update, propagation p99 {}, {:.2} API calls / version",
            self.nodes,
            self.plugin,
            self.pods_created,
            self.versions,
            self.faults,
            self.recoveries,
            self.differing,
            self.compared,
            format_seconds(self.plugin_busy_us_per_update / 1e6),
            millis(self.propagation_ms.p99),
            self.api_calls_per_version
        );
        (format!("  group {}", self.name), figures)
    }
}

impl RolloutSummary {
    /// The summary's rows of a canary rollout: the decision, then canary and rest side
    /// by side.
    fn rows(&self) -> [(String, String); 2] {
        let decision = format!(
            "{} ({} nodes) to {}: {} at {} ({}); canary swapped in {}, decision in {}",
            self.group,
            self.canary_nodes,
            self.to,
            self.decision,
            format_seconds(self.decided_at_seconds),
            self.reason,
            millis(self.canary_swap_ms),
            millis(self.decision_swap_ms)
        );
        let compared = format!(
            "propagation p99 {} / {}, API calls per version {:.2} / {:.2}, faults per update \
             {:.4} / {:.4}, plugin {} / {} per update",
            millis(self.canary_p99_ms),
            millis(self.rest_p99_ms),
            self.canary_api_calls_per_version,
            self.rest_api_calls_per_version,
            self.canary_fault_rate,
            self.rest_fault_rate,
            format_seconds(self.canary_plugin_us_per_update / 1e6),
            format_seconds(self.rest_plugin_us_per_update / 1e6)
        );
        [("rollout".into(), decision), ("  canary / rest".into(), compared)]
    }
}

/// The machine's CPU time so far, in clock ticks: (all, stolen), where the OS tells it
/// (the `cpu` line of `/proc/stat`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuTimes {
    total: u64,
    steal: u64,
}

impl CpuTimes {
    /// Now, where the OS tells it.
    pub fn now() -> Option<Self> {
        Self::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// From the text of `/proc/stat`: user nice system idle iowait irq softirq steal ...
    fn parse(stat: &str) -> Option<Self> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let fields: Vec<u64> =
            line.split_whitespace().skip(1).take(8).map(|f| f.parse().ok()).collect::<Option<_>>()?;
        let steal = *fields.get(7)?;
        Some(CpuTimes { total: fields.iter().sum(), steal })
    }

    /// The share stolen between `self` and `later`, in percent.
    pub fn steal_percent_until(self, later: CpuTimes) -> Option<f64> {
        let total = later.total.checked_sub(self.total).filter(|t| *t > 0)?;
        Some(later.steal.saturating_sub(self.steal) as f64 * 100.0 / total as f64)
    }
}

/// The process's peak resident set (VmHWM), in MiB, where the OS tells it.
pub fn peak_rss_mib() -> Option<f64> {
    proc_status_mib("VmHWM:")
}

/// The process's resident set now (VmRSS), in MiB, where the OS tells it.
pub fn rss_mib() -> Option<f64> {
    proc_status_mib("VmRSS:")
}

/// A figure of `/proc/self/status` given in kB, in MiB.
fn proc_status_mib(key: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_read_off_proc_stat() {
        let before = CpuTimes::parse("cpu  100 0 50 800 0 0 0 50 0 0\ncpu0 1 2 3\n").unwrap();
        let after = CpuTimes::parse("cpu  200 0 100 1550 0 0 0 150 0 0\n").unwrap();
        // 1000 ticks passed, 100 of them stolen.
        assert_eq!(before.steal_percent_until(after), Some(10.0));
        assert_eq!(before.steal_percent_until(before), None, "no time passed");
        // Kernels before steal accounting: no reading rather than a made-up zero.
        assert_eq!(CpuTimes::parse("cpu  1 2 3 4\n"), None);
        assert_eq!(CpuTimes::parse("intr 5\n"), None);
    }

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

    #[test]
    fn plugin_busy_is_shown_and_the_new_paths_only_when_a_run_played_them() {
        let mut summary = Summary { plugin_busy_us_per_update: 12.34, ..Summary::default() };
        assert!(summary.to_string().contains("plugin busy / update  12.3µs"), "{summary}");
        let json = serde_json::to_value(&summary).unwrap();
        assert_eq!(json["plugin_busy_us_per_update"], 12.34);
        assert!(json.get("new_paths").is_none(), "a run without them reports as before: {json}");
        let mut paths = NewPaths { sidecar_pods: 3, resize_conditions_cleared: 2, ..NewPaths::default() };
        paths.resize_conditions_set.insert("PodResizePending/Deferred".into(), 1);
        summary.new_paths = Some(paths);
        let table = summary.to_string();
        assert!(table.contains("conditions set 1 (PodResizePending/Deferred 1), cleared 2"), "{table}");
        assert!(table.contains("3 pods, 0 readiness results"), "{table}");
        let json = serde_json::to_value(&summary).unwrap();
        assert_eq!(json["new_paths"]["resize_conditions_set"]["PodResizePending/Deferred"], 1);
    }

    #[test]
    fn caller_latency_is_shown_and_serialised_like_propagation_with_its_operations() {
        let mut summary = Summary { statuses_written: 30, statuses_written_per_second: 15.0, ..Summary::default() };
        let one = Latency { count: 2, p50: 0.012, p95: 0.5, p99: 1.25, max: 42.0 };
        summary.caller_latency_ms =
            CallerLatency { all: one, by_operation: BTreeMap::from([("set_pod_status".to_owned(), one)]) };
        let table = summary.to_string();
        assert!(table.contains("statuses written"), "{table}");
        assert!(table.contains("30 (15.0 per second)"), "{table}");
        assert!(table.contains("p50 12µs, p95 500µs, p99 1.25ms, max 42ms (2 samples)"), "{table}");
        assert!(table.contains("  set_pod_status"), "{table}");
        let json = serde_json::to_value(&summary).unwrap();
        let caller = &json["caller_latency_ms"];
        for field in ["count", "p50", "p95", "p99", "max"] {
            assert!(caller[field].is_number(), "{field} in {caller}");
            assert!(json["propagation_ms"][field].is_number(), "{field}");
        }
        assert_eq!(caller["by_operation"]["set_pod_status"]["count"], 2);
        assert_eq!(json["statuses_written"], 30);
    }
}
