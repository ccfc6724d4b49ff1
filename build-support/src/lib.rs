//! Builds guest crates of this workspace into WebAssembly components, for build scripts.
//!
//! A guest is a core module built for `wasm32-unknown-unknown` and wrapped by
//! `wit-component`: unlike `wasm32-wasip2`, that component imports exactly the world's
//! interfaces and no WASI. Guests are built in a target directory of their own (a
//! nested cargo cannot share the outer build's lock) that every host profile reuses, so
//! a run builds each guest once.

use std::env;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root, from a build script's `CARGO_MANIFEST_DIR` (`levels` up).
pub fn workspace_dir(levels: usize) -> PathBuf {
    let mut dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("run from a build script"));
    for _ in 0..levels {
        dir.pop();
    }
    dir
}

/// Where guests are built: `$PODSTATUS_GUEST_TARGET_DIR`, else `target/guest`.
pub fn guest_target_dir(workspace: &Path) -> PathBuf {
    println!("cargo:rerun-if-env-changed=PODSTATUS_GUEST_TARGET_DIR");
    env::var_os("PODSTATUS_GUEST_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target").join("guest"))
}

/// Builds `package` (a cdylib crate of the workspace) with the `guest` profile and the
/// given cargo features, and returns its component. Panics with a clear message on
/// failure: this runs in build scripts, where a panic is how a build fails.
pub fn build_component(workspace: &Path, target_dir: &Path, package: &str, features: &[&str]) -> Vec<u8> {
    build_component_with(workspace, target_dir, package, features, |core| core)
}

/// [`build_component`], with `transform` applied to the core module before it is made a
/// component (a test program that needs what Rust cannot emit, such as a second memory).
pub fn build_component_with(
    workspace: &Path,
    target_dir: &Path,
    package: &str,
    features: &[&str],
    transform: impl FnOnce(Vec<u8>) -> Vec<u8>,
) -> Vec<u8> {
    let core = transform(build_core_module(workspace, target_dir, package, features));
    wit_component::ComponentEncoder::default()
        .module(&core)
        .and_then(|encoder| encoder.validate(true).encode())
        .unwrap_or_else(|e| panic!("making a component of {package}: {e:?}"))
}

/// Builds `package` with `features`, writes the component as `$OUT_DIR/{name}.wasm` and
/// beside the guest build (where a user can pass it to `--plugin`), and returns the
/// `$OUT_DIR` path. Builds of one target directory must not run concurrently with other
/// feature sets of the same package (the core module's file name is the package's).
pub fn build_component_file(
    workspace: &Path,
    target_dir: &Path,
    package: &str,
    features: &[&str],
    name: &str,
) -> PathBuf {
    build_component_file_with(workspace, target_dir, package, features, name, |core| core)
}

/// [`build_component_file`], with `transform` applied to the core module first (see
/// [`build_component_with`]).
pub fn build_component_file_with(
    workspace: &Path,
    target_dir: &Path,
    package: &str,
    features: &[&str],
    name: &str,
    transform: impl FnOnce(Vec<u8>) -> Vec<u8>,
) -> PathBuf {
    let component = build_component_with(workspace, target_dir, package, features, transform);
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("run from a build script"));
    write_component(&out_dir, target_dir, name, &component)
}

fn build_core_module(workspace: &Path, target_dir: &Path, package: &str, features: &[&str]) -> Vec<u8> {
    cargo_build(workspace, target_dir, package, features, &["--lib"]);
    read_core_module(target_dir, &package.replace('-', "_"))
}

/// Builds the programs `bins` of `package` (each a `src/bin/` target of a crate whose
/// library is the shared code, as wasmtime's test programs are) in one cargo run, with
/// the `guest` profile and the given cargo features; makes each a component, written
/// as `$OUT_DIR/{bin}.wasm` and beside the guest build; and returns the `$OUT_DIR`
/// paths in the order of `bins`. `sections[i]`, when given, is a custom section
/// (name, payload) appended to the component of `bins[i]` (what the program is, for a
/// reader of the file). Panics with a clear message on failure.
pub fn build_program_component_files(
    workspace: &Path,
    target_dir: &Path,
    package: &str,
    features: &[&str],
    bins: &[&str],
    sections: &[Option<(&str, Vec<u8>)>],
) -> Vec<PathBuf> {
    let mut args = Vec::new();
    for bin in bins {
        args.extend(["--bin", bin]);
    }
    cargo_build(workspace, target_dir, package, features, &args);
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("run from a build script"));
    bins.iter()
        .enumerate()
        .map(|(i, bin)| {
            let core = read_core_module(target_dir, bin);
            let mut component = wit_component::ComponentEncoder::default()
                .module(&core)
                .and_then(|encoder| encoder.validate(true).encode())
                .unwrap_or_else(|e| panic!("making a component of {package}'s {bin}: {e:?}"));
            if let Some(Some((name, payload))) = sections.get(i) {
                append_custom_section(&mut component, name, payload);
            }
            write_component(&out_dir, target_dir, bin, &component)
        })
        .collect()
}

/// Appends the custom section `name` with `payload` to a component (or module): a
/// section of id 0 whose content is the name's length and bytes, then the payload,
/// each length as unsigned LEB128. A custom section may stand anywhere; runtimes
/// ignore it.
fn append_custom_section(wasm: &mut Vec<u8>, name: &str, payload: &[u8]) {
    fn leb128(out: &mut Vec<u8>, mut n: usize) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    let mut content = Vec::new();
    leb128(&mut content, name.len());
    content.extend_from_slice(name.as_bytes());
    content.extend_from_slice(payload);
    wasm.push(0);
    leb128(wasm, content.len());
    wasm.extend_from_slice(&content);
}

/// Writes `component` as `{out_dir}/{name}.wasm` and beside the guest build in
/// `target_dir` (where a user can pass it to `--plugin`); returns the first path.
fn write_component(out_dir: &Path, target_dir: &Path, name: &str, component: &[u8]) -> PathBuf {
    let out = out_dir.join(format!("{name}.wasm"));
    std::fs::write(&out, component).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
    let public = target_dir.join(format!("{name}.wasm"));
    std::fs::write(&public, component).unwrap_or_else(|e| panic!("writing {}: {e}", public.display()));
    out
}

/// Runs the nested cargo build of `package` for [`GUEST_TARGET`] with the `guest`
/// profile, `features` and `targets` (which of its targets).
fn cargo_build(workspace: &Path, target_dir: &Path, package: &str, features: &[&str], targets: &[&str]) {
    ensure_guest_target();
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace)
        .args(["build", "--package", package, "--target", GUEST_TARGET, "--profile", "guest"])
        .args(targets)
        .arg("--target-dir")
        .arg(target_dir);
    if !features.is_empty() {
        cmd.arg("--features").arg(features.join(","));
    }
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
    cmd.env(GUEST_RUSTFLAGS_VAR, GUEST_RUSTFLAGS);
    let status = cmd.status().unwrap_or_else(|e| panic!("running cargo for {package}: {e}"));
    assert!(status.success(), "building the {package} plugin for {GUEST_TARGET} failed (its errors are above)");
}

/// The core module `name` (a library's crate name or a program's name) of the last
/// guest build in `target_dir`.
fn read_core_module(target_dir: &Path, name: &str) -> Vec<u8> {
    let module = target_dir.join(GUEST_TARGET).join("guest").join(format!("{name}.wasm"));
    std::fs::read(&module).unwrap_or_else(|e| panic!("reading {}: {e}", module.display()))
}

/// The target guests are built for: a core module that `wit-component` wraps.
pub const GUEST_TARGET: &str = "wasm32-unknown-unknown";

/// Where the guests' code generation flags go: cargo's variable for [`GUEST_TARGET`]'s
/// `rustflags` (the outer build's `RUSTFLAGS` are removed, so these apply).
const GUEST_RUSTFLAGS_VAR: &str = "CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS";

/// The guests' code generation flags: LLVM inlines up to a cost of 1,000 instead of
/// 225. In the sandbox every function entry (and loop header) pays the CPU budget's
/// epoch check, and serde's code is many small functions per JSON token: a changed
/// `set-pod-status` ran 21% fewer instructions in the sandbox with this (217,000 to
/// 171,000, with the plugin's own `memcmp`; callgrind, `examples/hot_path.rs`). The
/// price: the plugin is 2.2 MB instead of 1.4 MB, and compiling it (once per engine
/// and plugin, then the artifact cache serves it) takes 3.3 s and 200 MB at its peak
/// instead of 1.7 s and 80 MB (docs/benchmarks.md, issue 27).
const GUEST_RUSTFLAGS: &str = "-C llvm-args=-inline-threshold=1000";

/// Makes sure the compiler of this build has the standard library for [`GUEST_TARGET`],
/// adding it through rustup when it is missing, as wasm-pack does.
///
/// `rust-toolchain.toml` lists the target, but rustup installs listed targets only while
/// auto-install is on; with `RUSTUP_AUTO_INSTALL=0` (a fresh machine here) the nested
/// build would fail with "can't find crate for `core`" after the host's dependencies
/// took minutes to build. The runtime's and the test programs' build scripts may get
/// here at once, so a file lock makes one of them install and the other wait.
pub fn ensure_guest_target() {
    if guest_target_installed() {
        return;
    }
    // One lock for every build script on the machine (the two of this workspace build
    // into different target directories, but share the toolchain).
    let lock_path = env::temp_dir().join("podstatus-guest-target.lock");
    let lock = File::create(&lock_path).unwrap_or_else(|e| panic!("creating {}: {e}", lock_path.display()));
    lock.lock().unwrap_or_else(|e| panic!("locking {}: {e}", lock_path.display()));
    if guest_target_installed() {
        return;
    }
    let toolchain = env::var("RUSTUP_TOOLCHAIN").ok();
    println!(
        "cargo:warning=the {GUEST_TARGET} target (the plugin is built for it) is missing from toolchain {}: \
         adding it with `rustup target add {GUEST_TARGET}`",
        toolchain.as_deref().unwrap_or("in use")
    );
    let mut rustup = Command::new(env::var_os("RUSTUP").unwrap_or_else(|| "rustup".into()));
    rustup.args(["target", "add", GUEST_TARGET]);
    if let Some(toolchain) = &toolchain {
        rustup.args(["--toolchain", toolchain]);
    }
    match rustup.status() {
        Ok(status) if status.success() && guest_target_installed() => {}
        Ok(status) => panic!(
            "`rustup target add {GUEST_TARGET}` failed ({status}): the plugin cannot be built without that target"
        ),
        Err(e) => panic!(
            "the {GUEST_TARGET} target is missing and rustup could not be run ({e}): install the target \
             with your toolchain's installer; the plugin is built for it"
        ),
    }
}

/// Whether the compiler of this build has a standard library for [`GUEST_TARGET`].
fn guest_target_installed() -> bool {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(out) = Command::new(rustc).args(["--print", "target-libdir", "--target", GUEST_TARGET]).output() else {
        return false;
    };
    let libdir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    out.status.success()
        && std::fs::read_dir(libdir).is_ok_and(|entries| {
            entries.filter_map(|e| e.ok()).any(|e| e.file_name().to_string_lossy().starts_with("libcore-"))
        })
}
