//! A fleet's final check, read as the API server's pages come.
//!
//! One node's check lists its pods, keeps them and compares ([`check::check`]). A
//! fleet's list is every pod, 100,000 at the scale: kept until compared, even
//! as identity and status text, they added about 100 MiB at the very end of the run,
//! its peak of memory. Here each pod is compared with its node's promise as its page
//! arrives and then let go; what is kept per pod is its node's note that it was
//! compared. The pods a node holds that no page brought are compared last, as
//! absent from the API server. What is reported is what [`check::check`] would report
//! for each node.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};

use k8s_openapi::api::core::v1::Pod;

use crate::NewPaths;
use crate::check;
use crate::owners::{self, KubeOwners, OwnerError};
use crate::summary::Check;
use podstatus_backends::PodManager;
use podstatus_runtime::ManagerHandle;

/// A node a fleet's check compares: its name (the pods' `spec.nodeName`), its status
/// manager and its pod manager.
pub struct CheckedNode<'a> {
    /// The node's name, as its pods' `spec.nodeName` has it.
    pub name: &'a str,
    /// Its status manager: the plugin's cache and the host's record of what it accepted.
    pub handle: &'a ManagerHandle,
    /// Its pod manager: the pods it holds.
    pub pods: &'a PodManager,
}

/// What a fleet's final check found.
#[derive(Debug)]
pub struct FleetCheck {
    /// Each node's check, in the order of the nodes.
    pub nodes: Vec<Check>,
    /// The fleet's pods in the API server, by phase.
    pub pods_by_phase: BTreeMap<String, u64>,
    /// The API server's pods counted for the new paths (with `count_paths`).
    pub api_paths: NewPaths,
}

/// The check as the list goes.
struct Reading {
    checks: Vec<Check>,
    /// Per node: the UIDs of its pods compared so far.
    compared: Vec<HashSet<String>>,
    pods_by_phase: BTreeMap<String, u64>,
    api_paths: NewPaths,
}

/// Checks every node of `nodes` against one paged list of the API server's pods;
/// `count_paths` also counts them for a 1.35 kubelet's new paths.
pub fn check_fleet(owners: &KubeOwners, nodes: &[CheckedNode<'_>], count_paths: bool) -> FleetCheck {
    let index: HashMap<&str, usize> = nodes.iter().enumerate().map(|(i, node)| (node.name, i)).collect();
    let start = || Reading {
        checks: (0..nodes.len()).map(|_| Check::default()).collect(),
        compared: (0..nodes.len()).map(|_| HashSet::new()).collect(),
        pods_by_phase: BTreeMap::new(),
        api_paths: NewPaths::default(),
    };
    let ours = |node: Option<&str>| node.is_some_and(|node| index.contains_key(node));
    let listed = owners.each_stored_pod(None, ours, start, |reading, node, key, stored| {
        owners::count_phase(&mut reading.pods_by_phase, &stored);
        // The pod as an object, parsed at most once: for the new paths, for the check.
        let parsed = count_paths.then(|| stored.to_pod());
        if let Some(api_pod) = &parsed {
            reading.api_paths.count_api_pods([api_pod]);
        }
        let (Some(&i), Some(uid)) = (node.and_then(|node| index.get(node)), stored.uid.as_deref()) else { return };
        let pods = nodes[i].pods;
        // The node's pod whose status this is: the pod itself, or a mirror pod's static
        // pod. A pod the node does not hold was promised nothing.
        let Some(held) = pods.get_any(uid) else { return };
        let held = if held.is_mirror() {
            match pods.get_pod_by_uid(&pods.translate_pod_uid(uid)) {
                Some(static_pod) => static_pod,
                None => return,
            }
        } else {
            held
        };
        let held_uid = held.uid().unwrap_or_default().to_owned();
        if !reading.compared[i].insert(held_uid) {
            return;
        }
        // Read once, by the one pod this item is the status of.
        let api_pod = Cell::new(Some(parsed.unwrap_or_else(|| stored.to_pod())));
        let read = |namespace: &str, name: &str| {
            Ok::<_, OwnerError>((namespace == key.0 && name == key.1).then(|| api_pod.take()).flatten())
        };
        check::check_pod(nodes[i].handle, pods, &held, &read, &mut reading.checks[i]);
    });
    match listed {
        Ok(mut reading) => {
            let absent = |_: &str, _: &str| Ok::<Option<Pod>, OwnerError>(None);
            for (i, node) in nodes.iter().enumerate() {
                for pod in node.pods.pods().iter().filter(|pod| !pod.is_mirror()) {
                    if !reading.compared[i].contains(pod.uid().unwrap_or_default()) {
                        check::check_pod(node.handle, node.pods, pod, &absent, &mut reading.checks[i]);
                    }
                }
            }
            FleetCheck { nodes: reading.checks, pods_by_phase: reading.pods_by_phase, api_paths: reading.api_paths }
        }
        Err(e) => {
            let failed = |_: &str, _: &str| Err::<Option<Pod>, OwnerError>(e.clone());
            let checks = nodes.iter().map(|node| check::check(node.handle, node.pods, &failed)).collect();
            FleetCheck { nodes: checks, pods_by_phase: BTreeMap::new(), api_paths: NewPaths::default() }
        }
    }
}
