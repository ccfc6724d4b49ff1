//! The only place that generates bindings for the WIT contract.
//!
//! Every import may trap (`trappable`): the host traps when the plugin breaches a limit
//! or hands it something no correct plugin would, and answers expected failures with
//! the WIT error types instead.

wasmtime::component::bindgen!({
    world: "status-manager",
    path: "../wit/status@0.1.0",
    imports: { default: trappable },
    additional_derives: [PartialEq, Eq],
});

pub use exports::kubelet::status::manager::{BatchReport, CachedStatus, ManagerError, SyncOutcome, UpdateOutcome};
pub use kubelet::status::types::{SyncRequest, Timestamp};

/// The WIT package this host implements, as it appears in import and export names.
pub const WIT_PACKAGE: &str = "kubelet:status@0.1.0";
