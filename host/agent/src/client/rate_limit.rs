//! A client-side token bucket, like client-go's `flowcontrol` rate limiter behind the
//! kubelet's `--kube-api-qps` / `--kube-api-burst`: `burst` calls may go at once, then
//! `qps` calls per second.
//!
//! Two ways in, because the status manager calls the API server while it holds the
//! plugin lock (see [`podstatus_runtime::ManagerHandle`]):
//! - [`Admission::wait_ready`] waits, *outside* that lock, until the tokens a piece of
//!   work will need are there, without taking them;
//! - [`RateLimiter::acquire_within`] takes one token for a call, waiting at most a short
//!   bound, so that a drained bucket never keeps the lock (and every other thread's
//!   Manager operation) waiting long.
//!
//! A token promised by `acquire_within` is taken at once, even if it arrives only later
//! (the balance goes below zero, as `golang.org/x/time/rate` reservations do): calls are
//! served in the order they asked, and no sleeping call can be overtaken.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

pub use podstatus_runtime::Admission;

/// A rate limit that cannot be built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RateLimitError {
    /// QPS must be a positive, finite number.
    #[error("invalid QPS {0}: must be a positive, finite number")]
    Qps(f32),
    /// Burst must allow at least one call.
    #[error("invalid burst 0: must allow at least one call")]
    Burst,
}

/// A thread-safe token bucket (share it as `Arc<RateLimiter>`).
#[derive(Debug)]
pub struct RateLimiter {
    /// Tokens added per second.
    qps: f64,
    /// Tokens the bucket holds at most (and holds at the start).
    burst: f64,
    /// The balance; a short critical section (no waiting under it).
    bucket: Mutex<Bucket>,
    /// Set by [`Admission::close`]: every wait ends and every call is refused (a
    /// stopping agent's calls must not sleep out their tokens).
    closed: Mutex<bool>,
    /// Wakes the waits when the limiter closes.
    closing: Condvar,
}

#[derive(Debug)]
struct Bucket {
    /// Tokens available at `at`; below zero when calls hold reservations.
    tokens: f64,
    /// When `tokens` was last brought up to date.
    at: Instant,
}

impl RateLimiter {
    /// A full bucket of `burst` tokens refilling at `qps` per second.
    pub fn new(qps: f32, burst: u32) -> Result<Self, RateLimitError> {
        if !(qps.is_finite() && qps > 0.0) {
            return Err(RateLimitError::Qps(qps));
        }
        if burst == 0 {
            return Err(RateLimitError::Burst);
        }
        let burst = f64::from(burst);
        Ok(RateLimiter {
            qps: f64::from(qps),
            burst,
            bucket: Mutex::new(Bucket { tokens: burst, at: Instant::now() }),
            closed: Mutex::new(false),
            closing: Condvar::new(),
        })
    }

    /// Tokens added per second.
    pub fn qps(&self) -> f64 {
        self.qps
    }

    /// Tokens the bucket holds at most.
    pub fn burst(&self) -> u32 {
        // Built from a u32.
        self.burst as u32
    }

    /// Tokens available now (negative while calls wait for promised tokens).
    pub fn available(&self) -> f64 {
        let mut bucket = self.lock();
        self.refill(&mut bucket, Instant::now());
        bucket.tokens
    }

    /// Takes one token if one is available now.
    pub fn try_acquire(&self) -> bool {
        self.acquire_within(Duration::ZERO)
    }

    /// Takes one token, waiting for it at most `max_wait`; returns `false` at once
    /// (taking nothing) when the token would come later than that, or when the limiter
    /// is closed (also while it waits).
    pub fn acquire_within(&self, max_wait: Duration) -> bool {
        if self.is_closed() {
            return false;
        }
        let wait = {
            let mut bucket = self.lock();
            let now = Instant::now();
            self.refill(&mut bucket, now);
            let wait = self.time_until(&bucket, 1.0);
            if wait > max_wait {
                return false;
            }
            bucket.tokens -= 1.0;
            wait
        };
        wait.is_zero() || self.sleep(wait)
    }

    /// Sleeps `wait`, or less if the limiter closes meanwhile: whether it is still open.
    fn sleep(&self, wait: Duration) -> bool {
        let closed = self.closed.lock().unwrap_or_else(|p| p.into_inner());
        let (closed, _) =
            self.closing.wait_timeout_while(closed, wait, |closed| !*closed).unwrap_or_else(|p| p.into_inner());
        !*closed
    }

    fn is_closed(&self) -> bool {
        *self.closed.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Bucket> {
        // The critical sections only do arithmetic: a poisoned bucket is still coherent.
        self.bucket.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn refill(&self, bucket: &mut Bucket, now: Instant) {
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.qps).min(self.burst);
        bucket.at = now;
    }

    /// How long until the bucket holds `tokens` (zero if it does).
    fn time_until(&self, bucket: &Bucket, tokens: f64) -> Duration {
        let missing = tokens - bucket.tokens;
        if missing <= 0.0 { Duration::ZERO } else { Duration::from_secs_f64(missing / self.qps) }
    }
}

impl Admission for RateLimiter {
    fn wait_ready(&self, calls: u32, deadline: Instant) -> bool {
        let wanted = f64::from(calls).min(self.burst);
        loop {
            let wait = {
                let mut bucket = self.lock();
                let now = Instant::now();
                self.refill(&mut bucket, now);
                self.time_until(&bucket, wanted)
            };
            if wait.is_zero() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            // Others may take tokens meanwhile: look again after the sleep.
            if !self.sleep(wait.min(deadline - now)) {
                return false;
            }
        }
    }

    fn close(&self) {
        *self.closed.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.closing.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_nonsense_limits() {
        assert_eq!(RateLimiter::new(0.0, 1).unwrap_err(), RateLimitError::Qps(0.0));
        assert!(matches!(RateLimiter::new(f32::NAN, 1), Err(RateLimitError::Qps(_))));
        assert_eq!(RateLimiter::new(-1.0, 1).unwrap_err(), RateLimitError::Qps(-1.0));
        assert_eq!(RateLimiter::new(f32::INFINITY, 1).unwrap_err(), RateLimitError::Qps(f32::INFINITY));
        assert_eq!(RateLimiter::new(1.0, 0).unwrap_err(), RateLimitError::Burst);
    }

    #[test]
    fn a_burst_goes_at_once_then_the_bucket_is_empty() {
        // One token per 1000 s: nothing refills during the test.
        let limiter = RateLimiter::new(0.001, 3).unwrap();
        assert!((0..3).all(|_| limiter.try_acquire()));
        assert!(!limiter.try_acquire());
        assert!(!limiter.acquire_within(Duration::from_millis(10)));
        assert!(limiter.available() < 1.0);
    }

    #[test]
    fn a_refused_acquire_takes_nothing() {
        let limiter = RateLimiter::new(0.001, 1).unwrap();
        assert!(limiter.try_acquire());
        let before = limiter.available();
        assert!(!limiter.try_acquire());
        // Only refill may have changed the balance, upwards.
        assert!(limiter.available() >= before);
    }

    #[test]
    fn tokens_refill_at_qps() {
        // 1000 per second: a token every millisecond.
        let limiter = RateLimiter::new(1000.0, 1).unwrap();
        assert!(limiter.try_acquire());
        // The next token comes within a second for sure.
        assert!(limiter.acquire_within(Duration::from_secs(1)));
    }

    #[test]
    fn refill_never_exceeds_the_burst() {
        let limiter = RateLimiter::new(1000.0, 2).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert!(limiter.available() <= 2.0);
    }

    #[test]
    fn wait_ready_returns_once_tokens_are_there_and_takes_none() {
        let limiter = RateLimiter::new(1000.0, 2).unwrap();
        assert!(limiter.try_acquire() && limiter.try_acquire());
        assert!(limiter.wait_ready(2, Instant::now() + Duration::from_secs(10)));
        assert!(limiter.available() >= 2.0 - f64::EPSILON);
        // Asking for more than the bucket can ever hold waits for a full bucket.
        assert!(limiter.wait_ready(u32::MAX, Instant::now() + Duration::from_secs(10)));
    }

    #[test]
    fn a_closed_limiter_wakes_its_waits_and_refuses_every_call() {
        let limiter = std::sync::Arc::new(RateLimiter::new(0.1, 1).unwrap());
        assert!(limiter.try_acquire(), "the burst");
        let waiting = {
            let limiter = std::sync::Arc::clone(&limiter);
            std::thread::spawn(move || {
                let start = Instant::now();
                (limiter.acquire_within(Duration::from_secs(60)), start.elapsed())
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        limiter.close();
        let (acquired, waited) = waiting.join().unwrap();
        assert!(!acquired, "a wait for a token ten seconds away ends when the limiter closes");
        assert!(waited < Duration::from_secs(5), "{waited:?}");
        assert!(!limiter.try_acquire());
        assert!(!limiter.wait_ready(1, Instant::now() + Duration::from_secs(60)));
    }

    #[test]
    fn wait_ready_gives_up_at_the_deadline() {
        let limiter = RateLimiter::new(0.001, 1).unwrap();
        assert!(limiter.try_acquire());
        assert!(!limiter.wait_ready(1, Instant::now() + Duration::from_millis(20)));
        assert!(!limiter.wait_ready(1, Instant::now() - Duration::from_millis(1)));
    }

    #[test]
    fn the_bucket_is_shared_between_threads() {
        let limiter = std::sync::Arc::new(RateLimiter::new(0.001, 10).unwrap());
        let taken: usize = (0..4)
            .map(|_| {
                let limiter = limiter.clone();
                std::thread::spawn(move || (0..10).filter(|_| limiter.try_acquire()).count())
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .sum();
        assert_eq!(taken, 10);
    }
}
