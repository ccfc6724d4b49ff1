//! A logic version since 1.27: a release's decisions written in a write mode
//! ([`Logic`]), and its updates ([`Policy`]), the same for every mode.

use crate::engine::Engine;
use crate::engine::sync_policy::SyncPolicy;
use crate::error::Result;
use crate::imports::{Imports, SyncRequest};
use crate::jobs::PodSync;
use crate::manager::{ContainerProbe, Policy, no_resize, no_resize_conditions};
use crate::outcomes::UpdateOutcome;
use crate::resize::ResizeCondition;

use super::decisions::Release;
use super::{signal, updates};

/// The logic version that makes release `R`'s decisions ([`Release`]) and writes in
/// mode `M` (`crate::ReadThenPatch`: upstream's GET, merge over the status read and
/// PATCH; `crate::OneCall`: one PATCH per status version, no GET). Its updates are the
/// release's whatever the mode; its [`SyncPolicy`] is the mode's, over the release's
/// merge and equality.
#[derive(Clone, Copy, Debug, Default)]
pub struct Logic<R, M> {
    /// The release whose decisions it makes.
    pub release: R,
    /// How it writes.
    pub mode: M,
}

/// What a logic version follows, as the table of built-in plugins says it (`--help`,
/// `podstatus inspect`): the release whose status manager decides, and how it writes.
pub trait Follows {
    /// The Kubernetes release (`1.35`), or `2017` for the seed's kubelet.
    const RELEASE: &'static str;
    /// The write mode (`read-then-patch`, `one-call`; the seed's `read-then-update`).
    const MODE: &'static str;
}

/// The release's updates, its one-slot signal and pass, and its resize conditions
/// (where it has them).
impl<I: Imports, R: Release, M> Policy<I> for Logic<R, M>
where
    Self: SyncPolicy<I>,
{
    fn set_pod_status(&self, engine: &mut Engine<I>, pod_json: &str, status_json: &str) -> Result<UpdateOutcome> {
        updates::set_pod_status(&self.release, engine, pod_json, status_json)
    }

    fn set_container_readiness(&self, engine: &mut Engine<I>, probe: ContainerProbe<'_>) -> Result<UpdateOutcome> {
        updates::set_container_readiness(&self.release, engine, probe)
    }

    fn set_container_startup(&self, engine: &mut Engine<I>, probe: ContainerProbe<'_>) -> Result<UpdateOutcome> {
        updates::set_container_startup(&self.release, engine, probe)
    }

    fn terminate_pod(&self, engine: &mut Engine<I>, pod_json: &str) -> Result<UpdateOutcome> {
        updates::terminate_pod(&self.release, engine, pod_json)
    }

    fn plan_sync_pod(&self, engine: &mut Engine<I>, request: &SyncRequest) -> Result<Vec<PodSync>> {
        signal::plan_pass(engine, request)
    }

    /// `SetPodResizePendingCondition` / `SetPodResizeInProgressCondition`.
    fn set_pod_resize_condition(
        &self,
        engine: &mut Engine<I>,
        pod_uid: &str,
        condition: ResizeCondition,
        reason: &str,
        message: &str,
        observed_generation: i64,
    ) -> Result<()> {
        if !R::RESIZE_CONDITIONS {
            return Err(no_resize(condition));
        }
        let reason = match condition {
            ResizeCondition::Pending => self.release.resize_pending_reason(reason),
            ResizeCondition::InProgress => reason,
        };
        engine.set_resize_condition(pod_uid, condition, reason, message, observed_generation)
    }

    /// `ClearPodResizePendingCondition` / `ClearPodResizeInProgressCondition`.
    fn clear_pod_resize_condition(
        &self,
        engine: &mut Engine<I>,
        pod_uid: &str,
        condition: ResizeCondition,
    ) -> Result<bool> {
        if !R::RESIZE_CONDITIONS {
            return Err(no_resize(condition));
        }
        Ok(engine.clear_resize_condition(pod_uid, condition))
    }

    /// `GetPodResizeConditions`.
    fn get_pod_resize_conditions(&self, engine: &mut Engine<I>, pod_uid: &str) -> Result<Vec<String>> {
        if !R::RESIZE_CONDITIONS {
            return Err(no_resize_conditions());
        }
        engine.resize_conditions_json(pod_uid)
    }
}
