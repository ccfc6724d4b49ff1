//! Holding `coordination.k8s.io` Leases as client-go's leader election holds its lock:
//! a Lease is taken when it is absent, released (no holder) or expired (its
//! `renewTime` more than its `leaseDurationSeconds` ago), and every write carries the
//! resourceVersion read, so that of two holders racing for one Lease the API server
//! lets one write and answers the other 409. A Lease another holder renewed within its
//! duration is never taken. A fleet's shards hold their nodes' Leases, their own
//! membership and the rollout's leadership this way.
//!
//! Time is each holder's clock, as in client-go: a holder's `renewTime` is compared
//! with the reader's now. Clocks that disagree by more than a Lease's margin break the
//! rule as they break leader election.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, ListParams, PostParams};

/// What a claim found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// The Lease is the claimant's now (taken, or renewed).
    Held,
    /// Another holder renewed it within its duration.
    HeldBy {
        /// Who.
        holder: String,
        /// When it expires unless renewed.
        expires: jiff::Timestamp,
    },
    /// Another writer won the race for it (409): try again later.
    Contended,
}

/// One holder's hand on the Leases of one namespace.
#[derive(Clone)]
pub struct LeaseClaims {
    api: Api<Lease>,
    holder: String,
    duration: Duration,
}

impl LeaseClaims {
    /// `holder`'s claims on the Leases of `namespace` through `client`, each held for
    /// `duration` from its last renewal.
    pub fn new(client: kube::Client, namespace: &str, holder: &str, duration: Duration) -> LeaseClaims {
        LeaseClaims { api: Api::namespaced(client, namespace), holder: holder.to_owned(), duration }
    }

    /// The holder's identity.
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// How long a claim holds without renewal.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// Takes the Lease `name` (created with `labels` when absent) if it is free, expired
    /// or the holder's own, renewing it; otherwise says who holds it.
    pub async fn claim(&self, name: &str, labels: &BTreeMap<String, String>) -> Result<Claim, kube::Error> {
        let now = jiff::Timestamp::now();
        let Some(mut lease) = self.api.get_opt(name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(name.to_owned()),
                    labels: (!labels.is_empty()).then(|| labels.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(self.spec(None, now, 0)),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(Claim::Held),
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(Claim::Contended),
                Err(error) => Err(error),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let ours = holder.as_deref() == Some(self.holder.as_str());
        if let Some(holder) = &holder
            && !ours
            && let Some(expires) = expiry(&spec)
            && expires > now
        {
            return Ok(Claim::HeldBy { holder: holder.clone(), expires });
        }
        // A holder change is a transition, as client-go counts them.
        let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!ours);
        let acquired = if ours { spec.acquire_time.clone() } else { None };
        lease.spec = Some(self.spec(acquired, now, transitions));
        match self.api.replace(name, &PostParams::default(), &lease).await {
            Ok(_) => Ok(Claim::Held),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(Claim::Contended),
            Err(error) => Err(error),
        }
    }

    /// Lets go of the Lease `name` if it is the holder's: no holder from now on (its
    /// renew time kept, so that a node's Lease still says the node was alive then), for
    /// the next claimant to take at once. A Lease another holder has is left alone.
    pub async fn release(&self, name: &str) -> Result<(), kube::Error> {
        for _ in 0..3 {
            let Some(mut lease) = self.api.get_opt(name).await? else { return Ok(()) };
            let Some(spec) = lease.spec.as_mut() else { return Ok(()) };
            if spec.holder_identity.as_deref() != Some(self.holder.as_str()) {
                return Ok(());
            }
            spec.holder_identity = None;
            spec.acquire_time = None;
            match self.api.replace(name, &PostParams::default(), &lease).await {
                Ok(_) => return Ok(()),
                // Renewed meanwhile (the node's own loop, ending): read it again.
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// The Leases whose names start with `prefix` that some holder renewed within their
    /// duration: each name with its holder.
    pub async fn live(&self, prefix: &str) -> Result<Vec<(String, String)>, kube::Error> {
        let now = jiff::Timestamp::now();
        let listed = self.api.list(&ListParams::default()).await?;
        Ok(listed
            .items
            .into_iter()
            .filter_map(|lease| {
                let name = lease.metadata.name?;
                let spec = lease.spec?;
                let holder = spec.holder_identity.clone().filter(|h| !h.is_empty())?;
                let live = expiry(&spec).is_some_and(|expires| expires > now);
                (name.starts_with(prefix) && live).then_some((name, holder))
            })
            .collect())
    }

    fn spec(&self, acquired: Option<MicroTime>, now: jiff::Timestamp, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.holder.clone()),
            lease_duration_seconds: Some(i32::try_from(self.duration.as_secs().max(1)).unwrap_or(i32::MAX)),
            acquire_time: Some(acquired.unwrap_or(MicroTime(now))),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }
}

/// When a Lease expires unless renewed: its renew time (else its acquire time) plus its
/// duration. `None` (no time or no duration): it holds nothing.
pub fn expiry(spec: &LeaseSpec) -> Option<jiff::Timestamp> {
    let renewed = spec.renew_time.as_ref().or(spec.acquire_time.as_ref())?.0;
    let seconds = spec.lease_duration_seconds.filter(|s| *s > 0)?;
    renewed.checked_add(jiff::SignedDuration::from_secs(i64::from(seconds))).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_expires_its_duration_after_its_renewal() {
        let renewed: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().expect("a time");
        let spec = LeaseSpec {
            renew_time: Some(MicroTime(renewed)),
            lease_duration_seconds: Some(40),
            ..LeaseSpec::default()
        };
        assert_eq!(expiry(&spec), Some("2026-01-01T00:00:40Z".parse().expect("a time")));
        assert_eq!(expiry(&LeaseSpec { lease_duration_seconds: None, ..spec.clone() }), None);
        assert_eq!(expiry(&LeaseSpec { lease_duration_seconds: Some(0), ..spec.clone() }), None);
        assert_eq!(expiry(&LeaseSpec { renew_time: None, ..spec }), None, "never renewed: holds nothing");
    }
}
