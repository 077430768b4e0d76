//! One hardened service session: start a service in a session of its own,
//! wait until it is ready, make HTTP requests, run a test command against
//! it, stop its whole tree, and collect the results from a place the
//! service cannot write ([`Sandbox::run_service`]).
//!
//! The work happens in one sandbox call, driven by a supervisor
//! (`service.py`) that the sandbox runs with its own interpreter as
//! `python -I -B -c`, handing it the plan on standard input. The
//! supervisor makes itself non-dumpable before the service exists, so code
//! of the same user can neither ptrace it nor open its `/proc/<pid>/fd`,
//! `environ` or `mem`; the service gets its output redirected to a log file
//! and no other descriptor; and the supervisor reports on its own standard
//! output alone, which only the sandbox holds. A service can kill its
//! supervisor (they are the same user): the report is then missing, which
//! is [`Readiness::NotReported`] and no test results, never a forged one.
//!
//! Tests in the [`TestRun::Pytest`] form run in an interpreter the caller
//! controls, as `python -I -B -u -c LAUNCHER`: non-dumpable as well, with
//! pytest and the plugins of that interpreter's environment loaded before
//! the untrusted directories ([`TestRun::Pytest::sys_path_extra`]) are
//! *appended* to `sys.path` (their `.pth` files never run), plugin
//! autoloading off, no cache, the caller's rootdir, ini file and
//! `--confcutdir` (so no `conftest.py` above the tests is loaded), and the
//! JUnit report written to a pipe the supervisor reads, never to a file.
//! The caller's packages cannot import a module that only the untrusted
//! directories hold (an optional dependency such as `simplejson` would
//! otherwise be the service's code inside the test process); the tests
//! themselves may. The report carries the JUnit counts and pytest's
//! console summary, and [`TestReport::scored`] takes the fewer passes when
//! they disagree.
//!
//! What this cannot stop: tests that import the repository's code (or a
//! package of the service's environment) run that code inside the test
//! process, where it can change any result; and the [`TestRun::Command`]
//! form's reports are only as trustworthy as the files it reads.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::command::Command;
use crate::config::Isolation;
use crate::error::{Result, SandboxError};
use crate::output::text_tail;
use crate::sandbox::{Extra, Sandbox};

/// The supervisor, run with `python -I -B -c`.
const SUPERVISOR: &str = include_str!("service.py");

/// The line the supervisor prints before its report.
const MARKER: &str = "=====SANDBOX-SERVICE-REPORT=====";

/// Bytes of the supervisor's standard output kept: its report is bounded
/// (4 MiB of JUnit, 256 KiB of console, short tails) well below this.
const REPORT_CAPTURE: usize = 32 << 20;

/// Most HTTP requests one plan may hold.
pub const MAX_REQUESTS: usize = 256;

/// Time the supervisor needs outside the plan's waits: its start, the
/// port check, the stop of the tests' group, the service's stop (grace,
/// SIGKILL, survivor rounds, final wait) and the report.
const SUPERVISOR_MARGIN: Duration = Duration::from_secs(20);

/// Bytes of supervisor stderr kept in [`ServiceReport::supervisor_error`].
const STDERR_TAIL: usize = 2000;

/// The service to start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceCommand {
    /// Program and arguments (the program looked up on the sandbox's `PATH`).
    pub argv: Vec<String>,
    /// Directory it starts in (absolute, or taken from the sandbox's working
    /// directory).
    pub cwd: PathBuf,
    /// Variables set on top of the sandbox's environment. `PORT` and the
    /// run's mark (`SANDBOX_SERVICE_MARK`) are always set.
    pub env: Vec<(String, String)>,
}

/// One HTTP request made once the service is ready.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpRequest {
    /// The method, e.g. `GET`.
    pub method: String,
    /// The path, which may include `?query`.
    pub path: String,
    /// A JSON body (its text), sent with `Content-Type: application/json`.
    pub body: Option<String>,
    /// Limit from connection to last byte.
    pub timeout: Duration,
}

/// The tests run against the service (whether or not it became ready).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TestRun {
    /// pytest, in-process in `interpreter`, as the module documentation
    /// describes; every path should be absolute.
    Pytest {
        /// The test interpreter: a virtualenv with pytest that the service
        /// cannot write (for results that count, one the caller built).
        interpreter: PathBuf,
        /// Test files or directories given to pytest.
        test_paths: Vec<PathBuf>,
        /// pytest's `--rootdir`, also its `--confcutdir`.
        rootdir: PathBuf,
        /// pytest's `-c`: the ini file (an empty `[pytest]` one when the
        /// tests bring none).
        inifile: PathBuf,
        /// Appended to `sys.path`, after the interpreter's own packages and
        /// without processing `.pth` files: the repository root, the
        /// service's site-packages.
        sys_path_extra: Vec<PathBuf>,
        /// Further pytest arguments (`-v`, `--tb=short`).
        args: Vec<String>,
        /// Directory the tests run in.
        cwd: PathBuf,
        /// Variables set on top of the sandbox's environment (`PORT`, the
        /// mark and `PYTEST_DISABLE_PLUGIN_AUTOLOAD=1` are set;
        /// `PYTEST_ADDOPTS` and `PYTEST_PLUGINS` are removed).
        env: Vec<(String, String)>,
        /// Limit of the run.
        timeout: Duration,
    },
    /// Any command (Maven for Java): its exit code and console only. Reports
    /// it leaves in files are only as trustworthy as the directory they are
    /// in, which the service may be able to write.
    Command {
        /// Program and arguments.
        argv: Vec<String>,
        /// Directory it runs in.
        cwd: PathBuf,
        /// Variables set on top of the sandbox's environment.
        env: Vec<(String, String)>,
        /// Limit of the run.
        timeout: Duration,
    },
}

impl TestRun {
    fn timeout(&self) -> Duration {
        match self {
            TestRun::Pytest { timeout, .. } | TestRun::Command { timeout, .. } => *timeout,
        }
    }
}

/// What [`Sandbox::run_service`] does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ServicePlan {
    /// The service; `None` when there is nothing to start (the tests still
    /// run).
    pub service: Option<ServiceCommand>,
    /// The port it must listen on (given to it as `PORT`).
    pub port: u16,
    /// How long to wait for it to answer.
    pub startup_timeout: Duration,
    /// Paths tried with `GET` each round before the port (a status below
    /// 400 is ready), as RepoGenesis's entrypoint does.
    pub health_paths: Vec<String>,
    /// When the start command ends while processes it started live on (a
    /// daemon), keep waiting for them to answer; otherwise the start counts
    /// as [`Readiness::Exited`] at once (what they do is still reported).
    pub wait_for_daemons: bool,
    /// Requests made, in order, once the service is ready.
    pub requests: Vec<HttpRequest>,
    /// The tests.
    pub tests: Option<TestRun>,
    /// Time between SIGTERM and SIGKILL when the service is stopped.
    pub stop_grace: Duration,
}

impl ServicePlan {
    /// A plan for `service` on `port`: 30 s to start, no health paths, wait
    /// for daemons, no requests, no tests, 2 s to stop.
    ///
    /// ```
    /// use std::time::Duration;
    /// use sandbox::{ServiceCommand, ServicePlan};
    ///
    /// let mut plan = ServicePlan::new(
    ///     Some(ServiceCommand { argv: vec!["bash".into(), "start.sh".into()], cwd: "/srv/app".into(), env: vec![] }),
    ///     8080,
    /// );
    /// plan.health_paths = vec!["/health".into()];
    /// assert!(plan.call_limit() >= Duration::from_secs(30));
    /// ```
    pub fn new(service: Option<ServiceCommand>, port: u16) -> ServicePlan {
        ServicePlan {
            service,
            port,
            startup_timeout: Duration::from_secs(30),
            health_paths: Vec::new(),
            wait_for_daemons: true,
            requests: Vec::new(),
            tests: None,
            stop_grace: Duration::from_secs(2),
        }
    }

    /// The most the sandbox call may take: the startup wait (with a second
    /// per health path per round, bounded by the rounds), each request's
    /// limit and a second, the tests, the stop and the supervisor's margin.
    pub fn call_limit(&self) -> Duration {
        let health = Duration::from_secs(2)
            .saturating_mul(u32::try_from(self.health_paths.len()).unwrap_or(u32::MAX));
        let requests = self.requests.iter().fold(Duration::ZERO, |total, r| {
            total.saturating_add(r.timeout + Duration::from_secs(1))
        });
        let tests = self
            .tests
            .as_ref()
            .map_or(Duration::ZERO, |t| t.timeout() + Duration::from_secs(5));
        self.startup_timeout
            .saturating_add(health)
            .saturating_add(requests)
            .saturating_add(tests)
            .saturating_add(self.stop_grace)
            .saturating_add(SUPERVISOR_MARGIN)
    }

    fn check(&self) -> Result<()> {
        let invalid = |m: String| Err(SandboxError::InvalidConfig(m));
        if self.port == 0 {
            return invalid("service plan: port 0 names no service".into());
        }
        if self.requests.len() > MAX_REQUESTS {
            return invalid(format!(
                "service plan: {} requests, more than the {MAX_REQUESTS} one session makes",
                self.requests.len()
            ));
        }
        if self.service.as_ref().is_some_and(|s| s.argv.is_empty()) {
            return invalid("service plan: the service command is empty".into());
        }
        if let Some(TestRun::Command { argv, .. }) = &self.tests
            && argv.is_empty()
        {
            return invalid("service plan: the test command is empty".into());
        }
        Ok(())
    }
}

/// How the service's start went; one vocabulary for every caller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Readiness {
    /// A health path answered with a status below 400.
    #[serde(alias = "health")]
    Health {
        /// The path.
        path: String,
        /// After this long.
        #[serde(default)]
        after_ms: u64,
    },
    /// The port accepted a connection.
    #[serde(alias = "port")]
    Listening {
        /// After this long.
        #[serde(default)]
        after_ms: u64,
    },
    /// The start command still ran when the startup timeout expired, and
    /// nothing had answered.
    AliveNotListening {
        /// After this long (the timeout).
        #[serde(default)]
        after_ms: u64,
    },
    /// The start command ended before anything answered (and, when the plan
    /// waits for daemons, so did everything it left).
    Exited {
        /// Its exit code; `None` when a signal ended it.
        code: Option<i32>,
        /// After this long.
        #[serde(default)]
        after_ms: u64,
    },
    /// The start command ended, processes it left ran on to the startup
    /// timeout, and none answered.
    NeverListened {
        /// After this long.
        #[serde(default)]
        after_ms: u64,
    },
    /// Something accepted connections on the port before the start, so
    /// nothing was started, called or tested.
    PortBusy,
    /// There was nothing to start.
    #[serde(alias = "no_entry_point", alias = "no_start_script")]
    NothingToStart,
    /// The supervisor did not report (it was killed, or could not run):
    /// nothing it would have seen counts.
    #[serde(alias = "unknown")]
    NotReported,
}

impl Readiness {
    /// The service answered: a health path or its port.
    pub fn answered(&self) -> bool {
        matches!(self, Readiness::Health { .. } | Readiness::Listening { .. })
    }

    /// Milliseconds until the state was reached, when it has a time.
    pub fn after_ms(&self) -> Option<u64> {
        match self {
            Readiness::Health { after_ms, .. }
            | Readiness::Listening { after_ms }
            | Readiness::AliveNotListening { after_ms }
            | Readiness::Exited { after_ms, .. }
            | Readiness::NeverListened { after_ms } => Some(*after_ms),
            Readiness::PortBusy | Readiness::NothingToStart | Readiness::NotReported => None,
        }
    }
}

/// What a body was, as JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JsonKind {
    /// Not JSON (or empty).
    None,
    /// An object; its keys were recorded.
    Object,
    /// An array.
    Array,
    /// A string, number, boolean or null.
    Scalar,
    /// Over 1 MiB, not parsed.
    TooLarge,
}

impl JsonKind {
    /// How messages name it ("a JSON array").
    pub fn describe(self) -> &'static str {
        match self {
            JsonKind::None => "a body that is not JSON",
            JsonKind::Object => "a JSON object",
            JsonKind::Array => "a JSON array",
            JsonKind::Scalar => "a JSON value that is not an object",
            JsonKind::TooLarge => "a body over 1 MiB",
        }
    }
}

/// What came back for one request; judging it is the caller's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpObservation {
    /// The status, when a response came.
    pub status: Option<u16>,
    /// The start of the body (600 characters).
    pub body_excerpt: String,
    /// What the body was.
    pub json: JsonKind,
    /// A JSON object's top-level keys (256 at most).
    pub keys: Vec<String>,
    /// Why no complete response came.
    pub error: Option<String>,
}

/// Counts of test outcomes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestCounts {
    /// Passed.
    pub passed: u32,
    /// Failed (assertion or error in the test body).
    pub failed: u32,
    /// Errors (collection, setup or teardown).
    pub errors: u32,
    /// Skipped (and expected failures).
    pub skipped: u32,
}

impl TestCounts {
    /// `passed + failed + errors` (skipped tests left out).
    pub fn total(&self) -> u32 {
        self.passed
            .saturating_add(self.failed)
            .saturating_add(self.errors)
    }

    /// Every reported outcome.
    pub fn reported(&self) -> u32 {
        self.total().saturating_add(self.skipped)
    }
}

/// What happened to one test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Passed.
    Passed,
    /// Failed.
    Failed,
    /// Errored.
    Error,
    /// Skipped (`pytest.skip` or `xfail`).
    Skipped,
}

/// One `<testcase>` of a JUnit report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestCase {
    /// `classname::name`.
    pub id: String,
    /// Its outcome.
    pub outcome: Outcome,
    /// The failure, error or skip message (first 300 characters).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// A parsed JUnit XML report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JunitReport {
    /// The counts.
    pub counts: TestCounts,
    /// Every test case, in report order.
    pub cases: Vec<TestCase>,
}

/// Whether the JUnit report and the console summary tell the same story.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Agreement {
    /// Both exist and have the same passed, failed and error counts.
    Agree,
    /// Both exist and differ.
    Disagree,
    /// There is no usable JUnit report.
    JunitMissing,
    /// There is a JUnit report but no summary line on the console.
    ConsoleMissing,
    /// Neither is expected: a plain test command.
    NotChecked,
}

/// How the test run went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestReport {
    /// The exit code; `None` when stopped at the time limit or by a signal.
    pub exit_code: Option<i32>,
    /// Stopped at its time limit.
    pub timed_out: bool,
    /// The end of what it printed (stdout and stderr, 256 KiB).
    pub console_tail: String,
    /// The counts of pytest's last summary line (`1 failed, 2 passed in
    /// 0.1s`), `xpassed` counted as passed and `xfailed` as skipped as in
    /// JUnit; `None` without one.
    pub console: Option<TestCounts>,
    /// The JUnit report, parsed (pytest form); `None` when there is none.
    pub junit: Option<JunitReport>,
    /// Why there is no JUnit report, when there is none in the pytest form.
    pub junit_problem: Option<String>,
    /// Time spent.
    pub ms: u64,
}

impl TestReport {
    /// Whether the two accounts agree.
    pub fn agreement(&self) -> Agreement {
        let key = |c: &TestCounts| (c.passed, c.failed, c.errors);
        match (&self.junit, &self.console) {
            (Some(junit), Some(console)) if key(&junit.counts) == key(console) => Agreement::Agree,
            (Some(_), Some(_)) => Agreement::Disagree,
            (Some(_), None) => Agreement::ConsoleMissing,
            (None, _) if self.junit_problem.is_some() => Agreement::JunitMissing,
            (None, _) => Agreement::NotChecked,
        }
    }

    /// The counts to score: the JUnit report's when the console agrees;
    /// otherwise the fewer passes of the two accounts (a missing report has
    /// none) and the larger of every other count, so that the total the
    /// passes are divided by never shrinks.
    ///
    /// ```
    /// use sandbox::{TestCounts, TestReport};
    ///
    /// let console = TestCounts { passed: 2, ..TestCounts::default() };
    /// let report = TestReport {
    ///     exit_code: Some(0), timed_out: false, console_tail: "2 passed in 0.1s".into(),
    ///     console: Some(console), junit: None, junit_problem: Some("pytest wrote no JUnit report".into()), ms: 5,
    /// };
    /// let scored = report.scored();
    /// assert_eq!((scored.passed, scored.failed), (0, 2));
    /// ```
    pub fn scored(&self) -> TestCounts {
        let junit = self.junit.as_ref().map(|j| j.counts);
        match (junit, self.console, self.agreement()) {
            (Some(junit), _, Agreement::Agree | Agreement::ConsoleMissing) => junit,
            (junit, console, _) => {
                let junit = junit.unwrap_or_default();
                let console = console.unwrap_or_default();
                let passed = junit.passed.min(console.passed);
                let total = junit.total().max(console.total());
                let errors = junit.errors.max(console.errors);
                TestCounts {
                    passed,
                    failed: total.saturating_sub(passed).saturating_sub(errors),
                    errors,
                    skipped: junit.skipped.max(console.skipped),
                }
            }
        }
    }
}

/// Everything a [`Sandbox::run_service`] saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceReport {
    /// How the start went.
    pub readiness: Readiness,
    /// The start command held the service: false when it ended while a
    /// process it started lived on.
    pub foreground: bool,
    /// Processes (`pid command`) the start command left when it ended
    /// during the startup wait.
    pub survivors: Vec<String>,
    /// Processes that outlived the service (they ran after the start
    /// command ended, or survived its process group's kill); each was killed.
    pub leftovers: Vec<String>,
    /// The end of the service's output (4 KiB).
    pub service_log_tail: String,
    /// One per request made, in the plan's order; fewer (none) when the
    /// service never answered or the run stopped early.
    pub observations: Vec<HttpObservation>,
    /// The test run, when there was one.
    pub tests: Option<TestReport>,
    /// The supervisor's own failure, or why it left no report.
    pub supervisor_error: Option<String>,
    /// How the sandbox call ended (`exit code 0`, `timed out after …`).
    pub call_status: String,
    /// Time spent.
    pub ms: u64,
}

impl Sandbox {
    /// Starts a service, waits until it is ready, makes the plan's requests,
    /// runs its tests and stops it, in one call (see the module
    /// documentation of `service`).
    ///
    /// The sandbox decides what the service may touch: the paths the plan
    /// names (its working directory, the test interpreter, the tests) must
    /// be visible in it, and should be read-only unless the service may
    /// change them. In namespace isolation without network the service, the
    /// supervisor and the tests share a private loopback, so
    /// [`Readiness::PortBusy`] happens only in process isolation.
    ///
    /// ```no_run
    /// use sandbox::{Sandbox, SandboxConfig, ServiceCommand, ServicePlan};
    ///
    /// # async fn demo() -> Result<(), sandbox::SandboxError> {
    /// let sandbox = Sandbox::new(SandboxConfig::builder("/tmp/app").build()?).await?;
    /// let service = ServiceCommand { argv: vec!["python3".into(), "-m".into(), "http.server".into(), "8000".into()], cwd: "/tmp/app".into(), env: vec![] };
    /// let report = sandbox.run_service(&ServicePlan::new(Some(service), 8000)).await?;
    /// println!("{:?}, log: {}", report.readiness, report.service_log_tail);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`SandboxError::InvalidConfig`] for port 0, an empty command or more
    /// than [`MAX_REQUESTS`] requests; [`SandboxError::PythonUnavailable`]
    /// without an interpreter; otherwise as for [`exec`](Self::exec). A
    /// supervisor that leaves no report is a report
    /// ([`Readiness::NotReported`]), not an error.
    pub async fn run_service(&self, plan: &ServicePlan) -> Result<ServiceReport> {
        let started = Instant::now();
        plan.check()?;
        let wire = WirePlan::of(plan, self.isolation() == Isolation::Namespaces);
        let input = serde_json::to_vec(&wire).map_err(|e| {
            SandboxError::InvalidConfig(format!("service plan: cannot encode it: {e}"))
        })?;
        let executable = self.python_executable()?;
        let mut command = Command::new(executable)
            .args(["-I", "-B", "-c", SUPERVISOR])
            .stdin(input)
            .timeout(plan.call_limit());
        if let Some(service) = &plan.service {
            command = command.current_dir(&service.cwd);
        }
        let extra = Extra {
            output_limit: Some(REPORT_CAPTURE),
            ..Extra::default()
        };
        let run = self.exec_with(command, extra).await?;
        let mut report = match supervisor_report(&run.stdout) {
            Ok(wire) => wire.into_report(),
            Err(reason) => not_reported(format!(
                "the supervisor left no report ({reason}); its stderr ends with: {}",
                text_tail(run.stderr.to_string_lossy().trim(), STDERR_TAIL)
            )),
        };
        report.call_status = run.status_summary();
        report.ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        tracing::debug!(
            readiness = ?report.readiness,
            status = %report.call_status,
            "service session ended"
        );
        Ok(report)
    }
}

fn not_reported(reason: String) -> ServiceReport {
    ServiceReport {
        readiness: Readiness::NotReported,
        foreground: true,
        survivors: Vec::new(),
        leftovers: Vec::new(),
        service_log_tail: String::new(),
        observations: Vec::new(),
        tests: None,
        supervisor_error: Some(reason),
        call_status: String::new(),
        ms: 0,
    }
}

/// The report after the marker line; why not, as text.
fn supervisor_report(stdout: &crate::output::CapturedOutput) -> Result<WireReport, String> {
    if stdout.is_truncated() {
        return Err(format!(
            "its output was larger than the {REPORT_CAPTURE} bytes kept"
        ));
    }
    let text = &stdout.head;
    let at = text
        .rfind(&format!("\n{MARKER}\n"))
        .ok_or_else(|| "no report marker on its standard output".to_owned())?;
    let json = text[at + MARKER.len() + 2..].trim();
    serde_json::from_str(json).map_err(|e| format!("the report is not valid: {e}"))
}

/// The plan as the supervisor reads it (seconds as numbers).
#[derive(Debug, Serialize)]
struct WirePlan<'a> {
    service: Option<WireService<'a>>,
    port: u16,
    startup_timeout: f64,
    health_paths: &'a [String],
    wait_for_daemons: bool,
    requests: Vec<WireRequest<'a>>,
    tests: Option<WireTests<'a>>,
    stop_grace: f64,
    pid_namespace: bool,
}

#[derive(Debug, Serialize)]
struct WireService<'a> {
    argv: &'a [String],
    cwd: &'a std::path::Path,
    env: std::collections::BTreeMap<&'a str, &'a str>,
}

#[derive(Debug, Serialize)]
struct WireRequest<'a> {
    method: &'a str,
    path: &'a str,
    body: Option<&'a str>,
    timeout: f64,
}

#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum WireTests<'a> {
    Pytest {
        interpreter: &'a std::path::Path,
        test_paths: &'a [PathBuf],
        rootdir: &'a std::path::Path,
        inifile: &'a std::path::Path,
        sys_path_extra: &'a [PathBuf],
        args: &'a [String],
        cwd: &'a std::path::Path,
        env: std::collections::BTreeMap<&'a str, &'a str>,
        timeout: f64,
    },
    Command {
        argv: &'a [String],
        cwd: &'a std::path::Path,
        env: std::collections::BTreeMap<&'a str, &'a str>,
        timeout: f64,
    },
}

fn env_map(env: &[(String, String)]) -> std::collections::BTreeMap<&str, &str> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

impl<'a> WirePlan<'a> {
    fn of(plan: &'a ServicePlan, pid_namespace: bool) -> WirePlan<'a> {
        WirePlan {
            service: plan.service.as_ref().map(|s| WireService {
                argv: &s.argv,
                cwd: &s.cwd,
                env: env_map(&s.env),
            }),
            port: plan.port,
            startup_timeout: plan.startup_timeout.as_secs_f64(),
            health_paths: &plan.health_paths,
            wait_for_daemons: plan.wait_for_daemons,
            requests: plan
                .requests
                .iter()
                .map(|r| WireRequest {
                    method: &r.method,
                    path: &r.path,
                    body: r.body.as_deref(),
                    timeout: r.timeout.as_secs_f64(),
                })
                .collect(),
            tests: plan.tests.as_ref().map(|t| match t {
                TestRun::Pytest {
                    interpreter,
                    test_paths,
                    rootdir,
                    inifile,
                    sys_path_extra,
                    args,
                    cwd,
                    env,
                    timeout,
                } => WireTests::Pytest {
                    interpreter,
                    test_paths,
                    rootdir,
                    inifile,
                    sys_path_extra,
                    args,
                    cwd,
                    env: env_map(env),
                    timeout: timeout.as_secs_f64(),
                },
                TestRun::Command {
                    argv,
                    cwd,
                    env,
                    timeout,
                } => WireTests::Command {
                    argv,
                    cwd,
                    env: env_map(env),
                    timeout: timeout.as_secs_f64(),
                },
            }),
            stop_grace: plan.stop_grace.as_secs_f64(),
            pid_namespace,
        }
    }
}

/// What the supervisor prints (`service.py`, `main`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireReport {
    readiness: Readiness,
    foreground: bool,
    survivors: Vec<String>,
    leftovers: Vec<String>,
    service_log_tail: String,
    observations: Vec<HttpObservation>,
    tests: Option<WireTestReport>,
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireTestReport {
    exit_code: Option<i32>,
    timed_out: bool,
    console_tail: String,
    junit_xml: Option<String>,
    junit_problem: Option<String>,
    ms: u64,
}

impl WireReport {
    fn into_report(self) -> ServiceReport {
        let tests = self.tests.map(|t| {
            let (junit, junit_problem) = match (t.junit_xml, t.junit_problem) {
                (Some(xml), _) => match read_junit(&xml) {
                    Ok(report) => (Some(report), None),
                    Err(problem) => (None, Some(problem)),
                },
                (None, problem) => (None, problem),
            };
            // Only the pytest form has a report (or a reason for none) and a
            // summary line to hold against it.
            let pytest = junit.is_some() || junit_problem.is_some();
            TestReport {
                exit_code: t.exit_code,
                timed_out: t.timed_out,
                console: pytest_summary(&t.console_tail).filter(|_| pytest),
                console_tail: t.console_tail,
                junit,
                junit_problem,
                ms: t.ms,
            }
        });
        ServiceReport {
            readiness: self.readiness,
            foreground: self.foreground,
            survivors: self.survivors,
            leftovers: self.leftovers,
            service_log_tail: self.service_log_tail,
            observations: self.observations,
            tests,
            supervisor_error: self.error,
            call_status: String::new(),
            ms: 0,
        }
    }
}

/// The counts of pytest's last summary line (`==== 1 failed, 2 passed,
/// 1 xfailed in 0.12s ====`, or without the rules under `-q`), with
/// `xpassed` counted as passed and `xfailed` as skipped, as JUnit has them;
/// `None` when no line is one.
///
/// ```
/// use sandbox::pytest_summary;
///
/// let c = pytest_summary("x\n==== 1 failed, 2 passed, 1 xfailed in 0.12s ====\n").unwrap();
/// assert_eq!((c.passed, c.failed, c.skipped), (2, 1, 1));
/// assert_eq!(pytest_summary("no tests ran in 0.01s").unwrap().total(), 0);
/// assert!(pytest_summary("2 passed").is_none());
/// ```
pub fn pytest_summary(console: &str) -> Option<TestCounts> {
    console.lines().rev().find_map(summary_line)
}

fn summary_line(line: &str) -> Option<TestCounts> {
    let line = line.trim().trim_matches('=').trim();
    let (parts, timing) = line.rsplit_once(" in ")?;
    let seconds = timing.split_whitespace().next()?.strip_suffix('s')?;
    if seconds.is_empty() || !seconds.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let mut counts = TestCounts::default();
    if parts == "no tests ran" {
        return Some(counts);
    }
    for part in parts.split(", ") {
        let (number, word) = part.trim().split_once(' ')?;
        let n: u32 = number.parse().ok()?;
        match word {
            "passed" | "xpassed" => counts.passed = counts.passed.saturating_add(n),
            "failed" => counts.failed = counts.failed.saturating_add(n),
            "error" | "errors" => counts.errors = counts.errors.saturating_add(n),
            "skipped" | "xfailed" => counts.skipped = counts.skipped.saturating_add(n),
            "deselected" | "warning" | "warnings" | "rerun" | "reruns" => {}
            _ => return None,
        }
    }
    Some(counts)
}

/// The largest JUnit report [`parse_junit`] reads: twice what the
/// supervisor takes from pytest (`JUNIT_MAX` of `service.py`), for Maven
/// Surefire's reports read from disk.
const JUNIT_MAX_BYTES: usize = 8 << 20;

/// The most XML nodes (elements, text, comments) a JUnit report may make,
/// a bound on the memory the parsed tree takes.
const JUNIT_MAX_NODES: u32 = 1 << 20;

/// The most attributes one tag of a JUnit report may have (see
/// [`xml_tags_within_limits`]); pytest's and Surefire's have fewer than ten.
const XML_MAX_ATTRIBUTES: usize = 64;

/// The most namespace declarations (`xmlns`, `xmlns:p`) a JUnit report
/// may make; pytest's have none, Surefire's one.
const XML_MAX_NAMESPACES: usize = 32;

/// Reads the `<testcase>` elements of a JUnit XML document (pytest's
/// `--junitxml`, Maven Surefire's `TEST-*.xml`) with an XML parser. A test
/// case with a `<failure>` child failed, with `<error>` errored, with
/// `<skipped>` was skipped (in that order of precedence), and passed
/// otherwise; its id is `classname::name` (`name` without a class name),
/// its message the child's `message` attribute (first 300 characters).
/// Each `<testcase>` is one report, so a test that fails and then errors
/// in teardown counts once in each column, as pytest's own summary does.
/// Element names are compared by their local name (a namespace prefix is
/// ignored); entities and character references are decoded; comments and
/// CDATA sections are text, never test cases.
///
/// The document is written by the code under test, so it is read as
/// hostile: no DTD (no entity of its own), at most 8 MiB, 2^20 nodes, 64
/// attributes in one tag and 32 namespace declarations (the parser's
/// checks of these are quadratic), and never a panic.
///
/// `None` when the document breaks any of these, is not well-formed XML
/// (a report cut short included: nothing in it is believed, and callers
/// treat it as a missing report, which counts no passes), or has no
/// `<testsuite>` or `<testsuites>` element.
///
/// ```
/// use sandbox::parse_junit;
///
/// let xml = r#"<testsuites><testsuite tests="3"><testcase classname="t" name="a"/><testcase classname="t" name="b"><failure message="assert 1 == 2">E</failure></testcase><testcase classname="t" name="c"><skipped message="no"/></testcase></testsuite></testsuites>"#;
/// let report = parse_junit(xml).unwrap();
/// assert_eq!((report.counts.passed, report.counts.failed, report.counts.skipped), (1, 1, 1));
/// assert_eq!(report.cases[1].message, "assert 1 == 2");
/// assert_eq!(parse_junit(&xml[..xml.len() - 20]), None);
/// ```
pub fn parse_junit(xml: &str) -> Option<JunitReport> {
    read_junit(xml).ok()
}

/// [`parse_junit`], with why there is no report.
fn read_junit(xml: &str) -> Result<JunitReport, String> {
    if xml.len() > JUNIT_MAX_BYTES {
        return Err(format!(
            "the JUnit report is larger than {JUNIT_MAX_BYTES} bytes"
        ));
    }
    if !xml_tags_within_limits(xml, XML_MAX_ATTRIBUTES, XML_MAX_NAMESPACES) {
        return Err(format!(
            "the JUnit report has a tag with more than {XML_MAX_ATTRIBUTES} attributes or more than {XML_MAX_NAMESPACES} namespace declarations"
        ));
    }
    let options = roxmltree::ParsingOptions {
        allow_dtd: false,
        nodes_limit: JUNIT_MAX_NODES,
        ..roxmltree::ParsingOptions::default()
    };
    let document = roxmltree::Document::parse_with_options(xml, options).map_err(|e| {
        let reason: String = e.to_string().chars().take(200).collect();
        format!("the JUnit report is not well-formed XML: {reason}")
    })?;
    let named = |node: &roxmltree::Node<'_, '_>, name: &str| {
        node.is_element() && node.tag_name().name() == name
    };
    if !document
        .descendants()
        .any(|n| named(&n, "testsuite") || named(&n, "testsuites"))
    {
        return Err("the JUnit report has no <testsuite>".to_owned());
    }
    let mut report = JunitReport::default();
    for case in document.descendants().filter(|n| named(n, "testcase")) {
        let name = case.attribute("name").unwrap_or_default();
        let class = case.attribute("classname").unwrap_or_default();
        let id = if class.is_empty() {
            name.to_owned()
        } else {
            format!("{class}::{name}")
        };
        let child = |element: &str| {
            case.children()
                .find(|c| named(c, element))
                .map(|c| c.attribute("message").unwrap_or_default())
        };
        let (outcome, message) = if let Some(m) = child("failure") {
            (Outcome::Failed, m)
        } else if let Some(m) = child("error") {
            (Outcome::Error, m)
        } else if let Some(m) = child("skipped") {
            (Outcome::Skipped, m)
        } else {
            (Outcome::Passed, "")
        };
        let counts = &mut report.counts;
        let column = match outcome {
            Outcome::Passed => &mut counts.passed,
            Outcome::Failed => &mut counts.failed,
            Outcome::Error => &mut counts.errors,
            Outcome::Skipped => &mut counts.skipped,
        };
        *column = column.saturating_add(1);
        report.cases.push(TestCase {
            id,
            outcome,
            message: message.chars().take(300).collect(),
        });
    }
    Ok(report)
}

/// Whether no tag of `xml` has more than `max_attributes` attributes and
/// the tags declare at most `max_namespaces` namespaces, in one linear
/// pass before the parser sees the text: roxmltree's check for duplicate
/// attributes is quadratic in one tag's attributes, and its namespace
/// bookkeeping grows with the cube of nested declarations (roxmltree
/// issue 153), so a few hundred kilobytes could hold a core for minutes.
///
/// Comments, CDATA sections, processing instructions and declarations are
/// skipped as the parser skips them; in a tag, every `=` outside quotes
/// is an attribute and every `xmlns` outside quotes a declaration (an
/// overcount at worst), up to the `>` outside quotes. The one definition
/// of this guard: [`parse_junit`] and the RepoGenesis harness's POM reader
/// both run it.
///
/// ```
/// use sandbox::xml_tags_within_limits;
///
/// assert!(xml_tags_within_limits(r#"<a x="1" y='>'><!-- z=1 w=2 --></a>"#, 2, 0));
/// let wide = format!("<a {}/>", (0..100).map(|i| format!("a{i}=''")).collect::<String>());
/// assert!(!xml_tags_within_limits(&wide, 64, 32));
/// ```
pub fn xml_tags_within_limits(xml: &str, max_attributes: usize, max_namespaces: usize) -> bool {
    const SKIPPED: [(&str, &str); 4] = [
        ("<!--", "-->"),
        ("<![CDATA[", "]]>"),
        ("<?", "?>"),
        ("<!", ">"),
    ];
    let mut namespaces = 0usize;
    let mut rest = xml;
    while let Some(at) = rest.find('<') {
        rest = &rest[at..];
        if let Some((open, close)) = SKIPPED.iter().find(|(open, _)| rest.starts_with(open)) {
            let body = &rest[open.len()..];
            match body.find(close) {
                Some(end) => rest = &body[end + close.len()..],
                None => return true,
            }
            continue;
        }
        let bytes = rest.as_bytes();
        let mut quote = None;
        let mut attributes = 0usize;
        let mut end = bytes.len();
        for (i, &b) in bytes.iter().enumerate().skip(1) {
            match quote {
                Some(q) if b == q => quote = None,
                Some(_) => {}
                None => match b {
                    b'"' | b'\'' => quote = Some(b),
                    b'=' => attributes += 1,
                    b'>' => {
                        end = i + 1;
                        break;
                    }
                    b'x' if bytes[i..].starts_with(b"xmlns") => namespaces += 1,
                    _ => {}
                },
            }
        }
        if attributes > max_attributes || namespaces > max_namespaces {
            return false;
        }
        rest = &rest[end..];
    }
    true
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn report(junit: Option<TestCounts>, console: Option<TestCounts>) -> TestReport {
        TestReport {
            exit_code: Some(0),
            timed_out: false,
            console_tail: String::new(),
            console,
            junit: junit.map(|counts| JunitReport {
                counts,
                cases: Vec::new(),
            }),
            junit_problem: None,
            ms: 0,
        }
    }

    fn counts(passed: u32, failed: u32, errors: u32) -> TestCounts {
        TestCounts {
            passed,
            failed,
            errors,
            skipped: 0,
        }
    }

    #[test]
    fn agreeing_accounts_score_the_junit_report() {
        let r = report(Some(counts(2, 1, 0)), Some(counts(2, 1, 0)));
        assert_eq!(r.agreement(), Agreement::Agree);
        assert_eq!(r.scored(), counts(2, 1, 0));
    }

    #[test]
    fn disagreeing_accounts_score_the_fewer_passes_over_the_larger_total() {
        let r = report(Some(counts(0, 2, 0)), Some(counts(2, 0, 0)));
        assert_eq!(r.agreement(), Agreement::Disagree);
        assert_eq!(r.scored(), counts(0, 2, 0));
        let r = report(Some(counts(3, 0, 0)), Some(counts(1, 0, 1)));
        assert_eq!(r.scored(), counts(1, 1, 1));
        let mut missing = report(None, Some(counts(2, 0, 0)));
        missing.junit_problem = Some("pytest wrote no JUnit report".into());
        assert_eq!(missing.agreement(), Agreement::JunitMissing);
        assert_eq!(missing.scored(), counts(0, 2, 0));
        let plain = report(None, None);
        assert_eq!(plain.agreement(), Agreement::NotChecked);
        assert_eq!(plain.scored(), TestCounts::default());
    }

    #[test]
    fn summary_lines_are_read_and_other_lines_are_not() {
        let c =
            pytest_summary("==== 1 failed, 2 passed, 3 warnings, 1 error in 1.02s (0:00:01) ====")
                .unwrap();
        assert_eq!((c.passed, c.failed, c.errors), (2, 1, 1));
        let c = pytest_summary("3 passed, 1 skipped, 1 xpassed in 0.50s\n").unwrap();
        assert_eq!((c.passed, c.skipped), (4, 1));
        assert_eq!(pytest_summary("tests/a.py::t PASSED [100%]"), None);
        assert_eq!(pytest_summary("print: 7 passed in spirit"), None);
        // The last summary wins, and a later unrelated line does not hide it.
        let c = pytest_summary("1 passed in 0.1s\n2 failed in 0.2s\nbye\n").unwrap();
        assert_eq!((c.passed, c.failed), (0, 2));
    }

    #[test]
    fn junit_reports_count_each_report() {
        let xml = r#"<?xml version="1.0"?><testsuites><testsuite errors="1" failures="1" skipped="2" tests="6"><testcase classname="t" name="f"><failure message="assert False">E</failure></testcase><testcase classname="t" name="f"><error message="failed on teardown with &quot;RuntimeError&quot;">E</error></testcase><testcase classname="t" name="ok" time="0" /><testcase classname="t" name="s"><skipped type="pytest.skip" message="x">why</skipped></testcase><testcase classname="t" name="xf"><skipped type="pytest.xfail" message="" /></testcase></testsuite></testsuites>"#;
        let report = parse_junit(xml).unwrap_or_default();
        assert_eq!(
            report.counts,
            TestCounts {
                passed: 1,
                failed: 1,
                errors: 1,
                skipped: 2
            }
        );
        assert_eq!(
            report.cases[1].message,
            "failed on teardown with \"RuntimeError\""
        );
        assert_eq!(report.cases[0].id, "t::f");
        let xml = r#"<testsuites><testsuite errors="1" tests="1"><testcase classname="" name="tests.test_b" time="0.000"><error message="collection failure">ImportError</error></testcase></testsuite></testsuites>"#;
        let report = parse_junit(xml).unwrap_or_default();
        assert_eq!(report.counts.errors, 1);
        assert_eq!(report.cases[0].id, "tests.test_b");
        assert_eq!(parse_junit("no xml here"), None);
    }

    #[test]
    fn junit_reports_are_read_as_xml() {
        // Entities and character references are decoded, a `>` in a value
        // is text, single quotes are quotes, and `name=` inside another
        // attribute's value is not the name (the string search took it).
        let xml = r#"<testsuites><testsuite><testcase classname="t" name="test[a&lt;b]"/><testcase classname='t' name='q&#x3e;'/><testcase classname="t" name="c[a>b]"/><testcase classname="a name=b" name="real"/></testsuite></testsuites>"#;
        let ids: Vec<String> = parse_junit(xml)
            .unwrap()
            .cases
            .into_iter()
            .map(|c| c.id)
            .collect();
        assert_eq!(
            ids,
            ["t::test[a<b]", "t::q>", "t::c[a>b]", "a name=b::real"]
        );
        // A test case in a comment, or in the CDATA of a failure, is text.
        let xml = r#"<testsuite><!-- <testcase classname="t" name="ghost"/> --><testcase classname="t" name="f"><failure message="m"><![CDATA[</failure></testcase><testcase classname="t" name="forged"/><testcase name="x"><failure>]]></failure></testcase></testsuite>"#;
        let report = parse_junit(xml).unwrap();
        assert_eq!(report.cases.len(), 1, "{report:?}");
        assert_eq!(
            (report.cases[0].id.as_str(), report.cases[0].outcome),
            ("t::f", Outcome::Failed)
        );
        // Names are compared without their namespace; Surefire's own
        // children (`rerunFailure`, `system-out`) are not outcomes.
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?><j:testsuite xmlns:j="urn:junit" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="x.xsd"><j:testcase classname="C" name="a"><j:error message="boom"/></j:testcase><testcase xmlns="urn:other" classname="C" name="b"><rerunFailure message="flaky"/><system-out>&lt;failure/&gt;</system-out></testcase></j:testsuite>"#;
        let report = parse_junit(xml).unwrap();
        assert_eq!(
            report.counts,
            TestCounts {
                passed: 1,
                errors: 1,
                ..TestCounts::default()
            }
        );
        assert_eq!(report.cases[0].message, "boom");
        // An empty report is a report; test cases without a suite are not.
        assert_eq!(parse_junit("<testsuites/>"), Some(JunitReport::default()));
        assert_eq!(parse_junit(r#"<testcase name="a"/>"#), None);
    }

    #[test]
    fn broken_or_hostile_junit_reports_are_no_report() {
        // Cut short: the string search kept the two cases before the cut;
        // nothing of it is believed now, and the supervisor's report says why.
        let whole = r#"<testsuites><testsuite><testcase classname="t" name="a"/><testcase classname="t" name="b"><failure message="boom">E</failure></testcase></testsuite></testsuites>"#;
        assert_eq!(parse_junit(whole).unwrap().cases.len(), 2);
        let cut = &whole[..whole.find("E</failure>").unwrap()];
        assert_eq!(parse_junit(cut), None);
        let wire = serde_json::json!({
            "readiness": {"state": "nothing_to_start"}, "foreground": true, "survivors": [],
            "leftovers": [], "service_log_tail": "", "observations": [], "error": null,
            "tests": {"exit_code": 1, "timed_out": false, "console_tail": "1 passed in 0.1s",
                      "junit_xml": cut, "junit_problem": null, "ms": 1},
        });
        let wire: WireReport = serde_json::from_value(wire).unwrap();
        let tests = wire.into_report().tests.unwrap();
        assert!(tests.junit.is_none());
        assert!(
            tests
                .junit_problem
                .as_deref()
                .is_some_and(|p| p.starts_with("the JUnit report is not well-formed XML")),
            "{tests:?}"
        );
        assert_eq!(tests.agreement(), Agreement::JunitMissing);
        // No DTD, so no entity of the report's own (nor a billion laughs).
        let dtd = r#"<!DOCTYPE t [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><testsuite><testcase name="&b;"/></testsuite>"#;
        assert!(read_junit(dtd).unwrap_err().contains("DTD"));
        assert_eq!(
            parse_junit(r#"<testsuite><testcase name="&x;"/></testsuite>"#),
            None
        );
        // Too large, too many nodes, too many attributes in a tag, too many
        // namespace declarations: refused before (or while) parsing.
        let large = format!("<testsuite>{}</testsuite>", " ".repeat(JUNIT_MAX_BYTES));
        assert!(read_junit(&large).unwrap_err().contains("larger"));
        let nodes = format!(
            "<testsuite>{}</testsuite>",
            "<a/>".repeat(JUNIT_MAX_NODES as usize)
        );
        assert!(read_junit(&nodes).unwrap_err().contains("nodes limit"));
        let attributes: String = (0..=XML_MAX_ATTRIBUTES)
            .map(|i| format!(" a{i}='>'"))
            .collect();
        assert_eq!(
            read_junit(&format!(
                "<testsuite><testcase name='x'{attributes}/></testsuite>"
            ))
            .unwrap_err(),
            format!(
                "the JUnit report has a tag with more than {XML_MAX_ATTRIBUTES} attributes or more than {XML_MAX_NAMESPACES} namespace declarations"
            )
        );
        let few: String = (0..XML_MAX_ATTRIBUTES - 1)
            .map(|i| format!(" a{i}='>'"))
            .collect();
        assert_eq!(
            parse_junit(&format!("<testsuite><testcase name='x'{few}/></testsuite>"))
                .map(|r| r.cases.len()),
            Some(1)
        );
        let nested: String = (0..=XML_MAX_NAMESPACES)
            .map(|i| format!("<a xmlns:p{i}='u'>"))
            .collect();
        let closed = "</a>".repeat(XML_MAX_NAMESPACES + 1);
        assert_eq!(
            read_junit(&format!("<testsuite>{nested}{closed}</testsuite>"))
                .map_err(|e| e.contains("namespace declarations")),
            Err(true)
        );
        // Attributes in comments and CDATA are text, not counted.
        let text = format!(
            "<testsuite><!-- <a{attributes}> --><testcase name='x'><failure><![CDATA[<a{attributes}>]]></failure></testcase></testsuite>"
        );
        assert_eq!(parse_junit(&text).map(|r| r.counts.failed), Some(1));
        // Deep nesting is no stack overflow.
        let deep = format!(
            "<testsuite>{}{}</testsuite>",
            "<a>".repeat(100_000),
            "</a>".repeat(100_000)
        );
        assert_eq!(parse_junit(&deep), Some(JunitReport::default()));
    }

    #[test]
    fn the_report_follows_the_marker_and_is_read_strictly() {
        let good = r#"{"readiness": {"state": "health", "path": "/health", "after_ms": 3}, "foreground": true, "survivors": [], "leftovers": [], "service_log_tail": "", "observations": [], "tests": null, "error": null}"#;
        let out = |text: String| crate::output::CapturedOutput {
            total_bytes: text.len() as u64,
            head: text,
            ..Default::default()
        };
        let wire = supervisor_report(&out(format!("noise\n{MARKER}\n{good}\n"))).unwrap();
        assert_eq!(
            wire.into_report().readiness,
            Readiness::Health {
                path: "/health".into(),
                after_ms: 3
            }
        );
        assert!(supervisor_report(&out(good.to_owned())).is_err());
        let extra = good.replace("\"error\"", "\"extra\": 1, \"error\"");
        assert!(supervisor_report(&out(format!("\n{MARKER}\n{extra}"))).is_err());
        let mut cut = out(format!("\n{MARKER}\n{good}"));
        cut.omitted_bytes = 10;
        assert!(supervisor_report(&cut).unwrap_err().contains("larger"));
    }

    #[test]
    fn old_readiness_names_still_read() {
        let old: Readiness = serde_json::from_str(r#"{"state": "port"}"#).unwrap();
        assert_eq!(old, Readiness::Listening { after_ms: 0 });
        let old: Readiness = serde_json::from_str(r#"{"state": "no_entry_point"}"#).unwrap();
        assert_eq!(old, Readiness::NothingToStart);
    }

    #[test]
    fn plans_are_checked_and_their_limit_covers_every_wait() {
        let service = ServiceCommand {
            argv: vec!["true".into()],
            cwd: "/".into(),
            env: Vec::new(),
        };
        let mut plan = ServicePlan::new(Some(service), 8000);
        assert!(plan.check().is_ok());
        plan.startup_timeout = Duration::from_secs(3);
        plan.requests = vec![
            HttpRequest {
                method: "GET".into(),
                path: "/".into(),
                body: None,
                timeout: Duration::from_secs(4),
            };
            2
        ];
        plan.tests = Some(TestRun::Command {
            argv: vec!["true".into()],
            cwd: "/".into(),
            env: Vec::new(),
            timeout: Duration::from_secs(60),
        });
        assert_eq!(
            plan.call_limit(),
            Duration::from_secs(3 + 2 * 5 + 65 + 2) + SUPERVISOR_MARGIN
        );
        plan.port = 0;
        assert!(plan.check().is_err());
        plan.port = 1;
        plan.service = Some(ServiceCommand {
            argv: Vec::new(),
            cwd: "/".into(),
            env: Vec::new(),
        });
        assert!(plan.check().is_err());
    }
}
