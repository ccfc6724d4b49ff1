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

    /// The pods the API server has (of `field_selector`, and those `keep` takes), for a
    /// final check and its counts. Listed in pages of [`LIST_PAGE`], as an informer
    /// lists, and each kept as its identity and status alone: a fleet checks 100,000
    /// pods, and their specs (most of a pod) read whole at once would be the run's peak
    /// of memory. A list whose snapshot the server let go mid-way (410) starts over, a
    /// few times at most.
    pub fn stored_pods(
        &self,
        field_selector: Option<&str>,
        keep: impl Fn(&Pod) -> bool,
    ) -> Result<StoredPods, OwnerError> {
        let api: Api<Pod> = Api::all(self.client.clone());
        let mut attempt = 0;
        'list: loop {
            attempt += 1;
            let mut pods = StoredPods::new();
            let mut token: Option<String> = None;
            loop {
                let mut params = ListParams::default().limit(LIST_PAGE);
                if let Some(selector) = field_selector {
                    params = params.fields(selector);
                }
                if let Some(token) = token.take() {
                    params = params.continue_token(&token);
                }
                let page = match self.block_on(api.list(&params)) {
                    Ok(page) => page,
                    Err(OwnerError::Api(e)) if attempt < LIST_ATTEMPTS && is_expired(&e) => continue 'list,
                    Err(e) => return Err(e),
                };
                for pod in page.items.into_iter().filter(|pod| keep(pod)) {
                    let pod = identity_and_status(pod);
                    pods.insert(crate::simulation::key(&pod), pod);
                }
                match page.metadata.continue_ {
                    Some(next) if !next.is_empty() => token = Some(next),
                    _ => return Ok(pods),
                }
            }
        }
    }
}

/// Pods by (namespace, name), each its identity and status alone.
pub type StoredPods = BTreeMap<(String, String), Pod>;

/// Pods a final check lists per request (kube-rs' watcher and kubectl page by 500 too).
pub const LIST_PAGE: u32 = 500;
/// Lists started over at most when the server let a list's snapshot go mid-way.
const LIST_ATTEMPTS: usize = 3;

/// A 410: a continued list's snapshot is gone.
fn is_expired(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 410)
}

/// `pod` with only what a check reads: its name, namespace and UID, and its status.
fn identity_and_status(pod: Pod) -> Pod {
    let metadata = pod.metadata;
    Pod {
        metadata: ObjectMeta {
            name: metadata.name,
            namespace: metadata.namespace,
            uid: metadata.uid,
            ..ObjectMeta::default()
        },
        spec: None,
        status: pod.status,
    }
}

/// Pods counted by phase (`Unknown` without one).
pub fn phases<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> BTreeMap<String, u64> {
    let mut phases = BTreeMap::new();
    for pod in pods {
        let phase = pod.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_else(|| "Unknown".into());
        *phases.entry(phase).or_default() += 1;
    }
    phases
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
