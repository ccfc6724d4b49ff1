//! Static pods from a manifest folder, like the kubelet's `--pod-manifest-path`, with
//! their mirror pods kept in the API server, so that the status manager's static/mirror
//! handling runs against real objects.
//!
//! Every `*.yaml`, `*.yml` and `*.json` file (hidden files skipped) holds one Pod. As the
//! kubelet does (`pkg/kubelet/config/common.go`), the pod is named `NAME-NODE` (node
//! name lowercased), defaults to namespace `default`, is bound to the node, and gets a
//! UID derived from what it came from, repeated in `kubernetes.io/config.hash`, with
//! `kubernetes.io/config.source: file` and `kubernetes.io/config.seen`. The kubelet
//! hashes with MD5 over the node, the file path and the pod object; here SHA-256 over the
//! node, the file's name and its bytes, cut to 32 hex digits: the same file on the same
//! node always gives the same UID, and any change to it a new one. Unlike the kubelet, a
//! UID written in the manifest is not kept (a changed file must be a new pod).
//!
//! The mirror pod is a copy of the static pod with `kubernetes.io/config.mirror` set to
//! the hash, no status and no UID (the API server assigns one), created through the API
//! server when absent and recreated when its hash is stale. It reaches the pod manager
//! through the [`super::PodWatch`], like any pod bound to the node.
//!
//! The folder is scanned at start, every [`POLL_INTERVAL`] (by modification time and
//! size) and on [`StaticPods::rescan`]. A removed file removes its static pod and deletes
//! its mirror; a changed file replaces the static pod (new UID) and its mirror. A bad
//! manifest is logged with its file name once per change and reported by every scan; it
//! never stops the others. Mirror pods that could not be written are retried each scan.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use sha2::{Digest, Sha256};

use podstatus_backends::PodManager;
use podstatus_backends::pod_identity::{API_SOURCE, CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION, identity};

/// The kubelet's annotation holding a static pod's hash (its UID); the mirror pod's
/// `kubernetes.io/config.mirror` repeats it.
pub const CONFIG_HASH_ANNOTATION: &str = "kubernetes.io/config.hash";
/// When the kubelet first saw the pod (RFC 3339).
pub const CONFIG_SEEN_ANNOTATION: &str = "kubernetes.io/config.seen";
/// The config source of static pods read from files.
pub const FILE_SOURCE: &str = "file";
/// How often the folder is looked at for changes.
pub const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// Why static pods could not start or scan.
#[derive(Debug, thiserror::Error)]
pub enum StaticPodsError {
    /// The manifest folder could not be listed.
    #[error("cannot read the manifest folder {dir}")]
    ReadDir {
        /// The folder.
        dir: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The runtime the scans run on has shut down.
    #[error("the runtime of the static pod source has stopped")]
    Stopped,
}

/// A manifest that gave no pod. Kept as messages so that a report can be cloned and
/// compared.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// The file could not be read.
    #[error("{}: cannot read: {message}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        message: String,
    },
    /// The file is not a Pod in YAML or JSON.
    #[error("{}: not a pod manifest: {message}", .path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// The pod lacks something a static pod needs.
    #[error("{}: invalid pod: {message}", .path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is missing or wrong.
        message: String,
    },
    /// Another file already defines a pod of this namespace and name (the first file,
    /// by name, wins).
    #[error("{}: pod {namespace}/{name} is already defined by {}", .path.display(), .first.display())]
    Duplicate {
        /// The file.
        path: PathBuf,
        /// The pod's namespace.
        namespace: String,
        /// The pod's name.
        name: String,
        /// The file that defines it.
        first: PathBuf,
    },
}

/// A mirror pod the API server would not create or delete; retried on the next scan.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("mirror pod {namespace}/{name}: {message}")]
pub struct MirrorError {
    /// The mirror pod's namespace.
    pub namespace: String,
    /// The mirror pod's name.
    pub name: String,
    /// What went wrong.
    pub message: String,
}

/// What one scan found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// (file, static pod UID) of every static pod now held, sorted by file.
    pub pods: Vec<(PathBuf, String)>,
    /// Manifests that gave no pod.
    pub errors: Vec<ManifestError>,
    /// Mirror pods not yet right in the API server.
    pub mirror_errors: Vec<MirrorError>,
}

/// A running static pod source. Stops polling when dropped; the static pods and mirror
/// pods stay.
pub struct StaticPods {
    source: Arc<Source>,
    runtime: tokio::runtime::Handle,
    poller: tokio::task::JoinHandle<()>,
}

impl StaticPods {
    /// Reads `dir` once (the static pods are in `pod_manager` and their mirrors written
    /// when this returns), then polls it on `runtime`. Blocks the calling thread, which
    /// must not be one of `runtime`'s workers. An unreadable folder is an error; bad
    /// manifests in it are not (see [`StaticPods::report`]).
    pub fn start(
        dir: &Path,
        node_name: &str,
        client: kube::Client,
        pod_manager: Arc<PodManager>,
        runtime: &tokio::runtime::Handle,
    ) -> Result<StaticPods, StaticPodsError> {
        let source = Arc::new(Source {
            dir: dir.to_path_buf(),
            node: node_name.to_owned(),
            client,
            pod_manager,
            state: tokio::sync::Mutex::new(State::default()),
            report: std::sync::Mutex::new(ScanReport::default()),
        });
        run_blocking(runtime, {
            let source = Arc::clone(&source);
            async move { source.scan().await }
        })??;
        let poller = runtime.spawn({
            let source = Arc::clone(&source);
            async move {
                loop {
                    tokio::time::sleep(POLL_INTERVAL).await;
                    if let Err(error) = source.scan().await {
                        tracing::warn!(%error, "static pods: scan failed; keeping the pods as they were");
                    }
                }
            }
        });
        Ok(StaticPods { source, runtime: runtime.clone(), poller })
    }

    /// Scans the folder now and returns what it found. Blocks the calling thread (not a
    /// runtime worker) until the scan, mirror pod writes included, is done.
    pub fn rescan(&self) -> Result<ScanReport, StaticPodsError> {
        let source = Arc::clone(&self.source);
        run_blocking(&self.runtime, async move { source.scan().await })?
    }

    /// What the latest scan found (without waiting for a scan in progress; callable
    /// from anywhere).
    pub fn report(&self) -> ScanReport {
        self.source.report.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Stops polling (a [`StaticPods::rescan`] still works).
    pub fn stop(&self) {
        self.poller.abort();
    }
}

impl Drop for StaticPods {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `future` on `runtime` and waits for it from a plain thread.
fn run_blocking<T: Send + 'static>(
    runtime: &tokio::runtime::Handle,
    future: impl Future<Output = T> + Send + 'static,
) -> Result<T, StaticPodsError> {
    let (sender, receiver) = std::sync::mpsc::sync_channel(1);
    runtime.spawn(async move {
        let _ = sender.send(future.await);
    });
    receiver.recv().map_err(|_| StaticPodsError::Stopped)
}

struct Source {
    dir: PathBuf,
    node: String,
    client: kube::Client,
    pod_manager: Arc<PodManager>,
    /// Held for a whole scan: scans never overlap.
    state: tokio::sync::Mutex<State>,
    /// The latest scan's report, readable without waiting for a scan in progress.
    report: std::sync::Mutex<ScanReport>,
}

#[derive(Default)]
struct State {
    /// Every manifest file seen, by path.
    files: BTreeMap<PathBuf, Manifest>,
    /// The static pods in the pod manager, by UID.
    held: BTreeMap<String, Arc<Pod>>,
    /// (namespace, name) of mirror pods to delete, kept until the deletion succeeds.
    stale_mirrors: BTreeSet<(String, String)>,
    /// What the last scan could not do with each mirror pod, said once as a warning
    /// (then each scan at debug until it changes or is done).
    mirror_errors: BTreeMap<(String, String), String>,
}

/// A file as last read.
struct Manifest {
    /// (modification time, length): a change in either means read it again.
    stamp: (Option<SystemTime>, u64),
    pod: Result<Arc<Pod>, ManifestError>,
}

impl Source {
    async fn scan(&self) -> Result<ScanReport, StaticPodsError> {
        let mut state = self.state.lock().await;
        self.read_folder(&mut state)?;
        let (wanted, mut errors) = wanted_pods(&state.files);

        // Static pods: drop the ones no file wants (their mirror goes too, unless the
        // same name is still wanted: then the mirror is replaced below), add the new.
        let wanted_names: BTreeSet<(String, String)> = wanted.values().map(|(_, pod)| owned_identity(pod)).collect();
        let gone: Vec<String> = state.held.keys().filter(|uid| !wanted.contains_key(*uid)).cloned().collect();
        for uid in gone {
            if let Some(pod) = state.held.remove(&uid) {
                self.pod_manager.remove_pod(&uid);
                let name = owned_identity(&pod);
                if !wanted_names.contains(&name) {
                    state.stale_mirrors.insert(name);
                }
            }
        }
        for (uid, (_, pod)) in &wanted {
            if !state.held.contains_key(uid) {
                self.pod_manager.add_pod(Pod::clone(pod));
                state.held.insert(uid.clone(), Arc::clone(pod));
            }
        }

        let mut mirror_errors = Vec::new();
        let stale: Vec<_> = state.stale_mirrors.iter().cloned().collect();
        for (namespace, name) in stale {
            match self.delete_mirror(&namespace, &name, None).await {
                Ok(()) => {
                    state.stale_mirrors.remove(&(namespace, name));
                }
                Err(message) => mirror_errors.push(MirrorError { namespace, name, message }),
            }
        }
        for (_, pod) in wanted.values() {
            if let Err(message) = self.ensure_mirror(pod).await {
                let (namespace, name) = owned_identity(pod);
                mirror_errors.push(MirrorError { namespace, name, message });
            }
        }
        // A mirror pod the API server keeps refusing is a problem an operator must see
        // (a real server refused every one for lack of an owner): said once as a warning
        // per new reason, not at every scan.
        let mut said = std::mem::take(&mut state.mirror_errors);
        for error in &mirror_errors {
            let key = (error.namespace.clone(), error.name.clone());
            if said.get(&key) == Some(&error.message) {
                tracing::debug!(%error, "static pods: mirror pod not in place yet; retrying next scan");
            } else {
                tracing::warn!(%error, "static pods: mirror pod not in place; retrying every scan");
            }
            said.remove(&key);
            state.mirror_errors.insert(key, error.message.clone());
        }
        for (namespace, name) in said.keys() {
            tracing::info!(%namespace, %name, "static pods: mirror pod in place");
        }

        errors.sort_by_key(ManifestError::to_string);
        let mut pods: Vec<(PathBuf, String)> =
            wanted.iter().map(|(uid, (path, _))| (path.clone(), uid.clone())).collect();
        pods.sort();
        let report = ScanReport { pods, errors, mirror_errors };
        *self.report.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = report.clone();
        Ok(report)
    }

    /// Reads new and changed manifests, forgets removed ones.
    fn read_folder(&self, state: &mut State) -> Result<(), StaticPodsError> {
        let read_dir_error = |source| StaticPodsError::ReadDir { dir: self.dir.clone(), source };
        let mut present = BTreeSet::new();
        for entry in std::fs::read_dir(&self.dir).map_err(read_dir_error)? {
            let entry = entry.map_err(read_dir_error)?;
            let path = entry.path();
            if !is_manifest_name(&path) {
                continue;
            }
            // Follows symbolic links, as the kubelet does; a dangling one is skipped.
            let Ok(metadata) = std::fs::metadata(&path) else { continue };
            if !metadata.is_file() {
                continue;
            }
            present.insert(path.clone());
            let stamp = (metadata.modified().ok(), metadata.len());
            if state.files.get(&path).is_some_and(|known| known.stamp == stamp) {
                continue;
            }
            let pod = load(&path, &self.node).map(Arc::new);
            // An error, as the kubelet logs it ("Could not process manifest file"): a
            // file an operator wrote that gives no pod must be seen at every verbosity
            // (once per change of the file).
            if let Err(error) = &pod {
                tracing::error!("static pods: skipping a bad manifest: {error}");
            }
            state.files.insert(path, Manifest { stamp, pod });
        }
        state.files.retain(|path, _| present.contains(path));
        Ok(())
    }

    /// Makes the API server hold a mirror pod of `pod` with its hash.
    async fn ensure_mirror(&self, pod: &Pod) -> Result<(), String> {
        let hash = annotation(pod, CONFIG_HASH_ANNOTATION).unwrap_or_default();
        // The watch usually has the mirror already: no API call needed.
        if self.pod_manager.get_mirror_pod_by_pod(pod).and_then(|mirror| mirror.metadata().ok()).is_some_and(|mirror| {
            mirror.annotations.as_ref().and_then(|a| a.get(CONFIG_MIRROR_ANNOTATION)).map(String::as_str) == Some(hash)
        }) {
            return Ok(());
        }
        let (namespace, name) = identity(pod);
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        match get_as_node(&api, name).await? {
            Some(existing) if annotation(&existing, CONFIG_MIRROR_ANNOTATION) == Some(hash) => return Ok(()),
            Some(existing) if annotation(&existing, CONFIG_MIRROR_ANNOTATION).is_none() => {
                return Err("the name is taken by a pod that is not a mirror pod; it is left alone".to_owned());
            }
            Some(existing) => {
                if existing.metadata.deletion_timestamp.is_some() {
                    return Err("an outdated mirror pod is still being deleted".to_owned());
                }
                self.delete_mirror(namespace, name, existing.metadata.uid.clone()).await?;
            }
            None => {}
        }
        let owner = self.node_owner().await?;
        api.create(&PostParams::default(), &mirror_of(pod, hash, owner)).await.map_err(|e| format!("create: {e}"))?;
        Ok(())
    }

    /// The node as a mirror pod's owner, as the kubelet sets it: kube-apiserver's
    /// `NodeRestriction` lets a node create a mirror pod only with an owner reference to
    /// itself (a real server refused ours without one). `None` when the Node is not
    /// registered (an API server without it takes the mirror all the same).
    async fn node_owner(&self) -> Result<Option<OwnerReference>, String> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let node = match nodes.get_opt(&self.node).await {
            Ok(node) => node,
            Err(kube::Error::Api(status)) if status.code == 403 => None,
            Err(error) => return Err(format!("get node: {error}")),
        };
        Ok(node.and_then(|node| node.metadata.uid).map(|uid| OwnerReference {
            api_version: "v1".into(),
            kind: "Node".into(),
            name: self.node.clone(),
            uid,
            controller: Some(true),
            block_owner_deletion: None,
        }))
    }

    /// Deletes the mirror pod `namespace/name` at once (grace period 0, as the kubelet
    /// does), only if it is a mirror pod, with a UID precondition. Absent is done.
    async fn delete_mirror(&self, namespace: &str, name: &str, uid: Option<String>) -> Result<(), String> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let uid = match uid {
            Some(uid) => uid,
            None => match get_as_node(&api, name).await? {
                Some(existing) if annotation(&existing, CONFIG_MIRROR_ANNOTATION).is_some() => {
                    existing.metadata.uid.unwrap_or_default()
                }
                // Gone, or a pod that is not a mirror took the name: nothing of ours.
                _ => return Ok(()),
            },
        };
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions { uid: Some(uid), resource_version: None }),
            ..DeleteParams::default()
        };
        match api.delete(name, &params).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
            Err(error) => Err(format!("delete: {error}")),
        }
    }
}

/// The pod `name`, `None` when it is absent. A node's credential may read only the
/// pods bound to it: kube-apiserver's Node authorizer answers 403 for any other name,
/// absent or not (a real server refused every mirror pod's first read so, and no mirror
/// pod was ever created), so 403 counts as absent too: a create then says whether the
/// name is free.
async fn get_as_node(api: &Api<Pod>, name: &str) -> Result<Option<Pod>, String> {
    match api.get_opt(name).await {
        Ok(pod) => Ok(pod),
        Err(kube::Error::Api(status)) if status.code == 403 => Ok(None),
        Err(error) => Err(format!("get: {error}")),
    }
}

/// The pods the files define, by UID, with the file of each; duplicates (same
/// namespace and name in a later file) and bad manifests as errors.
#[allow(clippy::type_complexity)]
fn wanted_pods(files: &BTreeMap<PathBuf, Manifest>) -> (BTreeMap<String, (PathBuf, Arc<Pod>)>, Vec<ManifestError>) {
    let mut wanted = BTreeMap::new();
    let mut first_by_name: BTreeMap<(String, String), PathBuf> = BTreeMap::new();
    let mut errors = Vec::new();
    for (path, manifest) in files {
        let pod = match &manifest.pod {
            Ok(pod) => pod,
            Err(error) => {
                errors.push(error.clone());
                continue;
            }
        };
        let (namespace, name) = owned_identity(pod);
        if let Some(first) = first_by_name.get(&(namespace.clone(), name.clone())) {
            errors.push(ManifestError::Duplicate { path: path.clone(), namespace, name, first: first.clone() });
            continue;
        }
        first_by_name.insert((namespace, name), path.clone());
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        wanted.insert(uid, (path.clone(), Arc::clone(pod)));
    }
    (wanted, errors)
}

/// Whether the kubelet would read this file: not hidden, and YAML or JSON by extension.
fn is_manifest_name(path: &Path) -> bool {
    let Some(file_name) = path.file_name().and_then(|name| name.to_str()) else { return false };
    !file_name.starts_with('.')
        && path.extension().and_then(|ext| ext.to_str()).is_some_and(|ext| matches!(ext, "yaml" | "yml" | "json"))
}

/// The largest manifest read: 1.5 MiB, what etcd holds of one object by default (its
/// `--max-request-bytes`), so the most a mirror pod can be. A larger file (a wrong one,
/// `/dev/zero` linked in) is refused before it is read whole.
pub const MAX_MANIFEST_BYTES: u64 = 3 << 19;

/// Reads one manifest into the static pod it defines for `node`.
pub fn load(path: &Path, node: &str) -> Result<Pod, ManifestError> {
    use std::io::Read;
    let read_error = |message: String| ManifestError::Read { path: path.to_path_buf(), message };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_MANIFEST_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| read_error(e.to_string()))?;
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(read_error(format!("larger than {MAX_MANIFEST_BYTES} bytes, the most etcd holds of an object")));
    }
    // A parser's message may quote the file over several lines: its first says it.
    let parse_error = |message: String| ManifestError::Parse {
        path: path.to_path_buf(),
        message: message.lines().next().unwrap_or_default().to_owned(),
    };
    let pod: Pod = if path.extension().is_some_and(|ext| ext == "json") {
        serde_json::from_slice(&bytes).map_err(|e| parse_error(e.to_string()))?
    } else {
        let text = std::str::from_utf8(&bytes).map_err(|e| parse_error(e.to_string()))?;
        serde_saphyr::from_str(text).map_err(|e| parse_error(e.to_string()))?
    };
    let file_name = path.file_name().map(|name| name.to_string_lossy()).unwrap_or_default();
    static_pod(pod, node, &file_name, &bytes)
        .map_err(|message| ManifestError::Invalid { path: path.to_path_buf(), message })
}

/// Applies the kubelet's defaults for a static pod read from `file_name` with content
/// `bytes` (see the module's doc).
fn static_pod(mut pod: Pod, node: &str, file_name: &str, bytes: &[u8]) -> Result<Pod, String> {
    let name = pod.metadata.name.as_deref().filter(|name| !name.is_empty()).ok_or("metadata.name: Required value")?;
    let spec = pod.spec.as_mut().ok_or("spec: Required value")?;
    if spec.containers.is_empty() {
        return Err("spec.containers: Required value".to_owned());
    }
    spec.node_name = Some(node.to_owned());
    pod.metadata.name = Some(format!("{name}-{}", node.to_lowercase()));
    if pod.metadata.namespace.as_deref().is_none_or(str::is_empty) {
        pod.metadata.namespace = Some("default".to_owned());
    }
    let uid = static_uid(node, file_name, bytes);
    pod.metadata.uid = Some(uid.clone());
    pod.metadata.resource_version = None;
    pod.status = None;
    let annotations = pod.metadata.annotations.get_or_insert_with(Default::default);
    annotations.insert(CONFIG_SOURCE_ANNOTATION.to_owned(), FILE_SOURCE.to_owned());
    annotations.insert(CONFIG_HASH_ANNOTATION.to_owned(), uid);
    annotations.insert(CONFIG_SEEN_ANNOTATION.to_owned(), jiff::Timestamp::now().to_string());
    annotations.remove(CONFIG_MIRROR_ANNOTATION);
    Ok(pod)
}

/// SHA-256 of the node, the file's name and its bytes, as 32 hex digits.
fn static_uid(node: &str, file_name: &str, bytes: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(format!("host:{node}\0file:{file_name}\0").as_bytes());
    hasher.update(bytes);
    hasher.finalize()[..16].iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The mirror pod of `pod`: the same object for the API server, marked as a mirror.
fn mirror_of(pod: &Pod, hash: &str, owner: Option<OwnerReference>) -> Pod {
    let mut mirror = pod.clone();
    mirror.metadata.uid = None;
    mirror.metadata.owner_references = owner.map(|owner| vec![owner]);
    mirror.metadata.resource_version = None;
    mirror.status = None;
    let annotations = mirror.metadata.annotations.get_or_insert_with(Default::default);
    annotations.insert(CONFIG_MIRROR_ANNOTATION.to_owned(), hash.to_owned());
    // The static pod's source stays: the pod identity helpers count a pod with the
    // mirror annotation as a mirror whatever its source.
    debug_assert_ne!(annotations.get(CONFIG_SOURCE_ANNOTATION).map(String::as_str), Some(API_SOURCE));
    mirror
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata.annotations.as_ref()?.get(key).map(String::as_str)
}

fn owned_identity(pod: &Pod) -> (String, String) {
    let (namespace, name) = identity(pod);
    (namespace.to_owned(), name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write manifest");
        path
    }

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("podstatus-static-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    const YAML: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\n  namespace: kube-system\n  annotations:\n    team: infra\nspec:\n  containers:\n  - name: etcd\n    image: etcd:3.5\n";

    #[test]
    fn yaml_manifest_becomes_a_static_pod_of_the_node() {
        let dir = temp_dir("yaml");
        let path = write(&dir, "etcd.yaml", YAML);
        let pod = load(&path, "Node-1").expect("a pod");
        assert_eq!(pod.metadata.name.as_deref(), Some("etcd-node-1"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some("kube-system"));
        assert_eq!(pod.spec.as_ref().and_then(|s| s.node_name.as_deref()), Some("Node-1"));
        let uid = pod.metadata.uid.clone().expect("uid");
        assert_eq!(uid.len(), 32);
        assert_eq!(annotation(&pod, CONFIG_HASH_ANNOTATION), Some(uid.as_str()));
        assert_eq!(annotation(&pod, CONFIG_SOURCE_ANNOTATION), Some("file"));
        assert_eq!(annotation(&pod, "team"), Some("infra"));
        let seen = annotation(&pod, CONFIG_SEEN_ANNOTATION).expect("seen");
        assert!(seen.parse::<jiff::Timestamp>().is_ok(), "{seen}");
        assert!(podstatus_backends::is_static_pod(&pod) && !podstatus_backends::is_mirror_pod(&pod));

        assert_eq!(load(&path, "Node-1").expect("again").metadata.uid, Some(uid.clone()), "deterministic");
        assert_ne!(load(&path, "node-2").expect("other node").metadata.uid, Some(uid.clone()));
        write(&dir, "etcd.yaml", &YAML.replace("3.5", "3.6"));
        assert_ne!(load(&path, "Node-1").expect("changed").metadata.uid, Some(uid));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn json_manifest_defaults_the_namespace() {
        let dir = temp_dir("json");
        let path = write(
            &dir,
            "web.json",
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"c"}]}}"#,
        );
        let pod = load(&path, "n").expect("a pod");
        assert_eq!(pod.metadata.namespace.as_deref(), Some("default"));
        assert_eq!(pod.metadata.name.as_deref(), Some("web-n"));
        let mirror = mirror_of(&pod, "h", None);
        assert!(podstatus_backends::is_mirror_pod(&mirror));
        assert_eq!(mirror.metadata.uid, None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_manifests_are_typed_errors() {
        let dir = temp_dir("bad");
        let cases = [
            ("garbage.yaml", "{ not: [valid"),
            ("deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n"),
            ("noname.json", r#"{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"c"}]}}"#),
            ("nospec.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n"),
            ("binary.yml", "\u{0}\u{1}"),
        ];
        for (name, text) in cases {
            let path = write(&dir, name, text);
            let error = load(&path, "n").expect_err(name);
            assert!(error.to_string().starts_with(&path.display().to_string()), "{error}");
            assert_eq!(error.to_string().lines().count(), 1, "one line: {error}");
        }
        assert!(matches!(load(&dir.join("missing.yaml"), "n"), Err(ManifestError::Read { .. })));
        // A manifest past what etcd holds of an object is refused unread.
        let huge = format!("{YAML}# {}\n", "x".repeat(MAX_MANIFEST_BYTES as usize));
        let error = load(&write(&dir, "huge.yaml", &huge), "n").expect_err("too large");
        assert!(error.to_string().contains("larger than 1572864 bytes"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_visible_yaml_and_json_files_are_manifests() {
        for (name, expected) in
            [("a.yaml", true), ("a.yml", true), ("a.json", true), (".a.yaml", false), ("a.txt", false), ("a", false)]
        {
            assert_eq!(is_manifest_name(Path::new(name)), expected, "{name}");
        }
    }
}
