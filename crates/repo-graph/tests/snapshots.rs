//! Snapshots of the `stats`, `tree` and `calls` views of every fixture
//! repository under `testdata/python/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use repo_graph::{Analyzer, RepoGraph};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/python")
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

fn snapshot_all(name: &str, graph: &RepoGraph) {
    insta::assert_json_snapshot!(format!("{name}__stats"), stats_json(graph));
    insta::assert_snapshot!(format!("{name}__tree"), graph.tree_text());
    insta::assert_json_snapshot!(format!("{name}__calls"), graph.calls_map());
}

macro_rules! fixture_test {
    ($name:ident) => {
        #[test]
        fn $name() {
            let graph = Analyzer::new(fixture(stringify!($name))).analyze().unwrap();
            snapshot_all(stringify!($name), &graph);
        }
    };
}

fixture_test!(relative_import_reexport);
fixture_test!(inheritance_mro);
fixture_test!(instances_and_annotations);
fixture_test!(decorators_and_callbacks);
fixture_test!(layouts_and_fallbacks);

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The messy fixture plus what git cannot carry: symlink loops, a link out of
/// the root, a broken link and an oversized file.
#[test]
fn messy_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("messy_inputs");
    copy_tree(&fixture("messy_inputs"), &root);
    std::os::unix::fs::symlink(".", root.join("pkg/loop")).unwrap();
    std::os::unix::fs::symlink("..", root.join("pkg/up")).unwrap();
    std::os::unix::fs::symlink("/usr", root.join("outside")).unwrap();
    std::os::unix::fs::symlink("missing.py", root.join("dangling.py")).unwrap();
    std::os::unix::fs::symlink("chain_b", root.join("chain_a")).unwrap();
    std::os::unix::fs::symlink("chain_a", root.join("chain_b")).unwrap();
    std::fs::write(root.join("huge.py"), "x = 1\n".repeat(2_000)).unwrap();
    let graph = Analyzer::new(&root)
        .max_file_size(10_000)
        .analyze()
        .unwrap();
    snapshot_all("messy_inputs", &graph);
    let skipped: Vec<(String, &str)> = graph
        .skipped()
        .iter()
        .map(|s| (s.path.clone(), s.reason.as_str()))
        .collect();
    insta::assert_debug_snapshot!("messy_inputs__skipped", skipped);
}

#[test]
fn whole_graph_json_schema() {
    let graph = Analyzer::new(fixture("inheritance_mro")).analyze().unwrap();
    let mut doc = graph.to_document();
    doc.root = "[root]".into();
    doc.stats.elapsed_ms = 0;
    doc.stats.phases = repo_graph::Phases::default();
    doc.stats.resolve_work = 0;
    doc.stats.fact_units = 0;
    doc.stats.memory_estimate_bytes = 0;
    doc.stats.memory_ceiling_bytes = 0;
    insta::assert_json_snapshot!("inheritance_mro__json", doc);
    let text = serde_json::to_string(&doc).unwrap();
    let back: repo_graph::GraphDocument = serde_json::from_str(&text).unwrap();
    assert_eq!(back, doc);
}

#[test]
fn dot_output() {
    let graph = Analyzer::new(fixture("relative_import_reexport"))
        .analyze()
        .unwrap();
    insta::assert_snapshot!("relative_import_reexport__dot", graph.dot());
}
