//! Python: the facts of one file (`facts`), their extraction from the
//! syntax tree (`extract`, `convert`, `reach`, `routes`), and resolution
//! across files as a points-to analysis: the graph and its compilation
//! (`resolve`), the engine (`solve`), the rules per constraint and callee
//! (`rules`), classes and MROs (`classes`), reading results back
//! (`output`). `usage` extracts main blocks, CLIs and `setup()` entry points.

mod convert;
mod entities;
pub(crate) mod extract;
pub(crate) mod facts;
mod reach;

pub(crate) use entities::PythonResolver;
pub(crate) use extract::*;
pub(crate) use facts::*;
mod builtins;
mod classes;
mod imports;
mod output;
pub(crate) mod resolve;
mod routes;
mod rules;
mod solve;
pub(crate) mod usage;
