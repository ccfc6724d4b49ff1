//! The contract 0.2.0 plugins this checkout builds (`guest/plugin`, once per logic
//! version), run through wasmtime: each instantiates against the 0.2.0 world, plans a
//! request's sync, asks for its API calls one at a time and ends when they are
//! answered; steps out of turn and logic v1's missing startup probes are errors.

// Generated bindings carry no docs of their own.
#![allow(missing_docs)]

use std::collections::{BTreeMap, VecDeque};

use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Engine, Store};

wasmtime::component::bindgen!({
    world: "status-manager",
    path: "../../wit/status@0.2.0",
    additional_derives: [PartialEq, Eq],
});

use exports::kubelet::status::manager::{ManagerError, SyncOrigin, SyncOutcome, SyncStep, UpdateOutcome};
use kubelet::status::api::{ApiCall, ApiReply};
use kubelet::status::{api, clock, deletion_safety, logging, pod_manager, sync_queue, types};

/// The host's side of the world: a pod manager, a queue and a log.
#[derive(Default)]
struct World {
    pods: BTreeMap<String, String>,
    queue: VecDeque<types::SyncRequest>,
    logs: Vec<String>,
}

impl pod_manager::Host for World {
    fn get_pod_by_uid(&mut self, uid: String) -> Option<String> {
        self.pods.get(&uid).cloned()
    }

    fn get_mirror_pod_by_pod(&mut self, _: String) -> Option<String> {
        None
    }

    fn translate_pod_uid(&mut self, uid: String) -> String {
        uid
    }

    fn get_uid_translations(&mut self) -> pod_manager::UidTranslations {
        pod_manager::UidTranslations { pod_to_mirror: Vec::new(), mirror_to_pod: Vec::new() }
    }
}

impl deletion_safety::Host for World {
    fn pod_resources_are_reclaimed(&mut self, _: String, _: String) -> bool {
        false
    }

    fn pod_could_have_running_containers(&mut self, _: String) -> bool {
        false
    }
}

impl clock::Host for World {
    fn now(&mut self) -> types::Timestamp {
        types::Timestamp { seconds: 1_700_000_000, nanoseconds: 0 }
    }
}

impl logging::Host for World {
    fn log(&mut self, _: logging::Level, message: String) {
        self.logs.push(message);
    }

    fn enabled(&mut self, _: logging::Level) -> bool {
        true
    }
}

impl sync_queue::Host for World {
    fn push(&mut self, request: types::SyncRequest) -> bool {
        self.queue.push_back(request);
        true
    }
}

impl types::Host for World {}
impl api::Host for World {}

fn pod(status: &str) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"namespace":"ns","name":"a","uid":"uid-a","resourceVersion":"1",
        "annotations":{{"kubernetes.io/config.source":"api"}}}},"spec":{{"containers":[{{"name":"c","image":"busybox"}}]}},
        "status":{status}}}"#
    )
}

fn instantiate(path: &str) -> (Store<World>, StatusManager) {
    let engine = Engine::default();
    let component = Component::from_file(&engine, path).unwrap_or_else(|e| panic!("{path}: {e:#}"));
    let mut linker = Linker::new(&engine);
    StatusManager::add_to_linker::<World, HasSelf<World>>(&mut linker, |world| world).expect("linking");
    let mut store = Store::new(&engine, World::default());
    let bindings = StatusManager::instantiate(&mut store, &component, &linker).expect("the 0.2.0 world");
    (store, bindings)
}

/// One request's sync through the plugin at `path`; the calls it asked for, in order.
fn sync_one_pod(path: &str, startup: Result<UpdateOutcome, fn(&ManagerError) -> bool>) -> Vec<String> {
    let (mut store, plugin) = instantiate(path);
    let manager = plugin.kubelet_status_manager();
    store.data_mut().pods.insert("uid-a".into(), pod("{}"));
    let outcome = manager.call_set_pod_status(&mut store, &pod("{}"), &r#"{"phase":"Running"}"#.to_string()).unwrap();
    assert_eq!(outcome, Ok(UpdateOutcome::Queued));
    let request = store.data_mut().queue.pop_front().expect("a sync request");

    let syncs = manager.call_sync_pod(&mut store, &request).unwrap().expect("the request is this plugin's");
    assert_eq!(syncs.len(), 1);
    assert_eq!((syncs[0].pod_uid.as_str(), syncs[0].origin), ("uid-a", SyncOrigin::Request));
    let id = syncs[0].id;

    let mut calls = Vec::new();
    let mut step = manager.call_start_sync(&mut store, id).unwrap().expect("a planned sync");
    assert!(matches!(manager.call_start_sync(&mut store, id).unwrap(), Err(ManagerError::UnknownSync(i)) if i == id));
    let outcome = loop {
        match step {
            SyncStep::Done(outcome) => break outcome,
            SyncStep::Call(call) => {
                let reply = match &call {
                    ApiCall::GetPod(name) => {
                        assert_eq!((name.namespace.as_str(), name.name.as_str()), ("ns", "a"));
                        calls.push("get".to_string());
                        ApiReply::Pod(Ok(pod("{}")))
                    }
                    ApiCall::UpdatePodStatus(update) => {
                        assert_eq!(update.uid_precondition.as_deref(), Some("uid-a"));
                        calls.push("put".to_string());
                        ApiReply::Pod(Ok(pod(&update.status)))
                    }
                    ApiCall::PatchPodStatus(patch) => {
                        assert_eq!(patch.uid_precondition.as_deref(), Some("uid-a"));
                        calls.push("patch".to_string());
                        ApiReply::Pod(Ok(pod(r#"{"phase":"Running"}"#)))
                    }
                    ApiCall::DeletePod(_) => panic!("nothing is deleted here"),
                };
                step = manager.call_resume_sync(&mut store, id, &reply).unwrap().expect("the sync goes on");
            }
        }
    };
    assert_eq!(outcome, SyncOutcome::Written);
    assert!(!manager.call_drop_sync(&mut store, id).unwrap(), "a finished sync is gone");

    // The batch plans syncs (this pod manager's copy never follows the writes, so the
    // batch sees drift), and the host may drop them unstarted.
    let plan = manager.call_sync_batch(&mut store).unwrap();
    assert_eq!(plan.syncs.len(), 1);
    for sync in plan.syncs {
        assert_eq!(sync.origin, SyncOrigin::Batch);
        assert!(manager.call_drop_sync(&mut store, sync.id).unwrap());
    }
    assert!(manager.call_save_state(&mut store).unwrap().contains("uid-a"));

    let startup_outcome =
        manager.call_set_container_startup(&mut store, &"uid-a".to_string(), "containerd://c", true).unwrap();
    match (startup, startup_outcome) {
        (Ok(expected), Ok(got)) => assert_eq!(got, expected),
        (Err(fits), Err(e)) => assert!(fits(&e), "{e:?}"),
        (expected, got) => panic!("set-container-startup: expected {expected:?}, got {got:?}"),
    }
    calls
}

#[test]
fn logic_v1_puts_after_a_read_and_has_no_startup_probes() {
    let calls = sync_one_pod(env!("PODSTATUS_PLUGIN_V1_COMPONENT"), Err(|e| matches!(e, ManagerError::Unsupported(_))));
    assert_eq!(calls, ["get", "put"]);
}

#[test]
fn logic_v2_patches_after_a_read() {
    let calls = sync_one_pod(env!("PODSTATUS_PLUGIN_V2_COMPONENT"), Ok(UpdateOutcome::UnknownContainer));
    assert_eq!(calls, ["get", "patch"]);
}

#[test]
fn logic_v3_patches_without_reading() {
    let calls = sync_one_pod(env!("PODSTATUS_PLUGIN_V3_COMPONENT"), Ok(UpdateOutcome::UnknownContainer));
    assert_eq!(calls, ["patch"]);
}
