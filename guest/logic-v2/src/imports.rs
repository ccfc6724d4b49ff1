//! What logic v2 needs from its host beyond what v1 needs.

use podstatus_logic::ApiError;
/// v1's imports, which v2's extend.
pub use podstatus_logic::Imports as V1Imports;

/// A strategic merge patch of a pod's status subresource: v1's type, since every
/// version's sync can ask for one (`podstatus_logic::ApiCall::PatchPodStatus`).
pub use podstatus_logic::StatusPatch;

/// Everything logic v2 calls out to: v1's imports plus the two of the newer contract.
/// v2 never calls [`podstatus_logic::Imports::update_pod_status`]: it patches.
pub trait Imports: podstatus_logic::Imports {
    /// api-server: patches the pod's status; returns the pod as stored after the write.
    fn patch_pod_status(&mut self, patch: StatusPatch) -> Result<String, ApiError>;

    /// deletion-safety: whether a container of the pod may still run on the node.
    fn pod_could_have_running_containers(&mut self, pod_json: &str) -> bool;
}
