//! Which paths the file tools may touch: one policy, enforced here for
//! every tool that takes a path (`list_directory`, `view_file`,
//! `read_document`, `write_file`, `edit_file`).
//!
//! A path is resolved against the task's roots: the repositories and the
//! declared input files may be read, the working directory and the output
//! directory may be read and written. Resolution is lexical first (`..`
//! cannot climb out of the working directory's parent chain unnoticed) and
//! then through symlinks (the existing part of the path is canonicalized),
//! so a symlink inside a root that points out of it is refused like the
//! path it points to. Only regular files and directories are ever opened:
//! `/dev/zero`, FIFOs and sockets are refused even inside a root.
//!
//! What this cannot stop is a race: a process that swaps a checked
//! directory for a symlink between the check and the open. Writes open the
//! final component with `O_NOFOLLOW`, and model-written code runs in the
//! sandbox, which sees the same roots with the same access, so the race
//! gains nothing the sandbox did not already allow.

use std::path::{Component, Path, PathBuf};

/// The longest path accepted (Linux's PATH_MAX).
const MAX_PATH_BYTES: usize = 4096;

/// What a root allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// Reading (viewing, listing).
    Read,
    /// Reading and writing.
    ReadWrite,
}

/// Why a root is there: named in refusals so the model knows where it may
/// work instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootKind {
    /// A repository of the task.
    Repository,
    /// The working directory, where code runs.
    WorkDir,
    /// Where the task's outputs go.
    OutputDir,
    /// One declared input file.
    Input,
}

impl RootKind {
    fn describe(self) -> &'static str {
        match self {
            RootKind::Repository => "repository (read-only)",
            RootKind::WorkDir => "working directory (read-write)",
            RootKind::OutputDir => "output directory (read-write)",
            RootKind::Input => "input file (read-only)",
        }
    }
}

#[derive(Debug, Clone)]
struct Root {
    /// Canonical path.
    path: PathBuf,
    kind: RootKind,
    access: Access,
}

/// Why a path was refused; the text is what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Empty, longer than 4096 bytes, or holding a NUL byte.
    #[error("`{0}` is not a usable path; give a path of the task's files")]
    Malformed(String),
    /// Outside every root (after following symlinks).
    #[error("{path} is outside the task's files; the tools may use only {roots}")]
    Outside {
        /// The path as resolved.
        path: String,
        /// The roots, described.
        roots: String,
    },
    /// Inside a root that may only be read.
    #[error("{path} is in a {kind}; write in the working directory or the output directory")]
    ReadOnly {
        /// The path as resolved.
        path: String,
        /// The root it is in.
        kind: &'static str,
    },
    /// Not a regular file or directory (a device, FIFO or socket).
    #[error("{0} is not a regular file or directory")]
    Special(String),
    /// Does not exist (for reads).
    #[error("{0} does not exist; list its directory to see what is there")]
    Missing(String),
}

/// The roots of one task and the rule that every tool path follows.
///
/// ```
/// use agent::run::tools::policy::{Access, PathPolicy, RootKind};
/// let repo = tempfile::tempdir()?;
/// let out = tempfile::tempdir()?;
/// std::fs::write(repo.path().join("m.py"), "x = 1\n")?;
/// let policy = PathPolicy::new(repo.path())
///     .root(repo.path(), RootKind::Repository, Access::Read)
///     .root(out.path(), RootKind::OutputDir, Access::ReadWrite);
/// assert!(policy.read("m.py").is_ok());
/// assert!(policy.read("/etc/passwd").is_err());
/// assert!(policy.write("m.py").is_err()); // the repository is read-only
/// assert!(policy.write(&out.path().join("r.csv").display().to_string()).is_ok());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct PathPolicy {
    /// Where relative paths start (the working directory).
    base: PathBuf,
    roots: Vec<Root>,
    /// A working directory that is a copy of a repository, and that
    /// repository (both canonical): reads of an entry the copy left out go
    /// to the repository's entry.
    copy_of: Option<(PathBuf, PathBuf)>,
}

impl PathPolicy {
    /// A policy with no roots yet; relative paths start at `base`.
    pub fn new(base: &Path) -> PathPolicy {
        PathPolicy {
            base: canonical_or_lexical(base),
            roots: Vec::new(),
            copy_of: None,
        }
    }

    /// Adds a root. A root that does not exist yet (an output directory
    /// created later) is kept by its lexical form.
    pub fn root(mut self, path: &Path, kind: RootKind, access: Access) -> PathPolicy {
        self.roots.push(Root {
            path: canonical_or_lexical(path),
            kind,
            access,
        });
        self
    }

    /// Declares `copy` a working copy of `repo` (made by
    /// [`crate::work_copy::make_work_copy`], which leaves out links out of
    /// the repository, special files and huge files): a read of something
    /// missing from the copy reads the repository's entry of that name
    /// instead, so the model learns why it is not there (outside the task,
    /// not a regular file, too large) rather than that it does not exist.
    /// The repository should be a root: its own rules apply to that read.
    ///
    /// ```
    /// use agent::run::tools::policy::{Access, PathPolicy, RootKind};
    /// let repo = tempfile::tempdir()?;
    /// let copy = tempfile::tempdir()?;
    /// std::os::unix::fs::symlink("/etc/passwd", repo.path().join("README.md"))?;
    /// let policy = PathPolicy::new(copy.path())
    ///     .root(copy.path(), RootKind::WorkDir, Access::ReadWrite)
    ///     .root(repo.path(), RootKind::Repository, Access::Read)
    ///     .work_copy_of(copy.path(), repo.path());
    /// let refused = policy.read("README.md").unwrap_err().to_string();
    /// assert!(refused.contains("outside the task"), "{refused}");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn work_copy_of(mut self, copy: &Path, repo: &Path) -> PathPolicy {
        self.copy_of = Some((canonical_or_lexical(copy), canonical_or_lexical(repo)));
        self
    }

    /// The existing file or directory `raw` names, if a root allows
    /// reading it.
    pub fn read(&self, raw: &str) -> Result<PathBuf, PathError> {
        let path = self.resolve(raw)?;
        if let Some(original) = self.left_out_of_copy(&path) {
            return self.read_resolved(original);
        }
        self.read_resolved(path)
    }

    /// The repository's entry for `path` when `path` is in the working
    /// copy, missing there, and present (as a name) in the repository.
    fn left_out_of_copy(&self, path: &Path) -> Option<PathBuf> {
        let (copy, repo) = self.copy_of.as_ref()?;
        let rel = path.strip_prefix(copy).ok()?;
        if path.symlink_metadata().is_ok() {
            return None;
        }
        let original = repo.join(rel);
        original.symlink_metadata().ok()?;
        // The repository's own links are followed as any read's are.
        self.resolve(&original.display().to_string()).ok()
    }

    fn read_resolved(&self, path: PathBuf) -> Result<PathBuf, PathError> {
        // Roots first: whether a file outside them exists is not the
        // model's business either.
        self.check(&path, Access::Read)?;
        if !path.exists() {
            return Err(PathError::Missing(path.display().to_string()));
        }
        let kind = std::fs::metadata(&path)
            .map_err(|_| PathError::Missing(path.display().to_string()))?
            .file_type();
        if !(kind.is_file() || kind.is_dir()) {
            return Err(PathError::Special(path.display().to_string()));
        }
        Ok(path)
    }

    /// The file `raw` names (existing or not), if a root allows writing
    /// it. Its parent directories may not exist yet.
    pub fn write(&self, raw: &str) -> Result<PathBuf, PathError> {
        let path = self.resolve(raw)?;
        self.check(&path, Access::ReadWrite)?;
        if let Ok(meta) = std::fs::metadata(&path)
            && !meta.file_type().is_file()
        {
            return Err(PathError::Special(path.display().to_string()));
        }
        Ok(path)
    }

    /// Where relative paths start: the working directory.
    pub(crate) fn base(&self) -> &Path {
        &self.base
    }

    /// The roots of one kind, in the order they were added.
    pub(crate) fn roots_of(&self, kind: RootKind) -> impl Iterator<Item = &Path> {
        self.roots
            .iter()
            .filter(move |r| r.kind == kind)
            .map(|r| r.path.as_path())
    }

    /// The directory tree a read of `path` (as [`PathPolicy::read`]
    /// returned it) must stay in: the root that holds it, or for an input
    /// file, its directory. The read itself goes through
    /// [`repo_files::open_in_tree`] below it, so a link swapped in after
    /// the check cannot lead out.
    pub(crate) fn tree_of(&self, path: &Path) -> Option<PathBuf> {
        self.roots.iter().find_map(|root| match root.kind {
            RootKind::Input if path == root.path => root.path.parent().map(Path::to_path_buf),
            RootKind::Input => None,
            _ => path.starts_with(&root.path).then(|| root.path.clone()),
        })
    }

    /// `raw` made absolute, `..` and `.` removed lexically, then the
    /// longest existing prefix canonicalized (following symlinks) and the
    /// rest appended. The rest has no symlinks (it does not exist) and no
    /// `..` (removed lexically), so the result names what an open would.
    fn resolve(&self, raw: &str) -> Result<PathBuf, PathError> {
        let trimmed = raw.trim();
        // PATH_MAX: nothing longer names a file, and resolving walks the
        // path component by component.
        if trimmed.is_empty() || trimmed.contains('\0') || trimmed.len() > MAX_PATH_BYTES {
            return Err(PathError::Malformed(raw.chars().take(200).collect()));
        }
        let joined = self.base.join(trimmed);
        let lexical = normalize(&joined);
        let mut existing = lexical.as_path();
        let mut rest = Vec::new();
        loop {
            // symlink_metadata: a dangling symlink exists as a name, and
            // canonicalizing it fails, which refuses it below.
            if existing.symlink_metadata().is_ok() {
                break;
            }
            match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_os_string());
                    existing = parent;
                }
                _ => break,
            }
        }
        let mut resolved = std::fs::canonicalize(existing).map_err(|_| PathError::Outside {
            path: lexical.display().to_string(),
            roots: self.describe_roots(),
        })?;
        for name in rest.iter().rev() {
            resolved.push(name);
        }
        Ok(resolved)
    }

    fn check(&self, path: &Path, need: Access) -> Result<(), PathError> {
        let mut readable = None;
        for root in &self.roots {
            let inside = match root.kind {
                RootKind::Input => path == root.path,
                _ => path.starts_with(&root.path),
            };
            if !inside {
                continue;
            }
            if root.access >= need {
                return Ok(());
            }
            readable = Some(root.kind);
        }
        match readable {
            Some(kind) => Err(PathError::ReadOnly {
                path: path.display().to_string(),
                kind: kind.describe(),
            }),
            None => Err(PathError::Outside {
                path: path.display().to_string(),
                roots: self.describe_roots(),
            }),
        }
    }

    fn describe_roots(&self) -> String {
        let listed: Vec<String> = self
            .roots
            .iter()
            .map(|r| format!("{} ({})", r.path.display(), r.kind.describe()))
            .collect();
        if listed.is_empty() {
            "nothing".into()
        } else {
            listed.join(", ")
        }
    }
}

/// Removes `.` and resolves `..` against the components before it, without
/// touching the file system; `..` at the root stays at the root.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `path` with symlinks resolved when it exists, else only normalized.
pub(crate) fn canonical_or_lexical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| normalize(path))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// `root/` (read-write) with `sub/`, `file`, a symlink to a directory
    /// outside, a symlink inside, and `outside/` next to it.
    fn tree() -> (tempfile::TempDir, PathPolicy) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        for d in [root.join("sub"), outside.clone()] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(root.join("file"), "x").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(outside.join("secret"), "s").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(&outside, root.join("out")).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(root.join("sub"), root.join("in"))
            .unwrap_or_else(|e| panic!("{e}"));
        let policy =
            PathPolicy::new(&root.join("sub")).root(&root, RootKind::WorkDir, Access::ReadWrite);
        (dir, policy)
    }

    fn segment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("..".to_string()),
            Just(".".to_string()),
            Just("sub".to_string()),
            Just("file".to_string()),
            Just("out".to_string()),
            Just("in".to_string()),
            Just("secret".to_string()),
            Just("new\u{e9}".to_string()),
            Just("".to_string()),
            Just("nul\0".to_string()),
            "[a-z]{1,3}",
        ]
    }

    proptest! {
        /// Whatever the model writes, an accepted path is inside the root
        /// once every symlink in it is followed.
        #[test]
        fn accepted_paths_stay_inside_the_root(
            absolute in any::<bool>(),
            segments in proptest::collection::vec(segment(), 0..10),
        ) {
            let (dir, policy) = tree();
            let root = std::fs::canonicalize(dir.path().join("root"))
                .unwrap_or_else(|e| panic!("{e}"));
            let joined = segments.join("/");
            let raw = if absolute {
                format!("{}/{joined}", dir.path().join("root").join("sub").display())
            } else {
                joined
            };
            for path in [policy.read(&raw), policy.write(&raw)].into_iter().flatten() {
                prop_assert!(path.starts_with(&root), "{raw} -> {}", path.display());
                // The existing part has no symlink left in it.
                let mut existing = path.as_path();
                while existing.symlink_metadata().is_err() {
                    existing = existing.parent().unwrap_or(Path::new("/"));
                }
                let canonical = std::fs::canonicalize(existing)
                    .unwrap_or_else(|e| panic!("{e}"));
                prop_assert_eq!(canonical.as_path(), existing);
            }
        }
    }

    #[test]
    fn overlong_paths_are_refused_before_any_lookup() {
        let (_dir, policy) = tree();
        let long = "a/".repeat(50_000);
        for result in [policy.read(&long), policy.write(&long)] {
            match result {
                Err(PathError::Malformed(shown)) => assert!(shown.len() <= 200),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn normalizing_never_climbs_above_the_root() {
        assert_eq!(
            normalize(Path::new("/a/b/../../../../etc")),
            Path::new("/etc")
        );
        assert_eq!(normalize(Path::new("/a/./b/../c")), Path::new("/a/c"));
    }
}
