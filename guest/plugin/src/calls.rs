//! The API calls a sync asks the host for, and the host's answers, between the logic's
//! types and contract 0.2.0's `api` interface.

use podstatus_logic::{ApiCall, ApiError, ApiReply};

use crate::kubelet::status::api as wit;

/// A call the logic asks for, as the host receives it.
pub fn api_call(call: ApiCall) -> wit::ApiCall {
    match call {
        ApiCall::GetPod { namespace, name } => wit::ApiCall::GetPod(wit::PodName { namespace, name }),
        ApiCall::UpdatePodStatus(update) => wit::ApiCall::UpdatePodStatus(wit::StatusUpdate {
            namespace: update.namespace,
            name: update.name,
            uid_precondition: update.uid_precondition,
            resource_version_precondition: update.resource_version_precondition,
            status: update.status,
        }),
        ApiCall::PatchPodStatus(patch) => wit::ApiCall::PatchPodStatus(wit::StatusPatch {
            namespace: patch.namespace,
            name: patch.name,
            uid_precondition: patch.uid_precondition,
            patch: patch.patch,
        }),
        ApiCall::DeletePod { namespace, name, options } => wit::ApiCall::DeletePod(wit::PodDeletion {
            namespace,
            name,
            options: wit::DeleteOptions {
                uid_precondition: options.uid_precondition,
                grace_period_seconds: options.grace_period_seconds,
            },
        }),
    }
}

/// The host's answer, as the logic takes it (whether its shape fits the call is the
/// logic's to check).
pub fn api_reply(reply: wit::ApiReply) -> ApiReply {
    match reply {
        wit::ApiReply::Pod(pod) => ApiReply::Pod(pod.map_err(api_error)),
        wit::ApiReply::Deleted(deleted) => ApiReply::Deleted(deleted.map_err(api_error)),
    }
}

fn api_error(e: wit::ApiError) -> ApiError {
    match e {
        wit::ApiError::NotFound(m) => ApiError::NotFound(m),
        wit::ApiError::Conflict(m) => ApiError::Conflict(m),
        wit::ApiError::Forbidden(m) => ApiError::Forbidden(m),
        wit::ApiError::Other(m) => ApiError::Other(m),
    }
}
