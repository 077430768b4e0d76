//! The languages the analysis understands, each with its own facts,
//! per-file extraction and cross-file resolution.

pub(crate) mod java;
pub(crate) mod python;
