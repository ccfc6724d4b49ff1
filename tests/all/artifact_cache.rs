//! The compiled-artifact cache: a second start maps the artifact instead of compiling,
//! a damaged artifact costs a compile, not a failure, and artifacts are evicted by age
//! and size, least recently used first, never one this process uses.

use podstatus_plugins::PODSTATUS_V1;
use podstatus_runtime::{ArtifactCache, EvictionPolicy};
use podstatus_runtime::{CacheOutcome, cache_key};
use podstatus_runtime::{PluginRuntime, RuntimeConfig};

fn fresh_dir(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A fresh cache in `name` with `PODSTATUS_V1` compiled into it: the config that uses
/// the cache, and the artifact's path.
fn cache_holding_v1(name: &str) -> (RuntimeConfig, std::path::PathBuf) {
    let dir = fresh_dir(name);
    let config = RuntimeConfig { cache_dir: Some(dir.clone()), ..RuntimeConfig::default() };
    let runtime = PluginRuntime::new(&config).unwrap();
    runtime.load(PODSTATUS_V1).unwrap();
    let artifact = dir.join(format!("{}.cwasm", cache_key(runtime.engine(), PODSTATUS_V1)));
    (config, artifact)
}

/// What loading `PODSTATUS_V1` in a new runtime with `config` did with the cache.
fn load_outcome(config: &RuntimeConfig) -> CacheOutcome {
    PluginRuntime::new(config).unwrap().load(PODSTATUS_V1).unwrap().cache_outcome()
}

#[test]
fn a_second_start_does_not_recompile() {
    let dir = fresh_dir("cache-second-start");
    let config = RuntimeConfig { cache_dir: Some(dir.clone()), ..RuntimeConfig::default() };
    let first = PluginRuntime::new(&config).unwrap().load(PODSTATUS_V1).unwrap();
    assert_eq!(first.cache_outcome(), CacheOutcome::Compiled { stored: true });
    let runtime = PluginRuntime::new(&config).unwrap();
    let second = runtime.load(PODSTATUS_V1).unwrap();
    assert_eq!(second.cache_outcome(), CacheOutcome::Hit);
    let artifact = dir.join(format!("{}.cwasm", cache_key(runtime.engine(), PODSTATUS_V1)));
    assert!(artifact.exists(), "artifact named by the key");
}

#[test]
fn a_damaged_artifact_is_replaced() {
    let (config, artifact) = cache_holding_v1("cache-damaged");
    std::fs::write(&artifact, b"garbage").unwrap();
    assert_eq!(load_outcome(&config), CacheOutcome::Compiled { stored: true });
    assert_eq!(load_outcome(&config), CacheOutcome::Hit);
}

#[test]
fn the_key_depends_on_the_bytes() {
    let runtime = PluginRuntime::new(&RuntimeConfig::default()).unwrap();
    let mut other = PODSTATUS_V1.to_vec();
    other.push(0);
    assert_ne!(cache_key(runtime.engine(), PODSTATUS_V1), cache_key(runtime.engine(), &other));
}

#[test]
fn a_tampered_artifact_is_not_loaded() {
    let (config, artifact) = cache_holding_v1("cache-tampered");
    // Same size, one byte changed: only the recorded digest can tell.
    let mut bytes = std::fs::read(&artifact).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&artifact, &bytes).unwrap();
    assert_eq!(load_outcome(&config), CacheOutcome::Compiled { stored: true });
    assert_ne!(std::fs::read(&artifact).unwrap(), bytes, "the artifact was replaced");
}

#[cfg(unix)]
#[test]
fn the_cache_directory_is_private_and_a_shared_one_is_refused() {
    use std::os::unix::fs::PermissionsExt;

    let dir = fresh_dir("cache-private").join("nested");
    let config = RuntimeConfig { cache_dir: Some(dir.clone()), ..RuntimeConfig::default() };
    PluginRuntime::new(&config).unwrap().load(PODSTATUS_V1).unwrap();
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);

    let shared = fresh_dir("cache-shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let config = RuntimeConfig { cache_dir: Some(shared.clone()), ..RuntimeConfig::default() };
    let image = PluginRuntime::new(&config).unwrap().load(PODSTATUS_V1).unwrap();
    assert_eq!(image.cache_outcome(), CacheOutcome::Compiled { stored: false }, "nothing stored in a shared directory");
    assert_eq!(std::fs::read_dir(&shared).unwrap().count(), 0);
}

#[cfg(unix)]
#[test]
fn a_cache_under_a_directory_others_may_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;

    // The cache itself is private, but whoever writes its parent could swap it.
    let parent = fresh_dir("cache-open-parent");
    std::fs::create_dir_all(&parent).unwrap();
    std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o777)).unwrap();
    let dir = parent.join("cache");
    let config = RuntimeConfig { cache_dir: Some(dir.clone()), ..RuntimeConfig::default() };
    let image = PluginRuntime::new(&config).unwrap().load(PODSTATUS_V1).unwrap();
    assert_eq!(image.cache_outcome(), CacheOutcome::Compiled { stored: false });
    assert!(std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0) <= 1, "no artifact stored");

    // Sticky (as /tmp): others cannot rename what is ours, so it is used.
    std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let image = PluginRuntime::new(&config).unwrap().load(PODSTATUS_V1).unwrap();
    assert_eq!(image.cache_outcome(), CacheOutcome::Compiled { stored: true });
}

#[cfg(unix)]
#[test]
fn digests_live_apart_and_an_artifact_of_another_user_is_not_loaded() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    let (config, artifact) = cache_holding_v1("cache-digests");
    let dir = artifact.parent().unwrap();
    let name = artifact.file_name().unwrap().to_str().unwrap();
    let digest = dir.join("digests").join(format!("{name}.sha256"));
    assert!(digest.exists(), "the digest is in the private digests directory");
    assert!(!dir.join(format!("{name}.sha256")).exists(), "not beside the artifact");
    assert_eq!(std::fs::metadata(dir.join("digests")).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(&artifact).unwrap().mode() & 0o777, 0o600);

    // An artifact others may write is not mapped (even with the right digest).
    std::fs::set_permissions(&artifact, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert_eq!(load_outcome(&config), CacheOutcome::Compiled { stored: true });
    assert_eq!(load_outcome(&config), CacheOutcome::Hit);
}

const MIB: u64 = 1 << 20;
const DAY: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// A private cache directory (as the cache makes it) holding fake artifacts of 1 MiB,
/// each with its digest last used `days` ago; returns their paths.
#[cfg(unix)]
fn cache_with_fakes(dir: &std::path::Path, days_unused: &[u64]) -> Vec<std::path::PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir.join("digests")).unwrap();
    std::fs::DirBuilder::new().mode(0o700).create(dir).ok();
    days_unused
        .iter()
        .enumerate()
        .map(|(i, days)| {
            let artifact = dir.join(format!("{:064x}.cwasm", i + 1));
            std::fs::write(&artifact, vec![0u8; MIB as usize]).unwrap();
            let digest = digest_of(&artifact);
            std::fs::write(&digest, "0".repeat(64)).unwrap();
            set_last_use(&artifact, std::time::SystemTime::now() - DAY * *days as u32);
            artifact
        })
        .collect()
}

fn digest_of(artifact: &std::path::Path) -> std::path::PathBuf {
    let name = artifact.file_name().unwrap().to_str().unwrap();
    artifact.parent().unwrap().join("digests").join(format!("{name}.sha256"))
}

fn set_last_use(artifact: &std::path::Path, when: std::time::SystemTime) {
    std::fs::File::options().write(true).open(digest_of(artifact)).unwrap().set_modified(when).unwrap();
}

#[cfg(unix)]
#[test]
fn eviction_drops_the_unused_then_the_least_recently_used_down_to_the_cap() {
    let dir = fresh_dir("cache-evict-lru");
    let fakes = cache_with_fakes(&dir, &[40, 3, 2, 1]);
    let orphan = dir.join("digests").join(format!("{:064x}.cwasm.sha256", 99));
    std::fs::write(&orphan, "x").unwrap();
    let unrelated = dir.join("notes.txt");
    std::fs::write(&unrelated, "not an artifact").unwrap();

    let policy = EvictionPolicy { max_age: 30 * DAY, max_bytes: 2 * MIB + MIB / 2 };
    let evicted = ArtifactCache::new(&dir).with_policy(policy).evict().unwrap();
    // The 40-day-old one by age, then the oldest use until 2 MiB are left.
    assert_eq!(evicted.artifacts, [fakes[0].clone(), fakes[1].clone()]);
    assert_eq!((evicted.bytes, evicted.kept_bytes), (2 * MIB, 2 * MIB));
    for gone in &fakes[..2] {
        assert!(!gone.exists() && !digest_of(gone).exists(), "{} and its digest are gone", gone.display());
    }
    for kept in &fakes[2..] {
        assert!(kept.exists() && digest_of(kept).exists(), "{} is kept", kept.display());
    }
    assert!(!orphan.exists(), "a digest without its artifact goes");
    assert!(unrelated.exists(), "only artifacts are evicted");

    // Within the policy, nothing more goes.
    let again = ArtifactCache::new(&dir).with_policy(policy).evict().unwrap();
    assert!(again.artifacts.is_empty(), "{again:?}");
}

#[cfg(unix)]
#[test]
fn an_insert_evicts_but_never_what_this_process_uses() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    let dir = fresh_dir("cache-evict-insert");
    let fakes = cache_with_fakes(&dir, &[2, 1]);
    let engine = PluginRuntime::new(&RuntimeConfig::default()).unwrap().engine().clone();
    // A cap smaller than one artifact: everything goes but the one just compiled.
    let cache = ArtifactCache::new(&dir).with_policy(EvictionPolicy { max_bytes: 1, ..EvictionPolicy::default() });
    let (_, outcome) = cache.load_or_compile(&engine, PODSTATUS_V1).unwrap();
    assert_eq!(outcome, CacheOutcome::Compiled { stored: true });
    assert!(fakes.iter().all(|fake| !fake.exists()), "older artifacts evicted on insert");
    let artifact = dir.join(format!("{}.cwasm", cache_key(&engine, PODSTATUS_V1)));
    assert!(artifact.exists() && digest_of(&artifact).exists(), "the artifact in use is kept, past the cap");

    // A hit marks the artifact used: its digest's time moves to now.
    set_last_use(&artifact, std::time::SystemTime::now() - 40 * DAY);
    let (_, outcome) = cache.load_or_compile(&engine, PODSTATUS_V1).unwrap();
    assert_eq!(outcome, CacheOutcome::Hit);
    let used = std::fs::metadata(digest_of(&artifact)).unwrap().modified().unwrap();
    assert!(used.elapsed().unwrap_or_default() < DAY, "the hit was recorded");
    assert!(cache.evict().unwrap().artifacts.is_empty(), "in use, so kept");

    // The security checks still hold after evictions: owner-only directories, the
    // artifact private, its digest apart.
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(dir.join("digests")).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(&artifact).unwrap().mode() & 0o777, 0o600);
    assert!(!dir.join(format!("{}.sha256", artifact.file_name().unwrap().to_str().unwrap())).exists());
}
