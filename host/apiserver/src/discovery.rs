//! Discovery: what a client asks before anything else (`/version`, `/api`, `/apis`,
//! `/api/v1`), answered for the one resource served, pods.
//!
//! The server says it is Kubernetes 1.33: the `kubectl` on these machines picks the
//! bundled kubectl whose minor version matches the server's.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    APIGroupList, APIResource, APIResourceList, APIVersions, ListMeta, ServerAddressByClientCIDR, Time,
};
use k8s_openapi::apimachinery::pkg::version::Info;
use serde::Serialize;
use serde_json::Value;

/// The Kubernetes minor version announced: the API served is 1.33's (k8s-openapi's
/// `v1_33`).
const MINOR: &str = "33";

/// The media type of aggregated discovery (kubectl 1.26+ asks for it first).
pub(crate) const AGGREGATED_DISCOVERY: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// The verbs served on pods. No `deletecollection`: not served.
const POD_VERBS: [&str; 7] = ["create", "delete", "get", "list", "patch", "update", "watch"];

/// `/version`: all nine fields, since strict clients (the Python one) need each.
pub(crate) fn version() -> Value {
    typed(&Info {
        major: "1".into(),
        minor: MINOR.into(),
        git_version: format!("v1.{MINOR}.0-podstatus"),
        git_commit: "0000000000000000000000000000000000000000".into(),
        git_tree_state: "clean".into(),
        build_date: "1970-01-01T00:00:00Z".into(),
        go_version: "n/a (podstatus embedded API server, Rust)".into(),
        compiler: "rustc".into(),
        platform: format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
        ..Info::default()
    })
}

/// `/api`: the core group's versions (`APIVersions`), with the address clients reach
/// this server at.
pub(crate) fn core_versions(server_address: &str) -> Value {
    typed(&APIVersions {
        server_address_by_client_cidrs: vec![ServerAddressByClientCIDR {
            client_cidr: "0.0.0.0/0".into(),
            server_address: server_address.into(),
        }],
        versions: vec!["v1".into()],
    })
}

/// `/apis`: no named groups are served, but the answer must exist: a 404 here breaks
/// every kubectl command.
pub(crate) fn groups() -> Value {
    typed(&APIGroupList { groups: Vec::new() })
}

/// `/api/v1`: pods and their status subresource.
pub(crate) fn core_v1_resources() -> Value {
    typed(&APIResourceList {
        group_version: "v1".into(),
        resources: vec![
            APIResource {
                name: "pods".into(),
                singular_name: "pod".into(),
                namespaced: true,
                kind: "Pod".into(),
                verbs: POD_VERBS.map(String::from).to_vec(),
                short_names: Some(vec!["po".into()]),
                categories: Some(vec!["all".into()]),
                ..APIResource::default()
            },
            APIResource {
                name: "pods/status".into(),
                singular_name: String::new(),
                namespaced: true,
                kind: "Pod".into(),
                verbs: ["get", "patch", "update"].map(String::from).to_vec(),
                ..APIResource::default()
            },
        ],
    })
}

/// A typed discovery document as JSON (these types always serialize).
fn typed(document: &impl serde::Serialize) -> Value {
    serde_json::to_value(document).unwrap_or(Value::Null)
}

/// `/api` as aggregated discovery (`APIGroupDiscoveryList` v2): the core group with
/// pods.
pub(crate) fn aggregated_core() -> Value {
    let pod_kind = || GroupVersionKind { group: "", version: "", kind: "Pod" };
    aggregated_list(vec![APIGroupDiscovery {
        metadata: GroupMetadata { creation_timestamp: None },
        versions: vec![APIVersionDiscovery {
            version: "v1",
            resources: vec![APIResourceDiscovery {
                resource: "pods",
                response_kind: pod_kind(),
                scope: "Namespaced",
                singular_resource: "pod",
                verbs: POD_VERBS.to_vec(),
                short_names: vec!["po"],
                categories: vec!["all"],
                subresources: vec![APISubresourceDiscovery {
                    subresource: "status",
                    response_kind: pod_kind(),
                    verbs: vec!["get", "patch", "update"],
                }],
            }],
            freshness: "Current",
        }],
    }])
}

/// `/apis` as aggregated discovery: no groups.
pub(crate) fn aggregated_groups() -> Value {
    aggregated_list(Vec::new())
}

fn aggregated_list(items: Vec<APIGroupDiscovery>) -> Value {
    typed(&APIGroupDiscoveryList {
        kind: "APIGroupDiscoveryList",
        api_version: "apidiscovery.k8s.io/v2",
        metadata: ListMeta::default(),
        items,
    })
}

// Aggregated discovery v2 (`apidiscovery.k8s.io/v2`), which k8s-openapi does not
// generate: its types, with the fields served, so that the shape is still the
// compiler's to check.

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct APIGroupDiscoveryList {
    kind: &'static str,
    api_version: &'static str,
    metadata: ListMeta,
    items: Vec<APIGroupDiscovery>,
}

#[derive(Serialize)]
struct APIGroupDiscovery {
    metadata: GroupMetadata,
    versions: Vec<APIVersionDiscovery>,
}

/// The core group's metadata: no name; `creationTimestamp: null` as kube-apiserver
/// sends it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupMetadata {
    creation_timestamp: Option<Time>,
}

#[derive(Serialize)]
struct APIVersionDiscovery {
    version: &'static str,
    resources: Vec<APIResourceDiscovery>,
    freshness: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct APIResourceDiscovery {
    resource: &'static str,
    response_kind: GroupVersionKind,
    scope: &'static str,
    singular_resource: &'static str,
    verbs: Vec<&'static str>,
    short_names: Vec<&'static str>,
    categories: Vec<&'static str>,
    subresources: Vec<APISubresourceDiscovery>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct APISubresourceDiscovery {
    subresource: &'static str,
    response_kind: GroupVersionKind,
    verbs: Vec<&'static str>,
}

#[derive(Serialize)]
struct GroupVersionKind {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
}

/// Whether the `Accept` header asks for aggregated discovery (v2; v2beta1 is not served).
pub(crate) fn wants_aggregated(accept: &str) -> bool {
    accept.split(',').any(|media| {
        let params = media_params(media);
        params.contains(&("g", "apidiscovery.k8s.io"))
            && params.contains(&("v", "v2"))
            && params.contains(&("as", "APIGroupDiscoveryList"))
    })
}

/// The `key=value` parameters of one media range, trimmed.
pub(crate) fn media_params(media: &str) -> Vec<(&str, &str)> {
    media.split(';').skip(1).filter_map(|param| param.split_once('=')).map(|(k, v)| (k.trim(), v.trim())).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn aggregated_discovery_keeps_its_shape() {
        let pod_kind = json!({"group": "", "version": "", "kind": "Pod"});
        let expected = json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
        "items": [{
            "metadata": {"creationTimestamp": null},
            "versions": [{
                "version": "v1",
                "resources": [{
                    "resource": "pods", "responseKind": pod_kind, "scope": "Namespaced",
                    "singularResource": "pod", "verbs": POD_VERBS, "shortNames": ["po"], "categories": ["all"],
                    "subresources": [{"subresource": "status", "responseKind": pod_kind,
                                      "verbs": ["get", "patch", "update"]}],
                }],
                "freshness": "Current",
            }],
        }]});
        assert_eq!(aggregated_core(), expected);
        assert_eq!(aggregated_groups()["items"], json!([]));
    }

    #[test]
    fn aggregated_discovery_is_recognised_in_kubectls_accept() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,\
                       application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert!(wants_aggregated(kubectl));
        assert!(!wants_aggregated("application/json"));
        assert!(!wants_aggregated("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"));
    }
}
