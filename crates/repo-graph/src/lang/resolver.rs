//! What every language's cross-file phase answers to, so that the assembly
//! ([`crate::assemble`]) names no language: a third language is a new
//! folder under `lang/` with a [`Resolver`], registered in [`resolvers`],
//! and a variant of [`crate::facts::LanguageFacts`].

use rayon::prelude::*;

use crate::assemble::ModuleInput;
use crate::model::{Base, Class, ClassId, EntityId, Function, Import, ModuleId, UnresolvedCall};
use crate::routes::{RouteDraft, RouteLink};
use crate::stats::ResolutionStats;

/// The id tables every language shares: a module's classes and functions
/// are numbered consecutively from its base offset.
pub(crate) struct Ids<'f> {
    pub inputs: &'f [ModuleInput],
    pub class_base: &'f [u32],
    pub function_base: &'f [u32],
    pub class_module: &'f [ModuleId],
    pub function_module: &'f [ModuleId],
}

/// What resolving one module produced.
#[derive(Default)]
pub(crate) struct ModuleOutput {
    pub imports: Vec<Import>,
    pub edges: Vec<(EntityId, EntityId)>,
    pub unresolved: Vec<UnresolvedCall>,
    /// The internal modules this one depends on, one entry per dependency
    /// counted (Python: per imported name; Java: per distinct type named):
    /// the MDG's `imports` weight.
    pub references: Vec<ModuleId>,
    pub routes: Vec<RouteDraft>,
    /// Routers, their registrations and includes (Python's frameworks).
    pub route_links: Vec<RouteLink>,
    /// Resolution work units spent on this module.
    pub work: u64,
    /// Internal callees of the calls written in each main block (by block
    /// index), in call order.
    pub main_calls: Vec<(u32, EntityId)>,
}

/// What one language's resolution produced for its own modules and classes.
#[derive(Default)]
pub(crate) struct Resolution {
    /// Bases of every class of the language, by class id.
    pub bases: Vec<(ClassId, Vec<Base>)>,
    /// The method resolution order of every class of the language.
    pub mro: Vec<(ClassId, Vec<ClassId>)>,
    /// One output per module of the language.
    pub outputs: Vec<(ModuleId, ModuleOutput)>,
    pub stats: ResolutionStats,
}

/// One module's entities, as the graph shows them.
#[derive(Default)]
pub(crate) struct ModuleEntities<'f> {
    pub classes: Vec<Class>,
    pub functions: Vec<Function>,
    pub docstring: Option<&'f str>,
}

/// One language's cross-file phase over the modules whose facts are its own.
pub(crate) trait Resolver<'f>: Send + Sync {
    /// Resolves imports, bases and calls of every module of the language.
    /// Called once, before [`Resolver::entities`].
    fn resolve(&mut self, step_budget: Option<u64>) -> Resolution;

    /// The classes and functions of `module` (one of this language's), with
    /// `bases` giving each class's bases in order.
    fn entities(
        &self,
        module: ModuleId,
        bases: &mut dyn Iterator<Item = Vec<Base>>,
    ) -> ModuleEntities<'f>;

    /// Whether `module`'s facts are this language's.
    fn owns(&self, module: &ModuleInput) -> bool;
}

/// Every language compiled in, each ready to resolve its modules of `ids`.
pub(crate) fn resolvers<'f>(ids: &'f Ids<'f>) -> Vec<Box<dyn Resolver<'f> + 'f>> {
    vec![
        Box::new(crate::lang::python::PythonResolver::new(ids)),
        Box::new(crate::lang::java::JavaLanguage::new(ids)),
    ]
}

/// Runs every resolver, in parallel with each other, and merges what they
/// found into one table per class and per module.
pub(crate) fn resolve_all<'f>(
    ids: &'f Ids<'f>,
    resolvers: &mut [Box<dyn Resolver<'f> + 'f>],
    step_budget: Option<u64>,
) -> Merged {
    let classes = ids.class_module.len();
    let results: Vec<Resolution> = resolvers
        .par_iter_mut()
        .map(|r| r.resolve(step_budget))
        .collect();
    let mut merged = Merged {
        bases: vec![Vec::new(); classes],
        mro: (0..classes).map(|c| vec![ClassId(c as u32)]).collect(),
        outputs: (0..ids.inputs.len())
            .map(|_| ModuleOutput::default())
            .collect(),
        stats: ResolutionStats::default(),
    };
    for result in results {
        for (class, list) in result.bases {
            if let Some(slot) = merged.bases.get_mut(class.index()) {
                *slot = list;
            }
        }
        for (class, order) in result.mro {
            if let Some(slot) = merged.mro.get_mut(class.index()) {
                *slot = order;
            }
        }
        for (module, output) in result.outputs {
            if let Some(slot) = merged.outputs.get_mut(module.index()) {
                *slot = output;
            }
        }
        merged.stats.work = merged.stats.work.saturating_add(result.stats.work);
        merged.stats.widened = merged.stats.widened.saturating_add(result.stats.widened);
        merged.stats.budget_exhausted = merged
            .stats
            .budget_exhausted
            .saturating_add(result.stats.budget_exhausted);
    }
    let per_module: u64 = merged.outputs.iter().map(|o| o.work).sum();
    merged.stats.work = merged.stats.work.saturating_add(per_module);
    merged
}

/// Every language's resolution, by class and by module.
pub(crate) struct Merged {
    pub bases: Vec<Vec<Base>>,
    pub mro: Vec<Vec<ClassId>>,
    pub outputs: Vec<ModuleOutput>,
    pub stats: ResolutionStats,
}
