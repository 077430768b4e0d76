//! Reading the solved points-to graph back out: call edges and unresolved
//! calls, import targets, class bases and MROs, and web routes.

use rustc_hash::FxHashMap;

use super::facts::*;
use super::resolve::Analysis;
use super::solve::Obj;
use crate::frameworks;
use crate::lang::resolver::{ModuleOutput, Resolution};
use crate::model::{
    Base, ClassId, EntityId, Import, ImportKind, ImportTarget, ModuleId, UnresolvedCall,
};
use crate::routes::{
    Framework, HandlerDraft, HttpMethod, RouteDraft, RouteLink, RouteScope, RouterKey,
};
use crate::stats::ResolutionStats;

/// Steps allowed when following a router object through imports.
const MAX_ROUTE_DEPTH: u32 = 24;
/// Longest callee text kept in an unresolved-call report.
const MAX_CALLEE_TEXT: usize = 120;

impl<'f> Analysis<'f> {
    pub(super) fn finish(mut self, bases: Vec<(ClassId, Vec<Base>)>) -> Resolution {
        let exhausted = self.engine.over_budget() && self.engine.has_pending();
        let mut budget_exhausted = 0u64;
        let mut per_module: FxHashMap<ModuleId, ModuleOutput> = FxHashMap::default();
        let sites = std::mem::take(&mut self.sites);
        let mut warned: Vec<ModuleId> = Vec::new();
        for site in &sites {
            let output = per_module.entry(site.module).or_default();
            for target in &site.targets {
                output.edges.push((site.caller, *target));
            }
            // What `if __name__ == "__main__":` blocks call, for the usage facts.
            if !site.targets.is_empty()
                && let Some(facts) = self.facts(site.module)
                && let Some(block) = facts
                    .usage
                    .main_blocks
                    .iter()
                    .position(|b| (b.first_call..b.end_call).contains(&site.local))
            {
                let block = u32::try_from(block).unwrap_or(u32::MAX);
                output
                    .main_calls
                    .extend(site.targets.iter().map(|t| (block, *t)));
            }
            if matches!(site.kind, CallKind::Raise | CallKind::Implicit) {
                continue;
            }
            let line = || {
                self.facts(site.module)
                    .and_then(|f| f.calls.get(site.local as usize))
                    .map_or(0, |c| c.line)
            };
            if !site.targets.is_empty() {
                // Resolved, and also reaching outside the tree (a class
                // whose `__init__` is an outside base's).
                for name in &site.outside_inits {
                    output.unresolved.push(UnresolvedCall {
                        caller: site.caller,
                        callee: self.externals_text(*name),
                        external: true,
                        line: line(),
                    });
                }
                continue;
            }
            let Some(facts) = self.facts(site.module) else {
                continue;
            };
            let line = facts.calls.get(site.local as usize).map_or(0, |c| c.line);
            // Once the budget ran out, any site without a callee may have
            // been cut short: values stop wherever the worklist stopped.
            let cut_short = exhausted;
            if cut_short {
                budget_exhausted += 1;
                if !warned.contains(&site.module) {
                    warned.push(site.module);
                    tracing::warn!(
                        module = %self.module_name(site.module),
                        "call resolution stopped at its step budget; calls left unresolved"
                    );
                }
            }
            if site.externals.is_empty() || cut_short {
                let callee = facts
                    .calls
                    .get(site.local as usize)
                    .map(|c| render(facts, &c.callee))
                    .unwrap_or_default();
                output.unresolved.push(UnresolvedCall {
                    caller: site.caller,
                    callee,
                    external: false,
                    line,
                });
            } else {
                for name in &site.externals {
                    output.unresolved.push(UnresolvedCall {
                        caller: site.caller,
                        callee: self.externals_text(*name),
                        external: true,
                        line,
                    });
                }
            }
        }
        for (module, caller, getter) in std::mem::take(&mut self.property_edges) {
            per_module
                .entry(module)
                .or_default()
                .edges
                .push((caller, getter));
        }
        let mut outputs = Vec::new();
        for m in 0..self.module_count() {
            let module = ModuleId(m as u32);
            let Some(facts) = self.facts(module) else {
                continue;
            };
            let mut output = per_module.remove(&module).unwrap_or_default();
            output.imports = self.imports(module, facts);
            let mut routes = Vec::new();
            let mut links = Vec::new();
            self.routes(module, &mut routes, &mut links);
            output.routes = routes;
            output.route_links = links;
            outputs.push((module, output));
        }
        let mro = bases
            .iter()
            .map(|(class, _)| (*class, self.mro_of(*class)))
            .collect();
        let stats = ResolutionStats {
            work: self.engine.work,
            widened: self.engine.widened + self.classes.mro_cut(),
            budget_exhausted,
        };
        // Freeing a large graph (millions of small allocations) overlaps
        // with the assembly that follows instead of delaying it.
        let garbage = (
            std::mem::replace(&mut self.engine, super::solve::Engine::new()),
            sites,
            std::mem::take(&mut self.site_args),
            std::mem::take(&mut self.names),
            std::mem::take(&mut self.name_all),
            std::mem::take(&mut self.constraints),
            std::mem::take(&mut self.function_params),
            (
                std::mem::take(&mut self.atoms),
                std::mem::take(&mut self.externals),
            ),
        );
        let _ = std::thread::Builder::new()
            .name("repo-graph-free".into())
            .spawn(move || drop(garbage));
        Resolution {
            bases,
            mro,
            outputs,
            stats,
        }
    }

    fn imports(&mut self, module: ModuleId, facts: &'f PythonFacts) -> Vec<Import> {
        let mut bound: FxHashMap<u32, u32> = FxHashMap::default();
        for (b, binding) in facts.bindings.iter().enumerate() {
            if let BindValue::Import(i) = binding.value {
                bound.insert(i, b as u32);
            }
        }
        facts
            .imports
            .iter()
            .enumerate()
            .map(|(i, import)| {
                let base = self.import_base(module, import.level, &import.module);
                let target = match import.kind {
                    ImportKind::Import | ImportKind::Star => match self.module_named(&base) {
                        Some(m) => ImportTarget::Module(m),
                        None => ImportTarget::External(base.clone()),
                    },
                    ImportKind::From => {
                        let name = import.name.as_deref().unwrap_or("");
                        let values = bound
                            .get(&(i as u32))
                            .map(|b| self.binding_values(module, *b))
                            .unwrap_or_default();
                        let known = values.iter().find_map(|v| match v {
                            Obj::Module(m) => Some(ImportTarget::Module(*m)),
                            Obj::Class(c) => Some(ImportTarget::Class(*c)),
                            Obj::Function(f) => Some(ImportTarget::Function(*f)),
                            _ => None,
                        });
                        match (known, self.module_named(&base)) {
                            (Some(target), _) => target,
                            (None, Some(m)) => ImportTarget::Attribute(m),
                            (None, None) => match self.module_named(&format!("{base}.{name}")) {
                                Some(m) => ImportTarget::Module(m),
                                None => ImportTarget::External(format!("{base}.{name}")),
                            },
                        }
                    }
                };
                Import {
                    kind: import.kind,
                    module: import.module.clone(),
                    level: import.level,
                    name: import.name.clone(),
                    alias: import.alias.clone(),
                    line: import.line,
                    in_function: self.in_function(facts, import.scope),
                    in_try: import.in_try,
                    target,
                    is_static: false,
                }
            })
            .collect()
    }

    fn in_function(&self, facts: &PythonFacts, scope: ScopeRef) -> bool {
        let mut current = Some(scope);
        let mut steps = 0usize;
        while let Some(s) = current {
            if matches!(s, ScopeRef::Function(_) | ScopeRef::Lambda(_)) {
                return true;
            }
            steps += 1;
            if steps > facts.functions.len() + facts.classes.len() + facts.lambdas.len() + 1 {
                break;
            }
            current = facts.parent_scope(s);
        }
        false
    }

    /// What a dotted name evaluates to after the solve, reading only
    /// existing nodes (names: every binding in the nearest scope that binds
    /// them).
    fn static_values(&mut self, module: ModuleId, scope: ScopeRef, expr: &Expr) -> Vec<Obj> {
        match expr {
            Expr::Name(name) => self.name_values(module, scope, name),
            Expr::Attr(base, attr) => {
                let mut values = Vec::new();
                for value in self.static_values(module, scope, base) {
                    match value {
                        Obj::Module(m) => {
                            values.extend(self.name_values(m, ScopeRef::Module, attr))
                        }
                        Obj::Class(c) => {
                            if let Some(f) = self.static_method(c, attr) {
                                values.push(Obj::Function(f));
                            }
                        }
                        Obj::External(n) => {
                            let name = format!("{}.{attr}", self.externals_text(n));
                            values.extend(self.external(&name));
                        }
                        _ => {}
                    }
                }
                values
            }
            _ => Vec::new(),
        }
    }

    fn routes(
        &mut self,
        module: ModuleId,
        drafts: &mut Vec<RouteDraft>,
        links: &mut Vec<RouteLink>,
    ) {
        self.routes_impl(module, drafts, links);
    }
}

/// The callee as source-like text, for unresolved-call reports.
pub(super) fn render(facts: &PythonFacts, value: &ValueExpr) -> String {
    let mut out = String::new();
    render_into(facts, value, &mut out, 0);
    if out.len() > MAX_CALLEE_TEXT {
        out.truncate(out.floor_char_boundary(MAX_CALLEE_TEXT));
        out.push('…');
    }
    out
}

fn render_into(facts: &PythonFacts, value: &ValueExpr, out: &mut String, depth: u32) {
    if depth > 16 || out.len() > MAX_CALLEE_TEXT {
        out.push('…');
        return;
    }
    match value {
        ValueExpr::Use(u) => out.push_str(
            facts
                .uses
                .get(*u as usize)
                .map_or("?", |u| facts.name(u.name)),
        ),
        ValueExpr::Attr(base, attr) => {
            render_into(facts, base, out, depth + 1);
            out.push('.');
            out.push_str(facts.name(*attr));
        }
        ValueExpr::Call(k) => {
            match facts.calls.get(*k as usize) {
                Some(call) => render_into(facts, &call.callee, out, depth + 1),
                None => out.push('?'),
            }
            out.push_str("()");
        }
        ValueExpr::Elem(inner) => {
            render_into(facts, inner, out, depth + 1);
            out.push_str("[]");
        }
        ValueExpr::ElemAt(inner, key) => {
            render_into(facts, inner, out, depth + 1);
            // An integer key's name is already `[n]`.
            match facts.name(*key) {
                index if index.starts_with('[') => out.push_str(index),
                key => {
                    out.push('[');
                    out.push_str(key);
                    out.push(']');
                }
            }
        }
        ValueExpr::Slice(slice) => {
            render_into(facts, &slice.value, out, depth + 1);
            out.push('[');
            out.push_str(&slice.start.to_string());
            out.push(':');
            if let Some(stop) = slice.stop {
                out.push_str(&stop.to_string());
            }
            out.push(']');
        }
        ValueExpr::Super | ValueExpr::SuperOf(..) => out.push_str("super()"),
        ValueExpr::StrLiteral => out.push_str("\"…\""),
        ValueExpr::Lambda(_) => out.push_str("<lambda>"),
        ValueExpr::Container(..) => out.push_str("[…]"),
        ValueExpr::Function(f) => {
            out.push_str(facts.functions.get(*f as usize).map_or("?", |f| &f.name))
        }
        ValueExpr::Class(c) => {
            out.push_str(facts.classes.get(*c as usize).map_or("?", |c| &c.name))
        }
        ValueExpr::Instance(inner) | ValueExpr::Caught(inner) => {
            render_into(facts, inner, out, depth + 1)
        }
        ValueExpr::Ref(b) => out.push_str(
            facts
                .bindings
                .get(*b as usize)
                .map_or("?", |b| facts.name(b.name)),
        ),
        ValueExpr::Union(_) | ValueExpr::Unknown => out.push('…'),
    }
}

impl<'f> Analysis<'f> {
    /// Flask and FastAPI routes from decorators, the routers they hang on
    /// and their registrations, and Django `urlpatterns`.
    fn routes_impl(
        &mut self,
        module: ModuleId,
        drafts: &mut Vec<RouteDraft>,
        links: &mut Vec<RouteLink>,
    ) {
        let Some(facts) = self.facts(module) else {
            return;
        };
        if facts.routes.is_empty() {
            return;
        }
        let imported = facts.imports.iter().find_map(|i| {
            frameworks::python_framework_of(&i.module)
                .or_else(|| frameworks::python_framework_of(i.name.as_deref()?))
        });
        for route in &facts.routes {
            match route {
                RouteFacts::Router {
                    name,
                    constructor,
                    prefix,
                } => {
                    if let Some(framework) = frameworks::python_app_constructor(constructor) {
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
                        .or_else(|| {
                            self.static_values(module, scope, receiver)
                                .into_iter()
                                .find_map(|v| match v {
                                    Obj::External(name) => {
                                        frameworks::python_framework_of(self.externals.text(name))
                                    }
                                    _ => None,
                                })
                        })
                        .or(imported);
                    let Some(framework) = framework else {
                        continue;
                    };
                    let verbs: Vec<HttpMethod> = match verb.as_str() {
                        multi
                            if frameworks::PYTHON_MULTI_METHOD_DECORATORS.contains(&multi)
                                && methods.is_empty() =>
                        {
                            vec![HttpMethod::Get]
                        }
                        multi if frameworks::PYTHON_MULTI_METHOD_DECORATORS.contains(&multi) => {
                            methods
                                .iter()
                                .filter_map(|m| HttpMethod::from_verb(m))
                                .collect()
                        }
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
                        UrlView::IncludeModule(expr) => self
                            .static_values(module, ScopeRef::Module, expr)
                            .into_iter()
                            .find_map(|v| match v {
                                Obj::Module(m) => Some(m),
                                _ => None,
                            }),
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
                    let value = self
                        .static_values(module, ScopeRef::Module, expr)
                        .into_iter()
                        .find(|v| matches!(v, Obj::Function(_) | Obj::Class(_) | Obj::External(_)));
                    match value {
                        Some(Obj::Function(f)) if !as_view => {
                            push(HttpMethod::Any, HandlerDraft::Entity(EntityId::Function(f)))
                        }
                        Some(Obj::Class(c)) => {
                            // A class-based view serves the HTTP methods it defines.
                            let mut any = false;
                            for verb in ["get", "post", "put", "patch", "delete", "head", "options"]
                            {
                                if let (Some(f), Some(method)) =
                                    (self.static_method(c, verb), HttpMethod::from_verb(verb))
                                {
                                    any = true;
                                    push(method, HandlerDraft::Entity(EntityId::Function(f)));
                                }
                            }
                            if !any {
                                push(HttpMethod::Any, HandlerDraft::Entity(EntityId::Class(c)));
                            }
                        }
                        Some(Obj::External(name)) => push(
                            HttpMethod::Any,
                            HandlerDraft::Text(self.externals.text(name).to_string()),
                        ),
                        _ => push(HttpMethod::Any, HandlerDraft::Text(expr.render())),
                    }
                }
            }
        }
    }

    /// The module-level router object an expression names, following
    /// `from m import name` and `module.name`.
    fn router_key(
        &mut self,
        module: ModuleId,
        scope: ScopeRef,
        expr: &Expr,
        depth: u32,
    ) -> Option<RouterKey> {
        if depth > MAX_ROUTE_DEPTH {
            return None;
        }
        match expr {
            Expr::Name(name) => {
                let facts = self.facts(module)?;
                let defined_here = facts
                    .routes
                    .iter()
                    .any(|r| matches!(r, RouteFacts::Router { name: n, .. } if n == name));
                if defined_here {
                    return Some((module, name.clone()));
                }
                let atom = self.atoms.get(name)?;
                let bindings = self.names[module.index()]
                    .get(&(ScopeRef::Module, atom))?
                    .to_vec();
                bindings.iter().rev().find_map(|b| {
                    let BindValue::Import(i) = facts.bindings.get(*b as usize)?.value else {
                        return None;
                    };
                    let import = facts.imports.get(i as usize)?;
                    if import.kind != ImportKind::From {
                        return None;
                    }
                    let base = self.import_base(module, import.level, &import.module);
                    let target = self.module_named(&base)?;
                    let imported = Expr::Name(import.name.clone()?);
                    self.router_key(target, ScopeRef::Module, &imported, depth + 1)
                })
            }
            Expr::Attr(base, name) => self
                .static_values(module, scope, base)
                .into_iter()
                .find_map(|v| match v {
                    Obj::Module(m) => {
                        self.router_key(m, ScopeRef::Module, &Expr::Name(name.clone()), depth + 1)
                    }
                    _ => None,
                }),
            _ => None,
        }
    }

    fn router_framework(&self, key: &RouterKey) -> Option<Framework> {
        self.facts(key.0)?.routes.iter().find_map(|r| match r {
            RouteFacts::Router {
                name, constructor, ..
            } if *name == key.1 => frameworks::python_app_constructor(constructor),
            _ => None,
        })
    }
}
