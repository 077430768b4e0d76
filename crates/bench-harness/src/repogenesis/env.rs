//! Building a Python task's environments as the benchmark's
//! `Dockerfile.python` does, in virtualenvs instead of an image, but two of
//! them: the service's (the repository's `requirements.txt`, or without one
//! the Dockerfile's fallback list) and the tests' (the golden tests'
//! `requirements.txt`, then the test tools). The tests never run in an
//! environment the repository chose packages for: a requirement of the
//! repository's could otherwise put a `.pth` file or a pytest plugin into
//! the interpreter that scores it. Failed installs do not stop the
//! evaluation (the Dockerfile ends each with `|| true`); they are recorded.
//!
//! A virtualenv depends only on what is installed into it, so each is
//! cached under a key made of those inputs and shared by every task with
//! the same ones. Requirements that point at local files (`-r`, `-e`,
//! paths) make the environment private to the task. The network is on for
//! this phase only (the package registry); services and tests run without
//! it. A finished environment is handed to the harness's own user, so that
//! code running as the sandbox's user (process isolation) cannot change it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sandbox::{Isolation, PythonEnv, Sandbox, SandboxConfig};
use serde::{Deserialize, Serialize};

use super::failure::{EvaluationError, SandboxPurpose};

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
    /// The service's environment (virtualenv) or the local Maven repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<PathBuf>,
    /// The tests' environment (Python).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_location: Option<PathBuf>,
    /// What failed, each with the tail of its output.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// Java: artifacts the local Maven repository does not have.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_artifacts: Vec<String>,
    /// Time spent (0 when reused).
    pub wall_ms: u64,
}

/// The inputs of a task's Python environments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvInputs {
    /// The repository's `requirements.txt`, when it has one.
    pub requirements: Option<Vec<u8>>,
    /// The golden tests' `requirements.txt`, when they have one.
    pub test_requirements: Option<Vec<u8>>,
}

/// Which of a task's two environments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvRole {
    /// The service's: the repository's requirements.
    Service,
    /// The tests': the golden tests' requirements and the test tools.
    Tests,
}

impl EnvInputs {
    /// Reads them from the repository and the harness's copy of the golden
    /// tests (`None` when the task has none).
    pub fn read(repo: &Path, golden_tests: Option<&Path>) -> Self {
        EnvInputs {
            requirements: std::fs::read(repo.join("requirements.txt")).ok(),
            test_requirements: golden_tests
                .and_then(|dir| std::fs::read(dir.join("requirements.txt")).ok()),
        }
    }

    /// The cache key of one environment, and whether it may be shared (its
    /// requirements refer to nothing outside themselves).
    pub fn key(&self, task: &str, role: EnvRole) -> (String, bool) {
        let (tag, part, prefix) = match role {
            EnvRole::Service => ("service", &self.requirements, "py"),
            EnvRole::Tests => ("tests", &self.test_requirements, "tests"),
        };
        let mut bytes = format!("repogenesis-env-v2 {tag}\n").into_bytes();
        match part {
            Some(content) => {
                bytes.extend_from_slice(format!("{}\n", content.len()).as_bytes());
                bytes.extend_from_slice(content);
            }
            None => bytes.extend_from_slice(b"-\n"),
        }
        if role == EnvRole::Tests {
            for tool in TEST_TOOLS {
                bytes.extend_from_slice(tool.as_bytes());
                bytes.push(b'\n');
            }
        }
        let shareable = part
            .iter()
            .all(|content| !refers_to_files(&String::from_utf8_lossy(content)));
        let hash = format!("{:016x}", fnv1a(&bytes));
        if shareable {
            (format!("{prefix}-{hash}"), true)
        } else {
            (format!("task-{}-{tag}-{hash}", safe_name(task)), false)
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

    /// The two environments of `task`: the service's for the workspace
    /// repository `repo`, the tests' for the harness's copy of the golden
    /// tests `golden_tests`; built (or reused) with `timeout` per install.
    /// `Err` only when an environment could not be made at all.
    pub async fn python(
        &self,
        task: &str,
        repo: &Path,
        golden_tests: Option<&Path>,
        timeout: Duration,
    ) -> Result<(TaskEnvs, BuildOutcome), EvaluationError> {
        let started = Instant::now();
        let inputs = EnvInputs::read(repo, golden_tests);
        let service_args = if inputs.requirements.is_some() {
            vec![
                "-r".to_owned(),
                repo.join("requirements.txt").display().to_string(),
            ]
        } else {
            FALLBACK_PACKAGES.iter().map(|p| (*p).to_owned()).collect()
        };
        let what = if inputs.requirements.is_some() {
            "-r requirements.txt"
        } else {
            "(the Dockerfile's fallback list)"
        };
        let (key, shareable) = inputs.key(task, EnvRole::Service);
        let key = self.keyed(key);
        let service = self
            .ensure(
                task,
                &key,
                shareable,
                repo,
                &[],
                vec![(what.to_owned(), service_args)],
                timeout,
            )
            .await?;
        let mut installs = Vec::new();
        if inputs.test_requirements.is_some()
            && let Some(dir) = golden_tests
        {
            installs.push((
                "-r tests/requirements.txt".to_owned(),
                vec![
                    "-r".to_owned(),
                    dir.join("requirements.txt").display().to_string(),
                ],
            ));
        }
        installs.push((
            TEST_TOOLS.join(" "),
            TEST_TOOLS.iter().map(|p| (*p).to_owned()).collect(),
        ));
        let (key, shareable) = inputs.key(task, EnvRole::Tests);
        let key = self.keyed(key);
        let read_only: Vec<PathBuf> = golden_tests.map(Path::to_path_buf).into_iter().collect();
        let tests = self
            .ensure(
                task,
                &key,
                shareable,
                &self.config.venv_dir,
                &read_only,
                installs,
                timeout,
            )
            .await?;
        let mut problems = service.problems.clone();
        problems.extend(tests.problems.iter().cloned());
        let reused = service.reused && tests.reused;
        let outcome = BuildOutcome {
            ok: problems.is_empty(),
            dependencies_ok: service.problems.is_empty(),
            reused,
            location: Some(service.env.dir().to_path_buf()),
            test_location: Some(tests.env.dir().to_path_buf()),
            problems,
            missing_artifacts: Vec::new(),
            wall_ms: if reused {
                0
            } else {
                u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
            },
        };
        Ok((
            TaskEnvs {
                service: service.env,
                tests: tests.env,
            },
            outcome,
        ))
    }

    /// `key` for this builder's isolation: a virtualenv made in a container
    /// may point at an interpreter the sandbox's user cannot reach on the
    /// host (pyenv's under `/root`), so the two are never shared.
    fn keyed(&self, key: String) -> String {
        format!("{key}-{}", self.config.isolation)
    }

    /// One environment under `key`: the cached one when its stamp says it
    /// is finished, else made in a sandbox working in `work_dir` (with
    /// `read_only` visible) by `installs`, stamped and sealed.
    #[allow(clippy::too_many_arguments)]
    async fn ensure(
        &self,
        task: &str,
        key: &str,
        shareable: bool,
        work_dir: &Path,
        read_only: &[PathBuf],
        installs: Vec<(String, Vec<String>)>,
        timeout: Duration,
    ) -> Result<Built, EvaluationError> {
        std::fs::create_dir_all(&self.config.venv_dir)
            .map_err(EvaluationError::io("create", &self.config.venv_dir))?;
        let dir = self.config.venv_dir.join(key);
        let lock_path = self.config.venv_dir.join(format!("{key}.lock"));
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(EvaluationError::io("open", &lock_path))?;
        // Blocking is fine: each worker runs one task on a runtime of its own.
        lock.lock()
            .map_err(EvaluationError::io("lock", &lock_path))?;
        if shareable
            && let Ok(text) = std::fs::read_to_string(dir.join(STAMP))
            && let Ok(stamp) = serde_json::from_str::<Stamp>(&text)
            && stamp.key == key
            && let Ok(env) = PythonEnv::open(&dir)
        {
            return Ok(Built {
                env,
                problems: stamp.problems,
                reused: true,
            });
        }
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .map_err(EvaluationError::io("remove the stale environment", &dir))?;
        }
        let mut builder = SandboxConfig::builder(work_dir)
            .isolation(self.config.isolation)
            .timeout(timeout)
            .package_registry(self.config.package_registry)
            .read_write_path(&self.config.venv_dir);
        for path in read_only {
            builder = builder.read_only_path(path);
        }
        let config = builder
            .build()
            .map_err(EvaluationError::sandbox(SandboxPurpose::Build))?;
        let sandbox = Sandbox::new(config)
            .await
            .map_err(EvaluationError::sandbox(SandboxPurpose::Build))?;
        tracing::info!(task, dir = %dir.display(), "building a Python environment");
        let env = sandbox
            .create_venv(&dir)
            .await
            .map_err(EvaluationError::command(format!(
                "create the virtualenv {}",
                dir.display()
            )))?;
        let mut problems: Vec<String> = Vec::new();
        for (what, args) in &installs {
            problems.extend(install(&sandbox, &env, task, what, args).await);
        }
        drop(sandbox);
        seal(&dir).map_err(EvaluationError::io(
            "take back from the sandbox's user",
            &dir,
        ))?;
        let stamp = Stamp {
            key: key.to_owned(),
            ok: problems.is_empty(),
            dependencies_ok: problems.is_empty(),
            problems: problems.clone(),
        };
        if let Ok(text) = serde_json::to_string(&stamp)
            && let Err(e) = std::fs::write(dir.join(STAMP), text)
        {
            tracing::warn!(error = %e, "cannot stamp the environment; it will be rebuilt");
        }
        Ok(Built {
            env,
            problems,
            reused: false,
        })
    }
}

/// A task's two environments.
#[derive(Debug, Clone)]
pub struct TaskEnvs {
    /// The service's.
    pub service: PythonEnv,
    /// The tests'.
    pub tests: PythonEnv,
}

impl TaskEnvs {
    /// The service environment's `site-packages` directories, which the
    /// tests append to their path (golden tests that import the
    /// repository's packages find them there).
    pub fn service_site_packages(&self) -> Vec<PathBuf> {
        let lib = self.service.dir().join("lib");
        let mut found: Vec<PathBuf> = std::fs::read_dir(&lib)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.path().join("site-packages"))
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default();
        found.sort();
        found
    }
}

/// One environment made or reused.
struct Built {
    env: PythonEnv,
    problems: Vec<String>,
    reused: bool,
}

/// Hands everything under `dir` to this process's own user and group:
/// the sandbox's user made it, and in process isolation that user is the
/// service's, which must not be able to change the interpreter that runs
/// the tests (or another task's environment). Nothing to do when this
/// process is not root (the code then runs as this user anyway).
fn seal(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    // `/proc/self` belongs to this process's effective user and group.
    let me = std::fs::metadata("/proc/self")?;
    let (uid, gid) = (me.uid(), me.gid());
    if uid != 0 {
        return Ok(());
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        std::os::unix::fs::lchown(&path, Some(uid), Some(gid))?;
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                stack.push(entry?.path());
            }
        }
    }
    Ok(())
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
        let (ka, sa) = a.key("x", EnvRole::Service);
        assert_eq!(a.key("y", EnvRole::Service), (ka.clone(), sa));
        assert!(sa);
        // The service's environment does not depend on the tests' inputs.
        assert_eq!(ka, b.key("x", EnvRole::Service).0);
        assert_ne!(a.key("x", EnvRole::Tests).0, b.key("x", EnvRole::Tests).0);
        assert_ne!(ka, a.key("x", EnvRole::Tests).0);
        let local = EnvInputs {
            requirements: Some(b"-e .\n".to_vec()),
            test_requirements: None,
        };
        let (key, shareable) = local.key("my task", EnvRole::Service);
        assert!(!shareable);
        assert!(key.starts_with("task-my_task-service-"), "{key}");
        assert!(local.key("my task", EnvRole::Tests).1);
    }
}
