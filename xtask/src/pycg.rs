//! `cargo xtask bench pycg`: our call graph against PyCG's own
//! micro-benchmark (ICSE 2021), with PyCG itself run on the same cases in
//! the same run.
//!
//! The suite comes from a snapshot of the public repository
//! `vitsalis/PyCG` as a bare git directory (the search tool's `fetch`
//! puts it at [`MIRROR`]; elsewhere `git clone --bare`). Its
//! `micro-benchmark/snippets/<category>/<case>/` directories are laid
//! out under `target/pycg-suite/<commit>/`; nothing of it is committed.
//! Each case is a small program whose entry is `main.py`, with the call
//! graph CPython would take in `callgraph.json` (PyCG's naming: modules
//! by dotted path, `<builtin>.len` for builtins, `ext.function` for a
//! module that is not in the case).
//!
//! Scoring, the same for both tools:
//! - **internal** edges: caller and callee both name a module of the
//!   case or something defined in one; callers are only those the
//!   expected graph lists (PyCG's graphs hold what is reachable from
//!   `main.py`; an edge out of code that never runs is not counted for or
//!   against anyone, and the number left out is printed);
//! - **external** edges: the callee is a builtin or a module outside the
//!   case, scored only for a tool whose output names them.
//!
//! Two conventions differ between the suites and are put on one footing
//! for every tool and the expectation alike: PyCG names lambdas as
//! entities (`main.<lambda1>`) where ours folds them into the function
//! that holds them, so a lambda's calls count as its enclosing
//! function's and a call *of* a lambda is not scored; ours has an edge
//! to a class called without an `__init__` where PyCG has none, so an
//! edge to a callee the tool's own graph does not list as a node (a
//! class) is not scored either (its count is printed).
//!
//! PyCG is installed from PyPI ([`PYCG`]) into `target/pycg-suite/venv`
//! and run in one Python process over every case, as its own test
//! harness does (`CallGraphGenerator([main.py], package, -1, CALL_GRAPH_OP)`).
//! A case either tool fails on scores as an empty graph and is counted.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Instant, SystemTime};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::gittaskbench_data::git;
use crate::{ensure_venv, release_binary, target_dir};

const USAGE: &str = "usage: cargo xtask bench pycg [--git-dir DIR] [--rev REV] [--binary PATH] [--no-pycg] [--verbose]\n\n  \
    --git-dir DIR  a bare git directory of github.com/vitsalis/PyCG\n                 \
    (default: $PYCG_GIT_DIR, else /work/.mirror/vitsalis+PyCG/repo)\n  \
    --rev REV      the commit whose micro-benchmark to use (default HEAD)\n  \
    --binary PATH  the repo-agent binary to measure (default: build it, release)\n  \
    --no-pycg      score ours only (no PyPI needed)\n  \
    --verbose      list every missed and spurious internal edge";

/// Where the search tool's `fetch` puts the snapshot on these machines.
const MIRROR: &str = "/work/.mirror/vitsalis+PyCG/repo";

/// PyCG from PyPI, pinned (a pure-Python wheel, no dependencies).
const PYCG: &[(&str, &str)] = &[("pycg", "0.0.8")];

/// Runs PyCG over the cases named on stdin (one directory per line) and
/// prints `{case: graph}` or `{case: {"error": text}}` as one JSON object.
const PYCG_HELPER: &str = r#"
import json, os, sys
try:
    import pycg
except ImportError:
    # The 0.0.8 wheel ships its package as `PyCG/` while its code imports
    # `pycg`: on a case-sensitive file system, name the package both ways.
    import PyCG
    sys.modules["pycg"] = PyCG
from pycg.pycg import CallGraphGenerator
from pycg import utils
out = {}
for case in sys.stdin.read().split("\n"):
    if not case:
        continue
    try:
        cg = CallGraphGenerator([os.path.join(case, "main.py")], case, -1, utils.constants.CALL_GRAPH_OP)
        cg.analyze()
        out[case] = {k: sorted(v) for k, v in cg.output().items()}
    except Exception as e:
        out[case] = {"error": f"{type(e).__name__}: {e}"}
json.dump(out, sys.stdout)
"#;

type Edge = (String, String);
type Graph = BTreeMap<String, BTreeSet<String>>;

struct Options {
    git_dir: PathBuf,
    rev: String,
    binary: Option<PathBuf>,
    pycg: bool,
    verbose: bool,
}

fn options(args: &[&str]) -> anyhow::Result<Options> {
    let mut options = Options {
        git_dir: std::env::var_os("PYCG_GIT_DIR")
            .map_or_else(|| PathBuf::from(MIRROR), PathBuf::from),
        rev: "HEAD".into(),
        binary: None,
        pycg: true,
        verbose: false,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .copied()
                .with_context(|| format!("{arg} takes a value\n{USAGE}"))
        };
        match *arg {
            "--git-dir" => options.git_dir = PathBuf::from(value()?),
            "--rev" => options.rev = value()?.to_owned(),
            "--binary" => options.binary = Some(PathBuf::from(value()?)),
            "--no-pycg" => options.pycg = false,
            "--verbose" => options.verbose = true,
            _ => bail!("unknown argument {arg}\n{USAGE}"),
        }
    }
    Ok(options)
}

/// One case of the suite.
struct Case {
    category: String,
    name: String,
    dir: PathBuf,
    /// Module names of the case's `.py` files.
    modules: BTreeSet<String>,
    expected: Graph,
}

impl Case {
    /// Whether `name` is a module of the case or defined in one.
    fn is_internal(&self, name: &str) -> bool {
        self.modules.iter().any(|m| {
            name == m
                || name
                    .strip_prefix(m.as_str())
                    .is_some_and(|r| r.starts_with('.'))
        })
    }

    /// `graph`'s edges split into (internal, external) on the common
    /// footing the module describes, internal ones only out of callers
    /// the expected graph lists.
    fn split(&self, graph: &Graph) -> Split {
        let mut split = Split::default();
        for (caller, callees) in graph {
            let caller = without_lambdas(caller);
            if !self.is_internal(caller) {
                continue;
            }
            for callee in callees {
                let edge = (caller.to_owned(), callee.clone());
                if !self.is_internal(callee) {
                    split.external.insert(edge);
                } else if callee.contains("<lambda") {
                    continue;
                } else if !graph.contains_key(callee) {
                    split.to_classes += 1;
                } else if self.expected.contains_key(caller) {
                    split.internal.insert(edge);
                } else {
                    split.unreached += 1;
                }
            }
        }
        split
    }
}

/// A graph's edges as scored ([`Case::split`]).
#[derive(Default)]
struct Split {
    internal: BTreeSet<Edge>,
    external: BTreeSet<Edge>,
    /// Internal edges out of callers the expectation does not list.
    unreached: usize,
    /// Edges to a callee the graph has no node for (a class).
    to_classes: usize,
}

/// `name` cut before its first lambda (`main.f.<lambda1>` is `main.f`).
fn without_lambdas(name: &str) -> &str {
    match name.find(".<lambda") {
        Some(at) => &name[..at],
        None => name,
    }
}

#[derive(Default, Clone, Copy)]
struct Score {
    expected: usize,
    found: usize,
    tp: usize,
}

impl Score {
    fn of(expected: &BTreeSet<Edge>, found: &BTreeSet<Edge>) -> Self {
        Score {
            expected: expected.len(),
            found: found.len(),
            tp: expected.intersection(found).count(),
        }
    }

    fn add(&mut self, other: Score) {
        self.expected += other.expected;
        self.found += other.found;
        self.tp += other.tp;
    }

    fn precision(&self) -> f64 {
        if self.found == 0 {
            1.0
        } else {
            self.tp as f64 / self.found as f64
        }
    }

    fn recall(&self) -> f64 {
        if self.expected == 0 {
            1.0
        } else {
            self.tp as f64 / self.expected as f64
        }
    }

    fn to_json(self) -> Value {
        json!({
            "expected": self.expected, "found": self.found, "true_positives": self.tp,
            "precision": self.precision(), "recall": self.recall(),
        })
    }
}

/// What one tool did on the whole suite, per category.
#[derive(Default)]
struct Tally {
    internal: BTreeMap<String, Score>,
    external: BTreeMap<String, Score>,
    failed: Vec<String>,
    unreached: usize,
    to_classes: usize,
    seconds: f64,
}

impl Tally {
    fn total(scores: &BTreeMap<String, Score>) -> Score {
        let mut all = Score::default();
        for score in scores.values() {
            all.add(*score);
        }
        all
    }
}

pub fn bench(args: &[&str]) -> anyhow::Result<()> {
    let options = options(args)?;
    let suite = layout(&options.git_dir, &options.rev)?;
    let cases = cases(&suite)?;
    if cases.is_empty() {
        bail!("no case with a callgraph.json under {}", suite.display());
    }
    let binary = match &options.binary {
        Some(path) => path.clone(),
        None => release_binary("repo-agent", "repo-agent")?,
    };

    let mut tools: Vec<(&str, Tally)> = Vec::new();
    let started = Instant::now();
    let mut ours = BTreeMap::new();
    for case in &cases {
        ours.insert(case.dir.clone(), run_ours(&binary, &case.dir));
    }
    tools.push(("ours", score_all(&cases, &ours, started, options.verbose)));
    if options.pycg {
        let started = Instant::now();
        let theirs = run_pycg(&cases)?;
        tools.push(("PyCG", score_all(&cases, &theirs, started, false)));
    }

    print_table(&cases, &tools);
    let report = json!({
        "suite": suite.display().to_string(),
        "cases": cases.len(),
        "tools": tools.iter().map(|(name, t)| json!({
            "tool": name,
            "seconds": t.seconds,
            "failed": t.failed,
            "unreached_internal_edges": t.unreached,
            "edges_to_classes": t.to_classes,
            "internal": Score::to_json(Tally::total(&t.internal)),
            "external": Score::to_json(Tally::total(&t.external)),
            "internal_by_category": t.internal.iter().map(|(c, s)| (c.clone(), s.to_json())).collect::<BTreeMap<_, _>>(),
            "external_by_category": t.external.iter().map(|(c, s)| (c.clone(), s.to_json())).collect::<BTreeMap<_, _>>(),
        })).collect::<Vec<_>>(),
    });
    let dir = target_dir().join("bench");
    fs::create_dir_all(&dir)?;
    let path = dir.join(format!(
        "pycg-{}.json",
        crate::genesis::utc_timestamp(SystemTime::now())
    ));
    fs::write(&path, serde_json::to_string_pretty(&report)?)?;
    println!("\nwritten: {}", path.display());
    Ok(())
}

/// Extracts the snippets of `rev` once into `target/pycg-suite/<commit>/`.
fn layout(git_dir: &Path, rev: &str) -> anyhow::Result<PathBuf> {
    if !git_dir.is_dir() {
        bail!(
            "no PyCG snapshot at {}: pass --git-dir (git clone --bare https://github.com/vitsalis/PyCG)",
            git_dir.display()
        );
    }
    let commit = git(git_dir, &["rev-parse", &format!("{rev}^{{commit}}")])?;
    let root = target_dir().join("pycg-suite");
    let done = root.join(commit.trim());
    let snippets = done.join("micro-benchmark/snippets");
    if snippets.is_dir() {
        return Ok(snippets);
    }
    let partial = root.join(format!("{}.partial", commit.trim()));
    let _ = fs::remove_dir_all(&partial);
    fs::create_dir_all(&partial)?;
    let archive = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args([
            "archive",
            "--format=tar",
            commit.trim(),
            "micro-benchmark/snippets",
        ])
        .output()
        .context("cannot run git")?;
    if !archive.status.success() {
        bail!(
            "git archive failed: {}",
            String::from_utf8_lossy(&archive.stderr)
        );
    }
    let tar = partial.join("snippets.tar");
    fs::write(&tar, &archive.stdout)?;
    // The archive comes from a snapshot we did not write: tar refuses
    // absolute names and `..` by default (GNU tar), and nothing is run
    // from it but the analyses.
    crate::run(
        Command::new("tar")
            .arg("-xf")
            .arg(&tar)
            .arg("-C")
            .arg(&partial),
    )?;
    fs::remove_file(&tar)?;
    fs::rename(&partial, &done)?;
    Ok(snippets)
}

/// Every `<category>/<case>/` under `snippets` with a `callgraph.json`
/// and a `main.py`, sorted.
fn cases(snippets: &Path) -> anyhow::Result<Vec<Case>> {
    let mut cases = Vec::new();
    for category in sorted_dirs(snippets)? {
        for dir in sorted_dirs(&category)? {
            let expected = dir.join("callgraph.json");
            if !expected.is_file() || !dir.join("main.py").is_file() {
                continue;
            }
            let text = fs::read_to_string(&expected)?;
            let expected = graph(
                &serde_json::from_str(&text).with_context(|| format!("{}", expected.display()))?,
            )
            .with_context(|| format!("{}", dir.display()))?;
            let mut modules = BTreeSet::new();
            python_modules(&dir, &dir, &mut modules)?;
            cases.push(Case {
                category: file_name(&category),
                name: file_name(&dir),
                dir,
                modules,
                expected,
            });
        }
    }
    Ok(cases)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn sorted_dirs(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && !p.is_symlink())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Dotted module names of the `.py` files under `dir` (`pkg/__init__.py`
/// is `pkg`).
fn python_modules(root: &Path, dir: &Path, out: &mut BTreeSet<String>) -> anyhow::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_symlink() {
            continue;
        }
        if path.is_dir() {
            python_modules(root, &path, out)?;
        } else if path.extension().is_some_and(|e| e == "py") {
            let relative = path.strip_prefix(root)?.with_extension("");
            let mut parts: Vec<String> = relative
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|p| p == "__init__") {
                parts.pop();
            }
            if !parts.is_empty() {
                out.insert(parts.join("."));
            }
        }
    }
    Ok(())
}

/// `{"caller": ["callee", ...]}`.
fn graph(value: &Value) -> anyhow::Result<Graph> {
    let map = value.as_object().context("a call graph is a JSON object")?;
    let mut graph = Graph::new();
    for (caller, callees) in map {
        let callees = callees
            .as_array()
            .with_context(|| format!("{caller}: not an array"))?;
        let set = graph.entry(caller.clone()).or_default();
        for callee in callees {
            set.insert(
                callee
                    .as_str()
                    .with_context(|| format!("{caller}: a non-string callee"))?
                    .to_owned(),
            );
        }
    }
    Ok(graph)
}

fn run_ours(binary: &Path, dir: &Path) -> Result<Graph, String> {
    let out = Command::new(binary)
        .arg("analyze")
        .arg(dir)
        .args(["--format", "calls", "--no-cache"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let value: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    // `{"calls": .., "external": ..}`; builds before external callees were
    // printed gave the internal map alone.
    let Some(calls) = value.get("calls") else {
        return graph(&value).map_err(|e| e.to_string());
    };
    let mut merged = graph(calls).map_err(|e| e.to_string())?;
    if let Some(external) = value.get("external") {
        for (caller, callees) in graph(external).map_err(|e| e.to_string())? {
            let set = merged.entry(caller).or_default();
            set.extend(callees.into_iter().map(|c| pycg_name(&c)));
        }
    }
    Ok(merged)
}

/// Our dotted name of an outside callee in PyCG's spelling: builtins are
/// `<builtin>.len`, and methods of the two built-in types PyCG models are
/// `<**PyStr**>.join` and `<**PyDict**>.items` (its source names no other).
fn pycg_name(ours: &str) -> String {
    match ours.strip_prefix("builtins.") {
        Some(rest) => match rest.split_once('.') {
            Some(("str", method)) => format!("<**PyStr**>.{method}"),
            Some(("dict", method)) => format!("<**PyDict**>.{method}"),
            _ => format!("<builtin>.{rest}"),
        },
        None => ours.to_string(),
    }
}

fn run_pycg(cases: &[Case]) -> anyhow::Result<BTreeMap<PathBuf, Result<Graph, String>>> {
    let dir = target_dir().join("pycg-suite");
    let python = ensure_venv(&dir.join("venv"), PYCG)?;
    let helper = dir.join("run_pycg.py");
    fs::write(&helper, PYCG_HELPER)?;
    let list: String = cases
        .iter()
        .map(|c| format!("{}\n", c.dir.display()))
        .collect();
    let mut child = Command::new(python)
        .arg(&helper)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .context("cannot start PyCG")?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().context("no stdin")?;
        stdin.write_all(list.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!("PyCG's helper failed with {}", out.status);
    }
    let value: Value =
        serde_json::from_slice(&out.stdout).context("PyCG's helper printed no JSON")?;
    let mut graphs = BTreeMap::new();
    for case in cases {
        let key = case.dir.display().to_string();
        let result = match value.get(&key) {
            None => Err("no output".to_owned()),
            Some(v) => match v.get("error").and_then(Value::as_str) {
                Some(error) => Err(error.to_owned()),
                None => graph(v).map_err(|e| e.to_string()),
            },
        };
        graphs.insert(case.dir.clone(), result);
    }
    Ok(graphs)
}

fn score_all(
    cases: &[Case],
    graphs: &BTreeMap<PathBuf, Result<Graph, String>>,
    started: Instant,
    verbose: bool,
) -> Tally {
    let mut tally = Tally {
        seconds: started.elapsed().as_secs_f64(),
        ..Tally::default()
    };
    let empty = Graph::new();
    let mut names_external = false;
    for case in cases {
        let produced = match graphs.get(&case.dir) {
            Some(Ok(graph)) => graph,
            Some(Err(error)) => {
                tally
                    .failed
                    .push(format!("{}/{}: {}", case.category, case.name, error.trim()));
                &empty
            }
            None => &empty,
        };
        let want = case.split(&case.expected);
        let got = case.split(produced);
        let (want_internal, want_external) = (want.internal, want.external);
        let (got_internal, got_external) = (got.internal, got.external);
        tally.unreached += got.unreached;
        tally.to_classes += got.to_classes;
        tally
            .internal
            .entry(case.category.clone())
            .or_default()
            .add(Score::of(&want_internal, &got_internal));
        names_external |= !got_external.is_empty();
        tally
            .external
            .entry(case.category.clone())
            .or_default()
            .add(Score::of(&want_external, &got_external));
        if verbose {
            for edge in want_internal.difference(&got_internal) {
                println!(
                    "  missed   {}/{}: {} -> {}",
                    case.category, case.name, edge.0, edge.1
                );
            }
            for edge in got_internal.difference(&want_internal) {
                println!(
                    "  spurious {}/{}: {} -> {}",
                    case.category, case.name, edge.0, edge.1
                );
            }
            for edge in want_external.difference(&got_external) {
                println!(
                    "  missed external   {}/{}: {} -> {}",
                    case.category, case.name, edge.0, edge.1
                );
            }
            for edge in got_external.difference(&want_external) {
                println!(
                    "  spurious external {}/{}: {} -> {}",
                    case.category, case.name, edge.0, edge.1
                );
            }
        }
    }
    // External callees are scored only for a tool that names any.
    if !names_external {
        tally.external.clear();
    }
    tally
}

fn print_table(cases: &[Case], tools: &[(&str, Tally)]) {
    let categories: BTreeSet<&str> = cases.iter().map(|c| c.category.as_str()).collect();
    let mut header = String::from("| category | cases | edges |");
    let mut rule = String::from("| --- | ---: | ---: |");
    for (name, _) in tools {
        header.push_str(&format!(" {name} P | {name} R |"));
        rule.push_str(" ---: | ---: |");
    }
    println!(
        "internal edges (PyCG micro-benchmark, {} cases)\n\n{header}\n{rule}",
        cases.len()
    );
    for category in &categories {
        let count = cases.iter().filter(|c| c.category == *category).count();
        let mut line = String::new();
        let mut edges = 0;
        for (_, tally) in tools {
            let score = tally.internal.get(*category).copied().unwrap_or_default();
            edges = score.expected;
            line.push_str(&format!(
                " {:.3} | {:.3} |",
                score.precision(),
                score.recall()
            ));
        }
        println!("| {category} | {count} | {edges} |{line}");
    }
    let mut line = String::new();
    let mut edges = 0;
    for (_, tally) in tools {
        let total = Tally::total(&tally.internal);
        edges = total.expected;
        line.push_str(&format!(
            " **{:.3}** | **{:.3}** |",
            total.precision(),
            total.recall()
        ));
    }
    println!("| **all** | {} | {edges} |{line}", cases.len());
    for (name, tally) in tools {
        let external = Tally::total(&tally.external);
        let external = match tally.external.is_empty() {
            true => "external callees not named".to_owned(),
            false => format!(
                "external P {:.3} R {:.3} ({} expected)",
                external.precision(),
                external.recall(),
                external.expected
            ),
        };
        println!(
            "\n{name}: {:.2} s, {} failed; not scored: {} internal edges out of unreached callers, {} edges to classes; {external}",
            tally.seconds,
            tally.failed.len(),
            tally.unreached,
            tally.to_classes
        );
        for failure in tally.failed.iter().take(10) {
            println!("  failed: {failure}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(modules: &[&str], expected: &[(&str, &[&str])]) -> Case {
        Case {
            category: "c".into(),
            name: "n".into(),
            dir: PathBuf::from("/nowhere"),
            modules: modules.iter().map(|m| (*m).to_owned()).collect(),
            expected: expected
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.iter().map(|s| (*s).to_owned()).collect()))
                .collect(),
        }
    }

    fn graph_of(edges: &[(&str, &[&str])]) -> Graph {
        edges
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.iter().map(|s| (*s).to_owned()).collect()))
            .collect()
    }

    #[test]
    fn outside_names_are_spelled_as_pycg_spells_them() {
        assert_eq!(pycg_name("builtins.len"), "<builtin>.len");
        assert_eq!(pycg_name("builtins.str.join"), "<**PyStr**>.join");
        assert_eq!(pycg_name("builtins.dict.items"), "<**PyDict**>.items");
        assert_eq!(pycg_name("builtins.list.pop"), "<builtin>.list.pop");
        assert_eq!(pycg_name("ext.parent.__init__"), "ext.parent.__init__");
    }

    #[test]
    fn internal_external_and_unreached_edges_are_told_apart() {
        let mut c = case(&["main", "pkg.sub"], &[]);
        c.expected = graph_of(&[
            ("main", &["main.f", "<builtin>.len", "ext.g"]),
            ("main.f", &["pkg.sub.h"]),
            ("pkg.sub.h", &[]),
        ]);
        let produced = graph_of(&[
            ("main", &["main.f", "mainly.x", "main.C"]),
            ("main.f", &["pkg.sub.h", "pkg.subway"]),
            ("main.dead", &["main.f"]),
            ("pkg.sub.h", &[]),
        ]);
        let split = c.split(&produced);
        let internal: Vec<_> = split.internal.iter().cloned().collect();
        assert_eq!(
            internal,
            [
                ("main".to_owned(), "main.f".to_owned()),
                ("main.f".into(), "pkg.sub.h".into())
            ]
        );
        // `mainly` and `pkg.subway` only share a prefix with a module.
        assert_eq!(split.external.len(), 2);
        assert_eq!(split.unreached, 1);
        // `main.C` has no node of its own: a class, not scored.
        assert_eq!(split.to_classes, 1);
        let want = c.split(&c.expected);
        let score = Score::of(&want.internal, &split.internal);
        assert_eq!((score.expected, score.found, score.tp), (2, 2, 2));
        assert_eq!(want.external.len(), 2);
    }

    #[test]
    fn a_lambdas_calls_are_its_enclosing_functions() {
        let mut c = case(&["main"], &[]);
        c.expected = graph_of(&[
            ("main", &["main.<lambda1>", "main.g"]),
            ("main.<lambda1>", &["main.f"]),
            ("main.f", &[]),
            ("main.g", &[]),
        ]);
        let want: Vec<_> = c.split(&c.expected).internal.into_iter().collect();
        assert_eq!(
            want,
            [
                ("main".to_owned(), "main.f".to_owned()),
                ("main".into(), "main.g".into())
            ]
        );
    }
}
