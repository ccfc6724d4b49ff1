//! The plugin lock: one thread at a time enters the plugin, and sync steps take turns
//! and give way to the callers of the Manager operations, so that dozens of API
//! workers resuming at once do not keep a caller waiting behind all of them.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::plugin::Plugin;

/// The longest a sync step gives way to waiting callers before it takes its turn.
const STEP_YIELD_MAX: Duration = Duration::from_millis(2);

/// The running plugin, behind its mutex, with the count of callers waiting for it and
/// the steps' turn.
pub(super) struct PluginLock {
    plugin: Mutex<Box<dyn Plugin>>,
    /// Callers of the Manager operations waiting for the plugin lock: sync steps give
    /// way to them (see [`PluginLock::for_steps`]).
    callers_waiting: AtomicUsize,
    /// Taken by a sync step (or a plan) before the plugin lock and kept while it holds
    /// it: at most one step contends with the callers for the plugin at a time (see
    /// [`PluginLock::for_steps`]).
    step_turn: Mutex<()>,
    /// Nanoseconds the plugin lock was held, over the lock's life: the plugin's time
    /// (its calls never wait for the network, so this is CPU) and the host's around it.
    held_nanos: AtomicU64,
}

impl PluginLock {
    /// The lock over `plugin`.
    pub(super) fn new(plugin: Box<dyn Plugin>) -> Self {
        PluginLock {
            plugin: Mutex::new(plugin),
            callers_waiting: AtomicUsize::new(0),
            step_turn: Mutex::new(()),
            held_nanos: AtomicU64::new(0),
        }
    }

    /// The lock, taken as it comes (the scheduler's batch, a swap, a handle's queries).
    pub(super) fn lock(&self) -> Held<'_> {
        // A panic while the lock was held happened in host code between plugin calls;
        // the plugin itself reports faults as values, so its state is still coherent.
        let plugin = self.plugin.lock().unwrap_or_else(|p| p.into_inner());
        Held { plugin, since: Instant::now(), held_nanos: &self.held_nanos }
    }

    /// How long the plugin lock has been held in all, over the lock's life (the
    /// guards held now not counted until they are dropped).
    pub(super) fn held(&self) -> Duration {
        Duration::from_nanos(self.held_nanos.load(Ordering::Relaxed))
    }

    /// The lock for a caller of a Manager operation: counted as waiting until it has
    /// it, so that the syncs' steps (dozens of workers' resumes) let it go first.
    pub(super) fn for_caller(&self) -> Held<'_> {
        self.callers_waiting.fetch_add(1, Ordering::SeqCst);
        let plugin = self.lock();
        self.callers_waiting.fetch_sub(1, Ordering::SeqCst);
        plugin
    }

    /// The lock for a sync's step or a plan. A mutex is not fair: with dozens of API
    /// workers resuming at once, a caller that found them all blocked on the plugin
    /// lock would wait behind several steps. So steps take turns first (one at a time
    /// contends for the plugin, the others wait for their turn without touching it),
    /// and the one whose turn it is gives way while callers wait, at most
    /// [`STEP_YIELD_MAX`], so steps are never starved. A caller then waits for at most
    /// the step or call that holds the plugin.
    pub(super) fn for_steps(&self) -> StepGuard<'_> {
        let turn = self.step_turn.lock().unwrap_or_else(|p| p.into_inner());
        let until = Instant::now() + STEP_YIELD_MAX;
        while self.callers_waiting.load(Ordering::SeqCst) > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_micros(50));
        }
        StepGuard { plugin: self.lock(), _turn: turn }
    }
}

/// The plugin locked for a sync step or a plan, with the steps' turn: the plugin is
/// unlocked first (fields drop in order), so that the next step, given its turn, sees
/// the callers that waited meanwhile and lets them go first.
pub(super) struct StepGuard<'a> {
    plugin: Held<'a>,
    _turn: MutexGuard<'a, ()>,
}

impl std::ops::Deref for StepGuard<'_> {
    type Target = Box<dyn Plugin>;
    fn deref(&self) -> &Self::Target {
        &self.plugin
    }
}

impl std::ops::DerefMut for StepGuard<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.plugin
    }
}

/// The plugin locked, timed: dropping it adds the time it was held to the lock's count.
pub(super) struct Held<'a> {
    plugin: MutexGuard<'a, Box<dyn Plugin>>,
    since: Instant,
    held_nanos: &'a AtomicU64,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let nanos = u64::try_from(self.since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.held_nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}

impl std::ops::Deref for Held<'_> {
    type Target = Box<dyn Plugin>;
    fn deref(&self) -> &Self::Target {
        &self.plugin
    }
}

impl std::ops::DerefMut for Held<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.plugin
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::bindings::Contract;
    use crate::calls::{Call, Reply};
    use crate::plugin::{CallError, Result};
    use crate::world::World;
    use podstatus_backends::{FixedDeletionSafety, MemoryApiServer, PodManager, SyncQueue, SystemClock};

    /// A plugin that answers nothing: the tests only take its lock.
    struct Inert(World);

    impl Plugin for Inert {
        fn call(&mut self, call: Call<'_>) -> Result<Reply> {
            Err(CallError::Unsupported { call: call.name(), contract: self.contract() })
        }

        fn world(&self) -> &World {
            &self.0
        }

        fn contract(&self) -> Contract {
            Contract::V0_1_0
        }
    }

    fn lock() -> Arc<PluginLock> {
        let world = World {
            api_server: Arc::new(MemoryApiServer::new()),
            pod_manager: Arc::new(PodManager::new()),
            deletion_safety: Arc::new(FixedDeletionSafety::new(true)),
            clock: Arc::new(SystemClock),
            queue: Arc::new(SyncQueue::new(10)),
        };
        // No scheduler: the test drives the locks.
        Arc::new(PluginLock::new(Box::new(Inert(world))))
    }

    /// Eight sync steps wait for the plugin while one holds it; a caller comes along
    /// after them. The caller gets the plugin next (at most one step may slip in,
    /// should the caller be slow to wake), not behind the eight.
    #[test]
    fn a_caller_waits_for_the_step_that_holds_the_plugin_not_for_every_step_waiting() {
        let lock = lock();
        let order = Arc::new(Mutex::new(Vec::new()));
        let held = lock.for_steps();
        let steps: Vec<_> = (0..8)
            .map(|_| {
                let (lock, order) = (Arc::clone(&lock), Arc::clone(&order));
                std::thread::spawn(move || {
                    let _plugin = lock.for_steps();
                    order.lock().unwrap().push("step");
                    std::thread::sleep(Duration::from_millis(2));
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        let caller = {
            let (lock, order) = (Arc::clone(&lock), Arc::clone(&order));
            std::thread::spawn(move || {
                let _plugin = lock.for_caller();
                order.lock().unwrap().push("caller");
            })
        };
        while lock.callers_waiting.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(held);
        caller.join().unwrap();
        steps.into_iter().for_each(|s| s.join().unwrap());
        let order = order.lock().unwrap();
        let position = order.iter().position(|who| *who == "caller").unwrap();
        assert!(position <= 1, "the caller came after {position} steps: {order:?}");
        assert_eq!(order.len(), 9);
    }

    #[test]
    fn the_time_the_plugin_is_held_is_counted_when_let_go() {
        let lock = lock();
        assert_eq!(lock.held(), Duration::ZERO);
        {
            let _caller = lock.for_caller();
            std::thread::sleep(Duration::from_millis(5));
            assert_eq!(lock.held(), Duration::ZERO, "counted when let go");
        }
        drop(lock.for_steps());
        assert!(lock.held() >= Duration::from_millis(5), "{:?}", lock.held());
    }
}
