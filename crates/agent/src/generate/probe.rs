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
//! The work happens in one sandbox call: `probe.py`, run with the
//! virtualenv's interpreter in the repository, reads a plan and writes what
//! it observed (statuses, body excerpts, top-level keys, test counts, log
//! tails) to `<repo>/.repo-agent/probe/`; this module judges the
//! observations against the expectations, so that every verdict and its
//! wording is Rust, tested without a service. The driver marks everything
//! it starts with a per-run environment variable and, after stopping the
//! service's process group, kills whatever still carries the mark (a
//! daemon that left the group) and names it in [`ProbeReport::leftovers`].
//!
//! The sandbox decides what the service may touch. Its working directory
//! should be the repository (or hold it): the probe directory must be
//! writable in the sandbox, and the virtualenv readable. In namespace
//! isolation without network the service, the driver and the tests share
//! a private loopback, so [`Readiness::PortBusy`] only happens in process
//! isolation, where ports are the host's.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use repo_graph::HttpMethod;
use sandbox::{Command, DEFAULT_PATH, ExecResult, PythonEnv, Sandbox, SandboxError};
use serde::{Deserialize, Serialize};

/// The driver, run with `python -I -c`.
const DRIVER: &str = include_str!("probe.py");

/// Where the driver's plan, results and logs go, relative to the repository
/// (`.repo-agent/` is the agent's own: repo-graph's walk skips it, and
/// blueprints may not plan files in it).
pub const PROBE_DIR: &str = ".repo-agent/probe";

/// Default wait for the service to accept a connection.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default limit for one request, connection to last byte.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Default limit for the repository's test run.
pub const DEFAULT_TEST_TIMEOUT: Duration = Duration::from_secs(300);
/// Most requests one plan may hold: a blueprint has a few per endpoint,
/// and the sandbox call's time limit grows with each.
pub const MAX_REQUESTS: usize = 256;

/// Time the driver needs outside the plan's waits: the interpreter's
/// start, the stop (SIGTERM, up to 1 s, SIGKILL, up to 1 s, survivors,
/// the final wait of 1 s), the stop of the tests' group and writing.
const DRIVER_MARGIN: Duration = Duration::from_secs(20);
/// Bytes of log kept in [`InstallOutcome::log_tail`].
const LOG_TAIL: usize = 4096;
/// Largest results file read: the driver bounds every text it writes, so
/// anything larger was not written by it.
const RESULTS_MAX: u64 = 4 << 20;
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

    /// The most the driver's sandbox call may take: the startup wait, each
    /// request's limit (with a second of slack for its connection), the
    /// tests, and the driver's own time.
    pub fn call_limit(&self) -> Duration {
        let requests = u32::try_from(self.requests.len()).unwrap_or(u32::MAX);
        let each = self.request_timeout + Duration::from_secs(1);
        let tests = if self.run_tests {
            self.test_timeout
        } else {
            Duration::ZERO
        };
        self.startup_timeout
            .saturating_add(each.saturating_mul(requests))
            .saturating_add(tests)
            .saturating_add(DRIVER_MARGIN)
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

/// How the start went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case", deny_unknown_fields)]
pub enum Readiness {
    /// The port accepted a connection.
    Listening {
        /// After this long.
        after_ms: u64,
    },
    /// The start script ended, leaving nothing running, before the port
    /// accepted a connection.
    Exited {
        /// Its exit code; `None` when a signal ended it.
        code: Option<i32>,
        /// After this long.
        after_ms: u64,
    },
    /// Nothing accepted a connection within the startup timeout.
    NeverListened,
    /// Something accepted connections on the port before the start, so
    /// nothing was started, called or tested.
    PortBusy,
    /// The start script does not exist.
    NoStartScript,
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
            Readiness::Listening { .. } => {}
            Readiness::Exited { code, after_ms } => {
                let how = code.map_or_else(|| "was killed by a signal".to_owned(), |c| format!("exited with code {c}"));
                lines.push(format!(
                    "{script} {how} after {} without listening on port {port}; service log: {}",
                    seconds(*after_ms),
                    log()
                ));
            }
            Readiness::NeverListened => lines.push(format!(
                "the service did not listen on port {port} within the startup timeout; service log: {}",
                log()
            )),
            Readiness::PortBusy => lines.push(format!(
                "port {port} already accepted connections before {script} ran, so nothing was \
                 started, called or tested; free the port or pick another"
            )),
            Readiness::NoStartScript => {
                lines.push(format!("there is no {script}: the service cannot be started"));
            }
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
    /// The driver left no results that can be read.
    #[error(
        "the probe driver left no usable results at `{}` ({reason}); it ended {status}; its \
         stderr ends with: {stderr_tail}",
        path.display()
    )]
    Results {
        /// The results file.
        path: PathBuf,
        /// Why it cannot be used.
        reason: String,
        /// How the driver's call ended.
        status: String,
        /// The end of the driver's stderr.
        stderr_tail: String,
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
/// driver cannot be run; [`ProbeError::Results`] when it left no results.
pub async fn probe(
    sandbox: &Sandbox,
    repo: &Path,
    env: &PythonEnv,
    plan: &ProbePlan,
) -> Result<ProbeReport, ProbeError> {
    let started = Instant::now();
    check_plan(plan)?;
    let repo = absolute(sandbox, repo);
    let work = prepare_work_dir(&repo)?;
    let plan_path = work.join("plan.json");
    let results_path = work.join("results.json");
    let driver_plan = DriverPlan::of(plan, &work);
    let bytes = serde_json::to_vec(&driver_plan)
        .map_err(|e| ProbeError::Plan(format!("cannot encode the plan: {e}")))?;
    write_no_follow(&plan_path, &bytes)?;
    let mut path = env.bin_dir().into_os_string();
    path.push(":");
    path.push(DEFAULT_PATH);
    let command = Command::new(env.python())
        .arg("-I")
        .arg("-c")
        .arg(DRIVER)
        .arg(&plan_path)
        .arg(&results_path)
        .current_dir(&repo)
        .env("VIRTUAL_ENV", env.dir())
        .env("PATH", path)
        .timeout(plan.call_limit());
    let run = sandbox.exec(command).await?;
    let results =
        read_results(&results_path).map_err(|reason| results_error(&results_path, reason, &run))?;
    Ok(report(plan, results, millis(started.elapsed())))
}

fn results_error(path: &Path, reason: String, run: &ExecResult) -> ProbeError {
    ProbeError::Results {
        path: path.to_path_buf(),
        reason,
        status: run.status_summary(),
        stderr_tail: tail(&run.stderr.to_string_lossy(), 2000),
    }
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

/// `<repo>/.repo-agent/probe`, made if needed, with the previous run's
/// results removed. Each level must be a real directory: the repository is
/// model-written, and a planted link would send our writes elsewhere.
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
    for stale in ["results.json", "results.json.tmp"] {
        match std::fs::remove_file(dir.join(stale)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(ProbeError::Io {
                    path: dir.join(stale),
                    source,
                });
            }
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

/// Reads and parses the driver's results; why not, as text.
fn read_results(path: &Path) -> Result<DriverResults, String> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .map_err(|e| format!("cannot open it: {e}"))?;
    let mut bytes = Vec::new();
    file.take(RESULTS_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > RESULTS_MAX {
        return Err(format!("it is larger than {RESULTS_MAX} bytes"));
    }
    parse_results(&bytes)
}

fn parse_results(bytes: &[u8]) -> Result<DriverResults, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("it is not the driver's JSON: {e}"))
}

fn absolute(sandbox: &Sandbox, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        sandbox.config().working_dir().join(path)
    }
}

/// The plan as the driver reads it: expectations stay here.
#[derive(Debug, Serialize)]
struct DriverPlan<'a> {
    port: u16,
    start_script: &'a str,
    requests: Vec<DriverRequest<'a>>,
    run_tests: bool,
    startup_timeout: f64,
    request_timeout: f64,
    test_timeout: f64,
    work_dir: &'a Path,
}

#[derive(Debug, Serialize)]
struct DriverRequest<'a> {
    method: &'static str,
    path: &'a str,
    /// JSON text: `Some("null")` sends `null`, `None` sends no body.
    body: Option<String>,
}

impl<'a> DriverPlan<'a> {
    fn of(plan: &'a ProbePlan, work: &'a Path) -> DriverPlan<'a> {
        DriverPlan {
            port: plan.port,
            start_script: &plan.start_script,
            requests: plan
                .requests
                .iter()
                .map(|r| DriverRequest {
                    method: match r.method {
                        HttpMethod::Any => "GET",
                        other => other.as_str(),
                    },
                    path: &r.path,
                    body: r.body.as_ref().map(serde_json::Value::to_string),
                })
                .collect(),
            run_tests: plan.run_tests,
            startup_timeout: plan.startup_timeout.as_secs_f64(),
            request_timeout: plan.request_timeout.as_secs_f64(),
            test_timeout: plan.test_timeout.as_secs_f64(),
            work_dir: work,
        }
    }
}

/// What the driver writes (`probe.py`, `main`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DriverResults {
    readiness: Readiness,
    foreground: bool,
    service_log_tail: String,
    observations: Vec<Observation>,
    tests: Option<TestRun>,
    leftovers: Vec<String>,
    driver_error: Option<String>,
}

/// What came back for one request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Observation {
    status: Option<u16>,
    body_excerpt: String,
    json: JsonKind,
    keys: Vec<String>,
    error: Option<String>,
}

/// What the body was, as JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum JsonKind {
    /// Not JSON (or empty).
    None,
    /// An object; its keys were recorded.
    Object,
    /// An array.
    Array,
    /// A string, number, boolean or null.
    Scalar,
    /// Over the driver's 1 MiB limit, not parsed.
    TooLarge,
}

impl JsonKind {
    fn describe(self) -> &'static str {
        match self {
            JsonKind::None => "a body that is not JSON",
            JsonKind::Object => "a JSON object",
            JsonKind::Array => "a JSON array",
            JsonKind::Scalar => "a JSON value that is not an object",
            JsonKind::TooLarge => "a body over 1 MiB",
        }
    }
}

fn report(plan: &ProbePlan, results: DriverResults, ms: u64) -> ProbeReport {
    let listening = matches!(results.readiness, Readiness::Listening { .. });
    let responses = if listening {
        plan.requests
            .iter()
            .enumerate()
            .map(|(i, request)| judge(request, results.observations.get(i)))
            .collect()
    } else {
        Vec::new()
    };
    ProbeReport {
        port: plan.port,
        start_script: plan.start_script.clone(),
        readiness: results.readiness,
        foreground: results.foreground,
        service_log_tail: results.service_log_tail,
        responses,
        tests: results.tests,
        leftovers: results.leftovers,
        driver_error: results.driver_error,
        ms,
    }
}

/// Compares one observation with its request's expectations.
fn judge(request: &ProbeRequest, seen: Option<&Observation>) -> ProbeResponse {
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

use crate::episode::millis;

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

    fn seen(status: Option<u16>, json: JsonKind, keys: &[&str]) -> Observation {
        Observation {
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

    const RESULTS: &str = r#"{
        "readiness": {"state": "listening", "after_ms": 412},
        "foreground": true,
        "service_log_tail": "Serving on 8080\n",
        "observations": [
            {"status": 200, "body_excerpt": "{\"id\": 1}", "json": "object", "keys": ["id"], "error": null},
            {"status": null, "body_excerpt": "", "json": "none", "keys": [], "error": "ConnectionResetError: reset"}
        ],
        "tests": {"exit_code": 1, "passed": 2, "failed": 1, "errors": 0, "skipped": 0, "timed_out": false, "log_tail": "FAILED tests/test_app.py::test_x"},
        "leftovers": [],
        "driver_error": null
    }"#;

    #[test]
    fn the_drivers_results_become_a_judged_report() {
        let results = parse_results(RESULTS.as_bytes()).unwrap();
        let mut plan = ProbePlan::new(
            8080,
            vec![request(vec![200], &["id"]), request(vec![], &[])],
        );
        plan.requests.push(request(vec![], &[]));
        let report = report(&plan, results, 5);
        assert_eq!(report.readiness, Readiness::Listening { after_ms: 412 });
        assert!(report.responses[0].passed, "{:?}", report.responses[0]);
        assert_eq!(
            report.responses[1].problem.as_deref(),
            Some("no response: ConnectionResetError: reset")
        );
        // A request the driver never got to is a failure, not a silent pass.
        assert_eq!(
            report.responses[2].problem.as_deref(),
            Some("not sent: the probe stopped before this request")
        );
        assert_eq!(report.tests.as_ref().map(|t| t.failed), Some(1));
        assert!(!report.passed());
    }

    #[test]
    fn results_are_parsed_strictly() {
        let unknown = RESULTS.replace("\"driver_error\"", "\"extra\": 1, \"driver_error\"");
        assert!(
            parse_results(unknown.as_bytes())
                .unwrap_err()
                .contains("unknown field")
        );
        let missing = RESULTS.replace("\"foreground\": true,", "");
        assert!(
            parse_results(missing.as_bytes())
                .unwrap_err()
                .contains("foreground")
        );
        let bad_state = RESULTS.replace("\"listening\"", "\"asleep\"");
        assert!(parse_results(bad_state.as_bytes()).is_err());
        let extra_in_variant = RESULTS.replace("\"after_ms\": 412", "\"after_ms\": 412, \"x\": 1");
        assert!(parse_results(extra_in_variant.as_bytes()).is_err());
        assert!(parse_results(b"").is_err());
        let busy = RESULTS.replace(
            r#"{"state": "listening", "after_ms": 412}"#,
            r#"{"state": "port_busy"}"#,
        );
        assert_eq!(
            parse_results(busy.as_bytes()).unwrap().readiness,
            Readiness::PortBusy
        );
    }

    #[test]
    fn a_missing_results_file_is_an_error_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_results(&dir.path().join("results.json")).unwrap_err();
        assert!(err.starts_with("cannot open it"), "{err}");
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), &link).unwrap();
        std::fs::write(dir.path().join("elsewhere"), RESULTS).unwrap();
        assert!(read_results(&link).is_err(), "a link is not followed");
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
        report.readiness = Readiness::NeverListened;
        assert!(report.failures()[0].starts_with("the service did not listen on port 8080"));
        report.readiness = Readiness::PortBusy;
        assert!(report.failures()[0].starts_with("port 8080 already accepted connections"));
        report.readiness = Readiness::NoStartScript;
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
        assert_eq!(
            plan.call_limit(),
            Duration::from_secs(2 + 3 * 6 + 60) + DRIVER_MARGIN
        );
        plan.run_tests = false;
        assert_eq!(
            plan.call_limit(),
            Duration::from_secs(2 + 3 * 6) + DRIVER_MARGIN
        );
    }

    #[test]
    fn the_driver_plan_sends_json_bodies_as_text() {
        let mut plan = ProbePlan::new(8080, vec![request(vec![], &[])]);
        plan.requests[0].method = HttpMethod::Any;
        plan.requests[0].body = Some(serde_json::Value::Null);
        let text = serde_json::to_value(DriverPlan::of(&plan, Path::new("/w"))).unwrap();
        assert_eq!(text["requests"][0]["method"], "GET");
        assert_eq!(text["requests"][0]["body"], "null");
        assert_eq!(text["work_dir"], "/w");
    }
}
