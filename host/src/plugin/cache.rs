//! The compiled-artifact cache: Cranelift takes most of a second to compile the plugin,
//! so a compiled component is kept on disk and a second start only maps it.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// A directory of compiled components, keyed by what they were compiled from.
#[derive(Clone, Debug)]
pub struct ArtifactCache {
    dir: PathBuf,
}

impl ArtifactCache {
    /// A cache in `dir` (created when first written).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ArtifactCache { dir: dir.into() }
    }

    /// The default place: `$PODSTATUS_CACHE_DIR`, else `$XDG_CACHE_HOME/podstatus`, else
    /// `~/.cache/podstatus`; None when none of them is set.
    pub fn default_dir() -> Option<PathBuf> {
        if let Some(dir) = std::env::var_os("PODSTATUS_CACHE_DIR") {
            return Some(PathBuf::from(dir));
        }
        if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
            return Some(PathBuf::from(dir).join("podstatus"));
        }
        std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache").join("podstatus"))
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The compiled form of `bytes` for `engine`: from the cache when a matching
    /// artifact is there, else compiled and stored. A cache that cannot be read or
    /// written only costs a compile.
    pub fn load_or_compile(&self, engine: &Engine, bytes: &[u8]) -> wasmtime::Result<(Component, CacheOutcome)> {
        let path = self.dir.join(format!("{}.cwasm", cache_key(engine, bytes)));
        if path.exists() {
            // SAFETY: `Component::deserialize_file` trusts its input to be an artifact
            // this engine produced. The file is named by the SHA-256 of the component's
            // bytes and the engine's compatibility hash and was written by `store` below
            // into the agent's own cache directory; wasmtime additionally checks the
            // engine configuration recorded in the artifact and refuses a mismatch.
            match unsafe { Component::deserialize_file(engine, &path) } {
                Ok(component) => return Ok((component, CacheOutcome::Hit)),
                Err(e) => tracing::warn!("discarding unusable compiled artifact {}: {e:#}", path.display()),
            }
        }
        let component = Component::new(engine, bytes)?;
        match component.serialize().map_err(std::io::Error::other).and_then(|artifact| store(&path, &artifact)) {
            Ok(()) => Ok((component, CacheOutcome::Compiled { stored: true })),
            Err(e) => {
                tracing::warn!("cannot store compiled artifact in {}: {e}", self.dir.display());
                Ok((component, CacheOutcome::Compiled { stored: false }))
            }
        }
    }
}

/// Whether the cache had the artifact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded from the cache without compiling.
    Hit,
    /// Compiled now; `stored` says whether the cache now holds it.
    Compiled { stored: bool },
}

/// SHA-256 of the component's bytes and of the engine's compatibility hash: a different
/// plugin, wasmtime version or engine configuration never reuses an artifact.
pub fn cache_key(engine: &Engine, bytes: &[u8]) -> String {
    use std::hash::{Hash, Hasher};
    struct Sha(Sha256);
    impl Hasher for Sha {
        fn finish(&self) -> u64 {
            0
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
    }
    let mut hasher = Sha(Sha256::new());
    hasher.write(bytes);
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hex(&hasher.0.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes atomically (temporary file, then rename) so a concurrent reader never maps a
/// half-written artifact.
fn store(path: &Path, artifact: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("artifact"),
        std::process::id()
    ));
    let mut file = fs::File::create(&tmp)?;
    file.write_all(artifact)?;
    file.sync_all()?;
    fs::rename(&tmp, path)
}
