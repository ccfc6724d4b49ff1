//! Pods for the host's unit tests, built in one place so that every test module says
//! only what its pods have that matters to it (annotations, a node, containers); and
//! the one polling wait the host's tests use.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::StatusUpdate;

/// A pod named `name` with `uid` in namespace "ns", with no spec until one is asked for.
pub fn pod(name: &str, uid: &str) -> PodBuilder {
    PodBuilder(Pod {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some(name.into()),
            uid: Some(uid.into()),
            ..Default::default()
        },
        ..Default::default()
    })
}

/// A status write of phase Running to `namespace/name`, without preconditions.
pub fn running_update(namespace: &str, name: &str) -> StatusUpdate {
    StatusUpdate {
        namespace: namespace.into(),
        name: name.into(),
        status: PodStatus { phase: Some("Running".into()), ..Default::default() },
        ..Default::default()
    }
}

/// A test pod being built; [`PodBuilder::build`] gives the pod.
pub struct PodBuilder(Pod);

impl PodBuilder {
    /// In `namespace` rather than "ns".
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.0.metadata.namespace = Some(namespace.into());
        self
    }

    /// With exactly these annotations (an empty list still sets an empty map).
    pub fn annotations(mut self, annotations: &[(&str, &str)]) -> Self {
        self.0.metadata.annotations = Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        self
    }

    /// With exactly these labels.
    pub fn labels(mut self, labels: &[(&str, &str)]) -> Self {
        self.0.metadata.labels = Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        self
    }

    /// With a spec, empty unless [`Self::node`] or [`Self::container`] fill it.
    pub fn spec(mut self) -> Self {
        self.spec_mut();
        self
    }

    /// Bound to `node`.
    pub fn node(mut self, node: &str) -> Self {
        self.spec_mut().node_name = Some(node.into());
        self
    }

    /// With one more container, named `name`.
    pub fn container(mut self, name: &str) -> Self {
        self.spec_mut().containers.push(Container { name: name.into(), ..Default::default() });
        self
    }

    /// The pod.
    pub fn build(self) -> Pod {
        self.0
    }

    fn spec_mut(&mut self) -> &mut PodSpec {
        self.0.spec.get_or_insert_with(Default::default)
    }
}

/// Polls `probe` every `poll` until it gives a value, and returns that; panics saying
/// `what` did not come `within` that long.
pub fn wait_for<T>(what: &str, within: Duration, poll: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(Instant::now() < deadline, "{what} within {within:?}");
        std::thread::sleep(poll);
    }
}

/// Polls `done` every `poll` until it holds; panics saying `what` did not happen
/// `within` that long.
pub fn wait_until(what: &str, within: Duration, poll: Duration, mut done: impl FnMut() -> bool) {
    wait_for(what, within, poll, || done().then_some(()))
}
