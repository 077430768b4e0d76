//! How a RepoGenesis evaluation is set up, and its builder.

use std::path::PathBuf;
use std::time::Duration;

use sandbox::Isolation;

use crate::repogenesis::spec::Phase;

/// How a RepoGenesis evaluation is set up: [`GenesisConfig::new`] for the
/// defaults, or [`GenesisConfig::builder`]; the fields stay readable and
/// adjustable.
///
/// ```
/// use bench_harness::repogenesis::GenesisConfig;
///
/// let config = GenesisConfig::builder("RepoGenesis", "generated", "target/eval")
///     .tasks(vec!["flask-todo".into()])
///     .jobs(2)
///     .isolation(sandbox::Isolation::Process)
///     .build();
/// assert_eq!((config.jobs, config.tasks.len()), (2, 1));
/// assert!(config.package_registry);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GenesisConfig {
    /// The RepoGenesis checkout (`repo/<task>/`, `eval_harness/`).
    pub root: PathBuf,
    /// One generated repository per task: `<generated>/<task>/`.
    pub generated: PathBuf,
    /// Where everything goes: `results.jsonl`, `report.*`, `work/<task>/`,
    /// `venvs/`.
    pub out_dir: PathBuf,
    /// Tasks to evaluate (all when empty).
    pub tasks: Vec<String>,
    /// Tasks evaluated at once (forced to 1 without namespace isolation).
    pub jobs: usize,
    /// Skip tasks `results.jsonl` already has; without it an existing file
    /// is moved aside.
    pub resume: bool,
    /// Per-phase limits replacing the benchmark's (both languages).
    pub phase_limits: Vec<(Phase, Duration)>,
    /// Isolation of builds, services and tests.
    pub isolation: Isolation,
    /// Let pip reach the package registry in the build phase.
    pub package_registry: bool,
    /// Where Python environments are cached (default `out_dir/venvs`).
    pub venv_dir: Option<PathBuf>,
    /// The local Maven repository (default `~/.m2/repository`).
    pub maven_repo: Option<PathBuf>,
    /// Keep each task's workspace (default: removed after the task).
    pub keep_workspaces: bool,
}

impl GenesisConfig {
    /// Defaults: every task, one job, no resume, the benchmark's timeouts,
    /// automatic isolation, registry access for pip.
    pub fn new(
        root: impl Into<PathBuf>,
        generated: impl Into<PathBuf>,
        out_dir: impl Into<PathBuf>,
    ) -> Self {
        GenesisConfig {
            root: root.into(),
            generated: generated.into(),
            out_dir: out_dir.into(),
            tasks: Vec::new(),
            jobs: 1,
            resume: false,
            phase_limits: Vec::new(),
            isolation: Isolation::Auto,
            package_registry: true,
            venv_dir: None,
            maven_repo: None,
            keep_workspaces: false,
        }
    }
}

impl GenesisConfig {
    /// A builder from [`GenesisConfig::new`]'s defaults.
    pub fn builder(
        root: impl Into<PathBuf>,
        generated: impl Into<PathBuf>,
        out_dir: impl Into<PathBuf>,
    ) -> GenesisConfigBuilder {
        GenesisConfigBuilder {
            config: GenesisConfig::new(root, generated, out_dir),
        }
    }
}

/// Builds a [`GenesisConfig`]; see each field for its meaning and default.
#[derive(Debug, Clone)]
#[must_use]
pub struct GenesisConfigBuilder {
    config: GenesisConfig,
}

impl GenesisConfigBuilder {
    crate::config_builder::setters! {
        /// Tasks to evaluate (all when empty).
        tasks: Vec<String>,
        /// Tasks evaluated at once.
        jobs: usize,
        /// Skip tasks the results file already has.
        resume: bool,
        /// Per-phase limits replacing the benchmark's.
        phase_limits: Vec<(Phase, Duration)>,
        /// Isolation of builds, services and tests.
        isolation: Isolation,
        /// Let pip reach the package registry in the build phase.
        package_registry: bool,
        /// Where Python environments are cached.
        venv_dir: Option<PathBuf>,
        /// The local Maven repository.
        maven_repo: Option<PathBuf>,
        /// Keep each task's workspace.
        keep_workspaces: bool,
    }

    /// The configuration.
    pub fn build(self) -> GenesisConfig {
        self.config
    }
}
