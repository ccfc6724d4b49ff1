//! The bounded queue of sync requests between the plugin and the scheduler.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A handle on one accepted status version, as the plugin pushes it: the snapshot it
/// names stays inside the plugin until the request comes back to `sync-pod`, so the
/// queue holds no status bodies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncRequest {
    /// The plugin's name for this request (unique while it is pending).
    pub id: u64,
    /// The pod whose status is to be written.
    pub pod_uid: String,
    /// The status version the request was made for.
    pub version: u64,
}

/// The seed's channel buffers 1000 statuses; beyond that the batch sync catches up.
pub const DEFAULT_CAPACITY: usize = 1000;

/// The queue's byte bound per request of its capacity: a Kubernetes UID is 36 bytes,
/// so an honest queue fills by count first; UIDs of hundreds of bytes fill it by bytes.
pub const BYTES_PER_REQUEST: usize = 128;

/// A bounded FIFO the plugin pushes into without blocking and the scheduler waits on.
#[derive(Debug)]
pub struct SyncQueue {
    capacity: usize,
    /// What the waiting requests may take together (see [`SyncQueue::request_bytes`]).
    max_bytes: usize,
    state: Mutex<QueueState>,
    /// Signalled on every push and on close, so the scheduler sleeps until there is work.
    ready: Condvar,
}

#[derive(Debug, Default)]
struct QueueState {
    /// Each waiting request with when it was pushed, oldest first.
    requests: VecDeque<(SyncRequest, Instant)>,
    /// What the waiting requests take, by [`SyncQueue::request_bytes`].
    bytes: usize,
    closed: bool,
    /// Pushes refused because the queue was full, for metrics.
    dropped: u64,
}

/// What waiting on the queue gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Wait {
    /// A request to handle.
    Request(SyncRequest),
    /// The deadline passed with nothing queued.
    TimedOut,
    /// The queue was closed and is empty.
    Closed,
}

impl SyncQueue {
    /// An empty queue holding at most `capacity` requests.
    /// Its bytes are bounded too, at [`BYTES_PER_REQUEST`] a request on average.
    pub fn new(capacity: usize) -> Self {
        SyncQueue {
            capacity,
            max_bytes: capacity.saturating_mul(BYTES_PER_REQUEST),
            state: Mutex::new(QueueState::default()),
            ready: Condvar::new(),
        }
    }

    /// The same queue holding at most `max_bytes` of requests.
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// What a request counts against the byte bound: its UID and fixed fields.
    pub fn request_bytes(request: &SyncRequest) -> usize {
        request.pod_uid.len() + 24
    }

    /// The byte bound.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// What the waiting requests take now.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    fn take_front(state: &mut QueueState) -> Option<SyncRequest> {
        let (request, _) = state.requests.pop_front()?;
        state.bytes -= Self::request_bytes(&request);
        Some(request)
    }

    fn backed_up_in(state: &QueueState, lifo_after: Duration) -> bool {
        state.requests.front().is_some_and(|(_, at)| at.elapsed() > lifo_after)
    }

    /// The oldest request, or the newest while the oldest has waited longer than
    /// `lifo_after` (see [`SyncQueue::pop_until_adaptive`]).
    fn take_adaptive(state: &mut QueueState, lifo_after: Duration) -> Option<SyncRequest> {
        if !Self::backed_up_in(state, lifo_after) {
            return Self::take_front(state);
        }
        let (request, _) = state.requests.pop_back()?;
        state.bytes -= Self::request_bytes(&request);
        Some(request)
    }

    fn lock(&self) -> MutexGuard<'_, QueueState> {
        // A panic elsewhere cannot leave the queue inconsistent: every update is one
        // VecDeque call. Keep serving.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `request`; false (and nothing queued) when full.
    pub fn push(&self, request: SyncRequest) -> bool {
        let mut state = self.lock();
        let bytes = Self::request_bytes(&request);
        if state.requests.len() >= self.capacity || state.bytes + bytes > self.max_bytes {
            state.dropped += 1;
            return false;
        }
        state.bytes += bytes;
        state.requests.push_back((request, Instant::now()));
        drop(state);
        self.ready.notify_one();
        true
    }

    /// The oldest request, if any, without waiting.
    pub fn pop(&self) -> Option<SyncRequest> {
        Self::take_front(&mut self.lock())
    }

    /// Whether the oldest waiting request has waited longer than `lifo_after`.
    pub fn backed_up(&self, lifo_after: Duration) -> bool {
        Self::backed_up_in(&self.lock(), lifo_after)
    }

    /// [`SyncQueue::pop`], adaptive as [`SyncQueue::pop_until_adaptive`].
    pub fn pop_adaptive(&self, lifo_after: Duration) -> Option<SyncRequest> {
        Self::take_adaptive(&mut self.lock(), lifo_after)
    }

    /// Waits until a request arrives, `deadline` passes or the queue is closed.
    pub fn pop_until(&self, deadline: Instant) -> Wait {
        self.pop_until_with(deadline, Self::take_front)
    }

    /// [`SyncQueue::pop_until`], first in first out until the queue backs up: while
    /// the oldest request has waited longer than `lifo_after`, the newest goes first.
    /// Past the client's budget a first-in-first-out queue makes every status wait for
    /// the whole backlog; newest first writes what just changed at once, while the
    /// older ones wait for the periodic batch sync, which writes each pod's latest
    /// status in one go (adaptive LIFO, as in "Fail at Scale", ACM Queue 2015).
    pub fn pop_until_adaptive(&self, deadline: Instant, lifo_after: Duration) -> Wait {
        self.pop_until_with(deadline, |state| Self::take_adaptive(state, lifo_after))
    }

    fn pop_until_with(&self, deadline: Instant, mut take: impl FnMut(&mut QueueState) -> Option<SyncRequest>) -> Wait {
        let mut state = self.lock();
        loop {
            if let Some(request) = take(&mut state) {
                return Wait::Request(request);
            }
            if state.closed {
                return Wait::Closed;
            }
            let now = Instant::now();
            if now >= deadline {
                return Wait::TimedOut;
            }
            state = match self.ready.wait_timeout(state, deadline - now) {
                Ok((guard, _)) => guard,
                Err(p) => p.into_inner().0,
            };
        }
    }

    /// Wakes every waiter; `pop_until` then drains what is left and reports `Closed`.
    pub fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_all();
    }

    /// Requests waiting now.
    pub fn len(&self) -> usize {
        self.lock().requests.len()
    }

    /// Whether nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Pushes refused so far because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.lock().dropped
    }

    /// Drops the waiting requests `keep` refuses, keeping the others in order.
    pub fn retain(&self, mut keep: impl FnMut(&SyncRequest) -> bool) {
        let mut state = self.lock();
        state.requests.retain(|(request, _)| keep(request));
        state.bytes = state.requests.iter().map(|(request, _)| Self::request_bytes(request)).sum();
    }

    /// Every waiting request, oldest first, removed from the queue (a state hand-over).
    pub fn drain(&self) -> Vec<SyncRequest> {
        let mut state = self.lock();
        state.bytes = 0;
        state.requests.drain(..).map(|(request, _)| request).collect()
    }
}

impl Default for SyncQueue {
    fn default() -> Self {
        SyncQueue::new(DEFAULT_CAPACITY)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn req(id: u64) -> SyncRequest {
        SyncRequest { id, pod_uid: format!("uid-{id}"), version: 1 }
    }

    #[test]
    fn first_in_first_out_until_the_oldest_waited_too_long_then_newest_first() {
        let q = SyncQueue::new(10);
        for id in 1..=4 {
            assert!(q.push(req(id)));
        }
        let patient = Duration::from_secs(3600);
        assert!(!q.backed_up(patient));
        assert_eq!(q.pop_adaptive(patient).map(|r| r.id), Some(1), "not backed up: the oldest");
        std::thread::sleep(Duration::from_millis(5));
        let short = Duration::from_millis(1);
        assert!(q.backed_up(short));
        assert_eq!(q.pop_adaptive(short).map(|r| r.id), Some(4), "backed up: the newest");
        let deadline = Instant::now() + Duration::from_secs(1);
        assert_eq!(q.pop_until_adaptive(deadline, short), Wait::Request(req(3)));
        // Dropping requests keeps each one's age: the one left is still the oldest.
        q.retain(|r| r.id == 2);
        assert!(q.push(req(5)));
        assert!(q.backed_up(short), "request 2 kept its push time");
        assert_eq!(q.pop_until_adaptive(deadline, patient), Wait::Request(req(2)));
        assert_eq!(q.drain(), vec![req(5)]);
        assert!(!q.backed_up(short), "nothing waits");
        assert_eq!(q.bytes(), 0);
    }

    #[test]
    fn refuses_beyond_its_bytes() {
        let queue = SyncQueue::new(10).with_max_bytes(1000);
        let big = |id| SyncRequest { id, pod_uid: "u".repeat(300), version: 1 };
        assert!(queue.push(big(1)) && queue.push(big(2)) && queue.push(big(3)));
        assert!(!queue.push(big(4)), "the fourth would hold 972 + 324 bytes");
        assert_eq!(queue.bytes(), 3 * 324);
        queue.pop();
        assert_eq!(queue.bytes(), 2 * 324);
        assert!(queue.push(big(4)));
        queue.retain(|r| r.id == 4);
        assert_eq!(queue.bytes(), 324);
        queue.drain();
        assert_eq!(queue.bytes(), 0);
    }

    #[test]
    fn refuses_beyond_capacity_and_counts_drops() {
        let q = SyncQueue::new(2);
        assert!(q.push(req(1)));
        assert!(q.push(req(2)));
        assert!(!q.push(req(3)));
        assert_eq!(q.dropped(), 1);
        assert_eq!(q.pop().map(|r| r.id), Some(1));
        assert!(q.push(req(4)));
        assert_eq!(q.drain().iter().map(|r| r.id).collect::<Vec<_>>(), [2, 4]);
    }

    #[test]
    fn waiting_times_out_and_wakes_on_push_and_close() {
        let q = std::sync::Arc::new(SyncQueue::new(10));
        assert_eq!(q.pop_until(Instant::now() + Duration::from_millis(10)), Wait::TimedOut);
        let pusher = {
            let q = q.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                q.push(req(7));
                q.close();
            })
        };
        let far = Instant::now() + Duration::from_secs(30);
        assert_eq!(q.pop_until(far), Wait::Request(req(7)));
        assert_eq!(q.pop_until(far), Wait::Closed);
        pusher.join().unwrap();
    }
}
