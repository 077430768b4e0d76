//! Measures the analysis of one directory against raw tree-sitter parsing of
//! the same files, with the system allocator: `cargo xtask bench analysis`
//! runs this and `measure_mimalloc`. Usage and output: `support/measure.rs`.

#[path = "support/measure.rs"]
mod measure;

fn main() {
    measure::main("system");
}
