//! Evaluating generated repositories task by task: static scores first (as
//! the harness computes AC before building), then a fresh workspace with
//! the golden tests overlaid, the environment, the service and the tests,
//! each phase under its limit; every outcome is a record, appended
//! atomically, so an interrupted run resumes where it stopped.
//!
//! The service and the golden tests run in one sandbox service session
//! (`Sandbox::run_service`): the golden tests from the harness's own copy
//! outside the workspace, in the tests' interpreter, with the harness's
//! rootdir and ini; their results come from the session's supervisor, never
//! from a file the service could write. A session whose supervisor left no
//! report scores no passes over the golden tests' count.
//!
//! `test_dsr_repos.py`'s DSR is derived from the same run rather than a
//! second start: its conditions (dependencies installed, a `start.sh` found
//! five levels down, the process alive at the end of the window or ended
//! with a success message) are read off what the entrypoint-style run saw.
//! Where the two scripts would start different things (a `start.sh` deeper
//! than the entrypoint looks), that is stated in the message.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use context_pack::spec::declared_endpoints;
use sandbox::{
    Agreement, Command, DEFAULT_PATH, Isolation, Readiness, Sandbox, SandboxConfig, ServiceCommand,
    ServicePlan, ServiceReport, TestCounts, TestReport, TestRun,
};

use super::config::GenesisConfig;
use super::coverage::{AcRule, api_coverage, extract_endpoints, python_text, round4};
use super::driver::{
    StartCommand, legacy_file_exists, legacy_start_script_exists, legacy_success_pattern,
    start_command,
};
use super::env::{BuildOutcome, EnvBuilder, EnvConfig, TaskEnvs, tail};
use super::failure::{EvaluationError, SandboxPurpose};
use super::maven::{java17, missing_artifacts, missing_from_log};
use super::record::{
    AcResults, CountSource, FaultKind, GenesisRecord, GenesisStatus, StartOutcome, TaskFacts,
    TestOutcome,
};
use super::report::{GenesisMeta, GenesisReport};
use super::routes::route_coverage;
use super::spec::{GenesisBenchmark, GenesisTask, GoldenTests, Language, Timeouts};
use super::testlog::{Outcome, harness_pytest_counts, harness_surefire_counts, parse_junit};
use crate::Error;
use crate::pool::for_each_parallel;
use crate::report_format::ReportFiles;
use crate::results::set_aside;
use crate::results::{ResultsFile, latest_per_task};
use crate::workspace::{copy_tree, remove_dir};

/// What the observer of a run is told.
#[derive(Debug, Clone, PartialEq)]
pub enum GenesisEvent {
    /// The plan.
    Planned {
        /// Tasks to evaluate now.
        to_run: usize,
        /// Tasks skipped because `--resume` found them recorded.
        skipped: usize,
        /// Tasks at once.
        jobs: usize,
        /// How tasks are isolated, and why when it limits the run.
        isolation: String,
    },
    /// A task started.
    Started {
        /// Its name.
        task: String,
    },
    /// A task is recorded.
    Finished {
        /// Its record.
        record: Box<GenesisRecord>,
        /// Tasks recorded so far in this run.
        done: usize,
        /// Tasks this run will record.
        total: usize,
    },
}

/// What a run gave.
#[derive(Debug, Clone)]
pub struct GenesisOutcome {
    /// The report over every recorded task of the selection.
    pub report: GenesisReport,
    /// Where it was written.
    pub files: ReportFiles,
    /// The results file.
    pub results: PathBuf,
    /// Tasks evaluated now.
    pub ran: usize,
    /// Tasks skipped because they were recorded.
    pub skipped: usize,
    /// The run was stopped before every task was done.
    pub interrupted: bool,
    /// Wall-clock time of this run, milliseconds.
    pub wall_ms: u64,
}

/// Evaluates generated repositories on RepoGenesis.
///
/// ```no_run
/// use bench_harness::repogenesis::{GenesisConfig, GenesisHarness};
///
/// let mut config = GenesisConfig::new("/data/RepoGenesis", "generated/", "target/repogenesis");
/// config.jobs = 4;
/// let harness = GenesisHarness::new(config)?;
/// let outcome = harness.run(&|event| eprintln!("{event:?}"))?;
/// println!("DSR {:.2} %", outcome.report.summary.all.dsr.rate() * 100.0);
/// # Ok::<(), bench_harness::Error>(())
/// ```
#[derive(Debug)]
pub struct GenesisHarness {
    config: GenesisConfig,
    bench: GenesisBenchmark,
    timeouts: Timeouts,
    env: EnvBuilder,
    isolation: Isolation,
    isolation_note: String,
    maven_repo: PathBuf,
    stop: Arc<AtomicBool>,
}

impl GenesisHarness {
    /// Opens the checkout and the generated repositories, prepares the
    /// output directory, and decides the isolation: namespaces when they
    /// work (tasks then run `jobs` at a time), else processes, one task at
    /// a time since their services would share the host's ports.
    pub fn new(mut config: GenesisConfig) -> Result<Self, Error> {
        let bench = GenesisBenchmark::open(&config.root)?;
        config.generated =
            std::fs::canonicalize(&config.generated).map_err(|source| Error::Io {
                what: "opening the generated repositories",
                path: config.generated.clone(),
                source,
            })?;
        config.out_dir = crate::workspace::output_dir(&config.out_dir)?;
        let mut timeouts = bench.timeouts();
        for (phase, limit) in &config.phase_limits {
            timeouts.set(*phase, *limit);
        }
        let (isolation, isolation_note) = decide_isolation(config.isolation, config.jobs)?;
        if isolation == Isolation::Process && config.jobs > 1 {
            tracing::warn!("{isolation_note}");
        }
        config.jobs = if isolation == Isolation::Namespaces {
            config.jobs.max(1)
        } else {
            1
        };
        // Sandboxes take relative paths from their own working directory,
        // so every shared directory is made absolute here.
        let venv_dir = config
            .venv_dir
            .clone()
            .unwrap_or_else(|| config.out_dir.join("venvs"));
        std::fs::create_dir_all(&venv_dir).map_err(|source| Error::Io {
            what: "creating the virtualenv cache",
            path: venv_dir.clone(),
            source,
        })?;
        let venv_dir = std::fs::canonicalize(&venv_dir).map_err(|source| Error::Io {
            what: "opening the virtualenv cache",
            path: venv_dir.clone(),
            source,
        })?;
        let maven_repo = config.maven_repo.clone().unwrap_or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| config.out_dir.clone())
                .join(".m2")
                .join("repository")
        });
        let maven_repo = if maven_repo.is_absolute() {
            maven_repo
        } else {
            std::env::current_dir()
                .map_err(|source| Error::Io {
                    what: "finding the current directory",
                    path: maven_repo.clone(),
                    source,
                })?
                .join(maven_repo)
        };
        let env = EnvBuilder::new(EnvConfig {
            venv_dir,
            isolation,
            package_registry: config.package_registry,
        });
        Ok(GenesisHarness {
            config,
            bench,
            timeouts,
            env,
            isolation,
            isolation_note,
            maven_repo,
            stop: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The checkout.
    pub fn benchmark(&self) -> &GenesisBenchmark {
        &self.bench
    }

    /// The configuration (paths made canonical, jobs as they will run).
    pub fn config(&self) -> &GenesisConfig {
        &self.config
    }

    /// The phase limits in force.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// The isolation in effect (never `Auto`) and what it means for the run.
    pub fn isolation(&self) -> (Isolation, &str) {
        (self.isolation, &self.isolation_note)
    }

    /// Setting this flag stops the run after the tasks in flight.
    pub fn stop_handle(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    /// The results file.
    pub fn results_file(&self) -> PathBuf {
        self.config.out_dir.join("results.jsonl")
    }

    /// Evaluates every selected task not yet recorded, then writes the
    /// report over all recorded tasks of the selection.
    pub fn run(&self, observer: &(dyn Fn(&GenesisEvent) + Sync)) -> Result<GenesisOutcome, Error> {
        let started = Instant::now();
        let selected = self.bench.select(&self.config.tasks)?;
        let results: ResultsFile<GenesisRecord> = ResultsFile::new(self.results_file());
        if !self.config.resume {
            set_aside(results.path())?;
        }
        let recorded: Vec<GenesisRecord> = latest_per_task(&results.load()?)
            .into_iter()
            .filter(|r| selected.iter().any(|t| t.name() == r.task))
            .collect();
        let pending: Vec<&GenesisTask> = selected
            .iter()
            .copied()
            .filter(|t| !recorded.iter().any(|r| r.task == t.name()))
            .collect();
        let skipped = selected.len() - pending.len();
        observer(&GenesisEvent::Planned {
            to_run: pending.len(),
            skipped,
            jobs: self.config.jobs,
            isolation: self.isolation_note.clone(),
        });
        let total = pending.len();
        let mut ran = 0;
        for_each_parallel(
            &pending,
            self.config.jobs,
            &self.stop,
            |task| {
                observer(&GenesisEvent::Started {
                    task: task.name().to_owned(),
                });
                self.evaluate(task)
            },
            |_, record| {
                results.append(&record).inspect_err(|e| {
                    tracing::error!(error = %e, "cannot record a task; stopping");
                })?;
                ran += 1;
                observer(&GenesisEvent::Finished {
                    record: Box::new(record),
                    done: ran,
                    total,
                });
                Ok(())
            },
        )?;
        let all: Vec<GenesisRecord> = results
            .load()?
            .into_iter()
            .filter(|r| selected.iter().any(|t| t.name() == r.task))
            .collect();
        let wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let meta = GenesisMeta {
            root: self.bench.root().to_path_buf(),
            generated: self.config.generated.clone(),
            selection: if self.config.tasks.is_empty() {
                "all tasks".to_owned()
            } else {
                format!("tasks {}", self.config.tasks.join(", "))
            },
            benchmark_tasks: self.bench.tasks().len(),
            isolation: self.isolation_note.clone(),
            jobs: self.config.jobs,
            timeouts: self.timeouts,
            run_wall_ms: wall_ms,
            generated_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        };
        let report = GenesisReport::new(meta, &all);
        let files = report.write(&self.config.out_dir)?;
        Ok(GenesisOutcome {
            report,
            files,
            results: results.path().to_path_buf(),
            ran,
            skipped,
            interrupted: ran < total,
            wall_ms,
        })
    }

    /// Evaluates one task. Never fails: whatever goes wrong is in the record.
    pub fn evaluate(&self, task: &GenesisTask) -> GenesisRecord {
        let started = Instant::now();
        let spec = &task.spec;
        let mut record = GenesisRecord::new(
            &spec.name,
            spec.language,
            spec.framework,
            spec.port,
            GenesisStatus::Evaluated,
        );
        record.isolation = self.isolation.to_string();
        record.facts = task_facts(task);
        let generated = self.config.generated.join(&spec.name);
        if !generated.is_dir() {
            record.status = GenesisStatus::NoRepository;
            record.message = Some(format!("no repository at {}", generated.display()));
            return record;
        }
        let evaluated = std::panic::catch_unwind(AssertUnwindSafe(|| {
            self.evaluate_repository(task, &generated, &mut record)
        }));
        match evaluated {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                record.status = GenesisStatus::Error;
                record.message = Some(error.to_string());
            }
            Err(_) => {
                record.status = GenesisStatus::Error;
                record.message = Some("the evaluation panicked".into());
            }
        }
        let workspace = self.config.out_dir.join("work").join(&spec.name);
        if !self.config.keep_workspaces
            && let Err(e) = remove_dir(&workspace)
        {
            tracing::warn!(task = %spec.name, error = %e, "cannot remove the workspace");
        }
        record.wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        record
    }

    fn evaluate_repository(
        &self,
        task: &GenesisTask,
        generated: &Path,
        record: &mut GenesisRecord,
    ) -> Result<(), EvaluationError> {
        // Static metrics on the repository as generated, before anything is
        // overlaid or built (as `evaluate_single_repo` does).
        let readme = std::fs::read(&task.readme)
            .map(|b| python_text(&b))
            .unwrap_or_default();
        record.ac = Some(AcResults {
            harness: api_coverage(AcRule::Harness, &task.readme, generated),
            legacy: api_coverage(AcRule::Legacy, &task.readme, generated),
            paper: api_coverage(AcRule::Paper, &task.readme, generated),
        });
        record.routes = Some(route_coverage(&declared_endpoints(&readme), generated));

        let workspace = self.config.out_dir.join("work").join(&task.spec.name);
        let repo = workspace.join("repo");
        remove_dir(&workspace)?;
        copy_tree(generated, &repo)?;
        let golden = match (&task.golden, task.spec.language) {
            (GoldenTests::PythonTests { dir }, Language::Python) => {
                Some(self.copy_golden(&task.spec.name, dir)?)
            }
            _ => {
                overlay_golden_tests(task, &repo)?;
                None
            }
        };

        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(EvaluationError::Runtime)?;
        runtime.block_on(async {
            match task.spec.language {
                Language::Python => {
                    self.python(task, &workspace, &repo, golden.as_ref(), record)
                        .await
                }
                Language::Java => self.java(task, &workspace, &repo, record).await,
            }
        })
    }

    /// The harness's copy of a task's golden tests, outside every
    /// workspace: `<out>/golden/<task>/tests`, with the ini pytest runs with
    /// (theirs in `tests/`, else an empty one beside them).
    fn copy_golden(&self, task: &str, tests: &Path) -> Result<Golden, EvaluationError> {
        let root = self.config.out_dir.join("golden").join(task);
        remove_dir(&root)?;
        copy_tree(tests, &root.join("tests"))?;
        let own = root.join("tests").join("pytest.ini");
        let inifile = if own.is_file() {
            own
        } else {
            let empty = root.join("pytest.ini");
            std::fs::write(&empty, "[pytest]\n").map_err(EvaluationError::io("write", &empty))?;
            empty
        };
        Ok(Golden { root, inifile })
    }

    async fn python(
        &self,
        task: &GenesisTask,
        workspace: &Path,
        repo: &Path,
        golden: Option<&Golden>,
        record: &mut GenesisRecord,
    ) -> Result<(), EvaluationError> {
        let limits = self.timeouts.of(Language::Python);
        let golden_tests = golden.map(|g| g.root.join("tests"));
        let (envs, build) = self
            .env
            .python(&task.spec.name, repo, golden_tests.as_deref(), limits.build)
            .await?;
        if !build.ok {
            record.fault(FaultKind::BuildFailed, build.problems.join("\n"));
        }
        let dependencies_ok = build.dependencies_ok;
        record.build = Some(build);
        let start = start_command(repo, Language::Python);
        let sandbox = self.session_sandbox(workspace, &envs, golden).await?;
        let service_env = python_env(envs.service.dir(), &envs.service.bin_dir());
        let (argv, shown) = match &start {
            StartCommand::UvicornProbe => {
                match uvicorn_module(&sandbox, repo, &service_env).await? {
                    Some(module) => {
                        let argv = python_argv(&[
                            "-m",
                            "uvicorn",
                            &module,
                            "--host",
                            "0.0.0.0",
                            "--port",
                            &task.spec.port.to_string(),
                        ]);
                        let shown = format!(
                            "python -m uvicorn {module} --host 0.0.0.0 --port {}",
                            task.spec.port
                        );
                        (Some(argv), shown)
                    }
                    None => (None, start.shown(task.spec.port)),
                }
            }
            other => (
                start_argv(other, task.spec.port, None),
                other.shown(task.spec.port),
            ),
        };
        let mut plan = self.plan(task, repo, argv, service_env, limits.start);
        if let Some(golden) = golden {
            let mut extra = vec![repo.to_path_buf()];
            extra.extend(envs.service_site_packages());
            plan.tests = Some(TestRun::Pytest {
                interpreter: envs.tests.python(),
                test_paths: vec![golden.root.join("tests")],
                rootdir: golden
                    .inifile
                    .parent()
                    .unwrap_or(&golden.root)
                    .to_path_buf(),
                inifile: golden.inifile.clone(),
                sys_path_extra: extra,
                args: vec!["-v".into(), "--tb=short".into()],
                cwd: repo.to_path_buf(),
                env: python_env(envs.tests.dir(), &envs.tests.bin_dir()),
                timeout: limits.tests,
            });
        }
        let report = sandbox
            .run_service(&plan)
            .await
            .map_err(EvaluationError::command("run the service and tests"))?;
        self.record_run(task, repo, &start, shown, &report, dependencies_ok, record);
        Ok(())
    }

    /// The sandbox of a task's session: the workspace writable, the
    /// environments and the golden tests read-only.
    async fn session_sandbox(
        &self,
        workspace: &Path,
        envs: &TaskEnvs,
        golden: Option<&Golden>,
    ) -> Result<Sandbox, EvaluationError> {
        let mut builder = SandboxConfig::builder(workspace)
            .isolation(self.isolation)
            .max_file_size(256u64 << 20)
            .output_limit(64 * 1024)
            .read_only_path(envs.service.dir())
            .read_only_path(envs.tests.dir());
        if let Some(golden) = golden {
            builder = builder.read_only_path(&golden.root);
        }
        let config = builder
            .build()
            .map_err(EvaluationError::sandbox(SandboxPurpose::Run))?;
        Sandbox::new(config)
            .await
            .map_err(EvaluationError::sandbox(SandboxPurpose::Run))
    }

    /// The session's plan without tests: the service as the entrypoint
    /// starts it, probed on the entrypoint's health paths, the start's end
    /// taken as its verdict (the entrypoint does not wait for daemons).
    fn plan(
        &self,
        task: &GenesisTask,
        repo: &Path,
        argv: Option<Vec<String>>,
        env: Vec<(String, String)>,
        start_timeout: Duration,
    ) -> ServicePlan {
        let service = argv.map(|argv| ServiceCommand {
            argv,
            cwd: repo.to_path_buf(),
            env,
        });
        let mut plan = ServicePlan::new(service, task.spec.port);
        plan.startup_timeout = start_timeout;
        plan.health_paths = HEALTH_PATHS.iter().map(|p| (*p).to_owned()).collect();
        plan.wait_for_daemons = false;
        plan.stop_grace = Duration::from_secs(1);
        plan
    }

    async fn java(
        &self,
        task: &GenesisTask,
        workspace: &Path,
        repo: &Path,
        record: &mut GenesisRecord,
    ) -> Result<(), EvaluationError> {
        let limits = self.timeouts.of(Language::Java);
        let started = Instant::now();
        let mut build = BuildOutcome {
            location: Some(self.maven_repo.clone()),
            ..BuildOutcome::default()
        };
        let pom_path = repo.join("pom.xml");
        let pom = match std::fs::read(&pom_path) {
            Ok(bytes) => python_text(&bytes),
            Err(_) => match &task.pom {
                Some(given) => {
                    let text = std::fs::read(given)
                        .map(|b| python_text(&b))
                        .map_err(EvaluationError::io("read", &given))?;
                    record.message = Some(
                        "the repository has no pom.xml; the task's pom.xml (given to the generator) was used".into(),
                    );
                    text
                }
                None => String::new(),
            },
        };
        if !pom.is_empty() {
            std::fs::write(&pom_path, java17(&pom))
                .map_err(EvaluationError::io("write", &pom_path))?;
        }
        let unavailable = |record: &mut GenesisRecord, mut build: BuildOutcome, detail: String| {
            build.wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            record.status = GenesisStatus::BuildUnavailable;
            record.fault(FaultKind::BuildUnavailable, detail);
            record.build = Some(build);
        };
        if which("mvn").is_none() {
            unavailable(
                record,
                build,
                "Maven (mvn) is not installed; install the Debian package `maven`".into(),
            );
            return Ok(());
        }
        let missing = missing_artifacts(&pom, &self.maven_repo);
        if !missing.is_empty() {
            build.missing_artifacts = missing.iter().map(|a| a.coordinates()).collect();
            let detail = format!(
                "{} artifact(s) the pom.xml declares are not in {} and Maven Central is out of reach: {}",
                missing.len(),
                self.maven_repo.display(),
                build.missing_artifacts.join(", ")
            );
            unavailable(record, build, detail);
            return Ok(());
        }
        std::fs::create_dir_all(&self.maven_repo)
            .map_err(EvaluationError::io("create", &self.maven_repo))?;
        let config = SandboxConfig::builder(workspace)
            .isolation(self.isolation)
            .timeout(limits.build)
            .read_write_path(&self.maven_repo)
            .build()
            .map_err(EvaluationError::sandbox(SandboxPurpose::Build))?;
        let sandbox = Sandbox::new(config)
            .await
            .map_err(EvaluationError::sandbox(SandboxPurpose::Build))?;
        let compiled = sandbox
            .exec(
                Command::new("mvn")
                    .arg("-o")
                    .arg("-B")
                    .arg("-q")
                    .arg(format!("-Dmaven.repo.local={}", self.maven_repo.display()))
                    .arg("-DskipTests")
                    .arg("compile")
                    .current_dir(repo),
            )
            .await
            .map_err(EvaluationError::command("run mvn"))?;
        let log = compiled.combined_output();
        if !compiled.success() {
            if let Some(artifact) = missing_from_log(&log) {
                build.missing_artifacts = vec![artifact.clone()];
                unavailable(
                    record,
                    build,
                    format!(
                        "Maven needs {artifact}, which is not in {} (offline)",
                        self.maven_repo.display()
                    ),
                );
                return Ok(());
            }
            build.problems.push(format!(
                "mvn compile failed ({}): {}",
                compiled.status_summary(),
                tail(&log, 1500)
            ));
            record.fault(FaultKind::BuildFailed, build.problems.join("\n"));
        } else {
            build.ok = true;
            build.dependencies_ok = true;
        }
        build.wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let dependencies_ok = build.dependencies_ok;
        record.build = Some(build);
        // As in the harness, a failed compilation does not stop the run:
        // the start and the tests fail on their own and say so.
        let start = start_command(repo, Language::Java);
        let maven = format!("-Dmaven.repo.local={}", self.maven_repo.display());
        let mut plan = self.plan(
            task,
            repo,
            start_argv(&start, task.spec.port, Some(&maven)),
            Vec::new(),
            limits.start,
        );
        // Surefire's reports are files in the workspace the service can
        // write: only the console counts, as the harness's parser reads it.
        plan.tests = Some(TestRun::Command {
            argv: ["mvn", "-o", "-B", &maven, "test"]
                .iter()
                .map(|a| (*a).to_owned())
                .collect(),
            cwd: repo.to_path_buf(),
            env: Vec::new(),
            timeout: limits.tests,
        });
        let config = SandboxConfig::builder(workspace)
            .isolation(self.isolation)
            .max_file_size(256u64 << 20)
            .output_limit(64 * 1024)
            .read_write_path(&self.maven_repo)
            .build()
            .map_err(EvaluationError::sandbox(SandboxPurpose::Run))?;
        let sandbox = Sandbox::new(config)
            .await
            .map_err(EvaluationError::sandbox(SandboxPurpose::Run))?;
        let report = sandbox
            .run_service(&plan)
            .await
            .map_err(EvaluationError::command("run the service and tests"))?;
        let shown = start.shown(task.spec.port);
        self.record_run(task, repo, &start, shown, &report, dependencies_ok, record);
        Ok(())
    }

    /// Turns what the session saw into the record's start and test
    /// outcomes and faults.
    #[allow(clippy::too_many_arguments)]
    fn record_run(
        &self,
        task: &GenesisTask,
        repo: &Path,
        command: &StartCommand,
        shown: String,
        report: &ServiceReport,
        dependencies_ok: bool,
        record: &mut GenesisRecord,
    ) {
        let language = task.spec.language;
        let port = task.spec.port;
        let service_log = &report.service_log_tail;
        let readiness = &report.readiness;
        // Rounded to the nearest second: a wait that ran to its limit of N
        // seconds reads N.
        let ready_after_s = readiness.after_ms().map_or(0, |ms| {
            u32::try_from(ms.saturating_add(500) / 1000).unwrap_or(u32::MAX)
        });
        let survivors = report.survivors.clone();
        let leftovers = report.leftovers.clone();
        let (dsr_legacy, dsr_legacy_message) =
            legacy_dsr(language, repo, dependencies_ok, readiness, service_log);
        let limits = self.timeouts.of(language);
        // The entrypoint's verdict: ready on a health path or the port, or
        // still running at the end of the wait.
        let dsr = matches!(
            readiness,
            Readiness::Health { .. }
                | Readiness::Listening { .. }
                | Readiness::AliveNotListening { .. }
        );
        let dsr_message = match readiness {
            _ if dsr => "Service started successfully".to_owned(),
            Readiness::NothingToStart => "No service entry point found".to_owned(),
            Readiness::NotReported => "the run ended before the service was probed".to_owned(),
            _ => format!("Service failed to start within {}s", limits.start.as_secs()),
        };
        let start = StartOutcome {
            shown,
            command: command.clone(),
            answered: readiness.answered(),
            readiness: readiness.clone(),
            ready_after_s,
            dsr,
            dsr_message,
            dsr_legacy,
            dsr_legacy_message,
            survivors: survivors.clone(),
            leftovers: leftovers.clone(),
            log_tail: tail(service_log, 1500),
        };
        match readiness {
            Readiness::NothingToStart => record.fault(
                FaultKind::NoEntryPoint,
                "no start.sh within three levels and no fallback entry point (app.py, main.py, run.py, manage.py, server.py, an importable main/app/server/api module)",
            ),
            Readiness::Exited { code, .. } => record.fault(
                FaultKind::ServiceExited,
                format!(
                    "`{}` ended with exit code {} after {} s{}",
                    start.shown,
                    code.map_or_else(|| "?".to_owned(), |c| c.to_string()),
                    ready_after_s,
                    last_line(service_log)
                        .map(|l| format!("; last output: {l}"))
                        .unwrap_or_default()
                ),
            ),
            Readiness::AliveNotListening { .. } => record.fault(
                FaultKind::NeverListened,
                format!(
                    "`{}` was still running after {} s but nothing answered on port {port} (the harness counts this as deployed)",
                    start.shown,
                    limits.start.as_secs(),
                ),
            ),
            Readiness::NeverListened { .. } => record.fault(
                FaultKind::NeverListened,
                format!(
                    "`{}` ended, and what it left ran for {} s without answering on port {port}",
                    start.shown,
                    limits.start.as_secs(),
                ),
            ),
            Readiness::PortBusy => record.fault(
                FaultKind::PortBusy,
                format!(
                    "port {port} already answered before `{}` ran, so nothing was started or tested; free the port",
                    start.shown
                ),
            ),
            Readiness::NotReported => record.fault(
                FaultKind::SessionFailed,
                format!(
                    "the session's supervisor left no report ({}; {}): the golden tests count as not passed",
                    report.call_status,
                    report.supervisor_error.as_deref().unwrap_or("no reason given")
                ),
            ),
            Readiness::Health { .. } | Readiness::Listening { .. } => {}
        }
        if readiness != &Readiness::NotReported
            && let Some(error) = &report.supervisor_error
        {
            record.fault(
                FaultKind::SessionFailed,
                format!("the session's supervisor failed: {}", tail(error, 1500)),
            );
        }
        // One fault per daemon: what the start command left behind when it
        // ended, and what outlived the stop of the service's group.
        let pid = |line: &String| line.split(' ').next().unwrap_or("").to_owned();
        let outlived: Vec<&String> = leftovers
            .iter()
            .filter(|l| !survivors.iter().any(|s| pid(s) == pid(l)))
            .collect();
        if !survivors.is_empty() {
            let killed = survivors
                .iter()
                .any(|s| leftovers.iter().any(|l| pid(l) == pid(s)));
            record.fault(
                FaultKind::LeftDaemon,
                format!(
                    "the start command ended but left running: {}{}",
                    survivors.join("; "),
                    if killed {
                        " (it escaped the service's process group and was killed at the end)"
                    } else {
                        ""
                    }
                ),
            );
        }
        if !outlived.is_empty() {
            record.fault(
                FaultKind::LeftDaemon,
                format!(
                    "still running after the service's process group was stopped (killed): {}",
                    outlived
                        .iter()
                        .map(|l| l.as_str())
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            );
        }
        record.start = Some(start);
        record.tests = Some(self.test_outcome(task, report.tests.as_ref(), repo, record));
    }

    fn test_outcome(
        &self,
        task: &GenesisTask,
        tests: Option<&TestReport>,
        repo: &Path,
        record: &mut GenesisRecord,
    ) -> TestOutcome {
        let limits = self.timeouts.of(task.spec.language);
        if matches!(task.golden, GoldenTests::Missing) {
            record.fault(
                FaultKind::NoGoldenTests,
                "the checkout has no golden tests for this task",
            );
        }
        let Some(tests) = tests else {
            // Nothing ran (the port was busy) or nothing was reported (the
            // supervisor was killed): no golden test passed, and each counts.
            let declared = u32::try_from(record.facts.golden_test_functions).unwrap_or(u32::MAX);
            return TestOutcome {
                counts: TestCounts {
                    failed: declared,
                    ..TestCounts::default()
                },
                source: CountSource::Console,
                harness_total: declared,
                pass_at_1: 0.0,
                counted: declared > 0,
                all_passed: false,
                harness_console: None,
                timed_out: false,
                exit_code: None,
                not_passed: Vec::new(),
            };
        };
        let log = &tests.console_tail;
        let timed_out = tests.timed_out;
        // The entrypoint runs the tests under `timeout`, whose exit code on
        // its limit is 124: the benchmark's TEST_EXIT_CODE.
        let exit_code = if timed_out {
            Some(124)
        } else {
            tests.exit_code
        };
        let (counts, source, harness_total, cases, harness_console) = match task.spec.language {
            Language::Python => {
                let console = harness_pytest_counts(log);
                let counts = tests.scored();
                let agreement = tests.agreement();
                // A run killed at its limit writes no report: nothing to
                // hold the console against, and its passes count for nothing.
                if !timed_out && matches!(agreement, Agreement::Disagree | Agreement::JunitMissing)
                {
                    let junit = tests
                        .junit
                        .as_ref()
                        .map_or_else(|| "none".to_owned(), |j| describe(&j.counts));
                    let summary = tests
                        .console
                        .as_ref()
                        .map_or_else(|| "none".to_owned(), describe);
                    record.fault(
                        FaultKind::TestsDisagree,
                        format!(
                            "the JUnit report ({junit}{}) and pytest's summary ({summary}) disagree; scored {}",
                            tests
                                .junit_problem
                                .as_deref()
                                .map(|p| format!(": {p}"))
                                .unwrap_or_default(),
                            describe(&counts)
                        ),
                    );
                }
                let source = if tests.junit.is_some() {
                    CountSource::Junit
                } else {
                    CountSource::Console
                };
                let differs = (console.passed, console.failed, console.errors)
                    != (counts.passed, counts.failed, counts.errors);
                let cases = tests
                    .junit
                    .as_ref()
                    .map(|j| j.cases.clone())
                    .unwrap_or_default();
                (
                    counts,
                    source,
                    counts.total(),
                    cases,
                    differs.then_some(console),
                )
            }
            Language::Java => {
                let surefire = harness_surefire_counts(log);
                let mut cases = Vec::new();
                if let Ok(entries) = std::fs::read_dir(repo.join("target/surefire-reports")) {
                    for entry in entries.flatten() {
                        let name = entry.file_name().to_string_lossy().into_owned();
                        if name.starts_with("TEST-")
                            && name.ends_with(".xml")
                            && let Ok(bytes) = std::fs::read(entry.path())
                            && let Some(report) = parse_junit(&String::from_utf8_lossy(&bytes))
                        {
                            cases.extend(report.cases);
                        }
                    }
                }
                (
                    surefire.counts(),
                    CountSource::Surefire,
                    surefire.run,
                    cases,
                    None,
                )
            }
        };
        let not_passed: Vec<_> = cases
            .into_iter()
            .filter(|c| c.outcome != Outcome::Passed)
            .collect();
        if timed_out {
            let partial = verbose_progress(log);
            record.fault(
                FaultKind::TestsTimedOut,
                format!(
                    "the golden tests did not finish within {} s and were killed{}",
                    limits.tests.as_secs(),
                    partial
                        .map(|p| format!("; before that pytest reported {p}"))
                        .unwrap_or_default()
                ),
            );
        } else if counts.reported() == 0 {
            record.fault(
                FaultKind::NoTests,
                format!(
                    "no test reported (exit code {}){}",
                    exit_code.map_or_else(|| "?".to_owned(), |c| c.to_string()),
                    last_line(log)
                        .map(|l| format!("; last output: {l}"))
                        .unwrap_or_default()
                ),
            );
        } else if harness_total == 0 {
            record.fault(
                FaultKind::AllSkipped,
                format!(
                    "all {} reported tests were skipped, so the harness leaves the repository out of its Pass@1 average",
                    counts.skipped
                ),
            );
        }
        TestOutcome {
            counts,
            source,
            harness_total,
            pass_at_1: if harness_total == 0 {
                0.0
            } else {
                round4(f64::from(counts.passed) / f64::from(harness_total))
            },
            counted: harness_total > 0,
            all_passed: counts.passed > 0
                && counts.failed == 0
                && counts.errors == 0
                && counts.skipped == 0,
            harness_console,
            timed_out,
            exit_code,
            not_passed,
        }
    }
}

/// `2 passed, 1 failed, 0 errors, 0 skipped`.
fn describe(counts: &TestCounts) -> String {
    format!(
        "{} passed, {} failed, {} errors, {} skipped",
        counts.passed, counts.failed, counts.errors, counts.skipped
    )
}

/// The entrypoint's health paths, tried in order each round.
const HEALTH_PATHS: [&str; 5] = [
    "/",
    "/health",
    "/api/health",
    "/api/v1/health",
    "/actuator/health",
];

/// The harness's copy of a task's golden tests.
#[derive(Debug, Clone)]
struct Golden {
    /// `<out>/golden/<task>`, holding `tests/`.
    root: PathBuf,
    /// The ini pytest runs with.
    inifile: PathBuf,
}

/// A virtualenv's variables for a command run in it.
fn python_env(dir: &Path, bin: &Path) -> Vec<(String, String)> {
    vec![
        ("VIRTUAL_ENV".into(), dir.display().to_string()),
        ("PATH".into(), format!("{}:{DEFAULT_PATH}", bin.display())),
        ("PYTHONUNBUFFERED".into(), "1".into()),
        ("PYTHONDONTWRITEBYTECODE".into(), "1".into()),
    ]
}

fn python_argv(args: &[&str]) -> Vec<String> {
    std::iter::once("python")
        .chain(args.iter().copied())
        .map(str::to_owned)
        .collect()
}

/// The command line of a start command (the uvicorn probe is decided apart).
fn start_argv(start: &StartCommand, port: u16, maven: Option<&str>) -> Option<Vec<String>> {
    match start {
        StartCommand::Script { path } => Some(vec!["bash".into(), path.clone()]),
        StartCommand::PythonFile { file } => Some(python_argv(&[file])),
        StartCommand::ManagePy => Some(python_argv(&[
            "manage.py",
            "runserver",
            &format!("0.0.0.0:{port}"),
        ])),
        StartCommand::MavenSpringBoot => Some(
            [
                "mvn",
                "-o",
                "-B",
                maven.unwrap_or(""),
                "spring-boot:run",
                "-q",
            ]
            .iter()
            .filter(|a| !a.is_empty())
            .map(|a| (*a).to_owned())
            .collect(),
        ),
        StartCommand::UvicornProbe | StartCommand::None => None,
    }
}

/// The entrypoint's uvicorn fallback: the first of `main:app`, `app:app`,
/// `server:app`, `api:app` whose module imports (10 s each) in the
/// service's environment, without network.
async fn uvicorn_module(
    sandbox: &Sandbox,
    repo: &Path,
    env: &[(String, String)],
) -> Result<Option<String>, EvaluationError> {
    for module in ["main:app", "app:app", "server:app", "api:app"] {
        let name = module.split(':').next().unwrap_or(module);
        let mut command = Command::new("python")
            .arg("-c")
            .arg(format!("import {name}"))
            .current_dir(repo)
            .timeout(Duration::from_secs(10));
        for (key, value) in env {
            command = command.env(key, value);
        }
        let run = sandbox
            .exec(command)
            .await
            .map_err(EvaluationError::command(format!("try to import {name}")))?;
        if run.success() {
            return Ok(Some(module.to_owned()));
        }
    }
    Ok(None)
}

/// What `task` declares: endpoints by each reading of its README, test
/// functions in its golden tests.
fn task_facts(task: &GenesisTask) -> TaskFacts {
    let readme = std::fs::read(&task.readme)
        .map(|b| python_text(&b))
        .unwrap_or_default();
    let golden_test_functions = match &task.golden {
        GoldenTests::PythonTests { dir } | GoldenTests::JavaSources { dir, .. } => {
            count_test_functions(dir)
        }
        GoldenTests::Missing => 0,
    };
    TaskFacts {
        endpoints_harness: extract_endpoints(AcRule::Harness, &readme).len(),
        endpoints_paper: extract_endpoints(AcRule::Paper, &readme).len(),
        endpoints_legacy: extract_endpoints(AcRule::Legacy, &readme).len(),
        endpoints_declared: declared_endpoints(&readme).len(),
        golden_test_functions,
    }
}

/// `def test_…` in `test_*.py` and `*_test.py` files (`count_tests_ast`
/// counts plain function definitions, not `async def`), `@Test` in Java.
fn count_test_functions(dir: &Path) -> usize {
    let mut count = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
                continue;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let python =
                name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"));
            let java = name.ends_with(".java");
            if !python && !java {
                continue;
            }
            let text = read_capped(&path, 4 << 20);
            count += text
                .lines()
                .map(str::trim_start)
                .filter(|l| {
                    if python {
                        l.strip_prefix("def test_").is_some()
                    } else {
                        l.starts_with("@Test")
                            && !l.starts_with("@TestMethodOrder")
                            && !l.starts_with("@TestInstance")
                    }
                })
                .count();
        }
    }
    count
}

/// Namespaces when they work (and `jobs` tasks at once), else processes,
/// one task at a time.
fn decide_isolation(requested: Isolation, jobs: usize) -> Result<(Isolation, String), Error> {
    // The reason is only shown, in the isolation note or the refusal.
    let probe = || -> Result<(), String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime
            .block_on(sandbox::namespaces_available())
            .map_err(|e| e.to_string())
    };
    match requested {
        Isolation::Process => Ok((
            Isolation::Process,
            "process isolation (asked for): one task at a time, since services share the host's ports, and services and tests have the host's network".into(),
        )),
        Isolation::Namespaces => match probe() {
            Ok(()) => Ok((Isolation::Namespaces, namespace_note(jobs))),
            Err(reason) => Err(Error::Invalid {
                path: PathBuf::from("bwrap"),
                message: format!("namespace isolation was asked for but is unavailable: {reason}"),
            }),
        },
        Isolation::Auto => match probe() {
            Ok(()) => Ok((Isolation::Namespaces, namespace_note(jobs))),
            Err(reason) => Ok((
                Isolation::Process,
                format!(
                    "namespaces are unavailable ({reason}); falling back to process isolation, one task at a time (services would collide on shared ports) and with the host's network; install bubblewrap to run tasks in parallel, each on a private loopback"
                ),
            )),
        },
    }
}

fn namespace_note(jobs: usize) -> String {
    format!(
        "namespaces (bubblewrap): each task's service and tests in a network namespace of their own with only a loopback interface; {} at a time",
        jobs.max(1)
    )
}

/// Puts Java's golden tests where the benchmark's Dockerfile puts them
/// (Maven compiles them with the repository): `src/test/` is replaced, or
/// `tests/*` copied to `src/test/java/`. Python's golden tests never enter
/// the workspace.
fn overlay_golden_tests(task: &GenesisTask, repo: &Path) -> Result<(), EvaluationError> {
    match &task.golden {
        GoldenTests::JavaSources { dir, flat } => {
            let target = repo.join("src").join("test");
            if *flat {
                Ok(copy_tree(dir, &target.join("java"))?)
            } else {
                if target.exists() {
                    remove_path(&target)?;
                }
                Ok(copy_tree(dir, &target)?)
            }
        }
        GoldenTests::PythonTests { .. } | GoldenTests::Missing => Ok(()),
    }
}

fn remove_path(path: &Path) -> Result<(), EvaluationError> {
    let meta = std::fs::symlink_metadata(path).map_err(EvaluationError::io("inspect", path))?;
    if meta.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    }
    .map_err(EvaluationError::io("remove", path))
}

/// `test_dsr_repos.py`'s verdict from what the run saw.
fn legacy_dsr(
    language: Language,
    repo: &Path,
    dependencies_ok: bool,
    readiness: &Readiness,
    service_log: &str,
) -> (bool, String) {
    if !dependencies_ok {
        let what = match language {
            Language::Python => "Pip install failed",
            Language::Java => "Maven build failed",
        };
        return (false, what.into());
    }
    // `detect_repo_type`: a Python repository needs one of these files.
    if language == Language::Python
        && !["requirements.txt", "setup.py", "pyproject.toml"]
            .iter()
            .any(|f| legacy_file_exists(repo, f))
    {
        return (false, "Unknown or missing build config".into());
    }
    if !legacy_start_script_exists(repo) {
        return (false, "start.sh not found (recursive)".into());
    }
    match readiness {
        Readiness::Health { .. }
        | Readiness::Listening { .. }
        | Readiness::AliveNotListening { .. } => (true, "Server started successfully".into()),
        Readiness::NeverListened { .. } => (true, "Server started successfully".into()),
        Readiness::Exited { code, .. } => match legacy_success_pattern(language, service_log) {
            Some(p) if p.contains("already in use") => {
                (true, "Server deployable (port conflict)".into())
            }
            Some(_) => (true, "Server started successfully".into()),
            None => (
                false,
                format!(
                    "Server exited with code {}",
                    code.map_or_else(|| "?".to_owned(), |c| c.to_string())
                ),
            ),
        },
        Readiness::NothingToStart => (
            false,
            "its start.sh is deeper than the entrypoint looks, so it was not started".into(),
        ),
        Readiness::PortBusy => (
            false,
            "the port was in use before the start, so nothing was started".into(),
        ),
        Readiness::NotReported => (false, "the service's state is unknown".into()),
    }
}

/// `N passed, M failed` from pytest's `-v` lines, for a run that was killed.
fn verbose_progress(log: &str) -> Option<String> {
    let mut counts = [0u32; 4];
    for line in log.lines() {
        if !line.contains("::") {
            continue;
        }
        for (i, word) in [" PASSED", " FAILED", " ERROR", " SKIPPED"]
            .iter()
            .enumerate()
        {
            if line.contains(word) {
                counts[i] += 1;
                break;
            }
        }
    }
    if counts.iter().all(|c| *c == 0) {
        return None;
    }
    let names = ["passed", "failed", "error", "skipped"];
    Some(
        counts
            .iter()
            .zip(names)
            .filter(|(c, _)| **c > 0)
            .map(|(c, n)| format!("{c} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

fn last_line(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.chars().take(300).collect())
}

fn read_capped(path: &Path, max: u64) -> String {
    use std::io::Read;
    let mut bytes = Vec::new();
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.take(max).read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
    })
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
