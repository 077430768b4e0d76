//! Resolution of one module's call sites by declared types: locals,
//! fields, parameters, static imports, call chains, overloads.

use super::index::*;
use super::resolve::*;
use std::cell::{Cell, RefCell};

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::lang::java::{
    ArgKind, CONSTRUCTOR, Call, Callee, Expr, Handler, ImportFacts, JavaFacts, Local, LocalType,
    ParamFacts, Scope, erase,
};
use crate::model::{
    BaseRelation, ClassId, EntityId, FunctionId, Import, ImportKind, ImportTarget, ModuleId,
};
use crate::routes::{HandlerDraft, RouteDraft, RouteScope};

/// Same-named locals of one scope by start, each with the nearest earlier
/// one that ends later (see [`Ctx::local_at`]).
pub(super) struct Locals<'f> {
    pub(super) list: Vec<&'f Local>,
    pub(super) outer: Vec<u32>,
}

impl<'f> Locals<'f> {
    pub(super) fn new(mut list: Vec<&'f Local>) -> Self {
        list.sort_by_key(|l| l.start);
        let mut outer = Vec::with_capacity(list.len());
        let mut stack: Vec<usize> = Vec::new();
        for (i, local) in list.iter().enumerate() {
            while let Some(&j) = stack.last()
                && list[j].end <= local.end
            {
                stack.pop();
            }
            outer.push(stack.last().map_or(NO_ENTRY, |&j| j as u32));
            stack.push(i);
        }
        Locals { list, outer }
    }
}

/// A method lookup: receiver type, name, arity, literal kinds, `super.`.
pub(super) type MethodKey<'f> = (ClassId, &'f str, Option<u32>, &'f [ArgKind], bool);
/// A call by name, arity and literal kinds.
pub(super) type CallKey<'f> = (&'f str, Option<u32>, &'f [ArgKind]);
/// What a call without a receiver finds in the enclosing types: the
/// method, and the innermost enclosing type.
pub(super) type Unqualified = (Option<FunctionId>, Option<ClassId>);
/// An invocation: its start and end bytes, and the method's name.
pub(super) type InvocationKey<'f> = (u32, u32, &'f str);

/// Resolution state for one module: its locals and parameters by name, and
/// memo tables for everything that can be looked up twice.
pub(super) struct Ctx<'f, 'r> {
    pub(super) r: &'r JavaResolver<'f>,
    pub(super) module: ModuleId,
    pub(super) facts: &'f JavaFacts,
    pub(super) t: ModuleWork,
    pub(super) caches: TypeCaches<'f>,
    pub(super) locals: HashMap<(Scope, &'f str), Locals<'f>>,
    /// Parameters by (method, name); the first of a name wins.
    pub(super) params: HashMap<(u32, &'f str), &'f ParamFacts>,
    /// Methods outside any type (scripts, or a class lost to a syntax error).
    pub(super) top_level: HashMap<&'f str, Overloads>,
    /// Whether the evaluation under way was cut short by [`MAX_DEPTH`]
    /// (its result is then not memoised).
    pub(super) cut: Cell<bool>,
    pub(super) methods: RefCell<HashMap<MethodKey<'f>, Option<FunctionId>>>,
    /// Calls without a receiver: the method found in the enclosing types,
    /// and the innermost enclosing type.
    pub(super) unqualified: RefCell<HashMap<(Scope, CallKey<'f>), Unqualified>>,
    pub(super) statics: RefCell<HashMap<CallKey<'f>, Option<CallTarget>>>,
    pub(super) external_supers: RefCell<HashMap<ClassId, Option<String>>>,
    /// Call sites resolved so far, by invocation.
    pub(super) calls: RefCell<HashMap<InvocationKey<'f>, CallTarget>>,
    /// Invocations evaluated as receivers before their own call site.
    pub(super) invocations: RefCell<HashMap<InvocationKey<'f>, ExprType>>,
    /// Values of `var` locals, by address.
    pub(super) inferred: RefCell<HashMap<usize, ExprType>>,
    pub(super) callers: RefCell<HashMap<Scope, EntityId>>,
}

impl<'f, 'r> Ctx<'f, 'r> {
    pub(super) fn new(r: &'r JavaResolver<'f>, module: ModuleId, facts: &'f JavaFacts) -> Self {
        let t = ModuleWork::default();
        let mut by_name: HashMap<(Scope, &str), Vec<&Local>> =
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
            if method.parent == Scope::Unit {
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
    pub(super) fn resolve_type(&self, module: ModuleId, scope: Scope, name: &str) -> ResolvedType {
        self.r
            .resolve_type(module, scope, name, &self.caches, &self.t, 0)
    }

    pub(super) fn instance_of(&self, module: ModuleId, scope: Scope, name: &str) -> ExprType {
        match self.resolve_type(module, scope, name) {
            ResolvedType::Internal(c) => ExprType::Instance(c),
            ResolvedType::External(n) => ExprType::ExternalInstance(n),
            ResolvedType::Unknown => ExprType::Unknown,
        }
    }

    /// A name for a value outside the repository, unless it grew past
    /// [`MAX_EXTERNAL_NAME`].
    pub(super) fn external(&self, name: String) -> Option<String> {
        if name.len() > MAX_EXTERNAL_NAME {
            self.t.cut(Bound::ExternalName);
            return None;
        }
        Some(name)
    }

    pub(super) fn caller_node(&self, scope: Scope) -> EntityId {
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
    pub(super) fn local_at(&self, locals: &Locals<'f>, pos: u32) -> Option<&'f Local> {
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
                Some(&o) if o != NO_ENTRY => i = o as usize,
                _ => return None,
            }
        }
        self.t.cut(Bound::Locals);
        None
    }

    /// The variable `name` as seen at byte `pos` of `scope`: locals, then
    /// parameters, then fields of the enclosing types, innermost first.
    pub(super) fn lookup_var(&self, scope: Scope, name: &'f str, pos: u32) -> Option<VarDecl<'f>> {
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
                return Some(VarDecl::Local(local));
            }
            match s {
                Scope::Method(m) => {
                    if let Some(param) = self.params.get(&(m, name)) {
                        return Some(VarDecl::Param(module, s, param));
                    }
                }
                Scope::Type(ty) => {
                    if let Some((m, scope, field)) = r.field(r.class_id(module, ty), name, &self.t)
                    {
                        return Some(VarDecl::Field(m, scope, field));
                    }
                }
                Scope::Unit => {}
            }
            current = r.parent_scope(module, s);
        }
        None
    }

    pub(super) fn var_value(&self, var: VarDecl<'f>, depth: u32) -> ExprType {
        match var {
            VarDecl::Local(local) => match &local.ty {
                LocalType::Declared(ty) => self.instance_of(self.module, local.scope, ty),
                LocalType::Inferred(expr) => {
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
                LocalType::Untyped => ExprType::Unknown,
            },
            VarDecl::Param(module, scope, param) => {
                self.instance_of(module, scope, &erase(&param.type_text))
            }
            VarDecl::Field(module, scope, field) => {
                self.instance_of(module, scope, &erase(&field.type_text))
            }
        }
    }

    /// What calling `target` evaluates to: an instance of its declared
    /// return type.
    pub(super) fn target_value(&self, target: &CallTarget) -> ExprType {
        let r = self.r;
        match target {
            CallTarget::Entity(EntityId::Function(f)) => match r.method_facts(*f) {
                Some((module, method)) => match &method.returns {
                    Some(ty) => {
                        let local = f.0.saturating_sub(r.function_base[module.index()]);
                        self.instance_of(module, Scope::Method(local), &erase(ty))
                    }
                    None => ExprType::Unknown,
                },
                None => ExprType::Unknown,
            },
            CallTarget::External(n) => self
                .external(format!("{n}()"))
                .map_or(ExprType::Unknown, ExprType::ExternalInstance),
            _ => ExprType::Unknown,
        }
    }

    /// The value of an invocation: from its call site when that is
    /// resolved (with its literal arguments), else evaluated here once.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn invocation_value(
        &self,
        receiver: Option<&'f Expr>,
        name: &'f str,
        arity: u32,
        start: u32,
        end: u32,
        scope: Scope,
        depth: u32,
    ) -> ExprType {
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

    pub(super) fn eval(&self, expr: &'f Expr, scope: Scope, pos: u32, depth: u32) -> ExprType {
        if depth > MAX_DEPTH {
            self.cut.set(true);
            self.t.cut(Bound::Depth);
            return ExprType::Unknown;
        }
        self.t.tick();
        let r = self.r;
        match expr {
            Expr::Name(name) => {
                if let Some(var) = self.lookup_var(scope, name, pos) {
                    return self.var_value(var, depth + 1);
                }
                match self.resolve_type(self.module, scope, name) {
                    ResolvedType::Internal(c) => ExprType::Type(c),
                    ResolvedType::External(n) => ExprType::ExternalType(n),
                    ResolvedType::Unknown if name.starts_with(|c: char| c.is_ascii_lowercase()) => {
                        ExprType::Package(name.clone())
                    }
                    ResolvedType::Unknown => ExprType::Unknown,
                }
            }
            Expr::Field(base, field) => {
                let base = self.eval(base, scope, pos, depth + 1);
                if field == "this" {
                    return match base {
                        ExprType::Type(c) => ExprType::Instance(c),
                        _ => ExprType::Unknown,
                    };
                }
                match base {
                    ExprType::Type(c) | ExprType::Instance(c) => {
                        if let Some((module, scope, f)) = r.field(c, field, &self.t) {
                            return self.instance_of(module, scope, &erase(&f.type_text));
                        }
                        match (&base, r.member_type(c, field, &self.t)) {
                            (ExprType::Type(_), Some(inner)) => ExprType::Type(inner),
                            _ => ExprType::Unknown,
                        }
                    }
                    ExprType::ExternalType(t)
                        if field.starts_with(|c: char| c.is_ascii_uppercase()) =>
                    {
                        self.external(format!("{t}.{field}"))
                            .map_or(ExprType::Unknown, ExprType::ExternalType)
                    }
                    ExprType::ExternalType(t) | ExprType::ExternalInstance(t) => self
                        .external(format!("{t}.{field}"))
                        .map_or(ExprType::Unknown, ExprType::ExternalInstance),
                    ExprType::Package(p) => {
                        let path = format!("{p}.{field}");
                        if let Some(c) = r.by_fqn.get(&path) {
                            ExprType::Type(*c)
                        } else if field.starts_with(|c: char| c.is_ascii_uppercase())
                            && !r.packages.contains(&path)
                        {
                            ExprType::ExternalType(path)
                        } else {
                            ExprType::Package(path)
                        }
                    }
                    ExprType::Unknown => ExprType::Unknown,
                }
            }
            Expr::Invoke {
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
            Expr::New(ty) | Expr::Cast(ty) => self.instance_of(self.module, scope, ty),
            Expr::Type(ty) => match self.resolve_type(self.module, scope, ty) {
                ResolvedType::Internal(c) => ExprType::Type(c),
                ResolvedType::External(n) => ExprType::ExternalType(n),
                ResolvedType::Unknown => ExprType::Unknown,
            },
            Expr::Str => ExprType::ExternalInstance("java.lang.String".to_string()),
            Expr::This => r
                .enclosing_type(self.module, scope, &self.t)
                .map_or(ExprType::Unknown, ExprType::Instance),
            Expr::Super | Expr::Other(_) => ExprType::Unknown,
        }
    }

    /// [`JavaResolver::find_method`], memoised.
    pub(super) fn find_method(
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
    pub(super) fn constructor(
        &self,
        class: ClassId,
        arity: Option<u32>,
        args: &[ArgKind],
    ) -> EntityId {
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
    pub(super) fn enclosing_method(
        &self,
        scope: Scope,
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
            if let Scope::Type(ty) = s {
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
            if let Scope::Type(ty) = s {
                above = (above.0, Some(r.class_id(self.module, ty)));
            }
            memo.insert((s, call), above);
        }
        above
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn method_target(
        &self,
        receiver: Option<&'f Expr>,
        name: &'f str,
        arity: Option<u32>,
        args: &'f [ArgKind],
        scope: Scope,
        pos: u32,
        depth: u32,
    ) -> CallTarget {
        let r = self.r;
        match receiver {
            None => {
                let (found, innermost) = self.enclosing_method(scope, name, arity, args);
                if let Some(f) = found {
                    return CallTarget::Entity(EntityId::Function(f));
                }
                if let Some(target) = self.static_import(name, arity, args) {
                    return target;
                }
                if let Some(f) = self
                    .top_level
                    .get(name)
                    .and_then(|o| o.best(arity, args, &self.t))
                {
                    return CallTarget::Entity(EntityId::Function(f));
                }
                self.external_super_target(innermost, name)
            }
            Some(Expr::Super) => match r.enclosing_type(self.module, scope, &self.t) {
                Some(class) => self.inherited_target(class, name, arity, args, true),
                None => CallTarget::Unresolved,
            },
            Some(expr) => {
                let value = self.eval(expr, scope, pos, depth + 1);
                self.member_target(value, name, arity, args)
            }
        }
    }

    /// `name` called on `value`: a method of the class or its supertypes,
    /// else the external supertype's, else the external type's own.
    fn member_target(
        &self,
        value: ExprType,
        name: &'f str,
        arity: Option<u32>,
        args: &'f [ArgKind],
    ) -> CallTarget {
        match value {
            ExprType::Type(c) | ExprType::Instance(c) => {
                self.inherited_target(c, name, arity, args, false)
            }
            ExprType::ExternalType(t) | ExprType::ExternalInstance(t) => {
                CallTarget::External(format!("{t}.{name}"))
            }
            ExprType::Package(_) | ExprType::Unknown => CallTarget::Unresolved,
        }
    }

    /// A method `name` of `class` or its supertypes (past `class` itself
    /// when `skip_self`, for `super.name()`), else the external supertype's.
    fn inherited_target(
        &self,
        class: ClassId,
        name: &'f str,
        arity: Option<u32>,
        args: &'f [ArgKind],
        skip_self: bool,
    ) -> CallTarget {
        match self.find_method(class, name, arity, args, skip_self) {
            Some(f) => CallTarget::Entity(EntityId::Function(f)),
            None => self.external_super_target(Some(class), name),
        }
    }

    /// `name` on the first external supertype of `class`, if it has one.
    fn external_super_target(&self, class: Option<ClassId>, name: &str) -> CallTarget {
        match class.and_then(|c| self.external_super_name(c)) {
            Some(base) => CallTarget::External(format!("{base}.{name}")),
            None => CallTarget::Unresolved,
        }
    }

    pub(super) fn external_super_name(&self, class: ClassId) -> Option<String> {
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
    pub(super) fn static_import(
        &self,
        name: &'f str,
        arity: Option<u32>,
        args: &'f [ArgKind],
    ) -> Option<CallTarget> {
        self.t.tick();
        let key = (name, arity, args);
        if let Some(found) = self.statics.borrow().get(&key) {
            return found.clone();
        }
        let found = self.static_import_uncached(name, arity, args);
        self.statics.borrow_mut().insert(key, found.clone());
        found
    }

    pub(super) fn static_import_uncached(
        &self,
        name: &'f str,
        arity: Option<u32>,
        args: &'f [ArgKind],
    ) -> Option<CallTarget> {
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
                ResolvedType::Internal(c) => {
                    if let Some(f) = self.find_method(c, name, arity, args, false) {
                        return Some(CallTarget::Entity(EntityId::Function(f)));
                    }
                }
                ResolvedType::External(t) => {
                    fallback.get_or_insert(CallTarget::External(format!("{t}.{name}")));
                }
                ResolvedType::Unknown => {}
            }
        }
        fallback
    }

    pub(super) fn call_target(&self, call: &'f Call) -> CallTarget {
        let r = self.r;
        let module = self.module;
        let arity = Some(call.arity);
        match &call.callee {
            Callee::Method { receiver, name } => {
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
            Callee::New(ty) => match self.resolve_type(module, call.scope, ty) {
                ResolvedType::Internal(c) => {
                    CallTarget::Entity(self.constructor(c, arity, &call.args))
                }
                ResolvedType::External(n) => CallTarget::External(format!("{n}.{CONSTRUCTOR}")),
                ResolvedType::Unknown => CallTarget::Unresolved,
            },
            Callee::This => match r.enclosing_type(module, call.scope, &self.t) {
                Some(c) => CallTarget::Entity(self.constructor(c, arity, &call.args)),
                None => CallTarget::Unresolved,
            },
            Callee::Super => {
                let Some(class) = r.enclosing_type(module, call.scope, &self.t) else {
                    return CallTarget::Unresolved;
                };
                self.t.tick();
                let superclass = r.bases.get(class.index()).and_then(|bases| {
                    bases
                        .iter()
                        .filter(|b| b.relation == BaseRelation::Extends)
                        .find_map(|b| b.resolved)
                });
                match superclass {
                    Some(s) => CallTarget::Entity(self.constructor(s, arity, &call.args)),
                    None => match r.external_supers.get(class.index()).and_then(|e| e.first()) {
                        Some(base) => CallTarget::External(format!("{base}.{CONSTRUCTOR}")),
                        None => CallTarget::External(format!("java.lang.Object.{CONSTRUCTOR}")),
                    },
                }
            }
            Callee::Ref { target, name } => {
                self.reference_target(target, name, call.scope, call.pos)
            }
        }
    }

    /// `target::name`: any overload (the arity is not written).
    pub(super) fn reference_target(
        &self,
        target: &'f Expr,
        name: &'f str,
        scope: Scope,
        pos: u32,
    ) -> CallTarget {
        if matches!(target, Expr::Super) {
            return self.method_target(Some(target), name, None, &[], scope, pos, 0);
        }
        let value = self.eval(target, scope, pos, 0);
        if let (ExprType::Type(c) | ExprType::Instance(c), true) = (&value, name == CONSTRUCTOR) {
            return CallTarget::Entity(self.constructor(*c, None, &[]));
        }
        self.member_target(value, name, None, &[])
    }

    pub(super) fn import(&self, import: &ImportFacts) -> Import {
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
                ResolvedType::Internal(c) => ImportTarget::Class(c),
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
                (ResolvedType::Internal(c), Some(member)) => {
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
    pub(super) fn references(&self) -> Vec<ModuleId> {
        let r = self.r;
        let mut types: HashSet<ClassId> = HashSet::default();
        for name in &self.facts.type_names {
            if let ResolvedType::Internal(c) = self.resolve_type(self.module, Scope::Unit, name) {
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
            if let ResolvedType::Internal(c) = r.resolve_fqn(&import.path, &self.t) {
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

    pub(super) fn route(&self, route: &'f crate::lang::java::RouteFacts) -> RouteDraft {
        let r = self.r;
        self.t.tick();
        let handler = match &route.handler {
            Handler::Method(m) => {
                HandlerDraft::Entity(EntityId::Function(r.function_id(self.module, *m)))
            }
            Handler::Lambda(scope) => HandlerDraft::Lambda(self.caller_node(*scope)),
            Handler::Ref { target, name } => {
                match self.reference_target(target, name, route.scope, route.pos) {
                    CallTarget::Entity(e) => HandlerDraft::Entity(e),
                    CallTarget::External(n) => HandlerDraft::Text(n),
                    CallTarget::Unresolved => {
                        HandlerDraft::Text(format!("{}::{name}", target.render()))
                    }
                }
            }
            Handler::Object(expr) => match self.eval(expr, route.scope, route.pos, 0) {
                ExprType::Type(c) | ExprType::Instance(c) => {
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
pub(super) fn arg_score(arg: ArgKind, param: &str) -> i32 {
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

pub(super) fn numeric(param: &str, primitive: &str, boxed: &str, widening: &[&str]) -> i32 {
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

pub(super) fn is_primitive_or_box(name: &str) -> bool {
    PRIMITIVES.contains(&name)
        || matches!(
            name,
            "Integer" | "Long" | "Short" | "Byte" | "Character" | "Boolean" | "Float" | "Double"
        )
}
