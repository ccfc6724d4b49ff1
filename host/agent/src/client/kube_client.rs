//! [`KubeApiServer`]: the [`ApiServer`] trait on kube-rs, talking to a real Kubernetes
//! API server (or the embedded one) over HTTP(S).
//!
//! # Calls from plain threads
//! The trait is synchronous and is called from plain threads: the scheduler thread and
//! the threads of the handle's callers, while they hold the plugin lock. Each call is
//! spawned onto the tokio runtime of the [`Handle`] given at construction (which must
//! have I/O and time enabled, as kube itself needs: `Builder::enable_all`) and the
//! calling thread waits for the answer on a std channel, for at most the call timeout.
//! Nothing here enters the runtime, so there is no "runtime within a runtime" panic; a
//! call made from inside an async task (where waiting would stall a worker) is refused
//! with [`ApiError::Internal`] instead. `spawn_blocking` threads are plain threads and
//! may call.
//!
//! # Never blocking other threads for long
//! A 0.2.0 plugin never calls the API server: the host's API-call workers make its
//! syncs' calls holding no lock, and wait for their token like any client (bounded by
//! the call timeout, see [`podstatus_backends::patience`]). A 0.1.x plugin's calls run
//! under the plugin mutex (see [`podstatus_runtime::ManagerHandle`]), inside its
//! `sync-pod`, so for them every wait here is also every other thread's wait:
//! - **Rate limit outside the lock.** The [`RateLimiter`] (QPS and burst, the kubelet's
//!   `--kube-api-qps` / `--kube-api-burst`) is also an [`Admission`]: the scheduler waits
//!   for tokens with [`Admission::wait_ready`] *before* it takes the lock for a sync.
//! - **No token wait inside.** A call takes its token waiting at most
//!   [`KubeClientConfig::throttle_wait`] (default zero: a batch sync pacing its writes
//!   under the lock would hold every other thread for seconds); when none is there the
//!   call fails at once with [`ApiError::Unavailable`] ("client-side throttling ...").
//!   The status stays cached in the plugin and the next batch sync writes it, as it
//!   does after any failed write.
//! - **Per-call timeout.** Every request is bounded by
//!   [`KubeClientConfig::call_timeout`]; the abandoned request is aborted.
//! - **Circuit breaker.** After a transport failure or a timeout, calls fail fast with
//!   [`ApiError::Unavailable`] for a backoff window (100 ms doubling to 5 s by default),
//!   then one probe goes through (see [`CircuitBreaker`]). A dead server thus costs the
//!   lock one call timeout, then microseconds per call.
//! - kube's own retries of 429/503/504 are off for clients built by
//!   [`super::kubeconfig::connect`]: they would wait under the lock,
//!   uncounted by the rate limit; the status manager retries from its batch sync.
//!
//! # Errors
//! 404 → [`ApiError::NotFound`]; 409 → [`ApiError::Conflict`] (or
//! [`ApiError::AlreadyExists`] for the reason `AlreadyExists`); 401/403 →
//! [`ApiError::Forbidden`]; 400/422 → [`ApiError::Invalid`]; 429/503/504, transport
//! failures, timeouts, throttling and the open circuit → [`ApiError::Unavailable`];
//! anything else → [`ApiError::Internal`]. The server's own message is kept.

use std::future::Future;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, GetParams, Patch, PatchParams, PostParams, Preconditions};
use kube::core::Status;
use kube::{Api, Resource};
use tokio::runtime::Handle;

use super::call_counts::{CallCount, CallCounters, Outcome, Verb};
use super::circuit_breaker::{Admit, CircuitBreaker};
use super::rate_limit::{RateLimitError, RateLimiter};
use podstatus_backends::{
    ApiError, ApiServer, CompactPod, CompactPodError, DeleteOptions, Result, StatusPatch, StatusUpdate,
};

#[cfg(doc)]
use super::rate_limit::Admission;

/// The field manager our writes are recorded under (`metadata.managedFields`).
pub const FIELD_MANAGER: &str = "podstatus";

/// The product token of the status client's `User-Agent`: it tells the plugin's calls
/// (GET of a pod, status writes, DELETE) apart from the agent's other requests (the pod
/// watch, mirror pods, the node and its lease) in a server's audit log, and lets the
/// embedded server delay them alone (`simulate --api-latency`).
pub const STATUS_CLIENT_PRODUCT: &str = "podstatus-status-manager/";
/// The status client's whole `User-Agent`: [`STATUS_CLIENT_PRODUCT`] and the version.
pub const STATUS_CLIENT_USER_AGENT: &str = concat!("podstatus-status-manager/", env!("CARGO_PKG_VERSION"));

/// `config` for the status client: the same server and credentials, sending
/// [`STATUS_CLIENT_USER_AGENT`].
pub fn status_client_config(mut config: kube::Config) -> kube::Config {
    config.headers.retain(|(name, _)| name != http::header::USER_AGENT);
    config.headers.push((http::header::USER_AGENT, http::HeaderValue::from_static(STATUS_CLIENT_USER_AGENT)));
    config
}

/// How the client paces and bounds its calls.
#[derive(Clone, Debug, PartialEq)]
pub struct KubeClientConfig {
    /// Calls per second, sustained (the kubelet's `--kube-api-qps`, default 50).
    pub qps: f32,
    /// Calls that may go at once (the kubelet's `--kube-api-burst`, default 100).
    pub burst: u32,
    /// The longest a call may take, default 5 s. Kubernetes' API call latency SLO puts
    /// the 99th percentile of single-object calls under 1 s, so a healthy server is far
    /// inside it; and since the call holds the plugin lock, this is also how long a
    /// dead server can keep other threads waiting before the circuit breaker opens.
    pub call_timeout: Duration,
    /// The longest a call waits for a rate-limit token, default zero: it would wait
    /// under the plugin lock, and a batch sync pacing hundreds of writes at the QPS
    /// there would hold every other Manager operation for seconds. Syncs from the queue
    /// wait for their tokens before taking the lock (the scheduler's admission), so
    /// they find them; a batch that runs dry has the rest refused at once, and the next
    /// batch writes them.
    pub throttle_wait: Duration,
    /// The first fail-fast window after a transport failure or timeout, default 100 ms.
    pub breaker_initial_backoff: Duration,
    /// The longest fail-fast window (each failed probe doubles it), default 5 s.
    pub breaker_max_backoff: Duration,
}

impl Default for KubeClientConfig {
    fn default() -> Self {
        KubeClientConfig {
            qps: 50.0,
            burst: 100,
            call_timeout: Duration::from_secs(5),
            throttle_wait: Duration::ZERO,
            breaker_initial_backoff: Duration::from_millis(100),
            breaker_max_backoff: Duration::from_secs(5),
        }
    }
}

/// A [`KubeClientConfig`] that cannot be used.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum KubeClientError {
    /// QPS or burst out of range.
    #[error(transparent)]
    RateLimit(#[from] RateLimitError),
    /// A zero call timeout would fail every call.
    #[error("the call timeout must be positive")]
    ZeroCallTimeout,
}

/// The [`ApiServer`] trait over HTTP(S) with kube-rs. Thread-safe; share it in an `Arc`.
pub struct KubeApiServer {
    /// The runtime that carries the requests (see the module doc).
    handle: Handle,
    client: kube::Client,
    config: KubeClientConfig,
    /// Shared with the scheduler's admission, hence `Arc`.
    limiter: Arc<RateLimiter>,
    breaker: CircuitBreaker,
    counters: CallCounters,
    /// The pods the last GETs returned, for the status update that follows them.
    read: LastRead,
}

/// The pods the client's GETs returned, each kept until a status update of that pod at
/// that resourceVersion takes it. A PUT of `pods/status` replaces the pod's metadata
/// too: a real kube-apiserver keeps only the spec and owner references of the stored
/// pod, so a body that carries the status alone wipes the pod's labels, annotations
/// and finalizers (seen against kube-apiserver 1.35: logic v1 left every pod bare, and
/// a mirror pod's update was refused for losing `kubernetes.io/config.mirror`). The
/// body therefore carries the metadata of the pod as read: the one the plugin's own GET
/// returned (logic v1 reads before each write), else one read for it. Kept as the
/// server's text: only a PUT that follows parses the metadata off it.
#[derive(Default)]
struct LastRead {
    pods: std::sync::Mutex<std::collections::HashMap<(String, String), Arc<CompactPod>>>,
}

/// Reads kept at most; past it the oldest are forgotten all at once (a GET not followed
/// by an update is kept until then: a node's pods, or a fleet's, at most).
const LAST_READ_LIMIT: usize = 4096;

impl LastRead {
    fn remember(&self, pod: &Arc<CompactPod>) {
        let (Some(namespace), Some(name)) = (pod.namespace(), pod.name()) else { return };
        let mut pods = self.pods.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if pods.len() >= LAST_READ_LIMIT {
            pods.clear();
        }
        pods.insert((namespace.to_owned(), name.to_owned()), Arc::clone(pod));
    }

    /// The pod read last, if it is at `resource_version`.
    fn take(&self, namespace: &str, name: &str, resource_version: Option<&str>) -> Option<Arc<CompactPod>> {
        let mut pods = self.pods.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let pod = pods.remove(&(namespace.to_owned(), name.to_owned()))?;
        (resource_version.is_some() && pod.resource_version() == resource_version).then_some(pod)
    }

    fn forget(&self, namespace: &str, name: &str) {
        let mut pods = self.pods.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        pods.remove(&(namespace.to_owned(), name.to_owned()));
    }
}

impl KubeApiServer {
    /// A client sending its requests through `client` on the runtime of `handle`.
    pub fn new(handle: Handle, client: kube::Client, config: KubeClientConfig) -> Result<Self, KubeClientError> {
        if config.call_timeout.is_zero() {
            return Err(KubeClientError::ZeroCallTimeout);
        }
        let limiter = Arc::new(RateLimiter::new(config.qps, config.burst)?);
        let breaker = CircuitBreaker::new(config.breaker_initial_backoff, config.breaker_max_backoff);
        Ok(KubeApiServer {
            handle,
            client,
            config,
            limiter,
            breaker,
            counters: CallCounters::default(),
            read: LastRead::default(),
        })
    }

    /// The client's rate limiter: give it to the scheduler as its
    /// [`podstatus_runtime::SchedulerConfig::admission`], so that syncs wait for tokens
    /// before they take the plugin lock.
    pub fn rate_limiter(&self) -> Arc<RateLimiter> {
        Arc::clone(&self.limiter)
    }

    /// The configuration the client runs with.
    pub fn config(&self) -> &KubeClientConfig {
        &self.config
    }

    /// Every (verb, outcome) counter since the client was built, zeros included.
    pub fn call_counts(&self) -> Vec<CallCount> {
        self.counters.snapshot()
    }

    /// Calls of `verb` that ended with `outcome`.
    pub fn call_count(&self, verb: Verb, outcome: Outcome) -> u64 {
        self.counters.get(verb, outcome)
    }

    /// Whether calls currently fail fast because the server stopped answering.
    pub fn circuit_open(&self) -> bool {
        self.breaker.is_open()
    }

    fn pods(&self, namespace: &str) -> Api<Pod> {
        Api::namespaced(self.client.clone(), namespace)
    }

    /// Makes the request `build` gives for the pods of `namespace` (kube-rs names it
    /// `label` in its traces, as its own `Api` methods do) and keeps the answer as the
    /// server's text, read for its fields ([`CompactPod::from_serialized`]): what the
    /// plugin is handed is the server's own bytes, never parsed into a tree and written
    /// again on the way.
    fn call_for_text<B>(
        &self,
        verb: Verb,
        namespace: &str,
        name: &str,
        label: &'static str,
        build: B,
    ) -> Result<Arc<CompactPod>>
    where
        B: FnOnce(kube::core::Request) -> std::result::Result<http::Request<Vec<u8>>, kube::Error> + Send + 'static,
    {
        let client = self.client.clone();
        let pods = kube::core::Request::new(Pod::url_path(&(), Some(namespace)));
        self.call(verb, namespace, name, async move {
            let mut request = build(pods)?;
            request.extensions_mut().insert(label);
            let text = client.request_text(request).await?;
            CompactPod::from_serialized(text).map(Arc::new).map_err(|error| match error {
                CompactPodError::Json(error) => kube::Error::SerdeError(error),
                too_large => kube::Error::SerdeError(serde::de::Error::custom(too_large)),
            })
        })
    }

    /// Refuses a namespace or name that could not name a pod before it goes into a URL:
    /// kube-rs puts them in the path unescaped, so `a?b` would read pod `a` and `a/b`
    /// another resource. Counted as an invalid call.
    fn check_names(&self, verb: Verb, namespace: &str, name: &str) -> Result<()> {
        match invalid_names(namespace, name) {
            None => Ok(()),
            Some(error) => {
                self.counters.record(verb, Outcome::Invalid);
                Err(error)
            }
        }
    }

    /// Runs one request under the breaker, the rate limit and the call timeout, and
    /// counts it.
    fn call<T, F>(&self, verb: Verb, namespace: &str, name: &str, request: F) -> Result<T>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, kube::Error>> + Send + 'static,
    {
        let (result, outcome) = self.call_uncounted(namespace, name, request);
        self.counters.record(verb, outcome);
        if let Err(e) = &result {
            tracing::debug!(verb = verb.as_str(), namespace, name, outcome = outcome.as_str(), "API call failed: {e}");
        }
        result
    }

    fn call_uncounted<T, F>(&self, namespace: &str, name: &str, request: F) -> (Result<T>, Outcome)
    where
        T: Send + 'static,
        F: Future<Output = Result<T, kube::Error>> + Send + 'static,
    {
        if tokio::task::try_id().is_some() {
            let message = "the kube-rs API server client was called from inside an async task, where waiting \
                           would stall the runtime; call it from a plain thread or spawn_blocking"
                .to_owned();
            return (Err(ApiError::Internal { message }), Outcome::Error);
        }
        let permit = match self.breaker.admit() {
            Admit::Go(permit) => permit,
            Admit::Open { retry_in } => {
                let message = format!(
                    "the API server did not answer recently (circuit open; next probe in {} ms)",
                    retry_in.as_millis()
                );
                return (Err(ApiError::Unavailable { message }), Outcome::CircuitOpen);
            }
        };
        // A thread that holds no lock waits like any client, bounded by the timeout.
        let wait =
            podstatus_backends::patience::current().unwrap_or(self.config.throttle_wait).min(self.config.call_timeout);
        if !self.limiter.acquire_within(wait) {
            let message = format!(
                "client-side throttling: no token within {} ms (qps {}, burst {}); the status stays cached",
                wait.as_millis(),
                self.config.qps,
                self.config.burst
            );
            // The permit drops undecided: if it was the probe, the next call probes.
            return (Err(ApiError::Unavailable { message }), Outcome::Throttled);
        }
        match run_bounded(&self.handle, self.config.call_timeout, request) {
            Ok(Ok(value)) => {
                permit.reached();
                (Ok(value), Outcome::Ok)
            }
            Ok(Err(error)) => {
                let mapped = map_error(error, namespace, name);
                match mapped.reached {
                    Some(true) => permit.reached(),
                    Some(false) => {
                        tracing::warn!(namespace, name, "API server unreachable: {}", mapped.error);
                        permit.unreachable();
                    }
                    None => drop(permit),
                }
                (Err(mapped.error), mapped.outcome)
            }
            Err(Bounded::TimedOut) => {
                tracing::warn!(namespace, name, "API server gave no answer within {:?}", self.config.call_timeout);
                permit.unreachable();
                let message =
                    format!("no answer from the API server within {} ms", self.config.call_timeout.as_millis());
                (Err(ApiError::Unavailable { message }), Outcome::Timeout)
            }
            Err(Bounded::Lost) => {
                permit.unreachable();
                let message = "the request ended without an answer: the tokio runtime is shut down or the request \
                               panicked"
                    .to_owned();
                (Err(ApiError::Unavailable { message }), Outcome::Error)
            }
        }
    }
}

impl std::fmt::Debug for KubeApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeApiServer")
            .field("config", &self.config)
            .field("circuit_open", &self.breaker.is_open())
            .finish_non_exhaustive()
    }
}

impl ApiServer for KubeApiServer {
    fn get_pod(&self, namespace: &str, name: &str) -> Result<Arc<Pod>> {
        typed(self.get_pod_compact(namespace, name)?)
    }

    fn update_pod_status(&self, update: StatusUpdate) -> Result<Arc<Pod>> {
        typed(self.update_pod_status_compact(update)?)
    }

    fn patch_pod_status(&self, patch: StatusPatch) -> Result<Arc<Pod>> {
        typed(self.patch_pod_status_compact(patch)?)
    }

    fn get_pod_compact(&self, namespace: &str, name: &str) -> Result<Arc<CompactPod>> {
        self.check_names(Verb::Get, namespace, name)?;
        let owned = name.to_owned();
        let pod = self.call_for_text(Verb::Get, namespace, name, "get", move |pods| {
            pods.get(&owned, &GetParams::default()).map_err(kube::Error::BuildRequest)
        })?;
        self.read.remember(&pod);
        Ok(pod)
    }

    fn update_pod_status_compact(&self, update: StatusUpdate) -> Result<Arc<CompactPod>> {
        let StatusUpdate { namespace, name, uid_precondition, resource_version_precondition, status } = update;
        self.check_names(Verb::UpdateStatus, &namespace, &name)?;
        let resource_version = resource_version_precondition.filter(|rv| !rv.is_empty());
        // The pod's metadata as read ([`LastRead`]: a PUT replaces it).
        let read = match self.read.take(&namespace, &name, resource_version.as_deref()) {
            Some(pod) => pod,
            None => self.get_pod_compact(&namespace, &name)?,
        };
        self.read.forget(&namespace, &name);
        let read = read.metadata().map_err(|e| ApiError::Internal { message: e.to_string() })?;
        // The preconditions travel in the body, as the kubelet sends them: the server
        // refuses the write (409) when the stored object's UID or version differs. No
        // version asked for: an unconditional update, as before.
        let body = Pod {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                uid: uid_precondition.filter(|uid| !uid.is_empty()),
                resource_version,
                managed_fields: None,
                ..read
            },
            spec: None,
            status: Some(status),
        };
        let owned = name.clone();
        let params = PostParams { field_manager: Some(FIELD_MANAGER.to_owned()), ..PostParams::default() };
        self.call_for_text(Verb::UpdateStatus, &namespace, &name, "replace_status", move |pods| {
            let body = serde_json::to_vec(&body).map_err(kube::Error::SerdeError)?;
            pods.replace_subresource("status", &owned, &params, body).map_err(kube::Error::BuildRequest)
        })
    }

    fn patch_pod_status_compact(&self, patch: StatusPatch) -> Result<Arc<CompactPod>> {
        let StatusPatch { namespace, name, uid_precondition, patch } = patch;
        self.check_names(Verb::PatchStatus, &namespace, &name)?;
        let body = match with_uid(patch, uid_precondition.as_deref().filter(|uid| !uid.is_empty()), &name) {
            Ok(body) => body,
            Err(error) => {
                self.counters.record(Verb::PatchStatus, outcome_of(&error));
                return Err(error);
            }
        };
        let owned = name.clone();
        let params = PatchParams { field_manager: Some(FIELD_MANAGER.to_owned()), ..PatchParams::default() };
        self.call_for_text(Verb::PatchStatus, &namespace, &name, "patch_status", move |pods| {
            pods.patch_subresource("status", &owned, &params, &Patch::Strategic(body))
                .map_err(kube::Error::BuildRequest)
        })
    }

    fn delete_pod(&self, namespace: &str, name: &str, options: &DeleteOptions) -> Result<Arc<Pod>> {
        self.check_names(Verb::Delete, namespace, name)?;
        self.read.forget(namespace, name);
        let grace_period_seconds = match options.grace_period_seconds.map(u32::try_from).transpose() {
            Ok(grace) => grace,
            Err(_) => {
                self.counters.record(Verb::Delete, Outcome::Invalid);
                let message = format!(
                    "pods \"{name}\": grace period {:?} s is out of range (0 to {} s)",
                    options.grace_period_seconds,
                    u32::MAX
                );
                return Err(ApiError::Invalid { message });
            }
        };
        let uid = options.uid_precondition.clone().filter(|uid| !uid.is_empty());
        let resource_version = options.resource_version_precondition.clone().filter(|rv| !rv.is_empty());
        let preconditions =
            (uid.is_some() || resource_version.is_some()).then_some(Preconditions { uid, resource_version });
        let params = DeleteParams { grace_period_seconds, preconditions, ..DeleteParams::default() };
        let pods = self.pods(namespace);
        let (ns, owned) = (namespace.to_owned(), name.to_owned());
        self.call(Verb::Delete, namespace, name, async move {
            let deleted = pods.delete(&owned, &params).await?;
            // A pod comes back as the object (graceful deletion leaves it with a
            // deletionTimestamp); a server may also answer with a success Status.
            Ok(Arc::new(deleted.either(|pod| pod, |status| pod_of_status(&status, &ns, &owned))))
        })
    }
}

/// The typed pod of an answer kept as text (a parse, for callers of the typed methods).
fn typed(pod: Arc<CompactPod>) -> Result<Arc<Pod>> {
    pod.pod()
        .map(Arc::new)
        .map_err(|e| ApiError::Internal { message: format!("the API server's answer is not a pod: {e}") })
}

/// Why `namespace`/`name` cannot name a pod, as the API server would say it: the
/// namespace must be a DNS-1123 label, the name a DNS-1123 subdomain.
fn invalid_names(namespace: &str, name: &str) -> Option<ApiError> {
    fn is_label(text: &str) -> bool {
        let bytes = text.as_bytes();
        let alphanumeric = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        matches!((bytes.first(), bytes.last()), (Some(first), Some(last)) if alphanumeric(first) && alphanumeric(last))
            && bytes.iter().all(|b| alphanumeric(b) || *b == b'-')
    }
    let shown = |text: &str| text.chars().take(64).collect::<String>().escape_debug().to_string();
    if namespace.len() > 63 || !is_label(namespace) {
        let message = format!(
            "namespace \"{}\" is invalid: must be a lowercase RFC 1123 label of at most 63 characters",
            shown(namespace)
        );
        return Some(ApiError::Invalid { message });
    }
    if name.len() > 253 || !name.split('.').all(is_label) {
        let message = format!(
            "pods \"{}\" is invalid: the name must be a lowercase RFC 1123 subdomain of at most 253 characters",
            shown(name)
        );
        return Some(ApiError::Invalid { message });
    }
    None
}

/// How a kube-rs error maps, and what it says about the server's reachability
/// (`None`: the request never left).
struct Mapped {
    error: ApiError,
    outcome: Outcome,
    reached: Option<bool>,
}

fn map_error(error: kube::Error, namespace: &str, name: &str) -> Mapped {
    match error {
        kube::Error::Api(status) => {
            let error = from_status(&status, namespace, name);
            Mapped { outcome: outcome_of(&error), error, reached: Some(true) }
        }
        kube::Error::HyperError(e) => transport(&e),
        kube::Error::Service(e) => transport(&*e),
        kube::Error::SerdeError(e) => Mapped {
            error: ApiError::Internal { message: format!("the API server's answer is not a pod: {e}") },
            outcome: Outcome::Error,
            reached: Some(true),
        },
        kube::Error::BuildRequest(e) => Mapped {
            error: ApiError::Invalid { message: format!("pods \"{name}\": {e}") },
            outcome: Outcome::Invalid,
            reached: None,
        },
        other => {
            Mapped { error: ApiError::Internal { message: other.to_string() }, outcome: Outcome::Error, reached: None }
        }
    }
}

fn transport(error: &(dyn std::error::Error + 'static)) -> Mapped {
    let mut message = error.to_string();
    // hyper's top-level message ("client error (Connect)") hides the cause.
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    Mapped {
        error: ApiError::Unavailable { message: format!("the API server could not be reached: {message}") },
        outcome: Outcome::Error,
        reached: Some(false),
    }
}

/// The [`ApiError`] of a Kubernetes `Status` answer.
pub fn from_status(status: &Status, namespace: &str, name: &str) -> ApiError {
    let message = if status.message.is_empty() {
        format!("{} ({})", if status.reason.is_empty() { "no message" } else { &status.reason }, status.code)
    } else {
        status.message.clone()
    };
    match status.code {
        404 => ApiError::NotFound { namespace: namespace.to_owned(), name: name.to_owned() },
        409 if status.reason == "AlreadyExists" => {
            ApiError::AlreadyExists { namespace: namespace.to_owned(), name: name.to_owned() }
        }
        409 => ApiError::Conflict { message },
        401 | 403 => ApiError::Forbidden { message },
        // A status patch whose `metadata.uid` (the kubelet's UID precondition) is not the
        // stored pod's: kube-apiserver refuses it as Invalid (`metadata.uid: field is
        // immutable`), where a PUT or a delete with the same precondition gets 409. It is
        // the precondition failing (the pod was recreated under its name), which the
        // logic handles as a conflict: it reads the pod again.
        422 if uid_changed(status) => ApiError::Conflict { message },
        400 | 422 => ApiError::Invalid { message },
        429 | 503 | 504 => ApiError::Unavailable { message },
        // Kubernetes' temporary conditions: the server asks to be tried again.
        500 if matches!(status.reason.as_str(), "ServerTimeout" | "Timeout") => ApiError::Unavailable { message },
        code => ApiError::Internal { message: format!("{message} (HTTP {code})") },
    }
}

/// Whether an Invalid answer says only that the object's UID may not change.
fn uid_changed(status: &Status) -> bool {
    status.details.as_ref().is_some_and(|details| {
        !details.causes.is_empty() && details.causes.iter().all(|cause| cause.field == "metadata.uid")
    })
}

/// The counter an error lands in.
fn outcome_of(error: &ApiError) -> Outcome {
    match error {
        ApiError::NotFound { .. } => Outcome::NotFound,
        ApiError::AlreadyExists { .. } | ApiError::Conflict { .. } => Outcome::Conflict,
        ApiError::Forbidden { .. } => Outcome::Forbidden,
        ApiError::Invalid { .. } => Outcome::Invalid,
        ApiError::Internal { .. } | ApiError::Unavailable { .. } => Outcome::Error,
    }
}

/// The patch with the UID precondition as its `metadata.uid` (the one place a strategic
/// merge patch carries it to a real server).
fn with_uid(mut patch: serde_json::Value, uid: Option<&str>, name: &str) -> Result<serde_json::Value> {
    let serde_json::Value::Object(object) = &mut patch else {
        return Err(ApiError::Invalid { message: format!("pods \"{name}\": the status patch is not a JSON object") });
    };
    let Some(uid) = uid else { return Ok(patch) };
    let metadata = object.entry("metadata").or_insert_with(|| serde_json::json!({}));
    let serde_json::Value::Object(metadata) = metadata else {
        return Err(ApiError::Invalid { message: format!("pods \"{name}\": the patch's metadata is not an object") });
    };
    match metadata.get("uid").and_then(serde_json::Value::as_str) {
        Some(inside) if inside != uid => Err(ApiError::Conflict {
            message: format!(
                "Operation cannot be fulfilled on pods \"{name}\": the UID precondition {uid} differs from the \
                 patch's metadata.uid {inside}"
            ),
        }),
        Some(_) => Ok(patch),
        None => {
            metadata.insert("uid".into(), uid.into());
            Ok(patch)
        }
    }
}

/// What a success `Status` answer to a delete tells of the deleted pod.
fn pod_of_status(status: &Status, namespace: &str, name: &str) -> Pod {
    let uid = status.details.as_ref().map(|d| d.uid.clone()).filter(|uid| !uid.is_empty());
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            uid,
            ..ObjectMeta::default()
        },
        ..Pod::default()
    }
}

/// Why a bounded request gave no answer.
#[derive(Debug, PartialEq, Eq)]
enum Bounded {
    /// No answer within the timeout (the request was aborted).
    TimedOut,
    /// The task ended without answering: the runtime is shut down, or it panicked.
    Lost,
}

/// Runs `request` on the runtime of `handle` and waits on this (plain) thread for at
/// most `timeout`. The wait uses no tokio timer, so a runtime without one, or a stalled
/// one, still cannot hold the caller longer.
fn run_bounded<T, F>(handle: &Handle, timeout: Duration, request: F) -> std::result::Result<T, Bounded>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    let (answer, answered) = mpsc::sync_channel(1);
    let task = handle.spawn(async move {
        // The receiver is gone only when the caller stopped waiting.
        let _ = answer.send(request.await);
    });
    match answered.recv_timeout(timeout) {
        Ok(value) => Ok(value),
        Err(RecvTimeoutError::Timeout) => {
            task.abort();
            Err(Bounded::TimedOut)
        }
        Err(RecvTimeoutError::Disconnected) => Err(Bounded::Lost),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, reason: &str, message: &str) -> Status {
        Status { code, reason: reason.into(), message: message.into(), ..Status::default() }
    }

    #[test]
    fn statuses_map_to_the_api_errors_the_plugin_handles() {
        let cases = [
            (
                status(404, "NotFound", "pods \"a\" not found"),
                ApiError::NotFound { namespace: "ns".into(), name: "a".into() },
            ),
            (
                status(409, "AlreadyExists", "pods \"a\" already exists"),
                ApiError::AlreadyExists { namespace: "ns".into(), name: "a".into() },
            ),
            (
                status(409, "Conflict", "the object has been modified"),
                ApiError::Conflict { message: "the object has been modified".into() },
            ),
            (status(403, "Forbidden", "no"), ApiError::Forbidden { message: "no".into() }),
            (status(401, "Unauthorized", "who"), ApiError::Forbidden { message: "who".into() }),
            (status(422, "Invalid", "bad"), ApiError::Invalid { message: "bad".into() }),
            (status(400, "BadRequest", "bad"), ApiError::Invalid { message: "bad".into() }),
            (status(429, "TooManyRequests", "slow down"), ApiError::Unavailable { message: "slow down".into() }),
            (status(503, "ServiceUnavailable", "later"), ApiError::Unavailable { message: "later".into() }),
            (status(500, "InternalError", "boom"), ApiError::Internal { message: "boom (HTTP 500)".into() }),
            (status(500, "ServerTimeout", "try again"), ApiError::Unavailable { message: "try again".into() }),
            (status(502, "", ""), ApiError::Internal { message: "no message (502) (HTTP 502)".into() }),
        ];
        for (status, expected) in cases {
            assert_eq!(from_status(&status, "ns", "a"), expected, "{status:?}");
        }
        // kube-apiserver's answer to a status patch whose UID precondition fails.
        let mut uid =
            status(422, "Invalid", "Pod \"a\" is invalid: metadata.uid: Invalid value: \"u2\": field is immutable");
        let cause = |field: &str| kube::core::response::StatusCause {
            reason: "FieldValueInvalid".into(),
            message: "field is immutable".into(),
            field: field.into(),
        };
        let details = |causes| kube::core::response::StatusDetails {
            name: "a".into(),
            group: String::new(),
            kind: "pods".into(),
            uid: String::new(),
            causes,
            retry_after_seconds: 0,
        };
        uid.details = Some(details(vec![cause("metadata.uid")]));
        assert!(matches!(from_status(&uid, "ns", "a"), ApiError::Conflict { .. }));
        uid.details = Some(details(vec![cause("metadata.uid"), cause("status.phase")]));
        assert!(matches!(from_status(&uid, "ns", "a"), ApiError::Invalid { .. }), "another field too: invalid");
    }

    #[test]
    fn outcomes_follow_the_error() {
        let cases = [
            (ApiError::NotFound { namespace: "n".into(), name: "a".into() }, Outcome::NotFound),
            (ApiError::modified("a"), Outcome::Conflict),
            (ApiError::Forbidden { message: "m".into() }, Outcome::Forbidden),
            (ApiError::Invalid { message: "m".into() }, Outcome::Invalid),
            (ApiError::Internal { message: "m".into() }, Outcome::Error),
            (ApiError::Unavailable { message: "m".into() }, Outcome::Error),
        ];
        for (error, outcome) in cases {
            assert_eq!(outcome_of(&error), outcome, "{error}");
        }
    }

    #[test]
    fn the_uid_precondition_travels_in_the_patch() {
        let patch = serde_json::json!({"status": {"phase": "Running"}});
        let with = with_uid(patch.clone(), Some("u1"), "a").unwrap();
        assert_eq!(with, serde_json::json!({"status": {"phase": "Running"}, "metadata": {"uid": "u1"}}));
        assert_eq!(with_uid(patch.clone(), None, "a").unwrap(), patch);
        // The same UID inside and outside is fine; two different ones cannot both hold.
        assert_eq!(with_uid(with.clone(), Some("u1"), "a").unwrap(), with);
        assert!(matches!(with_uid(with, Some("u2"), "a"), Err(ApiError::Conflict { .. })));
        assert!(matches!(with_uid(serde_json::json!([1]), None, "a"), Err(ApiError::Invalid { .. })));
        assert!(matches!(with_uid(serde_json::json!({"metadata": 1}), Some("u"), "a"), Err(ApiError::Invalid { .. })));
    }

    #[test]
    fn a_status_answer_to_a_delete_names_the_pod() {
        let mut answer = status(200, "", "");
        answer.details = Some(serde_json::from_value(serde_json::json!({"name": "a", "uid": "u1"})).unwrap());
        let pod = pod_of_status(&answer, "ns", "a");
        assert_eq!(
            (pod.metadata.namespace.as_deref(), pod.metadata.name.as_deref(), pod.metadata.uid.as_deref()),
            (Some("ns"), Some("a"), Some("u1"))
        );
    }

    #[test]
    fn a_bounded_request_answers_times_out_or_is_lost() {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let handle = runtime.handle().clone();
        assert_eq!(run_bounded(&handle, Duration::from_secs(30), async { 7 }), Ok(7));
        assert_eq!(
            run_bounded(&handle, Duration::from_millis(20), futures::future::pending::<()>()),
            Err(Bounded::TimedOut)
        );
        runtime.shutdown_background();
        assert_eq!(run_bounded(&handle, Duration::from_secs(30), async { 7 }), Err(Bounded::Lost));
    }

    #[test]
    fn names_that_cannot_name_a_pod_never_reach_a_url() {
        for (namespace, name) in [("ns", "a?b"), ("ns", "a/b"), ("ns", ".."), ("ns", "UPPER"), ("a/b", "x"), ("ns", "")]
        {
            let error = invalid_names(namespace, name).unwrap_or_else(|| panic!("{namespace}/{name} refused"));
            assert_eq!(error.code(), 422, "{error}");
        }
        assert!(invalid_names("ns", &"a".repeat(254)).is_some());
        assert!(invalid_names("kube-system", "web-1.example").is_none());
    }

    #[test]
    fn a_config_that_cannot_work_is_refused() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let client = || {
            let _guard = runtime.enter();
            kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap())).unwrap()
        };
        let new = |config| KubeApiServer::new(runtime.handle().clone(), client(), config).map(drop);
        assert_eq!(
            new(KubeClientConfig { qps: 0.0, ..KubeClientConfig::default() }),
            Err(RateLimitError::Qps(0.0).into())
        );
        assert_eq!(
            new(KubeClientConfig { burst: 0, ..KubeClientConfig::default() }),
            Err(RateLimitError::Burst.into())
        );
        assert_eq!(
            new(KubeClientConfig { call_timeout: Duration::ZERO, ..KubeClientConfig::default() }),
            Err(KubeClientError::ZeroCallTimeout)
        );
        assert_eq!(new(KubeClientConfig::default()), Ok(()));
    }
}
