//! Contract 0.2.1 through the real component: the podstatus-v4 plugin loads as 0.2.1,
//! its in-place resize conditions are set, read and cleared, survive a recovery and a
//! hot swap (v4 -> v4, v4 -> v3 -> v4), a 0.2.0 plugin still loads and answers the new
//! calls with a typed "unsupported", and every string the host passes is bounded.

use podstatus_plugins::{PODSTATUS_V2, PODSTATUS_V3, PODSTATUS_V4};
use podstatus_runtime::bindings::UpdateOutcome;
use podstatus_runtime::{
    CallError, Contract, FaultKind, Limits, MAX_RESIZE_MESSAGE_BYTES, MAX_RESIZE_REASON_BYTES, Plugin, PluginExt,
    PluginImage, PluginRuntime, ResizeCondition, RuntimeConfig, SupervisedPlugin, World, move_bulk, move_changes,
};
use podstatus_tests::{cache_dir, load, memory_world, numbered_pod, running_status};
use serde_json::Value;

const UID: &str = "uid-0000";

fn world() -> World {
    memory_world([numbered_pod(0)], true, 64).1
}

fn image_with(bytes: &[u8], limits: Limits) -> PluginImage {
    let config = RuntimeConfig { cache_dir: Some(cache_dir()), limits, ..RuntimeConfig::default() };
    PluginRuntime::new(&config).expect("runtime").load(bytes).expect("the plugin loads")
}

/// The types and reasons of a pod's resize conditions, in the order the plugin lists them.
fn conditions(plugin: &mut dyn Plugin) -> Vec<(String, String)> {
    plugin
        .get_pod_resize_conditions(UID)
        .expect("the conditions")
        .iter()
        .map(|c| {
            let c: Value = serde_json::from_str(c).expect("JSON");
            (c["type"].as_str().unwrap_or_default().to_string(), c["reason"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

fn pair(t: &str, r: &str) -> (String, String) {
    (t.to_string(), r.to_string())
}

/// Sets a deferred pending resize and an in-progress one.
fn set_both(plugin: &mut dyn Plugin) {
    plugin.set_pod_resize_condition(UID, ResizeCondition::Pending, "Deferred", "no room", 2).expect("pending");
    plugin.set_pod_resize_condition(UID, ResizeCondition::InProgress, "", "", 2).expect("in progress");
}

#[test]
fn v4_is_contract_0_2_1_and_sets_reads_and_clears_resize_conditions() {
    let image = load(PODSTATUS_V4);
    assert_eq!(image.contract(), Contract::V0_2_1);
    assert!(image.contract().has_resize() && image.contract().has_split_syncs());
    let mut plugin = image.instantiate(world()).expect("an instance");
    assert_eq!(conditions(&mut plugin), vec![]);
    set_both(&mut plugin);
    assert_eq!(conditions(&mut plugin), vec![pair("PodResizePending", "Deferred"), pair("PodResizeInProgress", "")]);
    let pending: Value = serde_json::from_str(&plugin.get_pod_resize_conditions(UID).unwrap()[0]).unwrap();
    assert_eq!((pending["status"].as_str(), pending["observedGeneration"].as_i64()), (Some("True"), Some(2)));
    assert_eq!(pending["message"], "no room");
    assert!(plugin.clear_pod_resize_condition(UID, ResizeCondition::Pending).unwrap(), "it was set");
    assert!(!plugin.clear_pod_resize_condition(UID, ResizeCondition::Pending).unwrap(), "it is gone");
    assert_eq!(conditions(&mut plugin), vec![pair("PodResizeInProgress", "")]);
    // The 0.2.0 calls still work on the same instance (they go through 0.2.0's bindings).
    let pod = serde_json::to_string(&numbered_pod(0)).unwrap();
    assert_eq!(plugin.set_pod_status(&pod, &running_status(0)).unwrap(), UpdateOutcome::Queued);
    assert!(plugin.get_pod_status(UID).unwrap().is_some());
}

#[test]
fn a_0_2_0_plugin_loads_on_the_0_2_1_host_and_answers_resize_unsupported() {
    for bytes in [PODSTATUS_V2, PODSTATUS_V3] {
        let image = load(bytes);
        assert_eq!(image.contract(), Contract::V0_2_0);
        let mut plugin = image.instantiate(world()).expect("an instance");
        let unsupported = plugin.set_pod_resize_condition(UID, ResizeCondition::Pending, "Deferred", "", 1);
        assert!(
            matches!(
                unsupported,
                Err(CallError::Unsupported { call: "set-pod-resize-condition", contract: Contract::V0_2_0 })
            ),
            "{unsupported:?}"
        );
        assert!(matches!(plugin.get_pod_resize_conditions(UID), Err(CallError::Unsupported { .. })));
        assert!(matches!(
            plugin.clear_pod_resize_condition(UID, ResizeCondition::InProgress),
            Err(CallError::Unsupported { .. })
        ));
        // No trap: the instance serves on.
        assert!(plugin.fault().is_none());
        let pod = serde_json::to_string(&numbered_pod(0)).unwrap();
        assert_eq!(plugin.set_pod_status(&pod, &running_status(0)).unwrap(), UpdateOutcome::Queued);
    }
}

#[test]
fn resize_conditions_survive_recovery_after_a_fault() {
    // A state cap the conditions fit under and a large status does not: the call that
    // would grow the state past it faults, and the supervisor restores a fresh instance
    // from its copy, which followed the resize calls' change sets.
    let limits = Limits { max_state_bytes: 8 << 10, ..Limits::default() };
    let mut plugin = SupervisedPlugin::new(image_with(PODSTATUS_V4, limits), world()).expect("supervised");
    set_both(&mut plugin);
    let pod = serde_json::to_string(&numbered_pod(0)).unwrap();
    let mut big: Value = serde_json::from_str(&running_status(0)).unwrap();
    big["message"] = Value::String("x".repeat(16 << 10));
    // Its change set is over the cap: the instance is poisoned (Oversized) and replaced.
    let (call, kind, _) = podstatus_tests::fault(plugin.set_pod_status(&pod, &big.to_string()));
    assert_eq!((call, kind), ("set-pod-status", FaultKind::Oversized));
    assert_eq!(plugin.stats().recoveries, 1, "{:?}", plugin.stats());
    assert_eq!(conditions(&mut plugin), vec![pair("PodResizePending", "Deferred"), pair("PodResizeInProgress", "")]);
    // A clear is followed too: after another recovery it stays cleared.
    assert!(plugin.clear_pod_resize_condition(UID, ResizeCondition::Pending).unwrap());
    podstatus_tests::fault(plugin.set_pod_status(&pod, &big.to_string()));
    assert_eq!(plugin.stats().recoveries, 2);
    assert_eq!(conditions(&mut plugin), vec![pair("PodResizeInProgress", "")]);
}

/// Swaps `old` into a fresh supervised instance of `to`, as a hot swap moves the
/// state: the bulk, then what changed since (here a resize set between the two).
fn swap(old: &mut SupervisedPlugin, to: &[u8], world: &World) -> SupervisedPlugin {
    let mut new = SupervisedPlugin::new(load(to), world.clone()).expect("supervised");
    move_bulk(old, &mut new).expect("the bulk moves");
    old.set_pod_resize_condition(UID, ResizeCondition::Pending, "Infeasible", "never fits", 3).expect("set");
    move_changes(old, &mut new).expect("the changes move");
    new
}

#[test]
fn resize_conditions_survive_hot_swaps_v4_to_v4_and_through_v3() {
    let world = world();
    let mut v4 = SupervisedPlugin::new(load(PODSTATUS_V4), world.clone()).expect("supervised");
    set_both(&mut v4);
    let mut again = swap(&mut v4, PODSTATUS_V4, &world);
    assert_eq!(conditions(&mut again), vec![pair("PodResizePending", "Infeasible"), pair("PodResizeInProgress", "")]);
    // v3 cannot answer them, but carries them in its state untouched...
    let mut v3 = swap(&mut again, PODSTATUS_V3, &world);
    assert_eq!(v3.contract(), Contract::V0_2_0);
    assert!(matches!(v3.get_pod_resize_conditions(UID), Err(CallError::Unsupported { .. })));
    // ...so a swap back to v4 has them again.
    let mut new = SupervisedPlugin::new(load(PODSTATUS_V4), world.clone()).expect("supervised");
    move_bulk(&mut v3, &mut new).expect("the bulk moves");
    move_changes(&mut v3, &mut new).expect("the changes move");
    assert_eq!(conditions(&mut new), vec![pair("PodResizePending", "Infeasible"), pair("PodResizeInProgress", "")]);
}

#[test]
fn hostile_limits_refuse_oversized_resize_arguments_before_the_plugin() {
    let limits = Limits { max_boundary_bytes: 4 << 10, ..Limits::default() };
    let mut plugin = image_with(PODSTATUS_V4, limits).instantiate(world()).expect("an instance");
    let long_reason = "R".repeat(MAX_RESIZE_REASON_BYTES + 1);
    let refused = plugin.set_pod_resize_condition(UID, ResizeCondition::Pending, &long_reason, "", 1);
    assert!(
        matches!(
            refused,
            Err(CallError::TooLarge {
                call: "set-pod-resize-condition",
                what: "reason",
                limit: MAX_RESIZE_REASON_BYTES,
                ..
            })
        ),
        "{refused:?}"
    );
    let long_message = "m".repeat(MAX_RESIZE_MESSAGE_BYTES + 1);
    let refused = plugin.set_pod_resize_condition(UID, ResizeCondition::InProgress, "Error", &long_message, 1);
    assert!(matches!(refused, Err(CallError::TooLarge { what: "message", .. })), "{refused:?}");
    let long_uid = "u".repeat(5 << 10);
    for refused in [
        plugin.set_pod_resize_condition(&long_uid, ResizeCondition::Pending, "Deferred", "", 1).err(),
        plugin.clear_pod_resize_condition(&long_uid, ResizeCondition::Pending).err(),
        plugin.get_pod_resize_conditions(&long_uid).err(),
    ] {
        assert!(matches!(refused, Some(CallError::TooLarge { what: "pod-uid", limit: 4096, .. })), "{refused:?}");
    }
    // Nothing reached the plugin: it holds no condition and serves on.
    assert_eq!(conditions(&mut plugin), vec![]);
    // At the bounds exactly, the plugin takes them.
    let reason = "R".repeat(MAX_RESIZE_REASON_BYTES);
    plugin.set_pod_resize_condition(UID, ResizeCondition::Pending, &reason, "", 1).expect("at the bound");
    assert_eq!(conditions(&mut plugin), vec![pair("PodResizePending", &reason)]);
}
