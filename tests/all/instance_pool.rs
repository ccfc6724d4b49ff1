//! wasmtime's pooling allocator under the plugin runtime (what a fleet runs on): the
//! instances come from slots reserved once, each serves as an instance allocated on
//! demand does, a full pool refuses the next instance with a typed error while the
//! ones it holds keep serving, and a slot given back serves again.

use podstatus_plugins::PODSTATUS_V1;
use podstatus_runtime::bindings::UpdateOutcome;
use podstatus_runtime::{LoadError, PluginExt, PluginRuntime, PoolSize, RuntimeConfig};
use podstatus_tests::{cache_dir, memory_world, numbered_pod, running_status};

#[test]
fn a_full_pool_refuses_one_more_instance_and_the_others_keep_serving() {
    let config = RuntimeConfig {
        cache_dir: Some(cache_dir()),
        pool: Some(PoolSize { instances: 2 }),
        ..RuntimeConfig::default()
    };
    let image = PluginRuntime::new(&config).expect("a pooled runtime").load(PODSTATUS_V1).expect("the plugin loads");
    let pod = serde_json::to_string(&numbered_pod(1)).unwrap();
    let (_, world) = memory_world([numbered_pod(1)], false, 16);

    let mut first = image.instantiate(world.clone()).expect("a slot");
    let second = image.instantiate(world.clone()).expect("another slot");
    match image.instantiate(world.clone()) {
        Err(LoadError::Instantiate(e)) => assert!(format!("{e:#}").contains("limit"), "{e:#}"),
        Err(other) => panic!("the wrong error for a full pool: {other}"),
        Ok(_) => panic!("a pool of two gave a third instance"),
    }
    assert_eq!(first.set_pod_status(&pod, &running_status(0)).unwrap(), UpdateOutcome::Queued, "still serving");

    // A slot given back is handed out again, its memory as fresh as a new instance's.
    drop(second);
    let mut third = image.instantiate(world).expect("the slot given back");
    assert_eq!(third.get_pod_status("uid-0001").unwrap(), None, "nothing of the instance before");
    assert_eq!(third.set_pod_status(&pod, &running_status(0)).unwrap(), UpdateOutcome::Queued);
    assert_eq!(first.set_pod_status(&pod, &running_status(0)).unwrap(), UpdateOutcome::Unchanged);
}

#[test]
fn a_pool_for_a_fleet_leaves_room_for_swaps() {
    assert_eq!(PoolSize::for_nodes(1).instances, 9, "at least eight to spare");
    assert_eq!(PoolSize::for_nodes(1000).instances, 1250, "a quarter to spare");
}
