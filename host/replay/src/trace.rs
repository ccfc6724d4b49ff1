//! The trace document, read and written by one serde-derived type, and checked before
//! anything runs: an unusable trace prints one line naming the step and nothing else,
//! so every check happens up front. The fuzzer writes its generated and shrunk traces
//! with the same type, so anything it writes `podstatus replay` reads.

use std::collections::BTreeSet;
use std::path::PathBuf;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use podstatus_backends::Timestamp;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// The clock's start when the trace names none.
pub const DEFAULT_CLOCK: &str = "2026-01-01T00:00:00Z";

/// Why a trace cannot be run. Display gives the one line `podstatus replay` prints.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The document is not JSON.
    #[error("not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// The document's top level is not shaped as a trace.
    #[error("not a trace: {0}")]
    Document(#[source] serde_json::Error),
    /// A pod of the starting world (`apiserver[i]`, `pod_manager[i]`) is unusable.
    #[error("{list}[{index}]: {problem}")]
    World {
        /// `apiserver` or `pod_manager`.
        list: &'static str,
        /// Its index in that list.
        index: usize,
        /// What is wrong with it.
        problem: Problem,
    },
    /// A step is unusable (found before anything runs, or when it is reached).
    #[error("step {step}: {problem}")]
    Step {
        /// The step at fault (0-based).
        step: usize,
        /// What is wrong with it.
        problem: Problem,
    },
    /// The plugin under test could not be made for the trace's world.
    #[error("making the plugin: {0}")]
    Plugin(#[source] podstatus_runtime::LoadError),
}

impl TraceError {
    /// The step at fault, if the error is about one.
    pub fn step(&self) -> Option<usize> {
        match self {
            TraceError::Step { step, .. } => Some(*step),
            _ => None,
        }
    }
}

/// What is wrong with a pod or a step.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    /// Not shaped as the format says: a missing field, a wrong type.
    #[error("{0}")]
    Shape(#[source] serde_json::Error),
    /// An `op` the format does not have.
    #[error("unknown op {op:?}; the ops are {known}")]
    UnknownOp {
        /// The op the step names.
        op: String,
        /// The ops the format has, as serde lists them (`set-pod-status, sync, ...`).
        known: String,
    },
    /// A pod that is not a JSON object.
    #[error("a pod must be a JSON object")]
    NotAnObject,
    /// A pod that does not parse as a core/v1 Pod.
    #[error("not a core/v1 Pod: {0}")]
    NotAPod(#[source] serde_json::Error),
    /// A status that does not parse as a core/v1 PodStatus.
    #[error("status is not a core/v1 PodStatus: {0}")]
    NotAStatus(#[source] serde_json::Error),
    /// A pod without `metadata.uid`.
    #[error("pod has no metadata.uid")]
    NoUid,
    /// A pod for the API server without `metadata.name`.
    #[error("pod has no metadata.name")]
    NoName,
    /// A UID that neither the starting world nor an earlier step gave.
    #[error("UID {0:?} is known neither from the starting world nor from an earlier step")]
    UnknownUid(String),
    /// A pod named by UID that neither the pod manager nor the API server holds when the
    /// step runs.
    #[error("pod {0:?} is neither in the pod manager nor in the API server now")]
    PodGone(String),
    /// The in-memory API server refused an outside writer's object.
    #[error("{0}")]
    Store(#[source] podstatus_backends::ApiError),
    /// An `advance-clock` that moves the clock past the last time a trace can hold
    /// (`9999-12-30T22:00:00Z`, jiff's last instant).
    #[error("advance-clock by {ms} ms moves the clock past 9999-12-30T22:00:00Z")]
    ClockOverflow {
        /// The step's `ms`.
        ms: u64,
    },
    /// The step needs something this replay does not offer (a plugin loader for `swap`,
    /// an export the plugin lacks).
    #[error("{0}")]
    Unsupported(String),
}

/// A trace: the starting world and the script.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Trace {
    /// Where the virtual clock starts (RFC 3339 in the document).
    #[serde(default = "default_clock", deserialize_with = "clock::deserialize", serialize_with = "clock::serialize")]
    pub clock: Timestamp,
    /// The API server's pods at the start.
    #[serde(default, deserialize_with = "null_as_default")]
    pub apiserver: Vec<Pod>,
    /// The pod manager's pods at the start.
    #[serde(default, deserialize_with = "null_as_default")]
    pub pod_manager: Vec<Pod>,
    /// The deletion-safety answer at the start.
    #[serde(default = "yes", deserialize_with = "null_as_true")]
    pub deletion_safe: bool,
    /// The script.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// The directory paths in steps are relative to (not part of the document).
    #[serde(skip, default = "here")]
    pub base_dir: PathBuf,
    /// Replays with the agent's reach guard for this node in front of the API server
    /// and the pod manager (`podstatus replay --node NAME`; not part of the document).
    /// `None`: the unguarded world of the seed, so conformance traces keep their
    /// meaning.
    #[serde(skip)]
    pub guard_node: Option<String>,
}

/// A pod named by a step: a full object (passed to the plugin as given), or a UID
/// meaning the pod manager's current copy.
#[derive(Clone, Debug, PartialEq)]
pub enum PodRef {
    /// The object's JSON, exactly as the trace gave it.
    Object(String),
    /// A UID.
    Uid(String),
}

/// Which API calls a `fail` step fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailVerb {
    /// GETs.
    Get,
    /// Any status update or patch.
    Write,
    /// DELETEs.
    Delete,
    /// Every call.
    Any,
}

/// The error a `fail` step injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailError {
    /// 404.
    NotFound,
    /// 409.
    Conflict,
    /// 500.
    Internal,
    /// 503.
    Unavailable,
}

/// Which in-place resize condition a resize step names (`pending`, `in-progress`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResizeConditionName {
    /// `PodResizePending`.
    Pending,
    /// `PodResizeInProgress`.
    InProgress,
}

/// One step of the script (`shared/spec/replay-traces.md` says what each does).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Step {
    /// SetPodStatus.
    SetPodStatus {
        /// The pod.
        pod: PodRef,
        /// The status, as JSON text.
        #[serde(with = "json_text")]
        status: String,
    },
    /// SetContainerReadiness.
    SetContainerReadiness {
        /// The pod's UID.
        uid: String,
        /// The container's ID, e.g. `docker://abc`.
        container_id: String,
        /// Ready or not.
        ready: bool,
    },
    /// TerminatePod.
    TerminatePod {
        /// The pod.
        pod: PodRef,
    },
    /// RemoveOrphanedStatuses.
    RemoveOrphanedStatuses {
        /// The UIDs whose statuses stay.
        keep: Vec<String>,
    },
    /// GetPodStatus, recorded as the step's result.
    GetPodStatus {
        /// The pod's UID.
        uid: String,
    },
    /// Drain the sync queue as the scheduler does.
    Sync,
    /// One periodic batch sync.
    SyncBatch,
    /// Move the virtual clock forward.
    AdvanceClock {
        /// By this many milliseconds.
        ms: u64,
    },
    /// Add (or replace) a pod in the pod manager.
    PodManagerAdd {
        /// The pod.
        pod: Pod,
    },
    /// Remove a pod from the pod manager.
    PodManagerRemove {
        /// Its UID.
        uid: String,
    },
    /// An outside writer creates or replaces an object in the API server.
    ApiserverPut {
        /// The object.
        pod: Pod,
    },
    /// An outside writer removes an object from the API server.
    ApiserverDelete {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// The next `times` API calls of `verb` fail with `error`.
    Fail {
        /// Which calls.
        verb: FailVerb,
        /// With what.
        error: FailError,
        /// How many (1 when absent).
        #[serde(default = "once", deserialize_with = "null_as_once")]
        times: u64,
    },
    /// Change the deletion-safety answer.
    SetDeletionSafe {
        /// The new answer.
        value: bool,
    },
    /// SetContainerStartup (contract 0.1.1 and later).
    SetContainerStartup {
        /// The pod's UID.
        uid: String,
        /// The container's ID.
        container_id: String,
        /// Started or not.
        started: bool,
    },
    /// SetPodResizePendingCondition / SetPodResizeInProgressCondition (contract 0.2.1,
    /// logic v4).
    SetPodResizeCondition {
        /// The pod's UID.
        uid: String,
        /// Which condition.
        condition: ResizeConditionName,
        /// Its reason (`Deferred`, `Infeasible`, `Error`, or empty).
        #[serde(default)]
        reason: String,
        /// Its message.
        #[serde(default)]
        message: String,
        /// The pod generation the decision was about.
        #[serde(default)]
        observed_generation: i64,
    },
    /// ClearPodResizePendingCondition / ClearPodResizeInProgressCondition (contract
    /// 0.2.1, logic v4); records `{"cleared": bool}`.
    ClearPodResizeCondition {
        /// The pod's UID.
        uid: String,
        /// Which condition.
        condition: ResizeConditionName,
    },
    /// GetPodResizeConditions (contract 0.2.1, logic v4); records
    /// `{"conditions": [...]}`, PodResizePending first.
    GetPodResizeConditions {
        /// The pod's UID.
        uid: String,
    },
    /// Hot-swap the running plugin for the one in this file.
    Swap {
        /// The component file, relative to the trace's directory.
        plugin: PathBuf,
    },
    /// From now on, the API calls a 0.2.0 plugin's syncs ask for are held until a
    /// later step makes them (an interleaving the trace scripts).
    HoldApi,
    /// Makes one held call, that of the sync of pod `uid` (the oldest held call when
    /// absent), and runs that sync on to its next call, which is held too.
    CompleteApi {
        /// The pod whose sync's call is made.
        #[serde(default)]
        uid: Option<String>,
    },
    /// Stops holding: every held call is made, oldest first, each sync running to its
    /// end.
    ReleaseApi,
}

impl Trace {
    /// Parses and checks a trace document; `base_dir` resolves relative paths.
    pub fn parse(text: &str, base_dir: PathBuf) -> Result<Trace, TraceError> {
        let doc: Value = serde_json::from_str(text).map_err(TraceError::NotJson)?;
        let mut trace = Trace::from_value(doc)?;
        trace.base_dir = base_dir;
        Ok(trace)
    }

    /// Reads and checks a trace document already parsed as JSON (paths relative to the
    /// working directory).
    pub fn from_value(mut doc: Value) -> Result<Trace, TraceError> {
        if !doc.is_object() {
            return Err(TraceError::Document(serde_json::Error::custom("the trace must be a JSON object")));
        }
        // Lists are read item by item, so that an error names its step or pod.
        let mut take = |key: &str| match doc.as_object_mut().and_then(|doc| doc.remove(key)) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => Ok(items),
            Some(_) => Err(TraceError::Document(serde_json::Error::custom(format!("{key} must be a list")))),
        };
        let (steps, apiserver, pod_manager) = (take("steps")?, take("apiserver")?, take("pod_manager")?);
        let mut trace: Trace = serde_json::from_value(doc).map_err(TraceError::Document)?;
        let pods = |list: &'static str, items: Vec<Value>| {
            items
                .into_iter()
                .enumerate()
                .map(|(index, value)| {
                    let problem = match value {
                        Value::Object(_) => match serde_json::from_value(value) {
                            Ok(pod) => return Ok(pod),
                            Err(e) => Problem::NotAPod(e),
                        },
                        _ => Problem::NotAnObject,
                    };
                    Err(TraceError::World { list, index, problem })
                })
                .collect::<Result<Vec<Pod>, _>>()
        };
        trace.apiserver = pods("apiserver", apiserver)?;
        trace.pod_manager = pods("pod_manager", pod_manager)?;
        trace.steps = steps
            .into_iter()
            .enumerate()
            .map(|(step, value)| {
                if !value.is_object() {
                    let problem = Problem::Shape(serde_json::Error::custom("a step must be a JSON object"));
                    return Err(TraceError::Step { step, problem });
                }
                let op = value.get("op").and_then(Value::as_str).map(str::to_owned);
                serde_json::from_value(value).map_err(|e| {
                    // serde names an unknown tag "variant"; the format calls it an op.
                    let problem = match op {
                        Some(op) if e.to_string().starts_with(&format!("unknown variant `{op}`")) => {
                            Problem::UnknownOp { known: expected_ops(&e.to_string()), op }
                        }
                        _ => Problem::Shape(e),
                    };
                    TraceError::Step { step, problem }
                })
            })
            .collect::<Result<_, _>>()?;
        trace.check()?;
        Ok(trace)
    }

    /// The document of this trace (top-level keys in the contract's order).
    pub fn to_value(&self) -> Value {
        // Pods, statuses and paths always serialise.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// What serde cannot say: every pod has a UID, every UID a step names is known by
    /// then, statuses are PodStatuses.
    fn check(&self) -> Result<(), TraceError> {
        let mut known = BTreeSet::new();
        for (list, pods) in [("apiserver", &self.apiserver), ("pod_manager", &self.pod_manager)] {
            for (index, pod) in pods.iter().enumerate() {
                let named = if list == "apiserver" { stored_pod(pod, &mut known) } else { new_pod(pod, &mut known) };
                named.map_err(|problem| TraceError::World { list, index, problem })?;
            }
        }
        // The clock stays where times can be written (jiff's last instant, late in the
        // year 9999), and a status's times with it.
        let mut clock_ms = i128::from(self.clock.seconds) * 1000;
        for (step, s) in self.steps.iter().enumerate() {
            check_step(s, &mut known).map_err(|problem| TraceError::Step { step, problem })?;
            if let Step::AdvanceClock { ms } = s {
                clock_ms += i128::from(*ms);
                if clock_ms > i128::from(jiff::Timestamp::MAX.as_second()) * 1000 {
                    return Err(TraceError::Step { step, problem: Problem::ClockOverflow { ms: *ms } });
                }
            }
        }
        Ok(())
    }
}

fn check_step(step: &Step, known: &mut BTreeSet<String>) -> Result<(), Problem> {
    match step {
        Step::SetPodStatus { pod, status } => {
            pod_ref(pod, known)?;
            serde_json::from_str::<PodStatus>(status).map_err(Problem::NotAStatus)?;
        }
        Step::TerminatePod { pod } => pod_ref(pod, known)?,
        Step::SetContainerReadiness { uid, .. }
        | Step::SetContainerStartup { uid, .. }
        | Step::SetPodResizeCondition { uid, .. }
        | Step::ClearPodResizeCondition { uid, .. }
        | Step::GetPodResizeConditions { uid }
        | Step::GetPodStatus { uid }
        | Step::PodManagerRemove { uid } => known_uid(uid, known)?,
        Step::RemoveOrphanedStatuses { keep } => keep.iter().try_for_each(|uid| known_uid(uid, known))?,
        Step::PodManagerAdd { pod } => new_pod(pod, known)?,
        Step::ApiserverPut { pod } => stored_pod(pod, known)?,
        Step::Sync
        | Step::SyncBatch
        | Step::AdvanceClock { .. }
        | Step::ApiserverDelete { .. }
        | Step::Fail { .. }
        | Step::SetDeletionSafe { .. }
        | Step::Swap { .. }
        | Step::HoldApi
        | Step::ReleaseApi => {}
        Step::CompleteApi { uid } => {
            if let Some(uid) = uid {
                known_uid(uid, known)?;
            }
        }
    }
    Ok(())
}

/// A pod whose UID becomes known.
fn new_pod(pod: &Pod, known: &mut BTreeSet<String>) -> Result<(), Problem> {
    match pod.metadata.uid.as_deref() {
        Some(uid) if !uid.is_empty() => {
            known.insert(uid.to_owned());
            Ok(())
        }
        _ => Err(Problem::NoUid),
    }
}

/// A pod for the API server, which keys objects by namespace and name.
fn stored_pod(pod: &Pod, known: &mut BTreeSet<String>) -> Result<(), Problem> {
    new_pod(pod, known)?;
    if pod.metadata.name.as_deref().is_none_or(str::is_empty) {
        return Err(Problem::NoName);
    }
    Ok(())
}

fn pod_ref(pod: &PodRef, known: &mut BTreeSet<String>) -> Result<(), Problem> {
    match pod {
        PodRef::Uid(uid) => known_uid(uid, known),
        PodRef::Object(json) => new_pod(&serde_json::from_str(json).map_err(Problem::NotAPod)?, known),
    }
}

fn known_uid(uid: &str, known: &BTreeSet<String>) -> Result<(), Problem> {
    if known.contains(uid) { Ok(()) } else { Err(Problem::UnknownUid(uid.to_owned())) }
}

fn default_clock() -> Timestamp {
    clock::parse(DEFAULT_CLOCK).unwrap_or_default()
}

fn yes() -> bool {
    true
}

fn once() -> u64 {
    1
}

fn here() -> PathBuf {
    PathBuf::from(".")
}

/// The ops serde's "unknown variant `x`, expected one of `a`, `b`" lists, as `a, b`:
/// the format's ops as the step type declares them, written nowhere else.
fn expected_ops(serde_message: &str) -> String {
    let listed = serde_message.split_once("expected one of ").map_or("", |(_, ops)| ops);
    let listed = listed.split(" at line ").next().unwrap_or_default();
    listed.replace('`', "")
}

/// `null` reads as absent, as the format allows for every top-level key.
fn null_as_default<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn null_as_true<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(true))
}

fn null_as_once<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(Option::<u64>::deserialize(d)?.unwrap_or(1))
}

impl Serialize for PodRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PodRef::Uid(uid) => s.serialize_str(uid),
            PodRef::Object(json) => json_text::serialize(json, s),
        }
    }
}

impl<'de> Deserialize<'de> for PodRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(uid) => Ok(PodRef::Uid(uid)),
            object @ Value::Object(_) => Ok(PodRef::Object(object.to_string())),
            _ => Err(D::Error::custom("a pod must be a JSON object or a UID")),
        }
    }
}

/// A JSON value kept as its compact text (what the plugin is handed).
mod json_text {
    use super::*;

    pub fn serialize<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
        let raw: Box<RawValue> = serde_json::from_str(text).map_err(serde::ser::Error::custom)?;
        raw.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Ok(Value::deserialize(d)?.to_string())
    }
}

/// The clock as RFC 3339 text.
pub(crate) mod clock {
    use super::*;

    /// Why a trace's clock does not parse. Display is what the trace error reports.
    #[derive(Debug, thiserror::Error)]
    pub enum ClockError {
        /// The text is not an RFC 3339 time.
        #[error("clock {text:?} is not an RFC 3339 time: {source}")]
        NotRfc3339 {
            /// The clock as the trace gives it.
            text: String,
            /// What jiff found wrong with it.
            #[source]
            source: jiff::Error,
        },
    }

    /// Parses RFC 3339 (fractional seconds allowed) into the contract's time.
    pub fn parse(text: &str) -> Result<Timestamp, ClockError> {
        let ts: jiff::Timestamp =
            text.parse().map_err(|source| ClockError::NotRfc3339 { text: text.to_owned(), source })?;
        let nanos = ts.subsec_nanosecond();
        // jiff keeps the sign of the fraction with the seconds; the contract's time
        // never has a negative fraction.
        let (seconds, nanoseconds) = if nanos < 0 {
            (ts.as_second() - 1, (1_000_000_000 + nanos) as u32)
        } else {
            (ts.as_second(), nanos as u32)
        };
        Ok(Timestamp { seconds, nanoseconds })
    }

    /// RFC 3339 in UTC, with a fraction only when there is one.
    pub fn format(clock: Timestamp) -> String {
        match jiff::Timestamp::new(clock.seconds, clock.nanoseconds as i32) {
            Ok(ts) => ts.to_string(),
            // Out of jiff's range: no trace can have parsed to it; keep the default.
            Err(_) => DEFAULT_CLOCK.to_string(),
        }
    }

    pub fn serialize<S: Serializer>(clock: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(*clock))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(default_clock()),
            Some(text) => parse(&text).map_err(D::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_moved_past_the_last_instant_is_refused_at_its_step() {
        let ok = r#"{"clock":"9999-12-30T21:59:58Z","steps":[{"op":"advance-clock","ms":2000}]}"#;
        parse(ok).expect("a clock that ends at the last second");
        let over = r#"{"clock":"9999-12-30T21:59:58Z","steps":[{"op":"advance-clock","ms":1000},{"op":"advance-clock","ms":1001}]}"#;
        let error = parse(over).expect_err("refused");
        assert_eq!(error.to_string(), "step 1: advance-clock by 1001 ms moves the clock past 9999-12-30T22:00:00Z");
    }

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
        let nulls = parse(r#"{"clock": null, "apiserver": null, "deletion_safe": null, "steps": null}"#).unwrap();
        assert!(nulls.deletion_safe && nulls.steps.is_empty() && nulls.clock == t.clock);
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
    fn a_clock_that_is_no_time_is_reported_with_jiffs_reason() {
        let error = clock::parse("yesterday").unwrap_err();
        let reason = "yesterday".parse::<jiff::Timestamp>().unwrap_err();
        assert_eq!(error.to_string(), format!("clock \"yesterday\" is not an RFC 3339 time: {reason}"));
        assert!(std::error::Error::source(&error).is_some(), "the cause is kept");
        assert!(err(r#"{"clock": "yesterday"}"#).starts_with("not a trace: clock \"yesterday\" is not an RFC 3339"));
    }

    #[test]
    fn errors_name_the_step() {
        let unknown = parse(r#"{"steps": [{"op": "sync"}, {"op": "nope"}]}"#).unwrap_err();
        assert_eq!(unknown.step(), Some(1));
        let said = unknown.to_string();
        assert!(said.starts_with("step 1: unknown op \"nope\"; the ops are set-pod-status, "), "{said}");
        assert!(said.contains(", advance-clock, ") && said.ends_with(", release-api"), "{said}");
        assert!(err(r#"{"steps": [{"op": "advance-clock"}]}"#).starts_with("step 0: missing field `ms`"));
        assert!(err(r#"{"steps": [{"op": "get-pod-status", "uid": "ghost"}]}"#).starts_with("step 0: UID \"ghost\""));
        assert!(err(r#"{"steps": [3]}"#).starts_with("step 0: a step must be a JSON object"));
        assert!(err("[").starts_with("not JSON"));
        assert!(err("[]").starts_with("not a trace"));
        assert_eq!(err(r#"{"apiserver": [{"metadata": {"name": "x"}}]}"#), "apiserver[0]: pod has no metadata.uid");
        assert_eq!(err(r#"{"apiserver": [{"metadata": {"uid": "x"}}]}"#), "apiserver[0]: pod has no metadata.name");
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
        assert!(err(r#"{"steps": [{"op": "fail", "verb": "put", "error": "internal"}]}"#).contains("unknown variant"));
    }

    #[test]
    fn a_status_must_be_a_pod_status() {
        let bad = format!(r#"{{"steps": [{{"op": "set-pod-status", "pod": {POD}, "status": {{"conditions": 3}}}}]}}"#);
        assert!(err(&bad).starts_with("step 0: status is not a core/v1 PodStatus"));
    }

    #[test]
    fn a_trace_reads_back_what_it_writes() {
        let text = format!(
            r#"{{"clock": "2026-01-01T00:00:00.5Z", "apiserver": [{POD}], "steps": [
                {{"op": "set-pod-status", "pod": "u1", "status": {{"phase": "Running"}}}},
                {{"op": "terminate-pod", "pod": {POD}}},
                {{"op": "fail", "verb": "any", "error": "not-found", "times": 2}},
                {{"op": "swap", "plugin": "v2.wasm"}}]}}"#
        );
        let trace = parse(&text).unwrap();
        let doc = trace.to_value();
        assert_eq!(doc["clock"], "2026-01-01T00:00:00.5Z");
        assert_eq!(
            doc["steps"][0],
            serde_json::json!({"op": "set-pod-status", "pod": "u1", "status": {"phase": "Running"}})
        );
        assert_eq!(doc["steps"][2]["error"], "not-found");
        let again = Trace::from_value(doc.clone()).unwrap();
        assert_eq!(again.steps, trace.steps);
        assert_eq!(again.to_value(), doc);
    }
}
