//! Classes in the points-to analysis: which class defines an attribute,
//! the nodes of class attributes, methods found through the MRO, and the
//! C3 linearization of the bases the first stage found.

use rustc_hash::{FxHashMap, FxHashSet};

use super::facts::{BindValue, ScopeRef, ValueExpr};
use super::resolve::{Analysis, MAX_MRO};
use super::solve::{Delivery, Obj};
use crate::model::{Base, BaseRelation, ClassId, FunctionId, ModuleId};

/// What the analysis learns of the program's classes: their MROs, which
/// class owns each attribute and the node holding it, the bases outside
/// the program, and the classes it raises. Its fields are private: this
/// file's methods are the only code that writes them, the transfer
/// functions read them through the accessors below.
#[derive(Default)]
pub(super) struct ClassTables {
    /// Per (class, attribute atom): the node of the attribute's values.
    class_attrs: FxHashMap<(ClassId, u32), u32>,
    /// Per (class, attribute atom): the class of its MRO that defines it.
    owners: FxHashMap<(ClassId, u32), ClassId>,
    /// Per Python class id: its self-attribute atoms.
    self_attrs: FxHashMap<ClassId, Vec<u32>>,
    /// Each class's base expressions as written, and their nodes.
    base_nodes: Vec<(ClassId, Vec<(String, u32)>)>,
    mro: FxHashMap<ClassId, Vec<ClassId>>,
    /// Per class: its bases outside the repository (interned dotted names),
    /// where an attribute no class of the program defines comes from.
    external_bases: FxHashMap<ClassId, Vec<u32>>,
    /// Classes the program raises (`raise C`, `raise C(...)`).
    raised: FxHashSet<ClassId>,
    /// Names of the program's properties (atoms).
    property_names: FxHashSet<u32>,
    /// For each class, the raised classes that inherit from it (built once
    /// the first stage has found the raise sites).
    raised_by_base: FxHashMap<ClassId, Vec<ClassId>>,
    /// MROs cut at [`MAX_MRO`].
    mro_cut: u64,
}

impl ClassTables {
    /// A property of the program is named `atom`: a bare read of an
    /// attribute of that name may call it.
    pub(super) fn note_property(&mut self, atom: u32) {
        self.property_names.insert(atom);
    }

    /// Whether some property of the program is named `atom`.
    pub(super) fn is_property_name(&self, atom: u32) -> bool {
        self.property_names.contains(&atom)
    }

    /// The self-attribute atoms of `class` (`self.x = ...` in its methods).
    pub(super) fn set_self_attrs(&mut self, class: ClassId, atoms: Vec<u32>) {
        self.self_attrs.insert(class, atoms);
    }

    /// The nodes of classes' base expressions, as a module is compiled.
    pub(super) fn add_base_nodes(&mut self, bases: Vec<(ClassId, Vec<(String, u32)>)>) {
        self.base_nodes.extend(bases);
    }

    /// `class` is raised somewhere (`raise C`, `raise C(...)`).
    pub(super) fn note_raised(&mut self, class: ClassId) {
        self.raised.insert(class);
    }

    /// The raised classes that inherit from `base` (itself included).
    pub(super) fn raised_from(&self, base: ClassId) -> &[ClassId] {
        self.raised_by_base.get(&base).map_or(&[], Vec::as_slice)
    }

    /// Whether `class`'s MRO has `owner` (the class itself counts).
    pub(super) fn inherits(&self, class: ClassId, owner: ClassId) -> bool {
        class == owner || self.mro.get(&class).is_some_and(|mro| mro.contains(&owner))
    }

    /// Whether any class of the program has a base outside it.
    pub(super) fn has_external_bases(&self) -> bool {
        !self.external_bases.is_empty()
    }

    /// The outside bases of `class` (interned dotted names).
    pub(super) fn external_bases_of(&self, class: ClassId) -> &[u32] {
        self.external_bases.get(&class).map_or(&[], Vec::as_slice)
    }

    /// How many MROs were cut at [`MAX_MRO`].
    pub(super) fn mro_cut(&self) -> u64 {
        self.mro_cut
    }
}

impl<'f> Analysis<'f> {
    /// Once the MROs are known: for each class, the raised classes that
    /// inherit from it, so that `except Base` catches their instances.
    pub(super) fn index_raised(&mut self) {
        let mut raised: Vec<ClassId> = self.classes.raised.iter().copied().collect();
        raised.sort_unstable();
        for class in raised {
            for base in self.mro_of(class) {
                self.engine.work += 1;
                self.classes
                    .raised_by_base
                    .entry(base)
                    .or_default()
                    .push(class);
            }
        }
    }

    /// The innermost method around `scope`, and its class.
    pub(super) fn enclosing_method(
        &self,
        module: ModuleId,
        scope: ScopeRef,
    ) -> Option<(ClassId, FunctionId)> {
        let facts = self.facts(module)?;
        let mut current = Some(scope);
        let mut steps = 0usize;
        while let Some(s) = current {
            if let ScopeRef::Function(f) = s
                && let Some(ScopeRef::Class(c)) = facts.functions.get(f as usize).map(|f| f.parent)
            {
                return Some((self.class_id(module, c), self.function_id(module, f)));
            }
            steps += 1;
            if steps > facts.functions.len() + facts.lambdas.len() + facts.classes.len() + 1 {
                return None;
            }
            current = facts.parent_scope(s);
        }
        None
    }

    /// Whether class `class` itself defines `atom` (body binding or `self.` attribute).
    pub(super) fn has_attr(&self, class: ClassId, atom: u32) -> bool {
        let Some((module, local, _)) = self.local_class(class) else {
            return false;
        };
        self.names[module.index()].contains_key(&(ScopeRef::Class(local), atom))
            || self
                .classes
                .self_attrs
                .get(&class)
                .is_some_and(|a| a.contains(&atom))
    }

    /// Whether `atom` is bound in `class`'s own body to a class statement.
    pub(super) fn defines_class(&self, class: ClassId, atom: u32) -> bool {
        let Some((module, local, _)) = self.local_class(class) else {
            return false;
        };
        let Some(facts) = self.facts(module) else {
            return false;
        };
        self.names[module.index()]
            .get(&(ScopeRef::Class(local), atom))
            .is_some_and(|bindings| {
                bindings.iter().any(|b| {
                    matches!(
                        facts.bindings.get(*b as usize).map(|b| &b.value),
                        Some(BindValue::Expr(ValueExpr::Class(_)))
                    )
                })
            })
    }

    pub(super) fn mro_of(&self, class: ClassId) -> Vec<ClassId> {
        match self.classes.mro.get(&class) {
            Some(mro) if !mro.is_empty() => mro.clone(),
            _ => vec![class],
        }
    }

    /// The class in `class`'s MRO that defines `atom`, else `class` itself
    /// (where a store will put it).
    pub(super) fn owner(&mut self, class: ClassId, atom: u32) -> ClassId {
        if let Some(owner) = self.classes.owners.get(&(class, atom)) {
            return *owner;
        }
        // Classes whose MRO was cut, whose lookups continue where theirs ends.
        let mut visited = Vec::new();
        let mut current = class;
        let owner = loop {
            if let Some(owner) = self.classes.owners.get(&(current, atom)) {
                break Some(*owner);
            }
            visited.push(current);
            let mro = self.mro_of(current);
            self.engine.work += mro.len() as u64;
            if let Some(found) = mro.iter().find(|k| self.has_attr(**k, atom)) {
                break Some(*found);
            }
            match mro.last() {
                Some(last) if mro.len() >= MAX_MRO && !visited.contains(last) => current = *last,
                _ => break None,
            }
        };
        for c in &visited {
            self.classes.owners.insert((*c, atom), owner.unwrap_or(*c));
        }
        owner.unwrap_or(class)
    }

    /// What `atom` is on `class` when no class of its MRO defines it but
    /// one inherits from outside the repository: the outside base's
    /// attribute (`ext.Base.run` for `self.run()` in a subclass of
    /// `ext.Base`). `None` when a class of the program defines it.
    pub(super) fn inherited_from_outside(&mut self, class: ClassId, atom: u32) -> Vec<Obj> {
        if self.classes.external_bases.is_empty() {
            return Vec::new();
        }
        let owner = self.owner(class, atom);
        if self.has_attr(owner, atom) {
            return Vec::new();
        }
        let mut found = Vec::new();
        for k in self.mro_of(class) {
            let bases = self
                .classes
                .external_bases
                .get(&k)
                .cloned()
                .unwrap_or_default();
            for base in bases {
                if let Some(obj) = self.external_attr(base, atom)
                    && !found.contains(&obj)
                {
                    found.push(obj);
                }
            }
        }
        found
    }

    pub(super) fn class_attr(&mut self, class: ClassId, atom: u32, out: &mut Vec<Delivery>) -> u32 {
        if let Some(node) = self.classes.class_attrs.get(&(class, atom)) {
            return *node;
        }
        let node = match self.local_class(class) {
            Some((module, local, _)) => self.name_all(module, ScopeRef::Class(local), atom, out),
            None => self.engine.node(),
        };
        self.classes.class_attrs.insert((class, atom), node);
        node
    }

    /// A method a class defines with a plain `def`, looked up through the MRO.
    pub(super) fn static_method(&mut self, class: ClassId, name: &str) -> Option<FunctionId> {
        let atom = self.atoms.get(name)?;
        let owner = self.owner(class, atom);
        let (module, local, _) = self.local_class(owner)?;
        let facts = self.facts(module)?;
        let bindings = self.names[module.index()].get(&(ScopeRef::Class(local), atom))?;
        bindings
            .iter()
            .rev()
            .find_map(|b| match &facts.bindings.get(*b as usize)?.value {
                BindValue::Expr(ValueExpr::Function(f)) => Some(self.function_id(module, *f)),
                _ => None,
            })
    }

    /// Bases from the first stage's values, then C3 MROs (memoised, capped).
    pub(super) fn compute_mros(&mut self) -> Vec<(ClassId, Vec<Base>)> {
        let base_nodes = std::mem::take(&mut self.classes.base_nodes);
        let mut direct: FxHashMap<ClassId, Vec<ClassId>> = FxHashMap::default();
        let mut bases = Vec::with_capacity(base_nodes.len());
        for (class, nodes) in base_nodes {
            let mut resolved_all = Vec::new();
            let mut list = Vec::with_capacity(nodes.len());
            for (text, node) in nodes {
                let classes: Vec<ClassId> = self
                    .engine
                    .values(node)
                    .filter_map(|v| match v {
                        Obj::Class(k) if k != class && self.local_class(k).is_some() => Some(k),
                        _ => None,
                    })
                    .collect();
                let outside: Vec<u32> = self
                    .engine
                    .values(node)
                    .filter_map(|v| match v {
                        // Every class has `object`'s few methods; an
                        // attribute missing from a class written
                        // `class C(object)` is not `object`'s.
                        Obj::External(name) if self.externals.text(name) != "builtins.object" => {
                            Some(name)
                        }
                        _ => None,
                    })
                    .collect();
                if !outside.is_empty() {
                    self.classes
                        .external_bases
                        .entry(class)
                        .or_default()
                        .extend(outside);
                }
                list.push(Base {
                    text,
                    resolved: classes.first().copied(),
                    relation: BaseRelation::Inherits,
                });
                resolved_all.extend(classes);
            }
            direct.insert(class, resolved_all);
            bases.push((class, list));
        }
        let classes: Vec<ClassId> = bases.iter().map(|(c, _)| *c).collect();
        for class in classes {
            self.linearize(class, &direct);
        }
        bases
    }

    /// C3 linearization of `class` and (first) every class it inherits
    /// from, with an explicit stack; a cycle or an inconsistent hierarchy
    /// falls back to depth-first order.
    pub(super) fn linearize(&mut self, class: ClassId, direct: &FxHashMap<ClassId, Vec<ClassId>>) {
        if self.classes.mro.contains_key(&class) {
            return;
        }
        let mut stack = vec![(class, false)];
        let mut on_stack: rustc_hash::FxHashSet<ClassId> = rustc_hash::FxHashSet::default();
        while let Some((c, expanded)) = stack.pop() {
            if self.classes.mro.contains_key(&c) {
                continue;
            }
            let bases = direct.get(&c).cloned().unwrap_or_default();
            if !expanded {
                on_stack.insert(c);
                stack.push((c, true));
                for b in bases.iter().rev() {
                    if !self.classes.mro.contains_key(b) && !on_stack.contains(b) {
                        stack.push((*b, false));
                    }
                }
                continue;
            }
            on_stack.remove(&c);
            // Bases still on the stack form a cycle: leave them out.
            let usable: Vec<ClassId> = bases
                .into_iter()
                .filter(|b| self.classes.mro.contains_key(b))
                .collect();
            let mut sequences: Vec<Vec<ClassId>> = usable.iter().map(|b| self.mro_of(*b)).collect();
            sequences.push(usable.clone());
            let mut result = vec![c];
            let mut consistent = true;
            loop {
                self.engine.work += 1;
                sequences.retain(|s| !s.is_empty());
                if sequences.is_empty() || result.len() >= MAX_MRO {
                    break;
                }
                let head = sequences
                    .iter()
                    .map(|s| s[0])
                    .find(|candidate| !sequences.iter().any(|s| s[1..].contains(candidate)));
                let Some(head) = head else {
                    consistent = false;
                    break;
                };
                result.push(head);
                for s in &mut sequences {
                    if s.first() == Some(&head) {
                        s.remove(0);
                    }
                }
            }
            if !consistent {
                result = vec![c];
                for b in &usable {
                    for k in self.mro_of(*b) {
                        if !result.contains(&k) && result.len() < MAX_MRO {
                            result.push(k);
                        }
                    }
                }
            }
            if result.len() >= MAX_MRO {
                self.classes.mro_cut += 1;
            }
            self.classes.mro.insert(c, result);
        }
    }

    // ----- the solve -----
}
