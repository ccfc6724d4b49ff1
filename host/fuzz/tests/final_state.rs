//! The final-state differential (`fuzz --final-state`) on hand-made traces, with the
//! native logic v3 against v2: it finds a difference that exists and accepts the one
//! a write without a GET cannot avoid.

use podstatus_fuzz::{Differential, FinalRules, Invariant, Target, compare_targets_with};
use podstatus_plugins::LogicVersion;
use podstatus_replay::Trace;
use serde_json::json;

const V3: Target = Target::Native(LogicVersion::V3);
const V2: Target = Target::Native(LogicVersion::V2);

/// A pod whose API server copy carries a kubelet condition (Initialized) that the pod
/// manager's copy lacks; the kubelet then reports a status without it. v2 GETs, sees
/// the condition and its patch removes it; v3 patches from the pod manager's copy,
/// which does not have it, so it stays.
fn stale_copy_trace() -> Trace {
    let pod = json!({"metadata": {"name": "cache-1", "namespace": "kube-system", "uid": "u-1"},
                     "spec": {"containers": [{"name": "sidecar"}]}});
    let mut in_api = pod.clone();
    in_api["status"] = json!({"conditions": [{"type": "Initialized", "status": "True"}]});
    Trace::from_value(json!({
        "apiserver": [in_api],
        "pod_manager": [pod],
        "steps": [{"op": "set-pod-status", "pod": "u-1", "status": {}}],
    }))
    .expect("a valid trace")
}

fn check(trace: &Trace, rules: FinalRules) -> Option<podstatus_fuzz::Violation> {
    compare_targets_with(trace, &V3, &V2, Differential::FinalState(rules)).expect("the trace runs").violation
}

#[test]
fn a_difference_in_what_the_two_leave_behind_is_found() {
    let violation = check(&stale_copy_trace(), FinalRules::Equal).expect("the API servers differ");
    assert_eq!(violation.invariant, Invariant::SameFinalState);
    assert!(violation.message.contains("apiserver[kube-system/cache-1].status.conditions"), "{violation}");
}

#[test]
fn the_stale_copy_class_is_accepted_for_v3_against_v2() {
    assert_eq!(check(&stale_copy_trace(), FinalRules::UnreadWrites), None);
}

#[test]
fn a_difference_the_copies_do_not_explain_is_not_accepted() {
    // Copies that agree with the API server, which holds a condition a controller owns:
    // v3 and v2 keep it, v1's PUT of its own status drops it. That difference is the
    // logic's, not a stale copy's, so it is found under the v3-against-v2 rules too.
    let pod = json!({"metadata": {"name": "web-1", "namespace": "default", "uid": "u-2"},
                     "spec": {"containers": [{"name": "app"}]},
                     "status": {"conditions": [{"type": "example.com/gate", "status": "True"}]}});
    let trace = Trace::from_value(json!({
        "apiserver": [pod.clone()],
        "pod_manager": [pod],
        "steps": [{"op": "set-pod-status", "pod": "u-2", "status": {"phase": "Running"}}],
    }))
    .expect("a valid trace");
    assert_eq!(check(&trace, FinalRules::UnreadWrites), None);
    let v1 = Target::Native(LogicVersion::V1);
    let differs = compare_targets_with(&trace, &v1, &V2, Differential::FinalState(FinalRules::UnreadWrites))
        .expect("the trace runs")
        .violation
        .expect("v1 drops the controller's condition");
    assert!(differs.message.contains("apiserver[default/web-1].status.conditions"), "{differs}");
}
