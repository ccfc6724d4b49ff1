//! Builds the status-manager plugins from `guest/` into components, so the `podstatus`
//! binary, the tests and the benchmarks all run the plugins of this checkout: the three
//! logic versions for contract 0.1.x (one crate each), and for contract 0.2.0 (one
//! crate, `guest/plugin`, built once per logic feature).

use podstatus_build_support::{build_component_file, guest_target_dir, workspace_dir};

fn main() {
    let workspace = workspace_dir(2);
    for path in ["guest", "wit", "Cargo.toml", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", workspace.join(path).display());
    }
    let target_dir = guest_target_dir(&workspace);
    let v1 = build_component_file(&workspace, &target_dir, "podstatus-guest", &[], "podstatus-guest");
    println!("cargo:rustc-env=PODSTATUS_V1_COMPONENT={}", v1.display());
    let v2 = build_component_file(&workspace, &target_dir, "podstatus-guest-v2", &[], "podstatus-guest-v2");
    println!("cargo:rustc-env=PODSTATUS_V2_COMPONENT={}", v2.display());
    let v3 = build_component_file(&workspace, &target_dir, "podstatus-guest-v3", &[], "podstatus-guest-v3");
    println!("cargo:rustc-env=PODSTATUS_V3_COMPONENT={}", v3.display());
    // One after another: the builds share the core module's file name.
    for (feature, name, var) in [
        ("logic-v1", "podstatus-plugin-v1", "PODSTATUS_PLUGIN_V1_COMPONENT"),
        ("logic-v2", "podstatus-plugin-v2", "PODSTATUS_PLUGIN_V2_COMPONENT"),
        ("logic-v3", "podstatus-plugin-v3", "PODSTATUS_PLUGIN_V3_COMPONENT"),
    ] {
        let plugin = build_component_file(&workspace, &target_dir, "podstatus-plugin", &[feature], name);
        println!("cargo:rustc-env={var}={}", plugin.display());
    }
}
