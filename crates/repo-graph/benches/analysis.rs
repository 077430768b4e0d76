//! Criterion benches of the analysis pipeline against raw tree-sitter
//! parsing of the same files. The fixtures always run; the real corpora run
//! when `cargo xtask corpus` has fetched them into `target/corpus/`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

fn corpora() -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = vec![
        ("fixtures".to_string(), root.join("testdata/python")),
        ("java-fixtures".to_string(), root.join("testdata/java")),
    ];
    for (name, path) in [
        ("Django-5.1.4", "Django-5.1.4"),
        ("sympy-1.13.3", "sympy-1.13.3"),
        ("java.base", "openjdk-17/java.base"),
    ] {
        let dir = root.join("target/corpus").join(path);
        if dir.is_dir() {
            out.push((name.to_string(), dir));
        } else {
            eprintln!(
                "skipping {name}: not in target/corpus/ (run `cargo xtask corpus` to fetch it)"
            );
        }
    }
    out
}

fn analysis(c: &mut Criterion) {
    for (name, dir) in corpora() {
        let mut group = c.benchmark_group(&name);
        if !name.ends_with("fixtures") {
            group
                .sample_size(10)
                .measurement_time(Duration::from_secs(30));
        }
        group.bench_function("raw_tree_sitter_parse", |b| {
            b.iter(|| repo_graph::parse_only(&dir).map(|r| r.1).unwrap_or(0))
        });
        group.bench_function("cold_analysis", |b| {
            b.iter(|| {
                repo_graph::Analyzer::new(&dir)
                    .analyze()
                    .map(|g| g.stats().call_edges)
                    .unwrap_or(0)
            })
        });
        let cache = tempfile::tempdir().ok();
        if let Some(cache) = &cache {
            let _ = repo_graph::Analyzer::new(&dir)
                .cache_dir(cache.path())
                .analyze();
            group.bench_function("warm_analysis_from_disk_cache", |b| {
                b.iter(|| {
                    repo_graph::Analyzer::new(&dir)
                        .cache_dir(cache.path())
                        .analyze()
                        .map(|g| g.stats().call_edges)
                        .unwrap_or(0)
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, analysis);
criterion_main!(benches);
