//! `repo-agent run`: solve a task with a repository.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use agent::GuardedRun;
use agent::environment::{EnvironmentRequest, prepare_environment};
use agent::{
    AgentConfig, AnalysisCache, InputFile, Progress, Summaries, TaskSpec, ToolOptions, Trajectory,
};
use agent::{CopyLimits, make_work_copy, work_copy_dir};
use anyhow::{Context as _, bail};

#[derive(clap::Args)]
pub struct Args {
    /// The repository to use (its top-level directory); repeat it for a
    /// task that uses several, the first being the primary one. Without
    /// one (and without --task-file), the task's repository is searched
    /// on GitHub and the best candidate cloned (`repo-agent find`).
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
    /// Where code runs. Default: a fresh copy of the primary repository in
    /// `<output-dir>.work/`, so the repository itself is never written.
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Run code in the primary repository itself instead of a copy: code
    /// the model writes can then modify or delete the repository's files.
    #[arg(long, conflicts_with = "work_dir")]
    in_place: bool,
    /// A task file: repo-agent's JSON form or a GitTaskBench query.json.
    #[arg(long)]
    task_file: Option<PathBuf>,
    #[command(flatten)]
    model: super::ModelArgs,
    /// Most model turns.
    #[arg(long, default_value_t = 40)]
    max_turns: u32,
    /// Most prompt plus completion tokens in total.
    #[arg(long)]
    max_tokens: Option<u64>,
    /// Wall-clock limit of the whole run in seconds, the analysis included.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS, value_name = "SECS")]
    timeout: u64,
    /// Most tool calls of one model reply that are run (0 counts as 1); the
    /// model is told the others were not.
    #[arg(long, default_value_t = agent::MAX_TOOL_CALLS_PER_REPLY, value_name = "N")]
    max_tool_calls_per_reply: usize,
    /// End the run as stuck (exit code 5) when the model sends the same
    /// call in this many turns and gets the same result each time
    /// (0: never).
    #[arg(long, default_value_t = agent::STUCK_AFTER, value_name = "N")]
    stuck_after: u32,
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
    #[command(flatten)]
    sandbox: super::SandboxArgs,
    /// Time limit of one code run (`run_python`, `run_shell`), in seconds.
    #[arg(long, default_value_t = 600, value_name = "SECS")]
    exec_timeout: u64,
    /// Who writes the module summaries of the initial context: the
    /// modules' docstrings, or the model (one short request per listed
    /// module, cached by file content under REPO_AGENT_HOME).
    #[arg(long, value_enum, default_value_t = SummariesArg::Docstrings)]
    summaries: SummariesArg,
    /// When to ask the model for English search terms before building the
    /// initial context (one short call, counted): `auto` when fewer than
    /// two of the task's words name anything in the repository (a task in
    /// Chinese, say), `always`, or `never`.
    #[arg(long, value_enum, default_value_t = SearchTermsArg::Auto)]
    search_terms: SearchTermsArg,
    /// Before the episode, build the primary repository's Python
    /// environment in the sandbox (a virtualenv with its requirements*.txt,
    /// pyproject.toml, setup.cfg/setup.py dependencies; cached under
    /// REPO_AGENT_HOME/envs by those files' contents); code then runs with
    /// it, and the model is told what is installed.
    #[arg(long)]
    prepare_env: bool,
    /// What installs the prepared environment's packages: uv (installed
    /// once from its pinned PyPI wheel), falling back to pip when uv
    /// cannot be installed (auto), or only pip, or only uv.
    #[arg(long, default_value = "auto", value_parser = ["auto", "pip", "uv"])]
    installer: String,
}

/// `run`'s default wall-clock limit: 30 minutes, so that a run nobody
/// watches ends on its own, with its summary.
const DEFAULT_TIMEOUT_SECS: u64 = 30 * 60;

#[derive(Clone, Copy, clap::ValueEnum)]
enum SearchTermsArg {
    Auto,
    Always,
    Never,
}

impl From<SearchTermsArg> for agent::SearchTerms {
    fn from(arg: SearchTermsArg) -> Self {
        match arg {
            SearchTermsArg::Auto => Self::Auto,
            SearchTermsArg::Always => Self::Always,
            SearchTermsArg::Never => Self::Never,
        }
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum SummariesArg {
    Docstrings,
    Model,
}

impl From<SummariesArg> for Summaries {
    fn from(arg: SummariesArg) -> Self {
        match arg {
            SummariesArg::Docstrings => Summaries::Docstrings,
            SummariesArg::Model => Summaries::Model,
        }
    }
}

fn task_spec(args: &Args) -> anyhow::Result<TaskSpec> {
    let mut spec = match &args.task_file {
        Some(file) => TaskSpec::from_file(file, args.output_dir.as_deref())?,
        None => {
            let (Some(task), Some(out)) = (&args.task, &args.output_dir) else {
                bail!("give --repo, --task and --output-dir, or a --task-file");
            };
            // RepoMaster's first step: no repository named, so find one.
            let found;
            let repo = match args.repos.first() {
                Some(repo) => repo,
                None => {
                    found = crate::cmd::find::find_repository(task)?;
                    &found
                }
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

/// Settles where code runs when no `--work-dir` was given: a fresh copy
/// of the primary repository next to the output directory, or, with
/// `--in-place`, the repository itself (said plainly).
fn settle_work_dir(task: &mut TaskSpec, in_place: bool) -> anyhow::Result<()> {
    if task.work_dir.is_some() {
        return Ok(());
    }
    let repo = task
        .primary_repo()
        .map(|r| r.path.clone())
        .context("the task names no repository")?;
    if in_place {
        eprintln!(
            "warning: --in-place: code the model writes runs in {} and can modify or delete its \
             files (in process isolation, the code's user is also given lasting write access \
             to them through ACLs)",
            repo.display()
        );
        return Ok(());
    }
    let dest = work_copy_dir(&task.output_dir).with_context(|| {
        format!(
            "the output directory {} has no name to put the working copy next to; pass --work-dir DIR",
            task.output_dir.display()
        )
    })?;
    let stats = make_work_copy(&repo, &dest, &CopyLimits::default())?;
    let mut left_out = String::new();
    if stats.links_out > 0 {
        left_out.push_str(&format!(
            "; {} symbolic links pointing outside the repository left out",
            stats.links_out
        ));
    }
    if stats.special > 0 {
        left_out.push_str(&format!("; {} special files left out", stats.special));
    }
    if stats.large > 0 {
        left_out.push_str(&format!(
            "; {} files over {} MiB left out",
            stats.large,
            CopyLimits::default().max_file_bytes >> 20
        ));
    }
    eprintln!(
        "code runs in a copy of {} at {} ({} files, {:.1} MiB{left_out}); the repository itself \
         is not written (--work-dir DIR chooses the directory, --in-place uses the repository)",
        repo.display(),
        dest.display(),
        stats.files,
        stats.bytes as f64 / f64::from(1 << 20),
    );
    task.work_dir = Some(dest);
    Ok(())
}

/// Exit code of a run whose model called `finish` with no output file
/// written: the task asked for outputs, so this is not a success.
const EXIT_NO_OUTPUTS: u8 = 5;

/// Runs the episode; its status and outputs decide the exit code.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let mut task = task_spec(&args)?;
    let model = args
        .model
        .spec()
        .load(&mut |message| eprintln!("{message}"))?;
    settle_work_dir(&mut task, args.in_place)?;
    let mut tools = ToolOptions {
        exploration: !args.no_exploration_tools,
        info_selection: !args.no_info_selection,
        ..ToolOptions::default()
    };
    tools.select.max_tokens = args.observation_limit;
    let budgets = agent::Budgets {
        max_turns: args.max_turns,
        max_tokens: args.max_tokens,
        timeout: Some(Duration::from_secs(args.timeout)),
        context_window: args.context_window,
        max_tool_calls_per_reply: args.max_tool_calls_per_reply,
        stuck_after: (args.stuck_after > 0).then_some(args.stuck_after),
    };
    let mut config = AgentConfig::builder()
        .budgets(budgets)
        .tools(tools)
        .context_budget(args.context_budget)
        .hierarchical_analysis(!args.no_hierarchical_analysis)
        .isolation(args.sandbox.isolation.into())
        .exec_timeout(Duration::from_secs(args.exec_timeout.max(1)))
        .package_registry(!args.sandbox.no_network)
        .require_no_network(args.sandbox.no_network)
        // The same per-file analysis cache as `analyze`, `rank` and `context`.
        .analysis_cache(agent::repo_agent_home().map_or(AnalysisCache::None, AnalysisCache::Home))
        .summaries(args.summaries.into())
        .code_user(args.sandbox.run_as)
        .search_terms(args.search_terms.into())
        .build();
    model.fit(&mut config);
    let mut trajectory = match &args.trajectory {
        Some(path) => Trajectory::to_file(path)?,
        None => Trajectory::in_memory(),
    };
    // Dropped when this function returns, however it returns: that tells
    // the guard the run ended on its own.
    let _guard = super::start_guard(&trajectory, GuardedRun::Run);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    if args.prepare_env
        && let Some(repo) = task.repositories.first()
    {
        let cache_dir = agent::repo_agent_home()
            .context("--prepare-env needs a home for its cache (REPO_AGENT_HOME or HOME)")?
            .join("envs");
        let mut request = EnvironmentRequest::for_agent(&repo.path, cache_dir, &config);
        request.installer = args.installer.parse().map_err(anyhow::Error::msg)?;
        eprintln!(
            "[env] preparing the Python environment of {}",
            repo.path.display()
        );
        let report = runtime.block_on(prepare_environment(&request))?;
        eprintln!(
            "[env] {} in {:.1} s: {} ({})",
            report.repo,
            report.seconds,
            report.summary(),
            report.python().display()
        );
        config.environment = Some(report);
    }
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
            model.chat.as_ref(),
            &task,
            &config,
            &mut trajectory,
            &mut progress,
        )
        .await
    });
    // An analysis cut short by --timeout may still be running on a
    // blocking thread: do not wait for it.
    runtime.shutdown_background();
    let summary = summary?;
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
    if summary.status == agent::Status::Finished && summary.outputs.is_empty() {
        eprintln!(
            "the model finished, but {} holds no output file",
            task.output_dir.display()
        );
        return Ok(EXIT_NO_OUTPUTS);
    }
    Ok(summary.status.exit_code())
}
