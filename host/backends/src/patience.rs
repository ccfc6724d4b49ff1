//! How long an API call made on this thread may wait for its client's rate limit.
//!
//! A client whose caller holds a lock (a 0.1.x plugin calls the API server from inside
//! `sync-pod`, under the lock every other caller waits on) must not wait long for a
//! token: it fails fast and the status is retried later. A thread that holds nothing
//! (the host's API-call workers for 0.2.0 plugins) is an ordinary client: it waits for
//! its token, bounded by the call's timeout. The worker says so once for its thread;
//! clients read it per call.

use std::cell::Cell;
use std::time::Duration;

thread_local! {
    static PATIENCE: Cell<Option<Duration>> = const { Cell::new(None) };
}

/// Lets calls made on this thread from now on wait up to `wait` for a rate-limit token
/// (a client bounds it by its call timeout too).
pub fn set(wait: Duration) {
    PATIENCE.set(Some(wait));
}

/// How long a call on this thread may wait for a token, if the thread said so; `None`
/// leaves the client's own (fail-fast) setting.
pub fn current() -> Option<Duration> {
    PATIENCE.get()
}

#[cfg(test)]
mod tests {
    #[test]
    fn patience_is_per_thread() {
        super::set(std::time::Duration::from_secs(3));
        assert_eq!(super::current(), Some(std::time::Duration::from_secs(3)));
        std::thread::spawn(|| assert_eq!(super::current(), None)).join().unwrap();
    }
}
