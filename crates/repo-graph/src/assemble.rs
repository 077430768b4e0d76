//! The language-neutral second phase: from per-file facts to one [`RepoGraph`].
//!
//! It reads the facts of every module (never the syntax trees, which are
//! gone by now) and assigns global ids: a module's classes and functions
//! are numbered consecutively, so an id maps to its module by a base
//! offset. Each language then resolves its own modules
//! ([`crate::lang::python::resolve`]: a whole-program points-to analysis;
//! [`crate::lang::java::resolve`]: declared types), in parallel with each
//! other, and this module assembles the entities, the FCG, the MDG and the
//! routes from what they found, then the usage facts ([`crate::usage`]).

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;
use std::time::Duration;

use petgraph::graph::{DiGraph, NodeIndex};
use rayon::prelude::*;

use crate::facts::{Facts, LanguageFacts};
use crate::graph::{Coupling, RepoGraph};
use crate::lang::java::resolve::JavaResolver;
use crate::lang::python::ScopeRef;
use crate::lang::python::resolve::Ids;
use crate::model::{
    Base, Class, ClassDetail, ClassId, EntityId, Function, FunctionDetail, FunctionId, Import,
    ImportTarget, Language, Module, ModuleId, Partial, Skipped, SourceKind, UnresolvedCall,
};
use crate::names::ModuleName;
use crate::render::ResolutionStats;
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
}

pub(crate) fn build(input: BuildInput, started: std::time::Instant) -> RepoGraph {
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
    // The two languages resolve independently; Java's per-module work is parallel.
    let (python, (java, java_outputs)) = rayon::join(
        || crate::lang::python::resolve::resolve(&ids, input.step_budget),
        || {
            let java = JavaResolver::new(
                inputs,
                &class_base,
                &function_base,
                &class_module,
                &function_module,
            );
            let outputs: Vec<(usize, ModuleOutput)> = (0..inputs.len())
                .into_par_iter()
                .filter(|m| inputs[*m].facts.language() == Language::Java)
                .map(|m| (m, java.resolve_module(ModuleId(m as u32))))
                .collect();
            (java, outputs)
        },
    );
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        work = python.stats.work,
        "calls resolved"
    );
    let mut bases: Vec<Vec<Base>> = vec![Vec::new(); class_module.len()];
    let mut mro: Vec<Vec<ClassId>> = (0..class_module.len())
        .map(|c| vec![ClassId(c as u32)])
        .collect();
    for (c, java_bases) in java.bases.iter().enumerate() {
        if java.is_java_class(ClassId(c as u32)) {
            bases[c] = java_bases.clone();
            mro[c] = java.mro[c].clone();
        }
    }
    for (class, list) in python.bases {
        if let Some(slot) = bases.get_mut(class.index()) {
            *slot = list;
        }
    }
    for (class, order) in python.mro {
        if let Some(slot) = mro.get_mut(class.index()) {
            *slot = order;
        }
    }
    let mut per_module: Vec<ModuleOutput> =
        (0..inputs.len()).map(|_| ModuleOutput::default()).collect();
    for (m, output) in python.outputs {
        if let Some(slot) = per_module.get_mut(m.index()) {
            *slot = output;
        }
    }
    for (m, output) in java_outputs {
        if let Some(slot) = per_module.get_mut(m) {
            *slot = output;
        }
    }
    let resolution = crate::render::ResolutionStats {
        work: python
            .stats
            .work
            .saturating_add(java.setup_work())
            .saturating_add(per_module.iter().map(|o| o.work).sum::<u64>()),
        widened: python.stats.widened,
        budget_exhausted: python.stats.budget_exhausted,
    };
    assemble(
        &ids, &java, bases, mro, per_module, resolution, &input, started,
    )
}

/// What resolving one module produced.
#[derive(Default)]
pub(crate) struct ModuleOutput {
    pub imports: Vec<Import>,
    pub edges: Vec<(EntityId, EntityId)>,
    pub unresolved: Vec<UnresolvedCall>,
    /// Java: one entry per distinct internal type the module names, by the
    /// module that defines it (Python's dependencies come from `imports`).
    pub references: Vec<ModuleId>,
    pub routes: Vec<RouteDraft>,
    /// Python: routers, their registrations and Django includes.
    pub route_links: Vec<RouteLink>,
    /// Resolution work units spent on this module.
    pub work: u64,
    /// Python: internal callees of the calls written in each main block
    /// (by block index), in call order.
    pub main_calls: Vec<(u32, EntityId)>,
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

fn module_parts(
    ids: &Ids<'_>,
    java: &JavaResolver<'_>,
    id: ModuleId,
    module: &ModuleInput,
    output: ModuleOutput,
    bases: Vec<Vec<Base>>,
) -> ModuleParts {
    let mut bases = bases.into_iter();
    let scope_entity = |scope: ScopeRef| match scope {
        // Definitions are never inside lambdas.
        ScopeRef::Module | ScopeRef::Lambda(_) => EntityId::Module(id),
        ScopeRef::Class(c) => EntityId::Class(ClassId(ids.class_base[id.index()] + c)),
        ScopeRef::Function(f) => EntityId::Function(FunctionId(ids.function_base[id.index()] + f)),
    };
    let qualify = |local: &str| format!("{}.{local}", module.name.name);
    let (mut classes, functions, module_doc) = match &module.facts.of {
        LanguageFacts::Python(facts) => {
            let classes: Vec<Class> = facts
                .classes
                .iter()
                .map(|class| Class {
                    name: class.name.clone(),
                    qualname: qualify(&class.local_path),
                    module: id,
                    parent: scope_entity(class.parent),
                    bases: bases.next().unwrap_or_default(),
                    decorators: class.decorators.clone(),
                    docstring: class.docstring.clone(),
                    methods: Vec::new(),
                    span: class.span,
                    detail: ClassDetail::Python,
                })
                .collect();
            let functions: Vec<Function> = facts
                .functions
                .iter()
                .map(|function| Function {
                    name: function.name.clone(),
                    qualname: qualify(&function.local_path),
                    module: id,
                    parent: scope_entity(function.parent),
                    kind: function.kind,
                    params: function.params.clone(),
                    returns: function.returns.clone(),
                    decorators: function.decorators.clone(),
                    is_async: function.is_async,
                    docstring: function.docstring.clone(),
                    span: function.span,
                    complexity: function.complexity,
                    detail: FunctionDetail::Python,
                })
                .collect();
            (classes, functions, facts.docstring.as_deref())
        }
        LanguageFacts::Java(facts) => {
            let entities = java.entities(id, facts, &mut bases);
            (entities.classes, entities.functions, entities.docstring)
        }
    };
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
    if module.facts.python().is_some() {
        for import in &output.imports {
            let target = match &import.target {
                ImportTarget::Module(t) | ImportTarget::Attribute(t) => Some(*t),
                ImportTarget::Class(c) => ids.class_module.get(c.index()).copied(),
                ImportTarget::Function(f) => ids.function_module.get(f.index()).copied(),
                ImportTarget::Package(_) | ImportTarget::External(_) => None,
            };
            if let Some(target) = target.filter(|t| *t != id) {
                *imports.entry(target).or_default() += 1;
            }
        }
    }
    // Java dependencies are counted per type named, not per import.
    for target in &output.references {
        *imports.entry(*target).or_default() += 1;
    }
    let mut edge_counts: HashMap<(EntityId, EntityId), u32> = HashMap::default();
    for edge in &output.edges {
        *edge_counts.entry(*edge).or_default() += 1;
    }
    let (python_facts, java_facts) = (module.facts.python(), module.facts.java());
    let module_entity = Module {
        name: module.name.name.clone(),
        path: module.rel_path.clone(),
        kind: module.kind,
        language: module.kind.language(),
        package: java_facts.and_then(|f| f.package.clone()),
        is_package: module.name.is_package,
        docstring: module_doc.map(str::to_string),
        line_count: python_facts
            .map(|f| f.line_count)
            .or(java_facts.map(|f| f.line_count))
            .unwrap_or(0),
        byte_len: u32::try_from(module.text.len()).unwrap_or(u32::MAX),
        imports: output.imports,
        complexity: python_facts
            .map(|f| f.complexity)
            .or(java_facts.map(|f| f.complexity))
            .unwrap_or_default(),
        has_syntax_errors: python_facts
            .map(|f| f.has_syntax_errors)
            .or(java_facts.map(|f| f.has_syntax_errors))
            .unwrap_or(false),
        lossy_utf8: module.lossy,
        all: python_facts.and_then(|f| f.all.clone()),
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

#[allow(clippy::too_many_arguments)]
fn assemble(
    ids: &Ids<'_>,
    java: &JavaResolver<'_>,
    bases: Vec<Vec<Base>>,
    mro: Vec<Vec<ClassId>>,
    per_module: Vec<ModuleOutput>,
    resolution: ResolutionStats,
    input: &BuildInput,
    started: std::time::Instant,
) -> RepoGraph {
    let inputs = &input.modules;
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
            module_parts(ids, java, ModuleId(m as u32), module, output, bases)
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
    // An overloaded Java method also answers to its name without parameter
    // types, as its first overload.
    for (i, f) in functions
        .iter()
        .enumerate()
        .filter(|(_, f)| f.java().is_some())
    {
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
