//! A rollout over every shard of a fleet, declared as a `PluginRollout` object: four
//! `podstatus fleet --shard` processes against one `podstatus serve`. Each shard
//! checks the plugin against the digest the object names, swaps its share of the
//! canary and reports its figures into the object's status; the leader (one shard,
//! elected by Lease) judges the whole fleet's figures and writes the decision every
//! shard carries out:
//!
//! - a canary on v3 (one call per status version) is promoted: every node of every
//!   shard runs it;
//! - a canary on v1 (two calls per version: it reads each pod before it writes it) is
//!   rolled back by the calls-per-version criterion: every node is on v3 again;
//! - a plugin whose bytes do not match the digest is refused, and the rollout says so;
//! - a rollout deleted before it was decided leaves no node on its plugin;
//! - the leader's shard killed mid-rollout: the next leader (once the Lease expired)
//!   decides, and the others take the killed shard's nodes over.
//!
//! Every pod keeps its status through all of it. The first two run on a few nodes a
//! shard, paced fast; the last on the scale, four shards of 250 nodes paced as a
//! fleet is, through the same steps and a shard scaled away. Each shard's control
//! endpoint takes a bearer token (`--control-token-file`): requests without it, or with
//! another, are answered 401 and swap nothing. Their figures, measured on
//! a release build, are in docs/fleet.md.

use std::net::SocketAddr;
use std::process::Child;
use std::sync::mpsc::Receiver;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

mod common;

use common::{condition, free_port, request, request_with, signal, spawn, wait, wait_until, workspace};

const ROLLOUTS: &str = "/apis/podstatus.io/v1alpha1/namespaces/default/pluginrollouts";

/// The bearer token of every shard's control endpoint.
const TOKEN: &str = "fleet-rollout-operator-0123456789";

/// How fast a test's shards notice things: their membership and node Leases, and how
/// often each node reports its status.
struct Pace {
    shard_lease: &'static str,
    node_lease: &'static str,
    node_status: &'static str,
}

/// A few nodes a shard: everything fast.
const QUICK: Pace = Pace { shard_lease: "3s", node_lease: "6s", node_status: "1s" };

/// A fleet of `shards` shard processes of `nodes` nodes in all, against its own
/// `podstatus serve`.
struct ShardedFleet {
    api: SocketAddr,
    prefix: &'static str,
    nodes: usize,
    server: Option<(Child, Receiver<String>)>,
    shards: Vec<Option<(Child, Receiver<String>)>>,
    controls: Vec<SocketAddr>,
}

impl ShardedFleet {
    fn start(prefix: &'static str, shards: usize, nodes: usize) -> ShardedFleet {
        Self::start_paced(prefix, shards, nodes, &QUICK)
    }

    fn start_paced(prefix: &'static str, shards: usize, nodes: usize, pace: &Pace) -> ShardedFleet {
        let api = free_port();
        // A shard of N nodes keeps about 4N connections (docs/fleet.md).
        let connections = (512 + 4 * nodes + 64 * shards).to_string();
        let server = spawn(&["serve", "--listen", &api.to_string(), "--max-connections", &connections]);
        wait_until("the API server answers", || request(api, "GET", "/version", None));
        let url = format!("http://{api}");
        let total = nodes.to_string();
        let controls: Vec<SocketAddr> = (0..shards).map(|_| free_port()).collect();
        let dir = workspace().join("target/tmp/fleet-rollout").join(prefix);
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let token_file = dir.join("control-token");
        std::fs::write(&token_file, format!("{TOKEN}\n")).expect("the token file");
        let token_file = token_file.to_string_lossy().into_owned();
        let shards = (0..shards)
            .map(|ordinal| {
                Some(spawn(&[
                    "fleet",
                    "--nodes",
                    &total,
                    "--node-name",
                    prefix,
                    "--shard",
                    &ordinal.to_string(),
                    "--shard-lease-duration",
                    pace.shard_lease,
                    "--node-lease-duration",
                    pace.node_lease,
                    "--node-status-update-frequency",
                    pace.node_status,
                    "--server",
                    &url,
                    "--logic",
                    "v2",
                    "--control-addr",
                    &controls[ordinal].to_string(),
                    "--control-token-file",
                    &token_file,
                    "--quiet",
                ]))
            })
            .collect();
        let fleet = ShardedFleet { api, prefix, nodes, server: Some(server), shards, controls };
        wait_until("every Node Ready", || fleet.all_ready());
        fleet
    }

    fn all_ready(&self) -> Option<()> {
        let (code, nodes) = request(self.api, "GET", "/api/v1/nodes", None)?;
        let ready = nodes["items"]
            .as_array()?
            .iter()
            .filter(|node| condition(node, "Ready").is_some_and(|c| c["status"] == "True"))
            .count();
        (code == 200 && ready == self.nodes).then_some(())
    }

    /// A pod named `round-N` on every node.
    fn create_pods(&self, round: &str) {
        for n in 0..self.nodes {
            let pod = json!({
                "metadata": {"name": format!("{round}-{n}"), "namespace": "default"},
                "spec": {"nodeName": format!("{}-{n}", self.prefix), "containers": [{"name": "app", "image": "nginx:1.27"}]}
            });
            // A loaded machine may leave a connection unanswered: try again, and a pod
            // the unanswered request created is there (409) as well as made (201).
            let created = (0..5).find_map(|attempt| {
                match request(self.api, "POST", "/api/v1/namespaces/default/pods", Some(&pod)) {
                    Some((201, _)) => Some(()),
                    Some((409, _)) if attempt > 0 => Some(()),
                    Some((code, answer)) => panic!("{code}: {answer}"),
                    None => {
                        std::thread::sleep(std::time::Duration::from_secs(1));
                        None
                    }
                }
            });
            created.unwrap_or_else(|| panic!("no answer to the creation of {round}-{n}"));
        }
    }

    /// Whether every pod of `round` is Running and Ready.
    fn running(&self, round: &str) -> Option<()> {
        for n in 0..self.nodes {
            let (_, pod) = request(self.api, "GET", &format!("/api/v1/namespaces/default/pods/{round}-{n}"), None)?;
            let ready = condition(&pod, "Ready").is_some_and(|c| c["status"] == "True");
            (pod.pointer("/status/phase")? == "Running" && ready).then_some(())?;
        }
        Some(())
    }

    /// Creates a rollout of the plugin file `plugin` (its digest `sha256`, or the
    /// file's own), labelled `name`, decided by the leader after `watch`.
    fn roll_out(&self, rollout: &str, plugin: &str, sha256: Option<String>, watch: &str) {
        self.roll_out_spec(rollout, plugin, sha256, json!({"watch": watch}));
    }

    /// As [`Self::roll_out`], with `more` of the spec (its `watch`, `manual`).
    fn roll_out_spec(&self, rollout: &str, plugin: &str, sha256: Option<String>, more: Value) {
        let file = workspace().join("target/guest").join(format!("{plugin}.wasm"));
        let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let digest = sha256.unwrap_or_else(|| hex(&Sha256::digest(&bytes)));
        let mut object = json!({
            "apiVersion": "podstatus.io/v1alpha1", "kind": "PluginRollout",
            "metadata": {"name": rollout, "namespace": "default"},
            "spec": {
                "fleet": self.prefix,
                "plugin": {"sha256": digest, "name": plugin, "file": file.to_string_lossy()},
                // The time criteria loose: a canary of a few nodes judged on a few
                // updates of a freshly swapped plugin on a busy test machine measures
                // the machine; calls per version (what rolls v1 back) is exact.
                "canary": "20%", "criteria": {"minSamples": 3, "maxSlowdown": 20, "maxP99Ratio": 20}
            }
        });
        for (key, value) in more.as_object().expect("spec fields") {
            object["spec"][key] = value.clone();
        }
        let (code, answer) = request(self.api, "POST", ROLLOUTS, Some(&object)).expect("an answer");
        assert_eq!(code, 201, "{answer}");
    }

    /// The rollout's status once its phase is final; its last status, and every shard's
    /// view, if it never is. Every 10 s without a decision a pod more on every node: a
    /// canary needs samples, and one begun again (a shard that started again on a new
    /// share, as a loaded machine makes them) has none from pods already running.
    fn decided(&self, rollout: &str) -> Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        let mut more = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut round = 0;
        let mut last = Value::Null;
        while std::time::Instant::now() < deadline {
            if std::time::Instant::now() >= more {
                round += 1;
                self.create_pods(&format!("{rollout}-more-{round}"));
                more = std::time::Instant::now() + std::time::Duration::from_secs(10);
            }
            if let Some((_, object)) = request(self.api, "GET", &format!("{ROLLOUTS}/{rollout}"), None) {
                let phase = object.pointer("/status/phase").and_then(Value::as_str);
                if phase.is_some_and(|phase| phase != "Canary") {
                    return object["status"].clone();
                }
                last = object["status"].clone();
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        panic!(
            "rollout {rollout} not decided within 120s: {last:#}\nshards: {:?}\n{}",
            self.nodes_by_logic(),
            self.said_last()
        );
    }

    /// The identity of the leader once it watches `rollout`'s canary.
    fn leader_watching(&self, rollout: &str) -> String {
        wait_until("a leader watching the canary", || {
            let (_, object) = request(self.api, "GET", &format!("{ROLLOUTS}/{rollout}"), None)?;
            (object.pointer("/status/phase")? == "Canary").then_some(())?;
            object.pointer("/status/leader")?.as_str().map(str::to_owned)
        })
    }

    /// A canary on v3 promoted over every shard (watched for `watch`), then one on v1
    /// rolled back (watched long enough for the canary's pods to give calls-per-version
    /// samples, not only propagation ones, on a loaded machine), every node on v3 after
    /// each: the two rollouts' final statuses.
    fn promote_v3_then_roll_back_v1(&self, watch: &str) -> (Value, Value) {
        self.roll_out("to-v3", "podstatus-v3", None, watch);
        self.create_pods("first");
        let promoted = self.decided("to-v3");
        assert_eq!(promoted["phase"], "Promoted", "{promoted:#}\n{}", self.said_last());
        let over = format!("over {} shards", self.shards.len());
        assert!(promoted["decision"]["reason"].as_str().unwrap_or_default().contains(&over), "{promoted:#}");
        self.all_on("podstatus-v3");
        self.roll_out("to-v1", "podstatus-v1", None, "10s");
        self.create_pods("second");
        let rolled_back = self.decided("to-v1");
        assert_eq!(rolled_back["phase"], "RolledBack", "{rolled_back:#}");
        self.all_on("podstatus-v3");
        (promoted, rolled_back)
    }

    /// Rolls `plugin` out, kills the leader's shard once it watches the canary, creates
    /// the pods `during` meanwhile, and checks that another leader promoted it: the
    /// rollout's final status.
    fn promoted_by_the_next_leader(&mut self, rollout: &str, plugin: &str, watch: &str) -> Value {
        self.roll_out(rollout, plugin, None, watch);
        let leader = self.leader_watching(rollout);
        self.kill_shard_of(&leader);
        self.create_pods("during");
        let status = self.decided(rollout);
        assert_eq!(status["phase"], "Promoted", "{status:#}\n{}", self.said_last());
        let decided_by = status["decision"]["leader"].as_str().unwrap_or_default();
        assert!(!decided_by.is_empty() && decided_by != leader, "a new leader decided: {status:#}");
        status
    }

    /// Kills (SIGKILL) the shard whose identity is `holder` (`PREFIX-shard-O_SUFFIX`).
    fn kill_shard_of(&mut self, holder: &str) {
        let ordinal: usize = holder
            .strip_prefix(&format!("{}-shard-", self.prefix))
            .and_then(|rest| rest.split('_').next()?.parse().ok())
            .unwrap_or_else(|| panic!("{holder}"));
        let (mut killed, _) = self.shards[ordinal].take().expect("the holder's shard");
        killed.kill().expect("SIGKILL");
        killed.wait().expect("reaped");
    }

    /// Each live shard's nodes by the plugin they run (its control endpoint's view).
    fn nodes_by_logic(&self) -> Option<Vec<Value>> {
        let mut all = Vec::new();
        for (shard, control) in self.shards.iter().zip(&self.controls) {
            if shard.is_some() {
                let bearer = format!("Bearer {TOKEN}");
                let authorized = [("Authorization", bearer.as_str())];
                let (code, status) = request_with(*control, "GET", "/rollout", &authorized, None)?;
                (code == 200).then_some(())?;
                all.push(status["nodes_by_logic"].clone());
            }
        }
        Some(all)
    }

    /// Asks every live shard's control endpoint for a canary without the token and
    /// with another: each answers 401, and no node swaps.
    fn refuses_strangers(&self) {
        let before = wait_until("every shard's control endpoint answers", || self.nodes_by_logic());
        let canary = json!({"share": "50%", "to": "v1"});
        for (shard, control) in self.shards.iter().zip(&self.controls) {
            if shard.is_none() {
                continue;
            }
            for headers in [&[][..], &[("Authorization", "Bearer not-the-token-0123456789")][..]] {
                let answer = request_with(*control, "POST", "/rollout/canary", headers, Some(&canary));
                let (code, answer) = answer.expect("an answer");
                assert_eq!(code, 401, "{headers:?}: {answer}");
            }
        }
        assert_eq!(self.nodes_by_logic(), Some(before), "nothing swapped for a stranger");
    }

    /// Waits until every node of every live shard runs `label`, the shards' nodes
    /// adding up to the fleet's.
    fn all_on(&self, label: &str) {
        self.all_on_within(label, common::DEADLINE);
    }

    /// [`Self::all_on`] within `deadline` (shards of hundreds of nodes taking over a
    /// stopped one's start them again, each, in a debug build).
    /// Panics with the last views and what each live shard said last when it never
    /// comes.
    fn all_on_within(&self, label: &str, deadline: std::time::Duration) {
        let until = std::time::Instant::now() + deadline;
        let mut last = None;
        while std::time::Instant::now() < until {
            let views = self.nodes_by_logic();
            if let Some(views) = &views {
                let on: u64 = views.iter().filter_map(|v| v[label].as_u64()).sum();
                let whole = views.iter().all(|v| v.as_object().is_some_and(|o| o.len() == 1));
                if whole && on == self.nodes as u64 {
                    return;
                }
            }
            last = views;
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("every node on {label} within {deadline:?}; last views: {last:?}\n{}", self.said_last());
    }

    /// What each live shard said last (its last 40 lines of stderr not read yet).
    fn said_last(&self) -> String {
        let said: Vec<String> = self
            .shards
            .iter()
            .enumerate()
            .filter_map(|(ordinal, shard)| {
                let lines: Vec<String> = shard.as_ref()?.1.try_iter().collect();
                let tail = lines[lines.len().saturating_sub(40)..].join("\n");
                Some(format!("shard {ordinal} said last:\n{tail}"))
            })
            .collect();
        said.join("\n")
    }

    /// Stops every live shard (SIGTERM), each exiting 0 having flushed everything, then
    /// the server.
    fn stop(mut self) {
        for (shard, lines) in self.shards.iter_mut().filter_map(Option::take) {
            signal(&shard, libc::SIGTERM);
            let (code, stderr) = wait(shard, &lines);
            assert_eq!(code, Some(0), "stderr:\n{stderr}");
            assert!(stderr.contains("(flush done, 0 sync requests left unwritten)"), "{stderr}");
        }
        let (server, lines) = self.server.take().expect("the server");
        signal(&server, libc::SIGTERM);
        let (code, stderr) = wait(server, &lines);
        assert_eq!(code, Some(0), "serve's stderr:\n{stderr}");
    }
}

impl Drop for ShardedFleet {
    fn drop(&mut self) {
        for (mut child, _) in self.shards.iter_mut().filter_map(Option::take).chain(self.server.take()) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One sharded fleet at a time: the four shards of 250 nodes alone take both cores of
/// a 2-core machine, and a fleet beside them measures the machine.
static ONE_FLEET: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_fleet() -> std::sync::MutexGuard<'static, ()> {
    ONE_FLEET.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn a_fleet_wide_canary_is_promoted_another_rolled_back_and_a_wrong_digest_refused() {
    let _alone = one_fleet();
    let fleet = ShardedFleet::start("rolled", 4, 100);

    let (status, rolled_back) = fleet.promote_v3_then_roll_back_v1("3s");
    assert_eq!(status["decision"]["by"], "leader", "{status:#}");
    let shards = status["shards"].as_array().expect("reports");
    assert_eq!(shards.len(), 4, "every shard reported: {status:#}");
    assert!(shards.iter().all(|s| s["canaryNodes"].as_u64() > Some(0)), "the canary spans every shard: {status:#}");
    let reason = rolled_back["decision"]["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("api_calls_per_version"), "v1 reads before it writes: {rolled_back:#}");

    let v3 = std::fs::read(workspace().join("target/guest/podstatus-v3.wasm")).expect("v3");
    fleet.roll_out("wrong-bytes", "podstatus-v1", Some(hex(&Sha256::digest(&v3))), "3s");
    let status = fleet.decided("wrong-bytes");
    assert_eq!(status["phase"], "Refused", "{status:#}");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(message.contains("not the") && message.contains("the rollout names: refused"), "{status:#}");
    fleet.all_on("podstatus-v3");

    // Deleted before anyone decided it: its canary goes back at once, not at the next
    // rollout or restart.
    fleet.roll_out_spec("left-undecided", "podstatus-v4", None, json!({"manual": true}));
    wait_until("the manual canary on v4 in every shard", || {
        let views = fleet.nodes_by_logic()?;
        views.iter().all(|v| v["podstatus-v4"].as_u64() > Some(0)).then_some(())
    });
    let (code, answer) = request(fleet.api, "DELETE", &format!("{ROLLOUTS}/left-undecided"), None).expect("an answer");
    assert_eq!(code, 200, "{answer}");
    fleet.all_on("podstatus-v3");

    for round in ["first", "second"] {
        wait_until(&format!("every {round} pod Running and Ready"), || fleet.running(round));
    }
    fleet.stop();
}

#[test]
fn the_leaders_shard_killed_mid_rollout_leaves_the_decision_to_the_next_leader() {
    let _alone = one_fleet();
    let mut fleet = ShardedFleet::start("leaderless", 4, 20);
    let status = fleet.promoted_by_the_next_leader("to-v4", "podstatus-v4", "8s");
    assert!(status["decision"]["reason"].as_str().unwrap_or_default().contains("over 3 shards"), "{status:#}");
    fleet.all_on("podstatus-v4");
    wait_until("every Node Ready, the killed shard's taken over", || fleet.all_ready());
    wait_until("every pod Running and Ready", || fleet.running("during"));
    fleet.stop();
}

/// The scale: four shards of 250 nodes against one `podstatus serve`, paced as
/// a fleet is (node Leases of 40 s renewed every 10 s, a status report every 10 s).
/// Every Node Ready; a canary over every shard promoted and another rolled back; the
/// leader's shard killed mid-rollout and the rollout decided by the next leader; a
/// shard stopped as a StatefulSet scaled down stops its last pod, its nodes taken
/// over by the two left; every pod Running throughout; control requests without the
/// token refused 401 by every shard. (An identity without the right, 403, needs the
/// cluster's SubjectAccessReview: the kube-apiserver suite's four shards.)
#[test]
fn four_shards_of_250_nodes_roll_out_over_a_killed_leader_and_a_stopped_shard() {
    const SCALED: Pace = Pace { shard_lease: "10s", node_lease: "40s", node_status: "10s" };
    let _alone = one_fleet();
    let mut fleet = ShardedFleet::start_paced("quarters", 4, 1000, &SCALED);
    fleet.refuses_strangers();

    fleet.promote_v3_then_roll_back_v1("5s");

    fleet.promoted_by_the_next_leader("to-v4", "podstatus-v4", "15s");
    fleet.all_on("podstatus-v4");
    wait_until("every Node Ready, the killed shard's taken over", || fleet.all_ready());

    // Scaled down: the live shard of the highest ordinal stops cleanly.
    let last = (0..4).rev().find(|&o| fleet.shards[o].is_some()).expect("a live shard");
    let (stopped, lines) = fleet.shards[last].take().expect("live");
    signal(&stopped, libc::SIGTERM);
    let (code, stderr) = wait(stopped, &lines);
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    fleet.all_on_within("podstatus-v4", std::time::Duration::from_secs(300));
    wait_until("every Node Ready on the two shards left", || fleet.all_ready());
    for round in ["first", "second", "during"] {
        wait_until(&format!("every {round} pod Running and Ready"), || fleet.running(round));
    }
    fleet.stop();
}
