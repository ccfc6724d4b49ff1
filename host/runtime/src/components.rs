//! The plugins built from this checkout's `guest/` by the build script.

/// The status manager built from `guest/component` (logic v1, the seed's behaviour).
pub const PODSTATUS_V1: &[u8] = include_bytes!(env!("PODSTATUS_V1_COMPONENT"));

/// The status manager built from `guest/component-v2` (logic v2, Kubernetes 1.27's
/// behaviour; contract `kubelet:status@0.1.1`).
pub const PODSTATUS_V2: &[u8] = include_bytes!(env!("PODSTATUS_V2_COMPONENT"));

/// The status manager built from `guest/component-v3` (logic v3: v2's behaviour, each
/// status version written with one UID-guarded PATCH and no GET; contract
/// `kubelet:status@0.1.1`).
pub const PODSTATUS_V3: &[u8] = include_bytes!(env!("PODSTATUS_V3_COMPONENT"));
