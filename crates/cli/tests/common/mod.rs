//! The agent library's test helpers (one definition, in
//! `crates/agent/tests/common/`), and the helpers that drive this crate's
//! `repo-agent` binary.

#![allow(dead_code, unused_imports)]

#[path = "../../../agent/tests/common/mod.rs"]
mod shared;

pub use shared::*;

pub mod cli;
