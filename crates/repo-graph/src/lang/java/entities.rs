//! Java's side of the assembly: the resolver the neutral phase drives, and
//! the graph entities (classes, functions, their Java details) of one
//! compilation unit.

use rayon::prelude::*;

use super::resolve::*;

use crate::assemble::ModuleInput;
use crate::lang::java::{JavaFacts, Scope};
use crate::lang::resolver::{Ids, ModuleEntities, Resolution, Resolver};
use crate::model::{Base, ClassDetail, ClassId, EntityId, FunctionDetail, ModuleId};

/// Java's cross-file phase: declared types, resolved per compilation unit
/// in parallel once the shared type tables are built.
pub(crate) struct JavaLanguage<'f> {
    ids: &'f Ids<'f>,
    /// Built by [`Resolver::resolve`]; the entities need its tables.
    resolver: Option<JavaResolver<'f>>,
}

impl<'f> JavaLanguage<'f> {
    pub(crate) fn new(ids: &'f Ids<'f>) -> Self {
        JavaLanguage {
            ids,
            resolver: None,
        }
    }
}

impl<'f> Resolver<'f> for JavaLanguage<'f> {
    fn resolve(&mut self, _step_budget: Option<u64>) -> Resolution {
        let ids = self.ids;
        let java = JavaResolver::new(
            ids.inputs,
            ids.class_base,
            ids.function_base,
            ids.class_module,
            ids.function_module,
        );
        let outputs = (0..ids.inputs.len())
            .into_par_iter()
            .filter(|m| self.owns(&ids.inputs[*m]))
            .map(|m| {
                let id = ModuleId(m as u32);
                (id, java.resolve_module(id))
            })
            .collect();
        let mut resolution = Resolution {
            outputs,
            ..Resolution::default()
        };
        for (c, bases) in java.bases.iter().enumerate() {
            let class = ClassId(c as u32);
            if java.is_java_class(class) {
                resolution.bases.push((class, bases.clone()));
                resolution.mro.push((class, java.mro[c].clone()));
            }
        }
        resolution.stats.work = java.setup_work();
        self.resolver = Some(java);
        resolution
    }

    fn entities(
        &self,
        module: ModuleId,
        bases: &mut dyn Iterator<Item = Vec<Base>>,
    ) -> ModuleEntities<'f> {
        let facts = self
            .ids
            .inputs
            .get(module.index())
            .and_then(|m| m.facts.java());
        match (&self.resolver, facts) {
            (Some(java), Some(facts)) => java.entities(module, facts, bases),
            _ => ModuleEntities::default(),
        }
    }

    fn owns(&self, module: &ModuleInput) -> bool {
        module.facts.java().is_some()
    }
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

    pub(super) fn scope_entity(&self, module: ModuleId, scope: Scope) -> EntityId {
        match scope {
            Scope::Unit => EntityId::Module(module),
            Scope::Type(t) => EntityId::Class(self.class_id(module, t)),
            Scope::Method(m) => EntityId::Function(self.function_id(module, m)),
        }
    }

    /// The classes and functions of `module`, with the resolved `bases` of
    /// its classes in order.
    pub(crate) fn entities<'a>(
        &self,
        module: ModuleId,
        facts: &'a JavaFacts,
        bases: &mut dyn Iterator<Item = Vec<Base>>,
    ) -> ModuleEntities<'a> {
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
        ModuleEntities {
            classes,
            functions,
            docstring: facts.docstring.as_deref(),
        }
    }
}
