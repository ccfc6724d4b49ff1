//! The replay report. Field order is the contract's; every collection is ordered, so
//! the same run always prints the same bytes.

use k8s_openapi::api::core::v1::Pod;
use serde::Serialize;

/// What a replay did.
#[derive(Debug, Serialize)]
pub struct Report {
    /// One entry per step that ran.
    pub results: Vec<serde_json::Value>,
    /// Every API call the plugin made, in order.
    pub calls: Vec<Call>,
    /// The API server's pods at the end, by namespace then name.
    pub apiserver: Vec<Pod>,
    /// Where the plugin faulted, if it did.
    pub fault: Option<Fault>,
}

/// One API call made by the plugin.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Call {
    /// The step during which it happened (0-based).
    pub step: usize,
    /// `get`, `update`, `patch` or `delete`.
    pub verb: &'static str,
    /// `status` for status writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subresource: Option<&'static str>,
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
    /// Writes only: the UID of the object changed, null when nothing changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_uid: Option<Option<String>>,
    /// Deletes and status patches: the UID precondition sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precondition_uid: Option<Option<String>>,
    /// Deletes: the grace period sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<Option<i64>>,
    /// `ok`, `not-found`, `conflict` or `error`.
    pub outcome: &'static str,
    /// Why the host's reach guard refused the call before it reached the API server
    /// (only in a replay with `--node`); the outcome is then `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The pod whose sync made the call, for a call the trace held (`hold-api`): with
    /// several syncs in flight, which one each call belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<String>,
}

/// The plugin's fault.
#[derive(Clone, Debug, Serialize)]
pub struct Fault {
    /// The step during which it faulted.
    pub step: usize,
    /// What happened, as the host reports it.
    pub message: String,
}
