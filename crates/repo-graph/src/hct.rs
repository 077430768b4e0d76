//! The hierarchical code tree: package → module → class → function
//! containment, annotated with line counts and docstring first lines.
//! Java compilation units sit under their declared package
//! (`com` → `com.example` → `com.example.App.java` → `class App`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::graph::RepoGraph;
use crate::model::{EntityId, Language, ModuleId};

/// What an [`HctNode`] stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum HctKind {
    /// A directory-level package (regular or namespace).
    Package,
    /// A module (file).
    Module,
    /// A class.
    Class,
    /// A function or method.
    Function,
}

/// One node of the hierarchical code tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HctNode {
    /// Package, module, class or function.
    pub kind: HctKind,
    /// The dotted name of a package or module; the signature of a class or function.
    pub label: String,
    /// The entity, for everything but namespace packages.
    pub entity: Option<EntityId>,
    /// Lines covered (for packages: the sum over their modules).
    pub lines: u32,
    /// First line of the docstring.
    pub doc: Option<String>,
    /// Contained nodes: sub-packages and modules by name, then definitions in source order.
    pub children: Vec<HctNode>,
}

/// Deepest package nesting the tree shows as separate levels.
const MAX_TRIE_DEPTH: usize = 100;

#[derive(Default)]
struct Trie {
    module: Option<ModuleId>,
    children: BTreeMap<String, Trie>,
}

impl RepoGraph {
    /// The hierarchical code tree, one root node per top-level package or module.
    pub fn hct(&self) -> Vec<HctNode> {
        let mut trie = Trie::default();
        for (i, m) in self.modules.iter().enumerate() {
            let mut node = &mut trie;
            // A Java unit's name ends in its file name, which has a dot itself.
            let (package, leaf) = match (&m.language, m.package.as_deref()) {
                (Language::Java, Some(p)) => {
                    (Some(p), m.name.get(p.len() + 1..).unwrap_or(&m.name))
                }
                (Language::Java, None) => (None, m.name.as_str()),
                (Language::Python, _) => (Some(m.name.as_str()), ""),
            };
            // The tree is built and printed recursively: a hostile package
            // name with thousands of segments keeps its tail in one node.
            for part in package
                .into_iter()
                .flat_map(|p| p.splitn(MAX_TRIE_DEPTH, '.'))
            {
                node = node.children.entry(part.to_string()).or_default();
            }
            if !leaf.is_empty() {
                node = node.children.entry(leaf.to_string()).or_default();
            }
            node.module = Some(ModuleId(i as u32));
        }
        trie.children
            .iter()
            .map(|(name, child)| self.trie_node(name, child))
            .collect()
    }

    fn trie_node(&self, name: &str, trie: &Trie) -> HctNode {
        let module = trie
            .module
            .and_then(|m| self.module(m).map(|module| (m, module)));
        let sub: Vec<HctNode> = trie
            .children
            .iter()
            .map(|(part, child)| self.trie_node(&format!("{name}.{part}"), child))
            .collect();
        let mut node = match module {
            Some((id, m)) => HctNode {
                kind: if m.is_package || !sub.is_empty() {
                    HctKind::Package
                } else {
                    HctKind::Module
                },
                label: name.to_string(),
                entity: Some(EntityId::Module(id)),
                lines: m.line_count,
                doc: first_line(m.docstring.as_deref()),
                children: self.entity_children(EntityId::Module(id), 0),
            },
            None => HctNode {
                kind: HctKind::Package,
                label: name.to_string(),
                entity: None,
                lines: 0,
                doc: None,
                children: Vec::new(),
            },
        };
        node.lines += sub
            .iter()
            .filter(|n| n.kind != HctKind::Class)
            .map(|n| n.lines)
            .sum::<u32>();
        node.children.extend(sub);
        node
    }

    fn entity_children(&self, entity: EntityId, depth: usize) -> Vec<HctNode> {
        // Python itself refuses more than 100 nested blocks; deeper input is hostile.
        if depth > 100 {
            return Vec::new();
        }
        self.children(entity)
            .iter()
            .map(|&child| {
                let (kind, lines, doc) = match child {
                    EntityId::Class(c) => {
                        let c = &self.classes[c.index()];
                        (HctKind::Class, c.span.line_count(), c.docstring.as_deref())
                    }
                    EntityId::Function(f) => {
                        let f = &self.functions[f.index()];
                        (
                            HctKind::Function,
                            f.span.line_count(),
                            f.docstring.as_deref(),
                        )
                    }
                    EntityId::Module(_) => (HctKind::Module, 0, None),
                };
                HctNode {
                    kind,
                    label: self.signature(child),
                    entity: Some(child),
                    lines,
                    doc: first_line(doc),
                    children: self.entity_children(child, depth + 1),
                }
            })
            .collect()
    }

    /// The HCT as indented text, two spaces per level.
    pub fn tree_text(&self) -> String {
        let mut out = String::new();
        for node in self.hct() {
            self.write_node(&node, 0, &mut out);
        }
        out
    }

    fn write_node(&self, node: &HctNode, depth: usize, out: &mut String) {
        let indent = "  ".repeat(depth);
        let details = match (node.kind, node.entity) {
            (HctKind::Package, Some(EntityId::Module(m)))
            | (HctKind::Module, Some(EntityId::Module(m))) => {
                let path = self.module(m).map_or("", |m| m.path.as_str());
                let kind = if node.kind == HctKind::Package {
                    "package, "
                } else {
                    ""
                };
                format!("{kind}{path}, {} lines", node.lines)
            }
            (HctKind::Package, _) if self.holds_java(node, 0) => {
                format!("package, {} lines", node.lines)
            }
            (HctKind::Package, _) => format!("namespace package, {} lines", node.lines),
            (_, Some(entity)) => {
                let span = match entity {
                    EntityId::Class(c) => self.class(c).map(|c| c.span),
                    EntityId::Function(f) => self.function(f).map(|f| f.span),
                    EntityId::Module(_) => None,
                };
                span.map_or_else(String::new, |s| format!("L{}-{}", s.start_line, s.end_line))
            }
            _ => String::new(),
        };
        let _ = write!(out, "{indent}{}  ({details})", node.label);
        if let Some(doc) = &node.doc {
            let _ = write!(out, "  # {doc}");
        }
        out.push('\n');
        for child in &node.children {
            self.write_node(child, depth + 1, out);
        }
    }
}

impl RepoGraph {
    /// Whether a package node holds Java compilation units (its packages are
    /// declared, not namespace packages).
    fn holds_java(&self, node: &HctNode, depth: usize) -> bool {
        if depth > 100 {
            return false;
        }
        node.children
            .iter()
            .any(|child| match (child.kind, child.entity) {
                (HctKind::Module, Some(EntityId::Module(m))) => {
                    self.module(m).is_some_and(|m| m.language == Language::Java)
                }
                (HctKind::Package, None) => self.holds_java(child, depth + 1),
                _ => false,
            })
    }
}

fn first_line(doc: Option<&str>) -> Option<String> {
    let line = doc?.lines().find(|l| !l.trim().is_empty())?.trim();
    let end = line.floor_char_boundary(100);
    Some(if end < line.len() {
        format!("{}…", &line[..end])
    } else {
        line.to_string()
    })
}
