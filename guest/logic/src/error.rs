//! The errors a Manager operation can return (the WIT `manager-error`).

use std::fmt;

/// Why a Manager operation could not be carried out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ManagerError {
    /// A pod (from the caller or an import) is not a usable core/v1 Pod.
    InvalidPod(String),
    /// A status is not a usable core/v1 PodStatus.
    InvalidStatus(String),
    /// `sync_pod` was handed a request this manager never queued or already handled.
    UnknownRequest(u64),
    /// `load_state` was handed a document this manager cannot read.
    InvalidState(String),
}

impl fmt::Display for ManagerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ManagerError::InvalidPod(m) => write!(f, "invalid pod: {m}"),
            ManagerError::InvalidStatus(m) => write!(f, "invalid status: {m}"),
            ManagerError::UnknownRequest(id) => write!(f, "unknown sync request {id}"),
            ManagerError::InvalidState(m) => write!(f, "invalid state: {m}"),
        }
    }
}

impl std::error::Error for ManagerError {}

/// Shorthand for results of Manager operations.
pub type Result<T, E = ManagerError> = std::result::Result<T, E>;
