//! `kubelet:status/api-server` (contract 0.1.x only): the plugin calls the API server
//! from inside a sync. Each call is bounded and charged to the plugin's budget, then
//! made as a 0.2.0 host makes a sync's call ([`crate::api`]).

use crate::api::{delete_pod, get_pod, patch_pod_status, update_pod_status};
use crate::bindings::v0_1_1::kubelet::status::api_server::{
    self as wit, ApiError, DeleteOptions, StatusPatch, StatusUpdate,
};
use crate::bindings::{self as host};
use crate::imports::HostState;
use crate::world::World;

impl wit::Host for HostState {
    fn get_pod(&mut self, namespace: String, name: String) -> wasmtime::Result<Result<String, ApiError>> {
        let args = [("namespace", namespace.len()), ("name", name.len())];
        self.pod_call("get-pod", &args, |world| get_pod(world, &namespace, &name))
    }

    fn update_pod_status(&mut self, update: StatusUpdate) -> wasmtime::Result<Result<String, ApiError>> {
        let [namespace, name, uid] = named_lens(&update.namespace, &update.name, &update.uid_precondition);
        let rv = ("resourceVersion precondition", len_of(&update.resource_version_precondition));
        let args = [namespace, name, ("status", update.status.len()), uid, rv];
        let update = host::StatusUpdate {
            namespace: update.namespace,
            name: update.name,
            uid_precondition: update.uid_precondition,
            resource_version_precondition: update.resource_version_precondition,
            status: update.status,
        };
        self.pod_call("update-pod-status", &args, |world| update_pod_status(world, update))
    }

    fn patch_pod_status(&mut self, patch: StatusPatch) -> wasmtime::Result<Result<String, ApiError>> {
        let [namespace, name, uid] = named_lens(&patch.namespace, &patch.name, &patch.uid_precondition);
        let args = [namespace, name, ("patch", patch.patch.len()), uid];
        let patch = host::StatusPatch {
            namespace: patch.namespace,
            name: patch.name,
            uid_precondition: patch.uid_precondition,
            patch: patch.patch,
        };
        self.pod_call("patch-pod-status", &args, |world| patch_pod_status(world, patch))
    }

    fn delete_pod(
        &mut self,
        namespace: String,
        name: String,
        options: DeleteOptions,
    ) -> wasmtime::Result<Result<(), ApiError>> {
        const IMPORT: &str = "delete-pod";
        self.admit(IMPORT, &named_lens(&namespace, &name, &options.uid_precondition))?;
        let world = &self.world;
        let options = host::DeleteOptions {
            uid_precondition: options.uid_precondition,
            grace_period_seconds: options.grace_period_seconds,
        };
        let result = self.sandbox.backend_call(|| delete_pod(world, &namespace, &name, options)).map_err(old_error);
        if let Err(e) = &result {
            self.charge_result(IMPORT, error_len(e))?;
        }
        Ok(result)
    }
}

impl HostState {
    /// One call of `import` that answers a pod: its arguments (`args`) admitted, `call`
    /// made as a backend call, the pod or the error charged.
    fn pod_call(
        &mut self,
        import: &str,
        args: &[(&str, usize)],
        call: impl FnOnce(&World) -> wasmtime::Result<Result<String, host::ApiError>>,
    ) -> wasmtime::Result<Result<String, ApiError>> {
        self.admit(import, args)?;
        let world = &self.world;
        let result = self.sandbox.backend_call(|| call(world))?.map_err(old_error);
        self.charge_result(import, result_len(&result))?;
        Ok(result)
    }
}

/// The lengths of the arguments every call but `get-pod` has: the pod's namespace and
/// name, and the UID precondition.
fn named_lens(namespace: &str, name: &str, uid_precondition: &Option<String>) -> [(&'static str, usize); 3] {
    [("namespace", namespace.len()), ("name", name.len()), ("uid precondition", len_of(uid_precondition))]
}

fn len_of(precondition: &Option<String>) -> usize {
    precondition.as_ref().map_or(0, String::len)
}

/// The host's error as contract 0.1.1 names it (the same cases).
fn old_error(error: host::ApiError) -> ApiError {
    match error {
        host::ApiError::NotFound(m) => ApiError::NotFound(m),
        host::ApiError::Conflict(m) => ApiError::Conflict(m),
        host::ApiError::Forbidden(m) => ApiError::Forbidden(m),
        host::ApiError::Other(m) => ApiError::Other(m),
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
