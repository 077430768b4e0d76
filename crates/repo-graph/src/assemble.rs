//! Resolution across files: from per-file facts to one [`RepoGraph`].
//!
//! This is the second phase of the analysis. It reads the facts of every
//! module (never the syntax trees, which are gone by now), assigns global
//! ids, builds one symbol table per scope, and evaluates every import, base
//! class and call site to an internal definition or an external name. This
//! file resolves Python ([`FileFacts`]); [`crate::lang::java::resolve`] resolves
//! Java by declared types; both feed the same assembly of entities, the FCG
//! and the MDG. Call resolution is per module and runs in parallel over
//! shared, read-only tables. Every evaluation carries a depth budget, so
//! cyclic re-exports or self-referential aliases end as "unknown" instead of
//! looping.

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;
use std::time::Duration;

use petgraph::graph::{DiGraph, NodeIndex};
use rayon::prelude::*;

use crate::facts::Facts;
use crate::graph::{Coupling, RepoGraph};
use crate::lang::java::resolve::JavaResolver;
use crate::lang::python::{Expr, FileFacts, LocalValue, RouteFacts, ScopeRef, UrlView};
use crate::model::{
    Base, Class, ClassId, Complexity, EntityId, Function, FunctionId, FunctionKind, Import,
    ImportKind, ImportTarget, Language, Module, ModuleId, Skipped, SourceKind, UnresolvedCall,
};
use crate::names::ModuleName;
use crate::routes::{
    Framework, HandlerDraft, HttpMethod, RouteDraft, RouteLink, RouteScope, RouterKey,
};

/// Evaluation steps allowed for one expression before giving up.
const MAX_DEPTH: u32 = 24;

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

/// What Python resolution sees of a Java module: nothing.
static NO_PYTHON_FACTS: FileFacts = FileFacts {
    docstring: None,
    line_count: 0,
    has_syntax_errors: false,
    complexity: Complexity {
        branches: 0,
        max_def_depth: 0,
    },
    all: None,
    classes: Vec::new(),
    functions: Vec::new(),
    imports: Vec::new(),
    bindings: Vec::new(),
    calls: Vec::new(),
    routes: Vec::new(),
};

/// What a name or expression evaluates to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Module(ModuleId),
    Class(ClassId),
    Instance(ClassId),
    Function(FunctionId),
    /// `super()` inside a method of this class.
    Super(ClassId),
    /// A module-level name of an internal module that is not a definition.
    Variable(ModuleId),
    External(String),
    Unknown,
}

/// Symbol tables of one module: (scope, name) → bindings in source order.
struct ModuleTables<'f> {
    scopes: HashMap<(ScopeRef, &'f str), Vec<&'f LocalValue>>,
}

struct ClassTable<'f> {
    methods: HashMap<&'f str, FunctionId>,
    nested: HashMap<&'f str, ClassId>,
    attrs: HashMap<&'f str, (&'f LocalValue, ScopeRef)>,
}

struct Resolver<'f> {
    inputs: &'f [ModuleInput],
    class_base: Vec<u32>,
    function_base: Vec<u32>,
    /// Owning module of each class and function id.
    class_module: Vec<ModuleId>,
    function_module: Vec<ModuleId>,
    module_by_name: HashMap<&'f str, ModuleId>,
    tables: Vec<ModuleTables<'f>>,
    class_tables: Vec<ClassTable<'f>>,
    mro: Vec<Vec<ClassId>>,
}

pub(crate) struct BuildInput {
    pub root: std::path::PathBuf,
    pub modules: Vec<ModuleInput>,
    pub skipped: Vec<Skipped>,
    pub files_seen: u64,
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
    // Python imports never reach Java compilation units.
    let python = |module: &ModuleInput| module.facts.python().is_some();
    let mut module_by_name: HashMap<&str, ModuleId> =
        HashMap::with_capacity_and_hasher(inputs.len() * 2, Default::default());
    for (m, module) in inputs.iter().enumerate().filter(|(_, m)| python(m)) {
        module_by_name.insert(&module.name.name, ModuleId(m as u32));
    }
    for (m, module) in inputs.iter().enumerate().filter(|(_, m)| python(m)) {
        if let Some(alias) = &module.name.alias {
            module_by_name.entry(alias).or_insert(ModuleId(m as u32));
        }
    }
    let tables: Vec<ModuleTables> = inputs
        .par_iter()
        .map(|module| {
            let facts = module.facts.python().unwrap_or(&NO_PYTHON_FACTS);
            let mut scopes: HashMap<(ScopeRef, &str), Vec<&LocalValue>> =
                HashMap::with_capacity_and_hasher(facts.bindings.len(), Default::default());
            for binding in &facts.bindings {
                scopes
                    .entry((binding.scope, binding.name.as_str()))
                    .or_default()
                    .push(&binding.value);
            }
            ModuleTables { scopes }
        })
        .collect();
    let class_tables: Vec<ClassTable> = inputs
        .par_iter()
        .enumerate()
        .flat_map_iter(|(m, module)| {
            let Some(facts) = module.facts.python() else {
                // Java types keep their ids; their members live in the Java resolver.
                return (0..module.facts.class_count())
                    .map(|_| ClassTable {
                        methods: HashMap::default(),
                        nested: HashMap::default(),
                        attrs: HashMap::default(),
                    })
                    .collect();
            };
            let (cb, fb) = (class_base[m], function_base[m]);
            let mut tables: Vec<ClassTable> = facts
                .classes
                .iter()
                .map(|class| ClassTable {
                    methods: HashMap::default(),
                    nested: HashMap::default(),
                    attrs: class
                        .attrs
                        .iter()
                        .map(|(name, value, scope)| (name.as_str(), (value, *scope)))
                        .collect(),
                })
                .collect();
            for (i, function) in facts.functions.iter().enumerate() {
                if let ScopeRef::Class(c) = function.parent
                    && let Some(table) = tables.get_mut(c as usize)
                {
                    table
                        .methods
                        .insert(&function.name, FunctionId(fb + i as u32));
                }
            }
            for (i, class) in facts.classes.iter().enumerate() {
                if let ScopeRef::Class(c) = class.parent
                    && let Some(table) = tables.get_mut(c as usize)
                {
                    table.nested.insert(&class.name, ClassId(cb + i as u32));
                }
            }
            tables
        })
        .collect();
    let mut resolver = Resolver {
        inputs,
        class_base,
        function_base,
        class_module,
        function_module,
        module_by_name,
        tables,
        class_tables,
        mro: Vec::new(),
    };

    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "symbol tables built"
    );
    // Base classes first: the MRO is needed to resolve methods.
    let mut bases: Vec<Vec<Base>> = (0..resolver.class_module.len())
        .into_par_iter()
        .map(|c| resolver.class_bases(ClassId(c as u32)))
        .collect();
    let java = JavaResolver::new(
        inputs,
        &resolver.class_base,
        &resolver.function_base,
        &resolver.class_module,
        &resolver.function_module,
    );
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "java tables and supertypes built"
    );
    for (c, java_bases) in java.bases.iter().enumerate() {
        if java.is_java_class(ClassId(c as u32)) {
            bases[c] = java_bases.clone();
        }
    }
    let mro: Vec<Vec<ClassId>> = (0..bases.len())
        .map(|c| {
            let class = ClassId(c as u32);
            if java.is_java_class(class) {
                java.mro[c].clone()
            } else {
                linearize(class, &bases)
            }
        })
        .collect();
    resolver.mro = mro;

    let per_module: Vec<ModuleOutput> = (0..inputs.len())
        .into_par_iter()
        .map(|m| match inputs[m].facts.language() {
            Language::Python => resolver.resolve_module(ModuleId(m as u32)),
            Language::Java => java.resolve_module(ModuleId(m as u32)),
        })
        .collect();

    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "calls resolved"
    );
    assemble(
        input.root.clone(),
        &resolver,
        &java,
        bases,
        per_module,
        &input,
        started,
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
}

impl<'f> Resolver<'f> {
    fn facts(&self, module: ModuleId) -> &'f FileFacts {
        self.inputs[module.index()]
            .facts
            .python()
            .unwrap_or(&NO_PYTHON_FACTS)
    }

    fn class_id(&self, module: ModuleId, local: u32) -> ClassId {
        ClassId(self.class_base[module.index()] + local)
    }

    fn function_id(&self, module: ModuleId, local: u32) -> FunctionId {
        FunctionId(self.function_base[module.index()] + local)
    }

    fn local_class(
        &self,
        class: ClassId,
    ) -> Option<(ModuleId, &'f crate::lang::python::ClassFacts)> {
        let module = *self.class_module.get(class.index())?;
        let local = class.0 - self.class_base[module.index()];
        Some((module, self.facts(module).classes.get(local as usize)?))
    }

    fn local_function(
        &self,
        function: FunctionId,
    ) -> Option<(ModuleId, &'f crate::lang::python::FunctionFacts)> {
        let module = *self.function_module.get(function.index())?;
        let local = function.0 - self.function_base[module.index()];
        Some((module, self.facts(module).functions.get(local as usize)?))
    }

    fn parent_scope(&self, module: ModuleId, scope: ScopeRef) -> Option<ScopeRef> {
        let facts = self.facts(module);
        match scope {
            ScopeRef::Module => None,
            ScopeRef::Class(c) => facts.classes.get(c as usize).map(|c| c.parent),
            ScopeRef::Function(f) => facts.functions.get(f as usize).map(|f| f.parent),
        }
    }

    /// The package a relative import of `module` starts from.
    fn relative_base(&self, module: ModuleId, level: u32, written: &str) -> String {
        let input = &self.inputs[module.index()];
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

    fn module_named(&self, name: &str) -> Option<ModuleId> {
        self.module_by_name.get(name).copied()
    }

    /// An absolute import as Python would find it: by its full name, else
    /// (for scripts run from their directory, and Python 2 style implicit
    /// relative imports) as a sibling of the importing module.
    fn import_base(&self, module: ModuleId, level: u32, written: &str) -> String {
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

    /// Looks `name` up from `scope`, walking enclosing function scopes (class
    /// bodies are skipped except when they are the starting scope) and then
    /// the module and the builtins.
    fn lookup(&self, module: ModuleId, scope: ScopeRef, name: &str, depth: u32) -> Value {
        if depth > MAX_DEPTH {
            return Value::Unknown;
        }
        let mut current = Some(scope);
        let mut first = true;
        while let Some(s) = current {
            let skip_class = matches!(s, ScopeRef::Class(_)) && !first;
            if !skip_class && let Some(values) = self.tables[module.index()].scopes.get(&(s, name))
            {
                return self.first_known(module, s, values, depth);
            }
            first = false;
            current = self.parent_scope(module, s);
        }
        if let Some(value) = self.star_lookup(module, name, depth) {
            return value;
        }
        if is_builtin(name) {
            Value::External(format!("builtins.{name}"))
        } else {
            Value::Unknown
        }
    }

    /// The last binding that evaluates to something known; rebinding through
    /// `try/except ImportError` fallbacks is common, so one unknown binding
    /// does not hide a known one.
    fn first_known(
        &self,
        module: ModuleId,
        scope: ScopeRef,
        values: &[&LocalValue],
        depth: u32,
    ) -> Value {
        let mut fallback = None;
        for value in values.iter().rev() {
            match self.binding_value(module, scope, value, depth + 1) {
                Value::Unknown => {}
                external @ Value::External(_) => {
                    fallback.get_or_insert(external);
                }
                known => return known,
            }
        }
        fallback.unwrap_or(if scope == ScopeRef::Module {
            Value::Variable(module)
        } else {
            Value::Unknown
        })
    }

    fn binding_value(
        &self,
        module: ModuleId,
        scope: ScopeRef,
        value: &LocalValue,
        depth: u32,
    ) -> Value {
        if depth > MAX_DEPTH {
            return Value::Unknown;
        }
        match value {
            LocalValue::Function(f) => Value::Function(self.function_id(module, *f)),
            LocalValue::Class(c) => Value::Class(self.class_id(module, *c)),
            LocalValue::Import(i) => self.import_value(module, *i, depth + 1),
            LocalValue::CallResult(callee) => {
                let callee = self.eval(module, scope, callee, depth + 1);
                self.call_result(callee, depth + 1)
            }
            LocalValue::Alias(expr) => self.eval(module, scope, expr, depth + 1),
            LocalValue::Instance(expr) => match self.eval(module, scope, expr, depth + 1) {
                Value::Class(c) => Value::Instance(c),
                Value::External(name) => Value::External(name),
                _ => Value::Unknown,
            },
            LocalValue::SelfParam | LocalValue::ClsParam => {
                let class = match scope {
                    ScopeRef::Function(f) => {
                        self.facts(module)
                            .functions
                            .get(f as usize)
                            .and_then(|f| match f.parent {
                                ScopeRef::Class(c) => Some(self.class_id(module, c)),
                                _ => None,
                            })
                    }
                    _ => None,
                };
                match (class, value) {
                    (Some(c), LocalValue::SelfParam) => Value::Instance(c),
                    (Some(c), _) => Value::Class(c),
                    (None, _) => Value::Unknown,
                }
            }
            LocalValue::Param(_) | LocalValue::Opaque => Value::Unknown,
        }
    }

    fn import_value(&self, module: ModuleId, index: u32, depth: u32) -> Value {
        let Some(import) = self.facts(module).imports.get(index as usize) else {
            return Value::Unknown;
        };
        match import.kind {
            ImportKind::Import => {
                // `import a.b` binds `a`; `import a.b as c` binds `a.b`.
                let full = self.import_base(module, 0, &import.module);
                // With `import a.b`, the name `a` is bound; with an alias, `a.b` itself.
                let bound = if import.alias.is_some() {
                    full.clone()
                } else {
                    let extra = import.module.matches('.').count();
                    let mut bound = full.as_str();
                    for _ in 0..extra {
                        bound = bound.rsplit_once('.').map_or(bound, |(p, _)| p);
                    }
                    bound.to_string()
                };
                match self.module_named(&bound) {
                    Some(m) => Value::Module(m),
                    None => Value::External(bound),
                }
            }
            ImportKind::From => {
                let base = self.import_base(module, import.level, &import.module);
                let name = import.name.as_deref().unwrap_or("");
                self.imported_name(&base, name, depth + 1)
            }
            ImportKind::Star => Value::Unknown,
        }
    }

    fn imported_name(&self, base: &str, name: &str, depth: u32) -> Value {
        match self.module_named(base) {
            Some(m) => match self.module_attr(m, name, depth + 1) {
                Value::Unknown => Value::Variable(m),
                value => value,
            },
            None => match self.module_named(&format!("{base}.{name}")) {
                Some(m) => Value::Module(m),
                None => Value::External(format!("{base}.{name}")),
            },
        }
    }

    fn module_attr(&self, module: ModuleId, name: &str, depth: u32) -> Value {
        if depth > MAX_DEPTH {
            return Value::Unknown;
        }
        let submodule = || {
            let input = &self.inputs[module.index()];
            self.module_named(&format!("{}.{name}", input.name.name))
                .or_else(|| {
                    let alias = input.name.alias.as_deref()?;
                    self.module_named(&format!("{alias}.{name}"))
                })
        };
        if let Some(values) = self.tables[module.index()]
            .scopes
            .get(&(ScopeRef::Module, name))
        {
            match self.first_known(module, ScopeRef::Module, values, depth + 1) {
                Value::Variable(_) | Value::Unknown => {
                    if let Some(sub) = submodule() {
                        return Value::Module(sub);
                    }
                    return Value::Variable(module);
                }
                value => return value,
            }
        }
        if let Some(sub) = submodule() {
            return Value::Module(sub);
        }
        self.star_lookup(module, name, depth + 1)
            .unwrap_or(Value::Unknown)
    }

    /// A name provided by `from m import *` at module level.
    fn star_lookup(&self, module: ModuleId, name: &str, depth: u32) -> Option<Value> {
        if depth > MAX_DEPTH || name.starts_with('_') {
            return None;
        }
        for import in &self.facts(module).imports {
            if import.kind != ImportKind::Star || import.scope != ScopeRef::Module {
                continue;
            }
            let base = self.import_base(module, import.level, &import.module);
            let Some(target) = self.module_named(&base) else {
                continue;
            };
            if target == module {
                continue;
            }
            if let Some(all) = &self.facts(target).all
                && !all.iter().any(|n| n == name)
            {
                continue;
            }
            match self.module_attr(target, name, depth + 1) {
                Value::Unknown => {}
                value => return Some(value),
            }
        }
        None
    }

    fn class_attr(&self, class: ClassId, name: &str, skip_first: bool, depth: u32) -> Value {
        if depth > MAX_DEPTH {
            return Value::Unknown;
        }
        let mro = self.mro.get(class.index()).map_or(&[][..], Vec::as_slice);
        for &k in mro.iter().skip(usize::from(skip_first)) {
            let Some(table) = self.class_tables.get(k.index()) else {
                continue;
            };
            if let Some(f) = table.methods.get(name) {
                return Value::Function(*f);
            }
            if let Some(c) = table.nested.get(name) {
                return Value::Class(*c);
            }
            let module = self.class_module[k.index()];
            if let Some((value, scope)) = table.attrs.get(name) {
                return self.binding_value(module, *scope, value, depth + 1);
            }
            // Names bound in the class body itself, e.g. `engine: Engine`.
            let body = ScopeRef::Class(k.0 - self.class_base[module.index()]);
            if let Some(values) = self.tables[module.index()].scopes.get(&(body, name)) {
                return self.first_known(module, body, values, depth + 1);
            }
        }
        Value::Unknown
    }

    fn eval(&self, module: ModuleId, scope: ScopeRef, expr: &Expr, depth: u32) -> Value {
        if depth > MAX_DEPTH {
            return Value::Unknown;
        }
        match expr {
            Expr::Name(name) => self.lookup(module, scope, name, depth + 1),
            Expr::Attr(base, attr) => match self.eval(module, scope, base, depth + 1) {
                Value::Module(m) => self.module_attr(m, attr, depth + 1),
                Value::Class(c) | Value::Instance(c) => self.class_attr(c, attr, false, depth + 1),
                Value::Super(c) => self.class_attr(c, attr, true, depth + 1),
                Value::External(name) => Value::External(format!("{name}.{attr}")),
                Value::Function(_) | Value::Variable(_) | Value::Unknown => Value::Unknown,
            },
            Expr::Call(callee) => {
                let callee = self.eval(module, scope, callee, depth + 1);
                self.call_result(callee, depth + 1)
            }
            Expr::Super => self
                .enclosing_class(module, scope)
                .map_or(Value::Unknown, Value::Super),
            Expr::Other(_) => Value::Unknown,
        }
    }

    fn enclosing_class(&self, module: ModuleId, scope: ScopeRef) -> Option<ClassId> {
        let mut current = Some(scope);
        while let Some(s) = current {
            if let ScopeRef::Function(f) = s
                && let Some(ScopeRef::Class(c)) = self
                    .facts(module)
                    .functions
                    .get(f as usize)
                    .map(|f| f.parent)
            {
                return Some(self.class_id(module, c));
            }
            current = self.parent_scope(module, s);
        }
        None
    }

    /// What calling `callee` returns, as far as annotations and constructors tell.
    fn call_result(&self, callee: Value, depth: u32) -> Value {
        match callee {
            Value::Class(c) => Value::Instance(c),
            Value::Function(f) => {
                let Some((module, function)) = self.local_function(f) else {
                    return Value::Unknown;
                };
                match &function.returns_expr {
                    Some(expr) => match self.eval(module, function.parent, expr, depth + 1) {
                        Value::Class(c) => Value::Instance(c),
                        _ => Value::Unknown,
                    },
                    None => Value::Unknown,
                }
            }
            Value::External(name) => Value::External(format!("{name}()")),
            _ => Value::Unknown,
        }
    }

    /// The FCG node a call to `value` lands on.
    fn call_target(&self, value: &Value) -> Option<EntityId> {
        match value {
            Value::Function(f) => Some(EntityId::Function(*f)),
            Value::Class(c) => match self.class_attr(*c, "__init__", false, 0) {
                Value::Function(init) => Some(EntityId::Function(init)),
                _ => Some(EntityId::Class(*c)),
            },
            Value::Instance(c) => match self.class_attr(*c, "__call__", false, 0) {
                Value::Function(call) => Some(EntityId::Function(call)),
                _ => None,
            },
            _ => None,
        }
    }

    fn class_bases(&self, class: ClassId) -> Vec<Base> {
        let Some((module, facts)) = self.local_class(class) else {
            return Vec::new();
        };
        facts
            .bases
            .iter()
            .map(|(text, expr)| Base {
                relation: crate::model::BaseRelation::Inherits,
                text: text.clone(),
                resolved: match self.eval(module, facts.parent, expr, 0) {
                    Value::Class(c) if c != class => Some(c),
                    _ => None,
                },
            })
            .collect()
    }

    /// The FCG node that runs code written in `scope`: the nearest function,
    /// else the module (class bodies run at import time).
    fn caller_node(&self, module: ModuleId, scope: ScopeRef) -> EntityId {
        let mut current = Some(scope);
        while let Some(s) = current {
            if let ScopeRef::Function(f) = s {
                return EntityId::Function(self.function_id(module, f));
            }
            current = self.parent_scope(module, s);
        }
        EntityId::Module(module)
    }

    fn resolve_module(&self, module: ModuleId) -> ModuleOutput {
        let facts = self.facts(module);
        let imports = facts
            .imports
            .iter()
            .enumerate()
            .map(|(i, import)| Import {
                kind: import.kind,
                module: import.module.clone(),
                level: import.level,
                name: import.name.clone(),
                alias: import.alias.clone(),
                line: import.line,
                in_function: matches!(import.scope, ScopeRef::Function(_))
                    || self.enclosing_function(module, import.scope),
                in_try: import.in_try,
                target: self.import_target(module, i as u32),
                is_static: false,
            })
            .collect();
        let mut edges = Vec::with_capacity(facts.calls.len());
        let mut unresolved = Vec::new();
        for call in &facts.calls {
            let caller = self.caller_node(module, call.scope);
            let value = self.eval(module, call.scope, &call.callee, 0);
            match self.call_target(&value) {
                Some(target) => {
                    edges.push((caller, target));
                    if let EntityId::Function(f) = target {
                        self.passed_functions(module, call, f, &mut edges);
                    }
                }
                None => unresolved.push(UnresolvedCall {
                    caller,
                    callee: match &value {
                        Value::External(name) => name.clone(),
                        _ => call.callee.render(),
                    },
                    external: matches!(value, Value::External(_)),
                    line: call.line,
                }),
            }
        }
        let mut routes = Vec::new();
        let mut route_links = Vec::new();
        self.routes(module, &mut routes, &mut route_links);
        ModuleOutput {
            imports,
            edges,
            unresolved,
            references: Vec::new(),
            routes,
            route_links,
            work: 0,
        }
    }

    /// Flask and FastAPI routes from decorators, the routers they hang on
    /// and their registrations, and Django `urlpatterns`.
    fn routes(&self, module: ModuleId, drafts: &mut Vec<RouteDraft>, links: &mut Vec<RouteLink>) {
        let facts = self.facts(module);
        if facts.routes.is_empty() {
            return;
        }
        let imported = facts
            .imports
            .iter()
            .find_map(|i| web_framework(&i.module).or_else(|| web_framework(i.name.as_deref()?)));
        for route in &facts.routes {
            match route {
                RouteFacts::Router {
                    name,
                    constructor,
                    prefix,
                } => {
                    if let Some(framework) = constructor_framework(constructor) {
                        links.push(RouteLink::Router {
                            key: (module, name.clone()),
                            framework,
                            prefix: prefix.clone().unwrap_or_default(),
                        });
                    }
                }
                RouteFacts::Mount {
                    scope,
                    receiver,
                    router,
                    prefix,
                } => {
                    if let Some(child) = self.router_key(module, *scope, router, 0) {
                        links.push(RouteLink::Mount {
                            parent: self.router_key(module, *scope, receiver, 0),
                            child,
                            prefix: prefix.clone(),
                        });
                    }
                }
                RouteFacts::Decorator {
                    function,
                    receiver,
                    verb,
                    path,
                    methods,
                    line,
                } => {
                    let scope = facts
                        .functions
                        .get(*function as usize)
                        .map_or(ScopeRef::Module, |f| f.parent);
                    let key = self.router_key(module, scope, receiver, 0);
                    let framework = key
                        .as_ref()
                        .and_then(|k| self.router_framework(k))
                        .or_else(|| match self.eval(module, scope, receiver, 0) {
                            Value::External(name) => web_framework(&name),
                            _ => None,
                        })
                        .or(imported);
                    let Some(framework) = framework else {
                        continue;
                    };
                    let verbs: Vec<HttpMethod> = match verb.as_str() {
                        "route" | "api_route" if methods.is_empty() => vec![HttpMethod::Get],
                        "route" | "api_route" => methods
                            .iter()
                            .filter_map(|m| HttpMethod::from_verb(m))
                            .collect(),
                        other => HttpMethod::from_verb(other).into_iter().collect(),
                    };
                    let handler = HandlerDraft::Entity(EntityId::Function(
                        self.function_id(module, *function),
                    ));
                    for method in verbs {
                        drafts.push(RouteDraft {
                            method,
                            path: path.clone(),
                            framework,
                            handler: handler.clone(),
                            line: *line,
                            scope: key.clone().map_or(RouteScope::Complete, RouteScope::Router),
                        });
                    }
                }
                RouteFacts::UrlPattern {
                    route,
                    regex,
                    view,
                    line,
                } => {
                    let path = if *regex {
                        route.trim_start_matches('^').trim_end_matches('$')
                    } else {
                        route.as_str()
                    };
                    let included = match view {
                        UrlView::Include(name) => self.module_named(name),
                        UrlView::IncludeModule(expr) => {
                            match self.eval(module, ScopeRef::Module, expr, 0) {
                                Value::Module(m) => Some(m),
                                _ => None,
                            }
                        }
                        UrlView::View(_) | UrlView::AsView(_) => None,
                    };
                    if let Some(to) = included {
                        links.push(RouteLink::Include {
                            from: module,
                            to,
                            prefix: path.to_string(),
                        });
                        continue;
                    }
                    let (expr, as_view) = match view {
                        UrlView::View(e) => (e, false),
                        UrlView::AsView(e) => (e, true),
                        UrlView::Include(_) | UrlView::IncludeModule(_) => continue,
                    };
                    let mut push = |method, handler| {
                        drafts.push(RouteDraft {
                            method,
                            path: path.to_string(),
                            framework: Framework::Django,
                            handler,
                            line: *line,
                            scope: RouteScope::UrlConf(module),
                        })
                    };
                    match self.eval(module, ScopeRef::Module, expr, 0) {
                        Value::Function(f) if !as_view => {
                            push(HttpMethod::Any, HandlerDraft::Entity(EntityId::Function(f)))
                        }
                        Value::Class(c) => {
                            // A class-based view serves the HTTP methods it defines.
                            let mut any = false;
                            for verb in ["get", "post", "put", "patch", "delete", "head", "options"]
                            {
                                if let (Value::Function(f), Some(method)) = (
                                    self.class_attr(c, verb, false, 0),
                                    HttpMethod::from_verb(verb),
                                ) {
                                    any = true;
                                    push(method, HandlerDraft::Entity(EntityId::Function(f)));
                                }
                            }
                            if !any {
                                push(HttpMethod::Any, HandlerDraft::Entity(EntityId::Class(c)));
                            }
                        }
                        Value::External(name) => push(HttpMethod::Any, HandlerDraft::Text(name)),
                        _ => push(HttpMethod::Any, HandlerDraft::Text(expr.render())),
                    }
                }
            }
        }
    }

    /// The module-level router object an expression names, following
    /// `from m import name` and `module.name`.
    fn router_key(
        &self,
        module: ModuleId,
        scope: ScopeRef,
        expr: &Expr,
        depth: u32,
    ) -> Option<RouterKey> {
        if depth > MAX_DEPTH {
            return None;
        }
        match expr {
            Expr::Name(name) => {
                let facts = self.facts(module);
                let defined_here = facts
                    .routes
                    .iter()
                    .any(|r| matches!(r, RouteFacts::Router { name: n, .. } if n == name));
                if defined_here {
                    return Some((module, name.clone()));
                }
                let values = self.tables[module.index()]
                    .scopes
                    .get(&(ScopeRef::Module, name.as_str()))?;
                values.iter().rev().find_map(|value| {
                    let LocalValue::Import(i) = value else {
                        return None;
                    };
                    let import = facts.imports.get(*i as usize)?;
                    if import.kind != ImportKind::From {
                        return None;
                    }
                    let base = self.import_base(module, import.level, &import.module);
                    let target = self.module_named(&base)?;
                    let imported = Expr::Name(import.name.clone()?);
                    self.router_key(target, ScopeRef::Module, &imported, depth + 1)
                })
            }
            Expr::Attr(base, name) => match self.eval(module, scope, base, 0) {
                Value::Module(m) => {
                    self.router_key(m, ScopeRef::Module, &Expr::Name(name.clone()), depth + 1)
                }
                _ => None,
            },
            _ => None,
        }
    }

    fn router_framework(&self, key: &RouterKey) -> Option<Framework> {
        self.facts(key.0).routes.iter().find_map(|r| match r {
            RouteFacts::Router {
                name, constructor, ..
            } if *name == key.1 => constructor_framework(constructor),
            _ => None,
        })
    }

    fn enclosing_function(&self, module: ModuleId, scope: ScopeRef) -> bool {
        let mut current = self.parent_scope(module, scope);
        while let Some(s) = current {
            if matches!(s, ScopeRef::Function(_)) {
                return true;
            }
            current = self.parent_scope(module, s);
        }
        false
    }

    /// `apply(square, 2)` where `apply` calls its parameter: `apply` → `square`.
    fn passed_functions(
        &self,
        module: ModuleId,
        call: &crate::lang::python::CallFacts,
        callee: FunctionId,
        edges: &mut Vec<(EntityId, EntityId)>,
    ) {
        let Some((_, function)) = self.local_function(callee) else {
            return;
        };
        if function.called_params.is_empty() || call.args.is_empty() {
            return;
        }
        let bound = matches!(
            function.kind,
            FunctionKind::Method | FunctionKind::ClassMethod
        ) && matches!(call.callee, Expr::Attr(..));
        for arg in &call.args {
            let position = match (arg.position, &arg.keyword) {
                (Some(p), _) => Some(p + u32::from(bound)),
                (None, Some(keyword)) => function
                    .params
                    .iter()
                    .position(|p| &p.name == keyword)
                    .map(|p| p as u32),
                (None, None) => None,
            };
            let Some(position) = position else { continue };
            if !function.called_params.contains(&position) {
                continue;
            }
            let value = self.eval(module, call.scope, &arg.value, 0);
            if let Some(target) = self.call_target(&value) {
                edges.push((EntityId::Function(callee), target));
            }
        }
    }

    fn import_target(&self, module: ModuleId, index: u32) -> ImportTarget {
        let Some(import) = self.facts(module).imports.get(index as usize) else {
            return ImportTarget::External(String::new());
        };
        let base = self.import_base(module, import.level, &import.module);
        match import.kind {
            ImportKind::Import | ImportKind::Star => match self.module_named(&base) {
                Some(m) => ImportTarget::Module(m),
                None => ImportTarget::External(base),
            },
            ImportKind::From => {
                let name = import.name.as_deref().unwrap_or("");
                match self.imported_name(&base, name, 0) {
                    Value::Module(m) => ImportTarget::Module(m),
                    Value::Class(c) => ImportTarget::Class(c),
                    Value::Function(f) => ImportTarget::Function(f),
                    Value::External(name) => match self.module_named(&base) {
                        // Re-exported external name: the dependency is still on `base`.
                        Some(m) => ImportTarget::Attribute(m),
                        None => ImportTarget::External(name),
                    },
                    _ => match self.module_named(&base) {
                        Some(m) => ImportTarget::Attribute(m),
                        None => ImportTarget::External(format!("{base}.{name}")),
                    },
                }
            }
        }
    }
}

/// C3 linearization over internal bases; falls back to depth-first order
/// when the hierarchy admits no consistent order.
fn linearize(class: ClassId, bases: &[Vec<Base>]) -> Vec<ClassId> {
    fn c3(class: ClassId, bases: &[Vec<Base>], stack: &mut Vec<ClassId>) -> Option<Vec<ClassId>> {
        if stack.contains(&class) || stack.len() > 64 {
            return None;
        }
        stack.push(class);
        let direct: Vec<ClassId> = bases
            .get(class.index())
            .map(|b| b.iter().filter_map(|b| b.resolved).collect())
            .unwrap_or_default();
        let mut sequences: Vec<Vec<ClassId>> = Vec::with_capacity(direct.len() + 1);
        for base in &direct {
            sequences.push(c3(*base, bases, stack)?);
        }
        sequences.push(direct);
        stack.pop();
        let mut result = vec![class];
        loop {
            sequences.retain(|s| !s.is_empty());
            if sequences.is_empty() {
                return Some(result);
            }
            let head = sequences
                .iter()
                .map(|s| s[0])
                .find(|candidate| !sequences.iter().any(|s| s[1..].contains(candidate)))?;
            result.push(head);
            for s in &mut sequences {
                if s.first() == Some(&head) {
                    s.remove(0);
                }
            }
        }
    }
    if let Some(order) = c3(class, bases, &mut Vec::new()) {
        return order;
    }
    let mut order = Vec::new();
    let mut stack = vec![class];
    while let Some(c) = stack.pop() {
        if order.contains(&c) || order.len() > 256 {
            continue;
        }
        order.push(c);
        if let Some(b) = bases.get(c.index()) {
            stack.extend(b.iter().rev().filter_map(|b| b.resolved));
        }
    }
    order
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
}

fn module_parts(
    resolver: &Resolver<'_>,
    java: &JavaResolver<'_>,
    id: ModuleId,
    module: &ModuleInput,
    output: ModuleOutput,
    bases: Vec<Vec<Base>>,
) -> ModuleParts {
    let mut bases = bases.into_iter();
    let scope_entity = |scope: ScopeRef| match scope {
        ScopeRef::Module => EntityId::Module(id),
        ScopeRef::Class(c) => EntityId::Class(resolver.class_id(id, c)),
        ScopeRef::Function(f) => EntityId::Function(resolver.function_id(id, f)),
    };
    let qualify = |local: &str| format!("{}.{local}", module.name.name);
    let (mut classes, functions, module_doc) = match &*module.facts {
        Facts::Python(facts) => {
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
                    java: None,
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
                    java: None,
                })
                .collect();
            (classes, functions, facts.docstring.as_deref())
        }
        Facts::Java(facts) => {
            let entities = java.entities(id, facts, &mut bases);
            (entities.classes, entities.functions, entities.docstring)
        }
    };
    // Methods are the functions whose parent is a class of this module.
    let first_class = resolver.class_base[id.index()] as usize;
    let first_function = resolver.function_base[id.index()];
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
                ImportTarget::Class(c) => resolver.class_module.get(c.index()).copied(),
                ImportTarget::Function(f) => resolver.function_module.get(f.index()).copied(),
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
    }
}

fn assemble(
    root: std::path::PathBuf,
    resolver: &Resolver<'_>,
    java: &JavaResolver<'_>,
    bases: Vec<Vec<Base>>,
    per_module: Vec<ModuleOutput>,
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
    let resolution = crate::render::ResolutionStats {
        work: java
            .setup_work()
            .saturating_add(per_module.iter().map(|o| o.work).sum::<u64>()),
        widened: 0,
        budget_exhausted: 0,
    };
    let parts: Vec<ModuleParts> = inputs
        .par_iter()
        .zip(per_module)
        .zip(base_chunks)
        .enumerate()
        .map(|(m, ((module, output), bases))| {
            module_parts(resolver, java, ModuleId(m as u32), module, output, bases)
        })
        .collect();
    let mut modules = Vec::with_capacity(inputs.len());
    let mut classes: Vec<Class> = Vec::with_capacity(resolver.class_module.len());
    let mut functions: Vec<Function> = Vec::with_capacity(resolver.function_module.len());
    let mut unresolved = Vec::new();
    let mut sorted_edges: Vec<((EntityId, EntityId), u32)> = Vec::new();
    let mut module_edges: HashMap<(ModuleId, ModuleId), Coupling> = HashMap::default();
    let mut route_drafts = Vec::new();
    let mut route_links = Vec::new();
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
    }
    let module_of = |e: EntityId| match e {
        EntityId::Module(m) => m,
        EntityId::Class(c) => resolver.class_module[c.index()],
        EntityId::Function(f) => resolver.function_module[f.index()],
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
        .filter(|(_, f)| f.java.is_some())
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

    RepoGraph {
        root,
        sources: inputs.iter().map(|m| Arc::clone(&m.text)).collect(),
        modules,
        classes,
        functions,
        unresolved,
        skipped: input.skipped.clone(),
        files_seen: input.files_seen,
        fcg,
        mdg,
        by_name,
        children,
        mro: resolver.mro.clone(),
        routes,
        elapsed: started.elapsed().max(Duration::from_nanos(1)),
        resolution,
    }
}

/// The web framework a module or object name belongs to (`flask.Flask()` → Flask).
fn web_framework(name: &str) -> Option<Framework> {
    let top = name.split('.').next().unwrap_or(name);
    match top {
        "flask" => Some(Framework::Flask),
        "fastapi" => Some(Framework::FastApi),
        _ => None,
    }
}

fn constructor_framework(constructor: &str) -> Option<Framework> {
    match constructor {
        "Flask" | "Blueprint" => Some(Framework::Flask),
        "FastAPI" | "APIRouter" => Some(Framework::FastApi),
        _ => None,
    }
}

fn is_builtin(name: &str) -> bool {
    const BUILTINS: &[&str] = &[
        "abs",
        "aiter",
        "all",
        "anext",
        "any",
        "ascii",
        "bin",
        "bool",
        "breakpoint",
        "bytearray",
        "bytes",
        "callable",
        "chr",
        "classmethod",
        "compile",
        "complex",
        "delattr",
        "dict",
        "dir",
        "divmod",
        "enumerate",
        "eval",
        "exec",
        "filter",
        "float",
        "format",
        "frozenset",
        "getattr",
        "globals",
        "hasattr",
        "hash",
        "help",
        "hex",
        "id",
        "input",
        "int",
        "isinstance",
        "issubclass",
        "iter",
        "len",
        "list",
        "locals",
        "map",
        "max",
        "memoryview",
        "min",
        "next",
        "object",
        "oct",
        "open",
        "ord",
        "pow",
        "print",
        "property",
        "range",
        "repr",
        "reversed",
        "round",
        "set",
        "setattr",
        "slice",
        "sorted",
        "staticmethod",
        "str",
        "sum",
        "super",
        "tuple",
        "type",
        "vars",
        "zip",
        "__import__",
        "BaseException",
        "Exception",
        "ArithmeticError",
        "AssertionError",
        "AttributeError",
        "EOFError",
        "ImportError",
        "ModuleNotFoundError",
        "IndexError",
        "KeyError",
        "KeyboardInterrupt",
        "MemoryError",
        "NameError",
        "NotImplementedError",
        "OSError",
        "OverflowError",
        "RecursionError",
        "RuntimeError",
        "StopIteration",
        "StopAsyncIteration",
        "SyntaxError",
        "SystemError",
        "SystemExit",
        "TypeError",
        "ValueError",
        "ZeroDivisionError",
        "UnicodeError",
        "UnicodeDecodeError",
        "UnicodeEncodeError",
        "FileNotFoundError",
        "FileExistsError",
        "PermissionError",
        "TimeoutError",
        "ConnectionError",
        "NotADirectoryError",
        "IsADirectoryError",
        "LookupError",
        "Warning",
        "DeprecationWarning",
        "UserWarning",
        "RuntimeWarning",
        "FutureWarning",
        "PendingDeprecationWarning",
        "ResourceWarning",
        "IOError",
        "EnvironmentError",
    ];
    BUILTINS.contains(&name)
}
