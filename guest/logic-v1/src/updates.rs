//! The 2017 status manager's updates: what each call changes in the cached status, and
//! what a sync request plans.

use k8s_openapi::api::core::v1::{ContainerState, ContainerStateTerminated, PodStatus};
use podstatus_core::{
    POD_INITIALIZED, POD_READY, PodView, find_condition, find_condition_mut, find_container_status,
    find_container_status_mut, normalize_status, parse_status, status_equal,
};
use podstatus_logic::{
    ContainerProbe, Engine, Imports, InvalidPod, Level, ManagerError, PodSync, Policy, Result, SyncOrigin, SyncRequest,
    SyncTarget, UpdateOutcome,
};

use crate::V1;
use crate::ready::generate_pod_ready_condition;

impl<I: Imports> Policy<I> for V1 {
    /// Caches `status` for `pod`, forcing an update when the pod is being deleted (a pod
    /// that no longer runs must still be able to trigger its update and deletion).
    fn set_pod_status(&self, engine: &mut Engine<I>, pod_json: &str, status_json: &str) -> Result<UpdateOutcome> {
        let pod = PodView::parse_with_uid(pod_json).map_err(|e| ManagerError::InvalidPod(e.to_string()))?;
        let status = parse_status(status_json).map_err(|e| ManagerError::InvalidStatus(e.to_string()))?;
        let force = pod.is_being_deleted();
        update_status_internal(engine, &pod, pod_json, status, force)
    }

    /// Sets one container's readiness in the cached status and regenerates Ready.
    fn set_container_readiness(&self, engine: &mut Engine<I>, probe: ContainerProbe<'_>) -> Result<UpdateOutcome> {
        let ContainerProbe { pod_uid, container_id, passed: ready } = probe;
        let Some(pod_json) = engine.imports_mut().get_pod_by_uid(pod_uid) else {
            engine.log(Level::Debug, || format!("pod {pod_uid} has been deleted, no need to update readiness"));
            return Ok(UpdateOutcome::PodNotFound);
        };
        let pod = PodView::parse_with_uid(&pod_json).invalid_pod(|| format!("pod manager's pod {pod_uid}"))?;
        let Some(cached) = engine.cached(&pod.metadata.uid) else {
            engine.log(Level::Warn, || {
                format!("container readiness changed before pod has synced: {} - {container_id}", pod.full_name())
            });
            return Ok(UpdateOutcome::NotCached);
        };
        let Some(container) = find_container_status(&cached.status, container_id) else {
            engine.log(Level::Warn, || {
                format!("container readiness changed for unknown container: {} - {container_id}", pod.full_name())
            });
            return Ok(UpdateOutcome::UnknownContainer);
        };
        if container.ready == ready {
            return Ok(UpdateOutcome::Unchanged);
        }

        let mut status = cached.status.clone();
        if let Some(container) = find_container_status_mut(&mut status, container_id) {
            container.ready = ready;
        }
        let ready_condition =
            generate_pod_ready_condition(&pod.spec, status.container_statuses.as_deref(), status.phase.as_deref());
        match find_condition_mut(&mut status, POD_READY) {
            Some(existing) => *existing = ready_condition,
            None => {
                engine.log(Level::Warn, || format!("pod status of {} is missing the Ready condition", pod.full_name()));
                status.conditions.get_or_insert_with(Vec::new).push(ready_condition);
            }
        }
        update_status_internal(engine, &pod, &pod_json, status, false)
    }

    /// The 2017 status manager has no startup probes.
    fn set_container_startup(&self, _: &mut Engine<I>, _: ContainerProbe<'_>) -> Result<UpdateOutcome> {
        Err(ManagerError::Unsupported(
            "set-container-startup: logic v1 (the 2017 status manager) has no startup probes".into(),
        ))
    }

    /// Never: without startup probes, every startup result is unsupported.
    fn startup_unchanged(&self, _: &PodStatus, _: ContainerProbe<'_>) -> bool {
        false
    }

    /// Marks every container of `pod` terminated and forces an update.
    fn terminate_pod(&self, engine: &mut Engine<I>, pod_json: &str) -> Result<UpdateOutcome> {
        let pod = PodView::parse_with_uid(pod_json).map_err(|e| ManagerError::InvalidPod(e.to_string()))?;
        let mut status = match engine.cached(&pod.metadata.uid) {
            Some(cached) => cached.status.clone(),
            None => pod.parse_status().invalid_pod(|| format!("status of {}", pod.full_name()))?,
        };
        let terminated =
            || ContainerState { terminated: Some(ContainerStateTerminated::default()), ..ContainerState::default() };
        for container in status.container_statuses.iter_mut().flatten() {
            container.state = Some(terminated());
        }
        for container in status.init_container_statuses.iter_mut().flatten() {
            container.state = Some(terminated());
        }
        update_status_internal(engine, &pod, pod_json, status, true)
    }

    /// One sync, of the snapshot the request was queued with.
    fn plan_sync_pod(&self, engine: &mut Engine<I>, request: &SyncRequest) -> Result<Vec<PodSync>> {
        let pending = engine.take_request(request)?;
        Ok(vec![engine.plan_sync(&pending.pod_uid, SyncOrigin::Request, SyncTarget::Snapshot(pending.status))])
    }
}

/// Caches a new status version unless nothing changed, and queues its write.
fn update_status_internal<I: Imports>(
    engine: &mut Engine<I>,
    pod: &PodView,
    pod_json: &str,
    mut status: PodStatus,
    force: bool,
) -> Result<UpdateOutcome> {
    let uid = &pod.metadata.uid;
    let cached = engine.cached(uid);
    let fetched;
    let old_status: &PodStatus = match &cached {
        Some(cached) => &cached.status,
        None => {
            fetched = engine.status_before_caching(pod, pod_json)?;
            &fetched
        }
    };

    let mut now = None;
    for condition_type in [POD_READY, POD_INITIALIZED] {
        if let Some(condition) = find_condition_mut(&mut status, condition_type) {
            condition.last_transition_time = match find_condition(old_status, condition_type) {
                Some(old) if old.status == condition.status => old.last_transition_time.clone(),
                _ => Some(engine.now_cached(&mut now)),
            };
        }
    }

    engine.keep_start_time(old_status, &mut status, &mut now);

    let pod_is_finished = cached.as_ref().is_some_and(|c| c.pod_is_finished);
    let cached = cached.as_deref();
    let Some(versioned) =
        engine.cache_if_changed(pod, status, cached, force, pod_is_finished, normalize_status, status_equal)
    else {
        return Ok(UpdateOutcome::Unchanged);
    };
    Ok(engine.enqueue(uid, versioned))
}
