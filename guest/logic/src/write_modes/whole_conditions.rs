//! The one-call mode computes its patch against what it last wrote, not against what
//! the server holds now. A condition another writer removed or changed in between
//! would then get only the fields that changed for the kubelet: a Ready condition
//! without a status, say. So every condition the patch names is sent whole: whatever
//! the server holds, the condition ends as computed. (Other fields are replaced whole
//! by a merge patch anyway.)

use k8s_openapi::api::core::v1::PodStatus;
use serde_json::Value;

/// `patch` (a status patch, as JSON) with each condition it names completed with
/// every field of that condition in `merged`; the nulls of fields no longer set stay, and directives (`$patch: delete`) are left as they are.
pub fn whole_conditions(patch: String, merged: &PodStatus) -> String {
    let Ok(mut value) = serde_json::from_str::<Value>(&patch) else { return patch };
    let Some(items) = value.pointer_mut("/status/conditions").and_then(Value::as_array_mut) else { return patch };
    for item in items.iter_mut().filter(|item| item.get("$patch").is_none()) {
        let Some(type_) = item.get("type").and_then(Value::as_str) else { continue };
        let full = merged.conditions.iter().flatten().find(|c| c.type_ == type_);
        // The diff's own fields stay (a null clears what was itself written before).
        if let (Some(Ok(Value::Object(full))), Some(fields)) = (full.map(serde_json::to_value), item.as_object_mut()) {
            fields.extend(full);
        }
    }
    serde_json::to_string(&value).unwrap_or(patch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_changed_condition_is_sent_with_every_field() {
        let merged: PodStatus = serde_json::from_value(json!({"conditions": [
            {"type": "Ready", "status": "False", "reason": "PodCompleted", "lastTransitionTime": "2026-01-04T20:12:58Z"},
            {"type": "Initialized", "status": "True"},
        ]}))
        .unwrap();
        let patch = json!({"metadata": {"uid": "u"}, "status": {"conditions": [
            {"type": "Ready", "reason": "PodCompleted", "message": null},
            {"type": "Gone", "$patch": "delete"},
        ]}});
        let widened: Value = serde_json::from_str(&whole_conditions(patch.to_string(), &merged)).unwrap();
        assert_eq!(
            widened["status"]["conditions"],
            json!([
                {"type": "Ready", "status": "False", "reason": "PodCompleted", "message": null,
                 "lastTransitionTime": "2026-01-04T20:12:58Z"},
                {"type": "Gone", "$patch": "delete"},
            ])
        );
    }

    #[test]
    fn a_patch_without_conditions_is_unchanged() {
        let patch = json!({"metadata": {"uid": "u"}, "status": {"phase": "Running"}}).to_string();
        assert_eq!(whole_conditions(patch.clone(), &PodStatus::default()), patch);
    }
}
