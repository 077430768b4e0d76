//! The per-module feature scores of appendix F, each computed from the
//! graph's typed facts (never by matching raw text).

use repo_graph::{Complexity, Language, Module};

/// Names that make a module important by convention.
const CONVENTIONAL_NAMES: &[&str] = &["app", "settings", "config", "utils", "constants"];
/// Keywords that mark central code when they appear in a module or entity name.
pub(crate) const KEYWORDS: &[&str] = &[
    "main",
    "core",
    "engine",
    "api",
    "service",
    "processor",
    "factory",
    "builder",
    "scheduler",
    "config",
];

pub(crate) fn has_keyword(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    KEYWORDS.iter().any(|k| lower.contains(k))
}

/// [`KEYWORDS`], or a role name the language's frameworks give central
/// types ([`Language::role_names`]).
fn has_keyword_in(language: Language, name: &str) -> bool {
    has_keyword(name) || {
        let lower = name.to_ascii_lowercase();
        language.role_names().iter().any(|k| lower.contains(k))
    }
}

/// `min(branches/50, 1) + min(max_def_depth/5, 1) × 0.3` (algorithm 2), from
/// branch constructs counted on the syntax tree.
pub(crate) fn complexity(c: &Complexity) -> f64 {
    (f64::from(c.branches) / 50.0).min(1.0) + (f64::from(c.max_def_depth) / 5.0).min(1.0) * 0.3
}

/// Conventional module names, `main`, and keywords in the module's name and
/// in the names of the entities it defines; at most 1. The module's name is
/// the one its language qualifies code with ([`Module::dotted_name`]: a
/// Java unit `com.example.UserController.java` counts as
/// `com.example.UserController`), keywords include the language's role
/// names, and a module that declares the language's main function
/// ([`Language::main_function`], Java's `main`) counts as `main`.
pub(crate) fn semantic(module: &Module, entity_names: &[&str]) -> f64 {
    let keyword = |name: &str| has_keyword_in(module.language, name);
    let name = module.dotted_name();
    let mut parts = name.rsplit('.');
    let last = parts.next().unwrap_or(name);
    let mut score = 0.0;
    if module.is_package {
        score += 0.5;
    }
    if CONVENTIONAL_NAMES.contains(&last) {
        score += 0.5;
    }
    let declares_main = module
        .language
        .main_function()
        .is_some_and(|main| entity_names.contains(&main));
    if last == "main" || last == "__main__" || declares_main {
        score += 0.7;
    }
    if keyword(last) {
        score += 0.3;
    }
    if parts.any(keyword) {
        score += 0.15;
    }
    let keyword_entities = entity_names.iter().filter(|n| keyword(n)).count();
    score += 0.3 * (keyword_entities as f64 / 3.0).min(1.0);
    score.min(1.0)
}

/// Richness of one docstring in [0, 1]: length up to 200 characters (0.6),
/// then a parameters section (0.15), a returns section (0.15) and examples
/// (0.1), recognised in Google, NumPy and reST styles and in Javadoc
/// (`@param`, `@return`, `<pre>` blocks).
pub(crate) fn docstring(doc: Option<&str>) -> f64 {
    let Some(doc) = doc else { return 0.0 };
    let mut score = (doc.chars().count() as f64 / 200.0).min(1.0) * 0.6;
    let lines: Vec<&str> = doc.lines().map(str::trim).collect();
    let numpy_section = |title: &str| {
        lines
            .windows(2)
            .any(|w| w[0] == title && w[1].len() >= 3 && w[1].chars().all(|c| c == '-'))
    };
    let google_section = |titles: &[&str]| lines.iter().any(|l| titles.contains(l));
    let rest_field = |fields: &[&str]| {
        lines
            .iter()
            .any(|l| fields.iter().any(|f| l.starts_with(f)))
    };
    if google_section(&["Args:", "Arguments:", "Parameters:", "Params:"])
        || numpy_section("Parameters")
        || rest_field(&[":param ", ":parameter ", ":arg ", "@param "])
    {
        score += 0.15;
    }
    if google_section(&["Returns:", "Return:", "Yields:"])
        || numpy_section("Returns")
        || numpy_section("Yields")
        || rest_field(&[":returns:", ":return:", ":rtype:", "@return"])
    {
        score += 0.15;
    }
    if google_section(&["Example:", "Examples:"])
        || numpy_section("Examples")
        || lines.iter().any(|l| {
            l.starts_with(">>>") || l.starts_with(".. code-block") || l.starts_with("<pre>")
        })
    {
        score += 0.1;
    }
    score.min(1.0)
}

/// Module documentation: its own docstring (60 %) and the mean richness of
/// its classes' and functions' docstrings (40 %).
pub(crate) fn doc(module: &Module, entity_docs: &[Option<&str>]) -> f64 {
    let own = docstring(module.docstring.as_deref());
    let mean = if entity_docs.is_empty() {
        0.0
    } else {
        entity_docs.iter().map(|d| docstring(*d)).sum::<f64>() / entity_docs.len() as f64
    };
    0.6 * own + 0.4 * mean
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docstring_styles() {
        let google = "Load a file.\n\nArgs:\n    path: where.\n\nReturns:\n    The data.\n\nExamples:\n    >>> load('x')";
        let numpy = "Load a file.\n\nParameters\n----------\npath : str\n\nReturns\n-------\nbytes";
        let rest = "Load a file.\n\n:param path: where\n:returns: the data";
        let base = |s: &str| 0.6 * s.chars().count() as f64 / 200.0;
        assert!((docstring(Some(google)) - (base(google) + 0.4)).abs() < 1e-9);
        assert!((docstring(Some(numpy)) - (base(numpy) + 0.3)).abs() < 1e-9);
        assert!((docstring(Some(rest)) - (base(rest) + 0.3)).abs() < 1e-9);
        assert_eq!(docstring(None), 0.0);
        assert!(docstring(Some(&"x".repeat(500))) <= 0.6 + 1e-12);
    }

    #[test]
    fn complexity_formula() {
        let mut c = Complexity::default();
        c.branches = 25;
        c.max_def_depth = 10;
        assert!((complexity(&c) - 0.8).abs() < 1e-12);
    }
}
