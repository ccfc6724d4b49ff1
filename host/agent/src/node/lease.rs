//! The node's heartbeat: a `coordination.k8s.io/v1` Lease named after the node in
//! `kube-node-lease`, renewed every quarter of its duration, as the kubelet's node
//! lease controller (`pkg/kubelet/nodelease`, on
//! `k8s.io/component-helpers/apimachinery/lease`) keeps it:
//!
//! - the holder is the node, `leaseDurationSeconds` the configured duration, and
//!   `renewTime` is set at each renewal;
//! - the Lease is owned by the Node (an ownerReference with the Node's UID), so that
//!   deleting the Node deletes it; it is created without one while the Node does not
//!   exist yet, and the reference is added at a later renewal;
//! - a renewal updates the Lease last read (or created), and only after a failure reads
//!   it again; a failed renewal is retried with exponential backoff (200 ms doubling
//!   up to 7 s) rather than waiting a whole interval;
//! - the waits between renewals are jittered as `wait.JitterUntil` jitters them, and a
//!   node's phase places its renewals within the interval ([`crate::node::heartbeat`]).
//!
//! - a fleet's shard holds its nodes' Leases under its own identity
//!   ([`crate::node::NodeConfig::lease_holder`]): a renewal that finds the Lease held by
//!   another holder does not take it back, it stops and says the Lease is lost (the
//!   shard that took it runs the node now).
//!
//! Hand-written: kube-runtime has no node-lease helper (its Lease support is for
//! leader election), and the kubelet's loop is a few lines.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference};
use kube::api::{Api, PostParams};

use super::heartbeat::Pacer;

/// The namespace of node leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
/// The first pause after a failed renewal (the kubelet's lease controller's).
const FIRST_RETRY: Duration = Duration::from_millis(200);
/// The longest pause between retries (the kubelet's `maxBackoff`).
const MAX_RETRY: Duration = Duration::from_secs(7);

/// Why a renewal did not renew.
#[derive(Debug, thiserror::Error)]
enum RenewError {
    /// The API server refused or failed a call.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// Another holder holds the Lease: it is not ours to renew.
    #[error("the lease is held by {0}")]
    Taken(String),
}

/// Renews the node's Lease at the waits of `pacer` (every renew interval) until the task
/// is dropped, telling `renewed` the renew time of each successful renewal. Held by
/// `holder` (the node's own name when `None`); with a holder of its own, the renewals
/// end when another holder has the Lease, telling `lost` who.
pub(crate) async fn renew_forever(
    client: kube::Client,
    node: String,
    holder: Option<String>,
    duration: Duration,
    mut pacer: Pacer,
    mut renewed: impl FnMut(MicroTime) + Send + 'static,
    lost: impl FnOnce(String) + Send + 'static,
) {
    let leases: Api<Lease> = Api::namespaced(client.clone(), NODE_LEASE_NAMESPACE);
    let nodes: Api<Node> = Api::all(client);
    let mut latest: Option<Lease> = None;
    let mut retry = FIRST_RETRY;
    let exclusive = holder.is_some();
    let holder = holder.unwrap_or_else(|| node.clone());
    loop {
        match renew(&leases, &nodes, &node, &holder, exclusive, duration, latest.take()).await {
            Err(RenewError::Taken(other)) => {
                tracing::warn!(node = %node, holder = %other, "the node lease is held by another holder: stopping");
                lost(other);
                return;
            }
            Ok(lease) => {
                if let Some(time) = lease.spec.as_ref().and_then(|spec| spec.renew_time.clone()) {
                    renewed(time);
                }
                latest = Some(lease);
                retry = FIRST_RETRY;
                tokio::time::sleep(pacer.next_wait()).await;
            }
            Err(error) => {
                tracing::warn!(node = %node, %error, "renewing the node lease failed; retrying in {retry:?}");
                tokio::time::sleep(retry).await;
                retry = (retry * 2).min(MAX_RETRY);
            }
        }
    }
}

/// One renewal: updates `latest` (or the Lease as read, or a new one) with the renew
/// time now and the Node as owner once it exists. `exclusive`: a Lease read with
/// another holder is not taken.
async fn renew(
    leases: &Api<Lease>,
    nodes: &Api<Node>,
    node: &str,
    holder: &str,
    exclusive: bool,
    duration: Duration,
    latest: Option<Lease>,
) -> Result<Lease, RenewError> {
    let existing = match latest {
        Some(lease) => Some(lease),
        None => leases.get_opt(node).await?,
    };
    // The Lease last written by this loop carries its holder; one read again (after a
    // failure, often a conflict) may have been taken meanwhile.
    if exclusive && let Some(other) = existing.as_ref().and_then(held_by).filter(|other| *other != holder) {
        return Err(RenewError::Taken(other.to_owned()));
    }
    let mut lease = existing.clone().unwrap_or_else(|| Lease {
        metadata: ObjectMeta {
            name: Some(node.to_owned()),
            namespace: Some(NODE_LEASE_NAMESPACE.into()),
            ..ObjectMeta::default()
        },
        spec: None,
    });
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    spec.holder_identity = Some(holder.to_owned());
    spec.lease_duration_seconds = Some(i32::try_from(duration.as_secs()).unwrap_or(i32::MAX));
    spec.renew_time = Some(MicroTime(jiff::Timestamp::now()));
    if lease.metadata.owner_references.as_ref().is_none_or(Vec::is_empty)
        && let Some(owner) = nodes.get_opt(node).await?.and_then(|node| owner_reference(&node))
    {
        lease.metadata.owner_references = Some(vec![owner]);
    }
    Ok(match existing {
        Some(_) => leases.replace(node, &PostParams::default(), &lease).await?,
        None => leases.create(&PostParams::default(), &lease).await?,
    })
}

/// The Lease's holder, if it has one.
pub(crate) fn held_by(lease: &Lease) -> Option<&str> {
    lease.spec.as_ref()?.holder_identity.as_deref().filter(|holder| !holder.is_empty())
}

/// The Node as a Lease's owner (no controller, as the kubelet sets it).
fn owner_reference(node: &Node) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: "v1".into(),
        kind: "Node".into(),
        name: node.metadata.name.clone()?,
        uid: node.metadata.uid.clone()?,
        ..OwnerReference::default()
    })
}
