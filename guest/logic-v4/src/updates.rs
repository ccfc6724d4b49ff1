//! 1.35's updates: what each call changes in the cached status (`updateStatusInternal`
//! with 1.35's refusals, transition times, observedGeneration and equality), the
//! resize conditions, and 1.27's one-slot signal and pass (logic v2's, unchanged).

use k8s_openapi::api::core::v1::PodStatus;
use podstatus_core::{PodView, find_condition_mut, find_container_status, find_container_status_mut, parse_status};
use podstatus_logic::{
    ContainerProbe, Engine, InvalidPod, Level, ManagerError, PodSync, Policy, ResizeCondition, Result, SyncRequest,
    UpdateOutcome,
};
use podstatus_logic_v2::conditions::{is_terminal, update_last_transition_time};
use podstatus_logic_v2::generate::POD_FAILED;
use podstatus_logic_v2::{Found, Imports, V2, find_container};

use crate::V4;
use crate::conditions::{TRANSITION_TIME_CONDITIONS, is_pod_status_by_kubelet_equal};
use crate::containers::{check_container_state_transition, terminate_containers};
use crate::generate::{all_container_statuses, containers_ready, pod_ready};
use crate::pod_spec::PodSpec135;

impl<I: Imports> Policy<I> for V4 {
    /// Caches `status` for `pod` with the pod's generation as its observedGeneration
    /// (`CalculatePodStatusObservedGeneration`), forcing an update when the pod is
    /// being deleted.
    fn set_pod_status(&self, engine: &mut Engine<I>, pod_json: &str, status_json: &str) -> Result<UpdateOutcome> {
        let pod = PodView::parse_with_uid(pod_json).map_err(|e| ManagerError::InvalidPod(e.to_string()))?;
        let spec = PodSpec135::parse(pod_json).invalid_pod(|| pod.full_name())?;
        let mut status = parse_status(status_json).map_err(|e| ManagerError::InvalidStatus(e.to_string()))?;
        status.observed_generation = spec.observed_generation();
        let force = pod.is_being_deleted();
        update_status_internal(engine, &pod, &spec, pod_json, status, force, false)
    }

    /// Sets one container's readiness (regular or init) in the cached status and
    /// regenerates Ready and ContainersReady over every container status, init ones
    /// first (sidecars count), each with the pod manager's pod's generation.
    fn set_container_readiness(&self, engine: &mut Engine<I>, probe: ContainerProbe<'_>) -> Result<UpdateOutcome> {
        let ContainerProbe { pod_uid, container_id, passed: ready } = probe;
        let Found { pod, pod_json, cached } = match find_container(engine, pod_uid, container_id, "readiness")? {
            Ok(found) => found,
            Err(outcome) => return Ok(outcome),
        };
        if find_container_status(&cached.status, container_id).is_some_and(|c| c.ready == ready) {
            engine.log(Level::Debug, || {
                format!("container readiness unchanged ({ready}): {} - {container_id}", pod.full_name())
            });
            return Ok(UpdateOutcome::Unchanged);
        }
        let spec = PodSpec135::parse(&pod_json).invalid_pod(|| pod.full_name())?;
        let mut status = cached.status.clone();
        if let Some(container) = find_container_status_mut(&mut status, container_id) {
            container.ready = ready;
        }
        let all =
            all_container_statuses(status.init_container_statuses.as_deref(), status.container_statuses.as_deref());
        let phase = status.phase.as_deref();
        let conditions = status.conditions.as_deref().unwrap_or_default();
        let ready_condition = pod_ready(&pod.spec, &spec, conditions, all.as_deref(), phase);
        let containers_ready = containers_ready(&pod.spec, &spec, all.as_deref(), phase);
        for condition in [ready_condition, containers_ready] {
            match find_condition_mut(&mut status, &condition.type_) {
                Some(existing) => *existing = condition,
                None => {
                    engine.log(Level::Info, || {
                        format!("pod status of {} is missing the {} condition", pod.full_name(), condition.type_)
                    });
                    status.conditions.get_or_insert_with(Vec::new).push(condition);
                }
            }
        }
        update_status_internal(engine, &pod, &spec, &pod_json, status, false, false)
    }

    /// Sets whether one container has passed its startup probe (its `started` flag).
    fn set_container_startup(&self, engine: &mut Engine<I>, probe: ContainerProbe<'_>) -> Result<UpdateOutcome> {
        let ContainerProbe { pod_uid, container_id, passed: started } = probe;
        let Found { pod, pod_json, cached } = match find_container(engine, pod_uid, container_id, "startup")? {
            Ok(found) => found,
            Err(outcome) => return Ok(outcome),
        };
        // An unset flag is a change even to false: Go's *bool is nil until set.
        if find_container_status(&cached.status, container_id).is_some_and(|c| c.started == Some(started)) {
            engine.log(Level::Debug, || {
                format!("container startup unchanged ({started}): {} - {container_id}", pod.full_name())
            });
            return Ok(UpdateOutcome::Unchanged);
        }
        let spec = PodSpec135::parse(&pod_json).invalid_pod(|| pod.full_name())?;
        let mut status = cached.status.clone();
        if let Some(container) = find_container_status_mut(&mut status, container_id) {
            container.started = Some(started);
        }
        update_status_internal(engine, &pod, &spec, &pod_json, status, false, false)
    }

    /// Ends the pod's life in the cache as 1.27 does, with 1.35's `hasPodInitialized`
    /// (a sidecar that runs and has started initializes the pod).
    fn terminate_pod(&self, engine: &mut Engine<I>, pod_json: &str) -> Result<UpdateOutcome> {
        let pod = PodView::parse_with_uid(pod_json).map_err(|e| ManagerError::InvalidPod(e.to_string()))?;
        let spec = PodSpec135::parse(pod_json).invalid_pod(|| pod.full_name())?;
        let pod_status = pod.parse_status().invalid_pod(|| format!("status of {}", pod.full_name()))?;
        let cached = engine.cached(&pod.metadata.uid).map(|c| c.status.clone());
        let is_cached = cached.is_some();
        let mut status = cached.unwrap_or_else(|| pod_status.clone());

        terminate_containers(&pod.spec, &spec, &pod_status, &mut status);

        // 1.35 still leaves static pods' phase alone (kubernetes#116484).
        if !pod.is_static() && !is_terminal(status.phase.as_deref()) {
            match status.phase.as_deref() {
                Some("Running") if is_cached => engine.log(Level::Info, || {
                    format!("terminal running pod {} should have already been marked as failed", pod.full_name())
                }),
                Some("Pending" | "Running") => {}
                other => engine.log(Level::Error, || {
                    format!("unknown phase {:?} of terminated pod {}", other.unwrap_or(""), pod.full_name())
                }),
            }
            engine.log(Level::Debug, || format!("marking terminal pod {} as failed", pod.full_name()));
            status.phase = Some(POD_FAILED.to_string());
        }
        update_status_internal(engine, &pod, &spec, pod_json, status, true, true)
    }

    /// 1.27's one-slot signal and pass, which 1.35 keeps.
    fn plan_sync_pod(&self, engine: &mut Engine<I>, request: &SyncRequest) -> Result<Vec<PodSync>> {
        <V2 as Policy<I>>::plan_sync_pod(&V2, engine, request)
    }

    /// `SetPodResizePendingCondition` / `SetPodResizeInProgressCondition`.
    fn set_pod_resize_condition(
        &self,
        engine: &mut Engine<I>,
        pod_uid: &str,
        condition: ResizeCondition,
        reason: &str,
        message: &str,
        observed_generation: i64,
    ) -> Result<()> {
        engine.set_resize_condition(pod_uid, condition, reason, message, observed_generation)
    }

    /// `ClearPodResizePendingCondition` / `ClearPodResizeInProgressCondition`.
    fn clear_pod_resize_condition(
        &self,
        engine: &mut Engine<I>,
        pod_uid: &str,
        condition: ResizeCondition,
    ) -> Result<bool> {
        Ok(engine.clear_resize_condition(pod_uid, condition))
    }

    /// `GetPodResizeConditions`.
    fn get_pod_resize_conditions(&self, engine: &mut Engine<I>, pod_uid: &str) -> Result<Vec<String>> {
        engine.resize_conditions_json(pod_uid)
    }
}

/// 1.35's `updateStatusInternal`: 1.27's (logic v2's) with the illegal-transition check
/// over init containers, PodReadyToStartContainers' transition time, observedGeneration
/// never moving backwards, and 1.35's equality.
fn update_status_internal<I: Imports>(
    engine: &mut Engine<I>,
    pod: &PodView,
    spec: &PodSpec135,
    pod_json: &str,
    mut status: PodStatus,
    force: bool,
    mut pod_is_finished: bool,
) -> Result<UpdateOutcome> {
    let uid = &pod.metadata.uid;
    let cached = engine.cached(uid);
    if let Some(cached) = &cached
        && cached.pod_is_finished
        && !pod_is_finished
        && !pod.is_static()
    {
        engine.log(Level::Info, || {
            format!("pod {} was finished already; its new status is finished too", pod.full_name())
        });
        pod_is_finished = true;
    }
    let fetched;
    let old_status: &PodStatus = match &cached {
        Some(cached) => &cached.status,
        None => {
            fetched = engine.status_before_caching(pod, pod_json)?;
            &fetched
        }
    };

    if let Err(e) = check_container_state_transition(&pod.spec, spec, old_status, &status) {
        engine.log(Level::Error, || format!("status update on pod {} aborted: {e}", pod.full_name()));
        return Ok(UpdateOutcome::Unchanged);
    }

    let mut now = None;
    for condition_type in TRANSITION_TIME_CONDITIONS {
        update_last_transition_time(&mut status, old_status, condition_type, || engine.now_cached(&mut now));
    }
    engine.keep_start_time(old_status, &mut status, &mut now);

    // Prevents sending unnecessary patches: a status generated from an older pod does
    // not take observedGeneration back.
    if old_status.observed_generation.unwrap_or(0) > status.observed_generation.unwrap_or(0) {
        status.observed_generation = old_status.observed_generation;
    }

    let equal = is_pod_status_by_kubelet_equal;
    let Some(versioned) = engine.cache_if_changed(pod, status, cached.as_deref(), force, pod_is_finished, equal) else {
        return Ok(UpdateOutcome::Unchanged);
    };
    Ok(podstatus_logic_v2::enqueue(engine, uid, versioned))
}
