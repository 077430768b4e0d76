//! Bounded cost of Java resolution on hostile shapes.
//!
//! Each fixture is generated at a size N and at 4N, and the resolution work
//! counter (`Stats::resolve_work`, machine-independent, unlike wall time)
//! must grow less than 5x: linearly, with room for logarithmic factors.
//! Each fixture also checks that the analysis produced the edges it should,
//! so a bound that silently gave up would fail the test.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/fixture.rs"]
mod fixture;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use repo_graph::{Analyzer, Language, RepoGraph};

/// Files of a generated repository: (path, text).
type Files = Vec<(String, String)>;

fn analyze(files: &Files) -> RepoGraph {
    let dir = fixture::write_files(files);
    Analyzer::new(dir.path())
        .languages([Language::Java])
        .analyze()
        .unwrap()
}

/// Builds the fixture at `n` and `4n`, checks both graphs, asserts linear
/// growth of the work counter, and returns the two work counts.
fn linear(
    name: &str,
    n: usize,
    build: impl Fn(usize) -> Files,
    check: impl Fn(usize, &RepoGraph),
) -> (u64, u64) {
    let mut work = Vec::new();
    for size in [n, 4 * n] {
        let graph = analyze(&build(size));
        check(size, &graph);
        work.push(graph.stats().resolve_work);
    }
    let (small, large) = (work[0], work[1]);
    let ratio = large as f64 / small as f64;
    eprintln!(
        "{name}: work({n}) = {small}, work({}) = {large}, ratio {ratio:.2}",
        4 * n
    );
    assert!(small > 0, "{name}: no work counted");
    assert!(
        ratio < 5.0,
        "{name}: work grew {ratio:.2}x from N={n} to 4N (work {small} -> {large})"
    );
    (small, large)
}

fn callees<'a>(map: &'a BTreeMap<String, Vec<String>>, caller: &str) -> Vec<&'a str> {
    map.get(caller)
        .unwrap_or_else(|| panic!("{caller} has no calls"))
        .iter()
        .map(String::as_str)
        .collect()
}

fn calls(map: &BTreeMap<String, Vec<String>>, caller: &str, callee: &str) -> bool {
    map.get(caller)
        .is_some_and(|targets| targets.iter().any(|t| t == callee))
}

/// `C0 extends C1 extends ... extends C{n-1}`, one class per file; the top
/// declares `top()`, a field and a member type. Every class calls `top()`
/// unqualified, and `Main` calls it through the deepest subclass, reads the
/// field through it and names the member type through it.
fn inheritance_chain(n: usize) -> Files {
    let mut files = Vec::new();
    for i in 0..n - 1 {
        files.push((
            format!("p/C{i}.java"),
            format!(
                "package p;\npublic class C{i} extends C{} {{\n  void m{i}() {{ top(); }}\n}}\n",
                i + 1
            ),
        ));
    }
    let top = n - 1;
    files.push((
        format!("p/C{top}.java"),
        format!(
            "package p;\npublic class C{top} {{\n  public Node node;\n  public void top() {{}}\n  public static class Node {{ public void hit() {{}} }}\n}}\n"
        ),
    ));
    // Every level's own method, called through the deepest subclass: each
    // name is looked up once, so memoising by name does not help.
    let mut all = String::new();
    for i in 0..n - 1 {
        writeln!(all, "    c.m{i}();").unwrap();
    }
    files.push((
        "p/Main.java".to_string(),
        format!(
            "package p;\nclass Main {{\n  void run() {{\n    C0 c = new C0();\n    c.top();\n    c.node.hit();\n    C0.Node n = new C0.Node();\n    n.hit();\n  }}\n  void all(C0 c) {{\n{all}  }}\n}}\n"
        ),
    ));
    files
}

#[test]
fn inheritance_chain_is_linear() {
    linear("inheritance chain", 1000, inheritance_chain, |n, graph| {
        let map = graph.calls_map();
        let top = format!("p.C{}.top", n - 1);
        let hit = format!("p.C{}.Node.hit", n - 1);
        let run = callees(&map, "p.Main.run");
        assert!(run.contains(&top.as_str()), "{run:?}");
        assert_eq!(run.iter().filter(|c| **c == hit).count(), 1, "{run:?}");
        for i in [0, n / 2, n - 2] {
            assert_eq!(callees(&map, &format!("p.C{i}.m{i}")), [top.as_str()]);
        }
        assert_eq!(callees(&map, "p.Main.all").len(), n - 1);
        assert!(calls(
            &map,
            "p.Main.all",
            &format!("p.C{}.m{}", n - 2, n - 2)
        ));
        // The graph's MRO is cut at its documented bound, the chain is not.
        let deepest = graph.entity("p.C0").unwrap();
        let repo_graph::EntityId::Class(deepest) = deepest else {
            panic!("p.C0 is not a class")
        };
        assert_eq!(graph.mro(deepest).len(), 128.min(n));
    });
}

/// `A0 extends A1 extends ... extends A{n-1} extends A0`: a cycle, which
/// javac rejects but a repository can hold. Each class calls a method of
/// the last.
fn inheritance_cycle(n: usize) -> Files {
    (0..n)
        .map(|i| {
            let body = if i == n - 1 {
                "  void last() {}\n".to_string()
            } else {
                format!("  void m{i}() {{ last(); }}\n")
            };
            (
                format!("p/A{i}.java"),
                format!(
                    "package p;\nclass A{i} extends A{} {{\n{body}}}\n",
                    (i + 1) % n
                ),
            )
        })
        .collect()
}

#[test]
fn inheritance_cycles_are_linear() {
    linear("inheritance cycle", 1000, inheritance_cycle, |n, graph| {
        let map = graph.calls_map();
        let last = format!("p.A{}.last", n - 1);
        for i in [0, n / 2, n - 2] {
            assert_eq!(callees(&map, &format!("p.A{i}.m{i}")), [last.as_str()]);
        }
    });
}

/// Stacked diamonds (`A{l}` and `B{l}` both extend `A{l+1}` and `B{l+1}`:
/// 2^(n/2) paths from the bottom to the top) and one wide diamond (`Wide`
/// extends `W0..W{n-1}`, each of which extends `Root`); `n / 2` classes
/// implement each.
fn interface_diamonds(n: usize) -> Files {
    let levels = n / 2;
    let mut files = Vec::new();
    for l in 0..levels {
        for side in ["A", "B"] {
            let extends = if l + 1 < levels {
                format!(" extends A{}, B{}", l + 1, l + 1)
            } else {
                String::new()
            };
            files.push((
                format!("d/{side}{l}.java"),
                format!("package d;\npublic interface {side}{l}{extends} {{\n  default void {side}{l}m() {{}}\n}}\n"),
            ));
        }
    }
    files.push((
        "d/Root.java".to_string(),
        "package d;\npublic interface Root {\n  default void root() {}\n}\n".to_string(),
    ));
    let mut wide = String::from("package d;\npublic interface Wide extends ");
    for i in 0..n {
        if i > 0 {
            wide.push_str(", ");
        }
        write!(wide, "W{i}").unwrap();
        files.push((
            format!("d/W{i}.java"),
            format!("package d;\npublic interface W{i} extends Root {{\n  default void w{i}() {{}}\n}}\n"),
        ));
    }
    wide.push_str(" {}\n");
    files.push(("d/Wide.java".to_string(), wide));
    let top = levels - 1;
    for i in 0..n / 2 {
        files.push((
            format!("d/X{i}.java"),
            format!(
                "package d;\npublic class X{i} implements A0 {{\n  void run() {{ A0m(); A1m(); B2m(); A{top}m(); }}\n}}\n"
            ),
        ));
        files.push((
            format!("d/Y{i}.java"),
            format!(
                "package d;\npublic class Y{i} implements Wide {{\n  void run() {{ w0(); w{}(); root(); }}\n}}\n",
                n - 1
            ),
        ));
    }
    files
}

#[test]
fn interface_diamonds_are_linear() {
    linear(
        "interface diamonds",
        1000,
        interface_diamonds,
        |n, graph| {
            let map = graph.calls_map();
            for i in [0, n / 2 - 1] {
                assert_eq!(
                    callees(&map, &format!("d.X{i}.run")),
                    ["d.A0.A0m", "d.A1.A1m", "d.B2.B2m"]
                );
                assert_eq!(callees(&map, &format!("d.Y{i}.run")), ["d.W0.w0"]);
            }
            // Past MAX_MRO (128) supertypes, interfaces are not searched: the
            // top of the ladder, the last of the wide interfaces and the root
            // they share stay unresolved (with a warning), never wrongly bound.
            let unresolved: Vec<&str> = graph
                .unresolved_calls()
                .iter()
                .filter(|u| graph.qualname(u.caller) == Some("d.Y0.run"))
                .map(|u| u.callee.as_str())
                .collect();
            assert_eq!(unresolved, [format!("w{}", n - 1).as_str(), "root"]);
        },
    );
}

/// `n` compilation units in `n` packages whose imports form one cycle:
/// `U{i}` imports `U{i+1}` (single-type and static) and calls it both ways.
fn import_cycle(n: usize) -> Files {
    (0..n)
        .map(|i| {
            let j = (i + 1) % n;
            (
                format!("p{i}/U{i}.java"),
                format!(
                    "package p{i};\nimport p{j}.U{j};\nimport static p{j}.U{j}.g{j};\npublic class U{i} {{\n  public static void f{i}() {{ U{j}.f{j}(); }}\n  public static void g{i}() {{ g{j}(); }}\n}}\n"
                ),
            )
        })
        .collect()
}

#[test]
fn import_cycle_is_linear() {
    linear("import cycle", 500, import_cycle, |n, graph| {
        let map = graph.calls_map();
        for i in [0, n / 2, n - 1] {
            let j = (i + 1) % n;
            assert_eq!(
                callees(&map, &format!("p{i}.U{i}.f{i}")),
                [format!("p{j}.U{j}.f{j}")]
            );
            assert_eq!(
                callees(&map, &format!("p{i}.U{i}.g{i}")),
                [format!("p{j}.U{j}.g{j}")]
            );
        }
        assert_eq!(graph.stats().import_edges, n as u64);
    });
}

/// One class with `n` overloads of `f` (of one arity, which literal
/// arguments cannot tell apart), a few more of `f` and `g` that they can,
/// called `n` times from one unit and once from each of `n / 10` others.
fn overloads(n: usize) -> Files {
    let mut class = String::from("package o;\npublic class O {\n");
    for i in 0..n {
        writeln!(class, "  public void f(int a, T{i} b) {{}}").unwrap();
    }
    class.push_str("  public void f(int a, String b) {}\n  public void f(long a, long b) {}\n");
    for arity in 0..4 {
        let params: Vec<String> = (0..arity).map(|k| format!("int a{k}")).collect();
        writeln!(class, "  public void g({}) {{}}", params.join(", ")).unwrap();
    }
    class.push_str("  public void g(String... rest) {}\n}\n");
    let mut files = vec![("o/O.java".to_string(), class)];
    let mut caller = String::from("package o;\nclass Caller {\n  void run(O o) {\n");
    for i in 0..n {
        let call = match i % 4 {
            0 => "o.f(1, \"s\");",
            1 => "o.f(1L, 2L);",
            2 => "o.g(1, 2);",
            _ => "o.g(\"a\", \"b\", \"c\", \"d\", \"e\");",
        };
        writeln!(caller, "    {call}").unwrap();
    }
    caller.push_str("  }\n}\n");
    files.push(("o/Caller.java".to_string(), caller));
    for k in 0..n / 10 {
        files.push((
            format!("o/Other{k}.java"),
            format!("package o;\nclass Other{k} {{\n  void run(O o) {{ o.f(1, \"s\"); o.f(2, null); }}\n}}\n"),
        ));
    }
    files
}

#[test]
fn overloads_are_linear() {
    linear("overloads", 200, overloads, |n, graph| {
        let map = graph.calls_map();
        assert_eq!(
            callees(&map, "o.Caller.run"),
            [
                "o.O.f(int,String)",
                "o.O.f(long,long)",
                "o.O.g(String[])",
                "o.O.g(int,int)",
            ]
        );
        // `null` fits every reference type equally: the first overload wins.
        assert_eq!(
            callees(&map, &format!("o.Other{}.run", n / 10 - 1)),
            ["o.O.f(int,String)", "o.O.f(int,T0)"]
        );
    });
}

/// `n` packages whose on-demand imports form cycles: `q{i}` imports
/// `q{i+1}.*`, `q{i+2}.*` and `q{i+3}.*`, and uses a type of each.
fn on_demand_cycle(n: usize) -> Files {
    (0..n)
        .map(|i| {
            let [a, b, c] = [1, 2, 3].map(|k| (i + k) % n);
            (
                format!("q{i}/V{i}.java"),
                format!(
                    "package q{i};\nimport q{a}.*;\nimport q{b}.*;\nimport q{c}.*;\npublic class V{i} {{\n  public void go() {{ new V{a}().go(); V{b}.s(); V{c} v = null; v.go(); }}\n  public static void s() {{}}\n}}\n"
                ),
            )
        })
        .collect()
}

#[test]
fn on_demand_import_cycles_are_linear() {
    linear(
        "on-demand import cycle",
        500,
        on_demand_cycle,
        |n, graph| {
            let map = graph.calls_map();
            for i in [0, n - 1] {
                let [a, b, c] = [1, 2, 3].map(|k| (i + k) % n);
                assert_eq!(
                    callees(&map, &format!("q{i}.V{i}.go")),
                    [
                        format!("q{a}.V{a}"),
                        format!("q{a}.V{a}.go"),
                        format!("q{b}.V{b}.s"),
                        format!("q{c}.V{c}.go"),
                    ]
                );
            }
        },
    );
}

fn nested_path(k: usize) -> String {
    let mut s = String::from("p");
    for j in 0..=k {
        write!(s, ".N{j}").unwrap();
    }
    s
}

/// Member types nested `n` deep (`N0.N1...N{n-1}`): each calls a method of
/// the outermost unqualified, the innermost names itself by its fully
/// qualified name and `N1.N2` by a partly qualified one, and a second unit
/// names every tenth level by its fully qualified name.
fn nested_members(n: usize) -> Files {
    let mut outer = String::from("package p;\n");
    for k in 0..n {
        writeln!(
            outer,
            "public {}class N{k} {{\n  public void m{k}() {{ top(); }}\n  public void hit{k}() {{}}",
            if k == 0 { "" } else { "static " }
        )
        .unwrap();
        if k == 0 {
            outer.push_str("  public static void top() {}\n");
        }
    }
    let deepest = nested_path(n - 1);
    writeln!(
        outer,
        "  void deepest() {{ {deepest} x = new {deepest}(); x.hit{}(); N1.N2 y = null; y.hit2(); }}",
        n - 1
    )
    .unwrap();
    for _ in 0..n {
        outer.push_str("}\n");
    }
    let mut user = String::from("package p;\nclass User {\n");
    // Each qualified name is as long as its depth, so naming every level
    // would make the input quadratic: every tenth, and the deepest.
    for k in (0..n).step_by(10).chain([n - 1]) {
        let path = nested_path(k);
        writeln!(
            user,
            "  void use{k}() {{ {path} x = new {path}(); x.hit{k}(); }}"
        )
        .unwrap();
    }
    user.push_str("}\n");
    vec![
        ("p/N0.java".to_string(), outer),
        ("p/User.java".to_string(), user),
    ]
}

#[test]
fn nested_member_types_are_linear() {
    // Extraction records at most 200 levels of nesting; 4N stays below.
    linear("nested member types", 40, nested_members, |n, graph| {
        let map = graph.calls_map();
        let d = n - 1;
        let deepest = nested_path(d);
        assert_eq!(callees(&map, &format!("{deepest}.m{d}")), ["p.N0.top"]);
        assert_eq!(
            callees(&map, &format!("{deepest}.deepest")),
            [
                deepest.clone(),
                format!("{deepest}.hit{d}"),
                "p.N0.N1.N2.hit2".to_string(),
            ]
        );
        assert_eq!(
            callees(&map, &format!("p.User.use{d}")),
            [deepest.clone(), format!("{deepest}.hit{d}")]
        );
    });
}

/// A chain of `n` calls `new Chain().m0().m1()...m{n-1}()`, each method
/// returning `Chain`; the same chain into a `var`, then used; and a chain
/// of `n` calls into a library type.
fn call_chain(n: usize) -> Files {
    let mut class = String::from("package c;\npublic class Chain {\n");
    for i in 0..n {
        writeln!(class, "  public Chain m{i}() {{ return this; }}").unwrap();
    }
    class.push_str("  public void end() {}\n  void run() {\n    new Chain()");
    for i in 0..n {
        write!(class, ".m{i}()").unwrap();
    }
    class.push_str(".end();\n    var v = new Chain()");
    for i in 0..n {
        write!(class, ".m{i}()").unwrap();
    }
    class.push_str(";\n    v.end();\n  }\n  void library() {\n    new StringBuilder()");
    for i in 0..n {
        write!(class, ".append({i})").unwrap();
    }
    class.push_str(".toString();\n  }\n}\n");
    vec![("c/Chain.java".to_string(), class)]
}

#[test]
fn call_chains_are_linear() {
    linear("call chain", 1000, call_chain, |n, graph| {
        let map = graph.calls_map();
        let run = callees(&map, "c.Chain.run");
        // Every link of both chains resolves, and so does the call on `v`.
        assert_eq!(run.len(), n + 2, "{:?}", &run[..run.len().min(8)]);
        assert!(run.contains(&"c.Chain.end"));
        assert!(calls(&map, "c.Chain.run", &format!("c.Chain.m{}", n - 1)));
        // Library calls stay external; their names stay bounded.
        let library = graph.entity("c.Chain.library").unwrap();
        let external: Vec<_> = graph
            .unresolved_calls()
            .iter()
            .filter(|u| u.caller == library)
            .collect();
        assert_eq!(external.len(), n + 2);
        assert!(external.iter().all(|u| u.callee.len() <= 1024));
        assert!(
            external
                .iter()
                .any(|u| u.callee == "java.lang.StringBuilder.append().append")
        );
    });
}

/// One method with `n` distinct locals, each assigned and called, then `n`
/// blocks that each declare the same name, and `n` calls on an outer local
/// of that name after the blocks.
fn big_method(n: usize) -> Files {
    let mut body = String::new();
    for i in 0..n {
        writeln!(body, "    Foo v{i} = new Foo(); v{i}.hit();").unwrap();
    }
    body.push_str("    Bar x = new Bar();\n");
    for _ in 0..n {
        body.push_str("    { Foo x = new Foo(); x.hit(); }\n");
    }
    for _ in 0..n {
        body.push_str("    x.bar();\n");
    }
    vec![
        (
            "m/Foo.java".to_string(),
            "package m;\npublic class Foo { public void hit() {} }\n".to_string(),
        ),
        (
            "m/Bar.java".to_string(),
            "package m;\npublic class Bar { public void bar() {} }\n".to_string(),
        ),
        (
            "m/Big.java".to_string(),
            format!("package m;\nclass Big {{\n  void big() {{\n{body}  }}\n}}\n"),
        ),
    ]
}

#[test]
fn big_methods_are_linear() {
    linear("big method", 2500, big_method, |_, graph| {
        let map = graph.calls_map();
        assert_eq!(
            callees(&map, "m.Big.big"),
            ["m.Bar", "m.Bar.bar", "m.Foo", "m.Foo.hit"]
        );
        let big = graph.entity("m.Big.big").unwrap();
        assert!(
            !graph.unresolved_calls().iter().any(|u| u.caller == big),
            "every call resolves"
        );
    });
}
