//! The library's surface: the edge lists stand for the petgraph views,
//! ids come from the graph and are checked, and typed statistics keep
//! their JSON names.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/fixture.rs"]
mod fixture;

use repo_graph::{Analyzer, EntityId, RepoGraph, SkipReason};

fn graph(fixture: &str) -> (tempfile::TempDir, RepoGraph) {
    let dir = fixture::write(fixture);
    let graph = Analyzer::new(dir.path()).analyze().unwrap();
    (dir, graph)
}

const PROGRAM: &str = r#"
    //- a.py
    import b

    def f():
        b.g()
        b.g()

    f()

    //- b.py
    class K:
        pass

    def g():
        return K()

    //- notes.txt
    not source
    "#;

#[cfg(feature = "petgraph-api")]
#[test]
fn the_petgraph_views_hold_the_same_edges_as_the_edge_lists() {
    use petgraph::visit::EdgeRef;
    let (_dir, g) = graph(PROGRAM);
    let fcg = g.call_graph();
    let mut from_view: Vec<(EntityId, EntityId, u32)> = fcg
        .edge_references()
        .map(|e| (fcg[e.source()], fcg[e.target()], *e.weight()))
        .collect();
    let mut from_list: Vec<(EntityId, EntityId, u32)> = g
        .call_edges()
        .into_iter()
        .map(|e| (e.caller, e.callee, e.call_sites))
        .collect();
    from_view.sort();
    from_list.sort();
    assert_eq!(from_view, from_list);
    assert!(!from_list.is_empty());
    let mdg = g.dependency_graph();
    let view: Vec<_> = mdg
        .edge_references()
        .map(|e| (mdg[e.source()], mdg[e.target()], e.weight().imports))
        .collect();
    let list: Vec<_> = g
        .module_edges()
        .into_iter()
        .map(|e| (e.from, e.to, e.imports))
        .collect();
    assert_eq!(view, list);
}

#[test]
fn the_edge_lists_carry_call_sites_and_couplings() {
    let (_dir, g) = graph(PROGRAM);
    let f = g.entity("a.f").unwrap();
    let b_g = g.entity("b.g").unwrap();
    let edge = g
        .call_edges()
        .into_iter()
        .find(|e| e.caller == f && e.callee == b_g)
        .expect("a.f calls b.g");
    assert_eq!(edge.call_sites, 2);
    let (a, b) = (
        g.module_by_name("a").unwrap(),
        g.module_by_name("b").unwrap(),
    );
    let dependency = g
        .module_edges()
        .into_iter()
        .find(|e| e.from == a && e.to == b)
        .expect("a imports b");
    assert_eq!((dependency.imports, dependency.calls), (1, 2));
}

#[test]
fn ids_come_from_the_graph_and_a_foreign_one_is_none() {
    let (_dir, small) = graph(
        r#"
        //- m.py
        def only():
            pass
        "#,
    );
    let (_dir2, large) = graph(PROGRAM);
    assert_eq!(large.module_ids().len(), large.modules().len());
    for id in large.module_ids() {
        assert_eq!(
            large.qualname(EntityId::Module(id)),
            Some(large.module(id).unwrap().name.as_str())
        );
    }
    for id in large.function_ids() {
        assert!(large.qualname(EntityId::Function(id)).is_some());
    }
    // `b.K` is the only class of the large graph; the small one has none.
    let class = large.class_ids().next().unwrap();
    assert_eq!(large.qualname(EntityId::Class(class)), Some("b.K"));
    assert_eq!(small.qualname(EntityId::Class(class)), None);
    assert!(small.class(class).is_none());
}

#[test]
fn typed_statistics_keep_their_json_names() {
    let (_dir, g) = graph(PROGRAM);
    let stats = g.stats();
    assert_eq!(stats.skipped[&SkipReason::NotSource], 1);
    let json = serde_json::to_value(&stats).unwrap();
    assert_eq!(json["skipped"]["not_source"], 1);
    let back: repo_graph::Stats = serde_json::from_value(json).unwrap();
    assert_eq!(back, stats);
}

#[test]
fn the_phases_account_for_no_more_than_the_whole_run() {
    let (_dir, g) = graph(PROGRAM);
    let stats = g.stats();
    let p = stats.phases;
    let sum = p.walk_ms + p.files_ms + p.resolve_ms + p.assemble_ms;
    assert!(
        sum <= stats.elapsed_ms,
        "{p:?} against {} ms",
        stats.elapsed_ms
    );
    let json = serde_json::to_value(&stats).unwrap();
    for key in ["walk_ms", "files_ms", "resolve_ms", "assemble_ms"] {
        assert!(json["phases"][key].is_u64(), "{key}");
    }
}
