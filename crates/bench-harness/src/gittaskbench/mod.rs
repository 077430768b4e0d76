//! GitTaskBench (seed 001's benchmark): its checkout read as tasks
//! (`task.rs`, [`crate::Benchmark`]), a fresh workspace per task
//! (`workspace.rs`), the agent run on each in a worker pool (`run.rs`,
//! [`crate::Harness`]), graded by the benchmark's own test scripts in a
//! sandbox (`grade.rs`, [`crate::Grader`]), one record per task
//! (`record.rs`, [`crate::TaskRecord`]) and the report (`report.rs`,
//! [`crate::Report`]) beside the published rows (`published.rs`).
//! [`failures`] and [`feasibility`] read finished runs back. The results
//! file, the report files and the pool are shared with RepoGenesis
//! (`results.rs`, `report_format.rs`, `pool.rs` at the crate's top).

pub(crate) mod domains;
pub mod failures;
pub mod feasibility;
pub(crate) mod grade;
pub(crate) mod output;
pub(crate) mod published;
pub(crate) mod record;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod script_packages;
pub(crate) mod task;
pub(crate) mod workspace;
pub(crate) mod yaml;
