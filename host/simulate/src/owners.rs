//! The pods' owners (a workload controller, a user), acting through the API server with
//! their own kube-rs client, as they would on a real cluster.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};

/// What the pods' owners do through the API server (a workload controller, a user).
pub trait Owners {
    /// Creates the pod; returns it as stored (with its UID).
    fn create(&self, pod: Pod) -> Result<Pod, OwnerError>;
    /// Asks for the pod's deletion with its grace period: the API server marks it and
    /// the node does the rest.
    fn delete(&self, namespace: &str, name: &str) -> Result<(), OwnerError>;
    /// Changes the pod with a JSON merge patch of its main resource (a spec change: an
    /// in-place resize of its containers, with the generation it moves to).
    fn patch(&self, namespace: &str, name: &str, patch: &serde_json::Value) -> Result<(), OwnerError>;
}

/// How long one owner call may take by default. The driver (which checks for SIGTERM
/// only between calls) and the final check wait for it, and kube's
/// own read timeout is minutes: a stalled server must not hold them that long.
pub const OWNER_CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Why an owner's call failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum OwnerError {
    /// The API server answered with an error, or the request failed.
    #[error("{0}")]
    Api(#[source] std::sync::Arc<kube::Error>),
    /// No answer within the call timeout.
    #[error("no answer from the API server within {} ms", .0.as_millis())]
    Timeout(Duration),
}

/// Owners talking to the API server over HTTP. Calls block on the agent's runtime; they
/// are made from the driver's thread, never from a runtime worker.
pub struct KubeOwners {
    client: kube::Client,
    runtime: tokio::runtime::Handle,
    /// The longest one call may take (see [`OWNER_CALL_TIMEOUT`]).
    call_timeout: Duration,
}

impl KubeOwners {
    /// Makes sure `namespace` exists, as an operator would before a workload: a real
    /// kube-apiserver refuses pods in a namespace it does not have (the simulation
    /// created none against one), while the embedded server has no namespaces at all
    /// (its 404 here is fine).
    pub fn ensure_namespace(&self, namespace: &str) -> Result<(), OwnerError> {
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(self.client.clone());
        let object = k8s_openapi::api::core::v1::Namespace {
            metadata: kube::api::ObjectMeta { name: Some(namespace.to_owned()), ..Default::default() },
            ..Default::default()
        };
        match self.block_on(namespaces.create(&PostParams::default(), &object)) {
            Ok(_) => Ok(()),
            Err(OwnerError::Api(error)) if matches!(&*error, kube::Error::Api(s) if s.code == 409 || s.code == 404) => {
                Ok(())
            }
            Err(error) => Err(error),
        }
    }

    /// Owners using `client`, its requests run on `runtime`, each bounded by
    /// [`OWNER_CALL_TIMEOUT`].
    pub fn new(client: kube::Client, runtime: tokio::runtime::Handle) -> Self {
        KubeOwners { client, runtime, call_timeout: OWNER_CALL_TIMEOUT }
    }

    /// The same owners with each call bounded by `call_timeout` instead.
    pub fn with_call_timeout(self, call_timeout: Duration) -> Self {
        KubeOwners { call_timeout, ..self }
    }

    /// Runs `request` on the runtime, waiting at most the call timeout.
    fn block_on<T>(&self, request: impl Future<Output = Result<T, kube::Error>>) -> Result<T, OwnerError> {
        let call_timeout = self.call_timeout;
        match self.runtime.block_on(async move { tokio::time::timeout(call_timeout, request).await }) {
            Ok(answer) => answer.map_err(|e| OwnerError::Api(std::sync::Arc::new(e))),
            Err(_) => Err(OwnerError::Timeout(call_timeout)),
        }
    }

    fn pods(&self, namespace: &str) -> Api<Pod> {
        Api::namespaced(self.client.clone(), namespace)
    }

    /// The pods of `node` as the API server has them, for the final check and the
    /// counts by phase ([`KubeOwners::stored_pods`]).
    pub fn node_pods(&self, node: &str) -> Result<StoredPods, OwnerError> {
        self.stored_pods(Some(&format!("spec.nodeName={node}")), |_| true)
    }

    /// The pods the API server has (of `field_selector`, and those on the nodes `keep`
    /// takes), for a final check and its counts. Listed in pages of [`LIST_PAGE`], as an
    /// informer lists, each page read as text and each pod kept as its identity, its
    /// phase and its status's JSON ([`StoredPod`]). A fleet's check reads them as they
    /// come instead ([`KubeOwners::each_stored_pod`]).
    pub fn stored_pods(
        &self,
        field_selector: Option<&str>,
        keep: impl Fn(Option<&str>) -> bool,
    ) -> Result<StoredPods, OwnerError> {
        self.each_stored_pod(field_selector, keep, StoredPods::new, |pods, _, key, pod| {
            pods.insert(key, pod);
        })
    }

    /// Hands each pod the API server has (of `field_selector`, and on the nodes `keep`
    /// takes) to `each`, with its node and its (namespace, name), page after page, into
    /// what `start` made: nothing of a page is kept once `each` has it. A fleet checks
    /// 100,000 pods, and kept at once, even as identity and status text, they were the
    /// run's peak of memory. A list whose snapshot the server let go mid-way (410) starts
    /// over from a new `start()`, a few times at most.
    pub fn each_stored_pod<A>(
        &self,
        field_selector: Option<&str>,
        keep: impl Fn(Option<&str>) -> bool,
        mut start: impl FnMut() -> A,
        mut each: impl FnMut(&mut A, Option<&str>, (String, String), StoredPod),
    ) -> Result<A, OwnerError> {
        let request = kube::core::Request::new("/api/v1/pods");
        let mut attempt = 0;
        'list: loop {
            attempt += 1;
            let mut into = start();
            let mut token: Option<String> = None;
            loop {
                let mut params = ListParams::default().limit(LIST_PAGE);
                if let Some(selector) = field_selector {
                    params = params.fields(selector);
                }
                if let Some(token) = token.take() {
                    params = params.continue_token(&token);
                }
                let http = request
                    .list(&params)
                    .map_err(|e| OwnerError::Api(std::sync::Arc::new(kube::Error::BuildRequest(e))))?;
                let text = match self.block_on(self.client.request_text(http)) {
                    Ok(text) => text,
                    Err(OwnerError::Api(e)) if attempt < LIST_ATTEMPTS && is_expired(&e) => continue 'list,
                    Err(e) => return Err(e),
                };
                let page: PodListPage<'_> = serde_json::from_str(&text)
                    .map_err(|e| OwnerError::Api(std::sync::Arc::new(kube::Error::SerdeError(e))))?;
                for item in page.items.into_iter().filter(|item| keep(item.spec.node_name.as_deref())) {
                    let meta = item.metadata;
                    let key = (meta.namespace.unwrap_or_default(), meta.name.unwrap_or_default());
                    let status = item.status.map_or_else(|| Box::from("{}"), |s| Box::from(s.get()));
                    let phase = serde_json::from_str::<PhaseOnly>(&status).ok().and_then(|p| p.phase);
                    each(&mut into, item.spec.node_name.as_deref(), key, StoredPod { uid: meta.uid, phase, status });
                }
                match page.metadata.continue_token {
                    Some(next) if !next.is_empty() => token = Some(next),
                    _ => return Ok(into),
                }
            }
        }
    }
}

/// A pod as a final check reads it: its UID, its phase and its status as JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredPod {
    pub uid: Option<String>,
    pub phase: Option<String>,
    pub status: Box<str>,
}

impl StoredPod {
    /// The pod as an object with only these: its UID and its status (empty when the
    /// JSON is no PodStatus).
    pub fn to_pod(&self) -> Pod {
        Pod {
            metadata: ObjectMeta { uid: self.uid.clone(), ..ObjectMeta::default() },
            spec: None,
            status: Some(serde_json::from_str(&self.status).unwrap_or_default()),
        }
    }
}

/// Pods by (namespace, name).
pub type StoredPods = BTreeMap<(String, String), StoredPod>;

/// One page of a pod list, read for what a check keeps.
#[derive(serde::Deserialize)]
struct PodListPage<'a> {
    #[serde(default)]
    metadata: PageMeta,
    #[serde(default, borrow)]
    items: Vec<PageItem<'a>>,
}

#[derive(Default, serde::Deserialize)]
struct PageMeta {
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

#[derive(serde::Deserialize)]
struct PageItem<'a> {
    #[serde(default)]
    metadata: ItemMeta,
    #[serde(default)]
    spec: ItemSpec,
    #[serde(default, borrow)]
    status: Option<&'a serde_json::value::RawValue>,
}

#[derive(Default, serde::Deserialize)]
struct ItemMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    uid: Option<String>,
}

#[derive(Default, serde::Deserialize)]
struct ItemSpec {
    #[serde(default, rename = "nodeName")]
    node_name: Option<String>,
}

#[derive(serde::Deserialize)]
struct PhaseOnly {
    #[serde(default)]
    phase: Option<String>,
}

/// Pods a final check lists per request (kube-rs' watcher and kubectl page by 500 too).
pub const LIST_PAGE: u32 = 500;
/// Lists started over at most when the server let a list's snapshot go mid-way.
const LIST_ATTEMPTS: usize = 3;

/// A 410: a continued list's snapshot is gone.
fn is_expired(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 410)
}

/// Pods counted by phase (`Unknown` without one).
pub fn phases<'a>(pods: impl IntoIterator<Item = &'a StoredPod>) -> BTreeMap<String, u64> {
    let mut phases = BTreeMap::new();
    for pod in pods {
        count_phase(&mut phases, pod);
    }
    phases
}

/// Counts `pod` into `phases` under its phase (`Unknown` without one).
pub fn count_phase(phases: &mut BTreeMap<String, u64>, pod: &StoredPod) {
    *phases.entry(pod.phase.clone().unwrap_or_else(|| "Unknown".into())).or_default() += 1;
}

impl Owners for KubeOwners {
    fn create(&self, pod: Pod) -> Result<Pod, OwnerError> {
        let namespace = pod.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        self.block_on(self.pods(&namespace).create(&PostParams::default(), &pod))
    }

    fn delete(&self, namespace: &str, name: &str) -> Result<(), OwnerError> {
        // The pod's own grace period: the API server marks it, the node does the rest.
        self.block_on(self.pods(namespace).delete(name, &DeleteParams::default())).map(|_| ())
    }

    fn patch(&self, namespace: &str, name: &str, patch: &serde_json::Value) -> Result<(), OwnerError> {
        let patch = Patch::Merge(patch);
        self.block_on(self.pods(namespace).patch(name, &PatchParams::default(), &patch)).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The final check's list: every page read, the pods of the nodes asked for kept
    /// as identity, phase and status text, the counts by phase from them.
    #[test]
    fn stored_pods_read_every_page_and_keep_what_a_check_reads() {
        use podstatus_backends::MemoryApiServer;
        let store = std::sync::Arc::new(MemoryApiServer::with_graceful_deletion());
        let pods = 2 * LIST_PAGE as usize + 7;
        for i in 0..pods {
            let pod: Pod = serde_json::from_value(serde_json::json!({
                "metadata": {"name": format!("p{i:05}"), "namespace": "sim", "uid": format!("u{i}")},
                "spec": {"nodeName": if i % 2 == 0 { "even" } else { "odd" }, "containers": [{"name": "c"}]},
                "status": {"phase": if i % 3 == 0 { "Running" } else { "Pending" }, "podIP": format!("10.0.{}.{}", i / 250, i % 250)}
            }))
            .unwrap();
            store.put_pod(pod).unwrap();
        }
        let server =
            podstatus_apiserver::EmbeddedApiServer::start(store, "127.0.0.1:0".parse().unwrap()).expect("a server");
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let config = kube::Config::new(server.url().parse().unwrap());
        let client = {
            let _entered = runtime.enter();
            kube::Client::try_from(config).unwrap()
        };
        let owners = KubeOwners::new(client, runtime.handle().clone());

        let even = owners.stored_pods(None, |node| node == Some("even")).expect("listed");
        assert_eq!(even.len(), pods.div_ceil(2), "every page, the even node's pods only");
        let p6 = &even[&("sim".to_owned(), "p00006".to_owned())];
        assert_eq!((p6.uid.as_deref(), p6.phase.as_deref()), (Some("u6"), Some("Running")));
        let status = p6.to_pod().status.expect("a status");
        assert_eq!(status.pod_ip.as_deref(), Some("10.0.0.6"));
        let by_phase = phases(even.values());
        assert_eq!(by_phase.values().sum::<u64>(), even.len() as u64);
        assert_eq!(by_phase["Running"], (0..pods).filter(|i| i % 2 == 0 && i % 3 == 0).count() as u64);

        let odd = owners.node_pods("odd").expect("listed by field selector");
        assert_eq!(odd.len(), pods / 2);
    }

    /// Before the bound, this call waited for kube's own read timeout (minutes).
    #[test]
    fn a_stalled_server_is_an_error_within_the_call_timeout_not_a_hang() {
        // Accepts connections and never answers.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("an address"));
        std::thread::spawn(move || {
            let held: Vec<_> = listener.incoming().collect();
            drop(held);
        });
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a runtime");
        let config = kube::Config::new(url.parse().expect("a URL"));
        let client = {
            let _entered = runtime.enter();
            kube::Client::try_from(config).expect("a client")
        };
        let owners = KubeOwners::new(client, runtime.handle().clone()).with_call_timeout(Duration::from_millis(200));
        let (done, answered) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(owners.node_pods("node"));
        });
        // Generous: bounds the wait, never measures it.
        let answer = answered.recv_timeout(Duration::from_secs(60)).expect("an answer, not a hang");
        let error = answer.expect_err("no answer is an error");
        assert!(matches!(error, OwnerError::Timeout(_)), "{error}");
        assert!(error.to_string().contains("no answer from the API server"), "{error}");
    }
}
