//! Reading and checking a trace before anything runs: an unusable trace prints one line
//! naming the step and nothing else, so every check happens up front.

use std::collections::BTreeSet;
use std::path::PathBuf;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use serde_json::{Map, Value};

use crate::bindings::Timestamp;

/// The clock's start when the trace names none.
pub const DEFAULT_CLOCK: &str = "2026-01-01T00:00:00Z";

/// Why a trace cannot be run.
#[derive(Debug, thiserror::Error)]
#[error("{}{message}", .step.map(|s| format!("step {s}: ")).unwrap_or_default())]
pub struct TraceError {
    /// The step at fault (0-based), or None for the trace's top level.
    pub step: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl TraceError {
    fn top(message: impl Into<String>) -> Self {
        TraceError { step: None, message: message.into() }
    }
}

/// A checked trace.
#[derive(Debug)]
pub struct Trace {
    /// Where the virtual clock starts.
    pub clock: Timestamp,
    /// The API server's pods at the start.
    pub apiserver: Vec<Pod>,
    /// The pod manager's pods at the start.
    pub pod_manager: Vec<Pod>,
    /// The deletion-safety answer at the start.
    pub deletion_safe: bool,
    /// The script.
    pub steps: Vec<Step>,
    /// The directory paths in steps are relative to.
    pub base_dir: PathBuf,
}

/// A pod named by a step: a full object (passed to the plugin as given), or a UID
/// meaning the pod manager's current copy.
#[derive(Clone, Debug)]
pub enum PodRef {
    /// The object's JSON, exactly as the trace gave it.
    Object(String),
    /// A UID.
    Uid(String),
}

/// Which API calls a `fail` step fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailVerb {
    Get,
    /// Any status update or patch.
    Write,
    Delete,
    Any,
}

/// The error a `fail` step injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailError {
    NotFound,
    Conflict,
    Internal,
    Unavailable,
}

/// One step of the script.
#[derive(Clone, Debug)]
pub enum Step {
    SetPodStatus { pod: PodRef, status: String },
    SetContainerReadiness { uid: String, container_id: String, ready: bool },
    TerminatePod { pod: PodRef },
    RemoveOrphanedStatuses { keep: Vec<String> },
    GetPodStatus { uid: String },
    Sync,
    SyncBatch,
    AdvanceClock { ms: u64 },
    PodManagerAdd { pod: Pod },
    PodManagerRemove { uid: String },
    ApiserverPut { pod: Pod },
    ApiserverDelete { namespace: String, name: String },
    Fail { verb: FailVerb, error: FailError, times: u64 },
    SetDeletionSafe { value: bool },
    SetContainerStartup { uid: String, container_id: String, started: bool },
    Swap { plugin: PathBuf },
}

impl Trace {
    /// Parses and checks a trace document; `base_dir` resolves relative paths.
    pub fn parse(text: &str, base_dir: PathBuf) -> Result<Trace, TraceError> {
        let doc: Value = serde_json::from_str(text).map_err(|e| TraceError::top(format!("not JSON: {e}")))?;
        let Value::Object(doc) = doc else {
            return Err(TraceError::top("the trace must be a JSON object"));
        };
        let clock_text = match doc.get("clock") {
            None | Some(Value::Null) => DEFAULT_CLOCK,
            Some(Value::String(s)) => s.as_str(),
            Some(_) => return Err(TraceError::top("clock must be an RFC 3339 string")),
        };
        let clock = parse_clock(clock_text).map_err(TraceError::top)?;

        let mut known = BTreeSet::new();
        let apiserver = top_pods(&doc, "apiserver", &mut known)?;
        let pod_manager = top_pods(&doc, "pod_manager", &mut known)?;
        let deletion_safe = match doc.get("deletion_safe") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(TraceError::top("deletion_safe must be a boolean")),
        };
        let steps = match doc.get("steps") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(steps)) => steps
                .iter()
                .enumerate()
                .map(|(i, step)| parse_step(step, &mut known).map_err(|message| TraceError { step: Some(i), message }))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(TraceError::top("steps must be a list")),
        };
        Ok(Trace { clock, apiserver, pod_manager, deletion_safe, steps, base_dir })
    }
}

fn parse_clock(text: &str) -> Result<Timestamp, String> {
    let ts: jiff::Timestamp = text.parse().map_err(|e| format!("clock {text:?} is not an RFC 3339 time: {e}"))?;
    let nanos = ts.subsec_nanosecond();
    // jiff keeps the sign of the fraction with the seconds; the WIT time never has a
    // negative fraction.
    let (seconds, nanoseconds) =
        if nanos < 0 { (ts.as_second() - 1, (1_000_000_000 + nanos) as u32) } else { (ts.as_second(), nanos as u32) };
    Ok(Timestamp { seconds, nanoseconds })
}

fn top_pods(doc: &Map<String, Value>, key: &str, known: &mut BTreeSet<String>) -> Result<Vec<Pod>, TraceError> {
    match doc.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(pods)) => pods
            .iter()
            .enumerate()
            .map(|(i, pod)| {
                let named = if key == "apiserver" {
                    stored_pod(pod, known)
                } else {
                    pod_object(pod, known).map(|(pod, _)| pod)
                };
                named.map_err(|e| TraceError::top(format!("{key}[{i}]: {e}")))
            })
            .collect(),
        Some(_) => Err(TraceError::top(format!("{key} must be a list of pods"))),
    }
}

/// A full pod object: must parse as a core/v1 Pod and carry a UID, which becomes known.
fn pod_object(value: &Value, known: &mut BTreeSet<String>) -> Result<(Pod, String), String> {
    if !value.is_object() {
        return Err("a pod must be a JSON object".into());
    }
    let pod: Pod = serde_json::from_value(value.clone()).map_err(|e| format!("not a core/v1 Pod: {e}"))?;
    match pod.metadata.uid.as_deref() {
        Some(uid) if !uid.is_empty() => {
            known.insert(uid.to_string());
        }
        _ => return Err("pod has no metadata.uid".into()),
    }
    Ok((pod, value.to_string()))
}

/// A pod for the API server, which keys objects by namespace and name.
fn stored_pod(value: &Value, known: &mut BTreeSet<String>) -> Result<Pod, String> {
    let (pod, _) = pod_object(value, known)?;
    if pod.metadata.name.as_deref().is_none_or(str::is_empty) {
        return Err("pod has no metadata.name".into());
    }
    Ok(pod)
}

struct Fields<'a> {
    step: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    fn get(&self, name: &str) -> Result<&'a Value, String> {
        self.step.get(name).filter(|v| !v.is_null()).ok_or_else(|| format!("missing field {name:?}"))
    }

    fn string(&self, name: &str) -> Result<String, String> {
        self.get(name)?.as_str().map(str::to_string).ok_or_else(|| format!("field {name:?} must be a string"))
    }

    fn bool(&self, name: &str) -> Result<bool, String> {
        self.get(name)?.as_bool().ok_or_else(|| format!("field {name:?} must be a boolean"))
    }

    fn u64(&self, name: &str) -> Result<u64, String> {
        self.get(name)?.as_u64().ok_or_else(|| format!("field {name:?} must be a non-negative integer"))
    }

    fn known_uid(&self, name: &str, known: &BTreeSet<String>) -> Result<String, String> {
        let uid = self.string(name)?;
        check_known(&uid, known)?;
        Ok(uid)
    }

    fn pod_ref(&self, known: &mut BTreeSet<String>) -> Result<PodRef, String> {
        match self.get("pod")? {
            Value::String(uid) => {
                check_known(uid, known)?;
                Ok(PodRef::Uid(uid.clone()))
            }
            value => pod_object(value, known).map(|(_, json)| PodRef::Object(json)),
        }
    }

    fn pod(&self, known: &mut BTreeSet<String>) -> Result<Pod, String> {
        pod_object(self.get("pod")?, known).map(|(pod, _)| pod)
    }
}

fn check_known(uid: &str, known: &BTreeSet<String>) -> Result<(), String> {
    if known.contains(uid) {
        Ok(())
    } else {
        Err(format!("UID {uid:?} is known neither from the starting world nor from an earlier step"))
    }
}

fn parse_step(step: &Value, known: &mut BTreeSet<String>) -> Result<Step, String> {
    let Value::Object(step) = step else {
        return Err("a step must be a JSON object".into());
    };
    let f = Fields { step };
    let op = f.string("op")?;
    Ok(match op.as_str() {
        "set-pod-status" => {
            let pod = f.pod_ref(known)?;
            let status = f.get("status")?;
            serde_json::from_value::<PodStatus>(status.clone())
                .map_err(|e| format!("status is not a core/v1 PodStatus: {e}"))?;
            Step::SetPodStatus { pod, status: status.to_string() }
        }
        "set-container-readiness" => Step::SetContainerReadiness {
            uid: f.known_uid("uid", known)?,
            container_id: f.string("container_id")?,
            ready: f.bool("ready")?,
        },
        "terminate-pod" => Step::TerminatePod { pod: f.pod_ref(known)? },
        "remove-orphaned-statuses" => {
            let keep = f.get("keep")?.as_array().ok_or("field \"keep\" must be a list of UIDs")?;
            let keep = keep
                .iter()
                .map(|uid| {
                    let uid = uid.as_str().ok_or("field \"keep\" must be a list of UIDs")?;
                    check_known(uid, known)?;
                    Ok(uid.to_string())
                })
                .collect::<Result<_, String>>()?;
            Step::RemoveOrphanedStatuses { keep }
        }
        "get-pod-status" => Step::GetPodStatus { uid: f.known_uid("uid", known)? },
        "sync" => Step::Sync,
        "sync-batch" => Step::SyncBatch,
        "advance-clock" => Step::AdvanceClock { ms: f.u64("ms")? },
        "pod-manager-add" => Step::PodManagerAdd { pod: f.pod(known)? },
        "pod-manager-remove" => Step::PodManagerRemove { uid: f.known_uid("uid", known)? },
        "apiserver-put" => Step::ApiserverPut { pod: stored_pod(f.get("pod")?, known)? },
        "apiserver-delete" => Step::ApiserverDelete { namespace: f.string("namespace")?, name: f.string("name")? },
        "fail" => Step::Fail {
            verb: match f.string("verb")?.as_str() {
                "get" => FailVerb::Get,
                "write" => FailVerb::Write,
                "delete" => FailVerb::Delete,
                "any" => FailVerb::Any,
                other => return Err(format!("unknown verb {other:?} (get, write, delete, any)")),
            },
            error: match f.string("error")?.as_str() {
                "not-found" => FailError::NotFound,
                "conflict" => FailError::Conflict,
                "internal" => FailError::Internal,
                "unavailable" => FailError::Unavailable,
                other => return Err(format!("unknown error {other:?} (not-found, conflict, internal, unavailable)")),
            },
            times: if step.get("times").is_none_or(Value::is_null) { 1 } else { f.u64("times")? },
        },
        "set-deletion-safe" => Step::SetDeletionSafe { value: f.bool("value")? },
        "set-container-startup" => Step::SetContainerStartup {
            uid: f.known_uid("uid", known)?,
            container_id: f.string("container_id")?,
            started: f.bool("started")?,
        },
        "swap" => Step::Swap { plugin: PathBuf::from(f.string("plugin")?) },
        other => return Err(format!("unknown op {other:?}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Trace, TraceError> {
        Trace::parse(text, PathBuf::from("."))
    }

    fn err(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    const POD: &str =
        r#"{"metadata": {"uid": "u1", "name": "a", "namespace": "n"}, "spec": {"containers": [{"name": "c"}]}}"#;

    #[test]
    fn defaults_apply_to_an_empty_trace() {
        let t = parse("{}").unwrap();
        assert_eq!(t.clock, Timestamp { seconds: 1_767_225_600, nanoseconds: 0 });
        assert!(t.deletion_safe && t.steps.is_empty() && t.apiserver.is_empty());
    }

    #[test]
    fn fractional_clock_and_unknown_keys() {
        let t = parse(
            r#"{"clock": "2026-01-01T00:00:00.25+01:00", "whatever": 1, "steps": [{"op": "sync", "extra": true}]}"#,
        )
        .unwrap();
        assert_eq!(t.clock, Timestamp { seconds: 1_767_222_000, nanoseconds: 250_000_000 });
        assert!(matches!(t.steps[0], Step::Sync));
    }

    #[test]
    fn errors_name_the_step() {
        assert_eq!(err(r#"{"steps": [{"op": "sync"}, {"op": "nope"}]}"#), "step 1: unknown op \"nope\"");
        assert_eq!(err(r#"{"steps": [{"op": "advance-clock"}]}"#), "step 0: missing field \"ms\"");
        assert!(err(r#"{"steps": [{"op": "get-pod-status", "uid": "ghost"}]}"#).starts_with("step 0: UID \"ghost\""));
        assert!(err("[").starts_with("not JSON"));
        assert_eq!(err(r#"{"apiserver": [{"metadata": {"name": "x"}}]}"#), "apiserver[0]: pod has no metadata.uid");
    }

    #[test]
    fn uids_become_known_from_earlier_steps_only() {
        let later = format!(
            r#"{{"steps": [{{"op": "get-pod-status", "uid": "u1"}}, {{"op": "apiserver-put", "pod": {POD}}}]}}"#
        );
        assert!(err(&later).starts_with("step 0: UID"));
        let earlier = format!(
            r#"{{"steps": [{{"op": "apiserver-put", "pod": {POD}}}, {{"op": "get-pod-status", "uid": "u1"}}]}}"#
        );
        assert!(parse(&earlier).is_ok());
        let keep = r#"{"steps": [{"op": "remove-orphaned-statuses", "keep": ["u9"]}]}"#;
        assert!(err(keep).starts_with("step 0: UID \"u9\""));
    }

    #[test]
    fn fail_defaults_to_once_and_checks_names() {
        let t = parse(r#"{"steps": [{"op": "fail", "verb": "write", "error": "unavailable"}]}"#).unwrap();
        assert!(matches!(t.steps[0], Step::Fail { verb: FailVerb::Write, error: FailError::Unavailable, times: 1 }));
        assert!(err(r#"{"steps": [{"op": "fail", "verb": "put", "error": "internal"}]}"#).contains("unknown verb"));
    }

    #[test]
    fn a_status_must_be_a_pod_status() {
        let bad = format!(r#"{{"steps": [{{"op": "set-pod-status", "pod": {POD}, "status": {{"conditions": 3}}}}]}}"#);
        assert!(err(&bad).starts_with("step 0: status is not a core/v1 PodStatus"));
    }
}
