//! Snapshots of the `stats`, `tree` and `calls` views of every fixture
//! repository under `testdata/java/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use repo_graph::{Analyzer, RepoGraph};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/java")
        .join(name)
}

fn stats_json(graph: &RepoGraph) -> serde_json::Value {
    let mut stats = serde_json::to_value(graph.stats()).unwrap();
    stats["elapsed_ms"] = serde_json::Value::from("[elapsed]");
    stats["phases"] = serde_json::Value::from("[phases]");
    // The work count changes with every change to resolution; tests on it assert ratios.
    stats["resolve_work"] = serde_json::Value::from("[work]");
    // So do fact units and the estimate built on them; the ceiling
    // depends on the machine. Budget tests assert on them.
    stats["fact_units"] = serde_json::Value::from("[units]");
    stats["memory_estimate_bytes"] = serde_json::Value::from("[estimate]");
    stats["memory_ceiling_bytes"] = serde_json::Value::from("[ceiling]");
    stats
}

macro_rules! fixture_test {
    ($name:ident) => {
        #[test]
        fn $name() {
            let graph = Analyzer::new(fixture(stringify!($name))).analyze().unwrap();
            let name = concat!("java_", stringify!($name));
            insta::assert_json_snapshot!(format!("{name}__stats"), stats_json(&graph));
            insta::assert_snapshot!(format!("{name}__tree"), graph.tree_text());
            insta::assert_json_snapshot!(format!("{name}__calls"), graph.calls_map());
        }
    };
}

fixture_test!(maven_layout);
fixture_test!(nested_and_anonymous);
fixture_test!(syntax_errors);

/// The whole document for a small Java service: modules, classes with their
/// `java` details, functions, imports, edges and routes.
#[test]
fn whole_graph_json_schema() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/routes/micronaut");
    let graph = Analyzer::new(dir).analyze().unwrap();
    let mut doc = graph.to_document();
    doc.root = "[root]".into();
    doc.stats.elapsed_ms = 0;
    doc.stats.phases = repo_graph::Phases::default();
    doc.stats.resolve_work = 0;
    doc.stats.fact_units = 0;
    doc.stats.memory_estimate_bytes = 0;
    doc.stats.memory_ceiling_bytes = 0;
    insta::assert_json_snapshot!("java_micronaut__json", doc);
    let text = serde_json::to_string(&doc).unwrap();
    let back: repo_graph::GraphDocument = serde_json::from_str(&text).unwrap();
    assert_eq!(back, doc);
}
