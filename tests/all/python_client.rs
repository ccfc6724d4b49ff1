//! The official Kubernetes Python client (`kubernetes` on PyPI) against the embedded API
//! server: version, create, list by label and by `spec.nodeName`, status patches with a
//! dict body (a strategic merge patch: conditions merge by type), a watch, a 404 as an
//! `ApiException`, and a deletion. The client's side is `fixtures/clients/python_client.py`.
//!
//! The interpreter: `$PODSTATUS_PYTHON`, else `target/python/bin/python` (the venv
//! `.ci/run` makes), else `python3`; one without the `kubernetes` module skips the test,
//! loudly.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use podstatus_apiserver::EmbeddedApiServer;
use podstatus_backends::MemoryApiServer;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf()
}

/// An interpreter that has the client, or None (then the test says so loudly).
fn python() -> Option<PathBuf> {
    let venv = workspace().join("target/python/bin/python");
    let candidates =
        std::env::var_os("PODSTATUS_PYTHON").map(PathBuf::from).into_iter().chain([venv, "python3".into()]);
    for candidate in candidates {
        let has_client = Command::new(&candidate).args(["-c", "import kubernetes"]).output();
        if has_client.is_ok_and(|out| out.status.success()) {
            return Some(candidate);
        }
    }
    eprintln!("\n\n!!! no Python with the `kubernetes` client: the Python client test is SKIPPED !!!\n\n");
    None
}

#[test]
fn the_python_client_creates_lists_patches_watches_and_deletes() {
    let Some(python) = python() else { return };
    let server =
        EmbeddedApiServer::start(Arc::new(MemoryApiServer::with_graceful_deletion()), "127.0.0.1:0".parse().unwrap())
            .expect("server starts");
    let script = workspace().join("tests/fixtures/clients/python_client.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(server.url())
        .env("HOME", std::env::temp_dir())
        .env_remove("KUBECONFIG")
        .output()
        .expect("python runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the Python client failed:\n{stderr}\n{stdout}");
    assert_eq!(stdout.trim(), "ok", "{stderr}");
    // What the client did is in the store: the pod is gone, deleted by it.
    assert!(server.store().list_pods().is_empty(), "{:?}", server.store().list_pods());
}
