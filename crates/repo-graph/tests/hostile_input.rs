//! Hostile repositories (issue 26, item 4): named pipes, links out of the
//! tree, nesting far past what any compiler accepts, files made to hold
//! as many facts as possible, and more files than memory. Every test
//! asserts on counters (skips, partial files, fact units, the memory
//! estimate), never on time; the fixtures are generated here, none is
//! committed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../examples/support/hostile.rs"]
mod hostile;

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use hostile::Shape;
use proptest::prelude::*;
use repo_graph::{Analyzer, Budget, MAX_FILE_FACTS, RepoGraph, SkipReason};

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
}

fn reasons(graph: &RepoGraph, path: &str) -> Vec<SkipReason> {
    graph
        .skipped()
        .iter()
        .filter(|s| s.path == path)
        .map(|s| s.reason)
        .collect()
}

/// Analyses `root` on another thread. If it is still running after a
/// minute it is blocked on one of `fifos` (nothing else in these
/// fixtures can take that long): the pipes are opened for writing and
/// closed, which releases any reader, and the test fails instead of
/// hanging the suite.
fn analyze_unblocking(analyzer: Analyzer, fifos: &[&Path]) -> RepoGraph {
    let (send, receive) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = send.send(analyzer.analyze().unwrap());
    });
    match receive.recv_timeout(Duration::from_secs(60)) {
        Ok(graph) => graph,
        Err(_) => {
            for fifo in fifos {
                let _ = std::fs::OpenOptions::new().write(true).open(fifo);
            }
            let _ = worker.join();
            panic!("the analysis blocked on a named pipe");
        }
    }
}

#[test]
fn named_pipes_are_skipped_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "ok.py", "def f():\n    pass\n");
    let pipes = [
        root.join("x.py"),
        root.join("pkg/y.java"),
        root.join("pyproject.toml"),
        root.join("nb.ipynb"),
    ];
    std::fs::create_dir_all(root.join("pkg")).unwrap();
    for pipe in &pipes {
        mkfifo(pipe);
    }
    // A link to a pipe is no better than the pipe.
    std::os::unix::fs::symlink("x.py", root.join("link.py")).unwrap();
    let fifos: Vec<&Path> = pipes.iter().map(|p| p.as_path()).collect();
    let graph = analyze_unblocking(Analyzer::new(root), &fifos);

    for path in [
        "x.py",
        "pkg/y.java",
        "nb.ipynb",
        "link.py",
        "pyproject.toml",
    ] {
        assert_eq!(reasons(&graph, path), [SkipReason::NotRegular], "{path}");
    }
    assert_eq!(graph.stats().skipped[&SkipReason::NotRegular], 5);
    assert_eq!(graph.stats().modules, 1);
    assert!(graph.entity("ok.f").is_some());
    let config: Vec<&str> = graph
        .usage()
        .skipped
        .iter()
        .map(|s| s.path.as_str())
        .collect();
    assert_eq!(config, ["pyproject.toml"]);
}

#[test]
fn a_pipe_named_like_an_ignore_file_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "a.py", "x = 1\n");
    mkfifo(&root.join(".gitignore"));
    mkfifo(&root.join(".ignore"));
    let fifos = [root.join(".gitignore"), root.join(".ignore")];
    let fifos: Vec<&Path> = fifos.iter().map(|p| p.as_path()).collect();
    let graph = analyze_unblocking(Analyzer::new(root).hidden(true), &fifos);
    assert_eq!(graph.stats().modules, 1);
}

/// The walk learns from each directory's own listing whether it is a
/// virtualenv and which ignore files it has (no `stat` per directory): a
/// virtualenv, reached directly or through a link, is skipped whole; a
/// `pyvenv.cfg` that is a directory, or one at the root, changes nothing;
/// ignore files apply whether they are files or links inside the tree.
#[test]
fn virtualenvs_and_ignore_files_are_found_in_each_listing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "pyvenv.cfg", "home = /usr\n");
    write(root, "pkg/a.py", "x = 1\n");
    write(root, "env/pyvenv.cfg", "home = /usr\n");
    write(root, "env/lib/site.py", "y = 2\n");
    write(root, "notenv/pyvenv.cfg/inner.py", "z = 3\n");
    write(root, "sub/.gitignore", "gen.py\n");
    write(root, "sub/gen.py", "g = 1\n");
    write(root, "sub/keep.py", "k = 1\n");
    write(root, "rules.txt", "skip.py\n");
    write(root, "linked/skip.py", "s = 1\n");
    write(root, "linked/kept.py", "s = 2\n");
    std::os::unix::fs::symlink("../rules.txt", root.join("linked/.ignore")).unwrap();
    // Sorted before and after the virtualenv it points at.
    std::os::unix::fs::symlink("env", root.join("a_env_link")).unwrap();
    std::os::unix::fs::symlink("env", root.join("z_env_link")).unwrap();
    let graph = Analyzer::new(root).analyze().unwrap();

    let mut names: Vec<&str> = graph.modules().iter().map(|m| m.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "linked.kept",
            "notenv.pyvenv.cfg.inner",
            "pkg.a",
            "sub.keep"
        ]
    );
    for path in ["env", "a_env_link", "z_env_link"] {
        assert_eq!(reasons(&graph, path), [SkipReason::ToolDirectory], "{path}");
    }
    for path in ["sub/gen.py", "linked/skip.py"] {
        assert_eq!(reasons(&graph, path), [SkipReason::Ignored], "{path}");
    }
}

#[test]
fn links_out_of_the_tree_are_never_read() {
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.py", "SECRET = 'outside'\n");
    // Rules that would ignore every source file, if they were read.
    write(outside.path(), "rules", "*.py\n*.java\n");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "main.py", "def main():\n    pass\n");
    let link = |target: &Path, name: &str| {
        std::os::unix::fs::symlink(target, root.join(name)).unwrap();
    };
    link(Path::new("/proc/self/environ"), "README.py");
    link(Path::new("/proc/self/environ"), "environ.ipynb");
    link(&outside.path().join("secret.py"), "secret.py");
    link(outside.path(), "vendored");
    link(&outside.path().join("rules"), ".gitignore");
    link(&outside.path().join("secret.py"), "pyproject.toml");
    let graph = Analyzer::new(root).analyze().unwrap();

    for path in ["README.py", "environ.ipynb", "secret.py", "vendored"] {
        assert_eq!(
            reasons(&graph, path),
            [SkipReason::SymlinkOutsideRoot],
            "{path}"
        );
    }
    let names: Vec<&str> = graph.modules().iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["main"], "the outside .gitignore did not apply");
    let document = serde_json::to_string(&graph.to_document()).unwrap();
    assert!(!document.contains("SECRET"));
    assert_eq!(graph.usage().skipped.len(), 1, "pyproject.toml is refused");
}

/// One file of `shape` nested `depth` deep, analysed alone.
fn analyze_shape(shape: Shape, depth: usize) -> RepoGraph {
    let dir = tempfile::tempdir().unwrap();
    let name = format!("deep.{}", shape.extension());
    write(dir.path(), &name, &shape.text(depth));
    Analyzer::new(dir.path()).analyze().unwrap()
}

#[test]
fn nesting_past_the_budget_is_analysed_in_part_at_a_bounded_cost() {
    for shape in Shape::NESTED {
        // Indentation costs its depth in bytes on every line: 2,000
        // levels are already 2 MB, the default size limit.
        let depth = if shape == Shape::PyBlocks {
            1_000
        } else {
            10_000
        };
        let graph = analyze_shape(shape, depth);
        let budget = if shape == Shape::PyBlocks {
            Budget::Indentation
        } else {
            Budget::Nesting
        };
        let partial = graph.partial();
        assert_eq!(partial.len(), 1, "{shape:?}");
        assert_eq!(partial[0].budget, budget, "{shape:?}");
        assert_eq!(partial[0].limit, budget.limit(), "{shape:?}");
        assert!(partial[0].line >= 1, "{shape:?}");
        let stats = graph.stats();
        assert_eq!(stats.partial[&budget], 1, "{shape:?}");
        assert_eq!(stats.modules, 1, "{shape:?}: the file is kept");
        // What follows the nest is still analysed: `g` is defined and
        // called after it.
        let calls = graph.calls_map();
        let called = calls.values().flatten().any(|c| c.ends_with(".g"));
        assert!(called, "{shape:?}: {calls:?}");

        // Twice as deep costs no more facts: everything past the budget
        // is blanked before parsing.
        let deeper = analyze_shape(shape, 2 * depth);
        assert_eq!(
            deeper.stats().fact_units,
            stats.fact_units,
            "{shape:?}: facts grew with the depth"
        );
        assert!(stats.fact_units < 10_000, "{shape:?}: {}", stats.fact_units);
    }
}

#[test]
fn nesting_within_the_budget_is_analysed_whole() {
    for shape in Shape::NESTED {
        let graph = analyze_shape(shape, 60);
        assert!(graph.partial().is_empty(), "{shape:?}");
        assert!(graph.stats().partial.is_empty(), "{shape:?}");
    }
}

/// A Java call chain: each call copies its receiver (up to 49 expression
/// nodes), so a few hundred KB hold more than [`MAX_FILE_FACTS`] units.
fn java_chain(calls: usize) -> String {
    format!(
        "class A {{\n  A a() {{ return this; }}\n  void m(A x) {{\n    x{};\n  }}\n  void g() {{}}\n  void h() {{ g(); }}\n}}\n",
        ".a()".repeat(calls)
    )
}

#[test]
fn a_file_over_the_facts_budget_keeps_what_came_before_the_cut() {
    let analyze = |calls| {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "Chain.java", &java_chain(calls));
        Analyzer::new(dir.path()).analyze().unwrap()
    };
    let graph = analyze(25_000);
    let stats = graph.stats();
    assert_eq!(stats.partial[&Budget::Facts], 1);
    let partial = &graph.partial()[0];
    assert_eq!(
        (partial.path.as_str(), partial.budget, partial.line),
        ("Chain.java", Budget::Facts, 4)
    );
    assert_eq!(partial.limit, MAX_FILE_FACTS);
    // One call (its receiver and itself) may pass the budget.
    assert!(
        stats.fact_units <= MAX_FILE_FACTS + 64,
        "{}",
        stats.fact_units
    );
    assert!(stats.fact_units > MAX_FILE_FACTS / 2);
    // The type and the methods declared before the cut are there.
    assert!(graph.entity("A.a").is_some());
    assert!(graph.entity("A.m").is_some());
    // Twice the chain, the same facts.
    let doubled = analyze(50_000);
    assert_eq!(doubled.stats().fact_units, stats.fact_units);
}

/// Analyses on a pool of `threads` workers, so that how far the ceiling
/// can be passed (one file per worker) does not depend on the machine.
fn analyze_on(threads: usize, analyzer: Analyzer) -> RepoGraph {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(|| analyzer.analyze())
        .unwrap()
}

#[test]
fn past_a_tiny_memory_ceiling_the_remaining_files_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let files = 24;
    for i in 0..files {
        write(
            dir.path(),
            &format!("m{i:02}.py"),
            "def f(x):\n    return x\n",
        );
    }
    let threads = 2;
    let stats = analyze_on(threads, Analyzer::new(dir.path()).memory_ceiling(1)).stats();
    // Each worker may read one file before it sees the ceiling passed.
    assert!(
        stats.modules >= 1 && stats.modules <= threads as u64,
        "{stats:?}"
    );
    assert_eq!(
        stats.skipped[&SkipReason::MemoryCeiling],
        files - stats.modules
    );
    assert_eq!(stats.memory_ceiling_bytes, 1);
    assert!(stats.memory_estimate_bytes >= 1);

    // With no ceiling to speak of, everything is read and the estimate
    // is the same per file.
    let all = Analyzer::new(dir.path()).analyze().unwrap().stats();
    assert_eq!(all.modules, files);
    assert!(!all.skipped.contains_key(&SkipReason::MemoryCeiling));
    assert_eq!(
        all.memory_estimate_bytes / files,
        stats.memory_estimate_bytes / stats.modules
    );
    assert!(all.memory_ceiling_bytes >= 1 << 20);
}

#[test]
fn a_ceiling_of_a_few_files_reads_about_that_many() {
    let dir = tempfile::tempdir().unwrap();
    let files = 40u64;
    for i in 0..files {
        write(
            dir.path(),
            &format!("m{i:02}.py"),
            "def f(x):\n    return g(x)\n\ndef g(y):\n    return y\n",
        );
    }
    let one = Analyzer::new(dir.path()).analyze().unwrap().stats();
    let per_file = one.memory_estimate_bytes / files;
    let threads = 2;
    let analyzer = Analyzer::new(dir.path()).memory_ceiling(10 * per_file);
    let stats = analyze_on(threads, analyzer).stats();
    assert!(
        stats.modules >= 10 && stats.modules < 10 + threads as u64,
        "{stats:?}"
    );
    assert_eq!(
        stats.skipped[&SkipReason::MemoryCeiling],
        files - stats.modules
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any shape at any depth: no panic, a cut exactly when the depth is
    /// past the budget, and never more facts than the budget.
    #[test]
    fn generated_nesting_never_panics_or_passes_the_budgets(
        shape in proptest::sample::select(Shape::NESTED.to_vec()),
        depth in 0usize..700,
    ) {
        let graph = analyze_shape(shape, depth);
        let stats = graph.stats();
        prop_assert_eq!(stats.modules, 1);
        prop_assert!(stats.fact_units <= MAX_FILE_FACTS);
        // The deepest level of each shape: its depth, plus what encloses
        // the nest (a function body; a class, a method and a call).
        let deepest = match shape {
            Shape::PyBrackets | Shape::PyCalls => depth,
            Shape::PyBlocks => depth + 1,
            Shape::JavaBrackets => depth + 1,
            Shape::JavaCalls | Shape::JavaBlocks => depth + 3,
            // Not in `Shape::NESTED`: never selected.
            _ => return Err(TestCaseError::reject("not a nesting shape")),
        };
        let limit = match shape {
            Shape::PyBlocks => repo_graph::MAX_INDENT,
            _ => repo_graph::MAX_NESTING,
        } as usize;
        prop_assert_eq!(graph.partial().len(), usize::from(deepest > limit), "depth {}", depth);
    }
}
