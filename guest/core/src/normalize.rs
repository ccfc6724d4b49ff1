//! Normalisation: the form a status is cached and compared in.
//!
//! The API server stores times at second precision and the kubelet may report container
//! statuses in any order, so a status is normalised before it is compared with another;
//! otherwise every comparison with the API server's copy would find a difference.

use k8s_openapi::api::core::v1::{ContainerState, ContainerStatus, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::pod::SpecView;

/// The kubelet's budget for the termination messages of all of a pod's containers
/// (`MaxPodTerminationMessageLogLength`), shared equally between them.
pub const MAX_POD_TERMINATION_MESSAGE_BYTES: usize = 12 * 1024;

/// Normalises `status` in place for a pod with `spec` as the kubelet did from 2017 to
/// 1.27: times cut to whole seconds, termination messages cut to each container's
/// share of the budget (regular and init containers), container statuses sorted by
/// name and init container statuses put in spec order; ephemeral container statuses
/// are left as they are.
pub fn normalize_status(spec: &SpecView, status: &mut PodStatus) {
    normalize(spec, status, false);
}

/// Normalises `status` as 1.35's `normalizeStatus` does (and 1.37's): as
/// [`normalize_status`], with the ephemeral containers counted in the budget and their
/// statuses normalised too and sorted by name
/// (`sort.Sort(kubetypes.SortedContainerStatuses(status.EphemeralContainerStatuses))`).
pub fn normalize_status_with_ephemeral(spec: &SpecView, status: &mut PodStatus) {
    normalize(spec, status, true);
}

fn normalize(spec: &SpecView, status: &mut PodStatus, ephemeral: bool) {
    let ephemeral_containers = if ephemeral { spec.ephemeral_containers.len() } else { 0 };
    let containers = spec.containers.len() + spec.init_containers.len() + ephemeral_containers;
    let budget = MAX_POD_TERMINATION_MESSAGE_BYTES.checked_div(containers).unwrap_or(MAX_POD_TERMINATION_MESSAGE_BYTES);

    if let Some(start) = status.start_time.as_mut() {
        truncate_time(start);
    }
    for condition in status.conditions.iter_mut().flatten() {
        truncate_opt_time(&mut condition.last_probe_time);
        truncate_opt_time(&mut condition.last_transition_time);
    }

    if let Some(statuses) = status.container_statuses.as_mut() {
        normalize_container_statuses(statuses, budget);
        // Stable, so equal names keep their relative order and the result is
        // deterministic whatever order the statuses arrived in.
        statuses.sort_by(|a, b| a.name.cmp(&b.name));
    }
    if let Some(statuses) = status.init_container_statuses.as_mut() {
        normalize_container_statuses(statuses, budget);
        sort_init_container_statuses(spec, statuses);
    }
    if ephemeral && let Some(statuses) = status.ephemeral_container_statuses.as_mut() {
        normalize_container_statuses(statuses, budget);
        statuses.sort_by(|a, b| a.name.cmp(&b.name));
    }
}

/// Drops everything below whole seconds, as Kubernetes' `Rfc3339Copy` does: the instant
/// is floored, so times before 1970 round down like Go's formatting does.
pub fn truncate_time(time: &mut Time) {
    let ts = time.0;
    let mut seconds = ts.as_second();
    if ts.subsec_nanosecond() < 0 {
        seconds -= 1;
    }
    if let Ok(truncated) = Timestamp::from_second(seconds) {
        time.0 = truncated;
    }
}

fn truncate_opt_time(time: &mut Option<Time>) {
    if let Some(t) = time.as_mut() {
        truncate_time(t);
    }
}

fn normalize_container_statuses(statuses: &mut [ContainerStatus], budget: usize) {
    for status in statuses {
        if let Some(state) = status.state.as_mut() {
            normalize_container_state(state, budget);
        }
        if let Some(state) = status.last_state.as_mut() {
            normalize_container_state(state, budget);
        }
    }
}

fn normalize_container_state(state: &mut ContainerState, budget: usize) {
    if let Some(running) = state.running.as_mut() {
        truncate_opt_time(&mut running.started_at);
    }
    if let Some(terminated) = state.terminated.as_mut() {
        truncate_opt_time(&mut terminated.started_at);
        truncate_opt_time(&mut terminated.finished_at);
        if let Some(message) = terminated.message.as_mut() {
            truncate_at_char_boundary(message, budget);
        }
    }
}

/// Cuts `text` to at most `budget` bytes without splitting a character. (Go cuts bytes
/// and can split one, after which the cache and the API server, which repairs the
/// UTF-8, disagree forever.)
pub fn truncate_at_char_boundary(text: &mut String, budget: usize) {
    if text.len() <= budget {
        return;
    }
    let mut cut = budget;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
}

/// Puts init container statuses in the order of `spec.initContainers` by swapping in
/// place, exactly as the kubelet does: statuses naming no init container end up after
/// the others, in whatever order the swaps leave them.
pub fn sort_init_container_statuses(spec: &SpecView, statuses: &mut [ContainerStatus]) {
    let mut current = 0;
    for container in &spec.init_containers {
        if let Some(offset) = statuses[current..].iter().position(|s| s.name == container.name) {
            statuses.swap(current, current + offset);
            current += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod::NamedView;

    fn spec(containers: &[&str], init: &[&str]) -> SpecView {
        let named = |names: &[&str]| names.iter().map(|n| NamedView { name: n.to_string() }).collect();
        SpecView { containers: named(containers), init_containers: named(init), ..SpecView::default() }
    }

    fn status(json: serde_json::Value) -> PodStatus {
        serde_json::from_value(json).unwrap()
    }

    fn names(statuses: &Option<Vec<ContainerStatus>>) -> Vec<String> {
        statuses.iter().flatten().map(|s| s.name.clone()).collect()
    }

    #[test]
    fn times_are_cut_to_seconds() {
        let mut s = status(serde_json::json!({
            "startTime": "2026-01-01T00:00:01.900Z",
            "conditions": [{"type": "Ready", "status": "True",
                "lastProbeTime": "2026-01-01T00:00:02.5Z", "lastTransitionTime": "2026-01-01T00:00:03.999999999Z"}],
            "containerStatuses": [{"name": "a", "state": {"running": {"startedAt": "2026-01-01T00:00:04.1Z"}},
                "lastState": {"terminated": {"exitCode": 1, "startedAt": "2026-01-01T00:00:05.1Z", "finishedAt": "2026-01-01T00:00:06.1Z"}}}]
        }));
        normalize_status(&spec(&["a"], &[]), &mut s);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["startTime"], "2026-01-01T00:00:01Z");
        assert_eq!(json["conditions"][0]["lastProbeTime"], "2026-01-01T00:00:02Z");
        assert_eq!(json["conditions"][0]["lastTransitionTime"], "2026-01-01T00:00:03Z");
        assert_eq!(json["containerStatuses"][0]["state"]["running"]["startedAt"], "2026-01-01T00:00:04Z");
        assert_eq!(json["containerStatuses"][0]["lastState"]["terminated"]["finishedAt"], "2026-01-01T00:00:06Z");
    }

    #[test]
    fn times_before_the_epoch_round_down() {
        let mut t = Time("1969-12-31T23:59:59.5Z".parse().unwrap());
        truncate_time(&mut t);
        assert_eq!(t.0.to_string(), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn container_statuses_sort_by_name() {
        let mut s = status(serde_json::json!({"containerStatuses": [{"name": "c"}, {"name": "a"}, {"name": "b"}]}));
        normalize_status(&spec(&["c", "a", "b"], &[]), &mut s);
        assert_eq!(names(&s.container_statuses), ["a", "b", "c"]);
    }

    #[test]
    fn init_statuses_follow_spec_order_by_swapping() {
        let mut s = status(serde_json::json!({"initContainerStatuses": [
            {"name": "x"}, {"name": "second"}, {"name": "first"}, {"name": "y"}]}));
        normalize_status(&spec(&[], &["first", "second", "missing"]), &mut s);
        // first swapped to 0 (x goes to 2), second already at 1; x and y keep what the swaps left.
        assert_eq!(names(&s.init_container_statuses), ["first", "second", "x", "y"]);
    }

    #[test]
    fn termination_messages_share_the_budget() {
        let long = "é".repeat(MAX_POD_TERMINATION_MESSAGE_BYTES);
        let mut s = status(serde_json::json!({
            "containerStatuses": [{"name": "a", "state": {"terminated": {"exitCode": 0, "message": long}}}],
            "initContainerStatuses": [{"name": "i", "lastState": {"terminated": {"exitCode": 0, "message": long}}}]}));
        normalize_status(&spec(&["a", "b"], &["i"]), &mut s);
        let budget = MAX_POD_TERMINATION_MESSAGE_BYTES / 3; // 4096: even, so no char is split
        let state = s.container_statuses.as_ref().unwrap()[0].state.as_ref().unwrap();
        assert_eq!(state.terminated.as_ref().unwrap().message.as_ref().unwrap().len(), budget);
        let last = s.init_container_statuses.as_ref().unwrap()[0].last_state.as_ref().unwrap();
        assert_eq!(last.terminated.as_ref().unwrap().message.as_ref().unwrap().len(), budget);
    }

    #[test]
    fn since_1_35_ephemeral_statuses_sort_by_name_and_share_the_budget() {
        let long = "m".repeat(MAX_POD_TERMINATION_MESSAGE_BYTES);
        let ephemeral = serde_json::json!({"ephemeralContainerStatuses": [
            {"name": "z", "state": {"terminated": {"exitCode": 0, "message": long}}}, {"name": "b"}]});
        let mut pod_spec = spec(&["a"], &[]);
        pod_spec.ephemeral_containers = vec![NamedView { name: "z".into() }, NamedView { name: "b".into() }];
        let mut old = status(ephemeral.clone());
        normalize_status(&pod_spec, &mut old);
        assert_eq!(names(&old.ephemeral_container_statuses), ["z", "b"], "1.27 leaves them as given");
        let mut s = status(ephemeral);
        normalize_status_with_ephemeral(&pod_spec, &mut s);
        assert_eq!(names(&s.ephemeral_container_statuses), ["b", "z"]);
        let state = s.ephemeral_container_statuses.as_ref().unwrap()[1].state.as_ref().unwrap();
        let budget = MAX_POD_TERMINATION_MESSAGE_BYTES / 3;
        assert_eq!(state.terminated.as_ref().unwrap().message.as_ref().unwrap().len(), budget);
    }

    #[test]
    fn truncation_never_splits_a_character() {
        let mut text = "aé".to_string(); // 'é' occupies bytes 1..3
        truncate_at_char_boundary(&mut text, 2);
        assert_eq!(text, "a");
        let mut short = "abc".to_string();
        truncate_at_char_boundary(&mut short, 10);
        assert_eq!(short, "abc");
    }

    #[test]
    fn a_pod_without_containers_gets_the_whole_budget() {
        let msg = "m".repeat(MAX_POD_TERMINATION_MESSAGE_BYTES + 5);
        let mut s = status(serde_json::json!({
            "containerStatuses": [{"name": "a", "state": {"terminated": {"exitCode": 0, "message": msg}}}]}));
        normalize_status(&spec(&[], &[]), &mut s);
        let state = s.container_statuses.as_ref().unwrap()[0].state.as_ref().unwrap();
        assert_eq!(
            state.terminated.as_ref().unwrap().message.as_ref().unwrap().len(),
            MAX_POD_TERMINATION_MESSAGE_BYTES
        );
    }
}
