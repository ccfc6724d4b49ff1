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

use crate::release::{Follows, Logic, Release};

/// A write mode, as the table of built-in plugins and `podstatus inspect` name it.
pub trait WriteMode {
    /// Its name: `read-then-patch`, `one-call`.
    const NAME: &'static str;
}

impl WriteMode for ReadThenPatch {
    const NAME: &'static str = "read-then-patch";
}

/// One name for both designs: [`FirstDesign`] is the mode as logic v3 (`1.27-one-call`)
/// shipped it, kept for that version alone.
impl<D: OneCallDesign> WriteMode for OneCall<D> {
    const NAME: &'static str = "one-call";
}

/// A release's logic version follows that release, in its write mode.
impl<R: Release, M: WriteMode> Follows for Logic<R, M> {
    const RELEASE: &'static str = R::NAME;
    const MODE: &'static str = M::NAME;
}
