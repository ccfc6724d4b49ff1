//! `kubelet:status/api-server`: forwards to the world's [`ApiServer`] backend.

use k8s_openapi::api::core::v1::PodStatus;

use crate::bindings::kubelet::status::api_server::{self as wit, ApiError, DeleteOptions, StatusPatch, StatusUpdate};
use crate::imports::{HostState, to_json};
use crate::world::World;
use podstatus_backends as backend;

impl wit::Host for HostState {
    fn get_pod(&mut self, namespace: String, name: String) -> wasmtime::Result<Result<String, ApiError>> {
        const IMPORT: &str = "get-pod";
        self.charge(IMPORT, namespace.len() + name.len())?;
        self.check_arg(IMPORT, "namespace", namespace.len())?;
        self.check_arg(IMPORT, "name", name.len())?;
        let world = &self.world;
        let result = self.sandbox.backend_call(|| get_pod(world, &namespace, &name))?;
        self.charge_result(IMPORT, result_len(&result))?;
        Ok(result)
    }

    fn update_pod_status(&mut self, update: StatusUpdate) -> wasmtime::Result<Result<String, ApiError>> {
        const IMPORT: &str = "update-pod-status";
        let uid = update.uid_precondition.as_ref().map_or(0, String::len);
        let rv = update.resource_version_precondition.as_ref().map_or(0, String::len);
        self.charge(IMPORT, update.namespace.len() + update.name.len() + update.status.len() + uid + rv)?;
        self.check_arg(IMPORT, "namespace", update.namespace.len())?;
        self.check_arg(IMPORT, "name", update.name.len())?;
        self.check_arg(IMPORT, "status", update.status.len())?;
        self.check_arg(IMPORT, "uid precondition", uid)?;
        self.check_arg(IMPORT, "resourceVersion precondition", rv)?;
        let world = &self.world;
        let result = self.sandbox.backend_call(|| update_pod_status(world, update))?;
        self.charge_result(IMPORT, result_len(&result))?;
        Ok(result)
    }

    fn patch_pod_status(&mut self, patch: StatusPatch) -> wasmtime::Result<Result<String, ApiError>> {
        const IMPORT: &str = "patch-pod-status";
        let uid = patch.uid_precondition.as_ref().map_or(0, String::len);
        self.charge(IMPORT, patch.namespace.len() + patch.name.len() + patch.patch.len() + uid)?;
        self.check_arg(IMPORT, "namespace", patch.namespace.len())?;
        self.check_arg(IMPORT, "name", patch.name.len())?;
        self.check_arg(IMPORT, "patch", patch.patch.len())?;
        self.check_arg(IMPORT, "uid precondition", uid)?;
        let world = &self.world;
        let result = self.sandbox.backend_call(|| patch_pod_status(world, patch))?;
        self.charge_result(IMPORT, result_len(&result))?;
        Ok(result)
    }

    fn delete_pod(
        &mut self,
        namespace: String,
        name: String,
        options: DeleteOptions,
    ) -> wasmtime::Result<Result<(), ApiError>> {
        const IMPORT: &str = "delete-pod";
        let uid = options.uid_precondition.as_ref().map_or(0, String::len);
        self.charge(IMPORT, namespace.len() + name.len() + uid)?;
        self.check_arg(IMPORT, "namespace", namespace.len())?;
        self.check_arg(IMPORT, "name", name.len())?;
        self.check_arg(IMPORT, "uid precondition", uid)?;
        let world = &self.world;
        let result = self.sandbox.backend_call(|| delete_pod(world, &namespace, &name, options));
        if let Err(e) = &result {
            self.charge_result(IMPORT, error_len(e))?;
        }
        Ok(result)
    }
}

fn error_len(error: &ApiError) -> usize {
    match error {
        ApiError::NotFound(m) | ApiError::Conflict(m) | ApiError::Forbidden(m) | ApiError::Other(m) => m.len(),
    }
}

fn result_len(result: &Result<String, ApiError>) -> usize {
    match result {
        Ok(pod) => pod.len(),
        Err(e) => error_len(e),
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
        let mut cut = s.len().min(64);
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{:?}{}", &s[..cut], if cut < s.len() { format!(" (+{} bytes)", s.len() - cut) } else { String::new() })
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
    if let Some(e) = invalid_name(namespace, name) {
        return Ok(Err(e));
    }
    match world.api_server.get_pod(namespace, name) {
        Ok(pod) => Ok(Ok(to_json(&*pod)?)),
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
    match world.api_server.update_pod_status(update) {
        Ok(pod) => Ok(Ok(to_json(&*pod)?)),
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
    match world.api_server.patch_pod_status(patch) {
        Ok(pod) => Ok(Ok(to_json(&*pod)?)),
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
