//! One episode: analyse the repository, build the initial context, then
//! model turn → tool calls → observations until `finish` or a budget ends it.

use std::time::{Duration, Instant};

use llm::{
    ChatModel, ChatRequest, ChatResponse, LlmError, Message, ToolCall, ToolDefinition, UsageMeter,
};
use sandbox::Isolation;

use crate::Error;
use crate::redact::RedactingModel;
use crate::run::history::History;
use crate::run::prepare::Prepared;
use crate::run::prompt;
use crate::run::task::TaskSpec;
use crate::run::tools::{ToolName, ToolOptions, ToolOutput, Tools};
use crate::trajectory::{
    ContextExceededEvent, DigestEvent, ModelErrorEvent, ModelEvent, RequestEvent, SetupEvent,
    StartEvent, Status, Summary, ToolEvent, ToolOutcome, Trajectory, TrajectoryEvent,
};

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
    /// Most tool calls of one model reply that are run (default
    /// [`MAX_TOOL_CALLS_PER_REPLY`]); the model is told the rest were not.
    pub max_tool_calls_per_reply: usize,
    /// The same call answered with the same observation in this many turns
    /// (other calls between them or not) ends the episode as
    /// [`Status::Stuck`] (default [`STUCK_AFTER`]; `None`: never).
    pub stuck_after: Option<u32>,
}

/// How many identical exchanges end an episode by default. The second one
/// already says it repeats and the next request samples instead of
/// decoding greedily; a 1.5B model still sent the same call eight times
/// on GitTaskBench Eparse_01 (run 9), each answered alike, the turns and
/// about 7,000 tokens each spent for nothing. OpenHands' stuck detector
/// stops at four identical action-observation pairs of runs of a hundred
/// turns; these runs have ten. Read back on run 9's six finished tuning
/// episodes, three would have stopped (Eparse_01 and InvisibleWatermark_03
/// at turn 4, Eparse_03 at 7), none of which wrote an output later, and
/// 114,210 of their 274,255 tokens would not have been spent.
pub const STUCK_AFTER: u32 = 3;

/// How many tool calls of one reply run by default. A turn is one reply,
/// so without a cap a reply of 3,000 calls would run 3,000 tools inside
/// one turn of `--max-turns`; 16 is well above what models send for real
/// work (one to a handful of calls per reply).
pub const MAX_TOOL_CALLS_PER_REPLY: usize = 16;

impl Default for Budgets {
    fn default() -> Self {
        Budgets {
            max_turns: 40,
            max_tokens: None,
            timeout: None,
            context_window: 128_000,
            max_tool_calls_per_reply: MAX_TOOL_CALLS_PER_REPLY,
            stuck_after: Some(STUCK_AFTER),
        }
    }
}

/// How an episode is set up: built with [`AgentConfig::builder`] (or
/// [`AgentConfig::default`]), read and adjusted through its fields.
///
/// ```
/// use std::time::Duration;
/// use agent::{AgentConfig, Summaries};
///
/// let config = AgentConfig::builder()
///     .max_turns(6)
///     .isolation(sandbox::Isolation::Process)
///     .exec_timeout(Duration::from_secs(60))
///     .summaries(Summaries::Docstrings)
///     .build();
/// assert_eq!(config.budgets.max_turns, 6);
/// assert_eq!(config.context_budget, AgentConfig::default().context_budget);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
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
    /// The user asked that code have no network at all (`--no-network`):
    /// setting up fails where the isolation cannot enforce it (process
    /// mode) instead of running with the network on (default false).
    pub require_no_network: bool,
    /// Where each repository's per-file analysis is cached between runs:
    /// the same cache `repo-agent analyze`, `rank` and `context` use
    /// (default [`AnalysisCache::None`]).
    pub analysis_cache: AnalysisCache,
    /// Who writes the module summaries of the initial context (default
    /// [`Summaries::Docstrings`]).
    pub summaries: Summaries,
    /// Which user model-written code runs as (default [`CodeUser::Auto`]).
    pub code_user: CodeUser,
    /// When the model is asked for search terms before the context is
    /// built (default [`SearchTerms::Auto`]).
    pub search_terms: SearchTerms,
    /// The task repository's prepared environment
    /// ([`crate::environment::prepare_environment`]): code runs with its
    /// virtualenv first on `PATH` and as `run_python`'s interpreter, and
    /// the initial context says what is installed (default none: the
    /// system Python).
    pub environment: Option<crate::environment::EnvironmentReport>,
    /// End the task prompt with the first step: write and run a script
    /// with the usage the context shows, exploring only if it fails
    /// (default false; [`crate::LoadedModel::fit`] sets it for an
    /// in-process model).
    pub first_step: bool,
}

/// When the model is asked for English search terms and likely
/// identifiers before the initial context is built (one short call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SearchTerms {
    /// When fewer than two of the task's words name anything in the
    /// primary repository (a task in another language, or in words the
    /// code does not use).
    #[default]
    Auto,
    /// Always: on the localization bench, search terms raise the share of
    /// tasks whose context shows an entry point to nearly all of them
    /// (docs/PERFORMANCE.md, "Localization"), for one call of a few
    /// hundred tokens.
    Always,
    /// Never: the context is built from the task's words alone.
    Never,
}

/// Which user model-written code runs as. Whatever is chosen, it is never
/// root: the sandbox refuses uid and gid 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CodeUser {
    /// `nobody` (65534) when the agent is root, in either isolation mode;
    /// the agent's own (unprivileged) user otherwise.
    #[default]
    Auto,
    /// The agent's own user. Refused when the agent is root: untrusted
    /// code never runs as root.
    Caller,
    /// This user and group (the agent must be root; not uid or gid 0).
    User(sandbox::RunAs),
}

impl CodeUser {
    /// The user to hand the sandbox, given the agent's effective user id.
    ///
    /// # Errors
    ///
    /// A message for the user when `Caller` is asked of a root agent, or a
    /// user is root or in root's group.
    pub fn resolve(self, agent_uid: u32) -> Result<Option<sandbox::RunAs>, String> {
        match self {
            Self::Auto if agent_uid == 0 => Ok(Some(sandbox::RunAs::NOBODY)),
            Self::Caller if agent_uid == 0 => Err(
                "--run-as caller would run model-written code as root, which the sandbox \
                 never does; drop it (the default runs the code as nobody) or give an \
                 unprivileged UID[:GID]"
                    .to_owned(),
            ),
            Self::Auto | Self::Caller => Ok(None),
            Self::User(user) if user.uid == 0 || user.gid == 0 => Err(format!(
                "--run-as {}:{} is root or root's group; model-written code never runs as \
                 root: give an unprivileged UID[:GID]",
                user.uid, user.gid
            )),
            Self::User(user) => Ok(Some(user)),
        }
    }
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
            require_no_network: false,
            analysis_cache: AnalysisCache::None,
            summaries: Summaries::Docstrings,
            code_user: CodeUser::Auto,
            search_terms: SearchTerms::Auto,
            environment: None,
            first_step: false,
        }
    }
}

impl AgentConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> AgentConfigBuilder {
        AgentConfigBuilder {
            config: AgentConfig::default(),
        }
    }
}

/// Builds an [`AgentConfig`]; every setter replaces one default (see the
/// field of the same name for what it means and its default).
#[derive(Debug, Clone)]
#[must_use]
pub struct AgentConfigBuilder {
    config: AgentConfig,
}

macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty),* $(,)?) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, $name: $ty) -> Self {
                self.config.$name = $name;
                self
            }
        )*
    };
}

impl AgentConfigBuilder {
    setters! {
        /// All limits of an episode at once.
        budgets: Budgets,
        /// Tool set and information selection.
        tools: ToolOptions,
        /// Token budget of the initial repository context.
        context_budget: usize,
        /// The hierarchical initial context (off: README only).
        hierarchical_analysis: bool,
        /// Sandbox isolation.
        isolation: Isolation,
        /// Timeout of one code run.
        exec_timeout: Duration,
        /// Let `pip install` reach the package registry.
        package_registry: bool,
        /// Fail setting up where the isolation cannot take the network away.
        require_no_network: bool,
        /// Where the per-file analysis is cached between runs.
        analysis_cache: AnalysisCache,
        /// Who writes the module summaries of the initial context.
        summaries: Summaries,
        /// Which user model-written code runs as.
        code_user: CodeUser,
        /// When the model is asked for search terms.
        search_terms: SearchTerms,
        /// The task repository's prepared environment.
        environment: Option<crate::environment::EnvironmentReport>,
        /// End the task prompt with the first step to take.
        first_step: bool,
    }

    /// Most model turns (the one budget nearly every caller sets).
    pub fn max_turns(mut self, turns: u32) -> Self {
        self.config.budgets.max_turns = turns;
        self
    }

    /// The configuration.
    pub fn build(self) -> AgentConfig {
        self.config
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

/// A duration in whole milliseconds, as every trajectory line writes them.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The user message that answers a turn with no tool call: the loop only
/// advances through tools.
const NUDGE: &str = "Continue with the tools. When the outputs are written and checked, call `finish` with a summary.";

/// Replies in a row that only look (no `write_file`, `edit_file`,
/// `run_python` or `run_shell`) after which the model is told to act.
/// Measured (GitTaskBench Eparse_01, embedded Qwen 1.5B): ten turns of
/// `search_code` and `find_callers` on one class, and no script written,
/// though the README in the context showed the usage.
pub const LOOK_ONLY_TURNS: u32 = 4;

/// What the model is told after [`LOOK_ONLY_TURNS`] replies that only
/// looked.
fn act_nudge(turns: u32) -> String {
    format!(
        "You have looked at the repository for {turns} turns without running anything. Act now: \
         write a short Python script that does the task with the repository's API (the usage \
         in the README and the context above shows how), saving the outputs where the task \
         says, and run it with run_python. If it fails, read the error and fix the script."
    )
}

/// Whether a tool call changes or runs something (as opposed to looking).
fn acts(call: &ToolCall) -> bool {
    [
        ToolName::WriteFile,
        ToolName::EditFile,
        ToolName::RunPython,
        ToolName::RunShell,
        ToolName::Finish,
    ]
    .iter()
    .any(|tool| tool.as_str() == call.name)
}

/// How many times a context overflow may shrink the conversation before the
/// episode gives up.
const MAX_SHRINKS: u32 = 20;

/// Runs the loop until `finish` or a budget ends it. Model failures that
/// retrying cannot fix end it with [`Status::Error`]; only a trajectory
/// that cannot be written is an `Err`.
///
/// This is the loop of seed 001 figure 2: the model reads the context and
/// chooses its next actions; each tool call runs, and its observation
/// (reduced by information selection) joins the context; until the model
/// calls `finish` or a budget runs out. The bookkeeping (trajectory,
/// budgets, token meter, context window) lives in `Episode`.
pub async fn run_episode(
    model: &dyn ChatModel,
    prepared: &Prepared,
    task: &TaskSpec,
    budgets: &Budgets,
    trajectory: &mut Trajectory,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Summary, Error> {
    let tools = &prepared.tools;
    let opening = vec![
        Message::system(prompt::system_prompt(tools.options().exploration)),
        Message::user(prompt::task_prompt(
            task,
            Some(&prepared.context),
            prepared.first_step.as_ref(),
        )),
    ];
    let context_tokens = tools.counter().count(&prepared.context);
    let start = Opening {
        messages: opening,
        context_tokens,
        setup: &prepared.setup,
        expects_outputs: true,
    };
    run_conversation(model, tools, start, task, budgets, trajectory, progress).await
}

/// How a conversation of the loop opens: its first messages, the tokens
/// of the context they carry, and the setup calls already made for it.
#[derive(Debug, Clone)]
pub struct Opening<'a> {
    /// The system prompt and the first user message (at least).
    pub messages: Vec<Message>,
    /// Tokens of the context in them, for the `start` event.
    pub context_tokens: usize,
    /// Model calls made before the conversation; their tokens count.
    pub setup: &'a [SetupEvent],
    /// Whether the task's outputs are files named `output*` in its output
    /// directory: the first `finish` while there are none is refused
    /// (see `FinishRefusal::NoOutputs`).
    pub expects_outputs: bool,
}

/// Why a `finish` call did not end the episode. A small model often
/// writes a script, runs it and calls `finish` in one reply, before it
/// has seen whether the run worked; and it may finish with nothing
/// written. Each refusal is the call's observation, so the model reads
/// why and what to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FinishRefusal {
    /// `finish` came with other calls in the same reply: their results
    /// were not seen when it was made.
    NotAlone,
    /// The output directory holds no output file yet (refused once: a
    /// second `finish` ends the episode, for tasks that cannot be done).
    NoOutputs,
}

impl FinishRefusal {
    fn message(self, task: &TaskSpec) -> String {
        match self {
            FinishRefusal::NotAlone => {
                "Not finished: `finish` must be the only call of its reply, \
                 made after you have seen the results of your other calls. Read the results \
                 above; fix what failed; when the outputs are written and correct, call \
                 `finish` alone."
                    .to_owned()
            }
            FinishRefusal::NoOutputs => format!(
                "Not finished: the output directory {} holds no file named `output*` yet. \
                 Write the outputs there (for example with a script run by `run_python`), \
                 check them, then call `finish`. If the task cannot be done, call `finish` \
                 again with the reason.",
                task.output_dir.display()
            ),
        }
    }
}

/// The loop of [`run_episode`] over any opening: `repo-agent generate`
/// runs its repair rounds through it with the same tools, budgets and
/// trajectory events, and a prompt of its own.
pub async fn run_conversation(
    model: &dyn ChatModel,
    tools: &Tools,
    opening: Opening<'_>,
    task: &TaskSpec,
    budgets: &Budgets,
    trajectory: &mut Trajectory,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Summary, Error> {
    // The one boundary of every model call of the loop: what is sent and
    // what comes back pass the run's redactor (the history has redacted
    // each message already; this also covers the model's answers).
    let model = RedactingModel::new(model, tools.redactor().clone());
    let opening_expects_outputs = opening.expects_outputs;
    let mut episode = Episode::start(&model, tools, opening, task, budgets, trajectory)?;
    // Replies in a row that only looked.
    let mut looked = 0u32;
    let (status, message) = 'episode: loop {
        if let Some(status) = episode.budget_spent() {
            break (status, None);
        }
        // The model reads the context and answers.
        let (response, not_run) = match episode.ask_model(progress).await? {
            Answer::Response(response, not_run) => (response, not_run),
            Answer::Retry => continue,
            Answer::Stop(status, message) => break (status, message),
        };
        if response.tool_calls.is_empty() {
            episode.history.push(Message::user(NUDGE));
            continue;
        }
        // Each call runs; its observation joins the context. The calls
        // beyond the per-reply cap are already gone from the reply.
        let mut finished = None;
        episode.reply_seen.clear();
        for call in &response.tool_calls {
            if call.name == ToolName::Finish.as_str()
                && let Some(refusal) =
                    episode.finish_refusal(response.tool_calls.len(), opening_expects_outputs)
            {
                episode.refuse_tool(call, refusal)?;
                continue;
            }
            let Some(output) = episode.run_tool(call, progress).await? else {
                break 'episode (Status::Timeout, None);
            };
            finished = output.finish.or(finished);
            if let Some(why) = episode.stuck.take() {
                break 'episode (Status::Stuck, Some(why));
            }
        }
        if let Some(summary) = finished {
            break (Status::Finished, Some(summary));
        }
        if not_run > 0 {
            episode.history.push(Message::user(not_run_notice(
                response.tool_calls.len(),
                not_run,
            )));
        }
        looked = if response.tool_calls.iter().any(acts) {
            0
        } else {
            looked + 1
        };
        if looked >= LOOK_ONLY_TURNS {
            episode.history.push(Message::user(act_nudge(looked)));
            looked = 0;
        }
    };
    episode.end(status, message)
}

/// What an observation says, for [`Episode::note_repeat`]: its text
/// without the run time of an execution's status line (`[exit code 1 in
/// 0.2s]`), which differs between two runs of the same failure.
fn observation_digest(text: &str) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    let first = match (first.starts_with('['), first.rfind(" in ")) {
        (true, Some(at)) if first.ends_with("s]") => &first[..at],
        _ => first,
    };
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (first, rest).hash(&mut hasher);
    hasher.finish()
}

/// Characters of a model's text reply kept in the history; the rest is
/// cut, and the model is told so in the reply itself.
const MAX_REPLY_CHARS: usize = 16_000;

/// Cuts a text reply longer than [`MAX_REPLY_CHARS`], saying so at the cut.
fn cap_reply(response: &mut ChatResponse) {
    let Some(content) = response.content.as_mut() else {
        return;
    };
    let total = content.chars().count();
    if total <= MAX_REPLY_CHARS {
        return;
    }
    let end = content
        .char_indices()
        .nth(MAX_REPLY_CHARS)
        .map_or(content.len(), |(i, _)| i);
    content.truncate(end);
    content.push_str(&format!(
        "\n[reply cut at {MAX_REPLY_CHARS} of {total} characters: keep replies short and put long text in files with write_file]"
    ));
}

/// What the model is told when its reply made more tool calls than run.
fn not_run_notice(run: usize, not_run: usize) -> String {
    format!(
        "Only the first {run} tool calls of your last reply were run; the other {not_run} were \
         not run, because at most {run} calls of one reply run. Make the calls still needed \
         in your next replies, at most {run} per reply."
    )
}

/// Keeps the first `cap` (at least one) tool calls of a reply; returns how
/// many were dropped. The dropped calls leave the reply before the history
/// sees it, so every call in the conversation has its tool message (a
/// reply of 3,000 calls would otherwise need 3,000 answers in the context).
fn cap_tool_calls(response: &mut ChatResponse, cap: usize) -> usize {
    let made = response.tool_calls.len();
    response.tool_calls.truncate(cap.max(1));
    made - response.tool_calls.len()
}

/// What [`Episode::ask_model`] got.
enum Answer {
    /// An answer to act on, and how many of its tool calls were dropped
    /// by the per-reply cap.
    Response(ChatResponse, usize),
    /// The prompt was too long and the conversation was shrunk: ask again.
    Retry,
    /// The episode ends.
    Stop(Status, Option<String>),
}

/// The state of one episode and the bookkeeping of each step: the
/// conversation, the budgets, the token meter and the trajectory.
struct Episode<'a> {
    model: &'a dyn ChatModel,
    tools: &'a Tools,
    task: &'a TaskSpec,
    budgets: &'a Budgets,
    trajectory: &'a mut Trajectory,
    definitions: Vec<ToolDefinition>,
    history: History,
    meter: UsageMeter,
    started: Instant,
    /// Model turns answered so far.
    turns: u32,
    /// Messages of the history already sent (written to the trajectory).
    sent: usize,
    /// Context overflows so far.
    shrinks: u32,
    /// Whether a `finish` was already refused for want of outputs.
    refused_without_outputs: bool,
    /// Each call made so far (name and arguments): the turn it was last
    /// made in, what its observation said, and in how many turns it got
    /// that observation since it last changed.
    calls_seen: std::collections::HashMap<String, Seen>,
    /// A call has been answered alike [`Budgets::stuck_after`] times.
    stuck: Option<String>,
    /// The observations of the current reply's calls so far, by digest,
    /// with the id of the call that got each.
    reply_seen: std::collections::HashMap<u64, String>,
    /// The last reply repeated an earlier call and got the same result:
    /// the next request samples ([`REPEAT_TEMPERATURE`]).
    resample: bool,
}

/// What [`Episode::note_repeat`] remembers of one call.
#[derive(Debug, Clone, Copy)]
struct Seen {
    turn: u32,
    observation: u64,
    times: u32,
}

/// Sampling temperature of the request after a reply that repeated an
/// earlier call with the same result. A model decoding greedily (the
/// embedded one, and servers left at temperature 0) sent on GitTaskBench
/// Eparse_03 the same reply turn after turn: the note saying so changed
/// the prompt but not the most likely reply. Sampling gives the reply a
/// chance to differ; the turn after goes back to the model's default.
pub const REPEAT_TEMPERATURE: f32 = 0.7;

impl<'a> Episode<'a> {
    /// The opening messages; records `start` and the setup calls.
    fn start(
        model: &'a dyn ChatModel,
        tools: &'a Tools,
        opening: Opening<'_>,
        task: &'a TaskSpec,
        budgets: &'a Budgets,
        trajectory: &'a mut Trajectory,
    ) -> Result<Self, Error> {
        let definitions = tools.definitions();
        let history = History::new(
            tools.counter().clone(),
            tools.redactor().clone(),
            opening.messages,
        );
        trajectory.record(&TrajectoryEvent::Start(StartEvent {
            task: task.clone(),
            model: model.model_name().to_owned(),
            tools: definitions.iter().map(|d| d.name.clone()).collect(),
            max_turns: budgets.max_turns,
            max_tokens: budgets.max_tokens,
            timeout_ms: budgets.timeout.map(millis),
            exploration_tools: tools.options().exploration,
            info_selection: tools.options().info_selection,
            context_tokens: opening.context_tokens,
        }))?;
        // The calls made while preparing count toward the run's tokens.
        let meter = UsageMeter::default();
        for event in opening.setup {
            trajectory.record(&TrajectoryEvent::Setup(event.clone()))?;
            meter.add(&event.usage);
        }
        Ok(Episode {
            model,
            tools,
            task,
            budgets,
            trajectory,
            definitions,
            history,
            meter,
            started: Instant::now(),
            turns: 0,
            sent: 0,
            shrinks: 0,
            refused_without_outputs: false,
            calls_seen: std::collections::HashMap::new(),
            stuck: None,
            reply_seen: std::collections::HashMap::new(),
            resample: false,
        })
    }

    /// Time left of the wall-clock limit, if there is one.
    fn time_left(&self) -> Option<Duration> {
        self.budgets
            .timeout
            .map(|t| t.saturating_sub(self.started.elapsed()))
    }

    fn tokens_used(&self) -> u64 {
        self.meter.summary().total_tokens()
    }

    /// The status to end with when a budget is spent before the next turn.
    fn budget_spent(&self) -> Option<Status> {
        if self.turns >= self.budgets.max_turns {
            Some(Status::MaxTurns)
        } else if self
            .budgets
            .max_tokens
            .is_some_and(|max| self.tokens_used() >= max)
        {
            Some(Status::MaxTokens)
        } else if self.time_left().is_some_and(|left| left.is_zero()) {
            Some(Status::Timeout)
        } else {
            None
        }
    }

    /// One model turn: keeps the conversation within the context window,
    /// sends it, and records the request and the answer.
    async fn ask_model(&mut self, progress: &mut dyn FnMut(&Progress)) -> Result<Answer, Error> {
        let turn = self.turns + 1;
        let digested = self
            .history
            .compact(self.budgets.context_window / 10 * 8, 2);
        if digested > 0 {
            self.trajectory
                .record(&TrajectoryEvent::Digest(DigestEvent {
                    turn,
                    digested,
                    history_tokens: self.history.tokens(),
                }))?;
        }
        let mut request =
            ChatRequest::new(self.history.messages().to_vec()).with_tools(self.definitions.clone());
        if self.budgets.max_tool_calls_per_reply == 1 {
            request = request.with_parallel_tool_calls(false);
        }
        if std::mem::take(&mut self.resample) {
            request = request.with_temperature(REPEAT_TEMPERATURE);
        }
        let new_messages =
            self.history.messages()[self.sent.min(self.history.messages().len())..].to_vec();
        self.trajectory
            .record(&TrajectoryEvent::Request(RequestEvent {
                turn,
                messages: request.messages.len(),
                new_messages,
                history_tokens: self.history.tokens(),
                temperature: request.temperature,
            }))?;
        self.sent = self.history.messages().len();
        progress(&Progress {
            turn,
            tool: None,
            total_tokens: self.tokens_used(),
        });
        let call_started = Instant::now();
        let answer = match self.time_left() {
            Some(left) => match tokio::time::timeout(left, self.model.complete(&request)).await {
                Ok(answer) => answer,
                Err(_) => return Ok(Answer::Stop(Status::Timeout, None)),
            },
            None => self.model.complete(&request).await,
        };
        let response = match answer {
            Ok(response) => response,
            Err(error @ LlmError::ContextLengthExceeded { .. }) => {
                return self.context_exceeded(turn, &error);
            }
            Err(error @ LlmError::MalformedToolCall { .. }) => {
                return self.malformed_call(turn, error);
            }
            Err(error) => {
                let message = self.model_error(turn, error)?;
                return Ok(Answer::Stop(Status::Error, Some(message)));
            }
        };
        self.turns = turn;
        self.meter
            .record_response(self.model.model_name(), &response);
        // Before the trajectory and the history see it: a reply of
        // megabytes would otherwise be stored twice and sent back every turn.
        let mut response = response;
        cap_reply(&mut response);
        // The trajectory keeps every call the model made; the history
        // only those that run.
        let tool_calls = response.tool_calls.clone();
        let not_run = cap_tool_calls(&mut response, self.budgets.max_tool_calls_per_reply);
        if not_run > 0 {
            tracing::warn!(
                turn,
                made = tool_calls.len(),
                not_run,
                "the model's reply made more tool calls than run in one reply"
            );
        }
        self.trajectory.record(&TrajectoryEvent::Model(ModelEvent {
            turn,
            content: response.content.clone(),
            tool_calls,
            finish_reason: response.finish_reason.clone(),
            usage: response.usage,
            model: response.model.clone(),
            latency_ms: millis(response.latency),
            wall_ms: millis(call_started.elapsed()),
            tool_calls_not_run: not_run,
        }))?;
        self.history.push(response.to_message());
        Ok(Answer::Response(response, not_run))
    }

    /// The model called a tool with arguments that cannot be read (not
    /// JSON, or not an object): that costs a turn, not the episode. The
    /// model is shown what was wrong and asked again.
    fn malformed_call(&mut self, turn: u32, error: LlmError) -> Result<Answer, Error> {
        self.turns = turn;
        let name = match &error {
            LlmError::MalformedToolCall { name, .. } => name.clone(),
            _ => String::new(),
        };
        // The error's text carries a bounded preview of the raw arguments.
        let message = self.model_error(turn, error)?;
        self.history.push(Message::assistant(format!(
            "(a call to `{name}` whose arguments could not be read)"
        )));
        self.history.push(Message::user(message));
        Ok(Answer::Retry)
    }

    /// Counts a failed model call and records it; returns its message.
    fn model_error(&mut self, turn: u32, error: LlmError) -> Result<String, Error> {
        self.meter.record_error(self.model.model_name(), &error);
        let message = error.to_string();
        self.trajectory
            .record(&TrajectoryEvent::ModelError(ModelErrorEvent {
                turn,
                error,
            }))?;
        Ok(message)
    }

    /// The model refused the prompt as too long: shrink the conversation
    /// and retry with all of it, or give up when nothing more can go.
    fn context_exceeded(&mut self, turn: u32, error: &LlmError) -> Result<Answer, Error> {
        self.meter.record_error(self.model.model_name(), error);
        let message = error.to_string();
        self.shrinks += 1;
        let shrunk = self.history.shrink();
        self.trajectory
            .record(&TrajectoryEvent::ContextExceeded(ContextExceededEvent {
                turn,
                message: message.clone(),
                shrunk,
                history_tokens: self.history.tokens(),
            }))?;
        if !shrunk || self.shrinks > MAX_SHRINKS {
            return Ok(Answer::Stop(
                Status::Error,
                Some(format!(
                    "the conversation does not fit the model's context window: {message}"
                )),
            ));
        }
        self.sent = 0;
        Ok(Answer::Retry)
    }

    /// Runs one tool call within the time left, records it and adds its
    /// observation to the conversation. `None` when the wall-clock limit
    /// interrupted it.
    async fn run_tool(
        &mut self,
        call: &ToolCall,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<Option<ToolOutput>, Error> {
        progress(&Progress {
            turn: self.turns,
            tool: Some(call.name.clone()),
            total_tokens: self.tokens_used(),
        });
        let mut output = match self.time_left() {
            Some(left) => tokio::time::timeout(left, self.tools.call(call)).await.ok(),
            None => Some(self.tools.call(call).await),
        };
        if let Some(output) = output.as_mut() {
            self.note_repeat(call, output);
            self.shorten_duplicate(call, output);
        }
        let outcome = match &output {
            Some(output) => ToolOutcome::Observed {
                observation: output.text.clone(),
                is_error: output.is_error,
                tokens: output.tokens,
                ms: output.ms,
            },
            None => ToolOutcome::TimedOut { timed_out: true },
        };
        self.trajectory.record(&TrajectoryEvent::Tool(ToolEvent {
            turn: self.turns,
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            outcome,
        }))?;
        if let Some(output) = &output {
            self.history
                .push(Message::tool(call.id.clone(), output.text.clone()));
        }
        Ok(output)
    }

    /// A small model on greedy decoding, shown the same failure again,
    /// tends to send the same reply again, turn after turn. When a call
    /// repeats an earlier one exactly and gets the same observation, the
    /// observation says so, at every repeat: each one is a turn lost.
    fn note_repeat(&mut self, call: &ToolCall, output: &mut ToolOutput) {
        let key = format!("{}\u{0}{}", call.name, call.arguments);
        let observed = observation_digest(&output.text);
        let earlier = self.calls_seen.get(&key).copied();
        // Counted once per reply: a reply that sends one call three times
        // is one turn, not a loop over turns.
        let times = match earlier {
            Some(seen) if seen.observation == observed && seen.turn == self.turns => seen.times,
            Some(seen) if seen.observation == observed => seen.times + 1,
            _ => 1,
        };
        self.calls_seen.insert(
            key,
            Seen {
                turn: self.turns,
                observation: observed,
                times,
            },
        );
        if self.budgets.stuck_after.is_some_and(|limit| times >= limit) {
            self.stuck = Some(format!(
                "stopped: `{}` was called {times} times with the same arguments and got the \
                 same result each time",
                call.name
            ));
        }
        if let Some(Seen {
            turn, observation, ..
        }) = earlier
            && observation == observed
        {
            let note = format!(
                "\nNote: this is the same call as in turn {turn}, with the same result. Repeating it \
                 will not change the result: change the call (fix what the result says) or try \
                 another way."
            );
            output.tokens += self.tools.counter().count(&note);
            output.text.push_str(&note);
            self.resample = true;
        }
    }

    /// A reply that views one file four times (as the embedded model's
    /// first reply did, with four `query` values) would put the same text
    /// four times into the context: from the second time on, the
    /// observation names the call that already got it.
    fn shorten_duplicate(&mut self, call: &ToolCall, output: &mut ToolOutput) {
        /// Shorter observations are cheaper than a reference to them.
        const MIN_CHARS: usize = 400;
        if output.text.len() < MIN_CHARS {
            return;
        }
        let digest = observation_digest(&output.text);
        match self.reply_seen.get(&digest) {
            Some(first) => {
                output.text = format!(
                    "The same result as call `{first}` of this reply, above ({} tokens not repeated).",
                    output.tokens
                );
                output.tokens = self.tools.counter().count(&output.text);
            }
            None => {
                self.reply_seen.insert(digest, call.id.clone());
            }
        }
    }

    /// Why a `finish` in a reply of `calls` calls must not end the
    /// episode yet, if it must not.
    fn finish_refusal(&mut self, calls: usize, expects_outputs: bool) -> Option<FinishRefusal> {
        if calls > 1 {
            return Some(FinishRefusal::NotAlone);
        }
        if expects_outputs && !self.refused_without_outputs && self.task.outputs().is_empty() {
            self.refused_without_outputs = true;
            return Some(FinishRefusal::NoOutputs);
        }
        None
    }

    /// Answers `call` with the refusal instead of running it; recorded as
    /// a failed tool call.
    fn refuse_tool(&mut self, call: &ToolCall, refusal: FinishRefusal) -> Result<(), Error> {
        let text = refusal.message(self.task);
        self.trajectory.record(&TrajectoryEvent::Tool(ToolEvent {
            turn: self.turns,
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            outcome: ToolOutcome::Observed {
                tokens: self.tools.counter().count(&text),
                observation: text.clone(),
                is_error: true,
                ms: 0,
            },
        }))?;
        self.history.push(Message::tool(call.id.clone(), text));
        Ok(())
    }

    /// The summary, recorded as the trajectory's last line.
    fn end(self, status: Status, message: Option<String>) -> Result<Summary, Error> {
        let usage = self.meter.summary();
        let summary = Summary {
            status,
            turns: self.turns,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            total_tokens: usage.total_tokens(),
            cost: usage.cost_usd,
            wall_ms: millis(self.started.elapsed()),
            outputs: self.task.outputs(),
            message,
            signal: None,
        };
        self.trajectory
            .record(&TrajectoryEvent::Summary(summary.clone()))?;
        Ok(summary)
    }
}

/// [`prepare`](crate::run::prepare::prepare_with_model) then [`run_episode`].
/// The wall-clock limit covers both: the setup (analysing large
/// repositories can take long) counts against it, and a limit reached
/// during the setup ends the run with [`Status::Timeout`] and its summary.
pub async fn run(
    model: &dyn ChatModel,
    task: &TaskSpec,
    config: &AgentConfig,
    trajectory: &mut Trajectory,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Summary, Error> {
    let started = Instant::now();
    let setup = crate::run::prepare::prepare_with_model(task, config, Some(model));
    let prepared = match config.budgets.timeout {
        Some(limit) => match tokio::time::timeout(limit, setup).await {
            Ok(prepared) => prepared?,
            Err(_) => return timed_out_in_setup(task, trajectory, started),
        },
        None => setup.await?,
    };
    let mut budgets = config.budgets;
    budgets.timeout = budgets
        .timeout
        .map(|limit| limit.saturating_sub(started.elapsed()));
    run_episode(model, &prepared, task, &budgets, trajectory, progress).await
}

/// The summary of a run whose time ran out before the first model turn.
fn timed_out_in_setup(
    task: &TaskSpec,
    trajectory: &mut Trajectory,
    started: Instant,
) -> Result<Summary, Error> {
    let summary = Summary {
        status: Status::Timeout,
        turns: 0,
        prompt_tokens: 0,
        completion_tokens: 0,
        total_tokens: 0,
        cost: 0.0,
        wall_ms: millis(started.elapsed()),
        outputs: task.outputs(),
        message: Some(
            "the time limit ran out while the repositories were being analysed; raise \
             --timeout, or fill the analysis cache first with `repo-agent analyze <repo>`"
                .into(),
        ),
        signal: None,
    };
    trajectory.record(&TrajectoryEvent::Summary(summary.clone()))?;
    Ok(summary)
}
