//! Analysis -> rank -> context, each step timed on its own and the three
//! together, on the fixtures and the real corpora (Django 5.1.4, java.base
//! of OpenJDK 17) when `cargo xtask corpus` has put them in `target/corpus/`.
//! `cargo xtask bench pipeline` runs this and prints the estimates.

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

/// The budget of the initial context, the agent's default.
const BUDGET: usize = 8_000;

/// A task sentence for each corpus, so that the context's task-dependent
/// parts (BM25 over the repository's text) do their real work.
fn corpora() -> Vec<(&'static str, PathBuf, &'static str)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = vec![(
        "fixtures",
        root.join("testdata/python"),
        "parse the configuration and call the handlers",
    )];
    for (name, path, task) in [
        (
            "Django-5.1.4",
            "Django-5.1.4",
            "render a template with a context and return an HTTP response",
        ),
        (
            "java.base",
            "openjdk-17/java.base",
            "read a file line by line and parse each line as an integer",
        ),
    ] {
        let dir = root.join("target/corpus").join(path);
        if dir.is_dir() {
            out.push((name, dir, task));
        } else {
            eprintln!("not benched: {name} is not in target/corpus/ (`cargo xtask corpus`)");
        }
    }
    out
}

fn pipeline(c: &mut Criterion) {
    for (name, dir, task) in corpora() {
        let mut group = c.benchmark_group(format!("pipeline/{name}"));
        if name != "fixtures" {
            group
                .sample_size(10)
                .measurement_time(Duration::from_secs(20));
        }
        let graph = match repo_graph::Analyzer::new(&dir).analyze() {
            Ok(graph) => graph,
            Err(e) => {
                eprintln!("not benched: {name} does not analyse: {e}");
                continue;
            }
        };
        let ranking = importance::Ranker::new().git(false).rank(&graph);
        group.bench_function("analyze", |b| {
            b.iter(|| {
                repo_graph::Analyzer::new(&dir)
                    .analyze()
                    .map(|g| g.stats().call_edges)
            })
        });
        group.bench_function("rank", |b| {
            b.iter(|| importance::Ranker::new().git(false).rank(&graph))
        });
        group.bench_function("context", |b| {
            b.iter(|| {
                context_pack::ContextBuilder::new(&graph, &ranking)
                    .budget(BUDGET)
                    .task(task)
                    .build()
                    .map(|c| c.total_tokens)
            })
        });
        group.bench_function("analyze_rank_context", |b| {
            b.iter(|| -> Option<usize> {
                let graph = repo_graph::Analyzer::new(&dir).analyze().ok()?;
                let ranking = importance::Ranker::new().git(false).rank(&graph);
                context_pack::ContextBuilder::new(&graph, &ranking)
                    .budget(BUDGET)
                    .task(task)
                    .build()
                    .ok()
                    .map(|c| c.total_tokens)
            })
        });
        group.finish();
    }
}

criterion_group!(benches, pipeline);
criterion_main!(benches);
