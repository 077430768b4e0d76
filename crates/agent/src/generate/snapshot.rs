//! The generated repository's files at one point of a run, so a repair
//! round that made things worse can be undone.
//!
//! Measured (RepoGenesis Chatroom, embedded Qwen 1.5B, tuning half, run 2):
//! a 136-line app that started and answered 3 of 7 probes was overwritten
//! by its first repair round with six bytes (`write_file` with the file's
//! name as its content); the second round could not bring it back, and the
//! run ended with the wreck. The run now ends with the version that passed
//! the most checks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Most files a snapshot holds: a generated service has a handful.
const MAX_FILES: usize = 500;

/// Most bytes a snapshot holds.
const MAX_BYTES: u64 = 16 << 20;

/// Directories never captured nor touched: the agent's own (blueprint,
/// report, virtualenv) and caches.
const SKIPPED_DIRS: &[&str] = &[super::AGENT_DIR, "__pycache__", ".git", ".pytest_cache"];

/// The verified version of the repository that passed the most checks.
pub(crate) struct Best {
    /// The verification round it passed in.
    pub(crate) round: u32,
    /// Checks it passed.
    pub(crate) passed: usize,
    /// Its files.
    pub(crate) files: Snapshot,
    /// Its checks, restored with it.
    pub(crate) checks: Vec<super::Check>,
}

/// Every regular file of the repository, by path relative to its root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snapshot {
    files: BTreeMap<PathBuf, Vec<u8>>,
}

/// Why no snapshot was taken or restored.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SnapshotError {
    /// Past [`MAX_FILES`] or [`MAX_BYTES`].
    #[error("the repository is too large to keep a copy of ({0})")]
    TooLarge(String),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SnapshotError + '_ {
    move |source| SnapshotError::Io {
        path: path.to_owned(),
        source,
    }
}

impl Snapshot {
    /// The regular files under `root` (links are neither followed nor
    /// kept: generated code may have made them).
    pub(crate) fn take(root: &Path) -> Result<Snapshot, SnapshotError> {
        let mut files = BTreeMap::new();
        let mut bytes = 0u64;
        for relative in regular_files(root)? {
            let path = root.join(&relative);
            let too_large = || {
                SnapshotError::TooLarge(format!(
                    "more than {MAX_FILES} files or {} MiB",
                    MAX_BYTES >> 20
                ))
            };
            if files.len() >= MAX_FILES {
                return Err(too_large());
            }
            // Never more than what is left of the budget is read: a file
            // the generated code wrote can be of any size (or turn into a
            // FIFO or a link between the listing and the read).
            let content = match repo_files::read_in_tree(root, &path, MAX_BYTES - bytes) {
                Ok(content) => content,
                Err(repo_files::TreeFileError::TooLarge { .. }) => return Err(too_large()),
                Err(error) => {
                    return Err(SnapshotError::Io {
                        path,
                        source: std::io::Error::other(error),
                    });
                }
            };
            bytes += content.len() as u64;
            files.insert(relative, content);
        }
        Ok(Snapshot { files })
    }

    /// Puts the repository back as it was: files changed since are
    /// rewritten, files made since are removed. Returns the paths it
    /// changed.
    pub(crate) fn restore(&self, root: &Path) -> Result<Vec<PathBuf>, SnapshotError> {
        let mut changed = Vec::new();
        for relative in regular_files(root)? {
            if !self.files.contains_key(&relative) {
                let path = root.join(&relative);
                std::fs::remove_file(&path).map_err(io(&path))?;
                changed.push(relative);
            }
        }
        for (relative, content) in &self.files {
            let path = root.join(relative);
            // The directories first: a link on the way would make the
            // file's own metadata (and a write) reach outside the tree.
            if let Some(parent) = path.parent() {
                ensure_real_dirs(root, parent)?;
            }
            match std::fs::symlink_metadata(&path) {
                Ok(meta) if meta.is_file() => {
                    // Only a file of the kept size can be unchanged, and
                    // only that much of it is read.
                    if meta.len() == content.len() as u64
                        && repo_files::read_in_tree(root, &path, meta.len())
                            .is_ok_and(|now| now == *content)
                    {
                        continue;
                    }
                }
                // A link or a directory where the file was: removed, never
                // written through.
                Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&path).map_err(io(&path))?,
                Ok(_) => std::fs::remove_file(&path).map_err(io(&path))?,
                Err(_) => {}
            }
            std::fs::write(&path, content).map_err(io(&path))?;
            changed.push(relative.clone());
        }
        Ok(changed)
    }
}

/// Creates `dir` below `root`, replacing any link on the way by a real
/// directory, so a restored file cannot land outside the tree.
fn ensure_real_dirs(root: &Path, dir: &Path) -> Result<(), SnapshotError> {
    let Ok(relative) = dir.strip_prefix(root) else {
        return Ok(());
    };
    let mut at = root.to_path_buf();
    for part in relative.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                std::fs::remove_file(&at).map_err(io(&at))?;
                std::fs::create_dir(&at).map_err(io(&at))?;
            }
            Err(_) => std::fs::create_dir(&at).map_err(io(&at))?,
        }
    }
    Ok(())
}

/// The regular files below `root`, relative, outside [`SKIPPED_DIRS`];
/// links are not followed.
fn regular_files(root: &Path) -> Result<Vec<PathBuf>, SnapshotError> {
    let mut found = Vec::new();
    let mut pending = vec![PathBuf::new()];
    let mut seen = 0usize;
    while let Some(dir) = pending.pop() {
        let path = root.join(&dir);
        for entry in std::fs::read_dir(&path).map_err(io(&path))? {
            let entry = entry.map_err(io(&path))?;
            seen += 1;
            if seen > MAX_FILES * 20 {
                return Err(SnapshotError::TooLarge(format!(
                    "more than {} entries",
                    MAX_FILES * 20
                )));
            }
            let name = entry.file_name();
            let relative = dir.join(&name);
            let kind = entry.file_type().map_err(io(&entry.path()))?;
            if kind.is_dir() {
                if !SKIPPED_DIRS.iter().any(|s| name == *s) {
                    pending.push(relative);
                }
            } else if kind.is_file() {
                found.push(relative);
            }
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sparse file far past the budget: refused without being read
    /// (reading it whole would hold 4 GiB in memory).
    #[test]
    fn a_file_past_the_budget_is_refused_not_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("small.py"), "x = 1\n").unwrap();
        let huge = std::fs::File::create(dir.path().join("huge.bin")).unwrap();
        huge.set_len(4 << 30).unwrap();
        assert!(matches!(
            Snapshot::take(dir.path()),
            Err(SnapshotError::TooLarge(_))
        ));
    }

    #[test]
    fn a_wrecked_repository_is_put_back_without_following_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("models.py"), "X = 1\n").unwrap();
        std::fs::create_dir_all(root.join("pkg")).unwrap();
        std::fs::create_dir_all(root.join(super::super::AGENT_DIR)).unwrap();
        std::fs::write(root.join("app.py"), "print('the app')\n").unwrap();
        std::fs::write(root.join("pkg/models.py"), "X = 1\n").unwrap();
        std::fs::write(root.join(".repo-agent/report.md"), "kept\n").unwrap();
        let before = Snapshot::take(root).unwrap();
        assert_eq!(before.files.len(), 2);

        // The repair: app.py overwritten, a new file, pkg/ replaced by a
        // link out of the tree, the agent's own files changed.
        std::fs::write(root.join("app.py"), "app.py").unwrap();
        std::fs::write(root.join("extra.py"), "").unwrap();
        std::fs::remove_dir_all(root.join("pkg")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("pkg")).unwrap();
        std::fs::write(root.join(".repo-agent/report.md"), "new\n").unwrap();

        let changed = before.restore(root).unwrap();
        assert_eq!(
            changed,
            [
                PathBuf::from("extra.py"),
                PathBuf::from("app.py"),
                PathBuf::from("pkg/models.py")
            ]
        );
        assert_eq!(Snapshot::take(root).unwrap(), before);
        assert!(root.join("pkg").symlink_metadata().unwrap().is_dir());
        // The file outside, with the same content, was neither taken for
        // the restored one nor touched.
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
        assert_eq!(
            std::fs::read_to_string(outside.path().join("models.py")).unwrap(),
            "X = 1\n"
        );
        // The agent's directory is neither captured nor put back.
        assert_eq!(
            std::fs::read_to_string(root.join(".repo-agent/report.md")).unwrap(),
            "new\n"
        );
        // Nothing changed: nothing rewritten.
        assert!(before.restore(root).unwrap().is_empty());
    }
}
