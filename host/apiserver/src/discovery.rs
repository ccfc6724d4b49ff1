//! Discovery: what a client asks before anything else (`/version`, `/api`, `/apis`,
//! `/api/v1`, `/apis/coordination.k8s.io/v1`), answered for the resources served: pods,
//! nodes and leases.
//!
//! The server says it is Kubernetes 1.33: the `kubectl` on these machines picks the
//! bundled kubectl whose minor version matches the server's.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    APIGroup, APIGroupList, APIResource, APIResourceList, APIVersions, GroupVersionForDiscovery, ListMeta,
    ServerAddressByClientCIDR, Time,
};

use k8s_openapi::apimachinery::pkg::version::Info;
use serde::Serialize;
use serde_json::Value;

use crate::objects::{LEASES, NODES, PLUGIN_ROLLOUTS, Resource};

/// The Kubernetes minor version announced: the API served is 1.35's (k8s-openapi's
/// `v1_35`).
const MINOR: &str = "35";

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

/// The verbs served on nodes and leases (no watch, no deletecollection).
const OBJECT_VERBS: [&str; 6] = ["create", "delete", "get", "list", "patch", "update"];

/// `/apis`: the named groups served, `coordination.k8s.io` (leases) and
/// `podstatus.io` (a fleet's rollouts). A 404 here would break every kubectl command.
pub(crate) fn groups() -> Value {
    typed(&APIGroupList { groups: vec![coordination_group_typed(), group_of(&PLUGIN_ROLLOUTS)] })
}

/// `/apis/podstatus.io`.
pub(crate) fn rollout_group() -> Value {
    typed(&group_of(&PLUGIN_ROLLOUTS))
}

/// `/apis/podstatus.io/v1alpha1`: plugin rollouts and their status.
pub(crate) fn rollout_v1alpha1_resources() -> Value {
    let resources =
        vec![object_resource(&PLUGIN_ROLLOUTS), status_resource("pluginrollouts/status", true, PLUGIN_ROLLOUTS.kind)];
    typed(&APIResourceList { group_version: PLUGIN_ROLLOUTS.api_version(), resources })
}

/// The discovery document of `resource`'s group, which serves one version.
fn group_of(resource: &Resource) -> APIGroup {
    let version = GroupVersionForDiscovery { group_version: resource.api_version(), version: resource.version.into() };
    APIGroup {
        name: resource.group.into(),
        preferred_version: Some(version.clone()),
        server_address_by_client_cidrs: None,
        versions: vec![version],
    }
}

/// `/apis/coordination.k8s.io`.
pub(crate) fn coordination_group() -> Value {
    typed(&coordination_group_typed())
}

fn coordination_group_typed() -> APIGroup {
    let version = GroupVersionForDiscovery { group_version: LEASES.api_version(), version: LEASES.version.into() };
    APIGroup {
        name: LEASES.group.into(),
        preferred_version: Some(version.clone()),
        server_address_by_client_cidrs: None,
        versions: vec![version],
    }
}

/// `/apis/coordination.k8s.io/v1`: leases.
pub(crate) fn coordination_v1_resources() -> Value {
    typed(&APIResourceList { group_version: LEASES.api_version(), resources: vec![object_resource(&LEASES)] })
}

/// A node's or a lease's `APIResource`.
fn object_resource(resource: &Resource) -> APIResource {
    APIResource {
        name: resource.plural.into(),
        singular_name: resource.singular.into(),
        namespaced: resource.namespaced,
        kind: resource.kind.into(),
        verbs: OBJECT_VERBS.map(String::from).to_vec(),
        short_names: (!resource.short_names.is_empty())
            .then(|| resource.short_names.iter().map(|name| (*name).to_owned()).collect()),
        ..APIResource::default()
    }
}

/// The `/status` subresource `name` of a `kind`: read, patched and replaced.
fn status_resource(name: &str, namespaced: bool, kind: &str) -> APIResource {
    APIResource {
        name: name.into(),
        singular_name: String::new(),
        namespaced,
        kind: kind.into(),
        verbs: ["get", "patch", "update"].map(String::from).to_vec(),
        ..APIResource::default()
    }
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
            status_resource("pods/status", true, "Pod"),
            object_resource(&NODES),
            status_resource("nodes/status", false, "Node"),
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
        metadata: GroupMetadata { name: None, creation_timestamp: None },
        versions: vec![APIVersionDiscovery {
            version: "v1",
            resources: vec![
                APIResourceDiscovery {
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
                },
                aggregated_resource(&NODES),
            ],
            freshness: "Current",
        }],
    }])
}

/// `/apis` as aggregated discovery: `coordination.k8s.io` with leases, `podstatus.io`
/// with plugin rollouts.
pub(crate) fn aggregated_groups() -> Value {
    let group = |resource: &'static Resource| APIGroupDiscovery {
        metadata: GroupMetadata { name: Some(resource.group), creation_timestamp: None },
        versions: vec![APIVersionDiscovery {
            version: resource.version,
            resources: vec![aggregated_resource(resource)],
            freshness: "Current",
        }],
    };
    aggregated_list(vec![group(&LEASES), group(&PLUGIN_ROLLOUTS)])
}

/// A node's or a lease's aggregated discovery entry (a node's with its status).
fn aggregated_resource(resource: &'static Resource) -> APIResourceDiscovery {
    let kind = || GroupVersionKind { group: resource.group, version: resource.version, kind: resource.kind };
    APIResourceDiscovery {
        resource: resource.plural,
        response_kind: kind(),
        scope: if resource.namespaced { "Namespaced" } else { "Cluster" },
        singular_resource: resource.singular,
        verbs: OBJECT_VERBS.to_vec(),
        short_names: resource.short_names.to_vec(),
        categories: Vec::new(),
        subresources: if resource.has_status {
            vec![APISubresourceDiscovery {
                subresource: "status",
                response_kind: kind(),
                verbs: vec!["get", "patch", "update"],
            }]
        } else {
            Vec::new()
        },
    }
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

/// A group's metadata: the core group has no name; `creationTimestamp: null` as kube-apiserver
/// sends it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupMetadata {
    /// The group's name; the core group has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'static str>,
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
        let params = crate::media::params(media);
        params.contains(&("g", "apidiscovery.k8s.io"))
            && params.contains(&("v", "v2"))
            && params.contains(&("as", "APIGroupDiscoveryList"))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn aggregated_discovery_keeps_its_shape() {
        let pod_kind = json!({"group": "", "version": "", "kind": "Pod"});
        let pods = json!({
            "resource": "pods", "responseKind": pod_kind, "scope": "Namespaced",
            "singularResource": "pod", "verbs": POD_VERBS, "shortNames": ["po"], "categories": ["all"],
            "subresources": [{"subresource": "status", "responseKind": pod_kind,
                              "verbs": ["get", "patch", "update"]}],
        });
        let core = aggregated_core();
        assert_eq!(core["kind"], "APIGroupDiscoveryList");
        assert_eq!(core["items"][0]["metadata"], json!({"creationTimestamp": null}));
        assert_eq!(core["items"][0]["versions"][0]["resources"][0], pods);
        assert_eq!(core["items"][0]["versions"][0]["resources"][1]["scope"], "Cluster", "nodes have no namespace");
        let groups = aggregated_groups();
        assert_eq!(groups["items"][0]["metadata"]["name"], "coordination.k8s.io");
        assert_eq!(groups["items"][0]["versions"][0]["resources"][0]["resource"], "leases");
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
