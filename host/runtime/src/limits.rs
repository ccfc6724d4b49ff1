//! The sandbox's limits: what one plugin instance may use, and how a breach is named.
//!
//! The plugin is untrusted. Every instance gets a memory cap (enforced by the store's
//! [`ResourceLimiter`]), a CPU budget per call (guest time only, enforced by epoch
//! interruption; optionally fuel, which is deterministic, for fuzzing), caps on tables
//! and instances, and a cap on every string or list that crosses the boundary. A breach
//! traps the call with a message naming the limit; the host maps it to
//! [`FaultKind`] and keeps serving.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use wasmtime::{Engine, ResourceLimiter};

/// Limits for one plugin instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Linear memory, in bytes, across the instance's memories. 10,000 cached pods of
    /// 3 KB statuses take about 60 MB inside the plugin; the default leaves room for
    /// ten times that.
    pub memory_bytes: usize,
    /// Time one export call may use (default 5 s: an honest v2 `sync-batch` over 10,000
    /// pods takes 1.4–1.7 s here in release, guest and imports together, and a loaded
    /// node must not fault an honest plugin): the guest's (wall time while the plugin runs)
    /// plus what its imports cost the host (the API server backend by the thread's CPU
    /// time, so a slow API server is not the plugin's fault; the imports that never
    /// wait by wall time). None
    /// turns the budget off, and with it the epoch checks compiled into the plugin
    /// (they cost about a quarter of the plugin's speed on JSON-heavy calls): only for
    /// a plugin the agent trusts, or when fuel bounds it instead.
    pub call_cpu_time: Option<Duration>,
    /// Fuel per call, when set: deterministic (the same trace always runs out at the
    /// same instruction), for fuzzing and replay; costs some speed.
    pub call_fuel: Option<u64>,
    /// Elements across the instance's tables.
    pub table_elements: usize,
    /// Core instances, tables and memories an instance may create.
    pub instances: usize,
    /// Tables an instance may create.
    pub tables: usize,
    /// Memories an instance may create.
    pub memories: usize,
    /// The largest string or list that may cross the boundary in either direction
    /// (pods, statuses, messages, UID lists). Kubernetes caps an object at 1.5 MiB in
    /// etcd, so a larger pod or status is nonsense.
    pub max_boundary_bytes: usize,
    /// The largest state document or change set (`save-state`, `load-state`), which
    /// holds every cached status.
    pub max_state_bytes: usize,
    /// Native stack the plugin may use.
    pub max_wasm_stack: usize,
    /// Import calls one export call may make. An honest v2 `sync-batch` writing
    /// 10,000 statuses makes 50,001, five a pod (`tests/all/hostile.rs` measures it).
    pub call_imports: u64,
    /// Bytes one export call may move through its imports, arguments and results
    /// together. An honest v2 `sync-batch` writing 10,000 small statuses moves 9 MB;
    /// with 2.5 KB statuses and pods, about 10 KB a pod (100 MB).
    pub call_import_bytes: u64,
    /// Plugin log lines: the burst a plugin may log at once (lines at an enabled
    /// level; a line costs one token per started KiB).
    pub log_burst: u32,
    /// Plugin log lines: tokens refilled per second.
    pub log_per_second: u32,
    /// API calls one sync of a 0.2.0 plugin may ask for. An honest sync asks for at
    /// most four (logic v3: a patch refused, a read, the patch again, a delete); a sync
    /// that asks call after call would hold its pod, and a worker, forever.
    pub sync_calls: u32,
    /// The largest plugin component loaded, in bytes (default 64 MiB). The built plugins
    /// are about 3 MiB (a debug build of one about 20); the cap keeps a wrong file
    /// (`/dev/zero`, a disk image) from being read whole before it is refused.
    pub max_component_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 640 << 20,
            call_cpu_time: Some(Duration::from_secs(5)),
            call_fuel: None,
            table_elements: 100_000,
            instances: 16,
            tables: 16,
            memories: 4,
            max_boundary_bytes: 4 << 20,
            max_state_bytes: 512 << 20,
            max_wasm_stack: 1 << 20,
            call_imports: 1_000_000,
            call_import_bytes: 1 << 30,
            log_burst: 1_000,
            log_per_second: 100,
            sync_calls: 16,
            max_component_bytes: 64 << 20,
        }
    }
}

/// The longest resize-condition reason the host passes a plugin, in bytes: a reason is
/// one CamelCase word, and metav1.Condition's validation caps it at 1024. A longer one
/// is refused ([`crate::CallError::TooLarge`]) before the plugin sees it.
pub const MAX_RESIZE_REASON_BYTES: usize = 1024;
/// The longest resize-condition message the host passes a plugin, in bytes
/// (metav1.Condition's cap, 32 KiB), refused as [`MAX_RESIZE_REASON_BYTES`] is.
pub const MAX_RESIZE_MESSAGE_BYTES: usize = 32 << 10;
/// The longest resize condition a plugin may return, in bytes of JSON: the longest
/// reason and message, escaped at worst six bytes a byte (`\u00XX`), and room for the
/// type, status, times and generation. A plugin over it is faulted
/// ([`FaultKind::Oversized`]).
pub const MAX_RESIZE_CONDITION_BYTES: usize = 6 * (MAX_RESIZE_REASON_BYTES + MAX_RESIZE_MESSAGE_BYTES) + 1024;

/// The engine's epoch advances every tick; a call's CPU budget is counted in ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Advances the engine's epoch every [`EPOCH_TICK`] until dropped: one thread per
/// runtime, shared by every instance of it.
#[derive(Debug)]
pub struct EpochTicker {
    stop: Arc<AtomicBool>,
}

impl EpochTicker {
    /// Starts ticking `engine`'s epoch.
    pub fn start(engine: &Engine) -> std::io::Result<EpochTicker> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        // A weak engine: the ticker must not keep a dropped runtime's engine alive.
        let engine = engine.weak();
        std::thread::Builder::new().name("podstatus-epoch".into()).spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match engine.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => break,
                }
                std::thread::sleep(EPOCH_TICK);
            }
        })?;
        Ok(EpochTicker { stop })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Which limit a fault breached, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// The plugin trapped on its own (a panic, `unreachable`, a bad memory access).
    Trap,
    /// It ran past its CPU time for the call.
    CpuTime,
    /// It ran out of fuel for the call.
    Fuel,
    /// It asked for more memory than its cap.
    Memory,
    /// It overflowed its stack.
    StackOverflow,
    /// It passed or returned a string or list over the boundary cap.
    Oversized,
    /// It created more tables, instances or table elements than allowed.
    Resources,
    /// It made more import calls in one export call, or moved more bytes through its
    /// imports, than allowed.
    Imports,
    /// It named a pod whose status the host never handed it, or has dropped since: in a
    /// sync request it pushed, a sync it planned, a batch cursor, or an API call (whose
    /// UID precondition must name the handed pod too).
    ForeignUid,
    /// Its state (the supervisor's copy) would grow past the state limit.
    StateSize,
    /// It returned a batch slice whose `next` does not move past the slice's start, so
    /// the batch would never end.
    Cursor,
    /// It planned a sync under the ID of one it has not ended, or the same pod twice in
    /// one plan.
    Plan,
    /// One of its syncs asked for more API calls than [`Limits::sync_calls`].
    SyncCalls,
    /// One of its syncs asked for a call on another pod than the one it was planned for.
    WrongPod,
    /// One of its syncs ended claiming an outcome its calls do not show: `deleted`
    /// without a delete the API server answered, `recreated` without a read that found
    /// another pod under the name.
    Outcome,
    /// It answered `get-pod-resize-conditions` with something the contract does not
    /// allow: more than two conditions, one that is not a core/v1 PodCondition object,
    /// or not PodResizePending then PodResizeInProgress, each at most once.
    ResizeConditions,
    /// It asked to write a status whose content the host did not hand for the pod: a
    /// phase no status handed for it carries (see `crate::reach`).
    Content,
}

impl FaultKind {
    /// A short name for logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Trap => "trap",
            FaultKind::CpuTime => "cpu-time",
            FaultKind::Fuel => "fuel",
            FaultKind::Memory => "memory",
            FaultKind::StackOverflow => "stack-overflow",
            FaultKind::Oversized => "oversized",
            FaultKind::Resources => "resources",
            FaultKind::Imports => "imports",
            FaultKind::ForeignUid => "foreign-uid",
            FaultKind::StateSize => "state-size",
            FaultKind::Cursor => "cursor",
            FaultKind::Plan => "plan",
            FaultKind::SyncCalls => "sync-calls",
            FaultKind::WrongPod => "wrong-pod",
            FaultKind::Outcome => "outcome",
            FaultKind::ResizeConditions => "resize-conditions",
            FaultKind::Content => "content",
        }
    }
}

/// Per-instance accounting: the [`ResourceLimiter`] of the store, and the CPU clock of
/// the current call.
#[derive(Debug)]
pub struct Sandbox {
    pub(crate) limits: Limits,
    /// Set by whichever check breached a limit, so the trap can be named.
    pub(crate) breach: Option<FaultKind>,
    /// Guest time used by the current call so far.
    pub(crate) guest_time: Duration,
    /// When the guest last got control.
    pub(crate) guest_since: Option<Instant>,
    /// Host CPU time spent serving the current call's imports so far.
    pub(crate) host_time: Duration,
    /// When the current import started.
    host_since: Option<Instant>,
    /// The current import's time in the API server backend: (wall, thread CPU).
    backend: (Duration, Duration),
    /// Import calls of the current export call.
    pub(crate) imports: u64,
    /// Bytes moved through imports by the current export call.
    pub(crate) import_bytes: u64,
    /// Linear memory across the instance's memories.
    memory_total: usize,
    /// Table elements across the instance's tables.
    table_total: usize,
}

/// What one export call used, for tests and tuning.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallUsage {
    /// Guest (wall) time.
    pub guest_time: Duration,
    /// Host CPU time serving its imports.
    pub host_time: Duration,
    /// Import calls.
    pub imports: u64,
    /// Bytes through imports, both ways.
    pub import_bytes: u64,
}

impl Sandbox {
    /// Accounting under `limits`.
    pub fn new(limits: Limits) -> Self {
        Sandbox {
            limits,
            breach: None,
            guest_time: Duration::ZERO,
            guest_since: None,
            host_time: Duration::ZERO,
            host_since: None,
            backend: (Duration::ZERO, Duration::ZERO),
            imports: 0,
            import_bytes: 0,
            memory_total: 0,
            table_total: 0,
        }
    }

    /// What the current (or last) call used.
    pub fn usage(&self) -> CallUsage {
        CallUsage {
            guest_time: self.guest_time,
            host_time: self.host_time,
            imports: self.imports,
            import_bytes: self.import_bytes,
        }
    }

    /// Linear memory across the instance's memories now.
    pub fn memory_bytes(&self) -> usize {
        self.memory_total
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Starts a call's accounting.
    pub(crate) fn begin_call(&mut self) {
        self.breach = None;
        self.guest_time = Duration::ZERO;
        self.guest_since = None;
        self.host_time = Duration::ZERO;
        self.host_since = None;
        self.backend = (Duration::ZERO, Duration::ZERO);
        self.imports = 0;
        self.import_bytes = 0;
    }

    /// Counts one import call moving `bytes` in; traps past the call's import budget.
    pub(crate) fn charge_import(&mut self, import: &str, bytes: usize) -> wasmtime::Result<()> {
        self.imports += 1;
        if self.imports > self.limits.call_imports {
            self.breach = Some(FaultKind::Imports);
            wasmtime::bail!(
                "{import}: the plugin made more than {} import calls in one call",
                self.limits.call_imports
            );
        }
        self.charge_bytes(import, bytes)
    }

    /// Counts bytes an import moves (its arguments or its result).
    pub(crate) fn charge_bytes(&mut self, import: &str, bytes: usize) -> wasmtime::Result<()> {
        self.import_bytes = self.import_bytes.saturating_add(bytes as u64);
        if self.import_bytes > self.limits.call_import_bytes {
            self.breach = Some(FaultKind::Imports);
            wasmtime::bail!(
                "{import}: the plugin moved more than {} bytes through its imports in one call",
                self.limits.call_import_bytes
            );
        }
        Ok(())
    }

    /// An import starts: the host's clock for the call runs.
    pub(crate) fn host_enters(&mut self) {
        self.host_since = Some(Instant::now());
    }

    /// Runs `backend` (a call to the API server the import forwards to) measuring the
    /// thread's CPU time rather than the wall time: waiting on the network is not the
    /// plugin's cost, the work of serving it is. Two `clock_gettime` calls for the
    /// thread's CPU clock are real system calls (about a microsecond here), so the
    /// imports that never wait (clock, logging, pod manager, queue) are charged their
    /// wall time instead, which for in-process work is their CPU time.
    pub(crate) fn backend_call<T>(&mut self, backend: impl FnOnce() -> T) -> T {
        let (wall, cpu) = (Instant::now(), thread_cpu_time());
        let result = backend();
        self.backend.0 += wall.elapsed();
        if let (Some(cpu), Some(now)) = (cpu, thread_cpu_time()) {
            self.backend.1 += now.saturating_sub(cpu);
        }
        result
    }

    /// An import returns: its time counts against the call's budget (the API server
    /// backend's by its CPU time, see [`Sandbox::backend_call`]).
    pub(crate) fn host_leaves(&mut self) -> wasmtime::Result<()> {
        if let Some(since) = self.host_since.take() {
            let (backend_wall, backend_cpu) = std::mem::take(&mut self.backend);
            self.host_time += since.elapsed().saturating_sub(backend_wall) + backend_cpu;
        }
        self.check_cpu_time()
    }

    /// The guest gets control; returns the epoch ticks it may run for.
    pub(crate) fn guest_enters(&mut self) -> u64 {
        self.guest_since = Some(Instant::now());
        let budget = self.limits.call_cpu_time.unwrap_or(Duration::MAX);
        let left = budget.saturating_sub(self.guest_time + self.host_time);
        // At least one tick: the check below catches an exhausted budget.
        u64::try_from(left.as_nanos() / EPOCH_TICK.as_nanos()).unwrap_or(u64::MAX).max(1)
    }

    /// The guest hands control to the host; traps if it used up its CPU time.
    pub(crate) fn guest_leaves(&mut self) -> wasmtime::Result<()> {
        if let Some(since) = self.guest_since.take() {
            self.guest_time += since.elapsed();
        }
        self.check_cpu_time()
    }

    /// Traps once the call's guest and host time together pass its CPU time budget.
    fn check_cpu_time(&mut self) -> wasmtime::Result<()> {
        if let Some(budget) = self.limits.call_cpu_time
            && self.guest_time + self.host_time > budget
        {
            self.breach = Some(FaultKind::CpuTime);
            wasmtime::bail!(
                "the plugin used more than its CPU time of {budget:?} for one call ({:?} of it in host imports)",
                self.host_time
            );
        }
        Ok(())
    }

    /// Checks a string or list the plugin passed to an import.
    pub(crate) fn check_arg(&mut self, import: &str, what: &str, len: usize) -> wasmtime::Result<()> {
        if len > self.limits.max_boundary_bytes {
            self.breach = Some(FaultKind::Oversized);
            wasmtime::bail!(
                "{import}: {what} of {len} bytes exceeds the boundary limit of {} bytes",
                self.limits.max_boundary_bytes
            );
        }
        Ok(())
    }
}

impl ResourceLimiter for Sandbox {
    fn memory_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        // Per instance, not per memory: with several memories the sum is what the host holds.
        let total = self.memory_total.saturating_sub(current).saturating_add(desired);
        if total > self.limits.memory_bytes {
            self.breach = Some(FaultKind::Memory);
            wasmtime::bail!(
                "the plugin asked to grow its memory from {current} to {desired} bytes ({total} bytes across its \
                 memories), over its limit of {} bytes",
                self.limits.memory_bytes
            );
        }
        self.memory_total = total;
        Ok(true)
    }

    fn table_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        let total = self.table_total.saturating_sub(current).saturating_add(desired);
        if total > self.limits.table_elements {
            self.breach = Some(FaultKind::Resources);
            wasmtime::bail!(
                "the plugin asked for a table of {desired} elements ({total} across its tables), over its limit of {}",
                self.limits.table_elements
            );
        }
        self.table_total = total;
        Ok(true)
    }

    fn instances(&self) -> usize {
        self.limits.instances
    }

    fn tables(&self) -> usize {
        self.limits.tables
    }

    fn memories(&self) -> usize {
        self.limits.memories
    }
}

/// The calling thread's CPU time (not wall time: an import waiting on the network
/// does not use the plugin's budget).
#[cfg(unix)]
fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// Elsewhere no thread clock: host time is not counted (imports are still bounded in
/// count and bytes).
#[cfg(not(unix))]
fn thread_cpu_time() -> Option<Duration> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_limited_across_memories_not_per_memory() {
        let mut sandbox = Sandbox::new(Limits { memory_bytes: 100 << 20, ..Limits::default() });
        // Four memories of 30 MiB each: each under the limit, the sum over it.
        for _ in 0..3 {
            assert!(sandbox.memory_growing(0, 30 << 20, None).unwrap());
        }
        let err = sandbox.memory_growing(0, 30 << 20, None).unwrap_err().to_string();
        assert!(err.contains("across its memories"), "{err}");
        assert_eq!(sandbox.breach, Some(FaultKind::Memory));
        // Growing one of them counts only the growth.
        assert!(sandbox.memory_growing(30 << 20, 40 << 20, None).unwrap());
        assert_eq!(sandbox.memory_bytes(), 100 << 20);
    }

    #[test]
    fn tables_are_limited_across_tables() {
        let mut sandbox = Sandbox::new(Limits { table_elements: 100, ..Limits::default() });
        assert!(sandbox.table_growing(0, 60, None).unwrap());
        assert!(sandbox.table_growing(0, 60, None).is_err());
    }

    #[test]
    fn imports_are_counted_per_call() {
        let mut sandbox = Sandbox::new(Limits { call_imports: 3, call_import_bytes: 100, ..Limits::default() });
        for _ in 0..3 {
            sandbox.charge_import("get-pod", 10).unwrap();
        }
        assert!(sandbox.charge_import("get-pod", 10).is_err());
        assert_eq!(sandbox.breach, Some(FaultKind::Imports));
        sandbox.begin_call();
        assert!(sandbox.charge_import("get-pod", 101).is_err(), "bytes count too");
    }
}
