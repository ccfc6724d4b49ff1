//! `podstatus fleet`'s control endpoint guarded as an operator runs it: a token file and
//! TLS (`--control-token-file`, `--control-tls-cert-file`), against `podstatus serve`
//! in another process. Requests without the token, or with a wrong one, are answered
//! 401 and swap nothing; the token's holder starts a canary and promotes it. Options
//! that would leave the endpoint unguarded beyond loopback exit 2 before a node
//! starts. (403, a user the cluster knows without the right: kube_apiserver/fleet_control.rs.)

use serde_json::{Value, json};

mod common;

use common::{free_port, podstatus, request, request_tls, signal, spawn, wait, wait_until, workspace};

const TOKEN: &str = "fleet-operator-0123456789";

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = workspace().join("target/tmp/cli-fleet-control").join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

#[test]
fn a_guarded_control_endpoint_refuses_strangers_401_and_swaps_nothing_for_them() {
    let dir = scratch("guarded");
    let token_file = dir.join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).expect("the token file");
    let tls = workspace().join("tests/fixtures/tls");
    let ca = tls.join("ca.crt");

    let api = free_port();
    let (server, server_lines) = spawn(&["serve", "--listen", &api.to_string()]);
    wait_until("the API server answers", || request(api, "GET", "/version", None));
    let control = free_port();
    let url = format!("http://{api}");
    let (fleet, lines) = spawn(&[
        "fleet",
        "--nodes",
        "4",
        "--node-name",
        "guarded",
        "--server",
        &url,
        "--logic",
        "v2",
        "--control-addr",
        &control.to_string(),
        "--control-token-file",
        &token_file.to_string_lossy(),
        "--control-tls-cert-file",
        &tls.join("control.crt").to_string_lossy(),
        "--control-tls-private-key-file",
        &tls.join("control.key").to_string_lossy(),
        "--canary-manual",
        "--quiet",
    ]);
    let ask = |method: &str, path: &str, token: Option<&str>, body: Option<&Value>| {
        let authorization = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = authorization.iter().map(|a| ("Authorization", a.as_str())).collect();
        request_tls(control, &ca, method, path, &headers, body)
    };
    let (code, status) = wait_until("the control endpoint answers", || ask("GET", "/rollout", Some(TOKEN), None));
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["nodes_by_logic"], json!({"podstatus-v2": 4}), "{status}");

    let canary = json!({"share": "50%", "to": "v3"});
    for token in [None, Some("fleet-operator-012345678"), Some("")] {
        for (method, path, body) in [
            ("POST", "/rollout/canary", Some(&canary)),
            ("POST", "/rollout/promote", None),
            ("POST", "/rollout/rollback", None),
            ("GET", "/rollout", None),
        ] {
            let (code, answer) = ask(method, path, token, body).expect("an answer");
            assert_eq!(code, 401, "{token:?} {method} {path}: {answer}");
            assert_eq!(answer["code"], 401, "{answer}");
        }
    }
    let (_, status) = ask("GET", "/rollout", Some(TOKEN), None).expect("an answer");
    assert_eq!(
        (&status["state"], &status["nodes_by_logic"]),
        (&json!("idle"), &json!({"podstatus-v2": 4})),
        "{status}"
    );
    // In clear to the TLS endpoint: no HTTP answer at all.
    assert!(request(control, "GET", "/rollout", None).is_none_or(|(code, _)| code != 200));

    let (code, status) = ask("POST", "/rollout/canary", Some(TOKEN), Some(&canary)).expect("an answer");
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["nodes_by_logic"], json!({"podstatus-v2": 2, "podstatus-v3": 2}), "{status}");
    let (code, _) = ask("POST", "/rollout/rollback", Some("wrong"), None).expect("an answer");
    assert_eq!(code, 401);
    let (code, status) = ask("POST", "/rollout/promote", Some(TOKEN), None).expect("an answer");
    assert_eq!(code, 200, "{status}");
    assert_eq!((&status["state"], &status["nodes_by_logic"]), (&json!("promoted"), &json!({"podstatus-v3": 4})));

    signal(&fleet, libc::SIGTERM);
    let (code, stderr) = wait(fleet, &lines);
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    assert!(stderr.contains(&format!("control endpoint on https://{control}/rollout")), "{stderr}");
    assert!(!stderr.contains(TOKEN), "the token is never logged: {stderr}");
    signal(&server, libc::SIGTERM);
    let (code, stderr) = wait(server, &server_lines);
    assert_eq!(code, Some(0), "serve's stderr:\n{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_endpoint_left_unguarded_beyond_loopback_exits_2_before_a_node_starts() {
    let dir = scratch("unguarded");
    let token_file = dir.join("token");
    std::fs::write(&token_file, TOKEN).expect("the token file");
    let empty = dir.join("empty");
    std::fs::write(&empty, "\n").expect("an empty token file");
    let (token, empty) = (token_file.to_string_lossy().into_owned(), empty.to_string_lossy().into_owned());
    let tls = workspace().join("tests/fixtures/tls");
    let (cert, other_key) =
        (tls.join("control.crt").to_string_lossy().into_owned(), tls.join("other.key").to_string_lossy().into_owned());
    let cases: [(&[&str], &str); 7] = [
        (&["--control-addr", "0.0.0.0:0"], "needs --control-token-file or --control-auth kubernetes there"),
        (&["--control-addr", "0.0.0.0:0", "--control-token-file", &token], "needs --control-tls-cert-file"),
        (&["--control-token-file", "/nonexistent/token"], "--control-token-file: /nonexistent/token"),
        (&["--control-token-file", &empty], "empty: a token file holds one token"),
        (&["--control-auth", "kubernetes"], "--control-auth kubernetes: needs a cluster"),
        (&["--control-tls-cert-file", &cert], "--control-tls-private-key-file"),
        (&["--control-tls-cert-file", &cert, "--control-tls-private-key-file", &other_key], "the certificate and key"),
    ];
    for (args, says) in cases {
        let out = podstatus(&[&["fleet", "--nodes", "2", "--listen", "127.0.0.1:0"], args].concat())
            .output()
            .expect("podstatus runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {says:?} in {stderr}");
        assert!(!stderr.contains("2 nodes"), "refused before a node started: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
