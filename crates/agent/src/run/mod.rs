//! `repo-agent run`: solve a task by exploring and reusing an existing
//! repository (RepoMaster, seed 001, section 3.3).
//!
//! [`prepare()`] analyses and ranks the repository and builds the
//! token-budgeted initial context; [`run_episode`] then alternates model
//! turns and [`tools`] calls until the model calls `finish` or a
//! [`Budgets`] limit ends it, keeping the conversation inside the model's
//! window ([`History`]). [`run()`] does both.
//!
//! What is private here: the episode's state machine (`episode.rs`), the
//! prompts (`prompt.rs`), the digesting history, the model-written module
//! summaries and the search-term extraction. What is public is the task,
//! the configuration, the entry points and the tool surface, which an MCP
//! server or another agent can offer as they are.

mod episode;
mod history;
mod keywords;
mod prepare;
mod prompt;
mod summaries;
mod task;
pub mod tools;

pub(crate) use episode::millis;
pub use episode::{
    AgentConfig, AgentConfigBuilder, AnalysisCache, Budgets, CodeUser, LOOK_ONLY_TURNS,
    MAX_TOOL_CALLS_PER_REPLY, Opening, Progress, REPEAT_TEMPERATURE, STUCK_AFTER, SearchTerms,
    Summaries, run, run_conversation, run_episode,
};
pub use history::History;
pub use keywords::search_terms;
pub(crate) use prepare::no_network_enforced;
pub use prepare::{Prepared, prepare, prepare_with_model};
pub use prompt::{FirstStep, system_prompt, task_prompt};
pub use summaries::ModelSummarizer;
pub use task::{InputFile, RepoSpec, TaskSpec};
pub use tools::{Tool, ToolCallError, ToolName, ToolOptions, ToolOutput, Tools};
