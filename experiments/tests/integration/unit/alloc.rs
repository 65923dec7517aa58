//! The unit tests of `arbor_experiments::alloc` (src/alloc.rs).

use arbor_experiments::alloc::*;

/// The option set is the purge delay: its default is 1,000 (ms, mimalloc v3's options.c), and setting
/// it reads back.
#[test]
fn the_purge_delay_is_the_option_set() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: reads and sets one of mimalloc's global options.
    unsafe {
        assert_eq!(libmimalloc_sys::mi_option_get(PURGE_DELAY), 1000);
        keep_freed_memory();
        assert_eq!(libmimalloc_sys::mi_option_get(PURGE_DELAY), -1);
    }
}
