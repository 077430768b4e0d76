//! The `measure` tool with tree-sitter's C allocations routed to mimalloc
//! (`ts_set_allocator`); Rust's allocations stay with the system allocator.
//!
//! tree-sitter allocates and frees its parse stacks and tree nodes one at a
//! time. With glibc's malloc that is about 11 % of a raw parse's
//! instructions, more on a rayon worker thread, whose glibc arena grows with
//! `mprotect` calls. mimalloc makes the parse about 8 % faster; the Python
//! wheel gets the same effect from pymalloc. Making mimalloc the global
//! allocator as well cut instructions further but cost about 0.6 s more
//! kernel time and 70 MB more peak memory on Django's analysis
//! (docs/PERFORMANCE.md). The library does not choose an allocator: a
//! binary does, like this one.

// The one unsafe call: installing tree-sitter's allocator.
#![allow(unsafe_code)]

#[path = "support/measure.rs"]
mod measure;

fn main() {
    // SAFETY: called first, on the only thread, before any tree-sitter
    // object exists; the functions are mimalloc's C malloc family, which
    // have tree-sitter's signatures and are thread-safe.
    unsafe {
        tree_sitter::set_allocator(Some(tree_sitter::Allocator {
            malloc: libmimalloc_sys::mi_malloc,
            calloc: libmimalloc_sys::mi_calloc,
            realloc: libmimalloc_sys::mi_realloc,
            free: libmimalloc_sys::mi_free,
        }));
    }
    measure::main("mimalloc for tree-sitter");
}
