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
//!
//! # Bounded cost
//!
//! Every step of resolution counts one work unit: a table probe, a
//! supertype visited, an MRO element produced, an overload signature
//! scored, an import examined, an expression evaluated. The units are
//! summed into `Stats::resolve_work`, and no input makes them grow faster
//! than the repository (`tests/java_adversarial.rs` checks hostile shapes
//! at two sizes):
//! - an MRO holds at most [`MAX_MRO`] types; a lookup that runs past a cut
//!   superclass chain continues through a [`ChainIndex`], which answers
//!   "nearest superclass declaring this member" in logarithmic time
//!   instead of walking the chain;
//! - each invocation is evaluated once per module, however long the chain
//!   of calls it ends (`a.b().c()...`), and so is each `var` initializer;
//! - overloads are indexed by arity and deduplicated by what literal
//!   arguments can tell apart; imports are indexed by name;
//! - every lookup that could repeat (types by scope, methods by receiver
//!   type and arity, unqualified and statically imported calls) is
//!   memoised per module.
//!
//! The bounds that can cut a lookup short are named constants; when one is
//! reached the module is named in a warning, and the affected call stays
//! unresolved rather than guessed.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::assemble::ModuleInput;
use crate::lang::java::{
    ArgKind, CONSTRUCTOR, Callee, FieldFacts, JavaFacts, Local, MethodFacts, ParamFacts, Scope,
    TypeFacts, TypeParam, erase, simple_type,
};
use crate::lang::resolver::ModuleOutput;
use crate::model::{Base, BaseRelation, ClassId, EntityId, FunctionId, ModuleId, UnresolvedCall};

use super::calls::*;
use super::index::*;
/// Evaluation steps allowed for one expression before giving up (type
/// variable bounds naming each other, `var` initializers naming each other).
pub(super) const MAX_DEPTH: u32 = 24;
/// Most types kept in one MRO (the type, its superclasses, then its
/// interfaces). Real hierarchies have well under 50 supertypes (Spring's
/// application contexts, among the deepest, have about 30); the bound keeps
/// the MROs' total size linear in the number of types, where a chain of n
/// classes would otherwise hold n²/2 entries. Members past a cut
/// superclass chain are still found through the [`ChainIndex`]; interfaces
/// past the cut are not searched.
pub(super) const MAX_MRO: usize = 128;
/// Supertype entries examined while linearizing one type: at most a few
/// per MRO element in real code. Bounds a type whose supertypes each list
/// many already-seen interfaces.
pub(super) const MAX_MRO_STEPS: usize = 4 * MAX_MRO;
/// Enclosing scopes walked outward from one scope. Extraction records at
/// most 200 levels of nesting, so only inconsistent facts reach it.
pub(super) const MAX_SCOPE_STEPS: usize = 256;
/// Overload signatures scored for one call. Real APIs have at most a few
/// dozen overloads of one arity that literal arguments can tell apart
/// (`assertEquals` has about 20); overloads whose parameters look the same
/// to literal arguments count once.
pub(super) const MAX_OVERLOADS: usize = 256;
/// On-demand imports (`import p.*;`, `import static p.T.*;`) examined for
/// one name: real files have a few dozen at most.
pub(super) const MAX_ON_DEMAND: usize = 256;
/// Superclasses whose varargs overloads do not take the call's arity,
/// stepped over past a cut MRO.
pub(super) const MAX_VARARGS_HOPS: usize = 16;
/// Same-named locals of one method stepped over to find the one visible at
/// a position. Java forbids a local to shadow another of the same method,
/// so real code needs at most a few.
pub(super) const MAX_LOCAL_HOPS: usize = 64;
/// Longest name built for a value outside the repository
/// (`java.lang.StringBuilder.append().append()...`): a chain of calls into
/// a library would otherwise build names quadratic in its length.
pub(super) const MAX_EXTERNAL_NAME: usize = 512;
/// Dots in a qualified name searched for its longest known type prefix;
/// each try hashes a prefix, so the search is quadratic in the segments.
pub(super) const MAX_NAME_SEGMENTS: usize = 256;
/// "No node / no value" in [`ChainIndex`] and local tables.
pub(super) const NO_ENTRY: u32 = u32::MAX;

/// The bounds above that can cut a lookup short, for the warning.
#[derive(Debug, Clone, Copy)]
pub(super) enum Bound {
    Mro,
    MroSteps,
    Scopes,
    Overloads,
    OnDemand,
    Varargs,
    Locals,
    ExternalName,
    NameSegments,
    Depth,
}

pub(super) const BOUNDS: [(Bound, &str); 10] = [
    (Bound::Mro, "MAX_MRO"),
    (Bound::MroSteps, "MAX_MRO_STEPS"),
    (Bound::Scopes, "MAX_SCOPE_STEPS"),
    (Bound::Overloads, "MAX_OVERLOADS"),
    (Bound::OnDemand, "MAX_ON_DEMAND"),
    (Bound::Varargs, "MAX_VARARGS_HOPS"),
    (Bound::Locals, "MAX_LOCAL_HOPS"),
    (Bound::ExternalName, "MAX_EXTERNAL_NAME"),
    (Bound::NameSegments, "MAX_NAME_SEGMENTS"),
    (Bound::Depth, "MAX_DEPTH"),
];

/// Work done for one module (or one setup task), and the bounds it hit.
/// Single-threaded: each parallel task has its own, and the totals are summed.
#[derive(Default)]
pub(super) struct ModuleWork {
    pub(super) work: Cell<u64>,
    pub(super) cuts: [Cell<u32>; BOUNDS.len()],
}

impl ModuleWork {
    pub(super) fn add(&self, units: u64) {
        self.work.set(self.work.get().saturating_add(units));
    }

    pub(super) fn tick(&self) {
        self.add(1);
    }

    pub(super) fn cut(&self, bound: Bound) {
        let cell = &self.cuts[bound as usize];
        cell.set(cell.get().saturating_add(1));
    }

    /// Logs the bounds hit, if any, naming `module`: as a warning for the
    /// first [`MAX_WARNINGS`] modules of an analysis (`warned` counts
    /// them), at debug level after that.
    pub(super) fn report(&self, module: &str, what: &str, warned: &AtomicU32) {
        let hits: Vec<String> = BOUNDS
            .iter()
            .filter_map(|(bound, name)| {
                let n = self.cuts[*bound as usize].get();
                (n > 0).then(|| format!("{name}×{n}"))
            })
            .collect();
        if hits.is_empty() {
            return;
        }
        let bounds = hits.join(", ");
        match warned.fetch_add(1, Ordering::Relaxed) {
            n if n < MAX_WARNINGS => tracing::warn!(
                module,
                %bounds,
                "Java {what} reached a resolution bound; the lookups it cut short stay unresolved"
            ),
            MAX_WARNINGS => tracing::warn!(
                module,
                %bounds,
                "Java {what} reached a resolution bound; further modules that do are logged at debug level"
            ),
            _ => tracing::debug!(
                module,
                %bounds,
                "Java {what} reached a resolution bound"
            ),
        }
    }
}

/// Modules named in warnings about bounds, per analysis.
pub(super) const MAX_WARNINGS: u32 = 20;

/// Types every Java file sees without an import (`java.lang`), for naming
/// calls into them when the JDK itself is not part of the repository.
pub(super) const JAVA_LANG: &[&str] = &[
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

pub(super) const PRIMITIVES: &[&str] = &[
    "int", "long", "short", "byte", "char", "boolean", "float", "double", "void",
];

/// What a type name denotes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ResolvedType {
    Internal(ClassId),
    /// Outside the repository: the fully qualified name when an import or
    /// `java.lang` tells it, else the name as written.
    External(String),
    Unknown,
}

/// What an expression evaluates to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ExprType {
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
#[derive(Debug, Clone)]
pub(super) enum CallTarget {
    Entity(EntityId),
    External(String),
    Unresolved,
}

/// Parameter types as literal arguments see them ([`arg_score`]): the
/// index of the simple name (one `[]` stripped) in this list, 0 for any
/// other type.
pub(super) const CATEGORIES: &[&str] = &[
    "",
    "String",
    "CharSequence",
    "Object",
    "Comparable",
    "Serializable",
    "Number",
    "int",
    "long",
    "short",
    "byte",
    "char",
    "boolean",
    "float",
    "double",
    "void",
    "Integer",
    "Long",
    "Short",
    "Byte",
    "Character",
    "Boolean",
    "Float",
    "Double",
];

pub(super) fn category(type_text: &str) -> u8 {
    let erased = erase(type_text);
    let simple = simple_type(&erased);
    let simple = simple.strip_suffix("[]").unwrap_or(simple);
    CATEGORIES
        .iter()
        .position(|c| *c == simple)
        .and_then(|i| u8::try_from(i).ok())
        .unwrap_or(0)
}

/// A variable found by name.
pub(super) enum VarDecl<'f> {
    Local(&'f Local),
    Param(ModuleId, Scope, &'f ParamFacts),
    Field(ModuleId, Scope, &'f FieldFacts),
}

/// Memo tables for type names, one set per module being resolved (any
/// module's names can be looked up through them: return and field types
/// of other units are resolved in those units).
#[derive(Default)]
pub(super) struct TypeCaches<'f> {
    /// What a simple name means at the top of a unit.
    pub(super) unit: RefCell<HashMap<ModuleId, HashMap<String, ResolvedType>>>,
    /// What a written name means in a scope.
    pub(super) resolved: RefCell<HashMap<(ModuleId, Scope), HashMap<String, ResolvedType>>>,
    /// Type parameters of scopes that declare many, by name.
    pub(super) params: RefCell<HashMap<(ModuleId, Scope), TypeParams<'f>>>,
}

/// The type parameters of one scope by name.
pub(super) type TypeParams<'f> = HashMap<&'f str, &'f TypeParam>;

/// Scopes with more type parameters than this get them indexed by name.
pub(super) const INDEXED_TYPE_PARAMS: usize = 8;

/// A type's resolved supertypes, and the names of those outside the repository.
pub(super) type Supertypes = (Vec<Base>, Vec<String>);
/// A type's MRO, and the superclass it was cut before (see [`JavaResolver::linearize`]).
pub(super) type Linearized = (Vec<ClassId>, Option<ClassId>);

pub(crate) struct JavaResolver<'f> {
    pub(super) inputs: &'f [ModuleInput],
    pub(super) class_base: &'f [u32],
    pub(super) function_base: &'f [u32],
    pub(super) class_module: &'f [ModuleId],
    pub(super) function_module: &'f [ModuleId],
    /// Named (not local, not anonymous) types by fully qualified name.
    pub(super) by_fqn: HashMap<String, ClassId>,
    /// Packages with internal types, and every prefix of them.
    pub(super) packages: HashSet<String>,
    /// Top-level types by package ("" for the default package) and simple name.
    pub(super) by_package: HashMap<&'f str, HashMap<&'f str, ClassId>>,
    /// Per module: types by (enclosing scope, simple name).
    pub(super) scoped_types: Vec<HashMap<(Scope, &'f str), ClassId>>,
    /// Per module: its imports by name.
    pub(super) imports: Vec<ImportIndex<'f>>,
    /// Per class id; `None` for Python classes.
    pub(super) types: Vec<Option<TypeTable<'f>>>,
    /// Names some internal type declares a method, field or member type
    /// under: lookups of other names stop at once.
    pub(super) method_names: HashSet<&'f str>,
    pub(super) field_names: HashSet<&'f str>,
    pub(super) member_type_names: HashSet<&'f str>,
    /// Resolved supertypes per class id (empty for Python classes).
    pub(crate) bases: Vec<Vec<Base>>,
    /// Fully qualified names of supertypes outside the repository.
    pub(super) external_supers: Vec<Vec<String>>,
    /// Superclass, then its superclasses, then interfaces breadth first
    /// (at most [`MAX_MRO`]).
    pub(crate) mro: Vec<Vec<ClassId>>,
    /// Per class id: the superclass its MRO's chain was cut before, if any.
    pub(super) continuation: Vec<Option<ClassId>>,
    /// Per class id: the superclass member lookup follows (cycles broken).
    pub(super) superclass: Vec<Option<ClassId>>,
    pub(super) chain: ChainIndex<'f>,
    pub(super) setup_work: u64,
    /// Modules warned about so far (see [`ModuleWork::report`]).
    pub(super) warned: AtomicU32,
}

/// Every Java unit's type tables, merged in path order (the first of two
/// units declaring the same type wins), with the work spent.
struct MergedUnits<'f> {
    by_fqn: HashMap<String, ClassId>,
    packages: HashSet<String>,
    by_package: HashMap<&'f str, HashMap<&'f str, ClassId>>,
    scoped_types: Vec<HashMap<(Scope, &'f str), ClassId>>,
    types: Vec<Option<TypeTable<'f>>>,
    method_names: HashSet<&'f str>,
    field_names: HashSet<&'f str>,
    member_type_names: HashSet<&'f str>,
    work: u64,
}

impl<'f> MergedUnits<'f> {
    /// `units` has one entry per module (`None` for a module that is not
    /// Java); `class_count` counts every language's classes.
    fn merge(units: Vec<Option<UnitIndex<'f>>>, class_count: usize) -> Self {
        let mut work = 0u64;
        let mut by_fqn: HashMap<String, ClassId> = HashMap::default();
        let mut by_package: HashMap<&'f str, HashMap<&'f str, ClassId>> = HashMap::default();
        let mut packages: HashSet<String> = HashSet::default();
        let mut scoped_types = Vec::with_capacity(units.len());
        let mut types: Vec<Option<TypeTable<'f>>> = (0..class_count).map(|_| None).collect();
        let mut method_names: HashSet<&'f str> = HashSet::default();
        let mut field_names: HashSet<&'f str> = HashSet::default();
        let mut member_type_names: HashSet<&'f str> = HashSet::default();
        for unit in units {
            let Some(unit) = unit else {
                scoped_types.push(HashMap::default());
                continue;
            };
            work += unit.work;
            if let Some(package) = unit.package {
                let mut prefix = package;
                while packages.insert(prefix.to_string()) {
                    work += 1;
                    match prefix.rsplit_once('.') {
                        Some((p, _)) => prefix = p,
                        None => break,
                    }
                }
            }
            work += unit.fqns.len() as u64 + unit.top_level.len() as u64;
            for (fqn, id) in unit.fqns {
                by_fqn.entry(fqn).or_insert(id);
            }
            let top = by_package.entry(unit.package.unwrap_or("")).or_default();
            for (name, id) in unit.top_level {
                top.entry(name).or_insert(id);
            }
            for (id, table) in unit.tables {
                work +=
                    (table.methods.len() + table.fields.len() + table.member_types.len()) as u64;
                method_names.extend(table.methods.keys().copied());
                field_names.extend(table.fields.keys().copied());
                member_type_names.extend(table.member_types.keys().copied());
                if let Some(slot) = types.get_mut(id.index()) {
                    *slot = Some(table);
                }
            }
            scoped_types.push(unit.scoped);
        }
        MergedUnits {
            by_fqn,
            packages,
            by_package,
            scoped_types,
            types,
            method_names,
            field_names,
            member_type_names,
            work,
        }
    }
}

impl<'f> JavaResolver<'f> {
    /// Work units spent building the type tables, supertypes and MROs.
    pub(crate) fn setup_work(&self) -> u64 {
        self.setup_work
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
        let imports: Vec<ImportIndex<'f>> = inputs
            .par_iter()
            .map(|input| input.facts.java().map(ImportIndex::new).unwrap_or_default())
            .collect();
        let mut work: u64 = inputs
            .iter()
            .filter_map(|input| input.facts.java())
            .map(|facts| facts.imports.len() as u64)
            .sum();
        let merged = MergedUnits::merge(units, class_count);
        work += merged.work;
        let mut resolver = JavaResolver {
            inputs,
            class_base,
            function_base,
            class_module,
            function_module,
            by_fqn: merged.by_fqn,
            packages: merged.packages,
            by_package: merged.by_package,
            scoped_types: merged.scoped_types,
            imports,
            types: merged.types,
            method_names: merged.method_names,
            field_names: merged.field_names,
            member_type_names: merged.member_type_names,
            bases: vec![Vec::new(); class_count],
            external_supers: vec![Vec::new(); class_count],
            mro: vec![Vec::new(); class_count],
            continuation: vec![None; class_count],
            superclass: vec![None; class_count],
            chain: ChainIndex::default(),
            setup_work: 0,
            warned: AtomicU32::new(0),
        };
        let (supertypes_work, tallies) = resolver.supertypes_and_mros();
        work = work.saturating_add(supertypes_work);
        let t = ModuleWork::default();
        resolver.superclasses(&t);
        resolver.chain = resolver.chain_index(&t);
        work = work.saturating_add(t.work.get());
        resolver.report_cuts(&tallies);
        resolver.setup_work = work;
        resolver
    }

    /// Resolves every Java type's supertypes and MRO. Supertypes can be
    /// member types inherited from other supertypes, so they are resolved
    /// twice: lexically first, then with the first MROs (the second time
    /// only matters, and MROs are only recomputed, if a supertype changed).
    /// Returns the work spent and each module's tallies of the last round.
    fn supertypes_and_mros(&mut self) -> (u64, Vec<[ModuleWork; 2]>) {
        let inputs = self.inputs;
        let class_base = self.class_base;
        let mut work = 0u64;
        let java_types = |m: usize| inputs[m].facts.java().map_or(0, |f| f.types.len());
        let mut base_tallies: Vec<ModuleWork> = Vec::new();
        let mut mro_tallies: Vec<ModuleWork> = Vec::new();
        for round in 0..2 {
            let resolved: Vec<(Vec<Supertypes>, ModuleWork)> = (0..inputs.len())
                .into_par_iter()
                .map(|m| {
                    let t = ModuleWork::default();
                    let caches = TypeCaches::default();
                    let classes = (0..java_types(m))
                        .map(|local| {
                            self.class_bases(ClassId(class_base[m] + local as u32), &caches, &t)
                        })
                        .collect();
                    (classes, t)
                })
                .collect();
            let mut changed = false;
            base_tallies.clear();
            for (m, (classes, t)) in resolved.into_iter().enumerate() {
                work = work.saturating_add(t.work.get());
                base_tallies.push(t);
                for (local, (bases, external)) in classes.into_iter().enumerate() {
                    let c = class_base[m] as usize + local;
                    if let (Some(slot), Some(ext)) =
                        (self.bases.get_mut(c), self.external_supers.get_mut(c))
                    {
                        changed |= *slot != bases || *ext != external;
                        *slot = bases;
                        *ext = external;
                    }
                }
            }
            if round > 0 && !changed {
                break;
            }
            let linearized: Vec<(Vec<Linearized>, ModuleWork)> = (0..inputs.len())
                .into_par_iter()
                .map(|m| {
                    let t = ModuleWork::default();
                    let classes = (0..java_types(m))
                        .map(|local| self.linearize(ClassId(class_base[m] + local as u32), &t))
                        .collect();
                    (classes, t)
                })
                .collect();
            mro_tallies.clear();
            for (m, (classes, t)) in linearized.into_iter().enumerate() {
                work = work.saturating_add(t.work.get());
                mro_tallies.push(t);
                for (local, (mro, continuation)) in classes.into_iter().enumerate() {
                    let c = class_base[m] as usize + local;
                    if let Some(slot) = self.mro.get_mut(c) {
                        *slot = mro;
                    }
                    if let Some(slot) = self.continuation.get_mut(c) {
                        *slot = continuation;
                    }
                }
            }
        }
        let tallies = base_tallies
            .into_iter()
            .zip(mro_tallies)
            .map(|(bases, mros)| [bases, mros])
            .collect();
        (work, tallies)
    }

    /// Warns once per unit whose supertypes or MROs were cut at a budget.
    fn report_cuts(&self, tallies: &[[ModuleWork; 2]]) {
        for (m, input) in self.inputs.iter().enumerate() {
            let cuts = ModuleWork::default();
            for tally in tallies.get(m).into_iter().flatten() {
                for (mine, theirs) in cuts.cuts.iter().zip(&tally.cuts) {
                    mine.set(mine.get().saturating_add(theirs.get()));
                }
            }
            cuts.report(&input.rel_path, "supertypes of unit", &self.warned);
        }
    }

    pub(crate) fn is_java_class(&self, class: ClassId) -> bool {
        matches!(self.types.get(class.index()), Some(Some(_)))
    }

    pub(super) fn is_interface(&self, class: ClassId) -> bool {
        self.table(class).is_some_and(|t| t.is_interface)
    }

    pub(super) fn facts(&self, module: ModuleId) -> Option<&'f JavaFacts> {
        self.inputs.get(module.index())?.facts.java()
    }

    pub(super) fn class_id(&self, module: ModuleId, local: u32) -> ClassId {
        ClassId(self.class_base[module.index()] + local)
    }

    pub(super) fn function_id(&self, module: ModuleId, local: u32) -> FunctionId {
        FunctionId(self.function_base[module.index()] + local)
    }

    pub(super) fn table(&self, class: ClassId) -> Option<&TypeTable<'f>> {
        self.types.get(class.index())?.as_ref()
    }

    pub(super) fn type_facts(&self, class: ClassId) -> Option<(ModuleId, &'f TypeFacts)> {
        let table = self.table(class)?;
        let module = ModuleId(table.module);
        Some((module, self.facts(module)?.types.get(table.local as usize)?))
    }

    pub(super) fn method_facts(&self, function: FunctionId) -> Option<(ModuleId, &'f MethodFacts)> {
        let module = *self.function_module.get(function.index())?;
        let local = function
            .0
            .checked_sub(*self.function_base.get(module.index())?)?;
        Some((module, self.facts(module)?.methods.get(local as usize)?))
    }

    pub(super) fn parent_scope(&self, module: ModuleId, scope: Scope) -> Option<Scope> {
        let facts = self.facts(module)?;
        match scope {
            Scope::Unit => None,
            Scope::Type(t) => facts.types.get(t as usize).map(|t| t.parent),
            Scope::Method(m) => facts.methods.get(m as usize).map(|m| m.parent),
        }
    }

    /// The innermost type enclosing `scope` (the type itself for a type scope).
    pub(super) fn enclosing_type(
        &self,
        module: ModuleId,
        scope: Scope,
        t: &ModuleWork,
    ) -> Option<ClassId> {
        let mut current = Some(scope);
        for _ in 0..MAX_SCOPE_STEPS {
            t.tick();
            let s = current?;
            if let Scope::Type(ty) = s {
                return Some(self.class_id(module, ty));
            }
            current = self.parent_scope(module, s);
        }
        t.cut(Bound::Scopes);
        None
    }

    pub(super) fn class_bases(
        &self,
        class: ClassId,
        caches: &TypeCaches<'f>,
        t: &ModuleWork,
    ) -> Supertypes {
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
                t.add(1 + facts.type_params.len() as u64);
                let value = if facts.type_params.iter().any(|p| p.name == s.name) {
                    ResolvedType::Unknown
                } else {
                    self.resolve_type(module, scope, &s.name, caches, t, 0)
                };
                let resolved = match value {
                    ResolvedType::Internal(c) if c != class => Some(c),
                    ResolvedType::External(name) => {
                        external.push(name);
                        None
                    }
                    _ => None,
                };
                // `new T() {}` implements T when T is an interface.
                let relation = match (facts.anonymous, resolved) {
                    (true, Some(c)) if self.is_interface(c) => BaseRelation::Implements,
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

    /// The superclass a class's MRO continues with: its first `extends`
    /// that resolves to a class (interfaces have none).
    pub(super) fn direct_superclass(&self, class: ClassId, t: &ModuleWork) -> Option<ClassId> {
        if self.is_interface(class) {
            return None;
        }
        self.bases.get(class.index())?.iter().find_map(|b| {
            t.tick();
            match (b.relation, b.resolved) {
                (BaseRelation::Extends, Some(c)) if !self.is_interface(c) => Some(c),
                _ => None,
            }
        })
    }

    /// The class, its superclass chain, then every interface breadth first,
    /// at most [`MAX_MRO`] types; and the superclass the chain was cut
    /// before, if it was.
    pub(super) fn linearize(&self, class: ClassId, t: &ModuleWork) -> Linearized {
        if !self.is_java_class(class) {
            return (Vec::new(), None);
        }
        t.tick();
        let mut order = vec![class];
        let mut seen: HashSet<ClassId> = HashSet::default();
        seen.insert(class);
        let mut continuation = None;
        let mut current = class;
        while let Some(s) = self.direct_superclass(current, t) {
            if !seen.insert(s) {
                break;
            }
            if order.len() >= MAX_MRO {
                continuation = Some(s);
                t.cut(Bound::Mro);
                break;
            }
            t.tick();
            order.push(s);
            current = s;
        }
        let mut next = 0;
        let mut steps = 0;
        'bfs: while let Some(&c) = order.get(next) {
            next += 1;
            for base in self.bases.get(c.index()).map_or(&[][..], Vec::as_slice) {
                steps += 1;
                t.tick();
                if steps > MAX_MRO_STEPS {
                    t.cut(Bound::MroSteps);
                    break 'bfs;
                }
                if let Some(b) = base.resolved
                    && !seen.contains(&b)
                {
                    if order.len() >= MAX_MRO {
                        if continuation.is_none() {
                            t.cut(Bound::Mro);
                        }
                        break 'bfs;
                    }
                    seen.insert(b);
                    order.push(b);
                }
            }
        }
        (order, continuation)
    }

    /// Fills [`JavaResolver::superclass`], breaking `extends` cycles.
    pub(super) fn superclasses(&mut self, t: &ModuleWork) {
        let n = self.types.len();
        let mut superclass: Vec<Option<ClassId>> = (0..n)
            .map(|c| self.direct_superclass(ClassId(c as u32), t))
            .collect();
        // 0: not visited, 1: on the current path, 2: done.
        let mut state = vec![0u8; n];
        let mut path = Vec::new();
        for start in 0..n {
            let mut at = Some(start);
            while let Some(c) = at
                && state.get(c) == Some(&0)
            {
                t.tick();
                state[c] = 1;
                path.push(c);
                at = superclass[c].map(ClassId::index);
            }
            if let Some(c) = at
                && state.get(c) == Some(&1)
                && let Some(&last) = path.last()
            {
                // `c` is on the path just walked: the last step closed a cycle.
                superclass[last] = None;
            }
            for c in path.drain(..) {
                state[c] = 2;
            }
        }
        self.superclass = superclass;
    }

    /// The members a class declares, as [`ChainIndex`] keys.
    pub(super) fn own_keys(&self, class: ClassId) -> Vec<MemberKey<'f>> {
        let mut keys = Vec::new();
        if let Some(table) = self.table(class) {
            for (name, overloads) in &table.methods {
                keys.push(MemberKey::AnyMethod(name));
                let mut last = None;
                for c in &overloads.fixed {
                    if last != Some(c.params) {
                        keys.push(MemberKey::Method(name, c.params));
                        last = Some(c.params);
                    }
                }
                if !overloads.varargs.is_empty() {
                    keys.push(MemberKey::Varargs(name));
                }
            }
            keys.extend(table.fields.keys().map(|name| MemberKey::Field(name)));
            keys.extend(
                table
                    .member_types
                    .keys()
                    .map(|name| MemberKey::MemberType(name)),
            );
        }
        if self
            .external_supers
            .get(class.index())
            .is_some_and(|e| !e.is_empty())
        {
            keys.push(MemberKey::ExternalSuper);
        }
        keys
    }

    /// Versions for the superclasses some cut MRO continues into (and their
    /// superclasses); empty when no MRO was cut in its superclass chain.
    pub(super) fn chain_index(&self, t: &ModuleWork) -> ChainIndex<'f> {
        let n = self.types.len();
        let mut marked = vec![false; n];
        let mut any = false;
        for d in self.continuation.iter().flatten() {
            let mut at = Some(*d);
            while let Some(x) = at {
                t.tick();
                match marked.get_mut(x.index()) {
                    Some(m) if !*m => *m = true,
                    _ => break,
                }
                any = true;
                at = self.superclass.get(x.index()).copied().flatten();
            }
        }
        if !any {
            return ChainIndex::default();
        }
        // Distance from the top of the chain (marked sets are closed upward).
        let mut depth = vec![NO_ENTRY; n];
        let mut path = Vec::new();
        for c in (0..n).filter(|c| marked[*c]) {
            let mut at = Some(c);
            while let Some(x) = at {
                if depth[x] != NO_ENTRY {
                    break;
                }
                t.tick();
                path.push(x);
                at = self.superclass[x].map(ClassId::index);
            }
            let mut d = at.map_or(0, |x| depth[x].saturating_add(1));
            for x in path.drain(..).rev() {
                depth[x] = d;
                d = d.saturating_add(1);
            }
        }
        let mut order: Vec<usize> = (0..n).filter(|c| marked[*c]).collect();
        order.sort_by_key(|c| depth[*c]);
        let own: Vec<Vec<MemberKey<'f>>> = order
            .iter()
            .map(|c| self.own_keys(ClassId(*c as u32)))
            .collect();
        let mut index = ChainIndex::default();
        for key in own.iter().flatten() {
            t.tick();
            let next = u32::try_from(index.keys.len()).unwrap_or(NO_ENTRY);
            index.keys.entry(*key).or_insert(next);
        }
        index.width =
            u32::try_from(index.keys.len().max(1).next_power_of_two()).unwrap_or(NO_ENTRY);
        index.nodes = vec![[0, 0, NO_ENTRY]];
        index.roots = vec![0; n];
        let levels = u64::from(u32::BITS - index.width.leading_zeros());
        for (c, keys) in order.iter().zip(&own) {
            let mut root = self.superclass[*c].map_or(0, |s| index.roots[s.index()]);
            for key in keys {
                t.add(levels);
                if let Some(&k) = index.keys.get(key) {
                    root = index.insert(root, 0, index.width, k, *c as u32);
                }
            }
            index.roots[*c] = root;
        }
        index.depth = depth;
        index
    }

    pub(super) fn mro(&self, class: ClassId) -> &[ClassId] {
        self.mro.get(class.index()).map_or(&[], Vec::as_slice)
    }

    /// The first type in `class`'s lookup order for which `probe` gives a
    /// value: its MRO (the type alone while MROs are being computed), then,
    /// past a superclass chain cut at [`MAX_MRO`], the nearest superclass
    /// declaring `key`.
    pub(super) fn first_in_order<T>(
        &self,
        class: ClassId,
        key: MemberKey<'_>,
        t: &ModuleWork,
        mut probe: impl FnMut(ClassId, &TypeTable<'f>) -> Option<T>,
    ) -> Option<T> {
        let own = [class];
        let mro = self.mro(class);
        let order = if mro.is_empty() { &own[..] } else { mro };
        for &k in order {
            t.tick();
            if let Some(table) = self.table(k)
                && let Some(value) = probe(k, table)
            {
                return Some(value);
            }
        }
        let next = self.continuation.get(class.index()).copied().flatten()?;
        let found = self.chain.nearest(next, key, t)?;
        probe(found, self.table(found)?)
    }

    /// A member type named `name` of `class` or of its supertypes.
    pub(super) fn member_type(
        &self,
        class: ClassId,
        name: &str,
        t: &ModuleWork,
    ) -> Option<ClassId> {
        t.tick();
        if !self.member_type_names.contains(name) {
            return None;
        }
        self.first_in_order(class, MemberKey::MemberType(name), t, |_, table| {
            table.member_types.get(name).copied()
        })
    }

    /// A field named `name` of `class` or of its supertypes, with the scope
    /// its type is written in.
    pub(super) fn field(
        &self,
        class: ClassId,
        name: &str,
        t: &ModuleWork,
    ) -> Option<(ModuleId, Scope, &'f FieldFacts)> {
        t.tick();
        if !self.field_names.contains(name) {
            return None;
        }
        self.first_in_order(class, MemberKey::Field(name), t, |_, table| {
            let field = table.fields.get(name)?;
            Some((ModuleId(table.module), Scope::Type(table.local), *field))
        })
    }

    /// The first supertype outside the repository in `class`'s lookup order.
    pub(super) fn external_super(&self, class: ClassId, t: &ModuleWork) -> Option<String> {
        self.first_in_order(class, MemberKey::ExternalSuper, t, |k, _| {
            self.external_supers.get(k.index())?.first().cloned()
        })
    }

    /// The best method named `name` of `class` (or its supertypes after it
    /// when `skip_self`) for `arity` arguments (any arity when `None`): the
    /// first type in lookup order with an overload that takes the arity,
    /// then its best overload for the literal argument kinds.
    pub(super) fn find_method(
        &self,
        class: ClassId,
        name: &str,
        arity: Option<u32>,
        args: &[ArgKind],
        skip_self: bool,
        t: &ModuleWork,
    ) -> Option<FunctionId> {
        t.tick();
        if !self.method_names.contains(name) {
            return None;
        }
        let own = [class];
        let mro = self.mro(class);
        let order = if mro.is_empty() { &own[..] } else { mro };
        for &k in order.iter().skip(usize::from(skip_self)) {
            t.tick();
            if let Some(overloads) = self.table(k).and_then(|table| table.methods.get(name))
                && let Some(best) = overloads.best(arity, args, t)
            {
                return Some(best);
            }
        }
        let next = self.continuation.get(class.index()).copied().flatten()?;
        let declaring = match arity {
            None => self.chain.nearest(next, MemberKey::AnyMethod(name), t)?,
            Some(arity) => {
                let exact = self.chain.nearest(next, MemberKey::Method(name, arity), t);
                let mut varargs = None;
                let mut from = Some(next);
                for hop in 0..=MAX_VARARGS_HOPS {
                    let Some(at) = from else { break };
                    let Some(found) = self.chain.nearest(at, MemberKey::Varargs(name), t) else {
                        break;
                    };
                    let takes = self
                        .table(found)
                        .and_then(|table| table.methods.get(name))
                        .is_some_and(|o| o.takes(arity));
                    if takes {
                        varargs = Some(found);
                        break;
                    }
                    if hop == MAX_VARARGS_HOPS {
                        t.cut(Bound::Varargs);
                    }
                    from = self.superclass.get(found.index()).copied().flatten();
                }
                let depth = |c: ClassId| self.chain.depth.get(c.index()).copied().unwrap_or(0);
                match (exact, varargs) {
                    (Some(e), Some(v)) => {
                        if depth(v) > depth(e) {
                            v
                        } else {
                            e
                        }
                    }
                    (Some(c), None) | (None, Some(c)) => c,
                    (None, None) => return None,
                }
            }
        };
        self.table(declaring)?
            .methods
            .get(name)?
            .best(arity, args, t)
    }

    /// Resolves a written (erased) type name in `scope` of `module`.
    pub(super) fn resolve_type(
        &self,
        module: ModuleId,
        scope: Scope,
        name: &str,
        caches: &TypeCaches<'f>,
        t: &ModuleWork,
        depth: u32,
    ) -> ResolvedType {
        if name.ends_with(']') || PRIMITIVES.contains(&name) || name.is_empty() {
            return ResolvedType::Unknown;
        }
        if depth > MAX_DEPTH {
            t.cut(Bound::Depth);
            return ResolvedType::Unknown;
        }
        t.tick();
        if let Some(value) = caches
            .resolved
            .borrow()
            .get(&(module, scope))
            .and_then(|names| names.get(name))
        {
            return value.clone();
        }
        let (head, rest) = match name.split_once('.') {
            Some((h, r)) => (h, Some(r)),
            None => (name, None),
        };
        let mut value = self.lexical_type(module, scope, head, caches, t, depth);
        if value == ResolvedType::Unknown {
            let cached = caches
                .unit
                .borrow()
                .get(&module)
                .and_then(|names| names.get(head))
                .cloned();
            value = match cached {
                Some(v) => v,
                None => {
                    let v = self.unit_type(module, head, t);
                    caches
                        .unit
                        .borrow_mut()
                        .entry(module)
                        .or_default()
                        .insert(head.to_string(), v.clone());
                    v
                }
            };
        }
        let value = match (rest, value) {
            (None, value) => value,
            (Some(_), ResolvedType::Unknown) => self.resolve_fqn(name, t),
            (Some(rest), value) => self.member_path(value, rest, t),
        };
        caches
            .resolved
            .borrow_mut()
            .entry((module, scope))
            .or_default()
            .insert(name.to_string(), value.clone());
        value
    }

    /// Applies `Inner.Deeper` member segments to a resolved type.
    pub(super) fn member_path(
        &self,
        mut value: ResolvedType,
        rest: &str,
        t: &ModuleWork,
    ) -> ResolvedType {
        for segment in rest.split('.') {
            t.tick();
            value = match value {
                ResolvedType::Internal(c) => match self.member_type(c, segment, t) {
                    Some(inner) => ResolvedType::Internal(inner),
                    None => ResolvedType::Unknown,
                },
                ResolvedType::External(outer) => {
                    ResolvedType::External(format!("{outer}.{segment}"))
                }
                ResolvedType::Unknown => return ResolvedType::Unknown,
            };
        }
        value
    }

    /// The type parameter `name` declared by `scope` itself, if any.
    pub(super) fn type_param(
        &self,
        module: ModuleId,
        scope: Scope,
        name: &str,
        caches: &TypeCaches<'f>,
        t: &ModuleWork,
    ) -> Option<&'f TypeParam> {
        let facts = self.facts(module)?;
        let params = match scope {
            Scope::Method(m) => &facts.methods.get(m as usize)?.type_params,
            Scope::Type(ty) => &facts.types.get(ty as usize)?.type_params,
            Scope::Unit => return None,
        };
        if params.len() <= INDEXED_TYPE_PARAMS {
            t.add(params.len() as u64);
            return params.iter().find(|p| p.name == name);
        }
        t.tick();
        let mut indexed = caches.params.borrow_mut();
        let by_name = indexed.entry((module, scope)).or_insert_with(|| {
            t.add(params.len() as u64);
            let mut by_name: HashMap<&'f str, &'f TypeParam> = HashMap::default();
            for p in params {
                by_name.entry(p.name.as_str()).or_insert(p);
            }
            by_name
        });
        by_name.get(name).copied()
    }

    /// Type variables, local types and member types visible from `scope`.
    pub(super) fn lexical_type(
        &self,
        module: ModuleId,
        scope: Scope,
        name: &str,
        caches: &TypeCaches<'f>,
        t: &ModuleWork,
        depth: u32,
    ) -> ResolvedType {
        let Some(scoped) = self.scoped_types.get(module.index()) else {
            return ResolvedType::Unknown;
        };
        let mut current = Some(scope);
        let mut steps = 0;
        while let Some(s) = current {
            steps += 1;
            t.tick();
            if steps > MAX_SCOPE_STEPS {
                t.cut(Bound::Scopes);
                break;
            }
            if let Some(param) = self.type_param(module, s, name, caches, t) {
                // A type variable stands for its bound.
                return match &param.bound {
                    Some(bound) if bound != name => {
                        let outer = self.parent_scope(module, s).unwrap_or(Scope::Unit);
                        // `<A extends B, B extends A>` must not loop.
                        self.resolve_type(module, outer, bound, caches, t, depth + 1)
                    }
                    _ => ResolvedType::Unknown,
                };
            }
            match s {
                Scope::Method(_) => {
                    if let Some(c) = scoped.get(&(s, name)) {
                        return ResolvedType::Internal(*c);
                    }
                }
                Scope::Type(ty) => {
                    if let Some(c) = self.member_type(self.class_id(module, ty), name, t) {
                        return ResolvedType::Internal(c);
                    }
                }
                Scope::Unit => {}
            }
            current = self.parent_scope(module, s);
        }
        ResolvedType::Unknown
    }

    /// What a simple type name means at the top of a compilation unit.
    pub(super) fn unit_type(&self, module: ModuleId, name: &str, t: &ModuleWork) -> ResolvedType {
        let Some(facts) = self.facts(module) else {
            return ResolvedType::Unknown;
        };
        t.tick();
        if let Some(c) = self
            .scoped_types
            .get(module.index())
            .and_then(|scoped| scoped.get(&(Scope::Unit, name)))
        {
            return ResolvedType::Internal(*c);
        }
        let Some(imports) = self.imports.get(module.index()) else {
            return ResolvedType::Unknown;
        };
        if let Some(path) = imports.single.get(name) {
            return self.resolve_fqn(path, t);
        }
        if let Some(c) = self.top_level(facts.package.as_deref().unwrap_or(""), name) {
            return ResolvedType::Internal(c);
        }
        // On-demand imports and static imports of a member type, in source order.
        let static_type = imports.static_single.get(name).and_then(|list| {
            list.iter().find_map(|(position, import)| {
                t.tick();
                self.by_fqn
                    .get(import.path.as_str())
                    .map(|c| (*position, *c))
            })
        });
        let limit = static_type.map_or(usize::MAX, |(position, _)| position);
        for (i, (position, import)) in imports.on_demand.iter().enumerate() {
            if *position > limit {
                break;
            }
            if i >= MAX_ON_DEMAND {
                t.cut(Bound::OnDemand);
                break;
            }
            t.tick();
            // `import p.*;` (a package) or `import p.T.*;` (T's members).
            let found = self.top_level(&import.path, name).or_else(|| {
                let owner = self.by_fqn.get(import.path.as_str())?;
                self.member_type(*owner, name, t)
            });
            if let Some(c) = found {
                return ResolvedType::Internal(c);
            }
        }
        if let Some((_, c)) = static_type {
            return ResolvedType::Internal(c);
        }
        if let Some(c) = self.top_level("java.lang", name) {
            return ResolvedType::Internal(c);
        }
        if JAVA_LANG.contains(&name) {
            return ResolvedType::External(format!("java.lang.{name}"));
        }
        ResolvedType::Unknown
    }

    /// The top-level type `name` of `package` ("" for the default package).
    pub(super) fn top_level(&self, package: &str, name: &str) -> Option<ClassId> {
        self.by_package.get(package)?.get(name).copied()
    }

    /// A fully qualified name: the longest prefix that is a known type, then members.
    pub(super) fn resolve_fqn(&self, path: &str, t: &ModuleWork) -> ResolvedType {
        t.tick();
        if let Some(c) = self.by_fqn.get(path) {
            return ResolvedType::Internal(*c);
        }
        let mut end = path.len();
        let mut tries = 0;
        while let Some(dot) = path.get(..end).and_then(|p| p.rfind('.')) {
            tries += 1;
            if tries > MAX_NAME_SEGMENTS {
                t.cut(Bound::NameSegments);
                break;
            }
            t.tick();
            end = dot;
            if let (Some(prefix), Some(rest)) = (path.get(..end), path.get(end + 1..))
                && let Some(c) = self.by_fqn.get(prefix)
            {
                return self.member_path(ResolvedType::Internal(*c), rest, t);
            }
        }
        ResolvedType::External(path.to_string())
    }

    /// The entity that runs code written in `scope`: the nearest method,
    /// else the module (field initializers and initializer blocks).
    pub(super) fn caller_node(&self, module: ModuleId, scope: Scope, t: &ModuleWork) -> EntityId {
        let mut current = Some(scope);
        for _ in 0..MAX_SCOPE_STEPS {
            t.tick();
            match current {
                Some(Scope::Method(m)) => return EntityId::Function(self.function_id(module, m)),
                Some(s) => current = self.parent_scope(module, s),
                None => return EntityId::Module(module),
            }
        }
        t.cut(Bound::Scopes);
        EntityId::Module(module)
    }

    pub(crate) fn resolve_module(&self, module: ModuleId) -> ModuleOutput {
        let Some(facts) = self.facts(module) else {
            return ModuleOutput::default();
        };
        let ctx = Ctx::new(self, module, facts);
        let imports = facts.imports.iter().map(|i| ctx.import(i)).collect();
        // Innermost invocations of a chain first (`a.b().c()`: `a.b()` starts
        // where `.c()` does and is recorded after it), so each receiver is
        // already resolved when its call is.
        let mut order: Vec<usize> = (0..facts.calls.len()).collect();
        order.sort_unstable_by_key(|&i| (facts.calls[i].pos, std::cmp::Reverse(i)));
        ctx.t.add(facts.calls.len() as u64);
        let mut targets: Vec<Option<CallTarget>> = vec![None; facts.calls.len()];
        for i in order {
            ctx.cut.set(false);
            if let (Some(call), Some(slot)) = (facts.calls.get(i), targets.get_mut(i)) {
                *slot = Some(ctx.call_target(call));
            }
        }
        let mut edges = Vec::with_capacity(facts.calls.len());
        let mut unresolved = Vec::new();
        for (call, target) in facts.calls.iter().zip(targets) {
            let caller = ctx.caller_node(call.scope);
            match target.unwrap_or(CallTarget::Unresolved) {
                CallTarget::Entity(target) => edges.push((caller, target)),
                CallTarget::External(name) => unresolved.push(UnresolvedCall {
                    caller,
                    callee: name,
                    external: true,
                    line: call.line,
                }),
                CallTarget::Unresolved => unresolved.push(UnresolvedCall {
                    caller,
                    callee: render_callee(&call.callee),
                    external: false,
                    line: call.line,
                }),
            }
        }
        let routes = facts.routes.iter().map(|r| ctx.route(r)).collect();
        let references = ctx.references();
        if let Some(input) = self.inputs.get(module.index()) {
            ctx.t.report(&input.rel_path, "unit", &self.warned);
        }
        ModuleOutput {
            imports,
            edges,
            unresolved,
            references,
            routes,
            route_links: Vec::new(),
            work: ctx.t.work.get(),
            main_calls: Vec::new(),
        }
    }
}

/// Whether every enclosing scope of `t` is a named type (so it has an FQN).
pub(super) fn named_path(facts: &JavaFacts, t: &TypeFacts) -> bool {
    let mut parent = t.parent;
    let mut steps = 0;
    loop {
        steps += 1;
        match parent {
            Scope::Unit => return true,
            Scope::Method(_) => return false,
            Scope::Type(p) => match facts.types.get(p as usize) {
                Some(outer) if !outer.anonymous && steps < MAX_SCOPE_STEPS => parent = outer.parent,
                _ => return false,
            },
        }
    }
}

pub(super) fn render_callee(callee: &Callee) -> String {
    match callee {
        Callee::Method { receiver, name } => match receiver {
            Some(r) => format!("{}.{name}", r.render()),
            None => name.clone(),
        },
        Callee::New(t) => format!("new {t}"),
        Callee::This => "this".to_string(),
        Callee::Super => "super".to_string(),
        Callee::Ref { target, name } => {
            let name = if name == CONSTRUCTOR { "new" } else { name };
            format!("{}::{name}", target.render())
        }
    }
}
