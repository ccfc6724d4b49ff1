//! The front page stays true to the workspace: README.md's layout table names every
//! crate of the workspace with its package name (and only paths that exist), every
//! contract version under `wit/`, and every plugin program of `guest/plugins`; the
//! contract chapter names every contract version. A crate, a contract or a logic
//! version added without its line in the docs fails here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is in the workspace").to_path_buf()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The strings between backticks in `text`.
fn quoted(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The rows of README's layout table (`| path | crate | what |`): each row's paths
/// (without the trailing `/`) and its crate cell.
fn layout_rows(readme: &str) -> Vec<(Vec<String>, String)> {
    let table = readme
        .split("| path | crate | what |")
        .nth(1)
        .expect("README.md has its layout table (| path | crate | what |)");
    table
        .lines()
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let paths = quoted(cells[1]).iter().map(|p| p.trim_end_matches('/').to_string()).collect();
            (paths, cells[2].to_string())
        })
        .collect()
}

/// The workspace's members, from the root Cargo.toml.
fn members() -> Vec<String> {
    let manifest = read("Cargo.toml");
    let list = manifest.split("members = [").nth(1).expect("a members list").split(']').next().unwrap_or_default();
    list.split(',').map(|m| m.trim().trim_matches('"').to_string()).filter(|m| !m.is_empty()).collect()
}

/// A crate's package name, from its Cargo.toml.
fn package_name(member: &str) -> String {
    let manifest = read(&format!("{member}/Cargo.toml"));
    let package = manifest.split("[package]").nth(1).expect("a [package] table");
    let line = package.lines().find(|l| l.trim_start().starts_with("name")).expect("a package name");
    line.split('"').nth(1).expect("a quoted name").to_string()
}

#[test]
fn the_readme_layout_names_every_crate_and_only_real_paths() {
    let rows = layout_rows(&read("README.md"));
    let listed: BTreeSet<&str> = rows.iter().flat_map(|(paths, _)| paths.iter().map(String::as_str)).collect();
    for path in &listed {
        assert!(root().join(path).exists(), "README.md's layout names `{path}/`, which does not exist");
    }
    for member in members() {
        // A test guest is covered by the row of the folder that holds it.
        let row = rows.iter().find(|(paths, _)| paths.contains(&member)).or_else(|| {
            rows.iter().find(|(paths, _)| paths.iter().any(|p| member.starts_with(&format!("{p}/guests"))))
        });
        let Some((paths, crates)) = row else {
            panic!("README.md's layout table has no row for the workspace member `{member}/`");
        };
        if paths.contains(&member) {
            let name = package_name(&member);
            assert!(
                quoted(crates).contains(&name.as_str()),
                "README.md's layout row of `{member}/` should name its crate `{name}` (it says {crates})"
            );
        }
    }
}

#[test]
fn the_readme_and_the_contract_chapter_name_every_contract_version() {
    let readme = read("README.md");
    let contract = read("docs/contract.md");
    let listed: BTreeSet<String> = layout_rows(&readme).into_iter().flat_map(|(paths, _)| paths).collect();
    let mut versions = 0;
    for entry in std::fs::read_dir(root().join("wit")).expect("wit/") {
        let name = entry.expect("an entry").file_name().to_string_lossy().into_owned();
        if !name.starts_with("status@") {
            continue;
        }
        versions += 1;
        assert!(listed.contains(&format!("wit/{name}")), "README.md's layout table does not name `wit/{name}/`");
        assert!(
            contract.contains(&format!("`wit/{name}/`")),
            "docs/contract.md does not name contract version `wit/{name}/`"
        );
    }
    assert!(versions >= 4, "only {versions} contract versions under wit/");
}

#[test]
fn the_readme_names_every_plugin_program() {
    let readme = read("README.md");
    let mut programs = 0;
    for entry in std::fs::read_dir(root().join("guest/plugins/src/bin")).expect("guest/plugins/src/bin") {
        let path = entry.expect("an entry").path();
        let Some(stem) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else { continue };
        programs += 1;
        let component = format!("podstatus-{}", stem.replace('_', "-"));
        assert!(
            readme.contains(&format!("`{component}`")),
            "README.md does not name the plugin `{component}` (guest/plugins/src/bin/{stem}.rs)"
        );
    }
    assert!(programs >= 4, "only {programs} plugin programs");
}
