//! A task repository's Python environment, prepared before an episode.
//!
//! A small model spends its turns on `ModuleNotFoundError` unless the
//! repository's dependencies are already there (GitTaskBench's authors
//! trace most failures to environment setup). [`prepare_environment`]
//! builds a virtualenv in the sandbox with what the repository declares:
//!
//! Packages are installed by uv (its pinned PyPI wheel, installed once
//! into the cache) or, where uv cannot be had, by pip ([`Installer`]):
//!
//! - every `requirements*.txt` at its root, with `pip install -r`; when one
//!   fails, its requirements are tried one by one to name the failing ones
//!   and pip's reason;
//! - the `dependencies` of `pyproject.toml`'s `[project]`, the
//!   `install_requires` of `setup.cfg`, and the string literals of
//!   `setup.py`'s `install_requires = [...]`, read statically: the
//!   repository's own code never runs while its environment is built.
//!
//! The repository itself is importable through `PYTHONPATH` (the episode's
//! sandbox sets it); the report checks that its top-level packages import
//! in the new environment, and when one fails with `ModuleNotFoundError`
//! the missing module is installed by its PyPI name (a few rounds), which
//! covers dependencies no file declares in a readable way. Every installed
//! distribution's `RECORD` is then checked against the disk, and again
//! each time a cached environment is reused: an installer stopped half-way
//! leaves distributions whose later installs are no-ops, so those are
//! reinstalled at their version ([`EnvironmentReport::repaired`]).
//! Environments are cached under the given
//! directory by a hash of those files and the interpreter's version, so a
//! second task on the same repository reuses the first one's.
//!
//! ```no_run
//! # async fn demo() -> Result<(), agent::Error> {
//! use agent::environment::{EnvironmentRequest, prepare_environment};
//!
//! let request = EnvironmentRequest::new("code_base/PyPDF2", "/tmp/envs");
//! let report = prepare_environment(&request).await?;
//! println!("{} in {:.0} s: {}", report.repo, report.seconds, report.summary());
//! # Ok(()) }
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Instant;

use regex::Regex;
use sandbox::{DEFAULT_PATH, Isolation, PythonEnv, Sandbox, SandboxConfig, SandboxError};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Error;
use crate::run::CodeUser;

/// Which PyPI distribution provides an import, and what the standard library
/// holds: the knowledge behind the requirement checks here, for callers that
/// need it too (GitTaskBench's grading scripts, for instance).
pub use crate::imports::{is_stdlib, pip_name, provides, requirement_name};

/// Requirements tried one by one after a file fails, at most.
const MAX_SINGLE_TRIES: usize = 40;

/// The largest dependency file read (`requirements*.txt`, `setup.py`, ...).
const MAX_DEPENDENCY_FILE: u64 = 1 << 20;

/// Modules installed by their import name per package, at most.
const MAX_IMPORT_FIXES: usize = 8;

/// Damaged distributions reinstalled per preparation, at most.
const MAX_REPAIRS: usize = 20;

/// The disk budget of one install step, unless the request sets another.
///
/// The sandbox's default (8 GiB) is sized for model-written code, not for
/// an installer: InvisibleWatermark's `torch` brings CUDA wheels that uv
/// unpacks into its cache (about 4.7 GB) and then copies into the
/// virtualenv (4.6 GB), and the default budget stopped it 44 s in with
/// `libcublas.so.13` not yet copied (GitTaskBench run 9).
pub const DEFAULT_PREPARATION_DISK_BUDGET: u64 = 32 << 30;

/// Characters of pip's output kept per step.
const LOG_TAIL: usize = 1500;

/// The `uv` release [`Installer::Uv`] installs from PyPI, and the SHA-256
/// of its Linux wheels (x86_64, aarch64): pip refuses any other file.
const UV_VERSION: &str = "0.13.9";
const UV_WHEEL_SHA256: [&str; 2] = [
    "d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19",
    "5435c5ce14a56431208ca0996416d310f1598e8c2c8ba707688985a16bb82dbe",
];

/// What installs the packages of an environment.
///
/// Measured on the six light repositories of GitTaskBench's runnable
/// tasks, cold caches, in the sandbox (docs/PERFORMANCE.md): uv took 143 s
/// in all where pip took 260 s, and 35 s where pip took 117 s on the
/// largest (PDFPlumber, 125 packages), with the same packages installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Installer {
    /// uv, or pip when uv cannot be installed (offline, say: without the
    /// registry or a `--find-links` location it is not even tried, unless
    /// installed already); the report names the one that ran.
    #[default]
    Auto,
    /// `pip install`, from the virtualenv's own pip.
    Pip,
    /// `uv pip install`, with `uv` installed once from its pinned PyPI
    /// wheel into the cache directory (`.tools/uv-VERSION`).
    Uv,
}

impl Installer {
    /// Its name on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Installer::Auto => "auto",
            Installer::Pip => "pip",
            Installer::Uv => "uv",
        }
    }
}

impl std::str::FromStr for Installer {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        match name {
            "auto" => Ok(Installer::Auto),
            "pip" => Ok(Installer::Pip),
            "uv" => Ok(Installer::Uv),
            other => Err(format!("the installer is auto, pip or uv, not {other:?}")),
        }
    }
}

fn pip_installer() -> Installer {
    Installer::Pip
}

/// How packages get installed in one preparation.
enum Install {
    Pip,
    /// The `uv` binary.
    Uv(PathBuf),
}

/// Part of every cache key: bumped when what a preparation does changes,
/// so environments made by an older one are not reused.
const PREPARATION_VERSION: &str = "2";

/// The report file in an environment's directory.
const REPORT: &str = "prepared.json";

/// What to prepare, and where.
#[derive(Debug, Clone)]
pub struct EnvironmentRequest {
    /// The repository.
    pub repo: PathBuf,
    /// Environments are kept here, one directory each.
    pub cache_dir: PathBuf,
    /// The sandbox's isolation.
    pub isolation: Isolation,
    /// Whether pip may reach the package registry (else `--no-index`).
    pub package_registry: bool,
    /// Extra arguments for every `pip install` (e.g. `--find-links DIR`).
    pub pip_args: Vec<String>,
    /// Who runs pip (never root).
    pub code_user: CodeUser,
    /// What installs the packages (default [`Installer::Auto`]).
    pub installer: Installer,
    /// How much one install step may grow a file system by, in bytes
    /// (default [`DEFAULT_PREPARATION_DISK_BUDGET`]; `None`: unbounded).
    pub disk_budget: Option<u64>,
}

impl EnvironmentRequest {
    /// The environment of `repo`, cached under `cache_dir`, built with
    /// automatic isolation and the package registry.
    pub fn new(repo: impl Into<PathBuf>, cache_dir: impl Into<PathBuf>) -> Self {
        Self {
            repo: repo.into(),
            cache_dir: cache_dir.into(),
            isolation: Isolation::default(),
            package_registry: true,
            pip_args: Vec::new(),
            code_user: CodeUser::default(),
            installer: Installer::default(),
            disk_budget: Some(DEFAULT_PREPARATION_DISK_BUDGET),
        }
    }

    /// The environment of `repo` under `cache_dir`, built with `config`'s
    /// sandbox settings (isolation, registry access, code user), as the
    /// episode that uses it runs code.
    pub fn for_agent(
        repo: impl Into<PathBuf>,
        cache_dir: impl Into<PathBuf>,
        config: &crate::AgentConfig,
    ) -> Self {
        Self {
            isolation: config.isolation,
            package_registry: config.package_registry,
            code_user: config.code_user,
            ..Self::new(repo, cache_dir)
        }
    }
}

/// One `pip install` of the preparation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallStep {
    /// Where the requirements come from (`requirements.txt`,
    /// `pyproject.toml`, ...).
    pub source: String,
    /// Whether pip succeeded.
    pub ok: bool,
    /// The step failed as a whole, but then each of its requirements
    /// installed alone (all of them were tried).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recovered: bool,
    /// The end of pip's output.
    pub log_tail: String,
}

/// A requirement pip could not install, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailingRequirement {
    /// The requirement as declared.
    pub requirement: String,
    /// pip's error line.
    pub reason: String,
}

/// Whether one of the repository's packages imports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportCheck {
    /// The top-level package.
    pub module: String,
    /// Whether `import module` worked.
    pub ok: bool,
    /// The last line of the error, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An installed distribution whose files are not all on disk: what an
/// installer stopped half-way leaves, which a later `pip install` of the
/// same requirement takes for installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DamagedDistribution {
    /// The distribution's name.
    pub name: String,
    /// Its installed version.
    pub version: String,
    /// How many of the files its `RECORD` lists are missing.
    pub missing: u64,
    /// One of them, as `RECORD` spells it.
    pub example: String,
}

/// What [`prepare_environment`] made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentReport {
    /// The repository's directory name.
    pub repo: String,
    /// The virtualenv.
    pub venv: PathBuf,
    /// The hash of the declared dependencies and the interpreter (not of
    /// the installer: either builds the same environment).
    pub key: String,
    /// What installed the packages: [`Installer::Pip`] or
    /// [`Installer::Uv`] (reports written before uv say pip).
    #[serde(default = "pip_installer")]
    pub installer: Installer,
    /// Taken from the cache rather than built now.
    #[serde(default)]
    pub reused: bool,
    /// The declared requirements, in order.
    pub requirements: Vec<String>,
    /// Every pip step.
    pub steps: Vec<InstallStep>,
    /// The requirements that failed.
    pub failing: Vec<FailingRequirement>,
    /// The import checks.
    pub imports: Vec<ImportCheck>,
    /// Packages installed because an import check named them missing
    /// (`name (imported by pkg)`).
    #[serde(default)]
    pub import_fixes: Vec<String>,
    /// Distributions found with files missing and reinstalled, as
    /// `name==version`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repaired: Vec<String>,
    /// Distributions still missing files after the repairs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub damaged: Vec<DamagedDistribution>,
    /// Packages installed, as `name==version`.
    pub installed: Vec<String>,
    /// Time to build (or to find) it.
    pub seconds: f64,
}

impl EnvironmentReport {
    /// Whether every declared requirement installed: each step did, or
    /// each of a failed step's requirements did alone.
    pub fn complete(&self) -> bool {
        self.steps.iter().all(|s| s.ok || s.recovered)
    }

    /// Whether the environment can be taken as it is: every declared
    /// requirement installed, nothing left damaged, every import check
    /// passed.
    pub fn sound(&self) -> bool {
        self.complete() && self.damaged.is_empty() && self.imports.iter().all(|c| c.ok)
    }

    /// The environment's interpreter.
    pub fn python(&self) -> PathBuf {
        self.venv.join("bin").join("python")
    }

    /// One line: installed or not, the failing requirements, the imports.
    pub fn summary(&self) -> String {
        let mut parts = vec![match (self.complete(), self.requirements.len()) {
            (_, 0) => "no declared dependencies".to_owned(),
            (true, n) => format!("{n} declared requirements installed"),
            (false, n) => format!(
                "{} of {n} declared requirements failed ({})",
                self.failing.len().max(1),
                self.failing
                    .iter()
                    .map(|f| format!("{}: {}", f.requirement, f.reason))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        }];
        if !self.imports.is_empty() {
            let imports: Vec<String> = self
                .imports
                .iter()
                .map(|i| match &i.error {
                    None => format!("import {} ok", i.module),
                    Some(error) => format!("import {} failed: {error}", i.module),
                })
                .collect();
            parts.push(imports.join(", "));
        }
        if !self.import_fixes.is_empty() {
            parts.push(format!(
                "installed for imports: {}",
                self.import_fixes.join(", ")
            ));
        }
        if !self.repaired.is_empty() {
            parts.push(format!(
                "reinstalled with files missing: {}",
                self.repaired.join(", ")
            ));
        }
        if !self.damaged.is_empty() {
            let damaged: Vec<String> = self
                .damaged
                .iter()
                .map(DamagedDistribution::describe)
                .collect();
            parts.push(format!("still damaged: {}", damaged.join(", ")));
        }
        if self.reused {
            parts.push("reused".into());
        }
        parts.join("; ")
    }

    /// What the model is told: the interpreter, what is installed, what is
    /// not.
    pub fn prompt_note(&self) -> String {
        // An environment that is not sound must not be announced as ready:
        // told "installed", the model spent four turns on `pip install
        // torch` and the same failing import (GitTaskBench run 9).
        let mut note = match self.sound() {
            true => format!(
                "## Python environment\n\nThe repository's dependencies are installed in a virtualenv: \
                 `python`, `pip` and `run_python` use `{}`. The repository is importable.\n",
                self.python().display()
            ),
            false => format!(
                "## Python environment\n\nThe repository's dependencies are in a virtualenv, \
                 but it is INCOMPLETE (below): `python`, `pip` and `run_python` use `{}`. \
                 Installing a failed package again seldom finishes within a turn; \
                 prefer the modules that import.\n",
                self.python().display()
            ),
        };
        if !self.installed.is_empty() {
            let shown: Vec<&str> = self.installed.iter().take(40).map(String::as_str).collect();
            note.push_str(&format!(
                "Installed ({}): {}{}\n",
                self.installed.len(),
                shown.join(", "),
                if self.installed.len() > shown.len() {
                    ", ..."
                } else {
                    ""
                }
            ));
        }
        for failing in &self.failing {
            note.push_str(&format!(
                "Not installed: {} ({})\n",
                failing.requirement, failing.reason
            ));
        }
        for step in self.steps.iter().filter(|s| !s.ok && !s.recovered) {
            let last = step
                .log_tail
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            note.push_str(&format!(
                "Installing `{}`'s requirements failed: {}\n",
                step.source,
                sandbox::text_tail(last.trim(), 200)
            ));
        }
        for damaged in &self.damaged {
            note.push_str(&format!("Damaged: {}\n", damaged.describe()));
        }
        for check in self.imports.iter().filter(|c| !c.ok) {
            note.push_str(&format!(
                "`import {}` fails: {}\n",
                check.module,
                check.error.as_deref().unwrap_or("")
            ));
        }
        note
    }
}

impl DamagedDistribution {
    /// `name==version (N files missing, e.g. path)`.
    pub fn describe(&self) -> String {
        format!(
            "{}=={} ({} files missing, e.g. {})",
            self.name, self.version, self.missing, self.example
        )
    }
}

/// The files at `repo`'s root that declare its dependencies, sorted.
pub fn dependency_files(repo: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(repo) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| {
            let name = e.file_name().to_string_lossy().to_ascii_lowercase();
            (name.starts_with("requirements") && name.ends_with(".txt"))
                || name == "pyproject.toml"
                || name == "setup.py"
                || name == "setup.cfg"
        })
        .map(|e| e.path())
        .collect();
    files.sort();
    files
}

static SETUP_PY_REQUIRES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)install_requires\s*=\s*\[(.*?)\]")
        .unwrap_or_else(|_| unreachable!("a fixed pattern"))
});

static SETUP_PY_REQUIRES_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"install_requires\s*=\s*([A-Za-z_][A-Za-z0-9_]*)\s*[,)]")
        .unwrap_or_else(|_| unreachable!("a fixed pattern"))
});

static STRING_LITERAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"['"]([^'"\n]+)['"]"#).unwrap_or_else(|_| unreachable!("a fixed pattern"))
});

/// The requirements a packaging file declares, read without running it:
/// `[project] dependencies` of a `pyproject.toml`, `install_requires` of a
/// `setup.cfg` (its `[options]` section), the string literals of a
/// `setup.py`'s `install_requires = [...]`. Other files: none.
pub fn declared_requirements(file: &Path, text: &str) -> Vec<String> {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let clean = |r: &str| -> Option<String> {
        let r = r.trim();
        (!r.is_empty() && !r.starts_with('#')).then(|| r.to_owned())
    };
    match name.as_str() {
        "pyproject.toml" => toml::from_str::<toml::Value>(text)
            .ok()
            .and_then(|v| v.get("project")?.get("dependencies")?.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|d| d.as_str().and_then(clean))
            .collect(),
        "setup.cfg" => {
            let mut out = Vec::new();
            let (mut in_options, mut in_requires) = (false, false);
            for line in text.lines() {
                let trimmed = line.trim();
                if trimmed.starts_with('[') {
                    in_options = trimmed == "[options]";
                    in_requires = false;
                    continue;
                }
                if !in_options {
                    continue;
                }
                let indented = line.starts_with(|c: char| c.is_whitespace());
                if let Some((key, value)) = trimmed.split_once('=')
                    && !indented
                {
                    in_requires = key.trim() == "install_requires";
                    if in_requires {
                        out.extend(clean(value));
                    }
                } else if in_requires && indented {
                    out.extend(clean(trimmed));
                } else if !indented {
                    in_requires = false;
                }
            }
            out
        }
        "setup.py" => {
            // `install_requires=[...]`, or `install_requires=name` with
            // `name = [...]` assigned earlier in the file.
            let list = SETUP_PY_REQUIRES
                .captures(text)
                .and_then(|c| c.get(1))
                .map(|m| m.as_str().to_owned())
                .or_else(|| {
                    let name = SETUP_PY_REQUIRES_NAME.captures(text)?.get(1)?.as_str();
                    let assigned = Regex::new(&format!(
                        r"(?ms)^\s*{}\s*=\s*\[(.*?)\]",
                        regex::escape(name)
                    ))
                    .ok()?;
                    Some(assigned.captures(text)?.get(1)?.as_str().to_owned())
                });
            list.map(|list| {
                STRING_LITERAL
                    .captures_iter(&list)
                    .filter_map(|c| c.get(1).and_then(|m| clean(m.as_str())))
                    .collect()
            })
            .unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// The requirement lines of a requirements file (no comments, options or
/// includes, which `pip install -r` handles itself).
fn requirement_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split(" #").next().unwrap_or("").trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('-'))
        .map(str::to_owned)
        .collect()
}

/// The cache key of `repo`'s environment: its dependency files (names and
/// contents), the interpreter's version and `PREPARATION_VERSION`.
pub fn environment_key(repo: &Path, python_version: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(PREPARATION_VERSION.as_bytes());
    hasher.update(b"\0");
    hasher.update(python_version.as_bytes());
    for file in dependency_files(repo) {
        hasher.update(b"\0");
        hasher.update(file.file_name().unwrap_or_default().as_encoded_bytes());
        hasher.update(b"\0");
        // Bounded like the install's own read: a file it will not read
        // counts by its error (which names the size).
        match repo_files::read_in_tree(repo, &file, MAX_DEPENDENCY_FILE) {
            Ok(bytes) => hasher.update(bytes),
            Err(error) => hasher.update(error.to_string().as_bytes()),
        }
    }
    let digest = hasher.finalize();
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The repository's top-level packages (directories with `__init__.py`
/// at its root or under `src/`), at most three, tests and docs left out.
pub fn top_level_packages(repo: &Path) -> Vec<String> {
    let mut found = BTreeSet::new();
    for base in [repo.to_path_buf(), repo.join("src")] {
        let Ok(entries) = std::fs::read_dir(&base) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let skip = [
                "test",
                "tests",
                "doc",
                "docs",
                "examples",
                "benchmarks",
                "setup",
            ];
            if entry.path().join("__init__.py").is_file()
                && !skip.contains(&name.as_str())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                found.insert(name);
            }
        }
    }
    found.into_iter().take(3).collect()
}

/// pip's first `ERROR:` line, else its last line.
fn pip_reason(output: &str) -> String {
    let line = output
        .lines()
        .find(|l| l.starts_with("ERROR:"))
        .or_else(|| output.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("pip failed");
    sandbox::text_tail(line.trim(), 300)
}

/// Builds (or finds in the cache) the environment `request` names.
///
/// # Errors
///
/// [`Error::Sandbox`] when the sandbox cannot be made or run at all,
/// [`Error::Task`] when the cache cannot be written. A requirement that does
/// not install is not an error: it is in the report.
pub async fn prepare_environment(request: &EnvironmentRequest) -> Result<EnvironmentReport, Error> {
    let started = Instant::now();
    let repo =
        std::path::absolute(&request.repo).map_err(|e| io_error(&request.repo.clone(), e))?;
    let name = repo
        .file_name()
        .map_or_else(|| "repo".to_owned(), |n| n.to_string_lossy().into_owned());
    std::fs::create_dir_all(&request.cache_dir)
        .map_err(|e| io_error(&request.cache_dir.clone(), e))?;
    let cache_dir = std::path::absolute(&request.cache_dir)
        .map_err(|e| io_error(&request.cache_dir.clone(), e))?;
    let code_user = request
        .code_user
        .resolve(rustix::process::geteuid().as_raw())
        .map_err(Error::Task)?;
    let config = SandboxConfig::builder(&cache_dir)
        .isolation(request.isolation)
        .run_as(code_user)
        .package_registry(request.package_registry)
        .timeout(std::time::Duration::from_secs(900))
        .disk_limit(request.disk_budget)
        .read_only_path(&repo)
        .read_write_path(&cache_dir)
        .build()
        .map_err(Error::Sandbox)?;
    let sandbox = Sandbox::new(config).await.map_err(Error::Sandbox)?;
    let version = sandbox
        .run_python(
            sandbox::PythonScript::code("import sys; print(sys.version.split()[0])"),
            &[] as &[&str],
        )
        .await
        .map_err(Error::Sandbox)?
        .stdout
        .to_string()
        .trim()
        .to_owned();
    let key = environment_key(&repo, &version);
    let dir = cache_dir.join(format!("{name}-{key}"));
    let preparation = Preparation {
        request,
        sandbox: &sandbox,
        repo: &repo,
        cache_dir: &cache_dir,
    };
    if let Ok(text) = std::fs::read_to_string(dir.join(REPORT))
        && let Ok(mut report) = serde_json::from_str::<EnvironmentReport>(&text)
        && let Ok(env) = PythonEnv::open(&report.venv)
    {
        report.reused = true;
        // A cached environment is checked, not trusted: an installer
        // stopped half-way (or files removed since) leaves distributions
        // that every later install takes for installed.
        let damaged = damaged_distributions(&sandbox, &env).await?;
        if !damaged.is_empty() {
            let install = preparation.installer().await?;
            preparation
                .repair(&install, &env, damaged, &mut report)
                .await?;
            report.imports.clear();
            preparation
                .check_imports(&install, &env, &mut report)
                .await?;
            report.installed = installed(&sandbox, &env).await?;
            // Stored as built: `reused` describes one call, not the file.
            report.reused = false;
            write_report(&dir, &report)?;
            report.reused = true;
        }
        report.seconds = started.elapsed().as_secs_f64();
        return Ok(report);
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| io_error(&dir.clone(), e))?;
    }
    let install = preparation.installer().await?;
    let venv_dir = dir.join("venv");
    let env = sandbox
        .create_venv(&venv_dir)
        .await
        .map_err(Error::Sandbox)?;
    let mut report = EnvironmentReport {
        repo: name,
        venv: venv_dir,
        key,
        installer: match install {
            Install::Pip => Installer::Pip,
            Install::Uv(_) => Installer::Uv,
        },
        reused: false,
        requirements: Vec::new(),
        steps: Vec::new(),
        failing: Vec::new(),
        imports: Vec::new(),
        import_fixes: Vec::new(),
        repaired: Vec::new(),
        damaged: Vec::new(),
        installed: Vec::new(),
        seconds: 0.0,
    };
    for file in dependency_files(&repo) {
        preparation
            .install_file(&install, &env, &file, &mut report)
            .await?;
    }
    // Before the imports are checked: a step stopped half-way (its disk
    // budget, a signal) leaves distributions the one-by-one retries took
    // for installed.
    let damaged = damaged_distributions(&sandbox, &env).await?;
    if !damaged.is_empty() {
        preparation
            .repair(&install, &env, damaged, &mut report)
            .await?;
    }
    preparation
        .check_imports(&install, &env, &mut report)
        .await?;
    report.installed = installed(&sandbox, &env).await?;
    report.seconds = started.elapsed().as_secs_f64();
    write_report(&dir, &report)?;
    remove_stale(&cache_dir, &report.repo, &dir);
    Ok(report)
}

/// What every step of one preparation needs.
struct Preparation<'a> {
    request: &'a EnvironmentRequest,
    sandbox: &'a Sandbox,
    repo: &'a Path,
    cache_dir: &'a Path,
}

impl Preparation<'_> {
    /// uv or pip, as the request asks and as can be had.
    async fn installer(&self) -> Result<Install, Error> {
        let uv = || uv_binary(self.sandbox, self.cache_dir, &self.request.pip_args);
        Ok(match self.request.installer {
            Installer::Pip => Install::Pip,
            Installer::Uv => Install::Uv(uv().await?),
            // Without the registry and without a `--find-links` location
            // pip has nowhere to get uv's wheel from: trying would build a
            // virtualenv for nothing (measured: 5.4 s each preparation).
            Installer::Auto if !uv_obtainable(self.request, self.cache_dir) => {
                tracing::info!(
                    "uv is not installed and cannot be without the package registry or --find-links; installing with pip"
                );
                Install::Pip
            }
            Installer::Auto => match uv().await {
                Ok(uv) => Install::Uv(uv),
                Err(error) => {
                    tracing::warn!(%error, "uv is not available; installing with pip");
                    Install::Pip
                }
            },
        })
    }

    /// One `pip install` with the request's extra arguments and `args`.
    async fn pip(
        &self,
        install: &Install,
        env: &PythonEnv,
        args: impl IntoIterator<Item = String>,
    ) -> Result<Result<String, String>, Error> {
        let mut all = self.request.pip_args.clone();
        all.extend(args);
        install_packages(self.sandbox, install, env, all).await
    }

    /// Installs what dependency file `file` declares, and names the
    /// requirements that fail when the whole file does.
    async fn install_file(
        &self,
        install: &Install,
        env: &PythonEnv,
        file: &Path,
        report: &mut EnvironmentReport,
    ) -> Result<(), Error> {
        let source = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // A repository's file, read like every other: inside the tree, no
        // link followed, never blocking, at most MAX_DEPENDENCY_FILE; one
        // that cannot be read so is reported, not installed.
        let text = match repo_files::read_in_tree(self.repo, file, MAX_DEPENDENCY_FILE) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(error) => {
                report.steps.push(InstallStep {
                    source,
                    ok: false,
                    recovered: false,
                    log_tail: format!("not read: {error}"),
                });
                return Ok(());
            }
        };
        let is_requirements = source.to_ascii_lowercase().starts_with("requirements");
        let requirements = match is_requirements {
            true => requirement_lines(&text),
            false => declared_requirements(file, &text),
        };
        if requirements.is_empty() {
            return Ok(());
        }
        report.requirements.extend(requirements.iter().cloned());
        let args = match is_requirements {
            true => vec!["-r".to_owned(), file.display().to_string()],
            false => requirements.clone(),
        };
        let step = self.pip(install, env, args).await?;
        let ok = step.is_ok();
        report.steps.push(InstallStep {
            source,
            ok,
            recovered: false,
            log_tail: match &step {
                Ok(output) | Err(output) => sandbox::text_tail(output, LOG_TAIL),
            },
        });
        if ok {
            return Ok(());
        }
        // Which ones: each alone (bounded), so one bad pin does not hide
        // what else would install.
        let failing_before = report.failing.len();
        for requirement in requirements.iter().take(MAX_SINGLE_TRIES) {
            if let Err(output) = self.pip(install, env, [requirement.clone()]).await? {
                report.failing.push(FailingRequirement {
                    requirement: requirement.clone(),
                    reason: pip_reason(&output),
                });
            }
        }
        let all_tried = requirements.len() <= MAX_SINGLE_TRIES;
        if all_tried
            && report.failing.len() == failing_before
            && let Some(step) = report.steps.last_mut()
        {
            step.recovered = true;
        }
        Ok(())
    }

    /// Reinstalls each damaged distribution at its installed version
    /// (bounded), then records what is still damaged.
    async fn repair(
        &self,
        install: &Install,
        env: &PythonEnv,
        damaged: Vec<DamagedDistribution>,
        report: &mut EnvironmentReport,
    ) -> Result<(), Error> {
        for broken in damaged.iter().take(MAX_REPAIRS) {
            let pinned = format!("{}=={}", broken.name, broken.version);
            tracing::info!(distribution = %pinned, missing = broken.missing, "reinstalling a damaged distribution");
            let args = match install {
                Install::Pip => vec![
                    "--force-reinstall".to_owned(),
                    "--no-deps".to_owned(),
                    pinned.clone(),
                ],
                Install::Uv(_) => vec![
                    "--reinstall-package".to_owned(),
                    broken.name.clone(),
                    "--no-deps".to_owned(),
                    pinned.clone(),
                ],
            };
            if self.pip(install, env, args).await?.is_ok() {
                report.repaired.push(pinned);
            }
        }
        report.damaged = damaged_distributions(self.sandbox, env).await?;
        let still: BTreeSet<String> = report
            .damaged
            .iter()
            .map(|d| format!("{}=={}", d.name, d.version))
            .collect();
        report.repaired.retain(|r| !still.contains(r));
        Ok(())
    }

    /// Checks that each of the repository's top-level packages imports;
    /// a module it misses is installed by its PyPI name, a few rounds.
    async fn check_imports(
        &self,
        install: &Install,
        env: &PythonEnv,
        report: &mut EnvironmentReport,
    ) -> Result<(), Error> {
        let mut path = self.repo.to_path_buf().into_os_string();
        if self.repo.join("src").is_dir() {
            path.push(":");
            path.push(self.repo.join("src"));
        }
        for module in top_level_packages(self.repo) {
            let mut error = check_import(self.sandbox, env, &path, &module).await?;
            // A module the declarations missed (or that were not readable
            // statically): install it by its import name, a few rounds.
            for _ in 0..MAX_IMPORT_FIXES {
                let Some(missing) = error.as_deref().and_then(missing_module) else {
                    break;
                };
                let package = crate::imports::pip_name(&missing);
                if self.pip(install, env, [package.clone()]).await?.is_err() {
                    break;
                }
                report
                    .import_fixes
                    .push(format!("{package} (imported by {module})"));
                error = check_import(self.sandbox, env, &path, &module).await?;
            }
            report.imports.push(ImportCheck {
                module,
                ok: error.is_none(),
                error,
            });
        }
        Ok(())
    }
}

/// The distributions in `env` whose `RECORD` lists files that are not on
/// disk (bytecode aside: it is rebuilt on import), at most 50.
async fn damaged_distributions(
    sandbox: &Sandbox,
    env: &PythonEnv,
) -> Result<Vec<DamagedDistribution>, Error> {
    const CHECK: &str = r#"
import importlib.metadata as md, json, os
found = []
for d in md.distributions():
    try:
        files = d.files or []
        missing = [str(f) for f in files
                   if not str(f).endswith('.pyc') and not os.path.lexists(d.locate_file(f))]
    except Exception:
        continue
    if missing:
        found.append({"name": d.metadata["Name"] or "", "version": d.version or "",
                      "missing": len(missing), "example": missing[0][:200]})
    if len(found) >= 50:
        break
print(json.dumps(found))
"#;
    let check = sandbox
        .run_python_in(env, sandbox::PythonScript::code(CHECK), &[] as &[&str])
        .await
        .map_err(Error::Sandbox)?;
    if !check.success() {
        // The check itself failed (a broken interpreter): nothing to
        // repair from here; the import checks will say what fails.
        tracing::warn!(status = %check.status_summary(), "cannot check the installed files");
        return Ok(Vec::new());
    }
    let stdout = check.stdout.to_string();
    let damaged: Vec<DamagedDistribution> = serde_json::from_str(stdout.trim()).unwrap_or_default();
    Ok(damaged
        .into_iter()
        .filter(|d| !d.name.is_empty() && !d.version.is_empty())
        .collect())
}

/// The distributions installed in `env`, as `name==version` (pip and
/// setuptools aside).
async fn installed(sandbox: &Sandbox, env: &PythonEnv) -> Result<Vec<String>, Error> {
    let freeze = sandbox
        .exec(sandbox::Command::new(env.python()).args([
            "-m",
            "pip",
            "list",
            "--format=freeze",
            "--disable-pip-version-check",
        ]))
        .await
        .map_err(Error::Sandbox)?;
    Ok(freeze
        .stdout
        .to_string()
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("==") && !l.starts_with("pip==") && !l.starts_with("setuptools=="))
        .map(str::to_owned)
        .collect())
}

fn write_report(dir: &Path, report: &EnvironmentReport) -> Result<(), Error> {
    let json = serde_json::to_string_pretty(report).map_err(|e| Error::Task(e.to_string()))?;
    std::fs::write(dir.join(REPORT), json).map_err(|e| io_error(&dir.join(REPORT), e))
}

/// Removes the other environments of repository `name` in `cache_dir`
/// (older keys: changed dependency files or an older preparation), and
/// unfinished ones: an environment can take gigabytes (a `torch`
/// dependency brings CUDA wheels), and stale ones would fill the disk.
fn remove_stale(cache_dir: &Path, name: &str, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(cache_dir) else {
        return;
    };
    let prefix = format!("{name}-");
    for entry in entries.flatten() {
        let path = entry.path();
        let file_name = entry.file_name().to_string_lossy().into_owned();
        let key = file_name.strip_prefix(&prefix).unwrap_or_default();
        // Only `<name>-<16 hex digits>`: never another repository whose
        // name starts with this one's.
        let ours = key.len() == 16 && key.bytes().all(|b| b.is_ascii_hexdigit());
        if ours && path != keep {
            tracing::info!(path = %path.display(), "removing a stale environment");
            if let Err(error) = std::fs::remove_dir_all(&path) {
                tracing::warn!(path = %path.display(), %error, "cannot remove a stale environment");
            }
        }
    }
}

fn io_error(path: &Path, error: std::io::Error) -> Error {
    Error::Task(format!("{}: {error}", path.display()))
}

/// Whether `import module` works in `env` with the repository on the
/// path (`path`, `:`-separated); the error's last line when not.
async fn check_import(
    sandbox: &Sandbox,
    env: &PythonEnv,
    path: &std::ffi::OsStr,
    module: &str,
) -> Result<Option<String>, Error> {
    let check = sandbox
        .run_python_in(
            env,
            sandbox::PythonScript::code(format!(
                "import sys; sys.path[:0] = {:?}.split(':'); import {module}",
                path.to_string_lossy()
            )),
            &[] as &[&str],
        )
        .await
        .map_err(Error::Sandbox)?;
    Ok((!check.success()).then(|| {
        check
            .stderr
            .to_string()
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("failed")
            .to_owned()
    }))
}

/// The top-level module of `ModuleNotFoundError: No module named 'x.y'`.
fn missing_module(error: &str) -> Option<String> {
    let rest = error.strip_prefix("ModuleNotFoundError: No module named ")?;
    let name = rest.trim().trim_matches(|c| c == '\'' || c == '"');
    let top = name.split('.').next()?;
    (!top.is_empty() && top.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| top.to_owned())
}

/// One `pip install` (or `uv pip install`): Ok(output) or Err(output)
/// when it failed.
async fn install_packages(
    sandbox: &Sandbox,
    install: &Install,
    env: &PythonEnv,
    args: Vec<String>,
) -> Result<Result<String, String>, Error> {
    let result = match install {
        Install::Pip => sandbox.pip_install(env, &args).await,
        Install::Uv(uv) => sandbox.uv_pip_install(uv, env, &args).await,
    };
    match result {
        Ok(result) => Ok(Ok(result.combined_output())),
        // How it ended goes last, where the report's tail keeps it: an
        // installer killed by a signal prints no error of its own
        // (InvisibleWatermark, GitTaskBench run 9: the tail ended at
        // "Uninstalled 1 package", with half of torch's libraries missing).
        Err(SandboxError::PipFailed { status, output }) => Ok(Err(format!(
            "{}\n[the installer ended: {status}]",
            output.trim_end()
        ))),
        Err(other) => Err(Error::Sandbox(other)),
    }
}

/// Where the `uv` binary is installed under `cache_dir`: its tools
/// virtualenv, and the binary in it.
fn uv_location(cache_dir: &Path) -> (PathBuf, PathBuf) {
    let dir = cache_dir.join(".tools").join(format!("uv-{UV_VERSION}"));
    let uv = dir.join("bin").join("uv");
    (dir, uv)
}

/// Whether uv is installed under `cache_dir` or pip could fetch its wheel:
/// from the registry, or from a `--find-links` location among the pip
/// arguments (`-f`, and the prefixes of `--find-links` that pip accepts as
/// abbreviations).
fn uv_obtainable(request: &EnvironmentRequest, cache_dir: &Path) -> bool {
    let find_links = |arg: &String| {
        let option = arg.split('=').next().unwrap_or_default();
        (arg.starts_with("-f") && !arg.starts_with("--"))
            || (option.len() >= "--fi".len() && "--find-links".starts_with(option))
    };
    request.package_registry
        || request.pip_args.iter().any(find_links)
        || std::fs::metadata(uv_location(cache_dir).1).is_ok_and(|m| m.is_file())
}

/// The `uv` binary, installed by pip in the sandbox from its pinned wheel
/// into `cache_dir/.tools/uv-VERSION` the first time.
async fn uv_binary(
    sandbox: &Sandbox,
    cache_dir: &Path,
    pip_args: &[String],
) -> Result<PathBuf, Error> {
    let (dir, uv) = uv_location(cache_dir);
    if std::fs::metadata(&uv).is_ok_and(|m| m.is_file()) {
        return Ok(uv);
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
    }
    let tools = sandbox.create_venv(&dir).await.map_err(Error::Sandbox)?;
    let requirement = dir.with_extension("requirements.txt");
    let hashes: String = UV_WHEEL_SHA256
        .iter()
        .map(|h| format!(" --hash=sha256:{h}"))
        .collect();
    std::fs::write(&requirement, format!("uv=={UV_VERSION}{hashes}\n"))
        .map_err(|e| io_error(&requirement, e))?;
    let mut args = pip_args.to_vec();
    args.extend([
        "--only-binary".to_owned(),
        ":all:".to_owned(),
        "--require-hashes".to_owned(),
        "-r".to_owned(),
        requirement.display().to_string(),
    ]);
    match install_packages(sandbox, &Install::Pip, &tools, args).await? {
        Ok(_) if std::fs::metadata(&uv).is_ok_and(|m| m.is_file()) => Ok(uv),
        Ok(output) | Err(output) => Err(Error::Task(format!(
            "cannot install uv {UV_VERSION} from PyPI: {}",
            pip_reason(&output)
        ))),
    }
}

/// The `PATH` that puts `venv`'s interpreter first.
pub fn venv_path(venv: &Path) -> String {
    format!("{}:{DEFAULT_PATH}", venv.join("bin").display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uv_is_tried_only_where_pip_could_fetch_it() {
        let cache = tempfile::tempdir().unwrap();
        let mut request = EnvironmentRequest::new("/repo", cache.path());
        assert!(uv_obtainable(&request, cache.path()), "the registry");
        request.package_registry = false;
        assert!(!uv_obtainable(&request, cache.path()));
        for args in [
            &["--find-links", "/w"][..],
            &["--find-links=/w"],
            &["--fi", "/w"],
            &["-f", "/w"],
            &["-f/w"],
        ] {
            request.pip_args = args.iter().map(|a| (*a).to_owned()).collect();
            assert!(uv_obtainable(&request, cache.path()), "{args:?}");
        }
        for args in [&["--force-reinstall"][..], &["--no-index"], &["--f", "/w"]] {
            request.pip_args = args.iter().map(|a| (*a).to_owned()).collect();
            assert!(!uv_obtainable(&request, cache.path()), "{args:?}");
        }
        let (_, uv) = uv_location(cache.path());
        std::fs::create_dir_all(uv.parent().unwrap()).unwrap();
        std::fs::write(&uv, "").unwrap();
        assert!(uv_obtainable(&request, cache.path()), "installed already");
    }

    fn report() -> EnvironmentReport {
        EnvironmentReport {
            repo: "Repo".into(),
            venv: PathBuf::from("/envs/Repo-0/venv"),
            key: "0".into(),
            installer: Installer::Uv,
            reused: false,
            requirements: vec!["torch".into()],
            steps: vec![InstallStep {
                source: "setup.py".into(),
                ok: true,
                recovered: false,
                log_tail: String::new(),
            }],
            failing: Vec::new(),
            imports: vec![ImportCheck {
                module: "imwatermark".into(),
                ok: true,
                error: None,
            }],
            import_fixes: Vec::new(),
            repaired: Vec::new(),
            damaged: Vec::new(),
            installed: vec!["torch==2.9.1".into()],
            seconds: 1.0,
        }
    }

    /// Told "installed" about an environment whose torch missed a library,
    /// the model spent its turns reinstalling torch (GitTaskBench run 9).
    #[test]
    fn an_unsound_environment_is_never_announced_as_installed() {
        let sound = report();
        assert!(sound.sound());
        assert!(sound.prompt_note().contains("dependencies are installed"));
        let mut damaged = report();
        damaged.damaged.push(DamagedDistribution {
            name: "nvidia-cublas".into(),
            version: "13.0.2".into(),
            missing: 3,
            example: "nvidia/cu13/lib/libcublas.so.13".into(),
        });
        damaged.imports[0] = ImportCheck {
            module: "imwatermark".into(),
            ok: false,
            error: Some("ImportError: libcublas.so.13: cannot open shared object file".into()),
        };
        assert!(!damaged.sound());
        let note = damaged.prompt_note();
        assert!(!note.contains("dependencies are installed"), "{note}");
        assert!(note.contains("INCOMPLETE"), "{note}");
        assert!(
            note.contains("Damaged: nvidia-cublas==13.0.2 (3 files missing, e.g. nvidia/cu13/lib/libcublas.so.13)"),
            "{note}"
        );
        assert!(
            note.contains("`import imwatermark` fails: ImportError"),
            "{note}"
        );
        assert!(
            damaged
                .summary()
                .contains("still damaged: nvidia-cublas==13.0.2")
        );
        // A step that failed as a whole and was not recovered is named,
        // with the last line of its log.
        let mut failed = report();
        failed.steps[0].ok = false;
        failed.steps[0].log_tail =
            "Downloading torch\n[the installer ended: killed by signal 9]\n".into();
        assert!(!failed.complete() && !failed.sound());
        assert!(
            failed.prompt_note().contains(
                "Installing `setup.py`'s requirements failed: [the installer ended: killed by signal 9]"
            ),
            "{}",
            failed.prompt_note()
        );
        failed.steps[0].recovered = true;
        assert!(failed.complete() && failed.sound());
        // Reports written before these fields existed still read.
        let mut json = serde_json::to_value(report()).unwrap();
        json.as_object_mut().unwrap().remove("repaired");
        json.as_object_mut().unwrap().remove("damaged");
        let old: EnvironmentReport = serde_json::from_value(json).unwrap();
        assert!(old.repaired.is_empty() && old.damaged.is_empty());
    }

    #[test]
    fn packaging_files_are_read_without_running_them() {
        let pyproject = "[project]\nname = \"x\"\ndependencies = [\"numpy>=1.20\", \"pillow\"]\n";
        assert_eq!(
            declared_requirements(Path::new("pyproject.toml"), pyproject),
            ["numpy>=1.20", "pillow"]
        );
        let cfg = "[metadata]\nname = x\n[options]\npackages = find:\ninstall_requires =\n    requests>=2\n    lxml\nzip_safe = False\n[other]\ninstall_requires = no\n";
        assert_eq!(
            declared_requirements(Path::new("setup.cfg"), cfg),
            ["requests>=2", "lxml"]
        );
        let setup = "from setuptools import setup\nsetup(name='x',\n  install_requires=[\n 'opencv-python',  # cv\n \"scipy>=1.0\",\n ],\n)\n";
        assert_eq!(
            declared_requirements(Path::new("setup.py"), setup),
            ["opencv-python", "scipy>=1.0"]
        );
        let by_name = "requirements = [\"numpy\", 'scikit-learn>=1.0.0']\nsetup(\n    install_requires=requirements,\n)\n";
        assert_eq!(
            declared_requirements(Path::new("setup.py"), by_name),
            ["numpy", "scikit-learn>=1.0.0"]
        );
        assert!(declared_requirements(Path::new("pyproject.toml"), "not [toml").is_empty());
        assert!(declared_requirements(Path::new("README.md"), "install_requires=['x']").is_empty());
    }

    #[test]
    fn missing_modules_map_to_their_packages() {
        let error = "ModuleNotFoundError: No module named 'sklearn.utils'";
        assert_eq!(missing_module(error).as_deref(), Some("sklearn"));
        assert_eq!(missing_module("ImportError: cannot import name 'x'"), None);
        assert_eq!(
            missing_module("ModuleNotFoundError: No module named 'a;b'"),
            None
        );
    }

    #[test]
    fn requirement_lines_drop_comments_and_options() {
        let text = "# pinned\nnumpy==1.26.4  # math\n\n-r other.txt\n--extra-index-url x\nPillow\n";
        assert_eq!(requirement_lines(text), ["numpy==1.26.4", "Pillow"]);
    }

    #[test]
    fn the_key_follows_the_dependency_files_and_the_interpreter() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        std::fs::write(repo.join("requirements.txt"), "numpy\n").unwrap();
        std::fs::write(repo.join("main.py"), "print(1)\n").unwrap();
        let key = environment_key(repo, "3.11.2");
        assert_eq!(key.len(), 16);
        std::fs::write(repo.join("main.py"), "print(2)\n").unwrap();
        assert_eq!(
            environment_key(repo, "3.11.2"),
            key,
            "code changes keep the key"
        );
        assert_ne!(environment_key(repo, "3.12.0"), key);
        std::fs::write(repo.join("requirements-dev.txt"), "pytest\n").unwrap();
        assert_ne!(environment_key(repo, "3.11.2"), key);
    }

    #[test]
    fn top_level_packages_skip_tests_and_docs() {
        let dir = tempfile::tempdir().unwrap();
        for package in ["pkg", "tests", "docs", "src/other", "not-a-name"] {
            std::fs::create_dir_all(dir.path().join(package)).unwrap();
            std::fs::write(dir.path().join(package).join("__init__.py"), "").unwrap();
        }
        assert_eq!(top_level_packages(dir.path()), ["other", "pkg"]);
    }
}
