//! Route-level API coverage: the endpoints a task's README declares,
//! matched against the routes repo-graph finds in the generated repository
//! (HTTP method and full path, for every framework repo-graph knows).
//!
//! The benchmark's AC ([`super::coverage`]) counts an endpoint implemented
//! when a file holds something that looks like a routing signature and the
//! path's text, so a path in a comment next to any `.get(` call passes.
//! Here an endpoint counts only when a route with its method and path is
//! declared in code outside the test directories.
//!
//! The README side is [`context_pack::spec::declared_endpoints`] and
//! route matching is [`repo_graph::Route::serves`]: the same definitions
//! `repo-agent generate` checks its blueprint and repository against.

use std::collections::BTreeSet;
use std::path::Path;

use repo_graph::{Framework, Route};
use serde::{Deserialize, Serialize};

/// An endpoint the README declares (named apart from the AC rules'
/// [`super::Endpoint`]).
pub use repo_graph::Endpoint as DeclaredEndpoint;

/// How many of the declared endpoints the repository's routes serve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteCoverage {
    /// Endpoints the README declares.
    pub declared: usize,
    /// Those a route serves.
    pub matched: usize,
    /// The declared endpoints no route serves.
    pub missing: Vec<String>,
    /// Routes found outside test directories.
    pub routes: usize,
    /// The frameworks those routes are declared with.
    pub frameworks: Vec<Framework>,
    /// Why the numbers may be incomplete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl RouteCoverage {
    /// `matched / declared`, `None` when the README declares nothing.
    pub fn score(&self) -> Option<f64> {
        (self.declared > 0).then(|| self.matched as f64 / self.declared as f64)
    }
}

/// Whether a route declared in `file` (relative to the root) counts.
fn outside_tests(file: &str) -> bool {
    let mut components: Vec<&str> = file.split('/').collect();
    components.pop();
    // The harness's `EXCLUDED_DIRS`, as its AC rule prunes them.
    !components
        .iter()
        .any(|c| super::coverage::HARNESS_EXCLUDED.contains(c))
}

/// The route coverage of `declared` by the routes of the repository at `repo`.
pub fn route_coverage(declared: &[DeclaredEndpoint], repo: &Path) -> RouteCoverage {
    let analysis = repo_graph::Analyzer::new(repo)
        .respect_ignore_files(false)
        .analyze();
    let (routes, note) = match analysis {
        Ok(graph) => (
            graph
                .routes()
                .iter()
                .filter(|r| outside_tests(&r.file))
                .cloned()
                .collect::<Vec<Route>>(),
            None,
        ),
        Err(e) => (
            Vec::new(),
            Some(format!("repo-graph could not analyse the repository: {e}")),
        ),
    };
    coverage_by_routes(declared, &routes, note)
}

/// The coverage of `declared` by `routes`.
pub fn coverage_by_routes(
    declared: &[DeclaredEndpoint],
    routes: &[Route],
    note: Option<String>,
) -> RouteCoverage {
    let missing: Vec<String> = declared
        .iter()
        .filter(|e| !routes.iter().any(|r| r.serves(e)))
        .map(DeclaredEndpoint::label)
        .collect();
    let frameworks: BTreeSet<Framework> = routes.iter().map(|r| r.framework).collect();
    RouteCoverage {
        declared: declared.len(),
        matched: declared.len() - missing.len(),
        missing,
        routes: routes.len(),
        frameworks: frameworks.into_iter().collect(),
        note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_directories_do_not_count() {
        assert!(outside_tests("app/routes.py"));
        assert!(!outside_tests("tests/test_api.py"));
        assert!(!outside_tests("src/test/java/ApiTest.java"));
    }
}
