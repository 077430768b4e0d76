//! Measures the initial context (after analysis and ranking) and a code view
//! of the largest module: `cargo xtask bench context` runs this.
//! Usage: `measure_context <DIR> [--runs N]`.

use std::time::Instant;

use context_pack::select::{SelectOptions, code};
use context_pack::{ContextBuilder, TokenCounter};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: measure_context <DIR> [--runs N]");
        std::process::exit(2);
    };
    let runs: usize = match (args.next().as_deref(), args.next()) {
        (Some("--runs"), Some(n)) => n.parse().unwrap_or(5),
        _ => 5,
    };
    let fail = |e: &dyn std::fmt::Display| -> ! {
        eprintln!("error: {e}");
        std::process::exit(1)
    };
    let graph = repo_graph::Analyzer::new(&dir)
        .analyze()
        .unwrap_or_else(|e| fail(&e));
    let ranking = importance::Ranker::new().rank(&graph);
    let counter = TokenCounter::new(Default::default()).unwrap_or_else(|e| fail(&e));
    let best = |f: &mut dyn FnMut()| {
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let mut tokens = 0;
    let context_s = best(&mut || {
        let context = ContextBuilder::new(&graph, &ranking)
            .task("send an email with an attachment")
            .build()
            .unwrap_or_else(|e| fail(&e));
        tokens = context.total_tokens;
    });
    let largest = graph
        .modules()
        .iter()
        .max_by_key(|m| m.line_count)
        .map(|m| (m.path.clone(), m.line_count));
    let (path, lines) = largest.unwrap_or_default();
    let options = SelectOptions::default();
    let view_s = best(&mut || {
        let _ = code(
            &graph,
            &path,
            Some("test login redirect"),
            &counter,
            &options,
        );
    });
    println!(
        "{}",
        serde_json::json!({
            "dir": dir,
            "context_s": context_s,
            "context_tokens": tokens,
            "code_view_file": path,
            "code_view_lines": lines,
            "code_view_s": view_s,
        })
    );
}
