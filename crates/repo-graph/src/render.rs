//! Serialisable views of a [`RepoGraph`]: the whole-graph JSON
//! document, the `calls` map and the Graphviz rendering of the MDG.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use petgraph::visit::EdgeRef;
use serde::{Deserialize, Serialize};

use crate::graph::RepoGraph;
use crate::model::{Class, EntityId, Function, Module, ModuleId, Partial, Skipped, UnresolvedCall};
use crate::routes::Route;
use crate::stats::Stats;

/// Version of the [`GraphDocument`] layout; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 2;

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
