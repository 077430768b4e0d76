//! Where repo-agent keeps its per-user state.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// repo-agent's per-user home: one rule for the whole workspace, kept with
/// the model installer that also needs it.
pub use llm_local::repo_agent_home;

/// The analysis cache for the repository at `root`: one directory per
/// canonical root path under `<home>/cache/graph/`. `None` without a home.
pub fn graph_cache_dir(root: &Path) -> anyhow::Result<Option<PathBuf>> {
    let Some(home) = repo_agent_home() else {
        tracing::warn!("no home directory; the analysis cache is disabled");
        return Ok(None);
    };
    graph_cache_dir_in(&home, root).map(Some)
}

/// The analysis cache for the repository at `root` under the repo-agent
/// home `home`.
///
/// ```
/// let home = tempfile::tempdir()?;
/// let repo = tempfile::tempdir()?;
/// let dir = agent::graph_cache_dir_in(home.path(), repo.path())?;
/// assert!(dir.starts_with(home.path().join("cache").join("graph")));
/// # Ok::<(), anyhow::Error>(())
/// ```
pub fn graph_cache_dir_in(home: &Path, root: &Path) -> anyhow::Result<PathBuf> {
    let root = std::fs::canonicalize(root)
        .with_context(|| format!("cannot read {}; check the path exists", root.display()))?;
    let key = format!("{:016x}", fnv1a(root.to_string_lossy().as_bytes()));
    Ok(home.join("cache").join("graph").join(key))
}

/// Where model-written module summaries are cached under the home `home`
/// (one JSON file, content hash to summary).
pub fn summary_cache_file(home: &Path) -> PathBuf {
    home.join("cache").join("summaries.json")
}

/// FNV-1a: a stable, dependency-free hash for naming cache directories.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}
