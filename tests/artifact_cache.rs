//! The compiled-artifact cache: a second start maps the artifact instead of compiling,
//! and a damaged artifact costs a compile, not a failure.

use podstatus::components::PODSTATUS_V1;
use podstatus::plugin::cache::{CacheOutcome, cache_key};
use podstatus::plugin::{PluginRuntime, RuntimeConfig};

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
