//! Whose a pod is: its UID, namespace and name, read from the object or from its JSON
//! (the one reader of a pod's identity, for the backends, the runtime and the agent);
//! and static and mirror pods, told apart by their annotations (see
//! `shared/reference/helpers.md`, "Pod identity").

use std::borrow::Cow;

use k8s_openapi::api::core::v1::Pod;

use crate::compact_pod::CompactPod;
use serde::{Deserialize, Deserializer};

pub use podstatus_core::{API_SOURCE, CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION};

/// The namespace the API server gives a pod that names none; used here too so that a
/// static pod read from a file without a namespace pairs with its mirror pod.
const DEFAULT_NAMESPACE: &str = "default";

/// A pod is static when it has a config source annotation that is not `api`.
pub fn is_static_pod(pod: &Pod) -> bool {
    podstatus_core::is_static_source(annotation(pod, CONFIG_SOURCE_ANNOTATION))
}

/// A pod is a mirror pod when it carries the mirror annotation, whatever its value.
pub fn is_mirror_pod(pod: &Pod) -> bool {
    annotation(pod, CONFIG_MIRROR_ANNOTATION).is_some()
}

/// The kubelet's full name of a pod, `name_namespace` (upstream `GetPodFullName`), for
/// logs and messages. Pairing compares [`identity`] instead, which cannot collide.
pub fn full_name(pod: &Pod) -> String {
    let (namespace, name) = identity(pod);
    format!("{name}_{namespace}")
}

/// (namespace, name): what a static pod and its mirror pod share.
pub fn identity(pod: &Pod) -> (&str, &str) {
    let namespace =
        pod.metadata.namespace.as_deref().filter(|namespace| !namespace.is_empty()).unwrap_or(DEFAULT_NAMESPACE);
    (namespace, pod.metadata.name.as_deref().unwrap_or_default())
}

/// [`identity`] of a pod held as its JSON.
pub fn compact_identity(pod: &CompactPod) -> (&str, &str) {
    let namespace = pod.namespace().filter(|namespace| !namespace.is_empty()).unwrap_or(DEFAULT_NAMESPACE);
    (namespace, pod.name().unwrap_or_default())
}

/// The pod's UID, empty when it has none (a pod the API server never stored).
pub fn uid_of(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

/// A pod's UID, namespace and name as its JSON's `metadata` has them: each borrowed
/// from the text (a string with escapes is the only one copied), the rest of the pod
/// skipped, not parsed into a tree. The host reads this of every pod it hands a plugin
/// (issue 27: the kubelet's common call should cost no allocation on the host's side
/// either); a field the pod does not have is None, so that each reader defaults it as
/// its contract says (the API server's `default` namespace, or none).
#[derive(Debug, Default, Deserialize)]
pub struct PodIdentity<'a> {
    /// `metadata.uid`.
    #[serde(default, borrow, deserialize_with = "borrowed_text")]
    pub uid: Option<Cow<'a, str>>,
    /// `metadata.namespace`.
    #[serde(default, borrow, deserialize_with = "borrowed_text")]
    pub namespace: Option<Cow<'a, str>>,
    /// `metadata.name`.
    #[serde(default, borrow, deserialize_with = "borrowed_text")]
    pub name: Option<Cow<'a, str>>,
}

impl<'a> PodIdentity<'a> {
    /// The identity in `pod_json`'s metadata (all None when it has no metadata); None
    /// when the text is not JSON of a pod's shape. Any JSON a struct deserialises from
    /// is read: a caller that takes only objects checks that first.
    pub fn read(pod_json: &'a str) -> Option<Self> {
        #[derive(Deserialize)]
        struct Metadata<'a> {
            #[serde(default, borrow)]
            metadata: Option<PodIdentity<'a>>,
        }
        let pod: Metadata<'a> = serde_json::from_str(pod_json).ok()?;
        Some(pod.metadata.unwrap_or_default())
    }
}

/// The UID in a pod's JSON, if it has one (see [`PodIdentity::read`]).
pub fn uid_in_json(pod_json: &str) -> Option<Cow<'_, str>> {
    PodIdentity::read(pod_json)?.uid
}

/// An optional string borrowed from the text when it has no escapes: serde copies a
/// `Cow` inside an `Option` unless told to borrow it this way.
fn borrowed_text<'de: 'a, 'a, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Cow<'a, str>>, D::Error> {
    #[derive(Deserialize)]
    struct Text<'a>(#[serde(borrow)] Cow<'a, str>);
    Ok(Option::<Text<'a>>::deserialize(deserializer)?.map(|Text(text)| text))
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata.annotations.as_ref()?.get(key).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn pod_with(annotations: &[(&str, &str)]) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("foo".into()),
                annotations: Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn static_needs_a_source_other_than_api() {
        assert!(is_static_pod(&pod_with(&[(CONFIG_SOURCE_ANNOTATION, "file")])));
        assert!(is_static_pod(&pod_with(&[(CONFIG_SOURCE_ANNOTATION, "http")])));
        assert!(!is_static_pod(&pod_with(&[(CONFIG_SOURCE_ANNOTATION, "api")])));
        assert!(!is_static_pod(&pod_with(&[])));
        assert!(!is_static_pod(&Pod::default()));
    }

    #[test]
    fn mirror_needs_only_the_annotation() {
        assert!(is_mirror_pod(&pod_with(&[(CONFIG_MIRROR_ANNOTATION, "")])));
        assert!(!is_mirror_pod(&pod_with(&[(CONFIG_SOURCE_ANNOTATION, "file")])));
    }

    #[test]
    fn full_name_defaults_the_namespace() {
        assert_eq!(full_name(&pod_with(&[])), "foo_default");
    }

    #[test]
    fn a_pods_identity_is_borrowed_unless_escaped() {
        let pod = r#"{"spec":{"containers":[{"name":"x"}]},"metadata":{"name":"web","namespace":"ns","uid":"u-1"}}"#;
        let identity = PodIdentity::read(pod).expect("an identity");
        assert!(matches!(identity.uid, Some(Cow::Borrowed("u-1"))));
        assert!(matches!(identity.name, Some(Cow::Borrowed("web"))));
        assert!(matches!(identity.namespace, Some(Cow::Borrowed("ns"))));

        let escaped = PodIdentity::read(r#"{"metadata":{"uid":"u\u002d2","name":null}}"#).expect("an identity");
        assert_eq!((escaped.uid.as_deref(), escaped.namespace, escaped.name), (Some("u-2"), None, None));
        assert_eq!(uid_in_json(r#"{"metadata":{"name":"no-uid"}}"#), None);
        assert_eq!(uid_in_json(r#"{"spec":{}}"#), None);
        assert!(PodIdentity::read("not json").is_none());
        assert!(PodIdentity::read("[1]").is_none());
        assert!(PodIdentity::read(r#"{"metadata":{"name":5}}"#).is_none(), "a name that is not text");
    }
}
