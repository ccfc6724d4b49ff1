//! Why a call into a plugin did not succeed, and how much of a plugin's own words the
//! host repeats.

use crate::bindings::{Contract, ManagerError};
use crate::limits::FaultKind;

/// Why a call into the plugin did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The plugin refused the call with one of the contract's errors; its state is
    /// unchanged and it keeps serving.
    #[error("{call}: {}", describe(.error))]
    Rejected {
        /// The export that was called.
        call: &'static str,
        /// The plugin's reason.
        error: ManagerError,
    },
    /// The plugin trapped or breached a limit. The instance cannot be entered again.
    #[error("the plugin faulted in {call} ({}): {message}", .kind.as_str())]
    Fault {
        /// The export that was called.
        call: &'static str,
        /// Which limit was breached, or a plain trap.
        kind: FaultKind,
        /// What happened, as wasmtime reports it.
        message: String,
    },
    /// The plugin does not export this call (it implements an older contract).
    #[error("{call}: not exported by this plugin, which implements {contract}")]
    Unsupported {
        /// The export that was asked for.
        call: &'static str,
        /// The contract the plugin implements.
        contract: Contract,
    },
    /// The host refused to pass the plugin an argument over the boundary limit; the
    /// plugin was not called.
    #[error("{call}: {what} of {len} bytes exceeds the boundary limit of {limit} bytes")]
    TooLarge {
        /// The export that would have been called.
        call: &'static str,
        /// Which argument.
        what: &'static str,
        /// Its size.
        len: usize,
        /// The limit.
        limit: usize,
    },
}

/// Shorthand for the results of plugin calls.
pub type Result<T, E = CallError> = std::result::Result<T, E>;

/// A human-readable form of the contract's error.
/// The plugin's message is its own text (up to the boundary limit): at most
/// [`MAX_ERROR_MESSAGE_BYTES`] of it are shown, so no log line carries megabytes the
/// plugin chose.
pub fn describe(error: &ManagerError) -> String {
    match error {
        ManagerError::InvalidPod(m) => format!("invalid pod: {}", bounded(m)),
        ManagerError::InvalidStatus(m) => format!("invalid status: {}", bounded(m)),
        ManagerError::UnknownRequest(id) => format!("unknown sync request {id}"),
        ManagerError::InvalidState(m) => format!("invalid state: {}", bounded(m)),
        ManagerError::UnknownSync(id) => format!("unknown sync {id}"),
        ManagerError::Unsupported(m) => format!("unsupported: {}", bounded(m)),
    }
}

/// The most of a plugin's error message the host repeats (in errors and logs).
pub const MAX_ERROR_MESSAGE_BYTES: usize = 1024;

/// `text` cut at [`MAX_ERROR_MESSAGE_BYTES`] (at a character boundary), saying how much
/// was left out.
pub(crate) fn bounded(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_ERROR_MESSAGE_BYTES {
        return text.into();
    }
    let mut cut = MAX_ERROR_MESSAGE_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… (+{} bytes)", &text[..cut], text.len() - cut).into()
}
