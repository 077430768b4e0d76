//! Structural model of a Python or Java repository: the hierarchical code
//! tree (HCT), the function call graph (FCG) and the module dependency graph
//! (MDG) of RepoMaster (seed 001, section 3.2.1), plus web routes, built in
//! parallel with tree-sitter.
//!
//! [`Analyzer`] walks a directory (respecting `.gitignore`), parses every
//! `.py`, `.pyi`, notebook and `.java` file in parallel, resolves imports,
//! base classes and calls across files, and returns a [`RepoGraph`]. Python
//! and Java files can be mixed; [`Analyzer::languages`] keeps one. Nothing in
//! a repository's content can make it panic: syntax errors, invalid UTF-8,
//! binary and huge files, symlink loops are all analysed as far as possible
//! and counted.
//!
//! ```
//! # fn main() -> Result<(), repo_graph::Error> {
//! let dir = tempfile::tempdir().map_err(|e| repo_graph::Error::Io(e))?;
//! std::fs::write(dir.path().join("main.py"), "def f():\n    g()\n\ndef g():\n    pass\n")
//!     .map_err(repo_graph::Error::Io)?;
//!
//! let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
//! let f = graph.entity("main.f").expect("main.f is defined");
//! let callees: Vec<&str> = graph.callees(f, 1).iter().filter_map(|r| graph.qualname(r.entity)).collect();
//! assert_eq!(callees, ["main.g"]);
//! assert_eq!(graph.stats().functions, 2);
//! # Ok(())
//! # }
//! ```
//!
//! Repeated analysis of the same tree is incremental: an [`Analyzer`] keeps
//! the per-file facts of every file it has seen, keyed by content hash, and
//! with [`Analyzer::cache_dir`] also keeps them on disk between runs, so only
//! changed files are parsed again.
//!
//! ```
//! # fn main() -> Result<(), repo_graph::Error> {
//! # let dir = tempfile::tempdir().map_err(repo_graph::Error::Io)?;
//! # std::fs::write(dir.path().join("a.py"), "import b\nb.h()\n").map_err(repo_graph::Error::Io)?;
//! # std::fs::write(dir.path().join("b.py"), "def h(): pass\n").map_err(repo_graph::Error::Io)?;
//! let cache = tempfile::tempdir().map_err(repo_graph::Error::Io)?;
//! let analyzer = repo_graph::Analyzer::new(dir.path())
//!     .cache_dir(cache.path())
//!     .max_file_size(1 << 20);
//! let first = analyzer.analyze()?;
//! let second = analyzer.analyze()?; // parses nothing: every file is a cache hit
//! assert_eq!(first.stats().call_edges, second.stats().call_edges);
//! let path = graph_path(&second);
//! # fn graph_path(g: &repo_graph::RepoGraph) -> Vec<String> {
//! #     let a = g.module_by_name("a").unwrap(); let b = g.module_by_name("b").unwrap();
//! #     g.dependency_path(a, b).unwrap().iter().map(|m| g.module(*m).unwrap().name.clone()).collect()
//! # }
//! assert_eq!(path, ["a", "b"]);
//! # Ok(())
//! # }
//! ```
//!
//! Java works the same way. Qualified names follow Java's: the package
//! declaration, then types and members; a compilation unit is named after
//! its file (`com.example.App.java`), so it never shares a name with its
//! primary type.
//!
//! ```
//! # fn main() -> Result<(), repo_graph::Error> {
//! # let dir = tempfile::tempdir().map_err(repo_graph::Error::Io)?;
//! # let write = |p: &str, t: &str| std::fs::write(dir.path().join(p), t).map_err(repo_graph::Error::Io);
//! write("App.java", "package app;\nclass App {\n  void run() { new Repo().save(1); }\n}\n")?;
//! write("Repo.java", "package app;\nclass Repo {\n  void save(int id) {}\n  void save(String s) {}\n}\n")?;
//! let graph = repo_graph::Analyzer::new(dir.path())
//!     .languages([repo_graph::Language::Java])
//!     .analyze()?;
//! let calls = graph.calls_map();
//! // Same package, so no import is needed; the overload is chosen by its argument.
//! assert_eq!(calls["app.App.run"], ["app.Repo", "app.Repo.save(int)"]);
//! assert!(graph.module_by_name("app.App.java").is_some());
//! # Ok(())
//! # }
//! ```
//!
//! The JSON form of the whole graph is [`GraphDocument`] (see
//! `docs/GRAPH_SCHEMA.md`); [`RepoGraph::calls_map`], [`RepoGraph::tree_text`],
//! [`RepoGraph::dot`] and [`RepoGraph::routes`] give the other views the
//! `repo-agent analyze` command prints. [`RepoGraph::usage`] tells how the
//! repository is meant to be used ([`UsageFacts`]: console scripts, main
//! modules, command-line interfaces, public API, examples).
//!
//! # What is stable
//!
//! The API is the [`Analyzer`] builder, the [`RepoGraph`] and its queries,
//! the entities it hands out ([`Module`], [`Class`], [`Function`], [`Route`],
//! [`UsageFacts`] and their parts), [`Stats`] and the JSON form
//! [`GraphDocument`] (whose `schema_version` is bumped on any incompatible
//! change, see `docs/GRAPH_SCHEMA.md`). Every public struct and enum is
//! `#[non_exhaustive]` except [`EntityId`] (the three kinds of entity are
//! the model): fields and variants may be added in a minor release, so
//! match with a wildcard and build nothing of these yourself. Ids
//! ([`ModuleId`], [`ClassId`], [`FunctionId`]) are opaque; get them from
//! the graph ([`RepoGraph::module_ids`], [`RepoGraph::entity`], ...). What
//! only one language has sits behind a language enum ([`ClassDetail`],
//! [`FunctionDetail`]). No dependency's type is part of the API unless a
//! feature asks for it, and `cargo xtask semver` (cargo-semver-checks)
//! reports any breaking change against a git revision.
//!
//! Cargo features: `python` and `java` (default: both) each bring one
//! language's grammar and extraction; without one, its files are skipped
//! and [`Analyzer::languages`] with it fails with
//! [`Error::LanguageNotBuilt`]. `petgraph-api` adds
//! `RepoGraph::call_graph`/`RepoGraph::dependency_graph` as petgraph
//! graphs (otherwise [`RepoGraph::call_edges`] and
//! [`RepoGraph::module_edges`] give the same edges). `measure` exposes the
//! measuring tools' hooks (a parse-only walk), for the benches.

#![deny(missing_docs)]

#[cfg(not(any(feature = "python", feature = "java")))]
compile_error!(
    "repo-graph analyses nothing without a language: enable its `python` or `java` feature"
);

mod assemble;
mod budget;
mod cache;
mod facts;
mod frameworks;
mod graph;
mod hct;
mod lang;
mod memory;
mod model;
mod names;
mod render;
mod routes;
mod source;
mod stats;
mod text;
mod usage;
mod walk;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rayon::prelude::*;

pub use budget::{MAX_FILE_FACTS, MAX_INDENT, MAX_NESTING};
pub use graph::{Coupling, ModuleStats, Reach, RepoGraph};
pub use hct::{HctKind, HctNode};
pub use lang::present::Outline;
use memory::MemoryUse;
pub use memory::default_memory_ceiling;
pub use model::{
    Base, BaseRelation, Budget, Class, ClassDetail, ClassId, Complexity, EntityId, Function,
    FunctionDetail, FunctionId, FunctionKind, Import, ImportKind, ImportTarget, JavaField,
    JavaMethod, JavaType, JavaTypeKind, Language, Modifier, Module, ModuleId, Param, ParamKind,
    Partial, SkipReason, Skipped, SourceKind, Span, UnresolvedCall,
};
pub use render::{CallEdge, GraphDocument, ModuleEdge, RoutesDocument, SCHEMA_VERSION};
pub use routes::{Endpoint, Framework, HttpMethod, Route, same_path};
pub use stats::{Phases, ResolutionStats, Stats};
pub use usage::{
    ApiEntry, ApiOrigin, CliCommand, CliFramework, CliOption, ConfigSkip, ConfigSkipReason,
    Distribution, EntryPoint, EntryPointKind, EntryPointSource, ExampleScript, MainEntry, MainKind,
    UsageFacts,
};

/// Splits the cost of one file of `language` into parsing and extraction
/// (for the measure tools; behind the `measure` feature).
#[cfg(feature = "measure")]
pub fn time_parse_and_extract_in(
    language: Language,
    text: &str,
) -> Option<(std::time::Duration, std::time::Duration)> {
    match language {
        #[cfg(feature = "python")]
        Language::Python => lang::python::time_parse_and_extract(text),
        #[cfg(feature = "java")]
        Language::Java => lang::java::time_parse_and_extract(text),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// Files larger than this are skipped unless configured otherwise (2 MiB).
pub const DEFAULT_MAX_FILE_SIZE: u64 = 2 * 1024 * 1024;

/// Errors of the analysis. Problems with individual files are not errors:
/// they are counted in [`Stats::skipped`] and [`Stats::parse_errors`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The root directory does not exist or cannot be read.
    #[error(
        "cannot read the repository root {path}: {source}; check that the path exists and is readable"
    )]
    Root {
        /// The root as given.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The root is a file, not a directory.
    #[error("{0} is not a directory; pass the repository's top-level directory")]
    NotADirectory(PathBuf),
    /// A compiled-in tree-sitter grammar does not match the tree-sitter
    /// library (a build problem, never the repository's content).
    #[error(
        "the {} grammar cannot be loaded: {detail}; rebuild with matching tree-sitter and grammar versions",
        language.as_str()
    )]
    Grammar {
        /// The language whose grammar failed.
        language: Language,
        /// tree-sitter's message (the ABI versions involved).
        detail: String,
    },
    /// The analysis was asked for a language this build leaves out (its
    /// cargo feature is off).
    #[error(
        "this build of repo-graph has no {} support; enable its cargo feature `{}`",
        .0.as_str(),
        .0.as_str()
    )]
    LanguageNotBuilt(Language),
    /// The on-disk cache could not be written.
    #[error(
        "cannot write the analysis cache in {path}: {source}; choose another cache directory or disable the cache"
    )]
    Cache {
        /// The cache directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Another I/O error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Progress of a running analysis, reported to [`Analyzer::on_progress`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// Files read and parsed (or found in the cache) so far.
    pub files_done: usize,
    /// Files to analyse in total.
    pub files_total: usize,
}

type ProgressFn = dyn Fn(Progress) + Send + Sync;

/// Builds [`RepoGraph`]s for one directory; keeps per-file facts between runs.
///
/// Defaults: every language, files over [`DEFAULT_MAX_FILE_SIZE`] are
/// skipped, hidden files and directories are skipped, `.gitignore`/`.ignore`
/// rules are respected, no on-disk cache, work runs on rayon's global thread
/// pool.
pub struct Analyzer {
    root: PathBuf,
    max_file_size: u64,
    include_hidden: bool,
    respect_ignore_files: bool,
    languages: Vec<Language>,
    cache_dir: Option<PathBuf>,
    step_budget: Option<u64>,
    memory_ceiling: u64,
    progress: Option<Arc<ProgressFn>>,
    memory: Mutex<Option<KeptFacts>>,
}

/// What the source files of a tree looked like at one moment: their
/// paths, sizes, change times and inodes, hashed ([`Analyzer::stamp`]).
/// Cheap to take (a directory walk, no file opened) and to compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TreeStamp {
    files: usize,
    digest: u128,
}

impl TreeStamp {
    fn of(files: &[walk::SourceFile]) -> Self {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        for file in files {
            let seen = file.seen;
            hasher.update(file.rel_path.as_bytes());
            // The separator cannot occur in a path component.
            hasher.update(&[0]);
            hasher.update(&seen.size.to_le_bytes());
            hasher.update(&seen.mtime_ns.to_le_bytes());
            hasher.update(&seen.ctime_ns.to_le_bytes());
            hasher.update(&seen.ino.to_le_bytes());
        }
        TreeStamp {
            files: files.len(),
            digest: hasher.digest128(),
        }
    }

    /// How many source files the walk found.
    pub fn files(&self) -> usize {
        self.files
    }
}

/// Facts kept between runs of one [`Analyzer`], and the frame count of the
/// on-disk log they correspond to.
struct KeptFacts {
    facts: cache::FactsMap,
    disk_frames: usize,
}

impl Analyzer {
    /// An analyzer for the repository at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Analyzer {
            root: root.into(),
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            include_hidden: false,
            respect_ignore_files: true,
            languages: Language::built(),
            cache_dir: None,
            step_budget: None,
            memory_ceiling: default_memory_ceiling(),
            progress: None,
            memory: Mutex::new(None),
        }
    }

    /// The tree's [`TreeStamp`]: the source files [`Analyzer::analyze`]
    /// would read, walked with the same options but none opened. Equal
    /// stamps mean nothing was added, removed, renamed or written since,
    /// so a long-lived caller (the MCP server) analyses again only when
    /// the stamp it took before its last analysis has changed.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap();
    /// let analyzer = repo_graph::Analyzer::new(dir.path());
    /// let before = analyzer.stamp().unwrap();
    /// assert_eq!(before, analyzer.stamp().unwrap());
    /// std::fs::write(dir.path().join("b.py"), "y = 2\n").unwrap();
    /// assert_ne!(before, analyzer.stamp().unwrap());
    /// ```
    pub fn stamp(&self) -> Result<TreeStamp, Error> {
        let walked = walk::walk(&self.root, &self.walk_options())?;
        Ok(TreeStamp::of(&walked.files))
    }

    fn walk_options(&self) -> walk::WalkOptions {
        walk::WalkOptions {
            max_file_size: self.max_file_size,
            include_hidden: self.include_hidden,
            respect_ignore_files: self.respect_ignore_files,
            languages: self.languages.clone(),
        }
    }

    /// Skip files larger than `bytes` (default 2 MiB).
    pub fn max_file_size(mut self, bytes: u64) -> Self {
        self.max_file_size = bytes;
        self
    }

    /// Also analyse hidden files and directories (default: skipped).
    pub fn hidden(mut self, include: bool) -> Self {
        self.include_hidden = include;
        self
    }

    /// Respect `.gitignore`, `.ignore` and `.git/info/exclude` (default: yes).
    pub fn respect_ignore_files(mut self, respect: bool) -> Self {
        self.respect_ignore_files = respect;
        self
    }

    /// Analyse only files of these languages (default: every language
    /// built in, [`Language::is_built`]); the others are skipped with
    /// [`SkipReason::OtherLanguage`]. An empty list means the default. A
    /// language left out of the build makes [`Analyzer::analyze`] fail with
    /// [`Error::LanguageNotBuilt`].
    pub fn languages(mut self, languages: impl IntoIterator<Item = Language>) -> Self {
        let mut chosen: Vec<Language> = languages.into_iter().collect();
        chosen.sort_unstable();
        chosen.dedup();
        self.languages = if chosen.is_empty() {
            Language::built()
        } else {
            chosen
        };
        self
    }

    /// Caps the work of Python's points-to solve at `steps` units (part of
    /// [`Stats::resolve_work`]). Past it, the Python call sites still being
    /// resolved are reported unresolved ([`Stats::budget_exhausted`]) and a
    /// warning names their modules. The default is far above what any
    /// repository needs (linear in its size): a last guard, not a limit.
    /// Java resolution needs no such guard: every lookup it makes is capped
    /// on its own (supertype walks, name lengths, overload sets), as
    /// `tests/java_adversarial.rs` shows on the work counter.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # std::fs::write(dir.path().join("m.py"), "def f(): pass\nf()\n").unwrap();
    /// let graph = repo_graph::Analyzer::new(dir.path()).step_budget(0).analyze().unwrap();
    /// assert_eq!(graph.stats().budget_exhausted, 1);
    /// ```
    pub fn step_budget(mut self, steps: u64) -> Self {
        self.step_budget = Some(steps);
        self
    }

    /// Stops reading files once the analysis holds an estimated `bytes`
    /// (default: [`default_memory_ceiling`]). The estimate counts what
    /// stays in memory for the whole analysis: each file's text and its
    /// facts, with what resolving them costs (`memory::estimate`). Past
    /// the ceiling, files not yet read are skipped with
    /// [`SkipReason::MemoryCeiling`] and a warning is logged; the graph
    /// is built from the others. [`Stats::memory_estimate_bytes`] and
    /// [`Stats::memory_ceiling_bytes`] report both figures.
    ///
    /// Files are read in parallel, so which files come after the ceiling
    /// depends on scheduling; how far the estimate can pass the ceiling
    /// is bounded by one file per worker thread.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # for name in ["a.py", "b.py", "c.py"] {
    /// #     std::fs::write(dir.path().join(name), "def f():\n    pass\n").unwrap();
    /// # }
    /// let analyzer = repo_graph::Analyzer::new(dir.path()).memory_ceiling(1);
    /// // On one worker thread: the first file read passes the ceiling, and
    /// // the two others are skipped.
    /// let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    /// let stats = one_thread.install(|| analyzer.analyze()).unwrap().stats();
    /// assert_eq!(stats.modules, 1);
    /// assert_eq!(stats.skipped[&repo_graph::SkipReason::MemoryCeiling], 2);
    /// assert!(stats.memory_estimate_bytes > stats.memory_ceiling_bytes);
    /// ```
    pub fn memory_ceiling(mut self, bytes: u64) -> Self {
        self.memory_ceiling = bytes;
        self
    }

    /// Keep per-file facts in `dir` between runs (default: memory only).
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Call `report` as files are analysed (from worker threads).
    pub fn on_progress(mut self, report: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(report));
        self
    }

    /// The repository root this analyzer reads.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Walks, parses and resolves the repository.
    pub fn analyze(&self) -> Result<RepoGraph, Error> {
        let started = Instant::now();
        if let Some(language) = self.languages.iter().find(|l| !l.is_built()) {
            return Err(Error::LanguageNotBuilt(*language));
        }
        let remembered = self
            .memory
            .lock()
            .map_err(|_| Error::Io(std::io::Error::other("analysis cache lock poisoned")))?
            .take();
        let options = self.walk_options();
        // The on-disk cache loads while the directory is walked.
        let (walked, known) = std::thread::scope(|scope| {
            let loader = match (&remembered, &self.cache_dir) {
                (None, Some(dir)) => Some(scope.spawn(move || cache::load(dir))),
                _ => None,
            };
            let walked = walk::walk(&self.root, &options);
            let loaded = loader.and_then(|l| l.join().ok()).map(|l| KeptFacts {
                facts: l.facts,
                disk_frames: l.frames,
            });
            (
                walked,
                remembered.or(loaded).unwrap_or(KeptFacts {
                    facts: cache::FactsMap::new(),
                    disk_frames: 0,
                }),
            )
        });
        let walked = walked?;
        tracing::debug!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            files = walked.files.len(),
            cached_entries = known.facts.len(),
            "walk and cache load done"
        );
        let walk_time = started.elapsed();
        // Opened once: every file is read beneath this directory.
        let tree = open_root(&self.root)?;
        let root = tree.path().to_path_buf();
        let names = names::module_names(&walked.files);
        let total = walked.files.len();
        let done = AtomicUsize::new(0);
        let report_every = (total / 100).max(16);
        let held = AtomicU64::new(0);
        let file = FileInput {
            root: &tree,
            known: &known.facts,
            max_file_size: self.max_file_size,
            held: &held,
            ceiling: self.memory_ceiling,
        };
        let parsed: Vec<Result<(assemble::ModuleInput, bool), Skipped>> = walked
            .files
            .par_iter()
            .zip(names)
            .map_init(Parsers::default, |parsers, (source, name)| {
                let result = analyze_file(&file, parsers, source, name);
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                if let Some(report) = &self.progress
                    && (n.is_multiple_of(report_every) || n == total)
                {
                    report(Progress {
                        files_done: n,
                        files_total: total,
                    });
                }
                result
            })
            .collect();
        let mut modules = Vec::with_capacity(parsed.len());
        let mut skipped = walked.skipped;
        let mut fresh = 0usize;
        for result in parsed {
            match result {
                Ok((module, was_parsed)) => {
                    fresh += usize::from(was_parsed);
                    modules.push(module);
                }
                Err(skip) => skipped.push(skip),
            }
        }
        skipped.sort_by(|a, b| a.path.cmp(&b.path));
        let memory_estimate = held.load(Ordering::Relaxed);
        let over_ceiling = skipped
            .iter()
            .filter(|s| s.reason == SkipReason::MemoryCeiling)
            .count();
        if over_ceiling > 0 {
            tracing::warn!(
                files = over_ceiling,
                estimate_bytes = memory_estimate,
                ceiling_bytes = self.memory_ceiling,
                "the analysis reached its memory ceiling and left files unread: the graph lacks them; analyse a subdirectory, or raise the ceiling (Analyzer::memory_ceiling)"
            );
        }
        let partial = partial_files(&modules);
        let fact_units = modules.iter().map(|m| m.facts.units).sum();
        name_java_modules(&mut modules);
        tracing::debug!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            files = total,
            parsed = fresh,
            cached = total - fresh,
            "files analysed"
        );
        let files_time = started.elapsed().saturating_sub(walk_time);

        let current: cache::FactsMap = modules
            .iter()
            .map(|m| ((m.hash, m.kind.language()), Arc::clone(&m.facts)))
            .collect();
        // New entries are appended to the on-disk log; it is rewritten when
        // stale frames outnumber live ones.
        let new_entries: Vec<(facts::FactsKey, Arc<facts::Facts>)> = {
            let mut new: Vec<_> = current
                .iter()
                .filter(|(h, _)| !known.facts.contains_key(*h))
                .map(|(h, f)| (*h, Arc::clone(f)))
                .collect();
            new.sort_unstable_by_key(|(h, _)| *h);
            new
        };
        let frames_after_append = known.disk_frames + new_entries.len();
        let rewrite = frames_after_append > 2 * current.len() || known.disk_frames == 0;
        let all_entries: Vec<(facts::FactsKey, Arc<facts::Facts>)> =
            if rewrite && self.cache_dir.is_some() {
                let mut all: Vec<_> = current.iter().map(|(h, f)| (*h, Arc::clone(f))).collect();
                all.sort_unstable_by_key(|(h, _)| *h);
                all
            } else {
                Vec::new()
            };
        let update = match (&self.cache_dir, rewrite, new_entries.is_empty()) {
            (None, _, _) => None,
            (Some(dir), true, _) => Some((dir.as_path(), cache::Update::Rewrite(&all_entries))),
            (Some(dir), false, false) => Some((dir.as_path(), cache::Update::Append(&new_entries))),
            (Some(_), false, true) => None,
        };
        let disk_frames = match &update {
            Some((_, cache::Update::Rewrite(entries))) => entries.len(),
            Some((_, cache::Update::Append(entries))) => known.disk_frames + entries.len(),
            None => known.disk_frames,
        };
        drop(known);
        if let Ok(mut memory) = self.memory.lock() {
            *memory = Some(KeptFacts {
                facts: current,
                disk_frames,
            });
        }
        let input = assemble::BuildInput {
            root,
            modules,
            skipped,
            partial,
            memory: MemoryUse {
                estimate: memory_estimate,
                ceiling: self.memory_ceiling,
                fact_units,
            },
            files_seen: walked.files_seen,
            step_budget: self.step_budget,
            walk_time,
            files_time,
        };
        // Writing the cache overlaps with resolution.
        let graph = std::thread::scope(|scope| {
            let writer = update.map(|(dir, update)| scope.spawn(move || cache::store(dir, update)));
            let graph = assemble::build(input, started);
            if let Some(Ok(Err(error))) = writer.map(|w| w.join()) {
                tracing::warn!(%error, "analysis cache not written");
            }
            graph
        });
        Ok(graph)
    }
}

impl Drop for Analyzer {
    /// Freeing the facts of a large repository (millions of small
    /// allocations) is split over the thread pool instead of running after
    /// the analysis on one thread.
    fn drop(&mut self) {
        let remembered = match self.memory.get_mut() {
            Ok(memory) => memory.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(remembered) = remembered {
            let facts: Vec<Arc<facts::Facts>> = remembered.facts.into_values().collect();
            facts.into_par_iter().for_each(drop);
        }
    }
}

/// One tree-sitter parser per language, created when first needed; one set per worker.
#[derive(Default)]
struct Parsers {
    #[cfg(feature = "python")]
    python: Option<lang::python::PythonParser>,
    #[cfg(feature = "java")]
    java: Option<lang::java::JavaParser>,
}

impl Parsers {
    /// Parses `text` within the nesting budgets and extracts its facts
    /// within the facts budget.
    fn extract(&mut self, language: Language, text: &str) -> Option<facts::Facts> {
        let limited = budget::limit_nesting(text, language);
        let text = limited.text.as_ref();
        let (of, spent) = match language {
            #[cfg(feature = "python")]
            Language::Python => {
                if self.python.is_none() {
                    self.python = lang::python::PythonParser::new().ok();
                }
                let (facts, spent) = self.python.as_mut()?.extract(text)?;
                (facts::LanguageFacts::Python(facts), spent)
            }
            #[cfg(feature = "java")]
            Language::Java => {
                if self.java.is_none() {
                    self.java = lang::java::JavaParser::new().ok();
                }
                let (facts, spent) = self.java.as_mut()?.extract(text)?;
                (facts::LanguageFacts::Java(facts), spent)
            }
            // A language left out of the build: the walk never selects its
            // files, so this is only a guard.
            #[allow(unreachable_patterns)]
            _ => return None,
        };
        let facts_cut = spent.cut_line.map(|line| budget::Cut {
            budget: Budget::Facts,
            line,
        });
        Some(facts::Facts {
            of,
            units: spent.units,
            cut: budget::Cut::first(limited.cut, facts_cut),
        })
    }

    /// Parses without extracting; true when a tree came out.
    #[cfg(feature = "measure")]
    fn parse(&mut self, language: Language, text: &str) -> bool {
        match language {
            #[cfg(feature = "python")]
            Language::Python => {
                if self.python.is_none() {
                    self.python = lang::python::PythonParser::new().ok();
                }
                self.python
                    .as_mut()
                    .and_then(|p| p.parse_tree(text))
                    .is_some()
            }
            #[cfg(feature = "java")]
            Language::Java => {
                if self.java.is_none() {
                    self.java = lang::java::JavaParser::new().ok();
                }
                self.java
                    .as_mut()
                    .and_then(|p| p.parse_tree(text))
                    .is_some()
            }
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }
}

/// Gives Java modules their names, which depend on the package they declare.
fn name_java_modules(modules: &mut [assemble::ModuleInput]) {
    let mut taken: std::collections::HashSet<String> = modules
        .iter()
        .filter(|m| m.kind.language() == Language::Python)
        .map(|m| m.name.name.clone())
        .collect();
    let units: Vec<(&str, Option<&str>)> = modules
        .iter()
        .filter_map(|m| {
            let facts = m.facts.java()?;
            Some((m.rel_path.as_str(), facts.package.as_deref()))
        })
        .collect();
    let names = names::java_module_names(units.into_iter(), &mut taken);
    let java = modules
        .iter_mut()
        .filter(|m| m.kind.language() == Language::Java);
    for (module, name) in java.zip(names) {
        module.name = name;
    }
}

/// What every file of the parallel phase shares.
struct FileInput<'a> {
    /// The root, open: files are read only inside it.
    root: &'a repo_files::TreeRoot,
    known: &'a cache::FactsMap,
    max_file_size: u64,
    /// Estimated bytes held by the files read so far ([`memory::estimate`]).
    held: &'a AtomicU64,
    ceiling: u64,
}

/// The repository root, canonicalized and opened once for the files read
/// beneath it.
fn open_root(root: &Path) -> Result<repo_files::TreeRoot, Error> {
    repo_files::TreeRoot::new(root).map_err(|error| Error::Root {
        path: root.to_path_buf(),
        source: match error {
            repo_files::TreeFileError::Io { source, .. } => source,
            other => std::io::Error::other(other.to_string()),
        },
    })
}

/// Reads one file and takes its facts from the cache or the parser.
/// `Ok((module, true))` when it had to be parsed.
fn analyze_file(
    input: &FileInput<'_>,
    parsers: &mut Parsers,
    file: &walk::SourceFile,
    name: Option<names::ModuleName>,
) -> Result<(assemble::ModuleInput, bool), Skipped> {
    let skip = |reason| Skipped {
        path: file.rel_path.clone(),
        reason,
    };
    if input.held.load(Ordering::Relaxed) >= input.ceiling {
        tracing::debug!(path = %file.rel_path, "skipped: the memory ceiling is reached");
        return Err(skip(SkipReason::MemoryCeiling));
    }
    let language = file.kind.language();
    let text = source::read(input.root, &file.abs_path, file.kind, input.max_file_size).map_err(
        |reason| {
            if reason == SkipReason::NotRegular {
                tracing::warn!(path = %file.rel_path, "not a regular file; skipped");
            }
            skip(reason)
        },
    )?;
    let (facts, was_parsed) = match input.known.get(&(text.hash, language)) {
        Some(facts) => (Arc::clone(facts), false),
        None => {
            let facts = parsers
                .extract(language, &text.text)
                .ok_or_else(|| skip(SkipReason::Unreadable))?;
            (Arc::new(facts), true)
        }
    };
    if let Some(cut) = facts.cut {
        tracing::warn!(
            path = %file.rel_path,
            budget = cut.budget.as_str(),
            limit = cut.budget.limit(),
            line = cut.line,
            "file analysed in part: it goes over a budget from this line"
        );
    }
    let estimate = memory::estimate(text.text.len(), &facts);
    tracing::trace!(path = %file.rel_path, units = facts.units, estimate, "file held");
    input.held.fetch_add(estimate, Ordering::Relaxed);
    // Java modules are named once their package is known.
    let name = name.unwrap_or(names::ModuleName {
        name: String::new(),
        alias: None,
        is_package: false,
        duplicate: 0,
    });
    Ok((
        assemble::ModuleInput {
            rel_path: file.rel_path.clone(),
            kind: file.kind,
            name,
            text: Arc::new(text.text),
            hash: text.hash,
            lossy: text.lossy,
            facts,
        },
        was_parsed,
    ))
}

/// Reads and parses every source file under `root` without extracting
/// anything, on rayon's pool: the floor the full analysis is measured against.
/// Returns the number of files and bytes parsed. Behind the `measure`
/// feature: a measuring tool's floor, not part of the analysis.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # std::fs::write(dir.path().join("m.py"), "x = 1\n").unwrap();
/// let (files, bytes) = repo_graph::parse_only(dir.path()).unwrap();
/// assert_eq!((files, bytes), (1, 6));
/// ```
#[cfg(feature = "measure")]
pub fn parse_only(root: &Path) -> Result<(usize, u64), Error> {
    let tree = open_root(root)?;
    let root = tree.path();
    let walked = walk::walk(
        root,
        &walk::WalkOptions {
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            include_hidden: false,
            respect_ignore_files: true,
            languages: Language::built(),
        },
    )?;
    let bytes: u64 = walked
        .files
        .par_iter()
        .map_init(Parsers::default, |parsers, file| {
            let Ok(text) = source::read(&tree, &file.abs_path, file.kind, DEFAULT_MAX_FILE_SIZE)
            else {
                return 0;
            };
            if parsers.parse(file.kind.language(), &text.text) {
                text.text.len() as u64
            } else {
                0
            }
        })
        .sum();
    Ok((walked.files.len(), bytes))
}

/// The files analysed in part, from their facts (cached ones included).
fn partial_files(modules: &[assemble::ModuleInput]) -> Vec<Partial> {
    modules
        .iter()
        .filter_map(|m| {
            let cut = m.facts.cut?;
            Some(Partial {
                path: m.rel_path.clone(),
                budget: cut.budget,
                limit: cut.budget.limit(),
                line: cut.line,
            })
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_default_languages_are_the_ones_built_in() {
        let built: Vec<Language> = Language::ALL
            .into_iter()
            .filter(|l| match l {
                Language::Python => cfg!(feature = "python"),
                Language::Java => cfg!(feature = "java"),
            })
            .collect();
        assert_eq!(Language::built(), built);
        assert_eq!(Analyzer::new(".").languages, built);
    }

    /// CI runs the lib tests of a Python-only build, where this runs.
    #[cfg(not(feature = "java"))]
    #[test]
    fn a_language_left_out_of_the_build_is_refused_and_its_files_skipped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.py"), "def f():\n    pass\n").unwrap();
        std::fs::write(dir.path().join("A.java"), "class A { void g() {} }\n").unwrap();
        let error = Analyzer::new(dir.path())
            .languages([Language::Java])
            .analyze()
            .unwrap_err();
        assert!(matches!(error, Error::LanguageNotBuilt(Language::Java)));
        assert!(
            error.to_string().contains("cargo feature `java`"),
            "{error}"
        );
        let graph = Analyzer::new(dir.path()).analyze().unwrap();
        assert_eq!(graph.stats().modules, 1);
        assert_eq!(graph.stats().skipped[&SkipReason::OtherLanguage], 1);
    }
}
