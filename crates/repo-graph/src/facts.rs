//! The per-file facts of any supported language, as cached by content hash.

use serde::{Deserialize, Serialize};

use crate::budget::Cut;
use crate::lang::java::JavaFacts;
use crate::lang::python::PythonFacts;
use crate::model::{Complexity, Language};

/// Bumped whenever [`Facts`] or an extraction changes, to invalidate caches.
pub(crate) const FACTS_VERSION: u32 = 16;

/// Everything one file tells about itself, and what extracting it cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Facts {
    pub of: LanguageFacts,
    /// Fact units held ([`Spent::units`]), for the memory estimate.
    pub units: u64,
    /// Where the file went over a budget, if it did.
    pub cut: Option<Cut>,
}

/// The facts of one file, by language.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum LanguageFacts {
    Python(PythonFacts),
    Java(JavaFacts),
}

/// What an extraction cost: its fact units (every record it kept: name
/// reads, bindings, call sites, effects, value expression nodes,
/// definitions, locals, imports, names), and the line where it ran out of
/// [`crate::MAX_FILE_FACTS`], if it did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Spent {
    pub units: u64,
    pub cut_line: Option<u32>,
}

impl Facts {
    pub(crate) fn language(&self) -> Language {
        match &self.of {
            LanguageFacts::Python(_) => Language::Python,
            LanguageFacts::Java(_) => Language::Java,
        }
    }

    pub(crate) fn python(&self) -> Option<&PythonFacts> {
        match &self.of {
            LanguageFacts::Python(f) => Some(f),
            LanguageFacts::Java(_) => None,
        }
    }

    pub(crate) fn java(&self) -> Option<&JavaFacts> {
        match &self.of {
            LanguageFacts::Java(f) => Some(f),
            LanguageFacts::Python(_) => None,
        }
    }

    /// Lines of the file.
    pub(crate) fn line_count(&self) -> u32 {
        match &self.of {
            LanguageFacts::Python(f) => f.line_count,
            LanguageFacts::Java(f) => f.line_count,
        }
    }

    /// The file's branch and nesting counts.
    pub(crate) fn complexity(&self) -> Complexity {
        match &self.of {
            LanguageFacts::Python(f) => f.complexity,
            LanguageFacts::Java(f) => f.complexity,
        }
    }

    /// Whether the parser found syntax errors.
    pub(crate) fn has_syntax_errors(&self) -> bool {
        match &self.of {
            LanguageFacts::Python(f) => f.has_syntax_errors,
            LanguageFacts::Java(f) => f.has_syntax_errors,
        }
    }

    /// The declared package (Java).
    pub(crate) fn package(&self) -> Option<&str> {
        match &self.of {
            LanguageFacts::Java(f) => f.package.as_deref(),
            LanguageFacts::Python(_) => None,
        }
    }

    /// The module's `__all__` (Python), when it is a literal list.
    pub(crate) fn all(&self) -> Option<&[String]> {
        match &self.of {
            LanguageFacts::Python(f) => f.all.as_deref(),
            LanguageFacts::Java(_) => None,
        }
    }

    /// Number of classes (Java: types) the file defines.
    pub(crate) fn class_count(&self) -> usize {
        match &self.of {
            LanguageFacts::Python(f) => f.classes.len(),
            LanguageFacts::Java(f) => f.types.len(),
        }
    }

    /// Number of functions (Java: methods and constructors) the file defines.
    pub(crate) fn function_count(&self) -> usize {
        match &self.of {
            LanguageFacts::Python(f) => f.functions.len(),
            LanguageFacts::Java(f) => f.methods.len(),
        }
    }
}

/// The cache key of a file's facts: the same bytes read as Python and as
/// Java give different facts (an empty `__init__.py` and an empty `.java`).
pub(crate) type FactsKey = (u128, Language);
