//! The workspace's cross-crate benches live in `benches/pipeline.rs`: the
//! whole path a task's first context takes, analysis ([`repo_graph`]) then
//! ranking ([`importance`]) then the token-budgeted context
//! ([`context_pack`]), on the fixtures and, when `cargo xtask corpus` has
//! fetched them, on Django 5.1.4 and OpenJDK 17's `java.base`.
//!
//! Run them with `cargo bench -p benches`, or `cargo xtask bench pipeline`,
//! which runs them and prints criterion's estimates as a table. This
//! library is empty on purpose: a crate needs a target to hold benches.
//!
//! [`repo_graph`]: https://docs.rs/repo-graph
//! [`importance`]: https://docs.rs/importance
//! [`context_pack`]: https://docs.rs/context-pack
#![deny(missing_docs)]
