//! A 0.2.1 plugin's in-place resize calls, each bounded both ways: what the host
//! passes is checked before the plugin sees it, and what the plugin returns before
//! anyone above the host reads it.

use serde::Deserialize;

use super::{ComponentPlugin, ResizeExports};
use crate::bindings::{ManagerError, ResizeCondition};
use crate::limits::{FaultKind, MAX_RESIZE_CONDITION_BYTES, MAX_RESIZE_MESSAGE_BYTES, MAX_RESIZE_REASON_BYTES};
use crate::plugin::call_error::{CallError, Result};
use crate::shown::shown;

const SET: &str = "set-pod-resize-condition";
const CLEAR: &str = "clear-pod-resize-condition";
const GET: &str = "get-pod-resize-conditions";

/// The condition types in the order `get-pod-resize-conditions` lists them.
const ORDER: [&str; 2] = ["PodResizePending", "PodResizeInProgress"];

impl ComponentPlugin {
    /// `set-pod-resize-condition`: the UID, reason and message bounded first.
    pub(super) fn resize_set(
        &mut self,
        pod_uid: &str,
        condition: ResizeCondition,
        reason: &str,
        message: &str,
        observed_generation: i64,
    ) -> Result<()> {
        let resize = self.resize_exports(SET)?;
        self.check_uid(SET, pod_uid)?;
        check_text(SET, "reason", reason.len(), MAX_RESIZE_REASON_BYTES)?;
        check_text(SET, "message", message.len(), MAX_RESIZE_MESSAGE_BYTES)?;
        let (contract, pod_uid) = (self.contract(), pod_uid.to_string());
        self.enter(
            SET,
            |_, s| resize.call_set_pod_resize_condition(s, &pod_uid, condition, reason, message, observed_generation),
            |error| rejected(SET, contract, error.into()),
        )
    }

    /// `clear-pod-resize-condition`.
    pub(super) fn resize_clear(&mut self, pod_uid: &str, condition: ResizeCondition) -> Result<bool> {
        let resize = self.resize_exports(CLEAR)?;
        self.check_uid(CLEAR, pod_uid)?;
        let (contract, pod_uid) = (self.contract(), pod_uid.to_string());
        self.enter(
            CLEAR,
            |_, s| resize.call_clear_pod_resize_condition(s, &pod_uid, condition),
            |error| rejected(CLEAR, contract, error.into()),
        )
    }

    /// `get-pod-resize-conditions`, its answer held to the contract: at most the two
    /// conditions, each a PodCondition object of at most [`MAX_RESIZE_CONDITION_BYTES`],
    /// PodResizePending before PodResizeInProgress. Anything else is a plugin bug that
    /// poisons the instance (its state can no longer be trusted).
    pub(super) fn resize_get(&mut self, pod_uid: &str) -> Result<Vec<String>> {
        let resize = self.resize_exports(GET)?;
        self.check_uid(GET, pod_uid)?;
        let (contract, pod_uid) = (self.contract(), pod_uid.to_string());
        let conditions = self.enter(
            GET,
            |_, s| resize.call_get_pod_resize_conditions(s, &pod_uid),
            |error| rejected(GET, contract, error.into()),
        )?;
        if let Some(len) = conditions.iter().map(String::len).find(|len| *len > MAX_RESIZE_CONDITION_BYTES) {
            return Err(self.oversized(GET, "a resize condition", len, MAX_RESIZE_CONDITION_BYTES));
        }
        if let Err(message) = check_conditions(&conditions) {
            self.fault = Some(message.clone());
            return Err(CallError::Fault { call: GET, kind: FaultKind::ResizeConditions, message });
        }
        Ok(conditions)
    }

    /// The plugin's resize functions, or the typed refusal of a plugin of an older
    /// contract (never a trap: the host does not call what the plugin lacks).
    fn resize_exports(&self, call: &'static str) -> Result<ResizeExports> {
        self.resize.clone().ok_or(CallError::Unsupported { call, contract: self.contract() })
    }

    /// A pod UID the host passes, within the boundary limit. It hands the plugin no
    /// status: upstream keeps a resize condition beside the status cache, and a pod
    /// named only here is never one its manager writes, so the plugin may not reach it
    /// either ([`crate::handed`]).
    fn check_uid(&mut self, call: &'static str, pod_uid: &str) -> Result<()> {
        self.check_input(call, "pod-uid", pod_uid.len())
    }
}

/// A reason or message over its bound, refused before the copy.
fn check_text(call: &'static str, what: &'static str, len: usize, limit: usize) -> Result<()> {
    if len > limit {
        return Err(CallError::TooLarge { call, what, len, limit });
    }
    Ok(())
}

/// The plugin's refusal: `unsupported` (a logic without in-place resize) as the host's
/// typed "unsupported", any other as rejected.
fn rejected(call: &'static str, contract: crate::bindings::Contract, error: ManagerError) -> CallError {
    match error {
        ManagerError::Unsupported(_) => CallError::Unsupported { call, contract },
        error => CallError::Rejected { call, error },
    }
}

/// Just enough of a PodCondition to check the list's shape.
#[derive(Deserialize)]
struct ConditionType {
    #[serde(rename = "type")]
    type_: String,
}

/// Whether `conditions` is what the contract allows: each a JSON object with a `type`,
/// the types in [`ORDER`], each at most once. Says what is wrong.
fn check_conditions(conditions: &[String]) -> std::result::Result<(), String> {
    if conditions.len() > ORDER.len() {
        return Err(format!("returned {} resize conditions; a pod has at most {}", conditions.len(), ORDER.len()));
    }
    let mut next = 0;
    for condition in conditions {
        let parsed: ConditionType = serde_json::from_str(condition)
            .map_err(|e| format!("returned a resize condition that is not a PodCondition object: {e}"))?;
        let Some(at) = ORDER.iter().skip(next).position(|t| *t == parsed.type_) else {
            return Err(format!(
                "returned a resize condition of type {:?} out of place (PodResizePending, then PodResizeInProgress, \
                 each at most once)",
                shown(&parsed.type_)
            ));
        };
        next += at + 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_conditions;

    #[test]
    fn conditions_in_order_each_once_pass() {
        let pending = r#"{"type":"PodResizePending","status":"True","reason":"Deferred"}"#.to_string();
        let in_progress = r#"{"type":"PodResizeInProgress","status":"True"}"#.to_string();
        assert_eq!(check_conditions(&[]), Ok(()));
        assert_eq!(check_conditions(std::slice::from_ref(&in_progress)), Ok(()));
        assert_eq!(check_conditions(&[pending.clone(), in_progress.clone()]), Ok(()));
        let swapped = check_conditions(&[in_progress.clone(), pending.clone()]).unwrap_err();
        assert!(swapped.contains("\"PodResizePending\" out of place"), "{swapped}");
        let twice = check_conditions(&[pending.clone(), pending.clone()]).unwrap_err();
        assert!(twice.contains("out of place"), "{twice}");
        let three = check_conditions(&[pending.clone(), in_progress.clone(), in_progress]).unwrap_err();
        assert!(three.contains("returned 3 resize conditions"), "{three}");
        let foreign = check_conditions(&[r#"{"type":"Ready"}"#.to_string()]).unwrap_err();
        assert!(foreign.contains("\"Ready\""), "{foreign}");
        let not_json = check_conditions(&["[1]".to_string()]).unwrap_err();
        assert!(not_json.contains("not a PodCondition object"), "{not_json}");
    }
}
