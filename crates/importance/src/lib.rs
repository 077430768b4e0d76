//! Ranks the modules, classes and functions of a repository so that an agent
//! sees its core first: RepoMaster's importance scores (seed 001, section
//! 3.2.2 and appendix F) computed on a [`repo_graph::RepoGraph`].
//!
//! Every module gets six feature scores: Dependency (personalized PageRank
//! in the module dependency graph), Complexity, Usage, Semantic, Doc and Git.
//! Its score is `I(m) = min(Σ wᵢ·sᵢ(m), 10)`. Classes are ranked by
//! `J(c) = I(module(c)) + |F_c|/max|F| + Calls(F_c)/max Calls` (equation 3),
//! and functions by a comparable score. Every score keeps its breakdown, and
//! ties are broken by qualified name, so the same repository always ranks the
//! same way.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("core.py"), "class Engine:\n    def run(self): pass\n")?;
//! std::fs::write(dir.path().join("a.py"), "from core import Engine\nEngine().run()\n")?;
//! std::fs::write(dir.path().join("b.py"), "from core import Engine\nEngine().run()\n")?;
//! let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
//!
//! let ranking = importance::Ranker::new().rank(&graph);
//! assert_eq!(ranking.modules[0].name, "core");
//! assert_eq!(ranking.classes[0].name, "core.Engine");
//! println!("{:#?}", ranking.modules[0].features);
//! # Ok(())
//! # }
//! ```
//!
//! [`Ranker`] holds the options: the [`Weights`] (the paper's by default,
//! [`Weights::published`], or a TOML file), and how many recent commits the
//! Git feature reads.

#![deny(missing_docs)]

mod features;
mod git;
mod pagerank;
mod table;
mod weights;

use std::cmp::Ordering;
use std::collections::HashMap;
use std::path::PathBuf;

use petgraph::graph::{DiGraph, NodeIndex};
use repo_graph::{ClassId, EntityId, FunctionId, ModuleId, RepoGraph};
use serde::{Deserialize, Serialize};

pub use pagerank::DAMPING;
pub use weights::Weights;

/// Default number of recent commits the Git feature reads.
pub const DEFAULT_MAX_COMMITS: usize = 2_000;

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A weights file could not be read or understood.
    #[error(
        "cannot use the weights file {path}: {message}; it must hold lines like `usage = 2.0` for dependency, complexity, usage, semantic, doc and git"
    )]
    WeightsFile {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// The six feature scores of one module.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Features {
    /// Personalized PageRank of the module × 10.
    pub dependency: f64,
    /// Branch constructs and `def` nesting.
    pub complexity: f64,
    /// Importing modules plus incoming call sites, over the repository's maximum.
    pub usage: f64,
    /// Conventional names and keywords.
    pub semantic: f64,
    /// Docstring richness.
    pub doc: f64,
    /// Commit volume (70 %) and recency (30 %); 0 outside git.
    pub git: f64,
}

impl Features {
    fn weighted(&self, w: &Weights) -> f64 {
        (w.dependency * self.dependency
            + w.complexity * self.complexity
            + w.usage * self.usage
            + w.semantic * self.semantic
            + w.doc * self.doc
            + w.git * self.git)
            .min(10.0)
    }
}

/// A module's score with its breakdown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModuleScore {
    /// The module.
    #[serde(skip)]
    pub id: ModuleId,
    /// Dotted module name.
    pub name: String,
    /// Relative path.
    pub path: String,
    /// `I(m) = min(Σ wᵢ·sᵢ, 10)`.
    pub score: f64,
    /// The unweighted feature scores.
    pub features: Features,
}

/// A class's score `J(c)` with its terms.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassScore {
    /// The class.
    #[serde(skip)]
    pub id: ClassId,
    /// Qualified name.
    pub name: String,
    /// Dotted name of its module.
    pub module: String,
    /// `J(c)`.
    pub score: f64,
    /// `I(module(c))`.
    pub module_score: f64,
    /// `|F_c|`: methods defined in the class body.
    pub methods: u32,
    /// `Calls(F_c)`: call sites that resolve to those methods.
    pub calls: u32,
}

/// A function's or method's score with its terms.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionScore {
    /// The function.
    #[serde(skip)]
    pub id: FunctionId,
    /// Qualified name.
    pub name: String,
    /// Dotted name of its module.
    pub module: String,
    /// `I(module) + calls/max calls + 0.5·entry point + 0.25·public + 0.25·doc`.
    pub score: f64,
    /// `I(module(f))`.
    pub module_score: f64,
    /// Call sites that resolve to it.
    pub calls: u32,
    /// Looks like an entry point: named `main`/`cli`/`run`, decorated as a
    /// command or route, or called from its module's top-level code.
    pub entry_point: bool,
    /// Public API: no leading underscore in it or its enclosing class.
    pub public: bool,
    /// Docstring richness in [0, 1].
    pub doc: f64,
}

/// The ranked modules, classes and functions, best first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ranking {
    /// Modules by `I(m)`, descending.
    pub modules: Vec<ModuleScore>,
    /// Classes by `J(c)`, descending.
    pub classes: Vec<ClassScore>,
    /// Functions and methods by score, descending.
    pub functions: Vec<FunctionScore>,
    /// The weights used.
    pub weights: Weights,
    /// Commits the Git feature read (0 outside a git repository).
    pub commits_read: usize,
    #[serde(skip)]
    module_rank: HashMap<ModuleId, usize>,
}

impl Ranking {
    /// The `n` best modules (the ones to summarise).
    pub fn top_modules(&self, n: usize) -> &[ModuleScore] {
        &self.modules[..n.min(self.modules.len())]
    }

    /// The `k` best classes: the repository's core components.
    pub fn top_classes(&self, k: usize) -> &[ClassScore] {
        &self.classes[..k.min(self.classes.len())]
    }

    /// The `n` best functions: likely entry points and key APIs.
    pub fn top_functions(&self, n: usize) -> &[FunctionScore] {
        &self.functions[..n.min(self.functions.len())]
    }

    /// The score of one module.
    pub fn module(&self, id: ModuleId) -> Option<&ModuleScore> {
        self.module_rank.get(&id).and_then(|&i| self.modules.get(i))
    }
}

/// Computes a [`Ranking`]. Defaults: the paper's weights, Git feature on
/// with the most recent [`DEFAULT_MAX_COMMITS`] commits.
#[derive(Debug, Clone)]
pub struct Ranker {
    weights: Weights,
    max_commits: usize,
    git: bool,
}

impl Default for Ranker {
    fn default() -> Self {
        Self::new()
    }
}

impl Ranker {
    /// A ranker with the defaults.
    pub fn new() -> Self {
        Ranker {
            weights: Weights::paper(),
            max_commits: DEFAULT_MAX_COMMITS,
            git: true,
        }
    }

    /// Use these feature weights.
    pub fn weights(mut self, weights: Weights) -> Self {
        self.weights = weights;
        self
    }

    /// Read at most this many recent commits for the Git feature.
    pub fn max_commits(mut self, commits: usize) -> Self {
        self.max_commits = commits;
        self
    }

    /// Turn the Git feature on or off (off, it is 0 for every module).
    pub fn git(mut self, enabled: bool) -> Self {
        self.git = enabled;
        self
    }

    /// Ranks everything in `graph`.
    pub fn rank(&self, graph: &RepoGraph) -> Ranking {
        let (module_features, commits_read) = self.module_features(graph);
        let mut modules: Vec<ModuleScore> = graph
            .module_ids()
            .zip(graph.modules())
            .zip(&module_features)
            .map(|((id, m), features)| ModuleScore {
                id,
                name: m.name.clone(),
                path: m.path.clone(),
                score: features.weighted(&self.weights),
                features: *features,
            })
            .collect();
        let module_scores: Vec<f64> = modules.iter().map(|m| m.score).collect();
        let incoming = incoming_call_sites(graph);
        let run_at_import = called_by_own_module(graph);
        let handlers = route_handlers(graph);

        let max_methods = graph
            .classes()
            .iter()
            .map(|c| c.methods.len())
            .max()
            .unwrap_or(0);
        let class_calls: Vec<u32> = graph
            .classes()
            .iter()
            .map(|c| c.methods.iter().map(|f| incoming.function(*f)).sum())
            .collect();
        let max_class_calls = class_calls.iter().copied().max().unwrap_or(0);
        let mut classes: Vec<ClassScore> = graph
            .class_ids()
            .zip(graph.classes())
            .map(|(id, c)| {
                let module_score = module_scores[c.module.index()];
                let methods = c.methods.len() as u32;
                let calls = class_calls[id.index()];
                ClassScore {
                    id,
                    name: c.qualname.clone(),
                    module: module_name(graph, c.module),
                    score: module_score
                        + ratio(f64::from(methods), max_methods as f64)
                        + ratio(f64::from(calls), f64::from(max_class_calls)),
                    module_score,
                    methods,
                    calls,
                }
            })
            .collect();

        let max_function_calls = graph
            .function_ids()
            .map(|f| incoming.function(f))
            .max()
            .unwrap_or(0);
        let mut functions: Vec<FunctionScore> = graph
            .function_ids()
            .zip(graph.functions())
            .map(|(id, f)| {
                let i = id.index();
                let module_score = module_scores[f.module.index()];
                let calls = incoming.function(id);
                let entry_point = handlers.get(i).copied().unwrap_or(false)
                    || is_entry_point(graph, id, &run_at_import);
                let public = graph.is_public(id);
                let doc = features::docstring(f.docstring.as_deref());
                FunctionScore {
                    id,
                    name: f.qualname.clone(),
                    module: module_name(graph, f.module),
                    score: module_score
                        + ratio(f64::from(calls), f64::from(max_function_calls))
                        + if entry_point { 0.5 } else { 0.0 }
                        + if public { 0.25 } else { 0.0 }
                        + 0.25 * doc,
                    module_score,
                    calls,
                    entry_point,
                    public,
                    doc,
                }
            })
            .collect();

        modules.sort_by(|a, b| by_score(a.score, b.score).then_with(|| a.name.cmp(&b.name)));
        classes.sort_by(|a, b| by_score(a.score, b.score).then_with(|| a.name.cmp(&b.name)));
        functions.sort_by(|a, b| by_score(a.score, b.score).then_with(|| a.name.cmp(&b.name)));
        let module_rank = modules
            .iter()
            .enumerate()
            .map(|(rank, m)| (m.id, rank))
            .collect();
        Ranking {
            modules,
            classes,
            functions,
            weights: self.weights,
            commits_read,
            module_rank,
        }
    }

    /// The feature scores of every module, and the commits the Git feature read.
    fn module_features(&self, graph: &RepoGraph) -> (Vec<Features>, usize) {
        let n = graph.modules().len();
        // PageRank reads the MDG as petgraph; repo-graph hands out its
        // edges only, so that a petgraph release is not its breaking change.
        let edges = graph.module_edges();
        let mut mdg: DiGraph<(), ()> = DiGraph::with_capacity(n, edges.len());
        for _ in 0..n {
            mdg.add_node(());
        }
        // Usage: importing modules plus call sites from other modules.
        let mut usage_raw = vec![0.0f64; n];
        for edge in &edges {
            if edge.from.index() < n && edge.to.index() < n {
                mdg.add_edge(
                    NodeIndex::new(edge.from.index()),
                    NodeIndex::new(edge.to.index()),
                    (),
                );
                usage_raw[edge.to.index()] += f64::from(u32::from(edge.imports > 0) + edge.calls);
            }
        }
        let dependency = pagerank::dependency_scores(&mdg);
        let max_usage = usage_raw.iter().copied().fold(0.0, f64::max);

        // Names and docstrings of the entities each module defines, in one pass.
        let mut names: Vec<Vec<&str>> = vec![Vec::new(); n];
        let mut docs: Vec<Vec<Option<&str>>> = vec![Vec::new(); n];
        for c in graph.classes() {
            names[c.module.index()].push(&c.name);
            docs[c.module.index()].push(c.docstring.as_deref());
        }
        for f in graph.functions() {
            names[f.module.index()].push(&f.name);
            docs[f.module.index()].push(f.docstring.as_deref());
        }

        let history = if self.git {
            git::history(graph.root(), self.max_commits)
        } else {
            None
        };
        let commits_read = history.as_ref().map_or(0, |h| h.commits_walked);
        let max_commits = history
            .as_ref()
            .and_then(|h| h.files.values().map(|f| f.commits).max())
            .unwrap_or(0);

        let features = graph
            .modules()
            .iter()
            .enumerate()
            .map(|(i, m)| Features {
                dependency: dependency.get(i).copied().unwrap_or(0.0),
                complexity: features::complexity(&m.complexity),
                usage: ratio(usage_raw.get(i).copied().unwrap_or(0.0), max_usage),
                semantic: features::semantic(m, &names[i]),
                doc: features::doc(m, &docs[i]),
                git: history.as_ref().map_or(0.0, |h| {
                    h.files.get(&m.path).map_or(0.0, |f| {
                        let volume = ((1.0 + f64::from(f.commits)).ln()
                            / (1.0 + f64::from(max_commits)).ln())
                        .min(1.0);
                        let span = (h.newest - h.oldest) as f64;
                        let recency = if span > 0.0 {
                            1.0 - (h.newest - f.last_commit) as f64 / span
                        } else {
                            1.0
                        };
                        0.7 * volume + 0.3 * recency
                    })
                }),
            })
            .collect();
        (features, commits_read)
    }
}

/// Incoming call sites per function, from the FCG.
struct Incoming {
    per_function: Vec<u32>,
}

impl Incoming {
    fn function(&self, f: FunctionId) -> u32 {
        self.per_function.get(f.index()).copied().unwrap_or(0)
    }
}

fn incoming_call_sites(graph: &RepoGraph) -> Incoming {
    let mut per_function = vec![0u32; graph.functions().len()];
    for edge in graph.call_edges() {
        if let EntityId::Function(f) = edge.callee
            && let Some(count) = per_function.get_mut(f.index())
        {
            *count = count.saturating_add(edge.call_sites);
        }
    }
    Incoming { per_function }
}

const ENTRY_NAMES: &[&str] = &["main", "cli", "run", "app", "entrypoint", "entry_point"];
const ENTRY_DECORATORS: &[&str] = &["command", "route", ".get", ".post", "cli", "main", "app."];

/// Functions called by their own module's top-level code, in one pass over the FCG.
fn called_by_own_module(graph: &RepoGraph) -> Vec<bool> {
    let mut called = vec![false; graph.functions().len()];
    for edge in graph.call_edges() {
        if let (EntityId::Module(m), EntityId::Function(f)) = (edge.caller, edge.callee)
            && graph.function(f).is_some_and(|f| f.module == m)
            && let Some(flag) = called.get_mut(f.index())
        {
            *flag = true;
        }
    }
    called
}

/// Functions that serve a web route: a service's real entry points, in
/// every framework repo-graph knows (Flask and Spring alike).
fn route_handlers(graph: &RepoGraph) -> Vec<bool> {
    let mut handler = vec![false; graph.functions().len()];
    for route in graph.routes() {
        if let Some(EntityId::Function(f)) = route.entity
            && let Some(flag) = handler.get_mut(f.index())
        {
            *flag = true;
        }
    }
    handler
}

fn is_entry_point(graph: &RepoGraph, id: FunctionId, run_at_import: &[bool]) -> bool {
    let Some(f) = graph.function(id) else {
        return false;
    };
    if ENTRY_NAMES.contains(&f.name.as_str()) {
        return true;
    }
    if f.decorators
        .iter()
        .any(|d| ENTRY_DECORATORS.iter().any(|e| d.contains(e)))
    {
        return true;
    }
    // A module-level function called by its module's top-level code (e.g.
    // under `if __name__ == "__main__"`); methods called there are just
    // constructors and setup.
    f.parent == EntityId::Module(f.module)
        && !f.name.starts_with("__")
        && run_at_import.get(id.index()).copied().unwrap_or(false)
}

fn module_name(graph: &RepoGraph, id: ModuleId) -> String {
    graph
        .module(id)
        .map_or_else(String::new, |m| m.name.clone())
}

fn ratio(value: f64, max: f64) -> f64 {
    if max > 0.0 { value / max } else { 0.0 }
}

fn by_score(a: f64, b: f64) -> Ordering {
    b.partial_cmp(&a).unwrap_or(Ordering::Equal)
}
