//! Java: per-file facts and extraction (`extract`), resolution by declared
//! types (`resolve`).

pub(crate) mod extract;
pub(crate) mod resolve;

pub(crate) use extract::*;
