//! client-go's REST client metrics (`rest_client_requests`,
//! `rest_client_request_duration_seconds`): their names, labels and families, which
//! the registry encodes and the client's layer records into.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;

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
