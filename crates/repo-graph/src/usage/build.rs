//! The cross-file pass of the usage facts: reads the packaging files,
//! turns each file's CLI and main-block facts into graph entities, and
//! links console scripts and main entries to the commands they run.
//!
//! Every step is linear in the graph's size: names resolve through a
//! bounded chain of imports, call-graph searches stop after a fixed number
//! of nodes, and every list is capped.

use rustc_hash::{FxHashMap, FxHashSet};

use petgraph::Direction;
use petgraph::visit::EdgeRef;

use super::config::{self, RawEntryPoint};
use super::{
    ApiEntry, ApiOrigin, CliCommand, CliFramework, Distribution, EntryPoint, EntryPointSource,
    ExampleScript, MAX_DESCRIPTION, MAX_LISTED, MainEntry, MainKind, UsageFacts,
};
use crate::assemble::ModuleInput;
use crate::graph::RepoGraph;
use crate::lang::python::is_identifier;
use crate::lang::python::usage_facts::{CliParentFacts, MainBlockFacts, help_text};
use crate::model::{
    ClassId, EntityId, FunctionId, ImportKind, ImportTarget, Language, Modifier, ModuleId,
    SourceKind,
};
use crate::text::truncate;

/// Entry points kept for the whole repository.
const MAX_ENTRY_POINTS: usize = 4096;
/// Commands kept for the whole repository.
const MAX_COMMANDS: usize = 10_000;
/// Fragments merged into one parser.
const MAX_MERGED: usize = 16;
/// Options kept per command (as per file).
const MAX_OPTIONS: usize = 128;
/// Main entries kept.
const MAX_MAINS: usize = 2000;
/// Example scripts kept.
const MAX_EXAMPLES: usize = 1000;
/// Public names kept per package, and in all.
const MAX_API_PER_PACKAGE: usize = 256;
const MAX_API: usize = 2048;
/// Imports followed when resolving one dotted name.
const MAX_RESOLVE_DEPTH: u32 = 8;
/// Call-graph nodes a search for the commands an entry point runs visits.
const MAX_SEARCH: usize = 256;
/// Commands linked to one entry point or main.
const MAX_LINKED: usize = 8;
/// Lines of a leading comment read.
const MAX_COMMENT_LINES: usize = 20;

/// Directory names whose Python files are examples.
const EXAMPLE_DIRS: &[&str] = &[
    "examples",
    "example",
    "demo",
    "demos",
    "scripts",
    "tools",
    "samples",
    "tutorials",
];

/// Directory names whose packages are not the library's API.
const NON_API_DIRS: &[&str] = &[
    "tests",
    "test",
    "testing",
    "docs",
    "doc",
    "benchmarks",
    "benchmark",
];

pub(crate) fn build(
    graph: &RepoGraph,
    inputs: &[ModuleInput],
    main_calls: &[Vec<(u32, EntityId)>],
) -> UsageFacts {
    let dirs = config::project_dirs(&graph.root);
    let configs = config::read(&graph.root, &dirs);
    let mut usage = UsageFacts {
        distributions: configs.distributions,
        skipped: configs.skipped,
        ..UsageFacts::default()
    };
    let mut raw = configs.entry_points;
    setup_py(inputs, &dirs, &mut raw, &mut usage.distributions);
    let mut function_base = Vec::with_capacity(inputs.len());
    let mut class_base = Vec::with_capacity(inputs.len());
    let (mut functions, mut classes) = (0u32, 0u32);
    for input in inputs {
        function_base.push(functions);
        class_base.push(classes);
        functions = functions.saturating_add(input.facts.function_count() as u32);
        classes = classes.saturating_add(input.facts.class_count() as u32);
    }
    let bases = Bases {
        function: &function_base,
        class: &class_base,
        inputs,
    };
    usage.commands = commands(graph, inputs, &bases);
    let roots = RootCommands::new(&usage.commands);
    usage.entry_points = entry_points(graph, raw, &roots, &usage.commands);
    name_root_commands(&mut usage);
    usage.mains = mains(graph, inputs, main_calls, &roots, &usage.commands);
    usage.public_api = public_api(graph, &usage.distributions);
    usage.examples = examples(graph, inputs, &bases);
    usage
}

/// Where each module's classes and functions start among the graph's.
struct Bases<'a> {
    function: &'a [u32],
    class: &'a [u32],
    inputs: &'a [ModuleInput],
}

impl Bases<'_> {
    fn function(&self, module: usize, local: u32) -> Option<EntityId> {
        let count = self.inputs.get(module)?.facts.function_count();
        ((local as usize) < count)
            .then(|| EntityId::Function(FunctionId(self.function[module] + local)))
    }

    /// The module's own entities: itself, its classes and its functions.
    fn owned(&self, module: usize) -> impl Iterator<Item = EntityId> + '_ {
        let facts = self.inputs.get(module).map(|i| &i.facts);
        let classes = facts.map_or(0, |f| f.class_count()) as u32;
        let functions = facts.map_or(0, |f| f.function_count()) as u32;
        let (cb, fb) = (
            self.class.get(module).copied().unwrap_or(0),
            self.function.get(module).copied().unwrap_or(0),
        );
        std::iter::once(EntityId::Module(ModuleId(module as u32)))
            .chain((cb..cb + classes).map(|c| EntityId::Class(ClassId(c))))
            .chain((fb..fb + functions).map(|f| EntityId::Function(FunctionId(f))))
    }
}

/// The `setup.py` files among the project directories, and what their
/// `setup()` call declares.
fn setup_py(
    inputs: &[ModuleInput],
    dirs: &[String],
    raw: &mut Vec<RawEntryPoint>,
    distributions: &mut Vec<Distribution>,
) {
    for dir in dirs {
        let path = if dir.is_empty() {
            "setup.py".to_string()
        } else {
            format!("{dir}/setup.py")
        };
        let Some(setup) = inputs
            .iter()
            .find(|i| i.rel_path == path)
            .and_then(|i| i.facts.python())
            .and_then(|f| f.usage.setup.as_ref())
        else {
            continue;
        };
        if let Some(name) = &setup.name {
            distributions.push(Distribution {
                name: name.clone(),
                file: path.clone(),
            });
        }
        for (kind, spec) in &setup.entry_points {
            if let Some((name, reference)) = spec.split_once('=')
                && let Some(entry) =
                    config::entry_point(name, reference, *kind, EntryPointSource::SetupPy, &path)
            {
                raw.push(entry);
            }
        }
    }
}

/// The entity `dotted` names in `module`: a definition, a name an import
/// binds (followed into the module it imports from), or a submodule.
pub(crate) fn resolve_in_module(
    graph: &RepoGraph,
    module: ModuleId,
    dotted: &str,
) -> Option<EntityId> {
    let mut module = module;
    let mut dotted = dotted.to_string();
    for _ in 0..MAX_RESOLVE_DEPTH {
        if dotted.is_empty() {
            return Some(EntityId::Module(module));
        }
        let m = graph.module(module)?;
        // A submodule's name is rebound by an import of the same name
        // (`from .baseline import baseline` in `__init__`).
        let direct = graph.entity(&format!("{}.{dotted}", m.name));
        if let Some(entity) = direct.filter(|e| !matches!(e, EntityId::Module(_))) {
            return Some(entity);
        }
        let (first, rest) = dotted.split_once('.').unwrap_or((dotted.as_str(), ""));
        let bound = m.imports.iter().rev().find(|i| {
            let name = match (&i.alias, i.kind, &i.name) {
                (Some(alias), _, _) => alias.as_str(),
                (None, ImportKind::From, Some(name)) => name.as_str(),
                (None, ImportKind::Import, None) if !i.module.contains('.') => i.module.as_str(),
                _ => return false,
            };
            name == first
        });
        if let Some(import) = bound {
            match &import.target {
                ImportTarget::Function(f) => {
                    return rest.is_empty().then_some(EntityId::Function(*f));
                }
                ImportTarget::Class(c) if rest.is_empty() => return Some(EntityId::Class(*c)),
                ImportTarget::Class(c) => {
                    return graph.entity(&format!("{}.{rest}", graph.class(*c)?.qualname));
                }
                ImportTarget::Module(target) => {
                    module = *target;
                    dotted = rest.to_string();
                    continue;
                }
                // `from .x import y` where `y` is not a definition: look in `x`.
                ImportTarget::Attribute(target) => {
                    let name = import.name.as_deref().unwrap_or(first);
                    dotted = if rest.is_empty() {
                        name.to_string()
                    } else {
                        format!("{name}.{rest}")
                    };
                    if *target == module {
                        return None;
                    }
                    module = *target;
                    continue;
                }
                ImportTarget::Package(_) | ImportTarget::External(_) => return None,
            }
        }
        if direct.is_some() {
            return direct;
        }
        if let Some(sub) = graph.module_by_name(&format!("{}.{first}", m.name)) {
            module = sub;
            dotted = rest.to_string();
            continue;
        }
        // `from .formats import *` brings the names of `formats`'s `__all__`
        // (or its public definitions).
        let star = m.imports.iter().rev().find_map(|i| {
            let source = match (i.kind, &i.target) {
                (ImportKind::Star, ImportTarget::Module(t)) if *t != module => *t,
                _ => return None,
            };
            let s = graph.module(source)?;
            let exported = match &s.all {
                Some(all) => all.iter().any(|n| n == first),
                None => {
                    !first.starts_with('_')
                        && graph.entity(&format!("{}.{first}", s.name)).is_some()
                }
            };
            exported.then_some(source)
        });
        module = star?;
    }
    None
}

/// Every file's commands, with their entities and parents resolved and
/// argparse fragments merged into the parsers passed to them.
fn commands(graph: &RepoGraph, inputs: &[ModuleInput], bases: &Bases<'_>) -> Vec<CliCommand> {
    let mut out: Vec<CliCommand> = Vec::new();
    let mut fragment: Vec<bool> = Vec::new();
    let mut includes: Vec<(usize, ModuleId, &[String])> = Vec::new();
    let mut named_parents: Vec<(usize, ModuleId, &str)> = Vec::new();
    for (m, input) in inputs.iter().enumerate() {
        let Some(facts) = input.facts.python() else {
            continue;
        };
        let module = ModuleId(m as u32);
        let first = out.len();
        let local = facts
            .usage
            .clis
            .len()
            .min(MAX_COMMANDS.saturating_sub(first));
        for cli in facts.usage.clis.iter().take(local) {
            let entity = cli
                .handler
                .as_deref()
                .and_then(|h| resolve_in_module(graph, module, h))
                .or_else(|| cli.function.and_then(|f| bases.function(m, f)));
            let parent = match &cli.parent {
                Some(CliParentFacts::Local(k)) => Some(first + *k as usize)
                    .filter(|p| *p < first + local)
                    .and_then(|p| u32::try_from(p).ok()),
                Some(CliParentFacts::Named(name)) => {
                    named_parents.push((out.len(), module, name));
                    None
                }
                None => None,
            };
            if !cli.includes.is_empty() {
                includes.push((out.len(), module, &cli.includes));
            }
            fragment.push(cli.fragment);
            out.push(CliCommand {
                framework: cli.framework,
                name: cli.name.clone(),
                parent,
                is_group: cli.is_group,
                app: cli.app.clone(),
                entity,
                module,
                file: input.rel_path.clone(),
                help: cli.help.clone(),
                options: cli.options.clone(),
                span: cli.span,
            });
        }
    }
    // `@cli.command()` with `cli` a group of another module.
    let mut by_entity: FxHashMap<EntityId, u32> = FxHashMap::default();
    let mut fragments: FxHashMap<EntityId, Vec<usize>> = FxHashMap::default();
    for (i, command) in out.iter().enumerate() {
        if let Some(entity) = command.entity {
            if fragment[i] {
                fragments.entry(entity).or_default().push(i);
            } else {
                by_entity.entry(entity).or_insert(i as u32);
            }
        }
    }
    for (index, module, name) in named_parents {
        let parent = resolve_in_module(graph, module, name).and_then(|e| by_entity.get(&e));
        if let Some(&parent) = parent
            && parent as usize != index
            && let Some(command) = out.get_mut(index)
        {
            command.parent = Some(parent);
        }
    }
    // `typer.run(main)`: the options are `main`'s parameters.
    for command in &mut out {
        if command.framework == CliFramework::Typer
            && command.options.is_empty()
            && let Some(EntityId::Function(f)) = command.entity
            && let Some(function) = graph.function(f)
        {
            command.options = typer_options(&function.params);
            if command.help.is_none() {
                command.help = function.docstring.as_deref().map(help_text);
            }
        }
    }
    merge_fragments(graph, &mut out, &fragment, &includes, &fragments);
    break_parent_cycles(&mut out);
    drop_fragments(out, &fragment)
}

/// A typer command's options from its function's parameters as written:
/// one without a default is an argument, one with a default an option
/// (a flag when it is a `bool`); `typer.Option(...)` defaults are not
/// read here (the per-file facts read them for decorated commands).
fn typer_options(params: &[crate::model::Param]) -> Vec<super::CliOption> {
    params
        .iter()
        .filter(|p| {
            p.kind != crate::model::ParamKind::VarPositional
                && p.kind != crate::model::ParamKind::VarKeyword
                && !p.name.is_empty()
                && !p.annotation.as_deref().unwrap_or("").contains("Context")
        })
        .take(MAX_OPTIONS)
        .map(|p| {
            let flag = p.name.to_lowercase().replace('_', "-");
            let is_bool = p.annotation.as_deref() == Some("bool")
                || matches!(p.default.as_deref(), Some("True" | "False"));
            let literal = p
                .default
                .as_deref()
                .filter(|d| !d.contains('(') && d.len() <= 80);
            match &p.default {
                None => super::CliOption {
                    flags: vec![p.name.clone()],
                    positional: true,
                    takes_value: true,
                    required: true,
                    default: None,
                    help: None,
                },
                Some(_) => super::CliOption {
                    flags: vec![if is_bool {
                        format!("--{flag}/--no-{flag}")
                    } else {
                        format!("--{flag}")
                    }],
                    positional: false,
                    takes_value: !is_bool,
                    required: false,
                    default: literal.map(str::to_string),
                    help: None,
                },
            }
        })
        .collect()
}

/// Adds to each parser the arguments of the fragments it is passed to
/// (`add_args(parser)`), and of the fragments those pass it on to, at
/// most [`MAX_MERGED`] per parser.
fn merge_fragments(
    graph: &RepoGraph,
    commands: &mut [CliCommand],
    fragment: &[bool],
    includes: &[(usize, ModuleId, &[String])],
    fragments: &FxHashMap<EntityId, Vec<usize>>,
) {
    if fragments.is_empty() {
        return;
    }
    let includes_of: FxHashMap<usize, (ModuleId, &[String])> = includes
        .iter()
        .map(|(i, m, list)| (*i, (*m, *list)))
        .collect();
    let mut children: FxHashMap<usize, Vec<usize>> = FxHashMap::default();
    for (i, command) in commands.iter().enumerate() {
        if let Some(p) = command.parent {
            children.entry(p as usize).or_default().push(i);
        }
    }
    for &(parser, module, list) in includes {
        if fragment[parser] {
            continue;
        }
        let mut queue: Vec<(ModuleId, &str)> = list.iter().map(|l| (module, l.as_str())).collect();
        let mut merged: Vec<usize> = Vec::new();
        while let Some((module, callee)) = queue.pop() {
            if merged.len() >= MAX_MERGED {
                break;
            }
            let Some(found) =
                resolve_in_module(graph, module, callee).and_then(|e| fragments.get(&e))
            else {
                continue;
            };
            for &f in found {
                if merged.contains(&f) || merged.len() >= MAX_MERGED {
                    continue;
                }
                merged.push(f);
                let options = commands[f].options.clone();
                let is_group = commands[f].is_group;
                let target = &mut commands[parser];
                let room = MAX_OPTIONS.saturating_sub(target.options.len());
                target.options.extend(options.into_iter().take(room));
                target.is_group |= is_group;
                // Subparsers the fragment added belong to the parser (the
                // first one it is merged into).
                for &child in children.get(&f).map_or(&[][..], Vec::as_slice) {
                    if commands[child].parent == Some(f as u32) {
                        commands[child].parent = Some(parser as u32);
                    }
                }
                if let Some((m, more)) = includes_of.get(&f) {
                    queue.extend(more.iter().map(|l| (*m, l.as_str())));
                }
            }
        }
    }
}

/// The commands without the fragments and what hangs under the ones that
/// were never merged, with parent indices renumbered.
fn drop_fragments(commands: Vec<CliCommand>, fragment: &[bool]) -> Vec<CliCommand> {
    if !fragment.contains(&true) {
        return commands;
    }
    // Parents come before their children except through `add_command`,
    // so resolve each chain with a memo (cycles are already broken).
    let mut dropped: Vec<Option<bool>> = vec![None; commands.len()];
    for start in 0..commands.len() {
        let mut chain = Vec::new();
        let mut at = start;
        let verdict = loop {
            if let Some(known) = dropped[at] {
                break known;
            }
            if fragment[at] {
                break true;
            }
            chain.push(at);
            match commands[at].parent {
                Some(p) if (p as usize) < commands.len() => at = p as usize,
                _ => break false,
            }
        };
        if fragment[at] {
            dropped[at] = Some(true);
        }
        for c in chain {
            dropped[c] = Some(verdict);
        }
    }
    let mut new_index = vec![u32::MAX; commands.len()];
    let mut next = 0u32;
    for (i, d) in dropped.iter().enumerate() {
        if *d != Some(true) {
            new_index[i] = next;
            next += 1;
        }
    }
    commands
        .into_iter()
        .enumerate()
        .filter(|(i, _)| dropped[*i] != Some(true))
        .map(|(_, mut c)| {
            c.parent = c
                .parent
                .and_then(|p| new_index.get(p as usize).copied())
                .filter(|p| *p != u32::MAX);
            c
        })
        .collect()
}

/// `a.add_command(b)` and `b.add_command(a)` would make each the other's
/// parent; a reader walking up must always reach a root.
fn break_parent_cycles(commands: &mut [CliCommand]) {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        Walking,
        Done,
    }
    let mut state = vec![State::New; commands.len()];
    for start in 0..commands.len() {
        let mut path: Vec<usize> = Vec::new();
        let mut at = start;
        loop {
            match state[at] {
                State::Done => break,
                State::Walking => {
                    // `at` is on the path: cut the link into it.
                    if let Some(&last) = path.last() {
                        commands[last].parent = None;
                    }
                    break;
                }
                State::New => {
                    state[at] = State::Walking;
                    path.push(at);
                    match commands[at].parent {
                        Some(p) if (p as usize) < commands.len() => at = p as usize,
                        _ => {
                            commands[at].parent = None;
                            break;
                        }
                    }
                }
            }
        }
        for p in path {
            state[p] = State::Done;
        }
    }
}

/// The top-level commands by the entity that runs them.
struct RootCommands {
    by_entity: FxHashMap<EntityId, Vec<u32>>,
}

impl RootCommands {
    fn new(commands: &[CliCommand]) -> Self {
        let mut by_entity: FxHashMap<EntityId, Vec<u32>> = FxHashMap::default();
        for (i, command) in commands.iter().enumerate() {
            if command.parent.is_none()
                && let Some(entity) = command.entity
            {
                by_entity.entry(entity).or_default().push(i as u32);
            }
        }
        RootCommands { by_entity }
    }

    /// The commands `entity` declares, else those of the functions it
    /// reaches within `depth` call edges, nearest first.
    fn run_by(&self, graph: &RepoGraph, entity: EntityId, depth: u32) -> Vec<u32> {
        if let Some(found) = self.by_entity.get(&entity) {
            return found.iter().copied().take(MAX_LINKED).collect();
        }
        let mut out = Vec::new();
        let mut seen: FxHashSet<EntityId> = FxHashSet::default();
        seen.insert(entity);
        let mut level = vec![entity];
        for _ in 0..depth {
            let mut next = Vec::new();
            for at in level {
                for callee in direct_callees(graph, at) {
                    if seen.len() >= MAX_SEARCH {
                        break;
                    }
                    if !seen.insert(callee) {
                        continue;
                    }
                    if let Some(found) = self.by_entity.get(&callee) {
                        out.extend(found.iter().copied());
                    }
                    next.push(callee);
                }
            }
            level = next;
        }
        out.dedup();
        out.truncate(MAX_LINKED);
        out
    }
}

/// What `entity` calls directly, in id order.
fn direct_callees(graph: &RepoGraph, entity: EntityId) -> Vec<EntityId> {
    let node = graph.node(entity);
    if node.index() >= graph.fcg.node_count() {
        return Vec::new();
    }
    let mut out: Vec<EntityId> = graph
        .fcg
        .edges_directed(node, Direction::Outgoing)
        .map(|e| graph.fcg[e.target()])
        .collect();
    out.sort_unstable();
    out
}

fn entry_points(
    graph: &RepoGraph,
    raw: Vec<RawEntryPoint>,
    roots: &RootCommands,
    commands: &[CliCommand],
) -> Vec<EntryPoint> {
    let mut seen: FxHashSet<(String, String, Option<String>)> = FxHashSet::default();
    let mut out = Vec::new();
    for entry in raw {
        if out.len() >= MAX_ENTRY_POINTS {
            break;
        }
        if !seen.insert((
            entry.name.clone(),
            entry.module.clone(),
            entry.function.clone(),
        )) {
            continue;
        }
        let module = graph.module_by_name(&entry.module);
        let entity = module.and_then(|m| match &entry.function {
            Some(f) => resolve_in_module(graph, m, f),
            None => Some(EntityId::Module(m)),
        });
        let mut linked = match entity {
            Some(e) => roots.run_by(graph, e, 2),
            None => Vec::new(),
        };
        // `tool = "pkg.cli:app"` with `app = typer.Typer()`.
        if linked.is_empty()
            && let (Some(m), Some(app)) = (module, entry.function.as_deref())
        {
            linked = commands
                .iter()
                .enumerate()
                .filter(|(_, c)| c.module == m && c.parent.is_none())
                .filter(|(_, c)| {
                    c.framework == CliFramework::Typer && c.app.as_deref() == Some(app)
                })
                .map(|(i, _)| i as u32)
                .take(MAX_LINKED)
                .collect();
        }
        out.push(EntryPoint {
            name: entry.name,
            kind: entry.kind,
            source: entry.source,
            file: entry.file,
            module: entry.module,
            function: entry.function,
            entity,
            commands: linked,
        });
    }
    out
}

/// A top-level command that a console script runs alone is invoked by
/// the script's name (`prog` is `sys.argv[0]`), unless `prog=` says
/// otherwise; the first script that runs it names it. (A typer app with
/// several commands is a group: they keep their names.)
fn name_root_commands(usage: &mut UsageFacts) {
    let mut named: FxHashSet<u32> = FxHashSet::default();
    for entry in &usage.entry_points {
        if let &[c] = entry.commands.as_slice() {
            let Some(command) = usage.commands.get_mut(c as usize) else {
                continue;
            };
            let explicit_prog =
                command.framework == CliFramework::Argparse && command.name.is_some();
            if command.parent.is_none() && !explicit_prog && named.insert(c) {
                command.name = Some(entry.name.clone());
            }
        }
    }
}

fn mains(
    graph: &RepoGraph,
    inputs: &[ModuleInput],
    main_calls: &[Vec<(u32, EntityId)>],
    roots: &RootCommands,
    commands: &[CliCommand],
) -> Vec<MainEntry> {
    let mut out = Vec::new();
    for (m, input) in inputs.iter().enumerate() {
        if out.len() >= MAX_MAINS {
            break;
        }
        let Some(facts) = input.facts.python() else {
            continue;
        };
        let module = ModuleId(m as u32);
        let blocks: &[MainBlockFacts] = &facts.usage.main_blocks;
        let is_package_main =
            input.rel_path == "__main__.py" || input.rel_path.ends_with("/__main__.py");
        if !is_package_main && blocks.is_empty() {
            continue;
        }
        let calls: Vec<EntityId> = if is_package_main {
            direct_callees(graph, EntityId::Module(module))
        } else {
            main_calls
                .get(m)
                .map_or_else(Vec::new, |calls| calls.iter().map(|(_, e)| *e).collect())
        };
        let calls = first_distinct(calls, MAX_LISTED);
        let mut linked: Vec<u32> = Vec::new();
        for call in &calls {
            linked.extend(roots.run_by(graph, *call, 1));
        }
        // A parser built in the block itself.
        for (i, command) in commands.iter().enumerate() {
            if command.module == module
                && command.parent.is_none()
                && blocks.iter().any(|b| {
                    b.span.start_byte <= command.span.start_byte
                        && command.span.end_byte <= b.span.end_byte
                })
            {
                linked.push(i as u32);
            }
        }
        out.push(MainEntry {
            kind: if is_package_main {
                MainKind::PackageMain
            } else {
                MainKind::MainBlock
            },
            module,
            file: input.rel_path.clone(),
            entity: EntityId::Module(module),
            span: blocks.first().map(|b| b.span),
            calls,
            commands: first_distinct(linked, MAX_LINKED),
        });
    }
    for (f, function) in graph.functions.iter().enumerate() {
        if out.len() >= MAX_MAINS {
            break;
        }
        if !is_java_main(function) {
            continue;
        }
        let entity = EntityId::Function(FunctionId(f as u32));
        out.push(MainEntry {
            kind: MainKind::JavaMain,
            module: function.module,
            file: graph
                .module(function.module)
                .map_or_else(String::new, |m| m.path.clone()),
            entity,
            span: Some(function.span),
            calls: first_distinct(direct_callees(graph, entity), MAX_LISTED),
            commands: Vec::new(),
        });
    }
    out
}

/// `public static void main(String[] args)` (or `String... args`).
fn is_java_main(function: &crate::model::Function) -> bool {
    let Some(java) = function.java() else {
        return false;
    };
    if function.name != "main"
        || !java.modifiers.contains(&Modifier::Public)
        || !java.modifiers.contains(&Modifier::Static)
        || function.returns.as_deref() != Some("void")
        || function.params.len() != 1
    {
        return false;
    }
    let param = &function.params[0];
    let ty: String = param
        .annotation
        .as_deref()
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let ty = ty.strip_prefix("final").unwrap_or(&ty);
    let ty = ty.strip_prefix("java.lang.").unwrap_or(ty);
    matches!(ty, "String[]" | "String...") || (ty == "String" && param.name.ends_with("[]"))
}

/// `items` without repeats, in first-seen order, at most `max`.
fn first_distinct<T: Copy + Eq + std::hash::Hash>(items: Vec<T>, max: usize) -> Vec<T> {
    let mut seen = FxHashSet::default();
    items
        .into_iter()
        .filter(|i| seen.insert(*i))
        .take(max)
        .collect()
}

/// The public API of each top-level package (and of the packages the
/// distributions name): its `__all__`, the names it imports from inside
/// the package, and without `__all__` its own public definitions.
fn public_api(graph: &RepoGraph, distributions: &[Distribution]) -> Vec<ApiEntry> {
    let mut packages: Vec<ModuleId> = Vec::new();
    for distribution in distributions {
        let name = distribution.name.to_lowercase().replace(['-', '.'], "_");
        if let Some(m) = graph.module_by_name(&name)
            && graph.module(m).is_some_and(|m| m.is_package)
            && !packages.contains(&m)
        {
            packages.push(m);
        }
    }
    for (i, module) in graph.modules.iter().enumerate() {
        let id = ModuleId(i as u32);
        if module.language != Language::Python
            || !module.is_package
            || module.kind == SourceKind::Stub
            || module.name.contains('.')
            || module.name.starts_with('_')
            || module.name.starts_with("test")
            || packages.contains(&id)
        {
            continue;
        }
        let dirs: Vec<&str> = module.path.split('/').collect();
        let in_other = dirs[..dirs.len().saturating_sub(1)]
            .iter()
            .any(|d| NON_API_DIRS.contains(d) || EXAMPLE_DIRS.contains(d));
        if !in_other {
            packages.push(id);
        }
    }
    let mut out = Vec::new();
    for package in packages {
        if out.len() >= MAX_API {
            break;
        }
        let Some(module) = graph.module(package) else {
            continue;
        };
        let mut names: Vec<(String, ApiOrigin, Option<EntityId>)> = Vec::new();
        let mut listed: FxHashSet<String> = FxHashSet::default();
        for name in module.all.iter().flatten() {
            if is_identifier(name) && listed.insert(name.clone()) {
                names.push((
                    name.clone(),
                    ApiOrigin::All,
                    resolve_in_module(graph, package, name),
                ));
            }
        }
        for import in &module.imports {
            if import.in_function || import.kind == ImportKind::Import {
                continue;
            }
            let inside = import.level > 0
                || import.module == module.name
                || import
                    .module
                    .strip_prefix(module.name.as_str())
                    .is_some_and(|rest| rest.starts_with('.'));
            if !inside {
                continue;
            }
            if import.kind == ImportKind::Star {
                // `from .core import *` re-exports the `__all__` of `core`.
                let Some(source) = import.target.internal_module(graph) else {
                    continue;
                };
                for name in graph
                    .module(source)
                    .and_then(|m| m.all.as_ref())
                    .into_iter()
                    .flatten()
                {
                    if is_identifier(name) && !name.starts_with('_') && listed.insert(name.clone())
                    {
                        names.push((
                            name.clone(),
                            ApiOrigin::ReExport,
                            resolve_in_module(graph, source, name),
                        ));
                    }
                }
                continue;
            }
            let Some(bound) = import.alias.as_ref().or(import.name.as_ref()) else {
                continue;
            };
            if bound.starts_with('_') || !listed.insert(bound.clone()) {
                continue;
            }
            let entity = match &import.target {
                ImportTarget::Function(f) => Some(EntityId::Function(*f)),
                ImportTarget::Class(c) => Some(EntityId::Class(*c)),
                ImportTarget::Module(m) => Some(EntityId::Module(*m)),
                _ => resolve_in_module(graph, package, bound),
            };
            names.push((bound.clone(), ApiOrigin::ReExport, entity));
        }
        if module.all.is_none() {
            for &child in graph.children(EntityId::Module(package)) {
                let name = match child {
                    EntityId::Class(c) => graph.class(c).map(|c| c.name.as_str()),
                    EntityId::Function(f) => graph.function(f).map(|f| f.name.as_str()),
                    EntityId::Module(_) => None,
                };
                if let Some(name) = name
                    && !name.starts_with('_')
                    && listed.insert(name.to_string())
                {
                    names.push((name.to_string(), ApiOrigin::Defined, Some(child)));
                }
            }
        }
        for (name, origin, entity) in names.into_iter().take(MAX_API_PER_PACKAGE) {
            if out.len() >= MAX_API {
                break;
            }
            let signature = match entity {
                Some(e @ (EntityId::Function(_) | EntityId::Class(_))) => {
                    Some(graph.call_signature(e, &name))
                }
                _ => None,
            };
            let file = entity
                .and_then(|e| graph.module_of(e))
                .and_then(|m| graph.module(m))
                .map(|m| m.path.clone());
            out.push(ApiEntry {
                package: module.name.clone(),
                name,
                origin,
                module: package,
                entity,
                signature,
                file,
            });
        }
    }
    out
}

/// Whether a path is a script in an examples-like directory.
fn is_example_path(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    let Some((file, dirs)) = parts.split_last() else {
        return false;
    };
    *file != "__init__.py"
        && dirs
            .iter()
            .any(|d| EXAMPLE_DIRS.contains(&d.to_ascii_lowercase().as_str()))
}

fn examples(graph: &RepoGraph, inputs: &[ModuleInput], bases: &Bases<'_>) -> Vec<ExampleScript> {
    let mut out = Vec::new();
    for (m, module) in graph.modules.iter().enumerate() {
        if out.len() >= MAX_EXAMPLES {
            break;
        }
        if module.language != Language::Python
            || module.kind == SourceKind::Stub
            || !is_example_path(&module.path)
        {
            continue;
        }
        let id = ModuleId(m as u32);
        let description = module
            .docstring
            .as_deref()
            .map(paragraph)
            .filter(|d| !d.is_empty())
            .or_else(|| {
                graph
                    .module_source(id)
                    .and_then(leading_comment)
                    .map(|c| paragraph(&c))
            })
            .filter(|d| !d.is_empty());
        let mut calls = Vec::new();
        let mut seen = FxHashSet::default();
        'owned: for entity in bases.owned(m) {
            for callee in direct_callees(graph, entity) {
                if graph.module_of(callee) == Some(id) || !seen.insert(callee) {
                    continue;
                }
                calls.push(callee);
                if calls.len() >= MAX_LISTED {
                    break 'owned;
                }
            }
        }
        let imported = module.imports.iter().filter_map(|i| match i.target {
            ImportTarget::Module(t) => Some(EntityId::Module(t)),
            ImportTarget::Class(c) => Some(EntityId::Class(c)),
            ImportTarget::Function(f) => Some(EntityId::Function(f)),
            _ => None,
        });
        let imports = first_distinct(
            imported
                .filter(|e| graph.module_of(*e) != Some(id))
                .collect(),
            MAX_LISTED,
        );
        let _ = inputs;
        out.push(ExampleScript {
            module: id,
            file: module.path.clone(),
            description,
            calls,
            imports,
        });
    }
    out
}

/// The first paragraph of a docstring or comment, on one line, bounded.
fn paragraph(text: &str) -> String {
    let first = text.trim().split("\n\n").next().unwrap_or("");
    let words: Vec<&str> = first.split_whitespace().collect();
    truncate(&words.join(" "), MAX_DESCRIPTION)
}

/// The comment at the top of a script (after a `#!` line and a coding
/// declaration), without its `#`s.
fn leading_comment(source: &str) -> Option<String> {
    let mut lines = Vec::new();
    for (n, line) in source.lines().enumerate() {
        let trimmed = line.trim();
        if n == 0 && trimmed.starts_with("#!") {
            continue;
        }
        let Some(comment) = trimmed.strip_prefix('#') else {
            if trimmed.is_empty() && lines.is_empty() && n < MAX_COMMENT_LINES {
                continue;
            }
            break;
        };
        if lines.is_empty() && (comment.contains("coding:") || comment.contains("coding=")) {
            continue;
        }
        lines.push(comment.trim());
        if lines.len() >= MAX_COMMENT_LINES {
            break;
        }
    }
    let text = lines.join("\n");
    let text = help_text(&text);
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_paths() {
        assert!(is_example_path("examples/basic.py"));
        assert!(is_example_path("docs/examples/deep/run.py"));
        assert!(is_example_path("Demo/x.py"));
        assert!(!is_example_path("examples/__init__.py"));
        assert!(!is_example_path("pkg/example.py"));
    }

    #[test]
    fn leading_comments() {
        assert_eq!(
            leading_comment("#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n# Crawls a site.\n# Prints links.\nimport x\n").as_deref(),
            Some("Crawls a site. Prints links.")
        );
        assert_eq!(leading_comment("import x\n# late\n"), None);
    }
}
