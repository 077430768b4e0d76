//! How often the agent's entity search puts a task's labelled entry point
//! in its first results, on the localization dataset
//! (`testdata/localization.json`: 72 tasks on 12 PyPI libraries, each with
//! the functions or classes a solution starts from). `cargo xtask bench
//! search` fetches the libraries and runs this.
//!
//! Queries are what a model sends to `search_code`: the task's request as
//! written, and each of its keywords alone. A query hits when one of the
//! task's entry points is among the first `--k` entities. Rankers, side by
//! side on the same graphs: `bm25` ([`context_pack::search::EntitySearch`],
//! what `search_code` uses) and `substring`, a frozen copy of the
//! word-in-name scores `search_code` used before (`RepoGraph::search`,
//! removed when BM25 replaced it), kept here as the baseline.
//!
//! Usage: `search_hit_rate [--dataset FILE] [--corpus DIR] [--k N]
//! [--verbose]`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use context_pack::search::EntitySearch;
use repo_graph::{EntityId, RepoGraph};
use serde_json::Value;

struct Task {
    id: String,
    library: String,
    version: String,
    request: String,
    keywords: Vec<String>,
    /// `(file, symbol)`: a file of the sdist and `func`, `Class` or
    /// `Class.method` in it.
    entry_points: Vec<(String, String)>,
}

fn fail(message: impl std::fmt::Display) -> ! {
    eprintln!("search_hit_rate: {message}");
    std::process::exit(2)
}

fn tasks(path: &Path) -> Vec<Task> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| fail(format!("cannot read {}: {e}", path.display())));
    let root: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| fail(format!("{} is not JSON: {e}", path.display())));
    let text_of = |v: &Value, key: &str| -> String {
        v.get(key)
            .and_then(Value::as_str)
            .unwrap_or_else(|| fail(format!("a task has no \"{key}\"")))
            .to_owned()
    };
    root.get("tasks")
        .and_then(Value::as_array)
        .unwrap_or_else(|| fail("no \"tasks\" array"))
        .iter()
        .map(|t| {
            let library = t.get("library").unwrap_or_else(|| fail("no library"));
            Task {
                id: text_of(t, "id"),
                library: text_of(library, "name"),
                version: text_of(library, "version"),
                request: text_of(t, "request"),
                keywords: t
                    .get("keywords")
                    .and_then(Value::as_array)
                    .map(|k| {
                        k.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
                entry_points: t
                    .get("entry_points")
                    .and_then(Value::as_array)
                    .map(|points| {
                        points
                            .iter()
                            .map(|p| (text_of(p, "file"), text_of(p, "symbol")))
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// The sdist's directory under `corpus`: `<name>-<version>`, compared
/// without case (`Django-5.1.4` for `django`).
fn library_dir(corpus: &Path, name: &str, version: &str) -> Option<PathBuf> {
    let wanted = format!("{name}-{version}").to_lowercase().replace('_', "-");
    std::fs::read_dir(corpus)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().to_lowercase().replace('_', "-") == wanted)
        })
}

/// The entities a task's entry points name in `graph`.
fn targets(graph: &RepoGraph, task: &Task) -> Vec<EntityId> {
    task.entry_points
        .iter()
        .filter_map(|(file, symbol)| {
            let module = graph.module_by_path(file)?;
            let name = &graph.module(module)?.name;
            graph.entity(&format!("{name}.{symbol}"))
        })
        .collect()
}

/// Hits and queries of one ranker on one kind of query.
#[derive(Default, Clone, Copy)]
struct Count {
    hits: usize,
    queries: usize,
}

impl Count {
    fn add(&mut self, hit: bool) {
        self.hits += usize::from(hit);
        self.queries += 1;
    }

    fn rate(self) -> String {
        if self.queries == 0 {
            return "-".into();
        }
        format!(
            "{:.3} ({}/{})",
            self.hits as f64 / self.queries as f64,
            self.hits,
            self.queries
        )
    }
}

/// The ranker `search_code` used before BM25 (`RepoGraph::search` up to
/// commit 0c028f2), frozen as the baseline: per query word, 10 for the
/// exact name, 6 for a name prefix, 4 for a name substring, 2 for a
/// qualified-name substring, 1 for a docstring substring.
fn substring_baseline(graph: &RepoGraph, query: &str, limit: usize) -> Vec<EntityId> {
    let words: Vec<String> = query
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.is_empty() {
        return Vec::new();
    }
    let score = |name: &str, qualname: &str, doc: Option<&str>| -> u32 {
        let name = name.to_lowercase();
        let qualname = qualname.to_lowercase();
        let doc = doc.map(str::to_lowercase);
        words
            .iter()
            .map(|w| {
                if name == *w {
                    10
                } else if name.starts_with(w.as_str()) {
                    6
                } else if name.contains(w.as_str()) {
                    4
                } else if qualname.contains(w.as_str()) {
                    2
                } else if doc.as_deref().is_some_and(|d| d.contains(w.as_str())) {
                    1
                } else {
                    0
                }
            })
            .sum()
    };
    let mut hits: Vec<(u32, &str, EntityId)> = Vec::new();
    for (id, m) in graph.module_ids().zip(graph.modules()) {
        let short = m.name.rsplit('.').next().unwrap_or(&m.name);
        hits.push((
            score(short, &m.name, m.docstring.as_deref()),
            &m.name,
            EntityId::Module(id),
        ));
    }
    for (id, c) in graph.class_ids().zip(graph.classes()) {
        hits.push((
            score(&c.name, &c.qualname, c.docstring.as_deref()),
            &c.qualname,
            EntityId::Class(id),
        ));
    }
    for (id, f) in graph.function_ids().zip(graph.functions()) {
        hits.push((
            score(&f.name, &f.qualname, f.docstring.as_deref()),
            &f.qualname,
            EntityId::Function(id),
        ));
    }
    hits.retain(|h| h.0 > 0);
    hits.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    hits.into_iter().take(limit).map(|h| h.2).collect()
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut dataset = root.join("testdata/localization.json");
    let mut corpus = root.join("target/corpus");
    let mut k = 10usize;
    let mut verbose = false;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--dataset" => dataset = args.next().unwrap_or_else(|| fail("--dataset FILE")).into(),
            "--corpus" => corpus = args.next().unwrap_or_else(|| fail("--corpus DIR")).into(),
            "--k" => {
                k = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| fail("--k takes a number"))
            }
            "--verbose" => verbose = true,
            other => fail(format!(
                "unknown flag {other}; usage: search_hit_rate [--dataset FILE] [--corpus DIR] [--k N] [--verbose]"
            )),
        }
    }
    let tasks = tasks(&dataset);
    let mut by_library: BTreeMap<(String, String), Vec<&Task>> = BTreeMap::new();
    for task in &tasks {
        by_library
            .entry((task.library.clone(), task.version.clone()))
            .or_default()
            .push(task);
    }
    // [ranker][request, keyword]
    let mut counts = [[Count::default(); 2]; 2];
    let mut seconds = [0f64; 2];
    let mut unlabelled = 0usize;
    for ((library, version), tasks) in &by_library {
        let Some(dir) = library_dir(&corpus, library, version) else {
            fail(format!(
                "{library} {version} is not under {} (`cargo xtask bench search` fetches it)",
                corpus.display()
            ));
        };
        let graph = repo_graph::Analyzer::new(&dir)
            .analyze()
            .unwrap_or_else(|e| fail(format!("{}: {e}", dir.display())));
        let started = Instant::now();
        let index = EntitySearch::new(&graph);
        let build = started.elapsed().as_secs_f64();
        seconds[0] += build;
        for task in tasks {
            let wanted = targets(&graph, task);
            if wanted.is_empty() {
                unlabelled += 1;
                eprintln!("{}: no entry point found in the graph", task.id);
                continue;
            }
            let queries = std::iter::once((0, task.request.as_str()))
                .chain(task.keywords.iter().map(|q| (1, q.as_str())));
            for (kind, query) in queries {
                let started = Instant::now();
                let bm25: Vec<EntityId> = index
                    .search(query, k)
                    .into_iter()
                    .map(|h| h.entity)
                    .collect();
                seconds[0] += started.elapsed().as_secs_f64();
                let started = Instant::now();
                let substring = substring_baseline(&graph, query, k);
                seconds[1] += started.elapsed().as_secs_f64();
                for (ranker, found) in [bm25, substring].iter().enumerate() {
                    let hit = found.iter().any(|e| wanted.contains(e));
                    counts[ranker][kind].add(hit);
                    if verbose {
                        println!(
                            "{:<9} {} {:<40} {query:?}",
                            ["bm25", "substring"][ranker],
                            if hit { "hit " } else { "miss" },
                            task.id
                        );
                    }
                }
            }
        }
    }
    println!(
        "\n{} tasks on {} libraries, hit@{k} (an entry point among the first {k} entities)\n",
        tasks.len() - unlabelled,
        by_library.len()
    );
    println!("| ranker | request as written | each keyword alone | time (index + all queries) |");
    println!("| --- | ---: | ---: | ---: |");
    for (ranker, name) in ["bm25 (search_code)", "substring (before)"]
        .iter()
        .enumerate()
    {
        println!(
            "| {name} | {} | {} | {:.2} s |",
            counts[ranker][0].rate(),
            counts[ranker][1].rate(),
            seconds[ranker]
        );
    }
}
