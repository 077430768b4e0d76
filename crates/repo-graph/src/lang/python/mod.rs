//! Python: per-file facts and extraction (`extract`), cross-file resolution
//! (`resolve`).

pub(crate) mod extract;

pub(crate) use extract::*;
