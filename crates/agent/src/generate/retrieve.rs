//! Retrieval of reference code (seed 004 section 3.2.2): existing
//! repositories on disk (a framework's example application, say) are
//! analysed with repo-graph once; for each file to write, the reference
//! module that best matches the file's plan (its path, purpose, exports and
//! the endpoints it serves) is offered through context-pack's code view,
//! which keeps the most relevant bodies within a token budget. A file
//! without code facts (`start.sh`, `requirements.txt`) is matched by name.
//! Nothing is offered when nothing matches: retrieval is a decision, not
//! a default.

use std::path::{Path, PathBuf};

use context_pack::TokenCounter;
use context_pack::bm25::{Bm25, stem, terms};
use context_pack::select::{self, SelectOptions};
use repo_graph::{EntityId, ModuleId, RepoGraph};
use serde::{Deserialize, Serialize};

use super::blueprint::{Blueprint, FilePlan};

/// Largest non-code reference file offered whole (bytes).
const MAX_PLAIN_BYTES: u64 = 64 * 1024;

/// Directories searched for a same-named plain file, at most this deep.
const MAX_PLAIN_DEPTH: usize = 4;

/// The analysed reference repositories.
#[derive(Debug)]
pub struct References {
    repos: Vec<Reference>,
}

struct Reference {
    root: PathBuf,
    graph: RepoGraph,
    /// BM25 over one document per module: its path, names and docstrings.
    index: Bm25,
}

impl std::fmt::Debug for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reference")
            .field("root", &self.root)
            .field("modules", &self.graph.modules().len())
            .finish()
    }
}

/// What was offered for one target file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retrieved {
    /// The reference file (`<repo>/<path>`).
    pub source: String,
    /// Tokens of the offered text.
    pub tokens: usize,
    /// The text offered (code view or file).
    #[serde(skip)]
    pub text: String,
}

impl References {
    /// Analyses each reference repository.
    pub fn analyze(roots: &[PathBuf]) -> Result<References, crate::Error> {
        let mut repos = Vec::with_capacity(roots.len());
        for root in roots {
            if !root.is_dir() {
                return Err(crate::Error::Task(format!(
                    "reference {} is not a directory",
                    root.display()
                )));
            }
            let graph = repo_graph::Analyzer::new(root).analyze()?;
            let docs: Vec<Vec<String>> = graph
                .module_ids()
                .map(|id| module_terms(&graph, id))
                .collect();
            repos.push(Reference {
                root: root.clone(),
                index: Bm25::from_terms(docs),
                graph,
            });
        }
        Ok(References { repos })
    }

    /// The reference code for `file`, within `budget` tokens, or `None`
    /// when no reference file matches its plan.
    pub fn for_file(
        &self,
        file: &FilePlan,
        blueprint: &Blueprint,
        counter: &TokenCounter,
        budget: usize,
    ) -> Option<Retrieved> {
        if budget == 0 {
            return None;
        }
        let name = file.path.rsplit('/').next().unwrap_or(&file.path);
        if !name.ends_with(".py") && !name.ends_with(".java") {
            return self.plain_file(name, counter, budget);
        }
        let query = query_for(file, blueprint);
        let query_terms: Vec<String> = terms(&query).iter().map(|t| stem(t)).collect();
        let mut best: Option<(f64, &Reference, ModuleId)> = None;
        for repo in &self.repos {
            let scores = repo.index.scores_for_terms(query_terms.clone());
            // One BM25 document per module, in module order.
            for (id, score) in repo.graph.module_ids().zip(scores) {
                if score > 0.0 && best.as_ref().is_none_or(|(b, _, _)| score > *b) {
                    best = Some((score, repo, id));
                }
            }
        }
        let (_, repo, module) = best?;
        let path = repo.graph.module(module)?.path.clone();
        let options = SelectOptions {
            max_tokens: budget,
            ..SelectOptions::default()
        };
        let view = select::code(&repo.graph, &path, Some(&query), counter, &options).ok()?;
        Some(Retrieved {
            source: format!("{}/{path}", repo.root.display()),
            tokens: view.tokens,
            text: view.text,
        })
    }

    /// A same-named file of a reference (`start.sh`, `requirements.txt`),
    /// the shallowest first, cut to the budget.
    fn plain_file(&self, name: &str, counter: &TokenCounter, budget: usize) -> Option<Retrieved> {
        for repo in &self.repos {
            let found = ignore::WalkBuilder::new(&repo.root)
                .max_depth(Some(MAX_PLAIN_DEPTH))
                .follow_links(false)
                .sort_by_file_name(|a, b| a.cmp(b))
                .build()
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()) && e.file_name() == name)
                .min_by_key(|e| e.depth());
            let Some(entry) = found else { continue };
            let path = entry.path();
            // Opened inside the reference, without blocking, size-capped:
            // the walk's look at it may be stale by now.
            let text = match repo_files::read_in_tree(&repo.root, path, MAX_PLAIN_BYTES) {
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => text,
                    Err(_) => continue,
                },
                Err(error) => {
                    tracing::debug!(%error, "reference file not offered");
                    continue;
                }
            };
            let view = select::log(
                counter,
                &text,
                &SelectOptions {
                    max_tokens: budget,
                    ..SelectOptions::default()
                },
            );
            return Some(Retrieved {
                source: display(&repo.root, path),
                tokens: view.tokens,
                text: view.text,
            });
        }
        None
    }
}

fn display(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).map_or_else(
        |_| path.display().to_string(),
        |rel| format!("{}/{}", root.display(), rel.display()),
    )
}

/// What a planned file is about: its path's words, purpose, exports, and
/// for the files that serve them, the endpoints' paths and summaries.
fn query_for(file: &FilePlan, blueprint: &Blueprint) -> String {
    let mut q = format!(
        "{} {} {}",
        path_words(&file.path),
        file.purpose,
        file.exports.join(" ")
    );
    let serves = ["app", "main", "route", "view", "api", "server", "handler"]
        .iter()
        .any(|w| file.path.contains(w));
    if serves && let Some(service) = &blueprint.service {
        for e in &service.endpoints {
            q.push(' ');
            q.push_str(&e.path.replace(['/', '{', '}', '<', '>', ':'], " "));
            q.push(' ');
            q.push_str(&e.summary);
        }
    }
    q
}

/// The words of a path without its extension (every Python module's
/// path ends in `py`, which would match every query).
fn path_words(path: &str) -> String {
    let stem = path.rsplit_once('.').map_or(path, |(stem, _)| stem);
    stem.replace(['/', '.', '_', '-'], " ")
}

/// A module's document for the index: its path, the names of everything it
/// defines and their docstrings' first lines, stemmed.
fn module_terms(graph: &RepoGraph, id: ModuleId) -> Vec<String> {
    let mut text = String::new();
    if let Some(m) = graph.module(id) {
        text.push_str(&path_words(&m.path));
        if let Some(doc) = &m.docstring {
            text.push(' ');
            text.push_str(doc.lines().next().unwrap_or(""));
        }
    }
    let mut stack: Vec<EntityId> = graph.children(EntityId::Module(id)).to_vec();
    let mut seen = 0usize;
    while let Some(entity) = stack.pop() {
        seen += 1;
        if seen > 2_000 {
            break;
        }
        text.push(' ');
        let name = graph.qualname(entity).unwrap_or_default();
        text.push_str(name.rsplit('.').next().unwrap_or(""));
        stack.extend_from_slice(graph.children(entity));
    }
    for route in graph.routes().iter().filter(|r| r.module == id) {
        text.push(' ');
        text.push_str(&route.path.replace(['/', '{', '}', '<', '>', ':'], " "));
    }
    terms(&text).iter().map(|t| stem(t)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::blueprint::SpecFacts;

    #[test]
    fn the_best_matching_module_is_offered_and_plain_files_by_name() {
        let reference = tempfile::tempdir().unwrap();
        let write = |p: &str, t: &str| {
            let path = reference.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, t).unwrap();
        };
        write(
            "examples/todo/app.py",
            "from flask import Flask\napp = Flask(__name__)\n\n@app.get('/todos')\ndef list_todos():\n    return []\n",
        );
        write(
            "examples/todo/storage.py",
            "class TodoStorage:\n    \"\"\"Keeps todo items in memory.\"\"\"\n    def add(self, item):\n        pass\n",
        );
        write("examples/todo/start.sh", "#!/bin/sh\nexec python app.py\n");
        let refs = References::analyze(&[reference.path().to_path_buf()]).unwrap();
        let counter = TokenCounter::new(Default::default()).unwrap();
        let blueprint = Blueprint::from_facts("p", &SpecFacts::of("GET /todos\n"));
        let plan = |path: &str, purpose: &str| FilePlan {
            path: path.into(),
            purpose: purpose.into(),
            exports: vec![],
            depends_on: vec![],
        };
        let storage = refs
            .for_file(
                &plan("store.py", "Storage of todo items"),
                &blueprint,
                &counter,
                500,
            )
            .unwrap();
        assert!(
            storage.source.ends_with("examples/todo/storage.py"),
            "{}",
            storage.source
        );
        assert!(storage.text.contains("class TodoStorage"));
        let start = refs
            .for_file(&plan("start.sh", "start"), &blueprint, &counter, 500)
            .unwrap();
        assert!(start.text.contains("exec python app.py"));
        assert!(
            refs.for_file(&plan("zzz.py", "quantum flux"), &blueprint, &counter, 500)
                .is_none()
        );
        assert!(
            refs.for_file(&plan("Dockerfile", "image"), &blueprint, &counter, 500)
                .is_none()
        );
        assert!(References::analyze(&[reference.path().join("missing")]).is_err());
    }
}
