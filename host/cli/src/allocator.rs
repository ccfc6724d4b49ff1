//! The process's allocator: jemalloc, with options for thousands of threads on a few
//! cores.
//!
//! A fleet runs a scheduler thread per node and pools beside them. glibc's malloc spent
//! about a fifth of a 2,000-node fleet's CPU in a profile (its arenas' locks, chunk
//! consolidation); jemalloc cut the fleet's CPU by 11% and its propagation p99 at 2,000
//! nodes from 8.5 s to 0.95 s (docs/fleet.md, "Allocators"). Its defaults, four arenas a
//! core and a thread cache of up to 32 KiB objects per thread, cost a fleet of thousands
//! of threads memory it does not have: two arenas, small objects only in the thread
//! caches, and dirty pages handed back after 2 s keep the 1,000-node headline within
//! 2 GiB. `_RJEM_MALLOC_CONF` in the environment overrides these options.

use std::ffi::c_char;

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read once at its start from this symbol (jemalloc's own
/// `malloc_conf`, weak, under the prefix tikv-jemalloc-sys gives its symbols).
#[unsafe(export_name = "_rjem_malloc_conf")]
static MALLOC_CONF: Options = Options(c"narenas:2,tcache_max:1024,dirty_decay_ms:2000,muzzy_decay_ms:0".as_ptr());

/// A pointer to constant text, as jemalloc's `const char *malloc_conf` is.
#[repr(transparent)]
struct Options(*const c_char);

// SAFETY: it points at a string constant, never written.
unsafe impl Sync for Options {}
