//! Where a node agent's pods come from, for real: a kube-rs list + watch of the pods
//! bound to the node, and static pods from a manifest folder with their mirror pods in
//! the API server, both against the embedded API server over HTTP. A dropped watch
//! connection is resumed without a list; only an expired one (410) lists again.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use podstatus_agent::node::PodWatch;
use podstatus_agent::node::{CONFIG_HASH_ANNOTATION, ManifestError, StaticPods};
use podstatus_apiserver::{EmbeddedApiServer, ServeOptions};
use podstatus_backends::PodManager;
use podstatus_backends::pod_identity::{CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION};
use podstatus_backends::testing::running_update;
use podstatus_backends::{ApiServer, MemoryApiServer};
use podstatus_tests::TestPod;

const NODE: &str = "node-a";
/// Generous: a loaded CI machine may be slow, and nothing here waits this long when it
/// works.
const DEADLINE: Duration = Duration::from_secs(30);

/// An embedded API server, a runtime for the client's I/O and a client.
struct Cluster {
    server: EmbeddedApiServer,
    runtime: tokio::runtime::Runtime,
    client: kube::Client,
}

impl Cluster {
    fn start() -> Cluster {
        Self::start_with(ServeOptions::default())
    }

    fn start_with(options: ServeOptions) -> Cluster {
        let addr = "127.0.0.1:0".parse().expect("addr");
        let server = EmbeddedApiServer::start_with(Arc::new(MemoryApiServer::new()), addr, options)
            .expect("the embedded server starts");
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
        let client = {
            // The client's connection pool spawns onto the current runtime.
            let _entered = runtime.enter();
            kube::Client::try_from(kube::Config::new(server.url().parse().expect("url"))).expect("client")
        };
        Cluster { server, runtime, client }
    }

    fn store(&self) -> &Arc<MemoryApiServer> {
        self.server.store()
    }

    fn watch(&self, pod_manager: &Arc<PodManager>) -> PodWatch {
        let watch =
            PodWatch::start(self.client.clone(), "test-server", NODE, Arc::clone(pod_manager), self.runtime.handle());
        assert!(watch.wait_synced(DEADLINE), "the first list arrives");
        watch
    }
}

fn pod(name: &str, uid: &str, node: &str) -> Pod {
    TestPod::new(name, uid).node(node).container("c").build()
}

/// Waits until `done` holds, failing with `what` after [`DEADLINE`].
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata.annotations.as_ref()?.get(key).map(String::as_str)
}

#[test]
fn pod_manager_follows_the_pods_bound_to_the_node() {
    let cluster = Cluster::start();
    let store = cluster.store();
    store.create_pod(pod("before", "u0", NODE)).expect("create");
    store.create_pod(pod("elsewhere-before", "x0", "node-b")).expect("create");
    let pod_manager = Arc::new(PodManager::new());
    let _watch = cluster.watch(&pod_manager);
    assert!(pod_manager.get_any("u0").is_some(), "listed before the watch");
    assert!(pod_manager.get_any("x0").is_none(), "another node's pod is not listed");

    // Events arrive in order: once `web` is in, `elsewhere` (created before it) was seen
    // and skipped.
    store.create_pod(pod("elsewhere", "x1", "node-b")).expect("create");
    store.create_pod(pod("web", "u1", NODE)).expect("create");
    eventually("the new pod is in the pod manager", || pod_manager.get_any("u1").is_some());
    assert!(pod_manager.get_any("x1").is_none(), "another node's pod stays out");

    let update = running_update("ns", "web");
    let written = store.update_pod_status(update).expect("status write");
    eventually("the pod manager holds the written copy", || {
        pod_manager
            .get_any("u1")
            .is_some_and(|held| held.resource_version() == written.metadata.resource_version.as_deref())
    });
    let held = pod_manager.get_any("u1").expect("held").pod().expect("parses");
    assert_eq!(held.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Running"));

    store.remove_pod("ns", "web").expect("delete");
    eventually("the deleted pod leaves the pod manager", || pod_manager.get_any("u1").is_none());
    assert!(pod_manager.get_any("u0").is_some(), "the other pod stays");
}

#[test]
fn stopping_the_watch_keeps_the_pods_and_stops_following() {
    let cluster = Cluster::start();
    let store = cluster.store();
    store.create_pod(pod("web", "u1", NODE)).expect("create");
    let pod_manager = Arc::new(PodManager::new());
    let watch = cluster.watch(&pod_manager);
    watch.stop();
    drop(watch);
    // Another watch, started after the pod below exists, proves the events flow; the
    // stopped one must not have removed anything meanwhile.
    store.remove_pod("ns", "web").expect("delete");
    let second_manager = Arc::new(PodManager::new());
    store.create_pod(pod("db", "u2", NODE)).expect("create");
    let _second = cluster.watch(&second_manager);
    assert!(second_manager.get_any("u2").is_some());
    assert!(pod_manager.get_any("u1").is_some(), "a stopped watch changes nothing");
    assert!(pod_manager.get_any("u2").is_none());
}

const ETCD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\n  namespace: kube-system\nspec:\n  containers:\n  - name: etcd\n    image: etcd:3.5\n";

fn manifest_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("podstatus-agent-pods-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("manifest dir");
    dir
}

fn mirror_in(store: &MemoryApiServer) -> Option<Arc<Pod>> {
    store.get_pod("kube-system", "etcd-node-a").ok()
}

fn static_uid(static_pods: &StaticPods, file: &Path) -> String {
    let report = static_pods.report();
    report.pods.iter().find(|(path, _)| path == file).map(|(_, uid)| uid.clone()).expect("the file's pod")
}

#[test]
fn static_pods_come_from_the_manifest_folder_with_mirror_pods() {
    let cluster = Cluster::start();
    let store = cluster.store();
    let dir = manifest_dir("static");
    let file = dir.join("etcd.yaml");
    std::fs::write(&file, ETCD).expect("write");
    std::fs::write(dir.join("notes.txt"), "not a manifest").expect("write");
    let pod_manager = Arc::new(PodManager::new());
    let _watch = cluster.watch(&pod_manager);
    let static_pods =
        StaticPods::start(&dir, NODE, cluster.client.clone(), Arc::clone(&pod_manager), cluster.runtime.handle())
            .expect("the folder is read");

    // The static pod, as the kubelet makes it.
    let static_uid_1 = static_uid(&static_pods, &file);
    let held = pod_manager.get_pod_by_uid(&static_uid_1).expect("the static pod is held").pod().expect("parses");
    assert_eq!(held.metadata.name.as_deref(), Some("etcd-node-a"));
    assert_eq!(annotation(&held, CONFIG_SOURCE_ANNOTATION), Some("file"));
    assert_eq!(annotation(&held, CONFIG_HASH_ANNOTATION), Some(static_uid_1.as_str()));
    assert!(annotation(&held, "kubernetes.io/config.seen").is_some());
    assert_eq!(static_pods.report().errors, []);

    // Its mirror pod, written through the API server and paired by the pod manager.
    let mirror = mirror_in(store).expect("the mirror pod is created");
    let mirror_uid = mirror.metadata.uid.clone().expect("the API server gave it a UID");
    assert_ne!(mirror_uid, static_uid_1);
    assert_eq!(annotation(&mirror, CONFIG_MIRROR_ANNOTATION), Some(static_uid_1.as_str()));
    assert_eq!(mirror.spec.as_ref().and_then(|s| s.node_name.as_deref()), Some(NODE));
    eventually("the watch brings the mirror pod", || pod_manager.get_any(&mirror_uid).is_some());
    assert_eq!(pod_manager.translate_pod_uid(&mirror_uid), static_uid_1);
    assert_eq!(pod_manager.get_uid_translations().0.get(&static_uid_1), Some(&mirror_uid));

    // A bad manifest is reported with its file and skipped; the good one stays.
    let bad = dir.join("broken.yaml");
    std::fs::write(&bad, "apiVersion: v1\nkind: Pod\nmetadata: [not, a, map]\n").expect("write");
    let report = static_pods.rescan().expect("scan");
    assert!(matches!(&report.errors[..], [ManifestError::Parse { path, .. }] if *path == bad), "{report:?}");
    assert_eq!(report.pods.len(), 1);
    std::fs::remove_file(&bad).expect("remove");

    // A changed manifest is a new static pod with a new mirror pod.
    std::fs::write(&file, ETCD.replace("3.5", "3.6")).expect("rewrite");
    let report = static_pods.rescan().expect("scan");
    assert_eq!(report.errors, []);
    let static_uid_2 = static_uid(&static_pods, &file);
    assert_ne!(static_uid_2, static_uid_1);
    assert!(pod_manager.get_any(&static_uid_1).is_none(), "the old static pod is gone");
    assert!(pod_manager.get_pod_by_uid(&static_uid_2).is_some());
    let new_mirror = mirror_in(store).expect("a new mirror pod");
    assert_eq!(annotation(&new_mirror, CONFIG_MIRROR_ANNOTATION), Some(static_uid_2.as_str()));
    let new_mirror_uid = new_mirror.metadata.uid.clone().expect("uid");
    assert_ne!(new_mirror_uid, mirror_uid);
    eventually("the pod manager pairs the new mirror", || {
        pod_manager.translate_pod_uid(&new_mirror_uid) == static_uid_2
    });
    eventually("the old mirror leaves the pod manager", || pod_manager.get_any(&mirror_uid).is_none());

    // A removed manifest removes the static pod and its mirror pod.
    std::fs::remove_file(&file).expect("remove");
    let report = static_pods.rescan().expect("scan");
    assert_eq!(report.pods, []);
    assert!(pod_manager.get_any(&static_uid_2).is_none());
    assert!(mirror_in(store).is_none(), "the mirror pod is deleted");
    eventually("the mirror leaves the pod manager", || pod_manager.get_any(&new_mirror_uid).is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn polling_picks_up_new_manifests_and_a_deleted_mirror_comes_back() {
    let cluster = Cluster::start();
    let store = cluster.store();
    let dir = manifest_dir("poll");
    let pod_manager = Arc::new(PodManager::new());
    let static_pods =
        StaticPods::start(&dir, NODE, cluster.client.clone(), Arc::clone(&pod_manager), cluster.runtime.handle())
            .expect("an empty folder is fine");
    assert_eq!(static_pods.report().pods, []);
    std::fs::write(dir.join("etcd.json"), r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"etcd","namespace":"kube-system"},"spec":{"containers":[{"name":"etcd"}]}}"#)
        .expect("write");
    eventually("the poll finds the new manifest and writes its mirror", || mirror_in(store).is_some());
    assert_eq!(pod_manager.pods().len(), 1, "only the static pod: no watch brings the mirror here");
    store.remove_pod("kube-system", "etcd-node-a").expect("someone deletes the mirror");
    eventually("the mirror pod is recreated", || mirror_in(store).is_some());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_pod_that_is_not_a_mirror_keeps_its_name() {
    let cluster = Cluster::start();
    let store = cluster.store();
    let mut squatter = pod("etcd-node-a", "api-1", NODE);
    squatter.metadata.namespace = Some("kube-system".into());
    store.create_pod(squatter).expect("create");
    let dir = manifest_dir("squat");
    std::fs::write(dir.join("etcd.yaml"), ETCD).expect("write");
    let pod_manager = Arc::new(PodManager::new());
    let static_pods =
        StaticPods::start(&dir, NODE, cluster.client.clone(), Arc::clone(&pod_manager), cluster.runtime.handle())
            .expect("start");
    let report = static_pods.report();
    assert_eq!(report.pods.len(), 1, "the static pod runs");
    assert_eq!(report.mirror_errors.len(), 1, "{report:?}");
    assert_eq!(mirror_in(store).and_then(|p| p.metadata.uid.clone()).as_deref(), Some("api-1"), "left alone");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unreadable_folder_is_an_error() {
    let cluster = Cluster::start();
    let missing = std::env::temp_dir().join(format!("podstatus-no-such-dir-{}", std::process::id()));
    let result = StaticPods::start(
        &missing,
        NODE,
        cluster.client.clone(),
        Arc::new(PodManager::new()),
        cluster.runtime.handle(),
    );
    let error = result.err().expect("a missing folder is refused");
    assert!(error.to_string().contains("podstatus-no-such-dir"), "{error}");
}

#[test]
fn a_watch_cut_off_lists_again_and_drops_what_vanished_but_not_static_pods() {
    // One buffered change per watcher: a burst of writes cuts the watch off with 410.
    let options = ServeOptions { watch_history: 1, watcher_buffer: 1, ..ServeOptions::default() };
    let cluster = Cluster::start_with(options);
    let store = cluster.store();
    store.create_pod(pod("doomed", "u0", NODE)).expect("create");
    let pod_manager = Arc::new(PodManager::new());
    let mut from_file = pod("etcd-node-a", "static-1", NODE);
    from_file.metadata.annotations = Some([(CONFIG_SOURCE_ANNOTATION.to_owned(), "file".to_owned())].into());
    pod_manager.add_pod(from_file);
    let watch = cluster.watch(&pod_manager);
    assert!(pod_manager.get_any("u0").is_some());

    let burst: Vec<String> = (0..200).map(|i| format!("b{i}")).collect();
    for uid in &burst {
        store.create_pod(pod(uid, uid, NODE)).expect("create");
    }
    store.remove_pod("ns", "doomed").expect("delete");
    eventually("the watch is cut off and lists again", || watch.lists() >= 2);
    eventually("every pod of the burst is held", || burst.iter().all(|uid| pod_manager.get_any(uid).is_some()));
    eventually("the deleted pod is gone", || pod_manager.get_any("u0").is_none());
    assert!(pod_manager.get_any("static-1").is_some(), "a static pod is never the watch's to remove");
}

/// A TCP proxy in front of the server that can cut every connection through it (a
/// dropped connection, as the client sees it) and refuse new ones for a while.
struct Proxy {
    addr: SocketAddr,
    open: Arc<Mutex<Vec<TcpStream>>>,
    refusing: Arc<AtomicBool>,
}

impl Proxy {
    fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("an address");
        let open = Arc::new(Mutex::new(Vec::new()));
        let refusing = Arc::new(AtomicBool::new(false));
        let (held, refused) = (Arc::clone(&open), Arc::clone(&refusing));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let server = match TcpStream::connect(upstream) {
                    Ok(server) if !refused.load(Ordering::SeqCst) => server,
                    _ => {
                        let _ = client.shutdown(std::net::Shutdown::Both);
                        continue;
                    }
                };
                for (from, to) in [(&client, &server), (&server, &client)] {
                    let (mut from, mut to) = (from.try_clone().expect("clone"), to.try_clone().expect("clone"));
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
                held.lock().expect("lock").extend([client, server]);
            }
        });
        Proxy { addr, open, refusing }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Cuts every open connection.
    fn cut(&self) {
        for stream in self.open.lock().expect("lock").drain(..) {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }

    fn refuse(&self, refusing: bool) {
        self.refusing.store(refusing, Ordering::SeqCst);
    }
}

#[test]
fn a_dropped_watch_resumes_without_listing_and_only_an_expired_one_lists_again() {
    // Three changes kept for resumes: more while the watcher is away expire its version.
    let cluster = Cluster::start_with(ServeOptions { watch_history: 3, ..ServeOptions::default() });
    let proxy = Proxy::start(cluster.server.local_addr());
    let client = {
        let _entered = cluster.runtime.enter();
        kube::Client::try_from(kube::Config::new(proxy.url().parse().expect("url"))).expect("client")
    };
    let pod_manager = Arc::new(PodManager::new());
    let watch = PodWatch::start(client, "test-server", NODE, Arc::clone(&pod_manager), cluster.runtime.handle());
    assert!(watch.wait_synced(DEADLINE), "the first list arrives");
    let stats = || cluster.server.stats();
    eventually("the watch is open", || stats().open_watches == 1);
    let (lists, watches) = (stats().pod_lists, stats().pod_watches);
    assert_eq!(lists, 1);

    proxy.cut();
    cluster.store().create_pod(pod("after-cut", "u1", NODE)).expect("create");
    eventually("the pod created after the cut arrives", || pod_manager.get_any("u1").is_some());
    assert!(stats().pod_watches > watches, "watched again: {:?}", stats());
    assert_eq!(stats().pod_lists, lists, "resumed from its resourceVersion, not listed: {:?}", stats());
    assert_eq!(watch.lists(), 1);

    // Away for longer than the server's history: the resume gets 410, and only that lists.
    proxy.refuse(true);
    proxy.cut();
    let burst: Vec<String> = (0..8).map(|i| format!("e{i}")).collect();
    for uid in &burst {
        cluster.store().create_pod(pod(uid, uid, NODE)).expect("create");
    }
    cluster.store().remove_pod("ns", "after-cut").expect("delete");
    std::thread::sleep(Duration::from_millis(200));
    proxy.refuse(false);
    eventually("the expired watch lists again", || watch.lists() >= 2);
    eventually("every pod of the burst is held", || burst.iter().all(|uid| pod_manager.get_any(uid).is_some()));
    eventually("the pod deleted while away is gone", || pod_manager.get_any("u1").is_none());
    assert_eq!(stats().pod_lists, lists + 1, "one list after the 410: {:?}", stats());
}
