//! The promise a simulation checks at the end: after a final quiet sync, every pod's
//! status in the API server is the status the plugin has cached for it.

use k8s_openapi::api::core::v1::{Pod, PodStatus};

use super::summary::{Check, Difference};
use podstatus_backends::PodManager;
use podstatus_backends::pod_identity::{is_mirror_pod, is_static_pod};
use podstatus_runtime::ManagerHandle;

/// Reads a pod from the API server: `Ok(None)` when it is not there.
pub type ReadPod<'a> = dyn Fn(&str, &str) -> Result<Option<Pod>, super::owners::OwnerError> + 'a;

/// Compares, for every pod the node holds and the plugin has a status for, the cached
/// status with the API server's (a static pod's status lives on its mirror pod).
pub fn check(handle: &ManagerHandle, pods: &PodManager, read: &ReadPod<'_>) -> Check {
    let mut check = Check::default();
    for pod in pods.pods().iter().filter(|p| !is_mirror_pod(p)) {
        let Some(uid) = pod.metadata.uid.as_deref() else { continue };
        let name = full_name(pod);
        let cached = match handle.get_pod_status(uid) {
            Ok(Some(cached)) => cached,
            // Never reported by the node: nothing was promised.
            Ok(None) => continue,
            Err(e) => {
                check.differing.push(Difference { pod: name, detail: format!("reading the cache failed: {e}") });
                continue;
            }
        };
        check.compared += 1;
        let target = if is_static_pod(pod) {
            match pods.get_mirror_pod_by_pod(pod) {
                Some(mirror) => mirror,
                None => {
                    check.differing.push(Difference { pod: name, detail: "static pod without a mirror pod".into() });
                    continue;
                }
            }
        } else {
            std::sync::Arc::clone(pod)
        };
        let (namespace, pod_name) =
            (target.metadata.namespace.clone().unwrap_or_default(), target.metadata.name.clone().unwrap_or_default());
        let stored = match read(&namespace, &pod_name) {
            Ok(Some(stored)) if stored.metadata.uid == target.metadata.uid => stored,
            Ok(_) => {
                check.differing.push(Difference { pod: name, detail: "not in the API server".into() });
                continue;
            }
            Err(e) => {
                check.differing.push(Difference { pod: name, detail: format!("reading the API server failed: {e}") });
                continue;
            }
        };
        let wanted: PodStatus = match serde_json::from_str(&cached.status) {
            Ok(status) => status,
            Err(e) => {
                check.differing.push(Difference { pod: name, detail: format!("cached status unreadable: {e}") });
                continue;
            }
        };
        let actual = stored.status.unwrap_or_default();
        if let Some(detail) = difference(&wanted, &actual) {
            check.differing.push(Difference { pod: name, detail: format!("version {}: {detail}", cached.version) });
        }
    }
    check
}

/// The first top-level field of the status that differs, with both values; `None`
/// when the two are equal as Kubernetes compares them (Go's semantic equality, so an
/// empty string equals an absent field, as the API server stores it).
pub fn difference(cached: &PodStatus, api: &PodStatus) -> Option<String> {
    if podstatus_logic::semantic_eq::status_equal(cached, api) {
        return None;
    }
    let (cached, api) = (serde_json::to_value(cached).ok()?, serde_json::to_value(api).ok()?);
    let empty = serde_json::Map::new();
    let (c, a) = (cached.as_object().unwrap_or(&empty), api.as_object().unwrap_or(&empty));
    let mut keys: Vec<&String> = c.keys().chain(a.keys()).collect();
    keys.sort();
    keys.dedup();
    let key = keys.into_iter().find(|k| c.get(*k) != a.get(*k))?;
    let show = |v: Option<&serde_json::Value>| v.map_or_else(|| "absent".to_owned(), |v| truncate(&v.to_string()));
    Some(format!("{key}: cached {} but API server {}", show(c.get(key)), show(a.get(key))))
}

fn truncate(text: &str) -> String {
    const MAX: usize = 160;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

fn full_name(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(phase: &str) -> PodStatus {
        PodStatus { phase: Some(phase.into()), ..PodStatus::default() }
    }

    #[test]
    fn names_the_first_differing_field() {
        assert_eq!(difference(&status("Running"), &status("Running")), None);
        let detail = difference(&status("Running"), &status("Pending")).unwrap();
        assert_eq!(detail, r#"phase: cached "Running" but API server "Pending""#);
        let detail = difference(&status("Running"), &PodStatus::default()).unwrap();
        assert_eq!(detail, r#"phase: cached "Running" but API server absent"#);
        // Go reads an absent string as empty: the API server cannot tell them apart.
        let empty_ip = PodStatus { pod_ip: Some(String::new()), ..status("Pending") };
        assert_eq!(difference(&empty_ip, &status("Pending")), None);
    }
}
