//! A GitTaskBench task's workspace: its repositories and inputs copied
//! into a fresh directory, the query's paths mapped onto the copy.

use std::path::{Path, PathBuf};

use agent::TaskSpec;

use crate::Error;
use crate::gittaskbench::task::{BenchTask, Benchmark};
use crate::workspace::{copy_tree, remove_dir};

/// Builds the workspace of `task` in `dir` (emptied first) and returns the
/// agent's task with every path mapped into it.
///
/// The workspace mirrors the checkout's layout: each repository of the
/// query is copied to `dir/code_base/<Repo>` (without `.git` and
/// `__pycache__`), and `queries/<ID>/input/` to `dir/queries/<ID>/input/`.
/// Paths in `query.json` (absolute under `/GitTaskBench/`) are mapped onto
/// the copy when it has them, else onto the checkout; an input with an
/// empty path means "no input" and is dropped. Outputs go to `output_dir`
/// (created).
pub fn prepare_workspace(
    bench: &Benchmark,
    task: &BenchTask,
    dir: &Path,
    output_dir: &Path,
) -> Result<TaskSpec, Error> {
    let query = task.query.as_ref().ok_or_else(|| Error::Invalid {
        path: bench.root().join("queries").join(&task.id),
        message: "the task has no query.json".into(),
    })?;
    let mut spec = TaskSpec::from_file(query, Some(output_dir)).map_err(|e| Error::Invalid {
        path: query.clone(),
        message: e.to_string(),
    })?;
    remove_dir(dir)?;
    create_dir(dir)?;
    create_dir(output_dir)?;
    spec.output_dir = output_dir.to_path_buf();
    spec.task_id.get_or_insert_with(|| task.id.clone());

    for repo in &mut spec.repositories {
        let from_query = bench
            .relative(&repo.path)
            .filter(|rel| bench.root().join(rel).is_dir());
        let (rel, source) = match from_query {
            Some(rel) => {
                let source = bench.root().join(&rel);
                (rel, source)
            }
            None => {
                // The path points elsewhere (an older query format): find
                // the repository by name.
                let source = bench.code_base(&repo.name);
                (PathBuf::from("code_base").join(&repo.name), source)
            }
        };
        if !source.is_dir() {
            return Err(Error::Invalid {
                path: query.clone(),
                message: format!(
                    "repository {} ({}) is not in the checkout; expected {}",
                    repo.name,
                    repo.path.display(),
                    source.display()
                ),
            });
        }
        let target = dir.join(&rel);
        if !target.exists() {
            copy_tree(&source, &target)?;
        }
        repo.path = target;
    }

    let inputs_rel = PathBuf::from("queries").join(&task.id).join("input");
    let inputs_source = bench.root().join(&inputs_rel);
    if inputs_source.is_dir() {
        copy_tree(&inputs_source, &dir.join(&inputs_rel))?;
    }
    spec.inputs.retain(|i| !i.path.as_os_str().is_empty());
    for input in &mut spec.inputs {
        let mapped = match bench.relative(&input.path) {
            Some(rel) if dir.join(&rel).exists() => dir.join(rel),
            Some(rel) if bench.root().join(&rel).exists() => bench.root().join(rel),
            other => {
                // Try the task's input folder by file name.
                let by_name = input
                    .path
                    .file_name()
                    .map(|name| dir.join(&inputs_rel).join(name))
                    .filter(|p| p.exists());
                match (by_name, other) {
                    (Some(found), _) => found,
                    (None, Some(rel)) => bench.root().join(rel),
                    (None, None) => input.path.clone(),
                }
            }
        };
        if !mapped.exists() {
            tracing::warn!(task = %task.id, input = %input.path.display(), "input file not found in the checkout");
        }
        input.path = mapped;
    }
    spec.work_dir = None;
    spec.validate().map_err(|e| Error::Invalid {
        path: query.clone(),
        message: e.to_string(),
    })?;
    Ok(spec)
}

fn create_dir(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        what: "creating",
        path: dir.to_path_buf(),
        source,
    })
}
