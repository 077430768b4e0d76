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

use rustc_hash::{FxHashMap, FxHashSet};

use super::extract::Block;
use super::facts::{
    BindValue, ContainerKind, Effect, PythonFacts, Reach, ScopeRef, ValueExpr, position_name,
    position_of,
};
use super::reach::reaching;

/// Bindings a name may have in its scope for its reads to be narrowed.
const MAX_BINDINGS: usize = 16;

/// A store `name[literal] = value` whose container is a plain name: the
/// effect's index in [`PythonFacts::effects`], and where it takes effect.
#[derive(Debug, Clone, Copy)]
pub(super) struct KeyedStore {
    pub effect: u32,
    pub pos: u32,
    pub block: u32,
}

impl KeyedStore {
    /// The store's container use, key and value, as extracted (`None` once
    /// the effect is anything else).
    fn of(self, facts: &PythonFacts) -> Option<(u32, u32, &ValueExpr)> {
        match facts.effects.get(self.effect as usize) {
            Some((
                _,
                Effect::ElemStore {
                    container: ValueExpr::Use(u),
                    key: Some(key),
                    value,
                },
            )) => Some((*u, *key, value)),
            _ => None,
        }
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
    // The stores of each tracked name, with their key and value.
    let mut keyed: Vec<(u32, u32, ValueExpr, (u32, u32))> = Vec::new();
    for store in stores {
        if let Some((u, key, value)) = store.of(facts)
            && let Some(read) = facts.uses.get(u as usize)
            && tracked.contains(&(read.scope, read.name))
        {
            keyed.push((u, key, value.clone(), (store.pos, store.block)));
        }
    }
    let mut reads = Vec::new();
    for_each_value(facts, &mut |value| {
        if let ValueExpr::ElemAt(inner, key) = value
            && let ValueExpr::Use(u) = **inner
        {
            reads.push((u, *key));
        }
        false
    });
    let mut stores_of: FxHashMap<((ScopeRef, u32), u32), Vec<usize>> = FxHashMap::default();
    for (index, (u, key, _, _)) in keyed.iter().enumerate() {
        if let Some(read) = facts.uses.get(*u as usize) {
            stores_of
                .entry(((read.scope, read.name), *key))
                .or_default()
                .push(index);
        }
    }
    // Bindings of each tracked name, in source order.
    let mut bindings: FxHashMap<(ScopeRef, u32), Vec<u32>> = FxHashMap::default();
    for (index, binding) in facts.bindings.iter().enumerate() {
        if tracked.contains(&(binding.scope, binding.name)) {
            bindings
                .entry((binding.scope, binding.name))
                .or_default()
                .push(u32::try_from(index).unwrap_or(u32::MAX));
        }
    }
    let names: Vec<(ScopeRef, u32)> = facts.uses.iter().map(|u| (u.scope, u.name)).collect();
    let display_bindings: Vec<Option<&ValueExpr>> = facts
        .bindings
        .iter()
        .map(|b| match &b.value {
            BindValue::Expr(value) => Some(value),
            _ => None,
        })
        .collect();
    // Each read's replacement, computed on the facts as extracted.
    let mut replacements: FxHashMap<(u32, u32), ValueExpr> = FxHashMap::default();
    let mut definitions_of: FxHashMap<((ScopeRef, u32), u32), Definitions> = FxHashMap::default();
    for (u, key) in reads {
        let Some(&name) = names.get(u as usize) else {
            continue;
        };
        if !tracked.contains(&name) || replacements.contains_key(&(u, key)) {
            continue;
        }
        let definitions = definitions_of.entry((name, key)).or_insert_with(|| {
            let mut definitions: Vec<(Definition, (u32, u32))> = bindings
                .get(&name)
                .into_iter()
                .flatten()
                .map(|b| {
                    let at = binding_at.get(*b as usize).copied().unwrap_or((0, 0));
                    (Definition::Binding(*b), at)
                })
                .collect();
            definitions.extend(
                stores_of
                    .get(&(name, key))
                    .into_iter()
                    .flatten()
                    .filter_map(|index| Some((Definition::Store(*index), keyed.get(*index)?.3))),
            );
            // Stable: a binding and a store at one position keep source order.
            definitions.sort_by_key(|(_, at)| at.0);
            let order = (0..u32::try_from(definitions.len()).unwrap_or(0)).collect();
            (definitions, order)
        });
        let (definitions, order) = (definitions.0.as_slice(), definitions.1.as_slice());
        let at = |d: u32| definitions.get(d as usize).map_or((0, 0), |(_, at)| *at);
        let (pos, block) = use_at.get(u as usize).copied().unwrap_or((0, 0));
        let Some(seen) = reaching(order, at, pos, block, blocks) else {
            continue;
        };
        let mut values = Vec::new();
        let mut known = !seen.is_empty();
        for d in seen {
            match definitions.get(d as usize).map(|(d, _)| *d) {
                Some(Definition::Store(index)) => {
                    if let Some((_, _, value, _)) = keyed.get(index) {
                        values.push(value.clone());
                    }
                }
                Some(Definition::Binding(b)) => {
                    match display_bindings.get(b as usize).copied().flatten() {
                        Some(ValueExpr::Container(display)) => {
                            if display.elements.iter().any(|(k, _)| k.is_none()) {
                                // `{**other}`, `[*xs, f]`: the key may come from elsewhere.
                                known = false;
                            }
                            if let Some((_, value)) =
                                display.elements.iter().rev().find(|(k, _)| *k == Some(key))
                            {
                                values.push(value.clone());
                            }
                        }
                        _ => known = false,
                    }
                }
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
        replacements.insert((u, key), value);
    }
    if replacements.is_empty() {
        return;
    }
    for_each_value(facts, &mut |value| {
        if let ValueExpr::ElemAt(inner, key) = value
            && let ValueExpr::Use(u) = **inner
            && let Some(replacement) = replacements.get(&(u, *key))
        {
            *value = replacement.clone();
            return true;
        }
        false
    });
}

/// The local names (scope and name id) whose literal-key reads can be
/// narrowed: bound only to dict or list displays in their scope, and read
/// only as the container of a literal-key read or store.
fn tracked_names(facts: &mut PythonFacts, stores: &[KeyedStore]) -> FxHashSet<(ScopeRef, u32)> {
    let mut fresh: FxHashMap<(ScopeRef, u32), bool> = FxHashMap::default();
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
    let mut count: FxHashMap<(ScopeRef, u32), usize> = FxHashMap::default();
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
    let mut written: FxHashSet<(ScopeRef, u32)> = FxHashSet::default();
    for store in stores {
        if let Some((u, _, _)) = store.of(facts)
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
