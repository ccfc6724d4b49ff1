//! [`HandedClaims`]: the claims ([`crate::status_claims`]) of everything the host handed
//! a plugin for one pod, which a status write of the pod may carry, and the rule that
//! holds a write to them ([`HandedClaims::unhanded`]).
//!
//! A write may carry a claim when:
//! - a status the host handed for the pod carries it (upstream's `syncPod` writes the
//!   cached status, which is the one handed, `m.podStatuses[pod.UID] = newStatus`), any
//!   status handed and not only the last, since a sync may write a status cached
//!   before a newer one came;
//! - the API server's copy carries it (`mergePodStatus` keeps the conditions the kubelet
//!   does not own, and the phase, reason and message while a container may still run);
//! - the host changed it itself: a readiness or startup change it made
//!   (`SetContainerReadiness` sets the container's `ready` and regenerates the Ready and
//!   ContainersReady conditions; `SetContainerStartup` sets `started`);
//! - it is the Ready or ContainersReady condition false, in a pod the host handed a
//!   terminal phase for or terminated (`mergePodStatus` makes them false in a terminal
//!   phase: `generatePodReadyConditionForTerminalPhase`);
//! - it is a container's state terminated as `TerminatePod` leaves it (exit code 137
//!   and `ContainerStatusUnknown`, or the reference's empty terminated state), for a
//!   container of a pod the host terminated.

use crate::status_claims::{
    Claim, ClaimDigest, READINESS_CONDITIONS, StatusClaims, TERMINATED_EMPTY, TERMINATED_UNKNOWN, bool_text,
};

/// Claims remembered per pod at most. A pod's statuses hold a few dozen (nine a
/// container, one a condition) and each change adds a few (a restart: its count, its
/// container ID, its last state); past the bound the record starts over from the
/// newest status, which an honest plugin writes next.
pub const MAX_CLAIMS_PER_POD: usize = 1024;

/// The claims handed for one pod, as digests, sorted.
#[derive(Debug, Default)]
pub struct HandedClaims {
    digests: Vec<ClaimDigest>,
    /// The host terminated the pod.
    terminated: bool,
}

impl HandedClaims {
    /// Notes the claims of a status handed for the pod (as digests), and whether its
    /// phase is terminal.
    pub fn add_status(&mut self, mut claims: Vec<ClaimDigest>, terminal: bool) {
        if terminal {
            claims.extend(not_ready());
        }
        self.add(claims);
    }

    /// Notes that the host terminated the pod.
    pub fn add_termination(&mut self) {
        self.terminated = true;
        self.add(not_ready().collect());
    }

    /// Notes a readiness change the host made: `ready` for the container of ID
    /// `container_id` (by ID, as the host names it: which entry has that ID is the
    /// written entry's to say, and its ID is a claim of its own). The Ready and
    /// ContainersReady conditions are generated again from every container, whichever
    /// changed (an init container made unready leaves the pod ready when its
    /// containers are), so either value goes.
    pub fn add_readiness(&mut self, container_id: &str, ready: bool) {
        let mut new = vec![Claim::set_by_id(container_id, "ready", bool_text(ready)).digest()];
        for status in ["True", "False"] {
            new.extend(READINESS_CONDITIONS.map(|type_| Claim::condition_status(type_, status).digest()));
        }
        self.add(new);
    }

    /// Notes a startup change the host made: `started` for the container of ID
    /// `container_id`.
    pub fn add_startup(&mut self, container_id: &str, started: bool) {
        self.add(vec![Claim::set_by_id(container_id, "started", bool_text(started)).digest()]);
    }

    /// Bytes held.
    pub fn held_bytes(&self) -> usize {
        self.digests.capacity() * std::mem::size_of::<ClaimDigest>()
    }

    /// Keeps of `claims` (a write's, in order) those that nothing handed here allows:
    /// the write may carry them only if the API server's copy does ([`first_beyond`]).
    pub fn retain_unhanded(&self, claims: &mut Vec<Claim<'_>>) {
        claims.retain(|claim| !self.allows(claim));
    }

    fn allows(&self, claim: &Claim<'_>) -> bool {
        let held = |claim: &Claim<'_>| self.digests.binary_search(&claim.digest()).is_ok();
        held(claim)
            || claim.as_set_by_id().is_some_and(|by_id| held(&by_id))
            || (self.terminated
                && claim.is_container_state()
                && matches!(&*claim.value, TERMINATED_UNKNOWN | TERMINATED_EMPTY)
                && held(&claim.its_container()))
    }

    fn add(&mut self, mut new: Vec<ClaimDigest>) {
        if self.digests.len() + new.len() > MAX_CLAIMS_PER_POD {
            self.digests.clear();
            new.truncate(MAX_CLAIMS_PER_POD);
        }
        self.digests.extend(new);
        self.digests.sort_unstable();
        self.digests.dedup();
    }
}

/// The first of `unhanded` ([`HandedClaims::retain_unhanded`]) that none of the API
/// server's copies of the pod's status carries. The copies are taken one at a time, and
/// no more once every claim is found carried: a copy may cost a read of the API server.
pub fn first_beyond<'w>(mut unhanded: Vec<Claim<'w>>, api: impl IntoIterator<Item = String>) -> Option<Claim<'w>> {
    let mut copies = api.into_iter();
    while !unhanded.is_empty() {
        let Some(copy) = copies.next() else { break };
        let Ok(status) = StatusClaims::read(&copy) else { continue };
        let carried: Vec<ClaimDigest> = status.claims().iter().map(Claim::digest).collect();
        unhanded.retain(|claim| !carried.contains(&claim.digest()));
    }
    unhanded.into_iter().next()
}

/// The Ready and ContainersReady conditions false.
fn not_ready() -> impl Iterator<Item = ClaimDigest> {
    READINESS_CONDITIONS.into_iter().map(|type_| Claim::condition_status(type_, "False").digest())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HANDED: &str = r#"{"phase":"Running","qosClass":"BestEffort",
        "conditions":[{"type":"Ready","status":"False"},{"type":"PodScheduled","status":"True"}],
        "containerStatuses":[{"name":"app","ready":false,"restartCount":0,"image":"i","imageID":"d",
        "containerID":"c://1","started":true,"state":{"running":{}}}]}"#;

    fn hand(claims: &mut HandedClaims, json: &str) {
        let status = StatusClaims::read(json).unwrap();
        let terminal = matches!(status.phase(), Some("Succeeded" | "Failed"));
        claims.add_status(status.claims().iter().map(Claim::digest).collect(), terminal);
    }

    fn handed() -> HandedClaims {
        let mut claims = HandedClaims::default();
        hand(&mut claims, HANDED);
        claims
    }

    fn unhanded(claims: &HandedClaims, written: &str, api: &[&str]) -> Option<String> {
        let written = StatusClaims::read(written).unwrap();
        let mut unhanded = written.claims();
        claims.retain_unhanded(&mut unhanded);
        first_beyond(unhanded, api.iter().map(|s| s.to_string())).map(|c| c.to_string())
    }

    #[test]
    fn a_write_of_what_was_handed_is_allowed_and_nothing_else() {
        let claims = handed();
        assert_eq!(unhanded(&claims, HANDED, &[]), None);
        let forged = HANDED.replace(r#""status":"False""#, r#""status":"True""#);
        assert_eq!(unhanded(&claims, &forged, &[]).as_deref(), Some("condition \"Ready\" with status \"True\""));
        let ready = HANDED.replace(r#""ready":false"#, r#""ready":true"#);
        assert_eq!(unhanded(&claims, &ready, &[]).as_deref(), Some("ready \"true\" of \"app\" in containerStatuses"));
        let stranger = r#"{"containerStatuses":[{"name":"sidecar"}]}"#;
        assert_eq!(unhanded(&claims, stranger, &[]).as_deref(), Some("an entry \"sidecar\" in containerStatuses"));
        assert_eq!(unhanded(&claims, r#"{"message":"evicted"}"#, &[]).as_deref(), Some("message \"evicted\""));
    }

    #[test]
    fn what_the_api_servers_copy_has_is_allowed() {
        let claims = handed();
        let gate = r#"{"conditions":[{"type":"example.com/gate","status":"True"}]}"#;
        assert!(unhanded(&claims, gate, &[]).is_some());
        assert_eq!(unhanded(&claims, gate, &["{}", gate]), None);
    }

    #[test]
    fn a_readiness_change_the_host_made_allows_its_container_and_the_conditions() {
        let mut claims = handed();
        let ready = r#"{"conditions":[{"type":"Ready","status":"True"},{"type":"ContainersReady","status":"True"}],
            "containerStatuses":[{"name":"app","ready":true,"image":"i","imageID":"d","containerID":"c://1",
            "started":true,"state":{"running":{}}}]}"#;
        assert!(unhanded(&claims, ready, &[]).is_some());
        claims.add_readiness("c://1", true);
        assert_eq!(unhanded(&claims, ready, &[]), None);
        let unstarted = ready.replace(r#""started":true"#, r#""started":false"#);
        assert!(unhanded(&claims, &unstarted, &[]).is_some());
        claims.add_startup("c://1", false);
        let elsewhere = unstarted.replace("c://1", "c://2");
        assert!(unhanded(&claims, &elsewhere, &[]).is_some(), "another container's ID");
        assert_eq!(unhanded(&claims, &unstarted, &[]), None);
    }

    #[test]
    fn a_terminated_pod_may_be_written_stopped_and_not_ready() {
        let mut claims = handed();
        let stopped =
            HANDED.replace(r#"{"running":{}}"#, r#"{"terminated":{"exitCode":137,"reason":"ContainerStatusUnknown"}}"#);
        let succeeded = HANDED.replace(r#"{"running":{}}"#, r#"{"terminated":{"exitCode":0,"reason":"Completed"}}"#);
        let unready = r#"{"conditions":[{"type":"ContainersReady","status":"False"}]}"#;
        assert!(unhanded(&claims, &stopped, &[]).is_some());
        assert!(unhanded(&claims, unready, &[]).is_some());
        claims.add_termination();
        assert_eq!(unhanded(&claims, &stopped, &[]), None);
        assert_eq!(unhanded(&claims, unready, &[]), None);
        assert!(unhanded(&claims, &succeeded, &[]).is_some(), "a success the node never reported");
        let stranger = r#"{"containerStatuses":[{"name":"x","state":{"terminated":{}}}]}"#;
        assert!(unhanded(&claims, stranger, &[]).is_some(), "only a container handed");
    }

    #[test]
    fn a_terminal_phase_handed_allows_readiness_false() {
        let mut claims = handed();
        let unready = r#"{"conditions":[{"type":"ContainersReady","status":"False"}]}"#;
        assert!(unhanded(&claims, unready, &[]).is_some());
        hand(&mut claims, r#"{"phase":"Succeeded"}"#);
        assert_eq!(unhanded(&claims, unready, &[]), None);
        assert_eq!(unhanded(&claims, HANDED, &[]), None, "the earlier status stays allowed");
    }

    #[test]
    fn the_record_is_bounded_and_starts_over_from_the_newest_status() {
        let mut claims = handed();
        for restart in 0..300 {
            let json = format!(r#"{{"containerStatuses":[{{"name":"app","restartCount":{restart}}}]}}"#);
            hand(&mut claims, &json);
        }
        assert!(claims.digests.len() <= MAX_CLAIMS_PER_POD);
        let newest = r#"{"containerStatuses":[{"name":"app","restartCount":299}]}"#;
        assert_eq!(unhanded(&claims, newest, &[]), None);
    }
}
