//! The rules of the points-to analysis: what each constraint does with a
//! new value, how values change along edges, and what a call passes and
//! returns for each kind of callee (functions, methods, classes, instances,
//! lambdas, external names, container methods).

use super::facts::ScopeRef;
use super::facts::{CallKind, ValueExpr};
use super::resolve::{Analysis, ArgSlot, Callee, Constraint, Operand, Params};
use super::solve::{ContainerOp, Delivery, Obj, Transform};
use crate::model::{ClassId, EntityId, FunctionId, FunctionKind, ParamKind};

/// Positional parameters a `*args` argument is spread over.
const MAX_STAR_SPREAD: usize = 16;

impl<'f> Analysis<'f> {
    pub(super) fn flush(&mut self, out: &mut Vec<Delivery>) {
        while let Some(delivery) = out.pop() {
            self.deliver(delivery, out);
        }
    }

    pub(super) fn run(&mut self) {
        let mut out = Vec::new();
        self.flush(&mut out);
        while let Some((node, start, end)) = self.engine.pop() {
            // Edges and constraints added while this node is processed get
            // its values when they are added, so the lists are read once.
            let edges = self.engine.first_edge(node);
            let links = self.engine.first_link(node);
            for index in start..end {
                let Some(id) = self.engine.id_at(node, index) else {
                    break;
                };
                let Some(value) = self.engine.obj(id) else {
                    break;
                };
                let mut edge = edges;
                while let Some((to, transform, next)) = self.engine.edge_at(edge) {
                    self.deliver(
                        Delivery {
                            to,
                            transform,
                            value: id,
                        },
                        &mut out,
                    );
                    edge = next;
                }
                let mut link = links;
                while let Some((constraint, next)) = self.engine.link_at(link) {
                    self.engine.work += 1;
                    self.fire(constraint, value, &mut out);
                    link = next;
                }
                self.flush(&mut out);
            }
        }
        self.flush(&mut out);
    }

    pub(super) fn deliver(&mut self, delivery: Delivery, out: &mut Vec<Delivery>) {
        let Delivery {
            to,
            transform,
            value: id,
        } = delivery;
        if transform == Transform::Copy {
            self.engine.add_id(to, id);
            return;
        }
        let Some(value) = self.engine.obj(id) else {
            return;
        };
        match (transform, value) {
            (Transform::Copy, v) => self.engine.add(to, v),
            (Transform::Instantiate, Obj::Class(c)) => self.engine.add(to, Obj::Instance(c)),
            (Transform::Instantiate, v @ Obj::External(_)) => self.engine.add(to, v),
            (Transform::Instantiate, _) => {}
            (Transform::FromInstance(read), Obj::Function(f)) => {
                let Some(&(class, load)) = self.instance_reads.get(read as usize) else {
                    return;
                };
                let Some((_, function)) = self.local_function(f) else {
                    self.engine.add(to, value);
                    return;
                };
                if function.is_property {
                    self.property(load, f, class, to, out);
                    return;
                }
                let bound = match function.kind {
                    FunctionKind::Method | FunctionKind::ClassMethod => Obj::Bound(f),
                    _ => Obj::Function(f),
                };
                self.engine.add(to, bound);
            }
            (Transform::FromClass(_), Obj::Function(f)) => {
                let bound = match self.local_function(f) {
                    Some((_, function)) if function.kind == FunctionKind::ClassMethod => {
                        Obj::Bound(f)
                    }
                    _ => Obj::Function(f),
                };
                self.engine.add(to, bound);
            }
            (Transform::Receiver { class_level, owner }, v) => {
                let class = match v {
                    Obj::Instance(c) | Obj::Super(_, c) | Obj::Class(c) => c,
                    _ => return,
                };
                // Only objects that have this method: the same name read
                // from an unrelated class found another method.
                if !self.classes.inherits(class, owner) {
                    return;
                }
                let receiver = match (class_level, v) {
                    (true, _) => Obj::Class(class),
                    (false, Obj::Class(_)) => return,
                    (false, _) => Obj::Instance(class),
                };
                self.engine.add(to, receiver);
            }
            (_, v) => self.engine.add(to, v),
        }
    }

    /// Reading a property calls its getter.
    pub(super) fn property(
        &mut self,
        load: u32,
        getter: FunctionId,
        class: ClassId,
        to: u32,
        out: &mut Vec<Delivery>,
    ) {
        if let Some(l) = self.loads.get(load as usize) {
            self.property_edges
                .push((l.module, l.caller, EntityId::Function(getter)));
        }
        if let Some(first) = self
            .function_params
            .get(getter.index())
            .and_then(|p| p.slots.first())
            .map(|s| s.node)
            .filter(|n| *n != u32::MAX)
        {
            self.engine.add(first, Obj::Instance(class));
        }
        let ret = self.ret(getter);
        self.engine.edge(ret, to, Transform::Copy, out);
    }

    pub(super) fn needs_mro(value: Obj) -> bool {
        matches!(
            value,
            Obj::Class(_) | Obj::Instance(_) | Obj::Super(..) | Obj::Bound(..)
        )
    }

    pub(super) fn fire(&mut self, constraint: u32, value: Obj, out: &mut Vec<Delivery>) {
        let Some(c) = self.constraints.get(constraint as usize).copied() else {
            return;
        };
        self.engine.work += 1;
        if let (Constraint::Call { site }, Obj::Class(class)) = (c, value)
            && self
                .sites
                .get(site as usize)
                .is_some_and(|s| matches!(s.kind, CallKind::Raise | CallKind::RaisedCall))
        {
            self.classes.note_raised(class);
        }
        // The first stage sets aside what needs a method resolution order:
        // not a class a class defines in its body (`A.B` in `class
        // C(A.B)`), which no MRO can change and the MROs may need.
        let nested_class = match (c, value) {
            (Constraint::Load { attr, .. }, Obj::Class(class)) => self.defines_class(class, attr),
            _ => false,
        };
        if !self.second_stage
            && !nested_class
            && Self::needs_mro(value)
            && matches!(
                c,
                Constraint::Load { .. }
                    | Constraint::AttrStore { .. }
                    | Constraint::Call { .. }
                    | Constraint::SuperOf { .. }
                    | Constraint::SuperExplicit { .. }
                    | Constraint::Caught { .. }
            )
        {
            self.deferred.push((constraint, value));
            return;
        }
        match c {
            Constraint::Load { dst, attr, load } => self.load(value, attr, dst, load, out),
            Constraint::Call { site } => self.call(site, value, out),
            Constraint::Elem { dst } => self.elements(value, dst, out),
            Constraint::AttrStore {
                attr,
                value: stored,
            } => match value {
                Obj::Instance(class) | Obj::Class(class) => {
                    if self.local_class(class).is_none() {
                        return;
                    }
                    let owner = self.owner(class, attr);
                    let node = self.class_attr(owner, attr, out);
                    self.flow(stored, node, out);
                }
                Obj::Module(m) => {
                    let node = self.module_attr(m, attr, out);
                    self.flow(stored, node, out);
                }
                _ => {}
            },
            Constraint::Caught { dst } => match value {
                Obj::Class(caught) => {
                    let raised = self.classes.raised_from(caught).to_vec();
                    if raised.is_empty() {
                        self.engine.add(dst, Obj::Instance(caught));
                    }
                    for class in raised {
                        self.engine.add(dst, Obj::Instance(class));
                    }
                }
                Obj::External(_) => self.engine.add(dst, value),
                _ => {}
            },
            Constraint::SuperOf { class, dst } => {
                if let Obj::Instance(receiver) | Obj::Class(receiver) = value {
                    self.engine.add(dst, Obj::Super(class, receiver));
                }
            }
            Constraint::SuperExplicit { class, dst } => {
                if let Obj::Instance(receiver) | Obj::Class(receiver) = value {
                    let classes: Vec<ClassId> = self
                        .engine
                        .values(class)
                        .filter_map(|v| match v {
                            Obj::Class(c) => Some(c),
                            _ => None,
                        })
                        .collect();
                    for c in classes {
                        self.engine.add(dst, Obj::Super(c, receiver));
                    }
                }
            }
            Constraint::ElemStore { value: stored, key } => {
                if let Obj::Container(c) = value {
                    self.store_element(c, key, stored, out);
                }
            }
            Constraint::ElemAt { dst, key } => match value {
                Obj::Container(c) => {
                    let keyed = self.keyed(c, Some(key));
                    self.engine.edge(keyed, dst, Transform::Copy, out);
                    let unkeyed = self.keyed(c, None);
                    self.engine.edge(unkeyed, dst, Transform::Copy, out);
                }
                Obj::Tuple2(first, second) => {
                    let part = match self.atoms.text(key) {
                        "[0]" => Some(first),
                        "[1]" => Some(second),
                        _ => None,
                    };
                    if let Some(part) = part {
                        self.engine.edge(part, dst, Transform::Copy, out);
                    }
                }
                other => self.elements(other, dst, out),
            },
        }
    }

    pub(super) fn load(
        &mut self,
        value: Obj,
        attr: u32,
        dst: u32,
        load: u32,
        out: &mut Vec<Delivery>,
    ) {
        match value {
            Obj::Module(m) => {
                let node = self.module_attr(m, attr, out);
                self.engine.edge(node, dst, Transform::Copy, out);
            }
            Obj::Class(class) | Obj::Instance(class) => {
                if self.local_class(class).is_none() {
                    return;
                }
                let owner = self.owner(class, attr);
                let node = self.class_attr(owner, attr, out);
                let transform = if matches!(value, Obj::Instance(_)) {
                    self.instance_read(class, load)
                } else {
                    Transform::FromClass(class)
                };
                self.engine.edge(node, dst, transform, out);
                for obj in self.inherited_from_outside(class, attr) {
                    self.engine.add(dst, obj);
                }
            }
            Obj::Super(class, receiver) => {
                // After `class` in the receiver's MRO (else in its own).
                let mut mro = self.mro_of(receiver);
                let after = match mro.iter().position(|k| *k == class) {
                    Some(i) => i + 1,
                    None => {
                        mro = self.mro_of(class);
                        1
                    }
                };
                self.engine.work += mro.len() as u64;
                let owner = mro.iter().skip(after).find(|k| self.has_attr(**k, attr));
                if let Some(&owner) = owner {
                    let node = self.class_attr(owner, attr, out);
                    let transform = self.instance_read(receiver, load);
                    self.engine.edge(node, dst, transform, out);
                } else if self.classes.has_external_bases() {
                    // No class of the tree after `class` has it: an outside
                    // base of `class` or of a class after it does
                    // (`super().__init__()` in a subclass of `Thread`).
                    for k in mro.iter().skip(after.saturating_sub(1)) {
                        let bases = self.classes.external_bases_of(*k).to_vec();
                        for base in bases {
                            if let Some(obj) = self.external_attr(base, attr) {
                                self.engine.add(dst, obj);
                            }
                        }
                    }
                }
            }
            Obj::External(base) => {
                if let Some(obj) = self.external_attr(base, attr) {
                    self.engine.add(dst, obj);
                }
            }
            Obj::Container(c) => {
                if let Some(op) = ContainerOp::from_method(self.atoms.text(attr)) {
                    self.engine.add(dst, Obj::ContainerMethod(c, op));
                }
            }
            _ => {}
        }
    }

    pub(super) fn elements(&mut self, value: Obj, dst: u32, out: &mut Vec<Delivery>) {
        match value {
            Obj::Container(c) => {
                let node = self.elem(c);
                self.engine.edge(node, dst, Transform::Copy, out);
            }
            Obj::Generator(f) => {
                let node = self.yielded(f);
                self.engine.edge(node, dst, Transform::Copy, out);
            }
            Obj::Pairs(node) => self.engine.edge(node, dst, Transform::Copy, out),
            Obj::Tuple2(first, second) => {
                self.engine.edge(first, dst, Transform::Copy, out);
                self.engine.edge(second, dst, Transform::Copy, out);
            }
            _ => {}
        }
    }

    pub(super) fn call(&mut self, site: u32, value: Obj, out: &mut Vec<Delivery>) {
        let Some(s) = self.sites.get(site as usize) else {
            return;
        };
        let (result, kind) = (s.result, s.kind);
        match value {
            Obj::Function(f) => {
                self.target(site, EntityId::Function(f));
                self.pass_written_args(site, kind, f, 0, out);
                self.returns(f, result, out);
            }
            Obj::Bound(f) => {
                self.target(site, EntityId::Function(f));
                let receiver = self
                    .sites
                    .get(site as usize)
                    .map_or(u32::MAX, |s| s.receiver);
                let first = self
                    .function_params
                    .get(f.index())
                    .and_then(|p| p.slots.first())
                    .map_or(u32::MAX, |s| s.node);
                let method = self.local_function(f).and_then(|(module, function)| {
                    let ScopeRef::Class(c) = function.parent else {
                        return None;
                    };
                    Some((function.kind, self.class_id(module, c)))
                });
                if receiver != u32::MAX
                    && first != u32::MAX
                    && let Some((kind, owner)) = method
                {
                    let class_level = kind == FunctionKind::ClassMethod;
                    self.engine.edge(
                        receiver,
                        first,
                        Transform::Receiver { class_level, owner },
                        out,
                    );
                }
                self.pass_written_args(site, kind, f, 1, out);
                self.returns(f, result, out);
            }
            Obj::Class(class) => {
                if self.local_class(class).is_none() {
                    return;
                }
                self.engine.add(result, Obj::Instance(class));
                match self.static_method(class, "__init__") {
                    Some(init) => {
                        self.target(site, EntityId::Function(init));
                        self.receive(init, Obj::Instance(class));
                        self.pass_written_args(site, kind, init, 1, out);
                    }
                    None => {
                        self.target(site, EntityId::Class(class));
                        // A class that leaves `__init__` to a base from
                        // outside the tree runs that one.
                        let init = self.atoms.id("__init__");
                        for obj in self.inherited_from_outside(class, init) {
                            if let (Obj::External(name), Some(s)) =
                                (obj, self.sites.get_mut(site as usize))
                                && !s.outside_inits.contains(&name)
                                && s.outside_inits.len() < 4
                            {
                                s.outside_inits.push(name);
                            }
                        }
                    }
                }
            }
            Obj::Instance(class) => {
                if kind == CallKind::Raise || self.local_class(class).is_none() {
                    return;
                }
                if let Some(call) = self.static_method(class, "__call__") {
                    self.target(site, EntityId::Function(call));
                    self.receive(call, Obj::Instance(class));
                    self.pass_written_args(site, kind, call, 1, out);
                    self.returns(call, result, out);
                }
            }
            Obj::Lambda(l) => {
                self.pass_to(site, Callee::Lambda(l), 0, out);
                if let Some(node) = self.lambda_node.get(l as usize).copied() {
                    self.engine.edge(node, result, Transform::Copy, out);
                }
            }
            Obj::External(name) => self.external_call(site, name, out),
            Obj::ContainerMethod(c, op) => self.container_call(site, c, op, out),
            _ => {}
        }
    }

    pub(super) fn target(&mut self, site: u32, target: EntityId) {
        if let Some(s) = self.sites.get_mut(site as usize)
            && !s.targets.contains(&target)
        {
            s.targets.push(target);
        }
    }

    pub(super) fn receive(&mut self, function: FunctionId, receiver: Obj) {
        if let Some(node) = self
            .function_params
            .get(function.index())
            .and_then(|p| p.slots.first())
            .map(|s| s.node)
            .filter(|n| *n != u32::MAX)
        {
            self.engine.add(node, receiver);
        }
    }

    pub(super) fn returns(&mut self, function: FunctionId, result: u32, out: &mut Vec<Delivery>) {
        let generator = self
            .local_function(function)
            .is_some_and(|(_, f)| f.is_generator);
        if generator {
            self.engine.add(result, Obj::Generator(function));
        } else {
            let ret = self.ret(function);
            self.engine.edge(ret, result, Transform::Copy, out);
        }
    }

    pub(super) fn ret(&self, function: FunctionId) -> u32 {
        self.ret_base + function.0
    }

    pub(super) fn yielded(&self, function: FunctionId) -> u32 {
        self.yield_base + function.0
    }

    pub(super) fn pass_args(
        &mut self,
        site: u32,
        function: FunctionId,
        offset: u32,
        out: &mut Vec<Delivery>,
    ) {
        self.pass_to(site, Callee::Function(function), offset, out);
    }

    pub(super) fn params(&self, callee: Callee) -> &Params {
        static EMPTY: Params = Params {
            slots: Vec::new(),
            var_positional: None,
            var_keyword: None,
        };
        match callee {
            Callee::Function(f) => self.function_params.get(f.index()),
            Callee::Lambda(l) => self.lambda_params.get(l as usize),
        }
        .unwrap_or(&EMPTY)
    }

    pub(super) fn pass_to(
        &mut self,
        site: u32,
        callee: Callee,
        offset: u32,
        out: &mut Vec<Delivery>,
    ) {
        let (var_positional, var_keyword) = {
            let params = self.params(callee);
            (params.var_positional, params.var_keyword)
        };
        let mut positional = 0u32;
        let mut index = 0;
        while let Some((slot, op)) = self.site_arg(site, index) {
            index += 1;
            self.engine.work += 1;
            match slot {
                ArgSlot::Positional(p) => {
                    positional = positional.max(p + 1);
                    let index = (p + offset) as usize;
                    match self.params(callee).slots.get(index).copied() {
                        Some(s) if s.kind == ParamKind::Normal && s.node != u32::MAX => {
                            self.flow(op, s.node, out)
                        }
                        _ => {
                            if let Some(c) = var_positional {
                                let node = self.elem(c);
                                self.flow(op, node, out);
                            }
                        }
                    }
                }
                ArgSlot::Keyword(name) => {
                    let slot = self.params(callee).slots.iter().copied().find(|s| {
                        s.name == name
                            && matches!(s.kind, ParamKind::Normal | ParamKind::KeywordOnly)
                    });
                    match slot {
                        Some(s) if s.node != u32::MAX => self.flow(op, s.node, out),
                        _ => {
                            if let Some(c) = var_keyword {
                                let node = self.elem(c);
                                self.flow(op, node, out);
                            }
                        }
                    }
                }
                ArgSlot::Star => {
                    let Some(from) = self.node_of(op) else {
                        continue;
                    };
                    let start = (positional + offset) as usize;
                    let targets: Vec<u32> = self
                        .params(callee)
                        .slots
                        .iter()
                        .skip(start)
                        .filter(|s| s.kind == ParamKind::Normal && s.node != u32::MAX)
                        .take(MAX_STAR_SPREAD)
                        .map(|s| s.node)
                        .collect();
                    for node in targets {
                        self.constrain(from, Constraint::Elem { dst: node }, out);
                    }
                    if let Some(c) = var_positional {
                        let node = self.elem(c);
                        self.constrain(from, Constraint::Elem { dst: node }, out);
                    }
                }
                ArgSlot::DoubleStar => {}
            }
        }
    }

    /// [`Self::pass_args`], but not for an implicit call of a named
    /// function: one function handed to `map` by many callers is one set
    /// of parameters, and every caller's elements would reach every other
    /// caller's results (on Django, `map(conditional_escape, args)` in
    /// `format_html` made 5,700 spurious edges). The call is still an
    /// edge; a lambda, written where it is passed, still gets its arguments.
    fn pass_written_args(
        &mut self,
        site: u32,
        kind: CallKind,
        callee: FunctionId,
        offset: u32,
        out: &mut Vec<Delivery>,
    ) {
        if kind != CallKind::Implicit {
            self.pass_args(site, callee, offset, out);
        }
    }

    /// The `index`th argument of a call site (read one at a time: passing
    /// arguments changes the graph, and copying the list per callee would
    /// allocate on the solver's hot path).
    pub(super) fn site_arg(&self, site: u32, index: usize) -> Option<(ArgSlot, Operand)> {
        self.args_of(site).get(index).copied()
    }

    pub(super) fn arg(&self, site: u32, position: u32) -> Operand {
        self.args_of(site)
            .iter()
            .find_map(|(slot, op)| match slot {
                ArgSlot::Positional(p) if *p == position => Some(*op),
                _ => None,
            })
            .unwrap_or(Operand::None)
    }

    pub(super) fn external_call(&mut self, site: u32, name: u32, out: &mut Vec<Delivery>) {
        let Some(s) = self.sites.get_mut(site as usize) else {
            return;
        };
        // Python's own protocol calls on an outside object (`__iter__` of a
        // `str`) and an outside callable handed to `map` say nothing the
        // written call did not: no record, no made-up result.
        if s.kind == CallKind::Implicit {
            return;
        }
        if !s.externals.contains(&name) && s.externals.len() < 4 {
            s.externals.push(name);
        }
        let (result, kind) = (s.result, s.kind);
        let callee = KnownCallee::of(self.externals.text(name));
        let first = self.arg(site, 0);
        // An unknown decorator leaves the definition it decorates.
        if kind == CallKind::Decorator {
            self.flow(first, result, out);
            return;
        }
        match callee {
            KnownCallee::Next => {
                if let Some(from) = self.node_of(first) {
                    self.constrain(from, Constraint::Elem { dst: result }, out);
                }
            }
            // `dict(a=f, **other)`: a new dict, keyed by the keywords.
            KnownCallee::Dict => {
                let container = self.dict_made_at(site);
                let mut index = 0;
                while let Some((slot, op)) = self.site_arg(site, index) {
                    index += 1;
                    match slot {
                        ArgSlot::Keyword(name) => {
                            self.store_element(container, Some(name), op, out)
                        }
                        ArgSlot::Positional(_) | ArgSlot::DoubleStar => {
                            if let Some(from) = self.node_of(op) {
                                let all = self.elem(container);
                                self.constrain(from, Constraint::Elem { dst: all }, out);
                                let unkeyed = self.keyed(container, None);
                                self.constrain(from, Constraint::Elem { dst: unkeyed }, out);
                            }
                        }
                        ArgSlot::Star => {}
                    }
                }
                self.engine.add(result, Obj::Container(container));
            }
            // Callables handed to a builtin that calls them: `map(f, xs)`
            // and `filter(f, xs)` call `f` on each element.
            KnownCallee::MapOrFilter { filter } => {
                let mut args = Vec::new();
                let mut position = 1;
                while let op @ (Operand::Node(_) | Operand::Const(_)) = self.arg(site, position) {
                    let elements = self.elements_of(op, out);
                    args.push((ArgSlot::Positional(position - 1), elements));
                    position += 1;
                    if filter {
                        break;
                    }
                }
                let returned = self.implicit_call(site, first, args, out);
                let items = self.new_container();
                let elem = self.elem(items);
                if !filter {
                    if let Some(returned) = returned {
                        self.engine.edge(returned, elem, Transform::Copy, out);
                    }
                } else if let Some(from) = self.node_of(self.arg(site, 1)) {
                    self.constrain(from, Constraint::Elem { dst: elem }, out);
                }
                self.engine.add(result, Obj::Container(items));
                // Still the builtin's object too, for its other methods.
                if let Some(obj) = self.external_result(name) {
                    self.engine.add(result, obj);
                }
            }
            // `reduce(f, xs[, start])` calls `f(total, element)`.
            KnownCallee::Reduce => {
                let elements = self.elements_of(self.arg(site, 1), out);
                let total = match self.node_of(elements) {
                    Some(node) => {
                        let total = self.engine.node();
                        self.engine.edge(node, total, Transform::Copy, out);
                        self.flow(self.arg(site, 2), total, out);
                        Operand::Node(total)
                    }
                    None => Operand::None,
                };
                let args = vec![
                    (ArgSlot::Positional(0), total),
                    (ArgSlot::Positional(1), elements),
                ];
                if let (Some(returned), Operand::Node(total)) =
                    (self.implicit_call(site, first, args, out), total)
                {
                    self.engine.edge(returned, total, Transform::Copy, out);
                    self.engine.edge(returned, result, Transform::Copy, out);
                }
            }
            // `sorted(xs, key=f)`, `min(xs, key=f)`, `max(a, b, key=f)`:
            // `f` is called on each element (or each argument).
            KnownCallee::SortedMinMax { sorted } => {
                let several = matches!(self.arg(site, 1), Operand::Node(_) | Operand::Const(_));
                if let Some(key) = self.keyword_arg(site, "key") {
                    let item = match several {
                        false => self.elements_of(first, out),
                        true => {
                            let item = self.engine.node();
                            let mut position = 0;
                            while let op @ (Operand::Node(_) | Operand::Const(_)) =
                                self.arg(site, position)
                            {
                                self.flow(op, item, out);
                                position += 1;
                            }
                            Operand::Node(item)
                        }
                    };
                    self.implicit_call(site, key, vec![(ArgSlot::Positional(0), item)], out);
                }
                match (sorted, several) {
                    (true, _) => self.flow(first, result, out),
                    (_, false) => {
                        if let Some(from) = self.node_of(first) {
                            self.constrain(from, Constraint::Elem { dst: result }, out);
                        }
                    }
                    (_, true) => {
                        let mut position = 0;
                        while let op @ (Operand::Node(_) | Operand::Const(_)) =
                            self.arg(site, position)
                        {
                            self.flow(op, result, out);
                            position += 1;
                        }
                    }
                }
            }
            KnownCallee::SameValue => self.flow(first, result, out),
            // Items are pairs: (index, element) or (element of a, element of b).
            KnownCallee::Pairs { zip } => {
                let mut parts = [self.engine.node(), self.engine.node()];
                for (i, part) in parts.iter_mut().enumerate() {
                    let position = if zip { i as u32 } else { 0 };
                    if zip || i == 1 {
                        let op = self.arg(site, position);
                        if let Some(from) = self.node_of(op) {
                            self.constrain(from, Constraint::Elem { dst: *part }, out);
                        }
                    }
                }
                let items = self.engine.node();
                self.engine.add(items, Obj::Tuple2(parts[0], parts[1]));
                self.engine.add(result, Obj::Pairs(items));
            }
            KnownCallee::Other => {
                if let Some(obj) = self.external_result(name) {
                    self.engine.add(result, obj);
                }
            }
        }
    }

    /// What calling the outside callable `name` returns
    /// ([`external_result`]), interned once per name.
    fn external_result(&mut self, name: u32) -> Option<Obj> {
        if let Some(known) = self.external_results.get(&name) {
            return *known;
        }
        let returned = external_result(self.externals.text(name));
        let obj = self.external(&returned);
        self.external_results.insert(name, obj);
        obj
    }

    /// The value of keyword argument `name` at `site`.
    fn keyword_arg(&self, site: u32, name: &str) -> Option<Operand> {
        let atom = self.atoms.get(name)?;
        self.args_of(site).iter().find_map(|(slot, op)| match slot {
            ArgSlot::Keyword(k) if *k == atom => Some(*op),
            _ => None,
        })
    }

    /// A node holding the elements of `op`'s values.
    fn elements_of(&mut self, op: Operand, out: &mut Vec<Delivery>) -> Operand {
        match self.node_of(op) {
            Some(from) => {
                let dst = self.engine.node();
                self.constrain(from, Constraint::Elem { dst }, out);
                Operand::Node(dst)
            }
            None => Operand::None,
        }
    }

    /// A call Python makes for the program at `site` (a callable handed
    /// to `map`, a `key=`): the values of `callee` called from the site's
    /// caller with `args`, as a site of its own ([`CallKind::Implicit`]:
    /// its internal callees are edges, nothing of it is reported
    /// unresolved). Returns the node of what the call returns.
    fn implicit_call(
        &mut self,
        site: u32,
        callee: Operand,
        args: Vec<(ArgSlot, Operand)>,
        out: &mut Vec<Delivery>,
    ) -> Option<u32> {
        // Only a written call makes implicit ones: `map(map, [map])` would
        // otherwise make sites without end.
        let (module, caller, local) = self
            .sites
            .get(site as usize)
            .filter(|s| s.kind != CallKind::Implicit)
            .map(|s| (s.module, s.caller, s.local))?;
        let callee = self.node_of(callee)?;
        let id = u32::try_from(self.sites.len()).ok()?;
        let result = self.engine.node();
        let args = self.push_args(&args);
        self.sites.push(super::resolve::Site {
            module,
            caller,
            receiver: u32::MAX,
            result,
            args,
            kind: CallKind::Implicit,
            targets: Vec::new(),
            externals: Vec::new(),
            outside_inits: Vec::new(),
            local,
        });
        self.constrain(callee, Constraint::Call { site: id }, out);
        Some(result)
    }

    /// A method of a built-in container called on one of the program's
    /// displays (`HANDLERS.get(kind)`): the call is also a call of
    /// `builtins.dict.get`, recorded as the site's external callee.
    fn record_builtin_method(&mut self, site: u32, container: u32) {
        let Some(kind) = self.containers.kind_of(container) else {
            return;
        };
        let Some(s) = self.sites.get(site as usize) else {
            return;
        };
        if !matches!(s.kind, CallKind::Written | CallKind::RaisedCall) || s.externals.len() >= 4 {
            return;
        }
        let (module, local) = (s.module, s.local);
        let Some(method) =
            self.facts(module)
                .and_then(|facts| match &facts.calls.get(local as usize)?.callee {
                    ValueExpr::Attr(_, name) => Some(facts.name(*name)),
                    _ => None,
                })
        else {
            return;
        };
        let name = format!("{}.{method}", kind.type_name());
        if let Some(Obj::External(id)) = self.external(&name)
            && let Some(s) = self.sites.get_mut(site as usize)
            && !s.externals.contains(&id)
        {
            s.externals.push(id);
        }
    }

    pub(super) fn container_call(
        &mut self,
        site: u32,
        container: u32,
        op: ContainerOp,
        out: &mut Vec<Delivery>,
    ) {
        let Some(result) = self.sites.get(site as usize).map(|s| s.result) else {
            return;
        };
        self.record_builtin_method(site, container);
        let elem = self.elem(container);
        let last = self
            .args_of(site)
            .iter()
            .rev()
            .find(|(slot, _)| matches!(slot, ArgSlot::Positional(_)))
            .map_or(Operand::None, |(_, op)| *op);
        match op {
            ContainerOp::Put => self.store_element(container, None, last, out),
            ContainerOp::PutAll => {
                if let Some(from) = self.node_of(self.arg(site, 0)) {
                    self.constrain(from, Constraint::Elem { dst: elem }, out);
                    let unkeyed = self.keyed(container, None);
                    self.constrain(from, Constraint::Elem { dst: unkeyed }, out);
                }
            }
            ContainerOp::Get => {
                self.engine.edge(elem, result, Transform::Copy, out);
                // `d.get(key, default)` may give the default.
                let default = self.arg(site, 1);
                self.flow(default, result, out);
            }
            ContainerOp::GetPut => {
                let default = self.arg(site, 1);
                self.store_element(container, None, default, out);
                self.engine.edge(elem, result, Transform::Copy, out);
            }
            ContainerOp::Same => self.engine.add(result, Obj::Container(container)),
            ContainerOp::Items => {
                let holder = self.pairs_of(container, elem);
                self.engine.add(result, Obj::Pairs(holder));
            }
        }
    }
}

/// The outside callables whose calls the analysis models, told apart once
/// by name so that a call does not copy or compare the name again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KnownCallee {
    /// `next(it)`: an element.
    Next,
    /// `dict(...)`: a new dict keyed by the keywords.
    Dict,
    /// `map(f, xs)` or `filter(f, xs)`: `f` called on each element.
    MapOrFilter { filter: bool },
    /// `functools.reduce(f, xs[, start])`.
    Reduce,
    /// `sorted`, `min`, `max`, with an optional `key=`.
    SortedMinMax { sorted: bool },
    /// Returns its first argument's values (`list(xs)`, `partial(f)`).
    SameValue,
    /// `enumerate` or `zip`: pairs.
    Pairs { zip: bool },
    /// Anything else: its result by [`external_result`].
    Other,
}

impl KnownCallee {
    fn of(name: &str) -> KnownCallee {
        match name {
            "builtins.next" => KnownCallee::Next,
            "builtins.dict" => KnownCallee::Dict,
            "builtins.map" => KnownCallee::MapOrFilter { filter: false },
            "builtins.filter" => KnownCallee::MapOrFilter { filter: true },
            "functools.reduce" => KnownCallee::Reduce,
            "builtins.sorted" => KnownCallee::SortedMinMax { sorted: true },
            "builtins.min" | "builtins.max" => KnownCallee::SortedMinMax { sorted: false },
            "builtins.iter"
            | "builtins.list"
            | "builtins.tuple"
            | "builtins.set"
            | "builtins.frozenset"
            | "builtins.reversed"
            | "builtins.staticmethod"
            | "builtins.classmethod"
            | "builtins.property"
            | "functools.partial" => KnownCallee::SameValue,
            "builtins.enumerate" => KnownCallee::Pairs { zip: false },
            "builtins.zip" => KnownCallee::Pairs { zip: true },
            _ => KnownCallee::Other,
        }
    }
}

/// What calling an external name gives, named so that methods called on
/// it read as Python names them: a class gives an instance of itself
/// (`pathlib.Path()` → `pathlib.Path`), a few well-known factories give
/// the class they return (`logging.getLogger()` → `logging.Logger`); any
/// other call is written as a call (`json.loads()`).
fn external_result(name: &str) -> String {
    const FACTORIES: &[(&str, &str)] = &[
        ("logging.getLogger", "logging.Logger"),
        ("re.compile", "re.Pattern"),
        ("re.match", "re.Match"),
        ("re.search", "re.Match"),
        ("re.fullmatch", "re.Match"),
        ("datetime.datetime.now", "datetime.datetime"),
        ("datetime.datetime.utcnow", "datetime.datetime"),
        ("datetime.datetime.fromtimestamp", "datetime.datetime"),
        ("datetime.datetime.fromisoformat", "datetime.datetime"),
        ("datetime.datetime.strptime", "datetime.datetime"),
        ("datetime.date.today", "datetime.date"),
        ("builtins.open", "io.TextIOWrapper"),
        ("subprocess.run", "subprocess.CompletedProcess"),
        ("argparse.ArgumentParser.parse_args", "argparse.Namespace"),
        ("collections.defaultdict", "collections.defaultdict"),
        ("collections.deque", "collections.deque"),
    ];
    const BUILTIN_TYPES: &[&str] = &[
        "bool",
        "bytearray",
        "bytes",
        "complex",
        "dict",
        "float",
        "frozenset",
        "int",
        "list",
        "object",
        "range",
        "set",
        "str",
        "tuple",
        "type",
    ];
    const STR_TO_STR: &[&str] = &[
        "capitalize",
        "casefold",
        "center",
        "expandtabs",
        "format",
        "join",
        "ljust",
        "lower",
        "lstrip",
        "removeprefix",
        "removesuffix",
        "replace",
        "rjust",
        "rstrip",
        "strip",
        "swapcase",
        "title",
        "translate",
        "upper",
        "zfill",
    ];
    if let Some((_, class)) = FACTORIES.iter().find(|(f, _)| *f == name) {
        return (*class).to_string();
    }
    let (owner, last) = name.rsplit_once('.').unwrap_or(("", name));
    if owner == "builtins.str" && STR_TO_STR.contains(&last) {
        return owner.to_string();
    }
    let is_class = last.chars().next().is_some_and(char::is_uppercase)
        || (owner == "builtins" && BUILTIN_TYPES.contains(&last));
    if is_class && !last.contains('(') {
        name.to_string()
    } else {
        format!("{name}()")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each modelled callable is told apart by its full dotted name only:
    /// a same-named function elsewhere is an ordinary outside call.
    #[test]
    fn known_callees_are_told_apart_by_their_full_names() {
        let cases = [
            ("builtins.next", KnownCallee::Next),
            ("builtins.dict", KnownCallee::Dict),
            ("builtins.map", KnownCallee::MapOrFilter { filter: false }),
            ("builtins.filter", KnownCallee::MapOrFilter { filter: true }),
            ("functools.reduce", KnownCallee::Reduce),
            (
                "builtins.sorted",
                KnownCallee::SortedMinMax { sorted: true },
            ),
            ("builtins.max", KnownCallee::SortedMinMax { sorted: false }),
            ("functools.partial", KnownCallee::SameValue),
            ("builtins.zip", KnownCallee::Pairs { zip: true }),
            ("builtins.enumerate", KnownCallee::Pairs { zip: false }),
            ("mylib.map", KnownCallee::Other),
            ("builtins.next.x", KnownCallee::Other),
            ("reduce", KnownCallee::Other),
        ];
        for (name, expected) in cases {
            assert_eq!(KnownCallee::of(name), expected, "{name}");
        }
        assert_eq!(external_result("re.compile"), "re.Pattern");
        assert_eq!(external_result("mylib.make"), "mylib.make()");
    }
}
