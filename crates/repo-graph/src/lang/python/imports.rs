//! Import statements of one Python file: every imported name, with the
//! binding it makes in its scope.

use tree_sitter::Node;

use super::extract::{Extractor, Kind, compact, line_of};
use super::facts::*;

impl<'s> Extractor<'s> {
    pub(super) fn enter_import(&mut self, node: Node<'_>) {
        use crate::model::ImportKind;
        let g = self.g;
        let line = line_of(node.start_position().row);
        let scope = self.scope();
        let in_try = self.try_depth > 0;
        let kind = g.kind(node);
        let (module, level) = if kind == Kind::Import {
            (String::new(), 0)
        } else {
            match g.field(node, g.field_module_name) {
                Some(m) if g.kind(m) == Kind::RelativeImport => {
                    let mut level = 0;
                    let mut module = String::new();
                    let mut cursor = m.walk();
                    for child in m.named_children(&mut cursor) {
                        match g.kind(child) {
                            Kind::ImportPrefix => {
                                level = u32::try_from(self.text(child).trim().len()).unwrap_or(0)
                            }
                            Kind::DottedName => module = compact(self.text(child)),
                            _ => {}
                        }
                    }
                    (module, level)
                }
                Some(m) => (compact(self.text(m)), 0),
                None if kind == Kind::FutureImport => ("__future__".to_string(), 0),
                None => return,
            }
        };
        let module_name_id = g.field(node, g.field_module_name).map(|m| m.id());
        let mut cursor = node.walk();
        let mut imports = Vec::new();
        for child in node.named_children(&mut cursor) {
            if Some(child.id()) == module_name_id {
                continue;
            }
            let (name, alias) = match g.kind(child) {
                Kind::DottedName => (compact(self.text(child)), None),
                Kind::AliasedImport => {
                    let name = g.field(child, g.field_name).map(|n| compact(self.text(n)));
                    let alias = g
                        .field(child, g.field_alias)
                        .map(|a| self.text(a).to_string());
                    match name {
                        Some(name) => (name, alias),
                        None => continue,
                    }
                }
                Kind::WildcardImport => {
                    imports.push(ImportFacts {
                        kind: ImportKind::Star,
                        module: module.clone(),
                        level,
                        name: None,
                        alias: None,
                        line,
                        scope,
                        in_try,
                    });
                    continue;
                }
                _ => continue,
            };
            if name.is_empty() {
                continue;
            }
            imports.push(if kind == Kind::Import {
                ImportFacts {
                    kind: ImportKind::Import,
                    module: name,
                    level: 0,
                    name: None,
                    alias,
                    line,
                    scope,
                    in_try,
                }
            } else {
                ImportFacts {
                    kind: ImportKind::From,
                    module: module.clone(),
                    level,
                    name: Some(name),
                    alias,
                    line,
                    scope,
                    in_try,
                }
            });
        }
        for import in imports {
            let index = u32::try_from(self.facts.imports.len()).unwrap_or(u32::MAX);
            let bound = match (&import.alias, &import.name, import.kind) {
                (_, _, ImportKind::Star) => None,
                (Some(alias), _, _) => Some(alias.clone()),
                (None, Some(name), _) => Some(name.clone()),
                (None, None, _) => import.module.split('.').next().map(str::to_string),
            };
            if let Some(bound) = bound {
                self.bind(&bound, BindValue::Import(index), node.end_byte());
            }
            self.facts.imports.push(import);
        }
    }
}
