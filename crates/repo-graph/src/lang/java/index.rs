//! Lookup indexes built once per unit or chain: overloads by arity and
//! literal kinds, a unit's types and imports by name, and the nearest
//! declaration of a member along a cut superclass chain.

use super::calls::arg_score;
use super::resolve::*;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::lang::java::{ArgKind, FieldFacts, ImportFacts, JavaFacts, MethodFacts, Scope};
use crate::model::{ClassId, FunctionId, JavaTypeKind};

/// One overload as overload resolution sees it.
pub(super) struct Candidate {
    pub(super) id: FunctionId,
    pub(super) params: u32,
    pub(super) varargs: bool,
    /// [`category`] of each parameter.
    pub(super) kinds: Box<[u8]>,
}

impl Candidate {
    pub(super) fn accepts(&self, arity: u32) -> bool {
        if self.varargs {
            arity.saturating_add(1) >= self.params
        } else {
            arity == self.params
        }
    }

    pub(super) fn score(&self, args: &[ArgKind]) -> i32 {
        args.iter()
            .zip(self.kinds.iter())
            .map(|(a, k)| arg_score(*a, CATEGORIES.get(usize::from(*k)).copied().unwrap_or("")))
            .sum()
    }
}

/// The methods of one name in one type (or at the top of a unit).
pub(super) struct Overloads {
    /// The first in source order (a method reference takes any arity).
    pub(super) first: FunctionId,
    /// Fixed-arity overloads by (arity, source order); of those with the
    /// same arity and parameter categories only the first is kept, since
    /// no literal argument can prefer a later one.
    pub(super) fixed: Vec<Candidate>,
    /// Varargs overloads in source order, deduplicated the same way.
    pub(super) varargs: Vec<Candidate>,
}

impl Overloads {
    pub(super) fn new(first: FunctionId) -> Self {
        Overloads {
            first,
            fixed: Vec::new(),
            varargs: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, id: FunctionId, method: &MethodFacts) {
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
    pub(super) fn finish(&mut self) {
        self.fixed.sort_by_key(|c| (c.params, c.id));
        for list in [&mut self.fixed, &mut self.varargs] {
            if list.len() > 1 {
                let mut seen: HashSet<(u32, Box<[u8]>)> = HashSet::default();
                list.retain(|c| seen.insert((c.params, c.kinds.clone())));
            }
        }
    }

    /// Fixed-arity overloads taking exactly `arity` arguments.
    pub(super) fn with_arity(&self, arity: u32) -> &[Candidate] {
        let start = self.fixed.partition_point(|c| c.params < arity);
        let end = self.fixed.partition_point(|c| c.params <= arity);
        self.fixed.get(start..end).unwrap_or(&[])
    }

    pub(super) fn takes(&self, arity: u32) -> bool {
        !self.with_arity(arity).is_empty() || self.varargs.iter().any(|c| c.accepts(arity))
    }

    /// The best overload for `arity` arguments (any when `None`) with these
    /// literal kinds: highest [`arg_score`] total, then first in source order.
    pub(super) fn best(
        &self,
        arity: Option<u32>,
        args: &[ArgKind],
        t: &ModuleWork,
    ) -> Option<FunctionId> {
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
pub(super) struct TypeTable<'f> {
    pub(super) module: u32,
    pub(super) local: u32,
    /// Methods by name (constructors under [`CONSTRUCTOR`]).
    pub(super) methods: HashMap<&'f str, Overloads>,
    pub(super) fields: HashMap<&'f str, &'f FieldFacts>,
    /// Member types by simple name (the first declared wins).
    pub(super) member_types: HashMap<&'f str, ClassId>,
    pub(super) is_interface: bool,
}

/// The type tables of one compilation unit, before merging.
pub(super) struct UnitIndex<'f> {
    pub(super) package: Option<&'f str>,
    pub(super) scoped: HashMap<(Scope, &'f str), ClassId>,
    pub(super) fqns: Vec<(String, ClassId)>,
    pub(super) top_level: Vec<(&'f str, ClassId)>,
    pub(super) tables: Vec<(ClassId, TypeTable<'f>)>,
    pub(super) work: u64,
}

impl<'f> UnitIndex<'f> {
    pub(super) fn new(
        facts: &'f JavaFacts,
        module: u32,
        class_base: u32,
        function_base: u32,
    ) -> Self {
        let mut scoped: HashMap<(Scope, &str), ClassId> = HashMap::default();
        let mut fqns = Vec::new();
        let mut top_level = Vec::new();
        let mut tables: Vec<(ClassId, TypeTable<'f>)> = Vec::with_capacity(facts.types.len());
        let mut work = 0u64;
        for (i, t) in facts.types.iter().enumerate() {
            let id = ClassId(class_base + i as u32);
            work += 1 + t.fields.len() as u64;
            scoped.entry((t.parent, t.name.as_str())).or_insert(id);
            if t.parent == Scope::Unit {
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
            if let Scope::Type(outer) = t.parent
                && let Some((_, table)) = tables.get_mut(outer as usize)
            {
                table
                    .member_types
                    .entry(t.name.as_str())
                    .or_insert(ClassId(class_base + i as u32));
            }
        }
        for (i, method) in facts.methods.iter().enumerate() {
            if let Scope::Type(t) = method.parent
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
pub(super) struct ImportIndex<'f> {
    /// `import p.T;` by simple name (the first wins).
    pub(super) single: HashMap<&'f str, &'f str>,
    /// `import static p.T.m;` by member name, in source order.
    pub(super) static_single: HashMap<&'f str, Vec<(usize, &'f ImportFacts)>>,
    /// `import p.*;`, `import p.T.*;` and `import static p.T.*;`, in source order.
    pub(super) on_demand: Vec<(usize, &'f ImportFacts)>,
}

impl<'f> ImportIndex<'f> {
    pub(super) fn new(facts: &'f JavaFacts) -> Self {
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
pub(super) enum MemberKey<'a> {
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
pub(super) struct ChainIndex<'f> {
    pub(super) keys: HashMap<MemberKey<'f>, u32>,
    /// `[left, right, value]`; node 0 is the empty tree.
    pub(super) nodes: Vec<[u32; 3]>,
    /// Leaves of the tree: a power of two, at least the number of keys.
    pub(super) width: u32,
    /// Per class id: the root of its version (0: none).
    pub(super) roots: Vec<u32>,
    /// Per class id: distance from the top of its superclass chain.
    pub(super) depth: Vec<u32>,
}

impl<'f> ChainIndex<'f> {
    pub(super) fn insert(&mut self, node: u32, lo: u32, hi: u32, key: u32, value: u32) -> u32 {
        let [left, right, _] = self
            .nodes
            .get(node as usize)
            .copied()
            .unwrap_or([0, 0, NO_ENTRY]);
        let new = if hi - lo <= 1 {
            [0, 0, value]
        } else {
            let mid = lo + (hi - lo) / 2;
            if key < mid {
                [self.insert(left, lo, mid, key, value), right, NO_ENTRY]
            } else {
                [left, self.insert(right, mid, hi, key, value), NO_ENTRY]
            }
        };
        self.nodes.push(new);
        u32::try_from(self.nodes.len() - 1).unwrap_or(0)
    }

    /// The nearest type at or above `class` in its superclass chain that
    /// declares `key`, if `class` has a version.
    pub(super) fn nearest<'a>(
        &'a self,
        class: ClassId,
        key: MemberKey<'a>,
        t: &ModuleWork,
    ) -> Option<ClassId> {
        t.tick();
        let keys: &HashMap<MemberKey<'a>, u32> = &self.keys;
        let key = *keys.get(&key)?;
        let mut node = *self.roots.get(class.index())?;
        let (mut lo, mut hi) = (0, self.width);
        while node != 0 {
            t.tick();
            let [left, right, value] = *self.nodes.get(node as usize)?;
            if hi - lo <= 1 {
                return (value != NO_ENTRY).then_some(ClassId(value));
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
