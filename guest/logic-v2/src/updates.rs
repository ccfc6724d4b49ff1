//! 1.27's updates: what each call changes in the cached status (`updateStatusInternal`
//! with its refusals, transition times and `podIsFinished`), and the one-slot signal a
//! sync request is.

use std::sync::Arc;

use k8s_openapi::api::core::v1::PodStatus;
use podstatus_core::{PodView, find_condition_mut, find_container_status, find_container_status_mut, parse_status};
use podstatus_logic::{
    ContainerProbe, Engine, InvalidPod, Level, ManagerError, PodSync, Policy, Result, SyncOrigin, SyncRequest,
    SyncTarget, UpdateOutcome, VersionedStatus,
};

use crate::conditions::{
    TRANSITION_TIME_CONDITIONS, is_pod_status_by_kubelet_equal, is_terminal, update_last_transition_time,
};
use crate::containers::{check_container_state_transition, restart_policy, terminate_containers};
use crate::generate::{POD_FAILED, generate_containers_ready_condition, generate_pod_ready_condition, readiness_gates};
use crate::imports::Imports;
use crate::policy::V2;

/// A cached container found by ID, with its pod (shared with later versions, whose
/// probe updates start the same way).
pub struct Found {
    /// The pod manager's pod.
    pub pod: PodView,
    /// Its JSON, as the pod manager handed it.
    pub pod_json: String,
    /// The pod's cached status, which has the container.
    pub cached: Arc<VersionedStatus>,
}

impl<I: Imports> Policy<I> for V2 {
    /// Caches `status` for `pod`, forcing an update when the pod is being deleted.
    fn set_pod_status(&self, engine: &mut Engine<I>, pod_json: &str, status_json: &str) -> Result<UpdateOutcome> {
        let pod = PodView::parse_with_uid(pod_json).map_err(|e| ManagerError::InvalidPod(e.to_string()))?;
        let status = parse_status(status_json).map_err(|e| ManagerError::InvalidStatus(e.to_string()))?;
        let force = pod.is_being_deleted();
        update_status_internal(engine, &pod, pod_json, status, force, false)
    }

    /// Sets one container's readiness in the cached status and regenerates Ready (with
    /// the pod's readiness gates) and ContainersReady.
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
        let gates = readiness_gates(&pod_json).invalid_pod(|| pod.full_name())?;
        let mut status = cached.status.clone();
        if let Some(container) = find_container_status_mut(&mut status, container_id) {
            container.ready = ready;
        }
        let statuses = status.container_statuses.as_deref();
        let phase = status.phase.as_deref();
        let conditions = status.conditions.as_deref().unwrap_or_default();
        let ready_condition = generate_pod_ready_condition(&pod.spec, &gates, conditions, statuses, phase);
        let containers_ready = generate_containers_ready_condition(&pod.spec, statuses, phase);
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
        update_status_internal(engine, &pod, &pod_json, status, false, false)
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
        let mut status = cached.status.clone();
        if let Some(container) = find_container_status_mut(&mut status, container_id) {
            container.started = Some(started);
        }
        update_status_internal(engine, &pod, &pod_json, status, false, false)
    }

    /// Ends the pod's life in the cache: containers of unknown state become terminated
    /// (exit code 137), a pod that is not static gets a terminal phase (Failed unless it
    /// already has one), and the update is forced.
    fn terminate_pod(&self, engine: &mut Engine<I>, pod_json: &str) -> Result<UpdateOutcome> {
        let pod = PodView::parse_with_uid(pod_json).map_err(|e| ManagerError::InvalidPod(e.to_string()))?;
        let pod_status = pod.parse_status().invalid_pod(|| format!("status of {}", pod.full_name()))?;
        let cached = engine.cached(&pod.metadata.uid).map(|c| c.status.clone());
        let is_cached = cached.is_some();
        let mut status = cached.unwrap_or_else(|| pod_status.clone());

        terminate_containers(&pod.spec, &pod_status, &mut status);

        // 1.27 leaves static pods' phase alone (kubernetes#116484).
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
        update_status_internal(engine, &pod, pod_json, status, true, true)
    }

    /// Takes one request off the sync queue (it is used up) and plans its pass: a sync
    /// of the request's pod (unless its status is gone) and then one of every other
    /// cached pod in UID order whose latest status is not written already (as 1.27's
    /// pass collects them), each writing the pod's latest status when it starts,
    /// unless that version is written by then. The static-to-mirror pod UIDs are read
    /// once, for the whole pass.
    fn plan_sync_pod(&self, engine: &mut Engine<I>, request: &SyncRequest) -> Result<Vec<PodSync>> {
        engine.take_request(request)?;
        let pod_to_mirror = Arc::new(engine.pod_to_mirror());
        let mut syncs = Vec::new();
        let target = || SyncTarget::LatestIfUnwritten(Arc::clone(&pod_to_mirror));
        if engine.cached(&request.pod_uid).is_some() {
            syncs.push(engine.plan_sync(&request.pod_uid, SyncOrigin::Request, target()));
        }
        for uid in engine.unwritten_for_pass(&pod_to_mirror, &request.pod_uid) {
            syncs.push(engine.plan_sync(&uid, SyncOrigin::Pass, target()));
        }
        Ok(syncs)
    }
}

/// The pod and cached status behind a container ID, or the outcome that ends a
/// readiness or startup change before it starts.
pub fn find_container<I: Imports>(
    engine: &mut Engine<I>,
    pod_uid: &str,
    container_id: &str,
    what: &str,
) -> Result<std::result::Result<Found, UpdateOutcome>> {
    let Some(pod_json) = engine.imports_mut().get_pod_by_uid(pod_uid) else {
        engine.log(Level::Debug, || format!("pod {pod_uid} has been deleted, no need to update {what}"));
        return Ok(Err(UpdateOutcome::PodNotFound));
    };
    let pod = PodView::parse_with_uid(&pod_json).invalid_pod(|| format!("pod manager's pod {pod_uid}"))?;
    let Some(cached) = engine.cached(&pod.metadata.uid) else {
        engine.log(Level::Info, || {
            format!("container {what} changed before pod has synced: {} - {container_id}", pod.full_name())
        });
        return Ok(Err(UpdateOutcome::NotCached));
    };
    if find_container_status(&cached.status, container_id).is_none() {
        engine.log(Level::Info, || {
            format!("container {what} changed for unknown container: {} - {container_id}", pod.full_name())
        });
        return Ok(Err(UpdateOutcome::UnknownContainer));
    }
    Ok(Ok(Found { pod, pod_json, cached }))
}

/// `updateStatusInternal`: caches a new status version unless the update is refused
/// or changes nothing the kubelet owns, and queues its write. `pod_is_finished`: the
/// status comes from TerminatePod; once a pod is finished every later version of
/// its status is too (not a static pod's: 1.27 leaves them alone, kubernetes#116484).
fn update_status_internal<I: Imports>(
    engine: &mut Engine<I>,
    pod: &PodView,
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

    let policy = restart_policy(&pod.spec);
    let transition = check_container_state_transition(
        old_status.container_statuses.as_deref(),
        status.container_statuses.as_deref(),
        policy,
    )
    .and_then(|()| {
        check_container_state_transition(
            old_status.init_container_statuses.as_deref(),
            status.init_container_statuses.as_deref(),
            policy,
        )
    });
    if let Err(e) = transition {
        engine.log(Level::Error, || format!("status update on pod {} aborted: {e}", pod.full_name()));
        return Ok(UpdateOutcome::Unchanged);
    }

    let mut now = None;
    for condition_type in TRANSITION_TIME_CONDITIONS {
        update_last_transition_time(&mut status, old_status, condition_type, || engine.now_cached(&mut now));
    }
    engine.keep_start_time(old_status, &mut status, &mut now);

    let equal = is_pod_status_by_kubelet_equal;
    let Some(versioned) = engine.cache_if_changed(pod, status, cached.as_deref(), force, pod_is_finished, equal) else {
        return Ok(UpdateOutcome::Unchanged);
    };
    Ok(enqueue(engine, uid, versioned))
}

/// Signals the sync loop: queues a sync request for `uid` unless the slot is full
/// already, in which case that request's pass writes this version too. Public for the
/// versions that keep 1.27's signal (logic v4).
pub fn enqueue<I: Imports>(engine: &mut Engine<I>, uid: &str, status: Arc<VersionedStatus>) -> UpdateOutcome {
    if signal_waiting(engine) {
        engine.log(Level::Trace, || {
            format!("a sync is queued already; it will write version {} of pod {uid}", status.version)
        });
        return UpdateOutcome::Queued;
    }
    engine.enqueue(uid, status)
}

/// Whether the slot is full: 1.27's channel holds one signal until the sync loop takes
/// it, whatever the pod it was raised for (one since written by a batch sync, a static
/// pod without a mirror pod) and whatever was written since; the pass it starts syncs
/// every pod then unwritten. The host keeps its queue and the state in step (a
/// supervisor that restores an instance queues again the request a faulted sync was
/// handed), so a queued request is never lost.
fn signal_waiting<I: Imports>(engine: &mut Engine<I>) -> bool {
    !engine.queued_pods().is_empty()
}
