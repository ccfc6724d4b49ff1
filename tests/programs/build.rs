//! Builds the test programs into components and generates one constant per component:
//! every feature of `guests/adversary` is one adversary (`ADVERSARY_INFINITE_LOOP` for
//! feature `infinite-loop`), `guests/prober` is one component whose probe each test
//! picks at run time (`PROBER`), `guests/split-adversary` forges what a 0.2.0 plugin
//! hands the host (`SPLIT_ADVERSARY`), `guests/trespasser` reaches for pods never handed
//! to it (`TRESPASSER`), the `hostile` adversary gets three extra memories (see
//! `extra_memories.rs`), and `guests/failpoints` is the real plugin with faults on
//! demand (`FAILPOINTS` on contract 0.1.0, `FAILPOINTS_SPLIT` on 0.2.0), and `guests/liar` the
//! same lying in its state (`LIAR`, `LIAR_SPLIT`); `guests/serde-floor` is the operations
//! bench's floor of the sandbox (`SERDE_FLOOR`). The build fails when a component is
//! used by no test under `tests/all/` or `host/cli/tests/`, so none is built for nothing.

use std::fmt::Write;
use std::path::Path;

use podstatus_build_support::{build_component_file_with, build_program_component_files, workspace_dir};

mod extra_memories;

fn main() {
    let workspace = workspace_dir(2);
    for path in ["tests/programs/guests", "guest", "wit", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", workspace.join(path).display());
    }
    // A target directory of its own: these builds change features of packages the
    // host's build script builds too, and must not race it.
    let target_dir = workspace.join("target").join("guest-programs");
    let test_sources = read_test_sources(&workspace);
    let mut generated = String::new();
    let mut add = |constant: String, package: &str, features: &[&str], what: &str| {
        assert!(
            test_sources.contains(&constant),
            "test program {constant} is used by no test: use it in a test or remove it"
        );
        let name = constant.to_lowercase().replace('_', "-");
        // The runtime-chosen adversary also attacks with memories beside the main one.
        let transform = |core: Vec<u8>| {
            if features == ["hostile"] { extra_memories::add_extra_memories(&core, 3) } else { core }
        };
        let file = build_component_file_with(&workspace, &target_dir, package, features, &name, transform);
        writeln!(generated, "/// {what}").unwrap();
        writeln!(generated, "pub const {constant}: &[u8] = include_bytes!({:?});", file.display().to_string()).unwrap();
    };

    let manifest = std::fs::read_to_string(workspace.join("tests/programs/guests/adversary/Cargo.toml"))
        .expect("adversary manifest");
    for feature in features(&manifest) {
        let constant = format!("ADVERSARY_{}", feature.to_uppercase().replace('-', "_"));
        add(
            constant,
            "podstatus-test-adversary",
            &[feature.as_str()],
            &format!("The adversary built with feature `{feature}`."),
        );
    }
    add(
        "SERDE_FLOOR".into(),
        "podstatus-test-serde-floor",
        &[],
        "The floor of the sandbox for the status manager's work: set-pod-status only parses the status and serialises it again (the operations bench's serde floor, in the sandbox).",
    );
    add("WRONG_CONTRACT".into(), "podstatus-test-wrong-contract", &[], "A plugin of contract kubelet:status@9.0.0.");
    add(
        "PROBER".into(),
        "podstatus-test-prober",
        &[],
        "A hostile plugin probing the reach guard, its probe chosen by an annotation of the pod it is handed.",
    );
    add(
        "SPLIT_ADVERSARY".into(),
        "podstatus-test-split-adversary",
        &[],
        "A hostile plugin of contract 0.2.0 forging plans, batch cursors and calls, its attack chosen by the name of the pod it is handed.",
    );
    add(
        "TRESPASSER".into(),
        "podstatus-test-trespasser",
        &[],
        "A hostile plugin of contract 0.2.1 reaching for pods the host never handed it (planned syncs, ghost state, resize-only pods, forged phases), its attack chosen by an annotation of the pod it is handed, or drawn at random from a seed.",
    );
    // The real plugin with faults on demand, and one that also lies in its state: two
    // programs of each package, each package built in one run.
    let failpoints = [
        ("FAILPOINTS", "failpoints", "Logic v1 for contract 0.1.0 with faults on demand (guests/failpoints)."),
        (
            "FAILPOINTS_SPLIT",
            "failpoints-split",
            "Logic v1 for contract 0.2.0 with faults on demand (guests/failpoints).",
        ),
    ];
    let liar = [
        ("LIAR", "liar", "Logic v1 for contract 0.1.0 lying in its state, with faults on demand (guests/liar)."),
        (
            "LIAR_SPLIT",
            "liar-split",
            "Logic v1 for contract 0.2.0 lying in its state, with faults on demand (guests/liar).",
        ),
    ];
    for (package, programs) in [("podstatus-test-failpoints", &failpoints), ("podstatus-test-liar", &liar)] {
        for (constant, _, _) in programs {
            assert!(
                test_sources.contains(constant),
                "test program {constant} is used by no test: use it in a test or remove it"
            );
        }
        let bins: Vec<&str> = programs.iter().map(|(_, bin, _)| *bin).collect();
        let files = build_program_component_files(&workspace, &target_dir, package, &[], &bins, &[]);
        for ((constant, _, what), file) in programs.iter().zip(files) {
            writeln!(generated, "/// {what}").unwrap();
            writeln!(generated, "pub const {constant}: &[u8] = include_bytes!({:?});", file.display().to_string())
                .unwrap();
        }
    }

    let out = Path::new(&std::env::var("OUT_DIR").expect("set by cargo")).join("programs.rs");
    std::fs::write(out, generated).expect("writing programs.rs");
}

/// The feature names of a manifest's `[features]` table.
fn features(manifest: &str) -> Vec<String> {
    manifest
        .lines()
        .skip_while(|line| line.trim() != "[features]")
        .skip(1)
        .take_while(|line| !line.trim_start().starts_with('['))
        .filter_map(|line| line.split_once('=').map(|(name, _)| name.trim().to_string()))
        .filter(|name| !name.is_empty() && !name.starts_with('#'))
        .collect()
}

/// The text of every test file that may use a program.
fn read_test_sources(workspace: &Path) -> String {
    let mut text = String::new();
    for dir in ["tests/all", "host/cli/tests"] {
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
