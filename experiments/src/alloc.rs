//! The allocator arbor's binaries run on (mimalloc, each binary's `#[global_allocator]`), told to keep the
//! memory a program frees for its next allocation rather than hand it back to the system.
//!
//! By default mimalloc (v3, the mimalloc crate's) returns freed memory to the system a second after it is
//! freed (its `purge_delay`, 1,000 ms). A training step allocates and frees hundreds of MiB of activations
//! and gradients and takes longer than a second, so every step faulted its buffers in afresh and the kernel zeroed each page again:
//! a quarter of a fine-tuning step's time in a profile (`perf record` on `arbor bench-step`: 24 % in the
//! kernel's `clear_page_erms`). Kept, the memory is reused as it is; the process's peak is what its
//! largest step needed either way. `MIMALLOC_PURGE_DELAY`, when set, still decides.

/// mimalloc's `mi_option_purge_delay` (include/mimalloc.h), which libmimalloc-sys does not name: the
/// option before `mi_option_use_numa_nodes` (the unit test checks its default in v3's options.c, 1,000 ms).
pub const PURGE_DELAY: libmimalloc_sys::mi_option_t = libmimalloc_sys::mi_option_use_numa_nodes - 1;

/// Keeps freed memory in the process (mimalloc's purge delay set to never), unless the environment sets
/// `MIMALLOC_PURGE_DELAY`. Call it first thing in `main`.
pub fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one of mimalloc's global options, which it reads atomically; any thread may call it.
        unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, -1) }
    }
}
