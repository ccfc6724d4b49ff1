//! What 1.35 reads of a pod that `podstatus_core::PodView` does not: the pod's
//! `metadata.generation` (observedGeneration, KEP-5067), each container's restart
//! policy and rules (sidecars, KEP-753; container restart rules, KEP-5307) and the
//! readiness gates.

use podstatus_core::JsonError;
use serde::Deserialize;

/// The restart policy that makes an init container a sidecar (a restartable init
/// container), and lets a pod's containers run again.
pub const RESTART_ALWAYS: &str = "Always";

/// The parts of a pod 1.35's status manager reads beyond `PodView`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodSpec135 {
    /// `metadata.generation` (0 when absent, as Go's zero value).
    pub generation: i64,
    /// `spec.initContainers`, in order.
    pub init_containers: Vec<InitContainer>,
    /// `spec.containers`' restart policies and rules, in order.
    pub containers: Vec<ContainerRestart>,
    /// The condition types of `spec.readinessGates`.
    pub readiness_gates: Vec<String>,
}

/// One init container of the spec.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InitContainer {
    /// Its name.
    pub name: String,
    /// `IsRestartableInitContainer`: its own restart policy is `Always` (a sidecar).
    pub restartable: bool,
    /// Its restart policy and rules.
    pub restart: ContainerRestart,
}

/// A container's own restart policy and rules (`restartPolicy`, `restartPolicyRules`;
/// KEP-5307's container restart rules, the `ContainerRestartRules` gate, beta and on
/// since 1.35).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerRestart {
    /// The container's name.
    pub name: String,
    /// `restartPolicy` (`Always`, `OnFailure`, `Never`), when set.
    pub policy: Option<String>,
    /// `restartPolicyRules`, in order.
    pub rules: Vec<RestartRule>,
}

/// One of a container's `restartPolicyRules`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestartRule {
    /// `action`: `Restart`, `RestartAllContainers`.
    pub action: String,
    /// `exitCodes`: the operator (`In`, `NotIn`) and the values; a rule without it
    /// never matches.
    pub exit_codes: Option<(String, Vec<i32>)>,
}

impl RestartRule {
    /// `FindMatchingContainerRestartRule`'s test of one rule: its exit codes hold
    /// `exit_code` (`In`) or do not (`NotIn`); any other operator matches nothing.
    pub fn matches(&self, exit_code: i32) -> bool {
        let Some((operator, values)) = &self.exit_codes else {
            return false;
        };
        let listed = values.contains(&exit_code);
        match operator.as_str() {
            "In" => listed,
            "NotIn" => !listed,
            _ => false,
        }
    }
}

impl PodSpec135 {
    /// Reads `pod_json`'s generation, init containers and readiness gates; `null`
    /// reads as Go's zero value, as it decodes.
    pub fn parse(pod_json: &str) -> Result<PodSpec135, JsonError> {
        #[derive(Default, Deserialize)]
        #[serde(default)]
        struct Pod {
            metadata: Option<Meta>,
            spec: Option<Spec>,
        }
        #[derive(Default, Deserialize)]
        #[serde(default)]
        struct Meta {
            generation: Option<i64>,
        }
        #[derive(Default, Deserialize)]
        #[serde(default, rename_all = "camelCase")]
        struct Spec {
            init_containers: Option<Vec<Container>>,
            containers: Option<Vec<Container>>,
            readiness_gates: Option<Vec<Gate>>,
        }
        #[derive(Default, Deserialize)]
        #[serde(default, rename_all = "camelCase")]
        struct Container {
            name: Option<String>,
            restart_policy: Option<String>,
            restart_policy_rules: Option<Vec<Rule>>,
        }
        #[derive(Default, Deserialize)]
        #[serde(default, rename_all = "camelCase")]
        struct Rule {
            action: Option<String>,
            exit_codes: Option<ExitCodes>,
        }
        #[derive(Default, Deserialize)]
        #[serde(default)]
        struct ExitCodes {
            operator: Option<String>,
            values: Option<Vec<i32>>,
        }
        #[derive(Default, Deserialize)]
        #[serde(default, rename_all = "camelCase")]
        struct Gate {
            condition_type: Option<String>,
        }
        let pod: Pod = serde_json::from_str(pod_json).map_err(|e| JsonError::new(format!("pod: {e}")))?;
        let spec = pod.spec.unwrap_or_default();
        let restart = |c: Container| ContainerRestart {
            name: c.name.unwrap_or_default(),
            policy: c.restart_policy,
            rules: (c.restart_policy_rules.unwrap_or_default().into_iter())
                .map(|r| RestartRule {
                    action: r.action.unwrap_or_default(),
                    exit_codes: r.exit_codes.map(|e| (e.operator.unwrap_or_default(), e.values.unwrap_or_default())),
                })
                .collect(),
        };
        Ok(PodSpec135 {
            generation: pod.metadata.and_then(|m| m.generation).unwrap_or(0),
            init_containers: spec
                .init_containers
                .unwrap_or_default()
                .into_iter()
                .map(|c| {
                    let restart = restart(c);
                    InitContainer {
                        name: restart.name.clone(),
                        restartable: restart.policy.as_deref() == Some(RESTART_ALWAYS),
                        restart,
                    }
                })
                .collect(),
            containers: spec.containers.unwrap_or_default().into_iter().map(restart).collect(),
            readiness_gates: spec
                .readiness_gates
                .unwrap_or_default()
                .into_iter()
                .map(|g| g.condition_type.unwrap_or_default())
                .collect(),
        })
    }

    /// `GetPodObservedGenerationIfEnabledOnCondition` with `PodObservedGenerationTracking`
    /// on (the 1.35 default): the pod's generation, absent when 0 as Go's `omitempty`
    /// writes it. Also `CalculatePodStatusObservedGeneration` for the status.
    pub fn observed_generation(&self) -> Option<i64> {
        (self.generation != 0).then_some(self.generation)
    }

    /// `GetContainerByIndex` over the init containers: the init container at `index`
    /// when both the spec and `status_names` have one there and the names agree.
    pub fn init_container_at(&self, status_names: &[&str], index: usize) -> Option<&InitContainer> {
        let container = self.init_containers.get(index)?;
        (status_names.get(index) == Some(&container.name.as_str())).then_some(container)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_generation_sidecars_and_gates() {
        let pod = r#"{"metadata": {"generation": 3}, "spec": {
            "initContainers": [{"name": "init"}, {"name": "proxy", "restartPolicy": "Always"}],
            "readinessGates": [{"conditionType": "lb"}]}}"#;
        let spec = PodSpec135::parse(pod).unwrap();
        assert_eq!(spec.generation, 3);
        assert_eq!(spec.observed_generation(), Some(3));
        let restartable: Vec<bool> = spec.init_containers.iter().map(|c| c.restartable).collect();
        assert_eq!(restartable, [false, true]);
        assert_eq!(spec.readiness_gates, ["lb"]);
    }

    #[test]
    fn reads_container_restart_policies_and_rules() {
        let pod = r#"{"spec": {"containers": [{"name": "app", "restartPolicy": "Never", "restartPolicyRules": [
            {"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}},
            {"action": "RestartAllContainers", "exitCodes": {"operator": "NotIn", "values": [0, 1]}},
            {"action": "Restart"}]}]}}"#;
        let spec = PodSpec135::parse(pod).unwrap();
        let app = &spec.containers[0];
        assert_eq!((app.name.as_str(), app.policy.as_deref()), ("app", Some("Never")));
        let matched = |code: i32| app.rules.iter().find(|r| r.matches(code)).map(|r| r.action.as_str());
        assert_eq!(matched(42), Some("Restart"));
        assert_eq!(matched(7), Some("RestartAllContainers"));
        assert_eq!(matched(1), None, "a rule without exit codes matches nothing");
    }

    #[test]
    fn absent_or_null_parts_are_go_zero_values() {
        let spec = PodSpec135::parse(r#"{"metadata": {"generation": null}, "spec": null}"#).unwrap();
        assert_eq!(spec, PodSpec135::default());
        assert_eq!(spec.observed_generation(), None, "generation 0 is omitted");
        assert!(PodSpec135::parse(r#"{"metadata": {"generation": "x"}}"#).is_err());
    }

    #[test]
    fn an_init_container_is_found_by_index_only_where_the_names_agree() {
        let spec = PodSpec135::parse(r#"{"spec": {"initContainers": [{"name": "a"}, {"name": "b"}]}}"#).unwrap();
        assert_eq!(spec.init_container_at(&["a", "b"], 1).map(|c| c.name.as_str()), Some("b"));
        assert!(spec.init_container_at(&["b", "a"], 0).is_none());
        assert!(spec.init_container_at(&["a"], 1).is_none());
        assert!(spec.init_container_at(&["a", "b", "c"], 2).is_none());
    }
}
