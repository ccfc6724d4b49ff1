//! The OpenAPI documents, as kube-apiserver serves them: `/openapi/v2` (JSON, or the
//! protobuf kubectl asks for) and `/openapi/v3` (an index of one document per group
//! version, each at a URL with its hash). kubectl reads them to validate what it sends
//! (`apply` and `create` check that the server takes `fieldValidation`, else validate
//! against the v2 schema), to compute a strategic merge patch (`apply` of an object
//! that exists) and to `explain` a kind; without them, those commands fail with
//! "failed to download openapi" unless told `--validate=false`.
//!
//! The documents are Kubernetes' own published spec of the release this server
//! announces (1.35, `api/openapi-spec/` of k8s.io/kubernetes v1.35.4), trimmed to what
//! this server serves by `upstream/cmd/openapi` and committed under `openapi/` (its
//! README says how to make them again). They are compiled in and served from memory:
//! about 1.3 MB in all, fixed at build time.

use std::sync::LazyLock;

use bytes::Bytes;
use http::{Method, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use serde::Serialize;
use sha2::{Digest, Sha512};

use crate::call::Call;
use crate::response::Body;
use crate::status_body::Failure;

/// `/openapi/v2` as JSON.
const V2_JSON: &[u8] = include_bytes!("../openapi/v2.json");
/// `/openapi/v2` as gnostic's `openapi_v2.Document` protobuf (what client-go's
/// `OpenAPISchema` asks for and reads; it takes nothing else).
const V2_PROTOBUF: &[u8] = include_bytes!("../openapi/v2.pb");

/// The `/openapi/v3` documents by their index name (`api/v1`), in the index's order.
const V3_DOCUMENTS: [(&str, &[u8]); 6] = [
    ("api", include_bytes!("../openapi/v3/api.json")),
    ("api/v1", include_bytes!("../openapi/v3/api__v1.json")),
    ("apis", include_bytes!("../openapi/v3/apis.json")),
    ("apis/coordination.k8s.io", include_bytes!("../openapi/v3/apis__coordination.k8s.io.json")),
    ("apis/coordination.k8s.io/v1", include_bytes!("../openapi/v3/apis__coordination.k8s.io__v1.json")),
    ("version", include_bytes!("../openapi/v3/version.json")),
];

/// The media type kube-apiserver answers with protobuf (it also takes the older
/// spelling with `@` in a request's `Accept`).
const V2_PROTOBUF_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
const V2_PROTOBUF_SUBTYPES: [&str; 2] =
    ["com.github.proto-openapi.spec.v2.v1.0+protobuf", "com.github.proto-openapi.spec.v2@v1.0+protobuf"];

/// What is computed once: each document's ETag (kube-apiserver's: the upper-case hex
/// SHA-512 of the JSON) and the v3 index naming them.
struct Hashes {
    v2_json: String,
    v2_protobuf: String,
    v3: Vec<String>,
    v3_index: Bytes,
}

static HASHES: LazyLock<Hashes> = LazyLock::new(|| {
    let v3: Vec<String> = V3_DOCUMENTS.iter().map(|(_, document)| etag(document)).collect();
    let paths = V3_DOCUMENTS
        .iter()
        .zip(&v3)
        .map(|((name, _), hash)| ((*name).to_owned(), IndexEntry { server_relative_url: document_url(name, hash) }))
        .collect();
    let index = serde_json::to_vec(&Index { paths }).unwrap_or_default();
    Hashes { v2_json: etag(V2_JSON), v2_protobuf: etag(V2_PROTOBUF), v3, v3_index: Bytes::from(index) }
});

/// `/openapi/v3`'s body (client-go's `handler3.OpenAPIV3Discovery`).
#[derive(Serialize)]
struct Index {
    paths: std::collections::BTreeMap<String, IndexEntry>,
}

#[derive(Serialize)]
struct IndexEntry {
    #[serde(rename = "serverRelativeURL")]
    server_relative_url: String,
}

fn etag(document: &[u8]) -> String {
    Sha512::digest(document).iter().map(|byte| format!("{byte:02X}")).collect()
}

fn document_url(name: &str, hash: &str) -> String {
    format!("/openapi/v3/{name}?hash={hash}")
}

/// Answers `/openapi/v2`, `/openapi/v3` and `/openapi/v3/{document}` (`rest` is what
/// follows `openapi/`, split at `/`); None for any other path under `/openapi`.
pub(crate) fn route(rest: &[&str], call: &Call) -> Option<Result<Response<Body>, Failure>> {
    let answer = match rest {
        ["v2"] => v2(call),
        ["v3"] => Ok(static_response(HASHES.v3_index.clone(), "application/json", None)),
        ["v3", document @ ..] => v3(&document.join("/"), call),
        _ => return None,
    };
    Some(if call.method == Method::GET { answer } else { Err(Failure::method_not_allowed(&call.method)) })
}

fn v2(call: &Call) -> Result<Response<Body>, Failure> {
    let hashes = &*HASHES;
    match negotiate(&call.accept, &["json"], &V2_PROTOBUF_SUBTYPES) {
        Some(Format::Json) => {
            Ok(static_response(Bytes::from_static(V2_JSON), "application/json", Some(&hashes.v2_json)))
        }
        Some(Format::Protobuf) => {
            Ok(static_response(Bytes::from_static(V2_PROTOBUF), V2_PROTOBUF_TYPE, Some(&hashes.v2_protobuf)))
        }
        None => Err(Failure::not_acceptable()),
    }
}

/// A v3 document. A `hash` that is not the document's is answered with a redirect to
/// the current one (kube-apiserver's answer to a client whose index is stale); with
/// the right one the answer may be cached for good. Only JSON: kubectl reads v3 as
/// JSON (kube-apiserver also has a protobuf form).
fn v3(name: &str, call: &Call) -> Result<Response<Body>, Failure> {
    let Some(at) = V3_DOCUMENTS.iter().position(|(document, _)| *document == name) else {
        return Err(Failure::no_such_path());
    };
    let hash = &HASHES.v3[at];
    if negotiate(&call.accept, &["json"], &[]).is_none() {
        return Err(Failure::not_acceptable());
    }
    let mut response = static_response(Bytes::from_static(V3_DOCUMENTS[at].1), "application/json", Some(hash));
    match call.param("hash") {
        None | Some("") => {}
        Some(asked) if asked == hash => {
            response.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("public, immutable"));
        }
        Some(_) => {
            let mut redirect = Response::new(Full::new(Bytes::new()).boxed());
            *redirect.status_mut() = StatusCode::MOVED_PERMANENTLY;
            if let Ok(location) = header::HeaderValue::from_str(&document_url(name, hash)) {
                redirect.headers_mut().insert(header::LOCATION, location);
            }
            return Ok(redirect);
        }
    }
    Ok(response)
}

fn static_response(body: Bytes, content_type: &'static str, etag: Option<&str>) -> Response<Body> {
    let mut response = Response::new(Full::new(body).boxed());
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, header::HeaderValue::from_static(content_type));
    headers.insert(header::VARY, header::HeaderValue::from_static("Accept"));
    if let Some(value) = etag.and_then(|etag| header::HeaderValue::from_str(&format!("\"{etag}\"")).ok()) {
        headers.insert(header::ETAG, value);
    }
    response
}

/// The forms a document is served in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Json,
    Protobuf,
}

/// The form `accept` prefers among `application/{json}` and `application/{protobuf}`,
/// as kube-apiserver's negotiation picks it: clauses by quality, highest first (the
/// header's order among equals), wildcards taking the first form offered (JSON); an
/// empty header is `*/*`. None: nothing offered is acceptable (406).
fn negotiate(accept: &str, json: &[&str], protobuf: &[&str]) -> Option<Format> {
    let accept = if accept.trim().is_empty() { "*/*" } else { accept };
    let mut clauses: Vec<(f32, &str, &str)> = accept
        .split(',')
        .filter_map(|clause| {
            let mut parts = clause.split(';');
            let (kind, subtype) = parts.next()?.trim().split_once('/')?;
            let quality = parts
                .filter_map(|param| param.split_once('='))
                .find(|(key, _)| key.trim() == "q")
                .and_then(|(_, q)| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            Some((quality, kind.trim(), subtype.trim()))
        })
        .filter(|(quality, _, _)| *quality > 0.0)
        .collect();
    clauses.sort_by(|a, b| b.0.total_cmp(&a.0));
    let offered =
        json.iter().map(|subtype| (Format::Json, *subtype)).chain(protobuf.iter().map(|s| (Format::Protobuf, *s)));
    let offered: Vec<(Format, &str)> = offered.collect();
    clauses.iter().find_map(|(_, kind, subtype)| {
        offered.iter().find_map(|(format, offer)| {
            let kind_matches = *kind == "*" || *kind == "application";
            let subtype_matches = *subtype == "*" || subtype == offer;
            (kind_matches && subtype_matches).then_some(*format)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectls_accept_headers_get_what_kubectl_reads() {
        let protobuf = V2_PROTOBUF_SUBTYPES.as_slice();
        // client-go's OpenAPISchema: protobuf only.
        let kubectl_v2 = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
        assert_eq!(negotiate(kubectl_v2, &["json"], protobuf), Some(Format::Protobuf));
        assert_eq!(negotiate("", &["json"], protobuf), Some(Format::Json));
        assert_eq!(negotiate("*/*", &["json"], protobuf), Some(Format::Json));
        assert_eq!(negotiate("application/json, */*", &["json"], protobuf), Some(Format::Json));
        let preferring = "application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
        assert_eq!(negotiate(preferring, &["json"], protobuf), Some(Format::Protobuf));
        assert_eq!(negotiate("application/yaml", &["json"], protobuf), None);
        assert_eq!(negotiate("application/json;q=0", &["json"], protobuf), None);
        assert_eq!(negotiate(kubectl_v2, &["json"], &[]), None, "v3 has no protobuf form here");
    }

    #[test]
    fn the_index_names_every_document_by_its_hash() {
        let index: serde_json::Value = serde_json::from_slice(&HASHES.v3_index).expect("JSON");
        let paths = index["paths"].as_object().expect("paths");
        assert_eq!(paths.len(), V3_DOCUMENTS.len());
        let url = paths["api/v1"]["serverRelativeURL"].as_str().expect("a URL");
        let hash = url.strip_prefix("/openapi/v3/api/v1?hash=").expect("the document's URL");
        assert_eq!(hash.len(), 128, "SHA-512 in hex");
        assert!(hash.chars().all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()));
    }

    /// The documents are data committed beside the code: each must parse, and stay the
    /// size it is (a document that grew tenfold would be noticed here, not in memory).
    #[test]
    fn the_documents_are_json_and_bounded() {
        const LIMIT: usize = 1 << 20;
        assert!(V2_JSON.len() < LIMIT && V2_PROTOBUF.len() < LIMIT);
        let v2: serde_json::Value = serde_json::from_slice(V2_JSON).expect("v2 is JSON");
        assert_eq!(v2["swagger"], "2.0");
        for (name, document) in V3_DOCUMENTS {
            assert!(document.len() < LIMIT, "{name}");
            let v3: serde_json::Value = serde_json::from_slice(document).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(v3["openapi"].as_str().is_some_and(|v| v.starts_with("3.")), "{name}");
        }
    }
}
