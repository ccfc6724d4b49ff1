//! The rollout as Kubernetes names it: the API group, version and resource of a
//! `PluginRollout` (`podstatus-rollout-api`'s). The control endpoint asks the API server
//! whether a user may act on this resource (a SubjectAccessReview), so RBAC written for
//! the object also governs the endpoint: whoever may update a rollout may promote it
//! either way.

/// The API group of `PluginRollout` (the CRD shipped in `host/deploy/`).
pub const ROLLOUT_GROUP: &str = podstatus_rollout_api::GROUP;
/// Its version.
pub const ROLLOUT_VERSION: &str = podstatus_rollout_api::VERSION;
/// Its resource (plural) name, as RBAC rules and SubjectAccessReviews name it.
pub const ROLLOUT_RESOURCE: &str = podstatus_rollout_api::PLURAL;
/// Its kind.
pub const ROLLOUT_KIND: &str = podstatus_rollout_api::KIND;
