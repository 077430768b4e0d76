//! One test per call-resolution rule: each writes a minimal repository where
//! only that rule can produce the asserted edge.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use repo_graph::{Analyzer, ImportTarget};

fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn calls(files: &[(&str, &str)]) -> BTreeMap<String, Vec<String>> {
    let dir = repo(files);
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
    let map = calls(&[(
        "m.py",
        "def helper(): pass\n\ndef outer():\n    def helper():\n        pass\n    def inner():\n        helper()\n    inner()\n",
    )]);
    assert_eq!(callees(&map, "m.outer.inner"), ["m.outer.helper"]);
    assert_eq!(callees(&map, "m.outer"), ["m.outer.inner"]);
}

#[test]
fn imported_names_and_aliases() {
    let map = calls(&[
        (
            "a.py",
            "from b import f as g\nimport b as bb\n\ndef run():\n    g()\n    bb.h()\n",
        ),
        ("b.py", "def f(): pass\ndef h(): pass\n"),
    ]);
    assert_eq!(callees(&map, "a.run"), ["b.f", "b.h"]);
}

#[test]
fn reexport_through_init_and_relative_import() {
    let map = calls(&[
        ("pkg/__init__.py", "from .impl import work\n"),
        (
            "pkg/impl.py",
            "from ._util import tidy\n\ndef work():\n    tidy()\n",
        ),
        ("pkg/_util.py", "def tidy(): pass\n"),
        ("main.py", "from pkg import work\nwork()\n"),
    ]);
    assert_eq!(callees(&map, "main"), ["pkg.impl.work"]);
    assert_eq!(callees(&map, "pkg.impl.work"), ["pkg._util.tidy"]);
}

#[test]
fn module_attributes() {
    let map = calls(&[
        ("pkg/__init__.py", ""),
        ("pkg/mod.py", "def f(): pass\n"),
        (
            "main.py",
            "import pkg.mod\nimport pkg\n\ndef run():\n    pkg.mod.f()\n",
        ),
    ]);
    assert_eq!(callees(&map, "main.run"), ["pkg.mod.f"]);
}

#[test]
fn instantiation_targets_init_or_class() {
    let map = calls(&[(
        "m.py",
        "class A:\n    def __init__(self): pass\nclass B(A): pass\nclass C: pass\n\ndef make():\n    A()\n    B()\n    C()\n",
    )]);
    assert_eq!(callees(&map, "m.make"), ["m.A.__init__", "m.C"]);
}

#[test]
fn self_cls_and_super_follow_the_mro() {
    let map = calls(&[(
        "m.py",
        "class Base:\n    def run(self): self.step()\n    def step(self): pass\n    @classmethod\n    def make(cls): return cls.build()\n    @classmethod\n    def build(cls): pass\n\nclass Child(Base):\n    def step(self):\n        super().step()\n        self.run()\n",
    )]);
    // `Child.step` calls `self.run()` on a `Child`, so inside `Base.run`
    // `self.step()` dispatches to the override too.
    assert_eq!(callees(&map, "m.Base.run"), ["m.Base.step", "m.Child.step"]);
    assert_eq!(callees(&map, "m.Base.make"), ["m.Base.build"]);
    assert_eq!(callees(&map, "m.Child.step"), ["m.Base.run", "m.Base.step"]);
}

#[test]
fn diamond_uses_c3_order() {
    let map = calls(&[(
        "m.py",
        "class A:\n    def who(self): pass\nclass B(A): pass\nclass C(A):\n    def who(self): pass\nclass D(B, C):\n    def ask(self):\n        self.who()\n",
    )]);
    // C3: D, B, C, A — so C.who wins over A.who.
    assert_eq!(callees(&map, "m.D.ask"), ["m.C.who"]);
}

#[test]
fn names_bound_to_constructor_calls() {
    let map = calls(&[(
        "m.py",
        "class Engine:\n    def start(self): pass\n\ndef drive():\n    e = Engine()\n    e.start()\n",
    )]);
    assert_eq!(callees(&map, "m.drive"), ["m.Engine", "m.Engine.start"]);
}

#[test]
fn annotated_parameters_and_attributes() {
    let map = calls(&[(
        "m.py",
        "from typing import Optional\n\nclass Engine:\n    def start(self): pass\n\nclass Car:\n    spare: Engine\n    def __init__(self, engine: Optional[Engine]):\n        self.engine = engine\n    def drive(self, other: 'Engine'):\n        self.engine.start()\n        other.start()\n    def backup(self):\n        self.spare.start()\n",
    )]);
    assert_eq!(callees(&map, "m.Car.drive"), ["m.Engine.start"]);
    assert_eq!(callees(&map, "m.Car.backup"), ["m.Engine.start"]);
}

#[test]
fn return_annotations_type_call_results() {
    let map = calls(&[(
        "m.py",
        "class Conn:\n    def close(self): pass\n\ndef connect() -> Conn:\n    return Conn()\n\ndef main():\n    connect().close()\n",
    )]);
    assert_eq!(callees(&map, "m.main"), ["m.Conn.close", "m.connect"]);
}

#[test]
fn decorated_functions_and_decorator_application() {
    let map = calls(&[(
        "m.py",
        "def deco(f):\n    return f\n\n@deco\ndef task(): pass\n\ndef main():\n    task()\n",
    )]);
    assert_eq!(callees(&map, "m.main"), ["m.task"]);
    assert_eq!(callees(&map, "m"), ["m.deco"]);
}

#[test]
fn functions_passed_as_arguments() {
    let map = calls(&[(
        "m.py",
        "def apply(fn, x):\n    return fn(x)\n\ndef double(x): return 2 * x\ndef triple(x): return 3 * x\n\ndef main():\n    apply(double, 1)\n    apply(x=2, fn=triple)\n",
    )]);
    assert_eq!(callees(&map, "m.apply"), ["m.double", "m.triple"]);
}

#[test]
fn try_except_import_fallback_and_local_imports() {
    let dir = repo(&[
        ("pkg/__init__.py", ""),
        ("pkg/slow.py", "def impl(): pass\n"),
        (
            "pkg/use.py",
            "try:\n    from ujson import impl\nexcept ImportError:\n    from .slow import impl\n\ndef run():\n    import pkg.slow as s\n    impl()\n    s.impl()\n",
        ),
    ]);
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
    let map = calls(&[
        (
            "lib.py",
            "__all__ = ['public']\ndef public(): pass\ndef hidden(): pass\n",
        ),
        ("main.py", "from lib import *\npublic()\nhidden()\n"),
    ]);
    assert_eq!(callees(&map, "main"), ["lib.public"]);
}

#[test]
fn unresolved_calls_are_kept_with_their_text() {
    let dir = repo(&[(
        "m.py",
        "import os\n\ndef f(cb):\n    os.path.join('a')\n    cb()\n    mystery.thing()\n    len([])\n",
    )]);
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
    let map = calls(&[
        ("a.py", "from b import x\nx()\n"),
        ("b.py", "from a import x\n"),
        ("c.py", "y = y\ny()\n"),
    ]);
    assert!(callees(&map, "a").is_empty());
    assert!(callees(&map, "c").is_empty());
}

#[test]
fn queries() {
    let dir = repo(&[
        (
            "a.py",
            "import b\n\ndef top():\n    '''Entry point for parsing.'''\n    b.mid()\n",
        ),
        ("b.py", "import c\n\ndef mid():\n    c.leaf()\n"),
        ("c.py", "def leaf():\n    pass\n"),
    ]);
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
    let hits = graph.search("parsing", 5);
    assert_eq!(hits[0].qualname, "a.top");
    assert_eq!(graph.search("leaf", 1)[0].qualname, "c.leaf");
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
