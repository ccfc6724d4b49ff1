//! The parts of a Pod the status manager reads, parsed without building the whole object.
//!
//! Pods cross the boundary as full Kubernetes JSON, but the status manager needs only
//! identity, a few annotations, the deletion timestamp, the container names of the spec
//! and (sometimes) the status. Parsing just those keeps the JSON boundary cheap: serde
//! skips everything else without allocating, and the status stays raw text until asked
//! for.

use std::collections::BTreeMap;

use std::marker::PhantomData;

use k8s_openapi::api::core::v1::PodStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde::de::{MapAccess, Visitor, value::MapAccessDeserializer};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::error::JsonError;
use crate::go_time::is_zero;

/// Annotation naming where the kubelet got a pod (`api`, `file`, `http`).
pub const CONFIG_SOURCE_ANNOTATION: &str = "kubernetes.io/config.source";
/// Annotation present on mirror pods (the API server's copies of static pods).
pub const CONFIG_MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// The config source of pods that came from the API server.
pub const API_SOURCE: &str = "api";

/// A pod as far as the status manager cares.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct PodView {
    #[serde(deserialize_with = "object_or_null")]
    pub metadata: MetaView,
    #[serde(deserialize_with = "object_or_null")]
    pub spec: SpecView,
    /// Kept as text: most callers never look at it.
    pub status: Option<Box<RawValue>>,
}

/// The metadata fields the status manager reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct MetaView {
    #[serde(deserialize_with = "null_as_default")]
    pub name: String,
    #[serde(deserialize_with = "null_as_default")]
    pub namespace: String,
    #[serde(deserialize_with = "null_as_default")]
    pub uid: String,
    pub resource_version: Option<String>,
    /// Only whether it is set matters: a pod being deleted forces status updates. Go's
    /// zero time counts as unset: Go marshals a zero `metav1.Time` as null, so a copy
    /// that kept `0001-01-01T00:00:00Z` is of a pod nobody is deleting.
    #[serde(deserialize_with = "set_time")]
    pub deletion_timestamp: Option<serde::de::IgnoredAny>,
    #[serde(deserialize_with = "null_as_default")]
    pub annotations: BTreeMap<String, String>,
}

/// The spec fields the status manager reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SpecView {
    #[serde(deserialize_with = "named_list")]
    pub containers: Vec<NamedView>,
    #[serde(deserialize_with = "named_list")]
    pub init_containers: Vec<NamedView>,
    /// Counted in the termination message budget since 1.35 (its `normalizeStatus`).
    #[serde(deserialize_with = "named_list")]
    pub ephemeral_containers: Vec<NamedView>,
    pub restart_policy: Option<String>,
}

impl SpecView {
    /// A spec of these containers (in this order) and nothing else: what a test or a
    /// caller that knows only the names needs.
    pub fn with_containers(names: &[&str]) -> SpecView {
        SpecView {
            containers: names.iter().map(|n| NamedView { name: n.to_string() }).collect(),
            ..SpecView::default()
        }
    }
}

/// A container of the spec, by name.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct NamedView {
    #[serde(deserialize_with = "null_as_default")]
    pub name: String,
}

/// Go decodes `null` into a field's zero value; serde's `default` covers only absence.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A time that is set: not null and not Go's zero time. Anything but a string (or a
/// string that is not a time) counts as set, as before: only the zero time is special.
fn set_time<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<serde::de::IgnoredAny>, D::Error> {
    let value: Option<serde_json::Value> = Option::deserialize(deserializer)?;
    let zero = |text: &str| text.parse::<Timestamp>().is_ok_and(|t| is_zero(&Time(t)));
    Ok(match value {
        None => None,
        Some(serde_json::Value::String(text)) if zero(&text) => None,
        Some(_) => Some(serde::de::IgnoredAny),
    })
}

/// Only a JSON object (or null) makes a struct. serde's derive would also take a list
/// of the fields' values in order; Go's decoder, and so Kubernetes, refuses that.
pub(crate) fn object_or_null<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    struct ObjectVisitor<T>(PhantomData<T>);

    impl<'de, T: Default + Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
        type Value = T;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object or null")
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<T, E> {
            Ok(T::default())
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::deserialize(MapAccessDeserializer::new(map))
        }
    }

    deserializer.deserialize_any(ObjectVisitor(PhantomData))
}

/// A list of containers, each an object; null is the empty list.
fn named_list<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<NamedView>, D::Error> {
    #[derive(Deserialize)]
    struct Element(#[serde(deserialize_with = "object_or_null")] NamedView);
    let list: Option<Vec<Element>> = Option::deserialize(deserializer)?;
    Ok(list.unwrap_or_default().into_iter().map(|Element(named)| named).collect())
}

impl PodView {
    /// Parses a pod; fails on text that is not a JSON object of the Pod's shape.
    fn parse(json: &str) -> Result<PodView, JsonError> {
        let parsed: Option<PodView> =
            serde_json::from_str(json).map_err(|e| JsonError(format!("not a core/v1 Pod: {e}")))?;
        if !json.trim_start().starts_with('{') {
            return Err(JsonError("not a core/v1 Pod: not a JSON object".into()));
        }
        parsed.ok_or_else(|| JsonError("not a core/v1 Pod: null".into()))
    }

    /// Parses a pod that must have a UID (every pod the kubelet handles does).
    pub fn parse_with_uid(json: &str) -> Result<PodView, JsonError> {
        let pod = Self::parse(json)?;
        require_uid(&pod.metadata)?;
        Ok(pod)
    }

    /// The pod's own status (an absent or null status is the empty status).
    pub fn parse_status(&self) -> Result<PodStatus, JsonError> {
        match &self.status {
            None => Ok(PodStatus::default()),
            Some(raw) => parse_status(raw.get()),
        }
    }

    /// `namespace/name`, for log messages.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.metadata.namespace, self.metadata.name)
    }

    /// A static pod came from a file or URL, not from the API server.
    pub fn is_static(&self) -> bool {
        is_static_source(self.metadata.annotations.get(CONFIG_SOURCE_ANNOTATION).map(String::as_str))
    }

    /// A mirror pod is the API server's copy of a static pod.
    pub fn is_mirror(&self) -> bool {
        self.metadata.annotations.contains_key(CONFIG_MIRROR_ANNOTATION)
    }

    /// Whether the pod is being deleted.
    pub fn is_being_deleted(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }
}

/// Refuses a pod without a UID (every pod the kubelet handles has one).
pub(crate) fn require_uid(metadata: &MetaView) -> Result<(), JsonError> {
    if metadata.uid.is_empty() {
        let (namespace, name) = (&metadata.namespace, &metadata.name);
        return Err(JsonError(format!("pod {namespace}/{name} has no metadata.uid")));
    }
    Ok(())
}

/// Whether a pod whose [`CONFIG_SOURCE_ANNOTATION`] is `source` is static: it has one,
/// and it is not [`API_SOURCE`] (the pod came from a file or URL). The one rule every
/// reader of pods (the logic, the host's pod manager, the test fakes) applies; a pod
/// is a mirror pod when it carries [`CONFIG_MIRROR_ANNOTATION`], whatever its value.
pub fn is_static_source(source: Option<&str>) -> bool {
    source.is_some_and(|source| source != API_SOURCE)
}

/// Parses a PodStatus (`null` is the empty status, as in Go).
pub fn parse_status(json: &str) -> Result<PodStatus, JsonError> {
    serde_json::from_str::<Option<PodStatus>>(json)
        .map(Option::unwrap_or_default)
        .map_err(|e| JsonError(format!("not a core/v1 PodStatus: {e}")))
}

/// Serialises a PodStatus: serde_json's bytes, written faster ([`crate::write_status`]).
/// k8s-openapi's types always serialise; a failure would be a bug in them, reported
/// rather than panicking.
pub fn status_to_json(status: &PodStatus) -> Result<String, JsonError> {
    crate::write_status(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_identity_and_skips_the_rest() {
        let pod = PodView::parse(
            r#"{"metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"7",
                "deletionTimestamp":"2026-01-01T00:00:00Z",
                "annotations":{"kubernetes.io/config.source":"file"},"labels":{"x":"y"}},
               "spec":{"containers":[{"name":"c","image":"i"}],"initContainers":null},
               "status":{"phase":"Running"}}"#,
        )
        .unwrap();
        assert_eq!(pod.metadata.uid, "u1");
        assert_eq!(pod.metadata.resource_version.as_deref(), Some("7"));
        assert!(pod.is_being_deleted());
        assert!(pod.is_static());
        assert!(!pod.is_mirror());
        assert_eq!(pod.spec.containers.len(), 1);
        assert!(pod.spec.init_containers.is_empty());
        assert_eq!(pod.parse_status().unwrap().phase.as_deref(), Some("Running"));
    }

    #[test]
    fn api_source_is_not_static_and_null_deletion_timestamp_is_unset() {
        let pod = PodView::parse(
            r#"{"metadata":{"uid":"u","deletionTimestamp":null,
                "annotations":{"kubernetes.io/config.source":"api","kubernetes.io/config.mirror":""}}}"#,
        )
        .unwrap();
        assert!(!pod.is_static());
        assert!(pod.is_mirror());
        assert!(!pod.is_being_deleted());
    }

    #[test]
    fn the_zero_deletion_timestamp_is_unset() {
        for zero in ["0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000Z", "0001-01-01T01:00:00+01:00"] {
            let pod = PodView::parse(&format!(r#"{{"metadata":{{"uid":"u","deletionTimestamp":"{zero}"}}}}"#)).unwrap();
            assert!(!pod.is_being_deleted(), "{zero}");
        }
        for set in [r#""0001-01-01T00:00:01Z""#, r#""2026-01-01T00:00:00Z""#, r#""soon""#, "5"] {
            let pod = PodView::parse(&format!(r#"{{"metadata":{{"uid":"u","deletionTimestamp":{set}}}}}"#)).unwrap();
            assert!(pod.is_being_deleted(), "{set}");
        }
    }

    #[test]
    fn rejects_garbage_and_missing_uid() {
        assert!(PodView::parse("[1,2]").is_err());
        assert!(PodView::parse(r#"[{"uid": "u"}]"#).is_err());
        assert!(PodView::parse(r#"{"metadata": ["n", "a", "u"]}"#).is_err());
        assert!(PodView::parse(r#"{"metadata": {"uid": "u"}, "spec": []}"#).is_err());
        assert!(PodView::parse(r#"{"metadata": {"uid": "u"}, "spec": {"containers": [["c"]]}}"#).is_err());
        assert!(PodView::parse("null").is_err());
        assert!(PodView::parse("{").is_err());
        let err = PodView::parse_with_uid(r#"{"metadata":{"name":"a","namespace":"b"}}"#).unwrap_err();
        assert!(err.to_string().contains("b/a has no metadata.uid"), "{err}");
    }

    #[test]
    fn null_status_is_empty() {
        assert_eq!(parse_status("null").unwrap(), PodStatus::default());
        assert!(parse_status(r#"{"conditions": 5}"#).is_err());
    }
}
