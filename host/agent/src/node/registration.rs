//! A virtual node's presence in the API server, as the kubelet keeps its own: it
//! registers its Node (retrying with backoff what can succeed later; a permanent
//! refusal, a 4xx other than 409 and 429, ends it and is kept for the agent to stop
//! on; an existing Node of the same name gets its labels and taint reconciled), reports the node's status every
//! `nodeStatusUpdateFrequency` when it changed and every `nodeStatusReportFrequency`
//! regardless, registers again if the Node is deleted, and renews its Lease
//! ([`crate::node::lease`]). On shutdown it reports Ready False, "node is shutting
//! down", as the kubelet's graceful node shutdown does.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, PostParams};

use super::heartbeat::Pacer;
use super::lease;
use super::object::{self, NodeConfig, Readiness};

/// The first pause after a failed registration; doubled up to [`MAX_RETRY`] (the
/// kubelet's registration backoff: 100 ms to 7 s).
const FIRST_RETRY: Duration = Duration::from_millis(100);
const MAX_RETRY: Duration = Duration::from_secs(7);
/// Attempts of one status write that meets conflicts (the kubelet's
/// `nodeStatusUpdateRetry`).
const STATUS_ATTEMPTS: usize = 5;

/// What can go wrong reporting the node.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// The API server refused or failed a call.
    #[error("node {node}: {source}")]
    Api {
        /// The node.
        node: String,
        /// What the client said.
        #[source]
        source: kube::Error,
    },
    /// The report did not finish in time.
    #[error("node {0}: no answer from the API server in time")]
    Timeout(String),
}

/// The API server's permanent refusal of the node's registration: what it answered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the API server refused to register node {node} ({code} {reason}): {message}")]
pub struct Refusal {
    /// The node.
    pub node: String,
    /// The HTTP status (`422`, `403`).
    pub code: u16,
    /// The Status reason (`Invalid`, `Forbidden`).
    pub reason: String,
    /// The server's message.
    pub message: String,
}

/// Whether the API server's answer is final: a 4xx other than 409 (Conflict: another
/// writer, try again) and 429 (TooManyRequests: later) will be the same next time. A
/// 5xx, a timeout or no connection may not be.
pub fn is_permanent(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if (400..500).contains(&status.code) && !matches!(status.code, 409 | 429))
}

/// The running registration: status reports and Lease renewals, on the agent's runtime.
/// Dropping it stops both (the Node stays as last reported, as a stopped kubelet's).
pub struct NodeRegistration {
    config: NodeConfig,
    nodes: Api<Node>,
    shutting_down: Arc<AtomicBool>,
    /// Set, once, when the API server refused the registration for good.
    refusal: Arc<std::sync::Mutex<Option<Refusal>>>,
    renewals: Arc<AtomicU64>,
    late_renewals: Arc<AtomicU64>,
    /// The holder that took the Lease, once one did.
    lost: Arc<std::sync::Mutex<Option<String>>>,
    runtime: tokio::runtime::Handle,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl NodeRegistration {
    /// Starts registering `config`'s node and renewing its Lease through `client` on
    /// `runtime`. Returns at once: registration is retried in the background until it
    /// succeeds, as the kubelet's is.
    pub fn start(client: kube::Client, config: NodeConfig, runtime: &tokio::runtime::Handle) -> Self {
        let nodes: Api<Node> = Api::all(client.clone());
        let shutting_down = Arc::new(AtomicBool::new(false));
        let refusal = Arc::new(std::sync::Mutex::new(None));
        let renewals = Arc::new(AtomicU64::new(0));
        let late_renewals = Arc::new(AtomicU64::new(0));
        let reporter = Reporter {
            nodes: nodes.clone(),
            config: config.clone(),
            shutting_down: Arc::clone(&shutting_down),
            refusal: Some(Arc::clone(&refusal)),
        };
        let (counted, late) = (Arc::clone(&renewals), Arc::clone(&late_renewals));
        let lease_duration = config.lease_duration;
        // The renew time before, to tell a renewal that came after the Lease expired.
        let mut previous: Option<jiff::Timestamp> = None;
        let lost = Arc::new(std::sync::Mutex::new(None));
        let lost_to = Arc::clone(&lost);
        let lease = lease::renew_forever(
            client,
            config.name.clone(),
            config.lease_holder.clone(),
            config.lease_duration,
            Pacer::new(&config.name, config.lease_renew_interval(), config.heartbeat_phase),
            move |renewed| {
                counted.fetch_add(1, Ordering::Relaxed);
                if previous.is_some_and(|before| expired_between(before, renewed.0, lease_duration)) {
                    late.fetch_add(1, Ordering::Relaxed);
                }
                previous = Some(renewed.0);
            },
            move |holder| *lost_to.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(holder),
        );
        let tasks = vec![runtime.spawn(reporter.run()), runtime.spawn(lease)];
        NodeRegistration {
            config,
            nodes,
            shutting_down,
            refusal,
            renewals,
            late_renewals,
            lost,
            runtime: runtime.clone(),
            tasks,
        }
    }

    /// The holder that took the node's Lease, once one did (only a node with a holder of
    /// its own loses its Lease: see [`NodeConfig::lease_holder`]); its renewals have
    /// stopped, and whoever runs the node must stop running it.
    pub fn lease_lost(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The API server's permanent refusal of the registration, once it came (the
    /// registration then stops trying; an agent stops on it, as nothing it does can
    /// make the node appear).
    pub fn refusal(&self) -> Option<Refusal> {
        self.refusal.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Successful Lease renewals so far (the first is the Lease's creation).
    pub fn lease_renewals(&self) -> u64 {
        self.renewals.load(Ordering::Relaxed)
    }

    /// Renewals that came after the Lease had expired (more than its duration after the
    /// renewal before): each is a stretch in which the node controller could have marked
    /// the node unreachable.
    pub fn late_renewals(&self) -> u64 {
        self.late_renewals.load(Ordering::Relaxed)
    }

    /// Reports the node as shutting down (Ready False, `KubeletNotReady`, "node is
    /// shutting down") now, and keeps reporting it so; blocks the calling thread (not
    /// a runtime worker) for at most `timeout`.
    pub fn mark_shutting_down(&self, timeout: Duration) -> Result<(), NodeError> {
        self.shutting_down.store(true, Ordering::SeqCst);
        let reporter = Reporter {
            nodes: self.nodes.clone(),
            config: self.config.clone(),
            shutting_down: Arc::clone(&self.shutting_down),
            refusal: None,
        };
        let name = self.config.name.clone();
        match self.runtime.block_on(async { tokio::time::timeout(timeout, reporter.report(true)).await }) {
            Ok(result) => result.map(|_| ()),
            Err(_) => Err(NodeError::Timeout(name)),
        }
    }
}

/// Whether a Lease renewed at `before` for `duration` had expired by `after`.
fn expired_between(before: jiff::Timestamp, after: jiff::Timestamp, duration: Duration) -> bool {
    after.duration_since(before).as_secs_f64() > duration.as_secs_f64()
}

impl Drop for NodeRegistration {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl std::fmt::Debug for NodeRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeRegistration").field("node", &self.config.name).finish_non_exhaustive()
    }
}

/// The status reporting task.
struct Reporter {
    nodes: Api<Node>,
    config: NodeConfig,
    shutting_down: Arc<AtomicBool>,
    /// Where a permanent refusal of the registration is kept (the running task's).
    refusal: Option<Arc<std::sync::Mutex<Option<Refusal>>>>,
}

impl Reporter {
    async fn run(self) {
        let mut registered = false;
        let mut retry = FIRST_RETRY;
        let mut last_report: Option<Instant> = None;
        let mut pacer = Pacer::new(&self.config.name, self.config.status_update_frequency, self.config.heartbeat_phase);
        loop {
            if !registered {
                match self.register().await {
                    Ok(()) => {
                        tracing::info!(node = %self.config.name, "node registered");
                        registered = true;
                        retry = FIRST_RETRY;
                        last_report = Some(Instant::now());
                    }
                    Err(error) => {
                        if let Some(refusal) = self.refusal_of(&error) {
                            tracing::info!(%refusal, "not registering the node again");
                            if let Some(kept) = &self.refusal {
                                *kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(refusal);
                            }
                            return;
                        }
                        tracing::warn!(%error, "registering the node failed; retrying in {retry:?}");
                        tokio::time::sleep(retry).await;
                        retry = (retry * 2).min(MAX_RETRY);
                        continue;
                    }
                }
            }
            tokio::time::sleep(pacer.next_wait()).await;
            let due = last_report.is_none_or(|at| at.elapsed() >= self.config.status_report_frequency);
            match self.report(due).await {
                Ok(true) => last_report = Some(Instant::now()),
                Ok(false) => {}
                Err(NodeError::Api { source: kube::Error::Api(status), .. }) if status.is_not_found() => {
                    tracing::warn!(node = %self.config.name, "the node was deleted; registering it again");
                    registered = false;
                }
                Err(error) => tracing::warn!(%error, "reporting the node's status failed"),
            }
        }
    }

    /// The refusal `error` is, if the API server's answer is final ([`is_permanent`]).
    fn refusal_of(&self, error: &NodeError) -> Option<Refusal> {
        let NodeError::Api { source, .. } = error else { return None };
        let kube::Error::Api(status) = source else { return None };
        is_permanent(source).then(|| Refusal {
            node: self.config.name.clone(),
            code: status.code,
            reason: status.reason.clone(),
            message: status.message.clone(),
        })
    }

    fn api_error(&self, source: kube::Error) -> NodeError {
        NodeError::Api { node: self.config.name.clone(), source }
    }

    fn readiness(&self) -> Readiness {
        if self.shutting_down.load(Ordering::SeqCst) { Readiness::ShuttingDown } else { Readiness::Ready }
    }

    /// Creates the Node; one that exists already (a restart, another registration)
    /// gets the labels and taint this node needs, its other fields kept.
    async fn register(&self) -> Result<(), NodeError> {
        let mut node = object::node(&self.config, jiff::Timestamp::now());
        if self.readiness() == Readiness::ShuttingDown {
            node.status = Some(object::status(&self.config, None, Readiness::ShuttingDown, jiff::Timestamp::now()));
        }
        match self.nodes.create(&PostParams::default(), &node).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => return Err(self.api_error(error)),
        }
        let mut existing = self.nodes.get(&self.config.name).await.map_err(|e| self.api_error(e))?;
        existing.metadata.labels.get_or_insert_with(Default::default).extend(object::labels(&self.config));
        let taints = existing.spec.get_or_insert_with(Default::default).taints.get_or_insert_with(Vec::new);
        if !taints.iter().any(|t| t.key == object::VIRTUAL_NODE_TAINT) {
            taints.push(object::taint());
        }
        self.nodes
            .replace(&self.config.name, &PostParams::default(), &existing)
            .await
            .map_err(|e| self.api_error(e))?;
        self.report(true).await.map(|_| ())
    }

    /// Writes the status if it changed, or whatever it is when `force`; true when it
    /// was written. A conflict (another writer between the read and the write) reads
    /// again, up to [`STATUS_ATTEMPTS`] times.
    async fn report(&self, force: bool) -> Result<bool, NodeError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut node = self.nodes.get(&self.config.name).await.map_err(|e| self.api_error(e))?;
            let status = object::status(&self.config, node.status.as_ref(), self.readiness(), jiff::Timestamp::now());
            if !force && !object::changed(node.status.as_ref(), &status) {
                return Ok(false);
            }
            node.status = Some(status);
            match self.nodes.replace_status(&self.config.name, &PostParams::default(), &node).await {
                Ok(_) => return Ok(true),
                Err(kube::Error::Api(status)) if status.code == 409 && attempt < STATUS_ATTEMPTS => continue,
                Err(error) => return Err(self.api_error(error)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16) -> kube::Error {
        kube::Error::Api(kube::core::Status::failure("m", "R").with_code(code).boxed())
    }

    #[test]
    fn a_4xx_is_final_but_a_conflict_or_a_throttle_is_not() {
        for code in [400, 401, 403, 404, 422] {
            assert!(is_permanent(&api_error(code)), "{code}");
        }
        for code in [409, 429, 500, 503, 504] {
            assert!(!is_permanent(&api_error(code)), "{code}");
        }
    }

    #[test]
    fn a_renewal_is_late_only_past_the_lease_duration() {
        let before: jiff::Timestamp = "2026-12-04T10:00:00Z".parse().unwrap();
        let at = |seconds: i64| before + jiff::SignedDuration::from_secs(seconds);
        let duration = Duration::from_secs(40);
        assert!(!expired_between(before, at(10), duration), "on time, every quarter");
        assert!(!expired_between(before, at(40), duration), "at the last instant the Lease held");
        assert!(expired_between(before, at(41), duration), "the Lease had expired");
        assert!(!expired_between(before, at(-5), duration), "a clock that stepped back is not lateness");
    }
}
