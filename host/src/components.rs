//! The plugins built from this checkout's `guest/` by the build script.

/// The status manager built from `guest/component` (logic v1, the seed's behaviour).
pub const PODSTATUS_V1: &[u8] = include_bytes!(env!("PODSTATUS_V1_COMPONENT"));
