//! The store of the kinds served besides pods: nodes and leases, what a node agent
//! registers and renews (`podstatus agent`, `simulate`) and `kubectl get nodes` reads,
//! and a fleet's `PluginRollout`s (issue 51), which its shards read and report into.
//!
//! One generic store of JSON objects keyed by resource, namespace and name, instead of
//! a copy of the pod store per kind: these kinds need no more than kube-apiserver's
//! generic registry gives every kind (server-owned UID, creation time and
//! resourceVersion; a resourceVersion precondition on update; the status subresource
//! written apart from the rest). Each object is checked against its k8s-openapi type on
//! every write, so what is stored always reads back as that type.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use serde_json::{Value, json};

use crate::excerpt::excerpt;
use crate::field_validation::FieldValidation;
use crate::identifiers::new_uid;
use serde::Deserialize as _;

use crate::status_body::{Cause, Failure};
use crate::validation;

/// A kind served from this store: what its paths, discovery and bodies call it.
#[derive(Debug)]
pub(crate) struct Resource {
    /// The path segment and discovery name: `nodes`.
    pub plural: &'static str,
    /// Discovery's singular name: `node`.
    pub singular: &'static str,
    /// The object's kind: `Node`.
    pub kind: &'static str,
    /// The API group ("" for the core group).
    pub group: &'static str,
    /// The group's version.
    pub version: &'static str,
    /// Namespaced, or cluster-scoped (no namespace at all).
    pub namespaced: bool,
    /// kubectl's short names (`no`).
    pub short_names: &'static [&'static str],
    /// Whether it has a `status` subresource (written only through `/status`).
    pub has_status: bool,
    /// Checks that a JSON object is a valid object of the kind (its typed parse), and
    /// gives what the type keeps of it: the object without fields the kind lacks.
    pub parse: fn(&Value) -> Result<Value, String>,
    /// What is wrong with a well-typed object's fields (answered 422 `Invalid`, a cause
    /// per field): a kind's own rules beyond its types, as a CRD's validation.
    pub problems: fn(&Value) -> Vec<Cause>,
}

impl Resource {
    /// `v1` or `coordination.k8s.io/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.to_owned() } else { format!("{}/{}", self.group, self.version) }
    }
}

/// `/api/v1/nodes`: cluster-scoped, with a status subresource.
pub(crate) const NODES: Resource = Resource {
    plural: "nodes",
    singular: "node",
    kind: "Node",
    group: "",
    version: "v1",
    namespaced: false,
    short_names: &["no"],
    has_status: true,
    parse: typed::<Node>,
    problems: no_problems,
};

/// `/apis/coordination.k8s.io/v1/namespaces/{ns}/leases`: the node heartbeat.
pub(crate) const LEASES: Resource = Resource {
    plural: "leases",
    singular: "lease",
    kind: "Lease",
    group: "coordination.k8s.io",
    version: "v1",
    namespaced: true,
    short_names: &[],
    has_status: false,
    parse: typed::<Lease>,
    problems: no_problems,
};

/// `/apis/podstatus.io/v1alpha1/namespaces/{ns}/pluginrollouts`: a fleet's rollout, the
/// CRD of `host/deploy/` served here, with its status subresource (the shards and their
/// leader write it).
pub(crate) const PLUGIN_ROLLOUTS: Resource = Resource {
    plural: podstatus_rollout_api::PLURAL,
    singular: "pluginrollout",
    kind: podstatus_rollout_api::KIND,
    group: podstatus_rollout_api::GROUP,
    version: podstatus_rollout_api::VERSION,
    namespaced: true,
    short_names: &["prl"],
    has_status: true,
    parse: typed::<podstatus_rollout_api::PluginRollout>,
    problems: rollout_problems,
};

fn no_problems(_: &Value) -> Vec<Cause> {
    Vec::new()
}

/// [`podstatus_rollout_api::validate`]'s findings as causes.
fn rollout_problems(object: &Value) -> Vec<Cause> {
    match podstatus_rollout_api::PluginRollout::deserialize(object) {
        Ok(rollout) => podstatus_rollout_api::validate(&rollout)
            .into_iter()
            .map(|invalid| {
                let value = object.pointer(&format!("/{}", invalid.field.replace('.', "/")));
                let value = value.map_or_else(String::new, |v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
                Cause::invalid(&invalid.field, &value, &invalid.message)
            })
            .collect(),
        Err(error) => vec![Cause::invalid("spec", "", &error.to_string())],
    }
}

fn typed<T: serde::de::DeserializeOwned + serde::Serialize>(value: &Value) -> Result<Value, String> {
    let object = T::deserialize(value).map_err(|e| e.to_string())?;
    serde_json::to_value(object).map_err(|e| e.to_string())
}

/// Which part of a stored object a write replaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// Everything but the status (a PUT of the object; the status is kept).
    Main,
    /// The status only (a PUT of `/status`; the rest is kept).
    Status,
}

/// (plural, namespace or "", name).
type Key = (&'static str, String, String);

/// The objects, behind one lock (writes are rare: a node's heartbeat every 10 s).
#[derive(Debug)]
pub(crate) struct ObjectStore {
    state: Mutex<State>,
    /// Objects held at most, all kinds together: past it a create is refused with 403
    /// "exceeded quota" (as a ResourceQuota refuses), so a client cannot grow the
    /// server's memory by creating objects, however small.
    max_objects: usize,
    /// Largest object stored, encoded (etcd's limit, as for pods).
    max_object_bytes: usize,
}

#[derive(Debug, Default)]
struct State {
    /// The last resourceVersion given (this store's own sequence: resourceVersions are
    /// opaque to clients and only compared for equality).
    version: u64,
    objects: BTreeMap<Key, Arc<Value>>,
}

impl ObjectStore {
    /// An empty store with these limits.
    pub fn new(max_objects: usize, max_object_bytes: usize) -> Self {
        Self { state: Mutex::new(State::default()), max_objects, max_object_bytes }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The objects of `resource` (in `namespace`, or all), in name order, with the
    /// store's resourceVersion.
    pub fn list(&self, resource: &Resource, namespace: Option<&str>) -> (u64, Vec<Arc<Value>>) {
        let state = self.lock();
        let objects = state
            .objects
            .iter()
            .filter(|((plural, ns, _), _)| *plural == resource.plural && namespace.is_none_or(|wanted| wanted == ns))
            .map(|(_, object)| Arc::clone(object))
            .collect();
        (state.version, objects)
    }

    /// One object.
    pub fn get(&self, resource: &Resource, namespace: &str, name: &str) -> Result<Arc<Value>, Failure> {
        self.lock()
            .objects
            .get(&(resource.plural, namespace.to_owned(), name.to_owned()))
            .cloned()
            .ok_or_else(|| Failure::not_found(resource.plural, name))
    }

    /// Creates `object` (already checked by [`checked_body`]); the server's fields are
    /// set here. 409 `AlreadyExists` when the name is taken.
    pub fn create(&self, resource: &Resource, namespace: &str, mut object: Value) -> Result<Arc<Value>, Failure> {
        let name = name_of(&object);
        let mut state = self.lock();
        let key = (resource.plural, namespace.to_owned(), name.clone());
        if state.objects.contains_key(&key) {
            return Err(Failure::already_exists(resource.plural, &name));
        }
        if state.objects.len() >= self.max_objects {
            return Err(Failure::quota_exceeded(resource.plural, self.max_objects));
        }
        state.version += 1;
        let metadata = &mut object["metadata"];
        metadata["uid"] = json!(new_uid());
        metadata["creationTimestamp"] = json!(now());
        metadata["resourceVersion"] = json!(state.version.to_string());
        if let Some(fields) = metadata.as_object_mut() {
            fields.remove("deletionTimestamp");
            fields.remove("deletionGracePeriodSeconds");
        }
        if !resource.namespaced
            && let Some(fields) = metadata.as_object_mut()
        {
            fields.remove("namespace");
        }
        check_size(&object, &name, self.max_object_bytes)?;
        let stored = Arc::new(object);
        state.objects.insert(key, Arc::clone(&stored));
        Ok(stored)
    }

    /// Replaces `part` of the stored object with `object`'s. A `metadata.resourceVersion`
    /// or `metadata.uid` in `object` is a precondition (409 `Conflict` when stale); the
    /// server's metadata fields are kept.
    pub fn update(
        &self,
        resource: &Resource,
        namespace: &str,
        name: &str,
        object: Value,
        part: Part,
    ) -> Result<Arc<Value>, Failure> {
        let mut state = self.lock();
        let key = (resource.plural, namespace.to_owned(), name.to_owned());
        let stored = state.objects.get(&key).cloned().ok_or_else(|| Failure::not_found(resource.plural, name))?;
        for field in ["resourceVersion", "uid"] {
            let given = object.pointer(&format!("/metadata/{field}")).and_then(Value::as_str).filter(|v| !v.is_empty());
            if let Some(given) = given
                && stored["metadata"][field].as_str() != Some(given)
            {
                return Err(Failure::conflict(resource.plural, name));
            }
        }
        let mut updated = match part {
            Part::Status => {
                let mut updated = (*stored).clone();
                updated["status"] = object.get("status").cloned().unwrap_or_else(|| json!({}));
                updated
            }
            Part::Main => {
                let mut updated = object;
                if resource.has_status {
                    updated["status"] = stored.get("status").cloned().unwrap_or(Value::Null);
                }
                updated
            }
        };
        for field in ["uid", "creationTimestamp", "deletionTimestamp", "namespace"] {
            match stored["metadata"].get(field) {
                Some(value) => updated["metadata"][field] = value.clone(),
                None => {
                    if let Some(fields) = updated["metadata"].as_object_mut() {
                        fields.remove(field);
                    }
                }
            }
        }
        if updated.get("status").is_some_and(Value::is_null)
            && let Some(fields) = updated.as_object_mut()
        {
            fields.remove("status");
        }
        (resource.parse)(&updated)
            .map_err(|e| Failure::bad_request(format!("the updated object is not valid: {e}")))?;
        let problems = (resource.problems)(&updated);
        if !problems.is_empty() {
            return Err(Failure::invalid_kind(resource.kind, name, problems));
        }
        check_size(&updated, name, self.max_object_bytes)?;
        state.version += 1;
        updated["metadata"]["resourceVersion"] = json!(state.version.to_string());
        let updated = Arc::new(updated);
        state.objects.insert(key, Arc::clone(&updated));
        Ok(updated)
    }

    /// Deletes the object at once (these kinds have no finalizers here); a UID or
    /// resourceVersion precondition must hold. Answers the object as it was.
    pub fn delete(
        &self,
        resource: &Resource,
        namespace: &str,
        name: &str,
        uid: Option<&str>,
        resource_version: Option<&str>,
    ) -> Result<Arc<Value>, Failure> {
        let mut state = self.lock();
        let key = (resource.plural, namespace.to_owned(), name.to_owned());
        let stored = state.objects.get(&key).cloned().ok_or_else(|| Failure::not_found(resource.plural, name))?;
        let holds =
            |field: &str, wanted: Option<&str>| wanted.is_none_or(|w| stored["metadata"][field].as_str() == Some(w));
        if !holds("uid", uid) || !holds("resourceVersion", resource_version) {
            return Err(Failure::conflict(resource.plural, name));
        }
        state.version += 1;
        state.objects.remove(&key);
        Ok(stored)
    }
}

/// A client's object for `resource` at `namespace`/`name` (the URL's; `name` is None on
/// a create, taken from the body): the kind and apiVersion it must have, a valid name
/// and namespace (422), its namespace matching the URL's (400), valid as its type
/// (400). Returns the object with kind, apiVersion and namespace set.
pub(crate) fn checked_body(
    resource: &Resource,
    mut object: Value,
    namespace: &str,
    name: Option<&str>,
    directive: FieldValidation,
) -> Result<(Value, Vec<String>), Failure> {
    if !object.is_object() {
        return Err(Failure::bad_request(format!("the body must be a {} object", resource.kind)));
    }
    if let Some(kind) = object.get("kind").and_then(Value::as_str).filter(|kind| *kind != resource.kind) {
        return Err(Failure::bad_request(format!("the body is a {}, not a {}", excerpt(kind), resource.kind)));
    }
    object["kind"] = json!(resource.kind);
    object["apiVersion"] = json!(resource.api_version());
    if !object.get("metadata").is_some_and(Value::is_object) {
        object["metadata"] = json!({});
    }
    let given_name = object["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    match name {
        Some(name) if !given_name.is_empty() && given_name != name => {
            return Err(Failure::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({})",
                excerpt(&given_name),
                excerpt(name)
            )));
        }
        Some(name) => object["metadata"]["name"] = json!(name),
        None => {}
    }
    if resource.namespaced {
        match object["metadata"]["namespace"].as_str() {
            Some(given) if !given.is_empty() && given != namespace => {
                return Err(Failure::bad_request(format!(
                    "the namespace of the provided object does not match the namespace sent on the request ({} != {})",
                    excerpt(given),
                    excerpt(namespace)
                )));
            }
            _ => object["metadata"]["namespace"] = json!(namespace),
        }
    }
    let name = object["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    let mut causes = Vec::new();
    if name.is_empty() {
        causes.push(Cause::required("metadata.name"));
    } else {
        causes.extend(
            validation::subdomain_problems(&name).iter().map(|problem| Cause::invalid("metadata.name", &name, problem)),
        );
    }
    if resource.namespaced {
        causes.extend(
            validation::label_problems(namespace)
                .iter()
                .map(|problem| Cause::invalid("metadata.namespace", namespace, problem)),
        );
    }
    if !causes.is_empty() {
        return Err(Failure::invalid_kind(resource.kind, &name, causes));
    }
    // What the type keeps is stored: fields the kind lacks are dropped, as
    // kube-apiserver drops them (and refuses or warns of them as `directive` says).
    let kept = (resource.parse)(&object)
        .map_err(|e| Failure::bad_request(format!("the body is not a valid {}: {e}", resource.kind)))?;
    let problems = (resource.problems)(&kept);
    if !problems.is_empty() {
        return Err(Failure::invalid_kind(resource.kind, &name, problems));
    }
    let warnings = directive.judge(&object, &kept, resource.kind)?;
    Ok((kept, warnings))
}

fn name_of(object: &Value) -> String {
    object["metadata"]["name"].as_str().unwrap_or_default().to_owned()
}

fn check_size(object: &Value, name: &str, limit: usize) -> Result<(), Failure> {
    let size = serde_json::to_vec(object).map_or(usize::MAX, |bytes| bytes.len());
    if size > limit {
        return Err(Failure::object_too_large(name, size, limit));
    }
    Ok(())
}

fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const IGNORE: FieldValidation = FieldValidation::Ignore;

    #[test]
    fn fields_the_kind_lacks_are_dropped_and_judged() {
        let given =
            json!({"metadata": {"name": "n1", "labelz": {}}, "spec": {"podCIDR": "10.0.0.0/24", "podCIDRZ": 1}});
        let (kept, warnings) = checked_body(&NODES, given.clone(), "", None, FieldValidation::Warn).expect("warned");
        assert_eq!(warnings, ["unknown field \"metadata.labelz\"", "unknown field \"spec.podCIDRZ\""]);
        assert_eq!((kept["spec"]["podCIDR"].as_str(), kept["spec"].get("podCIDRZ")), (Some("10.0.0.0/24"), None));
        let refused = checked_body(&NODES, given, "", None, FieldValidation::Strict).expect_err("strict");
        assert!(
            refused.message.starts_with("Node in version \"v1\" cannot be handled as a Node"),
            "{}",
            refused.message
        );
    }

    fn node(name: &str) -> Value {
        checked_body(&NODES, json!({"metadata": {"name": name}, "status": {"phase": "Running"}}), "", None, IGNORE)
            .expect("a valid node")
            .0
    }

    #[test]
    fn the_server_owns_identity_and_versions_and_status_is_written_apart() {
        let store = ObjectStore::new(10, 1 << 20);
        let created = store.create(&NODES, "", node("n1")).expect("created");
        assert_eq!(created["metadata"]["resourceVersion"], "1");
        assert!(created["metadata"]["uid"].as_str().is_some_and(|uid| uid.len() == 36));
        assert_eq!(store.create(&NODES, "", node("n1")).expect_err("taken").code, 409);

        let mut main = (*created).clone();
        main["metadata"]["labels"] = json!({"a": "b"});
        main["status"] = json!({"phase": "Terminated"});
        let updated = store.update(&NODES, "", "n1", main.clone(), Part::Main).expect("updated");
        assert_eq!(updated["metadata"]["labels"]["a"], "b");
        assert_eq!(updated["status"]["phase"], "Running", "a PUT of the object keeps the status");
        assert_eq!(store.update(&NODES, "", "n1", main, Part::Main).expect_err("stale version").code, 409);

        let status = json!({"metadata": {"uid": updated["metadata"]["uid"]}, "status": {"phase": "Pending"}});
        let written = store.update(&NODES, "", "n1", status, Part::Status).expect("status");
        assert_eq!(
            (written["status"]["phase"].as_str(), written["metadata"]["labels"]["a"].as_str()),
            (Some("Pending"), Some("b"))
        );
        assert_eq!(store.delete(&NODES, "", "n1", Some("other"), None).expect_err("wrong uid").code, 409);
        store.delete(&NODES, "", "n1", None, None).expect("deleted");
        assert_eq!(store.get(&NODES, "", "n1").expect_err("gone").code, 404);
    }

    #[test]
    fn names_sizes_types_and_the_object_cap_are_enforced() {
        let invalid =
            checked_body(&NODES, json!({"metadata": {"name": "Not_A_Name"}}), "", None, IGNORE).expect_err("422");
        assert_eq!((invalid.code, invalid.causes[0].field.as_str()), (422, "metadata.name"));
        let lease =
            checked_body(&LEASES, json!({"metadata": {"name": "n1"}}), "Bad NS", None, IGNORE).expect_err("422");
        assert_eq!(lease.causes[0].field, "metadata.namespace");
        let mistyped = checked_body(
            &LEASES,
            json!({"metadata": {"name": "n1"}, "spec": {"leaseDurationSeconds": "x"}}),
            "ns",
            None,
            IGNORE,
        );
        assert_eq!(mistyped.expect_err("400").code, 400);

        let store = ObjectStore::new(1, 400);
        let big = checked_body(
            &NODES,
            json!({"metadata": {"name": "big", "labels": {"a": "x".repeat(500)}}}),
            "",
            None,
            IGNORE,
        );
        assert_eq!(store.create(&NODES, "", big.expect("valid").0).expect_err("too large").code, 413);
        store.create(&NODES, "", node("n1")).expect("room for one");
        let refused = store.create(&NODES, "", node("n2")).expect_err("over the cap");
        assert_eq!((refused.code, refused.reason), (403, "Forbidden"));
    }
}
