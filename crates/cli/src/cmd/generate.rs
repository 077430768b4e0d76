//! `repo-agent generate`: build a repository from a specification.

use std::path::PathBuf;
use std::time::Duration;

use agent::generate::{BlueprintSource, GenerateConfig, GenerateRequest};
use agent::{AnalysisCache, Trajectory};
use anyhow::Context as _;

#[derive(clap::Args)]
pub struct Args {
    /// The specification: a README or design document (Markdown or text).
    #[arg(long, value_name = "FILE.md")]
    spec: PathBuf,
    /// The directory to write the repository into (created; the agent's
    /// blueprint, report and virtualenv go to its `.repo-agent/`).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// A reference repository on disk (a framework's example app, say)
    /// whose most relevant code is offered for each file; repeatable.
    #[arg(long = "reference", value_name = "REPO")]
    references: Vec<PathBuf>,
    #[command(flatten)]
    model: super::ModelArgs,
    /// Most repair rounds after the first verification.
    #[arg(long, default_value_t = 3)]
    max_iterations: u32,
    /// Most model turns of one repair round.
    #[arg(long, default_value_t = 12)]
    max_turns: u32,
    /// Most prompt plus completion tokens over the whole run.
    #[arg(long)]
    max_tokens: Option<u64>,
    /// Wall-clock limit of the whole run, in seconds.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS, value_name = "SECS")]
    timeout: u64,
    /// The model's context window in tokens.
    #[arg(long, default_value_t = 128_000)]
    context_window: usize,
    /// Tokens of the specification shown to the planner.
    #[arg(long, default_value_t = 12_000)]
    spec_budget: usize,
    /// Tokens of reference code offered per file.
    #[arg(long, default_value_t = 1_500)]
    retrieval_budget: usize,
    /// Where the blueprint comes from: `model`, `facts` (the
    /// specification's endpoints and port, no model call, when it states
    /// endpoints), or `auto`: facts for an in-process model, whose
    /// planned blueprint (every endpoint restated with examples) takes
    /// most of a run's time on a CPU.
    #[arg(long, value_enum, default_value_t = BlueprintArg::Auto)]
    blueprint: BlueprintArg,
    /// Skip installing, starting and calling the service (static checks only).
    #[arg(long)]
    no_dynamic_checks: bool,
    /// Seconds the service gets to listen on its port.
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    startup_timeout: u64,
    /// Write the trajectory (JSON lines) to this file.
    #[arg(long)]
    trajectory: Option<PathBuf>,
    /// Print the final summary as one JSON object on stdout.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    sandbox: super::SandboxArgs,
}

/// `--blueprint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum BlueprintArg {
    Auto,
    Model,
    Facts,
}

/// `generate`'s default wall-clock limit: an hour, for the blueprint,
/// every file, the checks and the repair rounds.
const DEFAULT_TIMEOUT_SECS: u64 = 60 * 60;

/// Generates, verifies and repairs; the status decides the exit code.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let model = args
        .model
        .spec()
        .load(&mut |message| eprintln!("{message}"))?;
    if model.embedded_default {
        eprintln!(
            "note: the embedded model is small (1.5B parameters on the CPU): it can write a small \
             service (a few endpoints) in a few minutes, with repair rounds; pass --base-url and --model \
             for a served model on larger specifications."
        );
    }
    let mut config = GenerateConfig {
        max_iterations: args.max_iterations,
        isolation: args.sandbox.isolation.into(),
        code_user: args.sandbox.run_as,
        package_registry: !args.sandbox.no_network,
        require_no_network: args.sandbox.no_network,
        analysis_cache: agent::repo_agent_home().map_or(AnalysisCache::None, AnalysisCache::Home),
        dynamic_checks: !args.no_dynamic_checks,
        spec_budget: args.spec_budget,
        retrieval_budget: args.retrieval_budget,
        startup_timeout: Duration::from_secs(args.startup_timeout.max(1)),
        blueprint_source: match (args.blueprint, model.context_window) {
            (BlueprintArg::Model, _) | (BlueprintArg::Auto, None) => BlueprintSource::Model,
            (BlueprintArg::Facts, _) | (BlueprintArg::Auto, Some(_)) => BlueprintSource::Facts,
        },
        ..GenerateConfig::default()
    };
    config.budgets.max_turns = args.max_turns;
    config.budgets.max_tokens = args.max_tokens;
    config.budgets.timeout = Some(Duration::from_secs(args.timeout));
    config.budgets.context_window = args.context_window;
    if let Some(window) = model.context_window {
        config.fit_window(window);
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let mut request = GenerateRequest::new(cwd.join(&args.spec), cwd.join(&args.out));
    request.references = args.references.iter().map(|r| cwd.join(r)).collect();
    let mut trajectory = match &args.trajectory {
        Some(path) => Trajectory::to_file(path)?,
        None => Trajectory::in_memory(),
    };
    // Dropped when this function returns: the guard then knows the run
    // ended on its own.
    let _guard = super::start_guard(&trajectory, agent::GuardedRun::Generate);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let report = runtime.block_on(agent::generate::generate(
        model.chat.as_ref(),
        &request,
        &config,
        &mut trajectory,
        &mut |line| eprintln!("{line}"),
    ));
    runtime.shutdown_background();
    let report = report?;
    let s = &report.summary;
    eprintln!(
        "{:?}: {} checks passed, {} failed after {} repair rounds; {} model calls, {} tokens, ${:.4}, {:.1}s. Report: {}",
        s.status,
        s.checks_passed,
        s.checks_failed,
        s.iterations,
        s.model_calls,
        s.total_tokens,
        s.cost,
        s.wall_ms as f64 / 1000.0,
        s.out
            .join(agent::generate::AGENT_DIR)
            .join("report.md")
            .display()
    );
    if args.json {
        crate::output::emit(&format!("{}\n", serde_json::to_string(s)?), None)?;
    }
    Ok(s.status.exit_code())
}
