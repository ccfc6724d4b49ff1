//! What the status manager needs from its host, as a plain Rust trait.
//!
//! The component's glue implements it with the WIT imports; benchmarks and the native
//! fuzzer implement it directly. Pods and statuses travel as JSON text here too, so the
//! native build pays the same parsing cost as the component and the two can be compared.

/// A point in wall-clock time (the `types.timestamp` of the WIT contract).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timestamp {
    /// Whole seconds since the Unix epoch.
    pub seconds: i64,
    /// Nanoseconds past `seconds`, below 1e9.
    pub nanoseconds: u32,
}

/// A handle on a status snapshot the manager keeps until the host hands it back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncRequest {
    /// Unique for the manager's lifetime.
    pub id: u64,
    /// The pod the status belongs to.
    pub pod_uid: String,
    /// The status version of the snapshot.
    pub version: u64,
}

/// Why an API call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiError {
    /// HTTP 404.
    NotFound(String),
    /// HTTP 409: a precondition failed.
    Conflict(String),
    /// The host refused the call: the pod is not this node's to touch.
    Forbidden(String),
    /// Anything else.
    Other(String),
}

impl ApiError {
    /// The server's message.
    pub fn message(&self) -> &str {
        match self {
            ApiError::NotFound(m) | ApiError::Conflict(m) | ApiError::Forbidden(m) | ApiError::Other(m) => m,
        }
    }
}

/// A replacement of a pod's status subresource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusUpdate {
    pub namespace: String,
    pub name: String,
    pub uid_precondition: Option<String>,
    pub resource_version_precondition: Option<String>,
    /// The new status as JSON.
    pub status: String,
}

/// A strategic merge patch of a pod's status subresource (the WIT `status-patch`).
/// Logic v1 never sends one; every version since 1.27 writes with it
/// ([`ApiCall::PatchPodStatus`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusPatch {
    pub namespace: String,
    pub name: String,
    /// The UID the patch is for; the patch carries it as `metadata.uid` too.
    pub uid_precondition: Option<String>,
    /// `{"metadata": {"uid": ...}, "status": {...}}` (the write modes' `status_patch`).
    pub patch: String,
}

/// How to delete a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteOptions {
    pub uid_precondition: Option<String>,
    pub grace_period_seconds: Option<i64>,
}

/// One call to the API server that a sync needs answered before it can go on (the
/// WIT `api-call`): a sync does not make its calls itself, so that a host can make them
/// when it chooses while the manager serves everything else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiCall {
    /// Read the pod; answered with [`ApiReply::Pod`].
    GetPod { namespace: String, name: String },
    /// Replace the pod's status; answered with [`ApiReply::Pod`] (the pod after the write).
    UpdatePodStatus(StatusUpdate),
    /// Patch the pod's status; answered with [`ApiReply::Pod`] (the pod after the write).
    PatchPodStatus(StatusPatch),
    /// Delete the pod; answered with [`ApiReply::Deleted`].
    DeletePod { namespace: String, name: String, options: DeleteOptions },
}

/// The answer to an [`ApiCall`] (the WIT `api-reply`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiReply {
    /// The answer to a read or a write: the pod as JSON.
    Pod(Result<String, ApiError>),
    /// The answer to a delete.
    Deleted(Result<(), ApiError>),
}

/// What a sync makes of a reply whose shape does not fit its call (a host's mistake):
/// a failed call, handled as the sync handles any failure of that call.
pub const MISFIT_REPLY: &str = "reply does not fit the call";

impl ApiReply {
    /// The answer to a read or a write.
    pub fn into_pod(self) -> Result<String, ApiError> {
        match self {
            ApiReply::Pod(reply) => reply,
            ApiReply::Deleted(_) => Err(ApiError::Other(MISFIT_REPLY.into())),
        }
    }

    /// The answer to a delete.
    pub fn into_deleted(self) -> Result<(), ApiError> {
        match self {
            ApiReply::Deleted(reply) => reply,
            ApiReply::Pod(_) => Err(ApiError::Other(MISFIT_REPLY.into())),
        }
    }
}

/// Both directions of the static/mirror pairing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UidTranslations {
    /// Static UID to mirror UID ("" when the mirror pod does not exist yet).
    pub pod_to_mirror: Vec<(String, String)>,
    /// Mirror UID to static UID.
    pub mirror_to_pod: Vec<(String, String)>,
}

/// Log levels, most severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

/// Everything the status manager calls out to. Each method is one WIT import; a
/// contract that lacks one answers it as a failed call (the glue says which), and no
/// logic version calls an import its contracts lack: v1 (contract 0.1.0) never patches
/// nor asks whether containers may still run, and the split contracts (0.2.x) make
/// their API calls through the host (`sync-step.call`), never through these.
pub trait Imports {
    // api-server
    fn get_pod(&mut self, namespace: &str, name: &str) -> Result<String, ApiError>;
    fn update_pod_status(&mut self, update: StatusUpdate) -> Result<String, ApiError>;
    /// Patches the pod's status; returns the pod as stored after the write (contract
    /// 0.1.1 and later).
    fn patch_pod_status(&mut self, patch: StatusPatch) -> Result<String, ApiError>;
    fn delete_pod(&mut self, namespace: &str, name: &str, options: DeleteOptions) -> Result<(), ApiError>;

    // pod-manager
    fn get_pod_by_uid(&mut self, uid: &str) -> Option<String>;
    /// Whether the pod manager has the pod with this UID: what a probe update that
    /// changes nothing asks, without parsing the pod (`get-pod-by-uid`, the pod dropped).
    fn has_pod(&mut self, uid: &str) -> bool {
        self.get_pod_by_uid(uid).is_some()
    }
    fn get_mirror_pod_by_pod(&mut self, pod_json: &str) -> Option<String>;
    fn translate_pod_uid(&mut self, uid: &str) -> String;
    fn get_uid_translations(&mut self) -> UidTranslations;

    // deletion-safety
    fn pod_resources_are_reclaimed(&mut self, pod_json: &str, status_json: &str) -> bool;
    /// Whether a container of the pod may still run on the node (contract 0.1.1 and
    /// later).
    fn pod_could_have_running_containers(&mut self, pod_json: &str) -> bool;

    // clock
    fn now(&mut self) -> Timestamp;

    // logging
    fn log(&mut self, level: Level, message: &str);
    fn log_enabled(&mut self, level: Level) -> bool;

    // sync-queue
    fn push_sync_request(&mut self, request: SyncRequest) -> bool;
}
