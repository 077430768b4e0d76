//! Python: the facts of one file (`facts`), their extraction from the
//! syntax tree (`extract`, `convert`, `reach`, `keyed`, `routes`), and resolution
//! across files as a points-to analysis: the graph and its compilation
//! (`resolve`), the engine (`solve`), the rules per constraint and callee
//! (`transfer`: the transfer functions), classes and MROs (`classes`), container elements
//! (`containers`), reading results back
//! (`results`). `usage` extracts main blocks, CLIs and `setup()` entry points.

#[cfg(feature = "python")]
mod convert;
mod entities;
#[cfg(feature = "python")]
pub(crate) mod extract;
pub(crate) mod facts;
#[cfg(feature = "python")]
mod keyed;
#[cfg(feature = "python")]
mod reach;

pub(crate) use entities::PythonResolver;
#[cfg(feature = "python")]
pub(crate) use extract::*;
pub(crate) use facts::*;
mod builtins;
mod classes;
mod containers;
#[cfg(feature = "python")]
mod imports;
pub(crate) mod resolve;
mod results;
#[cfg(feature = "python")]
mod routes;
mod solve;
mod transfer;
#[cfg(feature = "python")]
pub(crate) mod usage;
pub(crate) mod usage_facts;
