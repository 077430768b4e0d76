//! Code memory (seed 004 section 3.2.1): after a file is written, its
//! entry is taken from repo-graph's facts of the new file (definitions
//! with signatures, imports, routes), not from a model's summary; the
//! blueprint gives the one-line purpose and which planned files will use
//! it. The context for the next file holds the entries of the files it
//! depends on, never their code.

use std::fmt::Write as _;

use repo_graph::{EntityId, ImportTarget, ModuleId, RepoGraph};
use serde::{Deserialize, Serialize};

use super::blueprint::Blueprint;

/// Most interface lines kept per entry: a file with hundreds of public
/// functions is summarised by its first ones and a count.
const MAX_INTERFACE: usize = 60;

/// What the memory knows about one written file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryEntry {
    /// Path relative to the repository root.
    pub path: String,
    /// Its responsibility (from the blueprint).
    pub purpose: String,
    /// Public classes (with their methods) and functions, as signatures.
    pub interface: Vec<String>,
    /// Interface lines left out beyond `MAX_INTERFACE`.
    #[serde(default)]
    pub more: usize,
    /// Imports of other files of the repository: `module: names`.
    pub internal_imports: Vec<String>,
    /// External packages it imports.
    pub external_imports: Vec<String>,
    /// Web routes it declares: `GET /health -> handler`.
    pub routes: Vec<String>,
    /// Planned files expected to use it.
    pub used_by: Vec<String>,
    /// The file did not parse cleanly.
    #[serde(default)]
    pub syntax_errors: bool,
}

impl MemoryEntry {
    /// The entry of the file at `path` in `graph`; `None` when the file is
    /// not a module repo-graph analysed (a `start.sh`, `requirements.txt`).
    pub fn of(graph: &RepoGraph, path: &str, blueprint: &Blueprint) -> Option<MemoryEntry> {
        let id = graph.module_by_path(path)?;
        let module = graph.module(id)?;
        let mut interface = Vec::new();
        let mut more = 0usize;
        let mut push = |line: String, interface: &mut Vec<String>| {
            if interface.len() < MAX_INTERFACE {
                interface.push(line);
            } else {
                more += 1;
            }
        };
        for &child in graph.children(EntityId::Module(id)) {
            if private(graph.qualname(child).unwrap_or_default()) {
                continue;
            }
            match child {
                EntityId::Class(_) => {
                    push(graph.signature(child), &mut interface);
                    for &member in graph.children(child) {
                        let name = graph.qualname(member).unwrap_or_default();
                        if matches!(member, EntityId::Function(_))
                            && (!private(name) || name.ends_with(".__init__"))
                        {
                            push(format!("    {}", graph.signature(member)), &mut interface);
                        }
                    }
                }
                EntityId::Function(_) => push(graph.signature(child), &mut interface),
                EntityId::Module(_) => {}
            }
        }
        if let Some(all) = &module.all {
            push(format!("__all__ = {all:?}"), &mut interface);
        }
        let (internal_imports, external_imports) = imports(graph, id);
        let routes = graph
            .routes()
            .iter()
            .filter(|r| r.module == id)
            .map(|r| format!("{} {} -> {}", r.method.as_str(), r.path, r.handler))
            .collect();
        Some(MemoryEntry {
            path: path.to_owned(),
            purpose: blueprint
                .file(path)
                .map(|f| f.purpose.clone())
                .unwrap_or_default(),
            interface,
            more,
            internal_imports,
            external_imports,
            routes,
            used_by: blueprint
                .dependents(path)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            syntax_errors: module.has_syntax_errors,
        })
    }

    /// A file repo-graph does not analyse: its purpose and who uses it.
    pub fn plain(path: &str, blueprint: &Blueprint) -> MemoryEntry {
        MemoryEntry {
            path: path.to_owned(),
            purpose: blueprint
                .file(path)
                .map(|f| f.purpose.clone())
                .unwrap_or_default(),
            interface: Vec::new(),
            more: 0,
            internal_imports: Vec::new(),
            external_imports: Vec::new(),
            routes: Vec::new(),
            used_by: blueprint
                .dependents(path)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            syntax_errors: false,
        }
    }

    /// The entry as the model sees it.
    pub fn render(&self) -> String {
        let mut s = format!("### {}\n", self.path);
        if !self.purpose.is_empty() {
            let _ = writeln!(s, "Purpose: {}", self.purpose);
        }
        if !self.interface.is_empty() {
            s.push_str("Interface:\n");
            for line in &self.interface {
                let _ = writeln!(s, "  {line}");
            }
            if self.more > 0 {
                let _ = writeln!(s, "  … and {} more", self.more);
            }
        }
        if !self.routes.is_empty() {
            let _ = writeln!(s, "Routes: {}", self.routes.join("; "));
        }
        if !self.internal_imports.is_empty() {
            let _ = writeln!(
                s,
                "Imports from the project: {}",
                self.internal_imports.join("; ")
            );
        }
        if !self.external_imports.is_empty() {
            let _ = writeln!(s, "Packages: {}", self.external_imports.join(", "));
        }
        if !self.used_by.is_empty() {
            let _ = writeln!(s, "Used by: {}", self.used_by.join(", "));
        }
        if self.syntax_errors {
            s.push_str("Warning: this file has syntax errors.\n");
        }
        s
    }
}

/// A name private by Python's convention (its last part starts with `_`).
fn private(qualname: &str) -> bool {
    qualname
        .rsplit('.')
        .next()
        .is_some_and(|n| n.starts_with('_'))
}

/// A module's imports: internal ones grouped by module (`store: Store,
/// get_store`), external top-level packages, both sorted and unique.
fn imports(graph: &RepoGraph, id: ModuleId) -> (Vec<String>, Vec<String>) {
    let Some(module) = graph.module(id) else {
        return (Vec::new(), Vec::new());
    };
    let mut internal: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let mut external = std::collections::BTreeSet::new();
    for import in &module.imports {
        match &import.target {
            ImportTarget::External(name) => {
                if let Some(top) = name.split('.').next().filter(|t| !t.is_empty()) {
                    external.insert(top.to_owned());
                }
            }
            target => {
                let Some(m) = target.internal_module(graph) else {
                    continue;
                };
                let name = graph.module(m).map_or("", |m| m.name.as_str());
                let names = internal.entry(name.to_owned()).or_default();
                if let Some(n) = &import.name
                    && !names.contains(n)
                {
                    names.push(n.clone());
                }
            }
        }
    }
    let internal = internal
        .into_iter()
        .map(|(m, names)| {
            if names.is_empty() {
                m
            } else {
                format!("{m}: {}", names.join(", "))
            }
        })
        .collect();
    (internal, external.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::blueprint::{Blueprint, SpecFacts};

    #[test]
    fn an_entry_is_made_of_facts_not_of_code() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("store.py"),
            "import json\n\nclass Store:\n    def __init__(self, path: str):\n        self._p = path\n    def get(self, key: str) -> dict:\n        return {}\n    def _secret(self):\n        pass\n\ndef _helper():\n    pass\n\nLIMIT = 3\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("app.py"),
            "from flask import Flask, jsonify\nfrom store import Store\n\napp = Flask(__name__)\n\n@app.get('/health')\ndef health():\n    return jsonify(status='ok')\n",
        )
        .unwrap();
        let graph = repo_graph::Analyzer::new(dir.path()).analyze().unwrap();
        let mut blueprint = Blueprint::from_facts("p", &SpecFacts::default());
        blueprint.files.push(crate::generate::blueprint::FilePlan {
            path: "store.py".into(),
            purpose: "Keeps items.".into(),
            exports: vec![],
            depends_on: vec![],
        });
        blueprint.files[1].depends_on.push("store.py".into());
        let store = MemoryEntry::of(&graph, "store.py", &blueprint).unwrap();
        assert_eq!(
            store.interface,
            [
                "class Store",
                "    def __init__(self, path: str)",
                "    def get(self, key: str) -> dict"
            ]
        );
        assert_eq!(store.external_imports, ["json"]);
        assert_eq!(store.used_by, ["app.py"]);
        assert_eq!(store.purpose, "Keeps items.");
        let app = MemoryEntry::of(&graph, "app.py", &blueprint).unwrap();
        assert_eq!(app.routes, ["GET /health -> app.health"]);
        assert_eq!(app.internal_imports, ["store: Store"]);
        assert_eq!(app.external_imports, ["flask"]);
        let text = app.render();
        assert!(
            text.contains("Routes: GET /health") && !text.contains("jsonify(status"),
            "{text}"
        );
        assert!(MemoryEntry::of(&graph, "start.sh", &blueprint).is_none());
    }
}
