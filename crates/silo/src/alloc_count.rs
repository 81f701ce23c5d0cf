//! The counting global allocator of the `count-allocs` build (`silo-alloc-count`): every
//! allocation of the process is counted, so that `silo bench` can report allocations and bytes
//! allocated per message through the whole broker. Release builds without the feature use the
//! system allocator untouched.

#[global_allocator]
static GLOBAL: silo_alloc_count::Counting = silo_alloc_count::Counting;

/// Allocations and bytes allocated since the process started.
pub fn counts() -> (u64, u64) {
    let c = silo_alloc_count::process();
    (c.allocs, c.bytes)
}
