//! Builds the status-manager plugin from `guest/` into a component, so the `podstatus`
//! binary, the tests and the benchmarks all run the plugin of this checkout.

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
}
