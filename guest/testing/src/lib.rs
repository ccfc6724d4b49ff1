//! Test fakes shared by both logic crates' native tests (as the kubelet's
//! `status/testing/`): a fake world behind the imports of logic v1 and v2 (an in-memory
//! API server whose status writes are PUTs or strategic merge patches, pod manager,
//! clock, deletion-safety answers and bounded sync queue), deterministic (ordered maps
//! only, time only from a settable clock) and recording every API call for assertions;
//! pod builders; and, in [`v2`], helpers that drive logic v2 over it.

pub mod split;

use std::collections::{BTreeMap, VecDeque};

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use podstatus_logic::{
    ApiCall, ApiError, ApiReply, DeleteOptions, Imports, Level, StatusPatch, StatusUpdate, SyncRequest, Timestamp,
    UidTranslations,
};
use serde_json::{Value, json};

/// Annotation carried by mirror pods.
pub use podstatus_core::CONFIG_MIRROR_ANNOTATION as CONFIG_MIRROR;
/// Annotation naming where the kubelet got a pod.
pub use podstatus_core::CONFIG_SOURCE_ANNOTATION as CONFIG_SOURCE;

/// A base instant for the tests (2023-11-14T22:13:20Z), in whole seconds.
pub const T0: i64 = 1_700_000_000;

/// The imports a test can make fail or answer with garbage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verb {
    GetPod,
    /// v2's strategic merge patch of the status.
    PatchPodStatus,
    /// v1's PUT of the status (a test failure in a world made with [`FakeWorld::v2`]).
    UpdatePodStatus,
    DeletePod,
    GetPodByUid,
    GetMirrorPodByPod,
}

/// One API server call, as the manager made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub verb: Verb,
    pub namespace: String,
    pub name: String,
    pub uid_precondition: Option<String>,
    pub resource_version_precondition: Option<String>,
    pub grace_period_seconds: Option<i64>,
    /// A patch's JSON.
    pub patch: Option<Value>,
}

impl Call {
    pub fn get(namespace: &str, name: &str) -> Call {
        Call {
            verb: Verb::GetPod,
            namespace: namespace.into(),
            name: name.into(),
            uid_precondition: None,
            resource_version_precondition: None,
            grace_period_seconds: None,
            patch: None,
        }
    }

    pub fn update(namespace: &str, name: &str, uid: Option<&str>, resource_version: Option<&str>) -> Call {
        Call {
            verb: Verb::UpdatePodStatus,
            uid_precondition: uid.map(str::to_string),
            resource_version_precondition: resource_version.map(str::to_string),
            ..Call::get(namespace, name)
        }
    }

    pub fn patch(namespace: &str, name: &str, uid: Option<&str>, patch: Value) -> Call {
        Call {
            verb: Verb::PatchPodStatus,
            uid_precondition: uid.map(str::to_string),
            patch: Some(patch),
            ..Call::get(namespace, name)
        }
    }

    pub fn delete(namespace: &str, name: &str, uid: Option<&str>, grace: Option<i64>) -> Call {
        Call {
            verb: Verb::DeletePod,
            uid_precondition: uid.map(str::to_string),
            grace_period_seconds: grace,
            ..Call::get(namespace, name)
        }
    }
}

/// An in-memory world behind [`Imports`].
#[derive(Clone, Debug)]
pub struct FakeWorld {
    /// The API server's pods by (namespace, name).
    pub api: BTreeMap<(String, String), Value>,
    /// The last resourceVersion handed out.
    pub resource_version: u64,
    /// The pod manager's pods (mirror pods included) by UID.
    pub pods: BTreeMap<String, Value>,
    /// Every API server call, in order.
    pub calls: Vec<Call>,
    /// Verbs that fail with this error until healed (API server verbs only).
    pub failures: BTreeMap<Verb, ApiError>,
    /// Verbs that answer with this text instead of a pod until healed.
    pub garbage: BTreeMap<Verb, String>,
    pub now: Timestamp,
    /// What `pod_resources_are_reclaimed` answers.
    pub reclaimed: bool,
    /// How often `pod_resources_are_reclaimed` was asked.
    pub reclaimed_queries: u32,
    /// What `pod_could_have_running_containers` answers.
    pub running: bool,
    /// How often `pod_could_have_running_containers` was asked.
    pub running_queries: u32,
    /// When set, the next successful `get_pod` is followed at once by this pod replacing
    /// the one read (same name, another UID): a pod deleted and recreated in between.
    pub recreate_after_get: Option<Value>,
    /// Whether a PUT of the status is served (logic v1) or is a test failure (logic v2
    /// never puts; see [`FakeWorld::v2`]).
    pub allow_puts: bool,
    pub queue: VecDeque<SyncRequest>,
    pub queue_capacity: usize,
    /// Every request offered to the queue, refused ones included.
    pub pushed: Vec<SyncRequest>,
    pub logs: Vec<(Level, String)>,
}

impl Default for FakeWorld {
    fn default() -> Self {
        FakeWorld::new()
    }
}

impl FakeWorld {
    /// Stores `status` as the status of the API server's pod `key` (checked to exist)
    /// with the next resourceVersion, as a status write by `verb` does; the pod as the
    /// write answers it (or the garbage set for `verb`).
    fn store_status(&mut self, key: &(String, String), status: Value, verb: Verb) -> String {
        let rv = self.next_resource_version();
        let stored = self.api.get_mut(key).expect("checked above");
        stored["status"] = status;
        stored["metadata"]["resourceVersion"] = json!(rv);
        let stored = stored.clone();
        self.follow(&stored);
        match self.garbage.get(&verb) {
            Some(text) => text.clone(),
            None => stored.to_string(),
        }
    }

    /// A world for logic v2: a PUT of a status fails the test.
    pub fn v2() -> FakeWorld {
        FakeWorld { allow_puts: false, ..FakeWorld::new() }
    }

    /// A world serving both PUTs (logic v1) and patches.
    pub fn new() -> FakeWorld {
        FakeWorld {
            api: BTreeMap::new(),
            resource_version: 0,
            pods: BTreeMap::new(),
            calls: Vec::new(),
            failures: BTreeMap::new(),
            garbage: BTreeMap::new(),
            now: ts(T0 + 1000, 500_000_000),
            reclaimed: false,
            reclaimed_queries: 0,
            running: false,
            running_queries: 0,
            recreate_after_get: None,
            allow_puts: true,
            queue: VecDeque::new(),
            queue_capacity: 1000,
            pushed: Vec::new(),
            logs: Vec::new(),
        }
    }

    // ---- set-up ----

    /// Adds `pod` to the API server and (as stored there) to the pod manager.
    pub fn add_pod(&mut self, pod: Value) -> Value {
        let stored = self.add_api_pod(pod);
        self.add_managed_pod(stored.clone());
        stored
    }

    /// Adds pods `ns/a` (uid-a) and `ns/b` (uid-b), one container `c` each, with
    /// `add_pod`.
    pub fn add_pods_a_and_b(&mut self) -> (Value, Value) {
        let a = self.add_pod(pod("ns", "a", "uid-a", &["c"]));
        let b = self.add_pod(pod("ns", "b", "uid-b", &["c"]));
        (a, b)
    }

    /// Adds the split-sync scenarios' first pods, one container `c` each: `ns/a`
    /// (uid-a) with `add_pod`, `ns/b` (uid-b) being deleted with `add_pod`, and `ns/c`
    /// (uid-c) in the pod manager only.
    pub fn add_pods_a_b_c(&mut self) -> [Value; 3] {
        let a = self.add_pod(pod("ns", "a", "uid-a", &["c"]));
        let b = self.add_pod(deleting(pod("ns", "b", "uid-b", &["c"])));
        let c = pod("ns", "c", "uid-c", &["c"]);
        self.add_managed_pod(c.clone());
        [a, b, c]
    }

    /// Adds (or replaces) `pod` in the API server with a fresh resourceVersion.
    pub fn add_api_pod(&mut self, mut pod: Value) -> Value {
        pod["metadata"]["resourceVersion"] = json!(self.next_resource_version());
        self.api.insert(key_of(&pod), pod.clone());
        pod
    }

    /// Adds (or replaces) `pod` in the pod manager only.
    pub fn add_managed_pod(&mut self, pod: Value) {
        self.pods.insert(uid_of(&pod).to_string(), pod);
    }

    pub fn remove_managed_pod(&mut self, uid: &str) -> Option<Value> {
        self.pods.remove(uid)
    }

    pub fn remove_api_pod(&mut self, namespace: &str, name: &str) -> Option<Value> {
        self.api.remove(&(namespace.to_string(), name.to_string()))
    }

    /// Another writer changes the pod's status in the API server; the pod manager
    /// follows, as it does for every write.
    pub fn drift_status(&mut self, namespace: &str, name: &str, status: Value) {
        let key = (namespace.to_string(), name.to_string());
        let rv = self.next_resource_version();
        let pod = self.api.get_mut(&key).expect("drift of a pod the API server holds");
        pod["status"] = status;
        pod["metadata"]["resourceVersion"] = json!(rv);
        let pod = pod.clone();
        self.follow(&pod);
    }

    pub fn fail(&mut self, verb: Verb, error: ApiError) {
        self.failures.insert(verb, error);
    }

    pub fn answer_garbage(&mut self, verb: Verb, text: &str) {
        self.garbage.insert(verb, text.to_string());
    }

    /// Ends every failure and garbage answer of `verb`.
    pub fn heal(&mut self, verb: Verb) {
        self.failures.remove(&verb);
        self.garbage.remove(&verb);
    }

    pub fn set_now(&mut self, seconds: i64, nanoseconds: u32) {
        self.now = ts(seconds, nanoseconds);
    }

    // ---- inspection ----

    pub fn api_pod(&self, namespace: &str, name: &str) -> Option<&Value> {
        self.api.get(&(namespace.to_string(), name.to_string()))
    }

    /// The API server's status of the pod (null when it has none).
    pub fn api_status(&self, namespace: &str, name: &str) -> Value {
        self.api_pod(namespace, name).map_or(Value::Null, |p| p["status"].clone())
    }

    pub fn take_calls(&mut self) -> Vec<Call> {
        std::mem::take(&mut self.calls)
    }

    pub fn calls_of(&self, verb: Verb) -> Vec<Call> {
        self.calls.iter().filter(|c| c.verb == verb).cloned().collect()
    }

    /// The verbs of the calls so far, taking them.
    pub fn take_verbs(&mut self) -> Vec<Verb> {
        self.take_calls().into_iter().map(|c| c.verb).collect()
    }

    /// The patches sent so far (their JSON), in order.
    pub fn patches(&self) -> Vec<Value> {
        self.calls.iter().filter_map(|c| c.patch.clone()).collect()
    }

    /// Takes the oldest queued request.
    pub fn pop_request(&mut self) -> Option<SyncRequest> {
        self.queue.pop_front()
    }

    pub fn take_queue(&mut self) -> Vec<SyncRequest> {
        self.queue.drain(..).collect()
    }

    /// Answers a sync's `call` at once, as a host of contract 0.2.0 that makes each call
    /// as soon as it is asked: through the same fake API server (and call record) the
    /// blocking entry points use.
    pub fn answer(&mut self, call: ApiCall) -> ApiReply {
        match call {
            ApiCall::GetPod { namespace, name } => ApiReply::Pod(self.get_pod(&namespace, &name)),
            ApiCall::UpdatePodStatus(update) => ApiReply::Pod(self.update_pod_status(update)),
            ApiCall::PatchPodStatus(patch) => ApiReply::Pod(self.patch_pod_status(patch)),
            ApiCall::DeletePod { namespace, name, options } => {
                ApiReply::Deleted(self.delete_pod(&namespace, &name, options))
            }
        }
    }

    // ---- internals ----

    fn next_resource_version(&mut self) -> String {
        self.resource_version += 1;
        self.resource_version.to_string()
    }

    fn record(&mut self, call: Call) {
        self.calls.push(call);
    }

    /// The API server's object at `key`, if the write's UID precondition holds for it.
    fn stored(&self, key: &(String, String), uid_precondition: Option<&str>) -> Result<&Value, ApiError> {
        let Some(stored) = self.api.get(key) else {
            return Err(ApiError::NotFound(format!("pods \"{}\" not found", key.1)));
        };
        if let Some(uid) = uid_precondition
            && uid != uid_of(stored)
        {
            return Err(ApiError::Conflict(format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                uid_of(stored)
            )));
        }
        Ok(stored)
    }

    fn injected_failure(&self, verb: Verb) -> Option<ApiError> {
        self.failures.get(&verb).cloned()
    }

    /// The pod manager follows API writes: its pod with that UID becomes the stored one.
    fn follow(&mut self, pod: &Value) {
        let uid = uid_of(pod).to_string();
        if let Some(managed) = self.pods.get_mut(&uid) {
            *managed = pod.clone();
        }
    }

    /// The static pod (not a mirror pod) with this full name.
    fn static_pod_named(&self, namespace: &str, name: &str) -> Option<&Value> {
        self.pods.values().find(|p| is_static(p) && !is_mirror(p) && namespace_of(p) == namespace && name_of(p) == name)
    }

    /// The mirror pod with this full name.
    fn mirror_pod_named(&self, namespace: &str, name: &str) -> Option<&Value> {
        self.pods.values().find(|p| is_mirror(p) && namespace_of(p) == namespace && name_of(p) == name)
    }
}

impl Imports for FakeWorld {
    fn get_pod(&mut self, namespace: &str, name: &str) -> Result<String, ApiError> {
        self.record(Call::get(namespace, name));
        if let Some(error) = self.injected_failure(Verb::GetPod) {
            return Err(error);
        }
        if let Some(text) = self.garbage.get(&Verb::GetPod) {
            return Ok(text.clone());
        }
        let read = match self.api_pod(namespace, name) {
            Some(pod) => pod.to_string(),
            None => return Err(ApiError::NotFound(format!("pods \"{name}\" not found"))),
        };
        if let Some(recreated) = self.recreate_after_get.take() {
            self.add_api_pod(recreated);
        }
        Ok(read)
    }

    fn update_pod_status(&mut self, update: StatusUpdate) -> Result<String, ApiError> {
        assert!(self.allow_puts, "this world serves patches only; a PUT of {}/{} came", update.namespace, update.name);
        self.record(Call::update(
            &update.namespace,
            &update.name,
            update.uid_precondition.as_deref(),
            update.resource_version_precondition.as_deref(),
        ));
        // The manager must always send a well-formed core/v1 PodStatus.
        let status: Value = serde_json::from_str(&update.status).expect("the manager sent JSON");
        serde_json::from_value::<PodStatus>(status.clone()).expect("the manager sent a core/v1 PodStatus");
        if let Some(error) = self.injected_failure(Verb::UpdatePodStatus) {
            return Err(error);
        }
        let key = (update.namespace.clone(), update.name.clone());
        let stored = self.stored(&key, update.uid_precondition.as_deref())?;
        if let Some(rv) = &update.resource_version_precondition
            && Some(rv.as_str()) != stored["metadata"]["resourceVersion"].as_str()
        {
            return Err(ApiError::Conflict(format!("the object has been modified; resourceVersion {rv} is stale")));
        }
        Ok(self.store_status(&key, status, Verb::UpdatePodStatus))
    }

    fn delete_pod(&mut self, namespace: &str, name: &str, options: DeleteOptions) -> Result<(), ApiError> {
        self.record(Call::delete(namespace, name, options.uid_precondition.as_deref(), options.grace_period_seconds));
        if let Some(error) = self.injected_failure(Verb::DeletePod) {
            return Err(error);
        }
        let key = (namespace.to_string(), name.to_string());
        let Some(stored) = self.api.get(&key) else {
            return Err(ApiError::NotFound(format!("pods \"{name}\" not found")));
        };
        if let Some(uid) = &options.uid_precondition
            && uid != uid_of(stored)
        {
            return Err(ApiError::Conflict(format!("Precondition failed: UID in precondition: {uid}")));
        }
        self.api.remove(&key);
        Ok(())
    }

    fn get_pod_by_uid(&mut self, uid: &str) -> Option<String> {
        if let Some(text) = self.garbage.get(&Verb::GetPodByUid) {
            return Some(text.clone());
        }
        self.pods.get(uid).filter(|p| !is_mirror(p)).map(Value::to_string)
    }

    fn get_mirror_pod_by_pod(&mut self, pod_json: &str) -> Option<String> {
        if let Some(text) = self.garbage.get(&Verb::GetMirrorPodByPod) {
            return Some(text.clone());
        }
        let pod: Value = serde_json::from_str(pod_json).ok()?;
        if !is_static(&pod) || is_mirror(&pod) {
            return None;
        }
        self.mirror_pod_named(namespace_of(&pod), name_of(&pod)).map(Value::to_string)
    }

    fn translate_pod_uid(&mut self, uid: &str) -> String {
        if let Some(mirror) = self.pods.get(uid).filter(|p| is_mirror(p))
            && let Some(static_pod) = self.static_pod_named(namespace_of(mirror), name_of(mirror))
        {
            return uid_of(static_pod).to_string();
        }
        uid.to_string()
    }

    fn get_uid_translations(&mut self) -> UidTranslations {
        let mut translations = UidTranslations::default();
        for pod in self.pods.values().filter(|p| is_static(p) && !is_mirror(p)) {
            let mirror = self.mirror_pod_named(namespace_of(pod), name_of(pod));
            let mirror_uid = mirror.map_or("", uid_of).to_string();
            translations.pod_to_mirror.push((uid_of(pod).to_string(), mirror_uid.clone()));
            if !mirror_uid.is_empty() {
                translations.mirror_to_pod.push((mirror_uid, uid_of(pod).to_string()));
            }
        }
        translations.mirror_to_pod.sort();
        translations
    }

    fn pod_resources_are_reclaimed(&mut self, pod_json: &str, status_json: &str) -> bool {
        serde_json::from_str::<Pod>(pod_json).expect("the manager asks about a core/v1 Pod");
        serde_json::from_str::<PodStatus>(status_json).expect("the manager asks about a core/v1 PodStatus");
        self.reclaimed_queries += 1;
        self.reclaimed
    }

    fn now(&mut self) -> Timestamp {
        self.now
    }

    fn log(&mut self, level: Level, message: &str) {
        self.logs.push((level, message.to_string()));
    }

    fn log_enabled(&mut self, _level: Level) -> bool {
        true
    }

    fn push_sync_request(&mut self, request: SyncRequest) -> bool {
        self.pushed.push(request.clone());
        if self.queue.len() >= self.queue_capacity {
            return false;
        }
        self.queue.push_back(request);
        true
    }

    fn patch_pod_status(&mut self, patch: StatusPatch) -> Result<String, ApiError> {
        let body: Value = serde_json::from_str(&patch.patch).expect("the manager sent JSON");
        self.record(Call::patch(&patch.namespace, &patch.name, patch.uid_precondition.as_deref(), body.clone()));
        // The manager must always carry the UID inside the patch, as the kubelet does.
        assert_eq!(
            body["metadata"]["uid"].as_str(),
            patch.uid_precondition.as_deref(),
            "the patch carries its UID precondition as metadata.uid"
        );
        if let Some(error) = self.injected_failure(Verb::PatchPodStatus) {
            return Err(error);
        }
        let key = (patch.namespace.clone(), patch.name.clone());
        let stored = self.stored(&key, patch.uid_precondition.as_deref())?;
        // The API server's own strategic merge (the embedded server applies the same).
        let current: Option<PodStatus> = serde_json::from_value(stored["status"].clone()).ok();
        let patched = podstatus_core::apply_status_patch(current.as_ref(), &body)
            .unwrap_or_else(|e| panic!("the patched status is a core/v1 PodStatus: {e}"));
        let status = serde_json::to_value(patched).expect("a PodStatus serialises");
        Ok(self.store_status(&key, status, Verb::PatchPodStatus))
    }

    fn pod_could_have_running_containers(&mut self, pod_json: &str) -> bool {
        serde_json::from_str::<Pod>(pod_json).expect("the manager asks about a core/v1 Pod");
        self.running_queries += 1;
        self.running
    }
}

// ---- pods ----

pub fn ts(seconds: i64, nanoseconds: u32) -> Timestamp {
    Timestamp { seconds, nanoseconds }
}

/// RFC 3339 text of `seconds` since the epoch plus `nanoseconds`, as the kubelet may
/// report it (sub-second digits only when `nanoseconds` is not zero).
pub fn rfc3339(seconds: i64, nanoseconds: u32) -> String {
    let t = k8s_openapi::jiff::Timestamp::new(seconds, i32::try_from(nanoseconds).expect("below 1e9"))
        .expect("a valid instant");
    t.to_string()
}

/// Seconds since the epoch of an RFC 3339 time in a status (panics on anything else).
pub fn seconds_of(time: &Value) -> i64 {
    let text = time.as_str().unwrap_or_else(|| panic!("{time} is not a time"));
    let t: k8s_openapi::jiff::Timestamp = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(t.subsec_nanosecond(), 0, "{text} is not normalised to whole seconds");
    t.as_second()
}

/// A pod from the API server with one container per name.
pub fn pod(namespace: &str, name: &str, uid: &str, containers: &[&str]) -> Value {
    let containers: Vec<Value> = containers.iter().map(|c| json!({"name": c, "image": "busybox"})).collect();
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": namespace,
            "name": name,
            "uid": uid,
            "annotations": {CONFIG_SOURCE: "api"},
        },
        "spec": {"containers": containers},
    })
}

/// A static pod (from a file) and its mirror pod in the API server.
pub fn static_and_mirror(
    namespace: &str,
    name: &str,
    static_uid: &str,
    mirror_uid: &str,
    containers: &[&str],
) -> (Value, Value) {
    let mut static_pod = pod(namespace, name, static_uid, containers);
    static_pod["metadata"]["annotations"][CONFIG_SOURCE] = json!("file");
    let mut mirror = pod(namespace, name, mirror_uid, containers);
    mirror["metadata"]["annotations"][CONFIG_MIRROR] = json!("hash-of-the-static-pod");
    (static_pod, mirror)
}

/// `pod` with this status.
pub fn with_status(mut pod: Value, status: Value) -> Value {
    pod["status"] = status;
    pod
}

/// `pod` with init containers of these names.
pub fn with_init_containers(mut pod: Value, names: &[&str]) -> Value {
    pod["spec"]["initContainers"] = names.iter().map(|n| json!({"name": n, "image": "busybox"})).collect();
    pod
}

/// `pod` with this restart policy.
pub fn with_restart_policy(mut pod: Value, policy: &str) -> Value {
    pod["spec"]["restartPolicy"] = json!(policy);
    pod
}

/// `pod` with readiness gates on these condition types.
pub fn with_readiness_gates(mut pod: Value, gates: &[&str]) -> Value {
    pod["spec"]["readinessGates"] = gates.iter().map(|g| json!({"conditionType": g})).collect();
    pod
}

/// `pod`, being deleted.
pub fn deleting(mut pod: Value) -> Value {
    pod["metadata"]["deletionTimestamp"] = json!(rfc3339(T0 + 500, 0));
    pod["metadata"]["deletionGracePeriodSeconds"] = json!(30);
    pod
}

pub fn uid_of(pod: &Value) -> &str {
    pod["metadata"]["uid"].as_str().unwrap_or("")
}

pub fn name_of(pod: &Value) -> &str {
    pod["metadata"]["name"].as_str().unwrap_or("")
}

pub fn namespace_of(pod: &Value) -> &str {
    pod["metadata"]["namespace"].as_str().unwrap_or("")
}

fn key_of(pod: &Value) -> (String, String) {
    (namespace_of(pod).to_string(), name_of(pod).to_string())
}

fn annotation<'a>(pod: &'a Value, key: &str) -> Option<&'a str> {
    pod["metadata"]["annotations"].get(key).and_then(Value::as_str)
}

/// Static: the config-source annotation is present and is not "api".
pub fn is_static(pod: &Value) -> bool {
    podstatus_core::is_static_source(annotation(pod, CONFIG_SOURCE))
}

/// Mirror: the config-mirror annotation is present (any value).
pub fn is_mirror(pod: &Value) -> bool {
    pod["metadata"]["annotations"].get(CONFIG_MIRROR).is_some()
}

/// Driving logic v2 over the fake world.
/// A container status, running since `T0 + 3`, with the ID `containerd://NAME`.
pub fn container(name: &str, ready: bool) -> Value {
    json!({
        "name": name,
        "containerID": format!("containerd://{name}"),
        "image": "busybox",
        "imageID": "",
        "ready": ready,
        "restartCount": 0,
        "state": {"running": {"startedAt": rfc3339(T0 + 3, 0)}},
    })
}

pub mod v2 {
    use podstatus_logic::StatusManager;
    use serde_json::{Value, json};

    use super::{FakeWorld, Verb};

    /// Logic v2 over the fake world.
    pub type M = podstatus_logic_v2::Manager<FakeWorld>;

    /// Logic v1 over the same kind of world (PUTs must be allowed).
    pub type V1 = podstatus_logic_v1::Manager<FakeWorld>;

    pub fn set(m: &mut M, pod: &Value, status: &Value) -> podstatus_logic_v2::UpdateOutcome {
        m.set_pod_status(&pod.to_string(), &status.to_string()).unwrap_or_else(|e| panic!("set_pod_status: {e}"))
    }

    pub fn terminate(m: &mut M, pod: &Value) -> podstatus_logic_v2::UpdateOutcome {
        m.terminate_pod(&pod.to_string()).unwrap_or_else(|e| panic!("terminate_pod: {e}"))
    }

    /// The cached version and status of `uid`.
    pub fn cached(m: &mut M, uid: &str) -> Option<(u64, Value)> {
        m.get_pod_status(uid)
            .expect("get_pod_status")
            .map(|c| (c.version, serde_json::from_str(&c.status).expect("status JSON")))
    }

    pub fn status_of(m: &mut M, uid: &str) -> Value {
        cached(m, uid).unwrap_or_else(|| panic!("no cached status for {uid}")).1
    }

    /// The first condition of `type_` in a status, if any.
    pub fn find_condition<'a>(status: &'a Value, type_: &str) -> Option<&'a Value> {
        status["conditions"].as_array().and_then(|cs| cs.iter().find(|c| c["type"] == type_))
    }

    pub fn condition<'a>(status: &'a Value, type_: &str) -> &'a Value {
        find_condition(status, type_).unwrap_or_else(|| panic!("no {type_} condition in {status}"))
    }

    /// The condition types of a status, in order.
    pub fn condition_types(status: &Value) -> Vec<String> {
        status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["type"].as_str().unwrap_or("").to_string())
            .collect()
    }

    /// What the scheduler does: every queued request to `sync_pod`, until the queue is
    /// empty. Returns the outcomes.
    pub fn drain(m: &mut M) -> Vec<podstatus_logic_v2::SyncOutcome> {
        let mut outcomes = Vec::new();
        while let Some(request) = m.imports_mut().pop_request() {
            outcomes.push(m.sync_pod(&request).unwrap_or_else(|e| panic!("sync_pod: {e}")));
        }
        outcomes
    }

    /// Drains the queue and says how many pods it synced, as 1.27's `verifyUpdates` counts
    /// them: every sync starts with a read of the pod.
    pub fn drain_count(m: &mut M) -> usize {
        let before = m.imports_mut().calls_of(Verb::GetPod).len();
        drain(m);
        m.imports_mut().calls_of(Verb::GetPod).len() - before
    }

    /// Drains the queue and takes the verbs of every call made so far.
    pub fn drain_verbs(m: &mut M) -> Vec<Verb> {
        drain(m);
        m.imports_mut().take_verbs()
    }

    pub use super::container;

    /// A container status of this state (`{"running": {}}`, `{"terminated": {...}}`, ...).
    pub fn container_in(name: &str, state: Value) -> Value {
        json!({"name": name, "containerID": format!("containerd://{name}"), "image": "busybox", "imageID": "",
           "ready": false, "restartCount": 0, "state": state})
    }

    /// Runs the state of `m` through a document with `edit` applied (tests reach the
    /// written versions this way, as a host moving state would).
    pub fn edit_state(m: &mut M, edit: impl FnOnce(&mut Value)) {
        let mut document: Value = serde_json::from_str(&m.save_state().expect("save_state")).expect("state JSON");
        edit(&mut document);
        m.load_state(&document.to_string()).expect("load_state");
    }
}
