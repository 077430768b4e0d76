//! Commit volume and recency per file, from one walk of the git history.

use std::collections::HashMap;
use std::path::Path;

/// What the history says about one file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FileHistory {
    pub commits: u32,
    /// Commit time (seconds since the epoch) of the newest commit touching it.
    pub last_commit: i64,
}

/// Per-file history for the files under `root`, keyed by their path
/// relative to `root` (with `/`). `None` when `root` is not inside a git
/// repository or the history cannot be read.
pub(crate) struct History {
    pub files: HashMap<String, FileHistory>,
    pub newest: i64,
    pub oldest: i64,
    pub commits_walked: usize,
}

pub(crate) fn history(root: &Path, max_commits: usize) -> Option<History> {
    let repo = git2::Repository::discover(root).ok()?;
    let workdir = repo.workdir()?.canonicalize().ok()?;
    let root = root.canonicalize().ok()?;
    let relative = root.strip_prefix(&workdir).ok()?;
    // A directory the enclosing repository ignores (say, a download under
    // `target/`) has no history of its own.
    if !relative.as_os_str().is_empty() && repo.is_path_ignored(relative).unwrap_or(false) {
        return None;
    }
    let prefix = relative.to_string_lossy().replace('\\', "/");
    let prefix = if prefix.is_empty() {
        String::new()
    } else {
        format!("{prefix}/")
    };
    let mut walk = repo.revwalk().ok()?;
    walk.push_head().ok()?;
    walk.set_sorting(git2::Sort::TIME).ok()?;
    let mut files: HashMap<String, FileHistory> = HashMap::new();
    let (mut newest, mut oldest) = (i64::MIN, i64::MAX);
    let mut commits_walked = 0;
    let mut options = git2::DiffOptions::new();
    options.skip_binary_check(true);
    for oid in walk.take(max_commits) {
        let Ok(commit) = oid.and_then(|oid| repo.find_commit(oid)) else {
            continue;
        };
        commits_walked += 1;
        let time = commit.time().seconds();
        newest = newest.max(time);
        oldest = oldest.min(time);
        let Ok(tree) = commit.tree() else { continue };
        let parent_tree = commit.parent(0).ok().and_then(|p| p.tree().ok());
        let Ok(diff) =
            repo.diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), Some(&mut options))
        else {
            continue;
        };
        for delta in diff.deltas() {
            let Some(path) = delta.new_file().path().or_else(|| delta.old_file().path()) else {
                continue;
            };
            let path = path.to_string_lossy();
            let Some(relative) = path.strip_prefix(prefix.as_str()) else {
                continue;
            };
            let entry = files.entry(relative.to_string()).or_insert(FileHistory {
                commits: 0,
                last_commit: time,
            });
            entry.commits += 1;
            entry.last_commit = entry.last_commit.max(time);
        }
    }
    (commits_walked > 0).then_some(History {
        files,
        newest,
        oldest,
        commits_walked,
    })
}
