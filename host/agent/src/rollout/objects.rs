//! The fleet's `PluginRollout` objects through the Kubernetes API
//! ([`RolloutObjects`]): listed, and their status updated by read, change and replace
//! with the resourceVersion read (a conflict, another shard's report in between, is
//! read again and retried), from a thread that is not the I/O runtime's.

use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use podstatus_rollout_api::{API_VERSION, GROUP, KIND, PLURAL, PluginRollout, VERSION};

/// How long one call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Attempts of one status update that meets conflicts.
const ATTEMPTS: usize = 8;

/// Why a rollout object could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RolloutObjectError {
    /// The API server refused or failed the call.
    #[error("pluginrollouts: {0}")]
    Api(#[source] Box<kube::Error>),
    /// No answer in time.
    #[error("pluginrollouts: no answer within {CALL_TIMEOUT:?}")]
    Timeout,
    /// An object that is not a PluginRollout.
    #[error("pluginrollout {name}: {source}")]
    Decode {
        /// Its name.
        name: String,
        /// What did not parse.
        #[source]
        source: serde_json::Error,
    },
    /// Every attempt met a conflict.
    #[error("pluginrollout {0}: still conflicting after {ATTEMPTS} attempts")]
    Conflicts(String),
}

/// The rollouts of one namespace.
#[derive(Clone)]
pub struct RolloutObjects {
    api: Api<DynamicObject>,
    runtime: tokio::runtime::Handle,
}

impl RolloutObjects {
    /// The rollouts in `namespace`, reached through `client` on `runtime`.
    pub fn new(client: kube::Client, namespace: &str, runtime: tokio::runtime::Handle) -> RolloutObjects {
        let resource = ApiResource {
            group: GROUP.into(),
            version: VERSION.into(),
            api_version: API_VERSION.into(),
            kind: KIND.into(),
            plural: PLURAL.into(),
        };
        RolloutObjects { api: Api::namespaced_with(client, namespace, &resource), runtime }
    }

    /// The rollouts of the fleet `fleet`, oldest first (by creation, then name). One
    /// that does not parse is skipped with a warning: it is no one's to carry out.
    pub fn list(&self, fleet: &str) -> Result<Vec<PluginRollout>, RolloutObjectError> {
        let listed = self.call(self.api.list(&ListParams::default()))?;
        let mut rollouts: Vec<PluginRollout> = listed
            .items
            .into_iter()
            .filter_map(|object| match decode(object) {
                Ok(rollout) => Some(rollout),
                Err(error) => {
                    tracing::warn!(%error, "skipping a pluginrollout");
                    None
                }
            })
            .filter(|rollout| rollout.spec.fleet == fleet)
            .collect();
        rollouts.sort_by(|a, b| {
            let created = |r: &PluginRollout| r.metadata.creation_timestamp.as_ref().map(|t| t.0);
            created(a).cmp(&created(b)).then_with(|| a.metadata.name.cmp(&b.metadata.name))
        });
        Ok(rollouts)
    }

    /// Reads `name`, lets `change` change it (its status; `false`: nothing to write) and
    /// writes the status back, again from a fresh read on a conflict.
    pub fn update_status(
        &self,
        name: &str,
        mut change: impl FnMut(&mut PluginRollout) -> bool,
    ) -> Result<(), RolloutObjectError> {
        for _ in 0..ATTEMPTS {
            let mut rollout = decode(self.call(self.api.get(name))?)?;
            if !change(&mut rollout) {
                return Ok(());
            }
            let object = encode(&rollout, name)?;
            match self.runtime.block_on(async {
                tokio::time::timeout(CALL_TIMEOUT, self.api.replace_status(name, &PostParams::default(), &object)).await
            }) {
                Ok(Ok(_)) => return Ok(()),
                Ok(Err(kube::Error::Api(status))) if status.code == 409 => continue,
                Ok(Err(error)) => return Err(RolloutObjectError::Api(Box::new(error))),
                Err(_) => return Err(RolloutObjectError::Timeout),
            }
        }
        Err(RolloutObjectError::Conflicts(name.to_owned()))
    }

    /// Sets the operator's decision (`spec.decision`: `Promote` or `RollBack`) on `name`,
    /// for the leader to carry out.
    pub fn decide(&self, name: &str, decision: &str) -> Result<PluginRollout, RolloutObjectError> {
        for _ in 0..ATTEMPTS {
            let mut rollout = decode(self.call(self.api.get(name))?)?;
            rollout.spec.decision = Some(decision.to_owned());
            let object = encode(&rollout, name)?;
            match self.runtime.block_on(async {
                tokio::time::timeout(CALL_TIMEOUT, self.api.replace(name, &PostParams::default(), &object)).await
            }) {
                Ok(Ok(written)) => return decode(written),
                Ok(Err(kube::Error::Api(status))) if status.code == 409 => continue,
                Ok(Err(error)) => return Err(RolloutObjectError::Api(Box::new(error))),
                Err(_) => return Err(RolloutObjectError::Timeout),
            }
        }
        Err(RolloutObjectError::Conflicts(name.to_owned()))
    }

    fn call<T>(&self, future: impl Future<Output = Result<T, kube::Error>>) -> Result<T, RolloutObjectError> {
        match self.runtime.block_on(async { tokio::time::timeout(CALL_TIMEOUT, future).await }) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(RolloutObjectError::Api(Box::new(error))),
            Err(_) => Err(RolloutObjectError::Timeout),
        }
    }
}

fn encode(rollout: &PluginRollout, name: &str) -> Result<DynamicObject, RolloutObjectError> {
    serde_json::to_value(rollout)
        .and_then(serde_json::from_value)
        .map_err(|source| RolloutObjectError::Decode { name: name.to_owned(), source })
}

fn decode(object: DynamicObject) -> Result<PluginRollout, RolloutObjectError> {
    let name = object.metadata.name.clone().unwrap_or_default();
    serde_json::to_value(object)
        .and_then(serde_json::from_value)
        .map_err(|source| RolloutObjectError::Decode { name, source })
}

/// The rollout being carried out of `rollouts` (as [`RolloutObjects::list`] orders
/// them): the oldest not decided yet. Shards and the leader agree on it, so one canary
/// runs at a time and a later rollout waits its turn.
pub fn current(rollouts: &[PluginRollout]) -> Option<&PluginRollout> {
    rollouts.iter().find(|r| !r.status.as_ref().and_then(|s| s.phase).is_some_and(|p| p.is_final()))
}
