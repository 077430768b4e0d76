//! Java: the facts of one file (`facts`), their extraction (`extract`,
//! `declarations`, `routes`), and resolution by declared types (`resolve`,
//! with the lookup indexes in `index`, call sites in `calls` and the graph
//! entities in `entities`).

mod calls;
#[cfg(feature = "java")]
mod declarations;
mod entities;
pub(crate) use entities::JavaLanguage;
#[cfg(feature = "java")]
pub(crate) mod extract;
pub(crate) mod facts;
pub(crate) use facts::*;
mod index;
pub(crate) mod resolve;
#[cfg(feature = "java")]
mod routes;

#[cfg(feature = "java")]
pub(crate) use extract::*;
