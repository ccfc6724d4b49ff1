//! How a logic version since 1.27 writes: a write mode is a [`crate::SyncPolicy`] of
//! [`crate::Logic`], generic over the release whose merge and equality it writes with.
//! [`ReadThenPatch`] is upstream's (GET, merge over the status read, PATCH);
//! [`OneCall`] writes each status version with one PATCH and no GET.

mod one_call;
mod patching;
mod read_then_patch;
mod status_patch;
mod whole_conditions;
mod whole_status;

pub use one_call::{FirstDesign, OneCall, OneCallDesign, Refined};
pub use read_then_patch::ReadThenPatch;
