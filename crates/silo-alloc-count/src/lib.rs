//! A counting global allocator: every allocation (and every growth, which counts as an
//! allocation of the new size, as a copy to a new block would) is forwarded unchanged to the
//! system allocator and counted, for the whole process and for the calling thread. The tests
//! and benchmarks that state "allocations per message" install it, and so does the `silo`
//! binary built with its `count-allocs` feature:
//!
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: silo_alloc_count::Counting = silo_alloc_count::Counting;
//! ```
//!
//! The process counts cost two relaxed atomic additions per allocation; the thread counts a
//! thread-local cell (const-initialised, so reading it never allocates).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static THREAD_ALLOCS: Cell<u64> = const { Cell::new(0) };
    static THREAD_BYTES: Cell<u64> = const { Cell::new(0) };
}

/// Allocations and bytes allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub allocs: u64,
    pub bytes: u64,
}

impl Counts {
    /// What was allocated between `earlier` and `self`.
    #[must_use]
    pub fn since(self, earlier: Counts) -> Counts {
        Counts { allocs: self.allocs.wrapping_sub(earlier.allocs), bytes: self.bytes.wrapping_sub(earlier.bytes) }
    }
}

/// The allocator; install it with `#[global_allocator]`.
#[derive(Debug, Clone, Copy)]
pub struct Counting;

fn count(size: usize) {
    let size = size as u64;
    ALLOCS.fetch_add(1, Ordering::Relaxed);
    BYTES.fetch_add(size, Ordering::Relaxed);
    // `try_with`: a thread being torn down may still allocate.
    let _ = THREAD_ALLOCS.try_with(|c| c.set(c.get().wrapping_add(1)));
    let _ = THREAD_BYTES.try_with(|c| c.set(c.get().wrapping_add(size)));
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counters are atomics
// and const-initialised thread-local cells, neither of which allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller's contract for `layout` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Everything the process allocated so far (zero unless [`Counting`] is installed).
pub fn process() -> Counts {
    Counts { allocs: ALLOCS.load(Ordering::Relaxed), bytes: BYTES.load(Ordering::Relaxed) }
}

/// Everything the calling thread allocated so far.
pub fn this_thread() -> Counts {
    Counts { allocs: THREAD_ALLOCS.with(Cell::get), bytes: THREAD_BYTES.with(Cell::get) }
}
