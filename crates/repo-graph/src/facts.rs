//! The per-file facts of any supported language, as cached by content hash.

use serde::{Deserialize, Serialize};

use crate::lang::java::JavaFacts;
use crate::lang::python::FileFacts;
use crate::model::Language;

/// Bumped whenever [`Facts`] or an extraction changes, to invalidate caches.
pub(crate) const FACTS_VERSION: u32 = 6;

/// Everything one file tells about itself, by language.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum Facts {
    Python(FileFacts),
    Java(JavaFacts),
}

impl Facts {
    pub(crate) fn language(&self) -> Language {
        match self {
            Facts::Python(_) => Language::Python,
            Facts::Java(_) => Language::Java,
        }
    }

    pub(crate) fn python(&self) -> Option<&FileFacts> {
        match self {
            Facts::Python(f) => Some(f),
            Facts::Java(_) => None,
        }
    }

    pub(crate) fn java(&self) -> Option<&JavaFacts> {
        match self {
            Facts::Java(f) => Some(f),
            Facts::Python(_) => None,
        }
    }

    /// Number of classes (Java: types) the file defines.
    pub(crate) fn class_count(&self) -> usize {
        match self {
            Facts::Python(f) => f.classes.len(),
            Facts::Java(f) => f.types.len(),
        }
    }

    /// Number of functions (Java: methods and constructors) the file defines.
    pub(crate) fn function_count(&self) -> usize {
        match self {
            Facts::Python(f) => f.functions.len(),
            Facts::Java(f) => f.methods.len(),
        }
    }
}

/// The cache key of a file's facts: the same bytes read as Python and as
/// Java give different facts (an empty `__init__.py` and an empty `.java`).
pub(crate) type FactsKey = (u128, Language);
