//! The pod handlers: list, watch, get, create, update, status update and patch, delete.
//! Each turns a [`Call`] into a call on the store and the store's answer into
//! Kubernetes' response.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode};
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, Time};
use serde::Serialize;
use serde_json::{Value, json};

use crate::call::{Call, Context};
use crate::excerpt::excerpt;
use crate::identifiers::{new_uid, random_suffix};
use crate::paging::{self, PageRequest};
use crate::response::{Body, SendFailed, json_response, streaming_response};
use crate::selectors::Selector;
use crate::stats::Held;
use crate::status_body::Failure;
use crate::table::{self, IncludeObject};
use crate::validation;
use crate::watch::{self, Start, WatchFormat};
use podstatus_backends::{ApiError, ApiServer, DeleteOptions, StatusPatch, StatusUpdate};

const MERGE_PATCH: &str = "application/merge-patch+json";
const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";

/// How often a merge patch is retried when a concurrent write got in between its read
/// and its write (Kubernetes retries such patches too).
const PATCH_ATTEMPTS: usize = 5;

/// GET of a pod list, or a watch with `?watch=true`.
pub(crate) fn list_or_watch(
    call: &Call,
    context: &Context,
    namespace: Option<&str>,
) -> Result<Response<Body>, Failure> {
    let selector = Selector::parse(call.param("fieldSelector"), call.param("labelSelector"))
        .map_err(|error| Failure::bad_request(error.to_string()))?;
    let table = table_request(call)?;
    let counter = if call.flag("watch") { &context.counters.pod_watches } else { &context.counters.pod_lists };
    counter.fetch_add(1, Ordering::SeqCst);
    if call.flag("watch") {
        return start_watch(call, context, namespace, selector, table);
    }
    let paging = PageRequest::parse(call.param("limit"), call.param("continue"), call.param("resourceVersion"))?;
    let (resource_version, pods) = match &paging.after {
        Some(after) => match context.list_snapshots.find(after.resource_version) {
            Some(pods) => (after.resource_version, pods),
            None => return Err(Failure::continue_expired()),
        },
        None => {
            let (resource_version, pods) = context.store.snapshot();
            (resource_version, Arc::new(pods))
        }
    };
    let namespace = namespace.map(str::to_owned);
    let keep = move |pod: &Pod| {
        namespace.as_deref().is_none_or(|ns| pod.metadata.namespace.as_deref() == Some(ns)) && selector.matches(pod)
    };
    let (items, next) = paging::page(&pods, paging.after.as_ref().map(|c| &c.after), paging.limit, keep);
    let token = next.map(|key| paging::encode(resource_version, key));
    match &token {
        Some(_) if paging.after.is_none() => context.list_snapshots.keep(resource_version, Arc::clone(&pods)),
        Some(_) => {}
        None => context.list_snapshots.release(resource_version),
    }
    let (document, encode): (Vec<u8>, Encoder) = match table {
        Some(include) => {
            let now = now();
            let mut empty = table::table(std::iter::empty(), Some(resource_version), include, now);
            if let Some(token) = &token {
                empty["metadata"]["continue"] = serde_json::Value::String(token.clone());
            }
            let encode: Encoder =
                Box::new(move |pod, out| serde_json::to_writer(out, &table::row(pod, include, now)).is_ok());
            (serde_json::to_vec(&empty).unwrap_or_default(), encode)
        }
        None => {
            let empty = PodListBody {
                kind: "PodList",
                api_version: "v1",
                metadata: ListMeta {
                    resource_version: Some(resource_version.to_string()),
                    continue_: token,
                    ..ListMeta::default()
                },
                items: Vec::new(),
            };
            let encode: Encoder = Box::new(|pod, out| serde_json::to_writer(out, pod).is_ok());
            (serde_json::to_vec(&empty).unwrap_or_default(), encode)
        }
    };
    // The document with no items ends in `[]}`: the items go in between.
    let Some(head) = document.strip_suffix(b"]}").filter(|head| head.ends_with(b"[")) else {
        return Err(ApiError::Internal { message: "a list document without its items at the end".into() }.into());
    };
    Ok(stream_list(context, items, |_: &Pod| true, head.to_vec(), encode))
}

/// Encodes one list item after `out`; false if it cannot be encoded.
pub(crate) type Encoder<T = Pod> = Box<dyn Fn(&T, &mut Vec<u8>) -> bool + Send + Sync>;

/// Bytes of a list encoded before they are queued for the client.
const LIST_CHUNK: usize = 64 << 10;

/// A list (`PodList` or `Table`), streamed: items are encoded as the client takes them,
/// at most `watcher_buffer_bytes` waiting, so a client that does not read holds about
/// that much however long the list (the pods themselves are shared with the store). A
/// client that takes nothing for `body_timeout` gets the list cut short: the JSON it
/// has is incomplete, as when kube-apiserver's request timeout cuts a response.
pub(crate) fn stream_list<T: Send + Sync + 'static>(
    context: &Context,
    pods: Vec<Arc<T>>,
    keep: impl Fn(&T) -> bool + Send + Sync + 'static,
    head: Vec<u8>,
    encode: Encoder<T>,
) -> Response<Body> {
    let (out, response) = streaming_response(context.options.watcher_buffer_bytes);
    let patience = context.options.body_timeout;
    let counters = Arc::clone(&context.counters);
    tokio::spawn(async move {
        let mut chunk = head;
        let mut first = true;
        for pod in pods.iter().filter(|pod| keep(pod)) {
            if !first {
                chunk.push(b',');
            }
            first = false;
            if !encode(pod, &mut chunk) {
                return;
            }
            if chunk.len() >= LIST_CHUNK {
                let full = std::mem::replace(&mut chunk, Vec::with_capacity(LIST_CHUNK + 1024));
                if let Err(failed) = out.send(Bytes::from(full), patience).await {
                    if failed == SendFailed::Stalled {
                        counters.slow_lists_closed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    return;
                }
            }
        }
        chunk.extend_from_slice(b"]}");
        if out.send(Bytes::from(chunk), patience).await == Err(SendFailed::Stalled) {
            counters.slow_lists_closed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    response
}

/// A `PodList` of borrowed pods.
#[derive(Serialize)]
struct PodListBody<'a> {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    metadata: ListMeta,
    items: Vec<&'a Pod>,
}

fn start_watch(
    call: &Call,
    context: &Context,
    namespace: Option<&str>,
    selector: Selector,
    table: Option<IncludeObject>,
) -> Result<Response<Body>, Failure> {
    let start = match call.param("resourceVersion") {
        None | Some("" | "0") => Start::Now,
        Some(version) => Start::After(version.parse().map_err(|_| {
            Failure::bad_request(format!("resourceVersion: Invalid value: \"{version}\": must be an integer"))
        })?),
    };
    let send_initial_events = call.flag("sendInitialEvents");
    let start = if send_initial_events { Start::Now } else { start };
    let timeout = match call.param("timeoutSeconds") {
        None | Some("") => None,
        Some(seconds) => Some(Duration::from_secs(seconds.parse().map_err(|_| {
            Failure::bad_request(format!("timeoutSeconds: Invalid value: \"{seconds}\": must be a whole number"))
        })?)),
    };
    let format = WatchFormat {
        selector,
        namespace: namespace.map(str::to_owned),
        table,
        timeout,
        initial_events_bookmark: send_initial_events,
    };
    let (out, response) = streaming_response(context.options.watcher_buffer_bytes);
    match context.hub.subscribe(start) {
        Ok(subscription) => {
            let patience = context.options.slow_watcher_timeout;
            let counters = Arc::clone(&context.counters);
            let stopping = context.stopping.clone();
            tokio::spawn(async move {
                let _open = Held::new(&counters, |counters| &counters.watches);
                if watch::stream(subscription, format, out, patience, stopping).await == Err(SendFailed::Stalled) {
                    counters.slow_watches_closed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            });
        }
        // Kubernetes reports a resume from too far back inside the watch: a 200 stream
        // whose only event is the 410 ERROR (clients relist on it).
        Err(failure) => {
            let _ = out.try_send(watch::expired_event(&failure));
        }
    }
    Ok(response)
}

/// GET of one pod (also `/status`).
pub(crate) fn get(call: &Call, context: &Context, namespace: &str, name: &str) -> Result<Response<Body>, Failure> {
    let pod = context.store.get_pod(namespace, name)?;
    match table_request(call)? {
        Some(include) => Ok(json_response(StatusCode::OK, &table::table([&*pod], None, include, now()))),
        None => Ok(json_response(StatusCode::OK, &to_json(&pod))),
    }
}

/// POST: creates a pod. Like kube-apiserver (its `BeforeCreate`), the server owns the
/// UID, the creation time, the resourceVersion and the deletion fields: whatever the
/// client sent there is replaced or dropped (a client could otherwise take another
/// pod's UID, by which the pod manager keys). A name from `generateName`; name and
/// namespace must be DNS-1123 (422); a pod without status starts Pending; a pod over
/// the object size limit is refused (413).
pub(crate) fn create(call: &Call, context: &Context, namespace: &str) -> Result<Response<Body>, Failure> {
    let mut pod = pod_body(call)?;
    check_namespace(&pod, namespace)?;
    pod.metadata.namespace = Some(namespace.to_owned());
    if pod.metadata.name.as_deref().is_none_or(str::is_empty)
        && let Some(prefix) = pod.metadata.generate_name.as_deref().filter(|p| !p.is_empty())
    {
        let prefix: String = prefix.chars().take(validation::GENERATE_NAME_PREFIX_MAX).collect();
        pod.metadata.name = Some(format!("{prefix}{}", random_suffix()));
    }
    validation::check_new(&pod)?;
    pod.metadata.uid = Some(new_uid());
    pod.metadata.creation_timestamp = Some(Time(now()));
    pod.metadata.deletion_timestamp = None;
    pod.metadata.deletion_grace_period_seconds = None;
    pod.metadata.resource_version = None;
    pod.status.get_or_insert_with(|| PodStatus { phase: Some("Pending".into()), ..Default::default() });
    validation::check_size(&pod.metadata, pod.spec.as_ref(), pod.status.as_ref(), context.options.max_object_bytes)?;
    let created = context.store.create_pod(pod)?;
    Ok(json_response(StatusCode::CREATED, &to_json(&created)))
}

/// PUT of the pod: its UID and resourceVersion are preconditions; the status is kept.
pub(crate) fn replace(call: &Call, context: &Context, namespace: &str, name: &str) -> Result<Response<Body>, Failure> {
    let mut pod = pod_body(call)?;
    check_identity(&pod, namespace, name)?;
    pod.metadata.namespace = Some(namespace.to_owned());
    pod.metadata.name = Some(name.to_owned());
    let updated = update_checked(context, pod)?;
    Ok(json_response(StatusCode::OK, &to_json(&updated)))
}

/// Writes an update of the pod (PUT, PATCH) with kube-apiserver's update validation
/// and the size limit, checked against the stored pod under the store's lock.
fn update_checked(context: &Context, pod: Pod) -> Result<Arc<Pod>, Failure> {
    let limit = context.options.max_object_bytes;
    context.store.update_pod_checked(pod, |stored, updated| {
        // Server-owned, kept from the stored pod as kube-apiserver's `BeforeUpdate` does.
        let (old, new) = (&stored.metadata, &mut updated.metadata);
        new.creation_timestamp.clone_from(&old.creation_timestamp);
        new.deletion_timestamp.clone_from(&old.deletion_timestamp);
        new.deletion_grace_period_seconds = old.deletion_grace_period_seconds;
        validation::check_update(stored, updated)?;
        validation::check_size(&updated.metadata, updated.spec.as_ref(), updated.status.as_ref(), limit)
    })
}

/// PUT of `/status`: only the status is written; the body's UID and resourceVersion are
/// preconditions.
pub(crate) fn replace_status(
    call: &Call,
    context: &Context,
    namespace: &str,
    name: &str,
) -> Result<Response<Body>, Failure> {
    let pod = pod_body(call)?;
    check_identity(&pod, namespace, name)?;
    let update = StatusUpdate {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        uid_precondition: pod.metadata.uid,
        resource_version_precondition: pod.metadata.resource_version,
        status: pod.status.unwrap_or_default(),
    };
    let updated = update_status_checked(context, update)?;
    Ok(json_response(StatusCode::OK, &to_json(&updated)))
}

/// Writes a status with the size limit, checked under the store's lock.
fn update_status_checked(context: &Context, update: StatusUpdate) -> Result<Arc<Pod>, Failure> {
    let limit = context.options.max_object_bytes;
    context.store.update_pod_status_checked(update, |stored, status| {
        validation::check_size(&stored.metadata, stored.spec.as_ref(), Some(status), limit)
    })
}

/// PATCH of `/status`: a JSON merge patch or a strategic merge patch (conditions merge by
/// type); `metadata.uid` in the patch is a precondition.
pub(crate) fn patch_status(
    call: &Call,
    context: &Context,
    namespace: &str,
    name: &str,
) -> Result<Response<Body>, Failure> {
    let patch = patch_body(call)?;
    patch_uid(&patch)?;
    let limit = context.options.max_object_bytes;
    let patched = match call.content_type.as_str() {
        STRATEGIC_MERGE_PATCH => {
            check_patch_resource_version(context, namespace, name, &patch)?;
            let patch =
                StatusPatch { namespace: namespace.to_owned(), name: name.to_owned(), uid_precondition: None, patch };
            context.store.patch_pod_status_checked(patch, |stored, status| {
                validation::check_size(&stored.metadata, stored.spec.as_ref(), Some(status), limit)
            })?
        }
        MERGE_PATCH => merge_patch_retrying(context, namespace, name, &patch, |context, stored, patched| {
            let update = StatusUpdate {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                uid_precondition: patched.metadata.uid.clone(),
                resource_version_precondition: stored.metadata.resource_version.clone(),
                status: patched.status.unwrap_or_default(),
            };
            update_status_checked(context, update)
        })?,
        other => return Err(Failure::unsupported_media_type(other)),
    };
    Ok(json_response(StatusCode::OK, &to_json(&patched)))
}

/// PATCH of the pod itself (labels, annotations, ...): the status is kept. A strategic
/// merge patch is applied as a merge patch with its `$` directives dropped: the same for
/// maps such as labels and annotations, but lists are replaced whole, not merged by key.
pub(crate) fn patch(call: &Call, context: &Context, namespace: &str, name: &str) -> Result<Response<Body>, Failure> {
    let mut patch = patch_body(call)?;
    patch_uid(&patch)?;
    match call.content_type.as_str() {
        MERGE_PATCH => {}
        STRATEGIC_MERGE_PATCH => drop_directives(&mut patch),
        other => return Err(Failure::unsupported_media_type(other)),
    }
    let patched = merge_patch_retrying(context, namespace, name, &patch, |context, stored, mut patched| {
        patched.metadata.resource_version = stored.metadata.resource_version.clone();
        update_checked(context, patched)
    })?;
    Ok(json_response(StatusCode::OK, &to_json(&patched)))
}

/// DELETE with `DeleteOptions` (body, or `?gracePeriodSeconds=`); answers with the pod as
/// it was deleted, or marked for deletion (graceful).
pub(crate) fn delete(call: &Call, context: &Context, namespace: &str, name: &str) -> Result<Response<Body>, Failure> {
    let mut body = if call.body.iter().all(u8::is_ascii_whitespace) { json!({}) } else { call.json_body()? };
    let Some(fields) = body.as_object_mut() else {
        return Err(Failure::bad_request("the body of a DELETE must be a DeleteOptions object"));
    };
    // Typed: a precondition or grace period of the wrong type is a 400, never ignored.
    // (apiVersion and kind vary by client: v1, meta.k8s.io/v1.)
    fields.remove("apiVersion");
    fields.remove("kind");
    let typed: k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions = serde_json::from_value(body)
        .map_err(|e| Failure::bad_request(format!("the body is not valid DeleteOptions: {e}")))?;
    let grace = match typed.grace_period_seconds {
        Some(seconds) => Some(seconds),
        None => match call.param("gracePeriodSeconds") {
            Some(seconds) => Some(seconds.parse::<i64>().map_err(|_| {
                Failure::bad_request(format!(
                    "gracePeriodSeconds: Invalid value: \"{}\": must be an integer",
                    excerpt(seconds)
                ))
            })?),
            None => None,
        },
    };
    let preconditions = typed.preconditions.unwrap_or_default();
    let options = DeleteOptions {
        uid_precondition: preconditions.uid,
        grace_period_seconds: grace,
        resource_version_precondition: preconditions.resource_version,
    };
    let pod = context.store.delete_pod(namespace, name, &options)?;
    Ok(json_response(StatusCode::OK, &to_json(&pod)))
}

/// Read, merge-patch, write with the read resourceVersion as precondition; a conflict
/// caused by a concurrent write (not by the patch's own preconditions) is retried.
fn merge_patch_retrying(
    context: &Context,
    namespace: &str,
    name: &str,
    patch: &Value,
    write: impl Fn(&Context, &Pod, Pod) -> Result<Arc<Pod>, Failure>,
) -> Result<Arc<Pod>, Failure> {
    let explicit_version = patch.pointer("/metadata/resourceVersion").is_some();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let stored = context.store.get_pod(namespace, name)?;
        let mut document = to_json(&stored);
        // RFC 7386, as `application/merge-patch+json` asks.
        json_patch::merge(&mut document, patch);
        let mut patched: Pod = serde_json::from_value(document)
            .map_err(|e| Failure::bad_request(format!("the patched pod is not a valid Pod: {e}")))?;
        // The URL names the pod: a patch cannot move it to another name or namespace.
        check_identity(&patched, namespace, name)?;
        patched.metadata.namespace = Some(namespace.to_owned());
        patched.metadata.name = Some(name.to_owned());
        if let Some(version) = patch.pointer("/metadata/resourceVersion").and_then(Value::as_str)
            && Some(version) != stored.metadata.resource_version.as_deref()
        {
            return Err(ApiError::modified(name).into());
        }
        match write(context, &stored, patched) {
            Err(failure)
                if failure.reason == "Conflict"
                    && !explicit_version
                    && attempt < PATCH_ATTEMPTS
                    && uid_holds(patch, &stored) =>
            {
                continue;
            }
            result => return result,
        }
    }
}

/// Whether a UID the patch names (if any) is the stored pod's: if not, a conflict is the
/// patch's own and retrying cannot help.
fn uid_holds(patch: &Value, stored: &Pod) -> bool {
    patch.pointer("/metadata/uid").and_then(Value::as_str).is_none_or(|uid| Some(uid) == stored.metadata.uid.as_deref())
}

/// A strategic merge patch names a resourceVersion to apply only to that version.
fn check_patch_resource_version(context: &Context, namespace: &str, name: &str, patch: &Value) -> Result<(), Failure> {
    if let Some(version) = patch.pointer("/metadata/resourceVersion").and_then(Value::as_str) {
        let stored = context.store.get_pod(namespace, name)?;
        if Some(version) != stored.metadata.resource_version.as_deref() {
            return Err(ApiError::modified(name).into());
        }
    }
    Ok(())
}

/// The patch's `metadata.uid` (a precondition): a string or absent; anything else is a
/// 400, never ignored (ignoring it would drop the precondition).
fn patch_uid(patch: &Value) -> Result<Option<&str>, Failure> {
    match patch.get("metadata") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(_)) => {}
        Some(_) => return Err(Failure::bad_request("metadata in the patch must be an object")),
    }
    match patch.pointer("/metadata/uid") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(uid)) => Ok(Some(uid)),
        Some(other) => Err(Failure::bad_request(format!(
            "metadata.uid in the patch must be a string, not {}",
            excerpt(&other.to_string())
        ))),
    }
}

fn drop_directives(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|key, _| !key.starts_with('$'));
            map.values_mut().for_each(drop_directives);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_directives),
        _ => {}
    }
}

fn patch_body(call: &Call) -> Result<Value, Failure> {
    let is_patch = matches!(call.content_type.as_str(), MERGE_PATCH | STRATEGIC_MERGE_PATCH);
    if !is_patch {
        return Err(Failure::unsupported_media_type(if call.content_type.is_empty() {
            "(none)"
        } else {
            &call.content_type
        }));
    }
    let patch: Value = serde_json::from_slice(&call.body)
        .map_err(|e| Failure::bad_request(format!("the patch is not valid JSON: {e}")))?;
    if !patch.is_object() {
        return Err(Failure::bad_request("the patch must be a JSON object"));
    }
    Ok(patch)
}

fn pod_body(call: &Call) -> Result<Pod, Failure> {
    let value = call.json_body()?;
    if let Some(kind) = value.get("kind").and_then(Value::as_str).filter(|kind| *kind != "Pod") {
        return Err(Failure::bad_request(format!("the body is a {}, not a Pod", excerpt(kind))));
    }
    serde_json::from_value(value).map_err(|e| Failure::bad_request(format!("the body is not a valid Pod: {e}")))
}

fn check_namespace(pod: &Pod, namespace: &str) -> Result<(), Failure> {
    check_given(pod.metadata.namespace.as_deref(), namespace, |given, namespace| {
        format!(
            "the namespace of the provided object does not match the namespace sent on the request ({given} != {namespace})"
        )
    })
}

fn check_identity(pod: &Pod, namespace: &str, name: &str) -> Result<(), Failure> {
    check_namespace(pod, namespace)?;
    check_given(pod.metadata.name.as_deref(), name, |given, name| {
        format!("the name of the object ({given}) does not match the name on the URL ({name})")
    })
}

/// A field the body gives (`given`, unless absent or empty) must be what the request
/// says (`expected`); else a Bad Request with `message` of excerpts of both.
fn check_given(given: Option<&str>, expected: &str, message: impl FnOnce(&str, &str) -> String) -> Result<(), Failure> {
    match given {
        Some(given) if !given.is_empty() && given != expected => {
            Err(Failure::bad_request(message(&excerpt(given), &excerpt(expected))))
        }
        _ => Ok(()),
    }
}

/// Whether the client asked for a `Table`, and with which row objects.
pub(crate) fn table_request(call: &Call) -> Result<Option<IncludeObject>, Failure> {
    if !table::wants_table(&call.accept) {
        return Ok(None);
    }
    IncludeObject::parse(call.param("includeObject")).map(Some).map_err(|error| Failure::bad_request(error.to_string()))
}

fn to_json(pod: &Pod) -> Value {
    serde_json::to_value(pod).unwrap_or(Value::Null)
}

fn now() -> jiff::Timestamp {
    jiff::Timestamp::now()
}
