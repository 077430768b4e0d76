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

    #[test]
    fn arbitrary_notebooks_never_panic(text in ".{0,400}") {
        let _ = analyse_one("fuzz.ipynb", text.as_bytes());
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
