//! The `bench-harness` binary: runs repo-agent on a GitTaskBench checkout
//! and grades the outputs with the benchmark's own scripts. It is glue over
//! the library (argument parsing, the progress bar, printing the summary);
//! `cargo xtask bench gittaskbench ...` builds it in release and passes the
//! flags through, so xtask does not link the agent or the model.
//!
//! Usage: `bench-harness gittaskbench --root <CHECKOUT> [...]` and
//! `bench-harness repogenesis --root <REPOGENESIS> --generated <DIR> [...]`
//! (`--help` on each; `repogenesis_cli.rs` has the second).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use bench_harness::feasibility::{self, Feasibility, Half};
use bench_harness::{
    Benchmark, DomainMap, Event, Harness, HarnessConfig, ModelSpec, Models, Selection,
};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

mod repogenesis_cli;

const USAGE: &str = "usage: bench-harness gittaskbench --root <CHECKOUT> \
    [--tasks ID,ID | --repo NAME | --domain NAME] [--model NAME --base-url URL | --model-path FILE.gguf] [--jobs N] \
    [--out DIR] [--resume] [--timeout-per-task SECS] [--max-turns N] [--domain-map FILE.json] \
    [--keep-workspaces] [--grade-only --outputs <DIR>] [--feasibility] [--runnable] \
    [--half tuning|held-out] [--prepare-env] [--environments] \
    [--ablation no-context|no-exploration|no-selection]... [--installer auto|pip|uv]\n\n  \
    --feasibility  classify the selected tasks (runnable, needs weights, needs network, data missing)\n                 \
    with evidence, write feasibility.json/.md under --out, and stop\n  \
    --runnable     run only the tasks classed runnable\n  \
    --prepare-env  build each task repository's Python environment before its episode (cached in OUT/envs)\n  \
    --environments build the selected tasks' repositories' environments only, report them, and stop\n  \
    --half H       run only the tuning two thirds or the held-out third of the runnable tasks\n                 \
    (the third with the smallest hash of their ID; implies --runnable)\n  \
    --ablation A   run without a part of the method (RepoMaster's ablations; repeatable): no-context \
    (README only, no hierarchical code analysis), no-exploration (no search, code view or graph \
    tools), no-selection (observations not reduced to what matters)\n  \
    --installer I  what installs the prepared environments' packages: auto (default: uv from its \
    pinned PyPI wheel, else pip), pip or uv";

#[derive(Debug, Default)]
struct Args {
    root: Option<PathBuf>,
    tasks: Vec<String>,
    repo: Option<String>,
    domain: Option<String>,
    model: Option<String>,
    base_url: Option<String>,
    model_path: Option<PathBuf>,
    jobs: Option<usize>,
    out: Option<PathBuf>,
    resume: bool,
    timeout_per_task: Option<u64>,
    max_turns: Option<u32>,
    domain_map: Option<PathBuf>,
    keep_workspaces: bool,
    grade_only: bool,
    outputs: Option<PathBuf>,
    feasibility: bool,
    runnable: bool,
    prepare_env: bool,
    environments: bool,
    half: Option<Half>,
    ablations: Vec<Ablation>,
    installer: agent::environment::Installer,
}

/// The part of the method an `--ablation` run goes without.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ablation {
    /// The initial context is the README alone.
    Context,
    /// No search, code view, call graph or import graph tools.
    Exploration,
    /// Observations are cut to the limit, not reduced to what matters.
    Selection,
}

impl Ablation {
    fn parse(name: &str) -> anyhow::Result<Self> {
        Ok(match name {
            "no-context" => Ablation::Context,
            "no-exploration" => Ablation::Exploration,
            "no-selection" => Ablation::Selection,
            other => {
                bail!("--ablation takes no-context, no-exploration or no-selection, not {other:?}")
            }
        })
    }

    fn apply(self, config: &mut agent::AgentConfig) {
        match self {
            Ablation::Context => config.hierarchical_analysis = false,
            Ablation::Exploration => config.tools.exploration = false,
            Ablation::Selection => config.tools.info_selection = false,
        }
    }
}

fn parse(rest: &[&str]) -> anyhow::Result<Args> {
    let mut args = Args::default();
    let mut it = rest.iter();
    while let Some(flag) = it.next() {
        let (flag, inline) = match flag.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (*flag, None),
        };
        let mut value = |name: &str| -> anyhow::Result<String> {
            inline
                .map(str::to_owned)
                .or_else(|| it.next().map(|v| (*v).to_owned()))
                .with_context(|| format!("{name} needs a value\n{USAGE}"))
        };
        match flag {
            "--root" => args.root = Some(value(flag)?.into()),
            "--tasks" => {
                args.tasks = value(flag)?
                    .split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
                    .collect();
            }
            "--repo" => args.repo = Some(value(flag)?),
            "--domain" => args.domain = Some(value(flag)?),
            "--model" => args.model = Some(value(flag)?),
            "--base-url" => args.base_url = Some(value(flag)?),
            "--model-path" => args.model_path = Some(PathBuf::from(value(flag)?)),
            "--jobs" => args.jobs = Some(value(flag)?.parse().context("--jobs takes a number")?),
            "--out" => args.out = Some(value(flag)?.into()),
            "--resume" => args.resume = true,
            "--timeout-per-task" => {
                args.timeout_per_task = Some(
                    value(flag)?
                        .parse()
                        .context("--timeout-per-task takes seconds")?,
                );
            }
            "--max-turns" => {
                args.max_turns = Some(value(flag)?.parse().context("--max-turns takes a number")?);
            }
            "--domain-map" => args.domain_map = Some(value(flag)?.into()),
            "--keep-workspaces" => args.keep_workspaces = true,
            "--grade-only" => args.grade_only = true,
            "--outputs" => args.outputs = Some(value(flag)?.into()),
            "--feasibility" => args.feasibility = true,
            "--runnable" => args.runnable = true,
            "--prepare-env" => args.prepare_env = true,
            "--environments" => args.environments = true,
            "--half" => {
                args.half = Some(match value(flag)?.as_str() {
                    "tuning" => Half::Tuning,
                    "held-out" => Half::HeldOut,
                    other => bail!("--half takes tuning or held-out, not {other:?}"),
                });
            }
            "--ablation" => args.ablations.push(Ablation::parse(&value(flag)?)?),
            "--installer" => {
                args.installer = value(flag)?.parse().map_err(anyhow::Error::msg)?;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    Ok(args)
}

fn main() -> anyhow::Result<()> {
    // As `repo-agent`: the agents run here hold the API key, and the code
    // they run may be this process's own user.
    agent::guard::not_dumpable();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["gittaskbench", rest @ ..] => run(rest, PathBuf::from("target/gittaskbench")),
        ["repogenesis", rest @ ..] => {
            repogenesis_cli::run(rest, PathBuf::from("target/repogenesis"))
        }
        ["-h" | "--help"] => {
            println!("{USAGE}\n{}", repogenesis_cli::USAGE);
            Ok(())
        }
        _ => bail!(
            "unknown or missing command\n{USAGE}\n{}",
            repogenesis_cli::USAGE
        ),
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

fn run(rest: &[&str], default_out: PathBuf) -> anyhow::Result<()> {
    let args = parse(rest)?;
    let root = args
        .root
        .clone()
        .with_context(|| format!("--root <CHECKOUT> is required\n{USAGE}"))?;
    let out = args.out.clone().unwrap_or(default_out);
    let mut config = HarnessConfig::new(root, &out);
    config.selection = Selection {
        tasks: args.tasks.clone(),
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
    config.installer = args.installer;
    if let Some(turns) = args.max_turns {
        config.agent.budgets.max_turns = turns;
    }
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
                feasibility::in_half(&assessed, &held, half)
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
        let spec = ModelSpec {
            base_url: args.base_url.clone(),
            model: args.model.clone(),
            model_path: args.model_path.clone(),
            ..ModelSpec::default()
        };
        Some(Models::load(&spec, &mut config.agent, &mut |message| {
            eprintln!("{message}")
        })?)
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
            let outputs = args
                .outputs
                .as_ref()
                .with_context(|| format!("--grade-only needs --outputs <DIR>\n{USAGE}"))?;
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

    #[test]
    fn ablations_parse_and_each_turns_off_its_part() -> anyhow::Result<()> {
        let args = parse(&["--ablation", "no-context", "--ablation=no-selection"])?;
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
        let error = parse(&["--ablation", "no-tools"])
            .err()
            .map(|e| e.to_string());
        assert!(error.is_some_and(|e| e.contains("no-exploration")));
        Ok(())
    }
}
