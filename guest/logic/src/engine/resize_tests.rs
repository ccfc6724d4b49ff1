//! The resize conditions as 1.35 keeps them, their bounds, and their place in the state
//! document and change sets, on an engine over a clock and nothing else.

use std::sync::Arc;

use k8s_openapi::api::core::v1::PodStatus;
use serde_json::{Value, json};

use super::Engine;
use crate::error::ManagerError;
use crate::imports::{
    ApiError, DeleteOptions, Imports, Level, StatusPatch, StatusUpdate, SyncRequest, Timestamp, UidTranslations,
};
use crate::resize::{MAX_RESIZE_MESSAGE_BYTES, MAX_RESIZE_REASON_BYTES, ResizeCondition};
use crate::status::VersionedStatus;

use ResizeCondition::{InProgress, Pending};

/// A clock the test moves; every other import is unused by resize conditions.
#[derive(Default)]
struct Clock {
    seconds: i64,
}

impl Imports for Clock {
    fn get_pod(&mut self, _: &str, _: &str) -> Result<String, ApiError> {
        Err(ApiError::NotFound("no API server here".into()))
    }
    fn update_pod_status(&mut self, _: StatusUpdate) -> Result<String, ApiError> {
        Err(ApiError::NotFound("no API server here".into()))
    }
    fn patch_pod_status(&mut self, _: StatusPatch) -> Result<String, ApiError> {
        Err(ApiError::NotFound("no API server here".into()))
    }
    fn delete_pod(&mut self, _: &str, _: &str, _: DeleteOptions) -> Result<(), ApiError> {
        Err(ApiError::NotFound("no API server here".into()))
    }
    fn get_pod_by_uid(&mut self, _: &str) -> Option<String> {
        None
    }
    fn get_mirror_pod_by_pod(&mut self, _: &str) -> Option<String> {
        None
    }
    fn translate_pod_uid(&mut self, uid: &str) -> String {
        uid.to_string()
    }
    fn get_uid_translations(&mut self) -> UidTranslations {
        UidTranslations::default()
    }
    fn pod_resources_are_reclaimed(&mut self, _: &str, _: &str) -> bool {
        false
    }
    fn pod_could_have_running_containers(&mut self, _: &str) -> bool {
        false
    }
    fn now(&mut self) -> Timestamp {
        // Nanoseconds the API server would drop: the conditions keep seconds.
        Timestamp { seconds: self.seconds, nanoseconds: 250_000_000 }
    }
    fn log(&mut self, _: Level, _: &str) {}
    fn log_enabled(&mut self, _: Level) -> bool {
        false
    }
    fn push_sync_request(&mut self, _: SyncRequest) -> bool {
        true
    }
}

/// 2026-01-01T00:00:00Z plus `offset` seconds, as the API writes times.
fn at(offset: i64) -> String {
    let base = 1_767_225_600;
    let ts = k8s_openapi::jiff::Timestamp::from_second(base + offset).unwrap();
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn new_engine() -> Engine<Clock> {
    let mut engine = Engine::new(Clock::default());
    engine.imports_mut().seconds = 1_767_225_600;
    engine
}

fn tick(engine: &mut Engine<Clock>, seconds: i64) {
    engine.imports_mut().seconds += seconds;
}

fn conditions(engine: &Engine<Clock>, uid: &str) -> Vec<Value> {
    let json = engine.resize_conditions_json(uid).unwrap();
    json.iter().map(|c| serde_json::from_str(c).unwrap()).collect()
}

fn cache_status(engine: &mut Engine<Clock>, uid: &str) {
    let status = VersionedStatus {
        status: PodStatus::default(),
        version: 1,
        pod_name: uid.to_string(),
        pod_namespace: "default".to_string(),
        pod_is_finished: false,
    };
    engine.put_status(uid, Arc::new(status));
}

#[test]
fn a_pending_condition_is_true_with_its_reason_and_times_now() {
    let mut engine = new_engine();
    engine.set_resize_condition("u", Pending, "Deferred", "not enough cpu", 3).unwrap();
    assert_eq!(
        conditions(&engine, "u"),
        [json!({"type": "PodResizePending", "status": "True", "reason": "Deferred", "message": "not enough cpu",
                "observedGeneration": 3, "lastProbeTime": at(0), "lastTransitionTime": at(0)})]
    );
}

#[test]
fn a_pending_condition_keeps_its_transition_time_while_its_reason_stays() {
    let mut engine = new_engine();
    engine.set_resize_condition("u", Pending, "Deferred", "first", 1).unwrap();
    tick(&mut engine, 10);
    engine.set_resize_condition("u", Pending, "Deferred", "second", 2).unwrap();
    let [c] = &conditions(&engine, "u")[..] else { panic!("one condition") };
    assert_eq!((&c["lastTransitionTime"], &c["lastProbeTime"]), (&json!(at(0)), &json!(at(10))));
    // PodResizePending takes the new generation and message.
    assert_eq!((&c["observedGeneration"], &c["message"]), (&json!(2), &json!("second")));

    tick(&mut engine, 10);
    engine.set_resize_condition("u", Pending, "Infeasible", "never", 2).unwrap();
    let [c] = &conditions(&engine, "u")[..] else { panic!("one condition") };
    assert_eq!((&c["lastTransitionTime"], &c["reason"]), (&json!(at(20)), &json!("Infeasible")));
}

#[test]
fn in_progress_keeps_its_reason_and_message_when_both_new_ones_are_empty_and_always_its_generation() {
    let mut engine = new_engine();
    engine.set_resize_condition("u", InProgress, "Error", "cgroup write failed", 4).unwrap();
    tick(&mut engine, 5);
    engine.set_resize_condition("u", InProgress, "", "", 9).unwrap();
    let [c] = &conditions(&engine, "u")[..] else { panic!("one condition") };
    assert_eq!(
        c,
        &json!({"type": "PodResizeInProgress", "status": "True", "reason": "Error",
                "message": "cgroup write failed", "observedGeneration": 4,
                "lastProbeTime": at(5), "lastTransitionTime": at(0)})
    );

    // One of the two given replaces both; the reason changing moves the transition.
    tick(&mut engine, 5);
    engine.set_resize_condition("u", InProgress, "", "retrying", 9).unwrap();
    let [c] = &conditions(&engine, "u")[..] else { panic!("one condition") };
    assert_eq!((&c["reason"], &c["message"], &c["observedGeneration"]), (&json!(""), &json!("retrying"), &json!(4)));
    assert_eq!(c["lastTransitionTime"], json!(at(10)));

    // Cleared first, the generation moves.
    assert!(engine.clear_resize_condition("u", InProgress));
    engine.set_resize_condition("u", InProgress, "", "", 9).unwrap();
    assert_eq!(conditions(&engine, "u")[0]["observedGeneration"], json!(9));
}

#[test]
fn conditions_list_pending_first_and_clear_answers_whether_one_was_set() {
    let mut engine = new_engine();
    engine.set_resize_condition("u", InProgress, "", "", 1).unwrap();
    engine.set_resize_condition("u", Pending, "Deferred", "", 2).unwrap();
    let types: Vec<Value> = conditions(&engine, "u").iter().map(|c| c["type"].clone()).collect();
    assert_eq!(types, [json!("PodResizePending"), json!("PodResizeInProgress")]);

    assert!(engine.clear_resize_condition("u", Pending));
    assert!(!engine.clear_resize_condition("u", Pending));
    assert!(engine.clear_resize_condition("u", InProgress));
    assert!(!engine.clear_resize_condition("u", InProgress));
    assert!(!engine.clear_resize_condition("other", InProgress));
    assert!(conditions(&engine, "u").is_empty());
    assert!(engine.resize_conditions("u").is_none(), "no empty entry is kept");
}

#[test]
fn an_over_long_reason_or_message_is_refused_and_nothing_changes() {
    let mut engine = new_engine();
    engine.set_resize_condition("u", Pending, "Deferred", "kept", 1).unwrap();
    let before = conditions(&engine, "u");

    let reason = "R".repeat(MAX_RESIZE_REASON_BYTES + 1);
    let err = engine.set_resize_condition("u", Pending, &reason, "", 2).unwrap_err();
    assert_eq!(
        err,
        ManagerError::InvalidStatus(format!(
            "PodResizePending reason is 1025 bytes, over the {MAX_RESIZE_REASON_BYTES} accepted"
        ))
    );
    let message = "m".repeat(MAX_RESIZE_MESSAGE_BYTES + 1);
    let err = engine.set_resize_condition("u", InProgress, "", &message, 2).unwrap_err();
    assert!(
        matches!(&err, ManagerError::InvalidStatus(m) if m.starts_with("PodResizeInProgress message is 32769 bytes"))
    );
    assert_eq!(conditions(&engine, "u"), before);

    // At the bounds, accepted.
    let reason = "R".repeat(MAX_RESIZE_REASON_BYTES);
    let message = "m".repeat(MAX_RESIZE_MESSAGE_BYTES);
    engine.set_resize_condition("u", InProgress, &reason, &message, 2).unwrap();
}

#[test]
fn a_document_without_resize_conditions_has_no_field_for_them() {
    let mut engine = new_engine();
    cache_status(&mut engine, "u");
    let saved: Value = serde_json::from_str(&engine.save_state().unwrap()).unwrap();
    assert!(saved.get("podResizeConditions").is_none(), "{saved}");
    let changes: Value = serde_json::from_str(&engine.save_state_changes().unwrap()).unwrap();
    assert!(changes["patch"].get("podResizeConditions").is_none(), "{changes}");

    engine.set_resize_condition("u", Pending, "Deferred", "", 1).unwrap();
    engine.clear_resize_condition("u", Pending);
    engine.save_state_changes().unwrap();
    let saved: Value = serde_json::from_str(&engine.save_state().unwrap()).unwrap();
    assert!(saved.get("podResizeConditions").is_none(), "{saved}");
}

#[test]
fn resize_conditions_move_with_the_state_document() {
    let mut engine = new_engine();
    engine.set_resize_condition("u", Pending, "Infeasible", "too big", 2).unwrap();
    engine.set_resize_condition("w", InProgress, "", "", 5).unwrap();
    let document = engine.save_state().unwrap();
    let saved: Value = serde_json::from_str(&document).unwrap();
    assert_eq!(saved["podResizeConditions"]["u"]["podResizePending"]["reason"], json!("Infeasible"));

    let mut other = new_engine();
    other.load_state(&document).unwrap();
    assert_eq!(other.save_state().unwrap(), document);
    for uid in ["u", "w"] {
        assert_eq!(conditions(&other, uid), conditions(&engine, uid));
    }
    // A load replaces the conditions whole.
    let mut third = new_engine();
    third.set_resize_condition("x", Pending, "Deferred", "", 1).unwrap();
    third.load_state(&document).unwrap();
    assert!(conditions(&third, "x").is_empty());
}

#[test]
fn a_change_set_carries_set_and_cleared_conditions() {
    let mut engine = new_engine();
    let mut follower = new_engine();
    follower.load_state(&engine.save_state().unwrap()).unwrap();

    engine.set_resize_condition("u", Pending, "Deferred", "", 1).unwrap();
    engine.set_resize_condition("w", InProgress, "", "", 1).unwrap();
    let changes = engine.save_state_changes().unwrap();
    follower.apply_state_changes(&changes).unwrap();
    assert_eq!(conditions(&follower, "u"), conditions(&engine, "u"));

    engine.clear_resize_condition("u", Pending);
    let changes = engine.save_state_changes().unwrap();
    let patch: Value = serde_json::from_str(&changes).unwrap();
    assert_eq!(patch["patch"]["podResizeConditions"], json!({"u": null}));
    follower.apply_state_changes(&changes).unwrap();
    assert!(conditions(&follower, "u").is_empty());
    assert_eq!(follower.save_state().unwrap(), engine.save_state().unwrap());
}

#[test]
fn a_change_set_with_a_mistyped_condition_is_refused_and_nothing_changes() {
    let mut engine = new_engine();
    cache_status(&mut engine, "u");
    engine.set_resize_condition("u", Pending, "Deferred", "", 1).unwrap();
    let before = engine.save_state().unwrap();
    let mut changes: Value = serde_json::from_str(&engine.save_state_changes().unwrap()).unwrap();
    changes["patch"]["statuses"] = json!({"u": null});
    changes["patch"]["podResizeConditions"] =
        json!({"u": null, "w": {"podResizePending": {"type": "PodResizeInProgress", "status": "True"}}});
    let err = engine.apply_state_changes(&changes.to_string()).unwrap_err();
    assert!(matches!(&err, ManagerError::InvalidState(m) if m.contains("of pod w has type")), "{err}");
    assert_eq!(engine.save_state().unwrap(), before);

    let mut document: Value = serde_json::from_str(&before).unwrap();
    let long = "R".repeat(MAX_RESIZE_REASON_BYTES + 1);
    document["podResizeConditions"]["u"]["podResizePending"]["reason"] = json!(long);
    let err = engine.load_state(&document.to_string()).unwrap_err();
    assert!(matches!(&err, ManagerError::InvalidState(m) if m.contains("pod u: ")), "{err}");
    assert_eq!(engine.save_state().unwrap(), before);
}

#[test]
fn conditions_go_with_an_orphaned_status_and_stay_for_a_pod_without_one() {
    let mut engine = new_engine();
    cache_status(&mut engine, "gone");
    cache_status(&mut engine, "kept");
    for uid in ["gone", "kept", "uncached"] {
        engine.set_resize_condition(uid, Pending, "Deferred", "", 1).unwrap();
    }
    engine.save_state_changes().unwrap();
    assert_eq!(engine.remove_orphaned_statuses(&["kept".to_string()]), 1);
    assert!(conditions(&engine, "gone").is_empty());
    assert_eq!(conditions(&engine, "kept").len(), 1);
    // Upstream walks the cached statuses: a pod with conditions and no status keeps them.
    assert_eq!(conditions(&engine, "uncached").len(), 1);
    let changes: Value = serde_json::from_str(&engine.save_state_changes().unwrap()).unwrap();
    assert_eq!(changes["patch"]["podResizeConditions"], json!({"gone": null}));
}
