//! A pod read for its identity alone: what a sync needs of the API server's pod.
//!
//! A sync reads the pod twice (the GET before the write, the pod the write returns) and
//! uses its metadata: UID, name, namespace, resourceVersion, the annotations that make
//! it static or a mirror pod, whether it is being deleted. [`crate::PodView`] also reads
//! the spec's container names (each container object walked key by key) and copies the
//! status's text out: half its cost, for nothing a sync of logic v1 looks at. Here the
//! spec is skipped, and the status is only found (its place in the text), to be parsed
//! if a version asks for it.

use std::ops::Range;

use k8s_openapi::api::core::v1::PodStatus;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::JsonError;
use crate::pod::{CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION, MetaView, is_static_source, object_or_null};
use crate::pod::{parse_status, require_uid};

/// A pod's metadata, and where its status is in the pod's JSON.
#[derive(Debug, Default)]
pub struct PodMeta {
    /// The pod's metadata, read as [`crate::PodView`] reads it.
    pub metadata: MetaView,
    /// The status's bytes in the text this was parsed from; None when absent or null.
    status: Option<Range<usize>>,
}

/// What is read of the pod's JSON: the spec and every other key are skipped (checked to
/// be JSON, not to be a spec), the status borrowed where it stands.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Fields<'a> {
    #[serde(deserialize_with = "object_or_null")]
    metadata: MetaView,
    #[serde(borrow)]
    status: Option<&'a RawValue>,
}

impl PodMeta {
    /// Reads a pod that must have a UID; fails on text that is not a JSON object with
    /// an object (or null) as its metadata, as [`crate::PodView::parse_with_uid`] does.
    pub fn parse_with_uid(json: &str) -> Result<PodMeta, JsonError> {
        let fields: Option<Fields<'_>> =
            serde_json::from_str(json).map_err(|e| JsonError(format!("not a core/v1 Pod: {e}")))?;
        if !json.trim_start().starts_with('{') {
            return Err(JsonError("not a core/v1 Pod: not a JSON object".into()));
        }
        let fields = fields.ok_or_else(|| JsonError("not a core/v1 Pod: null".into()))?;
        require_uid(&fields.metadata)?;
        // The raw value borrows `json`: its place is its offset in it.
        let status = fields.status.map(|raw| {
            let start = raw.get().as_ptr() as usize - json.as_ptr() as usize;
            start..start + raw.get().len()
        });
        Ok(PodMeta { metadata: fields.metadata, status })
    }

    /// The pod's status (absent or null is the empty status), from `json`, the text
    /// this was parsed from.
    pub fn parse_status(&self, json: &str) -> Result<PodStatus, JsonError> {
        match &self.status {
            None => Ok(PodStatus::default()),
            Some(range) => match json.get(range.clone()) {
                Some(text) => parse_status(text),
                None => Err(JsonError("the pod's status is not in the text given".into())),
            },
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PodView;

    const POD: &str = r#"{"metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"7",
        "deletionTimestamp":"2026-01-01T00:00:00Z",
        "annotations":{"kubernetes.io/config.source":"file","kubernetes.io/config.mirror":"x"},"labels":{"x":"y"}},
        "spec":{"containers":[{"name":"c","image":"i"}]},
        "status":{"phase":"Running","message":"a \"quoted\" \\ word"}}"#;

    /// It reads what the pod view reads of the metadata, and the same status.
    #[test]
    fn reads_the_metadata_and_finds_the_status_as_the_view_does() {
        let meta = PodMeta::parse_with_uid(POD).unwrap();
        let view = PodView::parse_with_uid(POD).unwrap();
        assert_eq!(format!("{:?}", meta.metadata), format!("{:?}", view.metadata));
        assert_eq!(meta.parse_status(POD).unwrap(), view.parse_status().unwrap());
        assert_eq!(meta.parse_status(POD).unwrap().message.as_deref(), Some("a \"quoted\" \\ word"));
        assert_eq!(
            (meta.is_static(), meta.is_mirror(), meta.is_being_deleted(), meta.full_name()),
            (view.is_static(), view.is_mirror(), view.is_being_deleted(), view.full_name())
        );
    }

    #[test]
    fn an_absent_or_null_status_is_empty() {
        for json in [r#"{"metadata":{"uid":"u"}}"#, r#"{"metadata":{"uid":"u"},"status":null}"#] {
            let meta = PodMeta::parse_with_uid(json).unwrap();
            assert_eq!(meta.parse_status(json).unwrap(), PodStatus::default(), "{json}");
        }
        let bad = r#"{"metadata":{"uid":"u"},"status":{"conditions":5}}"#;
        assert!(PodMeta::parse_with_uid(bad).unwrap().parse_status(bad).is_err(), "parsed when asked, and refused");
    }

    /// What is not a pod is refused as the view refuses it; the spec is not read.
    #[test]
    fn refuses_what_is_not_a_pod_with_a_uid() {
        for bad in ["[1,2]", "null", "{", r#"{"metadata": ["n", "a", "u"]}"#, r#"{"metadata":{"uid":"u"},"x":tru}"#] {
            assert!(PodMeta::parse_with_uid(bad).is_err(), "{bad}");
        }
        let err = PodMeta::parse_with_uid(r#"{"metadata":{"name":"a","namespace":"b"}}"#).unwrap_err();
        assert!(err.to_string().contains("b/a has no metadata.uid"), "{err}");
        assert!(PodMeta::parse_with_uid(r#"{"metadata":{"uid":"u"},"spec":[]}"#).is_ok(), "the spec is skipped");
    }
}
