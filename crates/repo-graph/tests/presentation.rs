//! Snapshots of the per-language presentation (`src/lang/present.rs`) on
//! the fixture repositories: every class's skeleton in a fence named after
//! its language, and every function's declaration and outline.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use repo_graph::{Analyzer, EntityId, RepoGraph};

fn fixture(language: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(language)
        .join(name)
}

/// Every named class's skeleton, fenced, in qualified-name order.
fn skeletons(graph: &RepoGraph) -> String {
    let mut classes: Vec<_> = graph
        .class_ids()
        .zip(graph.classes())
        .filter(|(_, c)| !c.java().is_some_and(|j| j.anonymous))
        .map(|(id, c)| (c.qualname.as_str(), id))
        .collect();
    classes.sort_unstable();
    let mut out = String::new();
    for (qualname, id) in classes {
        let fence = graph.language_of(EntityId::Class(id)).fence();
        let _ = writeln!(
            out,
            "{qualname}\n```{fence}\n{}\n```\n",
            graph.class_skeleton(id)
        );
    }
    out
}

/// Every function's qualified name, declaration and outline, in
/// qualified-name order.
fn declarations(graph: &RepoGraph) -> String {
    let mut functions: Vec<_> = graph
        .function_ids()
        .zip(graph.functions())
        .map(|(id, f)| (f.qualname.as_str(), id))
        .collect();
    functions.sort_unstable();
    let mut out = String::new();
    for (qualname, id) in functions {
        let entity = EntityId::Function(id);
        let outline = graph.outline(entity, "body elided");
        let _ = writeln!(out, "{qualname}\n  {}", graph.declaration(entity));
        for (i, line) in outline.lines.iter().enumerate() {
            let mark = if i == outline.declaration { '>' } else { '|' };
            let _ = writeln!(out, "  {mark} {line}");
        }
    }
    out
}

macro_rules! presentation_test {
    ($language:ident, $name:ident) => {
        #[test]
        fn $name() {
            let graph = Analyzer::new(fixture(stringify!($language), stringify!($name)))
                .analyze()
                .unwrap();
            let name = concat!(stringify!($language), "_", stringify!($name));
            insta::assert_snapshot!(format!("{name}__skeletons"), skeletons(&graph));
            insta::assert_snapshot!(format!("{name}__declarations"), declarations(&graph));
        }
    };
}

presentation_test!(java, maven_layout);
presentation_test!(java, nested_and_anonymous);
presentation_test!(python, inheritance_mro);
presentation_test!(python, instances_and_annotations);

#[test]
fn fences_follow_the_language_in_a_mixed_repository() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.py"), "class A:\n    pass\n").unwrap();
    std::fs::write(dir.path().join("B.java"), "class B {}\n").unwrap();
    let graph = Analyzer::new(dir.path()).analyze().unwrap();
    let fence = |q: &str| graph.language_of(graph.entity(q).unwrap()).fence();
    assert_eq!(fence("a.A"), "python");
    assert_eq!(fence("B"), "java");
    assert_eq!(fence("a"), "python");
    assert_eq!(fence("B.java"), "java");
}

#[test]
fn java_skeletons_show_enum_constants_records_and_interfaces() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Kinds.java"),
        "package k;\n\
         public enum Color { RED, GREEN { void shade() {} }, @Deprecated BLUE;\n  private static Color fallback;\n  Color next() { return RED; }\n}\n\
         record Pair<A, B>(A first, B second) {\n  static int count;\n  A left() { return first; }\n}\n\
         interface Store<T> extends AutoCloseable {\n  /** Saves it. */\n  void save(T item) throws java.io.IOException;\n  default int size() { return 0; }\n  class Nested {}\n}\n",
    )
    .unwrap();
    let graph = Analyzer::new(dir.path()).analyze().unwrap();
    let skeleton = |q: &str| match graph.entity(q) {
        Some(EntityId::Class(c)) => graph.class_skeleton(c),
        other => panic!("{q}: {other:?}"),
    };
    assert_eq!(
        skeleton("k.Color"),
        "public enum Color {\n    RED, GREEN, @Deprecated BLUE;\n    private static Color fallback;\n    Color next();  // body elided: lines 4-4\n}"
    );
    assert_eq!(
        skeleton("k.Pair"),
        "record Pair<A, B>(A first, B second) {\n    static int count;\n    A left();  // body elided: lines 8-8\n}"
    );
    assert_eq!(
        skeleton("k.Store"),
        "interface Store<T> extends AutoCloseable {\n    void save(T item) throws java.io.IOException;  // Saves it.\n    default int size();  // body elided: lines 13-13\n    class Nested { ... }  // nested class elided: lines 14-14\n}"
    );
}
