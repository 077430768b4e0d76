//! `bench-harness repogenesis`: flags, progress and the summary line for
//! [`bench_harness::repogenesis::GenesisHarness`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use bench_harness::repogenesis::{GenesisConfig, GenesisEvent, GenesisHarness, Phase};
use sandbox::Isolation;

pub const USAGE: &str = "usage: bench-harness repogenesis --root <REPOGENESIS> --generated <DIR> \
    [--tasks NAME,NAME] [--jobs N] [--resume] [--out DIR] \
    [--build-timeout SECS] [--start-timeout SECS] [--test-timeout SECS] \
    [--isolation auto|namespaces|process] [--no-registry] [--venvs DIR] [--maven-repo DIR] \
    [--keep-workspaces]\n\n\
    Evaluates <DIR>/<task>/ for each task of the checkout (or --tasks) as RepoGenesis's scripts do: \
    API coverage, deployment (DSR) and the golden tests (Pass@1), each service in a network namespace \
    of its own. Phase limits default to the benchmark's (Python 120/15/300 s, Java 300/20/600 s).";

/// Parses the flags and runs the evaluation.
pub fn run(rest: &[&str], default_out: PathBuf) -> anyhow::Result<()> {
    let mut root: Option<PathBuf> = None;
    let mut generated: Option<PathBuf> = None;
    let mut out = default_out;
    let mut tasks = Vec::new();
    let mut jobs = 1usize;
    let mut resume = false;
    let mut limits = Vec::new();
    let mut isolation = Isolation::Auto;
    let mut registry = true;
    let mut venvs = None;
    let mut maven = None;
    let mut keep = false;
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
        let mut seconds = |name: &str| -> anyhow::Result<Duration> {
            let text = value(name)?;
            let secs: u64 = text
                .parse()
                .with_context(|| format!("{name} takes whole seconds, not {text:?}"))?;
            if secs == 0 {
                bail!("{name} must be at least 1 second");
            }
            Ok(Duration::from_secs(secs))
        };
        match flag {
            "--root" => root = Some(value(flag)?.into()),
            "--generated" => generated = Some(value(flag)?.into()),
            "--out" => out = value(flag)?.into(),
            "--tasks" => {
                tasks = value(flag)?
                    .split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
                    .collect();
            }
            "--jobs" => {
                jobs = value(flag)?.parse().context("--jobs takes a number")?;
            }
            "--resume" => resume = true,
            "--build-timeout" => limits.push((Phase::Build, seconds(flag)?)),
            "--start-timeout" => limits.push((Phase::Start, seconds(flag)?)),
            "--test-timeout" => limits.push((Phase::Tests, seconds(flag)?)),
            "--isolation" => {
                isolation = match value(flag)?.as_str() {
                    "auto" => Isolation::Auto,
                    "namespaces" => Isolation::Namespaces,
                    "process" => Isolation::Process,
                    other => bail!("--isolation takes auto, namespaces or process, not {other:?}"),
                };
            }
            "--no-registry" => registry = false,
            "--venvs" => venvs = Some(PathBuf::from(value(flag)?)),
            "--maven-repo" => maven = Some(PathBuf::from(value(flag)?)),
            "--keep-workspaces" => keep = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    let root = root.with_context(|| format!("--root <REPOGENESIS> is required\n{USAGE}"))?;
    let generated = generated.with_context(|| format!("--generated <DIR> is required\n{USAGE}"))?;
    let mut config = GenesisConfig::new(root, generated, &out);
    config.tasks = tasks;
    config.jobs = jobs.max(1);
    config.resume = resume;
    config.phase_limits = limits;
    config.isolation = isolation;
    config.package_registry = registry;
    config.venv_dir = venvs;
    config.maven_repo = maven;
    config.keep_workspaces = keep;
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
