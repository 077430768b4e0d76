//! The languages the analysis understands, each with its own facts,
//! per-file extraction and cross-file resolution, and how each is
//! presented to readers (`present`).

pub(crate) mod java;
pub(crate) mod present;
pub(crate) mod python;
