//! What kube-apiserver refuses and this server refuses with it, as `422 Invalid` with
//! `details.causes` (or `413` for size): names and namespaces that are not DNS-1123,
//! a `spec.nodeName` changed once set, an update without a spec, an object larger
//! than etcd stores.
//!
//! Applied to what clients send over HTTP only: the store itself (replay, the agent's
//! own store) keeps objects as it is given them.

use std::io;

use k8s_openapi::api::core::v1::{Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

use crate::excerpt::excerpt;
use crate::status_body::{Cause, Failure};

/// Kubernetes' `DNS1123SubdomainMaxLength`.
const SUBDOMAIN_MAX: usize = 253;
/// Kubernetes' `DNS1123LabelMaxLength`.
const LABEL_MAX: usize = 63;
/// Kubernetes' generated names: the prefix is cut to leave room for the 5 random
/// characters within a label's 63.
pub(crate) const GENERATE_NAME_PREFIX_MAX: usize = LABEL_MAX - 5;

const SUBDOMAIN_MESSAGE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
     '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for \
     validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MESSAGE: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', \
     and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for \
     validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// Why `name` is not a DNS-1123 subdomain (a pod's or a node's name), if it is not: in
/// kube-apiserver's words.
pub fn subdomain_problems(name: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if name.len() > SUBDOMAIN_MAX {
        problems.push(format!("must be no more than {SUBDOMAIN_MAX} characters"));
    }
    if !name.split('.').all(is_label) {
        problems.push(SUBDOMAIN_MESSAGE.to_owned());
    }
    problems
}

/// Why `namespace` is not a DNS-1123 label, if it is not.
pub(crate) fn label_problems(namespace: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if namespace.len() > LABEL_MAX {
        problems.push(format!("must be no more than {LABEL_MAX} characters"));
    }
    if !is_label(namespace) {
        problems.push(LABEL_MESSAGE.to_owned());
    }
    problems
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn is_label(text: &str) -> bool {
    let bytes = text.as_bytes();
    let alphanumeric = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            alphanumeric(first) && alphanumeric(last) && bytes.iter().all(|b| alphanumeric(b) || *b == b'-')
        }
        _ => false,
    }
}

/// The causes of a new pod's name and namespace (empty: valid).
pub(crate) fn metadata_causes(metadata: &ObjectMeta) -> Vec<Cause> {
    let mut causes = Vec::new();
    match metadata.name.as_deref() {
        None | Some("") => causes.push(Cause::required_because("metadata.name", "name or generateName is required")),
        Some(name) => {
            causes.extend(subdomain_problems(name).iter().map(|p| Cause::invalid("metadata.name", name, p)));
        }
    }
    match metadata.namespace.as_deref() {
        None | Some("") => causes.push(Cause::required("metadata.namespace")),
        Some(namespace) => {
            causes.extend(label_problems(namespace).iter().map(|p| Cause::invalid("metadata.namespace", namespace, p)))
        }
    }
    causes
}

const LABEL_VALUE_MESSAGE: &str = "a valid label must be an empty string or consist of alphanumeric characters, \
     '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or \
     '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const NAME_PART_MESSAGE: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must \
     start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for \
     validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, at most 63 bytes: a label value (when
/// not empty) and a label key's name part.
fn label_word_problems(word: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if word.len() > LABEL_MAX {
        problems.push(format!("must be no more than {LABEL_MAX} bytes"));
    }
    let bytes = word.as_bytes();
    let inner = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    let valid = match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric() && bytes.iter().all(inner)
        }
        _ => false,
    };
    if !valid {
        problems.push(String::new());
    }
    problems
}

/// The labels' keys (qualified names: an optional DNS-1123 prefix and `/`) and values,
/// as kube-apiserver's `ValidateLabels` words what is wrong with them.
fn label_causes(metadata: &ObjectMeta) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (key, value) in metadata.labels.iter().flatten() {
        let (prefix, name) = key.rsplit_once('/').map_or((None, key.as_str()), |(prefix, name)| (Some(prefix), name));
        if let Some(prefix) = prefix {
            causes.extend(
                subdomain_problems(prefix)
                    .iter()
                    .map(|p| Cause::invalid("metadata.labels", key, &format!("prefix part {p}"))),
            );
        }
        causes.extend(
            label_word_problems(name)
                .into_iter()
                .map(|p| Cause::invalid("metadata.labels", key, if p.is_empty() { NAME_PART_MESSAGE } else { &p })),
        );
        if !value.is_empty() {
            causes.extend(label_word_problems(value).into_iter().map(|p| {
                Cause::invalid("metadata.labels", value, if p.is_empty() { LABEL_VALUE_MESSAGE } else { &p })
            }));
        }
    }
    causes
}

/// Kubernetes' `TotalAnnotationSizeLimitB`: the keys and values of an object's
/// annotations, together.
const ANNOTATIONS_MAX: usize = 256 << 10;

/// Annotations over [`ANNOTATIONS_MAX`], as kube-apiserver refuses them.
fn annotation_causes(metadata: &ObjectMeta) -> Vec<Cause> {
    let size: usize = metadata.annotations.iter().flatten().map(|(key, value)| key.len() + value.len()).sum();
    if size > ANNOTATIONS_MAX { vec![Cause::too_long("metadata.annotations", ANNOTATIONS_MAX)] } else { Vec::new() }
}

/// A new pod (POST) as kube-apiserver validates its metadata: name, namespace, labels,
/// the annotations' size (not its spec: see docs/agent-and-deploy.md, "The embedded
/// server beside kube-apiserver").
pub(crate) fn check_new(pod: &Pod) -> Result<(), Failure> {
    let mut causes = metadata_causes(&pod.metadata);
    causes.extend(label_causes(&pod.metadata));
    causes.extend(annotation_causes(&pod.metadata));
    if causes.is_empty() { Ok(()) } else { Err(Failure::invalid(pod.metadata.name.as_deref().unwrap_or(""), causes)) }
}

/// An update of the pod (PUT or PATCH of the main resource): the spec must stay, and
/// `spec.nodeName` cannot change once set (kube-apiserver's `ValidatePodUpdate`
/// allows only a few spec fields to change; binding is a one-way step).
pub(crate) fn check_update(stored: &Pod, updated: &Pod) -> Result<(), Failure> {
    let name = stored.metadata.name.as_deref().unwrap_or_default();
    let mut causes = label_causes(&updated.metadata);
    causes.extend(annotation_causes(&updated.metadata));
    let stored_node = node_name(stored.spec.as_ref());
    match &updated.spec {
        None if stored.spec.is_some() => causes.push(Cause::required("spec")),
        _ => {}
    }
    if let Some(node) = stored_node
        && updated.spec.is_some()
        && node_name(updated.spec.as_ref()) != Some(node)
    {
        let new = node_name(updated.spec.as_ref()).unwrap_or_default();
        causes.push(Cause::invalid("spec.nodeName", new, "field is immutable"));
    }
    if causes.is_empty() { Ok(()) } else { Err(Failure::invalid(name, causes)) }
}

fn node_name(spec: Option<&PodSpec>) -> Option<&str> {
    spec.and_then(|spec| spec.node_name.as_deref()).filter(|node| !node.is_empty())
}

/// The pod as serialized, borrowed: its size without building it.
#[derive(Serialize)]
struct PodParts<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    metadata: &'a ObjectMeta,
    #[serde(skip_serializing_if = "Option::is_none")]
    spec: Option<&'a PodSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a PodStatus>,
}

/// Counts bytes written, keeps none.
struct Counter(usize);

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The JSON size of a pod made of these parts (linear, allocates nothing).
pub(crate) fn encoded_size(metadata: &ObjectMeta, spec: Option<&PodSpec>, status: Option<&PodStatus>) -> usize {
    let mut counter = Counter(0);
    let parts = PodParts { api_version: "v1", kind: "Pod", metadata, spec, status };
    match serde_json::to_writer(&mut counter, &parts) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    }
}

/// The JSON size of a status (linear, allocates nothing).
pub(crate) fn encoded_len(status: &PodStatus) -> usize {
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, status) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    }
}

/// 413 when the pod `name`, of `size` bytes, is over `limit`.
pub(crate) fn check_size_of(name: &str, size: usize, limit: usize) -> Result<(), Failure> {
    if size > limit {
        return Err(Failure::object_too_large(&excerpt(name), size, limit));
    }
    Ok(())
}

/// 413 when a pod of these parts is over `limit` bytes.
pub(crate) fn check_size(
    metadata: &ObjectMeta,
    spec: Option<&PodSpec>,
    status: Option<&PodStatus>,
    limit: usize,
) -> Result<(), Failure> {
    check_size_of(metadata.name.as_deref().unwrap_or_default(), encoded_size(metadata, spec, status), limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_dns_1123() {
        for good in ["a", "web-1", "a.b", "0", &"a".repeat(253)] {
            assert!(subdomain_problems(good).is_empty(), "{good}");
        }
        for bad in ["", "a/b", "..", ".", "x?y", "UPPER", &"a".repeat(254), "a\nb", "é", "-a", "a-", "a..b", "a%2Fb"] {
            assert!(!subdomain_problems(bad).is_empty(), "{bad:?}");
        }
        assert!(label_problems("kube-system").is_empty());
        for bad in ["a.b", "", "A", &"n".repeat(64)] {
            assert!(!label_problems(bad).is_empty(), "{bad}");
        }
        assert_eq!(subdomain_problems(&"a".repeat(300)), ["must be no more than 253 characters"]);
    }

    #[test]
    fn labels_and_annotations_are_checked_as_kube_apiserver_checks_them() {
        let metadata = |labels: &[(&str, &str)], annotation: usize| ObjectMeta {
            labels: Some(labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()),
            annotations: Some([("a".to_owned(), "x".repeat(annotation))].into()),
            ..ObjectMeta::default()
        };
        let good = metadata(&[("app", "web"), ("example.com/tier", ""), ("a_b.c", "X-1")], ANNOTATIONS_MAX - 1);
        assert_eq!(label_causes(&good), []);
        assert_eq!(annotation_causes(&good), []);
        let long = "v".repeat(64);
        let causes = label_causes(&metadata(&[("app", &long)], 0));
        assert_eq!(causes, [Cause::invalid("metadata.labels", &long, "must be no more than 63 bytes")]);
        for (key, value) in [("a b", "x"), ("-a", "x"), ("Bad_/x", "x"), ("app", "a b"), ("app", "-x")] {
            assert_eq!(label_causes(&metadata(&[(key, value)], 0)).len(), 1, "{key:?}: {value:?}");
        }
        let too_many = annotation_causes(&metadata(&[], ANNOTATIONS_MAX));
        assert_eq!(too_many, [Cause::too_long("metadata.annotations", ANNOTATIONS_MAX)]);
    }

    #[test]
    fn size_is_the_serialized_length() {
        let metadata = ObjectMeta { name: Some("a".into()), ..ObjectMeta::default() };
        let pod = Pod { metadata: metadata.clone(), ..Pod::default() };
        let text = serde_json::to_vec(&pod).expect("JSON");
        assert_eq!(encoded_size(&metadata, None, None), text.len());
        assert!(check_size(&metadata, None, None, text.len()).is_ok());
        assert_eq!(check_size(&metadata, None, None, text.len() - 1).map_err(|f| f.code), Err(413));
    }
}
