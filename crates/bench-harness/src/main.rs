//! The `bench-harness` binary: runs repo-agent on a GitTaskBench checkout
//! and grades the outputs with the benchmark's own scripts. It is glue over
//! the library (argument parsing, the progress bar, printing the summary);
//! `cargo xtask bench gittaskbench ...` builds it in release and passes the
//! flags through, so xtask does not link the agent or the model.
//!
//! Usage: `bench-harness gittaskbench --root <CHECKOUT> [...]` and
//! `bench-harness repogenesis --root <REPOGENESIS> --generated <DIR> [...]`
//! (`--help` on each; `repogenesis_cli.rs` has the second). The model and
//! sandbox flags are `repo-agent`'s own ([`repo_agent_cli`]).

use std::path::PathBuf;
use std::time::Duration;

use agent::environment::Installer;
use anyhow::{Context, bail};
use bench_harness::gittaskbench::feasibility::{self, Feasibility, Half};
use bench_harness::{Benchmark, DomainMap, Event, Harness, HarnessConfig, Models, Selection};
use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use repo_agent_cli::{ModelArgs, SandboxArgs};

mod repogenesis_cli;

/// Runs repo-agent on a benchmark and grades or evaluates the results.
#[derive(Parser)]
#[command(
    name = "bench-harness",
    subcommand_required = true,
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run repo-agent on the tasks of a GitTaskBench checkout and grade its
    /// outputs with the benchmark's own test scripts.
    #[command(args_override_self = true)]
    Gittaskbench(GitTaskBenchArgs),
    /// Evaluate generated repositories on RepoGenesis: API coverage,
    /// deployment (DSR) and the golden tests (Pass@1).
    ///
    /// Evaluates <DIR>/<task>/ of --generated for each task of the checkout
    /// (or --tasks) as RepoGenesis's scripts do, each service in a network
    /// namespace of its own. Phase limits default to the benchmark's
    /// (Python 120/15/300 s, Java 300/20/600 s).
    #[command(args_override_self = true)]
    Repogenesis(repogenesis_cli::RepogenesisArgs),
}

/// `bench-harness gittaskbench`.
#[derive(clap::Args)]
#[command(
    after_long_help = "The sandbox flags govern the agent's code runs and the environments \
    --prepare-env builds; --isolation also applies to grading, which keeps the package registry \
    for the test scripts' requirements."
)]
struct GitTaskBenchArgs {
    /// The GitTaskBench checkout.
    #[arg(long, value_name = "CHECKOUT")]
    root: PathBuf,
    /// Only these tasks (comma-separated; repeatable).
    #[arg(long, value_name = "ID,ID", value_delimiter = ',', value_parser = trimmed)]
    tasks: Vec<String>,
    /// Only the tasks of this repository.
    #[arg(long, value_name = "NAME")]
    repo: Option<String>,
    /// Only the tasks of this domain.
    #[arg(long, value_name = "NAME")]
    domain: Option<String>,
    /// Tasks run at once (default 1).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Output directory: results.jsonl, report.*, outputs/, trajectories/, grading/.
    #[arg(long, value_name = "DIR", default_value = "target/gittaskbench")]
    out: PathBuf,
    /// Keep the tasks results.jsonl already records and run the others.
    #[arg(long)]
    resume: bool,
    /// Wall-clock limit of one agent run (default 1800: 30 minutes).
    #[arg(long, value_name = "SECS")]
    timeout_per_task: Option<u64>,
    /// The agent's turn budget per task (default: the agent's).
    #[arg(long, value_name = "N")]
    max_turns: Option<u32>,
    /// More repository -> domain entries (JSON), over the built-in map.
    #[arg(long, value_name = "FILE.json")]
    domain_map: Option<PathBuf>,
    /// Keep each task's workspace after grading (default: removed).
    #[arg(long)]
    keep_workspaces: bool,
    /// Grade the outputs under --outputs without running the agent.
    #[arg(long, requires = "outputs")]
    grade_only: bool,
    /// With --grade-only: the outputs to grade (<DIR>/<task ID>/).
    #[arg(long, value_name = "DIR")]
    outputs: Option<PathBuf>,
    /// Classify the selected tasks (runnable, needs weights, needs network,
    /// data missing) with evidence, write feasibility.json/.md under --out,
    /// and stop.
    #[arg(long)]
    feasibility: bool,
    /// Run only the tasks classed runnable.
    #[arg(long)]
    runnable: bool,
    /// Run only the tuning two thirds or the held-out third of the runnable
    /// tasks (the third with the smallest hash of their ID; implies
    /// --runnable).
    #[arg(long, value_enum, value_name = "HALF")]
    half: Option<HalfArg>,
    /// Build each task repository's Python environment before its episode
    /// (cached in OUT/envs).
    #[arg(long)]
    prepare_env: bool,
    /// Build the selected tasks' repositories' environments only, report
    /// them, and stop.
    #[arg(long)]
    environments: bool,
    /// Run without a part of the method (RepoMaster's ablations; repeatable).
    #[arg(long = "ablation", value_enum, value_name = "ABLATION")]
    ablations: Vec<Ablation>,
    /// What installs the prepared environments' packages.
    #[arg(long, value_enum, value_name = "INSTALLER", default_value_t = InstallerArg::Auto)]
    installer: InstallerArg,
    #[command(flatten, next_help_heading = "Model (ignored with --grade-only)")]
    model: ModelArgs,
    #[command(flatten, next_help_heading = "Sandbox")]
    sandbox: SandboxArgs,
}

/// A `--tasks` entry without the spaces around it.
fn trimmed(text: &str) -> Result<String, std::convert::Infallible> {
    Ok(text.trim().to_owned())
}

/// `--half`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum HalfArg {
    /// The two thirds the agent may be tuned on.
    Tuning,
    /// The third set aside; never tuned on.
    HeldOut,
}

impl From<HalfArg> for Half {
    fn from(arg: HalfArg) -> Self {
        match arg {
            HalfArg::Tuning => Half::Tuning,
            HalfArg::HeldOut => Half::HeldOut,
        }
    }
}

/// `--installer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum InstallerArg {
    /// uv from its pinned PyPI wheel, else pip.
    Auto,
    /// pip, from the virtualenv's own pip.
    Pip,
    /// uv pip install.
    Uv,
}

impl From<InstallerArg> for Installer {
    fn from(arg: InstallerArg) -> Self {
        match arg {
            InstallerArg::Auto => Installer::Auto,
            InstallerArg::Pip => Installer::Pip,
            InstallerArg::Uv => Installer::Uv,
        }
    }
}

/// The part of the method an `--ablation` run goes without.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Ablation {
    /// README only, no hierarchical code analysis.
    #[value(name = "no-context")]
    Context,
    /// No search, code view, call graph or import graph tools.
    #[value(name = "no-exploration")]
    Exploration,
    /// Observations cut to the limit, not reduced to what matters.
    #[value(name = "no-selection")]
    Selection,
}

impl Ablation {
    fn apply(self, config: &mut agent::AgentConfig) {
        match self {
            Ablation::Context => config.hierarchical_analysis = false,
            Ablation::Exploration => config.tools.exploration = false,
            Ablation::Selection => config.tools.info_selection = false,
        }
    }
}

fn main() -> anyhow::Result<()> {
    // As `repo-agent`: the agents run here hold the API key, and the code
    // they run may be this process's own user.
    agent::not_dumpable();
    match Cli::parse().command {
        Command::Gittaskbench(args) => run(args),
        Command::Repogenesis(args) => repogenesis_cli::run(args),
    }
}

/// `--environments`: each selected task's repository (once) gets its
/// environment built from the checkout; a table and
/// `environments.json` under `out`.
fn environments(config: &HarnessConfig, out: &std::path::Path) -> anyhow::Result<()> {
    let bench = Benchmark::open(&config.root, &config.domains)?;
    let mut repos: Vec<String> = bench
        .select(&config.selection)?
        .iter()
        .map(|t| t.repo.clone())
        .collect();
    repos.sort();
    repos.dedup();
    let cache = config
        .environments
        .clone()
        .unwrap_or_else(|| out.join("envs"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut reports = Vec::new();
    println!("| repository | requirements | installed | failing | imports | packages | seconds |");
    println!("| --- | ---: | --- | --- | --- | ---: | ---: |");
    for repo in repos {
        let request = bench_harness::environment_request(&bench.code_base(&repo), &cache, config);
        eprintln!("[env] {repo}");
        let report = match runtime.block_on(agent::environment::prepare_environment(&request)) {
            Ok(report) => report,
            Err(e) => {
                println!("| {repo} | | error: {e} | | | | |");
                continue;
            }
        };
        let imports: Vec<String> = report
            .imports
            .iter()
            .map(|i| format!("{} {}", i.module, if i.ok { "ok" } else { "FAILS" }))
            .collect();
        let failing: Vec<String> = report
            .failing
            .iter()
            .map(|f| format!("{} ({})", f.requirement, f.reason.replace('|', "/")))
            .collect();
        println!(
            "| {repo} | {} | {} | {} | {} | {} | {:.0} |",
            report.requirements.len(),
            if report.complete() { "yes" } else { "no" },
            failing.join("; "),
            imports.join(", "),
            report.installed.len(),
            report.seconds
        );
        reports.push(report);
    }
    std::fs::create_dir_all(out)?;
    std::fs::write(
        out.join("environments.json"),
        serde_json::to_string_pretty(&reports)?,
    )?;
    Ok(())
}

fn run(args: GitTaskBenchArgs) -> anyhow::Result<()> {
    let out = args.out.clone();
    let mut config = HarnessConfig::new(args.root.clone(), &out);
    config.selection = Selection {
        tasks: args
            .tasks
            .iter()
            .filter(|t| !t.is_empty())
            .cloned()
            .collect(),
        repo: args.repo.clone(),
        domain: args.domain.clone(),
    };
    if let Some(jobs) = args.jobs {
        config.jobs = jobs;
    }
    config.resume = args.resume;
    if let Some(secs) = args.timeout_per_task {
        config.timeout_per_task = Duration::from_secs(secs);
    }
    for ablation in &args.ablations {
        ablation.apply(&mut config.agent);
    }
    config.installer = args.installer.into();
    if let Some(turns) = args.max_turns {
        config.agent.budgets.max_turns = turns;
    }
    // As `repo-agent run`: the agent's code runs and the prepared
    // environments follow the sandbox flags; grading takes the isolation
    // and keeps the registry for the test scripts' requirements.
    config.agent.isolation = args.sandbox.isolation.into();
    config.agent.package_registry = !args.sandbox.no_network;
    config.agent.require_no_network = args.sandbox.no_network;
    config.agent.code_user = args.sandbox.run_as;
    config.grading.isolation = config.agent.isolation;
    config.keep_workspaces = args.keep_workspaces;
    let mut domains = DomainMap::gittaskbench();
    if let Some(map) = &args.domain_map {
        domains = domains.extend_from_file(map)?;
    }
    if args.feasibility || args.runnable || args.half.is_some() {
        let bench = Benchmark::open(&config.root, &domains)?;
        let selected = bench.select(&config.selection)?;
        let assessed = feasibility::assess(&bench, &selected);
        if args.feasibility {
            std::fs::create_dir_all(&out)?;
            std::fs::write(
                out.join("feasibility.json"),
                serde_json::to_string_pretty(&assessed)?,
            )?;
            let held = feasibility::benchmark_held_out(&bench)?;
            let text = feasibility::markdown(&assessed, &held);
            std::fs::write(out.join("feasibility.md"), &text)?;
            println!("{text}");
            return Ok(());
        }
        // The halves split the checkout's runnable tasks; `--half` implies
        // `--runnable`.
        config.selection.tasks = match args.half {
            Some(half) => {
                let held = feasibility::benchmark_held_out(&bench)?;
                feasibility::in_half(&assessed, &held, half.into())
            }
            None => assessed
                .iter()
                .filter(|t| !args.runnable || t.class == Feasibility::Runnable)
                .map(|t| t.task.clone())
                .collect(),
        };
        if config.selection.tasks.is_empty() {
            bail!("no task is left after --runnable/--half");
        }
        eprintln!(
            "selected {} tasks: {}",
            config.selection.tasks.len(),
            config.selection.tasks.join(",")
        );
    }
    config.domains = domains;
    if args.prepare_env || args.environments {
        config.environments = Some(out.join("envs"));
    }
    if args.environments {
        return environments(&config, &out);
    }
    // Without a server or model file, the embedded default model runs (a
    // demonstration: a 135M model rarely solves these tasks).
    let models = if args.grade_only {
        None
    } else {
        Some(Models::load(
            &args.model.spec(),
            &mut config.agent,
            &mut |message| eprintln!("{message}"),
        )?)
    };
    let harness = Harness::new(config)?;

    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} tasks {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix("GitTaskBench");
    let observer = |event: &Event| match event {
        Event::Planned { to_run, skipped } => {
            bar.set_length(*to_run as u64);
            if *skipped > 0 {
                bar.println(format!("resuming: {skipped} task(s) already recorded"));
            }
        }
        Event::Started { task } => bar.set_message(format!("running {task}")),
        Event::Finished {
            record,
            process,
            result,
            recorded,
            ..
        } => {
            bar.inc(1);
            let pct = |n: usize| n as f64 * 100.0 / (*recorded).max(1) as f64;
            bar.println(format!(
                "{:<28} {:<10} process={:<5} result={:<5} tokens={}",
                record.task,
                record.status.as_str(),
                record.process,
                record.result,
                record.total_tokens()
            ));
            bar.set_message(format!(
                "ECR {:.1} % TPR {:.1} % over {recorded}",
                pct(*process),
                pct(*result)
            ));
        }
    };
    let outcome = match &models {
        None => {
            // `requires` has clap refuse --grade-only without --outputs.
            let outputs = args
                .outputs
                .as_ref()
                .context("--grade-only needs --outputs <DIR>")?;
            harness.grade_only(outputs, &observer)?
        }
        Some(models) => harness.run(models, &observer)?,
    };
    bar.finish_and_clear();
    let s = &outcome.report.summary;
    println!(
        "GitTaskBench: {} tasks, execution completion {:.2} % ({}), task pass {:.2} % ({}), {} tokens ({:.0} per task), ${:.4}{}",
        s.tasks,
        s.ecr,
        s.process,
        s.tpr,
        s.result,
        s.total_tokens,
        s.tokens_per_task,
        s.cost,
        if outcome.interrupted {
            " (interrupted)"
        } else {
            ""
        }
    );
    println!("{}", outcome.files.locations(&outcome.results));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench_harness::repogenesis::Phase;
    use clap::CommandFactory;
    use repo_agent_cli::IsolationArg;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(["bench-harness"].iter().chain(args).copied())
    }

    fn gittaskbench(args: &[&str]) -> GitTaskBenchArgs {
        let argv: Vec<&str> = ["gittaskbench", "--root", "bench"]
            .iter()
            .chain(args)
            .copied()
            .collect();
        match parse(&argv).map(|cli| cli.command) {
            Ok(Command::Gittaskbench(args)) => args,
            Ok(Command::Repogenesis(_)) => panic!("{args:?}: parsed as repogenesis"),
            Err(e) => panic!("{args:?}: {e}"),
        }
    }

    fn repogenesis(args: &[&str]) -> repogenesis_cli::RepogenesisArgs {
        let argv: Vec<&str> = ["repogenesis", "--root", "rg", "--generated", "gen"]
            .iter()
            .chain(args)
            .copied()
            .collect();
        match parse(&argv).map(|cli| cli.command) {
            Ok(Command::Repogenesis(args)) => args,
            Ok(Command::Gittaskbench(_)) => panic!("{args:?}: parsed as gittaskbench"),
            Err(e) => panic!("{args:?}: {e}"),
        }
    }

    fn refusal(args: &[&str]) -> String {
        match parse(args) {
            Ok(_) => panic!("{args:?} parsed"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn ablations_parse_and_each_turns_off_its_part() {
        let args = gittaskbench(&["--ablation", "no-context", "--ablation=no-selection"]);
        assert_eq!(args.ablations, [Ablation::Context, Ablation::Selection]);
        let mut config = agent::AgentConfig::default();
        for ablation in &args.ablations {
            ablation.apply(&mut config);
        }
        assert!(!config.hierarchical_analysis);
        assert!(config.tools.exploration, "not asked for");
        assert!(!config.tools.info_selection);
        Ablation::Exploration.apply(&mut config);
        assert!(!config.tools.exploration);
        let error = refusal(&["gittaskbench", "--root", "b", "--ablation", "no-tools"]);
        assert!(error.contains("no-exploration"), "{error}");
    }

    #[test]
    fn gittaskbench_flags_keep_their_names_and_forms() {
        let args = gittaskbench(&[
            "--tasks",
            "A_01, B_02,,",
            "--repo=Trafilatura",
            "--domain",
            "image",
            "--jobs=3",
            "--out",
            "o",
            "--resume",
            "--timeout-per-task",
            "60",
            "--max-turns",
            "7",
            "--domain-map",
            "m.json",
            "--keep-workspaces",
            "--feasibility",
            "--runnable",
            "--half",
            "held-out",
            "--prepare-env",
            "--environments",
            "--installer=uv",
            "--model",
            "gpt",
            "--base-url",
            "http://localhost:8000/v1",
        ]);
        assert_eq!(args.root, PathBuf::from("bench"));
        assert_eq!(args.tasks, ["A_01", "B_02", "", ""]);
        assert_eq!(args.repo.as_deref(), Some("Trafilatura"));
        assert_eq!(args.domain.as_deref(), Some("image"));
        assert_eq!(args.jobs, Some(3));
        assert_eq!(args.out, PathBuf::from("o"));
        assert!(args.resume && args.keep_workspaces && args.feasibility && args.runnable);
        assert!(args.prepare_env && args.environments && !args.grade_only);
        assert_eq!((args.timeout_per_task, args.max_turns), (Some(60), Some(7)));
        assert_eq!(args.domain_map, Some(PathBuf::from("m.json")));
        assert_eq!(args.half, Some(HalfArg::HeldOut));
        assert_eq!(Half::from(HalfArg::Tuning), Half::Tuning);
        assert_eq!(Installer::from(args.installer), Installer::Uv);
        let spec = args.model.spec();
        assert_eq!(spec.model.as_deref(), Some("gpt"));
        assert_eq!(spec.base_url.as_deref(), Some("http://localhost:8000/v1"));

        let defaults = gittaskbench(&[]);
        assert_eq!(defaults.out, PathBuf::from("target/gittaskbench"));
        assert!(defaults.tasks.is_empty() && defaults.ablations.is_empty());
        assert_eq!(Installer::from(defaults.installer), Installer::Auto);
        assert_eq!(defaults.sandbox.isolation, IsolationArg::Auto);
        assert!(!defaults.sandbox.no_network);
        assert_eq!(defaults.sandbox.run_as, agent::CodeUser::Auto);
        // As the hand-written parser did, the last of a repeated flag wins.
        assert_eq!(gittaskbench(&["--jobs", "1", "--jobs", "2"]).jobs, Some(2));
    }

    #[test]
    fn bad_gittaskbench_flags_are_refused() {
        for (args, says) in [
            (&["gittaskbench"][..], "--root <CHECKOUT>"),
            (&["gittaskbench", "--root"], "--root <CHECKOUT>"),
            (
                &["gittaskbench", "--root", "b", "--frobnicate"],
                "--frobnicate",
            ),
            (&["gittaskbench", "--root", "b", "--jobs", "many"], "--jobs"),
            (
                &["gittaskbench", "--root", "b", "--half", "first"],
                "held-out",
            ),
            (
                &["gittaskbench", "--root", "b", "--installer", "conda"],
                "pip",
            ),
            (
                &["gittaskbench", "--root", "b", "--grade-only"],
                "--outputs <DIR>",
            ),
            (&["swebench"], "swebench"),
        ] {
            let error = refusal(args);
            assert!(error.contains(says), "{args:?}: {error}");
        }
        let args = gittaskbench(&["--grade-only", "--outputs", "runs/outputs"]);
        assert!(args.grade_only);
        assert_eq!(args.outputs, Some(PathBuf::from("runs/outputs")));
    }

    #[test]
    fn the_shared_model_and_sandbox_flags_parse_in_both_subcommands() {
        let args = gittaskbench(&["--model-path", "m.gguf", "--isolation", "process"]);
        assert_eq!(args.model.spec().model_path, Some(PathBuf::from("m.gguf")));
        assert_eq!(args.sandbox.isolation, IsolationArg::Process);
        let args = gittaskbench(&["--no-network", "--run-as=nobody"]);
        assert!(args.sandbox.no_network);
        assert_eq!(
            args.sandbox.run_as,
            agent::CodeUser::User(sandbox::RunAs::NOBODY)
        );
        // repo-agent's rules come along: --model-sha256 needs --model-path,
        // which excludes a server.
        let error = refusal(&[
            "gittaskbench",
            "--root",
            "b",
            "--model-sha256",
            &"0".repeat(64),
        ]);
        assert!(error.contains("--model-path"), "{error}");
        let error = refusal(&[
            "gittaskbench",
            "--root",
            "b",
            "--model-path",
            "m",
            "--model",
            "x",
        ]);
        assert!(error.contains("cannot be used with"), "{error}");

        // RepoGenesis evaluates repositories another run generated: it
        // takes the isolation (the same values), and no model.
        let args = repogenesis(&["--isolation", "process"]);
        assert_eq!(args.isolation, IsolationArg::Process);
        assert_eq!(repogenesis(&[]).isolation, IsolationArg::Auto);
        let error = refusal(&[
            "repogenesis",
            "--root",
            "r",
            "--generated",
            "g",
            "--model-path",
            "m.gguf",
        ]);
        assert!(error.contains("--model-path"), "{error}");
    }

    /// The command lines xtask builds: `bench repogenesis --generate`
    /// (xtask/src/genesis.rs) puts its own flags first and the user's
    /// after them; `bench gittaskbench` and `bench repogenesis` append
    /// `--out`.
    #[test]
    fn the_command_lines_xtask_builds_parse() {
        let args = repogenesis(&[
            "--out",
            "/runs/1/evaluation",
            "--tasks",
            "flask,SimpleFastPyAPI",
            "--isolation",
            "process",
            "--venvs",
            "/work/target/repogenesis/venvs",
            "--jobs",
            "2",
            "--resume",
        ]);
        assert_eq!(args.out, PathBuf::from("/runs/1/evaluation"));
        assert_eq!(args.tasks, ["flask", "SimpleFastPyAPI"]);
        assert_eq!(args.isolation, IsolationArg::Process);
        assert_eq!((args.jobs, args.resume), (2, true));
        let args = gittaskbench(&["--tasks", "A_01", "--out", "/work/target/gittaskbench"]);
        assert_eq!(args.out, PathBuf::from("/work/target/gittaskbench"));
    }

    #[test]
    fn repogenesis_flags_keep_their_names_and_forms() {
        let args = repogenesis(&[
            "--tasks=flask, eve",
            "--jobs",
            "0",
            "--resume",
            "--out",
            "o",
            "--build-timeout",
            "30",
            "--start-timeout=5",
            "--test-timeout",
            "90",
            "--no-registry",
            "--venvs",
            "v",
            "--maven-repo",
            "m2",
            "--keep-workspaces",
        ]);
        assert_eq!(args.root, PathBuf::from("rg"));
        assert_eq!(args.generated, PathBuf::from("gen"));
        assert_eq!(args.tasks, ["flask", "eve"]);
        assert_eq!(args.jobs, 0);
        assert!(args.resume && args.no_registry && args.keep_workspaces);
        assert_eq!(args.out, PathBuf::from("o"));
        assert_eq!(
            args.phase_limits(),
            [
                (Phase::Build, Duration::from_secs(30)),
                (Phase::Start, Duration::from_secs(5)),
                (Phase::Tests, Duration::from_secs(90)),
            ]
        );
        assert_eq!(args.venvs, Some(PathBuf::from("v")));
        assert_eq!(args.maven_repo, Some(PathBuf::from("m2")));
        let defaults = repogenesis(&[]);
        assert_eq!(defaults.out, PathBuf::from("target/repogenesis"));
        assert_eq!(defaults.jobs, 1);
        assert!(defaults.phase_limits().is_empty() && !defaults.no_registry);
        // xtask's `bench repogenesis --generate` passes --venvs first and
        // the user's flags after it: the last wins.
        let args = repogenesis(&["--venvs", "shared", "--venvs=mine"]);
        assert_eq!(args.venvs, Some(PathBuf::from("mine")));
        for (args, says) in [
            (
                &["repogenesis", "--generated", "g"][..],
                "--root <REPOGENESIS>",
            ),
            (&["repogenesis", "--root", "r"], "--generated <DIR>"),
            (
                &[
                    "repogenesis",
                    "--root",
                    "r",
                    "--generated",
                    "g",
                    "--build-timeout",
                    "0",
                ],
                "at least 1 second",
            ),
            (
                &[
                    "repogenesis",
                    "--root",
                    "r",
                    "--generated",
                    "g",
                    "--test-timeout",
                    "soon",
                ],
                "whole seconds",
            ),
            (
                &[
                    "repogenesis",
                    "--root",
                    "r",
                    "--generated",
                    "g",
                    "--isolation",
                    "vm",
                ],
                "namespaces",
            ),
        ] {
            let error = refusal(args);
            assert!(error.contains(says), "{args:?}: {error}");
        }
    }
}
