//! Feature weights: the paper's, the published implementation's, or a file's.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// One weight per module feature of equation (2), seed 001.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Weights {
    /// Personalized PageRank centrality in the module dependency graph.
    pub dependency: f64,
    /// Branch count and `def` nesting.
    pub complexity: f64,
    /// Importers plus incoming call sites.
    pub usage: f64,
    /// Conventional names and keywords.
    pub semantic: f64,
    /// Docstring richness.
    pub doc: f64,
    /// Commit volume and recency.
    pub git: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Self::paper()
    }
}

impl Weights {
    /// The paper's weights: all 1.0 (equation 2).
    pub fn paper() -> Self {
        Weights {
            dependency: 1.0,
            complexity: 1.0,
            usage: 1.0,
            semantic: 1.0,
            doc: 1.0,
            git: 1.0,
        }
    }

    /// The weights of RepoMaster's published implementation: usage 2,
    /// dependency 3, complexity 1, semantic 0.5, doc 0, git 4.
    pub fn published() -> Self {
        Weights {
            dependency: 3.0,
            complexity: 1.0,
            usage: 2.0,
            semantic: 0.5,
            doc: 0.0,
            git: 4.0,
        }
    }

    /// Reads weights from a TOML file of `feature = number` lines; a missing
    /// feature keeps the paper's 1.0, an unknown one is an error.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("w.toml");
    /// std::fs::write(&path, "git = 0.0\nusage = 2.5\n").unwrap();
    /// let w = importance::Weights::from_toml_file(&path).unwrap();
    /// assert_eq!((w.git, w.usage, w.doc), (0.0, 2.5, 1.0));
    /// ```
    pub fn from_toml_file(path: &Path) -> Result<Self, crate::Error> {
        let text = repo_files::read_small_text(path, MAX_WEIGHTS_FILE).map_err(|e| {
            crate::Error::WeightsFile {
                path: path.to_path_buf(),
                message: format!("{e}; a weights file is a few `feature = number` lines"),
            }
        })?;
        let weights: Weights = toml::from_str(&text).map_err(|e| crate::Error::WeightsFile {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let all = [
            weights.dependency,
            weights.complexity,
            weights.usage,
            weights.semantic,
            weights.doc,
            weights.git,
        ];
        if all.iter().any(|w| !w.is_finite() || *w < 0.0) {
            return Err(crate::Error::WeightsFile {
                path: path.to_path_buf(),
                message: "weights must be finite and non-negative".into(),
            });
        }
        Ok(weights)
    }

    /// `paper`, `published`, or a path to a TOML file.
    pub fn from_name_or_file(spec: &str) -> Result<Self, crate::Error> {
        match spec {
            "paper" => Ok(Self::paper()),
            "published" => Ok(Self::published()),
            path => Self::from_toml_file(Path::new(path)),
        }
    }
}

/// A weights file is a few lines: anything past 64 KiB (say `/dev/zero`)
/// is refused before it is read whole.
const MAX_WEIGHTS_FILE: u64 = 64 * 1024;
