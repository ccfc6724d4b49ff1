//! An API server whose calls wait at a gate the test opens, counting how many are in
//! flight at once (in all, and per pod): overlap and per-pod order become facts a test
//! can assert without timing anything.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use podstatus_backends::{ApiServer, DeleteOptions, Result, StatusPatch, StatusUpdate};

/// Calls to the inner server, held while the gate is closed.
pub struct GatedApiServer {
    inner: Arc<dyn ApiServer>,
    state: Mutex<Gate>,
    changed: Condvar,
}

#[derive(Default)]
struct Gate {
    open: bool,
    in_flight: usize,
    /// Calls waiting at the closed gate now (not those passing it).
    held: usize,
    max_in_flight: usize,
    per_pod: BTreeMap<String, usize>,
    max_per_pod: usize,
    writes: BTreeMap<String, usize>,
}

impl GatedApiServer {
    /// A closed gate in front of `inner`.
    pub fn new(inner: Arc<dyn ApiServer>) -> Arc<Self> {
        Arc::new(GatedApiServer { inner, state: Mutex::default(), changed: Condvar::new() })
    }

    fn gate(&self) -> std::sync::MutexGuard<'_, Gate> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lets every waiting and later call through.
    pub fn open(&self) {
        self.gate().open = true;
        self.changed.notify_all();
    }

    /// Holds later calls again.
    pub fn close(&self) {
        self.gate().open = false;
    }

    /// Calls waiting at (or passing) the gate now.
    pub fn in_flight(&self) -> usize {
        self.gate().in_flight
    }

    /// The most calls in flight at once so far.
    pub fn max_in_flight(&self) -> usize {
        self.gate().max_in_flight
    }

    /// The most calls of one pod in flight at once so far.
    pub fn max_per_pod(&self) -> usize {
        self.gate().max_per_pod
    }

    /// Successful status writes of pod `name`.
    pub fn writes(&self, name: &str) -> usize {
        self.gate().writes.get(name).copied().unwrap_or(0)
    }

    /// Waits until `n` calls are in flight (waiting at the closed gate, or passing it),
    /// at most `timeout`; whether they are.
    pub fn wait_in_flight(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |gate| gate.in_flight >= n)
    }

    /// Waits until `n` calls wait at the closed gate, at most `timeout`; whether they
    /// do. Unlike [`GatedApiServer::wait_in_flight`], a call that was passing the gate
    /// when it closed (and ends a moment later) does not count.
    pub fn wait_held(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |gate| gate.held >= n)
    }

    fn wait_until(&self, timeout: Duration, done: impl Fn(&Gate) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let mut gate = self.gate();
        while !done(&gate) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            gate = self.changed.wait_timeout(gate, left).unwrap_or_else(PoisonError::into_inner).0;
        }
        true
    }

    fn call<T>(&self, pod: &str, write: bool, f: impl FnOnce() -> Result<T>) -> Result<T> {
        {
            let mut gate = self.gate();
            gate.in_flight += 1;
            gate.max_in_flight = gate.max_in_flight.max(gate.in_flight);
            let mine = {
                let n = gate.per_pod.entry(pod.to_string()).or_default();
                *n += 1;
                *n
            };
            gate.max_per_pod = gate.max_per_pod.max(mine);
            let held = usize::from(!gate.open);
            gate.held += held;
            self.changed.notify_all();
            while !gate.open {
                gate = self.changed.wait(gate).unwrap_or_else(PoisonError::into_inner);
            }
            gate.held -= held;
        }
        let result = f();
        let mut gate = self.gate();
        gate.in_flight -= 1;
        if let Some(n) = gate.per_pod.get_mut(pod) {
            *n -= 1;
        }
        if write && result.is_ok() {
            *gate.writes.entry(pod.to_string()).or_default() += 1;
        }
        self.changed.notify_all();
        result
    }
}

impl ApiServer for GatedApiServer {
    fn get_pod(&self, namespace: &str, name: &str) -> Result<Arc<Pod>> {
        self.call(name, false, || self.inner.get_pod(namespace, name))
    }

    fn update_pod_status(&self, update: StatusUpdate) -> Result<Arc<Pod>> {
        let name = update.name.clone();
        self.call(&name, true, || self.inner.update_pod_status(update))
    }

    fn patch_pod_status(&self, patch: StatusPatch) -> Result<Arc<Pod>> {
        let name = patch.name.clone();
        self.call(&name, true, || self.inner.patch_pod_status(patch))
    }

    fn delete_pod(&self, namespace: &str, name: &str, options: &DeleteOptions) -> Result<Arc<Pod>> {
        self.call(name, false, || self.inner.delete_pod(namespace, name, options))
    }
}
