//! Usage facts: console scripts, main entries, command-line interfaces,
//! public API and examples, on `testdata/usage_fixture/` and on hostile
//! packaging.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/fixture.rs"]
mod fixture;

use std::path::{Path, PathBuf};

use repo_graph::{Analyzer, CliFramework, ConfigSkipReason, EntityId, RepoGraph};
use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/usage_fixture")
}

/// The usage facts as JSON with every entity and module id replaced by
/// its qualified name, so the snapshot reads without the id tables.
fn readable(graph: &RepoGraph) -> Value {
    fn walk(graph: &RepoGraph, value: &mut Value) {
        match value {
            Value::Object(map) => {
                if map.len() == 1 {
                    let (kind, id) = map
                        .iter()
                        .next()
                        .map(|(k, v)| (k.clone(), v.as_u64()))
                        .unwrap();
                    // Ids are opaque: read back from their JSON form.
                    let entity = id.and_then(|i| {
                        serde_json::from_value::<EntityId>(serde_json::json!({ kind.as_str(): i }))
                            .ok()
                    });
                    if let Some(name) = entity.and_then(|e| graph.qualname(e)) {
                        *value = Value::from(format!("{kind} {name}"));
                        return;
                    }
                }
                for (key, field) in map.iter_mut() {
                    if key == "module"
                        && let Some(i) = field.as_u64()
                    {
                        let module = serde_json::from_value::<repo_graph::ModuleId>(Value::from(i))
                            .ok()
                            .and_then(|m| graph.qualname(EntityId::Module(m)));
                        *field = Value::from(module.unwrap_or_default());
                        continue;
                    }
                    walk(graph, field);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| walk(graph, i)),
            _ => {}
        }
    }
    let mut value = serde_json::to_value(graph.usage()).unwrap();
    walk(graph, &mut value);
    value
}

#[test]
fn usage_facts_of_a_package_with_clis_and_examples() {
    let graph = Analyzer::new(fixture()).analyze().unwrap();
    insta::assert_json_snapshot!(
        "usage_facts_of_a_package_with_clis_and_examples",
        readable(&graph)
    );
    // The JSON document carries them too, and reads back.
    let text = serde_json::to_string(&graph.to_document()).unwrap();
    let back: repo_graph::GraphDocument = serde_json::from_str(&text).unwrap();
    assert_eq!(&back.usage, graph.usage());
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// 10,000 entry points in a `setup.py` dict and nested dictionaries 5,000
/// deep: the facts are bounded, nothing overflows.
#[test]
fn setup_py_with_ten_thousand_entry_points_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let entries: String = (0..10_000)
        .map(|i| format!("    \"tool{i} = pkg.cli:main\",\n"))
        .collect();
    let nested = format!("{}1{}", "{\"a\": ".repeat(5_000), "}".repeat(5_000));
    write(
        dir.path(),
        "setup.py",
        &format!(
            "from setuptools import setup\nDEEP = {nested}\nsetup(name=\"pkg\", entry_points={{\"console_scripts\": [\n{entries}], \"x\": {nested}}})\n"
        ),
    );
    write(dir.path(), "pkg/__init__.py", "");
    write(dir.path(), "pkg/cli.py", "def main():\n    pass\n");
    let graph = Analyzer::new(dir.path()).analyze().unwrap();
    let usage = graph.usage();
    assert_eq!(usage.entry_points.len(), 1000);
    assert_eq!(usage.entry_points[0].name, "tool0");
    assert_eq!(usage.entry_points[0].entity, graph.entity("pkg.cli.main"));
    assert_eq!(usage.distributions[0].name, "pkg");
}

/// `__all__` built by a comprehension or from another module's `__all__`:
/// what is literal is kept, the rest is not guessed.
#[test]
fn dynamic_all_keeps_what_is_literal() {
    let dir = fixture::write(
        r#"
        //- dyn/__init__.py
        from .a import *
        from . import a
        __all__ = [x for x in dir() if not x.startswith('_')]

        //- mixed/__init__.py
        from . import a
        from .a import f
        __all__ = ["f"] + a.__all__
        __all__ += a.__all__
        __all__.append("g")
        __all__.extend(["h", 1])
        def g(): pass

        //- dyn/a.py
        __all__ = ['f']
        def f(x): pass

        //- mixed/a.py
        __all__ = ['f']
        def f(x): pass
        "#,
    );
    let graph = Analyzer::new(dir.path()).analyze().unwrap();
    let dynamic = graph.module(graph.module_by_name("dyn").unwrap()).unwrap();
    assert_eq!(dynamic.all, None);
    let mixed = graph
        .module(graph.module_by_name("mixed").unwrap())
        .unwrap();
    assert_eq!(
        mixed.all.as_deref(),
        Some(&["f".to_string(), "g".into(), "h".into()][..])
    );
    let api: Vec<(&str, &str, Option<&str>)> = graph
        .usage()
        .public_api
        .iter()
        .map(|e| (e.package.as_str(), e.name.as_str(), e.signature.as_deref()))
        .collect();
    assert_eq!(
        api,
        [
            ("dyn", "f", Some("f(x)")),
            ("dyn", "a", None),
            ("mixed", "f", Some("f(x)")),
            ("mixed", "g", Some("g()")),
            ("mixed", "h", None),
            ("mixed", "a", None),
        ]
    );
}

/// A 5 MB `pyproject.toml` is not read, and invalid TOML is reported, not
/// fatal; the rest of the packaging still counts.
#[test]
fn oversized_and_invalid_packaging_files_are_skipped_with_a_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut huge = String::from("[project]\nname = \"huge\"\n[project.scripts]\n");
    while huge.len() < 5_000_000 {
        huge.push_str(&format!("c{} = \"pkg.cli:main\"\n", huge.len()));
    }
    write(dir.path(), "pyproject.toml", &huge);
    write(dir.path(), "sub/pyproject.toml", "[project\nname = ");
    write(
        dir.path(),
        "sub/setup.cfg",
        "[options.entry_points]\nconsole_scripts =\n    sub = pkg.cli:main\n",
    );
    write(
        dir.path(),
        "deep/pyproject.toml",
        &format!("a = {}{}\n", "[".repeat(100_000), "]".repeat(100_000)),
    );
    write(dir.path(), "pkg/__init__.py", "");
    write(dir.path(), "pkg/cli.py", "def main():\n    pass\n");
    // Links out of the repository and devices are not read.
    write(dir.path(), "out/setup.py", "");
    std::os::unix::fs::symlink("/etc/hostname", dir.path().join("out/setup.cfg")).unwrap();
    write(dir.path(), "dev/setup.py", "");
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("dev/pyproject.toml")).unwrap();
    let graph = Analyzer::new(dir.path()).analyze().unwrap();
    let usage = graph.usage();
    let skipped: Vec<(&str, ConfigSkipReason)> = usage
        .skipped
        .iter()
        .map(|s| (s.path.as_str(), s.reason))
        .collect();
    assert_eq!(
        skipped,
        [
            ("pyproject.toml", ConfigSkipReason::TooLarge),
            ("deep/pyproject.toml", ConfigSkipReason::Invalid),
            ("dev/pyproject.toml", ConfigSkipReason::Unreadable),
            ("out/setup.cfg", ConfigSkipReason::Unreadable),
            ("sub/pyproject.toml", ConfigSkipReason::Invalid),
        ]
    );
    assert!(
        usage.skipped[4]
            .detail
            .as_deref()
            .is_some_and(|d| !d.is_empty())
    );
    let names: Vec<&str> = usage.entry_points.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["sub"]);
}

/// Thousands of parsers, options and click commands in one file stay
/// within the per-file caps, and a click `add_command` cycle does not
/// make a command its own ancestor.
#[test]
fn many_commands_and_command_cycles_stay_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("import argparse\nimport click\n");
    for i in 0..3_000 {
        text.push_str(&format!("p{i} = argparse.ArgumentParser()\n"));
    }
    for i in 0..3_000 {
        text.push_str(&format!("p0.add_argument('--o{i}')\n"));
    }
    text.push_str("@click.group()\ndef a():\n    pass\n@click.group()\ndef b():\n    pass\na.add_command(b)\nb.add_command(a)\n");
    write(dir.path(), "big.py", &text);
    let graph = Analyzer::new(dir.path()).analyze().unwrap();
    let commands = &graph.usage().commands;
    assert!(commands.len() <= 512);
    assert_eq!(commands[0].options.len(), 128);
    for start in 0..commands.len() {
        let mut at = start as u32;
        let mut steps = 0;
        while let Some(parent) = commands[at as usize].parent {
            at = parent;
            steps += 1;
            assert!(steps <= commands.len(), "a cycle through command {start}");
        }
    }
}

#[test]
fn click_and_typer_need_their_imports() {
    // `@app.command()` of an unknown framework is not a command.
    let dir = fixture::write(
        r#"
        //- other.py
        import fire
        @app.command()
        def run():
            pass

        //- t.py
        import typer
        def main(path: str, n: int = 3):
            pass
        if __name__ == '__main__':
            typer.run(main)
        "#,
    );
    let graph = Analyzer::new(dir.path()).analyze().unwrap();
    let commands = &graph.usage().commands;
    assert_eq!(commands.len(), 1);
    assert_eq!(commands[0].framework, CliFramework::Typer);
    assert_eq!(commands[0].entity, graph.entity("t.main"));
    let flags: Vec<&str> = commands[0]
        .options
        .iter()
        .map(|o| o.flags[0].as_str())
        .collect();
    assert_eq!(flags, ["path", "--n"]);
    assert_eq!(commands[0].options[1].default.as_deref(), Some("3"));
    let main = &graph.usage().mains[0];
    assert_eq!(main.commands, [0]);
}
