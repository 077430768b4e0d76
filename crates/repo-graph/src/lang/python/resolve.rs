//! Python resolution across files: a whole-program points-to analysis.
//!
//! In the spirit of PyCG's assignment graph, every binding, call result,
//! function parameter, return and yield, container's elements and class or
//! module attribute is a node of one graph; assignments, argument passing,
//! returns, imports and inheritance are edges and constraints between them;
//! a worklist propagates abstract objects ([`Obj`]) to a fixpoint
//! ([`super::solve`]). Calls are then read off the call sites' callee
//! nodes.
//!
//! The solve runs in two stages. The first propagates everything that does
//! not need a method resolution order (names, imports, module attributes,
//! calls of plain functions); class bases are read from it and C3 MROs
//! computed; the second replays the operations on classes and instances
//! that the first set aside, and runs to the fixpoint.
//!
//! Cost: node sets are capped, each value moves along each edge once, MROs
//! are memoised and capped at [`MAX_MRO`], star-import chains are followed
//! with an explicit stack, and a step budget ([`budget`]) stops the solver
//! as a last guard: nothing here can recurse on input depth or go
//! exponential.

use rustc_hash::FxHashMap;

use super::builtins::is_builtin;
use super::classes::ClassTables;
use super::containers::ContainerTables;
use super::facts::*;
use super::solve::{Delivery, Engine, Obj, Transform};
pub(crate) use crate::lang::resolver::Ids;
use crate::lang::resolver::Resolution;
use crate::model::{ClassId, EntityId, FunctionId, FunctionKind, ImportKind, ModuleId, ParamKind};

/// Longest method resolution order kept per class; a deeper hierarchy is
/// cut there (and counted), and lookups continue from the last class kept
/// (whose own MRO goes on), so a 10,000-class chain costs linear work and
/// still finds a method defined at its top.
pub(crate) const MAX_MRO: usize = 64;
/// Longest external dotted name built from attribute chains.
const MAX_EXTERNAL_NAME: usize = 160;

/// The step budget for a program whose graph has `size` nodes and
/// constraints: far above what the analysis needs ((edges + constraints) ×
/// the value cap), so it only stops a bug, never an ordinary repository.
fn budget(size: usize) -> u64 {
    (size as u64).saturating_mul(512).saturating_add(50_000_000)
}

/// A module-level `from m import *`: the module and its `__all__`, if any.
type StarImport<'f> = (ModuleId, Option<&'f [String]>);

/// An interned string: attribute and variable names, external names.
///
/// The texts sit end to end in one buffer and the table maps a 64-bit hash
/// of a text to its id, so interning allocates nothing per text: on Django
/// the two allocations per name (a key and a copy) and freeing them came to
/// about a tenth of the whole resolution. A text whose hash an earlier,
/// different text already holds goes to `collided`.
#[derive(Default)]
pub(super) struct Interner {
    by_hash: FxHashMap<u64, u32>,
    collided: FxHashMap<Box<str>, u32>,
    buffer: String,
    /// Where each id's text ends in `buffer`; it starts where the previous one ends.
    ends: Vec<usize>,
}

impl Interner {
    pub(super) fn id(&mut self, text: &str) -> u32 {
        self.id_hashed(text, Self::hash(text))
    }

    fn id_hashed(&mut self, text: &str, hash: u64) -> u32 {
        match self.by_hash.get(&hash) {
            Some(&id) if self.text(id) == text => id,
            Some(_) => {
                if let Some(&id) = self.collided.get(text) {
                    return id;
                }
                let id = self.push(text);
                self.collided.insert(text.into(), id);
                id
            }
            None => {
                let id = self.push(text);
                self.by_hash.insert(hash, id);
                id
            }
        }
    }

    pub(super) fn get(&self, text: &str) -> Option<u32> {
        self.get_hashed(text, Self::hash(text))
    }

    fn get_hashed(&self, text: &str, hash: u64) -> Option<u32> {
        match self.by_hash.get(&hash) {
            Some(&id) if self.text(id) == text => Some(id),
            Some(_) => self.collided.get(text).copied(),
            None => None,
        }
    }

    pub(super) fn text(&self, id: u32) -> &str {
        let id = id as usize;
        let (Some(&end), start) = (
            self.ends.get(id),
            id.checked_sub(1)
                .and_then(|p| self.ends.get(p))
                .copied()
                .unwrap_or(0),
        ) else {
            return "";
        };
        self.buffer.get(start..end).unwrap_or("")
    }

    fn push(&mut self, text: &str) -> u32 {
        let id = u32::try_from(self.ends.len()).unwrap_or(u32::MAX);
        self.buffer.push_str(text);
        self.ends.push(self.buffer.len());
        id
    }

    fn hash(text: &str) -> u64 {
        use std::hash::BuildHasher as _;
        rustc_hash::FxBuildHasher.hash_one(text)
    }
}

/// Where a value comes from: nothing the analysis follows, a node, or one
/// object, by its interned id ([`Analysis::constant`]) so that sites and
/// constraints, which hold operands, stay small.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Operand {
    None,
    Node(u32),
    Const(u32),
}

#[derive(Debug, Clone, Copy)]
pub(super) enum ArgSlot {
    Positional(u32),
    Keyword(u32),
    Star,
    DoubleStar,
}

/// One module's bindings by scope and name atom, each key's in source
/// order: one flat list and each key's range of it (a map to small vectors
/// cost 25 MB more on sympy).
#[derive(Default)]
pub(super) struct ScopeNames {
    ranges: FxHashMap<(ScopeRef, u32), (u32, u32)>,
    bindings: Vec<u32>,
}

impl ScopeNames {
    /// Indexes `(key, binding)` pairs given in source order.
    fn new(pairs: impl Iterator<Item = ((ScopeRef, u32), u32)> + Clone) -> ScopeNames {
        let mut ranges: FxHashMap<(ScopeRef, u32), (u32, u32)> = FxHashMap::default();
        let mut total = 0u32;
        for (key, _) in pairs.clone() {
            ranges.entry(key).or_default().1 += 1;
            total += 1;
        }
        // Each key's start, then fill: a counting sort keeps source order.
        let mut next = 0u32;
        for (start, len) in ranges.values_mut() {
            *start = next;
            next += *len;
            *len = 0;
        }
        let mut bindings = vec![0u32; total as usize];
        for (key, binding) in pairs {
            if let Some((start, len)) = ranges.get_mut(&key) {
                if let Some(slot) = bindings.get_mut((*start + *len) as usize) {
                    *slot = binding;
                }
                *len += 1;
            }
        }
        ScopeNames { ranges, bindings }
    }

    /// The bindings of `key`, in source order.
    pub(super) fn get(&self, key: &(ScopeRef, u32)) -> Option<&[u32]> {
        let (start, len) = *self.ranges.get(key)?;
        self.bindings.get(start as usize..(start + len) as usize)
    }

    pub(super) fn contains_key(&self, key: &(ScopeRef, u32)) -> bool {
        self.ranges.contains_key(key)
    }
}

/// A call site, global across modules.
pub(super) struct Site {
    pub(super) module: ModuleId,
    pub(super) caller: EntityId,
    /// The node of the object a method is read from (`obj` in `obj.m()`).
    pub(super) receiver: u32,
    pub(super) result: u32,
    /// Its arguments: this range of [`Analysis::site_args`].
    pub(super) args: ArgRange,
    pub(super) kind: CallKind,
    /// Internal callees found.
    pub(super) targets: Vec<EntityId>,
    /// External callees found, by interned name.
    pub(super) externals: Vec<u32>,
    /// The outside bases' `__init__` that instantiating an internal class
    /// without one of its own runs, by interned name: reported beside the
    /// class, which is the site's target.
    pub(super) outside_inits: Vec<u32>,
    pub(super) local: u32,
}

/// Where a site's arguments are in [`Analysis::site_args`]: one vector for
/// every site rather than an allocation each (184,655 sites on Django).
#[derive(Debug, Clone, Copy)]
pub(super) struct ArgRange {
    start: u32,
    len: u32,
}

/// A parameter of a function or lambda.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot {
    pub(super) node: u32,
    pub(super) kind: ParamKind,
    pub(super) name: u32,
}

#[derive(Debug, Clone, Default)]
pub(super) struct Params {
    pub(super) slots: Vec<Slot>,
    /// Container ids collecting extra positional and keyword arguments.
    pub(super) var_positional: Option<u32>,
    pub(super) var_keyword: Option<u32>,
}

/// What a call's arguments are passed to.
#[derive(Debug, Clone, Copy)]
pub(super) enum Callee {
    Function(FunctionId),
    Lambda(u32),
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Constraint {
    Load {
        dst: u32,
        attr: u32,
        load: u32,
    },
    Call {
        site: u32,
    },
    Elem {
        dst: u32,
    },
    AttrStore {
        attr: u32,
        value: Operand,
    },
    ElemStore {
        value: Operand,
        key: Option<u32>,
    },
    /// An element at a literal key or index.
    ElemAt {
        dst: u32,
        key: u32,
    },
    /// `super()` in a method of `class`, on the receiver values.
    SuperOf {
        class: ClassId,
        dst: u32,
    },
    /// `super(C, obj)`: the classes in `class`, on the object values.
    SuperExplicit {
        class: u32,
        dst: u32,
    },
    /// `except C as e`: what the program raises of `C`.
    Caught {
        dst: u32,
    },
}

/// A `.attr` read: who reads it, for property calls.
pub(super) struct Load {
    pub(super) module: ModuleId,
    pub(super) caller: EntityId,
}

pub(crate) struct Analysis<'f> {
    pub(super) ids: &'f Ids<'f>,
    pub(super) module_by_name: FxHashMap<&'f str, ModuleId>,
    pub(super) engine: Engine,
    pub(super) atoms: Interner,
    pub(super) externals: Interner,
    /// [`Analysis::external_attr`]'s answers, by outside object and attribute.
    pub(super) external_attrs: FxHashMap<(u32, u32), Option<Obj>>,
    /// What calling each outside callable returns, by its name.
    pub(super) external_results: FxHashMap<u32, Option<Obj>>,
    /// Per module: binding node of binding 0, call node of call 0, first
    /// global call site, first container id and first lambda id.
    pub(super) binding_node: Vec<u32>,
    pub(super) call_node: Vec<u32>,
    pub(super) site_base: Vec<u32>,
    pub(super) container_base: Vec<u32>,
    pub(super) lambda_base: Vec<u32>,
    /// Per module: (scope, name atom) → bindings, in source order.
    pub(super) names: Vec<ScopeNames>,
    /// The class and load of each [`Transform::FromInstance`] edge.
    pub(super) instance_reads: Vec<(ClassId, u32)>,
    /// Per module: the global atom of each of the file's name ids.
    pub(super) local_atoms: Vec<Vec<u32>>,
    /// Per module: whether it has module-level star imports.
    pub(super) star_imports: Vec<Vec<StarImport<'f>>>,
    /// Return and yield nodes: `ret_base + function id`, `yield_base + function id`.
    pub(super) ret_base: u32,
    pub(super) yield_base: u32,
    pub(super) lambda_node: Vec<u32>,
    /// Elements of containers, by container and key ([`super::containers`]).
    pub(super) containers: ContainerTables,
    pub(super) name_all: FxHashMap<(ModuleId, ScopeRef, u32), u32>,
    pub(super) module_attrs: FxHashMap<(ModuleId, u32), u32>,
    /// By function id (empty for Java methods).
    pub(super) function_params: Vec<Params>,
    pub(super) lambda_params: Vec<Params>,
    pub(super) constraints: Vec<Constraint>,
    pub(super) sites: Vec<Site>,
    /// Every site's arguments, end to end ([`Site::args`]).
    pub(super) site_args: Vec<(ArgSlot, Operand)>,
    /// Arguments being compiled, before they join [`Analysis::site_args`].
    arg_scratch: Vec<(ArgSlot, Operand)>,
    pub(super) loads: Vec<Load>,
    pub(super) property_edges: Vec<(ModuleId, EntityId, EntityId)>,
    pub(super) deferred: Vec<(u32, Obj)>,
    pub(super) second_stage: bool,
    /// MROs, attribute owners, raised classes ([`super::classes`]).
    pub(super) classes: ClassTables,
}

/// Resolves every Python module of `ids.inputs`.
pub(crate) fn resolve(ids: &Ids<'_>, step_budget: Option<u64>) -> Resolution {
    let started = std::time::Instant::now();
    let mut analysis = Analysis::new(ids);
    analysis.compile();
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        nodes = analysis.engine.len(),
        constraints = analysis.constraints.len(),
        sites = analysis.sites.len(),
        "python: graph compiled"
    );
    analysis.engine.budget =
        step_budget.unwrap_or_else(|| budget(analysis.engine.len() + analysis.constraints.len()));
    analysis.run();
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        work = analysis.engine.work,
        deferred = analysis.deferred.len(),
        "python: first stage solved"
    );
    let bases = analysis.compute_mros();
    analysis.index_raised();
    analysis.second_stage = true;
    let deferred = std::mem::take(&mut analysis.deferred);
    let mut out = Vec::new();
    for (constraint, value) in deferred {
        analysis.fire(constraint, value, &mut out);
    }
    analysis.flush(&mut out);
    analysis.run();
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        work = analysis.engine.work,
        nodes = analysis.engine.len(),
        "python: solved"
    );
    analysis.finish(bases)
}

impl<'f> Analysis<'f> {
    pub(super) fn new(ids: &'f Ids<'f>) -> Self {
        let inputs = ids.inputs;
        let mut module_by_name: FxHashMap<&str, ModuleId> = FxHashMap::default();
        for (m, module) in inputs.iter().enumerate() {
            if module.facts.python().is_some() {
                module_by_name.insert(&module.name.name, ModuleId(m as u32));
            }
        }
        for (m, module) in inputs.iter().enumerate() {
            if module.facts.python().is_some()
                && let Some(alias) = &module.name.alias
            {
                module_by_name.entry(alias).or_insert(ModuleId(m as u32));
            }
        }
        Analysis {
            ids,
            module_by_name,
            engine: Engine::new(),
            atoms: Interner::default(),
            externals: Interner::default(),
            external_attrs: FxHashMap::default(),
            external_results: FxHashMap::default(),
            binding_node: Vec::new(),
            call_node: Vec::new(),
            site_base: Vec::new(),
            container_base: Vec::new(),
            lambda_base: Vec::new(),
            names: Vec::new(),
            instance_reads: Vec::new(),
            local_atoms: Vec::new(),
            star_imports: Vec::new(),
            ret_base: 0,
            yield_base: 0,
            lambda_node: Vec::new(),
            name_all: FxHashMap::default(),
            module_attrs: FxHashMap::default(),
            function_params: Vec::new(),
            lambda_params: Vec::new(),
            constraints: Vec::new(),
            sites: Vec::new(),
            site_args: Vec::new(),
            arg_scratch: Vec::new(),
            loads: Vec::new(),
            property_edges: Vec::new(),
            deferred: Vec::new(),
            second_stage: false,
            classes: ClassTables::default(),
            containers: ContainerTables::default(),
        }
    }

    pub(super) fn facts(&self, module: ModuleId) -> Option<&'f PythonFacts> {
        self.ids.inputs.get(module.index())?.facts.python()
    }

    pub(super) fn class_id(&self, module: ModuleId, local: u32) -> ClassId {
        ClassId(
            self.ids
                .class_base
                .get(module.index())
                .copied()
                .unwrap_or(0)
                + local,
        )
    }

    pub(super) fn function_id(&self, module: ModuleId, local: u32) -> FunctionId {
        FunctionId(
            self.ids
                .function_base
                .get(module.index())
                .copied()
                .unwrap_or(0)
                + local,
        )
    }

    pub(super) fn local_class(&self, class: ClassId) -> Option<(ModuleId, u32, &'f ClassFacts)> {
        let module = *self.ids.class_module.get(class.index())?;
        let local = class
            .0
            .checked_sub(*self.ids.class_base.get(module.index())?)?;
        Some((
            module,
            local,
            self.facts(module)?.classes.get(local as usize)?,
        ))
    }

    pub(super) fn local_function(
        &self,
        function: FunctionId,
    ) -> Option<(ModuleId, &'f FunctionFacts)> {
        let module = *self.ids.function_module.get(function.index())?;
        let local = function
            .0
            .checked_sub(*self.ids.function_base.get(module.index())?)?;
        Some((module, self.facts(module)?.functions.get(local as usize)?))
    }

    pub(super) fn module_named(&self, name: &str) -> Option<ModuleId> {
        self.module_by_name.get(name).copied()
    }

    /// The package a relative import of `module` starts from.
    pub(super) fn relative_base(&self, module: ModuleId, level: u32, written: &str) -> String {
        let Some(input) = self.ids.inputs.get(module.index()) else {
            return written.to_string();
        };
        let mut package: &str = if input.name.is_package {
            &input.name.name
        } else {
            input.name.name.rsplit_once('.').map_or("", |(p, _)| p)
        };
        for _ in 1..level {
            package = package.rsplit_once('.').map_or("", |(p, _)| p);
        }
        match (package.is_empty(), written.is_empty()) {
            (true, _) => written.to_string(),
            (false, true) => package.to_string(),
            (false, false) => format!("{package}.{written}"),
        }
    }

    /// An absolute import as Python would find it: by its full name, else
    /// (for scripts run from their directory, and Python 2 style implicit
    /// relative imports) as a sibling of the importing module.
    pub(super) fn import_base(&self, module: ModuleId, level: u32, written: &str) -> String {
        if level > 0 {
            return self.relative_base(module, level, written);
        }
        let first = written.split('.').next().unwrap_or(written);
        if self.module_named(first).is_some() || written.is_empty() {
            return written.to_string();
        }
        let sibling = self.relative_base(module, 1, written);
        let sibling_first = self.relative_base(module, 1, first);
        if self.module_named(&sibling_first).is_some() {
            sibling
        } else {
            written.to_string()
        }
    }

    pub(super) fn external(&mut self, name: &str) -> Option<Obj> {
        (name.len() <= MAX_EXTERNAL_NAME).then(|| Obj::External(self.externals.id(name)))
    }

    /// The outside object `base.attr`, named once per pair: the same
    /// attribute of the same outside object is read at many places, and
    /// each value reaching each of them used to format and intern the name
    /// again.
    pub(super) fn external_attr(&mut self, base: u32, attr: u32) -> Option<Obj> {
        if let Some(known) = self.external_attrs.get(&(base, attr)) {
            return *known;
        }
        let name = format!("{}.{}", self.externals.text(base), self.atoms.text(attr));
        let obj = self.external(&name);
        self.external_attrs.insert((base, attr), obj);
        obj
    }

    // ----- compilation: facts to nodes and constraints -----

    pub(super) fn compile(&mut self) {
        let inputs = self.ids.inputs;
        let mut containers = 0u32;
        let mut lambdas = 0u32;
        let mut sites = 0u32;
        for (m, input) in inputs.iter().enumerate() {
            let module = ModuleId(m as u32);
            let Some(facts) = input.facts.python() else {
                self.binding_node.push(0);
                self.call_node.push(0);
                self.site_base.push(sites);
                self.container_base.push(containers);
                self.lambda_base.push(lambdas);
                self.names.push(ScopeNames::default());
                self.local_atoms.push(Vec::new());
                self.star_imports.push(Vec::new());
                continue;
            };
            self.binding_node
                .push(self.engine.nodes(facts.bindings.len()));
            self.call_node.push(self.engine.nodes(facts.calls.len()));
            self.site_base.push(sites);
            sites += u32::try_from(facts.calls.len()).unwrap_or(0);
            self.container_base.push(containers);
            containers += facts.containers;
            self.containers
                .add_displays(&facts.container_kinds, facts.containers);
            self.lambda_base.push(lambdas);
            lambdas += u32::try_from(facts.lambdas.len()).unwrap_or(0);
            // The file's names, each interned once.
            let local: Vec<u32> = facts.names.iter().map(|n| self.atoms.id(n)).collect();
            let named = facts
                .bindings
                .iter()
                .enumerate()
                .filter(|(_, binding)| !facts.name(binding.name).is_empty())
                .map(|(b, binding)| {
                    let atom = local
                        .get(binding.name as usize)
                        .copied()
                        .unwrap_or(u32::MAX);
                    ((binding.scope, atom), b as u32)
                });
            self.names.push(ScopeNames::new(named));
            for function in facts.functions.iter().filter(|f| f.is_property) {
                let atom = self.atoms.id(&function.name);
                self.classes.note_property(atom);
            }
            self.local_atoms.push(local);
            for (c, class) in facts.classes.iter().enumerate() {
                let atoms = class.self_attrs.iter().map(|a| self.atoms.id(a)).collect();
                self.classes
                    .set_self_attrs(self.class_id(module, c as u32), atoms);
            }
            self.star_imports.push(Vec::new());
        }
        // One site per call: reserved at once rather than grown by doubling.
        self.sites.reserve_exact(sites as usize);
        for _ in 0..lambdas {
            let node = self.engine.node();
            self.lambda_node.push(node);
        }
        let functions = self.ids.function_module.len();
        self.ret_base = self.engine.nodes(functions);
        self.yield_base = self.engine.nodes(functions);
        self.function_params = vec![Params::default(); functions];
        self.containers.seal_displays();
        self.lambda_params = vec![Params::default(); lambdas as usize];
        // Star imports need every module's name table.
        for (m, input) in inputs.iter().enumerate() {
            let module = ModuleId(m as u32);
            let Some(facts) = input.facts.python() else {
                continue;
            };
            let mut stars = Vec::new();
            for import in &facts.imports {
                if import.kind != ImportKind::Star || import.scope != ScopeRef::Module {
                    continue;
                }
                let base = self.import_base(module, import.level, &import.module);
                if let Some(target) = self.module_named(&base).filter(|t| *t != module) {
                    let all = self.facts(target).and_then(|f| f.all.as_deref());
                    stars.push((target, all));
                }
            }
            if let Some(slot) = self.star_imports.get_mut(m) {
                *slot = stars;
            }
        }
        let mut out = Vec::new();
        for (m, input) in inputs.iter().enumerate() {
            if let Some(facts) = input.facts.python() {
                self.compile_module(ModuleId(m as u32), facts, &mut out);
            }
        }
        self.flush(&mut out);
    }

    pub(super) fn compile_module(
        &mut self,
        module: ModuleId,
        facts: &'f PythonFacts,
        out: &mut Vec<Delivery>,
    ) {
        // Parameters first: bindings refer to them.
        let mut params: FxHashMap<(ScopeRef, u32), u32> = FxHashMap::default();
        for (b, binding) in facts.bindings.iter().enumerate() {
            if let BindValue::Param { position, .. } = &binding.value {
                params.insert((binding.scope, *position), b as u32);
            }
        }
        for (f, function) in facts.functions.iter().enumerate() {
            let id = self.function_id(module, f as u32);
            let scope = ScopeRef::Function(f as u32);
            let mut table = Params::default();
            for (position, param) in function.params.iter().enumerate() {
                let node = params
                    .get(&(scope, position as u32))
                    .map_or(u32::MAX, |b| self.binding_node[module.index()] + b);
                let name = self.atoms.id(&param.name);
                table.slots.push(Slot {
                    node,
                    kind: param.kind,
                    name,
                });
                if node != u32::MAX {
                    match param.kind {
                        ParamKind::VarPositional => {
                            let c = self.new_container();
                            self.engine.add(node, Obj::Container(c));
                            table.var_positional = Some(c);
                        }
                        ParamKind::VarKeyword => {
                            let c = self.new_container();
                            self.engine.add(node, Obj::Container(c));
                            table.var_keyword = Some(c);
                        }
                        _ => {}
                    }
                }
            }
            // `self` and `cls` are the class's own, besides what callers pass.
            if let (ScopeRef::Class(c), Some(first)) = (function.parent, table.slots.first())
                && first.node != u32::MAX
                && first.kind == ParamKind::Normal
            {
                let class = self.class_id(module, c);
                match function.kind {
                    FunctionKind::Method => self.engine.add(first.node, Obj::Instance(class)),
                    FunctionKind::ClassMethod => self.engine.add(first.node, Obj::Class(class)),
                    _ => {}
                }
            }
            if let Some(slot) = self.function_params.get_mut(id.index()) {
                *slot = table;
            }
            let ret = self.ret(id);
            if let Some(value) = &function.returns_value {
                let op = self.operand(module, ScopeRef::Module, value, out);
                self.flow(op, ret, out);
            }
        }
        for (l, _) in facts.lambdas.iter().enumerate() {
            let scope = ScopeRef::Lambda(l as u32);
            let mut table = Params::default();
            let mut position = 0u32;
            while let Some(b) = params.get(&(scope, position)) {
                let binding = &facts.bindings[*b as usize];
                let star = matches!(binding.value, BindValue::Param { star: true, .. });
                let name = self.atom_of(module, binding.name);
                table.slots.push(Slot {
                    node: self.binding_node[module.index()] + b,
                    kind: if star {
                        ParamKind::VarPositional
                    } else {
                        ParamKind::Normal
                    },
                    name,
                });
                position += 1;
            }
            let global = self.lambda_base[module.index()] + l as u32;
            if let Some(slot) = self.lambda_params.get_mut(global as usize) {
                *slot = table;
            }
        }
        for (b, binding) in facts.bindings.iter().enumerate() {
            let node = self.binding_node[module.index()] + b as u32;
            match &binding.value {
                BindValue::Expr(value) => {
                    let op = self.operand(module, binding.scope, value, out);
                    self.flow(op, node, out);
                }
                BindValue::Import(i) => {
                    let op = self.import_operand(module, *i, out);
                    self.flow(op, node, out);
                }
                BindValue::Param {
                    annotation,
                    default,
                    ..
                } => {
                    let outer = facts
                        .parent_scope(binding.scope)
                        .unwrap_or(ScopeRef::Module);
                    for value in [annotation, default].into_iter().flatten() {
                        let op = self.operand(module, outer, value, out);
                        self.flow(op, node, out);
                    }
                }
            }
        }
        for (l, lambda) in facts.lambdas.iter().enumerate() {
            let node = self.lambda_node[(self.lambda_base[module.index()] + l as u32) as usize];
            let op = self.operand(module, ScopeRef::Lambda(l as u32), &lambda.body, out);
            self.flow(op, node, out);
        }
        for (scope, effect) in &facts.effects {
            let scope = *scope;
            match effect {
                Effect::Return { function, value } => {
                    let op = self.operand(module, scope, value, out);
                    let ret = self.ret(self.function_id(module, *function));
                    self.flow(op, ret, out);
                }
                Effect::Yield { function, value } => {
                    let op = self.operand(module, scope, value, out);
                    let node = self.yielded(self.function_id(module, *function));
                    self.flow(op, node, out);
                }
                Effect::AttrStore {
                    object,
                    attr,
                    value,
                } => {
                    let object = self.operand(module, scope, object, out);
                    let value = self.operand(module, scope, value, out);
                    if let Some(object) = self.node_of(object) {
                        let attr = self.atom_of(module, *attr);
                        self.constrain(object, Constraint::AttrStore { attr, value }, out);
                    }
                }
                Effect::ElemStore {
                    container,
                    key,
                    value,
                } => {
                    let container = self.operand(module, scope, container, out);
                    let value = self.operand(module, scope, value, out);
                    let key = key.map(|k| self.atom_of(module, k));
                    if let Some(container) = self.node_of(container) {
                        self.constrain(container, Constraint::ElemStore { value, key }, out);
                    }
                }
                // A bare read matters only if it can call a property.
                Effect::Eval(value) => {
                    let reads_property = match value {
                        ValueExpr::Attr(_, attr) => {
                            self.classes.is_property_name(self.atom_of(module, *attr))
                        }
                        _ => true,
                    };
                    if reads_property {
                        self.operand(module, scope, value, out);
                    }
                }
            }
        }
        for (k, call) in facts.calls.iter().enumerate() {
            // `obj.m(...)`: the object is the method's receiver.
            let (callee, receiver) = match &call.callee {
                ValueExpr::Attr(base, attr) => {
                    let base = self.operand(module, call.scope, base, out);
                    match self.node_of(base) {
                        Some(base) => {
                            let attr = self.atom_of(module, *attr);
                            let dst = self.load_node(module, call.scope, base, attr, out);
                            (Operand::Node(dst), base)
                        }
                        None => (Operand::None, u32::MAX),
                    }
                }
                callee => (self.operand(module, call.scope, callee, out), u32::MAX),
            };
            // Gathered aside first: compiling an argument may add to the
            // graph, and the site's range must be contiguous.
            let mut args = std::mem::take(&mut self.arg_scratch);
            args.clear();
            for arg in &call.args {
                let slot = match &arg.kind {
                    ArgKind::Positional(p) => ArgSlot::Positional(*p),
                    ArgKind::Keyword(k) => ArgSlot::Keyword(self.atom_of(module, *k)),
                    ArgKind::Star => ArgSlot::Star,
                    ArgKind::DoubleStar => ArgSlot::DoubleStar,
                };
                args.push((slot, self.operand(module, call.scope, &arg.value, out)));
            }
            let args_range = self.push_args(&args);
            self.arg_scratch = args;
            let site = u32::try_from(self.sites.len()).unwrap_or(u32::MAX);
            let callee = self.node_of(callee).unwrap_or_else(|| self.engine.node());
            self.sites.push(Site {
                module,
                caller: self.caller(module, call.scope),
                receiver,
                result: self.call_node[module.index()] + k as u32,
                args: args_range,
                kind: call.kind,
                targets: Vec::new(),
                externals: Vec::new(),
                outside_inits: Vec::new(),
                local: k as u32,
            });
            self.constrain(callee, Constraint::Call { site }, out);
        }
        let mut bases = Vec::new();
        for (c, class) in facts.classes.iter().enumerate() {
            let id = self.class_id(module, c as u32);
            let mut nodes = Vec::new();
            for (text, value) in &class.bases {
                let op = self.operand(module, class.parent, value, out);
                let node = self.node_of(op).unwrap_or_else(|| self.engine.node());
                nodes.push((text.clone(), node));
            }
            bases.push((id, nodes));
        }
        self.classes.add_base_nodes(bases);
    }

    /// Appends a site's arguments to [`Analysis::site_args`].
    pub(super) fn push_args(&mut self, args: &[(ArgSlot, Operand)]) -> ArgRange {
        let start = u32::try_from(self.site_args.len()).unwrap_or(u32::MAX);
        self.site_args.extend_from_slice(args);
        ArgRange {
            start,
            len: u32::try_from(args.len()).unwrap_or(0),
        }
    }

    /// The arguments of call site `site`.
    pub(super) fn args_of(&self, site: u32) -> &[(ArgSlot, Operand)] {
        self.sites
            .get(site as usize)
            .and_then(|s| {
                let start = s.args.start as usize;
                self.site_args.get(start..start + s.args.len as usize)
            })
            .unwrap_or(&[])
    }

    /// The global atom of name id `name` of `module`.
    pub(super) fn atom_of(&self, module: ModuleId, name: u32) -> u32 {
        self.local_atoms
            .get(module.index())
            .and_then(|l| l.get(name as usize))
            .copied()
            .unwrap_or(u32::MAX)
    }

    /// The FCG node that runs code written in `scope`: the nearest
    /// function, else the module (class bodies and lambdas belong to what
    /// encloses them).
    pub(super) fn caller(&self, module: ModuleId, scope: ScopeRef) -> EntityId {
        let Some(facts) = self.facts(module) else {
            return EntityId::Module(module);
        };
        let mut current = Some(scope);
        let mut steps = 0usize;
        while let Some(s) = current {
            if let ScopeRef::Function(f) = s {
                return EntityId::Function(self.function_id(module, f));
            }
            steps += 1;
            if steps > facts.functions.len() + facts.classes.len() + facts.lambdas.len() + 1 {
                break;
            }
            current = facts.parent_scope(s);
        }
        EntityId::Module(module)
    }

    /// The transform of an attribute read through an instance of `class`
    /// by load `load`.
    pub(super) fn instance_read(&mut self, class: ClassId, load: u32) -> Transform {
        let read = u32::try_from(self.instance_reads.len()).unwrap_or(u32::MAX);
        self.instance_reads.push((class, load));
        Transform::FromInstance(read)
    }

    /// The operand for one object.
    pub(super) fn constant(&mut self, value: Obj) -> Operand {
        Operand::Const(self.engine.intern(value))
    }

    pub(super) fn node_of(&mut self, op: Operand) -> Option<u32> {
        match op {
            Operand::None => None,
            Operand::Node(n) => Some(n),
            Operand::Const(value) => {
                let node = self.engine.node();
                self.engine.add_id(node, value);
                Some(node)
            }
        }
    }

    pub(super) fn flow(&mut self, op: Operand, to: u32, out: &mut Vec<Delivery>) {
        match op {
            Operand::None => {}
            Operand::Node(n) => self.engine.edge(n, to, Transform::Copy, out),
            Operand::Const(value) => self.engine.add_id(to, value),
        }
    }

    pub(super) fn constrain(&mut self, node: u32, constraint: Constraint, out: &mut Vec<Delivery>) {
        let id = u32::try_from(self.constraints.len()).unwrap_or(u32::MAX);
        self.constraints.push(constraint);
        for value in self.engine.attach(node, id) {
            self.fire(id, value, out);
        }
    }

    pub(super) fn operand(
        &mut self,
        module: ModuleId,
        scope: ScopeRef,
        value: &ValueExpr,
        out: &mut Vec<Delivery>,
    ) -> Operand {
        match value {
            ValueExpr::Use(u) => self.use_operand(module, *u, out),
            ValueExpr::Attr(base, attr) => {
                let base = self.operand(module, scope, base, out);
                let Some(base) = self.node_of(base) else {
                    return Operand::None;
                };
                let attr = self.atom_of(module, *attr);
                Operand::Node(self.load_node(module, scope, base, attr, out))
            }
            ValueExpr::Call(k) => Operand::Node(self.call_node[module.index()] + k),
            ValueExpr::Elem(inner) => {
                self.derived(module, scope, inner, out, |dst| Constraint::Elem { dst })
            }
            ValueExpr::Container(container) => {
                let id = self.container_base[module.index()] + container.site;
                for (key, element) in &container.elements {
                    let op = self.operand(module, scope, element, out);
                    let key = key.map(|k| self.atom_of(module, k));
                    self.store_element(id, key, op, out);
                }
                self.constant(Obj::Container(id))
            }
            ValueExpr::ElemAt(inner, key) => {
                let key = self.atom_of(module, *key);
                self.derived(module, scope, inner, out, |dst| Constraint::ElemAt {
                    dst,
                    key,
                })
            }
            // Narrowed where the elements are known ([`super::keyed`]).
            ValueExpr::Slice(slice) => self.operand(module, scope, &slice.value, out),
            ValueExpr::Lambda(l) => {
                self.constant(Obj::Lambda(self.lambda_base[module.index()] + l))
            }
            ValueExpr::Function(f) => {
                let function = self.function_id(module, *f);
                self.constant(Obj::Function(function))
            }
            ValueExpr::Class(c) => {
                let class = self.class_id(module, *c);
                self.constant(Obj::Class(class))
            }
            ValueExpr::Instance(inner) => {
                let inner = self.operand(module, scope, inner, out);
                let Some(inner) = self.node_of(inner) else {
                    return Operand::None;
                };
                let dst = self.engine.node();
                self.engine.edge(inner, dst, Transform::Instantiate, out);
                Operand::Node(dst)
            }
            ValueExpr::Union(parts) => {
                let ops: Vec<Operand> = parts
                    .iter()
                    .map(|p| self.operand(module, scope, p, out))
                    .filter(|op| *op != Operand::None)
                    .collect();
                match ops.as_slice() {
                    [] => Operand::None,
                    [one] => *one,
                    _ => {
                        let node = self.engine.node();
                        for op in ops {
                            self.flow(op, node, out);
                        }
                        Operand::Node(node)
                    }
                }
            }
            ValueExpr::StrLiteral => match self.external("builtins.str") {
                Some(obj) => self.constant(obj),
                None => Operand::None,
            },
            ValueExpr::Super => {
                // The receiver is the method's first parameter.
                let Some((class, method)) = self.enclosing_method(module, scope) else {
                    return Operand::None;
                };
                let receiver = self
                    .function_params
                    .get(method.index())
                    .and_then(|p| p.slots.first())
                    .map(|s| s.node)
                    .filter(|n| *n != u32::MAX);
                let dst = self.engine.node();
                match receiver {
                    Some(node) => {
                        self.constrain(node, Constraint::SuperOf { class, dst }, out);
                    }
                    None => self.engine.add(dst, Obj::Super(class, class)),
                }
                Operand::Node(dst)
            }
            ValueExpr::Caught(inner) => {
                self.derived(module, scope, inner, out, |dst| Constraint::Caught { dst })
            }
            ValueExpr::SuperOf(pair) => {
                let (class, object) = &**pair;
                let class = self.operand(module, scope, class, out);
                let object = self.operand(module, scope, object, out);
                let (Some(class), Some(object)) = (self.node_of(class), self.node_of(object))
                else {
                    return Operand::None;
                };
                let dst = self.engine.node();
                self.constrain(object, Constraint::SuperExplicit { class, dst }, out);
                Operand::Node(dst)
            }
            ValueExpr::Ref(b) => Operand::Node(self.binding_node[module.index()] + b),
            ValueExpr::Unknown => Operand::None,
        }
    }

    /// A node for a value derived from `inner` by a constraint on it.
    pub(super) fn derived(
        &mut self,
        module: ModuleId,
        scope: ScopeRef,
        inner: &ValueExpr,
        out: &mut Vec<Delivery>,
        constraint: impl FnOnce(u32) -> Constraint,
    ) -> Operand {
        let inner = self.operand(module, scope, inner, out);
        let Some(inner) = self.node_of(inner) else {
            return Operand::None;
        };
        let dst = self.engine.node();
        self.constrain(inner, constraint(dst), out);
        Operand::Node(dst)
    }

    /// A node for `base.attr`, read by the code in `scope`.
    pub(super) fn load_node(
        &mut self,
        module: ModuleId,
        scope: ScopeRef,
        base: u32,
        attr: u32,
        out: &mut Vec<Delivery>,
    ) -> u32 {
        let dst = self.engine.node();
        let load = u32::try_from(self.loads.len()).unwrap_or(u32::MAX);
        self.loads.push(Load {
            module,
            caller: self.caller(module, scope),
        });
        self.constrain(base, Constraint::Load { dst, attr, load }, out);
        dst
    }

    pub(super) fn use_operand(
        &mut self,
        module: ModuleId,
        index: u32,
        out: &mut Vec<Delivery>,
    ) -> Operand {
        let Some(facts) = self.facts(module) else {
            return Operand::None;
        };
        let Some(read) = facts.uses.get(index as usize) else {
            return Operand::None;
        };
        let atom = self.atom_of(module, read.name);
        match &read.reach {
            Reach::One(b) => Operand::Node(self.binding_node[module.index()] + b),
            Reach::Local(bindings) => match bindings.as_slice() {
                [] => Operand::None,
                [one] => Operand::Node(self.binding_node[module.index()] + one),
                many => {
                    let node = self.engine.node();
                    for b in many {
                        let from = self.binding_node[module.index()] + b;
                        self.engine.edge(from, node, Transform::Copy, out);
                    }
                    Operand::Node(node)
                }
            },
            Reach::AllLocal => Operand::Node(self.name_all(module, read.scope, atom, out)),
            Reach::Enclosing => self.lookup_enclosing(module, read.scope, atom, out),
        }
    }

    /// A name not bound in its own scope: enclosing functions (not class
    /// bodies), the module, its star imports, the builtins.
    pub(super) fn lookup_enclosing(
        &mut self,
        module: ModuleId,
        scope: ScopeRef,
        atom: u32,
        out: &mut Vec<Delivery>,
    ) -> Operand {
        let Some(facts) = self.facts(module) else {
            return Operand::None;
        };
        let mut current = facts.parent_scope(scope);
        let mut steps = 0usize;
        while let Some(s) = current {
            steps += 1;
            if steps > facts.functions.len() + facts.classes.len() + facts.lambdas.len() + 2 {
                break;
            }
            if !matches!(s, ScopeRef::Class(_))
                && self.names[module.index()].contains_key(&(s, atom))
            {
                return Operand::Node(self.name_all(module, s, atom, out));
            }
            current = facts.parent_scope(s);
        }
        if scope != ScopeRef::Module
            && self.names[module.index()].contains_key(&(ScopeRef::Module, atom))
        {
            return Operand::Node(self.name_all(module, ScopeRef::Module, atom, out));
        }
        let name = self.atoms.text(atom).to_string();
        if !self.star_imports[module.index()].is_empty() && !name.starts_with('_') {
            return Operand::Node(self.module_attr(module, atom, out));
        }
        if is_builtin(&name) {
            return match self.external(&format!("builtins.{name}")) {
                Some(obj) => self.constant(obj),
                None => Operand::None,
            };
        }
        Operand::None
    }

    /// One node for every binding of `atom` in `scope` of `module`.
    pub(super) fn name_all(
        &mut self,
        module: ModuleId,
        scope: ScopeRef,
        atom: u32,
        out: &mut Vec<Delivery>,
    ) -> u32 {
        if let Some(node) = self.name_all.get(&(module, scope, atom)) {
            return *node;
        }
        let node = self.engine.node();
        self.name_all.insert((module, scope, atom), node);
        let bindings = self.names[module.index()]
            .get(&(scope, atom))
            .map(<[u32]>::to_vec)
            .unwrap_or_default();
        for b in bindings {
            let from = self.binding_node[module.index()] + b;
            self.engine.edge(from, node, Transform::Copy, out);
        }
        node
    }

    /// The attribute `atom` of module `module`: its global binding, else a
    /// submodule, else what its star imports provide (followed with an
    /// explicit stack, so import cycles and long chains are fine).
    pub(super) fn module_attr(
        &mut self,
        module: ModuleId,
        atom: u32,
        out: &mut Vec<Delivery>,
    ) -> u32 {
        if let Some(node) = self.module_attrs.get(&(module, atom)) {
            return *node;
        }
        let first = self.engine.node();
        self.module_attrs.insert((module, atom), first);
        let mut pending = vec![(module, first)];
        while let Some((m, node)) = pending.pop() {
            self.engine.work += 1;
            let name = self.atoms.text(atom).to_string();
            // A submodule is an attribute once imported (`from . import sub`
            // in a package binds it too, to itself).
            let sub = self.ids.inputs.get(m.index()).and_then(|input| {
                self.module_named(&format!("{}.{name}", input.name.name))
                    .or_else(|| {
                        let alias = input.name.alias.as_deref()?;
                        self.module_named(&format!("{alias}.{name}"))
                    })
            });
            if let Some(sub) = sub {
                self.engine.add(node, Obj::Module(sub));
            }
            if self.names[m.index()].contains_key(&(ScopeRef::Module, atom)) {
                let all = self.name_all(m, ScopeRef::Module, atom, out);
                self.engine.edge(all, node, Transform::Copy, out);
                continue;
            }
            if sub.is_some() {
                continue;
            }
            if name.starts_with('_') {
                continue;
            }
            let stars = self.star_imports[m.index()].clone();
            for (target, all) in stars {
                if let Some(all) = all
                    && !all.contains(&name)
                {
                    continue;
                }
                let target_node = match self.module_attrs.get(&(target, atom)) {
                    Some(n) => *n,
                    None => {
                        let n = self.engine.node();
                        self.module_attrs.insert((target, atom), n);
                        pending.push((target, n));
                        n
                    }
                };
                self.engine.edge(target_node, node, Transform::Copy, out);
            }
        }
        first
    }

    pub(super) fn import_operand(
        &mut self,
        module: ModuleId,
        index: u32,
        out: &mut Vec<Delivery>,
    ) -> Operand {
        let Some(import) = self
            .facts(module)
            .and_then(|f| f.imports.get(index as usize))
        else {
            return Operand::None;
        };
        match import.kind {
            ImportKind::Import => {
                let full = self.import_base(module, 0, &import.module);
                // `import a.b` binds `a`; `import a.b as c` binds `a.b`.
                let bound = if import.alias.is_some() {
                    full
                } else {
                    let extra = import.module.matches('.').count();
                    let mut bound = full.as_str();
                    for _ in 0..extra {
                        bound = bound.rsplit_once('.').map_or(bound, |(p, _)| p);
                    }
                    bound.to_string()
                };
                match self.module_named(&bound) {
                    Some(m) => self.constant(Obj::Module(m)),
                    None => match self.external(&bound) {
                        Some(obj) => self.constant(obj),
                        None => Operand::None,
                    },
                }
            }
            ImportKind::From => {
                let base = self.import_base(module, import.level, &import.module);
                let name = import.name.as_deref().unwrap_or("");
                match self.module_named(&base) {
                    Some(target) => {
                        let atom = self.atoms.id(name);
                        Operand::Node(self.module_attr(target, atom, out))
                    }
                    None => match self.module_named(&format!("{base}.{name}")) {
                        Some(m) => self.constant(Obj::Module(m)),
                        None => match self.external(&format!("{base}.{name}")) {
                            Some(obj) => self.constant(obj),
                            None => Operand::None,
                        },
                    },
                }
            }
            ImportKind::Star => Operand::None,
        }
    }

    // ----- classes: attributes, owners, MROs -----
}

impl<'f> Analysis<'f> {
    pub(super) fn module_name(&self, module: ModuleId) -> &str {
        self.ids
            .inputs
            .get(module.index())
            .map_or("", |m| m.name.name.as_str())
    }

    pub(super) fn module_count(&self) -> usize {
        self.ids.inputs.len()
    }

    pub(super) fn externals_text(&self, name: u32) -> String {
        self.externals.text(name).to_string()
    }

    pub(super) fn binding_values(&self, module: ModuleId, binding: u32) -> Vec<Obj> {
        let node = self.binding_node.get(module.index()).copied().unwrap_or(0) + binding;
        self.engine.values(node).collect()
    }

    /// Every value any binding of `name` visible from `scope` holds.
    pub(super) fn name_values(
        &mut self,
        module: ModuleId,
        scope: ScopeRef,
        name: &str,
    ) -> Vec<Obj> {
        let Some(facts) = self.facts(module) else {
            return Vec::new();
        };
        let atom = self.atoms.id(name);
        let mut current = Some(scope);
        let mut first = true;
        let mut steps = 0usize;
        while let Some(s) = current {
            steps += 1;
            if steps > facts.functions.len() + facts.classes.len() + facts.lambdas.len() + 2 {
                break;
            }
            let skip = matches!(s, ScopeRef::Class(_)) && !first;
            if !skip && let Some(bindings) = self.names[module.index()].get(&(s, atom)) {
                let mut values = Vec::new();
                for b in bindings.iter().copied() {
                    values.extend(self.binding_values(module, b));
                }
                return values;
            }
            first = false;
            current = facts.parent_scope(s);
        }
        if let Some(node) = self.module_attrs.get(&(module, atom)) {
            return self.engine.values(*node).collect();
        }
        if is_builtin(name) {
            return self
                .external(&format!("builtins.{name}"))
                .into_iter()
                .collect();
        }
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::Interner;

    #[test]
    fn interned_texts_keep_their_ids_and_read_back() {
        let mut atoms = Interner::default();
        let texts = ["", "self", "__init__", "a", "self", "ä€", "a"];
        let ids: Vec<u32> = texts.iter().map(|t| atoms.id(t)).collect();
        assert_eq!(ids, [0, 1, 2, 3, 1, 4, 3]);
        for (text, id) in texts.iter().zip(&ids) {
            assert_eq!(atoms.text(*id), *text);
            assert_eq!(atoms.get(text), Some(*id));
        }
        assert_eq!(atoms.get("missing"), None);
        assert_eq!(atoms.text(99), "");
    }

    #[test]
    fn texts_whose_hashes_collide_stay_apart() {
        let mut atoms = Interner::default();
        let first = atoms.id_hashed("first", 7);
        let second = atoms.id_hashed("second", 7);
        let third = atoms.id_hashed("third", 7);
        assert_eq!((first, second, third), (0, 1, 2));
        assert_eq!(atoms.id_hashed("second", 7), 1);
        assert_eq!(atoms.id_hashed("first", 7), 0);
        assert_eq!(atoms.get_hashed("third", 7), Some(2));
        assert_eq!(atoms.get_hashed("fourth", 7), None);
        assert_eq!(atoms.text(second), "second");
    }
}
