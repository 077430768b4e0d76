//! What the agent is asked to do: the task description, the repositories to
//! use, the input files, and where the outputs go.
//!
//! A task comes from command-line flags ([`TaskSpec::new`] and the `with_*`
//! methods) or from a JSON file ([`TaskSpec::from_json`]). The JSON file is
//! either this crate's own form (the serde form of [`TaskSpec`]) or a
//! GitTaskBench `query.json` as the benchmark ships it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::Error;

/// A repository the task should be solved with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoSpec {
    /// A short name (the directory name when none is given).
    pub name: String,
    /// Where it is on disk.
    pub path: PathBuf,
    /// Where it comes from, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Hints on how to understand it (GitTaskBench's `understanding_guidelines`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guidelines: Vec<String>,
}

impl RepoSpec {
    /// A repository at `path`, named after its directory.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "repository".to_owned());
        RepoSpec {
            name,
            path,
            url: None,
            guidelines: Vec::new(),
        }
    }
}

/// An input file of the task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputFile {
    /// Its path.
    pub path: PathBuf,
    /// What it is.
    #[serde(default)]
    pub description: String,
}

impl InputFile {
    /// Parses the `FILE[=DESCRIPTION]` form of the `--input` flag.
    pub fn parse_flag(flag: &str) -> Self {
        match flag.split_once('=') {
            Some((path, description)) => InputFile {
                path: PathBuf::from(path.trim()),
                description: description.trim().to_owned(),
            },
            None => InputFile {
                path: PathBuf::from(flag.trim()),
                description: String::new(),
            },
        }
    }
}

/// A task for the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSpec {
    /// An identifier (GitTaskBench's `task_id`), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// What to do, in plain language.
    pub description: String,
    /// The repositories to use; the first is the one the tools explore.
    pub repositories: Vec<RepoSpec>,
    /// The input files.
    #[serde(default)]
    pub inputs: Vec<InputFile>,
    /// Where the outputs go (`output.<ext>`, or `output_01.<ext>`, ...).
    pub output_dir: PathBuf,
    /// Where code runs; the first repository when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_dir: Option<PathBuf>,
}

/// GitTaskBench's `query.json`.
#[derive(Deserialize)]
struct Query {
    task_id: Option<String>,
    task_description: String,
    #[serde(default)]
    repositories: Vec<QueryRepo>,
    #[serde(default)]
    file_paths: QueryFiles,
}

#[derive(Deserialize)]
struct QueryRepo {
    name: Option<String>,
    path: PathBuf,
    url: Option<String>,
    #[serde(default)]
    understanding_guidelines: Guidelines,
}

#[derive(Deserialize, Default)]
#[serde(untagged)]
enum Guidelines {
    #[default]
    None,
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize, Default)]
struct QueryFiles {
    #[serde(default)]
    input_files: Vec<QueryInput>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum QueryInput {
    Described {
        path: PathBuf,
        #[serde(default)]
        description: String,
    },
    Bare(PathBuf),
}

/// The largest task file read.
const MAX_TASK_FILE: u64 = 1024 * 1024;

impl TaskSpec {
    /// A task to do `description` with the repository at `repo`, writing to
    /// `output_dir`.
    pub fn new(
        description: impl Into<String>,
        repo: impl Into<PathBuf>,
        output_dir: impl Into<PathBuf>,
    ) -> Self {
        TaskSpec {
            task_id: None,
            description: description.into(),
            repositories: vec![RepoSpec::at(repo)],
            inputs: Vec::new(),
            output_dir: output_dir.into(),
            work_dir: None,
        }
    }

    /// Adds an input file.
    pub fn with_input(mut self, path: impl Into<PathBuf>, description: impl Into<String>) -> Self {
        self.inputs.push(InputFile {
            path: path.into(),
            description: description.into(),
        });
        self
    }

    /// Adds another repository the task may use (the first one stays the
    /// primary repository).
    pub fn with_repository(mut self, repo: impl Into<PathBuf>) -> Self {
        self.repositories.push(RepoSpec::at(repo));
        self
    }

    /// Sets the working directory.
    pub fn with_work_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.work_dir = Some(dir.into());
        self
    }

    /// Parses a task file: this crate's form, or a GitTaskBench `query.json`
    /// (`task_id`, `task_description`, `repositories[{name,path,url,
    /// understanding_guidelines}]`, `file_paths.input_files[{path,description}]`).
    /// A `query.json` names no output directory; `output_dir` gives it (the
    /// one from the file wins when the file has one).
    pub fn from_json(text: &str, output_dir: Option<&Path>) -> Result<Self, Error> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| Error::Task(format!("not JSON: {e}")))?;
        let spec = if value.get("task_description").is_some() {
            let query: Query = serde_json::from_value(value)
                .map_err(|e| Error::Task(format!("not a GitTaskBench query.json: {e}")))?;
            let output_dir = output_dir.map(Path::to_path_buf).ok_or_else(|| {
                Error::Task("a query.json names no output directory; pass --output-dir".into())
            })?;
            TaskSpec {
                task_id: query.task_id,
                description: query.task_description,
                repositories: query
                    .repositories
                    .into_iter()
                    .map(|r| {
                        let mut spec = RepoSpec::at(r.path);
                        if let Some(name) = r.name.filter(|n| !n.trim().is_empty()) {
                            spec.name = name;
                        }
                        spec.url = r.url;
                        spec.guidelines = match r.understanding_guidelines {
                            Guidelines::None => Vec::new(),
                            Guidelines::One(g) => vec![g],
                            Guidelines::Many(g) => g,
                        };
                        spec
                    })
                    .collect(),
                inputs: query
                    .file_paths
                    .input_files
                    .into_iter()
                    .map(|i| match i {
                        QueryInput::Described { path, description } => {
                            InputFile { path, description }
                        }
                        QueryInput::Bare(path) => InputFile {
                            path,
                            description: String::new(),
                        },
                    })
                    .collect(),
                output_dir,
                work_dir: None,
            }
        } else {
            let mut value = value;
            if let (Some(dir), Some(object)) = (output_dir, value.as_object_mut())
                && !object.contains_key("output_dir")
            {
                object.insert(
                    "output_dir".into(),
                    serde_json::Value::String(dir.to_string_lossy().into_owned()),
                );
            }
            serde_json::from_value(value).map_err(|e| Error::Task(format!("bad task file: {e}")))?
        };
        spec.validate()?;
        Ok(spec)
    }

    /// Reads and parses a task file (see [`TaskSpec::from_json`]); one past
    /// 1 MiB (say `/dev/zero`) is refused before it is read whole.
    pub fn from_file(path: &Path, output_dir: Option<&Path>) -> Result<Self, Error> {
        let text = repo_files::read_small_text(path, MAX_TASK_FILE).map_err(|e| {
            Error::Task(format!(
                "cannot read {}: {e}; a task file is a short JSON object",
                path.display()
            ))
        })?;
        Self::from_json(&text, output_dir)
    }

    /// Checks that the task can be started: a description, a repository.
    pub fn validate(&self) -> Result<(), Error> {
        if self.description.trim().is_empty() {
            return Err(Error::Task("the task description is empty".into()));
        }
        if self.repositories.is_empty() {
            return Err(Error::Task("the task names no repository".into()));
        }
        Ok(())
    }

    /// The repository the tools explore (the first one).
    pub fn primary_repo(&self) -> Option<&RepoSpec> {
        self.repositories.first()
    }

    /// Where code runs: the working directory, else the first repository.
    pub fn effective_work_dir(&self) -> PathBuf {
        self.work_dir
            .clone()
            .or_else(|| self.primary_repo().map(|r| r.path.clone()))
            .unwrap_or_else(|| PathBuf::from("."))
    }

    /// Makes every path absolute against `base` (the current directory of
    /// the caller), so the model only ever sees absolute paths.
    pub fn absolutize(&mut self, base: &Path) {
        let abs = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
            if let Ok(canonical) = std::fs::canonicalize(&*p) {
                *p = canonical;
            }
        };
        for repo in &mut self.repositories {
            abs(&mut repo.path);
        }
        for input in &mut self.inputs {
            abs(&mut input.path);
        }
        abs(&mut self.output_dir);
        if let Some(dir) = &mut self.work_dir {
            abs(dir);
        }
    }

    /// The output files found in the output directory (names starting with
    /// `output`), sorted.
    pub fn outputs(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(&self.output_dir) else {
            return Vec::new();
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter(|e| e.file_name().to_string_lossy().starts_with("output"))
            .map(|e| e.path())
            .collect();
        found.sort();
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUERY: &str = r#"{
      "task_id": "DeScratch_01",
      "task_description": "Given an old photo with scratches, remove its scratches.",
      "repositories": [{
        "name": "DeScratch",
        "path": "/mnt/DeScratch_01/repo/DeScratch",
        "url": "https://github.com/x/DeScratch",
        "understanding_guidelines": ["Read README.md to understand the project's basic functionality and usage"]
      }],
      "file_paths": {"input_files": [{
        "path": "/mnt/DeScratch_01/repo/DeScratch/input_dataset/DeScratch_01_input.jpeg",
        "description": "An old photo in need of restoration"
      }]}
    }"#;

    #[test]
    fn parses_gittaskbench_query_json() -> Result<(), Error> {
        let spec = TaskSpec::from_json(QUERY, Some(Path::new("/out")))?;
        assert_eq!(spec.task_id.as_deref(), Some("DeScratch_01"));
        assert!(spec.description.starts_with("Given an old photo"));
        assert_eq!(spec.repositories.len(), 1);
        let repo = &spec.repositories[0];
        assert_eq!(repo.name, "DeScratch");
        assert_eq!(repo.path, Path::new("/mnt/DeScratch_01/repo/DeScratch"));
        assert_eq!(repo.url.as_deref(), Some("https://github.com/x/DeScratch"));
        assert_eq!(repo.guidelines.len(), 1);
        assert_eq!(spec.inputs.len(), 1);
        assert_eq!(
            spec.inputs[0].description,
            "An old photo in need of restoration"
        );
        assert_eq!(spec.output_dir, Path::new("/out"));
        assert_eq!(
            spec.effective_work_dir(),
            Path::new("/mnt/DeScratch_01/repo/DeScratch")
        );
        Ok(())
    }

    #[test]
    fn the_fixture_query_json_parses() -> Result<(), Error> {
        let text = include_str!("../../../../testdata/agent_task/query.json");
        let spec = TaskSpec::from_json(text, Some(Path::new("/o")))?;
        assert_eq!(spec.task_id.as_deref(), Some("textstats_01"));
        assert_eq!(
            spec.repositories[0].path,
            Path::new("testdata/agent_fixture")
        );
        assert_eq!(spec.inputs[0].description, "A short English text");
        Ok(())
    }

    #[test]
    fn query_json_needs_an_output_dir() {
        let err = TaskSpec::from_json(QUERY, None)
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("--output-dir")));
    }

    #[test]
    fn query_json_variants_are_accepted() -> Result<(), Error> {
        let text = r#"{"task_description": "x", "repositories": [{"path": "/r/pkg", "understanding_guidelines": "Read it"}],
                       "file_paths": {"input_files": ["/in/a.txt"]}}"#;
        let spec = TaskSpec::from_json(text, Some(Path::new("/o")))?;
        assert_eq!(spec.repositories[0].name, "pkg");
        assert_eq!(spec.repositories[0].guidelines, ["Read it"]);
        assert_eq!(spec.inputs[0].path, Path::new("/in/a.txt"));
        Ok(())
    }

    #[test]
    fn own_form_round_trips() -> Result<(), Error> {
        let spec = TaskSpec::new("count words", "/repo", "/out")
            .with_input("/in.txt", "some text")
            .with_work_dir("/work");
        let text = serde_json::to_string(&spec).map_err(|e| Error::Task(e.to_string()))?;
        assert_eq!(TaskSpec::from_json(&text, None)?, spec);
        Ok(())
    }

    #[test]
    fn bad_task_files_are_errors_not_panics() {
        for text in [
            "",
            "[]",
            "{}",
            r#"{"task_description": ""}"#,
            r#"{"task_description": 3}"#,
        ] {
            assert!(
                TaskSpec::from_json(text, Some(Path::new("/o"))).is_err(),
                "{text}"
            );
        }
    }

    #[test]
    fn input_flag_forms() {
        assert_eq!(
            InputFile::parse_flag("a.txt=the text"),
            InputFile {
                path: "a.txt".into(),
                description: "the text".into()
            }
        );
        assert_eq!(InputFile::parse_flag("b.csv").description, "");
    }
}
