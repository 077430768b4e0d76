#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The endpoints `context_pack::spec::declared_endpoints` reads in every
//! task README of the RepoGenesis Verified split, against what the
//! benchmark's own coverage scripts extract from the same text
//! (`extract_endpoints`, each rule ported exactly): a table per task, the
//! promise that every concrete `METHOD /path` a script finds is found by
//! ours too (bar the commented exceptions), and the port each README
//! states against the benchmark's `constants.py`.
//!
//! The benchmark is looked for in `REPOGENESIS_ROOT`, then
//! `/work/shared/benchmarks/RepoGenesis`, then `../shared/benchmarks/
//! RepoGenesis` next to the workspace; without it the test runs on
//! `testdata/repogenesis-mini` (and says so), with its own snapshot.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use bench_harness::repogenesis::{
    AcRule, ApiMethod, GenesisBenchmark, extract_endpoints, python_text,
};
use context_pack::spec::{declared_endpoints, declared_port};
use repo_graph::{Endpoint, HttpMethod, same_path};

/// Script endpoints ours is allowed to miss: `(task, label, why)`. Each
/// must still be missed, so a stale entry fails too.
const EXCEPTIONS: &[(&str, &str, &str)] = &[
    // synapse's "Example Requests and Responses" show raw requests
    // (`POST /rooms/!room123:example.org/messages HTTP/1.1`) in `http`
    // fences. They are instances of the declared `/rooms/{room_id}/messages`,
    // not endpoints; the scripts read them (the harness cut at the `:`), and
    // ours skips request lines on purpose.
    (
        "synapse",
        "POST /rooms/!room123",
        "example request, cut at `:` by the harness",
    ),
    (
        "synapse",
        "GET /rooms/!room123",
        "example request, cut at `:` by the harness",
    ),
    (
        "synapse",
        "POST /rooms/!room123:example.org/messages",
        "example request",
    ),
    (
        "synapse",
        "GET /rooms/!room123:example.org/messages?limit=2",
        "example request",
    ),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The benchmark's root, and whether it is the full one (anything but the
/// mini copy, which `REPOGENESIS_ROOT` may also name).
fn benchmark_root() -> (PathBuf, bool) {
    let mini = workspace().join("testdata/repogenesis-mini");
    let candidates = std::env::var_os("REPOGENESIS_ROOT")
        .map(PathBuf::from)
        .into_iter()
        .chain([
            PathBuf::from("/work/shared/benchmarks/RepoGenesis"),
            workspace().join("../shared/benchmarks/RepoGenesis"),
        ]);
    for root in candidates {
        if root.join("repo").is_dir() {
            let is_mini = std::fs::canonicalize(&root).ok() == std::fs::canonicalize(&mini).ok();
            return (root, !is_mini);
        }
    }
    eprintln!(
        "RepoGenesis not found (set REPOGENESIS_ROOT); using {} instead",
        mini.display()
    );
    (mini, false)
}

/// A script's endpoint as `METHOD /path`, when it is one, its path read
/// with our grammar: the legacy and paper rules keep what follows a path
/// up to a space (`` /api/terms`: ``), so the path ends at the first
/// character a path cannot hold in running text (markup, quotes, brackets)
/// and loses trailing punctuation.
fn concrete(endpoint: &bench_harness::repogenesis::Endpoint) -> Option<Endpoint> {
    let method = match endpoint.method {
        ApiMethod::Get => HttpMethod::Get,
        ApiMethod::Post => HttpMethod::Post,
        ApiMethod::Put => HttpMethod::Put,
        ApiMethod::Delete => HttpMethod::Delete,
        ApiMethod::Patch => HttpMethod::Patch,
        ApiMethod::Feature => return None,
    };
    let path = endpoint
        .path
        .split(|c: char| c.is_whitespace() || "`'\"|*<>()[],;".contains(c))
        .next()
        .unwrap_or_default()
        .trim_end_matches(['.', ',', ';', ':', ')']);
    path.starts_with('/').then(|| Endpoint::new(method, path))
}

/// `path` as `rule`'s pattern captures it: up to the first `-` (and for
/// the harness, `:`), which its character class excludes, so the scripts
/// read `/users/{id}/reset-password` as `/users/{id}/reset` and
/// `/dashboards/:id` as `/dashboards/`.
fn as_captured(path: &str, rule: AcRule) -> &str {
    let stop = |c: char| c == '-' || (rule == AcRule::Harness && c == ':');
    path.find(stop).map_or(path, |at| &path[..at])
}

/// Whether `ours` holds the endpoint `script` that `rule` extracted: the
/// same method and path, or a path the rule's pattern cut short.
fn found_by_ours(script: &Endpoint, rule: AcRule, ours: &[Endpoint]) -> bool {
    ours.iter().any(|o| {
        o.method == script.method
            && (same_path(&o.path, &script.path) || as_captured(&o.path, rule) == script.path)
    })
}

#[derive(Default)]
struct Row {
    task: String,
    harness: usize,
    legacy: usize,
    paper: usize,
    ours: usize,
    both: usize,
    only_script: Vec<String>,
    only_ours: Vec<String>,
    /// What a rule extracted that is no `METHOD /path` (feature names,
    /// paths without a slash).
    not_endpoints: BTreeSet<String>,
}

#[test]
fn ours_finds_every_endpoint_the_scripts_find() {
    let (root, full) = benchmark_root();
    let benchmark = GenesisBenchmark::open(&root).unwrap();
    let tasks = benchmark.tasks();
    if full {
        assert_eq!(tasks.len(), 30, "the Verified split has 30 tasks");
    }
    let mut rows = Vec::new();
    let mut missed: BTreeSet<(String, String)> = BTreeSet::new();
    let mut ports = Vec::new();
    for task in tasks {
        let bytes = std::fs::read(&task.readme).unwrap();
        let readme = python_text(&bytes);
        let by_rule = |rule| extract_endpoints(rule, &readme);
        let (harness, legacy, paper) = (
            by_rule(AcRule::Harness),
            by_rule(AcRule::Legacy),
            by_rule(AcRule::Paper),
        );
        let ours = declared_endpoints(&String::from_utf8_lossy(&bytes));
        let mut row = Row {
            task: task.name().to_owned(),
            harness: harness.len(),
            legacy: legacy.len(),
            paper: paper.len(),
            ours: ours.len(),
            ..Row::default()
        };
        // The union of the rules' concrete endpoints, once each; one counts
        // as found when ours holds it as the rule that extracted it read it.
        let mut script: Vec<(String, bool)> = Vec::new();
        let mut script_endpoints: Vec<(Endpoint, AcRule)> = Vec::new();
        for (rule, endpoints) in [
            (AcRule::Harness, &harness),
            (AcRule::Legacy, &legacy),
            (AcRule::Paper, &paper),
        ] {
            for e in endpoints {
                let Some(e) = concrete(e) else {
                    row.not_endpoints
                        .insert(format!("{:?}: {}", rule, e.label()));
                    continue;
                };
                let found = found_by_ours(&e, rule, &ours);
                match script.iter_mut().find(|(label, _)| *label == e.label()) {
                    Some((_, any)) => *any |= found,
                    None => script.push((e.label(), found)),
                }
                script_endpoints.push((e, rule));
            }
        }
        for (label, found) in script {
            if !found {
                missed.insert((task.name().to_owned(), label.clone()));
                row.only_script.push(label);
            }
        }
        for o in &ours {
            let matched = script_endpoints
                .iter()
                .any(|(e, rule)| found_by_ours(e, *rule, std::slice::from_ref(o)));
            if matched {
                row.both += 1;
            } else {
                row.only_ours.push(o.label());
            }
        }
        ports.push((
            task.name().to_owned(),
            declared_port(&readme),
            task.spec.port,
        ));
        rows.push(row);
    }

    let mut table = String::from(
        "| task | harness | legacy | paper | ours | both | only script | only ours |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut totals = Row {
        task: "total".to_owned(),
        ..Row::default()
    };
    for row in &rows {
        writeln!(
            table,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            row.task,
            row.harness,
            row.legacy,
            row.paper,
            row.ours,
            row.both,
            row.only_script.len(),
            row.only_ours.len()
        )
        .unwrap();
        totals.harness += row.harness;
        totals.legacy += row.legacy;
        totals.paper += row.paper;
        totals.ours += row.ours;
        totals.both += row.both;
        totals.only_script.extend(row.only_script.iter().cloned());
        totals.only_ours.extend(row.only_ours.iter().cloned());
    }
    writeln!(
        table,
        "| **total** | {} | {} | {} | {} | {} | {} | {} |",
        totals.harness,
        totals.legacy,
        totals.paper,
        totals.ours,
        totals.both,
        totals.only_script.len(),
        totals.only_ours.len()
    )
    .unwrap();
    let mut details = String::new();
    for row in &rows {
        for label in &row.only_script {
            writeln!(details, "{}: only the scripts: {label}", row.task).unwrap();
        }
        for label in &row.only_ours {
            writeln!(details, "{}: only ours: {label}", row.task).unwrap();
        }
        for label in &row.not_endpoints {
            writeln!(details, "{}: not an endpoint: {label}", row.task).unwrap();
        }
    }
    eprintln!("{table}\n{details}");
    let snapshot = format!("{table}\n{details}");
    if full {
        insta::assert_snapshot!("verified_split_endpoints", snapshot);
    } else {
        insta::assert_snapshot!("mini_fallback_endpoints", snapshot);
    }

    let excepted: BTreeSet<(String, String)> = EXCEPTIONS
        .iter()
        .filter(|(task, _, _)| tasks.iter().any(|t| t.name() == *task))
        .map(|(task, label, _)| ((*task).to_owned(), (*label).to_owned()))
        .collect();
    let unexplained: Vec<_> = missed.difference(&excepted).collect();
    assert!(
        unexplained.is_empty(),
        "script endpoints ours misses: {unexplained:?}"
    );
    let stale: Vec<_> = excepted.difference(&missed).collect();
    assert!(stale.is_empty(), "exceptions no longer missed: {stale:?}");
    assert!(
        rows.iter().all(|r| r.ours > 0),
        "a task README with no endpoint read"
    );
    // Ours reads at least every endpoint the scripts agree on.
    assert!(totals.ours >= totals.both && totals.both + totals.only_ours.len() == totals.ours);
    let wrong_ports: Vec<_> = ports
        .iter()
        .filter(|(_, got, want)| *got != Some(*want))
        .collect();
    assert!(
        wrong_ports.is_empty(),
        "README ports (read, constants.py): {wrong_ports:?}"
    );
}
