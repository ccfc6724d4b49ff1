//! Builds the status-manager plugin from `guest/` and turns it into a component, so the
//! `podstatus` binary, the tests and the benchmarks all run the plugin of this checkout.
//!
//! The guest is a core module built for `wasm32-unknown-unknown` and wrapped by
//! `wit-component`: unlike `wasm32-wasip2`, that component imports exactly the world's
//! interfaces and no WASI. It is built once into a target directory of its own (nested
//! cargo cannot share the outer build's lock) that every host profile reuses.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Guest crates to build: (package, constant name for the host).
const GUESTS: &[(&str, &str)] = &[("podstatus-guest", "PODSTATUS_V1_COMPONENT")];

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest_dir.parent().expect("host/ lives in the workspace").to_path_buf();
    for path in ["guest", "wit", "Cargo.toml", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", workspace.join(path).display());
    }

    let target_dir = env::var_os("PODSTATUS_GUEST_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target").join("guest"));
    println!("cargo:rerun-if-env-changed=PODSTATUS_GUEST_TARGET_DIR");
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));

    for (package, constant) in GUESTS {
        let core = build_core_module(&workspace, &target_dir, package);
        let component = componentize(&core, package);
        let out = out_dir.join(format!("{package}.component.wasm"));
        std::fs::write(&out, &component).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
        // Also beside the guest's build, where a user can pass it to `--plugin`.
        let public = target_dir.join(format!("{package}.wasm"));
        std::fs::write(&public, &component).unwrap_or_else(|e| panic!("writing {}: {e}", public.display()));
        println!("cargo:rustc-env={constant}={}", out.display());
    }
}

fn build_core_module(workspace: &Path, target_dir: &Path, package: &str) -> Vec<u8> {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace)
        .args(["build", "--package", package, "--target", "wasm32-unknown-unknown", "--profile", "guest"])
        .arg("--target-dir")
        .arg(target_dir);
    // The outer build's flags and wrappers (clippy's driver, coverage, jobserver) are
    // for the host, not for the plugin.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_MAKEFLAGS",
        "MAKEFLAGS",
        "MFLAGS",
        "CARGO_LLVM_COV",
        "LLVM_PROFILE_FILE",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().unwrap_or_else(|e| panic!("running cargo for {package}: {e}"));
    assert!(
        status.success(),
        "building the {package} plugin failed (is the wasm32-unknown-unknown target installed? `rustup target add wasm32-unknown-unknown`)"
    );
    let module = target_dir
        .join("wasm32-unknown-unknown")
        .join("guest")
        .join(format!("{}.wasm", package.replace('-', "_")));
    std::fs::read(&module).unwrap_or_else(|e| panic!("reading {}: {e}", module.display()))
}

fn componentize(core: &[u8], package: &str) -> Vec<u8> {
    wit_component::ComponentEncoder::default()
        .module(core)
        .and_then(|encoder| encoder.validate(true).encode())
        .unwrap_or_else(|e| panic!("making a component of {package}: {e:?}"))
}
