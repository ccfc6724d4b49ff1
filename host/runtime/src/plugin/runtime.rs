//! The engine, compilation (through the artifact cache) and pre-instantiation.

use std::path::PathBuf;
use std::sync::Arc;

use wasmtime::component::{Component, Linker};
use wasmtime::{CallHook, Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};

use crate::bindings::{Contract, PerContract, StatusManagerIndices, StatusManagerPre, v0_1_0, v0_1_1, v0_2_1};
use crate::imports::{self, HostState};
use crate::limits::{EpochTicker, Limits, Sandbox};
use crate::plugin::cache::{ArtifactCache, CacheOutcome, EvictionPolicy};
use crate::plugin::component::{ComponentPlugin, Exports};
use crate::world::World;

/// Why a plugin could not be loaded or instantiated.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The engine could not be configured.
    #[error("configuring the wasmtime engine: {0:#}")]
    Engine(#[source] wasmtime::Error),
    /// The bytes are not a valid component (or could not be compiled).
    #[error("not a loadable WebAssembly component: {0:#}")]
    Compile(#[source] wasmtime::Error),
    /// The component does not implement a `status-manager` world this host serves
    /// (`kubelet:status@0.1.0`, `@0.1.1`, `@0.2.0` or `@0.2.1`): it imports something the
    /// host does not provide, or its exports are of another contract version.
    #[error("the component does not implement kubelet:status/status-manager@0.1.0, 0.1.1, 0.2.0 or 0.2.1: {0:#}")]
    WrongWorld(#[source] wasmtime::Error),
    /// Instantiation failed (for example the plugin's start-up trapped).
    #[error("instantiating the plugin: {0:#}")]
    Instantiate(#[source] wasmtime::Error),
    /// The plugin file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not WebAssembly at all: they do not start with its magic number
    /// (`\0asm`). Checked first, so that a wrong file is named as such rather than by a
    /// parser's dump of the bytes it expected.
    #[error("not a WebAssembly file (it does not start with \\0asm)")]
    NotWasm,
    /// A core WebAssembly module: a plugin is a component (the module wrapped with its
    /// WIT world, as `wasm-tools component new` or this workspace's build makes it).
    #[error("a core WebAssembly module, not a component (wrap it with `wasm-tools component new`)")]
    CoreModule,
    /// More bytes than [`Limits::max_component_bytes`]: refused before it is read whole
    /// or compiled.
    #[error("larger than {limit} bytes, the limit for a plugin")]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// A plugin file that did not load, for any of the reasons above: the file named.
    #[error("{}: {source}", .path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why it did not load.
        #[source]
        source: Box<LoadError>,
    },
}

/// The first four bytes of every WebAssembly binary.
const WASM_MAGIC: &[u8; 4] = b"\0asm";
/// The layer field of a component's header (bytes 6 and 7; 0 is a core module).
const COMPONENT_LAYER: [u8; 2] = [0x01, 0x00];

/// Refuses what is surely no component before a parser sees it: a wrong file, a core
/// module, more than `limit` bytes.
fn check_header(bytes: &[u8], limit: u64) -> Result<(), LoadError> {
    if bytes.len() as u64 > limit {
        return Err(LoadError::TooLarge { limit });
    }
    if !bytes.starts_with(WASM_MAGIC) {
        return Err(LoadError::NotWasm);
    }
    if bytes.len() >= 8 && bytes[6..8] != COMPONENT_LAYER {
        return Err(LoadError::CoreModule);
    }
    Ok(())
}

/// How the runtime is set up.
#[derive(Clone, Debug, Default)]
pub struct RuntimeConfig {
    /// Where compiled artifacts are kept; None compiles every time.
    pub cache_dir: Option<PathBuf>,
    /// What every instance may use.
    pub limits: Limits,
    /// When the artifact cache removes artifacts.
    pub cache_eviction: EvictionPolicy,
    /// Plugin instances to keep slots for in wasmtime's pooling allocator (None: each
    /// instance is allocated on demand). See [`PoolSize`].
    pub pool: Option<PoolSize>,
    /// Writes `/tmp/perf-PID.map` naming each compiled plugin function, so that `perf`
    /// attributes samples in plugin code to the plugin's own (Rust) functions. For
    /// profiling only: the map grows with every module loaded.
    pub perf_map: bool,
}

/// How many plugin instances a runtime's pool holds at once: a fleet's nodes, and
/// those being swapped or recovered (each is a second instance for a moment).
///
/// With a pool, every instance's memories and tables are slots reserved once, when the
/// runtime starts, and handed out and back with the copy-on-write image of the
/// plugin's memory mapped in, instead of a fresh mapping per instance: what a fleet of
/// a thousand instances of one component, swapped now and then, is built for. Each slot
/// takes address space, not memory: a memory slot is the 4 GiB (and guard) a 32-bit
/// memory needs to run without bounds checks, and every instance has the slots its
/// limits allow ([`Limits::memories`], [`Limits::tables`], [`Limits::instances`]),
/// so that a plugin that takes all it may cannot starve another node of its slots.
/// When the pool is full, another instance is refused (a swap or recovery then
/// fails and the running plugin keeps serving).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolSize {
    /// Plugin instances alive at once, at most.
    pub instances: u32,
}

impl PoolSize {
    /// A pool for `nodes` nodes: one instance each, and a quarter more (at least 8)
    /// for the swaps and recoveries under way.
    pub fn for_nodes(nodes: usize) -> Self {
        let nodes = u32::try_from(nodes).unwrap_or(u32::MAX);
        PoolSize { instances: nodes.saturating_add((nodes / 4).max(8)) }
    }

    /// wasmtime's configuration of this pool for instances within `limits`.
    fn config(self, limits: &Limits) -> PoolingAllocationConfig {
        let per = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(self.instances)
            .max_core_instances_per_component(per(limits.instances))
            .total_core_instances(self.instances.saturating_mul(per(limits.instances)))
            .max_memories_per_component(per(limits.memories))
            .max_memories_per_module(per(limits.memories))
            .total_memories(self.instances.saturating_mul(per(limits.memories)))
            .max_tables_per_component(per(limits.tables))
            .max_tables_per_module(per(limits.tables))
            .total_tables(self.instances.saturating_mul(per(limits.tables)))
            .table_elements(limits.table_elements)
            .max_memory_size(limits.memory_bytes);
        pool
    }
}

impl RuntimeConfig {
    /// The default: artifacts cached in [`ArtifactCache::default_dir`].
    pub fn with_default_cache() -> Self {
        RuntimeConfig { cache_dir: ArtifactCache::default_dir(), ..RuntimeConfig::default() }
    }
}

/// One engine and linker, shared by every plugin it loads. A clone shares them (and the
/// CPU clock): the nodes of a fleet each hold one, to load what they swap to.
#[derive(Clone)]
pub struct PluginRuntime {
    engine: Engine,
    linker: Linker<HostState>,
    cache: Option<ArtifactCache>,
    limits: Limits,
    /// Shared with every image, so instances keep their CPU clock while they live
    /// (none without a CPU budget).
    ticker: Option<Arc<EpochTicker>>,
}

impl PluginRuntime {
    /// A runtime configured by `config`.
    pub fn new(config: &RuntimeConfig) -> Result<Self, LoadError> {
        let limits = config.limits.clone();
        let mut wasm = Config::new();
        // The plugin's calls are synchronous: without the async machinery a call costs a
        // third of what it does by default.
        wasm.concurrency_support(false);
        // A CPU budget per call (epochs are cheap: a load and compare per loop header
        // and function entry); fuel only where determinism is worth its cost.
        wasm.epoch_interruption(limits.call_cpu_time.is_some());
        wasm.consume_fuel(limits.call_fuel.is_some());
        wasm.max_wasm_stack(limits.max_wasm_stack);
        if config.perf_map {
            wasm.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        if let Some(pool) = config.pool {
            wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool.config(&limits)));
        }
        let engine = Engine::new(&wasm).map_err(LoadError::Engine)?;
        let mut linker = Linker::new(&engine);
        imports::add_to_linker(&mut linker).map_err(LoadError::Engine)?;
        let ticker = match limits.call_cpu_time {
            Some(_) => Some(Arc::new(EpochTicker::start(&engine).map_err(|e| LoadError::Engine(e.into()))?)),
            None => None,
        };
        Ok(PluginRuntime {
            engine,
            linker,
            cache: config.cache_dir.clone().map(|dir| ArtifactCache::new(dir).with_policy(config.cache_eviction)),
            limits,
            ticker,
        })
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The limits every plugin it loads runs within (a caller that has a plugin's bytes
    /// from elsewhere, a fleet fetching a rollout's by URL, reads no more than
    /// [`Limits::max_component_bytes`]).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Compiles (or loads from the cache) and pre-instantiates a plugin, checking that
    /// it implements the world this host serves.
    pub fn load(&self, bytes: &[u8]) -> Result<PluginImage, LoadError> {
        check_header(bytes, self.limits.max_component_bytes)?;
        let (component, cache) = match &self.cache {
            Some(cache) => cache.load_or_compile(&self.engine, bytes).map_err(LoadError::Compile)?,
            None => (
                Component::new(&self.engine, bytes).map_err(LoadError::Compile)?,
                CacheOutcome::Compiled { stored: false },
            ),
        };
        let instance_pre = self.linker.instantiate_pre(&component).map_err(LoadError::WrongWorld)?;
        // The newest contract first: a 0.1.1 plugin also satisfies 0.1.0's exports.
        let mut resize = None;
        let pre = match StatusManagerPre::new(instance_pre.clone()) {
            Ok(pre) => {
                // 0.2.0's bindings also take a 0.2.1 plugin (semver lookup); one that
                // has the resize functions is a 0.2.1 plugin, loaded through both.
                if let Ok(extra) = v0_2_1::manager::GuestIndices::new(&instance_pre) {
                    let base = StatusManagerIndices::new(&instance_pre).map_err(LoadError::WrongWorld)?;
                    resize = Some(Arc::new(ResizeIndices { base, extra }));
                }
                Pre::V0_2_0(pre)
            }
            Err(newest) => match v0_1_1::StatusManagerPre::new(instance_pre.clone()) {
                Ok(pre) => Pre::V0_1_1(pre),
                Err(middle) => match v0_1_0::StatusManagerPre::new(instance_pre) {
                    Ok(pre) => Pre::V0_1_0(pre),
                    Err(oldest) => {
                        return Err(LoadError::WrongWorld(wasmtime::format_err!(
                            "as 0.2.0: {newest:#}; as 0.1.1: {middle:#}; as 0.1.0: {oldest:#}"
                        )));
                    }
                },
            },
        };
        Ok(PluginImage { pre, resize, cache, limits: self.limits.clone(), _ticker: self.ticker.clone() })
    }

    /// Reads and loads a plugin file, reading no more than
    /// [`Limits::max_component_bytes`] of it (and one byte to know it is more); a
    /// failure names the file.
    pub fn load_file(&self, path: impl Into<PathBuf>) -> Result<PluginImage, LoadError> {
        let path = path.into();
        let bytes = self.read_file(&path)?;
        self.load_read(&path, &bytes)
    }

    /// The bytes of the plugin file at `path`, read no further than the size limit
    /// allows (one byte past it, for [`PluginRuntime::load`] to refuse): for a caller
    /// that keeps the bytes (to name their digest) and loads them with
    /// [`PluginRuntime::load_read`].
    pub fn read_file(&self, path: &std::path::Path) -> Result<Vec<u8>, LoadError> {
        read_bounded(path, self.limits.max_component_bytes)
            .map_err(|source| LoadError::Read { path: path.to_path_buf(), source })
    }

    /// [`PluginRuntime::load`] of bytes read from `path`, an error naming the file.
    pub fn load_read(&self, path: &std::path::Path, bytes: &[u8]) -> Result<PluginImage, LoadError> {
        self.load(bytes).map_err(|source| LoadError::File { path: path.to_path_buf(), source: Box::new(source) })
    }
}

/// The bytes of the file at `path`, at most `limit` and one more.
fn read_bounded(path: &std::path::Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A pre-instantiated plugin, by contract version.
type Pre =
    PerContract<StatusManagerPre<HostState>, v0_1_1::StatusManagerPre<HostState>, v0_1_0::StatusManagerPre<HostState>>;

/// How a 0.2.1 plugin's exports are found in each instance: 0.2.0's (every call but
/// the new ones) and 0.2.1's `manager` (for the resize functions), both looked up once.
struct ResizeIndices {
    base: StatusManagerIndices,
    extra: v0_2_1::manager::GuestIndices,
}

/// A compiled, linked plugin, ready to be instantiated any number of times.
#[derive(Clone)]
pub struct PluginImage {
    pre: Pre,
    /// Set for a 0.2.1 plugin (its `pre` is then the 0.2.0 one).
    resize: Option<Arc<ResizeIndices>>,
    cache: CacheOutcome,
    limits: Limits,
    _ticker: Option<Arc<EpochTicker>>,
}

impl PluginImage {
    /// Whether loading hit the artifact cache.
    pub fn cache_outcome(&self) -> CacheOutcome {
        self.cache
    }

    /// The WIT package the plugin implements.
    pub fn contract(&self) -> Contract {
        match self.resize {
            Some(_) => Contract::V0_2_1,
            None => self.pre.contract(),
        }
    }

    /// The limits every instance of this image gets.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// A fresh instance whose imports reach `world`, inside the sandbox's limits.
    pub fn instantiate(&self, world: World) -> Result<ComponentPlugin, LoadError> {
        let engine = match &self.pre {
            Pre::V0_2_0(pre) => pre.engine(),
            Pre::V0_1_1(pre) => pre.engine(),
            Pre::V0_1_0(pre) => pre.engine(),
        };
        let mut store = Store::new(engine, HostState::new(world, Sandbox::new(self.limits.clone())));
        store.limiter(|state| &mut state.sandbox);
        if let Some(budget) = self.limits.call_cpu_time {
            store.epoch_deadline_trap();
            // One budget per export call: the guest's time plus the host CPU time its
            // imports cost (the API server backend's by thread CPU time: an import
            // waiting on a slow API server does not count, the work of parsing what the
            // plugin passed does; the other imports never wait, and their wall time is
            // their CPU time).
            store.call_hook(|mut ctx, hook| match hook {
                CallHook::CallingWasm => {
                    let ticks = ctx.data_mut().sandbox.guest_enters();
                    ctx.set_epoch_deadline(ticks);
                    Ok(())
                }
                CallHook::ReturningFromHost => {
                    let sandbox = &mut ctx.data_mut().sandbox;
                    sandbox.host_leaves()?;
                    let ticks = sandbox.guest_enters();
                    ctx.set_epoch_deadline(ticks);
                    Ok(())
                }
                CallHook::CallingHost => {
                    let sandbox = &mut ctx.data_mut().sandbox;
                    sandbox.guest_leaves()?;
                    sandbox.host_enters();
                    Ok(())
                }
                CallHook::ReturningFromWasm => ctx.data_mut().sandbox.guest_leaves(),
            });
            store.set_epoch_deadline(u64::try_from(budget.as_millis()).unwrap_or(u64::MAX).max(1));
        }
        if let Some(fuel) = self.limits.call_fuel {
            store.set_fuel(fuel).map_err(LoadError::Instantiate)?;
        }
        let mut resize = None;
        let exports = match &self.pre {
            Pre::V0_2_0(pre) => match &self.resize {
                Some(indices) => {
                    let instance = pre.instance_pre().instantiate(&mut store).map_err(LoadError::Instantiate)?;
                    resize = Some(indices.extra.load(&mut store, &instance).map_err(LoadError::Instantiate)?);
                    Exports::V0_2_0(indices.base.load(&mut store, &instance).map_err(LoadError::Instantiate)?)
                }
                None => Exports::V0_2_0(pre.instantiate(&mut store).map_err(LoadError::Instantiate)?),
            },
            Pre::V0_1_1(pre) => Exports::V0_1_1(pre.instantiate(&mut store).map_err(LoadError::Instantiate)?),
            Pre::V0_1_0(pre) => Exports::V0_1_0(pre.instantiate(&mut store).map_err(LoadError::Instantiate)?),
        };
        Ok(ComponentPlugin::new(store, exports, resize))
    }
}
