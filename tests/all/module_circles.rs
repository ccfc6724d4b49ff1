//! No module imports another that imports it back, in any crate of the workspace, at
//! any level: among the files of one folder, and among the folders of one crate (a
//! file in `a/` that uses `b/` while a file in `b/` uses `a/` is a loop). A circle
//! means neither module can be read, tested or moved without the other; the
//! architecture's invariant (docs/architecture.md) is held here.
//!
//! The graph is read from the sources: every `crate::` and `super::` path (in `use`
//! declarations and in code, not in comments) is an edge from the file's module to
//! the deepest module the path names; a name the crate root re-exports counts as the
//! module it comes from. A module's own children and ancestors are not edges (a
//! parent declares its children; a child may use what its parent holds), and unit
//! tests are not read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module path inside a crate (`["plugin", "supervisor"]`; the root is empty).
type Module = Vec<String>;

#[test]
fn no_module_imports_another_that_imports_it_back() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf();
    let mut circles = Vec::new();
    for krate in ["guest", "host"].iter().flat_map(|group| subfolders(&root.join(group))) {
        let src = krate.join("src");
        let Some(root_file) = ["lib.rs", "main.rs"].iter().map(|f| src.join(f)).find(|p| p.exists()) else {
            continue;
        };
        let files = module_files(&src);
        let modules: BTreeSet<Module> = files.keys().cloned().collect();
        let reexports = reexports(&read(&root_file), &modules);
        let mut edges: BTreeSet<(Module, Module)> = BTreeSet::new();
        for (module, path) in &files {
            for target in references(&read(path), module, &modules, &reexports) {
                if !target.is_empty() && !is_prefix(&target, module) && !is_prefix(module, &target) {
                    edges.insert((module.clone(), target));
                }
            }
        }
        let name = krate.strip_prefix(&root).unwrap_or(&krate).display().to_string();
        circles.extend(sibling_circles(&edges).into_iter().map(|c| format!("{name}/src: {}", c.join(" -> "))));
    }
    // No list of known circles to tolerate (issue 46 broke the last three): a circle is
    // broken by moving what both sides need below them, not by listing it here.
    assert!(circles.is_empty(), "modules that import each other back (break each circle): {circles:#?}");
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn subfolders(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    found.sort();
    found
}

/// Every module file under `src`, by module path (`a/mod.rs` and `a.rs` are `a`).
fn module_files(src: &Path) -> BTreeMap<Module, std::path::PathBuf> {
    let mut files = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source folder").filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                // A binary's own folder (`src/bin/`) is other crates.
                if path != src.join("bin") {
                    stack.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(src).expect("under src");
            let mut module: Module = relative.iter().map(|s| s.to_string_lossy().into_owned()).collect();
            let file = module.pop().unwrap_or_default();
            match file.as_str() {
                "lib.rs" | "main.rs" if module.is_empty() => {}
                "mod.rs" => {}
                other => module.push(other.trim_end_matches(".rs").to_string()),
            }
            files.insert(module, path);
        }
    }
    files
}

/// `text` without its comments (line comments and doc comments, where intra-doc links
/// name modules without depending on them) and without its unit tests (a file's
/// `#[cfg(test)] mod tests` at its end: test code may reach anything).
fn without_comments(text: &str) -> String {
    let code = text.split("#[cfg(test)]\nmod ").next().unwrap_or_default();
    code.lines().map(|line| line.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

/// The paths after each `prefix::` in `text`: a plain path's segments, or each path of
/// a `{...}` group.
fn paths_after(text: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().last();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        paths.extend(parse_tree(rest).into_iter().filter(|p| !p.is_empty()));
    }
    paths
}

/// A use tree at the start of `text`: `a::b::C` or `a::{b::C, d}`, as paths.
fn parse_tree(text: &str) -> Vec<Vec<String>> {
    let mut segments = Vec::new();
    let mut rest = text;
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let inner = group_body(group);
            return split_top_level(inner)
                .into_iter()
                .flat_map(parse_tree)
                .map(|tail| segments.iter().cloned().chain(tail).collect())
                .collect();
        }
        let ident: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if ident.is_empty() {
            break;
        }
        rest = &rest[ident.len()..];
        segments.push(ident);
        match rest.strip_prefix("::") {
            Some(after) => rest = after,
            None => break,
        }
    }
    vec![segments]
}

/// The text of a `{...}` group whose `{` was just read, up to its matching `}`.
fn group_body(text: &str) -> &str {
    let mut depth = 1;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &text[..i];
                }
            }
            _ => {}
        }
    }
    text
}

fn split_top_level(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(text[start..].trim());
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// The names the crate root re-exports (`pub use a::b::{X, Y}`), by the module they
/// come from.
fn reexports(root: &str, modules: &BTreeSet<Module>) -> BTreeMap<String, Module> {
    let text = without_comments(root);
    let mut names = BTreeMap::new();
    for statement in text.split("pub use ").skip(1) {
        let statement = statement.split(';').next().unwrap_or_default();
        for path in parse_tree(statement.trim()) {
            if let Some(module) = deepest_module(&path, modules)
                && let Some(name) = path.last()
            {
                names.insert(name.clone(), module);
            }
        }
    }
    names
}

/// The deepest module a path names (its longest prefix that is a module).
fn deepest_module(path: &[String], modules: &BTreeSet<Module>) -> Option<Module> {
    (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|prefix| modules.contains(prefix))
}

/// The modules `text` (the file of `module`) refers to.
fn references(
    text: &str,
    module: &Module,
    modules: &BTreeSet<Module>,
    reexports: &BTreeMap<String, Module>,
) -> BTreeSet<Module> {
    let text = without_comments(text);
    let absolute = paths_after(&text, "crate::");
    let parent: Module = module[..module.len().saturating_sub(1)].to_vec();
    let relative = paths_after(&text, "super::").into_iter().map(|p| parent.iter().cloned().chain(p).collect());
    absolute
        .into_iter()
        .chain(relative)
        .filter_map(|path: Vec<String>| {
            deepest_module(&path, modules).or_else(|| path.first().and_then(|name| reexports.get(name)).cloned())
        })
        .collect()
}

fn is_prefix(prefix: &Module, of: &Module) -> bool {
    of.len() >= prefix.len() && of[..prefix.len()] == prefix[..]
}

/// Circles among siblings: for every folder, its children (files and subfolders, each
/// standing for everything under it) and the edges between them.
fn sibling_circles(edges: &BTreeSet<(Module, Module)>) -> Vec<Vec<String>> {
    let mut by_parent: BTreeMap<Module, BTreeSet<(String, String)>> = BTreeMap::new();
    for (from, to) in edges {
        let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
        if common < from.len() && common < to.len() {
            by_parent.entry(from[..common].to_vec()).or_default().insert((from[common].clone(), to[common].clone()));
        }
    }
    let mut circles = Vec::new();
    for (parent, edges) in by_parent {
        for cycle in cycles(&edges) {
            let shown: Vec<String> =
                cycle.iter().map(|m| parent.iter().chain([m]).cloned().collect::<Vec<_>>().join("::")).collect();
            circles.push(shown);
        }
    }
    circles
}

/// One cycle through each node that is on one (found by depth-first search), as the
/// nodes in order with the first repeated.
fn cycles(edges: &BTreeSet<(String, String)>) -> Vec<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in edges {
        next.entry(a).or_default().push(b);
    }
    let mut found: Vec<Vec<String>> = Vec::new();
    let mut on_a_cycle: BTreeSet<String> = BTreeSet::new();
    for start in next.keys() {
        if on_a_cycle.contains(*start) {
            continue;
        }
        // Breadth-first back to `start`, the shortest cycle through it.
        let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([*start]);
        let mut closed = None;
        while let Some(node) = queue.pop_front() {
            for &to in next.get(node).into_iter().flatten() {
                if to == *start {
                    closed = Some(node);
                    break;
                }
                if !came_from.contains_key(to) {
                    came_from.insert(to, node);
                    queue.push_back(to);
                }
            }
            if closed.is_some() {
                break;
            }
        }
        if let Some(mut node) = closed {
            let mut cycle = vec![node.to_string()];
            while node != *start {
                node = came_from[node];
                cycle.push(node.to_string());
            }
            cycle.reverse();
            cycle.push(start.to_string());
            on_a_cycle.extend(cycle.iter().cloned());
            found.push(cycle);
        }
    }
    found
}
