//! The Kubernetes helpers that every part of podstatus shares: one copy of each.
//!
//! The status manager's logic (every version), the host's backends and the test fakes
//! read pods, compare statuses and look up conditions the same way, so they all use
//! this crate. It knows nothing of WebAssembly or of the host: it is plain Rust over
//! k8s-openapi's types and the pod's JSON.

mod error;
mod go_time;
mod lookup;
mod normalize;
mod pod;
mod pod_meta;
mod quantity;
mod readiness;
mod semantic_eq;
#[cfg(feature = "status-patch")]
mod status_patch;
mod status_writer;

pub use error::JsonError;
pub use go_time::is_zero;
pub use lookup::{
    find_condition, find_condition_in, find_condition_mut, find_container_status, find_container_status_mut,
};
pub use normalize::{
    MAX_POD_TERMINATION_MESSAGE_BYTES, normalize_status, normalize_status_with_ephemeral, sort_init_container_statuses,
    truncate_at_char_boundary, truncate_time,
};
pub use pod::{
    API_SOURCE, CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION, MetaView, NamedView, PodView, SpecView,
    is_static_source, parse_status, status_to_json,
};
pub use pod_meta::PodMeta;
pub use quantity::{ParsedQuantity, go_canonical, parse_quantity, quantities_equal};
pub use readiness::{
    CONTAINERS_NOT_READY, ContainersReadiness, POD_COMPLETED, POD_INITIALIZED, POD_READY, POD_SUCCEEDED,
    UNKNOWN_CONTAINER_STATUSES, condition,
};
pub use semantic_eq::status_equal;
#[cfg(feature = "status-patch")]
pub use status_patch::{PatchError, apply_status_patch};
pub use status_writer::write_status;
