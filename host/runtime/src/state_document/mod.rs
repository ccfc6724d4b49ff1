//! The plugin's state document as the host reads it: the one versioned format every
//! logic version saves and loads (`save-state`, `save-state-changes`).
//!
//! Two parts of the host read it, and neither owns it: the supervisor keeps a copy to
//! restore a faulted instance from ([`crate::plugin`]), and a hot swap checks that the
//! new plugin took what it was given ([`crate::swap`]). Both hold a state against the
//! host's record of accepted statuses ([`HeldState`]). Here, below them both, so that
//! neither reaches into the other.

mod audit;
mod entries;

pub use audit::{Findings, HeldState, RepairError};
pub(crate) use entries::{CHANGES_FORMAT, ChangesEntries, Entries};
