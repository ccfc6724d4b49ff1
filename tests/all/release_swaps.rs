//! Hot swaps between the logic versions named by release and mode (issue 48): `1.27`
//! <-> `1.35` <-> `1.37`, and each release with its one-call mode, both ways, through
//! the handle as an agent swaps: every status written by the version that served it
//! survives every swap after, the versions go on from one another's, and a resize
//! condition set by 1.35 is carried through 1.27 (which cannot answer it) to 1.37.

use std::time::Duration;

use podstatus_backends::ApiServer;
use podstatus_plugins::LogicVersion::{self, K1_35, K1_37, K1_37OneCall, V2, V3, V4};
use podstatus_runtime::{ManagerHandle, ResizeCondition, SchedulerConfig, SupervisedPlugin};
use podstatus_tests::{logic_image, memory_world, numbered_pod, running_status};

/// Every swap the issue names, each pair both ways: 1.27 <-> 1.35, 1.27 <->
/// 1.27-one-call, 1.35 <-> 1.37, 1.35 <-> 1.35-one-call, 1.37 <-> 1.37-one-call.
const CHAIN: [LogicVersion; 13] = [V2, K1_35, V2, V3, V2, K1_35, K1_37, K1_35, V4, K1_35, K1_37, K1_37OneCall, K1_37];

const PODS: usize = 4;

#[test]
fn every_release_and_mode_swaps_both_ways_with_its_neighbours() {
    let (api, world) = memory_world((0..PODS).map(numbered_pod), true, 256);
    let supervised = |version: LogicVersion| {
        Box::new(SupervisedPlugin::new(logic_image(version).clone(), world.clone()).expect("supervised"))
    };
    let (manager, scheduler) =
        ManagerHandle::start(supervised(CHAIN[0]), world.queue.clone(), SchedulerConfig::default());
    let mut expected = [(1u64, 1u64); PODS]; // per pod: (restart count written, cached version)
    let set = |pods: &[usize], restarts: u64| {
        for &i in pods {
            manager
                .set_pod_status(&serde_json::to_string(&numbered_pod(i)).unwrap(), &running_status(restarts))
                .unwrap();
        }
        manager.sync_batch().unwrap();
    };
    set(&(0..PODS).collect::<Vec<_>>(), 1);
    for (step, version) in CHAIN.iter().copied().enumerate().skip(1) {
        if version == V2 && CHAIN[step - 1] == K1_35 {
            // 1.35 sets a resize condition that 1.27 carries untouched.
            manager.set_pod_resize_condition("uid-0000", ResizeCondition::Pending, "Infeasible", "no room", 1).unwrap();
        }
        let report = manager.swap(supervised(version)).unwrap_or_else(|e| panic!("to {}: {e}", version.name()));
        assert_eq!(report.to, manager.contract());
        let restarts = step as u64 + 1;
        let pods = [step % PODS, (step + 1) % PODS];
        set(&pods, restarts);
        for i in pods {
            expected[i] = (restarts, expected[i].1 + 1);
        }
        for (i, (restarts, cached)) in expected.iter().enumerate() {
            let found = manager.get_pod_status(&format!("uid-{i:04}")).unwrap().expect("cached across every swap");
            assert_eq!(found.version, *cached, "pod {i} after the swap to {}", version.name());
            let written = api.get_pod("default", &format!("pod-{i}")).unwrap().status.clone().unwrap();
            let restart_count = written.container_statuses.unwrap()[0].restart_count;
            assert_eq!(
                restart_count as u64,
                *restarts,
                "pod {i} in the API server after the swap to {}",
                version.name()
            );
        }
    }
    let conditions = manager.get_pod_resize_conditions("uid-0000").unwrap();
    assert!(
        conditions.iter().any(|c| c.contains("\"PodResizePending\"") && c.contains("\"Infeasible\"")),
        "{conditions:?}"
    );
    assert_eq!(scheduler.shutdown(Duration::from_secs(10)), 0);
}
