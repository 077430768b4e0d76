//! What the server serves and allows.

use std::path::{Path, PathBuf};

use crate::Error;

/// How `run_python` and `run_shell` run when code execution is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecPolicy {
    /// The sandbox's isolation (namespaces when available, by default).
    pub isolation: sandbox::Isolation,
    /// The user code runs as (None: the sandbox's default, never root).
    pub run_as: Option<sandbox::RunAs>,
    /// Whether code may reach the package registries (`pip install`).
    pub package_registry: bool,
}

impl Default for ExecPolicy {
    fn default() -> Self {
        ExecPolicy {
            isolation: sandbox::Isolation::Auto,
            run_as: None,
            package_registry: true,
        }
    }
}

/// The server's configuration ([`McpConfig::builder`]).
#[derive(Debug, Clone)]
pub struct McpConfig {
    pub(crate) repositories: Vec<PathBuf>,
    pub(crate) exec: Option<ExecPolicy>,
    pub(crate) cache_home: Option<PathBuf>,
}

impl McpConfig {
    /// A configuration with no repository yet.
    pub fn builder() -> McpConfigBuilder {
        McpConfigBuilder {
            repositories: Vec::new(),
            exec: None,
            cache_home: None,
        }
    }

    /// The served repositories, canonical, the primary one first.
    pub fn repositories(&self) -> &[PathBuf] {
        &self.repositories
    }

    /// How code runs, when it may.
    pub fn exec(&self) -> Option<ExecPolicy> {
        self.exec
    }
}

/// Builds an [`McpConfig`].
#[derive(Debug, Clone)]
pub struct McpConfigBuilder {
    repositories: Vec<PathBuf>,
    exec: Option<ExecPolicy>,
    cache_home: Option<PathBuf>,
}

impl McpConfigBuilder {
    /// Serves this repository too (the first one named is the primary:
    /// relative paths and qualified names resolve there first).
    pub fn repository(mut self, path: impl Into<PathBuf>) -> Self {
        self.repositories.push(path.into());
        self
    }

    /// Offers `run_python` and `run_shell`, run in the sandbox under
    /// `policy`, in a working directory of the server's own; the served
    /// repositories stay read-only.
    pub fn allow_exec(mut self, policy: ExecPolicy) -> Self {
        self.exec = Some(policy);
        self
    }

    /// Reads and writes the analysis cache under this home (the one
    /// `repo-agent analyze` uses), so a restarted server parses only what
    /// changed. None (the default) keeps the facts in memory only.
    pub fn cache_home(mut self, home: impl Into<Option<PathBuf>>) -> Self {
        self.cache_home = home.into();
        self
    }

    /// Checks the repositories: each must be a directory, and is kept as
    /// its canonical path.
    pub fn build(self) -> Result<McpConfig, Error> {
        if self.repositories.is_empty() {
            return Err(Error::NoRepository);
        }
        let mut repositories = Vec::with_capacity(self.repositories.len());
        for path in &self.repositories {
            let canonical = canonical_dir(path)?;
            if !repositories.contains(&canonical) {
                repositories.push(canonical);
            }
        }
        Ok(McpConfig {
            repositories,
            exec: self.exec,
            cache_home: self.cache_home,
        })
    }
}

fn canonical_dir(path: &Path) -> Result<PathBuf, Error> {
    let not_a_dir = |reason: String| Error::NotADirectory {
        path: path.to_path_buf(),
        reason,
    };
    let canonical = std::fs::canonicalize(path).map_err(|e| not_a_dir(e.to_string()))?;
    if !canonical.is_dir() {
        return Err(not_a_dir("not a directory".to_owned()));
    }
    std::fs::read_dir(&canonical).map_err(|e| not_a_dir(e.to_string()))?;
    Ok(canonical)
}
