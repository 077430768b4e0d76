//! Java: the facts of one file (`facts`), their extraction (`extract`,
//! `declarations`, `routes`), and resolution by declared types (`resolve`,
//! with the lookup indexes in `index`, call sites in `calls` and the graph
//! entities in `entities`).

mod calls;
mod declarations;
mod entities;
pub(crate) use entities::JavaLanguage;
pub(crate) mod extract;
pub(crate) mod facts;
mod index;
pub(crate) mod resolve;
mod routes;

pub(crate) use extract::*;
