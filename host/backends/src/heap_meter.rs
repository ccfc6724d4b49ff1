//! Measuring what an object holds on the heap, for the memory account (`simulate
//! --json`'s `memory`): a k8s-openapi `Pod` is hundreds of small allocations, and
//! nothing short of counting them says what one costs.
//!
//! [`MeteredAllocator`] is the system allocator that also counts, for the thread that
//! asks, the bytes allocated while a [`measure`] runs. A binary that wants the account
//! of objects held as typed trees installs it (`#[global_allocator]`); without it
//! [`measure`] answers `None` and such objects count as nothing (what is held as
//! bytes is counted by length, with no allocator's help).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

/// The system allocator, counting the bytes a [`measure`] allocates on its thread.
/// Outside a measure it costs one thread-local read per allocation.
#[derive(Clone, Copy, Debug, Default)]
pub struct MeteredAllocator;

/// Set by the first allocation through [`MeteredAllocator`]: whether it is the
/// process's allocator, so [`measure`] can tell a count of 0 from no count at all.
static INSTALLED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Bytes allocated on this thread since the measure began; None outside one.
    static COUNTED: Cell<Option<usize>> = const { Cell::new(None) };
}

fn count(bytes: usize) {
    // `try_with`: an allocation made while the thread's locals are torn down is not
    // counted (no measure is running then).
    let _ = COUNTED.try_with(|counted| {
        if let Some(so_far) = counted.get() {
            counted.set(Some(so_far.saturating_add(bytes)));
        }
    });
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged;
// counting touches only a thread-local cell and an atomic flag, never the memory.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for MeteredAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !INSTALLED.load(Ordering::Relaxed) {
            INSTALLED.store(true, Ordering::Relaxed);
        }
        count(layout.size());
        // SAFETY: the caller's contract for `alloc` is `System::alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: as `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (every allocation
        // through this allocator is `System`'s).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size.saturating_sub(layout.size()));
        // SAFETY: as `dealloc`, and the caller's contract for `realloc` is `System`'s.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Runs `make` and says how many bytes it allocated on this thread (what it frees
/// again is not subtracted): `None` when [`MeteredAllocator`] is not the process's
/// allocator. Measures do not nest: an inner one ends the outer one's count.
pub fn measure<R>(make: impl FnOnce() -> R) -> (R, Option<usize>) {
    COUNTED.with(|counted| counted.set(Some(0)));
    let made = make();
    let bytes = COUNTED.with(|counted| counted.take());
    (made, bytes.filter(|_| INSTALLED.load(Ordering::Relaxed)))
}

/// The bytes a value of `T` holds on the heap, measured on a clone of it (a clone
/// allocates what the original holds, its spare capacity aside): 0 without
/// [`MeteredAllocator`].
pub fn heap_bytes_of<T: Clone>(value: &T) -> usize {
    let (clone, bytes) = measure(|| value.clone());
    drop(clone);
    bytes.unwrap_or(0)
}

/// The allocation an `Arc<T>` makes: the value and its two counts.
pub const fn arc_bytes<T>() -> usize {
    std::mem::size_of::<T>() + 2 * std::mem::size_of::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_what_a_clone_allocates_on_this_thread() {
        let text = "x".repeat(1000);
        let pair = (text.clone(), vec![1u64; 10]);
        assert_eq!(heap_bytes_of(&pair), 1000 + 80);
        let (_, bytes) = measure(|| ());
        assert_eq!(bytes, Some(0), "nothing allocated");
        // Another thread's allocations are not this measure's.
        let (_, bytes) = measure(|| std::thread::spawn(|| vec![0u8; 4096]).join().map(|v| v.len()));
        assert!(bytes.is_some_and(|b| b < 4096), "{bytes:?}");
    }
}
