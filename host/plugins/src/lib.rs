//! The status-manager plugins built from this checkout's `guest/plugins` by the build
//! script, as component bytes to hand to `podstatus_runtime::PluginRuntime::load`.
//!
//! The project's plugins implement contract 0.2.0 (logic v4: 0.2.1, which adds the
//! in-place resize calls): the host drives their syncs, so
//! syncs of different pods overlap. The same logic built against contract 0.1.x (whose
//! syncs call the API server themselves, serially) stays loadable and tested:
//! `*_ON_0_1`.

/// Logic v1 (the seed's behaviour), contract `kubelet:status@0.2.0`.
pub const PODSTATUS_V1: &[u8] = include_bytes!(env!("PODSTATUS_V1_COMPONENT"));

/// Logic v2 (Kubernetes 1.27's behaviour), contract `kubelet:status@0.2.0`.
pub const PODSTATUS_V2: &[u8] = include_bytes!(env!("PODSTATUS_V2_COMPONENT"));

/// Logic v3 (v2's behaviour, each status version written with one UID-guarded PATCH
/// and no GET), contract `kubelet:status@0.2.0`.
pub const PODSTATUS_V3: &[u8] = include_bytes!(env!("PODSTATUS_V3_COMPONENT"));

/// Logic v4 (Kubernetes 1.35's behaviour, written as v3 writes, with the in-place
/// resize conditions), contract `kubelet:status@0.2.1`.
pub const PODSTATUS_V4: &[u8] = include_bytes!(env!("PODSTATUS_V4_COMPONENT"));

/// Logic v1, contract `kubelet:status@0.1.0`.
pub const PODSTATUS_V1_ON_0_1: &[u8] = include_bytes!(env!("PODSTATUS_V1_ON_0_1_COMPONENT"));

/// Logic v2, contract `kubelet:status@0.1.1`.
pub const PODSTATUS_V2_ON_0_1: &[u8] = include_bytes!(env!("PODSTATUS_V2_ON_0_1_COMPONENT"));

/// Logic v3, contract `kubelet:status@0.1.1`.
pub const PODSTATUS_V3_ON_0_1: &[u8] = include_bytes!(env!("PODSTATUS_V3_ON_0_1_COMPONENT"));
