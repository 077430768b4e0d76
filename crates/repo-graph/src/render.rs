//! Serialisable views of a [`RepoGraph`]: statistics, the whole-graph JSON
//! document, the `calls` map and the Graphviz rendering of the MDG.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use petgraph::visit::EdgeRef;
use serde::{Deserialize, Serialize};

use crate::graph::RepoGraph;
use crate::model::{
    Budget, Class, EntityId, Function, Module, ModuleId, Partial, SkipReason, Skipped,
    UnresolvedCall,
};
use crate::routes::Route;

/// Version of the [`GraphDocument`] layout; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 2;

/// Counts that summarise an analysis (`repo-agent analyze --format stats`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Stats {
    /// Regular files met by the walk, analysed or not.
    pub files_seen: u64,
    /// Source files read and analysed (parsed now or taken from the cache).
    pub files_parsed: u64,
    /// Modules in the graph (equal to `files_parsed`).
    pub modules: u64,
    /// Classes defined.
    pub classes: u64,
    /// Functions and methods defined.
    pub functions: u64,
    /// Distinct caller → callee edges of the FCG.
    pub call_edges: u64,
    /// Call sites that do not resolve to an internal definition.
    pub unresolved_calls: u64,
    /// Edges of the MDG (module pairs with imports or calls between them).
    pub import_edges: u64,
    /// Files in which the parser found syntax errors.
    pub parse_errors: u64,
    /// Files that were not valid UTF-8 and were decoded lossily.
    pub invalid_utf8: u64,
    /// Files and pruned directories passed over, by reason.
    pub skipped: BTreeMap<SkipReason, u64>,
    /// Web routes found ([`RepoGraph::routes`]).
    #[serde(default)]
    pub routes: u64,
    /// Wall time of the analysis in milliseconds.
    pub elapsed_ms: u64,
    /// Work units spent resolving names, calls and types across files
    /// (Python and Java together): a machine-independent cost that grows
    /// linearly with the program's size.
    #[serde(default)]
    pub resolve_work: u64,
    /// Values that grew past the per-node cap and were widened to "unknown".
    #[serde(default)]
    pub widened: u64,
    /// Python call sites left unresolved because the per-run step budget
    /// ([`Analyzer::step_budget`](crate::Analyzer::step_budget)) ran out.
    #[serde(default)]
    pub budget_exhausted: u64,
    /// Files analysed in part, by the budget they went over
    /// ([`RepoGraph::partial`]).
    #[serde(default)]
    pub partial: BTreeMap<Budget, u64>,
    /// Fact units the analysed files hold (name reads, bindings, call
    /// sites, value expression nodes, definitions...): a
    /// machine-independent measure of the per-file phase's output, capped
    /// per file at [`MAX_FILE_FACTS`](crate::MAX_FILE_FACTS).
    #[serde(default)]
    pub fact_units: u64,
    /// What the per-file phase was estimated to hold, in bytes (see
    /// [`Analyzer::memory_ceiling`](crate::Analyzer::memory_ceiling)).
    #[serde(default)]
    pub memory_estimate_bytes: u64,
    /// The memory ceiling the analysis ran under, in bytes.
    #[serde(default)]
    pub memory_ceiling_bytes: u64,
}

/// The cost of cross-file resolution, kept on the graph for [`Stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResolutionStats {
    /// Work units (see [`Stats::resolve_work`]).
    pub work: u64,
    /// See [`Stats::widened`].
    pub widened: u64,
    /// See [`Stats::budget_exhausted`].
    pub budget_exhausted: u64,
}

/// One edge of the FCG in a [`GraphDocument`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CallEdge {
    /// The calling function, or a module for module-level code.
    pub caller: EntityId,
    /// The called function (or a class without `__init__`).
    pub callee: EntityId,
    /// Number of call sites.
    pub call_sites: u32,
}

/// One edge of the MDG in a [`GraphDocument`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModuleEdge {
    /// The importing module.
    pub from: ModuleId,
    /// The imported module.
    pub to: ModuleId,
    /// Imported names.
    pub imports: u32,
    /// Resolved call sites from `from` into `to`.
    pub calls: u32,
    /// `imports + calls`.
    pub weight: u32,
}

/// The whole graph as one serialisable document (`--format json`).
/// Ids are indices into the `modules`, `classes` and `functions` arrays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GraphDocument {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The analysed root directory.
    pub root: String,
    /// Summary counts.
    pub stats: Stats,
    /// Modules in path order.
    pub modules: Vec<Module>,
    /// Classes grouped by module.
    pub classes: Vec<Class>,
    /// Functions grouped by module.
    pub functions: Vec<Function>,
    /// FCG edges.
    pub call_edges: Vec<CallEdge>,
    /// Calls that stayed unresolved.
    pub unresolved_calls: Vec<UnresolvedCall>,
    /// MDG edges.
    pub module_edges: Vec<ModuleEdge>,
    /// What was passed over.
    pub skipped: Vec<Skipped>,
    /// Files analysed in part.
    #[serde(default)]
    pub partial: Vec<Partial>,
    /// Web routes.
    #[serde(default)]
    pub routes: Vec<Route>,
    /// How the repository is used ([`RepoGraph::usage`]).
    #[serde(default)]
    pub usage: crate::usage::UsageFacts,
}

/// The web routes of a repository (`--format routes`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RoutesDocument {
    /// Routes sorted by path, method, handler, file and line.
    pub routes: Vec<Route>,
}

impl RepoGraph {
    /// Summary counts of the analysis.
    pub fn stats(&self) -> Stats {
        let mut skipped = BTreeMap::new();
        for s in &self.skipped {
            *skipped.entry(s.reason).or_insert(0) += 1;
        }
        let mut partial = BTreeMap::new();
        for p in &self.partial {
            *partial.entry(p.budget).or_insert(0) += 1;
        }
        let count = |n: usize| n as u64;
        Stats {
            files_seen: self.files_seen,
            files_parsed: count(self.modules.len()),
            modules: count(self.modules.len()),
            classes: count(self.classes.len()),
            functions: count(self.functions.len()),
            call_edges: count(self.fcg.edge_count()),
            unresolved_calls: count(self.unresolved.len()),
            import_edges: count(self.mdg.edge_count()),
            parse_errors: count(self.modules.iter().filter(|m| m.has_syntax_errors).count()),
            invalid_utf8: count(self.modules.iter().filter(|m| m.lossy_utf8).count()),
            skipped,
            routes: count(self.routes.len()),
            elapsed_ms: u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
            resolve_work: self.resolution.work,
            widened: self.resolution.widened,
            budget_exhausted: self.resolution.budget_exhausted,
            partial,
            fact_units: self.memory.fact_units,
            memory_estimate_bytes: self.memory.estimate,
            memory_ceiling_bytes: self.memory.ceiling,
        }
    }

    /// The routes as one serialisable document (`--format routes`).
    pub fn routes_document(&self) -> RoutesDocument {
        RoutesDocument {
            routes: self.routes.clone(),
        }
    }

    /// The FCG's edges in a stable order.
    pub fn call_edges(&self) -> Vec<CallEdge> {
        self.fcg
            .edge_references()
            .map(|e| CallEdge {
                caller: self.fcg[e.source()],
                callee: self.fcg[e.target()],
                call_sites: *e.weight(),
            })
            .collect()
    }

    /// The MDG's edges in a stable order.
    pub fn module_edges(&self) -> Vec<ModuleEdge> {
        self.mdg
            .edge_references()
            .map(|e| ModuleEdge {
                from: self.mdg[e.source()],
                to: self.mdg[e.target()],
                imports: e.weight().imports,
                calls: e.weight().calls,
                weight: e.weight().weight(),
            })
            .collect()
    }

    /// The whole graph as a [`GraphDocument`].
    pub fn to_document(&self) -> GraphDocument {
        GraphDocument {
            schema_version: SCHEMA_VERSION,
            root: self.root.display().to_string(),
            stats: self.stats(),
            modules: self.modules.clone(),
            classes: self.classes.clone(),
            functions: self.functions.clone(),
            call_edges: self.call_edges(),
            unresolved_calls: self.unresolved.clone(),
            module_edges: self.module_edges(),
            skipped: self.skipped.clone(),
            partial: self.partial.clone(),
            routes: self.routes.clone(),
            usage: self.usage.clone(),
        }
    }

    /// Every function, method and module (module-level code) by qualified
    /// name, mapped to the sorted qualified names of the internal definitions
    /// it calls; `[]` when it calls nothing internal.
    pub fn calls_map(&self) -> BTreeMap<String, Vec<String>> {
        let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for m in &self.modules {
            map.entry(m.name.clone()).or_default();
        }
        for f in &self.functions {
            map.entry(f.qualname.clone()).or_default();
        }
        for edge in self.fcg.edge_references() {
            let caller = self.own_qualname(self.fcg[edge.source()]);
            let callee = self.own_qualname(self.fcg[edge.target()]).to_string();
            map.entry(caller.to_string()).or_default().push(callee);
        }
        for callees in map.values_mut() {
            callees.sort_unstable();
            callees.dedup();
        }
        map
    }

    /// Every function, method and module that calls something outside the
    /// repository, mapped to the sorted absolute names of those callees
    /// (`os.path.join`, `builtins.len`, `java.util.List.add`): the
    /// unresolved calls known to be external. A name here is never a key
    /// of [`RepoGraph::calls_map`] unless the repository defines the same
    /// dotted name, which resolution would then have preferred.
    pub fn external_calls_map(&self) -> BTreeMap<String, Vec<String>> {
        let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for call in self.unresolved.iter().filter(|u| u.external) {
            map.entry(self.own_qualname(call.caller).to_string())
                .or_default()
                .push(call.callee.clone());
        }
        for callees in map.values_mut() {
            callees.sort_unstable();
            callees.dedup();
        }
        map
    }

    /// The MDG in Graphviz `dot` syntax; edge labels are coupling weights.
    pub fn dot(&self) -> String {
        let mut out = String::from(
            "digraph modules {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n",
        );
        for m in &self.modules {
            let _ = writeln!(out, "  \"{}\";", escape(&m.name));
        }
        for edge in self.module_edges() {
            let (from, to) = (
                &self.modules[edge.from.index()],
                &self.modules[edge.to.index()],
            );
            let _ = writeln!(
                out,
                "  \"{}\" -> \"{}\" [label=\"{}\", weight={}];",
                escape(&from.name),
                escape(&to.name),
                edge.weight,
                edge.weight
            );
        }
        out.push_str("}\n");
        out
    }
}

fn escape(name: &str) -> String {
    name.replace('\\', "\\\\").replace('"', "\\\"")
}
