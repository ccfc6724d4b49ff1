//! What logic v2 needs from its host: v1's imports and the two of contract 0.1.1
//! (`podstatus_logic::PatchImports`), under the names v2's code uses.

/// v1's imports, which v2's extend.
pub use podstatus_logic::Imports as V1Imports;
/// Everything logic v2 calls out to: v1's imports plus the two of the newer contract.
pub use podstatus_logic::PatchImports as Imports;
/// A strategic merge patch of a pod's status subresource: every version's sync can ask
/// for one (`podstatus_logic::ApiCall::PatchPodStatus`).
pub use podstatus_logic::StatusPatch;
