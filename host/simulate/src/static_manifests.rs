//! The static pods of a run: manifests written to a folder of its own when the agent
//! was given none, and the wait for their mirror pods.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::config::{SimulateConfig, SimulateError};
use podstatus_backends::PodManager;

/// Waits until each static pod has its mirror pod (created by the agent, seen through
/// the watch), so static pods' statuses have somewhere to go from the start.
pub(crate) fn wait_for_mirrors(pod_manager: &PodManager, static_pods: usize, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        // Static UID -> mirror UID, "" while a static pod has none yet.
        let (static_to_mirror, _) = pod_manager.get_uid_translations();
        if static_to_mirror.len() >= static_pods && static_to_mirror.values().all(|mirror| !mirror.is_empty()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    tracing::warn!("static pods or their mirror pods did not all appear within {timeout:?}");
}

/// Writes `config.static_pods` manifests to a folder of the run's own, and points the
/// agent at it, when no folder was given; the folder goes when the guard drops.
pub(crate) fn write_static_pods(config: &mut SimulateConfig) -> Result<Option<TempDir>, SimulateError> {
    if config.agent.manifest_dir.is_some() || config.static_pods == 0 {
        return Ok(None);
    }
    // One folder per run: runs in one process (an embedder's, tests) must not share
    // it, or the first to finish removes the others' static pods.
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("podstatus-simulate-{}-{run}", std::process::id()));
    write_manifests(&dir, config.static_pods)
        .map_err(|source| SimulateError::Manifests { dir: dir.clone(), source })?;
    config.agent.manifest_dir = Some(dir.clone());
    Ok(Some(TempDir(dir)))
}

/// Static pod manifests, as a user would drop them into the kubelet's folder.
fn write_manifests(dir: &std::path::Path, count: usize) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for i in 0..count {
        let manifest = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": format!("static-{i}"), "namespace": "kube-system"},
            "spec": {
                "restartPolicy": "Always",
                "containers": [{"name": "app", "image": "registry.example/app:1.0"}]
            }
        });
        std::fs::write(dir.join(format!("static-{i}.json")), serde_json::to_vec_pretty(&manifest)?)?;
    }
    Ok(())
}

/// A folder removed when dropped.
pub(crate) struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
