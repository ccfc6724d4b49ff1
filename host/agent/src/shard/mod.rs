//! A fleet larger than one process (issue 51): shards, each a `podstatus fleet` of its
//! share of the whole fleet's nodes ([`share`]), as a StatefulSet's pods run it.
//!
//! - **Who is a shard.** A shard with a fixed count (`--shard 2/4`) assumes shards
//!   `0 .. COUNT-1`. Otherwise each shard holds a membership Lease,
//!   `FLEET-shard-ORDINAL` in the fleet's namespace, renewed every quarter of its
//!   duration; the live members are those whose Lease some holder renewed within its
//!   duration, so a StatefulSet scaled down loses the members it removed once their
//!   Leases expire, and one scaled up gains the new ones as they start.
//! - **Which nodes.** The share of the live members: node `n` is the shard's at
//!   position `n mod m` of the `m` members sorted by ordinal.
//! - **Proof of who runs a node.** A node's Lease (`kube-node-lease/NODE`, the heartbeat
//!   the node controller reads) is held by the shard that runs it ([`LeaseClaims`]): a
//!   shard starts a node only once it took the Lease, takes it only when it is free or
//!   expired, and stops the node as soon as a renewal finds another holder. A shard
//!   that stops gracefully releases its nodes' Leases (no holder, the renew time
//!   kept), so their next shard takes them at once; one that crashed loses them when
//!   they expire.
//!
//! A shard's identity is its name (the pod's) and a random suffix, as client-go's
//! leader election names its candidates: a restarted shard is a new holder, and waits
//! for what its previous life held to expire unless that life released it.

mod held_lease;
mod lease_claims;
mod share;

pub use held_lease::{HeldLease, LeaseState};
pub use lease_claims::{Claim, LeaseClaims, expiry};
pub use share::{MAX_SHARDS, ShardPlace, ShardPlaceError, share};

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;

use crate::client::Connection;
use crate::node::NODE_LEASE_NAMESPACE;

/// The label every Lease and Node of a fleet carries: the fleet's name.
pub const FLEET_LABEL: &str = "podstatus.io/fleet";
/// The label a Node carries while a shard runs it: the shard's ordinal (select a
/// shard's nodes as KWOK users select an instance's with
/// `--manage-nodes-with-label-selector`).
pub const SHARD_LABEL: &str = "podstatus.io/shard";
/// How long one round of calls to the API server may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Node Leases claimed or released at once.
const CONCURRENT_CLAIMS: usize = 16;

/// What a shard is.
#[derive(Clone, Debug)]
pub struct ShardConfig {
    /// The fleet's name: its nodes' prefix (`FLEET-N`).
    pub fleet: String,
    /// The shard's place.
    pub place: ShardPlace,
    /// The whole fleet's nodes.
    pub total_nodes: usize,
    /// The shard's name (the pod's): its identity before the random suffix.
    pub name: String,
    /// Where the membership Leases live (the fleet's namespace).
    pub namespace: String,
    /// How long a membership holds without renewal.
    pub member_lease_duration: Duration,
    /// How long a node's Lease holds without renewal (the nodes' own setting).
    pub node_lease_duration: Duration,
}

/// Why a shard could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    /// The API server refused or failed a call.
    #[error("shard {ordinal}: {what}: {source}")]
    Api {
        /// The shard.
        ordinal: u32,
        /// What it was doing.
        what: &'static str,
        /// What the client said.
        #[source]
        source: Box<kube::Error>,
    },
    /// The API server did not answer in time.
    #[error("shard {ordinal}: {what}: no answer within {CALL_TIMEOUT:?}")]
    Timeout {
        /// The shard.
        ordinal: u32,
        /// What it was doing.
        what: &'static str,
    },
}

/// The nodes a shard asked for: those it holds now, and those another holder has.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeClaims {
    /// Held by this shard now, by number, sorted.
    pub held: Vec<usize>,
    /// Held elsewhere (or raced for): number, holder (empty for a lost race) and when it
    /// expires unless renewed.
    pub elsewhere: Vec<(usize, String, Option<jiff::Timestamp>)>,
}

/// One shard of a fleet; see the module documentation.
pub struct Shard {
    config: ShardConfig,
    identity: String,
    members: LeaseClaims,
    nodes: LeaseClaims,
    runtime: tokio::runtime::Handle,
}

impl Shard {
    /// The shard `config` describes, reaching the API server through `connection`.
    pub fn new(connection: &Connection, config: ShardConfig) -> Shard {
        let identity = format!("{}_{}", config.name, random_suffix());
        let client = connection.client().clone();
        let members = LeaseClaims::new(client.clone(), &config.namespace, &identity, config.member_lease_duration);
        let nodes = LeaseClaims::new(client, NODE_LEASE_NAMESPACE, &identity, config.node_lease_duration);
        Shard { config, identity, members, nodes, runtime: connection.runtime().clone() }
    }

    /// Its identity: the holder its Leases name.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// What it is.
    pub fn config(&self) -> &ShardConfig {
        &self.config
    }

    /// The name of node `n` of the fleet.
    pub fn node_name(&self, n: usize) -> String {
        format!("{}-{n}", self.config.fleet)
    }

    /// The labels its nodes carry: the fleet's name and the shard's ordinal.
    pub fn node_labels(&self) -> BTreeMap<String, String> {
        [
            (FLEET_LABEL.to_owned(), self.config.fleet.clone()),
            (SHARD_LABEL.to_owned(), self.config.place.ordinal.to_string()),
        ]
        .into()
    }

    fn member_prefix(&self) -> String {
        format!("{}-shard-", self.config.fleet)
    }

    /// Holds its membership from now on (its membership Lease claimed and renewed by a
    /// task of its own, whatever its fleet's loop is doing); `None` for a shard of a
    /// fixed count, always a member.
    pub fn keep_membership(&self) -> Option<HeldLease> {
        self.config.place.count.is_none().then(|| {
            let name = format!("{}{}", self.member_prefix(), self.config.place.ordinal);
            let labels = [(FLEET_LABEL.to_owned(), self.config.fleet.clone())].into();
            HeldLease::keep(self.members.clone(), &name, labels, &self.runtime)
        })
    }

    /// The live members' ordinals, sorted, itself among them: `0 .. COUNT` for a fixed
    /// count.
    pub fn members(&self) -> Result<Vec<u32>, ShardError> {
        if let Some(count) = self.config.place.count {
            return Ok((0..count).collect());
        }
        let prefix = self.member_prefix();
        let live = self.call("listing the members", self.members.live(&prefix))?;
        let mut ordinals: Vec<u32> = live
            .iter()
            .filter_map(|(name, _)| name.strip_prefix(&prefix)?.parse().ok())
            .filter(|ordinal| *ordinal < MAX_SHARDS)
            .chain(std::iter::once(self.config.place.ordinal))
            .collect();
        ordinals.sort_unstable();
        ordinals.dedup();
        Ok(ordinals)
    }

    /// Its nodes, by number, when `members` are the live shards.
    pub fn share(&self, members: &[u32]) -> Vec<usize> {
        share(self.config.total_nodes, self.config.place.ordinal, members)
    }

    /// Claims the Leases of `nodes`, a few at a time.
    pub fn claim_nodes(&self, nodes: &[usize]) -> Result<NodeClaims, ShardError> {
        let labels: BTreeMap<String, String> = [(FLEET_LABEL.to_owned(), self.config.fleet.clone())].into();
        let claims = futures::stream::iter(nodes.iter().map(|&n| {
            let (name, labels) = (self.node_name(n), &labels);
            async move { (n, self.nodes.claim(&name, labels).await) }
        }))
        .buffer_unordered(CONCURRENT_CLAIMS)
        .collect::<Vec<_>>();
        let mut outcome = NodeClaims::default();
        for (n, claim) in self.call_all("claiming node leases", claims)? {
            match claim.map_err(|source| self.api_error("claiming node leases", source))? {
                Claim::Held => outcome.held.push(n),
                Claim::HeldBy { holder, expires } => outcome.elsewhere.push((n, holder, Some(expires))),
                Claim::Contended => outcome.elsewhere.push((n, String::new(), None)),
            }
        }
        outcome.held.sort_unstable();
        outcome.elsewhere.sort();
        Ok(outcome)
    }

    /// Releases the Leases of `nodes` it holds (for the next shard to take at once); a
    /// Lease it could not release expires by itself. How many failed.
    pub fn release_nodes(&self, nodes: &[usize]) -> usize {
        let releases = futures::stream::iter(nodes.iter().map(|&n| {
            let name = self.node_name(n);
            async move { (n, self.nodes.release(&name).await) }
        }))
        .buffer_unordered(CONCURRENT_CLAIMS)
        .collect::<Vec<_>>();
        match self.call_all("releasing node leases", releases) {
            Ok(released) => released
                .into_iter()
                .filter(|(n, result)| {
                    if let Err(error) = result {
                        tracing::warn!(node = n, %error, "releasing the node lease failed: it will expire");
                    }
                    result.is_err()
                })
                .count(),
            Err(error) => {
                tracing::warn!(%error, "releasing the node leases: they will expire");
                nodes.len()
            }
        }
    }

    fn call<T>(
        &self,
        what: &'static str,
        future: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ShardError> {
        self.call_all(what, future)?.map_err(|source| self.api_error(what, source))
    }

    fn call_all<T>(&self, what: &'static str, future: impl Future<Output = T>) -> Result<T, ShardError> {
        self.runtime
            .block_on(async { tokio::time::timeout(CALL_TIMEOUT, future).await })
            .map_err(|_| ShardError::Timeout { ordinal: self.config.place.ordinal, what })
    }

    fn api_error(&self, what: &'static str, source: kube::Error) -> ShardError {
        ShardError::Api { ordinal: self.config.place.ordinal, what, source: Box::new(source) }
    }
}

/// Eight hex digits that differ from one process start to the next (not a secret: an
/// identity, as client-go's uuid after the hostname).
fn random_suffix() -> String {
    use sha2::{Digest, Sha256};
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let local = 0u8;
    let seed = format!("{}:{}:{:p}", std::process::id(), now.as_nanos(), &local);
    Sha256::digest(seed.as_bytes()).iter().take(4).map(|b| format!("{b:02x}")).collect()
}
