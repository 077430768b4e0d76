//! Reading the files of a repository someone else wrote, without being
//! led out of it, blocked by it or flooded by it.
//!
//! Every crate of the workspace that reads a repository's file (the
//! analysis, the agent's tools, the generator's verifier) goes through
//! [`read_in_tree`] or [`open_in_tree`] (or, for many files of one root,
//! a [`TreeRoot`] opened once): only a regular file inside the
//! root, symbolic links followed only while they stay inside, never more
//! than the caller's limit. [`is_tool_directory`] names the directories a
//! walk of a repository skips (caches, virtualenvs, build output), so that
//! every view of a tree hides the same things; [`read_small_text`] reads a
//! file a user names (a task, a weights file) with a size cap.
//!
//! ```
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("a.py"), "print(1)\n")?;
//! let bytes = repo_files::read_in_tree(dir.path(), "a.py".as_ref(), 1024)?;
//! assert_eq!(bytes, b"print(1)\n");
//! // A path that climbs out of the root is refused, whatever is there.
//! let outside = repo_files::read_in_tree(dir.path(), "../etc/passwd".as_ref(), 1024);
//! assert!(matches!(outside, Err(repo_files::TreeFileError::Outside { .. })));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

use std::path::Path;

mod tree_file;

pub use tree_file::{FileKind, TreeFile, TreeFileError, TreeRoot, open_in_tree, read_in_tree};

/// Directory names that never hold the repository's own source.
const TOOL_DIRS: &[&str] = &[
    "__pycache__",
    "node_modules",
    "site-packages",
    "venv",
    ".venv",
    ".tox",
    ".nox",
    ".eggs",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".git",
    ".hg",
    ".svn",
    ".repo-agent",
];

/// Reads a small UTF-8 text file a user names (a weights file, a task
/// file). At most `max_bytes` are read, so `/dev/zero` or a huge file is an
/// error saying how large a file may be, not an unbounded read. It opens
/// what it is given, named pipes included (a user's `<(...)`), so a
/// repository's file is read with [`read_in_tree`] instead.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("w.toml");
/// std::fs::write(&path, "git = 0.0\n")?;
/// assert_eq!(repo_files::read_small_text(&path, 1024)?, "git = 0.0\n");
/// let error = repo_files::read_small_text(&path, 4).unwrap_err();
/// assert_eq!(error.to_string(), "larger than 4 bytes");
/// std::fs::write(&path, b"\xff\xfe")?;
/// assert_eq!(repo_files::read_small_text(&path, 1024).unwrap_err().to_string(), "not UTF-8 text");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn read_small_text(path: &Path, max_bytes: u64) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        let limit = match max_bytes {
            n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
            n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
            n => format!("{n} bytes"),
        };
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {limit}"),
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// True for a directory the walk never enters because tools and
/// environments own it: caches and virtualenvs (`__pycache__`, `.venv`,
/// any directory holding a `pyvenv.cfg`), version-control metadata,
/// `*.egg-info`, and Maven's `target/` or Gradle's `build/` next to their
/// build file. `parent` is the directory that contains `name`.
///
/// Other programs that show a repository (the agent's `list_directory`)
/// use this so that they hide exactly what the analysis skips.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// assert!(repo_files::is_tool_directory(dir.path(), "__pycache__"));
/// assert!(!repo_files::is_tool_directory(dir.path(), "src"));
/// // `target/` is build output only next to a `pom.xml`.
/// assert!(!repo_files::is_tool_directory(dir.path(), "target"));
/// std::fs::write(dir.path().join("pom.xml"), "<project/>").unwrap();
/// assert!(repo_files::is_tool_directory(dir.path(), "target"));
/// ```
pub fn is_tool_directory(parent: &Path, name: &str) -> bool {
    is_tool_directory_by_name(parent, name) || parent.join(name).join(VIRTUALENV_MARKER).is_file()
}

/// The file that makes a directory a virtualenv, and so a tool directory.
pub const VIRTUALENV_MARKER: &str = "pyvenv.cfg";

/// [`is_tool_directory`] without looking inside `name`: a walk that lists
/// every directory it enters checks that listing for
/// [`VIRTUALENV_MARKER`] instead, which saves a `stat` per directory.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir(dir.path().join("env")).unwrap();
/// std::fs::write(dir.path().join("env/pyvenv.cfg"), "home = /usr\n").unwrap();
/// assert!(repo_files::is_tool_directory(dir.path(), "env"));
/// assert!(!repo_files::is_tool_directory_by_name(dir.path(), "env"));
/// assert!(repo_files::is_tool_directory_by_name(dir.path(), "x.egg-info"));
/// ```
pub fn is_tool_directory_by_name(parent: &Path, name: &str) -> bool {
    TOOL_DIRS.contains(&name) || name.ends_with(".egg-info") || is_build_output(parent, name)
}

/// Maven's `target/` and Gradle's `build/` beside their build files hold
/// compiled and generated output, not the project's sources.
fn is_build_output(parent: &Path, name: &str) -> bool {
    match name {
        "target" => parent.join("pom.xml").is_file(),
        "build" => {
            parent.join("build.gradle").is_file() || parent.join("build.gradle.kts").is_file()
        }
        _ => false,
    }
}
