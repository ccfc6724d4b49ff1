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
    /// Guest time one call may use (wall time while the plugin runs; time in host
    /// imports does not count: a slow API server is not the plugin's fault). None
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
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 640 << 20,
            call_cpu_time: Some(Duration::from_secs(2)),
            call_fuel: None,
            table_elements: 100_000,
            instances: 16,
            tables: 16,
            memories: 4,
            max_boundary_bytes: 4 << 20,
            max_state_bytes: 512 << 20,
            max_wasm_stack: 1 << 20,
        }
    }
}

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
}

impl Sandbox {
    /// Accounting under `limits`.
    pub fn new(limits: Limits) -> Self {
        Sandbox { limits, breach: None, guest_time: Duration::ZERO, guest_since: None }
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
    }

    /// The guest gets control; returns the epoch ticks it may run for.
    pub(crate) fn guest_enters(&mut self) -> u64 {
        self.guest_since = Some(Instant::now());
        let budget = self.limits.call_cpu_time.unwrap_or(Duration::MAX);
        let left = budget.saturating_sub(self.guest_time);
        // At least one tick: the check below catches an exhausted budget.
        u64::try_from(left.as_nanos() / EPOCH_TICK.as_nanos()).unwrap_or(u64::MAX).max(1)
    }

    /// The guest hands control to the host; traps if it used up its CPU time.
    pub(crate) fn guest_leaves(&mut self) -> wasmtime::Result<()> {
        if let Some(since) = self.guest_since.take() {
            self.guest_time += since.elapsed();
        }
        if let Some(budget) = self.limits.call_cpu_time
            && self.guest_time > budget
        {
            self.breach = Some(FaultKind::CpuTime);
            wasmtime::bail!("the plugin used more than its CPU time of {budget:?} for one call");
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
        if desired > self.limits.memory_bytes {
            self.breach = Some(FaultKind::Memory);
            wasmtime::bail!(
                "the plugin asked to grow its memory from {current} to {desired} bytes, over its limit of {} bytes",
                self.limits.memory_bytes
            );
        }
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.limits.table_elements {
            self.breach = Some(FaultKind::Resources);
            wasmtime::bail!(
                "the plugin asked for a table of {desired} elements, over its limit of {}",
                self.limits.table_elements
            );
        }
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
