//! Server-side printing: the `Table` a client gets when it asks for
//! `Accept: application/json;as=Table;g=meta.k8s.io;v=v1`. kubectl prints only NAME and
//! AGE without it; with it, `get pods -o wide` shows what Kubernetes shows (its pod
//! printer, `printPod`, ported for the columns below).

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

/// What a row carries as `object` (`includeObject=`; Kubernetes' default is Metadata).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IncludeObject {
    /// No object.
    None,
    /// A `PartialObjectMetadata` (what kubectl uses for names and namespaces).
    Metadata,
    /// The whole pod.
    Object,
}

impl IncludeObject {
    /// The query value (absent: Metadata); the error is for a 400.
    pub fn parse(value: Option<&str>) -> Result<Self, IncludeObjectError> {
        match value {
            None | Some("Metadata") => Ok(Self::Metadata),
            Some("None") => Ok(Self::None),
            Some("Object") => Ok(Self::Object),
            Some(other) => Err(IncludeObjectError::Unsupported(other.to_owned())),
        }
    }
}

/// Why an `includeObject=` value is refused. Display is the message of the 400.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum IncludeObjectError {
    /// None of `None`, `Metadata`, `Object` (the value given).
    #[error("includeObject: unsupported value \"{0}\"")]
    Unsupported(String),
}

/// Whether the `Accept` header asks for a `Table` (meta.k8s.io v1 or v1beta1).
pub(crate) fn wants_table(accept: &str) -> bool {
    accept.split(',').any(|media| {
        let params = crate::media::params(media);
        params.contains(&("as", "Table")) && params.contains(&("g", "meta.k8s.io"))
    })
}

/// The `Table` of `pods`, as of `now`, with the list's resourceVersion when it is one.
pub(crate) fn table<'a>(
    pods: impl IntoIterator<Item = &'a Pod>,
    resource_version: Option<u64>,
    include: IncludeObject,
    now: jiff::Timestamp,
) -> Value {
    let rows: Vec<Value> = pods.into_iter().map(|pod| row(pod, include, now)).collect();
    document(column_definitions(), rows, resource_version)
}

/// A `meta.k8s.io/v1` `Table` of `columns` and `rows`, with the list's resourceVersion
/// when it is one (every kind's table is this document).
pub(crate) fn document(columns: Value, rows: Vec<Value>, resource_version: Option<u64>) -> Value {
    let mut metadata = json!({});
    if let Some(version) = resource_version {
        metadata["resourceVersion"] = json!(version.to_string());
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": rows,
    })
}

/// Kubernetes' pod columns; priority 1 are shown only with `-o wide`.
fn column_definitions() -> Value {
    let column = |name: &str, format: &str, description: &str, priority: u8| json!({"name": name, "type": "string", "format": format, "description": description, "priority": priority});
    json!([
        column("Name", "name", "Name must be unique within a namespace.", 0),
        column("Ready", "", "The aggregate readiness state of this pod for accepting traffic.", 0),
        column("Status", "", "The aggregate status of the containers in this pod.", 0),
        column(
            "Restarts",
            "",
            "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            0
        ),
        column(
            "Age",
            "",
            "CreationTimestamp is a timestamp representing the server time when this object was created.",
            0
        ),
        column("IP", "", "The IP address allocated to the pod. Routable at least within the cluster.", 1),
        column("Node", "", "NodeName is the node the pod is scheduled to.", 1),
        column("Nominated Node", "", "nominatedNodeName is set when this pod preempts other pods on the node.", 1),
        column("Readiness Gates", "", "If specified, all readiness gates will be evaluated for pod readiness.", 1),
    ])
}

/// One row of the table.
pub(crate) fn row(pod: &Pod, include: IncludeObject, now: jiff::Timestamp) -> Value {
    let cells = cells(pod, now);
    let mut row = json!({"cells": cells});
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            let metadata = serde_json::to_value(&pod.metadata).unwrap_or_else(|_| json!({}));
            row["object"] =
                json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": metadata});
        }
        IncludeObject::Object => row["object"] = serde_json::to_value(pod).unwrap_or(Value::Null),
    }
    row
}

/// NAME READY STATUS RESTARTS AGE IP NODE NOMINATED-NODE READINESS-GATES.
fn cells(pod: &Pod, now: jiff::Timestamp) -> Value {
    let none = || "<none>".to_owned();
    let spec = pod.spec.as_ref();
    let status = pod.status.as_ref();
    let statuses = status.and_then(|s| s.container_statuses.as_deref()).unwrap_or_default();
    let total = spec.map_or(0, |s| s.containers.len());
    let ready = statuses.iter().filter(|c| c.ready && c.state.as_ref().is_some_and(|s| s.running.is_some())).count();
    // kubectl adds restart counts in Go's 64-bit int; a sum in i32 would overflow (and
    // panic in a debug build) on counts a client can write. Saturating, never wrapping.
    let restarts: i64 = statuses.iter().fold(0i64, |sum, c| sum.saturating_add(i64::from(c.restart_count)));
    let last_restart = statuses
        .iter()
        .filter_map(|c| c.last_state.as_ref()?.terminated.as_ref()?.finished_at.as_ref())
        .map(|time| time.0)
        .max();
    let restarts = match last_restart {
        Some(at) if restarts > 0 => format!("{restarts} ({} ago)", human_duration(now, at)),
        _ => restarts.to_string(),
    };
    let age =
        pod.metadata.creation_timestamp.as_ref().map_or_else(|| "<unknown>".to_owned(), |t| human_duration(now, t.0));
    let ip = status
        .and_then(|s| {
            s.pod_ips.as_ref().and_then(|ips| ips.first()).map(|ip| ip.ip.clone()).or_else(|| s.pod_ip.clone())
        })
        .filter(|ip| !ip.is_empty())
        .unwrap_or_else(none);
    let node = spec.and_then(|s| s.node_name.clone()).filter(|n| !n.is_empty()).unwrap_or_else(none);
    let nominated = status.and_then(|s| s.nominated_node_name.clone()).filter(|n| !n.is_empty()).unwrap_or_else(none);
    let gates = readiness_gates(pod).unwrap_or_else(none);
    json!([
        pod.metadata.name.clone().unwrap_or_default(),
        format!("{ready}/{total}"),
        phase_reason(pod),
        restarts,
        age,
        ip,
        node,
        nominated,
        gates,
    ])
}

/// "passed/total" of the pod's readiness gates, or None when it has none.
fn readiness_gates(pod: &Pod) -> Option<String> {
    let gates = pod.spec.as_ref()?.readiness_gates.as_deref().filter(|gates| !gates.is_empty())?;
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or_default();
    // A set of the true conditions: gates x conditions would be quadratic in what a
    // client writes.
    let true_conditions: std::collections::HashSet<&str> =
        conditions.iter().filter(|c| c.status == "True").map(|c| c.type_.as_str()).collect();
    let passed = gates.iter().filter(|gate| true_conditions.contains(gate.condition_type.as_str())).count();
    Some(format!("{passed}/{}", gates.len()))
}

/// The STATUS column: the phase, or the reason that says more (a waiting or terminated
/// container's, "Init:1/2", "Terminating", ...), as kubectl users know it.
fn phase_reason(pod: &Pod) -> String {
    let status = pod.status.as_ref();
    let mut reason = status.and_then(|s| s.phase.clone()).unwrap_or_default();
    if let Some(r) = status.and_then(|s| s.reason.clone()).filter(|r| !r.is_empty()) {
        reason = r;
    }
    let init_statuses = status.and_then(|s| s.init_container_statuses.as_deref()).unwrap_or_default();
    let init_total = pod.spec.as_ref().and_then(|s| s.init_containers.as_ref()).map_or(0, Vec::len);
    let mut initializing = false;
    for (index, container) in init_statuses.iter().enumerate() {
        let state = container.state.as_ref();
        if let Some(terminated) = state.and_then(|s| s.terminated.as_ref()) {
            if terminated.exit_code == 0 {
                continue;
            }
            reason = match terminated.reason.as_deref().filter(|r| !r.is_empty()) {
                Some(r) => format!("Init:{r}"),
                None if terminated.signal.is_some_and(|s| s != 0) => {
                    format!("Init:Signal:{}", terminated.signal.unwrap_or_default())
                }
                None => format!("Init:ExitCode:{}", terminated.exit_code),
            };
        } else if let Some(waiting) = state
            .and_then(|s| s.waiting.as_ref())
            .filter(|w| w.reason.as_deref().is_some_and(|r| r != "PodInitializing"))
        {
            reason = format!("Init:{}", waiting.reason.clone().unwrap_or_default());
        } else {
            reason = format!("Init:{index}/{init_total}");
        }
        initializing = true;
        break;
    }
    if !initializing {
        let mut has_running = false;
        let statuses = status.and_then(|s| s.container_statuses.as_deref()).unwrap_or_default();
        for container in statuses.iter().rev() {
            let state = container.state.as_ref();
            if let Some(r) = state.and_then(|s| s.waiting.as_ref()?.reason.clone()).filter(|r| !r.is_empty()) {
                reason = r;
            } else if let Some(terminated) = state.and_then(|s| s.terminated.as_ref()) {
                reason = match terminated.reason.as_deref().filter(|r| !r.is_empty()) {
                    Some(r) => r.to_owned(),
                    None if terminated.signal.is_some_and(|s| s != 0) => {
                        format!("Signal:{}", terminated.signal.unwrap_or_default())
                    }
                    None => format!("ExitCode:{}", terminated.exit_code),
                };
            } else if container.ready && state.is_some_and(|s| s.running.is_some()) {
                has_running = true;
            }
        }
        if reason == "Completed" && has_running {
            let ready = status
                .and_then(|s| s.conditions.as_deref())
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True");
            reason = if ready { "Running" } else { "NotReady" }.to_owned();
        }
    }
    if pod.metadata.deletion_timestamp.is_some() {
        reason = if status.and_then(|s| s.reason.as_deref()) == Some("NodeLost") { "Unknown" } else { "Terminating" }
            .to_owned();
    }
    reason
}

/// Kubernetes' `duration.HumanDuration` of `now - then`: "45s", "3m12s", "2h5m", "4d".
pub(crate) fn human_duration(now: jiff::Timestamp, then: jiff::Timestamp) -> String {
    let seconds = now.as_second() - then.as_second();
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    let step = HUMAN_DURATION_STEPS.iter().find(|step| seconds < step.below).unwrap_or(&YEARS);
    let count = seconds / step.seconds;
    match step.beside.map(|(of, name)| ((seconds / of) % (step.seconds / of), name)) {
        Some((rest, name)) if rest != 0 => format!("{count}{}{rest}{name}", step.unit),
        _ => format!("{count}{}", step.unit),
    }
}

const MINUTE: i64 = 60;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;
const YEAR: i64 = 365 * DAY;

/// One step of `HumanDuration`'s cascade: below `below` seconds, the count of `unit`
/// (of `seconds` each), and what is left of the next smaller unit (its seconds, its
/// name) if `beside` shows it and it is not zero ("3m12s" but "3m").
struct DurationStep {
    below: i64,
    seconds: i64,
    unit: &'static str,
    beside: Option<(i64, &'static str)>,
}

const fn step(below: i64, seconds: i64, unit: &'static str, beside: Option<(i64, &'static str)>) -> DurationStep {
    DurationStep { below, seconds, unit, beside }
}

const HUMAN_DURATION_STEPS: [DurationStep; 8] = [
    step(2 * MINUTE, 1, "s", None),
    step(10 * MINUTE, MINUTE, "m", Some((1, "s"))),
    step(3 * HOUR, MINUTE, "m", None),
    step(8 * HOUR, HOUR, "h", Some((MINUTE, "m"))),
    step(48 * HOUR, HOUR, "h", None),
    step(8 * DAY, DAY, "d", Some((HOUR, "h"))),
    step(2 * YEAR, DAY, "d", None),
    step(8 * YEAR, YEAR, "y", Some((DAY, "d"))),
];

/// Past the last step: years alone.
const YEARS: DurationStep = step(i64::MAX, YEAR, "y", None);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn include_object_values() {
        assert_eq!(IncludeObject::parse(None), Ok(IncludeObject::Metadata));
        assert_eq!(IncludeObject::parse(Some("Object")), Ok(IncludeObject::Object));
        let refused = IncludeObject::parse(Some("All")).unwrap_err();
        assert_eq!(refused.to_string(), "includeObject: unsupported value \"All\"");
    }

    fn ago(seconds: i64) -> String {
        let now = jiff::Timestamp::from_second(1_000_000_000).expect("valid");
        human_duration(now, jiff::Timestamp::from_second(1_000_000_000 - seconds).expect("valid"))
    }

    #[test]
    fn durations_read_like_kubectls() {
        let cases = [
            (5, "5s"),
            (119, "119s"),
            (192, "3m12s"),
            (600, "10m"),
            (7500, "125m"),
            (14700, "4h5m"),
            (30 * 3600, "30h"),
            (51 * 3600, "2d3h"),
            (193 * 3600, "8d"),
            ((2 * 365 + 5) * 86400, "2y5d"),
            (3 * 365 * 86400, "3y"),
            (9 * 365 * 86400, "9y"),
            (-1, "0s"),
            (-2, "<invalid>"),
        ];
        for (seconds, text) in cases {
            assert_eq!(ago(seconds), text);
        }
        assert_eq!(ago(4 * 86400), "4d");
    }

    #[test]
    fn wide_columns_of_a_running_pod() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns", "creationTimestamp": "2001-09-09T01:46:40Z"},
            "spec": {"nodeName": "node-1", "containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.7", "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 2, "image": "i", "imageID": "",
                 "state": {"running": {}}},
                {"name": "b", "ready": false, "restartCount": 0, "image": "i", "imageID": "",
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}
        }))
        .expect("pod");
        let now = jiff::Timestamp::from_second(1_000_000_000 + 300).expect("valid");
        let table = table([&pod], Some(7), IncludeObject::Metadata, now);
        assert_eq!(
            table["rows"][0]["cells"],
            json!(["web", "1/2", "CrashLoopBackOff", "2", "5m", "10.0.0.7", "node-1", "<none>", "<none>"])
        );
        assert_eq!(table["rows"][0]["object"]["metadata"]["name"], "web");
        assert_eq!(table["metadata"]["resourceVersion"], "7");
        assert!(wants_table("application/json;as=Table;v=v1;g=meta.k8s.io,application/json"));
        assert!(!wants_table("application/json"));
    }
}
