//! Running the agent on the selected tasks, grading, recording, reporting.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agent::{AgentConfig, TaskSpec, Trajectory};
use llm::ChatModel;

use crate::Error;
use crate::gittaskbench::domains::DomainMap;
use crate::gittaskbench::grade::{Grader, GradingConfig, Verdict};
use crate::gittaskbench::record::EnvironmentSummary;
use crate::gittaskbench::record::{RunStatus, TaskRecord};
use crate::gittaskbench::report::{Report, ReportMeta};
use crate::gittaskbench::task::{BenchTask, Benchmark, Selection};
use crate::gittaskbench::workspace::prepare_workspace;
use crate::pool::for_each_parallel;
use crate::report_format::ReportFiles;
use crate::results::{ResultsFile, latest_per_task, set_aside};
use crate::workspace::remove_dir;

/// Extra time past the per-task limit before the harness abandons an agent
/// that did not stop by itself.
const HARD_STOP_GRACE: Duration = Duration::from_secs(30);

/// How a run is set up: [`HarnessConfig::new`] for the defaults, or
/// [`HarnessConfig::builder`]; the fields stay readable and adjustable.
///
/// ```
/// use std::time::Duration;
/// use bench_harness::{HarnessConfig, Selection};
///
/// let config = HarnessConfig::builder("GitTaskBench", "target/run")
///     .jobs(2)
///     .timeout_per_task(Duration::from_secs(600))
///     .selection(Selection { tasks: vec!["Eparse_01".into()], ..Selection::default() })
///     .build();
/// assert_eq!(config.jobs, 2);
/// assert!(config.out_dir.is_absolute() && !config.resume);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HarnessConfig {
    /// The GitTaskBench checkout.
    pub root: PathBuf,
    /// Where everything goes: `results.jsonl`, `report.*`, `outputs/<ID>/`,
    /// `trajectories/<ID>.jsonl`, `grading/<ID>/`, `work/<ID>/`, `venvs/`.
    pub out_dir: PathBuf,
    /// Which tasks.
    pub selection: Selection,
    /// Tasks run at once (at least 1).
    pub jobs: usize,
    /// Skip tasks that `results.jsonl` already has. Without it an existing
    /// results file is moved aside (`results.jsonl.<time>.bak`).
    pub resume: bool,
    /// Wall-clock limit of one agent run.
    pub timeout_per_task: Duration,
    /// The agent's configuration; its time budget is set to
    /// `timeout_per_task`.
    pub agent: AgentConfig,
    /// How outputs are graded.
    pub grading: GradingConfig,
    /// Repository → domain.
    pub domains: DomainMap,
    /// Where prepared environments are cached: with it, each task's
    /// repository gets its Python environment built before the episode
    /// ([`agent::environment`]) and the record says how that went.
    pub environments: Option<PathBuf>,
    /// What installs the environments' packages (default uv, else pip).
    pub installer: agent::environment::Installer,
    /// Keep each task's workspace after grading (default: removed).
    pub keep_workspaces: bool,
}

impl HarnessConfig {
    /// Defaults: all tasks, one job, no resume, 30 minutes per task, the
    /// agent's defaults, per-repository virtualenvs in `out_dir/venvs`.
    ///
    /// Both directories are made absolute against the current directory:
    /// a sandbox reads a relative path against its own working directory,
    /// so a relative `--out` once made the grading virtualenv in one place
    /// and looked for it in another, and a written output was graded as
    /// "cannot use virtualenv interpreter".
    pub fn new(root: impl Into<PathBuf>, out_dir: impl Into<PathBuf>) -> Self {
        let absolute = |path: PathBuf| std::path::absolute(&path).unwrap_or(path);
        let out_dir = absolute(out_dir.into());
        HarnessConfig {
            root: absolute(root.into()),
            grading: GradingConfig::new(out_dir.join("venvs")),
            out_dir,
            selection: Selection::default(),
            jobs: 1,
            resume: false,
            timeout_per_task: Duration::from_secs(30 * 60),
            agent: AgentConfig::default(),
            domains: DomainMap::gittaskbench(),
            keep_workspaces: false,
            environments: None,
            installer: agent::environment::Installer::default(),
        }
    }
}

impl HarnessConfig {
    /// A builder from [`HarnessConfig::new`]'s defaults.
    pub fn builder(root: impl Into<PathBuf>, out_dir: impl Into<PathBuf>) -> HarnessConfigBuilder {
        HarnessConfigBuilder {
            config: HarnessConfig::new(root, out_dir),
        }
    }
}

/// Builds a [`HarnessConfig`]; see each field for its meaning and default.
#[derive(Debug, Clone)]
#[must_use]
pub struct HarnessConfigBuilder {
    config: HarnessConfig,
}

impl HarnessConfigBuilder {
    crate::config_builder::setters! {
        /// Which tasks.
        selection: Selection,
        /// Tasks run at once (at least 1).
        jobs: usize,
        /// Skip tasks the results file already has.
        resume: bool,
        /// Wall-clock limit of one agent run.
        timeout_per_task: Duration,
        /// The agent's configuration.
        agent: AgentConfig,
        /// How outputs are graded.
        grading: GradingConfig,
        /// Repository to domain.
        domains: DomainMap,
        /// Where prepared environments are cached (none: not prepared).
        environments: Option<PathBuf>,
        /// What installs the environments' packages.
        installer: agent::environment::Installer,
        /// Keep each task's workspace after grading.
        keep_workspaces: bool,
    }

    /// The configuration.
    pub fn build(self) -> HarnessConfig {
        self.config
    }
}

/// The request that prepares `repo`'s environment under `cache` with the
/// agent's sandbox settings and the harness's installer.
pub fn environment_request(
    repo: &Path,
    cache: &Path,
    config: &HarnessConfig,
) -> agent::environment::EnvironmentRequest {
    let mut request = agent::environment::EnvironmentRequest::for_agent(repo, cache, &config.agent);
    request.installer = config.installer;
    request
}

/// What a model factory is told about the task it makes a model for.
#[derive(Debug)]
pub struct TaskContext<'a> {
    /// The task.
    pub task: &'a BenchTask,
    /// The agent's task, with paths in the task's workspace.
    pub spec: &'a TaskSpec,
}

/// A factory of one model per task.
pub type ModelFactory =
    dyn Fn(&TaskContext<'_>) -> Result<Box<dyn ChatModel>, String> + Send + Sync;

/// The model(s) the agent runs with.
pub enum Models {
    /// One model for every task (a server).
    Shared(Arc<dyn ChatModel>),
    /// A model per task (scripted tests).
    PerTask(Box<ModelFactory>),
}

impl std::fmt::Debug for Models {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Models::Shared(m) => write!(f, "Models::Shared({})", m.model_name()),
            Models::PerTask(_) => f.write_str("Models::PerTask(..)"),
        }
    }
}

impl Models {
    /// One model for every task, as the agent's [`agent::ModelSpec`]
    /// chooses it: a server, a GGUF file run in-process, or the embedded
    /// default model. An in-process model's context window is fitted into
    /// `config` (see [`agent::LoadedModel::fit`]).
    pub fn load(
        spec: &agent::ModelSpec,
        config: &mut AgentConfig,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Self, Error> {
        let loaded = spec
            .load(progress)
            .map_err(|e| Error::Model(e.to_string()))?;
        loaded.fit(config);
        Ok(Models::Shared(loaded.chat))
    }

    /// The name reports show.
    pub fn name(&self) -> String {
        match self {
            Models::Shared(m) => m.model_name().to_owned(),
            Models::PerTask(_) => "per-task models".to_owned(),
        }
    }

    fn for_task(&self, context: &TaskContext<'_>) -> Result<Box<dyn ChatModel>, String> {
        match self {
            Models::Shared(m) => Ok(Box::new(Arc::clone(m))),
            Models::PerTask(factory) => factory(context),
        }
    }
}

/// What the observer of a run is told.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The plan: tasks to run now, and tasks skipped because `--resume`
    /// found them recorded.
    Planned {
        /// Tasks to run.
        to_run: usize,
        /// Tasks already recorded.
        skipped: usize,
    },
    /// A task started.
    Started {
        /// Its ID.
        task: String,
    },
    /// A task is recorded.
    Finished {
        /// Its record.
        record: Box<TaskRecord>,
        /// Tasks recorded so far in this run.
        done: usize,
        /// Tasks this run will record.
        total: usize,
        /// Running count of `Process` true over every recorded task of the
        /// selection (including resumed ones).
        process: usize,
        /// Running count of `Result` true, likewise.
        result: usize,
        /// How many recorded tasks those counts are over.
        recorded: usize,
    },
}

/// What a run gave.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The report over every recorded task of the selection.
    pub report: Report,
    /// Where it was written.
    pub files: ReportFiles,
    /// The results file.
    pub results: PathBuf,
    /// Tasks run (or graded) now.
    pub ran: usize,
    /// Tasks skipped because they were recorded.
    pub skipped: usize,
    /// The run was stopped (see [`Harness::stop_handle`]) before every
    /// task was done.
    pub interrupted: bool,
}

/// Runs and grades GitTaskBench tasks.
///
/// ```no_run
/// use bench_harness::{Harness, HarnessConfig, Models};
///
/// let mut config = HarnessConfig::new("/data/GitTaskBench", "target/gittaskbench");
/// config.jobs = 2;
/// config.resume = true;
/// let spec = bench_harness::ModelSpec {
///     base_url: Some("http://localhost:8000/v1".into()),
///     model: Some("qwen2.5-coder".into()),
///     ..bench_harness::ModelSpec::default()
/// };
/// let models = Models::load(&spec, &mut config.agent, &mut |message| eprintln!("{message}"))?;
/// let harness = Harness::new(config)?;
/// let outcome = harness.run(&models, &|event| eprintln!("{event:?}"))?;
/// println!(
///     "ECR {:.2} %, TPR {:.2} %, report in {}",
///     outcome.report.summary.ecr,
///     outcome.report.summary.tpr,
///     outcome.files.html.display()
/// );
/// # Ok::<(), bench_harness::Error>(())
/// ```
#[derive(Debug)]
pub struct Harness {
    config: HarnessConfig,
    bench: Benchmark,
    grader: Grader,
    stop: Arc<AtomicBool>,
}

impl Harness {
    /// Opens the checkout and prepares the output directory.
    pub fn new(mut config: HarnessConfig) -> Result<Self, Error> {
        let bench = Benchmark::open(&config.root, &config.domains)?;
        config.out_dir = crate::workspace::output_dir(&config.out_dir)?;
        config.jobs = config.jobs.max(1);
        let grader = Grader::new(&bench, config.grading.clone());
        Ok(Harness {
            config,
            bench,
            grader,
            stop: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The checkout.
    pub fn benchmark(&self) -> &Benchmark {
        &self.bench
    }

    /// The configuration (with the output directory made canonical).
    pub fn config(&self) -> &HarnessConfig {
        &self.config
    }

    /// Setting this flag stops the run after the tasks in flight: no new
    /// task starts, and the outcome says it was interrupted.
    pub fn stop_handle(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    /// The results file.
    pub fn results_file(&self) -> PathBuf {
        self.config.out_dir.join("results.jsonl")
    }

    /// Where a task's outputs go in agent mode.
    pub fn outputs_dir(&self, task: &str) -> PathBuf {
        self.config.out_dir.join("outputs").join(task)
    }

    /// Runs the agent on every selected task not yet recorded, grades
    /// each, appends its record, then writes the report.
    pub fn run(
        &self,
        models: &Models,
        observer: &(dyn Fn(&Event) + Sync),
    ) -> Result<RunOutcome, Error> {
        let meta = ReportMeta {
            mode: "agent".into(),
            model: Some(models.name()),
            ..ReportMeta::default()
        };
        self.execute(meta, observer, &|task| self.run_task(task, models))
    }

    /// Grades outputs produced elsewhere: `outputs/<ID>/` for each selected
    /// task. Records have status `graded` and no token counts.
    pub fn grade_only(
        &self,
        outputs: &Path,
        observer: &(dyn Fn(&Event) + Sync),
    ) -> Result<RunOutcome, Error> {
        let outputs = std::fs::canonicalize(outputs).map_err(|source| Error::Io {
            what: "opening the outputs to grade",
            path: outputs.to_path_buf(),
            source,
        })?;
        let meta = ReportMeta {
            mode: "grade-only".into(),
            model: None,
            ..ReportMeta::default()
        };
        self.execute(meta, observer, &|task| {
            let mut record =
                TaskRecord::empty(&task.id, &task.repo, task.domain, RunStatus::Graded);
            let verdict = self.grade_blocking(task, &outputs.join(&task.id));
            apply(&mut record, verdict);
            record
        })
    }

    fn execute(
        &self,
        mut meta: ReportMeta,
        observer: &(dyn Fn(&Event) + Sync),
        one: &(dyn Fn(&BenchTask) -> TaskRecord + Sync),
    ) -> Result<RunOutcome, Error> {
        let selected = self.bench.select(&self.config.selection)?;
        let results: ResultsFile<TaskRecord> = ResultsFile::new(self.results_file());
        if !self.config.resume {
            set_aside(results.path())?;
        }
        let recorded: Vec<TaskRecord> = latest_per_task(&results.load()?)
            .into_iter()
            .filter(|r| selected.iter().any(|t| t.id == r.task))
            .collect();
        let pending: Vec<&BenchTask> = selected
            .iter()
            .copied()
            .filter(|t| !recorded.iter().any(|r| r.task == t.id))
            .collect();
        let skipped = selected.len() - pending.len();
        observer(&Event::Planned {
            to_run: pending.len(),
            skipped,
        });
        tracing::info!(
            to_run = pending.len(),
            skipped,
            jobs = self.config.jobs,
            "starting GitTaskBench run"
        );

        struct Tally {
            done: usize,
            process: usize,
            result: usize,
            recorded: usize,
        }
        let mut tally = Tally {
            done: 0,
            process: recorded.iter().filter(|r| r.process).count(),
            result: recorded.iter().filter(|r| r.result).count(),
            recorded: recorded.len(),
        };
        let total = pending.len();
        for_each_parallel(
            &pending,
            self.config.jobs,
            &self.stop,
            |task| {
                observer(&Event::Started {
                    task: task.id.clone(),
                });
                one(task)
            },
            |_, record| {
                // Without a results file the run cannot keep its promise;
                // the pool stops starting tasks.
                results.append(&record).inspect_err(|e| {
                    tracing::error!(error = %e, "cannot record a task; stopping");
                })?;
                tally.done += 1;
                tally.recorded += 1;
                tally.process += usize::from(record.process);
                tally.result += usize::from(record.result);
                observer(&Event::Finished {
                    record: Box::new(record),
                    done: tally.done,
                    total,
                    process: tally.process,
                    result: tally.result,
                    recorded: tally.recorded,
                });
                Ok(())
            },
        )?;
        let all: Vec<TaskRecord> = results
            .load()?
            .into_iter()
            .filter(|r| selected.iter().any(|t| t.id == r.task))
            .collect();
        meta.selection = self.config.selection.describe();
        meta.benchmark_tasks = self.bench.tasks().len();
        meta.root = self.bench.root().to_path_buf();
        meta.generated_unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let report = Report::new(meta, &all);
        let files = report.write(&self.config.out_dir)?;
        Ok(RunOutcome {
            report,
            files,
            results: results.path().to_path_buf(),
            ran: tally.done,
            skipped,
            interrupted: tally.done < total,
        })
    }

    /// One task in agent mode: workspace, agent (in its own runtime, with
    /// panics caught and a hard time limit), grading, cleanup.
    fn run_task(&self, task: &BenchTask, models: &Models) -> TaskRecord {
        let mut record = TaskRecord::empty(&task.id, &task.repo, task.domain, RunStatus::Error);
        if let Err(problem) = &task.info {
            record.status = RunStatus::Invalid;
            record.comments = format!("task_info.yaml: {problem}");
            return record;
        }
        let outputs = self.outputs_dir(&task.id);
        let workspace = self.config.out_dir.join("work").join(&task.id);
        let started = Instant::now();
        let prepared = remove_dir(&outputs)
            .and_then(|()| prepare_workspace(&self.bench, task, &workspace, &outputs));
        let spec = match prepared {
            Ok(spec) => spec,
            Err(e) => {
                record.status = RunStatus::Invalid;
                record.comments = format!("cannot set up the task: {e}");
                record.message = Some(e.to_string());
                return record;
            }
        };
        let trajectory_path = self
            .config
            .out_dir
            .join("trajectories")
            .join(format!("{}.jsonl", task.id));
        record.trajectory = Some(trajectory_path.clone());
        let agent_run = std::panic::catch_unwind(AssertUnwindSafe(|| {
            self.run_agent(task, &spec, models, &trajectory_path)
        }));
        match agent_run {
            Ok(Ok((summary, environment))) => {
                record.environment = environment;
                record.status = summary.status.into();
                record.turns = summary.turns;
                record.prompt_tokens = summary.prompt_tokens;
                record.completion_tokens = summary.completion_tokens;
                record.cost = summary.cost;
                record.wall_ms = summary.wall_ms;
                record.message = summary.message;
            }
            Ok(Err((status, message))) => {
                record.status = status;
                record.message = Some(message);
            }
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_else(|| "unknown panic".to_owned());
                tracing::error!(task = %task.id, %message, "the agent crashed");
                record.status = RunStatus::Crashed;
                record.message = Some(format!("the agent panicked: {message}"));
            }
        }
        if record.wall_ms == 0 {
            record.wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        }
        // Outputs are graded whatever stopped the agent, as the benchmark
        // grades any agent's outputs; the status says how the run ended.
        let verdict = self.grade_blocking(task, &outputs);
        apply(&mut record, verdict);
        if !self.config.keep_workspaces
            && let Err(e) = remove_dir(&workspace)
        {
            tracing::warn!(task = %task.id, error = %e, "cannot remove the workspace");
        }
        record
    }

    /// Runs the agent on a fresh current-thread runtime. `Err` carries the
    /// status and message of a run that produced no summary.
    fn run_agent(
        &self,
        task: &BenchTask,
        spec: &TaskSpec,
        models: &Models,
        trajectory_path: &Path,
    ) -> Result<(agent::Summary, Option<EnvironmentSummary>), (RunStatus, String)> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| (RunStatus::Error, format!("cannot start a runtime: {e}")))?;
        let context = TaskContext { task, spec };
        let model = models
            .for_task(&context)
            .map_err(|e| (RunStatus::Error, format!("model: {e}")))?;
        let mut trajectory =
            Trajectory::to_file(trajectory_path).map_err(|e| (RunStatus::Error, e.to_string()))?;
        let mut config = self.config.agent.clone();
        config.budgets.timeout = Some(self.config.timeout_per_task);
        let hard_limit = self.config.timeout_per_task + HARD_STOP_GRACE;
        if let (Some(cache), Some(repo)) = (&self.config.environments, spec.repositories.first()) {
            let request = environment_request(&repo.path, cache, &self.config);
            let report = runtime
                .block_on(agent::environment::prepare_environment(&request))
                .map_err(|e| {
                    (
                        RunStatus::Error,
                        format!("cannot prepare the environment: {e}"),
                    )
                })?;
            tracing::info!(task = %task.id, summary = %report.summary(), seconds = report.seconds, "environment");
            config.environment = Some(report);
        }
        let environment = config.environment.as_ref().map(EnvironmentSummary::of);
        tracing::info!(task = %task.id, "running the agent");
        runtime.block_on(async {
            let mut progress = |_: &agent::Progress| {};
            let run = agent::run(
                model.as_ref(),
                spec,
                &config,
                &mut trajectory,
                &mut progress,
            );
            match tokio::time::timeout(hard_limit, run).await {
                Ok(Ok(summary)) => Ok((summary, environment)),
                Ok(Err(e)) => Err((RunStatus::Error, e.to_string())),
                Err(_) => Err((
                    RunStatus::Timeout,
                    format!(
                        "the agent did not stop within {} s; abandoned",
                        hard_limit.as_secs()
                    ),
                )),
            }
        })
    }

    /// Grades on a fresh current-thread runtime, catching panics.
    fn grade_blocking(&self, task: &BenchTask, outputs: &Path) -> Verdict {
        let work = self.config.out_dir.join("grading").join(&task.id);
        let graded = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start a runtime: {e}"))?;
            Ok::<Verdict, String>(runtime.block_on(self.grader.grade(task, outputs, &work)))
        }));
        let failed = |comments: String| Verdict {
            process: false,
            result: false,
            comments,
            output: None,
        };
        match graded {
            Ok(Ok(verdict)) => verdict,
            Ok(Err(message)) => failed(message),
            Err(_) => failed("grading panicked".into()),
        }
    }
}

fn apply(record: &mut TaskRecord, verdict: Verdict) {
    record.process = verdict.process;
    record.result = verdict.result;
    record.comments = verdict.comments;
    record.output = verdict.output;
}
