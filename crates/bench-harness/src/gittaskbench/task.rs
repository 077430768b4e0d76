//! A GitTaskBench checkout: its tasks (`config/<ID>/task_info.yaml`), their
//! queries (`queries/<ID>/query.json`) and repositories (`code_base/<Repo>`),
//! and which of them a run selects.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::gittaskbench::domains::{Domain, DomainMap};
use crate::gittaskbench::yaml::{self, YamlError};

/// The absolute prefix that paths in the benchmark's files start with.
pub const BENCHMARK_PREFIX: &str = "GitTaskBench";

/// A task's `task_info.yaml`, with paths as written (relative to the
/// checkout root).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskInfo {
    /// `taskid`.
    pub taskid: String,
    /// `result`: where the benchmark's own runner keeps the grader's lines.
    pub result: PathBuf,
    /// `output_dir`: where the benchmark's own runner expects outputs.
    pub output_dir: PathBuf,
    /// `groundtruth`: a file or directory, when the grader needs one.
    pub groundtruth: Option<PathBuf>,
    /// `test_script`: the grader.
    pub test_script: PathBuf,
    /// `multi_output`: the grader gets the output directory, not one file.
    pub multi_output: bool,
    /// `parameters`: each becomes `--<key> <value>` on the grader's command line.
    pub parameters: BTreeMap<String, String>,
}

/// Why a `task_info.yaml` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskInfoError {
    /// Outside the YAML subset the benchmark's files use.
    #[error(transparent)]
    Yaml(#[from] YamlError),
    /// A required key is missing.
    #[error("`{0}` is missing")]
    Missing(String),
    /// `multi_output` is neither true nor false.
    #[error("`multi_output` is {0:?}, not true or false")]
    NotABool(String),
    /// `parameters` holds a scalar instead of `key: value` lines.
    #[error("`parameters` must be a mapping of `key: value` lines, not {0:?}")]
    ParametersNotAMapping(String),
    /// The file could not be read.
    #[error("cannot read it: {0}")]
    Unreadable(std::io::ErrorKind),
}

/// A `task_info.yaml` that cannot be used, and which one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {problem}", .path.display())]
pub struct TaskInfoFileError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: TaskInfoError,
}

impl TaskInfo {
    /// Parses the text of a `task_info.yaml`.
    ///
    /// ```
    /// let info = bench_harness::TaskInfo::parse(
    ///     "taskid: Stegano_01\nresult: test_results/Stegano_01/results.jsonl\n\
    ///      output_dir: output/Stegano_01/\ngroundtruth: groundtruth/Stegano_01/gt.png\n\
    ///      test_script: test_scripts/Stegano_01/test_script.py\nmulti_output: false\n\
    ///      parameters:\n watermark: 'stegano'\n",
    /// )?;
    /// assert_eq!(info.parameters["watermark"], "stegano");
    /// assert!(!info.multi_output);
    /// # Ok::<(), bench_harness::TaskInfoError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Self, TaskInfoError> {
        let map = yaml::parse(text)?;
        let scalar = |key: &str| map.get(key).and_then(yaml::Value::as_str);
        let required = |key: &str| {
            scalar(key)
                .map(str::to_owned)
                .ok_or(TaskInfoError::Missing(key.to_owned()))
        };
        let multi_output = match scalar("multi_output") {
            None => false,
            Some(text) => {
                yaml::parse_bool(text).ok_or_else(|| TaskInfoError::NotABool(text.to_owned()))?
            }
        };
        let parameters = match map.get("parameters") {
            None | Some(yaml::Value::Null) => BTreeMap::new(),
            Some(yaml::Value::Map(map)) => map.clone(),
            Some(yaml::Value::Scalar(s)) => {
                return Err(TaskInfoError::ParametersNotAMapping(s.clone()));
            }
        };
        Ok(TaskInfo {
            taskid: required("taskid")?,
            result: PathBuf::from(required("result")?),
            output_dir: PathBuf::from(required("output_dir")?),
            groundtruth: scalar("groundtruth")
                .filter(|s| !s.trim().is_empty())
                .map(PathBuf::from),
            test_script: PathBuf::from(required("test_script")?),
            multi_output,
            parameters,
        })
    }
}

/// One task of the checkout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchTask {
    /// The task ID: the name of its `config/` directory.
    pub id: String,
    /// Its repository (from `query.json`, else the ID without `_NN`).
    pub repo: String,
    /// The repository's domain.
    pub domain: Domain,
    /// Its `task_info.yaml`, or why it could not be read.
    pub info: Result<TaskInfo, TaskInfoFileError>,
    /// `queries/<ID>/query.json`, when it exists.
    pub query: Option<PathBuf>,
}

/// Which tasks to run. Empty fields select everything; set fields must
/// all match.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    /// Task IDs.
    #[serde(default)]
    pub tasks: Vec<String>,
    /// A repository name (case-insensitive).
    #[serde(default)]
    pub repo: Option<String>,
    /// A domain, as a slug or label.
    #[serde(default)]
    pub domain: Option<String>,
}

impl Selection {
    /// Whether nothing is filtered.
    pub fn is_all(&self) -> bool {
        self.tasks.is_empty() && self.repo.is_none() && self.domain.is_none()
    }

    /// A short description for reports (`all tasks`, `repo=NeuroKit`).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.tasks.is_empty() {
            parts.push(format!("tasks={}", self.tasks.join(",")));
        }
        if let Some(repo) = &self.repo {
            parts.push(format!("repo={repo}"));
        }
        if let Some(domain) = &self.domain {
            parts.push(format!("domain={domain}"));
        }
        if parts.is_empty() {
            "all tasks".to_owned()
        } else {
            parts.join(" ")
        }
    }
}

/// A GitTaskBench checkout.
#[derive(Debug, Clone)]
pub struct Benchmark {
    root: PathBuf,
    tasks: Vec<BenchTask>,
}

impl Benchmark {
    /// Reads the task list of the checkout at `root`: every directory of
    /// `config/` that holds a `task_info.yaml`, sorted by ID. A task file
    /// that cannot be parsed is kept, with the problem in
    /// [`BenchTask::info`], so that it counts as a failed task.
    pub fn open(root: &Path, domains: &DomainMap) -> Result<Self, Error> {
        let root = std::fs::canonicalize(root).map_err(|source| Error::Io {
            what: "opening the benchmark checkout",
            path: root.to_path_buf(),
            source,
        })?;
        let config = root.join("config");
        let entries = std::fs::read_dir(&config).map_err(|_| Error::NotABenchmark(root.clone()))?;
        let mut tasks = Vec::new();
        for entry in entries.filter_map(Result::ok) {
            let yaml_path = entry.path().join("task_info.yaml");
            if !yaml_path.is_file() {
                continue;
            }
            let id = entry.file_name().to_string_lossy().into_owned();
            let info = std::fs::read_to_string(&yaml_path)
                .map_err(|e| TaskInfoError::Unreadable(e.kind()))
                .and_then(|text| TaskInfo::parse(&text))
                .map_err(|problem| TaskInfoFileError {
                    path: yaml_path.clone(),
                    problem,
                });
            if let Ok(info) = &info
                && info.taskid != id
            {
                tracing::warn!(
                    task = %id,
                    taskid = %info.taskid,
                    "task_info.yaml names another task; using the directory name"
                );
            }
            let query =
                Some(root.join("queries").join(&id).join("query.json")).filter(|q| q.is_file());
            let repo = query
                .as_deref()
                .and_then(repo_from_query)
                .unwrap_or_else(|| repo_from_id(&id));
            let domain = domains.domain_of(&repo);
            tasks.push(BenchTask {
                id,
                repo,
                domain,
                info,
                query,
            });
        }
        if tasks.is_empty() {
            return Err(Error::NotABenchmark(root));
        }
        tasks.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(Benchmark { root, tasks })
    }

    /// The checkout's root (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Every task, sorted by ID.
    pub fn tasks(&self) -> &[BenchTask] {
        &self.tasks
    }

    /// The task with this ID.
    pub fn task(&self, id: &str) -> Option<&BenchTask> {
        self.tasks.iter().find(|t| t.id == id)
    }

    /// The tasks `selection` picks, in ID order. Unknown task IDs, an
    /// unknown domain, and a selection that matches nothing are errors.
    pub fn select(&self, selection: &Selection) -> Result<Vec<&BenchTask>, Error> {
        for id in &selection.tasks {
            if self.task(id).is_none() {
                return Err(Error::UnknownTask(id.clone()));
            }
        }
        let domain = match &selection.domain {
            Some(name) => {
                Some(Domain::parse(name).ok_or_else(|| Error::UnknownDomain(name.clone()))?)
            }
            None => None,
        };
        let picked: Vec<&BenchTask> = self
            .tasks
            .iter()
            .filter(|t| selection.tasks.is_empty() || selection.tasks.contains(&t.id))
            .filter(|t| {
                selection
                    .repo
                    .as_ref()
                    .is_none_or(|r| r.eq_ignore_ascii_case(&t.repo))
            })
            .filter(|t| domain.is_none_or(|d| d == t.domain))
            .collect();
        if picked.is_empty() {
            return Err(Error::EmptySelection(selection.describe()));
        }
        Ok(picked)
    }

    /// A path from the benchmark's files made relative to the checkout:
    /// `/GitTaskBench/code_base/X` → `code_base/X`; a path already inside
    /// the root → relative to it; a relative path stays. `None` for any
    /// other absolute path.
    pub fn relative(&self, path: &Path) -> Option<PathBuf> {
        if path.is_relative() {
            return Some(clean(path));
        }
        if let Ok(rest) = path.strip_prefix(&self.root) {
            return Some(clean(rest));
        }
        let mut components = path.components();
        while let Some(component) = components.next() {
            if let Component::Normal(name) = component
                && name == BENCHMARK_PREFIX
            {
                return Some(clean(components.as_path()));
            }
        }
        None
    }

    /// A path from the benchmark's files mapped onto the checkout (see
    /// [`Benchmark::relative`]); other absolute paths stay as they are.
    ///
    /// ```no_run
    /// # use std::path::Path;
    /// # let bench = bench_harness::Benchmark::open(Path::new("GitTaskBench"), &Default::default())?;
    /// let p = bench.map_path(Path::new("/GitTaskBench/queries/Stegano_01/input/in.png"));
    /// assert_eq!(p, bench.root().join("queries/Stegano_01/input/in.png"));
    /// # Ok::<(), bench_harness::Error>(())
    /// ```
    pub fn map_path(&self, path: &Path) -> PathBuf {
        match self.relative(path) {
            Some(rel) => self.root.join(rel),
            None => path.to_path_buf(),
        }
    }

    /// The directory of repository `name` in `code_base/`.
    pub fn code_base(&self, name: &str) -> PathBuf {
        self.root.join("code_base").join(name)
    }
}

/// Drops `.` and resolves `..` lexically, never above the start.
fn clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

/// The first repository's name in a `query.json`.
fn repo_from_query(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    let repo = value.get("repositories")?.get(0)?;
    let name = repo
        .get("name")
        .and_then(serde_json::Value::as_str)
        .filter(|n| !n.trim().is_empty())
        .map(str::to_owned);
    name.or_else(|| {
        repo.get("path")
            .and_then(serde_json::Value::as_str)
            .and_then(|p| Path::new(p).file_name())
            .map(|n| n.to_string_lossy().into_owned())
    })
}

/// `Stegano_01` → `Stegano`.
pub(crate) fn repo_from_id(id: &str) -> String {
    match id.rsplit_once('_') {
        Some((repo, number)) if !repo.is_empty() && number.chars().all(|c| c.is_ascii_digit()) => {
            repo.to_owned()
        }
        _ => id.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_info_needs_its_keys() {
        assert!(TaskInfo::parse("taskid: A_01\n").is_err());
        let info = TaskInfo::parse(
            "taskid: A_01\nresult: r.jsonl\noutput_dir: output/A_01/\ntest_script: t.py\n",
        );
        assert!(info.is_ok_and(|i| !i.multi_output && i.groundtruth.is_none()));
        assert!(
            TaskInfo::parse(
                "taskid: A\nresult: r\noutput_dir: o\ntest_script: t\nmulti_output: maybe\n"
            )
            .is_err()
        );
    }

    #[test]
    fn repository_names_from_ids() {
        assert_eq!(repo_from_id("Stegano_01"), "Stegano");
        assert_eq!(repo_from_id("Video_Pose_02"), "Video_Pose");
        assert_eq!(repo_from_id("plain"), "plain");
        assert_eq!(repo_from_id("a_b"), "a_b");
    }

    #[test]
    fn cleaning_never_climbs_out() {
        assert_eq!(clean(Path::new("a/./b/../c")), PathBuf::from("a/c"));
        assert_eq!(clean(Path::new("../../x")), PathBuf::from("x"));
    }
}
