//! Who may use the fleet's control endpoint, byte for byte over TCP and TLS: a request
//! without a credential the endpoint knows is answered 401, one whose user may not do
//! it 403, one that could not be reviewed 503, and none of them reaches the fleet's
//! loop; the token file's holder and an allowed user's commands do, with the verb each
//! asked for reviewed. Beyond loopback the endpoint refuses to listen unguarded. (The
//! same through `podstatus fleet`: host/cli/tests/fleet_control.rs; the real
//! TokenReview and SubjectAccessReview: host/cli/tests/kube_apiserver/fleet_control.rs.)

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use podstatus_agent::rollout::{
    Access, AccessReviewer, AuthenticatedBy, ControlAccess, ControlAction, ControlCommand, ControlLimits,
    ControlServeError, ControlServer, ControlTls, ControlToken, Identity, ReviewError, RolloutError, UnguardedListen,
};
use serde_json::Value;

use crate::raw_http::{Reply, connect, http, read_reply};

/// A reviewer that knows two users by their tokens, lets `alice` do everything and
/// `bob` only read, fails every review of the token `outage`, and records what it was
/// asked.
#[derive(Default)]
struct FakeReviewer {
    asked: Mutex<Vec<(String, &'static str)>>,
}

impl FakeReviewer {
    fn asked(&self) -> Vec<(String, &'static str)> {
        self.asked.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl AccessReviewer for FakeReviewer {
    fn review_token<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Option<Identity>, ReviewError>> {
        Box::pin(async move {
            let user = match token {
                "alice-token" => "alice",
                "bob-token" => "bob",
                "outage" => return Err(ReviewError::Timeout(Duration::from_secs(10))),
                _ => return Ok(None),
            };
            Ok(Some(Identity {
                user: user.into(),
                groups: vec!["system:authenticated".into()],
                uid: None,
                extra: Default::default(),
                by: AuthenticatedBy::Kubernetes,
            }))
        })
    }

    fn review_access<'a>(
        &'a self,
        identity: &'a Identity,
        action: &'a ControlAction,
    ) -> BoxFuture<'a, Result<Access, ReviewError>> {
        Box::pin(async move {
            self.asked.lock().unwrap_or_else(PoisonError::into_inner).push((identity.user.clone(), action.verb));
            if identity.user == "alice" || action.verb == "get" {
                Ok(Access::Allowed)
            } else {
                Ok(Access::Denied { reason: "RBAC: no rule allows it".into() })
            }
        })
    }
}

fn serve(access: ControlAccess) -> (ControlServer, tokio::runtime::Runtime) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
    let server =
        ControlServer::start("127.0.0.1:0".parse().expect("addr"), access, ControlLimits::default(), runtime.handle())
            .expect("the control endpoint starts");
    (server, runtime)
}

fn refused(reply: &Reply, code: u16, says: &str) -> Value {
    let body = reply.json();
    assert_eq!(reply.code, code, "{body}");
    assert!(body["error"].as_str().unwrap_or_default().contains(says), "{says:?} in {body}");
    body
}

/// A request the fleet's loop answers (as the test's loop, "not watching"), returning
/// the command the loop got and who sent it.
fn answered(server: &ControlServer, ask: impl FnOnce() -> Reply + Send + 'static) -> (ControlCommand, Identity, Reply) {
    let asking = std::thread::spawn(ask);
    let request = podstatus_backends::testing::wait_for(
        "the command at the fleet's loop",
        Duration::from_secs(30),
        Duration::from_millis(10),
        || server.next_request(),
    );
    let (command, identity) = (request.command.clone(), request.identity.clone());
    request.answer(Err(RolloutError::NotWatching.into()));
    (command, identity, asking.join().expect("the client"))
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

#[test]
fn the_token_files_holder_is_let_in_and_everyone_else_is_answered_401() {
    let (server, _runtime) = serve(ControlAccess::open().with_token(ControlToken::new(b"operator-s3cret")));
    let addr = server.local_addr();
    let unauthorized = |reply: &Reply, says: &str| {
        refused(reply, 401, says);
        assert_eq!(reply.header("www-authenticate"), Some("Bearer realm=\"podstatus-fleet\""));
    };
    unauthorized(&http(addr, "POST", "/rollout/promote", &[], b""), "no bearer token");
    let wrong = bearer("operator-s3cre");
    unauthorized(&http(addr, "POST", "/rollout/promote", &[("Authorization", &wrong)], b""), "not the control token");
    unauthorized(
        &http(addr, "POST", "/rollout/promote", &[("Authorization", "Basic b3BlcmF0b3I6czNjcmV0")], b""),
        "only bearer tokens",
    );
    // A stranger learns nothing of the paths or methods either.
    unauthorized(&http(addr, "GET", "/nodes", &[], b""), "no bearer token");
    unauthorized(&http(addr, "DELETE", "/rollout", &[], b""), "no bearer token");
    // A refused request's body is never read, and the answer still arrives whole.
    let canary = br#"{"share": "10%", "to": "v3"}"#;
    unauthorized(&http(addr, "POST", "/rollout/canary", &[("Authorization", &wrong)], canary), "not the control token");
    let padded = vec![b' '; 3000];
    unauthorized(&http(addr, "POST", "/rollout/canary", &[], &padded), "no bearer token");
    // A token over the limit is refused unread.
    let long = bearer(&"t".repeat(podstatus_agent::rollout::MAX_BEARER_BYTES + 1));
    unauthorized(&http(addr, "GET", "/rollout", &[("Authorization", &long)], b""), "over the limit of 8192 bytes");
    assert!(server.next_request().is_none(), "no refused request reached the fleet");

    let right = bearer("operator-s3cret");
    let (command, identity, reply) =
        answered(&server, move || http(addr, "POST", "/rollout/promote", &[("Authorization", &right)], b""));
    assert_eq!(command, ControlCommand::Promote);
    assert_eq!((identity.user.as_str(), identity.by), ("podstatus:control-token", AuthenticatedBy::TokenFile));
    refused(&reply, 409, "no canary is being watched");
}

#[test]
fn kubernetes_users_are_reviewed_for_the_verb_of_each_command() {
    let reviewer = Arc::new(FakeReviewer::default());
    let access = ControlAccess::open()
        .with_reviewer(Arc::clone(&reviewer) as Arc<dyn AccessReviewer>)
        .with_rollout_name("web".into());
    let (server, _runtime) = serve(access);
    let addr = server.local_addr();
    let as_user = |token: &str| bearer(token);

    // Unknown to the API server: 401. A review that fails: 503. Neither is asked about
    // access.
    refused(&http(addr, "GET", "/rollout", &[("Authorization", &as_user("mallory"))], b""), 401, "does not know");
    refused(&http(addr, "GET", "/rollout", &[("Authorization", &as_user("outage"))], b""), 503, "within 10s");
    // bob may read, not decide nor start: 403, and the review named the verb.
    let bob = as_user("bob-token");
    refused(&http(addr, "POST", "/rollout/promote", &[("Authorization", &bob)], b""), 403, "bob may not update");
    refused(&http(addr, "POST", "/rollout/rollback", &[("Authorization", &bob)], b""), 403, "RBAC: no rule allows it");
    let canary = br#"{"share": "10%", "to": "v3"}"#;
    refused(&http(addr, "POST", "/rollout/canary", &[("Authorization", &bob)], canary), 403, "bob may not create");
    assert!(server.next_request().is_none(), "no refused request reached the fleet");
    let (command, identity, _) =
        answered(&server, move || http(addr, "GET", "/rollout", &[("Authorization", &bob)], b""));
    assert_eq!(
        (command, identity.user.as_str(), identity.by),
        (ControlCommand::Status, "bob", AuthenticatedBy::Kubernetes)
    );

    // alice may do everything.
    let alice = as_user("alice-token");
    let (command, identity, reply) = answered(&server, {
        let alice = alice.clone();
        move || http(addr, "POST", "/rollout/canary", &[("Authorization", &alice)], canary)
    });
    assert!(matches!(command, ControlCommand::Start(_)), "{command:?}");
    assert_eq!(identity.user, "alice");
    refused(&reply, 409, "no canary");
    let (command, _, _) =
        answered(&server, move || http(addr, "POST", "/rollout/rollback", &[("Authorization", &alice)], b""));
    assert_eq!(command, ControlCommand::RollBack);
    let asked = reviewer.asked();
    let expected = [
        ("bob", "update"),
        ("bob", "update"),
        ("bob", "create"),
        ("bob", "get"),
        ("alice", "create"),
        ("alice", "update"),
    ];
    let asked: Vec<(&str, &str)> = asked.iter().map(|(u, v)| (u.as_str(), *v)).collect();
    assert_eq!(asked, expected, "every command was reviewed for its own verb");
}

#[test]
fn a_token_file_and_kubernetes_together_each_admit_their_own() {
    let reviewer: Arc<dyn AccessReviewer> = Arc::new(FakeReviewer::default());
    let access = ControlAccess::open().with_token(ControlToken::new(b"operator")).with_reviewer(reviewer);
    let (server, _runtime) = serve(access);
    let addr = server.local_addr();
    let (_, identity, _) =
        answered(&server, move || http(addr, "POST", "/rollout/promote", &[("Authorization", "Bearer operator")], b""));
    assert_eq!(identity.by, AuthenticatedBy::TokenFile);
    let (_, identity, _) = answered(&server, move || {
        http(addr, "POST", "/rollout/promote", &[("Authorization", "Bearer alice-token")], b"")
    });
    assert_eq!(identity.by, AuthenticatedBy::Kubernetes);
    refused(&http(addr, "POST", "/rollout/promote", &[("Authorization", "Bearer bob-token")], b""), 403, "bob");
}

#[test]
fn beyond_loopback_an_unguarded_endpoint_refuses_to_listen() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let wide: SocketAddr = "0.0.0.0:0".parse().expect("addr");
    let start = |access| ControlServer::start(wide, access, ControlLimits::default(), runtime.handle());
    let open = start(ControlAccess::open()).err().expect("an open endpoint beyond loopback");
    assert!(matches!(open, ControlServeError::Unguarded(UnguardedListen::NoAuthentication(_))), "{open}");
    let clear = start(ControlAccess::open().with_token(ControlToken::new(b"t"))).err().expect("a token in clear");
    assert!(matches!(clear, ControlServeError::Unguarded(UnguardedListen::NoTls(_))), "{clear}");
    assert!(clear.to_string().contains("--control-tls-cert-file"), "{clear}");
    let guarded = start(ControlAccess::open().with_token(ControlToken::new(b"t")).with_tls(tls()));
    assert!(guarded.is_ok(), "a token and TLS: it listens");
}

fn tls() -> ControlTls {
    let dir = podstatus_tests::fixtures_dir().join("tls");
    ControlTls::from_pem_files(&dir.join("control.crt"), &dir.join("control.key")).expect("the fixture's pair")
}

/// One request over TLS, trusting the fixtures' CA.
fn https(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> Reply {
    let ca = std::fs::read(podstatus_tests::fixtures_dir().join("tls/ca.crt")).expect("the CA");
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&ca) {
        roots.add(cert.expect("a certificate")).expect("a root");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("a name");
    let session = rustls::ClientConnection::new(Arc::new(config), name).expect("a session");
    let mut stream = rustls::StreamOwned::new(session, connect(addr));
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("Content-Length: 0\r\n\r\n");
    stream.write_all(head.as_bytes()).expect("send over TLS");
    read_reply(&mut stream)
}

#[test]
fn over_tls_the_endpoint_authenticates_as_in_clear_and_plain_http_gets_nothing() {
    let access = ControlAccess::open().with_token(ControlToken::new(b"operator")).with_tls(tls());
    let (server, _runtime) = serve(access);
    let addr = server.local_addr();
    refused(&https(addr, "POST", "/rollout/promote", &[]), 401, "no bearer token");
    let (command, _, reply) =
        answered(&server, move || https(addr, "POST", "/rollout/promote", &[("Authorization", "Bearer operator")]));
    assert_eq!(command, ControlCommand::Promote);
    refused(&reply, 409, "no canary");
    // HTTP in clear to a TLS endpoint: the handshake fails, no answer, nothing done.
    let mut stream: TcpStream = connect(addr);
    write!(stream, "POST /rollout/promote HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer operator\r\n\r\n")
        .expect("send");
    let mut answer = Vec::new();
    let _ = std::io::Read::read_to_end(&mut stream, &mut answer);
    assert!(!answer.starts_with(b"HTTP/1.1 "), "no HTTP answer in clear: {:?}", String::from_utf8_lossy(&answer));
    assert!(server.next_request().is_none());
}

#[test]
fn tls_files_that_do_not_make_a_pair_are_refused() {
    let dir = podstatus_tests::fixtures_dir().join("tls");
    let mismatched =
        ControlTls::from_pem_files(&dir.join("control.crt"), &dir.join("other.key")).expect_err("mismatched");
    assert!(mismatched.to_string().contains("the certificate and key"), "{mismatched}");
    let no_cert = ControlTls::from_pem_files(&dir.join("control.key"), &dir.join("control.key")).expect_err("a key");
    assert!(no_cert.to_string().contains("no PEM certificate"), "{no_cert}");
    let no_key = ControlTls::from_pem_files(&dir.join("control.crt"), &dir.join("ca.crt")).expect_err("a certificate");
    assert!(no_key.to_string().contains("no PEM private key"), "{no_key}");
}
