//! The graph entities (classes, functions, their Java details) of one Java
//! compilation unit.

use super::resolve::*;

use crate::lang::java::{JScope, JavaFacts};
use crate::model::{Base, ClassDetail, EntityId, FunctionDetail, ModuleId};

/// Builds the public entities of one Java module.
pub(crate) struct JavaEntities<'a> {
    pub classes: Vec<crate::model::Class>,
    pub functions: Vec<crate::model::Function>,
    pub docstring: Option<&'a str>,
}

impl JavaResolver<'_> {
    /// The qualified-name prefix of a module's entities, and the `@k` a
    /// duplicate compilation unit's top-level types carry.
    pub(super) fn qualify(&self, module: ModuleId, local_path: &str) -> String {
        let input = &self.inputs[module.index()];
        let package = input.facts.java().and_then(|f| f.package.as_deref());
        let path = if input.name.duplicate > 0 {
            let (first, rest) = match local_path.split_once('.') {
                Some((f, r)) => (f, Some(r)),
                None => (local_path, None),
            };
            match rest {
                Some(rest) => format!("{first}@{}.{rest}", input.name.duplicate),
                None => format!("{first}@{}", input.name.duplicate),
            }
        } else {
            local_path.to_string()
        };
        match package {
            Some(p) => format!("{p}.{path}"),
            None => path,
        }
    }

    pub(super) fn scope_entity(&self, module: ModuleId, scope: JScope) -> EntityId {
        match scope {
            JScope::Unit => EntityId::Module(module),
            JScope::Type(t) => EntityId::Class(self.class_id(module, t)),
            JScope::Method(m) => EntityId::Function(self.function_id(module, m)),
        }
    }

    /// The classes and functions of `module`, with the resolved `bases` of
    /// its classes in order.
    pub(crate) fn entities<'a>(
        &self,
        module: ModuleId,
        facts: &'a JavaFacts,
        bases: &mut impl Iterator<Item = Vec<Base>>,
    ) -> JavaEntities<'a> {
        use crate::model::{Class, Function, JavaField, JavaMethod, JavaType, Param, ParamKind};
        let classes = facts
            .types
            .iter()
            .map(|t| Class {
                name: t.name.clone(),
                qualname: self.qualify(module, &t.local_path),
                module,
                parent: self.scope_entity(module, t.parent),
                bases: bases.next().unwrap_or_default(),
                decorators: t.annotations.clone(),
                docstring: t.docstring.clone(),
                methods: Vec::new(),
                span: t.span,
                detail: ClassDetail::Java(JavaType {
                    kind: t.kind,
                    modifiers: t.modifiers.clone(),
                    type_parameters: t.type_params.iter().map(|p| p.text.clone()).collect(),
                    fields: t
                        .fields
                        .iter()
                        .map(|f| JavaField {
                            name: f.name.clone(),
                            type_text: f.type_text.clone(),
                            modifiers: f.modifiers.clone(),
                            annotations: f.annotations.clone(),
                            line: f.line,
                        })
                        .collect(),
                    anonymous: t.anonymous,
                }),
            })
            .collect();
        let functions = facts
            .methods
            .iter()
            .map(|m| Function {
                name: m.name.clone(),
                qualname: self.qualify(module, &m.local_path),
                module,
                parent: self.scope_entity(module, m.parent),
                kind: m.kind,
                params: m
                    .params
                    .iter()
                    .map(|p| Param {
                        name: p.name.clone(),
                        kind: if p.varargs {
                            ParamKind::VarPositional
                        } else {
                            ParamKind::Normal
                        },
                        annotation: Some(p.type_text.clone()),
                        default: None,
                    })
                    .collect(),
                returns: m.returns.clone(),
                decorators: m.annotations.clone(),
                is_async: false,
                docstring: m.docstring.clone(),
                span: m.span,
                complexity: m.complexity,
                detail: FunctionDetail::Java(JavaMethod {
                    modifiers: m.modifiers.clone(),
                    type_parameters: m.type_params.iter().map(|p| p.text.clone()).collect(),
                    throws: m.throws.clone(),
                    has_body: m.has_body,
                }),
            })
            .collect();
        JavaEntities {
            classes,
            functions,
            docstring: facts.docstring.as_deref(),
        }
    }
}
