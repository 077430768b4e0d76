//! Measures ranking on its own (analysis done once beforehand):
//! `cargo xtask bench importance` runs this. Usage: `measure_rank <DIR> [--runs N]`.

use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: measure_rank <DIR> [--runs N]");
        std::process::exit(2);
    };
    let runs: usize = match (args.next().as_deref(), args.next()) {
        (Some("--runs"), Some(n)) => n.parse().unwrap_or(5),
        _ => 5,
    };
    let started = Instant::now();
    let graph = match repo_graph::Analyzer::new(&dir).analyze() {
        Ok(graph) => graph,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::exit(1);
        }
    };
    let analysis = started.elapsed().as_secs_f64();
    let best = |ranker: &importance::Ranker| {
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                let ranking = ranker.rank(&graph);
                (t.elapsed().as_secs_f64(), ranking.commits_read)
            })
            .fold((f64::INFINITY, 0), |a, b| if b.0 < a.0 { b } else { a })
    };
    let (without_git, _) = best(&importance::Ranker::new().git(false));
    let (with_git, commits) = best(&importance::Ranker::new());
    println!(
        "{}",
        serde_json::json!({
            "dir": dir,
            "modules": graph.modules().len(),
            "analysis_s": analysis,
            "rank_without_git_s": without_git,
            "rank_with_git_s": with_git,
            "git_feature_s": with_git - without_git,
            "commits_read": commits,
        })
    );
}
