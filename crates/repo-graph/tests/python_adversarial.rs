//! Adversarial Python shapes that made the old resolver hang or blow up.
//! Each is analysed at size N and 4N; the resolution work counter (not
//! wall time) must grow linearly: `work(4N) / work(N) < 5`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/fixture.rs"]
mod fixture;

use repo_graph::{Analyzer, RepoGraph};

fn analyze(files: &[(String, String)]) -> RepoGraph {
    let dir = fixture::write_files(files);
    Analyzer::new(dir.path()).analyze().unwrap()
}

/// Builds the repository at `n` and `4n`, checks linear growth of the work
/// counter, and returns the larger graph.
fn linear(name: &str, n: usize, build: impl Fn(usize) -> Vec<(String, String)>) -> RepoGraph {
    let small = analyze(&build(n));
    let large = analyze(&build(4 * n));
    let (a, b) = (small.stats().resolve_work, large.stats().resolve_work);
    let ratio = b as f64 / a.max(1) as f64;
    println!(
        "{name}: work({n}) = {a}, work({}) = {b}, ratio {ratio:.2}",
        4 * n
    );
    assert!(
        ratio < 5.0,
        "{name}: work grew {ratio:.2}x from N to 4N ({a} -> {b})"
    );
    assert_eq!(large.stats().budget_exhausted, 0, "{name}: budget ran out");
    large
}

fn file(path: &str, text: String) -> Vec<(String, String)> {
    vec![(path.to_string(), text)]
}

fn callees(graph: &RepoGraph, caller: &str) -> Vec<String> {
    graph.calls_map().get(caller).cloned().unwrap_or_default()
}

/// SpeechBrain's `recipes/MEDIA/media_prepare.py`: one function rebinding
/// a name from its own previous value 40 times hung the old resolver
/// (exponential in the number of rebindings).
#[test]
fn rebinding_chain_of_replace_calls() {
    let graph = linear("s = s.replace(...)", 30, |n| {
        let mut text = String::from("def helper():\n    pass\n\ndef normalize(sentence):\n");
        for i in 0..n {
            text.push_str(&format!(
                "    sentence = sentence.replace(\"a{i}\", \"b\")\n"
            ));
        }
        text.push_str("    helper()\n    return sentence\n");
        file("media_prepare.py", text)
    });
    assert_eq!(
        callees(&graph, "media_prepare.normalize"),
        ["media_prepare.helper"]
    );
}

#[test]
fn ten_thousand_rebindings_in_one_function() {
    linear("x = x.f()", 2_500, |n| {
        let mut text = String::from(
            "class T:\n    def f(self):\n        return self\n\ndef run():\n    x = T()\n",
        );
        for _ in 0..n {
            text.push_str("    x = x.f()\n");
        }
        file("chain.py", text)
    });
}

#[test]
fn ring_of_aliases() {
    // Inside a loop every name reads the one before it, and the first reads
    // the last through the loop's back edge: a cycle of N aliases.
    let graph = linear("alias ring", 250, |n| {
        let mut text = String::from(
            "def target():\n    pass\n\ndef run():\n    a0 = target\n    for _ in range(2):\n",
        );
        for i in 1..n {
            text.push_str(&format!("        a{i} = a{}\n", i - 1));
        }
        text.push_str(&format!("        a0 = a{}\n", n - 1));
        text.push_str(&format!("    a{}()\n", n / 2));
        file("ring.py", text)
    });
    assert_eq!(callees(&graph, "ring.run"), ["ring.target"]);
}

#[test]
fn deep_inheritance_chain() {
    let graph = linear("inheritance chain", 250, |n| {
        let mut text = String::from("class C0:\n    def top(self):\n        pass\n");
        for i in 1..n {
            text.push_str(&format!("class C{i}(C{}):\n    pass\n", i - 1));
        }
        text.push_str(&format!("\ndef run():\n    C{}().top()\n", n - 1));
        file("chain.py", text)
    });
    // Past the MRO cap, the method at the top is still found from the bottom.
    let calls = callees(&graph, "chain.run");
    assert!(calls.contains(&"chain.C0.top".to_string()), "{calls:?}");
}

#[test]
fn modules_importing_each_other_in_a_cycle() {
    let graph = linear("import cycle", 125, |n| {
        (0..n)
            .map(|i| {
                let next = (i + 1) % n;
                (
                    format!("pkg/m{i}.py"),
                    format!("from pkg import m{next}\n\ndef f{i}():\n    m{next}.f{next}()\n"),
                )
            })
            .chain(std::iter::once((
                "pkg/__init__.py".to_string(),
                String::new(),
            )))
            .collect()
    });
    assert_eq!(callees(&graph, "pkg.m0.f0"), ["pkg.m1.f1"]);
}

#[test]
fn star_import_cycles() {
    let graph = linear("star-import cycle", 125, |n| {
        (0..n)
            .map(|i| {
                let next = (i + 1) % n;
                (
                    format!("s{i}.py"),
                    format!("from s{next} import *\n\ndef g{i}():\n    g{next}()\n"),
                )
            })
            .collect()
    });
    assert_eq!(callees(&graph, "s0.g0"), ["s1.g1"]);
}

#[test]
fn functions_returning_the_next() {
    let graph = linear("returned-function chain", 50, |n| {
        let mut text = String::new();
        for i in 0..n {
            text.push_str(&format!("def f{i}():\n    return f{}\n\n", i + 1));
        }
        text.push_str(&format!(
            "def f{n}():\n    return None\n\ndef run():\n    f0"
        ));
        text.push_str(&"()".repeat(n + 1));
        text.push('\n');
        file("ret.py", text)
    });
    let calls = callees(&graph, "ret.run");
    assert!(calls.contains(&"ret.f0".to_string()), "{calls:?}");
    assert!(calls.contains(&"ret.f40".to_string()), "{calls:?}");
}

#[test]
fn many_branches_rebinding_one_name() {
    // Every read sees many possible bindings: the reaching scan is capped.
    linear("branch rebinding", 500, |n| {
        let mut text = String::from("def a():\n    pass\n\ndef run(c):\n    x = a\n");
        for i in 0..n {
            text.push_str(&format!("    if c == {i}:\n        x = a\n    x()\n"));
        }
        file("branches.py", text)
    });
}

/// The step budget is the last guard: past it the solver stops, and the
/// call sites it had not finished are reported unresolved, not dropped.
#[test]
fn step_budget_stops_the_solver_and_reports_what_is_left() {
    let mut text = String::from(
        "class T:\n    def f(self):\n        return self\n\ndef run():\n    x = T()\n",
    );
    for _ in 0..2_000 {
        text.push_str("    x = x.f()\n");
    }
    let dir = fixture::write_files(&[("chain.py", text)]);
    let full = Analyzer::new(dir.path()).analyze().unwrap();
    assert_eq!(full.stats().budget_exhausted, 0);
    let cut = Analyzer::new(dir.path())
        .step_budget(5_000)
        .analyze()
        .unwrap();
    let stats = cut.stats();
    assert!(stats.budget_exhausted > 0, "{stats:?}");
    assert!(stats.resolve_work < full.stats().resolve_work);
    // Every call site is either an edge or an unresolved record.
    assert!(stats.unresolved_calls >= stats.budget_exhausted);
}

/// Shapes that stress extraction rather than resolution: lambdas and
/// comprehensions nested far past the conversion depth, `if` nested
/// thousands deep, and one huge tuple unpacking. Each finishes with linear
/// work, and the call at the bottom is still found.
#[test]
fn deeply_nested_expressions_and_blocks() {
    linear("nested lambdas", 100, |n| {
        let mut text = String::from("def g():\n    pass\n\nf = ");
        text.push_str(&"lambda: ".repeat(n));
        text.push_str("g()\n");
        file("lambdas.py", text)
    });
    linear("nested comprehensions", 100, |n| {
        let mut text = String::from("def g(x):\n    return x\n\nxs = ");
        for _ in 0..n {
            text.push_str("[g(y) for y in ");
        }
        text.push_str("[1]");
        text.push_str(&"]".repeat(n));
        text.push('\n');
        file("comprehensions.py", text)
    });
    // 97 levels at most: past 100 (CPython's limit) the lines are not
    // parsed at all (`MAX_INDENT`, which hostile_input.rs covers).
    let graph = linear("nested ifs", 24, |n| {
        let mut text = String::from("def g():\n    pass\n\ndef run(c):\n    h = g\n");
        for depth in 0..n {
            text.push_str(&"    ".repeat(depth + 1));
            text.push_str("if c:\n");
            text.push_str(&"    ".repeat(depth + 2));
            text.push_str("h = h\n");
        }
        text.push_str(&"    ".repeat(n + 1));
        text.push_str("h()\n");
        file("ifs.py", text)
    });
    assert_eq!(callees(&graph, "ifs.run"), ["ifs.g"]);
    linear("tuple unpacking", 2_500, |n| {
        let names: Vec<String> = (0..n).map(|i| format!("a{i}")).collect();
        let text = format!(
            "def g():\n    pass\n\ndef run():\n    {} = {}\n    a0()\n",
            names.join(", "),
            vec!["g"; n].join(", ")
        );
        file("unpack.py", text)
    });
}
