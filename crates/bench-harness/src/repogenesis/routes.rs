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
//! The README side is read more carefully than the benchmark's regular
//! expressions do: `METHOD /path` anywhere (backticks, bold, table cells),
//! and `Method: X` / `Path: /y` label pairs on nearby lines; example
//! requests (`... HTTP/1.1`) and `curl` lines are not declarations. Paths
//! are compared segment by segment, with any parameter syntax (`{id}`,
//! `<int:id>`, `:id`) matching any other, and trailing slashes ignored.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;
use repo_graph::{Framework, HttpMethod, Route};
use serde::{Deserialize, Serialize};

/// An endpoint the README declares.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DeclaredEndpoint {
    /// The method.
    pub method: HttpMethod,
    /// The path as written (query string and trailing punctuation removed).
    pub path: String,
}

impl DeclaredEndpoint {
    /// `GET /users/{id}`.
    pub fn label(&self) -> String {
        format!("{} {}", self.method.as_str(), self.path)
    }
}

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

fn compiled(cell: &'static OnceLock<Regex>, pattern: &'static str) -> &'static Regex {
    cell.get_or_init(|| {
        Regex::new(pattern).unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
    })
}

/// `METHOD /path` on one line, with markup between them.
fn inline_pattern() -> &'static Regex {
    static CELL: OnceLock<Regex> = OnceLock::new();
    compiled(
        &CELL,
        r"\b(GET|POST|PUT|DELETE|PATCH)\b[\s*`:|]*(/[^\s`'\x22|*<>()\[\],;]*)",
    )
}

/// `Method: GET` (any case for the label).
fn method_label() -> &'static Regex {
    static CELL: OnceLock<Regex> = OnceLock::new();
    compiled(
        &CELL,
        r"(?i:\bmethod\b)[\s*`:]*(GET|POST|PUT|DELETE|PATCH)\b",
    )
}

/// `Path: /x`, `Endpoint: /x`, `URL: /x`, `Route: /x`, `Interface: /x`.
fn path_label() -> &'static Regex {
    static CELL: OnceLock<Regex> = OnceLock::new();
    compiled(
        &CELL,
        r"(?i:\b(?:path|endpoint|url|route|interface)\b)[\s*`:]*(/[^\s`'\x22|*<>()\[\],;]*)",
    )
}

fn clean_path(raw: &str) -> String {
    let path = raw.split(['?', '#']).next().unwrap_or(raw);
    let path = path.trim_end_matches(['.', ',', ';', ':', ')']);
    if path.is_empty() {
        "/".to_owned()
    } else {
        path.to_owned()
    }
}

/// The endpoints `readme` declares, in order of appearance, without duplicates.
///
/// ```
/// use bench_harness::repogenesis::declared_endpoints;
///
/// let readme = "- Method: GET\n- Path: `/`\n\n**POST** `/users/{id}`\n\n```\nGET /health HTTP/1.1\n```\n";
/// let labels: Vec<String> = declared_endpoints(readme).iter().map(|e| e.label()).collect();
/// assert_eq!(labels, ["GET /", "POST /users/{id}"]);
/// ```
pub fn declared_endpoints(readme: &str) -> Vec<DeclaredEndpoint> {
    const PAIR_DISTANCE: usize = 3;
    let lines: Vec<&str> = readme.lines().collect();
    let mut found: Vec<(usize, DeclaredEndpoint)> = Vec::new();
    let mut methods: Vec<(usize, HttpMethod)> = Vec::new();
    let mut paths: Vec<(usize, String)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.contains(" HTTP/") || line.contains("curl ") {
            continue;
        }
        let mut inline = false;
        for m in inline_pattern().captures_iter(line) {
            let (Some(verb), Some(path)) = (m.get(1), m.get(2)) else {
                continue;
            };
            let Some(method) = HttpMethod::from_verb(verb.as_str()) else {
                continue;
            };
            inline = true;
            found.push((
                i,
                DeclaredEndpoint {
                    method,
                    path: clean_path(path.as_str()),
                },
            ));
        }
        if inline {
            continue;
        }
        if let Some(m) = method_label().captures(line)
            && let Some(method) = m.get(1).and_then(|v| HttpMethod::from_verb(v.as_str()))
        {
            methods.push((i, method));
        } else if let Some(m) = path_label().captures(line)
            && let Some(path) = m.get(1)
        {
            paths.push((i, clean_path(path.as_str())));
        }
    }
    let mut used = vec![false; paths.len()];
    for (line, method) in methods {
        let nearest = paths
            .iter()
            .enumerate()
            .filter(|(k, (at, _))| !used[*k] && at.abs_diff(line) <= PAIR_DISTANCE)
            .min_by_key(|(_, (at, _))| (at.abs_diff(line), *at > line));
        if let Some((k, (at, path))) = nearest {
            used[k] = true;
            found.push((
                line.min(*at),
                DeclaredEndpoint {
                    method,
                    path: path.clone(),
                },
            ));
        }
    }
    found.sort_by_key(|(line, _)| *line);
    let mut seen = BTreeSet::new();
    found
        .into_iter()
        .map(|(_, e)| e)
        .filter(|e| seen.insert((e.method, normalized(&e.path))))
        .collect()
}

/// Path segments with every parameter as `{}`.
fn normalized(path: &str) -> Vec<String> {
    let path = path.split(['?', '#']).next().unwrap_or(path);
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            let parameter = (s.starts_with('{') && s.ends_with('}'))
                || (s.starts_with('<') && s.ends_with('>'))
                || s.starts_with(':')
                || s == "*";
            if parameter {
                "{}".to_owned()
            } else {
                s.to_owned()
            }
        })
        .collect()
}

/// Whether `route` serves `endpoint`.
pub fn serves(route: &Route, endpoint: &DeclaredEndpoint) -> bool {
    (route.method == endpoint.method || route.method == HttpMethod::Any)
        && normalized(&route.path) == normalized(&endpoint.path)
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
        .filter(|e| !routes.iter().any(|r| serves(r, e)))
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

    fn labels(readme: &str) -> Vec<String> {
        declared_endpoints(readme)
            .iter()
            .map(DeclaredEndpoint::label)
            .collect()
    }

    #[test]
    fn readme_styles_of_the_benchmark() {
        assert_eq!(
            labels("| GET | `/api/items` | list |\n- **Endpoint**: `PUT /api/dashboards/:id`\n"),
            ["GET /api/items", "PUT /api/dashboards/:id"]
        );
        assert_eq!(
            labels("**Endpoint:** `/api/translate`\n\n**Method:** POST\n"),
            ["POST /api/translate"]
        );
        assert_eq!(
            labels(
                "- **HTTP Method**: GET\n- **Path**: `/health`\n- **Method**: `POST`\n- **Path**: `/x?y=1`.\n"
            ),
            ["GET /health", "POST /x"]
        );
        assert_eq!(
            labels(
                "curl -X POST http://localhost:5000/api/t\nPOST /rooms/!r:example.org/messages HTTP/1.1\n"
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn parameters_match_in_any_syntax() {
        assert_eq!(normalized("/a/{id}/b/"), normalized("/a/<int:pk>/b"));
        assert_eq!(normalized("/a/:id"), normalized("/a/{x}"));
        assert_ne!(normalized("/a/{id}"), normalized("/a/id"));
        assert_ne!(normalized("/a"), normalized("/a/{id}"));
        assert!(outside_tests("app/routes.py"));
        assert!(!outside_tests("tests/test_api.py"));
        assert!(!outside_tests("src/test/java/ApiTest.java"));
    }
}
