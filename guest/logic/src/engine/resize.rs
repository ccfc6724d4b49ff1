//! The resize conditions the engine keeps per pod UID (upstream's `podResizeConditions`):
//! set, cleared and read as Kubernetes 1.35 does, kept apart from the cached statuses
//! but dropped with a pod's status, saved in the state document and in change sets.
//! Only a logic version that knows them (v4) offers these operations; the others carry
//! what a swap hands them untouched.

use k8s_openapi::api::core::v1::PodCondition;
use podstatus_core::truncate_time;

use super::Engine;
use crate::error::{ManagerError, Result};
use crate::imports::Imports;
use crate::resize::{ResizeCondition, ResizeConditions, check_resize_text};

impl<I: Imports> Engine<I> {
    /// The resize conditions cached for `uid` (a pod's own UID, never translated, as
    /// upstream keys them), if any is set.
    pub fn resize_conditions(&self, uid: &str) -> Option<&ResizeConditions> {
        self.resize_conditions.get(uid)
    }

    /// Sets the condition `which` of `uid` as 1.35's `SetPodResizePendingCondition` /
    /// `SetPodResizeInProgressCondition` do: status True, lastProbeTime now, the
    /// transition time kept while the reason stays the same. PodResizeInProgress keeps
    /// its reason and message when both new ones are empty, and always keeps its
    /// observedGeneration (to move it, the caller clears the condition first). A reason
    /// or message over the bounds is refused and nothing changes.
    pub fn set_resize_condition(
        &mut self,
        uid: &str,
        which: ResizeCondition,
        reason: &str,
        message: &str,
        observed_generation: i64,
    ) -> Result<()> {
        check_resize_text(which, reason, message)?;
        let old = self.resize_conditions.get(uid).and_then(|c| c.get(which)).cloned();
        let (mut reason, mut message, mut observed_generation) =
            (reason.to_string(), message.to_string(), observed_generation);
        if let (ResizeCondition::InProgress, Some(old)) = (which, &old) {
            if reason.is_empty() && message.is_empty() {
                reason = old.reason.clone().unwrap_or_default();
                message = old.message.clone().unwrap_or_default();
            }
            observed_generation = old.observed_generation.unwrap_or_default();
        }
        let mut now = self.now_cached(&mut None);
        // The API server keeps seconds; so does the state document, so a condition reads
        // back the same after a save and load.
        truncate_time(&mut now);
        let transition = match &old {
            Some(old) if old.reason.as_deref().unwrap_or_default() == reason => old.last_transition_time.clone(),
            _ => Some(now.clone()),
        };
        let condition = PodCondition {
            type_: which.condition_type().to_string(),
            status: "True".to_string(),
            last_probe_time: Some(now),
            last_transition_time: transition,
            observed_generation: Some(observed_generation),
            reason: Some(reason),
            message: Some(message),
        };
        *self.resize_conditions.entry(uid.to_string()).or_default().slot(which) = Some(condition);
        self.changes.resize_conditions.insert(uid.to_string());
        Ok(())
    }

    /// Clears the condition `which` of `uid`; true when it was set (upstream's
    /// `ClearPodResizeInProgressCondition`; its `ClearPodResizePendingCondition` answers
    /// nothing, the same clearing).
    pub fn clear_resize_condition(&mut self, uid: &str, which: ResizeCondition) -> bool {
        let Some(conditions) = self.resize_conditions.get_mut(uid) else {
            return false;
        };
        let was_set = conditions.slot(which).take().is_some();
        if conditions.is_empty() {
            self.resize_conditions.remove(uid);
        }
        if was_set {
            self.changes.resize_conditions.insert(uid.to_string());
        }
        was_set
    }

    /// The JSON (core/v1 PodCondition) of each resize condition set for `uid`,
    /// PodResizePending first (upstream's `GetPodResizeConditions`).
    pub fn resize_conditions_json(&self, uid: &str) -> Result<Vec<String>> {
        let Some(conditions) = self.resize_conditions.get(uid) else {
            return Ok(Vec::new());
        };
        conditions
            .list()
            .map(|c| serde_json::to_string(c).map_err(|e| ManagerError::InvalidStatus(e.to_string())))
            .collect()
    }

    /// Drops the resize conditions of `uid` with its status (upstream's `deletePodStatus`
    /// and `RemoveOrphanedStatuses` with `InPlacePodVerticalScaling`, on since 1.33),
    /// noting the change.
    pub(crate) fn drop_resize_conditions(&mut self, uid: &str) {
        if self.resize_conditions.remove(uid).is_some() {
            self.changes.resize_conditions.insert(uid.to_string());
        }
    }
}
