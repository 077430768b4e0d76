//! Runs repo-agent on GitTaskBench and grades the outputs with the
//! benchmark's own test scripts (seed 001, section 4 and appendix A), and
//! evaluates generated repositories on RepoGenesis the way its scripts do
//! ([`repogenesis`], seed 003).
//!
//! A run takes a checkout of the benchmark ([`Benchmark`]: `config/<ID>/
//! task_info.yaml`, `queries/<ID>/query.json`, `code_base/<Repo>/`), selects
//! tasks ([`Selection`]), and for each one:
//!
//! 1. builds a fresh workspace: a copy of the task's repository and inputs,
//!    with the query's `/GitTaskBench/...` paths mapped onto it
//!    ([`prepare_workspace`]);
//! 2. runs the agent with the configured model ([`Models`]) under a
//!    per-task time limit, catching crashes and hangs;
//! 3. picks the output by the benchmark's rule ([`find_output`]) and grades
//!    it with the task's test script in a per-repository virtualenv
//!    ([`Grader`]);
//! 4. appends a [`TaskRecord`] atomically to `results.jsonl`
//!    ([`ResultsFile`]), so an interrupted run loses nothing and `resume`
//!    skips what is recorded.
//!
//! The [`Report`] gives the execution completion rate (share of tasks with
//! `Process` true), the task pass rate (`Result` true), tokens, cost and
//! time, per domain ([`DomainMap`]) and per repository, the failures with
//! the graders' comments, and the paper's published rows for reference
//! ([`published_gittaskbench`]); as JSON, Markdown and self-contained HTML.
//!
//! ```
//! use bench_harness::{Domain, Report, ReportMeta, RunStatus, TaskRecord};
//!
//! let mut done = TaskRecord::empty("Stegano_01", "Stegano", Domain::SecurityPrivacy, RunStatus::Finished);
//! (done.process, done.result, done.prompt_tokens, done.completion_tokens) = (true, true, 120_000, 4_000);
//! let mut wrong = TaskRecord::empty("Stegano_02", "Stegano", Domain::SecurityPrivacy, RunStatus::Finished);
//! (wrong.process, wrong.comments) = (true, "extracted 'abc' | GT 'stegano'".into());
//! let report = Report::new(ReportMeta::default(), &[done, wrong]);
//! assert_eq!((report.summary.ecr, report.summary.tpr), (100.0, 50.0));
//! assert_eq!(report.summary.tokens_per_task, 62_000.0);
//! assert_eq!(report.by_domain[0].name, "Security & Privacy");
//! assert_eq!(report.failures[0].task, "Stegano_02");
//! ```

#![deny(missing_docs)]

mod config_builder;
pub mod gittaskbench;
mod pool;
pub mod repogenesis;
mod report_format;
mod results;
mod workspace;

use std::path::PathBuf;

/// How the model is chosen (a server, a GGUF file, or the embedded default), as for `repo-agent run`.
pub use agent::ModelSpec;
pub use gittaskbench::domains::{Domain, DomainMap, GITTASKBENCH_REPOSITORIES};
pub use gittaskbench::grade::{Grader, GradingConfig, GradingPython, Verdict, parse_result_line};
pub use gittaskbench::output::find_output;
pub use gittaskbench::published::{PUBLISHED_SOURCE, PublishedRow, published_gittaskbench};
pub use gittaskbench::record::{EnvironmentSummary, RunStatus, TaskRecord};
pub use gittaskbench::report::{Failure, Group, Metrics, Report, ReportMeta};
pub use gittaskbench::run::{
    Event, Harness, HarnessConfig, HarnessConfigBuilder, ModelFactory, Models, RunOutcome,
    TaskContext, environment_request,
};
pub use gittaskbench::task::{
    BENCHMARK_PREFIX, BenchTask, Benchmark, Selection, TaskInfo, TaskInfoError, TaskInfoFileError,
};
pub use gittaskbench::workspace::prepare_workspace;
pub use gittaskbench::yaml::YamlError;
pub use report_format::ReportFiles;
pub use results::{ResultRecord, ResultsFile, latest_per_task};

/// Errors that stop a run. Problems with single tasks (a broken task file,
/// a crashing agent, a failing grader) are data in the task's record.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or directory could not be read or written.
    #[error("{what} {}: {source}", .path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file's content is unusable.
    #[error("{}: {message}", .path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The directory is not a GitTaskBench checkout.
    #[error(
        "{} is not a GitTaskBench checkout: expected config/<TASK>/task_info.yaml (plus queries/ and code_base/); pass the checkout's root with --root",
        .0.display()
    )]
    NotABenchmark(PathBuf),
    /// A selected task ID is not in the checkout.
    #[error("task {0} is not in the checkout (see config/ for the task IDs)")]
    UnknownTask(String),
    /// The selected domain does not exist.
    #[error(
        "unknown domain {0:?}; use one of image_processing, video_processing, speech_processing, physiological_signals, security_privacy, web_scraping, office_documents, other"
    )]
    UnknownDomain(String),
    /// The selection matches no task.
    #[error("no task matches the selection ({0})")]
    EmptySelection(String),
    /// The model could not be set up.
    #[error("model: {0}")]
    Model(String),
}
