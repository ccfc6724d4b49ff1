//! `podstatus fleet --control-auth kubernetes` against a real kube-apiserver: the fleet
//! asks the cluster who a bearer token is (TokenReview) and whether that user may act
//! on `pluginrollouts.podstatus.io` in the fleet's namespace (SubjectAccessReview),
//! with its own ServiceAccount bound to `system:auth-delegator`. Two ServiceAccounts
//! act as operators: `operator` may get, create and update rollouts, `viewer` may only
//! get them. Without a token or with one the cluster does not know: 401; the viewer
//! deciding: 403; and nothing is swapped by a refused request.

use serde_json::{Value, json};

use crate::cluster::Cluster;
use crate::common::{free_port, request_with, wait_until};

const NODES: usize = 4;

/// A Role of `verbs` on rollouts in `namespace`, bound to the ServiceAccount `name`
/// there, and a token of it.
pub(crate) fn operator(cluster: &Cluster, namespace: &str, name: &str, verbs: &[&str]) -> String {
    cluster.admin(&["create", "serviceaccount", name, "-n", namespace]);
    cluster.create(&json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": format!("rollout-{name}"), "namespace": namespace},
        "rules": [{"apiGroups": ["podstatus.io"], "resources": ["pluginrollouts"], "verbs": verbs}],
    }));
    cluster.create(&json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": format!("rollout-{name}"), "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": format!("rollout-{name}")},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    }));
    cluster.admin(&["create", "token", name, "-n", namespace, "--duration", "1h"]).trim().to_owned()
}

#[test]
fn the_cluster_says_who_may_use_the_control_endpoint_401_403_or_allowed() {
    let cluster = Cluster::start("fleet-control", &[], |_| {});
    let kubeconfig = crate::fleet::service_account_kubeconfig(&cluster);
    cluster.admin(&[
        "create",
        "clusterrolebinding",
        "podstatus-fleet-auth-delegator",
        "--clusterrole=system:auth-delegator",
        "--serviceaccount=podstatus:podstatus-agent",
    ]);
    let operator_token = operator(&cluster, "podstatus", "operator", &["get", "create", "update"]);
    let viewer_token = operator(&cluster, "podstatus", "viewer", &["get"]);

    let control = free_port();
    let nodes = NODES.to_string();
    let fleet = crate::cluster::Process::spawn(&[
        "fleet",
        "--nodes",
        &nodes,
        "--node-name",
        "guarded",
        "--kubeconfig",
        &kubeconfig.to_string_lossy(),
        "--logic",
        "v2",
        "--control-addr",
        &control.to_string(),
        "--control-auth",
        "kubernetes",
        "--canary-manual",
        "--quiet",
    ]);
    cluster.wait_ready_nodes(NODES, &[]);
    let ask = |method: &str, path: &str, token: Option<&str>, body: Option<&Value>| {
        let authorization = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = authorization.iter().map(|a| ("Authorization", a.as_str())).collect();
        request_with(control, method, path, &headers, body)
    };
    let (code, status) =
        wait_until("the control endpoint answers", || ask("GET", "/rollout", Some(&viewer_token), None));
    assert_eq!(code, 200, "the viewer may read: {status}");
    assert_eq!(status["nodes_by_logic"], json!({"podstatus-v2": NODES}), "{status}");

    let canary = json!({"share": "50%", "to": "v3"});
    let (code, answer) = ask("POST", "/rollout/canary", None, Some(&canary)).expect("an answer");
    assert_eq!(code, 401, "no token: {answer}");
    let (code, answer) =
        ask("POST", "/rollout/canary", Some("not-a-token-the-cluster-issued"), Some(&canary)).expect("an answer");
    assert_eq!(code, 401, "a token the cluster does not know: {answer}");
    let (code, answer) = ask("POST", "/rollout/canary", Some(&viewer_token), Some(&canary)).expect("an answer");
    assert_eq!(code, 403, "the viewer may not create: {answer}");
    let says = answer["error"].as_str().unwrap_or_default();
    assert!(says.contains("system:serviceaccount:podstatus:viewer may not create pluginrollouts"), "{answer}");
    let (_, status) = ask("GET", "/rollout", Some(&operator_token), None).expect("an answer");
    assert_eq!((&status["state"], &status["nodes_by_logic"]), (&json!("idle"), &json!({"podstatus-v2": NODES})));

    let (code, status) = ask("POST", "/rollout/canary", Some(&operator_token), Some(&canary)).expect("an answer");
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["nodes_by_logic"], json!({"podstatus-v2": 2, "podstatus-v3": 2}), "{status}");
    let (code, answer) = ask("POST", "/rollout/rollback", Some(&viewer_token), None).expect("an answer");
    assert_eq!(code, 403, "the viewer may not update: {answer}");
    let (code, status) = ask("POST", "/rollout/promote", Some(&operator_token), None).expect("an answer");
    assert_eq!(code, 200, "{status}");
    assert_eq!((&status["state"], &status["nodes_by_logic"]), (&json!("promoted"), &json!({"podstatus-v3": NODES})));

    let (code, stderr) = fleet.stop();
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    assert!(!stderr.contains(&operator_token), "no token is logged");
}
