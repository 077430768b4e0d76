//! The measuring code shared by the `measure` (system allocator) and
//! `measure_mimalloc` examples; `cargo xtask bench analysis` runs both.
//!
//! Usage: `measure <DIR> [--runs N] [--what all|cold|parse] [--files-out FILE]
//! [--memory-ceiling BYTES]`.
//!
//! - `all` (default): raw parse, cold analysis, warm analysis from a filled
//!   disk cache, and one file changed; one JSON object at the end.
//! - `cold`: the whole analysis with no cache, one JSON line per run (so
//!   that a caller can stop a run that does not finish), with the graph's
//!   statistics. `--files-out` writes the absolute paths of the analysed
//!   `.py`, `.pyi` and `.java` files, one a line, for a reference parser.
//!   `--memory-ceiling` sets [`repo_graph::Analyzer::memory_ceiling`].
//! - `parse`: raw tree-sitter parsing of the same files
//!   ([`repo_graph::parse_only`]), one JSON line per run.
//!
//! Threads: rayon's global pool (`RAYON_NUM_THREADS`). `MEASURE_LOG=debug`
//! prints the analysis's phase timings on stderr.

use std::path::{Path, PathBuf};
use std::time::Instant;

/// Runs the tool; `allocator` names the allocator the binary installed.
pub fn main(allocator: &str) {
    if let Ok(filter) = std::env::var("MEASURE_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .init();
    }
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else { usage() };
    let mut runs = 3usize;
    let mut what = String::from("all");
    let mut files_out = None;
    let mut ceiling = None;
    while let Some(flag) = args.next() {
        match (flag.as_str(), args.next()) {
            ("--runs", Some(n)) => runs = n.parse().unwrap_or_else(|_| usage()),
            ("--memory-ceiling", Some(b)) => {
                ceiling = Some(b.parse().unwrap_or_else(|_| usage()));
            }
            ("--what", Some(w)) => what = w,
            ("--files-out", Some(f)) => files_out = Some(PathBuf::from(f)),
            _ => usage(),
        }
    }
    let dir = PathBuf::from(dir);
    let runs = runs.max(1);
    match what.as_str() {
        "all" => all(&dir, runs, allocator),
        "cold" => cold(&dir, runs, allocator, files_out.as_deref(), ceiling),
        "parse" => parse(&dir, runs, allocator),
        _ => usage(),
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: measure <DIR> [--runs N] [--what all|cold|parse] [--files-out FILE] [--memory-ceiling BYTES]"
    );
    std::process::exit(2)
}

fn fail(error: impl std::fmt::Display) -> ! {
    eprintln!("error: {error}");
    std::process::exit(1)
}

fn cold(dir: &Path, runs: usize, allocator: &str, files_out: Option<&Path>, ceiling: Option<u64>) {
    for run in 0..runs {
        let t = Instant::now();
        let mut analyzer = repo_graph::Analyzer::new(dir);
        if let Some(bytes) = ceiling {
            analyzer = analyzer.memory_ceiling(bytes);
        }
        let graph = analyzer.analyze().unwrap_or_else(|e| fail(e));
        let seconds = t.elapsed().as_secs_f64();
        if run == 0
            && let Some(out) = files_out
        {
            let mut list = String::new();
            for module in graph.modules() {
                if module.kind != repo_graph::SourceKind::Notebook {
                    list.push_str(&graph.root().join(&module.path).display().to_string());
                    list.push('\n');
                }
            }
            std::fs::write(out, list).unwrap_or_else(|e| fail(e));
        }
        println!(
            "{}",
            serde_json::json!({
                "dir": dir.display().to_string(),
                "what": "cold",
                "allocator": allocator,
                "threads": rayon::current_num_threads(),
                "run": run,
                "cold_analysis_s": seconds,
                "stats": graph.stats(),
            })
        );
        drop(graph);
    }
}

fn parse(dir: &Path, runs: usize, allocator: &str) {
    for run in 0..runs {
        let t = Instant::now();
        let (files, bytes) = repo_graph::parse_only(dir).unwrap_or_else(|e| fail(e));
        println!(
            "{}",
            serde_json::json!({
                "dir": dir.display().to_string(),
                "what": "parse",
                "allocator": allocator,
                "threads": rayon::current_num_threads(),
                "run": run,
                "files": files,
                "bytes": bytes,
                "raw_parse_s": t.elapsed().as_secs_f64(),
            })
        );
    }
}

fn all(dir: &Path, runs: usize, allocator: &str) {
    let best = |f: &mut dyn FnMut()| -> f64 {
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let mut files = (0, 0);
    let parse = best(&mut || {
        files = repo_graph::parse_only(dir).unwrap_or_else(|e| fail(e));
    });
    let mut stats = None;
    let cold = best(&mut || {
        let graph = repo_graph::Analyzer::new(dir)
            .analyze()
            .unwrap_or_else(|e| fail(e));
        stats = Some(graph.stats());
    });
    let cache = tempfile::tempdir().unwrap_or_else(|e| fail(e));
    // Fill the on-disk cache, then measure fresh analyzers that start from it.
    let _ = repo_graph::Analyzer::new(dir)
        .cache_dir(cache.path())
        .analyze();
    let warm = best(&mut || {
        let _ = repo_graph::Analyzer::new(dir)
            .cache_dir(cache.path())
            .analyze();
    });
    // One file changed: append a comment to a module, re-analyse from the
    // cache, then restore the file. Done for the largest module (worst case:
    // its parse alone is the difference) and for one of median size.
    let targets: Vec<PathBuf> = repo_graph::Analyzer::new(dir)
        .cache_dir(cache.path())
        .analyze()
        .map(|graph| {
            let mut modules: Vec<&repo_graph::Module> = graph.modules().iter().collect();
            modules.sort_by_key(|m| m.byte_len);
            [modules.last(), modules.get(modules.len() / 2)]
                .into_iter()
                .flatten()
                .map(|m| graph.root().join(&m.path))
                .collect()
        })
        .unwrap_or_default();
    let mut one_changed = Vec::new();
    for path in targets {
        let Ok(original) = std::fs::read(&path) else {
            continue;
        };
        let mut times = Vec::new();
        for i in 0..runs {
            let mut edited = original.clone();
            edited.extend_from_slice(format!("\n# edit {i}\n").as_bytes());
            if std::fs::write(&path, &edited).is_err() {
                break;
            }
            let t = Instant::now();
            let _ = repo_graph::Analyzer::new(dir)
                .cache_dir(cache.path())
                .analyze();
            times.push(t.elapsed().as_secs_f64());
        }
        let _ = std::fs::write(&path, &original);
        one_changed.push(times.into_iter().reduce(f64::min));
    }
    println!(
        "{}",
        serde_json::json!({
            "dir": dir.display().to_string(),
            "what": "all",
            "allocator": allocator,
            "threads": rayon::current_num_threads(),
            "files": files.0,
            "bytes": files.1,
            "raw_parse_s": parse,
            "cold_analysis_s": cold,
            "ratio_to_parse": cold / parse,
            "warm_from_disk_cache_s": warm,
            "warm_largest_file_changed_s": one_changed.first().copied().flatten(),
            "warm_median_file_changed_s": one_changed.get(1).copied().flatten(),
            "peak_rss_mb": peak_rss_mb(),
            "stats": stats,
        })
    );
}

fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
