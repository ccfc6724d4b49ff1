//! `kubelet:status/api-server` (contract 0.1.x only): the plugin calls the API server
//! from inside a sync. Each call is bounded and charged to the plugin's budget, then
//! made as a 0.2.0 host makes a sync's call ([`crate::api`]).

use crate::api::{delete_pod, get_pod, patch_pod_status, update_pod_status};
use crate::bindings::v0_1_1::kubelet::status::api_server::{
    self as wit, ApiError, DeleteOptions, StatusPatch, StatusUpdate,
};
use crate::bindings::{self as host};
use crate::imports::HostState;

impl wit::Host for HostState {
    fn get_pod(&mut self, namespace: String, name: String) -> wasmtime::Result<Result<String, ApiError>> {
        const IMPORT: &str = "get-pod";
        self.charge(IMPORT, namespace.len() + name.len())?;
        self.check_arg(IMPORT, "namespace", namespace.len())?;
        self.check_arg(IMPORT, "name", name.len())?;
        let world = &self.world;
        let result = self.sandbox.backend_call(|| get_pod(world, &namespace, &name))?.map_err(old_error);
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
        let update = host::StatusUpdate {
            namespace: update.namespace,
            name: update.name,
            uid_precondition: update.uid_precondition,
            resource_version_precondition: update.resource_version_precondition,
            status: update.status,
        };
        let result = self.sandbox.backend_call(|| update_pod_status(world, update))?.map_err(old_error);
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
        let patch = host::StatusPatch {
            namespace: patch.namespace,
            name: patch.name,
            uid_precondition: patch.uid_precondition,
            patch: patch.patch,
        };
        let result = self.sandbox.backend_call(|| patch_pod_status(world, patch))?.map_err(old_error);
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
