//! Resolution of Java facts across files: type names to internal types,
//! supertypes, member lookup through superclasses and interfaces, and call
//! sites to methods and constructors (overloads chosen by arity, then by
//! literal argument kinds).
//!
//! Type names are resolved as `javac` does, in this order: type variables
//! and member or local types of the enclosing scopes (members inherited from
//! supertypes included), top-level types of the compilation unit,
//! single-type imports, types of the same package, on-demand imports,
//! static imports, `java.lang`, and finally a fully qualified name. Calls
//! are resolved by the declared type of their receiver: a local variable
//! (`var x = new T()` included), a parameter, a field of the enclosing
//! types, a static type reference, `this`/`super`, or the declared return
//! type of an internal method in a call chain. Everything runs over
//! read-only tables, one module per rayon task.

use std::cell::RefCell;

use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::assemble::{ModuleInput, ModuleOutput};
use crate::lang::java::{
    ArgKind, CONSTRUCTOR, JCall, JCallee, JExpr, JField, JHandler, JLocal, JLocalType,
    JMethodFacts, JParam, JScope, JTypeFacts, JavaFacts, erase, simple_type,
};
use crate::model::{
    Base, BaseRelation, ClassId, EntityId, FunctionId, Import, ImportKind, ImportTarget,
    JavaTypeKind, ModuleId, UnresolvedCall,
};
use crate::routes::{HandlerDraft, RouteDraft, RouteScope};

/// Evaluation steps allowed for one expression before giving up.
const MAX_DEPTH: u32 = 24;
/// Longest supertype chain followed.
const MAX_MRO: usize = 256;

/// Types every Java file sees without an import (`java.lang`), for naming
/// calls into them when the JDK itself is not part of the repository.
const JAVA_LANG: &[&str] = &[
    "AbstractMethodError",
    "Appendable",
    "ArithmeticException",
    "ArrayIndexOutOfBoundsException",
    "ArrayStoreException",
    "AssertionError",
    "AutoCloseable",
    "Boolean",
    "Byte",
    "CharSequence",
    "Character",
    "Class",
    "ClassCastException",
    "ClassLoader",
    "ClassNotFoundException",
    "CloneNotSupportedException",
    "Cloneable",
    "Comparable",
    "Deprecated",
    "Double",
    "Enum",
    "Error",
    "Exception",
    "Float",
    "FunctionalInterface",
    "IllegalAccessException",
    "IllegalArgumentException",
    "IllegalStateException",
    "IndexOutOfBoundsException",
    "InheritableThreadLocal",
    "Integer",
    "InterruptedException",
    "Iterable",
    "LinkageError",
    "Long",
    "Math",
    "NegativeArraySizeException",
    "NoSuchFieldException",
    "NoSuchMethodException",
    "NullPointerException",
    "Number",
    "NumberFormatException",
    "Object",
    "OutOfMemoryError",
    "Override",
    "Process",
    "ProcessBuilder",
    "Readable",
    "Record",
    "ReflectiveOperationException",
    "Runnable",
    "Runtime",
    "RuntimeException",
    "SafeVarargs",
    "SecurityException",
    "Short",
    "StackOverflowError",
    "StrictMath",
    "String",
    "StringBuffer",
    "StringBuilder",
    "StringIndexOutOfBoundsException",
    "SuppressWarnings",
    "System",
    "Thread",
    "ThreadGroup",
    "ThreadLocal",
    "Throwable",
    "UnsupportedOperationException",
    "Void",
];

const PRIMITIVES: &[&str] = &[
    "int", "long", "short", "byte", "char", "boolean", "float", "double", "void",
];

/// What a type name denotes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum TypeValue {
    Internal(ClassId),
    /// Outside the repository: the fully qualified name when an import or
    /// `java.lang` tells it, else the name as written.
    External(String),
    Unknown,
}

/// What an expression evaluates to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    /// A reference to an internal type (`Type.m()`).
    Type(ClassId),
    Instance(ClassId),
    ExternalType(String),
    ExternalInstance(String),
    /// A package name or a prefix of one.
    Package(String),
    Unknown,
}

/// Where a call lands.
enum Target {
    Entity(EntityId),
    External(String),
    Unresolved,
}

/// Members of one internal type.
#[derive(Default)]
struct TypeTable<'f> {
    module: u32,
    local: u32,
    /// Methods by name (constructors under [`CONSTRUCTOR`]), in source order.
    methods: HashMap<&'f str, Vec<FunctionId>>,
    fields: HashMap<&'f str, &'f JField>,
    is_interface: bool,
}

/// The type tables of one compilation unit, before merging.
struct UnitIndex<'f> {
    package: Option<&'f str>,
    scoped: HashMap<(JScope, &'f str), ClassId>,
    fqns: Vec<(String, ClassId)>,
    top_level: Vec<(&'f str, ClassId)>,
    tables: Vec<(ClassId, TypeTable<'f>)>,
}

impl<'f> UnitIndex<'f> {
    fn new(facts: &'f JavaFacts, module: u32, class_base: u32, function_base: u32) -> Self {
        let mut scoped: HashMap<(JScope, &str), ClassId> = HashMap::default();
        let mut fqns = Vec::new();
        let mut top_level = Vec::new();
        let mut tables: Vec<(ClassId, TypeTable<'f>)> = Vec::with_capacity(facts.types.len());
        for (i, t) in facts.types.iter().enumerate() {
            let id = ClassId(class_base + i as u32);
            scoped.entry((t.parent, t.name.as_str())).or_insert(id);
            if t.parent == JScope::Unit {
                top_level.push((t.name.as_str(), id));
            }
            if !t.anonymous && named_path(facts, t) {
                let fqn = match &facts.package {
                    Some(p) => format!("{p}.{}", t.local_path),
                    None => t.local_path.clone(),
                };
                fqns.push((fqn, id));
            }
            tables.push((
                id,
                TypeTable {
                    module,
                    local: i as u32,
                    methods: HashMap::default(),
                    fields: t.fields.iter().map(|f| (f.name.as_str(), f)).collect(),
                    is_interface: matches!(
                        t.kind,
                        JavaTypeKind::Interface | JavaTypeKind::Annotation
                    ),
                },
            ));
        }
        for (i, method) in facts.methods.iter().enumerate() {
            if let JScope::Type(t) = method.parent
                && let Some((_, table)) = tables.get_mut(t as usize)
            {
                table
                    .methods
                    .entry(method.name.as_str())
                    .or_default()
                    .push(FunctionId(function_base + i as u32));
            }
        }
        UnitIndex {
            package: facts.package.as_deref(),
            scoped,
            fqns,
            top_level,
            tables,
        }
    }
}

/// A variable found by name.
enum Var<'f> {
    Local(&'f JLocal),
    Param(ModuleId, JScope, &'f JParam),
    Field(ModuleId, JScope, &'f JField),
}

pub(crate) struct JavaResolver<'f> {
    inputs: &'f [ModuleInput],
    class_base: &'f [u32],
    function_base: &'f [u32],
    class_module: &'f [ModuleId],
    function_module: &'f [ModuleId],
    /// Named (not local, not anonymous) types by fully qualified name.
    by_fqn: HashMap<String, ClassId>,
    /// Packages with internal types, and every prefix of them.
    packages: HashSet<String>,
    /// Top-level types by package ("" for the default package) and simple name.
    by_package: HashMap<&'f str, HashMap<&'f str, ClassId>>,
    /// Per module: types by (enclosing scope, simple name).
    scoped_types: Vec<HashMap<(JScope, &'f str), ClassId>>,
    /// Per class id; `None` for Python classes.
    types: Vec<Option<TypeTable<'f>>>,
    /// Resolved supertypes per class id (empty for Python classes).
    pub(crate) bases: Vec<Vec<Base>>,
    /// Fully qualified names of supertypes outside the repository.
    external_supers: Vec<Vec<String>>,
    /// Superclass, then its superclasses, then interfaces breadth first.
    pub(crate) mro: Vec<Vec<ClassId>>,
}

impl<'f> JavaResolver<'f> {
    /// Work units spent building the type tables, supertypes and MROs.
    pub(crate) fn setup_work(&self) -> u64 {
        0
    }

    pub(crate) fn new(
        inputs: &'f [ModuleInput],
        class_base: &'f [u32],
        function_base: &'f [u32],
        class_module: &'f [ModuleId],
        function_module: &'f [ModuleId],
    ) -> Self {
        let class_count = class_module.len();
        // Each unit's tables are built in parallel, then merged in path order
        // (so the first of two units declaring the same type wins).
        let units: Vec<Option<UnitIndex<'f>>> = inputs
            .par_iter()
            .enumerate()
            .map(|(m, input)| {
                let facts = input.facts.java()?;
                Some(UnitIndex::new(
                    facts,
                    m as u32,
                    class_base[m],
                    function_base[m],
                ))
            })
            .collect();
        let mut by_fqn: HashMap<String, ClassId> = HashMap::default();
        let mut by_package: HashMap<&'f str, HashMap<&'f str, ClassId>> = HashMap::default();
        let mut packages: HashSet<String> = HashSet::default();
        let mut scoped_types = Vec::with_capacity(inputs.len());
        let mut types: Vec<Option<TypeTable<'f>>> = (0..class_count).map(|_| None).collect();
        for unit in units {
            let Some(unit) = unit else {
                scoped_types.push(HashMap::default());
                continue;
            };
            if let Some(package) = unit.package {
                let mut prefix = package;
                while packages.insert(prefix.to_string()) {
                    match prefix.rsplit_once('.') {
                        Some((p, _)) => prefix = p,
                        None => break,
                    }
                }
            }
            for (fqn, id) in unit.fqns {
                by_fqn.entry(fqn).or_insert(id);
            }
            let top = by_package.entry(unit.package.unwrap_or("")).or_default();
            for (name, id) in unit.top_level {
                top.entry(name).or_insert(id);
            }
            for (id, table) in unit.tables {
                if let Some(slot) = types.get_mut(id.index()) {
                    *slot = Some(table);
                }
            }
            scoped_types.push(unit.scoped);
        }
        let mut resolver = JavaResolver {
            inputs,
            class_base,
            function_base,
            class_module,
            function_module,
            by_fqn,
            packages,
            by_package,
            scoped_types,
            types,
            bases: vec![Vec::new(); class_count],
            external_supers: vec![Vec::new(); class_count],
            mro: vec![Vec::new(); class_count],
        };
        // Supertypes can be member types inherited from other supertypes, so
        // they are resolved twice: lexically first, then with the first MROs.
        for _ in 0..2 {
            let resolved: Vec<(Vec<Base>, Vec<String>)> = (0..class_count)
                .into_par_iter()
                .map(|c| resolver.class_bases(ClassId(c as u32)))
                .collect();
            for (c, (bases, external)) in resolved.into_iter().enumerate() {
                resolver.bases[c] = bases;
                resolver.external_supers[c] = external;
            }
            resolver.mro = (0..class_count)
                .into_par_iter()
                .map(|c| resolver.linearize(ClassId(c as u32)))
                .collect();
        }
        resolver
    }

    pub(crate) fn is_java_class(&self, class: ClassId) -> bool {
        matches!(self.types.get(class.index()), Some(Some(_)))
    }

    fn facts(&self, module: ModuleId) -> Option<&'f JavaFacts> {
        self.inputs.get(module.index())?.facts.java()
    }

    fn class_id(&self, module: ModuleId, local: u32) -> ClassId {
        ClassId(self.class_base[module.index()] + local)
    }

    fn function_id(&self, module: ModuleId, local: u32) -> FunctionId {
        FunctionId(self.function_base[module.index()] + local)
    }

    fn table(&self, class: ClassId) -> Option<&TypeTable<'f>> {
        self.types.get(class.index())?.as_ref()
    }

    fn type_facts(&self, class: ClassId) -> Option<(ModuleId, &'f JTypeFacts)> {
        let table = self.table(class)?;
        let module = ModuleId(table.module);
        Some((module, self.facts(module)?.types.get(table.local as usize)?))
    }

    fn method_facts(&self, function: FunctionId) -> Option<(ModuleId, &'f JMethodFacts)> {
        let module = *self.function_module.get(function.index())?;
        let local = function.0 - self.function_base[module.index()];
        Some((module, self.facts(module)?.methods.get(local as usize)?))
    }

    fn parent_scope(&self, module: ModuleId, scope: JScope) -> Option<JScope> {
        let facts = self.facts(module)?;
        match scope {
            JScope::Unit => None,
            JScope::Type(t) => facts.types.get(t as usize).map(|t| t.parent),
            JScope::Method(m) => facts.methods.get(m as usize).map(|m| m.parent),
        }
    }

    /// The innermost type enclosing `scope` (the type itself for a type scope).
    fn enclosing_type(&self, module: ModuleId, scope: JScope) -> Option<ClassId> {
        let mut current = Some(scope);
        while let Some(s) = current {
            if let JScope::Type(t) = s {
                return Some(self.class_id(module, t));
            }
            current = self.parent_scope(module, s);
        }
        None
    }

    fn class_bases(&self, class: ClassId) -> (Vec<Base>, Vec<String>) {
        let Some((module, facts)) = self.type_facts(class) else {
            return (Vec::new(), Vec::new());
        };
        let mut external = Vec::new();
        // Supertypes see the type's own type parameters but not its members.
        let scope = facts.parent;
        let bases = facts
            .supers
            .iter()
            .map(|s| {
                let value = if facts.type_params.iter().any(|p| p.name == s.name) {
                    TypeValue::Unknown
                } else {
                    self.resolve_type(module, scope, &s.name, None, 0)
                };
                let resolved = match value {
                    TypeValue::Internal(c) if c != class => Some(c),
                    TypeValue::External(name) => {
                        external.push(name);
                        None
                    }
                    _ => None,
                };
                // `new T() {}` implements T when T is an interface.
                let relation = match (facts.anonymous, resolved) {
                    (true, Some(c)) if self.table(c).is_some_and(|t| t.is_interface) => {
                        BaseRelation::Implements
                    }
                    _ => s.relation,
                };
                Base {
                    text: s.text.clone(),
                    resolved,
                    relation,
                }
            })
            .collect();
        (bases, external)
    }

    /// The class, its superclass chain, then every interface breadth first.
    fn linearize(&self, class: ClassId) -> Vec<ClassId> {
        if !self.is_java_class(class) {
            return Vec::new();
        }
        let mut order = vec![class];
        let mut seen: HashSet<ClassId> = HashSet::default();
        seen.insert(class);
        let is_interface = |c: ClassId| self.table(c).is_some_and(|t| t.is_interface);
        let mut current = class;
        while order.len() < MAX_MRO {
            let superclass = self.bases.get(current.index()).and_then(|bases| {
                bases
                    .iter()
                    .filter(|b| b.relation == BaseRelation::Extends)
                    .filter_map(|b| b.resolved)
                    .find(|c| !is_interface(*c) || is_interface(current))
            });
            match superclass {
                Some(s) if !is_interface(current) && seen.insert(s) => {
                    order.push(s);
                    current = s;
                }
                _ => break,
            }
        }
        let mut next = 0;
        while next < order.len() && order.len() < MAX_MRO {
            let c = order[next];
            next += 1;
            if let Some(bases) = self.bases.get(c.index()) {
                for base in bases {
                    if let Some(b) = base.resolved
                        && seen.insert(b)
                    {
                        order.push(b);
                    }
                }
            }
        }
        order
    }

    fn mro(&self, class: ClassId) -> &[ClassId] {
        self.mro.get(class.index()).map_or(&[], Vec::as_slice)
    }

    /// A member type named `name` of `class` or of its supertypes.
    fn member_type(&self, class: ClassId, name: &str) -> Option<ClassId> {
        let mro = self.mro(class);
        let own = [class];
        let order: &[ClassId] = if mro.is_empty() { &own } else { mro };
        order.iter().find_map(|&k| {
            let table = self.table(k)?;
            self.scoped_types
                .get(table.module as usize)?
                .get(&(JScope::Type(table.local), name))
                .copied()
        })
    }

    /// Resolves a written (erased) type name in `scope` of `module`.
    /// `cache` memoises the scope-independent part for the module being resolved.
    fn resolve_type(
        &self,
        module: ModuleId,
        scope: JScope,
        name: &str,
        cache: Option<&RefCell<HashMap<String, TypeValue>>>,
        depth: u32,
    ) -> TypeValue {
        if name.ends_with(']') || PRIMITIVES.contains(&name) || name.is_empty() || depth > MAX_DEPTH
        {
            return TypeValue::Unknown;
        }
        let (head, rest) = match name.split_once('.') {
            Some((h, r)) => (h, Some(r)),
            None => (name, None),
        };
        let mut value = self.lexical_type(module, scope, head, depth);
        if value == TypeValue::Unknown {
            value = match cache.and_then(|c| c.borrow().get(head).cloned()) {
                Some(v) => v,
                None => {
                    let v = self.unit_type(module, head);
                    if let Some(c) = cache {
                        c.borrow_mut().insert(head.to_string(), v.clone());
                    }
                    v
                }
            };
        }
        let Some(rest) = rest else {
            return value;
        };
        match value {
            TypeValue::Unknown => self.resolve_fqn(name),
            value => self.member_path(value, rest),
        }
    }

    /// Applies `Inner.Deeper` member segments to a resolved type.
    fn member_path(&self, mut value: TypeValue, rest: &str) -> TypeValue {
        for segment in rest.split('.') {
            value = match value {
                TypeValue::Internal(c) => match self.member_type(c, segment) {
                    Some(inner) => TypeValue::Internal(inner),
                    None => TypeValue::Unknown,
                },
                TypeValue::External(outer) => TypeValue::External(format!("{outer}.{segment}")),
                TypeValue::Unknown => TypeValue::Unknown,
            };
        }
        value
    }

    /// Type variables, local types and member types visible from `scope`.
    fn lexical_type(&self, module: ModuleId, scope: JScope, name: &str, depth: u32) -> TypeValue {
        let Some(facts) = self.facts(module) else {
            return TypeValue::Unknown;
        };
        let scoped = &self.scoped_types[module.index()];
        let mut current = Some(scope);
        let mut steps = 0;
        while let Some(s) = current {
            steps += 1;
            if steps > MAX_MRO {
                break;
            }
            let params = match s {
                JScope::Method(m) => facts.methods.get(m as usize).map(|m| &m.type_params),
                JScope::Type(t) => facts.types.get(t as usize).map(|t| &t.type_params),
                JScope::Unit => None,
            };
            if let Some(param) = params.and_then(|ps| ps.iter().find(|p| p.name == name)) {
                // A type variable stands for its bound.
                return match &param.bound {
                    Some(bound) if bound != name => {
                        let outer = self.parent_scope(module, s).unwrap_or(JScope::Unit);
                        // `<A extends B, B extends A>` must not loop.
                        self.resolve_type(module, outer, bound, None, depth + 1)
                    }
                    _ => TypeValue::Unknown,
                };
            }
            match s {
                JScope::Method(_) => {
                    if let Some(c) = scoped.get(&(s, name)) {
                        return TypeValue::Internal(*c);
                    }
                }
                JScope::Type(t) => {
                    if let Some(c) = self.member_type(self.class_id(module, t), name) {
                        return TypeValue::Internal(c);
                    }
                }
                JScope::Unit => {}
            }
            current = self.parent_scope(module, s);
        }
        TypeValue::Unknown
    }

    /// What a simple type name means at the top of a compilation unit.
    fn unit_type(&self, module: ModuleId, name: &str) -> TypeValue {
        let Some(facts) = self.facts(module) else {
            return TypeValue::Unknown;
        };
        if let Some(c) = self.scoped_types[module.index()].get(&(JScope::Unit, name)) {
            return TypeValue::Internal(*c);
        }
        let last = |path: &'f str| path.rsplit_once('.').map_or(path, |(_, last)| last);
        for import in &facts.imports {
            if !import.is_static && !import.on_demand && last(&import.path) == name {
                return self.resolve_fqn(&import.path);
            }
        }
        if let Some(c) = self.top_level(facts.package.as_deref().unwrap_or(""), name) {
            return TypeValue::Internal(c);
        }
        for import in &facts.imports {
            if import.on_demand {
                // `import p.*;` (a package) or `import p.T.*;` (T's members).
                let found = self.top_level(&import.path, name).or_else(|| {
                    let owner = self.by_fqn.get(import.path.as_str())?;
                    self.member_type(*owner, name)
                });
                if let Some(c) = found {
                    return TypeValue::Internal(c);
                }
            }
            if import.is_static
                && !import.on_demand
                && last(&import.path) == name
                && let Some(c) = self.by_fqn.get(import.path.as_str())
            {
                return TypeValue::Internal(*c);
            }
        }
        if let Some(c) = self.top_level("java.lang", name) {
            return TypeValue::Internal(c);
        }
        if JAVA_LANG.contains(&name) {
            return TypeValue::External(format!("java.lang.{name}"));
        }
        TypeValue::Unknown
    }

    /// The top-level type `name` of `package` ("" for the default package).
    fn top_level(&self, package: &str, name: &str) -> Option<ClassId> {
        self.by_package.get(package)?.get(name).copied()
    }

    /// A fully qualified name: the longest prefix that is a known type, then members.
    fn resolve_fqn(&self, path: &str) -> TypeValue {
        if let Some(c) = self.by_fqn.get(path) {
            return TypeValue::Internal(*c);
        }
        let mut end = path.len();
        while let Some(dot) = path[..end].rfind('.') {
            end = dot;
            if let Some(c) = self.by_fqn.get(&path[..end]) {
                return self.member_path(TypeValue::Internal(*c), &path[end + 1..]);
            }
        }
        TypeValue::External(path.to_string())
    }

    /// The entity that runs code written in `scope`: the nearest method,
    /// else the module (field initializers and initializer blocks).
    fn caller_node(&self, module: ModuleId, scope: JScope) -> EntityId {
        let mut current = Some(scope);
        while let Some(s) = current {
            if let JScope::Method(m) = s {
                return EntityId::Function(self.function_id(module, m));
            }
            current = self.parent_scope(module, s);
        }
        EntityId::Module(module)
    }

    pub(crate) fn resolve_module(&self, module: ModuleId) -> ModuleOutput {
        let Some(facts) = self.facts(module) else {
            return ModuleOutput::default();
        };
        let ctx = Ctx::new(self, module, facts);
        let imports = facts.imports.iter().map(|i| ctx.import(i)).collect();
        let mut edges = Vec::with_capacity(facts.calls.len());
        let mut unresolved = Vec::new();
        for call in &facts.calls {
            let caller = self.caller_node(module, call.scope);
            match ctx.call_target(call) {
                Target::Entity(target) => edges.push((caller, target)),
                Target::External(name) => unresolved.push(UnresolvedCall {
                    caller,
                    callee: name,
                    external: true,
                    line: call.line,
                }),
                Target::Unresolved => unresolved.push(UnresolvedCall {
                    caller,
                    callee: render_callee(&call.callee),
                    external: false,
                    line: call.line,
                }),
            }
        }
        let routes = facts.routes.iter().map(|r| ctx.route(r)).collect();
        ModuleOutput {
            imports,
            edges,
            unresolved,
            references: ctx.references(),
            routes,
            route_links: Vec::new(),
            work: 0,
        }
    }
}

/// Whether every enclosing scope of `t` is a named type (so it has an FQN).
fn named_path(facts: &JavaFacts, t: &JTypeFacts) -> bool {
    let mut parent = t.parent;
    let mut steps = 0;
    loop {
        steps += 1;
        match parent {
            JScope::Unit => return true,
            JScope::Method(_) => return false,
            JScope::Type(p) => match facts.types.get(p as usize) {
                Some(outer) if !outer.anonymous && steps < MAX_MRO => parent = outer.parent,
                _ => return false,
            },
        }
    }
}

fn render_callee(callee: &JCallee) -> String {
    match callee {
        JCallee::Method { receiver, name } => match receiver {
            Some(r) => format!("{}.{name}", r.render()),
            None => name.clone(),
        },
        JCallee::New(t) => format!("new {t}"),
        JCallee::This => "this".to_string(),
        JCallee::Super => "super".to_string(),
        JCallee::Ref { target, name } => {
            let name = if name == CONSTRUCTOR { "new" } else { name };
            format!("{}::{name}", target.render())
        }
    }
}

/// Resolution state for one module: its locals by scope and name, and a
/// cache of what its simple type names mean.
struct Ctx<'f, 'r> {
    r: &'r JavaResolver<'f>,
    module: ModuleId,
    facts: &'f JavaFacts,
    locals: HashMap<(JScope, &'f str), Vec<&'f JLocal>>,
    type_cache: RefCell<HashMap<String, TypeValue>>,
}

impl<'f, 'r> Ctx<'f, 'r> {
    fn new(r: &'r JavaResolver<'f>, module: ModuleId, facts: &'f JavaFacts) -> Self {
        let mut locals: HashMap<(JScope, &str), Vec<&JLocal>> =
            HashMap::with_capacity_and_hasher(facts.locals.len(), Default::default());
        for local in &facts.locals {
            locals
                .entry((local.scope, local.name.as_str()))
                .or_default()
                .push(local);
        }
        Ctx {
            r,
            module,
            facts,
            locals,
            type_cache: RefCell::new(HashMap::default()),
        }
    }

    /// Resolves a type name written in `scope` of `module` (this module's
    /// names are cached).
    fn resolve_type(&self, module: ModuleId, scope: JScope, name: &str) -> TypeValue {
        let cache = (module == self.module).then_some(&self.type_cache);
        self.r.resolve_type(module, scope, name, cache, 0)
    }

    fn instance_of(&self, module: ModuleId, scope: JScope, name: &str) -> Value {
        match self.resolve_type(module, scope, name) {
            TypeValue::Internal(c) => Value::Instance(c),
            TypeValue::External(n) => Value::ExternalInstance(n),
            TypeValue::Unknown => Value::Unknown,
        }
    }

    /// The variable `name` as seen at byte `pos` of `scope`: locals, then
    /// parameters, then fields of the enclosing types, innermost first.
    fn lookup_var(&self, scope: JScope, name: &str, pos: u32) -> Option<Var<'f>> {
        let r = self.r;
        let module = self.module;
        let mut current = Some(scope);
        let mut steps = 0;
        while let Some(s) = current {
            steps += 1;
            if steps > MAX_MRO {
                return None;
            }
            if let Some(candidates) = self.locals.get(&(s, name))
                && let Some(local) = candidates
                    .iter()
                    .filter(|l| l.start <= pos && pos < l.end)
                    .max_by_key(|l| l.start)
            {
                return Some(Var::Local(local));
            }
            match s {
                JScope::Method(m) => {
                    if let Some(param) = self
                        .facts
                        .methods
                        .get(m as usize)
                        .and_then(|method| method.params.iter().find(|p| p.name == name))
                    {
                        return Some(Var::Param(module, s, param));
                    }
                }
                JScope::Type(t) => {
                    let class = r.class_id(module, t);
                    for &k in r.mro(class) {
                        if let Some(table) = r.table(k)
                            && let Some(field) = table.fields.get(name)
                        {
                            return Some(Var::Field(
                                ModuleId(table.module),
                                JScope::Type(table.local),
                                field,
                            ));
                        }
                    }
                }
                JScope::Unit => {}
            }
            current = r.parent_scope(module, s);
        }
        None
    }

    fn var_value(&self, var: Var<'f>, depth: u32) -> Value {
        match var {
            Var::Local(local) => match &local.ty {
                JLocalType::Declared(ty) => self.instance_of(self.module, local.scope, ty),
                JLocalType::Inferred(expr) => self.eval(expr, local.scope, local.start, depth + 1),
                JLocalType::Untyped => Value::Unknown,
            },
            Var::Param(module, scope, param) => {
                self.instance_of(module, scope, &erase(&param.type_text))
            }
            Var::Field(module, scope, field) => {
                self.instance_of(module, scope, &erase(&field.type_text))
            }
        }
    }

    fn eval(&self, expr: &JExpr, scope: JScope, pos: u32, depth: u32) -> Value {
        if depth > MAX_DEPTH {
            return Value::Unknown;
        }
        let r = self.r;
        match expr {
            JExpr::Name(name) => {
                if let Some(var) = self.lookup_var(scope, name, pos) {
                    return self.var_value(var, depth + 1);
                }
                match self.resolve_type(self.module, scope, name) {
                    TypeValue::Internal(c) => Value::Type(c),
                    TypeValue::External(n) => Value::ExternalType(n),
                    TypeValue::Unknown if name.starts_with(|c: char| c.is_ascii_lowercase()) => {
                        Value::Package(name.clone())
                    }
                    TypeValue::Unknown => Value::Unknown,
                }
            }
            JExpr::Field(base, field) => {
                let base = self.eval(base, scope, pos, depth + 1);
                if field == "this" {
                    return match base {
                        Value::Type(c) => Value::Instance(c),
                        _ => Value::Unknown,
                    };
                }
                match base {
                    Value::Type(c) | Value::Instance(c) => {
                        for &k in r.mro(c) {
                            if let Some(table) = r.table(k)
                                && let Some(f) = table.fields.get(field.as_str())
                            {
                                return self.instance_of(
                                    ModuleId(table.module),
                                    JScope::Type(table.local),
                                    &erase(&f.type_text),
                                );
                            }
                        }
                        match (&base, r.member_type(c, field)) {
                            (Value::Type(_), Some(inner)) => Value::Type(inner),
                            _ => Value::Unknown,
                        }
                    }
                    Value::ExternalType(t)
                        if field.starts_with(|c: char| c.is_ascii_uppercase()) =>
                    {
                        Value::ExternalType(format!("{t}.{field}"))
                    }
                    Value::ExternalType(t) | Value::ExternalInstance(t) => {
                        Value::ExternalInstance(format!("{t}.{field}"))
                    }
                    Value::Package(p) => {
                        let path = format!("{p}.{field}");
                        if let Some(c) = r.by_fqn.get(&path) {
                            Value::Type(*c)
                        } else if field.starts_with(|c: char| c.is_ascii_uppercase())
                            && !r.packages.contains(&path)
                        {
                            Value::ExternalType(path)
                        } else {
                            Value::Package(path)
                        }
                    }
                    Value::Unknown => Value::Unknown,
                }
            }
            JExpr::Invoke {
                receiver,
                name,
                arity,
            } => {
                let target = self.method_target(
                    receiver.as_deref(),
                    name,
                    Some(*arity),
                    &[],
                    scope,
                    pos,
                    depth + 1,
                );
                match target {
                    Target::Entity(EntityId::Function(f)) => match r.method_facts(f) {
                        Some((module, method)) => match &method.returns {
                            Some(ty) => self.instance_of(
                                module,
                                JScope::Method(f.0 - r.function_base[module.index()]),
                                &erase(ty),
                            ),
                            None => Value::Unknown,
                        },
                        None => Value::Unknown,
                    },
                    Target::External(n) => Value::ExternalInstance(format!("{n}()")),
                    _ => Value::Unknown,
                }
            }
            JExpr::New(ty) | JExpr::Cast(ty) => self.instance_of(self.module, scope, ty),
            JExpr::Type(ty) => match self.resolve_type(self.module, scope, ty) {
                TypeValue::Internal(c) => Value::Type(c),
                TypeValue::External(n) => Value::ExternalType(n),
                TypeValue::Unknown => Value::Unknown,
            },
            JExpr::Str => Value::ExternalInstance("java.lang.String".to_string()),
            JExpr::This => r
                .enclosing_type(self.module, scope)
                .map_or(Value::Unknown, Value::Instance),
            JExpr::Super | JExpr::Other(_) => Value::Unknown,
        }
    }

    /// The best method named `name` of `class` (or its supertypes after it
    /// when `skip_self`) for `arity` arguments (any arity when `None`).
    fn find_method(
        &self,
        class: ClassId,
        name: &str,
        arity: Option<u32>,
        args: &[ArgKind],
        skip_self: bool,
    ) -> Option<FunctionId> {
        let r = self.r;
        let mro = r.mro(class);
        for &k in mro.iter().skip(usize::from(skip_self)) {
            let Some(candidates) = r.table(k).and_then(|t| t.methods.get(name)) else {
                continue;
            };
            if let Some(best) = self.best_overload(candidates, arity, args) {
                return Some(best);
            }
        }
        None
    }

    fn best_overload(
        &self,
        candidates: &[FunctionId],
        arity: Option<u32>,
        args: &[ArgKind],
    ) -> Option<FunctionId> {
        let r = self.r;
        let Some(arity) = arity else {
            return candidates.first().copied();
        };
        let mut best: Option<(i32, FunctionId)> = None;
        for &f in candidates {
            let Some((_, method)) = r.method_facts(f) else {
                continue;
            };
            if !accepts(&method.params, arity) {
                continue;
            }
            let score = if args.is_empty() {
                0
            } else {
                args.iter()
                    .zip(&method.params)
                    .map(|(a, p)| arg_score(*a, simple_type(&erase(&p.type_text))))
                    .sum()
            };
            if best.is_none_or(|(s, _)| score > s) {
                best = Some((score, f));
            }
        }
        best.map(|(_, f)| f)
    }

    /// `new T(...)` on an internal class: the constructor for the arity, or
    /// the class itself when it declares none that fits.
    fn constructor(&self, class: ClassId, arity: Option<u32>, args: &[ArgKind]) -> EntityId {
        self.r
            .table(class)
            .and_then(|t| t.methods.get(CONSTRUCTOR))
            .and_then(|ctors| self.best_overload(ctors, arity, args))
            .map_or(EntityId::Class(class), EntityId::Function)
    }

    #[allow(clippy::too_many_arguments)]
    fn method_target(
        &self,
        receiver: Option<&JExpr>,
        name: &str,
        arity: Option<u32>,
        args: &[ArgKind],
        scope: JScope,
        pos: u32,
        depth: u32,
    ) -> Target {
        let r = self.r;
        let module = self.module;
        match receiver {
            None => {
                let mut current = Some(scope);
                let mut innermost = None;
                let mut steps = 0;
                while let Some(s) = current {
                    steps += 1;
                    if steps > MAX_MRO {
                        break;
                    }
                    if let JScope::Type(t) = s {
                        let class = r.class_id(module, t);
                        innermost.get_or_insert(class);
                        if let Some(f) = self.find_method(class, name, arity, args, false) {
                            return Target::Entity(EntityId::Function(f));
                        }
                    }
                    current = r.parent_scope(module, s);
                }
                if let Some(target) = self.static_import(name, arity, args) {
                    return target;
                }
                // Methods outside any type: scripts, or a class lost to a syntax error.
                let top_level: Vec<FunctionId> = self
                    .facts
                    .methods
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| m.parent == JScope::Unit && m.name == name)
                    .map(|(i, _)| r.function_id(module, i as u32))
                    .collect();
                if let Some(f) = self.best_overload(&top_level, arity, args) {
                    return Target::Entity(EntityId::Function(f));
                }
                match innermost.and_then(|c| self.external_super_name(c)) {
                    Some(base) => Target::External(format!("{base}.{name}")),
                    None => Target::Unresolved,
                }
            }
            Some(JExpr::Super) => match r.enclosing_type(module, scope) {
                Some(class) => match self.find_method(class, name, arity, args, true) {
                    Some(f) => Target::Entity(EntityId::Function(f)),
                    None => match self.external_super_name(class) {
                        Some(base) => Target::External(format!("{base}.{name}")),
                        None => Target::Unresolved,
                    },
                },
                None => Target::Unresolved,
            },
            Some(expr) => match self.eval(expr, scope, pos, depth + 1) {
                Value::Type(c) | Value::Instance(c) => {
                    match self.find_method(c, name, arity, args, false) {
                        Some(f) => Target::Entity(EntityId::Function(f)),
                        None => match self.external_super_name(c) {
                            Some(base) => Target::External(format!("{base}.{name}")),
                            None => Target::Unresolved,
                        },
                    }
                }
                Value::ExternalType(t) | Value::ExternalInstance(t) => {
                    Target::External(format!("{t}.{name}"))
                }
                Value::Package(_) | Value::Unknown => Target::Unresolved,
            },
        }
    }

    fn external_super_name(&self, class: ClassId) -> Option<String> {
        let r = self.r;
        r.mro(class)
            .iter()
            .find_map(|k| r.external_supers.get(k.index())?.first().cloned())
    }

    /// `name(...)` provided by `import static p.T.name;` or `import static p.T.*;`.
    fn static_import(&self, name: &str, arity: Option<u32>, args: &[ArgKind]) -> Option<Target> {
        let mut fallback = None;
        for import in self.facts.imports.iter().filter(|i| i.is_static) {
            let owner = if import.on_demand {
                import.path.as_str()
            } else {
                match import.path.rsplit_once('.') {
                    Some((owner, member)) if member == name => owner,
                    _ => continue,
                }
            };
            match self.r.resolve_fqn(owner) {
                TypeValue::Internal(c) => {
                    if let Some(f) = self.find_method(c, name, arity, args, false) {
                        return Some(Target::Entity(EntityId::Function(f)));
                    }
                }
                TypeValue::External(t) => {
                    fallback.get_or_insert(Target::External(format!("{t}.{name}")));
                }
                TypeValue::Unknown => {}
            }
        }
        fallback
    }

    fn call_target(&self, call: &JCall) -> Target {
        let r = self.r;
        let module = self.module;
        let arity = Some(call.arity);
        match &call.callee {
            JCallee::Method { receiver, name } => self.method_target(
                receiver.as_ref(),
                name,
                arity,
                &call.args,
                call.scope,
                call.pos,
                0,
            ),
            JCallee::New(ty) => match self.resolve_type(module, call.scope, ty) {
                TypeValue::Internal(c) => Target::Entity(self.constructor(c, arity, &call.args)),
                TypeValue::External(n) => Target::External(format!("{n}.{CONSTRUCTOR}")),
                TypeValue::Unknown => Target::Unresolved,
            },
            JCallee::This => match r.enclosing_type(module, call.scope) {
                Some(c) => Target::Entity(self.constructor(c, arity, &call.args)),
                None => Target::Unresolved,
            },
            JCallee::Super => {
                let Some(class) = r.enclosing_type(module, call.scope) else {
                    return Target::Unresolved;
                };
                let superclass = r.bases.get(class.index()).and_then(|bases| {
                    bases
                        .iter()
                        .filter(|b| b.relation == BaseRelation::Extends)
                        .find_map(|b| b.resolved)
                });
                match superclass {
                    Some(s) => Target::Entity(self.constructor(s, arity, &call.args)),
                    None => match r.external_supers.get(class.index()).and_then(|e| e.first()) {
                        Some(base) => Target::External(format!("{base}.{CONSTRUCTOR}")),
                        None => Target::External(format!("java.lang.Object.{CONSTRUCTOR}")),
                    },
                }
            }
            JCallee::Ref { target, name } => {
                self.reference_target(target, name, call.scope, call.pos)
            }
        }
    }

    /// `target::name`: any overload (the arity is not written).
    fn reference_target(&self, target: &JExpr, name: &str, scope: JScope, pos: u32) -> Target {
        if matches!(target, JExpr::Super) {
            return self.method_target(Some(target), name, None, &[], scope, pos, 0);
        }
        match self.eval(target, scope, pos, 0) {
            Value::Type(c) | Value::Instance(c) => {
                if name == CONSTRUCTOR {
                    return Target::Entity(self.constructor(c, None, &[]));
                }
                match self.find_method(c, name, None, &[], false) {
                    Some(f) => Target::Entity(EntityId::Function(f)),
                    None => match self.external_super_name(c) {
                        Some(base) => Target::External(format!("{base}.{name}")),
                        None => Target::Unresolved,
                    },
                }
            }
            Value::ExternalType(t) | Value::ExternalInstance(t) => {
                Target::External(format!("{t}.{name}"))
            }
            Value::Package(_) | Value::Unknown => Target::Unresolved,
        }
    }

    fn import(&self, import: &crate::lang::java::JImport) -> Import {
        let r = self.r;
        let (module, name) = match (import.on_demand, import.path.rsplit_once('.')) {
            (true, _) => (import.path.clone(), None),
            (false, Some((owner, member))) => (owner.to_string(), Some(member.to_string())),
            (false, None) => (String::new(), Some(import.path.clone())),
        };
        let target = match (import.is_static, import.on_demand) {
            (false, false) | (true, true) => match r.resolve_fqn(&import.path) {
                TypeValue::Internal(c) => ImportTarget::Class(c),
                _ if !import.is_static && r.packages.contains(&import.path) => {
                    ImportTarget::Package(import.path.clone())
                }
                _ => ImportTarget::External(import.path.clone()),
            },
            (false, true) => match r.by_fqn.get(&import.path) {
                Some(c) => ImportTarget::Class(*c),
                None if r.packages.contains(&import.path) => {
                    ImportTarget::Package(import.path.clone())
                }
                None => ImportTarget::External(import.path.clone()),
            },
            (true, false) => match (r.resolve_fqn(&module), name.as_deref()) {
                (TypeValue::Internal(c), Some(member)) => {
                    match r
                        .table(c)
                        .and_then(|t| t.methods.get(member))
                        .and_then(|m| m.first())
                    {
                        Some(first) => ImportTarget::Function(*first),
                        _ => match r.member_type(c, member) {
                            Some(inner) => ImportTarget::Class(inner),
                            None => r
                                .table(c)
                                .map_or(ImportTarget::External(import.path.clone()), |t| {
                                    ImportTarget::Attribute(ModuleId(t.module))
                                }),
                        },
                    }
                }
                _ => ImportTarget::External(import.path.clone()),
            },
        };
        Import {
            kind: if import.on_demand {
                ImportKind::Star
            } else {
                ImportKind::From
            },
            module,
            level: 0,
            name,
            alias: None,
            line: import.line,
            in_function: false,
            in_try: false,
            target,
            is_static: import.is_static,
        }
    }

    /// Internal modules this one depends on, once per distinct internal
    /// type it names (written type names, resolved supertypes, imports).
    fn references(&self) -> Vec<ModuleId> {
        let r = self.r;
        let mut types: HashSet<ClassId> = HashSet::default();
        for name in &self.facts.type_names {
            if let TypeValue::Internal(c) = self.resolve_type(self.module, JScope::Unit, name) {
                types.insert(c);
            }
        }
        for local in 0..self.facts.types.len() {
            let class = r.class_id(self.module, local as u32);
            if let Some(bases) = r.bases.get(class.index()) {
                types.extend(bases.iter().filter_map(|b| b.resolved));
            }
        }
        for import in &self.facts.imports {
            if let TypeValue::Internal(c) = r.resolve_fqn(&import.path) {
                types.insert(c);
            }
        }
        let mut out: Vec<ModuleId> = types
            .into_iter()
            .filter_map(|c| r.class_module.get(c.index()).copied())
            .filter(|m| *m != self.module)
            .collect();
        out.sort_unstable();
        out
    }

    fn route(&self, route: &crate::lang::java::JRoute) -> RouteDraft {
        let r = self.r;
        let handler = match &route.handler {
            JHandler::Method(m) => {
                HandlerDraft::Entity(EntityId::Function(r.function_id(self.module, *m)))
            }
            JHandler::Lambda(scope) => HandlerDraft::Lambda(r.caller_node(self.module, *scope)),
            JHandler::Ref { target, name } => {
                match self.reference_target(target, name, route.scope, route.pos) {
                    Target::Entity(e) => HandlerDraft::Entity(e),
                    Target::External(n) => HandlerDraft::Text(n),
                    Target::Unresolved => {
                        HandlerDraft::Text(format!("{}::{name}", target.render()))
                    }
                }
            }
            JHandler::Object(expr) => match self.eval(expr, route.scope, route.pos, 0) {
                Value::Type(c) | Value::Instance(c) => {
                    match self.find_method(c, "handle", None, &[], false) {
                        Some(f) => HandlerDraft::Entity(EntityId::Function(f)),
                        None => HandlerDraft::Entity(EntityId::Class(c)),
                    }
                }
                _ => HandlerDraft::Text(expr.render()),
            },
        };
        RouteDraft {
            method: route.method,
            path: route.path.clone(),
            framework: route.framework,
            handler,
            line: route.line,
            scope: RouteScope::Complete,
        }
    }
}

/// Whether a method with `params` can take `arity` arguments.
fn accepts(params: &[JParam], arity: u32) -> bool {
    let n = params.len();
    let arity = arity as usize;
    match params.last() {
        Some(last) if last.varargs => arity + 1 >= n,
        _ => arity == n,
    }
}

/// How well a literal argument fits a parameter type (higher is better;
/// negative means it cannot be passed).
fn arg_score(arg: ArgKind, param: &str) -> i32 {
    let param = param.strip_suffix("[]").map_or(param, |p| p);
    let exact = |names: &[&str]| names.contains(&param);
    match arg {
        ArgKind::Other => 0,
        ArgKind::Str => match param {
            "String" => 3,
            "CharSequence" | "Object" | "Comparable" | "Serializable" => 1,
            _ if is_primitive_or_box(param) => -10,
            _ => 0,
        },
        ArgKind::Int => numeric(param, "int", "Integer", &["long", "float", "double"]),
        ArgKind::Long => numeric(param, "long", "Long", &["float", "double"]),
        ArgKind::Float => numeric(param, "float", "Float", &["double"]),
        ArgKind::Double => numeric(param, "double", "Double", &[]),
        ArgKind::Char => numeric(
            param,
            "char",
            "Character",
            &["int", "long", "float", "double"],
        ),
        ArgKind::Bool => {
            if exact(&["boolean"]) {
                3
            } else if exact(&["Boolean"]) {
                2
            } else if exact(&["Object"]) {
                1
            } else if is_primitive_or_box(param) || param == "String" {
                -10
            } else {
                0
            }
        }
        ArgKind::Null => {
            if PRIMITIVES.contains(&param) {
                -10
            } else {
                1
            }
        }
    }
}

fn numeric(param: &str, primitive: &str, boxed: &str, widening: &[&str]) -> i32 {
    if param == primitive {
        3
    } else if param == boxed {
        2
    } else if widening.contains(&param) || param == "Number" || param == "Object" {
        1
    } else if is_primitive_or_box(param) || param == "String" {
        -10
    } else {
        0
    }
}

fn is_primitive_or_box(name: &str) -> bool {
    PRIMITIVES.contains(&name)
        || matches!(
            name,
            "Integer" | "Long" | "Short" | "Byte" | "Character" | "Boolean" | "Float" | "Double"
        )
}

/// Builds the public entities of one Java module.
pub(crate) struct JavaEntities<'a> {
    pub classes: Vec<crate::model::Class>,
    pub functions: Vec<crate::model::Function>,
    pub docstring: Option<&'a str>,
}

impl JavaResolver<'_> {
    /// The qualified-name prefix of a module's entities, and the `@k` a
    /// duplicate compilation unit's top-level types carry.
    fn qualify(&self, module: ModuleId, local_path: &str) -> String {
        let input = &self.inputs[module.index()];
        let package = input.facts.java().and_then(|f| f.package.as_deref());
        let path = if input.name.duplicate > 0 {
            let (first, rest) = match local_path.split_once('.') {
                Some((f, r)) => (f, Some(r)),
                None => (local_path, None),
            };
            match rest {
                Some(rest) => format!("{first}@{}.{rest}", input.name.duplicate),
                None => format!("{first}@{}", input.name.duplicate),
            }
        } else {
            local_path.to_string()
        };
        match package {
            Some(p) => format!("{p}.{path}"),
            None => path,
        }
    }

    fn scope_entity(&self, module: ModuleId, scope: JScope) -> EntityId {
        match scope {
            JScope::Unit => EntityId::Module(module),
            JScope::Type(t) => EntityId::Class(self.class_id(module, t)),
            JScope::Method(m) => EntityId::Function(self.function_id(module, m)),
        }
    }

    /// The classes and functions of `module`, with the resolved `bases` of
    /// its classes in order.
    pub(crate) fn entities<'a>(
        &self,
        module: ModuleId,
        facts: &'a JavaFacts,
        bases: &mut impl Iterator<Item = Vec<Base>>,
    ) -> JavaEntities<'a> {
        use crate::model::{Class, Function, JavaField, JavaMethod, JavaType, Param, ParamKind};
        let classes = facts
            .types
            .iter()
            .map(|t| Class {
                name: t.name.clone(),
                qualname: self.qualify(module, &t.local_path),
                module,
                parent: self.scope_entity(module, t.parent),
                bases: bases.next().unwrap_or_default(),
                decorators: t.annotations.clone(),
                docstring: t.docstring.clone(),
                methods: Vec::new(),
                span: t.span,
                java: Some(JavaType {
                    kind: t.kind,
                    modifiers: t.modifiers.clone(),
                    type_parameters: t.type_params.iter().map(|p| p.text.clone()).collect(),
                    fields: t
                        .fields
                        .iter()
                        .map(|f| JavaField {
                            name: f.name.clone(),
                            type_text: f.type_text.clone(),
                            modifiers: f.modifiers.clone(),
                            annotations: f.annotations.clone(),
                            line: f.line,
                        })
                        .collect(),
                    anonymous: t.anonymous,
                }),
            })
            .collect();
        let functions = facts
            .methods
            .iter()
            .map(|m| Function {
                name: m.name.clone(),
                qualname: self.qualify(module, &m.local_path),
                module,
                parent: self.scope_entity(module, m.parent),
                kind: m.kind,
                params: m
                    .params
                    .iter()
                    .map(|p| Param {
                        name: p.name.clone(),
                        kind: if p.varargs {
                            ParamKind::VarPositional
                        } else {
                            ParamKind::Normal
                        },
                        annotation: Some(p.type_text.clone()),
                        default: None,
                    })
                    .collect(),
                returns: m.returns.clone(),
                decorators: m.annotations.clone(),
                is_async: false,
                docstring: m.docstring.clone(),
                span: m.span,
                complexity: m.complexity,
                java: Some(JavaMethod {
                    modifiers: m.modifiers.clone(),
                    type_parameters: m.type_params.iter().map(|p| p.text.clone()).collect(),
                    throws: m.throws.clone(),
                    has_body: m.has_body,
                }),
            })
            .collect();
        JavaEntities {
            classes,
            functions,
            docstring: facts.docstring.as_deref(),
        }
    }
}
