//! One test per Java resolution rule: each writes a minimal repository where
//! only that rule can produce the asserted edge, import target or name.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/fixture.rs"]
mod fixture;

use std::collections::BTreeMap;

use repo_graph::{
    Analyzer, BaseRelation, EntityId, FunctionKind, ImportKind, ImportTarget, JavaTypeKind,
    Language, Modifier, RepoGraph, SkipReason,
};

fn graph(fixture: &str) -> RepoGraph {
    let dir = fixture::write(fixture);
    Analyzer::new(dir.path()).analyze().unwrap()
}

fn calls(fixture: &str) -> BTreeMap<String, Vec<String>> {
    graph(fixture).calls_map()
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
    let g = graph(
        r#"
        //- src/somewhere/else/App.java
        package com.example;
        public class App {
          static class Inner { void go() {} }
          void start() {}
        }
        "#,
    );
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
    let map = calls(
        r#"
        //- p/Base.java
        package p;
        public class Base { void save() {} }

        //- p/Named.java
        package p;
        public interface Named { default String label() { return "x"; } }

        //- p/Child.java
        package p;
        public class Child extends Base implements Named {
          void run() { save(); label(); }
        }
        "#,
    );
    assert_eq!(
        callees(&map, "p.Child.run"),
        ["p.Base.save", "p.Named.label"]
    );
}

#[test]
fn this_and_super_calls() {
    let map = calls(
        r#"
        //- p/A.java
        package p;
        class A { void m() {} }
        class B extends A {
          void m() { super.m(); }
          void n() { this.m(); }
        }
        "#,
    );
    assert_eq!(callees(&map, "p.B.m"), ["p.A.m"]);
    assert_eq!(callees(&map, "p.B.n"), ["p.B.m"]);
}

#[test]
fn static_calls_on_a_type_and_fully_qualified_names() {
    let map = calls(
        r#"
        //- util/Strings.java
        package util;
        public class Strings { public static String up(String s) { return s; } }

        //- app/Main.java
        package app;
        import util.Strings;
        class Main {
          void a() { Strings.up("x"); }
          void b() { util.Strings.up("y"); }
        }
        "#,
    );
    assert_eq!(callees(&map, "app.Main.a"), ["util.Strings.up"]);
    assert_eq!(callees(&map, "app.Main.b"), ["util.Strings.up"]);
}

#[test]
fn calls_on_fields_parameters_locals_and_var() {
    let map = calls(
        r#"
        //- p/Repo.java
        package p;
        class Repo { void save() {} void load() {} void drop() {} void scan() {} }

        //- p/Service.java
        package p;
        class Service {
          private Repo repo;
          void viaField() { repo.save(); this.repo.load(); }
          void viaParam(Repo r) { r.drop(); }
          void viaLocal() { Repo local = make(); local.scan(); var v = new Repo(); v.save(); }
          Repo make() { return null; }
        }
        "#,
    );
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
    let g = graph(
        r#"
        //- p/A.java
        package p;
        import java.util.List;
        class A {
          A item;
          void go() {}
          void run(List<String> xs) { xs.forEach(item -> item.go()); item.go(); }
        }
        "#,
    );
    // Inside the lambda `item` is the untyped parameter; after it, the field.
    assert_eq!(callees(&g.calls_map(), "p.A.run"), ["p.A.go"]);
    assert!(unresolved(&g, "p.A.run").contains(&("item.go".to_string(), false)));
}

#[test]
fn constructors_and_constructor_chaining() {
    let map = calls(
        r#"
        //- p/A.java
        package p;
        class Base { Base(int x) {} }
        class A extends Base {
          A() { this(1); }
          A(int x) { super(x); }
          static A make() { return new A(); }
        }
        class Plain { static Plain make() { return new Plain(); } }
        "#,
    );
    assert_eq!(callees(&map, "p.A.<init>()"), ["p.A.<init>(int)"]);
    assert_eq!(callees(&map, "p.A.<init>(int)"), ["p.Base.<init>"]);
    assert_eq!(callees(&map, "p.A.make"), ["p.A.<init>()"]);
    // No declared constructor: the class itself.
    assert_eq!(callees(&map, "p.Plain.make"), ["p.Plain"]);
}

#[test]
fn method_references() {
    let map = calls(
        r#"
        //- p/A.java
        package p;
        import java.util.List;
        class A {
          static void show(String s) {}
          void log(String s) {}
          void run(List<String> xs) {
            xs.forEach(A::show);
            xs.forEach(this::log);
            xs.stream().map(A::new);
          }
          A(String s) {}
        }
        "#,
    );
    assert_eq!(
        callees(&map, "p.A.run"),
        ["p.A.<init>", "p.A.log", "p.A.show"]
    );
}

#[test]
fn overloads_are_chosen_by_arity_then_literal_kinds() {
    let g = graph(
        r#"
        //- p/Out.java
        package p;
        class Out {
          void print(int n) {}
          void print(String s) {}
          void print(String s, int width) {}
          void use() { print(1); print("a"); print("a", 2); }
          void one() { print("only"); }
        }
        "#,
    );
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
    let map = calls(
        r#"
        //- p/V.java
        package p;
        class V {
          static void join(String sep, String... parts) {}
          void use() { join(","); join(",", "a", "b", "c"); }
        }
        "#,
    );
    assert_eq!(callees(&map, "p.V.use"), ["p.V.join"]);
}

#[test]
fn imports_of_every_kind_and_their_targets() {
    let g = graph(
        r#"
        //- lib/Util.java
        package lib;
        public class Util { public static int twice(int x) { return 2 * x; } public static class Nested {} }

        //- app/Main.java
        package app;
        import lib.Util;
        import lib.*;
        import static lib.Util.twice;
        import static lib.Util.*;
        import java.util.List;
        class Main { int go() { return twice(2); } }
        "#,
    );
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
    let g = graph(
        r#"
        //- p/Store.java
        package p;
        class Store { void put() {} }

        //- p/User.java
        package p;
        class User { Store store; }
        "#,
    );
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
    let map = calls(
        r#"
        //- p/Outer.java
        package p;
        class Outer {
          void helper() {}
          static class Box { static Box of() { return new Box(); } void open() {} }
          class Inner { void go() { helper(); Outer.Box.of().open(); } }
        }
        "#,
    );
    assert_eq!(
        callees(&map, "p.Outer.Inner.go"),
        ["p.Outer.Box.of", "p.Outer.Box.open", "p.Outer.helper"]
    );
}

#[test]
fn type_variables_stand_for_their_bounds() {
    let map = calls(
        r#"
        //- p/Shape.java
        package p;
        interface Shape { double area(); }

        //- p/Box.java
        package p;
        class Box<T extends Shape> {
          T item;
          double area() { return item.area(); }
          <S extends Shape> double of(S s) { return s.area(); }
        }
        "#,
    );
    assert_eq!(callees(&map, "p.Box.area"), ["p.Shape.area"]);
    assert_eq!(callees(&map, "p.Box.of"), ["p.Shape.area"]);
}

#[test]
fn call_chains_follow_declared_return_types() {
    let map = calls(
        r#"
        //- p/B.java
        package p;
        class B {
          B next() { return this; }
          C build() { return new C(); }
          void run() { next().next().build().done(); }
        }
        class C { void done() {} }
        "#,
    );
    assert_eq!(
        callees(&map, "p.B.run"),
        ["p.B.build", "p.B.next", "p.C.done"]
    );
}

#[test]
fn anonymous_and_local_classes_are_entities() {
    let g = graph(
        r#"
        //- p/A.java
        package p;
        class A {
          void tick() {}
          Runnable r() {
            class Local { void go() { tick(); } }
            new Local().go();
            return new Runnable() { public void run() { tick(); } };
          }
        }
        "#,
    );
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
    let g = graph(
        r#"
        //- p/A.java
        package p;
        import java.util.List;
        import java.util.ArrayList;
        class A {
          void run() { List<String> xs = new ArrayList<>(); xs.add("a"); System.out.println(xs); mystery(); }
        }
        "#,
    );
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
    let g = graph(
        r#"
        //- p/I.java
        package p;
        interface I {}

        //- p/A.java
        package p;
        import java.io.Serializable;
        /** Docs. */
        public abstract class A<T> extends java.util.AbstractList<T> implements I, Serializable {
          @Deprecated protected final int count = 0;
        }
        "#,
    );
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
    let g = graph(
        r#"
        //- p/A.java
        package p;
        class A {
          /**
           * Reads it.
           *
           * @param path where
           */
          @Override
          public static <T> java.util.List<T> read(String path, int... sizes) throws java.io.IOException { return null; }
          A() {}
        }
        "#,
    );
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
    let g = graph(
        r#"
        //- p/A.java
        package p;
        class A {
          int f(int x) {
            switch (x) { case 1: return 1; case 2: return 2; default: return 0; }
          }
          int g(int x) {
            try { return x > 0 ? 1 : 2; } catch (RuntimeException e) { return 3; }
          }
        }
        "#,
    );
    let branches: Vec<u32> = g
        .functions()
        .iter()
        .map(|f| f.complexity.branches)
        .collect();
    assert_eq!(branches, [2, 2]);
}

#[test]
fn duplicate_compilation_units_get_distinct_names() {
    let g = graph(
        r#"
        //- a/src/p/App.java
        package p;
        class App { void run() {} }

        //- b/src/p/App.java
        package p;
        class App { void run() {} }
        "#,
    );
    let names: Vec<&str> = g.modules().iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["p.App.java", "p.App.java@2"]);
    let map = g.calls_map();
    assert!(map.contains_key("p.App.run") && map.contains_key("p.App@2.run"));
}

#[test]
fn mixed_repositories_and_the_language_filter() {
    let dir = fixture::write(
        r#"
        //- tool.py
        def main():
            helper()

        def helper():
            pass

        //- App.java
        class App { void run() { go(); } void go() {} }

        //- empty.py
        //- Empty.java
        "#,
    );
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
    let dir = fixture::write(
        r#"
        //- a.py
        x = 1

        //- A.java
        class A { void f() { g(); } void g() {} }
        "#,
    );
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
    // `pom.xml` has no final newline, which the fixture format cannot
    // express: the files are given as (path, contents) pairs.
    let dir = fixture::write_files(&[
        ("pom.xml", "<project/>"),
        ("src/main/java/A.java", "class A {}\n"),
        ("target/generated-sources/B.java", "class B {}\n"),
        ("lib/build.gradle", ""),
        ("lib/build/C.java", "class C {}\n"),
        ("other/build/D.java", "class D {}\n"),
    ]);
    let g = Analyzer::new(dir.path()).analyze().unwrap();
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
    let g = graph(
        r#"
        //- a/A1.java
        package a;
        import b.B;
        class A1 { void f() { new B().g(); } }

        //- a/A2.java
        package a;
        import b.B;
        class A2 { B b; }

        //- b/B.java
        package b;
        public class B { public void g() {} }
        "#,
    );
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
