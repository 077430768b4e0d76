//! `repo-agent generate`: build a repository from a specification with
//! DeepCode's information-flow method (seed 004 section 3), on this
//! project's structure.
//!
//! 1. **Blueprint** (`blueprint.rs`, [`Blueprint`]): the specification is segmented by
//!    headings (`context_pack::spec`) and the model turns it into a typed
//!    [`Blueprint`], parsed strictly and repaired by asking again with the
//!    validation error. Endpoints and the port the specification states are
//!    extracted without a model, and the blueprint is made to agree.
//! 2. **Code with memory** (`memory.rs`, [`MemoryEntry`]): files are written one at a time in
//!    build order; the context of each is the blueprint and the memory
//!    entries of the files it uses, taken from repo-graph's facts of those
//!    files, never their code.
//! 3. **Retrieval** (`retrieve.rs`): with reference repositories, the best
//!    matching reference code is offered per file within a token budget.
//! 4. **Verification and repair** (`verify.rs`, [`probe`]): static checks
//!    from facts, then install, start, call and test in the sandbox; the
//!    failures go to a repair round of the agent loop with the edit tools
//!    ([`crate::run_conversation`]), up to `max_iterations` times.
//!
//! Every phase is a `step` line of the trajectory with its tokens; each
//! repair round is an episode (`start` … `summary`); the last line is
//! `generated`.
//!
//! ```no_run
//! # async fn demo(model: &dyn llm::ChatModel) -> Result<(), agent::Error> {
//! use agent::generate::{GenerateConfig, GenerateRequest, generate};
//! let request = GenerateRequest::new("README.md", "out/service");
//! let mut trajectory = agent::Trajectory::in_memory();
//! let report = generate(model, &request, &GenerateConfig::default(), &mut trajectory, &mut |line| eprintln!("{line}")).await?;
//! println!("{:?}: {} checks failed", report.summary.status, report.summary.checks_failed);
//! # Ok(())
//! # }
//! ```

mod blueprint;
mod fixes;
mod memory;
pub mod probe;
mod prompts;
mod report;
mod retrieve;
mod scaffold;
mod snapshot;
use snapshot::Best;
mod verify;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use context_pack::TokenCounter;
use context_pack::spec::SpecDocument;
use llm::{ChatModel, ChatRequest, LlmError, Message, Metered, Usage, UsageMeter};
use sandbox::{Isolation, Sandbox, SandboxConfig};

pub use blueprint::{Blueprint, BlueprintError, BlueprintOrigin, BlueprintSource, SpecFacts};
pub use memory::MemoryEntry;
pub use report::{
    GeneratePhase, GenerateReport, GenerateStartEvent, GenerateStatus, GenerateSummary, PhaseTimes,
    Round, StepEvent,
};
pub use verify::{Check, CheckKind};

use crate::Error;
use crate::redact::{RedactingModel, Redactor};
use crate::run::tools::policy::{Access, PathPolicy, RootKind};
use crate::run::tools::{ToolOptions, Tools};
use crate::run::{AnalysisCache, Budgets, CodeUser, Opening};
use crate::trajectory::{Status, Trajectory, TrajectoryEvent};

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenerateRequest {
    /// The specification (Markdown or plain text).
    pub spec: PathBuf,
    /// The directory the repository is written into (created).
    pub out: PathBuf,
    /// Reference repositories on disk.
    pub references: Vec<PathBuf>,
}

impl GenerateRequest {
    /// A request without references.
    pub fn new(spec: impl Into<PathBuf>, out: impl Into<PathBuf>) -> Self {
        GenerateRequest {
            spec: spec.into(),
            out: out.into(),
            references: Vec::new(),
        }
    }
}

/// How a generation run is set up.
#[derive(Debug, Clone)]
pub struct GenerateConfig {
    /// Most repair rounds (default 3).
    pub max_iterations: u32,
    /// Token and time limits over the whole run; `max_turns` is per repair
    /// round (default 12); `context_window` bounds each conversation.
    pub budgets: Budgets,
    /// Sandbox isolation of the dynamic checks and repair commands.
    pub isolation: Isolation,
    /// Which user the generated code runs as.
    pub code_user: CodeUser,
    /// Let `pip install` reach the package registry (default true).
    pub package_registry: bool,
    /// The user asked that code have no network at all: the run stops
    /// where the isolation cannot enforce it (default false).
    pub require_no_network: bool,
    /// Where the pip cache lives (under the home when there is one).
    pub analysis_cache: AnalysisCache,
    /// Run the dynamic checks (default true).
    pub dynamic_checks: bool,
    /// Tokens of the specification shown to the planner (default 12,000).
    pub spec_budget: usize,
    /// Tokens of reference code offered per file (default 1,500).
    pub retrieval_budget: usize,
    /// Blueprint answers asked for before falling back (default 3).
    pub blueprint_attempts: u32,
    /// Where the blueprint comes from (default: the model).
    pub blueprint_source: BlueprintSource,
    /// Most completion tokens of one file (default 8,000).
    pub file_max_tokens: u32,
    /// Time the service gets to listen (default 30 s).
    pub startup_timeout: Duration,
    /// Time of one example call (default 10 s).
    pub request_timeout: Duration,
    /// Time of the repository's tests (default 300 s).
    pub test_timeout: Duration,
    /// Time limit of one command of the checks (installs included;
    /// default 120 s).
    pub exec_timeout: Duration,
    /// Time limit of one command of a repair round (default 45 s). A
    /// model that starts the service itself waits for the whole limit:
    /// measured (RepoGenesis Data_Rank_Searcher, tuning half, run 2),
    /// `python app.py` four times at 120 s each, the round's whole time.
    pub repair_exec_timeout: Duration,
}

impl Default for GenerateConfig {
    fn default() -> Self {
        GenerateConfig {
            max_iterations: 3,
            budgets: Budgets {
                max_turns: 12,
                ..Budgets::default()
            },
            isolation: Isolation::Auto,
            code_user: CodeUser::Auto,
            package_registry: true,
            require_no_network: false,
            analysis_cache: AnalysisCache::None,
            dynamic_checks: true,
            spec_budget: 12_000,
            retrieval_budget: 1_500,
            blueprint_attempts: 3,
            blueprint_source: BlueprintSource::Model,
            file_max_tokens: 8_000,
            startup_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(10),
            test_timeout: Duration::from_secs(300),
            exec_timeout: Duration::from_secs(120),
            repair_exec_timeout: Duration::from_secs(45),
        }
    }
}

impl GenerateConfig {
    /// Fits the budgets to an in-process model's small context window:
    /// the specification gets half of it, a file's answer and the
    /// reference code a quarter and an eighth.
    pub fn fit_window(&mut self, window: usize) {
        self.budgets.context_window = self.budgets.context_window.min(window);
        self.spec_budget = self.spec_budget.min(window / 2);
        self.retrieval_budget = self.retrieval_budget.min(window / 8);
        self.file_max_tokens = self
            .file_max_tokens
            .min(u32::try_from(window / 4).unwrap_or(u32::MAX));
    }
}

/// A model failure that costs the step, not the run: a transient error
/// that retries did not cure, a prompt too long for the model, arguments
/// that cannot be read.
fn step_failure(e: &LlmError) -> bool {
    e.is_retryable()
        || matches!(
            e,
            LlmError::ContextLengthExceeded { .. } | LlmError::MalformedToolCall { .. }
        )
}

/// Most completion tokens of a blueprint answer (less when the model's
/// window leaves less room).
const BLUEPRINT_MAX_TOKENS: u32 = 8_000;

/// The sampling temperature of a blueprint retry (the first attempt is
/// greedy); local models sample with their fixed seed, so a run is still
/// repeatable.
const RETRY_TEMPERATURE: f32 = 0.7;

/// Characters of a refused blueprint answer kept in the trajectory.
const REFUSED_ANSWER_CHARS: usize = 4_000;

/// Tokens a chat template adds around the messages, kept free when the
/// answer's room in the window is computed.
const PROMPT_OVERHEAD: usize = 64;

/// Largest specification read (bytes).
pub const MAX_SPEC_BYTES: u64 = 2 * 1024 * 1024;

/// Largest file content taken from one answer (bytes).
const MAX_FILE_BYTES: usize = 512 * 1024;

/// Tokens of file contents shown to a repair round.
const REPAIR_FILE_TOKENS: usize = 12_000;

/// Largest generated file read to be shown to a repair round (bytes).
const MAX_REPAIR_FILE_BYTES: u64 = 256 * 1024;

/// Largest `requirements.txt` read to tell whether it changed (bytes).
const MAX_REQUIREMENTS_BYTES: u64 = 1 << 20;

/// Files written from the code's facts when they suffice ([`scaffold`]).
const SCAFFOLD_FILES: [&str; 2] = ["requirements.txt", "start.sh"];

/// The agent's own directory inside the output.
pub const AGENT_DIR: &str = ".repo-agent";

/// Runs the whole pipeline; the report is also written to
/// `out/.repo-agent/report.json` (and `.md`). Failures of the model and of
/// checks are statuses of the report; only what stops the run before it
/// can report (an unreadable specification, an unwritable directory, a
/// trajectory that cannot be written) is an `Err`.
pub async fn generate(
    model: &dyn ChatModel,
    request: &GenerateRequest,
    config: &GenerateConfig,
    trajectory: &mut Trajectory,
    progress: &mut dyn FnMut(&str),
) -> Result<GenerateReport, Error> {
    let mut run = Run::start(model, request, config, trajectory, progress)?;
    let status = run.pipeline().await?;
    run.finish(status)
}

/// A generation run in progress.
struct Run<'a> {
    /// Every call passes the run's redactor: the prompts carry the
    /// specification and reference code, which may hold anything.
    model: Metered<RedactingModel<&'a dyn ChatModel>>,
    /// Built once for the run; the repair rounds' tools share it.
    redactor: Redactor,
    request: &'a GenerateRequest,
    config: &'a GenerateConfig,
    trajectory: &'a mut Trajectory,
    progress: &'a mut dyn FnMut(&str),
    meter: UsageMeter,
    counter: TokenCounter,
    started: Instant,
    out: PathBuf,
    policy: PathPolicy,
    spec: SpecDocument,
    facts: SpecFacts,
    /// Set by the blueprint phase; the later phases get it as an argument.
    blueprint: Option<Arc<Blueprint>>,
    analyzer: repo_graph::Analyzer,
    memory: HashMap<String, MemoryEntry>,
    written: Vec<String>,
    sandbox: Option<Sandbox>,
    env: Option<(sandbox::PythonEnv, String)>,
    /// Unknown imports already looked up on the registry
    /// ([`probe::look_up_unknown`]), each once per run.
    looked_up: std::collections::BTreeSet<String>,
    checks: Vec<Check>,
    rounds: Vec<Round>,
    not_probed: Vec<String>,
    retrieved: Vec<(String, String)>,
    times: PhaseTimes,
    message: Option<String>,
}

/// Why the pipeline stopped early.
enum Stop {
    Status(GenerateStatus, String),
    Fatal(Error),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Fatal(e)
    }
}

use crate::run::millis;

/// Reads the specification: a regular text file of at most
/// [`MAX_SPEC_BYTES`]. The path is the user's, so a link in it is
/// followed; the file it names is then opened like a repository's file
/// ([`repo_files::read_in_tree`] in its directory): without blocking on a
/// pipe, its type checked on the open descriptor, its size capped.
fn read_spec(path: &Path) -> Result<String, Error> {
    let refused = |reason: String| {
        Error::Task(format!(
            "the specification {} is not read: {reason}; give a text file of at most {MAX_SPEC_BYTES} bytes",
            path.display()
        ))
    };
    let canonical = std::fs::canonicalize(path).map_err(|e| refused(format!("{e}")))?;
    let (Some(dir), Some(name)) = (canonical.parent(), canonical.file_name()) else {
        return Err(refused("it is not a file".into()));
    };
    let bytes = repo_files::read_in_tree(dir, Path::new(name), MAX_SPEC_BYTES)
        .map_err(|e| refused(context_pack::why_not_read(&e)))?;
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return Err(Error::Task(format!(
            "the specification {} is a binary file",
            path.display()
        )));
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if text.trim().is_empty() {
        return Err(Error::Task(format!(
            "the specification {} is empty",
            path.display()
        )));
    }
    Ok(text)
}

/// Writes `bytes` to `relative` inside the output directory, creating its
/// parents: through the path policy, so a directory that generated code
/// replaced with a symlink out of the tree (`.repo-agent -> /etc`) is
/// refused, and with `O_NOFOLLOW` on the file itself.
fn write_inside(policy: &PathPolicy, relative: &str, bytes: &[u8]) -> Result<PathBuf, Error> {
    let target = policy
        .write(relative)
        .map_err(|e| Error::Task(format!("cannot write {relative}: {e}")))?;
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::Task(format!("cannot create {}: {e}", parent.display())))?;
    }
    crate::run::tools::write_file_no_follow(&target, bytes)
        .map_err(|e| Error::Task(format!("cannot write {}: {e}", target.display())))?;
    Ok(target)
}

/// The content of a file from the coder's answer: its fenced block (the
/// longest when there are several), else the whole answer.
fn file_content(answer: &str) -> String {
    let answer = blueprint::cut(answer, MAX_FILE_BYTES);
    let body = context_pack::markdown::fenced_blocks(answer)
        .into_iter()
        .map(|b| b.body)
        .max_by_key(|b| b.len())
        .unwrap_or(answer);
    let mut text = body.trim_matches('\n').to_owned();
    text.push('\n');
    text
}

impl<'a> Run<'a> {
    fn start(
        model: &'a dyn ChatModel,
        request: &'a GenerateRequest,
        config: &'a GenerateConfig,
        trajectory: &'a mut Trajectory,
        progress: &'a mut dyn FnMut(&str),
    ) -> Result<Self, Error> {
        let text = read_spec(&request.spec)?;
        std::fs::create_dir_all(request.out.join(AGENT_DIR))
            .map_err(|e| Error::Task(format!("cannot create {}: {e}", request.out.display())))?;
        let out = std::fs::canonicalize(&request.out)
            .map_err(|e| Error::Task(format!("cannot resolve {}: {e}", request.out.display())))?;
        let mut policy = PathPolicy::new(&out).root(&out, RootKind::WorkDir, Access::ReadWrite);
        for reference in &request.references {
            policy = policy.root(reference, RootKind::Repository, Access::Read);
        }
        let encoding = context_pack::Encoding::default();
        let counter = TokenCounter::new(encoding)
            .map_err(|_| Error::Context(context_pack::Error::Tokenizer(encoding)))?;
        let spec = SpecDocument::parse(&text);
        let facts = SpecFacts::of(&text);
        let meter = UsageMeter::default();
        trajectory.record(&TrajectoryEvent::GenerateStart(GenerateStartEvent {
            spec: request.spec.clone(),
            out: out.clone(),
            references: request.references.clone(),
            model: model.model_name().to_owned(),
            max_iterations: config.max_iterations,
            sections: spec.sections().len(),
            declared_endpoints: facts.endpoints.iter().map(|e| e.label()).collect(),
            declared_port: facts.port,
        }))?;
        let analyzer = repo_graph::Analyzer::new(&out).respect_ignore_files(false);
        let redactor = Redactor::from_env();
        Ok(Run {
            model: Metered::new(RedactingModel::new(model, redactor.clone()), meter.clone()),
            redactor,
            request,
            config,
            trajectory,
            progress,
            meter,
            counter,
            started: Instant::now(),
            out,
            policy,
            spec,
            facts,
            blueprint: None,
            analyzer,
            memory: HashMap::new(),
            written: Vec::new(),
            sandbox: None,
            env: None,
            looked_up: std::collections::BTreeSet::new(),
            checks: Vec::new(),
            rounds: Vec::new(),
            not_probed: Vec::new(),
            retrieved: Vec::new(),
            times: PhaseTimes::default(),
            message: None,
        })
    }

    async fn pipeline(&mut self) -> Result<GenerateStatus, Error> {
        match self.stages().await {
            Ok(status) => Ok(status),
            Err(Stop::Status(status, message)) => {
                self.message = Some(message);
                Ok(status)
            }
            Err(Stop::Fatal(e)) => Err(e),
        }
    }

    async fn stages(&mut self) -> Result<GenerateStatus, Stop> {
        let blueprint = self.blueprint_phase().await?;
        self.write_phase(&blueprint).await?;
        self.verify_round(&blueprint, 0).await?;
        let mut best = self.best_so_far(None, 0);
        let mut iteration = 0;
        while self.checks.iter().any(|c| !c.passed) && iteration < self.config.max_iterations {
            iteration += 1;
            let repaired = match self.repair_round(&blueprint, iteration).await {
                Ok(()) => self.refresh_requirements(&blueprint),
                Err(stop) => Err(stop),
            };
            let verified = match repaired {
                Ok(()) => self.verify_round(&blueprint, iteration).await,
                Err(stop) => Err(stop),
            };
            if let Err(stop) = verified {
                // What the stopped repair changed was never checked: the
                // best checked version is what the run leaves.
                self.restore_best(best.as_ref(), true)?;
                return Err(stop);
            }
            best = self.best_so_far(best, iteration);
        }
        self.restore_best(best.as_ref(), false)?;
        Ok(if self.checks.iter().all(|c| c.passed) {
            GenerateStatus::Verified
        } else {
            GenerateStatus::ChecksFailed
        })
    }

    fn say(&mut self, line: &str) {
        (self.progress)(line);
    }

    fn time_left(&self) -> Option<Duration> {
        self.config
            .budgets
            .timeout
            .map(|t| t.saturating_sub(self.started.elapsed()))
    }

    /// Stops when a run-wide budget is spent.
    fn check_budgets(&self) -> Result<(), Stop> {
        if let Some(max) = self.config.budgets.max_tokens
            && self.meter.summary().total_tokens() >= max
        {
            return Err(Stop::Status(
                GenerateStatus::MaxTokens,
                format!("the token budget of {max} is spent"),
            ));
        }
        if self.time_left().is_some_and(|t| t.is_zero()) {
            return Err(Stop::Status(
                GenerateStatus::Timeout,
                "the time limit was reached".into(),
            ));
        }
        Ok(())
    }

    /// One model call within the time left; a failure that retrying
    /// cannot fix stops the run.
    async fn ask(
        &mut self,
        messages: Vec<Message>,
        max_tokens: u32,
        temperature: f32,
    ) -> Result<Result<String, LlmError>, Stop> {
        self.check_budgets()?;
        // The answer's room is what the window leaves after the prompt: a
        // fixed output limit would overflow a small in-process model's
        // window before it wrote a word.
        let prompt: usize = messages
            .iter()
            .filter_map(Message::text)
            .map(|t| self.counter.count(t))
            .sum();
        let room = self
            .config
            .budgets
            .context_window
            .saturating_sub(prompt + PROMPT_OVERHEAD);
        let max_tokens = max_tokens
            .min(u32::try_from(room).unwrap_or(u32::MAX))
            .max(1);
        let request = ChatRequest::new(messages)
            .with_temperature(temperature)
            .with_max_tokens(max_tokens);
        let answer = self.complete(&request).await?;
        // The model's own tokenizer counts the prompt differently: when it
        // says how much the prompt took, ask once more with the room left.
        if let Err(LlmError::ContextLengthExceeded {
            limit: Some(limit),
            requested: Some(requested),
            ..
        }) = &answer
            && let Some(prompt) = requested.checked_sub(u64::from(max_tokens))
            && *limit > prompt + 16
        {
            let room = u32::try_from(limit - prompt - 16).unwrap_or(u32::MAX);
            let retry = request.with_max_tokens(room.min(max_tokens));
            return Ok(self
                .complete(&retry)
                .await?
                .map(|r| r.content.unwrap_or_default()));
        }
        Ok(answer.map(|r| r.content.unwrap_or_default()))
    }

    /// One call within the time left.
    async fn complete(
        &self,
        request: &ChatRequest,
    ) -> Result<Result<llm::ChatResponse, LlmError>, Stop> {
        let call = self.model.complete(request);
        match self.time_left() {
            Some(left) => tokio::time::timeout(left, call).await.map_err(|_| {
                Stop::Status(GenerateStatus::Timeout, "the time limit was reached".into())
            }),
            None => Ok(call.await),
        }
    }

    /// One model call of a phase: the answer, with the meter's summary and
    /// the time before the call (for the step the caller records). A failure
    /// that costs only the step is recorded and returned as its message; one
    /// that retrying cannot fix is recorded and stops the run.
    async fn call_step(
        &mut self,
        phase: GeneratePhase,
        target: Option<&str>,
        messages: Vec<Message>,
        max_tokens: u32,
        temperature: f32,
    ) -> Result<Result<(String, Usage, Instant), String>, Stop> {
        let before = self.meter.summary();
        let started = Instant::now();
        match self.ask(messages, max_tokens, temperature).await? {
            Ok(answer) => Ok(Ok((answer, before, started))),
            Err(e) => {
                let fatal = !step_failure(&e);
                let result = if fatal {
                    format!("model error: {e}")
                } else {
                    format!("failed: {e}")
                };
                self.step(phase, target, &before, started, result, Vec::new())?;
                if fatal {
                    return Err(Stop::Status(GenerateStatus::ModelError, e.to_string()));
                }
                Ok(Err(e.to_string()))
            }
        }
    }

    fn step(
        &mut self,
        phase: GeneratePhase,
        target: Option<&str>,
        before: &Usage,
        started: Instant,
        result: String,
        checks: Vec<Check>,
    ) -> Result<(), Stop> {
        let usage = self.meter.summary().since(before);
        self.trajectory.record(&TrajectoryEvent::Step(StepEvent {
            phase,
            target: target.map(str::to_owned),
            usage,
            ms: millis(started.elapsed()),
            result,
            checks,
        }))?;
        Ok(())
    }

    async fn blueprint_phase(&mut self) -> Result<Arc<Blueprint>, Stop> {
        let started = Instant::now();
        self.say(&format!(
            "[blueprint] {} sections; {} endpoints and port {:?} stated in the specification",
            self.spec.sections().len(),
            self.facts.endpoints.len(),
            self.facts.port
        ));
        let mut messages = vec![
            Message::system(prompts::PLANNER),
            Message::user(prompts::planner_request(
                &self.spec,
                &self.facts,
                &self.counter,
                self.config.spec_budget,
            )),
        ];
        let mut last_error = String::new();
        let mut blueprint = None;
        let attempts = match self.config.blueprint_source {
            BlueprintSource::Facts if !self.facts.endpoints.is_empty() => {
                last_error = "the blueprint comes from the specification's facts".into();
                0
            }
            _ => self.config.blueprint_attempts.max(1),
        };
        for attempt in 1..=attempts {
            let (answer, before, call_started) = match self
                .call_step(
                    GeneratePhase::Blueprint,
                    None,
                    messages.clone(),
                    BLUEPRINT_MAX_TOKENS,
                    // Greedy first; a retry at temperature 0 gets the same
                    // answer back from a small model whatever the feedback
                    // says (measured: three identical invalid blueprints from
                    // the embedded Qwen), so retries sample.
                    if attempt == 1 { 0.0 } else { RETRY_TEMPERATURE },
                )
                .await?
            {
                Ok(called) => called,
                Err(failed) => {
                    last_error = failed;
                    continue;
                }
            };
            match blueprint::parse(&answer) {
                Ok(b) => {
                    self.step(
                        GeneratePhase::Blueprint,
                        None,
                        &before,
                        call_started,
                        format!("attempt {attempt}: {} files planned", b.files.len()),
                        Vec::new(),
                    )?;
                    blueprint = Some(b);
                    break;
                }
                Err(e) => {
                    last_error = e.to_string();
                    self.say(&format!(
                        "[blueprint] attempt {attempt} refused: {}",
                        last_error.lines().next().unwrap_or("")
                    ));
                    // The refused answer goes to the trajectory (cut): without
                    // it nobody can tell what the model got wrong.
                    self.step(
                        GeneratePhase::Blueprint,
                        None,
                        &before,
                        call_started,
                        format!(
                            "attempt {attempt} refused: {last_error}\n--- the answer ---\n{}",
                            blueprint::cut(&answer, REFUSED_ANSWER_CHARS)
                        ),
                        Vec::new(),
                    )?;
                    messages.push(Message::assistant(
                        blueprint::cut(&answer, 16_000).to_owned(),
                    ));
                    messages.push(Message::user(format!("{last_error}\n\nAnswer again with the corrected blueprint as one ```json block.")));
                }
            }
        }
        let mut blueprint = match blueprint {
            Some(b) => b,
            None if !self.facts.endpoints.is_empty() => {
                let project = self
                    .out
                    .file_name()
                    .map_or("service".into(), |n| n.to_string_lossy().into_owned());
                let b = Blueprint::from_facts(&project, &self.facts);
                if attempts == 0 {
                    let before = self.meter.summary();
                    self.step(
                        GeneratePhase::Blueprint,
                        None,
                        &before,
                        started,
                        format!(
                            "from the specification's facts: {} endpoints, port {}; no model call",
                            self.facts.endpoints.len(),
                            b.service.as_ref().map_or(0, |s| s.port)
                        ),
                        Vec::new(),
                    )?;
                } else {
                    self.say("[blueprint] no valid blueprint from the model; one is built from the specification's endpoints");
                }
                b
            }
            None => {
                return Err(Stop::Status(
                    GenerateStatus::NoBlueprint,
                    format!(
                        "the model gave no valid blueprint and the specification states no endpoint: {last_error}"
                    ),
                ));
            }
        };
        blueprint.reconcile(&self.facts);
        for correction in &blueprint.corrections {
            tracing::info!(%correction, "blueprint corrected");
        }
        let json = serde_json::to_string_pretty(&blueprint).unwrap_or_default();
        let path = write_inside(
            &self.policy,
            &format!("{AGENT_DIR}/blueprint.json"),
            json.as_bytes(),
        )?;
        self.say(&format!(
            "[blueprint] {:?}: {} files, {} endpoints; written to {}",
            blueprint.origin,
            blueprint.files.len(),
            blueprint.service.as_ref().map_or(0, |s| s.endpoints.len()),
            path.display()
        ));
        self.times.blueprint_ms = millis(started.elapsed());
        let blueprint = Arc::new(blueprint);
        self.blueprint = Some(Arc::clone(&blueprint));
        Ok(blueprint)
    }

    fn analyze(&self) -> Result<repo_graph::RepoGraph, Stop> {
        self.analyzer
            .analyze()
            .map_err(|e| Stop::Fatal(Error::Analysis(e)))
    }

    async fn write_phase(&mut self, blueprint: &Blueprint) -> Result<(), Stop> {
        let started = Instant::now();
        let references = if self.request.references.is_empty() {
            None
        } else {
            let refs = retrieve::References::analyze(&self.request.references)?;
            Some(refs)
        };
        let order = blueprint.build_order.clone();
        let total = order.len();
        // `requirements.txt` and `start.sh` follow from the code once it is
        // written (its imports, its app object), so they come last and,
        // where the facts suffice, without the model.
        let (deferred, order): (Vec<String>, Vec<String>) = order
            .into_iter()
            .partition(|p| SCAFFOLD_FILES.contains(&p.as_str()));
        for (i, path) in order.iter().enumerate() {
            self.write_planned(blueprint, path, (i + 1, total), references.as_ref())
                .await?;
        }
        let left = self.write_scaffold(blueprint, &deferred)?;
        for (i, path) in left.iter().enumerate() {
            self.write_planned(
                blueprint,
                path,
                (order.len() + deferred.len() - left.len() + i + 1, total),
                references.as_ref(),
            )
            .await?;
        }
        self.times.write_ms = millis(started.elapsed());
        Ok(())
    }

    /// Asks the model for one planned file and writes it, with its memory
    /// entry.
    async fn write_planned(
        &mut self,
        blueprint: &Blueprint,
        path: &str,
        (position, total): (usize, usize),
        references: Option<&retrieve::References>,
    ) -> Result<(), Stop> {
        {
            let Some(plan) = blueprint.file(path).cloned() else {
                return Ok(());
            };
            let mut context = blueprint.render();
            let deps: Vec<&MemoryEntry> = plan
                .depends_on
                .iter()
                .filter_map(|d| self.memory.get(d))
                .collect();
            if !deps.is_empty() {
                context.push_str("\n# Memory of the files it uses\n");
                for entry in deps {
                    context.push_str(&entry.render());
                }
            }
            if let Some(refs) = references {
                let before = self.meter.summary();
                let retrieve_started = Instant::now();
                let found = refs.for_file(
                    &plan,
                    blueprint,
                    &self.counter,
                    self.config.retrieval_budget,
                );
                let result = match &found {
                    Some(r) => format!("{} ({} tokens)", r.source, r.tokens),
                    None => "nothing relevant".to_owned(),
                };
                self.step(
                    GeneratePhase::Retrieve,
                    Some(path),
                    &before,
                    retrieve_started,
                    result,
                    Vec::new(),
                )?;
                if let Some(r) = found {
                    let _ = write!(
                        context,
                        "\n# Reference code ({}); adapt, do not copy blindly\n```\n{}\n```\n",
                        r.source, r.text
                    );
                    self.retrieved.push((path.to_owned(), r.source));
                }
            }
            if blueprint.origin == BlueprintOrigin::Facts {
                // No model blueprint: its endpoints have no shapes, so the
                // specification itself is the contract the file must keep.
                let _ = write!(
                    context,
                    "\n# The specification (follow its inputs, outputs and status codes exactly)\n{}",
                    prompts::spec_sections(&self.spec, &self.counter, self.config.spec_budget)
                );
            }
            let _ = write!(
                context,
                "\n# Write `{path}`\nPurpose: {}\n{}Answer with its complete content in one fenced code block.\n",
                plan.purpose,
                if plan.exports.is_empty() {
                    String::new()
                } else {
                    format!("It must export: {}\n", plan.exports.join(", "))
                }
            );
            self.say(&format!("[write {position}/{total}] {path}"));
            let messages = vec![Message::system(prompts::CODER), Message::user(context)];
            let Ok((answer, before, call_started)) = self
                .call_step(
                    GeneratePhase::WriteFile,
                    Some(path),
                    messages,
                    self.config.file_max_tokens,
                    0.0,
                )
                .await?
            else {
                return Ok(());
            };
            let content = file_content(&answer);
            self.write(path, &content)?;
            let graph = self.analyze()?;
            let entry = MemoryEntry::of(&graph, path, blueprint)
                .unwrap_or_else(|| MemoryEntry::plain(path, blueprint));
            let result = format!(
                "{} lines; {} interface entries, {} routes",
                content.lines().count(),
                entry.interface.len(),
                entry.routes.len()
            );
            self.memory.insert(path.to_owned(), entry);
            self.written.push(path.to_owned());
            self.step(
                GeneratePhase::WriteFile,
                Some(path),
                &before,
                call_started,
                result,
                Vec::new(),
            )?;
        }
        Ok(())
    }

    /// `best` or the repository as it now is, whichever passed more
    /// checks (the later one on a tie: it had the repair's work). `None`
    /// when no copy could be kept (the run then leaves what it has).
    fn best_so_far(&mut self, best: Option<Best>, round: u32) -> Option<Best> {
        let passed = self.checks.iter().filter(|c| c.passed).count();
        if best.as_ref().is_some_and(|b| b.passed > passed) {
            return best;
        }
        match snapshot::Snapshot::take(&self.out) {
            Ok(files) => Some(Best {
                round,
                passed,
                files,
                checks: self.checks.clone(),
            }),
            Err(error) => {
                tracing::warn!(%error, "no copy of the repository kept");
                self.say(&format!("[restore] no copy of round {round} kept: {error}"));
                best
            }
        }
    }

    /// Puts back `best` when the repository now passes fewer checks, or
    /// always with `stopped` (a repair stopped before its checks ran).
    fn restore_best(&mut self, best: Option<&Best>, stopped: bool) -> Result<(), Stop> {
        let Some(best) = best else {
            return Ok(());
        };
        let passed = self.checks.iter().filter(|c| c.passed).count();
        if !stopped && passed >= best.passed {
            return Ok(());
        }
        let started = Instant::now();
        let changed = match best.files.restore(&self.out) {
            Ok(changed) => changed,
            Err(error) => {
                self.say(&format!(
                    "[restore] round {} not put back: {error}",
                    best.round
                ));
                return Ok(());
            }
        };
        if changed.is_empty() {
            return Ok(());
        }
        let why = if stopped {
            "the repair was stopped before its checks ran".to_owned()
        } else {
            format!(
                "the last round passed {passed} checks, round {} passed {}",
                best.round, best.passed
            )
        };
        let shown: Vec<String> = changed.iter().map(|p| p.display().to_string()).collect();
        let result = format!(
            "put back the files of round {} ({why}): {}",
            best.round,
            shown.join(", ")
        );
        self.say(&format!("[restore] {result}"));
        self.checks = best.checks.clone();
        let before = self.meter.summary();
        self.step(
            GeneratePhase::Restore,
            None,
            &before,
            started,
            result,
            best.checks.clone(),
        )
    }

    /// A generated text file as it now is (empty when it cannot be read:
    /// the generated code ran since it was written, so it may be a pipe or
    /// a link out of the tree by now).
    fn read_generated(&self, relative: &str) -> String {
        self.policy
            .read(relative)
            .ok()
            .and_then(|path| {
                repo_files::read_in_tree(&self.out, &path, MAX_REQUIREMENTS_BYTES).ok()
            })
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default()
    }

    /// Writes a generated file inside the output directory (never through
    /// a symlink); shell scripts are made executable.
    fn write(&mut self, path: &str, content: &str) -> Result<(), Stop> {
        let target = write_inside(&self.policy, path, content.as_bytes())?;
        if path.ends_with(".sh") {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).map_err(
                |e| Error::Task(format!("cannot make {} executable: {e}", target.display())),
            )?;
        }
        Ok(())
    }

    /// The configuration every sandbox of the run starts from.
    fn sandbox_builder(&self) -> Result<sandbox::SandboxConfigBuilder, Stop> {
        let code_user = self
            .config
            .code_user
            .resolve(rustix::process::geteuid().as_raw())
            .map_err(Error::Task)?;
        let mut builder = SandboxConfig::builder(&self.out)
            .isolation(self.config.isolation)
            .run_as(code_user)
            .timeout(self.config.exec_timeout)
            .package_registry(self.config.package_registry)
            .read_write_path(&self.out);
        for reference in &self.request.references {
            builder = builder.read_only_path(reference);
        }
        Ok(builder)
    }

    /// The repairer's sandbox: the verification's virtualenv first on
    /// `PATH` and as `run_python`'s interpreter, once there is one, so what
    /// the model runs sees the packages the checks saw. (Measured: with the
    /// system Python, where flask happened to be installed, the embedded
    /// Qwen saw its service start and finished, while the checks failed
    /// for want of flask in the virtualenv.)
    async fn repair_sandbox(&mut self) -> Result<Sandbox, Stop> {
        let venv = self.out.join(AGENT_DIR).join("venv");
        let python = venv.join("bin").join("python");
        if !python.is_file() {
            return self.sandbox().await;
        }
        let path = format!("{}:{}", venv.join("bin").display(), sandbox::DEFAULT_PATH);
        let builder = self
            .sandbox_builder()?
            .timeout(self.config.repair_exec_timeout)
            .env("PATH", path)
            .env("VIRTUAL_ENV", venv.as_os_str())
            .python(python.as_os_str());
        Ok(Sandbox::new(builder.build().map_err(Error::Sandbox)?)
            .await
            .map_err(Error::Sandbox)?)
    }

    async fn sandbox(&mut self) -> Result<Sandbox, Stop> {
        if let Some(sandbox) = &self.sandbox {
            return Ok(sandbox.clone());
        }
        let builder = self.sandbox_builder()?;
        let sandbox = Sandbox::new(builder.build().map_err(Error::Sandbox)?)
            .await
            .map_err(Error::Sandbox)?;
        crate::run::no_network_enforced(sandbox.isolation(), self.config.require_no_network)?;
        self.say(&format!(
            "[verify] sandbox: {:?} isolation, code runs as {}, memory limit: {}, processes: {}",
            sandbox.isolation(),
            sandbox.run_as().map_or_else(
                || "the agent's user".to_owned(),
                |u| format!("uid {}", u.uid)
            ),
            sandbox.memory_cap(),
            sandbox.process_cap()
        ));
        self.sandbox = Some(sandbox.clone());
        Ok(sandbox)
    }

    async fn verify_round(&mut self, blueprint: &Blueprint, iteration: u32) -> Result<(), Stop> {
        self.apply_fixes()?;
        let started = Instant::now();
        let graph = self.analyze()?;
        let checks = verify::static_checks(&self.out, &graph, blueprint);
        let failed = checks.iter().filter(|c| !c.passed).count();
        self.say(&format!(
            "[verify {iteration}] static: {} passed, {failed} failed",
            checks.len() - failed
        ));
        let before = self.meter.summary();
        self.times.static_ms += millis(started.elapsed());
        self.step(
            GeneratePhase::StaticChecks,
            None,
            &before,
            started,
            format!("{} passed, {failed} failed", checks.len() - failed),
            checks.clone(),
        )?;
        let mut all = checks;
        if self.config.dynamic_checks && blueprint.service.is_some() {
            let dynamic_started = Instant::now();
            let dynamic = self.dynamic_checks(blueprint, &graph).await?;
            let failed = dynamic.iter().filter(|c| !c.passed).count();
            self.say(&format!(
                "[verify {iteration}] dynamic: {} passed, {failed} failed",
                dynamic.len() - failed
            ));
            self.times.dynamic_ms += millis(dynamic_started.elapsed());
            self.step(
                GeneratePhase::DynamicChecks,
                None,
                &before,
                dynamic_started,
                format!("{} passed, {failed} failed", dynamic.len() - failed),
                dynamic.clone(),
            )?;
            all.extend(dynamic);
        }
        for c in all.iter().filter(|c| !c.passed) {
            self.say(&format!(
                "  FAIL {}: {}",
                report::kind_name(c.kind),
                c.detail.lines().next().unwrap_or("")
            ));
        }
        self.rounds.push(Round {
            iteration,
            passed: all.iter().filter(|c| c.passed).count(),
            failed: all
                .iter()
                .filter(|c| !c.passed)
                .map(|c| {
                    format!(
                        "{}: {}",
                        report::kind_name(c.kind),
                        c.detail.lines().next().unwrap_or("")
                    )
                })
                .collect(),
        });
        self.checks = all;
        Ok(())
    }

    /// Install (when the requirements changed), start, call, test.
    async fn dynamic_checks(
        &mut self,
        blueprint: &Blueprint,
        graph: &repo_graph::RepoGraph,
    ) -> Result<Vec<Check>, Stop> {
        let sandbox = self.sandbox().await?;
        // Generated code may have replaced it with a pipe or a link out.
        let requirements = match repo_files::read_in_tree(
            &self.out,
            Path::new("requirements.txt"),
            MAX_REQUIREMENTS_BYTES,
        ) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(error) => {
                tracing::warn!(%error, "requirements.txt not read; the environment is rebuilt");
                String::new()
            }
        };
        let has_tests = self.out.join("tests").is_dir();
        let reuse = self
            .env
            .as_ref()
            .filter(|(_, r)| *r == requirements)
            .map(|(env, _)| env.clone());
        let mut checks = Vec::new();
        let env = match reuse {
            Some(env) => env,
            None => {
                let venv = self.out.join(AGENT_DIR).join("venv");
                let (env, install) = probe::install(&sandbox, &self.out, &venv, has_tests)
                    .await
                    .map_err(|e| Error::Task(format!("verification could not run: {e}")))?;
                checks.push(Check {
                    kind: CheckKind::Install,
                    passed: install.ok,
                    detail: if install.ok {
                        format!("installed in {} ms", install.ms)
                    } else {
                        format!(
                            "pip install -r requirements.txt failed:\n{}",
                            install.log_tail
                        )
                    },
                    files: if install.ok {
                        Vec::new()
                    } else {
                        vec!["requirements.txt".into()]
                    },
                });
                if install.ok {
                    self.env = Some((env.clone(), requirements));
                    self.pin_unknown_imports(blueprint, graph, &sandbox, &env)
                        .await?;
                }
                env
            }
        };
        let (requests, skipped) = verify::probe_requests(blueprint);
        self.not_probed = skipped;
        let port = blueprint.service.as_ref().map_or(5000, |s| s.port);
        let plan = probe::ProbePlan {
            port,
            start_script: "start.sh".into(),
            requests,
            run_tests: has_tests,
            startup_timeout: self.config.startup_timeout,
            request_timeout: self.config.request_timeout,
            test_timeout: self.config.test_timeout,
        };
        let report = probe::probe(&sandbox, &self.out, &env, &plan)
            .await
            .map_err(|e| Error::Task(format!("verification could not run: {e}")))?;
        let mut service_files: Vec<String> =
            graph.routes().iter().map(|r| r.file.clone()).collect();
        service_files.sort();
        service_files.dedup();
        checks.extend(verify::dynamic_checks(&report, &service_files));
        Ok(checks)
    }

    async fn repair_round(&mut self, blueprint: &Blueprint, iteration: u32) -> Result<(), Stop> {
        self.check_budgets()?;
        let started = Instant::now();
        let failing: Vec<Check> = self.checks.iter().filter(|c| !c.passed).cloned().collect();
        self.say(&format!(
            "[repair {iteration}] {} failing checks",
            failing.len()
        ));
        let mut files: Vec<String> = failing
            .iter()
            .flat_map(|c| c.files.iter().cloned())
            .collect();
        files.sort();
        files.dedup();
        let mut evidence = String::from("# Failing checks\n");
        for c in &failing {
            let detail = blueprint::cut(&c.detail, 4_000);
            let _ = writeln!(evidence, "## {}\n{detail}\n", report::kind_name(c.kind));
        }
        let _ = writeln!(
            evidence,
            "# The repository\nRoot (absolute): {}\n",
            self.out.display()
        );
        let mut shown = 0usize;
        for file in &files {
            let Ok(path) = self.policy.read(file) else {
                continue;
            };
            // The generated code ran in the sandbox since the check: the
            // file may be a pipe or a link out by now.
            let text = match repo_files::read_in_tree(&self.out, &path, MAX_REPAIR_FILE_BYTES) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(error) => {
                    let _ = writeln!(
                        evidence,
                        "## {} not shown: {}\n",
                        path.display(),
                        context_pack::why_not_read(&error)
                    );
                    continue;
                }
            };
            let tokens = self.counter.count(&text);
            if shown + tokens > REPAIR_FILE_TOKENS {
                let _ = writeln!(
                    evidence,
                    "## {} ({tokens} tokens; view it with view_file)\n",
                    path.display()
                );
                continue;
            }
            shown += tokens;
            let _ = writeln!(evidence, "## {}\n```\n{text}\n```\n", path.display());
        }
        let _ = write!(evidence, "\n{}", blueprint.render());
        let graph = self.analyze()?;
        let tools = Tools::new(
            vec![graph],
            self.policy.clone(),
            self.repair_sandbox().await?,
            self.counter.clone(),
            ToolOptions {
                exploration: false,
                ..ToolOptions::default()
            },
        )
        .with_redactor(self.redactor.clone());
        let task = crate::TaskSpec::new(
            format!(
                "Repair the generated repository so its failing checks pass (round {iteration})."
            ),
            &self.out,
            &self.out,
        );
        let mut budgets = self.config.budgets;
        budgets.timeout = self.time_left();
        budgets.max_tokens = budgets
            .max_tokens
            .map(|max| max.saturating_sub(self.meter.summary().total_tokens()));
        let opening = Opening {
            context_tokens: self.counter.count(&evidence),
            messages: vec![Message::system(prompts::REPAIRER), Message::user(evidence)],
            setup: &[],
            // The repository itself is the output; there are no `output*` files.
            expects_outputs: false,
        };
        let before = self.meter.summary();
        let progress = &mut *self.progress;
        let mut on_turn = |p: &crate::Progress| {
            if let Some(tool) = &p.tool {
                progress(&format!("  [repair {iteration}, turn {}] {tool}", p.turn));
            }
        };
        let summary = crate::run_conversation(
            &self.model,
            &tools,
            opening,
            &task,
            &budgets,
            self.trajectory,
            &mut on_turn,
        )
        .await?;
        self.times.repair_ms += millis(started.elapsed());
        self.step(
            GeneratePhase::Repair,
            None,
            &before,
            started,
            format!(
                "{:?} after {} turns: {}",
                summary.status,
                summary.turns,
                summary.message.as_deref().unwrap_or("")
            ),
            Vec::new(),
        )?;
        match summary.status {
            // `Killed` is only ever written by a guard, never returned.
            Status::Error | Status::Killed => Err(Stop::Status(
                GenerateStatus::ModelError,
                summary.message.unwrap_or_default(),
            )),
            Status::Timeout => Err(Stop::Status(
                GenerateStatus::Timeout,
                "the time limit was reached during a repair".into(),
            )),
            Status::MaxTokens => Err(Stop::Status(
                GenerateStatus::MaxTokens,
                "the token budget ran out during a repair".into(),
            )),
            // A repair round that loops ends; verification says what
            // it left.
            Status::Finished | Status::MaxTurns | Status::Stuck => Ok(()),
        }
    }

    fn finish(self, status: GenerateStatus) -> Result<GenerateReport, Error> {
        let usage = self.meter.summary();
        let summary = GenerateSummary {
            status,
            out: self.out.clone(),
            blueprint: self.blueprint.as_ref().map(|b| b.origin),
            files: self.written.clone(),
            checks_passed: self.checks.iter().filter(|c| c.passed).count(),
            checks_failed: self.checks.iter().filter(|c| !c.passed).count(),
            iterations: self.rounds.len().saturating_sub(1) as u32,
            rounds: self.rounds.clone(),
            model_calls: usage.calls,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            total_tokens: usage.total_tokens(),
            cost: usage.cost_usd,
            wall_ms: millis(self.started.elapsed()),
            phases: self.times,
            message: self.message.clone(),
        };
        let report = GenerateReport {
            summary: summary.clone(),
            checks: self.checks.clone(),
            corrections: self
                .blueprint
                .as_ref()
                .map(|b| b.corrections.clone())
                .unwrap_or_default(),
            not_probed: self.not_probed.clone(),
            retrieved: self.retrieved.clone(),
        };
        let json = serde_json::to_string_pretty(&report).unwrap_or_default();
        for (name, text) in [("report.json", json), ("report.md", report.to_markdown())] {
            write_inside(
                &self.policy,
                &format!("{AGENT_DIR}/{name}"),
                text.as_bytes(),
            )?;
        }
        self.trajectory
            .record(&TrajectoryEvent::Generated(summary))?;
        Ok(report)
    }
}

#[cfg(test)]
mod tests;
