//! Measures the analysis of one directory against raw tree-sitter parsing of
//! the same files on the same threads: `cargo xtask bench analysis` runs this.
//!
//! Usage: `measure <DIR> [--runs N]`. Prints one JSON object per line.

use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: measure <DIR> [--runs N]");
        std::process::exit(2);
    };
    let runs: usize = match (args.next().as_deref(), args.next()) {
        (Some("--runs"), Some(n)) => n.parse().unwrap_or(3),
        _ => 3,
    };
    let dir = std::path::PathBuf::from(dir);
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
        files = repo_graph::parse_only(&dir).unwrap_or_else(|e| {
            eprintln!("error: {e}");
            std::process::exit(1)
        });
    });
    let mut stats = None;
    let cold = best(&mut || {
        let graph = repo_graph::Analyzer::new(&dir)
            .analyze()
            .unwrap_or_else(|e| {
                eprintln!("error: {e}");
                std::process::exit(1)
            });
        stats = Some(graph.stats());
    });
    let cache = tempfile::tempdir().unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1)
    });
    // Fill the on-disk cache, then measure fresh analyzers that start from it.
    let _ = repo_graph::Analyzer::new(&dir)
        .cache_dir(cache.path())
        .analyze();
    let warm = best(&mut || {
        let _ = repo_graph::Analyzer::new(&dir)
            .cache_dir(cache.path())
            .analyze();
    });
    // One file changed: append a comment to a module, re-analyse from the
    // cache, then restore the file. Done for the largest module (worst case:
    // its parse alone is the difference) and for one of median size.
    let targets: Vec<std::path::PathBuf> = repo_graph::Analyzer::new(&dir)
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
            let _ = repo_graph::Analyzer::new(&dir)
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
