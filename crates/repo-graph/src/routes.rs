//! Web routes as first-class facts: which HTTP method and path reach which
//! handler, for Spring, JAX-RS, Micronaut, Javalin, Spark, Flask, FastAPI
//! and Django.
//!
//! The extractors record route declarations per file (annotations and
//! `path(...)` groups are lexical, so Java routes are complete per file
//! except for their handlers); resolution turns handler expressions into
//! entities and joins prefixes that cross files (a Flask blueprint's
//! registration, a FastAPI router's inclusion, a Django `include`).
//!
//! [`Endpoint`] is the other side: a method and path a specification
//! states. [`same_path`] is the one definition of when two paths are the
//! same, so a route [`serves`](Route::serves) an endpoint however each
//! spells its parameters.

use std::cell::RefCell;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::model::{Class, EntityId, Function, Module, ModuleId};

/// An HTTP method a [`Route`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
#[non_exhaustive]
pub enum HttpMethod {
    /// `GET`.
    Get,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
    /// `DELETE`.
    Delete,
    /// `PATCH`.
    Patch,
    /// `HEAD`.
    Head,
    /// `OPTIONS`.
    Options,
    /// Any method (Spring `@RequestMapping` without `method`, Django views).
    Any,
}

impl HttpMethod {
    /// The method named by a verb in any case (`get`, `GET`, `Get`); `None`
    /// for anything else.
    pub fn from_verb(verb: &str) -> Option<HttpMethod> {
        Some(match verb.to_ascii_lowercase().as_str() {
            "get" => HttpMethod::Get,
            "post" => HttpMethod::Post,
            "put" => HttpMethod::Put,
            "delete" => HttpMethod::Delete,
            "patch" => HttpMethod::Patch,
            "head" => HttpMethod::Head,
            "options" => HttpMethod::Options,
            _ => return None,
        })
    }

    /// The uppercase name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Head => "HEAD",
            HttpMethod::Options => "OPTIONS",
            HttpMethod::Any => "ANY",
        }
    }
}

/// The web framework a [`Route`] is declared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Framework {
    /// Spring MVC / WebFlux annotations (`@GetMapping`, `@RequestMapping`).
    Spring,
    /// JAX-RS annotations (`@Path`, `@GET`), as used by Quarkus and Jersey.
    #[serde(rename = "jaxrs")]
    JaxRs,
    /// Micronaut annotations (`@Controller`, `@Get`).
    Micronaut,
    /// Javalin (`app.get("/x", handler)`, `path(...)` groups).
    Javalin,
    /// Spark Java (`get("/x", route)`, `path(...)` groups).
    Spark,
    /// Flask (`@app.route`, `@bp.get`, blueprints).
    Flask,
    /// FastAPI (`@app.get`, `APIRouter` with prefixes).
    #[serde(rename = "fastapi")]
    FastApi,
    /// Django (`urlpatterns` with `path`, `re_path` and `include`).
    Django,
}

/// One web route: an HTTP method and path served by a handler.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Route {
    /// The HTTP method.
    pub method: HttpMethod,
    /// The full path with every prefix applied, starting with `/`; path
    /// parameters as written (`{id}`, `:id`, `<int:id>`).
    pub path: String,
    /// The handler's qualified name; for an inline lambda, the qualified
    /// name of the function containing it followed by `.<lambda>`; for a
    /// handler outside the repository, the expression as written.
    pub handler: String,
    /// The handler entity (for a lambda, the function or module containing it).
    pub entity: Option<EntityId>,
    /// The framework that declares the route.
    pub framework: Framework,
    /// The module that declares the route.
    pub module: ModuleId,
    /// That module's path, relative to the root.
    pub file: String,
    /// 1-based line of the declaration.
    pub line: u32,
}

impl Route {
    /// Whether this route answers `endpoint`: the same method (or a route
    /// for any method) and the same path by [`same_path`].
    ///
    /// ```
    /// use repo_graph::{Endpoint, HttpMethod};
    /// # let graph = {
    /// #     let dir = tempfile::tempdir().unwrap();
    /// #     std::fs::write(dir.path().join("app.py"), "from flask import Flask\napp = Flask(__name__)\n\n@app.get('/users/<int:id>/')\ndef user(id):\n    return {}\n").unwrap();
    /// #     repo_graph::Analyzer::new(dir.path()).analyze().unwrap()
    /// # };
    /// let route = &graph.routes()[0];
    /// assert!(route.serves(&Endpoint::new(HttpMethod::Get, "/users/{id}")));
    /// assert!(!route.serves(&Endpoint::new(HttpMethod::Post, "/users/{id}")));
    /// ```
    pub fn serves(&self, endpoint: &Endpoint) -> bool {
        (self.method == endpoint.method || self.method == HttpMethod::Any)
            && same_path(&self.path, &endpoint.path)
    }
}

/// An HTTP endpoint as a specification states it: a method and a path,
/// with path parameters in whatever syntax the author used.
///
/// ```
/// use repo_graph::{Endpoint, HttpMethod};
///
/// let get = Endpoint::new(HttpMethod::Get, "/users/{id}");
/// assert_eq!(get.label(), "GET /users/{id}");
/// assert_eq!(get.path_key(), Endpoint::new(HttpMethod::Get, "/users/<int:pk>/").path_key());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Endpoint {
    /// The method.
    pub method: HttpMethod,
    /// The path as written, starting with `/`.
    pub path: String,
}

impl Endpoint {
    /// An endpoint for `method` and `path`.
    pub fn new(method: HttpMethod, path: impl Into<String>) -> Endpoint {
        Endpoint {
            method,
            path: path.into(),
        }
    }

    /// `GET /users/{id}`.
    pub fn label(&self) -> String {
        format!("{} {}", self.method.as_str(), self.path)
    }

    /// The path with every parameter written `{}`, no empty segments (so
    /// no trailing slash) and no query string or fragment: two paths have
    /// the same key exactly when [`same_path`] holds.
    pub fn path_key(&self) -> String {
        let mut key = String::with_capacity(self.path.len());
        for segment in path_segments(&self.path) {
            key.push('/');
            key.push_str(segment.unwrap_or("{}"));
        }
        if key.is_empty() {
            key.push('/');
        }
        key
    }
}

/// Whether `a` and `b` name the same path: segment by segment, any
/// parameter syntax (`{id}`, `<int:id>`, `:id`, `*`) matching any other,
/// trailing and doubled slashes, query strings and fragments ignored.
/// Literal segments compare exactly (URLs are case-sensitive).
///
/// ```
/// use repo_graph::same_path;
///
/// assert!(same_path("/users/{id}/", "/users/<int:pk>"));
/// assert!(same_path("/users/:id?verbose=1", "/users/*"));
/// assert!(!same_path("/users/{id}", "/users/id"));
/// assert!(!same_path("/users", "/users/{id}"));
/// ```
pub fn same_path(a: &str, b: &str) -> bool {
    path_segments(a).eq(path_segments(b))
}

/// The non-empty segments of `path` before any query or fragment: `None`
/// for a parameter, `Some(text)` for a literal.
fn path_segments(path: &str) -> impl Iterator<Item = Option<&str>> {
    let path = path.split(['?', '#']).next().unwrap_or(path);
    path.split('/').filter(|s| !s.is_empty()).map(|s| {
        let parameter = (s.starts_with('{') && s.ends_with('}'))
            || (s.starts_with('<') && s.ends_with('>'))
            || s.starts_with(':')
            || s == "*";
        (!parameter).then_some(s)
    })
}

/// A route's handler after resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HandlerDraft {
    /// An internal function (or a class, for a view class or handler object).
    Entity(EntityId),
    /// An inline lambda inside this function or module.
    Lambda(EntityId),
    /// Outside the repository or not resolved: the expression as written.
    Text(String),
}

/// A route as one module declares it, before prefixes from other modules apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RouteDraft {
    pub method: HttpMethod,
    pub path: String,
    pub framework: Framework,
    pub handler: HandlerDraft,
    pub line: u32,
    /// Where prefixes declared in other modules come from.
    pub scope: RouteScope,
}

/// Where the prefixes of a [`RouteDraft`] come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RouteScope {
    /// The path is complete (Java: class prefixes and groups are lexical).
    Complete,
    /// Declared on a Flask blueprint or FastAPI router.
    Router(RouterKey),
    /// Declared in a Django URLconf module, which `include`s may mount.
    UrlConf(ModuleId),
}

/// A Flask blueprint or FastAPI router: the module that binds it at module
/// level and the name it is bound to there.
pub(crate) type RouterKey = (ModuleId, String);

/// How routers and URLconfs are wired together across modules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RouteLink {
    /// A router object and its own prefix.
    Router {
        key: RouterKey,
        framework: Framework,
        prefix: String,
    },
    /// `parent.register_blueprint(child, url_prefix=...)` or
    /// `parent.include_router(child, prefix=...)`; `parent` is `None` for
    /// an application object.
    Mount {
        parent: Option<RouterKey>,
        child: RouterKey,
        prefix: Option<String>,
    },
    /// A Django `path(prefix, include(...))` in `from` that mounts `to`.
    Include {
        from: ModuleId,
        to: ModuleId,
        prefix: String,
    },
}

/// Prefix chains longer than this are cut (they only arise from cycles).
const MAX_PREFIX_DEPTH: u32 = 16;
/// At most this many prefixes apply to one router or URLconf: a module
/// included from many places (Django's own test suite) would otherwise
/// multiply its routes.
const MAX_PREFIXES: usize = 32;

/// Where a router is mounted: the parent router (`None` for an
/// application) and the registration's prefix.
type Mount<'a> = (Option<&'a RouterKey>, Option<&'a str>);

/// The prefixes that apply to routes of a scope, from the links, computed
/// once per router or URLconf.
struct Prefixes<'a> {
    routers: HashMap<&'a RouterKey, (Framework, &'a str)>,
    mounts: HashMap<&'a RouterKey, Vec<Mount<'a>>>,
    includes: HashMap<ModuleId, Vec<(ModuleId, &'a str)>>,
    router_memo: RefCell<HashMap<RouterKey, Vec<String>>>,
    url_conf_memo: RefCell<HashMap<ModuleId, Vec<String>>>,
}

impl<'a> Prefixes<'a> {
    fn new(links: &'a [RouteLink]) -> Self {
        let mut prefixes = Prefixes {
            routers: HashMap::new(),
            mounts: HashMap::new(),
            includes: HashMap::new(),
            router_memo: RefCell::new(HashMap::new()),
            url_conf_memo: RefCell::new(HashMap::new()),
        };
        for link in links {
            match link {
                RouteLink::Router {
                    key,
                    framework,
                    prefix,
                } => {
                    prefixes.routers.insert(key, (*framework, prefix));
                }
                RouteLink::Mount {
                    parent,
                    child,
                    prefix,
                } => prefixes
                    .mounts
                    .entry(child)
                    .or_default()
                    .push((parent.as_ref(), prefix.as_deref())),
                RouteLink::Include { from, to, prefix } => prefixes
                    .includes
                    .entry(*to)
                    .or_default()
                    .push((*from, prefix)),
            }
        }
        prefixes
    }

    /// Every full prefix of a router: the prefixes of each place it is
    /// mounted, joined with the mount's prefix (Flask: the registration's
    /// `url_prefix` replaces the blueprint's own; FastAPI: it goes before).
    fn router(&self, key: &RouterKey, depth: u32) -> Vec<String> {
        if let Some(known) = self.router_memo.borrow().get(key) {
            return known.clone();
        }
        let (framework, own) = self
            .routers
            .get(key)
            .map_or((Framework::Flask, ""), |(f, p)| (*f, *p));
        let out = match self.mounts.get(key).filter(|_| depth < MAX_PREFIX_DEPTH) {
            None => vec![own.to_string()],
            Some(mounts) => {
                let mut out = Vec::new();
                for (parent, prefix) in mounts {
                    let local = match (framework, prefix) {
                        (Framework::Flask, Some(p)) => (*p).to_string(),
                        (_, Some(p)) => join_paths(p, own),
                        (_, None) => own.to_string(),
                    };
                    let outer = match parent {
                        Some(parent) if *parent != key => self.router(parent, depth + 1),
                        _ => vec![String::new()],
                    };
                    out.extend(outer.iter().map(|o| join_paths(o, &local)));
                }
                bounded(out)
            }
        };
        self.router_memo
            .borrow_mut()
            .insert(key.clone(), out.clone());
        out
    }

    /// Every full prefix of a Django URLconf: one per chain of `include`s
    /// from a URLconf that nothing includes.
    fn url_conf(&self, module: ModuleId, depth: u32) -> Vec<String> {
        if let Some(known) = self.url_conf_memo.borrow().get(&module) {
            return known.clone();
        }
        let out = match self
            .includes
            .get(&module)
            .filter(|_| depth < MAX_PREFIX_DEPTH)
        {
            None => vec![String::new()],
            Some(includes) => {
                let out: Vec<String> = includes
                    .iter()
                    .filter(|(from, _)| *from != module)
                    .flat_map(|(from, prefix)| {
                        self.url_conf(*from, depth + 1)
                            .into_iter()
                            .map(move |outer| join_paths(&outer, prefix))
                    })
                    .collect();
                if out.is_empty() {
                    vec![String::new()]
                } else {
                    bounded(out)
                }
            }
        };
        self.url_conf_memo.borrow_mut().insert(module, out.clone());
        out
    }
}

/// Sorted, de-duplicated, at most [`MAX_PREFIXES`].
fn bounded(mut prefixes: Vec<String>) -> Vec<String> {
    prefixes.sort();
    prefixes.dedup();
    prefixes.truncate(MAX_PREFIXES);
    prefixes
}

/// Applies cross-module prefixes to resolved drafts and turns them into
/// sorted, de-duplicated [`Route`]s.
pub(crate) fn finish(
    drafts: Vec<(ModuleId, RouteDraft)>,
    links: &[RouteLink],
    modules: &[Module],
    classes: &[Class],
    functions: &[Function],
) -> Vec<Route> {
    let qualname = |entity: EntityId| -> String {
        match entity {
            EntityId::Module(m) => modules.get(m.index()).map(|m| m.name.clone()),
            EntityId::Class(c) => classes.get(c.index()).map(|c| c.qualname.clone()),
            EntityId::Function(f) => functions.get(f.index()).map(|f| f.qualname.clone()),
        }
        .unwrap_or_default()
    };
    let prefixes = Prefixes::new(links);
    let mut routes: Vec<Route> = Vec::with_capacity(drafts.len());
    for (module, draft) in drafts {
        let (handler, entity) = match draft.handler {
            HandlerDraft::Entity(e) => (qualname(e), Some(e)),
            HandlerDraft::Lambda(e) => (format!("{}.<lambda>", qualname(e)), Some(e)),
            HandlerDraft::Text(text) => (text, None),
        };
        let paths = match &draft.scope {
            RouteScope::Complete => vec![join_paths(&draft.path, "")],
            RouteScope::Router(key) => prefixes
                .router(key, 0)
                .iter()
                .map(|p| join_paths(p, &draft.path))
                .collect(),
            RouteScope::UrlConf(conf) => prefixes
                .url_conf(*conf, 0)
                .iter()
                .map(|p| join_paths(p, &draft.path))
                .collect(),
        };
        for path in paths {
            routes.push(Route {
                method: draft.method,
                path,
                handler: handler.clone(),
                entity,
                framework: draft.framework,
                module,
                file: modules
                    .get(module.index())
                    .map(|m| m.path.clone())
                    .unwrap_or_default(),
                line: draft.line,
            });
        }
    }
    routes.sort_by(|a, b| {
        (&a.path, a.method, &a.handler, &a.file, a.line)
            .cmp(&(&b.path, b.method, &b.handler, &b.file, b.line))
    });
    routes.dedup();
    routes
}

/// Joins URL path pieces with exactly one `/` between them; the result
/// starts with `/` and keeps a trailing `/` of the last non-empty piece.
pub(crate) fn join_paths(prefix: &str, path: &str) -> String {
    let prefix = prefix.trim();
    let path = path.trim();
    let mut out = String::with_capacity(prefix.len() + path.len() + 2);
    if !prefix.starts_with('/') {
        out.push('/');
    }
    out.push_str(prefix);
    if !path.is_empty() {
        while out.ends_with('/') {
            out.pop();
        }
        out.push('/');
        out.push_str(path.trim_start_matches('/'));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joining_paths() {
        assert_eq!(join_paths("", ""), "/");
        assert_eq!(join_paths("", "users"), "/users");
        assert_eq!(join_paths("/api/", "/users/{id}"), "/api/users/{id}");
        assert_eq!(join_paths("/api", ""), "/api");
        assert_eq!(join_paths("api", "users/"), "/api/users/");
        assert_eq!(join_paths("/users", "/"), "/users/");
    }

    #[test]
    fn parameters_match_in_any_syntax() {
        assert!(same_path("/a/{id}/b/", "/a/<int:pk>/b"));
        assert!(same_path("/a/:id", "/a/{x}"));
        assert!(same_path("/a/*", "/a/{x}"));
        assert!(same_path("/a//b/", "/a/b"));
        assert!(same_path("/", ""));
        assert!(same_path("/a?x=1", "/a#top"));
        assert!(!same_path("/a/{id}", "/a/id"));
        assert!(!same_path("/a", "/a/{id}"));
        assert!(!same_path("/A", "/a"));
        // A brace that does not enclose the whole segment is a literal.
        assert!(!same_path("/a/{id}.json", "/a/{x}"));
    }

    #[test]
    fn path_keys_agree_with_same_path() {
        let key = |p: &str| Endpoint::new(HttpMethod::Get, p).path_key();
        assert_eq!(key("/users/<int:id>/"), "/users/{}");
        assert_eq!(key(""), "/");
        assert_eq!(key("/?q=1"), "/");
        let paths = ["/a/{id}", "/a/:x/", "/a/b", "/a", "/", "/a/{}", "/a/*/c"];
        for a in paths {
            for b in paths {
                assert_eq!(key(a) == key(b), same_path(a, b), "{a} vs {b}");
            }
        }
    }

    #[test]
    fn labels_and_serving() {
        let route = |method, path: &str| Route {
            method,
            path: path.to_owned(),
            handler: "h".to_owned(),
            entity: None,
            framework: Framework::Flask,
            module: ModuleId(0),
            file: "app.py".to_owned(),
            line: 1,
        };
        let endpoint = Endpoint::new(HttpMethod::Put, "/items/{id}");
        assert_eq!(endpoint.label(), "PUT /items/{id}");
        assert!(route(HttpMethod::Put, "/items/<id>").serves(&endpoint));
        assert!(route(HttpMethod::Any, "/items/<id>/").serves(&endpoint));
        assert!(!route(HttpMethod::Get, "/items/<id>").serves(&endpoint));
        assert!(!route(HttpMethod::Put, "/items").serves(&endpoint));
    }
}
