//! Route declarations in one Java file: Spring, JAX-RS/Quarkus and Micronaut
//! annotations, Javalin and Spark calls, `path(...)` groups.

use super::extract::*;
use super::facts::*;

use tree_sitter::Node;

use crate::frameworks;

use crate::routes::{Framework, HttpMethod};

/// An annotation that may declare a route, with its arguments.
pub(super) struct RouteAnnotation {
    pub(super) name: String,
    pub(super) line: u32,
    /// (key, string values, other values as written); key `None` for the
    /// single unnamed argument.
    pub(super) args: Vec<(Option<String>, Vec<String>, Vec<String>)>,
}

impl RouteAnnotation {
    /// String values of the first of `keys` present (`None` stands for the
    /// unnamed argument); empty when none is given.
    pub(super) fn strings(&self, keys: &[Option<&str>]) -> Vec<String> {
        for key in keys {
            if let Some((_, strings, _)) = self.args.iter().find(|(k, _, _)| k.as_deref() == *key) {
                return strings.clone();
            }
        }
        Vec::new()
    }

    pub(super) fn others(&self, key: &str) -> &[String] {
        self.args
            .iter()
            .find(|(k, _, _)| k.as_deref() == Some(key))
            .map_or(&[], |(_, _, others)| others.as_slice())
    }
}

impl<'s> Extractor<'s> {
    pub(super) fn route_annotation(&mut self, node: Node<'_>, owner: Scope) {
        let g = self.g;
        let Some(name_node) = g.field(node, g.field_name) else {
            return;
        };
        let full = self.text(name_node);
        let name = full.rsplit('.').next().unwrap_or(full);
        if !frameworks::JAVA_ROUTE_ANNOTATIONS.contains(&name) {
            return;
        }
        let mut args = Vec::new();
        if let Some(list) = g.field(node, g.field_arguments) {
            let mut cursor = list.walk();
            for arg in list.named_children(&mut cursor) {
                match g.kind(arg) {
                    Kind::ElementValuePair => {
                        let key = g.field(arg, g.field_key).map(|k| self.text(k).to_string());
                        let (strings, others) = g
                            .field(arg, g.field_value)
                            .map(|v| self.element_values(v))
                            .unwrap_or_default();
                        args.push((key, strings, others));
                    }
                    Kind::LineComment | Kind::BlockComment => {}
                    _ => {
                        let (strings, others) = self.element_values(arg);
                        args.push((None, strings, others));
                    }
                }
            }
        }
        self.route_annotations.push((
            owner,
            RouteAnnotation {
                name: name.to_string(),
                line: line_of(node.start_position().row),
                args,
            },
        ));
    }

    /// String literals and other values of an annotation element.
    pub(super) fn element_values(&self, node: Node<'_>) -> (Vec<String>, Vec<String>) {
        let mut strings = Vec::new();
        let mut others = Vec::new();
        let mut one = |n: Node<'_>| match self.g.kind(n) {
            Kind::StringLiteral => strings.push(string_value(self.text(n))),
            Kind::LineComment | Kind::BlockComment => {}
            _ => others.push(compact(self.text(n))),
        };
        if self.g.kind(node) == Kind::ElementValueArray {
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                one(child);
            }
        } else {
            one(node);
        }
        (strings, others)
    }

    /// Javalin and Spark declare routes with calls: `app.get("/x", handler)`,
    /// `get("/x", handler)` and `path("/x", () -> { ... })` groups.
    pub(super) fn call_route(&mut self, node: Node<'_>, name: &str, list: Node<'_>) {
        // Every call of a file that imports Javalin or Spark comes here:
        // only `path` and the HTTP verbs are worth reading the arguments of.
        let method = HttpMethod::from_verb(name);
        if name != frameworks::JAVA_PATH_GROUP_CALL && method.is_none() {
            return;
        }
        let g = self.g;
        let mut cursor = list.walk();
        let args: Vec<Node<'_>> = list
            .named_children(&mut cursor)
            .filter(|a| !matches!(g.kind(*a), Kind::LineComment | Kind::BlockComment))
            .collect();
        let path = args
            .first()
            .filter(|a| g.kind(**a) == Kind::StringLiteral)
            .map(|a| string_value(self.text(*a)));
        if name == frameworks::JAVA_PATH_GROUP_CALL {
            if let (Some(path), Some(group)) = (path, args.get(1))
                && g.kind(*group) == Kind::Lambda
                && self.path_groups.len() < MAX_PATH_GROUPS
            {
                self.path_groups.push((group.id(), path));
            }
            return;
        }
        let Some(method) = method else {
            return;
        };
        let in_group = !self.path_groups.is_empty();
        if path.is_none() && !in_group {
            return;
        }
        // The handler is the first lambda, method reference or `new` after
        // the path (Spark may put a content type first, Javalin roles last),
        // else the first name.
        let rest = || args.iter().skip(usize::from(path.is_some()));
        let Some(handler_node) = rest()
            .find(|a| {
                matches!(
                    g.kind(**a),
                    Kind::Lambda | Kind::MethodReference | Kind::ObjectCreation
                )
            })
            .or_else(|| {
                rest().find(|a| matches!(g.kind(**a), Kind::Identifier | Kind::FieldAccess))
            })
        else {
            return;
        };
        let handler = match g.kind(*handler_node) {
            Kind::Lambda => Handler::Lambda(self.scope()),
            Kind::MethodReference => match self.method_reference(*handler_node) {
                Some(Callee::Ref { target, name }) => Handler::Ref { target, name },
                _ => return,
            },
            Kind::ObjectCreation => Handler::Object(self.expr(*handler_node)),
            Kind::Identifier | Kind::FieldAccess
                if in_group || path.as_deref().is_some_and(|p| p.starts_with('/')) =>
            {
                Handler::Object(self.expr(*handler_node))
            }
            _ => return,
        };
        let mut full = String::new();
        for (_, prefix) in &self.path_groups {
            full = crate::routes::join_paths(&full, prefix);
        }
        let full = crate::routes::join_paths(&full, path.as_deref().unwrap_or(""));
        let framework = frameworks::java_call_framework(self.imported.javalin);
        self.facts.routes.push(RouteFacts {
            framework,
            method,
            path: full,
            handler,
            scope: self.scope(),
            pos: byte(node.start_byte()),
            line: line_of(node.start_position().row),
        });
    }

    /// Routes declared by annotations: Spring (`@GetMapping`,
    /// `@RequestMapping` with class-level prefixes), JAX-RS (`@Path` with
    /// `@GET`, ...) and Micronaut (`@Controller("/x")` with `@Get`, ...).
    pub(super) fn annotation_routes(&mut self) {
        let annotations = std::mem::take(&mut self.route_annotations);
        let on = |scope: Scope| {
            annotations
                .iter()
                .filter(move |(s, _)| *s == scope)
                .map(|(_, a)| a)
        };
        let mut routes = Vec::new();
        for (m, method) in self.facts.methods.iter().enumerate() {
            let scope = Scope::Method(u32::try_from(m).unwrap_or(u32::MAX));
            if !annotations.iter().any(|(s, _)| *s == scope) {
                continue;
            }
            let class = match method.parent {
                Scope::Type(t) => Some(Scope::Type(t)),
                _ => None,
            };
            let class_annotations: Vec<&RouteAnnotation> =
                class.map(|c| on(c).collect()).unwrap_or_default();
            let class_paths = |name: &str, keys: &[Option<&str>]| -> Vec<String> {
                let paths: Vec<String> = class_annotations
                    .iter()
                    .filter(|a| a.name == name)
                    .flat_map(|a| a.strings(keys))
                    .collect();
                if paths.is_empty() {
                    vec![String::new()]
                } else {
                    paths
                }
            };
            let micronaut = self.imported.micronaut
                || class_annotations
                    .iter()
                    .any(|a| a.name == frameworks::MICRONAUT_CONTROLLER && !a.args.is_empty());
            let mut jaxrs_methods = Vec::new();
            let mut jaxrs_path: Option<Vec<String>> = None;
            for annotation in on(scope) {
                let name = annotation.name.as_str();
                let spring_verb = match frameworks::spring_verb_annotation(name) {
                    Some(verb) => Some(vec![verb]),
                    None if name == frameworks::SPRING_REQUEST_MAPPING => {
                        let verbs: Vec<HttpMethod> = annotation
                            .others("method")
                            .iter()
                            .filter_map(|v| {
                                HttpMethod::from_verb(v.rsplit('.').next().unwrap_or(v))
                            })
                            .collect();
                        Some(if verbs.is_empty() {
                            vec![HttpMethod::Any]
                        } else {
                            verbs
                        })
                    }
                    _ => None,
                };
                if let Some(verbs) = spring_verb {
                    let mut paths = annotation.strings(&[None, Some("value"), Some("path")]);
                    if paths.is_empty() {
                        paths.push(String::new());
                    }
                    for prefix in class_paths(
                        frameworks::SPRING_REQUEST_MAPPING,
                        &[None, Some("value"), Some("path")],
                    ) {
                        for path in &paths {
                            for verb in &verbs {
                                routes.push(RouteFacts {
                                    framework: Framework::Spring,
                                    method: *verb,
                                    path: crate::routes::join_paths(&prefix, path),
                                    handler: Handler::Method(m as u32),
                                    scope,
                                    pos: method.span.start_byte,
                                    line: annotation.line,
                                });
                            }
                        }
                    }
                    continue;
                }
                if let Some(verb) = frameworks::jaxrs_verb_annotation(name) {
                    jaxrs_methods.push((verb, annotation.line));
                } else if name == frameworks::JAXRS_PATH {
                    jaxrs_path = Some(annotation.strings(&[None, Some("value")]));
                } else if let Some(verb) =
                    frameworks::micronaut_verb_annotation(name).filter(|_| micronaut)
                {
                    {
                        let mut paths =
                            annotation.strings(&[None, Some("value"), Some("uri"), Some("uris")]);
                        if paths.is_empty() {
                            paths.push(String::new());
                        }
                        for prefix in
                            class_paths(frameworks::MICRONAUT_CONTROLLER, &[None, Some("value")])
                        {
                            for path in &paths {
                                routes.push(RouteFacts {
                                    framework: Framework::Micronaut,
                                    method: verb,
                                    path: crate::routes::join_paths(&prefix, path),
                                    handler: Handler::Method(m as u32),
                                    scope,
                                    pos: method.span.start_byte,
                                    line: annotation.line,
                                });
                            }
                        }
                    }
                }
            }
            let paths = jaxrs_path.unwrap_or_default();
            let paths = if paths.is_empty() {
                vec![String::new()]
            } else {
                paths
            };
            for (verb, line) in jaxrs_methods {
                for prefix in class_paths(frameworks::JAXRS_PATH, &[None, Some("value")]) {
                    for path in &paths {
                        routes.push(RouteFacts {
                            framework: Framework::JaxRs,
                            method: verb,
                            path: crate::routes::join_paths(&prefix, path),
                            handler: Handler::Method(m as u32),
                            scope,
                            pos: method.span.start_byte,
                            line,
                        });
                    }
                }
            }
        }
        self.facts.routes.extend(routes);
    }
}
