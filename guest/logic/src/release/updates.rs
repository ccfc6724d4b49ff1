//! The updates as every release since 1.27 makes them (`SetPodStatus`,
//! `SetContainerReadiness`, `SetContainerStartup`, `TerminatePod` and
//! `updateStatusInternal`), generic over what the release decides.

use std::sync::Arc;

use k8s_openapi::api::core::v1::PodStatus;
use podstatus_core::{PodView, find_condition_mut, find_container_status, find_container_status_mut, parse_status};

use super::conditions::{is_terminal, update_last_transition_time};
use super::containers::terminate_containers;
use super::decisions::Release;
use super::generate::POD_FAILED;
use super::signal::enqueue;
use crate::engine::Engine;
use crate::error::{InvalidPod, ManagerError, Result};
use crate::imports::{Imports, Level};
use crate::manager::ContainerProbe;
use crate::outcomes::UpdateOutcome;
use crate::status::VersionedStatus;

/// `SetPodStatus`: caches `status` for `pod` (with the pod's generation as its
/// observedGeneration where the release tracks it), forcing an update when the pod is
/// being deleted.
pub(crate) fn set_pod_status<R: Release, I: Imports>(
    release: &R,
    engine: &mut Engine<I>,
    pod_json: &str,
    status_json: &str,
) -> Result<UpdateOutcome> {
    let pod = PodView::parse_with_uid(pod_json).map_err(|e| ManagerError::InvalidPod(e.to_string()))?;
    let read = release.read_pod(pod_json, || pod.full_name())?;
    let mut status = parse_status(status_json).map_err(|e| ManagerError::InvalidStatus(e.to_string()))?;
    if R::TRACKS_OBSERVED_GENERATION {
        status.observed_generation = release.observed_generation(&read);
    }
    let force = pod.is_being_deleted();
    update_status_internal(release, engine, &pod, &read, pod_json, status, force, false)
}

/// `SetContainerReadiness`: sets one container's readiness in the cached status and
/// regenerates Ready and ContainersReady as the release does.
pub(crate) fn set_container_readiness<R: Release, I: Imports>(
    release: &R,
    engine: &mut Engine<I>,
    probe: ContainerProbe<'_>,
) -> Result<UpdateOutcome> {
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
    let read = release.read_pod(&pod_json, || pod.full_name())?;
    let mut status = cached.status.clone();
    if let Some(container) = find_container_status_mut(&mut status, container_id) {
        container.ready = ready;
    }
    for condition in release.readiness_conditions(&pod, &read, &pod_json, &status)? {
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
    update_status_internal(release, engine, &pod, &read, &pod_json, status, false, false)
}

/// `SetContainerStartup`: sets whether one container has passed its startup probe (its
/// `started` flag).
pub(crate) fn set_container_startup<R: Release, I: Imports>(
    release: &R,
    engine: &mut Engine<I>,
    probe: ContainerProbe<'_>,
) -> Result<UpdateOutcome> {
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
    let read = release.read_pod(&pod_json, || pod.full_name())?;
    let mut status = cached.status.clone();
    if let Some(container) = find_container_status_mut(&mut status, container_id) {
        container.started = Some(started);
    }
    update_status_internal(release, engine, &pod, &read, &pod_json, status, false, false)
}

/// `TerminatePod`: ends the pod's life in the cache: containers of unknown state become
/// terminated (exit code 137), a pod that is not static gets a terminal phase (Failed
/// unless it already has one), and the update is forced.
pub(crate) fn terminate_pod<R: Release, I: Imports>(
    release: &R,
    engine: &mut Engine<I>,
    pod_json: &str,
) -> Result<UpdateOutcome> {
    let pod = PodView::parse_with_uid(pod_json).map_err(|e| ManagerError::InvalidPod(e.to_string()))?;
    let read = release.read_pod(pod_json, || pod.full_name())?;
    let pod_status = pod.parse_status().invalid_pod(|| format!("status of {}", pod.full_name()))?;
    let cached = engine.cached(&pod.metadata.uid).map(|c| c.status.clone());
    let is_cached = cached.is_some();
    let mut status = cached.unwrap_or_else(|| pod_status.clone());

    terminate_containers(release, &pod.spec, &read, &pod_status, &mut status);

    // Every release so far leaves static pods' phase alone (kubernetes#116484).
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
    update_status_internal(release, engine, &pod, &read, pod_json, status, true, true)
}

/// A cached container found by ID, with its pod.
struct Found {
    /// The pod manager's pod.
    pod: PodView,
    /// Its JSON, as the pod manager handed it.
    pod_json: String,
    /// The pod's cached status, which has the container.
    cached: Arc<VersionedStatus>,
}

/// The pod and cached status behind a container ID, or the outcome that ends a
/// readiness or startup change before it starts.
fn find_container<I: Imports>(
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

/// `updateStatusInternal`: caches a new status version unless the release refuses the
/// update or finds it changes nothing the kubelet owns, and queues its write.
/// `pod_is_finished`: the status comes from TerminatePod; once a pod is finished every
/// later version of its status is too (not a static pod's: upstream leaves them alone,
/// kubernetes#116484).
#[allow(clippy::too_many_arguments)]
fn update_status_internal<R: Release, I: Imports>(
    release: &R,
    engine: &mut Engine<I>,
    pod: &PodView,
    read: &R::Pod,
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

    if let Err(e) = release.check_container_state_transition(&pod.spec, read, old_status, &status) {
        engine.log(Level::Error, || format!("status update on pod {} aborted: {e}", pod.full_name()));
        return Ok(UpdateOutcome::Unchanged);
    }

    let mut now = None;
    for condition_type in R::TRANSITION_TIME_CONDITIONS {
        update_last_transition_time(&mut status, old_status, condition_type, || engine.now_cached(&mut now));
    }
    engine.keep_start_time(old_status, &mut status, &mut now);

    // Prevents sending unnecessary patches: a status generated from an older pod does
    // not take observedGeneration back.
    if R::TRACKS_OBSERVED_GENERATION
        && old_status.observed_generation.unwrap_or(0) > status.observed_generation.unwrap_or(0)
    {
        status.observed_generation = old_status.observed_generation;
    }

    let normalize = |spec: &_, status: &mut PodStatus| release.normalize_status(spec, status);
    let equal = |old: &PodStatus, new: &PodStatus| release.is_pod_status_by_kubelet_equal(old, new);
    let cached = cached.as_deref();
    let Some(versioned) = engine.cache_if_changed(pod, status, cached, force, pod_is_finished, normalize, equal) else {
        return Ok(UpdateOutcome::Unchanged);
    };
    Ok(enqueue(engine, uid, versioned))
}
