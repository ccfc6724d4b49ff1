//! The kubelet's pod status manager, as plain Rust.
//!
//! This crate knows nothing of WebAssembly: it talks to the world only through the
//! [`Imports`] trait, so the same code runs inside the component (through thin
//! wit-bindgen glue) and natively (benchmarks, fast fuzzing). Time comes only from
//! [`Imports::now`], and every map is ordered, so a run is reproducible byte for byte.

pub mod error;
pub mod imports;
pub mod jobs;
pub mod manager;
pub mod normalize;
pub mod pod;
pub mod quantity;
pub mod ready;
pub mod semantic_eq;
pub mod state;
pub mod sync;

pub use error::{InvalidPod, ManagerError, Result};
pub use imports::{
    ApiCall, ApiError, ApiReply, DeleteOptions, Imports, Level, StatusPatch, StatusUpdate, SyncRequest, Timestamp,
    UidTranslations,
};
pub use jobs::{BatchPlan, BatchSlice, PodSync, SyncOrigin, SyncStep, SyncTarget};
pub use manager::{BatchReport, CachedStatus, LastWritten, Manager, SyncOutcome, UpdateOutcome};
