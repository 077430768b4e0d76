//! Times the MCP server on a real repository, driven by rmcp's client over
//! an in-process pipe: the first `overview` (which analyses), warm ones,
//! and the resident memory after many mixed calls.
//!
//! ```text
//! cargo run --release -p repo-mcp --example measure_mcp -- target/corpus/Django-5.1.4 [CALLS]
//! ```

use std::time::Instant;

use repo_mcp::{McpConfig, McpServer};
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

fn call(name: &'static str, arguments: serde_json::Value) -> CallToolRequestParams {
    let map = match arguments {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    CallToolRequestParams::new(name).with_arguments(map)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let repo = args.next().ok_or("usage: measure REPO [CALLS]")?;
    let calls: usize = args.next().map_or(Ok(1_000), |n| n.parse())?;
    let server = McpServer::new(McpConfig::builder().repository(&repo).build()?).await?;
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let serving = server.clone();
    tokio::spawn(async move {
        if let Ok(running) = serving.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await?;
    let analyzer = repo_graph::Analyzer::new(&repo);
    let started = Instant::now();
    let stamp = analyzer.stamp()?;
    let walk = started.elapsed();
    let overview = || {
        call(
            "overview",
            json!({"task": "render a template with a context", "budget": 8000}),
        )
    };
    let started = Instant::now();
    client.call_tool(overview()).await?;
    let first = started.elapsed();
    let mut warm = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        client.call_tool(overview()).await?;
        warm.push(started.elapsed().as_secs_f64());
    }
    warm.sort_by(f64::total_cmp);
    let rss_before = rss_kib();
    let mixed = [
        call("search_code", json!({"query": "template render"})),
        call("find_callers", json!({"name": "render_to_string"})),
        call("view_code", json!({"target": "django.template.loader"})),
        call(
            "module_dependencies",
            json!({"module": "django.template.loader", "direction": "imports"}),
        ),
        call("routes", json!({"filter": "admin"})),
        call("rank", json!({"top": 10})),
    ];
    let started = Instant::now();
    for i in 0..calls {
        client.call_tool(mixed[i % mixed.len()].clone()).await?;
    }
    let mixed_time = started.elapsed();
    let rss_after = rss_kib();
    let stats = server.stats();
    println!("repository: {repo}");
    println!(
        "freshness check (the stamp's walk, {} source files): {:.1} ms",
        stamp.files(),
        walk.as_secs_f64() * 1000.0
    );
    println!(
        "first overview (analysis included): {:.3} s",
        first.as_secs_f64()
    );
    println!(
        "warm overview: median {:.3} s, min {:.3} s, max {:.3} s (20 calls)",
        warm[warm.len() / 2],
        warm[0],
        warm[warm.len() - 1]
    );
    println!(
        "{calls} mixed calls: {:.1} s ({:.1} ms each); RSS {} MiB before, {} MiB after",
        mixed_time.as_secs_f64(),
        mixed_time.as_secs_f64() * 1000.0 / calls.max(1) as f64,
        rss_before / 1024,
        rss_after / 1024
    );
    println!(
        "server: {} calls, {} analyses, {} freshness checks",
        stats.calls, stats.analyses, stats.checks
    );
    client.cancel().await?;
    Ok(())
}
