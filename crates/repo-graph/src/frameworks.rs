//! What this crate knows about web frameworks, in one place: the names by
//! which each framework declares a route. The language files read the
//! syntax (`lang/python/routes.rs`, `lang/java/routes.rs`) and the
//! resolution joins prefixes and handlers (`lang/python/results.rs`,
//! [`crate::routes`]); which decorator, call, constructor or annotation
//! means what is decided here, so that supporting a new framework or verb
//! starts with this file.

use crate::routes::Framework;
#[cfg(feature = "java")]
use crate::routes::HttpMethod;

#[cfg(feature = "python")]
/// Python: the attribute names of a decorator that declares a Flask or
/// FastAPI route (`@app.get("/x")`, `@bp.route("/x")`).
pub(crate) const PYTHON_ROUTE_DECORATORS: &[&str] = &[
    "route",
    "api_route",
    "get",
    "post",
    "put",
    "delete",
    "patch",
    "head",
    "options",
];

/// Python: route decorators that take their methods from `methods=`
/// (every other decorator name is its verb).
pub(crate) const PYTHON_MULTI_METHOD_DECORATORS: &[&str] = &["route", "api_route"];

/// Python: the framework a module or an outside object belongs to, by its
/// top-level package (`flask.Flask` → Flask).
pub(crate) fn python_framework_of(dotted: &str) -> Option<Framework> {
    match dotted.split('.').next().unwrap_or(dotted) {
        "flask" => Some(Framework::Flask),
        "fastapi" => Some(Framework::FastApi),
        _ => None,
    }
}

/// Python: the framework whose application or router a class constructs
/// (`Flask(__name__)`, `APIRouter()`), by the class's simple name.
pub(crate) fn python_app_constructor(name: &str) -> Option<Framework> {
    match name {
        "Flask" | "Blueprint" => Some(Framework::Flask),
        "FastAPI" | "APIRouter" => Some(Framework::FastApi),
        _ => None,
    }
}

#[cfg(feature = "python")]
/// Python: a Django `urlpatterns` entry's function, by its simple name:
/// whether its route is a regular expression (`re_path`, `url`) or a path
/// pattern (`path`).
pub(crate) fn django_url_function(name: &str) -> Option<DjangoPattern> {
    match name {
        "path" => Some(DjangoPattern::Path),
        "re_path" | "url" => Some(DjangoPattern::Regex),
        _ => None,
    }
}

#[cfg(feature = "python")]
/// How a Django URL entry writes its route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DjangoPattern {
    /// `path("users/<int:id>/", ...)`.
    Path,
    /// `re_path(r"^users/(?P<id>\d+)/$", ...)`.
    Regex,
}

#[cfg(feature = "python")]
/// Python: the function that nests another URL configuration (`include`).
pub(crate) const DJANGO_INCLUDE: &str = "include";

#[cfg(feature = "java")]
/// Java: simple names of the annotations that can declare routes or route
/// prefixes (Spring, JAX-RS, Micronaut).
pub(crate) const JAVA_ROUTE_ANNOTATIONS: &[&str] = &[
    "RequestMapping",
    "GetMapping",
    "PostMapping",
    "PutMapping",
    "DeleteMapping",
    "PatchMapping",
    "Path",
    "GET",
    "POST",
    "PUT",
    "DELETE",
    "PATCH",
    "HEAD",
    "OPTIONS",
    "Controller",
    "Get",
    "Post",
    "Put",
    "Delete",
    "Patch",
    "Head",
    "Options",
];

#[cfg(feature = "java")]
/// Java, Spring: the verb of a `@GetMapping`-style annotation; `None` for
/// every other name (`@RequestMapping` takes its verbs from `method=`).
pub(crate) fn spring_verb_annotation(name: &str) -> Option<HttpMethod> {
    match name {
        "GetMapping" => Some(HttpMethod::Get),
        "PostMapping" => Some(HttpMethod::Post),
        "PutMapping" => Some(HttpMethod::Put),
        "DeleteMapping" => Some(HttpMethod::Delete),
        "PatchMapping" => Some(HttpMethod::Patch),
        _ => None,
    }
}

#[cfg(feature = "java")]
/// Java, Spring: the annotation whose `method=` lists the verbs and whose
/// path on a class prefixes its methods' routes.
pub(crate) const SPRING_REQUEST_MAPPING: &str = "RequestMapping";

#[cfg(feature = "java")]
/// Java, JAX-RS: the verb of a `@GET`-style annotation.
pub(crate) fn jaxrs_verb_annotation(name: &str) -> Option<HttpMethod> {
    // JAX-RS spells verbs in capitals (`@GET`).
    HttpMethod::from_verb(name).filter(|_| name.bytes().all(|b| b.is_ascii_uppercase()))
}

#[cfg(feature = "java")]
/// Java, JAX-RS: the annotation holding a resource's or method's path.
pub(crate) const JAXRS_PATH: &str = "Path";

#[cfg(feature = "java")]
/// Java, Micronaut: the verb of a `@Get`-style annotation (only in a
/// file that imports Micronaut or a class annotated `@Controller(...)`).
pub(crate) fn micronaut_verb_annotation(name: &str) -> Option<HttpMethod> {
    // Micronaut capitalises them (`@Get`).
    HttpMethod::from_verb(name).filter(|_| name.bytes().skip(1).all(|b| b.is_ascii_lowercase()))
}

#[cfg(feature = "java")]
/// Java, Micronaut: the class annotation holding the routes' prefix.
pub(crate) const MICRONAUT_CONTROLLER: &str = "Controller";

#[cfg(feature = "java")]
/// Java, Javalin and Spark: the call that groups routes under a path
/// (`path("/api", () -> { ... })`); the other route calls are named by
/// their verb (`get`, `post`, ...).
pub(crate) const JAVA_PATH_GROUP_CALL: &str = "path";

#[cfg(feature = "java")]
/// Java: the call-style framework of a file, from what it imports.
pub(crate) fn java_call_framework(imports_javalin: bool) -> Framework {
    if imports_javalin {
        Framework::Javalin
    } else {
        Framework::Spark
    }
}

#[cfg(all(test, feature = "python", feature = "java"))]
mod tests {
    use super::*;

    #[test]
    fn every_verb_annotation_is_a_route_annotation() {
        for name in JAVA_ROUTE_ANNOTATIONS {
            let known = spring_verb_annotation(name).is_some()
                || jaxrs_verb_annotation(name).is_some()
                || micronaut_verb_annotation(name).is_some()
                || [SPRING_REQUEST_MAPPING, JAXRS_PATH, MICRONAUT_CONTROLLER].contains(name);
            assert!(known, "{name} is listed but means nothing");
        }
        assert_eq!(spring_verb_annotation("GetMapping"), Some(HttpMethod::Get));
        assert_eq!(jaxrs_verb_annotation("Get"), None);
        assert_eq!(micronaut_verb_annotation("GET"), None);
    }

    #[test]
    fn python_frameworks_are_told_by_package_and_constructor() {
        assert_eq!(python_framework_of("flask.Flask"), Some(Framework::Flask));
        assert_eq!(python_framework_of("fastapi"), Some(Framework::FastApi));
        assert_eq!(python_framework_of("flask_login"), None);
        assert_eq!(
            python_app_constructor("APIRouter"),
            Some(Framework::FastApi)
        );
        assert_eq!(django_url_function("url"), Some(DjangoPattern::Regex));
        for multi in PYTHON_MULTI_METHOD_DECORATORS {
            assert!(PYTHON_ROUTE_DECORATORS.contains(multi));
        }
    }
}
