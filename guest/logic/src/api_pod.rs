//! A pod as the API server or the pod manager returned it.

use podstatus_core::PodView;

use crate::error::{InvalidPod, Result};

/// A pod as the API server (or the pod manager) returned it: parsed, and its JSON for
/// the imports that take a pod.
pub struct ApiPod {
    /// Boxed: a sync keeps the pod while its call is out, and passes it along in small
    /// enums.
    pub view: Box<PodView>,
    pub json: String,
}

impl ApiPod {
    /// Parses `json`, a pod that must have a UID; `what` names it in the error.
    pub fn parse(json: String, what: impl FnOnce() -> String) -> Result<ApiPod> {
        let view = PodView::parse_with_uid(&json).invalid_pod(what)?;
        Ok(ApiPod { view: Box::new(view), json })
    }
}
