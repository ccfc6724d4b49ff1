//! Why a pod or a status could not be read.

/// A pod or status that is not the JSON of its Kubernetes type (or, never in practice,
/// a status k8s-openapi could not write). The message names what was wrong; callers
/// add what was being read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JsonError(pub(crate) String);

impl JsonError {
    /// An error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        JsonError(message.into())
    }
}
