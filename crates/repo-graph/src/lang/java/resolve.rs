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

use crate::assemble::{ModuleInput, ModuleOutput};
use crate::lang::java::{
    ArgKind, CONSTRUCTOR, JCall, JCallee, JExpr, JField, JHandler, JImport, JLocal, JLocalType,
    JMethodFacts, JParam, JScope, JTypeFacts, JTypeParam, JavaFacts, erase, simple_type,
};
use crate::model::{
    Base, BaseRelation, ClassId, EntityId, FunctionId, Import, ImportKind, ImportTarget,
    JavaTypeKind, ModuleId, UnresolvedCall,
};
use crate::routes::{HandlerDraft, RouteDraft, RouteScope};

/// Evaluation steps allowed for one expression before giving up (type
/// variable bounds naming each other, `var` initializers naming each other).
const MAX_DEPTH: u32 = 24;
/// Most types kept in one MRO (the type, its superclasses, then its
/// interfaces). Real hierarchies have well under 50 supertypes (Spring's
/// application contexts, among the deepest, have about 30); the bound keeps
/// the MROs' total size linear in the number of types, where a chain of n
/// classes would otherwise hold n²/2 entries. Members past a cut
/// superclass chain are still found through the [`ChainIndex`]; interfaces
/// past the cut are not searched.
const MAX_MRO: usize = 128;
/// Supertype entries examined while linearizing one type: at most a few
/// per MRO element in real code. Bounds a type whose supertypes each list
/// many already-seen interfaces.
const MAX_MRO_STEPS: usize = 4 * MAX_MRO;
/// Enclosing scopes walked outward from one scope. Extraction records at
/// most 200 levels of nesting, so only inconsistent facts reach it.
const MAX_SCOPE_STEPS: usize = 256;
/// Overload signatures scored for one call. Real APIs have at most a few
/// dozen overloads of one arity that literal arguments can tell apart
/// (`assertEquals` has about 20); overloads whose parameters look the same
/// to literal arguments count once.
const MAX_OVERLOADS: usize = 256;
/// On-demand imports (`import p.*;`, `import static p.T.*;`) examined for
/// one name: real files have a few dozen at most.
const MAX_ON_DEMAND: usize = 256;
/// Superclasses whose varargs overloads do not take the call's arity,
/// stepped over past a cut MRO.
const MAX_VARARGS_HOPS: usize = 16;
/// Same-named locals of one method stepped over to find the one visible at
/// a position. Java forbids a local to shadow another of the same method,
/// so real code needs at most a few.
const MAX_LOCAL_HOPS: usize = 64;
/// Longest name built for a value outside the repository
/// (`java.lang.StringBuilder.append().append()...`): a chain of calls into
/// a library would otherwise build names quadratic in its length.
const MAX_EXTERNAL_NAME: usize = 512;
/// Dots in a qualified name searched for its longest known type prefix;
/// each try hashes a prefix, so the search is quadratic in the segments.
const MAX_NAME_SEGMENTS: usize = 256;
/// "No node / no value" in [`ChainIndex`] and local tables.
const NONE: u32 = u32::MAX;

/// The bounds above that can cut a lookup short, for the warning.
#[derive(Debug, Clone, Copy)]
enum Bound {
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

const BOUNDS: [(Bound, &str); 10] = [
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
struct Tally {
    work: Cell<u64>,
    cuts: [Cell<u32>; BOUNDS.len()],
}

impl Tally {
    fn add(&self, units: u64) {
        self.work.set(self.work.get().saturating_add(units));
    }

    fn tick(&self) {
        self.add(1);
    }

    fn cut(&self, bound: Bound) {
        let cell = &self.cuts[bound as usize];
        cell.set(cell.get().saturating_add(1));
    }

    /// Logs the bounds hit, if any, naming `module`: as a warning for the
    /// first [`MAX_WARNINGS`] modules of an analysis (`warned` counts
    /// them), at debug level after that.
    fn report(&self, module: &str, what: &str, warned: &AtomicU32) {
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
const MAX_WARNINGS: u32 = 20;

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
#[derive(Debug, Clone)]
enum Target {
    Entity(EntityId),
    External(String),
    Unresolved,
}

/// Parameter types as literal arguments see them ([`arg_score`]): the
/// index of the simple name (one `[]` stripped) in this list, 0 for any
/// other type.
const CATEGORIES: &[&str] = &[
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

fn category(type_text: &str) -> u8 {
    let erased = erase(type_text);
    let simple = simple_type(&erased);
    let simple = simple.strip_suffix("[]").unwrap_or(simple);
    CATEGORIES
        .iter()
        .position(|c| *c == simple)
        .and_then(|i| u8::try_from(i).ok())
        .unwrap_or(0)
}

/// One overload as overload resolution sees it.
struct Candidate {
    id: FunctionId,
    params: u32,
    varargs: bool,
    /// [`category`] of each parameter.
    kinds: Box<[u8]>,
}

impl Candidate {
    fn accepts(&self, arity: u32) -> bool {
        if self.varargs {
            arity.saturating_add(1) >= self.params
        } else {
            arity == self.params
        }
    }

    fn score(&self, args: &[ArgKind]) -> i32 {
        args.iter()
            .zip(self.kinds.iter())
            .map(|(a, k)| arg_score(*a, CATEGORIES.get(usize::from(*k)).copied().unwrap_or("")))
            .sum()
    }
}

/// The methods of one name in one type (or at the top of a unit).
struct Overloads {
    /// The first in source order (a method reference takes any arity).
    first: FunctionId,
    /// Fixed-arity overloads by (arity, source order); of those with the
    /// same arity and parameter categories only the first is kept, since
    /// no literal argument can prefer a later one.
    fixed: Vec<Candidate>,
    /// Varargs overloads in source order, deduplicated the same way.
    varargs: Vec<Candidate>,
}

impl Overloads {
    fn new(first: FunctionId) -> Self {
        Overloads {
            first,
            fixed: Vec::new(),
            varargs: Vec::new(),
        }
    }

    fn push(&mut self, id: FunctionId, method: &JMethodFacts) {
        let candidate = Candidate {
            id,
            params: u32::try_from(method.params.len()).unwrap_or(u32::MAX),
            varargs: method.params.last().is_some_and(|p| p.varargs),
            kinds: method
                .params
                .iter()
                .map(|p| category(&p.type_text))
                .collect(),
        };
        if candidate.varargs {
            self.varargs.push(candidate);
        } else {
            self.fixed.push(candidate);
        }
    }

    /// Sorts and deduplicates once every overload is pushed.
    fn finish(&mut self) {
        self.fixed.sort_by_key(|c| (c.params, c.id));
        for list in [&mut self.fixed, &mut self.varargs] {
            if list.len() > 1 {
                let mut seen: HashSet<(u32, Box<[u8]>)> = HashSet::default();
                list.retain(|c| seen.insert((c.params, c.kinds.clone())));
            }
        }
    }

    /// Fixed-arity overloads taking exactly `arity` arguments.
    fn with_arity(&self, arity: u32) -> &[Candidate] {
        let start = self.fixed.partition_point(|c| c.params < arity);
        let end = self.fixed.partition_point(|c| c.params <= arity);
        self.fixed.get(start..end).unwrap_or(&[])
    }

    fn takes(&self, arity: u32) -> bool {
        !self.with_arity(arity).is_empty() || self.varargs.iter().any(|c| c.accepts(arity))
    }

    /// The best overload for `arity` arguments (any when `None`) with these
    /// literal kinds: highest [`arg_score`] total, then first in source order.
    fn best(&self, arity: Option<u32>, args: &[ArgKind], t: &Tally) -> Option<FunctionId> {
        let Some(arity) = arity else {
            return Some(self.first);
        };
        let fixed = self.with_arity(arity);
        t.add(1 + u64::from(usize::BITS - self.fixed.len().leading_zeros()));
        let mut best: Option<(i32, FunctionId)> = None;
        let mut consider = |c: &Candidate| {
            let score = if args.is_empty() { 0 } else { c.score(args) };
            if best.is_none_or(|(s, id)| score > s || (score == s && c.id < id)) {
                best = Some((score, c.id));
            }
        };
        if args.is_empty() {
            // Every score is 0: the first in source order wins.
            if let Some(c) = fixed.first() {
                consider(c);
            }
            for c in self.varargs.iter().take(MAX_OVERLOADS) {
                t.tick();
                if c.accepts(arity) {
                    consider(c);
                    break;
                }
            }
        } else {
            for c in fixed.iter().take(MAX_OVERLOADS) {
                t.tick();
                consider(c);
            }
            for c in self.varargs.iter().take(MAX_OVERLOADS) {
                t.tick();
                if c.accepts(arity) {
                    consider(c);
                }
            }
            if fixed.len() > MAX_OVERLOADS {
                t.cut(Bound::Overloads);
            }
        }
        if self.varargs.len() > MAX_OVERLOADS {
            t.cut(Bound::Overloads);
        }
        best.map(|(_, id)| id)
    }
}

/// Members of one internal type.
#[derive(Default)]
struct TypeTable<'f> {
    module: u32,
    local: u32,
    /// Methods by name (constructors under [`CONSTRUCTOR`]).
    methods: HashMap<&'f str, Overloads>,
    fields: HashMap<&'f str, &'f JField>,
    /// Member types by simple name (the first declared wins).
    member_types: HashMap<&'f str, ClassId>,
    is_interface: bool,
}

/// The type tables of one compilation unit, before merging.
struct UnitIndex<'f> {
    package: Option<&'f str>,
    scoped: HashMap<(JScope, &'f str), ClassId>,
    fqns: Vec<(String, ClassId)>,
    top_level: Vec<(&'f str, ClassId)>,
    tables: Vec<(ClassId, TypeTable<'f>)>,
    work: u64,
}

impl<'f> UnitIndex<'f> {
    fn new(facts: &'f JavaFacts, module: u32, class_base: u32, function_base: u32) -> Self {
        let mut scoped: HashMap<(JScope, &str), ClassId> = HashMap::default();
        let mut fqns = Vec::new();
        let mut top_level = Vec::new();
        let mut tables: Vec<(ClassId, TypeTable<'f>)> = Vec::with_capacity(facts.types.len());
        let mut work = 0u64;
        for (i, t) in facts.types.iter().enumerate() {
            let id = ClassId(class_base + i as u32);
            work += 1 + t.fields.len() as u64;
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
                    member_types: HashMap::default(),
                    is_interface: matches!(
                        t.kind,
                        JavaTypeKind::Interface | JavaTypeKind::Annotation
                    ),
                },
            ));
        }
        for (i, t) in facts.types.iter().enumerate() {
            if let JScope::Type(outer) = t.parent
                && let Some((_, table)) = tables.get_mut(outer as usize)
            {
                table
                    .member_types
                    .entry(t.name.as_str())
                    .or_insert(ClassId(class_base + i as u32));
            }
        }
        for (i, method) in facts.methods.iter().enumerate() {
            if let JScope::Type(t) = method.parent
                && let Some((_, table)) = tables.get_mut(t as usize)
            {
                work += 1 + method.params.len() as u64;
                let id = FunctionId(function_base + i as u32);
                table
                    .methods
                    .entry(method.name.as_str())
                    .or_insert_with(|| Overloads::new(id))
                    .push(id, method);
            }
        }
        for (_, table) in &mut tables {
            for overloads in table.methods.values_mut() {
                overloads.finish();
            }
        }
        UnitIndex {
            package: facts.package.as_deref(),
            scoped,
            fqns,
            top_level,
            tables,
            work,
        }
    }
}

/// The imports of one compilation unit, indexed by the names they provide.
#[derive(Default)]
struct ImportIndex<'f> {
    /// `import p.T;` by simple name (the first wins).
    single: HashMap<&'f str, &'f str>,
    /// `import static p.T.m;` by member name, in source order.
    static_single: HashMap<&'f str, Vec<(usize, &'f JImport)>>,
    /// `import p.*;`, `import p.T.*;` and `import static p.T.*;`, in source order.
    on_demand: Vec<(usize, &'f JImport)>,
}

impl<'f> ImportIndex<'f> {
    fn new(facts: &'f JavaFacts) -> Self {
        let mut index = ImportIndex::default();
        for (position, import) in facts.imports.iter().enumerate() {
            let last = import
                .path
                .rsplit_once('.')
                .map_or(import.path.as_str(), |(_, last)| last);
            match (import.is_static, import.on_demand) {
                (_, true) => index.on_demand.push((position, import)),
                (false, false) => {
                    index.single.entry(last).or_insert(import.path.as_str());
                }
                (true, false) => index
                    .static_single
                    .entry(last)
                    .or_default()
                    .push((position, import)),
            }
        }
        index
    }
}

/// A member a [`ChainIndex`] can find.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum MemberKey<'a> {
    /// Methods of this name taking exactly this many arguments.
    Method(&'a str, u32),
    /// Methods of this name with a varargs parameter.
    Varargs(&'a str),
    /// Methods of this name, any arity.
    AnyMethod(&'a str),
    Field(&'a str),
    MemberType(&'a str),
    /// Supertypes outside the repository.
    ExternalSuper,
}

/// Nearest declarations along superclass chains, for lookups that run past
/// an MRO cut at [`MAX_MRO`].
///
/// A persistent segment tree over member keys: a type's version is its
/// superclass's version with the type's own members set to the type,
/// sharing every other node. A chain of n types costs O(n log k) nodes for
/// k keys (flattened member tables would cost O(n²) entries), and a lookup
/// costs O(log k). Only the types some cut MRO continues into, and their
/// superclasses, get a version, so ordinary repositories build nothing.
#[derive(Default)]
struct ChainIndex<'f> {
    keys: HashMap<MemberKey<'f>, u32>,
    /// `[left, right, value]`; node 0 is the empty tree.
    nodes: Vec<[u32; 3]>,
    /// Leaves of the tree: a power of two, at least the number of keys.
    width: u32,
    /// Per class id: the root of its version (0: none).
    roots: Vec<u32>,
    /// Per class id: distance from the top of its superclass chain.
    depth: Vec<u32>,
}

impl<'f> ChainIndex<'f> {
    fn insert(&mut self, node: u32, lo: u32, hi: u32, key: u32, value: u32) -> u32 {
        let [left, right, _] = self
            .nodes
            .get(node as usize)
            .copied()
            .unwrap_or([0, 0, NONE]);
        let new = if hi - lo <= 1 {
            [0, 0, value]
        } else {
            let mid = lo + (hi - lo) / 2;
            if key < mid {
                [self.insert(left, lo, mid, key, value), right, NONE]
            } else {
                [left, self.insert(right, mid, hi, key, value), NONE]
            }
        };
        self.nodes.push(new);
        u32::try_from(self.nodes.len() - 1).unwrap_or(0)
    }

    /// The nearest type at or above `class` in its superclass chain that
    /// declares `key`, if `class` has a version.
    fn nearest<'a>(&'a self, class: ClassId, key: MemberKey<'a>, t: &Tally) -> Option<ClassId> {
        t.tick();
        let keys: &HashMap<MemberKey<'a>, u32> = &self.keys;
        let key = *keys.get(&key)?;
        let mut node = *self.roots.get(class.index())?;
        let (mut lo, mut hi) = (0, self.width);
        while node != 0 {
            t.tick();
            let [left, right, value] = *self.nodes.get(node as usize)?;
            if hi - lo <= 1 {
                return (value != NONE).then_some(ClassId(value));
            }
            let mid = lo + (hi - lo) / 2;
            if key < mid {
                node = left;
                hi = mid;
            } else {
                node = right;
                lo = mid;
            }
        }
        None
    }
}

/// A variable found by name.
enum Var<'f> {
    Local(&'f JLocal),
    Param(ModuleId, JScope, &'f JParam),
    Field(ModuleId, JScope, &'f JField),
}

/// Memo tables for type names, one set per module being resolved (any
/// module's names can be looked up through them: return and field types
/// of other units are resolved in those units).
#[derive(Default)]
struct TypeCaches<'f> {
    /// What a simple name means at the top of a unit.
    unit: RefCell<HashMap<ModuleId, HashMap<String, TypeValue>>>,
    /// What a written name means in a scope.
    resolved: RefCell<HashMap<(ModuleId, JScope), HashMap<String, TypeValue>>>,
    /// Type parameters of scopes that declare many, by name.
    params: RefCell<HashMap<(ModuleId, JScope), TypeParams<'f>>>,
}

/// The type parameters of one scope by name.
type TypeParams<'f> = HashMap<&'f str, &'f JTypeParam>;

/// Scopes with more type parameters than this get them indexed by name.
const INDEXED_TYPE_PARAMS: usize = 8;

/// A type's resolved supertypes, and the names of those outside the repository.
type Supertypes = (Vec<Base>, Vec<String>);
/// A type's MRO, and the superclass it was cut before (see [`JavaResolver::linearize`]).
type Linearized = (Vec<ClassId>, Option<ClassId>);

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
    /// Per module: its imports by name.
    imports: Vec<ImportIndex<'f>>,
    /// Per class id; `None` for Python classes.
    types: Vec<Option<TypeTable<'f>>>,
    /// Names some internal type declares a method, field or member type
    /// under: lookups of other names stop at once.
    method_names: HashSet<&'f str>,
    field_names: HashSet<&'f str>,
    member_type_names: HashSet<&'f str>,
    /// Resolved supertypes per class id (empty for Python classes).
    pub(crate) bases: Vec<Vec<Base>>,
    /// Fully qualified names of supertypes outside the repository.
    external_supers: Vec<Vec<String>>,
    /// Superclass, then its superclasses, then interfaces breadth first
    /// (at most [`MAX_MRO`]).
    pub(crate) mro: Vec<Vec<ClassId>>,
    /// Per class id: the superclass its MRO's chain was cut before, if any.
    continuation: Vec<Option<ClassId>>,
    /// Per class id: the superclass member lookup follows (cycles broken).
    superclass: Vec<Option<ClassId>>,
    chain: ChainIndex<'f>,
    setup_work: u64,
    /// Modules warned about so far (see [`Tally::report`]).
    warned: AtomicU32,
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
        let mut by_fqn: HashMap<String, ClassId> = HashMap::default();
        let mut by_package: HashMap<&'f str, HashMap<&'f str, ClassId>> = HashMap::default();
        let mut packages: HashSet<String> = HashSet::default();
        let mut scoped_types = Vec::with_capacity(inputs.len());
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
            imports,
            types,
            method_names,
            field_names,
            member_type_names,
            bases: vec![Vec::new(); class_count],
            external_supers: vec![Vec::new(); class_count],
            mro: vec![Vec::new(); class_count],
            continuation: vec![None; class_count],
            superclass: vec![None; class_count],
            chain: ChainIndex::default(),
            setup_work: 0,
            warned: AtomicU32::new(0),
        };
        let java_types = |m: usize| inputs[m].facts.java().map_or(0, |f| f.types.len());
        // Supertypes can be member types inherited from other supertypes, so
        // they are resolved twice: lexically first, then with the first MROs
        // (the second time only matters, and MROs are only recomputed, if a
        // supertype changed).
        let mut base_tallies: Vec<Tally> = Vec::new();
        let mut mro_tallies: Vec<Tally> = Vec::new();
        for round in 0..2 {
            let resolved: Vec<(Vec<Supertypes>, Tally)> = (0..inputs.len())
                .into_par_iter()
                .map(|m| {
                    let t = Tally::default();
                    let caches = TypeCaches::default();
                    let classes = (0..java_types(m))
                        .map(|local| {
                            resolver.class_bases(ClassId(class_base[m] + local as u32), &caches, &t)
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
                    if let (Some(slot), Some(ext)) = (
                        resolver.bases.get_mut(c),
                        resolver.external_supers.get_mut(c),
                    ) {
                        changed |= *slot != bases || *ext != external;
                        *slot = bases;
                        *ext = external;
                    }
                }
            }
            if round > 0 && !changed {
                break;
            }
            let linearized: Vec<(Vec<Linearized>, Tally)> = (0..inputs.len())
                .into_par_iter()
                .map(|m| {
                    let t = Tally::default();
                    let classes = (0..java_types(m))
                        .map(|local| resolver.linearize(ClassId(class_base[m] + local as u32), &t))
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
                    if let Some(slot) = resolver.mro.get_mut(c) {
                        *slot = mro;
                    }
                    if let Some(slot) = resolver.continuation.get_mut(c) {
                        *slot = continuation;
                    }
                }
            }
        }
        let t = Tally::default();
        resolver.superclasses(&t);
        resolver.chain = resolver.chain_index(&t);
        work = work.saturating_add(t.work.get());
        for (m, input) in inputs.iter().enumerate() {
            let cuts = Tally::default();
            for tally in [base_tallies.get(m), mro_tallies.get(m)]
                .into_iter()
                .flatten()
            {
                for (mine, theirs) in cuts.cuts.iter().zip(&tally.cuts) {
                    mine.set(mine.get().saturating_add(theirs.get()));
                }
            }
            cuts.report(&input.rel_path, "supertypes of unit", &resolver.warned);
        }
        resolver.setup_work = work;
        resolver
    }

    pub(crate) fn is_java_class(&self, class: ClassId) -> bool {
        matches!(self.types.get(class.index()), Some(Some(_)))
    }

    fn is_interface(&self, class: ClassId) -> bool {
        self.table(class).is_some_and(|t| t.is_interface)
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
        let local = function
            .0
            .checked_sub(*self.function_base.get(module.index())?)?;
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
    fn enclosing_type(&self, module: ModuleId, scope: JScope, t: &Tally) -> Option<ClassId> {
        let mut current = Some(scope);
        for _ in 0..MAX_SCOPE_STEPS {
            t.tick();
            let s = current?;
            if let JScope::Type(ty) = s {
                return Some(self.class_id(module, ty));
            }
            current = self.parent_scope(module, s);
        }
        t.cut(Bound::Scopes);
        None
    }

    fn class_bases(&self, class: ClassId, caches: &TypeCaches<'f>, t: &Tally) -> Supertypes {
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
                    TypeValue::Unknown
                } else {
                    self.resolve_type(module, scope, &s.name, caches, t, 0)
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
    fn direct_superclass(&self, class: ClassId, t: &Tally) -> Option<ClassId> {
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
    fn linearize(&self, class: ClassId, t: &Tally) -> Linearized {
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
    fn superclasses(&mut self, t: &Tally) {
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
    fn own_keys(&self, class: ClassId) -> Vec<MemberKey<'f>> {
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
    fn chain_index(&self, t: &Tally) -> ChainIndex<'f> {
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
        let mut depth = vec![NONE; n];
        let mut path = Vec::new();
        for c in (0..n).filter(|c| marked[*c]) {
            let mut at = Some(c);
            while let Some(x) = at {
                if depth[x] != NONE {
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
            let next = u32::try_from(index.keys.len()).unwrap_or(NONE);
            index.keys.entry(*key).or_insert(next);
        }
        index.width = u32::try_from(index.keys.len().max(1).next_power_of_two()).unwrap_or(NONE);
        index.nodes = vec![[0, 0, NONE]];
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

    fn mro(&self, class: ClassId) -> &[ClassId] {
        self.mro.get(class.index()).map_or(&[], Vec::as_slice)
    }

    /// The first type in `class`'s lookup order for which `probe` gives a
    /// value: its MRO (the type alone while MROs are being computed), then,
    /// past a superclass chain cut at [`MAX_MRO`], the nearest superclass
    /// declaring `key`.
    fn first_in_order<T>(
        &self,
        class: ClassId,
        key: MemberKey<'_>,
        t: &Tally,
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
    fn member_type(&self, class: ClassId, name: &str, t: &Tally) -> Option<ClassId> {
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
    fn field(
        &self,
        class: ClassId,
        name: &str,
        t: &Tally,
    ) -> Option<(ModuleId, JScope, &'f JField)> {
        t.tick();
        if !self.field_names.contains(name) {
            return None;
        }
        self.first_in_order(class, MemberKey::Field(name), t, |_, table| {
            let field = table.fields.get(name)?;
            Some((ModuleId(table.module), JScope::Type(table.local), *field))
        })
    }

    /// The first supertype outside the repository in `class`'s lookup order.
    fn external_super(&self, class: ClassId, t: &Tally) -> Option<String> {
        self.first_in_order(class, MemberKey::ExternalSuper, t, |k, _| {
            self.external_supers.get(k.index())?.first().cloned()
        })
    }

    /// The best method named `name` of `class` (or its supertypes after it
    /// when `skip_self`) for `arity` arguments (any arity when `None`): the
    /// first type in lookup order with an overload that takes the arity,
    /// then its best overload for the literal argument kinds.
    fn find_method(
        &self,
        class: ClassId,
        name: &str,
        arity: Option<u32>,
        args: &[ArgKind],
        skip_self: bool,
        t: &Tally,
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
    fn resolve_type(
        &self,
        module: ModuleId,
        scope: JScope,
        name: &str,
        caches: &TypeCaches<'f>,
        t: &Tally,
        depth: u32,
    ) -> TypeValue {
        if name.ends_with(']') || PRIMITIVES.contains(&name) || name.is_empty() {
            return TypeValue::Unknown;
        }
        if depth > MAX_DEPTH {
            t.cut(Bound::Depth);
            return TypeValue::Unknown;
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
        if value == TypeValue::Unknown {
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
            (Some(_), TypeValue::Unknown) => self.resolve_fqn(name, t),
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
    fn member_path(&self, mut value: TypeValue, rest: &str, t: &Tally) -> TypeValue {
        for segment in rest.split('.') {
            t.tick();
            value = match value {
                TypeValue::Internal(c) => match self.member_type(c, segment, t) {
                    Some(inner) => TypeValue::Internal(inner),
                    None => TypeValue::Unknown,
                },
                TypeValue::External(outer) => TypeValue::External(format!("{outer}.{segment}")),
                TypeValue::Unknown => return TypeValue::Unknown,
            };
        }
        value
    }

    /// The type parameter `name` declared by `scope` itself, if any.
    fn type_param(
        &self,
        module: ModuleId,
        scope: JScope,
        name: &str,
        caches: &TypeCaches<'f>,
        t: &Tally,
    ) -> Option<&'f JTypeParam> {
        let facts = self.facts(module)?;
        let params = match scope {
            JScope::Method(m) => &facts.methods.get(m as usize)?.type_params,
            JScope::Type(ty) => &facts.types.get(ty as usize)?.type_params,
            JScope::Unit => return None,
        };
        if params.len() <= INDEXED_TYPE_PARAMS {
            t.add(params.len() as u64);
            return params.iter().find(|p| p.name == name);
        }
        t.tick();
        let mut indexed = caches.params.borrow_mut();
        let by_name = indexed.entry((module, scope)).or_insert_with(|| {
            t.add(params.len() as u64);
            let mut by_name: HashMap<&'f str, &'f JTypeParam> = HashMap::default();
            for p in params {
                by_name.entry(p.name.as_str()).or_insert(p);
            }
            by_name
        });
        by_name.get(name).copied()
    }

    /// Type variables, local types and member types visible from `scope`.
    fn lexical_type(
        &self,
        module: ModuleId,
        scope: JScope,
        name: &str,
        caches: &TypeCaches<'f>,
        t: &Tally,
        depth: u32,
    ) -> TypeValue {
        let Some(scoped) = self.scoped_types.get(module.index()) else {
            return TypeValue::Unknown;
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
                        let outer = self.parent_scope(module, s).unwrap_or(JScope::Unit);
                        // `<A extends B, B extends A>` must not loop.
                        self.resolve_type(module, outer, bound, caches, t, depth + 1)
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
                JScope::Type(ty) => {
                    if let Some(c) = self.member_type(self.class_id(module, ty), name, t) {
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
    fn unit_type(&self, module: ModuleId, name: &str, t: &Tally) -> TypeValue {
        let Some(facts) = self.facts(module) else {
            return TypeValue::Unknown;
        };
        t.tick();
        if let Some(c) = self
            .scoped_types
            .get(module.index())
            .and_then(|scoped| scoped.get(&(JScope::Unit, name)))
        {
            return TypeValue::Internal(*c);
        }
        let Some(imports) = self.imports.get(module.index()) else {
            return TypeValue::Unknown;
        };
        if let Some(path) = imports.single.get(name) {
            return self.resolve_fqn(path, t);
        }
        if let Some(c) = self.top_level(facts.package.as_deref().unwrap_or(""), name) {
            return TypeValue::Internal(c);
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
                return TypeValue::Internal(c);
            }
        }
        if let Some((_, c)) = static_type {
            return TypeValue::Internal(c);
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
    fn resolve_fqn(&self, path: &str, t: &Tally) -> TypeValue {
        t.tick();
        if let Some(c) = self.by_fqn.get(path) {
            return TypeValue::Internal(*c);
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
                return self.member_path(TypeValue::Internal(*c), rest, t);
            }
        }
        TypeValue::External(path.to_string())
    }

    /// The entity that runs code written in `scope`: the nearest method,
    /// else the module (field initializers and initializer blocks).
    fn caller_node(&self, module: ModuleId, scope: JScope, t: &Tally) -> EntityId {
        let mut current = Some(scope);
        for _ in 0..MAX_SCOPE_STEPS {
            t.tick();
            match current {
                Some(JScope::Method(m)) => return EntityId::Function(self.function_id(module, m)),
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
        let mut targets: Vec<Option<Target>> = vec![None; facts.calls.len()];
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
            match target.unwrap_or(Target::Unresolved) {
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
                Some(outer) if !outer.anonymous && steps < MAX_SCOPE_STEPS => parent = outer.parent,
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

/// Same-named locals of one scope by start, each with the nearest earlier
/// one that ends later (see [`Ctx::local_at`]).
struct Locals<'f> {
    list: Vec<&'f JLocal>,
    outer: Vec<u32>,
}

impl<'f> Locals<'f> {
    fn new(mut list: Vec<&'f JLocal>) -> Self {
        list.sort_by_key(|l| l.start);
        let mut outer = Vec::with_capacity(list.len());
        let mut stack: Vec<usize> = Vec::new();
        for (i, local) in list.iter().enumerate() {
            while let Some(&j) = stack.last()
                && list[j].end <= local.end
            {
                stack.pop();
            }
            outer.push(stack.last().map_or(NONE, |&j| j as u32));
            stack.push(i);
        }
        Locals { list, outer }
    }
}

/// A method lookup: receiver type, name, arity, literal kinds, `super.`.
type MethodKey<'f> = (ClassId, &'f str, Option<u32>, &'f [ArgKind], bool);
/// A call by name, arity and literal kinds.
type CallKey<'f> = (&'f str, Option<u32>, &'f [ArgKind]);
/// What a call without a receiver finds in the enclosing types: the
/// method, and the innermost enclosing type.
type Unqualified = (Option<FunctionId>, Option<ClassId>);
/// An invocation: its start and end bytes, and the method's name.
type InvocationKey<'f> = (u32, u32, &'f str);

/// Resolution state for one module: its locals and parameters by name, and
/// memo tables for everything that can be looked up twice.
struct Ctx<'f, 'r> {
    r: &'r JavaResolver<'f>,
    module: ModuleId,
    facts: &'f JavaFacts,
    t: Tally,
    caches: TypeCaches<'f>,
    locals: HashMap<(JScope, &'f str), Locals<'f>>,
    /// Parameters by (method, name); the first of a name wins.
    params: HashMap<(u32, &'f str), &'f JParam>,
    /// Methods outside any type (scripts, or a class lost to a syntax error).
    top_level: HashMap<&'f str, Overloads>,
    /// Whether the evaluation under way was cut short by [`MAX_DEPTH`]
    /// (its result is then not memoised).
    cut: Cell<bool>,
    methods: RefCell<HashMap<MethodKey<'f>, Option<FunctionId>>>,
    /// Calls without a receiver: the method found in the enclosing types,
    /// and the innermost enclosing type.
    unqualified: RefCell<HashMap<(JScope, CallKey<'f>), Unqualified>>,
    statics: RefCell<HashMap<CallKey<'f>, Option<Target>>>,
    external_supers: RefCell<HashMap<ClassId, Option<String>>>,
    /// Call sites resolved so far, by invocation.
    calls: RefCell<HashMap<InvocationKey<'f>, Target>>,
    /// Invocations evaluated as receivers before their own call site.
    invocations: RefCell<HashMap<InvocationKey<'f>, Value>>,
    /// Values of `var` locals, by address.
    inferred: RefCell<HashMap<usize, Value>>,
    callers: RefCell<HashMap<JScope, EntityId>>,
}

impl<'f, 'r> Ctx<'f, 'r> {
    fn new(r: &'r JavaResolver<'f>, module: ModuleId, facts: &'f JavaFacts) -> Self {
        let t = Tally::default();
        let mut by_name: HashMap<(JScope, &str), Vec<&JLocal>> =
            HashMap::with_capacity_and_hasher(facts.locals.len(), Default::default());
        for local in &facts.locals {
            by_name
                .entry((local.scope, local.name.as_str()))
                .or_default()
                .push(local);
        }
        let locals = by_name
            .into_iter()
            .map(|(key, list)| (key, Locals::new(list)))
            .collect();
        let mut params = HashMap::default();
        let mut top_level: HashMap<&'f str, Overloads> = HashMap::default();
        for (m, method) in facts.methods.iter().enumerate() {
            for p in &method.params {
                params.entry((m as u32, p.name.as_str())).or_insert(p);
            }
            if method.parent == JScope::Unit {
                let id = r.function_id(module, m as u32);
                top_level
                    .entry(method.name.as_str())
                    .or_insert_with(|| Overloads::new(id))
                    .push(id, method);
            }
            t.add(1 + method.params.len() as u64);
        }
        for overloads in top_level.values_mut() {
            overloads.finish();
        }
        t.add(facts.locals.len() as u64);
        Ctx {
            r,
            module,
            facts,
            t,
            caches: TypeCaches::default(),
            locals,
            params,
            top_level,
            cut: Cell::new(false),
            methods: RefCell::default(),
            unqualified: RefCell::default(),
            statics: RefCell::default(),
            external_supers: RefCell::default(),
            calls: RefCell::default(),
            invocations: RefCell::default(),
            inferred: RefCell::default(),
            callers: RefCell::default(),
        }
    }

    /// Resolves a type name written in `scope` of `module`.
    fn resolve_type(&self, module: ModuleId, scope: JScope, name: &str) -> TypeValue {
        self.r
            .resolve_type(module, scope, name, &self.caches, &self.t, 0)
    }

    fn instance_of(&self, module: ModuleId, scope: JScope, name: &str) -> Value {
        match self.resolve_type(module, scope, name) {
            TypeValue::Internal(c) => Value::Instance(c),
            TypeValue::External(n) => Value::ExternalInstance(n),
            TypeValue::Unknown => Value::Unknown,
        }
    }

    /// A name for a value outside the repository, unless it grew past
    /// [`MAX_EXTERNAL_NAME`].
    fn external(&self, name: String) -> Option<String> {
        if name.len() > MAX_EXTERNAL_NAME {
            self.t.cut(Bound::ExternalName);
            return None;
        }
        Some(name)
    }

    fn caller_node(&self, scope: JScope) -> EntityId {
        self.t.tick();
        if let Some(caller) = self.callers.borrow().get(&scope) {
            return *caller;
        }
        let caller = self.r.caller_node(self.module, scope, &self.t);
        self.callers.borrow_mut().insert(scope, caller);
        caller
    }

    /// The local of `locals` visible at byte `pos`: the last declared
    /// before `pos` whose range still covers it. Each local links to the
    /// nearest earlier one that ends later, so the search skips whole
    /// blocks of closed siblings at once.
    fn local_at(&self, locals: &Locals<'f>, pos: u32) -> Option<&'f JLocal> {
        let p = locals.list.partition_point(|l| l.start <= pos);
        self.t
            .add(1 + u64::from(usize::BITS - locals.list.len().leading_zeros()));
        let mut i = p.checked_sub(1)?;
        for _ in 0..=MAX_LOCAL_HOPS {
            self.t.tick();
            let local = *locals.list.get(i)?;
            if pos < local.end {
                return Some(local);
            }
            match locals.outer.get(i) {
                Some(&o) if o != NONE => i = o as usize,
                _ => return None,
            }
        }
        self.t.cut(Bound::Locals);
        None
    }

    /// The variable `name` as seen at byte `pos` of `scope`: locals, then
    /// parameters, then fields of the enclosing types, innermost first.
    fn lookup_var(&self, scope: JScope, name: &'f str, pos: u32) -> Option<Var<'f>> {
        let r = self.r;
        let module = self.module;
        let mut current = Some(scope);
        let mut steps = 0;
        while let Some(s) = current {
            steps += 1;
            self.t.tick();
            if steps > MAX_SCOPE_STEPS {
                self.t.cut(Bound::Scopes);
                return None;
            }
            if let Some(locals) = self.locals.get(&(s, name))
                && let Some(local) = self.local_at(locals, pos)
            {
                return Some(Var::Local(local));
            }
            match s {
                JScope::Method(m) => {
                    if let Some(param) = self.params.get(&(m, name)) {
                        return Some(Var::Param(module, s, param));
                    }
                }
                JScope::Type(ty) => {
                    if let Some((m, scope, field)) = r.field(r.class_id(module, ty), name, &self.t)
                    {
                        return Some(Var::Field(m, scope, field));
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
                JLocalType::Inferred(expr) => {
                    let key = std::ptr::from_ref(local) as usize;
                    if let Some(value) = self.inferred.borrow().get(&key) {
                        return value.clone();
                    }
                    let saved = self.cut.replace(false);
                    let value = self.eval(expr, local.scope, local.start, depth + 1);
                    let cut = self.cut.get();
                    self.cut.set(saved || cut);
                    if !cut {
                        self.inferred.borrow_mut().insert(key, value.clone());
                    }
                    value
                }
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

    /// What calling `target` evaluates to: an instance of its declared
    /// return type.
    fn target_value(&self, target: &Target) -> Value {
        let r = self.r;
        match target {
            Target::Entity(EntityId::Function(f)) => match r.method_facts(*f) {
                Some((module, method)) => match &method.returns {
                    Some(ty) => {
                        let local = f.0.saturating_sub(r.function_base[module.index()]);
                        self.instance_of(module, JScope::Method(local), &erase(ty))
                    }
                    None => Value::Unknown,
                },
                None => Value::Unknown,
            },
            Target::External(n) => self
                .external(format!("{n}()"))
                .map_or(Value::Unknown, Value::ExternalInstance),
            _ => Value::Unknown,
        }
    }

    /// The value of an invocation: from its call site when that is
    /// resolved (with its literal arguments), else evaluated here once.
    #[allow(clippy::too_many_arguments)]
    fn invocation_value(
        &self,
        receiver: Option<&'f JExpr>,
        name: &'f str,
        arity: u32,
        start: u32,
        end: u32,
        scope: JScope,
        depth: u32,
    ) -> Value {
        let key = (start, end, name);
        let resolved = self.calls.borrow().get(&key).cloned();
        if let Some(target) = resolved {
            return self.target_value(&target);
        }
        if let Some(value) = self.invocations.borrow().get(&key) {
            return value.clone();
        }
        let saved = self.cut.replace(false);
        let target = self.method_target(receiver, name, Some(arity), &[], scope, start, depth + 1);
        let value = self.target_value(&target);
        let cut = self.cut.get();
        self.cut.set(saved || cut);
        if !cut {
            self.invocations.borrow_mut().insert(key, value.clone());
        }
        value
    }

    fn eval(&self, expr: &'f JExpr, scope: JScope, pos: u32, depth: u32) -> Value {
        if depth > MAX_DEPTH {
            self.cut.set(true);
            self.t.cut(Bound::Depth);
            return Value::Unknown;
        }
        self.t.tick();
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
                        if let Some((module, scope, f)) = r.field(c, field, &self.t) {
                            return self.instance_of(module, scope, &erase(&f.type_text));
                        }
                        match (&base, r.member_type(c, field, &self.t)) {
                            (Value::Type(_), Some(inner)) => Value::Type(inner),
                            _ => Value::Unknown,
                        }
                    }
                    Value::ExternalType(t)
                        if field.starts_with(|c: char| c.is_ascii_uppercase()) =>
                    {
                        self.external(format!("{t}.{field}"))
                            .map_or(Value::Unknown, Value::ExternalType)
                    }
                    Value::ExternalType(t) | Value::ExternalInstance(t) => self
                        .external(format!("{t}.{field}"))
                        .map_or(Value::Unknown, Value::ExternalInstance),
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
                start,
                end,
            } => self.invocation_value(
                receiver.as_deref(),
                name,
                *arity,
                *start,
                *end,
                scope,
                depth,
            ),
            JExpr::New(ty) | JExpr::Cast(ty) => self.instance_of(self.module, scope, ty),
            JExpr::Type(ty) => match self.resolve_type(self.module, scope, ty) {
                TypeValue::Internal(c) => Value::Type(c),
                TypeValue::External(n) => Value::ExternalType(n),
                TypeValue::Unknown => Value::Unknown,
            },
            JExpr::Str => Value::ExternalInstance("java.lang.String".to_string()),
            JExpr::This => r
                .enclosing_type(self.module, scope, &self.t)
                .map_or(Value::Unknown, Value::Instance),
            JExpr::Super | JExpr::Other(_) => Value::Unknown,
        }
    }

    /// [`JavaResolver::find_method`], memoised.
    fn find_method(
        &self,
        class: ClassId,
        name: &'f str,
        arity: Option<u32>,
        args: &'f [ArgKind],
        skip_self: bool,
    ) -> Option<FunctionId> {
        self.t.tick();
        let key = (class, name, arity, args, skip_self);
        if let Some(found) = self.methods.borrow().get(&key) {
            return *found;
        }
        let found = self
            .r
            .find_method(class, name, arity, args, skip_self, &self.t);
        self.methods.borrow_mut().insert(key, found);
        found
    }

    /// `new T(...)` on an internal class: the constructor for the arity, or
    /// the class itself when it declares none that fits.
    fn constructor(&self, class: ClassId, arity: Option<u32>, args: &[ArgKind]) -> EntityId {
        self.t.tick();
        self.r
            .table(class)
            .and_then(|t| t.methods.get(CONSTRUCTOR))
            .and_then(|ctors| ctors.best(arity, args, &self.t))
            .map_or(EntityId::Class(class), EntityId::Function)
    }

    /// A call without a receiver, looked up in the enclosing types from
    /// the innermost out: the method found, and the innermost enclosing
    /// type. Memoised for every scope walked through, so calls from many
    /// nested scopes walk each scope once.
    fn enclosing_method(
        &self,
        scope: JScope,
        name: &'f str,
        arity: Option<u32>,
        args: &'f [ArgKind],
    ) -> Unqualified {
        self.t.tick();
        let call = (name, arity, args);
        let r = self.r;
        let mut visited = Vec::new();
        let mut current = Some(scope);
        // The answer for the scope above the last one visited.
        let mut above = (None, None);
        while let Some(s) = current {
            self.t.tick();
            let known = self.unqualified.borrow().get(&(s, call)).copied();
            if let Some(known) = known {
                above = known;
                break;
            }
            if visited.len() >= MAX_SCOPE_STEPS {
                self.t.cut(Bound::Scopes);
                break;
            }
            if let JScope::Type(ty) = s {
                let class = r.class_id(self.module, ty);
                if let Some(f) = self.find_method(class, name, arity, args, false) {
                    above = (Some(f), Some(class));
                    self.unqualified.borrow_mut().insert((s, call), above);
                    break;
                }
            }
            visited.push(s);
            current = r.parent_scope(self.module, s);
        }
        let mut memo = self.unqualified.borrow_mut();
        for s in visited.into_iter().rev() {
            if let JScope::Type(ty) = s {
                above = (above.0, Some(r.class_id(self.module, ty)));
            }
            memo.insert((s, call), above);
        }
        above
    }

    #[allow(clippy::too_many_arguments)]
    fn method_target(
        &self,
        receiver: Option<&'f JExpr>,
        name: &'f str,
        arity: Option<u32>,
        args: &'f [ArgKind],
        scope: JScope,
        pos: u32,
        depth: u32,
    ) -> Target {
        let r = self.r;
        match receiver {
            None => {
                let (found, innermost) = self.enclosing_method(scope, name, arity, args);
                if let Some(f) = found {
                    return Target::Entity(EntityId::Function(f));
                }
                if let Some(target) = self.static_import(name, arity, args) {
                    return target;
                }
                if let Some(f) = self
                    .top_level
                    .get(name)
                    .and_then(|o| o.best(arity, args, &self.t))
                {
                    return Target::Entity(EntityId::Function(f));
                }
                match innermost.and_then(|c| self.external_super_name(c)) {
                    Some(base) => Target::External(format!("{base}.{name}")),
                    None => Target::Unresolved,
                }
            }
            Some(JExpr::Super) => match r.enclosing_type(self.module, scope, &self.t) {
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
        self.t.tick();
        if let Some(name) = self.external_supers.borrow().get(&class) {
            return name.clone();
        }
        let name = self.r.external_super(class, &self.t);
        self.external_supers
            .borrow_mut()
            .insert(class, name.clone());
        name
    }

    /// `name(...)` provided by `import static p.T.name;` or `import static p.T.*;`.
    fn static_import(
        &self,
        name: &'f str,
        arity: Option<u32>,
        args: &'f [ArgKind],
    ) -> Option<Target> {
        self.t.tick();
        let key = (name, arity, args);
        if let Some(found) = self.statics.borrow().get(&key) {
            return found.clone();
        }
        let found = self.static_import_uncached(name, arity, args);
        self.statics.borrow_mut().insert(key, found.clone());
        found
    }

    fn static_import_uncached(
        &self,
        name: &'f str,
        arity: Option<u32>,
        args: &'f [ArgKind],
    ) -> Option<Target> {
        let imports = self.r.imports.get(self.module.index())?;
        let singles = imports
            .static_single
            .get(name)
            .map_or(&[][..], Vec::as_slice);
        let mut on_demand = imports.on_demand.iter().filter(|(_, i)| i.is_static);
        let mut singles = singles.iter();
        let (mut next_demand, mut next_single) = (on_demand.next(), singles.next());
        let mut demands = 0;
        let mut fallback = None;
        loop {
            // The two lists merged in source order.
            let owner = match (next_demand, next_single) {
                (Some(d), Some(s)) if d.0 < s.0 => {
                    next_demand = on_demand.next();
                    demands += 1;
                    d.1.path.as_str()
                }
                (_, Some(s)) => {
                    next_single = singles.next();
                    match s.1.path.rsplit_once('.') {
                        Some((owner, _)) => owner,
                        None => continue,
                    }
                }
                (Some(d), None) => {
                    next_demand = on_demand.next();
                    demands += 1;
                    d.1.path.as_str()
                }
                (None, None) => break,
            };
            if demands > MAX_ON_DEMAND {
                self.t.cut(Bound::OnDemand);
                break;
            }
            self.t.tick();
            match self.r.resolve_fqn(owner, &self.t) {
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

    fn call_target(&self, call: &'f JCall) -> Target {
        let r = self.r;
        let module = self.module;
        let arity = Some(call.arity);
        match &call.callee {
            JCallee::Method { receiver, name } => {
                let target = self.method_target(
                    receiver.as_ref(),
                    name,
                    arity,
                    &call.args,
                    call.scope,
                    call.pos,
                    0,
                );
                self.calls
                    .borrow_mut()
                    .insert((call.pos, call.end, name.as_str()), target.clone());
                target
            }
            JCallee::New(ty) => match self.resolve_type(module, call.scope, ty) {
                TypeValue::Internal(c) => Target::Entity(self.constructor(c, arity, &call.args)),
                TypeValue::External(n) => Target::External(format!("{n}.{CONSTRUCTOR}")),
                TypeValue::Unknown => Target::Unresolved,
            },
            JCallee::This => match r.enclosing_type(module, call.scope, &self.t) {
                Some(c) => Target::Entity(self.constructor(c, arity, &call.args)),
                None => Target::Unresolved,
            },
            JCallee::Super => {
                let Some(class) = r.enclosing_type(module, call.scope, &self.t) else {
                    return Target::Unresolved;
                };
                self.t.tick();
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
    fn reference_target(
        &self,
        target: &'f JExpr,
        name: &'f str,
        scope: JScope,
        pos: u32,
    ) -> Target {
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

    fn import(&self, import: &JImport) -> Import {
        let r = self.r;
        let t = &self.t;
        t.tick();
        let (module, name) = match (import.on_demand, import.path.rsplit_once('.')) {
            (true, _) => (import.path.clone(), None),
            (false, Some((owner, member))) => (owner.to_string(), Some(member.to_string())),
            (false, None) => (String::new(), Some(import.path.clone())),
        };
        let target = match (import.is_static, import.on_demand) {
            (false, false) | (true, true) => match r.resolve_fqn(&import.path, t) {
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
            (true, false) => match (r.resolve_fqn(&module, t), name.as_deref()) {
                (TypeValue::Internal(c), Some(member)) => {
                    match r.table(c).and_then(|table| table.methods.get(member)) {
                        Some(overloads) => ImportTarget::Function(overloads.first),
                        _ => match r.member_type(c, member, t) {
                            Some(inner) => ImportTarget::Class(inner),
                            None => r
                                .table(c)
                                .map_or(ImportTarget::External(import.path.clone()), |table| {
                                    ImportTarget::Attribute(ModuleId(table.module))
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
                self.t.add(1 + bases.len() as u64);
                types.extend(bases.iter().filter_map(|b| b.resolved));
            }
        }
        for import in &self.facts.imports {
            if let TypeValue::Internal(c) = r.resolve_fqn(&import.path, &self.t) {
                types.insert(c);
            }
        }
        self.t.add(types.len() as u64);
        let mut out: Vec<ModuleId> = types
            .into_iter()
            .filter_map(|c| r.class_module.get(c.index()).copied())
            .filter(|m| *m != self.module)
            .collect();
        out.sort_unstable();
        out
    }

    fn route(&self, route: &'f crate::lang::java::JRoute) -> RouteDraft {
        let r = self.r;
        self.t.tick();
        let handler = match &route.handler {
            JHandler::Method(m) => {
                HandlerDraft::Entity(EntityId::Function(r.function_id(self.module, *m)))
            }
            JHandler::Lambda(scope) => HandlerDraft::Lambda(self.caller_node(*scope)),
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
