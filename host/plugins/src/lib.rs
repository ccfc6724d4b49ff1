//! The built-in status-manager plugins of this checkout, one table generated from
//! `guest/plugins`' programs by the build script: each program as component bytes to
//! hand to `podstatus_runtime::PluginRuntime::load` (`PODSTATUS_V1`, ...), each logic
//! version with a built-in plugin as a [`LogicVersion`] (the CLI's `--logic` choices),
//! and each linked natively ([`NativePlugin`]).
//!
//! The project's plugins implement contract 0.2.0 (logic v4: 0.2.1, which adds the
//! in-place resize calls): the host drives their syncs, so syncs of different pods
//! overlap. The same logic built against contract 0.1.x (whose syncs call the API
//! server themselves, serially) stays loadable and tested: `*_ON_0_1`.

/// The custom section of each built-in component that names its logic version: its
/// `--logic` name, then a space and its alias when it has one (`1.27 v2`).
pub const LOGIC_SECTION: &str = "podstatus-logic";

// The constants and `foreach_logic_version!`, before the modules that use the macro.
include!(concat!(env!("OUT_DIR"), "/built_in.rs"));

mod logic_version;
mod native;
mod native_imports;

pub use logic_version::LogicVersion;
pub use native::NativePlugin;
