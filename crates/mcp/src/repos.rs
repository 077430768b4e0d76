//! The served repositories and their analyses, kept fresh between calls.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use repo_graph::{Analyzer, RepoGraph, TreeStamp};

use crate::Error;

/// One served repository: its analyzer (which keeps every file's facts
/// between analyses, so a second analysis parses only changed files) and
/// the graph of its last analysis with the stamp taken before it.
pub(crate) struct ServedRepo {
    pub(crate) root: PathBuf,
    /// The name in resource URIs: the directory's name, made unique.
    pub(crate) name: String,
    analyzer: Analyzer,
    current: Mutex<Option<(TreeStamp, Arc<RepoGraph>)>>,
}

/// Work counters, for the measurements and the tests.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Analyses run (the first one included).
    pub(crate) analyses: AtomicU64,
    /// Freshness checks (one per repository per call).
    pub(crate) checks: AtomicU64,
}

impl ServedRepo {
    pub(crate) fn new(root: PathBuf, name: String, cache_home: Option<&Path>) -> Self {
        let mut analyzer = Analyzer::new(&root);
        if let Some(home) = cache_home {
            match agent::graph_cache_dir_in(home, &root) {
                Ok(dir) => analyzer = analyzer.cache_dir(dir),
                Err(error) => tracing::warn!(%error, "analysis cache disabled"),
            }
        }
        ServedRepo {
            root,
            name,
            analyzer,
            current: Mutex::new(None),
        }
    }

    /// The graph of the tree as it is now, and whether it was analysed
    /// again to get it. Blocking: a walk at least, an analysis when a
    /// source file was added, removed or written since the last one.
    pub(crate) fn fresh(&self, counters: &Counters) -> Result<(Arc<RepoGraph>, bool), Error> {
        counters.checks.fetch_add(1, Ordering::Relaxed);
        let analysis_error = |source| Error::Analysis {
            path: self.root.clone(),
            source,
        };
        // Taken before the analysis: a file written while it runs changes
        // the next stamp, and is read then.
        let stamp = self.analyzer.stamp().map_err(analysis_error)?;
        let mut current = self
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((seen, graph)) = current.as_ref()
            && *seen == stamp
        {
            return Ok((Arc::clone(graph), false));
        }
        counters.analyses.fetch_add(1, Ordering::Relaxed);
        let graph = Arc::new(self.analyzer.analyze().map_err(analysis_error)?);
        tracing::info!(
            root = %self.root.display(),
            files = stamp.files(),
            "analysed"
        );
        *current = Some((stamp, Arc::clone(&graph)));
        Ok((graph, true))
    }
}

/// Names for resource URIs: each directory's name, lower-case letters,
/// digits, `-`, `_` and `.` only, with `-2`, `-3`... for repeats.
pub(crate) fn unique_names(roots: &[PathBuf]) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(roots.len());
    for root in roots {
        let base: String = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        let base = if base.trim_matches(['-', '.']).is_empty() {
            "repo".to_owned()
        } else {
            base
        };
        let mut name = base.clone();
        let mut n = 2;
        while names.contains(&name) {
            name = format!("{base}-{n}");
            n += 1;
        }
        names.push(name);
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_and_odd_directory_names_get_distinct_uri_names() {
        let roots = [
            PathBuf::from("/a/My Repo"),
            PathBuf::from("/b/my repo"),
            PathBuf::from("/"),
            PathBuf::from("/c/.."),
        ];
        assert_eq!(
            unique_names(&roots),
            ["my-repo", "my-repo-2", "repo", "repo-2"]
        );
    }
}
