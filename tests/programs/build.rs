//! Builds every crate under `guests/` into a component and generates one constant per
//! component (`TRAP_ON_SYNC` for `guests/trap-on-sync`). The build fails when a program
//! is used by no test under `tests/` or `host/tests/`, so none is built for nothing.

use std::fmt::Write;
use std::path::Path;

use podstatus_build_support::{build_component_file, guest_target_dir, workspace_dir};

fn main() {
    let workspace = workspace_dir(2);
    let programs_dir = workspace.join("tests").join("programs").join("guests");
    for path in ["tests/programs/guests", "guest/logic", "wit", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", workspace.join(path).display());
    }
    let target_dir = guest_target_dir(&workspace);

    let mut names: Vec<String> = std::fs::read_dir(&programs_dir)
        .expect("tests/programs/guests exists")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("Cargo.toml").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();

    let test_sources = read_test_sources(&workspace);
    let mut generated = String::new();
    for name in &names {
        let constant = name.to_uppercase().replace('-', "_");
        assert!(
            test_sources.contains(&constant),
            "test program {name} is used by no test: reference {constant} in a test or remove it"
        );
        let file = build_component_file(&workspace, &target_dir, &format!("podstatus-test-{name}"));
        writeln!(generated, "/// The component built from `tests/programs/guests/{name}`.").unwrap();
        writeln!(generated, "pub const {constant}: &[u8] = include_bytes!({:?});", file.display().to_string()).unwrap();
    }
    let out = Path::new(&std::env::var("OUT_DIR").expect("set by cargo")).join("programs.rs");
    std::fs::write(out, generated).expect("writing programs.rs");
}

/// The text of every test file that may use a program.
fn read_test_sources(workspace: &Path) -> String {
    let mut text = String::new();
    for dir in ["tests", "host/tests"] {
        let Ok(entries) = std::fs::read_dir(workspace.join(dir)) else { continue };
        for entry in entries.filter_map(|e| e.ok()) {
            if entry.path().extension().is_some_and(|e| e == "rs") {
                println!("cargo:rerun-if-changed={}", entry.path().display());
                text += &std::fs::read_to_string(entry.path()).unwrap_or_default();
            }
        }
    }
    text
}
