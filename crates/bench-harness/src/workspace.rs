//! Copying and removing the trees a task works in, for both benchmarks:
//! each task gets a fresh, private copy, so tasks cannot contaminate each
//! other or the checkout.

use std::path::Path;

use crate::Error;

/// Makes a run's output directory (and its parents) and returns its
/// canonical path, which every later path of the run is built on.
pub(crate) fn output_dir(dir: &Path) -> Result<std::path::PathBuf, Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        what: "creating the output directory",
        path: dir.to_path_buf(),
        source,
    })?;
    std::fs::canonicalize(dir).map_err(|source| Error::Io {
        what: "opening the output directory",
        path: dir.to_path_buf(),
        source,
    })
}

/// Removes `dir` and everything in it; a missing directory is fine.
pub(crate) fn remove_dir(dir: &Path) -> Result<(), Error> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(Error::Io {
            what: "removing",
            path: dir.to_path_buf(),
            source,
        }),
    }
}

/// How much one copied tree may hold: a benchmark repository with its data,
/// or a generated one.
const COPY_LIMITS: agent::CopyLimits = agent::CopyLimits {
    max_entries: 1_000_000,
    max_bytes: 32 << 30,
    max_file_bytes: 32 << 30,
};

/// Copies a directory tree the way the agent makes its working copies
/// (`agent::copy_tree`: links out of the tree left out, regular
/// files only, no setuid bits), without `.git`, `__pycache__` and
/// `.repo-agent` (the state `repo-agent generate` keeps in the repositories
/// it writes: blueprint, report, virtualenv; not part of the repository
/// under evaluation).
pub(crate) fn copy_tree(from: &Path, to: &Path) -> Result<(), Error> {
    agent::copy_tree(
        from,
        to,
        &COPY_LIMITS,
        &[".git", "__pycache__", ".repo-agent"],
    )
    .map(drop)
    .map_err(|e| Error::Io {
        what: "copying",
        path: from.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    })
}
