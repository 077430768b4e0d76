//! The two agents of repo-agent, as a library:
//!
//! - [`run`](mod@run): solve a task by exploring and reusing an existing code
//!   repository (RepoMaster, seed 001, section 3.3). An episode starts from
//!   a [`TaskSpec`] (flags, or a GitTaskBench `query.json`): [`prepare()`]
//!   analyses and ranks the repository, builds the token-budgeted initial
//!   context and a sandbox; [`run_episode`] then alternates model turns and
//!   tool calls ([`run::tools`]) until the model calls `finish` or a
//!   [`Budgets`] limit ends it, keeping every observation under the
//!   per-interaction limit and the conversation within the model's context
//!   window ([`History`]).
//! - [`generate`]: build a repository from a specification (DeepCode,
//!   seed 004); its repair rounds are conversations of the `run` loop.
//!
//! What both use sits beside them: the [`trajectory`] every step goes to,
//! the task repository's Python [`environment`], the model choice
//! ([`ModelSpec`]), secret redaction ([`Redactor`]), the work copy a run
//! edits ([`make_work_copy`]) and the [`Guard`] process that writes a
//! killed run's summary. Every other module is private; this page and the
//! public modules ([`run`](mod@run) with [`run::tools`] and its path
//! policy, [`generate`] with [`generate::probe`], [`trajectory`],
//! [`environment`]) are the whole API.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use agent::{AgentConfig, Status, TaskSpec, Trajectory};
//! use llm::Scripted;
//! use serde_json::json;
//!
//! let repo = tempfile::tempdir()?;
//! std::fs::write(repo.path().join("greet.py"), "def hello(name):\n    return f'hello {name}'\n")?;
//! let out = tempfile::tempdir()?;
//! let task = TaskSpec::new("Greet with hello into output.txt", repo.path(), out.path());
//!
//! let output = out.path().join("output.txt");
//! let model = Scripted::new()
//!     .then_tool_call("search_code", json!({"query": "hello"}))
//!     .then_tool_call("write_file", json!({"path": output, "content": "hello world\n"}))
//!     .then_tool_call("finish", json!({"summary": "output.txt written"}));
//! let config = AgentConfig::builder().isolation(sandbox::Isolation::Process).build();
//! let mut trajectory = Trajectory::in_memory();
//! let summary = agent::run(&model, &task, &config, &mut trajectory, &mut |_| {}).await?;
//! assert_eq!((summary.status, summary.turns), (Status::Finished, 3));
//! assert_eq!(summary.outputs, [output]);
//! assert!(model.requests()[1].messages.iter().any(|m| m.text().is_some_and(|t| t.contains("greet.hello"))));
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

pub mod environment;
pub mod generate;
mod guard;
mod imports;
mod model;
mod paths;
mod redact;
pub mod run;
pub mod trajectory;
mod work_copy;

pub use guard::{GUARD_SUBCOMMAND, Guard, GuardedRun, not_dumpable, run_guard};
pub use model::{LOCAL_CONTEXT_BUDGET, LOCAL_OBSERVATION_LIMIT, LoadedModel, ModelSpec};
pub use paths::{graph_cache_dir, graph_cache_dir_in, repo_agent_home, summary_cache_file};
pub use redact::{RedactingModel, Redactor};
pub use run::{
    AgentConfig, AgentConfigBuilder, AnalysisCache, Budgets, CodeUser, History, InputFile,
    MAX_TOOL_CALLS_PER_REPLY, ModelSummarizer, Opening, Prepared, Progress, REPEAT_TEMPERATURE,
    RepoSpec, STUCK_AFTER, SearchTerms, Summaries, TaskSpec, Tool, ToolCallError, ToolName,
    ToolOptions, ToolOutput, Tools, prepare, prepare_with_model, run, run_conversation,
    run_episode, search_terms,
};
pub use trajectory::{SetupEvent, SetupPurpose, Status, Summary, Trajectory, TrajectoryEvent};
pub use work_copy::{
    CopyError, CopyLimits, CopyStats, MARKER, copy_tree, make_work_copy, work_copy_dir,
};

/// Errors that stop an episode before or outside the loop. Failures inside
/// the loop (tools, the model) are observations or a final status instead.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The task is incomplete or cannot be read.
    #[error("task: {0}")]
    Task(String),
    /// The repository could not be analysed.
    #[error("analysing the repository: {0}")]
    Analysis(#[from] repo_graph::Error),
    /// The initial context could not be built.
    #[error("building the context: {0}")]
    Context(#[from] context_pack::Error),
    /// The sandbox could not be set up.
    #[error("setting up the sandbox: {0}")]
    Sandbox(#[from] sandbox::SandboxError),
    /// The trajectory could not be written.
    #[error("writing the trajectory: {0}")]
    Trajectory(String),
    /// The model could not be configured, installed or loaded.
    #[error("model: {0}")]
    Model(String),
}
