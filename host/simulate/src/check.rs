//! The promise a simulation checks at the end: after a final quiet sync, every pod's
//! status in the API server is the status the plugin accepted for it. What the plugin
//! accepted is the host's record ([`podstatus_backends::HostView::accepted`], kept by
//! the manager handle as each change was accepted), not only what the plugin claims to
//! hold now: a plugin that forgets what it accepted (or holds something else than it
//! accepted) fails the check.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodStatus};

use crate::owners::OwnerError;
use crate::summary::{Check, Difference};
use podstatus_backends::{CompactPod, PodManager};
use podstatus_runtime::ManagerHandle;

/// Reads a pod from the API server: `Ok(None)` when it is not there.
pub type ReadPod<'a> = dyn Fn(&str, &str) -> Result<Option<Pod>, OwnerError> + 'a;

/// What a pod's status must be, and whose word that is.
struct Wanted {
    version: u64,
    status: String,
    /// The plugin no longer holds it (it may have let go of a pod that is gone).
    forgotten: bool,
}

/// Compares, for every pod the node holds and the plugin accepted or holds a status
/// for, that status with the API server's (a static pod's status lives on its mirror
/// pod). The host's record of what the plugin accepted comes first; without one (a
/// handle that observes nothing) the plugin's cache is the reference.
pub fn check(handle: &ManagerHandle, pods: &PodManager, read: &ReadPod<'_>) -> Check {
    let mut check = Check::default();
    for pod in pods.pods().iter().filter(|p| !p.is_mirror()) {
        check_pod(handle, pods, pod, read, &mut check);
    }
    check
}

/// [`check()`] of one pod the node holds (not a mirror pod: a static pod's status is
/// read from its mirror pod), into `check`.
pub fn check_pod(
    handle: &ManagerHandle,
    pods: &PodManager,
    pod: &Arc<CompactPod>,
    read: &ReadPod<'_>,
    check: &mut Check,
) {
    let Some(uid) = pod.uid() else { return };
    let name = full_name(pod);
    let cached = match handle.get_pod_status(uid) {
        Ok(cached) => cached,
        Err(e) => {
            check.differing.push(Difference { pod: name, detail: format!("reading the cache failed: {e}") });
            return;
        }
    };
    let accepted = handle.host_view().and_then(|view| view.accepted(uid));
    let wanted = match (cached, accepted) {
        // Never reported by the node, or never accepted: nothing was promised.
        (None, None) => return,
        (Some(cached), None) => Wanted { version: cached.version, status: cached.status, forgotten: false },
        (None, Some(accepted)) => Wanted { version: accepted.version, status: accepted.status, forgotten: true },
        (Some(cached), Some(accepted)) => {
            if cached.version != accepted.version || !same_status(&cached.status, &accepted.status) {
                let detail = format!(
                    "the plugin holds version {} but accepted version {} (as it reported then)",
                    cached.version, accepted.version
                );
                check.compared += 1;
                check.differing.push(Difference { pod: name, detail });
                return;
            }
            Wanted { version: accepted.version, status: accepted.status, forgotten: false }
        }
    };
    let target = if pod.is_static() && !pod.is_mirror() {
        match pods.get_mirror_of(pod) {
            Some(mirror) => mirror,
            None => {
                check.compared += 1;
                check.differing.push(Difference { pod: name, detail: "static pod without a mirror pod".into() });
                return;
            }
        }
    } else {
        Arc::clone(pod)
    };
    let (namespace, pod_name) = (target.namespace().unwrap_or_default(), target.name().unwrap_or_default());
    let stored = match read(namespace, pod_name) {
        Ok(Some(stored)) if stored.metadata.uid.as_deref() == target.uid() => stored,
        // Gone (deleted, or recreated under a new UID): a plugin may let go of its
        // status, so there is nothing left to compare.
        Ok(_) if wanted.forgotten => return,
        Ok(_) => {
            check.compared += 1;
            check.differing.push(Difference { pod: name, detail: "not in the API server".into() });
            return;
        }
        Err(e) => {
            check.compared += 1;
            check.differing.push(Difference { pod: name, detail: format!("reading the API server failed: {e}") });
            return;
        }
    };
    check.compared += 1;
    let wanted_status: PodStatus = match serde_json::from_str(&wanted.status) {
        Ok(status) => status,
        Err(e) => {
            check.differing.push(Difference { pod: name, detail: format!("accepted status unreadable: {e}") });
            return;
        }
    };
    let actual = stored.status.unwrap_or_default();
    if let Some(detail) = difference(&wanted_status, &actual) {
        let whose = if wanted.forgotten { "accepted (and since forgotten) " } else { "" };
        check.differing.push(Difference { pod: name, detail: format!("{whose}version {}: {detail}", wanted.version) });
    }
}

/// Whether two statuses as JSON text are the same status (the same text, or equal as
/// Kubernetes compares them: a swap may carry a status to a plugin that writes it
/// differently).
fn same_status(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (serde_json::from_str::<PodStatus>(a), serde_json::from_str::<PodStatus>(b)) {
        (Ok(a), Ok(b)) => podstatus_core::status_equal(&a, &b),
        _ => false,
    }
}

/// The first top-level field of the status that differs, with both values; `None`
/// when the two are equal as Kubernetes compares them (Go's semantic equality, so an
/// empty string equals an absent field, as the API server stores it).
pub fn difference(cached: &PodStatus, api: &PodStatus) -> Option<String> {
    if podstatus_core::status_equal(cached, api) {
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

fn full_name(pod: &CompactPod) -> String {
    format!("{}/{}", pod.namespace().unwrap_or_default(), pod.name().unwrap_or_default())
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
