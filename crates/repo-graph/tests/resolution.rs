//! One test per call-resolution rule: each writes a minimal repository where
//! only that rule can produce the asserted edge.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/fixture.rs"]
mod fixture;

use std::collections::BTreeMap;

use repo_graph::{Analyzer, ImportTarget};

fn calls(fixture: &str) -> BTreeMap<String, Vec<String>> {
    let dir = fixture::write(fixture);
    Analyzer::new(dir.path()).analyze().unwrap().calls_map()
}

fn callees<'a>(map: &'a BTreeMap<String, Vec<String>>, caller: &str) -> Vec<&'a str> {
    map.get(caller)
        .unwrap_or_else(|| panic!("{caller} is not a key of {map:#?}"))
        .iter()
        .map(String::as_str)
        .collect()
}

#[test]
fn local_and_enclosing_scopes() {
    let map = calls(
        r#"
        //- m.py
        def helper(): pass

        def outer():
            def helper():
                pass
            def inner():
                helper()
            inner()
        "#,
    );
    assert_eq!(callees(&map, "m.outer.inner"), ["m.outer.helper"]);
    assert_eq!(callees(&map, "m.outer"), ["m.outer.inner"]);
}

#[test]
fn imported_names_and_aliases() {
    let map = calls(
        r#"
        //- a.py
        from b import f as g
        import b as bb

        def run():
            g()
            bb.h()

        //- b.py
        def f(): pass
        def h(): pass
        "#,
    );
    assert_eq!(callees(&map, "a.run"), ["b.f", "b.h"]);
}

#[test]
fn reexport_through_init_and_relative_import() {
    let map = calls(
        r#"
        //- pkg/__init__.py
        from .impl import work

        //- pkg/impl.py
        from ._util import tidy

        def work():
            tidy()

        //- pkg/_util.py
        def tidy(): pass

        //- main.py
        from pkg import work
        work()
        "#,
    );
    assert_eq!(callees(&map, "main"), ["pkg.impl.work"]);
    assert_eq!(callees(&map, "pkg.impl.work"), ["pkg._util.tidy"]);
}

#[test]
fn module_attributes() {
    let map = calls(
        r#"
        //- pkg/__init__.py
        //- pkg/mod.py
        def f(): pass

        //- main.py
        import pkg.mod
        import pkg

        def run():
            pkg.mod.f()
        "#,
    );
    assert_eq!(callees(&map, "main.run"), ["pkg.mod.f"]);
}

#[test]
fn instantiation_targets_init_or_class() {
    let map = calls(
        r#"
        //- m.py
        class A:
            def __init__(self): pass
        class B(A): pass
        class C: pass

        def make():
            A()
            B()
            C()
        "#,
    );
    assert_eq!(callees(&map, "m.make"), ["m.A.__init__", "m.C"]);
}

#[test]
fn self_cls_and_super_follow_the_mro() {
    let map = calls(
        r#"
        //- m.py
        class Base:
            def run(self): self.step()
            def step(self): pass
            @classmethod
            def make(cls): return cls.build()
            @classmethod
            def build(cls): pass

        class Child(Base):
            def step(self):
                super().step()
                self.run()
        "#,
    );
    // `Child.step` calls `self.run()` on a `Child`, so inside `Base.run`
    // `self.step()` dispatches to the override too.
    assert_eq!(callees(&map, "m.Base.run"), ["m.Base.step", "m.Child.step"]);
    assert_eq!(callees(&map, "m.Base.make"), ["m.Base.build"]);
    assert_eq!(callees(&map, "m.Child.step"), ["m.Base.run", "m.Base.step"]);
}

#[test]
fn diamond_uses_c3_order() {
    let map = calls(
        r#"
        //- m.py
        class A:
            def who(self): pass
        class B(A): pass
        class C(A):
            def who(self): pass
        class D(B, C):
            def ask(self):
                self.who()
        "#,
    );
    // C3: D, B, C, A — so C.who wins over A.who.
    assert_eq!(callees(&map, "m.D.ask"), ["m.C.who"]);
}

#[test]
fn names_bound_to_constructor_calls() {
    let map = calls(
        r#"
        //- m.py
        class Engine:
            def start(self): pass

        def drive():
            e = Engine()
            e.start()
        "#,
    );
    assert_eq!(callees(&map, "m.drive"), ["m.Engine", "m.Engine.start"]);
}

#[test]
fn annotated_parameters_and_attributes() {
    let map = calls(
        r#"
        //- m.py
        from typing import Optional

        class Engine:
            def start(self): pass

        class Car:
            spare: Engine
            def __init__(self, engine: Optional[Engine]):
                self.engine = engine
            def drive(self, other: 'Engine'):
                self.engine.start()
                other.start()
            def backup(self):
                self.spare.start()
        "#,
    );
    assert_eq!(callees(&map, "m.Car.drive"), ["m.Engine.start"]);
    assert_eq!(callees(&map, "m.Car.backup"), ["m.Engine.start"]);
}

#[test]
fn return_annotations_type_call_results() {
    let map = calls(
        r#"
        //- m.py
        class Conn:
            def close(self): pass

        def connect() -> Conn:
            return Conn()

        def main():
            connect().close()
        "#,
    );
    assert_eq!(callees(&map, "m.main"), ["m.Conn.close", "m.connect"]);
}

#[test]
fn decorated_functions_and_decorator_application() {
    let map = calls(
        r#"
        //- m.py
        def deco(f):
            return f

        @deco
        def task(): pass

        def main():
            task()
        "#,
    );
    assert_eq!(callees(&map, "m.main"), ["m.task"]);
    assert_eq!(callees(&map, "m"), ["m.deco"]);
}

#[test]
fn functions_passed_as_arguments() {
    let map = calls(
        r#"
        //- m.py
        def apply(fn, x):
            return fn(x)

        def double(x): return 2 * x
        def triple(x): return 3 * x

        def main():
            apply(double, 1)
            apply(x=2, fn=triple)
        "#,
    );
    assert_eq!(callees(&map, "m.apply"), ["m.double", "m.triple"]);
}

#[test]
fn try_except_import_fallback_and_local_imports() {
    let dir = fixture::write(
        r#"
        //- pkg/__init__.py
        //- pkg/slow.py
        def impl(): pass

        //- pkg/use.py
        try:
            from ujson import impl
        except ImportError:
            from .slow import impl

        def run():
            import pkg.slow as s
            impl()
            s.impl()
        "#,
    );
    let graph = Analyzer::new(dir.path()).analyze().unwrap();
    assert_eq!(
        callees(&graph.calls_map(), "pkg.use.run"),
        ["pkg.slow.impl"]
    );
    let module = graph.module_by_name("pkg.use").unwrap();
    let imports = &graph.module(module).unwrap().imports;
    assert!(imports[0].in_try && !imports[0].in_function);
    assert_eq!(
        imports[0].target,
        ImportTarget::External("ujson.impl".into())
    );
    assert!(imports[2].in_function);
    assert_eq!(
        imports[2].target,
        ImportTarget::Module(graph.module_by_name("pkg.slow").unwrap())
    );
}

#[test]
fn star_imports_respect_all() {
    let map = calls(
        r#"
        //- lib.py
        __all__ = ['public']
        def public(): pass
        def hidden(): pass

        //- main.py
        from lib import *
        public()
        hidden()
        "#,
    );
    assert_eq!(callees(&map, "main"), ["lib.public"]);
}

#[test]
fn unresolved_calls_are_kept_with_their_text() {
    let dir = fixture::write(
        r#"
        //- m.py
        import os

        def f(cb):
            os.path.join('a')
            cb()
            mystery.thing()
            len([])
        "#,
    );
    let graph = Analyzer::new(dir.path()).analyze().unwrap();
    let mut seen: Vec<(String, bool)> = graph
        .unresolved_calls()
        .iter()
        .map(|u| (u.callee.clone(), u.external))
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("builtins.len".to_string(), true),
            ("cb".to_string(), false),
            ("mystery.thing".to_string(), false),
            ("os.path.join".to_string(), true),
        ]
    );
}

#[test]
fn cyclic_reexports_terminate() {
    let map = calls(
        r#"
        //- a.py
        from b import x
        x()

        //- b.py
        from a import x

        //- c.py
        y = y
        y()
        "#,
    );
    assert!(callees(&map, "a").is_empty());
    assert!(callees(&map, "c").is_empty());
}

#[test]
fn queries() {
    let dir = fixture::write(
        r#"
        //- a.py
        import b

        def top():
            '''Entry point for parsing.'''
            b.mid()

        //- b.py
        import c

        def mid():
            c.leaf()

        //- c.py
        def leaf():
            pass
        "#,
    );
    let graph = Analyzer::new(dir.path()).analyze().unwrap();
    let top = graph.entity("a.top").unwrap();
    let leaf = graph.entity("c.leaf").unwrap();
    let names = |reach: Vec<repo_graph::Reach>| -> Vec<(String, u32)> {
        reach
            .iter()
            .map(|r| {
                (
                    graph.qualname(r.entity).unwrap_or_default().to_string(),
                    r.depth,
                )
            })
            .collect()
    };
    assert_eq!(names(graph.callees(top, 1)), [("b.mid".to_string(), 1)]);
    assert_eq!(
        names(graph.callees(top, 5)),
        [("b.mid".to_string(), 1), ("c.leaf".to_string(), 2)]
    );
    assert_eq!(
        names(graph.callers(leaf, 5)),
        [("b.mid".to_string(), 1), ("a.top".to_string(), 2)]
    );
    let (a, c) = (
        graph.module_by_name("a").unwrap(),
        graph.module_by_name("c").unwrap(),
    );
    let path: Vec<&str> = graph
        .dependency_path(a, c)
        .unwrap()
        .iter()
        .map(|m| graph.module(*m).unwrap().name.as_str())
        .collect();
    assert_eq!(path, ["a", "b", "c"]);
    assert!(graph.dependency_path(c, a).is_none());
    assert_eq!(graph.source(leaf).unwrap(), "def leaf():\n    pass");
    let stats = graph
        .module_stats(graph.module_by_name("b").unwrap())
        .unwrap();
    assert_eq!(
        (
            stats.imports,
            stats.imported_by,
            stats.calls_out,
            stats.calls_in_from_other_modules
        ),
        (1, 1, 1, 1)
    );
}

// The fixture format of `support/fixture.rs`, which these tests and
// others write their repositories with.

fn owned(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect()
}

#[test]
fn fixture_format_deindents_and_splits_files() {
    // Indented by eight spaces; `b.py` holds a tab, a blank line and a line
    // of whitespace written at full indentation (four spaces are left).
    let text = "
        //- a.py
        def f():
            pass

        //- pkg/__init__.py
        //- pkg/sub/b.py
        x = 1
        \ty = 2

        \x20\x20\x20\x20
        z = 3


        //- c.txt
        last line";
    assert_eq!(
        fixture::parse(text),
        owned(&[
            ("a.py", "def f():\n    pass\n"),
            ("pkg/__init__.py", ""),
            ("pkg/sub/b.py", "x = 1\n\ty = 2\n\n    \nz = 3\n"),
            ("c.txt", "last line\n"),
        ])
    );
    // Unindented, and blank lines before the first file.
    assert_eq!(
        fixture::parse("\n\n//- a.py\n  x\n//-b.py\n"),
        owned(&[("a.py", "  x\n"), ("b.py", "")])
    );
}

#[test]
fn fixture_format_writes_nested_paths() {
    let dir = fixture::write(
        r#"
        //- top.py
        import pkg.deep.mod

        //- pkg/deep/mod.py
        def f():
            return "text"
        "#,
    );
    let read = |path: &str| std::fs::read_to_string(dir.path().join(path)).unwrap();
    assert_eq!(read("top.py"), "import pkg.deep.mod\n");
    assert_eq!(read("pkg/deep/mod.py"), "def f():\n    return \"text\"\n");
    let explicit = fixture::write_files(&[
        ("no_newline.txt", &b"x = 1"[..]),
        ("a/b/bytes.bin", b"\r\n\0\xff"),
    ]);
    let bytes = |path: &str| std::fs::read(explicit.path().join(path)).unwrap();
    assert_eq!(bytes("no_newline.txt"), b"x = 1");
    assert_eq!(bytes("a/b/bytes.bin"), b"\r\n\0\xff");
}

#[test]
#[should_panic(expected = "must start with a `//- path` line")]
fn fixture_format_rejects_text_before_the_first_file() {
    fixture::parse(
        r#"
        x = 1
        //- a.py
        "#,
    );
}

#[test]
#[should_panic(expected = "empty path")]
fn fixture_format_rejects_an_empty_path() {
    fixture::parse("//-   \nx = 1\n");
}

#[test]
#[should_panic(expected = "absolute path")]
fn fixture_format_rejects_an_absolute_path() {
    fixture::parse("//- /etc/a.py\n");
}

#[test]
#[should_panic(expected = "has a `..` component")]
fn fixture_format_rejects_a_parent_component() {
    fixture::parse("//- pkg/../../a.py\n");
}

#[test]
#[should_panic(expected = "duplicate path \"a.py\"")]
fn fixture_format_rejects_a_duplicate_path() {
    fixture::parse("//- a.py\n//- b.py\n//- a.py\n");
}

#[test]
#[should_panic(expected = "has a `..` component")]
fn fixture_format_write_files_checks_paths_too() {
    fixture::write_files(&[("../a.py", "")]);
}
