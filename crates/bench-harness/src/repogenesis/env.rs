//! Building a Python task's environment as the benchmark's
//! `Dockerfile.python` does, in a virtualenv instead of an image: the
//! repository's `requirements.txt` (or, without one, the Dockerfile's
//! fallback list), then the golden tests' `requirements.txt`, then the test
//! tools. Failed installs do not stop the evaluation (the Dockerfile ends
//! each with `|| true`); they are recorded.
//!
//! A virtualenv depends only on what is installed into it, so it is cached
//! under a key made of those inputs and shared by every task with the same
//! ones (one build for many variants of a task). Requirements that point
//! at local files (`-r`, `-e`, paths) make the environment private to the
//! task. The network is on for this phase only (the package registry);
//! services and tests run without it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sandbox::{Isolation, PythonEnv, Sandbox, SandboxConfig};
use serde::{Deserialize, Serialize};

/// What the Dockerfile installs when the repository has no
/// `requirements.txt`.
pub const FALLBACK_PACKAGES: [&str; 8] = [
    "flask",
    "fastapi",
    "uvicorn",
    "django",
    "djangorestframework",
    "requests",
    "sqlalchemy",
    "pydantic",
];

/// The test tools the Dockerfile always installs last.
pub const TEST_TOOLS: [&str; 4] = ["pytest", "pytest-json-report", "requests", "httpx"];

/// How environments are built.
#[derive(Debug, Clone)]
pub struct EnvConfig {
    /// Where virtualenvs are cached (`<dir>/<key>`).
    pub venv_dir: PathBuf,
    /// Sandbox isolation for the installs.
    pub isolation: Isolation,
    /// Let pip reach the package registry.
    pub package_registry: bool,
}

/// How an environment build went.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildOutcome {
    /// Every install succeeded.
    pub ok: bool,
    /// The repository's own dependencies (its `requirements.txt`, else the
    /// fallback list; Java: the compilation) installed.
    pub dependencies_ok: bool,
    /// A cached environment with the same inputs was used.
    pub reused: bool,
    /// The environment (virtualenv) or local Maven repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<PathBuf>,
    /// What failed, each with the tail of its output.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// Java: artifacts the local Maven repository does not have.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_artifacts: Vec<String>,
    /// Time spent (0 when reused).
    pub wall_ms: u64,
}

/// The inputs of a Python environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvInputs {
    /// The repository's `requirements.txt`, when it has one.
    pub requirements: Option<Vec<u8>>,
    /// The golden tests' `requirements.txt`, when they have one.
    pub test_requirements: Option<Vec<u8>>,
}

impl EnvInputs {
    /// Reads them from a workspace repository (golden tests already in `tests/`).
    pub fn read(repo: &Path) -> Self {
        EnvInputs {
            requirements: std::fs::read(repo.join("requirements.txt")).ok(),
            test_requirements: std::fs::read(repo.join("tests").join("requirements.txt")).ok(),
        }
    }

    /// The cache key, and whether the environment may be shared (its
    /// requirements refer to nothing outside themselves).
    pub fn key(&self, task: &str) -> (String, bool) {
        let mut bytes = b"repogenesis-env-v1\n".to_vec();
        for part in [&self.requirements, &self.test_requirements] {
            match part {
                Some(content) => {
                    bytes.extend_from_slice(format!("{}\n", content.len()).as_bytes());
                    bytes.extend_from_slice(content);
                }
                None => bytes.extend_from_slice(b"-\n"),
            }
        }
        for tool in TEST_TOOLS {
            bytes.extend_from_slice(tool.as_bytes());
            bytes.push(b'\n');
        }
        let shareable = [&self.requirements, &self.test_requirements]
            .into_iter()
            .flatten()
            .all(|content| !refers_to_files(&String::from_utf8_lossy(content)));
        let hash = format!("{:016x}", fnv1a(&bytes));
        if shareable {
            (format!("py-{hash}"), true)
        } else {
            (format!("task-{}-{hash}", safe_name(task)), false)
        }
    }
}

/// Whether a requirements file names other files (`-r`, `-c`, `-e`, local
/// paths, `file:` URLs), which a content hash does not cover.
fn refers_to_files(requirements: &str) -> bool {
    requirements.lines().any(|line| {
        let line = line.split(" #").next().unwrap_or("").trim();
        line.starts_with("-r")
            || line.starts_with("-c")
            || line.starts_with("-e")
            || line.starts_with("--requirement")
            || line.starts_with("--constraint")
            || line.starts_with("--editable")
            || line.starts_with('.')
            || line.starts_with('/')
            || line.contains("file:")
    })
}

fn safe_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a, to key environments by their inputs.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The stamp that marks a finished environment.
#[derive(Debug, Serialize, Deserialize)]
struct Stamp {
    key: String,
    ok: bool,
    dependencies_ok: bool,
    problems: Vec<String>,
}

const STAMP: &str = ".repogenesis-env.json";

/// Builds and caches Python environments; one build per key at a time,
/// also across processes sharing the cache (a lock file per key).
#[derive(Debug)]
pub struct EnvBuilder {
    config: EnvConfig,
}

impl EnvBuilder {
    /// A builder with `config`.
    pub fn new(config: EnvConfig) -> Self {
        EnvBuilder { config }
    }

    /// The environment for the workspace repository `repo` of `task`,
    /// built (or reused) with `timeout` per install. `Err` only when no
    /// environment could be made at all.
    pub async fn python(
        &self,
        task: &str,
        repo: &Path,
        timeout: Duration,
    ) -> Result<(PythonEnv, BuildOutcome), String> {
        let inputs = EnvInputs::read(repo);
        let (key, shareable) = inputs.key(task);
        std::fs::create_dir_all(&self.config.venv_dir)
            .map_err(|e| format!("cannot create {}: {e}", self.config.venv_dir.display()))?;
        let dir = self.config.venv_dir.join(&key);
        let lock_path = self.config.venv_dir.join(format!("{key}.lock"));
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
        // Blocking is fine: each worker runs one task on a runtime of its own.
        lock.lock()
            .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
        if shareable
            && let Ok(text) = std::fs::read_to_string(dir.join(STAMP))
            && let Ok(stamp) = serde_json::from_str::<Stamp>(&text)
            && stamp.key == key
            && let Ok(env) = PythonEnv::open(&dir)
        {
            return Ok((
                env,
                BuildOutcome {
                    ok: stamp.ok,
                    dependencies_ok: stamp.dependencies_ok,
                    reused: true,
                    location: Some(dir),
                    problems: stamp.problems,
                    ..BuildOutcome::default()
                },
            ));
        }
        let started = Instant::now();
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| {
                format!("cannot remove the stale environment {}: {e}", dir.display())
            })?;
        }
        let config = SandboxConfig::builder(repo)
            .isolation(self.config.isolation)
            .timeout(timeout)
            .package_registry(self.config.package_registry)
            .read_write_path(&self.config.venv_dir)
            .build()
            .map_err(|e| format!("build sandbox: {e}"))?;
        let sandbox = Sandbox::new(config)
            .await
            .map_err(|e| format!("build sandbox: {e}"))?;
        tracing::info!(task, dir = %dir.display(), "building the Python environment");
        let env = sandbox
            .create_venv(&dir)
            .await
            .map_err(|e| format!("cannot create the virtualenv {}: {e}", dir.display()))?;
        let mut problems: Vec<String> = Vec::new();
        let repo_requirements = vec![
            "-r".into(),
            repo.join("requirements.txt").display().to_string(),
        ];
        let fallback: Vec<String> = FALLBACK_PACKAGES.iter().map(|p| (*p).to_owned()).collect();
        let (what, args) = if inputs.requirements.is_some() {
            ("-r requirements.txt", repo_requirements)
        } else {
            ("(the Dockerfile's fallback list)", fallback)
        };
        problems.extend(install(&sandbox, &env, task, what, &args).await);
        let dependencies_ok = problems.is_empty();
        if inputs.test_requirements.is_some() {
            let args = vec![
                "-r".into(),
                repo.join("tests")
                    .join("requirements.txt")
                    .display()
                    .to_string(),
            ];
            problems
                .extend(install(&sandbox, &env, task, "-r tests/requirements.txt", &args).await);
        }
        let tools: Vec<String> = TEST_TOOLS.iter().map(|p| (*p).to_owned()).collect();
        problems.extend(install(&sandbox, &env, task, &TEST_TOOLS.join(" "), &tools).await);
        let ok = problems.is_empty();
        let stamp = Stamp {
            key: key.clone(),
            ok,
            dependencies_ok,
            problems: problems.clone(),
        };
        if let Ok(text) = serde_json::to_string(&stamp)
            && let Err(e) = std::fs::write(dir.join(STAMP), text)
        {
            tracing::warn!(error = %e, "cannot stamp the environment; it will be rebuilt");
        }
        Ok((
            env,
            BuildOutcome {
                ok,
                dependencies_ok,
                reused: false,
                location: Some(dir),
                problems,
                missing_artifacts: Vec::new(),
                wall_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            },
        ))
    }
}

/// One `pip install`; the problem, if it failed.
async fn install(
    sandbox: &Sandbox,
    env: &PythonEnv,
    task: &str,
    what: &str,
    args: &[String],
) -> Option<String> {
    let e = sandbox.pip_install(env, args).await.err()?;
    let message = format!("pip install {what} failed: {}", tail(&e.to_string(), 800));
    tracing::warn!(task, "{message}");
    Some(message)
}

pub(crate) use sandbox::text_tail as tail;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_inputs() {
        let a = EnvInputs {
            requirements: Some(b"flask\n".to_vec()),
            test_requirements: None,
        };
        let b = EnvInputs {
            requirements: Some(b"flask\n".to_vec()),
            test_requirements: Some(b"pytest\n".to_vec()),
        };
        let (ka, sa) = a.key("x");
        assert_eq!(a.key("y"), (ka.clone(), sa));
        assert!(sa);
        assert_ne!(ka, b.key("x").0);
        let local = EnvInputs {
            requirements: Some(b"-e .\n".to_vec()),
            test_requirements: None,
        };
        let (key, shareable) = local.key("my task");
        assert!(!shareable);
        assert!(key.starts_with("task-my_task-"), "{key}");
    }
}
