//! The pods' owners (a workload controller, a user), acting through the API server with
//! their own kube-rs client, as they would on a real cluster.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, PostParams};

use super::driver::Owners;

/// Owners talking to the API server over HTTP. Calls block on the agent's runtime; they
/// are made from the driver's thread, never from a runtime worker.
pub struct KubeOwners {
    client: kube::Client,
    runtime: tokio::runtime::Handle,
}

impl KubeOwners {
    /// Owners using `client`, its requests run on `runtime`.
    pub fn new(client: kube::Client, runtime: tokio::runtime::Handle) -> Self {
        KubeOwners { client, runtime }
    }

    fn pods(&self, namespace: &str) -> Api<Pod> {
        Api::namespaced(self.client.clone(), namespace)
    }

    /// The pod as the API server has it, `None` when absent.
    pub fn get(&self, namespace: &str, name: &str) -> Result<Option<Pod>, String> {
        self.runtime.block_on(self.pods(namespace).get_opt(name)).map_err(|e| e.to_string())
    }

    /// The node's pods in the API server, counted by phase (`Unknown` without one).
    pub fn phases(&self, node: &str) -> BTreeMap<String, u64> {
        let api: Api<Pod> = Api::all(self.client.clone());
        let params = ListParams::default().fields(&format!("spec.nodeName={node}"));
        let mut phases = BTreeMap::new();
        match self.runtime.block_on(api.list(&params)) {
            Ok(list) => {
                for pod in list.items {
                    let phase = pod.status.and_then(|s| s.phase).unwrap_or_else(|| "Unknown".into());
                    *phases.entry(phase).or_default() += 1;
                }
            }
            Err(e) => tracing::warn!("listing the node's pods: {e}"),
        }
        phases
    }
}

impl Owners for KubeOwners {
    fn create(&self, pod: Pod) -> Result<Pod, String> {
        let namespace = pod.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        self.runtime.block_on(self.pods(&namespace).create(&PostParams::default(), &pod)).map_err(|e| e.to_string())
    }

    fn delete(&self, namespace: &str, name: &str) -> Result<(), String> {
        // The pod's own grace period: the API server marks it, the node does the rest.
        self.runtime
            .block_on(self.pods(namespace).delete(name, &DeleteParams::default()))
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}
