//! A fleet's simulated kubelets on a few threads.
//!
//! One node's driver runs on a thread of its own ([`Driver::run`]): it sleeps until its
//! next event, at most [`TICK`] at a time. A thousand such threads wake twenty
//! thousand times a second between them with nothing to do, and the context switches
//! took more of the two cores than the nodes' plugins did. Here each of a few threads
//! holds a share of the nodes and a queue of when each is due next: it sleeps until
//! the earliest, runs what that node has due ([`Driver::run_due`]) and queues the node
//! again. A thread wakes for events, not for every node.
//!
//! A node's step calls its plugin, and waits when the plugin is busy (its batch): the
//! other nodes of that thread wait with it. The nodes of a thread are every
//! `threads`-th node, so one group's nodes are spread over all threads, and a thread
//! holds few enough nodes (see [`threads_for`]) that a wait of a few milliseconds is
//! far below anything the summary measures.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::driver::Driver;
use crate::owners::Owners;
use podstatus_agent::metrics::TimedManager;
use podstatus_backends::PodManager;

/// The longest a pool thread sleeps before it looks at `stop` again.
const TICK: Duration = Duration::from_millis(50);
/// Nodes a pool thread runs at most.
const NODES_PER_THREAD: usize = 64;

/// One node of the pool: its driver, the node's side of its status manager and its pod
/// manager.
pub(crate) struct PooledNode<'a> {
    pub driver: Driver,
    pub side: TimedManager,
    pub pods: &'a PodManager,
}

/// Threads for `nodes` nodes: one per [`NODES_PER_THREAD`] nodes, at least one.
pub(crate) fn threads_for(nodes: usize) -> usize {
    nodes.div_ceil(NODES_PER_THREAD).max(1)
}

/// Runs every node's events until `until` or until `stop` is set, on
/// [`threads_for`]`(nodes.len())` threads named `podstatus-drivers-N`; returns the
/// nodes in the order given. A thread that cannot be started stops the run (set
/// `stop`) and is the error.
pub(crate) fn run<'a>(
    nodes: Vec<PooledNode<'a>>,
    owners: &(dyn Owners + Sync),
    until: Instant,
    stop: &AtomicBool,
) -> std::io::Result<Vec<PooledNode<'a>>> {
    let threads = threads_for(nodes.len());
    let total = nodes.len();
    let mut shares: Vec<Vec<(usize, PooledNode<'a>)>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, node) in nodes.into_iter().enumerate() {
        shares[i % threads].push((i, node));
    }
    let finished: std::io::Result<Vec<Vec<(usize, PooledNode<'a>)>>> = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads);
        for (t, share) in shares.into_iter().enumerate() {
            let spawned = std::thread::Builder::new()
                .name(format!("podstatus-drivers-{t}"))
                .spawn_scoped(scope, move || run_share(share, owners, until, stop));
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    stop.store(true, Ordering::SeqCst);
                    return Err(e);
                }
            }
        }
        // A driver that panicked is a bug of the host: its panic goes on up.
        Ok(handles.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect())
    });
    let mut ordered: Vec<Option<PooledNode<'a>>> = (0..total).map(|_| None).collect();
    for (i, node) in finished?.into_iter().flatten() {
        ordered[i] = Some(node);
    }
    Ok(ordered.into_iter().flatten().collect())
}

/// One thread's nodes, each run when it is due.
fn run_share<'a>(
    mut share: Vec<(usize, PooledNode<'a>)>,
    owners: &dyn Owners,
    until: Instant,
    stop: &AtomicBool,
) -> Vec<(usize, PooledNode<'a>)> {
    let mut due: BinaryHeap<Reverse<(Instant, usize)>> =
        share.iter().enumerate().filter_map(|(k, (_, node))| Some(Reverse((node.driver.next_at()?, k)))).collect();
    while !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        if now >= until {
            break;
        }
        let Some(&Reverse((at, k))) = due.peek() else { break };
        if at > now {
            std::thread::sleep((at - now).min(until - now).min(TICK));
            continue;
        }
        due.pop();
        let node = &mut share[k].1;
        if node.driver.finished() {
            continue;
        }
        node.driver.run_due(&node.side, node.pods, owners, now);
        if let Some(next) = node.driver.next_at() {
            due.push(Reverse((next, k)));
        }
    }
    share
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_holds_at_most_its_share_of_nodes() {
        assert_eq!(threads_for(0), 1);
        assert_eq!(threads_for(1), 1);
        assert_eq!(threads_for(NODES_PER_THREAD), 1);
        assert_eq!(threads_for(NODES_PER_THREAD + 1), 2);
        assert_eq!(threads_for(1000), 16);
    }
}
