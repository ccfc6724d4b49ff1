//! Added latency for one client: the embedded server answers the requests of a client
//! it tells apart by `User-Agent` that much later, as if that client sat across a
//! network from it while every other client stays local. `podstatus simulate
//! --api-latency` puts the agent's status client there: the plugin then waits on the
//! API server as it would on a real cluster, while the pod watch, the pods' owners and
//! the final check, which are not what is measured, go at loopback speed.
//!
//! The wait is an async sleep before the request is read: it holds no lock, no body
//! budget and no thread, so every other request (the same client's too) proceeds
//! meanwhile.

use std::time::Duration;

use http::{HeaderMap, header};

/// A client whose requests the server answers late (see
/// [`ServeOptions::delayed_client`]).
///
/// [`ServeOptions::delayed_client`]: crate::options::ServeOptions::delayed_client
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DelayedClient {
    /// The client's `User-Agent` starts with this (its product token, such as
    /// `podstatus-status-manager/`).
    pub user_agent: &'static str,
    /// How much later each of its requests is answered.
    pub latency: Duration,
}

impl DelayedClient {
    /// How long to hold a request with these headers before answering it: the latency
    /// when it comes from this client, else nothing.
    pub(crate) fn delay_for(&self, headers: &HeaderMap) -> Option<Duration> {
        let user_agent = headers.get(header::USER_AGENT)?.to_str().ok()?;
        (user_agent.starts_with(self.user_agent) && !self.latency.is_zero()).then_some(self.latency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_named_client_waits() {
        let client = DelayedClient { user_agent: "slow/", latency: Duration::from_millis(20) };
        let with = |agent: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::USER_AGENT, agent.parse().unwrap());
            headers
        };
        assert_eq!(client.delay_for(&with("slow/1.0 (linux)")), Some(Duration::from_millis(20)));
        assert_eq!(client.delay_for(&with("kubectl/v1.33")), None);
        assert_eq!(client.delay_for(&HeaderMap::new()), None, "no User-Agent, no delay");
        let none = DelayedClient { latency: Duration::ZERO, ..client };
        assert_eq!(none.delay_for(&with("slow/1.0")), None);
    }
}
