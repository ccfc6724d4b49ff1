//! A circuit breaker for an API server that stopped answering: after a transport
//! failure or a timeout, calls fail at once for a backoff window (growing, doubling from
//! an initial to a maximum), then one probe call is let through; its answer closes the
//! circuit or opens it again for the next, longer window.
//!
//! Why: the status manager calls the API server while holding the plugin lock, so each
//! call that waits for a dead server keeps every other thread's Manager operation
//! waiting for as long as the call timeout. With the breaker open, a sync fails in
//! microseconds, its status stays cached, and the batch sync writes it once the server
//! is back. Any HTTP answer, even an error status, proves the server reachable and
//! closes the circuit.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Trips on transport failures; thread-safe.
#[derive(Debug)]
pub struct CircuitBreaker {
    initial: Duration,
    max: Duration,
    /// A short critical section: no call runs under it.
    state: Mutex<State>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Calls go through.
    Closed,
    /// Calls fail fast until `until`; the window lasted `backoff`.
    Open { until: Instant, backoff: Duration },
    /// One probe is in flight; other calls fail fast until it answers.
    Probing { backoff: Duration },
}

/// The breaker's answer to a call that wants to start.
#[derive(Debug)]
pub enum Admit<'a> {
    /// The call may go; report its outcome on the permit.
    Go(Permit<'a>),
    /// The circuit is open: fail the call now. The next probe is due in `retry_in`
    /// (zero while a probe is in flight).
    Open {
        /// Time until the next probe may go.
        retry_in: Duration,
    },
}

/// A call let through; dropping it without a verdict (the call never reached the
/// server, e.g. it was throttled) lets the next call probe instead.
#[derive(Debug)]
pub struct Permit<'a> {
    breaker: &'a CircuitBreaker,
    probe: bool,
    decided: bool,
}

impl CircuitBreaker {
    /// A closed breaker whose windows start at `initial` and double up to `max`.
    pub fn new(initial: Duration, max: Duration) -> Self {
        CircuitBreaker { initial, max: max.max(initial), state: Mutex::new(State::Closed) }
    }

    /// Whether a call may start now.
    pub fn admit(&self) -> Admit<'_> {
        let mut state = self.lock();
        match *state {
            State::Closed => Admit::Go(Permit { breaker: self, probe: false, decided: false }),
            State::Probing { .. } => Admit::Open { retry_in: Duration::ZERO },
            State::Open { until, backoff } => {
                let now = Instant::now();
                if now < until {
                    Admit::Open { retry_in: until - now }
                } else {
                    *state = State::Probing { backoff };
                    Admit::Go(Permit { breaker: self, probe: true, decided: false })
                }
            }
        }
    }

    /// Whether calls currently fail fast.
    pub fn is_open(&self) -> bool {
        *self.lock() != State::Closed
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Only state transitions run under the lock: a poisoned state is still coherent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn record(&self, probe: bool, reached: bool) {
        let mut state = self.lock();
        if reached {
            *state = State::Closed;
            return;
        }
        let now = Instant::now();
        *state = match *state {
            State::Closed => State::Open { until: now + self.initial, backoff: self.initial },
            State::Probing { backoff } if probe => {
                let backoff = backoff.saturating_mul(2).min(self.max);
                State::Open { until: now + backoff, backoff }
            }
            // A straggler admitted before the circuit opened: the window already runs.
            other => other,
        };
    }
}

impl Permit<'_> {
    /// The server answered (whatever the HTTP status): closes the circuit.
    pub fn reached(mut self) {
        self.decided = true;
        self.breaker.record(self.probe, true);
    }

    /// The server did not answer (transport failure, timeout): opens the circuit.
    pub fn unreachable(mut self) {
        self.decided = true;
        self.breaker.record(self.probe, false);
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if self.probe && !self.decided {
            // The probe never went: the next call probes at once, same window length.
            let mut state = self.breaker.lock();
            if let State::Probing { backoff } = *state {
                *state = State::Open { until: Instant::now(), backoff };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn go(breaker: &CircuitBreaker) -> Permit<'_> {
        match breaker.admit() {
            Admit::Go(permit) => permit,
            Admit::Open { retry_in } => panic!("expected the call to go, the circuit is open for {retry_in:?}"),
        }
    }

    fn open_for(breaker: &CircuitBreaker) -> Duration {
        match breaker.admit() {
            Admit::Open { retry_in } => retry_in,
            Admit::Go(_) => panic!("expected the circuit to be open"),
        }
    }

    #[test]
    fn stays_closed_while_the_server_answers() {
        let breaker = CircuitBreaker::new(Duration::from_secs(60), Duration::from_secs(600));
        go(&breaker).reached();
        go(&breaker).reached();
        assert!(!breaker.is_open());
    }

    #[test]
    fn a_failure_opens_it_and_calls_fail_fast() {
        let breaker = CircuitBreaker::new(Duration::from_secs(60), Duration::from_secs(600));
        go(&breaker).unreachable();
        assert!(breaker.is_open());
        let retry_in = open_for(&breaker);
        assert!(retry_in > Duration::ZERO && retry_in <= Duration::from_secs(60));
    }

    #[test]
    fn after_the_window_one_probe_goes_and_its_answer_decides() {
        let breaker = CircuitBreaker::new(Duration::ZERO, Duration::ZERO);
        go(&breaker).unreachable();
        let probe = go(&breaker);
        // While the probe is out, others fail fast.
        assert_eq!(open_for(&breaker), Duration::ZERO);
        probe.reached();
        assert!(!breaker.is_open());
        go(&breaker).reached();
    }

    #[test]
    fn a_failed_probe_doubles_the_window_up_to_the_maximum() {
        let breaker = CircuitBreaker::new(Duration::from_millis(1), Duration::from_millis(3));
        go(&breaker).unreachable();
        let backoffs: Vec<Duration> = (0..3)
            .map(|_| {
                std::thread::sleep(Duration::from_millis(5));
                go(&breaker).unreachable();
                match *breaker.lock() {
                    State::Open { backoff, .. } => backoff,
                    other => panic!("expected open, found {other:?}"),
                }
            })
            .collect();
        assert_eq!(backoffs, [Duration::from_millis(2), Duration::from_millis(3), Duration::from_millis(3)]);
    }

    #[test]
    fn a_probe_that_never_went_lets_the_next_call_probe() {
        let breaker = CircuitBreaker::new(Duration::ZERO, Duration::ZERO);
        go(&breaker).unreachable();
        drop(go(&breaker));
        go(&breaker).reached();
        assert!(!breaker.is_open());
    }

    #[test]
    fn a_straggler_failure_does_not_extend_an_open_window() {
        let breaker = CircuitBreaker::new(Duration::from_secs(60), Duration::from_secs(600));
        let first = go(&breaker);
        let straggler = go(&breaker);
        first.unreachable();
        let before = *breaker.lock();
        straggler.unreachable();
        assert_eq!(*breaker.lock(), before);
    }
}
