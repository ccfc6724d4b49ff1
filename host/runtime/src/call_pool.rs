//! Threads that make the API calls of many handles' syncs: a fleet's nodes share one
//! [`CallPool`] instead of each starting workers of its own.
//!
//! A handle alone starts its own workers (up to
//! [`SchedulerConfig::max_calls_in_flight`](crate::SchedulerConfig::max_calls_in_flight),
//! 64 by default), which is what one node wants and what a thousand cannot afford:
//! every thread costs a stack and, once it enters a plugin, the signal stack wasmtime
//! maps for it. With a pool the process has a fixed number of call threads whatever
//! the number of nodes, and each node still has at most its own limit of calls in
//! flight (its runner keeps the rest in a backlog of its own, so one busy node cannot
//! take every thread of the pool and then queue its calls ahead of the others').

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

/// Work for a pool thread.
pub(crate) type Task = Box<dyn FnOnce() + Send>;

/// A fixed set of threads running tasks in the order they come; see the module
/// documentation. Dropping the last reference lets the threads finish the tasks handed
/// over, then joins them.
pub struct CallPool {
    sender: Mutex<Option<Sender<Task>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    size: usize,
}

impl CallPool {
    /// A pool of `threads` threads (at least one), all started now: a fleet knows its
    /// cost from its start.
    pub fn new(threads: usize) -> std::io::Result<Arc<Self>> {
        let (sender, receiver) = channel::<Task>();
        let receiver = Arc::new(Mutex::new(receiver));
        let size = threads.max(1);
        let mut started = Vec::with_capacity(size);
        for n in 0..size {
            let receiver = Arc::clone(&receiver);
            let thread = std::thread::Builder::new().name(format!("podstatus-calls-{n}")).spawn(move || run(&receiver));
            match thread {
                Ok(thread) => started.push(thread),
                Err(e) => {
                    // The threads already started end once the sender is gone.
                    drop(sender);
                    for thread in started {
                        let _ = thread.join();
                    }
                    return Err(e);
                }
            }
        }
        Ok(Arc::new(CallPool { sender: Mutex::new(Some(sender)), threads: Mutex::new(started), size }))
    }

    /// Threads in the pool.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Hands `task` to a thread; gives it back when the pool is shutting down.
    pub(crate) fn submit(&self, task: Task) -> Result<(), Task> {
        match &*self.sender.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(sender) => sender.send(task).map_err(|unsent| unsent.0),
            None => Err(task),
        }
    }
}

impl Drop for CallPool {
    fn drop(&mut self) {
        self.sender.lock().unwrap_or_else(PoisonError::into_inner).take();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(PoisonError::into_inner));
        for thread in threads {
            // A task of a pool thread may hold the last reference (through a handle):
            // that thread cannot join itself, and ends once the sender is gone.
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

impl std::fmt::Debug for CallPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallPool").field("size", &self.size).finish()
    }
}

/// A pool thread: runs tasks until the pool is dropped.
fn run(receiver: &Mutex<Receiver<Task>>) {
    loop {
        let task = receiver.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(task) = task else { return };
        task();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn tasks_run_on_at_most_the_pools_threads_and_a_dropped_pool_finishes_them() {
        let pool = CallPool::new(3).expect("a pool starts");
        assert_eq!(pool.size(), 3);
        let (running, most, done) =
            (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        for _ in 0..12 {
            let (running, most, done) = (Arc::clone(&running), Arc::clone(&most), Arc::clone(&done));
            let task: Task = Box::new(move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(5));
                running.fetch_sub(1, Ordering::SeqCst);
                done.fetch_add(1, Ordering::SeqCst);
            });
            assert!(pool.submit(task).is_ok());
        }
        drop(pool);
        assert_eq!(done.load(Ordering::SeqCst), 12, "every task handed over ran");
        let most = most.load(Ordering::SeqCst);
        assert!((1..=3).contains(&most), "{most} tasks at once on 3 threads");
    }

    #[test]
    fn a_pool_asked_for_no_thread_has_one() {
        assert_eq!(CallPool::new(0).expect("starts").size(), 1);
    }
}
