//! Strong updates of literal keys: after `d = {"a": f1}; d["a"] = f2`, a
//! read of `d["a"]` sees `f2` alone, as a read of a name sees its last
//! binding ([`super::reach`]).
//!
//! The points-to analysis is flow-insensitive for container elements: every
//! store to a key flows into one node, read by every read of that key. This
//! pass narrows a read of a literal key of a local name to the stores (and
//! the display's element) that can reach it, with the same scan as names.
//! It does so only where nothing else can change the container between them:
//! the name is bound only to dict or list displays in its scope, and every
//! read of it in the file is a literal-key read or store
//! (`d.update(...)`, `f(d)`, `e = d`, `d[k] = v` with a computed key, or a
//! read from a nested scope leave every read of the name as it was).
//! A module's dict that another module imports and writes to by a literal
//! key is not seen by the module's own reads that a local store precedes;
//! within a file, the narrowing is exact.
//!
//! Reads through a path of literal keys (`d["a"]["b"]`, up to
//! [`MAX_PATH`] keys) are narrowed the same way, where every object on the
//! way is reached only through that path: a display nested in the name's
//! display, or one stored under a literal key, that is only ever the
//! container of a literal-key read or store. Their definitions are the
//! name's bindings and the stores to the path or to any of its prefixes
//! (`d["a"] = {...}` replaces what `d["a"]["b"]` sees), each followed
//! through its displays to the key read.

use rustc_hash::{FxHashMap, FxHashSet};

use super::extract::Block;
use super::facts::{
    BindValue, ContainerKind, Effect, PythonFacts, Reach, ScopeRef, ValueExpr, position_name,
    position_of,
};
use super::reach::reaching;

/// Bindings a name may have in its scope for its reads to be narrowed.
const MAX_BINDINGS: usize = 16;

/// The longest path of literal keys whose reads are narrowed.
pub(super) const MAX_PATH: usize = 4;

/// A use of a name and the literal keys read through it, in source order:
/// `d["a"]["b"]` is `(d, [a, b])`. `None` for anything else, for a bare
/// name, and past [`MAX_PATH`] keys.
pub(super) fn key_path(value: &ValueExpr) -> Option<(u32, Vec<u32>)> {
    let mut keys = Vec::new();
    let mut at = value;
    loop {
        match at {
            ValueExpr::ElemAt(inner, key) => {
                if keys.len() == MAX_PATH {
                    return None;
                }
                keys.push(*key);
                at = inner;
            }
            ValueExpr::Use(u) if !keys.is_empty() => {
                keys.reverse();
                return Some((*u, keys));
            }
            _ => return None,
        }
    }
}

/// A store `name[literal] = value` whose container is a plain name or a
/// path of literal keys (`name["a"][literal] = value`): the effect's index
/// in [`PythonFacts::effects`], and where it takes effect.
#[derive(Debug, Clone, Copy)]
pub(super) struct KeyedStore {
    pub effect: u32,
    pub pos: u32,
    pub block: u32,
}

impl KeyedStore {
    /// The store's name use, the path of keys it stores under (its own key
    /// last) and its value, as extracted (`None` once the effect is
    /// anything else).
    fn of(self, facts: &PythonFacts) -> Option<(u32, Vec<u32>, &ValueExpr)> {
        let Some((
            _,
            Effect::ElemStore {
                container,
                key: Some(key),
                value,
            },
        )) = facts.effects.get(self.effect as usize)
        else {
            return None;
        };
        let (u, mut path) = match container {
            ValueExpr::Use(u) => (*u, Vec::new()),
            other => key_path(other).filter(|(_, path)| path.len() < MAX_PATH)?,
        };
        path.push(*key);
        Some((u, path, value))
    }
}

/// What defines the value of one key of a name at a point of its scope.
#[derive(Clone, Copy)]
enum Definition {
    /// A binding of the name (to a display).
    Binding(u32),
    /// A store to the key.
    Store(usize),
}

/// The definitions of one key of one name in source order, with their
/// position and block, and their indices (the scan's list).
type Definitions = (Vec<(Definition, (u32, u32))>, Vec<u32>);

/// A local name: its scope and name id.
type Name = (ScopeRef, u32);

/// What a path of literal keys below a name holds: `d["a"]["b"]` is
/// `(d, [a, b])`.
type Place = (Name, Vec<u32>);

/// A store to a tracked name: the key path it stores under, its value, and
/// its position and block.
struct Stored {
    path: Vec<u32>,
    value: ValueExpr,
    at: (u32, u32),
}

/// Rewrites each literal-key read of a tracked local name (see the module
/// docs) into the values that can reach it. `use_at`, `binding_at` and
/// `stores` give positions and blocks, as for [`super::reach::compute`];
/// `has_slices` says whether the file has a [`ValueExpr::Slice`].
pub(super) fn strong_updates(
    facts: &mut PythonFacts,
    use_at: &[(u32, u32)],
    binding_at: &[(u32, u32)],
    blocks: &[Block],
    stores: &[KeyedStore],
    has_slices: bool,
) {
    // Most files have neither: they cost nothing here.
    if has_slices {
        slices(facts, stores);
    }
    if stores.is_empty() {
        return;
    }
    let tracked = tracked_names(facts, stores);
    if tracked.is_empty() {
        return;
    }
    let names: Vec<Name> = facts.uses.iter().map(|u| (u.scope, u.name)).collect();
    // The stores of each tracked name, with their key path and value, and
    // their indices by place.
    let mut keyed: Vec<Stored> = Vec::new();
    let mut stores_of: FxHashMap<Place, Vec<usize>> = FxHashMap::default();
    for store in stores {
        if let Some((u, path, value)) = store.of(facts)
            && let Some(&name) = names.get(u as usize)
            && tracked.contains(&name)
        {
            stores_of
                .entry((name, path.clone()))
                .or_default()
                .push(keyed.len());
            keyed.push(Stored {
                path,
                value: value.clone(),
                at: (store.pos, store.block),
            });
        }
    }
    // Reads by literal-key paths, and how often each path's object appears
    // at all and how often only as the container of a literal-key read or
    // store: an object that appears otherwise (`f(d["a"])`, `e = d["a"]`,
    // `d["a"][k] = v`) may change out of sight.
    let mut reads: Vec<(u32, Vec<u32>)> = Vec::new();
    let mut appearances: FxHashMap<Place, (u32, u32)> = FxHashMap::default();
    for_each_value(facts, &mut |value| {
        if let Some((u, path)) = key_path(value)
            && let Some(&name) = names.get(u as usize)
            && tracked.contains(&name)
        {
            if path.len() > 1 {
                let prefix = path[..path.len() - 1].to_vec();
                appearances.entry((name, prefix)).or_default().1 += 1;
            }
            appearances.entry((name, path.clone())).or_default().0 += 1;
            reads.push((u, path));
        }
        false
    });
    for (_, effect) in &facts.effects {
        if let Effect::ElemStore {
            container,
            key: Some(_),
            ..
        } = effect
            && let Some((u, path)) = key_path(container)
            && let Some(&name) = names.get(u as usize)
        {
            appearances.entry((name, path)).or_default().1 += 1;
        }
    }
    let hidden = |name: Name, path: &[u32]| {
        appearances
            .get(&(name, path.to_vec()))
            .is_some_and(|(all, as_container)| all == as_container)
    };
    // Bindings of each tracked name, in source order.
    let mut bindings: FxHashMap<Name, Vec<u32>> = FxHashMap::default();
    for (index, binding) in facts.bindings.iter().enumerate() {
        if tracked.contains(&(binding.scope, binding.name)) {
            bindings
                .entry((binding.scope, binding.name))
                .or_default()
                .push(u32::try_from(index).unwrap_or(u32::MAX));
        }
    }
    let display_bindings: Vec<Option<&ValueExpr>> = facts
        .bindings
        .iter()
        .map(|b| match &b.value {
            BindValue::Expr(value) => Some(value),
            _ => None,
        })
        .collect();
    // Each read's replacement, computed on the facts as extracted.
    let mut replacements: FxHashMap<(u32, Vec<u32>), ValueExpr> = FxHashMap::default();
    // Per place, once: its definitions, or `None` where it is not narrowed.
    let mut definitions_of: FxHashMap<Place, Option<Definitions>> = FxHashMap::default();
    for (u, path) in reads {
        let Some(&name) = names.get(u as usize) else {
            continue;
        };
        let read = (u, path);
        if replacements.contains_key(&read) {
            continue;
        }
        let path = read.1.as_slice();
        let definitions = definitions_of
            .entry((name, path.to_vec()))
            .or_insert_with(|| {
                if !(1..path.len()).all(|len| hidden(name, &path[..len])) {
                    return None;
                }
                // A store to a prefix is a definition of every path below
                // it: past a few, deeper reads keep every store rather than
                // copy them into each path's list (quadratic in a file of
                // many of both).
                let prefixes: Vec<&[usize]> = (1..path.len())
                    .filter_map(|len| stores_of.get(&(name, path[..len].to_vec())))
                    .map(Vec::as_slice)
                    .collect();
                if prefixes.iter().map(|s| s.len()).sum::<usize>() > MAX_BINDINGS {
                    return None;
                }
                let own = stores_of.get(&(name, path.to_vec())).map(Vec::as_slice);
                let mut definitions: Vec<(Definition, (u32, u32))> = bindings
                    .get(&name)
                    .into_iter()
                    .flatten()
                    .map(|b| {
                        let at = binding_at.get(*b as usize).copied().unwrap_or((0, 0));
                        (Definition::Binding(*b), at)
                    })
                    .collect();
                // Stores to the path and to each of its prefixes.
                for index in prefixes.into_iter().chain(own).flatten() {
                    if let Some(stored) = keyed.get(*index) {
                        definitions.push((Definition::Store(*index), stored.at));
                    }
                }
                // Stable: a binding and a store at one position keep source order.
                definitions.sort_by_key(|(_, at)| at.0);
                let order = (0..u32::try_from(definitions.len()).unwrap_or(0)).collect();
                Some((definitions, order))
            });
        let Some(definitions) = definitions else {
            continue;
        };
        let (definitions, order) = (definitions.0.as_slice(), definitions.1.as_slice());
        let at = |d: u32| definitions.get(d as usize).map_or((0, 0), |(_, at)| *at);
        let (pos, block) = use_at.get(u as usize).copied().unwrap_or((0, 0));
        let Some(seen) = reaching(order, at, pos, block, blocks) else {
            continue;
        };
        let mut values = Vec::new();
        let mut known = !seen.is_empty();
        for d in seen {
            let (value, keys) = match definitions.get(d as usize).map(|(d, _)| *d) {
                Some(Definition::Store(index)) => match keyed.get(index) {
                    Some(stored) => (&stored.value, path.get(stored.path.len()..).unwrap_or(&[])),
                    None => {
                        known = false;
                        continue;
                    }
                },
                Some(Definition::Binding(b)) => {
                    match display_bindings.get(b as usize).copied().flatten() {
                        Some(value) => (value, path),
                        None => {
                            known = false;
                            continue;
                        }
                    }
                }
                None => {
                    known = false;
                    continue;
                }
            };
            match element_at(value, keys) {
                Some(Some(value)) => values.push(value.clone()),
                // The display has no such key: this definition adds nothing.
                Some(None) => {}
                None => known = false,
            }
        }
        if !known || values.is_empty() {
            continue;
        }
        let value = if values.len() == 1 {
            values.pop().unwrap_or(ValueExpr::Unknown)
        } else {
            ValueExpr::union(values)
        };
        replacements.insert(read, value);
    }
    if replacements.is_empty() {
        return;
    }
    for_each_value(facts, &mut |value| {
        if let Some(key) = key_path(value)
            && let Some(replacement) = replacements.get(&key)
        {
            *value = replacement.clone();
            return true;
        }
        false
    });
}

/// What `value[k1][k2]...` is, followed through displays: `Some(Some(v))`
/// the element, `Some(None)` where a display lacks the key (the
/// definition adds nothing), `None` where the way leads through anything
/// but a display of literal keys (`{**other}`, `[*xs, f]`, a name, a
/// call): the value may come from elsewhere.
fn element_at<'v>(value: &'v ValueExpr, keys: &[u32]) -> Option<Option<&'v ValueExpr>> {
    let mut at = value;
    for key in keys {
        let ValueExpr::Container(display) = at else {
            return None;
        };
        if display.elements.iter().any(|(k, _)| k.is_none()) {
            return None;
        }
        match display
            .elements
            .iter()
            .rev()
            .find(|(k, _)| *k == Some(*key))
        {
            Some((_, element)) => at = element,
            None => return Some(None),
        }
    }
    Some(Some(at))
}

/// The local names (scope and name id) whose literal-key reads can be
/// narrowed: bound only to dict or list displays in their scope, and read
/// only as the container of a literal-key read or store.
fn tracked_names(facts: &mut PythonFacts, stores: &[KeyedStore]) -> FxHashSet<Name> {
    let mut fresh: FxHashMap<Name, bool> = FxHashMap::default();
    for binding in &facts.bindings {
        let display = match &binding.value {
            BindValue::Expr(ValueExpr::Container(display)) => matches!(
                facts.container_kinds.get(display.site as usize),
                Some(ContainerKind::Dict | ContainerKind::List | ContainerKind::Tuple)
            ),
            _ => false,
        };
        *fresh.entry((binding.scope, binding.name)).or_insert(true) &= display;
    }
    fresh.retain(|_, fresh| *fresh);
    // Every read of a name scans its bindings: a name bound very often is
    // left flow-insensitive rather than made quadratic.
    let mut count: FxHashMap<Name, usize> = FxHashMap::default();
    for binding in &facts.bindings {
        *count.entry((binding.scope, binding.name)).or_default() += 1;
    }
    fresh.retain(|name, _| count.get(name).is_some_and(|n| *n <= MAX_BINDINGS));
    if fresh.is_empty() {
        return FxHashSet::default();
    }
    // Uses that are the container of a literal-key read or store.
    let mut operands: FxHashSet<u32> = FxHashSet::default();
    for store in stores {
        if let Some((u, _, _)) = store.of(facts) {
            operands.insert(u);
        }
    }
    let mut reads = Vec::new();
    for_each_value(facts, &mut |value| {
        match value {
            ValueExpr::ElemAt(inner, _) => {
                if let ValueExpr::Use(u) = **inner {
                    reads.push(u);
                }
            }
            ValueExpr::Slice(slice) => {
                if let ValueExpr::Use(u) = slice.value {
                    reads.push(u);
                }
            }
            _ => {}
        }
        false
    });
    operands.extend(reads);
    let mut escaped: FxHashSet<u32> = FxHashSet::default();
    for (index, read) in facts.uses.iter().enumerate() {
        let index = u32::try_from(index).unwrap_or(u32::MAX);
        if read.reach == Reach::Enclosing {
            // A read from a nested scope (or a `global` one) may be this
            // name's container: any scope's name of that spelling is out.
            escaped.insert(read.name);
        } else if !operands.contains(&index) {
            escaped.insert(read.name);
        }
    }
    fresh
        .into_keys()
        .filter(|(_, name)| !escaped.contains(name))
        .collect()
}

/// Calls `f` on every value expression of `facts` and on each of their
/// parts, outermost first; the parts of one that `f` replaced (it returns
/// true) are not visited: a replacement may hold the read it replaced.
fn for_each_value(facts: &mut PythonFacts, f: &mut impl FnMut(&mut ValueExpr) -> bool) {
    for binding in &mut facts.bindings {
        match &mut binding.value {
            BindValue::Expr(value) => visit(value, f),
            BindValue::Param {
                annotation,
                default,
                ..
            } => {
                for value in [annotation, default].into_iter().flatten() {
                    visit(value, f);
                }
            }
            BindValue::Import(_) => {}
        }
    }
    for call in &mut facts.calls {
        visit(&mut call.callee, f);
        for arg in &mut call.args {
            visit(&mut arg.value, f);
        }
    }
    for lambda in &mut facts.lambdas {
        visit(&mut lambda.body, f);
    }
    for (_, effect) in &mut facts.effects {
        match effect {
            Effect::Return { value, .. } | Effect::Yield { value, .. } | Effect::Eval(value) => {
                visit(value, f);
            }
            Effect::AttrStore { object, value, .. } => {
                visit(object, f);
                visit(value, f);
            }
            Effect::ElemStore {
                container, value, ..
            } => {
                visit(container, f);
                visit(value, f);
            }
        }
    }
    for class in &mut facts.classes {
        for (_, value) in &mut class.bases {
            visit(value, f);
        }
    }
    for function in &mut facts.functions {
        if let Some(value) = &mut function.returns_value {
            visit(value, f);
        }
    }
}

fn visit(value: &mut ValueExpr, f: &mut impl FnMut(&mut ValueExpr) -> bool) {
    if f(value) {
        return;
    }
    match value {
        ValueExpr::Attr(inner, _)
        | ValueExpr::Elem(inner)
        | ValueExpr::ElemAt(inner, _)
        | ValueExpr::Instance(inner)
        | ValueExpr::Caught(inner) => visit(inner, f),
        ValueExpr::Slice(slice) => visit(&mut slice.value, f),
        ValueExpr::Container(display) => {
            for (_, element) in display.elements.iter_mut() {
                visit(element, f);
            }
        }
        ValueExpr::Union(parts) => {
            for part in parts.iter_mut() {
                visit(part, f);
            }
        }
        ValueExpr::SuperOf(pair) => {
            visit(&mut pair.0, f);
            visit(&mut pair.1, f);
        }
        ValueExpr::Use(_)
        | ValueExpr::Call(_)
        | ValueExpr::Lambda(_)
        | ValueExpr::Function(_)
        | ValueExpr::Class(_)
        | ValueExpr::Super
        | ValueExpr::StrLiteral
        | ValueExpr::Ref(_)
        | ValueExpr::Unknown => {}
    }
}

/// Rewrites each literal-bound slice of a tracked name (see the module
/// docs) that no store writes to, and whose read sees one binding to a list
/// or tuple display of positional elements, into a display of the elements
/// it selects (`parts[1:]` of `[header, body, footer]` is `[body, footer]`).
fn slices(facts: &mut PythonFacts, stores: &[KeyedStore]) {
    let mut reads: Vec<(u32, u32, Option<u32>)> = Vec::new();
    for_each_value(facts, &mut |value| {
        if let ValueExpr::Slice(slice) = value
            && let ValueExpr::Use(u) = slice.value
        {
            reads.push((u, slice.start, slice.stop));
        }
        false
    });
    // A new display needs a site of its own, numbered after the file's.
    if reads.is_empty() || facts.container_kinds.len() != facts.containers as usize {
        return;
    }
    let tracked = tracked_names(facts, stores);
    let mut written: FxHashSet<Name> = FxHashSet::default();
    for store in stores {
        // A store under a longer path changes an element, not which
        // elements the list holds.
        if let Some((u, path, _)) = store.of(facts)
            && path.len() == 1
            && let Some(read) = facts.uses.get(u as usize)
        {
            written.insert((read.scope, read.name));
        }
    }
    // Name ids of the positions `[0]`, `[1]`, ...
    let mut position_id: FxHashMap<u32, u32> = FxHashMap::default();
    for (id, name) in facts.names.iter().enumerate() {
        if let Some(index) = position_of(name).and_then(|i| u32::try_from(i).ok()) {
            position_id.insert(index, u32::try_from(id).unwrap_or(u32::MAX));
        }
    }
    let mut selected: FxHashMap<u32, (ContainerKind, Vec<ValueExpr>)> = FxHashMap::default();
    for (u, start, stop) in reads {
        let Some(read) = facts.uses.get(u as usize) else {
            continue;
        };
        let name = (read.scope, read.name);
        if !tracked.contains(&name) || written.contains(&name) || selected.contains_key(&u) {
            continue;
        }
        let Reach::One(b) = read.reach else {
            continue;
        };
        let Some(BindValue::Expr(ValueExpr::Container(display))) =
            facts.bindings.get(b as usize).map(|b| &b.value)
        else {
            continue;
        };
        let Some(kind @ (ContainerKind::List | ContainerKind::Tuple)) =
            facts.container_kinds.get(display.site as usize).copied()
        else {
            continue;
        };
        let positional = display.elements.iter().enumerate().all(|(i, (key, _))| {
            key.is_some()
                && *key
                    == u32::try_from(i)
                        .ok()
                        .and_then(|i| position_id.get(&i).copied())
        });
        if !positional {
            continue;
        }
        let len = display.elements.len();
        let end = stop.map_or(len, |stop| (stop as usize).min(len));
        let elements = display
            .elements
            .get(start as usize..end)
            .unwrap_or(&[])
            .iter()
            .map(|(_, value)| value.clone())
            .collect();
        selected.insert(u, (kind, elements));
    }
    if selected.is_empty() {
        return;
    }
    let mut replacements: FxHashMap<u32, ValueExpr> = FxHashMap::default();
    let mut order: Vec<u32> = selected.keys().copied().collect();
    // Sites numbered in the order of the reads, the same on every run.
    order.sort_unstable();
    for u in order {
        let Some((kind, elements)) = selected.remove(&u) else {
            continue;
        };
        let site = facts.containers;
        facts.containers = facts.containers.saturating_add(1);
        facts.container_kinds.push(kind);
        let mut keyed = Vec::with_capacity(elements.len());
        for (position, value) in elements.into_iter().enumerate() {
            let position = u32::try_from(position).unwrap_or(u32::MAX);
            let id = *position_id.entry(position).or_insert_with(|| {
                facts.names.push(position_name(u64::from(position)));
                u32::try_from(facts.names.len() - 1).unwrap_or(u32::MAX)
            });
            keyed.push((Some(id), value));
        }
        replacements.insert(u, ValueExpr::container(site, keyed));
    }
    for_each_value(facts, &mut |value| {
        if let ValueExpr::Slice(slice) = value
            && let ValueExpr::Use(u) = slice.value
            && let Some(replacement) = replacements.get(&u)
        {
            *value = replacement.clone();
            return true;
        }
        false
    });
}
