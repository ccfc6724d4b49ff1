//! The API server as the status manager's imports reach it: the trait every backend
//! implements, its calls' arguments and its errors.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodStatus};

use crate::compact_pod::CompactPod;

/// The result of an API server call.
pub type Result<T, E = ApiError> = std::result::Result<T, E>;

/// The pod calls the status manager makes. Expected failures are [`ApiError`]s, never
/// panics: the caller reports them to the plugin as the WIT error variant.
///
/// Pods come back as `Arc<Pod>`, so that a backend holding its objects in memory can
/// hand out the stored object without copying it; callers only read them.
pub trait ApiServer: Send + Sync {
    /// GET the pod `namespace/name`.
    fn get_pod(&self, namespace: &str, name: &str) -> Result<Arc<Pod>>;

    /// PUT `.../pods/NAME/status`: replaces only `status`; fails with
    /// [`ApiError::Conflict`] when a given UID or resourceVersion precondition does not
    /// hold; returns the stored pod after the write. The update is taken whole, so its
    /// status becomes the stored one without a copy.
    fn update_pod_status(&self, update: StatusUpdate) -> Result<Arc<Pod>>;

    /// PATCH `.../pods/NAME/status` with a strategic merge patch of the pod (see
    /// [`podstatus_core::apply_status_patch`]): only `status` changes; the UID precondition, given here or as
    /// the patch's `metadata.uid`, must hold ([`ApiError::Conflict`] otherwise).
    fn patch_pod_status(&self, patch: StatusPatch) -> Result<Arc<Pod>> {
        Err(ApiError::Invalid { message: format!("pods \"{}\": status patches are not supported here", patch.name) })
    }

    /// DELETE with options; [`ApiError::Conflict`] when the UID precondition fails,
    /// [`ApiError::NotFound`] when the pod is absent. Returns the deleted pod.
    fn delete_pod(&self, namespace: &str, name: &str, options: &DeleteOptions) -> Result<Arc<Pod>>;

    /// [`ApiServer::get_pod`], answered as the pod's compact JSON: what the plugin is
    /// handed. A backend that keeps its pods so (the in-memory store) hands its own
    /// over, parsing nothing; by default the pod is written out.
    fn get_pod_compact(&self, namespace: &str, name: &str) -> Result<Arc<CompactPod>> {
        compact(&*self.get_pod(namespace, name)?)
    }

    /// [`ApiServer::update_pod_status`], answered as [`ApiServer::get_pod_compact`] is.
    fn update_pod_status_compact(&self, update: StatusUpdate) -> Result<Arc<CompactPod>> {
        compact(&*self.update_pod_status(update)?)
    }

    /// [`ApiServer::patch_pod_status`], answered as [`ApiServer::get_pod_compact`] is.
    fn patch_pod_status_compact(&self, patch: StatusPatch) -> Result<Arc<CompactPod>> {
        compact(&*self.patch_pod_status(patch)?)
    }

    /// The content rule a status write of `namespace/name` (UID `uid`) would be held to,
    /// asked before the write: `Some(Err(why))` when the status it writes (`status()`: a
    /// status, or a patch's `status`, as JSON; read only by a server that holds the
    /// rule) claims what the host never handed for the pod, `Some(Ok)` when it claims
    /// nothing beyond, `None` when this server holds no such rule. `of_request`: the
    /// write is the sync of a request the host queued, which may carry what was handed
    /// before the pod was last dropped (it was queued with that status). Only the
    /// reach guard holds one ([`crate::GuardedApiServer`]); a server in front of
    /// another passes the question on. The runtime asks it before a plugin's write, so
    /// that a breach is the plugin's fault, not only a refused call; the guard holds the
    /// write to the same rule anyway.
    fn judge_status_write(
        &self,
        _namespace: &str,
        _name: &str,
        _uid: &str,
        _of_request: bool,
        _status: &dyn Fn() -> Option<String>,
    ) -> Option<std::result::Result<(), String>> {
        None
    }
}

/// A pod written out as its compact JSON; one that does not serialise (no k8s-openapi
/// pod fails to) is the backend's internal error.
fn compact(pod: &Pod) -> Result<Arc<CompactPod>> {
    CompactPod::from_pod(pod).map(Arc::new).map_err(|e| ApiError::Internal { message: e.to_string() })
}

/// A strategic merge patch of a pod's status subresource.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatusPatch {
    /// Namespace of the pod.
    pub namespace: String,
    /// Name of the pod.
    pub name: String,
    /// The patch applies only to the object with this UID.
    pub uid_precondition: Option<String>,
    /// The patch of the pod object: `{"metadata": {"uid": ...}, "status": {...}}`.
    pub patch: serde_json::Value,
}

/// A write of a pod's status subresource.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatusUpdate {
    /// Namespace of the pod.
    pub namespace: String,
    /// Name of the pod.
    pub name: String,
    /// The write applies only to the object with this UID (an empty string means none,
    /// as in Kubernetes).
    pub uid_precondition: Option<String>,
    /// The write applies only to this resourceVersion (an empty string means none, as in
    /// Kubernetes).
    pub resource_version_precondition: Option<String>,
    /// The new status; replaces the stored one whole.
    pub status: PodStatus,
}

/// Options of a pod deletion.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// Delete only the object with this UID (an empty string means none).
    pub uid_precondition: Option<String>,
    /// Requested grace period; `Some(0)` asks for immediate deletion.
    pub grace_period_seconds: Option<i64>,
    /// Delete only while the object is at this resourceVersion (an empty string means
    /// none), as a `DeleteOptions.preconditions.resourceVersion` from a client asks.
    pub resource_version_precondition: Option<String>,
}

/// A failed API call, shaped like a Kubernetes `Status` (see [`ApiError::code`] and
/// [`ApiError::reason`]). Display gives the Kubernetes-style message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// 404: no pod with this namespace and name.
    #[error("pods \"{name}\" not found")]
    NotFound {
        /// Namespace looked in.
        namespace: String,
        /// Name looked for.
        name: String,
    },
    /// 409: a create found the name already taken.
    #[error("pods \"{name}\" already exists")]
    AlreadyExists {
        /// Namespace of the existing pod.
        namespace: String,
        /// Name of the existing pod.
        name: String,
    },
    /// 409: a UID or resourceVersion precondition did not hold.
    #[error("{message}")]
    Conflict {
        /// Kubernetes' message, e.g. "the object has been modified; ...".
        message: String,
    },
    /// 403: the request was refused before it reached the store: the plugin may reach
    /// only the pods of its node (see [`GuardedApiServer`](crate::GuardedApiServer)).
    #[error("{message}")]
    Forbidden {
        /// What was refused and why, e.g. "get of pod kube-system/etcd refused: not a
        /// pod of this node".
        message: String,
    },
    /// 422: the request itself is unacceptable (a pod without name or UID, ...).
    #[error("{message}")]
    Invalid {
        /// What is wrong with the request.
        message: String,
    },
    /// 500: the server failed.
    #[error("Internal error occurred: {message}")]
    Internal {
        /// What failed.
        message: String,
    },
    /// 503: the server could not be reached or is not serving.
    #[error("service unavailable: {message}")]
    Unavailable {
        /// Why the server is unavailable.
        message: String,
    },
}

impl ApiError {
    /// The HTTP status code Kubernetes answers with.
    pub fn code(&self) -> u16 {
        match self {
            Self::Forbidden { .. } => 403,
            Self::NotFound { .. } => 404,
            Self::AlreadyExists { .. } | Self::Conflict { .. } => 409,
            Self::Invalid { .. } => 422,
            Self::Internal { .. } => 500,
            Self::Unavailable { .. } => 503,
        }
    }

    /// The `reason` of the Kubernetes `Status` (what clients switch on).
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Forbidden { .. } => "Forbidden",
            Self::NotFound { .. } => "NotFound",
            Self::AlreadyExists { .. } => "AlreadyExists",
            Self::Conflict { .. } => "Conflict",
            Self::Invalid { .. } => "Invalid",
            Self::Internal { .. } => "InternalError",
            Self::Unavailable { .. } => "ServiceUnavailable",
        }
    }

    /// Conflict of a write whose resourceVersion precondition is stale.
    pub fn modified(name: &str) -> Self {
        Self::Conflict {
            message: format!(
                "Operation cannot be fulfilled on pods \"{name}\": the object has been \
                 modified; please apply your changes to the latest version and try again"
            ),
        }
    }

    /// Conflict of a write whose UID precondition names another object.
    pub fn uid_mismatch(name: &str, precondition: &str, actual: &str) -> Self {
        Self::Conflict {
            message: format!(
                "Operation cannot be fulfilled on pods \"{name}\": Precondition failed: \
                 UID in precondition: {precondition}, UID in object meta: {actual}"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_reasons_match_kubernetes() {
        let cases = [
            (ApiError::Forbidden { message: "m".into() }, 403, "Forbidden"),
            (ApiError::NotFound { namespace: "ns".into(), name: "a".into() }, 404, "NotFound"),
            (ApiError::AlreadyExists { namespace: "ns".into(), name: "a".into() }, 409, "AlreadyExists"),
            (ApiError::modified("a"), 409, "Conflict"),
            (ApiError::Invalid { message: "m".into() }, 422, "Invalid"),
            (ApiError::Internal { message: "m".into() }, 500, "InternalError"),
            (ApiError::Unavailable { message: "m".into() }, 503, "ServiceUnavailable"),
        ];
        for (error, code, reason) in cases {
            assert_eq!((error.code(), error.reason()), (code, reason), "{error}");
        }
        assert_eq!(ApiError::NotFound { namespace: "ns".into(), name: "a".into() }.to_string(), "pods \"a\" not found");
    }
}
