//! A pod kept as its compact JSON, with the few fields its holders ask of it read out
//! beside it: what the in-memory store and the pod manager hold instead of k8s-openapi
//! `Pod` trees.
//!
//! Why: a `Pod` tree is hundreds of small allocations, about 12 KB on the heap for a
//! pod whose JSON is 1.5 to 4 KB, and a fleet of 100,000 pods held each one twice (the
//! store's, the pod manager's). The JSON is also what most readers want: the HTTP
//! server answers with it and the plugin is handed it, so neither serialises a tree
//! any more. A reader that needs the tree parses it ([`CompactPod::pod`]).
//!
//! The text is exactly what `serde_json` writes for k8s-openapi's `Pod`:
//! `{"apiVersion":"v1","kind":"Pod","metadata":{..}[,"spec":{..}][,"status":{..}]}`.
//! A status write therefore splices: the new metadata and status are written, the
//! spec's bytes are kept ([`CompactPod::with_status`]), and the result is the text the
//! whole pod serialised would be.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde_json::value::RawValue;

use podstatus_core::{CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION};

/// What an `Arc` allocates beside its value (its two counts): what a holder of an
/// `Arc<CompactPod>` counts for it besides [`CompactPod::held_bytes`].
pub const ARC_COUNTS_BYTES: usize = 2 * std::mem::size_of::<usize>();

/// The largest text kept: spans are 31-bit offsets (the API server's own limit on an
/// object is 1.5 MiB).
pub const MAX_COMPACT_POD_BYTES: usize = (u32::MAX >> 1) as usize;

/// Why a pod could not be kept as its JSON.
#[derive(Debug, thiserror::Error)]
pub enum CompactPodError {
    /// The pod did not serialise, or the text is not a pod's JSON.
    #[error("a pod's JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The text is over [`MAX_COMPACT_POD_BYTES`].
    #[error("a pod's JSON of {0} bytes is over the limit")]
    TooLarge(usize),
}

/// A pod as its compact JSON, and the fields read from it: namespace, name, UID,
/// resourceVersion, the fields a field selector may name, the labels, and whether it
/// is a static or a mirror pod. Never changed once made; shared as `Arc<CompactPod>`.
#[derive(Clone, PartialEq, Eq)]
pub struct CompactPod {
    json: Box<str>,
    /// Field values not kept as spans of the text: read off a typed pod, or unescaped.
    unescaped: Box<str>,
    /// Where the `metadata`, `spec` and `status` values are in the text.
    metadata: Span,
    spec: Span,
    status: Span,
    /// The labels object's text.
    labels: Span,
    fields: [Span; FIELD_COUNT],
    /// The config source annotation, when it is there (a static pod's is not `api`).
    config_source: Span,
    /// The mirror annotation is there.
    mirror: bool,
    /// `metadata.deletionTimestamp` is set.
    deleting: bool,
    /// `spec.hostNetwork`.
    host_network: Option<bool>,
    /// The text is what `serde_json` wrote for the pod (made here from a typed pod or
    /// its parts, not handed in): its metadata's fields in k8s-openapi's order, which
    /// [`CompactPod::restamped`] relies on.
    written_here: bool,
}

/// A text field [`CompactPod::field`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodField {
    /// `metadata.namespace`.
    Namespace,
    /// `metadata.name`.
    Name,
    /// `metadata.uid`.
    Uid,
    /// `metadata.resourceVersion`.
    ResourceVersion,
    /// `spec.nodeName`.
    NodeName,
    /// `spec.restartPolicy`.
    RestartPolicy,
    /// `spec.schedulerName`.
    SchedulerName,
    /// `spec.serviceAccountName`.
    ServiceAccountName,
    /// `status.phase`.
    Phase,
    /// `status.podIP`.
    PodIp,
    /// `status.nominatedNodeName`.
    NominatedNodeName,
}

const FIELD_COUNT: usize = 11;

/// A run of bytes in the text, or in the unescaped values when `start` has its top bit
/// set; `ABSENT` for a field the pod does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    start: u32,
    end: u32,
}

const UNESCAPED: u32 = 1 << 31;

impl Span {
    const ABSENT: Span = Span { start: u32::MAX, end: u32::MAX };

    fn is_absent(self) -> bool {
        self == Self::ABSENT
    }
}

/// What a pod's text is read for: each value borrowed (a field with escapes is copied).
#[derive(Deserialize)]
struct View<'a> {
    #[serde(default, borrow)]
    metadata: Option<&'a RawValue>,
    #[serde(default, borrow)]
    spec: Option<&'a RawValue>,
    #[serde(default, borrow)]
    status: Option<&'a RawValue>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetadataView<'a> {
    #[serde(default, borrow, deserialize_with = "text")]
    namespace: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "text")]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "text")]
    uid: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "text")]
    resource_version: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    labels: Option<&'a RawValue>,
    #[serde(default, borrow)]
    deletion_timestamp: Option<&'a RawValue>,
    #[serde(default, borrow)]
    annotations: Option<BTreeMap<Cow<'a, str>, Cow<'a, str>>>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpecView<'a> {
    #[serde(default, borrow, deserialize_with = "text")]
    node_name: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "text")]
    restart_policy: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "text")]
    scheduler_name: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "text")]
    service_account_name: Option<Cow<'a, str>>,
    #[serde(default)]
    host_network: Option<bool>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StatusView<'a> {
    #[serde(default, borrow, deserialize_with = "text")]
    phase: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "podIP", deserialize_with = "text")]
    pod_ip: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "text")]
    nominated_node_name: Option<Cow<'a, str>>,
}

/// An optional string borrowed from the text when it has no escapes (serde copies a
/// `Cow` inside an `Option` unless told to borrow it this way).
fn text<'de: 'a, 'a, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Cow<'a, str>>, D::Error> {
    #[derive(Deserialize)]
    struct Text<'a>(#[serde(borrow)] Cow<'a, str>);
    Ok(Option::<Text<'a>>::deserialize(deserializer)?.map(|Text(text)| text))
}

/// A metadata's text, with the fields read off it.
struct MetadataPart<'a> {
    json: &'a str,
    /// namespace, name, uid, resourceVersion.
    fields: [Option<&'a str>; 4],
    /// The labels object's text.
    labels: Option<&'a str>,
    /// The config source annotation.
    config_source: Option<&'a str>,
    mirror: bool,
    deleting: bool,
}

/// A spec's text, with the fields read off it.
struct SpecPart<'a> {
    json: &'a str,
    /// nodeName, restartPolicy, schedulerName, serviceAccountName.
    fields: [Option<&'a str>; 4],
    host_network: Option<bool>,
}

/// A status's text and the status it was written from.
struct StatusPart<'a> {
    json: &'a str,
    status: &'a PodStatus,
}

fn as_text(value: Option<&String>) -> Option<&str> {
    value.map(String::as_str)
}

/// A value `serde_json` writes as it is between quotes (no escapes): one that may be
/// spliced into, or read off, a text as is.
fn plain(value: &str) -> bool {
    value.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
}

/// `value` kept in the side text (field values not kept as spans of the pod's text).
fn side_span(side: &mut String, value: Option<&str>) -> Span {
    let Some(value) = value else { return Span::ABSENT };
    let start = side.len() as u32 | UNESCAPED;
    side.push_str(value);
    Span { start, end: side.len() as u32 | UNESCAPED }
}

/// The start of every pod's text, up to its metadata.
const HEAD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":"#;
/// What comes before a spec's text, and before a status's.
const SPEC_KEY: &str = r#","spec":"#;
const STATUS_KEY: &str = r#","status":"#;

/// The length of a pod's text whose metadata, spec and status texts are these long.
fn text_len(metadata: usize, spec: Option<usize>, status: Option<usize>) -> usize {
    HEAD.len() + metadata + spec.map_or(0, |s| SPEC_KEY.len() + s) + status.map_or(0, |s| STATUS_KEY.len() + s) + 1
}

impl CompactPod {
    /// `pod`, as `serde_json` writes it; its fields are read off the object (no parse).
    pub fn from_pod(pod: &Pod) -> Result<Self, CompactPodError> {
        let spec_json = pod.spec.as_ref().map(serde_json::to_string).transpose()?;
        let status_json = pod.status.as_ref().map(serde_json::to_string).transpose()?;
        let spec = pod.spec.as_ref();
        let spec = spec_json.as_deref().map(|json| SpecPart {
            json,
            fields: [
                as_text(spec.and_then(|s| s.node_name.as_ref())),
                as_text(spec.and_then(|s| s.restart_policy.as_ref())),
                as_text(spec.and_then(|s| s.scheduler_name.as_ref())),
                as_text(spec.and_then(|s| s.service_account_name.as_ref())),
            ],
            host_network: spec.and_then(|s| s.host_network),
        });
        let status = status_json.as_deref().zip(pod.status.as_ref()).map(|(json, status)| StatusPart { json, status });
        Self::assemble(&pod.metadata, spec, status)
    }

    /// A pod of `metadata`, `spec` and `status`, each part's text as `serde_json`
    /// wrote it: the text `serde_json` writes for the whole pod, its fields read off
    /// the parts.
    fn assemble(
        metadata: &ObjectMeta,
        spec: Option<SpecPart<'_>>,
        status: Option<StatusPart<'_>>,
    ) -> Result<Self, CompactPodError> {
        let json = serde_json::to_string(metadata)?;
        let labels = metadata.labels.as_ref().map(serde_json::to_string).transpose()?;
        let annotation = |key: &str| metadata.annotations.as_ref().and_then(|a| a.get(key)).map(String::as_str);
        let metadata = MetadataPart {
            json: &json,
            fields: [
                as_text(metadata.namespace.as_ref()),
                as_text(metadata.name.as_ref()),
                as_text(metadata.uid.as_ref()),
                as_text(metadata.resource_version.as_ref()),
            ],
            labels: labels.as_deref(),
            config_source: annotation(CONFIG_SOURCE_ANNOTATION),
            mirror: annotation(CONFIG_MIRROR_ANNOTATION).is_some(),
            deleting: metadata.deletion_timestamp.is_some(),
        };
        Self::assemble_parts(metadata, spec, status)
    }

    /// [`CompactPod::assemble`] of a metadata whose text and fields are at hand.
    fn assemble_parts(
        metadata: MetadataPart<'_>,
        spec: Option<SpecPart<'_>>,
        status: Option<StatusPart<'_>>,
    ) -> Result<Self, CompactPodError> {
        let metadata_json = metadata.json;
        let len =
            text_len(metadata_json.len(), spec.as_ref().map(|s| s.json.len()), status.as_ref().map(|s| s.json.len()));
        if len > MAX_COMPACT_POD_BYTES {
            return Err(CompactPodError::TooLarge(len));
        }
        let mut json = String::with_capacity(len);
        let mut side = String::new();
        let mut pod = CompactPod::empty();
        let push = |json: &mut String, part: &str| {
            let start = json.len() as u32;
            json.push_str(part);
            Span { start, end: json.len() as u32 }
        };
        json.push_str(HEAD);
        pod.metadata = push(&mut json, metadata_json);
        if let Some(spec) = &spec {
            json.push_str(SPEC_KEY);
            pod.spec = push(&mut json, spec.json);
        }
        if let Some(status) = &status {
            json.push_str(STATUS_KEY);
            pod.status = push(&mut json, status.json);
        }
        json.push('}');
        pod.labels = side_span(&mut side, metadata.labels);
        pod.config_source = side_span(&mut side, metadata.config_source);
        pod.mirror = metadata.mirror;
        pod.deleting = metadata.deleting;
        pod.host_network = spec.as_ref().and_then(|s| s.host_network);
        pod.written_here = true;
        let [node_name, restart_policy, scheduler_name, service_account_name] =
            spec.as_ref().map_or([None; 4], |s| s.fields);
        let status = status.map(|s| s.status);
        let [namespace, name, uid, resource_version] = metadata.fields;
        let values = [
            namespace,
            name,
            uid,
            resource_version,
            node_name,
            restart_policy,
            scheduler_name,
            service_account_name,
            as_text(status.and_then(|s| s.phase.as_ref())),
            as_text(status.and_then(|s| s.pod_ip.as_ref())),
            as_text(status.and_then(|s| s.nominated_node_name.as_ref())),
        ];
        for (slot, value) in pod.fields.iter_mut().zip(values) {
            *slot = side_span(&mut side, value);
        }
        pod.json = json.into_boxed_str();
        pod.unescaped = side.into_boxed_str();
        Ok(pod)
    }

    /// A pod with nothing yet: the start of the makers'.
    fn empty() -> Self {
        CompactPod {
            json: Box::from(""),
            unescaped: Box::from(""),
            metadata: Span::ABSENT,
            spec: Span::ABSENT,
            status: Span::ABSENT,
            labels: Span::ABSENT,
            fields: [Span::ABSENT; FIELD_COUNT],
            config_source: Span::ABSENT,
            mirror: false,
            deleting: false,
            host_network: None,
            written_here: false,
        }
    }

    /// The text of a pod `serde_json` wrote (or as it would write it), read for its
    /// fields. A text that is not JSON of a pod's shape is refused; one that is is
    /// kept as it is (a caller that must be sure of every field parses it first).
    pub fn from_serialized(json: String) -> Result<Self, CompactPodError> {
        if json.len() > MAX_COMPACT_POD_BYTES {
            return Err(CompactPodError::TooLarge(json.len()));
        }
        let json = json.into_boxed_str();
        let mut unescaped = String::new();
        let mut pod = CompactPod::empty();
        {
            let base = json.as_ptr() as usize;
            let span_of = |slice: &str| {
                let start = slice.as_ptr() as usize - base;
                Span { start: start as u32, end: (start + slice.len()) as u32 }
            };
            let span = |value: Option<Cow<'_, str>>, unescaped: &mut String| match value {
                None => Span::ABSENT,
                Some(Cow::Borrowed(slice)) => span_of(slice),
                Some(Cow::Owned(owned)) => side_span(unescaped, Some(owned.as_str())),
            };
            let view: View<'_> = serde_json::from_str(&json)?;
            let metadata: MetadataView<'_> =
                view.metadata.map(|m| serde_json::from_str(m.get())).transpose()?.unwrap_or_default();
            let spec: SpecView<'_> = view.spec.map(|s| serde_json::from_str(s.get())).transpose()?.unwrap_or_default();
            let status: StatusView<'_> =
                view.status.map(|s| serde_json::from_str(s.get())).transpose()?.unwrap_or_default();
            pod.metadata = view.metadata.map_or(Span::ABSENT, |raw| span_of(raw.get()));
            pod.spec = view.spec.map_or(Span::ABSENT, |raw| span_of(raw.get()));
            pod.status = view.status.map_or(Span::ABSENT, |raw| span_of(raw.get()));
            pod.labels = metadata.labels.map_or(Span::ABSENT, |raw| span_of(raw.get()));
            let mut annotations = metadata.annotations.unwrap_or_default();
            pod.mirror = annotations.contains_key(CONFIG_MIRROR_ANNOTATION);
            pod.deleting = metadata.deletion_timestamp.is_some_and(|raw| raw.get() != "null");
            pod.config_source = span(annotations.remove(CONFIG_SOURCE_ANNOTATION), &mut unescaped);
            pod.host_network = spec.host_network;
            let values = [
                metadata.namespace,
                metadata.name,
                metadata.uid,
                metadata.resource_version,
                spec.node_name,
                spec.restart_policy,
                spec.scheduler_name,
                spec.service_account_name,
                status.phase,
                status.pod_ip,
                status.nominated_node_name,
            ];
            for (slot, value) in pod.fields.iter_mut().zip(values) {
                *slot = span(value, &mut unescaped);
            }
        }
        pod.json = json;
        pod.unescaped = unescaped.into_boxed_str();
        Ok(pod)
    }

    /// The pod's JSON.
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The pod as a k8s-openapi object (parsed now: the caller that needs the tree
    /// pays for it).
    pub fn pod(&self) -> Result<Pod, CompactPodError> {
        Ok(serde_json::from_str(&self.json)?)
    }

    /// The pod's metadata, parsed now.
    pub fn metadata(&self) -> Result<ObjectMeta, CompactPodError> {
        Ok(serde_json::from_str(self.text(self.metadata).unwrap_or("{}"))?)
    }

    /// The pod's status, parsed now (None when the pod has none).
    pub fn status(&self) -> Result<Option<PodStatus>, CompactPodError> {
        Ok(self.status_json().map(serde_json::from_str).transpose()?)
    }

    /// The status's JSON, if the pod has one.
    pub fn status_json(&self) -> Option<&str> {
        self.text(self.status)
    }

    /// The spec's JSON, if the pod has one.
    pub fn spec_json(&self) -> Option<&str> {
        self.text(self.spec)
    }

    /// This pod with `metadata` and `status` instead of its own, its spec kept byte for
    /// byte: the text `serde_json` writes for the pod so changed.
    pub fn with_status(&self, metadata: &ObjectMeta, status: Option<&PodStatus>) -> Result<Self, CompactPodError> {
        let json = status.map(serde_json::to_string).transpose()?;
        self.with_status_json(metadata, json.as_deref().zip(status))
    }

    /// [`CompactPod::with_status`] of a status with the text `serde_json` wrote for it
    /// (which a caller that compared it first has).
    pub fn with_status_json(
        &self,
        metadata: &ObjectMeta,
        status: Option<(&str, &PodStatus)>,
    ) -> Result<Self, CompactPodError> {
        Self::assemble(metadata, self.spec_part(), status.map(|(json, status)| StatusPart { json, status }))
    }

    /// [`CompactPod::with_status_json`] of this pod's own metadata with
    /// `resource_version` instead of its own: what a status write stores. The new
    /// version is spliced into the metadata's text where the text is one this module
    /// wrote (no parse of the metadata: a status write is the store's most frequent
    /// change); any other text is parsed and written again.
    pub fn restamped(
        &self,
        resource_version: &str,
        status: Option<(&str, &PodStatus)>,
    ) -> Result<Self, CompactPodError> {
        let Some((before, after)) = self.around_resource_version().filter(|_| plain(resource_version)) else {
            let mut metadata = self.metadata()?;
            metadata.resource_version = Some(resource_version.to_owned());
            return self.with_status_json(&metadata, status);
        };
        let json = [before, resource_version, after].concat();
        let metadata = MetadataPart {
            json: &json,
            fields: [self.namespace(), self.name(), self.uid(), Some(resource_version)],
            labels: self.text(self.labels),
            config_source: self.text(self.config_source),
            mirror: self.mirror,
            deleting: self.deleting,
        };
        Self::assemble_parts(metadata, self.spec_part(), status.map(|(json, status)| StatusPart { json, status }))
    }

    /// The metadata's text before and after the value of its `resourceVersion`, when
    /// this module wrote it. `serde_json` writes k8s-openapi's `ObjectMeta` fields in
    /// order, and only `selfLink` and `uid` (strings) come after `resourceVersion`: the
    /// key's last unescaped occurrence is the metadata's own (one in a label, an
    /// annotation or an owner comes before it; in a string a quote is escaped). The
    /// value found must be the version read off the pod, or nothing is spliced.
    fn around_resource_version(&self) -> Option<(&str, &str)> {
        const KEY: &str = r#""resourceVersion":""#;
        let metadata = self.text(self.metadata).filter(|_| self.written_here)?;
        let version = self.resource_version().filter(|v| plain(v))?;
        let start = metadata.rfind(KEY)? + KEY.len();
        let after = metadata[start..].strip_prefix(version).filter(|rest| rest.starts_with('"'))?;
        Some((&metadata[..start], after))
    }

    /// The spec's text and fields, as kept.
    fn spec_part(&self) -> Option<SpecPart<'_>> {
        self.spec_json().map(|json| SpecPart {
            json,
            fields: [
                self.field(PodField::NodeName),
                self.field(PodField::RestartPolicy),
                self.field(PodField::SchedulerName),
                self.field(PodField::ServiceAccountName),
            ],
            host_network: self.host_network,
        })
    }

    /// The size of the text this pod would have with `status` (written by
    /// `serde_json`) instead of its own, its metadata and spec as they are.
    pub fn len_with_status(&self, status: Option<usize>) -> usize {
        text_len(self.text(self.metadata).map_or(2, str::len), self.spec_json().map(str::len), status)
    }

    /// A text field, None when the pod does not have it.
    pub fn field(&self, field: PodField) -> Option<&str> {
        self.text(self.fields[field as usize])
    }

    /// `metadata.namespace`, if set.
    pub fn namespace(&self) -> Option<&str> {
        self.field(PodField::Namespace)
    }

    /// `metadata.name`, if set.
    pub fn name(&self) -> Option<&str> {
        self.field(PodField::Name)
    }

    /// `metadata.uid`, if set.
    pub fn uid(&self) -> Option<&str> {
        self.field(PodField::Uid)
    }

    /// `metadata.resourceVersion`, if set.
    pub fn resource_version(&self) -> Option<&str> {
        self.field(PodField::ResourceVersion)
    }

    /// `spec.hostNetwork`, if set.
    pub fn host_network(&self) -> Option<bool> {
        self.host_network
    }

    /// The labels, parsed now (None when the pod has none, or they are not a map of
    /// strings).
    pub fn labels(&self) -> Option<BTreeMap<String, String>> {
        self.text(self.labels).and_then(|labels| serde_json::from_str(labels).ok())
    }

    /// A static pod: its config source annotation is there and not `api`.
    pub fn is_static(&self) -> bool {
        podstatus_core::is_static_source(self.text(self.config_source))
    }

    /// A mirror pod: it carries the mirror annotation.
    pub fn is_mirror(&self) -> bool {
        self.mirror
    }

    /// The pod is being deleted: it has a `deletionTimestamp`.
    pub fn is_being_deleted(&self) -> bool {
        self.deleting
    }

    /// The bytes this pod holds: itself and its texts.
    pub fn held_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.json.len() + self.unescaped.len()
    }

    fn text(&self, span: Span) -> Option<&str> {
        if span.is_absent() {
            return None;
        }
        let (text, start, end) = if span.start & UNESCAPED != 0 {
            (&*self.unescaped, span.start & !UNESCAPED, span.end & !UNESCAPED)
        } else {
            (&*self.json, span.start, span.end)
        };
        text.get(start as usize..end as usize)
    }
}

impl std::fmt::Debug for CompactPod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactPod")
            .field("namespace", &self.namespace())
            .field("name", &self.name())
            .field("uid", &self.uid())
            .field("resource_version", &self.resource_version())
            .field("bytes", &self.json.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(value: serde_json::Value) -> Pod {
        serde_json::from_value(value).expect("a pod")
    }

    fn full() -> Pod {
        pod(json!({
            "metadata": {
                "name": "web-0", "namespace": "ns", "uid": "u-1", "resourceVersion": "7",
                "labels": {"app": "web"},
                "annotations": {"kubernetes.io/config.source": "file", "other": "x"},
                "creationTimestamp": "2026-01-02T03:04:05Z"
            },
            "spec": {
                "nodeName": "n1", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                "serviceAccountName": "sa", "hostNetwork": true,
                "containers": [{"name": "app", "image": "registry.example/app:1.0",
                    "resources": {"requests": {"cpu": "100m"}}}]
            },
            "status": {
                "phase": "Running", "podIP": "10.0.0.1", "nominatedNodeName": "n2",
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-02T03:04:06Z"}],
                "startTime": "2026-01-02T03:04:05Z"
            }
        }))
    }

    /// The text is serde_json's, and parses back to the pod it was made of.
    #[test]
    fn round_trips_to_what_k8s_openapi_writes() {
        for pod in [full(), Pod::default(), pod(json!({"metadata": {"name": "a"}, "spec": {"containers": []}}))] {
            let compact = CompactPod::from_pod(&pod).expect("compact");
            assert_eq!(compact.json(), serde_json::to_string(&pod).expect("JSON"));
            // What the HTTP server sent before it sent these bytes: the pod made a value.
            let value = serde_json::to_value(&pod).expect("a value");
            assert_eq!(compact.json().as_bytes(), serde_json::to_vec(&value).expect("JSON"));
            assert_eq!(compact.pod().expect("parses"), pod);
            assert_eq!(compact.status().expect("status"), pod.status);
            assert_eq!(compact.metadata().expect("metadata"), pod.metadata);
        }
    }

    #[test]
    fn reads_the_fields_its_holders_ask_for() {
        let compact = CompactPod::from_pod(&full()).expect("compact");
        let fields = [
            (PodField::Namespace, "ns"),
            (PodField::Name, "web-0"),
            (PodField::Uid, "u-1"),
            (PodField::ResourceVersion, "7"),
            (PodField::NodeName, "n1"),
            (PodField::RestartPolicy, "Always"),
            (PodField::SchedulerName, "default-scheduler"),
            (PodField::ServiceAccountName, "sa"),
            (PodField::Phase, "Running"),
            (PodField::PodIp, "10.0.0.1"),
            (PodField::NominatedNodeName, "n2"),
        ];
        for (field, value) in fields {
            assert_eq!(compact.field(field), Some(value), "{field:?}");
        }
        assert_eq!(compact.host_network(), Some(true));
        assert_eq!(compact.labels(), Some([("app".to_owned(), "web".to_owned())].into()));
        assert!(compact.is_static() && !compact.is_mirror());
        let bare = CompactPod::from_pod(&Pod::default()).expect("compact");
        assert_eq!((bare.name(), bare.uid(), bare.labels(), bare.host_network()), (None, None, None, None));
        assert!(!bare.is_static() && !bare.is_mirror());
    }

    #[test]
    fn escaped_values_are_read_unescaped() {
        let text = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a\u002db","uid":"u\"1","annotations":{"kubernetes.io/config.mirror":"h"}}}"#;
        let compact = CompactPod::from_serialized(text.to_owned()).expect("compact");
        assert_eq!((compact.name(), compact.uid()), (Some("a-b"), Some("u\"1")));
        assert!(compact.is_mirror());
        assert_eq!(compact.json(), text);
    }

    #[test]
    fn a_status_write_splices_and_equals_the_whole_pod_written() {
        let before = full();
        let compact = CompactPod::from_pod(&before).expect("compact");
        let mut after = before.clone();
        after.metadata.resource_version = Some("8".into());
        after.status = Some(PodStatus { phase: Some("Succeeded".into()), ..PodStatus::default() });
        let written = compact.with_status(&after.metadata, after.status.as_ref()).expect("written");
        assert_eq!(written.json(), serde_json::to_string(&after).expect("JSON"));
        assert_eq!((written.resource_version(), written.field(PodField::Phase)), (Some("8"), Some("Succeeded")));
        assert_eq!(written.field(PodField::PodIp), None);
        let cleared = compact.with_status(&after.metadata, None).expect("written");
        after.status = None;
        assert_eq!(cleared.json(), serde_json::to_string(&after).expect("JSON"));
        let no_spec = CompactPod::from_pod(&Pod::default()).expect("compact");
        let status = PodStatus::default();
        let written = no_spec.with_status(&ObjectMeta::default(), Some(&status)).expect("written");
        let whole = Pod { status: Some(status), ..Pod::default() };
        assert_eq!(written.json(), serde_json::to_string(&whole).expect("JSON"));
    }

    #[test]
    fn a_restamp_equals_the_whole_pod_written_with_the_new_version() {
        let mut before = full();
        // Keys that look like the version's, in a label and an annotation.
        before.metadata.labels.get_or_insert_default().insert("resourceVersion".into(), "7".into());
        before.metadata.annotations.get_or_insert_default().insert("x\"resourceVersion".into(), "7".into());
        before.metadata.resource_version = Some("7".into());
        let status = PodStatus { phase: Some("Succeeded".into()), ..PodStatus::default() };
        let json = serde_json::to_string(&status).expect("JSON");
        let mut after = before.clone();
        after.metadata.resource_version = Some("12".into());
        after.status = Some(status.clone());
        let expected = serde_json::to_string(&after).expect("JSON");
        // Spliced (a text written here), and parsed again (a text handed in).
        let written = CompactPod::from_pod(&before).expect("compact");
        let handed = CompactPod::from_serialized(serde_json::to_string(&before).expect("JSON")).expect("compact");
        for pod in [written, handed] {
            let restamped = pod.restamped("12", Some((&json, &status))).expect("restamped");
            assert_eq!(restamped.json(), expected);
            assert_eq!(restamped.resource_version(), Some("12"));
            assert_eq!(restamped.field(PodField::Phase), Some("Succeeded"));
            assert_eq!((restamped.uid(), restamped.name()), (pod.uid(), pod.name()));
            assert_eq!(restamped.labels(), after.metadata.labels);
            assert_eq!((restamped.is_static(), restamped.is_mirror()), (pod.is_static(), pod.is_mirror()));
            assert!(restamped.around_resource_version().is_some(), "a restamped pod's text is written here");
        }
        // A version that would need escapes is written by serde, not spliced.
        let odd = CompactPod::from_pod(&before).expect("compact").restamped("a\"b", None).expect("restamped");
        after.metadata.resource_version = Some("a\"b".into());
        after.status = None;
        assert_eq!(odd.json(), serde_json::to_string(&after).expect("JSON"));
        // A pod without a version has nothing to splice into.
        let bare = CompactPod::from_pod(&Pod::default()).expect("compact");
        assert_eq!(bare.around_resource_version(), None);
        let stamped = bare.restamped("3", None).expect("restamped");
        assert_eq!(stamped.json(), r#"{"apiVersion":"v1","kind":"Pod","metadata":{"resourceVersion":"3"}}"#);
    }

    #[test]
    fn refuses_what_is_not_a_pods_json() {
        for bad in ["", "[1]", "{\"metadata\":5}", "{\"metadata\":{\"name\":5}}", "not json"] {
            assert!(CompactPod::from_serialized(bad.to_owned()).is_err(), "{bad}");
        }
    }

    #[test]
    fn holds_its_text_and_little_else() {
        let compact = CompactPod::from_pod(&full()).expect("compact");
        let json = compact.json().len();
        assert!(compact.held_bytes() < json + 400, "{} for {json} bytes of JSON", compact.held_bytes());
    }
}
