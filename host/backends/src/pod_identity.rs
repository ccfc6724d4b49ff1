//! Static and mirror pods, told apart by their annotations (see
//! `shared/reference/helpers.md`, "Pod identity").

use k8s_openapi::api::core::v1::Pod;

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
}
