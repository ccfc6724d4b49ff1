//! client-go's REST client metrics for the agent's kube-rs client, as the kubelet
//! exports them (`k8s.io/component-base/metrics/prometheus/restclient`): every request
//! the client sends — status writes, the pod watch, mirror pods, node and lease
//! updates — counted by status code, method and host, and timed by verb and host.
//! Kubelet dashboards read these two; the agent's own `podstatus_api_calls_total`
//! counts only the plugin's calls, by Kubernetes verb and reason.
//!
//! They are taken by a tower layer around kube's whole service stack, so nothing that
//! reaches the API server is missed and nothing else needs to know.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{Request, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;

use super::Metrics;

/// client-go's name for requests by code, method and host (`_total` is added when
/// written, as for every counter).
pub const REQUESTS: &str = "rest_client_requests";
/// client-go's help text for [`REQUESTS`].
pub(super) const REQUESTS_HELP: &str = "Number of HTTP requests, partitioned by status code, method, and host.";
/// client-go's name for request latency by verb and host.
pub const REQUEST_DURATION: &str = "rest_client_request_duration_seconds";
/// client-go's help text for [`REQUEST_DURATION`].
pub(super) const REQUEST_DURATION_HELP: &str = "Request latency in seconds. Broken down by verb, and host.";
/// client-go's buckets for [`REQUEST_DURATION`].
pub const REQUEST_DURATION_BUCKETS: [f64; 12] = [0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0];
/// client-go's `code` label for a request that got no HTTP answer.
pub const CODE_ERROR: &str = "<error>";

/// `rest_client_requests_total`'s labels, in client-go's order.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct RequestLabels {
    code: String,
    method: String,
    host: String,
}

/// `rest_client_request_duration_seconds`' labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct DurationLabels {
    verb: String,
    host: String,
}

/// The two families.
#[derive(Debug)]
pub(super) struct RestClientMetrics {
    pub(super) requests: Family<RequestLabels, Counter>,
    pub(super) duration: Family<DurationLabels, Histogram, fn() -> Histogram>,
}

impl Default for RestClientMetrics {
    fn default() -> Self {
        RestClientMetrics {
            requests: Family::default(),
            duration: Family::new_with_constructor(|| Histogram::new(REQUEST_DURATION_BUCKETS)),
        }
    }
}

impl RestClientMetrics {
    /// Records one request: `code` is the HTTP status, or none when no answer came.
    pub(super) fn observe(&self, method: &str, host: &str, code: Option<u16>, took: Duration) {
        let code = code.map_or_else(|| CODE_ERROR.to_owned(), |code| code.to_string());
        self.requests.get_or_create(&RequestLabels { code, method: method.to_owned(), host: host.to_owned() }).inc();
        self.duration
            .get_or_create(&DurationLabels { verb: method.to_owned(), host: host.to_owned() })
            .observe(took.as_secs_f64());
    }

    /// Requests so far with this code, method and host.
    pub(super) fn requests(&self, code: &str, method: &str, host: &str) -> u64 {
        let labels = RequestLabels { code: code.to_owned(), method: method.to_owned(), host: host.to_owned() };
        self.requests.get(&labels).map_or(0, |counter| counter.get())
    }
}

/// A kube-rs client whose every request is recorded in `metrics`, built from `config`
/// as `kube::Client::try_from` would build it.
pub fn metered_client(config: kube::Config, metrics: &Arc<Metrics>) -> Result<kube::Client, kube::Error> {
    // client-go's host label is the request URL's host:port; the layer sits outside
    // kube's base-URI layer and sees paths only, so it is taken from the config.
    let host = config.cluster_url.authority().map_or_else(String::new, |authority| authority.to_string());
    let layer = RestClientLayer { metrics: Arc::clone(metrics), host: host.into() };
    Ok(kube::client::ClientBuilder::try_from(config)?.with_layer(&layer).build())
}

/// The tower layer [`metered_client`] puts around kube's service stack.
#[derive(Clone, Debug)]
pub struct RestClientLayer {
    metrics: Arc<Metrics>,
    /// The API server's host:port, the `host` label.
    host: Arc<str>,
}

impl<S> tower_layer::Layer<S> for RestClientLayer {
    type Service = RestClientService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RestClientService { inner, metrics: Arc::clone(&self.metrics), host: Arc::clone(&self.host) }
    }
}

/// A service that records each request's method, status code and latency (until the
/// response's head arrives: a watch's stream is not timed, as in client-go).
#[derive(Clone, Debug)]
pub struct RestClientService<S> {
    inner: S,
    metrics: Arc<Metrics>,
    host: Arc<str>,
}

impl<S, B, RB> tower_service::Service<Request<B>> for RestClientService<S>
where
    S: tower_service::Service<Request<B>, Response = Response<RB>>,
    S::Future: Send + 'static,
{
    type Response = Response<RB>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<RB>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let method = request.method().as_str().to_owned();
        let started = Instant::now();
        let answer = self.inner.call(request);
        let (metrics, host) = (Arc::clone(&self.metrics), Arc::clone(&self.host));
        Box::pin(async move {
            let result = answer.await;
            let code = result.as_ref().ok().map(|response| response.status().as_u16());
            metrics.rest_client().observe(&method, &host, code, started.elapsed());
            result
        })
    }
}
