//! Dynamic verification of a generated web service (DeepCode, seed 004
//! section 3.3.2; RepoGenesis's deployment check, seed 003): install the
//! repository's dependencies in a virtualenv ([`install`]), start the
//! service with its `start.sh`, call each required endpoint with example
//! requests and compare status codes and top-level JSON keys, run the
//! repository's tests against the running service, stop every process it
//! started, and report what was seen ([`probe`], [`ProbeReport`]).
//!
//! ```no_run
//! use std::path::Path;
//! use agent::generate::probe::{self, ProbePlan, ProbeRequest};
//! use repo_graph::HttpMethod;
//! use sandbox::{Sandbox, SandboxConfig};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let repo = Path::new("/tmp/generated");
//! let sandbox = Sandbox::new(SandboxConfig::builder(repo).package_registry(true).build()?).await?;
//! let (env, installed) = probe::install(&sandbox, repo, &repo.join(".repo-agent/venv"), true).await?;
//! assert!(installed.ok, "{}", installed.log_tail);
//! let plan = ProbePlan::new(8080, vec![ProbeRequest {
//!     method: HttpMethod::Post,
//!     path: "/echo".into(),
//!     body: Some(serde_json::json!({"text": "hi"})),
//!     expect_status: vec![200],
//!     expect_keys: vec!["echo".into()],
//!     label: "POST /echo (valid)".into(),
//! }]);
//! let report = probe::probe(&sandbox, repo, &env, &plan).await?;
//! for line in report.failures() {
//!     println!("{line}");
//! }
//! # Ok(())
//! # }
//! ```
//!
//! The work happens in one sandbox call, the sandbox's service session
//! ([`Sandbox::run_service`]): it starts `start.sh`, waits for the port,
//! makes the requests, runs the repository's tests with the virtualenv's
//! interpreter (pytest in-process, the repository appended to `sys.path`,
//! no cache), stops everything, and reports what it observed (statuses,
//! body excerpts, top-level keys, test counts, log tails) without passing
//! through a file the service could write. This module judges the
//! observations against the expectations, so that every verdict and its
//! wording is Rust, tested without a service. What outlived the service (a
//! daemon that left its process group) is killed and named in
//! [`ProbeReport::leftovers`].
//!
//! The repository's tests are its own, run in its own environment: they
//! are evidence for the repair loop, not a score a repository could not
//! influence (for that, see the RepoGenesis harness's golden tests).
//!
//! The sandbox decides what the service may touch. Its working directory
//! should be the repository (or hold it), and the virtualenv must be
//! readable in it. In namespace
//! isolation without network the service, the driver and the tests share
//! a private loopback, so [`Readiness::PortBusy`] only happens in process
//! isolation, where ports are the host's.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use repo_graph::HttpMethod;
use sandbox::{
    DEFAULT_PATH, HttpObservation, HttpRequest, JsonKind, PythonEnv, Sandbox, SandboxError,
    ServiceCommand, ServicePlan, ServiceReport, TestRun as SessionTests,
};
use serde::{Deserialize, Serialize};

/// How the start went: the sandbox's one vocabulary for every caller.
pub use sandbox::Readiness;

/// Where the probe keeps its files (the tests' empty ini), relative to the
/// repository (`.repo-agent/` is the agent's own: repo-graph's walk skips
/// it, and blueprints may not plan files in it).
pub const PROBE_DIR: &str = ".repo-agent/probe";

/// Default wait for the service to accept a connection.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default limit for one request, connection to last byte.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Default limit for the repository's test run.
pub const DEFAULT_TEST_TIMEOUT: Duration = Duration::from_secs(300);
/// Most requests one plan may hold: a blueprint has a few per endpoint,
/// and the sandbox call's time limit grows with each.
pub const MAX_REQUESTS: usize = sandbox::MAX_REQUESTS;

/// Time the service gets between SIGTERM and SIGKILL when it is stopped.
const STOP_GRACE: Duration = Duration::from_secs(1);
/// Bytes of log kept in [`InstallOutcome::log_tail`] and [`TestRun::log_tail`].
const LOG_TAIL: usize = 4096;
/// Characters of a log or body quoted in one [`ProbeReport::failures`] line.
const EVIDENCE: usize = 400;

/// One example request derived from the blueprint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeRequest {
    /// The method; [`HttpMethod::Any`] is sent as `GET`.
    pub method: HttpMethod,
    /// The concrete path, which may include `?query`.
    pub path: String,
    /// A JSON body, sent with `Content-Type: application/json`.
    pub body: Option<serde_json::Value>,
    /// Statuses that pass (any of them); empty means any 2xx.
    pub expect_status: Vec<u16>,
    /// Top-level keys the response's JSON object must have.
    pub expect_keys: Vec<String>,
    /// How reports name it, e.g. `POST /echo (valid)`.
    pub label: String,
}

/// What [`probe`] does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbePlan {
    /// The port the service must listen on (given to it as `PORT`).
    pub port: u16,
    /// The start script, relative to the repository, run with `bash`.
    pub start_script: String,
    /// The requests, in order.
    pub requests: Vec<ProbeRequest>,
    /// Run `pytest` on `tests/` when the repository has that directory.
    pub run_tests: bool,
    /// How long to wait for the port to accept a connection.
    pub startup_timeout: Duration,
    /// Limit for each request.
    pub request_timeout: Duration,
    /// Limit for the test run.
    pub test_timeout: Duration,
}

impl ProbePlan {
    /// A plan for a service on `port`: `start.sh`, tests on, and the
    /// `DEFAULT_*` timeouts (30 s to start, 10 s a request, 300 s of tests).
    pub fn new(port: u16, requests: Vec<ProbeRequest>) -> ProbePlan {
        ProbePlan {
            port,
            start_script: "start.sh".to_owned(),
            requests,
            run_tests: true,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            test_timeout: DEFAULT_TEST_TIMEOUT,
        }
    }

    /// The most the probe's sandbox call may take: the startup wait, each
    /// request's limit (with a second of slack for its connection), the
    /// tests, the stop and the supervisor's own time.
    pub fn call_limit(&self) -> Duration {
        let service = ServiceCommand {
            argv: Vec::new(),
            cwd: PathBuf::new(),
            env: Vec::new(),
        };
        let tests = self.run_tests.then(|| SessionTests::Command {
            argv: vec!["true".into()],
            cwd: PathBuf::new(),
            env: Vec::new(),
            timeout: self.test_timeout,
        });
        self.session(Some(service), tests).call_limit()
    }

    /// The sandbox's session for this plan: the requests as data (their
    /// expectations stay here), the tests in the given interpreter.
    fn session(&self, service: Option<ServiceCommand>, tests: Option<SessionTests>) -> ServicePlan {
        let mut plan = ServicePlan::new(service, self.port);
        plan.startup_timeout = self.startup_timeout;
        plan.wait_for_daemons = true;
        plan.stop_grace = STOP_GRACE;
        plan.requests = self
            .requests
            .iter()
            .map(|r| HttpRequest {
                method: match r.method {
                    HttpMethod::Any => "GET".to_owned(),
                    other => other.as_str().to_owned(),
                },
                path: r.path.clone(),
                body: r.body.as_ref().map(serde_json::Value::to_string),
                timeout: self.request_timeout,
            })
            .collect();
        plan.tests = tests;
        plan
    }
}

/// How installing the dependencies went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallOutcome {
    /// Every install that ran succeeded.
    pub ok: bool,
    /// The repository has no `requirements.txt`, so none of its own
    /// dependencies were installed.
    pub skipped: bool,
    /// The end of pip's output, each step headed by its command.
    pub log_tail: String,
    /// Time spent, virtualenv included.
    pub ms: u64,
}

/// One request's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeResponse {
    /// The request's label.
    pub label: String,
    /// The status, when a response came.
    pub status: Option<u16>,
    /// The start of the body (at most 600 characters).
    pub body_excerpt: String,
    /// Expected top-level keys the response lacks (all of them when the
    /// body is not a JSON object).
    pub missing_keys: Vec<String>,
    /// Status and keys as expected.
    pub passed: bool,
    /// Why it failed, naming what was expected and what came.
    pub problem: Option<String>,
}

/// How the repository's tests went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestRun {
    /// pytest's exit code; `None` when it was stopped at its time limit or
    /// by a signal.
    pub exit_code: Option<i32>,
    /// Tests that passed.
    pub passed: u32,
    /// Tests that failed.
    pub failed: u32,
    /// Tests that errored (collection and fixture errors included).
    pub errors: u32,
    /// Tests skipped.
    pub skipped: u32,
    /// The run was stopped at [`ProbePlan::test_timeout`].
    pub timed_out: bool,
    /// The end of pytest's output.
    pub log_tail: String,
}

impl TestRun {
    /// pytest finished by itself, with every collected test passing.
    pub fn passed(&self) -> bool {
        !self.timed_out && self.exit_code == Some(0) && self.failed == 0 && self.errors == 0
    }
}

/// Everything a [`probe`] saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// The port probed.
    pub port: u16,
    /// The start script run.
    pub start_script: String,
    /// How the start went.
    pub readiness: Readiness,
    /// The start script stayed in the foreground: false when it returned
    /// while a process it started lived on (the benchmark runs `start.sh`
    /// and expects it to hold the service).
    pub foreground: bool,
    /// The end of the service's output (stdout and stderr, 4 KiB).
    pub service_log_tail: String,
    /// One per request, in the plan's order; empty when the service never
    /// listened.
    pub responses: Vec<ProbeResponse>,
    /// The test run, when there was one.
    pub tests: Option<TestRun>,
    /// Processes (`pid command`) that outlived the service (they ran after
    /// the start script returned, or survived its process group's kill);
    /// each was killed.
    pub leftovers: Vec<String>,
    /// The driver's own failure (a traceback's end), when it had one.
    pub driver_error: Option<String>,
    /// Time spent.
    pub ms: u64,
}

impl ProbeReport {
    /// The service started in the foreground, answered every request as
    /// expected, passed its tests and left nothing running.
    pub fn passed(&self) -> bool {
        self.failures().is_empty()
    }

    /// One line per failure, each with its evidence: what failed and the
    /// observed status, body or log.
    pub fn failures(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let script = &self.start_script;
        let port = self.port;
        let log = || evidence(&self.service_log_tail);
        match &self.readiness {
            Readiness::Listening { .. } | Readiness::Health { .. } => {}
            Readiness::Exited { code, after_ms } => {
                let how = code.map_or_else(
                    || "was killed by a signal".to_owned(),
                    |c| format!("exited with code {c}"),
                );
                lines.push(format!(
                    "{script} {how} after {} without listening on port {port}; service log: {}",
                    seconds(*after_ms),
                    log()
                ));
            }
            Readiness::AliveNotListening { .. } | Readiness::NeverListened { .. } => {
                lines.push(format!(
                    "the service did not listen on port {port} within the startup timeout; service log: {}",
                    log()
                ));
            }
            Readiness::PortBusy => lines.push(format!(
                "port {port} already accepted connections before {script} ran, so nothing was \
                 started, called or tested; free the port or pick another"
            )),
            Readiness::NothingToStart => {
                lines.push(format!(
                    "there is no {script}: the service cannot be started"
                ));
            }
            Readiness::NotReported => lines.push(
                "the service could not be observed: the probe's supervisor left no report"
                    .to_owned(),
            ),
        }
        if !self.foreground {
            lines.push(format!(
                "{script} returned while the service kept running in the background; it must \
                 run the service in the foreground (`exec python app.py`, without `&`, `nohup` \
                 or a daemon mode)"
            ));
        }
        for response in self.responses.iter().filter(|r| !r.passed) {
            let problem = response.problem.as_deref().unwrap_or("failed");
            let body = if response.body_excerpt.is_empty() {
                "(empty)".to_owned()
            } else {
                evidence(&response.body_excerpt)
            };
            lines.push(format!("{}: {problem}; body: {body}", response.label));
        }
        if let Some(tests) = self.tests.as_ref().filter(|t| !t.passed()) {
            let counts = format!(
                "{} passed, {} failed, {} errors",
                tests.passed, tests.failed, tests.errors
            );
            let how = match tests.exit_code {
                _ if tests.timed_out => "stopped at their time limit".to_owned(),
                Some(5) => "pytest collected no tests (exit code 5)".to_owned(),
                Some(code) => format!("pytest exit code {code}"),
                None => "pytest was killed by a signal".to_owned(),
            };
            lines.push(format!(
                "tests: {counts} ({how}); log: {}",
                evidence(&tests.log_tail)
            ));
        }
        if !self.leftovers.is_empty() {
            lines.push(format!(
                "processes outlived the service and were killed: {}",
                self.leftovers.join("; ")
            ));
        }
        if let Some(error) = &self.driver_error {
            lines.push(format!("the probe driver failed: {}", evidence(error)));
        }
        lines
    }
}

/// Why a probe could not be carried out. A service that fails is a
/// [`ProbeReport`], not an error.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The plan cannot be run.
    #[error("probe plan: {0}")]
    Plan(String),
    /// The sandbox could not run the virtualenv, pip or the driver.
    #[error("sandbox: {0}")]
    Sandbox(#[from] SandboxError),
    /// The probe directory or plan could not be written.
    #[error("cannot prepare `{}`: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
}

/// Creates (or reuses) the virtualenv at `venv_dir` and installs the
/// repository's `requirements.txt` in it; with `with_tests` and a `tests/`
/// directory, also `tests/requirements.txt` when there is one, and
/// `pytest`. A virtualenv whose interpreter is gone (Python was upgraded)
/// is made again. Both paths are taken from the sandbox's working
/// directory when relative; `venv_dir` must be writable in the sandbox.
///
/// A failed pip is an [`InstallOutcome`] with `ok` false and the end of
/// pip's output: whether to go on is the caller's choice.
///
/// # Errors
///
/// [`ProbeError::Sandbox`] when the virtualenv cannot be made or pip cannot
/// be run at all; [`ProbeError::Io`] when a stale virtualenv cannot be
/// removed.
pub async fn install(
    sandbox: &Sandbox,
    repo: &Path,
    venv_dir: &Path,
    with_tests: bool,
) -> Result<(PythonEnv, InstallOutcome), ProbeError> {
    let started = Instant::now();
    let repo = absolute(sandbox, repo);
    let venv_dir = absolute(sandbox, venv_dir);
    let env = open_or_create_venv(sandbox, &venv_dir).await?;
    let mut steps: Vec<Vec<String>> = Vec::new();
    let requirements = repo.join("requirements.txt");
    let skipped = !requirements.is_file();
    if !skipped {
        steps.push(vec!["-r".into(), requirements.display().to_string()]);
    }
    if with_tests && repo.join("tests").is_dir() {
        let test_requirements = repo.join("tests").join("requirements.txt");
        if test_requirements.is_file() {
            steps.push(vec!["-r".into(), test_requirements.display().to_string()]);
        }
        steps.push(vec!["pytest".into()]);
    }
    let mut ok = true;
    let mut log = String::new();
    for args in &steps {
        log.push_str(&format!("$ pip install {}\n", args.join(" ")));
        match sandbox.pip_install(&env, args).await {
            Ok(result) => log.push_str(&tail(&result.combined_output(), LOG_TAIL)),
            Err(SandboxError::PipFailed { status, output }) => {
                ok = false;
                log.push_str(&format!(
                    "pip failed ({status}):\n{}",
                    tail(&output, LOG_TAIL)
                ));
            }
            Err(other) => return Err(other.into()),
        }
        log.push('\n');
    }
    let outcome = InstallOutcome {
        ok,
        skipped,
        log_tail: tail(&log, LOG_TAIL),
        ms: millis(started.elapsed()),
    };
    Ok((env, outcome))
}

/// Third-party imports looked up on the registry at most per round.
pub const MAX_UNKNOWN_LOOKUPS: usize = 5;

/// What the registry said of one import nobody had pinned or planned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegistryLookup {
    /// The import's top-level name.
    pub import: String,
    /// `name==version` when a distribution of that name installed and the
    /// import then worked; `None` otherwise.
    pub requirement: Option<String>,
    /// Why not, in a line (pip's last line, or the import's error).
    pub reason: String,
}

/// Tries each of `imports` (at most [`MAX_UNKNOWN_LOOKUPS`]) as a
/// distribution of the same name in `env`: installed, then imported, then
/// pinned at the version that came. The generated code named them and no
/// table knew them; left out of `requirements.txt` they stop the service
/// at start (RepoGenesis Multilingual, run 3: `googletrans`), and a wrong
/// line would break the whole install. `pip_args` go before the name (a
/// local index for tests). A name that is not a plain identifier is never
/// passed to pip.
///
/// # Errors
///
/// The sandbox's own failures; a name pip or Python refuses is a
/// [`RegistryLookup`] without a requirement.
pub async fn look_up_unknown(
    sandbox: &Sandbox,
    env: &PythonEnv,
    imports: &[String],
    pip_args: &[String],
) -> Result<Vec<RegistryLookup>, ProbeError> {
    let mut found = Vec::new();
    for import in imports.iter().take(MAX_UNKNOWN_LOOKUPS) {
        let plain = import
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && import
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !plain {
            found.push(RegistryLookup {
                import: import.clone(),
                requirement: None,
                reason: "not a plain module name".into(),
            });
            continue;
        }
        let mut args: Vec<String> = pip_args.to_vec();
        args.push(import.clone());
        let reason = match sandbox.pip_install(env, &args).await {
            Ok(_) => None,
            Err(SandboxError::PipFailed { output, .. }) => Some(last_line(&output)),
            Err(other) => return Err(other.into()),
        };
        let lookup = match reason {
            Some(reason) => RegistryLookup {
                import: import.clone(),
                requirement: None,
                reason,
            },
            None => {
                // The distribution of that name must provide the module,
                // and say its version.
                let code = format!(
                    "import importlib.metadata as m\nimport {import}\nprint(m.version({import:?}))\n"
                );
                let result = sandbox
                    .run_python_in(env, sandbox::PythonScript::code(code), &[] as &[&str])
                    .await?;
                let version = result.stdout.to_string().trim().to_owned();
                let pinnable = result.success()
                    && !version.is_empty()
                    && version
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || ".+!-_".contains(c));
                RegistryLookup {
                    import: import.clone(),
                    requirement: pinnable.then(|| format!("{import}=={version}")),
                    reason: if pinnable {
                        String::new()
                    } else {
                        last_line(&result.combined_output())
                    },
                }
            }
        };
        tracing::info!(import = %lookup.import, requirement = ?lookup.requirement, reason = %lookup.reason, "an unknown import looked up on the registry");
        found.push(lookup);
    }
    Ok(found)
}

/// The last non-empty line of `text`, for a one-line reason.
fn last_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("no output")
        .chars()
        .take(200)
        .collect()
}

async fn open_or_create_venv(sandbox: &Sandbox, dir: &Path) -> Result<PythonEnv, ProbeError> {
    if let Ok(env) = PythonEnv::open(dir) {
        // `open` checks the link, not its target: follow it.
        if std::fs::metadata(env.python()).is_ok() {
            return Ok(env);
        }
        // Only what looks like a virtualenv is removed, never a directory
        // the caller pointed at by mistake.
        if dir.join("pyvenv.cfg").is_file() {
            tracing::info!(dir = %dir.display(), "the virtualenv's interpreter is gone; making it again");
            std::fs::remove_dir_all(dir).map_err(|source| ProbeError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
    }
    Ok(sandbox.create_venv(dir).await?)
}

/// Starts the service of `repo` with the virtualenv `env`, calls it, runs
/// its tests and stops it, as `plan` says (see the module documentation).
///
/// # Errors
///
/// [`ProbeError::Plan`] for a start script outside the repository, port 0
/// or more than [`MAX_REQUESTS`] requests; [`ProbeError::Io`] when the
/// probe directory cannot be prepared; [`ProbeError::Sandbox`] when the
/// session cannot be run. A supervisor that left no report is a report
/// ([`Readiness::NotReported`]).
pub async fn probe(
    sandbox: &Sandbox,
    repo: &Path,
    env: &PythonEnv,
    plan: &ProbePlan,
) -> Result<ProbeReport, ProbeError> {
    let started = Instant::now();
    check_plan(plan)?;
    let repo = absolute(sandbox, repo);
    let mut path = env.bin_dir().into_os_string();
    path.push(":");
    path.push(DEFAULT_PATH);
    let env_vars = vec![
        ("VIRTUAL_ENV".to_owned(), env.dir().display().to_string()),
        ("PATH".to_owned(), path.to_string_lossy().into_owned()),
        ("PYTHONUNBUFFERED".to_owned(), "1".to_owned()),
        // The verification should leave the generated repository as it was.
        ("PYTHONDONTWRITEBYTECODE".to_owned(), "1".to_owned()),
    ];
    let service = repo
        .join(&plan.start_script)
        .is_file()
        .then(|| ServiceCommand {
            argv: vec!["bash".into(), plan.start_script.clone()],
            cwd: repo.clone(),
            env: env_vars.clone(),
        });
    let tests = if plan.run_tests && repo.join("tests").is_dir() {
        let work = prepare_work_dir(&repo)?;
        let inifile = work.join("pytest.ini");
        write_no_follow(&inifile, b"[pytest]\n")?;
        Some(SessionTests::Pytest {
            interpreter: env.python(),
            test_paths: vec![repo.join("tests")],
            rootdir: repo.clone(),
            inifile,
            sys_path_extra: vec![repo.clone()],
            args: vec!["-q".into()],
            cwd: repo.clone(),
            env: env_vars,
            timeout: plan.test_timeout,
        })
    } else {
        None
    };
    let session = sandbox.run_service(&plan.session(service, tests)).await?;
    Ok(report(plan, session, millis(started.elapsed())))
}

fn check_plan(plan: &ProbePlan) -> Result<(), ProbeError> {
    if plan.port == 0 {
        return Err(ProbeError::Plan("port 0 names no service".into()));
    }
    if plan.requests.len() > MAX_REQUESTS {
        return Err(ProbeError::Plan(format!(
            "{} requests, more than the {MAX_REQUESTS} a probe sends",
            plan.requests.len()
        )));
    }
    let script = Path::new(&plan.start_script);
    let inside = !plan.start_script.is_empty()
        && script.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        });
    if !inside {
        return Err(ProbeError::Plan(format!(
            "start script `{}` must be a relative path inside the repository",
            plan.start_script
        )));
    }
    Ok(())
}

/// `<repo>/.repo-agent/probe`, made if needed. Each level must be a real
/// directory: the repository is model-written, and a planted link would
/// send our writes elsewhere.
fn prepare_work_dir(repo: &Path) -> Result<PathBuf, ProbeError> {
    let mut dir = repo.to_path_buf();
    for part in PROBE_DIR.split('/') {
        dir.push(part);
        let io = |source| ProbeError::Io {
            path: dir.clone(),
            source,
        };
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(e)),
        }
        let meta = std::fs::symlink_metadata(&dir).map_err(io)?;
        if !meta.is_dir() {
            return Err(io(std::io::Error::other(
                "not a directory (a link or a file)",
            )));
        }
    }
    Ok(dir)
}

/// Writes `bytes` to `path`, refusing to follow a link put in its place.
fn write_no_follow(path: &Path, bytes: &[u8]) -> Result<(), ProbeError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let io = |source| ProbeError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .map_err(io)?;
    file.write_all(bytes).map_err(io)
}

fn absolute(sandbox: &Sandbox, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        sandbox.config().working_dir().join(path)
    }
}

fn report(plan: &ProbePlan, session: ServiceReport, ms: u64) -> ProbeReport {
    let responses = if session.readiness.answered() {
        plan.requests
            .iter()
            .enumerate()
            .map(|(i, request)| judge(request, session.observations.get(i)))
            .collect()
    } else {
        Vec::new()
    };
    let tests = session.tests.map(|t| {
        let counts = t.scored();
        TestRun {
            exit_code: t.exit_code,
            passed: counts.passed,
            failed: counts.failed,
            errors: counts.errors,
            skipped: counts.skipped,
            timed_out: t.timed_out,
            log_tail: tail(&t.console_tail, LOG_TAIL),
        }
    });
    ProbeReport {
        port: plan.port,
        start_script: plan.start_script.clone(),
        readiness: session.readiness,
        foreground: session.foreground,
        service_log_tail: session.service_log_tail,
        responses,
        tests,
        leftovers: session.leftovers,
        driver_error: session.supervisor_error,
        ms,
    }
}

/// Compares one observation with its request's expectations.
fn judge(request: &ProbeRequest, seen: Option<&HttpObservation>) -> ProbeResponse {
    let mut response = ProbeResponse {
        label: request.label.clone(),
        status: None,
        body_excerpt: String::new(),
        missing_keys: Vec::new(),
        passed: false,
        problem: None,
    };
    let Some(seen) = seen else {
        response.problem = Some("not sent: the probe stopped before this request".into());
        return response;
    };
    response.status = seen.status;
    response.body_excerpt = seen.body_excerpt.clone();
    let mut problems = Vec::new();
    let Some(status) = seen.status else {
        let why = seen.error.as_deref().unwrap_or("the connection closed");
        response.problem = Some(format!("no response: {why}"));
        return response;
    };
    if !status_expected(&request.expect_status, status) {
        problems.push(format!(
            "expected {}, got {status}",
            expected_statuses(&request.expect_status)
        ));
    }
    if let Some(error) = &seen.error {
        problems.push(error.clone());
    }
    if !request.expect_keys.is_empty() {
        if seen.json == JsonKind::Object {
            response.missing_keys = request
                .expect_keys
                .iter()
                .filter(|k| !seen.keys.contains(k))
                .cloned()
                .collect();
            if !response.missing_keys.is_empty() {
                problems.push(format!(
                    "missing key(s) {} (it has {})",
                    quoted(&response.missing_keys),
                    if seen.keys.is_empty() {
                        "none".to_owned()
                    } else {
                        quoted(&seen.keys)
                    }
                ));
            }
        } else {
            response.missing_keys = request.expect_keys.clone();
            problems.push(format!(
                "expected a JSON object with key(s) {}, got {}",
                quoted(&request.expect_keys),
                seen.json.describe()
            ));
        }
    }
    response.passed = problems.is_empty();
    if !problems.is_empty() {
        response.problem = Some(problems.join("; "));
    }
    response
}

fn status_expected(expected: &[u16], status: u16) -> bool {
    if expected.is_empty() {
        (200..300).contains(&status)
    } else {
        expected.contains(&status)
    }
}

fn expected_statuses(expected: &[u16]) -> String {
    match expected {
        [] => "a 2xx status".to_owned(),
        [one] => format!("status {one}"),
        many => {
            let all: Vec<String> = many.iter().map(u16::to_string).collect();
            format!("one of statuses {}", all.join(", "))
        }
    }
}

/// `"a", "b"`, at most 12 of them.
fn quoted(keys: &[String]) -> String {
    const SHOWN: usize = 12;
    let mut out: Vec<String> = keys.iter().take(SHOWN).map(|k| format!("{k:?}")).collect();
    if keys.len() > SHOWN {
        out.push(format!("and {} more", keys.len() - SHOWN));
    }
    out.join(", ")
}

/// A log or body quoted on one line: its end (where a traceback's error
/// is), newlines shown as ` | `.
fn evidence(text: &str) -> String {
    let one_line = text.trim().replace("\r\n", "\n").replace('\n', " | ");
    if one_line.is_empty() {
        "(empty)".to_owned()
    } else {
        tail(&one_line, EVIDENCE)
    }
}

fn seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

use crate::run::millis;

use sandbox::text_tail as tail;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn request(expect_status: Vec<u16>, expect_keys: &[&str]) -> ProbeRequest {
        ProbeRequest {
            method: HttpMethod::Get,
            path: "/items/1".into(),
            body: None,
            expect_status,
            expect_keys: expect_keys.iter().map(|k| (*k).to_owned()).collect(),
            label: "GET /items/1 (success)".into(),
        }
    }

    fn seen(status: Option<u16>, json: JsonKind, keys: &[&str]) -> HttpObservation {
        HttpObservation {
            status,
            body_excerpt: r#"{"id": 1}"#.into(),
            json,
            keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            error: None,
        }
    }

    fn listening_report() -> ProbeReport {
        ProbeReport {
            port: 8080,
            start_script: "start.sh".into(),
            readiness: Readiness::Listening { after_ms: 300 },
            foreground: true,
            service_log_tail: String::new(),
            responses: Vec::new(),
            tests: None,
            leftovers: Vec::new(),
            driver_error: None,
            ms: 1000,
        }
    }

    fn session() -> ServiceReport {
        ServiceReport {
            readiness: Readiness::Listening { after_ms: 412 },
            foreground: true,
            survivors: Vec::new(),
            leftovers: Vec::new(),
            service_log_tail: "Serving on 8080\n".into(),
            observations: vec![
                seen(Some(200), JsonKind::Object, &["id"]),
                HttpObservation {
                    status: None,
                    body_excerpt: String::new(),
                    json: JsonKind::None,
                    keys: Vec::new(),
                    error: Some("ConnectionResetError: reset".into()),
                },
            ],
            tests: Some(sandbox::TestReport {
                exit_code: Some(1),
                timed_out: false,
                console_tail: "FAILED tests/test_app.py::test_x\n1 failed, 2 passed in 0.1s".into(),
                console: Some(sandbox::TestCounts {
                    passed: 2,
                    failed: 1,
                    ..Default::default()
                }),
                junit: None,
                junit_problem: Some("pytest wrote no JUnit report".into()),
                ms: 100,
            }),
            supervisor_error: None,
            call_status: "exit code 0".into(),
            ms: 900,
        }
    }

    #[test]
    fn the_sessions_observations_become_a_judged_report() {
        let mut plan = ProbePlan::new(
            8080,
            vec![request(vec![200], &["id"]), request(vec![], &[])],
        );
        plan.requests.push(request(vec![], &[]));
        let report = report(&plan, session(), 5);
        assert_eq!(report.readiness, Readiness::Listening { after_ms: 412 });
        assert!(report.responses[0].passed, "{:?}", report.responses[0]);
        assert_eq!(
            report.responses[1].problem.as_deref(),
            Some("no response: ConnectionResetError: reset")
        );
        // A request the session never got to is a failure, not a silent pass.
        assert_eq!(
            report.responses[2].problem.as_deref(),
            Some("not sent: the probe stopped before this request")
        );
        // Without a JUnit report the console's passes do not count.
        let tests = report.tests.as_ref().unwrap();
        assert_eq!((tests.passed, tests.failed), (0, 3));
        assert!(!report.passed());
    }

    #[test]
    fn an_unreported_session_is_a_failure_with_its_reason() {
        let plan = ProbePlan::new(8080, vec![request(vec![], &[])]);
        let mut unreported = session();
        unreported.readiness = Readiness::NotReported;
        unreported.tests = None;
        unreported.supervisor_error = Some("the supervisor left no report (killed)".into());
        let report = report(&plan, unreported, 5);
        assert!(report.responses.is_empty());
        assert_eq!(
            report.failures(),
            [
                "the service could not be observed: the probe's supervisor left no report",
                "the probe driver failed: the supervisor left no report (killed)"
            ]
        );
    }

    #[test]
    fn a_wrong_status_names_expected_and_actual() {
        let judged = judge(
            &request(vec![200], &[]),
            Some(&seen(Some(500), JsonKind::Object, &[])),
        );
        assert!(!judged.passed);
        assert_eq!(
            judged.problem.as_deref(),
            Some("expected status 200, got 500")
        );
        let any_2xx = judge(
            &request(vec![], &[]),
            Some(&seen(Some(404), JsonKind::None, &[])),
        );
        assert_eq!(
            any_2xx.problem.as_deref(),
            Some("expected a 2xx status, got 404")
        );
        let several = judge(
            &request(vec![200, 201], &[]),
            Some(&seen(Some(201), JsonKind::None, &[])),
        );
        assert!(several.passed);
        let several = judge(
            &request(vec![200, 201], &[]),
            Some(&seen(Some(400), JsonKind::None, &[])),
        );
        assert_eq!(
            several.problem.as_deref(),
            Some("expected one of statuses 200, 201, got 400")
        );
    }

    #[test]
    fn missing_keys_are_listed_with_what_the_body_has() {
        let judged = judge(
            &request(vec![200], &["id", "name"]),
            Some(&seen(Some(200), JsonKind::Object, &["id", "title"])),
        );
        assert_eq!(judged.missing_keys, ["name"]);
        assert_eq!(
            judged.problem.as_deref(),
            Some(r#"missing key(s) "name" (it has "id", "title")"#)
        );
        let array = judge(
            &request(vec![200], &["id"]),
            Some(&seen(Some(200), JsonKind::Array, &[])),
        );
        assert_eq!(array.missing_keys, ["id"]);
        assert_eq!(
            array.problem.as_deref(),
            Some(r#"expected a JSON object with key(s) "id", got a JSON array"#)
        );
        let both = judge(
            &request(vec![201], &["id"]),
            Some(&seen(Some(200), JsonKind::Object, &[])),
        );
        assert_eq!(
            both.problem.as_deref(),
            Some(r#"expected status 201, got 200; missing key(s) "id" (it has none)"#)
        );
    }

    #[test]
    fn failures_carry_their_evidence() {
        let mut report = listening_report();
        assert!(report.passed());
        assert!(report.failures().is_empty());

        report.readiness = Readiness::Exited {
            code: Some(1),
            after_ms: 250,
        };
        report.service_log_tail =
            "Traceback (most recent call last):\n  File \"app.py\"\nSyntaxError: invalid syntax\n"
                .into();
        assert_eq!(
            report.failures(),
            [
                "start.sh exited with code 1 after 0.2 s without listening on port 8080; service log: \
              Traceback (most recent call last): |   File \"app.py\" | SyntaxError: invalid syntax"
            ]
        );
        report.readiness = Readiness::AliveNotListening { after_ms: 30_000 };
        assert!(report.failures()[0].starts_with("the service did not listen on port 8080"));
        report.readiness = Readiness::NeverListened { after_ms: 30_000 };
        assert!(report.failures()[0].starts_with("the service did not listen on port 8080"));
        report.readiness = Readiness::PortBusy;
        assert!(report.failures()[0].starts_with("port 8080 already accepted connections"));
        report.readiness = Readiness::NothingToStart;
        assert_eq!(
            report.failures(),
            ["there is no start.sh: the service cannot be started"]
        );

        let mut report = listening_report();
        report.foreground = false;
        report.leftovers = vec!["4242 python app.py".into()];
        report.responses.push(judge(
            &request(vec![200], &[]),
            Some(&seen(Some(500), JsonKind::None, &[])),
        ));
        report.tests = Some(TestRun {
            exit_code: Some(1),
            passed: 1,
            failed: 1,
            errors: 0,
            skipped: 0,
            timed_out: false,
            log_tail:
                "FAILED tests/test_app.py::test_items - assert 500 == 200\n1 failed, 1 passed"
                    .into(),
        });
        report.driver_error = Some("Traceback ...\nKeyError: 'port'\n".into());
        let failures = report.failures();
        assert_eq!(failures.len(), 5, "{failures:#?}");
        assert!(
            failures[0]
                .starts_with("start.sh returned while the service kept running in the background")
        );
        assert_eq!(
            failures[1],
            r#"GET /items/1 (success): expected status 200, got 500; body: {"id": 1}"#
        );
        assert_eq!(
            failures[2],
            "tests: 1 passed, 1 failed, 0 errors (pytest exit code 1); log: FAILED \
             tests/test_app.py::test_items - assert 500 == 200 | 1 failed, 1 passed"
        );
        assert_eq!(
            failures[3],
            "processes outlived the service and were killed: 4242 python app.py"
        );
        assert_eq!(
            failures[4],
            "the probe driver failed: Traceback ... | KeyError: 'port'"
        );
        assert!(!report.passed());
    }

    #[test]
    fn evidence_keeps_the_end_of_long_logs() {
        let log = format!("{}\nValueError: the real cause", "noise line\n".repeat(200));
        let line = evidence(&log);
        assert!(line.ends_with("ValueError: the real cause"), "{line}");
        assert!(line.len() <= EVIDENCE + '…'.len_utf8(), "{}", line.len());
    }

    #[test]
    fn plans_are_checked_before_anything_runs() {
        let mut plan = ProbePlan::new(8080, Vec::new());
        assert!(check_plan(&plan).is_ok());
        plan.start_script = "../start.sh".into();
        assert!(matches!(check_plan(&plan), Err(ProbeError::Plan(_))));
        plan.start_script = "/bin/start.sh".into();
        assert!(matches!(check_plan(&plan), Err(ProbeError::Plan(_))));
        plan.start_script = "scripts/start.sh".into();
        assert!(check_plan(&plan).is_ok());
        plan.port = 0;
        assert!(matches!(check_plan(&plan), Err(ProbeError::Plan(_))));
        let plan = ProbePlan::new(8080, vec![request(vec![], &[]); MAX_REQUESTS + 1]);
        assert!(matches!(check_plan(&plan), Err(ProbeError::Plan(_))));
    }

    #[test]
    fn the_call_limit_covers_every_wait() {
        let mut plan = ProbePlan::new(8080, vec![request(vec![], &[]); 3]);
        plan.startup_timeout = Duration::from_secs(2);
        plan.request_timeout = Duration::from_secs(5);
        plan.test_timeout = Duration::from_secs(60);
        let with_tests = plan.call_limit();
        plan.run_tests = false;
        let without = plan.call_limit();
        assert!(with_tests >= without + Duration::from_secs(60));
        assert!(without >= Duration::from_secs(2 + 3 * 6));
        plan.requests.pop();
        assert_eq!(without - plan.call_limit(), Duration::from_secs(6));
    }

    #[test]
    fn the_session_sends_json_bodies_as_text() {
        let mut plan = ProbePlan::new(8080, vec![request(vec![], &[])]);
        plan.requests[0].method = HttpMethod::Any;
        plan.requests[0].body = Some(serde_json::Value::Null);
        let session = plan.session(None, None);
        assert_eq!(session.requests[0].method, "GET");
        assert_eq!(session.requests[0].body.as_deref(), Some("null"));
        assert_eq!(session.requests[0].timeout, plan.request_timeout);
        assert!(session.wait_for_daemons && session.tests.is_none());
    }
}
