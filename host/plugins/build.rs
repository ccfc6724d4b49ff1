//! Builds the status-manager plugins of `guest/plugins` into components, once, in one
//! cargo run: every program there is one logic version on one contract version.

use podstatus_build_support::{build_program_component_files, guest_target_dir, workspace_dir};

/// The programs of `guest/plugins` and the variable each one's component path is
/// passed to `src/lib.rs` in.
const PLUGINS: [(&str, &str); 7] = [
    ("podstatus-v1", "PODSTATUS_V1_COMPONENT"),
    ("podstatus-v2", "PODSTATUS_V2_COMPONENT"),
    ("podstatus-v3", "PODSTATUS_V3_COMPONENT"),
    ("podstatus-v4", "PODSTATUS_V4_COMPONENT"),
    ("podstatus-v1-on-0-1", "PODSTATUS_V1_ON_0_1_COMPONENT"),
    ("podstatus-v2-on-0-1", "PODSTATUS_V2_ON_0_1_COMPONENT"),
    ("podstatus-v3-on-0-1", "PODSTATUS_V3_ON_0_1_COMPONENT"),
];

fn main() {
    let workspace = workspace_dir(2);
    for path in ["guest", "wit", "Cargo.toml", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", workspace.join(path).display());
    }
    let target_dir = guest_target_dir(&workspace);
    let bins: Vec<&str> = PLUGINS.iter().map(|(bin, _)| *bin).collect();
    let files = build_program_component_files(&workspace, &target_dir, "podstatus-plugin-programs", &[], &bins);
    for ((_, var), file) in PLUGINS.iter().zip(files) {
        println!("cargo:rustc-env={var}={}", file.display());
    }
}
