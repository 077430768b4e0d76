//! The results file both benchmarks append their records to (one JSON
//! line per task, written as each task ends, so an interrupted run keeps
//! what it finished), and reading it back with the latest record of each
//! task winning.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::Error;

/// A line of a results file: one task's outcome, keyed by the task's ID.
/// GitTaskBench's [`crate::TaskRecord`] and RepoGenesis's records share the file
/// format and its guarantees through it.
pub trait ResultRecord: Serialize + serde::de::DeserializeOwned + Clone {
    /// The task the record is about.
    fn task_id(&self) -> &str;
}

/// Moves an existing results file aside so a fresh run starts empty.
pub(crate) fn set_aside(path: &Path) -> Result<(), Error> {
    if !path.exists() {
        return Ok(());
    }
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut aside = path.with_extension(format!("jsonl.{stamp}.bak"));
    let mut n = 1;
    while aside.exists() {
        aside = path.with_extension(format!("jsonl.{stamp}-{n}.bak"));
        n += 1;
    }
    tracing::info!(from = %path.display(), to = %aside.display(), "starting fresh; previous results moved aside");
    std::fs::rename(path, &aside).map_err(|source| Error::Io {
        what: "moving the previous results aside",
        path: path.to_path_buf(),
        source,
    })
}

/// The latest record of each task, in first-seen order (a task run again
/// replaces its earlier record).
pub fn latest_per_task<R: ResultRecord>(records: &[R]) -> Vec<R> {
    let mut order: Vec<&str> = Vec::new();
    let mut latest: std::collections::HashMap<&str, &R> = Default::default();
    for record in records {
        if latest.insert(record.task_id(), record).is_none() {
            order.push(record.task_id());
        }
    }
    order
        .into_iter()
        .filter_map(|id| latest.get(id).map(|r| (*r).clone()))
        .collect()
}

/// A JSONL file of records (GitTaskBench's [`crate::TaskRecord`]s or RepoGenesis's). Every append rewrites the file through a
/// temporary file that is synced and renamed over it, so the file on disk
/// is always a complete set of whole lines: an interrupted run loses at most
/// the task in flight.
///
/// ```
/// use bench_harness::{Domain, ResultsFile, RunStatus, TaskRecord};
///
/// let dir = tempfile::tempdir()?;
/// let file = ResultsFile::new(dir.path().join("results.jsonl"));
/// file.append(&TaskRecord::empty("A_01", "A", Domain::Other, RunStatus::Graded))?;
/// file.append(&TaskRecord::empty("B_01", "B", Domain::Other, RunStatus::Graded))?;
/// let ids: Vec<String> = file.load()?.into_iter().map(|r| r.task).collect();
/// assert_eq!(ids, ["A_01", "B_01"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ResultsFile<R> {
    path: PathBuf,
    lock: Mutex<()>,
    records: std::marker::PhantomData<fn() -> R>,
}

impl<R: ResultRecord> ResultsFile<R> {
    /// The results file at `path` (created on the first append).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        ResultsFile {
            path: path.into(),
            lock: Mutex::new(()),
            records: std::marker::PhantomData,
        }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every record in the file, in order. Lines that are not records
    /// (hand edits) are skipped with a warning; a missing file is empty.
    pub fn load(&self) -> Result<Vec<R>, Error> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(Error::Io {
                    what: "reading the results",
                    path: self.path.clone(),
                    source,
                });
            }
        };
        let mut records = Vec::new();
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<R>(line) {
                Ok(record) => records.push(record),
                Err(e) => tracing::warn!(
                    file = %self.path.display(),
                    line = index + 1,
                    error = %e,
                    "skipping a line that is not a task record"
                ),
            }
        }
        Ok(records)
    }

    /// Appends `record` atomically (write a copy, fsync, rename, fsync the
    /// directory).
    pub fn append(&self, record: &R) -> Result<(), Error> {
        let _guard = self
            .lock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let io = |what: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| Error::Io { what, path, source }
        };
        let mut content = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => {
                return Err(Error::Io {
                    what: "reading the results",
                    path: self.path.clone(),
                    source,
                });
            }
        };
        if !content.is_empty() && !content.ends_with(b"\n") {
            content.push(b'\n');
        }
        serde_json::to_writer(&mut content, record).map_err(|e| Error::Invalid {
            path: self.path.clone(),
            message: format!("cannot serialise the record of {}: {e}", record.task_id()),
        })?;
        content.push(b'\n');
        let dir = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io("creating the results directory", dir))?;
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "results.jsonl".into());
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        {
            let mut file = std::fs::File::create(&tmp).map_err(io("writing the results", &tmp))?;
            file.write_all(&content)
                .and_then(|()| file.sync_all())
                .map_err(io("writing the results", &tmp))?;
        }
        std::fs::rename(&tmp, &self.path).map_err(io("replacing the results", &self.path))?;
        // The rename is durable once the directory is synced; not every
        // file system allows opening a directory for that, so failure is
        // only logged.
        if let Err(e) = std::fs::File::open(dir).and_then(|d| d.sync_all()) {
            tracing::debug!(dir = %dir.display(), error = %e, "cannot sync the results directory");
        }
        Ok(())
    }
}
