//! The compiled-artifact cache: a second start maps the artifact instead of compiling,
//! and a damaged artifact costs a compile, not a failure.

use podstatus_runtime::PODSTATUS_V1;
use podstatus_runtime::{CacheOutcome, cache_key};
use podstatus_runtime::{PluginRuntime, RuntimeConfig};

fn fresh_dir(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
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
    let dir = fresh_dir("cache-damaged");
    let config = RuntimeConfig { cache_dir: Some(dir.clone()), ..RuntimeConfig::default() };
    let runtime = PluginRuntime::new(&config).unwrap();
    runtime.load(PODSTATUS_V1).unwrap();
    let artifact = dir.join(format!("{}.cwasm", cache_key(runtime.engine(), PODSTATUS_V1)));
    std::fs::write(&artifact, b"garbage").unwrap();
    let reloaded = PluginRuntime::new(&config).unwrap().load(PODSTATUS_V1).unwrap();
    assert_eq!(reloaded.cache_outcome(), CacheOutcome::Compiled { stored: true });
    assert_eq!(PluginRuntime::new(&config).unwrap().load(PODSTATUS_V1).unwrap().cache_outcome(), CacheOutcome::Hit);
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
    let dir = fresh_dir("cache-tampered");
    let config = RuntimeConfig { cache_dir: Some(dir.clone()), ..RuntimeConfig::default() };
    let runtime = PluginRuntime::new(&config).unwrap();
    runtime.load(PODSTATUS_V1).unwrap();
    let artifact = dir.join(format!("{}.cwasm", cache_key(runtime.engine(), PODSTATUS_V1)));
    // Same size, one byte changed: only the recorded digest can tell.
    let mut bytes = std::fs::read(&artifact).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&artifact, &bytes).unwrap();
    let reloaded = PluginRuntime::new(&config).unwrap().load(PODSTATUS_V1).unwrap();
    assert_eq!(reloaded.cache_outcome(), CacheOutcome::Compiled { stored: true });
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

    let dir = fresh_dir("cache-digests");
    let config = RuntimeConfig { cache_dir: Some(dir.clone()), ..RuntimeConfig::default() };
    let runtime = PluginRuntime::new(&config).unwrap();
    runtime.load(PODSTATUS_V1).unwrap();
    let name = format!("{}.cwasm", cache_key(runtime.engine(), PODSTATUS_V1));
    let digest = dir.join("digests").join(format!("{name}.sha256"));
    assert!(digest.exists(), "the digest is in the private digests directory");
    assert!(!dir.join(format!("{name}.sha256")).exists(), "not beside the artifact");
    assert_eq!(std::fs::metadata(dir.join("digests")).unwrap().permissions().mode() & 0o777, 0o700);
    let artifact = dir.join(&name);
    assert_eq!(std::fs::metadata(&artifact).unwrap().mode() & 0o777, 0o600);

    // An artifact others may write is not mapped (even with the right digest).
    std::fs::set_permissions(&artifact, std::fs::Permissions::from_mode(0o666)).unwrap();
    let reloaded = PluginRuntime::new(&config).unwrap().load(PODSTATUS_V1).unwrap();
    assert_eq!(reloaded.cache_outcome(), CacheOutcome::Compiled { stored: true });
    assert_eq!(PluginRuntime::new(&config).unwrap().load(PODSTATUS_V1).unwrap().cache_outcome(), CacheOutcome::Hit);
}
