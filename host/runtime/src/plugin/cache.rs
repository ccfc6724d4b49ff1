//! The compiled-artifact cache: Cranelift takes most of a second to compile the plugin,
//! so a compiled component is kept on disk and a second start only maps it.
//!
//! # Eviction
//! Every plugin version, wasmtime upgrade or engine setting leaves an artifact of a few
//! MiB behind, so each insert also evicts ([`EvictionPolicy`]): artifacts not used for
//! [`EvictionPolicy::max_age`] go, then the least recently used until the cache holds
//! at most [`EvictionPolicy::max_bytes`]. Use is the modification time of an
//! artifact's digest (set when it is stored, and again at each hit), which lives in the
//! private `digests/` directory. An artifact this process stored or loaded is never
//! evicted by it, even past the cap; another process that mapped one keeps its mapping
//! (removing a file on Unix does not unmap it).

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// A directory of compiled components, keyed by what they were compiled from.
#[derive(Clone, Debug)]
pub struct ArtifactCache {
    dir: PathBuf,
    policy: EvictionPolicy,
}

/// When the cache removes artifacts (see the module doc): on each insert.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvictionPolicy {
    /// Artifacts not used for this long are removed; default 30 days (a plugin or
    /// wasmtime version unused for a month is not coming back often enough to matter).
    pub max_age: Duration,
    /// The most the artifacts may take together, removing the least recently used
    /// first; default 256 MiB (an artifact is about 4 MiB: dozens of versions).
    pub max_bytes: u64,
}

impl Default for EvictionPolicy {
    fn default() -> Self {
        EvictionPolicy { max_age: Duration::from_secs(30 * 24 * 3600), max_bytes: 256 << 20 }
    }
}

/// What one eviction pass removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Evicted {
    /// The artifacts removed (with their digests), oldest use first.
    pub artifacts: Vec<PathBuf>,
    /// Their size.
    pub bytes: u64,
    /// What the artifacts left take.
    pub kept_bytes: u64,
}

impl ArtifactCache {
    /// A cache in `dir` (created when first written), evicting by the default policy.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ArtifactCache { dir: dir.into(), policy: EvictionPolicy::default() }
    }

    /// The same cache evicting by `policy`.
    pub fn with_policy(mut self, policy: EvictionPolicy) -> Self {
        self.policy = policy;
        self
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

    /// The compiled form of `bytes` for `engine`: from the cache when a matching,
    /// intact artifact is there, else compiled and stored. A cache that cannot be used
    /// (unsafe directory, unreadable, damaged) only costs a compile.
    pub fn load_or_compile(&self, engine: &Engine, bytes: &[u8]) -> wasmtime::Result<(Component, CacheOutcome)> {
        if let Err(why) = self.ensure_private_dir() {
            tracing::warn!("not using the compiled-artifact cache {}: {why}", self.dir.display());
            return Ok((Component::new(engine, bytes)?, CacheOutcome::Compiled { stored: false }));
        }
        let path = self.dir.join(format!("{}.cwasm", cache_key(engine, bytes)));
        match self.read_verified(&path) {
            Ok(Some(artifact)) => {
                // SAFETY: `Component::deserialize` trusts its input to be an artifact this
                // engine produced. This one is named by the SHA-256 of the component and
                // the engine's compatibility hash, sits in a directory only this user can
                // write (nor any directory above it), and matches the digest `store`
                // recorded, in a private directory of its own, when it compiled it;
                // wasmtime also checks the engine configuration recorded inside.
                match unsafe { Component::deserialize(engine, &artifact) } {
                    Ok(component) => {
                        self.used(&path);
                        return Ok((component, CacheOutcome::Hit));
                    }
                    Err(e) => tracing::warn!("discarding unusable compiled artifact {}: {e:#}", path.display()),
                }
            }
            Ok(None) => {}
            Err(why) => tracing::warn!("discarding compiled artifact {}: {why}", path.display()),
        }
        let component = Component::new(engine, bytes)?;
        match component.serialize().map_err(std::io::Error::other).and_then(|artifact| self.store(&path, &artifact)) {
            Ok(()) => {
                in_use().insert(path.clone());
                if let Err(e) = self.evict() {
                    tracing::warn!("evicting from the compiled-artifact cache {}: {e}", self.dir.display());
                }
                Ok((component, CacheOutcome::Compiled { stored: true }))
            }
            Err(e) => {
                tracing::warn!("cannot store compiled artifact in {}: {e}", self.dir.display());
                Ok((component, CacheOutcome::Compiled { stored: false }))
            }
        }
    }

    /// Removes what the policy says should go (see the module doc) and digests whose
    /// artifact is gone. Only `<key>.cwasm` files of the cache directory and their
    /// digests are touched; a symbolic link there is removed, never followed.
    pub fn evict(&self) -> std::io::Result<Evicted> {
        let now = SystemTime::now();
        let mut artifacts = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            let path = entry.path();
            let is_artifact = path.extension().is_some_and(|ext| ext == "cwasm")
                && path.file_stem().and_then(|stem| stem.to_str()).is_some_and(is_key);
            if !is_artifact {
                continue;
            }
            let meta = fs::symlink_metadata(&path)?;
            // Last use: the digest's time; an artifact without one is never loaded.
            let used = fs::metadata(self.digest_path(&path)).and_then(|digest| digest.modified()).unwrap_or(UNIX_EPOCH);
            artifacts.push((used, meta.len(), path));
        }
        artifacts.sort();
        let in_use = in_use().clone();
        let mut total: u64 = artifacts.iter().map(|(_, size, _)| size).sum();
        let mut evicted = Evicted::default();
        for (used, size, path) in artifacts {
            let unused_for = now.duration_since(used).unwrap_or_default();
            let goes = unused_for > self.policy.max_age || total > self.policy.max_bytes;
            if !goes || in_use.contains(&path) {
                continue;
            }
            fs::remove_file(&path)?;
            remove_if_there(&self.digest_path(&path))?;
            total -= size;
            evicted.bytes += size;
            evicted.artifacts.push(path);
        }
        evicted.kept_bytes = total;
        for entry in fs::read_dir(self.digest_dir())? {
            let digest = entry?.path();
            let artifact =
                digest.file_name().and_then(|name| name.to_str()).and_then(|name| name.strip_suffix(".sha256"));
            if let Some(artifact) = artifact.filter(|name| name.ends_with(".cwasm"))
                && fs::symlink_metadata(self.dir.join(artifact)).is_err()
            {
                remove_if_there(&digest)?;
            }
        }
        if !evicted.artifacts.is_empty() {
            tracing::info!(
                "compiled-artifact cache {}: evicted {} artifacts ({} bytes), {} bytes kept",
                self.dir.display(),
                evicted.artifacts.len(),
                evicted.bytes,
                evicted.kept_bytes
            );
        }
        Ok(evicted)
    }

    /// Marks the artifact at `path` used now: this process keeps it, and its digest's
    /// time says when it was last used. A read-only cache only loses the date.
    fn used(&self, path: &Path) {
        in_use().insert(path.to_path_buf());
        let touched = fs::File::open(self.digest_path(path)).and_then(|digest| digest.set_modified(SystemTime::now()));
        if let Err(e) = touched {
            tracing::debug!("cannot record the use of {}: {e}", path.display());
        }
    }

    /// Creates the directory (owner-only) if needed and checks that nobody else can
    /// write to it, nor to any directory above it (a writer of a parent could swap the
    /// whole directory): an artifact is native code the agent will run. A parent owned
    /// by root and sticky (`/tmp`) is fine: others cannot rename what is ours in it.
    fn ensure_private_dir(&self) -> Result<(), CacheProblem> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            let create = |dir: &Path| {
                if !dir.exists() {
                    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(CacheProblem::Create)?;
                }
                Ok(())
            };
            // SAFETY: geteuid has no preconditions and cannot fail.
            let me = unsafe { libc::geteuid() };
            create(&self.dir)?;
            let dir = fs::canonicalize(&self.dir).map_err(CacheProblem::Read)?;
            for parent in dir.ancestors().skip(1) {
                safe_parent(parent, me)?;
            }
            private(&dir, me)?;
            create(&dir.join(DIGESTS))?;
            private(&dir.join(DIGESTS), me)?;
        }
        #[cfg(not(unix))]
        fs::create_dir_all(self.digest_dir()).map_err(CacheProblem::Create)?;
        Ok(())
    }

    /// Where digests are kept: a private directory of their own, which the writer of
    /// an artifact file cannot reach unless it is this user.
    fn digest_dir(&self) -> PathBuf {
        self.dir.join(DIGESTS)
    }

    /// Where an artifact's digest is kept.
    fn digest_path(&self, artifact: &Path) -> PathBuf {
        let name = artifact.file_name().and_then(|n| n.to_str()).unwrap_or("artifact");
        self.digest_dir().join(format!("{name}.sha256"))
    }

    /// The artifact at `path` if it is there, a regular file of this user that
    /// nobody else may write, and matches the digest recorded when it was compiled.
    fn read_verified(&self, path: &Path) -> Result<Option<Vec<u8>>, CacheProblem> {
        match fs::symlink_metadata(path) {
            Ok(meta) => {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::MetadataExt;
                    // SAFETY: geteuid has no preconditions and cannot fail.
                    let me = unsafe { libc::geteuid() };
                    if !meta.file_type().is_file() || meta.uid() != me || meta.mode() & 0o022 != 0 {
                        return Err(CacheProblem::Untrusted);
                    }
                }
                #[cfg(not(unix))]
                if !meta.file_type().is_file() {
                    return Err(CacheProblem::Untrusted);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(CacheProblem::Read(e)),
        }
        let artifact = fs::read(path).map_err(CacheProblem::Read)?;
        let recorded = fs::read_to_string(self.digest_path(path)).map_err(CacheProblem::Digest)?;
        if recorded.trim() != hex(&Sha256::digest(&artifact)) {
            return Err(CacheProblem::Mismatch);
        }
        Ok(Some(artifact))
    }

    /// Writes the artifact and then its digest, each atomically (temporary file, then
    /// rename), so a reader never sees a half-written file and an artifact without its
    /// digest is never used.
    fn store(&self, path: &Path, artifact: &[u8]) -> std::io::Result<()> {
        write_atomically(path, artifact)?;
        write_atomically(&self.digest_path(path), hex(&Sha256::digest(artifact)).as_bytes())
    }
}

/// The subdirectory of the cache that holds the digests.
const DIGESTS: &str = "digests";

/// The artifacts this process stored or loaded, which its evictions leave alone: a
/// process-wide set, as several runtimes may share one cache directory.
fn in_use() -> MutexGuard<'static, BTreeSet<PathBuf>> {
    static IN_USE: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    // Paths are only ever inserted whole: a panic elsewhere leaves the set usable.
    IN_USE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A cache key: the 64 hex digits of a SHA-256.
fn is_key(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

fn remove_if_there(path: &Path) -> std::io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// A directory this user owns and nobody else may write.
#[cfg(unix)]
fn private(dir: &Path, me: u32) -> Result<(), CacheProblem> {
    use std::os::unix::fs::MetadataExt;
    let meta = fs::symlink_metadata(dir).map_err(CacheProblem::Read)?;
    if !meta.file_type().is_dir() {
        return Err(CacheProblem::Untrusted);
    }
    if meta.uid() != me {
        return Err(CacheProblem::NotOwned { path: dir.to_path_buf(), owner: meta.uid(), me });
    }
    if meta.mode() & 0o022 != 0 {
        return Err(CacheProblem::Writable { path: dir.to_path_buf(), mode: meta.mode() & 0o7777 });
    }
    Ok(())
}

/// A directory above the cache: owned by this user or root, and writable by nobody
/// else unless sticky.
#[cfg(unix)]
fn safe_parent(dir: &Path, me: u32) -> Result<(), CacheProblem> {
    use std::os::unix::fs::MetadataExt;
    let meta = fs::metadata(dir).map_err(CacheProblem::Read)?;
    if meta.uid() != me && meta.uid() != 0 {
        return Err(CacheProblem::NotOwned { path: dir.to_path_buf(), owner: meta.uid(), me });
    }
    let sticky = meta.mode() & 0o1000 != 0;
    if meta.mode() & 0o022 != 0 && !sticky {
        return Err(CacheProblem::Writable { path: dir.to_path_buf(), mode: meta.mode() & 0o7777 });
    }
    Ok(())
}

/// Why the cache (or one artifact in it) is not used; logged, never fatal: it only
/// costs a compile.
#[derive(Debug, thiserror::Error)]
enum CacheProblem {
    /// The directory could not be created.
    #[error("creating it: {0}")]
    Create(#[source] std::io::Error),
    /// The directory or the artifact could not be read.
    #[error("reading it: {0}")]
    Read(#[source] std::io::Error),
    /// Another user owns the directory or one above it.
    #[error("{} is owned by uid {owner}, not by this user ({me})", .path.display())]
    NotOwned {
        /// Which directory.
        path: PathBuf,
        /// The directory's owner.
        owner: u32,
        /// This process's effective user.
        me: u32,
    },
    /// Others may write into the directory or one above it.
    #[error("{} is writable by others (mode {mode:o})", .path.display())]
    Writable {
        /// Which directory.
        path: PathBuf,
        /// Its mode.
        mode: u32,
    },
    /// The artifact (or the directory) is not a plain file (directory) of this user
    /// that only it may write.
    #[error("not a file of this user that only it may write")]
    Untrusted,
    /// The digest recorded beside the artifact could not be read.
    #[error("reading its digest: {0}")]
    Digest(#[source] std::io::Error),
    /// The artifact is not what was compiled.
    #[error("it does not match the digest recorded when it was compiled")]
    Mismatch,
}

/// Whether the cache had the artifact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded from the cache without compiling.
    Hit,
    /// Compiled now.
    Compiled {
        /// Whether the cache now holds it.
        stored: bool,
    },
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

fn write_atomically(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("artifact");
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&tmp)?;
    file.write_all(content)?;
    file.sync_all()?;
    fs::rename(&tmp, path)
}
