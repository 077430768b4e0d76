//! Web route facts written in one file: Flask and FastAPI route
//! decorators, the routers they hang on and their registrations, and
//! Django `urlpatterns` (joined across files by [`crate::routes`]).

use tree_sitter::Node;

use crate::frameworks::{self, DjangoPattern};

use super::extract::{Extractor, Kind, line_of};
use super::facts::*;

impl<'s> Extractor<'s> {
    /// `@app.get("/x")`, `@bp.route("/x", methods=["POST"])`: the function
    /// defined next gets the route.
    pub(super) fn route_decorator(&mut self, decorator: Node<'_>) {
        let g = self.g;
        let Some(call) = decorator
            .named_child(0)
            .filter(|c| g.kind(*c) == Kind::Call)
        else {
            return;
        };
        let (Some(function), Some(args)) = (
            g.field(call, g.field_function),
            g.field(call, g.field_arguments),
        ) else {
            return;
        };
        if g.kind(function) != Kind::Attribute {
            return;
        }
        let (Some(object), Some(attribute)) = (
            g.field(function, g.field_object),
            g.field(function, g.field_attribute),
        ) else {
            return;
        };
        let verb = self.text(attribute);
        if !frameworks::PYTHON_ROUTE_DECORATORS.contains(&verb) {
            return;
        }
        let Some(path) = self
            .positional_arg(args, 0)
            .or_else(|| self.keyword_arg(args, "path"))
            .or_else(|| self.keyword_arg(args, "rule"))
            .and_then(|a| self.plain_string(a))
        else {
            return;
        };
        let methods = self
            .keyword_arg(args, "methods")
            .map(|m| self.string_list(m))
            .unwrap_or_default();
        let function = u32::try_from(self.facts.functions.len()).unwrap_or(u32::MAX);
        self.facts.routes.push(RouteFacts::Decorator {
            function,
            receiver: self.expr(object),
            verb: verb.to_string(),
            path,
            methods,
            line: line_of(decorator.start_position().row),
        });
    }

    pub(super) fn positional_arg<'t>(&self, args: Node<'t>, position: usize) -> Option<Node<'t>> {
        let mut cursor = args.walk();
        args.named_children(&mut cursor)
            .filter(|a| !matches!(self.g.kind(*a), Kind::KeywordArgument | Kind::Comment))
            .nth(position)
    }

    pub(super) fn keyword_arg<'t>(&self, args: Node<'t>, name: &str) -> Option<Node<'t>> {
        let g = self.g;
        let mut cursor = args.walk();
        args.named_children(&mut cursor)
            .filter(|a| g.kind(*a) == Kind::KeywordArgument)
            .find(|a| {
                g.field(*a, g.field_name)
                    .is_some_and(|n| self.text(n) == name)
            })
            .and_then(|a| g.field(a, g.field_value))
    }

    /// The value of a string literal without interpolations.
    pub(super) fn plain_string(&self, node: Node<'_>) -> Option<String> {
        (self.g.kind(node) == Kind::String && !self.is_f_string(node))
            .then(|| self.string_value(node))
            .flatten()
    }

    /// `name = Blueprint(...)`, `APIRouter(...)`, `Flask(...)`, `FastAPI(...)`.
    pub(super) fn router_assignment(&mut self, name: &str, call: Node<'_>) {
        let g = self.g;
        let (Some(function), Some(args)) = (
            g.field(call, g.field_function),
            g.field(call, g.field_arguments),
        ) else {
            return;
        };
        let callee = self.text(function);
        let constructor = callee.rsplit('.').next().unwrap_or(callee);
        let keyword = match constructor {
            "Blueprint" => "url_prefix",
            "APIRouter" => "prefix",
            "Flask" | "FastAPI" => "",
            _ => return,
        };
        let prefix = (!keyword.is_empty())
            .then(|| self.keyword_arg(args, keyword))
            .flatten()
            .and_then(|p| self.plain_string(p));
        self.facts.routes.push(RouteFacts::Router {
            name: name.to_string(),
            constructor: constructor.to_string(),
            prefix,
        });
    }

    /// `app.register_blueprint(bp, url_prefix=...)`, `app.include_router(r, prefix=...)`.
    pub(super) fn mount_call(&mut self, receiver: &Expr, verb: &str, args: Node<'_>) {
        let Some(keyword) = mount_prefix_keyword(verb) else {
            return;
        };
        let Some(router) = self
            .positional_arg(args, 0)
            .filter(|r| matches!(self.g.kind(*r), Kind::Identifier | Kind::Attribute))
        else {
            return;
        };
        let prefix = self
            .keyword_arg(args, keyword)
            .and_then(|p| self.plain_string(p));
        self.facts.routes.push(RouteFacts::Mount {
            scope: self.scope(),
            receiver: receiver.clone(),
            router: self.expr(router),
            prefix,
        });
    }

    /// The `path(...)` entries of a module-level `urlpatterns` list.
    pub(super) fn url_patterns(&mut self, list: Node<'_>) {
        let g = self.g;
        if g.kind(list) != Kind::List {
            return;
        }
        let mut cursor = list.walk();
        let entries: Vec<Node<'_>> = list
            .named_children(&mut cursor)
            .filter(|e| g.kind(*e) == Kind::Call)
            .collect();
        for entry in entries {
            let (Some(function), Some(args)) = (
                g.field(entry, g.field_function),
                g.field(entry, g.field_arguments),
            ) else {
                continue;
            };
            let callee = self.text(function);
            let regex = match frameworks::django_url_function(
                callee.rsplit('.').next().unwrap_or(callee),
            ) {
                Some(DjangoPattern::Path) => false,
                Some(DjangoPattern::Regex) => true,
                None => continue,
            };
            let Some(route) = self
                .positional_arg(args, 0)
                .and_then(|r| self.plain_string(r))
            else {
                continue;
            };
            let Some(view) = self.positional_arg(args, 1).and_then(|v| self.url_view(v)) else {
                continue;
            };
            self.facts.routes.push(RouteFacts::UrlPattern {
                route,
                regex,
                view,
                line: line_of(entry.start_position().row),
            });
        }
    }

    fn url_view(&self, node: Node<'_>) -> Option<UrlView> {
        let g = self.g;
        match g.kind(node) {
            Kind::Identifier | Kind::Attribute => Some(UrlView::View(self.expr(node))),
            Kind::Call => {
                let function = g.field(node, g.field_function)?;
                let args = g.field(node, g.field_arguments)?;
                let callee = self.text(function);
                if callee.rsplit('.').next() == Some(frameworks::DJANGO_INCLUDE) {
                    let target = self.positional_arg(args, 0)?;
                    return match g.kind(target) {
                        Kind::String => self.plain_string(target).map(UrlView::Include),
                        Kind::Identifier | Kind::Attribute => {
                            Some(UrlView::IncludeModule(self.expr(target)))
                        }
                        _ => None,
                    };
                }
                if g.kind(function) == Kind::Attribute
                    && g.field(function, g.field_attribute)
                        .is_some_and(|a| self.text(a) == "as_view")
                {
                    let object = g.field(function, g.field_object)?;
                    return Some(UrlView::AsView(self.expr(object)));
                }
                None
            }
            _ => None,
        }
    }
}

/// The keyword that gives the prefix of a router mounted with `verb`
/// (`app.register_blueprint(bp, url_prefix=...)`,
/// `app.include_router(router, prefix=...)`); `None` for other methods.
pub(super) fn mount_prefix_keyword(verb: &str) -> Option<&'static str> {
    match verb {
        "register_blueprint" => Some("url_prefix"),
        "include_router" => Some("prefix"),
        _ => None,
    }
}
