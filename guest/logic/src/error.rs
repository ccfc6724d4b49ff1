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
    /// `start_sync`, `resume_sync` was handed a sync this manager does not have: never
    /// planned, over, dropped, already started (`start_sync`) or not waiting for an
    /// answer (`resume_sync`).
    UnknownSync(u64),
    /// `load_state` was handed a document this manager cannot read.
    InvalidState(String),
    /// The logic version has no such operation (logic v1 has no startup probes).
    Unsupported(String),
}

impl fmt::Display for ManagerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ManagerError::InvalidPod(m) => write!(f, "invalid pod: {m}"),
            ManagerError::InvalidStatus(m) => write!(f, "invalid status: {m}"),
            ManagerError::UnknownRequest(id) => write!(f, "unknown sync request {id}"),
            ManagerError::UnknownSync(id) => write!(f, "unknown sync {id}"),
            ManagerError::InvalidState(m) => write!(f, "invalid state: {m}"),
            ManagerError::Unsupported(m) => write!(f, "unsupported: {m}"),
        }
    }
}

impl std::error::Error for ManagerError {}

/// Shorthand for results of Manager operations.
pub type Result<T, E = ManagerError> = std::result::Result<T, E>;

/// Turns a parse failure (a message) into [`ManagerError::InvalidPod`], naming what was
/// parsed: `PodView::parse_with_uid(&json).invalid_pod(|| format!("mirror pod of {uid}"))`.
pub trait InvalidPod<T> {
    /// The error, as `"{what}: {message}"`; `what` is built only on failure.
    fn invalid_pod(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: fmt::Display> InvalidPod<T> for std::result::Result<T, E> {
    fn invalid_pod(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| ManagerError::InvalidPod(format!("{}: {e}", what())))
    }
}
