//! Time for the plugin: the system clock in production, a virtual clock in replay and
//! fuzzing, where a run must not depend on when it happens.

use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An instant as seconds and nanoseconds since the Unix epoch (the contract's `timestamp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    /// Whole seconds since 1970-01-01T00:00:00Z (negative before it).
    pub seconds: i64,
    /// The fraction, always forward in time: 0 to 999,999,999.
    pub nanoseconds: u32,
}

/// A source of wall-clock time.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The machine's wall clock.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => Timestamp { seconds: d.as_secs() as i64, nanoseconds: d.subsec_nanos() },
            // A clock set before 1970: report the instant as negative seconds.
            Err(e) => {
                let d = e.duration();
                let (seconds, nanoseconds) = if d.subsec_nanos() == 0 {
                    (-(d.as_secs() as i64), 0)
                } else {
                    (-(d.as_secs() as i64) - 1, 1_000_000_000 - d.subsec_nanos())
                };
                Timestamp { seconds, nanoseconds }
            }
        }
    }
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct VirtualClock {
    /// Nanoseconds since the Unix epoch; i128 so that any RFC 3339 time fits.
    now_nanos: Mutex<i128>,
}

impl VirtualClock {
    /// A clock standing at `start`.
    pub fn new(start: Timestamp) -> Self {
        VirtualClock {
            now_nanos: Mutex::new(i128::from(start.seconds) * 1_000_000_000 + i128::from(start.nanoseconds)),
        }
    }

    /// Sets the clock to `to` (it may go backwards: a wall clock can be stepped).
    pub fn set(&self, to: Timestamp) {
        let mut now = self.now_nanos.lock().unwrap_or_else(|p| p.into_inner());
        *now = i128::from(to.seconds) * 1_000_000_000 + i128::from(to.nanoseconds);
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self.now_nanos.lock().unwrap_or_else(|p| p.into_inner());
        *now += by.as_nanos() as i128;
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Timestamp {
        let now = *self.now_nanos.lock().unwrap_or_else(|p| p.into_inner());
        Timestamp { seconds: now.div_euclid(1_000_000_000) as i64, nanoseconds: now.rem_euclid(1_000_000_000) as u32 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_clock_moves_only_when_advanced() {
        let clock = VirtualClock::new(Timestamp { seconds: 100, nanoseconds: 900_000_000 });
        assert_eq!(clock.now(), Timestamp { seconds: 100, nanoseconds: 900_000_000 });
        clock.advance(Duration::from_millis(250));
        assert_eq!(clock.now(), Timestamp { seconds: 101, nanoseconds: 150_000_000 });
    }

    #[test]
    fn virtual_clock_handles_times_before_the_epoch() {
        let clock = VirtualClock::new(Timestamp { seconds: -2, nanoseconds: 500_000_000 });
        clock.advance(Duration::from_millis(600));
        assert_eq!(clock.now(), Timestamp { seconds: -1, nanoseconds: 100_000_000 });
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now().seconds > 1_577_836_800);
    }
}
