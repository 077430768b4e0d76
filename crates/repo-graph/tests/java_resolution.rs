//! One test per Java resolution rule: each writes a minimal repository where
//! only that rule can produce the asserted edge, import target or name.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use repo_graph::{
    Analyzer, BaseRelation, EntityId, FunctionKind, ImportKind, ImportTarget, JavaTypeKind,
    Language, Modifier, RepoGraph, SkipReason,
};

fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn graph(files: &[(&str, &str)]) -> RepoGraph {
    let dir = repo(files);
    Analyzer::new(dir.path()).analyze().unwrap()
}

fn calls(files: &[(&str, &str)]) -> BTreeMap<String, Vec<String>> {
    graph(files).calls_map()
}

fn callees<'a>(map: &'a BTreeMap<String, Vec<String>>, caller: &str) -> Vec<&'a str> {
    map.get(caller)
        .unwrap_or_else(|| panic!("{caller} is not a key of {map:#?}"))
        .iter()
        .map(String::as_str)
        .collect()
}

fn unresolved(graph: &RepoGraph, caller: &str) -> Vec<(String, bool)> {
    let caller = graph.entity(caller).unwrap();
    graph
        .unresolved_calls()
        .iter()
        .filter(|u| u.caller == caller)
        .map(|u| (u.callee.clone(), u.external))
        .collect()
}

#[test]
fn names_follow_the_package_declaration_not_the_directory() {
    let g = graph(&[(
        "src/somewhere/else/App.java",
        "package com.example;\npublic class App {\n  static class Inner { void go() {} }\n  void start() {}\n}\n",
    )]);
    assert_eq!(g.modules()[0].name, "com.example.App.java");
    assert_eq!(g.modules()[0].package.as_deref(), Some("com.example"));
    assert_eq!(g.modules()[0].language, Language::Java);
    assert!(matches!(
        g.entity("com.example.App"),
        Some(EntityId::Class(_))
    ));
    assert!(matches!(
        g.entity("com.example.App.Inner.go"),
        Some(EntityId::Function(_))
    ));
    assert!(matches!(
        g.entity("com.example.App.java"),
        Some(EntityId::Module(_))
    ));
    assert_eq!(g.package_of(g.module_ids().next().unwrap()), "com.example");
}

#[test]
fn inherited_methods_through_superclass_and_default_methods() {
    let map = calls(&[
        (
            "p/Base.java",
            "package p;\npublic class Base { void save() {} }\n",
        ),
        (
            "p/Named.java",
            "package p;\npublic interface Named { default String label() { return \"x\"; } }\n",
        ),
        (
            "p/Child.java",
            "package p;\npublic class Child extends Base implements Named {\n  void run() { save(); label(); }\n}\n",
        ),
    ]);
    assert_eq!(
        callees(&map, "p.Child.run"),
        ["p.Base.save", "p.Named.label"]
    );
}

#[test]
fn this_and_super_calls() {
    let map = calls(&[(
        "p/A.java",
        "package p;\nclass A { void m() {} }\nclass B extends A {\n  void m() { super.m(); }\n  void n() { this.m(); }\n}\n",
    )]);
    assert_eq!(callees(&map, "p.B.m"), ["p.A.m"]);
    assert_eq!(callees(&map, "p.B.n"), ["p.B.m"]);
}

#[test]
fn static_calls_on_a_type_and_fully_qualified_names() {
    let map = calls(&[
        (
            "util/Strings.java",
            "package util;\npublic class Strings { public static String up(String s) { return s; } }\n",
        ),
        (
            "app/Main.java",
            "package app;\nimport util.Strings;\nclass Main {\n  void a() { Strings.up(\"x\"); }\n  void b() { util.Strings.up(\"y\"); }\n}\n",
        ),
    ]);
    assert_eq!(callees(&map, "app.Main.a"), ["util.Strings.up"]);
    assert_eq!(callees(&map, "app.Main.b"), ["util.Strings.up"]);
}

#[test]
fn calls_on_fields_parameters_locals_and_var() {
    let map = calls(&[
        (
            "p/Repo.java",
            "package p;\nclass Repo { void save() {} void load() {} void drop() {} void scan() {} }\n",
        ),
        (
            "p/Service.java",
            "package p;\nclass Service {\n  private Repo repo;\n  void viaField() { repo.save(); this.repo.load(); }\n  void viaParam(Repo r) { r.drop(); }\n  void viaLocal() { Repo local = make(); local.scan(); var v = new Repo(); v.save(); }\n  Repo make() { return null; }\n}\n",
        ),
    ]);
    assert_eq!(
        callees(&map, "p.Service.viaField"),
        ["p.Repo.load", "p.Repo.save"]
    );
    assert_eq!(callees(&map, "p.Service.viaParam"), ["p.Repo.drop"]);
    assert_eq!(
        callees(&map, "p.Service.viaLocal"),
        ["p.Repo", "p.Repo.save", "p.Repo.scan", "p.Service.make"]
    );
}

#[test]
fn a_lambda_parameter_shadows_a_field() {
    let g = graph(&[(
        "p/A.java",
        "package p;\nimport java.util.List;\nclass A {\n  A item;\n  void go() {}\n  void run(List<String> xs) { xs.forEach(item -> item.go()); item.go(); }\n}\n",
    )]);
    // Inside the lambda `item` is the untyped parameter; after it, the field.
    assert_eq!(callees(&g.calls_map(), "p.A.run"), ["p.A.go"]);
    assert!(unresolved(&g, "p.A.run").contains(&("item.go".to_string(), false)));
}

#[test]
fn constructors_and_constructor_chaining() {
    let map = calls(&[(
        "p/A.java",
        "package p;\nclass Base { Base(int x) {} }\nclass A extends Base {\n  A() { this(1); }\n  A(int x) { super(x); }\n  static A make() { return new A(); }\n}\nclass Plain { static Plain make() { return new Plain(); } }\n",
    )]);
    assert_eq!(callees(&map, "p.A.<init>()"), ["p.A.<init>(int)"]);
    assert_eq!(callees(&map, "p.A.<init>(int)"), ["p.Base.<init>"]);
    assert_eq!(callees(&map, "p.A.make"), ["p.A.<init>()"]);
    // No declared constructor: the class itself.
    assert_eq!(callees(&map, "p.Plain.make"), ["p.Plain"]);
}

#[test]
fn method_references() {
    let map = calls(&[(
        "p/A.java",
        "package p;\nimport java.util.List;\nclass A {\n  static void show(String s) {}\n  void log(String s) {}\n  void run(List<String> xs) {\n    xs.forEach(A::show);\n    xs.forEach(this::log);\n    xs.stream().map(A::new);\n  }\n  A(String s) {}\n}\n",
    )]);
    assert_eq!(
        callees(&map, "p.A.run"),
        ["p.A.<init>", "p.A.log", "p.A.show"]
    );
}

#[test]
fn overloads_are_chosen_by_arity_then_literal_kinds() {
    let g = graph(&[(
        "p/Out.java",
        "package p;\nclass Out {\n  void print(int n) {}\n  void print(String s) {}\n  void print(String s, int width) {}\n  void use() { print(1); print(\"a\"); print(\"a\", 2); }\n  void one() { print(\"only\"); }\n}\n",
    )]);
    let map = g.calls_map();
    assert_eq!(
        callees(&map, "p.Out.use"),
        [
            "p.Out.print(String)",
            "p.Out.print(String,int)",
            "p.Out.print(int)"
        ]
    );
    assert_eq!(callees(&map, "p.Out.one"), ["p.Out.print(String)"]);
    // The plain name finds the first overload.
    assert_eq!(
        g.qualname(g.entity("p.Out.print").unwrap()),
        Some("p.Out.print(int)")
    );
}

#[test]
fn varargs_accept_any_number_of_trailing_arguments() {
    let map = calls(&[(
        "p/V.java",
        "package p;\nclass V {\n  static void join(String sep, String... parts) {}\n  void use() { join(\",\"); join(\",\", \"a\", \"b\", \"c\"); }\n}\n",
    )]);
    assert_eq!(callees(&map, "p.V.use"), ["p.V.join"]);
}

#[test]
fn imports_of_every_kind_and_their_targets() {
    let g = graph(&[
        (
            "lib/Util.java",
            "package lib;\npublic class Util { public static int twice(int x) { return 2 * x; } public static class Nested {} }\n",
        ),
        (
            "app/Main.java",
            "package app;\nimport lib.Util;\nimport lib.*;\nimport static lib.Util.twice;\nimport static lib.Util.*;\nimport java.util.List;\nclass Main { int go() { return twice(2); } }\n",
        ),
    ]);
    let main = g.module_by_name("app.Main.java").unwrap();
    let imports: Vec<(ImportKind, bool, &str, Option<&str>, &ImportTarget)> = g
        .module(main)
        .unwrap()
        .imports
        .iter()
        .map(|i| {
            (
                i.kind,
                i.is_static,
                i.module.as_str(),
                i.name.as_deref(),
                &i.target,
            )
        })
        .collect();
    let util = match g.entity("lib.Util").unwrap() {
        EntityId::Class(c) => c,
        other => panic!("{other:?}"),
    };
    let twice = match g.entity("lib.Util.twice").unwrap() {
        EntityId::Function(f) => f,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        imports,
        [
            (
                ImportKind::From,
                false,
                "lib",
                Some("Util"),
                &ImportTarget::Class(util)
            ),
            (
                ImportKind::Star,
                false,
                "lib",
                None,
                &ImportTarget::Package("lib".into())
            ),
            (
                ImportKind::From,
                true,
                "lib.Util",
                Some("twice"),
                &ImportTarget::Function(twice)
            ),
            (
                ImportKind::Star,
                true,
                "lib.Util",
                None,
                &ImportTarget::Class(util)
            ),
            (
                ImportKind::From,
                false,
                "java.util",
                Some("List"),
                &ImportTarget::External("java.util.List".into())
            ),
        ]
    );
    assert_eq!(callees(&g.calls_map(), "app.Main.go"), ["lib.Util.twice"]);
}

#[test]
fn same_package_types_need_no_import_and_count_as_dependencies() {
    let g = graph(&[
        (
            "p/Store.java",
            "package p;\nclass Store { void put() {} }\n",
        ),
        ("p/User.java", "package p;\nclass User { Store store; }\n"),
    ]);
    let user = g.module_by_name("p.User.java").unwrap();
    let store = g.module_by_name("p.Store.java").unwrap();
    let deps: Vec<_> = g
        .imports_of(user)
        .into_iter()
        .map(|(m, c)| (m, c.imports))
        .collect();
    assert_eq!(deps, [(store, 1)]);
}

#[test]
fn nested_types_and_members_of_enclosing_classes() {
    let map = calls(&[(
        "p/Outer.java",
        "package p;\nclass Outer {\n  void helper() {}\n  static class Box { static Box of() { return new Box(); } void open() {} }\n  class Inner { void go() { helper(); Outer.Box.of().open(); } }\n}\n",
    )]);
    assert_eq!(
        callees(&map, "p.Outer.Inner.go"),
        ["p.Outer.Box.of", "p.Outer.Box.open", "p.Outer.helper"]
    );
}

#[test]
fn type_variables_stand_for_their_bounds() {
    let map = calls(&[
        (
            "p/Shape.java",
            "package p;\ninterface Shape { double area(); }\n",
        ),
        (
            "p/Box.java",
            "package p;\nclass Box<T extends Shape> {\n  T item;\n  double area() { return item.area(); }\n  <S extends Shape> double of(S s) { return s.area(); }\n}\n",
        ),
    ]);
    assert_eq!(callees(&map, "p.Box.area"), ["p.Shape.area"]);
    assert_eq!(callees(&map, "p.Box.of"), ["p.Shape.area"]);
}

#[test]
fn call_chains_follow_declared_return_types() {
    let map = calls(&[(
        "p/B.java",
        "package p;\nclass B {\n  B next() { return this; }\n  C build() { return new C(); }\n  void run() { next().next().build().done(); }\n}\nclass C { void done() {} }\n",
    )]);
    assert_eq!(
        callees(&map, "p.B.run"),
        ["p.B.build", "p.B.next", "p.C.done"]
    );
}

#[test]
fn anonymous_and_local_classes_are_entities() {
    let g = graph(&[(
        "p/A.java",
        "package p;\nclass A {\n  void tick() {}\n  Runnable r() {\n    class Local { void go() { tick(); } }\n    new Local().go();\n    return new Runnable() { public void run() { tick(); } };\n  }\n}\n",
    )]);
    let map = g.calls_map();
    assert_eq!(callees(&map, "p.A.r.Local.go"), ["p.A.tick"]);
    assert_eq!(callees(&map, "p.A.r.$1.run"), ["p.A.tick"]);
    let anonymous = match g.entity("p.A.r.$1").unwrap() {
        EntityId::Class(c) => g.class(c).unwrap(),
        other => panic!("{other:?}"),
    };
    assert!(anonymous.java().unwrap().anonymous);
    assert_eq!(anonymous.bases[0].text, "Runnable");
}

#[test]
fn external_calls_carry_their_qualified_names() {
    let g = graph(&[(
        "p/A.java",
        "package p;\nimport java.util.List;\nimport java.util.ArrayList;\nclass A {\n  void run() { List<String> xs = new ArrayList<>(); xs.add(\"a\"); System.out.println(xs); mystery(); }\n}\n",
    )]);
    let calls = unresolved(&g, "p.A.run");
    assert_eq!(
        calls,
        [
            ("java.util.ArrayList.<init>".to_string(), true),
            ("java.util.List.add".to_string(), true),
            ("java.lang.System.out.println".to_string(), true),
            ("mystery".to_string(), false),
        ]
    );
}

#[test]
fn supertypes_as_written_and_resolved() {
    let g = graph(&[
        ("p/I.java", "package p;\ninterface I {}\n"),
        (
            "p/A.java",
            "package p;\nimport java.io.Serializable;\n/** Docs. */\npublic abstract class A<T> extends java.util.AbstractList<T> implements I, Serializable {\n  @Deprecated protected final int count = 0;\n}\n",
        ),
    ]);
    let a = match g.entity("p.A").unwrap() {
        EntityId::Class(c) => g.class(c).unwrap(),
        other => panic!("{other:?}"),
    };
    let bases: Vec<(&str, bool, BaseRelation)> = a
        .bases
        .iter()
        .map(|b| (b.text.as_str(), b.resolved.is_some(), b.relation))
        .collect();
    assert_eq!(
        bases,
        [
            ("java.util.AbstractList<T>", false, BaseRelation::Extends),
            ("I", true, BaseRelation::Implements),
            ("Serializable", false, BaseRelation::Implements),
        ]
    );
    let java = a.java().unwrap();
    assert_eq!(java.kind, JavaTypeKind::Class);
    assert_eq!(java.modifiers, [Modifier::Public, Modifier::Abstract]);
    assert_eq!(java.type_parameters, ["T"]);
    assert_eq!(java.fields[0].name, "count");
    assert_eq!(java.fields[0].type_text, "int");
    assert_eq!(java.fields[0].annotations, ["Deprecated"]);
    assert_eq!(a.docstring.as_deref(), Some("Docs."));
}

#[test]
fn method_details_params_returns_throws_and_javadoc() {
    let g = graph(&[(
        "p/A.java",
        "package p;\nclass A {\n  /**\n   * Reads it.\n   *\n   * @param path where\n   */\n  @Override\n  public static <T> java.util.List<T> read(String path, int... sizes) throws java.io.IOException { return null; }\n  A() {}\n}\n",
    )]);
    let read = match g.entity("p.A.read").unwrap() {
        EntityId::Function(f) => g.function(f).unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(read.kind, FunctionKind::StaticMethod);
    assert_eq!(read.returns.as_deref(), Some("java.util.List<T>"));
    assert_eq!(read.decorators, ["Override"]);
    assert_eq!(
        read.docstring.as_deref(),
        Some("Reads it.\n\n@param path where")
    );
    let params: Vec<(&str, Option<&str>)> = read
        .params
        .iter()
        .map(|p| (p.name.as_str(), p.annotation.as_deref()))
        .collect();
    assert_eq!(
        params,
        [("path", Some("String")), ("sizes", Some("int..."))]
    );
    let java = read.java().unwrap();
    assert_eq!(java.throws, ["java.io.IOException"]);
    assert_eq!(java.type_parameters, ["T"]);
    assert_eq!(
        g.signature(EntityId::Function(
            g.function_ids()
                .find(|f| g.function(*f).unwrap().name == "read")
                .unwrap()
        )),
        "static <T> java.util.List<T> read(String path, int... sizes) throws java.io.IOException"
    );
    let ctor = g
        .functions()
        .iter()
        .find(|f| f.kind == FunctionKind::Constructor)
        .unwrap();
    assert_eq!(ctor.qualname, "p.A.<init>");
}

#[test]
fn complexity_counts_switch_cases_catches_and_ternaries() {
    let g = graph(&[(
        "p/A.java",
        "package p;\nclass A {\n  int f(int x) {\n    switch (x) { case 1: return 1; case 2: return 2; default: return 0; }\n  }\n  int g(int x) {\n    try { return x > 0 ? 1 : 2; } catch (RuntimeException e) { return 3; }\n  }\n}\n",
    )]);
    let branches: Vec<u32> = g
        .functions()
        .iter()
        .map(|f| f.complexity.branches)
        .collect();
    assert_eq!(branches, [2, 2]);
}

#[test]
fn duplicate_compilation_units_get_distinct_names() {
    let g = graph(&[
        (
            "a/src/p/App.java",
            "package p;\nclass App { void run() {} }\n",
        ),
        (
            "b/src/p/App.java",
            "package p;\nclass App { void run() {} }\n",
        ),
    ]);
    let names: Vec<&str> = g.modules().iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["p.App.java", "p.App.java@2"]);
    let map = g.calls_map();
    assert!(map.contains_key("p.App.run") && map.contains_key("p.App@2.run"));
}

#[test]
fn mixed_repositories_and_the_language_filter() {
    let dir = repo(&[
        (
            "tool.py",
            "def main():\n    helper()\n\ndef helper():\n    pass\n",
        ),
        (
            "App.java",
            "class App { void run() { go(); } void go() {} }\n",
        ),
        ("empty.py", ""),
        ("Empty.java", ""),
    ]);
    let both = Analyzer::new(dir.path()).analyze().unwrap();
    let map = both.calls_map();
    assert_eq!(callees(&map, "tool.main"), ["tool.helper"]);
    assert_eq!(callees(&map, "App.run"), ["App.go"]);
    // Same bytes, different languages: both modules exist with their own facts.
    assert!(both.module_by_name("empty").is_some() && both.module_by_name("Empty.java").is_some());

    let java_only = Analyzer::new(dir.path())
        .languages([Language::Java])
        .analyze()
        .unwrap();
    assert!(
        java_only
            .modules()
            .iter()
            .all(|m| m.language == Language::Java)
    );
    let skipped: Vec<SkipReason> = java_only.skipped().iter().map(|s| s.reason).collect();
    assert_eq!(
        skipped,
        [SkipReason::OtherLanguage, SkipReason::OtherLanguage]
    );
}

#[test]
fn the_cache_keeps_python_and_java_facts_apart() {
    let dir = repo(&[
        ("a.py", "x = 1\n"),
        ("A.java", "class A { void f() { g(); } void g() {} }\n"),
    ]);
    let cache = tempfile::tempdir().unwrap();
    let first = Analyzer::new(dir.path())
        .cache_dir(cache.path())
        .analyze()
        .unwrap();
    let second = Analyzer::new(dir.path())
        .cache_dir(cache.path())
        .analyze()
        .unwrap();
    assert_eq!(first.calls_map(), second.calls_map());
    assert_eq!(callees(&second.calls_map(), "A.f"), ["A.g"]);
}

#[test]
fn maven_and_gradle_build_output_is_skipped() {
    let g = graph(&[
        ("pom.xml", "<project/>"),
        ("src/main/java/A.java", "class A {}\n"),
        ("target/generated-sources/B.java", "class B {}\n"),
        ("lib/build.gradle", ""),
        ("lib/build/C.java", "class C {}\n"),
        ("other/build/D.java", "class D {}\n"),
    ]);
    let names: Vec<&str> = g.modules().iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["D.java", "A.java"]);
    let tool_dirs: Vec<&str> = g
        .skipped()
        .iter()
        .filter(|s| s.reason == SkipReason::ToolDirectory)
        .map(|s| s.path.as_str())
        .collect();
    assert_eq!(tool_dirs, ["lib/build", "target"]);
}

#[test]
fn package_level_dependencies_aggregate_module_edges() {
    let g = graph(&[
        (
            "a/A1.java",
            "package a;\nimport b.B;\nclass A1 { void f() { new B().g(); } }\n",
        ),
        ("a/A2.java", "package a;\nimport b.B;\nclass A2 { B b; }\n"),
        (
            "b/B.java",
            "package b;\npublic class B { public void g() {} }\n",
        ),
    ]);
    // Summed by package: both classes of `a` name `b.B`, and `A1` calls it twice
    // (the constructor and `g`).
    let mut edges: std::collections::BTreeMap<(&str, &str), (u32, u32)> = Default::default();
    for e in g.module_edges() {
        let (from, to) = (g.package_of(e.from), g.package_of(e.to));
        if from != to {
            let sum = edges.entry((from, to)).or_default();
            *sum = (sum.0 + e.imports, sum.1 + e.calls);
        }
    }
    assert_eq!(
        edges.into_iter().collect::<Vec<_>>(),
        [(("a", "b"), (2, 2))]
    );
}
