//! [`RepoGraph`]: the entities, the function call graph (FCG) and the module
//! dependency graph (MDG) of one repository, with the queries later stages need.

use std::collections::VecDeque;

use rustc_hash::FxHashMap as HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use serde::{Deserialize, Serialize};

use crate::model::{
    Class, ClassId, EntityId, Function, FunctionId, Language, Module, ModuleId, Partial, Skipped,
    UnresolvedCall,
};
use crate::routes::Route;

/// Weight of a module dependency edge: how strongly one module is coupled to another.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Coupling {
    /// Imported names (one per imported name, not per statement).
    pub imports: u32,
    /// Call sites in the importing module that resolve into the imported one.
    pub calls: u32,
}

impl Coupling {
    /// The edge weight: imported names plus resolved cross-module calls.
    pub fn weight(&self) -> u32 {
        self.imports.saturating_add(self.calls)
    }
}

/// An entity reached from another through the call graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Reach {
    /// The entity reached.
    pub entity: EntityId,
    /// Number of call edges from the start (1 for a direct caller or callee).
    pub depth: u32,
    /// Call sites on the edge by which it was first reached.
    pub call_sites: u32,
}

/// Per-module numbers of [`RepoGraph::module_stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModuleStats {
    /// Lines of source.
    pub lines: u32,
    /// Classes defined anywhere in the module.
    pub classes: u32,
    /// Functions and methods defined anywhere in the module.
    pub functions: u32,
    /// Internal modules this one imports.
    pub imports: u32,
    /// Internal modules that import this one.
    pub imported_by: u32,
    /// Call sites in this module that resolve to internal definitions.
    pub calls_out: u32,
    /// Call sites elsewhere that resolve into this module's definitions.
    pub calls_in_from_other_modules: u32,
    /// Branch constructs.
    pub branches: u32,
}

/// The structural model of a repository.
///
/// Built by [`crate::Analyzer::analyze`]. Entities are stored in vectors and
/// referred to by id; the FCG has one node per module (module-level code),
/// class and function, laid out as modules, then classes, then functions, so
/// an [`EntityId`] maps to its node without a lookup table.
#[derive(Debug, Clone)]
pub struct RepoGraph {
    pub(crate) root: PathBuf,
    pub(crate) modules: Vec<Module>,
    pub(crate) classes: Vec<Class>,
    pub(crate) functions: Vec<Function>,
    pub(crate) unresolved: Vec<UnresolvedCall>,
    pub(crate) skipped: Vec<Skipped>,
    pub(crate) partial: Vec<Partial>,
    pub(crate) memory: crate::memory::MemoryUse,
    pub(crate) files_seen: u64,
    /// `Arc<String>` rather than `Arc<str>`: converting a file's `String` into
    /// an `Arc<str>` would copy every byte of the repository once more.
    pub(crate) sources: Vec<Arc<String>>,
    pub(crate) fcg: DiGraph<EntityId, u32>,
    pub(crate) mdg: DiGraph<ModuleId, Coupling>,
    pub(crate) by_name: HashMap<String, EntityId>,
    pub(crate) children: HashMap<EntityId, Vec<EntityId>>,
    pub(crate) mro: Vec<Vec<ClassId>>,
    pub(crate) routes: Vec<Route>,
    pub(crate) elapsed: Duration,
    /// Wall time by step ([`crate::Stats::phases`]).
    pub(crate) phases: crate::stats::Phases,
    /// What cross-file resolution cost, and where it gave up.
    pub(crate) resolution: crate::stats::ResolutionStats,
    pub(crate) usage: crate::usage::UsageFacts,
}

impl RepoGraph {
    /// The id of every module, in index order (the order of [`Self::modules`]).
    pub fn module_ids(&self) -> impl ExactSizeIterator<Item = ModuleId> + use<> {
        (0..self.modules.len() as u32).map(ModuleId)
    }

    /// The id of every class, in the order of [`Self::classes`].
    pub fn class_ids(&self) -> impl ExactSizeIterator<Item = ClassId> + use<> {
        (0..self.classes.len() as u32).map(ClassId)
    }

    /// The id of every function, in the order of [`Self::functions`].
    pub fn function_ids(&self) -> impl ExactSizeIterator<Item = FunctionId> + use<> {
        (0..self.functions.len() as u32).map(FunctionId)
    }

    /// The analysed root directory (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// All modules, in path order.
    pub fn modules(&self) -> &[Module] {
        &self.modules
    }

    /// All classes, grouped by module in source order.
    pub fn classes(&self) -> &[Class] {
        &self.classes
    }

    /// All functions and methods, grouped by module in source order.
    pub fn functions(&self) -> &[Function] {
        &self.functions
    }

    /// Call sites that do not resolve to an internal definition.
    pub fn unresolved_calls(&self) -> &[UnresolvedCall] {
        &self.unresolved
    }

    /// Files and directories passed over, with their reasons.
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// Files analysed in part because they went over a per-file budget
    /// (nesting, indentation, facts), in path order. Their modules are in
    /// the graph with what was found outside the cut.
    pub fn partial(&self) -> &[Partial] {
        &self.partial
    }

    /// Regular files met by the walk, analysed or not.
    pub fn files_seen(&self) -> u64 {
        self.files_seen
    }

    /// Wall time the analysis took.
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// The module with this id.
    pub fn module(&self, id: ModuleId) -> Option<&Module> {
        self.modules.get(id.index())
    }

    /// The class with this id.
    pub fn class(&self, id: ClassId) -> Option<&Class> {
        self.classes.get(id.index())
    }

    /// The function with this id.
    pub fn function(&self, id: FunctionId) -> Option<&Function> {
        self.functions.get(id.index())
    }

    /// The function call graph as a petgraph graph. Nodes are [`EntityId`]s,
    /// edge weights the number of call sites. Behind the `petgraph-api` feature,
    /// so that a petgraph release is a breaking change only for those who
    /// ask for it; [`Self::call_edges`], [`Self::callers`] and
    /// [`Self::callees`] answer the same questions without it.
    #[cfg(feature = "petgraph-api")]
    pub fn call_graph(&self) -> &DiGraph<EntityId, u32> {
        &self.fcg
    }

    /// The module dependency graph as a petgraph graph; node `i` is the
    /// module at index `i`. Behind the `petgraph-api` feature, like
    /// [`Self::call_graph`]; [`Self::module_edges`] has the same edges.
    #[cfg(feature = "petgraph-api")]
    pub fn dependency_graph(&self) -> &DiGraph<ModuleId, Coupling> {
        &self.mdg
    }

    /// Web routes (Spring, JAX-RS, Micronaut, Javalin, Spark, Flask, FastAPI,
    /// Django), sorted by path, method and handler.
    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// How the repository is used: console scripts, main modules and
    /// methods, command-line interfaces, the public API of its top-level
    /// packages, example scripts ([`crate::UsageFacts`]).
    pub fn usage(&self) -> &crate::usage::UsageFacts {
        &self.usage
    }

    /// The package a module belongs to: for Java, the declared package
    /// (empty for the default package); for Python, the package containing
    /// the module (the module itself for a package's `__init__`, empty at
    /// the top level).
    pub fn package_of(&self, module: ModuleId) -> &str {
        let Some(m) = self.module(module) else {
            return "";
        };
        match m.language {
            Language::Java => m.package.as_deref().unwrap_or(""),
            Language::Python if m.is_package => &m.name,
            Language::Python => m.name.rsplit_once('.').map_or("", |(p, _)| p),
        }
    }

    /// Method resolution order of a class, starting with the class itself;
    /// only internal classes appear. For Java: the class, its superclasses,
    /// then its interfaces breadth first.
    pub fn mro(&self, class: ClassId) -> &[ClassId] {
        self.mro.get(class.index()).map_or(&[], Vec::as_slice)
    }

    /// The entity with this qualified (dotted) name. When several definitions
    /// share a name (a redefinition, a property setter), the first one.
    pub fn entity(&self, qualname: &str) -> Option<EntityId> {
        self.by_name.get(qualname).copied()
    }

    /// The module with this dotted name.
    pub fn module_by_name(&self, name: &str) -> Option<ModuleId> {
        match self.entity(name) {
            Some(EntityId::Module(m)) => Some(m),
            _ => None,
        }
    }

    /// The module whose relative path is `path` (with `/` separators).
    pub fn module_by_path(&self, path: &str) -> Option<ModuleId> {
        let path = path.trim_start_matches("./");
        self.modules
            .iter()
            .position(|m| m.path == path)
            .map(|i| ModuleId(i as u32))
    }

    /// The qualified name of any entity; `None` for an id of another graph,
    /// like [`Self::module`], [`Self::class`] and [`Self::function`].
    pub fn qualname(&self, entity: EntityId) -> Option<&str> {
        match entity {
            EntityId::Module(m) => self.module(m).map(|m| m.name.as_str()),
            EntityId::Class(c) => self.class(c).map(|c| c.qualname.as_str()),
            EntityId::Function(f) => self.function(f).map(|f| f.qualname.as_str()),
        }
    }

    /// [`Self::qualname`] of an id this graph handed out itself (an FCG
    /// node, an unresolved call's caller), which always has one.
    pub(crate) fn own_qualname(&self, entity: EntityId) -> &str {
        self.qualname(entity).unwrap_or_default()
    }

    /// The module an entity belongs to.
    pub fn module_of(&self, entity: EntityId) -> Option<ModuleId> {
        match entity {
            EntityId::Module(m) => Some(m),
            EntityId::Class(c) => self.class(c).map(|c| c.module),
            EntityId::Function(f) => self.function(f).map(|f| f.module),
        }
    }

    /// Entities directly contained in `entity` (the HCT's children), in source order.
    pub fn children(&self, entity: EntityId) -> &[EntityId] {
        self.children.get(&entity).map_or(&[], Vec::as_slice)
    }

    /// The whole text of a module (for notebooks, the joined code cells).
    pub fn module_source(&self, module: ModuleId) -> Option<&str> {
        self.sources.get(module.index()).map(|s| s.as_str())
    }

    /// The source text of an entity: a whole module, or a class or function
    /// definition including its decorators.
    pub fn source(&self, entity: EntityId) -> Option<&str> {
        let module = self.module_of(entity)?;
        let text = self.module_source(module)?;
        let span = match entity {
            EntityId::Module(_) => return Some(text),
            EntityId::Class(c) => self.class(c)?.span,
            EntityId::Function(f) => self.function(f)?.span,
        };
        text.get(span.start_byte as usize..span.end_byte as usize)
    }

    pub(crate) fn node(&self, entity: EntityId) -> NodeIndex {
        let (m, c) = (self.modules.len(), self.classes.len());
        NodeIndex::new(match entity {
            EntityId::Module(id) => id.index(),
            EntityId::Class(id) => m + id.index(),
            EntityId::Function(id) => m + c + id.index(),
        })
    }

    /// Entities that `entity` calls, transitively up to `depth` edges,
    /// breadth first, each reported once at its smallest depth.
    pub fn callees(&self, entity: EntityId, depth: u32) -> Vec<Reach> {
        self.reach(entity, depth, Direction::Outgoing)
    }

    /// Entities that call `entity`, transitively up to `depth` edges.
    pub fn callers(&self, entity: EntityId, depth: u32) -> Vec<Reach> {
        self.reach(entity, depth, Direction::Incoming)
    }

    fn reach(&self, entity: EntityId, max_depth: u32, direction: Direction) -> Vec<Reach> {
        let start = self.node(entity);
        if start.index() >= self.fcg.node_count() {
            return Vec::new();
        }
        let mut seen = vec![false; self.fcg.node_count()];
        seen[start.index()] = true;
        let mut queue = VecDeque::from([(start, 0u32)]);
        let mut out = Vec::new();
        while let Some((node, depth)) = queue.pop_front() {
            if depth >= max_depth {
                continue;
            }
            let mut next: Vec<(NodeIndex, u32)> = self
                .fcg
                .edges_directed(node, direction)
                .map(|e| {
                    let other = if direction == Direction::Outgoing {
                        e.target()
                    } else {
                        e.source()
                    };
                    (other, *e.weight())
                })
                .collect();
            next.sort_by_key(|(n, _)| self.own_qualname(self.fcg[*n]).to_string());
            for (other, call_sites) in next {
                if std::mem::replace(&mut seen[other.index()], true) {
                    continue;
                }
                out.push(Reach {
                    entity: self.fcg[other],
                    depth: depth + 1,
                    call_sites,
                });
                queue.push_back((other, depth + 1));
            }
        }
        out
    }

    /// Internal modules that `module` imports, with the coupling.
    pub fn imports_of(&self, module: ModuleId) -> Vec<(ModuleId, Coupling)> {
        self.module_neighbours(module, Direction::Outgoing)
    }

    /// Internal modules that import `module`, with the coupling.
    pub fn imported_by(&self, module: ModuleId) -> Vec<(ModuleId, Coupling)> {
        self.module_neighbours(module, Direction::Incoming)
    }

    fn module_neighbours(
        &self,
        module: ModuleId,
        direction: Direction,
    ) -> Vec<(ModuleId, Coupling)> {
        if module.index() >= self.mdg.node_count() {
            return Vec::new();
        }
        let mut out: Vec<(ModuleId, Coupling)> = self
            .mdg
            .edges_directed(NodeIndex::new(module.index()), direction)
            .map(|e| {
                let other = if direction == Direction::Outgoing {
                    e.target()
                } else {
                    e.source()
                };
                (self.mdg[other], *e.weight())
            })
            .collect();
        out.sort_by(|a, b| {
            self.modules[a.0.index()]
                .name
                .cmp(&self.modules[b.0.index()].name)
        });
        out
    }

    /// The shortest chain of imports from `from` to `to` (both included), if any.
    pub fn dependency_path(&self, from: ModuleId, to: ModuleId) -> Option<Vec<ModuleId>> {
        let count = self.mdg.node_count();
        if from.index() >= count || to.index() >= count {
            return None;
        }
        let mut previous: Vec<Option<usize>> = vec![None; count];
        let mut seen = vec![false; count];
        seen[from.index()] = true;
        let mut queue = VecDeque::from([from.index()]);
        while let Some(node) = queue.pop_front() {
            if node == to.index() {
                let mut path = vec![ModuleId(node as u32)];
                let mut current = node;
                while let Some(p) = previous[current] {
                    path.push(ModuleId(p as u32));
                    current = p;
                }
                path.reverse();
                return Some(path);
            }
            let mut next: Vec<usize> = self
                .mdg
                .neighbors_directed(NodeIndex::new(node), Direction::Outgoing)
                .map(|n| n.index())
                .collect();
            next.sort_unstable();
            for n in next {
                if !std::mem::replace(&mut seen[n], true) {
                    previous[n] = Some(node);
                    queue.push_back(n);
                }
            }
        }
        None
    }

    /// Numbers for one module.
    pub fn module_stats(&self, module: ModuleId) -> Option<ModuleStats> {
        let m = self.module(module)?;
        let owned: Vec<EntityId> = std::iter::once(EntityId::Module(module))
            .chain(
                self.classes
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.module == module)
                    .map(|(i, _)| EntityId::Class(ClassId(i as u32))),
            )
            .chain(
                self.functions
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| f.module == module)
                    .map(|(i, _)| EntityId::Function(FunctionId(i as u32))),
            )
            .collect();
        let mut calls_out = 0u32;
        let mut calls_in = 0u32;
        for &entity in &owned {
            let node = self.node(entity);
            calls_out += self
                .fcg
                .edges_directed(node, Direction::Outgoing)
                .map(|e| *e.weight())
                .sum::<u32>();
            calls_in += self
                .fcg
                .edges_directed(node, Direction::Incoming)
                .filter(|e| self.module_of(self.fcg[e.source()]) != Some(module))
                .map(|e| *e.weight())
                .sum::<u32>();
        }
        let count = |kind: fn(&EntityId) -> bool| owned.iter().filter(|e| kind(e)).count() as u32;
        Some(ModuleStats {
            lines: m.line_count,
            classes: count(|e| matches!(e, EntityId::Class(_))),
            functions: count(|e| matches!(e, EntityId::Function(_))),
            imports: self.imports_of(module).len() as u32,
            imported_by: self.imported_by(module).len() as u32,
            calls_out,
            calls_in_from_other_modules: calls_in,
            branches: m.complexity.branches,
        })
    }
}
