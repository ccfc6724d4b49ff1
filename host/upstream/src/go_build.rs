//! Building the Go programs of `upstream/` for a release, with `k8s.io/kubernetes` at
//! that release: the oracle (`go test -c` of `upstream/oracle`, our reach files added
//! to its `pkg/kubelet/status` by `-overlay`) and the control plane (`go build` of
//! `upstream/cmd/controlplane`: etcd and kube-apiserver in one process).
//!
//! The go tool refuses an overlay of files beneath the module cache, so the build's
//! modfile (written under `target/upstream/VERSION/`) replaces `k8s.io/kubernetes`
//! with a symbolic link to the release's directory in the module cache: upstream is
//! read where the go tool put it, never copied, never edited. A program is rebuilt
//! when any file of `upstream/` or the Go version changes (a digest of them is kept
//! beside it), and builds of one release in several processes are serialised by a lock
//! file.

use std::collections::BTreeMap;
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::release::Release;

/// A Go program of `upstream/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    /// `upstream/oracle`, a test binary (it runs in `testing/synctest` bubbles).
    Oracle,
    /// `upstream/cmd/controlplane`: etcd and kube-apiserver.
    ControlPlane,
}

impl Program {
    /// The built file's name under `target/upstream/VERSION/`.
    fn file_name(self) -> &'static str {
        match self {
            Program::Oracle => "oracle.test",
            Program::ControlPlane => "controlplane",
        }
    }
}

impl std::fmt::Display for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Program::Oracle => "the upstream oracle",
            Program::ControlPlane => "the upstream control plane (etcd and kube-apiserver)",
        })
    }
}

/// Why a program could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// No `go` on PATH.
    #[error(
        "the upstream programs need Go 1.25 or later (`go` on PATH, with the Go module proxy): {0}; install Go (these machines have it in /usr/local/go/bin)"
    )]
    GoMissing(#[source] io::Error),
    /// A go command failed.
    #[error("building {program} for {release}: `{command}` failed:\n{output}")]
    Go {
        /// What was being built.
        program: Program,
        /// The release being built.
        release: Release,
        /// The command, as a user would type it.
        command: String,
        /// What it printed (its last lines).
        output: String,
    },
    /// Reading `upstream/` or writing under `target/upstream/`.
    #[error("building {program} for {release}: {path}: {source}")]
    Io {
        /// What was being built.
        program: Program,
        /// The release being built.
        release: Release,
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: io::Error,
    },
}

/// `upstream/`, the Go module, in this checkout.
pub fn module_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../upstream")
}

/// Where oracles are built: `$CARGO_TARGET_DIR/upstream`, else `target/upstream` of this
/// checkout.
pub fn out_root() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"))
        .join("upstream")
}

/// Builds the oracle for `release` unless the one built already is of the same sources
/// and Go, and returns the program's path.
pub fn build(release: Release) -> Result<PathBuf, BuildError> {
    build_program(Program::Oracle, release)
}

/// Builds `program` for `release` unless the one built already is of the same sources
/// and Go, and returns its path.
pub fn build_program(program: Program, release: Release) -> Result<PathBuf, BuildError> {
    let io_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BuildError::Io { program, release, path, source }
    };
    let go = |module: &Path, args: &[&str]| go(program, release, module, args);
    let module = module_dir().canonicalize().map_err(io_error(&module_dir()))?;
    let out = out_root().join(release.version);
    std::fs::create_dir_all(&out).map_err(io_error(&out))?;
    let out = out.canonicalize().map_err(io_error(&out))?;
    let lock_path = out.join("build.lock");
    let lock = File::create(&lock_path).map_err(io_error(&lock_path))?;
    lock.lock().map_err(io_error(&lock_path))?;

    let go_version = go(&module, &["version"])?;
    let digest = format!("{:016x}\n", sources_digest(&module, &go_version, release).map_err(io_error(&module))?);
    let built = out.join(program.file_name());
    let digest_path = out.join(format!("{}.digest", program.file_name()));
    if built.exists() && std::fs::read_to_string(&digest_path).is_ok_and(|d| d == digest) {
        return Ok(built);
    }
    tracing::info!("building {program} for {release} (Go, cached under {})", out.display());

    // The release's directory in the module cache (downloaded if need be).
    let modfile = module.join(release.modfile());
    let info = go(
        &module,
        &[
            "mod",
            "download",
            "-modfile",
            &path_str(&modfile),
            "-json",
            &format!("k8s.io/kubernetes@{}", release.version),
        ],
    )?;
    let dir = serde_json::from_str::<serde_json::Value>(&info)
        .ok()
        .and_then(|v| v["Dir"].as_str().map(PathBuf::from))
        .ok_or_else(|| BuildError::Go {
            program,
            release,
            command: "go mod download -json".into(),
            output: format!("no Dir in its answer: {info}"),
        })?;
    let link = out.join("kubernetes");
    let _ = std::fs::remove_file(&link);
    symlink(&dir, &link).map_err(io_error(&link))?;

    // The build's modfile: the release's, k8s.io/kubernetes replaced by the link.
    let build_mod = out.join("go.mod");
    let mut text = std::fs::read_to_string(&modfile).map_err(io_error(&modfile))?;
    text.push_str(&format!("\nreplace k8s.io/kubernetes => {}\n", link.display()));
    std::fs::write(&build_mod, text).map_err(io_error(&build_mod))?;
    let sum = modfile.with_extension("sum");
    std::fs::copy(&sum, out.join("go.sum")).map_err(io_error(&sum))?;

    let partial = out.join(format!("{}.partial", program.file_name()));
    match program {
        Program::Oracle => build_oracle(release, &module, &out, &link, &build_mod, &partial)?,
        Program::ControlPlane => {
            let ldflags = version_ldflags(release);
            let args = ["build", "-ldflags", &ldflags, "-modfile", &path_str(&build_mod), "-o", &path_str(&partial)];
            go(&module, &[&args[..], &["./cmd/controlplane"]].concat())?;
        }
    }
    std::fs::rename(&partial, &built).map_err(io_error(&built))?;
    std::fs::write(&digest_path, digest).map_err(io_error(&digest_path))?;
    Ok(built)
}

/// The version kube-apiserver reports (`/version`, and the emulated version it derives
/// from it), set as Kubernetes' own build sets it (`hack/lib/version.sh`): without it a
/// build outside Kubernetes' tree says `v0.0.0-master+$Format:%H$`, which kubectl
/// cannot parse.
fn version_ldflags(release: Release) -> String {
    let (major, minor) = release.minor().split_once('.').unwrap_or(("1", "0"));
    let values = [("gitVersion", release.version), ("gitMajor", major), ("gitMinor", minor), ("gitTreeState", "clean")];
    let mut flags = Vec::new();
    for package in ["k8s.io/client-go/pkg/version", "k8s.io/component-base/version"] {
        for (key, value) in values {
            flags.push(format!("-X {package}.{key}={value}"));
        }
    }
    flags.join(" ")
}

/// `go test -c` of the oracle into `partial`, with our reach files added to the linked
/// release's `pkg/kubelet/status` by an overlay.
fn build_oracle(
    release: Release,
    module: &Path,
    out: &Path,
    link: &Path,
    build_mod: &Path,
    partial: &Path,
) -> Result<(), BuildError> {
    let io_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BuildError::Io { program: Program::Oracle, release, path, source }
    };
    // The overlay: our reach files, added to the linked pkg/kubelet/status.
    let status = link.join("pkg/kubelet/status");
    let mut replace = BTreeMap::new();
    for part in release.reach {
        let dir = module.join("_reach").join(part);
        for entry in std::fs::read_dir(&dir).map_err(io_error(&dir))? {
            let path = entry.map_err(io_error(&dir))?.path();
            if let Some(name) = path.file_name() {
                replace.insert(path_str(&status.join(name)), path_str(&path));
            }
        }
    }
    let overlay = out.join("overlay.json");
    let overlay_text = serde_json::json!({ "Replace": replace }).to_string();
    std::fs::write(&overlay, overlay_text).map_err(io_error(&overlay))?;

    // The oracle names its release in what it says (the reach files do not).
    let ldflags = format!("-X podstatus.example/upstream/oracle.Release={}", release.minor());
    go(
        Program::Oracle,
        release,
        module,
        &[
            "test",
            "-c",
            "-tags",
            release.tags,
            "-ldflags",
            &ldflags,
            "-modfile",
            &path_str(build_mod),
            "-overlay",
            &path_str(&overlay),
            "-o",
            &path_str(partial),
            "./oracle",
        ],
    )?;
    Ok(())
}

/// Runs `go ARGS` in `module` and returns its standard output.
fn go(program: Program, release: Release, module: &Path, args: &[&str]) -> Result<String, BuildError> {
    let output = Command::new("go")
        .args(args)
        .current_dir(module)
        // The machine's Go builds every release; never fetch another toolchain.
        .env("GOTOOLCHAIN", "local")
        .output()
        .map_err(BuildError::GoMissing)?;
    if !output.status.success() {
        let text = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = text.lines().collect();
        return Err(BuildError::Go {
            program,
            release,
            command: format!("go {}", args.join(" ")),
            output: lines[lines.len().saturating_sub(40)..].join("\n"),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// How this file builds, in words: changed whenever a build's flags change, so that
/// programs built the old way are built again.
const RECIPE: &str = "control plane with the release's version ldflags";

/// A digest of every file of `upstream/` (paths and contents, in path order), the Go
/// version and the release.
fn sources_digest(module: &Path, go_version: &str, release: Release) -> io::Result<u64> {
    let mut files = Vec::new();
    collect(module, &mut files)?;
    files.sort();
    // std's SipHash with its fixed keys: the same digest in every process.
    #[allow(deprecated)]
    let mut hasher = std::hash::SipHasher::new();
    (go_version, release.version, release.tags, RECIPE).hash(&mut hasher);
    for file in files {
        file.strip_prefix(module).unwrap_or(&file).hash(&mut hasher);
        std::fs::read(&file)?.hash(&mut hasher);
    }
    Ok(hasher.finish())
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, files)?;
        } else {
            files.push(path);
        }
    }
    Ok(())
}

fn path_str(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
fn symlink(_: &Path, _: &Path) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "the oracle's build links the module cache, which needs Unix"))
}
