//! A pod's identity is read in one place: `podstatus_backends::pod_identity` (`uid_of`
//! on the object, `PodIdentity::read` and `uid_in_json` on its JSON). Issue 46 found
//! the UID read by four readers of a pod's JSON and `uid_of` written three times, each
//! with its own idea of a missing field; a helper of that kind defined anywhere else on
//! the host fails here, so that the next one is a use of the one reader instead.

use std::path::{Path, PathBuf};

/// Definitions that would be a second reader of a pod's identity (of a pod, or of its
/// JSON: `fn pod_uid(&self)`, a call's `pod_uid` argument, reads no pod).
const READERS: [&str; 6] =
    ["fn uid_of(", "fn pod_uid(pod", "fn uid(pod", "fn pod_identity(", "fn identity_of(", "struct PodIdentity"];

/// The one module that defines them.
const THE_READER: &str = "host/backends/src/pod_identity.rs";

#[test]
fn pod_identity_is_read_in_one_place() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf();
    let mut found = Vec::new();
    for file in rust_files(&root.join("host")) {
        let relative = file.strip_prefix(&root).unwrap_or(&file).display().to_string();
        if relative == THE_READER {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{relative}: {e}"));
        // Unit tests may build what they check against.
        let code = text.split("#[cfg(test)]\nmod ").next().unwrap_or_default();
        for reader in READERS {
            if code.lines().any(|line| line.split("//").next().unwrap_or_default().contains(reader)) {
                found.push(format!("{relative}: `{reader}`"));
            }
        }
    }
    assert!(found.is_empty(), "pod identity read outside {THE_READER} (use it instead): {found:#?}");
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}
