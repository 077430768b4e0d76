//! The trajectory of an episode: one JSON object per line for every step,
//! and the final [`Summary`].
//!
//! Every line is a [`TrajectoryEvent`], tagged by its `type` field; the
//! format is documented, kind by kind, in `docs/TRAJECTORY.md`. Events are
//! typed so that the writer ([`Trajectory::record`]) and the readers
//! ([`Trajectory::read`], the bench harness, people with `jq`) cannot drift
//! apart: a field renamed here is renamed everywhere, and a test reads a
//! recorded episode back.

use std::io::Write;
use std::path::{Path, PathBuf};

use llm::{FinishReason, LlmError, Message, TokenUsage, ToolCall};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Error;
use crate::run::TaskSpec;

/// How an episode ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The model called `finish`.
    Finished,
    /// The turn budget ran out.
    MaxTurns,
    /// The token budget ran out.
    MaxTokens,
    /// The wall-clock limit was reached.
    Timeout,
    /// The model sent the same call and got the same result
    /// [`Budgets::stuck_after`](crate::Budgets::stuck_after) times: a loop
    /// it was told about and did not leave.
    Stuck,
    /// The model failed in a way that retrying cannot fix.
    Error,
    /// The agent was killed (or died) before it wrote its own summary; the
    /// summary was written by its guard ([`crate::Guard`]). The agent
    /// itself never ends with this status.
    Killed,
}

impl Status {
    /// The process exit code `repo-agent run` ends with: 0 only when the
    /// model finished, so a script or a CI job can tell the endings apart
    /// (1 is also any error before the loop, 2 a usage error).
    ///
    /// ```
    /// use agent::Status;
    /// assert_eq!(Status::Finished.exit_code(), 0);
    /// assert_eq!(Status::Timeout.exit_code(), 3);
    /// assert_eq!(Status::Stuck.exit_code(), 5);
    /// ```
    pub fn exit_code(self) -> u8 {
        match self {
            Status::Finished => 0,
            Status::Error | Status::Killed => 1,
            Status::Timeout => 3,
            Status::MaxTurns | Status::MaxTokens => 4,
            Status::Stuck => 5,
        }
    }
}

/// The final summary of an episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// How it ended.
    pub status: Status,
    /// Model turns taken.
    pub turns: u32,
    /// Prompt tokens over all calls.
    pub prompt_tokens: u64,
    /// Completion tokens over all calls.
    pub completion_tokens: u64,
    /// Their sum.
    pub total_tokens: u64,
    /// Estimated cost in dollars (0 for unpriced models).
    pub cost: f64,
    /// Wall-clock time in milliseconds.
    pub wall_ms: u64,
    /// The output files found in the output directory.
    pub outputs: Vec<PathBuf>,
    /// The model's summary from `finish`, or the error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// For [`Status::Killed`]: the signal that ended the agent, when its
    /// guard could learn it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
}

/// One line of a trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TrajectoryEvent {
    /// The episode's setup, before the first model call.
    Start(StartEvent),
    /// A model call made while setting up (search terms for the task,
    /// module summaries); its tokens count toward the run.
    Setup(SetupEvent),
    /// Older observations were digested to keep the conversation in the
    /// context window.
    Digest(DigestEvent),
    /// A request is about to be sent to the model.
    Request(RequestEvent),
    /// The model said the prompt is too long; the conversation was shrunk.
    ContextExceeded(ContextExceededEvent),
    /// The model failed in a way retrying cannot fix; the episode ends.
    ModelError(ModelErrorEvent),
    /// The model answered.
    Model(ModelEvent),
    /// A tool call ran (or was interrupted by the wall-clock limit).
    Tool(ToolEvent),
    /// The episode ended; always the last line of a `run` trajectory (a
    /// `generate` trajectory has one per repair round).
    Summary(Summary),
    /// `repo-agent generate` started: the specification and its facts.
    GenerateStart(crate::generate::GenerateStartEvent),
    /// One step of a generation phase, with its model usage.
    Step(crate::generate::StepEvent),
    /// The generation run ended; always the last line of its trajectory.
    Generated(crate::generate::GenerateSummary),
}

impl TrajectoryEvent {
    /// The `type` field this event is written with.
    pub fn kind(&self) -> &'static str {
        match self {
            TrajectoryEvent::Start(_) => "start",
            TrajectoryEvent::Setup(_) => "setup",
            TrajectoryEvent::Digest(_) => "digest",
            TrajectoryEvent::Request(_) => "request",
            TrajectoryEvent::ContextExceeded(_) => "context_exceeded",
            TrajectoryEvent::ModelError(_) => "model_error",
            TrajectoryEvent::Model(_) => "model",
            TrajectoryEvent::Tool(_) => "tool",
            TrajectoryEvent::Summary(_) => "summary",
            TrajectoryEvent::GenerateStart(_) => "generate_start",
            TrajectoryEvent::Step(_) => "step",
            TrajectoryEvent::Generated(_) => "generated",
        }
    }
}

/// `start`: what the episode was asked and with which limits, so a
/// trajectory can be understood without the command line that made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartEvent {
    /// The task.
    pub task: TaskSpec,
    /// The model's name.
    pub model: String,
    /// The names of the tools offered, in order.
    pub tools: Vec<String>,
    /// The turn budget.
    pub max_turns: u32,
    /// The token budget, if any (`null` when none).
    pub max_tokens: Option<u64>,
    /// The wall-clock limit in milliseconds, if any (`null` when none).
    pub timeout_ms: Option<u64>,
    /// Whether the exploration tools were offered.
    pub exploration_tools: bool,
    /// Whether observations went through information selection.
    pub info_selection: bool,
    /// Tokens of the initial repository context.
    pub context_tokens: usize,
}

/// `setup`: model calls made before the episode, with what they gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetupEvent {
    /// What the calls were for.
    pub purpose: SetupPurpose,
    /// Their usage (calls, tokens, cost).
    pub usage: llm::Usage,
    /// What they produced, in short (the search terms; the modules
    /// summarised), or why they failed.
    pub result: String,
}

/// What a [`SetupEvent`]'s calls were for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SetupPurpose {
    /// English search terms and likely identifiers for a task whose own
    /// words find too little in the repository.
    SearchTerms,
    /// One-sentence module summaries for the initial context.
    ModuleSummaries,
}

/// `digest`: older observations replaced by short digests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DigestEvent {
    /// The turn about to be requested (1-based).
    pub turn: u32,
    /// How many observations were digested.
    pub digested: usize,
    /// Estimated tokens of the conversation afterwards.
    pub history_tokens: usize,
}

/// `request`: what is sent to the model. Only the messages added since the
/// previous request are written, so the trajectory grows linearly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestEvent {
    /// The turn being requested (1-based).
    pub turn: u32,
    /// Messages in the request.
    pub messages: usize,
    /// The messages added since the previous request (all of them after the
    /// conversation was shrunk).
    pub new_messages: Vec<Message>,
    /// Estimated tokens of the conversation.
    pub history_tokens: usize,
    /// The sampling temperature asked for, when the request set one (a
    /// resample after a repeated call, [`crate::run::REPEAT_TEMPERATURE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
}

/// `context_exceeded`: the model refused the prompt as too long.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextExceededEvent {
    /// The turn being requested (1-based).
    pub turn: u32,
    /// The model's error message.
    pub message: String,
    /// Whether the conversation could be shrunk (when not, the episode ends).
    pub shrunk: bool,
    /// Estimated tokens of the conversation afterwards.
    pub history_tokens: usize,
}

/// `model_error`: a model failure that ends the episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelErrorEvent {
    /// The turn being requested (1-based).
    pub turn: u32,
    /// The error, as `llm` serializes it (tagged by `kind`).
    pub error: LlmError,
}

/// `model`: one answer of the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelEvent {
    /// The turn (1-based).
    pub turn: u32,
    /// The text, if any (`null` when none).
    pub content: Option<String>,
    /// The tool calls (`[]` when none).
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// Tokens of this call.
    pub usage: TokenUsage,
    /// The model that answered, as the server named it.
    pub model: String,
    /// The call's latency as the client measured it (retries included).
    pub latency_ms: u64,
    /// Wall-clock time of the call as the episode saw it.
    pub wall_ms: u64,
    /// Tool calls of this answer beyond the per-reply cap, which were not
    /// run (0, and not written, when there were none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tool_calls_not_run: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `tool`: one tool call and what it produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolEvent {
    /// The turn whose answer made the call.
    pub turn: u32,
    /// The call's id.
    pub id: String,
    /// The tool's name as the model sent it (possibly not a tool).
    pub name: String,
    /// The arguments as the model sent them.
    pub arguments: Value,
    /// What came of it.
    #[serde(flatten)]
    pub outcome: ToolOutcome,
}

/// How a tool call ended. Written as fields of the `tool` line: either the
/// observation's four fields, or `timed_out`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolOutcome {
    /// The tool ran (successfully or not).
    Observed {
        /// The observation shown to the model.
        observation: String,
        /// Whether it is an error message.
        is_error: bool,
        /// Tokens of the observation.
        tokens: usize,
        /// Time the tool took, in milliseconds.
        ms: u64,
    },
    /// The wall-clock limit interrupted it; the episode ends.
    TimedOut {
        /// Always true.
        timed_out: bool,
    },
}

/// Writes trajectory events as JSON lines (or keeps them in memory).
#[derive(Debug, Default)]
pub struct Trajectory {
    file: Option<std::io::BufWriter<std::fs::File>>,
    path: Option<PathBuf>,
    events: Vec<TrajectoryEvent>,
}

impl Trajectory {
    /// A trajectory kept in memory only.
    pub fn in_memory() -> Self {
        Trajectory::default()
    }

    /// A trajectory written to `path` (and kept in memory).
    pub fn to_file(path: &Path) -> Result<Self, Error> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Error::Trajectory(e.to_string()))?;
        }
        // Readable too: the guard gets a copy of this descriptor, and reads
        // what was written before it appends a summary for a killed agent.
        let file = std::fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::Trajectory(format!("cannot create {}: {e}", path.display())))?;
        Ok(Trajectory {
            file: Some(std::io::BufWriter::new(file)),
            path: Some(path.to_path_buf()),
            events: Vec::new(),
        })
    }

    /// Where it is written, if anywhere.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// A second descriptor of the file it is written to (read and write),
    /// for the guard; `None` in memory.
    pub(crate) fn file_handle(&self) -> Option<std::io::Result<std::fs::File>> {
        self.file.as_ref().map(|file| file.get_ref().try_clone())
    }

    /// Records an event. Each line is flushed as it is written, so a
    /// trajectory of a run that is killed is whole up to its last step.
    pub fn record(&mut self, event: &TrajectoryEvent) -> Result<(), Error> {
        if let Some(file) = &mut self.file {
            serde_json::to_writer(&mut *file, event)
                .map_err(|e| Error::Trajectory(e.to_string()))?;
            file.write_all(b"\n")
                .and_then(|()| file.flush())
                .map_err(|e| Error::Trajectory(e.to_string()))?;
        }
        self.events.push(event.clone());
        Ok(())
    }

    /// The events recorded so far.
    pub fn events(&self) -> &[TrajectoryEvent] {
        &self.events
    }

    /// Reads a trajectory file back. A line that is not an event is an
    /// error naming the line; blank lines are skipped. So is the one line
    /// just before a last `summary` of status `killed`, when it is not an
    /// event: the agent was killed in the middle of writing it.
    pub fn read(path: &Path) -> Result<Vec<TrajectoryEvent>, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Trajectory(format!("cannot read {}: {e}", path.display())))?;
        let lines: Vec<(usize, &str)> = text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
            .collect();
        let killed = lines.last().is_some_and(|(_, line)| {
            matches!(
                serde_json::from_str::<TrajectoryEvent>(line),
                Ok(TrajectoryEvent::Summary(Summary {
                    status: Status::Killed,
                    ..
                }))
            )
        });
        let cut_short = lines.len().checked_sub(2);
        let mut events = Vec::with_capacity(lines.len());
        for (n, (i, line)) in lines.iter().enumerate() {
            match serde_json::from_str::<TrajectoryEvent>(line) {
                Ok(event) => events.push(event),
                Err(_) if killed && Some(n) == cut_short => {}
                Err(e) => {
                    return Err(Error::Trajectory(format!(
                        "{}:{}: {e}",
                        path.display(),
                        i + 1
                    )));
                }
            }
        }
        Ok(events)
    }
}
