//! A Lease held by a task of its own ([`HeldLease`]): claimed, then renewed every
//! quarter of its duration on the I/O runtime, whatever the holder's own loop is busy
//! with. A shard's loop swaps hundreds of plugins in one go at a promotion and flushes
//! every node when its share changes; a membership or leadership renewed by that loop
//! would lapse meanwhile, and the other shards would share out its nodes (or elect
//! another leader) while it is alive. The holder reads how the last claim went
//! ([`HeldLease::state`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::lease_claims::{Claim, LeaseClaims};

/// How the last claim of a held Lease went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseState {
    /// Not claimed yet.
    Pending,
    /// Held: claimed or renewed at the last attempt.
    Held,
    /// Another holder has it, until it expires unless renewed.
    HeldBy {
        /// Who.
        holder: String,
        /// When.
        expires: jiff::Timestamp,
    },
    /// The last attempt failed (the API server, or a race): the Lease may still be ours
    /// until it expires.
    Failing(String),
}

/// A Lease claimed and renewed by a task; stops renewing when dropped (the Lease then
/// lapses at its expiry, unless released first with [`HeldLease::release`]).
pub struct HeldLease {
    state: Arc<Mutex<LeaseState>>,
    task: tokio::task::JoinHandle<()>,
    claims: LeaseClaims,
    name: String,
    runtime: tokio::runtime::Handle,
}

impl HeldLease {
    /// Claims `name` through `claims` (labelled `labels` when created) at once and
    /// every quarter of the claims' duration after, on `runtime`.
    pub fn keep(
        claims: LeaseClaims,
        name: &str,
        labels: BTreeMap<String, String>,
        runtime: &tokio::runtime::Handle,
    ) -> HeldLease {
        let state = Arc::new(Mutex::new(LeaseState::Pending));
        let (held, lease, name_owned) = (Arc::clone(&state), claims.clone(), name.to_owned());
        let every = (claims.duration() / 4).max(Duration::from_millis(250));
        let task = runtime.spawn(async move {
            loop {
                let outcome = match tokio::time::timeout(every * 4, lease.claim(&name_owned, &labels)).await {
                    Ok(Ok(Claim::Held)) => LeaseState::Held,
                    Ok(Ok(Claim::HeldBy { holder, expires })) => LeaseState::HeldBy { holder, expires },
                    Ok(Ok(Claim::Contended)) => LeaseState::Failing("another writer raced for it".into()),
                    Ok(Err(error)) => LeaseState::Failing(error.to_string()),
                    Err(_) => LeaseState::Failing("no answer in time".into()),
                };
                if let LeaseState::Failing(why) = &outcome {
                    tracing::warn!(lease = %name_owned, "claiming the lease: {why}");
                }
                *held.lock().unwrap_or_else(PoisonError::into_inner) = outcome;
                tokio::time::sleep(every).await;
            }
        });
        HeldLease { state, task, claims, name: name.to_owned(), runtime: runtime.clone() }
    }

    /// How the last claim went.
    pub fn state(&self) -> LeaseState {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Stops renewing and lets go of the Lease now, for the next claimant to take at
    /// once (from a thread that is not the runtime's).
    pub fn release(self) -> Result<(), kube::Error> {
        self.task.abort();
        let (claims, name) = (self.claims.clone(), self.name.clone());
        self.runtime.block_on(async move { claims.release(&name).await })
    }
}

impl Drop for HeldLease {
    fn drop(&mut self) {
        self.task.abort();
    }
}
