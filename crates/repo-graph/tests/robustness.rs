//! Nothing in a file's bytes can make the analysis panic: arbitrary bytes,
//! truncated real source, and pathological nesting.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use repo_graph::Analyzer;

fn analyse_one(name: &str, bytes: &[u8]) -> repo_graph::RepoGraph {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), bytes).unwrap();
    let graph = Analyzer::new(dir.path()).analyze().unwrap();
    // Every view must render as well.
    let _ = graph.tree_text();
    let _ = graph.calls_map();
    let _ = serde_json::to_string(&graph.to_document()).unwrap();
    graph
}

/// One notebook cell: its type and its source lines.
#[derive(Debug, Clone)]
struct Cell {
    kind: &'static str,
    lines: Vec<String>,
    /// `source` as one string (true) or as a list of lines, both valid nbformat.
    joined: bool,
}

fn cell(source: impl Strategy<Value = Vec<String>>) -> impl Strategy<Value = Cell> {
    (
        prop_oneof![Just("code"), Just("markdown"), Just("raw")],
        source,
        any::<bool>(),
    )
        .prop_map(|(kind, lines, joined)| Cell {
            kind,
            lines,
            joined,
        })
}

/// Lines of code meant to break a reader: arbitrary text, magics, shell
/// escapes, unclosed brackets and strings, deep nesting, NULs, odd indents.
fn hostile_source() -> impl Strategy<Value = Vec<String>> {
    let line = prop_oneof![
        ".{0,60}",
        Just("%%time".to_owned()),
        Just("!pip install x".to_owned()),
        Just("  %matplotlib inline".to_owned()),
        Just("def f(:".to_owned()),
        Just("x = (((((".to_owned()),
        Just("s = '''unclosed".to_owned()),
        Just("\u{0}\u{0}".to_owned()),
        Just("\t\tclass C:".to_owned()),
        (1usize..400).prop_map(|n| format!("y = {}{}", "[".repeat(n), "]".repeat(n))),
        (1usize..60).prop_map(|n| format!("{}pass", "    ".repeat(n))),
    ];
    proptest::collection::vec(line, 0..8)
}

/// Well-formed cells: a function named after the cell's position (added by
/// [`notebook`]) among magics, shell escapes and non-ASCII text.
fn clean_source() -> impl Strategy<Value = Vec<String>> {
    let line = prop_oneof![
        Just("%time x = 1".to_owned()),
        Just("!ls -la".to_owned()),
        Just("# ünïcödé 注释 🦀".to_owned()),
        Just("s = \"\\u00e9 \\n\"".to_owned()),
        Just(String::new()),
        Just("import os".to_owned()),
    ];
    proptest::collection::vec(line, 0..5)
}

/// The notebook's JSON: every cell gets `def cell_<i>(): pass` after its
/// lines, so the test knows which functions each cell type should yield.
fn notebook(cells: &[Cell]) -> Vec<u8> {
    let cells: Vec<serde_json::Value> = cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut lines: Vec<String> = c.lines.iter().map(|l| format!("{l}\n")).collect();
            lines.push(format!("def cell_{i}():\n"));
            lines.push("    pass".to_owned());
            let source = if c.joined {
                serde_json::Value::String(lines.concat())
            } else {
                serde_json::json!(lines)
            };
            serde_json::json!({"cell_type": c.kind, "metadata": {}, "source": source})
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({
        "cells": cells,
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }))
    .unwrap()
}

const REAL: &str = include_str!("../../../testdata/python/instances_and_annotations/engine.py");
const REAL_JAVA: &str =
    include_str!("../../../testdata/java/nested_and_anonymous/shapes/Shapes.java");

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let graph = analyse_one("fuzz.py", &bytes);
        prop_assert_eq!(graph.stats().files_seen, 1);
    }

    /// Well-formed notebooks (so the analysis gets past the JSON) whose
    /// cells hold hostile code: arbitrary text, magics, unclosed brackets,
    /// deep nesting, NULs, sources as strings or as lists of lines.
    #[test]
    fn notebooks_with_hostile_cells_never_panic(cells in proptest::collection::vec(cell(hostile_source()), 0..12)) {
        let graph = analyse_one("fuzz.ipynb", &notebook(&cells));
        prop_assert_eq!(graph.stats().modules, 1);
    }

    /// The code cells, and only they, are the notebook's module: a function
    /// defined in a code cell is found, one written in a markdown or raw
    /// cell is not, whatever magics and shapes of `source` surround them.
    #[test]
    fn the_code_cells_of_a_notebook_are_its_module(cells in proptest::collection::vec(cell(clean_source()), 0..12)) {
        let graph = analyse_one("clean.ipynb", &notebook(&cells));
        prop_assert_eq!(graph.stats().modules, 1);
        let mut found: Vec<&str> = graph.functions().iter().map(|f| f.name.as_str()).collect();
        found.sort_unstable();
        let mut expected: Vec<String> = cells
            .iter()
            .enumerate()
            .filter(|(_, c)| c.kind == "code")
            .map(|(i, _)| format!("cell_{i}"))
            .collect();
        expected.sort_unstable();
        prop_assert_eq!(found, expected);
    }

    #[test]
    fn truncated_real_files_never_panic(cut in 0..REAL.len()) {
        let graph = analyse_one("cut.py", &REAL.as_bytes()[..cut]);
        prop_assert_eq!(graph.stats().modules, 1);
    }

    #[test]
    fn spliced_real_files_never_panic(a in 0..REAL.len(), b in 0..REAL.len(), junk in ".{0,40}") {
        let (a, b) = (a.min(b), a.max(b));
        let mut text = REAL.as_bytes()[..a].to_vec();
        text.extend_from_slice(junk.as_bytes());
        text.extend_from_slice(&REAL.as_bytes()[b..]);
        let _ = analyse_one("splice.py", &text);
    }

    #[test]
    fn arbitrary_bytes_as_java_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let graph = analyse_one("Fuzz.java", &bytes);
        prop_assert_eq!(graph.stats().files_seen, 1);
    }

    #[test]
    fn truncated_real_java_never_panics(cut in 0..REAL_JAVA.len()) {
        let graph = analyse_one("Cut.java", &REAL_JAVA.as_bytes()[..cut]);
        prop_assert_eq!(graph.stats().modules, 1);
    }

    #[test]
    fn spliced_real_java_never_panics(a in 0..REAL_JAVA.len(), b in 0..REAL_JAVA.len(), junk in ".{0,40}") {
        let (a, b) = (a.min(b), a.max(b));
        let mut text = REAL_JAVA.as_bytes()[..a].to_vec();
        text.extend_from_slice(junk.as_bytes());
        text.extend_from_slice(&REAL_JAVA.as_bytes()[b..]);
        let _ = analyse_one("Splice.java", &text);
    }
}

#[test]
fn pathological_nesting() {
    let deep_defs: String = (0..300)
        .map(|i| format!("{}def f{i}():\n", " ".repeat(i)))
        .collect::<String>()
        + &" ".repeat(300)
        + "pass\n";
    let graph = analyse_one("deep.py", deep_defs.as_bytes());
    assert!(graph.stats().functions >= 100);
    let parens = format!("x = {}1{}\n", "(".repeat(100_000), ")".repeat(100_000));
    let _ = analyse_one("parens.py", parens.as_bytes());
    let calls = format!("f{}\n", "()".repeat(100_000));
    let _ = analyse_one("calls.py", calls.as_bytes());
    let attrs = format!("a{}()\n", ".b".repeat(100_000));
    let _ = analyse_one("attrs.py", attrs.as_bytes());
}

#[test]
fn pathological_java_nesting() {
    // Nothing nested deeper than MAX_NESTING braces is parsed (the file is
    // analysed in part, hostile_input.rs), so the call at the bottom is
    // gone; entities stop nesting at a fixed depth of their own.
    let deep_classes = "class A { ".repeat(3_000) + "void f() { g(); }" + &"}".repeat(3_000);
    let graph = analyse_one("Deep.java", deep_classes.as_bytes());
    let classes = graph.stats().classes;
    assert!((100..=200).contains(&classes), "{classes}");
    assert_eq!(graph.partial().len(), 1);
    assert_eq!(graph.unresolved_calls().len(), 0);
    let body = |inner: &str| format!("class B {{ void f() {{ {inner} }} }}\n");
    let parens = body(&format!(
        "int x = {}1{};",
        "(".repeat(50_000),
        ")".repeat(50_000)
    ));
    let _ = analyse_one("Parens.java", parens.as_bytes());
    let chain = body(&format!("a{};", ".b()".repeat(50_000)));
    let _ = analyse_one("Chain.java", chain.as_bytes());
    let lambdas = body(&format!(
        "run({}x{});",
        "() -> run(".repeat(20_000),
        ")".repeat(20_000)
    ));
    let _ = analyse_one("Lambdas.java", lambdas.as_bytes());
    let blocks = body(&format!("{}{}", "{ ".repeat(50_000), "}".repeat(50_000)));
    let _ = analyse_one("Blocks.java", blocks.as_bytes());
    let anonymous = body(&format!(
        "{}{}",
        "new Object() { void g() { ".repeat(5_000),
        "} };".repeat(5_000)
    ));
    let _ = analyse_one("Anonymous.java", anonymous.as_bytes());
}
