//! Python: the facts of one file (`facts`), their extraction from the
//! syntax tree (`extract`, `convert`, `reach`), and resolution across
//! files as a points-to analysis (`resolve`).

mod convert;
pub(crate) mod extract;
pub(crate) mod facts;
mod reach;

pub(crate) use extract::*;
pub(crate) use facts::*;
mod output;
pub(crate) mod resolve;
mod solve;
