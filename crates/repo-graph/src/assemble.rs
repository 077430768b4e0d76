//! The language-neutral second phase: from per-file facts to one [`RepoGraph`].
//!
//! It reads the facts of every module (never the syntax trees, which are
//! gone by now) and assigns global ids: a module's classes and functions
//! are numbered consecutively, so an id maps to its module by a base
//! offset. Each language then resolves its own modules
//! through its [`crate::lang::resolver::Resolver`] (Python: a
//! whole-program points-to analysis; Java: declared types), in parallel
//! with each other, and this module assembles the entities, the FCG, the MDG and the
//! routes from what they found, then the usage facts ([`crate::usage`]).

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;
use std::time::Duration;

use petgraph::graph::{DiGraph, NodeIndex};
use rayon::prelude::*;

use crate::facts::Facts;
use crate::graph::{Coupling, RepoGraph};
use crate::lang::resolver::{Ids, Merged, ModuleEntities, ModuleOutput, Resolver};
use crate::model::{
    Base, Class, ClassId, EntityId, Function, FunctionId, Module, ModuleId, Partial, Skipped,
    SourceKind, UnresolvedCall,
};
use crate::names::ModuleName;
use crate::routes::{RouteDraft, RouteLink};

/// One analysed file, ready for resolution.
pub(crate) struct ModuleInput {
    pub rel_path: String,
    pub kind: SourceKind,
    pub name: ModuleName,
    pub text: Arc<String>,
    pub hash: u128,
    pub lossy: bool,
    pub facts: Arc<Facts>,
}

pub(crate) struct BuildInput {
    pub root: std::path::PathBuf,
    pub modules: Vec<ModuleInput>,
    pub skipped: Vec<Skipped>,
    /// Files analysed in part.
    pub partial: Vec<Partial>,
    /// The memory estimate and ceiling of the per-file phase.
    pub memory: crate::memory::MemoryUse,
    pub files_seen: u64,
    /// [`crate::Analyzer::step_budget`].
    pub step_budget: Option<u64>,
    /// Wall time of the walk and of the per-file phase.
    pub walk_time: Duration,
    pub files_time: Duration,
}

pub(crate) fn build(input: BuildInput, started: std::time::Instant) -> RepoGraph {
    let resolve_started = std::time::Instant::now();
    let inputs = &input.modules;
    let mut class_base = Vec::with_capacity(inputs.len());
    let mut function_base = Vec::with_capacity(inputs.len());
    let mut class_module = Vec::new();
    let mut function_module = Vec::new();
    for (m, module) in inputs.iter().enumerate() {
        class_base.push(class_module.len() as u32);
        function_base.push(function_module.len() as u32);
        let id = ModuleId(m as u32);
        class_module.extend(std::iter::repeat_n(id, module.facts.class_count()));
        function_module.extend(std::iter::repeat_n(id, module.facts.function_count()));
    }
    let ids = Ids {
        inputs,
        class_base: &class_base,
        function_base: &function_base,
        class_module: &class_module,
        function_module: &function_module,
    };
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "ids assigned"
    );
    // Each language resolves its own modules, in parallel with the others.
    let mut resolvers = crate::lang::resolver::resolvers(&ids);
    let merged = crate::lang::resolver::resolve_all(&ids, &mut resolvers, input.step_budget);
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        work = merged.stats.work,
        "calls resolved"
    );
    let resolve_time = resolve_started.elapsed();
    let assemble_started = std::time::Instant::now();
    let mut graph = assemble(&ids, &resolvers, merged, &input, started);
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    graph.phases = crate::stats::Phases {
        walk_ms: ms(input.walk_time),
        files_ms: ms(input.files_time),
        resolve_ms: ms(resolve_time),
        assemble_ms: ms(assemble_started.elapsed()),
    };
    // Taken last, so that the whole run holds every step.
    graph.elapsed = started.elapsed().max(Duration::from_nanos(1));
    graph
}

/// One module's share of the graph, built independently of the others.
struct ModuleParts {
    module: Module,
    classes: Vec<Class>,
    functions: Vec<Function>,
    /// Distinct (caller, callee) pairs with their call-site counts.
    edges: Vec<((EntityId, EntityId), u32)>,
    unresolved: Vec<UnresolvedCall>,
    /// Imported names per internal module depended on.
    imports: Vec<(ModuleId, u32)>,
    routes: Vec<RouteDraft>,
    route_links: Vec<RouteLink>,
    main_calls: Vec<(u32, EntityId)>,
}

fn module_parts<'f>(
    ids: &Ids<'f>,
    resolvers: &[Box<dyn Resolver<'f> + 'f>],
    id: ModuleId,
    module: &ModuleInput,
    output: ModuleOutput,
    bases: Vec<Vec<Base>>,
) -> ModuleParts {
    let mut bases = bases.into_iter();
    let ModuleEntities {
        mut classes,
        functions,
        docstring: module_doc,
    } = resolvers
        .iter()
        .find(|r| r.owns(module))
        .map(|r| r.entities(id, &mut bases))
        .unwrap_or_default();
    // Methods are the functions whose parent is a class of this module.
    let first_class = ids.class_base[id.index()] as usize;
    let first_function = ids.function_base[id.index()];
    for (offset, function) in functions.iter().enumerate() {
        if let EntityId::Class(c) = function.parent
            && let Some(class) = c
                .index()
                .checked_sub(first_class)
                .and_then(|local| classes.get_mut(local))
        {
            class
                .methods
                .push(FunctionId(first_function + offset as u32));
        }
    }
    let mut imports: HashMap<ModuleId, u32> = HashMap::default();
    for target in &output.references {
        *imports.entry(*target).or_default() += 1;
    }
    let mut edge_counts: HashMap<(EntityId, EntityId), u32> = HashMap::default();
    for edge in &output.edges {
        *edge_counts.entry(*edge).or_default() += 1;
    }
    let facts = &module.facts;
    let module_entity = Module {
        name: module.name.name.clone(),
        path: module.rel_path.clone(),
        kind: module.kind,
        language: module.kind.language(),
        package: facts.package().map(str::to_string),
        is_package: module.name.is_package,
        docstring: module_doc.map(str::to_string),
        line_count: facts.line_count(),
        byte_len: u32::try_from(module.text.len()).unwrap_or(u32::MAX),
        imports: output.imports,
        complexity: facts.complexity(),
        has_syntax_errors: facts.has_syntax_errors(),
        lossy_utf8: module.lossy,
        all: facts.all().map(<[String]>::to_vec),
        content_hash: format!("{:032x}", module.hash),
    };
    classes.shrink_to_fit();
    ModuleParts {
        module: module_entity,
        classes,
        functions,
        edges: edge_counts.into_iter().collect(),
        unresolved: output.unresolved,
        imports: imports.into_iter().collect(),
        routes: output.routes,
        route_links: output.route_links,
        main_calls: output.main_calls,
    }
}

fn assemble<'f>(
    ids: &Ids<'f>,
    resolvers: &[Box<dyn Resolver<'f> + 'f>],
    merged: Merged,
    input: &BuildInput,
    started: std::time::Instant,
) -> RepoGraph {
    let inputs = &input.modules;
    let Merged {
        bases,
        mro,
        outputs: per_module,
        stats: resolution,
    } = merged;
    // Each module's classes' bases, in module order.
    let mut bases = bases.into_iter();
    let base_chunks: Vec<Vec<Vec<Base>>> = inputs
        .iter()
        .map(|m| bases.by_ref().take(m.facts.class_count()).collect())
        .collect();
    let parts: Vec<ModuleParts> = inputs
        .par_iter()
        .zip(per_module)
        .zip(base_chunks)
        .enumerate()
        .map(|(m, ((module, output), bases))| {
            module_parts(ids, resolvers, ModuleId(m as u32), module, output, bases)
        })
        .collect();
    let mut modules = Vec::with_capacity(inputs.len());
    let mut classes: Vec<Class> = Vec::with_capacity(ids.class_module.len());
    let mut functions: Vec<Function> = Vec::with_capacity(ids.function_module.len());
    let mut unresolved = Vec::new();
    let mut sorted_edges: Vec<((EntityId, EntityId), u32)> = Vec::new();
    let mut module_edges: HashMap<(ModuleId, ModuleId), Coupling> = HashMap::default();
    let mut route_drafts = Vec::new();
    let mut route_links = Vec::new();
    let mut main_calls = Vec::with_capacity(inputs.len());
    for (m, part) in parts.into_iter().enumerate() {
        let id = ModuleId(m as u32);
        modules.push(part.module);
        classes.extend(part.classes);
        functions.extend(part.functions);
        sorted_edges.extend(part.edges);
        unresolved.extend(part.unresolved);
        for (target, count) in part.imports {
            let coupling = module_edges.entry((id, target)).or_default();
            coupling.imports = coupling.imports.saturating_add(count);
        }
        route_drafts.extend(part.routes.into_iter().map(|r| (id, r)));
        route_links.extend(part.route_links);
        main_calls.push(part.main_calls);
    }
    let module_of = |e: EntityId| match e {
        EntityId::Module(m) => m,
        EntityId::Class(c) => ids.class_module[c.index()],
        EntityId::Function(f) => ids.function_module[f.index()],
    };
    sorted_edges.par_sort_unstable();
    // Edges from a callee to a function passed to it are found by the
    // caller's module, so one pair can come from several modules.
    sorted_edges.dedup_by(|later, kept| {
        if later.0 == kept.0 {
            kept.1 = kept.1.saturating_add(later.1);
            true
        } else {
            false
        }
    });
    for ((caller, callee), count) in &sorted_edges {
        let (from, to) = (module_of(*caller), module_of(*callee));
        if from != to {
            let coupling = module_edges.entry((from, to)).or_default();
            coupling.calls = coupling.calls.saturating_add(*count);
        }
    }

    let mut fcg: DiGraph<EntityId, u32> = DiGraph::with_capacity(
        modules.len() + classes.len() + functions.len(),
        sorted_edges.len(),
    );
    for m in 0..modules.len() {
        fcg.add_node(EntityId::Module(ModuleId(m as u32)));
    }
    for c in 0..classes.len() {
        fcg.add_node(EntityId::Class(ClassId(c as u32)));
    }
    for f in 0..functions.len() {
        fcg.add_node(EntityId::Function(FunctionId(f as u32)));
    }
    let node = |e: EntityId| {
        NodeIndex::new(match e {
            EntityId::Module(id) => id.index(),
            EntityId::Class(id) => modules.len() + id.index(),
            EntityId::Function(id) => modules.len() + classes.len() + id.index(),
        })
    };
    for ((caller, callee), count) in sorted_edges {
        fcg.add_edge(node(caller), node(callee), count);
    }
    let mut mdg: DiGraph<ModuleId, Coupling> =
        DiGraph::with_capacity(modules.len(), module_edges.len());
    for m in 0..modules.len() {
        mdg.add_node(ModuleId(m as u32));
    }
    let mut sorted_module_edges: Vec<((ModuleId, ModuleId), Coupling)> =
        module_edges.into_iter().collect();
    sorted_module_edges.sort_unstable_by_key(|(k, _)| *k);
    for ((from, to), coupling) in sorted_module_edges {
        mdg.add_edge(
            NodeIndex::new(from.index()),
            NodeIndex::new(to.index()),
            coupling,
        );
    }

    let mut by_name: HashMap<String, EntityId> = HashMap::with_capacity_and_hasher(
        modules.len() + classes.len() + functions.len(),
        Default::default(),
    );
    let mut children: HashMap<EntityId, Vec<EntityId>> = HashMap::default();
    for (i, m) in modules.iter().enumerate() {
        by_name
            .entry(m.name.clone())
            .or_insert(EntityId::Module(ModuleId(i as u32)));
    }
    for (i, c) in classes.iter().enumerate() {
        let id = EntityId::Class(ClassId(i as u32));
        by_name.entry(c.qualname.clone()).or_insert(id);
        children.entry(c.parent).or_default().push(id);
    }
    for (i, f) in functions.iter().enumerate() {
        let id = EntityId::Function(FunctionId(i as u32));
        by_name.entry(f.qualname.clone()).or_insert(id);
        children.entry(f.parent).or_default().push(id);
    }
    // A function whose qualified name says more than its parent and name
    // (an overloaded Java method's parameter types) also answers to the
    // plain name, as its first overload.
    for (i, f) in functions.iter().enumerate() {
        let parent = match f.parent {
            EntityId::Module(m) => modules.get(m.index()).map(|m| m.name.as_str()),
            EntityId::Class(c) => classes.get(c.index()).map(|c| c.qualname.as_str()),
            EntityId::Function(p) => functions.get(p.index()).map(|p| p.qualname.as_str()),
        };
        let Some(parent) = parent else { continue };
        let is_plain = f.qualname.len() == parent.len() + 1 + f.name.len()
            && f.qualname.ends_with(f.name.as_str());
        if !is_plain {
            by_name
                .entry(format!("{parent}.{}", f.name))
                .or_insert(EntityId::Function(FunctionId(i as u32)));
        }
    }
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "graphs assembled"
    );
    let routes = crate::routes::finish(route_drafts, &route_links, &modules, &classes, &functions);
    // Classes and functions were pushed separately; restore source order.
    for list in children.values_mut() {
        list.sort_by_key(|e| match e {
            EntityId::Class(c) => classes[c.index()].span.start_byte,
            EntityId::Function(f) => functions[f.index()].span.start_byte,
            EntityId::Module(_) => 0,
        });
    }

    let mut graph = RepoGraph {
        root: input.root.clone(),
        sources: inputs.iter().map(|m| Arc::clone(&m.text)).collect(),
        modules,
        classes,
        functions,
        unresolved,
        skipped: input.skipped.clone(),
        partial: input.partial.clone(),
        memory: input.memory,
        files_seen: input.files_seen,
        fcg,
        mdg,
        by_name,
        children,
        mro,
        routes,
        elapsed: Duration::ZERO,
        phases: crate::stats::Phases::default(),
        resolution,
        usage: crate::usage::UsageFacts::default(),
    };
    // Usage facts name entities, so they are read off the finished graph.
    graph.usage = crate::usage::build(&graph, inputs, &main_calls);
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "usage facts built"
    );
    graph.elapsed = started.elapsed().max(Duration::from_nanos(1));
    graph
}
