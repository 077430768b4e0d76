//! `cargo xtask bench localization`: how often an initial repository context
//! puts the code a task needs in front of the model, for `repo-agent
//! context` and for aider's repo map (docs/PERFORMANCE.md, "Localization").
//!
//! The tasks are `testdata/localization.json`: one-sentence user requests on
//! the libraries GitTaskBench builds on, each with hand-labelled entry points
//! (a file of the library's PyPI sdist and a `func`, `Class` or
//! `Class.method` in it). The bench fetches the sdists at the versions pinned
//! in [`crate::PYTHON_CORPORA`], checks that every label exists in the
//! sources (and fails if one does not), then for every task and token budget
//! runs
//!
//! - `repo-agent context DIR --task REQUEST --budget N --format markdown`,
//!   and with `--keywords` the same with `--keywords K1,K2,...` (the
//!   task's keywords; skipped with a note when `repo-agent context` has no
//!   such flag);
//! - aider's `RepoMap.get_repo_map` through `xtask/scripts/aider_repomap.py`
//!   in a venv under `target/aider-venv` (aider-chat pinned below), one
//!   Python process per library (with `PYTHONHASHSEED=0`: aider's maps
//!   depend on the order of its string sets): the identifiers the task text
//!   mentions, and with `--keywords` the task's keywords.
//!
//! **Hit rule**, the same function for every output: an entry point hits
//! when the text names its file (the path from the sdist's top directory,
//! or from the package directory, standing as a path of its own) and has a
//! line defining its symbol's last component (`(^|\W)(async\s+)?(def|class)\s+NAME\b`).
//! A task hits at a budget when any of its entry points does; the metric is
//! the share of tasks hit. The two conditions are checked separately: a
//! same-named definition from another file counts when the labelled file is
//! named anywhere in the text. That keeps the rule simple and identical for
//! both tools' formats; it can only over-count, equally for both.
//!
//! Outputs are kept under `target/localization/` for inspection; `--json`
//! writes every measurement. Exits non-zero on errors only, never on scores.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, bail};
use serde_json::{Value, json};

mod aider;

use self::aider::{AiderInfo, run_aider};
use crate::analysis::{load_average, thousands};
use crate::{PYTHON_CORPORA, Sdist, fetch_sdists, target_dir, workspace_root};

/// The dataset, relative to the workspace root.
const DATASET: &str = "testdata/localization.json";
/// The aider release compared with (installs on Python 3.11).
const AIDER: (&str, &str) = ("aider-chat", "0.86.2");
/// The helper that prints aider's repo map, relative to the workspace root.
const AIDER_SCRIPT: &str = "xtask/scripts/aider_repomap.py";
const DEFAULT_BUDGETS: &[u32] = &[1000, 2000, 4000, 8000];

const USAGE: &str = "usage: cargo xtask bench localization [--budgets 1000,2000,4000,8000] \
     [--only LIB,...] [--json OUT] [--no-aider] [--keywords] [--model-terms [--model-path FILE.gguf]] \
     [--verbose]\n\n  --model-terms  add the row `ours (model terms)`: the embedded model (or --model-path) \
     proposes each task's search terms, as `run` asks it to, once per task";

/// One labelled entry point: a file of the sdist and a symbol in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EntryPoint {
    /// Relative to the sdist's top directory (`pkg/mod.py`).
    pub file: String,
    /// `func`, `Class` or `Class.method`.
    pub symbol: String,
}

impl EntryPoint {
    /// The name a definition line shows: the symbol's last component.
    fn name(&self) -> &str {
        self.symbol.rsplit('.').next().unwrap_or(&self.symbol)
    }
}

/// One task of the dataset.
#[derive(Debug, Clone)]
pub(crate) struct Task {
    pub id: String,
    pub library: String,
    pub version: String,
    /// `en` (the default) or `zh`.
    pub lang: String,
    pub request: String,
    pub keywords: Vec<String>,
    pub entry_points: Vec<EntryPoint>,
}

/// Parses the dataset and checks its shape: every field present and typed,
/// ids unique, 2 to 5 keywords without commas (they are passed
/// comma-separated), `lang` `en` or `zh`, entry points with a relative path
/// and a `func`, `Class` or `Class.method` symbol. Every problem is listed.
pub(crate) fn parse_dataset(text: &str) -> anyhow::Result<Vec<Task>> {
    let root: Value = serde_json::from_str(text).context("the dataset is not valid JSON")?;
    let items = root
        .get("tasks")
        .and_then(Value::as_array)
        .context("the dataset has no \"tasks\" array")?;
    let mut errors = Vec::new();
    let mut tasks = Vec::new();
    let mut ids = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let string = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_string);
        let id = string(item.get("id")).unwrap_or_else(|| format!("#{i}"));
        let mut problem = |message: String| errors.push(format!("task {id}: {message}"));
        if !ids.insert(id.clone()) {
            problem("duplicate id".into());
        }
        let library = item.get("library");
        let (Some(library), Some(version)) = (
            string(library.and_then(|l| l.get("name"))),
            string(library.and_then(|l| l.get("version"))),
        ) else {
            problem("needs \"library\": {\"name\", \"version\"}".into());
            continue;
        };
        let Some(request) = string(item.get("request")).filter(|r| !r.trim().is_empty()) else {
            problem("needs a non-empty \"request\"".into());
            continue;
        };
        let lang = match item.get("lang") {
            None => "en".to_string(),
            Some(Value::String(lang)) if lang == "en" || lang == "zh" => lang.clone(),
            Some(other) => {
                problem(format!("\"lang\" is \"en\" or \"zh\", not {other}"));
                continue;
            }
        };
        let keywords: Option<Vec<String>> = item
            .get("keywords")
            .and_then(Value::as_array)
            .and_then(|k| k.iter().map(|w| string(Some(w))).collect());
        let keywords = match keywords {
            Some(k)
                if (2..=5).contains(&k.len())
                    && k.iter().all(|w| !w.trim().is_empty() && !w.contains(',')) =>
            {
                k
            }
            _ => {
                problem("needs 2 to 5 \"keywords\", non-empty strings without commas".into());
                continue;
            }
        };
        let Some(points) = item.get("entry_points").and_then(Value::as_array) else {
            problem("needs an \"entry_points\" array".into());
            continue;
        };
        let mut entry_points = Vec::new();
        for point in points {
            match (string(point.get("file")), string(point.get("symbol"))) {
                (Some(file), Some(symbol)) => {
                    let relative = !file.is_empty()
                        && Path::new(&file)
                            .components()
                            .all(|c| matches!(c, Component::Normal(_)));
                    let parts: Vec<&str> = symbol.split('.').collect();
                    if !relative {
                        problem(format!("entry point file {file:?} is not a relative path"));
                    } else if parts.len() > 2 || parts.iter().any(|p| !is_identifier(p)) {
                        problem(format!(
                            "entry point symbol {symbol:?} is not func, Class or Class.method"
                        ));
                    } else {
                        entry_points.push(EntryPoint { file, symbol });
                    }
                }
                _ => problem("an entry point needs \"file\" and \"symbol\"".into()),
            }
        }
        if points.is_empty() {
            problem("has no entry points".into());
        }
        tasks.push(Task {
            id,
            library,
            version,
            lang,
            request,
            keywords,
            entry_points,
        });
    }
    if !errors.is_empty() {
        bail!("{DATASET} is malformed:\n  {}", errors.join("\n  "));
    }
    Ok(tasks)
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn is_identifier(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| !c.is_numeric() && is_word(c))
        && s.chars().all(is_word)
}

/// The indentation and name of a Python line that defines a function or a
/// class (`def f`, `async def f`, `class C`), and whether it is a class.
fn definition(line: &str) -> Option<(usize, bool, &str)> {
    let trimmed = line.trim_start();
    let indent = line.len() - trimmed.len();
    let rest = trimmed
        .strip_prefix("async")
        .filter(|r| r.starts_with(char::is_whitespace))
        .map_or(trimmed, str::trim_start);
    let (is_class, rest) = match rest.strip_prefix("def") {
        Some(rest) => (false, rest),
        None => (true, rest.strip_prefix("class")?),
    };
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let rest = rest.trim_start();
    let end = rest.find(|c: char| !is_word(c)).unwrap_or(rest.len());
    (end > 0).then(|| (indent, is_class, &rest[..end]))
}

/// Whether `source` (a Python file) defines `symbol`: `func` or `Class` at
/// the top level, or `Class.method` as a method of a top-level class (a
/// `def` at the class body's indentation, before the next top-level
/// statement; lines inside triple-quoted strings do not end the class).
pub(crate) fn symbol_defined(source: &str, symbol: &str) -> bool {
    let lines = code_lines(source);
    let top_level = |line: &str| {
        !line.trim().is_empty()
            && !line.starts_with(char::is_whitespace)
            && !line.starts_with(['#', ')', ']'])
    };
    let Some((class, method)) = symbol.split_once('.') else {
        return lines
            .iter()
            .any(|l| definition(l).is_some_and(|(indent, _, name)| indent == 0 && name == symbol));
    };
    let mut block: Option<Vec<(usize, &str)>> = None;
    for line in lines {
        if let Some(defs) = &mut block {
            if top_level(line) {
                if found_method(defs, method) {
                    return true;
                }
                block = None;
            } else if let Some((indent, false, name)) = definition(line) {
                defs.push((indent, name));
            }
        }
        if top_level(line) && definition(line) == Some((0, true, class)) {
            block = Some(Vec::new());
        }
    }
    block.is_some_and(|defs| found_method(&defs, method))
}

/// The lines of `source` that do not start inside a triple-quoted string.
fn code_lines(source: &str) -> Vec<&str> {
    let mut in_string: Option<&str> = None;
    let mut code = Vec::new();
    for line in source.lines() {
        if in_string.is_none() {
            code.push(line);
        }
        for quote in ["\"\"\"", "'''"] {
            let odd = line.matches(quote).count() % 2 == 1;
            match in_string {
                Some(open) if open == quote && odd => in_string = None,
                None if odd => in_string = Some(quote),
                _ => {}
            }
        }
    }
    code
}

/// Whether `method` is among the outermost `def`s of a class body.
fn found_method(defs: &[(usize, &str)], method: &str) -> bool {
    let outer = defs.iter().map(|(indent, _)| *indent).min();
    defs.iter()
        .any(|(indent, name)| Some(*indent) == outer && *name == method)
}

/// Checks every entry point of `tasks` against the sources: the file exists
/// under its library's sdist directory (`root_of(library)`) and defines the
/// symbol. Lists every label that does not hold.
pub(crate) fn validate_labels(
    tasks: &[Task],
    root_of: impl Fn(&str) -> Option<PathBuf>,
) -> anyhow::Result<()> {
    let mut errors = Vec::new();
    for task in tasks {
        let Some(root) = root_of(&task.library) else {
            errors.push(format!("{}: no sources for {}", task.id, task.library));
            continue;
        };
        for point in &task.entry_points {
            let path = root.join(&point.file);
            match std::fs::read_to_string(&path) {
                Err(error) => errors.push(format!(
                    "{}: {} cannot be read ({error})",
                    task.id,
                    path.display()
                )),
                Ok(source) if !symbol_defined(&source, &point.symbol) => errors.push(format!(
                    "{}: {} does not define {}",
                    task.id, point.file, point.symbol
                )),
                Ok(_) => {}
            }
        }
    }
    if !errors.is_empty() {
        bail!(
            "{} label(s) of {DATASET} do not exist in the sources:\n  {}",
            errors.len(),
            errors.join("\n  ")
        );
    }
    Ok(())
}

/// Whether `text` names `file` as a path of its own: the path from the
/// sdist's top directory (`pkg/sub/mod.py`), or from the package directory
/// (`sub/mod.py`, the path without its first component). The match must not
/// continue a longer name: no word character, `.` or `-` before it (nor `/`
/// for the shorter form, which would make it another directory's file), and
/// no word character after it.
pub(crate) fn mentions_path(text: &str, file: &str) -> bool {
    let full = (file, "._-");
    let inner = file
        .split_once('/')
        .map(|(_, inner)| (inner, "._-/"))
        .filter(|(inner, _)| !inner.is_empty());
    [Some(full), inner]
        .into_iter()
        .flatten()
        .any(|(path, before_not)| {
            text.match_indices(path).any(|(at, _)| {
                let before = text[..at].chars().next_back();
                let after = text[at + path.len()..].chars().next();
                !before.is_some_and(|c| is_word(c) || before_not.contains(c))
                    && !after.is_some_and(is_word)
            })
        })
}

/// Whether `text` has a line defining `name`, as the regex
/// `(^|[^\w])(async\s+)?(def|class)\s+NAME\b` (multi-line) matches: the
/// keyword not preceded by a word character, whitespace, the name, and no
/// word character after it.
pub(crate) fn defines(text: &str, name: &str) -> bool {
    ["def", "class"].iter().any(|keyword| {
        text.match_indices(keyword).any(|(at, _)| {
            if text[..at].chars().next_back().is_some_and(is_word) {
                return false;
            }
            let rest = &text[at + keyword.len()..];
            let name_at = rest.trim_start();
            name_at.len() < rest.len()
                && name_at.starts_with(name)
                && !name_at[name.len()..].chars().next().is_some_and(is_word)
        })
    })
}

/// The hit rule for one entry point.
pub(crate) fn hits(text: &str, point: &EntryPoint) -> bool {
    mentions_path(text, &point.file) && defines(text, point.name())
}

/// What is measured: each tool, with the task text or the task's keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Row {
    OursTask,
    OursKeywords,
    /// The task text and the search terms the model proposed for it.
    OursModelTerms,
    AiderTask,
    AiderKeywords,
}

impl Row {
    const ALL: [Row; 5] = [
        Row::OursTask,
        Row::OursKeywords,
        Row::OursModelTerms,
        Row::AiderTask,
        Row::AiderKeywords,
    ];

    fn label(self) -> &'static str {
        match self {
            Row::OursTask => "ours (task text)",
            Row::OursKeywords => "ours (keywords)",
            Row::OursModelTerms => "ours (model terms)",
            Row::AiderTask => "aider (task identifiers)",
            Row::AiderKeywords => "aider (keywords)",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Row::OursTask => "ours_task",
            Row::OursKeywords => "ours_keywords",
            Row::OursModelTerms => "ours_model_terms",
            Row::AiderTask => "aider_task",
            Row::AiderKeywords => "aider_keywords",
        }
    }

    fn keywords(self) -> bool {
        matches!(self, Row::OursKeywords | Row::AiderKeywords)
    }
}

struct Options {
    budgets: Vec<u32>,
    only: Vec<String>,
    json: Option<PathBuf>,
    aider: bool,
    keywords: bool,
    model_terms: bool,
    model_path: Option<PathBuf>,
    verbose: bool,
}

fn options(rest: &[&str]) -> anyhow::Result<Options> {
    let mut options = Options {
        budgets: DEFAULT_BUDGETS.to_vec(),
        only: Vec::new(),
        json: None,
        aider: true,
        keywords: false,
        model_terms: false,
        model_path: None,
        verbose: false,
    };
    let mut args = rest.iter();
    while let Some(arg) = args.next() {
        match *arg {
            "--budgets" => {
                let list = args.next().context(USAGE)?;
                options.budgets = list
                    .split(',')
                    .map(|n| n.trim().parse::<u32>().ok().filter(|n| *n > 0))
                    .collect::<Option<Vec<_>>>()
                    .with_context(|| format!("--budgets takes positive numbers: {list}"))?;
            }
            "--only" => {
                options.only = args
                    .next()
                    .context(USAGE)?
                    .split(',')
                    .map(|s| s.trim().to_lowercase())
                    .filter(|s| !s.is_empty())
                    .collect();
            }
            "--json" => options.json = Some(PathBuf::from(args.next().context(USAGE)?)),
            "--no-aider" => options.aider = false,
            "--keywords" => options.keywords = true,
            "--model-terms" => options.model_terms = true,
            "--model-path" => {
                options.model_path = Some(PathBuf::from(args.next().context(USAGE)?));
            }
            "--verbose" | "-v" => options.verbose = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other}\n{USAGE}"),
        }
    }
    Ok(options)
}

/// One measurement: a task, a row, a budget.
struct Measure {
    task: usize,
    row: Row,
    budget: u32,
    /// Indices of the entry points that hit.
    hit_points: Vec<usize>,
    /// Tokens of the output (o200k_base, counted by the aider helper).
    tokens: Option<u64>,
    seconds: f64,
    output: PathBuf,
}

pub(crate) fn bench(rest: &[&str]) -> anyhow::Result<()> {
    let started = Instant::now();
    let options = options(rest)?;
    let root = workspace_root();
    let dataset = root.join(DATASET);
    let text = std::fs::read_to_string(&dataset)
        .with_context(|| format!("cannot read {}", dataset.display()))?;
    let mut tasks = parse_dataset(&text)?;
    let libraries: BTreeSet<String> = tasks.iter().map(|t| t.library.to_lowercase()).collect();
    if let Some(unknown) = options.only.iter().find(|o| !libraries.contains(*o)) {
        bail!(
            "--only {unknown}: no such library in {DATASET} (there are {})",
            libraries.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    tasks.retain(|t| options.only.is_empty() || options.only.contains(&t.library.to_lowercase()));

    // The sdists, at the versions the other benches pin.
    let sdist_of = |task: &Task| -> anyhow::Result<&'static Sdist> {
        let sdist = PYTHON_CORPORA
            .iter()
            .find(|s| s.package.eq_ignore_ascii_case(&task.library))
            .with_context(|| format!("{}: {} is not in PYTHON_CORPORA", task.id, task.library))?;
        if sdist.version != task.version {
            bail!(
                "{}: {DATASET} labels {}=={} but the corpus pins {}",
                task.id,
                task.library,
                task.version,
                sdist.version
            );
        }
        Ok(sdist)
    };
    for task in &tasks {
        sdist_of(task)?;
    }
    let wanted: BTreeSet<&str> = tasks.iter().map(|t| t.library.as_str()).collect();
    let roots = fetch_sdists(|s| wanted.iter().any(|w| s.package.eq_ignore_ascii_case(w)))?;
    let root_of = |library: &str| -> Option<PathBuf> {
        roots
            .iter()
            .find(|(s, _)| s.package.eq_ignore_ascii_case(library))
            .map(|(_, dir)| dir.clone())
    };
    validate_labels(&tasks, root_of)?;
    eprintln!(
        "{} tasks on {} libraries: every label exists in the sources",
        tasks.len(),
        wanted.len()
    );

    let binary = crate::release_binary("repo-agent", "repo-agent")?;
    let help = Command::new(&binary)
        .args(["context", "--help"])
        .output()
        .with_context(|| format!("cannot run {}", binary.display()))?;
    let keywords_flag = String::from_utf8_lossy(&help.stdout).contains("--keywords");
    let mut notes = Vec::new();
    let mut rows = vec![Row::OursTask];
    if options.keywords {
        if keywords_flag {
            rows.push(Row::OursKeywords);
        } else {
            let note = "`repo-agent context --help` lists no --keywords: the ours (keywords) row is skipped";
            eprintln!("note: {note}");
            notes.push(note.to_string());
        }
    }
    // The model's terms, once per task, one task at a time (the model
    // uses every core): what `run` adds to the task when its words find
    // too little.
    let mut model_terms: Vec<Vec<String>> = vec![Vec::new(); tasks.len()];
    let mut model_seconds = 0.0;
    if options.model_terms {
        let started = Instant::now();
        for (i, task) in tasks.iter().enumerate() {
            let dir = root_of(&task.library).context("the sdist's directory is gone")?;
            model_terms[i] = ask_model_terms(&binary, &dir, task, options.model_path.as_deref())?;
            if options.verbose {
                eprintln!("{}: {}", task.id, model_terms[i].join(", "));
            }
        }
        model_seconds = started.elapsed().as_secs_f64();
        eprintln!(
            "model terms for {} tasks in {model_seconds:.0} s",
            tasks.len()
        );
        rows.push(Row::OursModelTerms);
    }
    if options.aider {
        rows.push(Row::AiderTask);
        if options.keywords {
            rows.push(Row::AiderKeywords);
        }
    }

    let out_dir = target_dir().join("localization");
    let ours_started = Instant::now();
    let ours_rows: Vec<Row> = rows
        .iter()
        .copied()
        .filter(|r| matches!(r, Row::OursTask | Row::OursKeywords | Row::OursModelTerms))
        .collect();
    let mut measures = run_ours(
        &binary,
        &tasks,
        &model_terms,
        &ours_rows,
        &options.budgets,
        &out_dir,
        &root_of,
    )?;
    let ours_seconds = ours_started.elapsed().as_secs_f64();

    let mut aider_info = None;
    let aider_started = Instant::now();
    if options.aider {
        let info = run_aider(&tasks, &rows, &options, &roots, &out_dir, &mut measures)?;
        aider_info = Some(info);
    }
    let aider_seconds = aider_started.elapsed().as_secs_f64();

    let context = RunInfo {
        command: std::iter::once("cargo xtask bench localization")
            .chain(rest.iter().copied())
            .collect::<Vec<_>>()
            .join(" "),
        date: command_line("date", &["-u", "+%Y-%m-%d"]).unwrap_or_default(),
        commit: commit(),
        repo_agent: command_line(&binary.to_string_lossy(), &["--version"]).unwrap_or_default(),
        machine: machine(),
        aider: aider_info,
        notes,
        ours_seconds,
        model_terms,
        model_seconds,
        aider_seconds,
        total_seconds: started.elapsed().as_secs_f64(),
        keywords_flag,
    };
    let report = report(&tasks, &rows, &options, &measures, &context);
    println!("{report}");
    if let Some(path) = &options.json {
        let value = to_json(&tasks, &rows, &options, &measures, &context);
        std::fs::write(path, serde_json::to_string_pretty(&value)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// The search terms the model proposes for `task`: `repo-agent context
/// --model-terms` prints them on stderr (`search terms: A, B, C`).
fn ask_model_terms(
    binary: &Path,
    dir: &Path,
    task: &Task,
    model_path: Option<&Path>,
) -> anyhow::Result<Vec<String>> {
    let mut command = Command::new(binary);
    command.arg("context").arg(dir).args([
        "--task",
        &task.request,
        "--budget",
        "500",
        "--model-terms",
    ]);
    if let Some(path) = model_path {
        command.arg("--model-path").arg(path);
    }
    let output = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", binary.display()))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        bail!(
            "{}: asking for search terms failed: {}",
            task.id,
            stderr.trim()
        );
    }
    Ok(terms_line(&stderr))
}

/// The terms of the `search terms: A, B, C` line of `stderr`.
fn terms_line(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("search terms: "))
        .map(|terms| {
            terms
                .split(", ")
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Runs `repo-agent context` for every task, row and budget, as many at a
/// time as there are CPUs; saves each output under `out_dir/<row>/`.
fn run_ours(
    binary: &Path,
    tasks: &[Task],
    model_terms: &[Vec<String>],
    rows: &[Row],
    budgets: &[u32],
    out_dir: &Path,
    root_of: &(dyn Fn(&str) -> Option<PathBuf> + Sync),
) -> anyhow::Result<Vec<Measure>> {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rayon::prelude::*;
    for row in rows {
        let folder = out_dir.join(row.key());
        std::fs::create_dir_all(&folder)
            .with_context(|| format!("cannot create {}", folder.display()))?;
    }
    let jobs: Vec<(usize, Row, u32)> = (0..tasks.len())
        .flat_map(|t| {
            rows.iter()
                .flat_map(move |&r| budgets.iter().map(move |&b| (t, r, b)))
        })
        .collect();
    let one = |(t, row, budget): (usize, Row, u32)| -> anyhow::Result<Measure> {
        let task = &tasks[t];
        let dir = root_of(&task.library).context("the sdist's directory is gone")?;
        let mut command = Command::new(binary);
        command
            .arg("context")
            .arg(&dir)
            .args(["--task", &task.request])
            .args(["--budget", &budget.to_string()])
            .args(["--format", "markdown"]);
        if row.keywords() {
            command.args(["--keywords", &task.keywords.join(",")]);
        }
        if row == Row::OursModelTerms && !model_terms[t].is_empty() {
            command.args(["--keywords", &model_terms[t].join(",")]);
        }
        let start = Instant::now();
        let output = command
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("cannot run {}", binary.display()))?;
        let seconds = start.elapsed().as_secs_f64();
        if !output.status.success() {
            bail!(
                "{command:?} failed with {}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        let text = String::from_utf8_lossy(&output.stdout);
        let path = out_dir
            .join(row.key())
            .join(format!("{}.{budget}.md", task.id));
        std::fs::write(&path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(Measure {
            task: t,
            row,
            budget,
            hit_points: hit_points(&text, task),
            tokens: None,
            seconds,
            output: path,
        })
    };
    // Rayon's pool has a thread per CPU; collecting into a `Result` stops
    // handing out work at the first error, which is returned.
    let done = AtomicUsize::new(0);
    let mut measures = jobs
        .par_iter()
        .map(|&job| {
            let result = one(job);
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_multiple_of(50) || n == jobs.len() {
                eprintln!("ours: {n}/{} contexts", jobs.len());
            }
            result
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    measures.sort_by_key(|m| (m.task, m.row.key(), m.budget));
    Ok(measures)
}

fn hit_points(text: &str, task: &Task) -> Vec<usize> {
    task.entry_points
        .iter()
        .enumerate()
        .filter(|(_, p)| hits(text, p))
        .map(|(i, _)| i)
        .collect()
}

/// The first line a command prints, if it runs.
fn command_line(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program)
        .args(args)
        .current_dir(workspace_root())
        .output()
        .ok()?;
    output.status.success().then(|| {
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string()
    })
}

/// The commit measured, and whether the working tree differed from it
/// (what was built is then not exactly that commit).
fn commit() -> String {
    let head = command_line("git", &["rev-parse", "--short", "HEAD"]).unwrap_or_default();
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .current_dir(workspace_root())
        .output()
        .is_ok_and(|o| !o.stdout.is_empty());
    if dirty {
        format!("{head} (with uncommitted changes)")
    } else {
        head
    }
}

/// CPU model, logical CPUs and load average.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    format!(
        "{cpu}, {cpus} logical CPUs, load average {} at the end",
        load_average().unwrap_or_else(|| "?".into())
    )
}

struct RunInfo {
    command: String,
    date: String,
    commit: String,
    repo_agent: String,
    machine: String,
    aider: Option<AiderInfo>,
    notes: Vec<String>,
    ours_seconds: f64,
    aider_seconds: f64,
    total_seconds: f64,
    keywords_flag: bool,
    /// Each task's model-proposed terms (empty without `--model-terms`).
    model_terms: Vec<Vec<String>>,
    /// Time the model took to propose them, over all tasks.
    model_seconds: f64,
}

/// Hits and token statistics of one row at one budget, over `which` tasks.
struct Cell {
    hits: usize,
    tasks: usize,
    mean_tokens: Option<f64>,
    max_tokens: Option<u64>,
}

fn cell(measures: &[Measure], row: Row, budget: u32, which: impl Fn(usize) -> bool) -> Cell {
    let chosen: Vec<&Measure> = measures
        .iter()
        .filter(|m| m.row == row && m.budget == budget && which(m.task))
        .collect();
    let tokens: Vec<u64> = chosen.iter().filter_map(|m| m.tokens).collect();
    Cell {
        hits: chosen.iter().filter(|m| !m.hit_points.is_empty()).count(),
        tasks: chosen.len(),
        mean_tokens: (!tokens.is_empty() && tokens.len() == chosen.len())
            .then(|| tokens.iter().sum::<u64>() as f64 / tokens.len() as f64),
        max_tokens: (tokens.len() == chosen.len())
            .then(|| tokens.iter().max().copied())
            .flatten(),
    }
}

fn share(cell: &Cell) -> String {
    if cell.tasks == 0 {
        return "—".into();
    }
    format!(
        "{}/{} ({:.0}%)",
        cell.hits,
        cell.tasks,
        100.0 * cell.hits as f64 / cell.tasks as f64
    )
}

fn report(
    tasks: &[Task],
    rows: &[Row],
    options: &Options,
    measures: &[Measure],
    info: &RunInfo,
) -> String {
    let mut out = String::new();
    let libraries: BTreeSet<&str> = tasks.iter().map(|t| t.library.as_str()).collect();
    let zh = tasks.iter().filter(|t| t.lang == "zh").count();
    let _ = writeln!(
        out,
        "\n## Localization: {} tasks on {} libraries ({zh} in Chinese)\n",
        tasks.len(),
        libraries.len()
    );
    let _ = writeln!(
        out,
        "Share of tasks whose context names an entry point's file and shows a line defining it.\n"
    );
    let header = |out: &mut String, first: &str| {
        let _ = writeln!(
            out,
            "| {first} | {} |\n| --- |{}",
            Row::ALL.map(Row::label).join(" | "),
            " --- |".repeat(Row::ALL.len())
        );
    };
    // One table row per budget, one cell per row of the comparison.
    let budget_table = |out: &mut String, cell_text: &dyn Fn(Row, u32) -> String| {
        header(out, "budget");
        for &budget in &options.budgets {
            let cells: Vec<String> = Row::ALL
                .iter()
                .map(|&row| {
                    if rows.contains(&row) {
                        cell_text(row, budget)
                    } else {
                        "skipped".into()
                    }
                })
                .collect();
            let _ = writeln!(
                out,
                "| {} | {} |",
                thousands(u64::from(budget)),
                cells.join(" | ")
            );
        }
    };
    budget_table(&mut out, &|row, budget| {
        share(&cell(measures, row, budget, |_| true))
    });
    if zh > 0 && zh < tasks.len() {
        let _ = writeln!(out, "\nBy language (English / Chinese tasks):\n");
        budget_table(&mut out, &|row, budget| {
            let en = cell(measures, row, budget, |t| tasks[t].lang != "zh");
            let zh = cell(measures, row, budget, |t| tasks[t].lang == "zh");
            format!("{} / {}", share(&en), share(&zh))
        });
    }
    let counted = measures.iter().any(|m| m.tokens.is_some());
    if counted {
        let _ = writeln!(
            out,
            "\nTokens of the outputs (o200k_base; mean / max over the tasks):\n"
        );
        header(&mut out, "budget");
        for &budget in &options.budgets {
            let cells: Vec<String> = Row::ALL
                .iter()
                .map(|&row| {
                    let c = cell(measures, row, budget, |_| true);
                    match (rows.contains(&row), c.mean_tokens, c.max_tokens) {
                        (false, ..) => "skipped".into(),
                        (true, Some(mean), Some(max)) => {
                            format!("{} / {}", thousands(mean.round() as u64), thousands(max))
                        }
                        _ => "—".into(),
                    }
                })
                .collect();
            let _ = writeln!(
                out,
                "| {} | {} |",
                thousands(u64::from(budget)),
                cells.join(" | ")
            );
        }
    }
    let _ = writeln!(
        out,
        "\nBy library (task-text rows, hits per budget {}):\n",
        {
            options
                .budgets
                .iter()
                .map(|b| thousands(u64::from(*b)))
                .collect::<Vec<_>>()
                .join(" / ")
        }
    );
    let text_rows: Vec<Row> = rows.iter().copied().filter(|r| !r.keywords()).collect();
    let _ = writeln!(
        out,
        "| library | tasks | {} |\n| --- | --- |{}",
        text_rows
            .iter()
            .map(|r| r.label())
            .collect::<Vec<_>>()
            .join(" | "),
        " --- |".repeat(text_rows.len())
    );
    for library in &libraries {
        let of = |t: usize| tasks[t].library == *library;
        let count = tasks.iter().filter(|t| t.library == *library).count();
        let version = tasks
            .iter()
            .find(|t| t.library == *library)
            .map(|t| t.version.as_str())
            .unwrap_or_default();
        let cells: Vec<String> = text_rows
            .iter()
            .map(|&row| {
                options
                    .budgets
                    .iter()
                    .map(|&b| cell(measures, row, b, of).hits.to_string())
                    .collect::<Vec<_>>()
                    .join(" / ")
            })
            .collect();
        let _ = writeln!(
            out,
            "| {library} {version} | {count} | {} |",
            cells.join(" | ")
        );
    }
    let _ = writeln!(out);
    for note in &info.notes {
        let _ = writeln!(out, "Note: {note}.");
    }
    if let Some(aider) = &info.aider {
        let _ = writeln!(
            out,
            "aider-chat {}, tokens counted with {}.",
            aider.version, aider.token_counter
        );
    }
    let _ = writeln!(
        out,
        "{}; {}; commit {}; {}.\nTime: model terms {:.0} s, ours {:.0} s, aider {:.0} s, total {:.0} s.\nCommand: `{}`",
        info.date,
        info.repo_agent,
        info.commit,
        info.machine,
        info.model_seconds,
        info.ours_seconds,
        info.aider_seconds,
        info.total_seconds,
        info.command
    );
    if options.verbose {
        let _ = writeln!(out, "\nMisses (row: budgets missed):");
        for (t, task) in tasks.iter().enumerate() {
            let missed: Vec<String> = rows
                .iter()
                .filter_map(|&row| {
                    let budgets: Vec<String> = measures
                        .iter()
                        .filter(|m| m.task == t && m.row == row && m.hit_points.is_empty())
                        .map(|m| m.budget.to_string())
                        .collect();
                    (!budgets.is_empty())
                        .then(|| format!("{}: {}", row.label(), budgets.join(", ")))
                })
                .collect();
            if missed.is_empty() {
                continue;
            }
            let wanted: Vec<String> = task
                .entry_points
                .iter()
                .map(|p| format!("{}::{}", p.file, p.symbol))
                .collect();
            let _ = writeln!(
                out,
                "- {} \"{}\" wants {}\n    {}",
                task.id,
                task.request,
                wanted.join(", "),
                missed.join("; ")
            );
        }
    }
    out
}

fn to_json(
    tasks: &[Task],
    rows: &[Row],
    options: &Options,
    measures: &[Measure],
    info: &RunInfo,
) -> Value {
    let per_budget = |row: Row, which: &dyn Fn(usize) -> bool| -> Value {
        options
            .budgets
            .iter()
            .map(|&b| {
                let c = cell(measures, row, b, which);
                (
                    b.to_string(),
                    json!({
                        "hits": c.hits,
                        "tasks": c.tasks,
                        "share": if c.tasks == 0 { Value::Null } else { json!(c.hits as f64 / c.tasks as f64) },
                        "mean_tokens": c.mean_tokens,
                        "max_tokens": c.max_tokens,
                    }),
                )
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let summary: serde_json::Map<String, Value> = rows
        .iter()
        .map(|&row| (row.key().to_string(), per_budget(row, &|_| true)))
        .collect();
    let tasks_json: Vec<Value> = tasks
        .iter()
        .enumerate()
        .map(|(t, task)| {
            let results: serde_json::Map<String, Value> = rows
                .iter()
                .map(|&row| {
                    let by_budget: serde_json::Map<String, Value> = measures
                        .iter()
                        .filter(|m| m.task == t && m.row == row)
                        .map(|m| {
                            (
                                m.budget.to_string(),
                                json!({
                                    "hit": !m.hit_points.is_empty(),
                                    "entry_points_hit": m.hit_points,
                                    "tokens": m.tokens,
                                    "seconds": m.seconds,
                                    "output": m.output,
                                }),
                            )
                        })
                        .collect();
                    (row.key().to_string(), Value::Object(by_budget))
                })
                .collect();
            json!({
                "id": task.id,
                "library": task.library,
                "version": task.version,
                "lang": task.lang,
                "request": task.request,
                "keywords": task.keywords,
                "model_terms": info.model_terms.get(t),
                "entry_points": task.entry_points.iter().map(|p| json!({"file": p.file, "symbol": p.symbol})).collect::<Vec<_>>(),
                "results": results,
            })
        })
        .collect();
    json!({
        "command": info.command,
        "date": info.date,
        "commit": info.commit,
        "repo_agent": info.repo_agent,
        "repo_agent_keywords_flag": info.keywords_flag,
        "machine": info.machine,
        "aider": info.aider.as_ref().map(|a| json!({"version": a.version, "token_counter": a.token_counter})),
        "budgets": options.budgets,
        "rows": rows.iter().map(|r| json!({"key": r.key(), "label": r.label()})).collect::<Vec<_>>(),
        "notes": info.notes,
        "seconds": {"model_terms": info.model_seconds, "ours": info.ours_seconds, "aider": info.aider_seconds, "total": info.total_seconds},
        "summary": summary,
        "tasks": tasks_json,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(file: &str, symbol: &str) -> EntryPoint {
        EntryPoint {
            file: file.into(),
            symbol: symbol.into(),
        }
    }

    #[test]
    fn model_terms_are_read_from_their_line_and_the_flags_parse() -> anyhow::Result<()> {
        let stderr =
            "No model configured: using ...\nsearch terms: extract, html to text, Extractor\n";
        assert_eq!(terms_line(stderr), ["extract", "html to text", "Extractor"]);
        assert!(terms_line("search terms: \n").is_empty());
        assert!(terms_line("nothing here").is_empty());
        let parsed = options(&["--model-terms", "--model-path", "m.gguf", "--no-aider"])?;
        assert!(parsed.model_terms && !parsed.aider);
        assert_eq!(parsed.model_path.as_deref(), Some(Path::new("m.gguf")));
        Ok(())
    }

    #[test]
    fn hit_needs_the_file_and_a_definition() {
        let p = point("pkg/mod.py", "func");
        assert!(hits("## `pkg/mod.py`\n```python\ndef func(x):\n```", &p));
        // aider's map: the file, then its lines behind a box-drawing bar.
        assert!(hits("pkg/mod.py:\n⋮\n│def func(\n│    x,\n", &p));
        assert!(hits(
            "| `pkg.mod` | `pkg/mod.py` | Defines async def func(x) |",
            &p
        ));
        // The path from the package directory counts too.
        assert!(hits("mod.py:\n│def func(x):", &p));
        // The file without a definition, or a definition without the file.
        assert!(!hits("| `pkg/mod.py` | 12 functions |\n", &p));
        assert!(!hits("def func(x): pass\n", &p));
        // Other names: a longer name, a word ending in def, a call.
        assert!(!hits("pkg/mod.py\ndef func_two(x):", &p));
        assert!(!hits("pkg/mod.py\nundef func(x)", &p));
        assert!(!hits("pkg/mod.py\nfunc(x)", &p));
    }

    #[test]
    fn classes_and_methods_match_their_last_name() {
        let class = point("pkg/a.py", "Reader");
        assert!(hits("pkg/a.py\nclass Reader(Base):", &class));
        assert!(!hits("pkg/a.py\nclass PdfReader(Base):", &class));
        let method = point("pkg/a.py", "Reader.extract_text");
        assert!(hits(
            "pkg/a.py\nclass Reader:\n    def extract_text(self):",
            &method
        ));
    }

    #[test]
    fn paths_must_stand_on_their_own() {
        assert!(mentions_path("see `pkg/sub/mod.py`.", "pkg/sub/mod.py"));
        assert!(mentions_path("(sub/mod.py)", "pkg/sub/mod.py"));
        assert!(!mentions_path("pkg/sub/mod.pyc", "pkg/sub/mod.py"));
        assert!(!mentions_path("pkg/sub/other_mod.py", "pkg/sub/mod.py"));
        // Same name in another directory: neither form matches.
        assert!(!mentions_path("other/sub/mod.py", "pkg/sub/mod.py"));
        assert!(!mentions_path("pkg/other/mod.py", "pkg/mod.py"));
        // A top-level file has no shorter form.
        assert!(mentions_path("setup.py", "setup.py"));
    }

    /// The documented limitation: the two conditions are checked
    /// separately, so a same-named definition shown for another file counts
    /// when the labelled file is named anywhere in the text, and only then.
    #[test]
    fn a_same_named_definition_elsewhere_counts_only_with_the_file_named() {
        let p = point("stegano/lsb/lsb.py", "hide");
        let other_file_only = "stegano/red/red.py:\n│def hide(image, message):\n";
        assert!(!hits(other_file_only, &p));
        let both_named = format!("{other_file_only}\nstegano/lsb/lsb.py\n");
        assert!(hits(&both_named, &p));
    }

    #[test]
    fn symbols_are_found_in_python_sources() {
        let source = r#"
import os

def top(a):
    def inner():
        pass

async def fetch():
    pass

class Reader(
    Base,
):
    """Docs.

class NotAClass:
    def fake(self):
"""

    def read(self):
        def helper():
            pass

    @property
    async def pages(self):
        pass

VALUE = 1

class Writer:
    def write(self):
        pass
"#;
        assert!(symbol_defined(source, "top"));
        assert!(symbol_defined(source, "fetch"));
        assert!(symbol_defined(source, "Reader"));
        assert!(symbol_defined(source, "Reader.read"));
        assert!(symbol_defined(source, "Reader.pages"));
        assert!(symbol_defined(source, "Writer.write"));
        // Nested functions, other classes' methods, names in strings.
        assert!(!symbol_defined(source, "inner"));
        assert!(!symbol_defined(source, "Reader.helper"));
        assert!(!symbol_defined(source, "Reader.write"));
        assert!(!symbol_defined(source, "Writer.read"));
        assert!(!symbol_defined(source, "NotAClass"));
        assert!(!symbol_defined(source, "Reader.fake"));
        assert!(!symbol_defined(source, "read"));
    }

    #[test]
    fn the_dataset_is_well_formed_and_large_enough() -> anyhow::Result<()> {
        let text = std::fs::read_to_string(workspace_root().join(DATASET))?;
        let tasks = parse_dataset(&text)?;
        let libraries: BTreeSet<&str> = tasks.iter().map(|t| t.library.as_str()).collect();
        assert!(tasks.len() >= 44, "{} tasks", tasks.len());
        assert!(libraries.len() >= 11, "{libraries:?}");
        let zh = tasks.iter().filter(|t| t.lang == "zh").count();
        assert!((5..=8).contains(&zh), "{zh} Chinese tasks");
        // Every library is one the corpus pins, at that version.
        for task in &tasks {
            let pinned = PYTHON_CORPORA
                .iter()
                .find(|s| s.package == task.library)
                .map(|s| s.version);
            assert_eq!(pinned, Some(task.version.as_str()), "{}", task.id);
        }
        // Most requests do not spell out the symbol they need.
        let named = tasks
            .iter()
            .filter(|t| {
                t.entry_points.iter().any(|p| {
                    p.name().len() > 3
                        && t.request.to_lowercase().contains(&p.name().to_lowercase())
                })
            })
            .count();
        assert!(
            named * 4 < tasks.len(),
            "{named} requests name their symbol"
        );
        Ok(())
    }

    #[test]
    fn malformed_datasets_are_refused_with_every_problem() {
        let task = |id: &str, keywords: &str, symbol: &str| {
            format!(
                r#"{{"id": "{id}", "library": {{"name": "x", "version": "1"}}, "request": "Do it.",
                   "keywords": {keywords}, "entry_points": [{{"file": "x/a.py", "symbol": "{symbol}"}}]}}"#
            )
        };
        let good = task("a", r#"["k1", "k2"]"#, "f");
        assert!(parse_dataset(&format!(r#"{{"tasks": [{good}]}}"#)).is_ok());
        let bad = format!(
            r#"{{"tasks": [{good}, {}, {}, {}]}}"#,
            task("a", r#"["k1", "k2"]"#, "f"),
            task("b", r#"["one, two", "k"]"#, "f"),
            task("c", r#"["k1", "k2"]"#, "A.b.c"),
        );
        let error = parse_dataset(&bad)
            .err()
            .map(|e| format!("{e:#}"))
            .unwrap_or_default();
        assert!(error.contains("task a: duplicate id"), "{error}");
        assert!(error.contains("task b: needs 2 to 5"), "{error}");
        assert!(error.contains("task c: entry point symbol"), "{error}");
        assert!(parse_dataset(r#"{"tasks": [{"id": "x"}]}"#).is_err());
    }

    #[test]
    fn labels_are_checked_against_the_files() -> anyhow::Result<()> {
        let dir = std::env::temp_dir().join(format!("xtask-localization-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("pkg"))?;
        std::fs::write(
            dir.join("pkg/mod.py"),
            "class A:\n    def run(self):\n        pass\n",
        )?;
        let task = |points: Vec<EntryPoint>| Task {
            id: "t".into(),
            library: "lib".into(),
            version: "1".into(),
            lang: "en".into(),
            request: "Do it.".into(),
            keywords: vec!["a".into(), "b".into()],
            entry_points: points,
        };
        let root = |_: &str| Some(dir.clone());
        let good = [task(vec![
            point("pkg/mod.py", "A"),
            point("pkg/mod.py", "A.run"),
        ])];
        let checked = validate_labels(&good, root);
        let bad = [task(vec![
            point("pkg/mod.py", "run"),
            point("pkg/gone.py", "A"),
        ])];
        let error = validate_labels(&bad, root).err().map(|e| format!("{e:#}"));
        std::fs::remove_dir_all(&dir)?;
        checked?;
        let error = error.unwrap_or_default();
        assert!(error.contains("pkg/mod.py does not define run"), "{error}");
        assert!(error.contains("gone.py cannot be read"), "{error}");
        Ok(())
    }
}
