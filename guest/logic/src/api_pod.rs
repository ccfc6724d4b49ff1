//! A pod as the API server or the pod manager returned it.

use k8s_openapi::api::core::v1::PodStatus;
use podstatus_core::PodMeta;

use crate::error::{InvalidPod, Result};

/// A pod as the API server (or the pod manager) returned it: its metadata read, its JSON
/// kept for the imports that take a pod and for its status, which is parsed only when a
/// version asks for it (a sync decides from the metadata; see [`PodMeta`]).
pub struct ApiPod {
    /// Boxed: a sync keeps the pod while its call is out, and passes it along in small
    /// enums.
    pub view: Box<PodMeta>,
    pub json: String,
}

impl ApiPod {
    /// Parses `json`, a pod that must have a UID; `what` names it in the error.
    pub fn parse(json: String, what: impl FnOnce() -> String) -> Result<ApiPod> {
        let view = PodMeta::parse_with_uid(&json).invalid_pod(what)?;
        Ok(ApiPod { view: Box::new(view), json })
    }

    /// The pod's status (absent or null is the empty status), refused as an invalid
    /// pod when it is not a PodStatus.
    pub fn parse_status(&self) -> Result<PodStatus> {
        self.view.parse_status(&self.json).invalid_pod(|| format!("status of {}", self.view.full_name()))
    }
}
