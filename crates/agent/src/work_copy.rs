//! A private working copy of a repository, so that code the model writes
//! and runs does not change the user's repository.
//!
//! `repo-agent run` without `--work-dir` works in a copy of the primary
//! repository made here ([`make_work_copy`]), next to the output
//! directory ([`work_copy_dir`]): `<output-dir>.work/`. Next to the output
//! directory rather than under repo-agent's home because the code must be
//! able to reach it: in process isolation as root the code runs as
//! `nobody`, which can reach the output directory (the task requires it)
//! but not a home under `/root`.
//!
//! The repository is someone else's content, so the copy is careful:
//! symbolic links are recreated only when they point inside the
//! repository (never followed, never recreated pointing out), `.git` and
//! `__pycache__` are skipped, files are opened as the analysis opens them
//! ([`repo_files::open_in_tree`]: regular files inside the root only,
//! non-blocking, so a FIFO cannot hang the copy), other special files are
//! skipped, set-user-ID bits are dropped, a file over
//! [`CopyLimits::max_file_bytes`] is left out (a sparse terabyte file
//! would otherwise be written out in full), and a repository over the
//! other [`CopyLimits`] is refused with an error that says what to do
//! instead. The file tools read an entry left out from the repository
//! itself (see [`crate::run::tools::policy::PathPolicy::work_copy_of`]), so the
//! model is told why it is not there.

use std::io::Read as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Component, Path, PathBuf};

/// The file that marks a directory as a working copy this module made, so
/// that a later run may replace it (and nothing else).
pub const MARKER: &str = ".repo-agent-work-copy";

/// Limits of a working copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyLimits {
    /// Most entries (files, directories, links) copied (default 100,000).
    pub max_entries: u64,
    /// Most bytes of file content copied (default 2 GiB).
    pub max_bytes: u64,
    /// Files larger than this are left out rather than copied (default
    /// 1 GiB).
    pub max_file_bytes: u64,
}

impl Default for CopyLimits {
    fn default() -> Self {
        CopyLimits {
            max_entries: 100_000,
            max_bytes: 2 << 30,
            max_file_bytes: 1 << 30,
        }
    }
}

/// Why a working copy could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// The repository is over a [`CopyLimits`] limit.
    #[error(
        "the repository {repo} is too large to copy as the working directory ({what}); pass --work-dir DIR to run code in a directory of your choice (the repository stays read-only), or --in-place to run it in the repository itself (code may then modify it)"
    )]
    TooLarge {
        /// The repository.
        repo: PathBuf,
        /// Which limit, and by how much.
        what: String,
    },
    /// The copy's place is taken by something this module did not make.
    #[error(
        "{path} already exists and is not a working copy made by repo-agent (it has no {MARKER}); move it away, or pass --work-dir DIR"
    )]
    NotOurs {
        /// The directory.
        path: PathBuf,
    },
    /// A file of the repository could not be opened as a regular file
    /// inside it.
    #[error("cannot copy a file of the repository: {0}")]
    File(#[source] repo_files::TreeFileError),
    /// A file or directory could not be read or written.
    #[error("cannot {what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path involved.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
}

/// What [`make_work_copy`] copied and left out.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CopyStats {
    /// Regular files copied.
    pub files: u64,
    /// Directories created.
    pub dirs: u64,
    /// Symbolic links recreated (they point inside the copy).
    pub links: u64,
    /// Bytes of file content copied.
    pub bytes: u64,
    /// Symbolic links left out: absolute, or climbing out of the repository.
    pub links_out: u64,
    /// FIFOs, sockets and devices left out.
    pub special: u64,
    /// Files over [`CopyLimits::max_file_bytes`] left out.
    pub large: u64,
}

/// Where the working copy for the output directory `output_dir` goes:
/// its sibling `<name>.work`. `None` for a directory without a name (`/`).
///
/// ```
/// use std::path::Path;
/// assert_eq!(
///     agent::work_copy_dir(Path::new("/tmp/task/out")),
///     Some("/tmp/task/out.work".into())
/// );
/// ```
pub fn work_copy_dir(output_dir: &Path) -> Option<PathBuf> {
    let name = output_dir.file_name()?;
    let mut copy = name.to_os_string();
    copy.push(".work");
    Some(output_dir.with_file_name(copy))
}

fn io_error<'a>(
    what: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> CopyError + 'a {
    move |source| CopyError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// Copies the repository at `repo` into `dest` (see the module
/// documentation). A `dest` left by an earlier run (it holds [`MARKER`]) is
/// replaced; anything else there is [`CopyError::NotOurs`].
///
/// ```
/// let repo = tempfile::tempdir()?;
/// std::fs::write(repo.path().join("a.py"), "x = 1\n")?;
/// std::os::unix::fs::symlink("/etc/passwd", repo.path().join("out"))?;
/// let work = tempfile::tempdir()?;
/// let dest = work.path().join("copy");
/// let stats = agent::make_work_copy(repo.path(), &dest, &Default::default())?;
/// assert_eq!((stats.files, stats.links_out), (1, 1));
/// assert!(dest.join("a.py").is_file() && !dest.join("out").exists());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn make_work_copy(
    repo: &Path,
    dest: &Path,
    limits: &CopyLimits,
) -> Result<CopyStats, CopyError> {
    clear_old_copy(dest)?;
    std::fs::create_dir_all(dest).map_err(io_error("create", dest))?;
    let made = std::fs::symlink_metadata(dest).map_err(io_error("read", dest))?;
    let result = copy_into(
        repo,
        dest,
        (made.dev(), made.ino()),
        limits,
        &[".git", "__pycache__"],
    );
    // Marked even when the copy failed half-way, so that the next run may
    // clear what was left.
    std::fs::write(dest.join(MARKER), b"").map_err(io_error("write", &dest.join(MARKER)))?;
    result
}

/// Removes a working copy an earlier run left at `dest`.
fn clear_old_copy(dest: &Path) -> Result<(), CopyError> {
    let meta = match std::fs::symlink_metadata(dest) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_error("read", dest)(e)),
    };
    let ours = meta.is_dir()
        && std::fs::symlink_metadata(dest.join(MARKER)).is_ok_and(|m| m.file_type().is_file());
    if !ours {
        return Err(CopyError::NotOurs {
            path: dest.to_path_buf(),
        });
    }
    // `remove_dir_all` does not follow symbolic links inside the tree.
    std::fs::remove_dir_all(dest).map_err(io_error("remove the old working copy", dest))
}

/// Whether a link at `rel_dir` (relative to the root) with this target
/// stays inside the root.
fn link_stays_inside(rel_dir: &Path, target: &Path) -> bool {
    let mut depth: usize = rel_dir.components().count();
    for component in target.components() {
        match component {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

/// Copies the tree at `from` into `to` (created if missing) as a working
/// copy is made (links out of the tree left out, regular files only,
/// opened inside the tree, no setuid bits, within `limits`), leaving out
/// entries named in `skip` wherever they are. For callers that copy
/// someone else's tree to a place of their own (a benchmark's workspace).
///
/// ```
/// let from = tempfile::tempdir()?;
/// std::fs::create_dir_all(from.path().join("pkg/.repo-agent"))?;
/// std::fs::write(from.path().join("pkg/a.py"), "x = 1\n")?;
/// std::os::unix::fs::symlink("a.py", from.path().join("pkg/alias.py"))?;
/// let to = tempfile::tempdir()?;
/// let stats = agent::copy_tree(
///     from.path(),
///     &to.path().join("copy"),
///     &Default::default(),
///     &[".repo-agent"],
/// )?;
/// assert_eq!((stats.files, stats.links), (1, 1));
/// assert!(!to.path().join("copy/pkg/.repo-agent").exists());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`CopyError::TooLarge`] past `limits`, [`CopyError::File`] for a file
/// that cannot be opened inside the tree, [`CopyError::Io`] otherwise.
pub fn copy_tree(
    from: &Path,
    to: &Path,
    limits: &CopyLimits,
    skip: &[&str],
) -> Result<CopyStats, CopyError> {
    std::fs::create_dir_all(to).map_err(io_error("create", to))?;
    let made = std::fs::symlink_metadata(to).map_err(io_error("read", to))?;
    copy_into(from, to, (made.dev(), made.ino()), limits, skip)
}

fn copy_into(
    repo: &Path,
    dest: &Path,
    dest_id: (u64, u64),
    limits: &CopyLimits,
    skip: &[&str],
) -> Result<CopyStats, CopyError> {
    let mut stats = CopyStats::default();
    let too_large = |what: String| CopyError::TooLarge {
        repo: repo.to_path_buf(),
        what,
    };
    let mut entries: u64 = 0;
    // Relative directories still to copy; no recursion, so depth costs
    // only this stack.
    let mut stack = vec![PathBuf::new()];
    while let Some(rel_dir) = stack.pop() {
        let source_dir = repo.join(&rel_dir);
        let listing = std::fs::read_dir(&source_dir).map_err(io_error("list", &source_dir))?;
        for entry in listing {
            let entry = entry.map_err(io_error("list", &source_dir))?;
            let name = entry.file_name();
            if skip.iter().any(|s| name == *s) {
                continue;
            }
            entries += 1;
            if entries > limits.max_entries {
                return Err(too_large(format!(
                    "more than {} files and directories",
                    limits.max_entries
                )));
            }
            let rel = rel_dir.join(&name);
            let source = repo.join(&rel);
            let target = dest.join(&rel);
            // `DirEntry::metadata` does not follow a symbolic link.
            let meta = entry.metadata().map_err(io_error("read", &source))?;
            let kind = meta.file_type();
            if kind.is_dir() {
                if (meta.dev(), meta.ino()) == dest_id {
                    // The copy itself, when it lies inside the repository.
                    continue;
                }
                std::fs::create_dir(&target).map_err(io_error("create", &target))?;
                let mode = (meta.mode() & 0o777) | 0o700;
                std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode))
                    .map_err(io_error("set the mode of", &target))?;
                stats.dirs += 1;
                stack.push(rel);
            } else if kind.is_symlink() {
                let link = std::fs::read_link(&source).map_err(io_error("read", &source))?;
                if link_stays_inside(&rel_dir, &link) {
                    std::os::unix::fs::symlink(&link, &target)
                        .map_err(io_error("create", &target))?;
                    stats.links += 1;
                } else {
                    tracing::debug!(link = %source.display(), target = %link.display(), "left out of the working copy: it points outside the repository");
                    stats.links_out += 1;
                }
            } else if kind.is_file() {
                if meta.len() > limits.max_file_bytes {
                    tracing::debug!(file = %source.display(), bytes = meta.len(), "left out of the working copy: too large");
                    stats.large += 1;
                    continue;
                }
                let remaining = limits.max_bytes.saturating_sub(stats.bytes);
                let budget = remaining.min(limits.max_file_bytes);
                match copy_file(repo, &source, &target, budget) {
                    Ok(bytes) => {
                        stats.bytes += bytes;
                        stats.files += 1;
                    }
                    Err(FileCopy::Io(error)) => return Err(error),
                    Err(FileCopy::OverBudget) if remaining <= limits.max_file_bytes => {
                        return Err(too_large(format!(
                            "more than {} MiB of files",
                            limits.max_bytes >> 20
                        )));
                    }
                    Err(FileCopy::OverBudget) => {
                        // It grew past the per-file limit while being
                        // copied: its partial copy goes too.
                        std::fs::remove_file(&target).map_err(io_error("remove", &target))?;
                        stats.large += 1;
                    }
                }
            } else {
                stats.special += 1;
            }
        }
    }
    Ok(stats)
}

enum FileCopy {
    Io(CopyError),
    OverBudget,
}

/// Copies one regular file, at most `budget` bytes of it; returns its size.
fn copy_file(repo: &Path, source: &Path, target: &Path, budget: u64) -> Result<u64, FileCopy> {
    let opened =
        repo_files::open_in_tree(repo, source).map_err(|e| FileCopy::Io(CopyError::File(e)))?;
    if opened.len > budget {
        return Err(FileCopy::OverBudget);
    }
    let mode = opened
        .file
        .metadata()
        .map(|m| m.mode())
        .map_err(|e| FileCopy::Io(io_error("read", source)(e)))?;
    // No set-user-ID or set-group-ID bit survives: a copy made by root of
    // an attacker's file must not become a privileged program. `create_new`
    // (O_EXCL) never follows a link at the target.
    let mut out = std::fs::File::options()
        .write(true)
        .create_new(true)
        .mode((mode & 0o777) | 0o600)
        .open(target)
        .map_err(|e| FileCopy::Io(io_error("create", target)(e)))?;
    // One byte over the budget is enough to tell a file that grew.
    let copied = std::io::copy(&mut opened.file.take(budget.saturating_add(1)), &mut out)
        .map_err(|e| FileCopy::Io(io_error("copy", source)(e)))?;
    if copied > budget {
        return Err(FileCopy::OverBudget);
    }
    Ok(copied)
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn links_inside_stay_and_links_out_go() {
        let at = |dir: &str, target: &str| link_stays_inside(Path::new(dir), Path::new(target));
        assert!(at("", "a.py"));
        assert!(at("pkg", "../a.py"));
        assert!(at("pkg/sub", "../../a.py"));
        assert!(at("pkg", "./x/../y"));
        assert!(!at("", "../a.py"));
        assert!(!at("pkg", "../../etc/passwd"));
        assert!(!at("pkg", "/etc/passwd"));
        assert!(!at("", "x/../../y"));
    }

    #[test]
    fn only_a_marked_directory_is_replaced() -> TestResult {
        let dir = tempfile::tempdir()?;
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo)?;
        std::fs::write(repo.join("a.py"), "x = 1\n")?;
        let dest = dir.path().join("out.work");
        std::fs::create_dir(&dest)?;
        std::fs::write(dest.join("precious.txt"), "mine")?;
        let error = make_work_copy(&repo, &dest, &CopyLimits::default())
            .err()
            .ok_or("a directory not ours was replaced")?;
        assert!(matches!(error, CopyError::NotOurs { .. }), "{error}");
        assert!(dest.join("precious.txt").is_file());

        std::fs::remove_dir_all(&dest)?;
        make_work_copy(&repo, &dest, &CopyLimits::default())?;
        std::fs::write(dest.join("scratch.py"), "left by the last run")?;
        make_work_copy(&repo, &dest, &CopyLimits::default())?;
        assert!(!dest.join("scratch.py").exists(), "a fresh copy each run");
        assert!(dest.join("a.py").is_file() && dest.join(MARKER).is_file());
        Ok(())
    }

    #[test]
    fn a_copy_inside_the_repository_does_not_copy_itself() -> TestResult {
        let dir = tempfile::tempdir()?;
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join("pkg"))?;
        std::fs::write(repo.join("pkg/m.py"), "x = 1\n")?;
        let dest = repo.join("out.work");
        let stats = make_work_copy(&repo, &dest, &CopyLimits::default())?;
        assert_eq!((stats.files, stats.dirs), (1, 1));
        assert!(!dest.join("out.work").exists());
        Ok(())
    }
}
