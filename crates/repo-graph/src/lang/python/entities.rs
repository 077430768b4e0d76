//! Python's side of the assembly: the resolver the neutral phase drives,
//! and the classes and functions of one module as the graph shows them.

use super::ScopeRef;
use crate::assemble::ModuleInput;
use crate::lang::resolver::{Ids, ModuleEntities, Resolution, Resolver};
use crate::model::{
    Base, Class, ClassDetail, ClassId, EntityId, Function, FunctionDetail, FunctionId, Import,
    ImportTarget, ModuleId,
};

/// Python's cross-file phase: the whole-program points-to analysis of
/// [`super::resolve`] over every Python module.
pub(crate) struct PythonResolver<'f> {
    ids: &'f Ids<'f>,
}

impl<'f> PythonResolver<'f> {
    pub(crate) fn new(ids: &'f Ids<'f>) -> Self {
        PythonResolver { ids }
    }
}

impl<'f> Resolver<'f> for PythonResolver<'f> {
    fn resolve(&mut self, step_budget: Option<u64>) -> Resolution {
        let mut resolution = super::resolve::resolve(self.ids, step_budget);
        for (module, output) in &mut resolution.outputs {
            output.references = references(self.ids, *module, &output.imports);
        }
        resolution
    }

    fn entities(
        &self,
        id: ModuleId,
        bases: &mut dyn Iterator<Item = Vec<Base>>,
    ) -> ModuleEntities<'f> {
        let ids = self.ids;
        let Some(module) = ids.inputs.get(id.index()) else {
            return ModuleEntities::default();
        };
        let Some(facts) = module.facts.python() else {
            return ModuleEntities::default();
        };
        let class_base = ids.class_base.get(id.index()).copied().unwrap_or(0);
        let function_base = ids.function_base.get(id.index()).copied().unwrap_or(0);
        let scope_entity = |scope: ScopeRef| match scope {
            // Definitions are never inside lambdas.
            ScopeRef::Module | ScopeRef::Lambda(_) => EntityId::Module(id),
            ScopeRef::Class(c) => EntityId::Class(ClassId(class_base + c)),
            ScopeRef::Function(f) => EntityId::Function(FunctionId(function_base + f)),
        };
        let qualify = |local: &str| format!("{}.{local}", module.name.name);
        let classes = facts
            .classes
            .iter()
            .map(|class| Class {
                name: class.name.clone(),
                qualname: qualify(&class.local_path),
                module: id,
                parent: scope_entity(class.parent),
                bases: bases.next().unwrap_or_default(),
                decorators: class.decorators.clone(),
                docstring: class.docstring.clone(),
                methods: Vec::new(),
                span: class.span,
                detail: ClassDetail::Python,
            })
            .collect();
        let functions = facts
            .functions
            .iter()
            .map(|function| Function {
                name: function.name.clone(),
                qualname: qualify(&function.local_path),
                module: id,
                parent: scope_entity(function.parent),
                kind: function.kind,
                params: function.params.clone(),
                returns: function.returns.clone(),
                decorators: function.decorators.clone(),
                is_async: function.is_async,
                docstring: function.docstring.clone(),
                span: function.span,
                complexity: function.complexity,
                detail: FunctionDetail::Python,
            })
            .collect();
        ModuleEntities {
            classes,
            functions,
            docstring: facts.docstring.as_deref(),
        }
    }

    fn owns(&self, module: &ModuleInput) -> bool {
        module.facts.python().is_some()
    }
}

/// A Python module depends on another once per imported name that
/// resolves into it.
fn references(ids: &Ids<'_>, module: ModuleId, imports: &[Import]) -> Vec<ModuleId> {
    imports
        .iter()
        .filter_map(|import| match &import.target {
            ImportTarget::Module(t) | ImportTarget::Attribute(t) => Some(*t),
            ImportTarget::Class(c) => ids.class_module.get(c.index()).copied(),
            ImportTarget::Function(f) => ids.function_module.get(f.index()).copied(),
            ImportTarget::Package(_) | ImportTarget::External(_) => None,
        })
        .filter(|target| *target != module)
        .collect()
}
