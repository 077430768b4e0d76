//! One episode: analyse the repository, build the initial context, then
//! model turn → tool calls → observations until `finish` or a budget ends it.

use std::time::{Duration, Instant};

use llm::{ChatModel, ChatRequest, LlmError, Message, UsageMeter};
use sandbox::Isolation;
use serde_json::json;

use crate::Error;
use crate::history::History;
use crate::prepare::Prepared;
use crate::prompt;
use crate::task::TaskSpec;
use crate::tools::ToolOptions;
use crate::trajectory::{Status, Summary, Trajectory};

/// Limits on an episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    /// Most model turns (default 40).
    pub max_turns: u32,
    /// Most prompt plus completion tokens over all calls (default none).
    pub max_tokens: Option<u64>,
    /// Wall-clock limit (default none).
    pub timeout: Option<Duration>,
    /// The model's context window in tokens; older observations are
    /// digested beyond 80 % of it (default 128,000).
    pub context_window: usize,
}

impl Default for Budgets {
    fn default() -> Self {
        Budgets {
            max_turns: 40,
            max_tokens: None,
            timeout: None,
            context_window: 128_000,
        }
    }
}

/// How an episode is set up.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Budgets.
    pub budgets: Budgets,
    /// Tool set and information selection.
    pub tools: ToolOptions,
    /// Token budget of the initial repository context (default 8,000).
    pub context_budget: usize,
    /// Build the hierarchical initial context; off (README only) for the
    /// `--no-hierarchical-analysis` ablation.
    pub hierarchical_analysis: bool,
    /// Sandbox isolation (default [`Isolation::Auto`]).
    pub isolation: Isolation,
    /// Timeout of one code run (default 600 s).
    pub exec_timeout: Duration,
    /// Let `pip install` reach the package registry (default true).
    pub package_registry: bool,
    /// Where each repository's per-file analysis is cached between runs:
    /// the same cache `repo-agent analyze`, `rank` and `context` use
    /// (default [`AnalysisCache::None`]).
    pub analysis_cache: AnalysisCache,
    /// Who writes the module summaries of the initial context (default
    /// [`Summaries::Docstrings`]).
    pub summaries: Summaries,
}

/// Where the analysis of a repository is cached.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AnalysisCache {
    /// Analyse from scratch every time.
    #[default]
    None,
    /// Under this repo-agent home ([`crate::paths::graph_cache_dir_in`]),
    /// one directory per repository.
    Home(std::path::PathBuf),
}

/// Who writes the module summaries listed in the initial context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Summaries {
    /// The module's docstring, else an outline of its definitions.
    #[default]
    Docstrings,
    /// The model writes one sentence per listed module
    /// ([`crate::ModelSummarizer`], cached per file content hash).
    Model,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            budgets: Budgets::default(),
            tools: ToolOptions::default(),
            context_budget: 8_000,
            hierarchical_analysis: true,
            isolation: Isolation::Auto,
            exec_timeout: Duration::from_secs(600),
            package_registry: true,
            analysis_cache: AnalysisCache::None,
            summaries: Summaries::Docstrings,
        }
    }
}

/// What the live progress callback is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// The current turn (1-based).
    pub turn: u32,
    /// The tool being run, if any.
    pub tool: Option<String>,
    /// Tokens used so far.
    pub total_tokens: u64,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Runs the loop until `finish` or a budget ends it. Model failures that
/// retrying cannot fix end it with [`Status::Error`]; only a trajectory
/// that cannot be written is an `Err`.
pub async fn run_episode(
    model: &dyn ChatModel,
    prepared: &Prepared,
    task: &TaskSpec,
    budgets: &Budgets,
    trajectory: &mut Trajectory,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Summary, Error> {
    let started = Instant::now();
    let tools = &prepared.tools;
    let definitions = tools.definitions();
    let system = prompt::system_prompt(tools.options().exploration);
    let task_prompt = prompt::task_prompt(task, Some(&prepared.context));
    let mut history = History::new(
        tools.counter().clone(),
        vec![Message::system(system), Message::user(task_prompt)],
    );
    trajectory.record(
        "start",
        json!({
            "task": task,
            "model": model.model_name(),
            "tools": definitions.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
            "max_turns": budgets.max_turns,
            "max_tokens": budgets.max_tokens,
            "timeout_ms": budgets.timeout.map(millis),
            "exploration_tools": tools.options().exploration,
            "info_selection": tools.options().info_selection,
            "context_tokens": tools.counter().count(&prepared.context),
        }),
    )?;
    let meter = UsageMeter::default();
    let mut turns = 0u32;
    let mut sent = 0usize;
    let mut shrinks = 0u32;
    let remaining = |budget: Option<Duration>| budget.map(|t| t.saturating_sub(started.elapsed()));
    let (status, message) = 'episode: loop {
        let used = meter.summary().total_tokens();
        if turns >= budgets.max_turns {
            break (Status::MaxTurns, None);
        }
        if budgets.max_tokens.is_some_and(|max| used >= max) {
            break (Status::MaxTokens, None);
        }
        if remaining(budgets.timeout).is_some_and(|r| r.is_zero()) {
            break (Status::Timeout, None);
        }
        let window = budgets.context_window;
        let digested = history.compact(window / 10 * 8, 2);
        if digested > 0 {
            trajectory.record(
                "digest",
                json!({"turn": turns + 1, "digested": digested, "history_tokens": history.tokens()}),
            )?;
        }
        let request = ChatRequest::new(history.messages().to_vec()).with_tools(definitions.clone());
        let new_messages = &history.messages()[sent.min(history.messages().len())..];
        trajectory.record(
            "request",
            json!({"turn": turns + 1, "messages": request.messages.len(), "new_messages": new_messages, "history_tokens": history.tokens()}),
        )?;
        sent = history.messages().len();
        progress(&Progress {
            turn: turns + 1,
            tool: None,
            total_tokens: used,
        });
        let call_started = Instant::now();
        let answer = match remaining(budgets.timeout) {
            Some(left) => match tokio::time::timeout(left, model.complete(&request)).await {
                Ok(answer) => answer,
                Err(_) => break (Status::Timeout, None),
            },
            None => model.complete(&request).await,
        };
        let response = match answer {
            Ok(response) => response,
            Err(error @ LlmError::ContextLengthExceeded { .. }) => {
                meter.record_error(model.model_name(), &error);
                let message = error.to_string();
                shrinks += 1;
                let shrunk = history.shrink();
                trajectory.record(
                    "context_exceeded",
                    json!({"turn": turns + 1, "message": message, "shrunk": shrunk, "history_tokens": history.tokens()}),
                )?;
                if !shrunk || shrinks > 20 {
                    break (
                        Status::Error,
                        Some(format!(
                            "the conversation does not fit the model's context window: {message}"
                        )),
                    );
                }
                sent = 0;
                continue;
            }
            Err(error) => {
                meter.record_error(model.model_name(), &error);
                trajectory.record("model_error", json!({"turn": turns + 1, "error": error}))?;
                break (Status::Error, Some(error.to_string()));
            }
        };
        turns += 1;
        meter.record_response(model.model_name(), &response);
        trajectory.record(
            "model",
            json!({
                "turn": turns,
                "content": response.content,
                "tool_calls": response.tool_calls,
                "finish_reason": response.finish_reason,
                "usage": response.usage,
                "model": response.model,
                "latency_ms": millis(response.latency),
                "wall_ms": millis(call_started.elapsed()),
            }),
        )?;
        history.push(response.to_message());
        if response.tool_calls.is_empty() {
            history.push(Message::user(
                "Continue with the tools. When the outputs are written and checked, call `finish` with a summary.",
            ));
            continue;
        }
        let mut finished = None;
        for call in &response.tool_calls {
            progress(&Progress {
                turn: turns,
                tool: Some(call.name.clone()),
                total_tokens: meter.summary().total_tokens(),
            });
            let output = match remaining(budgets.timeout) {
                Some(left) => match tokio::time::timeout(left, tools.call(call)).await {
                    Ok(output) => output,
                    Err(_) => {
                        trajectory.record(
                            "tool",
                            json!({"turn": turns, "id": call.id, "name": call.name, "arguments": call.arguments, "timed_out": true}),
                        )?;
                        break 'episode (Status::Timeout, None);
                    }
                },
                None => tools.call(call).await,
            };
            trajectory.record(
                "tool",
                json!({
                    "turn": turns,
                    "id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                    "observation": output.text,
                    "is_error": output.is_error,
                    "tokens": output.tokens,
                    "ms": output.ms,
                }),
            )?;
            history.push(Message::tool(call.id.clone(), output.text));
            if let Some(summary) = output.finish {
                finished = Some(summary);
            }
        }
        if let Some(summary) = finished {
            break (Status::Finished, Some(summary));
        }
    };
    let usage = meter.summary();
    let summary = Summary {
        status,
        turns,
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        total_tokens: usage.total_tokens(),
        cost: usage.cost_usd,
        wall_ms: millis(started.elapsed()),
        outputs: task.outputs(),
        message,
    };
    trajectory.record(
        "summary",
        serde_json::to_value(&summary).map_err(|e| Error::Trajectory(e.to_string()))?,
    )?;
    Ok(summary)
}

/// [`prepare`] then [`run_episode`].
pub async fn run(
    model: &dyn ChatModel,
    task: &TaskSpec,
    config: &AgentConfig,
    trajectory: &mut Trajectory,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Summary, Error> {
    let prepared = crate::prepare::prepare_with_model(task, config, Some(model)).await?;
    run_episode(
        model,
        &prepared,
        task,
        &config.budgets,
        trajectory,
        progress,
    )
    .await
}
