//! The in-place resize conditions (Kubernetes 1.33+, KEP-1287) the status manager keeps
//! per pod, apart from the cached statuses: upstream's `podResizeConditions`. The kubelet
//! sets and clears them as a resize is decided and actuated, and reads them back when it
//! generates the pod's status; the manager never writes them to the API server itself.

use k8s_openapi::api::core::v1::PodCondition;

use crate::error::{ManagerError, Result};

/// Condition type: a resize was asked for but cannot be granted yet (reason `Deferred`)
/// or ever (reason `Infeasible`).
pub const POD_RESIZE_PENDING: &str = "PodResizePending";
/// Condition type: a resize was granted and is being actuated (reason `Error` when the
/// last attempt failed).
pub const POD_RESIZE_IN_PROGRESS: &str = "PodResizeInProgress";

/// The longest reason accepted, in bytes: a condition's reason is one CamelCase word, and
/// metav1.Condition's validation caps it at 1024. A longer one is refused, not cut, so
/// what the caller reads back is what it set.
pub const MAX_RESIZE_REASON_BYTES: usize = 1024;
/// The longest message accepted, in bytes: metav1.Condition's validation cap (32 KiB);
/// without it a caller could grow the state document without bound through one pod.
pub const MAX_RESIZE_MESSAGE_BYTES: usize = 32 * 1024;

/// Which of the two in-place resize conditions (Kubernetes 1.33+, KEP-1287).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResizeCondition {
    /// `PodResizePending`.
    Pending,
    /// `PodResizeInProgress`.
    InProgress,
}

impl ResizeCondition {
    /// The condition's type, as the API has it.
    pub fn condition_type(self) -> &'static str {
        match self {
            ResizeCondition::Pending => POD_RESIZE_PENDING,
            ResizeCondition::InProgress => POD_RESIZE_IN_PROGRESS,
        }
    }
}

/// One pod's resize conditions, each absent until set (upstream's `podResizeConditions`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResizeConditions {
    /// `PodResizePending`, if set.
    pub pending: Option<PodCondition>,
    /// `PodResizeInProgress`, if set.
    pub in_progress: Option<PodCondition>,
}

impl ResizeConditions {
    /// The condition `which`, if set.
    pub fn get(&self, which: ResizeCondition) -> Option<&PodCondition> {
        match which {
            ResizeCondition::Pending => self.pending.as_ref(),
            ResizeCondition::InProgress => self.in_progress.as_ref(),
        }
    }

    /// The slot of the condition `which`.
    pub(crate) fn slot(&mut self, which: ResizeCondition) -> &mut Option<PodCondition> {
        match which {
            ResizeCondition::Pending => &mut self.pending,
            ResizeCondition::InProgress => &mut self.in_progress,
        }
    }

    /// The conditions that are set, PodResizePending first (upstream's `List`).
    pub fn list(&self) -> impl Iterator<Item = &PodCondition> {
        self.pending.iter().chain(self.in_progress.iter())
    }

    /// Whether neither condition is set: such an entry is not kept (upstream keeps an
    /// empty one, which answers every question as no entry does).
    pub fn is_empty(&self) -> bool {
        self.pending.is_none() && self.in_progress.is_none()
    }
}

/// Refuses a reason or message over the bounds ([`MAX_RESIZE_REASON_BYTES`],
/// [`MAX_RESIZE_MESSAGE_BYTES`]) with [`ManagerError::InvalidStatus`] naming which.
pub(crate) fn check_resize_text(which: ResizeCondition, reason: &str, message: &str) -> Result<()> {
    let check = |what: &str, text: &str, max: usize| {
        if text.len() > max {
            return Err(ManagerError::InvalidStatus(format!(
                "{} {what} is {} bytes, over the {max} accepted",
                which.condition_type(),
                text.len()
            )));
        }
        Ok(())
    };
    check("reason", reason, MAX_RESIZE_REASON_BYTES)?;
    check("message", message, MAX_RESIZE_MESSAGE_BYTES)
}
