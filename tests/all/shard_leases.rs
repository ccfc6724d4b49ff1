//! How shards hold Leases (`podstatus_agent::shard::LeaseClaims`), against the embedded
//! API server over HTTP: a free Lease is taken, a Lease another holder renewed within
//! its duration never is, a released one is taken at once and an expired one once it
//! expired; of many claimants racing for one Lease exactly one holds it; and a node's
//! own renewals stop, saying so, when another holder has its Lease.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use podstatus_agent::client::{ClientSource, connect};
use podstatus_agent::shard::{Claim, LeaseClaims};
use podstatus_apiserver::EmbeddedApiServer;
use podstatus_backends::MemoryApiServer;

fn setup() -> (EmbeddedApiServer, tokio::runtime::Runtime, kube::Client) {
    let store = Arc::new(MemoryApiServer::new());
    let server = EmbeddedApiServer::start(store, "127.0.0.1:0".parse().expect("addr")).expect("the server starts");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let client = runtime.block_on(connect(&ClientSource::Url(server.url()))).expect("a client");
    (server, runtime, client)
}

fn holder_of(runtime: &tokio::runtime::Runtime, client: &kube::Client, name: &str) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "fleet");
    let lease = runtime.block_on(leases.get(name)).expect("the lease");
    lease.spec?.holder_identity
}

#[test]
fn a_lease_is_taken_only_when_free_released_or_expired() {
    let (_server, runtime, client) = setup();
    let none = BTreeMap::new();
    let a = LeaseClaims::new(client.clone(), "fleet", "shard-a_1", Duration::from_secs(2));
    let b = LeaseClaims::new(client.clone(), "fleet", "shard-b_1", Duration::from_secs(2));
    assert_eq!(runtime.block_on(a.claim("node-0", &none)).expect("a claim"), Claim::Held, "absent: created");
    assert_eq!(runtime.block_on(a.claim("node-0", &none)).expect("a claim"), Claim::Held, "its own: renewed");
    let Claim::HeldBy { holder, .. } = runtime.block_on(b.claim("node-0", &none)).expect("a claim") else {
        panic!("b took a Lease a renewed within its duration");
    };
    assert_eq!(holder, "shard-a_1");
    assert_eq!(holder_of(&runtime, &client, "node-0").as_deref(), Some("shard-a_1"));

    // Released: the next claimant takes it at once.
    runtime.block_on(a.release("node-0")).expect("released");
    assert_eq!(holder_of(&runtime, &client, "node-0"), None);
    assert_eq!(runtime.block_on(b.claim("node-0", &none)).expect("a claim"), Claim::Held);
    // a releasing what it no longer holds leaves b's hold alone.
    runtime.block_on(a.release("node-0")).expect("nothing to release");
    assert_eq!(holder_of(&runtime, &client, "node-0").as_deref(), Some("shard-b_1"));

    // Expired: b stops renewing; a may take it once the 2 s have passed, not before.
    assert!(matches!(runtime.block_on(a.claim("node-0", &none)).expect("a claim"), Claim::HeldBy { .. }));
    podstatus_backends::testing::wait_for(
        "b's Lease to expire",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || (runtime.block_on(a.claim("node-0", &none)).expect("a claim") == Claim::Held).then_some(()),
    );
    let leases: Api<Lease> = Api::namespaced(client.clone(), "fleet");
    let lease = runtime.block_on(leases.get("node-0")).expect("the lease");
    let spec = lease.spec.expect("a spec");
    assert_eq!(spec.holder_identity.as_deref(), Some("shard-a_1"));
    assert_eq!(spec.lease_transitions, Some(2), "a, b, a again: two changes of holder");
}

#[test]
fn of_many_claimants_racing_for_a_lease_exactly_one_holds_it() {
    let (_server, runtime, client) = setup();
    for round in 0..5 {
        let name = format!("race-{round}");
        let claimants: Vec<LeaseClaims> = (0..8)
            .map(|i| LeaseClaims::new(client.clone(), "fleet", &format!("shard-{i}_x"), Duration::from_secs(30)))
            .collect();
        let none = BTreeMap::new();
        let claims =
            runtime.block_on(futures::future::join_all(claimants.iter().map(|claimant| claimant.claim(&name, &none))));
        let held: Vec<usize> =
            claims.iter().enumerate().filter(|(_, c)| matches!(c, Ok(Claim::Held))).map(|(i, _)| i).collect();
        assert_eq!(held.len(), 1, "round {round}: {claims:?}");
        assert_eq!(holder_of(&runtime, &client, &name), Some(format!("shard-{}_x", held[0])));
    }
}

#[test]
fn live_leases_are_those_renewed_within_their_duration() {
    let (_server, runtime, client) = setup();
    let labels = BTreeMap::new();
    let short = LeaseClaims::new(client.clone(), "fleet", "short_1", Duration::from_secs(1));
    let long = LeaseClaims::new(client.clone(), "fleet", "long_1", Duration::from_secs(60));
    runtime.block_on(short.claim("f-shard-0", &labels)).expect("claimed");
    runtime.block_on(long.claim("f-shard-1", &labels)).expect("claimed");
    runtime.block_on(long.claim("other-shard-2", &labels)).expect("claimed");
    let live = runtime.block_on(long.live("f-shard-")).expect("listed");
    assert_eq!(live.len(), 2, "the prefix's only: {live:?}");
    podstatus_backends::testing::wait_for(
        "the short Lease to lapse",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || {
            let live = runtime.block_on(long.live("f-shard-")).expect("listed");
            (live == [("f-shard-1".to_owned(), "long_1".to_owned())]).then_some(())
        },
    );
    runtime.block_on(long.release("f-shard-1")).expect("released");
    assert!(runtime.block_on(long.live("f-shard-")).expect("listed").is_empty(), "released: no member");
}

#[test]
fn a_node_held_by_a_shard_stops_renewing_a_lease_another_holder_took() {
    use podstatus_agent::node::{NODE_LEASE_NAMESPACE, NodeConfig, NodeRegistration};
    let (_server, runtime, client) = setup();
    let config = NodeConfig {
        lease_duration: Duration::from_secs(2),
        lease_holder: Some("shard-a_1".into()),
        ..NodeConfig::new("held-0")
    };
    let registration = NodeRegistration::start(client.clone(), config, runtime.handle());
    let leases: Api<Lease> = Api::namespaced(client.clone(), NODE_LEASE_NAMESPACE);
    let wait = |what: &str, probe: &mut dyn FnMut() -> Option<()>| {
        podstatus_backends::testing::wait_for(what, Duration::from_secs(30), Duration::from_millis(50), probe)
    };
    wait("the node's Lease, held by its shard", &mut || {
        let lease = runtime.block_on(leases.get_opt("held-0")).expect("a read")?;
        (lease.spec?.holder_identity.as_deref() == Some("shard-a_1")).then_some(())
    });
    assert_eq!(registration.lease_lost(), None);
    // Another shard takes it (as it would once it expired; written here outright).
    let mut lease = runtime.block_on(leases.get("held-0")).expect("the lease");
    lease.spec.as_mut().expect("a spec").holder_identity = Some("shard-b_1".into());
    runtime.block_on(leases.replace("held-0", &Default::default(), &lease)).expect("taken");
    wait("the node to say its Lease was taken", &mut || {
        (registration.lease_lost().as_deref() == Some("shard-b_1")).then_some(())
    });
    let lease = runtime.block_on(leases.get("held-0")).expect("the lease");
    assert_eq!(lease.spec.and_then(|s| s.holder_identity).as_deref(), Some("shard-b_1"), "not taken back");
}
