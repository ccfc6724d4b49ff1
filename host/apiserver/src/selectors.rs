//! Field and label selectors of list and watch requests (`fieldSelector=`,
//! `labelSelector=`), with Kubernetes' syntax and the pod fields it allows.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use podstatus_backends::{CompactPod, CompactPodError, PodField as Field};

/// Both selectors of a request; a pod is selected when it matches both.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Selector {
    fields: Vec<FieldRequirement>,
    labels: Vec<LabelRequirement>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct FieldRequirement {
    field: PodField,
    value: String,
    equal: bool,
}

/// The pod fields Kubernetes lets a field selector name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PodField {
    Name,
    Namespace,
    NodeName,
    RestartPolicy,
    SchedulerName,
    ServiceAccountName,
    HostNetwork,
    Phase,
    PodIp,
    NominatedNodeName,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum LabelRequirement {
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

/// Why a selector does not parse. Display is the message of the 400 the client gets,
/// worded as kube-apiserver words it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SelectorError {
    /// A field selector term that is none of `f=v`, `f==v`, `f!=v`.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    FieldTerm {
        /// The whole field selector.
        selector: String,
        /// The term at fault.
        term: String,
    },
    /// A field the selector may not name (for pods, one outside Kubernetes' pod field
    /// set; for other kinds, anything but `metadata.name` and `metadata.namespace`).
    #[error("field label not supported: {0}")]
    UnsupportedField(String),
    /// A label selector with a `)` that closes nothing.
    #[error("unbalanced ')' in selector '{0}'")]
    UnopenedParenthesis(String),
    /// A label selector with a `(` never closed.
    #[error("unbalanced '(' in selector '{0}'")]
    UnclosedParenthesis(String),
    /// A label selector term that is not a requirement (`k`, `!k`, `k=v`, `k==v`,
    /// `k!=v`, `k in (..)`, `k notin (..)`), or has a key or value that is not a label's.
    #[error("unable to parse requirement: invalid selector '{selector}': can't understand '{term}'")]
    LabelTerm {
        /// The whole label selector.
        selector: String,
        /// The term at fault.
        term: String,
    },
}

impl Selector {
    /// Parses the two query values (absent or empty: no requirement); the error says
    /// what is wrong, for a 400.
    pub fn parse(field_selector: Option<&str>, label_selector: Option<&str>) -> Result<Self, SelectorError> {
        let fields = match field_selector {
            Some(text) => parse_fields(text)?,
            None => Vec::new(),
        };
        let labels = match label_selector {
            Some(text) => parse_labels(text)?,
            None => Vec::new(),
        };
        Ok(Self { fields, labels })
    }

    /// Whether it selects everything (no requirement).
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty() && self.labels.is_empty()
    }

    /// The one node whose pods alone it can select (`spec.nodeName=NODE`, a kubelet's
    /// watch), if it names one: a watch hub hands such a watch only its node's changes,
    /// as kube-apiserver's watch cache triggers a watch by its `spec.nodeName` index.
    pub fn node_name(&self) -> Option<&str> {
        self.fields
            .iter()
            .find(|requirement| requirement.field == PodField::NodeName && requirement.equal)
            .map(|requirement| requirement.value.as_str())
    }

    /// Whether `pod` is selected. Its labels are parsed only for a label selector.
    pub fn matches(&self, pod: &CompactPod) -> bool {
        self.fields
            .iter()
            .all(|requirement| (field_value(pod, requirement.field) == requirement.value) == requirement.equal)
            && (self.labels.is_empty() || {
                let labels = pod.labels();
                self.labels.iter().all(|requirement| requirement.matches(labels.as_ref()))
            })
    }
}

impl Selector {
    /// Selectors for a kind other than pods: only `metadata.name` and
    /// `metadata.namespace` may be named by a field selector (what kube-apiserver
    /// allows for every kind).
    pub fn parse_metadata(field_selector: Option<&str>, label_selector: Option<&str>) -> Result<Self, SelectorError> {
        let selector = Self::parse(field_selector, label_selector)?;
        match selector
            .fields
            .iter()
            .find(|requirement| !matches!(requirement.field, PodField::Name | PodField::Namespace))
        {
            Some(requirement) => Err(SelectorError::UnsupportedField(format!("{:?}", requirement.field))),
            None => Ok(selector),
        }
    }

    /// Whether a JSON object (a node, a lease) is selected, by its name, namespace and
    /// labels.
    pub fn matches_object(&self, object: &serde_json::Value) -> bool {
        let text = |field: &str| object["metadata"][field].as_str().unwrap_or_default();
        let labels: Option<BTreeMap<String, String>> =
            object["metadata"].get("labels").and_then(|labels| serde_json::from_value(labels.clone()).ok());
        self.fields.iter().all(|requirement| {
            let value = if requirement.field == PodField::Name { text("name") } else { text("namespace") };
            (value == requirement.value) == requirement.equal
        }) && self.labels.iter().all(|requirement| requirement.matches(labels.as_ref()))
    }
}

fn parse_fields(text: &str) -> Result<Vec<FieldRequirement>, SelectorError> {
    let mut requirements = Vec::new();
    for term in text.split(',').map(str::trim).filter(|term| !term.is_empty()) {
        let (field, value, equal) = if let Some((field, value)) = term.split_once("!=") {
            (field, value, false)
        } else if let Some((field, value)) = term.split_once("==") {
            (field, value, true)
        } else if let Some((field, value)) = term.split_once('=') {
            (field, value, true)
        } else {
            return Err(SelectorError::FieldTerm { selector: text.to_owned(), term: term.to_owned() });
        };
        let field = match field.trim() {
            "metadata.name" => PodField::Name,
            "metadata.namespace" => PodField::Namespace,
            "spec.nodeName" => PodField::NodeName,
            "spec.restartPolicy" => PodField::RestartPolicy,
            "spec.schedulerName" => PodField::SchedulerName,
            "spec.serviceAccountName" => PodField::ServiceAccountName,
            "spec.hostNetwork" => PodField::HostNetwork,
            "status.phase" => PodField::Phase,
            "status.podIP" => PodField::PodIp,
            "status.nominatedNodeName" => PodField::NominatedNodeName,
            other => return Err(SelectorError::UnsupportedField(other.to_owned())),
        };
        requirements.push(FieldRequirement { field, value: value.trim().to_owned(), equal });
    }
    Ok(requirements)
}

/// What a selector can see of `pod`, and nothing else: every field [`field_value`]
/// reads, the namespace and the labels. A watch keeps each change's previous pod only to
/// tell whether it matched; the whole object would keep a second copy of every pod the
/// history holds a change of (at 100,000 pods, hundreds of MiB).
pub(crate) fn selectable_part(pod: &CompactPod) -> Result<CompactPod, CompactPodError> {
    let text = |field: Field| pod.field(field).map(str::to_owned);
    let spec = PodSpec {
        node_name: text(Field::NodeName),
        restart_policy: text(Field::RestartPolicy),
        scheduler_name: text(Field::SchedulerName),
        service_account_name: text(Field::ServiceAccountName),
        host_network: pod.host_network(),
        ..PodSpec::default()
    };
    let status = PodStatus {
        phase: text(Field::Phase),
        pod_ip: text(Field::PodIp),
        nominated_node_name: text(Field::NominatedNodeName),
        ..PodStatus::default()
    };
    let metadata = ObjectMeta {
        name: text(Field::Name),
        namespace: text(Field::Namespace),
        labels: pod.labels(),
        ..ObjectMeta::default()
    };
    CompactPod::from_pod(&Pod { metadata, spec: Some(spec), status: Some(status) })
}

/// The field's value as Kubernetes' pod field set gives it (absent is "").
fn field_value(pod: &CompactPod, field: PodField) -> String {
    let text = |field: Field| pod.field(field).unwrap_or_default().to_owned();
    match field {
        PodField::Name => text(Field::Name),
        PodField::Namespace => text(Field::Namespace),
        PodField::NodeName => text(Field::NodeName),
        PodField::RestartPolicy => text(Field::RestartPolicy),
        PodField::SchedulerName => text(Field::SchedulerName),
        PodField::ServiceAccountName => text(Field::ServiceAccountName),
        PodField::HostNetwork => pod.host_network().unwrap_or(false).to_string(),
        PodField::Phase => text(Field::Phase),
        PodField::PodIp => text(Field::PodIp),
        PodField::NominatedNodeName => text(Field::NominatedNodeName),
    }
}

impl LabelRequirement {
    fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        let get = |key: &str| labels.and_then(|labels| labels.get(key));
        match self {
            Self::Exists(key) => get(key).is_some(),
            Self::NotExists(key) => get(key).is_none(),
            Self::In(key, values) => get(key).is_some_and(|value| values.contains(value)),
            Self::NotIn(key, values) => get(key).is_none_or(|value| !values.contains(value)),
        }
    }
}

/// Splits at the commas that are not inside a `( ... )` value set.
fn top_level_terms(text: &str) -> Result<Vec<&str>, SelectorError> {
    let (mut terms, mut depth, mut start) = (Vec::new(), 0usize, 0usize);
    for (at, character) in text.char_indices() {
        match character {
            '(' => depth += 1,
            ')' => depth = depth.checked_sub(1).ok_or_else(|| SelectorError::UnopenedParenthesis(text.to_owned()))?,
            ',' if depth == 0 => {
                terms.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(SelectorError::UnclosedParenthesis(text.to_owned()));
    }
    terms.push(&text[start..]);
    Ok(terms.into_iter().map(str::trim).filter(|term| !term.is_empty()).collect())
}

fn parse_labels(text: &str) -> Result<Vec<LabelRequirement>, SelectorError> {
    top_level_terms(text)?.into_iter().map(|term| parse_label_term(text, term)).collect()
}

fn parse_label_term(text: &str, term: &str) -> Result<LabelRequirement, SelectorError> {
    let invalid = || SelectorError::LabelTerm { selector: text.to_owned(), term: term.to_owned() };
    let key = |key: &str| {
        let key = key.trim();
        let valid =
            !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
        if valid { Ok(key.to_owned()) } else { Err(invalid()) }
    };
    let value = |value: &str| {
        let value = value.trim();
        let valid = value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if valid { Ok(value.to_owned()) } else { Err(invalid()) }
    };
    if let Some(rest) = term.strip_prefix('!') {
        return Ok(LabelRequirement::NotExists(key(rest)?));
    }
    if let Some((k, v)) = term.split_once("!=") {
        return Ok(LabelRequirement::NotIn(key(k)?, vec![value(v)?]));
    }
    if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
        return Ok(LabelRequirement::In(key(k)?, vec![value(v)?]));
    }
    if let Some(open) = term.find('(') {
        let (head, set) = term.split_at(open);
        let set = set.strip_prefix('(').and_then(|set| set.strip_suffix(')')).ok_or_else(invalid)?;
        let values = set.split(',').map(value).collect::<Result<Vec<_>, _>>()?;
        let mut words = head.split_whitespace();
        let (Some(k), Some(operator), None) = (words.next(), words.next(), words.next()) else {
            return Err(invalid());
        };
        return match operator {
            "in" => Ok(LabelRequirement::In(key(k)?, values)),
            "notin" => Ok(LabelRequirement::NotIn(key(k)?, values)),
            _ => Err(invalid()),
        };
    }
    Ok(LabelRequirement::Exists(key(term)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use podstatus_backends::testing;

    fn pod(name: &str, node: &str, labels: &[(&str, &str)]) -> Pod {
        testing::pod(name, name).node(node).labels(labels).build()
    }

    fn selects(fields: Option<&str>, labels: Option<&str>, pod: &Pod) -> bool {
        compact_selects(fields, labels, &CompactPod::from_pod(pod).expect("compact"))
    }

    fn compact_selects(fields: Option<&str>, labels: Option<&str>, pod: &CompactPod) -> bool {
        Selector::parse(fields, labels).expect("parses").matches(pod)
    }

    #[test]
    fn field_selectors() {
        let a = pod("a", "node-1", &[]);
        assert!(selects(Some("spec.nodeName=node-1"), None, &a));
        assert!(selects(Some("spec.nodeName==node-1,metadata.name=a"), None, &a));
        assert!(!selects(Some("spec.nodeName!=node-1"), None, &a));
        assert!(selects(Some("metadata.namespace=ns,status.phase="), None, &a));
        assert!(!selects(Some("metadata.name=b"), None, &a));
        assert_eq!(
            Selector::parse(Some("spec.image=x"), None),
            Err(SelectorError::UnsupportedField("spec.image".into()))
        );
        assert!(Selector::parse(Some("spec.nodeName"), None).is_err());
    }

    #[test]
    fn a_selector_names_its_node_only_when_it_asks_for_that_nodes_pods() {
        let node = |fields| Selector::parse(Some(fields), None).expect("parses").node_name().map(str::to_owned);
        assert_eq!(node("spec.nodeName=node-1").as_deref(), Some("node-1"));
        assert_eq!(node("metadata.name=a,spec.nodeName==node-2").as_deref(), Some("node-2"));
        assert_eq!(node("spec.nodeName!=node-1"), None, "every other node's pods");
        assert_eq!(node("metadata.name=a"), None);
        assert_eq!(Selector::default().node_name(), None);
    }

    #[test]
    fn a_pods_selectable_part_is_selected_as_the_pod_is() {
        let mut full = pod("a", "node-1", &[("app", "web")]);
        let spec = full.spec.get_or_insert_default();
        spec.restart_policy = Some("Never".into());
        spec.scheduler_name = Some("default-scheduler".into());
        spec.service_account_name = Some("sa".into());
        spec.host_network = Some(true);
        let status = full.status.get_or_insert_default();
        status.phase = Some("Running".into());
        status.pod_ip = Some("10.0.0.1".into());
        status.nominated_node_name = Some("node-2".into());
        let compact = CompactPod::from_pod(&full).expect("compact");
        let part = selectable_part(&compact).expect("a part");
        let fields = [
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ];
        for field in fields {
            let value = field_value(
                &compact,
                Selector::parse(Some(&format!("{field}=x")), None).expect("parses").fields[0].field,
            );
            assert!(!value.is_empty() || field == "metadata.namespace", "{field} is set in the test pod");
            for selector in [format!("{field}={value}"), format!("{field}!={value}"), format!("{field}=other")] {
                assert_eq!(
                    compact_selects(Some(&selector), None, &part),
                    selects(Some(&selector), None, &full),
                    "{selector}"
                );
            }
        }
        for labels in ["app=web", "app!=web", "app", "!app", "app in (web,db)"] {
            assert_eq!(compact_selects(None, Some(labels), &part), selects(None, Some(labels), &full), "{labels}");
        }
        let spec = part.pod().expect("parses").spec.expect("a spec");
        assert!(spec.containers.is_empty(), "the containers are not kept");
    }

    #[test]
    fn label_selectors() {
        let a = pod("a", "n", &[("app", "web"), ("tier", "front")]);
        for (selector, expected) in [
            ("app=web", true),
            ("app==web,tier=front", true),
            ("app!=web", false),
            ("team!=x", true),
            ("app in (web, db)", true),
            ("app notin (web,db)", false),
            ("team notin (x)", true),
            ("app", true),
            ("!app", false),
            ("!team", true),
            ("app in (db),tier", false),
            ("", true),
        ] {
            assert_eq!(selects(None, Some(selector), &a), expected, "{selector}");
        }
        for bad in ["app in (web", "app ~ web", "a b", "app=(x)"] {
            assert!(Selector::parse(None, Some(bad)).is_err(), "{bad}");
        }
    }

    /// The messages are the 400s' bodies: worded as before the errors were typed.
    #[test]
    fn messages_are_the_bad_requests() {
        let message =
            |fields: Option<&str>, labels: Option<&str>| Selector::parse(fields, labels).unwrap_err().to_string();
        assert_eq!(
            message(Some("metadata.name=a,spec.nodeName"), None),
            "invalid selector: 'metadata.name=a,spec.nodeName'; can't understand 'spec.nodeName'"
        );
        assert_eq!(message(Some("spec.image=x"), None), "field label not supported: spec.image");
        assert_eq!(message(None, Some("a)")), "unbalanced ')' in selector 'a)'");
        assert_eq!(message(None, Some("a in (b")), "unbalanced '(' in selector 'a in (b'");
        assert_eq!(
            message(None, Some("app ~ web,x")),
            "unable to parse requirement: invalid selector 'app ~ web,x': can't understand 'app ~ web'"
        );
        let other_kind = Selector::parse_metadata(Some("spec.nodeName=n"), None).unwrap_err();
        assert_eq!(other_kind.to_string(), "field label not supported: NodeName");
    }
}
