//! RepoGenesis (seed 003): evaluating generated microservice repositories
//! the way the benchmark's own scripts do, without Docker.
//!
//! A run takes the benchmark's checkout ([`GenesisBenchmark`]: `repo/<task>/`
//! with the README and golden tests, `eval_harness/constants.py` with each
//! task's language, port and framework) and a directory of generated
//! repositories (`<generated>/<task>/`). For each task ([`GenesisHarness`]):
//!
//! 1. API coverage by the benchmark's three static rules ([`AcRule`],
//!    reimplemented exactly from its scripts) and route-level coverage
//!    from repo-graph's routes ([`route_coverage`]);
//! 2. a fresh workspace with the repository copied, and the golden tests
//!    copied by the harness OUTSIDE it (`<out>/golden/<task>/tests`,
//!    read-only in the sandbox; Java's are overlaid into `src/test`, which
//!    Maven needs);
//! 3. the environments: two cached virtualenvs, the service's with the
//!    repository's requirements and the tests' with the golden tests'
//!    requirements and the test tools ([`EnvBuilder`], network on), or for
//!    Java a check of the `pom.xml`'s artifacts against the local Maven
//!    repository ([`missing_artifacts`]);
//! 4. one sandbox service session (`Sandbox::run_service`) with a private
//!    loopback and no network: the service started as the benchmark's
//!    entrypoint starts it ([`start_command`]), probed on its health paths
//!    or port, the golden tests run by pytest in the tests' interpreter
//!    with the harness's rootdir and ini (no repository `conftest.py`,
//!    `pytest.py`, `.pth` file or plugin can reach them), the JUnit report
//!    ([`parse_junit`]) read from a pipe and held against the console, and
//!    the whole process tree stopped;
//! 5. a [`GenesisRecord`] appended to `results.jsonl`, with every fault as
//!    data ([`FaultKind`]).
//!
//! The [`GenesisReport`] gives Pass@1, DSR and AC in each of the
//! benchmark's definitions, route coverage, breakdowns per language,
//! framework and difficulty, the faults, and the paper's published rows
//! ([`published_genesis`]) as JSON, Markdown and HTML.

mod config;
mod coverage;
mod driver;
mod env;
mod failure;
mod maven;
mod published;
mod record;
mod report;
mod routes;
mod run;
mod spec;
mod testlog;

pub use config::{GenesisConfig, GenesisConfigBuilder};
pub use coverage::{
    AcRule, ApiMethod, Coverage, Endpoint, MAX_FILE_BYTES, MAX_FILES, SourceFiles, api_coverage,
    coverage_of, extract_endpoints, is_implemented, python_text,
};
pub use driver::{
    StartCommand, find_start_script, legacy_file_exists, legacy_start_script_exists,
    legacy_success_pattern, start_command,
};
pub use env::{
    BuildOutcome, EnvBuilder, EnvConfig, EnvInputs, EnvRole, FALLBACK_PACKAGES, TEST_TOOLS,
    TaskEnvs,
};
pub use failure::{EvaluationError, SandboxPurpose};
pub use maven::{
    Artifact, ArtifactRole, java17, missing_artifacts, missing_from_log, pom_artifacts,
};
pub use published::{
    Difficulty, GENESIS_SOURCE, PublishedDsrAc, PublishedDsrCount, PublishedFineTune,
    PublishedGenesis, PublishedPass, PublishedTask, SystemKind, published_genesis,
};
pub use record::{
    AcResults, CountSource, Fault, FaultKind, GenesisRecord, GenesisStatus, StartOutcome,
    TestOutcome,
};
pub use report::{
    FaultRow, GenesisMeta, GenesisReport, GenesisSummary, GroupScores, Mean, Ratio, Scores,
};
pub use routes::{DeclaredEndpoint, RouteCoverage, coverage_by_routes, route_coverage};
pub use run::{GenesisEvent, GenesisHarness, GenesisOutcome};
pub use sandbox::Readiness;
pub use spec::{
    Constants, FrameworkHint, GenesisBenchmark, GenesisTask, GoldenTests, Language, Phase,
    PhaseTimeouts, SpecSource, TaskSpec, Timeouts, VERIFIED_SPECS, parse_constants, verified_specs,
};
pub use testlog::{
    JunitReport, Outcome, SurefireCounts, TestCase, TestCounts, harness_pytest_counts,
    harness_surefire_counts, parse_junit,
};
