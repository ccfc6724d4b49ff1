//! The HTTP handlers of the kinds in [`ObjectStore`](crate::objects::ObjectStore)
//! (nodes, leases): list (with `Table`s and selectors), get, create, update, status
//! update, patch (JSON merge, strategic merge), delete. Watch is not served for them:
//! nothing here needs it, and discovery does not announce it.
//!
//! Every limit of the pod routes applies: bodies were read within the server's body
//! limits before a handler runs, names and namespaces are validated (422), objects are
//! checked against their type and size (400, 413), lists are streamed within the
//! per-response buffer, and the store caps how many objects it holds.

use http::{Response, StatusCode};
use serde_json::{Value, json};

use crate::call::{Call, Context};
use crate::field_validation::{FieldValidation, warned};
use crate::object_tables;
use crate::objects::{self, Part, Resource};
use crate::pods::{Encoder, stream_list, table_request};
use crate::response::{Body, json_response};
use crate::selectors::Selector;
use crate::status_body::Failure;
use crate::strategic::{self, strategic_merge};

const MERGE_PATCH: &str = "application/merge-patch+json";
const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";

/// How often a patch is retried when a concurrent write got in between its read and
/// its write (as for pods).
const PATCH_ATTEMPTS: usize = 5;

/// GET of a list (`namespace` None: every namespace, or a cluster-scoped kind). Label
/// selectors, and field selectors on `metadata.name` and `metadata.namespace`, as
/// kube-apiserver allows for every kind.
pub(crate) fn list(
    call: &Call,
    context: &Context,
    resource: &'static Resource,
    namespace: Option<&str>,
) -> Result<Response<Body>, Failure> {
    if call.flag("watch") {
        return Err(Failure::method_not_allowed(&call.method));
    }
    let selector = Selector::parse_metadata(call.param("fieldSelector"), call.param("labelSelector"))
        .map_err(|error| Failure::bad_request(error.to_string()))?;
    let table = table_request(call)?;
    let (resource_version, objects) = context.objects.list(resource, namespace);
    let keep = move |object: &Value| selector.matches_object(object);
    let (document, encode): (Vec<u8>, Encoder<Value>) = match table {
        Some(include) => {
            let now = jiff::Timestamp::now();
            let empty = object_tables::table(resource, std::iter::empty(), Some(resource_version), include, now);
            let encode: Encoder<Value> = Box::new(move |object, out| {
                serde_json::to_writer(out, &object_tables::row(resource, object, include, now)).is_ok()
            });
            (serde_json::to_vec(&empty).unwrap_or_default(), encode)
        }
        None => {
            let empty = json!({
                "kind": format!("{}List", resource.kind),
                "apiVersion": resource.api_version(),
                "metadata": {"resourceVersion": resource_version.to_string()},
                "items": [],
            });
            let encode: Encoder<Value> = Box::new(|object, out| serde_json::to_writer(out, object).is_ok());
            (serde_json::to_vec(&empty).unwrap_or_default(), encode)
        }
    };
    // The document with no items ends in `[]}`: the items go in between.
    let Some(head) = document.strip_suffix(b"]}").filter(|head| head.ends_with(b"[")) else {
        return Err(Failure::bad_request("a list document without its items at the end"));
    };
    Ok(stream_list(context, objects, keep, head.to_vec(), encode))
}

/// GET of one object (also `/status`).
pub(crate) fn get(
    call: &Call,
    context: &Context,
    resource: &Resource,
    namespace: &str,
    name: &str,
) -> Result<Response<Body>, Failure> {
    let object = context.objects.get(resource, namespace, name)?;
    match table_request(call)? {
        Some(include) => {
            let table = object_tables::table(resource, [&*object], None, include, jiff::Timestamp::now());
            Ok(json_response(StatusCode::OK, &table))
        }
        None => Ok(json_response(StatusCode::OK, &*object)),
    }
}

/// POST: creates an object; the server owns its UID, creation time and resourceVersion.
pub(crate) fn create(
    call: &Call,
    context: &Context,
    resource: &Resource,
    namespace: &str,
) -> Result<Response<Body>, Failure> {
    let directive = FieldValidation::of(call.param("fieldValidation"))?;
    let (object, warnings) = objects::checked_body(resource, call.json_body()?, namespace, None, directive)?;
    let created = context.objects.create(resource, namespace, object)?;
    Ok(warned(json_response(StatusCode::CREATED, &*created), &warnings))
}

/// PUT of the object (`part` Main) or of `/status` (`part` Status); the body's
/// resourceVersion and UID are preconditions.
pub(crate) fn replace(
    call: &Call,
    context: &Context,
    resource: &Resource,
    namespace: &str,
    name: &str,
    part: Part,
) -> Result<Response<Body>, Failure> {
    let directive = FieldValidation::of(call.param("fieldValidation"))?;
    let (object, warnings) = objects::checked_body(resource, call.json_body()?, namespace, Some(name), directive)?;
    let updated = context.objects.update(resource, namespace, name, object, part)?;
    Ok(warned(json_response(StatusCode::OK, &*updated), &warnings))
}

/// PATCH of the object or of `/status`: a JSON merge patch, or a strategic merge patch
/// (lists with a merge key in Kubernetes' schema for these kinds, `conditions` and
/// `addresses` by `type` and `taints` by `key`, merge item by item; `$` directives are
/// dropped). Read, patch, write with the read resourceVersion as precondition,
/// retried when another write got in between.
pub(crate) fn patch(
    call: &Call,
    context: &Context,
    resource: &Resource,
    namespace: &str,
    name: &str,
    part: Part,
) -> Result<Response<Body>, Failure> {
    let directive = FieldValidation::of(call.param("fieldValidation"))?;
    let strategic = match call.content_type.as_str() {
        MERGE_PATCH => false,
        STRATEGIC_MERGE_PATCH => true,
        _ => return Err(Failure::unsupported_patch_type()),
    };
    let patch: Value = serde_json::from_slice(&call.body)
        .map_err(|e| Failure::bad_request(format!("the patch is not valid JSON: {e}")))?;
    if !patch.is_object() {
        return Err(Failure::bad_request("the patch must be a JSON object"));
    }
    let explicit_version = patch.pointer("/metadata/resourceVersion").is_some();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let stored = context.objects.get(resource, namespace, name)?;
        let mut document = (*stored).clone();
        if strategic {
            strategic_merge(&mut document, &patch, strategic::node_and_lease_keys);
        } else {
            json_patch::merge(&mut document, &patch);
        }
        if !explicit_version {
            document["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"].clone();
        }
        let (document, warnings) = objects::checked_body(resource, document, namespace, Some(name), directive)?;
        match context.objects.update(resource, namespace, name, document, part) {
            Err(failure) if failure.reason == "Conflict" && !explicit_version && attempt < PATCH_ATTEMPTS => continue,
            Ok(updated) => return Ok(warned(json_response(StatusCode::OK, &*updated), &warnings)),
            Err(failure) => return Err(failure),
        }
    }
}

/// DELETE, with `DeleteOptions`' UID and resourceVersion preconditions; these kinds go
/// at once (no grace period applies to them).
pub(crate) fn delete(
    call: &Call,
    context: &Context,
    resource: &Resource,
    namespace: &str,
    name: &str,
) -> Result<Response<Body>, Failure> {
    let options = if call.body.iter().all(u8::is_ascii_whitespace) { json!({}) } else { call.json_body()? };
    let precondition = |field: &str| -> Result<Option<String>, Failure> {
        match options.pointer(&format!("/preconditions/{field}")) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(value)) => Ok(Some(value.clone())),
            Some(_) => Err(Failure::bad_request(format!("preconditions.{field} must be a string"))),
        }
    };
    let (uid, version) = (precondition("uid")?, precondition("resourceVersion")?);
    let deleted = context.objects.delete(resource, namespace, name, uid.as_deref(), version.as_deref())?;
    Ok(json_response(StatusCode::OK, &*deleted))
}
