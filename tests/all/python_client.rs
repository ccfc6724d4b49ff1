//! The official Kubernetes Python client (`kubernetes` on PyPI) against the embedded API
//! server: version, create, list by label and by `spec.nodeName`, status patches with a
//! dict body (a strategic merge patch: conditions merge by type), a watch, a 404 as an
//! `ApiException`, a body over the request limit answered 413 (an `ApiException` the
//! client reads, not a broken pipe), and a deletion. The client's side is `fixtures/clients/python_client.py`.
//!
//! The interpreter: `$PODSTATUS_PYTHON` if set (it must have the client), else the venv
//! `target/python`, which this test makes and fills with `pip install kubernetes` when it
//! is missing (as `.ci/run` does). A client that cannot be had fails the test: it never
//! passes without running.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use podstatus_apiserver::EmbeddedApiServer;
use podstatus_backends::MemoryApiServer;
use podstatus_tests::venv;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf()
}

fn has_client(python: &Path) -> bool {
    Command::new(python).args(["-c", "import kubernetes"]).output().is_ok_and(|out| out.status.success())
}

/// An interpreter that has the official client.
fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("PODSTATUS_PYTHON").map(PathBuf::from) {
        assert!(has_client(&python), "$PODSTATUS_PYTHON ({}) has no `kubernetes` module", python.display());
        return python;
    }
    venv::ensure("the Python client", |venv| has_client(&venv.join("bin/python")), &["kubernetes"]);
    venv::venv_python()
}

#[test]
fn the_python_client_creates_lists_patches_watches_and_deletes() {
    let python = python();
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
