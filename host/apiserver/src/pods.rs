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
use crate::field_validation::{FieldValidation, warned};
use crate::identifiers::{new_uid, random_suffix};
use crate::paging::{self, PageRequest};
use crate::response::{Body, SendFailed, json_response, respond, streaming_response};
use crate::selectors::Selector;
use crate::server_fields::{self, version_of};
use crate::stats::Held;
use crate::status_body::{Cause, Failure};
use crate::strategic;
use crate::table::{self, IncludeObject};
use crate::validation;
use crate::watch::{self, Start, WatchFormat};
use podstatus_backends::{ApiError, CompactPod, DeleteOptions, StatusPatch, StatusUpdate, StoredStatus};

const MERGE_PATCH: &str = "application/merge-patch+json";
const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";

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
    // A continued list is cut from its first page's snapshot; an inconsistent one (the
    // token of a 410) and a new one from the store as it is now.
    let kept = match &paging.after {
        Some(after) => match after.resource_version {
            Some(version) => match context.list_snapshots.find(version) {
                Some(pods) => Some((version, pods)),
                None => {
                    let (namespace, name) = &after.after;
                    return Err(Failure::continue_expired(paging::encode_inconsistent((namespace, name))));
                }
            },
            None => None,
        },
        None => None,
    };
    let fresh = kept.is_none();
    let (resource_version, pods) = kept.unwrap_or_else(|| {
        let (resource_version, pods) = context.store.snapshot();
        (resource_version, Arc::new(pods))
    });
    let namespace = namespace.map(str::to_owned);
    // kube-apiserver counts what is left only for a list without selectors.
    let counted = selector.is_empty();
    let keep = move |pod: &CompactPod| {
        namespace.as_deref().is_none_or(|ns| pod.namespace() == Some(ns)) && selector.matches(pod)
    };
    let (items, next) = paging::page(&pods, paging.after.as_ref().map(|c| &c.after), paging.limit, keep);
    let remaining = next.filter(|_| counted).map(|(_, left)| i64::try_from(left).unwrap_or(i64::MAX));
    let token = next.map(|(key, _)| paging::encode(resource_version, key));
    match &token {
        Some(_) if fresh => context.list_snapshots.keep(resource_version, Arc::clone(&pods)),
        Some(_) => {}
        None => context.list_snapshots.release(resource_version),
    }
    let (document, encode): (Vec<u8>, Encoder<CompactPod>) = match table {
        Some(include) => {
            let now = now();
            let mut empty = table::table(std::iter::empty(), Some(resource_version), include, now);
            if let Some(token) = &token {
                empty["metadata"]["continue"] = serde_json::Value::String(token.clone());
            }
            if let Some(remaining) = remaining {
                empty["metadata"]["remainingItemCount"] = remaining.into();
            }
            // A row reads the pod whole: parsed here, for `kubectl get` only.
            let encode: Encoder<CompactPod> = Box::new(move |pod, out| {
                pod.pod().is_ok_and(|pod| serde_json::to_writer(out, &table::row(&pod, include, now)).is_ok())
            });
            (serde_json::to_vec(&empty).unwrap_or_default(), encode)
        }
        None => {
            let empty = PodListBody {
                kind: "PodList",
                api_version: "v1",
                metadata: ListMeta {
                    resource_version: Some(resource_version.to_string()),
                    continue_: token,
                    remaining_item_count: remaining,
                    ..ListMeta::default()
                },
                items: [],
            };
            // Each item is the stored pod's bytes: nothing is serialised.
            let encode: Encoder<CompactPod> = Box::new(|pod, out| {
                out.extend_from_slice(pod.json().as_bytes());
                true
            });
            (serde_json::to_vec(&empty).unwrap_or_default(), encode)
        }
    };
    // The document with no items ends in `[]}`: the items go in between.
    let Some(head) = document.strip_suffix(b"]}").filter(|head| head.ends_with(b"[")) else {
        return Err(ApiError::Internal { message: "a list document without its items at the end".into() }.into());
    };
    Ok(stream_list(context, items, |_: &CompactPod| true, head.to_vec(), encode))
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

/// A `PodList`'s head: its items are written after it, each the stored pod's bytes.
#[derive(Serialize)]
struct PodListBody {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    metadata: ListMeta,
    items: [(); 0],
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
        bookmarks: call.flag("allowWatchBookmarks"),
    };
    let (out, response) = streaming_response(context.options.watcher_buffer_bytes);
    match context.hub.subscribe(start, format.selector.node_name()) {
        Ok(subscription) => {
            let patience = context.options.slow_watcher_timeout;
            let counters = Arc::clone(&context.counters);
            let stopping = context.stopping.clone();
            tokio::spawn(async move {
                let _open = Held::new(&counters, |counters| &counters.watches);
                let ended = watch::stream(subscription, format, out, patience, stopping, &counters.pod_watch_events);
                if ended.await == Err(SendFailed::Stalled) {
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
    let stored = context.store.get_compact(namespace, name)?;
    match table_request(call)? {
        // A one-row Table carries the pod's resourceVersion, as kube-apiserver's does.
        Some(include) => {
            let pod = typed(&stored)?;
            Ok(json_response(StatusCode::OK, &table::table([&pod], version_of(&pod), include, now())))
        }
        None => Ok(pod_response(StatusCode::OK, &stored)),
    }
}

/// A pod as the answer: the stored pod's bytes (what serialising it would write).
fn pod_response(status: StatusCode, pod: &CompactPod) -> Response<Body> {
    respond(status, "application/json", pod.json().as_bytes().to_vec())
}

/// A stored pod parsed, for the few answers that read it whole (tables).
fn typed(pod: &CompactPod) -> Result<Pod, Failure> {
    pod.pod().map_err(|e| ApiError::Internal { message: e.to_string() }.into())
}

/// POST: creates a pod. Like kube-apiserver (its `BeforeCreate`), the server owns the
/// UID, the creation time, the resourceVersion and the deletion fields: whatever the
/// client sent there is replaced or dropped (a client could otherwise take another
/// pod's UID, by which the pod manager keys). A name from `generateName`; name and
/// namespace must be DNS-1123 (422); a pod without status starts Pending; a pod over
/// the object size limit is refused (413). The server's own fields are set as
/// kube-apiserver sets them (`server_fields`: generation 1, the QoS class). Unlike
/// kube-apiserver, a status given here is kept (tests and `simulate` seed pods so).
pub(crate) fn create(call: &Call, context: &Context, namespace: &str) -> Result<Response<Body>, Failure> {
    let (mut pod, warnings) = pod_body(call)?;
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
    // kube-apiserver starts every pod Pending (its `PrepareForCreate`); a status given
    // here is kept, and a phase it lacks is Pending (kubectl's STATUS column shows it).
    let status = pod.status.get_or_insert_with(PodStatus::default);
    if status.phase.as_deref().is_none_or(str::is_empty) {
        status.phase = Some("Pending".into());
    }
    server_fields::on_create(&mut pod);
    validation::check_size(&pod.metadata, pod.spec.as_ref(), pod.status.as_ref(), context.options.max_object_bytes)?;
    let created = context.store.create_compact(pod)?;
    Ok(warned(pod_response(StatusCode::CREATED, &created), &warnings))
}

/// PUT of the pod: its UID and resourceVersion are preconditions; the status is kept.
pub(crate) fn replace(call: &Call, context: &Context, namespace: &str, name: &str) -> Result<Response<Body>, Failure> {
    let (mut pod, warnings) = pod_body(call)?;
    check_identity(&pod, namespace, name)?;
    pod.metadata.namespace = Some(namespace.to_owned());
    pod.metadata.name = Some(name.to_owned());
    let updated = update_checked(context, pod)?;
    Ok(warned(pod_response(StatusCode::OK, &updated), &warnings))
}

/// Writes an update of the pod (PUT, PATCH) with kube-apiserver's update validation
/// and the size limit, checked against the stored pod under the store's lock.
fn update_checked(context: &Context, pod: Pod) -> Result<Arc<CompactPod>, Failure> {
    let limit = context.options.max_object_bytes;
    context.store.update_pod_checked(pod, |stored, updated| {
        // Server-owned, kept from the stored pod as kube-apiserver's `BeforeUpdate` does.
        let (old, new) = (&stored.metadata, &mut updated.metadata);
        new.creation_timestamp.clone_from(&old.creation_timestamp);
        new.deletion_timestamp.clone_from(&old.deletion_timestamp);
        new.deletion_grace_period_seconds = old.deletion_grace_period_seconds;
        server_fields::on_update(stored, updated);
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
    let (pod, warnings) = pod_body(call)?;
    check_identity(&pod, namespace, name)?;
    let update = StatusUpdate {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        uid_precondition: pod.metadata.uid,
        resource_version_precondition: pod.metadata.resource_version,
        status: pod.status.unwrap_or_default(),
    };
    let updated = update_status_checked(context, update)?;
    Ok(warned(pod_response(StatusCode::OK, &updated), &warnings))
}

/// Writes a status with the size limit, checked under the store's lock.
fn update_status_checked(context: &Context, update: StatusUpdate) -> Result<Arc<CompactPod>, Failure> {
    let limit = context.options.max_object_bytes;
    context.store.update_pod_status_checked(update, |stored, status| status_write_checks(stored, status, limit))
}

/// What a status write over `stored` must pass: the server's own fields
/// (`server_fields::on_status_write`) and the size limit, the pod's size counted
/// from its stored bytes.
fn status_write_checks(stored: &StoredStatus<'_>, status: &mut PodStatus, limit: usize) -> Result<(), Failure> {
    let name = stored.pod.name().unwrap_or_default();
    server_fields::on_status_write(name, stored.status()?, status)?;
    let size = stored.pod.len_with_status(Some(validation::encoded_len(status)));
    validation::check_size_of(name, size, limit)
}

/// PATCH of `/status`: a strategic merge patch (conditions merge by type), a JSON merge
/// patch or a JSON patch; only the status is written. `metadata.resourceVersion` in the
/// patch is a precondition (409); a `metadata.uid` other than the pod's is refused as
/// kube-apiserver refuses it (422: the UID is immutable).
pub(crate) fn patch_status(
    call: &Call,
    context: &Context,
    namespace: &str,
    name: &str,
) -> Result<Response<Body>, Failure> {
    let limit = context.options.max_object_bytes;
    let directive = FieldValidation::of(call.param("fieldValidation"))?;
    let (patched, warnings) = match patch_body(call)? {
        PatchBody::Strategic(patch) => {
            let stored = context.store.get_compact(namespace, name)?;
            check_uid_kept(&stored, patch_uid(&patch)?)?;
            if let Some(version) = patch.pointer("/metadata/resourceVersion").and_then(Value::as_str)
                && Some(version) != stored.resource_version()
            {
                return Err(ApiError::modified(name).into());
            }
            // The store checks the UID again under its lock (a pod replaced meanwhile
            // is a conflict there).
            let patch =
                StatusPatch { namespace: namespace.to_owned(), name: name.to_owned(), uid_precondition: None, patch };
            // Not judged for unknown fields: the store merges the status itself (the
            // status manager's own write, made often, never with fieldValidation).
            let patched = context
                .store
                .patch_pod_status_checked(patch, |stored, status| status_write_checks(stored, status, limit))?;
            (patched, Vec::new())
        }
        patch => patch_retrying(context, namespace, name, &patch, directive, |context, stored, patched| {
            let update = StatusUpdate {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                uid_precondition: patched.metadata.uid.clone(),
                resource_version_precondition: stored.resource_version().map(str::to_owned),
                status: patched.status.unwrap_or_default(),
            };
            update_status_checked(context, update)
        })?,
    };
    Ok(warned(pod_response(StatusCode::OK, &patched), &warnings))
}

/// PATCH of the pod itself (labels, annotations, an image, ...): the status is kept. A
/// strategic merge patch merges a pod's lists by their keys (containers by name, ...:
/// `strategic`), as `kubectl apply` of a changed manifest needs.
pub(crate) fn patch(call: &Call, context: &Context, namespace: &str, name: &str) -> Result<Response<Body>, Failure> {
    let directive = FieldValidation::of(call.param("fieldValidation"))?;
    let patch = patch_body(call)?;
    let (patched, warnings) =
        patch_retrying(context, namespace, name, &patch, directive, |context, stored, mut patched| {
            patched.metadata.resource_version = stored.resource_version().map(str::to_owned);
            update_checked(context, patched)
        })?;
    Ok(warned(pod_response(StatusCode::OK, &patched), &warnings))
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
                // Go's words, as kube-apiserver passes them on.
                Failure::bad_request(format!("strconv.ParseInt: parsing {:?}: invalid syntax", excerpt(seconds)))
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
    let pod = context.store.delete_compact(namespace, name, &options).map_err(|error| match error {
        ApiError::Conflict { .. } => delete_conflict(context, namespace, name, &options),
        other => other.into(),
    })?;
    Ok(pod_response(StatusCode::OK, &pod))
}

/// A DELETE's precondition that did not hold, in kube-apiserver's words (its registry
/// checks a DELETE's preconditions itself, and names the kind, `Pod`). The stored pod is
/// read again for the message only: the store's refusal is what counts.
fn delete_conflict(context: &Context, namespace: &str, name: &str, options: &DeleteOptions) -> Failure {
    let stored = context.store.get_compact(namespace, name).ok();
    let stored_uid = stored.as_ref().and_then(|pod| pod.uid()).unwrap_or_default().to_owned();
    let stored_version = stored.as_ref().and_then(|pod| pod.resource_version()).unwrap_or_default().to_owned();
    let why = match (&options.uid_precondition, &options.resource_version_precondition) {
        (Some(uid), _) if !uid.is_empty() && *uid != stored_uid => format!(
            "the UID in the precondition ({}) does not match the UID in record ({stored_uid}). The object might have \
             been deleted and then recreated",
            excerpt(uid)
        ),
        (_, Some(version)) if !version.is_empty() && *version != stored_version => format!(
            "the ResourceVersion in the precondition ({}) does not match the ResourceVersion in record \
             ({stored_version}). The object might have been modified",
            excerpt(version)
        ),
        _ => "the object has been modified; please apply your changes to the latest version and try again".into(),
    };
    Failure::conflict_because("Pod", name, &why)
}

/// A PATCH's body, by its `Content-Type`.
enum PatchBody {
    /// `application/merge-patch+json` (RFC 7386).
    Merge(Value),
    /// `application/strategic-merge-patch+json`.
    Strategic(Value),
    /// `application/json-patch+json` (RFC 6902).
    Json(Vec<json_patch::PatchOperation>),
}

impl PatchBody {
    /// Whether the patch sets the resourceVersion itself: then it is a precondition, and
    /// a conflict is the patch's own, not retried.
    fn names_version(&self) -> bool {
        match self {
            PatchBody::Merge(patch) | PatchBody::Strategic(patch) => {
                patch.pointer("/metadata/resourceVersion").is_some()
            }
            PatchBody::Json(operations) => {
                operations.iter().any(|op| matches!(op.path().as_str(), "/metadata" | "/metadata/resourceVersion"))
            }
        }
    }

    /// Applies a merge patch or a JSON patch to `document` (the pod as JSON). A JSON
    /// patch that cannot be applied (a `test` that fails, a path that is not there) is
    /// a 422, as kube-apiserver answers it.
    fn apply(&self, document: &mut Value) -> Result<(), Failure> {
        match self {
            PatchBody::Merge(patch) => json_patch::merge(document, patch),
            PatchBody::Strategic(patch) => strategic::strategic_merge(document, patch, strategic::pod_keys),
            PatchBody::Json(operations) => {
                json_patch::patch(document, operations).map_err(|_| Failure::rejected_patch())?;
            }
        }
        Ok(())
    }
}

/// Read, patch, write with the read resourceVersion as precondition; a conflict caused
/// by a concurrent write (not by the patch's own resourceVersion) is retried. The
/// patched pod's unknown fields are judged by `directive`: the written pod and the
/// warnings to send.
fn patch_retrying(
    context: &Context,
    namespace: &str,
    name: &str,
    patch: &PatchBody,
    directive: FieldValidation,
    write: impl Fn(&Context, &CompactPod, Pod) -> Result<Arc<CompactPod>, Failure>,
) -> Result<(Arc<CompactPod>, Vec<String>), Failure> {
    if let PatchBody::Merge(patch) | PatchBody::Strategic(patch) = patch {
        patch_uid(patch)?;
    }
    let explicit_version = patch.names_version();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let stored = context.store.get_compact(namespace, name)?;
        let mut document: Value = serde_json::from_str(stored.json())
            .map_err(|e| ApiError::Internal { message: format!("a stored pod: {e}") })?;
        patch.apply(&mut document)?;
        let given = directive.checks().then(|| document.clone());
        let mut patched: Pod = serde_json::from_value(document)
            .map_err(|e| Failure::bad_request(format!("the patched pod is not a valid Pod: {e}")))?;
        let warnings = match &given {
            Some(given) => directive.judge(given, &to_json(&patched), "Pod")?,
            None => Vec::new(),
        };
        // The URL names the pod: a patch cannot move it to another name or namespace.
        check_identity(&patched, namespace, name)?;
        patched.metadata.namespace = Some(namespace.to_owned());
        patched.metadata.name = Some(name.to_owned());
        check_uid_kept(&stored, patched.metadata.uid.as_deref())?;
        if let Some(version) = patched.metadata.resource_version.as_deref().filter(|v| !v.is_empty())
            && Some(version) != stored.resource_version()
        {
            return Err(ApiError::modified(name).into());
        }
        match write(context, &stored, patched) {
            Err(failure) if failure.reason == "Conflict" && !explicit_version && attempt < PATCH_ATTEMPTS => continue,
            result => return result.map(|pod| (pod, warnings)),
        }
    }
}

/// A patch's `metadata.uid` must be the pod's: kube-apiserver refuses another one as a
/// change of an immutable field (422), and lists the cause twice (its update
/// validation checks the metadata twice; the message says it once).
fn check_uid_kept(stored: &CompactPod, uid: Option<&str>) -> Result<(), Failure> {
    let Some(uid) = uid.filter(|uid| !uid.is_empty()) else { return Ok(()) };
    if Some(uid) == stored.uid() {
        return Ok(());
    }
    let cause = Cause::invalid("metadata.uid", uid, "field is immutable");
    let mut failure = Failure::invalid(stored.name().unwrap_or_default(), vec![cause.clone()]);
    failure.causes.push(cause);
    Err(failure)
}

/// The patch's `metadata.uid`: a string or absent; anything else is a 400, never
/// ignored.
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

/// The body of a PATCH by its type; a type this server does not apply (an apply patch,
/// say) is a 415.
fn patch_body(call: &Call) -> Result<PatchBody, Failure> {
    let parse = || {
        serde_json::from_slice::<Value>(&call.body)
            .map_err(|e| Failure::bad_request(format!("the patch is not valid JSON: {e}")))
    };
    let object = |patch: Value| {
        if patch.is_object() { Ok(patch) } else { Err(Failure::bad_request("the patch must be a JSON object")) }
    };
    match call.content_type.as_str() {
        MERGE_PATCH => Ok(PatchBody::Merge(object(parse()?)?)),
        STRATEGIC_MERGE_PATCH => Ok(PatchBody::Strategic(object(parse()?)?)),
        JSON_PATCH => serde_json::from_value(parse()?)
            .map(PatchBody::Json)
            .map_err(|e| Failure::bad_request(format!("the JSON patch is not a list of operations: {e}"))),
        _ => Err(Failure::unsupported_patch_type()),
    }
}

/// The pod a body holds, and the warnings about its unknown fields (`fieldValidation`).
fn pod_body(call: &Call) -> Result<(Pod, Vec<String>), Failure> {
    let directive = FieldValidation::of(call.param("fieldValidation"))?;
    let value = call.json_body()?;
    if let Some(kind) = value.get("kind").and_then(Value::as_str).filter(|kind| *kind != "Pod") {
        return Err(Failure::bad_request(format!("the body is a {}, not a Pod", excerpt(kind))));
    }
    let given = directive.checks().then(|| value.clone());
    let pod: Pod =
        serde_json::from_value(value).map_err(|e| Failure::bad_request(format!("the body is not a valid Pod: {e}")))?;
    let warnings = match &given {
        Some(given) => directive.judge(given, &to_json(&pod), "Pod")?,
        None => Vec::new(),
    };
    Ok((pod, warnings))
}

fn check_namespace(pod: &Pod, namespace: &str) -> Result<(), Failure> {
    check_given(pod.metadata.namespace.as_deref(), namespace, |_, _| {
        "the namespace of the provided object does not match the namespace sent on the request".to_owned()
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
