//! Grading with the task's own test script, the way GitTaskBench does:
//! `python <test_script> --output <OUT> --result <results.jsonl>
//! [--groundtruth <GT>] [--<key> <value>...]`, then the last JSON line of
//! the results file.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sandbox::{Command, Isolation, PythonEnv, PythonScript, Sandbox, SandboxConfig};
use serde::{Deserialize, Serialize};

use crate::gittaskbench::output::find_output;
use crate::gittaskbench::script_packages::ScriptPackages;
use crate::gittaskbench::task::{BenchTask, Benchmark, TaskInfo};

/// The Python the test scripts run with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GradingPython {
    /// Virtualenvs under this directory, one per set of packages a test
    /// script needs (`<dir>/stdlib`, `<dir>/packages-<hash>`): the
    /// distributions that provide the third-party modules the script and
    /// the files beside it import, at the versions the benchmark's own
    /// `requirements.txt` pins, with its pins as constraints. A script of
    /// the standard library alone gets a virtualenv without pip, made
    /// offline. Each is made once and reused while its packages do not
    /// change.
    Venvs(PathBuf),
    /// The sandbox's interpreter as it is.
    System,
}

/// How grading runs.
#[derive(Debug, Clone)]
pub struct GradingConfig {
    /// The interpreter.
    pub python: GradingPython,
    /// Sandbox isolation for the test scripts and pip.
    pub isolation: Isolation,
    /// Time limit of one test script (and of one `pip install`).
    pub timeout: Duration,
    /// Let pip reach the package registry.
    pub package_registry: bool,
}

impl GradingConfig {
    /// Virtualenvs under `venvs` ([`GradingPython::Venvs`]), automatic
    /// isolation, 10 minutes per script, registry access on.
    pub fn new(venvs: impl Into<PathBuf>) -> Self {
        GradingConfig {
            python: GradingPython::Venvs(venvs.into()),
            isolation: Isolation::Auto,
            timeout: Duration::from_secs(600),
            package_registry: true,
        }
    }
}

/// What the grader said about one task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// `Process`: the output could be read and checked.
    pub process: bool,
    /// `Result`: the task's criterion is met.
    pub result: bool,
    /// The grader's comments, or why grading could not happen.
    pub comments: String,
    /// The file or directory the grader was given.
    pub output: Option<PathBuf>,
}

impl Verdict {
    fn failed(comments: impl Into<String>, output: Option<PathBuf>) -> Self {
        Verdict {
            process: false,
            result: false,
            comments: comments.into(),
            output,
        }
    }
}

/// Reads the grader's verdict from the text of its results file: the last
/// non-empty line, a JSON object with `Process`, `Result` (or `Results`,
/// any case; booleans or the strings `"true"`/`"false"`) and `comments`.
///
/// ```
/// let text = "{\"Process\": false, \"Result\": false}\n{\"Process\": true, \"Result\": \"False\", \"comments\": \"PSNR 12 dB\"}\n";
/// assert_eq!(
///     bench_harness::parse_result_line(text),
///     Some((true, false, "PSNR 12 dB".to_owned()))
/// );
/// assert_eq!(bench_harness::parse_result_line(""), None);
/// ```
pub fn parse_result_line(text: &str) -> Option<(bool, bool, String)> {
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    let value: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
    let object = value.as_object()?;
    let get = |names: &[&str]| {
        object
            .iter()
            .find(|(k, _)| names.iter().any(|n| k.eq_ignore_ascii_case(n)))
            .map(|(_, v)| v)
    };
    let boolean = |v: Option<&serde_json::Value>| match v {
        Some(serde_json::Value::Bool(b)) => *b,
        Some(serde_json::Value::String(s)) => s.trim().eq_ignore_ascii_case("true"),
        _ => false,
    };
    let comments = match get(&["comments", "comment"]) {
        None | Some(serde_json::Value::Null) => String::new(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    Some((
        boolean(get(&["process"])),
        boolean(get(&["result", "results"])),
        comments,
    ))
}

/// Runs test scripts. Shared by the harness's workers; a virtualenv is
/// created once even when tasks that need it are graded concurrently.
#[derive(Debug)]
pub struct Grader {
    root: PathBuf,
    config: GradingConfig,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Grader {
    /// A grader for the checkout of `bench`.
    pub fn new(bench: &Benchmark, config: GradingConfig) -> Self {
        Grader {
            root: bench.root().to_path_buf(),
            config,
            locks: Mutex::new(HashMap::new()),
        }
    }

    /// Grades the outputs of `task` found in `outputs`, running the test
    /// script with `work` (created) as its writable working directory and
    /// `work/results.jsonl` as its results file. Never fails: whatever
    /// goes wrong is a verdict with `process` false and the reason.
    pub async fn grade(&self, task: &BenchTask, outputs: &Path, work: &Path) -> Verdict {
        let info = match &task.info {
            Ok(info) => info,
            Err(problem) => return Verdict::failed(format!("task_info.yaml: {problem}"), None),
        };
        let Some(output) = find_output(outputs, info.multi_output) else {
            return Verdict::failed(
                format!(
                    "No valid output found in {} (expected output.*, output*, output_* or an output* folder)",
                    outputs.display()
                ),
                None,
            );
        };
        match self.run_script(task, info, &output, outputs, work).await {
            Ok(verdict) => verdict,
            Err(error) => Verdict::failed(error.to_string(), Some(output)),
        }
    }

    async fn run_script(
        &self,
        task: &BenchTask,
        info: &TaskInfo,
        output: &Path,
        outputs: &Path,
        work: &Path,
    ) -> Result<Verdict, GradingError> {
        let script = self.root.join(&info.test_script);
        if !script.is_file() {
            return Err(GradingError::ScriptMissing(script));
        }
        std::fs::create_dir_all(work).map_err(GradingError::io("create", work))?;
        let results = work.join("results.jsonl");
        match std::fs::remove_file(&results) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(GradingError::io("clear", &results)(e)),
        }
        let mut builder = SandboxConfig::builder(work)
            .isolation(self.config.isolation)
            .timeout(self.config.timeout)
            .package_registry(self.config.package_registry)
            .read_only_path(&self.root)
            .read_only_path(outputs);
        if let GradingPython::Venvs(dir) = &self.config.python {
            std::fs::create_dir_all(dir).map_err(GradingError::io("create", dir))?;
            builder = builder.read_write_path(dir);
        }
        let config = builder
            .build()
            .map_err(GradingError::sandbox("grading sandbox"))?;
        let sandbox = Sandbox::new(config)
            .await
            .map_err(GradingError::sandbox("grading sandbox"))?;

        let mut notes = Vec::new();
        let env = match &self.config.python {
            GradingPython::System => None,
            GradingPython::Venvs(dir) => {
                let packages =
                    ScriptPackages::for_script(&script, &self.root.join("requirements.txt"));
                let key = packages.key();
                let (env, note) = self
                    .venv(&sandbox, &dir.join(&key), &key, &packages)
                    .await?;
                notes.extend(note);
                Some(env)
            }
        };

        let mut args: Vec<OsString> = vec![
            "--output".into(),
            output.into(),
            "--result".into(),
            results.clone().into(),
        ];
        if let Some(groundtruth) = &info.groundtruth {
            args.push("--groundtruth".into());
            args.push(self.root.join(groundtruth).into());
        }
        for (key, value) in &info.parameters {
            args.push(format!("--{key}").into());
            args.push(value.into());
        }
        tracing::info!(task = %task.id, script = %script.display(), "grading");
        let program = PythonScript::file(&script);
        let run = match &env {
            Some(env) => sandbox.run_python_in(env, program, &args).await,
            None => sandbox.run_python(program, &args).await,
        }
        .map_err(GradingError::sandbox("cannot run the test script"))?;

        let with_notes = |mut comments: String| {
            for note in &notes {
                if !comments.is_empty() {
                    comments.push('\n');
                }
                comments.push_str("[grader] ");
                comments.push_str(note);
            }
            comments
        };
        if !run.success() {
            let mut detail = run.stderr.to_string();
            if detail.trim().is_empty() {
                detail = run.stdout.to_string();
            }
            let detail = tail(&detail, 1500);
            return Ok(Verdict::failed(
                with_notes(format!(
                    "Test script failed ({}): {}",
                    run.status_summary(),
                    detail.trim()
                )),
                Some(output.to_path_buf()),
            ));
        }
        let text = std::fs::read_to_string(&results).unwrap_or_default();
        match parse_result_line(&text) {
            Some((process, result, comments)) => Ok(Verdict {
                process,
                result,
                comments: with_notes(comments),
                output: Some(output.to_path_buf()),
            }),
            None => Ok(Verdict::failed(
                with_notes(format!(
                    "the test script wrote no result line to {}",
                    results.display()
                )),
                Some(output.to_path_buf()),
            )),
        }
    }

    /// The virtualenv at `dir` for `packages`, created (or recreated when
    /// they changed) under a lock per `key`. Returns a note when the
    /// benchmark's pins could not be installed (the latest releases were
    /// installed instead) or nothing could: grading goes on, and the test
    /// script's own failure says what is missing.
    async fn venv(
        &self,
        sandbox: &Sandbox,
        dir: &Path,
        key: &str,
        packages: &ScriptPackages,
    ) -> Result<(PythonEnv, Option<String>), GradingError> {
        let lock = {
            let mut locks = self
                .locks
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            locks.entry(key.to_owned()).or_default().clone()
        };
        let _guard = lock.lock().await;
        let wanted = if packages.requirements.is_empty() {
            "no packages".to_owned()
        } else {
            format!("packages {}", packages.requirements.join(" "))
        };
        let stamp = dir.join(".bench-harness-stamp");
        if std::fs::read_to_string(&stamp).is_ok_and(|s| s.lines().next() == Some(wanted.as_str()))
            && let Ok(env) = PythonEnv::open(dir)
        {
            return Ok((env, stamp_note(&stamp)));
        }
        if dir.exists() {
            std::fs::remove_dir_all(dir)
                .map_err(GradingError::io("remove the stale virtualenv", dir))?;
        }
        tracing::info!(key, dir = %dir.display(), packages = ?packages.requirements, "creating the grading virtualenv");
        let mut note = None;
        let env = if packages.requirements.is_empty() {
            let created = sandbox
                .exec(Command::new("python3").args([
                    std::ffi::OsStr::new("-m"),
                    "venv".as_ref(),
                    "--without-pip".as_ref(),
                    dir.as_os_str(),
                ]))
                .await
                .map_err(GradingError::sandbox(format!(
                    "cannot create the virtualenv {}",
                    dir.display()
                )))?;
            if !created.success() {
                return Err(GradingError::VenvFailed {
                    dir: dir.to_path_buf(),
                    status: created.status_summary(),
                    output: tail(&created.combined_output(), 600).to_string(),
                });
            }
            PythonEnv::open(dir).map_err(GradingError::sandbox("the new virtualenv"))?
        } else {
            let env = sandbox
                .create_venv(dir)
                .await
                .map_err(GradingError::sandbox(format!(
                    "cannot create the virtualenv {}",
                    dir.display()
                )))?;
            let mut args: Vec<String> = Vec::new();
            if !packages.constraints.is_empty() {
                let constraints = dir.join("benchmark-constraints.txt");
                std::fs::write(&constraints, packages.constraints.join("\n") + "\n")
                    .map_err(GradingError::io("write", &constraints))?;
                args.push("-c".into());
                args.push(constraints.to_string_lossy().into_owned());
            }
            args.extend(packages.requirements.iter().cloned());
            if let Err(pinned) = sandbox.pip_install(&env, &args).await {
                // A pin with no wheel for this Python fails the whole set.
                let unpinned = packages.unpinned();
                let message = match sandbox.pip_install(&env, &unpinned).await {
                    Ok(_) => format!(
                        "the benchmark's pins ({}) could not be installed here, so their latest \
                         releases were: {}",
                        packages.requirements.join(", "),
                        tail(&pinned.to_string(), 400)
                    ),
                    Err(latest) => format!(
                        "pip install {} failed: {}",
                        unpinned.join(" "),
                        tail(&latest.to_string(), 600)
                    ),
                };
                tracing::warn!(key, "{message}");
                note = Some(message);
            }
            env
        };
        let mut content = wanted;
        if let Some(note) = &note {
            content.push('\n');
            content.push_str(note);
        }
        std::fs::write(&stamp, content).map_err(GradingError::io("write", &stamp))?;
        Ok((env, note))
    }
}

/// The note kept in a stamp (a failed install), if any.
fn stamp_note(stamp: &Path) -> Option<String> {
    let text = std::fs::read_to_string(stamp).ok()?;
    let note: String = text.lines().skip(1).collect::<Vec<_>>().join("\n");
    Some(note).filter(|n| !n.trim().is_empty())
}

/// Why a task could not be graded (the verdict then says so, with this
/// message: the grading failed, not the agent).
#[derive(Debug, thiserror::Error)]
enum GradingError {
    /// The task's test script is not in the checkout.
    #[error("test script {} not found", .0.display())]
    ScriptMissing(PathBuf),
    /// A file or directory of the grading could not be made or changed.
    #[error("cannot {action} {}: {source}", .path.display())]
    Io {
        /// What was being done ("create", "clear", "write", ...).
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The sandbox failed at a step of the grading.
    #[error("{step}: {source}")]
    Sandbox {
        /// The step ("grading sandbox", "cannot run the test script", ...).
        step: String,
        /// The cause.
        source: sandbox::SandboxError,
    },
    /// `python3 -m venv` ran and failed.
    #[error("python3 -m venv {} failed ({status}): {output}", .dir.display())]
    VenvFailed {
        /// The virtualenv's directory.
        dir: PathBuf,
        /// How the command ended.
        status: String,
        /// The end of its output.
        output: String,
    },
}

impl GradingError {
    fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> Self + 'a {
        move |source| GradingError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }

    fn sandbox(step: impl Into<String>) -> impl FnOnce(sandbox::SandboxError) -> Self {
        let step = step.into();
        move |source| GradingError::Sandbox { step, source }
    }
}

use sandbox::text_tail as tail;

/// FNV-1a, to name a set of packages (and to rank task IDs for the
/// held-out split).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_lines_in_their_variants() {
        assert_eq!(
            parse_result_line("{\"Process\": true, \"Results\": true, \"comments\": [\"a\"]}"),
            Some((true, true, "[\"a\"]".to_owned()))
        );
        assert_eq!(
            parse_result_line("{\"process\": \"TRUE\"}\n\n"),
            Some((true, false, String::new()))
        );
        assert_eq!(parse_result_line("not json"), None);
        assert_eq!(parse_result_line("[1, 2]"), None);
    }

    #[test]
    fn tails_cut_at_characters() {
        assert_eq!(tail("abc", 5), "abc");
        assert_eq!(tail("ééé", 3), "…é");
    }
}
