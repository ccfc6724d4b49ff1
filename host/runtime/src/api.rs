//! `kubelet:status/api`: the API calls a sync asks for, made by the host.
//!
//! A 0.2.0 plugin returns the call it needs ([`ApiCall`]); the host makes it here,
//! outside the plugin (nothing waits on the plugin while it is out), and resumes the
//! sync with the [`ApiReply`]. A 0.1.x plugin makes the same calls from inside, through
//! its `api-server` import ([`crate::imports::api_server`]), which lands here too: both
//! see the same host.

use k8s_openapi::api::core::v1::PodStatus;

use crate::bindings::{ApiCall, ApiError, ApiReply, DeleteOptions, StatusPatch, StatusUpdate};
use crate::world::World;
use podstatus_backends as backend;

/// Makes `call` against `world`'s API server and returns its answer. Serialising a pod
/// for the plugin cannot fail for a well-formed pod: when it does (a host bug), the
/// call is answered with `other`, which the sync handles as a failed call.
pub fn perform(world: &World, call: ApiCall) -> ApiReply {
    let bug = |e: wasmtime::Error| ApiError::Other(format!("host error: {e:#}"));
    match call {
        ApiCall::GetPod(pod) => {
            ApiReply::Pod(get_pod(world, &pod.namespace, &pod.name).unwrap_or_else(|e| Err(bug(e))))
        }
        ApiCall::UpdatePodStatus(update) => {
            ApiReply::Pod(update_pod_status(world, update).unwrap_or_else(|e| Err(bug(e))))
        }
        ApiCall::PatchPodStatus(patch) => ApiReply::Pod(patch_pod_status(world, patch).unwrap_or_else(|e| Err(bug(e)))),
        ApiCall::DeletePod(deletion) => {
            ApiReply::Deleted(delete_pod(world, &deletion.namespace, &deletion.name, deletion.options))
        }
    }
}

/// The bytes of a call's strings: what the host bounds before it makes the call.
pub fn call_len(call: &ApiCall) -> usize {
    let opt = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    match call {
        ApiCall::GetPod(pod) => pod.namespace.len() + pod.name.len(),
        ApiCall::UpdatePodStatus(u) => {
            u.namespace.len()
                + u.name.len()
                + u.status.len()
                + opt(&u.uid_precondition)
                + opt(&u.resource_version_precondition)
        }
        ApiCall::PatchPodStatus(p) => p.namespace.len() + p.name.len() + p.patch.len() + opt(&p.uid_precondition),
        ApiCall::DeletePod(d) => d.namespace.len() + d.name.len() + opt(&d.options.uid_precondition),
    }
}

/// The message an error carries.
pub fn error_message(error: &ApiError) -> &str {
    match error {
        ApiError::NotFound(m) | ApiError::Conflict(m) | ApiError::Forbidden(m) | ApiError::Other(m) => m,
    }
}

/// The verb of a call, as the replay report and the logs name it.
pub fn verb(call: &ApiCall) -> &'static str {
    match call {
        ApiCall::GetPod(_) => "get",
        ApiCall::UpdatePodStatus(_) => "update",
        ApiCall::PatchPodStatus(_) => "patch",
        ApiCall::DeletePod(_) => "delete",
    }
}

/// Kubernetes' rule for a namespace (an RFC 1123 label) and a pod name (an RFC 1123
/// subdomain): what is not one names no pod, and reaches neither the API server nor a
/// log. The refusal quotes at most the first 64 bytes of what the plugin passed.
pub(crate) fn invalid_name(namespace: &str, name: &str) -> Option<ApiError> {
    fn label(s: &str, max: usize, dots: bool) -> bool {
        let b = s.as_bytes();
        !b.is_empty()
            && b.len() <= max
            && b.iter().all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || (dots && c == b'.'))
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
    }
    let shown = |s: &str| -> String {
        let cut = crate::shown::shown(s);
        let more = s.len() - cut.len();
        format!("{cut:?}{}", if more > 0 { format!(" (+{more} bytes)") } else { String::new() })
    };
    if !label(namespace, 63, false) {
        return Some(ApiError::NotFound(format!("{} is not a valid namespace", shown(namespace))));
    }
    if !label(name, 253, true) {
        return Some(ApiError::NotFound(format!("{} is not a valid pod name", shown(name))));
    }
    None
}

/// GET a pod as JSON.
pub(crate) fn get_pod(world: &World, namespace: &str, name: &str) -> wasmtime::Result<Result<String, ApiError>> {
    Ok(get_pod_and_uid(world, namespace, name)?.map(|(pod, _)| pod))
}

/// GET a pod as JSON, with its UID (read off the object, not the JSON).
pub(crate) fn get_pod_and_uid(
    world: &World,
    namespace: &str,
    name: &str,
) -> wasmtime::Result<Result<(String, Option<String>), ApiError>> {
    if let Some(e) = invalid_name(namespace, name) {
        return Ok(Err(e));
    }
    match world.api_server.get_pod_compact(namespace, name) {
        Ok(pod) => Ok(Ok((pod.json().to_owned(), pod.uid().map(str::to_owned)))),
        Err(e) => Ok(Err(wit_error(&e))),
    }
}

/// PUT a status; a status that is not a PodStatus is refused as the API server would
/// refuse it (400), not trapped: the API server, not the host, judges objects.
pub(crate) fn update_pod_status(world: &World, update: StatusUpdate) -> wasmtime::Result<Result<String, ApiError>> {
    if let Some(e) = invalid_name(&update.namespace, &update.name) {
        return Ok(Err(e));
    }
    let status: PodStatus = match serde_json::from_str(&update.status) {
        Ok(status) => status,
        Err(e) => return Ok(Err(ApiError::Other(format!("the status is not a valid PodStatus: {e}")))),
    };
    let update = backend::StatusUpdate {
        namespace: update.namespace,
        name: update.name,
        uid_precondition: update.uid_precondition,
        resource_version_precondition: update.resource_version_precondition,
        status,
    };
    match world.api_server.update_pod_status_compact(update) {
        Ok(pod) => Ok(Ok(pod.json().to_owned())),
        Err(e) => Ok(Err(wit_error(&e))),
    }
}

/// PATCH a status; a patch that is not a JSON object is refused as the API server would
/// refuse it (400).
pub(crate) fn patch_pod_status(world: &World, patch: StatusPatch) -> wasmtime::Result<Result<String, ApiError>> {
    if let Some(e) = invalid_name(&patch.namespace, &patch.name) {
        return Ok(Err(e));
    }
    let body: serde_json::Value = match serde_json::from_str(&patch.patch) {
        Ok(body @ serde_json::Value::Object(_)) => body,
        Ok(_) => return Ok(Err(ApiError::Other("the patch is not a JSON object".into()))),
        Err(e) => return Ok(Err(ApiError::Other(format!("the patch is not JSON: {e}")))),
    };
    let patch = backend::StatusPatch {
        namespace: patch.namespace,
        name: patch.name,
        uid_precondition: patch.uid_precondition,
        patch: body,
    };
    match world.api_server.patch_pod_status_compact(patch) {
        Ok(pod) => Ok(Ok(pod.json().to_owned())),
        Err(e) => Ok(Err(wit_error(&e))),
    }
}

/// DELETE a pod.
pub(crate) fn delete_pod(world: &World, namespace: &str, name: &str, options: DeleteOptions) -> Result<(), ApiError> {
    if let Some(e) = invalid_name(namespace, name) {
        return Err(e);
    }
    let options = backend::DeleteOptions {
        uid_precondition: options.uid_precondition,
        grace_period_seconds: options.grace_period_seconds,
        resource_version_precondition: None,
    };
    world.api_server.delete_pod(namespace, name, &options).map(drop).map_err(|e| wit_error(&e))
}

/// The WIT error case of a backend error: 404 and 409 are the status manager's to
/// handle, a refusal of the host's guard (403) is `forbidden`, the rest is "other" with
/// the server's message.
pub(crate) fn wit_error(error: &backend::ApiError) -> ApiError {
    match error {
        backend::ApiError::NotFound { .. } => ApiError::NotFound(error.to_string()),
        backend::ApiError::Forbidden { .. } => ApiError::Forbidden(error.to_string()),
        e if e.code() == 409 => ApiError::Conflict(e.to_string()),
        e => ApiError::Other(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_as_kubernetes_checks_them() {
        assert!(invalid_name("default", "web-1.a").is_none());
        assert!(invalid_name("Default", "web").is_some());
        assert!(invalid_name("default", "-web").is_some());
        assert!(invalid_name(&"n".repeat(64), "web").is_some());
        assert!(invalid_name("default", &"w".repeat(254)).is_some());
        // Nothing that could change a URL's path reaches one.
        for (namespace, name) in
            [("ns", "../x"), ("ns", "a/b"), ("..", "web"), ("ns", ".."), ("ns", "a%2fb"), ("a/b", "web")]
        {
            assert!(invalid_name(namespace, name).is_some(), "{namespace}/{name}");
        }
        let Some(ApiError::NotFound(message)) = invalid_name("default", &"W".repeat(1 << 20)) else { panic!() };
        assert!(message.len() < 200, "the refusal is bounded: {message}");
    }

    #[test]
    fn a_refusal_reaches_the_plugin_as_the_wit_forbidden_case() {
        let message = "get of pod kube-system/etcd refused: not a pod of this node".to_string();
        let wit = wit_error(&backend::ApiError::Forbidden { message: message.clone() });
        assert!(matches!(&wit, ApiError::Forbidden(m) if *m == message), "{wit:?}");
    }
}
