//! kubectl against the embedded API server: `get pods -o wide`, `get pod X -o json`,
//! `delete pod X` (immediate for an unbound pod, graceful for a bound one), `get pods
//! -w` seeing a status written to the store, and as users start: `apply -f`, `create
//! -f` and `explain` without extra flags (kubectl reads the server's OpenAPI documents
//! first and has the server validate fields: a typo is refused, not dropped).
//!
//! Uses the `kubectl` on the PATH (`.ci/run` makes sure there is one), isolated from any
//! user configuration: `KUBECONFIG=/dev/null` and a scratch `HOME`.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use podstatus_apiserver::EmbeddedApiServer;
use podstatus_backends::{ApiServer, DeleteOptions, MemoryApiServer, StatusUpdate};
use podstatus_tests::kubectl;
use serde_json::json;

/// Generous: bounds waits for kubectl, never measures them.
const PATIENCE: Duration = Duration::from_secs(60);

/// A served store with a bound, running pod "web" and an unbound pod "loose".
struct Fixture {
    kubectl: PathBuf,
    server: EmbeddedApiServer,
    home: PathBuf,
}

impl Fixture {
    fn new(name: &str) -> Self {
        let kubectl = kubectl();
        let store = Arc::new(MemoryApiServer::with_graceful_deletion());
        store.create_pod(pod("web", "node-1", "10.1.2.3")).expect("create web");
        store.create_pod(pod("loose", "", "")).expect("create loose");
        let server = EmbeddedApiServer::start(store, "127.0.0.1:0".parse().expect("addr")).expect("server starts");
        let home = std::env::temp_dir().join(format!("podstatus-kubectl-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&home).expect("scratch HOME");
        Self { kubectl, server, home }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.kubectl);
        command
            .args(["--server", &self.server.url(), "--request-timeout=20s", "--namespace", "default"])
            .args(args)
            .env("KUBECONFIG", "/dev/null")
            .env("HOME", &self.home)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env_remove("KUBERNETES_SERVICE_PORT")
            .stdin(Stdio::null());
        command
    }

    fn run(&self, args: &[&str]) -> String {
        let output: Output = self.command(args).output().expect("kubectl runs");
        let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(output.status.success(), "kubectl {args:?} failed ({}):\n{stdout}\n{stderr}", output.status);
        stdout.into_owned()
    }

    fn store(&self) -> &Arc<MemoryApiServer> {
        self.server.store()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

fn pod(name: &str, node: &str, ip: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                     "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": "app:1"}]},
        "status": {"phase": "Running", "podIP": ip, "containerStatuses": [
            {"name": "app", "ready": true, "restartCount": 1, "image": "app:1", "imageID": "",
             "state": {"running": {}}}]}
    }))
    .expect("a pod")
}

#[test]
fn get_pods_wide_shows_ip_and_node() {
    let fixture = Fixture::new("wide");
    let out = fixture.run(&["get", "pods", "-o", "wide"]);
    let mut lines = out.lines();
    let header: Vec<_> = lines.next().expect("a header").split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"]
    );
    let rows: Vec<Vec<_>> = lines.map(|line| line.split_whitespace().collect()).collect();
    let web = rows.iter().find(|row| row[0] == "web").unwrap_or_else(|| panic!("no web row:\n{out}"));
    assert_eq!((web[1], web[2], web[3]), ("1/1", "Running", "1"));
    assert_eq!((web[5], web[6], web[7], web[8]), ("10.1.2.3", "node-1", "<none>", "<none>"), "{out}");
    let loose = rows.iter().find(|row| row[0] == "loose").unwrap_or_else(|| panic!("no loose row:\n{out}"));
    assert_eq!((loose[5], loose[6]), ("<none>", "<none>"));
}

#[test]
fn get_pod_as_json_is_the_stored_pod() {
    let fixture = Fixture::new("json");
    let out = fixture.run(&["get", "pod", "web", "-o", "json"]);
    let pod: serde_json::Value = serde_json::from_str(&out).expect("kubectl prints JSON");
    assert_eq!(pod["metadata"]["uid"], "uid-web");
    assert_eq!(pod["status"]["podIP"], "10.1.2.3");
    let missing = fixture.command(&["get", "pod", "nope"]).output().expect("kubectl runs");
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("pods \"nope\" not found"));
}

#[test]
fn delete_pod_removes_an_unbound_pod_and_waits_out_a_graceful_one() {
    let fixture = Fixture::new("delete");
    let out = fixture.run(&["delete", "pod", "loose"]);
    assert!(out.contains("pod \"loose\" deleted"), "{out}");
    assert!(fixture.store().get_pod("default", "loose").is_err());

    // A bound pod is only marked; kubectl waits until it is gone. Play the kubelet: once
    // the deletion timestamp is there, delete with grace 0 and the UID precondition.
    let store = Arc::clone(fixture.store());
    let kubelet = std::thread::spawn(move || {
        let deadline = Instant::now() + PATIENCE;
        while Instant::now() < deadline {
            if store.get_pod("default", "web").is_ok_and(|pod| pod.metadata.deletion_timestamp.is_some()) {
                let options = DeleteOptions {
                    uid_precondition: Some("uid-web".into()),
                    grace_period_seconds: Some(0),
                    ..Default::default()
                };
                return store.delete_pod("default", "web", &options).is_ok();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    });
    let out = fixture.run(&["delete", "pod", "web"]);
    assert!(out.contains("pod \"web\" deleted"), "{out}");
    assert!(kubelet.join().expect("kubelet thread"), "the pod was marked and then deleted");
    assert!(fixture.store().list_pods().is_empty());
}

#[test]
fn get_pods_watch_prints_a_status_change() {
    let fixture = Fixture::new("watch");
    let mut child = fixture
        .command(&["get", "pods", "-w", "-o", "wide"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let (lines, received) = mpsc::channel();
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let wait_for = |needle: &str| -> Result<String, String> {
        let deadline = Instant::now() + PATIENCE;
        let mut seen = Vec::new();
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match received.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return Ok(line),
                Ok(line) => seen.push(line),
                Err(_) => break,
            }
        }
        Err(format!("no line with {needle:?}; saw: {seen:#?}"))
    };
    let first = wait_for("10.1.2.3");
    // A status write to the store, as the status manager makes it.
    let mut status = fixture.store().get_pod("default", "web").expect("web").status.clone().expect("status");
    status.pod_ip = Some("10.9.9.9".into());
    let update = StatusUpdate { namespace: "default".into(), name: "web".into(), status, ..Default::default() };
    fixture.store().update_pod_status(update).expect("status write");
    let changed = wait_for("10.9.9.9");
    child.kill().expect("kill kubectl");
    let stderr = child.wait_with_output().map(|o| String::from_utf8_lossy(&o.stderr).into_owned()).unwrap_or_default();
    reader.join().expect("reader");
    let first = first.unwrap_or_else(|e| panic!("{e}\nstderr: {stderr}"));
    let changed = changed.unwrap_or_else(|e| panic!("{e}\nstderr: {stderr}"));
    assert!(first.starts_with("web "), "{first}");
    assert!(changed.starts_with("web ") && changed.contains("node-1"), "{changed}");
}

/// A manifest as users write one: no status, no node.
const POD_YAML: &str = "apiVersion: v1
kind: Pod
metadata:
  name: NAME
  labels:
    app: demo
spec:
  containers:
  - name: app
    image: nginx:1.27
";

impl Fixture {
    /// `POD_YAML` for pod `name`, written to a file; its path.
    fn manifest(&self, name: &str, yaml: &str) -> String {
        let path = self.home.join(format!("{name}.yaml"));
        std::fs::write(&path, yaml.replace("NAME", name)).expect("manifest written");
        path.to_str().expect("a UTF-8 path").to_owned()
    }

    /// kubectl's exit, stdout and stderr (for the commands expected to fail).
    fn attempt(&self, args: &[&str]) -> (bool, String, String) {
        let output = self.command(args).output().expect("kubectl runs");
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        (output.status.success(), text(&output.stdout), text(&output.stderr))
    }
}

/// The STATUS column of `name` in `kubectl get pods`.
fn status_of(out: &str, name: &str) -> String {
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().expect("a header").split_whitespace().collect();
    let column = header.iter().position(|h| *h == "STATUS").expect("a STATUS column");
    let row = lines.map(|l| l.split_whitespace().collect::<Vec<_>>()).find(|row| row[0] == name);
    row.unwrap_or_else(|| panic!("no row {name}:\n{out}"))[column].to_owned()
}

#[test]
fn apply_creates_then_leaves_an_unchanged_pod_alone_and_get_shows_it_pending() {
    let fixture = Fixture::new("apply");
    let manifest = fixture.manifest("demo", POD_YAML);
    let out = fixture.run(&["apply", "-f", &manifest]);
    assert!(out.contains("pod/demo created"), "{out}");
    let stored = fixture.store().get_pod("default", "demo").expect("created");
    assert!(
        stored
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key("kubectl.kubernetes.io/last-applied-configuration")),
        "apply records what it applied"
    );
    assert_eq!(status_of(&fixture.run(&["get", "pods"]), "demo"), "Pending", "a pod on no node is Pending");

    let out = fixture.run(&["apply", "-f", &manifest]);
    assert!(out.contains("pod/demo unchanged"), "{out}");
    let relabelled = fixture.manifest("demo", &POD_YAML.replace("app: demo", "app: demo2"));
    let out = fixture.run(&["apply", "-f", &relabelled]);
    assert!(out.contains("pod/demo configured"), "{out}");
    let labels = fixture.store().get_pod("default", "demo").expect("there").metadata.labels.clone();
    assert_eq!(labels.and_then(|l| l.get("app").cloned()).as_deref(), Some("demo2"));

    // A new image: kubectl sends a strategic merge patch of that container alone (by
    // name); its ports stay.
    let with_ports =
        POD_YAML.replace("    image: nginx:1.27\n", "    image: nginx:1.27\n    ports:\n    - containerPort: 80\n");
    let served = fixture.manifest("web2", &with_ports);
    assert!(fixture.run(&["apply", "-f", &served]).contains("pod/web2 created"));
    let upgraded = fixture.manifest("web2", &with_ports.replace("nginx:1.27", "nginx:1.28"));
    let out = fixture.run(&["apply", "-f", &upgraded]);
    assert!(out.contains("pod/web2 configured"), "{out}");
    let pod = fixture.store().get_pod("default", "web2").expect("there");
    let container = &pod.spec.as_ref().expect("a spec").containers[0];
    assert_eq!(container.image.as_deref(), Some("nginx:1.28"));
    let ports = container.ports.as_ref().map(|ports| ports.iter().map(|p| p.container_port).collect::<Vec<_>>());
    assert_eq!(ports, Some(vec![80]), "the container merged by name, not replaced");
}

#[test]
fn create_refuses_a_field_the_kind_lacks_and_a_name_taken() {
    let fixture = Fixture::new("create");
    let manifest = fixture.manifest("made", POD_YAML);
    let out = fixture.run(&["create", "-f", &manifest]);
    assert!(out.contains("pod/made created"), "{out}");
    assert_eq!(status_of(&fixture.run(&["get", "pods"]), "made"), "Pending");
    let (created, _, stderr) = fixture.attempt(&["create", "-f", &manifest]);
    assert!(!created && stderr.contains("AlreadyExists"), "{stderr}");

    // kubectl sends fieldValidation=Strict (its default, --validate=strict) once the
    // OpenAPI document says the server takes it, and checks nothing itself.
    let typo = fixture.manifest("typo", &POD_YAML.replace("    image:", "    imagee:"));
    let (created, _, stderr) = fixture.attempt(&["create", "-f", &typo]);
    assert!(!created, "a typo is refused");
    assert!(stderr.contains("strict decoding error: unknown field \"spec.containers[0].imagee\""), "{stderr}");
    assert!(fixture.store().get_pod("default", "typo").is_err(), "and nothing was written");
    // --validate=warn: written, the field dropped, the warning printed.
    let (created, _, stderr) = fixture.attempt(&["create", "--validate=warn", "-f", &typo]);
    assert!(created, "{stderr}");
    assert!(stderr.contains("unknown field \"spec.containers[0].imagee\""), "{stderr}");
    // A dry run this server cannot make is refused, never made for real.
    let other = fixture.manifest("dry", POD_YAML);
    let (created, _, stderr) = fixture.attempt(&["create", "--dry-run=server", "-f", &other]);
    assert!(!created && stderr.contains("dryRun"), "{stderr}");
    assert!(fixture.store().get_pod("default", "dry").is_err());
}

#[test]
fn explain_reads_kubernetes_own_words_from_both_documents() {
    let fixture = Fixture::new("explain");
    // OpenAPI v3 (kubectl's default).
    let out = fixture.run(&["explain", "pods"]);
    assert!(out.contains("KIND:") && out.contains("Pod"), "{out}");
    assert!(out.contains("Pod is a collection of containers that can run on a host."), "{out}");
    let out = fixture.run(&["explain", "pods.spec.containers.image"]);
    assert!(out.contains("Container image name."), "{out}");
    let out = fixture.run(&["explain", "leases.spec"]);
    assert!(out.contains("holderIdentity"), "{out}");
    // OpenAPI v2, as protobuf (what client-go asks /openapi/v2 for).
    let out = fixture.run(&["explain", "pods.status.phase", "--output", "plaintext-openapiv2"]);
    assert!(out.contains("FIELD:") && out.contains("phase"), "{out}");
    assert!(out.contains("The phase of a Pod"), "{out}");
    // A kind this server does not serve has no document.
    let (explained, _, stderr) = fixture.attempt(&["explain", "deployments"]);
    assert!(!explained, "{stderr}");
}
