//! `kubelet:status/api-server` (contract 0.1.x only): the plugin calls the API server
//! from inside a sync. Each call is bounded and charged to the plugin's budget, held to
//! the rule of what a plugin may reach ([`crate::reach`]: a name Kubernetes allows
//! first, so the rule's messages quote only such), then made as a 0.2.0 host makes a
//! sync's call ([`crate::api`]).

use crate::api::{delete_pod, get_pod_and_uid, invalid_name, patch_pod_status, update_pod_status};
use crate::bindings::v0_1_1::kubelet::status::api_server::{
    self as wit, ApiError, DeleteOptions, StatusPatch, StatusUpdate,
};
use crate::bindings::{self as host};
use crate::handed::default_namespace;
use crate::imports::HostState;
use crate::limits::FaultKind;
use crate::reach::{Access, Broken, Reached, by_name, check_claims, recreated};
use crate::shown::shown;
use crate::world::World;

impl wit::Host for HostState {
    fn get_pod(&mut self, namespace: String, name: String) -> wasmtime::Result<Result<String, ApiError>> {
        const IMPORT: &str = "get-pod";
        self.admit(IMPORT, &[("namespace", namespace.len()), ("name", name.len())])?;
        if let Some(e) = invalid_name(&namespace, &name) {
            return self.answer(IMPORT, Ok(Err(e)));
        }
        let handed = self.reachable(&namespace, &name);
        self.reach(IMPORT, &namespace, &name, handed.clone(), None, Access::Read)?;
        let world = &self.world;
        let result = self.sandbox.backend_call(|| get_pod_and_uid(world, &namespace, &name))?;
        if let Ok((_, Some(found))) = &result {
            // A handed pod the read shows recreated is gone: the plugin drops its status
            // (upstream's `deletePodStatus`), and the host's record drops it on the
            // host's own reading, not the plugin's word.
            for gone in recreated(&self.world.pod_manager, &handed, found) {
                self.handed.drop_pod(&gone);
            }
        }
        self.answer(IMPORT, Ok(result.map(|(pod, _)| pod)))
    }

    fn update_pod_status(&mut self, update: StatusUpdate) -> wasmtime::Result<Result<String, ApiError>> {
        let [namespace, name, uid] = named_lens(&update.namespace, &update.name, &update.uid_precondition);
        let rv = ("resourceVersion precondition", len_of(&update.resource_version_precondition));
        const IMPORT: &str = "update-pod-status";
        self.admit(IMPORT, &[namespace, name, ("status", update.status.len()), uid, rv])?;
        if let Some(e) = invalid_name(&update.namespace, &update.name) {
            return self.answer(IMPORT, Ok(Err(e)));
        }
        let given = update.uid_precondition.as_deref();
        let handed = self.reachable(&update.namespace, &update.name);
        let reached =
            self.reach(IMPORT, &update.namespace, &update.name, handed, given, Access::Update(&update.status))?;
        let update = host::StatusUpdate {
            namespace: update.namespace,
            name: update.name,
            uid_precondition: reached.pinned.or(update.uid_precondition),
            resource_version_precondition: update.resource_version_precondition,
            status: update.status,
        };
        self.pod_call(IMPORT, |world| update_pod_status(world, update))
    }

    fn patch_pod_status(&mut self, patch: StatusPatch) -> wasmtime::Result<Result<String, ApiError>> {
        let [namespace, name, uid] = named_lens(&patch.namespace, &patch.name, &patch.uid_precondition);
        const IMPORT: &str = "patch-pod-status";
        self.admit(IMPORT, &[namespace, name, ("patch", patch.patch.len()), uid])?;
        if let Some(e) = invalid_name(&patch.namespace, &patch.name) {
            return self.answer(IMPORT, Ok(Err(e)));
        }
        let given = patch.uid_precondition.as_deref();
        let handed = self.reachable(&patch.namespace, &patch.name);
        let reached = self.reach(IMPORT, &patch.namespace, &patch.name, handed, given, Access::Patch(&patch.patch))?;
        let patch = host::StatusPatch {
            namespace: patch.namespace,
            name: patch.name,
            uid_precondition: reached.pinned.or(patch.uid_precondition),
            patch: patch.patch,
        };
        self.pod_call(IMPORT, |world| patch_pod_status(world, patch))
    }

    fn delete_pod(
        &mut self,
        namespace: String,
        name: String,
        options: DeleteOptions,
    ) -> wasmtime::Result<Result<(), ApiError>> {
        const IMPORT: &str = "delete-pod";
        self.admit(IMPORT, &named_lens(&namespace, &name, &options.uid_precondition))?;
        if let Some(e) = invalid_name(&namespace, &name) {
            let e = old_error(e);
            self.charge_result(IMPORT, error_len(&e))?;
            return Ok(Err(e));
        }
        let handed = self.reachable(&namespace, &name);
        let given = options.uid_precondition.as_deref();
        let reached = self.reach(IMPORT, &namespace, &name, handed, given, Access::Delete)?;
        let world = &self.world;
        let options = host::DeleteOptions {
            uid_precondition: reached.pinned.or(options.uid_precondition),
            grace_period_seconds: options.grace_period_seconds,
        };
        let result = self.sandbox.backend_call(|| delete_pod(world, &namespace, &name, options)).map_err(old_error);
        match &result {
            // Deleted: the plugin drops the pod's status (upstream's `deletePodStatus`),
            // and the host its record of it.
            Ok(()) => self.handed.drop_pod(&reached.uid),
            Err(e) => self.charge_result(IMPORT, error_len(e))?,
        }
        Ok(result)
    }
}

impl HostState {
    /// The handed pods a call on `namespace/name` may reach: those the host handed under
    /// that name and this instance may reach, or, while the host makes the plugin sync
    /// a request it queued, the request's pod even if dropped since (upstream's queued
    /// request carries its status, and `syncPod` writes it after `RemoveOrphanedStatuses`
    /// too). A status the call in progress handed is noted first.
    fn reachable(&mut self, namespace: &str, name: &str) -> Vec<Box<str>> {
        self.note_pending();
        let namespace = default_namespace(namespace);
        let mut handed = self.handed.named(namespace, name);
        handed.retain(|uid| self.may_reach(uid));
        if handed.is_empty()
            && let Some(uid) = &self.syncing
            && self.handed.lately_named(uid).is_some_and(|(ns, n)| &*ns == namespace && &*n == name)
        {
            handed.push(uid.clone());
        }
        handed
    }

    /// Holds a call of `import` on `namespace/name` (UID precondition `given`; `handed`
    /// what [`Self::reachable`] says of the name) to the rule
    /// ([`crate::reach::by_name`]): the pod it reaches, or a trap naming the import, the
    /// pod and the rule broken (the instance is not entered again).
    fn reach(
        &mut self,
        import: &str,
        namespace: &str,
        name: &str,
        handed: Vec<Box<str>>,
        given: Option<&str>,
        access: Access<'_>,
    ) -> wasmtime::Result<Reached> {
        let namespace = default_namespace(namespace);
        // The sync of a request the host queued may write what was handed before a drop.
        let of_request = |uid: &str| self.syncing.as_deref() == Some(uid);
        let request = handed.iter().any(|uid| of_request(uid));
        let (record, pods) = (&self.handed, &self.world.pod_manager);
        let reached = by_name(record, pods, handed, import, namespace, name, given, access, request);
        let (kind, message) = match reached {
            Ok(reached) => {
                let api_uid = reached.pinned.as_deref().or(given).unwrap_or(&reached.uid);
                let request = of_request(&reached.uid);
                match check_claims(&*self.world.api_server, namespace, name, api_uid, request, access) {
                    Ok(()) => return Ok(reached),
                    Err(why) => {
                        (FaultKind::Content, format!("{import} of pod {:?}/{:?}: {why}", shown(namespace), shown(name)))
                    }
                }
            }
            Err(Broken::Reach(message)) => (FaultKind::ForeignUid, message),
            Err(Broken::Content(message)) => (FaultKind::Content, message),
        };
        self.sandbox.breach = Some(kind);
        tracing::warn!(target: crate::imports::TARGET, kind = kind.as_str(), "refused: {message}");
        Err(wasmtime::format_err!("{message}"))
    }

    /// One call of `import` that answers a pod (its arguments admitted and held to the
    /// rule already): `call` made as a backend call, the pod or the error charged.
    fn pod_call(
        &mut self,
        import: &str,
        call: impl FnOnce(&World) -> wasmtime::Result<Result<String, host::ApiError>>,
    ) -> wasmtime::Result<Result<String, ApiError>> {
        let world = &self.world;
        let result = self.sandbox.backend_call(|| call(world))?;
        self.answer(import, Ok(result))
    }

    /// `result` as the plugin gets it, charged.
    fn answer(
        &mut self,
        import: &str,
        result: wasmtime::Result<Result<String, host::ApiError>>,
    ) -> wasmtime::Result<Result<String, ApiError>> {
        let result = result?.map_err(old_error);
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
