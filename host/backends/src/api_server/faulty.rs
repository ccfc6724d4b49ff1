//! An [`ApiServer`] in front of another that fails a fraction of calls, for simulations
//! that prove no status is lost when the API server misbehaves (`simulate
//! --api-fault-rate`). Half of the injected faults refuse the call before it is sent;
//! the other half let it happen and lose the answer, as a dropped connection does after
//! the server wrote: the plugin believes a write failed that in fact landed.
//!
//! The choice is a seeded generator's, so a run's faults follow from its seed and the
//! order of calls.

use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::Pod;

use super::interface::{ApiError, ApiServer, DeleteOptions, Result, StatusPatch, StatusUpdate};
use crate::rng::{Entropy, SplitMix64};

/// Which calls fail: about `rate` of them (0.0 to 1.0), chosen by a generator seeded
/// with `seed`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InjectedFaults {
    /// Fraction of calls that fail.
    pub rate: f64,
    /// The generator's seed.
    pub seed: u64,
}

/// Fails about `rate` of the calls to `inner` (0.0 to 1.0).
pub struct FaultyApiServer {
    inner: Arc<dyn ApiServer>,
    /// Parts per million of calls that fail.
    per_million: u64,
    rng: Mutex<SplitMix64>,
}

/// What happens to one call.
enum Fate {
    Pass,
    /// Refused before it was sent.
    Refuse,
    /// Sent, but its answer lost.
    LoseAnswer,
}

impl FaultyApiServer {
    /// Fails the calls to `inner` that `faults` picks (its rate clamped to 0..=1).
    pub fn new(inner: Arc<dyn ApiServer>, faults: InjectedFaults) -> Self {
        let per_million = (faults.rate.clamp(0.0, 1.0) * 1e6).round() as u64;
        FaultyApiServer { inner, per_million, rng: Mutex::new(SplitMix64::new(faults.seed)) }
    }

    fn fate(&self) -> Fate {
        let mut rng = self.rng.lock().unwrap_or_else(PoisonError::into_inner);
        let rng: &mut dyn Entropy = &mut *rng;
        if rng.below(1_000_000) >= self.per_million {
            Fate::Pass
        } else if rng.chance(50) {
            Fate::Refuse
        } else {
            Fate::LoseAnswer
        }
    }

    fn call<T>(&self, verb: &str, call: impl FnOnce(&dyn ApiServer) -> Result<T>) -> Result<T> {
        match self.fate() {
            Fate::Pass => call(self.inner.as_ref()),
            Fate::Refuse => Err(injected(verb, "refused before it was sent")),
            Fate::LoseAnswer => {
                let _lost = call(self.inner.as_ref());
                Err(injected(verb, "sent, but the answer was lost"))
            }
        }
    }
}

fn injected(verb: &str, what: &str) -> ApiError {
    ApiError::Unavailable { message: format!("injected fault: {verb} {what}") }
}

impl ApiServer for FaultyApiServer {
    fn get_pod(&self, namespace: &str, name: &str) -> Result<Arc<Pod>> {
        self.call("get", |api| api.get_pod(namespace, name))
    }

    fn judge_status_write(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        of_request: bool,
        status: &dyn Fn() -> Option<String>,
    ) -> Option<Result<(), String>> {
        self.inner.judge_status_write(namespace, name, uid, of_request, status)
    }

    fn update_pod_status(&self, update: StatusUpdate) -> Result<Arc<Pod>> {
        self.call("update status", |api| api.update_pod_status(update))
    }

    fn patch_pod_status(&self, patch: StatusPatch) -> Result<Arc<Pod>> {
        self.call("patch status", |api| api.patch_pod_status(patch))
    }

    fn delete_pod(&self, namespace: &str, name: &str, options: &DeleteOptions) -> Result<Arc<Pod>> {
        self.call("delete", |api| api.delete_pod(namespace, name, options))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api_server::memory::MemoryApiServer;
    use crate::testing::pod;

    fn store_with_pod() -> Arc<MemoryApiServer> {
        let store = Arc::new(MemoryApiServer::new());
        store.create_pod(pod("a", "uid-a").build()).unwrap();
        store
    }

    #[test]
    fn rate_zero_passes_everything_and_one_fails_everything() {
        let store = store_with_pod();
        let never = FaultyApiServer::new(store.clone(), InjectedFaults { rate: 0.0, seed: 1 });
        assert!((0..1000).all(|_| never.get_pod("ns", "a").is_ok()));
        let always = FaultyApiServer::new(store, InjectedFaults { rate: 1.0, seed: 1 });
        assert!((0..1000).all(|_| matches!(always.get_pod("ns", "a"), Err(ApiError::Unavailable { .. }))));
    }

    #[test]
    fn a_lost_answer_still_wrote() {
        let store = store_with_pod();
        let always = FaultyApiServer::new(store.clone(), InjectedFaults { rate: 1.0, seed: 7 });
        let before = store.resource_version();
        let mut refused = 0;
        let mut lost = 0;
        for _ in 0..200 {
            let update = StatusUpdate { namespace: "ns".into(), name: "a".into(), ..StatusUpdate::default() };
            let written_before = store.resource_version();
            let Err(ApiError::Unavailable { message }) = always.update_pod_status(update) else { panic!("fails") };
            let wrote = store.resource_version() > written_before;
            assert_eq!(wrote, message.contains("answer was lost"), "{message}");
            if wrote { lost += 1 } else { refused += 1 }
        }
        assert!(refused > 50 && lost > 50, "both kinds happen: {refused} refused, {lost} lost");
        assert!(store.resource_version() > before);
    }

    #[test]
    fn about_the_rate_fails() {
        let faulty = FaultyApiServer::new(store_with_pod(), InjectedFaults { rate: 0.1, seed: 3 });
        let failed = (0..10_000).filter(|_| faulty.get_pod("ns", "a").is_err()).count();
        assert!((800..1200).contains(&failed), "{failed} of 10000");
    }
}
