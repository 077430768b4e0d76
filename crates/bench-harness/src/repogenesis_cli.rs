//! `bench-harness repogenesis`: flags, progress and the summary line for
//! [`bench_harness::repogenesis::GenesisHarness`].

use std::path::PathBuf;
use std::time::Duration;

use bench_harness::repogenesis::{GenesisConfig, GenesisEvent, GenesisHarness, Phase};
use repo_agent_cli::IsolationArg;

/// `bench-harness repogenesis`.
#[derive(clap::Args)]
pub struct RepogenesisArgs {
    /// The RepoGenesis checkout (repo/<task>/, eval_harness/).
    #[arg(long, value_name = "REPOGENESIS")]
    pub root: PathBuf,
    /// The generated repositories, one per task: <DIR>/<task>/.
    #[arg(long, value_name = "DIR")]
    pub generated: PathBuf,
    /// Only these tasks (comma-separated; repeatable).
    #[arg(long, value_name = "NAME,NAME", value_delimiter = ',', value_parser = crate::trimmed)]
    pub tasks: Vec<String>,
    /// Tasks evaluated at once (0 counts as 1; one at a time without
    /// namespace isolation).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub jobs: usize,
    /// Keep the tasks results.jsonl already records and evaluate the others.
    #[arg(long)]
    pub resume: bool,
    /// Output directory: results.jsonl, report.*, work/<task>/, venvs/.
    #[arg(long, value_name = "DIR", default_value = "target/repogenesis")]
    pub out: PathBuf,
    /// Limit of the build phase (dependencies and compilation).
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub build_timeout: Option<Duration>,
    /// Limit of starting the service and waiting for it.
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub start_timeout: Option<Duration>,
    /// Limit of the golden tests.
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub test_timeout: Option<Duration>,
    /// How builds, services and tests run: `namespaces` (bubblewrap
    /// container, each task on a private loopback), `process` (plain child
    /// processes, one task at a time, the host's network) or `auto`
    /// (namespaces when available). repo-agent's --isolation values.
    #[arg(long, value_enum, value_name = "ISOLATION", default_value_t = IsolationArg::Auto)]
    pub isolation: IsolationArg,
    /// Keep pip off the package registry in the build phase (services and
    /// tests never have the network under namespaces).
    #[arg(long)]
    pub no_registry: bool,
    /// Where Python environments are cached (default: OUT/venvs).
    #[arg(long, value_name = "DIR")]
    pub venvs: Option<PathBuf>,
    /// The local Maven repository (default: ~/.m2/repository).
    #[arg(long, value_name = "DIR")]
    pub maven_repo: Option<PathBuf>,
    /// Keep each task's workspace (default: removed after the task).
    #[arg(long)]
    pub keep_workspaces: bool,
}

impl RepogenesisArgs {
    /// The `--*-timeout` flags given, replacing the benchmark's limits.
    pub fn phase_limits(&self) -> Vec<(Phase, Duration)> {
        [
            (Phase::Build, self.build_timeout),
            (Phase::Start, self.start_timeout),
            (Phase::Tests, self.test_timeout),
        ]
        .into_iter()
        .filter_map(|(phase, limit)| Some((phase, limit?)))
        .collect()
    }
}

/// A phase limit: whole seconds, at least 1.
fn seconds(text: &str) -> Result<Duration, String> {
    let secs: u64 = text
        .parse()
        .map_err(|_| format!("takes whole seconds, not {text:?}"))?;
    if secs == 0 {
        return Err("must be at least 1 second".into());
    }
    Ok(Duration::from_secs(secs))
}

/// Runs the evaluation the flags describe.
pub fn run(args: RepogenesisArgs) -> anyhow::Result<()> {
    let mut config = GenesisConfig::new(&args.root, &args.generated, &args.out);
    config.phase_limits = args.phase_limits();
    config.tasks = args.tasks.into_iter().filter(|t| !t.is_empty()).collect();
    config.jobs = args.jobs.max(1);
    config.resume = args.resume;
    config.isolation = args.isolation.into();
    config.package_registry = !args.no_registry;
    config.venv_dir = args.venvs;
    config.maven_repo = args.maven_repo;
    config.keep_workspaces = args.keep_workspaces;
    let harness = GenesisHarness::new(config)?;
    let observer = |event: &GenesisEvent| match event {
        GenesisEvent::Planned {
            to_run,
            skipped,
            jobs,
            isolation,
        } => {
            eprintln!("RepoGenesis: {to_run} task(s) to evaluate, {jobs} at a time; {isolation}");
            if *skipped > 0 {
                eprintln!("resuming: {skipped} task(s) already recorded");
            }
        }
        GenesisEvent::Started { task } => eprintln!("  started  {task}"),
        GenesisEvent::Finished {
            record,
            done,
            total,
        } => {
            let dsr = record
                .start
                .as_ref()
                .filter(|_| record.ran())
                .map_or("-", |s| if s.dsr { "yes" } else { "no" });
            let pass = record
                .tests
                .as_ref()
                .filter(|_| record.ran())
                .map_or("-".to_owned(), |t| {
                    format!("{}/{}", t.counts.passed, t.harness_total)
                });
            let ac = record.ac.as_ref().map_or("-".to_owned(), |a| {
                format!("{}/{}", a.harness.implemented, a.harness.total)
            });
            eprintln!(
                "  [{done}/{total}] {:<30} {:<17} DSR {dsr:<3} Pass@1 {pass:<7} AC {ac:<7} {:.1} s{}",
                record.task,
                record.status.as_str(),
                record.wall_ms as f64 / 1000.0,
                if record.faults.is_empty() {
                    String::new()
                } else {
                    format!(
                        "  faults: {}",
                        record
                            .faults
                            .iter()
                            .map(|f| format!("{:?}", f.kind))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            );
        }
    };
    let outcome = harness.run(&observer)?;
    let s = &outcome.report.summary.all;
    println!(
        "RepoGenesis: {} tasks ({} evaluated, {} without a repository, {} build unavailable, {} errors); \
         DSR {:.2} % ({}/{}), Pass@1 {:.2} % (harness mean over {}), all tests pass {}/{}, \
         AC {:.2} % (harness mean over {}), AC paper rule {}/{}, routes {}/{}; {:.1} s{}",
        s.tasks,
        s.evaluated,
        s.no_repository,
        s.build_unavailable,
        s.errors,
        s.dsr.rate() * 100.0,
        s.dsr.num,
        s.dsr.den,
        s.pass_at_1.mean * 100.0,
        s.pass_at_1.n,
        s.pass_strict.num,
        s.pass_strict.den,
        s.ac_harness.mean * 100.0,
        s.ac_harness.n,
        s.ac_paper.num,
        s.ac_paper.den,
        s.routes.num,
        s.routes.den,
        outcome.wall_ms as f64 / 1000.0,
        if outcome.interrupted {
            " (interrupted)"
        } else {
            ""
        }
    );
    println!("{}", outcome.files.locations(&outcome.results));
    Ok(())
}
