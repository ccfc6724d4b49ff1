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
use std::time::Instant;

use http::{Request, Response};

use super::registry::Metrics;
pub use super::rest_client_families::{CODE_ERROR, REQUEST_DURATION, REQUEST_DURATION_BUCKETS, REQUESTS};

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
