//! One task's result: the three benchmark metrics in each of their
//! definitions, the route-level coverage, and every fault with its reason.

use serde::{Deserialize, Serialize};

use super::coverage::{AcRule, Coverage};
use super::driver::StartCommand;
use super::env::BuildOutcome;
use super::routes::RouteCoverage;
use super::spec::{FrameworkHint, Language};
use super::testlog::{TestCase, TestCounts};
use crate::results::ResultRecord;
use sandbox::Readiness;

/// How far a task's evaluation got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GenesisStatus {
    /// Built (or tried to), started (or tried to), tested.
    Evaluated,
    /// The generated-repository directory has no `<task>/`.
    NoRepository,
    /// Java: the build needs artifacts that cannot be had here (Maven
    /// Central unreachable); scored statically only.
    BuildUnavailable,
    /// The harness itself could not evaluate the task (sandbox or file
    /// system failure); the message says why.
    Error,
}

impl GenesisStatus {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            GenesisStatus::Evaluated => "evaluated",
            GenesisStatus::NoRepository => "no_repository",
            GenesisStatus::BuildUnavailable => "build_unavailable",
            GenesisStatus::Error => "error",
        }
    }
}

/// Something that went wrong in a repository (not in the harness).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// An install or the compilation failed.
    BuildFailed,
    /// Java artifacts are missing and cannot be downloaded.
    BuildUnavailable,
    /// Nothing to start.
    NoEntryPoint,
    /// The service process ended during the startup wait.
    ServiceExited,
    /// The service ran through the startup wait without answering.
    NeverListened,
    /// The start script left processes running after it ended or after
    /// the service was stopped (a daemon).
    LeftDaemon,
    /// The golden tests hit their time limit.
    TestsTimedOut,
    /// Every reported test was skipped.
    AllSkipped,
    /// No test reported at all.
    NoTests,
    /// The checkout has no golden tests for the task.
    NoGoldenTests,
    /// Something answered on the port before the service was started
    /// (process isolation, where ports are the host's): nothing was
    /// started or tested.
    PortBusy,
    /// The JUnit report and pytest's console summary disagree, or the
    /// report is missing: the fewer passes were scored.
    TestsDisagree,
    /// The session's supervisor left no report (the service may have
    /// killed it): nothing it would have seen counts, and the golden tests
    /// count as not passed.
    SessionFailed,
}

/// A fault with its reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    /// What kind.
    pub kind: FaultKind,
    /// The reason, in words.
    pub detail: String,
}

/// The three AC rules' results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcResults {
    /// `eval_harness/api_coverage.py`.
    pub harness: Coverage,
    /// `calculate_api_coverage.py`.
    pub legacy: Coverage,
    /// `calculate_api_coverage_agents.py` / `_ide.py` (the paper's tables).
    pub paper: Coverage,
}

impl AcResults {
    /// One rule's result.
    pub fn of(&self, rule: AcRule) -> &Coverage {
        match rule {
            AcRule::Harness => &self.harness,
            AcRule::Legacy => &self.legacy,
            AcRule::Paper => &self.paper,
        }
    }
}

/// The deployment phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartOutcome {
    /// The start command found.
    pub command: StartCommand,
    /// The command line run (for the uvicorn fallback, the module chosen).
    pub shown: String,
    /// How the readiness probe ended.
    pub readiness: Readiness,
    /// Seconds until it ended (rounded).
    pub ready_after_s: u32,
    /// DSR as the harness's entrypoint decides it: ready on a health path
    /// or the port, or still running at the end of the wait.
    pub dsr: bool,
    /// The entrypoint's `DSR_MESSAGE`.
    pub dsr_message: String,
    /// DSR as `test_dsr_repos.py` decides it: dependencies installed, a
    /// `start.sh` found, and the process alive at the end of the window or
    /// ended with a success (or port-conflict) message. Derived from the
    /// same run (see the module documentation of `run`).
    pub dsr_legacy: bool,
    /// Why `dsr_legacy` is what it is.
    pub dsr_legacy_message: String,
    /// The service answered (a health path or its port) during the wait.
    pub answered: bool,
    /// Processes the start script left when it ended during the wait
    /// (`pid command`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub survivors: Vec<String>,
    /// Processes still running after the service's group was stopped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leftovers: Vec<String>,
    /// The end of the service's output.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub log_tail: String,
}

/// Where the test counts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CountSource {
    /// pytest's JUnit XML report.
    Junit,
    /// The console log, parsed as the harness parses it (no report was
    /// written: the run was killed or pytest could not start).
    Console,
    /// Maven Surefire's console lines (Java), as the harness parses them.
    Surefire,
}

/// The golden tests' outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestOutcome {
    /// The counts.
    pub counts: TestCounts,
    /// Where they come from.
    pub source: CountSource,
    /// The harness's denominator: `passed + failed + errors` for Python,
    /// Surefire's `Tests run` (skipped included) for Java.
    pub harness_total: u32,
    /// Pass@1 as the harness computes it per repository: `passed /
    /// harness_total`, rounded to four places; 0 when the total is 0.
    pub pass_at_1: f64,
    /// The harness averages Pass@1 only over repositories with a total
    /// above 0 (`compute_summary`).
    pub counted: bool,
    /// The paper's definition: every golden test passed (none failed,
    /// errored or was skipped, and at least one ran).
    pub all_passed: bool,
    /// What the harness's console parser reads from the same log, when it
    /// differs from `counts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness_console: Option<TestCounts>,
    /// The run hit the test time limit.
    pub timed_out: bool,
    /// The test command's exit code.
    pub exit_code: Option<i32>,
    /// The tests that did not pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_passed: Vec<TestCase>,
}

/// What the task itself declares, whatever the repository: endpoints by
/// each reading of its README, and test functions in its golden tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskFacts {
    /// Endpoints `eval_harness/api_coverage.py` extracts.
    pub endpoints_harness: usize,
    /// Endpoints the paper's AC script extracts.
    pub endpoints_paper: usize,
    /// Endpoints `calculate_api_coverage.py` extracts.
    pub endpoints_legacy: usize,
    /// Endpoints the route-level reading finds.
    pub endpoints_declared: usize,
    /// Test functions in the golden tests (`def test_…` as
    /// `evaluate_repos.py`'s `count_tests_ast` counts them; Java `@Test`).
    pub golden_test_functions: usize,
}

/// One task's record (a line of `results.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenesisRecord {
    /// The task.
    pub task: String,
    /// Its language.
    pub language: Language,
    /// Its framework hint.
    pub framework: FrameworkHint,
    /// Its port.
    pub port: u16,
    /// How far the evaluation got.
    pub status: GenesisStatus,
    /// What the task declares.
    #[serde(default)]
    pub facts: TaskFacts,
    /// API coverage by the benchmark's rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ac: Option<AcResults>,
    /// Route-level coverage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routes: Option<RouteCoverage>,
    /// The build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<BuildOutcome>,
    /// The deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<StartOutcome>,
    /// The golden tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests: Option<TestOutcome>,
    /// What went wrong in the repository.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<Fault>,
    /// How the task was isolated (`namespaces` or `process`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub isolation: String,
    /// Wall-clock time of the whole evaluation, milliseconds.
    pub wall_ms: u64,
    /// A harness error, or a note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl ResultRecord for GenesisRecord {
    fn task_id(&self) -> &str {
        &self.task
    }
}

impl GenesisRecord {
    /// A record with nothing measured yet.
    pub fn new(
        task: &str,
        language: Language,
        framework: FrameworkHint,
        port: u16,
        status: GenesisStatus,
    ) -> Self {
        GenesisRecord {
            task: task.to_owned(),
            language,
            framework,
            port,
            status,
            facts: TaskFacts::default(),
            ac: None,
            routes: None,
            build: None,
            start: None,
            tests: None,
            faults: Vec::new(),
            isolation: String::new(),
            wall_ms: 0,
            message: None,
        }
    }

    /// Adds a fault.
    pub fn fault(&mut self, kind: FaultKind, detail: impl Into<String>) {
        self.faults.push(Fault {
            kind,
            detail: detail.into(),
        });
    }

    /// Whether the service and tests ran (DSR and Pass@1 are measured).
    pub fn ran(&self) -> bool {
        self.status == GenesisStatus::Evaluated
    }

    /// The harness's DSR, when measured.
    pub fn dsr(&self) -> Option<bool> {
        self.ran()
            .then(|| self.start.as_ref().is_some_and(|s| s.dsr))
    }
}
